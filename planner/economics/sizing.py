"""Procurement sizing: from demand and a service level to GPUs, racks, megawatts and dollars.

For each hardware option the frontier engine (:func:`planner.serving.frontiers.frontier`) gives
the configurations meeting the service level (tokens/s per user, and for disaggregated serving
the prefill pool's TTFT limit); the cheapest deployment of one of them at the demand is kept.
The pieces live beside this module: :mod:`~planner.economics.demand` (loads and profiles),
:mod:`~planner.economics.pools` (instances, domains, units), :mod:`~planner.economics.cost`
(power, money and their sources), :mod:`~planner.economics.options` (one system's candidates).

API (DataFrames): :func:`size`, :func:`power_budget`, :func:`cost_target`,
:func:`fleet_capacity`, and :func:`sizing_curve` (cost and units against the service level,
for :func:`planner.plot.plot_sizing`).
"""


from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from planner.economics.cost import Costs, economics
from planner.economics.demand import Demand, as_demand
from planner.economics.options import Option, check_level, mark_cheapest, no_option, setup
from planner.economics.pools import max_load, plan_pools
from planner.errors import SpecError, shown
from planner.specs.scenario import Scenario

DEFAULT_LEVELS = (10.0, 20.0, 50.0, 100.0, 200.0)


# ---- API -------------------------------------------------------------------------------------------
def size(scenario: Scenario, demand: Demand | float | Mapping[str, Any], *, min_tps_user: float,
         costs: Costs | None = None, options_out: list[Option] | None = None) -> pd.DataFrame:
    """Size a deployment on each of the scenario's systems for ``demand`` (a :class:`Demand`, a
    peak in output tokens/s, or ``{"users": N}`` and the like) at the service level
    ``min_tps_user`` (tokens/s per user), priced at ``costs`` (default :class:`Costs`).

    One row per option: the configuration (``tps_per_user``, ``tps_per_gpu`` = output tokens/s
    per GPU counting every GPU, instance sizes, binding term), the deployment (``gpus`` bought,
    ``units``, pools, ``power_mw`` facility and ``it_power_mw``, ``capex_usd``,
    ``opex_usd_per_year`` (energy), ``rental_usd_per_year``, ``usd_per_mtok_owned`` (capex over
    ``years`` + energy), ``usd_per_mtok_rental``, ``tps_per_facility_mw`` (per MW of facility
    power: IT x PUE), ``capacity_tps``, ``headroom``, ``utilisation``, ``idle_usd_per_year``),
    each price and power figure with its ``*_source``, and
    ``cheapest``.  Options that cannot meet the level have ``feasible`` False and a ``reason``;
    if none can, SpecError says the best each can do.  ``options_out``: a list the options are
    appended to (each row's frontier, for its launch recipe: :mod:`planner.economics.recipes`;
    also taken by :func:`power_budget`, :func:`fleet_capacity` and :func:`cost_target`).
    """
    level = check_level(min_tps_user)
    dem = as_demand(demand)
    m, opts, attrs = setup(scenario, costs)
    basis = attrs["basis"]
    if options_out is not None:  # (the options each row was priced on, for its launch recipe)
        options_out.extend(opts)
    rows = []
    for o in opts:
        got = o.best(level, dem, basis)
        rows.append(o.row(got[0], got[1], level) if got else o.infeasible_row(level, o.reason(level)))
    if not any(r["feasible"] for r in rows):
        if any(o.too_large for o in opts):
            raise SpecError("<input>", "demand", "; ".join(f"{o.hw.name}: {o.too_large or o.reason(level)}"
                                                           for o in opts))
        raise no_option(opts, level)
    df = mark_cheapest(pd.DataFrame(rows), basis)
    df.attrs.update(attrs, min_tps_user=level, demand=dem.describe(), demand_kind=dem.kind,
                    profile=list(dem.hourly) if dem.is_profile else None)
    return df


