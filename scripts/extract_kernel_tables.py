"""Extract measured kernel latencies from the aiconfigurator-core 0.12.0 wheel into compact CSVs.

Development time only; the installed tool never needs aiconfigurator, pyarrow or the network.

    pip download --no-deps aiconfigurator-core==0.12.0 -d /tmp/aic
    pip install pyarrow            # (the ``dev`` extra)
    python scripts/extract_kernel_tables.py /tmp/aic/aiconfigurator_core-0.12.0-*.whl

writes ``planner/truth/data/kernels/{gemm,allreduce,a2a,moe,attention}.csv.gz`` (gzip with a zero
timestamp, so the bytes are reproducible) and prints the sha256 of each uncompressed CSV, which
``tests/truth/test_kernels.py`` compares with the shipped files when the wheel is present.

What is kept (deterministic, no sampling):
- GEMM: for each GPU of the bundled systems and each serving stack, its newest table; every
  dtype; rows with a bundled model's hidden size d as n or k (the shape of every projection of
  that model, at any TP the tables hold), at m = 1, 2, 4, ... 16384 tokens.
- the RTX PRO 6000 Server (``COMM_ONLY``): its all-reduce tables, not its GEMMs.
- all-reduce: each stack's newest custom all-reduce table and the newest NCCL all_reduce rows,
  every GPU count and message size, as ``bytes`` per GPU, with the kernel ``variant`` (CUDA
  graph or eager launch, TensorRT-LLM's one-shot / two-shot strategies).
- all-to-all: each stack's newest MoE all-to-all table (TensorRT-LLM and vLLM; SGLang's does
  not say how many GPUs took part), the low-latency (decode) kernels only, dispatch and combine
  per token count, hidden size, top-k and expert count.  Its latencies are already in us.
- grouped MoE: each stack's newest ``moe_perf`` table, with the rows of the older table it
  reuses for the shapes it did not recollect (``reuse.yaml``, or an earlier release candidate of
  the same release); gated shapes only (a shape any kept table runs with a ``nongated`` kernel,
  two matrices not three, is dropped with every kernel of every stack);
  BF16, FP8, FP8 block, NVFP4 and the W4A16 formats; routing ``balanced`` and ``power_law_1.01``
  (1.2 left out for size).  The bundled models' shapes (hidden, expert intermediate, top-k,
  experts) at tokens 1, 2, 4 ... 16384 and every expert TP x EP; the declared sample of the other
  shapes: tokens 1, 16, 256, 4096, expert TP 1, balanced routing.
- attention, decode only: each stack's newest MLA generation kernel table (TensorRT-LLM and
  SGLang; vLLM has only whole-module MLA tables, left out), every row; each stack's newest GQA /
  MHA generation table, the bundled models' per-GPU head configurations (query heads, KV heads,
  head dim at TP 1, 2, 4, 8) without a sliding window (gpt-oss's head dim 64 also with its
  128-token window), and the declared sample of the other configurations: batch 1 and 64, no
  window; GQA at contexts 2, 8, 32 ... 131072 (every other power of 2).  The context of a row is
  ``isl + step`` (the source's prompt length and decode step).
- attention, prefill (ops ``attention_mla_prefill``, ``attention_gqa_prefill``): each stack's
  newest MLA context table (TensorRT-LLM and SGLang) and GQA / MHA context table, BF16 compute
  only (TensorRT-LLM's and SGLang's FP8 context kernels are left out), at prompts
  ``PREFILL_ISL`` and batches ``PREFILL_BATCH``; GQA for the bundled models' per-GPU head
  configurations only (as in decode, gpt-oss's 128-token window too).  A row's ``isl`` is its
  prompt length, its ``step`` 0.

The custom all-reduce tables' ``message_size`` counts BF16 elements (aiconfigurator sizes them
as hidden size x tokens), so bytes = 2 x message_size.  The NCCL table's ``message_size`` is read
as bytes: read as BF16 elements, its 2-GPU all-reduces would move data faster than NVLink's peak
(about 620 GB/s on H100's 450 per direction), which no algorithm can.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd

#: aiconfigurator system directory -> bundled hardware spec
GPUS = {"h100_sxm": "hgx-h100", "h200_sxm": "hgx-h200", "b200_sxm": "hgx-b200", "b300_sxm": "hgx-b300",
        "gb200": "gb200-nvl72", "gb300": "gb300-nvl72", "rtx_pro_6000_server": "rtx-pro-6000-server"}
#: systems whose communication tables alone are kept: the RTX PRO 6000 Server's GEMM tables run
#: memory-bound shapes out of its 128 MB L2 (up to 2.7x faster than the GDDR7 bound, the operands
#: reread), which a decode step streaming its weights never does
COMM_ONLY = {"rtx_pro_6000_server"}
OUT = Path(__file__).resolve().parents[1] / "planner" / "truth" / "data" / "kernels"
M_KEPT = tuple(2**i for i in range(15))
DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "nvfp4"}
#: MoE weight dtypes kept (the source's name -> ours): BF16, FP8 per tensor, FP8 block-scaled,
#: NVFP4, and the two W4A16 formats (MXFP4 weights as gpt-oss ships them, INT4 weight-only)
MOE_DTYPES = DTYPES | {"w4a16_mxfp4": "w4a16_mxfp4", "int4_wo": "int4_wo"}
#: token counts kept for the bundled models' MoE shapes (the tables also hold 48, 80, 96 ...)
MOE_TOKENS = M_KEPT
#: routing distributions kept: the source's balanced routing and its milder power law (exponent
#: 1.01); its power law 1.2 is left out (size)
MOE_DISTRIBUTIONS = ("balanced", "power_law_1.01")
#: the declared sample of the other MoE shapes: these token counts, no expert TP, balanced routing
MOE_SAMPLE_TOKENS = (1, 16, 256, 4096)
#: the declared sample of the other GQA head configurations: these batch sizes
GQA_SAMPLE_BATCH = (1, 64)
#: GQA context lengths kept (the tables step by powers of 2 from 2 to 131072): every other one
GQA_CONTEXTS = tuple(2 ** (2 * i + 1) for i in range(9))
#: prefill attention kept: these prompt lengths (the tables hold 1 ... 32768) and batch sizes
PREFILL_ISL = (128, 512, 1024, 2048, 4096, 8192, 16384)
PREFILL_BATCH = (1, 4, 16, 64)


def _version_key(v: str) -> tuple:
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"[.]|(?<=\d)(?=[a-z])", v))


def _newest(names: list[str], system: str, op_dir: str, filename: str) -> dict[str, str]:
    """stack -> path of its newest table ``systems/data/<system>/<op_dir>/<stack>/<version>/<filename>``."""
    pat = re.compile(rf"/systems/data/{system}/{op_dir}/([^/]+)/([^/]+)/{filename}$")
    best: dict[str, tuple[tuple, str]] = {}
    for n in names:
        m = pat.search(n)
        if m:
            stack, version = m.groups()
            key = _version_key(version)
            if stack not in best or key > best[stack][0]:
                best[stack] = (key, n)
    return {s: p for s, (_, p) in best.items()}


def _hidden_sizes() -> set[int]:
    """Hidden sizes d of the bundled models: every projection GEMM has d on one side."""
    from planner.specs.registry import load_model, model_names

    return {int(load_model(m).d) for m in model_names()}


def _moe_shapes() -> set[tuple[int, int, int, int]]:
    """(hidden, expert intermediate, top-k, routed experts) of the bundled MoE models."""
    from planner.specs.registry import load_model, model_names

    out = set()
    for name in model_names():
        m = load_model(name)
        if int(m.E) > 1:
            out.add((int(m.d), int(m.f_e), int(m.k), int(m.E)))
    return out


def _gqa_heads() -> set[tuple[int, int, int]]:
    """(query heads, KV heads, head dim) per GPU of the bundled GQA models at TP 1, 2, 4, 8 (KV
    heads replicated where TP exceeds them)."""
    from planner.specs.registry import load_model, model_names

    out = set()
    for name in model_names():
        m = load_model(name)
        if m.attention == "gqa":
            for tp in (1, 2, 4, 8):
                out.add((int(m.h) // tp, max(int(m.h_kv) // tp, 1), int(m.d_head)))
    return out


def _reused(z: zipfile.ZipFile, path: str, table: str) -> str | None:
    """The older table whose rows fill the shapes a newest table did not recollect: the one it
    declares it reuses (``reuse.yaml`` beside it), else the newest earlier release candidate of
    the same release (H100 / H200 TensorRT-LLM 1.3.0rc23 recollected a few shapes only, without a
    declaration, over 1.3.0rc20); None where neither exists."""
    import yaml

    parts = path.split("/")
    meta = "/".join(parts[:-1]) + "/reuse.yaml"
    if meta in z.namelist():
        for r in yaml.safe_load(z.read(meta)).get("reuse", []):
            if r.get("table") == table:
                return "/".join(parts[:-2] + [str(r["from_version"]), parts[-1]])
    release, _, rc = parts[-2].partition("rc")
    if not rc:
        return None
    older = [n for n in z.namelist() if n.startswith("/".join(parts[:-2]) + f"/{release}rc")
             and n.endswith("/" + parts[-1]) and n != path]
    older = [n for n in older if _version_key(n.split("/")[-2]) < _version_key(parts[-2])]
    return max(older, key=lambda n: _version_key(n.split("/")[-2])) if older else None


def _read(z: zipfile.ZipFile, name: str) -> pd.DataFrame:
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(z.read(name))).to_pandas()


def extract(wheel: str | Path) -> dict[str, pd.DataFrame]:
    z = zipfile.ZipFile(wheel)
    names = z.namelist()
    hidden = _hidden_sizes()
    shapes, heads, nongated = _moe_shapes(), _gqa_heads(), _nongated_shapes(z, names)
    gemm, ar, a2a, moe, attn = [], [], [], [], []
    for system, gpu in GPUS.items():
        gemms = {} if system in COMM_ONLY else _newest(names, system, "gemm", "gemm_perf.parquet")
        for stack, path in sorted(gemms.items()):
            t = _read(z, path)
            keep = (t.n.isin(hidden) | t.k.isin(hidden)) & t.m.isin(M_KEPT) & t.gemm_dtype.isin(DTYPES)
            t = t[keep]
            gemm.append(pd.DataFrame({
                "gpu": gpu, "stack": stack, "version": t.version.astype(str), "op": "gemm",
                "dtype": t.gemm_dtype.map(DTYPES), "m": t.m, "n": t.n, "k": t.k,
                "latency_us": (t.latency * 1e3).round(4)}))
        for stack, path in sorted(_newest(names, system, "comm", "custom_allreduce_perf.parquet").items()):
            t = _read(z, path)
            ar.append(pd.DataFrame({
                "gpu": gpu, "stack": stack, "version": t.version.astype(str), "op": "allreduce_custom",
                "variant": t.kernel_source.astype(str),
                "dtype": "bf16", "num_gpus": t.num_gpus, "bytes": t.message_size * 2,
                "latency_us": (t.latency * 1e3).round(4)}))
        pat = re.compile(rf"/systems/data/{system}/comm/nccl/([^/]+)/nccl_perf.parquet$")
        found = sorted((_version_key(m.group(1)), n) for n in names if (m := pat.search(n)))
        if found:
            t = _read(z, found[-1][1])
            t = t[t.op_name == "all_reduce"]
            ar.append(pd.DataFrame({
                "gpu": gpu, "stack": "nccl", "version": t.version.astype(str), "op": "allreduce_nccl",
                "variant": t.kernel_source.astype(str),
                "dtype": t.nccl_dtype.replace({"half": "bf16"}).astype(str), "num_gpus": t.num_gpus,
                "bytes": t.message_size, "latency_us": (t.latency * 1e3).round(4)}))
        for stack, path in sorted(_newest(names, system, "comm", "moe_a2a_perf.parquet").items()):
            t = _read(z, path)
            t = t[t.comm_backend.astype(str).str.endswith("_ll")]  # the low-latency decode kernels
            a2a.append(pd.DataFrame({
                "gpu": gpu, "stack": stack, "version": t.version.astype(str), "op": "a2a",
                "variant": t.comm_backend.astype(str), "phase": t.phase.astype(str),
                "dtype": t.comm_dtype.astype(str).replace({"bfloat16": "bf16", "default": "bf16"}),
                "ep": t.ep_size.astype(int), "hidden": t.hidden_size.astype(int), "topk": t.topk.astype(int),
                "experts": t.num_experts.astype(int), "tokens": t.num_tokens.astype(int),
                "latency_us": t.latency.astype(float).round(4)}))
        if system in COMM_ONLY:
            continue
        for stack, path in sorted(_newest(names, system, "moe", "moe_perf.parquet").items()):
            moe.append(_moe_rows(z, path, gpu, stack, shapes, nongated))
        for stack, path in sorted(_newest(names, system, "mla", "generation_mla_perf.parquet").items()):
            t = _read(z, path)
            attn.append(_attention_rows(t, gpu, stack, "attention_mla", "decode", t.mla_dtype.map(DTYPES)))
        gqa_tables = _newest(names, system, "attention", "generation_attention_perf.parquet")
        for stack, path in sorted(gqa_tables.items()):
            t = _read(z, path)
            # the bundled configurations without a sliding window, and gpt-oss's (head dim 64) with
            # its 128-token window too; the others at the sample's batch sizes, no window
            ctx = (t.isl + t.step).astype(int)
            t = t[(_bundled_gqa(t, heads) | (t.batch_size.isin(GQA_SAMPLE_BATCH) & (t.window_size == 0)))
                  & (t.beam_width == 1) & ctx.isin(GQA_CONTEXTS)]
            attn.append(_attention_rows(t, gpu, stack, "attention_gqa", "decode", t.attn_dtype.map(DTYPES)))
        attn += _prefill_attention(z, names, system, gpu, heads)
    out = {"gemm": pd.concat(gemm, ignore_index=True), "allreduce": pd.concat(ar, ignore_index=True),
           "a2a": pd.concat(a2a, ignore_index=True), "moe": pd.concat(moe, ignore_index=True),
           "attention": pd.concat(attn, ignore_index=True)}
    for k, df in out.items():
        keys = [c for c in df.columns if c != "latency_us"]
        out[k] = df.sort_values(keys, kind="mergesort").reset_index(drop=True)
    return out


def _bundled_gqa(t: pd.DataFrame, heads: set[tuple[int, int, int]]) -> pd.Series:
    """Rows of a GQA table at a bundled model's per-GPU head configuration, without a sliding
    window or (gpt-oss: head dim 64) with its 128-token one."""
    cfg = list(zip(t.num_heads, t.num_key_value_heads, t.head_dim, strict=True))
    bundled = pd.Series([c in heads for c in cfg], index=t.index)
    return bundled & ((t.window_size == 0) | ((t.window_size == 128) & (t.head_dim == 64)))


def _attention_rows(t: pd.DataFrame, gpu: str, stack: str, op: str, phase: str, dtype: Any) -> pd.DataFrame:
    """One attention table's kept rows in the shipped columns (MLA tables: no KV heads, head dim
    or window; prefill: step 0, the prompt as ``isl``)."""
    gqa = "num_key_value_heads" in t
    return pd.DataFrame({
        "gpu": gpu, "stack": stack, "version": t.version.astype(str), "op": op, "phase": phase,
        "variant": t.kernel_source.astype(str), "dtype": dtype, "kv_dtype": t.kv_cache_dtype.map(DTYPES),
        "batch": t.batch_size.astype(int), "isl": t.isl.astype(int),
        "step": t.step.astype(int) if phase == "decode" else 0, "heads": t.num_heads.astype(int),
        "kv_heads": t.num_key_value_heads.astype(int) if gqa else 0,
        "head_dim": t.head_dim.astype(int) if gqa else 0, "window": t.window_size.astype(int) if gqa else 0,
        "latency_us": (t.latency * 1e3).round(4)})


def _prefill_attention(z: zipfile.ZipFile, names: list[str], system: str, gpu: str,
                       heads: set[tuple[int, int, int]]) -> list[pd.DataFrame]:
    """The prefill (context) attention rows of one system: MLA and GQA, BF16 compute, at
    PREFILL_ISL x PREFILL_BATCH (GQA: the bundled head configurations)."""
    out = []
    for stack, path in sorted(_newest(names, system, "mla", "context_mla_perf.parquet").items()):
        t = _read(z, path)
        t = t[(t.mla_dtype == "bfloat16") & t.isl.isin(PREFILL_ISL) & t.batch_size.isin(PREFILL_BATCH)]
        out.append(_attention_rows(t, gpu, stack, "attention_mla_prefill", "prefill", "bf16"))
    for stack, path in sorted(_newest(names, system, "attention", "context_attention_perf.parquet").items()):
        t = _read(z, path)
        t = t[_bundled_gqa(t, heads) & (t.beam_width == 1) & (t.attn_dtype == "bfloat16")
              & t.isl.isin(PREFILL_ISL) & t.batch_size.isin(PREFILL_BATCH)]
        out.append(_attention_rows(t, gpu, stack, "attention_gqa_prefill", "prefill", "bf16"))
    return out


MOE_KEY = ["kernel_source", "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
           "moe_tp_size", "moe_ep_size", "distribution"]


def _moe_table(z: zipfile.ZipFile, path: str) -> pd.DataFrame:
    """A newest ``moe_perf`` table with the older one's rows for the shapes it did not recollect."""
    t = _read(z, path)
    old = _reused(z, path, "moe_perf")
    if old is not None:
        o = _read(z, old)
        have = set(map(tuple, t[MOE_KEY].to_numpy().tolist()))
        o = o[[tuple(r) not in have for r in o[MOE_KEY].to_numpy().tolist()]]
        t = pd.concat([t, o], ignore_index=True)
    return t


