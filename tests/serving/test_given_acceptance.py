"""A frontier solved with a given acceptance keeps it (the solver once rebuilt speculation from
the draft count and priced every solved point at the model's default acceptance)."""

import numpy as np

import planner


def test_solved_points_keep_the_given_tokens_per_step():
    spec = {"drafts": 3, "mean_acceptance_length": 2.0}
    pts = planner.frontier_at("deepseek-r1", "hgx-h200", [20.0, 40.0], mtp=spec, overlap=0,
                              gpus=8)
    pts = pts[np.isfinite(pts.tps_per_gpu)]
    assert len(pts) == 2
    assert (pts.tokens_per_step == 2.0).all()
    # each solved point's rate is its own step at 2.0 tokens per step, and meets the target
    np.testing.assert_allclose(pts.tps_per_user, 2.0 / pts.step_s, rtol=1e-9)
    # (a whole batch: at least the target, and above it by less than one sequence's worth)
    assert (pts.tps_per_user >= pts.target_tps_per_user * (1 - 1e-9)).all()
    np.testing.assert_allclose(pts.tps_per_user, pts.target_tps_per_user, rtol=1e-2)
