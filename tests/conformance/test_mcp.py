"""/mcp driven by the official MCP Python SDK (`mcp` from PyPI) over Streamable HTTP against the
real binary: the handshake in both of the SDK's modes (the 2026-07-28 discovery and the legacy
initialize), the listings, every tool called with real arguments and its structured answer
compared with the REST answer to the same question, refusals as tool errors naming the
parameter, and the token."""

import asyncio
import json
import math
import urllib.error
import urllib.request

import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from conftest import SAMPLE, Api, running_server

RAW_RUN = "video-chat~Qwen--Qwen3-VL-30B-A3B-Instruct~H100~g2~b8~r1"

TOOLS = [
    "describe_dataset",
    "find_runs",
    "get_run",
    "group_runs",
    "best_configuration",
    "pareto_frontier",
    "column_statistics",
    "dataset_changes",
    "fit_batch_sweep",
    "run_itl_summary",
    "run_timeline_summary",
    "query_sql",
    "compare_measurements",
    "repeat_stats",
    "chart",
]


@pytest.fixture(scope="module")
def server():
    with running_server(str(SAMPLE)) as base:
        yield base


def session(base: str, mode: str = "auto", token: str | None = None) -> Client:
    url = f"{base}/mcp"
    if token is None:
        return Client(url, mode=mode)
    headers = {"Authorization": f"Bearer {token}"}
    return Client(streamable_http_client(url, http_client=create_mcp_http_client(headers=headers)), mode=mode)


def run(coro):
    return asyncio.run(coro)


def rest(base: str, path: str, **params):
    return Api(base).json(path, **params)


