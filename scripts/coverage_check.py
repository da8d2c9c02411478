"""Does coverage decide the answer?  For each bundled system and each model with launch recipes on
it, the default (rules) frontier with and without that model's recipes (the model renamed, so no
recipe is its own), read at 10 to 150 tokens/s per user, both serving modes.

    python scripts/coverage_check.py [--levels 10,20,30,50,75,100,150]

Prints one line per (system, model, serving): the ratio without / with at each level ('-': neither
reaches it; 'x': only one does), and the largest |ratio - 1|; then the share of pairs within 15%.
"""

from __future__ import annotations

import sys

import numpy as np

from planner import Scenario
from planner.errors import SpecError
from planner.serving.deployed import MODEL_PREFIX, RUNNERS, envelope_at, recipes
from planner.serving.frontiers import frontier
from planner.specs.registry import load_hardware, load_model


def main(argv: list[str]) -> int:
    levels = [10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 150.0]
    if argv[:1] == ["--levels"]:
        levels = [float(v) for v in argv[1].split(",")]
    r = recipes()
    worst_all = []
    for hw_name, runner in RUNNERS.items():
        hw = load_hardware(hw_name)
        for model_name, prefix in MODEL_PREFIX.items():
            have = r[(r.runner == runner) & (r.model_prefix == prefix)]
            if have.empty:
                continue
            model = load_model(model_name)
            for serving in ("disaggregated", "aggregated"):
                disagg = serving == "disaggregated"
                if not (have.disagg == ("true" if disagg else "false")).any():
                    continue
                try:
                    a = frontier(Scenario(model, hw, serving=serving))
                    b = frontier(Scenario(model.replace(name=f"{model_name}-unlisted"), hw, serving=serving))
                except SpecError as exc:
                    print(f"{hw_name:12s} {model_name:18s} {serving:13s} {exc}")
                    continue
                ya, yb = envelope_at(a, levels), envelope_at(b, levels)
                cells, worst = [], 0.0
                for u, p, q in zip(levels, ya, yb, strict=True):
                    if not (np.isfinite(p) or np.isfinite(q)):
                        cells.append(f"{u:g}:-")
                    elif not (np.isfinite(p) and np.isfinite(q)):
                        cells.append(f"{u:g}:x")
                        worst = np.inf
                    else:
                        cells.append(f"{u:g}:{q / p:.2f}")
                        worst = max(worst, abs(q / p - 1))
                worst_all.append(worst)
                print(f"{hw_name:12s} {model_name:18s} {serving:13s} {' '.join(cells)}  worst {worst:.2f}")
    w = np.array(worst_all)
    print(f"pairs {len(w)}; within 15% at every level: {(w <= 0.15).sum()} "
          f"({(w <= 0.15).mean():.0%}); median worst {np.median(w):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
