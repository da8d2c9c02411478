"""Procurement sizing: from demand and a service level to GPUs, racks, megawatts and dollars.

For each hardware option the frontier engine (:func:`planner.serving.frontier`) gives the
configurations meeting the service level (tokens/s per user, and for disaggregated serving the
prefill pool's TTFT limit); the cheapest deployment of one of them at the demand is kept.

The deployment arithmetic is pure (numbers in, numbers out) so it can be checked by hand:

* :func:`plan_pools`: GPUs per pool rounded up to whole instances (a decode instance of ``gpus``
  GPUs, prefill instances of ``prefill_gpus``), instances packed into NVLink domains (an
  instance no larger than a domain never straddles two), domains into purchasable units
  (72-GPU racks, 8-GPU nodes);
* :func:`max_load`: the largest load a fixed number of units serves at one configuration;
* :func:`economics`: IT and facility power, capex, energy and rental opex, $/M tokens;
* :func:`deployment`: the three together for one demand.

API (DataFrames): :func:`size`, :func:`power_budget`, :func:`cost_target`,
:func:`fleet_capacity`, and :func:`sizing_curve` (cost and units against the service level,
for :func:`planner.plot.plot_sizing`).
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import SpecError
from .hardware import Hardware
from .model import Model
from .serving import frontier, frontier_at
from .specs import load_hardware, load_model

HOURS_PER_YEAR = 8760.0
SECONDS_PER_YEAR = HOURS_PER_YEAR * 3600.0
DEFAULT_PUE = 1.3
DEFAULT_USD_PER_KWH = 0.08
DEFAULT_YEARS = 4.0
DEFAULT_LEVELS = (10.0, 20.0, 50.0, 100.0, 200.0)
SIZING_SERVING = ("disaggregated", "aggregated", "decode")
BASES = ("own", "rental")
PROFILE_UNITS = ("output_tps", "users", "requests_per_s")
_PROFILE_ALIASES = {"output_tps": "output_tps", "tps": "output_tps", "tokens_per_s": "output_tps",
                    "output_tokens_per_s": "output_tps", "users": "users",
                    "requests_per_s": "requests_per_s", "rps": "requests_per_s"}

GLOBAL_SOURCES = {
    "pue": "default assumption (liquid-cooled AI data hall); override with --pue / pue=",
    "usd_per_kwh": "default assumption (about the US industrial electricity average); override "
                   "with --usd-per-kwh / usd_per_kwh=",
    "years": "default amortisation period of the capex; override with --years / years=",
}


# ---- pure deployment arithmetic ----------------------------------------------------------------
def _ceil(v: float) -> int:
    """Ceiling that ignores float noise (25.000000000004 -> 25)."""
    return int(math.ceil(round(float(v), 9)))


def pack_bins(instances: Sequence[tuple[int, int]], bin_size: int) -> int:
    """Bins (scale-up domains) needed for ``instances`` = [(instance GPUs, count), ...].

    An instance no larger than a bin sits inside one bin; a larger one takes whole bins and
    leaves the rest of its last bin to smaller instances.  Largest first, best fit into partly
    used bins, then new bins.
    """
    free: Counter[int] = Counter()  # free GPUs -> bins with that much free
    bins = 0
    for size, count in sorted(((int(s), int(n)) for s, n in instances if n > 0), reverse=True):
        if size < 1:
            raise ValueError(f"instance size must be >= 1, got {size}")
        n = count
        if size > bin_size:
            m = _ceil(size / bin_size)
            bins += n * m
            if m * bin_size - size:
                free[m * bin_size - size] += n
            continue
        for f in sorted(free):
            if n == 0:
                break
            k = f // size
            if k == 0:
                continue
            c = free.pop(f)
            full = min(c, n // k)
            n -= full * k
            if full and f - k * size:
                free[f - k * size] += full
            rest = c - full
            if rest and n:  # here n < k: one bin takes the remainder
                if f - n * size:
                    free[f - n * size] += 1
                rest -= 1
                n = 0
            if rest:
                free[f] += rest
        if n:
            k = bin_size // size
            full, r = divmod(n, k)
            bins += full + (1 if r else 0)
            if full and bin_size - k * size:
                free[bin_size - k * size] += full
            if r:
                free[bin_size - r * size] += 1
    return bins


def units_for(decode_instances: int, decode_instance_gpus: int, prefill_instances: int,
              prefill_instance_gpus: int | None, *, gpus_per_unit: int, domain_size: int) -> int:
    """Purchasable units holding the instances (packed into NVLink domains, domains into units)."""
    bin_size = min(int(domain_size), int(gpus_per_unit))
    items = [(decode_instance_gpus, decode_instances)]
    if prefill_instance_gpus:
        items.append((prefill_instance_gpus, prefill_instances))
    bins = pack_bins(items, bin_size)
    return _ceil(bins * bin_size / gpus_per_unit)


def plan_pools(demand_tps: float, *, decode_tps_per_gpu: float, decode_instance_gpus: int,
               prefill_tps_per_gpu: float | None = None, prefill_instance_gpus: int | None = None,
               isl: float = 1024, osl: float = 1024, gpus_per_unit: int, domain_size: int
               ) -> dict[str, float]:
    """Pools for ``demand_tps`` output tokens/s: the decode pool serves the output at
    ``decode_tps_per_gpu`` per GPU; the prefill pool (disaggregated only) the ``isl/osl`` prompt
    tokens per output token at ``prefill_tps_per_gpu``.  Each pool is rounded up to whole
    instances, then the instances to units."""
    dec_need = demand_tps / decode_tps_per_gpu
    n_d = _ceil(dec_need / decode_instance_gpus)
    pre_need, n_p = 0.0, 0
    if prefill_tps_per_gpu is not None:
        pre_need = demand_tps * (isl / osl) / prefill_tps_per_gpu
        n_p = _ceil(pre_need / prefill_instance_gpus)
    g_p = int(prefill_instance_gpus or 0)
    units = units_for(n_d, decode_instance_gpus, n_p, g_p or None, gpus_per_unit=gpus_per_unit,
                      domain_size=domain_size)
    return dict(gpus_needed=dec_need + pre_need, decode_instances=n_d,
                decode_gpus=n_d * decode_instance_gpus, prefill_instances=n_p,
                prefill_gpus=n_p * g_p, gpus_used=n_d * decode_instance_gpus + n_p * g_p,
                units=units, gpus=units * gpus_per_unit)


def max_load(units: int, *, decode_tps_per_gpu: float, decode_instance_gpus: int,
             prefill_tps_per_gpu: float | None = None, prefill_instance_gpus: int | None = None,
             isl: float = 1024, osl: float = 1024, gpus_per_unit: int, domain_size: int) -> float:
    """The largest output tokens/s ``units`` purchasable units serve at this configuration (whole
    instances only; 0 when not even one set of instances fits)."""
    a = decode_tps_per_gpu * decode_instance_gpus           # output tokens/s per decode instance
    b = (prefill_tps_per_gpu * prefill_instance_gpus * osl / isl  # ... per prefill instance
         if prefill_tps_per_gpu is not None else math.inf)
    kw = dict(gpus_per_unit=gpus_per_unit, domain_size=domain_size)
    g_p = prefill_instance_gpus if prefill_tps_per_gpu is not None else None

    def fits(load: float) -> bool:
        n_p = _ceil(load / b) if math.isfinite(b) else 0
        return units_for(_ceil(load / a), decode_instance_gpus, n_p, g_p, **kw) <= units

    # per GPU, prefill included: no load above (all GPUs bought) x y fits
    y = 1.0 / (1.0 / decode_tps_per_gpu + (isl / osl / prefill_tps_per_gpu
                                           if prefill_tps_per_gpu is not None else 0.0))
    lo, hi = min(a, b), units * gpus_per_unit * y * (1 + 1e-9) + 1.0
    if not fits(lo):  # one instance of each pool does not fit
        return 0.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if fits(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    # snap to the breakpoint the whole instances give
    n_d = _ceil(lo / a)
    cap = n_d * a
    if math.isfinite(b):
        cap = min(cap, _ceil(lo / b) * b)
    return float(cap)


def economics(*, units: int, gpus_per_unit: int, peak_tps: float, mean_tps: float,
              capacity_tps: float, power_per_gpu: float, price_per_unit: float,
              price_per_gpu_hour: float, pue: float = DEFAULT_PUE,
              usd_per_kwh: float = DEFAULT_USD_PER_KWH, years: float = DEFAULT_YEARS
              ) -> dict[str, float]:
    """Power and money for ``units`` units carrying ``mean_tps`` on average (``peak_tps`` at the
    peak).  Every GPU bought is powered (and rented) all year; $/M tokens divides the yearly
    cost by the output tokens served in a year at the mean load."""
    gpus = units * gpus_per_unit
    it_w = gpus * power_per_gpu
    fac_w = it_w * pue
    capex = units * price_per_unit
    energy = fac_w / 1e3 * HOURS_PER_YEAR * usd_per_kwh
    rental = price_per_gpu_hour * gpus * HOURS_PER_YEAR
    tokens = mean_tps * SECONDS_PER_YEAR
    yearly = capex / years + energy
    util = mean_tps / capacity_tps if capacity_tps > 0 else math.nan
    return dict(
        it_power_mw=it_w / 1e6, power_mw=fac_w / 1e6, capex_usd=capex,
        opex_usd_per_year=energy, rental_usd_per_year=rental, tokens_per_year=tokens,
        usd_per_mtok=yearly / (tokens / 1e6) if tokens > 0 else math.inf,
        usd_per_mtok_rental=rental / (tokens / 1e6) if tokens > 0 else math.inf,
        tps_per_mw=peak_tps / (fac_w / 1e6), capacity_tps=capacity_tps,
        headroom=capacity_tps / peak_tps - 1.0 if peak_tps > 0 else math.inf,
        utilisation=util, idle_usd_per_year=yearly * (1.0 - util),
    )


def deployment(demand_tps: float, *, decode_tps_per_gpu: float, decode_instance_gpus: int,
               prefill_tps_per_gpu: float | None = None, prefill_instance_gpus: int | None = None,
               isl: float = 1024, osl: float = 1024, gpus_per_unit: int, domain_size: int,
               power_per_gpu: float, price_per_unit: float, price_per_gpu_hour: float,
               pue: float = DEFAULT_PUE, usd_per_kwh: float = DEFAULT_USD_PER_KWH,
               years: float = DEFAULT_YEARS, mean_demand_tps: float | None = None) -> dict[str, float]:
    """Everything about serving a peak of ``demand_tps`` output tokens/s (and ``mean_demand_tps``
    on average; default: the peak all day) at one configuration.  Pure arithmetic."""
    if not (math.isfinite(demand_tps) and demand_tps > 0):
        raise SpecError("<input>", "demand", f"a positive load in output tokens/s, got {demand_tps!r}")
    perf = dict(decode_tps_per_gpu=decode_tps_per_gpu, decode_instance_gpus=int(decode_instance_gpus),
                prefill_tps_per_gpu=prefill_tps_per_gpu,
                prefill_instance_gpus=int(prefill_instance_gpus) if prefill_instance_gpus else None,
                isl=isl, osl=osl, gpus_per_unit=int(gpus_per_unit), domain_size=int(domain_size))
    pools = plan_pools(demand_tps, **perf)
    cap = max_load(pools["units"], **perf)
    mean = demand_tps if mean_demand_tps is None else mean_demand_tps
    money = economics(units=pools["units"], gpus_per_unit=int(gpus_per_unit), peak_tps=demand_tps,
                      mean_tps=mean, capacity_tps=cap, power_per_gpu=power_per_gpu,
                      price_per_unit=price_per_unit, price_per_gpu_hour=price_per_gpu_hour, pue=pue,
                      usd_per_kwh=usd_per_kwh, years=years)
    return dict(demand_tps=demand_tps, mean_demand_tps=mean, **pools, **money)


# ---- demand ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Demand:
    """A load: one peak value or 24 hourly values, in output tokens/s, concurrent users or
    requests/s."""

    kind: str                    #: output_tps, users or requests_per_s
    hourly: tuple[float, ...]    #: one value (a peak held all day) or 24
    source: str = ""             #: where it came from (flag or file)

    def output_tps(self, tps_per_user: float, osl: float) -> np.ndarray:
        """Hourly output tokens/s: users x tokens/s/user, requests/s x OSL."""
        v = np.asarray(self.hourly, dtype=float)
        if self.kind == "users":
            return v * tps_per_user
        if self.kind == "requests_per_s":
            return v * osl
        return v

    def peak_mean(self, tps_per_user: float, osl: float) -> tuple[float, float]:
        v = self.output_tps(tps_per_user, osl)
        return float(v.max()), float(v.mean())

    @property
    def is_profile(self) -> bool:
        return len(self.hourly) > 1

    def describe(self) -> str:
        def num(x: float) -> str:
            return f"{x:,.0f}" if x >= 100 or float(x).is_integer() else f"{x:,.4g}"

        words = {"output_tps": "output tokens/s", "users": "concurrent users",
                 "requests_per_s": "requests/s"}[self.kind]
        if self.is_profile:
            v = np.asarray(self.hourly)
            return (f"daily profile of {words} (peak {num(v.max())}, mean {num(v.mean())}"
                    f"{', from ' + self.source if self.source else ''})")
        return f"{num(self.hourly[0])} {words}"


def _check_load(v: Any, field: str, allow_zero: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | np.number):
        raise SpecError("<input>", field, f"a number, got {v!r}")
    v = float(v)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise SpecError("<input>", field, f"a {'non-negative' if allow_zero else 'positive'} finite "
                        f"load, got {v!r}")
    return v


def make_demand(demand_tps: float | None = None, users: float | None = None,
                requests_per_s: float | None = None, profile: Any = None,
                profile_unit: str = "output_tps") -> Demand:
    """Exactly one of a peak in output tokens/s, concurrent users, requests/s, or a daily
    profile (24 hourly loads: a sequence, or a CSV/YAML file path; see :func:`read_profile`)."""
    given = [(k, v) for k, v in (("demand_tps", demand_tps), ("users", users),
                                 ("requests_per_s", requests_per_s), ("profile", profile))
             if v is not None]
    if len(given) != 1:
        names = ", ".join(k for k, _ in given) if given else "none"
        raise SpecError("<input>", "demand", "exactly one of demand_tps (--demand-tps), users (--users), "
                        f"requests_per_s (--requests-per-s) or profile (--profile); got {names}")
    key, v = given[0]
    if key == "profile":
        if isinstance(v, str | Path):
            return read_profile(v)
        if profile_unit not in _PROFILE_ALIASES:
            raise SpecError("<input>", "profile_unit", f"one of {', '.join(PROFILE_UNITS)}, got "
                            f"{profile_unit!r}")
        return _profile_values(list(v) if not isinstance(v, Mapping) else v, "<input>",
                               _PROFILE_ALIASES[profile_unit], "profile")
    kind = {"demand_tps": "output_tps", "users": "users", "requests_per_s": "requests_per_s"}[key]
    flag = {"demand_tps": "--demand-tps", "users": "--users", "requests_per_s": "--requests-per-s"}[key]
    return Demand(kind, (_check_load(v, key),), flag)


def _profile_values(values: Any, label: str, kind: str, source: str) -> Demand:
    if not isinstance(values, list | tuple | np.ndarray) or len(values) != 24:
        n = len(values) if isinstance(values, list | tuple | np.ndarray) else type(values).__name__
        raise SpecError(label, "profile", f"24 hourly loads (hour 0 to 23), got {n}")
    hourly = tuple(_check_load(x, f"profile[{i}]", allow_zero=True) for i, x in enumerate(values))
    if max(hourly) <= 0:
        raise SpecError(label, "profile", "at least one hour with a positive load")
    return Demand(kind, hourly, source)


def read_profile(path: str | Path) -> Demand:
    """A daily profile from a file.

    YAML: a list of 24 loads (output tokens/s), or ``{unit: output_tps|users|requests_per_s,
    hourly: [24 loads]}``.  CSV: 24 rows of one column of loads, or two columns ``hour,LOAD``;
    an optional header names the unit (``output_tps``, ``users`` or ``requests_per_s``).
    """
    from .specio import read_text

    label = str(path)
    text = read_text(path, label)
    if label.lower().endswith(".csv"):
        return _profile_csv(text, label)
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        raise SpecError(label, "yaml", "valid YAML (or a .csv file)") from None
    if isinstance(doc, Mapping):
        unknown = set(doc) - {"unit", "hourly"}
        if unknown:
            raise SpecError(label, str(sorted(unknown)[0]), "a known field: unit, hourly")
        unit = doc.get("unit", "output_tps")
        if unit not in _PROFILE_ALIASES:
            raise SpecError(label, "unit", f"one of {', '.join(PROFILE_UNITS)}, got {unit!r}")
        return _profile_values(doc.get("hourly"), label, _PROFILE_ALIASES[unit], label)
    return _profile_values(doc, label, "output_tps", label)


def _profile_csv(text: str, label: str) -> Demand:
    rows = [r for r in csv.reader(io.StringIO(text)) if r and any(c.strip() for c in r)]
    kind = "output_tps"
    col = -1
    if rows:
        try:
            float(rows[0][-1])
        except ValueError:
            header = [c.strip().lower() for c in rows[0]]
            rows = rows[1:]
            named = [i for i, h in enumerate(header) if h in _PROFILE_ALIASES]
            if len(named) != 1:
                raise SpecError(label, "header", "one load column named output_tps, users or "
                                f"requests_per_s (and optionally hour), got {', '.join(header)}") from None
            col, kind = named[0], _PROFILE_ALIASES[header[named[0]]]
    values = []
    for i, r in enumerate(rows):
        try:
            values.append(float(r[col]))
        except (ValueError, IndexError):
            raise SpecError(label, f"row {i + 1}", f"a number, got {','.join(r)!r}") from None
    return _profile_values(values, label, kind, label)


# ---- prices, power, and their sources ------------------------------------------------------------
def _override(v: Any, hw: Hardware, field: str) -> float | None:
    if v is None:
        return None
    if isinstance(v, Mapping):
        v = v.get(hw.name)
        if v is None:
            return None
    if isinstance(v, bool) or not isinstance(v, int | float | np.number) or not (
            math.isfinite(float(v)) and float(v) > 0):
        raise SpecError("<input>", field, f"a positive number, got {v!r}")
    return float(v)


def figures(hw: Hardware, *, pue: float = DEFAULT_PUE, usd_per_kwh: float = DEFAULT_USD_PER_KWH,
            years: float = DEFAULT_YEARS, usd_per_unit: Any = None, usd_per_gpu_hour: Any = None,
            watts_per_gpu: Any = None) -> dict[str, dict[str, Any]]:
    """Every price and power figure the sizing uses for ``hw``, each with its source: the spec
    file's (``hw.sources``) or 'user override'.  ``usd_per_unit``, ``usd_per_gpu_hour`` and
    ``watts_per_gpu`` are a number (all systems) or ``{hardware name: number}``."""
    spec = f"{hw.path or hw.name}"

    def fact(key: str, value: float, override: float | None, unit: str, flag: str) -> dict[str, Any]:
        if override is not None:
            return dict(value=override, unit=unit, source=f"user override ({flag})")
        src = hw.sources.get(f"system.{key}", "no source recorded in the spec")
        return dict(value=value, unit=unit, source=f"{src} [{spec}: system.{key}]")

    for name, v, lo in (("pue", pue, 1.0), ("years", years, 0.0)):
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < lo or (
                lo == 0.0 and v <= 0):
            raise SpecError("<input>", name, f"a finite number {'>= 1' if lo else '> 0'}, got {v!r}")
    if isinstance(usd_per_kwh, bool) or not isinstance(usd_per_kwh, int | float) or not (
            math.isfinite(usd_per_kwh) and usd_per_kwh >= 0):
        raise SpecError("<input>", "usd_per_kwh", f"a finite price >= 0, got {usd_per_kwh!r}")
    return {
        "price_per_unit": fact("price_per_unit", hw.price_per_unit,
                               _override(usd_per_unit, hw, "usd_per_unit"), f"USD per {hw.unit}",
                               "--usd-per-unit"),
        "price_per_gpu_hour": fact("price_per_gpu_hour", hw.price_per_gpu_hour,
                                   _override(usd_per_gpu_hour, hw, "usd_per_gpu_hour"),
                                   "USD per GPU-hour", "--usd-per-gpu-hour"),
        "power_per_gpu": fact("power_per_gpu", hw.power_per_gpu,
                              _override(watts_per_gpu, hw, "watts_per_gpu"), "W per GPU, all-in",
                              "--watts-per-gpu"),
        "pue": dict(value=float(pue), unit="facility W per IT W", source=(
            GLOBAL_SOURCES["pue"] if pue == DEFAULT_PUE else "user override (--pue)")),
        "usd_per_kwh": dict(value=float(usd_per_kwh), unit="USD per kWh", source=(
            GLOBAL_SOURCES["usd_per_kwh"] if usd_per_kwh == DEFAULT_USD_PER_KWH
            else "user override (--usd-per-kwh)")),
        "years": dict(value=float(years), unit="years", source=(
            GLOBAL_SOURCES["years"] if years == DEFAULT_YEARS else "user override (--years)")),
    }


# ---- one hardware option: its frontier and candidates ----------------------------------------------
#: frontier errors that mean "this option cannot do it" (reported per option, not raised)
_OPTION_LIMITS = ("max_ttft", "model", "prefill", "layout")
_CONFIG = ("weights", "mtp", "overlap", "tp_attn", "ep", "tp_moe", "batch", "bottleneck")


class _Option:
    """One hardware option: all frontier points, and the best configuration per instance size
    at any service level."""

    def __init__(self, model: Model, hw: Hardware, figs: dict[str, dict[str, Any]],
                 fkw: dict[str, Any]) -> None:
        self.model, self.hw, self.figs = model, hw, figs
        self.serving = fkw["serving"]
        self.isl, self.osl = float(fkw["isl"]), float(fkw["osl"])
        self.ttft_limit = None
        if self.serving == "disaggregated":
            from .serving import DEFAULT_MAX_TTFT

            self.ttft_limit = DEFAULT_MAX_TTFT if fkw.get("max_ttft") is None else float(fkw["max_ttft"])
        self.error: str | None = None
        self.pts = pd.DataFrame()
        try:
            self.pts = frontier(model, hw, all_points=True, metric="output", **fkw)
        except SpecError as exc:
            if exc.field not in _OPTION_LIMITS:  # bad input, not this option's limit: say so
                raise
            self.error = f"{exc.field}: {exc.expected}"
        self.top = float(self.pts.tps_per_user.max()) if not self.pts.empty else math.nan
        self._stairs: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        for g, grp in (self.pts.groupby("gpus") if not self.pts.empty else ()):
            grp = grp.sort_values("tps_per_user", ascending=False, kind="mergesort")
            # running best output per GPU from the fastest point down, then ascending in x
            arg = grp.index.to_numpy()[_running_argmax(grp.output_tps_per_gpu.to_numpy())]
            self._stairs[int(g)] = (grp.tps_per_user.to_numpy()[::-1], arg[::-1])

    @property
    def feasible_at_all(self) -> bool:
        return self.error is None and not self.pts.empty

    def candidates(self, x: float, exact: bool = True) -> list[dict[str, Any]]:
        """Configurations giving every user >= ``x`` tokens/s: per instance size the grid point
        with the most output per GPU, plus (``exact``) the frontier engine's best with the batch
        solved exactly at ``x`` (:func:`frontier_at`)."""
        if not self.feasible_at_all or x > self.top:
            return []
        out = []
        for xs, arg in self._stairs.values():
            i = np.searchsorted(xs, x, side="left")  # xs ascending: first point with tpu >= x
            if i < len(xs):
                out.append(self._cand(self.pts.loc[arg[i]], exact=False))
        if exact:
            ex = frontier_at(self.model, self.hw, [x], points=self.pts).iloc[0]
            if np.isfinite(ex.get("tps_per_gpu", np.nan)):
                out.append(self._cand(ex, exact=True))
        return out

    def _cand(self, r: pd.Series, exact: bool) -> dict[str, Any]:
        disagg = self.serving == "disaggregated"
        c = dict(
            tps_per_user=float(r.tps_per_user), tps_per_gpu=float(r.output_tps_per_gpu),
            decode_tps_per_gpu=float(r.decode_tps_per_gpu if disagg else r.output_tps_per_gpu),
            instance_gpus=int(r.gpus),
            prefill_tps_per_gpu=float(r.prefill_tps_per_gpu) if disagg else None,
            prefill_instance_gpus=int(r.prefill_gpus) if disagg else None,
            ttft_s=float(r.ttft_s) if disagg else math.nan, solved_exactly=exact)
        for k in _CONFIG:
            v = r.get(k)
            c[k] = v.item() if isinstance(v, np.generic) else v
        return c

    def perf(self, c: dict[str, Any]) -> dict[str, Any]:
        return dict(decode_tps_per_gpu=c["decode_tps_per_gpu"], decode_instance_gpus=c["instance_gpus"],
                    prefill_tps_per_gpu=c["prefill_tps_per_gpu"],
                    prefill_instance_gpus=c["prefill_instance_gpus"], isl=self.isl, osl=self.osl,
                    gpus_per_unit=self.hw.gpus_per_unit, domain_size=self.hw.domain_size)

    def money(self) -> dict[str, float]:
        f = self.figs
        return dict(power_per_gpu=f["power_per_gpu"]["value"], price_per_unit=f["price_per_unit"]["value"],
                    price_per_gpu_hour=f["price_per_gpu_hour"]["value"], pue=f["pue"]["value"],
                    usd_per_kwh=f["usd_per_kwh"]["value"], years=f["years"]["value"])

    def deploy(self, c: dict[str, Any], peak: float, mean: float) -> dict[str, Any]:
        return deployment(peak, **self.perf(c), **self.money(), mean_demand_tps=mean)

    def best(self, x: float, demand: Demand, basis: str, exact: bool = True
             ) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The cheapest deployment meeting ``x`` tokens/s/user at ``demand`` (ties: more output
        per GPU)."""
        peak, mean = demand.peak_mean(x, self.osl)
        key = "usd_per_mtok" if basis == "own" else "usd_per_mtok_rental"
        found = None
        for c in self.candidates(x, exact):
            d = self.deploy(c, peak, mean)
            score = (d[key], -c["tps_per_gpu"])
            if found is None or score < found[0]:
                found = (score, c, d)
        return None if found is None else (found[1], found[2])

    def reason(self, x: float) -> str:
        if self.error:
            return self.error
        return f"at most {self.top:.4g} tokens/s/user"

    def row(self, c: dict[str, Any], d: dict[str, Any], level: float) -> dict[str, Any]:
        hw = self.hw
        r = dict(hardware=hw.name, feasible=True, min_tps_user=level, **c, unit=hw.unit,
                 gpus_per_unit=hw.gpus_per_unit, max_tps_per_user=self.top, **d)
        for k, f in self.figs.items():
            r[k] = f["value"]
            r[f"{k}_source"] = f["source"]
        return r

    def infeasible_row(self, level: float, reason: str) -> dict[str, Any]:
        r = dict(hardware=self.hw.name, feasible=False, min_tps_user=level, unit=self.hw.unit,
                 gpus_per_unit=self.hw.gpus_per_unit, max_tps_per_user=self.top, reason=reason)
        for k, f in self.figs.items():
            r[k] = f["value"]
            r[f"{k}_source"] = f["source"]
        return r


