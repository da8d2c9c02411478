"""The 2026-27 hardware table (docs/systems-and-models.md): Kimi K2 Thinking (and Kimi K3) on GB200 NVL72 (the
reference), GB300 NVL72, Vera Rubin NVL72, MI455X Helios and TPU7x slices of 64 and 256 chips, at
20, 50 and 100 tokens/s per user: output tokens/s per GPU (per chip) with its 5-95% band, per IT MW,
rental $/Mtok, what binds, and the largest cause of each ratio to GB200 (``planner.explain``).

Limit search (no launch recipe exists for these systems; the as-deployed search would borrow
another system's), disaggregated serving, ISL/OSL 1024/1024, realistic mode.

    python scripts/hardware_2026.py [--samples 24] [--models kimi-k2-thinking kimi-k3]
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

import planner
from planner import Scenario
from planner.truth.uncertainty import frontier_band

LEVELS = (20.0, 50.0, 100.0)


def systems() -> list:
    tpu = planner.load_hardware("tpu7x-ironwood")
    # a 256-chip slice: four 4x4x4 cubes as a 4 x 8 x 8 torus (the Google Cloud TPU7x page's
    # configurations list 4x8x8); everything per chip unchanged
    tpu256 = dataclasses.replace(tpu, name="tpu7x-ironwood-256", domain_size=256, torus_shape=(4, 8, 8),
                                 gpus_per_system=256, gpus_per_unit=256,
                                 price_per_unit=4 * tpu.price_per_unit)
    names = ["gb200-nvl72", "gb300-nvl72", "vr200-nvl72", "mi455x-helios"]
    return [planner.load_hardware(n) for n in names] + [tpu, tpu256]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=24)
    ap.add_argument("--models", nargs="+", default=["kimi-k2-thinking", "kimi-k3"])
    args = ap.parse_args()
    kw = dict(search="limit", serving="disaggregated")
    for model in args.models:
        print(f"\n{model} (limit search, disaggregated, 1k/1k; tok/s/GPU nominal [5-95% band])\n")
        print("| system | " + " | ".join(f"{x:g} tok/s/user: tok/s/GPU [band]; tok/s/MW; $/Mtok; binds"
                                        for x in LEVELS) + " | largest cause vs GB200 at 50 |")
        print("|---|" + "---|" * (len(LEVELS) + 1))
        for hw in systems():
            f = planner.frontier(planner.Scenario(model, hw, **kw))
            band = frontier_band(Scenario(model, hw, **kw), samples=args.samples, grid=np.array(LEVELS),
                                 base=f)
            cells = []
            for i, x in enumerate(LEVELS):
                fast = f[f.tps_per_user >= x]  # the best point at x tokens/s per user or faster
                if fast.empty:
                    cells.append("-")
                    continue
                r = fast.loc[fast.tps_per_gpu.idxmax()]
                y = float(r.tps_per_gpu)
                mw = y * 1e6 / hw.power_per_gpu
                usd = hw.price_per_gpu_hour / (3600 * y) * 1e6
                cells.append(f"{y:,.0f} [{band.lo[i]:,.0f}-{band.hi[i]:,.0f}]; {mw / 1e3:,.0f}k; "
                             f"${usd:.2f}; {r.bottleneck}")
            cause = "-"
            if hw.name != "gb200-nvl72":
                try:
                    e = planner.explain(planner.Scenario(model, (hw, "gb200-nvl72"), **kw), at=50.0)
                    ch = e[(e.kind == "chain")].iloc[1:]
                    top = ch.loc[(np.log(ch.factor.astype(float))).abs().idxmax()]
                    total = float(e[e.kind == "chain"].cumulative.iloc[-1])
                    cause = f"{top.step.split(' ', 2)[-1]} x{top.factor:.2f} (all: x{total:.2f})"
                except planner.SpecError as exc:
                    cause = f"({exc.expected})"
            print(f"| {hw.name} | " + " | ".join(cells) + f" | {cause} |")


if __name__ == "__main__":
    main()
