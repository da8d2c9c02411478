"""Serving-level equations (physics.md section 4), in sympy; evaluated through
:func:`planner.physics.compiled.evaluate_named`.

Disaggregated serving (NVIDIA Dynamo, SGLang PD): a prefill pool and a decode pool whose sizes
match rates, ``G_p X_p = (I / O) G_d X_d``.  Output tokens per second per GPU counting every
GPU is then ``y = G_d X_d / (G_p + G_d) = 1 / (1/X_d + (I/O) / X_p)``.

Aggregated serving (prefill chunks share the decode GPUs): every step that emits ``b A`` tokens
on a rank must also prefill ``(I/O) b A`` prompt tokens, at the same layout's prefill rate, so
the step stretches by ``(I/O) b A / (TP_a X_p)`` and per-GPU output is the same harmonic mean;
with attention DP the ranks step together, and a step waits for any rank's prefill chunk.
"""

from __future__ import annotations

import sympy as sp

from planner.physics.symbols import (
    A,
    E_s,
    TP_a,
    b,
    n_ka,
    n_kc,
    n_kd,
    n_ke,
    n_kh,
    n_ks,
    n_kx,
    n_L,
    n_Ld,
    phi_x,
)

X_d = sp.Symbol("X_d", positive=True)    #: output tokens/s per decode GPU
X_p = sp.Symbol("X_p", positive=True)    #: prompt tokens/s per prefill GPU
I_in = sp.Symbol("I", positive=True)     #: input (prompt) tokens per request
O_out = sp.Symbol("O", positive=True)    #: output tokens per request
W_gpu = sp.Symbol("W_gpu", positive=True)  #: W per GPU, all-in
c_h = sp.Symbol("c_h", positive=True)    #: USD per GPU-hour
t_dec = sp.Symbol("t_step", positive=True)  #: decode step time, s

t_req = sp.Symbol("t_req", nonnegative=True)    #: per-request latency outside the forward passes, s
q_w = sp.Symbol("q_w", nonnegative=True)        #: share of a prompt wave queued ahead of a request
t_pass = sp.Symbol("t_pass", positive=True)     #: one prompt's prefill pass, s
t_wave = sp.Symbol("t_wave", nonnegative=True)  #: prefilling all prompts that arrive together, s
tau_h = sp.Symbol("tau_h", nonnegative=True)    #: host time per kernel of a prefill pass, s
n_kp = sp.Symbol("n_kp", nonnegative=True)      #: kernels one forward pass launches
C_p = sp.Symbol("C_p", positive=True)           #: prompt tokens of one rank's chunked-prefill pass
D_a = sp.Symbol("D_a", positive=True)           #: attention-DP ranks that step together
phi_l = sp.Symbol("phi_l", nonnegative=True)    #: rank-local share of a chunked-prefill pass

SERVING_SYMBOLS = {
    "t_req": (t_req, "per-request latency outside the forward passes (HTTP, tokenisation, scheduling, "
              "KV hand-off)", "s"),
    "q_w": (q_w, "share of a wave of prompts that is queued ahead of a request", "1"),
    "t_pass": (t_pass, "one prompt's prefill pass", "s"),
    "t_wave": (t_wave, "prefilling the prompts that arrive together at one prefill instance: "
               "prompts x ISL / (prefill tokens/s per GPU x GPUs)", "s"),
    "tau_h": (tau_h, "host time per kernel of a prefill pass, which runs outside CUDA graphs: the "
              "framework's dispatch and launch of each kernel, which the pass waits for (fitted to the "
              "measured runs' TTFT per stack)", "s"),
    "n_kp": (n_kp, "kernels one forward pass launches (kernels_per_pass)", "1"),
    "C_p": (C_p, "prompt tokens one attention rank's chunked-prefill pass carries in aggregated serving "
            "(the stack's token budget, at least one prompt)", "token"),
    "D_a": (D_a, "attention-DP ranks of an aggregated instance that step together (1 for a dense model "
            "or without attention DP)", "1"),
    "phi_l": (phi_l, "share of a chunked-prefill pass that runs on its attention rank alone (attention, "
              "dense layers, shared experts, LM head; not the routed experts and their all-to-all)", "1"),
    "X_d": (X_d, "output tokens/s per decode GPU", "token/s"),
    "X_p": (X_p, "prompt tokens/s per prefill GPU", "token/s"),
    "I": (I_in, "input (prompt) tokens per request", "token"),
    "O": (O_out, "output tokens per request", "token"),
    "W_gpu": (W_gpu, "power per GPU, all-in", "W"),
    "c_h": (c_h, "price per GPU-hour", "USD/h"),
    "t_step": (t_dec, "decode step time", "s"),
}

