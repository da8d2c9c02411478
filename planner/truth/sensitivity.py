"""Sensitivities: what each hardware resource is worth at a fixed per-user rate.

:func:`elasticities` gives, for each resource ``p``, the elasticity
``d ln(tokens/s per GPU) / d ln p`` at a fixed tokens/s per user, two ways:

* ``elasticity``: central finite differences (+-5%) of the frontier itself
  (:func:`planner.serving.frontiers.frontier_at` on :meth:`Hardware.replace`), so the search may change the
  configuration (layout, batch, precision, MTP) as the resource changes;
* ``symbolic``: from the sympy step time of the configuration chosen at the nominal point,
  ``t = equations.t_step``, differentiated with ``sympy.diff`` and evaluated there.  Holding the
  per-user rate fixed means holding ``t`` fixed while the batch ``b`` adjusts, so
  ``d ln y / d ln p = -(d ln t / d ln p) / (d ln t / d ln b)``; where the batch sits at the memory
  limit ``b_max`` instead, ``d ln y / d ln p = (d ln b_max / d ln p)(1 - d ln t / d ln b) - d ln t /
  d ln p``.  It covers the decode step only (not the prefill pool of a disaggregated deployment
  nor the prefill stretch of an aggregated one) and ignores re-optimisation, so it agrees with
  the finite difference where the decode pool dominates and the best configuration stays put.
  ``step_elasticity`` is ``d ln t / d ln p`` itself (fixed batch).

:func:`what_if` answers "what does 2x NVLink buy at 50 tokens/s/user" in one call.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import sympy as sp

from planner.errors import SpecError, shown
from planner.serving.frontiers import frontier_at
from planner.specs.hardware import Hardware
from planner.specs.model import Model
from planner.specs.scenario import Scenario

#: Resource name -> (label, how to scale it, symbols of the step model it is).
RESOURCES: dict[str, tuple[str, Callable[[Hardware, float], Hardware], tuple[str, ...]]] = {
    "hbm_bandwidth": ("HBM bandwidth", lambda h, f: h.replace(hbm_bandwidth=h.hbm_bandwidth * f),
                      ("B_hbm",)),
    "su_bandwidth": ("scale-up (NVLink) bandwidth", lambda h, f: h.replace(su_bandwidth=h.su_bandwidth * f),
                     ("B_su",)),
    "so_bandwidth": ("scale-out (NIC) bandwidth", lambda h, f: h.replace(so_bandwidth=h.so_bandwidth * f),
                     ("B_so",)),
    "flops": ("tensor FLOP/s (all dtypes)",
              lambda h, f: h.replace(flops={k: v * f for k, v in h.flops.items()}),
              ("P_e", "P_a", "P_d", "P_v", "P_c")),
    "hbm_capacity": ("HBM capacity", lambda h, f: h.replace(hbm_capacity=h.hbm_capacity * f), ("C_hbm",)),
}
#: Further resources :func:`what_if` accepts (scaled the same way; no elasticity row by default).
EXTRA: dict[str, tuple[str, Callable[[Hardware, float], Hardware], tuple[str, ...]]] = {
    "su_latency": ("scale-up latency", lambda h, f: h.replace(su_latency=h.su_latency * f), ("a_su",)),
    "so_latency": ("scale-out latency", lambda h, f: h.replace(so_latency=h.so_latency * f), ("a_so",)),
    "host_bandwidth": ("CPU-memory link bandwidth",
                       lambda h, f: h.replace(host_bandwidth=h.host_bandwidth * f), ("B_c2c",)),
    "host_capacity": ("CPU-attached memory", lambda h, f: h.replace(host_capacity=h.host_capacity * f),
                      ("C_host",)),
}
ALL_RESOURCES = {**RESOURCES, **EXTRA}
STEP = 0.05


def _resource(name: str) -> tuple[str, Callable[[Hardware, float], Hardware], tuple[str, ...]]:
    try:
        return ALL_RESOURCES[name]
    except KeyError:
        raise SpecError("<input>", "param", f"one of {', '.join(ALL_RESOURCES)}, got {name!r}") from None


def _at(model: Model, hw: Hardware, x: float, kw: dict[str, Any]) -> pd.Series:
    # the batch as a continuous quantity: a derivative of whole sequences would be a step
    return frontier_at(Scenario(model, (hw,), **{"search": "limit", **kw}), [x], whole=False).iloc[0]


def _y(row: pd.Series) -> float:
    v = float(row.get("tps_per_gpu", np.nan))
    return v if math.isfinite(v) else 0.0


#: the scenario's fields a sensitivity's frontiers take (its search is the limit search's)
OPTIONS = ("serving", "isl", "osl", "context", "max_ttft", "gpus", "max_gpus", "tp_attn", "ep", "tp_moe",
           "weights", "kv", "mtp", "acceptance", "overlap", "kv_offload", "batch_per_octave", "mode",
           "metric")


def _question(scenario: Scenario) -> tuple[Model, Hardware, dict[str, Any]]:
    if not isinstance(scenario, Scenario):
        raise SpecError("<input>", "scenario", f"a Scenario (planner.Scenario(model, system, ...)), got "
                        f"{type(scenario).__name__}")
    return scenario.load_model(), scenario.load_system(), {k: getattr(scenario, k) for k in OPTIONS}


def elasticities(scenario: Scenario, at_tps_user: float = 50.0, step: float = STEP,
                 params: tuple[str, ...] | None = None, symbolic: bool = True) -> pd.DataFrame:
    """Elasticity of tokens/s per GPU to each hardware resource of the scenario's system at
    ``at_tps_user`` tokens/s/user (the limit search's frontier, the scenario's other fields).  Returns
    one row per resource: ``param``, ``label``, ``value`` (SI), ``tps_per_gpu`` at -step, nominal,
    +step, ``elasticity`` (finite difference), ``symbolic`` and ``step_elasticity`` (sympy, at the
    nominal configuration), and the binding term at each.  ``df.attrs`` holds the nominal
    configuration.
    """
    model, hw, kw = _question(scenario)
    if not (isinstance(at_tps_user, int | float) and math.isfinite(at_tps_user) and at_tps_user > 0):
        raise SpecError("<input>", "at", f"a positive tokens/s per user, got {shown(at_tps_user)}")
    if not 0 < step < 0.5:
        raise SpecError("<input>", "step", f"a relative step in (0, 0.5), got {shown(step)}")
    params = tuple(params or RESOURCES)
    base = _at(model, hw, at_tps_user, kw)
    y0 = _y(base)
    if y0 <= 0:
        raise SpecError("<input>", "at", f"a rate {model.name} on {hw.name} reaches: {at_tps_user:g} "
                        "tokens/s per user is out of reach")
    sym = symbolic_elasticities(model, hw, base, kw, params) if symbolic else {}
    rows = []
    for p in params:
        label, scale, _ = _resource(p)
        lo = _at(model, scale(hw, 1 - step), at_tps_user, kw)
        hi = _at(model, scale(hw, 1 + step), at_tps_user, kw)
        y_lo, y_hi = _y(lo), _y(hi)
        if y_lo > 0 and y_hi > 0:
            e = (math.log(y_hi) - math.log(y_lo)) / (math.log(1 + step) - math.log(1 - step))
        else:
            e = math.nan
        s = sym.get(p, {})
        rows.append({"param": p, "label": label, "value": _value(hw, p), "tps_per_gpu_minus": y_lo,
                     "tps_per_gpu": y0, "tps_per_gpu_plus": y_hi, "elasticity": e,
                     "symbolic": s.get("elasticity", math.nan),
                     "step_elasticity": s.get("step_elasticity", math.nan),
                     "bottleneck": base.get("bottleneck"), "bottleneck_plus": hi.get("bottleneck")})
    out = pd.DataFrame(rows)
    cfg = {c: _clean(base.get(c)) for c in ("gpus", "tp_attn", "ep", "tp_moe", "expert_slots", "batch",
                                            "batch_per_gpu", "weights", "kv", "mtp", "overlap",
                                            "kv_offload", "bottleneck", "tps_per_user", "tps_per_gpu")}
    out.attrs.update(model=model.name, hardware=hw.name, at_tps_per_user=at_tps_user, step=step,
                     config=cfg, memory_capped=bool(sym.get("_capped", False)),
                     serving=kw.get("serving", "disaggregated"), mode=kw.get("mode", "realistic"))
    return out


def _value(hw: Hardware, p: str) -> float:
    if p == "flops":
        return float(max(hw.flops.values()))
    return float(getattr(hw, p))


def _clean(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def symbolic_elasticities(model: Model, hw: Hardware, row: pd.Series, kw: dict[str, Any],
                          params: tuple[str, ...]) -> dict[str, Any]:
    """``sympy.diff`` of :data:`planner.physics.equations.t_step` at the configuration in ``row``.

    Each resource's symbols are replaced by (value x s) and every other symbol by its value, so
    ``d ln t / d ln p`` is ``(d t / d s) / t`` at ``s = 1``; the same for the batch ``b`` and for
    the memory limit ``b_max``.
    """
    from planner.physics import equations as eq
    from planner.physics.step import resolve_precisions, resolve_speculation, symbol_values
    from planner.physics.symbols import REGISTRY

    if row is None or not math.isfinite(float(row.get("tps_per_gpu", np.nan))):
        return {}
    mode = kw.get("mode", "realistic")
    prec = resolve_precisions(model, hw, row["weights"], row["kv"])
    A = row.get("tokens_per_step") if hasattr(row, "get") else None
    spec = resolve_speculation(model, int(row["mtp"]),
                               float(A) if int(row["mtp"]) and A is not None and np.isfinite(A) else None)
    isl, osl = float(kw.get("isl") or 1024), float(kw.get("osl") or 1024)
    context = kw.get("context") or isl + osl / 2.0
    G, TPa = float(row["gpus"]), float(row["tp_attn"])
    b = float(row["batch"]) * TPa / G
    vals = symbol_values(model, hw, prec, mode, G=G, TP_a=TPa, EP=float(row["ep"]), TP_e=float(row["tp_moe"]),
                         E_slots=float(row["expert_slots"]), b=b, S=float(context), s_q=1 + spec.drafts,
                         s_h=1 + spec.drafts, n_d=spec.drafts, overlap=int(bool(row["overlap"])),
                         kv_offload=int(bool(row.get("kv_offload", False))), spec_kind=spec.kind)
    num = {n: float(np.asarray(vals[n])) for n in REGISTRY}
    # one scale symbol per resource and one for the batch: every other symbol becomes its number
    # in a single substitution (the costly step), and each derivative is then taken on the much
    # smaller expression left, all scales at 1
    groups = {p: _resource(p)[2] for p in params} | {"_b": ("b",)}
    scale = {g: sp.Symbol(f"s_{i}", positive=True) for i, g in enumerate(groups)}
    of = {n: scale[g] for g, names in groups.items() for n in names}
    ones = {v: 1 for v in scale.values()}

    memo: dict[sp.Basic, tuple[Any, Any]] = {}
    steps = (sp.ceiling, sp.floor, sp.Heaviside)
    symbol_of = {REGISTRY[n].symbol: n for n in REGISTRY}

    def walk(e: sp.Basic) -> tuple[Any, Any]:
        """(``e`` with every symbol outside the groups replaced by its number and the groups' by
        number x scale, its value at the configuration).  A maximum or minimum becomes the
        argument that binds there, a Piecewise the branch that holds, and a step function
        (ceiling, floor, Heaviside) its value: what their derivatives are almost everywhere, so
        the expression left is smooth and sympy's simplifier of Max is never called."""
        r = memo.get(e)
        if r is not None:
            return r
        if isinstance(e, sp.logic.boolalg.BooleanAtom):
            r = (e, bool(e))
        elif e in symbol_of:
            n = symbol_of[e]
            r = (sp.Float(num[n]) * of[n] if n in of else sp.Float(num[n]), num[n])
        elif e.is_Atom:
            r = (e, float(e))
        elif isinstance(e, sp.Max | sp.Min):
            kids = [walk(a) for a in e.args]
            best = (max if isinstance(e, sp.Max) else min)(v for _, v in kids)
            tied = [k for k in kids if k[1] == best]
            r = tied[0] if len(tied) == 1 else (e.func(*(k[0] for k in tied)), best)
        elif isinstance(e, sp.Piecewise):
            r = next(walk(pair.expr) for pair in e.args if walk(pair.cond)[1])
        else:
            kids = [walk(a) for a in e.args]
            v = e.func(*(sp.Float(k[1]) if isinstance(k[1], float) else k[1] for k in kids))
            v = bool(v) if isinstance(v, sp.logic.boolalg.Boolean) else float(v)
            r = (sp.Float(v), v) if isinstance(e, steps) else (e.func(*(k[0] for k in kids)), v)
        memo[e] = r
        return r

    def log_deriv(e: sp.Expr, v: float, group: str) -> float:
        d = float(sp.diff(e, scale[group]).subs(ones))
        return d / v if v else math.nan

    t, t0 = walk(eq.t_step)
    eps_b = log_deriv(t, t0, "_b")
    bm, b_max = walk(eq.b_max)
    capped = math.isclose(b, b_max, rel_tol=1e-6)
    out: dict[str, Any] = {"_capped": capped}
    for p in params:
        eps_t = log_deriv(t, t0, p)
        if capped:
            eps_bmax = log_deriv(bm, b_max, p)
            e = eps_bmax * (1.0 - eps_b) - eps_t
        else:
            e = -eps_t / eps_b if eps_b else math.nan
        out[p] = {"elasticity": e, "step_elasticity": eps_t}
    return out


