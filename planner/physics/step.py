"""Evaluate the step model: specs + layout + workload -> symbol values -> compiled equations.

:func:`decode_step` and :func:`prefill` answer one configuration with a typed result;
:func:`evaluate_configs` answers whole grids (numpy arrays) for the frontier search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from planner.errors import SpecError, shown
from planner.physics import compiled
from planner.physics.dispatch import MLA_KV_CAST, decode_dispatch, trtllm_mmha
from planner.specs.hardware import FAMILY_REFERENCE, Hardware
from planner.specs.model import Model
from planner.specs.precision import compute_dtype, get_precision, kv_bytes
from planner.specs.registry import load_hardware, load_model
from planner.specs.scenario import Scenario

Mode = Literal["bound", "realistic"]
MODES = ("bound", "realistic")
#: Bytes per element on the wire for the EP dispatch, by the experts' compute dtype: FP8 with a
#: FP32 scale per 128 (DeepEP), NVFP4 (E2M1 + E4M3 per 16), BF16.  Combine is always BF16.
DISPATCH_BYTES = {"fp4": 0.5625, "fp8": 1.0 + 4.0 / 128.0, "bf16": 2.0}
COMBINE_BYTES = 2.0
#: Bottleneck categories, in the order they are reported (``hbm_weights``: the HBM streams of the
#: weights and of the routed experts' activation passes; ``kv_read``: the KV cache's).
CATEGORIES = ("compute", "hbm_weights", "kv_read", "scale_up", "scale_out", "latency")


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding / MTP: ``drafts`` tokens per step, emitting ``accepted`` on average."""

    drafts: int = 0
    acceptance_rate: float | None = None       #: per-token acceptance alpha
    mean_acceptance_length: float | None = None  #: measured tokens per step, overrides alpha
    kind: str = "mtp"                          #: "mtp" (the model's own layers) or "draft" (a head)
    source: str = ""                           #: where the acceptance comes from

    def tokens_per_step(self, mode: str) -> float:
        """A: tokens emitted per sequence per step; ``bound`` mode takes the best case."""
        if self.drafts == 0:
            return 1.0
        if mode == "bound":
            return float(self.drafts + 1)
        if self.mean_acceptance_length is not None:
            return float(self.mean_acceptance_length)
        return float(compiled.evaluate_named("tokens_per_step", alpha=self.acceptance_rate,
                                             n_draft=self.drafts))


def speculation_kind(model: Model) -> str:
    """How ``model`` drafts: as published (``speculation.kind``), else with its MTP layers where
    it has them, else with a draft head (the model's own or the default EAGLE-3 style one)."""
    return model.spec_kind or ("mtp" if model.mtp_layers else "draft")


#: The draft head assumed for a model that publishes none (EAGLE-3 style: one decoder layer with
#: the verifier's attention, a dense FFN, a projection fusing 3 verifier hidden states and an LM
#: head of its own over the full vocabulary; Li et al., EAGLE-3, arXiv:2503.01840, sec. 3).  The
#: FFN width is the model's dense FFN where it has one, else 3 d.
DEFAULT_DRAFT_HEAD = {"layers": 1, "fused_hidden_states": 3, "own_lm_head": True}


def draft_head(model: Model) -> dict[str, int]:
    """The draft head's shape: (layers, FFN width, fused states, own LM heads, LM-head rows)."""
    if model.spec_kind == "draft":
        return {"n_Ldr": model.draft_layers, "f_dr": model.draft_ffn, "n_fuse": model.draft_fuse,
                "n_hdr": int(model.draft_own_head), "V_dr": model.draft_vocab or model.V}
    return {"n_Ldr": DEFAULT_DRAFT_HEAD["layers"], "f_dr": model.f_d or 3 * model.d,
            "n_fuse": DEFAULT_DRAFT_HEAD["fused_hidden_states"],
            "n_hdr": int(DEFAULT_DRAFT_HEAD["own_lm_head"]), "V_dr": model.V}


def _given_acceptance(model: Model, drafts: int, acceptance: float) -> Speculation:
    """``acceptance`` as a user gives it: tokens per step (>= 1) or a per-draft rate (< 1)."""
    kind = speculation_kind(model)
    if isinstance(acceptance, bool) or not isinstance(acceptance, int | float | np.number) or not (
            math.isfinite(acceptance) and acceptance > 0):
        raise SpecError("<input>", "acceptance",
                        "tokens per step (1 to drafts + 1) or a per-draft rate in (0, 1), "
                        f"got {shown(acceptance)}")
    if acceptance >= 1.0:
        if acceptance > drafts + 1:
            raise SpecError("<input>", "acceptance",
                            f"at most drafts + 1 = {drafts + 1} tokens per step, got {acceptance:g}")
        return Speculation(drafts, mean_acceptance_length=float(acceptance), kind=kind, source="given")
    return Speculation(drafts, acceptance_rate=float(acceptance), kind=kind, source="given")


def resolve_speculation(model: Model, mtp: Any, acceptance: float | None = None) -> Speculation:
    """``mtp`` as given by a user: None/False/0/'off', an int, or a mapping/Speculation.

    The acceptance is, in order: ``acceptance`` (tokens per step, or a per-draft rate below 1),
    the mapping's own, the model's published tokens per step at that draft count
    (``speculation:``), its published per-draft rate (``mtp:``)."""
    if isinstance(mtp, Speculation):
        spec = mtp
    elif mtp is None or mtp is False or mtp == 0 or mtp == "off":
        return Speculation()
    elif isinstance(mtp, bool):
        spec = Speculation(drafts=1)
    elif isinstance(mtp, int | np.integer):
        spec = Speculation(drafts=int(mtp))
    elif isinstance(mtp, str) and mtp.isdigit():
        spec = Speculation(drafts=int(mtp))
    elif isinstance(mtp, dict):
        spec = Speculation(
            drafts=int(mtp.get("draft_tokens", mtp.get("drafts", 1))),
            acceptance_rate=mtp.get("acceptance_rate"),
            mean_acceptance_length=mtp.get("mean_acceptance_length"),
        )
    else:
        raise SpecError("<input>", "mtp", f"off or a number of draft tokens, got {shown(mtp)}")
    if spec.drafts < 0 or spec.drafts > 16:
        raise SpecError("<input>", "mtp", f"0 to 16 draft tokens, got {spec.drafts}")
    if spec.drafts == 0:
        return Speculation()
    kind = speculation_kind(model)
    if acceptance is not None:
        return _given_acceptance(model, spec.drafts, acceptance)
    if spec.mean_acceptance_length is not None:
        if not 1.0 <= spec.mean_acceptance_length <= spec.drafts + 1:
            raise SpecError("<input>", "mtp.mean_acceptance_length",
                            f"between 1 and drafts + 1 = {spec.drafts + 1}")
        return Speculation(spec.drafts, mean_acceptance_length=spec.mean_acceptance_length, kind=kind,
                           source=spec.source or "given")
    if spec.acceptance_rate is None:
        if spec.drafts in model.spec_tokens:
            return Speculation(spec.drafts, mean_acceptance_length=model.spec_tokens[spec.drafts],
                               kind=kind, source=model.spec_source)
        if model.mtp_acceptance <= 0:
            measured = (f"measured at {', '.join(map(str, model.spec_tokens))} draft tokens only"
                        if model.spec_tokens else "no published default")
            raise SpecError("<input>", "mtp",
                            f"an acceptance: {model.name} has {measured} (give --acceptance, "
                            "acceptance_rate or mean_acceptance_length)")
        spec = Speculation(spec.drafts, acceptance_rate=model.mtp_acceptance, kind=kind,
                           source=model.mtp_source)
    if not 0.0 < spec.acceptance_rate < 1.0:
        raise SpecError("<input>", "mtp.acceptance_rate", "a rate in (0, 1)")
    return Speculation(spec.drafts, acceptance_rate=spec.acceptance_rate, kind=kind,
                       source=spec.source or "given")


@dataclass(frozen=True)
class Precisions:
    """Storage format per tensor class and the compute dtype each multiplies in."""

    weights: dict[str, str]
    kv: str
    compute: dict[str, str]

    @property
    def label(self) -> str:
        return f"{self.weights['routed_experts']} experts / {self.weights['attention']} attn / {self.kv} KV"


def resolve_precisions(model: Model, hw: Hardware, weights: str | None = None,
                       kv: str | None = None, overrides: dict[str, str] | None = None) -> Precisions:
    """Model defaults, with ``weights`` replacing the routed-expert format, ``kv`` the KV
    format and ``overrides`` any class.  FP4 formats need FP4 tensor cores only for speed.
    A dense model has no routed experts: there ``weights`` sets the dense-FFN format, the
    tensors that take the experts' place."""
    prec = dict(model.precision)
    if weights is not None:
        get_precision(weights, "<input>", "weights")
        prec["routed_experts"] = weights
        if model.is_dense:
            prec["dense_ffn"] = weights
    for cls, name in (overrides or {}).items():
        if cls not in prec:
            raise SpecError("<input>", "precision", f"a tensor class among {', '.join(prec)}, got {cls!r}")
        get_precision(name, "<input>", f"precision.{cls}")
        prec[cls] = name
    if kv is not None and not (isinstance(kv, str) and kv.strip()):
        raise SpecError("<input>", "kv", f"a KV-cache format such as bf16 or fp8, got {kv!r}")
    kv = kv or model.kv_precision
    kv_bytes(kv, "<input>", "kv")
    available = tuple(hw.flops)
    comp = {c: compute_dtype(get_precision(p), available) for c, p in prec.items()}
    return Precisions(prec, kv, comp)


