"""The sympy expressions of :mod:`planner.equations`, compiled once to numpy with lambdify."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import sympy as sp

from . import equations as eq
from .symbols import REGISTRY

#: Argument order of the compiled function: every registered symbol, by name.
ARG_NAMES: tuple[str, ...] = tuple(REGISTRY)
OUTPUT_NAMES: tuple[str, ...] = tuple(eq.ALL)


@lru_cache(maxsize=1)
def _compiled() -> Any:
    args = [REGISTRY[n].symbol for n in ARG_NAMES]
    exprs = [eq.ALL[n] for n in OUTPUT_NAMES]
    return sp.lambdify(args, exprs, modules="numpy", cse=True)


def evaluate(values: dict[str, Any]) -> dict[str, np.ndarray]:
    """Evaluate every named expression at ``values`` (symbol name -> scalar or array).

    Arrays broadcast together, so a whole grid evaluates in one call.  Missing symbols raise
    ``KeyError`` naming them.
    """
    missing = [n for n in ARG_NAMES if n not in values]
    if missing:
        raise KeyError(f"missing symbol values: {', '.join(missing)}")
    fn = _compiled()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = fn(*(values[n] for n in ARG_NAMES))
    return dict(zip(OUTPUT_NAMES, out, strict=True))
