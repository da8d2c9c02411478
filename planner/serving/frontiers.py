"""Serving modes and the frontier: decode, prefill, aggregated, disaggregated.

:func:`frontier` returns the upper-right Pareto envelope of (tokens/s per user, tokens/s per
GPU) as a DataFrame, one row per point, with its configuration and binding term.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from planner.errors import SpecError, shown
from planner.physics import compiled
from planner.physics.step import CATEGORIES, default_slots, evaluate_configs, pass_kernels, resolve_precisions
from planner.serving.prefill import (
    aggregated_prefill_terms,
    chunked_prefill_rate,
    served_ttft,
)
from planner.serving.search import (
    SearchSpace,
    decode_candidates,
    layouts,
    mtp_options,
    overlap_options,
    pareto,
    precision_options,
    row_inputs,
    solve_batch,
    whole_batch,
)
from planner.specs.hardware import Hardware
from planner.specs.model import Model
from planner.specs.scenario import (  # noqa: F401  (re-exported: the frontier's vocabulary)
    BATCH_PER_OCTAVE,
    DEPLOYMENT_SEARCHES,
    METRICS,
    SEARCH_ALIASES,
    SEARCHES,
    SERVING_MODES,
    Scenario,
    default_search,
)

DEFAULT_MAX_TTFT = 2.0  # s


@dataclass(frozen=True)
class Workload:
    """Input/output lengths (tokens) and the decode context they imply."""

    isl: float = 1024
    osl: float = 1024
    context: float | None = None  #: mean KV length in decode; default isl + osl / 2

    @property
    def decode_context(self) -> float:
        return self.context if self.context is not None else self.isl + self.osl / 2.0

    def check(self, model: Model | None = None) -> None:
        """Token counts: whole ISL and OSL >= 1, a context >= 1; with ``model``, a request
        (ISL + OSL) and the decode context within its context window."""
        for name, v in (("isl", self.isl), ("osl", self.osl), ("context", self.context)):
            if v is None and name == "context":
                continue
            if isinstance(v, bool) or not isinstance(v, int | float | np.number) or not (
                    math.isfinite(v) and v >= 1):
                raise SpecError("<input>", name, f"a token count >= 1, got {shown(v)}")
            if name != "context" and not float(v).is_integer():
                raise SpecError("<input>", name, f"a whole number of tokens, got {shown(v)}")
        if model is not None:
            model.check_length(self.isl + self.osl, "isl", "tokens of prompt + output (ISL + OSL)")
            model.check_length(self.decode_context, "context", "tokens of decode context")

    @property
    def label(self) -> str:
        return f"ISL {self.isl:g} / OSL {self.osl:g}"


# ---- prefill -------------------------------------------------------------------------------
def prefill_candidates(model: Model, hw: Hardware, space: SearchSpace, isl: float, mode: str,
                       points: int = 24) -> pd.DataFrame:
    """Prefill passes on every layout and a geometric grid of whole prompts per attention rank
    (one up to 64k tokens' worth; a prompt is not split over attention data-parallel ranks).
    Rows: feasible points with TTFT (pass time) and prompt tokens/s per GPU."""
    lay = layouts(model, hw, space.gpus, space.max_gpus, space.tp_attn, space.ep, space.tp_moe)
    frames = []
    for weights in precision_options(model, hw, space.weights):
        prec = resolve_precisions(model, hw, weights, space.kv)
        for o in overlap_options(space.overlap, model):
            G, TPa, EPv, TPe, slots = (lay[c].values[:, None].astype(float)
                                       for c in ("gpus", "tp_attn", "ep", "tp_moe", "expert_slots"))
            # whole prompts per attention rank, one up to 64k tokens' worth: a prompt is not split
            # over attention data-parallel ranks (each runs its own requests' attention)
            top = max(float(whole_batch(65536.0 / isl)), 1.0)
            per_rank = np.unique(np.round(np.exp(np.log(top) * np.linspace(0, 1, points))))
            b = per_rank[None, :] * np.ones_like(G)
            B = b * G / TPa
            out = evaluate_configs(model, hw, prec, mode, G=G, TP_a=TPa, EP=EPv, TP_e=TPe,
                                   E_slots=slots, b=b, S=isl, overlap=o, phase="prefill")
            shape = b.shape

            def flat(x: Any, shape: tuple = shape) -> np.ndarray:
                return np.broadcast_to(np.asarray(x), shape).ravel()

            frames.append(pd.DataFrame({
                "prefill_gpus": flat(G).astype(int), "prefill_tp_attn": flat(TPa).astype(int),
                "prefill_ep": flat(EPv).astype(int), "prefill_tp_moe": flat(TPe).astype(int),
                "prefill_expert_slots": flat(slots).astype(int),
                "prefill_batch": flat(B).astype(int), "prefill_weights": weights,
                "prefill_overlap": bool(o),
                "prefill_pass_s": flat(out["step"]),
                "prefill_tps_per_gpu": flat(out["prefill_tps_gpu"]),
                "prefill_bottleneck": np.asarray(CATEGORIES, dtype=object)[flat(out["bottleneck"])],
                "feasible": flat(out["feasible"]),
            }))
    df = pd.concat(frames, ignore_index=True)
    return df[df.feasible].drop(columns="feasible").reset_index(drop=True)


def kv_transfer_time(model: Model, hw: Hardware, kv: str, isl: float, n_send: Any,
                     same_domain: bool, mode: str) -> Any:
    """Seconds to hand one request's KV from prefill to decode: over the scale-up domain when
    both pools sit in one, over the NIC otherwise.  A hybrid's linear-mixer states go with it,
    spread over the prompt's tokens (``state_bytes / isl`` per token)."""
    eff = hw.efficiency
    if same_domain:
        B, eta, a = hw.su_bandwidth, eff.scale_up, hw.su_latency
    else:
        B, eta, a = hw.so_bandwidth, eff.scale_out, hw.so_latency
    if mode == "bound":
        eta, a = 1.0, 0.0
    m_kv = model.kv_bytes_per_token(kv) + model.state_bytes / np.maximum(isl, 1.0)
    return compiled.evaluate_named("t_kv_transfer", I=isl, m_kv=m_kv, B_link=B, eta_link=eta, alpha_link=a,
                                   n_send=n_send)


def request_latency(hw: Hardware, mode: str) -> float:
    """``t_req``: a request's latency outside the forward passes (tokenisation, scheduling, the
    first token's return), s; fitted per stack to the measured runs' TTFT (0 in bound mode)."""
    return 0.0 if mode == "bound" else float(hw.efficiency.ttft_request)


def host_time_per_kernel(hw: Hardware, mode: str) -> float:
    """``tau_h``: the host time of each kernel of a prefill pass (dispatched and launched outside
    CUDA graphs), s; fitted per stack to the measured runs' TTFT (0 in bound mode)."""
    return 0.0 if mode == "bound" else float(hw.efficiency.ttft_host)


def host_latency(hw: Hardware, model: Model, mode: str) -> float:
    """``tau_h n_kp``: the host time of one prefill pass of ``model``, s (``ttft_served``'s host term
    alone)."""
    return float(served_ttft(0.0, 0.0, 0.0, 0.0, host_time_per_kernel(hw, mode), pass_kernels(model)))


def served_ttft_one(hw: Hardware, model: Model, mode: str, t_pass: Any) -> Any:
    """Time to first token of a request that arrives alone at a free prefill instance:
    ``ttft_served`` with no prompt wave queued ahead of it (``q_w t_wave = 0``; the arrival pattern
    that sets the wave is not part of a frontier), ``t_pass`` the prefill pass and KV hand-off."""
    return served_ttft(request_latency(hw, mode), 0.0, t_pass, 0.0, host_time_per_kernel(hw, mode),
                       pass_kernels(model))


def best_prefill(model: Model, hw: Hardware, space: SearchSpace, isl: float, mode: str,
                 max_ttft: float) -> pd.Series:
    """The prefill configuration with the most prompt tokens/s per GPU whose time to first token
    (the request's latency outside the passes, its pass with its host time and a worst-case NIC
    hand-off of the KV: :func:`served_ttft_one`) stays within ``max_ttft``; of configurations as
    good (replicas of one data-parallel layout give the same rate at every size), the smallest
    instance."""
    cand = prefill_candidates(model, hw, space, isl, mode)
    if cand.empty:
        raise SpecError("<input>", "prefill", f"a prefill layout that fits {model.name} on {hw.name}")
    kv = space.kv or model.kv_precision
    kv_t = kv_transfer_time(model, hw, kv, isl, cand.prefill_tp_attn.to_numpy(float), False, mode)
    cand = cand.assign(ttft_s=served_ttft_one(hw, model, mode, cand.prefill_pass_s.to_numpy(float) + kv_t),
                       kv_transfer_s=kv_t, ttft_request_s=request_latency(hw, mode),
                       ttft_host_s=host_latency(hw, model, mode))
    ok = cand[cand.ttft_s <= max_ttft]
    if ok.empty:
        fastest = cand.ttft_s.min()
        raise SpecError("<input>", "max_ttft",
                        f"a limit the prefill can meet: {model.name} on {hw.name} needs at least "
                        f"{fastest:.3g} s for a {isl:g}-token prompt")
    best = ok[ok.prefill_tps_per_gpu >= ok.prefill_tps_per_gpu.max() * (1 - 1e-9)]
    return best.loc[best.prefill_gpus.idxmin()]


# ---- the frontier ----------------------------------------------------------------------------
def calibration_label(hw: Hardware) -> str:
    """Which realistic-mode efficiencies a system carries, for output headers (a datasheet alone
    says whose calibration it borrows)."""
    whose = (f" borrowed from {hw.calibration_from} (a datasheet alone: its family's reference)"
             if hw.calibration_from else "")
    if hw.stack:
        return f"{hw.name}: {hw.stack} fit to measured runs{whose}"
    return f"{hw.name}: efficiency block of its {'reference' if whose else 'spec'}{whose}"


def _costs(hw: Hardware, y_output: Any) -> dict[str, Any]:
    return {
        "tps_per_mw": compiled.evaluate_named("tps_per_mw", y=y_output, W_gpu=hw.power_per_gpu),
        "usd_per_mtok_rental": compiled.evaluate_named("usd_per_mtok", y=y_output, c_h=hw.price_per_gpu_hour),
    }


def _serving_columns(hw: Hardware, wl: Workload, serving: str, metric: str, X_d: np.ndarray,
                     X_p: Any) -> dict[str, Any]:
    """Per-GPU rates of the deployment from the decode rate ``X_d`` (output tokens/s per decode
    GPU) and the prefill rate ``X_p``: output per GPU counting every GPU, input + output, the
    chosen ``metric``, the decode share of GPUs (disaggregated), tokens/s per MW and $/Mtok."""
    out: dict[str, Any] = {}
    if serving == "disaggregated":
        y_out = compiled.evaluate_named("y_output", X_d=X_d, X_p=X_p, I=wl.isl, O=wl.osl)
        frac = compiled.evaluate_named("prefill_per_decode", X_d=X_d, X_p=X_p, I=wl.isl, O=wl.osl)
        out["decode_gpu_fraction"] = 1.0 / (1.0 + frac)
    else:
        # decode pool alone; or aggregated, where every GPU does both and _aggregate already
        # stretched each step by the prefill it carries
        y_out = X_d
    y_out = np.asarray(y_out, dtype=float) * np.ones(len(X_d))
    total = y_out * (wl.isl + wl.osl) / wl.osl
    out.update(tps_per_gpu={"output": y_out, "total": total, "decode": X_d}[metric],
               output_tps_per_gpu=y_out, total_tps_per_gpu=total, **_costs(hw, y_out))
    return out


def _aggregate(model: Model, hw: Hardware, dec: pd.DataFrame, space: SearchSpace, wl: Workload,
               mode: str) -> pd.DataFrame:
    """Stretch each decode point by the chunked prefill its GPUs also carry (same layout)."""
    keys = ["gpus", "tp_attn", "ep", "tp_moe", "expert_slots", "weights", "kv", "overlap"]
    rates = {}
    for key in dec.groupby(keys, sort=False).groups:
        G, TPa, EPv, TPe, slots, weights, kv, o = key
        prec = resolve_precisions(model, hw, weights, kv)
        rate, share = chunked_prefill_rate(model, hw, prec, mode, G=G, TP_a=TPa, EP=EPv, TP_e=TPe,
                                           E_slots=slots, isl=wl.isl, overlap=int(o), local_share=True)
        rates[key] = (float(rate), float(share))
    X_p, phi = np.array([rates[tuple(r)] for r in dec[keys].itertuples(index=False)]).reshape(-1, 2).T
    b_rank = dec.batch_per_gpu.values * dec.tp_attn.values
    t_agg = compiled.evaluate_named("t_step_aggregated", t_step=dec.step_s.values, I=wl.isl, O=wl.osl,
                                    b=b_rank, A=dec.tokens_per_step.values, TP_a=dec.tp_attn.values, X_p=X_p,
                                    **aggregated_prefill_terms(model, mode, dec.gpus.values,
                                                               dec.tp_attn.values, wl.isl, phi))
    A = dec.tokens_per_step.values
    out = dec.assign(
        prefill_tps_per_gpu=X_p, step_s=t_agg, tps_per_user=A / t_agg,
        decode_tps_per_gpu=b_rank * A / (t_agg * dec.tp_attn.values),
    )
    return out[np.isfinite(X_p)]


def speculation_summary(model: Model, mtp: Any = "auto", acceptance: float | None = None) -> dict[str, Any]:
    """What speculation a frontier may use: kind, the tokens per step by draft tokens, the
    declared range and the source (``off`` when the search cannot speculate)."""
    from planner.physics.step import draft_head, speculation_kind

    opts = [s for s in mtp_options(model, mtp, acceptance) if s.drafts]
    if not opts:
        why = "asked off" if model.speculates or acceptance is not None else "none published"
        return {"kind": "off", "tokens_per_step": {}, "range": {}, "source": why}
    kind = speculation_kind(model)
    out: dict[str, Any] = {
        "kind": kind, "tokens_per_step": {s.drafts: s.tokens_per_step("realistic") for s in opts},
        "range": {n: list(r) for n, r in model.spec_range.items()} if acceptance is None else {},
        "source": opts[0].source, "auto": isinstance(mtp, str) and mtp == "auto",
    }
    if kind == "draft":
        h = draft_head(model)
        out["draft_head"] = {"layers": h["n_Ldr"], "ffn": h["f_dr"], "fused_hidden_states": h["n_fuse"],
                             "own_lm_head": bool(h["n_hdr"]), "lm_head_rows": h["V_dr"],
                             "published": model.spec_kind == "draft"}
    return out


def frontier(scenario: Scenario, *, all_points: bool = False, _sorted: bool = True) -> pd.DataFrame:
    """The Pareto frontier of tokens/s per user vs tokens/s per GPU (``prefill``: prompt tokens/s
    per GPU vs time to first token) of ``scenario`` (one system: :meth:`Scenario.on`).

    ``scenario.metric``: ``output`` (output tokens/s per GPU counting every GPU of the deployment,
    the default), ``total`` (input + output, the InferenceMAX convention) or ``decode`` (output per
    decode GPU).  ``gpus`` fixes the instance size (else the search chooses up to ``max_gpus``).
    Returns one row per frontier point, sorted by ``tps_per_user``; ``df.attrs`` holds the
    inputs and ``df.attrs["scenario"]`` the scenario (:meth:`Scenario.to_dict`).
    ``all_points=True`` returns every feasible point instead of the envelope.
    ``acceptance``: tokens per step (>= 1) or per-draft acceptance rate (< 1) for speculative
    decoding, replacing the model's published figures (``mtp="auto"`` then tries 1-3 drafts).
    ``batch_per_octave``: decode batches tried per doubling of the batch (besides each layout's
    memory limit); fewer is faster and draws the frontier from fewer points.
    ``search``: ``rules`` (whole deployments of the layouts every stack runs on this hardware,
    prefill pools rate-matched to their decode pools, the stack's draft counts with speculation
    as accepted under load, concurrencies up to the stack's running caps, TTFT of the closed loop;
    the model's own launch recipes on this system as priors), ``recipes`` (the literal launch
    recipes, borrowed from another model or system where it has none; ``deployed`` is its earlier
    name), both in :mod:`planner.serving.deployed`, or ``limit`` (every layout and batch the
    hardware could run with ideal software); None: :func:`default_search` (rules for aggregated
    and disaggregated serving in realistic mode, else limit).  A scenario with a ``workload`` is
    :func:`planner.serving.workloads.workload_frontier`'s.
    """
    if not isinstance(scenario, Scenario):
        raise SpecError("<input>", "scenario", f"a Scenario (planner.Scenario(model, system, ...)), got "
                        f"{type(scenario).__name__}")
    sc = scenario
    if sc.workload is not None:
        raise SpecError("<input>", "workload", "no workload in a frontier of one ISL/OSL pair: "
                        "planner.workload_frontier(scenario) draws a workload's")
    model, hw = sc.load_model(), sc.load_system()
    serving, mode, metric = sc.serving, sc.mode, sc.metric
    wl = Workload(sc.isl, sc.osl, sc.context)
    wl.check(model)
    search = sc.resolved_search
    if search in DEPLOYMENT_SEARCHES:
        df = _deployed(model, hw, wl, sc.replace(search=search), all_points)
        df.attrs["scenario"] = sc.to_dict()
        return df
    max_ttft = DEFAULT_MAX_TTFT if sc.max_ttft is None else sc.max_ttft
    gpus, weights, kv, mtp, acceptance = sc.gpus, sc.weights, sc.kv, sc.mtp, sc.acceptance
    space = SearchSpace(gpus, sc.max_gpus, sc.tp_attn, sc.ep, sc.tp_moe, weights, kv, mtp, sc.overlap,
                        sc.kv_offload, acceptance)
    attrs = dict(model=model.name, hardware=hw.name, stack=hw.stack, calibration=calibration_label(hw),
                 search="limit", serving=serving, isl=wl.isl, osl=wl.osl,
                 context=wl.decode_context, mode=mode, metric=metric, max_ttft=max_ttft,
                 gpus=gpus, weights=weights, kv=kv or model.kv_precision, mtp=str(mtp),
                 speculation=speculation_summary(model, mtp, acceptance))
    if sc.batch_per_octave != BATCH_PER_OCTAVE:
        attrs["batch_per_octave"] = sc.batch_per_octave
    attrs["scenario"] = sc.to_dict()

    if serving == "prefill":
        cand = prefill_candidates(model, hw, space, wl.isl, mode)
        ttft = served_ttft_one(hw, model, mode, cand.prefill_pass_s.to_numpy(float))
        cand = cand.assign(ttft_s=ttft, ttft_request_s=request_latency(hw, mode),
                           ttft_host_s=host_latency(hw, model, mode),
                           tps_per_gpu=cand.prefill_tps_per_gpu, neg_ttft=-ttft)
        cand = cand.assign(**_costs(hw, cand.tps_per_gpu.values), bottleneck=cand.prefill_bottleneck)
        df = cand if all_points else pareto(cand, "neg_ttft", "tps_per_gpu")
        df = df.drop(columns="neg_ttft").sort_values("ttft_s").reset_index(drop=True)
        df.attrs.update(attrs, x="ttft_s", y="tps_per_gpu")
        return df

    # the envelope of decode or disaggregated serving is made of each grid's own envelope points
    # (the rate per GPU rises with the decode rate; aggregated serving reorders the points)
    dec = decode_candidates(model, hw, space, wl.decode_context, mode, per_octave=sc.batch_per_octave,
                            envelope_only=not all_points and serving != "aggregated")
    if dec.empty:
        raise SpecError("<input>", "model", f"a configuration of {model.name} that fits on "
                        f"{hw.name}" + (f" with {gpus} GPUs" if gpus else ""))
    if serving == "aggregated":
        dec = _aggregate(model, hw, dec, space, wl, mode)
    if serving == "disaggregated":
        pre = best_prefill(model, hw, space, wl.isl, mode, max_ttft)
        X_p = float(pre.prefill_tps_per_gpu)
        for c in pre.index:
            if c.startswith("prefill_"):
                dec[c] = pre[c]
        dec["ttft_s"] = float(pre.ttft_s)
        dec["kv_transfer_s"] = float(pre.kv_transfer_s)
        dec["ttft_request_s"] = float(pre.ttft_request_s)
        dec["ttft_host_s"] = float(pre.ttft_host_s)
    else:
        X_p = np.inf
    dec = dec.assign(**_serving_columns(hw, wl, serving, metric, dec.decode_tps_per_gpu.to_numpy(float), X_p))
    df = dec if all_points else pareto(dec, "tps_per_user", "tps_per_gpu")
    # (frontier_at reads every point by position and needs no order: _sorted=False saves
    # reordering a table of hundreds of thousands of rows)
    df = (df.sort_values("tps_per_user") if _sorted else df).reset_index(drop=True)
    df.insert(0, "serving", serving)
    df.insert(0, "hardware", hw.name)
    df.insert(0, "model", model.name)
    df.attrs.update(attrs, x="tps_per_user", y="tps_per_gpu")
    return df


def _deployed(model: Model, hw: Hardware, wl: Workload, sc: Scenario, all_points: bool) -> pd.DataFrame:
    """``frontier`` with the rules or recipes search: the as-deployed frontier as a frontier table."""
    from planner.serving.deployed import deployed_frontier

    serving, weights, kv, mtp, mode, metric, search, max_ttft = (
        sc.serving, sc.weights, sc.kv, sc.mtp, sc.mode, sc.metric, sc.search, sc.max_ttft)
    df = deployed_frontier(model, hw, serving=serving, isl=wl.isl, osl=wl.osl, weights=weights, mtp=mtp,
                           mode=mode, metric=metric, kv=kv, all_points=all_points, search=search,
                           max_ttft=max_ttft)
    note = df.attrs.get("deployments", "")
    df = df.assign(**_costs(hw, df.output_tps_per_gpu.to_numpy(float)),
                   tp_attn=df.decode_tp_attn.astype(int), ep=df.decode_ep.astype(int),
                   tp_moe=(df.decode_gpus / df.decode_ep).astype(int),
                   expert_slots=np.asarray(default_slots(model, df.decode_ep.to_numpy(float)), float)
                   * np.ones(len(df)),
                   dp_attn=(df.decode_gpus / df.decode_tp_attn).astype(int),
                   batch_per_gpu=df.concurrency / df.gpus_total, kv=kv or model.kv_precision, overlap=False,
                   kv_offload=False, step_s=df.tpot_s * df.tokens_per_step,
                   decode_tps_per_gpu=df.output_tps_per_gpu * df.gpus_total
                   / (df.decode_workers * df.decode_gpus))
    for c in ("gpus", "batch", "concurrency", "decode_gpus", "prefill_gpus", "decode_workers",
              "prefill_workers", "gpus_total", "tp_attn", "ep", "tp_moe", "dp_attn", "mtp", "expert_slots"):
        df[c] = df[c].round().astype(int)
    if model.is_dense:  # no experts: the recipes' EP does not apply
        df["ep"], df["tp_moe"], df["expert_slots"] = 1, df["tp_attn"], 1
    df.insert(0, "serving", serving)
    df.insert(0, "hardware", hw.name)
    df.insert(0, "model", model.name)
    df.attrs.update(model=model.name, hardware=hw.name, stack=hw.stack, calibration=calibration_label(hw),
                    serving=serving, isl=wl.isl, osl=wl.osl, context=wl.decode_context, mode=mode,
                    metric=metric, max_ttft=max_ttft, gpus=None, weights=weights, kv=kv or model.kv_precision,
                    mtp=str(mtp), search=search, deployments=note, x="tps_per_user", y="tps_per_gpu",
                    speculation=speculation_summary(model, mtp))
    return df


def frontier_at(scenario: Scenario, targets: list[float], *, points: pd.DataFrame | None = None,
                whole: bool = True) -> pd.DataFrame:
    """The best configuration at each per-user rate in ``targets``: the most tokens/s per GPU
    among configurations at least that fast for each user.  The batch of each promising
    candidate is solved exactly (:func:`~planner.serving.search.solve_batch`) rather than read
    off the grid.  The result is the upper envelope at every rate: never below a frontier point
    at least as fast for each user, and never rising with the rate (what serves users faster
    serves them at ``x`` too; such a row keeps its own, higher ``tps_per_user``).  ``points``:
    the ``frontier(scenario, all_points=True)`` table, if already computed.
    ``whole=False`` solves the batch as a continuous quantity (for derivatives).
    A row with NaN throughput means the target is out of reach."""
    model, hw = scenario.load_model(), scenario.load_system()
    allp = points if points is not None else frontier(scenario, all_points=True, _sorted=False)
    if allp.attrs.get("search") in DEPLOYMENT_SEARCHES:
        return deployments_at(allp, targets)
    wl = Workload(allp.attrs["isl"], allp.attrs["osl"], allp.attrs["context"])
    serving, mode = allp.attrs["serving"], allp.attrs["mode"]
    keycols = ["gpus", "tp_attn", "ep", "tp_moe", "expert_slots", "weights", "kv", "mtp", "overlap",
               "kv_offload"]
    # Per target x, each candidate configuration (one curve over the batch) is bracketed by its own
    # grid points: at x it serves at least its best point at or above x (a smaller batch) and at
    # most its nearest point below x (a larger batch; along one curve the per-GPU rate rises as the
    # per-user rate falls).  Candidates are solved exactly, highest upper bracket first, until no
    # unsolved one can beat the best found, so more of a resource never lowers the answer through
    # a candidate left unsolved.
    # rows by per-GPU rate, highest first (ties: the slower per user first), as positions into
    # allp: the table itself (hundreds of thousands of rows, text columns among them) is never
    # reordered, and the order does not depend on the table's
    tpg, tpu = allp.tps_per_gpu.to_numpy(float), allp.tps_per_user.to_numpy(float)
    perm = np.lexsort((tpu, -tpg))
    tpg, tpu = tpg[perm], tpu[perm]
    # candidate ids numbered by first appearance in that order
    _, first_at, inverse = np.unique(allp.groupby(keycols, sort=False, dropna=False).ngroup()
                                     .to_numpy()[perm], return_index=True, return_inverse=True)
    rank = np.empty(len(first_at), dtype=np.int64)
    rank[np.argsort(first_at, kind="stable")] = np.arange(len(first_at))
    ids = rank[inverse.reshape(-1)]
    tops: dict[float, dict[str, Any]] = {}
    for x in sorted(set(map(float, targets)), reverse=True):
        above = tpu >= x
        idx = np.flatnonzero(above)
        _, first = np.unique(ids[idx], return_index=True)
        firsts = idx[first]                       # each reaching candidate's best point at or above x
        lower = dict(zip(ids[firsts], tpg[firsts], strict=True))
        below = np.flatnonzero(~above & np.isin(ids, ids[firsts]))
        # each reaching candidate's point nearest below x: the last of its rows by per-user rate
        srt = below[np.lexsort((tpu[below], ids[below]))]
        last = srt[np.r_[ids[srt][1:] != ids[srt][:-1], True]] if len(srt) else srt
        nearest = dict(zip(ids[last].tolist(), tpg[last].tolist(), strict=True))   # id -> per-GPU rate
        upper = {k: max(lower[k], nearest[k]) if k in nearest else lower[k] for k in lower}
        solved = [allp.iloc[perm[firsts[np.argmax(tpg[firsts])]]]] if len(firsts) else []
        if tops:  # the best found for a faster target (targets run fastest first)
            solved.append(pd.Series(tops[min(tops)]))
        best = max((float(r["tps_per_gpu"]) for r in solved), default=-np.inf)
        row_of = dict(zip(ids[firsts], firsts, strict=True))
        # the four with the best points at or above x are solved whatever their brackets (a batch
        # between the grid's largest and the memory cap lies beyond every grid point); then the
        # others, highest upper bracket first, while one could still beat the best
        top4 = [int(ids[i]) for i in np.sort(firsts)[:4]]
        rest = sorted((k for k in upper if k not in top4), key=lambda k: -upper[k])
        # (aggregated: the prefill stretch is not re-solved, the grid values stand)
        for k in (top4 + rest) if serving != "aggregated" else ():
            if k not in top4 and upper[k] <= best * (1 + 1e-12):
                break  # (a candidate with no grid point below x has upper = lower <= best)
            r = allp.iloc[perm[row_of[k]]]
            B = solve_batch(model, hw, r.to_dict(), x, wl.decode_context, mode, whole=whole)
            if B is not None:
                p = _point_at_batch(model, hw, r, B, wl, mode, allp)
                solved.append(p)
                best = max(best, float(p["tps_per_gpu"]))
        if solved:
            tops[x] = dict(max(solved, key=lambda s: s["tps_per_gpu"]))
    rows = [{"target_tps_per_user": x, **tops.get(float(x), {"tps_per_gpu": np.nan})} for x in targets]
    out = pd.DataFrame(rows)
    out.attrs.update(allp.attrs)
    return out


def deployments_at(points: pd.DataFrame, targets: list[float]) -> pd.DataFrame:
    """The best deployment at each per-user rate in ``targets`` among ``points`` (a rules or
    recipes frontier: whole deployments at whole concurrencies, read as they are): the most
    tokens/s per GPU among those at least that fast for each user; NaN where none is."""
    xs, ys = points.tps_per_user.to_numpy(float), points.tps_per_gpu.to_numpy(float)
    rows = []
    for x in targets:
        ok = np.flatnonzero(xs >= float(x) * (1 - 1e-12))
        best = {} if not len(ok) else dict(points.iloc[ok[np.argmax(ys[ok])]])
        rows.append({"target_tps_per_user": x, **(best or {"tps_per_gpu": np.nan})})
    out = pd.DataFrame(rows)
    out.attrs.update(points.attrs)
    return out


def _point_at_batch(model: Model, hw: Hardware, r: pd.Series, batch: float, wl: Workload,
                    mode: str, allp: pd.DataFrame) -> pd.Series:
    """Re-evaluate candidate ``r`` at instance batch ``batch`` and apply the serving transform."""
    prec, kw = row_inputs(model, hw, r, wl.decode_context)
    G, TPa = kw["G"], kw["TP_a"]
    out = evaluate_configs(model, hw, prec, mode, b=batch * TPa / G, **kw)
    X_d = float(out["tps_gpu"])
    s = r.copy()
    s["batch"], s["batch_per_gpu"] = (int(batch) if float(batch).is_integer() else batch), batch / G
    s["tps_per_user"], s["decode_tps_per_gpu"], s["step_s"] = float(out["tps_user"]), X_d, float(out["step"])
    s["bottleneck"] = CATEGORIES[int(out["bottleneck"])]
    if batch >= float(np.floor(float(out["memory.b_max"]) * G / TPa * (1 + 1e-9))) or np.isclose(
            batch, float(out["memory.b_max"]) * G / TPa, rtol=1e-6):
        s["bottleneck"] = "memory_capacity"
    X_p = float(r.prefill_tps_per_gpu) if "prefill_tps_per_gpu" in r else np.inf
    for k, v in _serving_columns(hw, wl, allp.attrs["serving"], allp.attrs["metric"], np.array([X_d]),
                                 X_p).items():
        s[k] = float(np.asarray(v).reshape(-1)[0])
    return s

