"""Which single assumption moves a comparison's answer most ("assumptions that move the answer").

:func:`assumptions` runs the comparison once as given and once per changed assumption, one at a
time (speculation off, the acceptance at its declared low and high edges, FP8 weights on both
sides, another serving stack's fit, the claim's power basis, a longer prompt), and reports for
each the largest per-GPU ratio, where it lies, and where the per-GPU and per-MW ratios first
reach a threshold.  The rows are sorted by how far each moves the largest ratio from the base.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd

from planner.cells import Executor, run_cells
from planner.errors import SpecError, shown
from planner.serving.comparison import Comparison, compare, confirmed
from planner.specs.hardware import Hardware
from planner.specs.scenario import Scenario


def _summary(c: Comparison, threshold: float) -> dict[str, Any]:
    use = c.ratio[c.ratio.both_useful] if "both_useful" in c.ratio else c.ratio
    if use.empty or not np.isfinite(use.ratio).any():
        return {"largest_ratio": math.nan, "at_tps_per_user": math.nan, "crossing_per_gpu": None,
                "crossing_per_mw": None, "intervals_per_gpu": [], "intervals_per_mw": []}
    i = int(np.nanargmax(use.ratio.to_numpy()))
    x, y = float(use.tps_per_user.iloc[i]), float(use.ratio.iloc[i])
    if "largest" in c.table and c.table.largest.any():  # the table's own row at that rate (solved exactly)
        row = c.table[c.table.largest].iloc[0]
        x, y = float(row.tps_per_user), float(row.ratio)
    gpu = confirmed(use.tps_per_user, use.ratio, threshold, c.solve)
    mw = confirmed(use.tps_per_user, use.ratio_per_mw, threshold, c.solve, per_mw=True)
    return {"largest_ratio": y, "at_tps_per_user": x,
            "crossing_per_gpu": gpu[0] if gpu else None, "crossing_per_mw": mw[0] if mw else None,
            "intervals_per_gpu": gpu, "intervals_per_mw": mw}


def _variants(model: Any, ha: Hardware, hb: Hardware, sc: Scenario
              ) -> list[tuple[str, str, Scenario]]:
    """(assumption, setting, the comparison's scenario) for each single change."""
    out = []
    both = sc.replace(systems=(ha, hb))
    typical = ha.replace(power_per_gpu=ha.power_per_gpu_typical)
    if sc.mtp not in (None, False, 0, "off"):
        out.append(("speculation", "off", both.replace(mtp=None)))
    # (the as-deployed search takes speculation as accepted under the benchmark's load, per stack:
    # the published range's edges are the limit search's question)
    whole = sc.search in ("rules", "recipes")
    if model.spec_range and sc.acceptance is None and not whole:
        n, (lo, hi) = next(iter(model.spec_range.items()))
        for edge, a in (("low", lo), ("high", hi)):
            out.append(("speculative acceptance", f"{a:g} tokens/step at {n} drafts ({edge} edge)",
                        both.replace(mtp=n, acceptance=a)))
    if sc.weights is None:
        out.append(("precision", "FP8 weights on both sides (no NVFP4)", both.replace(weights="fp8")))
    # every stack both systems have a fit for, unless both already use it (the systems' defaults
    # may differ: each takes its family's best-measured stack)
    for st in sorted(st for st in set(ha.stacks) & set(hb.stacks) if not ha.stack == hb.stack == st):
        out.append(("serving stack", f"{st} fit on both sides",
                    sc.replace(systems=(ha.with_stack(st), hb.with_stack(st)))))
    if ha.power_per_gpu_typical and ha.power_per_gpu_typical != ha.power_per_gpu:
        out.append(("power basis", f"{ha.name} typical draw ({ha.power_per_gpu_typical:.0f} W/GPU), "
                    f"{hb.name} maximum", sc.replace(systems=(typical, hb))))
    out.append(("ISL / OSL", f"{8 * sc.isl:g} / {sc.osl:g} (8x the prompt)", both.replace(isl=8 * sc.isl,
                                                                                           context=None)))
    return out


def _variant_cell(cell: tuple[Scenario, float]) -> dict[str, Any]:
    """One variant of :func:`assumptions`: its comparison's summary (a cell of :mod:`planner.cells`)."""
    sc, threshold = cell
    return _summary(compare(sc), threshold)


def assumptions(scenario: Scenario | None = None, threshold: float = 10.0,
                base: Comparison | None = None, executor: Executor | None = None) -> pd.DataFrame:
    """The comparison of ``scenario`` (default: the main job's) under each single changed
    assumption (see the module docstring).

    Returns one row per variant (the first is the comparison as given): ``assumption``,
    ``setting``, ``largest_ratio``, ``at_tps_per_user``, ``crossing_per_gpu`` and
    ``crossing_per_mw`` ([from, to] tokens/s per user where the ratio first reaches
    ``threshold``, or None), ``intervals_per_gpu`` and ``intervals_per_mw`` (every such interval,
    where the ratio dips below the threshold and back) and ``change`` (largest ratio over the
    base's).  ``base``: the comparison as given, if already computed with the same scenario.
    ``executor``: where the variants' comparisons run (:mod:`planner.cells`: in parallel on Dask
    where installed; default one after another here).
    """
    if not (isinstance(threshold, int | float) and math.isfinite(threshold) and threshold > 0):
        raise SpecError("<input>", "threshold", f"a positive ratio, got {shown(threshold)}")
    sc = Scenario() if scenario is None else scenario
    m = sc.load_model()
    ha, hb = sc.load_systems()
    # one search for every row (a variant that asks for an acceptance would otherwise take the
    # limit search while the base takes the as-deployed one)
    sc = sc.replace(model=m, systems=(ha, hb), stack=None, search=sc.resolved_search)
    base = base if base is not None else compare(sc)
    rows = [{"assumption": "as given", "setting": "", **_summary(base, threshold)}]
    variants = _variants(m, ha, hb, sc)
    searched = [(what, setting, k) for what, setting, k in variants if what != "power basis"]
    run = run_cells(_variant_cell, [(k, float(threshold)) for _, _, k in searched], executor, "assumptions")
    done = {id(k): cell for (_, _, k), cell in zip(searched, run.cells, strict=True)}
    for what, setting, k in variants:
        if what == "power basis":  # power moves the per-MW ratio only: no new search
            a = k.systems[0]
            s = _summary(dataclasses.replace(base, ratio=base.ratio.assign(
                ratio_per_mw=base.ratio.ratio * hb.power_per_gpu / a.power_per_gpu)), threshold)
        elif done[id(k)].error is None:
            s = done[id(k)].result
        else:  # the variant cannot be compared (no layout fits, say): said in its row
            s = {"largest_ratio": math.nan, "at_tps_per_user": math.nan, "crossing_per_gpu": None,
                 "crossing_per_mw": None, "intervals_per_gpu": [], "intervals_per_mw": [],
                 "note": done[id(k)].error}
        rows.append({"assumption": what, "setting": setting, **s})
    df = pd.DataFrame(rows)
    df["change"] = df.largest_ratio / df.largest_ratio.iloc[0]
    head, rest = df.iloc[:1], df.iloc[1:]
    order = np.argsort(-np.abs(np.log(rest.change.fillna(1.0).to_numpy())), kind="stable")
    df = pd.concat([head, rest.iloc[order]], ignore_index=True)
    df.attrs.update(model=m.name, hardware_a=ha.name, hardware_b=hb.name, threshold=float(threshold))
    return df
