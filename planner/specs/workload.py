"""Workloads beyond one ISL/OSL pair: sessions of several turns whose earlier turns' KV can be
reused, length spreads, the arrival process and service levels as percentiles.

A workload is a YAML file (bundled: ``agentic``, ``reasoning``, ``chat`` in
``planner/workload_specs/``; see docs/specs.md) or a trace CSV of requests (``arrival_s``,
``input_tokens``, ``output_tokens``, ``cached_tokens`` and optionally ``session``).  A session's
first prompt has ``first_input`` tokens; each later turn adds its ``new_input`` tokens to the
session's context so far (the earlier prompts and outputs), which a KV tier may still hold.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from planner.errors import SpecError
from planner.specs.reading import Fields, parse_yaml, path_kind, read_text, suggest, written_plainly
from planner.specs.units import parse_quantity

#: the service-level keys a workload or ``--slo`` may set: metric_pNN
SLO_METRICS = ("ttft", "tpot")
#: the KV tiers a session may wait in between its turns, in the order they fill
KV_TIERS = ("hbm", "host", "nvme")


@dataclass(frozen=True)
class Workload:
    """Means over a session's turns (tokens), spreads, arrivals and service levels."""

    name: str
    description: str
    turns: float                 #: T, turns per session
    first_input: float           #: prompt tokens of a session's first turn
    new_input: float             #: prompt tokens each later turn adds
    output: float                #: output tokens per turn
    idle_s: float                #: t_idle, s between a session's turns
    arrival_cv2: float = 1.0     #: c_a^2 of inter-arrival times (1: Poisson)
    length_cv2: float = 0.0      #: c_s^2 of the prompts' computed lengths
    slo: dict[str, float] = field(default_factory=dict)  #: "ttft_p99" -> seconds
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    path: str = ""

    # ---- means over the turns of a session (turn k: prompt F + (k - 1)(N + O)) ----
    @property
    def isl(self) -> float:
        """Mean prompt tokens per request (the whole context sent)."""
        return self.first_input + (self.turns - 1) / 2 * (self.new_input + self.output)

    @property
    def cached(self) -> float:
        """Mean prompt tokens per request that an earlier turn computed (turn k >= 2 reuses its
        previous context, F + (k - 2)(N + O) + O)."""
        T = self.turns
        if T <= 1:
            return 0.0
        return ((T - 1) * (self.first_input + self.output)
                + (self.new_input + self.output) * (T - 1) * (T - 2) / 2) / T

    @property
    def osl(self) -> float:
        return self.output

    @property
    def decode_context(self) -> float:
        """Mean KV length in decode: the prompt and half the output."""
        return self.isl + self.output / 2

    @property
    def session_tokens(self) -> float:
        """Mean context a session holds between turns: after turn k, F + (k - 1)(N + O) + O, over
        the T - 1 gaps."""
        return self.first_input + self.output + (self.new_input + self.output) * (self.turns - 2) / 2

    def with_slo(self, slo: dict[str, float]) -> Workload:
        return dataclasses.replace(self, slo={**self.slo, **slo})

    def summary(self) -> dict[str, Any]:
        return {"name": self.name, "turns": self.turns, "isl_mean": self.isl, "osl_mean": self.osl,
                "cached_mean": self.cached, "reusable_share": self.cached / self.isl,
                "decode_context": self.decode_context, "session_tokens": self.session_tokens,
                "idle_s": self.idle_s, "arrival_cv2": self.arrival_cv2, "length_cv2": self.length_cv2,
                "slo": dict(self.slo)}


#: the largest coefficient of variation a workload's arrivals or lengths may state: ten times an
#: exponential's (the bundled workloads state 0.1 to 1)
MAX_CV = 10.0


def parse_slo(text: str, where: str = "<input>", field_name: str = "slo") -> dict[str, float]:
    """``ttft_p99=2,tpot_p90=0.05`` (seconds) -> ``{"ttft_p99": 2.0, "tpot_p90": 0.05}``."""
    out: dict[str, float] = {}
    parts = [p.strip() for p in str(text).split(",")]
    if any(not p for p in parts) and str(text).strip():
        raise SpecError(where, field_name, f"service levels separated by single commas, got {text!r}")
    for part in [p for p in parts if p]:
        key, _, value = part.partition("=")
        key = key.strip()
        slo_key(key, where, field_name)
        if key in out:
            raise SpecError(where, f"{field_name}.{key}", f"one value, given twice in {text!r}")
        if not value.strip().isascii() or "_" in value:  # float() reads 1_0 as 10, and other digits
            raise SpecError(where, f"{field_name}.{key}",
                            f"a time in seconds in ASCII digits, got {value.strip()!r}")
        try:
            v = float(value)
        except ValueError:
            v = math.nan
        if not (math.isfinite(v) and v > 0):
            raise SpecError(where, f"{field_name}.{key}", f"a time in seconds > 0, got {value.strip()!r}")
        out[key] = v
    if not out:
        raise SpecError(where, field_name, "service levels such as ttft_p99=2,tpot_p90=0.05 (seconds)")
    return out


