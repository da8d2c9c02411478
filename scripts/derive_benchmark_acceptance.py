"""Derive how much of the published MTP acceptance the benchmark's requests get, per serving stack.

Development time only:

    python scripts/derive_benchmark_acceptance.py ../shared/validation/measured_frontiers.csv

For every configuration measured both with and without MTP (same system, framework, precision,
ISL/OSL, layout, workers and concurrency; the latest date of each, as ``validate --frontiers``
scores them), the measured TPOT speedup s_m = TPOT(none) / TPOT(mtp) is set against the speedup
s_p predicted at the published acceptance (tokens per step A_p).  The tokens per step that explain
the measurement are A = A_p s_m / s_p (the step times' errors cancel to first order: same layout,
same load), and the share of the published accepted drafts k = (A - 1) / (A_p - 1).  Printed per
stack: pairs, median k, its bootstrap standard error and the correlation of k with log concurrency.
The medians are the constants ``BENCH_ACCEPTANCE`` in ``planner/serving/deployed.py``.
"""

from __future__ import annotations

import sys

import numpy as np

from planner.serving.deployed import FRAMEWORKS, bench_speculation, predict
from planner.specs.registry import load_hardware, load_model
from planner.truth.frontiers import CONFIG, WEIGHTS, deployments, score_frontiers


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    s = score_frontiers(argv[0], frontier=False, bound=False)
    r = s.rows[s.rows.scored].copy()
    key = [c for c in CONFIG if c != "spec_decoding"]
    r["k"] = r[key].apply(lambda x: "|".join(map(str, x)), axis=1)
    a = r[r.spec_decoding == "mtp"].set_index("k")
    b = r[r.spec_decoding == "none"].set_index("k")
    j = a.join(b[["tpot_s"]], rsuffix="_none", how="inner")
    dep = deployments(j)
    m = load_model("deepseek-r1")
    ks, stacks, conc = [], [], []
    for i in range(len(j)):
        row = j.iloc[i]
        stack = FRAMEWORKS[row.framework][0] if row.framework in FRAMEWORKS else "sglang"
        hw = load_hardware(row.hardware_spec)
        hw = hw.with_stack(stack) if stack in hw.stacks else hw
        d = dep.iloc[[i]].assign(drafts=int(row_drafts(row, dep.iloc[i], stack)))
        kw = dict(weights=WEIGHTS[row.precision], isl=row.isl, osl=row.osl, acceptance_scale=1.0)
        on = predict(m, hw, d, **kw).tpot_s.iloc[0]
        off = predict(m, hw, d.assign(drafts=0), **kw).tpot_s.iloc[0]
        A_p = bench_speculation(m, int(d.drafts.iloc[0]), stack, 1.0).tokens_per_step("realistic")
        A = A_p * (row.tpot_s_none / row.tpot_s) / (off / on)
        ks.append((A - 1.0) / (A_p - 1.0))
        stacks.append(stack)
        conc.append(row.concurrency)
    ks, stacks, conc = np.array(ks), np.array(stacks), np.array(conc)
    rng = np.random.default_rng(0)
    for st in [*sorted(set(stacks)), "all"]:
        k = ks if st == "all" else ks[stacks == st]
        c = conc if st == "all" else conc[stacks == st]
        boot = [np.median(rng.choice(k, len(k))) for _ in range(2000)]
        rho = np.corrcoef(np.log(c), k)[0, 1] if len(k) > 2 else float("nan")
        print(f"{st}: {len(k)} pairs, median k {np.median(k):.2f} (SE {np.std(boot):.2f}), "
              f"correlation with log concurrency {rho:.2f}")
    return 0


def row_drafts(row, dep_row, stack: str) -> int:  # noqa: ANN001
    from planner.serving.deployed import DEFAULT_DRAFTS, DEFAULT_DRAFTS_DP

    if dep_row.decode_tp_attn < dep_row.decode_gpus:
        return DEFAULT_DRAFTS_DP.get(stack, DEFAULT_DRAFTS.get(stack, 2))
    return DEFAULT_DRAFTS.get(stack, 2)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
