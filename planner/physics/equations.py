"""The closed-form step model, in sympy.  Each equation lives here once.

Conventions: per GPU, per layer unless the name says otherwise; SI units (s, B, FLOP, B/s,
FLOP/s).  Notation: :mod:`planner.physics.symbols` (``docs/physics.md`` section 1).  The numeric path
(:mod:`planner.physics.compiled`) lambdifies these very expressions; nothing is re-typed.

One step processes ``b`` sequences on every attention-DP rank, ``s_q`` query tokens each
(decode: 1 + draft tokens, reading a KV cache of mean length ``S``; prefill: the whole prompt,
``s_q = I`` with mean causal context ``S = I/2``).  The same expressions therefore give a decode
step and a prefill forward pass.

Every operator's time is a roofline, ``max(F / (eta_c P), M / (eta_m B_hbm)) + tau_k``, summed
over operators (a max per operator, then a sum; physics.md section 2).  In realistic mode each
operator instead follows the law fitted to the stack's measured kernels of its kind where the spec
carries one, the same expression the kernel scorecard (:mod:`planner.physics.operators`) scores
them with: the dense GEMMs (attention projections, dense FFN, shared experts, LM head, draft head)
the GEMM law (``x_g = 1``: :func:`gemm_operator`); the routed experts the grouped-MoE law
(``x_xa = 1``: :func:`moe_parts`, each touched expert's rows padded to its tile, the weight stream
at ``eta_em``, the FLOPs at ``eta_ce``, plus the per-row and per-token activation passes); a decode
step's attention core the decode attention law for the model's attention kind and KV dtype
(``x_al = 1``: :func:`decode_attention_law`, with its kernel's KV splits and head tiles), a prefill
pass's the prefill attention law (``eta_fa``, ``S_a0`` context tokens' worth of work per query
row, softmax exponentials at ``X_sm``); the all-to-all and the all-reduce their communication laws.
Each law's per-kernel floor is replaced by ``tau_k`` per kernel (fitted to the runs: inside a
serving stack's CUDA graph a kernel costs what the others do).  ``eta_c`` and ``eta_m``, fitted to
the runs, price only what no law covers.  ``bound`` mode sets every eta to 1, every latency and
``S_a0`` to 0 and ``X_sm`` to infinity: the speed of light.
"""

from __future__ import annotations

import sympy as sp

from planner.physics.symbols import (
    EP,
    GEMM_LAW,
    A,
    B_c2c,
    B_hb,
    B_hbm,
    B_so,
    B_su,
    C_hbm,
    C_host,
    E_s,
    E_slots,
    F_lt,
    G,
    K_y,
    K_z,
    M_nl,
    M_ws,
    N_ar,
    N_mn,
    N_sm,
    N_ss,
    N_su,
    P_a,
    P_c,
    P_d,
    P_e,
    P_v,
    S,
    S_a0,
    S_c,
    S_k,
    S_w,
    TP_a,
    TP_e,
    V,
    V_dr,
    W_attn,
    W_lat,
    W_rep,
    X_sm,
    a_a2a,
    a_ar,
    a_comb,
    a_disp,
    a_nc,
    a_nl,
    a_nm,
    a_so,
    b,
    b_a,
    b_comb,
    b_disp,
    b_kv,
    b_wa,
    b_wd,
    b_we,
    b_wv,
    beta_c,
    c_att,
    c_x,
    c_z,
    d,
    d_e,
    d_I,
    e_kv,
    e_q,
    eta_a,
    eta_a2a,
    eta_am,
    eta_ar,
    eta_c,
    eta_ce,
    eta_em,
    eta_fa,
    eta_hb,
    eta_m,
    eta_nc,
    eta_nv,
    eta_o,
    eta_so,
    eta_xa,
    eta_xt,
    f_d,
    f_dr,
    f_e,
    h,
    h_I,
    k,
    kappa_lc,
    lam,
    m_cu,
    m_I,
    m_o4,
    m_o8,
    m_on,
    m_st,
    n_blk,
    n_d,
    n_emb,
    n_fuse,
    n_hdr,
    n_ht,
    n_ka,
    n_kc,
    n_kd,
    n_ke,
    n_kh,
    n_ks,
    n_kvh,
    n_kx,
    n_L,
    n_Ld,
    n_Ldr,
    n_lk,
    n_mtp,
    n_mx,
    n_sub,
    n_sw,
    o_tbo,
    phi_a,
    phi_fl,
    phi_lm,
    phi_rp,
    phi_w,
    phi_x,
    phi_z,
    r_mem,
    s_h,
    s_kv,
    s_q,
    t_c,
    t_fixed,
    t_m,
    t_m0,
    t_n,
    t_n0,
    t_q,
    t_qt,
    t_r,
    tau_k,
    tau_q,
    x_al,
    x_cw,
    x_fw,
    x_g,
    x_mem,
    x_mn,
    x_mtp,
    x_nvls,
    x_off,
    x_tor,
    x_xa,
)


def _max(*args: sp.Expr) -> sp.Expr:
    """``Max`` left unevaluated: sympy's Max simplifier compares every pair of arguments
    symbolically, which made importing this module take seconds and changes nothing here."""
    return sp.Max(*args, evaluate=False)


def _min(*args: sp.Expr) -> sp.Expr:
    """``Min`` left unevaluated (see :func:`_max`)."""
    return sp.Min(*args, evaluate=False)


def at(expr: sp.Expr, values: dict[sp.Symbol, sp.Expr]) -> sp.Expr:
    """``expr`` with ``values`` substituted, without re-simplifying (``subs`` would re-evaluate
    every Max; the result is the same function)."""
    with sp.evaluate(False):
        return expr.xreplace(values)


def roofline(F: sp.Expr, M: sp.Expr, P: sp.Expr, n_kernels: sp.Expr = 1) -> sp.Expr:
    """Time of one operator: ``max(F / (eta_c P), M / (eta_m B_hbm)) + n_k tau_k``  [s].

    F in FLOP, M in bytes moved to/from HBM, P the dense peak of the compute dtype; the operator
    runs as ``n_k`` kernels, each with a fixed cost ``tau_k`` (under CUDA graphs a small kernel
    still costs its launch and ramp: the latency floor counts kernels, not operators).
    Source: the roofline model (Williams et al., CACM 2009); physics.md section 2.
    """
    return _max(F / (eta_c * P), M / (eta_m * B_hbm)) + n_kernels * tau_k


def _pad(rows: sp.Expr) -> sp.Expr:
    """Factor by which padding ``rows`` to whole MMA tiles of ``t_m`` rows multiplies the FLOPs."""
    return sp.ceiling(rows / t_m) * t_m / rows


def waves(rows: sp.Expr, cols: sp.Expr) -> sp.Expr:
    """Wave quantization of a GEMM of ``rows`` x ``cols`` outputs: its ``ceil(rows / t_m)
    ceil(cols / t_n)`` output tiles run ``N_sm`` at a time, so it takes ``ceil(tiles / N_sm)``
    waves where the work fills ``tiles / N_sm`` of them; the factor ``ceil(tiles / N_sm) N_sm /
    tiles >= 1`` (1 with ``N_sm = 1``).  Source: the tile and wave quantization of NVIDIA's GPU
    performance background (Matrix Multiplication Background User's Guide, "Tile Quantization",
    "Wave Quantization")."""
    tiles = _max(sp.ceiling(rows / t_m) * sp.ceiling(cols / t_n), 1)
    return sp.ceiling(tiles / N_sm) * N_sm / tiles


def gemm_compute(F: sp.Expr, P: sp.Expr, rows: sp.Expr, cols: sp.Expr, law: dict[str, sp.Expr]
                 ) -> sp.Expr:
    """The compute side of the GEMM law [s]: ``F_pad (1 + w_g (Q - 1)) / (eta_g P)``, the FLOPs
    ``F`` of ``rows`` padded to whole tiles, the share ``w_g`` of the wave quantization ``Q``
    (:func:`waves`) the kernel pays, at the fitted fraction ``eta_g`` of the peak ``P``."""
    return F * _pad(rows) * (1 + law["w_g"] * (waves(rows, cols) - 1)) / (law["eta_g"] * P)


