"""The CLI's plots: what they draw where (axes scale, title, legends, bands, x range)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("matplotlib")

from planner.plot import LOGY_SPAN, plot_frontiers, plot_sizing  # noqa: E402


def _front(hw: str, y: list[float]) -> pd.DataFrame:
    f = pd.DataFrame({"tps_per_user": np.geomspace(10, 300, len(y)), "tps_per_gpu": y,
                      "weights": "fp8", "bottleneck": "kv_read"})
    f.attrs.update(model="m", hardware=hw, serving="decode", context=2048, mode="realistic", metric="output")
    return f


def test_frontier_plot_log_y_by_default_where_the_tail_would_sit_on_zero():
    steep = _front("a", [10_000, 9_000, 5_000, 800, 50])  # 200x: linear would flatten the tail to 0
    flat = _front("b", [10_000, 9_000, 8_000, 7_000, 6_000])
    assert 10_000 / 50 > LOGY_SPAN > 10_000 / 6_000
    assert plot_frontiers([steep]).axes[0].get_yscale() == "log"
    assert plot_frontiers([flat]).axes[0].get_yscale() == "linear"
    assert plot_frontiers([flat], logy=True).axes[0].get_yscale() == "log"
    assert plot_frontiers([steep], logy=False).axes[0].get_yscale() == "linear"


def test_single_frontier_title_names_model_and_hardware():
    fig = plot_frontiers([_front("hgx-h200", [100, 50, 10])])
    assert "m on hgx-h200" in fig.axes[0].get_title()


def test_curve_legend_outside_the_axes_and_band_never_drops_to_zero():
    f = _front("a", [10_000, 9_000, 5_000, 800, 50])
    band = pd.DataFrame({"tps_per_user": f.tps_per_user, "lo": [9_000, 8_000, 4_000, 0.0, 0.0],
                         "hi": [11_000, 10_000, 6_000, 1_000, 80]})
    fig = plot_frontiers([f], bands=[band])
    ax = fig.axes[0]
    fig.canvas.draw()
    # the curves' legend is the figure's, below the axes; the axes keep only the binding-term key
    (leg,) = fig.legends
    assert leg.get_window_extent().y1 <= ax.get_window_extent().y0
    assert ax.get_legend().get_title().get_text() == "binding term"
    (poly,) = [c for c in ax.collections if c.get_label().endswith("uncertainty band")]
    ys = poly.get_paths()[0].vertices[:, 1]
    assert ys.min() >= 4_000  # the rows whose lower edge is zero are not drawn


def test_size_plot_spans_only_the_curves():
    curves = pd.DataFrame({"hardware": ["a"] * 3 + ["b"] * 3, "tps_per_user": [5, 20, 80, 8, 30, 150],
                           "usd_per_mtok_owned": [0.1, 0.2, 0.5, 0.2, 0.3, 1.0],
                           "usd_per_mtok_rental": [1.0] * 6, "units": [1, 2, 3, 1, 2, 4], "unit": "rack"})
    fig = plot_sizing(curves, level=50)
    for ax in fig.axes:
        assert ax.get_xlim() == pytest.approx((5, 150))
