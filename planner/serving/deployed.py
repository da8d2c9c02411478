"""Deployments as serving stacks run them: one benchmark point predicted, and the as-deployed frontier.

A *deployment* is what a benchmark launches and measures: a serving framework's workers (aggregated:
one worker of ``tp`` GPUs; disaggregated: prefill and decode workers, each with its attention TP /
DP and EP), a precision, speculation on or off (with the recipe's draft count), ISL/OSL and a
concurrency: ``concurrency`` users in a closed loop, each sending its next request when the last
one ends.  :func:`predict` gives, for each deployment, what the benchmark reports: median TPOT
and TTFT, tokens/s per user (1 / TPOT) and tokens/s per GPU over every GPU of the deployment.

How a deployment is predicted (the same step laws as every other answer of the tool):

- the requests are what the benchmark sends: lengths drawn uniformly between
  :data:`LENGTH_RANGE_RATIO` x and 1 x the nominal ISL and OSL (InferenceX's
  ``random-range-ratio`` 0.8, ``.github/workflows/benchmark-tmpl.yml``), so the mean request is
  0.9 x the nominal pair;
- the decode batch per attention-DP rank is the decoding share of the concurrency (Little's law on
  the closed loop, ``f = (O - 1) TPOT / (TTFT + (O - 1) TPOT)``, solved by fixed-point iteration
  on the predicted TTFT and TPOT), over the decode workers and their DP ranks, never above what the
  KV cache holds, and never below one sequence (a request's own rank holds at least it: fewer
  users than ranks leave ranks idle, not fractions of a sequence on each);
- TPOT is the decode step (overlap off, as the measured runs were fitted) over the tokens a step
  emits; an aggregated step carries its share of chunked prefill (``t_step_aggregated``);
- TTFT is ``ttft_queue`` at the median: the stack's per-request latency, the pass's host time, one
  prompt's prefill pass at the prefill layout, and the median wait in the prefill queue at the
  utilisation the loop's request rate gives it; the loop is bounded by its pools
  (``ttft_bounded``: what the users ask beyond the prefill pool's or the decode pool's rate
  waits); the burst's p99 queues its first wave (``ttft_burst``);
- tokens/s per GPU = concurrency x OUTPUT_YIELD x OSL / (TTFT + (OSL - 1) TPOT) over all GPUs.

The recipes (:func:`recipes`, ``data/deployment_recipes.csv.gz``, see the ``.md`` beside it) are
the public launch matrices of the InferenceX benchmark: which layouts, worker counts, concurrencies
and MTP draft counts each framework runs on each system.  :func:`deployed_points` turns them into
deployments for a model on a system (the model's own recipes where the matrix has them, else the
DeepSeek-R1 recipes of the same system and serving mode: the layouts a stack ships for a large
MoE; of those, the precision's own, else any precision's layouts; else
:func:`generic_deployments`), each recipe layout at its own concurrencies and on a geometric
ladder from one user to :data:`MAX_RUNNING_PER_WORKER` per decode worker.  Speculation is
accepted as under the benchmark's load (:func:`bench_speculation`).  That literal list is
``--search recipes``.

The default, ``--search rules`` (:func:`rules_deployments`, :func:`rate_matched`), derives the
worker layouts from the hardware (:func:`rule_layouts`: attention TP over one or two nodes,
attention DP + EP from a node to the scale-up domain, workers of 1-4 GPUs where they hold the
weights, across nodes only where a node cannot: :func:`across_nodes_where_needed`), prices each at
concurrencies up to :data:`MAX_RUNNING_PER_RANK` a rank with the prefill pool sized to what its
decode workers ask, and keeps the model's own recipes on the system as priors; no model or system
borrows another's.
"""

from __future__ import annotations

import math
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from planner.errors import SpecError
from planner.physics import compiled
from planner.physics.step import (
    CATEGORIES,
    REASONS,
    WEIGHTS_DO_NOT_FIT,
    default_slots,
    evaluate_configs,
    pass_kernels,
    resolve_precisions,
    resolve_speculation,
)
from planner.specs.hardware import Hardware
from planner.specs.model import Model

#: InferenceX draws each request's ISL and OSL uniformly from [ratio x L, L]
#: (``random-range-ratio`` default 0.8, ``.github/workflows/benchmark-tmpl.yml``).
LENGTH_RANGE_RATIO = 0.8
#: mean request length over the nominal one
LENGTH_MEAN = (1.0 + LENGTH_RANGE_RATIO) / 2.0
#: Output tokens a benchmark's deployment delivers per request over the nominal OSL, as its own
#: figures give it: measured output tokens/s x median E2E / (concurrency x OSL), median over the
#: 1,615 public InferenceX frontier points with every figure (SemiAnalysis; 2025-10 to 2026-09):
#: 0.872 (standard error 0.0005 by bootstrap; 0.857-0.876 per system, 5-95% 0.81-0.90), below the
#: 0.9 of the length draw alone (``scripts/derive_output_yield.py``, 2026-12-07).  Tokens/s per GPU
#: are concurrency x OUTPUT_YIELD x OSL / E2E; E2E itself is the mean request's.
OUTPUT_YIELD = 0.872
#: The share of its GPUs' prefill pass rate that a saturated disaggregated prefill pool serves
#: (``eta_P`` of ``rate_prefill``: the KV hand-off and the scheduler between passes), per stack,
#: fitted by ``scripts/derive_prefill_pool_share.py`` on the scored disaggregated points of the
#: public measured frontier file (InferenceX, SemiAnalysis; 2025-10 to 2026-09), minimising the
#: mean |log| error of output tokens/s per GPU: SGLang 0.60 (bootstrap SE 0.04, 215 points; mean
#: |log| 0.194, 0.231 at 1), TensorRT-LLM 0.80 (SE 0.07, 89 points; 0.185, 0.189 at 1); a stack
#: without points takes every point's fit, 0.70 (SE 0.04, 304 points).  Fitted 2026-12-07.
PREFILL_POOL_SHARE = {"sglang": 0.60, "trtllm": 0.80}
PREFILL_POOL_SHARE_OTHER = 0.70
#: The prefill queue of a steady closed loop (``ttft_queue`` at the median): arrivals taken as a
#: Poisson stream (c_a^2 = 1: a closed loop of many users is no burstier than that), prompt lengths
#: uniform in [0.8, 1] x ISL (c_s^2 = (0.2^2 / 12) / 0.9^2), and a utilisation held below
#: RHO_STEADY there (the pool bound, ``ttft_bounded``, takes over at saturation).
ARRIVAL_CV2 = 1.0
LENGTH_CV2 = (1.0 - LENGTH_RANGE_RATIO) ** 2 / 12.0 / LENGTH_MEAN**2
RHO_STEADY = 0.999
#: Fixed-point iterations of the decoding share of the concurrency.
ITERATIONS = 6
#: Concurrencies tried per doubling between a recipe layout's smallest and largest.
CONC_PER_OCTAVE = 4

