"""Hardware specifications: YAML with units and sources -> a frozen record of SI floats."""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.errors import SpecError
from planner.specs.reading import Fields
from planner.specs.regions import REGIONS
from planner.specs.units import parse_quantity

FLOP_DTYPES = ("fp4", "fp8", "bf16")
FACT_KEYS = ("value", "source", "note", "kind", "retrieved", "direction")
FACT_KINDS = ("datasheet", "secondary", "measured", "assumed", "derived", "estimate", "fitted")
#: Scale-up link types: an NVLink/NVSwitch domain (which reduces an all-reduce in the switch), peer-to-peer
#: over PCIe switches, or another switched fabric without in-switch reduction (NeuronSwitch, UALink).
LINKS = ("nvlink", "pcie", "switch")
#: Scale-up topologies: a switched domain (any GPU one hop from any other) or a torus of links.
TOPOLOGIES = ("switched", "torus")


#: eta_o when a spec does not give one: the share of the shorter side hidden under two-micro-batch
#: overlap that reproduces the one published decode measured with it and no speculation (SGLang,
#: DeepSeek-V3 on 72 H100, EP72, DP-attention 72, DeepEP low-latency, batch 256 per GPU, context
#: 2000: 22,282 output tokens/s per node, so TPOT 92 ms; LMSYS blog 2025-05-05, "Deploying
#: DeepSeek with PD Disaggregation and Large-scale Expert Parallelism on 96 H100 GPUs") with the
#: H100 SGLang efficiencies fitted to the measured runs, which ran without overlap.  Reproduced
#: by ``scripts/derive_overlap_efficiency.py`` (tests/physics/test_step.py checks that the two
#: agree): 91.9 ms with the whole shorter side hidden, 153.2 ms at eta_o = 0, against 91.91 ms
#: measured, so 0.999, with the step's attention and routed experts at their kernel laws and each
#: dispatch and combine paying the all-to-all kernels' floors (SGLang's DeepEP phases at vLLM's
#: measured H100 floors, the Hopper runs not pinning a smaller share of them).  Before the decode
#: attention and grouped-MoE laws entered the step it was 1 (93.4 ms with the shorter side hidden);
#: before the floors, 0.981 (1, its ceiling, before the Hopper SGLang fit took the host's time per
#: sequence, which its Llama-3.1-8B runs pin, and its HBM fraction rose from 0.47 to 0.55; 0.983
#: before the refit that followed the all-reduce laws of multi-node NVLink groups).  The
#: step prices those experts with SGLang's Triton grouped-MoE law (its compute fraction 0.30 of
#: the FP8 peak once the kernels' masked slots are read right, where 0.97 had put the same point
#: at 84 ms and eta_o at 0.897); under DeepEP SGLang runs DeepGEMM's grouped GEMMs, for which no
#: kernels are measured.  One point, so its uncertainty is wide (0 to 1).
OVERLAP_EFFICIENCY = 0.999


#: The communication laws' fields of :class:`Efficiency` fitted to a system's measured kernels
#: (all-reduce and all-to-all latency and bandwidth fractions)
COMM_LAW_FIELDS = ("allreduce_latency", "allreduce_efficiency", "allreduce_large_efficiency",
                   "a2a_latency", "a2a_efficiency")


#: GEMM dtypes a ``stacks:`` entry may carry a fitted GEMM law for (``gemm_<dtype>`` keys)
GEMM_LAW_DTYPES = ("bf16", "fp8", "fp8_block", "nvfp4")
#: a stack's second GEMM implementation of one dtype, whose law is fitted apart
#: (``gemm_<dtype>_<path>``): vLLM's block-FP8 GEMMs on Hopper whose shape DeepGEMM does not take
#: run its fallback kernel (planner.truth.kernels.gemm_paths)
GEMM_LAW_PATHS = ("fallback",)
GEMM_LAW_KEYS = GEMM_LAW_DTYPES + tuple(f"{dt}_{p}" for p in GEMM_LAW_PATHS for dt in GEMM_LAW_DTYPES)


@dataclass(frozen=True)
class GemmLaw:
    """The GEMM law's constants for one dtype (planner.physics.operators ``gemm_law``), fitted to
    measured kernels per GPU and stack (``moe-planner calibrate --kernels``)."""

    compute: float       #: eta_g, fraction of the dense peak
    hbm: float           #: eta_gm, fraction of HBM bandwidth the operands stream at
    floor: float         #: t_g0, s per kernel
    cast: float = 1.0    #: eta_q, HBM fraction of the activation cast pass (unused for BF16)
    wave: float = 0.0    #: w_g, share of the last wave's idle SMs paid (0: no wave quantization)
    row: float = 0.0     #: t_gq, s of SM time per row of the activation cast (0: not fitted)


#: MoE weight dtypes a ``stacks:`` entry may carry a fitted grouped-MoE law for (``moe_<dtype>``)
MOE_LAW_DTYPES = ("bf16", "fp8", "fp8_block", "nvfp4", "w4a16_mxfp4", "int4_wo")
#: a stack's second grouped-MoE implementation on one GPU, whose law is fitted apart
#: (``moe_<dtype>_<path>``): SGLang's Triton fused MoE on Blackwell, beside FlashInfer's
#: TensorRT-LLM MoE (planner.truth.kernels.MOE_SECOND_PATHS, planner.physics.step.moe_law)
MOE_LAW_PATHS = ("triton",)
MOE_LAW_KEYS = MOE_LAW_DTYPES + tuple(f"{dt}_{p}" for p in MOE_LAW_PATHS for dt in MOE_LAW_DTYPES)
#: decode and prefill attention laws a ``stacks:`` entry may carry (``attn_<kind>_<KV dtype>`` keys;
#: kinds ``mla``, ``gqa``, ``gqa_mmha`` (TensorRT-LLM's MMHA fallback: planner.truth.kernels.attention_kind),
#: ``gqa_triton`` (SGLang's and vLLM's Triton backends), ``mla_prefill``, ``gqa_prefill``)
ATTN_LAW_KEYS = tuple(f"{kind}_{kv}" for kind in ("mla", "gqa", "gqa_mmha", "gqa_triton", "mla_prefill",
                                                   "gqa_prefill") for kv in ("bf16", "fp8"))
#: all-to-all kernel floors a ``stacks:`` entry may carry (``a2a_<phase>_<dtype>`` keys)
A2A_FLOOR_KEYS = tuple(f"{ph}_{dt}" for ph in ("dispatch", "combine")
                       for dt in ("bf16", "fp8", "fp4", "nvfp4"))


