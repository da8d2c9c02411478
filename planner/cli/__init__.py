"""The ``moe-planner`` command line.  Each subcommand lives in its own module of this package
(``specs``, ``point``, ``frontier``, ``size``, ``plan``, ``validate``) and registers itself with
:func:`planner.cli.common.add_command`; this module only dispatches and turns bad input into
one line on stderr with exit status 2.

Subcommand modules import the model (sympy, scipy, pandas, matplotlib) inside their command
functions, so ``moe-planner --help`` and argument errors stay fast.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from planner.errors import SpecError

SUBCOMMAND_MODULES = ("specs", "point", "frontier", "size", "plan", "validate", "recipe", "landscape")

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

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse drops a failed write of the help silently (and exits 0): let it fail as any
        # other output to a full or closed standard output does
        if message:
            (file or sys.stderr).write(message)


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


class _ClosedStdout:
    """Standing in for a standard output that was closed (``>&-``, where Python sets ``sys.stdout``
    to None): the first write fails as a write to a closed descriptor would, instead of ``print``
    dropping every line without a word and the command exiting 0."""

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, "standard output is closed")

    def writelines(self, lines: object) -> None:
        raise OSError(errno.EBADF, "standard output is closed")

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _stdout_failed(exc: OSError, stdout: object) -> int:
    """A write to standard output failed (a full disk, ``/dev/full``, a closed descriptor, a
    closed pipe): one line on stderr where stderr can take it, and exit status 2; a closed pipe
    (``| head``) is the reader's choice and ends quietly with status 0."""
    if stdout is sys.__stdout__ and stdout is not None:
        # what the failed stream still holds would fail again, with a traceback, when the
        # interpreter flushes it at exit: let that flush go to /dev/null
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stdout.fileno())  # type: ignore[attr-defined]
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass
    if isinstance(exc, BrokenPipeError):
        return 0
    why = exc.strerror or str(exc) or type(exc).__name__
    line = SpecError("<stdout>", "output", f"a writable standard output ({why})")
    try:
        if sys.stderr is not None:
            sys.stderr.write(f"error: {line}\n")
            sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # the command line's own process (not a caller's, e.g. a test)
        _keep_freed_memory()
    if sys.stdout is None:
        sys.stdout = _ClosedStdout()  # type: ignore[assignment]
    stdout = sys.stdout  # an output written to "-" sends what follows it to stderr: restored here
    previous = None
    try:
        previous = signal.signal(signal.SIGTERM, _terminated)
    except ValueError:  # not the main thread: leave the handler as it is
        pass
    try:
        rc = _main(argv)
        stdout.flush()  # a full or closed output fails here when what was written fitted a buffer
        return rc
    except _Terminated:
        sys.stderr.write("terminated: nothing was written\n")
        return 143
    except OSError as exc:
        if exc.filename is not None:  # not the standard output's: a file the command itself opened
            raise
        return _stdout_failed(exc, stdout)
    finally:
        sys.stdout = None if isinstance(stdout, _ClosedStdout) else stdout  # type: ignore[assignment]
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv: Sequence[str] | None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "command", None):
            parser.print_help()
            return 0
        from planner import outputs

        args.argv = list(sys.argv[1:] if argv is None else argv)  # the command, to print back
        outputs.SHOW_PROGRESS = not getattr(args, "json", False)  # JSON alone on the terminal
        return int(args.func(args) or 0)
    except SpecError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("interrupted: nothing was written\n")
        return 130


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