def power_budget(scenario: Scenario, budget_mw: float, *, min_tps_user: float, costs: Costs | None = None,
                 options_out: list[Option] | None = None) -> pd.DataFrame:
    """The largest load each option serves at the service level within ``budget_mw`` of facility
    power: the whole units the budget powers (units x GPUs x W/GPU x PUE <= budget), then the
    configuration serving the most on them.  Rows: ``units``, ``gpus``, ``power_mw``,
    ``capacity_tps`` (output tokens/s), ``users`` (capacity / level), ``requests_per_s``
    (capacity / OSL), and the costs at that full load."""
    level = check_level(min_tps_user)
    if isinstance(budget_mw, bool) or not isinstance(budget_mw, int | float) or not (
            math.isfinite(budget_mw) and budget_mw > 0):
        raise SpecError("<input>", "power_budget_mw", f"a positive power in MW, got {shown(budget_mw)}")
    m, opts, attrs = setup(scenario, costs)
    if options_out is not None:  # (the options each row was priced on, for its launch recipe)
        options_out.extend(opts)
    rows = []
    for o in opts:
        mon = o.money()
        unit_w = o.hw.gpus_per_unit * mon["power_per_gpu"] * mon["pue"]
        n = int(math.floor(budget_mw * 1e6 / unit_w * (1 + 1e-12)))
        r = _fleet_row(o, n, level, f"{budget_mw:g} MW powers no whole {o.hw.unit} "
                       f"(one needs {unit_w / 1e6:.4g} MW)")
        r["power_budget_mw"] = float(budget_mw)
        rows.append(r)
    if not any(r["feasible"] for r in rows):
        if all(not o.feasible_at_all or o.top < level for o in opts):
            raise no_option(opts, level)
        raise SpecError("<input>", "power_budget_mw", "a budget that serves load on some option; "
                        + "; ".join(f"{r['hardware']}: {r['reason']}" for r in rows))
    df = pd.DataFrame(rows)
    df.attrs.update(attrs, min_tps_user=level, power_budget_mw=float(budget_mw))
    return df


def fleet_capacity(scenario: Scenario, units: int, *, levels: Sequence[float] = DEFAULT_LEVELS,
                   costs: Costs | None = None, options_out: list[Option] | None = None) -> pd.DataFrame:
    """The load a fixed fleet of ``units`` units of each option serves at each service level in
    ``levels`` (tokens/s/user): one row per (hardware, level) with ``capacity_tps``, ``users``,
    ``requests_per_s``, power and costs at that full load; ``feasible`` False (capacity 0)
    where the level is out of reach or the fleet holds no whole instance."""
    if isinstance(units, bool) or not isinstance(units, int | np.integer) or units < 1:
        raise SpecError("<input>", "fleet_units", f"a whole number of units >= 1, got {shown(units)}")
    lv = sorted({check_level(x, "levels") for x in levels})
    if not lv:
        raise SpecError("<input>", "levels", "at least one service level")
    m, opts, attrs = setup(scenario, costs)
    if options_out is not None:  # (the options each row was priced on, for its launch recipe)
        options_out.extend(opts)
    rows = []
    for o in opts:
        for x in lv:
            rows.append(_fleet_row(o, int(units), x, ""))
    df = pd.DataFrame(rows)
    df.attrs.update(attrs, fleet_units=int(units), levels=lv)
    return df


def _fleet_row(o: Option, n: int, level: float, no_unit_reason: str) -> dict[str, Any]:
    """The most load ``n`` units of option ``o`` serve at ``level``."""
    if n < 1:
        r = o.infeasible_row(level, no_unit_reason)
        r.update(units=n, capacity_tps=0.0)
        return r
    best = None
    for c in o.candidates(level):
        cap = max_load(n, **o.perf(c))
        if cap > 0 and (best is None or (cap, c["tps_per_gpu"]) > best[0]):
            best = ((cap, c["tps_per_gpu"]), c)
    if best is None:
        reason = o.reason(level) if (not o.feasible_at_all or level > o.top) else (
            f"{n} {o.hw.unit}(s) hold no whole set of instances at this level")
        r = o.infeasible_row(level, reason)
        r.update(units=n, capacity_tps=0.0)
        return r
    cap, c = best[0][0], best[1]
    mon = o.money()
    money = economics(units=n, gpus_per_unit=o.hw.gpus_per_unit, peak_tps=cap, mean_tps=cap,
                      capacity_tps=cap, **mon)
    pools = plan_pools(cap, **o.perf(c))
    pools.update(units=n, gpus=n * o.hw.gpus_per_unit)
    r = o.row(c, dict(demand_tps=cap, mean_demand_tps=cap, **pools, **money), level)
    # whole users, each at least at the level
    r.update(users=int(math.floor(cap / level * (1 + 1e-12))), requests_per_s=cap / o.osl)
    return r


