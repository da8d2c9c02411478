"""The answer at a glance: `compare` opens with its verdict (where the ratios reach the threshold,
the largest ratio, what it rests on), and its JSON carries the same block, equal to the table and
the crossings it summarises."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from planner.cli import main
from planner.cli.frontier import verdict

ARGV = ["compare", "--model", "deepseek-v2-lite", "--hardware", "hgx-b200", "hgx-h200", "--levels", "20",
        "50", "--threshold", "1.5", "--plot", "", "--csv", ""]


@pytest.fixture(scope="module")
def outputs():
    import contextlib
    import io

    out = {}
    for key, extra in (("text", []), ("json", ["--json"])):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            assert main(ARGV + extra) == 0
        out[key] = buf.getvalue()
    return out["text"], json.loads(out["json"])


def test_the_verdict_comes_first_and_equals_the_table_and_crossings(outputs):
    text, js = outputs
    lines = text.splitlines()
    assert lines[1].startswith("# answer: hgx-b200 gives >= 1.5x the tokens/s per GPU of hgx-h200")
    assert lines[2].startswith("# largest: ") and lines[3].startswith("# rests on: ")
    v = js["verdict"]
    assert list(js)[0] == "verdict"
    assert v["per_gpu"]["intervals"] == js["crossings"]["per_gpu"]["intervals"]
    assert v["per_gpu"]["intervals"], "the ratio reaches 1.5x somewhere (B200 against H200)"
    largest = [r for r in js["table"] if r["largest"]]
    assert len(largest) == 1 and v["largest"]["ratio"] == pytest.approx(largest[0]["ratio"])
    assert v["largest"]["tps_per_user"] == pytest.approx(largest[0]["tps_per_user"])
    assert f"{v['largest']['ratio']:.1f}x" in lines[2]
    assert not v["rests_on_measured"] and "--assumptions measures" in lines[3]


def test_measured_assumptions_are_ranked_by_how_far_they_move_the_largest_ratio():
    class C:  # the least of a Comparison the verdict reads
        settings = {"hardware_a": "a", "hardware_b": "b", "mtp": "auto", "weights": None}
        table = pd.DataFrame({"tps_per_user": [20.0, 50.0], "ratio": [2.0, 4.0], "largest": [False, True]})
        a = b = pd.DataFrame()

    moves = pd.DataFrame({"assumption": ["as given", "x", "y", "z", "w"],
                          "setting": ["", "1", "2", "3", "4"],
                          "largest_ratio": [4.0, 3.0, 8.0, 4.1, 1.0], "at_tps_per_user": [50.0] * 5,
                          "change": [1.0, 0.75, 2.0, 1.025, 0.25]})
    cross = {"threshold": 3.0, "per_gpu": {"nominal": (40.0, 60.0), "intervals": [(40.0, 60.0)]},
             "per_mw": {"nominal": None, "intervals": []}}
    v = verdict(C(), cross, moves)
    # |log change|: w 1.39, y 0.69, x 0.29, z 0.02: the three that move it most, most first
    assert [r["assumption"] for r in v["rests_on"]] == ["w", "y", "x"] and v["rests_on_measured"]
    assert v["largest"] == {"ratio": 4.0, "tps_per_user": 50.0}
    assert v["per_gpu"]["intervals"] == [(40.0, 60.0)] and v["per_mw"]["intervals"] == []
