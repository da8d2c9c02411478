"""The ``moe-planner`` command line.  Each subcommand lives in its own module of this package
(``specs``, ``point``, ``frontier``, ``size``, ``plan``, ``validate``) and registers itself with
:func:`planner.cli.common.add_command`; this module only dispatches and turns bad input into
one line on stderr with exit status 2.

Subcommand modules import the model (sympy, scipy, pandas, matplotlib) inside their command
functions, so ``moe-planner --help`` and argument errors stay fast.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Sequence

from planner.errors import SpecError

SUBCOMMAND_MODULES = ("specs", "point", "frontier", "size", "plan", "validate")

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
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(f"planner.cli.{name}").register(sub)
    return parser


class _Version(argparse.Action):
    """``--version``: the installed package's version (read only when asked: importlib.metadata
    stays off the --help path)."""

    def __call__(self, parser: argparse.ArgumentParser, *a: object, **k: object) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("moe-planner")
        except PackageNotFoundError:
            v = "unknown (not installed)"
        sys.stdout.write(f"moe-planner {v}\n")
        raise SystemExit(0)


def _terminated(signum: int, frame: object) -> None:
    """SIGTERM: unwind like an interrupt, so that every output's temporary file is removed."""
    raise _Terminated


class _Terminated(Exception):
    pass


def _keep_freed_memory() -> None:
    """Ask glibc to keep 256 MiB of freed heap instead of handing it back to the system.

    A search allocates and frees thousands of short-lived arrays; with glibc's defaults each one
    is faulted in page by page again, which took a fifth of ``compare``'s CPU time in the kernel
    (0.45 s of 2.1 s; 0.1 s with the pad, for 10 MB more resident memory).  Nothing happens
    off glibc."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None).mallopt(-2, 256 << 20)  # M_TOP_PAD
    except (OSError, AttributeError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the command line's own process (not a caller's, e.g. a test)
        _keep_freed_memory()
    stdout = sys.stdout  # an output written to "-" sends what follows it to stderr: restored here
    previous = None
    try:
        previous = signal.signal(signal.SIGTERM, _terminated)
    except ValueError:  # not the main thread: leave the handler as it is
        pass
    try:
        return _main(argv)
    except _Terminated:
        sys.stderr.write("terminated: nothing was written\n")
        return 143
    finally:
        sys.stdout = stdout
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv: Sequence[str] | None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            parser.print_help()
            return 0
        from planner.cli.common import apply_stack

        apply_stack(args)
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
