"""Demand: one peak or 24 hourly values, in output tokens/s, concurrent users or requests/s,
from flags, lists or a CSV/YAML profile file."""


from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from planner.errors import SpecError, shown
from planner.specs.reading import written_plainly

PROFILE_UNITS = ("output_tps", "users", "requests_per_s")
_PROFILE_ALIASES = {"output_tps": "output_tps", "tps": "output_tps", "tokens_per_s": "output_tps",
                    "output_tokens_per_s": "output_tps", "users": "users",
                    "requests_per_s": "requests_per_s", "rps": "requests_per_s"}


# ---- demand ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Demand:
    """A load: one peak value or 24 hourly values, in output tokens/s, concurrent users or
    requests/s."""

    kind: str                    #: output_tps, users or requests_per_s
    hourly: tuple[float, ...]    #: one value (a peak held all day) or 24
    source: str = ""             #: where it came from (flag or file)

    @classmethod
    def of(cls, demand_tps: float | None = None, users: float | None = None,
           requests_per_s: float | None = None, profile: Any = None,
           profile_unit: str = "output_tps") -> Demand:
        """Exactly one of a peak in output tokens/s, concurrent users, requests/s, or a daily
        profile (24 hourly loads, or a CSV/YAML file), checked (:func:`make_demand`)."""
        return make_demand(demand_tps, users, requests_per_s, profile, profile_unit)

    def output_tps(self, tps_per_user: float, osl: float) -> np.ndarray:
        """Hourly output tokens/s: users x tokens/s/user, requests/s x OSL."""
        v = np.asarray(self.hourly, dtype=float)
        with np.errstate(over="ignore"):  # an absurd rate becomes inf, refused by its caller in one line
            if self.kind == "users":
                return v * tps_per_user
            if self.kind == "requests_per_s":
                return v * osl
        return v

    def peak_mean(self, tps_per_user: float, osl: float) -> tuple[float, float]:
        v = self.output_tps(tps_per_user, osl)
        return float(v.max()), float(v.mean())

    @property
    def is_profile(self) -> bool:
        return len(self.hourly) > 1

    def describe(self) -> str:
        def num(x: float) -> str:
            return f"{x:,.0f}" if x >= 100 or float(x).is_integer() else f"{x:,.4g}"

        words = {"output_tps": "output tokens/s", "users": "concurrent users",
                 "requests_per_s": "requests/s"}[self.kind]
        if self.is_profile:
            v = np.asarray(self.hourly)
            return (f"daily profile of {words} (peak {num(v.max())}, mean {num(v.mean())}"
                    f"{', from ' + self.source if self.source else ''})")
        return f"{num(self.hourly[0])} {words}"


def as_demand(demand: Any) -> Demand:
    """A :class:`Demand` from one: itself; a number (peak output tokens/s); or a mapping of
    :func:`make_demand`'s keywords (``{"users": 5000}``)."""
    if isinstance(demand, Demand):
        return demand
    if isinstance(demand, Mapping):
        bad = sorted(set(demand) - {"demand_tps", "users", "requests_per_s", "profile", "profile_unit"})
        if bad:
            raise SpecError("<input>", "demand", f"demand_tps, users, requests_per_s or profile (with "
                            f"profile_unit), got {bad[0]!r}")
        return make_demand(**demand)
    return make_demand(demand_tps=demand)


def _check_load(v: Any, field: str, allow_zero: bool = False, where: str = "<input>") -> float:
    if isinstance(v, bool) or not isinstance(v, int | float | np.number):
        raise SpecError(where, field, f"a number, got {shown(v)}")
    v = float(v)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise SpecError(where, field, f"a {'non-negative' if allow_zero else 'positive'} finite "
                        f"load, got {shown(v)}")
    return v


def make_demand(demand_tps: float | None = None, users: float | None = None,
                requests_per_s: float | None = None, profile: Any = None,
                profile_unit: str = "output_tps") -> Demand:
    """Exactly one of a peak in output tokens/s, concurrent users, requests/s, or a daily
    profile (24 hourly loads: a sequence, or a CSV/YAML file path; see :func:`read_profile`)."""
    given = [(k, v) for k, v in (("demand_tps", demand_tps), ("users", users),
                                 ("requests_per_s", requests_per_s), ("profile", profile))
             if v is not None]
    if len(given) != 1:
        names = ", ".join(k for k, _ in given) if given else "none"
        raise SpecError("<input>", "demand", "exactly one of demand_tps (--demand-tps), users (--users), "
                        f"requests_per_s (--requests-per-s) or profile (--profile); got {names}")
    key, v = given[0]
    if key == "profile":
        if isinstance(v, str | Path):
            return read_profile(v)
        if profile_unit not in _PROFILE_ALIASES:
            raise SpecError("<input>", "profile_unit", f"one of {', '.join(PROFILE_UNITS)}, got "
                            f"{profile_unit!r}")
        return _profile_values(list(v) if not isinstance(v, Mapping) else v, "<input>",
                               _PROFILE_ALIASES[profile_unit], "profile")
    kind = {"demand_tps": "output_tps", "users": "users", "requests_per_s": "requests_per_s"}[key]
    flag = {"demand_tps": "--demand-tps", "users": "--users", "requests_per_s": "--requests-per-s"}[key]
    load = _check_load(v, key)
    if kind == "users" and not load.is_integer():
        raise SpecError("<input>", key, f"a whole number of concurrent users, got {shown(v)}")
    return Demand(kind, (load,), flag)


