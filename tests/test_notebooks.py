"""The notebooks in ``notebooks/``: each runs top to bottom in a real Jupyter kernel, and each is
committed clean (no outputs, no execution counts, no ``sys.path`` edits: they import the
installed ``planner`` package)."""

from __future__ import annotations

import json
import re
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
    # numbers print readably: no pandas scientific notation such as 6.400000e+01 in a table
    sci = re.compile(r"\b\d\.\d{6}e[+-]\d\d\b")
    for i, c in enumerate(nb.cells):
        for o in c.get("outputs", []):
            text = o.get("text", "") + o.get("data", {}).get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else text
            assert not sci.search(text), f"{path.name} cell {i}: {sci.search(text).group(0)}"


def test_nbconvert_execute_works_after_the_test_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # users run the notebooks with `jupyter nbconvert --execute`: the test extra installs what it
    # needs, and it runs a notebook that imports the package
    import configparser
    import subprocess
    import sys

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    extra = {re.split(r"[<>=!~ ]", r.strip())[0] for r in cfg["options.extras_require"]["test"].splitlines()
             if r.strip()}
    assert {"nbconvert", "ipykernel"} <= extra, extra
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("nbconvert")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import planner\nprint('kv', planner.load_model('mixtral-8x7b')"
                                          ".kv_bytes_per_token())")]
    path = tmp_path / "tiny.ipynb"
    nbformat.write(nb, path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    done = subprocess.run([sys.executable, "-m", "nbconvert", "--execute", "--to", "notebook", "--stdout",
                           str(path)], capture_output=True, text=True, timeout=CELL_TIMEOUT, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    # Mixtral: 32 layers x 8 KV heads x 128 x 2 (K and V) x 2 bytes (bf16) = 131,072 B per token
    assert "kv 131072" in done.stdout
