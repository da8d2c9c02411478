"""How close can any all-to-all law come to the measured kernels?  A floor from the data alone.

An all-to-all phase's time can only grow with the bytes it moves: more tokens, a wider hidden
state or more experts per token never make a dispatch or a combine faster.  The closest any such
law can come to a table is then the best *non-decreasing* function of the volume, fitted to each
series of one (GPU, stack, phase, dtype, EP, kernel) on its own: isotonic regression of log
latency on ``tokens x hidden x top-k`` (:func:`scipy.optimize.isotonic_regression`, least
squares).  It is far more flexible than the law (a free value per row, where the law has a floor
per phase and a bandwidth), so its median |error| is a yardstick for what any monotone law can
reach: a law near it has little left to learn from the table.  (It minimises squares, not the
median, so it is not a strict bound, and its tail says nothing: one slow row at a small volume
lifts every larger row of its sweep.)  Printed beside the law's own error (realistic mode, as
``moe-planner validate --kernels``), per cell.

    python scripts/a2a_noise_floor.py
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import isotonic_regression

from planner.truth.kernels import load_table, predict_a2a

SERIES = ["gpu", "stack", "phase", "dtype", "ep", "variant"]  #: one measured sweep


def monotone_errors(df: pd.DataFrame) -> np.ndarray:
    """|error| of the best non-decreasing function of the volume, fitted per series, on each row."""
    err = np.empty(len(df))
    volume = (df.tokens * df.hidden * df.topk).to_numpy(float)
    for _, idx in df.groupby(SERIES, observed=True).groups.items():
        pos = df.index.get_indexer(idx)
        pos = pos[np.argsort(volume[pos], kind="stable")]
        y = np.log(df.latency_us.to_numpy(float)[pos])
        fit = isotonic_regression(y).x
        err[pos] = np.abs(np.exp(fit - y) - 1)
    return err


def main() -> None:
    df = load_table("a2a").reset_index(drop=True)
    df["floor_err"] = monotone_errors(df)
    df["law_err"] = np.abs(predict_a2a(df, "realistic") * 1e6 / df.latency_us.to_numpy(float) - 1)
    out = df.groupby(["gpu", "stack"], observed=True).agg(
        n=("law_err", "size"),
        law_median=("law_err", "median"), law_p90=("law_err", lambda e: e.quantile(0.9)),
        monotone_median=("floor_err", "median"),
    )
    pd.set_option("display.width", 120)
    print("# all-to-all kernels: the fitted law's |error| beside the best non-decreasing function of the")
    print("# volume fitted to each measured sweep on its own (monotone_median); fractions, 0.10 = 10%")
    print(out.round(3).to_string())


if __name__ == "__main__":
    main()