#: Rows per MMA tile by GPU family: 64 on Hopper (a WGMMA instruction is 64 rows; DeepGEMM's
#: block_m 64), 128 on Blackwell (tcgen05 UMMA tiles are 128 rows per CTA).
TILE_M = {"hopper": 64.0, "blackwell": 128.0}
#: Output columns per GEMM tile, for counting a GEMM's tiles against the SMs (wave quantization):
#: 128 on both families (the tile width of CUTLASS's default SM90 and SM100 GEMM configurations,
#: 128 x 128 on Hopper, 128 x 128 per CTA on Blackwell; 256-wide tiles fitted the measured GEMMs
#: no better).
TILE_N = 128.0
#: The GEMM law's dtype by compute dtype (a weight format multiplied in FP8, such as INT4 W4A8,
#: takes the FP8 GEMMs' law; INT4 W4A16 the BF16 one).
LAW_DTYPE = {"fp4": "nvfp4", "fp8": "fp8", "bf16": "bf16"}


#: Rows of the smallest MMA tile a grouped GEMM runs an expert on: 16, the M of the m16n8k16 MMA
#: and the least ``BLOCK_SIZE_M`` Triton's ``tl.dot`` takes (SGLang's and vLLM's fused-MoE
#: kernels pick it, from their tuned configs, for experts with few rows).
MOE_MIN_TILE = 16.0


#: FAMILY_REFERENCE (planner.specs.hardware): the GPU of each family whose measured kernel laws a
#: spec of its family without kernel tables of its own borrows, and whose SM count it takes where
#: its spec states none.


def sm_count(hw: Hardware) -> float:
    """``N_sm`` of ``hw``: its spec's SM count, else its family reference's (:data:`FAMILY_REFERENCE`:
    the laws it borrows were fitted on that GPU, their per-CTA and per-row SM times at that count;
    with 1 SM a borrowed decode attention law would run every CTA of the grid one after another),
    else 1."""
    if hw.sm_count:
        return float(hw.sm_count)
    ref = FAMILY_REFERENCE.get(hw.family)
    if ref is None or ref == hw.name.split("@")[0]:
        return 1.0
    from planner.specs.registry import load_hardware

    return float(load_hardware(ref).sm_count or 1)


def gemm_tiles(hw: Hardware) -> dict[str, float]:
    """The GEMM law's tiling of ``hw``: tile height ``t_m`` (1 for a family without one: no
    padding), width ``t_n`` and SMs ``N_sm`` (:func:`sm_count`); and ``t_m0``, the least tile a
    grouped GEMM sizes an expert's rows to (at most ``t_m``)."""
    t_m = TILE_M.get(hw.family, 1.0)
    return {"t_m": t_m, "t_n": TILE_N, "N_sm": sm_count(hw), "t_m0": min(MOE_MIN_TILE, t_m)}
#: GEMM-law class -> the tensor class whose compute dtype it multiplies in.
_LAW_CLASSES = {"a": "attention", "d": "dense_ffn", "v": "embeddings"}


def gemm_law_values(hw: Hardware, prec: Precisions, mode: str) -> dict[str, float]:
    """The GEMM-law symbols: in realistic mode, where the system's stack carries a fitted GEMM law
    for the dtype of every dense-GEMM class, ``x_g = 1`` and each class's throughput fractions;
    otherwise ``x_g = 0`` (the roofline) with neutral placeholders."""
    laws = {}
    if mode == "realistic":
        for c, cls in _LAW_CLASSES.items():
            dt = LAW_DTYPE.get(prec.compute[cls])
            law = hw.efficiency.gemm_law(dt) if dt else None
            if law is None:
                laws = {}
                break
            laws[c] = law
    v: dict[str, float] = {"x_g": 1.0 if laws else 0.0, **gemm_tiles(hw)}
    for c in _LAW_CLASSES:
        if laws:
            law = laws[c]
            v.update({f"eta_g{c}": law.compute, f"eta_gm{c}": law.hbm, f"w_g{c}": law.wave})
        else:
            v.update({f"eta_g{c}": 1.0, f"eta_gm{c}": 1.0, f"w_g{c}": 0.0})
    return v


#: The grouped-MoE law's weight dtype by routed-expert weight format and compute dtype (our FP8 is
#: block-scaled; MXFP4 multiplied in BF16 is W4A16).  INT4 W4A8 (TensorRT-LLM's ``w4afp8``) has no
#: measured table (the source's MoE tables hold bf16, fp8, fp8_block, nvfp4, w4a16_mxfp4 and
#: int4_wo); it takes the INT4 weight-only law: the same group-scaled 4-bit weights streamed (4.125
#: against 4.5 bits), floor and activation passes, its compute fraction at the FP8 peak it
#: multiplies at (on Hopper no stack but SGLang and vLLM has one: ``first_law``)
MOE_LAW_DTYPE = {("bf16", "bf16"): ("bf16",), ("fp16", "bf16"): ("bf16",),
                 ("fp8", "fp8"): ("fp8_block", "fp8"), ("nvfp4", "fp4"): ("nvfp4",),
                 ("mxfp4", "fp4"): ("nvfp4",), ("mxfp4", "bf16"): ("w4a16_mxfp4",),
                 ("int4_g32", "bf16"): ("int4_wo",), ("int4_a8", "fp8"): ("int4_wo",)}


#: Architectures SGLang runs on FlashInfer's TensorRT-LLM MoE on Blackwell; every other takes its
#: Triton fused MoE, the law fitted apart (``moe_<dtype>_triton``).  Its server arguments
#: (sglang/srt/server_args.py, 0.5.x), with no all-to-all backend and the runner left on auto:
#: DeepseekV3ForCausalLM (FP8, NVFP4, and Kimi K2's INT4), Qwen3MoeForCausalLM (BF16, FP8,
#: NVFP4), GptOssForCausalLM (MXFP4, FlashInfer's TensorRT-LLM kernels).  The kernel tables agree
#: shape by shape: their FlashInfer rows are these models' layers, their Triton rows Mixtral's,
#: Llama 4's, MiniMax-M2's and others.
SGLANG_TRTLLM_MOE = ("deepseek_v3", "kimi_k2", "qwen3_moe", "gpt_oss")


def moe_path(hw: Hardware, model: Model) -> str:
    """The grouped-MoE implementation the stack runs ``model``'s experts on: ``""`` for its main
    one, ``"triton"`` for SGLang's Triton fused MoE on Blackwell (:data:`SGLANG_TRTLLM_MOE`)."""
    if hw.stack == "sglang" and hw.family == "blackwell" and model.architecture not in SGLANG_TRTLLM_MOE:
        return "triton"
    return ""


def first_law(hw: Hardware, law_of: Any) -> tuple[str, Any, Any]:
    """(stack, its efficiencies, law): the law ``law_of(efficiencies)`` of ``hw``'s own stack, or
    where that has none the first of the same GPU's other stacks' (by name) that has one (None if
    none does).  A stack without a law fitted to kernels of some operator and format (TensorRT-LLM's
    tables on Hopper hold no INT4 W4A16 grouped MoE; vLLM's no MLA decode attention) takes the same
    GPU's other stacks' law for it, not the roofline at the fractions the runs fit to what the laws
    leave over."""
    others = [(name, e) for name, e in sorted(hw.stacks.items()) if name != hw.stack]
    for name, e in [(hw.stack, hw.efficiency), *others]:
        if (law := law_of(e)) is not None:
            return name, e, law
    return hw.stack, hw.efficiency, None


def moe_law(hw: Hardware, prec: Precisions, model: Model | None = None) -> Any:
    """The stack's fitted grouped-MoE law for the routed experts' weight format on the
    implementation it runs ``model``'s experts on (:func:`moe_path`; its main one's where that
    has no law of the format, or no model is given); where the stack has none, the same GPU's
    other stacks' (:func:`first_law`); None if none."""
    dtypes = MOE_LAW_DTYPE.get((prec.weights["routed_experts"], prec.compute["routed_experts"]), ())
    path = moe_path(hw, model) if model is not None else ""

    def law_of(e: Any) -> Any:
        for dt in dtypes:  # the second implementation's law on the stack's own entry first
            law = e.moe_law(dt, path) if path and e is hw.efficiency else None
            if (law := law or e.moe_law(dt)) is not None:
                return law
        return None

    return first_law(hw, law_of)[2]


