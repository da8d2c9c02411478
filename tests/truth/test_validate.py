"""The validation scorecard: published points predicted at their own operating conditions.

The physics invariant checked here: a roofline with every efficiency at 1 and no overheads
(``bound`` mode) is an upper bound, so no measured point may exceed its bound prediction.
"""

from __future__ import annotations

import json
import math

import pytest

from planner import Scenario
from planner.cli import main
from planner.errors import SpecError
from planner.serving.frontiers import frontier, frontier_at
from planner.truth.validate import (
    BOUND_SLACK,
    CLOSED_FORM_TOLERANCE,
    Point,
    format_scorecard,
    implied_batch,
    load_points,
    predict,
    scorecard,
)

pytestmark = pytest.mark.validation


@pytest.fixture(scope="module")
def card():
    return scorecard()


def test_points_load_and_cover_both_kinds():
    pts = load_points()
    ids = [p.id for p in pts]
    assert len(ids) == len(set(ids)) >= 10
    assert sum(p.kind == "closed_form" for p in pts) == 2
    measured = [p for p in pts if p.kind == "measured"]
    assert len(measured) >= 8
    for p in measured:
        assert p.ep * p.tp_moe == p.gpus
        assert p.measured_tps_per_user or p.measured_tps_per_gpu


def test_closed_form_points_reproduce_to_a_tenth_of_a_percent(card):
    assert len(card.closed) == 2
    for c in card.closed:
        for k, rel in c["relative_error"].items():
            assert abs(rel) <= CLOSED_FORM_TOLERANCE, (c["id"], k, c["computed"][k], c["expect"][k])
    ib = next(c for c in card.closed if c["id"].endswith("-ib"))
    assert ib["computed"]["t_comm_us"] == pytest.approx(120.96, rel=1e-9)
    assert ib["computed"]["tpot_ms"] == pytest.approx(14.757, rel=1e-3)


def test_bound_mode_is_never_beaten_by_a_measurement(card):
    """The physics invariant, point by point (the table is printed on failure: pytest -s)."""
    lines = [f"{'point':42s} {'compared':13s} {'measured':>10s} {'bound':>10s} {'meas/bound':>10s}"]
    bad = []
    for r in card.rows:
        lines.append(f"{r.point.id:42s} {r.bound.quantity:13s} {r.measured:10.4g} {r.bound.value:10.4g} "
                     f"{r.bound_ratio:10.3f}" + ("   <-- OVER BOUND" if r.over_bound else ""))
        if r.over_bound:
            bad.append(r.point.id)
    print("\n".join(lines))
    assert not bad, "measurements above the speed of light:\n" + "\n".join(lines)
    assert all(r.bound.feasible for r in card.rows)
    assert all(r.bound_ratio <= 1 + BOUND_SLACK for r in card.rows)


def test_bound_is_above_realistic_at_every_point(card):
    for r in card.rows:
        if r.bound.quantity == r.realistic.quantity:
            assert r.bound.value >= r.realistic.value * (1 - 1e-9), r.point.id


def test_scorecard_summary_is_finite_and_printable(card):
    s = card.summary()
    assert s["measured_points"] == len(card.rows) >= 8
    assert s["bound_violations"] == 0
    assert math.isfinite(s["realistic_median_abs_error"]) and math.isfinite(s["realistic_worst_abs_error"])
    text = format_scorecard(card)
    assert "bound violations: 0" in text and "median" in text
    for r in card.rows:
        assert r.point.id in text
        assert r.verdict in ("ok", "pred high", "pred low")


def test_prediction_bases_follow_the_rules(card):
    basis = {r.point.id: r.realistic.basis for r in card.rows}
    assert basis["sglang-deepseek-decode-72xh100"] == "batch"                  # batch given
    assert basis["trtllm-deepseek-r1-b200-batch1-no-mtp"] == "batch"           # latency point, batch given
    assert basis["trtllm-deepseek-r1-h200-batch1-mtp3"] == "batch"             # concurrency 1 on 8 GPUs
    assert basis["trtllm-deepseek-r1-h200-max-throughput"].startswith("rate")  # y at the measured x
    assert basis["sglang-deepseek-prefill-32xh100"] == "prefill"


def test_implied_batch_is_littles_law():
    p = next(p for p in load_points() if p.id == "trtllm-deepseek-r1-h200-batch1-mtp3")
    assert implied_batch(p) == 1.0
    q = next(p for p in load_points() if p.id == "trtllm-deepseek-r1-h200-max-throughput")
    assert implied_batch(q) is None
    assert implied_batch(q, always=True) == pytest.approx(1436 / 11.35 * 8)


