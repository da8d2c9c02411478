"""Throughput of the vectorised step model: decode steps evaluated per second on one core.

Usage: ``python benchmarks/bench_step.py [--n 2000000] [--chunk 65536] [--no-categories]``

Evaluates ``--n`` random decode configurations (layout, batch per attention rank, context) of
Kimi K2 Thinking on a GB200 NVL72 with :func:`planner.physics.step.evaluate_configs`, in chunks, and
prints configurations per second of CPU time and, as its last line, of wall time
(``evaluations_per_second: N``).  The inputs are drawn once, before the
clock starts; the timed part is the compiled sympy expressions plus the feasibility and
bottleneck bookkeeping (skip the latter with ``--no-categories``).
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core: no threaded BLAS/ufunc pools

import numpy as np  # noqa: E402

from planner.physics.step import default_slots, evaluate_configs, resolve_precisions  # noqa: E402
from planner.specs.registry import load_hardware, load_model  # noqa: E402


def random_configs(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """n random layouts on 1..72 GPUs with batch and context drawn log-uniformly."""
    rng = np.random.default_rng(seed)
    G = rng.choice(np.array([4, 8, 16, 32, 36, 64, 72], dtype=float), n)
    TP_a = rng.choice(np.array([1, 2, 4, 8], dtype=float), n)
    TP_e = rng.choice(np.array([1, 1, 2, 4], dtype=float), n)
    EP = G / TP_e
    model = load_model("kimi-k2-thinking")
    slots = default_slots(model, EP).astype(float)
    b = np.exp(rng.uniform(np.log(0.05), np.log(512.0), n))
    S = np.exp(rng.uniform(np.log(256.0), np.log(131072.0), n))
    return dict(G=G, TP_a=TP_a, EP=EP, TP_e=TP_e, E_slots=slots, b=b, S=S)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2_000_000, help="configurations (default 2000000)")
    ap.add_argument("--chunk", type=int, default=65_536, help="configurations per call (default 65536)")
    ap.add_argument("--no-categories", action="store_true", help="skip the bottleneck bookkeeping")
    ap.add_argument("--repeat", type=int, default=5,
                    help="timed passes; the best is reported, as other processes share the core (default 5)")
    args = ap.parse_args(argv)

    model, hw = load_model("kimi-k2-thinking"), load_hardware("gb200-nvl72")
    prec = resolve_precisions(model, hw)
    cfg = random_configs(args.n)
    chunks = [{k: v[i:i + args.chunk] for k, v in cfg.items()} for i in range(0, args.n, args.chunk)]
    # compile (lambdify) this call signature once, untimed
    evaluate_configs(model, hw, prec, "realistic", overlap=1, categories=not args.no_categories, **chunks[0])

    best = best_cpu = float("inf")
    feasible = 0
    for _ in range(max(args.repeat, 1)):
        feasible = 0
        t0, c0 = time.perf_counter(), time.process_time()
        for c in chunks:
            out = evaluate_configs(model, hw, prec, "realistic", overlap=1,
                                   categories=not args.no_categories, **c)
            feasible += int(np.count_nonzero(out["feasible"]))
        best = min(best, time.perf_counter() - t0)
        best_cpu = min(best_cpu, time.process_time() - c0)
    print(f"configurations: {args.n}  chunk: {args.chunk}  feasible: {feasible}  "
          f"categories: {not args.no_categories}  best of {args.repeat}: {best:.3f} s wall, "
          f"{best_cpu:.3f} s CPU  (load average {os.getloadavg()[0]:.2f})")
    print(f"evaluations_per_second_cpu: {args.n / best_cpu:.0f}")
    print(f"evaluations_per_second: {args.n / best:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
