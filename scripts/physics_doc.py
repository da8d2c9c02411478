"""Write docs/physics.md, the notation reference the code cites: every symbol of the model (name,
LaTeX, unit, meaning, by group) and the name of every expression the numeric path evaluates, all
read from the code (planner.physics.symbols, equations, operators, serving_eq).

    python scripts/physics_doc.py            # print it
    python scripts/physics_doc.py --write    # write docs/physics.md
    python scripts/physics_doc.py --check    # exit 1 if docs/physics.md differs

tests/test_physics_doc.py runs the check, so the page cannot fall behind the code.
"""

from __future__ import annotations

import sys
from pathlib import Path

import sympy as sp

from planner.physics import equations, operators, serving_eq
from planner.physics.symbols import REGISTRY

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "physics.md"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render() -> str:
    out = ["# Notation and equations", "",
           "Generated from the code by `scripts/physics_doc.py` (a test keeps the two equal).  The",
           "equations live once, in sympy (`planner/physics/equations.py`, `serving_eq.py`,",
           "`operators.py`); the numeric sweeps evaluate the same expressions compiled.  Print any of",
           "them with `moe-planner equations --term NAME [--latex]`, or in Python:",
           "`sympy.latex(planner.physics.equations.ALL[NAME])`.", "",
           "## 1. Symbols", ""]
    groups: dict[str, list[tuple[str, object]]] = {}
    for name, s in REGISTRY.items():
        groups.setdefault(s.group, []).append((name, s))
    for group, items in groups.items():
        out += [f"### {group}", "", "| name | LaTeX | unit | meaning |", "|---|---|---|---|"]
        for name, s in items:
            tex = _cell(sp.latex(s.symbol))
            out.append(f"| `{name}` | `{tex}` | {_cell(s.unit)} | {_cell(s.meaning)} |")
        out.append("")
    out += ["## 2. Expressions", "",
            "The per-operator and step times, the roofline parts behind each bottleneck, memory and "
            "rates (`planner.physics.equations.ALL`):", ""]
    out += [", ".join(f"`{n}`" for n in equations.ALL), ""]
    out += ["The single-kernel laws fitted to measured kernels (`op.NAME`):", "",
            ", ".join(f"`op.{n}`" for n in operators.OPERATORS), ""]
    out += ["The serving equations (`serving.NAME`: the loop, its pools, service levels, KV reuse):",
            "", ", ".join(f"`serving.{n}`" for n in serving_eq.EQUATIONS), ""]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    text = render()
    if "--write" in argv:
        PAGE.write_text(text, "utf-8")
        return 0
    if "--check" in argv:
        if not PAGE.is_file() or PAGE.read_text("utf-8") != text:
            print(f"{PAGE}: differs from the code; run python scripts/physics_doc.py --write",
                  file=sys.stderr)
            return 1
        return 0
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
