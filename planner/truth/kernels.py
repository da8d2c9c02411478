"""Measured kernels against the step model's operator laws (``moe-planner validate --kernels``).

The tables (``planner/truth/data/kernels/*.csv.gz``, see ``PROVENANCE.md`` beside them) hold
measured latencies of single kernels per GPU and serving stack: GEMMs by (m, n, k, dtype) and
all-reduces by (GPUs, message size).  Each row is priced by :mod:`planner.physics.operators`
(the step model's own roofline and all-reduce expressions) in ``bound`` mode (datasheet peaks,
no latencies: no kernel may beat it) and ``realistic`` mode (the system's efficiencies for that
stack, as :func:`planner.truth.runs.score_runs` uses them; NCCL rows the system's fitted NCCL law,
``allreduce_nccl``, where its spec carries one; all-to-all phases the stack's fitted floors).
A GEMM's realistic time is the fitted GEMM law (``gemm_law``: tile padding, an activation cast
pass, a per-kernel floor) where the stack's entry carries it, else the roofline; its bound is
``gemm_bound``: the benchmark reruns each shape on the same buffers, so operands that fit in L2
need not come from HBM (``hbm_roofline_faster`` counts the kernels faster than the plain
bound-mode roofline, all of them with operands that fit in L2).

Errors are ``|predicted / measured - 1|``; ``bound_violations`` counts kernels measured faster
than their bound-mode time.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from planner.errors import SpecError
from planner.physics.dispatch import (
    FA3_FAMILIES,
    FA3_MAX_SPLITS,
    MLA_KV_CAST,
    SGLANG_TRITON_ATTN_VARIANT,
    TRTLLM_GEN_MLA,
    VLLM_TRITON_ATTN_VARIANT,
    XQA_FAMILIES,
    decode_dispatch,
    trtllm_mmha,
)
from planner.physics.operators import compile_operator
from planner.physics.step import (
    MOE_MIN_TILE,
    PREFILL_TILE_Q,
    TILE_M,
    allreduce_values,
    gemm_tiles,
    link_symbols,
)
from planner.specs.hardware import GEMM_LAW_PATHS, MOE_LAW_PATHS, GemmLaw, KernelLaw
from planner.specs.reading import yaml_number
from planner.truth.routing import measured_rank

#: GEMM dtype -> bytes per activation element of the cast before a quantized GEMM: the BF16
#: activation read (2 B) and the input dtype written (its block scales neglected); 0 for BF16
#: (the GEMM law's cast pass; the step model leaves it out, the quantization being fused there)
GEMM_CAST_BYTES = {"bf16": 0.0, "fp8": 3.0, "fp8_block": 3.0, "nvfp4": 2.5625}
#: GEMM dtype -> (compute dtype of the peak, bytes per input activation, per weight, per output)
GEMM_DTYPES = {"bf16": ("bf16", 2.0, 2.0, 2.0), "fp8": ("fp8", 1.0, 1.0, 2.0),
               "fp8_block": ("fp8", 1.0, 1.0, 2.0), "nvfp4": ("fp4", 0.5625, 0.5625, 2.0)}
#: L2 cache capacity by family, B: 50 MB on H100 SXM5 (NVIDIA H100 Tensor Core GPU Architecture
#: whitepaper; the H200 is the same GH100 with HBM3e); 126 MB on B200 (Chips and Cheese, "Nvidia's
#: B200: Keeping the CUDA Juggernaut Rolling", 2025: "126 MB").  B300 / GB300: no L2 size in our
#: sources; assumed the B200's (same two-die Blackwell layout)
L2_BYTES = {"hopper": 50e6, "blackwell": 126e6}
BOUND_SLACK = 0.01
OPS = ("gemm", "allreduce", "a2a", "moe", "attention")
#: MoE weight dtype -> (compute dtype of the peak, bytes per weight element with its scales):
#: FP8 block scales one FP32 per 128 x 128 block; NVFP4 one FP8 per 16 (as GEMM_DTYPES); MXFP4
#: one E8M0 byte per 32 (4.25 bits); INT4 weight-only one BF16 scale per group of 128 (assumed
#: group size).  The W4A16 formats compute in BF16 (weights dequantized in the kernel)
MOE_DTYPES = {"bf16": ("bf16", 2.0), "fp8": ("fp8", 1.0), "fp8_block": ("fp8", 1.0 + 4 / 128**2),
              "nvfp4": ("fp4", 0.5625), "w4a16_mxfp4": ("bf16", 0.53125), "int4_wo": ("bf16", 0.515625)}
#: KV-cache dtype -> bytes per element
KV_BYTES = {"bf16": 2.0, "fp8": 1.0}
#: MLA latent rank r_kv and RoPE key dimension d_r of every MLA model the tables time (DeepSeek-V3
#: and Kimi K2 alike: kv_lora_rank 512, qk_rope_head_dim 64)
MLA_DIMS = {"r_kv": 512.0, "d_r": 64.0}
#: ... and its un-absorbed prefill heads (qk_nope_head_dim, v_head_dim)
MLA_PREFILL_DIMS = {"d_n": 128.0, "d_v": 128.0}
#: the shape columns of one MoE and one attention kernel (the table's other columns: the kernel
#: variant, its version, the latency)
MOE_KEYS = ["gpu", "stack", "op", "dtype", "distribution", "tokens", "hidden", "inter", "topk", "experts",
            "tp", "ep"]
ATTN_KEYS = ["gpu", "stack", "op", "dtype", "kv_dtype", "batch", "isl", "step", "heads", "kv_heads",
             "head_dim", "window"]
#: all-to-all phase dtype -> bytes per element
A2A_BYTES = {"bf16": 2.0, "fp8": 1.0, "nvfp4": 0.5625, "fp4": 0.5625}


def load_table(op: str) -> pd.DataFrame:
    """One shipped kernel table (``gemm``, ``allreduce``, ``a2a``, ``moe`` or ``attention``)."""
    if op not in OPS:
        raise SpecError("<input>", "op", f"one of {', '.join(OPS)}, got {op!r}")
    f = resources.files("planner.truth.data").joinpath("kernels", f"{op}.csv.gz")
    with f.open("rb") as fh:
        return pd.read_csv(fh, compression="gzip")


def _efficiency(hw: Any, mode: str) -> dict[str, float]:
    """The step model's efficiency symbols for ``hw`` in ``mode`` (the same values a step uses)."""
    from planner.physics.step import _efficiencies

    return _efficiencies(hw, mode)


def _system(hw: Any, stack: str, mode: str) -> Any:
    if mode == "realistic" and stack in hw.stacks:
        return hw.with_stack(stack)
    return hw


def gemm_law_seconds(d: pd.DataFrame, hw: Any, dtype: str, law: GemmLaw) -> np.ndarray:
    """The fitted GEMM law (operator ``gemm_law``) on rows ``d`` of one dtype on system ``hw``."""
    comp, bi, bw, bo = GEMM_DTYPES[dtype]
    return compile_operator("gemm_law")(
        m=d.m.to_numpy(float), n=d.n.to_numpy(float), k_gemm=d.k.to_numpy(float), b_in=bi, b_w=bw,
        b_out=bo, P=hw.flops[comp], B_hbm=hw.hbm_bandwidth, **gemm_tiles(hw), eta_g=law.compute,
        eta_gm=law.hbm, w_g=law.wave, eta_q=law.cast, b_q=GEMM_CAST_BYTES[dtype], t_g0=law.floor,
        # SM time per row needs the SMs: a spec without a count (H20, borrowing H100's laws) has none
        t_gq=law.row if hw.sm_count else 0.0)


#: vLLM's block-FP8 linear layers run DeepGEMM only where the weight's N is a multiple of 64 and
#: its K of 128 (``should_use_deepgemm_for_fp8_linear`` in vLLM's ``utils/deep_gemm.py``, as read);
#: other shapes take its fallback kernel.  On Hopper the tables' block-FP8 rows off that rule
#: (N = 32, K = 32 or 64) take 160-190 us at every size, against 58-86 us for DeepGEMM's, and are
#: fitted apart (``gemm_fp8_block_fallback``); on Blackwell they are within 7% of the rest.
DEEPGEMM_MULTIPLE_N, DEEPGEMM_MULTIPLE_K = 64, 128
GEMM_SECOND_PATHS = {("vllm", "hopper", "fp8_block"): "fallback"}


def _second_paths(d: pd.DataFrame, paths_by_key: dict[tuple[str, str, str], str], column: str,
                  where: Any = True) -> pd.Series:
    """Each table row's implementation: the path ``paths_by_key`` gives its (stack, GPU family,
    ``column``) where ``where`` holds, else ``""`` (its stack's main one)."""
    from planner.specs.registry import load_hardware

    family = d.gpu.map({g: load_hardware(g).family for g in d.gpu.unique()})
    paths = pd.Series("", index=d.index, dtype=str)
    for (stack, fam, value), path in paths_by_key.items():
        paths[where & (d["stack"] == stack) & (family == fam) & (d[column] == value)] = path
    return paths


def gemm_paths(d: pd.DataFrame) -> pd.Series:
    """Each GEMM row's kernel: ``""`` for its stack's main one, ``"fallback"`` for vLLM's
    block-FP8 GEMMs on Hopper whose shape DeepGEMM does not take (:data:`GEMM_SECOND_PATHS`)."""
    off = (d.n % DEEPGEMM_MULTIPLE_N != 0) | (d.k % DEEPGEMM_MULTIPLE_K != 0)
    return _second_paths(d, GEMM_SECOND_PATHS, "dtype", off)


def law_key(d: pd.DataFrame, paths: pd.Series) -> pd.Series:
    """Each row's spec key suffix: its dtype, and ``_<path>`` on a second implementation."""
    return d.dtype.astype(str) + paths.map(lambda p: f"_{p}" if p else "")


