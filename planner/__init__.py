"""moe-planner: closed-form performance and cost model of Mixture-of-Experts LLM serving.

Public API::

    load_hardware, load_model, hardware_names, model_names   # specs
    decode_step, prefill                                       # one configuration
    frontier, frontier_at, compare, explain                    # frontiers and comparisons
    plot_frontiers                                             # plots
"""

from .compare import Comparison, compare, explain
from .errors import SpecError
from .hardware import Hardware
from .model import Model
from .plot import plot_frontiers
from .serving import frontier, frontier_at
from .specs import hardware_names, load_hardware, load_model, model_names
from .step import StepResult, decode_step, prefill

__version__ = "0.1.0"

__all__ = [
    "SpecError", "Hardware", "Model", "StepResult", "Comparison",
    "load_hardware", "load_model", "hardware_names", "model_names",
    "decode_step", "prefill", "frontier", "frontier_at", "compare", "explain", "plot_frontiers",
]
