"""Each serving stack's KV pool, as the stack sizes it at its defaults (planner.physics.step
STACK_KV_POOL), by hand for DeepSeek-R1 FP8 at TP4 on a B200 (an 8k-token context)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.physics.step import STACK_KV_POOL, evaluate_configs, resolve_precisions
from planner.specs.registry import load_hardware, load_model


def _memory(stack: str) -> dict[str, float]:
    m = load_model("deepseek-r1")
    hw = load_hardware("hgx-b200").with_stack(stack)
    one = {k: np.array([v]) for k, v in dict(G=4.0, TP_a=4.0, EP=1.0, TP_e=4.0, E_slots=256.0, b=1.0,
                                               S=8192.0).items()}
    out = evaluate_configs(m, hw, resolve_precisions(m, hw, "fp8"), "realistic", categories=False, **one)
    return {k.split(".")[1]: float(np.asarray(v).ravel()[0]) for k, v in out.items()
            if k.startswith("memory")}


def test_each_stacks_kv_pool_by_hand():
    hbm = load_hardware("hgx-b200").hbm_capacity
    got = {s: _memory(s) for s in ("vllm", "trtllm", "sglang")}
    w = got["vllm"]["weights"]
    assert all(g["weights"] == pytest.approx(w) for g in got.values())  # the same weights
    # vLLM: gpu_memory_utilization 0.9 of the whole HBM holds weights and cache
    assert got["vllm"]["free"] == pytest.approx(0.9 * hbm - w, rel=1e-9)
    # TensorRT-LLM: free_gpu_memory_fraction 0.9 of what the weights leave
    assert got["trtllm"]["free"] == pytest.approx(0.9 * (hbm - w), rel=1e-9)
    # SGLang: the HBM less a 10 GiB reserve
    assert got["sglang"]["free"] == pytest.approx(hbm - 10 * 2**30 - w, rel=1e-9)
    # sequences that fit: the pool over one sequence's cache (576 latent elements x 61 layers per
    # token, BF16, over its 8,192 tokens, one copy per attention rank: TP 4 splits none of it)
    seq = got["vllm"]["kv"]
    assert seq == pytest.approx(8192 * 576 * 61 * 2, rel=1e-9)
    for s, g in got.items():
        assert g["b_max"] == pytest.approx(g["free"] / seq, rel=1e-9), s
    # on this layout the stacks' own defaults order the pools: TensorRT-LLM > SGLang > vLLM
    assert got["trtllm"]["b_max"] > got["sglang"]["b_max"] > got["vllm"]["b_max"] >= 6
    assert set(STACK_KV_POOL) == {"vllm", "trtllm", "sglang"}
