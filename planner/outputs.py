"""Writing results: plain-text tables and files written all at once (nothing half-way).

Used by the command line and by the core (``calibrate`` writes spec files), so it lives below
both."""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from planner.errors import SpecError


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