def gemm_law(F: sp.Expr, M: sp.Expr, P: sp.Expr, rows: sp.Expr, cols: sp.Expr, k_in: sp.Expr,
             law: dict[str, sp.Expr], n_gemm: sp.Expr = 1) -> sp.Expr:
    """The GEMM law fitted to measured GEMM kernels (``moe-planner calibrate --kernels``)  [s]:
    ``max(F_pad (1 + w_g (Q - 1)) / (eta_g P), M / (eta_gm B_hbm)) + cast + n_gemm t_g0``, with
    ``F_pad`` the FLOPs of ``rows`` padded to whole tiles of ``t_m`` rows,
    ``Q`` the wave quantization of the ``rows`` x ``cols`` output (:func:`waves`) of which the
    kernel pays the share ``w_g`` (0: split-K or stream-K kernels fill the last wave; 1: the idle
    SMs of the last wave are lost whole), the cast of the BF16 activations (``rows k_in``
    elements, ``b_q`` bytes each: read and written in the GEMM's input dtype; 0 for a BF16 GEMM)
    as a second HBM pass, or where more its CTAs, one per row of ``t_gq`` SM time each, ``N_sm`` at
    a time (``max(rows k_in b_q / (eta_q B_hbm), rows t_gq / N_sm)``), and a floor per GEMM kernel
    (launch, prologue, the HBM latency before the stream ramps).  ``law``: the fitted constants
    (``eta_g``, ``eta_gm``, ``w_g``, ``eta_q``, ``b_q``, ``t_gq``, ``t_g0``)."""
    cast = _max(rows * k_in * law["b_q"] / (law["eta_q"] * B_hbm), rows * law["t_gq"] / N_sm)
    stream = M / (law["eta_gm"] * B_hbm)
    return _max(gemm_compute(F, P, rows, cols, law), stream) + cast + n_gemm * law["t_g0"]


def gemm_parts(F: sp.Expr, M: sp.Expr, P: sp.Expr, rows: sp.Expr, cols: sp.Expr,
               cls: str) -> tuple[sp.Expr, sp.Expr]:
    """(compute, memory) sides of a dense-GEMM operator of class ``cls``: the roofline's
    (x_g = 0) or the GEMM law's (x_g = 1), for saying which resource binds it."""
    g = GEMM_LAW[cls]
    return ((1 - x_g) * F / (eta_c * P) + x_g * gemm_compute(F, P, rows, cols, g),
            (1 - x_g) * M / (eta_m * B_hbm) + x_g * M / (g["eta_gm"] * B_hbm))


def gemm_operator(F: sp.Expr, M: sp.Expr, P: sp.Expr, rows: sp.Expr, cols: sp.Expr, cls: str,
                  n_kernels: sp.Expr) -> sp.Expr:
    """Time of an operator of ``n_kernels`` kernels whose work is dense GEMMs on ``rows`` tokens
    with ``cols`` output columns in all [s].

    x_g = 0: the roofline, :func:`roofline`.  x_g = 1: the throughput of the GEMM law fitted to
    measured GEMM kernels of the class's dtype on this GPU and stack (:data:`GEMM_LAW`: class ``a``
    attention projections, ``d`` dense FFN, shared experts and draft head, ``v`` LM head), rows
    padded to whole tiles and the tiles counted in waves (:func:`gemm_parts`; the operator's GEMMs
    taken as one of ``cols`` columns, so the waves of the whole operator, not of each of its GEMMs,
    are counted), and ``tau_k`` per kernel.  The law's per-kernel
    floor and its activation-cast pass are left out: they are what a GEMM timed alone pays (its
    launch, and a separate kernel that quantizes the BF16 input), while inside a serving stack's
    CUDA graph the quantization is fused into the norm before it and a GEMM kernel costs what the
    other kernels do, ``tau_k``, fitted to the measured runs."""
    c, m = gemm_parts(F, M, P, rows, cols, cls)
    return _max(c, m) + n_kernels * tau_k


def indicator(condition: sp.Basic) -> sp.Expr:
    """1 where ``condition`` holds, else 0 (a factor that switches a term on or off)."""
    return sp.Piecewise((1, condition), (0, True))


def below(x: sp.Expr, limit: sp.Expr) -> sp.Expr:
    """1 where ``x < limit``, else 0, as ``Heaviside(limit - x, 0)``: unlike :func:`indicator`, a
    ``x`` that holds a Piecewise (a message size with an expert-parallel branch) is not folded
    into the condition, which would copy ``x`` into each branch."""
    return sp.Heaviside(limit - x, 0)


def link_time(V_bytes: sp.Expr, B: sp.Expr, eta: sp.Expr, alpha: sp.Expr) -> sp.Expr:
    """Alpha-beta time of one message phase: ``alpha + V / (eta B)``  [s] (Hockney 1994)."""
    return alpha + V_bytes / (eta * B)


# ---- tokens -------------------------------------------------------------------------------
#: Global tokens per step in the instance, B_tok = b s_q G / TP_a (DP_a = G / TP_a ranks).
B_tok = b * s_q * G / TP_a
#: Load imbalance that applies: lambda is max/mean tokens over the EP ranks, so 1 when EP = 1
#: (every GPU then holds every expert and sees every token).
lam_EP = 1 + (lam - 1) * indicator(EP > 1)
#: Tokens arriving at the busiest expert-parallel rank: T_e = lambda B_tok k / EP.
T_e = lam_EP * B_tok * k / EP
#: Context rows each query reads, per layer on average over the layer kinds: of the phi_a attention
#: layers per layer (1 but in hybrids), a full one reads S, a sliding-window one min(S, S_w), a
#: sparse one the top S_k of its S / c_x rows that its indexer picks (c_x tokens a row where the KV
#: is compressed, else 1), a compressed one all of its S / c_z rows, and the compressed ones also
#: their window of raw tokens where they keep one (x_cw); a linear mixer none (its state stands for
#: the context): (phi_a - phi_w - phi_x - phi_z) S + phi_w min(S, S_w) + phi_x min(S / c_x, S_k)
#: + phi_z S / c_z + x_cw (phi_x + phi_z) min(S, S_w).
S_eff = ((phi_a - phi_w - phi_x - phi_z) * S + phi_w * _min(S, S_w) + phi_x * _min(S / c_x, S_k)
         + phi_z * S / c_z + x_cw * (phi_x + phi_z) * _min(S, S_w))
#: The rows *held* in the KV cache, per layer on average (S_c = S in decode, the whole prompt in
#: prefill, where the mean causal context S is half the prompt): a sparse layer keeps every row
#: (the next query may pick any), a sliding layer its window, a compressed one its S_c / c rows
#: and its window, a linear mixer none.
S_c_eff = ((phi_a - phi_w - phi_x - phi_z) * S_c + phi_w * _min(S_c, S_w) + phi_x * S_c / c_x
           + phi_z * S_c / c_z + x_cw * (phi_x + phi_z) * _min(S_c, S_w))

# ---- attention -----------------------------------------------------------------------------
#: Attention weights one attention-TP rank holds: the split part W_attn - W_rep divided by TP_a,
#: plus W_rep whole.  Serving stacks (vLLM, SGLang, TensorRT-LLM) replicate MLA's low-rank
#: down-projections q_a and kv_a on every TP rank rather than splitting them.
W_attn_rank = W_rep + (W_attn - W_rep) / TP_a
#: Attention projections: FLOPs 2 b s_q W_attn_rank; weights W_attn_rank b_wa read once.
F_attn_proj = 2 * b * s_q * W_attn_rank
M_attn_proj = W_attn_rank * b_wa
#: ... as one GEMM of d input rows: W_attn_rank / d output columns (for its waves)
N_attn_proj = W_attn_rank / d
t_attn_proj = gemm_operator(F_attn_proj, M_attn_proj, P_a, b * s_q, N_attn_proj, "a", n_ka)

