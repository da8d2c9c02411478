"""Write ``planner/generated/``: the generated code and parsed quantities shipped with the package.

Usage: ``python scripts/bundle_generated_code.py``

Runs the main commands (:data:`COMMANDS`) in fresh processes with an empty cache, so that every
call signature they evaluate is generated from the sympy expressions, and records each entry
under the key of the package's sources (``planner.cache.bundled``).  A fresh install's first run
of those commands then loads the code instead of generating it.  Run it after changing
``planner/physics`` (symbols, equations, serving_eq, codegen, compiled) or
``planner/specs/units.py``; ``tests/test_bundle.py`` fails until the bundle matches the sources.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUNDLE = ROOT / "planner" / "generated"
PLAN = str(ROOT / "planner" / "fleet" / "data" / "plan_example.yaml")

#: the commands whose call signatures are shipped (``python -m planner`` arguments)
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("compare",),
    ("compare", "--search", "limit"),
    ("compare", "--band", "--band-samples", "4"),
    ("frontier", "--model", "deepseek-r1", "--hardware", "gb200-nvl72", "--serving", "disaggregated"),
    ("frontier", "--model", "kimi-k2-thinking", "--hardware", "hgx-h200", "--search", "limit"),
    ("point", "--model", "kimi-k2-thinking", "--hardware", "hgx-h200", "--gpus", "8", "--batch", "64",
     "--context", "2048"),
    ("size", "--model", "kimi-k2-thinking", "--hardware", "gb200-nvl72", "hgx-h200", "--demand-tps", "1e6",
     "--min-tps-user", "50"),
    ("plan", PLAN),
    ("specs", "list"),
)


def main() -> int:
    BUNDLE.mkdir(exist_ok=True)
    for old in BUNDLE.glob("*.json"):
        old.unlink()
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as cwd:
        env = dict(os.environ, XDG_CACHE_HOME=cache, MOE_PLANNER_BUNDLE=str(BUNDLE), PYTHONPATH=str(ROOT))
        env.pop("MOE_PLANNER_NO_CACHE", None)
        for cmd in COMMANDS:
            proc = subprocess.run([sys.executable, "-m", "planner", *cmd], cwd=cwd, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
            if proc.returncode != 0:
                sys.stderr.write(f"{' '.join(cmd)}: exit {proc.returncode}: {proc.stderr.strip()[-400:]}\n")
                return 1
    files = sorted(BUNDLE.glob("*.json"))
    size = sum(f.stat().st_size for f in files)
    kinds: dict[str, int] = {}
    for f in files:
        kinds[f.name.split("-")[0]] = kinds.get(f.name.split("-")[0], 0) + 1
    print(f"wrote {len(files)} entries ({size / 1e3:.0f} kB) to {BUNDLE.relative_to(ROOT)}: "
          + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
