"""The notebooks in ``notebooks/``: each runs top to bottom in a real Jupyter kernel, and each is
committed clean (no outputs, no execution counts, no ``sys.path`` edits: they import the
installed ``planner`` package)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT = 300  # s; each notebook takes well under a minute on two cores


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found in notebooks/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_committed_clean(path: Path):
    for i, cell in enumerate(_cells(path)):
        where = f"{path.name} cell {i}"
        assert "sys.path" not in _source(cell), f"{where}: notebooks import the installed package"
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [], f"{where}: outputs not stripped"
            assert cell.get("execution_count") is None, f"{where}: execution count not cleared"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_opens_with_a_self_check(path: Path):
    code = [_source(c) for c in _cells(path) if c["cell_type"] == "code"]
    assert code and "match:" in code[0], f"{path.name}: the first code cell should print 'match: ...'"


@pytest.mark.notebooks
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    # the kernel inherits this process's environment: draw without a display
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, naming the cell, if any cell fails
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.get("output_type") == "error"]
    assert not errors, f"{path.name}: {errors[0].get('ename')}: {errors[0].get('evalue')}"