#: Output tokens/s per GPU counting prefill and decode GPUs (rate-matched pools).
y_output = 1 / (1 / X_d + (I_in / O_out) / X_p)
#: Prefill GPUs per decode GPU: G_p / G_d = (I/O) X_d / X_p.
prefill_per_decode = (I_in / O_out) * X_d / X_p
#: Input + output tokens/s per GPU (the InferenceMAX convention).
y_total = y_output * (I_in + O_out) / O_out
#: Aggregated serving: the decode step stretched by the prefill work it carries.  Each step a rank
#: takes on w = (I/O) b A prompt tokens; it runs them in chunked-prefill passes of C_p tokens, so in
#: a share p = min(1, w / C_p) of the steps.  The D_a attention-DP ranks of an MoE instance step
#: together (the experts' all-to-all joins them every layer), so a step lasts as long as its slowest
#: rank.  A share phi_l of a chunk's pass runs on its rank alone (attention, dense layers, shared
#: experts, LM head); the rest (routed experts, all-to-all) is spread over every rank, so it adds to
#: a step in proportion to the chunks in it.  With the ranks' chunks falling in independent steps, a
#: share 1 - (1 - p)^D_a of the steps waits for a chunk's rank-local part (at least the w tokens'
#: share spread evenly, as with D_a = 1 or a stack that co-schedules the ranks' prefill).
#: (TensorRT-LLM tech blog 10, "ADP Balance Strategy", 2025: with attention DP and in-flight
#: batching "the iteration time is dominated by the slowest rank"; its context balancing,
#: ``attention_dp_config.enable_balance``, off by default, is on in the InferenceX recipes with
#: attention DP, so TensorRT-LLM takes D_a = 1: planner.serving.prefill.CO_SCHEDULED_STACKS.)
w_p = (I_in / O_out) * b * A
t_step_aggregated = t_dec + (phi_l * sp.Max(w_p, (1 - (1 - sp.Min(1, w_p / C_p)) ** D_a) * C_p)
                             + (1 - phi_l) * w_p) / (TP_a * X_p)
#: Tokens/s per MW from per-GPU tokens/s (y) and all-in power per GPU.
Y = sp.Symbol("y", positive=True)
tps_per_mw = Y * 1e6 / W_gpu
#: USD per million output tokens: c_h / (3600 y) * 1e6.
usd_per_mtok = c_h / (3600 * Y) * 1e6

#: Kernels one forward pass launches: n_Ld dense layers (attention projections and core, the FFN)
#: and n_L - n_Ld MoE layers (attention, routed experts, the shared experts where the model has
#: them), the indexers of the phi_x n_L sparse layers, and the LM head (the per-layer counts of
#: planner.physics.step.KERNELS).
kernels_per_pass = (n_Ld * (n_ka + n_kc + n_kd)
                    + (n_L - n_Ld) * (n_ka + n_kc + n_ke + n_ks * sp.Min(1, E_s)) + phi_x * n_L * n_kx + n_kh)
