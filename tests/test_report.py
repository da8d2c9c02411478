"""compare --html: one self-contained page (no script, nothing loaded from the network) whose
numbers are the ones compare --json prints."""

from __future__ import annotations

import contextlib
import io
import json
import re
from html.parser import HTMLParser

import pytest

from planner.cli import main

ARGV = ["compare", "--model", "deepseek-v2-lite", "--hardware", "hgx-b200", "hgx-h200", "--levels", "20",
        "50", "--threshold", "1.5", "--plot", "", "--csv", ""]


class Page(HTMLParser):
    """Tags, external references and the text of each element with an id."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.refs: list[str] = []
        self.by_id: dict[str, str] = {}
        self.cells: list[list[str]] = []
        self._id: list[str | None] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        self.refs += [v for k, v in a.items() if k in ("src", "href") and v]
        self._id.append(a.get("id"))
        if a.get("id"):
            self.by_id[a["id"]] = ""
        if tag == "tr":
            self._row = []
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._row is not None and self._cell is not None:
            self._row.append("".join(self._cell).strip())
            self._cell = None
        if tag == "tr" and self._row is not None:
            self.cells.append(self._row)
            self._row = None
        if self._id:
            self._id.pop()

    def handle_data(self, data):
        for i in self._id:
            if i:
                self.by_id[i] += data
        if self._cell is not None:
            self._cell.append(data)


@pytest.fixture(scope="module")
def page_and_json(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "page.html"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main([*ARGV, "--html", str(path)]) == 0
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main([*ARGV, "--json"]) == 0
    p = Page()
    p.feed(path.read_text("utf-8"))
    return p, json.loads(buf.getvalue()), path.read_text("utf-8")


def _close(text: str, value: float) -> bool:
    """``text`` is ``value`` as the page rounds it (3 significant digits, or whole from 1,000)."""
    shown = float(text.replace(",", "").rstrip("x"))
    return abs(shown - value) <= max(0.5, abs(value) * 5e-3) if abs(value) >= 1000 else \
        abs(shown - value) <= abs(value) * 5e-3 + 1e-12


def test_the_page_is_self_contained(page_and_json):
    p, _, text = page_and_json
    assert "script" not in p.tags and "link" not in p.tags and "img" not in p.tags
    assert not [r for r in p.refs if re.match(r"(https?:)?//", r)]
    assert "svg" in p.tags  # the figure inline
    assert text.startswith("<!DOCTYPE html>")


def test_every_number_on_the_page_is_the_clis(page_and_json):
    p, js, _ = page_and_json
    v = js["verdict"]
    assert f"{v['largest']['ratio']:.3g}x" in p.by_id["largest"]
    lo, hi = v["per_gpu"]["intervals"][0]
    assert f"{lo:.0f}-{hi:.0f} tokens/s per user" in p.by_id["answer"]
    header = next(r for r in p.cells if r and r[0] == "tok/s/user")
    rows = p.cells[p.cells.index(header) + 1:p.cells.index(header) + 1 + len(js["table"])]
    assert len(rows) == len(js["table"])
    for cells, want in zip(rows, js["table"], strict=True):
        for text, key in zip(cells, ("tps_per_user", "tps_per_gpu_a", "tps_per_gpu_b", "ratio",
                                     "tps_per_mw_a", "tps_per_mw_b", "ratio_per_mw"), strict=False):
            if want[key] is None:
                assert text == "-"
            else:
                assert _close(text, want[key]), (key, text, want[key])
    # the decomposition's factors multiply to the ratio the page states
    chain = [r for r in p.cells if len(r) == 6 and r[2].endswith("x") and r[0] != "step"]
    prod = 1.0
    for r in chain:
        prod *= float(r[2].rstrip("x"))
    stated = float(re.search(r"= ([\d.]+)x at", p.by_id["why"]).group(1))
    assert prod == pytest.approx(stated, rel=0.02)


def test_the_command_that_reproduces_it_is_on_the_page(page_and_json):
    _, _, text = page_and_json
    assert "moe-planner compare --model deepseek-v2-lite --hardware hgx-b200 hgx-h200" in text


def test_the_page_renders_in_a_headless_browser(page_and_json, tmp_path):
    # where a Chromium is installed (Debian's chromium package): the page renders, a screenshot is
    # taken, and the browser logs no error of the page (it has no script to fail)
    import shutil
    import subprocess

    browser = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
    if browser is None:
        pytest.skip("no headless Chromium on this machine (apt install chromium)")
    _, _, text = page_and_json
    page, shot = tmp_path / "page.html", tmp_path / "page.png"
    page.write_text(text, "utf-8")
    r = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,2400",
                        "--enable-logging=stderr", f"--screenshot={shot}", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert shot.stat().st_size > 10_000  # a picture of the page, not an empty one
    assert "CONSOLE" not in r.stderr and "Uncaught" not in r.stderr, r.stderr[-2000:]