#: GPUs a serving stack's own all-reduce kernel spans, beyond which it calls NCCL (the scale-up
#: domain where a stack is not listed: TensorRT-LLM's MNNVL one-shot and two-shot kernels span an
#: NVL72, 4.3 and 5.2 us for a 256-byte message over 8 and 16 GB300 GPUs).
#: - SGLang: one host ("host": ``gpus_per_host``).  Its custom all-reduce shares buffers by CUDA
#:   IPC within one operating system.  Measured on GB300 NVL72 (4 GPUs per host): 3.4-3.8 us over 2
#:   and 4 GPUs; 27 and 48 us over 8 and 16, which is the system's fitted NCCL ring latency at
#:   those counts (26 and 49 us).
#: - vLLM: 8 GPUs.  Its custom all-reduce takes world sizes 2, 4, 6 and 8 (``CustomAllreduce.
#:   _SUPPORTED_WORLD_SIZES`` in vLLM's ``distributed/device_communicators/custom_all_reduce.py``).
#:   Measured on GB300 NVL72: 13 us over 8 GPUs, 46 us over 16 (NCCL's fitted ring: 49 us).
ALLREDUCE_REACH: dict[str, int | str] = {"sglang": "host", "vllm": 8}
#: ... and over PCIe (a scale-up domain without NVLink), where the custom kernels step back:
#: vLLM's (and SGLang's copy of it) is disabled beyond 2 GPUs ("Custom allreduce is disabled because
#: it's not supported on more than two PCIe-only GPUs": ``CustomAllreduce.__init__`` in vLLM's
#: ``distributed/device_communicators/custom_all_reduce.py``), so it spans 2 (peer-to-peer over the
#: switch); TensorRT-LLM's automatic strategy takes NCCL wherever the group has no NVLink
#: (``AllreduceOp::selectImplementation``: ``if (isAuto && !mIsNVLINKSupported) return NCCL``), so
#: its kernel spans 1.  Measured on the RTX PRO 6000 server: TensorRT-LLM's "custom" all-reduce over
#: 2 GPUs takes NCCL's 6.4 us at 256 B, vLLM's and SGLang's 4.3-4.5 us (NCCL's 6.3 us).
ALLREDUCE_REACH_PCIE: dict[str, int] = {"sglang": 2, "vllm": 2, "trtllm": 1}


#: Tokens per attention rank up to which a stack's decode step runs the shared experts on a second
#: CUDA stream beside the routed experts (``N_ss``; a prefill pass runs on one stream):
#: - TensorRT-LLM: every step captured in a CUDA graph (its DeepSeek-V3 MoE calls
#:   ``maybe_execute_in_parallel`` on an auxiliary stream, multi-stream only while graphs are captured);
#: - SGLang: up to 1024 tokens under CUDA graphs (``DeepseekV2MoE.forward_normal_dual_stream``,
#:   ``DUAL_STREAM_TOKEN_THRESHOLD = 1024``);
#: - vLLM: up to 256 tokens (``VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD``, default 256).
#: A system without a stack takes vLLM's rule; bound mode overlaps them in every step.
SHARED_STREAM_TOKENS: dict[str, float] = {"trtllm": 1e12, "sglang": 1024.0, "vllm": 256.0}


def shared_stream_tokens(hw: Hardware, mode: str, phase: str) -> float:
    """``N_ss``: the tokens per attention rank up to which the shared experts run on a second stream."""
    if mode == "bound":
        return 1e12
    if phase != "decode":
        return 0.0
    return SHARED_STREAM_TOKENS.get(hw.stack, SHARED_STREAM_TOKENS["vllm"])


#: The stacks' custom all-reduce kernels on NVLink: the largest message each sends one-shot over 3-4
#: and over 5-8 GPUs (``m_o4``, ``m_o8``), and the largest it takes at all (``m_cu``), in bytes per
#: GPU.  vLLM and SGLang: vLLM's ``csrc/custom_all_reduce.cuh`` (one-shot below 512 KiB up to 4 GPUs
#: and below 256 KiB up to 8, always over 2) with its default buffer of 8 MiB
#: (``CustomAllreduce(max_size=8192 * 1024)``); SGLang's ``sgl-kernel`` carries the same kernel.
#: TensorRT-LLM: one-shot up to 8 MiB at every GPU count, as its measured 1.3 all-reduces run (their
#: latency grows with (n - 1) m up to the large path's time on H100, H200, B200, B300 and GB200).
#: A system without a stack takes vLLM's rule.
ALLREDUCE_CUSTOM_LIMIT = 8 * 1024 * 1024
ALLREDUCE_ONESHOT: dict[str, tuple[float, float]] = {
    "sglang": (512 * 1024, 256 * 1024), "vllm": (512 * 1024, 256 * 1024),
    "trtllm": (ALLREDUCE_CUSTOM_LIMIT, ALLREDUCE_CUSTOM_LIMIT)}
#: ... and the stacks whose all-reduce over a group spanning hosts of a multi-node NVLink domain
#: (GB200 and GB300 NVL72: more than a host's 4 GPUs) takes a multi-node kernel, with the largest
#: all-gathered payload ``n m`` it sends one-shot (``m_on``): TensorRT-LLM's ``MNNVLAllReduce``,
#: one-shot while ``num_tokens x hidden x group size x element size`` is at most
#: ``_MNNVL_ONE_SHOT_THRESHOLD_BYTES = 64 * 1024 * 8 * 2`` (``tensorrt_llm/_torch/distributed/ops.py``;
#: FlashInfer's ``MNNVL_ONE_SHOT_THRESHOLD`` is the same), two-shot above.
ALLREDUCE_MNNVL_ONESHOT: dict[str, float] = {"trtllm": 1024.0 * 1024.0}
#: ... and those whose kernel stops at the host, their group over hosts taking the large-message
#: path: vLLM's ``CustomAllreduce`` disables itself where the group spans nodes ("Custom allreduce
#: is disabled because this process group spans across nodes": ``in_the_same_node_as`` in its
#: ``custom_all_reduce.py``), and its ``SymmMemCommunicator`` (multimem: the switch's reduction)
#: or NCCL takes the call.  (SGLang's kernel reaches one host, N_ar: beyond it, NCCL.)
ALLREDUCE_HOST_BOUND = ("vllm",)


def _stack_allreduce(hw: Hardware) -> tuple[float, float, float]:
    """(a_ar, eta_ar, eta_nv) of the system's all-reduce: the stack's fitted law, else the link's
    latency and the scale-up fraction (the in-switch fraction too)."""
    e = hw.efficiency
    eta_ar = e.allreduce_efficiency if e.allreduce_efficiency is not None else e.scale_up
    return (e.allreduce_latency if e.allreduce_latency is not None else hw.su_latency, eta_ar,
            e.allreduce_large_efficiency if e.allreduce_large_efficiency is not None else eta_ar)


def bridge_efficiency(hw: Hardware, mode: str) -> float:
    """``eta_hb``: the fraction of the host bridge's bandwidth peer traffic that leaves its PCIe
    switch reaches, from the system's fitted NCCL law (1 in bound mode, on NVLink, or unfitted)."""
    law = hw.nccl_allreduce
    return 1.0 if mode == "bound" or law is None else law.bridge


def link_symbols(hw: Hardware, mode: str = "realistic") -> dict[str, float]:
    """The scale-up fabric's symbols of system ``hw``: x_nvls, n_sw, B_hb, eta_hb, and a torus's
    x_tor, K_y, K_z, n_lk."""
    torus = hw.su_topology == "torus"
    K = hw.torus_shape if torus else (1, 1, 1)
    return {"x_nvls": float(hw.in_switch_reduction), "n_sw": float(hw.su_switch_gpus),
            "B_hb": hw.su_bridge_bandwidth, "eta_hb": bridge_efficiency(hw, mode),
            "x_tor": float(torus), "K_y": float(K[1]), "K_z": float(K[2]),
            "n_lk": float(hw.links_per_chip if torus else 1)}


def allreduce_values(hw: Hardware, mode: str, stack: str | None = None) -> dict[str, float]:
    """``N_ar`` (the GPUs the all-reduce kernel of ``stack``, default the one in use, spans), its
    message limits ``m_o4``, ``m_o8``, ``m_cu`` (:data:`ALLREDUCE_ONESHOT`), its multi-node kernel's
    ``N_mn``, ``m_on`` and ``x_mn`` (:data:`ALLREDUCE_MNNVL_ONESHOT`, :data:`ALLREDUCE_HOST_BOUND`)
    and NCCL's ring
    constants ``t_n0``, ``a_nl``, ``a_nm``, ``a_nc``, ``eta_nc`` (the system's fitted NCCL law,
    a latency per step for each protocol; where it has none, a ring at the stack's own constants,
    one latency).  Bound mode: no group falls to NCCL, and every message
    takes the least volume at the links' peaks."""
    if mode == "bound":
        return dict(N_ar=1e12, t_n0=0.0, a_nc=0.0, a_nl=0.0, a_nm=0.0, eta_nc=1.0, m_o4=0.0, m_o8=0.0,
                    m_cu=0.0, N_mn=1e12, m_on=0.0, x_mn=1.0)
    name = hw.stack if stack is None else stack
    if hw.su_link == "pcie":
        reach: int | str = ALLREDUCE_REACH_PCIE.get(name, ALLREDUCE_REACH_PCIE["vllm"])
    else:
        reach = ALLREDUCE_REACH.get(name, hw.domain_size)
    n_ar = min(hw.gpus_per_host if reach == "host" else int(reach), hw.domain_size)
    o4, o8 = ALLREDUCE_ONESHOT.get(name, ALLREDUCE_ONESHOT["vllm"])
    out = dict(N_ar=float(n_ar), m_o4=float(o4), m_o8=float(o8), m_cu=float(ALLREDUCE_CUSTOM_LIMIT))
    mnnvl = hw.su_link != "pcie" and (name in ALLREDUCE_MNNVL_ONESHOT or name in ALLREDUCE_HOST_BOUND)
    out |= dict(N_mn=float(hw.gpus_per_host) if mnnvl else 1e12, m_on=ALLREDUCE_MNNVL_ONESHOT.get(name, 0.0),
                x_mn=0.0 if name in ALLREDUCE_HOST_BOUND else 1.0)
    law = hw.nccl_allreduce
    if law is not None:
        return dict(out, t_n0=law.floor, eta_nc=law.efficiency, **law.protocol_latencies())
    a_ar, eta_ar, _ = _stack_allreduce(hw)
    return dict(out, t_n0=0.0, a_nc=a_ar, a_nl=a_ar, a_nm=a_ar, eta_nc=eta_ar)