#: TTFT a benchmark measures: the request's own pass, plus a per-request latency outside the
#: passes, plus the host time of the pass, plus the share q_w of the wave of prompts that arrived
#: with it and were prefilled ahead of it.  A prefill pass runs outside CUDA graphs (the stacks
#: capture decode steps only), so each of its n_kp kernels costs the framework's dispatch and
#: launch on the host, tau_h, which the measured TTFT says the pass does not hide: it is what makes
#: the same stack's TTFT at low concurrency several times larger for a model of many small kernels
#: (DeepSeek-R1, 1,386 a pass) than for one of few (gpt-oss-120b, 508).  A closed-loop benchmark at
#: a fixed concurrency with fixed ISL and OSL keeps its requests in step, so up to all of them arrive
#: together (q_w = 1/2: each waits for half the wave); a steady stream arrives spread out
#: (q_w -> 0).
ttft_served = t_req + tau_h * n_kp + t_pass + q_w * t_wave

EQUATIONS: dict[str, sp.Expr] = {
    "ttft_served": ttft_served,
    "kernels_per_pass": kernels_per_pass,
    "y_output": y_output,
    "prefill_per_decode": prefill_per_decode,
    "y_total": y_total,
    "t_step_aggregated": t_step_aggregated,
    "tps_per_mw": tps_per_mw,
    "usd_per_mtok": usd_per_mtok,
}


m_kv = sp.Symbol("m_kv", positive=True)      #: KV-cache bytes per token, all layers
n_send = sp.Symbol("n_send", positive=True)  #: GPUs one request's KV moves from or to (its rank's TP_a)


def _kv_transfer() -> sp.Expr:
    """KV hand-off of one request from prefill to decode: ``alpha + I m_kv / (eta B)``, the
    request's KV (I tokens x m_kv bytes per token) sent by the TP_a GPUs of its prefill rank."""
    from planner.physics.equations import link_time

    B_link = sp.Symbol("B_link", positive=True)
    eta_l = sp.Symbol("eta_link", positive=True)
    a_l = sp.Symbol("alpha_link", nonnegative=True)
    SERVING_SYMBOLS.update({
        "m_kv": (m_kv, "KV-cache bytes per token, all layers", "B"),
        "B_link": (B_link, "per-GPU per-direction bandwidth of the link used for the hand-off", "B/s"),
        "eta_link": (eta_l, "achieved fraction of that bandwidth", "1"),
        "alpha_link": (a_l, "latency of that link", "s"),
        "n_send": (n_send, "GPUs sending one request's KV (the prefill rank's TP_a)", "1"),
    })
    return link_time(I_in * m_kv / n_send, B_link, eta_l, a_l)


#: Time to hand one request's KV cache from the prefill pool to the decode pool.
t_kv_transfer = _kv_transfer()
EQUATIONS["t_kv_transfer"] = t_kv_transfer


def _speculation() -> sp.Expr:
    """Tokens emitted per sequence per step with ``n_draft`` drafts accepted at ``alpha`` each:
    :func:`planner.physics.equations.acceptance_length`."""
    from planner.physics.equations import acceptance_length

    alpha = sp.Symbol("alpha", positive=True)
    n = sp.Symbol("n_draft", positive=True)
    SERVING_SYMBOLS.update({
        "alpha": (alpha, "per-draft-token acceptance rate", "1"),
        "n_draft": (n, "draft tokens per step", "token"),
    })
    return acceptance_length(alpha, n)


#: Mean tokens per step of speculative decoding (Leviathan et al. 2023).
tokens_per_step = _speculation()
EQUATIONS["tokens_per_step"] = tokens_per_step