#: Attention core FLOPs: 2 b s_q (h / TP_a) S c_att.  MLA absorbed: c_att = 2 r_kv + d_r
#: (FlashMLA deep-dive: 2 h_q s_q s_k (d_k + d_v), d_k = 576, d_v = 512).
F_attn_core = 2 * b * s_q * (h / TP_a) * S_eff * c_att
#: KV bytes read: b S e_kv b_kv / s_kv.  MLA latent KV is not split by attention TP (s_kv = 1);
#: GQA KV splits by KV heads up to h_kv ranks.
M_kv_read = b * S_eff * e_kv * b_kv / s_kv
#: Attention-core work each query row does beyond its context, in the same FLOP units:
#: 2 b s_q (h / TP_a) S_a0 c_att (a prefill kernel's per-row fixed work, measured as S_a0 context
#: tokens' worth; 0 in decode and in bound mode).
F_attn_row = 2 * b * s_q * (h / TP_a) * S_a0 * c_att
#: Softmax exponentials of the attention core, one per score (query row x key x head on this GPU),
#: the per-row work counted as S_a0 keys: b s_q (h / TP_a) (S_eff + S_a0).  Their time, N_exp / X_sm,
#: adds to the MMAs' (a score costs c_att MMA FLOPs but one exponential whatever the head size, so
#: at d_head = 64 the exponentials weigh twice what they do at 128; FlashAttention-3, Shah et al.
#: 2024: the H100 SXM5's 989 TFLOP/s of BF16 MMA against 3.9 TFLOP/s of exponentials).
N_exp = b * s_q * (h / TP_a) * (S_eff + S_a0)
#: The longest CTA of a prefill (causal) attention kernel: the last query tile of a prompt, t_qt
#: rows of one head attending the whole prompt S_c_eff (and their per-row work), on one SM:
#: N_sm times its work at the kernel's rate.  A greedy schedule of uneven CTAs ends at most one
#: such CTA after the GPU's share of the total (Graham's list-scheduling bound), the share
#: kappa_lc of it as measured: it binds where few heads and prompts leave few CTAs (one prompt
#: of 16k tokens and one head on the GPU: 128 tiles for 148 SMs, the law otherwise 2.5x fast).
#: 0 in decode and bound mode (kappa_lc = 0).
F_attn_lc = 2 * _min(s_q, t_qt) * (S_c_eff + S_a0) * c_att
N_exp_lc = _min(s_q, t_qt) * (S_c_eff + S_a0)
t_attn_lc = kappa_lc * N_sm * (F_attn_lc / (eta_fa * P_c) + N_exp_lc / X_sm)
t_attn_compute = (F_attn_core + F_attn_row) / (eta_fa * P_c) + N_exp / X_sm + t_attn_lc

# ---- sparse attention's indexer and linear mixers (per layer, on average over the layers) -------
#: The indexer of a sparse-attention layer (DeepSeek-V3.2's lightning indexer) scores every cached
#: row for each query: 2 b s_q (h_I / TP_a) d_I S / c_x FLOPs at the attention GEMMs' precision,
#: over its own key cache of m_I bytes per row, b S m_I / c_x read (one key head, not split by TP,
#: as MLA's latent; c_x = 1 but where the KV is compressed).  Its cost still grows with the whole
#: context, as dense attention's did, but with few heads in FP8 (DeepSeek-V3.2-Exp's
#: inference/model.py: 64 heads of 128).  It runs as n_kx small kernels on its critical path, tau_k
#: each.
F_index = 2 * b * s_q * (h_I / TP_a) * d_I * S / c_x
M_index = b * S / c_x * m_I
t_index = phi_x * (_max(F_index / (eta_fa * P_a), M_index / (eta_m * B_hbm)) + n_kx * tau_k)
#: A linear mixer (gated DeltaNet, KDA, Mamba-2) per step: F_lt FLOPs per token, and its state read
#: and written once per pass, 2 b m_st / TP_a bytes, whatever the context (Yang et al. 2024, Gated
#: Delta Networks; Dao and Gu 2024, Mamba-2: the recurrent form keeps one state per head).
F_linear = b * s_q * F_lt / TP_a
M_linear = 2 * b * m_st / TP_a
t_linear = phi_lm * _max(F_linear / (eta_fa * P_c), M_linear / (eta_m * B_hbm))

def expert_flops(rows: sp.Expr) -> sp.Expr:
    """FLOPs of ``rows`` token-expert rows through a routed expert's n_mx d_e x f_e / TP_e
    matrices (gate, up, down: n_mx = 3; up, down: 2): ``2 n_mx d_e f_e rows / TP_e`` (d_e = d but in
    a latent MoE)."""
    return 2 * n_mx * d_e * f_e * rows / TP_e


def expert_weight_bytes(experts: sp.Expr) -> sp.Expr:
    """Weight bytes of ``experts`` routed experts on one GPU: ``experts n_mx d_e f_e b_we / TP_e``."""
    return experts * n_mx * d_e * f_e * b_we / TP_e


# ---- memory capacity -------------------------------------------------------------------------
#: Weight bytes held per GPU: attention, dense FFN and shared experts split by TP_a; routed
#: expert slots split E_slots / EP per GPU and by TP_e; embeddings and LM head split by TP_a;
#: each MTP module held is one MoE layer plus its 2d x d projection.
M_weights = (
    n_L * W_attn_rank * b_wa
    + n_Ld * n_mx * d * f_d * b_wd / TP_a
    + (n_L - n_Ld) * (E_s * n_mx * d * f_e + W_lat) * b_wd / TP_a
    + (n_L - n_Ld) * expert_weight_bytes(E_slots / EP)
    + n_emb * V * d * b_wv / TP_a
    + n_mtp * (W_attn_rank * b_wa + expert_weight_bytes(E_slots / EP)
               + (E_s * n_mx * d * f_e + W_lat) * b_wd / TP_a + 2 * d * d * b_wa / TP_a)
    # a draft head: its decoder layers (the verifier's attention shape, a dense FFN of f_dr), the
    # projection fusing n_fuse hidden states, and its own LM head if it has one
    + n_Ldr * (W_attn_rank * b_wa + 3 * d * f_dr * b_wd / TP_a)
    + (n_fuse * d * d * b_wd + n_hdr * V_dr * d * b_wv) * _min(n_Ldr, 1) / TP_a
)
#: Cache bytes one sequence holds per GPU: its KV, S_c_eff e_kv b_kv n_L / s_kv; the indexer keys
#: of the sparse layers, phi_x n_L S_c m_I / c_x; the linear mixers' states, phi_lm n_L m_st / TP_a.
m_seq = S_c_eff * e_kv * b_kv * n_L / s_kv + n_L * (phi_x * S_c / c_x * m_I + phi_lm * m_st / TP_a)
#: KV-cache bytes per GPU: b m_seq (without sparse or linear layers, b S_c e_kv b_kv n_L / s_kv).
M_kv = b * m_seq
#: HBM the serving stack gives its KV pool: x_mem ((1 - r_mem) C_hbm - weights - workspace), the
#: budget the stack leaves (vLLM: gpu_memory_utilization of the whole HBM) less the weights and the
#: workspace it profiles, of which it takes x_mem (TensorRT-LLM: free_gpu_memory_fraction of the
#: memory free after weights and the profiled pass).
C_free = x_mem * ((1 - r_mem) * C_hbm - M_weights - M_ws)
#: Fraction of the KV cache that spills to CPU-attached memory (second tier), when allowed.
phi_h = x_off * _max(0, M_kv - _max(C_free, 0)) / M_kv
#: Largest b that fits: in HBM alone, or HBM + CPU-attached memory when spilling is allowed.
b_max = (_max(C_free, 0) + x_off * C_host) / m_seq

#: The spilled fraction's read over the host link (the host tier, read beside HBM).
t_kv_host = phi_h * M_kv_read / (eta_m * B_c2c)
#: KV bytes of the per-row work of a decode kernel: S_a0 context tokens' worth of each sequence's
#: cache, not windowed (0 where S_a0 is: GQA decode, bound mode).
M_attn_row = b * S_a0 * e_kv * b_kv / s_kv


def decode_attention_law(F: sp.Expr, M: sp.Expr, ctas: sp.Expr, q_elems: sp.Expr,
                         row_blocks: sp.Expr = 0, per_cta: sp.Expr = 0, host: sp.Expr = 0) -> sp.Expr:
    """The decode attention kernels' law, less its per-kernel floor  [s]: the FLOPs ``F`` at
    ``eta_a`` of the peak, the KV bytes ``M`` at ``eta_am`` of HBM bandwidth (and the ``host`` read
    beside it), the ``row_blocks`` blocks' own work ``t_r`` each, or one CTA's share of the stream
    ``per_cta`` (:func:`planner.physics.operators._gqa_law`), whichever is longest; plus the SM time
    of the split-KV grid, ``n_sub`` CTAs per block of the ``ctas`` blocks, ``t_c`` each and ``t_q``
    per element of the ``q_elems`` query-head elements they load, ``N_sm`` at a time.  Fitted to
    measured MLA and GQA decode kernels (``moe-planner calibrate --kernels``; operators
    ``attn_mla_law``, ``attn_gqa_law``, which add the floor ``t_a0``); a decode step composes it
    (:data:`t_attn_core`, ``x_al = 1``) with ``n_kc tau_k`` for its kernels instead of the floor."""
    stream = _max(F / (eta_a * P_c), M / (eta_am * B_hbm), host, row_blocks * t_r, per_cta)
    return stream + n_sub * (ctas * t_c + q_elems * t_q) / N_sm


