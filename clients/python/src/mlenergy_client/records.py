"""The toolkit's records API (mlenergy-data 0.4.0, `mlenergy.data.records`) answered by an
mlenergy-server: `LLMRuns.from_server(url)` in place of `LLMRuns.from_hf()`, and the rest of a
notebook unchanged.

How the work is split: filters compose lazily into one `/runs` request, fetched once per collection
(as Arrow) when the rows are first needed; a collection derived from fetched rows filters them here.
`where`, `group_by`, `+`, iteration and `to_dataframe()` work on the records here, as the toolkit
does. The bulk frames (output lengths, inter-token latencies, timelines) are computed by the server
from the raw files and travel as Arrow: one request for a collection its filters describe, else
requests naming its runs. Per-run methods ask the run's own endpoints."""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Literal, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from . import _http
from ._fields import (
    DIFFUSION_FIELDS,
    DIFFUSION_KEYS,
    DIFFUSION_PATHS,
    LLM_FIELDS,
    LLM_KEYS,
    LLM_PATHS,
    NULLABLE_INTS,
)
from ._query import Query

TIMELINE_METRICS = ("power.device_instant", "power.device_average", "temperature")

# Run ids per request when a collection is named run by run (the server's URI limit is 8 KiB).
_IDS_PER_REQUEST = 80


@dataclass(frozen=True)
class LLMRun:
    """One LLM run: the toolkit's 35 fields and its two raw-file paths (relative to the dataset
    root, as the server's `results_path`/`prometheus_path`)."""

    domain: str
    task: str
    model_id: str
    nickname: str
    architecture: str
    total_params_billions: float
    activated_params_billions: float
    weight_precision: str
    gpu_model: str
    num_gpus: int
    max_num_seqs: int
    seed: int | None
    num_request_repeats: int | None
    tensor_parallel: int
    expert_parallel: int
    data_parallel: int
    steady_state_energy_joules: float
    steady_state_duration_seconds: float
    energy_per_token_joules: float
    energy_per_request_joules: float | None
    output_throughput_tokens_per_sec: float
    request_throughput_req_per_sec: float | None
    avg_power_watts: float
    total_output_tokens: float | None
    completed_requests: float | None
    avg_output_len: float | None
    mean_itl_ms: float
    median_itl_ms: float
    p50_itl_ms: float
    p90_itl_ms: float
    p95_itl_ms: float
    p99_itl_ms: float
    avg_batch_size: float | None
    is_stable: bool
    unstable_reason: str
    _results_path: str
    _prometheus_path: str

    def read_results_json(self) -> dict[str, Any]:
        """The run's results.json, parsed (and kept on the record, as the toolkit keeps it)."""
        return _read_raw(self, "results.json", "_results_json")

    def read_prometheus_json(self) -> dict[str, Any]:
        """The run's prometheus.json, parsed and kept."""
        if not self._prometheus_path:
            raise ValueError(f"No prometheus path for run: {self.model_id}")
        return _read_raw(self, "prometheus.json", "_prometheus_json")

    def output_lengths(self, *, include_unsuccessful: bool = False) -> list[int]:
        """Output lengths of the run's requests (successful ones unless `include_unsuccessful`)."""
        client, run_id = _require_link(self)
        t = client.arrow(
            f"/v1/llm/runs/{_quote(run_id)}/output-lengths",
            [("include_unsuccessful", bool(include_unsuccessful))],
        )
        return [int(v) for v in t.column("output_len").to_pylist()] if t.num_rows else []

    def inter_token_latencies(self) -> list[float]:
        """The run's smoothed inter-token latencies in seconds (positive, finite samples)."""
        client, run_id = _require_link(self)
        t = client.arrow(f"/v1/llm/runs/{_quote(run_id)}/itl")
        return t.column("itl_s").to_pylist() if t.num_rows else []

    def timelines(
        self,
        *,
        metric: Literal["power.device_instant", "power.device_average", "temperature"] = "power.device_instant",
    ) -> pd.DataFrame:
        """The run's timeline of `metric`, summed over GPUs: timestamp, relative_time_s, value, metric."""
        return _run_timeline(self, "llm", metric)