@dataclass(frozen=True)
class KernelLaw:
    """A fitted single-kernel law's constants (planner.physics.operators ``moe_law``,
    ``attn_mla_law``, ``attn_gqa_law``), per GPU, stack and dtype."""

    floor: float            #: s per kernel (t_e0, t_a0)
    #: fraction of HBM bandwidth (eta_em, eta_am; 1 where not fitted: prefill attention)
    hbm: float = 1.0
    #: fraction of the dense peak (eta_e, eta_a); 1 where not fitted (GQA decode: its compute side
    #: never binds at the measured shapes)
    compute: float = 1.0
    #: fraction of HBM bandwidth of the per-row activation traffic (eta_ea, MoE only; 1 where not fitted)
    act: float = 1.0
    #: fraction of HBM bandwidth of the per-token traffic (eta_et, MoE only; 1 where not fitted)
    token: float = 1.0
    #: context tokens' worth of work per query row (S_a0: prefill attention, MLA decode; 0 elsewhere)
    offset: float = 0.0
    #: s of work per block, one per sequence and KV head (t_r, GQA decode only; 0 elsewhere)
    row: float = 0.0
    #: softmax exponentials per s (X_sm, GQA prefill only; infinite elsewhere: no such term)
    softmax: float = math.inf
    #: B/s one CTA of a split-KV decode kernel streams its share of the KV cache at (beta_c;
    #: infinite where not fitted: no such bound)
    stream: float = math.inf
    #: s of SM time per CTA of a split-KV decode kernel (t_c; 0 where not fitted)
    cta: float = 0.0
    #: s of SM time per CTA per query-head element (t_q; 0 where not fitted)
    query: float = 0.0
    #: share of each repeated pass over an MLA decode's KV (a further head tile's) read from HBM
    #: (phi_rp; 0 where not fitted: one pass)
    repeat: float = 0.0
    #: fraction of HBM bandwidth of the weight stream on a Triton fused-MoE kernel's few-token
    #: default config (at most as many tokens as local experts; eta_em there; 0 where not fitted:
    #: ``hbm``)
    few: float = 0.0
    #: s of SM time per output column of each remote expert's blocks on SGLang's masked Triton
    #: path (t_z; 0 where not fitted)
    mask: float = 0.0
    #: the longest CTA's time beyond the GPU's share, relative to its work at the mean rate per SM
    #: (kappa_lc, prefill attention only; 0 where not fitted: no such term)
    tail: float = 0.0
    #: s of SM time per element of the KV cache that a whole-cache dtype cast converts before the
    #: kernel runs (t_kc: SGLang's FlashAttention-3 MLA decode over an FP8 cache on Hopper, which
    #: materialises the cache in BF16 and attends that copy; 0 where not fitted: no such pass)
    convert: float = 0.0


@dataclass(frozen=True)
class NcclLaw:
    """NCCL's all-reduce as measured on one system (planner.physics.operators ``allreduce_nccl``),
    fitted to its kernels (``moe-planner calibrate --kernels``); a library's, not a stack's."""

    floor: float       #: t_n0, s per call
    latency: float     #: a_nc, s per ring step on NCCL's Simple protocol
    efficiency: float  #: eta_nc of the ring, fraction of the scale-up bandwidth
    #: eta_hb, fraction of the host bridge's bandwidth where a ring leaves its PCIe switch (fitted
    #: on PCIe systems only; 1: no bridge, or not fitted)
    bridge: float = 1.0
    #: a_nl and a_nm, s per ring step on the LL and LL128 protocols (0: not fitted, ``latency``'s:
    #: one protocol)
    latency_ll: float = 0.0
    latency_ll128: float = 0.0

    def protocol_latencies(self) -> dict[str, float]:
        """``a_nl``, ``a_nm``, ``a_nc``: each protocol's latency per step, Simple's where not fitted."""
        return {"a_nl": self.latency_ll or self.latency, "a_nm": self.latency_ll128 or self.latency,
                "a_nc": self.latency}


@dataclass(frozen=True)
class Efficiency:
    """Realistic-mode factors, kept apart from the peaks (``bound`` mode ignores them)."""

    compute: float          #: eta_c, achieved fraction of dense tensor peak
    hbm: float              #: eta_m, achieved fraction of HBM bandwidth
    scale_up: float         #: eta_n on the scale-up (NVLink) domain
    scale_out: float        #: eta_n on the scale-out (NIC) network
    kernel_overhead: float  #: tau_k, s per operator (launch, sync)
    step_overhead: float    #: t_fixed, s per decode step (sampling, scheduling)
    load_imbalance: float   #: lambda, max/mean tokens per expert-parallel rank
    memory_reserve: float   #: fraction of HBM kept for activations and workspace
    #: tau_q, s of host work per running sequence per decode step (the scheduler's per-request
    #: work, overlapped with the GPU's step: it binds only where it is the longer); 0 where no
    #: measured run pins it
    host_per_sequence: float = 0.0
    #: phi_fl, the share of the low-latency all-to-all kernels' isolated floor (``a2a_floors``) a
    #: phase pays inside a serving step's CUDA graph (fitted to the measured runs per family)
    floor_share: float = 1.0
    #: ... the same where the scale-up domain spans several hosts (an NVLink fabric such as an
    #: NVL72 rack's, whose low-latency all-to-all kernels are measured with floors 2.4-2.7x a
    #: node's: TensorRT-LLM's dispatch 160-200 us at EP 4).  Assumed 0 where the runs do not pin it:
    #: GB300's 80 runs, the only rack runs here, come closest (relative SE 0.21) and put it at
    #: 0.2-0.3 (median |error| 9% there, 13% at 0.05, 25% at 1), never near the isolated floors
    floor_share_fabric: float = 0.0
    #: all-reduce inside a scale-up domain, fitted to measured kernels per stack (None: the
    #: link's own latency and the scale_up fraction)
    allreduce_latency: float | None = None      #: a_ar, s per pass
    allreduce_efficiency: float | None = None   #: eta_ar
    allreduce_large_efficiency: float | None = None  #: eta_nv, in-switch beyond the custom kernel
    #: expert all-to-all inside a scale-up domain, fitted to measured kernels per stack (None:
    #: the link's own latency and the scale_up fraction)
    a2a_latency: float | None = None            #: a_a2a, s per phase
    a2a_efficiency: float | None = None         #: eta_a2a
    #: the measured all-to-all kernels' isolated cost per phase and dtype (``dispatch_fp8`` ...: s;
    #: launch, barrier, polling, packing), fitted with ``a2a_efficiency``; the step model's
    #: ``a_disp`` and ``a_comb`` under attention data parallelism (``step.a2a_floor_values``)
    a2a_floors: tuple[tuple[str, float], ...] = ()
    #: eta_o, share of the shorter of compute and communication hidden under two-micro-batch
    #: overlap (see OVERLAP_EFFICIENCY for where the default comes from)
    overlap: float = OVERLAP_EFFICIENCY
    #: TTFT of a served request beyond its prefill passes, fitted to measured runs per stack
    #: (``moe-planner calibrate --runs``; 0 where not fitted: TTFT is the prefill pass alone)
    ttft_request: float = 0.0   #: t_req, s per request outside the forward passes
    ttft_wave: float = 0.0      #: q_w, share of a wave of prompts queued ahead of a request
    ttft_host: float = 0.0      #: tau_h, s of host time per kernel of a prefill pass (eager)
    #: GEMM law per dtype, fitted to measured kernels per stack, as (dtype, constants) pairs
    #: (empty: GEMMs are priced by the step model's roofline with compute and hbm)
    gemm: tuple[tuple[str, GemmLaw], ...] = ()
    #: grouped-MoE law per weight dtype and decode attention law per kind and KV dtype
    #: (``mla_fp8``, ``gqa_bf16`` ...), fitted to measured kernels per stack (empty: not fitted)
    moe: tuple[tuple[str, KernelLaw], ...] = ()
    attn: tuple[tuple[str, KernelLaw], ...] = ()

    def gemm_law(self, dtype: str, path: str = "") -> GemmLaw | None:
        """The fitted GEMM law of ``dtype`` on the stack's main kernel, or on its second one
        ``path`` (:data:`GEMM_LAW_PATHS`; None where this stack has none)."""
        return dict(self.gemm).get(f"{dtype}_{path}" if path else dtype)

    def moe_law(self, dtype: str, path: str = "") -> KernelLaw | None:
        """The fitted grouped-MoE law of weight dtype ``dtype`` on the stack's main implementation,
        or on its second one ``path`` (:data:`MOE_LAW_PATHS`; None where this stack has none)."""
        return dict(self.moe).get(f"{dtype}_{path}" if path else dtype)

    def attn_law(self, kind: str, kv_dtype: str) -> KernelLaw | None:
        """The fitted decode attention law of ``kind`` (mla, gqa) and ``kv_dtype`` (or None)."""
        return dict(self.attn).get(f"{kind}_{kv_dtype}")