#: Query rows per CTA of a prefill attention kernel (t_qt): FlashAttention-3's Hopper forward tile
#: at head dims above 64 (``tile_size_fwd_sm90``: kBlockM 128; 192 at 64), FlashAttention's
#: Blackwell forward at one query stage (128)
PREFILL_TILE_Q = 128.0


#: How each serving stack sizes its KV pool at its defaults: ``C_free = x_mem ((1 - r_mem) C_hbm -
#: weights - M_ws)``.
#: - vLLM: ``gpu_memory_utilization`` (default 0.9) of the whole HBM is the budget for weights,
#:   activations and KV (docs.vllm.ai, engine arguments; vllm/worker/gpu_worker.py
#:   determine_num_available_blocks): r_mem 0.1, the profiled activations inside it.
#: - TensorRT-LLM: ``KvCacheConfig.free_gpu_memory_fraction`` (default 0.9) of the memory free
#:   after the weights are loaded and a profiling pass has run (nvidia.github.io/TensorRT-LLM,
#:   KvCacheConfig; tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator): x_mem 0.9 of what the
#:   weights leave, nothing taken off the whole HBM.
#: - SGLang: ``mem_fraction_static`` of the HBM holds weights and KV; its default is (HBM -
#:   reserved) / HBM, the reserve never below 10 GiB on a GPU above 60 GiB (python/sglang/srt/
#:   server_args.py, _handle_gpu_memory_settings, PR #10975): M_ws 10 GiB, r_mem 0.
#: A system with no stack keeps its spec's ``memory_reserve`` as r_mem.
STACK_KV_POOL: dict[str, dict[str, float]] = {
    "vllm": {"r_mem": 0.1, "x_mem": 1.0, "M_ws": 0.0},
    "trtllm": {"r_mem": 0.0, "x_mem": 0.9, "M_ws": 0.0},
    "sglang": {"r_mem": 0.0, "x_mem": 1.0, "M_ws": 10 * 2.0**30},
}


def kv_pool_values(hw: Hardware) -> dict[str, float]:
    """``r_mem``, ``x_mem``, ``M_ws`` of the stack in use (:data:`STACK_KV_POOL`), else the spec's
    ``memory_reserve`` of the whole HBM."""
    pool = STACK_KV_POOL.get(hw.stack or "")
    if pool is not None:
        return dict(pool)
    return {"r_mem": hw.efficiency.memory_reserve, "x_mem": 1.0, "M_ws": 0.0}


def _efficiencies(hw: Hardware, mode: str) -> dict[str, float]:
    if mode not in MODES:
        raise SpecError("<input>", "mode", f"bound or realistic, got {mode!r}")
    if mode == "bound":
        return dict(eta_c=1.0, eta_fa=1.0, eta_ce=1.0, eta_xa=1.0, eta_xt=1.0, x_xa=0.0, S_a0=0.0,
                    X_sm=np.inf, kappa_lc=0.0, t_qt=PREFILL_TILE_Q, eta_m=1.0, eta_em=1.0,
                    eta_su=1.0, eta_so=1.0, eta_ar=1.0, eta_nv=1.0, eta_a2a=1.0, tau_k=0.0,
                    eta_o=1.0, t_fixed=0.0, tau_q=0.0, a_su=0.0, a_so=0.0, a_ar=0.0, a_a2a=0.0,
                    **{"lambda": 1.0}, r_mem=0.0, x_mem=1.0, M_ws=0.0, **allreduce_values(hw, mode))
    e = hw.efficiency
    a_ar, eta_ar, eta_nv = _stack_allreduce(hw)
    return dict(eta_c=e.compute, eta_fa=e.compute, eta_ce=e.compute, eta_xa=1.0, eta_xt=1.0, x_xa=0.0,
                S_a0=0.0, X_sm=np.inf, kappa_lc=0.0, t_qt=PREFILL_TILE_Q, eta_m=e.hbm, eta_em=e.hbm,
                eta_su=e.scale_up, eta_so=e.scale_out, eta_ar=eta_ar, eta_nv=eta_nv,
                tau_k=e.kernel_overhead, eta_o=e.overlap, t_fixed=e.step_overhead,
                tau_q=e.host_per_sequence, a_su=hw.su_latency,
                a_ar=a_ar,
                eta_a2a=e.a2a_efficiency if e.a2a_efficiency is not None else e.scale_up,
                a_a2a=e.a2a_latency if e.a2a_latency is not None else hw.su_latency,
                a_so=hw.so_latency, **{"lambda": e.load_imbalance}, **kv_pool_values(hw),
                **allreduce_values(hw, mode))


#: The measured dispatch kernels' dtype names by the routed experts' compute dtype (the dispatch
#: sends the experts' input in it: NVFP4 on Blackwell's FP4 path); the combine sends BF16.
A2A_DISPATCH_DTYPE = {"fp4": "nvfp4", "fp8": "fp8", "bf16": "bf16"}


def a2a_floor_values(hw: Hardware, prec: Precisions, mode: str) -> dict[str, float]:
    """``a_disp`` and ``a_comb``: in realistic mode the floors the stack's all-to-all law was fitted
    with on measured dispatch and combine kernels (``a2a_<phase>_<dtype>``: the dispatch in the
    routed experts' compute dtype, else BF16; the combine in BF16), where its spec carries them;
    elsewhere the stack's or the link's per-phase latency (``a_a2a``); and ``phi_fl``, the share of
    them a serving step pays (fitted per family, apart for a scale-up domain that spans hosts: an
    NVLink fabric's kernels are measured with floors 2.4-2.7x a node's).  0 in bound mode."""
    if mode == "bound":
        return {"a_disp": 0.0, "a_comb": 0.0, "phi_fl": 1.0}
    e = hw.efficiency
    other = e.a2a_latency if e.a2a_latency is not None else hw.su_latency
    floors = dict(e.a2a_floors)
    disp = A2A_DISPATCH_DTYPE.get(prec.compute["routed_experts"], "bf16")
    return {"a_disp": floors.get(f"dispatch_{disp}", floors.get("dispatch_bf16", other)),
            "a_comb": floors.get("combine_bf16", other),
            "phi_fl": e.floor_share_fabric if hw.domain_size > hw.gpus_per_host else e.floor_share}


#: The decode attention law's neutral values: the roofline's (x_al = 0)
_NO_ATTN_LAW = dict(x_al=0.0, eta_a=1.0, eta_am=1.0, t_r=0.0, beta_c=np.inf, t_c=0.0, t_q=0.0, phi_rp=0.0,
                    n_sub=1.0, n_ht=1.0, n_blk=1.0, n_kvh=1.0, e_q=1.0)


def dispatch_context(model: Model, S: Any) -> Any:
    """The context a decode attention kernel is dispatched for: ``S``, or for a model with sparse or
    compressed layers the rows its attention layers read, on average: a sparse layer the top
    ``sparse_top_k`` of its ``S / sparse_compress`` rows, a compressed one its ``S / compress_ratio``
    rows, each with its window where it keeps one (the kernel splits the rows it reads, not the
    cache it holds)."""
    if not (model.sparse_layers or model.compressed_layers):
        return S
    S = np.asarray(S, float)
    window = np.minimum(S, model.sliding_window) if model.compressed_window else 0.0
    dense = model.n_attn - model.sparse_layers - model.compressed_layers
    sparse = np.minimum(S / model.sparse_compress, model.sparse_top_k) + window
    compressed = S / model.compress_ratio + window
    rows = dense * S + model.sparse_layers * sparse + model.compressed_layers * compressed
    return np.maximum(rows / model.n_attn, 1.0)


