"""The sympy step model: known answers, hand-computed terms, notation hygiene, and agreement of
the compiled (lambdified) path with the symbolic expressions."""

from __future__ import annotations

import math
from importlib import resources

import numpy as np
import pytest
import sympy as sp
import yaml

from planner.physics import compiled
from planner.physics import equations as eq
from planner.physics.step import resolve_precisions, symbol_values
from planner.physics.symbols import REGISTRY
from planner.specs.registry import load_hardware, load_model
from planner.specs.units import parse_quantity

REL = 1e-9


def close(a: float, b: float, rel: float = REL) -> bool:
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=0.0)


# ---- DeepSeek's closed-form EP speed limit ----------------------------------------------------
def _speed_limit_points() -> list[dict]:
    """``deepseek-isca25-speed-limit-*`` from planner/truth/data/points.yaml; else the paper's
    numbers (Zhao et al., "Insights into DeepSeek-V3", arXiv:2505.09343, sec. 2.3)."""
    try:
        text = resources.files("planner.truth.data").joinpath("points.yaml").read_text("utf-8")
        pts = [p for p in yaml.safe_load(text)["points"]
               if p["id"].startswith("deepseek-isca25-speed-limit-") and "inputs" in p and "expect" in p]
    except (FileNotFoundError, KeyError, TypeError):
        pts = []
    if pts:
        return pts
    base = {"bytes_dispatch": 1, "bytes_combine": 2, "tokens_per_device": 32, "experts_per_token": 9,
            "hidden": 7000, "layers": 61, "micro_batches": 2}
    return [
        {"id": "ib", "inputs": {**base, "link_bandwidth": "50 GB/s"},
         "expect": {"t_comm_us": 120.96, "t_layer_us": 241.92, "tpot_ms": 14.757, "tps_per_user": 67.76}},
        {"id": "nvl72", "inputs": {**base, "link_bandwidth": "900 GB/s"},
         "expect": {"t_comm_us": 6.72, "t_layer_us": 13.44, "tpot_ms": 0.81984, "tps_per_user": 1219.8}},
    ]


# Hand arithmetic (the paper's): t_comm = (1 + 2) B x 32 tokens x 9 experts x 7000 = 6,048,000 B
#   at 50 GB/s:  6,048,000 / 50e9  = 120.96 us; t_layer = 2 x 120.96 = 241.92 us;
#                TPOT = 61 x 241.92 us = 14.757 ms; 1 / 14.757 ms = 67.76 tok/s
#   at 900 GB/s: 6,048,000 / 900e9 = 6.72 us;   t_layer = 13.44 us; TPOT = 0.81984 ms; 1219.8 tok/s
@pytest.mark.parametrize("point", _speed_limit_points(), ids=lambda p: p["id"])
def test_deepseek_speed_limit(point):
    i, x = point["inputs"], point["expect"]
    exprs = eq.speed_limit_step(i["tokens_per_device"], i["experts_per_token"], i["hidden"], i["layers"],
                                i["micro_batches"])
    bw = parse_quantity(i["link_bandwidth"], "bandwidth")
    subs = {REGISTRY["b_disp"].symbol: i["bytes_dispatch"], REGISTRY["b_comb"].symbol: i["bytes_combine"],
            REGISTRY["B_so"].symbol: bw}
    got = {k: float(v.subs(subs)) for k, v in exprs.items()}
    assert math.isclose(got["t_comm"] * 1e6, x["t_comm_us"], rel_tol=1e-3)
    assert math.isclose(got["t_layer"] * 1e6, x["t_layer_us"], rel_tol=1e-3)
    assert math.isclose(got["tpot"] * 1e3, x["tpot_ms"], rel_tol=1e-3)
    assert math.isclose(got["tps_user"], x["tps_per_user"], rel_tol=1e-3)


def test_speed_limit_uses_the_model_volume():
    # the check goes through the same a2a_volume the step model uses: tokens x dest x d_e x bytes
    # (d_e the width the experts' rows travel in: the hidden size d but in a latent MoE)
    v = eq.a2a_volume(9, 3, 32).subs(REGISTRY["d_e"].symbol, 7000)
    assert v == 32 * 9 * 7000 * 3  # 6,048,000 B


# ---- notation ----------------------------------------------------------------------------------
def test_free_symbols_are_registered():
    registered = {s.symbol for s in REGISTRY.values()}
    for name, expr in eq.ALL.items():
        extra = expr.free_symbols - registered
        assert not extra, f"{name}: unregistered symbols {extra}"


def test_no_two_entries_share_a_name_or_symbol():
    names = [s.symbol.name for s in REGISTRY.values()]
    assert len(names) == len(set(names))
    syms = [s.symbol for s in REGISTRY.values()]
    assert len(syms) == len(set(syms))
    for key, s in REGISTRY.items():
        assert s.unit and s.meaning and s.group, key


def test_compiled_outputs_are_all():
    assert compiled.OUTPUT_NAMES == tuple(eq.ALL)
    assert set(compiled.ARG_NAMES) == set(REGISTRY)


