"""Where a ratio first reaches a threshold, and the acceptance drawn for a band."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.serving.comparison import crossing, crossing_intervals, crossings
from planner.specs.registry import load_model
from planner.truth.uncertainty import acceptance_draws


def test_crossing_interpolates_in_log_rate():
    x = np.array([10.0, 100.0, 1000.0])
    y = np.array([5.0, 15.0, 5.0])
    lo, hi = crossing(x, y, 10.0)
    # halfway between 5 and 15 on each side, in log x: sqrt(10 * 100) and sqrt(100 * 1000)
    assert lo == pytest.approx(np.sqrt(1000.0)) and hi == pytest.approx(np.sqrt(1e5))
    assert crossing(x, y, 20.0) is None
    assert crossing(x, np.array([12.0, 15.0, 11.0]), 10.0) == [10.0, 1000.0]


def test_crossings_per_mw_scales_the_band_by_the_power_factor():
    r = pd.DataFrame({"tps_per_user": [10.0, 100.0], "ratio": [8.0, 12.0], "ratio_per_mw": [4.0, 6.0],
                      "both_useful": [True, True]})
    band = pd.DataFrame({"tps_per_user": [10.0, 100.0], "lo": [6.0, 9.0], "hi": [11.0, 14.0]})
    c = crossings(r, 10.0, band, power_factor=0.5)
    assert c["per_gpu"]["nominal"][1] == 100.0 and c["per_gpu"]["surely"] is None
    assert c["per_gpu"]["earliest"][0] == 10.0
    assert c["per_mw"]["nominal"] is None and c["per_mw"]["earliest"] is None  # 14 x 0.5 = 7 < 10


def test_acceptance_draws_stay_in_the_declared_range_and_pair_by_seed():
    m = load_model("kimi-k2-thinking")
    lo, hi = m.spec_range[3]
    draws = acceptance_draws(m, 50, seed=7)
    a3 = np.array([d.spec_tokens[3] for d in draws])
    assert a3.min() >= lo - 1e-12 and a3.max() <= hi + 1e-12 and a3.std() > 0
    assert all(d.spec_tokens[n] <= n + 1 for d in draws for n in d.spec_tokens)
    assert [d.spec_tokens for d in acceptance_draws(m, 5, seed=7)] == [d.spec_tokens for d in draws[:5]]
    assert all(d is m for d in acceptance_draws(m, 3, given=True))


def test_a_ratio_that_dips_below_the_threshold_and_back_gives_two_intervals():
    # 10x at rate 10 and at 1000, 8x between: two intervals, the first one the nominal
    x = np.array([10.0, 100.0, 1000.0])
    y = np.array([10.0, 8.0, 10.0])
    spans = crossing_intervals(x, y, 10.0)
    assert np.allclose(spans, [[10.0, 10.0], [1000.0, 1000.0]], rtol=1e-12)
    assert crossing(x, y, 10.0) == spans[0]
    # crossing 10 halfway in log rate between 100 (8x) and 1000 (12x): 10^2.5
    spans = crossing_intervals(x, np.array([12.0, 8.0, 12.0]), 10.0)
    assert spans[0][1] == pytest.approx(10 ** 1.5) and spans[1][0] == pytest.approx(10 ** 2.5)


def test_an_interval_the_solved_ratio_does_not_reach_is_not_reported():
    # the curve is above 10x in two places; solved exactly at each one's peak (at 3 significant
    # figures, as the table's rows are), the first reaches 6.4x only (a frontier's tail, where the
    # interpolated curve and the solved frontiers disagree), the second 12x: only the second stays,
    # and it is the nominal one
    x = np.array([10.0, 18.5, 30.0, 50.0, 80.0])
    r = pd.DataFrame({"tps_per_user": x, "ratio": [5.0, 11.0, 5.0, 12.5, 5.0],
                      "ratio_per_mw": [3.0, 7.0, 3.0, 8.0, 3.0], "both_useful": True})
    asked = []

    def solve(xs):
        asked.extend(xs)
        gpu = np.array([6.4 if v < 20 else 12.0 for v in xs])
        return gpu, gpu * 0.6, np.ones(len(xs), bool)

    c = crossings(r, 10.0, solve=solve)
    assert asked == [18.5, 50.0]
    assert len(c["per_gpu"]["intervals"]) == 1 and c["per_gpu"]["nominal"][0] > 30.0
    assert c["per_mw"]["nominal"] is None  # 12 x 0.6 < 10 solved, 8 on the curve
    # a solved point in either side's tail (not useful) does not count either
    c = crossings(r, 10.0, solve=lambda xs: (np.full(len(xs), 12.0), np.full(len(xs), 12.0),
                                              np.zeros(len(xs), bool)))
    assert c["per_gpu"]["nominal"] is None
    # without a solver, the curve's intervals
    assert len(crossings(r, 10.0)["per_gpu"]["intervals"]) == 2