@dataclass(frozen=True)
class Hardware:
    """One system.  Per-GPU values unless the name says otherwise; SI units throughout."""

    name: str
    description: str
    family: str
    gpu_model: str
    flops: dict[str, float]      #: dense peak FLOP/s per compute dtype (P[dt])
    hbm_capacity: float          #: C_hbm, B
    hbm_bandwidth: float         #: B_hbm, B/s
    tdp: float                   #: W, GPU alone
    domain_size: int             #: N_su, GPUs per scale-up (NVLink) domain
    su_bandwidth: float          #: B_su, B/s per GPU per direction
    su_latency: float            #: a_su, s per message
    so_bandwidth: float          #: B_so, B/s per GPU per direction
    so_latency: float            #: a_so, s per message
    host_capacity: float         #: C_host, B of CPU-attached memory per GPU (0: none)
    host_bandwidth: float        #: B_c2c, B/s per GPU per direction to that memory
    gpus_per_system: int
    gpus_per_unit: int           #: GPUs in one purchasable unit (rack or node)
    unit: str                    #: "rack" or "node"
    power_per_gpu: float         #: W_gpu, W all-in (system power / GPUs)
    price_per_unit: float        #: USD per purchasable unit (capex)
    price_per_gpu_hour: float    #: USD per GPU-hour (rental or TCO)
    efficiency: Efficiency
    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    nvme_capacity: float = 0.0   #: B of local NVMe per GPU (0: none given)
    nvme_bandwidth: float = 0.0  #: B/s of NVMe reads per GPU
    #: the scale-up domain's shape: "switched" (any GPU one hop from any other) or "torus"
    #: (point-to-point links to neighbours, TPU ICI), with its shape and links per chip
    su_topology: str = "switched"
    torus_shape: tuple[int, ...] = ()
    links_per_chip: int = 0
    path: str = field(default="", compare=False, repr=False)
    #: realistic-mode efficiencies fitted per serving stack (``stacks:`` block); ``stack`` is the
    #: one in use ("" where the spec has none: its ``efficiency:`` block as written)
    stacks: dict[str, Efficiency] = field(default_factory=dict, compare=False, repr=False)
    stack: str = ""
    #: the ``efficiency:`` block as written (None: ``efficiency`` is it)
    spec_efficiency: Efficiency | None = field(default=None, compare=False, repr=False)
    #: W per GPU on a typical-draw basis where a source gives one (0: only the maximum is known)
    power_per_gpu_typical: float = 0.0
    #: the scale-up fabric: "nvlink" (NVSwitch, which reduces in the switch: NVLS) or "pcie"
    #: (peer-to-peer through PCIe switches, no in-switch reduction)
    su_link: str = "nvlink"
    #: n_sw, GPUs under one PCIe switch (peers reached without crossing the host); an NVSwitch
    #: domain is one switch: the domain size
    su_switch_gpus: int = 0
    #: B_hb, B/s per GPU per direction for peer traffic that leaves its PCIe switch (the switch's
    #: uplink to the host, shared by the GPUs under it); an NVSwitch domain: su_bandwidth
    su_bridge_bandwidth: float = 0.0
    #: N_sm, streaming multiprocessors per GPU, for a GEMM's waves (0: not stated; no waves counted)
    sm_count: int = 0
    #: regions the system may be sold in (REGIONS); empty: not stated
    regions: tuple[str, ...] = ()
    #: NCCL's all-reduce fitted to this system's measured NCCL kernels (None: not measured); the
    #: kernel scorecard's, and the step model's where a group outgrows the stack's own kernel
    nccl_allreduce: NcclLaw | None = None
    #: GPUs under one host (one operating system: the reach of CUDA IPC); 0: the whole system
    gpus_per_host: int = 0
    #: the family reference whose calibration this system borrows ("": its own; a datasheet alone
    #: borrows :data:`FAMILY_REFERENCE`'s)
    calibration_from: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.gpus_per_host:
            object.__setattr__(self, "gpus_per_host", self.gpus_per_system)
        if not self.su_switch_gpus:
            object.__setattr__(self, "su_switch_gpus", self.domain_size)
        if not self.su_bridge_bandwidth:
            object.__setattr__(self, "su_bridge_bandwidth", self.su_bandwidth)

    @property
    def in_switch_reduction(self) -> bool:
        """x_nvls: the scale-up switch reduces an all-reduce in the fabric (NVLink SHARP)."""
        return self.su_link == "nvlink" and self.su_topology != "torus"

    def sold_in(self, region: str) -> bool:
        """Whether the spec says the system may be sold in ``region`` (unstated: yes)."""
        return not self.regions or region in self.regions

    @property
    def hbm_capacity_total(self) -> float:
        return self.hbm_capacity * self.gpus_per_system

    @property
    def fast_memory_total(self) -> float:
        """HBM plus CPU-attached memory the GPUs reach, whole system (the NVL72's "30 TB")."""
        return (self.hbm_capacity + self.host_capacity) * self.gpus_per_system

    def peak(self, dtype: str) -> float:
        return self.flops[dtype]

    def replace(self, **changes: Any) -> Hardware:
        """A copy with some fields changed (counterfactuals, sensitivities)."""
        eff = changes.pop("efficiency", None)
        if isinstance(eff, dict):
            eff = dataclasses.replace(self.efficiency, **eff)
        if eff is not None:
            changes["efficiency"] = eff
        out = dataclasses.replace(self, **changes)
        if out.su_link == "nvlink":
            # an NVSwitch domain is one switch: a changed domain or link keeps n_sw = N_su and
            # B_hb = B_su (else a 72-GPU domain made of an 8-GPU one has 8-GPU "switches")
            kept = {"su_switch_gpus": out.domain_size, "su_bridge_bandwidth": out.su_bandwidth}
            out = dataclasses.replace(out, **{k: v for k, v in kept.items() if k not in changes})
        return out

    def with_stack(self, stack: str) -> Hardware:
        """This system with the realistic-mode efficiencies fitted for serving stack ``stack``."""
        if stack not in self.stacks:
            known = ", ".join(sorted(self.stacks)) or "none (the spec has no stacks: block)"
            raise SpecError(self.path or self.name, "stack",
                            f"a fitted serving stack ({known}), got {stack!r}")
        return dataclasses.replace(self, efficiency=self.stacks[stack], stack=stack,
                                   spec_efficiency=self.spec_efficiency or self.efficiency)

    def without_stack(self) -> Hardware:
        """This system with the ``efficiency:`` block as written (no stack's fit)."""
        if not self.stack:
            return self
        return dataclasses.replace(self, efficiency=self.spec_efficiency, stack="")

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.pop("path")
        d.pop("stacks")
        d.pop("spec_efficiency")
        d["hbm_capacity_total"] = self.hbm_capacity_total
        d["fast_memory_total"] = self.fast_memory_total
        d["gpus"] = self.gpus_per_system
        d["scale_up_domain"] = self.domain_size
        return d


