"""A frontier for a workload (:mod:`planner.specs.workload`): prefix reuse through KV tiers, the
prefill pool sized for a TTFT percentile, and TPOT at a percentile of the decode batch.

How a workload frontier is drawn (the equations of :mod:`planner.physics.serving_eq`):

- two limit-search frontiers at the workload's mean lengths: every reusable prefix recomputed
  (``y_miss``) and every one found cached (``y_hit``, the prompt is its new tokens only); the decode
  context is the whole context either way;
- at each point of the all-hit frontier the tiers hold a share ``hit_share`` of the sessions that
  wait between turns (their bytes against the tiers' capacity per GPU: HBM left over by the running
  batch, host memory, local NVMe, filled in that order), and the rate is ``y_reuse``;
- a session found in host memory or NVMe is copied back over that tier's link (``t_restore``), which
  its TTFT carries; where more requests miss than the TTFT percentile's tail, the request at the
  percentile prefills its whole prompt;
- disaggregated serving: the prefill pool runs at the utilisation whose queue keeps the TTFT
  percentile of the service level (``ttft_queue``; arrivals and prompt lengths from the workload),
  which adds prefill GPUs to every point; TPOT at its percentile is the step at the decode batch of
  that percentile (``b_p``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from planner.errors import SpecError
from planner.physics import compiled
from planner.physics.step import evaluate_configs
from planner.serving.comparison import envelope
from planner.serving.frontiers import _costs, frontier
from planner.serving.percentiles import batch_at, queue_wait
from planner.serving.search import pareto, row_inputs
from planner.specs.hardware import Hardware
from planner.specs.model import Model
from planner.specs.scenario import Scenario
from planner.specs.workload import KV_TIERS, Workload, load_workload, slo_key

TIERS = KV_TIERS
#: achieved fraction of a tier's link when a session's KV is copied back: assumed (a bulk copy of
#: many blocks; the stacks' own figures for LMCache and Dynamo's KV block manager are not published
#: per system)
TIER_EFFICIENCY = 0.8
#: the TTFT and TPOT percentiles a workload frontier reports when its service levels name none
DEFAULT_PERCENTILES = {"ttft": 0.99, "tpot": 0.90}
#: the highest prefill-pool utilisation searched for a TTFT service level
MAX_UTILISATION = 0.999


def tier_capacities(hw: Hardware, tiers: tuple[str, ...]) -> dict[str, tuple[float, float]]:
    """(capacity B per GPU, bandwidth B/s per GPU) of the host and NVMe tiers in use (HBM is per point)."""
    out = {}
    if "host" in tiers and hw.host_capacity > 0:
        out["host"] = (hw.host_capacity, hw.host_bandwidth)
    if "nvme" in tiers and hw.nvme_capacity > 0:
        out["nvme"] = (hw.nvme_capacity, hw.nvme_bandwidth)
    return out


#: frontier options a workload answer does not take: it sets the lengths and the TTFT service level,
#: and runs the limit search
NOT_WITH_WORKLOAD = ("context", "gpus", "max_gpus", "tp_attn", "ep", "tp_moe", "acceptance", "max_ttft")


def refuse_with_workload(values: dict[str, Any], search: Any = None, workload: str = "workload") -> None:
    """One line for the first of ``values`` (option name -> value, None where not given) that a
    workload answer does not take, or for the as-deployed ``search``; ``workload`` names the
    workload option in the message (``--workload`` on the command line)."""
    for name, value in values.items():
        if value is not None:
            raise SpecError("<input>", name, f"no {workload} with it (a workload sets the lengths and the "
                            "TTFT service level, and runs the limit search)")
    if search in ("rules", "recipes", "deployed"):
        raise SpecError("<input>", "search" if workload == "workload" else "--search",
                        f"limit with {workload} (whole deployments are priced as benchmarks of one "
                        "ISL/OSL pair)")


def _percentiles(wl: Workload) -> dict[str, float]:
    p = dict(DEFAULT_PERCENTILES)
    for key in wl.slo:
        metric, q = slo_key(key)
        p[metric] = q
    return p


def _slo_keys(pct: dict[str, float]) -> tuple[str, str]:
    """The service-level keys of the TTFT and TPOT percentiles (``ttft_p99``, ``tpot_p90``)."""
    return f"ttft_p{pct['ttft'] * 100:g}", f"tpot_p{pct['tpot'] * 100:g}"


def percentile_columns(attrs: dict[str, Any]) -> tuple[str, str]:
    """The TTFT and TPOT percentile columns of a workload frontier (``ttft_p99_s``, ``tpot_p90_s``)
    from its ``attrs``."""
    t, p = _slo_keys(attrs["percentiles"])
    return f"{t}_s", f"{p}_s"


def workload_frontier(scenario: Scenario) -> pd.DataFrame:
    """The frontier of ``scenario.workload`` on the scenario's system (see the module docstring).
    ``scenario.kv_tiers``: the KV tiers sessions may wait in between turns (default
    ``("hbm", "host", "nvme")``; any subset, or ``()`` for none: every later turn recomputes its
    prefix); ``scenario.slo``: service levels replacing the workload's.  Columns beside the
    frontier's: ``kv_hit_share``, ``kv_need_gb_per_gpu``, ``kv_<tier>_gb_per_gpu`` and
    ``kv_<tier>_use`` (share of its capacity), ``kv_binding_tier``, ``restore_s``,
    ``prefill_utilisation``, ``ttft_pNN_s``, ``tpot_pNN_s``; ``tps_per_gpu`` is output tokens/s per
    GPU with reuse and the prefill pool sized for the TTFT service level."""
    sc = scenario
    if sc.workload is None:
        raise SpecError("<input>", "workload", "a workload (a bundled name, a workload YAML or a trace CSV)")
    refuse_with_workload({k: getattr(sc, k) for k in NOT_WITH_WORKLOAD}, sc.search)
    model, hw, wl = sc.load_model(), sc.load_system(), load_workload(sc.workload)
    serving, mode, weights, kv, mtp, slo = sc.serving, sc.mode, sc.weights, sc.kv, sc.mtp, sc.slo
    tiers = TIERS if sc.kv_tiers is None else sc.kv_tiers
    if slo:
        wl = wl.with_slo(slo)
    tiers = tuple(tiers or ())
    bad = [t for t in tiers if t not in TIERS]
    if bad:
        raise SpecError("<input>", "tiers", f"KV tiers among {', '.join(TIERS)}, got {bad[0]!r}")
    if serving != "disaggregated":
        raise SpecError(
            "<input>",
            "serving",
            "disaggregated for a workload (its prefill pool is sized by queueing for the TTFT "
            "service level: a decode pool alone has no TTFT, aggregated serving is not modelled), "
            f"got {serving!r}",
        )
    pct = _percentiles(wl)
    isl, osl = max(round(wl.isl), 1), max(round(wl.osl), 1)
    new = max(round(wl.isl - wl.cached), 1)
    # a prompt's pass (and hand-off) must fit within the TTFT service level, where there is one
    tkey, pkey = _slo_keys(pct)
    tname, pname = f"{tkey}_s", f"{pkey}_s"
    limit = wl.slo.get(tkey)
    base = Scenario(model, (hw,), serving=serving, mode=mode, weights=weights, kv=kv, mtp=mtp,
                    search="limit", context=wl.decode_context, osl=osl,
                    max_ttft=limit if limit and serving == "disaggregated" else None)
    hit = frontier(base.replace(isl=new))
    try:
        miss = frontier(base.replace(isl=isl)) if new < isl else hit
    except SpecError:  # the whole prompt cannot be prefilled within the service level: no miss is served
        miss = hit.iloc[:0]
    x = hit.tps_per_user.to_numpy(float)
    y_hit = hit.output_tps_per_gpu.to_numpy(float)
    y_miss = np.zeros(len(hit))
    if len(miss):  # the all-miss frontier at each rate, flat below its slowest point (as a band reads it)
        m = miss.assign(tps_per_gpu=miss.output_tps_per_gpu)
        inside = np.nan_to_num(envelope(m, x), nan=0.0)
        y_miss = np.where(x < m.tps_per_user.min(), m.tps_per_gpu.max(), inside)
    kv_prec = kv or model.kv_precision
    m_tok = model.kv_bytes_per_token(kv_prec)
    m_sess = wl.session_tokens * m_tok + model.state_bytes
    pt, pp = pct["ttft"], pct["tpot"]
    hbm, tpot_p = _per_point(model, hw, hit, pp, wl, mode, serving)
    other = tier_capacities(hw, tiers)
    caps = {"hbm": hbm} if "hbm" in tiers else {}
    caps.update({t: np.full(len(hit), c) for t, (c, _) in other.items()})
    C = sum(caps.values(), np.zeros(len(hit)))
    if wl.cached <= 0:
        h = np.zeros(len(hit))
    elif wl.idle_s <= 0:
        h = np.ones(len(hit))  # no session waits: every prefix is still in flight
    else:
        h = np.asarray(
            compiled.evaluate_named(
                "hit_share",
                C_tier=C,
                O=wl.osl,
                t_idle=wl.idle_s,
                m_sess=m_sess,
                y_miss=np.maximum(y_miss, 1e-300),
                y_hit=y_hit,
            ),
            float,
        )
        h = np.where(y_miss > 0, h, np.where(C >= y_hit / wl.osl * wl.idle_s * m_sess, 1.0, 0.0))
    h = np.clip(h * np.ones(len(hit)), 0.0, 1.0)
    y = np.asarray(
        compiled.evaluate_named("y_reuse", h_r=h, y_hit=y_hit, y_miss=np.maximum(y_miss, 1e-300)), float
    )
    y = np.where(y_miss > 0, y, np.where(h >= 1, y_hit, 0.0))
    need = y / wl.osl * wl.idle_s * m_sess
    left = need * h
    cols: dict[str, Any] = {"kv_hit_share": h, "kv_need_gb_per_gpu": need / 1e9}
    deepest = np.full(len(hit), "", dtype=object)
    # where the tiers hold less than every session, the last one in use is full and binds ("no tier"
    # where none is in use: every later turn recomputes its prefix)
    short = (h < 1 - 1e-9) & (wl.cached > 0)
    binding = np.where(short, list(caps)[-1] if caps else "no tier", "none").astype(object)
    for t in TIERS:
        cap = caps.get(t)
        if cap is None:
            continue
        used = np.minimum(cap, left)
        left = left - used
        cols[f"kv_{t}_gb_per_gpu"] = cap / 1e9
        cols[f"kv_{t}_use"] = np.where(cap > 0, used / np.maximum(cap, 1e-300), 0.0)
        deepest = np.where(used > 0, t, deepest)
    # the copy back from the deepest tier in use (HBM: none)
    restore = np.zeros(len(hit))
    for t, (_, bw) in other.items():
        tr = float(
            compiled.evaluate_named(
                "t_restore",
                I_c=wl.cached,
                m_kv=m_tok,
                n_send=1.0,
                eta_tier=TIER_EFFICIENCY,
                B_tier=max(bw, 1.0),
            )
        )
        restore = np.where(deepest == t, tr / hit.tp_attn.to_numpy(float), restore)
    cols.update(
        kv_binding_tier=binding, kv_deepest_tier=np.where(deepest == "", "none", deepest), restore_s=restore
    )
    # the prefill queue: a prompt computes I - h I_c tokens at the prefill instance
    base = hit.ttft_s.to_numpy(float) + restore
    if "ttft_s" in miss.columns and len(miss):
        # where more than the percentile's tail of the requests miss, the request at the percentile
        # prefills its whole prompt
        base = np.where(1.0 - h > 1.0 - pt, float(miss.ttft_s.max()), base)
    if serving == "disaggregated":
        I_comp = np.asarray(compiled.evaluate_named("I_computed", I=wl.isl, h_r=h, I_c=wl.cached), float)
        X_p = hit.prefill_tps_per_gpu.to_numpy(float)
        S_p = I_comp / (X_p * hit.prefill_gpus.to_numpy(float))
        rho = _utilisation(pt, base, S_p, wl, limit)
        # prefill GPUs idle (1 - rho) of the time: their share of GPU-seconds per output token grows
        y = 1.0 / (1.0 / np.maximum(y, 1e-300) + (I_comp / wl.osl) * (1.0 / rho - 1.0) / X_p)
        ttft = base + queue_wait(pt, rho, S_p, wl.arrival_cv2, wl.length_cv2)
        cols["prefill_utilisation"] = rho
        cols["prompt_tokens_computed"] = I_comp
    else:
        ttft = base
    cols[tname] = ttft
    cols[pname] = tpot_p
    out = hit.assign(
        **cols,
        tps_per_gpu=y,
        output_tps_per_gpu=y,
        total_tps_per_gpu=y * (wl.isl + wl.osl) / wl.osl,
        y_hit=y_hit,
        y_miss=y_miss,
    )
    out = out.assign(**_costs(hw, out.tps_per_gpu.to_numpy(float)))
    ok = np.isfinite(out.tps_per_gpu) & (out.tps_per_gpu > 0)
    tpot_limit = wl.slo.get(pkey)
    if tpot_limit is not None:  # the service level on TPOT: points slower than it are not offered
        ok &= out[pname] <= tpot_limit
    out = pareto(out[ok]).reset_index(drop=True)
    out.attrs.update(
        hit.attrs,
        workload=wl.summary(),
        tiers=list(tiers),
        percentiles=pct,
        isl=wl.isl,
        osl=wl.osl,
        search="limit",
        scenario=sc.to_dict(),
    )
    return out


def _utilisation(
    p: float, base: np.ndarray, S_p: np.ndarray, wl: Workload, limit: float | None
) -> np.ndarray:
    """The highest prefill-pool utilisation whose wait at percentile ``p`` keeps TTFT within
    ``limit`` (bisection: the wait grows with utilisation); without a limit, the utilisation at
    which the wait equals the prompt's own service time."""
    lo, hi = np.full(len(base), 1e-6), np.full(len(base), MAX_UTILISATION)
    budget = (limit - base) if limit is not None else S_p
    for _ in range(60):
        mid = (lo + hi) / 2
        ok = queue_wait(p, mid, S_p, wl.arrival_cv2, wl.length_cv2) <= budget
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    return np.where(budget > 0, lo, np.nan)