def attention_law_values(model: Model, hw: Hardware, prec: Precisions, mode: str, phase: str, *, b: Any,
                         S: Any, TP_a: Any, s_kv: Any) -> dict[str, Any]:
    """The decode attention law's symbols for a decode step in realistic mode, where the stack
    carries a law for the model's attention kind and KV dtype (``attn_<mla|gqa>_<kv>``; on
    TensorRT-LLM the shapes its dispatcher sends to MMHA take ``attn_gqa_mmha_<kv>`` where it has
    one): ``x_al = 1``, the law's constants, and the kernel's dispatch for the step's ``b``
    sequences of ``S`` tokens and its heads on the GPU (:mod:`planner.physics.dispatch`, the kernel
    scorecard's own); MLA's per-row work ``S_a0``.  Elsewhere ``x_al = 0`` (the roofline).  Not
    modelled: SGLang's and vLLM's Triton decode backends (the head dimensions the others do not
    take); a model with sliding-window layers is dispatched at its full context, one with sparse or
    compressed layers at the rows its attention layers read on average (:func:`dispatch_context`)."""
    if mode != "realistic" or phase != "decode":
        return dict(_NO_ATTN_LAW)
    S = dispatch_context(model, S)
    mla = model.attention == "mla"
    kv = "bf16" if prec.kv == "fp16" else prec.kv
    # another stack's law, where it is one, with the dispatch of that stack's kernels
    stack, eff, law = first_law(hw, lambda e: e.attn_law("mla" if mla else "gqa", kv))
    if law is None:
        return dict(_NO_ATTN_LAW)
    sms = sm_count(hw)
    b, S, TP_a = (np.asarray(x, float) for x in (b, S, TP_a))
    heads = model.h / TP_a
    kv_heads = 1.0 if mla else model.h_kv / np.asarray(s_kv, float)
    if mla:
        n = decode_dispatch(hw.family, stack, "mla", sms, b, heads, kv_heads, S)
        eta_a, eta_am = law.compute, law.hbm
        if kv == "fp8" and (hw.family, stack) in MLA_KV_CAST:
            # the kernel attends the cache's BF16 copy in BF16 (twice the FP8 bytes, at the BF16
            # peak: the law's fractions as the step's FP8 cache and peak carry them); the cast of the
            # whole pool before it is not priced: the measured runs do not pay it (SGLang's H200
            # DeepSeek-R1 runs at 8k contexts and 61 sequences take 50 ms a step, where the cast of
            # their own tokens alone would take 54 ms)
            eta_am = law.hbm * kv_bytes("fp8") / kv_bytes("bf16")
            eta_a = law.compute * hw.flops["bf16"] / hw.flops["fp8"]
        return dict(x_al=1.0, eta_a=eta_a, eta_am=eta_am, t_r=law.row, beta_c=law.stream, t_c=law.cta,
                    t_q=law.query, phi_rp=law.repeat, n_sub=n["n_sub"], n_ht=n["n_ht"], n_blk=n["n_hc"],
                    n_kvh=1.0, e_q=float(model.r_kv + model.d_r), S_a0=law.offset)
    out = {k: np.broadcast_to(np.asarray(v, float), np.broadcast(b, S, heads).shape)
           for k, v in _gqa_law(law, hw.family, stack, "gqa", sms, b, S, heads, kv_heads).items()}
    mmha_law = eff.attn_law("gqa_mmha", kv)
    if stack == "trtllm" and mmha_law is not None:
        mmha = trtllm_mmha(hw.family, sms, b, heads, kv_heads, S, kv == "fp8")
        if np.any(mmha):
            other = _gqa_law(mmha_law, hw.family, stack, "gqa_mmha", sms, b, S, heads, kv_heads)
            out = {k: np.where(mmha, other[k], v) for k, v in out.items()}
    return dict(x_al=1.0, n_ht=1.0, n_kvh=kv_heads, e_q=float(model.d_head), S_a0=0.0, **out)


def _gqa_law(law: Any, family: str, stack: str, kind: str, sms: float, b: Any, S: Any, heads: Any,
             kv_heads: Any) -> dict[str, Any]:
    """A GQA decode law's constants and its kernel's dispatch (blocks per sequence: a KV head's,
    or on MMHA a query head's)."""
    n = decode_dispatch(family, stack, kind, sms, b, heads, kv_heads, S)
    return dict(eta_a=law.compute, eta_am=law.hbm, t_r=law.row, beta_c=law.stream, t_c=law.cta,
                t_q=law.query, phi_rp=law.repeat, n_sub=n["n_sub"],
                n_blk=heads if kind == "gqa_mmha" else kv_heads)


#: Kernels a serving stack launches per layer of a decode step under CUDA graphs, a fused kernel
#: counted once (read from the decode forward of the stacks' DeepSeek-V2/V3, Llama and Qwen model
#: code; stacks and versions differ by a kernel or two per operator).
#: - MLA attention projections: input RMSNorm (fused with the residual add), fused q_a/kv_a GEMM,
#:   q_a and kv_a RMSNorms, q_b GEMM, the absorbed W_UK batched GEMM, rotary, KV-cache write, the
#:   W_UV batched GEMM, o_proj = 10.  GQA: input RMSNorm, QKV GEMM, rotary with cache write,
#:   o_proj = 4.
#: - Attention core: a scheduling-metadata or split-KV combine kernel beside the decode kernel = 2.
#: - Routed experts: post-attention RMSNorm, router GEMM, softmax/top-k, token permute and quantize,
#:   two grouped GEMMs, SiLU-and-mul, unpermute and weighted reduce = 8.
#: - Shared experts: gate-up GEMM, SiLU-and-mul, down GEMM = 3.  A dense FFN: RMSNorm and those 3 = 4.
#: - LM head: final RMSNorm, GEMM, two sampling kernels = 4.
#: - A sparse layer's indexer (SGLang's NSA indexer, decode): on one stream the q and k projections
#:   (wq_b, wk), the key's LayerNorm, RoPE and the two copies writing it back, the Hadamard rotation
#:   and FP8 quantisation of q and k, while the head-weight projection runs on the other; then the
#:   weights' scaling, the key-cache write, the paged MQA logits and the top-k = 14 (times phi_x: 0
#:   in a model without sparse layers).
KERNELS = {
    "mla": {"n_ka": 10, "n_kc": 2},
    "gqa": {"n_ka": 4, "n_kc": 2},
    "any": {"n_ke": 8, "n_ks": 3, "n_kd": 4, "n_kh": 4, "n_kx": 14},
}


def kernel_counts(model: Model) -> dict[str, int]:
    """The kernel counts of :data:`KERNELS` for this model's attention."""
    return {**KERNELS["mla" if model.attention == "mla" else "gqa"], **KERNELS["any"]}


def pass_kernels(model: Model) -> float:
    """``n_kp``: the kernels one forward pass of ``model`` launches (``kernels_per_pass``)."""
    return float(compiled.evaluate_named("kernels_per_pass", E_s=model.E_s, n_Ld=model.n_Ld, n_L=model.n_L,
                                         phi_x=model.sparse_layers / model.n_L, **kernel_counts(model)))