def _provenance(sub: Fields) -> str:
    """A fact's ``source`` (required, non-empty), with its optional ``note``, ``kind`` and
    ``retrieved`` read and checked."""
    src = sub.text("source")
    if not src.strip():
        raise SpecError(sub.label, sub.path("source"), "a non-empty source for this fact")
    sub.text("note", required=False)
    sub.text("kind", required=False, choices=FACT_KINDS)
    sub.raw("retrieved", required=False)
    return src


#: The range a per-GPU fact must fall in to be a GPU's at all (SI units, with the unit to print):
#: a value outside is a typo or a unit slip ("700 kW" for one GPU, "4 MB/s" of HBM, "400 Tb/s" of
#: NIC for 400 Gb/s) that would otherwise print times of hundreds of digits.  Each range spans the
#: bundled systems (in brackets) with room to spare on either side: at least 3x past the fastest
#: NIC per GPU (MI455X's 3 x 800 Gb/s), at least 5x past the rest, and a unit slip (x1000) outside.
PLAUSIBLE = {
    "flops": (1e11, 1e17, "FLOP/s"),            # 0.1 TFLOP/s to 100 PFLOP/s dense
    "hbm_capacity": (1e9, 1e13, "B"),           # 1 GB to 10 TB
    "hbm_bandwidth": (1e10, 1e15, "B/s"),       # 10 GB/s to 1 PB/s
    "tdp": (10.0, 5e3, "W"),                    # 10 W to 5 kW
    "power_per_gpu": (10.0, 2e4, "W"),          # all-in: 10 W to 20 kW [800 W to 2.9 kW]
    # scale-up link per GPU per direction, or per torus link, and a PCIe switch's uplink share
    # [31.5 GB/s PCIe bridge to 1.8 TB/s NVLink 6]
    "scale_up": (1e9, 1e13, "B/s"),             # 1 GB/s to 10 TB/s
    # NICs per GPU per direction: [100 Gb/s TPU7x to 3 x 800 Gb/s MI455X]; "400 Tb/s" is refused
    "scale_out": (1e8, 1e12, "B/s"),            # 0.8 Gb/s to 8 Tb/s
    # the GPU's link to host memory, PCIe or NVLink-C2C [31.5 GB/s to 450 GB/s]
    "host_bandwidth": (1e9, 1e13, "B/s"),       # 1 GB/s to 10 TB/s
    "host_capacity": (1e9, 1e13, "B"),          # host memory per GPU: 1 GB to 10 TB [192 to 750 GB]
    "nvme_capacity": (1e9, 1e15, "B"),          # local NVMe per GPU: 1 GB to 1 PB [3.84 TB]
    "nvme_bandwidth": (1e8, 1e12, "B/s"),       # NVMe reads per GPU: 100 MB/s to 1 TB/s [6.5-12 GB/s]
    "latency": (0.0, 1.0, "s"),                 # up to 1 s a message
    # a decode step's or a kernel's fixed time (efficiency: and stacks:): up to 1 s [1 ns to 1 ms]
    "overhead": (0.0, 1.0, "s"),
    # counts (printed as whole numbers): SMs per GPU [132 to 160], GPUs per system [8 to 72]
    "sm_count": (1, 1e4, "SMs"),
    "gpus_per_system": (1, 1e5, "GPUs"),
}
#: whose value a :data:`PLAUSIBLE` range bounds, where not a GPU's
_PLAUSIBLE_OF = {"gpus_per_system": "a system"}
#: The prices a system may have (USD), per GPU whatever its purchasable unit: a GPU-hour rents for
#: 0.01 to 1,000 USD [2 to 23.4 USD/h; consumer cards rent for about 0.1 USD/h], and one GPU's share
#: of its unit's purchase price is 100 USD to 10 M USD [14.5 k to 108 k USD].  Outside is a slip:
#: "5,408 USD/h" meant as 5.408, a rack's price given as a GPU's, cents for dollars.
PRICE_RANGES = {
    "price_per_gpu_hour": (0.01, 1e3, "USD/h"),
    "price_per_gpu": (100.0, 1e7, "USD"),
}
#: A system's name: a label that tables, plots, JSON keys, ``--hardware`` and cache entries use, so
#: no path separator or ``..`` (a name must never reach outside a directory it is joined to), no
#: ``@`` (``NAME@STACK`` picks a serving stack's fit), no space; letters, digits, ``.``, ``_`` and
#: ``-``, starting with a letter or digit (every bundled name is of this form).
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
#: the largest scale-up domain a spec may state (GPUs one switch fabric reaches)
MAX_DOMAIN = 4096


def _fact(f: Fields, key: str, dimension: str | None, sources: dict[str, str],
          required: bool = True, link: bool = False, lo: float = 0.0, hi: float = float("inf"),
          integer: bool = False, span: str | None = None) -> Any:
    """Read ``key: {value: ..., source: ...}`` and return its SI value; ``span``: the
    :data:`PLAUSIBLE` range it must fall in."""
    sub = f.sub(key, required)
    if sub is None:
        return None
    value_raw = sub.raw("value")
    src = _provenance(sub)
    if link:
        direction = sub.text("direction", required=False)
        if direction is None:
            raise SpecError(f.label, sub.path("direction"),
                            "per_direction or bidirectional: a link bandwidth must say which")
        if direction not in ("per_direction", "bidirectional"):
            raise SpecError(f.label, sub.path("direction"),
                            f"per_direction or bidirectional, got {direction!r}")
    if dimension is None:
        if integer:
            value = sub.integer("value")
        else:
            value = sub.number("value", lo=lo, hi=hi, lo_open=lo == 0.0)
    else:
        value = parse_quantity(value_raw, dimension, f.label, sub.path("value"))
        if link and direction == "bidirectional":
            value /= 2.0
    if span is not None and value is not None:
        _check_span(value, span, f.label, sub.path("value"), integer)
    sub.done()
    sources[sub.prefix] = src
    return value


