#!/usr/bin/env python3
"""Build speed: `mlenergy-server build` next to mlenergy-data's from_raw_results on one generated
raw tree of ~200 runs (LLM with realistic request counts and ITL lists, plus diffusion runs).

    python3 bench/build_bench.py [--llm-runs 160] [--diffusion-runs 40] [--requests 512]

Prints wall time of each, the speed-up, our peak RSS, and checks both produced the same number
of rows. It measures; it asserts nothing about speed.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "conformance"))
sys.path.insert(0, str(ROOT / "bench"))
import rawgen as g  # noqa: E402
from bench import SERVER, bench_args, build_release  # noqa: E402


def generate(root: Path, llm_runs: int, diffusion_runs: int, n_requests: int) -> None:
    cfg, dcfg = root / "configs" / "vllm", root / "configs" / "xdit"
    models = [f"org/model-{i}" for i in range(max(1, llm_runs // 8))]
    batches = [8, 16, 32, 64, 128, 256, 512, 1024]
    made = 0
    for m in models:
        g.llm_config(cfg, "lm-arena-chat", m, "H100")
        for b in batches:
            if made == llm_runs:
                break
            g.llm_run(root, task="lm-arena-chat", model_id=m, max_num_seqs=str(b), n_requests=n_requests,
                      tokens=(50, 250), prometheus=g.prom(b * 0.95), rng_seed=made)
            made += 1
    for i in range(diffusion_runs):
        m = f"org/diff-{i // 6}"
        g.diffusion_config(dcfg, "text-to-image", m)
        g.diffusion_run(root, model_id=m, cfg_name=f"batch-{2 ** (i % 6)}+size-1024x1024+steps-20+seed-48105+uly-1+ring-1+tc-False",
                        rng_seed=i)


def run_ours(root: Path, out: Path) -> tuple[float, int]:
    start = time.perf_counter()
    proc = subprocess.Popen([SERVER, "build", str(root), "--out", str(out), "--skip-raw"],
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    assert os.waitstatus_to_exitcode(status) == 0
    return elapsed, usage.ru_maxrss * 1024


TOOLKIT = """
import sys, time, warnings
warnings.simplefilter("ignore")
from mlenergy.data import LLMRuns, DiffusionRuns
start = time.perf_counter()
llm = LLMRuns.from_raw_results(sys.argv[1], stable_only=False)
diff = DiffusionRuns.from_raw_results(sys.argv[1])
print(time.perf_counter() - start, len(llm), len(diff))
"""


def main():
    ap = bench_args(__doc__.splitlines()[0])
    ap.add_argument("--llm-runs", type=int, default=160)
    ap.add_argument("--diffusion-runs", type=int, default=40)
    ap.add_argument("--requests", type=int, default=512)
    args = ap.parse_args()
    build_release(args)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "raw"
        t0 = time.perf_counter()
        generate(root, args.llm_runs, args.diffusion_runs, args.requests)
        size = sum(p.stat().st_size for p in root.rglob("*.json"))
        print(f"generated {args.llm_runs} LLM + {args.diffusion_runs} diffusion runs, {size / 1e6:.0f} MB of JSON, "
              f"in {time.perf_counter() - t0:.1f} s", flush=True)
        # Warm the page cache so neither side pays for the first read.
        for p in root.rglob("*.json"):
            p.read_bytes()
        ours_s, rss = run_ours(root, Path(tmp) / "out")
        out = subprocess.run([sys.executable, "-c", TOOLKIT, str(root)], capture_output=True, text=True, check=True).stdout
        toolkit_s, n_llm, n_diff = out.split()
        import pyarrow.parquet as pq
        ours_llm = pq.read_table(Path(tmp) / "out/runs/llm.parquet").num_rows
        ours_diff = pq.read_table(Path(tmp) / "out/runs/diffusion.parquet").num_rows
        print(f"rows: ours {ours_llm} LLM + {ours_diff} diffusion, toolkit {n_llm} + {n_diff}")
        print(f"mlenergy-server build: {ours_s:.2f} s, peak RSS {rss / 1e6:.0f} MB")
        print(f"mlenergy-data from_raw_results (LLM + diffusion): {float(toolkit_s):.2f} s")
        print(f"speed-up: {float(toolkit_s) / ours_s:.1f}x on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
