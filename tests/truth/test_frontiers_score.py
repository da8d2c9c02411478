"""Measured frontiers (planner.truth.frontiers): the rules and both scores on a hand-made file
whose predictions are fixed by hand, and the public file scored end to end where it is present."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from planner.cli import main
from planner.errors import SpecError
from planner.truth import frontiers as fr

PUBLIC = Path(__file__).resolve().parents[3] / "shared" / "validation" / "measured_frontiers.csv"

#: an aggregated DeepSeek-R1 point on 8 x B200 (SGLang, FP8, TP8), numbers made up
BASE = dict(
    date="2026-05-01",
    run_url="",
    hardware="B200",
    model="DeepSeek-R1-0528",
    precision="fp8",
    framework="sglang",
    serving="agg",
    spec_decoding="none",
    isl=1024,
    osl=1024,
    concurrency=16,
    tp=8,
    ep=1,
    dp_attention=False,
    prefill_tp="",
    prefill_ep="",
    prefill_dp_attention="",
    decode_tp="",
    decode_ep="",
    decode_dp_attention="",
    prefill_workers="",
    decode_workers="",
    prefill_gpus="",
    decode_gpus="",
    total_gpus=8,
    tps_per_user=50.0,
    tps_per_gpu_output=90.0,
    tps_per_gpu_input=90.0,
    tps_per_gpu_total=180.0,
    ttft_s=0.5,
    tpot_s=0.02,
    e2e_s=0.0,
    image="",
    flags="",
)


def _row(**kw):
    r = {**BASE, **kw}
    # the closed-loop identity the rule checks: output tokens/s = concurrency x 0.9 OSL / e2e
    if not r["e2e_s"]:
        r["e2e_s"] = r["concurrency"] * 0.9 * r["osl"] / (r["tps_per_gpu_output"] * r["total_gpus"])
    return r


def _csv(tmp_path, rows):
    p = tmp_path / "points.csv"
    pd.DataFrame(rows).to_csv(p, index=False)
    return p


def test_rules_are_named_and_counted(tmp_path):
    rows = [
        _row(),
        _row(date="2026-04-01", tps_per_gpu_output=70.0),  # superseded by the May run
        _row(concurrency=32, tps_per_gpu_output=150.0, e2e_s=1.0),  # contradicts its own e2e
        _row(concurrency=64, model="DeepSeek-V4-Pro"),  # no spec
        _row(concurrency=128, tpot_s=float("nan")),
    ]  # measurement missing
    score = fr.score_frontiers(_csv(tmp_path, rows), frontier=False, bound=False)
    s = score.summary()
    # the April run is scored at its own deployment, flagged, and kept out of the envelope
    assert s["points_total"] == 5 and s["points_scored"] == 2
    assert s["unscored"] == {"throughput_identity": 1, "model_not_bundled": 1, "measurement_missing": 1}
    assert s["flags"]["superseded"] == 1
    assert score.rows.loc[1, "flags"] == "superseded" and bool(score.rows.loc[1, "scored"])


def test_point_and_frontier_scores_by_hand(tmp_path, monkeypatch):
    rows = [
        _row(concurrency=c, tps_per_user=u, tps_per_gpu_output=y, tpot_s=1 / u)
        for c, u, y in ((4, 100.0, 40.0), (16, 80.0, 120.0), (64, 40.0, 300.0), (256, 20.0, 250.0))
    ]
    meas = pd.DataFrame(rows)

    def pred(model, hw, dep, **kw):
        m = meas.loc[dep.index]
        # 1.5x every measured throughput, 0.8x every TPOT and TTFT
        return dep.assign(
            output_tps_per_gpu=1.5 * m.tps_per_gpu_output,
            tpot_s=0.8 * m.tpot_s,
            ttft_s=0.8 * m.ttft_s,
            tps_per_user=m.tps_per_user / 0.8,
            bottleneck="compute",
            reason=0,
        )

    def tool_frontier(model, hw, **kw):
        # the tool's frontier: 200 tok/s/GPU up to 90 tok/s/user, 50 up to 120
        f = pd.DataFrame({"tps_per_user": [90.0, 120.0], "tps_per_gpu": [200.0, 50.0]})
        f.attrs["deployments"] = "by hand"
        return f

    monkeypatch.setattr(fr, "predict", pred)
    monkeypatch.setattr(fr, "deployed_frontier", tool_frontier)
    score = fr.score_frontiers(_csv(tmp_path, rows), bound=False)
    s = score.summary()
    assert s["points_scored"] == 4
    assert s["point"]["tps_per_gpu_median_abs_err"] == pytest.approx(0.5)
    assert s["point"]["tpot_median_abs_err"] == pytest.approx(0.2)
    assert s["point"]["ttft_median_abs_err"] == pytest.approx(0.2)
    assert s["point"]["bias"] == pytest.approx(1.5)
    # the measured envelope: (100, 40), (80, 120), (40, 300); (20, 250) is beaten by (40, 300)
    g = s["frontier"]["groups"][0]
    assert g["envelope_points"] == 3
    # ratios: at 100 -> 50/40; at 80 -> 200/120; at 40 -> 200/300
    r = np.array([50 / 40, 200 / 120, 200 / 300])
    assert s["frontier"]["median_abs_err"] == pytest.approx(np.median(np.abs(r - 1)))
    # the worst factor: 200 predicted against 120 measured at 80 tok/s/user
    assert s["frontier"]["worst_factor"] == pytest.approx(200 / 120)
    assert g["worst_factor"] == pytest.approx(max(np.maximum(r, 1 / r)))


def test_bad_files(tmp_path):
    with pytest.raises(SpecError, match="an existing CSV file"):
        fr.load_frontiers(tmp_path / "none.csv")
    p = tmp_path / "bad.csv"
    pd.DataFrame([{"hardware": "B200"}]).to_csv(p, index=False)
    with pytest.raises(SpecError, match="missing"):
        fr.load_frontiers(p)


@pytest.mark.skipif(
    not PUBLIC.exists(),
    reason="the public measured-frontier file (shared/validation) is "
    "not beside this checkout; it is never bundled",
)
def test_public_measured_frontiers(capsys):
    assert main(["validate", "--frontiers", str(PUBLIC), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["points_total"] == 1619
    assert sum(s["unscored"].values()) + s["points_scored"] == s["points_total"]
    # the bound (datasheet peaks, every draft accepted) stays above every measured point
    assert s["bound_violations"] - s["bound_violations_flagged"] == 0
    for k in (
        "tps_per_gpu_median_abs_err",
        "tps_per_gpu_p90_abs_err",
        "tpot_median_abs_err",
        "ttft_median_abs_err",
        "bias",
    ):
        assert np.isfinite(s["point"][k])
    for k in ("median_abs_err", "p90_abs_err", "worst_factor", "groups"):
        assert k in s["frontier"]


def test_implausible_measurements_are_counted_not_scored(tmp_path):
    rows = [
        _row(),
        _row(concurrency=32, ttft_s=-0.5),                   # a negative TTFT
        _row(concurrency=64, ttft_s=1e308),                  # absurd
        _row(concurrency=128, tpot_s=1e308, tps_per_user=1e-308),
    ]
    score = fr.score_frontiers(_csv(tmp_path, rows), frontier=False, bound=False, system=False)
    s = score.summary()
    assert s["points_scored"] == 1
    assert s["unscored"] == {"measurement_implausible": 3}
    # a file none of whose rows can be scored is refused in one line, not scored as NaN
    with pytest.raises(SpecError, match="at least one row that can be scored"):
        fr.score_frontiers(_csv(tmp_path, rows[1:]), frontier=False, bound=False, system=False)


def test_system_score_by_hand():
    # two levels measured on one system: the envelope at 10 is the best point at or above 10
    df = pd.DataFrame({"hardware_spec": "hgx-b200", "model_spec": "deepseek-r1", "isl": 1024.0,
                       "osl": 1024.0, "tps_per_user": [12.0, 30.0, 60.0],
                       "tps_per_gpu_output": [400.0, 300.0, 100.0],
                       "scored": True, "pred_tps_per_user": [11.0, 33.0, 61.0],
                       "pred_output_tps_per_gpu": [440.0, 270.0, 120.0]})

    def tool(h, m, isl, osl):
        return np.array([15.0, 50.0]), np.array([800.0, 150.0])

    cells = fr.system_cells(df, tool, levels=(10.0, 50.0, 100.0))
    # 100 tokens/s per user is measured nowhere: no cell
    assert list(cells.level) == [10.0, 50.0]
    assert list(cells.measured) == [400.0, 100.0]
    assert list(cells.tool) == [800.0, 150.0]
    assert list(cells.own) == [440.0, 120.0]
    s = fr.factor_score((cells.tool / cells.measured).to_numpy())
    assert s["median_factor"] == pytest.approx(np.exp(np.median(np.log([2.0, 1.5]))))
    assert s["bias"] == pytest.approx(1.75) and s["below"] == 0 and s["unreachable"] == 0
    # a tool that never reaches 50: unreachable, and a cell under 0.85x is below
    cells = fr.system_cells(df, lambda *a: (np.array([20.0]), np.array([300.0])), levels=(10.0, 50.0))
    s = fr.factor_score((cells.tool / cells.measured).to_numpy())
    assert s["unreachable"] == 1 and s["below"] == 1 and s["cells"] == 2


def test_measured_runs_with_impossible_figures_are_refused_in_one_line(tmp_path):
    from planner.truth.runs import load_runs

    src = load_runs()
    for col, bad in (("batch_size", 1.5), ("silicon_tpot_ms", 1e308), ("silicon_ttft_ms", -1.0)):
        df = src.head(3).copy()
        df[col] = df[col].astype(object)
        df.loc[df.index[1], col] = bad
        p = tmp_path / f"{col}.csv"
        df.to_csv(p, index=False)
        with pytest.raises(SpecError, match=f"row 3: {col}"):
            load_runs(p)


def test_absurd_figures_print_no_numpy_warnings(tmp_path, capsys):
    import warnings

    rows = [_row(), _row(concurrency=32, tpot_s=0.0), _row(concurrency=64, total_gpus=float("inf"))]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc = main(["validate", "--frontiers", str(_csv(tmp_path, rows)), "--json"])
    assert rc == 0
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)], [str(w.message) for w in caught]


#: the BASE point served disaggregated: one prefill and one decode worker of 8 GPUs each (Dynamo)
DISAGG = dict(serving="disagg", framework="dynamo-sglang", tp="", ep="", dp_attention="", prefill_tp=8,
              prefill_ep=8, prefill_dp_attention=False, decode_tp=8, decode_ep=8, decode_dp_attention=False,
              prefill_workers=1, decode_workers=1, prefill_gpus=8, decode_gpus=8, total_gpus=16)


@pytest.mark.parametrize(("serving", "column", "bad"), [
    ("agg", "ep", 0), ("agg", "tp", -1), ("agg", "tp", 2.5), ("agg", "total_gpus", 0),
    ("agg", "total_gpus", 1e308), ("disagg", "decode_ep", 0), ("disagg", "decode_ep", -8),
    ("disagg", "decode_tp", -1), ("disagg", "prefill_workers", 1e308), ("disagg", "decode_workers", 0.5),
    ("disagg", "decode_gpus", "inf"), ("disagg", "total_gpus", fr.MAX_LAYOUT + 1),
    # an infinite count reaches the recipe matching too (found by fuzzing: a traceback there)
    ("agg", "ep", "inf"), ("disagg", "prefill_workers", "inf"), ("disagg", "decode_ep", "inf")])
def test_impossible_layouts_are_counted_not_scored(tmp_path, serving, column, bad):
    base = {} if serving == "agg" else DISAGG
    rows = [_row(**base), {**_row(**{**base, "concurrency": 32}), column: bad}]
    score = fr.score_frontiers(_csv(tmp_path, rows), frontier=False, bound=False, system=False)
    s = score.summary()
    # the row is read by its own serving mode, so the count is one a deployment of it reads
    assert column in (fr.AGG_LAYOUT if serving == "agg" else fr.DISAGG_LAYOUT)
    assert s["points_scored"] == 1 and s["unscored"] == {"layout_impossible": 1}
    assert score.rows.rule.tolist() == ["", "layout_impossible"]
    # nothing predicted for it: no deployment has that layout
    assert not np.isfinite(score.rows.pred_output_tps_per_gpu[1])


def test_implausible_p99_figures_are_counted_and_kept_out_of_the_p99_scores(tmp_path):
    lo, hi = fr.PLAUSIBLE_MEASUREMENTS["p99_ttft_s"]
    rows = [_row(p99_ttft_s=1.0, p99_tpot_s=0.03),
            _row(concurrency=32, p99_ttft_s=-5.0, p99_tpot_s=0.03),           # below the range
            _row(concurrency=64, p99_ttft_s=1e308, p99_tpot_s=0.03),          # above it
            _row(concurrency=128, p99_ttft_s=1.0, p99_tpot_s=float("inf")),
            _row(concurrency=256, p99_ttft_s=lo, p99_tpot_s=0.03),            # lo itself is out
            _row(concurrency=4, p99_ttft_s=hi, p99_tpot_s=0.03),              # hi itself is in
            _row(concurrency=8, p99_ttft_s="", p99_tpot_s="")]                # blank: no p99 score
    score = fr.score_frontiers(_csv(tmp_path, rows), frontier=False, bound=False, system=False)
    s = score.summary()
    assert score.rows.rule.tolist() == ["", *["measurement_implausible"] * 4, "", ""]
    assert s["unscored"] == {"measurement_implausible": 4} and s["points_scored"] == 3
    # the p99 scores see the two scored rows that give p99 figures (the blank one is left out)
    assert s["p99"]["points"] == 2


@pytest.mark.parametrize(("column", "bad", "expected"), [
    ("concurrency", 0.5, "a whole number of sequences from 1 to 1,000,000, got 0.5"),
    ("concurrency", 1.5, "a whole number of sequences from 1 to 1,000,000, got 1.5"),
    ("concurrency", 1e308, "a whole number of sequences from 1 to 1,000,000, got 1e+308"),
    ("isl", 1.5, "a whole number of tokens from 1 to 10,000,000, got 1.5"),
    # a NaN is shown as the number it is, not as numpy's repr (np.float64(nan))
    ("osl", "nan", "a whole number of tokens from 1 to 10,000,000, got nan")])
def test_fractional_or_absurd_counts_refuse_the_file_in_one_line(tmp_path, capsys, column, bad, expected):
    rows = [_row(), {**_row(concurrency=32), column: bad}]
    top = fr.COUNT_RANGES[column]
    assert f"{top:,.0f}" in expected
    p = _csv(tmp_path, rows)
    with pytest.raises(SpecError) as exc:
        fr.load_frontiers(p)
    assert str(exc.value) == f"{p}: row 3: {column}: {expected}"
    assert main(["validate", "--frontiers", str(p), "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "np." not in err and "Traceback" not in err


def test_the_score_by_date_reads_each_months_builds_apart(tmp_path, monkeypatch):
    # one configuration measured in two months: the May build ran 1.25x faster than the fit
    # predicts (predicted TPOT 1.25x the measured), the April one as predicted
    rows = [_row(date="2026-04-01"), _row(date="2026-05-02", tpot_s=BASE["tpot_s"] / 1.25)]
    tpot = {0: BASE["tpot_s"], 1: BASE["tpot_s"]}

    def pred(model, hw, dep, **kw):
        return dep.assign(output_tps_per_gpu=100.0, tpot_s=[tpot[i] for i in dep.index], ttft_s=1.0,
                          tps_per_user=10.0, bottleneck="compute", reason=0)

    monkeypatch.setattr(fr, "predict", pred)
    months = fr.score_frontiers(_csv(tmp_path, rows), frontier=False, bound=False, system=False).by_date()
    assert [(m["month"], m["points"]) for m in months] == [("2026-04", 1), ("2026-05", 1)]
    assert months[0]["tpot_bias"] == pytest.approx(1.0) and months[1]["tpot_bias"] == pytest.approx(1.25)
    assert months[1]["tpot_median_abs_err"] == pytest.approx(0.25)
    assert {m["platform"] for m in months} == {"rocm" if BASE["hardware"].startswith("MI") else "cuda"}