#: A decode step's attention core under the stack's decode attention law (x_al = 1): the FLOPs and
#: the per-row work (S_a0 context tokens' worth, MLA), the KV read repeated by the head tiles that
#: each stream it (n_ht, a share phi_rp of each further pass from HBM), the kernel's b n_blk
#: blocks, each KV head's stream split over n_sub CTAs, its b s_q (h / TP_a) query heads of e_q
#: elements.
t_attn_law = decode_attention_law(
    F_attn_core + F_attn_row,
    (1 - phi_h) * (M_kv_read + M_attn_row) * (1 + phi_rp * (n_ht - 1)),
    b * n_blk, b * s_q * (h / TP_a) * e_q, row_blocks=b * n_blk,
    per_cta=M_kv_read / (b * n_kvh * n_sub * beta_c), host=t_kv_host)
#: Attention core time: compute, or the KV read from HBM and (in parallel) from the host tier
#: (the spilled fraction phi_h of every sequence's cache is read over the host link); in a decode
#: step with the stack's decode attention law (x_al = 1), that law.  Plus, where the model has
#: them, the sparse layers' indexer and the linear mixers (both 0 otherwise).
t_attn_core = (1 - x_al) * _max(
    t_attn_compute,
    (1 - phi_h) * M_kv_read / (eta_m * B_hbm),
    t_kv_host,
) + x_al * t_attn_law + n_kc * tau_k + t_index + t_linear

# ---- FFN: routed experts, shared experts, dense layers, LM head ---------------------------
#: Expected distinct expert slots touched on the busiest GPU, which holds E_slots / EP of them and
#: receives lambda times the mean token-expert rows, uniform routing over its experts:
#: (E_slots / EP) (1 - (1 - k / E_slots)^(lambda B_tok)).  Small batches are weight-read bound, and
#: the step waits for the rank that reads the most.
n_touched = (E_slots / EP) * (1 - (1 - k / E_slots) ** (lam_EP * B_tok))


F_experts = expert_flops(T_e)
M_experts = expert_weight_bytes(n_touched)


def moe_tile(rows: sp.Expr, experts: sp.Expr) -> sp.Expr:
    """Rows of the tile a grouped GEMM runs each of ``experts`` touched experts on, given ``rows``
    token-expert rows in all: the smallest power of two from ``t_m0`` up to ``t_m`` that holds an
    expert's mean rows (the kernels size the tile to the rows; planner.truth.kernels.moe_tile)."""
    per = _max(rows / _max(experts, 1), 1)
    return _min(_max(2 ** sp.ceiling(sp.log(per, 2)), t_m0), t_m)


def moe_parts(rows: sp.Expr, experts: sp.Expr, tile: sp.Expr, eta_compute: sp.Expr,
              pad: sp.Expr = 1) -> tuple[sp.Expr, sp.Expr]:
    """(compute, weights) of a grouped-MoE layer on one rank  [s]: the FLOPs of its ``rows``
    token-expert rows, every one of the ``experts`` touched experts run on at least one whole
    ``tile`` of rows (``pad = 1``; 0: no padding, the roofline), at ``eta_compute`` of the peak
    ``P_e``; the touched experts' weights at ``eta_em`` of HBM bandwidth.  The grouped-MoE kernels'
    law (operator ``moe_law``, fitted to measured kernels) and the step's routed experts
    (:data:`t_experts`) are both this."""
    padded = rows + pad * (_max(rows, experts * tile) - rows)
    return expert_flops(padded) / (eta_compute * P_e), expert_weight_bytes(experts) / (eta_em * B_hbm)


def expert_activation_bytes(rows: sp.Expr) -> sp.Expr:
    """BF16 bytes ``rows`` token-expert rows move through HBM between a grouped-MoE layer's kernels
    (the grouped GEMMs, the gated activation, the permute and the combine): each row's input gathered
    in (d) and its output written (d), its gate/up product (2 f_e / TP_e) written by the first GEMM and
    read back by the activation: ``rows (2 d_e + 4 f_e / TP_e) 2`` B (a plain expert, n_mx = 2, writes
    and reads its f_e-wide up projection: 2 f_e instead of 4 f_e).  Fitted to measured grouped-MoE
    kernels (``operators.moe_law``), where it is what a row costs beyond its FLOPs at prefill sizes."""
    return rows * 2 * (2 * d_e + 2 * (n_mx - 1) * f_e / TP_e)


def expert_token_bytes(tokens: sp.Expr) -> sp.Expr:
    """BF16 bytes each token of a grouped-MoE layer moves once, whatever its rows: its
    hidden state read (d) and its combined output written (d): ``tokens 2 d 2`` B.  Fitted to
    measured grouped-MoE kernels (``operators.moe_law``) at its own fraction of HBM bandwidth, which
    also carries the layer's per-token routing and permutation work; it binds where few of the
    tokens' rows stay on the rank (wide EP) or the rows are narrow (wide expert TP); d_e wide in a
    latent MoE."""
    return tokens * 2 * 2 * d_e


M_act_e = expert_activation_bytes(T_e)
#: ... per token on the GPU its attention runs on, b s_q: a token's hidden state is read and its
#: combined output written where it lives (the measured kernels' rank holds every token it
#: routes; in serving the all-to-all dispatch hands the expert ranks rows, and the combine's
#: weighted sum lands on the token's own GPU)
M_tok_e = expert_token_bytes(b * s_q)
#: The routed experts' activation passes (x_xa = 1: realistic mode with a grouped-MoE law): the
#: busiest rank's rows' traffic at the law's fraction eta_xa of HBM bandwidth, its own tokens' at
#: eta_xt.
t_act_e = x_xa * (M_act_e / (eta_xa * B_hbm) + M_tok_e / (eta_xt * B_hbm))
#: The grouped GEMMs of the routed experts: the grouped-MoE law's compute (each touched expert's rows
#: padded to its tile where the stack carries the law, x_xa = 1) and weight stream, plus its
#: activation passes, and n_ke tau_k for the layer's kernels instead of the law's floor.
t_experts_c, t_experts_m = moe_parts(T_e, n_touched, moe_tile(T_e, n_touched), eta_ce, pad=x_xa)
t_experts = _max(t_experts_c, t_experts_m) + t_act_e + n_ke * tau_k

#: Shared experts, E_s n_mx d f_e weights, and a latent MoE's projections into and out of the latent
#: width, W_lat: dense GEMMs on every token of the attention rank.
F_shared = 2 * (E_s * n_mx * d * f_e + W_lat) * b * s_q / TP_a
M_shared = (E_s * n_mx * d * f_e + W_lat) * b_wd / TP_a
#: Shared experts (none when E_s = 0: no kernel, no tau_k).
N_shared = (E_s * n_mx * f_e + W_lat / d) / TP_a  #: output columns (as one GEMM of d input rows)
t_shared = gemm_operator(F_shared, M_shared, P_d, b * s_q, N_shared, "d", n_ks * _min(1, E_s))

F_dense_ffn = 2 * n_mx * d * f_d * b * s_q / TP_a
M_dense_ffn = n_mx * d * f_d * b_wd / TP_a
N_dense_ffn = n_mx * f_d / TP_a
t_dense_ffn = gemm_operator(F_dense_ffn, M_dense_ffn, P_d, b * s_q, N_dense_ffn, "d", n_kd)

F_head = 2 * b * s_h * V * d / TP_a
M_head = V * d * b_wv / TP_a
N_head = V / TP_a
t_head = gemm_operator(F_head, M_head, P_v, b * s_h, N_head, "v", n_kh)