# ---- symbolic vs compiled ----------------------------------------------------------------------
def random_values(rng: np.random.Generator) -> dict[str, float]:
    """Random but physically consistent values of every registered symbol."""
    def u(lo, hi):
        return float(rng.uniform(lo, hi))

    def i(lo, hi):
        return float(rng.integers(lo, hi + 1))

    EP, TP_e, E = i(1, 96), i(1, 4), i(8, 400)
    return dict(
        d=i(512, 8192), d_e=i(512, 8192), W_lat=u(0, 1e8), n_mx=i(2, 3),
        n_L=i(4, 80), n_Ld=i(0, 3), E=E, k=i(1, 8), E_s=i(0, 2), f_e=i(256, 4096),
        f_d=i(0, 20000), h=i(8, 128), V=i(1000, 200000), n_emb=i(1, 2), W_attn=u(1e6, 2e8), W_rep=u(0, 1e6),
        e_kv=i(64, 1024), c_att=i(64, 1200), phi_w=u(0, 0.1), S_w=i(128, 4096), n_mtp=i(0, 1),
        # attention layers at least the sliding and sparse ones among them
        phi_a=u(0.5, 1), phi_x=u(0, 0.2), phi_z=u(0, 0.2), c_x=i(1, 8), c_z=i(1, 256), x_cw=i(0, 1),
        S_k=i(256, 4096), h_I=i(0, 64), d_I=i(0, 128), m_I=u(0, 200),
        phi_lm=u(0, 1), F_lt=u(0, 1e7), m_st=u(0, 4e6),
        x_mtp=float(rng.integers(0, 2)), n_Ldr=i(0, 2), f_dr=i(1000, 20000), n_fuse=i(0, 3), n_hdr=i(0, 1),
        V_dr=i(1000, 200000),
        b_we=u(0.5, 2), b_wa=u(0.5, 2), b_wd=u(0.5, 2), b_wv=u(0.5, 2), b_kv=u(1, 2), b_a=2.0,
        b_disp=u(0.5, 2), b_comb=2.0, P_e=u(1e14, 1e16), P_a=u(1e14, 1e16), P_d=u(1e14, 1e16),
        P_v=u(1e14, 1e16), P_c=u(1e14, 1e16), B_hbm=u(1e12, 1e13), C_hbm=u(8e10, 3e11),
        N_su=float(rng.choice([8, 72])), B_su=u(1e11, 1e12), x_nvls=float(rng.integers(0, 2)),
        n_sw=float(rng.choice([1, 2, 4, 8])), B_hb=u(1e10, 1e12), eta_hb=u(0.3, 1), a_su=u(0, 1e-5),
        B_so=u(1e10, 1e11),
        a_so=u(0, 1e-5), C_host=u(0, 5e11), B_c2c=u(1e11, 5e11), eta_c=u(0.3, 1), eta_fa=u(0.3, 1),
        eta_ce=u(0.3, 1), eta_xa=u(0.03, 1), eta_xt=u(0.01, 1), x_xa=float(rng.integers(0, 2)),
        S_a0=u(0, 2000),
        X_sm=u(1e12, 2e13), kappa_lc=u(0, 2), t_qt=128.0,
        eta_m=u(0.3, 1), eta_em=u(0.3, 1), t_m0=16.0, x_al=float(rng.integers(0, 2)), eta_a=u(0.3, 1),
        eta_am=u(0.3, 1), t_r=u(0, 1e-7), beta_c=u(1e10, 1e11), t_c=u(0, 3e-6), t_q=u(0, 2e-10),
        phi_rp=u(0, 1), n_sub=i(1, 16), n_ht=i(1, 8), n_blk=i(1, 8), n_kvh=i(1, 8), e_q=i(64, 576),
        eta_su=u(0.3, 1), eta_so=u(0.3, 1), eta_ar=u(0.3, 1), a_ar=u(0, 1e-5), tau_k=u(0, 1e-5),
        N_ar=float(rng.choice([2, 4, 8, 72])), t_n0=u(0, 1e-5), a_nc=u(0, 1e-5), eta_nc=u(0.3, 1),
        a_nl=u(0, 1e-5), a_nm=u(0, 1e-5),
        eta_nv=u(0.3, 1), m_o4=u(0, 1e6), m_o8=u(0, 1e6), m_cu=u(0, 1e8),
        N_mn=float(rng.choice([4, 8, 1e12])), m_on=u(0, 2e6), x_mn=float(rng.integers(0, 2)),
        eta_a2a=u(0.3, 1), a_a2a=u(0, 1e-4), a_disp=u(0, 2e-4), a_comb=u(0, 2e-4), phi_fl=u(0, 1),
        eta_o=u(0, 1),
        t_fixed=u(0, 1e-3), tau_q=u(0, 1e-4), r_mem=u(0, 0.2), x_mem=u(0.7, 1), M_ws=u(0, 2e10),
        **{"lambda": u(1, 2)}, G=EP * TP_e, TP_a=i(1, 8), EP=EP, TP_e=TP_e, E_slots=E + i(0, 8),
        s_kv=i(1, 8), M_nl=i(1, 8), x_fw=float(rng.integers(0, 2)), N_ss=float(rng.choice([0, 256, 1e12])),
        o=float(rng.integers(0, 2)), x_off=float(rng.integers(0, 2)),
        x_tor=float(rng.integers(0, 2)), K_y=i(1, 4), K_z=i(1, 4), n_lk=float(rng.choice([2, 4, 6])),
        b=u(0.1, 256), S=u(10, 1e5), S_c=u(10, 1e5), s_q=i(1, 4), s_h=i(1, 4), n_d=i(0, 3), A=u(1, 4),
        n_ka=i(1, 12), n_kc=i(1, 3), n_ke=i(1, 10), n_ks=i(1, 4), n_kd=i(1, 5), n_kh=i(1, 5), n_kx=i(0, 20),
        x_g=float(rng.integers(0, 2)), t_m=float(rng.choice([64, 128])), t_n=128.0,
        N_sm=float(rng.choice([1, 132, 148])),
        **{f"{p}{c}": u(0.3, 1) for p in ("eta_g", "eta_gm") for c in "adv"},
        **{f"w_g{c}": u(0, 1) for c in "adv"},
    )


def _symbolic(name: str, vals: dict[str, float]) -> float:
    subs = {REGISTRY[n].symbol: sp.Float(v, 30) for n, v in vals.items()}
    return float(eq.ALL[name].xreplace(subs).evalf(30))