@dataclass(frozen=True)
class DiffusionRun:
    """One diffusion run: the toolkit's 22 fields and its results.json path."""

    domain: str
    task: str
    model_id: str
    nickname: str
    total_params_billions: float
    activated_params_billions: float
    weight_precision: str
    gpu_model: str
    num_gpus: int
    batch_size: int
    inference_steps: int | None
    height: int
    width: int
    num_frames: int | None
    fps: int | None
    ulysses_degree: int | None
    ring_degree: int | None
    use_torch_compile: bool | None
    batch_latency_s: float
    avg_power_watts: float
    energy_per_generation_joules: float
    throughput_generations_per_sec: float
    _results_path: str

    @property
    def is_text_to_image(self) -> bool:
        return self.task == "text-to-image"

    @property
    def is_text_to_video(self) -> bool:
        return self.task == "text-to-video"

    def read_results_json(self) -> dict[str, Any]:
        return _read_raw(self, "results.json", "_results_json")

    def timelines(
        self,
        *,
        metric: Literal["power.device_instant", "power.device_average", "temperature"] = "power.device_instant",
    ) -> pd.DataFrame:
        return _run_timeline(self, "diffusion", metric)


# --- a record's link to the server (attributes, not fields: not compared, not in frames) ---------


def _link(run) -> tuple[_http.Client, str] | None:
    client = getattr(run, "_server", None)
    run_id = getattr(run, "_run_id", None)
    return None if client is None or run_id is None else (client, run_id)


def _require_link(run) -> tuple[_http.Client, str]:
    link = _link(run)
    if link is None:
        raise ValueError(
            f"{type(run).__name__} was not loaded from a server (use {type(run).__name__}s.from_server)"
        )
    return link


def _quote(run_id: str) -> str:
    from urllib.parse import quote

    return quote(run_id, safe="~")


def _read_raw(run, file: str, cache: str) -> dict[str, Any]:
    kept = getattr(run, cache, None)
    if kept is not None:
        return kept
    client, run_id = _require_link(run)
    domain = "llm" if isinstance(run, LLMRun) else "diffusion"
    try:
        raw = client.bytes(f"/v1/{domain}/runs/{_quote(run_id)}/raw/{file}")
    except _http.RawFileNotFoundError as e:
        what = "Raw results" if file == "results.json" else "Prometheus"
        path = run._results_path if file == "results.json" else getattr(run, "_prometheus_path", None)
        raise _http.RawFileNotFoundError(
            e.status, e.slug, e.title, f"{what} file not found: {path} ({e.detail})", e.parameter, e.body
        ) from None
    data = json.loads(raw)
    object.__setattr__(run, cache, data)
    return data


def _run_timeline(run, domain: str, metric: str) -> pd.DataFrame:
    client, run_id = _require_link(run)
    _check_metric(metric)
    t = client.arrow(f"/v1/{domain}/runs/{_quote(run_id)}/timeline", [("metric", metric)])
    frame = _to_pandas(t, ("timestamp", "relative_time_s", "value"))
    frame["metric"] = metric
    return frame


def _check_metric(metric: str) -> None:
    if metric not in TIMELINE_METRICS:
        raise ValueError(f"Unsupported timeline metric: {metric!r}; one of {', '.join(TIMELINE_METRICS)}")


def _to_pandas(t: pa.Table, columns: Sequence[str]) -> pd.DataFrame:
    """`columns` of an answer as pandas, dictionary-encoded strings decoded (the toolkit's frames
    hold plain strings, not categoricals)."""
    arrays = []
    for name in columns:
        col = t.column(name)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        arrays.append(col)
    return pa.table(arrays, names=list(columns)).to_pandas()


# --- collections ---------------------------------------------------------------------------------