# ---- communication -----------------------------------------------------------------------------
#: Probability that a given EP rank receives a given token, uniform routing of k experts over
#: EP ranks: p = 1 - (1 - 1/EP)^k, so D = EP p distinct destination ranks (physics.md sec. 2).
p_dest = 1 - (1 - 1 / EP) ** k
#: Expected *remote* destination ranks per token: D (1 - 1/EP) = (EP - 1) p.
n_dest = (EP - 1) * p_dest
#: Share of expert-parallel ranks outside the sender's scale-up domain.  The instance's G GPUs
#: span G / N_su domains and an EP rank (TP_e GPUs) never straddles one, so the share is
#: max(0, 1 - N_su / G) (= 1 - N_su / EP when TP_e = 1).
frac_so = _max(0, 1 - N_su / G)
#: Scale-up domains the instance spans: G / N_su (1 inside one domain).
n_dom = _max(G / N_su, 1)
#: Remote domains a token reaches, uniform routing of its k experts over the domains:
#: (n_dom - 1) (1 - (1 - 1/n_dom)^k), at most M_nl under node-limited routing.
n_dom_so = _min((n_dom - 1) * (1 - (1 - 1 / n_dom) ** k), M_nl)
#: Copies sent over scale-out.  Kernels that forward inside a domain (x_fw = 1: DeepEP's normal
#: kernels, which prefill runs) send one copy per remote domain reached, n_dom_so, and the domain's
#: NVLink takes it to each expert there; the low-latency decode kernels (x_fw = 0) send one copy per
#: remote destination GPU: the EP frac_so ranks outside the sender's domain, each hit with
#: probability p_dest.
n_dest_so = x_fw * n_dom_so + (1 - x_fw) * EP * frac_so * p_dest
#: Destinations inside the sender's domain, itself excluded: EP min(1, N_su / G) - 1 ranks.
#: (Splitting n_dest by frac_so instead would put the sender's own rank in the denominator and
#: undercount scale-out traffic by a factor (EP - 1) / EP.)
n_dest_su = _max(0, EP * (1 - frac_so) - 1) * p_dest
#: Tokens each GPU sends: its 1/TP_a share of its attention rank's b s_q tokens.
b_send = b * s_q / TP_a
#: GPUs of the instance in the sender's scale-up domain: min(G, N_su).
G_su = _min(G, N_su)
#: Share of the sender's in-domain peers that sit under another switch of the scale-up fabric, so
#: that its traffic to them leaves its switch and crosses the host (PCIe: the root complex and, on
#: two sockets, the inter-socket link): (G_su - min(n_sw, G_su)) / (G_su - 1), uniform routing over
#: the peers.  0 in an NVSwitch domain (n_sw = N_su) and inside one PCIe switch.
phi_hb = (G_su - _min(n_sw, G_su)) / _max(G_su - 1, 1)


def _ring_distance_sum(k: sp.Expr) -> sp.Expr:
    """Hops from one chip of a bidirectional ring of ``k`` chips to all the others: floor(k^2 / 4)
    (k = 8: 1 + 1 + 2 + 2 + 3 + 3 + 4 = 16)."""
    return sp.floor(k ** 2 / 4)


#: The instance's sub-torus of G_su chips: filled along z, then y, then x of the domain's shape.
k_tz = _min(K_z, G_su)
k_ty = _min(K_y, G_su / k_tz)
k_tx = G_su / (k_ty * k_tz)


def torus_a2a_seconds_per_byte() -> sp.Expr:
    """Seconds per byte a chip sends in a uniform all-to-all over its instance's torus of G_su
    chips, at full link bandwidth: a byte to a chip d_i hops away along dimension i loads d_i links
    of that dimension; over all destinations a chip's bytes make (G_su / k_i) floor(k_i^2 / 4) /
    (G_su - 1) hops per byte along dimension i (:func:`_ring_distance_sum`), carried by the 2 links
    (one each way) every chip has in that dimension, each B_su / n_lk per direction.  Dimensions run
    on their own links at once, so the busiest one sets the time.  Averaged over dimensions this is
    the mean hop count over the B_su / n_lk of 2 links x 3 dimensions: never less than a switch's
    1 / B_su at the same per-chip bandwidth.  (A slice below a full ring has no wrap-around link
    and is taken as a ring all the same: optimistic there.)"""
    B_l = B_su / n_lk
    return _max(*[(G_su / k) * _ring_distance_sum(k) / (_max(G_su - 1, 1) * 2 * B_l)
                  for k in (k_tx, k_ty, k_tz)])


def su_seconds_per_byte(phi: sp.Expr = phi_hb, hops: bool = True) -> sp.Expr:
    """Seconds per byte a GPU sends to its in-domain peers, at full bandwidth: its own link
    ``1 / B_su`` (each GPU's traffic to all its peers shares its one link per direction: an NVLink
    port set, or a PCIe x16), or the host bridge where the share ``phi`` of it crosses one,
    ``phi / (eta_hb B_hb)``, whichever is slower: peer traffic through the CPU's root complex
    reaches the fraction ``eta_hb`` of the bridge's bandwidth relative to peers under one switch
    (RTX PRO 6000 server, NCCL: rings over 2 GPUs in one switch move 39 GB/s of bus bandwidth at
    512 MiB, over 4 and 8 GPUs, which cross the host, 26 and 21 GB/s)."""
    if not hops:  # neighbour traffic (a ring all-reduce): one hop on a torus too
        return _max(1 / B_su, phi / (eta_hb * B_hb))
    return _max(1 / B_su, phi / (eta_hb * B_hb), x_tor * torus_a2a_seconds_per_byte())


def a2a_volume(n_destinations: sp.Expr, bytes_per_elem: sp.Expr, tokens: sp.Expr = b_send) -> sp.Expr:
    """Bytes one GPU sends in one all-to-all phase: tokens x destinations x d_e x bytes (a latent MoE
    dispatches its tokens in the latent width).

    The DeepSeek speed-limit check (arXiv:2505.09343 sec. 2.3) is this with tokens = 32,
    9 destinations, d = 7000.
    """
    return tokens * n_destinations * d_e * bytes_per_elem


def a2a_su_time(bytes_per_elem: sp.Expr, alpha: sp.Expr) -> sp.Expr:
    """One all-to-all phase inside the scale-up domain: its floor ``alpha`` plus the volume to the
    in-domain destinations at the fraction ``eta_a2a`` of the link (or the host bridge the traffic
    to peers under other switches crosses, :func:`su_seconds_per_byte`).  The law of the measured
    dispatch and combine kernels (operator ``a2a``) and the step's scale-up part are this one
    expression."""
    return alpha + a2a_volume(n_dest_su, bytes_per_elem) * su_seconds_per_byte() / eta_a2a


def a2a_floor(floor: sp.Expr) -> sp.Expr:
    """The floor of one all-to-all phase: the share ``phi_fl`` (1 for a kernel timed alone; fitted to
    the measured runs for a serving step, whose ranks arrive together and whose launches are in its
    CUDA graph) of the low-latency kernels' own (``floor``: ``a_disp`` or ``a_comb``, fitted to
    measured kernels) where attention is data-parallel inside the EP group
    (``TP_a < EP``: each rank holds its own tokens and sends them to the ranks of their experts, as
    DeepEP's low-latency kernels and TensorRT-LLM's all-to-all do), else the message latency
    ``a_a2a``: with attention tensor-parallel over the EP group every rank already holds every
    token, and the stacks gather and reduce-scatter the expert outputs (a collective's latency, not
    the low-latency kernels' floor).  A phase never costs less than that message latency, whatever
    share of the kernels' floor it pays."""
    return sp.Piecewise((_max(phi_fl * floor, a_a2a), TP_a < EP), (a_a2a, True))


def a2a_time(bytes_per_elem: sp.Expr, floor: sp.Expr) -> sp.Expr:
    """One EP all-to-all phase: the slower of its scale-up and scale-out parts (each alpha-beta).

    Zero when EP = 1; the scale-out part only when EP spans more than one scale-up domain.  The
    volume is the mean rank's: the busiest rank receives more (``lambda`` times the mean tokens), but
    at the spec's lambda of 1.25 the one published large-EP decode (DeepSeek-V3 on 72 H100 with
    EPLB, two-batch overlap: measured 92 ms a step, LMSYS 2025-05-05) would take 101 ms with every
    micro-batch's communication hidden, so the imbalance its all-to-all saw was at most about 1.1;
    until a measured imbalance per EP size exists the bytes stay at the mean.  The scale-up part
    is :func:`a2a_su_time` with the phase's floor (:func:`a2a_floor`: the measured kernels' under
    attention data parallelism, which cost tens of microseconds per phase where a bare NVLink
    message costs about one); the scale-out part pays the same floor, or the network's latency
    ``a_so`` where that is more.
    """
    alpha = a2a_floor(floor)
    t_su = a2a_su_time(bytes_per_elem, alpha)
    # across domains the same kernels run (DeepEP's low-latency mode sends its RDMA copies from
    # the same kernel): the phase pays the kernels' floor, or the network's latency where more
    t_so = link_time(a2a_volume(n_dest_so, bytes_per_elem), B_so, eta_so, _max(alpha, a_so))
    return _max(t_su, t_so * indicator(G > N_su)) * indicator(EP > 1)


