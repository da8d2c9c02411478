"""Text quantities ("4.8 TB/s", "141 GB", "10 PFLOP/s") to SI floats, with dimension checks.

Units are converted here and in the presentation code only; everything inside the model is
bytes, seconds, FLOP, B/s, FLOP/s, W and USD as plain floats.  Decimal prefixes mean decimal
(1 GB = 1e9 B); binary prefixes must be spelled (GiB).  FLOP is its own dimension, so a byte
count can never pass for a FLOP count.

Parsing uses pint, which takes about a second to import and set up; every text parsed is
remembered in the on-disk cache (:mod:`planner.cache`, keyed by this module's source and the
pint version), so a run that reads only specs seen before does not import pint.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any

from planner import cache
from planner.errors import SpecError


@lru_cache(maxsize=1)
def _registry() -> Any:
    import pint

    ureg = pint.UnitRegistry(autoconvert_offset_to_baseunit=False)
    # pint's own byte and bit are dimensionless (and its B is a bel, its b a barn): use a data
    # dimension of our own so that "4.8 TB" can never pass for a bandwidth.
    ureg.define("databyte = [data]")
    ureg.define("databit = databyte / 8")
    ureg.define("FLOP = [flop] = flop")
    ureg.define("FLOPS = FLOP / second = flops")
    ureg.define("OPS = FLOPS")
    ureg.define("USD = [currency] = dollar = usd")
    ureg.define("GPU = [gpu]")
    ureg.define("token = [token]")
    ureg.define("exponential = [exponential] = exp")
    return ureg


@lru_cache(maxsize=1)
def _known() -> tuple[Any, dict[str, float]]:
    """(cache file, {"dimension|text": SI value}) of the quantities parsed in earlier runs."""
    path = cache.entry_path("quantities", cache.source_key("planner.specs", ("units",), ("pint",)))
    doc = cache.read(path)
    if not isinstance(doc, dict):  # the quantities of the bundled specs, shipped with the package
        doc = cache.bundled("quantities", cache.source_key("planner.specs", ("units",)))
    return path, (dict(doc) if isinstance(doc, dict) else {})

#: dimension name -> (pint unit the SI float is expressed in, words for the error message)
DIMENSIONS: dict[str, tuple[str, str]] = {
    "bandwidth": ("databyte/s", "a bandwidth such as '4.8 TB/s' or '400 Gb/s'"),
    "bytes": ("databyte", "a size such as '141 GB' or '80 GiB'"),
    "flops": ("FLOP/s", "a rate such as '989 TFLOP/s' (dense)"),
    "time": ("s", "a time such as '5 us' or '2 ms'"),
    "tokens": ("token", "a token count such as '600 tokens'"),
    "exp_rate": ("exponential/s", "a rate of exponentials such as '3.9 Texp/s'"),
    "power": ("W", "a power such as '1200 W' or '120 kW'"),
    "usd": ("USD", "an amount such as '3000000 USD'"),
    "usd_per_hour": ("USD/h", "a price such as '5.41 USD/h'"),
    "usd_per_kwh": ("USD/kWh", "a price such as '0.08 USD/kWh'"),
}


_BITS = re.compile(r"(?<![A-Za-z])([kMGTP]?)(?:bit|b)(?:ps\b|(?=/s\b)|(?![A-Za-z]))")
_BYTES = re.compile(r"(?<![A-Za-z])([kMGTPE]i?)?(?:B|byte|bytes)(?![A-Za-z])")


#: a comma between two digits: a thousands separator ("5,408") or a decimal comma ("5,408" again,
#: or "4,8"), which cannot be told apart ("5,408 USD/h" is 5.408 in much of Europe and 5408 in the
#: US, and pint would read "4,8" as 48), so neither is read
_DIGIT_COMMA = re.compile(r"\d,\d")
#: A quantity as specs write it: one number in ASCII digits (a decimal point and an exponent at
#: most) and a unit that starts with a letter.  Pint would read "4 800 GB/s" as 4 x 800 GB/s and
#: "4_8 TB/s" as 48 TB/s; other digits and separators are refused before it sees them.
_QUANTITY_SHAPE = re.compile(r"\s*[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*"
                             r"[A-Za-z\u00b5\u03bc%$][A-Za-z0-9\u00b5\u03bc%$/^*. ()-]*\s*\Z")


def _normalise(text: str) -> str:
    """Spell bits and bytes unambiguously for pint, whose 'b' is a barn and 'B' a bel.

    '400 Gb/s' and '400 Gbps' become '400 Gbit/s'; '141 GB' becomes '141 Gbyte'.
    """
    cleaned = text.strip().replace("µ", "u").replace("μ", "u")
    cleaned = _BYTES.sub(lambda m: f"{m.group(1) or ''}databyte", cleaned)
    return _BITS.sub(lambda m: f"{m.group(1)}databit" + ("/s" if m.group(0).endswith("ps") else ""), cleaned)


def parse_quantity(text: str, dimension: str, where: str = "<input>", field: str = "value") -> float:
    """Parse ``text`` as a quantity of ``dimension`` and return it as an SI float.

    Raises :class:`SpecError` naming ``where`` and ``field`` if the text is not a number with a
    unit of the right dimension, or is not finite and positive.
    """
    unit, words = DIMENSIONS[dimension]
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise SpecError(where, field, f"expected {words}, got {_short(text)}")
    if isinstance(text, int | float):
        raise SpecError(where, field, f"expected {words} with its unit, got the bare number {text!r}")
    if _DIGIT_COMMA.search(text):
        hint = (f"{text.replace(',', '.')!r} or {text.replace(',', '')!r}, whichever is meant"
                if text.count(",") == 1 and len(text) <= 40 else "the number without commas")
        raise SpecError(where, field, f"expected {words}, written as a number without thousands or decimal "
                        f"commas, got {_short(text)} (write {hint})")
    if not _QUANTITY_SHAPE.match(text):
        raise SpecError(where, field, f"expected {words}, written as one number in ASCII digits (no "
                        f"spaces, underscores, apostrophes or other separators inside it) and its unit, "
                        f"got {_short(text)}")
    return _parse_text(text, dimension, where, field)


def _short(value: object, limit: int = 60) -> str:
    r = repr(value)
    return r if len(r) <= limit else r[: limit - 3] + "..."


def _parse_text(text: str, dimension: str, where: str, field: str) -> float:
    path, known = _known()
    key = f"{dimension}|{text}"
    value = known.get(key)
    if isinstance(value, float):
        return value
    value = _parse_pint(text, dimension, where, field)
    known[key] = value
    cache.write(path, known)
    cache.record("quantities", cache.source_key("planner.specs", ("units",)), known)
    return value


def _parse_pint(text: str, dimension: str, where: str, field: str) -> float:
    import pint

    unit, words = DIMENSIONS[dimension]
    cleaned = _normalise(text)
    try:
        q = _registry().Quantity(cleaned)
    except Exception:  # pint raises many kinds of parse errors
        raise SpecError(where, field, f"expected {words}, got {text!r}") from None
    if not isinstance(q, pint.Quantity) or q.dimensionless:
        raise SpecError(where, field, f"expected {words} with its unit, got {text!r}")
    try:
        value = float(q.to(unit).magnitude)
    except pint.DimensionalityError:
        raise SpecError(
            where, field, f"expected {words}, got {text!r} (a quantity of another dimension)"
        ) from None
    if not math.isfinite(value) or value <= 0:
        raise SpecError(where, field, f"expected a finite, positive value, got {text!r}")
    return value


def format_si(value: float, unit: str, digits: int = 3) -> str:
    """Format an SI float with a decimal prefix: ``format_si(4.8e12, 'B/s') -> '4.8 TB/s'``."""
    if value == 0 or not math.isfinite(value):
        return f"{value} {unit}"
    prefixes = [(1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""),
                (1e-3, "m"), (1e-6, "u"), (1e-9, "n")]
    for scale, p in prefixes:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {p}{unit}"
    return f"{value:.{digits}g} {unit}"
