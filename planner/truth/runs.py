"""Measured serving runs, scored at each run's exact layout: the model's measuring stick.

A run is one benchmark of a serving stack (TensorRT-LLM, SGLang, vLLM) on one system: a model,
precision, ISL/OSL, concurrency and layout, with the measured TTFT and TPOT.  The bundled file
(``planner/truth/data/measured_runs.csv``, see ``measured_runs.md`` beside it for source,
license and columns) holds 4,407 such runs; any CSV with the same columns can be scored.

For each run the decode step is evaluated at the run's own layout (worker GPUs = TP x attention
DP, attention TP x DP, MoE TP x EP, the batch per attention-DP rank, context ISL + OSL/2, the
precision of its quant-mode columns; the batch is the decoding share of the concurrency, Little's
law on the closed loop from the row's own TTFT and TPOT, ``f`` below: the rest are waiting or in
prefill) in ``bound`` mode (datasheet peaks, no overheads, the
faster of overlap on and off: no run without speculative decoding may beat it) and
``realistic`` mode; in realistic mode aggregated runs stretch each step by the chunked prefill
the same GPUs carry (:data:`planner.physics.serving_eq.t_step_aggregated`), while the bound is
the decode step alone (interleaved prefill can only add to a step).  Predicted TTFT is
``ttft_served`` (:mod:`planner.physics.serving_eq`): the stack's per-request latency, the host
time of the prefill pass, the pass of one request at the run's prefill layout (aggregated: its
only layout) and the queued share of the prompts that arrive with it.

Cleaning rules live here, each named and counted in the output, never a silent drop:

``duplicate``
    identical to an earlier row in every field but the id and the source text (the model labels
    DeepSeek-V3 and DeepSeek-R1 name one architecture, so a DeepSeek-V3-labelled copy of a
    DeepSeek-R1 row is a duplicate; measured times are compared at 12 significant digits, as the
    file holds copies of one run exported twice whose times differ in the last bit): dropped.
``label_contradicts_id``
    a DeepSeek-V3 label on a ``dsr1`` id that duplicates nothing: scored with the DeepSeek-R1
    spec (the id names the model that ran; the two specs are one architecture).  Not dropped.
``layout_contradicts_id``
    the id names ``tp{X}_ep{Y}`` (a worker of X GPUs) but the row records X x Y, as ``tp_size``
    or as the worker's GPUs ``tp_size x attention_dp_size`` (e.g. ``tp8_ep8`` recorded as TP 1 x
    DP 64): dropped (the true attention TP x DP split cannot be recovered).
``same_measurement``
    the same measured TTFT and TPOT (to 12 significant digits) on the same system, model, stack
    and ISL/OSL as another row recorded under another layout, build or source: one run recorded
    more than once (the file holds 388 rows in such groups, which mix the ``cfg``-numbered records
    with the dated ``2026_03_25`` / ``2026_04_06`` ones).  One copy is kept, by its record alone: the
    first whose decode-worker count is recorded, else the first in the file; the others are
    dropped.  (Kept as many rows, one run would weigh as several, each at its own batch.)
``queueing``
    the running decode batch was below half the concurrency, from the row's own numbers: in a
    closed loop each request spends TTFT waiting or in prefill and (OSL - 1) TPOT decoding, so
    the decoding share of the concurrency is ``f = (OSL-1) TPOT / (TTFT + (OSL-1) TPOT)``;
    ``f < 0.5`` is queueing.  Not scored (its TPOT was measured at a smaller batch).
``layout_from_benchmark_matrix`` (a flag)
    a run the InferenceX benchmark measured (its source names a container ``image=``) takes
    what that benchmark's launch matrix schedules for it (:mod:`planner.truth.matrix`) where
    the matrix is unanimous and the row records no decode batch of its own: a disaggregated
    run's prefill and decode workers, and each worker's attention TP x DP and EP (the file
    records neither the workers nor ``dp-attn``, and on GB300 it records the prefill's EP as the
    decode's).  Not dropped.
``speculation_published``
    the launch matrix schedules the run's point with speculative decoding (MTP drafts) only:
    not scored (the file holds no acceptance rate to model it with).
``speculation_unrecorded``
    the matrix schedules the point both with and without MTP, and no twin row (1.3x faster or
    slower, below) tells which this is: not scored.
``decode_workers_unknown``
    a disaggregated row without its decode-worker count is scored at the fewest workers that
    hold the KV cache of its concurrency (the batch per rank is concurrency / (workers x DP));
    measured faster than the bound at that count, it ran with more workers, at a batch the row
    does not record.  Not scored; listed.
``concurrency_unknown``
    a row without its concurrency is scored at its recorded batch size, which is then the
    stack's configured maximum (``max_num_seqs``), not necessarily the running batch; measured
    faster than the bound at that batch, it ran at a smaller one the row does not record.  Not
    scored; listed.
``speculation_suspected``
    measured faster than the no-speculation bound, or at least 1.3x faster in TPOT than a twin
    row (same system, model, stack, layout, precision, ISL/OSL, concurrency; another build or
    source), as when speculative decoding was on in one build.  Not scored; listed.

Rows the equations cannot express are counted by reason (model or system not bundled, a
backend other than the stacks modelled here or none, architecture not modelled, layout
inconsistent or rejected, memory).  So are rows whose layout no deployment can have
(``layout impossible``: a TP, attention DP, PP or worker count the row's mode reads given but not a
whole number from 1 to :data:`MAX_LAYOUT`, such as an attention DP of 0; an MoE TP or EP of 0 is
the file's "not recorded").  A file whose ISL, OSL, batch size or concurrency is not a whole
number in range, or whose measured times are out of :data:`RUN_RANGES`, is refused in one line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from planner.errors import SpecError, shown
from planner.physics import compiled
from planner.physics.step import (
    CATEGORIES,
    REASONS,
    default_slots,
    evaluate_configs,
    pass_kernels,
    resolve_precisions,
)
from planner.serving.deployed import FRAMEWORKS
from planner.serving.prefill import aggregated_prefill_terms, chunked_prefill_rate, served_ttft
from planner.specs.hardware import COMM_LAW_FIELDS
from planner.specs.reading import path_kind
from planner.truth.matrix import published

#: Columns a runs CSV must have (the bundled file's, see measured_runs.md).
REQUIRED = (
    "id",
    "backend",
    "model_path",
    "system",
    "mode",
    "isl",
    "osl",
    "gemm_quant_mode",
    "moe_quant_mode",
    "batch_size",
    "tp_size",
    "attention_dp_size",
    "moe_tp_size",
    "moe_ep_size",
    "prefill_tp_size",
    "prefill_attention_dp_size",
    "prefill_moe_tp_size",
    "prefill_moe_ep_size",
    "decode_batch_size",
    "decode_num_workers",
    "decode_tp_size",
    "decode_attention_dp_size",
    "decode_moe_tp_size",
    "decode_moe_ep_size",
    "silicon_ttft_ms",
    "silicon_tpot_ms",
    "concurrency",
)
#: the columns of text (names, modes and formats)
TEXT_COLUMNS = ("id", "backend", "model_path", "system", "mode", "gemm_quant_mode", "moe_quant_mode")
#: Hugging Face model id -> bundled model spec.
MODELS = {
    "deepseek-ai/DeepSeek-R1": "deepseek-r1",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "nvidia/DeepSeek-R1-NVFP4": "deepseek-r1",
    "nvidia/DeepSeek-V3.1-NVFP4": "deepseek-v3",
    "openai/gpt-oss-120b": "gpt-oss-120b",
    "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "MiniMaxAI/MiniMax-M2.5": "minimax-m2.5",
    "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "nvidia/Qwen3-32B-NVFP4": "qwen3-32b",
    "moonshotai/Kimi-K2-Instruct": "kimi-k2",
    "moonshotai/Kimi-K2-Thinking": "kimi-k2-thinking",
    "moonshotai/Kimi-K2.5": "kimi-k2.5",
    "nvidia/Kimi-K2.5-NVFP4": "kimi-k2.5",
    "Qwen/Qwen3.5-397B-A17B": "qwen3.5-397b-a17b",
    "zhipuai/GLM-5": "glm-5",
}
#: Run ``system`` -> bundled hardware spec.
SYSTEMS = {
    "h100_sxm": "hgx-h100",
    "h200_sxm": "hgx-h200",
    "b200_sxm": "hgx-b200",
    "b300_sxm": "hgx-b300",
    "gb200": "gb200-nvl72",
    "gb300": "gb300-nvl72",
}
#: Quant-mode column value -> weight format.
#: (the source's names: aiconfigurator's GEMM and MoE quant modes; ``int4_wo`` is W4A16, ``w4afp8``
#: TensorRT-LLM's INT4-weight FP8-activation MoE)
QUANT = {"fp8": "fp8", "fp8_block": "fp8", "nvfp4": "nvfp4", "bf16": "bf16", "bfloat16": "bf16",
         "fp16": "bf16", "float16": "bf16", "int4_wo": "int4_g32", "w4afp8": "int4_a8"}
#: the serving stacks modelled (a run's ``backend``): the stacks of the benchmark frameworks
BACKENDS = tuple(sorted({stack for stack, _ in FRAMEWORKS.values()}))
#: the largest parallel size or worker count a run may record: the most GPUs a system spec may have
#: (``gpus_per_system`` in :data:`planner.specs.hardware.PLAUSIBLE`; the bundled runs: up to 64)
MAX_LAYOUT = 100_000
#: the layout columns each mode reads (an MoE TP or EP of 0 is the file's "not recorded")
AGG_LAYOUT = ("tp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size", "pp_size")
DISAGG_LAYOUT = (*(f"{r}_{c}" for r in ("prefill", "decode")
                   for c in ("tp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size", "num_workers")),
                 "decode_pp_size")
QUEUEING_FRACTION = 0.5
LAYOUT_INCONSISTENT = "layout inconsistent: MoE TP x EP differs from the worker's GPUs"
TWIN_SPEEDUP = 1.3
BOUND_SLACK = 0.01
#: The rules that remove a row from the TPOT statistics (in the order they are applied).
DROP_RULES = (
    "duplicate",
    "layout_contradicts_id",
    "same_measurement",
    "queueing",
    "speculation_published",
    "speculation_unrecorded",
    "decode_workers_unknown",
    "concurrency_unknown",
    "speculation_suspected",
)
#: Rules that explain a run faster than the no-speculation bound by what the row leaves out.
UNRECORDED_RULES = ("queueing", "decode_workers_unknown", "concurrency_unknown")
_ARCH_TWINS = {"deepseek-ai/DeepSeek-V3": "deepseek-ai/DeepSeek-R1"}
_ID_LAYOUT = re.compile(r"_tp(\d+)(?:_0)?_ep(\d+)")


def _label(path: str | Path | None) -> str:
    return str(path) if path is not None else "planner/truth/data/measured_runs.csv"


def read_csv(path: Any, label: str, required: tuple[str, ...] = (), kind: str = "",
             rows: str = "at least one row") -> pd.DataFrame:
    """A CSV file of measurements with the ``required`` columns (``kind``: what the file is, for
    the message) and at least one row; a missing, unreadable or short one is a SpecError naming it."""
    on_disk = path_kind(path) if isinstance(path, str | Path) else "file"
    if on_disk in ("dir", "other"):
        # a FIFO or a device: reading would block until a writer comes, or never end
        raise SpecError(label, "file", "a regular file (this is a " + ("directory)" if on_disk == "dir"
                                                                      else "pipe, socket or device)"))
    try:
        if hasattr(path, "open") and not isinstance(path, str | Path):  # a package resource
            with path.open("rb") as fh:
                df = pd.read_csv(fh)
        else:
            df = pd.read_csv(path)
    except FileNotFoundError:
        raise SpecError(label, "file", "an existing CSV file") from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise SpecError(label, "file", f"a readable CSV file ({type(exc).__name__})") from None
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise SpecError(label, "columns", f"the columns of {kind}; missing {', '.join(missing)}")
    if df.empty:
        raise SpecError(label, "rows", rows)
    return df


def load_runs(path: str | Path | None = None) -> pd.DataFrame:
    """The runs CSV (the bundled file unless ``path``), checked for the required columns."""
    label = _label(path)
    bundled = resources.files("planner.truth.data").joinpath("measured_runs.csv")
    df = read_csv(bundled if path is None else path, label, REQUIRED, "the measured-runs file",
                  "at least one run")
    for c in TEXT_COLUMNS:  # text even where every cell is blank (a column of NaN reads as numbers)
        df[c] = df[c].astype(object)
    for c, top in RUN_RANGES.items():
        v = pd.to_numeric(df[c], errors="coerce")
        bad = ~(np.isfinite(v) & (v > 0) & (v <= top))
        tokens = c in ("isl", "osl")  # a count: a whole number of tokens
        if tokens:
            bad |= ~(v >= 1) | (v != np.round(v))
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            what = (f"a whole number of tokens from 1 to {top:,.0f}" if tokens
                    else f"a positive number up to {top:g}")
            raise SpecError(label, f"row {i + 2}: {c}", f"{what}, got {shown(df[c].iloc[i])}")
        df[c] = v.astype(float)
    for c in ("batch_size", "decode_batch_size", "concurrency"):
        if c not in df.columns:
            continue
        v = pd.to_numeric(df[c], errors="coerce")
        given = df[c].notna() & (df[c].astype(str).str.strip() != "")
        bad = given & ~(np.isfinite(v) & (v >= 1) & (v <= 1e6) & (v == np.round(v)))
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise SpecError(label, f"row {i + 2}: {c}",
                            f"a whole number of sequences from 1 to 1,000,000, got {shown(df[c].iloc[i])}")
    return df


def _impossible_layout(row: pd.Series) -> str:
    """Why the layout ``row``'s mode reads cannot be (a column given but not a whole number from 1,
    or 0 for an MoE size, to :data:`MAX_LAYOUT`), or ``""``."""
    for c in AGG_LAYOUT if row["mode"] == "agg" else DISAGG_LAYOUT:
        v = row.get(c)
        if v is None or (isinstance(v, str) and not v.strip()) or (not isinstance(v, str) and pd.isna(v)):
            continue  # not recorded
        lo = 0.0 if "moe_" in c else 1.0
        f = _num(v)
        if f is None or not lo <= f <= MAX_LAYOUT or f != round(f):
            return f"layout impossible: {c} not a whole number from {lo:g} to {MAX_LAYOUT:,}"
    return ""


#: the largest value a measured run's figure may take (ISL/OSL in tokens, TTFT and TPOT in ms):
#: 10 M tokens, an hour to the first token, a minute per output token (the bundled runs: ISL up to
#: 15,000, TTFT up to 462 s, TPOT up to 0.56 s)
RUN_RANGES = {"isl": 1e7, "osl": 1e7, "silicon_ttft_ms": 3.6e6, "silicon_tpot_ms": 6e4}


# ---- cleaning rules --------------------------------------------------------------------------------
#: Significant digits at which two measured times are one number: the file holds copies of a run
#: exported twice whose times differ in the last bit (12.277643327434149 and ...147 ms).
MEASURED_DIGITS = 12


def _measured(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the measured TTFT and TPOT rounded to :data:`MEASURED_DIGITS` significant digits."""
    out = df.copy()
    for c in ("silicon_ttft_ms", "silicon_tpot_ms"):
        v = pd.to_numeric(out[c], errors="coerce").to_numpy(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            mag = np.where(np.isfinite(v) & (v != 0), np.floor(np.log10(np.abs(v))), 0.0)
        scale = 10.0 ** (MEASURED_DIGITS - 1 - mag)
        out[c] = np.round(v * scale) / scale
    return out


def _duplicates(df: pd.DataFrame) -> pd.Series:
    key = _measured(df.drop(columns=[c for c in ("id", "silicon_data_source") if c in df.columns]))
    key["model_path"] = key["model_path"].replace(_ARCH_TWINS)
    return key.duplicated(keep="first")


def _label_contradicts_id(df: pd.DataFrame) -> pd.Series:
    return (df.model_path == "deepseek-ai/DeepSeek-V3") & df.id.str.contains(
        r"(?:^|_)dsr1_|deepseek_r1", regex=True
    )


def _layout_contradicts_id(df: pd.DataFrame) -> pd.Series:
    """Aggregated rows whose id names ``tp{X}_ep{Y}`` (X GPUs) while the row records X x Y: as
    ``tp_size``, or as the worker's GPUs ``tp_size x attention_dp_size``."""
    m = df.id.str.extract(_ID_LAYOUT).astype(float)
    tp, ep = m[0], m[1]
    agg = df["mode"] == "agg"
    gpus = df.tp_size * pd.to_numeric(df.attention_dp_size, errors="coerce").fillna(1.0)
    as_tp = df.tp_size == tp * ep
    as_gpus = gpus == tp * ep
    return agg & tp.notna() & (ep > 1) & (as_tp | as_gpus)


#: What identifies one measurement: the configuration it was taken on, as far as the layout columns
#: do not enter, and the measured numbers themselves.
_MEASUREMENT = ("system", "model_path", "backend", "isl", "osl", "silicon_ttft_ms", "silicon_tpot_ms")


def _same_measurement(df: pd.DataFrame, candidates: pd.Series) -> pd.Series:
    """Rows among ``candidates`` whose measurement another candidate row records as well, all but
    the one kept: the first with the decode-worker count recorded, else the first in the file."""
    sub = df[candidates]
    key = _measured(sub[list(_MEASUREMENT)])
    key["model_path"] = key["model_path"].replace(_ARCH_TWINS)
    workers = pd.to_numeric(sub["decode_num_workers"], errors="coerce").notna()
    order = pd.DataFrame({"w": ~workers, "pos": np.arange(len(sub))}, index=sub.index)
    ranked = key.assign(_w=order.w, _pos=order.pos).sort_values(["_w", "_pos"])
    drop = ranked.duplicated(subset=list(_MEASUREMENT), keep="first")
    return drop.reindex(df.index, fill_value=False)


def running_fraction(df: pd.DataFrame) -> pd.Series:
    """Share of the concurrency decoding at any time: (OSL-1) TPOT / (TTFT + (OSL-1) TPOT)."""
    dec = (df.osl - 1.0) * df.silicon_tpot_ms
    return dec / (df.silicon_ttft_ms + dec)


_TWIN_CONFIG = [c for c in REQUIRED if c not in ("id", "silicon_ttft_ms", "silicon_tpot_ms")]


def _twin_speedup(df: pd.DataFrame) -> pd.Series:
    """Rows at least TWIN_SPEEDUP x faster in TPOT than another row of the same configuration."""
    slowest = df.groupby(_TWIN_CONFIG, dropna=False)["silicon_tpot_ms"].transform("max")
    return slowest >= TWIN_SPEEDUP * df.silicon_tpot_ms


def _twin_slower(df: pd.DataFrame) -> pd.Series:
    """Rows at least TWIN_SPEEDUP x slower in TPOT than another row of the same configuration."""
    fastest = df.groupby(_TWIN_CONFIG, dropna=False)["silicon_tpot_ms"].transform("min")
    return df.silicon_tpot_ms >= TWIN_SPEEDUP * fastest


#: The runs columns of a disaggregated worker's layout, set from the launch matrix.
_ROLE_COLUMNS = ("tp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size", "num_workers")


def _apply_matrix(df: pd.DataFrame, pub: pd.DataFrame) -> pd.Series:
    """Set each disaggregated run's worker layouts and worker counts from the benchmark's launch
    matrix where it is unanimous (:func:`planner.truth.matrix.published`) and the row records no
    batch size of its own (the layout columns read as numbers, added where missing); return the
    rows changed."""
    changed = pd.Series(False, index=df.index)
    for role in ("prefill", "decode"):
        for c in _ROLE_COLUMNS:
            col = f"{role}_{c}"
            df[col] = pd.to_numeric(df[col], errors="coerce") if col in df.columns else np.nan
    dis = (df["mode"] == "disagg") & pd.to_numeric(df.decode_batch_size, errors="coerce").isna()
    for role in ("prefill", "decode"):
        for i in df.index[dis & pub[role].notna()]:
            g, tpa, dp, ep = pub.at[i, role]
            new = {"tp_size": tpa, "attention_dp_size": dp, "moe_tp_size": g / ep, "moe_ep_size": ep}
            w = pub.at[i, f"{role}_workers"]
            if w == w:
                new["num_workers"] = w
            for c, v in new.items():
                col = f"{role}_{c}"
                if _num(df.at[i, col]) != v:
                    df.at[i, col] = v
                    changed[i] = True
    return changed


# ---- mapping a row to a configuration ----------------------------------------------------------
@dataclass
class _Mapped:
    ok: bool
    reason: str = ""
    model: str = ""
    hardware: str = ""
    weights: dict[str, str] = field(default_factory=dict)
    kv: str = ""
    decode: tuple[float, float, float, float] = (0, 0, 0, 0)  #: G, TP_a, EP, TP_e
    prefill: tuple[float, float, float, float] = (0, 0, 0, 0)
    batch: float = 0.0  #: per attention-DP rank (per worker = concurrency / DP if unknown)
    batch_basis: str = ""
    workers_unknown: bool = False  #: disaggregated, decode workers not recorded


def _num(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _layout(
    model: Any, tp: Any, dp: Any, mtp: Any, mep: Any
) -> tuple[tuple[float, ...] | None, str, float | None]:
    """(G, TP_a, EP, TP_e) of a worker, why not, and the attention DP where it was inferred."""
    tp, dp_rec, mtp, mep = _num(tp), _num(dp), _num(mtp), _num(mep)
    dp = dp_rec or 1.0
    if tp is None or tp < 1:
        return None, "layout not recorded", None
    if model.is_dense:  # no expert parallelism; the FFN sharded like attention
        return (tp * dp, tp, 1.0, tp), "", None
    if not mtp or not mep:
        return None, "MoE layout not recorded (moe_tp_size or moe_ep_size missing or 0)", None
    inferred = None
    if dp_rec is None and mtp * mep != tp and (mtp * mep) % tp == 0:
        # attention DP left blank while the MoE spans more GPUs than the TP: the worker has
        # MoE TP x EP GPUs (the file's convention), so attention DP is their share per TP group
        dp = inferred = mtp * mep / tp
    G = tp * dp
    if mtp * mep != G:
        return None, LAYOUT_INCONSISTENT, None
    return (G, tp, mep, mtp), "", inferred


def _map(row: pd.Series, models: dict[str, Any]) -> _Mapped:
    mp = row.model_path
    name = MODELS.get(mp)
    hw = SYSTEMS.get(str(row.system))
    if name is None:
        return _Mapped(False, "model not bundled")
    if hw is None:
        return _Mapped(False, "system not bundled")
    if row.get("backend") not in BACKENDS:  # (blank: NaN)
        return _Mapped(False, "backend not modelled")
    impossible = _impossible_layout(row)
    if impossible:
        return _Mapped(False, impossible)
    model = models.get(name)
    if model is None:
        return _Mapped(False, f"model spec {name} not bundled")
    if _num(row.get("pp_size")) not in (None, 1.0) or _num(row.get("decode_pp_size")) not in (None, 1.0):
        return _Mapped(False, "pipeline parallelism not modelled")
    gemm, moe = row.gemm_quant_mode, row.moe_quant_mode
    weights = {}
    if isinstance(moe, str):
        if moe not in QUANT:
            return _Mapped(False, f"quant mode {moe} not modelled")
        weights["routed_experts"] = QUANT[moe]
    if isinstance(gemm, str):
        if gemm not in QUANT:
            return _Mapped(False, f"quant mode {gemm} not modelled")
        weights["attention"] = weights["dense_ffn"] = QUANT[gemm]
    kv = "fp8" if weights.get("attention") in ("fp8", "nvfp4") else ""
    workers_unknown = False
    if row["mode"] == "agg":
        dec, why, dp_inf = _layout(
            model, row.tp_size, row.attention_dp_size, row.moe_tp_size, row.moe_ep_size
        )
        pre = dec
        b = _num(row.batch_size)
        basis = "batch_size"
        c = _num(row.concurrency)
        if dp_inf and b is not None and c is not None and not math.isclose(c, b * dp_inf):
            # the worker's concurrency is batch_size x attention DP (the file's convention): a
            # concurrency of batch_size x DP' records DP', and the MoE's GPUs do not match it
            return _Mapped(False, LAYOUT_INCONSISTENT + " (attention DP from concurrency / batch_size)")
        if dp_inf and b is None and c is not None:
            b = c / dp_inf
            basis = f"concurrency / attention DP (DP not recorded: MoE TP x EP / TP = {dp_inf:g})"
        elif b is None:
            if c is None:
                return _Mapped(False, "batch not recorded")
            b, basis = c / (_num(row.attention_dp_size) or 1.0), "concurrency / attention DP"
    else:
        dec, why, dp_inf = _layout(
            model,
            row.decode_tp_size,
            row.decode_attention_dp_size,
            row.decode_moe_tp_size,
            row.decode_moe_ep_size,
        )
        pre, why_p, _ = _layout(
            model,
            row.prefill_tp_size,
            row.prefill_attention_dp_size,
            row.prefill_moe_tp_size,
            row.prefill_moe_ep_size,
        )
        why = why or why_p
        b = _num(row.decode_batch_size)
        basis = "decode_batch_size"
        if b is None:
            c = _num(row.concurrency)
            if c is None:
                return _Mapped(False, "batch not recorded")
            workers = _num(row.decode_num_workers)
            dp = dp_inf or _num(row.decode_attention_dp_size) or 1.0
            b = c / ((workers or 1.0) * dp)
            basis = "concurrency / (workers x attention DP)"
            if not workers:  # settled in _evaluate_group: the fewest workers that hold the KV
                workers_unknown = True
                basis = "concurrency / (workers x attention DP)"
    if why:
        return _Mapped(False, why)
    if b <= 0:
        return _Mapped(False, "batch not recorded")
    return _Mapped(True, "", name, hw, weights, kv, dec, pre, b, basis, workers_unknown)


# ---- evaluation ----------------------------------------------------------------------------------
@dataclass
class GroupInputs:
    """What :func:`decode_tpot` needs for the rows of one (model, system, precision) group, at
    the batch the stack ran (kept by :func:`score_runs` so a fit can re-evaluate them)."""

    model: Any
    hw: Any
    prec: Any
    index: pd.Index
    dec: np.ndarray
    b: np.ndarray
    isl: np.ndarray
    osl: np.ndarray
    agg: np.ndarray
    pre: np.ndarray | None = None       #: prefill layouts (rows of G, TP_a, EP, TP_e)
    prompts: np.ndarray | None = None   #: prompts arriving together at one prefill instance

    def prefill_pass(self, hw: Any = None, mode: str = "realistic") -> np.ndarray:
        """One prompt's prefill pass in s on ``hw`` (NaN where it does not fit)."""
        p = evaluate_configs(self.model, hw or self.hw, self.prec, mode, **_layout_kw(self.model, self.pre),
                             b=np.ones(len(self.b)), S=self.isl, phase="prefill", categories=False)
        return np.where(np.asarray(p["feasible"], bool), np.asarray(p["step"], float), np.nan)

    def ttft_parts(self, hw: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """(one prompt's prefill pass, the wave's prefill) in s on ``hw``, realistic mode."""
        hw = hw or self.hw
        return self.prefill_pass(hw), ttft_wave(self.model, hw, self.prec, self.pre, self.isl, self.prompts)

    def tpot(self, hw: Any = None, mode: str = "realistic") -> np.ndarray:
        """TPOT in s on ``hw`` (default: the group's own system)."""
        return decode_tpot(
            self.model, hw or self.hw, self.prec, mode, self.dec, self.b, self.isl, self.osl, self.agg,
            categories=False,
        )[0]


def ttft_wave(model: Any, hw: Any, prec: Any, pre: np.ndarray, isl: np.ndarray, prompts: np.ndarray
              ) -> np.ndarray:
    """Seconds to prefill the ``prompts`` that arrive together at one prefill instance (layout
    ``pre``), at the chunked prefill rate of that layout (:func:`chunked_prefill_rate`)."""
    x = chunked_prefill_rate(model, hw, prec, "realistic", **_layout_kw(model, pre), isl=isl)
    return prompts * isl / (x * pre[:, 0])


def _layout_kw(model: Any, a: np.ndarray) -> dict[str, np.ndarray]:
    G, TPa, EP, TPe = a.T
    return dict(G=G, TP_a=TPa, EP=EP, TP_e=TPe, E_slots=np.asarray(default_slots(model, EP), float))


def decode_tpot(
    model: Any,
    hw: Any,
    prec: Any,
    mode: str,
    dec: np.ndarray,
    b: np.ndarray,
    isl: np.ndarray,
    osl: np.ndarray,
    agg: np.ndarray,
    categories: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(TPOT in s, reason code, bottleneck) of runs at decode layouts ``dec`` (rows of G, TP_a,
    EP, TP_e) with ``b`` sequences per attention-DP rank at context ISL + OSL/2.  ``bound``: the
    faster of overlap off and on, the decode step alone; ``realistic``: overlap off, and
    aggregated runs (``agg``) stretched by the chunked prefill the same GPUs carry."""
    ctx = isl + osl / 2.0
    lay = _layout_kw(model, dec)
    overlaps = (0, 1) if mode == "bound" else (0,)
    best_t = np.full(len(b), np.inf)
    reason = np.zeros(len(b), dtype=int)
    bottleneck = np.full(len(b), "", dtype=object)
    for o in overlaps:
        r = evaluate_configs(model, hw, prec, mode, **lay, b=b, S=ctx, overlap=o, categories=categories)
        t = np.asarray(r["step"], float)
        better = t < best_t
        best_t = np.where(better, t, best_t)
        reason = np.where(better | (o == 0), np.asarray(r["reason"], int), reason)
        if categories:
            names = np.array(CATEGORIES, dtype=object)[np.asarray(r["bottleneck"], int)]
            bottleneck = np.where(better, names, bottleneck)
    if mode == "realistic" and agg.any():
        # aggregated steps carry the chunked prefill of the same GPUs; the bound is the decode
        # step alone (interleaved prefill can only add to a step)
        x_p, phi = chunked_prefill_rate(model, hw, prec, mode, **lay, isl=isl, local_share=True)
        t_agg = compiled.evaluate_named(
            "t_step_aggregated", t_step=best_t, I=isl, O=osl, b=b, A=1.0, TP_a=dec[:, 1], X_p=x_p,
            **aggregated_prefill_terms(model, mode, dec[:, 0], dec[:, 1], isl, phi, stack=hw.stack),
        )
        best_t = np.where(agg, t_agg, best_t)
    return best_t, reason, bottleneck


def _evaluate_group(
    model: Any, hw: Any, weights: dict[str, str], kv: str, rows: pd.DataFrame
) -> tuple[pd.DataFrame, GroupInputs]:
    """Bound and realistic TPOT and TTFT for rows sharing model, system and precision."""
    prec = resolve_precisions(
        model,
        hw,
        weights.get("routed_experts"),
        kv or None,
        {k: v for k, v in weights.items() if k != "routed_experts"},
    )
    dec = np.array(rows["_decode"].tolist(), dtype=float)
    pre = np.array(rows["_prefill"].tolist(), dtype=float)
    b_conc = rows["batch_per_rank"].to_numpy(dtype=float)
    isl, osl = rows.isl.to_numpy(float), rows.osl.to_numpy(float)
    ctx = isl + osl / 2.0
    agg = (rows["mode"] == "agg").to_numpy()
    # The sequences decoding at a time are the decoding share of the concurrency (Little's law on
    # the closed loop, from the row's own TTFT and TPOT: f = (OSL-1) TPOT / (TTFT + (OSL-1) TPOT));
    # the others are waiting or in prefill and neither read their KV cache in a decode step nor
    # bring prompts into it.
    f = rows["running_fraction"].to_numpy(dtype=float)
    f = np.where(np.isfinite(f) & (f > 0), np.minimum(f, 1.0), 1.0)
    b = b_conc * f

    # The batch the stack ran.  Where the decode workers were not recorded: the fewest that hold
    # the KV cache of the concurrency.  And never more sequences per rank than the KV cache
    # holds: a continuous-batching scheduler admits no more, the rest wait (their wait shows in
    # TTFT, not TPOT).
    probe = evaluate_configs(
        model, hw, prec, "realistic", **_layout_kw(model, dec), b=np.ones(len(rows)), S=ctx, categories=False
    )
    cap = np.broadcast_to(np.asarray(probe["memory.b_max"], float), b.shape)
    unknown = rows["_workers_unknown"].to_numpy(bool)
    workers = np.where(unknown & (cap >= 1), np.maximum(1.0, np.ceil(b / np.maximum(cap, 1) - 1e-9)), 1.0)
    b = b / workers
    limited = (b > cap) & (cap >= 1)
    b = np.where(limited, np.floor(cap), b)
    basis = rows["batch_basis"].to_numpy(object).copy()
    for i in np.flatnonzero(f < 1.0):
        basis[i] += f"; running batch {b_conc[i]:g} x {f[i]:.3g} (the decoding share: Little's law)"
    for i in np.flatnonzero(unknown):
        basis[i] += f"; decode workers not recorded: {workers[i]:g}, the fewest that hold the KV cache"
    for i in np.flatnonzero(limited):
        basis[i] += f"; running batch {b[i]:g}, all the KV cache holds (the rest wait)"
    out: dict[str, Any] = {
        "batch_per_rank": b,
        "batch_basis": basis,
        "decode_workers": np.where(unknown, workers, np.nan),
    }
    def col(name: str) -> np.ndarray:
        raw = rows.get(name, pd.Series(np.nan, index=rows.index))
        return pd.to_numeric(raw, errors="coerce").to_numpy(float)

    conc, pw = col("concurrency"), col("prefill_num_workers")
    # prompts that arrive together at one prefill instance: aggregated, the sequences one instance
    # runs (its DP ranks' batches); disaggregated, the concurrency over the prefill workers
    prompts = np.where(agg, b_conc * dec[:, 0] / dec[:, 1], conc / np.where(pw > 0, pw, 1.0))
    inputs = GroupInputs(model, hw, prec, rows.index, dec, b, isl, osl, agg, pre, prompts)
    for mode in ("bound", "realistic"):
        best_t, reason, bottleneck = decode_tpot(model, hw, prec, mode, dec, b, isl, osl, agg)
        out[f"tpot_{mode}_ms"] = best_t * 1e3
        out[f"reason_{mode}"] = reason
        out[f"bottleneck_{mode}"] = bottleneck
    out["ttft_bound_ms"] = inputs.prefill_pass(mode="bound") * 1e3  # the pass alone: no run may beat it
    ttft, wave = inputs.ttft_parts()
    out["ttft_pass_ms"], out["ttft_wave_ms"] = ttft * 1e3, wave * 1e3
    e = hw.efficiency
    out["ttft_realistic_ms"] = served_ttft(e.ttft_request, e.ttft_wave, ttft, wave, e.ttft_host,
                                           pass_kernels(model)) * 1e3
    return pd.DataFrame(out, index=rows.index), inputs


def score_runs(path: str | Path | None = None, stacks: bool = True) -> RunsScore:
    """Score every run of the file (the bundled one unless ``path``); see the module docstring.

    Realistic mode uses, for each run, its system's efficiencies fitted for the run's serving
    stack where the spec has them (``stacks:`` block), unless ``stacks=False`` (the
    ``efficiency:`` block as written, with only the stack's kernel laws the step model takes
    (communication, GEMM, grouped MoE, prefill attention): what a fit to the runs starts from)."""
    from planner.specs.registry import load_hardware, load_model, model_names

    df = load_runs(path).copy()
    n = len(df)
    df["rule"] = ""
    df["flags"] = ""
    pub = published(df)
    from_matrix = _apply_matrix(df, pub)
    df.loc[from_matrix, "flags"] = "layout_from_benchmark_matrix"
    dup = _duplicates(df)
    df.loc[dup, "rule"] = "duplicate"
    relabel = _label_contradicts_id(df) & ~dup
    df.loc[relabel, "flags"] = (df.loc[relabel, "flags"] + ";label_contradicts_id").str.lstrip(";")
    df.loc[relabel, "model_path"] = "deepseek-ai/DeepSeek-R1"
    lay = _layout_contradicts_id(df) & (df.rule == "")
    df.loc[lay, "rule"] = "layout_contradicts_id"
    same = _same_measurement(df, df.rule == "")
    df.loc[same, "rule"] = "same_measurement"
    frac = running_fraction(df)
    df["running_fraction"] = frac
    q = (frac < QUEUEING_FRACTION) & (df.rule == "")
    df.loc[q, "rule"] = "queueing"
    twin = _twin_speedup(df) & (df.rule == "")
    df["twin_faster"] = twin
    spec = pub.spec.reindex(df.index).fillna("")
    df["matrix_speculation"] = spec
    sp = (spec == "mtp") & (df.rule == "")
    df.loc[sp, "rule"] = "speculation_published"
    unrec = (spec == "mtp/none") & ~twin & ~_twin_slower(df) & (df.rule == "")
    df.loc[unrec, "rule"] = "speculation_unrecorded"

    bundled = set(model_names())
    models = {}
    for name in sorted(set(MODELS.values()) & bundled):
        models[name] = load_model(name)
    maps = [_map(r, models) for _, r in df.iterrows()]
    df["status"] = ["" if m.ok else m.reason for m in maps]
    df["model"] = [m.model for m in maps]
    df["hardware"] = [m.hardware for m in maps]
    df["batch_per_rank"] = [m.batch if m.ok else np.nan for m in maps]
    df["batch_basis"] = [m.batch_basis for m in maps]
    df["_workers_unknown"] = [m.workers_unknown for m in maps]
    df["decode_workers"] = np.nan
    df["_decode"] = [m.decode for m in maps]
    df["_prefill"] = [m.prefill for m in maps]
    df["_prec"] = [repr(sorted(m.weights.items())) + m.kv for m in maps]
    cols = [
        "tpot_bound_ms",
        "tpot_realistic_ms",
        "ttft_bound_ms",
        "ttft_realistic_ms",
        "reason_bound",
        "reason_realistic",
        "bottleneck_bound",
        "bottleneck_realistic",
    ]
    for c in cols:
        df[c] = (
            np.nan if not c.startswith(("reason", "bottleneck")) else (0 if c.startswith("reason") else "")
        )
    ok = (df.status == "") & (df.rule.isin(["", "queueing"]))
    hw_cache: dict[str, Any] = {}
    inputs: list[GroupInputs] = []
    by_map = {i: m for i, m in zip(df.index, maps, strict=True)}
    keys = ["model", "hardware", "_prec", "backend"]
    for (model, hw, _, stack), idx in df[ok].groupby(keys).groups.items():
        if hw not in hw_cache:
            try:
                hw_cache[hw] = load_hardware(hw)
            except SpecError:
                hw_cache[hw] = None
        if hw_cache[hw] is None:
            df.loc[idx, "status"] = f"hardware spec {hw} not bundled"
            continue
        m0 = by_map[idx[0]]
        system = hw_cache[hw]
        if stacks and stack in system.stacks:
            system = system.with_stack(stack)
        elif not stacks:
            # the efficiency: block as written, with the stack's laws fitted to kernels that the step
            # model takes (all-reduce, all-to-all with its floors, GEMM, grouped MoE, prefill attention)
            kernel = system.stacks.get(stack)
            system = system.without_stack()
            if kernel is not None:
                system = system.replace(efficiency={
                    f: getattr(kernel, f) for f in (*COMM_LAW_FIELDS, "a2a_floors", "gemm", "attn", "moe")})
            # the stack's name stays, so that its kernels run as that stack dispatches them (the
            # all-reduce's reach and one-shot limits) while the efficiency: block is fitted
            system = system.replace(stack=str(stack))
        res, inp = _evaluate_group(models[model], system, m0.weights, m0.kv, df.loc[idx])
        inputs.append(inp)
        for c in [*cols, "batch_per_rank", "batch_basis", "decode_workers", "ttft_pass_ms", "ttft_wave_ms"]:
            df.loc[idx, c] = res[c]
    df["batch_per_rank"] = df["batch_per_rank"].astype(float)
    # layouts the equations reject
    bad = ok & (df.status == "") & (df.reason_realistic.astype(int) != 0)
    # an attention TP that does not divide the heads cannot have run: a defect of the row
    df.loc[bad, "status"] = [
        "data defect: attention TP does not divide the attention heads"
        if int(c) == 2
        else f"layout rejected: {REASONS[int(c)]}"
        for c in df.loc[bad, "reason_realistic"]
    ]
    # bound violations and speculation
    scoredable = (df.status == "") & (df.rule == "")
    viol = scoredable & (df.silicon_tpot_ms < df.tpot_bound_ms * (1 - BOUND_SLACK))
    df["bound_violation"] = viol | (
        (df.status == "")
        & (df.rule == "queueing")
        & (df.silicon_tpot_ms < df.tpot_bound_ms * (1 - BOUND_SLACK))
    )
    # faster than the bound at the fewest decode workers that hold the KV: more workers ran it, at
    # a batch the row does not record
    more = viol & df._workers_unknown & ~df.twin_faster
    df.loc[more, "rule"] = "decode_workers_unknown"
    # faster than the bound at a recorded batch size without the concurrency: a smaller batch ran
    no_conc = viol & pd.to_numeric(df.concurrency, errors="coerce").isna() & ~df.twin_faster & ~more
    df.loc[no_conc, "rule"] = "concurrency_unknown"
    spec = scoredable & (viol | df.twin_faster) & ~more & ~no_conc
    df.loc[spec, "rule"] = "speculation_suspected"
    df["tpot_ratio"] = df.tpot_realistic_ms / df.silicon_tpot_ms
    df["ttft_ratio"] = df.ttft_realistic_ms / df.silicon_ttft_ms
    df["scored"] = (df.status == "") & (df.rule == "")
    df = df.drop(columns=["_decode", "_prefill", "_prec", "_workers_unknown"])
    return RunsScore(df, _label(path), n, inputs)


def _stats(d: pd.DataFrame) -> dict[str, Any]:
    e = (d.tpot_ratio - 1).abs()
    te = (d.ttft_ratio - 1).abs().dropna()
    return {
        "n": int(len(d)),
        "tpot_median_abs_err": float(e.median()) if len(d) else math.nan,
        "tpot_p90_abs_err": float(e.quantile(0.9)) if len(d) else math.nan,
        "tpot_bias": float(d.tpot_ratio.median()) if len(d) else math.nan,
        "ttft_median_abs_err": float(te.median()) if len(te) else math.nan,
        "bound_tpot_median_ratio": float((d.tpot_bound_ms / d.silicon_tpot_ms).median())
        if len(d)
        else math.nan,
    }


@dataclass
class RunsScore:
    """The scored runs: ``rows`` (one per input row, with ``status``, ``rule``, predictions and
    ratios) and the summary figures."""

    rows: pd.DataFrame
    source: str
    rows_total: int
    inputs: list[GroupInputs] = field(default_factory=list, repr=False)  #: per evaluated group

    @property
    def scored(self) -> pd.DataFrame:
        return self.rows[self.rows.scored]

    def unmapped_by_reason(self) -> dict[str, int]:
        r = self.rows[~self.rows.scored]
        why = np.where(r.rule != "", "cleaning: " + r.rule, r.status)
        return {k: int(v) for k, v in pd.Series(why).value_counts().items()}

    def groups(self) -> list[dict[str, Any]]:
        out = []
        s = self.scored
        for (hw, model, backend, mode), d in s.groupby(["hardware", "model", "backend", "mode"]):
            viol = self.rows[
                (self.rows.hardware == hw)
                & (self.rows.model == model)
                & (self.rows.backend == backend)
                & (self.rows["mode"] == mode)
                & self.rows.bound_violation
            ]
            out.append(
                {
                    "system": hw,
                    "model": model,
                    "stack": backend,
                    "serving": "aggregated" if mode == "agg" else "disaggregated",
                    **_stats(d),
                    "bound_violations": int(len(viol)),
                }
            )
        return out

    def summary(self) -> dict[str, Any]:
        s = _stats(self.scored)
        v = self.rows[self.rows.bound_violation]
        return {
            "rows_total": self.rows_total,
            "rows_scored": int(self.rows.scored.sum()),
            "rows_unmapped_by_reason": self.unmapped_by_reason(),
            "tpot_median_abs_err": s["tpot_median_abs_err"],
            "tpot_p90_abs_err": s["tpot_p90_abs_err"],
            "tpot_bias": s["tpot_bias"],
            "ttft_median_abs_err": s["ttft_median_abs_err"],
            "bound_violations": int(len(v)),
            "bound_violations_flagged": int(
                (v.twin_faster | v.rule.isin(UNRECORDED_RULES)).sum()
            ),
            "groups": self.groups(),
            "by_build": self.by_build(),
        }

    def by_system(self) -> list[dict[str, Any]]:
        return [{"system": hw, **_stats(d)} for hw, d in self.scored.groupby("hardware")]

    def by_build(self) -> list[dict[str, Any]]:
        """The scores of each serving stack's builds (``backend_version``; software moves: one fit
        spans several builds), so a build the fit is slow or fast on shows.  ``tpot_bias`` above 1:
        the build ran faster than the fit predicts."""
        s = self.scored
        if "backend_version" not in s:
            return []
        version = s["backend_version"].astype(str).replace({"nan": "(not stated)", "": "(not stated)"})
        return [{"stack": b, "build": v, **_stats(d)} for (b, v), d in s.groupby([s["backend"], version])]

    def violations(self) -> pd.DataFrame:
        v = self.rows[self.rows.bound_violation]
        return v[
            [
                "id",
                "hardware",
                "model",
                "backend",
                "mode",
                "silicon_tpot_ms",
                "tpot_bound_ms",
                "twin_faster",
                "rule",
            ]
        ]

    def per_row(self) -> pd.DataFrame:
        """One row per input row, for ``--out``."""
        cols = [
            "id",
            "model_path",
            "system",
            "backend",
            "backend_version",
            "mode",
            "isl",
            "osl",
            "concurrency",
            "model",
            "hardware",
            "batch_per_rank",
            "batch_basis",
            "decode_workers",
            "running_fraction",
            "silicon_tpot_ms",
            "tpot_bound_ms",
            "tpot_realistic_ms",
            "tpot_ratio",
            "bottleneck_realistic",
            "silicon_ttft_ms",
            "ttft_realistic_ms",
            "ttft_ratio",
            "bound_violation",
            "twin_faster",
            "matrix_speculation",
            "scored",
            "rule",
            "status",
            "flags",
        ]
        return self.rows[[c for c in cols if c in self.rows.columns]]
