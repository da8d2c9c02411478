"""The fleet plan: the cheapest mix of systems serving several workloads at once, each at its own
service level, under supply limits (at most N units of a system, from a date), region limits
(export-restricted parts) and site limits (facility MW, capex budget).

Each workload's capacity on each system comes from that system's frontier at the workload's
service level (:class:`planner.economics.options.Option`: per instance size the configuration
with the most output per GPU, plus the exact batch solve).  Every (workload, system,
configuration) is a *pool* of whole units dedicated to that workload; inside a pool the decode
and prefill instances are whole, instances sit inside scale-up domains (an instance no larger
than a domain never straddles two; a larger one takes whole domains) and domains inside whole
units.  The integer program (:func:`scipy.optimize.milp`, HiGHS) picks the units and instances
of every pool so that each workload's peak is served, the limits hold, and the cost over
``years`` is the least: capex + energy (``basis='own'``) or rental (``basis='rental'``).

API: :func:`plan` (a :class:`FleetPlan`), :func:`read_plan` (the plan file), :func:`solve_mix`
(the integer program on plain numbers).
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from planner.economics.cost import (
    BASES,
    DEFAULT_PUE,
    DEFAULT_USD_PER_KWH,
    DEFAULT_YEARS,
    HOURS_PER_YEAR,
    MAX_PUE,
    MAX_USD_PER_KWH,
    MAX_YEARS,
    SECONDS_PER_YEAR,
    Costs,
    check_override,
    check_years,
    economics,
)
from planner.economics.demand import Demand, make_demand, read_profile
from planner.economics.options import (
    SIZING_SERVING,
    Option,
    check_level,
    setup,
)
from planner.economics.pools import max_load, plan_pools, units_for
from planner.errors import SpecError, shown
from planner.specs.hardware import Hardware
from planner.specs.reading import Fields, as_number, read_yaml
from planner.specs.regions import REGIONS
from planner.specs.registry import load_systems
from planner.specs.scenario import Scenario

#: the frontier options a workload's ``search:`` block may set (the scenario's fields)
SEARCH_KEYS = ("context", "gpus", "max_gpus", "tp_attn", "ep", "tp_moe", "weights", "kv", "mtp",
               "overlap", "kv_offload", "mode", "acceptance", "search")

#: where the bundled example plan lives (used by docs/guide.md and the notebook)
EXAMPLE_PLAN = Path(__file__).resolve().parent / "data" / "plan_example.yaml"


# ---- the plan's inputs -----------------------------------------------------------------------------
@dataclass(frozen=True)
class WorkloadSpec:
    """One workload: a model at its lengths, a service level and a demand."""

    name: str
    model: str
    min_tps_user: float                     #: service level, output tokens/s per user
    demand: Demand                          #: peak (or daily profile) of the load
    isl: float = 1024
    osl: float = 1024
    serving: str = "disaggregated"
    max_ttft: float | None = None           #: s, the prefill pool's limit (disaggregated)
    systems: tuple[str, ...] | None = None  #: the candidate systems it may run on (None: all)
    search: tuple[tuple[str, Any], ...] = ()  #: frontier search options (max_gpus, weights, ...)

    def scenario(self, systems: Sequence[Any] = ()) -> Scenario:
        """The question this workload asks of ``systems`` (default: the scenario's own default)."""
        kw = dict(self.search)
        if kw.get("slo") is not None:
            kw["slo"] = dict(kw["slo"])
        return Scenario(self.model, tuple(systems) or Scenario().systems, serving=self.serving,
                        isl=self.isl, osl=self.osl, max_ttft=self.max_ttft, **kw)


#: Site regions the specs' ``china`` covers (the US export rules name China, Hong Kong and Macau);
#: any other site region is ``global`` in the specs' ``system.regions`` terms.
CHINA_REGIONS = ("china", "cn", "prc", "hong kong", "hongkong", "hk", "macau", "macao", "mo")


def spec_region(region: str) -> str:
    """A site region in the specs' terms: ``china`` or ``global``."""
    return "china" if region.strip().lower() in CHINA_REGIONS else "global"


@dataclass(frozen=True)
class SystemSpec:
    """One candidate system and the limits on getting it."""

    hardware: str                            #: bundled name or spec path
    max_units: int | None = None             #: at most this many units (None: no supply limit)
    available_from: dt.date | None = None    #: first date units can be had
    regions: tuple[str, ...] | None = None   #: regions it may be deployed in (None: any)
    usd_per_unit: float | None = None        #: price overrides (None: the spec's)
    usd_per_gpu_hour: float | None = None
    watts_per_gpu: float | None = None


@dataclass(frozen=True)
class SiteSpec:
    """The site's limits."""

    facility_mw: float | None = None         #: facility power cap (IT power x PUE), MW
    capex_budget_usd: float | None = None    #: cap on the purchase price of the fleet
    region: str | None = None                #: where the site is (checked against regions)
    needed_by: dt.date | None = None         #: date the fleet must serve (checked against dates)


@dataclass(frozen=True)
class PlanSpec:
    """A whole plan file, checked."""

    workloads: tuple[WorkloadSpec, ...]
    systems: tuple[SystemSpec, ...]
    site: SiteSpec = SiteSpec()
    years: float = DEFAULT_YEARS
    basis: str = "own"
    pue: float = DEFAULT_PUE
    usd_per_kwh: float = DEFAULT_USD_PER_KWH
    name: str = ""
    label: str = "<input>"


_DEMAND_KEYS = ("demand_tps", "users", "requests_per_s", "profile")


def _date(f: Fields, key: str) -> dt.date | None:
    v = f.raw(key, required=False)
    if v is None:
        return None
    if isinstance(v, dt.datetime):
        return v.date()
    if isinstance(v, dt.date):
        return v
    if isinstance(v, str):
        try:
            return dt.date.fromisoformat(v)
        except ValueError:
            pass
    raise SpecError(f.label, f.path(key), f"a date YYYY-MM-DD, got {v!r}")


def _names(f: Fields, key: str) -> tuple[str, ...] | None:
    v = f.raw(key, required=False)
    if v is None:
        return None
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not v or not all(isinstance(x, str) and x for x in v):
        raise SpecError(f.label, f.path(key), f"a list of names, got {v!r}")
    return tuple(v)


def _workload(f: Fields, base: Path | None) -> WorkloadSpec:
    name = f.text("name")
    model = f.text("model")
    level = f.number("min_tps_user")
    isl = f.number("isl", lo=1, lo_open=False, required=False, default=1024)
    osl = f.number("osl", lo=1, lo_open=False, required=False, default=1024)
    serving = f.text("serving", required=False, default="disaggregated", choices=SIZING_SERVING)
    max_ttft = f.number("max_ttft", required=False)
    if max_ttft is not None and serving != "disaggregated":
        raise SpecError(f.label, f.path("max_ttft"), "only with serving: disaggregated (it is the "
                        "prefill pool's limit)")
    given = [k for k in _DEMAND_KEYS if f.has(k)]
    if len(given) != 1:
        raise SpecError(f.label, f.path("demand_tps"), "exactly one of demand_tps (peak output tokens/s), "
                        "users (concurrent), requests_per_s or profile (24 hourly loads, or a file), got "
                        + (", ".join(given) or "none"))
    key = given[0]
    v = as_number(f.raw(key))
    try:
        if key == "profile":
            if isinstance(v, str):
                p = Path(v)
                demand = read_profile(p if p.is_absolute() or base is None else base / p)
            elif isinstance(v, Mapping):
                pf = Fields(v, f.label, f.path("profile"))
                unit = pf.text("unit", required=False, default="output_tps")
                hourly = pf.raw("hourly")
                pf.done()
                demand = make_demand(profile=hourly, profile_unit=unit)
            else:
                demand = make_demand(profile=v)
        else:
            demand = make_demand(**{key: v})
    except SpecError as exc:
        where = exc.where if exc.where != "<input>" else f.label
        raise SpecError(where, f.path(key) if exc.where == "<input>" else exc.field, exc.expected) from None
    search: dict[str, Any] = {}
    s = f.sub("search", required=False)
    if s is not None:
        for k in SEARCH_KEYS:
            if s.has(k):
                if k in ("gpus", "max_gpus", "tp_attn", "ep", "tp_moe"):
                    search[k] = s.integer(k)
                elif k in ("context", "acceptance"):
                    search[k] = s.number(k)
                else:
                    v = s.raw(k)
                    if not isinstance(v, str | int | float | bool):
                        raise SpecError(f.label, s.path(k), f"a single value (text, a number, true or "
                                        f"false), got {type(v).__name__}")
                    search[k] = v
        s.done()
    sessions = f.text("sessions", required=False)
    if sessions is not None:  # a workload of sessions (planner.specs.workload): it sets the lengths
        from planner.specs.workload import load_workload, parse_slo, parse_tiers, workload_names

        for k in ("isl", "osl", "max_ttft"):
            if f.has(k):
                raise SpecError(f.label, f.path(k), f"no {k} with sessions (the workload {sessions!r} sets "
                                "the lengths and the TTFT service level)")
        if sessions not in workload_names() and base is not None and not Path(sessions).is_absolute():
            sessions = str(base / sessions)  # a file beside the plan
        try:
            load_workload(sessions)
        except SpecError as exc:
            raise SpecError(f.label, f.path("sessions"), exc.expected) from None
        search["workload"] = sessions
        slo = f.text("slo", required=False)
        if slo is not None:
            search["slo"] = tuple(sorted(parse_slo(slo, f.label, f.path("slo")).items()))
        tiers = f.text("kv_tiers", required=False)
        if tiers is not None:
            search["kv_tiers"] = parse_tiers(tiers, f.label, f.path("kv_tiers"))
    else:
        for k in ("slo", "kv_tiers"):
            if f.has(k):
                raise SpecError(f.label, f.path(k), "sessions with it (a workload of sessions)")
    w = WorkloadSpec(name=name, model=model, min_tps_user=level, demand=demand, isl=isl, osl=osl,
                     serving=serving, max_ttft=max_ttft, systems=_names(f, "systems"),
                     search=tuple(sorted(search.items())))
    try:  # the question is checked once, here, as any scenario is where it is built
        w.scenario()
    except SpecError as exc:
        inner = f"search.{exc.field}" if exc.field in SEARCH_KEYS else exc.field
        raise SpecError(f.label, f.path(inner), exc.expected) from None
    return w


def _system(f: Fields) -> SystemSpec:
    return SystemSpec(hardware=f.text("hardware"),
                      max_units=f.integer("max_units", required=False, minimum=0),
                      available_from=_date(f, "available_from"), regions=_names(f, "regions"),
                      usd_per_unit=f.number("usd_per_unit", required=False),
                      usd_per_gpu_hour=f.number("usd_per_gpu_hour", required=False),
                      watts_per_gpu=f.number("watts_per_gpu", required=False))


def _check_site_region(region: str, systems: Sequence[SystemSpec], label: str) -> None:
    """``site.region`` is a name the plan itself defines: it is checked against the regions the
    plan's systems restrict themselves to (``systems[].regions``) and, in the specs' terms, is
    ``china`` when it is one of China's names (:data:`CHINA_REGIONS`) and ``global`` otherwise.

    Where some system lists regions, the site's must be one of the names listed or a specs' term
    or China's name: a name outside them (``usa`` beside ``[us, eu]``) matches no restriction and
    is most likely a slip.  Where no system lists regions there is nothing to match: any name is
    a site (``us``, ``de``), except one a letter or two from China's names (``chna``), which would
    otherwise count as ``global`` and admit the parts sold outside China only."""
    listed = {r for s in systems for r in (s.regions or ())}
    known = listed | set(REGIONS) | set(CHINA_REGIONS)
    if region in known or spec_region(region) == "china":
        return
    if listed:
        raise SpecError(label, "site.region", f"a region its systems or the specs name ("
                        f"{', '.join(sorted(known))}), got {region!r}")
    close = difflib.get_close_matches(region.strip().lower(), CHINA_REGIONS, n=1, cutoff=0.75)
    if close:
        raise SpecError(label, "site.region", f"{close[0]!r} if the site is in China (a name a letter or two "
                        f"from it counts as outside China), got {region!r}")


def read_plan(source: str | Path | Mapping[str, Any], label: str | None = None) -> PlanSpec:
    """A plan from a YAML file or a mapping of the same shape, checked strictly (unknown keys
    refused with the closest known name):

    ``workloads`` (list: ``name``, ``model``, ``min_tps_user``, one of ``demand_tps`` /
    ``users`` / ``requests_per_s`` / ``profile``, optional ``isl``, ``osl``, ``serving``,
    ``max_ttft``, ``systems``, ``search``), ``systems`` (list: ``hardware``, optional
    ``max_units``, ``available_from``, ``regions``, ``usd_per_unit``, ``usd_per_gpu_hour``,
    ``watts_per_gpu``), optional ``site`` (``facility_mw``, ``capex_budget_usd``, ``region``,
    ``needed_by``), ``years``, ``basis`` (own or rental), ``pue``, ``usd_per_kwh``, ``name``.
    """
    base = None
    if isinstance(source, Mapping):
        doc, label = source, label or "<input>"
    else:
        label = label or str(source)
        doc = read_yaml(source, label)
        base = Path(source).resolve().parent
    f = Fields(doc, label)
    name = f.text("name", required=False, default="")
    years = f.number("years", required=False, default=DEFAULT_YEARS, hi=MAX_YEARS)
    basis = f.text("basis", required=False, default="own", choices=BASES)
    pue = f.number("pue", lo=1.0, lo_open=False, required=False, default=DEFAULT_PUE, hi=MAX_PUE)
    kwh = f.number("usd_per_kwh", lo=0.0, lo_open=False, required=False, default=DEFAULT_USD_PER_KWH,
                   hi=MAX_USD_PER_KWH)
    site = SiteSpec()
    sf = f.sub("site", required=False)
    if sf is not None:
        site = SiteSpec(facility_mw=sf.number("facility_mw", required=False),
                        capex_budget_usd=sf.number("capex_budget_usd", required=False),
                        region=sf.text("region", required=False),
                        needed_by=_date(sf, "needed_by"))
        sf.done()
    workloads, systems = [], []
    for key, out, read in (("workloads", workloads, lambda g: _workload(g, base)),
                           ("systems", systems, _system)):
        items = f.raw(key)
        if not isinstance(items, list) or not items:
            raise SpecError(label, key, f"a non-empty list, got {items!r}")
        for i, item in enumerate(items):
            g = Fields(item, label, f"{key}[{i}]")
            out.append(read(g))
            g.done()
    f.done()
    if site.region is not None:
        _check_site_region(site.region, systems, label)
    seen: set[str] = set()
    for i, w in enumerate(workloads):
        if w.name in seen:
            raise SpecError(label, f"workloads[{i}].name", f"a name of its own, {w.name!r} is used twice")
        seen.add(w.name)
    return PlanSpec(workloads=tuple(workloads), systems=tuple(systems), site=site, years=years, basis=basis,
                    pue=pue, usd_per_kwh=kwh, name=name, label=label)


# ---- the integer program on plain numbers -------------------------------------------------------
@dataclass(frozen=True)
class PoolShape:
    """One pool as the integer program sees it: blocks of ``block_units`` units serving
    ``block_tps`` output tokens/s each (the densest whole-instance arrangement of the pool's
    configuration), and at most one smaller remainder, ``(units, tokens/s)`` pairs."""

    workload: int
    system: int
    block_units: int
    block_tps: float
    remainders: tuple[tuple[int, float], ...] = ()


@dataclass(frozen=True)
class Limits:
    """The limits of one solve: units per system (None: none), facility watts, capex USD."""

    max_units: tuple[int | None, ...]
    facility_w: float | None = None
    capex_usd: float | None = None


@dataclass(frozen=True)
class Mix:
    """A solution: per pool the units, the whole blocks, the remainder's units and the output
    tokens/s the pool holds; and the objective's value."""

    units: tuple[int, ...]
    blocks: tuple[int, ...]
    remainder: tuple[int, ...]
    capacity: tuple[float, ...]
    objective: float


def solve_mix(shapes: Sequence[PoolShape], demand: Sequence[float], per_unit: Sequence[float],
              limits: Limits, *, watts_per_unit: Sequence[float] = (), capex_per_unit: Sequence[float] = (),
              ) -> Mix | None:
    """The whole units of every pool that serve each workload's ``demand`` (output tokens/s)
    within ``limits`` at the least ``sum(units x per_unit[system])``; None when no mix meets
    them.  ``watts_per_unit`` and ``capex_per_unit`` (per system) are needed for the power and
    capex limits.  Variables per pool: whole blocks (integer) and one binary per remainder size
    (at most one taken)."""
    from scipy.optimize import LinearConstraint, milp

    cols: list[tuple[int, int, float, bool]] = []  # (pool, units, tokens/s, binary)
    for k, s in enumerate(shapes):
        cols.append((k, s.block_units, s.block_tps, False))
        cols.extend((k, r, t, True) for r, t in s.remainders if r < s.block_units and t > 0)
    if not cols:
        return None
    n = len(cols)
    c = np.array([u * per_unit[shapes[k].system] for k, u, _, _ in cols], dtype=float)
    if not np.isfinite(c).all():
        raise SpecError("<input>", "costs", "finite costs per unit (a price, PUE, energy price or horizon "
                        "beyond any real one)")
    ub = np.empty(n)
    for i, (k, _u, _t, binary) in enumerate(cols):
        ub[i] = 1.0 if binary else math.ceil(demand[shapes[k].workload] / shapes[k].block_tps * (1 - 1e-12))
    rows: list[tuple[np.ndarray, float, float]] = []

    def row(coef: dict[int, float], lo: float, hi: float) -> None:
        v = np.zeros(n)
        for j, x in coef.items():
            v[j] = x
        rows.append((v, lo, hi))

    for k in range(len(shapes)):  # at most one remainder per pool
        rem = [i for i, col in enumerate(cols) if col[0] == k and col[3]]
        if len(rem) > 1:
            row({i: 1.0 for i in rem}, -np.inf, 1.0)
    for w, dem in enumerate(demand):  # each workload's peak, in units of its peak
        coef = {i: t / dem for i, (k, _, t, _) in enumerate(cols) if shapes[k].workload == w}
        if not coef:
            return None
        row(coef, 1.0 - 1e-12, np.inf)
    for j, cap in enumerate(limits.max_units):
        if cap is not None:
            coef = {i: float(u) for i, (k, u, _, _) in enumerate(cols) if shapes[k].system == j}
            if coef:
                row(coef, -np.inf, cap)
    if limits.facility_w is not None:  # in MW, so the row is well scaled
        row({i: u * watts_per_unit[shapes[k].system] / 1e6 for i, (k, u, _, _) in enumerate(cols)}, -np.inf,
            limits.facility_w / 1e6 * (1 + 1e-12))
    if limits.capex_usd is not None:  # in $M
        row({i: u * capex_per_unit[shapes[k].system] / 1e6 for i, (k, u, _, _) in enumerate(cols)}, -np.inf,
            limits.capex_usd / 1e6 * (1 + 1e-12))
    scale = max(float(np.max(np.abs(c))), 1e-300)
    res = milp(c / scale, integrality=np.ones(n), bounds=(np.zeros(n), ub),
               constraints=LinearConstraint(np.array([r[0] for r in rows]), [r[1] for r in rows],
                                            [r[2] for r in rows]) if rows else None,
               options={"mip_rel_gap": 1e-9, "time_limit": 120.0})
    if res.x is None or res.status not in (0, 1):
        return None
    x = np.round(res.x).astype(int)
    units = [0] * len(shapes)
    blocks = [0] * len(shapes)
    rem = [0] * len(shapes)
    cap = [0.0] * len(shapes)
    for v, (k, u, t, binary) in zip(x, cols, strict=True):
        units[k] += int(v) * u
        cap[k] += int(v) * t
        if binary:
            rem[k] += int(v) * u
        else:
            blocks[k] = int(v)
    return Mix(units=tuple(units), blocks=tuple(blocks), remainder=tuple(rem), capacity=tuple(cap),
               objective=float(sum(u * per_unit[s.system] for u, s in zip(units, shapes, strict=True))))


#: the largest block of units searched for a pool's densest arrangement
MAX_BLOCK = 16


def pool_shape(workload: int, system: int, perf: Mapping[str, Any], demand_tps: float) -> PoolShape | None:
    """A configuration's pool for the integer program, from the whole-instance capacity of n
    units (:func:`planner.economics.pools.max_load`) for n up to :data:`MAX_BLOCK` (or the units
    serving the demand alone, if fewer; at least the units one instance of each pool needs): the
    block is the smallest n with the most output per unit; smaller counts are the remainders."""
    alone = plan_pools(demand_tps, **perf)["units"]
    one_set = units_for(1, perf["decode_instance_gpus"], int(perf.get("prefill_tps_per_gpu") is not None),
                        perf.get("prefill_instance_gpus"), gpus_per_unit=perf["gpus_per_unit"],
                        domain_size=perf["domain_size"])
    top = max(1, min(MAX_BLOCK, alone), one_set)
    caps = [max_load(n, **perf) for n in range(1, top + 1)]
    dens = [cp / n for n, cp in enumerate(caps, start=1)]
    best = max(dens)
    if best <= 0:  # not one set of instances fits in the units searched
        return None
    b = next(n for n, d in enumerate(dens, start=1) if d >= best * (1 - 1e-9))
    rems = tuple((n, caps[n - 1]) for n in range(1, b) if caps[n - 1] > 0)
    return PoolShape(workload=workload, system=system, block_units=b, block_tps=caps[b - 1], remainders=rems)


# ---- the plan's problem: systems, options, pools --------------------------------------------------
@dataclass
class _System:
    spec: SystemSpec
    hw: Hardware
    excluded: str = ""      #: why it cannot be used here ('' when it can)


class Problem:
    """A plan file made ready to solve: the systems that may be used, each workload's pools
    from the systems' frontiers at its service level, and the cost coefficients.  ``efficiency``
    replaces systems' realistic-mode efficiencies (by system name), for the sensitivity."""

    def __init__(self, spec: PlanSpec, efficiency: Mapping[str, Mapping[str, Any]] | None = None,
                 years: float | None = None, basis: str | None = None,
                 usd_per_kwh: float | None = None) -> None:
        self.spec = spec
        self.years = float(spec.years if years is None else years)
        self.basis = spec.basis if basis is None else basis
        self.usd_per_kwh = float(spec.usd_per_kwh if usd_per_kwh is None else usd_per_kwh)
        if self.basis not in BASES:
            raise SpecError("<input>", "basis", f"one of {', '.join(BASES)}, got {self.basis!r}")
        label = spec.label
        try:
            hws = load_systems([s.hardware for s in spec.systems], "systems")
        except SpecError as exc:
            raise SpecError(label, f"systems: {exc.field}" if exc.where == "<input>" else exc.where,
                            exc.expected) from None
        if efficiency:
            hws = [h.replace(efficiency=dict(efficiency[h.name])) if h.name in efficiency else h for h in hws]
        self.systems = [_System(s, h, self._exclusion(s, h)) for s, h in zip(spec.systems, hws, strict=True)]
        for j, s in enumerate(self.systems):
            for key in ("usd_per_unit", "usd_per_gpu_hour", "watts_per_gpu"):
                if getattr(s.spec, key) is not None:
                    check_override(getattr(s.spec, key), s.hw, key, label, f"systems[{j}].{key}")
        names = [s.hw.name for s in self.systems]
        for i, w in enumerate(spec.workloads):
            for n in w.systems or ():
                if n not in names and n not in [s.hardware for s in spec.systems]:
                    raise SpecError(label, f"workloads[{i}].systems", f"names of the plan's systems "
                                    f"({', '.join(names)}), got {n!r}")
        usable = [s for s in self.systems if not s.excluded]
        self.options: list[dict[int, Option]] = []   # per workload: system index -> option
        self.figures: dict[str, dict[str, Any]] = {}
        cache: dict[tuple[Any, ...], tuple[list[Option], dict[str, Any]]] = {}
        for i, w in enumerate(spec.workloads):
            allowed = [s for s in usable if w.systems is None or s.hw.name in w.systems
                       or s.spec.hardware in w.systems]
            key = (w.model, w.serving, w.isl, w.osl, w.max_ttft, w.search, tuple(s.hw.name for s in allowed))
            if key not in cache and allowed:
                over = {f: {s.hw.name: getattr(s.spec, f) for s in allowed if getattr(s.spec, f) is not None}
                        for f in ("usd_per_unit", "usd_per_gpu_hour", "watts_per_gpu")}
                costs = Costs(pue=spec.pue, usd_per_kwh=self.usd_per_kwh, years=self.years,
                              usd_per_unit=over["usd_per_unit"] or None,
                              usd_per_gpu_hour=over["usd_per_gpu_hour"] or None,
                              watts_per_gpu=over["watts_per_gpu"] or None, basis=self.basis)
                try:
                    _, opts, attrs = setup(w.scenario([s.hw for s in allowed]), costs)
                except SpecError as exc:
                    field = f"workloads[{i}].{exc.field}" if exc.where == "<input>" else exc.field
                    raise SpecError(label if exc.where == "<input>" else exc.where, field,
                                    exc.expected) from None
                cache[key] = (opts, attrs)
                self.figures.update(attrs["figures"])
            opts = cache[key][0] if allowed else []
            idx = {s.hw.name: j for j, s in enumerate(self.systems)}
            self.options.append({idx[o.hw.name]: o for o in opts})
        for s in self.systems:  # the figures of systems no workload could use, for the sources
            if s.hw.name not in self.figures and not s.excluded:
                from planner.economics.cost import figures

                self.figures[s.hw.name] = figures(
                    s.hw, pue=spec.pue, usd_per_kwh=self.usd_per_kwh, years=self.years,
                    usd_per_unit=s.spec.usd_per_unit, usd_per_gpu_hour=s.spec.usd_per_gpu_hour,
                    watts_per_gpu=s.spec.watts_per_gpu)
        self.pools: list[tuple[PoolShape, dict[str, Any]]] = []
        self.peak, self.mean = [], []
        for i, w in enumerate(spec.workloads):
            level = check_level(w.min_tps_user)
            peak, mean = w.demand.peak_mean(level, w.osl)
            self.peak.append(peak)
            self.mean.append(mean)
            for j, o in self.options[i].items():
                for c in _useful(o.candidates(level)):
                    shape = pool_shape(i, j, o.perf(c), peak)
                    if shape is not None:
                        self.pools.append((shape, c))
        for i in range(len(spec.workloads)):
            if not any(sh.workload == i for sh, _ in self.pools):
                raise SpecError(label, f"workloads[{i}].min_tps_user", self._unreachable(i))

    def _exclusion(self, s: SystemSpec, hw: Hardware) -> str:
        site = self.spec.site
        if site.region is not None and s.regions is not None and site.region not in s.regions:
            return f"not permitted in region {site.region} (allowed: {', '.join(s.regions)})"
        if site.region is not None and s.regions is None and not hw.sold_in(spec_region(site.region)):
            return (f"not sold in region {site.region} ({spec_region(site.region)} in the spec's "
                    f"system.regions terms; the spec allows {', '.join(hw.regions)})")
        if site.needed_by is not None and s.available_from is not None and s.available_from > site.needed_by:
            return f"available from {s.available_from}, after the site's needed_by {site.needed_by}"
        if s.max_units == 0:
            return "supply limit of 0 units"
        return ""

    def _unreachable(self, i: int) -> str:
        w = self.spec.workloads[i]
        best = "; ".join(f"{self.systems[j].hw.name}: {o.reason(w.min_tps_user)}"
                         for j, o in self.options[i].items())
        out = [f"a service level some allowed system meets for workload {w.name!r} (asked >= "
               f"{w.min_tps_user:g} tokens/s/user)"]
        if best:
            out.append(f"best each can do: {best}")
        ex = [f"{s.hw.name}: {s.excluded}" for s in self.systems if s.excluded]
        if ex:
            out.append("excluded: " + "; ".join(ex))
        return "; ".join(out)

    # -- coefficients
    def money(self, j: int) -> dict[str, float]:
        f = self.figures[self.systems[j].hw.name]
        return dict(power_per_gpu=f["power_per_gpu"]["value"], price_per_unit=f["price_per_unit"]["value"],
                    price_per_gpu_hour=f["price_per_gpu_hour"]["value"], pue=self.spec.pue,
                    usd_per_kwh=self.usd_per_kwh, years=self.years)

    def coefficients(self, kwh_factor: float = 1.0) -> dict[str, list[float]]:
        """Per system and unit: cost over the years on the plan's basis, facility W, capex."""
        cost, watts, capex = [], [], []
        for j, s in enumerate(self.systems):
            if s.hw.name not in self.figures:
                cost.append(0.0), watts.append(0.0), capex.append(0.0)
                continue
            m = self.money(j)
            g = s.hw.gpus_per_unit
            w = g * m["power_per_gpu"] * m["pue"]
            energy = w / 1e3 * HOURS_PER_YEAR * m["usd_per_kwh"] * kwh_factor
            rental = m["price_per_gpu_hour"] * g * HOURS_PER_YEAR
            cost.append(m["price_per_unit"] + energy * self.years if self.basis == "own"
                        else rental * self.years)
            watts.append(w)
            capex.append(m["price_per_unit"])
        return dict(cost=cost, watts=watts, capex=capex)

    def limits(self, max_units: Mapping[int, int | None] | None = None, facility_mw: Any = "site",
               capex_budget_usd: Any = "site") -> Limits:
        caps = [s.spec.max_units for s in self.systems]
        for j, v in (max_units or {}).items():
            caps[j] = v
        mw = self.spec.site.facility_mw if facility_mw == "site" else facility_mw
        budget = self.spec.site.capex_budget_usd if capex_budget_usd == "site" else capex_budget_usd
        if self.basis == "rental":
            budget = None  # nothing is bought
        return Limits(max_units=tuple(caps), facility_w=None if mw is None else mw * 1e6, capex_usd=budget)

    def solve(self, limits: Limits | None = None, kwh_factor: float = 1.0, objective: str = "cost"
              ) -> Mix | None:
        co = self.coefficients(kwh_factor)
        per_unit = {"cost": co["cost"], "watts": co["watts"], "capex": co["capex"]}.get(objective)
        if per_unit is None:  # 'units:J' -- the units of system J
            j = int(objective.split(":")[1])
            per_unit = [1.0 if i == j else 1e-9 for i in range(len(self.systems))]
        return solve_mix([sh for sh, _ in self.pools], self.peak, per_unit, limits or self.limits(),
                         watts_per_unit=co["watts"], capex_per_unit=co["capex"])

    def units_by_system(self, mix: Mix) -> list[int]:
        out = [0] * len(self.systems)
        for (sh, _), u in zip(self.pools, mix.units, strict=True):
            out[sh.system] += u
        return out

    # -- infeasibility
    def diagnose(self) -> SpecError:
        """Which limit makes the plan infeasible, and by how much: each limit lifted in turn, the
        least of it a feasible plan needs under the others; where no single one suffices, the
        least of each with all of them lifted."""
        label = self.spec.label
        co = self.coefficients()
        checks: list[tuple[str, str, Limits, str, float, Any]] = []
        base = self.limits()
        for j, s in enumerate(self.systems):
            if base.max_units[j] is not None and not s.excluded:
                caps = list(base.max_units)
                caps[j] = None
                checks.append((f"systems[{j}].max_units", f"supply of {s.hw.name}",
                               Limits(tuple(caps), base.facility_w, base.capex_usd), f"units:{j}",
                               float(base.max_units[j]), s.hw.unit))
        if base.facility_w is not None:
            checks.append(("site.facility_mw", "site power", Limits(base.max_units, None, base.capex_usd),
                           "watts", base.facility_w, "W"))
        if base.capex_usd is not None:
            checks.append(("site.capex_budget_usd", "capex budget",
                           Limits(base.max_units, base.facility_w, None), "capex", base.capex_usd, "USD"))

        def need(mix: Mix, objective: str) -> float:
            units = self.units_by_system(mix)
            if objective.startswith("units:"):
                return float(units[int(objective.split(":")[1])])
            key = "watts" if objective == "watts" else "capex"
            return float(sum(u * co[key][j] for j, u in enumerate(units)))

        def say(name: str, amount: float, have: float, unit: str) -> str:
            if unit == "W":
                return (f"{name} needs at least {amount / 1e6:.4g} MW, the site has {have / 1e6:.4g} MW "
                        f"(short by {(amount - have) / 1e6:.4g} MW)")
            if unit == "USD":
                return (f"{name} needs at least ${amount / 1e6:,.4g}M, the budget is ${have / 1e6:,.4g}M "
                        f"(short by ${(amount - have) / 1e6:,.4g}M)")
            return (f"{name} needs at least {amount:.0f} {unit}s, at most {have:.0f} available "
                    f"(short by {amount - have:.0f})")

        alone = []
        for field_, name, lim, obj, have, unit in checks:
            mix = self.solve(lim, objective=obj)
            if mix is not None:
                alone.append((field_, say(name, need(mix, obj), have, unit)))
        if alone:
            fields = ", ".join(f for f, _ in alone)
            return SpecError(label, fields, "a plan that meets every workload's service level within the "
                             "limits; lifting any one of these alone would do: "
                             + "; ".join(t for _, t in alone))
        free = Limits(tuple(None for _ in self.systems))
        parts = []
        for _field, name, _, obj, have, unit in checks:
            mix = self.solve(free, objective=obj)
            if mix is not None:
                parts.append(say(name, need(mix, obj), have, unit))
        fields = ", ".join(c[0] for c in checks) or "systems"
        return SpecError(label, fields, "a plan within the limits; no single limit is enough to lift: with "
                         "all of them lifted, " + "; ".join(parts))


def _useful(cands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The candidates worth a pool: none of them beaten by another with at least its output per
    GPU and at most its GPUs per set of instances (ties keep the finer one)."""
    def size(c: dict[str, Any]) -> int:
        return int(c["instance_gpus"]) + int(c["prefill_instance_gpus"] or 0)

    out: list[dict[str, Any]] = []
    for c in sorted(cands, key=lambda c: (size(c), -c["tps_per_gpu"])):
        if all(c["tps_per_gpu"] > o["tps_per_gpu"] * (1 + 1e-9) for o in out):
            out.append(c)
    return out


# ---- the result ------------------------------------------------------------------------------------
@dataclass
class FleetPlan:
    """The cheapest mix: ``systems`` (one row per candidate system: units, GPUs, power, money,
    limit), ``pools`` (one row per pool in use: workload, system, configuration, units,
    instances, capacity), ``workloads`` (one row each: demand, capacity, headroom, $/Mtok),
    ``totals``, every ``limits`` row (used, limit, left, binding, what lifting it saves),
    ``binding`` (the limits whose lifting lowers the cost), ``figures`` (each price and power
    with its source), ``sensitivity`` (a DataFrame once :func:`planner.fleet.sensitivity.sensitivity`
    has run)."""

    spec: PlanSpec
    basis: str
    years: float
    usd_per_kwh: float
    systems: pd.DataFrame
    pools: pd.DataFrame
    workloads: pd.DataFrame
    totals: dict[str, Any]
    limits: pd.DataFrame
    binding: list[str]
    figures: dict[str, dict[str, Any]]
    problem: Problem = field(repr=False)
    mix: Mix = field(repr=False)
    sensitivity: pd.DataFrame | None = None
    #: per row of ``pools``: (the option it was priced on, its configuration, the service level)
    chosen: list[tuple[Option, dict[str, Any], float]] = field(default_factory=list, repr=False)

    def recipe_sources(self) -> list[Any]:
        """Each pool as :class:`planner.economics.recipes.PoolSource`, in the order of ``pools``
        (for its launch recipe)."""
        from planner.economics.recipes import PoolSource

        out = []
        for (o, c, level), p in zip(self.chosen, self.pools.to_dict("records"), strict=True):
            extra = {k: _plain(p[k]) for k in ("workload", "system", "units", "unit", "gpus", "capacity_tps",
                                               "peak_share_tps")}
            label = f"{p['workload']} on {p['system']} ({int(p['instance_gpus'])} GPUs an instance)"
            slug = f"{p['workload']}-{p['system']}"
            out.append(PoolSource(option=o, c=c, level=level, label=label, slug=slug,
                                  decode_instances=int(p["decode_instances"]),
                                  prefill_instances=int(p["prefill_instances"]),
                                  extra=dict(extra, plan=self.spec.name or self.spec.label)))
        return out

    def to_dict(self) -> dict[str, Any]:
        """Everything as JSON-ready values (no NaN: missing values are None)."""
        def rec(df: pd.DataFrame) -> list[dict[str, Any]]:
            return [{k: _plain(v) for k, v in r.items()} for r in df.to_dict("records")]

        # each workload with the question it asks of the plan's systems (its scenario)
        asked = {w.name: w.scenario(w.systems or [s.hardware for s in self.spec.systems]).to_dict()
                 for w in self.spec.workloads}
        workloads = [{**r, "scenario": asked.get(r.get("workload"))} for r in rec(self.workloads)]
        out = dict(settings=dict(plan=self.spec.label, name=self.spec.name, basis=self.basis,
                                 years=self.years, pue=self.spec.pue, usd_per_kwh=self.usd_per_kwh,
                                 site={k: _plain(v) for k, v in vars(self.spec.site).items()}),
                   totals={k: _plain(v) for k, v in self.totals.items()}, binding=self.binding,
                   systems=rec(self.systems), pools=rec(self.pools), workloads=workloads,
                   limits=rec(self.limits), figures=self.figures)
        if self.sensitivity is not None:
            out["sensitivity"] = rec(self.sensitivity)
        return out


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, tuple):
        return list(v)
    return v


def _result(pr: Problem, mix: Mix) -> FleetPlan:
    spec = pr.spec
    co = pr.coefficients()
    pool_rows = []
    chosen = []
    cap_w = [0.0] * len(spec.workloads)
    for (sh, _), cap in zip(pr.pools, mix.capacity, strict=True):
        cap_w[sh.workload] += cap
    per_w: list[dict[str, float]] = [dict(yearly_own=0.0, yearly_rental=0.0) for _ in spec.workloads]
    for k, ((sh, c), u) in enumerate(zip(pr.pools, mix.units, strict=True)):
        if not u:
            continue
        w, s = spec.workloads[sh.workload], pr.systems[sh.system]
        perf = pr.options[sh.workload][sh.system].perf(c)
        cap = mix.capacity[k]
        inst = dict(decode_instances=0, prefill_instances=0)
        part: dict[str, int] = {}   # the instances of one block and of the remainder
        for tag, count, n in (("block", mix.blocks[k], sh.block_units), ("remainder", 1, mix.remainder[k])):
            got = plan_pools(max_load(n, **perf), **perf) if count and n else dict(decode_instances=0,
                                                                                    prefill_instances=0)
            for key in inst:
                inst[key] += count * int(got[key])
                part[f"{tag}_{key}"] = int(got[key])
        share = cap / cap_w[sh.workload]
        peak, mean = pr.peak[sh.workload] * share, pr.mean[sh.workload] * share
        money = economics(units=u, gpus_per_unit=s.hw.gpus_per_unit, peak_tps=peak, mean_tps=mean,
                          capacity_tps=cap, **pr.money(sh.system))
        per_w[sh.workload]["yearly_own"] += money["capex_usd"] / pr.years + money["opex_usd_per_year"]
        per_w[sh.workload]["yearly_rental"] += money["rental_usd_per_year"]
        chosen.append((pr.options[sh.workload][sh.system], c, check_level(w.min_tps_user)))
        pool_rows.append(dict(
            workload=w.name, system=s.hw.name, model=w.model, serving=w.serving, min_tps_user=w.min_tps_user,
            units=u, unit=s.hw.unit, gpus=u * s.hw.gpus_per_unit, block_units=sh.block_units,
            blocks=mix.blocks[k], remainder_units=mix.remainder[k], tps_per_user=c["tps_per_user"],
            tps_per_gpu=c["tps_per_gpu"], weights=c.get("weights"), instance_gpus=c["instance_gpus"],
            decode_instances=inst["decode_instances"], prefill_instance_gpus=c["prefill_instance_gpus"],
            prefill_instances=inst["prefill_instances"], capacity_tps=cap, peak_share_tps=peak,
            mean_share_tps=mean, it_mw=money["it_power_mw"], facility_mw=money["power_mw"],
            capex_usd=money["capex_usd"], energy_usd_per_year=money["opex_usd_per_year"],
            rental_usd_per_year=money["rental_usd_per_year"], bottleneck=c.get("bottleneck"),
            solved_exactly=c["solved_exactly"], **part,
            decode_tps_per_instance=perf["decode_tps_per_gpu"] * perf["decode_instance_gpus"],
            prefill_output_tps_per_instance=(perf["prefill_tps_per_gpu"] * perf["prefill_instance_gpus"]
                                             * perf["osl"] / perf["isl"]
                                             if perf["prefill_tps_per_gpu"] is not None else None),
            search=pr.options[sh.workload][sh.system].pts.attrs.get("search", "limit")))
    pools_df = pd.DataFrame(pool_rows)
    units = pr.units_by_system(mix)
    sys_rows = []
    for j, s in enumerate(pr.systems):
        m = pr.money(j) if s.hw.name in pr.figures else None
        n = units[j]
        money = economics(units=n, gpus_per_unit=s.hw.gpus_per_unit, peak_tps=1.0, mean_tps=1.0,
                          capacity_tps=1.0, **m) if m else {}
        sys_rows.append(dict(
            system=s.hw.name, unit=s.hw.unit, units=n, gpus=n * s.hw.gpus_per_unit,
            max_units=s.spec.max_units,
            units_left=(None if s.spec.max_units is None else s.spec.max_units - n),
            available_from=s.spec.available_from,
            regions=",".join(s.spec.regions) if s.spec.regions else None,
            excluded=s.excluded, gpus_per_unit=s.hw.gpus_per_unit,
            usd_per_unit=m["price_per_unit"] if m else None,
            usd_per_gpu_hour=m["price_per_gpu_hour"] if m else None,
            watts_per_gpu=m["power_per_gpu"] if m else None, it_mw=money.get("it_power_mw", 0.0),
            facility_mw=money.get("power_mw", 0.0), capex_usd=money.get("capex_usd", 0.0),
            energy_usd_per_year=money.get("opex_usd_per_year", 0.0),
            rental_usd_per_year=money.get("rental_usd_per_year", 0.0),
            cost_usd=n * co["cost"][j]))
    sys_df = pd.DataFrame(sys_rows)
    wl_rows = []
    for i, w in enumerate(spec.workloads):
        tokens_m = pr.mean[i] * SECONDS_PER_YEAR / 1e6
        on = pools_df[pools_df.workload == w.name] if not pools_df.empty else pools_df
        wl_rows.append(dict(
            workload=w.name, model=w.model, serving=w.serving, isl=w.isl, osl=w.osl,
            min_tps_user=w.min_tps_user,
            demand=w.demand.describe(), peak_tps=pr.peak[i], mean_tps=pr.mean[i], capacity_tps=cap_w[i],
            headroom=cap_w[i] / pr.peak[i] - 1.0,
            systems=", ".join(f"{r.system} x{int(r.units)}" for r in on.itertuples()),
            usd_per_mtok_owned=per_w[i]["yearly_own"] / tokens_m,
            usd_per_mtok_rental=per_w[i]["yearly_rental"] / tokens_m))
    wl_df = pd.DataFrame(wl_rows)
    capex = float(sys_df.capex_usd.sum())
    energy = float(sys_df.energy_usd_per_year.sum())
    rental = float(sys_df.rental_usd_per_year.sum())
    totals = dict(cost_usd=mix.objective, cost_owned_usd=capex + energy * pr.years,
                  cost_rental_usd=rental * pr.years, capex_usd=capex, energy_usd_per_year=energy,
                  rental_usd_per_year=rental, it_mw=float(sys_df.it_mw.sum()),
                  facility_mw=float(sys_df.facility_mw.sum()), units=int(sum(units)),
                  gpus=int(sys_df.gpus.sum()))
    lim_df, binding = _limits(pr, mix, units, totals)
    return FleetPlan(spec=spec, basis=pr.basis, years=pr.years, usd_per_kwh=pr.usd_per_kwh, systems=sys_df,
                     pools=pools_df, workloads=wl_df, totals=totals, limits=lim_df, binding=binding,
                     figures=pr.figures, problem=pr, mix=mix, chosen=chosen)


def _limits(pr: Problem, mix: Mix, units: list[int], totals: dict[str, Any]
            ) -> tuple[pd.DataFrame, list[str]]:
    """Every limit: used, limit, left, and the saving over the years when it is lifted (one unit
    more for a supply limit, the limit removed for the others); binding where that saves."""
    base = pr.limits()
    rows = []
    tol = 1e-9 * max(mix.objective, 1.0)
    for j, s in enumerate(pr.systems):
        cap = base.max_units[j]
        if cap is None or s.excluded:
            continue
        caps = list(base.max_units)
        caps[j] = cap + 1
        more = pr.solve(Limits(tuple(caps), base.facility_w, base.capex_usd))
        caps[j] = None
        free = pr.solve(Limits(tuple(caps), base.facility_w, base.capex_usd))
        rows.append(dict(limit=f"supply of {s.hw.name}", field=f"systems[{j}].max_units",
                         used=float(units[j]),
                         limit_value=float(cap), left=float(cap - units[j]), unit=s.hw.unit,
                         saving_one_more_usd=mix.objective - more.objective if more else 0.0,
                         saving_lifted_usd=mix.objective - free.objective if free else 0.0))
    if base.facility_w is not None:
        free = pr.solve(Limits(base.max_units, None, base.capex_usd))
        rows.append(dict(limit="site power", field="site.facility_mw", used=totals["facility_mw"],
                         limit_value=base.facility_w / 1e6,
                         left=base.facility_w / 1e6 - totals["facility_mw"],
                         unit="MW", saving_one_more_usd=None,
                         saving_lifted_usd=mix.objective - free.objective if free else 0.0))
    if base.capex_usd is not None:
        free = pr.solve(Limits(base.max_units, base.facility_w, None))
        rows.append(dict(limit="capex budget", field="site.capex_budget_usd", used=totals["capex_usd"],
                         limit_value=base.capex_usd, left=base.capex_usd - totals["capex_usd"], unit="USD",
                         saving_one_more_usd=None,
                         saving_lifted_usd=mix.objective - free.objective if free else 0.0))
    df = pd.DataFrame(rows, columns=["limit", "field", "used", "limit_value", "left", "unit",
                                     "saving_one_more_usd", "saving_lifted_usd"])
    df["binding"] = df.saving_lifted_usd.astype(float) > tol
    return df, [str(x) for x in df.limit[df.binding]]


# ---- API -------------------------------------------------------------------------------------------
def plan(source: str | Path | Mapping[str, Any] | PlanSpec | None = None, *,
         workloads: Sequence[Mapping[str, Any]] | None = None,
         systems: Sequence[Mapping[str, Any]] | None = None,
         site: Mapping[str, Any] | None = None, years: float | None = None, basis: str | None = None,
         rental: bool = False, usd_per_kwh: float | None = None) -> FleetPlan:
    """The cheapest fleet for a plan: a plan file (path), a mapping of the same shape, a
    :class:`PlanSpec`, or ``workloads=``, ``systems=`` and ``site=`` given directly (lists and a
    mapping as in the file; see :func:`read_plan`).  ``years``, ``basis`` (``rental=True`` is
    ``basis='rental'``) and ``usd_per_kwh`` override the file's.

    Raises SpecError naming the limit that makes the plan infeasible and by how much, or the
    workload whose service level no allowed system meets.
    """
    if isinstance(source, PlanSpec):
        spec = source
    elif source is not None:
        if workloads is not None or systems is not None or site is not None:
            raise SpecError("<input>", "plan", "a plan file or workloads=/systems=/site=, not both")
        spec = read_plan(source)
    else:
        doc: dict[str, Any] = dict(workloads=list(workloads or []), systems=list(systems or []))
        if site is not None:
            doc["site"] = dict(site)
        spec = read_plan(doc)
    if rental:
        if basis not in (None, "rental"):
            raise SpecError("<input>", "basis", "rental=True or basis='own', not both")
        basis = "rental"
    if years is not None:
        check_years(years)
    if usd_per_kwh is not None and not (
            isinstance(usd_per_kwh, int | float) and not isinstance(usd_per_kwh, bool)
            and math.isfinite(usd_per_kwh) and 0 <= usd_per_kwh <= MAX_USD_PER_KWH):
        raise SpecError("<input>", "usd_per_kwh", f"a price from 0 to {MAX_USD_PER_KWH:g} USD/kWh, got "
                        f"{shown(usd_per_kwh)}")
    pr = Problem(spec, years=years, basis=basis, usd_per_kwh=usd_per_kwh)
    mix = pr.solve()
    if mix is None:
        raise pr.diagnose()
    return _result(pr, mix)
