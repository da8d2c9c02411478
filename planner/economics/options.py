"""One hardware option for sizing: its frontier, the best configuration per instance size at any
service level, and the checks shared by every sizing question."""


from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from planner.economics.cost import Costs, deployment
from planner.economics.demand import Demand
from planner.errors import SpecError, shown
from planner.serving.frontiers import DEPLOYMENT_SEARCHES, frontier, frontier_at
from planner.specs.hardware import Hardware
from planner.specs.model import Model
from planner.specs.scenario import Scenario

SIZING_SERVING = ("disaggregated", "aggregated", "decode")


# ---- one hardware option: its frontier and candidates ----------------------------------------------
#: frontier errors that mean "this option cannot do it" (reported per option, not raised)
OPTION_LIMITS = ("max_ttft", "model", "prefill", "layout")
_CONFIG = ("weights", "mtp", "overlap", "tp_attn", "ep", "tp_moe", "batch", "bottleneck")


class Option:
    """One hardware option: all frontier points, and the best configuration per instance size
    at any service level."""

    def __init__(self, model: Model, hw: Hardware, figs: dict[str, dict[str, Any]], sc: Scenario) -> None:
        self.model, self.hw, self.figs = model, hw, figs
        #: the scenario on this system alone, output tokens per GPU (what demand is counted in)
        self.sc = sc = sc.replace(model=model, systems=(hw,), stack=None, region=None)
        self.serving = sc.serving
        self.isl, self.osl = float(sc.isl), float(sc.osl)
        self.ttft_limit = None
        if self.serving == "disaggregated":
            from planner.serving.frontiers import DEFAULT_MAX_TTFT

            self.ttft_limit = DEFAULT_MAX_TTFT if sc.max_ttft is None else float(sc.max_ttft)
        self.error: str | None = None
        self.too_large: str | None = None  #: why a demand was too large for any fleet, if it was
        self.pts = pd.DataFrame()
        try:
            # the as-deployed search by default (aggregated and disaggregated serving, realistic
            # mode, no layout asked for): each deployment, prefill workers and all, is the
            # instance a fleet replicates; the limit search's candidates pool rate-matched
            # prefill and decode instances
            if sc.workload is not None:
                self.pts = workload_points(sc)
                self.isl, self.osl = float(self.pts.attrs["isl"]), float(self.pts.attrs["osl"])
            else:
                self.pts = frontier(sc, all_points=True)
        except SpecError as exc:
            if exc.field not in OPTION_LIMITS:  # bad input, not this option's limit: say so
                raise
            self.error = f"{exc.field}: {exc.expected}"
        self.top = float(self.pts.tps_per_user.max()) if not self.pts.empty else math.nan
        self._stairs: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        size = "gpus_total" if self.pts.attrs.get("search") in DEPLOYMENT_SEARCHES else "gpus"
        for g, grp in (self.pts.groupby(size) if not self.pts.empty else ()):
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
        if exact and self.pts.attrs.get("workload") is None:  # (a workload's points are its frontier's)
            ex = frontier_at(self.sc, [x], points=self.pts).iloc[0]
            if np.isfinite(ex.get("tps_per_gpu", np.nan)):
                out.append(self._cand(ex, exact=True))
        return out

    def _cand(self, r: pd.Series, exact: bool) -> dict[str, Any]:
        if self.pts.attrs.get("search") in DEPLOYMENT_SEARCHES:
            # a whole deployment is the instance: its output over every GPU, prefill workers included
            c = dict(tps_per_user=float(r.tps_per_user), tps_per_gpu=float(r.output_tps_per_gpu),
                     decode_tps_per_gpu=float(r.output_tps_per_gpu), instance_gpus=int(r.gpus_total),
                     prefill_tps_per_gpu=None, prefill_instance_gpus=None,
                     ttft_s=float(r.ttft_s), solved_exactly=exact)
            for k in _CONFIG:
                v = r.get(k)
                c[k] = v.item() if isinstance(v, np.generic) else v
            return c
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

    def point(self, c: dict[str, Any], level: float) -> pd.Series:
        """The frontier row candidate ``c`` (at service level ``level``) was read from: a grid point
        of :attr:`pts`, or the exact solve :func:`frontier_at` gave at ``level``."""
        size = "gpus_total" if self.pts.attrs.get("search") in DEPLOYMENT_SEARCHES else "gpus"
        pts = self.pts
        if not pts.empty and {size, "tps_per_user", "output_tps_per_gpu"} <= set(pts.columns):
            hit = pts[(pts[size] == c["instance_gpus"]) & (pts.tps_per_user == c["tps_per_user"])
                      & (pts.output_tps_per_gpu == c["tps_per_gpu"])]
            if len(hit):
                return hit.iloc[0]
        if c.get("solved_exactly") and pts.attrs.get("workload") is None:
            ex = frontier_at(self.sc, [float(level)], points=pts).iloc[0]
            if float(ex.get("tps_per_gpu", math.nan)) == c["tps_per_gpu"]:
                return ex
        raise SpecError("<input>", "pool", f"the frontier point of the {self.hw.name} pool at "
                        f"{c['tps_per_user']:.4g} tokens/s per user (not found in its frontier)")

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
        key = "usd_per_mtok_owned" if basis == "own" else "usd_per_mtok_rental"
        found = None
        for c in self.candidates(x, exact):
            # the load at the rate each user actually gets: users x the candidate's own tokens/s
            # per user (not the level), so that its instances hold every user
            peak, mean = demand.peak_mean(c["tps_per_user"], self.osl)
            try:
                d = self.deploy(c, peak, mean)
            except SpecError as exc:  # a demand no fleet of this configuration serves
                self.too_large = exc.expected
                continue
            score = (d[key], -c["tps_per_gpu"])
            if found is None or score < found[0]:
                found = (score, c, d)
        return None if found is None else (found[1], found[2])

    def reason(self, x: float) -> str:
        if self.error:
            return self.error
        if self.too_large and x <= self.top:
            return f"demand: {self.too_large}"
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