def _running_argmax(y: np.ndarray) -> np.ndarray:
    """Index of the running maximum of ``y`` (first occurrence)."""
    out = np.empty(len(y), dtype=int)
    best, bi = -math.inf, 0
    for i, v in enumerate(y):
        if v > best:
            best, bi = v, i
        out[i] = bi
    return out


# ---- shared set-up ----------------------------------------------------------------------------------
_SEARCH_KEYS = ("context", "gpus", "max_gpus", "tp_attn", "ep", "tp_moe", "weights", "kv", "mtp",
                "overlap", "kv_offload", "mode")


def _setup(model: Any, hardware: Any, *, serving: str, isl: float, osl: float,
           max_ttft: float | None, pue: float, usd_per_kwh: float, years: float,
           usd_per_unit: Any, usd_per_gpu_hour: Any, watts_per_gpu: Any, basis: str,
           search: dict[str, Any]) -> tuple[Model, list[_Option], dict[str, Any]]:
    unknown = set(search) - set(_SEARCH_KEYS)
    if "metric" in unknown:
        raise SpecError("<input>", "metric", "not settable for sizing: demand is output tokens/s, so "
                        "throughput is always output tokens/s per GPU counting every GPU")
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(unknown))}")
    if serving not in SIZING_SERVING:
        raise SpecError("<input>", "serving", f"one of {', '.join(SIZING_SERVING)} for sizing (demand "
                        f"is in output tokens), got {serving!r}")
    if max_ttft is not None and serving != "disaggregated":
        raise SpecError("<input>", "max_ttft", "only with disaggregated serving (it is the prefill "
                        "pool's limit); TTFT is not modelled for aggregated or decode-only serving")
    if basis not in BASES:
        raise SpecError("<input>", "basis", f"one of {', '.join(BASES)}, got {basis!r}")
    m = load_model(model)
    hws = [load_hardware(h) for h in ([hardware] if isinstance(hardware, str | Hardware) else hardware)]
    if not hws:
        raise SpecError("<input>", "hardware", "at least one system")
    names = [h.name for h in hws]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise SpecError("<input>", "hardware", f"each system once, got {', '.join(dup)} twice")
    for ov, field in ((usd_per_unit, "usd_per_unit"), (usd_per_gpu_hour, "usd_per_gpu_hour"),
                      (watts_per_gpu, "watts_per_gpu")):
        if isinstance(ov, Mapping):
            bad = sorted(set(ov) - set(names))
            if bad:
                raise SpecError("<input>", field, f"overrides for the systems sized ({', '.join(names)}), "
                                f"got {', '.join(map(str, bad))}")
    figs = {h.name: figures(h, pue=pue, usd_per_kwh=usd_per_kwh, years=years, usd_per_unit=usd_per_unit,
                            usd_per_gpu_hour=usd_per_gpu_hour, watts_per_gpu=watts_per_gpu) for h in hws}
    fkw = dict(serving=serving, isl=isl, osl=osl, max_ttft=max_ttft, **search)
    opts = [_Option(m, h, figs[h.name], fkw) for h in hws]
    first = next((o for o in opts if o.feasible_at_all), None)
    attrs = dict(model=m.name, serving=serving, isl=float(isl), osl=float(osl),
                 max_ttft=(first.pts.attrs.get("max_ttft") if first is not None and
                           serving == "disaggregated" else None),
                 mode=search.get("mode", "realistic"), basis=basis, pue=pue, usd_per_kwh=usd_per_kwh,
                 years=years, figures=figs)
    return m, opts, attrs