def _check_span(value: float, span: str, label: str, field: str, integer: bool = False) -> None:
    """A SpecError naming ``label`` and ``field`` unless ``value`` lies in its :data:`PLAUSIBLE`
    range ``span`` (``integer``: a count, printed as a whole number)."""
    lo_p, hi_p, unit = PLAUSIBLE[span]
    if not lo_p <= value <= hi_p:
        from planner.specs.units import format_si

        if integer:  # a count: 1 to 10,000 SMs
            lo_t, hi_t, got = f"{lo_p:,.0f}", f"{hi_p:,.0f} {unit}", f"{value:,}"
        else:
            lo_t, hi_t, got = format_si(lo_p, unit), format_si(hi_p, unit), format_si(value, unit)
        raise SpecError(label, field, f"a value {_PLAUSIBLE_OF.get(span, 'a GPU')} can have, from {lo_t} "
                        f"to {hi_t}, got {got}")


def _usd(x: float) -> str:
    """0.01 -> '0.01', 1e7 -> '10,000,000'."""
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,g}"


def check_price(value: float, kind: str, gpus_per_unit: int, where: str, field: str,
                system: str = "") -> float:
    """``value`` if it is a price a GPU can have (:data:`PRICE_RANGES`), else a SpecError naming
    ``where`` and ``field`` (and ``system``, where given).  ``kind``: ``"unit"`` (USD per
    purchasable unit of ``gpus_per_unit`` GPUs, checked per GPU) or ``"hour"`` (USD per GPU-hour)."""
    per_gpu = value / gpus_per_unit if kind == "unit" else value
    lo, hi, unit = PRICE_RANGES["price_per_gpu" if kind == "unit" else "price_per_gpu_hour"]
    if not (math.isfinite(per_gpu) and lo <= per_gpu <= hi):
        got = (f"{value:,.6g} USD per unit of {gpus_per_unit} GPUs = {per_gpu:,.6g} USD per GPU"
               if kind == "unit" and gpus_per_unit != 1 else f"{value:,.6g} {unit}")
        what = "a purchase price per GPU" if kind == "unit" else "a rental price per GPU-hour"
        what += f" of {system}" if system else ""
        raise SpecError(where, field, f"{what} from {_usd(lo)} to {_usd(hi)} {unit}, got {got}")
    return value


