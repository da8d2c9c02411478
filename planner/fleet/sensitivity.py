"""How a fleet plan moves: the scarcest system's supply limit one unit either way, energy +50%,
and Monte Carlo draws of the systems' realistic-mode efficiencies within their band.

Each case is solved again from the plan's own problem (:class:`planner.fleet.plan.Problem`);
the supply and energy cases reuse its frontiers, each efficiency draw searches the frontiers
again with every system's efficiencies drawn by :func:`planner.truth.calibrate.sampled_efficiencies`
(the fit covariance where the spec records one, +-15% otherwise), one draw per system shared by
every workload.  For each draw the plan is re-solved, and the baseline's units are checked: do
they still serve every workload at its level (``baseline_serves``)?
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from planner.errors import SpecError, shown
from planner.fleet.plan import FleetPlan, Limits, Mix, Problem
from planner.outputs import progress
from planner.truth.calibrate import sampled_efficiencies

DEFAULT_DRAWS = 8
DEFAULT_SEED = 20251
ENERGY_FACTOR = 1.5


def _row(pr: Problem, base: FleetPlan, case: str, kind: str, mix: Mix | None, note: str = "",
         cost_of: float | None = None) -> dict[str, Any]:
    cost = (mix.objective if cost_of is None else cost_of) if mix is not None else math.nan
    r: dict[str, Any] = dict(case=case, kind=kind, feasible=mix is not None, cost_usd=cost,
                             delta_usd=cost - base.totals["cost_usd"],
                             delta_pct=100.0 * (cost / base.totals["cost_usd"] - 1.0))
    units = pr.units_by_system(mix) if mix is not None else [None] * len(pr.systems)
    for s, n in zip(pr.systems, units, strict=True):
        r[f"units_{s.hw.name}"] = n
    r["note"] = note
    return r


def scarcest(result: FleetPlan) -> int | None:
    """Index of the scarcest supply-limited system: the one whose next unit saves the most,
    else the one with the fewest units left; None when no system has a supply limit."""
    lim = result.limits[result.limits.field.str.endswith(".max_units")]
    if lim.empty:
        return None
    best = lim.sort_values(["saving_one_more_usd", "left"], ascending=[False, True], kind="mergesort").iloc[0]
    return int(best.field.split("[")[1].split("]")[0])


def sensitivity(result: FleetPlan, *, draws: int = DEFAULT_DRAWS, seed: int = DEFAULT_SEED,
                energy_factor: float = ENERGY_FACTOR, method: str = "auto") -> pd.DataFrame:
    """The plan re-solved under each change, one row per case: ``case``, ``kind`` (baseline,
    supply, energy, efficiency), ``feasible``, ``cost_usd`` over the plan's years, ``delta_usd``,
    ``delta_pct``, ``units_<system>`` per system, ``baseline_serves`` (efficiency draws: the
    baseline's units still serve every workload), ``note``.  ``attrs['summary']``: the range of
    cost and of each system's units over the efficiency draws.  Also stored on
    ``result.sensitivity``."""
    if isinstance(draws, bool) or not isinstance(draws, int) or not 0 <= draws <= 200:
        raise SpecError("<input>", "draws", f"a whole number of draws from 0 to 200, got {shown(draws)}")
    pr = result.problem
    base_units = pr.units_by_system(result.mix)
    rows = [_row(pr, result, "baseline", "baseline", result.mix)]
    j = scarcest(result)
    if j is not None:
        s = pr.systems[j]
        lim = pr.limits()
        for step in (-1, 1):
            cap = int(lim.max_units[j]) + step
            if cap < 0:
                continue
            caps = list(lim.max_units)
            caps[j] = cap
            mix = pr.solve(Limits(tuple(caps), lim.facility_w, lim.capex_usd))
            note = "" if mix is not None else "infeasible"
            case = f"supply of {s.hw.name} {cap} ({step:+d} {s.hw.unit})"
            rows.append(_row(pr, result, case, "supply", mix, note))
    mix = pr.solve(kwh_factor=energy_factor)
    note = ("rental prices include power: no change on the rental basis" if pr.basis == "rental" else
            f"energy at ${pr.usd_per_kwh * energy_factor:g}/kWh")
    rows.append(_row(pr, result, f"energy price {100 * (energy_factor - 1):+.0f}%", "energy", mix, note))
    if draws:
        modes = {dict(w.search).get("mode", "realistic") for w in pr.spec.workloads}
        if modes != {"realistic"}:
            raise SpecError("<input>", "mode", "realistic for efficiency draws (bound mode has no "
                            "efficiencies to vary); ask draws=0")
        rng = np.random.default_rng(seed)
        usable = [s for s in pr.systems if not s.excluded]
        eff = {s.hw.name: sampled_efficiencies(s.hw, rng, draws, method=method) for s in usable}
        for i in progress(range(draws), "efficiency draws"):
            try:
                pd_ = Problem(pr.spec, efficiency={n: e[i] for n, e in eff.items()}, years=pr.years,
                              basis=pr.basis, usd_per_kwh=pr.usd_per_kwh)
            except SpecError as exc:
                r = _row(pr, result, f"efficiency draw {i + 1}", "efficiency", None, exc.expected)
                r["baseline_serves"] = False
                rows.append(r)
                continue
            mix = pd_.solve()
            keep = pd_.solve(Limits(tuple(base_units), None, None))
            r = _row(pd_, result, f"efficiency draw {i + 1}", "efficiency", mix,
                     "" if mix is not None else "infeasible within the limits")
            r["baseline_serves"] = keep is not None
            rows.append(r)
    df = pd.DataFrame(rows)
    eff_rows = df[(df.kind == "efficiency") & df.feasible]
    summary: dict[str, Any] = {}
    if not eff_rows.empty:
        summary["cost_usd"] = [float(eff_rows.cost_usd.min()), float(eff_rows.cost_usd.max())]
        for s in pr.systems:
            col = eff_rows[f"units_{s.hw.name}"].astype(float)
            summary[f"units_{s.hw.name}"] = [int(col.min()), int(col.max())]
        summary["baseline_serves"] = int(df[df.kind == "efficiency"].baseline_serves.astype(bool).sum())
        summary["draws"] = int(draws)
    df.attrs.update(summary=summary, seed=seed, energy_factor=energy_factor, method=method)
    result.sensitivity = df
    return df