# ---- service levels as percentiles ------------------------------------------------------------
p_s = sp.Symbol("p_s", positive=True)           #: the percentile, as a fraction (0.99 for p99)
N_u = sp.Symbol("N_u", positive=True)           #: requests a closed-loop benchmark sends per user
x_st = sp.Symbol("x_st", nonnegative=True)      #: 1 where decode waits while prompts are prefilled
t_pt = sp.Symbol("TPOT", positive=True)         #: median time per output token, s
v_T = sp.Symbol("v_T", nonnegative=True)        #: variance of the tokens one step emits per sequence
z_p = sp.Symbol("z_p", real=True)               #: the standard normal quantile of p_s
rho_p = sp.Symbol("rho_p", positive=True)       #: utilisation of the prefill pool
S_p = sp.Symbol("S_p", positive=True)           #: mean prefill service time of one prompt, s
c_a2 = sp.Symbol("c_a2", nonnegative=True)      #: squared coefficient of variation of inter-arrival times
c_s2 = sp.Symbol("c_s2", nonnegative=True)      #: squared coefficient of variation of service times
SERVING_SYMBOLS.update({
    "p_s": (p_s, "the percentile of a service level, as a fraction (0.99 for p99)", "1"),
    "N_u": (N_u, "requests a closed-loop benchmark sends per user (its prompts over its concurrency; "
            "InferenceX: 10)", "1"),
    "x_st": (x_st, "1 where a request's decode stops while other prompts are prefilled (aggregated "
             "serving), 0 where prefill runs on its own GPUs (disaggregated)", "1"),
    "TPOT": (t_pt, "median time per output token", "s"),
    "v_T": (v_T, "variance of the tokens one speculative step emits per sequence", "token^2"),
    "z_p": (z_p, "the standard normal quantile of p_s (2.326 for p99)", "1"),
    "rho_p": (rho_p, "utilisation of the prefill pool (arrival rate x service time)", "1"),
    "S_p": (S_p, "mean prefill service time of one prompt at its pool (tokens / pool tokens/s)", "s"),
    "c_a2": (c_a2, "squared coefficient of variation of the requests' inter-arrival times (1: Poisson)",
             "1"),
    "c_s2": (c_s2, "squared coefficient of variation of the prompts' service times (of their lengths)",
             "1"),
})

#: Where in the first wave of a closed-loop burst the request at percentile p_s stands.  A
#: benchmark of N_u requests per user starts all its users at once, so the first wave's prompts
#: queue behind each other and the slowest (1 - p_s) N_u C requests of the N_u C it sends are the
#: last (1 - p_s) N_u of each user's first prompts: at p99 of 10 per user, the request 90% of the
#: way through the wave (later waves arrive spread out, as requests end at different times).
q_burst = sp.Max(0, 1 - (1 - p_s) * N_u)
#: TTFT at percentile p_s of a closed-loop burst: ttft_served with the wave share q_burst.
ttft_burst = ttft_served.subs(q_w, q_burst)
#: TPOT at percentile p_s of a closed-loop burst.  Where decode stops while prompts are prefilled
#: (aggregated: the stacks run a waiting prompt before the next decode step), the first users'
#: requests decode while the rest of the first wave is prefilled, and wait q_burst t_wave in all
#: over their O - 1 tokens.  Speculation draws the tokens of each step at random: a request needs
#: (O - 1) / A steps on average, with variance (O - 1) v_T / A^3 (a renewal count), so its TPOT
#: spreads by z_p sqrt(v_T / ((O - 1) A)) of the median.
tpot_burst = t_pt * (1 + z_p * sp.sqrt(v_T / ((O_out - 1) * A))) + x_st * q_burst * t_wave / (O_out - 1)


def _draft_variance() -> sp.Expr:
    """Variance of the tokens a step emits with ``n_draft`` drafts at acceptance ``alpha``: a step
    emits 1 + j tokens where the first j drafts are accepted, P(T > k) = alpha^k for k <= n, so
    E[T^2] = sum_k (2k + 1) alpha^k (k = 0..n) and v_T = E[T^2] - A^2."""
    alpha, n = sp.Symbol("alpha", positive=True), sp.Symbol("n_draft", positive=True)
    k = sp.Symbol("k", integer=True, nonnegative=True)
    second = sp.summation((2 * k + 1) * alpha ** k, (k, 0, n))
    return sp.simplify(second) - tokens_per_step ** 2


