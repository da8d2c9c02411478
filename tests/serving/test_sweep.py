"""Large sweeps: chunking does not change the answer, memory is bounded by the chunk, and
Ctrl-C stops cleanly."""

from __future__ import annotations

import numpy as np
import pytest

from planner.cli import main
from planner.serving import sweep as sweep_mod
from planner.serving.search import SearchSpace
from planner.serving.sweep import SweepInterrupted, sweep

KW = dict(contexts=[1024.0, 8192.0], batch_points=64, space=SearchSpace(gpus=8), progress=False)


def test_chunking_does_not_change_the_frontier():
    small = sweep("deepseek-v2-lite", "hgx-h200", chunk=2048, **KW)
    big = sweep("deepseek-v2-lite", "hgx-h200", chunk=1 << 20, **KW)
    assert small.evaluated == big.evaluated > 0
    assert small.feasible == big.feasible
    a = small.frontier.sort_values(["context", "tps_per_user"]).reset_index(drop=True)
    b = big.frontier.sort_values(["context", "tps_per_user"]).reset_index(drop=True)
    assert len(a) == len(b)
    assert np.allclose(a.tps_per_gpu, b.tps_per_gpu, rtol=1e-12)
    for _, g in a.groupby("context"):
        assert (np.diff(g.tps_per_user) > 0).all() and (np.diff(g.tps_per_gpu) <= 0).all()


def test_chunk_bounds_each_evaluation(monkeypatch):
    sizes = []
    real = sweep_mod.evaluate_configs

    def spy(*a, **k):
        sizes.append(np.size(k["b"]))
        return real(*a, **k)

    monkeypatch.setattr(sweep_mod, "evaluate_configs", spy)
    r = sweep("deepseek-v2-lite", "hgx-h200", chunk=4096, **KW)
    assert max(sizes) <= 4096 and r.evaluated > 4096


def test_ctrl_c_stops_cleanly(monkeypatch, capsys, tmp_path):
    calls = {"n": 0}
    real = sweep_mod.evaluate_configs

    def interrupt_later(*a, **k):
        calls["n"] += 1
        if calls["n"] > 3:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(sweep_mod, "evaluate_configs", interrupt_later)
    with pytest.raises(SweepInterrupted) as e:
        sweep("deepseek-v2-lite", "hgx-h200", chunk=2048, **KW)
    assert 0 < e.value.done < e.value.total
    calls["n"] = 0
    out = tmp_path / "f.csv"
    rc = main(["sweep", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--gpus", "8",
               "--batch-points", "64", "--chunk", "2048", "--no-progress", "--csv", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 130 and len(err) == 1 and err[0].startswith("interrupted: ")
    assert not out.exists()


def test_the_command_lines_default_chunk_is_the_sweeps():
    # the CLI keeps the number literal (its --help loads no model code); the two must agree
    from planner.cli import build_parser
    from planner.serving.sweep import DEFAULT_CHUNK

    args = build_parser().parse_args(["sweep", "--model", "kimi-k2-thinking", "--hardware", "gb200-nvl72"])
    assert args.chunk == DEFAULT_CHUNK == 65536
