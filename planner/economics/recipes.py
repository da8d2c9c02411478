"""Launch recipes of the pools a sizing or a fleet plan chose (``size --recipes``, ``plan --recipes``).

A pool is whole copies of one deployment of one system, priced with one serving stack's fit (the
system's, ``hw.stack``).  Its recipe is that deployment as :func:`planner.serving.launch.render`
writes it for that stack: the frontier row the pool's configuration was read from
(:meth:`planner.economics.options.Option.point`).  Under the rules or recipes search that row is
the deployment itself; under the limit search (a layout or another search option asked for) it is
one decode instance and its prefill instance, and the deployment is the pool's instances in their
smallest whole ratio (decode workers, prefill workers), at the row's batch per decode worker,
priced as deployed (:func:`planner.serving.deployed.predict`).  Where the stack cannot run the
pool (its system's GPUs, a worker layout its flags cannot state, no checkpoint listed at the
pool's weights) the pool gets the one-line reason instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from planner.economics.options import Option
from planner.errors import SpecError
from planner.serving.frontiers import DEPLOYMENT_SEARCHES


@dataclass
class PoolSource:
    """One pool: the option (system and frontier) it was priced on, its configuration ``c``
    (an :meth:`Option.candidates` entry), the service level, its instances and a label."""

    option: Option
    c: dict[str, Any]
    level: float
    label: str                       #: the pool's name in the output (workload and system)
    slug: str                        #: the start of its recipe's name
    decode_instances: int
    prefill_instances: int
    extra: dict[str, Any]            #: the pool's own figures for the sidecar (units, capacity...)


def _limit_point(o: Option, r: pd.Series, decode: int, prefill: int) -> tuple[pd.Series, int]:
    """The deployment of a limit-search pool (see the module docstring) priced as deployed, and
    the copies of it the pool holds."""
    from planner.serving.deployed import LAYOUT_COLUMNS, predict
    from planner.serving.launch import worker_layout

    disagg = o.serving == "disaggregated"
    decode = max(int(decode), 1)
    prefill = max(int(prefill), 1) if disagg else 1
    copies = math.gcd(decode, prefill) if disagg else decode
    wd, wp = (decode // copies, prefill // copies) if disagg else (1, 1)
    g, t, e = float(r.gpus), float(r.tp_attn), float(r.ep)
    pg, pt, pe = ((float(r.prefill_gpus), float(r.prefill_tp_attn), float(r.prefill_ep)) if disagg
                  else (g, t, e))
    stack = o.hw.stack
    worker_layout(stack, g, t, e)
    if disagg:
        worker_layout(stack, pg, pt, pe)
    dep = pd.DataFrame([dict(zip(LAYOUT_COLUMNS, (wd, g, t, e, wp, pg, pt, pe), strict=True),
                             disagg=disagg, concurrency=float(wd * round(float(r.batch))),
                             drafts=int(r.get("mtp", 0) or 0))])
    p = predict(o.model, o.hw, dep, weights=str(r.weights), kv=str(o.pts.attrs.get("kv") or r.get("kv")),
                isl=o.isl, osl=o.osl)
    if int(p.reason.iloc[0]) != 0:
        raise SpecError("<input>", "pool", f"a deployment {stack} runs as deployed: {wd} decode worker(s) "
                        f"of {g:g} GPUs at {dep.concurrency.iloc[0]:g} users does not "
                        f"({p.why_infeasible.iloc[0]})")
    row = pd.concat([dep.iloc[0], p.iloc[0].drop(labels=[c for c in p.columns if c in dep.columns])])
    row["weights"] = str(r.weights)
    return row, copies


def pool_recipe(src: PoolSource, *, name: str, what: str, date: str | None = None) -> Any:
    """The :class:`planner.serving.launch.Recipe` of one pool (SpecError: why it has none).
    ``what``: how the pool was chosen (``the cheapest fleet plan's pool``), for the header."""
    from planner.serving.launch import check_runs, render, stack_entry

    o, c = src.option, src.c
    hw = o.hw
    if not hw.stack:
        raise SpecError("<input>", "stack", f"a serving stack's fit on {hw.name} (the pool was priced "
                        "without one; name one as SYSTEM@STACK)")
    stack_entry(hw.stack)
    check_runs(hw.stack, hw)
    if o.serving not in ("aggregated", "disaggregated"):
        raise SpecError("<input>", "serving", f"aggregated or disaggregated serving (a {o.serving} pool "
                        "alone has no launch recipe)")
    if o.pts.attrs.get("workload") is not None:
        raise SpecError("<input>", "sessions", "a pool of fixed lengths (a workload of sessions has no "
                        "single benchmark length)")
    r = o.point(c, src.level)
    search = o.pts.attrs.get("search", "limit")
    if search in DEPLOYMENT_SEARCHES:
        point, copies = r, max(int(src.decode_instances), 1)
        how = f"the {search} search's deployment it was priced at"
    else:
        point, copies = _limit_point(o, r, src.decode_instances, src.prefill_instances)
        how = ("the limit search's instances in the pool's ratio, priced as deployed (the pool's figures "
               "are the limit search's)")
    pool = dict(label=src.label, copies=copies, search=search, min_tps_user=float(src.level),
                tps_per_user=float(c["tps_per_user"]), tps_per_gpu=float(c["tps_per_gpu"]),
                instance_gpus=int(c["instance_gpus"]), decode_instances=int(src.decode_instances),
                prefill_instances=int(src.prefill_instances), **src.extra)
    pool["note"] = (f"{src.label}: {copies} cop{'y' if copies == 1 else 'ies'} of this deployment "
                    f"({what}; {how}); the pool prices {c['tps_per_gpu']:.1f} output tokens/s per GPU at "
                    f"{c['tps_per_user']:.1f} tokens/s per user")
    rec = render(point, model=o.model, hw=hw, stack=hw.stack, isl=o.isl, osl=o.osl,
                 kv=str(o.pts.attrs.get("kv")), x=float(src.level),
                 calibration=str(o.pts.attrs.get("calibration", "")), date=date, name=name,
                 chosen=f"{what} at >= {src.level:g} tokens/s per user", pool=pool)
    rec.sidecar["scenario"] = o.sc.to_dict()  # the question the pool was priced on
    return rec


def pool_recipes(sources: list[PoolSource], *, what: str, date: str | None = None
                 ) -> tuple[list[Any], list[tuple[str, str]]]:
    """Each pool's recipe, named after its label (made unique), and ``(label, why)`` for each pool
    that has none."""
    from planner.serving.launch import _k8s_name

    done, refused, names = [], [], set()
    for s in sources:
        base = _k8s_name(f"{s.slug}-{s.option.hw.stack or 'nostack'}-{int(s.c['instance_gpus'])}gpu")
        name, k = base, 2
        while name in names:
            name = _k8s_name(f"{base[:58]}-{k}")
            k += 1
        try:
            rec = pool_recipe(s, name=name, what=what, date=date)
        except SpecError as exc:
            refused.append((s.label, exc.expected))
            continue
        names.add(name)
        done.append(rec)
    return done, refused


def sizing_sources(df: pd.DataFrame, options: list[Option]) -> list[PoolSource]:
    """Each feasible row of a sizing answer (:mod:`planner.economics.sizing`, run with
    ``options_out=options``) as a pool."""
    by_name = {o.hw.name: o for o in options}
    out = []
    ok = df[df.feasible.astype(bool)] if "feasible" in df else df
    many = ok.hardware.duplicated(keep=False)
    for (_, r), twice in zip(ok.iterrows(), many, strict=True):
        o = by_name[str(r.hardware)]
        c = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
        level = float(r.min_tps_user)
        at = f" at {level:g} tokens/s per user" if twice else ""
        label = f"{df.attrs.get('model', o.model.name)} on {r.hardware}{at}"
        extra = {k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()
                 if k in ("hardware", "units", "unit", "gpus", "capacity_tps", "demand_tps")}
        slug = f"{o.model.name}-{r.hardware}" + (f"-{level:g}tpsu" if twice else "")
        out.append(PoolSource(option=o, c=c, level=level, label=label, slug=slug,
                              decode_instances=_count(r.get("decode_instances")),
                              prefill_instances=_count(r.get("prefill_instances")), extra=extra))
    return out


def _count(v: Any) -> int:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return 0
    return int(v) if math.isfinite(v) else 0
