"""moe-planner: closed-form performance and cost model of Mixture-of-Experts LLM serving.

Public API (imported lazily, so ``import planner`` stays cheap)::

    Scenario, Costs, Demand                                    # the question, its prices, its load
    load_hardware, load_model, hardware_names, model_names   # specs
    decode_step, prefill                                       # one configuration
    frontier, frontier_at, compare, explain, assumptions       # frontiers and comparisons
    workload_frontier, load_workload, workload_names           # sessions, KV tiers, percentiles
    size, power_budget, cost_target, fleet_capacity           # procurement sizing
    plan, plan_sensitivity                                     # fleet plans (several workloads)
    landscape, Executor                                        # every system x model x workload (Dask)
    plot_frontiers, plot_sizing                                # plots
    explore                                                    # Jupyter what-if panel (ipywidgets)
    validate, calibrate, sensitivity, uncertainty              # modules: scorecards, fits, bands
    score_runs                                                 # measured runs at their layouts

The package is layered (``docs/architecture.md``): ``specs`` -> ``physics`` -> ``serving`` ->
``economics`` and ``truth`` -> ``fleet`` -> ``cli`` (``plot`` apart; ``explorer`` on ``serving``
and ``plot``); each layer imports only the ones before it.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from planner.errors import SpecError

__version__ = "0.1.0"

#: public name -> (module, attribute; None for the module itself)
_LAZY: dict[str, tuple[str, str | None]] = {
    "Hardware": ("specs.hardware", "Hardware"), "Model": ("specs.model", "Model"),
    "Scenario": ("specs.scenario", "Scenario"), "Costs": ("economics.cost", "Costs"),
    "Demand": ("economics.demand", "Demand"),
    "load_hardware": ("specs.registry", "load_hardware"), "load_model": ("specs.registry", "load_model"),
    "hardware_names": ("specs.registry", "hardware_names"),
    "model_names": ("specs.registry", "model_names"),
    "StepResult": ("physics.step", "StepResult"), "decode_step": ("physics.step", "decode_step"),
    "prefill": ("physics.step", "prefill"),
    "frontier": ("serving.frontiers", "frontier"), "frontier_at": ("serving.frontiers", "frontier_at"),
    "Comparison": ("serving.comparison", "Comparison"), "compare": ("serving.comparison", "compare"),
    "explain": ("serving.comparison", "explain"),
    "assumptions": ("serving.assumptions", "assumptions"),
    "workload_frontier": ("serving.workloads", "workload_frontier"),
    "load_workload": ("specs.workload", "load_workload"),
    "workload_names": ("specs.workload", "workload_names"),
    "size": ("economics.sizing", "size"), "power_budget": ("economics.sizing", "power_budget"),
    "cost_target": ("economics.sizing", "cost_target"),
    "fleet_capacity": ("economics.sizing", "fleet_capacity"),
    "plan": ("fleet.plan", "plan"), "plan_sensitivity": ("fleet.sensitivity", "sensitivity"),
    "landscape": ("fleet.landscape", "landscape"), "Executor": ("cells", "Executor"),
    "plot_frontiers": ("plot", "plot_frontiers"), "plot_sizing": ("plot", "plot_sizing"),
    "explore": ("explorer", "explore"), "Explorer": ("explorer", "Explorer"),
    # modules of the truth layer, by their short names (``planner.validate.scorecard()``)
    "validate": ("truth.validate", None), "calibrate": ("truth.calibrate", None),
    "sensitivity": ("truth.sensitivity", None), "uncertainty": ("truth.uncertainty", None),
    "score_runs": ("truth.runs", "score_runs"),
}

__all__ = ["SpecError", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name]
        mod = import_module(f"planner.{module}")
        value = mod if attr is None else getattr(mod, attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'planner' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