def _no_option(opts: list[_Option], level: float) -> SpecError:
    best = "; ".join(f"{o.hw.name}: {o.reason(level)}" for o in opts)
    ttft = opts[0].ttft_limit
    asked = f">= {level:g} tokens/s/user" + (f", TTFT <= {ttft:g} s" if ttft is not None else "")
    return SpecError("<input>", "service_level", f"a service level some option can meet (asked: {asked}); "
                     f"best each can do: {best}")


def _check_level(v: Any, field: str = "min_tps_user") -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | np.number) or not (
            math.isfinite(float(v)) and float(v) > 0):
        raise SpecError("<input>", field, f"a positive rate in tokens/s per user, got {v!r}")
    return float(v)


def _mark_cheapest(df: pd.DataFrame, basis: str) -> pd.DataFrame:
    key = "usd_per_mtok" if basis == "own" else "usd_per_mtok_rental"
    df["cheapest"] = False
    ok = df[df.feasible] if "feasible" in df else df
    if not ok.empty and key in ok:
        df.loc[ok[key].astype(float).idxmin(), "cheapest"] = True
    return df


# ---- API -------------------------------------------------------------------------------------------
def size(model: Model | str, hardware: Any, *, min_tps_user: float, demand_tps: float | None = None,
         users: float | None = None, requests_per_s: float | None = None, profile: Any = None,
         profile_unit: str = "output_tps", serving: str = "disaggregated", isl: float = 1024,
         osl: float = 1024, max_ttft: float | None = None, pue: float = DEFAULT_PUE,
         usd_per_kwh: float = DEFAULT_USD_PER_KWH, years: float = DEFAULT_YEARS,
         usd_per_unit: Any = None, usd_per_gpu_hour: Any = None, watts_per_gpu: Any = None,
         basis: str = "own", **search: Any) -> pd.DataFrame:
    """Size a deployment on each hardware option for the demand at the service level.

    One row per option: the configuration (``tps_per_user``, ``tps_per_gpu`` = output tokens/s
    per GPU counting every GPU, instance sizes, binding term), the deployment (``gpus`` bought,
    ``units``, pools, ``power_mw`` facility and ``it_power_mw``, ``capex_usd``,
    ``opex_usd_per_year`` (energy), ``rental_usd_per_year``, ``usd_per_mtok`` (capex over
    ``years`` + energy), ``usd_per_mtok_rental``, ``tps_per_mw``, ``capacity_tps``, ``headroom``,
    ``utilisation``, ``idle_usd_per_year``), each price and power figure with its ``*_source``, and
    ``cheapest``.  Options that cannot meet the level have ``feasible`` False and a ``reason``;
    if none can, SpecError says the best each can do.  ``search``: frontier search options
    (``gpus``, ``weights``, ``mode``, ...).
    """
    level = _check_level(min_tps_user)
    dem = make_demand(demand_tps, users, requests_per_s, profile, profile_unit)
    m, opts, attrs = _setup(model, hardware, serving=serving, isl=isl, osl=osl, max_ttft=max_ttft, pue=pue,
                            usd_per_kwh=usd_per_kwh, years=years, usd_per_unit=usd_per_unit,
                            usd_per_gpu_hour=usd_per_gpu_hour, watts_per_gpu=watts_per_gpu,
                            basis=basis, search=search)
    rows = []
    for o in opts:
        got = o.best(level, dem, basis)
        rows.append(o.row(got[0], got[1], level) if got else o.infeasible_row(level, o.reason(level)))
    if not any(r["feasible"] for r in rows):
        raise _no_option(opts, level)
    df = _mark_cheapest(pd.DataFrame(rows), basis)
    df.attrs.update(attrs, min_tps_user=level, demand=dem.describe(), demand_kind=dem.kind,
                    profile=list(dem.hourly) if dem.is_profile else None)
    return df


