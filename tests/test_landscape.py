"""Landscapes (planner.fleet.landscape) and the cells they run on (planner.cells): the same table
with one worker and with two, a worker killed mid-run loses no cell, a rerun with one system added
computes only that system's cells, a failed cell is a row with its error, and without Dask the
cells run in one process and say how to install it."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

import planner
from planner import Scenario
from planner.cells import Executor, cell_hash, describe, run_cells
from planner.cli import main
from planner.errors import SpecError
from planner.fleet.landscape import landscape, parse_workload

pytest.importorskip("distributed")

SMALL = dict(search="limit", max_gpus=8, mtp=None)  # small frontiers: seconds for the whole file
MODELS = ["deepseek-v2-lite"]


def _table(ls) -> pd.DataFrame:
    return ls.table.sort_values(["hardware", "model", "workload", "tps_per_user"]).reset_index(drop=True)


def test_one_worker_and_two_give_the_same_table(tmp_path):
    sc = Scenario(systems=("hgx-h200", "hgx-b200"), **SMALL)
    one = landscape(sc, MODELS, ["1k/1k", "4k/1k"], levels=(20, 60), executor=Executor(workers=1))
    two = landscape(sc, MODELS, ["1k/1k", "4k/1k"], levels=(20, 60), executor=Executor(workers=2))
    assert one.run.backend == "one process" and two.run.backend.startswith("dask")
    pd.testing.assert_frame_equal(_table(one), _table(two))
    assert len(one.table) == 2 * 1 * 2 * 2 and one.table.error.isna().all()
    # every row is frontier_at's figure for its cell, as compare's table reads it
    r = one.table.iloc[0]
    cell = sc.replace(systems=(r.hardware,), model=r.model, **parse_workload(r.workload))
    want = planner.frontier_at(cell, [r.tps_per_user]).iloc[0]
    assert r.tps_per_gpu == pytest.approx(float(want.tps_per_gpu), rel=1e-12)


def _dies_once(key):
    """A cell whose first try kills its worker process (the marker file says it already died)."""
    marker, value = key
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return value * 2


def test_a_worker_killed_mid_run_loses_no_cell(tmp_path):
    import cloudpickle

    cloudpickle.register_pickle_by_value(__import__(__name__))
    keys = [(str(tmp_path / f"died-{i}"), i) for i in range(4)]
    run = run_cells(_dies_once, keys, Executor(workers=2))
    assert [c.result for c in run.cells] == [0, 2, 4, 6] and not run.failed
    assert all(os.path.exists(k[0]) for k in keys)  # each cell's first worker did die


def _fails_on_three(key):
    if key == 3:
        raise SpecError("<input>", "model", "a configuration that fits")
    return key


def test_a_failed_cell_is_reported_and_the_others_go_on():
    run = run_cells(_fails_on_three, [1, 2, 3, 4])
    assert [c.result for c in run.cells] == [1, 2, None, 4]
    assert run.failed[0].error == "<input>: model: a configuration that fits"
    assert "1 failed" in describe(run)
    # in a landscape: a model no system of 8 GPUs holds is a row per level with its error
    ls = landscape(Scenario(systems=("hgx-h200",), gpus=1, search="limit"), ["kimi-k2-thinking"], ["1k/1k"],
                   levels=(20,))
    assert ls.table.bottleneck.iloc[0] == "failed" and "fits" in ls.table.error.iloc[0]


def test_a_rerun_with_one_system_added_computes_only_its_cells(tmp_path):
    ex = Executor(workers=1, cache=tmp_path / "cells")
    first = landscape(Scenario(systems=("hgx-h200",), **SMALL), MODELS, ["1k/1k", "4k/1k"], levels=(30,),
                      executor=ex)
    assert first.run.computed == 2
    again = landscape(Scenario(systems=("hgx-h200", "hgx-b200"), **SMALL), MODELS, ["1k/1k", "4k/1k"],
                      levels=(30,), executor=ex)
    assert again.run.computed == 2 and sum(c.cached for c in again.run.cells) == 2
    assert {c.key[0].systems[0] for c in again.run.cells if not c.cached} == {"hgx-b200"}
    pd.testing.assert_frame_equal(_table(first), _table(again)[_table(again).hardware == "hgx-h200"]
                                  .reset_index(drop=True))
    # another question is another cell: a level added recomputes
    third = landscape(Scenario(systems=("hgx-h200",), **SMALL), MODELS, ["1k/1k"], levels=(30, 60),
                      executor=ex)
    assert third.run.computed == 1
    assert cell_hash(("a", 1)) == cell_hash(("a", 1)) != cell_hash(("a", 2))


def test_without_dask_the_cells_run_here_and_say_how_to_install_it(monkeypatch):
    import planner.cells as cells

    monkeypatch.setattr(cells, "have_dask", lambda: False)
    run = run_cells(_fails_on_three, [1, 2], Executor(workers=2))
    assert run.backend == "one process" and "pip install 'moe-planner[dask]'" in describe(run)
    with pytest.raises(SpecError, match="--scheduler: the dask extra"):
        run_cells(_fails_on_three, [1], Executor(scheduler="tcp://127.0.0.1:1"))


def test_landscape_command_writes_table_figures_page_and_json(tmp_path, capsys):
    out = tmp_path / "ls"
    argv = ["landscape", "--hardware", "hgx-h200", "hgx-b200", "--models", "deepseek-v2-lite", "--workloads",
            "1k/1k", "--levels", "20", "60", "--search", "limit", "--max-gpus", "8", "--mtp", "off",
            "--out", str(out), "--workers", "1"]
    assert main([*argv, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["scenario"]["systems"] == ["hgx-h200", "hgx-b200"] and len(got["rows"]) == 4
    assert "2 computed (one process)" in got["run"]
    for name in ("landscape.csv", "landscape.html", "best.png", "heatmap-20.png", "heatmap-60.png"):
        assert (out / name).stat().st_size > 0, name
    page = (out / "landscape.html").read_text()
    assert "<svg" in page and "Best system per model" in page and "http" not in page.split("<body>")[1][:200]
    csv = pd.read_csv(out / "landscape.csv")
    assert list(csv.hardware.unique()) == ["hgx-h200", "hgx-b200"]
    best = {(b["workload"], b["tps_per_user"]): b["best"] for b in got["best"]}
    rows = csv[csv.tps_per_user == 20]
    assert best[("1k/1k", 20.0)] == rows.loc[rows.tps_per_gpu.idxmax(), "hardware"]
    # the rerun keeps every cell
    assert main(argv) == 0
    assert "0 computed" in capsys.readouterr().out
    # bad input: one line, nothing run
    for bad, needle in ((["--workloads", "1k/"], "workloads"), (["--band-samples", "8"], "--band-samples"),
                        (["--workers", "2", "--scheduler", "tcp://x:1"], "--workers"),
                        (["--out", str(tmp_path / "no" / "such" / "ls")], "a directory in one that exists")):
        assert main([*argv, *bad]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and needle in err, err
    assert not (tmp_path / "no").exists()  # nothing made above DIR


def test_parse_workload():
    assert parse_workload("8k/1k") == {"isl": 8000, "osl": 1000}
    assert parse_workload("1024 / 256") == {"isl": 1024, "osl": 256}
    assert parse_workload("chat") == {"workload": "chat"}
    for bad in ("0.5/1", "1k/", "no-such-workload"):
        with pytest.raises(SpecError, match="workloads"):
            parse_workload(bad)


def test_a_scheduler_that_does_not_answer_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    import distributed

    def refuse(*a, **k):
        raise OSError("Timed out trying to connect")

    monkeypatch.setattr(distributed, "Client", refuse)
    cache = tmp_path / "out" / "cells"
    with pytest.raises(SpecError, match="--scheduler: a Dask scheduler that answers at 'tcp://127.0.0.1:1'"):
        run_cells(_fails_on_three, [1], Executor(scheduler="tcp://127.0.0.1:1", cache=cache))
    assert not (tmp_path / "out").exists()