CHECKED = ("attn_proj", "attn_core", "experts", "shared_experts", "lm_head", "dispatch", "combine",
           "allreduce_moe", "layer_moe", "draft", "host", "step", "part.a2a.scale_out", "part.attn_core.host",
           "memory.weights", "memory.kv", "memory.b_max", "tps_user", "tps_gpu")


@pytest.mark.parametrize("seed", range(6))
def test_symbolic_and_compiled_agree(seed):
    rng = np.random.default_rng(seed)
    vals = random_values(rng)
    if seed >= 4:  # off-switch values too: the compiled path substitutes 0/1 switches exactly
        vals.update(o=0.37, x_off=0.5, n_d=2.0, x_g=0.6, x_al=0.3)
    out = compiled.evaluate(vals)
    for name in CHECKED:
        ref = _symbolic(name, vals)
        assert math.isclose(float(out[name]), ref, rel_tol=1e-9, abs_tol=1e-300), name


def test_grid_equals_pointwise():
    """One array call gives the same numbers as scalar calls, point by point."""
    rng = np.random.default_rng(7)
    vals = random_values(rng)
    n = 24
    grid = dict(vals)
    grid["b"] = rng.uniform(0.1, 300, n)
    grid["EP"] = rng.integers(1, 40, n).astype(float)
    grid["G"] = grid["EP"] * vals["TP_e"]
    grid["o"] = rng.integers(0, 2, n).astype(float)
    out = compiled.evaluate(grid)
    for j in range(0, n, 5):
        one = compiled.evaluate({k: (v[j] if isinstance(v, np.ndarray) else v) for k, v in grid.items()})
        for name in eq.ALL:
            assert np.shape(out[name]) == (n,)
            assert math.isclose(float(out[name][j]), float(one[name]), rel_tol=1e-12, abs_tol=1e-300), name


def test_grids_share_one_compiled_version_whatever_their_scalars():
    """A grid call compiles every layout and workload symbol as an array, whichever of them it
    gives as one value, so grids differing only in which of those are scalars share a compiled
    version; a single point keeps its own (hoisted on Python floats), and so does a fixed switch."""
    vals = random_values(np.random.default_rng(3))
    vals.update(o=1.0, x_off=0.0, n_d=0.0, x_g=0.0, x_al=1.0)
    b = np.linspace(1.0, 64.0, 5)
    by_batch = compiled._signature({**vals, "b": b})
    by_batch_and_context = compiled._signature({**vals, "b": b, "S": np.full(5, vals["S"])})
    assert by_batch[0] == by_batch_and_context[0]
    assert by_batch[1] == by_batch_and_context[1] == (("o", 1.0), ("x_off", 0.0), ("n_d", 0.0),
                                                      ("x_g", 0.0), ("x_al", 1.0))
    assert {"G", "TP_a", "EP", "S", "b"} <= by_batch[0]
    assert "o" not in by_batch[0]  # the fixed switch is substituted, not an array
    assert compiled._signature(vals)[0] == frozenset()
    assert compiled._signature({**vals, "o": np.array([0.0, 1.0])})[0] != by_batch[0]


def test_missing_symbol_is_named():
    vals = random_values(np.random.default_rng(0))
    del vals["B_hbm"]
    with pytest.raises(KeyError, match="B_hbm"):
        compiled.evaluate(vals)


# ---- hand-computed terms ----------------------------------------------------------------------
def _values(model: str, hw: str, mode: str = "bound", **layout) -> dict[str, float]:
    m, h = load_model(model), load_hardware(hw)
    kw = dict(G=8, TP_a=1, EP=8, TP_e=1, E_slots=384, b=1.0, S=4096.0, s_q=1, s_h=1)
    kw.update(layout)
    return symbol_values(m, h, resolve_precisions(m, h), mode, **kw)


def _num(expr: sp.Expr, vals: dict[str, float]) -> float:
    return float(expr.xreplace({REGISTRY[n].symbol: v for n, v in vals.items()}))


def test_kv_bytes_read_mla():
    # Kimi K2: latent KV 512 + rope 64 = 576 elements per token per layer, BF16 (2 B), not split
    # by attention TP.  b = 3 sequences, S = 4096: 3 x 4096 x 576 x 2 = 14,155,776 B per layer.
    vals = _values("kimi-k2-thinking", "hgx-h200", b=3.0, S=4096.0, TP_a=8)
    assert _num(eq.M_kv_read, vals) == 3 * 4096 * 576 * 2 == 14_155_776
    # held over 61 layers: 14,155,776 x 61 = 863,502,336 B per GPU
    assert _num(eq.M_kv, vals) == 14_155_776 * 61


def test_kv_held_in_prefill_is_the_whole_prompt():
    # prefill of one 8192-token prompt: attention sees a mean causal context of 4096 tokens, the
    # cache holds all 8192: 8192 x 576 x 2 x 61 = 575,668,224 B
    from planner.physics.step import evaluate_configs
    m, h = load_model("kimi-k2-thinking"), load_hardware("hgx-h200")
    out = evaluate_configs(m, h, resolve_precisions(m, h), "bound", G=8, TP_a=8, EP=8, TP_e=1,
                           E_slots=384, b=1.0, S=8192.0, phase="prefill")
    assert float(out["memory.kv"]) == 8192 * 576 * 2 * 61


