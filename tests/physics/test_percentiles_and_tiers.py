"""Service-level percentiles, the prefill queue and KV-tier reuse (planner.physics.serving_eq), each
against a hand calculation or an exact queueing result."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.physics import compiled
from planner.serving.percentiles import acceptance_rate, batch_at, burst, queue_wait, step_variance, z_of


def test_burst_p99_is_ninety_percent_through_the_first_wave():
    # 10 requests per user: the slowest 1% of 10 C requests are the last 10% of the first wave
    tt, tp = burst(0.99, t_req=0.05, tau_h=1e-4, n_kp=1000, t_pass=0.2, t_wave=3.0, tpot=0.02, osl=1001,
                   A=1.0, drafts=0, stall=0.0)
    assert tt == pytest.approx(0.05 + 0.1 + 0.2 + 0.9 * 3.0)
    assert tp == pytest.approx(0.02)                       # prefill on its own GPUs: no stall
    _, tp = burst(0.99, t_req=0.05, tau_h=1e-4, n_kp=1000, t_pass=0.2, t_wave=3.0, tpot=0.02, osl=1001,
                  A=1.0, drafts=0, stall=1.0)
    assert tp == pytest.approx(0.02 + 0.9 * 3.0 / 1000)    # aggregated: 2.7 s of stall over 1,000 tokens
    # the median of a burst is not in the first wave at all (a share 1 - 0.5 x 10 < 0)
    tt50, _ = burst(0.5, t_req=0.0, tau_h=0.0, n_kp=0, t_pass=0.2, t_wave=3.0, tpot=0.02, osl=1001, A=1.0,
                    drafts=0, stall=0.0)
    assert tt50 == pytest.approx(0.2)


def test_speculation_spread_by_hand():
    # one draft accepted at alpha: a step emits 1 or 2 tokens, variance alpha (1 - alpha)
    assert float(step_variance(1.6, 1)) == pytest.approx(0.6 * 0.4, rel=1e-6)
    assert float(acceptance_rate(1 + 0.7 + 0.49 + 0.343, 3)) == pytest.approx(0.7, rel=1e-9)
    # 3 drafts at 0.7: E[T^2] = 1 + 3(0.7) + 5(0.49) + 7(0.343) = 7.951, A = 2.533
    A = 2.533
    assert float(step_variance(A, 3)) == pytest.approx(7.951 - A * A, rel=1e-6)
    # p99 TPOT spreads by z sqrt(v / ((O - 1) A))
    _, tp = burst(0.99, t_req=0, tau_h=0, n_kp=0, t_pass=0.1, t_wave=0, tpot=0.01, osl=1025, A=A, drafts=3,
                  stall=0.0)
    assert tp == pytest.approx(0.01 * (1 + 2.3263 * math.sqrt((7.951 - A * A) / (1024 * A))), rel=1e-4)


def test_mm1_wait_percentile_is_exact():
    # Poisson arrivals, exponential service: Kingman's mean and the exponential tail are exact,
    # P(W > w) = rho exp(-(1 - rho) w / S)
    rho, S, p = 0.8, 0.5, 0.99
    w = float(queue_wait(p, rho, S, 1.0, 1.0))
    assert w == pytest.approx(S / (1 - rho) * math.log(rho / (1 - p)))
    assert float(compiled.evaluate_named("wait_mean", rho_p=rho, S_p=S, c_a2=1.0, c_s2=1.0)) == \
        pytest.approx(rho / (1 - rho) * S)
    # a queue that is rarely busy: the p99 request does not wait
    assert float(queue_wait(p, 0.005, S, 1.0, 1.0)) == 0.0


def test_p99_wait_grows_without_bound_as_utilisation_reaches_one():
    rhos = np.array([0.5, 0.9, 0.99, 0.999, 0.9999])
    w = queue_wait(0.99, rhos, 1.0, 1.0, 0.0)
    assert np.all(np.diff(w) > 0)
    assert w[-1] > 1000 * w[0]
    assert math.isinf(float(queue_wait(0.99, 1.0, 1.0, 1.0, 0.0)))


def test_poisson_batch_percentile():
    assert float(batch_at(0.99, 100.0, 1.0)) == pytest.approx(100 + z_of(0.99) * 10)
    assert z_of(0.99) == pytest.approx(2.3263, abs=1e-4)
    # smoother arrivals (c_a^2 = 0, a deterministic stream) halve the variance
    assert float(batch_at(0.99, 100.0, 0.0)) == pytest.approx(100 + z_of(0.99) * math.sqrt(50))


def _hit(C, y_hit=1000.0, y_miss=400.0, O=500.0, t_idle=30.0, m_sess=2e9):
    return float(compiled.evaluate_named("hit_share", C_tier=C, O=O, t_idle=t_idle, m_sess=m_sess,
                                         y_miss=y_miss, y_hit=y_hit))


def test_hit_share_is_the_fixed_point_and_monotone():
    y_hit, y_miss, O, t_idle, m_sess = 1000.0, 400.0, 500.0, 30.0, 2e9
    for C in (1e9, 1e10, 5e10):
        h = _hit(C)
        y = float(compiled.evaluate_named("y_reuse", h_r=h, y_hit=y_hit, y_miss=y_miss))
        # the sessions a GPU keeps, (y / O) t_idle, times their bytes: the tiers hold a share h of them
        assert h == pytest.approx(min(1.0, C / (y / O * t_idle * m_sess)))
    # a tier of zero capacity is no tier: nothing reused, the all-miss rate
    assert _hit(0.0) == 0.0
    assert float(compiled.evaluate_named("y_reuse", h_r=0.0, y_hit=y_hit, y_miss=y_miss)) == y_miss
    # more capacity never lowers the hit share, nor the rate
    hs = [_hit(C) for C in np.geomspace(1e8, 1e12, 30)]
    assert all(b >= a for a, b in zip(hs, hs[1:], strict=False)) and hs[-1] == 1.0
    ys = [float(compiled.evaluate_named("y_reuse", h_r=h, y_hit=y_hit, y_miss=y_miss)) for h in hs]
    assert all(b >= a for a, b in zip(ys, ys[1:], strict=False))


def test_restore_time_by_hand():
    # 30k cached tokens of 70 kB each over 4 GPUs' 225 GB/s links at 80%
    t = float(compiled.evaluate_named("t_restore", I_c=30_000, m_kv=70e3, n_send=4, eta_tier=0.8,
                                      B_tier=225e9))
    assert t == pytest.approx(30_000 * 70e3 / (4 * 0.8 * 225e9))


def _bounded(**kw: float) -> tuple[float, float]:
    base = dict(T_0=1.0, N_c=100.0, O=901.0, TPOT=0.01, G_P=8.0, X_p=5000.0, I=1000.0, R_d=8.0,
                b_cap=1000.0, eta_P=1.0)
    base.update(kw)
    return (float(compiled.evaluate_named("rate_served", **base)),
            float(compiled.evaluate_named("ttft_bounded", **base)))


def test_the_closed_loop_bounded_by_its_pools_by_hand():
    # 100 users, 1 s to the first token, 900 tokens at 10 ms: the loop asks 100 / 10 = 10 req/s;
    # 8 prefill GPUs at 5,000 prompt tokens/s serve 40 of 1,000-token prompts a second; 8 ranks of
    # 1,000 sequences admit 8,000 / 9 s: the loop is its own bound, TTFT stays 1 s
    rate, ttft = _bounded()
    assert rate == pytest.approx(10.0) and ttft == pytest.approx(1.0)
    # 4,000 users ask 400 req/s: the prefill pool serves 40, the rest wait: 4,000 / 40 - 9 = 91 s
    rate, ttft = _bounded(N_c=4000.0)
    assert rate == pytest.approx(40.0) and ttft == pytest.approx(91.0)
    # at half the pass rate the pool serves 20: 4,000 / 20 - 9 = 191 s
    rate, ttft = _bounded(N_c=4000.0, eta_P=0.5)
    assert rate == pytest.approx(20.0) and ttft == pytest.approx(191.0)
    # a decode pool of 8 ranks x 10 sequences admits 80 / 9 s = 8.9 req/s: 100 / 8.89 - 9 = 2.25 s
    rate, ttft = _bounded(b_cap=10.0)
    assert rate == pytest.approx(80.0 / 9.0) and ttft == pytest.approx(100.0 / (80.0 / 9.0) - 9.0)
    # aggregated serving: no separate prefill pool (X_p infinite)
    rate, ttft = _bounded(N_c=4000.0, X_p=math.inf)
    assert rate == pytest.approx(400.0) and ttft == pytest.approx(1.0)
