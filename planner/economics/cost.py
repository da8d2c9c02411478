"""Power and money: IT and facility power, capex, energy and rental opex, $/M tokens, and every
price and power figure with its source.

* :func:`economics`: power and money for a number of units at a load;
* :func:`deployment`: pools, capacity and economics together for one demand (pure arithmetic);
* :func:`figures`: the prices and powers of one system, each with its source or 'user override'.
"""


from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.economics.pools import MAX_FLEET_GPUS, max_load, plan_pools
from planner.errors import SpecError, shown
from planner.specs.hardware import PLAUSIBLE, Hardware, check_price

HOURS_PER_YEAR = 8760.0
SECONDS_PER_YEAR = HOURS_PER_YEAR * 3600.0
DEFAULT_PUE = 1.3
DEFAULT_USD_PER_KWH = 0.08
DEFAULT_YEARS = 4.0
#: how a deployment is paid for: owned (capex over the years + energy) or rented (GPU-hours)
BASES = ("own", "rental")


@dataclass(frozen=True)
class Costs:
    """What sizing prices a deployment with: the facility's PUE, the energy price (USD/kWh), the
    years capex is spread over, overrides of the spec files' unit price (USD per rack or node),
    rental price (USD per GPU-hour) and power (W per GPU), each a number for every system or
    ``{system name: number}``, and the ``basis`` a cost per token is quoted on (``own`` or
    ``rental``).  Unset overrides take each spec's figure, printed with its source."""

    pue: float = DEFAULT_PUE
    usd_per_kwh: float = DEFAULT_USD_PER_KWH
    years: float = DEFAULT_YEARS
    usd_per_unit: Any = None
    usd_per_gpu_hour: Any = None
    watts_per_gpu: Any = None
    basis: str = "own"

    def __post_init__(self) -> None:
        if self.basis not in BASES:
            raise SpecError("<input>", "basis", f"one of {', '.join(BASES)}, got {self.basis!r}")

    def figures(self, hw: Hardware) -> dict[str, dict[str, Any]]:
        """:func:`figures` of ``hw`` at these costs."""
        return figures(hw, pue=self.pue, usd_per_kwh=self.usd_per_kwh, years=self.years,
                       usd_per_unit=self.usd_per_unit, usd_per_gpu_hour=self.usd_per_gpu_hour,
                       watts_per_gpu=self.watts_per_gpu)

    def to_dict(self) -> dict[str, Any]:
        return {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in vars(self).items()}

GLOBAL_SOURCES = {
    "pue": "default assumption (liquid-cooled AI data hall); override with --pue / pue=",
    "usd_per_kwh": "default assumption (about the US industrial electricity average); override "
                   "with --usd-per-kwh / usd_per_kwh=",
    "years": "default amortisation period of the capex; override with --years / years=",
}



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
        usd_per_mtok_owned=yearly / (tokens / 1e6) if tokens > 0 else math.inf,
        usd_per_mtok_rental=rental / (tokens / 1e6) if tokens > 0 else math.inf,
        tps_per_facility_mw=peak_tps / (fac_w / 1e6) if fac_w > 0 else math.nan, capacity_tps=capacity_tps,
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
        raise SpecError("<input>", "demand", f"a positive load in output tokens/s, got {shown(demand_tps)}")
    perf = dict(decode_tps_per_gpu=decode_tps_per_gpu, decode_instance_gpus=int(decode_instance_gpus),
                prefill_tps_per_gpu=prefill_tps_per_gpu,
                prefill_instance_gpus=int(prefill_instance_gpus) if prefill_instance_gpus else None,
                isl=isl, osl=osl, gpus_per_unit=int(gpus_per_unit), domain_size=int(domain_size))
    need = demand_tps / decode_tps_per_gpu + (demand_tps * isl / osl / prefill_tps_per_gpu
                                              if prefill_tps_per_gpu is not None else 0.0)
    if not need <= MAX_FLEET_GPUS:
        raise SpecError("<input>", "demand", f"a load a fleet of at most {MAX_FLEET_GPUS:.0e} GPUs serves: "
                        f"{demand_tps:.4g} output tokens/s needs {need:.3g} GPUs at this configuration")
    pools = plan_pools(demand_tps, **perf)
    cap = max_load(pools["units"], **perf)
    mean = demand_tps if mean_demand_tps is None else mean_demand_tps
    money = economics(units=pools["units"], gpus_per_unit=int(gpus_per_unit), peak_tps=demand_tps,
                      mean_tps=mean, capacity_tps=cap, power_per_gpu=power_per_gpu,
                      price_per_unit=price_per_unit, price_per_gpu_hour=price_per_gpu_hour, pue=pue,
                      usd_per_kwh=usd_per_kwh, years=years)
    return dict(demand_tps=demand_tps, mean_demand_tps=mean, **pools, **money)



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
        raise SpecError("<input>", field, f"a positive number, got {shown(v)}")
    return check_override(float(v), hw, field)