#: benchmark framework -> (serving stack of the fits, disaggregated)
FRAMEWORKS = {
    "sglang": ("sglang", False),
    "trt": ("trtllm", False),
    "vllm": ("vllm", False),
    "atom": ("vllm", False),
    "dynamo-trt": ("trtllm", True),
    "dynamo-sglang": ("sglang", True),
    "dynamo-vllm": ("vllm", True),
    "mori-sglang": ("sglang", True),
    "sglang-disagg": ("sglang", True),
    "vllm-disagg": ("vllm", True),
    "atom-disagg": ("vllm", True),
}
#: framework names the measured-frontier file and the launch matrix spell differently
FRAMEWORK_ALIASES = {"mori-sglang": "sglang-disagg"}
#: bundled system -> the benchmark's runner name
RUNNERS = {
    "hgx-b200": "b200",
    "hgx-b300": "b300",
    "hgx-h100": "h100",
    "hgx-h200": "h200",
    "gb200-nvl72": "gb200",
    "gb300-nvl72": "gb300",
    "mi300x": "mi300x",
    "mi325x": "mi325x",
    "mi355x": "mi355x",
}
#: bundled model -> the benchmark's model prefix
MODEL_PREFIX = {
    "kimi-k2-thinking": "kimik2.5",  # one architecture (K2.5 adds a vision encoder)
    "kimi-k2": "kimik2.5",
    "deepseek-r1": "dsr1",
    "deepseek-v3": "dsr1",
    "gpt-oss-120b": "gptoss",
    "minimax-m2.5": "minimaxm2.5",
    "kimi-k2.5": "kimik2.5",
}
#: the recipes' model prefixes, as output names them
RECIPE_MODELS = {"dsr1": "DeepSeek-R1", "kimik2.5": "Kimi K2.5", "gptoss": "gpt-oss",
                 "minimaxm2.5": "MiniMax-M2.5"}
#: MTP drafts a stack's launch script sets where the recipe does not say (InferenceX
#: ``benchmarks/single_node/fixed_seq_len``: ``dsr1_fp8_b200_trt_mtp.sh`` MTP=3, and 1 with attention
#: DP; ``dsr1_fp8_b200_mtp.sh`` SPECULATIVE_NUM_STEPS=2 for SGLang)
DEFAULT_DRAFTS = {"trtllm": 3, "sglang": 2, "vllm": 2}
DEFAULT_DRAFTS_DP = {"trtllm": 1}
#: Speculation as measured under the benchmark's load: the share of the published accepted drafts
#: (tokens per step - 1) that the benchmark's requests get, per stack.  Derived by
#: ``scripts/derive_benchmark_acceptance.py`` from the public measured frontier points (InferenceX,
#: SemiAnalysis; points of 2025-10 to 2026-09): pairs of one configuration measured with and without
#: MTP, the measured TPOT speedup against the speedup predicted at the published acceptance, median
#: over the pairs (standard error by bootstrap).  SGLang: 18 pairs, 0.47 (SE 0.07), falling with
#: concurrency (correlation with log concurrency -0.62); TensorRT-LLM: 27 pairs, 0.82 (SE 0.05);
#: a stack without pairs takes every pair's median (45 pairs, 0.71).  Derived 2026-12-03.
BENCH_ACCEPTANCE = {"sglang": 0.47, "trtllm": 0.82}
BENCH_ACCEPTANCE_OTHER = 0.71
#: Requests one worker runs at once where its recipe schedules fewer: the largest fixed
#: ``--max-running-requests`` / ``--cuda-graph-max-bs`` in InferenceX's single-node launch scripts
#: (``benchmarks/single_node/fixed_seq_len/dsr1_fp8_h200.sh``: 512; most others set it to the
#: benchmark's concurrency, 256 or 128).  The KV cache caps the running batch below it.
MAX_RUNNING_PER_WORKER = 512
#: the benchmark's concurrencies where a system has no recipe (its usual sweep, 4 to 512 doubling)
GENERIC_CONCURRENCY = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)

LAYOUT_COLUMNS = (
    "decode_workers",
    "decode_gpus",
    "decode_tp_attn",
    "decode_ep",
    "prefill_workers",
    "prefill_gpus",
    "prefill_tp_attn",
    "prefill_ep",
)


@lru_cache(maxsize=1)
def recipes() -> pd.DataFrame:
    """The bundled launch recipes, one row per scheduled (layout, concurrency)."""
    with resources.files("planner.serving.data").joinpath("deployment_recipes.csv.gz").open("rb") as fh:
        return pd.read_csv(fh, compression="gzip", dtype=str, keep_default_na=False)


def _f(col: pd.Series, default: float = math.nan) -> np.ndarray:
    v = pd.to_numeric(col, errors="coerce").to_numpy(float)
    return np.where(np.isfinite(v), v, default)


#: why a recipe row gives no deployment (counted in ``attrs["dropped"]``, never dropped silently)
RECIPE_DROPS = {
    "no_concurrency": "the row's concurrency is blank or below one user",
    "no_workers": "a pool's worker count or GPUs per worker is blank or below one",
    "worker_size_not_stated": "attention DP on a worker of tp 1 and ep 1: the GPUs per worker are not stated",
}


def worker_gpus(tp: Any, ep: Any) -> np.ndarray:
    """GPUs per worker from a recipe's ``tp`` and ``ep``: the larger of the two.  Stacks write a
    worker of attention data parallelism either as ``tp N, ep N`` (SGLang, TensorRT-LLM) or as
    ``tp 1, ep N`` (vLLM's ``--data-parallel-size N`` with ``--enable-expert-parallel``; SGLang's
    disaggregated GB200 recipes): both are N GPUs, every expert-parallel rank a GPU."""
    tp, ep = np.asarray(tp, float), np.asarray(ep, float)
    return np.where(np.isfinite(ep), np.fmax(tp, ep), tp)


def count_drops(masks: dict[str, np.ndarray]) -> dict[str, int]:
    """``{reason: rows}`` of the masks, each row counted once under its first reason."""
    out: dict[str, int] = {}
    taken = None
    for k, m in masks.items():
        m = np.asarray(m, bool) if taken is None else np.asarray(m, bool) & ~taken
        taken = m if taken is None else taken | m
        if m.any():
            out[k] = int(m.sum())
    return out


