"""The step model for one configuration: a decode step worked by hand, the dense limit of an
MoE, infeasible inputs, prefill, and the grid interface the frontier search uses."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner import Scenario
from planner.errors import SpecError
from planner.physics.step import (
    CATEGORIES,
    REASONS,
    StepResult,
    decode_step,
    default_slots,
    evaluate_configs,
    kernel_counts,
    layout_problems,
    prefill,
    resolve_precisions,
)
from planner.specs.registry import load_hardware, load_model


def close(a: float, b: float, rel: float = 1e-6) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=0.0)


# ---- Kimi K2 Thinking, one decode step on 8 x H200, bound mode, worked by hand -------------------
# Layout: attention TP8 (one DP rank holding all 8 sequences), experts EP8 (48 per GPU), batch 8,
# mean context 4096.  H200: 989 TFLOP/s BF16, 4.8 TB/s HBM, NVLink 450 GB/s per direction.
# Kimi K2 Thinking: d 7168, 61 layers (1 dense), 64 heads, MLA r_q 1536 / r_kv 512 / rope 64 /
# nope 128 / v 128, 384 experts top-8 + 1 shared of f_e 2048, dense f_d 18432, vocab 163840;
# routed experts INT4 (W4A16, 4.5 bits = 0.5625 B), the rest BF16; Hopper multiplies W4A16 in BF16.
B_HBM, P_BF16, B_NVL = 4.8e12, 989e12, 450e9
W_ATTN = (7168 * 1536 + 1536            # q_a + its norm
          + 1536 * 64 * (128 + 64)      # q_b
          + 7168 * (512 + 64) + 512     # kv_a (+ rope key) + its norm
          + 512 * 64 * (128 + 128)      # kv_b (W_UK, W_UV)
          + 64 * 128 * 7168)            # o
assert W_ATTN == 101_124_096
# the router (7168 x 384 = 2,752,512 weights in each of the 60 MoE layers) is read with the
# projections; the model spreads it over the 61 layers: 101,124,096 + 2,752,512 x 60/61
W_PROJ = W_ATTN + 7168 * 384 * 60 / 61
# every TP rank holds q_a (7168 x 1536 + norm 1536), kv_a (7168 x 576 + norm 512) and the router
# whole (as vLLM, SGLang and TensorRT-LLM do): 15,140,864 + 2,707,389 = 17,848,253 weights;
# the other 85,983,232 split 8 ways: 28,596,157 weights per rank
W_REP = 7168 * 1536 + 1536 + 7168 * 576 + 512 + 7168 * 384 * 60 / 61
W_RANK = W_REP + (W_PROJ - W_REP) / 8
EXPERT = 3 * 7168 * 2048                # 44,040,192 weights
HAND = {
    # projections + router per rank: 28,596,157 x 2 B = 57,192,314 B at 4.8 TB/s = 11.91507 us
    # (FLOPs 2 x 8 x 28,596,157 = 458 MFLOP / 989e12 = 0.46 us: memory-bound)
    "attn_proj": W_RANK * 2 / B_HBM,
    # latent KV, whole on every TP rank: 8 x 4096 x 576 x 2 B = 37,748,736 B -> 7.86432 us
    # (FLOPs 2 x 8 x 64/8 heads x 4096 x (2 x 512 + 64) = 570 MFLOP -> 0.58 us)
    "attn_core": 8 * 4096 * 576 * 2 / B_HBM,
    # 8 tokens touch 48 x (1 - (376/384)^8) = 7.44035 of the 48 local experts:
    # 7.44035 x 44,040,192 x 0.5625 B = 184,316,867 B -> 38.3994 us (FLOPs 0.7 GFLOP -> 0.71 us)
    "experts": 48 * (1 - (376 / 384) ** 8) * EXPERT * 0.5625 / B_HBM,
    # shared expert split by attention TP: 44,040,192 x 2 / 8 = 11,010,048 B -> 2.29376 us
    "shared_experts": EXPERT * 2 / 8 / B_HBM,
    # first layer's dense FFN: 3 x 7168 x 18432 x 2 / 8 = 99,090,432 B -> 20.64384 us
    "dense_ffn": 3 * 7168 * 18432 * 2 / 8 / B_HBM,
    # LM head: 163840 x 7168 x 2 / 8 = 293,601,280 B -> 61.16693 us
    "lm_head": 163840 * 7168 * 2 / 8 / B_HBM,
    # each GPU sends its 8/8 = 1 token to the other ranks its 8 experts hit:
    # (8 - 1) x (1 - (7/8)^8) = 4.594738 ranks x 7168 x 2 B (BF16: W4A16 computes in BF16)
    # = 65,870 B at 450 GB/s = 0.146378 us; combine the same (BF16)
    "dispatch": 7 * (1 - (7 / 8) ** 8) * 7168 * 2 / B_NVL,
    "combine": 7 * (1 - (7 / 8) ** 8) * 7168 * 2 / B_NVL,
    # all-reduce of 8 x 7168 x 2 = 114,688 B over 8 GPUs of an NVSwitch domain, the switch
    # reducing (each GPU moves its bytes once, less than a ring's 2 x 7/8): 0.254862 us
    "allreduce_attn": 8 * 7168 * 2 / B_NVL,
    "allreduce_moe": 0.0,  # experts are not tensor-parallel
    "draft": 0.0,
    "host": 0.0,  # bound mode: no host time
}
# routed and shared experts on two streams (bound mode): both stream weights, so together they take
# the HBM time of their bytes together, 38.3994 + 2.29376 = 40.6932 us (no less than either alone)
HAND["experts_together"] = HAND["experts"] + HAND["shared_experts"]
# Kimi K2 has no sparse-attention indexer and no linear mixers: those parts of attn_core are 0
HAND["attn_indexer"] = HAND["attn_linear"] = 0.0
HAND["layer_moe"] = (HAND["attn_proj"] + HAND["attn_core"] + HAND["experts_together"]
                     + HAND["dispatch"] + HAND["combine"] + HAND["allreduce_attn"])        # 54.3720 us
HAND["layer_dense"] = HAND["attn_proj"] + HAND["attn_core"] + HAND["dense_ffn"] + 2 * HAND["allreduce_attn"]
HAND["step"] = HAND["layer_dense"] + 60 * HAND["layer_moe"] + HAND["lm_head"]              # 3.7633 ms


@pytest.fixture(scope="module")
def kimi_h200() -> StepResult:
    return decode_step(Scenario("kimi-k2-thinking", "hgx-h200", gpus=8, tp_attn=8, ep=8, mode="bound"),
                       batch=8, context=4096)


def test_kimi_h200_decode_by_hand(kimi_h200):
    r = kimi_h200
    assert set(HAND) == set(r.terms)
    for name, want in HAND.items():
        got = r.terms[name]
        assert (got == want == 0.0) or close(got, want), f"{name}: {got} vs hand {want}"
    assert close(r.step_time, HAND["step"], rel=1e-9)
    assert 3.762e-3 < r.step_time < 3.765e-3
    # 8 sequences on 8 GPUs, one token each per step: tok/s per user = per GPU = 1 / step
    assert close(r.tps_per_user, 1 / HAND["step"])
    assert close(r.tps_per_gpu, 8 / HAND["step"] / 8)
    assert r.feasible and r.bottleneck == "hbm_weights"
    assert r.config["dp_attn"] == 1 and r.config["expert_slots"] == 384


def test_kimi_h200_memory_by_hand(kimi_h200):
    m = kimi_h200.memory
    # KV: 8 x 4096 tokens x 61 layers x 576 x 2 B = 2,302,672,896 B per GPU (MLA, not split by TP)
    assert m["kv"] == 8 * 4096 * 61 * 576 * 2
    # weights per GPU: attention + router 61 x 28,596,157 x 2 + dense FFN 3 x 7168 x 18432 x 2 / 8
    # + shared 60 x 44,040,192 x 2 / 8 + routed 60 x 48 x 44,040,192 x 0.5625
    # + embedding and head 2 x 163840 x 7168 x 2 / 8 = 76,180,738,048 B
    w = (61 * W_RANK * 2 + 3 * 7168 * 18432 * 2 / 8 + 60 * EXPERT * 2 / 8 + 60 * 48 * EXPERT * 0.5625
         + 2 * 163840 * 7168 * 2 / 8)
    assert close(m["weights"], w, rel=1e-12)
    # bound mode reserves nothing; the H200 reports 143771 MiB
    assert close(m["hbm_free_for_kv"], 143771 * 2**20 - w, rel=1e-12)


def test_categories_and_bottleneck(kimi_h200):
    c = kimi_h200.categories
    assert tuple(c) == CATEGORIES
    # weight reads: 61 attn_proj + 60 experts + 60 shared + 1 dense + head, all memory-bound
    w = 61 * HAND["attn_proj"] + 60 * (HAND["experts"] + HAND["shared_experts"]) + HAND["dense_ffn"] \
        + HAND["lm_head"]
    assert close(c["hbm_weights"], w)
    assert close(c["kv_read"], 61 * HAND["attn_core"])
    assert c["compute"] == 0.0 and c["scale_out"] == 0.0 and c["latency"] == 0.0
    assert close(c["scale_up"], 60 * (HAND["dispatch"] + HAND["combine"] + HAND["allreduce_attn"])
                 + 2 * HAND["allreduce_attn"])


def test_realistic_is_slower_and_counts_latency():
    kw, at = dict(gpus=8, tp_attn=8, ep=8), dict(batch=8, context=4096)
    b = decode_step(Scenario("kimi-k2-thinking", "hgx-h200", mode="bound", **kw), **at)
    r = decode_step(Scenario("kimi-k2-thinking", "hgx-h200", mode="realistic", **kw), **at)
    assert r.step_time > b.step_time
    # kernels (MLA): 60 MoE layers x (10 projections + 2 core + 8 routed + 3 shared) + 1 dense layer
    # x (10 + 2 + 4) + head 4 = 1400 launches of tau_k, plus t_fixed
    hw = load_hardware("hgx-h200")
    assert r.categories["latency"] >= 1400 * hw.efficiency.kernel_overhead + hw.efficiency.step_overhead


def test_host_time_per_sequence_binds_only_where_it_exceeds_the_gpus_step():
    # t_step = max(GPU step, tau_q b): Llama-3.1-8B on 8 H200 at TP 8, 450 sequences.  With
    # tau_q = 60 us the host needs 450 x 60 us = 27 ms, more than the GPU's step, which it then is;
    # at 50 sequences it needs 3 ms, less than the GPU's, which stands.  Bound mode has no host.
    import dataclasses

    hw0 = load_hardware("hgx-h200@sglang")
    hw0 = dataclasses.replace(hw0, efficiency=dataclasses.replace(hw0.efficiency, host_per_sequence=0.0))
    hw = dataclasses.replace(hw0, efficiency=dataclasses.replace(hw0.efficiency, host_per_sequence=60e-6))
    kw = dict(gpus=8, tp_attn=8)
    gpu = decode_step(Scenario("llama-3.1-8b", hw0, mode="realistic", **kw), batch=450, context=1500)
    assert gpu.step_time < 0.027
    host = decode_step(Scenario("llama-3.1-8b", hw, mode="realistic", **kw), batch=450, context=1500)
    assert host.step_time == pytest.approx(450 * 60e-6, rel=1e-9)
    assert host.bottleneck == "latency" and host.categories["latency"] == pytest.approx(0.027, rel=1e-9)
    assert host.terms["host"] == pytest.approx(0.027, rel=1e-9) and gpu.terms["host"] == 0.0
    small0 = decode_step(Scenario("llama-3.1-8b", hw0, mode="realistic", **kw), batch=50, context=1500)
    small = decode_step(Scenario("llama-3.1-8b", hw, mode="realistic", **kw), batch=50, context=1500)
    assert small0.step_time > 50 * 60e-6 and small.step_time == pytest.approx(small0.step_time, rel=1e-12)
    bound0 = decode_step(Scenario("llama-3.1-8b", hw0, mode="bound", **kw), batch=450, context=1500)
    bound = decode_step(Scenario("llama-3.1-8b", hw, mode="bound", **kw), batch=450, context=1500)
    assert bound.step_time == bound0.step_time


# ---- an MoE with one expert, top-1, is a dense model -----------------------------------------------
@pytest.mark.parametrize("mode", ["bound", "realistic"])
@pytest.mark.parametrize("layout", [dict(gpus=1), dict(gpus=8, tp_attn=8, ep=1, tp_moe=8)])
def test_one_expert_top1_equals_dense(mode, layout):
    base = load_model("kimi-k2-thinking")
    f = 18432
    prec = dict(base.precision, routed_experts="bf16")
    moe = base.replace(name="moe-1", E=1, k=1, E_s=0, f_e=f, n_Ld=0, precision=prec)
    dense = base.replace(name="dense", E=1, k=1, E_s=0, f_e=f, n_Ld=base.n_L, f_d=f, precision=prec)
    kw, at = dict(mode=mode, **layout), dict(batch=layout["gpus"] * 4.0, context=2048)
    # realistic mode with the roofline for every GEMM: the dense FFN's GEMMs follow the GEMM law
    # fitted to measured dense GEMMs where the stack has one, the routed experts' the grouped-MoE
    # law's fraction and activation pass (the other stacks' laws, which stand in for a stack's
    # missing one, left out too)
    hw = load_hardware("hgx-h200")
    hw = hw.replace(efficiency={"gemm": (), "moe": ()}, stacks={})
    a = decode_step(Scenario(moe, hw, **kw), **at)
    d = decode_step(Scenario(dense, hw, **kw), **at)
    # the same work, except that the MoE block launches its router, top-k, permute and unpermute
    # kernels (8) where the dense FFN has 4: 4 tau_k per layer in realistic mode, 0 in bound mode
    tau = hw.efficiency.kernel_overhead if mode == "realistic" else 0.0
    assert close(a.terms["layer_moe"], d.terms["layer_dense"] + 4 * tau, rel=1e-12)
    assert close(a.step_time, d.step_time + base.n_L * 4 * tau, rel=1e-12)
    assert close(a.memory["weights"], d.memory["weights"], rel=1e-12)
    assert close(a.tps_per_gpu * a.step_time, d.tps_per_gpu * d.step_time, rel=1e-12)


# ---- infeasible inputs ----------------------------------------------------------------------------
@pytest.mark.parametrize(("kw", "code"), [
    (dict(gpus=8, tp_attn=3), 1),                    # 8 GPUs do not split into TP3 ranks
    (dict(gpus=6, tp_attn=6, ep=6), 2),              # 64 heads do not split 6 ways
    (dict(gpus=8, ep=8, expert_slots=390), 4),       # 390 slots over EP8
    (dict(gpus=8, ep=8, expert_slots=800), 5),       # more than 2E slots
])
def test_infeasible_layouts(kw, code):
    kw = dict(kw)
    slots = kw.pop("expert_slots", None)
    r = decode_step(Scenario("kimi-k2-thinking", "hgx-h200", **kw), batch=8, context=1024, expert_slots=slots)
    assert not r.feasible
    assert r.reason == REASONS[code]


def test_batch_that_does_not_fit():
    r = decode_step(Scenario("kimi-k2-thinking", "hgx-h200", gpus=8), batch=4000, context=100_000)
    assert not r.feasible and r.reason == REASONS[9]
    assert r.bottleneck == "memory_capacity"
    assert r.memory["max_batch"] < 4000
    # the largest batch that fits does fit
    ok = decode_step(Scenario("kimi-k2-thinking", "hgx-h200", gpus=8),
                     batch=math.floor(r.memory["max_batch"]), context=100_000)
    assert ok.feasible


def test_weights_that_do_not_fit():
    r = decode_step(Scenario("kimi-k2-thinking", "hgx-h200", gpus=1), batch=1, context=1024)
    assert not r.feasible and r.reason == REASONS[8]


def test_context_beyond_the_model():
    # refused as the command line refuses it; the grid still marks such a configuration (reason 10)
    with pytest.raises(SpecError, match="context window of kimi-k2-thinking"):
        decode_step(Scenario("kimi-k2-thinking", "gb200-nvl72", gpus=72), batch=72, context=300_000)
    assert REASONS[10] == "context exceeds the model's maximum"


def test_bad_arguments_raise_spec_error():
    with pytest.raises(SpecError):
        decode_step(Scenario("kimi-k2-thinking", "hgx-h200", gpus=0), batch=1, context=1)
    with pytest.raises(SpecError):
        decode_step(Scenario("kimi-k2-thinking", "hgx-h200", gpus=8), batch=-1, context=1)
    with pytest.raises(SpecError):
        decode_step(Scenario("kimi-k2-thinking", "hgx-h200", gpus=8), batch=1, context=float("nan"))
    with pytest.raises(SpecError):
        decode_step(Scenario("kimi-k2-thinking", "hgx-h200", gpus=8, mode="fast"), batch=1, context=1)


def test_layout_problems_vectorised():
    m, h = load_model("kimi-k2-thinking"), load_hardware("hgx-h200")
    G = np.array([8, 8, 8, 8, 16])
    TPa = np.array([1, 3, 1, 8, 1])
    EP = np.array([8, 8, 8, 8, 16])
    slots = np.array([384, 384, 390, 384, 384])
    codes = layout_problems(m, h, G, TPa, EP, G // EP, slots)
    assert codes.tolist() == [0, 1, 4, 0, 0]


def test_default_slots():
    m = load_model("kimi-k2-thinking")
    # 384 experts: EP 7 needs ceil(384/7) = 55 per GPU -> 385 slots; EP 8 -> 384
    assert default_slots(m, 7) == 385 and default_slots(m, 8) == 384


# ---- prefill and MTP -----------------------------------------------------------------------------
def test_prefill_is_compute_bound_for_long_prompts():
    r = prefill(Scenario("kimi-k2-thinking", "gb200-nvl72", gpus=8, mode="bound"), prompt=16384, batch=4)
    assert r.feasible and r.phase == "prefill"
    assert r.bottleneck == "compute"
    # 4 x 16384 prompt tokens per pass over 8 GPUs
    assert close(r.tps_per_gpu, 4 * 16384 / r.step_time / 8)


def test_mtp_bound_mode_emits_drafts_plus_one():
    kw, at = dict(gpus=72, mode="bound"), dict(batch=72 * 16, context=4096)
    plain = decode_step(Scenario("deepseek-v3", "gb200-nvl72", **kw), **at)
    spec = decode_step(Scenario("deepseek-v3", "gb200-nvl72", mtp=2, **kw), **at)
    assert spec.tokens_per_step == 3.0
    assert spec.terms["draft"] > 0 and plain.terms["draft"] == 0
    assert close(spec.tps_per_user, 3 / spec.step_time)
    assert spec.tpot < plain.tpot  # verifying 3 tokens costs less than 3 steps here


# ---- the grid interface --------------------------------------------------------------------------
def test_evaluate_configs_grid_matches_single_points():
    m, h = load_model("kimi-k2-thinking"), load_hardware("gb200-nvl72")
    prec = resolve_precisions(m, h)
    G = np.array([8.0, 16.0, 72.0, 72.0])
    TPa = np.array([1.0, 2.0, 1.0, 8.0])
    EP = G.copy()
    slots = default_slots(m, EP).astype(float)
    b = np.array([4.0, 30.0, 2.5, 64.0])
    S = np.array([1024.0, 8192.0, 65536.0, 2048.0])
    out = evaluate_configs(m, h, prec, "realistic", G=G, TP_a=TPa, EP=EP, TP_e=1.0, E_slots=slots, b=b,
                           S=S, overlap=1)
    fast = evaluate_configs(m, h, prec, "realistic", G=G, TP_a=TPa, EP=EP, TP_e=1.0, E_slots=slots, b=b,
                            S=S, overlap=1, categories=False)
    assert "bottleneck" not in fast and np.array_equal(fast["step"], out["step"])
    for j in range(len(G)):
        r = decode_step(Scenario(m, h, gpus=int(G[j]), tp_attn=int(TPa[j]), overlap=True),
                        batch=b[j] * G[j] / TPa[j], context=S[j])
        assert close(r.step_time, float(out["step"][j]), rel=1e-12)
        assert close(r.tps_per_gpu, float(out["tps_gpu"][j]), rel=1e-12)
        assert r.feasible == bool(out["feasible"][j])
        assert r.bottleneck in (CATEGORIES[int(out["bottleneck"][j])], "memory_capacity")
    for c in CATEGORIES:
        assert out["cat." + c].shape == (4,) and np.all(out["cat." + c] >= 0)


def test_to_dict_has_the_json_fields(kimi_h200):
    d = kimi_h200.to_dict()
    for key in ("tpot_s", "tps_per_user", "tps_per_gpu", "bottleneck", "feasible"):
        assert key in d
    assert all(isinstance(v, float) for v in d["terms_s"].values())


def test_tp_across_two_hgx_nodes_is_priced_over_the_nic():
    # TP16 over two 8-GPU HGX nodes (a layout SGLang runs for DeepSeek-R1 on B200) evaluates,
    # and its attention all-reduce pays the scale-out hop that TP8 inside one node does not
    kw, at = dict(mode="bound"), dict(batch=8, context=1024)
    tp16 = decode_step(Scenario("deepseek-r1", "hgx-b200", gpus=16, tp_attn=16, ep=4, tp_moe=4, **kw), **at)
    assert tp16.feasible
    # the same tokens per GPU inside one node: the all-reduce differs by the scale-out part
    tp8 = decode_step(Scenario("deepseek-r1", "hgx-b200", gpus=8, tp_attn=8, ep=8, **kw), **at)
    assert tp16.terms["allreduce_attn"] > tp8.terms["allreduce_attn"]
    assert tp16.categories["scale_out"] > 0


def test_overlap_hides_only_its_share_of_the_shorter_side():
    """Two-micro-batch overlap: a MoE layer costs 2 [max(c, m) + (1 - eta_o) min(c, m)] with c and m
    a half batch's compute and communication; eta_o = 1 is the ideal 2 max(c, m) (bound mode), and
    realistic mode's default eta_o lies between nothing hidden and that."""
    from planner.specs.registry import load_hardware

    hw = load_hardware("hgx-h100")
    kw, at = dict(gpus=16, overlap=True), dict(batch=16 * 64, context=2000)
    half = decode_step(Scenario("deepseek-v3", hw, gpus=16), batch=16 * 32, context=2000)
    c = sum(half.terms[t] for t in ("attn_proj", "attn_core", "experts_together"))
    m = sum(half.terms[t] for t in ("dispatch", "combine", "allreduce_attn", "allreduce_moe"))
    for eta in (0.0, 0.4, 1.0):
        r = decode_step(Scenario("deepseek-v3", hw.replace(efficiency={"overlap": eta}), **kw), **at)
        assert r.terms["layer_moe"] == pytest.approx(2 * (max(c, m) + (1 - eta) * min(c, m)), rel=1e-9)
    assert 0.0 < hw.efficiency.overlap <= 1.0