def test_expert_weight_bytes_small_and_large_batch():
    # Kimi K2 Thinking, EP8 on 8 GPUs: 384 / 8 = 48 experts per GPU, each 3 x 7168 x 2048 =
    # 44,040,192 weights at INT4 + 16-bit scale per 32 = 4.5 bits = 0.5625 B: 24,772,608 B.
    expert = 3 * 7168 * 2048 * 0.5625
    assert expert == 24_772_608
    # one token in the instance (b = 1/8 per DP-attention rank, 8 ranks): it touches 8 experts,
    # on average 48 x (1 - (1 - 8/384)^1) = 1 per GPU -> 24,772,608 B
    vals = _values("kimi-k2-thinking", "hgx-h200", b=1 / 8)
    assert close(_num(eq.n_touched, vals), 1.0)
    assert close(_num(eq.M_experts, vals), expert)
    # 8 tokens: 48 x (1 - (376/384)^8) = 48 x (1 - 0.8449927) = 7.4403497 experts per GPU
    vals = _values("kimi-k2-thinking", "hgx-h200", b=1.0)
    assert close(_num(eq.n_touched, vals), 48 * (1 - (376 / 384) ** 8))
    assert close(_num(eq.n_touched, vals), 7.440349705096567)
    # 4096 tokens touch every expert: 48 x 24,772,608 = 1,189,085,184 B per GPU
    vals = _values("kimi-k2-thinking", "hgx-h200", b=512.0)
    assert close(_num(eq.M_experts, vals), 48 * expert, rel=1e-12)


def test_ridge_points():
    h200, gb200 = load_hardware("hgx-h200"), load_hardware("gb200-nvl72")
    # H200: 989e12 / 4.8e12 = 206.04 FLOP/B (BF16); 1979e12 / 4.8e12 = 412.29 (FP8)
    assert close(h200.flops["bf16"] / h200.hbm_bandwidth, 989e12 / 4.8e12)
    assert round(h200.flops["bf16"] / h200.hbm_bandwidth) == 206
    assert close(h200.flops["fp8"] / h200.hbm_bandwidth, 1979e12 / 4.8e12)
    # GB200: 2.5e15 / 8e12 = 312.5 (BF16); 5e15 / 8e12 = 625 (FP8)
    assert close(gb200.flops["bf16"] / gb200.hbm_bandwidth, 312.5)
    assert close(gb200.flops["fp8"] / gb200.hbm_bandwidth, 625.0)
    # the model's expert roofline crosses over at that intensity: with t tokens per expert at
    # b_w = 1 B (FP8), FLOPs 2 x 3 d f_e t and bytes 3 d f_e: compute = memory at t = 412.29 / 2
    # on H200 (FP8) -- 2 FLOP per weight per token, intensity 2 t / b_w
    t = h200.flops["fp8"] / h200.hbm_bandwidth / 2
    F = 2 * 3 * 7168 * 2048 * t
    M = 3 * 7168 * 2048 * 1.0
    assert close(F / h200.flops["fp8"], M / h200.hbm_bandwidth)


#: the link-type symbols of an NVSwitch domain of 8 (in-switch reduction, one switch)
NVSWITCH = {REGISTRY["x_nvls"].symbol: 1, REGISTRY["n_sw"].symbol: 8, REGISTRY["B_hb"].symbol: 450e9,
            REGISTRY["eta_hb"].symbol: 1}


#: a stack's custom-kernel limits as vLLM's kernel has them: one-shot below 512 KiB over 3-4 GPUs
#: and below 256 KiB over 5-8 (always over 2), the kernel up to 8 MiB
VLLM_LIMITS = {REGISTRY["m_o4"].symbol: 512 * 1024, REGISTRY["m_o8"].symbol: 256 * 1024,
               REGISTRY["m_cu"].symbol: 8 * 1024 * 1024, REGISTRY["N_mn"].symbol: 1e12,
               REGISTRY["m_on"].symbol: 0, REGISTRY["x_mn"].symbol: 1}


def test_tp_allreduce_time():
    # 8 GPUs of one NVSwitch domain at 450 GB/s, 1 us per pass, vLLM's limits:
    # - 1e6 B over 8 is at least 256 KiB: two-shot, 2 x 1 us + 2 x 7/8 x 1e6 / 450e9 = 5.8889 us
    # - 1e5 B over 8: one-shot, 1 us + 7 x 1e5 / 450e9 = 2.5556 us
    # - 1e6 B over 2: one-shot always, 1 us + 1e6 / 450e9 = 3.2222 us
    # - 16e6 B over 8 is beyond the kernel's 8 MiB: the faster of NCCL's ring (10 us + 2 x 7 x 1 us
    #   + 2 x 7/8 x 16e6 / 450e9 = 86.222 us) and the switch's reduction at eta_nv = 0.5
    #   (2 x 1 us + 16e6 / (0.5 x 450e9) = 73.111 us)
    # - bound mode (limits 0, peaks, no latency): the switch's m / B_su = 2.2222 us for 1e6 B
    m, n = sp.symbols("m n", positive=True)
    R = {r: REGISTRY[r].symbol for r in ("B_su", "eta_ar", "a_ar", "N_su", "B_so", "eta_so", "a_so",
                                         "eta_nv", "t_n0", "a_nc", "a_nl", "a_nm", "eta_nc", "N_ar")}
    base = {R["B_su"]: 450e9, R["eta_ar"]: 1.0, R["a_ar"]: 1e-6, R["N_su"]: 8, R["B_so"]: 50e9,
            R["eta_so"]: 1.0, R["a_so"]: 5e-6, R["N_ar"]: 8, R["eta_nv"]: 0.5, R["t_n0"]: 10e-6,
            R["a_nc"]: 1e-6, R["a_nl"]: 1e-6, R["a_nm"]: 1e-6, R["eta_nc"]: 1.0, **NVSWITCH, **VLLM_LIMITS}
    t = eq.allreduce_time(m, n)
    assert close(t.xreplace({**base, m: 1e6, n: 8}), 5.888888888888889e-6)
    assert close(t.xreplace({**base, m: 1e5, n: 8}), 2.5555555555555556e-6)
    assert close(t.xreplace({**base, m: 1e6, n: 2}), 3.2222222222222222e-6)
    assert close(t.xreplace({**base, m: 16e6, n: 8}), 73.11111111111111e-6)
    assert close(t.xreplace({**base, R["eta_nv"]: 0.3, m: 16e6, n: 8}), 86.22222222222222e-6)
    bound = {**base, R["eta_ar"]: 1.0, R["eta_nv"]: 1.0, R["a_ar"]: 0, R["t_n0"]: 0, R["a_nc"]: 0,
             R["a_nl"]: 0, R["a_nm"]: 0,
             **{REGISTRY[k].symbol: 0 for k in ("m_o4", "m_o8", "m_cu", "m_on")},
             REGISTRY["N_mn"].symbol: 1e12,
             REGISTRY["x_mn"].symbol: 1}
    assert close(t.xreplace({**bound, m: 1e6, n: 8}), 1e6 / 450e9)
    # one GPU: no communication
    assert eq.allreduce_time(m, 1).xreplace({**base, m: 1e6}) == 0


