"""Service levels as percentiles: TTFT and TPOT at p90 / p99 of a closed-loop benchmark burst and of
an open stream of requests (the equations ``ttft_burst``, ``tpot_burst``, ``ttft_queue``, ``b_p`` of
:mod:`planner.physics.serving_eq`, evaluated through :func:`planner.physics.compiled.evaluate_named`).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np

from planner.physics import compiled
from planner.physics.step import acceptance_rate

#: Requests a benchmark sends per user: InferenceX runs ``--num-prompts $(( $CONC * 10 ))
#: --max-concurrency $CONC --request-rate inf`` (SemiAnalysisAI/InferenceX benchmark scripts).
BENCH_PROMPTS_PER_USER = 10.0


def z_of(p: float) -> float:
    """The standard normal quantile of ``p`` (0 < p < 1)."""
    return NormalDist().inv_cdf(p)


def step_variance(A: Any, drafts: Any) -> np.ndarray:
    """``v_T``: variance of the tokens one step emits per sequence at mean ``A`` with ``drafts``."""
    A = np.asarray(A, float)
    n = np.asarray(drafts, float) * np.ones_like(A)
    alpha = np.clip(acceptance_rate(A, n), 1e-9, 1 - 1e-9)
    v = np.asarray(compiled.evaluate_named("v_T", alpha=alpha, n_draft=np.maximum(n, 1.0)), float)
    return np.where(n > 0, np.maximum(v, 0.0), 0.0)


def burst(p: float, *, t_req: Any, tau_h: Any, n_kp: Any, t_pass: Any, t_wave: Any, tpot: Any,
          osl: Any, A: Any, drafts: Any, stall: Any,
          prompts_per_user: float = BENCH_PROMPTS_PER_USER) -> tuple[np.ndarray, np.ndarray]:
    """(TTFT, TPOT) at percentile ``p`` of a closed-loop benchmark burst (``ttft_burst``,
    ``tpot_burst``); ``stall`` is 1 where decode waits for prompts (aggregated serving)."""
    z = z_of(p)
    ttft = compiled.evaluate_named("ttft_burst", t_req=t_req, tau_h=tau_h, n_kp=n_kp, t_pass=t_pass,
                                   t_wave=t_wave, p_s=p, N_u=prompts_per_user)
    tpot_p = compiled.evaluate_named("tpot_burst", TPOT=tpot, z_p=z, v_T=step_variance(A, drafts), O=osl,
                                     A=A, x_st=stall, t_wave=t_wave, p_s=p, N_u=prompts_per_user)
    return np.asarray(ttft, float), np.asarray(tpot_p, float)


def queue_wait(p: float, rho: Any, service_s: Any, ca2: float, cs2: Any) -> np.ndarray:
    """The prefill queue's wait at percentile ``p`` (``wait_p``), s; infinite at ``rho >= 1``."""
    rho = np.asarray(rho, float)
    w = np.asarray(compiled.evaluate_named("wait_p", rho_p=np.clip(rho, 1e-12, 1 - 1e-12), S_p=service_s,
                                           c_a2=ca2, c_s2=cs2, p_s=p), float)
    return np.where(rho >= 1.0, math.inf, w)


def batch_at(p: float, b: Any, ca2: float) -> np.ndarray:
    """The decode batch a request meets at percentile ``p`` of an open stream (``b_p``)."""
    return np.asarray(compiled.evaluate_named("b_p", b=b, z_p=z_of(p), c_a2=ca2), float)