def power_budget(model: Model | str, hardware: Any, budget_mw: float, *, min_tps_user: float,
                 serving: str = "disaggregated", isl: float = 1024, osl: float = 1024,
                 max_ttft: float | None = None, pue: float = DEFAULT_PUE,
                 usd_per_kwh: float = DEFAULT_USD_PER_KWH, years: float = DEFAULT_YEARS,
                 usd_per_unit: Any = None, usd_per_gpu_hour: Any = None, watts_per_gpu: Any = None,
                 basis: str = "own", **search: Any) -> pd.DataFrame:
    """The largest load each option serves at the service level within ``budget_mw`` of facility
    power: the whole units the budget powers (units x GPUs x W/GPU x PUE <= budget), then the
    configuration serving the most on them.  Rows: ``units``, ``gpus``, ``power_mw``,
    ``capacity_tps`` (output tokens/s), ``users`` (capacity / level), ``requests_per_s``
    (capacity / OSL), and the costs at that full load."""
    level = _check_level(min_tps_user)
    if isinstance(budget_mw, bool) or not isinstance(budget_mw, int | float) or not (
            math.isfinite(budget_mw) and budget_mw > 0):
        raise SpecError("<input>", "power_budget_mw", f"a positive power in MW, got {budget_mw!r}")
    m, opts, attrs = _setup(model, hardware, serving=serving, isl=isl, osl=osl, max_ttft=max_ttft, pue=pue,
                            usd_per_kwh=usd_per_kwh, years=years, usd_per_unit=usd_per_unit,
                            usd_per_gpu_hour=usd_per_gpu_hour, watts_per_gpu=watts_per_gpu,
                            basis=basis, search=search)
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
            raise _no_option(opts, level)
        raise SpecError("<input>", "power_budget_mw", "a budget that serves load on some option; "
                        + "; ".join(f"{r['hardware']}: {r['reason']}" for r in rows))
    df = pd.DataFrame(rows)
    df.attrs.update(attrs, min_tps_user=level, power_budget_mw=float(budget_mw))
    return df


