"""Derive the share of its pass rate that a saturated disaggregated prefill pool serves, per stack.

Development time only:

    python scripts/derive_prefill_pool_share.py ../shared/validation/measured_frontiers.csv

Every scored disaggregated point of the public measured frontier file (InferenceX, SemiAnalysis) is
predicted at its own deployment (``planner.serving.deployed.predict``) with the prefill pool's
capacity ``eta_P G_P X_p / I`` (``rate_prefill`` in ``planner.physics.serving_eq``) at each
``eta_P`` of a grid.  Per serving stack, the ``eta_P`` that minimises the mean |log(predicted /
measured output tokens/s per GPU)| over that stack's points is printed, with its standard error
(bootstrap over the points) and the points' count; and the same over every stack's points.  These
are the constants ``PREFILL_POOL_SHARE`` in ``planner/serving/deployed.py``.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from planner.serving.deployed import predict
from planner.specs.registry import load_hardware, load_model
from planner.truth.frontiers import WEIGHTS, _drafts, _rules, deployments, load_frontiers

GRID = np.round(np.arange(0.20, 1.41, 0.05), 2)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    df = _rules(load_frontiers(argv[0]))
    dep = deployments(df)
    dep["drafts"] = _drafts(df, dep, df["stack"])
    ok = (df.status == "") & (df.rule == "") & dep.disagg.to_numpy() & (df.model_spec != "")
    err = {}
    stacks = {}
    for (h, m, stack, prec, isl, osl), idx in df[ok].groupby(
            ["hardware_spec", "model_spec", "stack", "precision", "isl", "osl"]).groups.items():
        hw = load_hardware(h)
        hw = hw.with_stack(stack) if stack in hw.stacks else hw
        meas = df.loc[idx, "tps_per_gpu_output"].to_numpy(float)
        cols = []
        for eta in GRID:
            p = predict(load_model(m), hw, dep.loc[idx], weights=WEIGHTS.get(prec, prec), isl=float(isl),
                        osl=float(osl), pool_share=float(eta))
            fit = p.reason.to_numpy() == 0
            cols.append(np.where(fit, np.abs(np.log(p.output_tps_per_gpu.to_numpy(float) / meas)), np.nan))
        for i, j in enumerate(idx):
            err[j] = np.array([c[i] for c in cols])
            stacks[j] = stack
    rows = pd.Series(err)
    rows = rows[[np.isfinite(v).all() for v in rows]]
    rng = np.random.default_rng(0)
    groups = {s: [j for j in rows.index if stacks[j] == s] for s in sorted(set(stacks.values()))}
    groups["(all)"] = list(rows.index)
    for s, js in groups.items():
        if not js:
            continue
        e = np.vstack([rows[j] for j in js])
        best = GRID[int(np.argmin(e.mean(axis=0)))]
        boot = [GRID[int(np.argmin(e[rng.integers(0, len(e), len(e))].mean(axis=0)))] for _ in range(300)]
        at1 = e[:, int(np.flatnonzero(GRID == 1.0)[0])].mean()
        print(f"{s}: {len(js)} points; eta_P {best:.2f} (bootstrap SE {np.std(boot):.2f}); mean |log| "
              f"{e.mean(axis=0).min():.3f} (at eta_P 1: {at1:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
