#!/usr/bin/env python3
"""Measurement import speed: a large generated set of peer results (1000 LLM Energy Measure v1
experiments of 4 processes with ~100 latency samples each, as 100 bases x 10 cycles, and 100 IPW
profiles of 1000 queries in 2 Arrow stream shards; tests/conformance/peergen.py --bench), read
the peers' way in Python (json.load of every aggregated file into a pandas DataFrame of
per-experiment metrics and pooled latency percentiles; pyarrow.ipc.open_stream of every shard,
to_pandas() and the per-run sums and means), next to `mlenergy-server import` of the same
directories, in 5 paired rounds (the median ratio is the figure; the disk is synced before each
timed part, so that no part pays for flushing what an earlier one wrote); then the server started
on the import, timing GET /v1/measurements/repeat-stats over
every group (first request, and the median of 20).

    python3 bench/import_bench.py [DATA_DIR] [--bin target/release/mlenergy-server] [--skip-build]

DATA_DIR is reused when it already holds the set, written there otherwise (default: a temporary
directory). It measures; it asserts nothing about speed.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "conformance"))
sys.path.insert(0, str(ROOT / "bench"))
import peergen  # noqa: E402
from bench import SERVER, bench_args, build_release, free_port, wait_ready  # noqa: E402

N_LEM, N_IPW, QUERIES = 1000, 100, 1000
ROUNDS = 5
REPEAT_STATS = "/v1/measurements/repeat-stats?by=experiment_id&metric=gpu_cpu_ram_energy_j"


def dataset(path: Path | None, tmp: str) -> tuple[Path, Path]:
    """The LEM results dir and the IPW profiles dir, generated unless `path` already holds them."""
    data = path or Path(tmp) / "data"
    lem, ipw = data / "lem_v1_bench", data / "ipw_bench"
    if not (lem / "aggregated").is_dir() or not ipw.is_dir():
        start = time.perf_counter()
        peergen.write_bench(data, N_LEM, N_IPW, QUERIES)
        print(f"generated {N_LEM} LEM experiments and {N_IPW} IPW profiles x {QUERIES} queries in "
              f"{time.perf_counter() - start:.1f} s under {data}")
    return lem, ipw


def size(d: Path) -> int:
    return sum(f.stat().st_size for f in d.rglob("*") if f.is_file())


def lem_peer_way(lem: Path) -> pd.DataFrame:
    """json.load every aggregated file; per experiment: energies, tokens, throughput and the
    percentiles of the processes' pooled TTFT and trimmed ITL samples."""
    rows = []
    for f in sorted((lem / "aggregated").glob("*.json")):
        with open(f) as fh:
            a = json.load(fh)
        procs = a["process_results"]
        lms = [p["inference_metrics"]["latency_measurements"] for p in procs]
        ttft = np.concatenate([lm["ttft_ms"] for lm in lms])
        itl = np.concatenate([lm["itl_trimmed_ms"] for lm in lms])
        t50, t95, t99 = np.percentile(ttft, [50, 95, 99])
        i50, i95, i99 = np.percentile(itl, [50, 95, 99])
        out_tok = sum(p["inference_metrics"]["output_tokens"] for p in procs)
        gpu = sum(p["energy_metrics"]["gpu_energy_j"] for p in procs)
        rows.append({
            "experiment_id": a["experiment_id"], "num_processes": len(procs), "total_energy_j": a["total_energy_j"],
            "gpu_energy_j": gpu, "output_tokens": out_tok, "energy_per_output_token_j": gpu / out_tok,
            "avg_tokens_per_second": a["avg_tokens_per_second"], "ttft_mean_ms": ttft.mean(), "ttft_p50_ms": t50,
            "ttft_p95_ms": t95, "ttft_p99_ms": t99, "itl_mean_ms": itl.mean(), "itl_p50_ms": i50,
            "itl_p95_ms": i95, "itl_p99_ms": i99,
        })
    return pd.DataFrame(rows)