def from_recipes(r: pd.DataFrame, stack: str) -> pd.DataFrame:
    """Deployments (one row each: :data:`LAYOUT_COLUMNS`, ``disagg``, ``concurrency``, ``drafts``)
    of recipe rows ``r`` (the recipe file's columns) for a stack.  GPUs per worker:
    :func:`worker_gpus`.  The rows that give no deployment are counted by reason
    (:data:`RECIPE_DROPS`) in ``attrs["dropped"]``."""
    disagg = r.disagg.to_numpy() == "true"
    tp = _f(r.tp)
    dp = r.dp_attn.to_numpy() == "true"
    out = pd.DataFrame({"disagg": disagg, "concurrency": _f(r.conc)})
    unstated = np.zeros(len(r), bool)
    for role in ("decode", "prefill"):
        t = np.where(disagg, _f(r[f"{role}_tp"]), tp)
        rdp = np.where(disagg, r[f"{role}_dp_attn"].to_numpy() == "true", dp)
        ep = np.where(disagg, _f(r[f"{role}_ep"], 1.0), _f(r.ep, 1.0))
        g = worker_gpus(t, ep)
        unstated |= rdp & (g <= 1)
        out[f"{role}_workers"] = np.where(disagg, _f(r[f"{role}_workers"], 1.0), 1.0)
        out[f"{role}_gpus"] = g
        # attention TP: 1 under attention DP, else the recipe's tp (ranks of tp GPUs share the worker)
        out[f"{role}_tp_attn"] = np.where(rdp, 1.0, t)
        out[f"{role}_ep"] = ep
    spec = r.spec_decoding.to_numpy() == "mtp"
    given = _f(r.mtp_drafts)
    dflt = np.where(
        out.decode_tp_attn < out.decode_gpus,
        DEFAULT_DRAFTS_DP.get(stack, DEFAULT_DRAFTS.get(stack, 2)),
        DEFAULT_DRAFTS.get(stack, 2),
    )
    out["drafts"] = np.where(spec, np.where(np.isfinite(given) & (given > 0), given, dflt), 0).astype(int)
    no_conc = ~(np.isfinite(out.concurrency) & (out.concurrency >= 1)).to_numpy()
    no_workers = np.zeros(len(r), bool)
    for c in ("decode_workers", "decode_gpus", "prefill_workers", "prefill_gpus"):
        no_workers |= ~(np.isfinite(out[c]) & (out[c] >= 1)).to_numpy()  # (0 decode workers serve nothing)
    dropped = count_drops({"no_concurrency": no_conc, "no_workers": no_workers,
                           "worker_size_not_stated": unstated})
    res = out[~(no_conc | no_workers | unstated)].reset_index(drop=True)
    res.attrs["dropped"] = dropped
    return res


def generic_deployments(hw: Hardware, disagg: bool, speculate: bool, stack: str) -> pd.DataFrame:
    """Deployments where no recipe applies: the layouts every stack's recipes run, on one node's
    GPUs (at most the scale-up domain): attention TP with EP 1, TP with EP over the node, attention
    DP with EP over the node; and on 2 and 4 such nodes, and 8 and 16 where the scale-up domain
    holds them (the multi-node and rack recipes' layouts: attention TP within a node or attention
    DP, EP over every GPU).  Disaggregated, one prefill worker of the
    same layout per decode worker; the benchmark's usual concurrencies.  A node is a host's GPUs
    (4 on a GB200 NVL72 tray), else the system's, at most the scale-up domain."""
    n = float(min(hw.gpus_per_host or hw.gpus_per_system, hw.domain_size))
    layouts = [(n, n, 1.0), (n, n, n), (n, 1.0, n)]
    # 2 and 4 nodes (over the NIC where a node is the domain), and within a larger scale-up domain
    # 8 and 16 nodes too (the wide expert-parallel workers a rack's recipes run: DEP32, DEP64)
    ks = [2.0, 4.0] + [k for k in (8.0, 16.0) if k * n <= hw.domain_size]
    layouts += [(k * n, tpa, k * n) for k in ks for tpa in (n, 1.0)]
    rows = []
    for g, tpa, ep in layouts:
        drafts = 0
        if speculate:
            drafts = (DEFAULT_DRAFTS_DP.get(stack, DEFAULT_DRAFTS.get(stack, 2)) if tpa < n
                      else DEFAULT_DRAFTS.get(stack, 2))
        for c in GENERIC_CONCURRENCY:
            rows.append({"disagg": disagg, "concurrency": float(c), "decode_workers": 1.0, "decode_gpus": g,
                         "decode_tp_attn": tpa, "decode_ep": ep, "prefill_workers": 1.0,
                         "prefill_gpus": g, "prefill_tp_attn": tpa, "prefill_ep": ep, "drafts": drafts})
    return pd.DataFrame(rows)


#: what :func:`rule_layouts` gives, for output headers
RULE_LAYOUTS = ("attention TP over 1-2 nodes, attention DP + EP from a node to the domain, 2-4 nodes over "
                "the NIC")
#: what :func:`generic_deployments` tries, for output headers
GENERIC_LAYOUTS = ("one node as attention TP, TP + EP and attention DP + EP, and 2 to 16 nodes with EP "
                   "over every GPU")


def _generic(model: Model, hw: Hardware, disagg: bool, speculate: bool | None) -> pd.DataFrame:
    """:func:`generic_deployments` with speculation off and on (``speculate`` None), or as given;
    on only where ``model`` speculates."""
    specs = [False, True] if speculate is None else [bool(speculate)]
    return pd.concat([generic_deployments(hw, disagg, s, hw.stack or "") for s in specs
                      if not s or model.speculates], ignore_index=True)


def ladder(dep: pd.DataFrame, per_octave: int = CONC_PER_OCTAVE) -> pd.DataFrame:
    """Each layout (everything but the concurrency) at its own concurrencies and on a geometric
    ladder from one user to the most its decode workers run (:data:`MAX_RUNNING_PER_WORKER` each,
    or the most any recipe schedules on that layout; whole users); ``per_octave`` 0: the scheduled
    concurrencies alone."""
    if per_octave <= 0 or dep.empty:
        return dep.drop_duplicates(ignore_index=True)
    keys = [c for c in dep.columns if c != "concurrency"]
    frames = []
    for _, g in dep.groupby(keys, sort=False, dropna=False):
        lo = 1.0
        hi = max(float(g.concurrency.max()), MAX_RUNNING_PER_WORKER * float(g.decode_workers.iloc[0]))
        n = int(round(math.log2(hi / lo) * per_octave)) if hi > lo else 0
        c = np.unique(
            np.concatenate(
                [g.concurrency.to_numpy(float), np.round(lo * 2.0 ** (np.arange(n + 1) / per_octave))]
            )
        )
        c = c[c <= hi]
        base = g.iloc[[0] * len(c)].reset_index(drop=True)
        frames.append(base.assign(concurrency=c))
    return pd.concat(frames, ignore_index=True).drop_duplicates(ignore_index=True)


#: where a system has no recipes of its own: the recipe system of its class whose recipes it
#: takes (a rack of 72 GPUs in one NVLink / UALink domain: GB300 NVL72's, the newest rack the
#: matrices cover; an 8-GPU node: B300's for a Blackwell-class part, H200's for a Hopper-class one)
PROXY_RUNNERS = {"rack": "gb300", "blackwell": "b300", "hopper": "h200"}


def _is_bundled_system(hw: Hardware) -> bool:
    """Whether ``hw`` is the bundled system of its name in the figures a recipe depends on (GPUs
    per domain and system, HBM, tensor rates, links): a spec renamed after a bundled system is
    not that system, and takes none of its launch recipes."""
    from planner.specs.registry import hardware_names, load_hardware

    if hw.name not in hardware_names():
        return False
    ref = load_hardware(hw.name)
    keys = ("domain_size", "gpus_per_system", "hbm_capacity", "hbm_bandwidth", "flops", "su_bandwidth",
            "so_bandwidth", "family")
    return all(getattr(hw, k, None) == getattr(ref, k, None) for k in keys)


def recipe_runner(hw: Hardware) -> tuple[str, bool]:
    """The benchmark runner whose recipes ``hw`` takes, and whether it is another system's (a
    system the launch matrices do not cover takes its class's: :data:`PROXY_RUNNERS`; a PCIe
    server takes none)."""
    own = RUNNERS.get(hw.name)
    if own is not None and _is_bundled_system(hw):
        return own, False
    if hw.su_link == "pcie":
        return hw.name, False
    if hw.domain_size >= 72:
        return PROXY_RUNNERS["rack"], True
    return PROXY_RUNNERS.get(hw.family, hw.name), hw.family in PROXY_RUNNERS