class _Runs:
    _record: type
    _domain: str
    _fields: tuple[str, ...]
    _paths: tuple[str, ...]
    _keys: tuple[str, ...]

    def __init__(self, runs: Sequence[Any], *, _stable_only: bool = False) -> None:
        self._runs: tuple | None = tuple(runs)
        self._stable_only = _stable_only
        self._memo: dict[str, Any] = {}
        self._client: _http.Client | None = None
        # The selection that names exactly these runs, in the server's default order (None when a
        # `where`, `+`, or hand-made list made it something filters cannot say).
        self._query: Query | None = None

    @classmethod
    def _lazy(cls, client: _http.Client, query: Query, stable_only: bool):
        c = cls.__new__(cls)
        c._runs = () if query.empty else None
        c._stable_only = stable_only
        c._memo = {}
        c._client = client
        c._query = query
        return c

    # --- rows ----------------------------------------------------------------------------------

    def _rows(self) -> tuple:
        if self._runs is None:
            assert self._client is not None and self._query is not None
            fields = ",".join((*self._fields, *self._paths))
            t = self._client.arrow(f"/v1/{self._domain}/runs", [*self._query.params(), ("fields", fields)])
            floats = self._client.float_fields(self._domain, NULLABLE_INTS[self._domain])
            self._runs = _records(self._record, t, self._fields, self._paths, self._client, floats)
        return self._runs

    def _derive(self, runs: Sequence[Any] | None, query: Query | None):
        c = type(self).__new__(type(self))
        c._runs = None if runs is None else tuple(runs)
        c._stable_only = self._stable_only
        c._memo = {}
        c._client = self._client
        c._query = query
        if query is not None and query.empty:
            c._runs = ()
        return c

    def _narrow(self, key: str, keep: Callable[[Any], bool], query: Query | None):
        """The runs `keep` admits: by the server when nothing is fetched yet and the filters can say
        it, else here over the fetched rows."""
        if key in self._memo:
            return self._memo[key]
        if query is not None and not query.expressible():
            query = None
        if self._runs is None and query is not None:
            out = self._derive(None, query)
        else:
            out = self._derive([r for r in self._rows() if keep(r)], query)
        self._memo[key] = out
        return out

    def _filter(self, field: str, values: tuple[Any, ...]):
        try:
            wanted = set(values)
        except TypeError:
            wanted = list(values)
        query = None if self._query is None else self._query.values(field, values)
        return self._narrow(f"{field}:{values!r}", lambda r: getattr(r, field) in wanted, query)

    def _filter_range(self, field: str, min_val: Any, max_val: Any):
        def keep(r):
            v = getattr(r, field)
            return (min_val is None or v >= min_val) and (max_val is None or v <= max_val)

        query = None if self._query is None else self._query.range(field, min_val, max_val)
        return self._narrow(f"{field}:range:{min_val!r}:{max_val!r}", keep, query)

    def _numeric(self, name: str, field: str, values: tuple, lo: Any, hi: Any):
        if values and (lo is not None or hi is not None):
            raise ValueError("Cannot combine exact values with min/max range")
        if values:
            return self._filter(field, values)
        if lo is None and hi is None:
            raise TypeError(f"{name}() requires at least one argument")
        return self._filter_range(field, lo, hi)

    # --- the toolkit's filters -----------------------------------------------------------------

    def task(self, *tasks: str):
        return self._filter("task", tasks)

    def model_id(self, *model_ids: str):
        return self._filter("model_id", model_ids)

    def gpu_model(self, *gpu_models: str):
        return self._filter("gpu_model", gpu_models)

    def nickname(self, *nicknames: str):
        return self._filter("nickname", nicknames)

    def precision(self, *prec: str):
        return self._filter("weight_precision", prec)

    def num_gpus(self, *counts: int, min: int | None = None, max: int | None = None):
        return self._numeric("num_gpus", "num_gpus", counts, min, max)

    def where(self, predicate: Callable[[Any], bool]):
        """The runs for which `predicate(run)` is truthy (evaluated here, on the fetched rows)."""
        return self._derive([r for r in self._rows() if predicate(r)], None)

    def group_by(self, *fields: str) -> dict[Any, Any]:
        """Collections keyed by the value (one field) or the tuple of values (several) of `fields`,
        in order of first occurrence."""
        key = "group_by:" + "\x00".join(fields)
        if key in self._memo:
            return self._memo[key]
        buckets: dict[Any, list] = {}
        for r in self._rows():
            values = tuple(getattr(r, f) for f in fields)
            k = values[0] if len(fields) == 1 else values
            buckets.setdefault(k, []).append(r)
        out = {k: self._derive(v, None) for k, v in buckets.items()}
        self._memo[key] = out
        return out

    # --- sequence behaviour --------------------------------------------------------------------

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows())

    def __len__(self) -> int:
        return len(self._rows())

    def __bool__(self) -> bool:
        return len(self._rows()) > 0

    def __getitem__(self, index):
        return self._rows()[index]

    def __add__(self, other):
        out = self._derive([*self._rows(), *other._rows()], None)
        out._client = self._client or other._client
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} runs)"

    def to_dataframe(self) -> pd.DataFrame:
        """One row per run, the public fields in declaration order (the toolkit's frame)."""
        rows = self._rows()
        if not rows:
            return pd.DataFrame()
        return pd.DataFrame.from_records(
            [tuple(getattr(r, f) for f in self._fields) for r in rows], columns=list(self._fields)
        )

    @property
    def data(self) -> "_Columns":
        """Field columns: `runs.data.energy_per_token_joules` is the list of that field's values in
        collection order (the dataset card's accessor, which toolkit 0.4.0 dropped)."""
        return _Columns(self)

    # --- raw-derived frames, computed by the server ------------------------------------------

    def _bulk(self, path: str, extra: list[tuple[str, Any]]) -> pa.Table | None:
        """The server's long frame at `path` for these runs, rows of each run together and the runs
        in collection order (None for an empty collection)."""
        if self._query is not None and self._query.expressible():
            if self._query.empty:
                return None
            return self._client.arrow(path, [*self._query.params(), *extra])
        rows = self._rows()
        if not rows:
            return None
        client = self._client or _client_of(rows)
        ids = [_require_link(r)[1] for r in rows]
        tables = []
        unique = list(dict.fromkeys(ids))
        for i in range(0, len(unique), _IDS_PER_REQUEST):
            params = [("run_id", rid) for rid in unique[i : i + _IDS_PER_REQUEST]]
            if self._domain == "llm":
                params.append(("stability", "all"))
            tables.append(client.arrow(path, [*params, *extra]))
        table = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
        return _in_order(table, ids)

    def timelines(
        self,
        *,
        metric: Literal["power.device_instant", "power.device_average", "temperature"] = "power.device_instant",
    ) -> pd.DataFrame:
        """Every run's timeline of `metric`, long form: timestamp, relative_time_s, value, metric,
        then the run's task, model_id, num_gpus and batch; stably sorted by (task, model_id,
        relative_time_s)."""
        _check_metric(metric)
        keys = list(self._keys)
        t = self._bulk(f"/v1/{self._domain}/timelines", [("metric", metric)])
        if t is None or t.num_rows == 0:
            return pd.DataFrame(columns=[*keys, "timestamp", "relative_time_s", "value", "metric"])
        frame = _to_pandas(t, ("timestamp", "relative_time_s", "value", "metric", *keys))
        if self._query is None:
            frame = frame.sort_values(["task", "model_id", "relative_time_s"], kind="stable").reset_index(drop=True)
        return frame

    def download_raw_files(self, *args, progress: bool = True, poll_s: float = 0.2):
        """Have the server fetch these runs' raw files into its cache (its prefetch job), with a
        progress bar over the job's files and bytes. Returns self."""
        if self._query is not None and self._query.expressible():
            if self._query.empty:
                return self
            client = self._client
            batches = [self._query.params()]
        else:
            rows = self._rows()
            if not rows:
                return self
            client = self._client or _client_of(rows)
            unique = list(dict.fromkeys(_require_link(r)[1] for r in rows))
            batches = [
                [("run_id", rid) for rid in unique[i : i + _IDS_PER_REQUEST]]
                + ([("stability", "all")] if self._domain == "llm" else [])
                for i in range(0, len(unique), _IDS_PER_REQUEST)
            ]
        jobs = [client.json(f"/v1/{self._domain}/prefetch", params, method="POST") for params in batches]
        _follow(client, jobs, progress, poll_s)
        return self

    # --- beyond the toolkit: the server's questions over this collection ----------------------

    def _selection(self) -> list[tuple[str, Any]]:
        if self._query is not None and self._query.expressible():
            return self._query.params()
        rows = self._rows()
        if len(rows) > _IDS_PER_REQUEST:
            raise ValueError(
                "this collection is not a combination of filters (a where, + or group_by made it) and"
                f" holds {len(rows)} runs; the server takes at most {_IDS_PER_REQUEST} by run id"
            )
        params: list[tuple[str, Any]] = [("run_id", _require_link(r)[1]) for r in rows]
        if self._domain == "llm":
            params.append(("stability", "all"))
        return params

    def best(self, *, deadline: float | None = None, **params: Any) -> pd.DataFrame:
        """The energy-optimal run per model under a latency `deadline` (GET /v1/{domain}/best;
        `latency`, `energy_budget`, `energy`, `per` and `fields` as its parameters)."""
        extra = [("deadline", deadline)] if deadline is not None else []
        return self._frame(f"/v1/{self._domain}/best", [*extra, *_kw(params)])

    def pareto(self, **params: Any) -> pd.DataFrame:
        """The Pareto frontier of these runs (GET /v1/{domain}/pareto: `x`, `y`, `per`, `fields`)."""
        return self._frame(f"/v1/{self._domain}/pareto", _kw(params))

    def fits(self, **params: Any) -> pd.DataFrame:
        """Logistic fits of these runs' batch sweeps (GET /v1/{domain}/fits/logistic: `y`, `x`,
        `predict`)."""
        return self._frame(f"/v1/{self._domain}/fits/logistic", _kw(params))

    def sql(self, text: str, params: Sequence[Any] | None = None) -> pd.DataFrame:
        """A read-only SQL query over the served tables (POST /v1/sql), as a frame."""
        client = self._client or _http.default_client()
        body: dict[str, Any] = {"sql": text}
        if params is not None:
            body["params"] = list(params)
        t = client.arrow("/v1/sql", method="POST", body=body)
        return _to_pandas(t, t.column_names)

    def _frame(self, path: str, extra: list[tuple[str, Any]]) -> pd.DataFrame:
        client = self._client or _client_of(self._rows())
        t = client.arrow(path, [*self._selection(), *extra])
        return _to_pandas(t, t.column_names)


