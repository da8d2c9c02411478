"""Large sweeps: tens of millions of decode configurations in bounded memory.

The grid is the Cartesian product of layouts x precisions x MTP x overlap x contexts x batch
fractions (the batch of each layout runs geometrically from one sequence to its memory limit).
It is evaluated in chunks of ``chunk`` configurations; only each chunk's Pareto envelope is
kept, so memory stays flat however large the grid.  A progress bar shows on a terminal, and
Ctrl-C stops cleanly (:class:`SweepInterrupted` carries what was done).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from planner.errors import SpecError
from planner.physics.step import CATEGORIES, evaluate_configs, resolve_precisions
from planner.serving.search import (
    BOTTLENECKS,
    SearchSpace,
    layouts,
    mtp_options,
    overlap_options,
    pareto,
    precision_options,
    whole_batch,
)
from planner.specs.registry import load_hardware, load_model

#: configurations per chunk: 65,536 (each of the step's intermediate arrays 512 kB, near the
#: core's share of the cache) took 2.07 s CPU for a sweep of Kimi K2 Thinking on GB200 NVL72 at
#: three contexts and 128 batch points against 2.42 s at 262,144 and 2.19 s at 32,768
#: (2026-12-04), with a process peak of 276 MB against 447 MB at 262,144
DEFAULT_CHUNK = 1 << 16


class SweepInterrupted(Exception):
    """Raised on Ctrl-C with the number of configurations evaluated so far."""

    def __init__(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        super().__init__(f"interrupted after {done:,} of {total:,} configurations")


@dataclass
class SweepResult:
    frontier: pd.DataFrame    #: Pareto envelope per context (column ``context``)
    evaluated: int            #: configurations evaluated
    feasible: int             #: of which feasible
    seconds: float

    @property
    def configs_per_second(self) -> float:
        return self.evaluated / self.seconds if self.seconds > 0 else float("nan")


def sweep(model: Any, hardware: Any, *, contexts: list[float], batch_points: int = 256,
          space: SearchSpace | None = None, mode: str = "realistic", chunk: int = DEFAULT_CHUNK,
          progress: bool | None = None) -> SweepResult:
    """Evaluate the whole grid in chunks; return the per-context decode frontier.

    ``progress``: show a progress bar (default: when stderr is a terminal).
    """
    m, hw = load_model(model), load_hardware(hardware)
    space = space or SearchSpace()
    if not contexts or any(not (np.isfinite(c) and c >= 1) for c in contexts):
        raise SpecError("<input>", "contexts", "one or more context lengths >= 1 token")
    for c in contexts:
        m.check_length(c, "contexts", "tokens of context")
    if not 2 <= batch_points <= 100_000:
        raise SpecError("<input>", "batch_points", f"2 to 100000, got {batch_points}")
    if chunk < 1024:
        raise SpecError("<input>", "chunk", f"at least 1024 configurations, got {chunk}")
    lay = layouts(m, hw, space.gpus, space.max_gpus, space.tp_attn, space.ep, space.tp_moe)
    groups = [(w, s, o) for w in precision_options(m, hw, space.weights)
              for s in mtp_options(m, space.mtp, space.acceptance) for o in overlap_options(space.overlap, m)]
    ctx = np.asarray(contexts, dtype=float)
    per_group = len(lay) * len(ctx) * batch_points
    total = per_group * len(groups)
    show = sys.stderr.isatty() if progress is None else progress
    bar = None
    if show:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="cfg", unit_scale=True, desc=f"sweep {m.name} on {hw.name}")
    cols = {c: lay[c].to_numpy(float) for c in ("gpus", "tp_attn", "ep", "tp_moe", "expert_slots")}
    frac = np.linspace(0.0, 1.0, batch_points)
    kept: list[pd.DataFrame] = []
    done = feasible = 0
    t0 = time.perf_counter()
    try:
        for weights, spec, o in groups:
            prec = resolve_precisions(m, hw, weights, space.kv)
            # memory limit per (layout, context): b_max does not depend on b
            probe = evaluate_configs(m, hw, prec, mode, G=cols["gpus"][:, None],
                                     TP_a=cols["tp_attn"][:, None], EP=cols["ep"][:, None],
                                     TP_e=cols["tp_moe"][:, None], E_slots=cols["expert_slots"][:, None],
                                     b=1.0, S=ctx[None, :], spec=spec, overlap=o,
                                     kv_offload=int(space.kv_offload))
            b_max = np.broadcast_to(probe["memory.b_max"], (len(lay), len(ctx))).ravel()
            for start in range(0, per_group, chunk):
                idx = np.arange(start, min(start + chunk, per_group))
                li, ci, bi = np.unravel_index(idx, (len(lay), len(ctx), batch_points))
                G, TPa = cols["gpus"][li], cols["tp_attn"][li]
                # whole sequences per instance, geometric from one to the memory limit
                Bcap = whole_batch(b_max[li * len(ctx) + ci] * G / TPa)
                B = np.round(np.exp(np.log(np.maximum(Bcap, 1.0)) * frac[bi]))
                b = B * TPa / G
                out = evaluate_configs(m, hw, prec, mode, G=G, TP_a=TPa, EP=cols["ep"][li],
                                       TP_e=cols["tp_moe"][li], E_slots=cols["expert_slots"][li],
                                       b=b, S=ctx[ci], spec=spec, overlap=o,
                                       kv_offload=int(space.kv_offload))
                ok = np.asarray(out["feasible"]) & np.isfinite(out["tps_gpu"]) & (B <= Bcap)
                feasible += int(ok.sum())
                done += len(idx)
                if bar is not None:
                    bar.update(len(idx))
                if ok.any():
                    at_cap = B == Bcap
                    bn = np.where(at_cap, len(CATEGORIES), out["bottleneck"])
                    df = pd.DataFrame({
                        "context": ctx[ci][ok], "gpus": G[ok].astype(int), "tp_attn": TPa[ok].astype(int),
                        "ep": cols["ep"][li][ok].astype(int), "tp_moe": cols["tp_moe"][li][ok].astype(int),
                        "expert_slots": cols["expert_slots"][li][ok].astype(int),
                        "batch": B[ok].astype(int), "weights": weights, "kv": prec.kv,
                        "mtp": spec.drafts, "overlap": bool(o),
                        "tps_per_user": out["tps_user"][ok], "tps_per_gpu": out["tps_gpu"][ok],
                        "bottleneck": np.asarray(BOTTLENECKS, dtype=object)[bn[ok]],
                    })
                    kept.append(pd.concat([pareto(g) for _, g in df.groupby("context")]))
                    if len(kept) > 64:  # keep memory flat: fold the kept envelopes
                        kept = [_fold(kept)]
    except KeyboardInterrupt:
        raise SweepInterrupted(done, total) from None
    finally:
        if bar is not None:
            bar.close()
    seconds = time.perf_counter() - t0
    front = _fold(kept) if kept else pd.DataFrame()
    return SweepResult(front, done, feasible, seconds)


def _fold(frames: list[pd.DataFrame]) -> pd.DataFrame:
    df = pd.concat(frames, ignore_index=True)
    return pd.concat([pareto(g) for _, g in df.groupby("context")], ignore_index=True)