def test_default_overlap_efficiency_is_its_derivation():
    """The default eta_o is what scripts/derive_overlap_efficiency.py derives from the published
    72xH100 two-micro-batch decode with today's H100 SGLang fit: a refit that moves the derivation
    without the constant following fails here."""
    import importlib.util
    from pathlib import Path

    from planner.specs.hardware import OVERLAP_EFFICIENCY

    path = Path(__file__).resolve().parents[2] / "scripts" / "derive_overlap_efficiency.py"
    spec = importlib.util.spec_from_file_location("derive_overlap_efficiency", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    eta, t0, t1, _ = script.derive()
    assert script.TPOT_MEASURED < t0  # overlap is needed to reach the measured decode
    assert eta == pytest.approx(min(max((t0 - script.TPOT_MEASURED) / (t0 - t1), 0.0), 1.0), abs=1e-12)
    assert OVERLAP_EFFICIENCY == pytest.approx(eta, abs=5e-4)


# ---- the dense GEMMs at the GEMM law's throughput (realistic mode) -----------------------------------
def test_lm_head_at_the_gemm_law_by_hand():
    # Llama-3.1-8B on one H200 (TensorRT-LLM fit), 100 sequences, BF16 head: V = 128256, d = 4096.
    # The law pads 100 rows to 2 tiles of 64 (128 rows), counts 2 x ceil(128256 / 128) = 2004
    # tiles in 16 waves of 132 SMs (Q = 16 x 132 / 2004, of which the law pays its share w_g) and
    # takes the bf16 GEMM's fractions; 4 kernels at tau_k.  Bound mode keeps the plain roofline.
    from planner.physics.step import gemm_law_values, resolve_precisions

    hw = load_hardware("hgx-h200@trtllm")
    law = hw.efficiency.gemm_law("bf16")
    m = load_model("llama-3.1-8b")
    r = decode_step(Scenario(m, hw, gpus=1, mode="realistic"), batch=100, context=1024)
    F = 2 * 100 * m.V * m.d
    M = m.V * m.d * 2.0
    P, B = hw.flops["bf16"], hw.hbm_bandwidth
    q = 16 * 132 / 2004
    compute = F * 128 / 100 * (1 + law.wave * (q - 1)) / (law.compute * P)
    want = max(compute, M / (law.hbm * B)) + 4 * hw.efficiency.kernel_overhead
    assert close(r.terms["lm_head"], want, rel=1e-9)
    # 1000 sequences: compute binds; 16 x 1002 = 16032 tiles take 122 waves of 132 SMs
    r = decode_step(Scenario(m, hw, gpus=1, mode="realistic"), batch=1000, context=1024)
    F_1000 = 2 * 1000 * m.V * m.d
    q = 122 * 132 / 16032
    want = (F_1000 * 1024 / 1000 * (1 + law.wave * (q - 1)) / (law.compute * P)
            + 4 * hw.efficiency.kernel_overhead)
    assert want > M / (law.hbm * B) and close(r.terms["lm_head"], want, rel=1e-9)
    prec = resolve_precisions(m, hw)
    assert gemm_law_values(hw, prec, "realistic")["x_g"] == 1.0
    assert gemm_law_values(hw, prec, "bound")["x_g"] == 0.0
    b = decode_step(Scenario(m, hw, gpus=1, mode="bound"), batch=100, context=1024)
    assert close(b.terms["lm_head"], max(F / P, M / B), rel=1e-9)


def test_a_gpu_without_measured_gemms_borrows_its_familys():
    # H20 has no GEMM tables: its stacks carry H100's GEMM laws, said so in each line's note
    from planner.specs.registry import bundled_hardware_text

    h20, h100 = load_hardware("hgx-h20@trtllm"), load_hardware("hgx-h100@trtllm")
    assert h20.efficiency.gemm and h20.efficiency.gemm == h100.efficiency.gemm
    text = bundled_hardware_text("hgx-h20")
    gemm = [ln for ln in text.splitlines() if ln.startswith("    gemm_")]
    assert gemm and all("borrowed from hgx-h100" in ln for ln in gemm)


def _attn_core_compute(hw, m, phase, mode, S, b=1.0):
    prec = resolve_precisions(m, hw)
    r = evaluate_configs(m, hw, prec, mode, G=1.0, TP_a=1.0, EP=1.0, TP_e=1.0, E_slots=1.0, b=np.array([b]),
                         S=np.array([S]), phase=phase)
    return float(np.asarray(r["part.attn_core.compute"]).ravel()[0]), prec


def test_prefill_attention_at_its_kernel_law_by_hand():
    # Llama-3.1-8B on one H200 (vLLM fit), one 8192-token prompt: 32 heads of 128 per layer,
    # causal FLOPs 2 x 8192 x 32 x 4096 x 256 (mean context 4096, c_att = 2 d_head) plus the
    # law's per-row work, S_a0 context tokens' worth per query row, at the law's eta_fa of the
    # peak (FP8 over an FP8 cache), plus one softmax exponential per score, the per-row work
    # counted as S_a0 keys, at the law's X_sm; plus the longest CTA, the last 128 query rows of
    # one head over the whole 8192-token prompt, 132 SMs' worth of its time at the law's kappa_lc.
    hw = load_hardware("hgx-h200@vllm")
    m = load_model("llama-3.1-8b")
    t, prec = _attn_core_compute(hw, m, "prefill", "realistic", 8192.0)
    law = hw.efficiency.attn_law("gqa_prefill", prec.kv)
    assert law is not None and 0 < law.compute <= 1 and law.offset > 0 and math.isfinite(law.softmax)
    assert law.tail > 0 and hw.sm_count == 132
    peak = hw.flops["fp8" if prec.kv == "fp8" else "bf16"]
    want = (2 * 8192 * 32 * (4096 + law.offset) * 256 / (law.compute * peak)
            + 8192 * 32 * (4096 + law.offset) / law.softmax
            + law.tail * 132 * (2 * 128 * (8192 + law.offset) * 256 / (law.compute * peak)
                                + 128 * (8192 + law.offset) / law.softmax))
    assert close(t, want, rel=1e-9)
    # a decode step takes the stack's decode law instead: its eta_a at the peak of the cache's
    # dtype, no per-row work (GQA) and no exponential term; bound mode the peak alone
    t, _ = _attn_core_compute(hw, m, "decode", "realistic", 4096.0, b=8.0)
    dec = hw.efficiency.attn_law("gqa", prec.kv)
    assert dec is not None
    assert close(t, 2 * 8 * 32 * 4096 * 256 / (dec.compute * peak), rel=1e-9)
    t, _ = _attn_core_compute(hw, m, "prefill", "bound", 8192.0)
    assert close(t, 2 * 8192 * 32 * 4096 * 256 / peak, rel=1e-9)


def test_routed_experts_at_their_grouped_moe_law_fraction():
    # Qwen3-235B-A22B FP8 on 8 x H200 (TensorRT-LLM fit), EP8, a 4096-token prefill: the experts'
    # FLOPs 2 x 3 d f_e T_e run at the stack's fitted grouped-MoE compute fraction (our FP8 is
    # block-scaled: the fp8_block law), not at eta_c; bound mode at the peak.
    from planner.physics.step import moe_law

    hw = load_hardware("hgx-h200@trtllm")
    m = load_model("qwen3-235b-a22b")
    prec = resolve_precisions(m, hw, "fp8")
    law = moe_law(hw, prec)
    assert law is not None and law == hw.efficiency.moe_law("fp8_block")
    kw = dict(G=8.0, TP_a=8.0, EP=8.0, TP_e=1.0, E_slots=float(m.E), b=np.array([1.0]), S=np.array([4096.0]),
              phase="prefill")
    F = 2 * 3 * m.d * m.f_e * 4096 * m.k / 8   # x lambda, the busiest rank's share (1 in bound mode)
    for mode, eta, lam in (("realistic", law.compute, hw.efficiency.load_imbalance), ("bound", 1.0, 1.0)):
        r = evaluate_configs(m, hw, prec, mode, **kw)
        got = float(np.asarray(r["part.experts.compute"]).ravel()[0])
        assert close(got, lam * F / (eta * hw.flops["fp8"]), rel=1e-9), mode


def test_sglang_on_blackwell_prices_each_architecture_on_the_moe_it_runs():
    # SGLang's server arguments put DeepSeek-V3 and Qwen3-MoE layers on FlashInfer's TensorRT-LLM
    # MoE on Blackwell and every other architecture (Mixtral, MiniMax-M2) on its Triton fused MoE,
    # whose law is fitted apart (moe_<dtype>_triton); on Hopper, and on other stacks, one law
    from planner.physics.step import moe_law, moe_path

    b200 = load_hardware("hgx-b200@sglang")
    for name, path in (("deepseek-r1", ""), ("qwen3-235b-a22b", ""), ("mixtral-8x7b", "triton"),
                       ("minimax-m2.5", "triton")):
        m = load_model(name)
        assert moe_path(b200, m) == path, name
    mixtral, qwen = load_model("mixtral-8x7b"), load_model("qwen3-235b-a22b")
    prec = resolve_precisions(mixtral, b200, "bf16")
    triton, main = b200.efficiency.moe_law("bf16", "triton"), b200.efficiency.moe_law("bf16")
    assert triton is not None and main is not None and triton != main
    assert moe_law(b200, prec, mixtral) == triton and moe_law(b200, prec, qwen) == main
    assert moe_law(b200, prec) == main  # no model: the main implementation
    # a format the Triton path has no law for (NVFP4: FlashInfer's rows only) takes the main law
    fp4 = resolve_precisions(mixtral, b200, "nvfp4")
    assert moe_law(b200, fp4, mixtral) == moe_law(b200, fp4)
    for other in ("hgx-h200@sglang", "hgx-b200@trtllm", "hgx-b200@vllm"):
        assert moe_path(load_hardware(other), mixtral) == "", other


def test_routed_experts_pay_their_grouped_moe_laws_activation_pass():
    # The same prefill: each of the busiest rank's lambda x 4096 x 8 / 8 token-expert rows moves
    # (2 d + 4 f_e) x 2 B of BF16 activations through HBM (gather, gate/up product written and read
    # back, output) at the law's fraction eta_ea of HBM bandwidth, on top of the experts' roofline;
    # bound mode has no such pass.
    from planner.physics.step import moe_law

    hw = load_hardware("hgx-h200@trtllm")
    m = load_model("qwen3-235b-a22b")
    prec = resolve_precisions(m, hw, "fp8")
    law = moe_law(hw, prec)
    kw = dict(G=8.0, TP_a=8.0, EP=8.0, TP_e=1.0, E_slots=float(m.E), b=np.array([1.0]), S=np.array([4096.0]),
              phase="prefill")
    rows = hw.efficiency.load_imbalance * 4096 * m.k / 8
    # ... and each of the prompt's 4096 tokens, which every GPU of the attention-TP group holds
    # (TP_a 8 splits the heads, not the tokens), reads its hidden state and writes its combined
    # output once, 2 d x 2 B, at eta_et
    tokens = 4096
    act = (rows * (2 * m.d + 4 * m.f_e) * 2 / (law.act * hw.hbm_bandwidth)
           + tokens * 2 * m.d * 2 / (law.token * hw.hbm_bandwidth))
    r = evaluate_configs(m, hw, prec, "realistic", **kw)
    assert close(float(np.asarray(r["part.experts.act"]).ravel()[0]), act, rel=1e-9)
    parts = max(float(np.asarray(r[f"part.experts.{s}"]).ravel()[0]) for s in ("compute", "hbm"))
    kernels = float(np.asarray(r["experts"]).ravel()[0]) - parts - act
    assert kernels == pytest.approx(kernel_counts(m)["n_ke"] * hw.efficiency.kernel_overhead, rel=1e-6)
    b = evaluate_configs(m, hw, prec, "bound", **kw)
    assert float(np.asarray(b["part.experts.act"]).ravel()[0]) == 0.0


def test_the_steps_all_to_all_phases_are_the_kernel_law():
    """One physics: a decode step's dispatch and combine under attention data parallelism are the
    all-to-all law the kernel scorecard fits (operator ``a2a``), at the floors the stack's spec
    carries for the phase and dtype; with attention tensor-parallel over the EP group (every rank
    holds every token: no low-latency all-to-all kernel runs) the phase takes the link's latency."""
    from planner.physics.operators import arguments, compile_operator
    from planner.physics.step import symbol_values

    m, hw = load_model("deepseek-r1"), load_hardware("hgx-h200").with_stack("trtllm")
    prec = resolve_precisions(m, hw)
    floors = dict(hw.efficiency.a2a_floors)
    assert prec.compute["routed_experts"] == "fp8"
    kw = dict(G=8.0, EP=8.0, TP_e=1.0, E_slots=256.0, b=np.array([1.0, 16.0, 128.0]), S=2048.0)
    vals = symbol_values(m, hw, prec, "realistic", TP_a=1.0, s_q=1.0, s_h=1.0, **kw)
    assert vals["a_disp"] == floors["dispatch_fp8"] and vals["a_comb"] == floors["combine_bf16"]
    out = evaluate_configs(m, hw, prec, "realistic", TP_a=1.0, **kw)
    law = compile_operator("a2a")
    given = {a: vals[a] for a in arguments("a2a") if a in vals}
    for phase, nbytes, floor in (("dispatch", "b_disp", "a_disp"), ("combine", "b_comb", "a_comb")):
        want = law(**given, tokens=kw["b"], b_phase=vals[nbytes], a_phase=vals[floor])
        assert np.allclose(out[phase], want, rtol=1e-12)
        # the floor is the measured kernels' (tens of microseconds), not a bare NVLink message's
        assert np.all(out[phase] > vals[floor]) and vals[floor] > 20e-6
    # attention TP over the EP group: the message latency, not the kernels' floor
    tp = evaluate_configs(m, hw, prec, "realistic", TP_a=8.0, **kw)
    assert np.all(tp["dispatch"] < vals["a_disp"] / 2)
    # bound mode: no floor at all
    bound = symbol_values(m, hw, prec, "bound", TP_a=1.0, s_q=1.0, s_h=1.0, **kw)
    assert bound["a_disp"] == bound["a_comb"] == 0.0


def test_a_fabric_spanning_hosts_pays_its_own_share_of_the_floors():
    # an NVL72 rack's scale-up domain spans its hosts (72 GPUs, 4 a host): its phases pay the
    # fabric's share of the floors; an 8-GPU node's, the node's share
    import dataclasses

    from planner.physics.step import a2a_floor_values

    for name, fabric in (("gb300-nvl72", True), ("hgx-b200", False)):
        hw = load_hardware(name).with_stack("trtllm")
        hw = hw.replace(efficiency={"floor_share": 0.5, "floor_share_fabric": 0.25})
        assert (hw.domain_size > hw.gpus_per_host) is fabric
        prec = resolve_precisions(load_model("deepseek-r1"), hw)
        v = a2a_floor_values(hw, prec, "realistic")
        assert v["phi_fl"] == (0.25 if fabric else 0.5)
        assert v["a_disp"] == dict(hw.efficiency.a2a_floors)["dispatch_fp8"]
        assert a2a_floor_values(dataclasses.replace(hw), prec, "bound")["a_disp"] == 0.0


def test_the_steps_attention_all_reduce_is_the_kernel_law():
    """One physics: the decode step's attention all-reduce (b s_q d b_a bytes over the TP_a GPUs)
    is operator ``allreduce``, the law the kernel scorecard scores the stacks' measured all-reduce
    kernels with, for the same inputs (the stack's fitted latency and fractions, its dispatch)."""
    from planner.physics.operators import arguments, compile_operator
    from planner.physics.step import symbol_values

    m, hw = load_model("llama-3.1-70b"), load_hardware("hgx-h200").with_stack("trtllm")
    prec = resolve_precisions(m, hw)
    kw = dict(G=8.0, EP=1.0, TP_e=8.0, E_slots=1.0, b=np.array([1.0, 32.0, 256.0]), S=2048.0)
    for tp in (2.0, 8.0):
        at = {**kw, "G": tp, "TP_e": tp}
        vals = symbol_values(m, hw, prec, "realistic", TP_a=tp, s_q=1.0, s_h=1.0, **at)
        out = evaluate_configs(m, hw, prec, "realistic", TP_a=tp, **at)
        law = compile_operator("allreduce")
        given = {a: vals[a] for a in arguments("allreduce") if a in vals}
        want = law(**given, x=kw["b"] * m.d * 2.0, n_g=tp)
        assert np.allclose(out["allreduce_attn"], want, rtol=1e-12)
        assert np.all(want > 0)


@pytest.mark.parametrize("model,system,kv", [("deepseek-r1", "gb300-nvl72@trtllm", None),
                                             ("llama-3.1-70b", "hgx-h200@trtllm", "bf16"),
                                             ("llama-3.1-8b", "hgx-h200@vllm", None)])
def test_the_steps_decode_attention_is_the_kernel_law(model, system, kv):
    """One physics: a decode step's attention core is the decode attention law the kernel scorecard
    scores the stack's measured kernels with (``attn_law_seconds``: the same expression, constants
    and dispatch, TensorRT-LLM's MMHA fallback and trtllm-gen's MLA head tiles included), with the
    step's per-kernel cost ``n_kc tau_k`` in place of the law's floor ``t_a0``."""
    import pandas as pd

    from planner.truth.kernels import attn_law_seconds, with_attention_kind

    m, hw = load_model(model), load_hardware(system)
    prec = resolve_precisions(m, hw, kv=kv)
    kv = "bf16" if prec.kv == "fp16" else prec.kv
    # one short sequence (on TensorRT-LLM over a BF16 cache its grid leaves SMs idle: MMHA)
    b, S = np.array([1.0, 8.0, 64.0, 512.0]), np.array([100.0, 3000.0, 3000.0, 3000.0])
    out = evaluate_configs(m, hw, prec, "realistic", G=1.0, TP_a=1.0, EP=1.0, TP_e=1.0, E_slots=float(m.E),
                           b=b, S=S)
    mla = m.attention == "mla"
    rows = pd.DataFrame({"gpu": hw.name, "stack": hw.stack, "op": f"attention_{'mla' if mla else 'gqa'}",
                         "dtype": "bf16", "kv_dtype": kv, "batch": b, "isl": S, "step": 0.0,
                         "heads": float(m.h), "kv_heads": 1.0 if mla else float(m.h_kv),
                         "head_dim": float(m.r_kv + m.d_r if mla else m.d_head), "window": 0.0,
                         "variant": ""})
    rows = with_attention_kind(rows)
    want = np.zeros(len(b))
    for kind in set(rows["kind"]):
        sel = (rows["kind"] == kind).to_numpy()
        law = hw.efficiency.attn_law(kind, kv)
        assert law is not None, kind
        want[sel] = attn_law_seconds(rows[sel], hw, kind, law) - law.floor
    if "llama-3.1-70b" == model:
        assert {"gqa", "gqa_mmha"} <= set(rows["kind"])  # both of TensorRT-LLM's kernels on Hopper
    got = np.asarray(out["attn_core"]) - kernel_counts(m)["n_kc"] * hw.efficiency.kernel_overhead
    assert np.allclose(got, want, rtol=1e-9)


def test_the_steps_routed_experts_are_the_grouped_moe_law():
    """One physics: a decode step's routed experts are operator ``moe_law`` (the grouped-MoE law the
    kernel scorecard fits) at the busiest rank's rows T_e = lambda b k G / EP (TP_a = 1), the
    experts it touches under uniform routing, (E / EP)(1 - (1 - k / E)^(lambda b G)), each padded
    to the tile that holds its mean rows, and its b tokens; n_ke tau_k instead of the floor t_e0."""
    from planner.physics.operators import arguments, compile_operator
    from planner.physics.step import moe_law, symbol_values

    m, hw = load_model("deepseek-r1"), load_hardware("hgx-b200@trtllm")
    prec = resolve_precisions(m, hw)
    law = moe_law(hw, prec, m)
    assert law is not None
    b = np.array([1.0, 16.0, 256.0])
    kw = dict(G=8.0, TP_a=1.0, EP=8.0, TP_e=1.0, E_slots=256.0, b=b, S=2048.0)
    out = evaluate_configs(m, hw, prec, "realistic", **kw)
    vals = symbol_values(m, hw, prec, "realistic", s_q=1.0, s_h=1.0, **kw)
    lam = hw.efficiency.load_imbalance
    rows = lam * b * 8 * m.k / 8
    touched = 32 * (1 - (1 - m.k / 256) ** (lam * b * 8))
    tile = np.clip(2.0 ** np.ceil(np.log2(np.maximum(rows / touched, 1))), 16.0, 128.0)
    given = {a: vals[a] for a in arguments("moe_law") if a in vals}
    want = compile_operator("moe_law")(**{**given, "T_moe": b, "T_er": rows, "n_er": touched, "T_ea": rows,
                                          "n_ez": 0.0, "t_z": 0.0, "t_m": tile, "eta_e": law.compute,
                                          "eta_em": law.hbm, "eta_ea": law.act, "eta_et": law.token,
                                          "t_e0": law.floor})
    got = np.asarray(out["experts"]) - kernel_counts(m)["n_ke"] * hw.efficiency.kernel_overhead
    assert np.allclose(got, want - law.floor, rtol=1e-9)
    # at 256 sequences a rank gets lambda x 2048 rows over its 32 experts, over 64 each: the
    # Blackwell tile of 128; one sequence's 8 rows take the least tile, 16
    assert lam > 1 and tile[-1] == 128.0 and tile[0] == 16.0


def test_a_stack_without_a_law_takes_the_same_gpus_other_stacks_law():
    # TensorRT-LLM's kernel tables on Hopper hold no INT4 W4A16 grouped MoE (Kimi K2 Thinking's
    # experts) and vLLM's no MLA decode attention: each takes the law another stack of the same GPU
    # has for it (with that stack's kernels' dispatch), not the roofline at the runs' fractions
    from planner.physics.step import attention_law_values, moe_law

    kimi = load_model("kimi-k2-thinking")
    trt = load_hardware("hgx-h200@trtllm")
    prec = resolve_precisions(kimi, trt)
    assert (prec.weights["routed_experts"], prec.compute["routed_experts"]) == ("int4_g32", "bf16")
    assert trt.efficiency.moe_law("int4_wo") is None
    assert moe_law(trt, prec, kimi) == trt.stacks["sglang"].moe_law("int4_wo")  # the first by name
    vllm = load_hardware("hgx-h200@vllm")
    assert vllm.efficiency.attn_law("mla", prec.kv) is None
    v = attention_law_values(kimi, vllm, prec, "realistic", "decode", b=np.array([8.0]), S=np.array([2048.0]),
                             TP_a=1.0, s_kv=1.0)
    law = vllm.stacks["sglang"].attn_law("mla", prec.kv)
    assert v["x_al"] == 1.0 and v["eta_am"] == law.hbm and v["t_c"] == law.cta
    # without any stack's law: the roofline
    alone = vllm.replace(stacks={})
    assert attention_law_values(kimi, alone, prec, "realistic", "decode", b=np.array([8.0]),
                                S=np.array([2048.0]), TP_a=1.0, s_kv=1.0)["x_al"] == 0.0


def test_a_spec_without_an_sm_count_takes_its_law_donors():
    # the borrowed kernel laws were fitted at the family reference's SMs (B200: 148); GB200's own
    # count is the same 148, so leaving it out of the spec changes nothing
    import dataclasses

    from planner.physics.step import decode_step, sm_count

    gb200 = load_hardware("gb200-nvl72")
    blank = dataclasses.replace(gb200, sm_count=0)
    assert sm_count(blank) == 148.0 == sm_count(load_hardware("vr200-nvl72"))
    m = load_model("kimi-k2-thinking")
    kw, at = dict(gpus=72, tp_attn=1, ep=72, weights="nvfp4"), dict(batch=72 * 64, context=1536.0)
    a, b = decode_step(Scenario(m, gb200, **kw), **at), decode_step(Scenario(m, blank, **kw), **at)
    assert a.terms["attn_core"] == pytest.approx(b.terms["attn_core"], rel=1e-12)
    assert a.step_time == pytest.approx(b.step_time, rel=1e-12)
