"""docs/physics.md, the notation reference the code cites, is the code's own symbol table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_notation_page_is_the_codes():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "physics_doc.py"), "--check"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    from planner.physics.symbols import REGISTRY

    page = (ROOT / "docs" / "physics.md").read_text("utf-8")
    assert all(f"| `{name}` |" in page for name in REGISTRY)
