"""Physical invariants across the whole pipeline (hypothesis, fixed seed, small budgets).

- no NaN or infinity in any frontier column a user reads;
- frontiers are monotone (tokens/s per GPU never rises with tokens/s per user);
- more of any hardware resource never lowers a frontier;
- bound mode is at or above realistic mode;
- results do not depend on how a spec spells its units ("4800 GB/s" == "4.8 TB/s").
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from planner import Scenario, load_hardware
from planner.serving.frontiers import frontier
from planner.specs.hardware import parse_hardware
from planner.specs.reading import parse_yaml
from planner.specs.registry import bundled_hardware_text

SLOW = settings(max_examples=6, deadline=None, derandomize=True, database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.too_slow])

CASES = st.sampled_from([
    ("deepseek-v2-lite", "hgx-h200", 8),
    ("mixtral-8x7b", "hgx-h100", 8),
    ("deepseek-v2-lite", "gb200-nvl72", 16),
    ("gpt-oss-120b", "hgx-b200", 8),
])
SERVING = st.sampled_from(["decode", "aggregated", "disaggregated"])
READ_COLUMNS = ["tps_per_user", "tps_per_gpu", "tps_per_mw", "usd_per_mtok_rental", "output_tps_per_gpu"]


def _front(model, hw, gpus, serving, mode="realistic"):
    return frontier(Scenario(model, hw, serving=serving, gpus=gpus, isl=1024, osl=512, mode=mode))


def _not_below(better, worse, tol=0.02):
    """Every point of ``worse`` is matched by a point of ``better`` at least as good in both
    coordinates, up to ``tol`` relative: the frontiers are sampled on a batch grid, and where a
    frontier is steep a sample of one may fall between two samples of the other."""
    bx, by = better.tps_per_user.to_numpy(), better.tps_per_gpu.to_numpy()
    for x0, y0 in zip(worse.tps_per_user, worse.tps_per_gpu, strict=True):
        near = bx >= x0 * (1 - tol)
        assert near.any(), (x0, y0)
        assert by[near].max() >= y0 * (1 - tol), (x0, y0, by[near].max())


@SLOW
@given(case=CASES, serving=SERVING)
def test_finite_and_monotone(case, serving):
    model, hw, gpus = case
    f = _front(model, hw, gpus, serving)
    assert len(f) > 0
    assert np.isfinite(f[READ_COLUMNS].to_numpy(float)).all()
    assert (np.diff(f.tps_per_user) > 0).all()
    assert (np.diff(f.tps_per_gpu) <= 0).all()


@SLOW
@given(case=CASES, serving=SERVING)
def test_bound_at_or_above_realistic(case, serving):
    model, hw, gpus = case
    _not_below(_front(model, hw, gpus, serving, "bound"), _front(model, hw, gpus, serving), tol=1e-9)


RESOURCES = {
    "hbm_bandwidth": lambda h, f: h.replace(hbm_bandwidth=h.hbm_bandwidth * f),
    "hbm_capacity": lambda h, f: h.replace(hbm_capacity=h.hbm_capacity * f),
    "su_bandwidth": lambda h, f: h.replace(su_bandwidth=h.su_bandwidth * f),
    "so_bandwidth": lambda h, f: h.replace(so_bandwidth=h.so_bandwidth * f),
    "flops": lambda h, f: h.replace(flops={k: v * f for k, v in h.flops.items()}),
}


@SLOW
@given(case=CASES, resource=st.sampled_from(sorted(RESOURCES)), factor=st.sampled_from([1.25, 2.0]))
def test_more_resource_never_lowers_frontier(case, resource, factor):
    model, hw_name, gpus = case
    hw = load_hardware(hw_name)
    base = _front(model, hw, gpus, "decode")
    more = _front(model, RESOURCES[resource](hw, factor), gpus, "decode")
    assert more.tps_per_user.max() >= base.tps_per_user.max() * (1 - 1e-9)
    assert more.tps_per_gpu.max() >= base.tps_per_gpu.max() * (1 - 1e-9)
    _not_below(more, base)


@pytest.mark.parametrize(("old", "new"), [
    ('"8 TB/s"', '"8000 GB/s"'),
    ('"189471 MiB"', '"185.0302734375 GiB"'),
    ('"900 GB/s"', '"7200 Gb/s"'),
    ('"10 PFLOP/s"', '"10000 TFLOP/s"'),
])
def test_unit_spelling_does_not_matter(old, new):
    text = bundled_hardware_text("gb200-nvl72")
    assert old in text
    respelled = parse_hardware(parse_yaml(text.replace(old, new, 1), "x.yaml"), "x.yaml")
    original = load_hardware("gb200-nvl72")
    for field in ("hbm_bandwidth", "hbm_capacity", "su_bandwidth"):
        assert math.isclose(getattr(respelled, field), getattr(original, field), rel_tol=1e-12)
    assert respelled.flops == pytest.approx(original.flops, rel=1e-12)
    f0 = frontier(Scenario("deepseek-v2-lite", original, serving="decode", gpus=8))
    f1 = frontier(Scenario("deepseek-v2-lite", respelled, serving="decode", gpus=8))
    assert np.allclose(f0.tps_per_gpu, f1.tps_per_gpu, rtol=1e-12)