def fleet_capacity(model: Model | str, hardware: Any, units: int, *,
                   levels: Sequence[float] = DEFAULT_LEVELS, serving: str = "disaggregated",
                   isl: float = 1024, osl: float = 1024, max_ttft: float | None = None,
                   pue: float = DEFAULT_PUE, usd_per_kwh: float = DEFAULT_USD_PER_KWH,
                   years: float = DEFAULT_YEARS, usd_per_unit: Any = None, usd_per_gpu_hour: Any = None,
                   watts_per_gpu: Any = None, basis: str = "own", **search: Any) -> pd.DataFrame:
    """The load a fixed fleet of ``units`` units of each option serves at each service level in
    ``levels`` (tokens/s/user): one row per (hardware, level) with ``capacity_tps``, ``users``,
    ``requests_per_s``, power and costs at that full load; ``feasible`` False (capacity 0)
    where the level is out of reach or the fleet holds no whole instance."""
    if isinstance(units, bool) or not isinstance(units, int | np.integer) or units < 1:
        raise SpecError("<input>", "fleet_units", f"a whole number of units >= 1, got {units!r}")
    lv = sorted({_check_level(x, "levels") for x in levels})
    if not lv:
        raise SpecError("<input>", "levels", "at least one service level")
    m, opts, attrs = _setup(model, hardware, serving=serving, isl=isl, osl=osl, max_ttft=max_ttft, pue=pue,
                            usd_per_kwh=usd_per_kwh, years=years, usd_per_unit=usd_per_unit,
                            usd_per_gpu_hour=usd_per_gpu_hour, watts_per_gpu=watts_per_gpu,
                            basis=basis, search=search)
    rows = []
    for o in opts:
        for x in lv:
            rows.append(_fleet_row(o, int(units), x, ""))
    df = pd.DataFrame(rows)
    df.attrs.update(attrs, fleet_units=int(units), levels=lv)
    return df