def test_allreduce_across_two_domains_is_hierarchical():
    # 16 GPUs in two 8-GPU domains: the in-domain part over 8 (1e6 B once: 2.2222 us), then
    # each GPU all-reduces its 1e6/8 B shard with its twin in the other domain over the
    # 50 GB/s NIC: 2 x 1/2 x 125e3 / 50e9 = 2.5 us; latency 2 x 1 us + a 2-ring 2 x 1 x 5 us
    m, n = sp.symbols("m n", positive=True)
    R = {r: REGISTRY[r].symbol for r in ("B_su", "eta_ar", "a_ar", "N_su", "B_so", "eta_so", "a_so")}
    base = {m: 1e6, R["B_su"]: 450e9, R["eta_ar"]: 1.0, R["a_ar"]: 1e-6, R["N_su"]: 8,
            R["B_so"]: 50e9, R["eta_so"]: 1.0, R["a_so"]: 5e-6, REGISTRY["N_ar"].symbol: 1e12, **NVSWITCH,
            n: 16, REGISTRY["eta_nv"].symbol: 1.0, REGISTRY["t_n0"].symbol: 1.0,  # NCCL never faster
            **{REGISTRY[k].symbol: 0 for k in ("m_o4", "m_o8", "m_cu", "m_on")},
             REGISTRY["N_mn"].symbol: 1e12,
             REGISTRY["x_mn"].symbol: 1}
    t = eq.allreduce_time(m, n).xreplace(base)
    assert close(t, 1e6 / 450e9 + 2.5e-6 + 2e-6 + 10e-6)
    su, so = (x.xreplace(base) for x in eq.allreduce_bandwidth(m, n))
    assert close(su, 1e6 / 450e9) and close(so, 2.5e-6)


def test_allreduce_beyond_the_stacks_kernel_goes_through_nccl():
    # a 72-GPU NVLink domain whose stack's kernel spans one 4-GPU host (N_ar = 4): 256 B over 4
    # GPUs is the one-shot kernel, 3.7 us + 3 x 256 / 900e9; over 8 GPUs NCCL's ring: t_n0 6.5 us
    # + 2 x 7 x 1.4 us + 2 x 7/8 x 256 B / (0.5 x 900e9) = 26.1 us + 1.0 ns (measured for SGLang
    # on GB300 NVL72: 3.8 and 27 us)
    m, n = sp.symbols("m n", positive=True)
    r = {k: REGISTRY[k].symbol for k in ("B_su", "eta_ar", "a_ar", "N_su", "B_so", "eta_so", "a_so", "N_ar",
                                         "t_n0", "a_nc", "a_nl", "a_nm", "eta_nc")}
    base = {m: 256.0, r["B_su"]: 900e9, r["eta_ar"]: 1.0, r["a_ar"]: 3.7e-6, r["N_su"]: 72, r["B_so"]: 100e9,
            r["eta_so"]: 1.0, r["a_so"]: 5e-6, r["N_ar"]: 4, r["t_n0"]: 6.5e-6, r["a_nc"]: 1.4e-6,
            r["a_nl"]: 1.4e-6, r["a_nm"]: 1.4e-6,
            r["eta_nc"]: 0.5, **NVSWITCH, REGISTRY["n_sw"].symbol: 72, REGISTRY["eta_nv"].symbol: 0.5,
            **VLLM_LIMITS}
    assert close(eq.allreduce_time(m, n).xreplace({**base, n: 4}), 3.7e-6 + 3 * 256 / 900e9)
    assert close(eq.allreduce_time(m, n).xreplace({**base, n: 8}), 6.5e-6 + 19.6e-6 + 2 * 7 / 8 * 256 / 450e9)


def test_moe_tp_allreduce_reduces_each_token_once():
    # EP 1, MoE TP 8: every GPU holds a slice of every expert and sums a token's k expert
    # outputs before the reduce, so the all-reduce carries B_tok tokens x d x 2 B, not k copies
    vals = {s: v for s, v in {
        "b": 4, "s_q": 1, "G": 8, "TP_a": 8, "EP": 1, "k": 8, "d_e": 7168, "b_a": 2,
        "lambda": 1.0}.items()}
    got = eq.m_ar_moe.xreplace({REGISTRY[s].symbol: v for s, v in vals.items()})
    assert close(got, 4 * 7168 * 2)  # B_tok = b s_q G / TP_a = 4 tokens, once each
    # EP 8, MoE TP 1 is not a TP reduce; at EP 4 x TP 2 a rank gets the tokens routed to it:
    # 1 - (3/4)^8 = 0.8999 of the 16 tokens of a DP 8 instance (b 2 per rank), once each
    vals.update(G=8, TP_a=1, EP=4, b=2)
    got = eq.m_ar_moe.xreplace({REGISTRY[s].symbol: v for s, v in vals.items()})
    assert close(got, 16 * (1 - 0.75 ** 8) * 7168 * 2)