def parse_hardware(doc: dict[str, Any], label: str) -> Hardware:
    f = Fields(doc, label)
    src: dict[str, str] = {}
    name = f.text("name")
    if not NAME.fullmatch(name) or ".." in name:
        raise SpecError(label, "name", f"a name of letters, digits, '.', '_' and '-' (starting with a letter "
                        f"or digit, at most 100 characters), got {name!r}")
    description = f.text("description")
    family = f.text("family", choices=("hopper", "blackwell", "other"))

    g = f.sub("gpu")
    gpu_model = g.text("model")
    fl = g.sub("dense_flops")
    flops = {}
    for dt in list(fl.doc):
        if dt not in FLOP_DTYPES:
            raise SpecError(label, fl.path(str(dt)), f"a compute dtype among {', '.join(FLOP_DTYPES)}")
        flops[dt] = _fact(fl, dt, "flops", src, span="flops")
    fl.done()
    for dt in ("fp8", "bf16"):
        if dt not in flops:
            raise SpecError(label, fl.path(dt), "a dense peak for this dtype (the field is missing)")
    hbm_capacity = _fact(g, "hbm_capacity", "bytes", src, span="hbm_capacity")
    hbm_bandwidth = _fact(g, "hbm_bandwidth", "bandwidth", src, span="hbm_bandwidth")
    tdp = _fact(g, "tdp", "power", src, span="tdp")
    sm_count = _fact(g, "sm_count", None, src, required=False, integer=True, span="sm_count") or 0
    g.done()

    su = f.sub("scale_up")
    su_link = su.text("link", required=False, choices=LINKS) or "nvlink"
    domain_size = _fact(su, "domain_size", None, src, integer=True)
    su_bw = _fact(su, "bandwidth", "bandwidth", src, link=True, span="scale_up")
    su_lat = _fact(su, "latency", "time", src, span="latency")
    switch_gpus = _fact(su, "gpus_per_switch", None, src, required=False, integer=True) or 0
    bridge_bw = _fact(su, "bridge_bandwidth", "bandwidth", src, required=False, link=True,
                      span="scale_up") or 0.0
    topology = su.text("topology", required=False, choices=TOPOLOGIES) or "switched"
    shape: tuple[int, ...] = ()
    links = 0
    if topology == "torus":
        # a torus's bandwidth is given per link (per direction); the chip's is its links' sum
        links = _fact(su, "links_per_chip", None, src, integer=True)
        t = su.sub("torus_shape")
        raw = t.raw("value")
        src["scale_up.torus_shape"] = _provenance(t)
        t.done()
        if (not isinstance(raw, list) or not 1 <= len(raw) <= 3
                or not all(type(k) is int and 1 <= k <= 1024 for k in raw)):
            raise SpecError(label, "scale_up.torus_shape.value", f"1 to 3 whole ring sizes, got {raw!r}")
        shape = tuple(raw) + (1,) * (3 - len(raw))
        if math.prod(shape) != domain_size:
            raise SpecError(label, "scale_up.torus_shape", f"a shape of scale_up.domain_size ({domain_size}) "
                            f"chips, got {' x '.join(map(str, raw))} = {math.prod(shape)}")
        if links != 2 * sum(k > 1 for k in shape):
            raise SpecError(label, "scale_up.links_per_chip", f"2 per dimension of the torus shape "
                            f"({2 * sum(k > 1 for k in shape)}), got {links}")
        su_bw *= links
    else:
        for key in ("torus_shape", "links_per_chip"):
            if su.has(key):
                raise SpecError(label, f"scale_up.{key}", "topology: torus with it")
    su.done()
    if su_link == "pcie" and not (switch_gpus and bridge_bw):
        raise SpecError(label, "scale_up", "gpus_per_switch and bridge_bandwidth on a pcie scale-up link")
    if switch_gpus and (switch_gpus > domain_size or domain_size % switch_gpus):
        raise SpecError(label, "scale_up.gpus_per_switch",
                        f"a divisor of scale_up.domain_size ({domain_size}), got {switch_gpus}")

    so = f.sub("scale_out")
    so_bw = _fact(so, "bandwidth", "bandwidth", src, link=True, span="scale_out")
    so_lat = _fact(so, "latency", "time", src, span="latency")
    so.done()

    host = f.sub("host_memory", required=False)
    host_cap, host_bw = 0.0, 0.0
    if host is not None:
        host_cap = _fact(host, "capacity", "bytes", src, span="host_capacity")
        host_bw = _fact(host, "bandwidth", "bandwidth", src, link=True, span="host_bandwidth")
        host.done()
    # local NVMe per GPU (a KV tier for sessions between turns): capacity, and read bandwidth
    nvme = f.sub("local_storage", required=False)
    nvme_cap, nvme_bw = 0.0, 0.0
    if nvme is not None:
        nvme_cap = _fact(nvme, "capacity", "bytes", src, span="nvme_capacity")
        nvme_bw = _fact(nvme, "bandwidth", "bandwidth", src, span="nvme_bandwidth")
        nvme.done()

    s = f.sub("system")
    gpus_per_system = _fact(s, "gpus_per_system", None, src, integer=True, span="gpus_per_system")
    gpus_per_unit = _fact(s, "gpus_per_unit", None, src, integer=True)
    gpus_per_host = _fact(s, "gpus_per_host", None, src, required=False, integer=True) or 0
    unit = s.text("unit", choices=("rack", "node", "gpu"))
    power = _fact(s, "power_per_gpu", "power", src, span="power_per_gpu")
    power_typical = _fact(s, "power_per_gpu_typical", "power", src, required=False,
                          span="power_per_gpu") or 0.0
    price_unit = _fact(s, "price_per_unit", "usd", src)
    price_hour = _fact(s, "price_per_gpu_hour", "usd_per_hour", src)
    regions = _regions(s, src)
    s.done()

    e = f.sub("efficiency")
    eff = Efficiency(
        compute=_fact(e, "compute", None, src, hi=1.0),
        hbm=_fact(e, "hbm", None, src, hi=1.0),
        scale_up=_fact(e, "scale_up", None, src, hi=1.0),
        scale_out=_fact(e, "scale_out", None, src, hi=1.0),
        kernel_overhead=_fact(e, "kernel_overhead", "time", src, span="overhead"),
        step_overhead=_fact(e, "step_overhead", "time", src, span="overhead"),
        load_imbalance=_fact(e, "load_imbalance", None, src, lo=1.0, hi=16.0),
        memory_reserve=_fact(e, "memory_reserve", None, src, lo=0.0, hi=0.9),
    )
    ov = _fact(e, "overlap", None, src, required=False, hi=1.0)
    eff = dataclasses.replace(eff, overlap=OVERLAP_EFFICIENCY if ov is None else ov)
    host = _fact(e, "host_per_sequence", "time", src, required=False)
    if host is not None:
        eff = dataclasses.replace(eff, host_per_sequence=host)
    # the communication laws where they were measured on this system but no stack is fitted
    laws = {k: _fact(e, k, "time" if k.endswith("latency") else None, src, required=False, hi=1.0)
            for k in COMM_LAW_FIELDS}
    eff = dataclasses.replace(eff, **{k: v for k, v in laws.items() if v is not None})
    e.done()
    f.raw("calibration", required=False)  # provenance of fitted efficiencies (free-form)
    col = f.sub("collectives", required=False)
    nccl = None
    if col is not None:
        nccl = dict(_law_lines(f, col, "nccl_", ("allreduce",), NcclLaw, _NCCL_CONSTANTS)).get("allreduce")
        col.done()
    stacks, default = _stacks(f, eff, src)
    f.done()

    if domain_size > MAX_DOMAIN:
        raise SpecError(label, "scale_up.domain_size", f"at most {MAX_DOMAIN} GPUs in one scale-up domain, "
                        f"got {domain_size}")
    if domain_size > gpus_per_system and su_link == "pcie":
        raise SpecError(label, "scale_up.domain_size", f"at most system.gpus_per_system ({gpus_per_system}): "
                        f"a pcie scale-up link does not span systems, got {domain_size}")
    if gpus_per_unit % gpus_per_system and gpus_per_system % gpus_per_unit:
        raise SpecError(label, "system.gpus_per_unit", f"a multiple or a divisor of system.gpus_per_system "
                        f"({gpus_per_system}), got {gpus_per_unit}")
    if domain_size < gpus_per_system and gpus_per_system % domain_size:
        raise SpecError(label, "scale_up.domain_size",
                        f"a size that divides system.gpus_per_system ({gpus_per_system}) or spans it, "
                        f"got {domain_size}")
    # a unit holds whole scale-up domains: sizing packs instances into domains and domains into
    # units, so a unit smaller than its domain (1 GPU of an 8-GPU NVLink node) would price an
    # instance by GPUs of a domain it does not own.  Only a domain that spans several systems (racks
    # joined into one fabric) is bought a part at a time, in units that make whole domains.
    spans = domain_size > gpus_per_system
    if gpus_per_unit % domain_size and not (spans and domain_size % gpus_per_unit == 0):
        raise SpecError(label, "system.gpus_per_unit",
                        f"a whole number of scale-up domains (scale_up.domain_size = {domain_size})"
                        + (", or a divisor of one (the domain spans systems)" if spans else "")
                        + f", got {gpus_per_unit}")
    check_price(price_unit, "unit", gpus_per_unit, label, "system.price_per_unit.value")
    check_price(price_hour, "hour", gpus_per_unit, label, "system.price_per_gpu_hour.value")
    if gpus_per_host and gpus_per_system % gpus_per_host:
        raise SpecError(label, "system.gpus_per_host",
                        f"a divisor of system.gpus_per_system ({gpus_per_system}), got {gpus_per_host}")
    return Hardware(
        name=name, description=description, family=family, gpu_model=gpu_model, flops=flops,
        hbm_capacity=hbm_capacity, hbm_bandwidth=hbm_bandwidth, tdp=tdp, sm_count=sm_count,
        domain_size=domain_size, su_bandwidth=su_bw, su_latency=su_lat,
        so_bandwidth=so_bw, so_latency=so_lat, host_capacity=host_cap, host_bandwidth=host_bw,
        nvme_capacity=nvme_cap, nvme_bandwidth=nvme_bw, su_topology=topology, torus_shape=shape,
        links_per_chip=links,
        gpus_per_system=gpus_per_system, gpus_per_unit=gpus_per_unit, unit=unit,
        power_per_gpu=power, power_per_gpu_typical=power_typical, price_per_unit=price_unit,
        price_per_gpu_hour=price_hour,
        efficiency=stacks[default] if default else eff, sources=src, path=str(label),
        stacks=stacks, stack=default, spec_efficiency=eff if default else None,
        su_link=su_link, su_switch_gpus=switch_gpus, su_bridge_bandwidth=bridge_bw, regions=regions,
        nccl_allreduce=nccl, gpus_per_host=gpus_per_host,
    )