v_T_draft = _draft_variance()
#: Kingman's approximation of the mean wait in a G/G/1 queue (Kingman 1961): the prefill pool
#: serves prompts in S_p each at utilisation rho_p.
wait_mean = rho_p / (1 - rho_p) * (c_a2 + c_s2) / 2 * S_p
#: The wait at percentile p_s: in heavy traffic a request waits with probability rho_p, and then an
#: exponential time of mean wait_mean / rho_p (Kingman 1962), so P(W > w) = rho_p exp(-w rho_p /
#: wait_mean) and the percentile is (wait_mean / rho_p) ln(rho_p / (1 - p_s)), 0 where rho_p <= 1 - p_s.
wait_p = sp.Max(0, wait_mean / rho_p * sp.log(rho_p / (1 - p_s)))
#: TTFT at percentile p_s of an open stream of requests: ttft_served with the queue's wait.
ttft_queue = ttft_served.subs(q_w * t_wave, wait_p)
#: The decode batch a request meets at percentile p_s of an open stream: the requests in decode are
#: an infinite-server queue, Poisson in number for Poisson arrivals (variance = mean, M/G/inf);
#: other arrivals scale the variance by the peakedness (1 + c_a2) / 2 (Whitt 1984); normal tail.
b_p = b + z_p * sp.sqrt(b * (1 + c_a2) / 2)

EQUATIONS.update({"ttft_burst": ttft_burst, "tpot_burst": tpot_burst, "v_T": v_T_draft,
                  "wait_mean": wait_mean, "wait_p": wait_p, "ttft_queue": ttft_queue, "b_p": b_p})


# ---- KV tiers and prefix reuse ----------------------------------------------------------------
h_r = sp.Symbol("h_r", nonnegative=True)        #: share of the reusable prefix tokens found cached
I_c = sp.Symbol("I_c", nonnegative=True)        #: prompt tokens a previous turn already computed
C_tier = sp.Symbol("C_tier", nonnegative=True)  #: bytes per GPU the tiers in use hold for idle sessions
t_idle = sp.Symbol("t_idle", positive=True)     #: time a session waits between its turns, s
m_sess = sp.Symbol("m_sess", positive=True)     #: cache bytes of one idle session (its whole context)
y_hit = sp.Symbol("y_hit", positive=True)       #: output tokens/s per GPU when every prefix is cached
y_miss = sp.Symbol("y_miss", positive=True)     #: output tokens/s per GPU when no prefix is
B_tier = sp.Symbol("B_tier", positive=True)     #: per-GPU bandwidth of a tier towards the GPU, B/s
eta_tier = sp.Symbol("eta_tier", positive=True)  #: achieved fraction of it
SERVING_SYMBOLS.update({
    "h_r": (h_r, "share of the reusable prefix tokens found in a KV tier (the rest is recomputed)", "1"),
    "I_c": (I_c, "prompt tokens of a request that a previous turn of its session computed", "token"),
    "C_tier": (C_tier, "bytes per GPU that the KV tiers in use hold for sessions between turns", "B"),
    "t_idle": (t_idle, "time a session waits between its turns (tool calls, the user's reading)", "s"),
    "m_sess": (m_sess, "cache bytes one session holds between turns (its context x KV bytes per token)",
               "B"),
    "y_hit": (y_hit, "output tokens/s per GPU at one interactivity with every reusable prefix cached",
              "token/s"),
    "y_miss": (y_miss, "the same with every prefix recomputed", "token/s"),
    "B_tier": (B_tier, "per-GPU bandwidth of a KV tier towards its GPU (HBM, host link, NVMe)", "B/s"),
    "eta_tier": (eta_tier, "achieved fraction of that bandwidth", "1"),
})

