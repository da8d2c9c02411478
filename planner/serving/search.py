"""The configuration search: layouts x batch x precision x MTP x overlap, evaluated as grids.

A *candidate* is one (layout, precision, MTP, overlap) combination; its batch counts whole
sequences per instance.
:func:`decode_candidates` evaluates every candidate on a geometric batch grid in one vectorised
call; :func:`pareto` keeps the upper-right envelope; :func:`solve_batch` finds, with scipy, the
batch (whole sequences) at which a candidate gives the most per GPU while meeting a per-user rate.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from planner.errors import SpecError
from planner.physics.step import (
    CATEGORIES,
    Precisions,
    Speculation,
    default_slots,
    evaluate_configs,
    layout_problems,
    resolve_precisions,
    resolve_speculation,
    speculation_kind,
)
from planner.specs.hardware import Hardware
from planner.specs.model import Model
from planner.specs.scenario import BATCH_PER_OCTAVE

BOTTLENECKS = (*CATEGORIES, "memory_capacity")
#: Batches scanned (geometric, 1 to the largest meeting the rate) for the best one (solve_batch)
SOLVE_SCAN = 48


def _pow2_upto(n: int) -> list[int]:
    return [2**i for i in range(0, 12) if 2**i <= n]


def instance_sizes(model: Model, hw: Hardware, gpus: int | None = None,
                   max_gpus: int | None = None) -> list[int]:
    """Instance sizes G to try: powers of two inside a scale-up domain, then whole domains
    (and powers of two) up to ``max_gpus`` (default: 4 domains, at least 128 GPUs)."""
    if gpus is not None:
        return [gpus]
    n = hw.domain_size
    top = max_gpus or max(4 * n, 128)
    sizes = set(_pow2_upto(min(n, top)))
    sizes |= {m * n for m in range(1, top // n + 1)}
    sizes |= set(_pow2_upto(top))
    return sorted(s for s in sizes if s <= top)


def layouts(model: Model, hw: Hardware, gpus: int | None = None, max_gpus: int | None = None,
            tp_attn: int | None = None, ep: int | None = None, tp_moe: int | None = None) -> pd.DataFrame:
    """Every structurally valid layout (G, TP_a, EP, TP_e, expert slots) for these specs.

    A dense model has no experts: EP = 1 and TP_e = TP_a (the only MoE split the layout checks
    accept), so its layouts differ by G and TP_a alone."""
    rows = []
    for G in instance_sizes(model, hw, gpus, max_gpus):
        tps = [tp_attn] if tp_attn else [t for t in _pow2_upto(min(G, hw.domain_size))]
        if model.is_dense:
            rows += [(G, TPa, 1, TPa, 1) for TPa in tps
                     if (ep is None or ep == 1) and (tp_moe is None or tp_moe == TPa)]
            continue
        tpes = [tp_moe] if tp_moe else [t for t in _pow2_upto(min(G, hw.domain_size))]
        for TPa, TPe in itertools.product(tps, tpes):
            if G % TPe:
                continue
            EPv = G // TPe
            if ep is not None and EPv != ep:
                continue
            rows.append((G, TPa, EPv, TPe, int(default_slots(model, EPv))))
    if not rows:
        raise SpecError("<input>", "layout", "at least one layout: check --gpus, --tp-attn, --ep, --tp-moe")
    df = pd.DataFrame(rows, columns=["gpus", "tp_attn", "ep", "tp_moe", "expert_slots"])
    code = layout_problems(model, hw, df.gpus.values, df.tp_attn.values, df.ep.values,
                           df.tp_moe.values, df.expert_slots.values)
    if not (code == 0).any():
        from planner.physics.step import REASONS

        why = "; ".join(sorted({REASONS[int(c)] for c in code}))
        raise SpecError("<input>", "layout", f"a valid layout for {model.name} on {hw.name} ({why})")
    return df[code == 0].reset_index(drop=True)


def precision_options(model: Model, hw: Hardware, weights: str | None = None) -> list[str]:
    """Routed-expert formats worth trying: the model's own, NVFP4 where the hardware has FP4
    tensor cores, and FP8 (what Hopper multiplies fastest); or exactly ``weights``.  For a dense
    model the same choice applies to its dense FFN (see :func:`resolve_precisions`)."""
    if weights is not None:
        return [weights]
    opts = [model.precision["dense_ffn" if model.is_dense else "routed_experts"]]
    if "fp4" in hw.flops and "nvfp4" not in opts:
        opts.append("nvfp4")
    if "fp8" not in opts:
        opts.append("fp8")
    return opts


def mtp_options(model: Model, mtp: Any, acceptance: float | None = None) -> list[Speculation]:
    """``"auto"``: off, and 1-3 drafts where the model has published speculation (MTP layers with
    an acceptance, or measured tokens per step) or ``acceptance`` is given; otherwise exactly what
    was asked.  A given acceptance in tokens per step A is tried at the draft counts n with
    n + 1 >= A (it cannot emit more than it drafts, plus one)."""
    if isinstance(mtp, str) and mtp == "auto":
        opts = [Speculation()]
        if acceptance is not None:
            n_min = max(math.ceil(acceptance - 1.0 - 1e-9), 1) if acceptance >= 1 else 1
            if n_min > 3:
                raise SpecError("<input>", "acceptance", f"at most 4 tokens per step with mtp auto (1 to 3 "
                                f"drafts), got {acceptance:g}: give the draft count (--mtp N)")
            opts += [resolve_speculation(model, n, acceptance) for n in range(n_min, 4)]
        elif model.spec_tokens:
            opts += [resolve_speculation(model, n) for n in model.spec_tokens if n <= 3]
        elif model.mtp_layers and model.mtp_acceptance > 0:
            opts += [resolve_speculation(model, n) for n in (1, 2, 3)]
        return opts
    return [resolve_speculation(model, mtp, acceptance)]


def overlap_options(overlap: Any, model: Model | None = None) -> list[int]:
    """Two-micro-batch overlap off and on (``"auto"``); only off for a dense model, which has no
    MoE layer whose communication it could hide."""
    if overlap is None or overlap == "auto":
        return [0] if model is not None and model.is_dense else [0, 1]
    return [int(bool(overlap))]


@dataclass(frozen=True)
class SearchSpace:
    """What to try.  ``None``/``"auto"`` means: let the search choose."""

    gpus: int | None = None
    max_gpus: int | None = None
    tp_attn: int | None = None
    ep: int | None = None
    tp_moe: int | None = None
    weights: str | None = None
    kv: str | None = None
    mtp: Any = "auto"
    overlap: Any = "auto"
    kv_offload: bool = False
    acceptance: float | None = None   #: tokens per step (>= 1) or per-draft rate (< 1), or None


def decode_candidates(model: Model, hw: Hardware, space: SearchSpace, context: float, mode: str,
                      per_octave: int = BATCH_PER_OCTAVE, envelope_only: bool = False) -> pd.DataFrame:
    """Evaluate every candidate on the batch ladder (one sequence per instance upwards,
    ``per_octave`` points per doubling) and at its memory limit.  One row per feasible
    (candidate, batch) point; ``envelope_only``: only the points on the Pareto envelope of
    (tokens/s per user, decode tokens/s per GPU) of their own (precision, MTP, overlap) grid,
    which hold every point of the overall envelope of any rate that rises with the decode rate
    at a given per-user rate (decode, disaggregated serving)."""
    lay = layouts(model, hw, space.gpus, space.max_gpus, space.tp_attn, space.ep, space.tp_moe)
    frames = []
    for weights in precision_options(model, hw, space.weights):
        prec = resolve_precisions(model, hw, weights, space.kv)
        for spec in mtp_options(model, space.mtp, space.acceptance):
            for o in overlap_options(space.overlap, model):
                frames.append(_grid_one(model, hw, prec, spec, o, lay, context, mode,
                                        space.kv_offload, per_octave, envelope_only))
    return pd.concat([f for f in frames if len(f)] or frames[:1], ignore_index=True)


def whole_batch(batch: Any) -> np.ndarray:
    """The largest whole number of sequences not above ``batch`` (float noise ignored): a batch
    counts whole sequences, and one more than the memory or rate allows does not fit."""
    return np.floor(np.asarray(batch, dtype=float) * (1 + 1e-9))


def batch_ladder(top: float, per_octave: int = BATCH_PER_OCTAVE) -> np.ndarray:
    """Whole batches from 1 to ``top``: ``per_octave`` geometric steps per doubling, rounded to
    whole sequences (duplicates at the small end dropped)."""
    n = int(np.log2(max(top, 1.0)) * per_octave)
    ladder = np.unique(np.round(2.0 ** (np.arange(0, n + 1) / per_octave)))
    return ladder[ladder <= max(top, 1.0)]


def _grid_one(model: Model, hw: Hardware, prec: Precisions, spec: Speculation, overlap: int,
              lay: pd.DataFrame, context: float, mode: str, kv_offload: bool,
              per_octave: int, envelope_only: bool = False) -> pd.DataFrame:
    G, TPa, EPv, TPe, slots = (lay[c].values[:, None].astype(float)
                               for c in ("gpus", "tp_attn", "ep", "tp_moe", "expert_slots"))
    common = dict(G=G, TP_a=TPa, EP=EPv, TP_e=TPe, E_slots=slots, S=context, spec=spec,
                  overlap=overlap, kv_offload=int(kv_offload))
    # memory limit per layout (b_max does not depend on b), in whole sequences per instance
    probe = evaluate_configs(model, hw, prec, mode, b=1.0, **common)
    b_max = np.asarray(probe["memory.b_max"], dtype=float)
    B_max = whole_batch(np.broadcast_to(b_max, G.shape) * G / TPa)
    ok = B_max >= 1
    B_top = float(np.max(np.where(ok, B_max, 1.0)))
    ladder = batch_ladder(B_top, per_octave)
    B = np.concatenate([ladder[None, :] * np.ones_like(B_max), np.maximum(B_max, 1.0)], axis=1)
    ok = ok & (B <= B_max)
    b = B * TPa / G  # sequences per attention-DP rank (a mean over the ranks)
    b_max = B_max * TPa / G
    out = evaluate_configs(model, hw, prec, mode, b=b, **common)
    shape = b.shape
    at_cap = (B == B_max) & ok
    bottleneck = np.where(at_cap, len(CATEGORIES), out["bottleneck"])
    feas = np.broadcast_to(out["feasible"], shape) & ok

    def flat(x: Any) -> np.ndarray:
        return np.broadcast_to(np.asarray(x), shape).ravel()

    data = {
        "gpus": flat(G).astype(int), "tp_attn": flat(TPa).astype(int),
        "dp_attn": (flat(G) // flat(TPa)).astype(int), "ep": flat(EPv).astype(int),
        "tp_moe": flat(TPe).astype(int), "expert_slots": flat(slots).astype(int),
        "batch": flat(B).astype(int), "batch_per_gpu": flat(b / TPa),
        "weights": prec.weights["routed_experts"], "attention": prec.weights["attention"],
        "kv": prec.kv, "compute": prec.compute["routed_experts"], "mtp": spec.drafts,
        "overlap": bool(overlap), "kv_offload": bool(kv_offload),
        "step_s": flat(out["step"]), "tokens_per_step": float(np.asarray(out["A"])),
        "tps_per_user": flat(out["tps_user"]), "decode_tps_per_gpu": flat(out["tps_gpu"]),
        "bottleneck": np.asarray(BOTTLENECKS, dtype=object)[flat(bottleneck).astype(int)],
        "at_memory_cap": flat(at_cap), "feasible": flat(feas),
        "kv_host_fraction": flat(out["memory.host_fraction"]),
    }
    for c in CATEGORIES:
        data[f"t_{c}_s"] = flat(out[f"cat.{c}"])
    # only the feasible points become rows (scalars stay scalars until the frame is built)
    keep = data.pop("feasible")
    if envelope_only:
        idx = np.flatnonzero(keep)
        on = idx[pareto_rows(data["tps_per_user"][idx], data["decode_tps_per_gpu"][idx])]
        keep = np.zeros_like(keep)
        keep[on] = True
    return pd.DataFrame({k: v[keep] if isinstance(v, np.ndarray) else v for k, v in data.items()})


def pareto(df: pd.DataFrame, x: str = "tps_per_user", y: str = "tps_per_gpu") -> pd.DataFrame:
    """Upper-right Pareto envelope of (x, y): a point stays if no other point is at least as good
    in both and better in one.  Returned sorted by x ascending; y is then non-increasing.  The
    order is found on the two columns alone, so only the kept rows of ``df`` are copied."""
    if df.empty:
        return df.copy()
    kept = pareto_rows(df[x].to_numpy(float), df[y].to_numpy(float))
    return df.iloc[kept].sort_values(x, kind="mergesort").reset_index(drop=True)


def pareto_rows(xv: np.ndarray, yv: np.ndarray) -> np.ndarray:
    """Indices of the upper-right Pareto envelope of the points (xv, yv), as :func:`pareto`
    keeps them (of equal points, the first); in x-descending order."""
    # x descending, then y descending, ties in their order (stable, as a mergesort)
    order = np.lexsort((-yv, -xv))
    ys = yv[order]
    best_before = np.concatenate([[-np.inf], np.maximum.accumulate(ys)[:-1]])
    return order[ys > best_before]


def candidate_key(row: pd.Series | dict[str, Any]) -> tuple:
    return tuple(row[c] for c in ("gpus", "tp_attn", "ep", "tp_moe", "expert_slots", "weights",
                                  "kv", "mtp", "overlap", "kv_offload"))


def row_inputs(model: Model, hw: Hardware, row: Any, context: float
               ) -> tuple[Precisions, dict[str, Any]]:
    """The precisions and :func:`evaluate_configs` keywords (all but ``b``) of a candidate row."""
    prec = resolve_precisions(model, hw, row["weights"], row["kv"])
    drafts = int(row["mtp"])
    # the candidate's own tokens per step: rebuilding speculation from the draft count alone
    # would replace a given acceptance with the model's default
    A = row.get("tokens_per_step") if hasattr(row, "get") else None
    spec = (Speculation(drafts=drafts, mean_acceptance_length=float(A), kind=speculation_kind(model))
            if drafts and A is not None and np.isfinite(A) else resolve_speculation(model, drafts))
    kw = dict(G=float(row["gpus"]), TP_a=float(row["tp_attn"]), EP=float(row["ep"]),
              TP_e=float(row["tp_moe"]), E_slots=float(row["expert_slots"]), S=context,
              spec=spec, overlap=int(row["overlap"]),
              kv_offload=int(row["kv_offload"]))
    return prec, kw


def solve_batch(model: Model, hw: Hardware, row: dict[str, Any], target_tps_user: float,
                context: float, mode: str, whole: bool = True) -> float | None:
    """Instance batch at which candidate ``row`` gives the most tokens/s per GPU while every user
    still gets at least ``target_tps_user``; None if one sequence is already slower than that.

    The per-user rate falls with batch, so the batches meeting the target are [1, B*], with B*
    solved exactly (brentq on the monotone per-user rate; the memory-capped batch if even that
    is fast enough) and, with ``whole``, rounded down to whole sequences.  Tokens/s per GPU
    usually rises all the way to B*, but need not: a KV cache spilled to CPU-attached memory
    slows every step more than the extra sequences add.  So the best batch in [1, B*] is
    searched: a geometric scan, then a bounded scalar search between the scan's neighbours of
    its best point (B* itself where the scan peaks there), rounded down with ``whole``.
    ``whole=False``: the continuous relaxation (for derivatives such as elasticities)."""
    prec, kw = row_inputs(model, hw, row, context)
    G, TPa = kw["G"], kw["TP_a"]

    def evaluate(batch: Any) -> dict[str, Any]:
        return evaluate_configs(model, hw, prec, mode, b=np.asarray(batch, float) * TPa / G, **kw)

    def rate(batch: float) -> float:
        return float(evaluate(batch)["tps_user"])

    b_max = float(evaluate(1.0)["memory.b_max"]) * G / TPa
    if whole:
        b_max = float(whole_batch(b_max))
    if b_max < 1.0 or rate(1.0) < target_tps_user:
        return None
    if rate(b_max) >= target_tps_user:
        top = b_max
    else:
        from scipy.optimize import brentq  # imported here: scipy.optimize takes ~0.4 s to import

        top = brentq(lambda x: rate(x) - target_tps_user, 1.0, b_max, xtol=1e-4, rtol=1e-8)
        if whole:
            # whole sequences: the largest batch still at least as fast as the target
            top = max(float(whole_batch(top)), 1.0)
            while top > 1.0 and rate(top) < target_tps_user:
                top -= 1.0
    if top <= 1.0:
        return top
    scan = np.append(np.geomspace(1.0, top, SOLVE_SCAN)[:-1], top)
    out = evaluate(scan)
    y = np.where(np.asarray(out["feasible"], bool), np.asarray(out["tps_gpu"], float), -np.inf)
    i = int(np.argmax(y))
    if i == len(scan) - 1:
        return top
    from scipy.optimize import minimize_scalar

    lo, hi = scan[max(i - 1, 0)], scan[i + 1]
    res = minimize_scalar(lambda b: -float(evaluate(b)["tps_gpu"]), bounds=(lo, hi), method="bounded",
                          options={"xatol": 1e-6 * hi})
    best = float(res.x) if res.success and -float(res.fun) > y[i] else float(scan[i])
    if not whole:
        return best
    # the whole batch on either side of the best, whichever gives more (both meet the target)
    below = max(float(whole_batch(best)), 1.0)
    return max({below, min(below + 1.0, top)}, key=lambda c: float(evaluate(c)["tps_gpu"]))
