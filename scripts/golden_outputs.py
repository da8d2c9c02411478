"""The main commands' JSON, kept under ``tests/data/golden`` so that a change meant to move no
figure (a refactor) can be shown to move none: ``tests/test_golden_outputs.py`` runs each command
again and compares every number.

    python scripts/golden_outputs.py --write     # after a change that is meant to move figures
    python scripts/golden_outputs.py --check     # what the test does, from the command line

Keys that describe the question rather than answer it (``scenario``) are left out of the
comparison: a command may add them without moving a figure.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "data" / "golden"

#: name -> the command's arguments (each with --json); cheap enough for the suite
COMMANDS: dict[str, list[str]] = {
    "compare": ["compare", "--levels", "20", "50", "100"],
    "compare_limit_8k": ["compare", "--search", "limit", "--isl", "8192", "--levels", "20", "50",
                         "--max-gpus", "16", "--mtp", "off"],
    "frontier_rules": ["frontier", "--model", "deepseek-r1", "--hardware", "hgx-b200"],
    "frontier_prefill": ["frontier", "--model", "kimi-k2-thinking", "--hardware", "hgx-h200",
                         "--serving", "prefill", "--max-gpus", "16"],
    "frontier_workload": ["frontier", "--model", "deepseek-r1", "--hardware", "hgx-h200",
                          "--workload", "chat"],
    "point": ["point", "--model", "kimi-k2-thinking", "--hardware", "hgx-h200", "--gpus", "8",
              "--batch", "64", "--context", "2048"],
    "size": ["size", "--model", "kimi-k2-thinking", "--hardware", "gb200-nvl72", "hgx-h200",
             "--min-tps-user", "50", "--demand-tps", "1e6"],
    "compare_explain": ["compare", "--explain", "--at", "50", "--levels", "50"],
    "frontier_stack": ["frontier", "--model", "deepseek-r1", "--hardware", "hgx-h200", "--stack",
                       "sglang", "--search", "recipes"],
    "cost_target": ["size", "--model", "deepseek-r1", "--hardware", "hgx-b200", "--cost-target", "0.5",
                    "--users", "5000"],
    "plan": ["plan", "planner/fleet/data/plan_example.yaml"],
}

#: keys that say what was asked, not what was found
IGNORED = frozenset({"scenario"})


def run(args: list[str]) -> object:
    from planner.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main([*args, "--json"])
    if rc != 0:
        raise SystemExit(f"{' '.join(args)}: exit {rc}")
    return json.loads(out.getvalue())


def strip(obj: object) -> object:
    if isinstance(obj, dict):
        return {k: strip(v) for k, v in obj.items() if k not in IGNORED}
    if isinstance(obj, list):
        return [strip(v) for v in obj]
    return obj


def differences(old: object, new: object, where: str = "") -> list[str]:
    """Where ``new`` differs from ``old``: numbers beyond 1e-9 relative, anything else at all."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = [f"{where}/{k}: only in {'old' if k in old else 'new'}" for k in old.keys() ^ new.keys()]
        for k in old.keys() & new.keys():
            out += differences(old[k], new[k], f"{where}/{k}")
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            return [f"{where}: {len(old)} items, now {len(new)}"]
        pairs = enumerate(zip(old, new, strict=True))
        return [d for i, (a, b) in pairs for d in differences(a, b, f"{where}[{i}]")]
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in (old, new)):
        if math.isclose(old, new, rel_tol=1e-9, abs_tol=1e-12):
            return []
    elif old == new:
        return []
    return [f"{where}: {old!r} -> {new!r}"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true", help="rewrite tests/data/golden")
    g.add_argument("--check", action="store_true", help="compare with tests/data/golden")
    a = p.parse_args(argv)
    bad = 0
    for name, args in COMMANDS.items():
        path = GOLDEN / f"{name}.json"
        got = strip(run(args))
        if a.write:
            GOLDEN.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
            print(f"wrote {path.relative_to(ROOT)}")
            continue
        diff = differences(json.loads(path.read_text()), got)
        bad += bool(diff)
        print(f"{name}: {'unchanged' if not diff else f'{len(diff)} differences'}")
        for d in diff[:10]:
            print(f"  {d}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
