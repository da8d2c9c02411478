"""Derive the output tokens a benchmark deployment delivers per request, over the nominal OSL.

Development time only:

    python scripts/derive_output_yield.py ../shared/validation/measured_frontiers.csv

Each measured frontier point gives output tokens/s over all its GPUs, its GPU count, its median
E2E latency and its concurrency.  In a closed loop of N users, output tokens/s = N x (output tokens
per request) / E2E, so ``tps_per_gpu_output x total_gpus x e2e_s / (concurrency x osl)`` is the
output per request over the nominal OSL that the benchmark's own figures imply.  Printed: rows,
the median (the constant ``OUTPUT_YIELD`` in ``planner/serving/deployed.py``), its bootstrap
standard error, the 5/25/75/95% quantiles and the median per system.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    m = pd.read_csv(argv[0])
    y = m.tps_per_gpu_output * m.total_gpus * m.e2e_s / (m.concurrency * m.osl)
    ok = np.isfinite(y) & (y > 0)
    v = y[ok].to_numpy(float)
    rng = np.random.default_rng(0)
    se = float(np.std([np.median(rng.choice(v, len(v))) for _ in range(1000)]))
    q = np.quantile(v, [0.05, 0.25, 0.75, 0.95])
    print(f"rows {len(v)}; median {np.median(v):.4f} (bootstrap SE {se:.4f}); 5/25/75/95%: "
          + " ".join(f"{x:.3f}" for x in q))
    for hw, g in m[ok].assign(y=y[ok]).groupby("hardware"):
        print(f"  {hw}: {g.y.median():.4f} ({len(g)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
