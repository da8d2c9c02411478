"""Fuzz the command line with generated hostile inputs; print what went wrong, if anything.

    python scripts/fuzz_inputs.py [N] [--seed S]

N inputs (default 10,000), each run in-process through ``planner.cli.main`` (the ``stdout``
family in a subprocess), drawn from fourteen families:

``hardware``, ``model``, ``config``, ``plan``
    a bundled hardware spec, model spec, Hugging Face config.json or fleet plan with one value
    replaced by junk (huge integers, impossible dates, decimal commas, NaN, negative and tiny
    numbers, lists, maps, empty text, control characters), a line dropped or repeated, the text
    cut short, or a YAML alias bomb added.  Some mutations leave a valid file, so exit 0 and exit 2
    are both right; only the problems below count.
``numbers``, ``outputs``
    hostile numbers for ``point --gpus/--batch/--context``; hostile output paths for ``frontier
    --csv/--plot``.  Either exit status may be right.
``separators``
    a number written with a separator or foreign digits inside ("5,408 USD/h", "4_8 TB/s",
    "4 800 GB/s", "1.979.000", "5٫4", "１０", YAML's "1_32" and "2:12"): in a hardware spec's
    quantities and bare numbers, a model spec's integers, a fleet plan, every numeric option of
    the command line, a demand profile's and a workload trace's cells.  Must be refused.
``magnitudes``
    a hardware spec's bandwidth, capacity, power, latency or price far outside the range a GPU can
    have (``PLAUSIBLE`` and ``PRICE_RANGES`` in planner/specs/hardware.py), by a unit slip ("400
    Tb/s") or a wrong number; the cost options of ``size`` out of their ranges; absurd SM and GPU
    counts and overheads, for which no range is stated (their label says so).  Must be refused.
``profiles``
    ``size --profile FILE``: headerless rows of two numbers, hours out of range or given twice,
    BOMs, junk cells, wrong row counts, unknown headers, other delimiters and encodings, YAML
    profiles with junk, a FIFO or a directory.  Must be refused (a file with a BOM may instead be
    read exactly as written); valid controls must be read exactly as written.
``traces``
    ``frontier --workload FILE.csv``: 1e200, 1e308, inf, NaN, negatives, junk, missing, renamed
    or repeated columns, rows of too many or too few cells, cached above input tokens, fractional
    token counts.  Must be refused.
``measured``
    ``validate --frontiers FILE`` (rows of /work/shared/validation/measured_frontiers.csv) and
    ``validate --runs FILE`` (rows of the bundled runs), each run with ``--json --out``: one row of
    a small file, copied from a row that scores, with a bad figure (negative TTFT, TPOT 1e308,
    inf, NaN, junk) or a bad count in a column the scoring reads for that row (batch size 1.5, a
    negative EP, 0 GPUs ...; not a worker layout that the benchmark's launch matrix replaces);
    files whose rows are all unscorable; a FIFO, a directory or a device as the file.  The bad
    row must be refused, or left unscored by a named rule that the JSON summary counts (a bad p99
    figure: or kept out of the p99 figures); never scored.  20 s limit a case.
``names``
    a hardware spec's ``name`` that is empty, a path, has an ``@``, a space, a control character,
    or is no text; a layout whose units are not whole scale-up domains, whose domain does not
    divide the system, whose host or PCIe switch does not divide it, or whose torus does not
    multiply to the domain.  Must be refused.
``small_cli``
    repeated or empty service levels, KV tiers with empty items, empty KV and weight formats,
    ``NAME@STACK@STACK``, negative ``--levels``, ``--at`` and ``--threshold``, flags a workload does
    not take, unknown workloads.  Must be refused.  A share are valid workload runs (either exit
    status), there to find crashes.
``stdout``
    ``python -m planner ...`` with standard output on /dev/full, closed, or a pipe closed by its
    reader.  Must exit non-zero (a closed pipe: 0 or 2) with at most one line on stderr.

Counted: tracebacks (an exception escaping ``main``, or "Traceback" on stderr), hangs (no exit
within a case's time limit), silently accepted bad values (exit 0 on an input that must be
refused, or a check of the output failing: a bad row scored, a profile read otherwise than
written), multi-line errors (exit 2 with other than one line on stderr; in the ``stdout`` family
more than one line), refused valid controls, other exit statuses, damaged inputs (a file the run
read whose bytes changed) and leftovers (temporary files beside an output).  Exit status 1 if any
is found.  Refusals whose message names another field than the one under test are shown as
"off target" (a hint that a case tests less than it means to), not counted as problems.
Development time; the figure goes in the README.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.cli import main  # noqa: E402
from planner.specs.hardware import MAX_DOMAIN, PLAUSIBLE, PRICE_RANGES  # noqa: E402
from planner.specs.units import parse_quantity  # noqa: E402
from planner.specs.workload import TRACE_COLUMNS  # noqa: E402

JUNK = [
    "9" * 5000,
    "2026-13-45",
    '"4,8 TB/s"',
    ".nan",
    "-1",
    "0",
    "1e-320",
    "1e308",
    "[1, 2]",
    "{a: 1}",
    '""',
    '"\\u0000"',
    '"x\\ny"',
    "~",
    "true",
    '"700 kW"',
    '"1 PB/s"',
    '"0.000001 B/s"',
    "-0.0",
    '"８ GB"',
    "1e6",
    '"12 parsecs"',
    "&a [1]",
    "*nope",
]
NUMBERS = [
    "1",
    "8",
    "0",
    "-1",
    "1e-320",
    "1e308",
    "nan",
    "inf",
    "-inf",
    "0.5",
    "1e6",
    "abc",
    "",
    "4,8",
    "１",
    "9" * 400,
    "2048",
    "1.5",
    "64",
    "1e-9",
]
BOMB = 'x1: &a ["l","l","l","l","l","l","l","l"]\n' + "".join(
    f"x{i + 2}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 8) + "]\n" for i in range(8)
)
VALUE = re.compile(r"(:\s*)(\{value:\s*)?(\"[^\"]*\"|[-+0-9.eE]+|true|false|[a-z_]+)")

FAMILIES = [
    ("hardware", 0.13),
    ("model", 0.08),
    ("config", 0.07),
    ("plan", 0.01),
    ("numbers", 0.10),
    ("outputs", 0.05),
    ("separators", 0.13),
    ("magnitudes", 0.09),
    ("profiles", 0.07),
    ("traces", 0.07),
    ("measured", 0.06),
    ("names", 0.05),
    ("small_cli", 0.08),
    ("stdout", 0.01),
]
PROBLEMS = {
    "tracebacks": "tracebacks",
    "hangs": "hangs",
    "silent": "silently accepted bad values",
    "multiline": "multi-line errors",
    "refused_valid": "refused valid controls",
    "bad_status": "other exit statuses",
    "damaged": "damaged inputs",
    "leftovers": "leftovers",
}
#: seconds a case may run before it counts as a hang: 20 s for the measured family and for a FIFO,
#: a directory or a device given as an input file, 60 s for the rest
TIME_LIMIT = 60.0
FILE_LIMIT = 20.0

# ---- the commands the families vary: each runs (exit 0) as written -------------------------------
BASES = {
    "point": "point --model deepseek-v2-lite --hardware hgx-h200 --gpus 8 --batch 8 --context 1024 --json",
    "point_mtp": "point --model deepseek-r1 --hardware hgx-h200 --gpus 8 --batch 8 --context 1024 --mtp 2 "
    "--acceptance 0.7 --json",
    "size": "size --model deepseek-v2-lite --hardware hgx-h200 --gpus 8 --serving decode --search limit "
    "--min-tps-user 20 --demand-tps 1000 --json",
    "frontier": "frontier --model deepseek-v2-lite --hardware hgx-h200 --gpus 8 --serving decode "
    "--search limit --json",
    "frontier_r1": "frontier --model deepseek-r1 --hardware hgx-h200 --gpus 8 --serving decode "
    "--search limit --json",
    "workload": "frontier --model deepseek-r1 --hardware hgx-h200 --workload chat --json",
    "compare": "compare --model deepseek-v2-lite --hardware hgx-h200 hgx-b200 --serving decode "
    "--search limit --gpus 8 --json",
    "sensitivity": "sensitivity --model deepseek-v2-lite --hardware hgx-h200 --gpus 8 --serving decode "
    "--no-symbolic --json",
}
BASES = {k: v.split() + (["--csv", "", "--plot", ""] if k == "compare" else []) for k, v in BASES.items()}
#: every numeric option: the command that takes it, the option, how its value is written ({} the
#: number) and a number it runs with
NUM_FLAGS = [
    (base, flag, "{}", typical)
    for base, flag, typical in [
        ("point", "--gpus", "8"),
        ("point", "--batch", "8"),
        ("point", "--context", "1024"),
        ("point", "--tp-attn", "8"),
        ("point", "--ep", "8"),
        ("point", "--expert-slots", "64"),
        ("point_mtp", "--mtp", "2"),
        ("point_mtp", "--acceptance", "0.7"),
        ("size", "--demand-tps", "1000"),
        ("size", "--users", "50"),
        ("size", "--requests-per-s", "2"),
        ("size", "--min-tps-user", "20"),
        ("size", "--pue", "1.3"),
        ("size", "--usd-per-kwh", "0.08"),
        ("size", "--years", "4"),
        ("size", "--usd-per-unit", "316000"),
        ("size", "--usd-per-gpu-hour", "5.408"),
        ("size", "--watts-per-gpu", "1275"),
        ("size", "--isl", "1024"),
        ("size", "--osl", "1024"),
        ("size", "--power-budget-mw", "2"),
        ("frontier", "--isl", "1024"),
        ("frontier", "--osl", "512"),
        ("frontier", "--context", "1536"),
        ("frontier", "--max-gpus", "16"),
        ("frontier_r1", "--mtp", "2"),
        ("frontier_r1", "--acceptance", "2.3"),
        ("compare", "--levels", "50"),
        ("compare", "--threshold", "10"),
        ("compare", "--at", "50"),
        ("sensitivity", "--at", "50"),
    ]
] + [
    ("workload", "--slo", "ttft_p99={}", "2"),
    ("workload", "--slo", "ttft_p{}=2", "99"),
    ("sensitivity", "--what-if", "su_bandwidth={}", "2"),
]
#: options that replace another of their command's (a demand, a fixed instance size)
REPLACES = {
    "--users": "--demand-tps",
    "--requests-per-s": "--demand-tps",
    "--power-budget-mw": "--demand-tps",
    "--max-gpus": "--gpus",
}
OVERRIDES = ("--usd-per-unit", "--usd-per-gpu-hour", "--watts-per-gpu")


def with_flag(base: str, flag: str, value: str) -> list[str]:
    """``BASES[base]`` with ``flag`` set to ``value`` (and what it needs or replaces)."""
    argv = list(BASES[base])
    drop = REPLACES.get(flag)
    if drop in argv:
        i = argv.index(drop)
        del argv[i : i + 2]
    if flag == "--at" and base == "compare":
        argv.append("--explain")
    if flag in argv:
        argv[argv.index(flag) + 1] = value
    else:
        argv += [flag, value]
    return argv


# ---- numbers with separators inside ------------------------------------------------------------
SEPARATORS = {
    "comma": ",",
    "underscore": "_",
    "space": " ",
    "no-break space": "\u00a0",
    "narrow no-break space": "\u202f",
    "thin space": "\u2009",
    "apostrophe": "'",
    "right quote": "\u2019",
    "colon": ":",
    "arabic decimal mark": "\u066b",
    "arabic thousands mark": "\u066c",
    "fullwidth comma": "\uff0c",
}
DIGITS = {"fullwidth digits": "０１２３４５６７８９", "arabic-indic digits": "٠١٢٣٤٥٦٧٨٩"}


def separated(number: str, rng: random.Random) -> tuple[str, str]:
    """``number`` (ASCII digits, perhaps with a point) written with a separator or foreign digits
    inside: (what was done, the text).  No reader should take any of them as a number: a comma or
    a point may mark thousands or decimals, and a space, an underscore or a colon glue digits that
    a parser would join, multiply or read in base 60."""
    style = rng.random()
    if style < 0.12:
        name = rng.choice(sorted(DIGITS))
        return name, "".join(DIGITS[name][int(c)] if c.isdigit() else c for c in number)
    if style < 0.22:  # dots as thousands marks: at least two, so that it is no decimal number
        digits = number.replace(".", "")
        while len(digits) < 3:
            digits += str(rng.randint(1, 9))
        a = rng.randint(1, len(digits) - 2)
        b = rng.randint(a + 1, len(digits) - 1)
        return "dots", f"{digits[:a]}.{digits[a:b]}.{digits[b:]}"
    name = rng.choice(sorted(SEPARATORS))
    sep = SEPARATORS[name]
    whole, point, frac = number.partition(".")
    if point and rng.random() < 0.5:  # the separator as the decimal mark
        return name, whole + sep + frac
    if len(whole) >= 4 and rng.random() < 0.5:  # grouped in thousands
        groups = []
        while len(whole) > 3:
            groups.insert(0, whole[-3:])
            whole = whole[:-3]
        return name, sep.join([whole, *groups]) + point + frac
    if len(whole) < 2:
        whole += str(rng.randint(0, 9))
    k = rng.randint(1, len(whole) - 1)
    return name, whole[:k] + sep + whole[k:] + point + frac


# ---- hardware spec facts -----------------------------------------------------------------------
SPEC_SECTIONS = ("gpu", "scale_up", "scale_out", "host_memory", "local_storage", "system", "efficiency")
FACT = re.compile(r'^(\s+)([a-z0-9_]+): \{value: ("[^"]*"|[^,}\[]+?)\s*[,}]')


@dataclass
class Fact:
    path: str  #: section.key, or section.group.key (gpu.dense_flops.fp8)
    line: int
    token: str  #: the value as written (quoted or bare)
    span: tuple[int, int]


def spec_facts(text: str) -> list[Fact]:
    """The ``key: {value: ...}`` facts of a hardware spec's main sections."""
    out, section, group = [], "", ""
    for i, line in enumerate(text.splitlines()):
        top = re.match(r"^([a-z_]+):", line)
        if top:
            section, group = top.group(1), ""
            continue
        sub = re.match(r"^  ([a-z_]+):\s*$", line)
        if sub:
            group = sub.group(1)
            continue
        m = FACT.match(line)
        if m and section in SPEC_SECTIONS:
            key = (
                f"{section}.{group}.{m.group(2)}"
                if group and len(m.group(1)) > 2
                else f"{section}.{m.group(2)}"
            )
            out.append(Fact(key, i, m.group(3), m.span(3)))
    return out


