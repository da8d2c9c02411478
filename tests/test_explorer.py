"""The Jupyter explorer (``planner.explore``) driven without a browser: widget values set, their
callbacks run, and what it draws checked against ``planner.frontier`` called with the same
arguments; its 'as code' text reproduces the view; without ipywidgets it names the extra."""

from __future__ import annotations

import builtins

import numpy as np
import pandas as pd
import pytest

import planner
from planner.explorer import hardware_code, what_if
from planner.plot import label

pytest.importorskip("ipywidgets")

MODEL = "deepseek-v2-lite"  # small: each frontier takes a fraction of a second
NUMERIC = ["tps_per_user", "tps_per_gpu", "decode_tps_per_gpu", "batch", "gpus", "tp_attn", "ep", "mtp"]


@pytest.fixture(scope="module")
def panel() -> planner.Explorer:
    return planner.explore(planner.Scenario(MODEL, ("hgx-h200", "hgx-b200")), search="fast")


def test_default_is_the_rules_search_as_on_the_command_line():
    p = planner.explore(planner.Scenario(MODEL, ("hgx-h200", "hgx-b200")))
    view = p.call()
    assert view.search == "rules" and view.batch_per_octave == planner.explorer.BATCH_PER_OCTAVE
    want = planner.frontier(view.on(p.systems()[0]))
    np.testing.assert_array_equal(p.frontiers[0].tps_per_gpu.to_numpy(), want.tps_per_gpu.to_numpy())
    # where no recipe applies (bound mode) the panel says it takes the limit search
    p.set(mode="bound")
    assert p.call().search == "limit"


def test_drawn_frontier_is_planner_frontier(panel: planner.Explorer):
    # as a user does it: move widgets one at a time, each change running its callback
    c = panel.controls
    c["hbm_bandwidth_a"].value = 1.3
    c["domain_size_a"].value = 16
    c["isl"].value = 2048
    c["speculation"].value = "given"
    c["acceptance"].value = 1.8
    c["stack_b"].value = "sglang"
    view = panel.call()
    changed = {k: v for k, v in view.to_dict().items() if k not in ("model", "systems")
               and v != planner.Scenario().to_dict()[k]}
    assert changed == {"isl": 2048, "search": "limit", "acceptance": 1.8, **planner.explorer.FAST}
    h200, b200 = planner.load_hardware("hgx-h200"), planner.load_hardware("hgx-b200@sglang")
    a = h200.replace(hbm_bandwidth=1.3 * h200.hbm_bandwidth, domain_size=16, gpus_per_system=16)
    expected = [planner.frontier(view.on(a)), planner.frontier(view.on(b200))]
    curves = {ln.get_label(): ln for ln in panel.figure.axes[0].lines}
    for drawn, want in zip(panel.frontiers, expected, strict=True):
        pd.testing.assert_frame_equal(drawn[NUMERIC], want[NUMERIC])
        assert list(drawn.bottleneck) == list(want.bottleneck)
        # the curve on the figure is that frontier's points
        line = curves[label(drawn)]
        np.testing.assert_array_equal(line.get_xdata(), want.tps_per_user.to_numpy())
        np.testing.assert_array_equal(line.get_ydata(), want.tps_per_gpu.to_numpy())
    # the ratio panel: A over B where both reach, as compare() computes it
    ratio = panel.ratio[panel.ratio.both_useful]
    np.testing.assert_allclose(panel.figure.axes[1].lines[0].get_ydata(), ratio.ratio.to_numpy())
    # the headline: compare's number, from the function compare's table uses
    at = c["at"].value
    ys = [float(planner.frontier_at(view.on(hw), [at]).tps_per_gpu.iloc[0]) for hw in panel.systems()]
    assert f"{ys[0] / ys[1]:.2f}x per GPU" in panel.summary


def test_the_headline_is_compares_number_at_the_same_settings():
    p = planner.explore(planner.Scenario(MODEL, ("hgx-h200", "hgx-b200")))
    at = float(p.controls["at"].value)
    c = planner.compare(p.call(), levels=(at,))
    row = c.table[np.isclose(c.table.tps_per_user, at)].iloc[0]
    assert f"{row.ratio:.2f}x per GPU" in p.summary
    assert f"{row.tps_per_gpu_a:,.0f} output tokens/s per GPU" in p.summary


def test_copy_as_code_reproduces_the_view(panel: planner.Explorer):
    panel.set(su_bandwidth_b=2.0, osl=2048, weights="fp8", speculation="off", at=80.0)
    code = panel.code()
    assert "planner.compare(" in code and "levels=(80.0,)" in code and "mtp=0" in code
    assert panel.code_box.value == code
    ns: dict = {}
    exec(code, ns)
    comparison = ns["c"]
    for mine, theirs in zip(panel.frontiers, (comparison.a, comparison.b), strict=True):
        np.testing.assert_array_equal(mine.tps_per_user.to_numpy(), theirs.tps_per_user.to_numpy())
        np.testing.assert_array_equal(mine.tps_per_gpu.to_numpy(), theirs.tps_per_gpu.to_numpy())
    assert ns["a"] == panel.systems()[0] and ns["b"] == panel.systems()[1]