def _profile_values(values: Any, label: str, kind: str, source: str) -> Demand:
    if not isinstance(values, list | tuple | np.ndarray) or len(values) != 24:
        n = len(values) if isinstance(values, list | tuple | np.ndarray) else type(values).__name__
        raise SpecError(label, "profile", f"24 hourly loads (hour 0 to 23), got {n}")
    hourly = tuple(_check_load(x, f"profile[{i}]", allow_zero=True, where=label)
                   for i, x in enumerate(values))
    if max(hourly) <= 0:
        raise SpecError(label, "profile", "at least one hour with a positive load")
    return Demand(kind, hourly, source)


def read_profile(path: str | Path) -> Demand:
    """A daily profile from a file.

    YAML: a list of 24 loads (output tokens/s), or ``{unit: output_tps|users|requests_per_s,
    hourly: [24 loads]}``.  CSV: 24 rows of one column of loads, under an optional header that
    names the unit (``output_tps``, ``users`` or ``requests_per_s``), or two columns under a
    header that names them, ``hour,LOAD`` (rows of several cells without a header are refused).
    """
    from planner.specs.reading import load_yaml, read_text

    label = str(path)
    text = read_text(path, label)
    if label.lower().endswith(".csv"):
        return _profile_csv(text, label)
    try:  # (numbers as YAML 1.2 writes them: 1_000 and 2:12 are text, refused as loads)
        doc = load_yaml(text, label)
    except SpecError as exc:
        if exc.field != "yaml":
            raise
        raise SpecError(label, "yaml", f"{exc.expected}, or a .csv file") from None
    if isinstance(doc, Mapping):
        unknown = set(doc) - {"unit", "hourly"}
        if unknown:
            raise SpecError(label, str(sorted(unknown)[0]), "a known field: unit, hourly")
        unit = doc.get("unit", "output_tps")
        if unit not in _PROFILE_ALIASES:
            raise SpecError(label, "unit", f"one of {', '.join(PROFILE_UNITS)}, got {unit!r}")
        return _profile_values(doc.get("hourly"), label, _PROFILE_ALIASES[unit], label)
    return _profile_values(doc, label, "output_tps", label)


def _profile_csv(text: str, label: str) -> Demand:
    """24 rows of one column of loads (output tokens/s), with or without a header naming the unit;
    or, under a header that names them, an ``hour`` column (0 to 23, each once, in any order) and
    one load column.  A headerless row of two or more cells is refused: ``5000,5`` may be hour
    5000's load 5, a load 5000 at hour 5, or 5000.5 written with a decimal comma, and reading one
    of its cells at a guess (the last, 5) would size the fleet for a thousandth of the load."""
    rows = [[c.strip() for c in r] for r in csv.reader(io.StringIO(text)) if r and any(c.strip() for c in r)]
    values: list[float] = []
    if rows and all(_is_number(c) or not c for c in rows[0]):  # no header: one column of loads
        for i, r in enumerate(rows, start=1):
            if len(r) != 1:
                raise SpecError(label, f"row {i}", f"one load per row, or a header naming the columns "
                                f"(hour,output_tps) above rows of several cells, got {','.join(r)!r} "
                                "without one (two numbers may be hour and load, load and hour, or one "
                                "number with a decimal comma)")
            values.append(_cell(r[0], label, f"row {i}"))
        return _profile_values(values, label, "output_tps", label)
    if not rows:
        return _profile_values(values, label, "output_tps", label)
    header = [c.lower() for c in rows[0]]
    named = [i for i, h in enumerate(header) if h in _PROFILE_ALIASES]
    others = [h for h in header if h not in _PROFILE_ALIASES]
    if len(named) != 1 or others not in ([], ["hour"]):
        raise SpecError(label, "header", "one load column named output_tps, users or requests_per_s "
                        f"(and optionally hour), got {', '.join(header)}")
    col, kind = named[0], _PROFILE_ALIASES[header[named[0]]]
    hour = header.index("hour") if others else None
    hours: list[int] = []
    for i, r in enumerate(rows[1:], start=2):
        if len(r) != len(header):
            raise SpecError(label, f"row {i}", f"{len(header)} cells, one per column of the header "
                            f"({', '.join(header)}), got {','.join(r)!r}")
        values.append(_cell(r[col], label, f"row {i}.{header[col]}"))
        if hour is not None:
            h = float(r[hour]) if _is_number(r[hour]) and written_plainly(r[hour]) else math.nan
            if not (h.is_integer() and 0 <= h <= 23) or int(h) in hours:
                raise SpecError(label, f"row {i}.hour", f"an hour from 0 to 23 given once, got {r[hour]!r}")
            hours.append(int(h))
    if hours:  # the loads in the order of the hours they are given for
        values = [v for _, v in sorted(zip(hours, values, strict=True))]
    return _profile_values(values, label, kind, label)


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _cell(cell: str, label: str, field: str) -> float:
    if not written_plainly(cell):  # float() reads 1_000 as 1000 and fullwidth digits as ASCII ones
        raise SpecError(label, field, f"a number in ASCII digits without separators, got {cell!r}")
    try:
        return float(cell)
    except ValueError:
        raise SpecError(label, field, f"a number, got {cell!r}") from None