def cost_target(scenario: Scenario, usd_per_mtok: float, demand: Demand | float | Mapping[str, Any], *,
                costs: Costs | None = None, refine: int = 6, options_out: list[Option] | None = None
                ) -> pd.DataFrame:
    """The highest interactivity (tokens/s/user) each option reaches at ``usd_per_mtok`` or less,
    serving the demand (``basis``: ``own``, capex over ``years`` + energy, or ``rental``).

    Searched over the frontier: the costs at every envelope point, then ``refine`` bisection
    steps with the batch solved exactly between the last point within the target and the next.
    One row per option with the deployment at that level (``tps_per_user`` is the level
    reached); ``feasible`` False with the cheapest cost it can reach otherwise.
    """
    if isinstance(usd_per_mtok, bool) or not isinstance(usd_per_mtok, int | float) or not (
            math.isfinite(usd_per_mtok) and usd_per_mtok > 0):
        raise SpecError("<input>", "cost_target", f"a positive price in USD per million tokens, got "
                        f"{shown(usd_per_mtok)}")
    dem = as_demand(demand)
    m, opts, attrs = setup(scenario, costs)
    basis = attrs["basis"]
    if options_out is not None:  # (the options each row was priced on, for its launch recipe)
        options_out.extend(opts)
    key = "usd_per_mtok_owned" if basis == "own" else "usd_per_mtok_rental"
    rows = []
    for o in opts:
        if not o.feasible_at_all:
            rows.append(o.infeasible_row(math.nan, o.reason(0.0)))
            continue
        xs = np.unique(o.pts.tps_per_user.to_numpy())
        xs = np.unique(np.geomspace(xs.min(), xs.max(), 64))
        reach = _Reach(o, xs, dem, basis, key, refine)
        got = reach.highest(float(usd_per_mtok))
        if got is None:
            cheapest = reach.cheapest()
            if not math.isfinite(cheapest):  # the demand is beyond any fleet at every level
                rows.append(o.infeasible_row(math.nan, o.too_large or o.reason(float(xs[0]))))
                continue
            at = reach.highest(cheapest)
            x_at = at[0] if at is not None else math.nan
            r = o.infeasible_row(math.nan, f"cheapest ${cheapest:.4g}/Mtok (up to {x_at:.4g} tokens/s/user)")
            r["min_usd_per_mtok"] = cheapest
            rows.append(r)
            continue
        lo, (c, d) = got
        r = o.row(c, d, lo)
        r["target_usd_per_mtok"] = float(usd_per_mtok)
        rows.append(r)
    if not any(r["feasible"] for r in rows):
        raise SpecError("<input>", "cost_target", f"a price some option reaches (${usd_per_mtok:g}/Mtok); "
                        "best each can do: " + "; ".join(f"{r['hardware']}: {r['reason']}" for r in rows))
    df = pd.DataFrame(rows)
    df.attrs.update(attrs, cost_target=float(usd_per_mtok), demand=dem.describe(), demand_kind=dem.kind)
    return df