def workload_points(sc: Scenario) -> pd.DataFrame:
    """A workload's frontier (:func:`planner.serving.workloads.workload_frontier`) as sizing's points:
    the prefill rate per GPU counts a prompt's reused tokens as done and the prefill pool's idle
    share as spent, ``X_p rho I / I_computed``, so that pools rate-matched at that rate hold the
    prefill GPUs the workload's frontier prices; TTFT is the service level's percentile."""
    from planner.serving.workloads import percentile_columns, workload_frontier

    df = workload_frontier(sc)
    if sc.serving == "disaggregated" and not df.empty:
        I = float(df.attrs["isl"])
        df = df.assign(prefill_tps_per_gpu=df.prefill_tps_per_gpu * df.prefill_utilisation * I
                       / df.prompt_tokens_computed)
    return df.assign(ttft_s=df[percentile_columns(df.attrs)[0]])


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
def setup(scenario: Scenario, costs: Costs | None) -> tuple[Model, list[Option], dict[str, Any]]:
    """The sizing options of ``scenario`` (each of its systems sold in its region) priced at
    ``costs`` (default :class:`Costs`), and the attributes every sizing table carries."""
    sc, costs = scenario, Costs() if costs is None else costs
    if not isinstance(sc, Scenario):
        raise SpecError("<input>", "scenario", f"a Scenario (planner.Scenario(model, systems, ...)), got "
                        f"{type(sc).__name__}")
    if not isinstance(costs, Costs):
        raise SpecError("<input>", "costs", f"a Costs (planner.Costs(pue=..., years=...)), got "
                        f"{type(costs).__name__}")
    if sc.metric != "output":
        raise SpecError("<input>", "metric", "not settable for sizing: demand is output tokens/s, so "
                        "throughput is always output tokens/s per GPU counting every GPU")
    if sc.serving not in SIZING_SERVING:
        raise SpecError("<input>", "serving", f"one of {', '.join(SIZING_SERVING)} for sizing (demand "
                        f"is in output tokens), got {sc.serving!r}")
    if sc.max_ttft is not None and sc.serving != "disaggregated":
        raise SpecError("<input>", "max_ttft", "only with disaggregated serving (it is the prefill "
                        "pool's limit); TTFT is not modelled for aggregated or decode-only serving")
    m = sc.load_model()
    hws, left_out = by_region(sc.load_systems(), sc.region)
    names = [h.name for h in hws]
    for field in ("usd_per_unit", "usd_per_gpu_hour", "watts_per_gpu"):
        ov = getattr(costs, field)
        if isinstance(ov, Mapping):
            bad = sorted(set(ov) - set(names))
            if bad:
                raise SpecError("<input>", field, f"overrides for the systems sized ({', '.join(names)}), "
                                f"got {', '.join(map(str, bad))}")
    figs = {h.name: costs.figures(h) for h in hws}
    opts = [Option(m, h, figs[h.name], sc) for h in hws]
    first = next((o for o in opts if o.feasible_at_all), None)
    attrs = dict(model=m.name, serving=sc.serving, isl=float(sc.isl), osl=float(sc.osl),
                 max_ttft=(first.pts.attrs.get("max_ttft") if first is not None and
                           sc.serving == "disaggregated" else None),
                 mode=sc.mode, basis=costs.basis, pue=costs.pue, usd_per_kwh=costs.usd_per_kwh,
                 years=costs.years, figures=figs, region=sc.region, not_sold_in_region=left_out,
                 search=first.pts.attrs.get("search", "limit") if first is not None else None,
                 scenario=sc.to_dict())
    if first is not None and first.pts.attrs.get("workload") is not None:
        attrs.update(isl=first.isl, osl=first.osl, workload=first.pts.attrs["workload"],
                     tiers=first.pts.attrs["tiers"], max_ttft=None)
    return m, opts, attrs