#: Prompt tokens a request computes: the new ones and the reusable prefix that no tier held.
I_computed = I_in - h_r * I_c
#: Output tokens/s per GPU at hit share h_r: the GPU-seconds per output token are linear in the prompt
#: tokens computed (disaggregated: 1/X_d + (I/O)/X_p; aggregated: the step's prefill share), so
#: between the all-hit and the all-miss frontier at the same tokens/s per user they blend linearly.
y_reuse = 1 / ((1 - h_r) / y_miss + h_r / y_hit)
#: Sessions wait between turns holding m_sess each; a GPU serving y output tokens/s starts y / O
#: requests a second, so it keeps (y / O) t_idle sessions.  The tiers hold a share C_tier / (that x
#: m_sess) of them: h_r = min(1, K / y) with K = C_tier O / (t_idle m_sess).  With y = y_reuse(h_r),
#: 1/y = 1/y_miss - h_r (1/y_miss - 1/y_hit), and the fixed point is linear in h_r.
K_tier = C_tier * O_out / (t_idle * m_sess)
hit_share = sp.Min(1, K_tier / y_miss / (1 + K_tier * (1 / y_miss - 1 / y_hit)))
#: Time to bring one session's prefix back from a tier: its I_c tokens' cache, m_kv bytes each,
#: over the links of the n_send GPUs of the rank that holds it.
t_restore = I_c * m_kv / (n_send * eta_tier * B_tier)

EQUATIONS.update({"I_computed": I_computed, "y_reuse": y_reuse, "hit_share": hit_share,
                  "t_restore": t_restore})

#: The closed loop bounded by its pools.  N_c users each send their next request when the last
#: one ends; unqueued, a request takes T_0 (ttft_served) then (O - 1) TPOT, so the loop asks for
#: N_c / (T_0 + (O - 1) TPOT) requests a second.  The prefill pool serves at most eta_P G_P X_p / I
#: of them (its GPUs' prompt tokens a second over a prompt, at the share eta_P of its pass rate
#: that a saturated pool keeps), and the decode pool admits at most
#: R_d b_cap / ((O - 1) TPOT) (each of its R_d attention ranks holds b_cap sequences, by its KV
#: cache, for (O - 1) TPOT each: Little's law).  The loop runs at the least of the three; what the
#: users send beyond it waits, so by Little's law on the whole loop a request's TTFT is
#: N_c / rate - (O - 1) TPOT, never below T_0.  Aggregated serving prefills inside its decode
#: steps (t_step_aggregated): its prefill pool is no separate bound (X_p infinite).
N_c = sp.Symbol("N_c", positive=True)        #: users in the closed loop (the benchmark's concurrency)
G_P = sp.Symbol("G_P", positive=True)        #: GPUs of the prefill pool (workers x GPUs each)
R_d = sp.Symbol("R_d", positive=True)        #: attention ranks of the decode pool
b_cap = sp.Symbol("b_cap", positive=True)    #: sequences one decode rank holds at most (its KV cache)
T_0 = sp.Symbol("T_0", positive=True)        #: TTFT with no wait beyond its own wave (ttft_served), s
eta_P = sp.Symbol("eta_P", positive=True)    #: share of the prefill pool's pass rate a saturated pool serves
SERVING_SYMBOLS.update({
    "N_c": (N_c, "users in the closed loop (a benchmark's concurrency)", "1"),
    "G_P": (G_P, "GPUs of the prefill pool (prefill workers x GPUs per worker)", "1"),
    "R_d": (R_d, "attention ranks of the decode pool (decode workers x GPUs per worker / TP_a)", "1"),
    "b_cap": (b_cap, "sequences one decode rank holds at most (its KV cache at the mean context)", "1"),
    "T_0": (T_0, "TTFT with no wait beyond the request's own wave (ttft_served)", "s"),
    "eta_P": (eta_P, "share of its GPUs' prefill pass rate that a saturated prefill pool serves (KV "
              "hand-off, scheduling; fitted per stack on the public measured frontier points)", "1"),
})
rate_loop = N_c / (T_0 + (O_out - 1) * t_pt)
rate_prefill = eta_P * G_P * X_p / I_in
rate_decode = R_d * b_cap / ((O_out - 1) * t_pt)
rate_served = sp.Min(rate_loop, rate_prefill, rate_decode)
ttft_bounded = sp.Max(T_0, N_c / rate_served - (O_out - 1) * t_pt)
EQUATIONS.update({"rate_served": rate_served, "ttft_bounded": ttft_bounded})