def parse_tiers(text: str, where: str = "<input>", field_name: str = "kv_tiers") -> tuple[str, ...]:
    """``hbm,host`` -> ``("hbm", "host")``; ``none`` -> ``()`` (every later turn recomputes its prefix)."""
    names = tuple(t.strip() for t in str(text).split(","))
    if names == ("none",):
        return ()
    if not names or any(t not in KV_TIERS for t in names) or len(set(names)) < len(names):
        raise SpecError(where, field_name, f"a comma list of {', '.join(KV_TIERS)}, or none; got {text!r}")
    return names


def slo_key(key: str, where: str = "<input>", field_name: str = "slo") -> tuple[str, float]:
    """(metric, percentile as a fraction) of a key such as ``ttft_p99`` or ``tpot_p99.9``."""
    metric, _, pct = key.partition("_p")
    try:
        # ASCII digits and one point only: float() also reads 9_9 as 99 and other scripts' digits
        p = float(pct) / 100.0 if re.fullmatch(r"[0-9]+(\.[0-9]+)?", pct) else math.nan
    except ValueError:
        p = math.nan
    if metric not in SLO_METRICS or not (0.0 < p < 1.0):
        raise SpecError(where, f"{field_name}.{key}" if key else field_name,
                        "a service level named METRIC_pNN with METRIC ttft or tpot and NN a percentile "
                        f"between 0 and 100 (ttft_p99, tpot_p90), got {key!r}")
    return metric, p


def workload_names() -> list[str]:
    root = resources.files("planner.workload_specs")
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml"))


def load_workload(name: str | Workload) -> Workload:
    """A bundled workload by name, a YAML file, or a trace CSV."""
    if isinstance(name, Workload):
        return name
    if not isinstance(name, str) or not name:
        raise SpecError("<input>", "workload", f"a workload name or path, got {name!r}")
    if name in workload_names():
        text = resources.files("planner.workload_specs").joinpath(f"{name}.yaml").read_text("utf-8")
        label = f"workload_specs/{name}.yaml"
        return parse_workload(parse_yaml(text, label), label)
    if path_kind(name) is None and "/" not in name and not name.endswith((".yaml", ".yml", ".csv")):
        raise SpecError("<input>", "workload", f"one of {', '.join(workload_names())} or a path to a "
                        f"workload YAML or trace CSV, got {name!r}{suggest(name, workload_names())}")
    if name.endswith(".csv"):
        return load_trace(name)
    return parse_workload(parse_yaml(read_text(name), name), name)


def _count(f: Fields, key: str, src: dict[str, str], minimum: float = 1.0) -> float:
    sub = f.sub(key)
    v = sub.number("value", lo=minimum, lo_open=False)
    sub.text("unit", choices=("token", "turn"))
    src[key] = sub.text("source")
    sub.done()
    return v


def parse_workload(doc: dict[str, Any], label: str) -> Workload:
    f = Fields(doc, label)
    src: dict[str, str] = {}
    name, description = f.text("name"), f.text("description")
    s = f.sub("session")
    turns = _count(s, "turns", src)
    first = _count(s, "first_input", src)
    new = _count(s, "new_input", src, minimum=0.0) if turns > 1 or s.has("new_input") else 0.0
    out = _count(s, "output", src)
    idle = 0.0
    if s.has("idle"):
        i = s.sub("idle")
        idle = parse_quantity(i.raw("value"), "time", label, i.path("value"))
        src["idle"] = i.text("source")
        i.done()
    elif turns > 1:
        raise SpecError(label, s.path("idle"), "the time between a session's turns, e.g. {value: '20 s', "
                        "source: ...}, since the session has more than one turn")
    s.done()
    spread = f.sub("spread", required=False)
    ca2, cs2 = 1.0, 0.0
    if spread is not None:
        # at most MAX_CV: past it the queue's percentile laws leave every rate unserved (an empty
        # table, where 1e9 was taken without a word)
        ca = spread.number("arrival_cv", lo=0.0, hi=MAX_CV, lo_open=False, required=False, default=1.0)
        cs = spread.number("length_cv", lo=0.0, hi=MAX_CV, lo_open=False, required=False, default=0.0)
        ca2, cs2 = ca * ca, cs * cs
        src["spread"] = spread.text("source")
        spread.done()
    slo: dict[str, float] = {}
    sl = f.sub("slo", required=False)
    if sl is not None:
        for key in list(sl.doc):
            if key == "source":
                continue
            slo_key(str(key), label, sl.path(str(key)))
            slo[str(key)] = parse_quantity(sl.raw(str(key)), "time", label, sl.path(str(key)))
        src["slo"] = sl.text("source")
        sl.done()
    f.text("source", required=False)
    f.done()
    return Workload(name=name, description=description, turns=turns, first_input=first, new_input=new,
                    output=out, idle_s=idle, arrival_cv2=ca2, length_cv2=cs2, slo=slo, sources=src,
                    path=label)