def deployed_points(
    model: Model,
    hw: Hardware,
    *,
    disagg: bool,
    precision: str,
    speculate: bool | None,
    isl: float,
    osl: float,
    frameworks: list[str] | None = None,
    per_octave: int = CONC_PER_OCTAVE,
    own_only: bool = False,
) -> tuple[pd.DataFrame, str]:
    """The deployments the as-deployed search tries for ``model`` on ``hw`` (see the module
    docstring), and where they come from (a sentence for output headers).  ``precision``:
    ``fp4``, ``fp8`` or ``int4`` (the recipe's weights); ``speculate`` None: both.  ``own_only``:
    the model's own recipes on the system itself or none (no other model's, no other system's, no
    generic layouts: the rules search's priors)."""
    stack = hw.stack or ""
    runner, proxy = recipe_runner(hw)
    r = recipes()
    fw_ok = [f for f, (s, d) in FRAMEWORKS.items() if d == disagg and (frameworks is None or f in frameworks)]
    sel = r[(r.runner == runner) & r.framework.isin(fw_ok)]
    if speculate is not None:
        sel = sel[(sel.spec_decoding == "mtp") == bool(speculate)]
    # the model's own recipes, else DeepSeek-R1's (the layouts a stack ships for a large MoE); of
    # those, the precision's own, else any precision's (the layouts; the memory check decides what
    # fits); of those, the system's own stack's where it has any, else every framework's of that mode
    prefix = MODEL_PREFIX.get(model.name, "")
    mine, src_model, where = sel.iloc[:0], model.name, ""
    sources = ((prefix, RECIPE_MODELS.get(prefix, prefix)), ("dsr1", "DeepSeek-R1"))
    if own_only:
        sources = sources[:1] if not proxy else ()
    for pfx, name in sources:
        cand = sel[sel.model_prefix == pfx] if pfx else sel.iloc[:0]
        if cand.empty:
            continue
        same = cand[cand.precision == precision]
        cand = same if not same.empty else cand
        own = cand[cand.framework.map(lambda f: FRAMEWORKS[f][0] == stack)] if stack else cand
        mine, src_model, where = (
            (own, name, "the system's stack") if not own.empty else (cand, name, "another stack's recipes")
        )
        break
    if not mine.empty:
        # the recipes of the nearest sequence lengths
        d = np.log(_f(mine.isl) / isl) ** 2 + np.log(_f(mine.osl) / osl) ** 2
        mine = mine[np.isclose(d, d.min())]
        dep = from_recipes(mine, stack)
        fws = ", ".join(sorted(set(mine.framework)))
        lens = f"{mine.isl.iloc[0]}/{mine.osl.iloc[0]}"
        note = f"InferenceX launch recipes of {src_model} ({fws}: {where}; ISL/OSL {lens})"
        if proxy:
            note += f", as run on {runner} (no recipe of {hw.name} itself)"
    elif own_only:
        dep, note = pd.DataFrame(columns=[*LAYOUT_COLUMNS, "disagg", "concurrency", "drafts"]), ""
    else:
        dep = _generic(model, hw, disagg, speculate)
        note = f"no launch recipe for {hw.name}: {GENERIC_LAYOUTS}"
    dropped = dict(dep.attrs.get("dropped", {}))
    if not model.speculates:
        dep = dep[dep.drafts == 0]
    out = ladder(dep.reset_index(drop=True), per_octave)
    out.attrs["dropped"] = dropped
    out.attrs["recipe_rows"] = len(mine)
    return out, note


#: Sequences one attention rank of a rules-search worker runs at most: the most the InferenceX
#: launch recipes schedule per rank (B200 dynamo-sglang DEP8 decode workers at 4,096 users: 512 a
#: rank; GB200 DEP48 at 15,000: 312); the KV cache caps it below that where it holds fewer.
MAX_RUNNING_PER_RANK = 512
#: the share of the best ideal-ratio rate (at least as fast per user) below which a rules-search
#: candidate is not priced with whole workers: rounding to whole prefill workers around eight
#: decode workers adds at most one prefill worker to the ideal pool, a far smaller loss than this
RULE_PRUNE = 0.6
#: decode workers a rules-search disaggregated deployment groups around its prefill pool: with
#: prefill workers rate-matched to 1, 2, 4 and 8 decode workers, the ratios 1:8 to 8:1 are reached
RULE_DECODE_WORKERS = (1.0, 2.0, 4.0, 8.0)


def rule_layouts(model: Model, hw: Hardware) -> list[tuple[float, float, float]]:
    """The worker layouts (GPUs, attention TP, EP) every stack runs, from the hardware alone: with
    a node of n GPUs (a host's, at most the scale-up domain of D): attention TP over one node or
    two, with EP 1 or over its GPUs, and over n/2, n/4 ... 1 GPUs (with EP 1, over its GPUs, or
    attention DP with EP); attention DP with EP over one node, doubling up to the whole
    scale-up domain (and the domain itself); where the domain is one node, two and four nodes over
    the NIC (attention DP, or attention TP over each node, with EP over every GPU).  A dense model
    takes the attention-TP layouts alone (it has no experts to spread)."""
    n = float(min(hw.gpus_per_host or hw.gpus_per_system, hw.domain_size))
    D = float(hw.domain_size)
    # workers smaller than a node, replicated (the recipes' 1-, 2- and 4-GPU workers of models
    # that fit them: gpt-oss-120b, MiniMax-M2.5)
    subs = [n / 2**k for k in range(1, 8) if n / 2**k >= 1 and float(n / 2**k).is_integer()]
    out = [(n, n, 1.0), (2 * n, 2 * n, 1.0), *[(g, g, 1.0) for g in subs]]
    if model.is_dense:
        return list(dict.fromkeys(out))
    out += [(n, n, n), (2 * n, 2 * n, 2 * n)]
    out += [lay for g in subs for lay in ((g, g, g), (g, 1.0, g))]
    g = n
    while g <= D:
        out.append((g, 1.0, g))
        g *= 2
    out.append((D, 1.0, D))
    if D <= n:  # a node is the domain: across nodes over the NIC
        out += [(k * n, t, k * n) for k in (2.0, 4.0) for t in (1.0, n)]
    return list(dict.fromkeys(out))


#: The share of a worker's HBM its weights may take before the rules search offers workers across
#: nodes over the NIC: the launch recipes keep workers within a scale-up domain wherever the
#: weights leave room for the KV cache (DeepSeek-R1 FP8 on H200 and B200: 59% and 47% of an 8-GPU
#: node, 8-GPU workers only), and span two nodes where a node cannot hold them (H100: 105%,
#: 16-GPU workers); between the two, a quarter of the HBM left for KV is taken as the edge.
CROSS_NODE_WEIGHT_SHARE = 0.75