def test_rate_basis_agrees_with_frontier_at():
    """A decode point predicted at its measured per-user rate: the same number as frontier_at
    with the point's fixed layout (MTP unknown -> off or 1-3 drafts, like mtp='auto')."""
    p = next(p for p in load_points() if p.id == "deepseek-production-decode-h800")
    for mode in ("bound", "realistic"):
        ours = predict(p, mode)
        at = Scenario(p.model, p.hardware, serving="decode", context=p.context, gpus=p.gpus,
                      tp_attn=p.tp_attn, ep=p.ep, tp_moe=p.tp_moe, weights=p.weights, kv=p.kv,
                      overlap=p.overlap, mtp="auto", mode=mode)
        ref = frontier_at(at, [p.measured_tps_per_user]).iloc[0]
        assert ours.value == pytest.approx(float(ref.tps_per_gpu), rel=2e-3), mode


def test_aggregated_rate_basis_is_exact_and_above_the_grid():
    """Aggregated points are solved exactly (brentq through the prefill stretch); frontier_at keeps
    the best grid point at or above the rate for aggregated serving, a lower value within a step."""
    import dataclasses

    p = next(p for p in load_points() if p.id == "trtllm-deepseek-r1-h200-max-throughput")
    q = dataclasses.replace(p, measured_tps_per_user=40.0, measured_tps_per_gpu=2000.0)
    ours = predict(q, "bound")
    assert ours.basis == "rate" and ours.tps_per_user == pytest.approx(40.0, rel=1e-6)
    at = Scenario(p.model, p.hardware, serving="aggregated", isl=p.isl, osl=p.osl, gpus=p.gpus,
                  tp_attn=p.tp_attn, ep=p.ep, tp_moe=p.tp_moe, weights=p.weights, kv=p.kv, overlap=p.overlap,
                  mtp=None, mode="bound")
    grid = frontier_at(at, [40.0]).iloc[0]
    assert float(grid.tps_per_user) >= 40.0
    assert float(grid.tps_per_gpu) <= ours.value * (1 + 1e-6) <= float(grid.tps_per_gpu) * 1.2


def test_prefill_basis_agrees_with_the_prefill_frontier():
    p = next(p for p in load_points() if p.serving == "prefill")
    ours = predict(p, "bound")
    f = frontier(Scenario(p.model, p.hardware, serving="prefill", isl=p.isl, gpus=p.gpus, tp_attn=p.tp_attn,
                          ep=p.ep, tp_moe=p.tp_moe, weights=p.weights, kv=p.kv, overlap=p.overlap,
                          mode="bound"))
    assert ours.value == pytest.approx(float(f.tps_per_gpu.max()), rel=0.02)


def test_cli_validate_prints_the_scorecard(capsys):
    rc = main(["validate"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "bound violations: 0" in out and "closed-form points: all reproduced" in out


def test_cli_validate_json(capsys):
    rc = main(["validate", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert doc["summary"]["bound_violations"] == 0
    assert {p["id"] for p in doc["points"]} >= {"sglang-deepseek-decode-72xh100"}


_POINT = """\
points:
  - id: fake-over-bound
    kind: measured
    source: "test"
    model: deepseek-v3
    hardware: hgx-h100
    serving: decode
    gpus: 8
    precision: {{weights: fp8, kv: bf16}}
    context: 2000
    batch_per_gpu: 64
    mtp: false
    layout: {{tp_attn: 1, ep: 8, tp_moe: 1}}
    overlap: false
    measured: {{tps_per_user: {u}, tps_per_gpu: {g}}}
    metric: output_per_gpu
{extra}"""


def test_a_measurement_above_the_bound_exits_1(tmp_path, capsys):
    f = tmp_path / "p.yaml"
    f.write_text(_POINT.format(u=5000, g=320000, extra=""))
    rc = main(["validate", "--points", str(f)])
    out = capsys.readouterr().out
    assert rc == 1
    assert "over bound" in out and "bound violations: 1" in out


def test_unknown_field_is_a_one_line_error(tmp_path, capsys):
    f = tmp_path / "p.yaml"
    f.write_text(_POINT.format(u=10, g=640, extra="    colour: blue\n"))
    rc = main(["validate", "--points", str(f)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and "colour" in err
    with pytest.raises(SpecError):
        load_points(f)


def test_point_dataclass_context():
    p = Point(id="x", kind="measured", source="s", model="m", hardware="h", isl=1024, osl=2048)
    assert p.decode_context == 2048
