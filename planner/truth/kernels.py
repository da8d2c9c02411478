"""Measured kernels against the step model's operator laws (``moe-planner validate --kernels``).

The tables (``planner/truth/data/kernels/*.csv.gz``, see ``PROVENANCE.md`` beside them) hold
measured latencies of single kernels per GPU and serving stack: GEMMs by (m, n, k, dtype) and
all-reduces by (GPUs, message size).  Each row is priced by :mod:`planner.physics.operators`
(the step model's own roofline and all-reduce expressions) in ``bound`` mode (datasheet peaks,
no latencies: no kernel may beat it) and ``realistic`` mode (the system's efficiencies for that
stack, as :func:`planner.truth.runs.score_runs` uses them; NCCL rows take the default stack).

Errors are ``|predicted / measured - 1|``; ``bound_violations`` counts kernels measured faster
than their bound-mode time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from planner.errors import SpecError
from planner.physics.operators import compile_operator

#: GEMM dtype -> (compute dtype of the peak, bytes per input activation, per weight, per output)
GEMM_DTYPES = {"bf16": ("bf16", 2.0, 2.0, 2.0), "fp8": ("fp8", 1.0, 1.0, 2.0),
               "fp8_block": ("fp8", 1.0, 1.0, 2.0), "nvfp4": ("fp4", 0.5625, 0.5625, 2.0)}
BOUND_SLACK = 0.01
OPS = ("gemm", "allreduce")


def load_table(op: str) -> pd.DataFrame:
    """One shipped kernel table (``gemm`` or ``allreduce``)."""
    if op not in OPS:
        raise SpecError("<input>", "op", f"one of {', '.join(OPS)}, got {op!r}")
    f = resources.files("planner.truth.data").joinpath("kernels", f"{op}.csv.gz")
    with f.open("rb") as fh:
        return pd.read_csv(fh, compression="gzip")


def _efficiency(hw: Any, mode: str) -> dict[str, float]:
    if mode == "bound":
        return dict(eta_c=1.0, eta_m=1.0, eta_su=1.0, eta_so=1.0, tau_k=0.0, a_su=0.0, a_so=0.0)
    e = hw.efficiency
    return dict(eta_c=e.compute, eta_m=e.hbm, eta_su=e.scale_up, eta_so=e.scale_out,
                tau_k=e.kernel_overhead, a_su=hw.su_latency, a_so=hw.so_latency)


def _system(hw: Any, stack: str, mode: str) -> Any:
    if mode == "realistic" and stack in hw.stacks:
        return hw.with_stack(stack)
    return hw


def predict_gemm(df: pd.DataFrame, mode: str) -> np.ndarray:
    """Predicted seconds of each GEMM row."""
    from planner.specs.registry import load_hardware

    fn = compile_operator("gemm")
    out = np.full(len(df), np.nan)
    for (gpu, stack, dtype), idx in df.groupby(["gpu", "stack", "dtype"]).groups.items():
        hw = _system(load_hardware(gpu), stack, mode)
        comp, bi, bw, bo = GEMM_DTYPES[dtype]
        if comp not in hw.flops:
            continue
        r = df.loc[idx]
        pos = df.index.get_indexer(idx)
        out[pos] = fn(m=r.m.to_numpy(float), n=r.n.to_numpy(float), k_gemm=r.k.to_numpy(float),
                      b_in=bi, b_w=bw, b_out=bo, P=hw.flops[comp], B_hbm=hw.hbm_bandwidth,
                      **{k: v for k, v in _efficiency(hw, mode).items() if k in ("eta_c", "eta_m", "tau_k")})
    return out


def predict_allreduce(df: pd.DataFrame, mode: str) -> np.ndarray:
    """Predicted seconds of each all-reduce row (``bytes`` per GPU)."""
    from planner.specs.registry import load_hardware

    fn = compile_operator("allreduce")
    out = np.full(len(df), np.nan)
    for (gpu, stack), idx in df.groupby(["gpu", "stack"]).groups.items():
        hw = _system(load_hardware(gpu), stack, mode)
        r = df.loc[idx]
        pos = df.index.get_indexer(idx)
        e = _efficiency(hw, mode)
        out[pos] = fn(x=r.bytes.to_numpy(float), n_g=r.num_gpus.to_numpy(float),
                      N_su=float(hw.domain_size), B_su=hw.su_bandwidth, B_so=hw.so_bandwidth,
                      eta_su=e["eta_su"], eta_so=e["eta_so"], a_su=e["a_su"], a_so=e["a_so"])
    return out


@dataclass
class KernelScore:
    """Every kernel row with its bound and realistic predictions."""

    rows: pd.DataFrame

    def ops(self) -> list[dict[str, Any]]:
        out = []
        for (op, gpu, stack), d in self.rows.groupby(["op", "gpu", "stack"]):
            e = (d.realistic_us / d.latency_us - 1).abs().dropna()
            out.append({"op": op, "gpu": gpu, "stack": stack, "n": int(len(e)),
                        "median_abs_err": float(e.median()) if len(e) else math.nan,
                        "p90_abs_err": float(e.quantile(0.9)) if len(e) else math.nan,
                        "bias": float((d.realistic_us / d.latency_us).median()),
                        "bound_violations": int(d.bound_violation.sum())})
        return out

    def summary(self) -> dict[str, Any]:
        e = (self.rows.realistic_us / self.rows.latency_us - 1).abs().dropna()
        return {"rows": int(len(self.rows)), "ops": self.ops(),
                "overall_median_abs_err": float(e.median()),
                "bound_violations": int(self.rows.bound_violation.sum())}

    def worst(self, n: int = 10) -> pd.DataFrame:
        r = self.rows.assign(ratio=self.rows.realistic_us / self.rows.latency_us)
        return r.reindex((r.ratio - 1).abs().sort_values(ascending=False).index).head(n)


def score_kernels() -> KernelScore:
    """Price every shipped kernel row in both modes."""
    parts = []
    for op, predict in (("gemm", predict_gemm), ("allreduce", predict_allreduce)):
        df = load_table(op).reset_index(drop=True)
        df["bound_us"] = predict(df, "bound") * 1e6
        df["realistic_us"] = predict(df, "realistic") * 1e6
        df["op"] = df["op"].astype(str)
        parts.append(df)
    rows = pd.concat(parts, ignore_index=True)
    rows["bound_violation"] = rows.latency_us < rows.bound_us * (1 - BOUND_SLACK)
    return KernelScore(rows)
