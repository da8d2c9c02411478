"""The notation registry: every sympy Symbol of the model, defined once, with meaning and unit.

Names follow ``docs/physics.md`` (section 1).  Each symbol appears here once; equations import
them from here; a test checks that every equation's free symbols are registered.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp


@dataclass(frozen=True)
class Sym:
    symbol: sp.Symbol
    meaning: str
    unit: str
    group: str


REGISTRY: dict[str, Sym] = {}


def _s(name: str, meaning: str, unit: str, group: str, latex: str | None = None,
       integer: bool = False, nonneg: bool = False) -> sp.Symbol:
    kw = {"integer": True} if integer else {}
    kw.update({"nonnegative": True} if nonneg else {"positive": True})
    sym = sp.Symbol(latex or name, real=True, **kw)
    if name in REGISTRY:
        raise ValueError(f"symbol {name} defined twice")
    REGISTRY[name] = Sym(sym, meaning, unit, group)
    return sym


# ---- model -------------------------------------------------------------------------------
d = _s("d", "hidden size", "1", "model", integer=True)
n_L = _s("n_L", "layers", "1", "model", "n_{L}", integer=True)
n_Ld = _s("n_Ld", "dense-FFN layers (the first ones)", "1", "model", "n_{Ld}", integer=True, nonneg=True)
E = _s("E", "routed experts per MoE layer", "1", "model", integer=True)
k = _s("k", "routed experts per token", "1", "model", integer=True)
E_s = _s("E_s", "shared experts per MoE layer", "1", "model", "E_{s}", integer=True, nonneg=True)
f_e = _s("f_e", "expert intermediate size", "1", "model", "f_{e}", integer=True)
d_e = _s("d_e", "width of the routed experts' rows: the hidden size d, or a latent MoE's smaller "
         "latent width (the tokens are projected into it before dispatch and out of it after combine)", "1",
         "model", "d_{e}", integer=True)
W_lat = _s("W_lat", "weights of a latent MoE layer's projections into and out of the latent width (2 d d_e; "
           "0 without a latent)", "1", "model", r"W_{lat}", nonneg=True)
n_mx = _s("n_mx", "weight matrices of an FFN or expert: 3 gated (gate, up, down: SwiGLU), 2 plain (up, down: "
          "Nemotron-H's squared ReLU)", "1", "model", "n_{mx}", integer=True)
f_d = _s("f_d", "dense FFN intermediate size", "1", "model", "f_{d}", nonneg=True)
h = _s("h", "attention (query) heads", "1", "model", integer=True)
V = _s("V", "vocabulary", "1", "model", integer=True)
n_emb = _s("n_emb", "embedding tables (1 if tied with the LM head, else 2)", "1", "model", "n_{emb}")
W_attn = _s("W_attn", "attention weights per layer", "1", "model", r"W_{attn}")
W_rep = _s("W_rep", "attention weights per layer held whole by every attention-TP rank (MLA's "
           "q_a and kv_a down-projections; 0 for GQA)", "1", "model", r"W_{rep}", nonneg=True)
e_kv = _s("e_kv", "KV-cache elements per token per layer (MLA r_kv + d_r; GQA 2 h_kv d_head)",
          "1", "model", "e_{kv}")
c_att = _s("c_att", "attention-core width per head and context token, d_k + d_v "
           "(MLA absorbed 2 r_kv + d_r; MLA prefill d_n + d_r + d_v; GQA 2 d_head)", "1", "model",
           "c_{att}")
phi_w = _s("phi_w", "fraction of layers with sliding-window attention", "1", "model", r"\phi_{w}",
           nonneg=True)
S_w = _s("S_w", "sliding window", "token", "model", "S_{w}")
phi_a = _s("phi_a", "softmax-attention layers (full, sliding-window or sparse) per layer: 1, less in a "
           "hybrid whose other layers are linear mixers (Nemotron-H counts its blocks over its MoE layers)",
           "1", "model", r"\phi_{a}", nonneg=True)
phi_x = _s("phi_x", "fraction of layers whose attention is sparse: each query reads the top S_k tokens "
           "its indexer picks (DeepSeek sparse attention)", "1", "model", r"\phi_{x}", nonneg=True)
S_k = _s("S_k", "tokens a sparse-attention query reads (the indexer's top-k)", "token", "model", "S_{k}")
c_x = _s("c_x", "tokens per compressed KV row of the sparse layers (DeepSeek-V4's ratio-4 layers: 4; 1 "
         "without compression)", "token", "model", "c_{x}")
phi_z = _s("phi_z", "fraction of layers that attend every compressed KV row of c_z tokens (DeepSeek-V4's "
           "ratio-128 layers)", "1", "model", r"\phi_{z}", nonneg=True)
c_z = _s("c_z", "tokens per compressed KV row of those layers", "token", "model", "c_{z}")
x_cw = _s("x_cw", "the compressed layers also attend a sliding window of S_w raw tokens (1: DeepSeek-V4)",
          "1", "model", "x_{cw}", nonneg=True)
h_I = _s("h_I", "indexer heads of a sparse-attention layer (its scores over every cached token)", "1",
         "model", "h_{I}", nonneg=True)
d_I = _s("d_I", "indexer head size", "1", "model", "d_{I}", nonneg=True)
m_I = _s("m_I", "indexer key-cache bytes per token per sparse layer (keys and their scales)", "B",
         "model", "m_{I}", nonneg=True)
phi_lm = _s("phi_lm", "linear-attention or state-space mixers (gated DeltaNet, KDA, Mamba-2) per "
           "layer: a fixed-size state per sequence instead of a KV cache", "1", "model",
            r"\phi_{lm}", nonneg=True)
F_lt = _s("F_lt", "FLOPs per token of one linear mixer's core (its recurrence and short convolution; in "
          "prefill also the chunked form's work inside each chunk)", "FLOP", "model", "F_{lt}", nonneg=True)
m_st = _s("m_st", "bytes of one linear mixer's state per sequence (the recurrent state and the "
          "convolution window), split by heads over attention TP", "B", "model", "m_{st}", nonneg=True)
n_mtp = _s("n_mtp", "MTP modules held in memory (0 when speculative decoding is off)", "1",
           "model", "n_{mtp}", nonneg=True)
x_mtp = _s("x_mtp", "speculation drafts with the model's own MTP layers (1) or with a separate draft "
           "head (0)", "1", "model", "x_{mtp}", nonneg=True)
n_Ldr = _s("n_Ldr", "decoder layers of the draft head held (EAGLE-style; 0 without one)", "1", "model",
           "n_{L,dr}", nonneg=True)
f_dr = _s("f_dr", "draft head FFN intermediate size", "1", "model", "f_{dr}", nonneg=True)
n_fuse = _s("n_fuse", "verifier hidden states the draft head's input projection fuses (EAGLE-3: 3)", "1",
            "model", "n_{fuse}", nonneg=True)
V_dr = _s("V_dr", "rows of the LM head a draft pass multiplies (the verifier's V, or the draft head's own "
          "smaller vocabulary)", "token", "model", "V_{dr}", nonneg=True)
n_hdr = _s("n_hdr", "LM heads of its own the draft head holds (0: shares the verifier's)", "1", "model",
           "n_{h,dr}", nonneg=True)

# ---- precision (bytes per element) ---------------------------------------------------------
b_we = _s("b_we", "bytes per routed-expert weight", "B", "precision", "b_{we}")
b_wa = _s("b_wa", "bytes per attention weight", "B", "precision", "b_{wa}")
b_wd = _s("b_wd", "bytes per shared-expert / dense-FFN weight", "B", "precision", "b_{wd}")
b_wv = _s("b_wv", "bytes per embedding / LM-head weight", "B", "precision", "b_{wv}")
b_kv = _s("b_kv", "bytes per KV-cache element", "B", "precision", "b_{kv}")
b_a = _s("b_a", "bytes per activation element in all-reduce", "B", "precision", "b_{a}")
b_disp = _s("b_disp", "bytes per element in the EP dispatch", "B", "precision", "b_{disp}")
b_comb = _s("b_comb", "bytes per element in the EP combine", "B", "precision", "b_{comb}")

# ---- hardware (per GPU) ---------------------------------------------------------------------
P_e = _s("P_e", "dense peak for the routed experts' compute dtype", "FLOP/s", "hardware", "P_{e}")
P_a = _s("P_a", "dense peak for the attention projections' compute dtype", "FLOP/s", "hardware", "P_{a}")
P_d = _s("P_d", "dense peak for the shared/dense FFN compute dtype", "FLOP/s", "hardware", "P_{d}")
P_v = _s("P_v", "dense peak for the LM head's compute dtype", "FLOP/s", "hardware", "P_{v}")
P_c = _s("P_c", "dense peak for the attention core (BF16 MMA; FP8 in a prefill pass over an FP8 KV cache, "
         "whose context kernels multiply in FP8)", "FLOP/s", "hardware", "P_{c}")
B_hbm = _s("B_hbm", "HBM bandwidth", "B/s", "hardware", "B_{hbm}")
C_hbm = _s("C_hbm", "HBM capacity", "B", "hardware", "C_{hbm}")
N_su = _s("N_su", "GPUs per scale-up (NVLink) domain", "1", "hardware", "N_{su}")
B_su = _s("B_su", "scale-up bandwidth per GPU per direction", "B/s", "hardware", "B_{su}")
a_su = _s("a_su", "scale-up latency per message", "s", "hardware", r"\alpha_{su}", nonneg=True)
x_nvls = _s("x_nvls", "the scale-up switch reduces an all-reduce in the fabric (1: NVLink SHARP / NCCL "
            "NVLS on an NVSwitch; 0: peer-to-peer over PCIe, ring or tree)", "1", "hardware", r"x_{nvls}",
            nonneg=True)
n_sw = _s("n_sw", "GPUs under one switch of the scale-up fabric, whose peer traffic stays in that switch "
          "(an NVSwitch domain: N_su; a PCIe server: the GPUs under one PCIe switch)", "1", "hardware",
          "n_{sw}")
B_hb = _s("B_hb", "bandwidth per GPU per direction of scale-up traffic that leaves its switch and crosses "
          "the host (a PCIe switch's uplink to the CPU shared by its GPUs; an NVSwitch domain: B_su)",
          "B/s", "hardware", "B_{hb}")
x_tor = _s("x_tor", "the scale-up domain is a torus of point-to-point links (1: TPU ICI) rather than a "
           "switch (0: any GPU one hop from any other)", "1", "hardware", r"x_{tor}", nonneg=True)
K_y = _s("K_y", "torus shape of the scale-up domain, chips per ring in its second dimension (the first is "
         "N_su / (K_y K_z))", "1", "hardware", "K_{y}")
K_z = _s("K_z", "torus shape, chips per ring in its third dimension", "1", "hardware", "K_{z}")
n_lk = _s("n_lk", "point-to-point scale-up links per chip (a 3D torus: 6; B_su is their sum)", "1",
          "hardware", "n_{lk}")
B_so = _s("B_so", "scale-out bandwidth per GPU per direction", "B/s", "hardware", "B_{so}")
a_so = _s("a_so", "scale-out latency per message", "s", "hardware", r"\alpha_{so}", nonneg=True)
C_host = _s("C_host", "CPU-attached memory reachable per GPU", "B", "hardware", "C_{host}", nonneg=True)
B_c2c = _s("B_c2c", "bandwidth to CPU-attached memory per GPU per direction", "B/s", "hardware",
           "B_{c2c}")
eta_c = _s("eta_c", "achieved fraction of compute peak", "1", "efficiency", r"\eta_{c}")
eta_fa = _s("eta_fa", "achieved fraction of the peak P_c in the attention core's FLOPs (the prefill "
           "attention kernels' fitted fraction in a prefill pass; eta_c in a decode step)", "1", "efficiency",
           r"\eta_{fa}")
eta_ce = _s("eta_ce", "achieved fraction of the dense peak in the routed experts' grouped GEMMs (the stack's "
           "grouped-MoE kernel law where it carries one for the weight format; eta_c otherwise)", "1",
           "efficiency", r"\eta_{ce}")
eta_xa = _s("eta_xa", "achieved fraction of HBM bandwidth of the routed experts' per-row activation traffic "
            "(the stack's grouped-MoE kernel law: its input rows gathered, its gate/up product written and "
            "read back, its output written)", "1", "efficiency", r"\eta_{xa}")
eta_xt = _s("eta_xt", "achieved fraction of HBM bandwidth of the routed experts' per-token activation "
            "traffic (the stack's grouped-MoE kernel law: each entering token's hidden state read and "
            "combined output written, with the layer's per-token routing and permutation work)", "1",
            "efficiency", r"\eta_{xt}")
x_xa = _s("x_xa", "the routed experts pay their per-row and per-token activation traffic (1: realistic "
          "mode where the stack carries a grouped-MoE law; 0: bound mode, the roofline)", "1", "efficiency",
          "x_{xa}", nonneg=True)
X_sm = _s("X_sm", "exponentials per second the attention core's softmax sustains, one per score "
          "(query row x key x head), not overlapped with its MMAs (fitted to the GQA prefill attention "
          "kernels: a prefill pass takes the law's value; a decode step, MLA prefill and bound mode "
          "infinity, the term 0)", "1/s", "efficiency", "X_{sm}")
kappa_lc = _s("kappa_lc", "time of a prefill attention kernel's longest CTA (the last query tile of a "
              "causal prompt, attending the whole prompt) beyond the GPU's share of the total, relative "
              "to that CTA's work at the kernel's mean rate per SM: greedy scheduling of uneven CTAs "
              "ends at most one longest CTA after the mean (kappa_lc = 1; fitted to the prefill attention "
              "kernels: a prefill pass takes the law's value, a decode step and bound mode 0)", "1",
              "efficiency", r"\kappa_{lc}", nonneg=True)
t_qt = _s("t_qt", "query rows per CTA of a prefill attention kernel (128: FlashAttention-3's Hopper tile "
          "at head dims above 64, hopper/tile_size.h; FlashAttention's Blackwell forward at one query "
          "stage)", "1", "efficiency", "t_{qt}")
S_a0 = _s("S_a0", "context tokens' worth of attention-core work each query row costs beyond its "
           "context (loading the query, the softmax epilogue, writing the output; fitted to attention "
           "kernels: a prefill pass takes the prefill laws' value, a decode step and bound mode 0)",
           "token", "efficiency", "S_{a0}", nonneg=True)
eta_m = _s("eta_m", "achieved fraction of memory bandwidth", "1", "efficiency", r"\eta_{m}")
eta_em = _s("eta_em", "achieved fraction of HBM bandwidth of the routed experts' weight stream (the stack's "
            "grouped-MoE kernel law where it carries one for the weight format; eta_m otherwise)", "1",
            "efficiency", r"\eta_{em}")
t_m0 = _s("t_m0", "rows of the smallest tile a grouped GEMM runs an expert on (16: the m16n8k16 MMA; the "
          "kernels size an expert's tile to its mean rows, from t_m0 up to t_m)", "1", "hardware", "t_{m0}")
x_al = _s("x_al", "a decode step's attention core follows the stack's decode attention kernel law for its "
          "attention kind and KV dtype (1) or the roofline with the step's fractions (0: no law, a prefill "
          "pass, bound mode)", "1", "efficiency", "x_{al}", nonneg=True)
eta_a = _s("eta_a", "achieved fraction of the peak P_c of a decode attention kernel's FLOPs (its law, fitted "
           "to measured decode attention kernels)", "1", "efficiency", r"\eta_{a}")
eta_am = _s("eta_am", "achieved fraction of HBM bandwidth of a decode attention kernel's KV read (its law)",
            "1", "efficiency", r"\eta_{am}")
t_r = _s("t_r", "work per block (sequence, KV head; per query head on TensorRT-LLM's MMHA) of a GQA decode "
         "kernel: loading the query, the softmax, writing the output; overlaps the KV stream (its law; 0 "
         "for MLA)", "s", "efficiency", "t_{r}", nonneg=True)
beta_c = _s("beta_c", "rate one CTA of a split-KV decode attention kernel streams its share of the KV cache "
            "at (its law; infinite where not fitted)", "B/s", "efficiency", r"\beta_{c}")
t_c = _s("t_c", "SM time per CTA of a split-KV decode attention kernel: its prologue, its partial result "
         "written and reduced (its law; 0 where not fitted)", "s", "efficiency", "t_{c}", nonneg=True)
t_q = _s("t_q", "SM time per CTA per element of its query heads of a decode attention kernel (its law; 0 "
         "where not fitted)", "s", "efficiency", "t_{q}", nonneg=True)
phi_rp = _s("phi_rp", "share of each repeated pass over an MLA decode kernel's KV (a further head tile's or "
            "value slice's) that comes from HBM, the rest hitting L2 (its law; 0 where not fitted)", "1",
            "efficiency", r"\phi_{rp}", nonneg=True)
n_sub = _s("n_sub", "CTAs per block of a split-KV (multi-block) decode attention kernel, each streaming "
           "1 / n_sub of the block's context: its dispatcher's count (planner.physics.dispatch."
           "decode_dispatch; 1 where not modelled)", "1", "efficiency", "n_{sub}")
n_ht = _s("n_ht", "CTAs per sequence of an MLA decode kernel that each stream the sequence's whole latent "
          "KV range: head tiles x value-dimension slices (trtllm-gen's dispatch on Blackwell; 1 elsewhere)",
          "1", "efficiency", "n_{ht}")
n_blk = _s("n_blk", "blocks (CTAs before the KV split) a decode attention kernel runs per sequence on the "
           "GPU: its KV heads (GQA), its query heads (TensorRT-LLM's MMHA), head tiles x value slices of a "
           "KV split (MLA: 1 elsewhere, 2 on trtllm-gen's 2-CTA kernel)", "1", "efficiency", "n_{blk}")
n_kvh = _s("n_kvh", "KV heads a decode attention kernel streams per sequence on the GPU (GQA h_kv / s_kv; "
           "MLA 1)", "1", "model", "n_{kvh}")
e_q = _s("e_q", "elements of one query head a decode attention kernel loads (GQA d_head; MLA absorbed "
         "r_kv + d_r)", "1", "model", "e_{q}")
eta_su = _s("eta_su", "achieved fraction of scale-up bandwidth", "1", "efficiency", r"\eta_{su}")
eta_ar = _s("eta_ar", "achieved fraction of scale-up bandwidth in an all-reduce", "1", "efficiency",
            r"\eta_{ar}")
a_ar = _s("a_ar", "latency per pass of an all-reduce inside a scale-up domain", "s", "efficiency",
          r"\alpha_{ar}", nonneg=True)
N_ar = _s("N_ar", "GPUs the serving stack's own all-reduce kernel spans; a larger group goes through NCCL "
         "(SGLang: one host; vLLM: 8 GPUs; TensorRT-LLM: the scale-up domain; over PCIe vLLM and SGLang 2, "
         "TensorRT-LLM 1; bound mode: every group, the in-switch reduction everywhere)", "1",
         "efficiency", "N_{ar}")
m_o4 = _s("m_o4", "largest message (bytes per GPU) the stack's custom all-reduce sends one-shot over 3 or 4 "
         "GPUs; larger, two-shot (vLLM's and SGLang's kernel: 512 KiB; TensorRT-LLM: its custom-kernel "
         "limit m_cu; bound mode: 0)", "B", "efficiency", "m_{o4}", nonneg=True)
m_o8 = _s("m_o8", "largest message the stack's custom all-reduce sends one-shot over 5 to 8 GPUs (vLLM, "
         "SGLang: 256 KiB; TensorRT-LLM: m_cu; bound mode: 0)", "B", "efficiency", "m_{o8}", nonneg=True)
N_mn = _s("N_mn", "GPUs of one host: a larger all-reduce group of the stack spans hosts of a multi-node "
         "NVLink domain (4 on GB200 and GB300 NVL72) and takes the stack's multi-node path (x_mn; "
         "SGLang, whose kernel spans one host, goes to NCCL beyond it, N_ar; bound mode: every group)",
         "1", "efficiency", "N_{mn}")
x_mn = _s("x_mn", "1 where the stack's own all-reduce kernel spans the hosts of a multi-node NVLink domain "
         "(TensorRT-LLM's MNNVL kernel), 0 where it stops at the host and a group over hosts takes the "
         "large-message path (vLLM: its custom all-reduce disables itself across nodes; its symmetric-memory "
         "all-reduce reduces in the switch, or NCCL)", "1", "efficiency", "x_{mn}")
m_on = _s("m_on", "largest all-gathered payload n m (bytes) the stack's multi-node NVLink all-reduce sends "
         "one-shot; larger, two-shot (TensorRT-LLM: 1 MiB, _MNNVL_ONE_SHOT_THRESHOLD_BYTES; bound mode: 0)",
         "B", "efficiency", "m_{on}", nonneg=True)
m_cu = _s("m_cu", "largest message the stack's custom all-reduce kernel takes; a larger one goes the "
         "large-message path (NCCL's ring, or the switch's in-network reduction; 8 MiB; bound mode: 0)",
         "B", "efficiency", "m_{cu}", nonneg=True)
eta_nv = _s("eta_nv", "achieved fraction of scale-up bandwidth of a large all-reduce reduced in the switch "
           "(NVLink SHARP; fitted to the stack's all-reduce kernels)", "1", "efficiency", r"\eta_{nv}")
t_n0 = _s("t_n0", "fixed cost of one NCCL all-reduce call: launch, proxy, protocol setup (fitted to the "
          "system's NCCL kernels)", "s", "efficiency", "t_{n0}", nonneg=True)
a_nc = _s("a_nc", "latency per ring step of an NCCL all-reduce on its Simple protocol (fitted to the "
          "system's NCCL kernels)", "s", "efficiency", r"\alpha_{nc}", nonneg=True)
a_nl = _s("a_nl", "latency per ring step of an NCCL all-reduce on its LL protocol, which moves twice the "
          "data (fitted to the system's NCCL kernels; a_nc where not fitted)", "s", "efficiency",
          r"\alpha_{nl}", nonneg=True)
a_nm = _s("a_nm", "latency per ring step of an NCCL all-reduce on its LL128 protocol, which moves 16/15 "
          "of the data (fitted to the system's NCCL kernels; a_nc where not fitted)", "s", "efficiency",
          r"\alpha_{nm}", nonneg=True)
eta_nc = _s("eta_nc", "achieved fraction of scale-up bandwidth in an NCCL all-reduce's ring (fitted to the "
            "system's NCCL kernels)", "1", "efficiency", r"\eta_{nc}")
eta_hb = _s("eta_hb", "achieved fraction of the host bridge's bandwidth B_hb for scale-up traffic that "
            "leaves its PCIe switch and crosses the CPU's root complex (fitted to the system's NCCL "
            "kernels, whose rings stay in one switch over n_sw GPUs and cross the host beyond; 1 on NVLink: "
            "no bridge)", "1", "efficiency", r"\eta_{hb}")
eta_a2a = _s("eta_a2a", "achieved fraction of scale-up bandwidth in an expert all-to-all", "1", "efficiency",
             r"\eta_{a2a}")
a_a2a = _s("a_a2a", "latency per phase (dispatch or combine) of an expert all-to-all in a scale-up domain",
           "s", "efficiency", r"\alpha_{a2a}", nonneg=True)
a_disp = _s("a_disp", "floor of the dispatch phase of the low-latency expert all-to-all kernels (DeepEP "
            "low-latency and their kin: launch, barrier, the receiver's polling, packing and quantizing) "
            "under attention data parallelism, fitted per GPU, stack and dispatch dtype to measured "
            "kernels", "s", "efficiency", r"\alpha_{disp}", nonneg=True)
a_comb = _s("a_comb", "floor of the combine phase of those kernels (the weighted sum of the expert outputs "
            "included), fitted per GPU, stack and combine dtype to measured kernels", "s", "efficiency",
            r"\alpha_{comb}", nonneg=True)
phi_fl = _s("phi_fl", "share of the low-latency all-to-all kernels' isolated floor (a_disp, a_comb) a phase "
            "pays inside a serving step (the ranks arrive together and the launch is in the step's CUDA "
            "graph; fitted to the measured runs per GPU family)", "1", "efficiency", r"\phi_{fl}",
            nonneg=True)
eta_so = _s("eta_so", "achieved fraction of scale-out bandwidth", "1", "efficiency", r"\eta_{so}")
tau_k = _s("tau_k", "fixed cost per kernel (launch and ramp inside a CUDA graph, sync)", "s", "efficiency",
           r"\tau_{k}", nonneg=True)
t_fixed = _s("t_fixed", "fixed cost per step (sampling, scheduling)", "s", "efficiency",
             "t_{fixed}", nonneg=True)
tau_q = _s("tau_q", "host time per running sequence per decode step (the scheduler's per-request work: "
           "token bookkeeping, stop checks, output streaming), overlapped with the GPU's step", "s",
           "efficiency", r"\tau_{q}", nonneg=True)
r_mem = _s("r_mem", "fraction of HBM the serving stack leaves out of its memory budget (vLLM's "
           "1 - gpu_memory_utilization)", "1", "efficiency", "r_{mem}", nonneg=True)
x_mem = _s("x_mem", "fraction of the memory left after weights and workspace that the serving stack gives "
           "its KV pool (TensorRT-LLM's free_gpu_memory_fraction; 1 elsewhere)", "1", "efficiency", "x_{mem}",
           nonneg=True)
M_ws = _s("M_ws", "memory per GPU kept beside the weights outside the KV pool: activations of the largest "
          "pass, CUDA graphs, the CUDA context", "B", "efficiency", "M_{ws}", nonneg=True)
eta_o = _s("eta_o", "overlap efficiency: share of the shorter of a micro-batch's compute and communication "
            "that the other micro-batch hides (two-micro-batch overlap)", "1", "efficiency", r"\eta_{o}")
lam = _s("lambda", "load imbalance: max/mean tokens per expert-parallel rank", "1", "efficiency",
         r"\lambda")
N_ss = _s("N_ss", "tokens per attention rank up to which the serving stack runs the shared experts on a "
          "second CUDA stream beside the routed experts: decode steps under CUDA graphs (TensorRT-LLM: "
          "every captured step; SGLang: up to 1024 tokens; vLLM: up to 256); 0 in a prefill pass, which "
          "runs on one stream; bound mode: every step", "token", "efficiency", "N_{ss}", nonneg=True)

# ---- GEMM law throughput (fitted to measured GEMM kernels per GPU, stack, dtype; operators.gemm_law)
#: one set per tensor class of the step's dense GEMMs: a = attention projections, d = dense FFN,
#: shared experts and draft head, v = LM head (each multiplies in its own dtype).  The routed
#: experts' grouped GEMMs are not among them: priced by the dense GEMM law (rows per expert padded to
#: whole tiles) the measured runs on Blackwell come out 1.5x slower at p90, so grouped kernels need
#: a law of their own.
x_g = _s("x_g", "the dense GEMMs follow the GEMM law fitted to measured kernels (1) or the roofline with "
         "the step's fractions (0)", "1", "efficiency", "x_{g}", nonneg=True)
t_m = _s("t_m", "GEMM tile height: rows are padded to a multiple of it (64 Hopper, 128 Blackwell)", "1",
         "hardware", "t_{m}")
t_n = _s("t_n", "GEMM tile width: output columns are tiled in blocks of it (128; the tile count sets "
         "the waves)",
         "1", "hardware", "t_{n}")
N_sm = _s("N_sm", "streaming multiprocessors of the GPU: the tiles of a GEMM run in waves of this many "
          "(1 where the spec gives none: no wave quantization)", "1", "hardware", "N_{SM}")
_GEMM_CLASSES = {"a": "attention projections", "d": "dense FFN, shared experts and draft head",
                 "v": "LM head"}
GEMM_LAW: dict[str, dict[str, sp.Symbol]] = {}
for _c, _what in _GEMM_CLASSES.items():
    GEMM_LAW[_c] = {
        "eta_g": _s(f"eta_g{_c}", f"fraction of the dense peak the GEMMs of the {_what} reach (GEMM law)",
                    "1", "efficiency", rf"\eta_{{g,{_c}}}"),
        "eta_gm": _s(f"eta_gm{_c}", f"fraction of HBM bandwidth the GEMMs of the {_what} stream at "
                     "(GEMM law)", "1", "efficiency", rf"\eta_{{gm,{_c}}}"),
        "w_g": _s(f"w_g{_c}", f"share of the idle SMs of a GEMM's last wave that the GEMMs of the {_what} "
                  "pay for (GEMM law; 0 where split-K or stream-K fills it)", "1", "efficiency",
                  rf"w_{{g,{_c}}}", nonneg=True),
    }

# ---- kernels per layer (the latency floor counts kernels, not operators) ---------------------
n_ka = _s("n_ka", "kernels per layer of the attention projections (norm, projections, rotary, cache write)",
          "1", "model", "n_{k,a}", integer=True)
n_kc = _s("n_kc", "kernels per layer of the attention core", "1", "model", "n_{k,c}", integer=True)
n_ke = _s("n_ke", "kernels per MoE layer of the routed experts (norm, router, top-k, grouped GEMMs, "
          "activation, finalize)", "1", "model", "n_{k,e}", integer=True)
n_ks = _s("n_ks", "kernels per MoE layer of the shared experts", "1", "model", "n_{k,s}", integer=True)
n_kd = _s("n_kd", "kernels per dense-FFN layer (norm, gate-up, activation, down)", "1", "model",
          "n_{k,d}", integer=True)
n_kh = _s("n_kh", "kernels of the LM head and sampling", "1", "model", "n_{k,h}", integer=True)
n_kx = _s("n_kx", "kernels on the critical path of a sparse layer's indexer", "1", "model", "n_{k,x}",
          integer=True)

# ---- layout ---------------------------------------------------------------------------------
G = _s("G", "GPUs in the instance", "1", "layout", integer=True)
TP_a = _s("TP_a", "attention tensor parallel", "1", "layout", "TP_{a}", integer=True)
EP = _s("EP", "expert parallel", "1", "layout", integer=True)
TP_e = _s("TP_e", "expert tensor parallel", "1", "layout", "TP_{e}", integer=True)
E_slots = _s("E_slots", "expert slots (routed + redundant replicas)", "1", "layout", "E_{slots}",
             integer=True)
s_kv = _s("s_kv", "ways the KV cache is split across attention-TP ranks (MLA 1; GQA min(TP_a, h_kv))",
          "1", "layout", "s_{kv}")
M_nl = _s("M_nl", "most scale-up domains a token's experts may span (node-limited routing; the model's "
          "routed experts per token k where it has none)", "1", "layout", "M_{nl}")
x_fw = _s("x_fw", "the expert all-to-all sends one scale-out copy per remote scale-up domain and forwards it "
          "inside that domain (1: DeepEP's normal kernels, a prefill pass; bound mode) or one copy per "
          "remote GPU (0: its low-latency kernels, a decode step)", "1", "layout", "x_{fw}", nonneg=True)
o_tbo = _s("o", "two-micro-batch overlap on (1) or off (0)", "1", "layout", nonneg=True)
x_off = _s("x_off", "KV may spill to CPU-attached memory (1) or not (0)", "1", "layout",
           "x_{off}", nonneg=True)

# ---- workload -------------------------------------------------------------------------------
b = _s("b", "sequences per attention-DP rank", "1", "workload")
S = _s("S", "mean KV (context) length attended per query token", "token", "workload")
S_c = _s("S_c", "KV length held in the cache per sequence (decode: S; prefill: the prompt)",
         "token", "workload", "S_{c}")
s_q = _s("s_q", "query tokens per sequence per step (1 + draft tokens; the prompt in prefill)",
         "token", "workload", "s_{q}")
s_h = _s("s_h", "tokens per sequence through the LM head", "token", "workload", "s_{h}")
n_d = _s("n_d", "draft tokens per step (speculative decoding / MTP)", "token", "workload",
         "n_{d}", nonneg=True)
A = _s("A", "mean tokens emitted per sequence per step", "token", "workload")


def symbol(name: str) -> sp.Symbol:
    return REGISTRY[name].symbol


def by_symbol() -> dict[sp.Symbol, tuple[str, Sym]]:
    return {s.symbol: (n, s) for n, s in REGISTRY.items()}