def across_nodes_where_needed(lays: list[tuple[float, float, float]], share: list[float],
                              domain: float) -> list[tuple[float, float, float]]:
    """Of ``lays`` (each holding the weights, ``share`` of its HBM taken by them), those within a
    scale-up domain of ``domain`` GPUs, and those across nodes only where every worker within a
    domain gives its weights more than :data:`CROSS_NODE_WEIGHT_SHARE` of its HBM: then at the
    fewest GPUs that hold them."""
    inside = [s for (g, _, _), s in zip(lays, share, strict=True) if g <= domain]
    if inside and min(inside) <= CROSS_NODE_WEIGHT_SHARE:
        return [lay for lay in lays if lay[0] <= domain]
    cross = [(g, s) for (g, _, _), s in zip(lays, share, strict=True) if g > domain]
    if not cross:
        return lays
    size = min(g for g, _ in cross)
    return [lay for lay in lays if lay[0] <= domain or lay[0] == size]


def _ladder_to(hi: float, per_octave: int) -> np.ndarray:
    k = int(round(math.log2(max(hi, 1.0)) * per_octave))
    return np.unique(np.round(2.0 ** (np.arange(k + 1) / per_octave)))


def _layouts_of(model: Model, lays: list[tuple[float, float, float]]) -> dict[str, np.ndarray]:
    """:func:`_layout`'s step arguments of worker layouts given as (GPUs, attention TP, EP)."""
    g, t, e = (np.array(v, float) for v in zip(*lays, strict=True))
    return _layout(model, pd.DataFrame({"w_gpus": g, "w_tp_attn": t, "w_ep": e}), "w")


def _holding(model: Model, hw: Hardware, lays: list[tuple[float, float, float]], weights: str | None,
             kv: str | None, mode: str) -> list[tuple[float, float, float]]:
    """The layouts of ``lays`` whose GPUs hold the weights (and a sequence of one token) and whose
    structure is valid (heads, experts and intermediate sizes divide), across nodes only where
    needed (:func:`across_nodes_where_needed`)."""
    if not lays:
        return lays
    n = len(lays)
    r = evaluate_configs(model, hw, resolve_precisions(model, hw, weights, kv), mode,
                         **_layouts_of(model, lays), b=np.ones(n), S=1.0, categories=False)
    ok = np.asarray(r["feasible"], bool) * np.ones(n, bool)
    share = np.asarray(r["memory.weights"], float) * np.ones(n) / hw.hbm_capacity
    held = [(lay, float(s)) for lay, k, s in zip(lays, ok, share, strict=True) if k]
    return across_nodes_where_needed([h[0] for h in held], [h[1] for h in held], float(hw.domain_size))


def _best_prefill(model: Model, hw: Hardware, lays: list[tuple[float, float, float]], weights: str | None,
                  kv: str | None, mode: str, isl: float) -> list[tuple[float, float, float]]:
    """Of ``lays``, for each worker size, the layout of the most prompt tokens/s per GPU (a
    prefill worker's size sets the pass time, TTFT; its layout within a size, the rate)."""
    from planner.serving.prefill import chunked_prefill_rate

    if not lays:
        return lays
    x = chunked_prefill_rate(model, hw, resolve_precisions(model, hw, weights, kv), mode,
                             **_layouts_of(model, lays), isl=isl)
    x = np.where(np.isfinite(x), x, -np.inf) * np.ones(len(lays))
    best: dict[float, tuple[float, tuple[float, float, float]]] = {}
    for lay, v in zip(lays, x, strict=True):
        if v > best.get(lay[0], (-np.inf, lay))[0]:
            best[lay[0]] = (v, lay)
    return [lay for v, lay in best.values() if np.isfinite(v)]


def rules_deployments(model: Model, hw: Hardware, *, disagg: bool, speculate: bool | None,
                      per_octave: int = CONC_PER_OCTAVE, weights: str | None = None,
                      kv: str | None = None, mode: str = "realistic", isl: float = 1024.0) -> pd.DataFrame:
    """The rules search's first pass: every :func:`rule_layouts` worker as a decode worker (with,
    disaggregated, every rule layout of at most two nodes as its prefill worker), speculation off
    and at the stack's draft count (as ``speculate`` says; on only where the model speculates), at
    concurrencies from one user to :data:`MAX_RUNNING_PER_RANK` per attention rank (at least
    :data:`MAX_RUNNING_PER_WORKER`).  One decode worker and one prefill worker each: the prefill
    workers are rate-matched to the decode pool in :func:`rate_matched`.  Only the layouts that hold
    the model's ``weights`` (:func:`_holding`) are offered."""
    stack = hw.stack or ""
    n = float(min(hw.gpus_per_host or hw.gpus_per_system, hw.domain_size))
    lays = _holding(model, hw, rule_layouts(model, hw), weights, kv, mode)
    # prefill workers of at most two nodes (the recipes' run one node or less; H100's two), each
    # worker size at its fastest layout
    pre = _best_prefill(model, hw, [lay for lay in lays if lay[0] <= 2 * n], weights, kv, mode,
                        LENGTH_MEAN * isl) if disagg else [None]
    specs = [s for s in ([False, True] if speculate is None else [bool(speculate)])
             if not s or model.speculates]
    # one row per (decode layout, speculation, prefill layout, concurrency), built as columns
    cols: dict[str, list[np.ndarray]] = {k: [] for k in (
        "concurrency", "decode_gpus", "decode_tp_attn", "decode_ep", "prefill_gpus", "prefill_tp_attn",
        "prefill_ep", "drafts")}
    for g, tpa, ep in lays:
        drafts = (DEFAULT_DRAFTS_DP.get(stack, DEFAULT_DRAFTS.get(stack, 2)) if tpa < g
                  else DEFAULT_DRAFTS.get(stack, 2))
        conc = _ladder_to(max(float(MAX_RUNNING_PER_WORKER), MAX_RUNNING_PER_RANK * g / tpa), per_octave)
        k = len(conc)
        for sp_on in specs:
            for p in pre:
                pg, ptpa, pep = p if p is not None else (g, tpa, ep)
                for name, v in (("decode_gpus", g), ("decode_tp_attn", tpa), ("decode_ep", ep),
                                ("prefill_gpus", pg), ("prefill_tp_attn", ptpa), ("prefill_ep", pep),
                                ("drafts", drafts if sp_on else 0)):
                    cols[name].append(np.full(k, v))
                cols["concurrency"].append(conc)
    if not cols["concurrency"]:
        return pd.DataFrame(columns=[*LAYOUT_COLUMNS, "disagg", "concurrency", "drafts"])
    out = pd.DataFrame({k: np.concatenate(v) for k, v in cols.items()})
    out["drafts"] = out.drafts.astype(int)
    return out.assign(disagg=disagg, decode_workers=1.0, prefill_workers=1.0)


