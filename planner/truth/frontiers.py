"""Measured frontiers as the measuring stick: benchmark points scored one by one and as envelopes.

The input is a CSV in the columns of InferenceX's measured serving points (one row per benchmark
run at one concurrency: system, framework, precision, speculation, ISL/OSL, layout, concurrency,
tokens/s per user and per GPU, median TTFT and TPOT).  Such a file is read from a path the user
gives; none is bundled (cite InferenceX, SemiAnalysis, as the source of any figure quoted).

Two scores:

``point``
    each row predicted at its own deployment (:func:`planner.serving.deployed.predict`: its
    layout, workers, concurrency, precision and speculation; TTFT as the benchmark measures it,
    queueing of the prompts that arrive together included): tokens/s per GPU (output tokens over
    every GPU of the deployment), TPOT and TTFT, each as |predicted / measured - 1|.
``frontier``
    for each group (system, framework, precision, speculation, ISL/OSL, serving mode) the
    measured upper envelope against the tool's as-deployed frontier for that framework
    (:func:`planner.serving.deployed.deployed_frontier`, the framework's own launch recipes at the
    concurrencies they schedule, as the benchmark samples them), compared at each envelope point's
    tokens/s per user: the ratio of tokens/s per GPU.

The bound (``bound`` mode, the ``limit`` search: datasheet peaks, no overheads, every draft
accepted, decode GPUs only) must stay above every measured point; a point above it is a bound
violation, flagged where a named rule explains it.

Rules, each named and counted, never a silent drop:

``model_not_bundled`` / ``system_not_bundled`` / ``framework_not_modelled``
    the row's model or system has no bundled spec, or its framework no serving stack here: not
    scored.
``deployment_does_not_fit``
    the row's weights and KV cache do not fit its deployment in the tool's memory model: not
    scored (listed: either the row or the memory model is wrong).
``superseded`` (a flag)
    the same configuration (system, framework, precision, speculation, ISL/OSL, layout, workers,
    concurrency) was measured again on a later date: scored point by point (its own deployment, as
    measured then), but only the latest enters the measured envelope (software moves between
    dates; the latest is what a deployment gets now).
``throughput_identity``
    the row's output tokens/s disagrees with its own ``concurrency x OSL / e2e`` by more than
    :data:`IDENTITY_TOLERANCE` beyond the benchmark's mean request length (a defect of the row):
    not scored.
``measurement_implausible``
    a figure outside :data:`PLAUSIBLE_MEASUREMENTS` (a negative TTFT, 1e308 tokens/s, a p99 TTFT of
    -5 s; a blank p99 figure is only left out of the p99 scores): not scored.
``layout_impossible``
    a layout count the row's serving mode is read by (TP, EP, workers and GPUs of each worker
    pool; the total GPUs) given but not a whole number from 1 to :data:`MAX_LAYOUT` (an EP of 0,
    a TP of -1, 0 GPUs, 1e308 prefill workers): not scored.
``measurement_missing``
    tokens/s per user or per GPU, TPOT or TTFT blank or not positive: not scored.
``layout_not_recorded``
    a worker's GPUs or a disaggregated pool's worker count blank: not scored.
``gpu_count_inferred`` (a flag)
    the source inferred the row's GPU count (its ``flags`` column): scored, listed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from planner.errors import SpecError, shown
from planner.serving.deployed import (
    FRAMEWORK_ALIASES,
    FRAMEWORKS,
    LENGTH_MEAN,
    RUNNERS,
    deployed_frontier,
    envelope_at,
    predict,
    worker_gpus,
)
from planner.serving.search import pareto
from planner.specs.registry import canonical_hardware_name
from planner.truth.runs import read_csv

#: a row's deployment: layout, workers and concurrency (with its group, the configuration a date measured)
LAYOUT = ("tp", "ep", "dp_attention", "prefill_tp", "prefill_ep", "prefill_dp_attention", "decode_tp",
          "decode_ep", "decode_dp_attention", "prefill_workers", "decode_workers", "concurrency")
GROUP = ["hardware", "framework", "precision", "spec_decoding", "isl", "osl", "serving"]
CONFIG = [*GROUP, *LAYOUT]
REQUIRED = ("date", "model", *GROUP, *LAYOUT, "total_gpus", "tps_per_user", "tps_per_gpu_output", "ttft_s",
            "tpot_s", "e2e_s")
MODELS = {"DeepSeek-R1-0528": "deepseek-r1", "DeepSeek-R1": "deepseek-r1"}
#: the file's precision -> routed-expert weight format
WEIGHTS = {"fp4": "nvfp4", "fp8": "fp8"}
#: The KV-cache dtype the benchmark's DeepSeek-R1 launch scripts set, by (framework, runner): FP8
#: (``--kv-cache-dtype fp8_e4m3``, ``kv_cache_config: dtype: fp8``, ATOM's ``--kv_cache_dtype fp8``)
#: in every script that states one (InferenceX ``benchmarks/single_node/fixed_seq_len/dsr1_*.sh``
#: and the ``srt-slurm-recipes/sglang/dsr1`` recipes, commit 843c6254, 2026-08-21); SGLang on H200
#: sets none (``auto``: the checkpoint's BF16).  A pair not listed keeps the model's default.
BENCH_KV = {("trt", "b200"): "fp8", ("trt", "h200"): "fp8", ("sglang", "b200"): "fp8",
            ("sglang", "b300"): "fp8", ("sglang", "mi300x"): "fp8", ("sglang", "mi325x"): "fp8",
            ("sglang", "mi355x"): "fp8", ("atom", "mi355x"): "fp8", ("dynamo-sglang", "b200"): "fp8",
            ("sglang", "h200"): "bf16"}
#: |measured output tokens/s / (concurrency x mean OSL / e2e) - 1| above which a row contradicts itself
IDENTITY_TOLERANCE = 0.2
#: relative slack of the bound check (the measured medians' own noise)
BOUND_SLACK = 0.01


#: the largest ISL, OSL (tokens) and concurrency (sequences) a row may give: 10 M tokens (as the
#: measured runs) and 1,000,000 sequences (the public points: ISL up to 8,192, concurrency up to 16,384)
COUNT_RANGES = {"isl": 1e7, "osl": 1e7, "concurrency": 1e6}
#: the largest layout count a row may give (TP, EP, workers, GPUs): the most GPUs a system spec may
#: have (``gpus_per_system`` in :data:`planner.specs.hardware.PLAUSIBLE`); the public points use at most 96
MAX_LAYOUT = 100_000
#: the layout columns each serving mode reads (aggregated; disaggregated)
AGG_LAYOUT = ("tp", "ep", "total_gpus")
DISAGG_LAYOUT = (*(f"{r}_{c}" for r in ("prefill", "decode") for c in ("tp", "ep", "workers", "gpus")),
                 "total_gpus")


def load_frontiers(path: str | Path) -> pd.DataFrame:
    """The measured-frontier CSV at ``path``, checked for the required columns and numbers."""
    label = str(path)
    df = read_csv(path, label, REQUIRED, "a measured-frontier file (InferenceX points)",
                  "at least one measured point")
    for c, top in COUNT_RANGES.items():
        v = pd.to_numeric(df[c], errors="coerce")
        bad = ~(np.isfinite(v) & (v >= 1) & (v <= top) & (v == np.round(v)))
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            what = "sequences" if c == "concurrency" else "tokens"
            raise SpecError(label, f"row {i + 2}: {c}",
                            f"a whole number of {what} from 1 to {top:,.0f}, got {shown(df[c].iloc[i])}")
        df[c] = v.astype(float)
    for c in ("tps_per_user", "tps_per_gpu_output", "tpot_s", "ttft_s", "e2e_s", "total_gpus"):
        df[c] = pd.to_numeric(df[c], errors="coerce")
    return df


def _truthy(col: pd.Series) -> np.ndarray:
    return col.astype(str).str.lower().isin(["true", "1", "1.0"]).to_numpy()


def deployments(df: pd.DataFrame) -> pd.DataFrame:
    """Each row's deployment in :mod:`planner.serving.deployed`'s columns."""
    disagg = df.serving.astype(str).str.startswith("disagg").to_numpy()
    num = lambda c: pd.to_numeric(df[c], errors="coerce").to_numpy(float)  # noqa: E731
    out = pd.DataFrame({"disagg": disagg, "concurrency": df.concurrency.to_numpy(float)}, index=df.index)
    for role in ("decode", "prefill"):
        t = np.where(disagg, num(f"{role}_tp"), num("tp"))
        dp = np.where(disagg, _truthy(df[f"{role}_dp_attention"]), _truthy(df.dp_attention))
        ep = np.where(disagg, num(f"{role}_ep"), num("ep"))
        ep = np.where(np.isfinite(ep) & (ep >= 1), ep, 1.0)
        workers = np.where(disagg, num(f"{role}_workers"), 1.0)
        # GPUs per worker: the file's own pool count over its workers where it gives one (a row
        # of tp 1 and ep 16 is a 16-GPU worker), else the larger of tp and ep
        pool = num(f"{role}_gpus") if f"{role}_gpus" in df else np.full(len(df), np.nan)
        per = pool / workers
        g = np.where(disagg & np.isfinite(per) & (per >= 1), per, worker_gpus(t, ep))
        out[f"{role}_workers"] = workers
        out[f"{role}_gpus"] = g
        out[f"{role}_tp_attn"] = np.where(dp, 1.0, np.minimum(t, g))
        out[f"{role}_ep"] = ep
    return out


#: the file's model -> the launch recipes' model prefix
RECIPE_PREFIX = {"DeepSeek-R1-0528": "dsr1", "DeepSeek-R1": "dsr1"}


def _key(v: Any) -> str:
    """A recipe field as the recipe table writes it: a whole number without its ``.0``, a flag
    ``true``/``false``, blank where unset."""
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    s = str(v).strip().lower()
    if s in ("true", "false"):
        return s
    if s in ("", "nan", "none"):
        return ""
    try:
        x = float(s)
    except ValueError:
        return s
    return str(int(x)) if math.isfinite(x) and x == int(x) else s


def recipe_fields(df: pd.DataFrame) -> pd.DataFrame:
    """For each row, what the launch recipe that scheduled it states (the bundled InferenceX recipe
    table, :func:`planner.serving.deployed.recipes`), matched on system, framework, precision,
    model, ISL/OSL, concurrency, speculation and every layout field, and taken only where the
    matching recipe rows agree (those still held on or after the row's date where any are): the MTP
    draft count (``mtp_drafts``, from the cited recipe file's name) and the decode rank's
    ``max_batch_size`` (``decode_max_batch``, from the cited TensorRT-LLM recipe file).  NaN where
    no recipe matches or they disagree."""
    from planner.serving.deployed import recipes

    out = pd.DataFrame({"mtp_drafts": np.nan, "decode_max_batch": np.nan}, index=df.index)
    rec = recipes()
    if "decode_max_batch" not in rec.columns:
        rec = rec.assign(decode_max_batch="")
    disagg = df.serving.astype(str).str.startswith("disagg")
    lay_d = ("prefill_workers", "prefill_tp", "prefill_ep", "prefill_dp_attn", "decode_workers",
             "decode_tp", "decode_ep", "decode_dp_attn")
    src = {"prefill_dp_attn": "prefill_dp_attention", "decode_dp_attn": "decode_dp_attention"}
    left = pd.DataFrame({
        "_row": df.index,
        "runner": df.hardware.astype(str).str.lower(),
        "framework": df.framework.astype(str),
        "precision": df.precision.astype(str).str.lower(),
        "model_prefix": df.model.map(RECIPE_PREFIX).fillna(""),
        "disagg": np.where(disagg, "true", "false"),
        "isl": df.isl.map(_key), "osl": df.osl.map(_key), "conc": df.concurrency.map(_key),
        "spec_decoding": df.spec_decoding.astype(str).str.lower(),
        "_date": df.date.astype(str),
    })
    for c in ("tp", "ep"):
        left[c] = np.where(disagg, "", df[c].map(_key))
    left["dp_attn"] = np.where(disagg, "", np.where(_truthy(df.dp_attention), "true", "false"))
    for c in lay_d:
        v = df[src.get(c, c)]
        v = pd.Series(np.where(_truthy(v), "true", "false"), index=df.index) if c.endswith("dp_attn") \
            else v.map(_key)
        left[c] = np.where(disagg, v, "")
    r = rec.copy()
    for c in ("ep", "prefill_ep", "decode_ep"):  # (ep blank in the recipes: 1)
        r[c] = r[c].where(r[c] != "", "1")
    for c in ("dp_attn", "prefill_dp_attn", "decode_dp_attn"):
        r[c] = r[c].where(r[c] == "true", "false")
    r.loc[r.disagg == "true", ["tp", "ep", "dp_attn"]] = ""
    r.loc[r.disagg != "true", list(lay_d)] = ""
    for c in ("ep", "prefill_ep", "decode_ep"):
        left[c] = left[c].where(~((left[c] == "") & (left.disagg == ("true" if c != "ep" else "false"))), "1")
    keys = ["runner", "framework", "precision", "model_prefix", "disagg", "isl", "osl", "conc",
            "spec_decoding", "tp", "ep", "dp_attn", *lay_d]
    j = left.merge(r[[*keys, "mtp_drafts", "decode_max_batch", "last_date"]], on=keys)
    for row, c in j.groupby("_row"):
        later = c[c.last_date >= c._date.iloc[0]]
        c = later if len(later) else c
        for f in ("mtp_drafts", "decode_max_batch"):
            vals = set(c[f]) - {""}
            if len(vals) == 1:
                out.at[row, f] = float(vals.pop())
    return out


def _drafts(df: pd.DataFrame, dep: pd.DataFrame, stack: pd.Series,
            given: np.ndarray | None = None) -> np.ndarray:
    """Each row's MTP drafts: the recipe's (``given``, where stated), else the stack's default."""
    from planner.serving.deployed import DEFAULT_DRAFTS, DEFAULT_DRAFTS_DP

    dp = (dep.decode_tp_attn < dep.decode_gpus).to_numpy()
    n = np.array([
        DEFAULT_DRAFTS_DP.get(s, DEFAULT_DRAFTS.get(s, 2)) if d else DEFAULT_DRAFTS.get(s, 2)
        for s, d in zip(stack, dp, strict=True)
    ], float)
    if given is not None:
        g = np.asarray(given, float)
        n = np.where(np.isfinite(g) & (g > 0), g, n)
    return np.where(df.spec_decoding.astype(str).to_numpy() == "mtp", n, 0).astype(int)


def _err(pred: Any, meas: Any) -> np.ndarray:
    """|pred / meas - 1| (NaN or inf where a figure scored out by a rule is 0 or missing)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(np.asarray(pred, float) / np.asarray(meas, float) - 1.0)


def _q(x: np.ndarray, q: float) -> float:
    x = x[np.isfinite(x)]
    return float(np.quantile(x, q)) if len(x) else math.nan


@dataclass
class FrontierScore:
    """Scored rows (``rows``), the frontier groups (``groups``) and the summary (:meth:`summary`)."""

    rows: pd.DataFrame
    groups: list[dict[str, Any]]
    compared: pd.DataFrame  #: one row per measured envelope point compared with the tool's frontier
    source: str
    flags: dict[str, int] = field(default_factory=dict)
    #: one row per (system, model, ISL/OSL, level): the measured envelope of every point on the
    #: system, the default frontier's and the predictions' at the measured deployments
    system: pd.DataFrame | None = None

    def summary(self) -> dict[str, Any]:
        r = self.rows
        s = r[r.scored]
        why = r.loc[~r.scored, "rule"].where(r.loc[~r.scored, "rule"] != "", r.loc[~r.scored, "status"])
        c = self.compared
        ratio = c.ratio.to_numpy(float)
        fe = np.abs(ratio - 1.0)
        worst = float(np.nanmax(np.maximum(ratio, 1.0 / ratio))) if np.isfinite(ratio).any() else math.nan
        v = r[r.bound_violation]
        return {
            "source": self.source,
            "points_total": int(len(r)),
            "points_scored": int(r.scored.sum()),
            "unscored": {k: int(n) for k, n in why.value_counts().items()},
            "flags": self.flags,
            "point": {
                "tps_per_gpu_median_abs_err": _q(s.tps_err.to_numpy(float), 0.5),
                "tps_per_gpu_p90_abs_err": _q(s.tps_err.to_numpy(float), 0.9),
                "tpot_median_abs_err": _q(s.tpot_err.to_numpy(float), 0.5),
                "ttft_median_abs_err": _q(s.ttft_err.to_numpy(float), 0.5),
                "bias": _q((s.pred_output_tps_per_gpu / s.tps_per_gpu_output).to_numpy(float), 0.5),
            },
            "p99": {
                "points": int(np.isfinite(s.ttft_p99_err.to_numpy(float)).sum()),
                "ttft_median_abs_err": _q(s.ttft_p99_err.to_numpy(float), 0.5),
                "tpot_median_abs_err": _q(s.tpot_p99_err.to_numpy(float), 0.5),
                "ttft_bias": _q((s.pred_ttft_p99_s / s.p99_ttft_s).to_numpy(float), 0.5),
                "tpot_bias": _q((s.pred_tpot_p99_s / s.p99_tpot_s).to_numpy(float), 0.5),
            },
            "frontier": {
                "points_compared": int(np.isfinite(ratio).sum()),
                "points_beyond_reach": int((~np.isfinite(ratio)).sum()),
                "median_abs_err": _q(fe, 0.5),
                "p90_abs_err": _q(fe, 0.9),
                "bias": _q(ratio, 0.5),
                "worst_factor": worst,
                "groups": self.groups,
            },
            "bound_violations": int(len(v)),
            "bound_violations_flagged": int((v["flags"] != "").sum()),
            **(system_summary(self.system) if self.system is not None else {}),
        }

    def by_date(self) -> list[dict[str, Any]]:
        """The point scores of each serving stack's builds by month (software moves: the same
        configuration measured on several dates differs), ROCm apart from CUDA: points, TPOT and
        tokens/s per GPU median error, and TPOT bias (median predicted / measured; above 1 the
        build ran faster than the fit predicts)."""
        s = self.rows[self.rows.scored]
        rocm = s.hardware_spec.isin(ROCM_SYSTEMS)
        platform = np.where(rocm, "rocm", "cuda")
        out = []
        for (stack, plat, month), d in s.groupby([s["stack"], platform, s["date"].astype(str).str[:7]]):
            out.append({"stack": stack, "platform": plat, "month": month, "points": int(len(d)),
                        "tpot_median_abs_err": _q(d.tpot_err.to_numpy(float), 0.5),
                        "tps_per_gpu_median_abs_err": _q(d.tps_err.to_numpy(float), 0.5),
                        "tpot_bias": _q((d.pred_tpot_s / d.tpot_s).to_numpy(float), 0.5)})
        return out

    def by(self, key: str) -> list[dict[str, Any]]:
        """Point and frontier scores per ``hardware`` or ``framework``."""
        out = []
        s = self.rows[self.rows.scored]
        for k, d in s.groupby(key):
            c = self.compared[self.compared[key] == k]
            fe = np.abs(c.ratio.to_numpy(float) - 1.0)
            out.append(
                {
                    key: k,
                    "points": int(len(d)),
                    "tps_per_gpu_median_abs_err": _q(d.tps_err.to_numpy(float), 0.5),
                    "tpot_median_abs_err": _q(d.tpot_err.to_numpy(float), 0.5),
                    "ttft_median_abs_err": _q(d.ttft_err.to_numpy(float), 0.5),
                    "frontier_points": int(np.isfinite(fe).sum()),
                    "frontier_median_abs_err": _q(fe, 0.5),
                    "frontier_p90_abs_err": _q(fe, 0.9),
                    "frontier_bias": _q(c.ratio.to_numpy(float), 0.5),
                }
            )
        return out


#: the bundled systems whose stacks run on ROCm (their builds move apart from CUDA's)
ROCM_SYSTEMS = ("mi300x", "mi325x", "mi355x", "mi455x-helios")
#: the range a measured figure must lie in to be scored (exclusive below, inclusive above):
#: (0, 1 hour] for TTFT and E2E, (0, 60 s] for TPOT, (0, 100,000] tokens/s per user and
#: (0, 1,000,000] tokens/s per GPU (the public points: TPOT 3.2-257 ms, TTFT up to 379 s, up to
#: 7,300 tok/s/GPU)
PLAUSIBLE_MEASUREMENTS = {"ttft_s": (0.0, 3600.0), "e2e_s": (0.0, 3600.0), "tpot_s": (0.0, 60.0),
                          "tps_per_user": (0.0, 1e5), "tps_per_gpu_output": (0.0, 1e6),
                          # the optional p99 figures, where given: as their medians (the public
                          # points: p99 TTFT up to 564 s, p99 TPOT up to 0.37 s)
                          "p99_ttft_s": (0.0, 3600.0), "p99_tpot_s": (0.0, 60.0)}
#: tokens/s per user at which a system's frontier is set against everything measured on it
SYSTEM_LEVELS = (10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 150.0)
#: a cell is "below" where the tool gives less than this share of a measured point
BELOW = 0.85


def _envelope(x: Any, y: Any, levels: tuple[float, ...]) -> np.ndarray:
    """:func:`~planner.serving.deployed.envelope_at` of points (``x``, ``y``), the non-finite left out."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y)
    if not ok.any():
        return np.full(len(levels), math.nan)
    return envelope_at(pd.DataFrame({"tps_per_user": x[ok], "y": y[ok]}), levels, "y")


def system_cells(df: pd.DataFrame, frontier_of: Any,
                 levels: tuple[float, ...] = SYSTEM_LEVELS) -> pd.DataFrame:
    """Each system's default frontier against the envelope of every point measured on it (any
    framework, precision, speculation or date; rows with positive figures), at ``levels`` tokens/s
    per user and each ISL/OSL: one row per (system, model, ISL/OSL, level) the measurements reach,
    with ``measured``, ``tool`` (the best of ``frontier_of(hardware, model, isl, osl)``'s points at
    least that fast per user; NaN: not reached) and ``own`` (the best prediction at a measured
    deployment at least that fast, the envelope the point scores see)."""
    x = pd.to_numeric(df.tps_per_user, errors="coerce").to_numpy(float)
    y = pd.to_numeric(df.tps_per_gpu_output, errors="coerce").to_numpy(float)
    use = (df.hardware_spec != "") & (df.model_spec != "") & (x > 0) & (y > 0)
    rows = []
    for (h, m, isl, osl), d in df[use].groupby(["hardware_spec", "model_spec", "isl", "osl"]):
        tool = frontier_of(h, m, float(isl), float(osl))
        tx, ty = tool if tool is not None else (np.array([]), np.array([]))
        s = d[d.scored] if "scored" in d else d.iloc[:0]
        meas = _envelope(d.tps_per_user, d.tps_per_gpu_output, levels)
        tool_y = _envelope(tx, ty, levels)
        own = _envelope(s.pred_tps_per_user, s.pred_output_tps_per_gpu, levels)
        for u, mv, tv, ov in zip(levels, meas, tool_y, own, strict=True):
            if math.isfinite(mv):  # (a level no measurement reaches is no cell)
                rows.append({"hardware": h, "model": m, "isl": float(isl), "osl": float(osl), "level": u,
                             "measured": mv, "tool": tv, "own": ov})
    return pd.DataFrame(rows, columns=["hardware", "model", "isl", "osl", "level", "measured", "tool", "own"])


def factor_score(ratio: np.ndarray) -> dict[str, Any]:
    """``median_factor`` = exp(median |log r|), ``p90_factor``, ``bias`` (median r), ``below`` (cells
    under :data:`BELOW`) and ``unreachable`` (NaN cells) of ratios ``r`` = tool / measured."""
    r = np.asarray(ratio, float)
    fin = r[np.isfinite(r) & (r > 0)]
    lg = np.abs(np.log(fin))
    return {"cells": int(len(r)), "median_factor": float(np.exp(np.median(lg))) if len(lg) else math.nan,
            "p90_factor": float(np.exp(np.quantile(lg, 0.9))) if len(lg) else math.nan,
            "bias": float(np.median(fin)) if len(fin) else math.nan,
            "below": int((fin < BELOW).sum()), "unreachable": int((~np.isfinite(r)).sum())}


def system_summary(cells: pd.DataFrame) -> dict[str, Any]:
    """The ``system`` and ``own_point_envelope`` scores of :func:`system_cells` (overall, per system
    and per level): physics and coverage told apart (the own-point envelope is what the step gives
    at the deployments that were measured; the system score, what the default search finds)."""
    if cells.empty:
        return {}
    r = (cells.tool / cells.measured).to_numpy(float)
    o = (cells.own / cells.measured).to_numpy(float)
    per = []
    for (h, isl, osl), c in cells.groupby(["hardware", "isl", "osl"]):
        per.append({"hardware": h, "isl": isl, "osl": osl,
                    "ratios": {f"{u:g}": (float(v) if math.isfinite(v) else None)
                               for u, v in zip(c.level, c.tool / c.measured, strict=True)},
                    **factor_score((c.tool / c.measured).to_numpy(float))})
    by_level = [{"level": u, **factor_score((c.tool / c.measured).to_numpy(float))}
                for u, c in cells.groupby("level")]
    by_system = [{"hardware": h, **factor_score((c.tool / c.measured).to_numpy(float))}
                 for h, c in cells.groupby("hardware")]
    return {"system": {**factor_score(r), "levels": list(SYSTEM_LEVELS), "by_system": by_system,
                       "by_level": by_level, "groups": per},
            "own_point_envelope": factor_score(o)}


def layout_impossible(df: pd.DataFrame) -> np.ndarray:
    """Rows with a layout count that its serving mode reads (:data:`AGG_LAYOUT`,
    :data:`DISAGG_LAYOUT`) given but not a whole number from 1 to :data:`MAX_LAYOUT` (a blank
    one is ``layout_not_recorded``'s, or the default EP of 1)."""
    disagg = df.serving.astype(str).str.startswith("disagg").to_numpy()
    bad = np.zeros(len(df), bool)
    for cols, rows in ((AGG_LAYOUT, ~disagg), (DISAGG_LAYOUT, disagg)):
        for c in cols:
            if c not in df.columns:
                continue
            raw = df[c]
            given = (raw.notna() & (raw.astype(str).str.strip() != "")).to_numpy()
            v = pd.to_numeric(raw, errors="coerce").to_numpy(float)
            whole = np.isfinite(v) & (v >= 1) & (v <= MAX_LAYOUT) & (v == np.round(v))
            bad |= rows & given & ~whole
    return bad


def _rules(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["rule"] = ""
    df["status"] = ""
    df["flags"] = ""
    key = df[CONFIG].astype(str).apply(lambda r: "|".join(map(str, r)), axis=1)
    latest = df.groupby(key)["date"].transform("max")
    df["superseded"] = df.date.astype(str) < latest.astype(str)
    # a layout no deployment can have (an EP of 0, 0 GPUs): a defect of the row, not predicted
    df.loc[layout_impossible(df), "rule"] = "layout_impossible"
    ident = df.concurrency * LENGTH_MEAN * df.osl / (df.e2e_s * df.total_gpus)
    bad = np.isfinite(ident) & (_err(df.tps_per_gpu_output, ident) > IDENTITY_TOLERANCE)
    df.loc[bad & (df.rule == ""), "rule"] = "throughput_identity"
    gone = ~(
        np.isfinite(df[["tps_per_user", "tps_per_gpu_output", "tpot_s", "ttft_s"]]).all(axis=1)
        & (df[["tps_per_user", "tps_per_gpu_output", "tpot_s"]] > 0).all(axis=1)
    )
    df.loc[gone & (df.rule == ""), "rule"] = "measurement_missing"
    # a figure no benchmark run can give (a negative TTFT, 1e308 tokens/s) is a defect of the row
    odd = np.zeros(len(df), bool)
    for c, (lo, hi) in PLAUSIBLE_MEASUREMENTS.items():
        if c not in df.columns:  # (the p99 figures are optional)
            continue
        v = pd.to_numeric(df[c], errors="coerce").to_numpy(float)
        odd |= np.isfinite(v) & ((v <= lo) | (v > hi)) | np.isinf(v)
    df.loc[odd & (df.rule == ""), "rule"] = "measurement_implausible"
    raw = df.get("flags_source", pd.Series("", index=df.index)).astype(str)
    df.loc[raw.str.contains("app_num_gpu", regex=False), "flags"] = "gpu_count_inferred"
    df.loc[df.superseded, "flags"] = (df.loc[df.superseded, "flags"] + ";superseded").str.lstrip(";")
    df["model_spec"] = df.model.map(MODELS).fillna("")
    df["hardware_spec"] = df.hardware.map(lambda h: canonical_hardware_name(str(h)) or "")
    df.loc[df.model_spec == "", "status"] = "model_not_bundled"
    df.loc[(df.hardware_spec == "") & (df.status == ""), "status"] = "system_not_bundled"
    fw = df.framework.map(lambda f: FRAMEWORKS.get(FRAMEWORK_ALIASES.get(f, f), ("", False))[0])
    df["stack"] = fw
    df.loc[(fw == "") & (df.status == ""), "status"] = "framework_not_modelled"
    return df


def score_frontiers(path: str | Path, *, frontier: bool = True, bound: bool = True,
                    system: bool = True) -> FrontierScore:
    """Score the measured points of ``path`` (see the module docstring); ``system``: with the
    system score (:func:`system_cells`: each system's default frontier, best of disaggregated and
    aggregated serving, against everything measured on it)."""
    from planner.serving.frontiers import frontier as limit_frontier
    from planner.specs.registry import load_hardware, load_model, model_names
    from planner.specs.scenario import Scenario

    raw = load_frontiers(path)
    if "flags" in raw.columns:
        raw = raw.rename(columns={"flags": "flags_source"})
    df = _rules(raw)
    bundled = set(model_names())
    models = {m: load_model(m) for m in set(df.model_spec) if m and m in bundled}
    hws: dict[str, Any] = {}
    for h in set(df.hardware_spec):
        if not h:
            continue
        try:
            hws[h] = load_hardware(h)
        except SpecError:
            df.loc[(df.hardware_spec == h) & (df.status == ""), "status"] = "system_not_bundled"
    for c in (
        "pred_output_tps_per_gpu",
        "pred_tpot_s",
        "pred_ttft_s",
        "pred_ttft_p99_s",
        "pred_tpot_p99_s",
        "pred_tps_per_user",
        "bound_tps_per_gpu",
    ):
        df[c] = np.nan
    df["pred_bottleneck"] = ""
    ok = df.status == ""
    dep_all = deployments(df)
    stated = recipe_fields(df)
    dep_all["drafts"] = _drafts(df, dep_all, df["stack"], stated.mtp_drafts.to_numpy(float))
    dep_all["decode_max_batch"] = stated.decode_max_batch.to_numpy(float)
    lay = dep_all[["decode_workers", "decode_gpus", "prefill_workers", "prefill_gpus"]].to_numpy(float)
    unrec = ~(np.isfinite(lay) & (lay >= 1)).all(axis=1)
    df.loc[unrec & (df.status == ""), "status"] = "layout_not_recorded"
    ok = (df.status == "") & (df.rule != "layout_impossible")  # (no deployment to predict)
    for (h, m, stack, prec, fw), idx in (
        df[ok].groupby(["hardware_spec", "model_spec", "stack", "precision", "framework"]).groups.items()
    ):
        kv = BENCH_KV.get((fw, RUNNERS.get(h, "")))
        hw = hws[h]
        hw = hw.with_stack(stack) if stack in hw.stacks else hw
        # one prediction per sequence-length pair among these rows
        p = pd.concat([predict(models[m], hw, dep_all.loc[j], weights=WEIGHTS.get(prec, prec), kv=kv,
                               isl=float(df.isl[j[0]]), osl=float(df.osl[j[0]]))
                       for _, j in df.loc[idx].groupby(["isl", "osl"]).groups.items()])
        p = p.reindex(idx)
        df.loc[idx, "pred_output_tps_per_gpu"] = p.output_tps_per_gpu
        df.loc[idx, "pred_tpot_s"] = p.tpot_s
        df.loc[idx, "pred_ttft_s"] = p.ttft_s
        for c in ("ttft_p99_s", "tpot_p99_s"):  # (a stand-in predictor may not give them)
            df.loc[idx, f"pred_{c}"] = p[c] if c in p.columns else np.nan
        df.loc[idx, "pred_tps_per_user"] = p.tps_per_user
        df.loc[idx, "pred_bottleneck"] = p.bottleneck
        bad = p.reason.to_numpy() != 0
        df.loc[idx[bad], "status"] = "deployment_does_not_fit"
    df["tps_err"] = _err(df.pred_output_tps_per_gpu, df.tps_per_gpu_output)
    df["tpot_err"] = _err(df.pred_tpot_s, df.tpot_s)
    df["ttft_err"] = _err(df.pred_ttft_s, df.ttft_s)
    for c in ("p99_ttft_s", "p99_tpot_s"):
        if c not in df.columns:
            df[c] = np.nan
    df["ttft_p99_err"] = _err(df.pred_ttft_p99_s, pd.to_numeric(df.p99_ttft_s, errors="coerce"))
    df["tpot_p99_err"] = _err(df.pred_tpot_p99_s, pd.to_numeric(df.p99_tpot_s, errors="coerce"))
    df["scored"] = (df.status == "") & (df.rule == "")
    if not df.scored.any():
        why = df.rule.where(df.rule != "", df.status).value_counts()
        raise SpecError(str(path), "rows", "at least one row that can be scored (none could: "
                        + ", ".join(f"{k} {n}" for k, n in why.items()) + ")")
    # the bound: decode alone at datasheet peaks, the limit search, every draft accepted
    df["bound_violation"] = False
    if bound:
        for (h, m, prec, spec, isl, osl), idx in (
            df[df.scored]
            .groupby(["hardware_spec", "model_spec", "precision", "spec_decoding", "isl", "osl"])
            .groups.items()
        ):
            f = limit_frontier(
                Scenario(
                    models[m],
                    (hws[h],),
                    serving="decode",
                    isl=isl,
                    osl=osl,
                    mode="bound",
                    weights=WEIGHTS.get(prec, prec),
                    mtp="auto" if spec == "mtp" else 0,
                )
            )
            b = envelope_at(f, df.loc[idx, "tps_per_user"].to_numpy(float))
            df.loc[idx, "bound_tps_per_gpu"] = b
            over = ~(
                df.loc[idx, "tps_per_gpu_output"].to_numpy(float)
                <= np.nan_to_num(b, nan=0.0) * (1 + BOUND_SLACK)
            )
            df.loc[idx[over], "bound_violation"] = True
    groups, compared = [], []
    if frontier:
        for key, d in df[df.scored & ~df.superseded].groupby(GROUP):
            g = dict(zip(GROUP, key, strict=True))
            meas = pareto(d, "tps_per_user", "tps_per_gpu_output")
            r0 = d.iloc[0]
            hw = hws[r0.hardware_spec]
            hw = hw.with_stack(r0["stack"]) if r0["stack"] in hw.stacks else hw
            fw = FRAMEWORK_ALIASES.get(g["framework"], g["framework"])
            try:
                tool = deployed_frontier(
                    models[r0.model_spec],
                    hw,
                    serving="disaggregated" if str(g["serving"]).startswith("disagg") else "aggregated",
                    isl=float(g["isl"]),
                    osl=float(g["osl"]),
                    weights=WEIGHTS.get(g["precision"], g["precision"]),
                    mtp=3 if g["spec_decoding"] == "mtp" else 0,
                    frameworks=[fw],
                    per_octave=0,
                )
                pred = envelope_at(tool, meas.tps_per_user.to_numpy(float))
                note = tool.attrs.get("deployments", "")
            except SpecError as exc:
                pred, note = np.full(len(meas), np.nan), str(exc)
            ratio = pred / meas.tps_per_gpu_output.to_numpy(float)
            for x, y, p, q in zip(meas.tps_per_user, meas.tps_per_gpu_output, pred, ratio, strict=True):
                compared.append(
                    {
                        **g,
                        "tps_per_user": float(x),
                        "measured_tps_per_gpu": float(y),
                        "predicted_tps_per_gpu": float(p),
                        "ratio": float(q),
                    }
                )
            fin = ratio[np.isfinite(ratio)]
            groups.append(
                {
                    **{k: (v.item() if hasattr(v, "item") else v) for k, v in g.items()},
                    "envelope_points": int(len(meas)),
                    "compared": int(len(fin)),
                    "median_ratio": float(np.median(fin)) if len(fin) else math.nan,
                    "median_abs_err": float(np.median(np.abs(fin - 1))) if len(fin) else math.nan,
                    "worst_factor": float(np.max(np.maximum(fin, 1 / fin))) if len(fin) else math.nan,
                    "deployments": note,
                }
            )
    comp = pd.DataFrame(
        compared, columns=[*GROUP, "tps_per_user", "measured_tps_per_gpu", "predicted_tps_per_gpu", "ratio"]
    )
    flags = {"gpu_count_inferred": int(df["flags"].str.contains("gpu_count_inferred").sum()),
             "superseded": int(df.superseded.sum())}
    cells = None
    if system:
        def frontier_of(h: str, m: str, isl: float, osl: float) -> tuple[np.ndarray, np.ndarray] | None:
            if h not in hws or m not in models:
                return None
            xs, ys = [], []
            for serving in ("disaggregated", "aggregated"):
                try:
                    f = limit_frontier(Scenario(models[m], (hws[h],), serving=serving, isl=isl, osl=osl))
                except SpecError:
                    continue
                xs.append(f.tps_per_user.to_numpy(float))
                ys.append(f.tps_per_gpu.to_numpy(float))
            return (np.concatenate(xs), np.concatenate(ys)) if xs else None

        cells = system_cells(df, frontier_of)
    return FrontierScore(df, groups, comp, str(path), flags, cells)


def per_row(score: FrontierScore) -> pd.DataFrame:
    """One row per input row, for ``--out``."""
    cols = [
        "date",
        "hardware",
        "framework",
        "precision",
        "spec_decoding",
        "isl",
        "osl",
        "serving",
        "concurrency",
        "total_gpus",
        "tps_per_user",
        "pred_tps_per_user",
        "tps_per_gpu_output",
        "pred_output_tps_per_gpu",
        "tps_err",
        "tpot_s",
        "pred_tpot_s",
        "tpot_err",
        "ttft_s",
        "pred_ttft_s",
        "ttft_err",
        "pred_bottleneck",
        "bound_tps_per_gpu",
        "bound_violation",
        "scored",
        "rule",
        "status",
        "flags",
    ]
    return score.rows[[c for c in cols if c in score.rows.columns]]


#: the figures a recipe's sidecar predicts, and the measured-frontier column each is scored against
RECIPE_FIGURES = (("output_tps_per_gpu", "tps_per_gpu_output"), ("tps_per_user", "tps_per_user"),
                  ("ttft_median_s", "ttft_s"), ("tpot_median_s", "tpot_s"))


def load_sidecar(path: str | Path) -> dict[str, Any]:
    """A recipe's sidecar JSON (``moe-planner recipe``), checked for what scoring reads."""
    import json

    label = str(path)
    try:
        with open(path, encoding="utf-8") as fh:
            s = json.load(fh)
    except OSError as exc:
        raise SpecError(label, "--recipe", f"a readable sidecar JSON ({exc.strerror or exc})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SpecError(label, "--recipe", f"a sidecar JSON of moe-planner recipe ({exc})") from None
    need = ("hardware", "stack", "isl", "osl", "deployment", "predicted")
    if not isinstance(s, dict) or s.get("tool") != "moe-planner" or any(k not in s for k in need):
        raise SpecError(label, "--recipe", f"a sidecar JSON of moe-planner recipe (keys {', '.join(need)})")
    return s


def score_recipe(path: str | Path, sidecar: str | Path) -> pd.DataFrame:
    """The rows of the measured-frontier CSV at ``path`` that ran the recipe's deployment (system,
    stack, serving mode, ISL/OSL, workers, layouts and concurrency of the sidecar), each figure
    against the sidecar's prediction: ``<figure>_measured``, ``<figure>_predicted``, and the ratio
    measured / predicted."""
    from planner.serving.deployed import LAYOUT_COLUMNS

    s = load_sidecar(sidecar)
    df = load_frontiers(path)
    dep = deployments(df)
    d = s["deployment"]
    runner = RUNNERS.get(s["hardware"], s["hardware"])
    hw = df.hardware.astype(str).str.lower()
    stack = df.framework.map(lambda f: FRAMEWORKS.get(FRAMEWORK_ALIASES.get(f, f), ("", False))[0])
    ok = (hw.isin([runner, s["hardware"]]) & (stack == s["stack"]) & (dep.disagg == bool(d["disagg"]))
          & (df.isl == float(s["isl"])) & (df.osl == float(s["osl"]))
          & np.isclose(dep.concurrency, float(d["concurrency"])))
    for c in LAYOUT_COLUMNS:
        if c.startswith("prefill") and not d["disagg"]:
            continue
        ok &= np.isclose(dep[c].to_numpy(float), float(d[c]))
    if not ok.any():
        mode = "disaggregated" if d["disagg"] else "aggregated"
        raise SpecError(str(path), "rows", f"a result of the recipe's deployment ({s['hardware']}, "
                        f"{s['stack']}, {mode}, ISL/OSL {s['isl']:g}/{s['osl']:g}, "
                        f"{d['concurrency']:g} users and its layout): none of {len(df)} rows")
    rows = df[ok]
    out = pd.DataFrame({"date": rows.date.astype(str), "hardware": rows.hardware, "framework": rows.framework,
                        "concurrency": rows.concurrency})
    for pred, meas in RECIPE_FIGURES:
        out[f"{pred}_measured"] = rows[meas].to_numpy(float)
        out[f"{pred}_predicted"] = float(s["predicted"][pred])
        with np.errstate(divide="ignore", invalid="ignore"):
            out[f"{pred}_ratio"] = out[f"{pred}_measured"] / out[f"{pred}_predicted"]
    out.attrs["sidecar"] = s
    return out.reset_index(drop=True)
