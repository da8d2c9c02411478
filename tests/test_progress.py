"""Progress on long work: a line on standard error while it runs, on a terminal only, never under
--json."""

from __future__ import annotations

import io
import sys

from planner import outputs
from planner.cli import main
from planner.outputs import progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_on_a_terminal_only(monkeypatch):
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    monkeypatch.setattr(outputs, "SHOW_PROGRESS", True)
    assert list(progress(range(3), "leave one system out")) == [0, 1, 2]
    assert "leave one system out" in tty.getvalue() and "0/3" in tty.getvalue()  # (updates rate-limited)
    pipe = io.StringIO()  # a pipe, a file, CI: nothing
    monkeypatch.setattr(sys, "stderr", pipe)
    assert list(progress(range(3), "refits")) == [0, 1, 2] and pipe.getvalue() == ""
    monkeypatch.setattr(sys, "stderr", tty := Terminal())
    monkeypatch.setattr(outputs, "SHOW_PROGRESS", False)  # --json
    assert list(progress(iter(range(2)), "refits")) == [0, 1] and tty.getvalue() == ""


def test_json_turns_progress_off_and_text_on(capsys, monkeypatch):
    monkeypatch.setattr(outputs, "SHOW_PROGRESS", True)
    assert main(["specs", "list", "--json"]) == 0
    assert outputs.SHOW_PROGRESS is False
    assert main(["specs", "list"]) == 0
    assert outputs.SHOW_PROGRESS is True
    capsys.readouterr()