def _fleet_row(o: _Option, n: int, level: float, no_unit_reason: str) -> dict[str, Any]:
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
    r.update(users=cap / level, requests_per_s=cap / o.osl)
    return r


def cost_target(model: Model | str, hardware: Any, usd_per_mtok: float, *, demand_tps: float | None = None,
                users: float | None = None, requests_per_s: float | None = None, profile: Any = None,
                profile_unit: str = "output_tps", serving: str = "disaggregated", isl: float = 1024,
                osl: float = 1024, max_ttft: float | None = None, pue: float = DEFAULT_PUE,
                usd_per_kwh: float = DEFAULT_USD_PER_KWH, years: float = DEFAULT_YEARS,
                usd_per_unit: Any = None, usd_per_gpu_hour: Any = None, watts_per_gpu: Any = None,
                basis: str = "own", refine: int = 6, **search: Any) -> pd.DataFrame:
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
                        f"{usd_per_mtok!r}")
    dem = make_demand(demand_tps, users, requests_per_s, profile, profile_unit)
    m, opts, attrs = _setup(model, hardware, serving=serving, isl=isl, osl=osl, max_ttft=max_ttft, pue=pue,
                            usd_per_kwh=usd_per_kwh, years=years, usd_per_unit=usd_per_unit,
                            usd_per_gpu_hour=usd_per_gpu_hour, watts_per_gpu=watts_per_gpu,
                            basis=basis, search=search)
    key = "usd_per_mtok" if basis == "own" else "usd_per_mtok_rental"
    rows = []
    for o in opts:
        if not o.feasible_at_all:
            rows.append(o.infeasible_row(math.nan, o.reason(0.0)))
            continue
        xs = np.unique(o.pts.tps_per_user.to_numpy())
        xs = np.unique(np.geomspace(xs.min(), xs.max(), 64))
        costs = []
        for x in xs:
            got = o.best(float(x), dem, basis, exact=False)
            costs.append(got[1][key] if got else math.inf)
        costs = np.asarray(costs)
        ok = np.nonzero(costs <= usd_per_mtok)[0]
        if len(ok) == 0:
            cheapest = float(np.nanmin(costs))
            at = float(xs[np.flatnonzero(costs <= cheapest * (1 + 1e-12)).max()])
            r = o.infeasible_row(math.nan, f"cheapest ${cheapest:.4g}/Mtok (up to {at:.4g} tokens/s/user)")
            r["min_usd_per_mtok"] = cheapest
            rows.append(r)
            continue
        i = int(ok.max())
        lo = float(xs[i])
        got = o.best(lo, dem, basis)
        if got is None or got[1][key] > usd_per_mtok:  # keep the grid answer
            got = o.best(lo, dem, basis, exact=False)
        if i + 1 < len(xs):
            hi = float(xs[i + 1])
            for _ in range(max(0, int(refine))):
                mid = math.sqrt(lo * hi)
                g = o.best(mid, dem, basis)
                if g is not None and g[1][key] <= usd_per_mtok:
                    lo, got = mid, g
                else:
                    hi = mid
        r = o.row(got[0], got[1], lo)
        r["target_usd_per_mtok"] = float(usd_per_mtok)
        rows.append(r)
    if not any(r["feasible"] for r in rows):
        raise SpecError("<input>", "cost_target", f"a price some option reaches (${usd_per_mtok:g}/Mtok); "
                        "best each can do: " + "; ".join(f"{r['hardware']}: {r['reason']}" for r in rows))
    df = pd.DataFrame(rows)
    df.attrs.update(attrs, cost_target=float(usd_per_mtok), demand=dem.describe(), demand_kind=dem.kind)
    return df