def symbol_values(model: Model, hw: Hardware, prec: Precisions, mode: str, *, G: Any, TP_a: Any,
                  EP: Any, TP_e: Any, E_slots: Any, b: Any, S: Any, s_q: Any, s_h: Any,
                  n_d: Any = 0, overlap: Any = 0, kv_offload: Any = 0,
                  phase: str = "decode", S_cache: Any = None, spec_kind: str = "mtp") -> dict[str, Any]:
    """Every symbol's value for these specs and this (possibly array-valued) configuration.

    ``S`` is the mean context each query token attends to; ``S_cache`` the tokens each sequence
    holds in the KV cache (default: ``S`` in decode, ``2 S`` = the prompt in prefill, where
    :func:`evaluate_configs` passes ``S`` = half the prompt).
    """
    if S_cache is None:
        S_cache = S if phase == "decode" else 2 * np.asarray(S)
    pb = {c: get_precision(p).bytes for c, p in prec.weights.items()}
    mla = model.attention == "mla"
    if mla:
        # absorbed decode: scores over the latent and RoPE part, values over the latent (one shared
        # head, DeepSeek-V4: scores and values over the whole head)
        c_att = ((2 * (model.r_kv + model.d_r) if model.kv_shared else 2 * model.r_kv + model.d_r)
                 if phase == "decode" else model.d_n + model.d_r + model.d_v)
        s_kv: Any = 1.0
    else:
        c_att = 2 * model.d_head
        s_kv = np.minimum(TP_a, model.h_kv)
    drafting = np.asarray(n_d) > 0
    x_mtp = 1.0 if spec_kind == "mtp" else 0.0
    n_mtp = np.where(drafting & (x_mtp > 0), model.mtp_layers if model.mtp_layers else 1, 0)
    head = draft_head(model)
    head["n_Ldr"] = np.where(drafting & (x_mtp == 0), head["n_Ldr"], 0)
    v = dict(
        d=model.d, d_e=model.d_e, W_lat=2 * model.d * model.latent_dim, n_mx=model.ffn_matrices,
        n_L=model.n_L, n_Ld=model.n_Ld, E=model.E, k=model.k, E_s=model.E_s,
        f_e=model.f_e, f_d=model.f_d, h=model.h, V=model.V,
        n_emb=1 if model.tie_embeddings else 2,
        # the router (d x E per MoE layer) is read and multiplied with the attention weights;
        # spread over all layers so the per-layer symbol keeps the model's exact total
        # (attention and linear mixers on average over the layers: the step charges n_L of them)
        W_attn=(model.mixer_params + model.router_params * model.n_moe) / model.n_L,
        # ... and, like the MLA down-projections, replicated on every attention-TP rank
        W_rep=(model.n_attn * model.attn_replicated_params + model.router_params * model.n_moe) / model.n_L,
        e_kv=model.kv_elems_per_token_layer, c_att=c_att,
        phi_w=model.sliding_layers / model.n_L, S_w=max(model.sliding_window, 1), n_mtp=n_mtp,
        phi_a=model.n_attn / model.n_L, phi_x=model.sparse_layers / model.n_L,
        c_x=model.sparse_compress, phi_z=model.compressed_layers / model.n_L, c_z=model.compress_ratio,
        x_cw=1.0 if model.compressed_window else 0.0,
        S_k=max(model.sparse_top_k, 1), h_I=model.indexer_heads, d_I=model.indexer_head_dim,
        m_I=model.indexer_key_bytes, phi_lm=model.linear_layers / model.n_L,
        F_lt=model.linear_flops_per_token(phase), m_st=model.linear_state_bytes_per_layer,
        x_mtp=x_mtp, **head,
        b_we=pb["routed_experts"], b_wa=pb["attention"], b_wd=pb["dense_ffn"],
        b_wv=pb["embeddings"], b_kv=kv_bytes(prec.kv), b_a=2.0,
        b_disp=DISPATCH_BYTES[prec.compute["routed_experts"]], b_comb=COMBINE_BYTES,
        P_e=hw.flops[prec.compute["routed_experts"]], P_a=hw.flops[prec.compute["attention"]],
        P_d=hw.flops[prec.compute["dense_ffn"]], P_v=hw.flops[prec.compute["embeddings"]],
        P_c=hw.flops["bf16"], B_hbm=hw.hbm_bandwidth, C_hbm=hw.hbm_capacity,
        N_su=hw.domain_size, B_su=hw.su_bandwidth, B_so=hw.so_bandwidth,
        **link_symbols(hw, mode),
        C_host=hw.host_capacity, B_c2c=max(hw.host_bandwidth, 1.0),
        G=G, TP_a=TP_a, EP=EP, TP_e=TP_e, E_slots=E_slots, s_kv=s_kv,
        # the scale-out copies: one per remote domain reached where the kernels forward inside a
        # domain (DeepEP's normal kernels, prefill; bound mode, the fewer copies), at most the
        # node-limited routing's domains; the low-latency decode kernels send one RDMA copy to every
        # destination GPU
        M_nl=model.max_groups or model.k, x_fw=1.0 if (phase == "prefill" or mode == "bound") else 0.0,
        o=overlap,
        x_off=np.where(hw.host_capacity > 0, kv_offload, 0),
        b=b, S=S, S_c=S_cache, s_q=s_q, s_h=s_h, n_d=n_d, A=1.0, **kernel_counts(model),
        N_ss=shared_stream_tokens(hw, mode, phase),
    )
    v.update(_efficiencies(hw, mode))
    v.update(gemm_law_values(hw, prec, mode))
    v.update(a2a_floor_values(hw, prec, mode))
    if mode == "realistic":
        law = moe_law(hw, prec, model)
        if law is not None:
            v.update(eta_ce=law.compute, eta_em=law.hbm, eta_xa=law.act, eta_xt=law.token, x_xa=1.0)
    v.update(attention_law_values(model, hw, prec, mode, phase, b=b, S=S, TP_a=TP_a, s_kv=s_kv))
    if v["x_al"] == 1.0 and prec.kv == "fp8" and "fp8" in hw.flops:
        v["P_c"] = hw.flops["fp8"]  # the decode law was fitted at the FP8 peak over an FP8 cache
    if phase == "prefill":
        # the prefill attention kernels' own law where this stack carries one for the KV dtype; over
        # an FP8 cache they multiply in FP8 (operators: attn_*_prefill_law), so its law is fitted at
        # the FP8 peak, and bound mode allows that peak
        kv = "bf16" if prec.kv == "fp16" else prec.kv  # the same kernels
        law = (hw.efficiency.attn_law(f"{'mla' if mla else 'gqa'}_prefill", kv)
               if mode == "realistic" else None)
        fp8 = kv == "fp8" and "fp8" in hw.flops
        if law is not None:
            v.update(eta_fa=law.compute, S_a0=law.offset, X_sm=law.softmax, kappa_lc=law.tail)
        if fp8 and (law is not None or mode == "bound"):
            v["P_c"] = hw.flops["fp8"]
    return v


def default_slots(model: Model, ep: Any) -> Any:
    """Expert slots with the fewest redundant replicas that make EP divide them (EPLB style)."""
    ep = np.asarray(ep)
    return np.ceil(model.E / ep) * ep


def _layout_checks(model: Model, hw: Hardware, G: Any, TP_a: Any, EP: Any, TP_e: Any,
                   E_slots: Any) -> list[tuple[int, Any]]:
    """(code, failing mask) of the structural checks, in the order of REASONS."""
    G, TP_a, EP, TP_e, E_slots = (np.asarray(x) for x in (G, TP_a, EP, TP_e, E_slots))
    heads_ok = model.h % TP_a == 0
    if model.attention == "gqa":
        heads_ok &= (model.h_kv % TP_a == 0) | (TP_a % model.h_kv == 0)
    # a dense model has no experts to spread: EP is 1 and the "MoE TP" is the attention TP (the
    # dense FFN splits with attention), so the instance is G / TP_a replicas of one TP group
    moe_split = ((11, (EP != 1) | (TP_e != TP_a)) if model.is_dense else (3, EP * TP_e != G))
    return [
        (1, G % TP_a != 0),
        (2, ~heads_ok),
        moe_split,
        (4, E_slots % EP != 0),
        (5, (E_slots < model.E) | (E_slots > 2 * model.E)),
        (6, model.f_e % TP_e != 0),
    ]


def _first_code(checks: list[tuple[int, Any]]) -> np.ndarray:
    """The lowest code whose check fails, 0 where none does (broadcast over the masks).

    Arithmetic on booleans rather than ``np.where``: with mixed masks the latter is several times
    slower (branch mispredictions), and this runs on every point of a frontier grid.
    """
    out = np.zeros(np.broadcast_shapes(*(np.shape(bad) for _, bad in checks)), dtype=np.int8)
    for c, bad in reversed(checks):
        out = out + np.asarray(bad) * (np.int8(c) - out)
    return out


def layout_problems(model: Model, hw: Hardware, G: Any, TP_a: Any, EP: Any, TP_e: Any,
                    E_slots: Any) -> np.ndarray:
    """Array of reason codes (0 = fine) for structural problems with a layout; see REASONS.
    Where several checks fail, the lowest code is reported."""
    return _first_code(_layout_checks(model, hw, G, TP_a, EP, TP_e, E_slots))


#: why a configuration is infeasible, by its code (``StepResult.reason``, the ``reason`` column)
REASONS = {
    1: "attention TP must divide the GPU count",
    2: "attention TP must divide the attention heads",
    3: "EP x MoE TP must equal the GPU count",
    4: "EP must divide the expert slots (routed + redundant)",
    5: "expert slots must be between E and 2E",
    6: "MoE TP must divide the expert intermediate size",
    8: "weights do not fit in HBM",
    9: "the KV cache does not fit in memory at this batch and context",
    10: "context exceeds the model's maximum",
    11: "a dense model has no experts: EP must be 1 and MoE TP equal to attention TP",
}
#: the codes of :data:`REASONS` a caller names
WEIGHTS_DO_NOT_FIT, KV_DOES_NOT_FIT = 8, 9


def evaluate_configs(model: Model, hw: Hardware, prec: Precisions, mode: str, *,
                     G: Any, TP_a: Any, EP: Any, TP_e: Any, E_slots: Any, b: Any, S: Any,
                     spec: Speculation = Speculation(), overlap: Any = 0, kv_offload: Any = 0,
                     phase: str = "decode", categories: bool = True) -> dict[str, np.ndarray]:
    """Evaluate a grid: every argument may be an array (they broadcast).

    Returns the compiled outputs (every key of :data:`planner.physics.equations.ALL`) plus ``A``,
    ``tps_user``/``tps_gpu`` with speculation applied, ``feasible`` and ``reason`` (a code into
    :data:`REASONS`), and, unless ``categories=False`` (about 10% faster), the per-step seconds of
    each bottleneck category ``cat.<name>`` and ``bottleneck`` (an index into
    :data:`CATEGORIES`).  Give float64 arrays for speed; ``phase="prefill"`` reads ``S`` as the
    prompt length.
    """
    if phase == "decode":
        s_q = 1 + spec.drafts
        s_h = s_q
        n_d = spec.drafts
    else:
        s_q, s_h, n_d = S, 1, 0  # S is the prompt length here
    S_ctx = S if phase == "decode" else np.asarray(S) / 2.0
    vals = symbol_values(model, hw, prec, mode, G=G, TP_a=TP_a, EP=EP, TP_e=TP_e, E_slots=E_slots,
                         b=b, S=S_ctx, s_q=s_q, s_h=s_h, n_d=n_d, overlap=overlap,
                         kv_offload=kv_offload, phase=phase, S_cache=S, spec_kind=spec.kind)
    out = compiled.evaluate(vals)
    A = spec.tokens_per_step(mode) if phase == "decode" else 1.0
    out["A"] = np.asarray(A)
    if A != 1.0:
        out["tps_user"] = out["tps_user"] * A
        out["tps_gpu"] = out["tps_gpu"] * A
    ctx = np.asarray(S) + (s_q if phase == "decode" else 0)
    code = _first_code(_layout_checks(model, hw, G, TP_a, EP, TP_e, E_slots) + [
        (8, out["memory.free"] <= 0),
        (9, np.asarray(b) > out["memory.b_max"] * (1 + 1e-9)),
        (10, ctx > model.max_context),
    ])
    out["reason"] = code
    out["feasible"] = code == 0
    if categories:
        out.update(_categories(model, out, vals))
    return out