def test_a2a_destinations_split_by_domain():
    # EP 16 over 2 domains of 8 (HGX): a token's 8 experts land on each rank with p = 1 - (15/16)^8;
    # the 7 other ranks of its own domain are reached over NVLink; the low-latency decode kernels
    # (x_fw = 0) send a copy to each of the 8 ranks of the other domain it reaches over IB: 8 p.
    p = 1 - (15 / 16) ** 8
    vals = {"EP": 16, "G": 16, "N_su": 8, "k": 8, "M_nl": 8, "x_fw": 0}
    v = {REGISTRY[n].symbol: x for n, x in vals.items()}
    assert close(float(eq.n_dest_su.xreplace(v)), 7 * p)
    assert close(float(eq.n_dest_so.xreplace(v)), 8 * p)
    assert close(float(eq.n_dest.xreplace(v)), 15 * p)  # all remote ranks: (EP - 1) p
    # the low-latency kernels are not node-limited: M_nl = 4 does not cap them
    v[REGISTRY["M_nl"].symbol] = 4
    assert close(float(eq.n_dest_so.xreplace(v)), 8 * p)


def test_forwarding_kernels_send_one_copy_per_remote_domain():
    # DeepEP's normal kernels (prefill, x_fw = 1) send a token once to each remote domain its experts
    # reach and forward it over NVLink there.  EP 16 over 2 domains: the other domain is reached
    # unless all 8 experts fall in the sender's, 1 - (1/2)^8 = 0.99609 copies (the rank count, 8 p =
    # 3.22, was 3.2x that)
    vals = {"EP": 16, "G": 16, "N_su": 8, "k": 8, "M_nl": 8, "x_fw": 1}
    v = {REGISTRY[n].symbol: x for n, x in vals.items()}
    assert close(float(eq.n_dest_so.xreplace(v)), 1 - 0.5 ** 8)
    # EP 64 over 8 domains: 7 (1 - (7/8)^8) = 4.5947 domains on average; DeepSeek's node-limited
    # routing (M_nl = 4) caps it at 4
    v.update({REGISTRY["EP"].symbol: 64, REGISTRY["G"].symbol: 64})
    assert close(float(eq.n_dest_so.xreplace(v)), 7 * (1 - (7 / 8) ** 8))
    v[REGISTRY["M_nl"].symbol] = 4
    assert float(eq.n_dest_so.xreplace(v)) == 4
    # one domain: nothing leaves it
    v.update({REGISTRY["EP"].symbol: 8, REGISTRY["G"].symbol: 8})
    assert float(eq.n_dest_so.xreplace(v)) == 0


def test_the_busiest_rank_reads_the_most_experts():
    # lambda = 1.25: the busiest EP rank receives 1.25x the mean token-expert rows and the step waits
    # for it.  E_slots 256 over EP 8 (32 a rank), B_tok = 32 tokens (b 4 a rank, DP 8) of k = 8: at
    # the mean 32 (1 - (248/256)^32) = 20.41 experts, on the busiest rank (40 tokens' worth) 23.01
    vals = {"EP": 8, "G": 8, "k": 8, "b": 4, "s_q": 1, "TP_a": 1, "E_slots": 256}
    v = {REGISTRY[n].symbol: x for n, x in vals.items()}
    got = {}
    for lam in (1.0, 1.25):
        v[REGISTRY["lambda"].symbol] = lam
        got[lam] = float(eq.n_touched.xreplace(v))
    assert close(got[1.0], 32 * (1 - (248 / 256) ** 32)) and round(got[1.0], 2) == 20.41
    assert close(got[1.25], 32 * (1 - (248 / 256) ** 40)) and round(got[1.25], 2) == 23.01


def test_load_imbalance_needs_expert_parallelism():
    # lambda is max/mean tokens over EP ranks: with EP = 1 there is one rank, so it is 1.
    v = {REGISTRY["lambda"].symbol: 1.25, REGISTRY["EP"].symbol: 1}
    assert eq.lam_EP.xreplace(v) == 1
    v[REGISTRY["EP"].symbol] = 8
    assert eq.lam_EP.xreplace(v) == 1.25


def test_acceptance_length():
    # (1 - 0.8^3) / (1 - 0.8) = 0.488 / 0.2 = 2.44 tokens per step with 2 drafts
    assert close(float(eq.acceptance_length(0.8, 2)), 2.44)


def test_a_named_equation_with_a_max_compiles_for_arrays(monkeypatch):
    # a serving equation may hold max/min and indicators: its numpy source is printed as the step's
    # is (pairwise numpy.maximum), so a scalar and an array mix
    import numpy as np

    from planner.physics import codegen, serving_eq

    x_d, x_p = serving_eq.X_d, serving_eq.X_p
    monkeypatch.setitem(serving_eq.EQUATIONS, "_max_check", sp.Max(x_d, 2 * x_p) + eq.indicator(x_d > x_p))
    ns: dict = {"numpy": np}
    exec(codegen.named_source("_max_check"), ns)  # noqa: S102 (the generated source under test)
    out = ns["_lambdifygenerated"](np.array([1.0, 5.0]), 2.0)
    assert out.tolist() == [4.0, 6.0]