def predict_gemm(df: pd.DataFrame, mode: str, hbm_roofline: bool = False) -> np.ndarray:
    """Predicted seconds of each GEMM row.  ``bound``: the L2-aware lower bound ``gemm_bound``
    (``hbm_roofline``: the plain bound-mode roofline instead); ``realistic``: the stack's fitted
    GEMM law for the row's dtype where its spec carries one, else the roofline with the stack's
    compute and hbm fractions and kernel overhead."""
    from planner.specs.registry import load_hardware

    out = np.full(len(df), np.nan)
    paths = df.assign(path=gemm_paths(df))
    for (gpu, stack, dtype, path), idx in paths.groupby(["gpu", "stack", "dtype", "path"]).groups.items():
        hw = _system(load_hardware(gpu), stack, mode)
        comp, bi, bw, bo = GEMM_DTYPES[dtype]
        if comp not in hw.flops:
            continue
        r = df.loc[idx]
        pos = df.index.get_indexer(idx)
        shape = {"m": r.m.to_numpy(float), "n": r.n.to_numpy(float), "k_gemm": r.k.to_numpy(float),
                 "b_in": bi, "b_w": bw, "P": hw.flops[comp], "B_hbm": hw.hbm_bandwidth}
        law = hw.efficiency.gemm_law(dtype, path) if mode == "realistic" else None
        if law is not None:
            out[pos] = gemm_law_seconds(r, hw, dtype, law)
        elif mode == "bound" and not hbm_roofline:
            out[pos] = compile_operator("gemm_bound")(**shape, C_L2=L2_BYTES.get(hw.family, 0.0))
        else:
            eff = {k: v for k, v in _efficiency(hw, mode).items() if k in ("eta_c", "eta_m", "tau_k")}
            out[pos] = compile_operator("gemm")(**shape, b_out=bo, **eff)
    return out


def _allreduce_seconds(d: pd.DataFrame, hw: Any, a_ar: float, eta_ar: float, eta_nv: float,
                       a_so: float = 0.0, eta_so: float = 1.0, mode: str = "realistic") -> np.ndarray:
    """The all-reduce law on rows ``d`` (``bytes`` per GPU over ``num_gpus``, one ``stack``) of
    system ``hw``: the stack's kernel up to the GPUs it spans, NCCL's fitted law beyond."""
    return compile_operator("allreduce")(
        x=d.bytes.to_numpy(float), n_g=d.num_gpus.to_numpy(float), N_su=float(hw.domain_size),
        B_su=hw.su_bandwidth, B_so=hw.so_bandwidth, eta_ar=eta_ar, eta_nv=eta_nv, eta_so=eta_so,
        a_ar=a_ar, a_so=a_so, **allreduce_values(hw, mode, str(d["stack"].iloc[0])), **link_symbols(hw, mode))


def _a2a_seconds(d: pd.DataFrame, hw: Any, floor: Any, eta_a2a: float) -> np.ndarray:
    """The all-to-all law on phase rows ``d`` of system ``hw``, each phase at ``floor``."""
    return compile_operator("a2a")(
        tokens=d.tokens.to_numpy(float), b_phase=d.dtype.map(A2A_BYTES).to_numpy(float),
        EP=d.ep.to_numpy(float), k=d.topk.to_numpy(float), d=d.hidden.to_numpy(float),
        B_su=hw.su_bandwidth, eta_a2a=eta_a2a, a_phase=floor, N_su=float(hw.domain_size),
        **{k: v for k, v in link_symbols(hw).items() if k != "x_nvls"})


def _per_system(df: pd.DataFrame, mode: str, seconds: Any) -> np.ndarray:
    """``seconds(rows, hw, efficiency symbols)`` for each (GPU, stack) group of ``df``, in order."""
    from planner.specs.registry import load_hardware

    out = np.full(len(df), np.nan)
    for (gpu, stack), idx in df.groupby(["gpu", "stack"]).groups.items():
        hw = _system(load_hardware(gpu), stack, mode)
        out[df.index.get_indexer(idx)] = seconds(df.loc[idx], hw, _efficiency(hw, mode))
    return out


def nccl_seconds(d: pd.DataFrame, hw: Any, floor: float, latency: float, efficiency: float,
                 latency_ll: float | None = None, latency_ll128: float | None = None,
                 bridge: float | None = None) -> np.ndarray:
    """NCCL's all-reduce law (operator ``allreduce_nccl``) on rows ``d`` of system ``hw``: latency
    per ring step ``latency`` on the Simple protocol, ``latency_ll`` and ``latency_ll128`` on LL and
    LL128 (None: Simple's, one protocol), its ring crossing a PCIe host bridge at the fraction
    ``bridge`` (eta_hb; the system's NCCL law's where not given)."""
    link = {k: v for k, v in link_symbols(hw).items() if k != "x_nvls"}
    if bridge is not None:  # a fit's trial value
        link["eta_hb"] = bridge
    ll = latency if latency_ll is None else latency_ll
    ll128 = latency if latency_ll128 is None else latency_ll128
    return compile_operator("allreduce_nccl")(
        x=d.bytes.to_numpy(float), n_g=d.num_gpus.to_numpy(float), N_su=float(hw.domain_size),
        B_su=hw.su_bandwidth, B_so=hw.so_bandwidth, eta_nc=efficiency, eta_so=hw.efficiency.scale_out,
        a_nc=latency, a_nl=ll, a_nm=ll128, a_so=hw.so_latency, t_n0=floor, **link)


def predict_allreduce(df: pd.DataFrame, mode: str) -> np.ndarray:
    """Predicted seconds of each all-reduce row (``bytes`` per GPU).  ``realistic``: a stack's
    rows by its fitted all-reduce law; NCCL's by the system's fitted NCCL law where its spec
    carries one."""
    def seconds(d: pd.DataFrame, hw: Any, e: dict[str, float]) -> np.ndarray:
        law = hw.nccl_allreduce
        if mode == "realistic" and law is not None and (d.op == "allreduce_nccl").all():
            lat = law.protocol_latencies()
            return nccl_seconds(d, hw, law.floor, law.latency, law.efficiency, lat["a_nl"], lat["a_nm"])
        return _allreduce_seconds(d, hw, e["a_ar"], e["eta_ar"], e["eta_nv"], e["a_so"], e["eta_so"], mode)

    return _per_system(df, mode, seconds)


def a2a_floor_seconds(d: pd.DataFrame, floors: dict[str, float], default: float) -> np.ndarray:
    """Each phase row's isolated-kernel cost: the fitted floor of its phase and dtype
    (``<phase>_<dtype>``), ``default`` where that pair was not fitted."""
    key = d.phase.astype(str) + "_" + d.dtype.astype(str)
    return key.map(floors).fillna(default).to_numpy(float)


def predict_a2a(df: pd.DataFrame, mode: str) -> np.ndarray:
    """Predicted seconds of each all-to-all phase row.  ``realistic``: the stack's fitted law
    where its spec carries it (the kernel's floor per phase and dtype, plus the volume at its
    bandwidth fraction ``eta_a2a``), else the step model's per-phase latency and fraction."""
    def seconds(d: pd.DataFrame, hw: Any, e: dict[str, float]) -> np.ndarray:
        floors = dict(hw.efficiency.a2a_floors) if mode == "realistic" else {}
        return _a2a_seconds(d, hw, a2a_floor_seconds(d, floors, e["a_a2a"]), e["eta_a2a"])

    return _per_system(df, mode, seconds)


