"""Extract measured kernel latencies from the aiconfigurator-core 0.12.0 wheel into compact CSVs.

Development time only; the installed tool never needs aiconfigurator, pyarrow or the network.

    pip download --no-deps aiconfigurator-core==0.12.0 -d /tmp/aic
    pip install pyarrow            # (the ``dev`` extra)
    python scripts/extract_kernel_tables.py /tmp/aic/aiconfigurator_core-0.12.0-*.whl

writes ``planner/truth/data/kernels/{gemm,allreduce,a2a}.csv.gz`` (gzip with a zero timestamp, so
the bytes are reproducible) and prints the sha256 of each uncompressed CSV, which
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


def _read(z: zipfile.ZipFile, name: str) -> pd.DataFrame:
    import pyarrow.parquet as pq

    return pq.read_table(io.BytesIO(z.read(name))).to_pandas()


def extract(wheel: str | Path) -> dict[str, pd.DataFrame]:
    z = zipfile.ZipFile(wheel)
    names = z.namelist()
    hidden = _hidden_sizes()
    gemm, ar, a2a = [], [], []
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
    out = {"gemm": pd.concat(gemm, ignore_index=True), "allreduce": pd.concat(ar, ignore_index=True),
           "a2a": pd.concat(a2a, ignore_index=True)}
    for k, df in out.items():
        keys = [c for c in df.columns if c != "latency_us"]
        out[k] = df.sort_values(keys, kind="mergesort").reset_index(drop=True)
    return out


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
