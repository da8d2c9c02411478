"""Fit the SGLang stack of the CDNA 3 systems (mi300x, mi325x) to the public measured frontier
points, and score the fit out of fold.

    python scripts/derive_rocm_fit.py /path/to/measured_frontiers.csv

No kernel of an AMD GPU is measured in this repository, so the CDNA 3 calibrations carry no kernel
laws (GEMM, grouped MoE, attention: an NVIDIA GPU's would be borrowed); their steps are the plain
roofline.  This fits three parameters of that roofline to the MI300X and MI325X SGLang points
(InferenceX, SemiAnalysis; DeepSeek-R1-0528 FP8, TP8): the per-kernel floor ``kernel_overhead``,
the HBM fraction ``hbm`` and the compute fraction ``compute``; ``step_overhead`` is held at 1 ms
(every non-MTP step of one model launches the same kernels, so the two floors are collinear).
Least squares on log(predicted / measured) TPOT, parameters in log space, covariance
s^2 (J^T J)^-1.  Out of fold: fitted on one GPU, scored on the other (the same CDNA 3 die), and
fitted on the points before a date, scored on those after.  Prints the values to write into
hardware_specs/calibration/{mi300x,mi325x}.yaml (stacks.sglang) and the scores.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import warnings

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

import planner.specs.registry as registry
from planner.truth import frontiers as fr

SYSTEMS = {"MI300X": "mi300x", "MI325X": "mi325x"}
STACK = "sglang"
DATE_CUT = "2026-03-01"
#: name, start, lower and upper bound
PARAMS = (("kernel_overhead", 8e-6, 1e-6, 1e-4), ("hbm", 0.6, 0.05, 1.0), ("compute", 0.3, 0.02, 1.0))


def _score(rows: pd.DataFrame, values: dict[str, float] | None) -> pd.DataFrame:
    """Each row scored at its own deployment with the CDNA 3 SGLang stack at ``values``."""
    original = registry.load_hardware

    def patched(name, *a, **k):
        hw = original(name, *a, **k)
        if values is not None and isinstance(name, str) and name in SYSTEMS.values():
            eff = dataclasses.replace(hw.stacks[STACK], **values)
            hw = dataclasses.replace(hw, stacks={**hw.stacks, STACK: eff},
                                     efficiency=eff if hw.stack == STACK else hw.efficiency)
        return hw

    registry.load_hardware = patched
    try:
        with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
            rows.to_csv(f.name, index=False)
            s = fr.score_frontiers(f.name, frontier=False, bound=False, system=False)
    finally:
        registry.load_hardware = original
    d = s.rows[s.rows.scored].copy()
    d["log_ratio"] = np.log(d.pred_tpot_s / d.tpot_s)
    return d


def fit(rows: pd.DataFrame) -> tuple[dict[str, float], dict[str, float], int]:
    names = [p[0] for p in PARAMS]
    x0, lo, hi = (np.log([p[i] for p in PARAMS]) for i in (1, 2, 3))
    index: list = []

    def resid(x):
        d = _score(rows, dict(zip(names, map(float, np.exp(x)), strict=True)))
        if not index:
            index.extend(d.index)
        return np.nan_to_num(d.reindex(index).log_ratio.to_numpy(), nan=2.0, posinf=2.0, neginf=-2.0)

    res = least_squares(resid, x0, bounds=(lo, hi), diff_step=0.05, xtol=1e-4, ftol=1e-6)
    r = resid(res.x)
    s2 = float(r @ r) / max(len(r) - len(x0), 1)
    se = np.sqrt(np.clip(np.diag(s2 * np.linalg.pinv(res.jac.T @ res.jac)), 0, None))
    values = dict(zip(names, map(float, np.exp(res.x)), strict=True))
    return values, dict(zip(names, map(float, se), strict=True)), len(r)


def medians(d: pd.DataFrame) -> str:
    return f"tok/s/GPU {d.tps_err.median():.1%}, TPOT {d.tpot_err.median():.1%} ({len(d)} points)"


def main(path: str) -> None:
    warnings.filterwarnings("ignore")
    raw = pd.read_csv(path)
    rows = raw[raw.hardware.isin(list(SYSTEMS)) & (raw.framework == STACK)]
    print(f"{len(rows)} CDNA 3 SGLang rows of {path}, dated {rows.date.min()} to {rows.date.max()}")
    before = _score(rows, None)
    vals, se, n = fit(rows)
    shown = ", ".join(f"{k} {v * 1e6:.4g} us (rel SE {se[k]:.3f})" if k == "kernel_overhead"
                      else f"{k} {v:.4g} (rel SE {se[k]:.3f})" for k, v in vals.items())
    print(f"fit on all {n} scored points: {shown}")
    inf = _score(rows, vals)
    for g in SYSTEMS:
        print(f"  {g}: before {medians(before[before.hardware == g])}; "
              f"in fold {medians(inf[inf.hardware == g])}")
    print("leave one GPU out (fitted on the other):")
    for g in SYSTEMS:
        v, _, _ = fit(rows[rows.hardware != g])
        print(f"  {g}: kernel_overhead {v['kernel_overhead'] * 1e6:.4g} us, hbm {v['hbm']:.3g}, compute "
              f"{v['compute']:.3g} -> {medians(_score(rows[rows.hardware == g], v))}")
    early = rows.date < DATE_CUT
    v, _, _ = fit(rows[early])
    late = _score(rows[~early], v)
    print(f"by date (fitted before {DATE_CUT}, scored on and after): {medians(late)}; "
          f"before the fit {medians(before[before.date >= DATE_CUT])}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
