"""TensorRT-LLM's attention-DP balance puts the ranks' chunked prefill in one step; the CDNA 3
systems carry no NVIDIA kernel law and run SGLang by default."""

from __future__ import annotations

import numpy as np
import pytest

from planner.physics import compiled
from planner.serving.prefill import CO_SCHEDULED_STACKS, aggregated_prefill_terms
from planner.specs.registry import bundled_calibration_path, load_hardware, load_model


def test_trtllm_co_schedules_the_ranks_prefill_and_sglang_does_not():
    m = load_model("deepseek-r1")
    trt = aggregated_prefill_terms(m, "realistic", 8.0, 1.0, 8192.0, stack="trtllm")
    sgl = aggregated_prefill_terms(m, "realistic", 8.0, 1.0, 8192.0, stack="sglang")
    assert "trtllm" in CO_SCHEDULED_STACKS and float(trt["D_a"]) == 1.0 and float(sgl["D_a"]) == 8.0
    # by hand (serving_eq.t_step_aggregated): a 57 ms decode step, 31.4 sequences a rank, 1.75
    # tokens a step, 8k/1k: w = 8 x 31.4 x 1.75 = 439.6 prompt tokens a step; with D_a = 1 a step
    # waits for no other rank's chunk: t = 57 ms + w / X_p at X_p = 6,149 tokens/s, phi_l = 0.33
    args = dict(t_step=0.057, I=8192.0, O=1024.0, b=31.4, A=1.75, TP_a=1.0, X_p=6149.0, C_p=8192.0,
                phi_l=0.33)
    w = 8 * 31.4 * 1.75
    t1 = float(compiled.evaluate_named("t_step_aggregated", **args, D_a=1.0))
    assert t1 == pytest.approx(0.057 + w / 6149.0, rel=1e-9)
    # with 8 ranks stepping apart, a share 1 - (1 - w / C_p)^8 of the steps wait for a whole chunk's
    # rank-local part
    share = 1 - (1 - w / 8192.0) ** 8
    t8 = float(compiled.evaluate_named("t_step_aggregated", **args, D_a=8.0))
    assert t8 == pytest.approx(0.057 + (0.33 * max(w, share * 8192.0) + 0.67 * w) / 6149.0, rel=1e-9)


@pytest.mark.parametrize("name", ["mi300x", "mi325x"])
def test_cdna3_runs_sglang_on_its_own_fit_without_nvidia_laws(name):
    hw = load_hardware(name)
    assert hw.stack == "sglang"
    for eff in hw.stacks.values():
        assert eff.gemm == () and eff.moe == () and eff.attn == ()
    sgl = hw.stacks["sglang"]
    assert (sgl.kernel_overhead, sgl.hbm, sgl.compute) == pytest.approx((14.67e-6, 0.7894, 0.1161))
    assert "derive_rocm_fit.py" in hw.sources["stacks.sglang.compute"]
    assert "kept_by:" in bundled_calibration_path(name).read_text("utf-8")
    assert np.isfinite(sgl.kernel_overhead)
