"""Benchmark: the default compare (the main job) and the raw configuration sweep.

Usage:  python benchmarks/bench_frontier.py
Prints the wall time of ``compare()`` on the bundled defaults (after import and one warm-up
call that compiles the equations) and, as its last line, ``configs_per_second: N``: decode
configurations (layout x batch x precision x MTP x overlap) evaluated per second by the search.
"""

from __future__ import annotations

import time

import numpy as np

from planner import load_hardware, load_model
from planner.physics.step import evaluate_configs, resolve_precisions
from planner.serving.comparison import compare


def main() -> None:
    t0 = time.perf_counter()
    compare()  # warm-up: compiles the equations once
    t1 = time.perf_counter()
    compare()
    t2 = time.perf_counter()
    print(f"compare (first call, includes compiling the equations): {t1 - t0:.2f} s")
    print(f"compare (default: kimi-k2-thinking, gb200-nvl72 vs hgx-h200): {t2 - t1:.2f} s")

    model, hw = load_model("kimi-k2-thinking"), load_hardware("gb200-nvl72")
    prec = resolve_precisions(model, hw, "nvfp4")
    rng = np.random.default_rng(0)
    n_layout = 512
    tp = rng.choice([1, 2, 4, 8], n_layout).astype(float)
    G = rng.choice([8, 16, 32, 64, 72], n_layout).astype(float)
    ep = G.copy()
    slots = np.ceil(model.E / ep) * ep
    batches = np.geomspace(0.1, 512, 128)
    for overlap in (0, 1):  # warm-up: compile each call pattern once
        evaluate_configs(model, hw, prec, "realistic", G=G[:2, None], TP_a=tp[:2, None], EP=ep[:2, None],
                         TP_e=1.0, E_slots=slots[:2, None], b=batches[None, :2], S=1024.0, overlap=overlap)
    total, t = 0, 0.0
    for overlap in (0, 1):
        for ctx in (1024.0, 4096.0, 16384.0, 65536.0):
            b = batches[None, :] * np.ones((n_layout, 1))
            s = time.perf_counter()
            out = evaluate_configs(model, hw, prec, "realistic", G=G[:, None], TP_a=tp[:, None],
                                   EP=ep[:, None], TP_e=1.0, E_slots=slots[:, None], b=b, S=ctx,
                                   overlap=overlap)
            t += time.perf_counter() - s
            total += out["step"].size
    print(f"sweep: {total} configurations in {t:.2f} s")
    print(f"configs_per_second: {total / t:.0f}")


if __name__ == "__main__":
    main()
