#!/usr/bin/env python3
"""Raw-derived data speed: ITL + timeline of one large generated LLM run (~2 M output tokens,
8 GPUs, written with indent=2 like the real files: ~76 MB results.json), cold and warm through
mlenergy-server serving the compiled tree (as the published dataset is served), next to
mlenergy-data's inter_token_latencies() + timelines() in-process, plus the server's peak RSS;
then again after a restart on the same cache.

    python3 bench/raw_bench.py [--requests 13000]

It measures; it asserts nothing about speed.
"""

import json
import random
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "conformance"))
sys.path.insert(0, str(ROOT / "bench"))
import rawgen as g  # noqa: E402
from bench import SERVER, bench_args, build_release, free_port, wait_ready  # noqa: E402

TOOLKIT = """
import sys, time, warnings
warnings.simplefilter("ignore")
from mlenergy.data import LLMRuns
runs = LLMRuns.from_raw_results(sys.argv[1], stable_only=False)
start = time.perf_counter()
n = len(runs[0].inter_token_latencies())
t = runs[0].timelines(metric="power.device_instant")
print(time.perf_counter() - start, n, len(t))
"""


def status(pid: int, key: str) -> int:
    """A /proc/<pid>/status figure in bytes (VmHWM: the peak RSS; RssAnon, RssFile: now)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def peak_rss(pid: int) -> int:
    return status(pid, "VmHWM")


class AnonPeak:
    """Private (anonymous) RSS sampled every `interval` seconds while running (2 ms by default):
    the largest seen (`peak`) and every sample with its time (`samples`). VmHWM also counts the
    pages of the server's own code, which do not grow with the file."""

    def __init__(self, pid: int, interval: float = 0.002):
        self.pid, self.interval, self.peak, self.samples = pid, interval, 0, []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        start = time.monotonic()
        while True:
            rss = status(self.pid, "RssAnon")
            self.peak = max(self.peak, rss)
            self.samples.append((time.monotonic() - start, rss))
            if self.stop.wait(self.interval):
                return

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def big_run(root: Path, requests: int) -> Path:
    """Write the large LLM run (8 GPUs, `requests` requests of 50-250 tokens, a 30-minute timeline,
    indent=2 like the real files) under the raw root `root`; returns its run directory."""
    g.llm_config(root / "configs" / "vllm", "lm-arena-chat", "org/big", "H100")
    start = 1_700_000_000.0
    tl = g.timeline(random.Random(1), 8, start, start + 1800, steady=(start + 60.0, start + 1740.0))
    return g.llm_run(root, task="lm-arena-chat", model_id="org/big", num_gpus="8", max_num_seqs="256",
                     n_requests=requests, tokens=(50, 250), prometheus=g.prom(250.0), timeline=tl, indent=2)


def main():
    ap = bench_args(__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=13000)
    ap.add_argument("--formats", action="store_true",
                    help="also the private memory growth of the ITL answer in each format (issue 19 item 4)")
    args = ap.parse_args()
    build_release(args)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "raw"
        d = big_run(root, args.requests)
        size = (d / "results.json").stat().st_size
        cache = Path(tmp) / "cache"
        # Serve it the way the published dataset is served: compiled summaries, raw files on demand.
        compiled = Path(tmp) / "compiled"
        subprocess.run([SERVER, "build", str(root), "--out", str(compiled)],
                       check=True, capture_output=True)

        def serve(label):
            port = free_port()
            proc = subprocess.Popen([SERVER, "--bind", f"127.0.0.1:{port}",
                                     "--data", str(compiled), "--cache", str(cache)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            base = f"http://127.0.0.1:{port}"
            try:
                wait_ready(f"{base}/readyz", proc)
                run_id = json.loads(urllib.request.urlopen(
                    f"{base}/v1/llm/runs?fields=run_id&stability=all").read())["runs"][0]["run_id"]
                rss_ready = peak_rss(proc.pid)
                anon_ready, file_ready = status(proc.pid, "RssAnon"), status(proc.pid, "RssFile")

                def fetch():
                    t0 = time.perf_counter()
                    a = urllib.request.urlopen(f"{base}/v1/llm/runs/{run_id}/itl?format=arrow").read()
                    b = urllib.request.urlopen(f"{base}/v1/llm/runs/{run_id}/timeline?format=arrow").read()
                    return time.perf_counter() - t0, len(a) + len(b)

                with AnonPeak(proc.pid) as anon:
                    cold, nbytes = fetch()
                warm = min(fetch()[0] for _ in range(5))
                rss = peak_rss(proc.pid)
                if args.formats and label.startswith("mlenergy-server, restarted"):
                    # Warm derived data: what each answer adds to private memory while it is sent
                    # (read in 64 KiB chunks, as a client that keeps up).
                    for fmt in ("arrow", "json", "csv", "ndjson", "parquet"):
                        before = status(proc.pid, "RssAnon")
                        with AnonPeak(proc.pid) as grow:
                            with urllib.request.urlopen(f"{base}/v1/llm/runs/{run_id}/itl?format={fmt}") as r:
                                total = 0
                                while chunk := r.read(1 << 16):
                                    total += len(chunk)
                        print(f"  ITL as {fmt}: {total / 1e6:.0f} MB answer; private memory growth while sent "
                              f"{max(0, grow.peak - before) / 1e6:.1f} MB "
                              f"({max(0, grow.peak - before) / size:.2f}x the results.json)")
            finally:
                proc.terminate()
                proc.wait(timeout=10)
            print(f"{label}: ITL + timeline first request {cold * 1000:.0f} ms, warm {warm * 1000:.1f} ms "
                  f"({nbytes / 1e6:.1f} MB of Arrow); peak RSS {rss / 1e6:.0f} MB "
                  f"({rss / size:.2f}x the file; {rss_ready / 1e6:.0f} MB before the request, of which "
                  f"{file_ready / 1e6:.0f} MB the server's code pages); private (anon) peak during the "
                  f"first request {anon.peak / 1e6:.0f} MB ({anon.peak / size:.2f}x the file; "
                  f"{anon_ready / 1e6:.0f} MB before it)")
            return cold

        cold = serve("mlenergy-server, empty cache (parses results.json)")
        serve("mlenergy-server, restarted (persisted derived data)")
        out = subprocess.run([sys.executable, "-c", TOOLKIT, str(root)], capture_output=True, text=True, check=True).stdout
        toolkit_s, n_itl, n_tl = out.split()
        print(f"results.json {size / 1e6:.0f} MB, {n_itl} ITL samples, {n_tl} timeline rows")
        print(f"mlenergy-data inter_token_latencies() + timelines(): {float(toolkit_s) * 1000:.0f} ms (cold, in-process)")
        print(f"cold speed-up over the toolkit: {float(toolkit_s) / cold:.1f}x")

if __name__ == "__main__":
    main()
