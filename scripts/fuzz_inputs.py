"""Fuzz the command line with generated hostile inputs; print what went wrong, if anything.

    python scripts/fuzz_inputs.py [N] [--seed S]

N inputs (default 10,000) of six kinds, each run in-process through ``planner.cli.main``:
mutated hardware specs, mutated model specs, mutated Hugging Face config.json files, mutated fleet
plans, hostile numbers on the command line, and hostile output paths.  A mutation replaces a
value with junk (huge integers, impossible dates, decimal commas, NaN, negative and tiny numbers,
lists, maps, empty text, control characters), drops or repeats a line, or adds a YAML alias bomb.

Counted: tracebacks (an exception escaping ``main``, or "Traceback" on stderr), exit statuses
other than 0, 2 and 130, error messages of more than one line, damaged inputs (a file the run
read whose bytes changed) and leftovers (temporary files beside an output).  Exit status 1 if
any is found.  Development time; the figure goes in the README.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.cli import main  # noqa: E402

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


class Run:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.counts = {
            "runs": 0,
            "ok": 0,
            "refused": 0,
            "tracebacks": 0,
            "bad_status": 0,
            "multiline": 0,
            "damaged": 0,
            "leftovers": 0,
        }
        self.examples: list[str] = []

    def __call__(self, argv: list[str], protect: list[Path]) -> None:
        before = {p: p.read_bytes() for p in protect if p.is_file()}
        out, err = io.StringIO(), io.StringIO()
        self.counts["runs"] += 1
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(argv)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
        except BaseException as exc:  # noqa: BLE001 - the point is to catch what escapes
            self._bad("tracebacks", argv, f"{type(exc).__name__}: {exc}"[:200])
            return
        e = err.getvalue()
        if "Traceback" in e:
            self._bad("tracebacks", argv, e[-200:])
        elif rc not in (0, 2, 130):
            self._bad("bad_status", argv, f"exit {rc}: {e[-200:]}")
        elif rc == 2 and e.strip().count("\n") > 0 and e.strip().startswith("error:"):
            self._bad("multiline", argv, e[:200])
        else:
            self.counts["ok" if rc == 0 else "refused"] += 1
        for p, b in before.items():
            if not p.is_file() or p.read_bytes() != b:
                self._bad("damaged", argv, str(p))
        left = [q for q in self.work.rglob("*") if ".tmp" in q.name]
        if left:
            self._bad("leftovers", argv, ", ".join(map(str, left[:3])))
            for q in left:
                q.unlink()

    def _bad(self, what: str, argv: list[str], why: str) -> None:
        self.counts[what] += 1
        if len(self.examples) < 20:
            self.examples.append(f"{what}: moe-planner {' '.join(a[:60] for a in argv)}\n    {why}")


def main_fuzz(n: int, seed: int) -> int:
    rng = random.Random(seed)
    work = Path(tempfile.mkdtemp(prefix="moe-fuzz-"))
    run = Run(work)
    hw = sorted((ROOT / "hardware_specs").glob("*.yaml"))
    models = sorted((ROOT / "planner" / "model_specs").glob("*.yaml"))
    configs = sorted((ROOT / "tests" / "data").glob("*/config.json"))
    plan = (ROOT / "planner" / "fleet" / "data" / "plan_example.yaml").read_text()
    shares = [
        ("hardware", 0.30),
        ("model", 0.20),
        ("config", 0.15),
        ("plan", 0.01),
        ("numbers", 0.24),
        ("outputs", 0.10),
    ]
    t0 = time.perf_counter()
    for i in range(n):
        kind = rng.choices([k for k, _ in shares], [w for _, w in shares])[0]
        if kind in ("hardware", "model"):
            src = rng.choice(hw if kind == "hardware" else models)
            p = work / f"spec{i % 7}.yaml"
            p.write_text(mutate_yaml(src.read_text(), rng))
            run(["specs", "show", str(p)] + (["--json"] if rng.random() < 0.3 else []), [p])
        elif kind == "config":
            d = work / f"cfg{i % 5}"
            d.mkdir(exist_ok=True)
            (d / "config.json").write_text(mutate_json(rng.choice(configs).read_text(), rng))
            run(["specs", "show", str(d)], [d / "config.json"])
        elif kind == "plan":
            p = work / "plan.yaml"
            p.write_text(mutate_yaml(plan, rng))
            run(["plan", str(p), "--json"], [p])
        elif kind == "numbers":
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
            run(argv, [])
        else:
            spec = work / "mine.yaml"
            spec.write_text((ROOT / "hardware_specs" / "hgx-h200.yaml").read_text())
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
            run(
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
                [spec],
            )
    dt = time.perf_counter() - t0
    c = run.counts
    print(
        f"{c['runs']:,} generated inputs in {dt:.0f} s: {c['ok']:,} ran, "
        f"{c['refused']:,} refused in one line; "
        f"{c['tracebacks']} tracebacks, {c['bad_status']} other exit statuses, {c['multiline']} multi-line "
        f"errors, {c['damaged']} damaged inputs, {c['leftovers']} leftovers"
    )
    for e in run.examples:
        print(e)
    bad = c["tracebacks"] + c["bad_status"] + c["multiline"] + c["damaged"] + c["leftovers"]
    return 1 if bad else 0


if __name__ == "__main__":
    args = sys.argv[1:]
    seed = 2026
    if "--seed" in args:
        i = args.index("--seed")
        seed = int(args[i + 1])
        del args[i : i + 2]
    raise SystemExit(main_fuzz(int(args[0]) if args else 10_000, seed))
