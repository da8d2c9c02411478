"""The routing the grouped-MoE kernel tables were measured under, rebuilt from its description.

The ``aiconfigurator-core`` 0.12.0 MoE tables (``planner/truth/data/kernels/moe.csv.gz``) time
one rank's grouped-MoE layer on routing that its collector builds, not on a model's router:

``balanced``
    token ``t``'s slot ``i`` goes to expert ``(t + i s) mod E`` with the stride ``s = ceil(E / k)``
    when ``N >= s`` tokens, else to ``floor((t s / N + i s) mod E)``: every expert as nearly equally
    loaded as whole tokens allow, ``min(E, N k)`` of them touched.
``power_law_<alpha>``
    per-expert counts drawn from a power law with exponent ``alpha`` (inverse CDF between
    ``x_min = 1`` and ``x_max = 0.8 N`` when ``N k > E``, else between 0.01 and 2), scaled to
    ``N k`` and rounded, each at most ``N`` (a token picks an expert once); the excess, and the
    rounding's difference from ``N k``, handed back one at a time round-robin over the EP ranks,
    each rank's smallest expert below ``N`` first (its largest first when taking away); then the
    busiest EP rank's block of experts is moved to rank 0, the rank the kernel runs.  Tokens get
    their experts from the counts largest first, slot by slot (:func:`_power_law_ids`).  The
    kernel is timed over five such draws.

The rank holds experts ``0 .. E/EP - 1`` and runs only the token-expert pairs routed to them.
Source: the aiconfigurator collector's routing helpers (``collector/helper.py``: balanced and
power-law logits, Apache-2.0, NVIDIA), as read; the facts only, re-expressed here.

:func:`measured_rank` gives, per table row, the rank's token-expert rows ``T_er``, its distinct
experts touched ``n_er``, the rows padded to whole tiles expert by expert and the slots its
activation passes carry ``T_ea``, which the grouped-MoE law (``moe_law`` in
:mod:`planner.physics.operators`) takes in place of uniform routing.  Power-law rows are the
mean of :data:`DRAWS` draws from a fixed seed (the collector's own draws are not seeded).

Both routings' logits mark each token's constructed experts high and every other expert equally
low.  The SGLang and vLLM collectors pass DeepSeek-V3's layer through its group-limited router
(:data:`GROUP_LIMITED`), which keeps the groups with the most marked experts (ties to the lowest
index) and, beside the marked experts there, the lowest-index others; rebuilt for both routings.
On the balanced logits every group ties: at EP 1 the kernels stream half the experts, at EP 256
rank 0's one expert gets every token, and the measured kernels follow it.  On the power-law rows
it moves the DeepSeek layer's SGLang and vLLM kernels' median predicted / measured at EP 32-256
from 0.76-0.85 to 0.83-1.07 (laws refitted), in line with their balanced rows (0.85-1.25).

SGLang's raw Triton path at EP > 1 (:data:`MASKED_VARIANTS`) is handed every token with all ``k``
of its slots, the remote ones masked: its grouped GEMMs run the rank's own rows only, while its
activation and combine passes run over buffers of all ``N k`` slots (``T_ea`` of the law), and
each remote expert the tokens reach gets a row of blocks in the GEMMs' grids that write zeros
(``n_ez``: the distinct experts every token reaches, less the rank's own).
Measured: the Qwen3-235B layer (hidden 4096, expert 1536, 128 experts, top 8) on H200 in BF16 at
4096 balanced tokens takes 4898, 2639, 1440, 856, 575, 440, 371 and 346 us at EP 1 to 128, about
330 us + 4570 us / EP: the rank's own rows shrink as 1/EP, a part that does not remains (330 us
is the ``N k`` slots' activation bytes, 0.94 GB, at ~60% of HBM bandwidth).  Pricing the remote slots as
GEMM rows on expert 0 (read so last round) would have the EP 8 kernel run at 1.46x the BF16
peak.  Refitted, SGLang's grouped-MoE cells fall on H200 from 15.5% to 12.4% median error
(p90 41.7% to 34.2%) and on H100 from 12.9% to 10.8% (40.0% to 29.4%).
TensorRT-LLM's min-latency kernels, whose group-limited router runs on an uninitialised bias, are
not scored at all (:data:`planner.truth.kernels.UNKNOWN_ROUTING_VARIANTS`).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pandas as pd

#: (stack, hidden, expert intermediate, experts, top-k) -> (groups, groups kept) of the
#: group-limited router the stack's collector applies to that layer's logits: DeepSeek-V3/R1's
#: (8 groups of 32, 4 kept) in the SGLang and vLLM collectors
GROUP_LIMITED = {(stack, 7168, 2048, 256, 8): (8, 4) for stack in ("sglang", "vllm")}
#: kernels timed on SGLang's raw Triton path, which at EP > 1 is handed every token with its remote
#: slots masked: the GEMMs skip them, the activation and combine buffers hold all N k slots; the
#: layers with a group-limited router (:data:`GROUP_LIMITED`) go through SGLang's MoE layer instead
MASKED_VARIANTS = ("sglang_fused_moe_triton",)
#: power-law draws averaged per shape, and their seed
DRAWS = 8
SEED = 20260427


def _balanced_ids(n: int, e: int, k: int) -> np.ndarray:
    """The experts the balanced routing gives each of ``n`` tokens (``n`` x ``k``)."""
    s = -(-e // k)
    t = np.arange(n, dtype=float)[:, None]
    i = np.arange(k, dtype=float)[None, :]
    ids = (t + i * s) % e if n >= s else np.floor(np.mod(t * s / n + i * s, e))
    return ids.astype(np.int64)


def _group_limited(ids: np.ndarray, e: int, k: int, n_group: int, topk_group: int) -> np.ndarray:
    """The experts a group-limited router keeps when given logits that mark ``ids`` (each token's
    ``k`` constructed experts) high and every other expert equally low: the ``topk_group`` groups of
    ``e / n_group`` experts with the highest score (the sum of a group's two best: two marked, one,
    or none), then the marked experts of those groups and, for the rest of the ``k``, the lowest
    unmarked ones; ties go to the lowest index (n x k)."""
    n = len(ids)
    size = e // n_group
    hot = np.zeros((n, e), bool)
    hot[np.arange(n)[:, None], ids] = True
    per_group = hot.reshape(n, n_group, size).sum(axis=2)
    score = np.minimum(per_group, 2)                               # the two best: 2, 1 or 0 marked
    groups = np.sort(np.argsort(-score, axis=1, kind="stable")[:, :topk_group], axis=1)
    cand = (groups[:, :, None] * size + np.arange(size)[None, None, :]).reshape(n, -1)  # ascending
    marked = np.take_along_axis(hot, cand, axis=1)
    # marked experts first, then the unmarked in index order: stable sort on "unmarked"
    order = np.argsort(~marked, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(cand, order, axis=1)


def _fill(v: np.ndarray, amount: np.ndarray, cap: float) -> np.ndarray:
    """Add ``amount[j]`` units to row ``j`` of ``v``, always to its smallest entry below ``cap``
    (one unit at a time, so the smallest entries rise to a common level); rows as a multiset."""
    s = np.sort(v, axis=1).astype(float)
    n = s.shape[1]
    csum = np.cumsum(s, axis=1)
    m_idx = np.arange(1, n + 1, dtype=float)
    need = m_idx * s - csum                          # units to lift the first m entries to s_m
    a = amount[:, None].astype(float)
    m = np.maximum((need <= a).sum(axis=1), 1)       # entries the level reaches
    level = (amount + csum[np.arange(len(s)), m - 1]) / m
    level = np.minimum(level, cap)
    base = np.floor(level)
    extra = np.round(np.minimum(amount + csum[np.arange(len(s)), m - 1] - base * m, m)).astype(int)
    pos = np.arange(n)[None, :]
    lifted = base[:, None] + (pos < extra[:, None])
    return np.where(pos < m[:, None], np.maximum(lifted, s), s)


def _spread(cc: np.ndarray, total: int, cap: float) -> np.ndarray:
    """Hand ``total`` units round-robin over the rank rows of ``cc``, each to its smallest expert
    below ``cap`` (ranks that are full pass their turn)."""
    left = int(total)
    while left > 0:
        room = (cap - cc).clip(min=0).sum(axis=1)
        live = np.flatnonzero(room > 0)
        if live.size == 0:
            break
        q, r = divmod(left, live.size)
        share = np.full(live.size, q) + (np.arange(live.size) < r)
        share = np.minimum(share, room[live])
        cc = cc.copy()
        cc[live] = _fill(cc[live], share, cap)
        left -= int(share.sum())
    return cc


def _power_law_counts(n: int, e: int, k: int, ep: int, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """Every expert's token-expert pairs in one power-law draw, the busiest EP rank's block of
    experts moved to rank 0 (``E``)."""
    lo, hi = (1.0, 0.8 * n) if n * k > e else (0.01, 2.0)
    u = rng.random(e)
    x = ((hi ** (1 - alpha) - lo ** (1 - alpha)) * u + lo ** (1 - alpha)) ** (1 / (1 - alpha))
    c = np.round(x / x.sum() * n * k)
    over = float(np.clip(c - n, 0, None).sum())
    cc = np.minimum(c, n).reshape(ep, e // ep)
    cc = _spread(cc, int(over), float(n))
    delta = int(n * k - cc.sum())
    if delta > 0:
        cc = _spread(cc, delta, float(n))
    elif delta < 0:  # take away from the largest: the same filling on the negated counts
        cc = -_spread(-cc, -delta, 0.0)
    busiest = int(np.argmax(cc.sum(axis=1)))
    cc[[0, busiest]] = cc[[busiest, 0]]
    return cc.ravel()


def _power_law_ids(counts: np.ndarray, n: int, k: int) -> np.ndarray:
    """The experts each token gets from per-expert ``counts`` (each at most ``n``, summing to
    ``n k``), as the collector assigns them: the experts sorted by count, largest first (ties to
    the lowest index), each repeated by its count, the run read slot by slot (slot ``i`` of token
    ``t`` is entry ``i n + t``), so no token gets an expert twice (``n`` x ``k``)."""
    order = np.argsort(-counts, kind="stable")
    return np.repeat(order, np.rint(counts[order]).astype(np.int64)).reshape(k, n).T


def _on_rank0(ids: np.ndarray, local: int) -> np.ndarray:
    """Rank 0's per-expert rows from every token's experts ``ids`` (rank 0 holds experts
    ``0 .. local - 1``)."""
    mine = ids < local
    return np.bincount(ids[mine], minlength=local).astype(float)


@cache
def _rank(n: int, e: int, k: int, ep: int, distribution: str,
          groups: tuple[int, int] | None = None) -> tuple[float, float, float, float, float]:
    local = e // ep
    if distribution == "balanced":
        ids = [_balanced_ids(n, e, k)]
    elif distribution.startswith("power_law_"):
        alpha = float(distribution.removeprefix("power_law_"))
        rng = np.random.default_rng(SEED)
        counts = [_power_law_counts(n, e, k, ep, alpha, rng) for _ in range(DRAWS)]
        if groups is None:  # rank 0's own counts: no need to assign tokens
            ids = None
            draws = [c[:local] for c in counts]
            every = [float((np.rint(c) > 0).sum()) for c in counts]
        else:
            ids = [_power_law_ids(c, n, k) for c in counts]
    else:
        raise ValueError(f"routing distribution {distribution!r} not described")
    if ids is not None:
        if groups is not None:
            ids = [_group_limited(x, e, k, *groups) for x in ids]
        draws = [_on_rank0(x, local) for x in ids]
        every = [float(len(np.unique(x))) for x in ids]
    c = np.asarray(draws, float)
    pad = {t: float((np.ceil(c / t) * t).sum(axis=1).mean()) for t in (64.0, 128.0)}
    return (float(c.sum(axis=1).mean()), float((c > 0).sum(axis=1).mean()), pad[64.0], pad[128.0],
            float(np.mean(every)))


def measured_rank(d: pd.DataFrame, tile: float) -> tuple[np.ndarray, ...]:
    """Per row of a MoE table (``tokens``, ``experts``, ``topk``, ``ep``, ``distribution``): the
    measured rank's token-expert rows ``T_er``, distinct experts touched ``n_er``, rows padded
    to whole ``tile``-row tiles expert by expert (64 or 128), the slots its activation passes
    carry ``T_ea`` (``T_er``; every slot of every token on the masked path,
    :data:`MASKED_VARIANTS`) and the remote experts the masked path launches blocks for
    ``n_ez`` (the distinct experts the tokens route to on other ranks; 0 elsewhere)."""
    col = 2 if tile == 64.0 else 3
    blank = pd.Series("", index=d.index)
    zero = pd.Series(0, index=d.index)
    keys = zip(d["tokens"].astype(int), d["experts"].astype(int), d["topk"].astype(int),
               d["ep"].astype(int), d["distribution"].astype(str), d.get("stack", blank).astype(str),
               d.get("variant", blank).astype(str), d.get("hidden", zero).astype(int),
               d.get("inter", zero).astype(int), strict=True)
    out, masked = [], []
    for n, e, k, ep, dist, stack, variant, h, f in keys:
        groups = GROUP_LIMITED.get((stack, h, f, e, k))
        masked.append(variant in MASKED_VARIANTS and ep > 1 and groups is None)
        out.append(_rank(n, e, k, ep, dist, groups))
    v = np.array(out, float).reshape(-1, 5)
    slots = np.where(masked, d["tokens"].to_numpy(float) * d["topk"].to_numpy(float), v[:, 0])
    remote = np.where(masked, np.maximum(v[:, 4] - v[:, 1], 0.0), 0.0)
    return v[:, 0], v[:, 1], v[:, col], slots, remote
