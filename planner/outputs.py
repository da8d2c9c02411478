"""Writing results: plain-text tables and files written all at once (nothing half-way).

Used by the command line and by the core (``calibrate`` writes spec files), so it lives below
both."""

from __future__ import annotations

import errno
import math
import os
import secrets
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from planner.errors import SpecError

T = TypeVar("T")
#: progress lines for long work (:func:`progress`): shown only where standard error is a terminal,
#: and never under ``--json`` (the command line turns them off there)
SHOW_PROGRESS = True


def progress(items: Iterable[T], label: str, total: int | None = None) -> Iterator[T]:
    """``items``, one at a time, with a tqdm progress line on standard error while they run: on a
    terminal only (nothing in a pipe, a file, CI or under ``--json``), cleared when they are done."""
    from tqdm import tqdm

    return iter(tqdm(items, desc=label, total=total, leave=False, file=sys.stderr,
                     disable=None if SHOW_PROGRESS else True))


def fmt(v: Any, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}g}" if abs(v) < 1e4 else f"{v:,.0f}"
    return str(v)


def _is_float(v: Any) -> bool:
    return isinstance(v, float) and math.isfinite(v)


def column_decimals(values: list[Any], digits: int = 4) -> int | None:
    """Decimals that give one float column a single format: ``digits`` significant digits for
    its largest value (none from 10,000 up), more while its smallest non-zero value would show
    as zero (at most 6).  None for a column without a finite float."""
    vals = [abs(v) for v in values if _is_float(v)]
    if not vals:
        return None
    top = max(vals)
    if top >= 1e4:
        d = 0
    else:
        d = max(0, digits - 1 - math.floor(math.log10(top))) if top > 0 else 0
    small = min((v for v in vals if v > 0), default=0.0)
    while small and d < 6 and small < 10.0 ** -d:
        d += 1
    return d