def what_if(scenario: Scenario, factor: float = 2.0, param: str = "su_bandwidth", at: float = 50.0
            ) -> dict[str, Any]:
    """Tokens/s per GPU at ``at`` tokens/s per user with the scenario's system's ``param`` scaled
    by ``factor``, against the system as is; the configuration and binding term of each."""
    model, hw, kw = _question(scenario)
    if not (isinstance(factor, int | float) and math.isfinite(factor) and factor > 0):
        raise SpecError("<input>", "factor", f"a positive factor, got {shown(factor)}")
    label, scale, _ = _resource(param)
    base = _at(model, hw, at, kw)
    new = _at(model, scale(hw, factor), at, kw)
    y0, y1 = _y(base), _y(new)

    def cfg(r: pd.Series) -> dict[str, Any]:
        return {c: _clean(r.get(c)) for c in ("gpus", "tp_attn", "ep", "tp_moe", "batch_per_gpu", "weights",
                                              "mtp", "overlap", "bottleneck")}

    return {"model": model.name, "hardware": hw.name, "param": param, "label": label, "factor": factor,
            "at_tps_per_user": at, "tps_per_gpu": y0, "tps_per_gpu_new": y1,
            "gain": y1 / y0 if y0 > 0 else math.nan, "bottleneck": base.get("bottleneck"),
            "bottleneck_new": new.get("bottleneck"), "config": cfg(base), "config_new": cfg(new)}