def test_changing_one_system_recomputes_only_that_side(panel: planner.Explorer, monkeypatch):
    panel.set(flops_a=1.5)
    calls = []
    real = planner.explorer.frontier
    monkeypatch.setattr(planner.explorer, "frontier",
                        lambda side, **kw: calls.append(side.system.name) or real(side, **kw))
    panel.set(flops_a=2.0)
    assert calls == ["hgx-h200 what-if"]
    panel.set(flops_a=1.5, at=20.0)  # both seen before: nothing recomputed
    assert calls == ["hgx-h200 what-if"]


def test_hardware_code_round_trips():
    base = planner.load_hardware("gb200-nvl72")
    hw = what_if(base, "", {"hbm_bandwidth": 1.3, "flops": 0.5, "so_bandwidth": 2.0}, 8)
    back = eval(hardware_code(hw, "gb200-nvl72"), {"planner": planner})
    assert back == hw and back.stack == "" and back.domain_size == 8


def test_a_bad_combination_says_so_in_one_line():
    p = planner.explore(planner.Scenario("kimi-k2-thinking", ("hgx-h200",), gpus=1))  # a 1T model on one GPU
    assert p.frontiers == []
    assert "\n" not in p.text.value and "fits on hgx-h200 with 1 GPUs" in p.text.value


def test_a_default_without_a_control_value_is_refused_in_one_line():
    with pytest.raises(planner.SpecError, match="serving: one of disaggregated, aggregated, decode"):
        planner.explore(planner.Scenario(MODEL, ("hgx-h200",), serving="prefill"))


def test_display_carries_a_static_picture(panel: planner.Explorer):
    bundle = panel._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["image/svg+xml"].lstrip().startswith("<?xml") and "<svg" in bundle["image/svg+xml"]


def test_without_ipywidgets_names_the_extra(monkeypatch):
    real = builtins.__import__

    def no_widgets(name, *args, **kwargs):
        if name == "ipywidgets" or name.startswith("ipywidgets."):
            raise ImportError("No module named 'ipywidgets'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_widgets)
    with pytest.raises(ImportError) as e:
        planner.explore(planner.Scenario(MODEL, ("hgx-h200",)))
    msg = str(e.value)
    assert "\n" not in msg and "pip install 'moe-planner[jupyter]'" in msg


def test_layout_fits_three_columns_with_every_label(panel: planner.Explorer):
    # three columns share the row (a third each, allowed to shrink); each control fills its column
    # and keeps a label column wide enough for the longest label, in full
    from planner.explorer import LABEL_WIDTH

    row = panel.widget.children[0]
    assert len(row.children) == 3 and all(col.layout.width == "33%" for col in row.children)
    for name, ctl in panel.controls.items():
        if name.startswith("info_"):
            continue
        assert ctl.layout.width == "100%", name
        if hasattr(ctl.style, "description_width"):
            assert ctl.style.description_width == LABEL_WIDTH, name
    longest = max(len(c.description) for n, c in panel.controls.items() if not n.startswith("info_"))
    assert longest <= 15  # "scale-out BW ×": 8.5em holds 15 characters of the label font
    # choices in drop-downs, shown whole (toggle buttons a third of a page wide cut "realistic")
    import ipywidgets

    assert not any(isinstance(c, ipywidgets.ToggleButtons) for c in panel.controls.values())
    # the figure is 480 px high at its 80 dpi, under controls of at most 12 rows: the view with its
    # summary fits a 900 px screen; the code is folded until asked for
    assert panel.figure.get_figheight() * panel.figure.dpi <= 480
    assert max(len(col.children) for col in row.children) <= 12
    assert panel.code_fold.selected_index is None


def test_a_workload_of_sessions_draws_its_frontier_and_copies_as_code():
    p = planner.explore(planner.Scenario("deepseek-r1", ("hgx-h200",), kv_tiers="hbm", workload="chat"))
    assert p.controls["isl"].disabled and not p.controls["kv_tiers"].disabled
    view = p.call()
    assert view.workload == "chat" and view.kv_tiers == ("hbm",)
    want = planner.workload_frontier(view.on(p.systems()[0]))
    np.testing.assert_array_equal(p.frontiers[0].tps_per_gpu.to_numpy(), want.tps_per_gpu.to_numpy())
    ns: dict = {}
    exec(p.code(), ns)
    np.testing.assert_array_equal(ns["af"].tps_per_gpu.to_numpy(), want.tps_per_gpu.to_numpy())
    p.set(workload="ISL/OSL")
    assert not p.controls["isl"].disabled and p.controls["kv_tiers"].disabled and p.call().workload is None