def rate_matched(first: pd.DataFrame) -> pd.DataFrame:
    """Disaggregated deployments of :func:`rules_deployments` rows with their prefill pools sized to
    the decode pool: ``first`` is :func:`predict` of those rows with a pool too large to bind (its
    ``request_rate`` the loop's own, ``prefill_capacity`` over its ``prefill_workers``), and each
    row comes back at :data:`RULE_DECODE_WORKERS` decode workers, each with the users of one worker
    times that count and the fewest prefill workers that serve them (and one fewer, where that is
    at least one: a pool a little short can give more per GPU).  Rows that even at the ideal
    (fractional) ratio give less than :data:`RULE_PRUNE` of the best per-GPU rate at least as fast
    per user are left out: whole workers cost a matched pool less than that."""
    ok = first[(first.reason == 0) & first.disagg].copy()
    if ok.empty:
        return ok
    per_worker = ok.prefill_capacity / ok.prefill_workers
    need = (ok.request_rate / per_worker).to_numpy(float)      # prefill workers per decode worker
    # requests a second per GPU at the ideal ratio (a pool of need x one worker's GPUs per decode
    # worker), against the best of any row at least as fast per user
    ideal = ok.request_rate.to_numpy(float) / (ok.decode_gpus.to_numpy(float)
                                               + need * ok.prefill_gpus.to_numpy(float))
    x = ok.tps_per_user.to_numpy(float)
    order = np.argsort(-x, kind="stable")
    best = np.empty_like(ideal)
    best[order] = np.maximum.accumulate(ideal[order])
    keep_rows = ideal >= RULE_PRUNE * best
    ok, need = ok[keep_rows], need[keep_rows]
    frames = []
    cols = [*LAYOUT_COLUMNS, "disagg", "concurrency", "drafts"]
    base = ok[cols]
    for wd in RULE_DECODE_WORKERS:
        up = np.maximum(np.ceil(need * wd - 1e-9), 1.0)
        for wp in (up, up - 1.0):
            keep = wp >= 1.0
            frames.append(base[keep].assign(decode_workers=wd, prefill_workers=wp[keep],
                                            concurrency=base.concurrency[keep] * wd))
    return pd.concat(frames, ignore_index=True).drop_duplicates(ignore_index=True)


def _layout(model: Model, dep: pd.DataFrame, role: str) -> dict[str, np.ndarray]:
    G = dep[f"{role}_gpus"].to_numpy(float)
    TPa = dep[f"{role}_tp_attn"].to_numpy(float)
    EP = np.maximum(dep[f"{role}_ep"].to_numpy(float), 1.0)
    if model.is_dense:
        EP = np.ones_like(G)
        TPe = TPa
    else:
        TPe = G / EP
    return dict(
        G=G, TP_a=TPa, EP=EP, TP_e=TPe, E_slots=np.asarray(default_slots(model, EP), float) * np.ones_like(G)
    )


def bench_speculation(model: Model, drafts: int, stack: str | None, scale: float | None = None) -> Any:
    """The speculation a deployment of ``stack`` gets under the benchmark's load: the published
    accepted drafts (tokens per step - 1) times :data:`BENCH_ACCEPTANCE` (``scale`` to override)."""
    from planner.physics.step import Speculation

    spec = resolve_speculation(model, drafts)
    if not spec.drafts:
        return spec
    k = BENCH_ACCEPTANCE.get(stack or "", BENCH_ACCEPTANCE_OTHER) if scale is None else scale
    A = 1.0 + (spec.tokens_per_step("realistic") - 1.0) * k
    return Speculation(
        spec.drafts,
        mean_acceptance_length=A,
        kind=spec.kind,
        source=f"{spec.source}; x {k:g} of the accepted drafts under the benchmark's load",
    )


