#!/usr/bin/env python3
"""The explorer's page for a task, uncached, next to Datasette's faceted table page of the same runs.

One run: builds the release binary, starts mlenergy-server on data/sample with no answer cache
(`--response-cache-bytes 0`: every page is rendered anew), exports the LLM runs to SQLite and starts
Datasette on them, then for each LLM task times, over one keep-alive connection each:

  * ours: /explore/llm?task=T (filters, facet counts, the runs table, the best configuration per
    model, the snippets), and the same page with its two charts (pareto.svg, sweep.svg when drawn);
  * Datasette: /bench/llm?task=T&_facet=model_id&_facet=gpu_model&_facet=num_gpus&_size=50, its
    HTML table page with three facets.

It prints the median and p95 time per page (server time plus a loopback round trip), our ratio to
Datasette, and the bytes a browser transfers for the page with its script, style sheet, icon and
charts, compressed (br and gzip). Any non-2xx answer is counted and reported as a failure. It
measures; it asserts nothing about speed.

    python3 bench/explore_bench.py [--rounds 60] [--skip-build]
"""

import http.client
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import bench_args, build_release, ensure_tools, export_peer_data, start_ours, start_peers  # noqa: E402

TASKS = ["gpqa", "lm-arena-chat", "image-chat", "video-chat", "sourcegraph-fim"]


def timed(host, port, paths, rounds, headers=None):
    """Per-request seconds of `paths` in turn over one connection, after one warm-up pass; and
    the number of non-2xx answers."""
    conn = http.client.HTTPConnection(host, port)
    times, failures = [], 0
    for r in range(rounds + 1):
        for p in paths:
            t = time.perf_counter()
            conn.request("GET", p, headers=headers or {})
            resp = conn.getresponse()
            resp.read()
            dt = time.perf_counter() - t
            if not 200 <= resp.status < 300:
                failures += 1
            if r > 0:
                times.append(dt)
    conn.close()
    return times, failures


def transferred(host, port, page, coding):
    """Bytes of the page and what it loads (script, style sheet, icon, charts), in `coding`."""
    import re
    conn = http.client.HTTPConnection(host, port)
    total, failures = 0, 0

    def get(path, coding):
        nonlocal total, failures
        conn.request("GET", path, headers={"Accept-Encoding": coding, "Accept": "text/html"})
        resp = conn.getresponse()
        body = resp.read()
        failures += not 200 <= resp.status < 300
        return body

    html = get(page, "identity").decode()
    loads = re.findall(r'(?:src|href)="(/(?:explore/assets/|v1/llm/charts/)[^"]+)"', html)
    paths = [page] + list(dict.fromkeys(p.replace("&amp;", "&") for p in loads))
    for path in paths:
        total += len(get(path, coding))
    conn.close()
    return total, failures, len(paths)


def main():
    ap = bench_args(__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60)
    args = ap.parse_args()
    ensure_tools()
    build_release(args)
    procs = []
    try:
        ours = start_ours(procs, "--response-cache-bytes", "0")
        port = urllib.parse.urlsplit(ours).port
        parquet_path, db, _ = export_peer_data(ours)
        _, (datasette, _) = start_peers(procs, parquet_path, db)
        dport = int(urllib.parse.urlsplit(datasette).port)

        html = {"Accept": "text/html"}
        pages = [f"/explore/llm?task={t}" for t in TASKS]
        with_charts = []
        for t in TASKS:
            with_charts += [f"/explore/llm?task={t}", f"/v1/llm/charts/pareto.svg?task={t}"]
        peer = [f"/bench/llm?task={t}&_facet=model_id&_facet=gpu_model&_facet=num_gpus&_size=50" for t in TASKS]
        ours, f1 = timed("127.0.0.1", port, pages, args.rounds, html)
        ours_charts, f2 = timed("127.0.0.1", port, with_charts, args.rounds, html)
        theirs, f3 = timed("127.0.0.1", dport, peer, args.rounds, html)
        # A page with its charts: the page and its Pareto chart back to back.
        per_view = [a + b for a, b in zip(ours_charts[0::2], ours_charts[1::2])]

        def line(name, xs, failures):
            xs = sorted(xs)
            p95 = xs[int(len(xs) * 0.95) - 1]
            print(f"{name:44s} median {statistics.median(xs) * 1000:6.2f} ms  p95 {p95 * 1000:6.2f} ms  "
                  f"({len(xs)} requests, {failures} non-2xx)")
            return statistics.median(xs)

        print(f"explorer pages of the {len(TASKS)} LLM tasks, uncached, one connection each:")
        m_ours = line("mlenergy-server /explore/llm?task=T", ours, f1)
        line("mlenergy-server page + pareto.svg", per_view, f2)
        m_peer = line("Datasette /bench/llm?task=T with 3 facets", theirs, f3)
        print(f"\nours / Datasette (time per page): {m_ours / m_peer:.2f} (lower is faster; "
              f"{m_peer / m_ours:.1f}x the speed)")

        print("\nbytes transferred for a page with its script, style sheet, icon and charts:")
        for t in ("gpqa", "lm-arena-chat"):
            for view in (f"/explore/llm?task={t}",
                         f"/explore/llm?task={t}&model_id=Qwen/Qwen3-14B&gpu_model=B200&num_gpus=1"):
                for coding in ("br", "gzip", "identity"):
                    n, failures, files = transferred("127.0.0.1", port, view, coding)
                    print(f"  {view:78s} {coding:8s} {n / 1000:7.1f} KB in {files} files ({failures} non-2xx)")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()


if __name__ == "__main__":
    main()