@pytest.mark.parametrize("mode, version", [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_handshake_and_listings(server, mode, version):
    async def go():
        async with session(server, mode) as c:
            tools = await c.list_tools()
            resources = await c.list_resources()
            prompts = await c.list_prompts()
            return c, tools, resources, prompts

    c, tools, resources, prompts = run(go())
    assert [t.name for t in tools.tools] == TOOLS
    for t in tools.tools:
        assert t.description and t.input_schema["type"] == "object"
        assert t.output_schema["type"] == "object"
        assert t.annotations.read_only_hint is True and t.annotations.destructive_hint is False
    find = next(t for t in tools.tools if t.name == "find_runs")
    # The REST parameter catalog's names, the domain's own, no aliases.
    assert {"domain", "task", "gpu_model", "max_num_seqs_min", "batch_size", "sort", "limit", "fields"} <= set(
        find.input_schema["properties"]
    )
    assert "gpu" not in find.input_schema["properties"]
    assert [r.uri for r in resources.resources] == [
        "mlenergy://dataset",
        "mlenergy://fields/llm",
        "mlenergy://fields/diffusion",
    ]
    assert [p.name for p in prompts.prompts] == ["energy_optimal_configuration", "compare_gpus"]


def call(base: str, tool: str, arguments: dict, mode: str = "auto") -> types.CallToolResult:
    async def go():
        async with session(base, mode) as c:
            return await c.call_tool(tool, arguments)

    return run(go())


def ok(base: str, tool: str, arguments: dict, mode: str = "auto") -> dict:
    r = call(base, tool, arguments, mode)
    assert not r.is_error, r.content
    assert r.content and r.content[0].type == "text" and r.content[0].text
    return r.structured_content


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_find_runs_is_the_rest_answer(server, mode):
    got = ok(server, "find_runs", {"task": "gpqa", "gpu_model": "B200", "sort": ["energy_per_token_joules"], "limit": 50}, mode)
    assert got == rest(server, "/v1/llm/runs", task="gpqa", gpu_model="B200", sort="energy_per_token_joules", limit=50)
    assert got["count"] == 50 and got["total"] == 106


def test_every_tool_answers_the_rest_question(server):
    # describe_dataset: /v1/datasets and both domains' fields.
    got = ok(server, "describe_dataset", {})
    datasets = rest(server, "/v1/datasets")
    assert got["snapshot"] == datasets["snapshot"]
    assert got["datasets"] == datasets["datasets"]
    assert got["fields"]["llm"] == rest(server, "/v1/llm/fields")["fields"]
    assert got["fields"]["diffusion"] == rest(server, "/v1/diffusion/fields")["fields"]

    got = ok(server, "get_run", {"run_id": RAW_RUN})
    assert got == rest(server, f"/v1/llm/runs/{RAW_RUN}")

    got = ok(server, "group_runs", {"task": "gpqa", "by": ["gpu_model"], "agg": ["min(energy_per_token_joules)", "count"]})
    assert got == rest(server, "/v1/llm/groups", task="gpqa", by="gpu_model", agg="min(energy_per_token_joules),count")
    assert [g["gpu_model"] for g in got["groups"]] == ["B200", "H100"]

    got = ok(server, "best_configuration", {"task": "gpqa", "deadline": 100, "gpu_model": ["H100"]})
    assert got == rest(server, "/v1/llm/best", task="gpqa", deadline=100, gpu_model="H100")

    got = ok(server, "pareto_frontier", {"domain": "diffusion", "task": "text-to-image", "per": ["gpu_model"]})
    assert got == rest(server, "/v1/diffusion/pareto", task="text-to-image", per="gpu_model")

    got = ok(server, "fit_batch_sweep", {"task": "gpqa", "model_id": "Qwen/Qwen3-14B", "predict": [48, 96]})
    assert got["fits"] == rest(server, "/v1/llm/fits/logistic", task="gpqa", model_id="Qwen/Qwen3-14B", predict="48,96")
    assert all("pred_96" in f for f in got["fits"])

    got = ok(server, "run_itl_summary", {"run_id": RAW_RUN})
    summary = rest(server, f"/v1/llm/runs/{RAW_RUN}/itl", summary="true")[0]
    assert {k: v for k, v in got.items() if k != "full_data"} == summary
    assert got["count"] == 117446
    assert got["full_data"].endswith("/itl")

    got = ok(server, "run_timeline_summary", {"run_id": RAW_RUN, "metric": "power.device_instant"})
    rows = rest(server, f"/v1/llm/runs/{RAW_RUN}/timeline", metric="power.device_instant")
    values = [r["value"] for r in rows]
    assert got["samples"] == len(rows)
    assert got["min"] == min(values) and got["max"] == max(values)
    assert math.isclose(got["mean"], sum(values) / len(values), rel_tol=1e-12)
    assert got["duration_s"] == rows[-1]["relative_time_s"] - rows[0]["relative_time_s"]

    sql = "select model_id, min(energy_per_token_joules) e from llm_runs where task = $1 group by 1 order by 2"
    got = ok(server, "query_sql", {"sql": sql, "params": ["gpqa"], "max_rows": 3})
    body = json.dumps({"sql": sql, "params": ["gpqa"]}).encode()
    req = urllib.request.Request(f"{server}/v1/sql", body, {"content-type": "application/json"})
    with urllib.request.urlopen(req) as r:
        whole = json.load(r)
    assert got["rows"] == whole["rows"][:3]
    assert got["truncated"] is True and got["total_rows"] == len(whole["rows"])

    got = ok(server, "compare_measurements", {"metric": "energy_per_output_token_j", "a.hardware": "H100", "b.hardware": "B200"})
    assert got == rest(server, "/v1/measurements/compare", **{"metric": "energy_per_output_token_j", "a.hardware": "H100", "b.hardware": "B200"})

    got = ok(server, "repeat_stats", {"by": ["model"], "trim": 0.1})
    assert got == rest(server, "/v1/measurements/repeat-stats", by="model", trim=0.1)

    r = call(server, "chart", {"kind": "pareto", "task": "gpqa"})
    assert not r.is_error
    resource = next(c for c in r.content if c.type == "resource").resource
    assert resource.mime_type == "image/svg+xml"
    with urllib.request.urlopen(f"{server}/v1/llm/charts/pareto.svg?task=gpqa") as svg:
        assert resource.text == svg.read().decode()
    assert r.structured_content["bytes"] == len(resource.text.encode())


@pytest.mark.parametrize(
    "tool, arguments, parameter, slug",
    [
        ("find_runs", {"taks": "gpqa"}, "taks", "invalid_argument"),
        ("find_runs", {"fields": ["energy"]}, "fields", "unknown_field"),
        ("find_runs", {"task": "gpqq"}, "task", "no_match"),
        ("find_runs", {"limit": -1}, "limit", None),
        ("group_runs", {"agg": ["avg(energy_per_token_joules)"]}, "agg", None),
        ("best_configuration", {"deadline": "soon"}, "deadline", None),
        ("get_run", {}, "run_id", "invalid_argument"),
        ("get_run", {"run_id": "no-such-run"}, None, "unknown_run"),
        ("find_runs", {"domain": "audio"}, "domain", "invalid_argument"),
        ("query_sql", {"sql": "select 1", "max_rows": 0}, "max_rows", "invalid_argument"),
        ("chart", {"kind": "timeline"}, "run_id", "invalid_argument"),
    ],
)
def test_bad_arguments_are_tool_errors(server, tool, arguments, parameter, slug):
    r = call(server, tool, arguments)
    assert r.is_error
    problem = r.structured_content
    if parameter is not None:
        assert problem["parameter"] == parameter, problem
    if slug is not None:
        assert problem["slug"] == slug, problem
    assert problem["detail"] and r.content[0].text.startswith(problem["slug"])


def test_prompts_resources_and_completion(server):
    async def go():
        async with session(server) as c:
            prompt = await c.get_prompt("energy_optimal_configuration", {"task": "gpqa", "latency_budget_ms": "50"})
            card = await c.read_resource("mlenergy://dataset")
            fields = await c.read_resource("mlenergy://fields/diffusion")
            done = await c.complete(
                types.PromptReference(type="ref/prompt", name="compare_gpus"), {"name": "model_id", "value": "qwen/qwen3-1"}
            )
            return prompt, card, fields, done

    prompt, card, fields, done = run(go())
    text = prompt.messages[0].content.text
    assert "best_configuration" in text and "deadline 50" in text
    assert card.contents[0].mime_type == "text/markdown"
    assert "838 runs" in card.contents[0].text
    assert json.loads(fields.contents[0].text) == rest(server, "/v1/diffusion/fields")
    models = {g["model_id"] for g in rest(server, "/v1/llm/groups", by="model_id")["groups"]}
    assert done.completion.values and set(done.completion.values) <= models
    assert all(v.lower().startswith("qwen/qwen3-1") for v in done.completion.values)


def test_the_token_is_required_when_set():
    with running_server(str(SAMPLE), args=("--mcp-token", "s3cret")) as base:
        async def listing(token):
            async with session(base, "legacy", token) as c:
                return await c.list_tools()

        assert len(run(listing("s3cret")).tools) == len(TOOLS)
        for wrong in [None, "nope"]:
            # The SDK reports the refusal as an error response (inside anyio's task groups).
            with pytest.raises(Exception, match="unhandled errors|error response"):
                run(listing(wrong))
            headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
            if wrong:
                headers["authorization"] = f"Bearer {wrong}"
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(urllib.request.Request(f"{base}/mcp", body, headers))
            assert refused.value.code == 401
            assert refused.value.headers["www-authenticate"].startswith("Bearer")
        # The REST API is not behind the MCP token.
        assert Api(base).json("/v1/llm/runs", limit=1)["count"] == 1