def _kw(params: dict[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for k, v in params.items():
        if isinstance(v, (list, tuple)):
            out.extend((k, x) for x in v)
        elif v is not None:
            out.append((k, v))
    return out


class _Columns:
    def __init__(self, runs: _Runs):
        self._runs = runs

    def __getattr__(self, field: str) -> list[Any]:
        if field.startswith("__") or field not in self._runs._fields:
            raise AttributeError(f"no field {field!r}; the fields: {', '.join(self._runs._fields)}")
        return [getattr(r, field) for r in self._runs._rows()]

    def __dir__(self):
        return list(self._runs._fields)


class LLMRuns(_Runs):
    """LLM runs: the toolkit's `LLMRuns` over a server."""

    _record = LLMRun
    _domain = "llm"
    _fields = LLM_FIELDS
    _paths = LLM_PATHS
    _keys = LLM_KEYS

    @classmethod
    def from_server(
        cls,
        url: str | None = None,
        *,
        stable_only: bool = True,
        token: str | None = None,
        revision: str | None = None,
    ) -> "LLMRuns":
        """The LLM runs the server at `url` serves (default: ``MLENERGY_SERVER``, else
        http://127.0.0.1:8080); stable ones only unless `stable_only=False`. With `revision` (a
        hub commit, branch or tag, or a snapshot name of the server; as `from_hf(revision=...)`),
        the runs of that revision: every request of the collection, its runs and what they derive
        names it. Nothing is fetched until the rows are needed."""
        client = _http.Client(url, token, revision=revision)
        _http.set_default_client(client)
        return cls._lazy(client, Query(stability="stable" if stable_only else "all"), stable_only)

    def architecture(self, *arch: str) -> "LLMRuns":
        return self._filter("architecture", arch)

    def max_num_seqs(self, *sizes: int, min: int | None = None, max: int | None = None) -> "LLMRuns":
        return self._numeric("max_num_seqs", "max_num_seqs", sizes, min, max)

    def stable(self) -> "LLMRuns":
        query = None if self._query is None else self._query.stable("stable")
        return self._narrow("stable", lambda r: r.is_stable, query)

    def unstable(self) -> "LLMRuns":
        if self._stable_only:
            raise ValueError(
                "Cannot filter unstable runs: this collection was loaded with stable_only=True."
                " Reload with stable_only=False to access unstable runs."
            )
        query = None if self._query is None else self._query.stable("unstable")
        return self._narrow("unstable", lambda r: not r.is_stable, query)

    def __add__(self, other: "LLMRuns") -> "LLMRuns":
        out = super().__add__(other)
        out._stable_only = self._stable_only and other._stable_only
        return out

    def output_lengths(self, *, include_unsuccessful: bool = False) -> pd.DataFrame:
        """Output lengths, long form: task, model_id, num_gpus, max_num_seqs, output_len; runs in
        collection order, requests in file order."""
        cols = [*LLM_KEYS, "output_len"]
        t = self._bulk("/v1/llm/output-lengths", [("include_unsuccessful", bool(include_unsuccessful))])
        if t is None or t.num_rows == 0:
            return pd.DataFrame(columns=cols)
        return _to_pandas(t, cols)

    def inter_token_latencies(self) -> pd.DataFrame:
        """Smoothed inter-token latencies in seconds, long form: task, model_id, num_gpus,
        max_num_seqs, itl_s."""
        cols = [*LLM_KEYS, "itl_s"]
        t = self._bulk("/v1/llm/itl", [])
        if t is None or t.num_rows == 0:
            return pd.DataFrame(columns=cols)
        return _to_pandas(t, cols)

    def download_raw_files(self, file: Literal["results", "prometheus"] | None = None, **kw) -> "LLMRuns":
        """The server fetches these runs' raw files (results.json and prometheus.json; `file` is
        accepted for the toolkit's signature: the server's prefetch fetches both)."""
        return super().download_raw_files(**kw)


class DiffusionRuns(_Runs):
    """Diffusion runs: the toolkit's `DiffusionRuns` over a server."""

    _record = DiffusionRun
    _domain = "diffusion"
    _fields = DIFFUSION_FIELDS
    _paths = DIFFUSION_PATHS
    _keys = DIFFUSION_KEYS

    def __init__(self, runs: Sequence[DiffusionRun]) -> None:
        super().__init__(runs)

    @classmethod
    def from_server(
        cls, url: str | None = None, *, token: str | None = None, revision: str | None = None
    ) -> "DiffusionRuns":
        """The diffusion runs the server at `url` serves (of `revision` when given, as
        `LLMRuns.from_server`)."""
        client = _http.Client(url, token, revision=revision)
        _http.set_default_client(client)
        return cls._lazy(client, Query(), False)

    def batch_size(self, *sizes: int, min: int | None = None, max: int | None = None) -> "DiffusionRuns":
        return self._numeric("batch_size", "batch_size", sizes, min, max)

    def download_raw_files(self, **kw) -> "DiffusionRuns":
        return super().download_raw_files(**kw)


# --- helpers -------------------------------------------------------------------------------------


def _records(record: type, t: pa.Table, fields: Sequence[str], paths: Sequence[str], client, floats) -> tuple:
    cols = {}
    for name in ("run_id", *fields, *paths):
        col = t.column(name)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        elif name in floats:
            col = col.cast(pa.float64())
        cols[name] = col.to_pylist()
    n = t.num_rows
    columns = [cols[f] for f in fields] + [cols[p] for p in paths]
    out = []
    for i in range(n):
        r = record(*(c[i] for c in columns))
        object.__setattr__(r, "_server", client)
        object.__setattr__(r, "_run_id", cols["run_id"][i])
        out.append(r)
    return tuple(out)


def _client_of(rows) -> _http.Client:
    for r in rows or ():
        link = _link(r)
        if link is not None:
            return link[0]
    return _http.default_client()


def _in_order(table: pa.Table, ids: list[str]) -> pa.Table:
    """`table`'s rows regrouped so that each run's rows (kept in their order) follow `ids` (a run
    named twice is repeated)."""
    col = table.column("run_id")
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    positions: dict[str, list[int]] = {}
    for i, rid in enumerate(col.to_pylist()):
        positions.setdefault(rid, []).append(i)
    take = [i for rid in ids for i in positions.get(rid, ())]
    return table.take(pa.array(take, type=pa.int64()))


def _follow(client: _http.Client, jobs: list[dict], progress: bool, poll_s: float) -> None:
    """Poll the prefetch jobs until each has finished, showing their files and bytes."""
    try:
        from tqdm.auto import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        progress = False
    ids = [j.get("job_id") or j.get("id") for j in jobs]
    states = {i: j for i, j in zip(ids, jobs)}
    bar = None
    while True:
        done = sum(_num(s, "files_done") for s in states.values())
        total = sum(_num(s, "files_total") for s in states.values())
        nbytes = sum(_num(s, "bytes_done") for s in states.values())
        if progress:
            if bar is None:
                bar = tqdm(total=total, unit="file", desc="raw files")
            bar.total = total
            bar.n = done
            bar.set_postfix_str(f"{nbytes / 1e6:.1f} MB")
            bar.refresh()
        if all(_finished(s) for s in states.values()):
            break
        time.sleep(poll_s)
        for i in ids:
            if not _finished(states[i]):
                states[i] = client.json(f"/v1/jobs/{i}", revision=False)
    if bar is not None:
        bar.close()
    failed = [s for s in states.values() if str(s.get("state", s.get("status", ""))).lower() == "failed"]
    if failed:
        raise _http.ServerError(500, "prefetch_failed", "Prefetch failed", json.dumps(failed[0]), None, failed[0])


def _num(state: dict, key: str) -> int:
    v = state.get(key)
    return int(v) if isinstance(v, (int, float)) else 0


def _finished(state: dict) -> bool:
    return str(state.get("state", state.get("status", ""))).lower() in ("done", "finished", "failed", "completed")
