"""A frontier solved with a given acceptance keeps it (the solver once rebuilt speculation from
the draft count and priced every solved point at the model's default acceptance)."""

import numpy as np
import pytest

import planner


def test_solved_points_keep_the_given_tokens_per_step():
    spec = {"drafts": 3, "mean_acceptance_length": 2.0}
    pts = planner.frontier_at(planner.Scenario("deepseek-r1", "hgx-h200", mtp=spec, overlap=0, gpus=8),
                              [20.0, 40.0])
    pts = pts[np.isfinite(pts.tps_per_gpu)]
    assert len(pts) == 2
    assert (pts.tokens_per_step == 2.0).all()
    # each solved point's rate is its own step at 2.0 tokens per step, and meets the target
    np.testing.assert_allclose(pts.tps_per_user, 2.0 / pts.step_s, rtol=1e-9)
    # (a whole batch: at least the target, and above it by less than one sequence's worth: one more
    # sequence on every attention rank, the same layout and context, misses it; the overshoot itself
    # can exceed 1 / batch where one more sequence crosses a GEMM tile)
    assert (pts.tps_per_user >= pts.target_tps_per_user * (1 - 1e-9)).all()
    for p in pts.itertuples():
        at = planner.Scenario("deepseek-r1", "hgx-h200", gpus=8, tp_attn=p.tp_attn, ep=p.ep, mtp=spec)
        more = planner.decode_step(at, batch=p.batch + p.dp_attn, context=1024 + 1024 / 2)
        same = planner.decode_step(at, batch=p.batch, context=1536)
        assert p.step_s == pytest.approx(same.step_time, rel=1e-9)
        assert 2.0 / more.step_time < p.target_tps_per_user
