"""Single-operator laws, in sympy, for checking the step model against measured kernels.

Each law is built from the step model's own pieces (:func:`planner.physics.equations.roofline`,
:func:`planner.physics.equations.allreduce_time`), so a kernel checked here is priced exactly as
the step model prices it; only the shape symbols are new.  ``OPERATORS`` maps a name to its
expression; :func:`compile_operator` lambdifies one (sympy is imported on first use).

- ``gemm``: an ``m x k`` by ``k x n`` matrix product: ``F = 2 m n k`` FLOPs, and HBM bytes
  ``m k b_in + k n b_w + m n b_out`` (activations in, weights, output), one kernel: the step
  model's roofline.  In bound mode (peaks, no latency) it is the lower bound of a cold kernel.
- ``gemm_bound``: the lower bound of a kernel timed in a loop with its operands left in L2 from
  the previous run: ``max(F / P, max(m k b_in + k n b_w - C_L2, 0) / B_hbm)``; only the input
  bytes the L2 cache (``C_L2``) cannot already hold must come from HBM, and the output may stay
  in L2 when the kernel ends.  It equals the bound-mode roofline's compute side where the
  operands fit in L2, and approaches its memory side where they are much larger.
- ``gemm_law``: the GEMM law fitted to measured kernels (``moe-planner calibrate --kernels``):
  ``max(F_pad (1 + w_g (Q - 1)) / (eta_g P), M / (eta_gm B_hbm)) + max(m k b_q / (eta_q B_hbm),
  m t_gq / N_sm) + t_g0``,
  with ``F_pad = 2 ceil(m / t_m) t_m n k`` (tile quantization: rows padded to the MMA tile height
  ``t_m``), ``Q = ceil(tiles / N_sm) N_sm / tiles`` the wave quantization of its ``ceil(m / t_m)
  ceil(n / t_n)`` output tiles on ``N_sm`` SMs, of which the kernel pays the fitted share ``w_g``
  (split-K and stream-K kernels fill part of the last wave), the activation cast to the GEMM's
  input dtype (``b_q`` bytes per element: BF16 read, FP8 or FP4 written; 0 for a BF16 GEMM) as
  a second HBM pass at its own bandwidth fraction, or, where more, its kernel's CTAs, one per row
  of ``t_gq`` SM time each, ``N_sm`` at a time (a per-token dynamic quantization: measured on
  GB200 with vLLM, an FP8 GEMM of 32 columns over K = 2,048 takes 113 us at 16,384 rows and 33
  us at 4,096, 6.5 ns a row, as one of 2,048 columns over K = 32 does; the cast's bytes at HBM's
  peak, 0.8 ns),
  and a per-kernel floor ``t_g0`` (launch, prologue, the HBM latency before the stream ramps).
- ``moe`` / ``moe_law`` / ``moe_bound``: one grouped-MoE layer on one rank (the routed experts'
  gate/up and down GEMMs, gated: 3 matrices), ``T_moe`` tokens entering it, each rank holding
  ``E_slots / EP`` experts sliced ``TP_e`` ways.  From the step model: distinct experts touched
  ``n_touched = (E_slots / EP)(1 - (1 - k / E_slots)^T_moe)`` (uniform routing), token-expert rows
  on the busiest rank ``T_e = lambda T_moe k / EP`` (lambda = 1 at EP 1), FLOPs
  ``F_experts = 2 * 3 d f_e T_e / TP_e`` and the touched experts' weight bytes
  ``M_experts = n_touched 3 d f_e b_we / TP_e``.  The law takes the rank's rows ``T_er`` and
  distinct experts ``n_er`` from the routing its table was measured under
  (:mod:`planner.truth.routing`: the source's balanced and power-law routings, rebuilt), not from
  uniform routing: the balanced routing touches ``min(E, N k)`` experts, far more than uniform
  routing at 8-128 tokens, and the power-law one puts the busiest rank on the kernel.  It runs
  every touched expert on at least one whole MMA tile of ``t_m`` rows (grouped GEMM kernels tile
  each expert apart: ``max(T_er, n_er t_m)`` rows; the tile sized to an expert's mean rows, 16 up
  to the family's MMA tile: ``planner.truth.kernels.moe_tile``), at fitted fractions ``eta_e`` of the dense
  peak and ``eta_em`` of HBM bandwidth for the ``n_er 3 d f_e b_we / TP_e`` weight bytes, plus
  the rows' activation traffic as a second HBM pass ``M_act / (eta_ea B_hbm)``,
  ``M_act = T_ea (2 d + 4 f_e / TP_e) 2 B`` over the ``T_ea`` slots its buffers hold (``T_er``;
  on SGLang's raw Triton path at EP > 1, handed every token with its remote slots masked, all
  ``T_moe k``: :mod:`planner.truth.routing`) (each row's BF16 input
  gathered and output written, its gate/up product written and read back by the gated activation:
  the grouped GEMMs, activation, permute and combine are separate kernels, so these cross HBM; it
  binds at prefill sizes with narrow experts, where the weights are few per row), each entering
  token's own traffic ``M_tok = T_moe 2 d 2 B`` (its hidden state read and its combined output
  written, once whatever its rows; with the layer's per-token routing and permutation work) at a
  fraction ``eta_et`` of HBM bandwidth (it binds at wide EP, where few of a token's rows stay on the
  rank: DeepSeek-V3's layer at EP 64-256 and 4-16k tokens was predicted 1.3-1.75x fast without it), on
  SGLang's masked path the SM time of the zero-writing blocks it launches for the ``n_ez`` remote
  experts the tokens reach, ``n_ez (2 f_e / TP_e + d) t_z / N_sm``, and a per-kernel floor ``t_e0``
  (the tile ``t_m``, and ``eta_em`` on a Triton kernel's few-token default config, are the
  kernel's own: :mod:`planner.truth.kernels`).  ``moe_roofline``: peaks, uniform routing
  (lambda = 1), no padding, no floor.
  ``moe_bound``: the same with the fewest experts any routing can touch (``k / EP``: a token's
  experts are distinct) and, as ``gemm_bound``, the weights the L2 cache can hold from the
  previous run not read from HBM: the source's routing can touch fewer experts than uniform
  routing (the power-law draws leave experts empty; the DeepSeek-V3 layer's group-limited routing
  at EP 1 levels off at ~60% of the weight bytes from 32 tokens on), so some kernels beat
  ``moe_roofline``.
- ``attn_mla`` / ``attn_mla_law`` / ``attn_mla_bound``: one MLA decode attention kernel (absorbed,
  FlashMLA-style): ``b`` sequences of ``S`` context tokens, ``h`` query heads on the GPU; the step
  model's ``F_attn_core = 2 b h S (2 r_kv + d_r)`` and ``M_kv_read = b S (r_kv + d_r) b_kv`` (latent
  KV not split, s_kv = 1, one query token).  Where the dispatcher runs a sequence's heads as
  ``n_ht`` CTAs that each stream the whole KV (trtllm-gen on Blackwell: 16-head tiles at up to 32
  heads, times the value-dimension slices it cuts where the grid leaves SMs idle), the share
  ``phi_rp`` of every repeated pass from HBM: the law's KV bytes times ``1 + phi_rp (n_ht - 1)``;
  and each of its ``b n_sub n_hc`` CTAs (``n_sub`` KV splits of ``n_hc`` CTAs per sequence)
  costs SM time ``t_c``, each split ``t_q`` per element of its query heads (``h (r_kv + d_r)``),
  ``N_sm`` at a time: measured with TensorRT-LLM on B200 at 1,024 sequences of 2 tokens, 16-head
  CTAs cost ~6.6 us of SM time each, 64-head ones 8.5 us (BF16 cache) and 12 us (FP8), time the KV
  stream and a per-sequence offset cannot carry (predicted up to 2.6x fast at 64 and 128 heads).
  Elsewhere (one CTA a sequence, ``n_ht = n_hc = n_sub = 1``) the ``t_q`` term alone: on H100
  with TensorRT-LLM, 1,024 sequences of 1-127 tokens at 128 heads take 290-330 us (FP8 cache),
  flat in the context, where the KV stream and the offset gave 0.44-0.62 of measured.
- ``attn_gqa`` / ``attn_gqa_law`` / ``attn_gqa_bound``: one GQA (MHA) decode attention kernel:
  ``F = 4 b h S d_head`` (c_att = 2 d_head) and ``M = 2 b S h_kv d_head b_kv`` (e_kv = 2 h_kv
  d_head, ``h_kv`` KV heads on the GPU), over the window-limited context ``S_eff`` (phi_w = 1: a
  sliding window of ``S_w`` tokens).  MLA's law: ``max((F + F_row) / (eta_a P_c), (M + M_row) /
  (eta_am B_hbm)) + t_a0``, each sequence's query rows costing ``S_a0`` context tokens' worth of
  FLOPs and KV bytes beyond its context (``F_row``, ``M_row``: the step model's ``F_attn_row`` and
  ``M_kv_read`` at ``S = S_a0``).  GQA's: ``max(F / (eta_a P_c), M / (eta_am B_hbm), b h_kv t_r) +
  t_a0``, one block of issue-bound work ``t_r`` per sequence and KV head that the KV stream hides
  (``attn_gqa_mmha_law``: per query head, TensorRT-LLM's MMHA fallback).  Where a split-KV
  (multi-block) kernel's dispatcher is modelled (TensorRT-LLM's XQA and MMHA, SGLang's and vLLM's
  FlashAttention-3, on Hopper), each block
  runs as ``n_sub`` CTAs: one CTA's share of the stream at its own rate, ``M / (b h_kv n_sub
  beta_c)``, joins the max, and every CTA costs SM time ``t_c`` plus ``t_q`` per query-head element,
  ``n_sub (blocks t_c + b h d_head t_q) / N_sm`` (:func:`_gqa_law`).  Fitted per GPU, stack and
  KV dtype; the bounds at the peaks without the floor or the per-row work.
  ``*_bound_l2`` (``moe_bound_l2``, ``attn_*_bound_l2``): as ``gemm_bound``, the bytes the L2 cache
  (``C_L2``) can hold from the previous run of the same kernel on the same buffers need not come
  from HBM.
- ``attn_mla_prefill`` / ``attn_gqa_prefill`` (and ``_law``, ``_bound``, ``_bound_l2``): one
  prefill (context) attention kernel, ``b`` prompts of ``2 S`` tokens each attending causally: the
  step model's prefill attention core at ``s_q = 2 S`` (mean causal context ``S``), so
  ``F = 2 b h (2 S) S c_att`` with MLA un-absorbed (``c_att = d_n + d_r + d_v``).  The law,
  fitted per GPU, stack and KV dtype, is compute-bound, the step model's attention-core compute
  side plus a floor: ``(F + F_row) / (eta_fa P_c) + N_exp / X_sm + t_a0``, with
  ``F_row = 2 b h (2 S) S_a0 c_att`` the per-row work (each query row costs ``S_a0`` context
  tokens' worth beyond its context: loading it, the softmax epilogue, writing the output; at a
  1k-token prompt the measured kernels reach a third to a half of the fraction they reach at 16k)
  and ``N_exp = b (2 S) h (S + S_a0)`` the softmax's exponentials, one per score whatever the head
  size, at ``X_sm`` per second (GQA only: its tables mix head sizes 64 and 128, which tell the
  exponentials from the MMAs; the MLA tables hold one head shape, so there ``X_sm`` is infinite).
  ``P_c`` is the FP8 peak over an FP8 cache (the context kernels multiply in FP8: so priced, the
  exponential rates fitted to a GPU and stack's FP8 and BF16 rows agree).  The longest CTA (the
  last ``t_qt`` query rows of one head, attending the whole prompt) adds ``kappa_lc N_sm (F_lc /
  (eta_fa P_c) + N_exp_lc / X_sm)``: uneven CTAs scheduled greedily end at most one longest CTA
  after the GPU's share of the total (the step model's ``t_attn_lc``).  Its ``eta_fa``,
  ``S_a0``, ``X_sm`` and ``kappa_lc`` are the step model's in a prefill pass.
- ``allreduce``: ``x`` bytes over ``n_g`` GPUs by the stack's own kernel up to ``N_ar`` GPUs (as
  it dispatches: one-shot, two-shot, and beyond ``m_cu`` the faster of NCCL's ring and the switch's
  reduction; a ring over PCIe; hierarchical across domains) and through NCCL beyond.
- ``allreduce_nccl``: the same call through NCCL as its measured tables ran it: a ring or tree
  (no in-switch reduction: ``x_nvls`` = 0), so ``2 (n_g - 1)`` latencies and the ring volume
  ``2 (n_g - 1)/n_g x`` at ``eta_nc``, on the fastest of NCCL's protocols (LL: twice the volume,
  latency ``a_nl`` per step; LL128: 16/15 of it, ``a_nm``; Simple: the volume, ``a_nc``), plus a
  fixed cost per call ``t_n0``.  The measured
  small-message latency grows with the GPU count (H200: 6, 9 and 16 us for 2, 4 and 8 GPUs), as a
  ring's does and a two-shot kernel's does not.
- ``a2a``: one dispatch or combine phase of ``tokens`` per GPU inside one domain, to the
  ``(EP - 1)(1 - (1 - 1/EP)^k)`` other ranks a token's experts reach, at the GPU's link or, over
  PCIe, the host bridge that traffic to peers under other switches crosses, plus the phase's
  floor ``a_phase``: the step model's scale-up phase (``equations.a2a_su_time``) under attention
  data parallelism, where the step prices a phase with the same floor (``a_disp``, ``a_comb``).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import sympy as sp

from planner.physics import equations as eq
from planner.physics.symbols import (
    REGISTRY,
    beta_c,
    n_ht,
    n_sub,
    phi_rp,
)

m_g = sp.Symbol("m", positive=True)        #: GEMM rows (tokens)
n_g = sp.Symbol("n", positive=True)        #: GEMM output columns
k_g = sp.Symbol("k_gemm", positive=True)   #: GEMM reduction length
b_in = sp.Symbol("b_in", positive=True)    #: bytes per input activation element
b_w = sp.Symbol("b_w", positive=True)      #: bytes per weight element
b_out = sp.Symbol("b_out", positive=True)  #: bytes per output element
P_g = sp.Symbol("P", positive=True)        #: dense peak of the GEMM's compute dtype, FLOP/s
x_bytes = sp.Symbol("x", positive=True)    #: all-reduce message, bytes per GPU
n_ar = sp.Symbol("n_g", positive=True)     #: GPUs in the all-reduce
t_a2a = sp.Symbol("tokens", positive=True)  #: tokens each GPU sends in an all-to-all phase
b_ph = sp.Symbol("b_phase", positive=True)  #: bytes per element of that phase
a_ph = sp.Symbol("a_phase", nonnegative=True)  #: floor of that phase (a_disp or a_comb), s
eta_g = sp.Symbol("eta_g", positive=True)   #: fitted fraction of the dense peak a GEMM reaches
eta_gm = sp.Symbol("eta_gm", positive=True)  #: fitted fraction of HBM bandwidth a GEMM streams at
w_g = sp.Symbol("w_g", nonnegative=True)    #: fitted share of the last wave's idle SMs a GEMM pays
eta_q = sp.Symbol("eta_q", positive=True)   #: fitted HBM fraction of the activation cast pass
b_q = sp.Symbol("b_q", nonnegative=True)    #: bytes per element of that pass (0: none)
t_g0 = sp.Symbol("t_g0", nonnegative=True)  #: fitted per-kernel floor of a GEMM, s
t_gq = sp.Symbol("t_gq", nonnegative=True)  #: fitted SM time per row of the activation cast, s
C_l2 = sp.Symbol("C_L2", positive=True)     #: L2 cache capacity, B
T_moe = sp.Symbol("T_moe", positive=True)   #: tokens entering a MoE layer on one rank
T_er = sp.Symbol("T_er", positive=True)     #: token-expert rows a measured MoE kernel's rank ran
n_er = sp.Symbol("n_er", positive=True)     #: distinct experts that rank touched
T_ea = sp.Symbol("T_ea", positive=True)     #: token-expert slots that kernel's activation passes carry
n_ez = sp.Symbol("n_ez", nonnegative=True)  #: remote experts a masked grouped-MoE kernel launches blocks for
t_z = sp.Symbol("t_z", nonnegative=True)    #: fitted SM time per output column of a masked expert's block, s
eta_e = sp.Symbol("eta_e", positive=True)   #: fitted fraction of the dense peak of a grouped MoE
t_e0 = sp.Symbol("t_e0", nonnegative=True)  #: fitted floor of a grouped MoE kernel, s
eta_ea = sp.Symbol("eta_ea", positive=True)  #: fitted HBM fraction of a grouped MoE's activation traffic
eta_et = sp.Symbol("eta_et", positive=True)  #: fitted HBM fraction of a grouped MoE's per-token traffic
r_kv = sp.Symbol("r_kv", positive=True)     #: MLA latent KV rank
d_r = sp.Symbol("d_r", positive=True)       #: MLA decoupled RoPE key dimension
d_n = sp.Symbol("d_n", positive=True)       #: MLA query/key head dimension without RoPE
d_v = sp.Symbol("d_v", positive=True)       #: MLA value head dimension
h_kv = sp.Symbol("h_kv", positive=True)     #: KV heads on the GPU
d_head = sp.Symbol("d_head", positive=True)  #: head dimension
t_a0 = sp.Symbol("t_a0", nonnegative=True)  #: fitted floor of a decode attention kernel, s
n_hc = sp.Symbol("n_hc", positive=True)     #: CTAs per sequence and KV split of an MLA decode kernel
t_kc = sp.Symbol("t_kc", nonnegative=True)  #: fitted SM time per KV-cache element of a whole-cache cast, s

OPERATOR_SYMBOLS = {
    "m": (m_g, "GEMM rows (tokens)", "1"), "n": (n_g, "GEMM output columns", "1"),
    "k_gemm": (k_g, "GEMM reduction length", "1"),
    "b_in": (b_in, "bytes per input activation element", "B"), "b_w": (b_w, "bytes per weight", "B"),
    "b_out": (b_out, "bytes per output element", "B"),
    "P": (P_g, "dense peak of the compute dtype", "FLOP/s"),
    "x": (x_bytes, "all-reduce message per GPU", "B"), "n_g": (n_ar, "GPUs in the all-reduce", "1"),
    "tokens": (t_a2a, "tokens each GPU sends in an all-to-all phase", "token"),
    "b_phase": (b_ph, "bytes per element of the phase (dispatch or combine)", "B"),
    "a_phase": (a_ph, "floor of the phase: the dispatch or combine kernel's fitted floor for its dtype "
                "(a_disp, a_comb; the step model's, under attention data parallelism)", "s"),
    "eta_g": (eta_g, "fraction of the dense peak a GEMM reaches (fitted per GPU, stack, dtype)", "1"),
    "eta_gm": (eta_gm, "fraction of HBM bandwidth a GEMM streams its operands at (fitted)", "1"),
    "w_g": (w_g, "share of the idle SMs of a GEMM's last wave the kernel pays for (fitted; 0: split-K or "
            "stream-K fills the wave)", "1"),
    "eta_q": (eta_q, "fraction of HBM bandwidth of the activation cast before the GEMM (fitted)", "1"),
    "b_q": (b_q, "bytes per activation element of that cast (BF16 read + input dtype written; 0: none)",
            "B"),
    "t_g0": (t_g0, "per-kernel floor of a GEMM: launch, prologue, HBM latency (fitted)", "s"),
    "t_gq": (t_gq, "SM time per row (token) of the activation cast before a quantized GEMM, whose "
             "kernel runs a CTA per token (fitted; 0: none)", "s"),
    "C_L2": (C_l2, "L2 cache capacity", "B"),
    "T_moe": (T_moe, "tokens entering a MoE layer on one rank (each rank runs its own experts on them)",
              "token"),
    "T_er": (T_er, "token-expert rows the rank of a measured grouped-MoE kernel ran (its table's "
             "routing, planner.truth.routing)", "token"),
    "n_er": (n_er, "distinct experts that rank touched (its table's routing)", "1"),
    "T_ea": (T_ea, "token-expert slots the activation buffers of that kernel carry: T_er, and on SGLang's "
             "raw Triton path at EP > 1 every slot of every token handed to the rank, T_moe k", "token"),
    "n_ez": (n_ez, "remote experts SGLang's masked Triton path launches blocks for at EP > 1: the distinct "
             "experts the tokens route to on other ranks, each a row of blocks in both grouped GEMMs' grids "
             "that writes its zero rows and exits (0 elsewhere)", "1"),
    "t_z": (t_z, "SM time per output column of such a masked expert's blocks (fitted; 0 where not fitted)",
            "s"),
    "eta_e": (eta_e, "fraction of the dense peak a grouped MoE kernel reaches (fitted per GPU, stack, dtype)",
              "1"),
    "t_e0": (t_e0, "per-kernel floor of a grouped MoE layer: launch, routing, prologue (fitted)", "s"),
    "eta_ea": (eta_ea, "fraction of HBM bandwidth of a grouped MoE layer's per-row activation traffic "
               "(gather, gate/up product, output; fitted)", "1"),
    "eta_et": (eta_et, "fraction of HBM bandwidth of a grouped MoE layer's per-token traffic (each "
               "entering token's hidden state read and output written, with its routing and permutation; "
               "fitted)", "1"),
    "r_kv": (r_kv, "MLA latent KV rank (kv_lora_rank)", "1"),
    "d_r": (d_r, "MLA decoupled RoPE key dimension (qk_rope_head_dim)", "1"),
    "d_n": (d_n, "MLA query/key head dimension without RoPE (qk_nope_head_dim)", "1"),
    "d_v": (d_v, "MLA value head dimension (v_head_dim)", "1"),
    "h_kv": (h_kv, "KV heads on the GPU", "1"), "d_head": (d_head, "attention head dimension", "1"),
    "t_a0": (t_a0, "per-kernel floor of a decode attention kernel (fitted)", "s"),
    "t_kc": (t_kc, "SM time per element of the KV cache a whole-cache dtype cast converts before an MLA "
             "decode kernel (SGLang's FlashAttention-3 backend over an FP8 cache on Hopper: the cache "
             "cast to BF16, the kernel attending the copy; fitted; 0 elsewhere)", "s"),
    "n_hc": (n_hc, "CTAs per sequence and KV split of an MLA decode kernel: its head tiles times its value-"
             "dimension slices (2 on trtllm-gen's 128-head 2-CTA kernel; 1 elsewhere)", "1"),
}

F_gemm = 2 * m_g * n_g * k_g
M_gemm = m_g * k_g * b_in + k_g * n_g * b_w + m_g * n_g * b_out
M_in = m_g * k_g * b_in + k_g * n_g * b_w
#: one grouped-MoE layer on one rank, from the step model's expert terms: the layer's tokens stand
#: for the step's global tokens (B_tok = b s_q G / TP_a with b = T_moe, s_q = G = TP_a = 1)
_MOE_AT = {eq.b: T_moe, eq.s_q: 1, eq.G: 1, eq.TP_a: 1}
F_moe = eq.at(eq.F_experts, _MOE_AT)
M_moe = eq.at(eq.M_experts, _MOE_AT)
#: the fewest experts a rank can touch: k / EP (each token's k experts are distinct)
M_moe_min = eq.expert_weight_bytes(eq.k / eq.EP)
#: A measured kernel's rank under its table's routing (planner.truth.routing): T_er token-expert
#: rows, n_er distinct experts.  FLOPs the tensor cores execute: every touched expert runs at least
#: one whole t_m-row tile (the grouped GEMM tiles each expert's rows apart), max(T_er, n_er t_m)
#: rows in all -- the padding of experts with fewer rows than a tile, smooth (whole tiles expert by
#: expert, from the table's own per-expert counts, fit worse: median of the cells' errors 19%
#: against 17%; the kernels tile a small expert with fewer rows, t_m sized to the mean rows)
_moe_c, _moe_m = eq.moe_parts(T_er, n_er, eq.t_m, eta_e)
#: BF16 activation bytes each token-expert row moves through HBM between the layer's kernels (the
#: grouped GEMMs, the gated activation, the permute and the combine): its input row gathered in
#: (d) and its output row written (d), its gate/up product (2 f_e / TP_e) written by the first GEMM
#: and read back by the gated activation -- (2 d + 4 f_e / TP_e) x 2 B per row, T_ea rows (T_er, or
#: every slot of every token where the GEMMs mask the remote ones but the buffers hold them)
M_moe_act = eq.expert_activation_bytes(T_ea)
#: ... and the BF16 bytes each token entering the layer moves once (its hidden state read, its
#: combined output written: 2 d x 2 B), T_moe tokens: the collector hands the rank every token
M_moe_tok = eq.expert_token_bytes(T_moe)
#: ... and, on SGLang's masked Triton path, the blocks its grouped GEMMs launch for the remote
#: experts the tokens route to: one row of blocks each across both GEMMs' output columns (the gate
#: and up projections' 2 f_e / TP_e, the down projection's d), each writing its zero rows and
#: exiting, N_sm at a time (``moe_align_block_size`` sorts every slot by its global expert, the
#: remote ones mapped to -1; ``fused_moe_kernel`` writes zeros for those blocks)
t_moe_mask = n_ez * (2 * eq.f_e / eq.TP_e + eq.d) * t_z / eq.N_sm
#: one decode attention kernel: one query token, the heads on this GPU (TP_a = 1), KV not split,
#: one dense attention layer (no sparse or linear layers around it)
_ONE_LAYER = {eq.phi_a: 1, eq.phi_x: 0, eq.phi_lm: 0, eq.S_k: eq.S, eq.phi_z: 0, eq.c_x: 1, eq.c_z: 1,
              eq.x_cw: 0}
_MLA_AT = {eq.s_q: 1, eq.TP_a: 1, eq.s_kv: 1, eq.phi_w: 0, eq.S_w: eq.S, eq.c_att: 2 * r_kv + d_r,
           eq.e_kv: r_kv + d_r} | _ONE_LAYER
_GQA_AT = {eq.s_q: 1, eq.TP_a: 1, eq.s_kv: 1, eq.c_att: 2 * d_head, eq.e_kv: 2 * h_kv * d_head} | _ONE_LAYER
F_mla, M_mla = eq.at(eq.F_attn_core, _MLA_AT), eq.at(eq.M_kv_read, _MLA_AT)
F_gqa, M_gqa = eq.at(eq.F_attn_core, _GQA_AT), eq.at(eq.M_kv_read, _GQA_AT)
#: one prefill attention kernel: ``b`` prompts of ``2 S`` tokens each attending causally (mean
#: context S, as the step model's prefill pass), the heads on this GPU; MLA un-absorbed (each head
#: a d_n + d_r key and a d_v value: c_att = d_n + d_r + d_v), GQA as in decode
_MLA_PRE_AT = _MLA_AT | {eq.s_q: 2 * eq.S, eq.S_c: 2 * eq.S, eq.c_att: d_n + d_r + d_v}
_GQA_PRE_AT = _GQA_AT | {eq.s_q: 2 * eq.S, eq.S_c: 2 * eq.S}
F_mla_pre, M_mla_pre = eq.at(eq.F_attn_core, _MLA_PRE_AT), eq.at(eq.M_kv_read, _MLA_PRE_AT)
F_gqa_pre, M_gqa_pre = eq.at(eq.F_attn_core, _GQA_PRE_AT), eq.at(eq.M_kv_read, _GQA_PRE_AT)


#: ... and the per-row work of an MLA decode kernel: each sequence's query rows cost S_a0 context
#: tokens' worth of FLOPs and of KV bytes (reading the query, the softmax and split-KV combine,
#: writing the output; GQA decode prices it per block instead, :func:`_gqa_law`)
R_mla = eq.at(eq.F_attn_row, _MLA_AT)
#: its KV bytes' worth: S_a0 tokens of each sequence's cache, not windowed (the step's M_attn_row)
Q_mla = eq.at(eq.M_attn_row, _MLA_AT)


#: one measured all-to-all phase: the step's scale-up phase with ``tokens`` per rank (attention
#: data-parallel: b = tokens, TP_a = 1) and the EP group as the instance, inside one domain (G = EP)
_A2A_AT = {eq.b: t_a2a, eq.s_q: 1, eq.TP_a: 1, eq.G: eq.EP, eq.phi_fl: 1}


def _gqa_law(blocks: sp.Expr) -> sp.Expr:
    """GQA decode: the KV stream (or the FLOPs), the kernel's blocks or one CTA's share of the
    stream, whichever is longest, the split-KV CTAs' own SM time, and a floor
    (:func:`planner.physics.equations.decode_attention_law`, the step's law, plus ``t_a0``).

    One block per sequence and KV head (the XQA and FlashAttention-style kernels load a KV head
    once for its whole query group; TensorRT-LLM's MMHA fallback runs one per query head), each
    costing ``t_r`` of issue-bound work the KV stream of the other blocks hides: measured on H200
    with TensorRT-LLM, 32 query / 8 KV heads of 128, the time is flat in the context up to 128
    tokens at 0.29 us per sequence (0.036 us per block) and from 512 tokens tracks the KV stream,
    where a sum of the two would be 1.6x slower.

    A split-KV (multi-block) kernel runs each block as ``n_sub`` CTAs, each streaming
    ``1 / n_sub`` of its context: one CTA's share ``M / (blocks_kv n_sub)`` at the rate ``beta_c``
    one CTA reaches bounds the kernel where few long sequences leave the GPU's SMs idle (the
    dispatcher caps ``n_sub``: TensorRT-LLM's XQA at about ``sqrt(8 S / 128)``), and every CTA
    costs ``t_c`` of SM time (its prologue, its partial result written and reduced) plus ``t_q``
    per element of the query heads it serves, ``N_sm`` CTAs at a time.  Measured on H200 with
    TensorRT-LLM (BF16 cache, 32 / 8 heads of 128), the same 134 MB of KV took 54-68 us split as
    1 x 32768, 4 x 8192, 16 x 2048 or 64 x 512 (sequences x context), and 537 MB 145-151 us: the
    stream's marginal rate is ~96% of HBM bandwidth and the split CTAs cost a near-constant
    ~30 us once the grid is capped; one eta_am for all (the law without these terms) takes ~60%.
    With ``n_sub = 1``, ``beta_c`` infinite and ``t_c = t_q = 0`` it is the unsplit law."""
    per_cta = M_gqa / (eq.b * h_kv * n_sub) / beta_c   # a block's KV is its KV head's, whatever its heads
    return eq.decode_attention_law(F_gqa, M_gqa, blocks, eq.b * eq.h * d_head, row_blocks=blocks,
                                   per_cta=per_cta) + t_a0


OPERATORS: dict[str, sp.Expr] = {
    "gemm": eq.roofline(F_gemm, M_gemm, P_g),
    "gemm_bound": eq._max(F_gemm / P_g, eq._max(M_in - C_l2, 0) / eq.B_hbm),
    # the step model's own GEMM law, on one kernel of this shape
    "gemm_law": eq.gemm_law(F_gemm, M_gemm, P_g, m_g, n_g, k_g,
                            {"eta_g": eta_g, "eta_gm": eta_gm, "w_g": w_g, "eta_q": eta_q, "b_q": b_q,
                             "t_g0": t_g0, "t_gq": t_gq}),
    # grouped MoE: the step model's expert roofline (its efficiencies), the fitted law, the bound
    "moe": eq.roofline(F_moe, M_moe, eq.P_e),
    # the step's routed experts' law (eq.moe_parts), at the measured rank, plus its floor
    "moe_law": eq._max(_moe_c, _moe_m)
    + M_moe_act / (eta_ea * eq.B_hbm) + M_moe_tok / (eta_et * eq.B_hbm) + t_moe_mask + t_e0,
    # the roofline at the peaks under uniform routing (no padding, no floor); measured kernels beat
    # it where the source's routing touches fewer experts than uniform routing would
    "moe_roofline": eq.at(eq._max(F_moe / eq.P_e, M_moe / eq.B_hbm), {eq.lam: 1}),
    # the bound: a token's k experts are distinct, so a rank receiving T_e = T_moe k / EP rows
    # touches at least k / EP experts whatever the routing; the weights the L2 cache holds from
    # the previous run on the same buffers need not come from HBM (as gemm_bound)
    "moe_bound": eq.at(eq._max(F_moe / eq.P_e, eq._max(M_moe_min - C_l2, 0) / eq.B_hbm), {eq.lam: 1}),
    # decode attention, MLA absorbed and GQA
    "attn_mla": eq.roofline(F_mla, M_mla, eq.P_c),
    # each of the n_ht CTAs streams the KV, the share phi_rp of a repeated pass missing L2; each
    # of the grid's CTAs costs SM time
    # and where the stack casts the whole cache before the kernel (dispatch.MLA_KV_CAST; the
    # kernel then streams the BF16 copy: b_kv = 2), each cached element's share of the cast's SM time
    "attn_mla_law": eq.decode_attention_law(F_mla + R_mla, (M_mla + Q_mla) * (1 + phi_rp * (n_ht - 1)),
                                            eq.b * n_hc, eq.b * eq.h * (r_kv + d_r)) + t_a0
    + eq.b * eq.S * (r_kv + d_r) * t_kc / eq.N_sm,
    "attn_mla_bound": eq._max(F_mla / eq.P_c, M_mla / eq.B_hbm),
    "attn_mla_bound_l2": eq._max(F_mla / eq.P_c, eq._max(M_mla - C_l2, 0) / eq.B_hbm),
    "attn_gqa": eq.roofline(F_gqa, M_gqa, eq.P_c),
    "attn_gqa_law": _gqa_law(eq.b * h_kv),
    "attn_gqa_mmha_law": _gqa_law(eq.b * eq.h),
    "attn_gqa_bound": eq._max(F_gqa / eq.P_c, M_gqa / eq.B_hbm),
    "attn_gqa_bound_l2": eq._max(F_gqa / eq.P_c, eq._max(M_gqa - C_l2, 0) / eq.B_hbm),
    # prefill attention, MLA and GQA: its law (compute-bound at every measured shape: the step
    # model's attention-core compute side, the FLOPs and the per-row work at eta_fa and the softmax
    # exponentials at X_sm, plus a floor) and the bounds on the prefill shapes
    **{f"attn_{kind}_prefill{suffix}": expr
       for kind, (F, M, at) in (("mla", (F_mla_pre, M_mla_pre, _MLA_PRE_AT)),
                                ("gqa", (F_gqa_pre, M_gqa_pre, _GQA_PRE_AT)))
       for suffix, expr in (("", eq.roofline(F, M, eq.P_c)),
                            ("_law", eq.at(eq.t_attn_compute, at) + t_a0),
                            ("_bound", eq._max(F / eq.P_c, M / eq.B_hbm)),
                            ("_bound_l2", eq._max(F / eq.P_c, eq._max(M - C_l2, 0) / eq.B_hbm)))},
    "allreduce": eq.allreduce_time(x_bytes, n_ar),
    # NCCL as measured: ring (latency 2 (n - 1) a per step, volume 2 (n - 1)/n x) on its fastest
    # protocol, no in-switch reduction
    "allreduce_nccl": eq.allreduce_nccl_time(x_bytes, n_ar),
    # one phase inside a domain: every other EP rank a token's k experts reach, uniform routing
    # (the instance is the EP group, inside one domain: G = EP)
    "a2a": eq.at(eq.a2a_su_time(b_ph, a_ph), _A2A_AT),
}
#: The measured kernels run on the model's width (no latent MoE: d_e = d, no latent projections) with
#: gated experts (three matrices), on switched scale-up domains (no torus: x_tor = 0).
_MEASURED_CASE = {eq.d_e: eq.d, eq.W_lat: 0, eq.n_mx: 3, eq.x_tor: 0}
OPERATORS = {n: e.xreplace(_MEASURED_CASE) for n, e in OPERATORS.items()}


def arguments(name: str) -> tuple[str, ...]:
    """The argument names of operator ``name``, in a fixed order (registry names for the step
    model's symbols)."""
    names = {v.symbol: k for k, v in REGISTRY.items()} | {v[0]: k for k, v in OPERATOR_SYMBOLS.items()}
    return tuple(sorted(names[s] for s in OPERATORS[name].free_symbols))


@cache
def compile_operator(name: str) -> Any:
    """A numpy function of operator ``name`` taking keyword arguments named as :func:`arguments`."""
    from planner.physics.codegen import _Printer

    args = arguments(name)
    by_name = {k: v.symbol for k, v in REGISTRY.items()} | {k: v[0] for k, v in OPERATOR_SYMBOLS.items()}
    fn = sp.lambdify([by_name[a] for a in args], OPERATORS[name], modules="numpy", printer=_Printer, cse=True)

    def call(**values: Any) -> Any:
        return fn(*(values[a] for a in args))

    return call