def predict(
    model: Model,
    hw: Hardware,
    dep: pd.DataFrame,
    *,
    weights: str | None,
    isl: float,
    osl: float,
    mode: str = "realistic",
    kv: str | None = None,
    acceptance_scale: float | None = None,
    pool_share: float | None = None,
) -> pd.DataFrame:
    """What a benchmark of each deployment in ``dep`` reports (see the module docstring): columns
    ``tpot_s``, ``ttft_s``, ``e2e_s``, ``tps_per_user``, ``output_tps_per_gpu``,
    ``total_tps_per_gpu``, ``batch_per_rank``, ``gpus_total``, ``tokens_per_step``, ``bottleneck``,
    ``t_<category>_s`` (seconds each resource is busy in one decode step),
    A ``decode_max_batch`` column in ``dep`` (optional; NaN: none) caps the requests one decode
    rank runs at once below what its memory holds (the recipe's ``max_batch_size``); the
    concurrency beyond the ranks' caps waits for its first token (``ttft_bounded``).
    ``reason`` (0: feasible) and ``why_infeasible`` (its text, :data:`REASONS`; empty where
    feasible) beside the deployment's own.  Speculation: :func:`bench_speculation`
    (``acceptance_scale`` 1: the published acceptance)."""
    from planner.serving.percentiles import burst
    from planner.serving.prefill import aggregated_prefill_terms, chunked_prefill_rate, served_ttft

    prec = resolve_precisions(model, hw, weights, kv)
    count = len(dep)
    isl_mean, osl_mean = LENGTH_MEAN * isl, LENGTH_MEAN * osl
    ctx = isl_mean + osl_mean / 2.0
    conc = dep.concurrency.to_numpy(float)
    disagg = dep.disagg.to_numpy(bool)
    max_batch = (pd.to_numeric(dep["decode_max_batch"], errors="coerce").to_numpy(float)
                 if "decode_max_batch" in dep.columns else np.full(count, np.nan))
    max_batch = np.where(max_batch >= 1, max_batch, np.nan)
    decode_layout, prefill_layout = _layout(model, dep, "decode"), _layout(model, dep, "prefill")
    decode_workers, prefill_workers = dep.decode_workers.to_numpy(float), dep.prefill_workers.to_numpy(float)
    ranks = decode_workers * decode_layout["G"] / decode_layout["TP_a"]
    gpus = np.where(disagg, decode_workers * decode_layout["G"] + prefill_workers * prefill_layout["G"],
                    decode_layout["G"])
    eff = hw.efficiency
    real = mode != "bound"
    # TTFT: one prompt's pass at the prefill layout and the queued share of the prompts that arrive
    # with it (aggregated: the instance's concurrency; disaggregated: over the prefill workers)
    prefill_probe = evaluate_configs(model, hw, prec, mode, **prefill_layout, b=np.ones(count), S=isl_mean,
                                     phase="prefill", categories=False)
    t_pass = np.where(np.asarray(prefill_probe["feasible"], bool), np.asarray(prefill_probe["step"], float),
                      np.nan)
    x_p, phi = chunked_prefill_rate(model, hw, prec, mode, **prefill_layout, isl=isl_mean, local_share=True)
    prompts = conc / np.where(disagg, prefill_workers, 1.0)
    wave = prompts * isl_mean / (x_p * prefill_layout["G"])
    ttft = served_ttft(
        eff.ttft_request if real else 0.0,
        eff.ttft_wave if real else 0.0,
        t_pass,
        wave if real else 0.0,
        eff.ttft_host if real else 0.0,
        pass_kernels(model),
    )
    # (the first wave queued as above is the burst's p99 below; the median request of a steady
    # closed loop meets the prefill queue at its utilisation instead: ttft_queue in the loop)
    ttft = np.array(ttft, float) * np.ones(count)
    # the prefill pool's prompt tokens a second (aggregated: prefill rides in the decode steps)
    pool_x = np.where(disagg, x_p, np.inf)
    eta_pool = (PREFILL_POOL_SHARE.get(hw.stack or "", PREFILL_POOL_SHARE_OTHER) if pool_share is None
                else pool_share) if real else 1.0
    # requests a second the prompts' prefill serves (a disaggregated pool at the share eta_P of its
    # pass rate; an aggregated instance at its own prefill rate), and the median wait in its queue
    served_rps = np.where(disagg, eta_pool * prefill_workers, 1.0) * prefill_layout["G"] * x_p / isl_mean
    ttft0 = np.array(ttft, float)
    tpot = np.full(count, np.nan)
    tokens_step_all = np.ones(count)
    reason = np.zeros(count, dtype=int)
    binding = np.full(count, "", dtype=object)
    busy = {c: np.full(count, np.nan) for c in CATEGORIES}  # seconds each resource is busy per decode step
    batch_out = np.full(count, np.nan)
    # the chunked prefill an aggregated step carries, on the decode layout (none to price where
    # every deployment is disaggregated)
    x_agg, phi_agg = (chunked_prefill_rate(model, hw, prec, mode, **decode_layout, isl=isl_mean,
                                           local_share=True)
                      if not disagg.all() else (np.full(count, np.nan), np.ones(count)))
    for drafts in sorted(set(dep.drafts.astype(int))):
        group = dep.drafts.to_numpy(int) == drafts
        spec = bench_speculation(model, drafts, hw.stack, acceptance_scale)
        lay = {k: v[group] for k, v in decode_layout.items()}
        probe = evaluate_configs(
            model, hw, prec, mode, **lay, b=np.ones(group.sum()), S=ctx, spec=spec, categories=False
        )
        cap = np.floor(np.broadcast_to(np.asarray(probe["memory.b_max"], float), (group.sum(),)) * (1 + 1e-9))
        # the recipe's own cap on the requests a rank runs at once (TensorRT-LLM's decode
        # ``max_batch_size``: per attention-DP rank, or per worker under attention TP), where stated
        cap = np.fmin(cap, max_batch[group])
        decoding = np.ones(group.sum())
        for iteration in range(ITERATIONS):
            # a request's rank holds at least its own sequence, however many ranks share the users
            batch = np.minimum(np.maximum(conc[group] * decoding / ranks[group], 1.0), np.maximum(cap, 1.0))
            # (the per-resource seconds of the last iteration's step alone are reported)
            step_terms = evaluate_configs(model, hw, prec, mode, **lay, b=batch, S=ctx, spec=spec,
                                          categories=iteration == ITERATIONS - 1)
            tokens_step = float(np.asarray(step_terms["A"]))
            step = np.asarray(step_terms["step"], float)
            if mode != "bound":
                aggregated = ~disagg[group]
                if aggregated.any():
                    t_agg = compiled.evaluate_named(
                        "t_step_aggregated",
                        t_step=step,
                        I=isl_mean,
                        O=osl_mean,
                        b=batch,
                        A=tokens_step,
                        TP_a=lay["TP_a"],
                        X_p=x_agg[group],
                        **aggregated_prefill_terms(model, mode, lay["G"], lay["TP_a"], isl_mean,
                                                   phi_agg[group], stack=hw.stack),
                    )
                    step = np.where(aggregated, np.asarray(t_agg, float), step)
            tpot_now = step / tokens_step
            decode_time = (osl_mean - 1.0) * tpot_now
            if real:
                # the median request's TTFT in a steady closed loop: its pass, latencies and the
                # prefill queue's median wait at the utilisation the loop's rate gives it
                rho = conc[group] / (ttft[group] + decode_time) / served_rps[group]
                ttft0[group] = np.asarray(compiled.evaluate_named(
                    "ttft_queue", t_req=eff.ttft_request, tau_h=eff.ttft_host, n_kp=pass_kernels(model),
                    t_pass=t_pass[group], rho_p=np.clip(rho, 1e-12, RHO_STEADY), S_p=1.0 / served_rps[group],
                    c_a2=ARRIVAL_CV2, c_s2=LENGTH_CV2, p_s=0.5), float)
            # the closed loop at the least of what it asks, the prefill pool serves and the decode
            # pool admits: what it asks beyond that waits for its first token
            ttft_loop = np.asarray(compiled.evaluate_named(
                "ttft_bounded", T_0=ttft0[group], N_c=conc[group], O=osl_mean, TPOT=tpot_now,
                G_P=(prefill_workers * prefill_layout["G"])[group], X_p=pool_x[group], I=isl_mean,
                R_d=ranks[group], b_cap=np.maximum(cap, 1.0),
                eta_P=eta_pool), float)
            ttft[group] = np.where(np.isfinite(ttft_loop), ttft_loop, ttft0[group])
            decoding_next = decode_time / (ttft[group] + decode_time)
            decoding = np.where(np.isfinite(decoding_next), decoding_next, 1.0)
        tpot[group], tokens_step_all[group], batch_out[group] = tpot_now, tokens_step, batch
        for c in CATEGORIES:
            busy[c][group] = np.asarray(step_terms[f"cat.{c}"], float) * np.ones(group.sum())
        codes = np.asarray(step_terms["reason"], int) * np.ones(group.sum(), dtype=int)
        codes = np.where(cap < 1, WEIGHTS_DO_NOT_FIT, codes)  # no sequence fits beside the weights
        reason[group] = codes
        binding[group] = np.array(CATEGORIES, dtype=object)[
            np.asarray(step_terms["bottleneck"], int) * np.ones(group.sum(), dtype=int)
        ]
    e2e = ttft + (osl_mean - 1.0) * tpot
    out_tps = conc * OUTPUT_YIELD * osl / (e2e * gpus)
    # p99 of the benchmark's burst: its first wave queued, aggregated decode stalled by it
    tt99, tp99 = burst(0.99, t_req=eff.ttft_request if real else 0.0, tau_h=eff.ttft_host if real else 0.0,
                       n_kp=pass_kernels(model), t_pass=t_pass, t_wave=wave, tpot=tpot, osl=osl_mean,
                       A=tokens_step_all,
                       drafts=dep.drafts.to_numpy(float), stall=(~disagg).astype(float))
    ok = (reason == 0) & np.isfinite(out_tps) & np.isfinite(ttft)
    reason = np.where(ok, 0, np.where(reason == 0, WEIGHTS_DO_NOT_FIT, reason))
    return dep.assign(
        gpus_total=gpus,
        batch_per_rank=batch_out,
        tokens_per_step=tokens_step_all,
        tpot_s=tpot,
        ttft_s=ttft,
        e2e_s=e2e,
        ttft_p99_s=tt99,
        tpot_p99_s=tp99,
        tps_per_user=1.0 / tpot,
        output_tps_per_gpu=out_tps,
        total_tps_per_gpu=out_tps + conc * isl_mean / (e2e * gpus),
        ttft_unqueued_s=ttft0,
        request_rate=conc / e2e,
        prefill_capacity=np.where(disagg, eta_pool * prefill_workers * prefill_layout["G"] * x_p / isl_mean,
                                  np.inf),
        prefill_tps_per_prefill_gpu=x_p * np.ones(count),
        bottleneck=binding,
        reason=reason,
        why_infeasible=[REASONS.get(int(c), "") for c in reason],
        **{f"t_{c}_s": v for c, v in busy.items()},
    )


