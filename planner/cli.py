"""The ``moe-planner`` command line.  Each subcommand lives in its own ``cli_*`` module and
registers itself with :func:`register`; this module only dispatches and turns bad input into
one line on stderr with exit status 2."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .errors import SpecError

SUBCOMMAND_MODULES = ("cli_specs", "cli_point", "cli_frontier", "cli_size", "cli_validate")

EPILOG = """\
examples:
  moe-planner compare                      # Kimi K2 Thinking: GB200 NVL72 vs HGX H200 (the main job)
  moe-planner specs list                   # bundled hardware and models
  moe-planner specs show gb200-nvl72 --json
  moe-planner point --model kimi-k2-thinking --hardware hgx-h200 --gpus 8 --batch 64 --context 2048
  moe-planner frontier --model deepseek-r1 --hardware gb200-nvl72 --serving disaggregated --json

Units: throughput in tokens/s, times in seconds unless a flag says otherwise; bandwidths in
spec files are per GPU and per direction.  Every subcommand has its own --help.
"""


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit status 2 (no usage dump)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"error: {self.prog}: {message} (see --help)\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="moe-planner",
        description="Predict how fast Mixture-of-Experts LLMs can be served on a given fleet, and "
        "what it costs, from closed-form roofline and communication equations.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    import importlib

    for name in SUBCOMMAND_MODULES:
        try:
            mod = importlib.import_module(f"planner.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"planner.{name}":
                continue
            raise
        mod.register(sub)
    return parser


def add_command(sub: Any, name: str, func: Callable[[argparse.Namespace], int], help: str,
                description: str | None = None, epilog: str | None = None,
                parents: Sequence[argparse.ArgumentParser] = ()) -> argparse.ArgumentParser:
    p = sub.add_parser(name, help=help, description=description or help, epilog=epilog,
                       parents=list(parents), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.set_defaults(func=func)
    return p


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite positive number, got {text!r}")
    return v


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def write_atomic(path: str | Path, data: str | bytes | Callable[[str], None]) -> None:
    """Write a file through a temporary file and a rename, so a failure leaves nothing half-way.

    ``data`` is the content, or a function that writes to the temporary path it is given.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise SpecError(str(path), "output", "a path in an existing directory")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=directory)
    except OSError as exc:
        raise SpecError(str(path), "output", f"a writable location ({exc.strerror})") from None
    os.close(fd)
    try:
        if callable(data):
            data(tmp)
        else:
            mode = "wb" if isinstance(data, bytes) else "w"
            with open(tmp, mode, **({} if mode == "wb" else {"encoding": "utf-8"})) as fh:
                fh.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        raise SpecError(str(path), "output", f"a writable location ({exc.strerror})") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            parser.print_help()
            return 0
        return int(args.func(args) or 0)
    except SpecError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted: nothing was written\n")
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