def _nongated_shapes(z: zipfile.ZipFile, names: list[str]) -> set[tuple[int, int, int, int]]:
    """The MoE shapes any kept table runs with a ``nongated`` kernel (Nemotron's ReLU^2 experts:
    two matrices, not three)."""
    out = set()
    for system in GPUS:
        for path in _newest(names, system, "moe", "moe_perf.parquet").values():
            t = _moe_table(z, path)
            t = t[t.kernel_source.astype(str).str.contains("nongated")]
            out |= set(zip(t.hidden_size, t.inter_size, t.topk, t.num_experts, strict=True))
    return out


def _moe_rows(z: zipfile.ZipFile, path: str, gpu: str, stack: str, shapes: set[tuple[int, int, int, int]],
              nongated: set[tuple[int, int, int, int]]) -> pd.DataFrame:
    """One stack's newest grouped-MoE table (plus the rows of the older table it declares it
    reuses, for the shapes it did not recollect), gated kernels only, the bundled models' shapes
    at ``MOE_TOKENS`` and the declared sample of the others."""
    t = _moe_table(z, path)
    shape = pd.Series(list(zip(t.hidden_size, t.inter_size, t.topk, t.num_experts, strict=True)),
                      index=t.index)
    # the shapes a TensorRT-LLM table runs non-gated are dropped with every kernel of every stack:
    # SGLang's and vLLM's tables time them with kernels whose names do not say so (they beat the
    # three-matrix bound)
    keep = ~shape.isin(nongated) & t.moe_dtype.isin(MOE_DTYPES) & t.distribution.isin(
        MOE_DISTRIBUTIONS)
    t, shape = t[keep], shape[keep]
    bundled = shape.isin(shapes) & t.num_tokens.isin(MOE_TOKENS)
    sample = (~shape.isin(shapes) & t.num_tokens.isin(MOE_SAMPLE_TOKENS) & (t.moe_tp_size == 1)
              & (t.distribution == "balanced"))
    t = t[bundled | sample]
    return pd.DataFrame({
        "gpu": gpu, "stack": stack, "version": t.version.astype(str), "op": "moe",
        "variant": t.kernel_source.astype(str), "dtype": t.moe_dtype.map(MOE_DTYPES),
        "distribution": t.distribution.astype(str), "tokens": t.num_tokens.astype(int),
        "hidden": t.hidden_size.astype(int), "inter": t.inter_size.astype(int), "topk": t.topk.astype(int),
        "experts": t.num_experts.astype(int), "tp": t.moe_tp_size.astype(int),
        "ep": t.moe_ep_size.astype(int), "latency_us": (t.latency * 1e3).round(4)})


def csv_bytes(df: pd.DataFrame) -> bytes:
    return df.to_csv(index=False, lineterminator="\n").encode("utf-8")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python scripts/extract_kernel_tables.py WHEEL", file=sys.stderr)
        return 2
    tables = extract(argv[0])
    OUT.mkdir(parents=True, exist_ok=True)
    for name, df in tables.items():
        data = csv_bytes(df)
        packed = gzip.compress(data, compresslevel=9, mtime=0)
        (OUT / f"{name}.csv.gz").write_bytes(packed)
        print(f"{name}.csv.gz: {len(df)} rows, {len(packed) / 1e6:.2f} MB "
              f"(CSV sha256 {hashlib.sha256(data).hexdigest()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