def _categories(model: Model, out: dict[str, np.ndarray], vals: dict[str, Any]) -> dict[str, Any]:
    """Per-step seconds each resource is busy, by bottleneck category (bookkeeping of the parts).

    Each operator's time goes to the resource that binds it (compute, weight reads, KV reads);
    communication to the scale-up / scale-out links by bandwidth; kernel overheads, message
    latencies and the fixed step cost to ``latency`` (or the host's work for the step's sequences,
    ``tau_q b``, where that is larger).  With two-micro-batch overlap the MoE
    layers' weight reads, kernel overheads and message latencies count twice (once per micro-
    batch), and communication hidden behind compute still counts: the categories say what each
    resource is busy with, so they need not add up to the step time.  Draft (MTP) passes are not
    attributed.  ``bottleneck`` is the index of the largest; with overlap, of the largest on the
    side (compute or communication) that sets the layer time.
    """
    n_moe, n_ld, n_l = model.n_moe, model.n_Ld, model.n_L
    o = np.asarray(vals["o"], dtype=float)
    mb = 1.0 + o  # weight reads / launches per MoE layer
    p = {k[5:]: v for k, v in out.items() if k.startswith("part.")}

    comp, hbm = 0.0, 0.0
    for name, c_mult, m_mult in (
        ("attn_proj", n_l, n_ld + n_moe * mb),
        ("experts", n_moe, n_moe * mb),
        ("shared_experts", n_moe if model.E_s else 0, n_moe * mb if model.E_s else 0),
        ("dense_ffn", n_ld, n_ld),
        ("lm_head", 1, 1),
    ):
        c, m = p[f"{name}.compute"], p[f"{name}.hbm"]
        on_c = c >= m
        comp = comp + c_mult * (c * on_c)
        hbm = hbm + m_mult * (m * ~on_c)
    # the routed experts' activation passes (realistic mode with a grouped-MoE law) stream HBM; their
    # rows split between micro-batches, so they count once
    hbm = hbm + n_moe * p["experts.act"]
    c, m = p["attn_core.compute"], np.maximum(p["attn_core.hbm"], p["attn_core.host"])
    on_c = c >= m
    comp = comp + n_l * (c * on_c)
    kv = n_l * (m * ~on_c)
    ar_su, ar_so = p["allreduce_attn.scale_up"], p["allreduce_attn.scale_out"]
    ar_bw = ar_su + ar_so
    moe_bw = p["allreduce_moe.scale_up"] + p["allreduce_moe.scale_out"]
    scale_up = n_moe * (p["a2a.scale_up"] + ar_su + p["allreduce_moe.scale_up"]) + 2 * n_ld * ar_su
    scale_out = n_moe * (p["a2a.scale_out"] + ar_so + p["allreduce_moe.scale_out"]) + 2 * n_ld * ar_so
    # message latencies: each communication term less its bandwidth part
    a2a_alpha = np.maximum(out["dispatch"] + out["combine"]
                           - np.maximum(p["a2a.scale_up"], p["a2a.scale_out"]), 0.0)
    ar_alpha = (out["allreduce_attn"] - ar_bw) + (out["allreduce_moe"] - moe_bw)
    k = kernel_counts(model)
    k_moe = k["n_ka"] + k["n_kc"] + k["n_ke"] + (k["n_ks"] if model.E_s else 0)
    k_dense = k["n_ka"] + k["n_kc"] + k["n_kd"]
    k_index = k["n_kx"] * model.sparse_layers / model.n_L  # a sparse layer's indexer, per layer
    latency = (vals["tau_k"] * (n_moe * (k_moe + k_index) * mb + (k_dense + k_index) * n_ld + k["n_kh"])
               + vals["t_fixed"]
               + n_moe * mb * (a2a_alpha + ar_alpha) + 2 * n_ld * (out["allreduce_attn"] - ar_bw))
    # the host's work for the step's sequences (term host, tau_q b) runs beside the GPU's; a fixed
    # cost off the GPU's resources, it counts as latency where it is the larger
    latency = np.maximum(latency, out["host"])
    cats = [comp, hbm, kv, scale_up, scale_out, latency]
    shape = np.shape(out["step"])
    cats = [x if np.shape(x) == shape else np.full(shape, x, dtype=float) for x in cats]
    # With overlap a layer costs max(compute side, communication side): the side that loses is
    # hidden and cannot bind, so only the winning side's categories compete for the label.
    comp_side = cats[0] + cats[1] + cats[2]
    comm_side = cats[3] + cats[4]
    hide_comm = (o > 0) & (comp_side >= comm_side)
    hide_comp = (o > 0) & (comm_side > comp_side)
    ranked = [np.where(hide_comp, -1.0, x) for x in cats[:3]] + [np.where(hide_comm, -1.0, x)
                                                                 for x in cats[3:5]] + [cats[5]]
    # argmax by pairwise comparison (np.argmax over a stacked copy is ~10x slower)
    best, idx = ranked[0], np.zeros(shape, dtype=np.int64)
    for i, x in enumerate(ranked[1:], start=1):
        gt = x > best
        idx = idx + gt * (i - idx)
        best = np.maximum(best, x)
    return {"cat." + c: x for c, x in zip(CATEGORIES, cats, strict=True)} | {"bottleneck": idx}


# ---- one configuration ----------------------------------------------------------------------
@dataclass(frozen=True)
class StepResult:
    """One decode step (or one prefill pass) of one configuration.  Times in seconds."""

    phase: str
    mode: str
    model: str
    hardware: str
    config: dict[str, Any]
    terms: dict[str, float]          #: per layer (ops, comm) and per step (layer_*, step)
    categories: dict[str, float]     #: per-step seconds by bottleneck category
    bottleneck: str
    step_time: float                 #: TPOT for decode (per step), the pass time for prefill
    tokens_per_step: float           #: A
    tps_per_user: float
    tps_per_gpu: float
    memory: dict[str, float] = field(default_factory=dict)  #: bytes per GPU
    feasible: bool = True
    reason: str = ""

    @property
    def tpot(self) -> float:
        return self.step_time / self.tokens_per_step

    def to_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase, "mode": self.mode, "model": self.model, "hardware": self.hardware,
            "feasible": self.feasible, "reason": self.reason, "bottleneck": self.bottleneck,
            "step_s": self.step_time, "tpot_s": self.tpot, "tokens_per_step": self.tokens_per_step,
            "tps_per_user": self.tps_per_user, "tps_per_gpu": self.tps_per_gpu,
            "terms_s": self.terms, "categories_s": self.categories, "memory_bytes": self.memory,
            "config": self.config,
        }