def _per_point(model: Model, hw: Hardware, rows: pd.DataFrame, p: float, wl: Workload, mode: str,
               serving: str) -> tuple[np.ndarray, np.ndarray]:
    """For each point: the HBM its running batch leaves on the decode GPUs, per GPU of the deployment
    (a B), and its TPOT at percentile ``p``, the step at the instance batch of that percentile."""
    hbm, tpot = np.zeros(len(rows)), np.full(len(rows), math.nan)
    for i, (_, r) in enumerate(rows.iterrows()):
        prec, lay = row_inputs(model, hw, r, wl.decode_context)
        ranks = float(r.gpus) / float(r.tp_attn)
        B = float(r.batch_per_gpu) * float(r.gpus)
        s0 = evaluate_configs(model, hw, prec, mode, b=B / ranks, **lay)
        s1 = evaluate_configs(model, hw, prec, mode, b=float(batch_at(p, B, wl.arrival_cv2)) / ranks, **lay)
        free, b_max = (float(np.asarray(s0[k])) for k in ("memory.free", "memory.b_max"))
        share = float(r.get("decode_gpu_fraction", 1.0)) if serving == "disaggregated" else 1.0
        hbm[i] = max(free * (1 - B / ranks / b_max), 0.0) * share if b_max > 0 else 0.0
        tpot[i] = float(r.step_s) / float(r.tokens_per_step) * float(np.asarray(s1["step"])) / float(
            np.asarray(s0["step"]))
    return hbm, tpot