t_dispatch = a2a_time(b_disp, a_disp)
t_combine = a2a_time(b_comb, a_comb)


def _ar_split(n: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """(GPUs per scale-up domain, domains) of an n-GPU all-reduce group: n_in = min(n, N_su),
    n_out = n / n_in (1 inside one domain)."""
    n_in = _min(n, N_su)
    return n_in, n / n_in


def allreduce_bandwidth(m: sp.Expr, n: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """Bandwidth parts (scale-up, scale-out) of an all-reduce of m bytes over n GPUs  [s].

    Inside each domain a reduce-scatter and an all-gather over n_in GPUs move
    ``2 (n_in - 1)/n_in m`` bytes per GPU (Thakur, Rabenseifner and Gropp 2005), or ``m`` when
    the NVSwitch reduces in the switch (NVLink SHARP: NCCL's NVLS algorithm on H100 and later,
    each GPU sending and receiving its m bytes once), whichever is less: ``min(2 (n_in - 1)/n_in,
    1) m``.  (Measured: the stacks' 1 GiB all-reduces over 8 H100 or H200 move the ring's volume
    at 104% of NVLink's peak, which only the switch's reduction allows; NCCL's own tables stay at
    55-78% of peak at the ring's volume on every system.)  Between the n_out domains each GPU all-reduces
    its ``m / n_in`` shard over scale-out: ``2 (n_out - 1)/n_out (m / n_in)`` bytes (the
    hierarchical all-reduce NCCL runs across nodes).  Inside one domain the second part is 0.

    In-switch reduction needs a switch that reduces (``x_nvls`` = 1, NVSwitch).  Over PCIe
    (``x_nvls`` = 0) the GPUs reduce themselves, ring or tree: ``2 (n_in - 1)/n_in m``, at the
    slower of each GPU's link and, where a ring leaves a PCIe switch, the host bridge: a ring
    over n_in GPUs in switches of n_sw has one hop per switch leave it, which the n_sw GPUs
    under that switch share, so the share ``1 / n_sw`` of a GPU's bandwidth rides the bridge
    (none when the ring stays in one switch)."""
    t_so = _allreduce_so_seconds(m, n)
    return x_nvls * _allreduce_switch_seconds(m, n) + (1 - x_nvls) * _allreduce_ring_seconds(m, n), t_so


def _allreduce_ring_seconds(m: sp.Expr, n: sp.Expr, eta: sp.Expr = eta_ar) -> sp.Expr:
    """Scale-up part of a ring all-reduce (:func:`allreduce_bandwidth` at ``x_nvls`` = 0)."""
    n_in = _ar_split(n)[0]
    ring = 2 * (n_in - 1) / n_in
    return ring * su_seconds_per_byte(indicator(n_in > n_sw) / n_sw, hops=False) * m / eta


def _allreduce_switch_seconds(m: sp.Expr, n: sp.Expr, eta: sp.Expr = eta_ar) -> sp.Expr:
    """Scale-up part of an in-switch all-reduce (:func:`allreduce_bandwidth` at ``x_nvls`` = 1)."""
    n_in = _ar_split(n)[0]
    return _min(2 * (n_in - 1) / n_in, 1) * m / (eta * B_su)


def _allreduce_so_seconds(m: sp.Expr, n: sp.Expr) -> sp.Expr:
    """Scale-out part of an all-reduce (:func:`allreduce_bandwidth`; 0 inside one domain)."""
    n_in, n_out = _ar_split(n)
    return 2 * (n_out - 1) / n_out * (m / n_in) / (eta_so * B_so)


def allreduce_ring_time(m: sp.Expr, n: sp.Expr) -> sp.Expr:
    """All-reduce of m bytes over n GPUs by GPUs that reduce themselves, ring or tree (no in-switch
    reduction)  [s]; 0 when n = 1: the ring volume of :func:`allreduce_bandwidth` at ``x_nvls`` = 0
    and ``2 (n_in - 1) a_ar`` (each of a ring's steps waits on the one before; measured 8-GPU
    latencies on PCIe grow with the GPU count: about 5, 12.6 and 24 us for 2, 4 and 8 RTX PRO 6000),
    plus ``2 (n_out - 1) a_so`` between domains."""
    n_in, n_out = _ar_split(n)
    ring = _allreduce_ring_seconds(m, n) + _allreduce_so_seconds(m, n)
    return (ring + 2 * (n_in - 1) * a_ar + 2 * (n_out - 1) * a_so) * indicator(n > 1)


#: NCCL's protocols, by the bytes each moves per byte of data (NCCL's ``src/include/device.h``:
#: an LL line is 8 bytes of data and 8 of flags, an LL128 line 128 bytes of which 8 are flags;
#: Simple moves the data alone and pays a fence per chunk) and the symbol of its latency per step
NCCL_PROTOCOLS = (("LL", sp.Integer(2), a_nl), ("LL128", sp.Rational(16, 15), a_nm),
                  ("Simple", sp.Integer(1), a_nc))


def allreduce_nccl_time(m: sp.Expr, n: sp.Expr) -> sp.Expr:
    """The same all-reduce through NCCL, as its measured kernels run it  [s]: a ring or tree
    (:func:`allreduce_ring_time`) at NCCL's own bandwidth fraction ``eta_nc``, on the fastest of its
    protocols (:data:`NCCL_PROTOCOLS`: LL at twice the ring's volume and the least latency per step
    ``a_nl``, LL128 at 16/15 of it and ``a_nm``, Simple at the volume itself and the most, ``a_nc``),
    plus a fixed cost per call ``t_n0``.  The small-message latency grows with the GPU count (H200
    6, 9 and 16 us for 2, 4 and 8 GPUs, as a ring's does and a two-shot kernel's does not); at 512
    MiB over 8 H200 the ring's volume moves at 78% of NVLink's peak, and no in-switch reduction's;
    between them the protocols hand over (one protocol's law left the measured 1-8 MiB messages at
    0.5-0.8 of measured).  NCCL picks its protocol by its own cost model; the law takes the fastest."""
    n_in, n_out = _ar_split(n)
    volume = _allreduce_ring_seconds(m, n, eta_nc) + _allreduce_so_seconds(m, n)
    between = 2 * (n_out - 1) * a_so
    ring = _min(*(r * volume + 2 * (n_in - 1) * a + between for _, r, a in NCCL_PROTOCOLS))
    return t_n0 + ring * indicator(n > 1)


def allreduce_kernel_time(m: sp.Expr, n: sp.Expr) -> sp.Expr:
    """All-reduce of m bytes over n GPUs by the serving stack's own kernel  [s]; 0 when n = 1.

    On NVLink (``x_nvls`` = 1) the custom kernels of vLLM, SGLang and TensorRT-LLM run in one
    domain as follows (vLLM csrc/custom_all_reduce.cuh, whose kernel SGLang carries):

    - *one-shot* below ``m_o4`` (3-4 GPUs) or ``m_o8`` (5-8 GPUs), and always over 2: every GPU
      reads all n_in - 1 peers' m bytes and reduces, one pass: ``a_ar + (n_in - 1) m / (eta_ar
      B_su)``;
    - *two-shot* above: a reduce-scatter pass and an all-gather pass, ``2 a_ar + 2 (n_in - 1) /
      n_in m / (eta_ar B_su)``;
    - beyond ``m_cu`` the kernel's buffers end and the large-message path takes the faster of
      NCCL's ring (:func:`allreduce_nccl_time`) and the switch's in-network reduction (NVLink
      SHARP, each GPU moving its m bytes once, ``2 a_ar + m / (eta_nv B_su)``).  Measured: at
      512 MiB over 2 and 4 H200 the stacks' all-reduces take NCCL's time to within 4%; over 8 they
      are 23-24% faster than NCCL's ring, faster than two-shot's volume allows at NVLink's peak.

    TensorRT-LLM's table-driven choice runs one-shot up to its limit at every GPU count inside a
    host (its measured latency grows with (n - 1) m up to 8 MiB), so its ``m_o4`` = ``m_o8`` =
    ``m_cu``.  A group of more than ``N_mn`` GPUs (one host's) spans hosts of a multi-node NVLink
    domain and takes TensorRT-LLM's MNNVL kernel, one-shot while the payload every GPU gathers,
    ``n_in m``, is at most ``m_on`` (1 MiB), two-shot above: ``m_o = m_on / n_in``.  Its two
    phases hand over through Lamport flags inside one kernel (each GPU polls the cells its peers
    write; no barrier between them), so its two-shot pays one ``a_ar``, and its buffers grow with
    the message, so it has no ``m_cu``.  Measured on GB300 NVL72 (4 GPUs a host): one-shot up to
    128 KiB over 8 GPUs and 64 KiB over 16, two-shot from the next size to 1 GiB; over 8, 4.3-4.5
    us at 256 B, 6.1 us at 256 KiB and 7.6 us at 1 MiB, where one-shot's (n - 1) m at NVLink's
    peak alone takes 8.2 us.  vLLM's custom kernel disables itself where the group spans nodes
    (``x_mn`` = 0): its all-reduce over hosts takes the large-message path, the switch's reduction
    (its symmetric-memory all-reduce, multimem) or NCCL, at every size (measured on GB300 over 8
    GPUs: 13-14 us at up to 128 KiB, where its kernel takes 7.5-8 us over 2 and 4; 63 us at 16
    MiB).
    The kernel spans one domain at most (``N_ar`` <= ``N_su``); a group across domains (bound
    mode's, or NCCL's) takes the large path, whose shards cross scale-out as in
    :func:`allreduce_bandwidth`, at ``2 (n_out - 1) a_so``.  Over PCIe (``x_nvls`` = 0) no switch
    reduces and the GPUs ring (:func:`allreduce_ring_time`).

    A message never costs more than a larger one would: where a limit switches to a faster path,
    the smaller message's time is capped by that path's time at the limit (as if padded to it), so
    that the step's time never falls as its batch grows.

    Bound mode sets ``m_o4`` = ``m_o8`` = ``m_cu`` = 0 and the efficiencies to 1: the least volume
    any of these moves (in-switch ``m``, or the ring's where that is less) at the links' peaks."""
    n_in, n_out = _ar_split(n)
    mn = indicator(n_in > N_mn)  # a group over hosts: the multi-node NVLink kernel

    def two(m: sp.Expr) -> sp.Expr:  # a reduce-scatter and an all-gather: the ring's volume
        return (2 - mn) * a_ar + _allreduce_ring_seconds(m, n)

    def large(m: sp.Expr) -> sp.Expr:
        in_switch = (2 * a_ar + _allreduce_switch_seconds(m, n, eta_nv) + _allreduce_so_seconds(m, n)
                     + 2 * (n_out - 1) * a_so)
        return _min(allreduce_nccl_time(m, n), in_switch)

    # one-shot below m_o inside a host (always over 2); over hosts, while n_in m <= m_on
    m_o = mn * m_on / n_in + (1 - mn) * sp.Piecewise((m_o4, n_in <= 4), (m_o8, True))
    oneshot = (mn * sp.Heaviside(m_on - n_in * m, 1)
               + (1 - mn) * (indicator(n_in <= 2) + indicator(n_in > 2) * below(m, m_o)))
    # below m_o one-shot, capped by two-shot's time at m_o (a message never costs more than a
    # larger one would); above it two-shot
    one = a_ar + (n_in - 1) * m / (eta_ar * B_su)  # every GPU reads its n_in - 1 peers' m bytes
    small = oneshot * _min(one, two(_max(m, m_o))) + (1 - oneshot) * two(m)
    # the stack's kernel spans one domain at most (N_ar <= N_su), so its one- and two-shot paths
    # have no scale-out part; below m_cu capped by the large path's time at m_cu, so a step never
    # shortens as its batch grows
    custom = below(m, m_cu)
    nvlink = (mn * (x_mn * small + (1 - x_mn) * large(m))
              + (1 - mn) * (custom * _min(small, large(m_cu)) + (1 - custom) * large(m)))
    return x_nvls * nvlink * indicator(n > 1) + (1 - x_nvls) * allreduce_ring_time(m, n)


def allreduce_time(m: sp.Expr, n: sp.Expr) -> sp.Expr:
    """All-reduce of m bytes over n GPUs as a serving stack runs it  [s]: its own kernel
    (:func:`allreduce_kernel_time`) for a group of at most ``N_ar`` GPUs, else NCCL
    (:func:`allreduce_nccl_time`).  A custom all-reduce that shares its buffers by CUDA IPC
    reaches one host's GPUs only (SGLang: on GB300 NVL72, 4 GPUs per host, a 256-byte message
    takes 3.4-3.8 us over 2 and 4 GPUs and 27 and 48 us over 8 and 16, NCCL's ring latency at
    those counts)."""
    x = indicator(n > N_ar)
    return (1 - x) * allreduce_kernel_time(m, n) + x * allreduce_nccl_time(m, n)


#: Attention-output all-reduce over TP_a: b s_q tokens x d x b_a bytes.
m_ar_attn = b * s_q * d * b_a
t_ar_attn = allreduce_time(m_ar_attn, TP_a)
#: Expert-output all-reduce over TP_e.  A rank sums each token's expert outputs before the
#: reduce, so every distinct token it received is reduced once, not once per expert: the
#: busiest rank's distinct tokens lambda B_tok p_dest (p_dest = 1 when EP = 1, every token).
#: (SGLang's MoE TP under attention DP gathers the tokens and reduce-scatters the outputs: the
#: same bytes as this all-reduce.)
m_ar_moe = lam_EP * B_tok * p_dest * d_e * b_a
t_ar_moe = allreduce_time(m_ar_moe, TP_e)

# ---- layers and the step -------------------------------------------------------------------------
#: The shared experts run on a second CUDA stream beside the routed experts (x_ss = 1) where the
#: stack does so: in decode steps under CUDA graphs with at most N_ss tokens per attention rank
#: (TensorRT-LLM's DeepSeek-V3 MoE ``maybe_execute_in_parallel`` on its auxiliary stream while graphs
#: are captured; SGLang's ``forward_normal_dual_stream``, DUAL_STREAM_TOKEN_THRESHOLD = 1024; vLLM's
#: shared-experts stream, VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD = 256).  A prefill pass runs on
#: one stream.
x_ss = 1 - sp.Heaviside(b * s_q - N_ss, 0)
_shared_sides = gemm_parts(F_shared, M_shared, P_d, b * s_q, N_shared, "d")
#: Routed and shared experts together.  On two streams neither finishes sooner than alone, and
#: together they cannot beat the HBM time of their combined bytes or the compute time of their combined
#: FLOPs: max(t_experts, t_shared, HBM_e + HBM_s, compute_e + compute_s); what the second stream
#: hides is the shorter one's kernel launches and the bandwidth the small shared GEMMs leave unused.
#: On one stream, the sum.
t_ffn_moe = (x_ss * _max(t_experts, t_shared,
                         t_experts_m + t_act_e + _shared_sides[1],
                         t_experts_c + _shared_sides[0])
             + (1 - x_ss) * (t_experts + t_shared))
t_compute_moe = t_attn_proj + t_attn_core + t_ffn_moe
t_comm_moe = t_dispatch + t_combine + t_ar_attn + t_ar_moe
#: Two-micro-batch overlap: each half batch's compute hides the other's communication.  Of the
#: shorter side only the share eta_o is hidden: 2 [max(c, m) + (1 - eta_o) min(c, m)] with c, m
#: the compute and communication of a half batch (eta_o = 1: the ideal 2 max(c, m); eta_o = 0:
#: nothing hidden, and the weights read twice).  Weights are read once per micro-batch.  What
#: keeps eta_o below 1: the communication kernels take SMs and HBM bandwidth from the compute
#: they run beside, each half batch pads its grouped GEMMs to the tile height, and the two
#: halves synchronise at every dispatch and combine.
t_half_compute = at(t_compute_moe, {b: b / 2})
t_half_comm = at(t_comm_moe, {b: b / 2})
t_moe_overlap = 2 * (_max(t_half_compute, t_half_comm) + (1 - eta_o) * _min(t_half_compute, t_half_comm))
#: One MoE layer: the sum without overlap, the overlapped form with it (o = 1).
t_layer_moe = (1 - o_tbo) * (t_compute_moe + t_comm_moe) + o_tbo * t_moe_overlap
#: One dense-FFN layer: attention, FFN, two TP all-reduces.
t_layer_dense = t_attn_proj + t_attn_core + t_dense_ffn + 2 * t_ar_attn
#: Draft cost of MTP: n_d passes of one MoE layer and the head on one token per sequence.
#: A draft head's pass (EAGLE-3 style: one or more decoder layers with the verifier's attention and
#: a dense FFN, the input projection fusing n_fuse verifier hidden states, then an LM head of V_dr
#: rows, its own or the verifier's: either way read again) on one token per sequence.
t_draft_ffn = gemm_operator(2 * 3 * d * f_dr * b * s_q / TP_a, 3 * d * f_dr * b_wd / TP_a, P_d, b * s_q,
                            3 * f_dr / TP_a, "d", n_kd)
t_fuse = gemm_operator(2 * n_fuse * d * d * b * s_q / TP_a, n_fuse * d * d * b_wd / TP_a, P_d, b * s_q,
                       n_fuse * d / TP_a, "d", 1)
t_draft_lm = gemm_operator(2 * b * s_h * V_dr * d / TP_a, V_dr * d * b_wv / TP_a, P_v, b * s_h, V_dr / TP_a,
                           "v", n_kh)
t_draft_head = n_Ldr * (t_attn_proj + t_attn_core + t_draft_ffn) + t_fuse + t_draft_lm
#: Draft cost: n_d passes of one MoE layer and the head (MTP, x_mtp = 1) or of the draft head
#: (x_mtp = 0), each on one token per sequence.
t_draft = n_d * at(x_mtp * (t_layer_moe + t_head) + (1 - x_mtp) * t_draft_head, {s_q: 1, s_h: 1})
#: The GPU's time per step: n_Ld dense + (n_L - n_Ld) MoE layers + LM head + drafts + fixed cost.
t_step_gpu = n_Ld * t_layer_dense + (n_L - n_Ld) * t_layer_moe + t_head + t_draft + t_fixed
#: Time per step: the GPU's, or the host's work for the b sequences its scheduler runs, tau_q b,
#: whichever is longer (the schedulers prepare step n + 1 while the GPU runs step n).  A small model
#: at hundreds of sequences can be host-bound: Llama-3.1-8B on SGLang (H200, 450 sequences) takes
#: 23-29 ms a step at TP 8 and TP 4 alike, where its GPU work is 9-14 ms.
t_step = _max(t_step_gpu, tau_q * b)

#: Per-user output rate: A tokens per step (A = 1 without speculation).
tps_user = A / t_step
#: Output tokens per second per GPU: B A / (t_step G) = b A / (t_step TP_a).
tps_gpu = b * A / (t_step * TP_a)
#: Prompt tokens per second per GPU in a prefill pass (s_q = prompt length).
prefill_tps_gpu = b * s_q / (t_step * TP_a)


def acceptance_length(alpha: sp.Expr, n: sp.Expr) -> sp.Expr:
    """Mean tokens per step with n drafts at per-token acceptance alpha:
    ``(1 - alpha^(n+1)) / (1 - alpha)`` (Leviathan et al. 2023)."""
    return (1 - alpha ** (n + 1)) / (1 - alpha)


def speed_limit_step(tokens: sp.Expr, destinations: sp.Expr, hidden: sp.Expr, layers: sp.Expr,
                     micro_batches: sp.Expr) -> dict[str, sp.Expr]:
    """DeepSeek's EP speed limit (arXiv:2505.09343 sec. 2.3) from *our* communication
    equations: dispatch + combine via :func:`a2a_volume` / :func:`link_time` with every latency
    0 and efficiency 1, compute fully hidden, ``micro_batches`` of communication per layer."""
    t_comm = sum(
        link_time(a2a_volume(destinations, bw, tokens).subs(d_e, hidden), B_so, 1, 0)
        for bw in (b_disp, b_comb)
    )
    t_layer = micro_batches * _max(0, t_comm)
    t_tpot = layers * t_layer
    return {"t_comm": t_comm, "t_layer": t_layer, "tpot": t_tpot, "tps_user": 1 / t_tpot}


#: Named expressions the numeric path evaluates (and ``moe-planner equations`` prints).
TERMS: dict[str, sp.Expr] = {
    "attn_proj": t_attn_proj,
    "attn_core": t_attn_core,
    # parts of attn_core, where the model has them: the sparse layers' indexer, the linear mixers
    "attn_indexer": t_index,
    "attn_linear": t_linear,
    "experts": t_experts,
    "shared_experts": t_shared,
    "experts_together": t_ffn_moe,
    "dense_ffn": t_dense_ffn,
    "lm_head": t_head,
    "dispatch": t_dispatch,
    "combine": t_combine,
    "allreduce_attn": t_ar_attn,
    "allreduce_moe": t_ar_moe,
    "layer_moe": t_layer_moe,
    "layer_dense": t_layer_dense,
    "draft": t_draft,
    "host": tau_q * b,
    "step": t_step,
}

def _sides(name: str, parts: tuple[sp.Expr, sp.Expr]) -> dict[str, sp.Expr]:
    return {f"{name}.compute": parts[0], f"{name}.hbm": parts[1]}


#: Roofline parts used to say which resource binds each operator.
PARTS: dict[str, sp.Expr] = {
    **_sides("attn_proj", gemm_parts(F_attn_proj, M_attn_proj, P_a, b * s_q, N_attn_proj, "a")),
    "attn_core.compute": (1 - x_al) * t_attn_compute + x_al * (F_attn_core + F_attn_row) / (eta_a * P_c)
    + phi_x * F_index / (eta_fa * P_a) + phi_lm * F_linear / (eta_fa * P_c),
    "attn_core.hbm": (1 - phi_h) * ((1 - x_al) * M_kv_read / (eta_m * B_hbm) + x_al * (
        M_kv_read + M_attn_row) * (1 + phi_rp * (n_ht - 1)) / (eta_am * B_hbm))
    + (phi_x * M_index + phi_lm * M_linear) / (eta_m * B_hbm),
    "attn_core.host": t_kv_host,
    "experts.compute": t_experts_c,
    "experts.hbm": t_experts_m,
    "experts.act": t_act_e,
    **_sides("shared_experts", gemm_parts(F_shared, M_shared, P_d, b * s_q, N_shared, "d")),
    **_sides("dense_ffn", gemm_parts(F_dense_ffn, M_dense_ffn, P_d, b * s_q, N_dense_ffn, "d")),
    **_sides("lm_head", gemm_parts(F_head, M_head, P_v, b * s_h, N_head, "v")),
    "a2a.scale_up": a2a_volume(n_dest_su, b_disp + b_comb) * su_seconds_per_byte() / eta_a2a,
    "a2a.scale_out": link_time(a2a_volume(n_dest_so, b_disp + b_comb), B_so, eta_so, 0)
    * indicator(G > N_su),
    "allreduce_attn.scale_up": allreduce_bandwidth(m_ar_attn, TP_a)[0],
    "allreduce_attn.scale_out": allreduce_bandwidth(m_ar_attn, TP_a)[1],
    "allreduce_moe.scale_up": allreduce_bandwidth(m_ar_moe, TP_e)[0],
    "allreduce_moe.scale_out": allreduce_bandwidth(m_ar_moe, TP_e)[1],
}

MEMORY: dict[str, sp.Expr] = {
    "weights": M_weights,
    "kv": M_kv,
    "free": C_free,
    "host_fraction": phi_h,
    "b_max": b_max,
}

RATES: dict[str, sp.Expr] = {
    "tps_user": tps_user,
    "tps_gpu": tps_gpu,
    "prefill_tps_gpu": prefill_tps_gpu,
}

ALL: dict[str, sp.Expr] = {**TERMS, **{f"part.{k}": v for k, v in PARTS.items()},
                           **{f"memory.{k}": v for k, v in MEMORY.items()}, **RATES}

_ = (C_hbm, C_host)  # used through C_free / b_max