def serving_kernels(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Where a stack has several kernels for one shape (SGLang's Triton and FlashInfer MoE, its
    FlashInfer and Triton attention ...), the fastest: the one its dispatcher is tuned to pick."""
    return df.loc[df.groupby(keys).latency_us.idxmin()].reset_index(drop=True)


#: MoE kernels whose routing is not the one their row records: TensorRT-LLM's min-latency NVFP4
#: kernels (Blackwell SM100) are timed behind DeepSeek-V3's group-limited router, whose correction
#: bias the source's collector leaves uninitialised and whose group scores tie under the table's
#: routing, so which experts they touch is unknown (fit with them, the B200 and GB200 NVFP4 cells'
#: median error is 30%, against 14% on B300 and GB300, which have no such kernels).
UNKNOWN_ROUTING_VARIANTS = ("moe_torch_flow_min_latency",)


def moe_kernels(df: pd.DataFrame | None = None) -> pd.DataFrame:
    """The MoE table's serving kernels (:func:`serving_kernels`), less the kernels whose routing is
    unknown (:data:`UNKNOWN_ROUTING_VARIANTS`)."""
    df = load_table("moe") if df is None else df
    return serving_kernels(df[~df.variant.isin(UNKNOWN_ROUTING_VARIANTS)], MOE_KEYS)


#: A measured attention kernel at least this many times slower than the same kernel (same GPU,
#: stack, dtypes, batch and heads) at the next larger context of its sweep, and than at the next
#: smaller, is a timing outlier: the work cannot shrink as the context grows, and from one context
#: to the next (at most twice as long) it at most doubles.  Not scored, counted and listed.
TIMING_OUTLIER_FACTOR = 2.0
#: the columns that identify one context sweep of the attention table (all but the context)
ATTN_SWEEP_KEYS = [k for k in ATTN_KEYS if k not in ("isl", "step")]


def timing_outliers(df: pd.DataFrame) -> pd.Series:
    """Attention rows (:data:`TIMING_OUTLIER_FACTOR`) slower than the next larger context of their
    sweep by more than that factor, and than the next smaller (where there is one); the largest
    context of a sweep, more than that factor times the growth its context allows slower than the
    next smaller (the ratio of the two contexts; its square for prefill, whose causal work grows
    with the prompt squared)."""
    order = df.assign(_ctx=df.isl + df.step).sort_values([*ATTN_SWEEP_KEYS, "_ctx"])
    g = order.groupby(ATTN_SWEEP_KEYS, sort=False, dropna=False)
    lat, prev, nxt = order.latency_us, g.latency_us.shift(1), g.latency_us.shift(-1)
    power = np.where(order.op.astype(str).str.endswith("_prefill"), 2.0, 1.0)
    growth = (order._ctx / g._ctx.shift(1)) ** power
    f = TIMING_OUTLIER_FACTOR
    inner = (lat > f * nxt) & ((lat > f * prev) | prev.isna())
    last = nxt.isna() & (lat > f * growth * prev)
    return (inner | last).reindex(df.index)


def attention_kernels(df: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The attention table's serving kernels (:func:`serving_kernels`) less its timing outliers
    (:func:`timing_outliers`), and those outliers."""
    df = serving_kernels(load_table("attention") if df is None else df, ATTN_KEYS)
    bad = timing_outliers(df).to_numpy(bool)
    return df[~bad].reset_index(drop=True), df[bad].reset_index(drop=True)


def _moe_shape(d: pd.DataFrame, hw: Any, dtype: str) -> dict[str, Any]:
    comp, bw = MOE_DTYPES[dtype]
    return {"T_moe": d.tokens.to_numpy(float), "d": d.hidden.to_numpy(float), "f_e": d.inter.to_numpy(float),
            "k": d.topk.to_numpy(float), "E_slots": d.experts.to_numpy(float), "EP": d.ep.to_numpy(float),
            "TP_e": d.tp.to_numpy(float), "b_we": bw, "P_e": hw.flops[comp], "B_hbm": hw.hbm_bandwidth}


def moe_tile(rows: np.ndarray, touched: np.ndarray, family_tile: float) -> np.ndarray:
    """``t_m`` of a grouped-MoE kernel: the tile its experts' rows run on, the smallest power of two
    from :data:`MOE_MIN_TILE` up to the family's MMA tile (64 on Hopper, 128 on Blackwell) that
    holds the mean rows of a touched expert (the kernels size the tile to the rows: fitted with
    the family's tile for every kernel, the grouped-MoE cells over 10% median were 8 and over 30%
    p90 11, against 6 and 6)."""
    per = np.maximum(np.asarray(rows, float) / np.maximum(np.asarray(touched, float), 1.0), 1.0)
    return np.clip(2.0 ** np.ceil(np.log2(per)), min(MOE_MIN_TILE, family_tile), family_tile)


#: (stack, GPU family, table variant) -> the second grouped-MoE implementation those kernels are,
#: fitted apart (spec key ``moe_<dtype>_<path>``, :data:`planner.specs.hardware.MOE_LAW_PATHS`):
#: SGLang on Blackwell runs FlashInfer's TensorRT-LLM MoE for the architectures its server
#: arguments pick it for and its Triton fused MoE for the rest
#: (:data:`planner.physics.step.SGLANG_TRTLLM_MOE`); the tables hold both, shape by shape.  One law
#: for both (last round) predicted the FlashInfer BF16 kernels 1.16x slow and the Triton ones 0.71x.
MOE_SECOND_PATHS = {("sglang", "blackwell", "sglang_fused_moe_triton"): "triton"}


def moe_paths(d: pd.DataFrame) -> pd.Series:
    """Each MoE row's implementation: ``""`` for its stack's main one, else its name in
    :data:`MOE_SECOND_PATHS`."""
    return _second_paths(d, MOE_SECOND_PATHS, "variant")


#: Table variants timed on the Triton fused-MoE kernel at its default configs (SGLang's
#: ``get_default_config`` in ``fused_moe_triton_config.py``, as read; the shapes have no tuned
#: config file of that Triton version): unless the weights are block-quantized, it takes a
#: few-token config (``BLOCK_SIZE_M`` 16, ``N`` 32, ``K`` 64, ``GROUP_SIZE_M`` 1) where the kernel
#: is handed at most as many tokens as the rank holds experts, ``M <= E``, else 64 x 64 x 32
TRITON_DEFAULT_CONFIG_VARIANTS = ("sglang_fused_moe_triton",)
#: the dtypes whose default config has no few-token case (block-quantized FP8: one config)
TRITON_ONE_CONFIG_DTYPES = ("fp8_block",)


def _variant(d: pd.DataFrame) -> pd.Series:
    """Each table row's ``variant`` (the implementation its collector timed; ``""`` without one)."""
    return d.get("variant", pd.Series("", index=d.index)).astype(str)


def few_token_config(d: pd.DataFrame) -> np.ndarray:
    """Whether each MoE row ran a Triton fused-MoE kernel's few-token default config
    (:data:`TRITON_DEFAULT_CONFIG_VARIANTS`): tokens handed to the kernel (every token, on the
    masked path too) at most the rank's experts."""
    return (_variant(d).isin(TRITON_DEFAULT_CONFIG_VARIANTS).to_numpy()
            & ~d["dtype"].astype(str).isin(TRITON_ONE_CONFIG_DTYPES).to_numpy()
            & (d.tokens.to_numpy(float) <= d.experts.to_numpy(float) / d.ep.to_numpy(float)))


#: The Marlin grouped-MoE kernel (SGLang's and vLLM's ``fused_marlin_moe``; table variants naming
#: ``marlin``) takes as its block of rows per expert the first of :data:`MARLIN_BLOCKS_M` that the
#: tokens handed to it, times top-k, spread over the rank's experts fill less than 0.9 of, else
#: the last (``M k / E / block_size_m < 0.9``, ``E = w1.shape[0]``, the rank's experts: every
#: token counted as if all its slots were local; as read in vLLM's ``fused_marlin_moe.py``)
MARLIN_BLOCKS_M = (8.0, 16.0, 32.0, 48.0, 64.0)


def marlin_block_m(tokens: Any, topk: Any, local_experts: Any) -> np.ndarray:
    """The Marlin MoE kernel's ``block_size_m`` (:data:`MARLIN_BLOCKS_M`): its tile ``t_m``."""
    per = np.asarray(tokens, float) * np.asarray(topk, float) / np.asarray(local_experts, float)
    out = np.full(per.shape, MARLIN_BLOCKS_M[-1])
    for b in reversed(MARLIN_BLOCKS_M):
        out = np.where(per / b < 0.9, b, out)
    return out


def moe_rank(d: pd.DataFrame, family: str) -> pd.DataFrame:
    """MoE rows ``d`` with what the law needs of each row's measured rank on a GPU of ``family``:
    ``rank_rows``, ``rank_experts``, ``rank_slots``, ``rank_remote`` (``T_er``, ``n_er``, ``T_ea``,
    ``n_ez`` under the table's routing: :func:`planner.truth.routing.measured_rank`), ``rank_tile``
    (``t_m``: the tile :func:`moe_tile` sizes to the rows, a Marlin kernel's own
    :func:`marlin_block_m`) and ``rank_few`` (:func:`few_token_config`)."""
    tile = TILE_M.get(family, 1.0)
    rows, touched, _, slots, remote = measured_rank(d, tile)
    marlin = _variant(d).str.contains("marlin").to_numpy()
    t_m = np.where(marlin, marlin_block_m(d.tokens, d.topk, d.experts / d.ep), moe_tile(rows, touched, tile))
    return d.assign(rank_rows=rows, rank_experts=touched, rank_slots=slots, rank_remote=remote,
                    rank_tile=t_m, rank_few=few_token_config(d))


def moe_law_seconds(d: pd.DataFrame, hw: Any, dtype: str, law: KernelLaw) -> np.ndarray:
    """The fitted grouped-MoE law (operator ``moe_law``) on rows ``d`` of one weight dtype, each at
    its measured rank (:func:`moe_rank`; fit_moe sets those columns once, as it evaluates the law
    many times); the weight stream at ``law.few`` on a Triton kernel's few-token config where
    fitted."""
    if "rank_rows" not in d:
        d = moe_rank(d, hw.family)
    hbm = np.where(d.rank_few.to_numpy(bool), law.few, law.hbm) if law.few > 0 else law.hbm
    return compile_operator("moe_law")(**_moe_shape(d, hw, dtype), t_m=d.rank_tile.to_numpy(float),
                                       T_er=d.rank_rows.to_numpy(float), n_er=d.rank_experts.to_numpy(float),
                                       T_ea=d.rank_slots.to_numpy(float), n_ez=d.rank_remote.to_numpy(float),
                                       N_sm=float(hw.sm_count or 1), t_z=law.mask,
                                       eta_e=law.compute, eta_em=hbm, eta_ea=law.act, eta_et=law.token,
                                       t_e0=law.floor)


def predict_moe(df: pd.DataFrame, mode: str, hbm_roofline: bool = False) -> np.ndarray:
    """Predicted seconds of each grouped-MoE row.  ``bound``: ``moe_bound`` (fewest experts
    touched, L2-resident weights not read; ``hbm_roofline``: ``moe_roofline``, uniform routing
    from HBM); ``realistic``: the stack's fitted law for the dtype where its spec carries one, else
    the step model's expert roofline (``moe``) with the stack's efficiencies, lambda 1."""
    from planner.specs.registry import load_hardware

    out = np.full(len(df), np.nan)
    paths = df.assign(path=moe_paths(df))
    for (gpu, stack, dtype, path), idx in paths.groupby(["gpu", "stack", "dtype", "path"]).groups.items():
        hw = _system(load_hardware(gpu), stack, mode)
        if MOE_DTYPES[dtype][0] not in hw.flops:
            continue
        r, pos = df.loc[idx], df.index.get_indexer(idx)
        shape = _moe_shape(r, hw, dtype)
        law = hw.efficiency.moe_law(dtype, path) if mode == "realistic" else None
        if law is not None:
            out[pos] = moe_law_seconds(r, hw, dtype, law)
        elif mode == "bound":
            out[pos] = (compile_operator("moe_roofline")(**shape) if hbm_roofline else
                        compile_operator("moe_bound")(**shape, C_L2=L2_BYTES.get(hw.family, 0.0)))
        else:
            eff = {k: v for k, v in _efficiency(hw, mode).items() if k in ("eta_c", "eta_m", "tau_k")}
            out[pos] = compile_operator("moe")(**shape, **eff, **{"lambda": 1.0})
    return out


def _attn_shape(d: pd.DataFrame, hw: Any, kind: str) -> dict[str, Any]:
    # an FP8 cache may be attended with FP8 MMAs (TensorRT-LLM's MLA decode kernels on Blackwell
    # beat the BF16 peak with one; the GQA prefill kernels' exponential rate, fitted at the FP8
    # peak, agrees with their BF16 rows'): the FP8 peak for FP8 caches, the BF16 peak for BF16
    # ones.  A prefill row's mean causal context is half the prompt.
    kv = d.kv_dtype.iloc[0]
    prefill = kind.endswith("_prefill")
    S = d.isl.to_numpy(float) / 2 if prefill else (d.isl + d.step).to_numpy(float)
    shape = {"b": d.batch.to_numpy(float), "S": S,
             "h": d.heads.to_numpy(float), "b_kv": KV_BYTES[kv],
             "P_c": hw.flops["fp8" if kv == "fp8" else "bf16"], "B_hbm": hw.hbm_bandwidth}
    if kind.startswith("mla"):
        return shape | MLA_DIMS | (MLA_PREFILL_DIMS if prefill else {})
    w = d.window.to_numpy(float)
    return shape | {"h_kv": d.kv_heads.to_numpy(float), "d_head": d.head_dim.to_numpy(float),
                    "phi_w": (w > 0).astype(float), "S_w": np.where(w > 0, w, 1.0)}


def base_kind(kind: str) -> str:
    """The attention shape a law kind prices: ``gqa`` for the GQA decode kernels' second
    implementations (``gqa_mmha``, ``gqa_triton``)."""
    return kind.removesuffix("_mmha").removesuffix("_triton")


def attention_kind(d: pd.DataFrame, family: str, sm_count: int = 0) -> pd.Series:
    """Each attention row's law kind: ``mla``, ``gqa``, ``mla_prefill``, ``gqa_prefill``,
    ``gqa_mmha`` for the TensorRT-LLM GQA decode shapes its dispatcher sends to MMHA (rules above,
    :data:`XQA_MAX_GROUP`), on a GPU of ``family`` with ``sm_count`` SMs, and ``gqa_triton`` for
    SGLang's and vLLM's Triton decode kernels (:data:`SGLANG_TRITON_ATTN_VARIANT`,
    :data:`VLLM_TRITON_ATTN_VARIANT`)."""
    kind = d["op"].astype(str).str.removeprefix("attention_")
    stack, variant = d["stack"].astype(str), _variant(d)
    triton = (((stack == "sglang") & (variant == SGLANG_TRITON_ATTN_VARIANT))
              | ((stack == "vllm") & (variant == VLLM_TRITON_ATTN_VARIANT)))
    kind = kind.where(~((kind == "gqa") & triton), "gqa_triton")
    gqa = (kind == "gqa") & (stack == "trtllm")
    mmha = trtllm_mmha(family, sm_count, d.batch, d.heads, d.kv_heads, d.isl + d.step,
                       d["kv_dtype"].astype(str).to_numpy() == "fp8")
    return kind.where(~(gqa.to_numpy() & mmha), "gqa_mmha")


def attn_law_seconds(d: pd.DataFrame, hw: Any, kind: str, law: KernelLaw) -> np.ndarray:
    """The fitted attention law (``attn_<kind>_law``: decode ``mla``, ``gqa``; prefill ``mla_prefill``,
    ``gqa_prefill``) on rows ``d``."""
    # a prefill law's compute fraction is the step model's eta_fa; each law takes the constants it has
    shape = _attn_shape(d, hw, base_kind(kind))  # MMHA, Triton: their own laws on the GQA shape
    if kv_cast(d, hw.family, kind):  # the kernel attends the cache's BF16 copy, in BF16
        shape |= {"b_kv": KV_BYTES["bf16"], "P_c": hw.flops["bf16"]}
    split = _split_kv(d, hw, kind)
    op = "attn_gqa_law" if kind == "gqa_triton" else f"attn_{kind}_law"  # one block per KV head
    return compile_operator(op)(**shape, **split, eta_a=law.compute, eta_fa=law.compute, t_kc=law.convert,
                                                eta_am=law.hbm, S_a0=law.offset, t_r=law.row,
                                                X_sm=law.softmax, t_a0=law.floor, beta_c=law.stream,
                                                t_c=law.cta, t_q=law.query, phi_rp=law.repeat,
                                                kappa_lc=law.tail, t_qt=PREFILL_TILE_Q)


def kv_cast(d: pd.DataFrame, family: str, kind: str) -> bool:
    """Whether MLA decode rows ``d`` (one stack, one KV dtype) ran behind a whole-cache cast of an
    FP8 cache to BF16 (:data:`MLA_KV_CAST`: SGLang's FlashAttention-3 backend on Hopper)."""
    return (kind == "mla" and str(d["kv_dtype"].iloc[0]) == "fp8"
            and (family, str(d["stack"].iloc[0])) in MLA_KV_CAST)


def head_tiled(d: pd.DataFrame, family: str, kind: str) -> bool:
    """Whether MLA decode rows ``d`` (one stack) ran trtllm-gen's head-tiled kernels
    (:data:`TRTLLM_GEN_MLA`)."""
    return kind == "mla" and (family, str(d["stack"].iloc[0])) in TRTLLM_GEN_MLA


def split_kv(d: pd.DataFrame, family: str, kind: str) -> bool:
    """Whether rows ``d`` (one stack) of decode law ``kind`` ran a split-KV kernel whose
    dispatcher we model: TensorRT-LLM's XQA and MMHA on :data:`XQA_FAMILIES`, SGLang's and vLLM's
    FlashAttention-3 on :data:`FA3_FAMILIES`, SGLang's and vLLM's Triton decode kernels everywhere."""
    stacks = set(d["stack"].astype(str))
    return (kind == "gqa_triton"
            or (kind in ("gqa", "gqa_mmha") and family in XQA_FAMILIES and stacks == {"trtllm"})
            or (kind == "gqa" and family in FA3_FAMILIES and len(stacks) == 1
                and stacks <= set(FA3_MAX_SPLITS)))


def _split_kv(d: pd.DataFrame, hw: Any, kind: str) -> dict[str, Any]:
    """``n_sub``, ``n_ht``, ``n_hc`` (:func:`decode_dispatch`, where the rows' one stack's
    dispatcher is modelled: :func:`split_kv`, :func:`head_tiled`) and ``N_sm`` of decode attention
    rows ``d``."""
    sms = float(hw.sm_count or 1)
    if not (split_kv(d, hw.family, kind) or (head_tiled(d, hw.family, kind) and hw.sm_count)):
        return {"n_sub": np.ones(len(d)), "n_ht": np.ones(len(d)), "n_hc": np.ones(len(d)), "N_sm": sms}
    return decode_dispatch(hw.family, str(d["stack"].iloc[0]), kind, sms, d.batch, d.heads, d.kv_heads,
                           d.isl + d.step, d.window) | {"N_sm": sms}


def with_attention_kind(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (attention rows) with a ``kind`` column: :func:`attention_kind` per GPU."""
    from planner.specs.registry import load_hardware

    kind = pd.Series("", index=df.index, dtype=object)
    for gpu, idx in df.groupby("gpu").groups.items():
        hw = load_hardware(gpu)
        kind.loc[idx] = attention_kind(df.loc[idx], hw.family, hw.sm_count).to_numpy(object)
    return df.assign(kind=kind)


def predict_attention(df: pd.DataFrame, mode: str, hbm_roofline: bool = False) -> np.ndarray:
    """Predicted seconds of each decode attention row (``op`` attention_mla or attention_gqa), as
    :func:`predict_moe`: bound ``attn_<kind>_bound_l2`` (or ``_bound``), realistic the fitted law
    for the KV dtype, else the step model's attention-core roofline with the stack's
    efficiencies."""
    from planner.specs.registry import load_hardware

    out = np.full(len(df), np.nan)
    kinds = df if "kind" in df else with_attention_kind(df)  # score_kernels sets it once
    for (gpu, stack, law_kind, kv), idx in kinds.groupby(["gpu", "stack", "kind", "kv_dtype"]).groups.items():
        hw = _system(load_hardware(gpu), stack, mode)
        kind = base_kind(law_kind)
        r, pos = df.loc[idx], df.index.get_indexer(idx)
        shape = _attn_shape(r, hw, kind)
        law = hw.efficiency.attn_law(law_kind, kv) if mode == "realistic" else None
        if law is not None:
            out[pos] = attn_law_seconds(r, hw, law_kind, law)
        elif mode == "bound":
            out[pos] = (compile_operator(f"attn_{kind}_bound")(**shape) if hbm_roofline else
                        compile_operator(f"attn_{kind}_bound_l2")(**shape, C_L2=L2_BYTES.get(hw.family, 0.0)))
        else:
            eff = {k: v for k, v in _efficiency(hw, mode).items() if k in ("eta_c", "eta_m", "tau_k")}
            out[pos] = compile_operator(f"attn_{kind}")(**shape, **eff)
    return out


@dataclass
class KernelScore:
    """Every kernel row with its bound and realistic predictions."""

    rows: pd.DataFrame
    #: attention rows left out as timing outliers (:func:`timing_outliers`)
    outliers: pd.DataFrame = field(default_factory=pd.DataFrame)

    def ops(self) -> list[dict[str, Any]]:
        out = []
        for (op, gpu, stack), d in self.rows.groupby(["op", "gpu", "stack"]):
            e = (d.realistic_us / d.latency_us - 1).abs().dropna()
            out.append({"op": op, "gpu": gpu, "stack": stack, "n": int(len(e)),
                        "median_abs_err": float(e.median()) if len(e) else math.nan,
                        "p90_abs_err": float(e.quantile(0.9)) if len(e) else math.nan,
                        "bias": float((d.realistic_us / d.latency_us).median()),
                        "bound_violations": int(d.bound_violation.sum()),
                        "hbm_roofline_faster": int(d.hbm_roofline_faster.sum())})
        return out

    def worst_by_op(self, n: int = 3) -> dict[str, pd.DataFrame]:
        """The ``n`` worst rows of each op class."""
        return {op: KernelScore(d).worst(n) for op, d in self.rows.groupby("op")}

    def summary(self) -> dict[str, Any]:
        e = (self.rows.realistic_us / self.rows.latency_us - 1).abs().dropna()
        return {"rows": int(len(self.rows)), "ops": self.ops(),
                "overall_median_abs_err": float(e.median()),
                "timing_outliers": self.outliers.to_dict("records"),
                "bound_violations": int(self.rows.bound_violation.sum()),
                "hbm_roofline_faster": int(self.rows.hbm_roofline_faster.sum())}

    def worst(self, n: int = 10) -> pd.DataFrame:
        r = self.rows.assign(ratio=self.rows.realistic_us / self.rows.latency_us)
        return r.reindex((r.ratio - 1).abs().sort_values(ascending=False).index).head(n)


def serving_allreduces(df: pd.DataFrame) -> pd.DataFrame:
    """The all-reduce rows a decode step runs: CUDA-graph launches (eager-mode variants, 20-30 us
    of launch cost, are dropped) and, where a stack has several strategies for one size (one-shot,
    two-shot), the fastest, which is the one its dispatcher picks."""
    d = df[~df.variant.str.contains("eager", case=False)]
    keys = ["gpu", "stack", "op", "num_gpus", "bytes"]
    return d.loc[d.groupby(keys).latency_us.idxmin()].reset_index(drop=True)


def score_kernels() -> KernelScore:
    """Price every shipped kernel row in both modes (all-reduces: :func:`serving_allreduces`; MoE:
    :func:`moe_kernels`; attention: :func:`attention_kernels`, its timing outliers set apart)."""
    parts = []
    outliers = pd.DataFrame()
    for op, predict in (("gemm", predict_gemm), ("allreduce", predict_allreduce), ("a2a", predict_a2a),
                        ("moe", predict_moe), ("attention", predict_attention)):
        df = load_table(op).reset_index(drop=True)
        if op == "allreduce":
            df = serving_allreduces(df)
        elif op == "moe":
            df = moe_kernels(df)
        elif op == "attention":
            df, outliers = attention_kernels(df)
            df = with_attention_kind(df)  # kind: the law each row takes
        df["bound_us"] = predict(df, "bound") * 1e6
        df["realistic_us"] = predict(df, "realistic") * 1e6
        if op in ("gemm", "moe", "attention"):
            df["hbm_roofline_us"] = predict(df, "bound", hbm_roofline=True) * 1e6
        df["op"] = df["op"].astype(str)
        parts.append(df)
    rows = pd.concat(parts, ignore_index=True)
    rows["bound_violation"] = rows.latency_us < rows.bound_us * (1 - BOUND_SLACK)
    rows["hbm_roofline_faster"] = rows.latency_us < rows.hbm_roofline_us.fillna(0.0) * (1 - BOUND_SLACK)
    return KernelScore(rows, outliers)


# ---- communication laws fitted to the kernels ---------------------------------------------------
#: fitted parameters of each law: (latency per pass or phase in s, fraction of NVLink bandwidth),
#: their bounds, and the step model's symbols they set
#: constant -> (starting point, bounds) of the stacks' all-reduce law (latency per pass in s,
#: fraction of NVLink bandwidth of the one- and two-shot kernel, and of the switch's reduction
#: beyond its 8 MiB; the spec's line names) and of NCCL's (fixed cost per call and
#: latency per ring step in s, bandwidth fraction), in the order their seconds functions take them
ALLREDUCE_PARAMS = {"allreduce_latency": (3e-6, (0.1e-6, 50e-6)), "allreduce_efficiency": (0.5, (0.05, 1.0)),
                    "allreduce_large_efficiency": (0.5, (0.05, 1.0))}
LARGE_EFFICIENCY = "allreduce_large_efficiency"  #: eta_nv's name, fitted only where a row pins it
NCCL_PARAMS = {"floor": (3e-6, (0.1e-6, 50e-6)), "latency": (3e-6, (0.05e-6, 20e-6)),
               "efficiency": (0.5, (0.05, 1.0)), "latency_ll": (0.8e-6, (0.05e-6, 20e-6)),
               "latency_ll128": (2e-6, (0.05e-6, 20e-6))}
#: bounds of the all-to-all law's constants: the bandwidth fraction, the floor of each phase
A2A_BOUNDS = {"efficiency": (0.02, 1.0), "floor": (0.1e-6, 400e-6)}
#: all-to-all kernels of one stack that another stack runs as they are: SGLang's low-latency
#: DeepEP mode runs the same DeepEP kernels as vLLM's ``deepep_ll`` backend, the one measured
A2A_BORROWED = {"sglang": "vllm"}


@dataclass
class LawFit:
    """A communication law of one (GPU, stack), fitted to its measured kernels."""

    law: str
    gpu: str
    stack: str
    n: int
    values: dict[str, float]
    rel_se: dict[str, float]
    median_abs_err: float
    p90_abs_err: float
    dtype: str = ""  #: the GEMM dtype of a ``gemm`` fit ("" for the communication laws)
    source: str = ""  #: where a constant comes from when not this fit alone (said in the spec note)


#: The kernel laws' loss: Huber on the log residuals, quadratic up to ``KERNEL_LOSS_SCALE`` (a
#: 10% error) and linear beyond.  A table holds kernels no law of its op explains (a dispatcher's
#: other implementation, a tuned tile that misses a shape); squared, their few large residuals set
#: the constants for every other shape.  Fitted by plain squares instead, 71 of the 136 (op, GPU,
#: stack) cells are over 10% median and 56 over 30% p90; by Huber at this scale, fewer of both
#: (docs/accuracy.md, "Measured kernels").
KERNEL_LOSS = "huber"
KERNEL_LOSS_SCALE = 0.1


def _solve(res: Any, x0: list[float], bounds: tuple[tuple[float, float], ...]) -> tuple[np.ndarray, ...]:
    """Robust least squares (:data:`KERNEL_LOSS`) on log residuals ``res(log parameters)`` with
    bounds: the parameters, their relative standard errors (sqrt of the diagonal of
    s^2 (J^T J)^-1 in log space, J the loss-weighted Jacobian at the solution and s^2 twice the
    robust cost per degree of freedom: the squares' estimate where every residual is within
    the scale; NaN at a bound of the range, 0 where no residual depends on the parameter) and the
    absolute errors ``|pred / meas - 1|`` at the solution."""
    from scipy.optimize import least_squares

    lo, hi = np.log([b[0] for b in bounds]), np.log([b[1] for b in bounds])
    sol = least_squares(res, np.log(x0), bounds=(lo, hi), diff_step=1e-4, loss=KERNEL_LOSS,
                        f_scale=KERNEL_LOSS_SCALE)
    dof = max(len(sol.fun) - len(x0), 1)
    cov = 2.0 * float(sol.cost) / dof * np.linalg.pinv(sol.jac.T @ sol.jac)
    x = np.exp(sol.x)
    # a constant at a bound of its range has no standard error: NaN (written kind: bound); one no
    # residual depends on gets 0 from the pseudo-inverse (kind: unpinned)
    at_bound = [np.isclose(v, b[0], rtol=1e-4, atol=0.0) or np.isclose(v, b[1], rtol=1e-4, atol=0.0)
                for v, b in zip(x, bounds, strict=True)]
    se = np.where(at_bound, np.nan, np.sqrt(np.maximum(np.diag(cov), 0.0)))
    return x, se, np.abs(np.exp(sol.fun) - 1)


def _fit_law(law: str, df: pd.DataFrame, seconds: Any, params: dict[str, tuple[float, Any]],
             nccl: dict[str, Any] | None = None) -> list[LawFit]:
    """``seconds(rows, hw, *constants)`` fitted to each (GPU, stack)'s rows of ``df`` (NCCL's rows
    carry the stack ``nccl``): robust least squares (:func:`_solve`) on log(predicted /
    measured), ``params`` giving each constant's starting point and bounds."""
    from planner.specs.registry import load_hardware

    names = tuple(params)
    out = []
    for (gpu, stack), d in df.groupby(["gpu", "stack"]):
        hw = load_hardware(gpu).without_stack()
        if nccl and gpu in nccl:  # NCCL's law as just fitted, not as the spec last had it
            hw = dataclasses.replace(hw, nccl_allreduce=nccl[gpu])
        meas = d.latency_us.to_numpy(float)

        def res(p: np.ndarray, d=d, meas=meas, hw=hw) -> np.ndarray:
            return np.log(seconds(d, hw, *np.exp(p)) * 1e6 / meas)

        x, se, e = _solve(res, [v[0] for v in params.values()], tuple(v[1] for v in params.values()))
        out.append(LawFit(law, str(gpu), str(stack), int(len(d)),
                          dict(zip(names, map(float, x), strict=True)),
                          dict(zip(names, map(float, se), strict=True)), float(np.median(e)),
                          float(np.quantile(e, 0.9))))
    return out


def fit_allreduce(nccl: list[LawFit] | None = None) -> list[LawFit]:
    """Robust least squares (:func:`_solve`) on log(predicted / measured) of each (GPU, stack)'s CUDA-graph
    custom all-reduce rows inside one scale-up domain: latency per pass ``a_ar``, bandwidth fraction
    ``eta_ar`` and in-switch fraction beyond the custom kernel ``eta_nv`` of
    :func:`planner.physics.equations.allreduce_time`, in log space with bounds (rows over more GPUs
    than the stack's kernel spans are NCCL's, at the system's fitted NCCL law: ``nccl``, the
    fits of :func:`fit_nccl` where given, else the spec's)."""
    from planner.specs.hardware import NcclLaw
    from planner.specs.registry import load_hardware

    laws = {f.gpu: NcclLaw(**f.values) for f in nccl or ()}

    df = serving_allreduces(load_table("allreduce"))
    df = df[df.op == "allreduce_custom"]
    df = df[df.num_gpus <= df.gpu.map({g: load_hardware(g).domain_size for g in df.gpu.unique()})]
    fits = _fit_law("allreduce", df, _allreduce_seconds, ALLREDUCE_PARAMS, laws)
    # where no row takes the in-switch branch (PCIe has none; or NCCL's ring is faster on every
    # large row) its fraction is not pinned: refitted without it, eta_nv = eta_ar
    two = {k: v for k, v in ALLREDUCE_PARAMS.items() if k != LARGE_EFFICIENCY}

    def shared(d: pd.DataFrame, hw: Any, a_ar: float, eta_ar: float) -> np.ndarray:
        return _allreduce_seconds(d, hw, a_ar, eta_ar, eta_ar)

    return [f if not f.rel_se[LARGE_EFFICIENCY] <= 1e-9 else  # 0: not pinned (NaN: at a bound)
            _fit_law("allreduce", df[(df.gpu == f.gpu) & (df["stack"] == f.stack)], shared, two, laws)[0]
            for f in fits]


def nccl_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The all-reduce rows of ``df`` that ran NCCL: its own (``allreduce_nccl``) and the stacks'
    over more GPUs than their own kernel spans (``N_ar``: SGLang's 8- and 16-GPU rows on GB300
    NVL72, beyond its host's 4; vLLM's 16-GPU rows, beyond its 8), relabelled as NCCL's.  The
    source measured NCCL itself over 2 and 4 GPUs only on GB200 and GB300; the stacks' rows
    beyond reach carry its latency and bandwidth over 8 and 16."""
    from planner.physics.step import allreduce_values
    from planner.specs.registry import load_hardware

    reach = {(g, s): allreduce_values(load_hardware(g), "realistic", s)["N_ar"]
             for g, s in df[["gpu", "stack"]].drop_duplicates().itertuples(index=False)}
    beyond = (df.op == "allreduce_custom") & (
        df.num_gpus > [reach[k] for k in zip(df.gpu, df["stack"], strict=True)])
    out = df[(df.op == "allreduce_nccl") | beyond].copy()
    out["stack"], out["op"] = "nccl", "allreduce_nccl"
    return out


def fit_nccl(df: pd.DataFrame | None = None) -> list[LawFit]:
    """NCCL's all-reduce law per system, fitted to the rows that ran it (:func:`nccl_rows`: its
    measured NCCL kernels, CUDA-graph ones, the fastest algorithm per size, and the stacks' beyond
    their kernels' reach): ``t_n0 + min over protocols of 2 (n - 1) a_p + r_p 2 (n - 1)/n x /
    (eta_nc B_su)`` (operator ``allreduce_nccl``: LL r = 2, latency_ll; LL128 16/15, latency_ll128;
    Simple 1, latency), robust least squares on log(predicted / measured) in log space;
    on a PCIe system (GPUs under more than one switch) also the host bridge's fraction ``bridge``
    (eta_hb), which the rings that leave one switch pay: ``max(1 / B_su, (1 / n_sw) / (eta_hb
    B_hb))`` seconds per byte."""
    from planner.specs.registry import load_hardware

    d = nccl_rows(serving_allreduces(load_table("allreduce")) if df is None else df)
    # over PCIe a ring beyond one switch's GPUs crosses the host: its bridge fraction eta_hb too
    pcie = d.gpu.map({g: (hw := load_hardware(g)).su_switch_gpus < hw.domain_size for g in d.gpu.unique()})
    pcie = pcie.astype(bool)
    fits = (_fit_law("nccl_allreduce", d[~pcie], nccl_seconds, NCCL_PARAMS)
            + _fit_law("nccl_allreduce", d[pcie], nccl_seconds, NCCL_PARAMS | {"bridge": (0.6, (0.05, 1.0))}))
    return sorted(fits, key=lambda f: f.gpu)


def render_collectives(text: str, f: LawFit, date: str) -> str:
    """Spec text with its ``collectives:`` block holding NCCL's fitted all-reduce law ``f`` (the
    block replaced where present, else put before ``stacks:`` or at the end)."""
    note = json.dumps(f"fitted to {f.n} measured all-reduce kernels of this system that ran NCCL (its "
                      f"own, and the stacks' over more GPUs than their kernels span; aiconfigurator-core "
                      f"0.12.0; planner/truth/data/kernels), {date}; median error {f.median_abs_err:.0%}, "
                      f"p90 {f.p90_abs_err:.0%}")
    parts = [f"{name}: {_constant(v, f.rel_se[name], name.startswith(('floor', 'latency')))}"
             for name, v in f.values.items()]
    block = ["collectives:", f"  nccl_allreduce: {{{', '.join(parts)}, kernels: {f.n}, note: {note}}}"]
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.rstrip() == "collectives:"), None)
    if start is not None:
        top = (i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith((" ", "#")))
        end = next(top, len(lines))
        lines[start:end] = block
    else:
        at = next((i for i, ln in enumerate(lines) if ln.rstrip() == "stacks:"), len(lines))
        lines[at:at] = block
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def a2a_link_group(hw: Any) -> tuple[float, int, str]:
    """Systems whose all-to-all moves over the same links: scale-up bandwidth, domain size and
    link type (H100 and H200: NVLink 4 x 8; B200 and B300: NVLink 5 x 8; GB200 and GB300: NVLink
    5 x 72)."""
    return (float(hw.su_bandwidth), int(hw.domain_size), str(hw.su_link))


def fit_a2a(df: pd.DataFrame | None = None) -> list[LawFit]:
    """The low-latency all-to-all law per (GPU, stack): one phase costs the kernel's floor of
    its phase and dtype (``<phase>_<dtype>``: launch, barrier, the receiver's polling, packing
    and scaling) plus its volume at the bandwidth fraction ``a2a_efficiency`` of NVLink.  The
    fraction is a property of the kernels and the links, so it is fitted once per stack across
    the systems of one :func:`a2a_link_group` (at a few hundred tokens per rank the volume term is
    a tenth of a GB300 phase and cannot be pinned on its own); the floors per GPU.  Robust
    least squares (:func:`_solve`) on log(predicted / measured), in log space with bounds."""
    from planner.specs.registry import load_hardware

    df = load_table("a2a") if df is None else df
    df = df.reset_index(drop=True)
    hws = {g: load_hardware(g).without_stack() for g in df.gpu.unique()}
    groups: dict[tuple[Any, str], list[str]] = {}
    for g in sorted(hws):
        for stack in sorted(set(df.loc[df.gpu == g, "stack"])):
            groups.setdefault((a2a_link_group(hws[g]), stack), []).append(g)
    out = []
    for (_, stack), gpus in groups.items():
        d = df[df.gpu.isin(gpus) & (df["stack"] == stack)]
        keys = sorted({(g, f"{ph}_{dt}") for g, ph, dt in zip(d.gpu, d.phase, d.dtype, strict=True)})
        rows = [d.index[(d.gpu == g) & (d.phase + "_" + d.dtype == k)] for g, k in keys]
        meas = d.latency_us.to_numpy(float)
        pos = [d.index.get_indexer(r) for r in rows]

        def res(p: np.ndarray, d=d, rows=rows, pos=pos, keys=keys, meas=meas) -> np.ndarray:
            x = np.exp(p)
            t = np.empty(len(d))
            for j, (g, _) in enumerate(keys):
                t[pos[j]] = _a2a_seconds(d.loc[rows[j]], hws[g], x[1 + j], x[0])
            return np.log(t * 1e6 / meas)

        bounds = (A2A_BOUNDS["efficiency"],) + (A2A_BOUNDS["floor"],) * len(keys)
        x, se, e = _solve(res, [0.5] + [30e-6] * len(keys), bounds)
        gpu_of = d.gpu.to_numpy()
        for g in gpus:
            m = gpu_of == g
            mine = [(j, k) for j, (gg, k) in enumerate(keys) if gg == g]
            vals = {"efficiency": float(x[0])} | {k: float(x[1 + j]) for j, k in mine}
            rel = {"efficiency": float(se[0])} | {k: float(se[1 + j]) for j, k in mine}
            src = "" if len(gpus) == 1 else "efficiency fitted with " + ", ".join(o for o in gpus if o != g)
            out.append(LawFit("a2a", g, stack, int(m.sum()), vals, rel, float(np.median(e[m])),
                              float(np.quantile(e[m], 0.9)), source=src))
    return out


def borrowed_a2a(fits: list[LawFit]) -> list[LawFit]:
    """The all-to-all law of each stack in :data:`A2A_BORROWED`, from the stack whose kernels it
    runs: its bandwidth fraction and its floors per phase and dtype (the same kernels, on the same
    GPU; the step model prices a phase with them under attention data parallelism)."""
    out = []
    for f in fits:
        for stack, src in A2A_BORROWED.items():
            if f.stack == src:
                out.append(LawFit("a2a", f.gpu, stack, f.n, dict(f.values), dict(f.rel_se), f.median_abs_err,
                                  f.p90_abs_err,
                                  source=f"borrowed from {src}'s fit: the same DeepEP low-latency kernels"))
    return out


#: the GEMM law's fitted constants (GemmLaw fields), their starting points and bounds: fractions
#: of peak and of HBM bandwidth in (0, 1], the floor 0.1-500 us (vLLM's block-scaled FP8 GEMMs on
#: Blackwell take ~175 us at every size up to a few GFLOP), the cast pass's HBM fraction in (0, 1],
#: the share of the last wave's idle SMs paid in [0.001, 1] (fitted where the spec gives the SMs)
GEMM_PARAMS = {"compute": (0.6, (0.01, 1.0)), "hbm": (0.7, (0.01, 1.0)), "floor": (5e-6, (0.1e-6, 500e-6)),
               "cast": (0.4, (0.01, 1.0)), "wave": (0.3, (1e-3, 1.0)), "row": (0.3e-6, (1e-9, 20e-6))}


def fit_gemm(df: pd.DataFrame | None = None) -> list[LawFit]:
    """Robust least squares (:func:`_solve`) on log(predicted / measured) of the GEMM law (operator
    ``gemm_law``) per (GPU, stack, dtype) of the measured GEMMs (``df``: the shipped table, or a
    subset of it): ``compute`` eta_g, ``hbm`` eta_gm, ``floor`` t_g0, ``wave`` w_g where the spec
    gives the GPU's SMs and, for quantized dtypes, ``cast`` eta_q; in log space with bounds, relative
    standard errors from s^2 (J^T J)^-1."""
    from planner.specs.registry import load_hardware

    df = load_table("gemm") if df is None else df
    df = df.assign(law_key=law_key(df, gemm_paths(df)))
    out = []
    for (gpu, stack, dtype, key), d in df.groupby(["gpu", "stack", "dtype", "law_key"]):
        hw = load_hardware(gpu).without_stack()
        if GEMM_DTYPES[dtype][0] not in hw.flops:
            continue
        names = [p for p in GEMM_PARAMS if (p not in ("cast", "row") or GEMM_CAST_BYTES[dtype] > 0)
                 and (p not in ("wave", "row") or hw.sm_count)]
        meas = d.latency_us.to_numpy(float) * 1e-6

        def res(p: np.ndarray, d=d, meas=meas, hw=hw, dtype=dtype, names=names) -> np.ndarray:
            law = GemmLaw(**dict(zip(names, np.exp(p), strict=True)))
            return np.log(gemm_law_seconds(d, hw, dtype, law) / meas)

        bounds = tuple(GEMM_PARAMS[p][1] for p in names)
        x, se, e = _solve(res, [GEMM_PARAMS[p][0] for p in names], bounds)
        out.append(LawFit("gemm", gpu, stack, int(len(d)), dict(zip(names, map(float, x), strict=True)),
                          dict(zip(names, map(float, se), strict=True)), float(np.median(e)),
                          float(np.quantile(e, 0.9)), key))
    return out


#: the grouped-MoE and attention laws' fitted constants (KernelLaw fields), starting points and
#: bounds: fractions in (0, 1], the floor 0.1-2000 us, the offset 1-20000 tokens, the block 0.1 ns-10 us,
#: the exponential rate 0.1-1000 T/s
KERNEL_PARAMS = {"compute": (0.5, (0.01, 1.0)), "hbm": (0.7, (0.01, 1.0)),
                 "floor": (10e-6, (0.1e-6, 2000e-6)), "act": (0.5, (0.01, 1.0)), "token": (0.3, (0.01, 1.0)),
                 "offset": (500.0, (1.0, 20000.0)), "row": (50e-9, (0.1e-9, 10e-6)),
                 "softmax": (4e12, (1e11, 1e15)), "stream": (20e9, (0.1e9, 10e12)),
                 "cta": (1e-6, (1e-9, 100e-6)), "query": (0.5e-9, (1e-13, 1e-7)),
                 "repeat": (0.5, (1e-3, 1.0)), "tail": (0.5, (1e-4, 10.0)),
                 "few": (0.7, (0.01, 1.0)), "mask": (1e-9, (1e-13, 1e-6)),
                 "convert": (0.3e-9, (1e-13, 1e-7))}


def _fit_kernel_law(law: str, groups: Any, seconds: Any, names_of: Any) -> list[LawFit]:
    from planner.specs.registry import load_hardware

    out = []
    for (gpu, stack, dtype), d in groups:
        hw = load_hardware(gpu).without_stack()
        names = names_of(d)
        meas = d.latency_us.to_numpy(float) * 1e-6

        def res(p: np.ndarray, d=d, meas=meas, hw=hw, names=names) -> np.ndarray:
            return np.log(seconds(d, hw, KernelLaw(**dict(zip(names, np.exp(p), strict=True)))) / meas)

        bounds = tuple(KERNEL_PARAMS[p][1] for p in names)
        x, se, e = _solve(res, [KERNEL_PARAMS[p][0] for p in names], bounds)
        out.append(LawFit(law, gpu, stack, int(len(d)), dict(zip(names, map(float, x), strict=True)),
                          dict(zip(names, map(float, se), strict=True)), float(np.median(e)),
                          float(np.quantile(e, 0.9)), dtype))
    return out


def fit_moe(df: pd.DataFrame | None = None) -> list[LawFit]:
    """Robust least squares (:func:`_solve`) on log(predicted / measured) of the grouped-MoE law (operator
    ``moe_law``) per (GPU, stack, weight dtype) of the measured serving kernels
    (:func:`serving_kernels`): ``compute`` eta_e, ``hbm`` eta_em, ``floor`` t_e0, ``act`` eta_ea (the
    rows' activation traffic) and ``token`` eta_et (the entering tokens' own), each row at its table's
    routing (:mod:`planner.truth.routing`); relative standard errors from s^2 (J^T J)^-1."""
    from planner.specs.registry import load_hardware

    df = moe_kernels() if df is None else df
    df = df[[MOE_DTYPES[dt][0] in load_hardware(g).flops for g, dt in zip(df.gpu, df.dtype, strict=True)]]

    def names(d: pd.DataFrame) -> list[str]:
        # the few-token config's weight stream and the masked blocks only where the cell has such rows
        return (["compute", "hbm", "floor", "act", "token"] + ["few"] * bool(d.rank_few.any())
                + ["mask"] * bool((d.rank_remote > 0).any()))

    df = df.assign(law_key=law_key(df, moe_paths(df)))
    groups = ((key, moe_rank(d, load_hardware(key[0]).family))
              for key, d in df.groupby(["gpu", "stack", "law_key"]))
    return _fit_kernel_law("moe", groups, lambda d, hw, law: moe_law_seconds(d, hw, d.dtype.iloc[0], law),
                           names)


def fit_attention(df: pd.DataFrame | None = None) -> list[LawFit]:
    """The same for the decode and prefill attention laws (``attn_mla_law``, ``attn_gqa_law``,
    ``attn_mla_prefill_law``, ``attn_gqa_prefill_law``) per (GPU, stack, kind, KV dtype):
    ``compute`` eta_a (not for GQA decode on the XQA-style kernels: the measured groups give at
    most 2 h / h_kv / b_kv = 64 FLOP per KV byte, it never reaches its compute side, so eta_a is
    not identified and held at 1; nor for TensorRT-LLM's MMHA fallback, ``gqa_mmha``, whose
    groups reach 128 heads per KV head: fitted, its compute side did not bind either), ``row`` t_r
    (GQA decode: each block's work per sequence and KV head, per query head on MMHA),
    ``hbm`` eta_am (decode only: prefill is compute-bound at every measured shape), ``offset``
    S_a0 (MLA decode, prefill), ``query`` t_q (MLA decode: SM time per element of each
    sequence's query heads, which one CTA loads and whose output it writes; fitted alone, without
    the CTA cost t_c, which ran to its bound on Hopper's TensorRT-LLM rows), ``softmax`` X_sm
    (GQA prefill where a cell's rows mix head sizes,
    64 and 128, which tell the exponentials from the MMAs; not where they hold one head size, as
    SGLang's FP8 rows and every MLA table do), ``floor`` t_a0
    (``LawFit.law`` is ``attn_<kind>``, ``dtype`` the KV dtype)."""
    from planner.specs.registry import load_hardware

    df = attention_kernels()[0] if df is None else df
    out = []
    for kind, dop in with_attention_kind(df).groupby("kind"):
        groups = ((key, d) for key, d in dop.groupby(["gpu", "stack", "kv_dtype"]))
        names = (["compute", "offset", "floor", "tail"] if kind.endswith("_prefill")
                 else ["compute", "hbm", "offset", "floor"] if kind == "mla" else ["hbm", "row", "floor"])

        def names_of(d: pd.DataFrame, names=names, kind=kind) -> list[str]:
            # the exponential rate only where the rows mix head sizes: one head size cannot tell
            # the exponentials from the MMAs (one exponential and 2 d_head MMA FLOPs per score);
            # a split-KV kernel's CTA terms where its dispatcher is modelled: on MMHA, whose
            # blocks are single query heads, the CTA's cost t_c takes the place of the block's
            # t_r and its query head's t_q (fitted together, t_r ran to its bound and its
            # standard error was 190%)
            family = load_hardware(d.gpu.iloc[0]).family
            split = split_kv(d, family, kind)
            if split and kind == "gqa_mmha":  # a block is one CTA's query head: t_c is its t_r
                return ["hbm", "floor", "stream", "cta"]
            if kind == "gqa_triton":  # t_r and t_q unpinned beside t_c on its few hundred rows
                return ["hbm", "floor", "stream", "cta"]
            if head_tiled(d, family, kind):
                return names + ["repeat", "cta", "query"]  # head tiles that each stream the KV
            if kind == "mla":  # one CTA a sequence: its query heads' load and output's write
                return names + ["query"] + ["convert"] * kv_cast(d, family, kind)
            return (names + ["softmax"] * (kind == "gqa_prefill" and d.head_dim.nunique() > 1)
                    + ["stream", "cta", "query"] * split)

        out += _fit_kernel_law(f"attn_{kind}", groups, lambda d, hw, law, kind=kind: attn_law_seconds(
            d, hw, kind, law), names_of)
    return out


_LAW_LINE = re.compile(
    r"^    (allreduce(?=_(?:latency|efficiency|large_efficiency):)|a2a(?=_[a-z0-9_]+:)"
    r"|(?:gemm|moe|attn)_[a-z0-9_]+(?=:))")


#: A kernel law's constants that carry a unit, as the spec lines and ``calibrate --kernels`` show
#: them: (factor from SI, unit); the rest are fractions
CONSTANT_UNITS = {"floor": (1e6, "us"), "row": (1e6, "us"), "cta": (1e6, "us"), "offset": (1.0, "tokens"),
                  "softmax": (1e-12, "Texp/s"), "stream": (1e-9, "GB/s"), "query": (1e12, "ps"),
                  "mask": (1e9, "ns"), "convert": (1e12, "ps")}


def _constant(v: float, se: float, time: bool, unit: str = "") -> str:
    """One fitted constant as a spec value, ``{value, se, kind}`` (a time in us; ``unit``
    another unit's name, written after the number)."""
    shown = f'"{v * 1e6:.4g} us"' if time else f'"{v:.4g} {unit}"' if unit else f"{v:.4g}"
    return f"{{value: {shown}, {_se_tag(se)}}}"


def _se_tag(se: float) -> str:
    """``se`` and ``kind`` of a fitted constant: ``bound`` at a bound of its range (its standard
    error NaN), ``unpinned`` where no kernel's time depends on it (a zero column of the Jacobian:
    standard error 0; e.g. the compute fraction of an MLA cell whose rows are all memory-bound)."""
    if not math.isfinite(se):
        return "kind: bound"
    return f"se: {yaml_number(se, 3)}, kind: fitted" if se > 1e-6 else "kind: unpinned"


#: what each fitted kernel law's spec line says it was fitted to
_LAW_WHAT = {"gemm": "{dt} GEMMs", "moe": "{dt} grouped-MoE kernels",
             "attn_mla": "MLA decode attention kernels ({dt} KV cache)",
             "attn_gqa": "GQA decode attention kernels ({dt} KV cache)",
             "attn_gqa_mmha": "GQA decode attention kernels its dispatcher runs on MMHA ({dt} KV cache)",
             "attn_gqa_triton": "GQA decode attention kernels of the stack's Triton backend ({dt} KV cache)",
             "attn_mla_prefill": "MLA prefill attention kernels (BF16 compute, {dt} KV cache)",
             "attn_gqa_prefill": "GQA prefill attention kernels (BF16 compute, {dt} KV cache)"}


#: how a spec note names a second implementation (MOE_LAW_PATHS, GEMM_LAW_PATHS)
_PATH_WORDS = {"triton": "Triton fused MoE", "fallback": "fallback kernel (shapes DeepGEMM does not take)"}


def _law_key(f: LawFit) -> str:
    return f"{f.law}_{f.dtype}" if f.law in _LAW_WHAT else f.law


def _gemm_line(f: LawFit, date: str) -> str:
    """The spec line of a fitted GEMM, grouped-MoE or attention law (``gemm_<dtype>``,
    ``moe_<dtype>``, ``attn_<kind>_<KV dtype>``)."""
    dt, path = f.dtype, ""
    if f.law in ("moe", "gemm"):
        path = next((p for p in (MOE_LAW_PATHS if f.law == "moe" else GEMM_LAW_PATHS)
                     if dt.endswith(f"_{p}")), "")
        dt = dt.removesuffix(f"_{path}") if path else dt
    what = _LAW_WHAT[f.law].format(dt=dt) + " of this GPU and stack"
    what += f" on its {_PATH_WORDS[path]}" if path else ""
    note = json.dumps(f"fitted to {f.n} measured {what} (aiconfigurator-core "
                      f"0.12.0; planner/truth/data/kernels), {date}; median error {f.median_abs_err:.0%}, "
                      f"p90 {f.p90_abs_err:.0%}")
    def shown(name: str, v: float) -> str:
        scale, unit = CONSTANT_UNITS.get(name, (1.0, ""))
        return _constant(v * scale, f.rel_se[name], False, unit)

    parts = [f"{name}: {shown(name, v)}" for name, v in f.values.items()]
    return f"    {_law_key(f)}: {{{', '.join(parts)}, kernels: {f.n}, note: {note}}}"


def _a2a_lines(f: LawFit, date: str) -> list[str]:
    """The spec lines of a fitted all-to-all law: ``a2a_efficiency`` (the step model's
    ``eta_a2a``) and, where this stack's kernels were measured, ``a2a_<phase>_<dtype>`` floors."""
    borrowed = f.source.startswith("borrowed")
    what = f"{f.n} measured low-latency all-to-all kernels of this GPU{'' if borrowed else ' and stack'}"
    extra = f"; {f.source}" if f.source else ""
    note = json.dumps(f"fitted to {what} (aiconfigurator-core 0.12.0; planner/truth/data/kernels), "
                      f"{date}{extra}; median error {f.median_abs_err:.0%}, p90 {f.p90_abs_err:.0%}")
    eta = f.values["efficiency"]
    out = [f"    a2a_efficiency: {{value: {eta:.4g}, {_se_tag(f.rel_se['efficiency'])}, note: {note}}}"]
    for key in sorted(k for k in f.values if k != "efficiency"):
        floor = _constant(f.values[key], f.rel_se[key], True)
        out.append(f"    a2a_{key}: {{floor: {floor}, kernels: {f.n}}}")
    return out


def render_allreduce(text: str, fits: list[LawFit], date: str) -> str:
    """Spec text with each stack entry's fitted kernel-law lines (``allreduce_*``, ``a2a_*``,
    ``gemm_<dtype>``, ``moe_<dtype>``, ``attn_<kind>_<KV dtype>``) set from ``fits``; stacks and
    laws the fits do not cover are left as they are."""
    for f in fits:
        if f.law == "nccl_allreduce":
            text = render_collectives(text, f, date)
    by = {(f.stack, _law_key(f)): f for f in fits if f.law != "nccl_allreduce"}
    lines = text.splitlines()
    out: list[str] = []
    in_stacks, stack = False, None
    for ln in lines:
        if ln.startswith("stacks:"):
            in_stacks = True
        elif in_stacks and ln and not ln.startswith((" ", "#")):
            in_stacks = False
        if in_stacks and re.match(r"^  [a-z][\w.-]*:\s*$", ln):
            stack = ln.strip()[:-1]
        m = _LAW_LINE.match(ln) if in_stacks else None
        if m and (stack, m.group(1)) in by:
            continue  # replaced below
        out.append(ln)
        if in_stacks and ln.startswith("    runs:"):
            f = by.get((stack, "allreduce"))
            if f is not None:
                note = json.dumps(f"fitted to {f.n} measured CUDA-graph all-reduce kernels of this GPU and "
                                  f"stack (aiconfigurator-core 0.12.0; planner/truth/data/kernels), {date}; "
                                  f"median error {f.median_abs_err:.0%}")
                lat, eff, large = ALLREDUCE_PARAMS
                for name, shown in ((lat, f'"{f.values[lat] * 1e6:.4g} us"'), (eff, f"{f.values[eff]:.4g}"),
                                    (large, f"{f.values.get(large, 0):.4g}")):
                    if name not in f.values:
                        continue
                    out.append(f"    {name}: {{value: {shown}, {_se_tag(f.rel_se[name])}, note: {note}}}")
            f = by.get((stack, "a2a"))
            if f is not None:
                out.extend(_a2a_lines(f, date))
            for law in _LAW_WHAT:
                for key, f in sorted(by.items()):
                    if key[0] == stack and f.law == law:
                        out.append(_gemm_line(f, date))
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def write_allreduce(fits: list[LawFit]) -> list[str]:
    """Write the fits (all-reduce, GEMM, grouped-MoE and attention laws) into the bundled systems'
    calibration files' ``stacks:`` entries (every new text is parsed before any is written).
    Returns the names written."""
    import datetime
    from pathlib import Path

    from planner.outputs import write_atomic
    from planner.specs.registry import bundled_calibration_path, parse_bundled

    date = datetime.date.today().isoformat()
    new: dict[str, tuple[Path, str]] = {}
    for gpu in sorted({f.gpu for f in fits}):
        path = bundled_calibration_path(gpu)
        text = render_allreduce(path.read_text("utf-8"), [f for f in fits if f.gpu == gpu], date)
        parse_bundled(gpu, text)
        new[gpu] = (path, text)
    for path, text in new.values():
        write_atomic(path, text)
    return sorted(new)