def check_override(v: float, hw: Hardware, field: str, where: str = "<input>", path: str = "") -> float:
    """A user's ``usd_per_unit``, ``usd_per_gpu_hour`` or ``watts_per_gpu`` for ``hw``, checked
    against the ranges a spec's own figures must fall in (``PRICE_RANGES``, ``PLAUSIBLE``): a
    slip such as a GPU's price given for a rack's would otherwise size a fleet at a thousandth of
    its cost.  ``path``: the field's name in the error (default ``field``)."""
    path = path or field
    if field == "usd_per_unit":
        return check_price(v, "unit", hw.gpus_per_unit, where, path, hw.name)
    if field == "usd_per_gpu_hour":
        return check_price(v, "hour", hw.gpus_per_unit, where, path, hw.name)
    lo, hi, _ = PLAUSIBLE["power_per_gpu"]
    if not lo <= v <= hi:
        raise SpecError(where, path, f"an all-in power per GPU of {hw.name} from {lo:g} to {hi:g} W, "
                        f"got {v:g}")
    return v


#: Plausible ranges a plan's or a sizing's money inputs are checked against (an input outside is a
#: typo or a unit slip, and would overflow the costs): a horizon past 30 years outlives every
#: accelerator's depreciation (3-6 years) several times over; no grid sells power at 10 USD/kWh.
MAX_YEARS = 30.0
#: and one shorter than a month amortises a purchase over less than its delivery takes (1e-9
#: years priced Kimi on H200 at $701M per million tokens)
MIN_YEARS = 1.0 / 12.0
MAX_USD_PER_KWH = 10.0
#: no data hall draws three times its IT power (the worst measured are about 2.5)
MAX_PUE = 3.0


def check_years(years: Any, field: str = "years") -> float:
    """A horizon in years: finite, from :data:`MIN_YEARS` (a month) to :data:`MAX_YEARS`."""
    if isinstance(years, bool) or not isinstance(years, int | float) or not (
            math.isfinite(years) and MIN_YEARS <= years <= MAX_YEARS):
        raise SpecError("<input>", field, f"a number of years from 1/12 (a month) to {MAX_YEARS:g}, "
                        f"got {shown(years)}")
    return float(years)


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
            raise SpecError("<input>", name, f"a finite number {'>= 1' if lo else '> 0'}, got {shown(v)}")
    if pue > MAX_PUE:
        raise SpecError("<input>", "pue", f"a PUE from 1 to {MAX_PUE:g}, got {shown(pue)}")
    check_years(years)
    if isinstance(usd_per_kwh, bool) or not isinstance(usd_per_kwh, int | float) or not (
            math.isfinite(usd_per_kwh) and 0 <= usd_per_kwh <= MAX_USD_PER_KWH):
        raise SpecError("<input>", "usd_per_kwh", f"a price from 0 to {MAX_USD_PER_KWH:g} USD/kWh, got "
                        f"{shown(usd_per_kwh)}")
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