def sizing_curve(model: Model | str, hardware: Any, *, demand_tps: float | None = None,
                 users: float | None = None, requests_per_s: float | None = None, profile: Any = None,
                 profile_unit: str = "output_tps", levels: Sequence[float] | None = None,
                 points: int = 40, serving: str = "disaggregated", isl: float = 1024, osl: float = 1024,
                 max_ttft: float | None = None, pue: float = DEFAULT_PUE,
                 usd_per_kwh: float = DEFAULT_USD_PER_KWH, years: float = DEFAULT_YEARS,
                 usd_per_unit: Any = None, usd_per_gpu_hour: Any = None, watts_per_gpu: Any = None,
                 basis: str = "own", **search: Any) -> pd.DataFrame:
    """$/M tokens and units needed against the per-user service level, per option (grid points
    of the frontier, no exact batch solve: fast, and monotone by construction).  Rows:
    ``hardware``, ``tps_per_user`` (the level), ``usd_per_mtok``, ``usd_per_mtok_rental``,
    ``units``, ``unit``, ``gpus``, ``power_mw``."""
    dem = make_demand(demand_tps, users, requests_per_s, profile, profile_unit)
    m, opts, attrs = _setup(model, hardware, serving=serving, isl=isl, osl=osl, max_ttft=max_ttft, pue=pue,
                            usd_per_kwh=usd_per_kwh, years=years, usd_per_unit=usd_per_unit,
                            usd_per_gpu_hour=usd_per_gpu_hour, watts_per_gpu=watts_per_gpu,
                            basis=basis, search=search)
    rows = []
    for o in opts:
        if not o.feasible_at_all:
            continue
        xs = np.asarray(levels, dtype=float) if levels is not None else np.geomspace(
            max(o.pts.tps_per_user.min(), 1e-3), o.top, points)
        for x in xs:
            got = o.best(float(x), dem, basis, exact=False)
            if got is None:
                continue
            c, d = got
            rows.append(dict(hardware=o.hw.name, tps_per_user=float(x), usd_per_mtok=d["usd_per_mtok"],
                             usd_per_mtok_rental=d["usd_per_mtok_rental"], units=d["units"],
                             unit=o.hw.unit, gpus=d["gpus"], power_mw=d["power_mw"],
                             tps_per_gpu=c["tps_per_gpu"]))
    df = pd.DataFrame(rows, columns=["hardware", "tps_per_user", "usd_per_mtok", "usd_per_mtok_rental",
                                     "units", "unit", "gpus", "power_mw", "tps_per_gpu"])
    df.attrs.update(attrs, demand=dem.describe())
    return df