@pytest.mark.parametrize("seed", range(4))
def test_shared_experts_on_a_second_stream(seed):
    # On two streams the routed and shared experts take no less than either alone and no less than
    # the HBM time of their bytes together (and the compute time of their FLOPs together); on one,
    # the sum.  The second stream is used up to N_ss tokens per attention rank.
    vals = random_values(np.random.default_rng(seed))
    vals.update(E_s=1.0, b=8.0, s_q=1.0, x_xa=1.0)
    subs = {REGISTRY[n].symbol: sp.Float(v, 30) for n, v in vals.items()}

    def num(e, **extra):
        s = dict(subs)
        s.update({REGISTRY[n].symbol: sp.Float(v, 30) for n, v in extra.items()})
        return float(e.xreplace(s).evalf(30))

    t_e, t_s = num(eq.t_experts), num(eq.t_shared)
    hbm_both = num(eq.M_experts / (eq.eta_m * eq.B_hbm) + eq.x_xa * eq.M_act_e / (eq.eta_xa * eq.B_hbm)
                   + eq.x_xa * eq.M_tok_e / (eq.eta_xt * eq.B_hbm) + eq._shared_sides[1])
    serial, parallel = num(eq.t_ffn_moe, N_ss=4.0), num(eq.t_ffn_moe, N_ss=8.0)  # 8 tokens a rank
    assert close(serial, t_e + t_s)
    assert max(t_e, t_s, hbm_both) <= parallel * (1 + 1e-12) and parallel <= serial * (1 + 1e-12)
    # a model without shared experts (nor a latent's projections beside them): the routed experts
    # alone, either way
    assert close(num(eq.t_ffn_moe, N_ss=8.0, E_s=0.0, W_lat=0.0), num(eq.t_experts, E_s=0.0))


def test_shared_stream_threshold_by_stack_and_phase():
    # decode steps on a second stream (TensorRT-LLM every captured step, SGLang up to 1024 tokens,
    # vLLM up to 256); a prefill pass on one; bound mode always overlapped
    from planner.physics.step import shared_stream_tokens

    hw = load_hardware("hgx-h200")
    assert shared_stream_tokens(hw.with_stack("sglang"), "realistic", "decode") == 1024
    assert shared_stream_tokens(hw.with_stack("vllm"), "realistic", "decode") == 256
    assert shared_stream_tokens(hw.with_stack("trtllm"), "realistic", "decode") >= 1e9
    assert shared_stream_tokens(hw.with_stack("trtllm"), "realistic", "prefill") == 0
    assert shared_stream_tokens(hw, "bound", "prefill") >= 1e9


def test_kernels_per_pass_by_hand():
    # DeepSeek-R1: 3 dense layers of 10 + 2 + 4 kernels, 58 MoE layers of 10 + 2 + 8 + 3 (one shared
    # expert), the LM head's 4: 48 + 1334 + 4 = 1386.  gpt-oss-120b: 36 x (4 + 2 + 8) + 4 = 508.
    # Llama-3.1-70B (dense): 80 x (4 + 2 + 4) + 4 = 804.  DeepSeek-V3.2: R1's layout with an indexer of
    # 14 kernels in each of its 61 sparse layers: 1386 + 854 = 2240.
    from planner.physics.step import pass_kernels

    assert pass_kernels(load_model("deepseek-r1")) == 1386
    assert pass_kernels(load_model("gpt-oss-120b")) == 508
    assert pass_kernels(load_model("llama-3.1-70b")) == 804
    assert pass_kernels(load_model("deepseek-v3.2")) == 1386 + 61 * 14


def test_aggregated_step_waits_for_any_attention_dp_ranks_prefill_chunk():
    # A rank emits b A = 8 tokens a step with I = O = 1000, so it takes on w = 8 prompt tokens a
    # step, in chunks of C_p = 8192: a chunk in p = 8 / 8192 of its steps.  X_p = 16,000 tok/s/GPU,
    # TP_a = 1, decode step 20 ms.
    from planner.physics import compiled
    kw = dict(t_step=0.020, I=1000.0, O=1000.0, b=8.0, A=1.0, TP_a=1.0, X_p=16_000.0, C_p=8192.0)
    # one rank (or a stack that co-schedules the ranks): the w tokens spread evenly, 8 / 16,000 s
    one = compiled.evaluate_named("t_step_aggregated", D_a=1.0, phi_l=0.25, **kw)
    assert float(one) == pytest.approx(0.020 + 8 / 16_000, rel=1e-12)
    # 64 ranks stepping together: 1 - (1 - 1/1024)^64 = 0.060616 of the steps wait for the
    # rank-local quarter of a chunk (0.25 x 0.060616 x 8192 = 124.14 token-equivalents), and the
    # spread three quarters of the 8 tokens add 6: (124.14 + 6) / 16,000 = 8.134 ms
    many = compiled.evaluate_named("t_step_aggregated", D_a=64.0, phi_l=0.25, **kw)
    share = 1 - (1 - 8 / 8192) ** 64
    assert share == pytest.approx(0.060616, abs=1e-6)
    assert float(many) == pytest.approx(0.020 + (0.25 * share * 8192 + 0.75 * 8) / 16_000, rel=1e-12)
    assert float(many) == pytest.approx(0.028134, abs=1e-6)
    # a pass all spread over the ranks (phi_l = 0) does not wait: the evenly spread step again
    flat = compiled.evaluate_named("t_step_aggregated", D_a=64.0, phi_l=0.0, **kw)
    assert float(flat) == pytest.approx(float(one), rel=1e-12)
    # more prompt tokens a step than one chunk: every step carries them all, whatever D_a
    big = dict(kw, b=16_384.0)
    assert float(compiled.evaluate_named("t_step_aggregated", D_a=64.0, phi_l=0.25, **big)) == pytest.approx(
        0.020 + 16_384 / 16_000, rel=1e-12)


