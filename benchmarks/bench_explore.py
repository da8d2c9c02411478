"""Benchmark: how long the Jupyter explorer (``planner.explore``) takes to redraw after a change.

Usage:  python benchmarks/bench_explore.py [--model kimi-k2-thinking] [--a gb200-nvl72] [--b hgx-h200]
        [--repeat 5]

Builds the panel headless (ipywidgets needed: ``pip install '.[jupyter]'``), then times each kind
of change ``--repeat`` times with a fresh value each time (so no change finds its frontier in the
cache): a slider of system A (the default case: one frontier recomputed, the figure redrawn), the
interactivity only (nothing recomputed), ISL (both frontiers), a state seen before (both cached),
and system A's slider with the full search instead of the fast one.  Each line gives the best and
median wall time and the best CPU time of this process (what the redraw costs on an idle core,
where other processes share the machine), and, for the median, how much went to the search and
how much to drawing.  Last line: ``redraw_default_s: N`` (median wall time of the default case).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

import planner  # noqa: E402
from planner.explorer import FAST  # noqa: E402


def timed(panel: planner.Explorer, changes: list[dict]) -> tuple[list[float], list[float], dict]:
    walls, cpus, split = [], [], []
    for ch in changes:
        c0 = time.process_time()
        panel.set(**ch)
        cpus.append(time.process_time() - c0)
        walls.append(panel.redraw_s)
        split.append(panel.timings)
    mid = sorted(range(len(walls)), key=walls.__getitem__)[len(walls) // 2]
    return walls, cpus, split[mid]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="kimi-k2-thinking")
    ap.add_argument("--a", default="gb200-nvl72")
    ap.add_argument("--b", default="hgx-h200")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--search", default="fast", choices=("deployed", "fast", "full"),
                    help="the panel's search (default fast: the figure the README quotes)")
    args = ap.parse_args(argv)
    n = max(args.repeat, 1)

    t0 = time.perf_counter()
    panel = planner.explore(args.model, args.a, args.b, search=args.search)
    print(f"panel built and first drawn (two frontiers): {time.perf_counter() - t0:.2f} s "
          f"({args.model}, {args.a} vs {args.b}, {args.search} search"
          + (f" {FAST})" if args.search == "fast" else ")"))
    lengths = [512, 2048, 4096, 8192, 16384, 32768]
    cases: list[tuple[str, Callable[[int], dict]]] = [
        ("A's HBM bandwidth (default case: one frontier)", lambda i: {"hbm_bandwidth_a": 1.1 + 0.05 * i}),
        ("interactivity only (nothing recomputed)", lambda i: {"at": 30.0 + 5 * i}),
        ("ISL (both frontiers)", lambda i: {"isl": lengths[i % len(lengths)], "hbm_bandwidth_a": 1.0}),
        ("a state seen before (both cached)", lambda i: {"isl": lengths[i % len(lengths)]}),
        ("A's NVLink bandwidth, full search", lambda i: {"search": "full", "su_bandwidth_a": 1.1 + 0.05 * i}),
    ]
    default = float("nan")
    for k, (label, make) in enumerate(cases):
        walls, cpus, split = timed(panel, [make(i) for i in range(n)])
        med = statistics.median(walls)
        default = med if k == 0 else default
        print(f"{label}: wall best {min(walls):.3f} s, median {med:.3f} s; CPU best {min(cpus):.3f} s; "
              f"median split: search {split.get('search_s', 0):.3f} s, draw {split.get('draw_s', 0):.3f} s")
    print(f"redraw_default_s: {default:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