def table(rows: list[list[Any]], header: list[str]) -> str:
    """Right-aligned plain-text table; each float column in one format (:func:`column_decimals`)."""
    dec = [column_decimals([r[i] for r in rows]) for i in range(len(header))]
    cells = [[f"{c:,.{dec[i]}f}" if _is_float(c) and dec[i] is not None else fmt(c)
              for i, c in enumerate(r)] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    out = ["  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(out)


Content = str | bytes | Callable[[str], None]
#: an output path that means standard output (``--csv -``)
STDOUT = "-"


def _target(path: str | Path, flag: str) -> tuple[Path, os.stat_result | None]:
    """The file a write to ``path`` lands in (a symlink's target, followed) and its stat (None when
    it does not exist yet)."""
    try:
        real = Path(os.path.realpath(path))
        try:
            st: os.stat_result | None = os.stat(real)
        except FileNotFoundError:
            st = None
        if st is None and not real.parent.is_dir():
            raise SpecError(str(path), flag, "a path in an existing directory")
    except SpecError:
        raise
    except OSError as exc:
        raise SpecError(str(path), flag, f"a writable location ({exc.strerror or exc})") from None
    except ValueError:  # an embedded NUL byte
        raise SpecError(str(path), flag, "a file name without NUL characters") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise SpecError(str(path), flag, "a file to write, not a directory")
    where = real if st is not None else real.parent
    if not os.access(where, os.W_OK):
        raise SpecError(str(path), flag, "a writable location (permission denied)")
    return real, st


def check_outputs(outputs: Mapping[str, str | Path | None],
                  inputs: Sequence[str | Path] = ()) -> None:
    """Check every output before anything is computed or written: ``{flag: path}`` (empty or None
    paths are skipped).  Each must be writable, not a directory, in an existing directory, and
    no two may name the same file (after following symlinks; hard links compare by inode), as
    the second would replace the first; a special file (``/dev/null``) may take several.  None
    may be one of the ``inputs`` (files the command reads), which writing would destroy."""
    dashes = [flag for flag, p in outputs.items() if str(p) == STDOUT]
    if len(dashes) > 1:
        raise SpecError(STDOUT, dashes[1], f"a file ({dashes[0]} already writes to standard output)")
    read: list[tuple[str | Path, os.stat_result]] = []
    for p in inputs:
        try:
            st_in = os.stat(p)
        except (OSError, ValueError):
            continue
        if stat.S_ISREG(st_in.st_mode):
            read.append((p, st_in))
    seen: list[tuple[str, str | Path, Path, os.stat_result | None]] = []
    for flag, path in outputs.items():
        if not path or str(path) == STDOUT:
            continue
        real, st = _target(path, flag)
        for ipath, ist in read:
            if st is not None and (st.st_dev, st.st_ino) == (ist.st_dev, ist.st_ino):
                raise SpecError(str(path), flag, f"a file other than the input {str(ipath)!r} (writing it "
                                "would destroy what the command reads)")
        for other, opath, oreal, ost in seen:
            same = (st is not None and ost is not None and (st.st_dev, st.st_ino) == (ost.st_dev, ost.st_ino)
                    and stat.S_ISREG(st.st_mode)) or (st is None and ost is None and real == oreal)
            if same:
                raise SpecError(str(path), flag, f"a different file from {other} {str(opath)!r} (the "
                                "second would overwrite the first)")
        seen.append((flag, path, real, st))


def _temp_beside(real: Path) -> str:
    """A new empty file next to ``real``, created with mode 0666 less the umask (as ``open``
    would create ``real`` itself)."""
    name, suffix = real.name, real.suffix
    for _ in range(100):
        tmp = real.parent / f".{name[:40]}.{secrets.token_hex(4)}.tmp{suffix[:16]}"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return str(tmp)
    raise FileExistsError(f"no free temporary name beside {real}")


def _fill(tmp: str, data: Content) -> None:
    if callable(data):
        data(tmp)
    elif isinstance(data, bytes):
        Path(tmp).write_bytes(data)
    else:
        Path(tmp).write_text(data, encoding="utf-8")


def write_outputs(items: Sequence[tuple[str, str | Path, Content]]) -> None:
    """Write several outputs, ``[(flag, path, content), ...]``, all or nothing.

    ``content`` is text, bytes, or a function that writes to the path it is given.  The paths
    are checked first (:func:`check_outputs`).  A regular file (or a new one) is written to a
    temporary file beside it that is renamed over it once every output is ready, keeping an
    existing file's permissions; a symlink's target is what gets written.  A special file (a
    device such as ``/dev/null``, a FIFO) is written in place, after everything else is ready.
    A failure before that point leaves every target as it was and no temporary file behind.
    """
    check_outputs({flag: p for flag, p, _ in items})
    staged: list[tuple[str, str, Path, str | None, bytes | None]] = []
    to_stdout: bytes | None = None
    try:
        for flag, path, data in items:
            if str(path) == STDOUT:
                with tempfile.TemporaryDirectory() as d:
                    tmp = os.path.join(d, "out")
                    _fill(tmp, data)
                    to_stdout = Path(tmp).read_bytes()
                continue
            real, st = _target(path, flag)
            try:
                if st is None or stat.S_ISREG(st.st_mode):
                    tmp = _temp_beside(real)
                    staged.append((flag, str(path), real, tmp, None))
                    if st is not None:
                        os.chmod(tmp, stat.S_IMODE(st.st_mode))
                    _fill(tmp, data)
                else:
                    with tempfile.TemporaryDirectory() as d:
                        tmp = os.path.join(d, f"out{real.suffix[:16]}")
                        _fill(tmp, data)
                        staged.append((flag, str(path), real, None, Path(tmp).read_bytes()))
            except OSError as exc:
                if exc.errno == errno.ENOENT and os.path.isdir(real.parent):
                    raise SpecError(str(path), flag, f"a place where files can be created ({real.parent} "
                                    "takes none: a virtual or read-only file system)") from None
                raise SpecError(str(path), flag, f"a writable location ({exc.strerror or exc})") from None
        for flag, path, real, tmp, raw in staged:
            try:
                if tmp is not None:
                    os.replace(tmp, real)
                else:
                    with open(real, "wb") as fh:
                        fh.write(raw or b"")
            except OSError as exc:
                raise SpecError(path, flag, f"a writable location ({exc.strerror or exc})") from None
    finally:
        for _, _, _, tmp, _ in staged:
            if tmp is not None and os.path.lexists(tmp):
                os.unlink(tmp)
    if to_stdout is not None:
        # the data goes to standard output alone: what the command prints next goes to stderr
        out = sys.stdout
        out.flush()
        buf = getattr(out, "buffer", None)
        if buf is not None:
            buf.write(to_stdout)
            buf.flush()
        else:
            out.write(to_stdout.decode("utf-8", "replace"))
        sys.stdout = sys.stderr


def write_atomic(path: str | Path, data: Content, flag: str = "output") -> None:
    """Write one file all at once (see :func:`write_outputs`), nothing half-way on failure."""
    write_outputs([(flag, path, data)])