def test_rank_local_share_of_a_chunked_prefill_pass():
    # invariants: a dense model's pass is all rank-local (no routed experts, no all-to-all); an MoE
    # model's routed experts and their collectives are not, so its share is below 1
    from planner.physics.step import default_slots, resolve_precisions
    from planner.serving.prefill import chunked_prefill_rate
    from planner.specs.registry import load_hardware
    hw = load_hardware("hgx-b200")
    for name, lay, below in (("llama-3.1-70b", dict(G=8.0, TP_a=8.0, EP=1.0, TP_e=8.0), False),
                             ("deepseek-r1", dict(G=8.0, TP_a=1.0, EP=8.0, TP_e=1.0), True)):
        m = load_model(name)
        prec = resolve_precisions(m, hw, "fp8", None)
        slots = float(default_slots(m, lay["EP"]))
        rate, share = chunked_prefill_rate(m, hw, prec, "realistic", **lay, E_slots=slots, isl=1024.0,
                                           local_share=True)
        assert float(rate) > 0
        assert (0.0 < float(share) < 1.0) if below else float(share) == 1.0


def test_allreduce_over_hosts_takes_the_multi_node_kernel():
    # TensorRT-LLM on a 72-GPU NVLink domain of 4-GPU hosts (N_mn = 4, m_on = 1 MiB), 4.6 us per
    # pass, eta_ar 0.5 of 900 GB/s:
    # - 128 KiB over 8 GPUs: 8 x 128 KiB = 1 MiB, at the limit: one-shot, 4.6 us + 7 x 131072 /
    #   450e9 = 6.6389 us, capped by two-shot's time at the limit (a message never costs more than
    #   a larger one): 4.6 us + 2 x 7/8 x 131072 / 450e9 = 5.1097 us; 64 KiB, 4.6 us + 7 x 65536 /
    #   450e9 = 5.6194 us, capped at the same 5.1097 us; 16 KiB one-shot, 4.8549 us
    # - 256 KiB over 8: two-shot in one pass, 4.6 us + 2 x 7/8 x 262144 / 450e9 = 5.6194 us
    # - 64 MiB over 16: no custom-kernel limit, still two-shot: 4.6 us + 2 x 15/16 x 67108864 /
    #   450e9 = 284.23 us (the in-switch path at eta_nv 0.9 would take 2 x 4.6 + 67108864 /
    #   810e9 = 92.05 us)
    # - 128 KiB over 4 (one host): the host's kernel, one-shot up to m_o4 = 8 MiB, 4.6 us + 3 x
    #   131072 / 450e9 = 5.4738 us
    m, n = sp.symbols("m n", positive=True)
    r = {k: REGISTRY[k].symbol for k in ("B_su", "eta_ar", "a_ar", "N_su", "B_so", "eta_so", "a_so", "N_ar",
                                         "t_n0", "a_nc", "a_nl", "a_nm", "eta_nc", "eta_nv", "m_o4",
                                         "m_o8", "m_cu", "N_mn", "m_on", "n_sw", "x_mn")}
    mib = 1024 * 1024
    base = {r["B_su"]: 900e9, r["eta_ar"]: 0.5, r["a_ar"]: 4.6e-6, r["N_su"]: 72, r["B_so"]: 100e9,
            r["eta_so"]: 1.0, r["a_so"]: 5e-6, r["N_ar"]: 72, r["t_n0"]: 8e-6, r["a_nc"]: 2e-6,
            r["a_nl"]: 2e-6, r["a_nm"]: 2e-6, r["eta_nc"]: 0.6, r["eta_nv"]: 0.9, r["m_o4"]: 8 * mib,
            r["m_o8"]: 8 * mib, r["m_cu"]: 8 * mib, r["N_mn"]: 4, r["m_on"]: mib, **NVSWITCH,
            r["n_sw"]: 72, r["x_mn"]: 1}
    t = eq.allreduce_time(m, n)
    assert close(t.xreplace({**base, m: 131072, n: 8}), 4.6e-6 + 2 * 7 / 8 * 131072 / 450e9)
    assert close(t.xreplace({**base, m: 65536, n: 8}), 4.6e-6 + 2 * 7 / 8 * 131072 / 450e9)
    assert close(t.xreplace({**base, m: 16384, n: 8}), 4.6e-6 + 7 * 16384 / 450e9)
    assert close(t.xreplace({**base, m: 262144, n: 8}), 4.6e-6 + 2 * 7 / 8 * 262144 / 450e9)
    assert close(t.xreplace({**base, m: 64 * mib, n: 16}), 4.6e-6 + 2 * 15 / 16 * 64 * mib / 450e9)
    assert close(t.xreplace({**base, m: 131072, n: 4}), 4.6e-6 + 3 * 131072 / 450e9)
    # a stack whose kernel stops at the host (vLLM, x_mn = 0): over 8 GPUs every size takes the
    # large path, here the switch's reduction, 2 x 4.6 us + 256 / 810e9 (NCCL's ring: 8 us + 2 x 7 x
    # 2 us + ... = 36 us); 64 MiB, 9.2 us + 67108864 / 810e9 = 92.05 us
    vllm = {**base, r["x_mn"]: 0}
    assert close(t.xreplace({**vllm, m: 256, n: 8}), 9.2e-6 + 256 / 810e9)
    assert close(t.xreplace({**vllm, m: 64 * mib, n: 16}), 9.2e-6 + 64 * mib / 810e9)
    assert close(t.xreplace({**vllm, m: 131072, n: 4}), 4.6e-6 + 3 * 131072 / 450e9)  # one host: its kernel
    # the same rule compiled, as the step model evaluates it
    from planner.physics.operators import compile_operator

    names = {v.symbol: k for k, v in REGISTRY.items()}
    got = compile_operator("allreduce")(x=np.array([131072.0, 262144.0]), n_g=np.array([8.0, 8.0]),
                                        **{names[s]: float(v) for s, v in base.items()})
    assert np.allclose(got, [4.6e-6 + 2 * 7 / 8 * 131072 / 450e9, 4.6e-6 + 2 * 7 / 8 * 262144 / 450e9],
                       rtol=1e-9)
