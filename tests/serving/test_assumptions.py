"""The assumptions table: one changed assumption per row, sorted by how far it moves the answer."""

from __future__ import annotations

import numpy as np

from planner import Scenario
from planner.serving.assumptions import assumptions
from planner.serving.comparison import compare


def test_assumptions_rows_are_single_changes_sorted_by_effect():
    kw = dict(isl=1024, osl=256, max_gpus=8)
    base = compare(Scenario("llama-3.1-8b", ("hgx-b200", "hgx-h100"), **kw))
    df = assumptions(Scenario("llama-3.1-8b", ("hgx-b200", "hgx-h100"), **kw), threshold=2.0, base=base)
    assert df.assumption.iloc[0] == "as given" and df.change.iloc[0] == 1.0
    assert {"speculation", "precision", "ISL / OSL"} <= set(df.assumption)
    moved = np.abs(np.log(df.change.iloc[1:].fillna(1.0).to_numpy()))
    assert np.all(np.diff(moved) <= 1e-12)
    use = base.ratio[base.ratio.both_useful]
    # the largest ratio is the comparison table's own row (the exact solve at the curve's peak rate)
    top = base.table[base.table.largest]
    assert df.largest_ratio.iloc[0] == (top.ratio.iloc[0] if len(top) else use.ratio.max())
    c = df.crossing_per_gpu.iloc[0]
    assert c is None or (use.tps_per_user.min() <= c[0] <= c[1] <= use.tps_per_user.max())


def test_a_stack_row_for_every_stack_both_do_not_already_use():
    from planner.specs.registry import load_hardware
    kw = dict(isl=1024, osl=256, max_gpus=8)
    ha, hb = load_hardware("hgx-b200@trtllm"), load_hardware("hgx-h100@vllm")   # defaults that differ
    base = compare(Scenario("llama-3.1-8b", (ha, hb), **kw))
    df = assumptions(Scenario("llama-3.1-8b", (ha, hb), **kw), threshold=2.0, base=base)
    rows = {s for a, s in zip(df.assumption, df.setting, strict=True) if a == "serving stack"}
    # neither system's stack is the other's, so every common stack is a change for at least one side
    assert rows == {f"{st} fit on both sides" for st in set(ha.stacks) & set(hb.stacks)}
    assert len(rows) == 3