def _regions(s: Fields, src: dict[str, str]) -> tuple[str, ...]:
    """``system.regions: {value: [china], source: ...}``: where the system may be sold."""
    sub = s.sub("regions", required=False)
    if sub is None:
        return ()
    raw = sub.raw("value")
    if not isinstance(raw, list) or not raw or any(r not in REGIONS for r in raw):
        raise SpecError(s.label, sub.path("value"),
                        f"a list of regions among {', '.join(REGIONS)}, got {raw!r}")
    text = _provenance(sub)
    sub.done()
    src[sub.prefix] = text
    return tuple(dict.fromkeys(raw))


#: Efficiency fields a ``stacks:`` entry sets (``network`` sets scale_up and scale_out).
STACK_FIELDS = {"compute": ("compute",), "hbm": ("hbm",), "network": ("scale_up", "scale_out"),
                "kernel_overhead": ("kernel_overhead",), "step_overhead": ("step_overhead",),
                "host_per_sequence": ("host_per_sequence",), "floor_share": ("floor_share",),
                "floor_share_fabric": ("floor_share_fabric",),
                "allreduce_latency": ("allreduce_latency",),
                "allreduce_efficiency": ("allreduce_efficiency",),
                "allreduce_large_efficiency": ("allreduce_large_efficiency",),
                "a2a_latency": ("a2a_latency",), "a2a_efficiency": ("a2a_efficiency",),
                "ttft_request": ("ttft_request",), "ttft_wave": ("ttft_wave",),
                "ttft_host": ("ttft_host",)}


#: ``stacks:`` fields fitted to measured kernels (``moe-planner calibrate --kernels``), by prefix; the
#: rest of a stack's fields are fitted to the measured runs
KERNEL_FITTED_STACK_FIELDS = ("allreduce_", "a2a_")

#: ``stacks:`` fields that are times (by how their names end); the rest are fractions
TIME_STACK_FIELDS = ("overhead", "latency", "request", "host", "per_sequence")


def _stacks(f: Fields, base: Efficiency, src: dict[str, str]) -> tuple[dict[str, Efficiency], str]:
    """The optional ``stacks:`` block: per serving stack, the fitted efficiencies (each
    ``{value, se, kind}``; ``se`` the relative standard error), plus ``default`` and ``fit``
    (provenance, free-form).  Fields a stack does not set keep the ``efficiency:`` value."""
    st = f.sub("stacks", required=False)
    if st is None:
        return {}, ""
    default = st.text("default")
    fit = st.sub("fit")
    source = fit.text("source")
    for k in list(fit.doc):
        fit.raw(str(k))
    fit.done()
    out: dict[str, Efficiency] = {}
    for name in [k for k in st.doc if k not in ("default", "fit")]:
        e = st.sub(str(name))
        e.integer("runs")
        e.raw("covariance_log", required=False)  # of the fitted log-parameters (uncertainty bands)
        changes: dict[str, Any] = {}
        for fld, prefix, keys, law, constants in (
                ("gemm", "gemm_", GEMM_LAW_KEYS, GemmLaw, _GEMM_CONSTANTS),
                ("moe", "moe_", MOE_LAW_KEYS, KernelLaw, _KERNEL_CONSTANTS),
                ("attn", "attn_", ATTN_LAW_KEYS, KernelLaw, _KERNEL_CONSTANTS),
                ("a2a_floors", "a2a_", A2A_FLOOR_KEYS, _floor, {"floor": (True, "time")})):
            laws = _law_lines(f, e, prefix, keys, law, constants)
            if laws:
                changes[fld] = laws
        for key, fields_ in STACK_FIELDS.items():
            sub = e.sub(key, required=False)
            if sub is None:  # not fitted for this stack: the efficiency: value
                continue
            unit = "time" if key.endswith(TIME_STACK_FIELDS) else None
            raw = sub.raw("value")
            v = (parse_quantity(raw, unit, f.label, sub.path("value")) if unit
                 else sub.number("value", lo=0.0, hi=1.0, lo_open=True))
            if key.endswith("_overhead"):  # as the efficiency: block's
                _check_span(v, "overhead", f.label, sub.path("value"))
            sub.number("se", required=False, lo=0.0)
            kind = sub.text("kind", choices=("fitted", "fixed", "bound"))
            note = sub.text("note", required=False)
            sub.done()
            changes.update({fld: v for fld in fields_})
            # the communication laws are fitted to measured kernels, not to the runs: their note
            # says which (moe-planner calibrate --kernels), and is their source
            # a value fitted apart from the runs (a note naming its own data: the CDNA 3 SGLang fit)
            own = kind == "fitted" and note and "derive_" in note
            kernel_fit = key.startswith(KERNEL_FITTED_STACK_FIELDS)
            src[f"stacks.{name}.{key}"] = note if (kernel_fit or own) and note else source
        e.done()
        out[str(name)] = dataclasses.replace(base, **changes)
    if default not in out:
        raise SpecError(f.label, st.path("default"),
                        f"one of the stacks listed ({', '.join(out)}), got {default!r}")
    st.done()
    return out, default


#: The constants of a law line fitted to kernels: name -> (required, kind): ``fraction`` in (0, 1],
#: ``time`` a quantity in s, ``tokens`` one in tokens, ``exp_rate`` one in exponentials per s.
_GEMM_CONSTANTS = {"compute": (True, "fraction"), "hbm": (True, "fraction"), "floor": (True, "time"),
                   "cast": (False, "fraction"), "wave": (False, "fraction"), "row": (False, "time")}
_NCCL_CONSTANTS = {"floor": (True, "time"), "latency": (True, "time"), "efficiency": (True, "fraction"),
                   "bridge": (False, "fraction"), "latency_ll": (False, "time"),
                   "latency_ll128": (False, "time")}
_KERNEL_CONSTANTS = {"compute": (False, "fraction"), "hbm": (False, "fraction"), "floor": (True, "time"),
                     "act": (False, "fraction"), "token": (False, "fraction"), "offset": (False, "tokens"),
                     "row": (False, "time"),
                     "softmax": (False, "exp_rate"), "stream": (False, "bandwidth"), "cta": (False, "time"),
                     "query": (False, "time"), "repeat": (False, "fraction"), "tail": (False, "factor"),
                     "few": (False, "fraction"), "mask": (False, "time"),
                     "convert": (False, "time")}


def _floor(floor: float) -> float:
    return floor


def _law_lines(f: Fields, e: Fields, prefix: str, keys: tuple[str, ...], law: type,
               constants: dict[str, tuple[bool, str]]) -> tuple[tuple[str, Any], ...]:
    """A stack entry's ``<prefix><key>: {<constants>, kernels, note}`` lines fitted to kernels
    (``gemm_<dtype>``: cast only for quantized dtypes; ``moe_<dtype>``: act;
    ``attn_<kind>_<KV dtype>``: compute absent where not fitted), each constant ``{value, se,
    kind}`` with ``se`` the relative standard error, as ``(key, law(...))`` pairs."""
    out = []
    for key in keys:
        sub = e.sub(prefix + key, required=False)
        if sub is None:
            continue
        vals: dict[str, float] = {}
        for name, (required, kind) in constants.items():
            c = sub.sub(name, required=required)
            if c is None:
                continue
            if kind in ("time", "tokens", "exp_rate", "bandwidth"):
                vals[name] = parse_quantity(c.raw("value"), kind, f.label, c.path("value"))
            elif kind == "factor":  # a non-negative ratio, not bounded by 1
                vals[name] = c.number("value", lo=0.0)
            else:
                vals[name] = c.number("value", lo=0.0, hi=1.0, lo_open=True)
            c.number("se", required=False, lo=0.0)
            c.text("kind", required=False, choices=("fitted", "bound", "unpinned"))
            c.done()
        sub.integer("kernels", required=False)
        sub.text("note", required=False)
        sub.done()
        out.append((key, law(**vals)))
    return tuple(out)


