"""The prefill a serving answer carries: chunked prefill on a decode layout, and TTFT as served.

Shared by the frontiers (:mod:`planner.serving.frontiers`), the as-deployed search
(:mod:`planner.serving.deployed`) and the measured-run scorecards.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.physics import compiled
from planner.physics.step import evaluate_configs
from planner.specs.hardware import Hardware
from planner.specs.model import Model

PREFILL_CHUNK = 8192    # prompt tokens per attention rank per aggregated (chunked) prefill pass
#: stacks whose attention-DP ranks take their context requests in the same iteration: TensorRT-LLM's
#: ADP balance (``attention_dp_config.enable_balance``; tech blog 10, "ADP Balance Strategy": a rank
#: with a context request waits up to ``timeout_iters`` iterations until every rank has one), which
#: the InferenceX TensorRT-LLM recipes turn on with attention DP (``enable_balance: true``,
#: ``timeout_iters: 60``, ``batching_wait_iters: 0``; benchmarks/dsr1_*_trt*.sh).  Their chunks
#: fall in the same steps, so a step waits for no rank's chunk but its own: D_a = 1.
CO_SCHEDULED_STACKS = frozenset({"trtllm"})


def served_ttft(t_req: float, q_w: float, t_pass: Any, t_wave: Any, tau_h: float = 0.0,
                n_kp: Any = 0.0) -> np.ndarray:
    """TTFT as a benchmark serves it (``ttft_served``: per-request latency, the pass's host time
    ``tau_h`` per kernel of its ``n_kp``, the pass, the queued share of the prompt wave), in s."""
    return np.asarray(compiled.evaluate_named("ttft_served", t_req=t_req, t_pass=t_pass, q_w=q_w,
                                              t_wave=t_wave, tau_h=tau_h, n_kp=n_kp), float)



#: the terms of a prefill pass spread over every rank of an instance (the routed experts and the
#: collectives that carry their tokens); the rest of the pass runs on its attention rank alone
_SPREAD_TERMS = ("experts", "dispatch", "combine", "allreduce_moe")


def aggregated_prefill_terms(model: Model, mode: str, G: Any, TP_a: Any, isl: Any,
                             local_share: Any = 1.0, stack: str | None = None) -> dict[str, Any]:
    """``C_p``, ``D_a`` and ``phi_l`` of ``t_step_aggregated``: the tokens of one rank's
    chunked-prefill pass (:data:`PREFILL_CHUNK`, at least one prompt: the pass
    :func:`chunked_prefill_rate` prices), the attention-DP ranks that step together (G / TP_a for
    an MoE model, whose experts join the ranks every layer; 1 for a dense model, in bound mode, and
    for a ``stack`` of :data:`CO_SCHEDULED_STACKS`, which co-schedules the ranks' prefill) and the
    pass's rank-local share (:func:`chunked_prefill_rate`'s second value)."""
    together = mode == "bound" or model.is_dense or stack in CO_SCHEDULED_STACKS
    joined = 1.0 if together else np.asarray(G, float) / np.asarray(TP_a, float)
    return {"C_p": np.maximum(float(PREFILL_CHUNK), np.asarray(isl, float)), "D_a": joined,
            "phi_l": local_share}


def chunked_prefill_rate(model: Model, hw: Hardware, prec: Any, mode: str, *, G: Any, TP_a: Any, EP: Any,
                         TP_e: Any, E_slots: Any, isl: Any, overlap: Any = 0,
                         local_share: bool = False) -> Any:
    """Prompt tokens/s per GPU of the chunked prefill an aggregated step carries: one pass of
    ``PREFILL_CHUNK`` prompt tokens per attention rank (at least one prompt) on the decode
    layout; NaN where that pass does not fit.  With ``local_share``, also the share of that pass
    that runs on its attention rank alone (all but the routed experts and their collectives).
    Every argument may be an array."""
    out = evaluate_configs(model, hw, prec, mode, G=G, TP_a=TP_a, EP=EP, TP_e=TP_e, E_slots=E_slots,
                           b=np.maximum(PREFILL_CHUNK / np.asarray(isl, float), 1.0), S=isl, overlap=overlap,
                           phase="prefill", categories=False)
    rate = np.where(np.asarray(out["feasible"], bool), np.asarray(out["prefill_tps_gpu"], float), np.nan)
    if not local_share:
        return rate
    step = np.asarray(out["step"], float)
    spread = model.n_moe * sum(np.asarray(out[t], float) for t in _SPREAD_TERMS)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.clip(1.0 - spread / step, 0.0, 1.0)
    return rate, np.where(np.isfinite(share), share, 1.0)

