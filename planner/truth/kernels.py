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

import json
import math
import re
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
    """The step model's efficiency symbols for ``hw`` in ``mode`` (the same values a step uses)."""
    from planner.physics.step import _efficiencies

    return _efficiencies(hw, mode)


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
                      eta_ar=e["eta_ar"], eta_so=e["eta_so"], a_ar=e["a_ar"], a_so=e["a_so"])
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


def serving_allreduces(df: pd.DataFrame) -> pd.DataFrame:
    """The all-reduce rows a decode step runs: CUDA-graph launches (eager-mode variants, 20-30 us
    of launch cost, are dropped) and, where a stack has several strategies for one size (one-shot,
    two-shot), the fastest, which is the one its dispatcher picks."""
    d = df[~df.variant.str.contains("eager", case=False)]
    keys = ["gpu", "stack", "op", "num_gpus", "bytes"]
    return d.loc[d.groupby(keys).latency_us.idxmin()].reset_index(drop=True)


def score_kernels() -> KernelScore:
    """Price every shipped kernel row in both modes (all-reduces: :func:`serving_allreduces`)."""
    parts = []
    for op, predict in (("gemm", predict_gemm), ("allreduce", predict_allreduce)):
        df = load_table(op).reset_index(drop=True)
        if op == "allreduce":
            df = serving_allreduces(df)
        df["bound_us"] = predict(df, "bound") * 1e6
        df["realistic_us"] = predict(df, "realistic") * 1e6
        df["op"] = df["op"].astype(str)
        parts.append(df)
    rows = pd.concat(parts, ignore_index=True)
    rows["bound_violation"] = rows.latency_us < rows.bound_us * (1 - BOUND_SLACK)
    return KernelScore(rows)


# ---- the all-reduce law fitted to the kernels --------------------------------------------------
#: bounds of the fitted all-reduce parameters: latency per pass (s), fraction of NVLink bandwidth
AR_BOUNDS = {"allreduce_latency": (0.1e-6, 50e-6), "allreduce_efficiency": (0.05, 1.0)}


@dataclass
class AllReduceFit:
    """The all-reduce law of one (GPU, stack), fitted to its custom all-reduce kernels."""

    gpu: str
    stack: str
    n: int
    values: dict[str, float]
    rel_se: dict[str, float]
    median_abs_err: float
    p90_abs_err: float


def fit_allreduce() -> list[AllReduceFit]:
    """Least squares on log(predicted / measured) of each (GPU, stack)'s custom all-reduce rows
    inside one scale-up domain: latency per pass ``a_ar`` and bandwidth fraction ``eta_ar`` of
    :func:`planner.physics.equations.allreduce_time`, in log space with bounds."""
    from scipy.optimize import least_squares

    from planner.specs.registry import load_hardware

    fn = compile_operator("allreduce")
    df = serving_allreduces(load_table("allreduce"))
    df = df[df.op == "allreduce_custom"]
    out = []
    lo = np.log([b[0] for b in AR_BOUNDS.values()])
    hi = np.log([b[1] for b in AR_BOUNDS.values()])
    for (gpu, stack), d in df.groupby(["gpu", "stack"]):
        hw = load_hardware(gpu)
        d = d[d.num_gpus <= hw.domain_size]
        x, n, meas = (d[c].to_numpy(float) for c in ("bytes", "num_gpus", "latency_us"))

        def res(p: np.ndarray, x=x, n=n, meas=meas, hw=hw) -> np.ndarray:
            a, eta = np.exp(p)
            t = fn(x=x, n_g=n, N_su=float(hw.domain_size), B_su=hw.su_bandwidth, B_so=hw.so_bandwidth,
                   eta_ar=eta, eta_so=1.0, a_ar=a, a_so=0.0)
            return np.log(t * 1e6 / meas)

        sol = least_squares(res, np.log([3e-6, 0.6]), bounds=(lo, hi), diff_step=1e-4)
        dof = max(len(sol.fun) - 2, 1)
        cov = float(sol.fun @ sol.fun) / dof * np.linalg.pinv(sol.jac.T @ sol.jac)
        e = np.abs(np.exp(sol.fun) - 1)
        a, eta = np.exp(sol.x)
        out.append(AllReduceFit(gpu, stack, int(len(d)), {"allreduce_latency": float(a),
                                                            "allreduce_efficiency": float(eta)},
                                {"allreduce_latency": float(np.sqrt(cov[0, 0])),
                                 "allreduce_efficiency": float(np.sqrt(cov[1, 1]))},
                                float(np.median(e)), float(np.quantile(e, 0.9))))
    return out


_AR_LINE = re.compile(r"^    (allreduce_latency|allreduce_efficiency):")


def render_allreduce(text: str, fits: list[AllReduceFit], date: str) -> str:
    """Spec text with each stack entry's ``allreduce_latency`` / ``allreduce_efficiency`` set from
    ``fits`` (entries of stacks the fits do not cover are left as they are)."""
    by_stack = {f.stack: f for f in fits}
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
        if in_stacks and stack in by_stack and _AR_LINE.match(ln):
            continue  # replaced below
        out.append(ln)
        if in_stacks and stack in by_stack and ln.startswith("    runs:"):
            f = by_stack[stack]
            note = json.dumps(f"fitted to {f.n} measured CUDA-graph all-reduce kernels of this GPU and stack "
                              f"(aiconfigurator-core 0.12.0; planner/truth/data/kernels), {date}; median "
                              f"error {f.median_abs_err:.0%}")
            a, eta = f.values["allreduce_latency"], f.values["allreduce_efficiency"]
            out.append(f'    allreduce_latency: {{value: "{a * 1e6:.4g} us", se: '
                       f'{f.rel_se["allreduce_latency"]:.3g}, kind: fitted, note: {note}}}')
            out.append(f"    allreduce_efficiency: {{value: {eta:.4g}, se: "
                       f'{f.rel_se["allreduce_efficiency"]:.3g}, kind: fitted, note: {note}}}')
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def write_allreduce(fits: list[AllReduceFit]) -> list[str]:
    """Write the fits into the bundled hardware specs' ``stacks:`` entries (every new text is
    parsed before any is written).  Returns the names written."""
    import datetime
    from pathlib import Path

    from planner.outputs import write_atomic
    from planner.specs.hardware import parse_hardware
    from planner.specs.reading import parse_yaml
    from planner.truth.calibrate import _spec_path

    date = datetime.date.today().isoformat()
    new: dict[str, tuple[Path, str]] = {}
    for gpu in sorted({f.gpu for f in fits}):
        path = _spec_path(gpu)
        text = render_allreduce(path.read_text("utf-8"), [f for f in fits if f.gpu == gpu], date)
        parse_hardware(parse_yaml(text, str(path)), str(path))
        new[gpu] = (path, text)
    for path, text in new.values():
        write_atomic(path, text)
    return sorted(new)