# ---- datasheet and calibration --------------------------------------------------------------
#: The top-level blocks of a calibration: what a serving stack achieves of the datasheet's peaks
#: (assumed or fitted, at a date), kept apart from the datasheet in ``calibration/<file>`` beside it
#: (the bundled systems: ``hardware_specs/calibration/<name>.yaml``, machine-written by
#: ``moe-planner calibrate --write``).  A spec file may also carry them itself.
CALIBRATION_KEYS = ("efficiency", "calibration", "collectives", "stacks")
#: The system of each family whose calibration a datasheet alone borrows (its GEMM, grouped-MoE and
#: attention laws are fractions of the borrower's own peaks), and whose SM count a spec without one
#: takes.  Its communication laws (``collectives:``, the stacks' all-reduce and all-to-all fits) are
#: not borrowed: another system's links keep their own latency at the stack's fractions.
FAMILY_REFERENCE = {"hopper": "hgx-h100", "blackwell": "hgx-b200"}
#: the ``stacks:`` and ``efficiency:`` entries fitted to the reference's own links (not borrowed)
_LINK_FITS = ("allreduce_", "a2a_")


def calibration_file(path: Path | str) -> Path:
    """Where the calibration of the datasheet at ``path`` lives: ``calibration/<its name>`` beside it."""
    p = Path(path)
    return p.parent / "calibration" / p.name


def bundled_calibration_path(name: str) -> Path:
    """The calibration file of bundled system ``name`` (its fits, machine-written: what
    ``calibrate --write`` rewrites)."""
    from importlib import resources

    return calibration_file(Path(str(resources.files("planner.hardware_specs").joinpath(f"{name}.yaml"))))


def borrowed_calibration(doc: dict[str, Any]) -> dict[str, Any]:
    """A reference system's calibration as another system of its family takes it: without the fits
    to the reference's own links (``collectives:``, the all-reduce and all-to-all entries)."""
    out = {k: v for k, v in doc.items() if k in CALIBRATION_KEYS and k != "collectives"}
    if isinstance(out.get("efficiency"), dict):
        out["efficiency"] = {k: v for k, v in out["efficiency"].items() if not str(k).startswith(_LINK_FITS)}
    if isinstance(out.get("stacks"), dict):
        out["stacks"] = {s: ({k: v for k, v in e.items() if not str(k).startswith(_LINK_FITS)}
                             if isinstance(e, dict) and s not in ("default", "fit") else e)
                         for s, e in out["stacks"].items()}
    return out


def read_calibration(path: Path | str, name: str) -> dict[str, Any]:
    """The calibration file at ``path`` of the system named ``name``: its blocks, checked to be
    calibration blocks for that system (``calibrates: NAME``)."""
    from planner.specs.reading import read_yaml

    label = str(path)
    doc = read_yaml(path, label)
    if not isinstance(doc, dict):
        raise SpecError(label, "yaml", "a mapping of calibration blocks")
    if doc.get("calibrates") != name:
        raise SpecError(label, "calibrates", f"the name of the system it calibrates ({name!r}), "
                        f"got {doc.get('calibrates')!r}")
    extra = sorted(str(k) for k in doc if k not in (*CALIBRATION_KEYS, "calibrates"))
    if extra:
        raise SpecError(label, extra[0], f"a calibration block ({', '.join(CALIBRATION_KEYS)}); "
                        "datasheet facts belong in the system's own file")
    if "efficiency" not in doc:
        raise SpecError(label, "efficiency", "the efficiency: block (the field is missing)")
    return {k: v for k, v in doc.items() if k != "calibrates"}


def parse_with_calibration(doc: dict[str, Any], label: str, cal: dict[str, Any] | None, cal_label: str,
                           borrowed_from: str = "") -> Hardware:
    """The system of datasheet ``doc`` with the calibration blocks ``cal`` (None: the datasheet
    carries its own); an error in a calibration block names the calibration's file."""
    if cal is None:
        return parse_hardware(doc, label)
    both = [k for k in CALIBRATION_KEYS if k in doc and k in cal]
    if both:
        raise SpecError(label, both[0], f"no {both[0]}: block where {cal_label} gives it")
    try:
        hw = parse_hardware({**doc, **cal}, label)
    except SpecError as exc:
        if exc.field.split(".")[0].split("[")[0] in CALIBRATION_KEYS:
            raise SpecError(cal_label, exc.field, exc.expected) from None
        raise
    if not borrowed_from:
        return hw
    note = f"borrowed from {borrowed_from} (the {hw.family} family's reference; a datasheet alone)"
    src = {k: (f"{note}: {v}" if k.split(".")[0] in CALIBRATION_KEYS else v) for k, v in hw.sources.items()}
    return dataclasses.replace(hw, sources=src, calibration_from=borrowed_from)


def load_hardware_file(path: Path | str, label: str | None = None) -> Hardware:
    """A system from its spec file: the datasheet, with its calibration (its own blocks, else
    ``calibration/<file>`` beside it, else its family reference's, borrowed and said so)."""
    from planner.specs.reading import read_yaml

    label = label or str(path)
    return hardware_from_doc(read_yaml(path, label), path, label)


def hardware_from_doc(doc: Any, path: Path | str, label: str) -> Hardware:
    """:func:`load_hardware_file` of the document already read from ``path``."""
    from planner.specs.reading import path_kind

    if not isinstance(doc, dict) or "efficiency" in doc:
        return parse_hardware(doc, label)
    own = calibration_file(path)
    if path_kind(own) == "file":
        name = doc.get("name")
        return parse_with_calibration(doc, label, read_calibration(own, name), str(own))
    family = doc.get("family")
    ref = FAMILY_REFERENCE.get(family) if isinstance(family, str) else None
    if ref is None:
        raise SpecError(label, "efficiency", f"an efficiency: block, or a calibration file {own} (the "
                        f"family {family!r} has no reference system to borrow one from: "
                        f"{', '.join(FAMILY_REFERENCE)} do)")
    ref_path = bundled_calibration_path(ref)
    cal = borrowed_calibration(read_calibration(ref_path, ref))
    return parse_with_calibration(doc, label, cal, f"hardware_specs/calibration/{ref}.yaml",
                                  borrowed_from=ref)
