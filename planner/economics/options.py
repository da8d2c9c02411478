"""One hardware option for sizing: its frontier, the best configuration per instance size at any
service level, and the checks shared by every sizing question."""


from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from planner.economics.cost import deployment, figures
from planner.economics.demand import Demand
from planner.errors import SpecError, shown
from planner.serving.frontiers import DEPLOYMENT_SEARCHES, frontier, frontier_at
from planner.specs.hardware import Hardware
from planner.specs.model import Model
from planner.specs.registry import load_model, load_systems

SIZING_SERVING = ("disaggregated", "aggregated", "decode")
BASES = ("own", "rental")


# ---- one hardware option: its frontier and candidates ----------------------------------------------
#: frontier errors that mean "this option cannot do it" (reported per option, not raised)
OPTION_LIMITS = ("max_ttft", "model", "prefill", "layout")
_CONFIG = ("weights", "mtp", "overlap", "tp_attn", "ep", "tp_moe", "batch", "bottleneck")


class Option:
    """One hardware option: all frontier points, and the best configuration per instance size
    at any service level."""

    def __init__(self, model: Model, hw: Hardware, figs: dict[str, dict[str, Any]],
                 fkw: dict[str, Any]) -> None:
        self.model, self.hw, self.figs = model, hw, figs
        self.serving = fkw["serving"]
        self.isl, self.osl = float(fkw["isl"]), float(fkw["osl"])
        self.ttft_limit = None
        if self.serving == "disaggregated":
            from planner.serving.frontiers import DEFAULT_MAX_TTFT

            self.ttft_limit = DEFAULT_MAX_TTFT if fkw.get("max_ttft") is None else float(fkw["max_ttft"])
        self.error: str | None = None
        self.too_large: str | None = None  #: why a demand was too large for any fleet, if it was
        self.pts = pd.DataFrame()
        try:
            # the as-deployed search by default (aggregated and disaggregated serving, realistic
            # mode, no layout asked for): each deployment, prefill workers and all, is the
            # instance a fleet replicates; the limit search's candidates pool rate-matched
            # prefill and decode instances
            if fkw.get("workload") is not None:
                self.pts = workload_points(model, hw, fkw)
                self.isl, self.osl = float(self.pts.attrs["isl"]), float(self.pts.attrs["osl"])
            else:
                self.pts = frontier(model, hw, all_points=True, metric="output",
                                    **{k: v for k, v in fkw.items() if k not in WORKLOAD_KEYS})
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
            ex = frontier_at(self.model, self.hw, [x], points=self.pts).iloc[0]
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
            ex = frontier_at(self.model, self.hw, [float(level)], points=pts).iloc[0]
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


#: the sizing keywords that describe a workload (:func:`workload_points`)
WORKLOAD_KEYS = ("workload", "slo", "kv_tiers")


def workload_points(model: Model, hw: Hardware, fkw: dict[str, Any]) -> pd.DataFrame:
    """A workload's frontier (:func:`planner.serving.workloads.workload_frontier`) as sizing's points:
    the prefill rate per GPU counts a prompt's reused tokens as done and the prefill pool's idle
    share as spent, ``X_p rho I / I_computed``, so that pools rate-matched at that rate hold the
    prefill GPUs the workload's frontier prices; TTFT is the service level's percentile."""
    from planner.serving.workloads import (
        NOT_WITH_WORKLOAD,
        TIERS,
        percentile_columns,
        refuse_with_workload,
        workload_frontier,
    )

    refuse_with_workload({k: fkw.get(k) for k in NOT_WITH_WORKLOAD}, fkw.get("search"))
    tiers = fkw.get("kv_tiers")
    df = workload_frontier(model, hw, fkw["workload"], tiers=TIERS if tiers is None else tuple(tiers),
                           serving=fkw["serving"], mode=fkw.get("mode") or "realistic",
                           weights=fkw.get("weights"), kv=fkw.get("kv"), mtp=fkw.get("mtp") or "auto",
                           slo=dict(fkw["slo"]) if fkw.get("slo") else None)
    if fkw["serving"] == "disaggregated" and not df.empty:
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
SEARCH_KEYS = ("context", "gpus", "max_gpus", "tp_attn", "ep", "tp_moe", "weights", "kv", "mtp",
                "overlap", "kv_offload", "mode", "acceptance", "search", "workload", "slo", "kv_tiers")


def setup(model: Any, hardware: Any, *, serving: str, isl: float, osl: float,
           max_ttft: float | None, pue: float, usd_per_kwh: float, years: float,
           usd_per_unit: Any, usd_per_gpu_hour: Any, watts_per_gpu: Any, basis: str,
           search: dict[str, Any]) -> tuple[Model, list[Option], dict[str, Any]]:
    search = dict(search)
    region = search.pop("region", None)
    unknown = set(search) - set(SEARCH_KEYS)
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
    hws = load_systems([hardware] if isinstance(hardware, str | Hardware) else hardware)
    if not hws:
        raise SpecError("<input>", "hardware", "at least one system")
    hws, left_out = by_region(hws, region)
    names = [h.name for h in hws]
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
    if fkw.get("workload") is None:
        for k in ("slo", "kv_tiers"):
            if fkw.get(k) is not None:
                raise SpecError("<input>", k, "a workload with it")
    opts = [Option(m, h, figs[h.name], fkw) for h in hws]
    first = next((o for o in opts if o.feasible_at_all), None)
    attrs = dict(model=m.name, serving=serving, isl=float(isl), osl=float(osl),
                 max_ttft=(first.pts.attrs.get("max_ttft") if first is not None and
                           serving == "disaggregated" else None),
                 mode=search.get("mode", "realistic"), basis=basis, pue=pue, usd_per_kwh=usd_per_kwh,
                 years=years, figures=figs, region=region, not_sold_in_region=left_out,
                 search=first.pts.attrs.get("search", "limit") if first is not None else None)
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