def best_at(df: pd.DataFrame, x: float) -> pd.Series | None:
    """The point of frontier ``df`` with the most tokens/s per GPU at ``x`` tokens/s per user or
    faster (None if no point is that fast)."""
    fast = df[df.tps_per_user >= x * (1 - 1e-12)]
    return None if fast.empty else fast.loc[fast.tps_per_gpu.idxmax()]


def kv_tiers(df: pd.DataFrame, at: float) -> dict[str, Any]:
    """Each tier's capacity, use and whether it binds at :func:`best_at` ``at`` tokens/s per user
    (for ``compare --workload``'s ``kv_tiers`` entry); empty if no point is that fast."""
    r = best_at(df, at)
    if r is None:
        return {}
    tiers = {}
    for t in TIERS:
        if f"kv_{t}_use" in df.columns:
            tiers[t] = {
                "capacity_gb_per_gpu": float(r[f"kv_{t}_gb_per_gpu"]),
                "use": float(r[f"kv_{t}_use"]),
                "binds": bool(r.kv_binding_tier == t),
            }
    return {
        "tps_per_user": float(r.tps_per_user),
        "hit_share": float(r.kv_hit_share),
        "need_gb_per_gpu": float(r.kv_need_gb_per_gpu),
        "binding": str(r.kv_binding_tier),
        "tiers": tiers,
    }
