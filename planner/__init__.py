"""moe-planner: closed-form performance and cost model of Mixture-of-Experts LLM serving.

Public API (imported lazily, so ``import planner`` stays cheap)::

    load_hardware, load_model, hardware_names, model_names   # specs
    decode_step, prefill                                       # one configuration
    frontier, frontier_at, compare, explain                    # frontiers and comparisons
    size, power_budget, cost_target, fleet_capacity           # procurement sizing
    plot_frontiers, plot_sizing                                # plots
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .errors import SpecError

__version__ = "0.1.0"

_LAZY = {
    "Hardware": "hardware", "Model": "model", "StepResult": "step", "Comparison": "comparison",
    "load_hardware": "specs", "load_model": "specs", "hardware_names": "specs",
    "model_names": "specs", "decode_step": "step", "prefill": "step", "frontier": "serving",
    "frontier_at": "serving", "compare": "comparison", "explain": "comparison",
    "plot_frontiers": "plot", "plot_sizing": "plot", "size": "sizing", "power_budget": "sizing",
    "cost_target": "sizing", "fleet_capacity": "sizing",
}

__all__ = ["SpecError", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'planner' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
