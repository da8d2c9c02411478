"""Benchmark: a landscape's cells on one worker and on several (planner.cells on Dask).

Usage:  python benchmarks/bench_landscape.py [--workers N] [--leave-out]

Prints the wall time of ``landscape`` over 8 systems x 4 models x 2 workloads (ISL/OSL 1k/1k and
8k/1k, three service levels, no band) with one worker (in this process) and with N worker
processes of a local Dask cluster (default: the cores), each from an empty cell cache, and the
speed-up; with ``--leave-out``, the same for ``validate --runs --leave-out system`` (minutes).
Needs the dask extra (pip install 'moe-planner[dask]').
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

SYSTEMS = ("gb200-nvl72", "gb300-nvl72", "hgx-b200", "hgx-b300", "hgx-h100", "hgx-h200", "mi300x", "mi355x")
MODELS = ("deepseek-r1", "kimi-k2-thinking", "gpt-oss-120b", "qwen3-235b-a22b")
WORKLOADS = ("1k/1k", "8k/1k")


def timed(fn, *a, **k) -> tuple[float, object]:
    t0 = time.perf_counter()
    out = fn(*a, **k)
    return time.perf_counter() - t0, out


def main() -> None:
    from planner import Scenario
    from planner.cells import Executor, describe
    from planner.fleet.landscape import landscape

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    p.add_argument("--leave-out", action="store_true", help="also validate --runs --leave-out system")
    a = p.parse_args()
    sc = Scenario(systems=SYSTEMS)
    # warm-up: the equations' compiled code in this process's cache (each worker loads it from disk)
    landscape(sc.replace(systems=SYSTEMS[:1]), MODELS[:1], WORKLOADS[:1])
    times = {}
    for workers in (1, a.workers):
        with tempfile.TemporaryDirectory() as cache:
            t, ls = timed(landscape, sc, MODELS, WORKLOADS, executor=Executor(workers=workers, cache=cache))
        times[workers] = t
        print(f"landscape, {len(SYSTEMS)} x {len(MODELS)} x {len(WORKLOADS)} cells, {workers} worker(s): "
              f"{t:.1f} s ({describe(ls.run)})")
    print(f"landscape speed-up, {a.workers} workers over 1: {times[1] / times[a.workers]:.2f}x "
          f"on {os.cpu_count()} cores")
    if a.leave_out:
        from planner.truth.runs_fit import held_out

        lt = {}
        for workers in (1, a.workers):
            lt[workers], _ = timed(held_out, None, "system", executor=Executor(workers=workers))
            print(f"validate --runs --leave-out system, {workers} worker(s): {lt[workers]:.0f} s")
        print(f"leave-out speed-up, {a.workers} workers over 1: {lt[1] / lt[a.workers]:.2f}x")


if __name__ == "__main__":
    main()