def ipw_peer_way(ipw: Path) -> pd.DataFrame:
    """Every profile's shards through pyarrow.ipc.open_stream, to_pandas(), then per run: energy
    and token sums, mean TTFT and latency, accuracy over the evaluated rows."""
    rows = []
    for d in sorted(p for p in ipw.iterdir() if p.is_dir()):
        summary = json.loads((d / "summary.json").read_text())
        state = json.loads((d / "state.json").read_text())
        tables = []
        for shard in state["_data_files"]:
            with pa.OSFile(str(d / shard["filename"])) as src:
                tables.append(pa.ipc.open_stream(src).read_all())
        df = pa.concat_tables(tables).to_pandas()
        m = df["model_metrics"].map(lambda x: x[summary["model"]])
        energy = m.map(lambda x: x["energy_metrics"]["per_query_joules"])
        correct = m.map(lambda x: (x.get("evaluation") or {}).get("is_correct")).dropna()
        rows.append({
            "run": d.name, "queries": len(df), "energy_j": energy[energy >= 0].sum(),
            "input_tokens": m.map(lambda x: x["token_metrics"]["input"]).sum(),
            "output_tokens": m.map(lambda x: x["token_metrics"]["output"]).sum(),
            "ttft_mean_s": m.map(lambda x: x["latency_metrics"]["time_to_first_token_seconds"]).mean(),
            "latency_mean_s": m.map(lambda x: x["latency_metrics"]["total_query_seconds"]).mean(),
            "accuracy": correct.astype(bool).mean() if len(correct) else None,
        })
    return pd.DataFrame(rows)


def fetch(url: str) -> tuple[float, bytes]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url) as r:
        body = r.read()
    return time.perf_counter() - t0, body


def main():
    ap = bench_args(__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", type=Path, help="where the generated set is (reused) or goes")
    ap.add_argument("--bin", type=Path, help=f"the server binary (default: {SERVER}, built unless --skip-build)")
    args = ap.parse_args()
    binary = args.bin or build_release(args)
    with tempfile.TemporaryDirectory() as tmp:
        lem, ipw = dataset(args.data, tmp)
        print(f"LEM v1: {size(lem) / 1e6:.0f} MB of JSON; IPW: {size(ipw) / 1e6:.0f} MB of Arrow shards")

        # Paired rounds: the peers' way, then the import into a fresh directory; the ratio of
        # each round, and the median over the rounds (one round alone swings by 10% here).
        # Before each timed part, os.sync(): the files an earlier round wrote (28 MB of parquet,
        # never fsynced) are flushed then, not by the kernel in the middle of the next timed part,
        # which swung the import's time by 30% and the peers' by 10%.
        ratios = []
        for r in range(ROUNDS):
            os.sync()
            start = time.perf_counter()
            lem_df = lem_peer_way(lem)
            lem_s = time.perf_counter() - start
            start = time.perf_counter()
            ipw_df = ipw_peer_way(ipw)
            ipw_s = time.perf_counter() - start
            python_s = lem_s + ipw_s
            out = Path(tmp) / f"imported{r}"
            os.sync()
            start = time.perf_counter()
            proc = subprocess.run([str(binary), "import", str(lem), str(ipw), "--out", str(out)],
                                  capture_output=True, text=True)
            import_s = time.perf_counter() - start
            if proc.returncode != 0:
                sys.exit(f"import failed ({proc.returncode}): {proc.stderr}")
            ratios.append(python_s / import_s)
            print(f"round {r + 1}: peers' way in Python: LEM {lem_s:.2f} s ({len(lem_df)} experiments), "
                  f"IPW {ipw_s:.2f} s ({len(ipw_df)} runs, {int(ipw_df['queries'].sum())} rows); total {python_s:.2f} s; "
                  f"mlenergy-server import: {import_s:.2f} s ({size(out) / 1e6:.0f} MB written); ratio {ratios[-1]:.1f}x")
        print(f"ratio (Python peers' way / import), median of {ROUNDS} rounds: {statistics.median(ratios):.1f}x")

        port = free_port()
        server = subprocess.Popen([str(binary), "--bind", f"127.0.0.1:{port}", "--data", str(ROOT / "data" / "sample"),
                                   "--cache", str(Path(tmp) / "cache"), "--import", str(out)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            ready = wait_ready(f"{base}/readyz", server)
            first, body = fetch(base + REPEAT_STATS)
            groups = len(json.loads(body)["groups"])
            times = [fetch(base + REPEAT_STATS)[0] for _ in range(20)]
        finally:
            server.terminate()
            server.wait(timeout=40)
        print(f"serve --import: ready in {ready:.2f} s; GET repeat-stats over {groups} groups "
              f"({len(body) / 1e3:.0f} kB): first {first * 1000:.1f} ms, median of 20 "
              f"{statistics.median(times) * 1000:.2f} ms (later requests may be answered from the response cache)")


if __name__ == "__main__":
    main()