def _layout(model: Model, gpus: int, tp_attn: int | None, ep: int | None, tp_moe: int | None,
            expert_slots: int | None) -> tuple[int, int, int, int, int]:
    for name, val in (("gpus", gpus), ("tp_attn", tp_attn), ("ep", ep), ("tp_moe", tp_moe),
                      ("expert_slots", expert_slots)):
        if val is not None and (isinstance(val, bool) or not isinstance(val, int | np.integer) or val < 1):
            raise SpecError("<input>", name, f"a positive integer, got {shown(val)}")
    if model.is_dense:
        # no experts: one tensor-parallel group over the instance unless told otherwise, EP 1
        tp_attn = tp_attn or tp_moe or gpus
        return gpus, tp_attn, ep or 1, tp_moe or tp_attn, expert_slots or 1
    tp_attn = tp_attn or 1
    if ep is None and tp_moe is None:
        ep, tp_moe = gpus, 1
    elif ep is None:
        ep = max(gpus // tp_moe, 1)
    elif tp_moe is None:
        tp_moe = max(gpus // ep, 1)
    slots = expert_slots if expert_slots is not None else int(default_slots(model, ep))
    return gpus, tp_attn, ep, tp_moe, slots


def _single(model: Model | str, hardware: Hardware | str, phase: str, *, gpus: int, batch: float,
            length: float, tp_attn: int | None, ep: int | None, tp_moe: int | None,
            expert_slots: int | None, weights: str | None, kv: str | None,
            precision: dict[str, str] | None, mtp: Any, overlap: bool, kv_offload: bool,
            mode: str) -> StepResult:
    model, hw = load_model(model), load_hardware(hardware)
    G, TPa, EPv, TPe, slots = _layout(model, gpus, tp_attn, ep, tp_moe, expert_slots)
    for name, val in (("batch", batch), ("context" if phase == "decode" else "prompt", length)):
        if isinstance(val, bool) or not isinstance(val, int | float | np.number) or not (
                math.isfinite(val) and val > 0):
            raise SpecError("<input>", name, f"a finite positive number, got {shown(val)}")
    if length > model.max_context:
        raise SpecError("<input>", "context" if phase == "decode" else "prompt",
                        f"at most the context window of {model.name}, {model.max_context:,} tokens "
                        f"(got {length:g})")
    prec = resolve_precisions(model, hw, weights, kv, precision)
    spec = resolve_speculation(model, mtp) if phase == "decode" else Speculation()
    b = batch * TPa / G  # sequences per attention-DP rank
    out = evaluate_configs(model, hw, prec, mode, G=G, TP_a=TPa, EP=EPv, TP_e=TPe, E_slots=slots,
                           b=b, S=length, spec=spec, overlap=int(overlap),
                           kv_offload=int(kv_offload), phase=phase)
    f = {k: float(np.asarray(v)) for k, v in out.items()}
    code = int(f["reason"])
    terms = {k: f[k] for k in compiled.TERM_NAMES}
    if model.is_dense:  # terms of MoE layers, which a dense model has none of (n_moe = 0)
        terms.update(dict.fromkeys(_MOE_ONLY_TERMS, 0.0))
    cats = {c: f["cat." + c] for c in CATEGORIES}
    bottleneck = CATEGORIES[int(f["bottleneck"])]
    if code == 9:
        bottleneck = "memory_capacity"
    config = dict(gpus=G, tp_attn=TPa, dp_attn=G // TPa if G % TPa == 0 else G / TPa, ep=EPv,
                  tp_moe=TPe, expert_slots=slots, batch=batch, batch_per_gpu=batch / G,
                  weights=prec.weights["routed_experts"], attention=prec.weights["attention"],
                  kv=prec.kv, mtp=spec.drafts, overlap=bool(overlap), kv_offload=bool(kv_offload),
                  mode=mode)
    config["context" if phase == "decode" else "prompt"] = length
    memory = {
        "weights": f["memory.weights"], "kv": f["memory.kv"],
        "kv_in_host": f["memory.kv"] * f["memory.host_fraction"],
        "hbm_capacity": hw.hbm_capacity, "hbm_free_for_kv": f["memory.free"],
        "max_batch": int(math.floor(f["memory.b_max"] * G / TPa * (1 + 1e-9))),  # whole sequences
    }
    tps_gpu = f["prefill_tps_gpu"] if phase == "prefill" else f["tps_gpu"]
    return StepResult(phase=phase, mode=mode, model=model.name, hardware=hw.name, config=config,
                      terms=terms, categories=cats, bottleneck=bottleneck, step_time=f["step"],
                      tokens_per_step=f["A"], tps_per_user=f["tps_user"], tps_per_gpu=tps_gpu,
                      memory=memory, feasible=code == 0, reason=REASONS.get(code, ""))


#: Per-layer terms that exist only in MoE layers (reported as 0 for a dense model).
_MOE_ONLY_TERMS = ("experts", "shared_experts", "experts_together", "dispatch", "combine", "allreduce_moe",
                   "layer_moe")


def decode_step(scenario: Scenario, *, batch: float, context: float, expert_slots: int | None = None,
                precision: dict[str, str] | None = None) -> StepResult:
    """One decode step of ``batch`` concurrent sequences on the scenario's system, an instance of
    ``scenario.gpus`` GPUs in its layout (``tp_attn``, ``ep``, ``tp_moe``)::

        decode_step(Scenario("kimi-k2-thinking", "hgx-h200", gpus=8), batch=64, context=2048)

    ``batch`` is the mean number of running sequences (a fraction is a time average, as the
    measured-run scorecards use it; the command line takes whole sequences); ``context`` is the
    mean KV length, at most the model's context window.  Layout defaults: attention TP 1 (DP
    attention on every GPU), EP over all GPUs, the fewest redundant expert slots that EP divides
    (``expert_slots`` sets them); for a dense model (no experts) attention TP over all GPUs and EP
    1.  ``scenario.weights`` replaces the routed-expert storage format (e.g. ``"nvfp4"``; a dense
    model's FFN format), ``kv`` the KV-cache format, ``precision`` any tensor's.  One step is one
    configuration: the scenario's ``mtp`` is a draft count (with ``acceptance``: tokens per step
    >= 1 or a per-draft rate < 1; else the model's published rate) or
    ``{"draft_tokens": n, "acceptance_rate": a}``; a search's ``"auto"`` counts as no
    speculation, as ``overlap="auto"`` counts as off.
    """
    sc = _one_configuration(scenario)
    model = sc.load_model()
    return _single(model, sc.load_system(), "decode", gpus=sc.gpus, batch=batch, length=context,
                   tp_attn=sc.tp_attn, ep=sc.ep, tp_moe=sc.tp_moe, expert_slots=expert_slots,
                   weights=sc.weights, kv=sc.kv, precision=precision,
                   mtp=speculation_of(model, sc.mtp, sc.acceptance), overlap=sc.overlap is True,
                   kv_offload=sc.kv_offload, mode=sc.mode)


def prefill(scenario: Scenario, *, prompt: float, batch: float = 1.0, expert_slots: int | None = None,
            precision: dict[str, str] | None = None) -> StepResult:
    """One prefill pass of ``batch`` prompts of ``prompt`` tokens on the scenario's system, an
    instance of ``scenario.gpus`` GPUs in its layout (as :func:`decode_step`; speculation does
    not apply).

    ``step_time`` is the pass time (the compute part of TTFT); ``tps_per_gpu`` is prompt tokens
    per second per GPU.
    """
    sc = _one_configuration(scenario)
    if sc.mtp not in (None, "auto", 0):
        raise SpecError("<input>", "mtp", "off for a prefill pass (drafts are a decode feature)")
    return _single(sc.load_model(), sc.load_system(), "prefill", gpus=sc.gpus, batch=batch,
                   length=prompt, tp_attn=sc.tp_attn, ep=sc.ep, tp_moe=sc.tp_moe,
                   expert_slots=expert_slots, weights=sc.weights, kv=sc.kv, precision=precision, mtp=None,
                   overlap=sc.overlap is True, kv_offload=False, mode=sc.mode)


def _one_configuration(scenario: Any) -> Scenario:
    """``scenario`` checked for one step: a Scenario with an instance size."""
    if not isinstance(scenario, Scenario):
        raise SpecError("<input>", "scenario", "a Scenario (planner.Scenario(model, system, gpus=N, ...)), "
                        f"got {type(scenario).__name__}")
    if scenario.gpus is None:
        raise SpecError("<input>", "gpus", "the instance size in GPUs (Scenario(..., gpus=N))")
    return scenario


def speculation_of(model: Model, mtp: Any, acceptance: float | None) -> Any:
    """One step's speculation from a scenario's ``mtp`` and ``acceptance``: None (``"auto"``, off,
    0), a draft count at the model's published rate, or ``{"draft_tokens", "acceptance_rate"}``
    where ``acceptance`` is given (tokens per step >= 1, turned into the per-draft rate that emits
    them, or a per-draft rate < 1)."""
    if mtp in ("auto", "off", 0, False):
        mtp = None
    if acceptance is None:
        return mtp
    if not (isinstance(mtp, int) and not isinstance(mtp, bool) and mtp > 0):
        raise SpecError("<input>", "acceptance", "used only with a number of drafts (mtp N)")
    a = float(acceptance)
    if a >= 1.0:  # tokens per step: the per-draft rate that gives it with N drafts
        if a > mtp + 1:
            raise SpecError("<input>", "acceptance", f"at most {mtp + 1} tokens per step with mtp {mtp} (or "
                            f"a per-draft rate below 1), got {a:g}")
        a = float(acceptance_rate(a, mtp))
    return {"draft_tokens": mtp, "acceptance_rate": a}


def acceptance_rate(A: Any, drafts: Any) -> np.ndarray:
    """The per-draft acceptance ``alpha`` whose ``tokens_per_step`` with ``drafts`` drafts is ``A``
    (bisection: the mean is increasing in ``alpha``); 0 where there are no drafts."""
    A = np.asarray(A, float)
    n = np.asarray(drafts, float) * np.ones_like(A)
    lo, hi = np.zeros_like(A), np.ones_like(A)
    for _ in range(50):
        mid = (lo + hi) / 2
        mean = np.asarray(compiled.evaluate_named("tokens_per_step", alpha=np.maximum(mid, 1e-300),
                                                  n_draft=np.maximum(n, 1.0)), float)
        lo, hi = np.where(mean < A, mid, lo), np.where(mean < A, hi, mid)
    return np.where(n > 0, (lo + hi) / 2, 0.0)