def by_region(hws: list[Hardware], region: str | None) -> tuple[list[Hardware], list[str]]:
    """The systems that may be sold in ``region`` (``system.regions``; a spec that does not say
    counts as sold everywhere) and the names of those left out; all of them when ``region`` is
    None.  None left is a SpecError naming the regions each is sold in."""
    from planner.specs.regions import REGIONS

    if region is None:
        return hws, []
    if region not in REGIONS:
        raise SpecError("<input>", "region", f"one of {', '.join(REGIONS)}, got {region!r}")
    keep = [h for h in hws if h.sold_in(region)]
    if not keep:
        where = "; ".join(f"{h.name}: {', '.join(h.regions)}" for h in hws)
        raise SpecError("<input>", "region", f"a system sold in {region} among those given ({where})")
    return keep, [h.name for h in hws if not h.sold_in(region)]


def no_option(opts: list[Option], level: float) -> SpecError:
    best = "; ".join(f"{o.hw.name}: {o.reason(level)}" for o in opts)
    ttft = opts[0].ttft_limit
    asked = f">= {level:g} tokens/s/user" + (f", TTFT <= {ttft:g} s" if ttft is not None else "")
    return SpecError("<input>", "service_level", f"a service level some option can meet (asked: {asked}); "
                     f"best each can do: {best}")


def check_level(v: Any, field: str = "min_tps_user") -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | np.number) or not (
            math.isfinite(float(v)) and float(v) > 0):
        raise SpecError("<input>", field, f"a positive rate in tokens/s per user, got {shown(v)}")
    return float(v)


def mark_cheapest(df: pd.DataFrame, basis: str) -> pd.DataFrame:
    key = "usd_per_mtok_owned" if basis == "own" else "usd_per_mtok_rental"
    df["cheapest"] = False
    ok = df[df.feasible] if "feasible" in df else df
    if not ok.empty and key in ok:
        df.loc[ok[key].astype(float).idxmin(), "cheapest"] = True
    return df
