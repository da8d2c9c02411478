"""A landscape: every system x model x workload at once, read at several service levels.

Each (system, model, workload) is one cell: the frontier of that scenario (the rules search by
default, as ``frontier`` draws it; a workload of sessions takes :func:`workload_frontier`), read
at each level as ``compare``'s table is (:func:`frontier_at`): tokens/s per GPU, per MW of IT
power, $ per million output tokens at the spec's rental price, the binding term, the instance, and
with ``band`` the 5th-95th percentile band there.  Beside each system, what its figures rest on:
its own measured runs, or its datasheet alone (:func:`planner.truth.uncertainty.unmeasured_log_sd`,
the log-sd leave-one-system-out refits put on such a system).

The cells run on :mod:`planner.cells` (Dask when installed): a rerun with one system added
computes only that system's cells; a cell that fails is a row with its error, and the rest go on.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from planner.cells import Executor, Run, run_cells
from planner.errors import SpecError, shown
from planner.specs.scenario import Scenario

#: service levels a landscape is read at unless told, tokens/s per user
LEVELS = (20.0, 50.0, 100.0)
#: a workload of one request shape: ISL/OSL in tokens, "k" for thousands (8k/1k)
PAIR = re.compile(r"^\s*(\d+(?:\.\d+)?)(k?)\s*/\s*(\d+(?:\.\d+)?)(k?)\s*$", re.IGNORECASE)
COLUMNS = ("hardware", "model", "workload", "tps_per_user", "tps_per_gpu", "tps_per_mw",
           "usd_per_mtok_rental", "bottleneck", "gpus", "weights", "reached_tps_per_user", "band_lo",
           "band_mid", "band_hi", "datasheet_log_sd", "measured", "error")


@dataclass
class Landscape:
    """The landscape's table (one row per system x model x workload x level; :data:`COLUMNS`),
    the run of its cells, and what was asked."""

    table: pd.DataFrame
    run: Run
    levels: tuple[float, ...]
    scenario: dict[str, Any]

    def best(self) -> pd.DataFrame:
        """Per model, workload and level: the system with the most tokens/s per GPU there (its
        figure and the runner-up's ratio to it)."""
        t = self.table[np.isfinite(self.table.tps_per_gpu.astype(float))]
        rows = []
        for (m, w, x), g in t.groupby(["model", "workload", "tps_per_user"], sort=False):
            g = g.sort_values("tps_per_gpu", ascending=False)
            top = g.iloc[0]
            second = float(g.tps_per_gpu.iloc[1]) if len(g) > 1 else math.nan
            rows.append({"model": m, "workload": w, "tps_per_user": x, "best": top.hardware,
                         "tps_per_gpu": float(top.tps_per_gpu), "lead": float(top.tps_per_gpu) / second})
        return pd.DataFrame(rows, columns=["model", "workload", "tps_per_user", "best", "tps_per_gpu",
                                           "lead"])


def parse_workload(text: str) -> dict[str, Any]:
    """A workload as scenario fields: ``ISL/OSL`` (``1024/1024``, ``8k/1k``) or a workload of
    sessions (a bundled name or a file)."""
    m = PAIR.match(str(text))
    if m:
        isl = float(m[1]) * (1000 if m[2] else 1)
        osl = float(m[3]) * (1000 if m[4] else 1)
        if not (isl >= 1 and osl >= 1 and isl.is_integer() and osl.is_integer()):
            raise SpecError("<input>", "workloads", f"whole token counts ISL/OSL, got {text!r}")
        return {"isl": int(isl), "osl": int(osl)}
    from planner.specs.workload import load_workload

    try:  # a name or file that is no workload: one line here, before any cell runs
        load_workload(text)
    except SpecError as exc:
        raise SpecError("<input>", "workloads", f"ISL/OSL (1024/1024, 8k/1k) or a workload of sessions, got "
                        f"{text!r} ({exc})") from None
    return {"workload": str(text)}


def _fingerprint(sc: Scenario) -> str:
    """What the cell's figures depend on beyond its fields: the loaded system and model (their
    every value, calibration included) and the tool's version."""
    import hashlib

    from planner import __version__

    text = f"{__version__}|{sc.load_system()!r}|{sc.load_model()!r}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def landscape_cell(key: tuple[Any, ...]) -> list[dict[str, Any]]:
    """One cell's rows (see the module docstring): ``key`` is (the cell's scenario, its workload
    label, the levels, band draws or 0, the fingerprint of what it was computed from)."""
    from planner.serving.frontiers import frontier, frontier_at
    from planner.serving.search import pareto
    from planner.truth.uncertainty import unmeasured_log_sd

    sc, label, levels, samples, _ = key
    hw = sc.load_system()
    sd = unmeasured_log_sd(hw)
    base = {"hardware": hw.name, "model": sc.load_model().name, "workload": label,
            "datasheet_log_sd": sd, "measured": sd == 0.0, "error": None}
    if sc.workload is not None:
        from planner.serving.workloads import best_at, workload_frontier

        front = workload_frontier(sc)
        got = [best_at(front, x) for x in levels]
        band = None
    else:
        pts = frontier(sc, all_points=True)
        table = frontier_at(sc, list(levels), points=pts)
        got = [None if not np.isfinite(r.get("tps_per_gpu", np.nan)) else r for _, r in table.iterrows()]
        band = None
        if samples:
            from planner.truth.uncertainty import frontier_band

            front = pareto(pts)
            front.attrs.update(pts.attrs)
            band = frontier_band(sc, samples=samples, grid=np.asarray(levels, float), base=front)
    rows = []
    for i, (x, r) in enumerate(zip(levels, got, strict=True)):
        row = dict(base, tps_per_user=float(x))
        if r is not None:
            row.update(tps_per_gpu=float(r["tps_per_gpu"]), tps_per_mw=float(r.get("tps_per_mw", math.nan)),
                       usd_per_mtok_rental=float(r.get("usd_per_mtok_rental", math.nan)),
                       bottleneck=str(r.get("bottleneck", "")),
                       gpus=int(r.get("gpus_total", r.get("gpus", 0)) or 0) or None,
                       weights=str(r.get("weights", "")), reached_tps_per_user=float(r["tps_per_user"]))
        else:
            row.update(tps_per_gpu=math.nan, bottleneck="out of reach")
        if band is not None:
            row.update(band_lo=float(band.lo.iloc[i]), band_mid=float(band.mid.iloc[i]),
                       band_hi=float(band.hi.iloc[i]))
        rows.append(row)
    return rows


def landscape(scenario: Scenario, models: Sequence[str], workloads: Sequence[str], *,
              levels: Sequence[float] = LEVELS, band: int = 0, executor: Executor | None = None) -> Landscape:
    """Every system of ``scenario`` x ``models`` x ``workloads`` (``ISL/OSL`` pairs or workloads of
    sessions), read at ``levels`` tokens/s per user; ``band``: draws of the uncertainty band per
    cell (0: none; the band is the slowest part); ``executor``: where the cells run and where their
    results are kept (:class:`planner.cells.Executor`).  The scenario's other fields (serving,
    search, precision, stack, ...) hold for every cell."""
    if not isinstance(scenario, Scenario):
        raise SpecError("<input>", "scenario", f"a Scenario, got {type(scenario).__name__}")
    models, workloads = list(models), list(workloads)
    for name, vals in (("models", models), ("workloads", workloads)):
        if not vals:
            raise SpecError("<input>", name, "at least one")
    lv = tuple(sorted({float(x) for x in levels}))
    if not lv or not all(math.isfinite(x) and x > 0 for x in lv):
        raise SpecError("<input>", "levels", f"positive tokens/s per user, got {shown(list(levels))}")
    if isinstance(band, bool) or not isinstance(band, int) or not (band == 0 or 2 <= band <= 1000):
        raise SpecError("<input>", "band", f"0 or 2 to 1000 draws, got {shown(band)}")
    shapes = {w: parse_workload(w) for w in workloads}
    keys = []
    for h in scenario.systems:
        for m in models:
            for w in workloads:
                sc = scenario.replace(systems=(h,), model=m, **shapes[w])
                samples = band if "workload" not in shapes[w] else 0
                keys.append((sc, w, lv, samples, _fingerprint(sc)))
    run = run_cells(landscape_cell, keys, executor, "landscape")
    rows = []
    for cell in run.cells:
        if cell.error is None:
            rows += cell.result
            continue
        sc, label, levels_, _, _ = cell.key
        fields = sc.to_dict()
        for x in levels_:  # the failed cell's inputs and its error, in the table
            rows.append({"hardware": fields["systems"][0], "model": fields["model"], "workload": label,
                         "tps_per_user": x, "tps_per_gpu": math.nan, "bottleneck": "failed",
                         "error": cell.error})
    table = pd.DataFrame(rows).reindex(columns=list(COLUMNS))
    return Landscape(table, run, lv, scenario.to_dict())
