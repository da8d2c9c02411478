"""What the benchmark that measured a run scheduled for it: the InferenceX launch matrix.

The measured runs whose source names a container image (``image=...`` in
``silicon_data_source``: the dated ``source_file=YYYY-MM-DD.csv`` records) were measured by the
InferenceX benchmark (SemiAnalysis), whose launch matrix (``nvidia-master.yaml``) states, for
every point it schedules (system, framework, precision, image, ISL/OSL, concurrency, layout):

- ``spec-decoding``: ``mtp`` (DeepSeek's multi-token-prediction drafts) or ``none``;
- for a disaggregated point, the prefill and decode workers and, for each, ``tp``, ``ep`` and
  ``dp-attn`` (attention data-parallel over the worker's ``tp`` GPUs).

The runs file records none of the first, and of the second neither the workers nor ``dp-attn``
(a DEP8 decode worker, attention DP 8, appears as attention TP 8); on GB300 its decode EP is the
prefill's.  :func:`published` looks each run up in the matrix (``data/benchmark_matrix.csv.gz``,
extracted by ``scripts/extract_benchmark_matrix.py``, see ``benchmark_matrix.md`` there) by what
the row does record: system, framework, precision, image, ISL/OSL, concurrency, model, and the
worker sizes (aggregated: GPUs and EP; disaggregated: the prefill worker's GPUs and EP and the
decode worker's GPUs).  A field is taken only where every matching point agrees on it.

The matrix says what was scheduled, not what ran; a point scheduled both with and without
speculation cannot be told apart from the row alone (:mod:`planner.truth.runs` resolves such
pairs by their measured TPOT where the file holds both).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from planner.serving.deployed import worker_gpus

#: runs ``system`` -> the matrix's runner (the part before the first ``-``: ``b200-multinode``)
RUNNER = {"h100_sxm": "h100", "h200_sxm": "h200", "b200_sxm": "b200", "b300_sxm": "b300",
          "gb200": "gb200", "gb300": "gb300"}
#: (runs ``backend``, ``mode``) -> the matrix's framework
FRAMEWORK = {("trtllm", "disagg"): "dynamo-trt", ("sglang", "disagg"): "dynamo-sglang",
             ("vllm", "disagg"): "dynamo-vllm", ("trtllm", "agg"): "trt", ("sglang", "agg"): "sglang",
             ("vllm", "agg"): "vllm"}
#: runs ``precision`` -> the matrix's
PRECISION = {"fp4": "fp4", "nvfp4": "fp4", "fp8": "fp8", "bf16": "bf16"}
#: runs ``model_path`` -> the matrix's ``model-prefix``
MODEL_PREFIX = {
    "deepseek-ai/DeepSeek-R1": "dsr1", "deepseek-ai/DeepSeek-V3": "dsr1",
    "openai/gpt-oss-120b": "gptoss", "MiniMaxAI/MiniMax-M2.5": "minimaxm2.5",
    "Qwen/Qwen3.5-397B-A17B": "qwen3.5", "zhipuai/GLM-5": "glm5", "moonshotai/Kimi-K2.5": "kimik2.5",
}
_IMAGE = re.compile(r"(?:^|;\s*)image=(\S+)")


@lru_cache(maxsize=1)
def load_matrix() -> pd.DataFrame:
    """The bundled launch matrix, one row per scheduled point (see the module docstring)."""
    with resources.files("planner.truth.data").joinpath("benchmark_matrix.csv.gz").open("rb") as fh:
        df = pd.read_csv(fh, compression="gzip", dtype=str, keep_default_na=False)
    df["runner"] = df.runner.str.split("-").str[0]
    return df


def _f(v: Any) -> float:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return math.nan
    return x if math.isfinite(x) else math.nan


def _layout(tp: str, ep: str, dp_attn: str) -> tuple[float, float, float, float] | None:
    """(worker GPUs, attention TP, attention DP, EP) of a matrix worker; ``ep`` blank: 1."""
    t = _f(tp)
    if not t:
        return None
    e = _f(ep) if ep else 1.0
    g = float(worker_gpus(t, e))  # a worker of tp 1 and ep 16 is 16 GPUs
    tpa = 1.0 if dp_attn == "true" else min(t, g)
    return (g, tpa, g / tpa, e)


def _one(values: set) -> Any:
    return next(iter(values)) if len(values) == 1 else None


def published(runs: pd.DataFrame) -> pd.DataFrame:
    """For each run (index of ``runs``), what the launch matrix says where it is unanimous.

    Columns: ``matrix_points`` (points matched), ``spec`` (``none``, ``mtp``, ``mtp/none``: both
    scheduled; empty: no match), ``decode`` and ``prefill`` ((GPUs, attention TP, attention DP,
    EP) of a disaggregated run's workers, or None), ``decode_workers``, ``prefill_workers``
    (NaN where not unanimous or not disaggregated)."""
    out = pd.DataFrame(
        {"matrix_points": 0, "spec": "", "decode": None, "prefill": None,
         "decode_workers": math.nan, "prefill_workers": math.nan},
        index=runs.index,
    )
    src = runs.get("silicon_data_source", pd.Series("", index=runs.index)).astype(str)
    image = src.str.extract(_IMAGE)[0].str.replace("#", "/", regex=False)
    has = image.notna()
    if not has.any():
        return out
    r = runs[has]
    num = lambda c: pd.to_numeric(r[c], errors="coerce") if c in r else pd.Series(math.nan, index=r.index)  # noqa: E731
    agg = r["mode"].astype(str) == "agg"
    dp, pdp, ddp = (num(c).fillna(1.0) for c in ("attention_dp_size", "prefill_attention_dp_size",
                                                   "decode_attention_dp_size"))
    left = pd.DataFrame({
        "_row": r.index,
        "runner": r.system.astype(str).map(RUNNER),
        "framework": [FRAMEWORK.get((str(b), str(mo)), "")
                      for b, mo in zip(r.backend, r["mode"], strict=True)],
        "precision": r.precision.astype(str).map(PRECISION),
        "image": image[has],
        "isl": num("isl").map(_int), "osl": num("osl").map(_int), "conc": num("concurrency").map(_int),
        "model_prefix": r.model_path.astype(str).map(MODEL_PREFIX),
        # the worker sizes the row records: aggregated (GPUs, EP); disaggregated (prefill GPUs,
        # prefill EP, decode GPUs)
        "_g": np.where(agg, num("tp_size") * dp, num("prefill_tp_size") * pdp),
        "_ep": np.where(agg, num("moe_ep_size"), num("prefill_moe_ep_size")),
        "_gd": np.where(agg, math.nan, num("decode_tp_size") * ddp),
        "_agg": agg.to_numpy(),
    }).dropna(subset=["runner", "precision", "model_prefix"])
    m = load_matrix()
    j = left.merge(m, on=["runner", "framework", "precision", "image", "isl", "osl", "conc", "model_prefix"])
    if j.empty:
        return out
    f = lambda c: pd.to_numeric(j[c], errors="coerce")  # noqa: E731
    ep1 = lambda c: f(c).fillna(1.0)  # noqa: E731
    ep = j._ep.fillna(1.0)
    size = lambda role: worker_gpus(f(f"{role}tp"), ep1(f"{role}ep"))  # noqa: E731
    ok = np.where(j._agg, (size("") == j._g) & (ep1("ep") == ep),
                  (size("prefill_") == j._g) & (ep1("prefill_ep") == ep) & (size("decode_") == j._gd))
    j = j[ok]
    for row, c in j.groupby("_row"):
        out.at[row, "matrix_points"] = len(c)
        out.at[row, "spec"] = "/".join(sorted(set(c.spec_decoding)))
        if not c._agg.iloc[0]:
            for role in ("decode", "prefill"):
                out.at[row, role] = _one({_layout(t, e, d) for t, e, d in zip(
                    c[f"{role}_tp"], c[f"{role}_ep"], c[f"{role}_dp_attn"], strict=True)})
                w = _one(set(c[f"{role}_workers"]))
                out.at[row, f"{role}_workers"] = _f(w) if w else math.nan
    return out


def _int(v: Any) -> str:
    x = _f(v)
    return str(int(x)) if x == x else ""