def set_fact(text: str, fact: Fact, token: str) -> str:
    lines = text.splitlines()
    a, b = fact.span
    lines[fact.line] = lines[fact.line][:a] + token + lines[fact.line][b:]
    return "\n".join(lines) + "\n"


def add_fact(text: str, after: Fact, key: str, token: str) -> str:
    """``text`` with a fact ``key`` added below ``after`` (same indentation)."""
    lines = text.splitlines()
    indent = re.match(r"^(\s*)", lines[after.line]).group(1)
    # below the fact's last line: its source and note may continue on more-indented lines
    end = after.line + 1
    while end < len(lines) and lines[end].startswith(indent + " "):
        end += 1
    lines.insert(end, f'{indent}{key}: {{value: {token}, kind: assumed, source: "a test"}}')
    return "\n".join(lines) + "\n"


def mutate_yaml(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    r = rng.random()
    if r < 0.06:
        return text + "\n" + BOMB
    if r < 0.12:
        i = rng.randrange(len(lines))
        return "\n".join(lines[:i] + lines[i + 1 :])
    if r < 0.18:
        i = rng.randrange(len(lines))
        return "\n".join(lines + [lines[i]])
    if r < 0.22:
        return text[: rng.randrange(len(text))]
    for _ in range(20):
        i = rng.randrange(len(lines))
        m = VALUE.search(lines[i])
        if m:
            a, b = m.span(3)
            lines[i] = lines[i][:a] + rng.choice(JUNK) + lines[i][b:]
            return "\n".join(lines)
    return text


def mutate_json(text: str, rng: random.Random) -> str:
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    keys = [k for k, v in doc.items() if not isinstance(v, dict | list)]
    if not keys or rng.random() < 0.1:
        return text[: rng.randrange(len(text))]
    k = rng.choice(keys)
    choice = rng.choice(["huge", "neg", "str", "float", "null", "drop", "list"])
    out = json.dumps(doc)
    if choice == "huge":
        return out.replace(json.dumps({k: doc[k]})[1:-1], f'"{k}": {"9" * 5000}')
    doc[k] = {"neg": -7, "str": "many", "float": 1e308, "null": None, "list": [1, 2], "drop": None}[choice]
    if choice == "drop":
        del doc[k]
    return json.dumps(doc)


def csv_text(rows: list[list[object]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


# ---- running a case ----------------------------------------------------------------------------
@dataclass
class Case:
    argv: list[str]
    label: str
    #: "any": exit 0 or 2 may be right; "refuse": exit 2 is; "valid": exit 0 is (a control)
    expect: str = "any"
    #: on exit 0, the run's stdout -> what is wrong with the result (None: nothing)
    check: Callable[[str], str | None] | None = None
    protect: list[Path] = field(default_factory=list)
    #: words one of which a refusal should contain: the field under test
    mention: tuple[str, ...] = ()
    timeout: float = TIME_LIMIT
    #: the ``stdout`` family: how standard output is broken (full, closed, pipe)
    stdout: str = ""
    #: the hostile text itself, where a file holds it (shown with the problems)
    detail: str = ""


class Hang(BaseException):
    """Raised by the alarm in a case that outlives its time limit."""


def _alarm(signum: int, frame: object) -> None:
    raise Hang


class Run:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.families: dict[str, Counter[str]] = {}
        self.totals: Counter[str] = Counter()
        self.labels: dict[str, Counter[str]] = {}
        self.examples: dict[tuple[str, str], list[str]] = {}

    def __call__(self, family: str, case: Case) -> None:
        fam = self.families.setdefault(family, Counter())
        fam["inputs"] += 1
        before = {p: p.read_bytes() for p in case.protect if p.is_file()}
        if case.stdout:
            rc, out, err, escaped = self._subprocess(case)
        else:
            rc, out, err, escaped = self._in_process(case)
        found: list[tuple[str, str]] = []
        lines = [x for x in err.splitlines() if x.strip()]
        if escaped == "hang":
            found.append(("hangs", f"no exit in {case.timeout:g} s"))
        elif escaped:
            found.append(("tracebacks", escaped[:200]))
        elif "Traceback" in err or (case.stdout and "Exception ignored" in err):
            found.append(("tracebacks", err[-200:]))
            fam["other"] += 1
        else:
            fam["exit0" if rc == 0 else "exit2" if rc == 2 else "other"] += 1
            if case.stdout:
                if len(lines) > 1:
                    found.append(("multiline", err[:200]))
                if rc == 0 and case.stdout != "pipe":
                    found.append(("silent", "exit 0 with nothing written and no error"))
                elif rc not in (0, 2):
                    found.append(("bad_status", f"exit {rc}: {err[-200:]}"))
            elif rc not in (0, 2, 130):
                found.append(("bad_status", f"exit {rc}: {err[-200:]}"))
            elif rc == 2 and len(lines) != 1:
                found.append(("multiline", err[:300]))
            elif rc == 0 and case.expect == "refuse":
                found.append(("silent", "exit 0"))
            elif rc == 2 and case.expect == "valid":
                found.append(("refused_valid", err.strip()[:200]))
            elif rc == 0 and case.check is not None:
                why = case.check(out)
                if why:
                    found.append(("silent", why))
            if (
                rc == 2
                and case.mention
                and not any(
                    m.lower() in err.lower() or m.lower().replace("-", "_") in err.lower()
                    for m in case.mention
                )
            ):
                fam["off_target"] += 1
                if len(self.examples.setdefault((family, "off target"), [])) < 2:
                    self.examples[(family, "off target")].append(
                        self._example("off target", family, case, err.strip()[:200])
                    )
        for p, b in before.items():
            if not p.is_file() or p.read_bytes() != b:
                found.append(("damaged", str(p)))
        left = [q for q in self.work.rglob("*") if ".tmp" in q.name]
        if left:
            found.append(("leftovers", ", ".join(map(str, left[:3]))))
            for q in left:
                q.unlink()
        if found:
            fam["problems"] += 1
        for kind, why in found:
            self.totals[kind] += 1
            self.labels.setdefault(family, Counter())[f"{PROBLEMS[kind]}: {case.label}"] += 1
            ex = self.examples.setdefault((family, kind), [])
            if len(ex) < 3:
                ex.append(self._example(PROBLEMS[kind], family, case, why))

    def _example(self, what: str, family: str, case: Case, why: str) -> str:
        detail = f"\n    input: {ascii(case.detail)[1:-1][:160]}" if case.detail else ""
        return f"{what} [{family}] {case.label}{detail}\n    run: {self._argv(case)}\n    got: {why}"

    @staticmethod
    def _argv(case: Case) -> str:
        def show(a: str) -> str:
            a = a if len(a) <= 70 else a[:67] + "..."
            return a if a and a.isprintable() and " " not in a else ascii(a)

        head = f"(stdout {case.stdout}) python -m planner " if case.stdout else "moe-planner "
        return head + " ".join(show(a) for a in case.argv)

    @staticmethod
    def _in_process(case: Case) -> tuple[int | None, str, str, str]:
        out, err = io.StringIO(), io.StringIO()
        rc: int | None = None
        escaped = ""
        try:
            signal.setitimer(signal.ITIMER_REAL, case.timeout)
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    rc = main(case.argv)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
        except Hang:
            escaped = "hang"
        except BaseException as exc:  # noqa: BLE001 - the point is to catch what escapes
            escaped = f"{type(exc).__name__}: {exc}"
        return rc, out.getvalue(), err.getvalue(), escaped

    @staticmethod
    def _subprocess(case: Case) -> tuple[int | None, str, str, str]:
        cmd = [sys.executable, "-m", "planner", *case.argv]
        if case.stdout == "closed":
            cmd = ["sh", "-c", 'exec "$@" >&-', "sh", *cmd]
        with contextlib.ExitStack() as stack:
            if case.stdout == "full":
                sink: object = stack.enter_context(open("/dev/full", "w"))
            else:
                sink = subprocess.PIPE if case.stdout == "pipe" else None
            p = subprocess.Popen(cmd, cwd=ROOT, stdout=sink, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
            if p.stdout is not None:
                p.stdout.close()  # the reader goes away before anything is written
            try:
                _, err = p.communicate(timeout=case.timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                return None, "", "", "hang"
        return p.returncode, "", err.decode("utf-8", "replace"), ""


def quiet(argv: list[str]) -> tuple[int, str, str]:
    """Run a command for the fuzzer's own set-up (not counted)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    except SystemExit as exc:
        rc = exc.code if isinstance(exc.code, int) else 2
    return rc, out.getvalue(), err.getvalue()


def _json(out: str) -> dict:
    try:
        doc = json.loads(out)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


# ---- the families ------------------------------------------------------------------------------
class Inputs:
    def __init__(self, work: Path, rng: random.Random) -> None:
        self.work = work
        self.rng = rng
        # each bundled system as one self-contained file (its datasheet and its calibration)
        from planner.specs.registry import bundled_hardware_text

        self.hw = {p: bundled_hardware_text(p.stem) for p in sorted((ROOT / "hardware_specs").glob("*.yaml"))}
        self.facts = {p: spec_facts(t) for p, t in self.hw.items()}
        self.models = {p: p.read_text() for p in sorted((ROOT / "planner" / "model_specs").glob("*.yaml"))}
        self.configs = sorted((ROOT / "tests" / "data").glob("*/config.json"))
        self.plan = (ROOT / "planner" / "fleet" / "data" / "plan_example.yaml").read_text()
        self.fifo = work / "pipe.csv"
        os.mkfifo(self.fifo)
        self.folder = work / "folder.csv"
        self.folder.mkdir()
        self.frontier_header: list[str] = []
        self.frontier_rows: list[list[str]] = []  # scorable rows of the public file
        self.runs_header: list[str] = []
        self.runs_rows: list[list[str]] = []  # scorable rows of the bundled runs

    # -- mutated files, hostile numbers, hostile output paths ------------------------------
    def _mutated_spec(self, i: int, texts: dict, what: str) -> Case:
        """``specs show`` of one of ``texts`` (a bundled spec each) with one mutation."""
        src = self.rng.choice(sorted(texts))
        p = self.work / f"spec{i % 7}.yaml"
        p.write_text(mutate_yaml(texts[src], self.rng))
        return Case(
            ["specs", "show", str(p)] + (["--json"] if self.rng.random() < 0.3 else []),
            f"mutated {what} spec",
            protect=[p],
        )

    def hardware(self, i: int) -> Case:
        return self._mutated_spec(i, self.hw, "hardware")

    def model(self, i: int) -> Case:
        return self._mutated_spec(i, self.models, "model")

    def config(self, i: int) -> Case:
        d = self.work / f"cfg{i % 5}"
        d.mkdir(exist_ok=True)
        (d / "config.json").write_text(mutate_json(self.rng.choice(self.configs).read_text(), self.rng))
        return Case(["specs", "show", str(d)], "mutated config.json", protect=[d / "config.json"])

    def plan_file(self, i: int) -> Case:
        p = self.work / "plan.yaml"
        p.write_text(mutate_yaml(self.plan, self.rng))
        return Case(["plan", str(p), "--json"], "mutated fleet plan", protect=[p])

    def numbers(self, i: int) -> Case:
        rng = self.rng
        argv = [
            "point",
            "--model",
            rng.choice(["deepseek-v2-lite", "mixtral-8x7b", "deepseek-r1"]),
            "--hardware",
            rng.choice(["hgx-h200", "hgx-b200", "mi355x"]),
            "--gpus",
            rng.choice(NUMBERS),
            "--batch",
            rng.choice(NUMBERS),
            "--context",
            rng.choice(NUMBERS),
        ]
        return Case(argv, "hostile point numbers")

    def outputs(self, i: int) -> Case:
        rng, work = self.rng, self.work
        spec = work / "mine.yaml"
        spec.write_text(self.hw[ROOT / "hardware_specs" / "hgx-h200.yaml"])
        (work / "dir").mkdir(exist_ok=True)
        target = rng.choice(
            [
                str(work / "out.csv"),
                str(work / "dir"),
                str(work / "no" / "x.csv"),
                str(spec),
                os.devnull,
                str(work / "a\nb.csv"),
                "-",
                str(work / "x.csv\0"),
                str(work / ("n" * 300 + ".csv")),
            ]
        )
        plot = rng.choice(["", str(work / "p.png"), target, str(work / "p.xyz")])
        return Case(
            [
                "frontier",
                "--model",
                "deepseek-v2-lite",
                "--hardware",
                str(spec),
                "--gpus",
                "8",
                "--serving",
                "decode",
                "--csv",
                target,
                "--plot",
                plot,
            ],
            "hostile output paths",
            protect=[spec],
        )

    # -- separators ---------------------------------------------------------------------------
    def separators(self, i: int) -> Case:
        rng = self.rng
        where = rng.choice(
            ["spec quantity"] * 4
            + ["spec number"] * 2
            + ["model"] * 2
            + ["option"] * 5
            + ["plan", "profile", "trace"]
        )
        if where in ("spec quantity", "spec number"):
            src = rng.choice(sorted(self.hw))
            quoted = where == "spec quantity"
            facts = [
                f for f in self.facts[src] if f.token.startswith('"') == quoted and re.search(r"\d", f.token)
            ]
            fact = rng.choice(facts)
            m = re.search(r"\d+(?:\.\d+)?", fact.token)
            kind, num = separated(m.group(0), rng)
            token = fact.token[: m.start()] + num + fact.token[m.end() :]
            p = self.work / f"sep{i % 5}.yaml"
            p.write_text(set_fact(self.hw[src], fact, token), encoding="utf-8")
            return Case(
                ["specs", "show", str(p)] + (["--json"] if rng.random() < 0.3 else []),
                f"{kind} in a spec {'quantity' if quoted else 'number'}",
                "refuse",
                protect=[p],
                mention=(fact.path,),
                detail=f"{src.name}: {fact.path}: {token}",
            )
        if where in ("model", "plan"):
            text = self.models[rng.choice(sorted(self.models))] if where == "model" else self.plan
            lines = text.splitlines()
            number = re.compile(r"^\s*(?:- )?([a-z_]+): (\d+(?:\.\d+)?)\s*(#.*)?$")
            k = rng.choice([k for k, x in enumerate(lines) if number.match(x)])
            m = number.match(lines[k])
            kind, num = separated(m.group(2), rng)
            lines[k] = lines[k][: m.start(2)] + num + lines[k][m.end(2) :]
            p = self.work / f"sep{i % 5}.yaml"
            p.write_text("\n".join(lines) + "\n", encoding="utf-8")
            argv = ["specs", "show", str(p)] if where == "model" else ["plan", str(p), "--json"]
            return Case(
                argv,
                f"{kind} in a {where} spec number" if where == "model" else f"{kind} in a plan number",
                "refuse",
                protect=[p],
                mention=(m.group(1),),
                detail=lines[k].strip(),
            )
        if where == "profile":
            loads = [rng.randint(200, 5000) for _ in range(24)]
            h = rng.randrange(24)
            kind, num = separated(str(loads[h]), rng)
            if rng.random() < 0.5:
                rows = [["hour", "output_tps"]] + [[k, num if k == h else v] for k, v in enumerate(loads)]
            else:
                rows = [[num if k == h else v] for k, v in enumerate(loads)]
            p = self.work / "sep_profile.csv"
            p.write_text(csv_text(rows), encoding="utf-8")
            return Case(
                self._size_profile(p),
                f"{kind} in a profile's load",
                "refuse",
                protect=[p],
                detail=f"hour {h}: {num}",
            )
        if where == "trace":
            header, rows = self._trace()
            r, c = rng.randrange(len(rows)), rng.randrange(4)
            kind, num = separated(str(rows[r][c]), rng)
            rows[r][c] = num
            p = self.work / "sep_trace.csv"
            p.write_text(csv_text([header, *rows]), encoding="utf-8")
            return Case(
                self._trace_argv(p),
                f"{kind} in a trace cell",
                "refuse",
                protect=[p],
                mention=(header[c],),
                detail=f"line {r + 2}: {header[c]} = {num}",
            )
        base, flag, form, typical = rng.choice(NUM_FLAGS)
        kind, num = separated(typical, rng)
        num = form.format(num)
        if flag in OVERRIDES and rng.random() < 0.5:
            num = "hgx-h200=" + num
        return Case(
            with_flag(base, flag, num), f"{kind} in {flag}", "refuse", mention=(flag, flag.lstrip("-"))
        )

    # -- magnitudes ---------------------------------------------------------------------------
    #: the facts with a PLAUSIBLE range: fact -> (range, dimension)
    SPANS = {
        "gpu.dense_flops.fp8": ("flops", "flops"),
        "gpu.dense_flops.bf16": ("flops", "flops"),
        "gpu.dense_flops.fp4": ("flops", "flops"),
        "gpu.hbm_capacity": ("hbm_capacity", "bytes"),
        "gpu.hbm_bandwidth": ("hbm_bandwidth", "bandwidth"),
        "gpu.tdp": ("tdp", "power"),
        "scale_up.bandwidth": ("scale_up", "bandwidth"),
        "scale_up.bridge_bandwidth": ("scale_up", "bandwidth"),
        "scale_out.bandwidth": ("scale_out", "bandwidth"),
        "host_memory.capacity": ("host_capacity", "bytes"),
        "host_memory.bandwidth": ("host_bandwidth", "bandwidth"),
        "local_storage.capacity": ("nvme_capacity", "bytes"),
        "local_storage.bandwidth": ("nvme_bandwidth", "bandwidth"),
        "system.power_per_gpu": ("power_per_gpu", "power"),
        "system.power_per_gpu_typical": ("power_per_gpu", "power"),
        "scale_up.latency": ("latency", "time"),
        "scale_out.latency": ("latency", "time"),
    }
    PREFIXES = ["", "k", "M", "G", "T", "P", "E"]
    #: size's cost options, each with values outside the range it states
    COST_OPTIONS = [
        ("--usd-per-gpu-hour", ["0.001", "1001", "1e6", "5408", "1e-9"]),
        ("--usd-per-unit", ["1", "700", "1e12", "8.1e7"]),
        ("--watts-per-gpu", ["1", "9", "20001", "1e6"]),
        ("--usd-per-kwh", ["10.5", "1e3"]),
        ("--pue", ["3.5", "100"]),
    ]

    def magnitudes(self, i: int) -> Case:
        rng = self.rng
        src = rng.choice(sorted(self.hw))
        facts = {f.path: f for f in self.facts[src]}
        r = rng.random()
        p = self.work / f"mag{i % 5}.yaml"
        if r < 0.15:  # the cost options of size, outside the ranges they state
            flag, values = rng.choice(self.COST_OPTIONS)
            v = rng.choice(values)
            return Case(
                with_flag("size", flag, v),
                f"size {flag} out of its range",
                "refuse",
                mention=(flag, flag.lstrip("-")),
                detail=v,
            )
        if r < 0.30:  # prices: a GPU-hour or a unit's purchase far outside what any GPU costs
            if rng.random() < 0.5:
                fact = facts["system.price_per_gpu_hour"]
                v = rng.choice(
                    [
                        "5408 USD/h",
                        "0.005 USD/h",
                        "0.0001 USD/h",
                        "5.408 USD/s",
                        "540800 USD/h",
                        "5.4e12 USD/h",
                        "2000 USD/h",
                        "1e-300 USD/h",
                        "1e300 USD/h",
                    ]
                )
                lo, hi, _ = PRICE_RANGES["price_per_gpu_hour"]
                per = parse_quantity(v, "usd_per_hour")
            else:
                fact = facts["system.price_per_unit"]
                units = int(facts["system.gpus_per_unit"].token)
                v = rng.choice([f"{units * x:g} USD" for x in (1, 50, 99, 1.1e7, 1e9, 1e15, 0.01)])
                lo, hi, _ = PRICE_RANGES["price_per_gpu"]
                per = parse_quantity(v, "usd") / units
            if lo <= per <= hi:
                raise AssertionError(f"a price in range: {v}")
            p.write_text(set_fact(self.hw[src], fact, f'"{v}"'), encoding="utf-8")
            return Case(
                ["specs", "show", str(p)],
                f"{fact.path} far out",
                "refuse",
                protect=[p],
                mention=(fact.path,),
                detail=f"{src.name}: {v}",
            )
        if r < 0.40:  # counts and overheads no system has
            what = rng.choice(
                ["sm_count", "gpus_per_system", "domain_size", "kernel_overhead", "step_overhead"]
            )
            unit = int(facts["system.gpus_per_unit"].token)
            if what == "sm_count" and "gpu.sm_count" in facts:
                fact, token = (
                    facts["gpu.sm_count"],
                    rng.choice(["1000000", "1000000000000", "9007199254740992"]),
                )
            elif what == "gpus_per_system":  # a multiple of the unit, so that only its size is wrong
                fact = facts["system.gpus_per_system"]
                token = str(rng.choice([10**12, 2**53]) // unit * unit)
            elif what in ("kernel_overhead", "step_overhead"):
                fact, token = (
                    facts[f"efficiency.{what}"],
                    rng.choice(['"5 h"', '"1 year"', '"1e9 s"', '"3 days"']),
                )
            else:
                fact = facts["scale_up.domain_size"]
                token = rng.choice([str(MAX_DOMAIN + 1), "5000", "1000000", str(2**40)])
            stated = "above MAX_DOMAIN" if fact.path == "scale_up.domain_size" else "no range stated"
            p.write_text(set_fact(self.hw[src], fact, token), encoding="utf-8")
            return Case(
                ["specs", "show", str(p)],
                f"{fact.path} absurd ({stated})",
                "refuse",
                protect=[p],
                mention=(fact.path,),
                detail=f"{src.name}: {token}",
            )
        fact = rng.choice([f for path, f in facts.items() if path in self.SPANS])
        span, dim = self.SPANS[fact.path]
        lo, hi, unit_si = PLAUSIBLE[span]
        inner = fact.token.strip('"')
        v0 = parse_quantity(inner, dim)
        m = re.match(r"^([\d.]+)\s*([kMGTPE]?)(.*)$", inner)
        text, how = "", ""
        if m and dim != "time" and rng.random() < 0.5:  # a unit slip: a prefix or more too large or small
            old = self.PREFIXES.index(m.group(2))
            steps = [
                k
                for k in (-3, -2, -1, 1, 2, 3)
                if 0 <= old + k < len(self.PREFIXES)
                and not lo / 2 <= v0 * 1000.0**k <= hi * 2
                and not m.group(3).startswith("i")
            ]
            if steps:
                k = rng.choice(steps)
                text, how = f"{m.group(1)} {self.PREFIXES[old + k]}{m.group(3).strip()}", "unit slip"
        if not text:  # a wrong number: far above or below the range
            above = dim == "time" or rng.random() < 0.5
            x = hi * 10 ** rng.uniform(0.5, 30) if above else lo / 10 ** rng.uniform(0.5, 30)
            text, how = f"{x:.4g} {unit_si}", "far above" if above else "far below"
            if m and rng.random() < 0.5:  # in the unit the spec writes it in
                text = f"{x / v0 * float(m.group(1)):.4g} {m.group(2)}{m.group(3).strip()}"
        p.write_text(set_fact(self.hw[src], fact, f'"{text}"'), encoding="utf-8")
        return Case(
            ["specs", "show", str(p)] + (["--json"] if rng.random() < 0.3 else []),
            f"{fact.path} {how}",
            "refuse",
            protect=[p],
            mention=(fact.path,),
            detail=f"{src.name}: {inner} -> {text}",
        )

    # -- demand profiles ----------------------------------------------------------------------
    HOUR_JUNK = [
        "24",
        "-1",
        "25",
        "100",
        "1.5",
        "23.5",
        "",
        "x",
        "1e9",
        "nan",
        "inf",
        "-0.5",
        "24.0",
        "1_2",
        "１２",
        "12h",
        "0x5",
    ]
    LOAD_JUNK = [
        "abc",
        "1,000",
        "1_000",
        "1 000",
        "nan",
        "inf",
        "-inf",
        "-5",
        "1e400",
        "0x10",
        "１０００",
        "true",
        "5%",
        "∞",
        "1e3.5",
        "--5",
        "5-",
        "1.2.3",
        "(5)",
    ]
    HEADER_JUNK = [
        ["tokens"],
        ["load"],
        ["output tps"],
        ["hour", "load"],
        ["hour", "output_tps", "users"],
        ["output_tps", "users"],
        ["hour", "hour"],
        ["hours", "output_tps"],
        ["hour", "output_tps", ""],
        ["time", "output_tps"],
        ["hour;output_tps"],
    ]

    def _size_profile(self, path: Path) -> list[str]:
        argv = list(BASES["size"])
        i = argv.index("--demand-tps")
        del argv[i : i + 2]
        return argv + ["--profile", str(path)]

    def profiles(self, i: int) -> Case:
        rng = self.rng
        loads = [rng.randint(200, 5000) for _ in range(24)]
        hours = list(range(24))
        rng.shuffle(hours)
        unit = rng.choice(["output_tps", "users", "requests_per_s"])
        headered: list[list[object]] = [["hour", unit]] + [[h, loads[h]] for h in hours]
        plain: list[list[object]] = [[v] for v in loads]

        def read_as_written(out: str) -> str | None:
            got = _json(out).get("settings", {}).get("profile")
            if (
                got is None
                or len(got) != 24
                or any(abs(a - b) > 1e-9 * b for a, b in zip(got, loads, strict=True))
            ):
                return f"read as {got}, written {loads}"
            return None

        kind = rng.choice(
            ["control"] * 3
            + ["two numbers"] * 2
            + ["hour out of range"] * 2
            + ["hour repeated"]
            + ["bom"] * 2
            + ["junk load"] * 2
            + ["count", "zero", "header", "delimiter", "encoding"]
            + ["yaml"] * 2
            + ["file"]
        )
        suffix, expect, check, text, data = ".csv", "refuse", None, "", b""
        label, detail = kind, ""
        if kind == "control":
            variant = rng.choice(["headered", "plain", "yaml list", "yaml mapping"])
            label = f"control: {variant}"
            expect, check = "valid", read_as_written
            if variant == "headered":
                text = csv_text(headered)
            elif variant == "plain":
                text = csv_text(plain)
            elif variant == "yaml list":
                suffix, text = ".yaml", "".join(f"- {v}\n" for v in loads)
            else:
                suffix, text = ".yaml", f"unit: {unit}\nhourly: {loads}\n"
        elif kind == "two numbers":  # no header: hour and load, load and hour, or a decimal comma
            variant = rng.choice(["hour,load", "load,hour", "decimal comma"])
            label = f"two numbers a row, no header ({variant})"
            if variant == "hour,load":
                text = csv_text([[h, loads[h]] for h in hours])
            elif variant == "load,hour":
                text = csv_text([[loads[h], h] for h in hours])
            else:
                text = csv_text([[v // 1000 or 1, f"{v % 1000:03d}"] for v in loads])
        elif kind == "hour out of range":
            k = rng.randrange(1, 25)
            headered[k][0] = rng.choice(self.HOUR_JUNK)
            text, detail = csv_text(headered), f"row {k + 1}: {headered[k]}"
        elif kind == "hour repeated":
            a, b = rng.sample(range(1, 25), 2)
            headered[a][0] = headered[b][0]
            if rng.random() < 0.5:
                headered.append([headered[b][0], rng.randint(200, 5000)])
            text = csv_text(headered)
        elif kind == "bom":  # a BOM: refused, or read exactly as written
            expect, check = "any", read_as_written
            variant = rng.choice(["headered", "plain"])
            label = f"bom ({variant})"
            text = "\ufeff" + csv_text(headered if variant == "headered" else plain)
        elif kind == "junk load":
            rows = headered if rng.random() < 0.5 else plain
            k = rng.randrange(1 if rows is headered else 0, len(rows))
            rows[k][-1] = rng.choice(self.LOAD_JUNK)
            text, detail = csv_text(rows), f"row {k + 1}: {rows[k]}"
        elif kind == "count":
            n = rng.choice([0, 1, 12, 23, 25, 48])
            label = f"{n} rows"
            text = csv_text([[rng.randint(200, 5000)] for _ in range(n)])
        elif kind == "zero":
            text = csv_text(
                [[0] for _ in range(24)]
                if rng.random() < 0.5
                else [["hour", "users"]] + [[h, 0] for h in range(24)]
            )
        elif kind == "header":
            head = rng.choice(self.HEADER_JUNK)
            detail = ",".join(head)
            text = csv_text(
                [head] + [[h, v][-len(head) :] if len(head) <= 2 else [h, v, v] for h, v in enumerate(loads)]
            )
        elif kind == "delimiter":
            sep = rng.choice([";", "\t", " ", "|"])
            label = f"delimiter {sep!r}"
            text = "".join(f"{h}{sep}{loads[h]}\n" for h in hours)
        elif kind == "encoding":
            variant = rng.choice(["utf-16", "latin-1 byte", "nul bytes", "binary"])
            label = f"encoding: {variant}"
            good = csv_text(plain)
            data = {
                "utf-16": good.encode("utf-16"),
                "latin-1 byte": good.encode() + b"\xff\xfe\n",
                "nul bytes": good.replace("\n", "\0\n", 3).encode(),
                "binary": bytes(rng.randrange(256) for _ in range(300)),
            }[variant]
        elif kind == "yaml":
            suffix = ".yaml"
            variant = rng.choice(
                [
                    "underscore",
                    "sexagesimal",
                    "nan",
                    "text",
                    "23 items",
                    "unit",
                    "key",
                    "nested",
                    "negative",
                    "date",
                    "map of hours",
                ]
            )
            label = f"yaml: {variant}"
            vals: list[object] = list(loads)
            k = rng.randrange(24)
            if variant == "underscore":
                vals[k] = f"{loads[k] // 10}_{loads[k] % 10}"
            elif variant == "sexagesimal":
                vals[k] = f"{loads[k] // 60}:{loads[k] % 60:02d}"
            elif variant == "nan":
                vals[k] = rng.choice([".nan", ".inf", "-.inf"])
            elif variant == "text":
                vals[k] = rng.choice(["'1000'", "many", "1,000", "1 000"])
            elif variant == "23 items":
                vals = vals[:23]
            elif variant == "negative":
                vals[k] = -loads[k]
            elif variant == "date":
                vals[k] = "2026-01-01"
            elif variant == "nested":
                vals[k] = [loads[k]]
            text, detail = "".join(f"- {v}\n" for v in vals), f"item {k}: {vals[k] if k < len(vals) else ''}"
            if variant == "unit":
                text = f"unit: {rng.choice(['tokens', 'Users', '', 'rps ', 'gpus'])!r}\nhourly: {loads}\n"
            elif variant == "key":
                text = f"unit: users\nhourly: {loads}\npeak: 5\n"
            elif variant == "map of hours":
                text = "".join(f"{h}: {v}\n" for h, v in enumerate(loads))
        else:  # a FIFO, a directory, a device, nothing
            target = rng.choice([self.fifo, self.folder, Path(os.devnull), self.work / "none.csv"])
            return Case(self._size_profile(target), f"file: {target.name}", "refuse", timeout=FILE_LIMIT)
        p = self.work / f"profile{i % 3}{suffix}"
        if data:
            p.write_bytes(data)
        else:
            p.write_text(text, encoding="utf-8")
        return Case(self._size_profile(p), label, expect, check, protect=[p], detail=detail)

    # -- workload traces ----------------------------------------------------------------------
    TRACE_JUNK = [
        "1e200",
        "1e308",
        "-1e308",
        "1e309",
        "inf",
        "-inf",
        "nan",
        "NaN",
        "-1",
        "-0.5",
        "",
        "abc",
        "0x10",
        "1e400",
        "1e+200",
        "9" * 400,
    ]

    def _trace(self) -> tuple[list[str], list[list[object]]]:
        rng = self.rng
        session = rng.random() < 0.5
        t, rows = 0.0, []
        for _ in range(rng.randint(3, 30)):
            t += rng.uniform(0.01, 30)
            inp = rng.randint(50, 8000)
            rows.append(
                [f"{t:.3f}", inp, rng.randint(10, 2000), rng.choice([0, rng.randrange(inp)])]
                + ([f"s{rng.randint(1, 5)}"] if session else [])
            )
        return list(TRACE_COLUMNS) + (["session"] if session else []), rows

    def _trace_argv(self, path: Path) -> list[str]:
        argv = list(BASES["workload"])
        argv[argv.index("--workload") + 1] = str(path)
        return argv

    def traces(self, i: int) -> Case:
        rng = self.rng
        header, rows = self._trace()
        kind = rng.choice(
            ["value"] * 6
            + [
                "fractional tokens",
                "extra cell",
                "short row",
                "missing column",
                "renamed column",
                "repeated column",
                "bom",
                "rows",
                "cached above input",
                "delimiter",
                "file",
                "out of range",
            ]
        )
        label, expect, mention, text = kind, "refuse", (), ""
        r = rng.randrange(len(rows))
        detail = ""
        if kind == "value":
            c = rng.randrange(4)
            rows[r][c] = rng.choice(self.TRACE_JUNK)
            label, mention = f"{(rows[r][c] or 'empty')[:12]} in {header[c]}", (header[c],)
        elif kind == "out of range":
            c = rng.randrange(4)
            rows[r][c] = {
                0: rng.choice(["2e10", "-1", "1e11"]),
                1: rng.choice(["0", "1.5e8", "0.5"]),
                2: rng.choice(["0", "2e8", "0.5"]),
                3: rng.choice(["-1", "2e8"]),
            }[c]
            label, mention = f"{header[c]} out of range", (header[c],)
        elif kind == "fractional tokens":
            c = rng.choice([1, 2, 3])
            rows[r][c] = f"{int(rows[r][c]) + 0.5}"
            label, mention = f"fractional {header[c]}", (header[c],)
        elif kind == "extra cell":  # a thousands comma left unquoted splits a cell in two
            rows[r] = rows[r][:1] + [str(rows[r][1])[:1] or "1", str(rows[r][1])[1:] or "000"] + rows[r][2:]
        elif kind == "short row":
            rows[r] = rows[r][: rng.randint(1, 3)]
        elif kind == "missing column":
            c = rng.randrange(4)
            label, mention = f"no {header[c]} column", (header[c],)
            header = header[:c] + header[c + 1 :]
            rows = [x[:c] + x[c + 1 :] for x in rows]
        elif kind == "renamed column":
            c = rng.randrange(4)
            header[c] = rng.choice(
                [header[c].upper(), header[c] + " ", header[c].replace("_", " "), header[c].split("_")[0]]
            )
        elif kind == "repeated column":  # the second copy of a column would win silently
            c = rng.randrange(4)
            header = header + [header[c]]
            rows = [x + [rng.randint(1, 9000)] for x in rows]
        elif kind == "bom":  # a BOM: either outcome may be right
            expect = "any"
            text = "\ufeff"
        elif kind == "rows":
            n = rng.choice([0, 1])
            label = f"{n} rows" if rng.random() < 0.7 else "empty file"
            rows = rows[:n]
            if label == "empty file":
                header = []
        elif kind == "cached above input":
            rows[r][3] = int(rows[r][1]) + rng.randint(1, 100)
            mention = ("cached_tokens",)
        elif kind == "delimiter":
            sep = rng.choice([";", "\t", "|"])
            label = f"delimiter {sep!r}"
            text = "".join(sep.join(map(str, x)) + "\n" for x in [header, *rows])
        else:
            target = rng.choice([self.fifo, self.folder, self.work / "none.csv"])
            return Case(self._trace_argv(target), f"file: {target.name}", "refuse", timeout=FILE_LIMIT)
        if kind != "delimiter":
            text += csv_text([header, *rows] if header else [])
        if kind in (
            "value",
            "out of range",
            "fractional tokens",
            "extra cell",
            "short row",
            "cached above input",
        ):
            detail = f"line {r + 2}: {','.join(map(str, rows[r]))[:100]}"
        elif header:
            detail = f"header: {','.join(header)}"
        p = self.work / f"trace{i % 3}.csv"
        p.write_text(text, encoding="utf-8")
        return Case(self._trace_argv(p), label, expect, protect=[p], mention=mention, detail=detail)

    # -- measured points ----------------------------------------------------------------------
    FRONTIER_FIGURES = {
        "ttft_s": ["-1", "-0.001", "0", "1e308", "inf", "-inf", "1e9", "abc", "-0"],
        "tpot_s": ["-1", "0", "1e308", "inf", "-inf", "1e9", "abc"],
        "tps_per_user": ["-5", "0", "1e308", "inf", "1e9", "abc"],
        "tps_per_gpu_output": ["-5", "0", "1e308", "inf", "1e12", "abc"],
        "e2e_s": ["-1", "0", "1e308", "inf", "1e9"],
        "p99_ttft_s": ["-5", "0", "1e308", "inf", "-inf", "1e9"],
        "p99_tpot_s": ["-5", "0", "1e308", "inf", "1e9"],
    }
    FRONTIER_COUNTS = {
        "concurrency": ["1.5", "0.5", "0", "-1", "1e308", "inf"],
        "total_gpus": ["0", "-8", "1.5", "1e308", "inf"],
    }
    RUN_FIGURES = {
        "silicon_ttft_ms": ["-1", "0", "1e308", "inf", "nan", "abc", "", "1e7", "-0"],
        "silicon_tpot_ms": ["-1", "0", "1e308", "inf", "nan", "abc", "", "1e5"],
        "isl": ["-1", "0", "1.5", "1e308", "inf", "2.5e7"],
        "osl": ["-1", "0", "1.5", "1e308", "inf"],
        "concurrency": ["1.5", "-4", "0", "1e308", "inf", "0.5"],
    }
    LAYOUT_JUNK = ["1.5", "-1", "-8", "0", "0.5", "1e308", "inf", "2.5"]

    def prepare_measured(self) -> None:
        """Rows that score as they are: one of each (system, framework, serving) group of the public
        frontier file, and a sample of the bundled runs."""
        rng = random.Random(7)
        with open("/work/shared/validation/measured_frontiers.csv", newline="", encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        self.frontier_header, groups = rows[0], {}
        h = {c: k for k, c in enumerate(rows[0])}
        for r in rows[1:]:
            groups.setdefault((r[h["hardware"]], r[h["framework"]], r[h["serving"]]), []).append(r)
        sample = [rng.choice(g) for _, g in sorted(groups.items())]
        self.frontier_rows = self._scorable(["--frontiers"], self.frontier_header, sample)
        with open(
            ROOT / "planner" / "truth" / "data" / "measured_runs.csv", newline="", encoding="utf-8"
        ) as fh:
            rows = list(csv.reader(fh))
        self.runs_header = rows[0]
        self.runs_rows = self._scorable(["--runs"], self.runs_header, rng.sample(rows[1:], 60))

    def _scorable(self, flag: list[str], header: list[str], rows: list[list[str]]) -> list[list[str]]:
        p, out = self.work / "sample.csv", self.work / "sample_rows.csv"
        p.write_text(csv_text([header, *rows]), encoding="utf-8")
        rc, _, err = quiet(["validate", *flag, str(p), "--json", "--out", str(out)])
        if rc != 0:
            raise SystemExit(f"fuzz set-up: validate {flag[0]} on sample rows failed: {err.strip()}")
        with out.open(newline="", encoding="utf-8") as fh:
            scored = [r["scored"] == "True" for r in csv.DictReader(fh)]
        p.unlink()
        out.unlink()
        return [r for r, s in zip(rows, scored, strict=True) if s]

    @staticmethod
    def _layout_columns(flag: str, row: list[str], col: dict[str, int]) -> list[str]:
        """The layout columns the scoring reads for ``row``: an attention TP under attention data
        parallelism, the MoE columns of a dense model and the other serving mode's are not read."""
        if flag == "--frontiers":
            if not row[col["serving"]].startswith("disagg"):
                return ["ep"] + (
                    ["tp"] if row[col["dp_attention"]].lower() not in ("true", "1", "1.0") else []
                )
            out = []
            for role in ("prefill", "decode"):
                out += [f"{role}_ep", f"{role}_workers", f"{role}_gpus"]
                if row[col[f"{role}_dp_attention"]].lower() not in ("true", "1", "1.0"):
                    out.append(f"{role}_tp")
            return out
        from planner.specs.registry import load_model
        from planner.truth.runs import MODELS

        dense = load_model(MODELS[row[col["model_path"]]]).is_dense
        if row[col["mode"]] == "agg":
            roles, out = [""], ["batch_size", "pp_size"]
        else:
            roles, out = (
                ["decode_", "prefill_"],
                ["decode_batch_size", "decode_num_workers", "decode_pp_size"],
            )
        for role in roles:
            out += [f"{role}tp_size", f"{role}attention_dp_size"]
            if not dense:
                out += [f"{role}moe_tp_size", f"{role}moe_ep_size"]
        return [c for c in out if c in col]

    def measured(self, i: int) -> Case:
        rng = self.rng
        kind = rng.choice(["frontiers"] * 5 + ["runs"] * 5 + ["file"] * 2 + ["unscorable"])
        flag = "--frontiers" if kind == "frontiers" or rng.random() < 0.5 and kind != "runs" else "--runs"
        p, out = self.work / f"measured{i % 3}.csv", self.work / "measured_rows.csv"
        if out.exists():
            out.unlink()
        if kind == "file":
            target = rng.choice(
                ["fifo", "folder", "device", "missing", "empty", "header only", "binary", "utf-16"]
            )
            header = self.frontier_header if flag == "--frontiers" else self.runs_header
            path = {
                "fifo": self.fifo,
                "folder": self.folder,
                "device": Path(os.devnull),
                "missing": self.work / "none.csv",
            }.get(target, p)
            if path == p:
                data = {
                    "empty": b"",
                    "header only": csv_text([header]).encode(),
                    "binary": bytes(rng.randrange(256) for _ in range(500)),
                    "utf-16": csv_text(
                        [header, (self.frontier_rows if flag == "--frontiers" else self.runs_rows)[0]]
                    ).encode("utf-16"),
                }[target]
                p.write_bytes(data)
            return Case(
                ["validate", flag, str(path), "--json"],
                f"{flag}: {target}",
                "refuse",
                protect=[p] if path == p else [],
                timeout=FILE_LIMIT,
            )
        header = self.frontier_header if flag == "--frontiers" else self.runs_header
        pool = self.frontier_rows if flag == "--frontiers" else self.runs_rows
        col = {c: k for k, c in enumerate(header)}
        if kind == "unscorable":  # every row names a model, system or stack the tool does not have
            rows = [list(r) for r in rng.sample(pool, min(len(pool), rng.randint(1, 3)))]
            what = rng.choice(
                ["model", "hardware", "framework"]
                if flag == "--frontiers"
                else ["model_path", "system", "backend"]
            )
            for r in rows:
                r[col[what]] = rng.choice(["Unknown-1T", "z999", "nope", ""])
            p.write_text(csv_text([header, *rows]), encoding="utf-8")

            def none_scored(stdout: str) -> str | None:
                s = _json(stdout)
                n = s.get("points_scored", s.get("rows_scored"))
                return None if n == 0 else f"{n} rows scored"

            return Case(
                ["validate", flag, str(p), "--json"],
                f"{flag}: all rows unscorable ({what})",
                "any",
                none_scored,
                protect=[p],
                timeout=FILE_LIMIT,
            )
        source = rng.choice(pool)
        bad = list(source)
        if flag == "--frontiers":
            table = {**self.FRONTIER_FIGURES, **self.FRONTIER_COUNTS}
        else:
            table = dict(self.RUN_FIGURES)
            # its own measurement: no other row records the same one, or its twin
            for c in ("silicon_ttft_ms", "silicon_tpot_ms"):
                bad[col[c]] = f"{float(bad[col[c]]) * rng.uniform(1.02, 1.2):.6g}"
            bad[col["id"]] += "_changed"
        table.update({c: self.LAYOUT_JUNK for c in self._layout_columns(flag, bad, col)})
        if flag == "--runs" and bad[col["batch_size" if bad[col["mode"]] == "agg" else "decode_batch_size"]]:
            del table["concurrency"]  # read only where the row gives no batch size
        name = rng.choice(sorted(table))
        value = rng.choice(table[name])
        bad[col[name]] = value
        companions = [
            list(r) for r in rng.sample(pool, min(len(pool), rng.choice([0, 1, 1, 2]))) if r is not source
        ]
        p99 = name.startswith("p99_")
        if p99:  # no other p99 figure anywhere: the summary's p99 error is the bad figure's, or none
            other = "p99_tpot_s" if name == "p99_ttft_s" else "p99_ttft_s"
            bad[col[other]] = ""
            for r in companions:
                r[col["p99_ttft_s"]] = r[col["p99_tpot_s"]] = ""
        rows = [*companions, bad]
        rng.shuffle(rows)
        at = next(k for k, r in enumerate(rows) if r is bad)
        p.write_text(csv_text([header, *rows]), encoding="utf-8")

        def unscored(stdout: str) -> str | None:
            try:
                with out.open(newline="", encoding="utf-8") as fh:
                    per = list(csv.DictReader(fh))
            except OSError:
                return "exit 0 without the per-row file"
            if len(per) != len(rows):
                return f"{len(per)} rows out for {len(rows)} in"
            r = per[at]
            s = _json(stdout)
            if r["scored"] == "True":
                if "layout_from_benchmark_matrix" in r.get("flags", "") and name.startswith(
                    ("decode_", "prefill_")
                ):
                    return None  # the benchmark's launch matrix replaces the row's worker layouts: not read
                if p99:
                    err = s.get("p99", {}).get(f"{name[4:8]}_median_abs_err")
                    return (
                        None if err is None else f"scored; its {name} {value!r} gave a p99 error of {err:.3g}"
                    )
                return f"row {at + 2} scored with {name} = {value!r}"
            rule = r.get("rule") or r.get("status")
            if not rule:
                return f"row {at + 2} not scored, by no named rule"
            counted = s.get("unscored", s.get("rows_unmapped_by_reason", {}))
            if not any(rule in k for k in counted):
                return f"row {at + 2} not scored ({rule}), but the summary does not count it: {counted}"
            return None

        where = (
            " ".join(bad[col[c]] for c in ("hardware", "framework", "precision", "serving", "concurrency"))
            if flag == "--frontiers"
            else bad[col["id"]]
        )
        return Case(
            ["validate", flag, str(p), "--json", "--out", str(out)],
            f"{flag}: {name} {value}",
            "any",
            unscored,
            protect=[p],
            timeout=FILE_LIMIT,
            detail=f"row {at + 2} ({where}): {name} = {value}",
        )

    # -- names and layouts --------------------------------------------------------------------
    NAMES = [
        "",
        " ",
        "../../etc/x",
        "../x",
        "a/b",
        "/abs",
        "a\\b",
        "a@b",
        "hgx-h200@sglang",
        ".",
        "..",
        ".hidden",
        "-x",
        "_x",
        "x y",
        "x\ty",
        "x\ny",
        "ñandu",
        "ｈｇｘ",
        "x" * 101,
        "a..b",
        "x:y",
        "x*y",
        "x?y",
        "~",
        "$HOME",
        "x;rm",
        "x|y",
        "x\u0000y",
        "x\u202ey",
        "h200 ",
        " h200",
        "x\u00a0y",
        "é",
    ]
    NAME_TOKENS = ["123", "null", "[a]", "{a: 1}", "true", "2026-01-01", "1.5", "''", "~"]
    TORUS_SHAPES = [
        "[4, 4, 8]",
        "[4, 4]",
        "[64, 1, 1, 1]",
        "[0, 64]",
        "[-4, -4, 4]",
        "[4.0, 4, 4]",
        "[]",
        "8",
        "[2048, 2048]",
    ]

    def names(self, i: int) -> Case:
        rng = self.rng
        src = rng.choice(sorted(self.hw))
        text, facts = self.hw[src], {f.path: f for f in self.facts[src]}
        p = self.work / f"name{i % 5}.yaml"
        if rng.random() < 0.45:
            if rng.random() < 0.8:
                name = rng.choice(self.NAMES)
                token, label = json.dumps(name), f"name {ascii(name)[:40]}"
            else:
                token = rng.choice(self.NAME_TOKENS)
                label = f"name: {token}"
            p.write_text(
                re.sub(r"(?m)^name: .*$", lambda m: f"name: {token}", text, count=1), encoding="utf-8"
            )
            return Case(
                ["specs", "show", str(p)] + (["--json"] if rng.random() < 0.3 else []),
                label,
                "refuse",
                protect=[p],
                mention=("name",),
            )
        d = int(facts["scale_up.domain_size"].token)
        s = int(facts["system.gpus_per_system"].token)
        u = int(facts["system.gpus_per_unit"].token)
        kinds = [
            "unit not whole domains",
            "domain not dividing the system",
            "system and unit",
            "layout junk",
            "host not dividing the system",
        ]
        if "scale_up.gpus_per_switch" in facts:
            kinds.append("switch not dividing the domain")
        if "scale_up.links_per_chip" in facts:
            kinds.append("torus")
        kind = rng.choice(kinds)
        # (fact, value): one layout fact set to a value the other facts do not allow
        if kind == "unit not whole domains":
            path, v = (
                "system.gpus_per_unit",
                rng.choice(
                    sorted(
                        x
                        for x in {1, 2, 3, d // 2, d - 1, d + 1, d * 3 // 2, 12, 36, s + 1}
                        if x > 0 and x % d
                    )
                ),
            )
        elif kind == "domain not dividing the system":
            v = rng.choice([x for x in (3, 5, 6, 7, 9, 10, s - 1, s + 1) if 1 < x < s and s % x] or [s + 1])
            path, v = (
                "scale_up.domain_size",
                rng.choice([v, 0, -8, MAX_DOMAIN + 1]) if rng.random() < 0.3 else v,
            )
        elif kind == "system and unit":  # neither a multiple nor a divisor of the other
            path, v = (
                "system.gpus_per_system",
                rng.choice([x for x in (u + 4, u * 3 // 2, 12, 20) if x % u and u % x]),
            )
        elif kind == "layout junk":
            path = rng.choice(["scale_up.domain_size", "system.gpus_per_system", "system.gpus_per_unit"])
            v = rng.choice(["0", "-8", "1.5", '"8"', "8.0", "1e3", "true", "[8]", "null", str(2**53 + 1)])
            kind = f"{path}: {v}"
        elif kind == "host not dividing the system":
            path, v = (
                "system.gpus_per_host",
                rng.choice([x for x in (3, 5, 7, s + 1, 0, -1) if x <= 0 or s % x]),
            )
        elif kind == "switch not dividing the domain":
            path, v = "scale_up.gpus_per_switch", rng.choice([3, 5, 7, d + 1, 0, -2, d * 2])
        elif rng.random() < 0.3:
            path, v, kind = "scale_up.links_per_chip", rng.choice(["5", "0", "8", "2"]), "torus links"
        else:
            path, v, kind = "scale_up.torus_shape", rng.choice(self.TORUS_SHAPES), "torus shape"
        if path == "scale_up.torus_shape":
            text = re.sub(r"(?m)^(\s+torus_shape: \{value: )\[[^\]]*\]", lambda m: m.group(1) + v, text)
        elif path in facts:
            text = set_fact(text, facts[path], str(v))
        else:
            text = add_fact(text, facts["system.gpus_per_unit"], path.split(".")[1], str(v))
        p.write_text(text, encoding="utf-8")
        return Case(
            ["specs", "show", str(p)],
            kind,
            "refuse",
            protect=[p],
            mention=(path.split(".")[1],),
            detail=f"{src.name}: {path} = {v} (domain {d}, system {s}, unit {u})",
        )

    # -- small command-line inputs ------------------------------------------------------------
    SLO_BAD = [
        "ttft_p99=3,ttft_p99=4",
        "",
        " ",
        ",",
        "ttft_p99=2,",
        ",ttft_p99=2",
        "ttft_p99=2,,tpot_p90=0.05",
        "ttft_p99",
        "ttft_p99=",
        "=2",
        "ttft_p100=2",
        "ttft_p0=2",
        "ttft_p99=-1",
        "ttft_p99=0",
        "ttft_p99=inf",
        "ttft_p99=nan",
        "ttft_p99=1e400",
        "TTFT_P99=2",
        "ttft=2",
        "e2e_p99=2",
        "ttft_p99=2s",
        "ttft_p99=2 ms",
        "ttft_p99:2",
        "ttft_p99=2;tpot_p90=0.05",
        "ttft_p99==2",
        "ttft_p-5=2",
        "ttft_pnan=2",
        "ttft_pinf=2",
        "tpot_p90=0.05,tpot_p90=0.05",
        "ttft_p99=２",
        "ttft_p99=2=3",
        "ttft_p=2",
        "ttft_p99.9.9=2",
        "ttft_p1e1=2",
        "ttft_p 99=2",
    ]
    TIERS_BAD = [
        "hbm,",
        ",hbm",
        "hbm,,host",
        "hbm,hbm",
        "none,hbm",
        "",
        " ",
        "HBM",
        "gpu",
        "hbm;host",
        "hbm host",
        "none,",
        "hbm,host,nvme,ssd",
        "nvme,nvme",
        "ｈｂｍ",
        "hbm,none",
    ]
    FORMAT_BAD = ["", " ", "FP8", "fp4", "int8", "bf16,fp8", "fp8 ", "fp9", "nvfp4,fp8", "None", "auto"]
    HARDWARE_BAD = [
        "hgx-h200@sglang@vllm",
        "hgx-h200@",
        "@sglang",
        "hgx-h200@@sglang",
        "hgx-h200@SGLANG",
        "hgx-h200@nope",
        "",
        " ",
        "hgx-h200,hgx-b200",
        "hgx-h200@sglang@",
        "hgx-h2000",
        "@",
        "hgx-h200@sglang vllm",
    ]
    NUMBER_BAD = ["-5", "0", "nan", "inf", "-inf", "1e400", "", "abc", "-0", "0x10", "1e-400"]

    def small_cli(self, i: int) -> Case:
        rng = self.rng
        kind = rng.choice(
            ["slo"] * 4
            + ["tiers"] * 2
            + ["kv", "weights"]
            + ["hardware"] * 2
            + [
                "levels",
                "at",
                "threshold",
                "band",
                "mtp",
                "overlap",
                "without workload",
                "with workload",
                "workload name",
            ]
            + ["valid workload"] * 3
        )
        if kind == "slo":
            v = (
                rng.choice(self.SLO_BAD)
                if rng.random() < 0.7
                else ",".join(
                    rng.choice(["ttft_p99=2", "tpot_p90=0.05", "ttft_p50=1", "ttft_p99=4"])
                    for _ in range(rng.randint(2, 4))
                )
            )
            keys = [x.partition("=")[0] for x in v.split(",")]
            if "=" in v and len(set(keys)) == len(keys):
                v += ",ttft_p50=0.5,ttft_p50=0.6"  # a repeated level, as a generated list must have
            return Case(
                with_flag("workload", "--slo", v),
                f"--slo {v!r}",
                "refuse",
                mention=("slo",),
            )
        if kind == "tiers":
            v = rng.choice(self.TIERS_BAD)
            return Case(
                BASES["workload"] + ["--kv-tiers", v], f"--kv-tiers {v!r}", "refuse", mention=("kv-tiers",)
            )
        if kind in ("kv", "weights"):
            v = rng.choice(self.FORMAT_BAD)
            base = rng.choice(["point", "frontier", "size"])
            return Case(with_flag(base, f"--{kind}", v), f"{base} --{kind} {v!r}", "refuse", mention=(kind,))
        if kind == "hardware":
            v = rng.choice(self.HARDWARE_BAD)
            base = rng.choice(["point", "frontier", "size"])
            return Case(
                with_flag(base, "--hardware", v),
                f"{base} --hardware {v!r}",
                "refuse",
                mention=("hardware", "stack"),
            )
        if kind in ("levels", "at", "threshold"):
            v = rng.choice(self.NUMBER_BAD)
            if kind == "levels":
                vals = [v] + rng.sample(["10", "50", "100"], rng.randint(0, 2))
                rng.shuffle(vals)
                return Case(
                    BASES["compare"] + ["--levels", *vals],
                    f"compare --levels {v!r}",
                    "refuse",
                    mention=("levels",),
                )
            if kind == "at" and rng.random() < 0.2:
                return Case(
                    BASES["compare"] + ["--at", "50"],
                    "compare --at without --explain",
                    "refuse",
                    mention=("at",),
                )
            return Case(
                with_flag("compare", f"--{kind}", v), f"compare --{kind} {v!r}", "refuse", mention=(kind,)
            )
        if kind == "band":
            v = rng.choice(["1", "0", "1001", "-5", "2.5", "1e3", "", "abc"])
            return Case(
                BASES["frontier"] + ["--band", "--band-samples", v],
                f"--band-samples {v!r}",
                "refuse",
                mention=("band-samples",),
            )
        if kind == "mtp":
            v = rng.choice(["17", "-1", "1.5", "", "on", "1e1", "auto", "0.5", "99", "two"])
            base = rng.choice(["point_mtp", "frontier_r1"])
            if v == "auto" and base == "frontier_r1":
                v = "17"
            return Case(with_flag(base, "--mtp", v), f"{base} --mtp {v!r}", "refuse", mention=("mtp",))
        if kind == "overlap":
            v = rng.choice(["maybe", "", "ON", "true", "1", "auto,on"])
            return Case(
                with_flag("frontier", "--overlap", v), f"--overlap {v!r}", "refuse", mention=("overlap",)
            )
        if kind == "without workload":  # a workload's options without a workload
            flag, v = rng.choice([("--slo", "ttft_p99=2"), ("--kv-tiers", "hbm")])
            return Case(
                with_flag("frontier", flag, v),
                f"{flag} without --workload",
                "refuse",
                mention=(flag, "workload"),
            )
        if kind == "with workload":  # options a workload sets itself
            extra = rng.choice(
                [
                    ["--isl", "1024"],
                    ["--osl", "256"],
                    ["--gpus", "8"],
                    ["--metric", "total"],
                    ["--overlap", "on"],
                    ["--kv-offload"],
                    ["--context", "2048"],
                ]
            )
            return Case(
                BASES["workload"] + extra,
                f"--workload with {extra[0]}",
                "refuse",
                mention=(extra[0], "workload"),
            )
        if kind == "workload name":
            v = rng.choice(
                [
                    "",
                    " ",
                    "agentc",
                    "Chat",
                    "nope.yaml",
                    "chat.csv",
                    str(self.fifo),
                    str(self.folder),
                    os.devnull,
                    "chat,agentic",
                    "../chat",
                ]
            )
            argv = list(BASES["workload"])
            argv[argv.index("--workload") + 1] = v
            return Case(
                argv,
                f"--workload {os.path.basename(v) or repr(v)}",
                "refuse",
                mention=("workload", "file"),
                timeout=FILE_LIMIT,
            )
        # valid workload runs: either outcome may be right; there to find crashes
        argv = [
            "frontier",
            "--model",
            rng.choice(["deepseek-r1", "deepseek-v2-lite", "kimi-k2-thinking"]),
            "--hardware",
            rng.choice(["hgx-h200", "gb200-nvl72", "hgx-b200"]),
            "--workload",
            rng.choice(["chat", "agentic", "reasoning"]),
            "--json",
        ]
        extra = []
        if rng.random() < 0.5:
            extra += ["--serving", rng.choice(["decode", "disaggregated"])]
        if rng.random() < 0.5:
            extra += [
                "--kv-tiers",
                rng.choice(["none", "hbm", "host,nvme", "nvme", "hbm,host", "hbm,host,nvme"]),
            ]
        if rng.random() < 0.5:
            extra += [
                "--slo",
                rng.choice(["ttft_p99=2", "tpot_p90=0.05", "ttft_p50=0.5,tpot_p99=0.1", "ttft_p99.9=8"]),
            ]
        return Case(argv + extra, "valid workload run " + " ".join(extra[::2]))

    # -- a broken standard output -------------------------------------------------------------
    STDOUT_COMMANDS = [
        ["specs", "list"],
        ["specs", "show", "hgx-h200"],
        ["specs", "show", "hgx-h200", "--json"],
        ["specs", "show", "deepseek-v2-lite"],
        ["--help"],
        ["point", "--help"],
        ["--version"],
        BASES["point"],
        BASES["point"][:-1],
        ["specs", "show", "nope"],
    ]

    def stdout(self, i: int) -> Case:
        rng = self.rng
        argv = list(rng.choice(self.STDOUT_COMMANDS))
        how = rng.choices(["full", "closed", "pipe"], [0.45, 0.45, 0.1])[0]
        return Case(argv, f"stdout {how}: {' '.join(argv[:3])}", stdout=how)


def check_bases() -> list[str]:
    """The commands the families vary, each with every numeric option at a value it takes: any that
    does not run makes the refusals of its cases say nothing."""
    failed = []
    for base, argv in BASES.items():
        rc, _, err = quiet(argv)
        if rc != 0:
            failed.append(f"{base}: exit {rc}: {err.strip()[:160]}")
    for base, flag, form, typical in NUM_FLAGS:
        rc, _, err = quiet(with_flag(base, flag, form.format(typical)))
        if rc != 0:
            failed.append(f"{base} {flag} {typical}: exit {rc}: {err.strip()[:160]}")
    return failed


def main_fuzz(n: int, seed: int) -> int:
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="moe-fuzz-"))
    # the commands write each quantity they parse to the derived-text cache: give them a copy of the
    # user's, so that the hostile ones do not pile up there (set before the first command: the
    # cache's place is read once)
    cache = Path(tempfile.mkdtemp(prefix="moe-fuzz-cache-"))
    mine = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "moe-planner"
    if mine.is_dir():
        shutil.copytree(mine, cache / "moe-planner")
    os.environ["XDG_CACHE_HOME"] = str(cache)
    signal.signal(signal.SIGALRM, _alarm)
    t0 = time.perf_counter()
    try:
        inputs = Inputs(work, rng)
        failed = check_bases()
        inputs.prepare_measured()
        setup = time.perf_counter() - t0
        run = Run(work)
        names = [k for k, _ in FAMILIES]
        weights = [w for _, w in FAMILIES]
        make = {k: inputs.plan_file if k == "plan" else getattr(inputs, k) for k in names}
        for i in range(n):
            family = rng.choices(names, weights)[0]
            run(family, make[family](i))
        dt = time.perf_counter() - t0
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
    return report(run, n, seed, dt, setup, failed, len(inputs.frontier_rows), len(inputs.runs_rows))


def report(run: Run, n: int, seed: int, dt: float, setup: float, failed: list[str], nf: int, nr: int) -> int:
    c = run.totals
    print(
        f"{n:,} generated inputs (seed {seed}) in {dt:.0f} s ({setup:.0f} s of set-up: base commands "
        f"checked, {nf} scorable frontier rows and {nr} scorable runs found)"
    )
    for f in failed:
        print(f"  base command does not run: {f}")
    head = ["family", "inputs", "exit 0", "exit 2", "other", "problems", "off target"]
    rows = [
        [
            name,
            *(
                run.families.get(name, Counter())[k]
                for k in ("inputs", "exit0", "exit2", "other", "problems", "off_target")
            ),
        ]
        for name, _ in FAMILIES
    ]
    rows.append(["all", *(sum(r[k] for r in rows) for k in range(1, 7))])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    for r in [head, *rows]:
        print(
            "  "
            + "  ".join(
                str(x).ljust(w) if k == 0 else str(x).rjust(w)
                for k, (x, w) in enumerate(zip(r, widths, strict=True))
            )
        )
    print("totals: " + ", ".join(f"{c[k]} {v}" for k, v in PROBLEMS.items()))
    for name, _ in FAMILIES:
        labels = run.labels.get(name)
        if labels:
            print(f"\n{name}: problems by kind of input")
            common = labels.most_common()
            for label, k in common[:20]:
                print(f"  {k:5d}  {label}")
            if len(common) > 20:
                rest = common[20:]
                print(f"  {sum(k for _, k in rest):5d}  ... {len(rest)} more kinds")
    if run.examples:
        print("\nexamples")
        for _, ex in sorted(run.examples.items(), key=lambda x: (x[0][1] == "off target", x[0])):
            for e in ex:
                print(e)
    return 1 if sum(c.values()) or failed else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if any(a in ("-h", "--help") for a in args) or any(not a.isdigit() for a in args if a != "--seed"):
        raise SystemExit(__doc__)
    seed = 2026
    if "--seed" in args:
        i = args.index("--seed")
        seed = int(args[i + 1])
        del args[i : i + 2]
    raise SystemExit(main_fuzz(int(args[0]) if args else 10_000, seed))