class _Reach:
    """The highest service level one option serves at a price: the same deployment as
    :func:`size` (:meth:`Option.best`, batch solved exactly) at every level it tries, so that
    ``size --min-tps-user X``, ``--cost-target`` and the "cheapest" it reports agree."""

    def __init__(self, o: Option, xs: np.ndarray, dem: Any, basis: str, key: str, refine: int) -> None:
        self.o, self.xs, self.dem, self.basis, self.key, self.refine = o, xs, dem, basis, key, refine
        self._exact: dict[float, Any] = {}
        # grid costs (no batch solve) bracket the search; the exact ones are never higher
        grid = [o.best(float(x), dem, basis, exact=False) for x in xs]
        self.grid = np.array([g[1][key] if g else math.inf for g in grid])

    def at(self, x: float) -> Any:
        if x not in self._exact:
            self._exact[x] = self.o.best(x, self.dem, self.basis)
        return self._exact[x]

    def _ok(self, got: Any, target: float) -> bool:
        return got is not None and got[1][self.key] <= target * (1 + 1e-12)

    def cheapest(self) -> float:
        """The lowest price reachable, rounded up to 4 significant digits (the figure printed,
        which ``highest`` then reaches)."""
        m = int(np.argmin(self.grid))
        got = self.at(float(self.xs[m]))
        c = min(self.grid[m], got[1][self.key] if got else math.inf)
        if not math.isfinite(c):
            return math.inf  # no fleet serves the demand at any level
        e = math.floor(math.log10(c)) - 3
        return math.ceil(c / 10.0**e * (1 - 1e-12)) * 10.0**e

    def highest(self, target: float) -> tuple[float, Any] | None:
        """(level, (configuration, deployment)) at the highest level within ``target``, or None."""
        xs = self.xs
        ok = np.flatnonzero(self.grid <= target * (1 + 1e-12))
        if len(ok):
            i = int(ok.max())
        else:  # no grid cost within it: the exact deployment may still be
            i = int(np.argmin(self.grid))
            if not self._ok(self.at(float(xs[i])), target):
                return None
        got = self.at(float(xs[i]))
        if not self._ok(got, target):  # keep the grid answer
            got = self.o.best(float(xs[i]), self.dem, self.basis, exact=False)
        # exact costs are at most the grid's: walk on while the next level is still within it
        while i + 1 < len(xs) and self._ok(self.at(float(xs[i + 1])), target):
            i += 1
            got = self.at(float(xs[i]))
        lo = float(xs[i])
        if i + 1 < len(xs):
            hi = float(xs[i + 1])
            for _ in range(max(0, int(self.refine))):
                mid = math.sqrt(lo * hi)
                g = self.at(mid)
                if self._ok(g, target):
                    lo, got = mid, g
                else:
                    hi = mid
        return lo, got


def sizing_curve(scenario: Scenario, demand: Demand | float | Mapping[str, Any], *,
                 costs: Costs | None = None, levels: Sequence[float] | None = None, points: int = 40,
                 also_at: Sequence[float] = ()) -> pd.DataFrame:
    """$/M tokens and units needed against the per-user service level, per option: at each
    level the deployment :func:`size` gives there (the same :meth:`Option.best`, batch solved
    exactly), so a plot of the curve agrees with the sizing table.  ``levels``: the levels
    (default ``points`` log-spaced over each frontier's range); ``also_at``: levels added to
    them (the one asked, say).  Rows: ``hardware``, ``tps_per_user`` (the level),
    ``usd_per_mtok_owned``, ``usd_per_mtok_rental``, ``units``, ``unit``, ``gpus``, ``power_mw``."""
    dem = as_demand(demand)
    m, opts, attrs = setup(scenario, costs)
    basis = attrs["basis"]
    rows = []
    for o in opts:
        if not o.feasible_at_all:
            continue
        xs = np.asarray(levels, dtype=float) if levels is not None else np.geomspace(
            max(o.pts.tps_per_user.min(), 1e-3), o.top, points)
        xs = np.unique(np.concatenate([xs, np.asarray(list(also_at), dtype=float)]))
        for x in xs:
            got = o.best(float(x), dem, basis)
            if got is None:
                continue
            c, d = got
            rows.append(dict(hardware=o.hw.name, tps_per_user=float(x),
                             usd_per_mtok_owned=d["usd_per_mtok_owned"],
                             usd_per_mtok_rental=d["usd_per_mtok_rental"], units=d["units"],
                             unit=o.hw.unit, gpus=d["gpus"], power_mw=d["power_mw"],
                             tps_per_gpu=c["tps_per_gpu"]))
    df = pd.DataFrame(rows, columns=["hardware", "tps_per_user", "usd_per_mtok_owned", "usd_per_mtok_rental",
                                     "units", "unit", "gpus", "power_mw", "tps_per_gpu"])
    df.attrs.update(attrs, demand=dem.describe())
    return df
