"""Argument helpers shared by the subcommands: registering a subcommand, positive-number
argument types, output paths checked before any work, JSON on stdout."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any


def add_command(sub: Any, name: str, func: Callable[[argparse.Namespace], int], help: str,
                description: str | None = None, epilog: str | None = None,
                parents: Sequence[argparse.ArgumentParser] = ()) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help, description=description or help, epilog=epilog,
                       parents=list(parents), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=func)
    return p


def plain_number(text: str) -> str:
    """``text`` where it is a number as written by hand: ASCII digits without separators (Python's
    ``float`` and ``int`` read ``1_0`` as 10 and fullwidth or Arabic-Indic digits as ASCII ones);
    else an argparse error saying so."""
    if not text.isascii():
        raise argparse.ArgumentTypeError(f"expected a number in ASCII digits, got {text[:40]!r}")
    if "_" in text or "," in text:  # a comma is a thousands or decimal mark
        raise argparse.ArgumentTypeError(f"expected a number without separators, got {text[:40]!r}")
    return text


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (ASCII digits)."""
    plain_number(text)
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite positive number, got {text!r}")
    return v


#: The largest count the command line takes (GPUs, sequences, tokens): a billion
MAX_COUNT = 10**9


class DefaultInt(int):
    """An integer flag's default, told apart from the same value given on the command line (a flag
    that another one replaces, such as ``--isl`` beside ``--workload``, is refused only if given)."""


def given(value: object) -> bool:
    """Whether a flag's value was given on the command line (not its :class:`DefaultInt` default)."""
    return value is not None and not isinstance(value, DefaultInt)


def positive_int(text: str) -> int:
    """argparse type: an integer from 1 to :data:`MAX_COUNT`, in ASCII digits."""
    t = text.strip()
    why = f"expected a positive integer up to {MAX_COUNT:,}, got {text[:40]!r}"
    if not (t.isascii() and t.isdigit()) or len(t) > 10 or not 1 <= int(t) <= MAX_COUNT:
        raise argparse.ArgumentTypeError(why)
    return int(t)


def check_output_args(args: argparse.Namespace, files: Sequence[str] = (), plots: Sequence[str] = ()
                      ) -> None:
    """Check every output the command was given before any work or writing: ``files`` and ``plots``
    name the arguments (``"csv"`` for ``--csv``); a plot's extension must be a format matplotlib
    writes; every path writable and no two the same file (:func:`planner.outputs.check_outputs`)."""
    from planner.outputs import check_outputs
    from planner.specs.reading import path_kind

    outs = {f"--{n.replace('_', '-')}": getattr(args, n, None) for n in (*files, *plots)}
    # every other argument naming a file is an input: no output may replace it
    inputs: list[str] = []
    for name, value in vars(args).items():
        if name in (*files, *plots) or name in ("func", "argv"):
            continue
        for v in value if isinstance(value, list | tuple) else [value]:
            if isinstance(v, str) and v:
                inputs.append(v.split("@")[0] if "@" in v and path_kind(v) is None else v)
    check_outputs(outs, inputs)
    for name in plots:
        if getattr(args, name, None):
            from planner.plot import plot_format

            plot_format(getattr(args, name), f"--{name.replace('_', '-')}")


def savefig_to(fig_of: Callable[[], Any], path: str) -> Callable[[str], None]:
    """Content for :func:`planner.outputs.write_outputs`: the figure ``fig_of()`` saved to the path
    it is given, in the format ``path``'s extension names."""
    from planner.plot import close_figure, plot_format

    fmt = plot_format(path)

    def write(tmp: str) -> None:
        fig = fig_of()
        try:
            fig.savefig(tmp, dpi=130, format=fmt)
        finally:
            close_figure(fig)
    return write


def json_safe(obj: Any) -> Any:
    """JSON-safe: NaN/inf -> None, numpy scalars -> Python, recursively."""
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [json_safe(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_safe(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=_json_default, allow_nan=False) + "\n")


def _json_default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.bool_):
        return bool(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if hasattr(o, "to_dict"):
        return o.to_dict()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def acceptance_arg(text: str) -> float:
    """``--acceptance``: tokens per step (>= 1) or a per-draft acceptance rate (< 1)."""
    plain_number(text)
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not (v > 0 and v <= 17):
        raise argparse.ArgumentTypeError(f"expected tokens per step (1 to 17) or a per-draft rate in (0, 1), "
                                         f"got {text!r}")
    return v


def spans_text(v: Any) -> str:
    """Intervals of tokens/s per user as text, to whole tokens/s unless that would make two of them
    touch or one of them a point (a ratio that dips below the threshold for under 1 token/s per
    user), then to a tenth."""
    v = [(float(a), float(b)) for a, b in v]
    whole = [(round(a), round(b)) for a, b in v]
    point = any(a == b for a, b in whole)
    touch = any(whole[i][1] >= whole[i + 1][0] for i in range(len(whole) - 1))
    digits = 1 if point or touch else 0

    def one(a: float, b: float) -> str:
        lo, hi = f"{a:.{digits}f}", f"{b:.{digits}f}"
        return lo if lo == hi else f"{lo}-{hi}"  # a stretch narrower than the last digit: one rate

    return ", ".join(one(a, b) for a, b in v)