def deployed_frontier(
    model: Model,
    hw: Hardware,
    *,
    serving: str,
    isl: float,
    osl: float,
    weights: str | None,
    mtp: Any = "auto",
    mode: str = "realistic",
    metric: str = "output",
    kv: str | None = None,
    frameworks: list[str] | None = None,
    all_points: bool = False,
    per_octave: int = CONC_PER_OCTAVE,
    search: str = "recipes",
    max_ttft: float | None = None,
) -> pd.DataFrame:
    """The as-deployed frontier: the envelope of :func:`predict` over whole deployments, as a
    frontier table (``tps_per_user``, ``tps_per_gpu`` by ``metric``).  ``search``: ``rules`` (the
    layouts every stack runs on this hardware, :func:`rule_layouts`, with prefill pools rate-matched
    to their decode pools, and the model's own recipes on this system as priors) or ``recipes``
    (the literal launch recipes, :func:`deployed_points`, borrowed where the model or system has
    none).  ``per_octave``: concurrencies tried per doubling on each layout between its scheduled
    ones (0: the scheduled concurrencies alone, as a benchmark samples them).  ``max_ttft``: the
    deployments whose median TTFT (the closed loop's, its queue included) is above it are not
    offered (counted as not fitting); None: no limit, as a benchmark runs them."""
    from planner.serving.search import pareto, precision_options

    if serving not in ("aggregated", "disaggregated"):
        raise SpecError(
            "<input>",
            "search",
            f"the as-deployed search serves aggregated or disaggregated, not {serving}: use --search limit",
        )
    disagg = serving == "disaggregated"
    speculate = None if mtp == "auto" else bool(resolve_speculation(model, mtp).drafts)

    unfit: dict[str, int] = {}
    dropped: dict[str, int] = {}

    def fitting(dep: pd.DataFrame, w: str) -> pd.DataFrame:
        pr = predict(model, hw, dep, weights=w, isl=isl, osl=osl, mode=mode, kv=kv)
        for code, n in pr.reason[pr.reason != 0].value_counts().items():
            key = f"{w}: {REASONS.get(int(code), 'not evaluable')}"
            unfit[key] = unfit.get(key, 0) + int(n)
        pr = pr[pr.reason == 0]
        if max_ttft is not None:
            slow = (pr.ttft_s > max_ttft).to_numpy()
            if slow.any():
                key = f"{w}: TTFT above {max_ttft:g} s"
                unfit[key] = unfit.get(key, 0) + int(slow.sum())
            pr = pr[~slow]
        return pr.assign(weights=w)

    if search not in ("rules", "recipes"):
        raise SpecError("<input>", "search", f"rules or recipes, got {search!r}")
    frames, notes, rows_read = [], [], 0
    for w in precision_options(model, hw, weights):
        rp = "fp4" if w in ("nvfp4", "mxfp4", "fp4") else ("int4" if w.startswith("int4") else "fp8")
        dep, note = deployed_points(model, hw, disagg=disagg, precision=rp, speculate=speculate, isl=isl,
                                    osl=osl, frameworks=frameworks, per_octave=per_octave,
                                    own_only=search == "rules")
        rows_read += int(dep.attrs.get("recipe_rows", 0))
        for k, n in dep.attrs.get("dropped", {}).items():
            dropped[k] = dropped.get(k, 0) + n
        if search == "rules":
            rules = rules_deployments(model, hw, disagg=disagg, speculate=speculate, per_octave=per_octave,
                                      weights=w, kv=kv, mode=mode, isl=isl)
            if disagg and not rules.empty:
                # first pass with a prefill pool too large to bind: the loop's own request rate
                first = predict(model, hw, rules.assign(prefill_workers=1e4), weights=w, isl=isl, osl=osl,
                                mode=mode, kv=kv)
                rules = rate_matched(first)
            matched = "; prefill pools rate-matched to 1-8 decode workers" if disagg else ""
            note = (f"rules: {len(rule_layouts(model, hw))} worker layouts ({RULE_LAYOUTS}){matched}"
                    + (f"; priors: {note}" if note else "; no recipe of the model on this system"))
            rules = rules.assign(origin="rules")
            dep = pd.concat([d for d in (rules, dep.assign(origin="recipe")) if not d.empty],
                            ignore_index=True) if not (rules.empty and dep.empty) else rules
        if not dep.empty:
            notes.append(note)
            frames.append(fitting(dep, w))
    if not frames or all(f.empty for f in frames):
        # none of the recipes' deployments fits this model (a larger model than the recipes were
        # written for): the layouts every stack runs
        dep = ladder(_generic(model, hw, disagg, speculate), per_octave)
        frames = [fitting(dep, w) for w in precision_options(model, hw, weights)]
        notes = [f"no recipe deployment of {hw.name} fits {model.name}: {GENERIC_LAYOUTS}"]
    if not frames or all(f.empty for f in frames):
        raise SpecError(
            "<input>",
            "search",
            f"a deployment of {model.name} on {hw.name} that the stacks' "
            "recipes run and that fits (try --search limit)",
        )
    df = pd.concat(frames, ignore_index=True)
    df["tps_per_gpu"] = {
        "output": df.output_tps_per_gpu,
        "total": df.total_tps_per_gpu,
        "decode": df.output_tps_per_gpu * df.gpus_total / (df.decode_workers * df.decode_gpus),
    }[metric]
    df["mtp"] = df.drafts
    df["gpus"] = df.decode_gpus
    df["batch"] = df.concurrency
    df["search"] = search
    env = pareto(df, "tps_per_user", "tps_per_gpu")
    if not all_points:
        df = env
    df = df.sort_values("tps_per_user").reset_index(drop=True)
    # the weights of the envelope's points, whether or not every point is returned
    weights_tried = ", ".join(dict.fromkeys(str(w) for w in env.sort_values("tps_per_user").weights))
    df.attrs["deployments"] = "; ".join(dict.fromkeys(notes)) + (
        f" (weights on the envelope: {weights_tried})" if weights_tried else "")
    df.attrs["dropped"] = {"recipe_rows_read": rows_read, "recipe_rows_dropped": dropped,
                           "deployments_not_fitting": unfit}
    return df


def dropped_summary(d: dict[str, Any]) -> str:
    """One line of what the as-deployed search could not use (``attrs["dropped"]``)."""
    if not d:
        return ""
    parts = [f"{d.get('recipe_rows_read', 0)} recipe rows read"]
    rd = d.get("recipe_rows_dropped") or {}
    parts.append("none dropped" if not rd else "dropped: " + ", ".join(f"{k} {v}" for k, v in rd.items()))
    nf = d.get("deployments_not_fitting") or {}
    if nf:
        parts.append("deployments not fitting: " + ", ".join(f"{k} ({v})" for k, v in nf.items()))
    return "; ".join(parts)


def envelope_at(front: pd.DataFrame, x: Any, y: str = "tps_per_gpu") -> np.ndarray:
    """The envelope's ``y`` at per-user rates ``x``: the most ``y`` of any point at least that fast
    for each user (NaN beyond the fastest)."""
    xs = front.tps_per_user.to_numpy(float)
    ys = front[y].to_numpy(float)
    order = np.argsort(xs)
    xs, ys = xs[order], ys[order]
    best = np.maximum.accumulate(ys[::-1])[::-1]  # the best at or above each x
    idx = np.searchsorted(xs, np.asarray(x, float), side="left")
    return np.where(idx < len(xs), best[np.minimum(idx, len(xs) - 1)], np.nan)
