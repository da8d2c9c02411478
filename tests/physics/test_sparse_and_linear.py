"""Sparse attention's indexer and the linear mixers of hybrids in the step: each term derived by hand
(the arithmetic in the comments) and the invariants they must keep."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import sympy as sp

from planner.physics import equations as eq
from planner.physics.step import evaluate_configs, resolve_precisions
from planner.specs.hfconfig import load_hf_config
from planner.specs.registry import load_hardware

DATA = Path(__file__).resolve().parents[1] / "data"


def _value(expr: sp.Expr, **values: float) -> float:
    subs = {getattr(eq, k): v for k, v in values.items()}
    return float(expr.xreplace(subs))


def test_the_indexer_by_hand():
    # DeepSeek-V3.2, one decode token of one sequence at 32k context, one GPU: 64 heads of 128 score
    # every cached token, 2 x 64 x 128 x 32,768 = 536,870,912 FLOPs; its keys, 132 B each, 4,325,376 B
    S = 32768.0
    F = _value(eq.F_index, b=1.0, s_q=1.0, h_I=64.0, TP_a=1.0, d_I=128.0, S=S, c_x=1.0)
    M = _value(eq.M_index, b=1.0, S=S, m_I=132.0, c_x=1.0)
    assert F == 2 * 64 * 128 * S == 536_870_912
    assert M == S * 132 == 4_325_376
    # against the dense MLA it replaces (absorbed, 128 heads of 2 x 512 + 64): 2 x 128 x 1088 x S FLOPs
    # and 576 x 2 B per token; the indexer is 5.9% of those FLOPs and 11.5% of those bytes, which is
    # what makes DSA pay at long context (DeepSeek-V3.2-Exp report, sec. 2.1)
    assert math.isclose(F / (2 * 128 * 1088 * S), 64 * 128 / (128 * 1088))
    assert math.isclose(M / (S * 1152), 132 / 1152)


def test_sparse_reads_the_top_k_and_the_indexer_keys():
    # roofline branch (x_al = 0) at unit efficiencies, one sparse layer: the KV read is S_k tokens of
    # e_kv b_kv, the indexer's S m_I beside it; at S <= S_k the sparse layer reads all of its context
    hbm = eq.PARTS["attn_core.hbm"]
    common = dict(x_al=0.0, x_off=0.0, eta_m=1.0, B_hbm=1.0, b=1.0, e_kv=576.0, b_kv=2.0, s_kv=1.0,
                  phi_a=1.0, phi_w=0.0, phi_x=1.0, phi_lm=0.0, S_w=1.0, m_I=132.0, S_k=2048.0, m_st=0.0,
                  TP_a=1.0, c_x=1.0, phi_z=0.0, c_z=1.0, x_cw=0.0)
    for S in (1024.0, 2048.0, 131072.0):
        got = _value(hbm, S=S, **common)
        assert math.isclose(got, min(S, 2048.0) * 1152 + S * 132)
    dense = _value(hbm, S=131072.0, **(common | {"phi_x": 0.0}))
    assert math.isclose(dense, 131072.0 * 1152)


def test_linear_mixers_hold_a_state_not_a_cache():
    # bytes one sequence holds per GPU: Qwen3.5 at attention TP 4 keeps its 15 full layers' KV split
    # over min(4, 2 KV heads) = 2 ranks, 15 x 2 x 2 x 256 x 2 B / 2 per token, and 45 DeltaNet states of
    # 4,268,032 B split over the 4 ranks by heads
    m = load_hf_config(DATA / "qwen3.5-397b-a17b")
    S = 8192.0
    per_seq = _value(eq.m_seq, S_c=S, phi_a=15 / 60, phi_w=0.0, S_w=1.0, e_kv=2 * 2 * 256.0, b_kv=2.0,
                     n_L=60.0, s_kv=2.0, phi_x=0.0, m_I=0.0, phi_lm=45 / 60,
                     m_st=m.linear_state_bytes_per_layer, TP_a=4.0, c_x=1.0, phi_z=0.0, c_z=1.0, x_cw=0.0)
    assert math.isclose(per_seq, S * 15 * 2 * 2 * 256 * 2 / 2 + 45 * 4_268_032 / 4)


def _step_parts(model, hw_name: str, S: np.ndarray, mode: str = "bound") -> dict[str, np.ndarray]:
    hw = load_hardware(hw_name)
    prec = resolve_precisions(model, hw)
    return evaluate_configs(model, hw, prec, mode, G=8.0, TP_a=8.0, EP=8.0, TP_e=1.0, E_slots=float(model.E),
                            b=8.0, S=S)


def test_a_hybrids_attention_grows_with_context_at_its_share_of_full_layers():
    # Qwen3.5 against the same model with every layer full attention: the attention core's growth with
    # context is the 15 / 60 of it; the linear layers add a constant (their state read and written)
    hybrid = load_hf_config(DATA / "qwen3.5-397b-a17b")
    full = hybrid.replace(linear_kind="", linear_layers=0)
    S = np.array([16384.0, 131072.0])
    h = _step_parts(hybrid, "hgx-b200", S)["part.attn_core.hbm"]
    f = _step_parts(full, "hgx-b200", S)["part.attn_core.hbm"]
    assert math.isclose((h[1] - h[0]) / (f[1] - f[0]), 15 / 60, rel_tol=1e-9)
    # the constant: 45 / 60 of a layer's state bytes, read and written, for 8 sequences over 8 ranks
    state = 45 / 60 * 2 * 8 * hybrid.linear_state_bytes_per_layer / 8
    hw = load_hardware("hgx-b200")
    slope = (h[1] - h[0]) / (S[1] - S[0])
    assert math.isclose(h[0] - slope * S[0], state / hw.hbm_bandwidth, rel_tol=1e-6)


def test_sparse_attention_is_cheaper_at_long_context_and_equal_below_top_k():
    dsa = load_hf_config(DATA / "deepseek-v3.2")
    dense = dsa.replace(sparse_top_k=0, sparse_layers=0, indexer_heads=0, indexer_head_dim=0,
                        indexer_key_bytes=0.0)
    S = np.array([1024.0, 131072.0])
    for mode in ("bound", "realistic"):
        s = _step_parts(dsa, "hgx-b200", S, mode)
        d = _step_parts(dense, "hgx-b200", S, mode)
        # below the top-k the two read the same tokens: only the indexer separates them
        assert math.isclose(s["attn_core"][0] - d["attn_core"][0], s["attn_indexer"][0], rel_tol=1e-9)
        # at 128k the dense layer reads 64x the tokens a sparse one does: in bound mode (rooflines, no
        # floors) the sparse core, its indexer aside, takes 2,048 / 131,072 of the dense one's time
        core = (s["attn_core"][1] - s["attn_indexer"][1]) / d["attn_core"][1]
        if mode == "bound":
            assert math.isclose(core, 2048 / 131072, rel_tol=1e-9)
        assert core < 1
        # and a sparse sequence holds more: its indexer keys beside the latent
        assert s["memory.b_max"][1] < d["memory.b_max"][1]


def test_a_latent_moe_dispatches_and_multiplies_in_its_latent_width():
    # a latent MoE sends each token's d_e-wide latent (Kimi K3: 3,584 of 7,168), and each routed row
    # costs 2 x 3 d_e f_e FLOPs: halving the width halves both; the projections into and out of the
    # latent (2 d d_e weights a layer) run beside the shared experts
    assert _value(eq.a2a_volume(2, 1.0, 10), d_e=3584.0) == 10 * 2 * 3584
    assert _value(eq.expert_flops(1), n_mx=3.0, d_e=3584.0, f_e=3072.0, TP_e=1.0) == 2 * 3 * 3584 * 3072
    k3 = load_hf_config(DATA / "kimi-k3")
    wide = k3.replace(latent_dim=0)
    hw = load_hardware("gb200-nvl72")
    prec = resolve_precisions(k3, hw)
    out = {}
    for name, m in (("latent", k3), ("wide", wide)):
        out[name] = evaluate_configs(m, hw, prec, "bound", G=72.0, TP_a=1.0, EP=72.0, TP_e=1.0,
                                     E_slots=936.0, b=16.0, S=8192.0)
    for part in ("part.a2a.scale_up", "part.experts.compute"):
        assert math.isclose(out["latent"][part][()] / out["wide"][part][()], 0.5)
    # the shared-expert GEMM carries the latent projections: 2 x 7168 x 3584 weights more per layer
    extra = (out["latent"]["part.shared_experts.hbm"] - out["wide"]["part.shared_experts.hbm"])[()]
    assert math.isclose(extra, 2 * 7168 * 3584 * 2 / hw.hbm_bandwidth, rel_tol=1e-9)


def test_the_indexer_runs_as_its_kernels():
    # with nothing to read or multiply, a sparse layer's indexer still costs its n_kx kernels (14 on
    # SGLang's decode path, planner.physics.step.KERNELS), tau_k each, times the sparse share of layers
    got = _value(eq.t_index, phi_x=0.5, b=1.0, s_q=1.0, h_I=0.0, d_I=0.0, TP_a=1.0, S=1.0, m_I=0.0, c_x=1.0,
                 eta_fa=1.0, P_a=1.0, eta_m=1.0, B_hbm=1.0, n_kx=14.0, tau_k=3e-6)
    assert math.isclose(got, 0.5 * 14 * 3e-6)


def test_compressed_layers_read_rows_and_a_window():
    # DeepSeek-V4-Pro at 32k context: each of its 30 sparse layers reads the top 1,024 of its 8,192
    # rows of 4 tokens and its 128-token window; each of its 31 others all 256 rows of 128 tokens and
    # the window: per layer on average (30 x 1,152 + 31 x 384) / 61 rows; and it holds
    # (30 x (8,192 + 128) + 31 x (256 + 128)) / 61
    common = dict(phi_a=1.0, phi_w=0.0, phi_x=30 / 61, phi_z=31 / 61, c_x=4.0, c_z=128.0, S_k=1024.0,
                  S_w=128.0, x_cw=1.0)
    assert math.isclose(_value(eq.S_eff, S=32768.0, **common), (30 * 1152 + 31 * 384) / 61)
    held = (30 * (8192 + 128) + 31 * (256 + 128)) / 61
    assert math.isclose(_value(eq.S_c_eff, S_c=32768.0, **common), held)