TRACE_COLUMNS = ("arrival_s", "input_tokens", "output_tokens", "cached_tokens")
#: The range of each trace column.  A request's tokens: at least one prompt and one output token,
#: at most 100 M (ten times the longest context window of any model, 10 M tokens); its arrival: s
#: from the trace's start or since the Unix epoch (1.7e9 s in 2024), at most 1e10 s (the year
#: 2286).  Beyond them a value is a slip, and the means and spreads of values such as 1e200 or
#: 1e308 overflow.
TRACE_RANGES = {"arrival_s": (0.0, 1e10), "input_tokens": (1.0, 1e8), "output_tokens": (1.0, 1e8),
                "cached_tokens": (0.0, 1e8)}


def load_trace(path: str | Path) -> Workload:
    """A workload from a trace CSV: one request a row, ``arrival_s``, ``input_tokens``,
    ``output_tokens``, ``cached_tokens`` (prompt tokens an earlier request of the session computed)
    and optionally ``session`` (the gap between a session's requests is its idle time)."""
    label = str(path)
    text = read_text(path, label)
    reader = csv.DictReader(text.splitlines())
    rows = list(reader)
    if not rows:
        raise SpecError(label, "rows", f"a header with {', '.join(TRACE_COLUMNS)} and at least two requests")
    header = [h.strip() for h in (reader.fieldnames or [])]
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:  # (a CSV reader keeps the last of a repeated column without a word)
        raise SpecError(label, twice[0], "a column given once in the header")
    missing = [c for c in TRACE_COLUMNS if c not in rows[0]]
    if missing:
        raise SpecError(label, missing[0], f"a column of the trace (needs {', '.join(TRACE_COLUMNS)})")
    vals: dict[str, list[float]] = {c: [] for c in TRACE_COLUMNS}
    for i, r in enumerate(rows, start=2):
        for c in TRACE_COLUMNS:
            if isinstance(r[c], str) and not written_plainly(r[c]):
                raise SpecError(label, f"line {i}.{c}", f"a number in ASCII digits without separators, "
                                f"got {r[c]!r}")
            try:
                v = float(r[c])
            except (TypeError, ValueError):
                v = math.nan
            lo, hi = TRACE_RANGES[c]
            if not (math.isfinite(v) and lo <= v <= hi):
                raise SpecError(label, f"line {i}.{c}", f"a number from {lo:g} to {hi:g}, got {r[c]!r}")
            if c.endswith("_tokens") and v != round(v):
                raise SpecError(label, f"line {i}.{c}", f"a whole number of tokens, got {r[c]!r}")
            vals[c].append(v)
        if vals["cached_tokens"][-1] > vals["input_tokens"][-1]:
            raise SpecError(label, f"line {i}.cached_tokens", "at most input_tokens")
    n = len(rows)
    if n < 2:
        raise SpecError(label, "rows", "at least two requests (the arrival process needs a gap)")
    t = sorted(vals["arrival_s"])
    gaps = [b - a for a, b in zip(t, t[1:], strict=False)]
    ca2 = _cv2(gaps)
    I = sum(vals["input_tokens"]) / n
    Ic = sum(vals["cached_tokens"]) / n
    O = sum(vals["output_tokens"]) / n
    computed = [a - b for a, b in zip(vals["input_tokens"], vals["cached_tokens"], strict=True)]
    idle = 0.0
    if "session" in rows[0]:
        last: dict[str, float] = {}
        waits = []
        for r, a in sorted(zip(rows, vals["arrival_s"], strict=True), key=lambda x: x[1]):
            if r["session"] in last:
                waits.append(a - last[r["session"]])
            last[r["session"]] = a
        idle = sum(waits) / len(waits) if waits else 0.0
    if Ic > 0:  # two turns whose means are the trace's: isl = F + (N + O) / 2 = I, cached = (F + O) / 2 = Ic
        turns, F = 2.0, max(2 * Ic - O, 1.0)
        N = max(2 * (I - F) - O, 0.0)
    else:  # no reuse: one turn of the trace's mean lengths
        turns, F, N = 1.0, I, 0.0
    return Workload(name=Path(label).stem, description=f"trace {label}: {n} requests", turns=turns,
                    first_input=F, new_input=N, output=O, idle_s=idle, arrival_cv2=ca2,
                    length_cv2=_cv2(computed), sources={"trace": label}, path=label)


def _cv2(x: list[float]) -> float:
    if len(x) < 2:
        return 0.0
    m = sum(x) / len(x)
    if m <= 0:
        return 0.0
    return sum((v - m) ** 2 for v in x) / len(x) / (m * m)
