"""Calibration (least squares on the published points, leave-one-out) and uncertainty bands."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from planner import Scenario
from planner.cli import main
from planner.errors import SpecError
from planner.specs.registry import hardware_names, load_hardware
from planner.truth.calibrate import (
    EXCLUDED,
    PARAMETERS,
    TRAINING,
    calibration_block,
    family_hardware,
    fit,
    render,
    sampled_efficiencies,
)
from planner.truth.uncertainty import frontier_band
from planner.truth.validate import load_points

pytestmark = pytest.mark.validation


@pytest.fixture(scope="module")
def result():
    return fit(loo=True)


def test_training_subset_is_declared():
    measured = {p.id for p in load_points() if p.kind == "measured"}
    assert set(TRAINING) | set(EXCLUDED) == measured
    assert not set(TRAINING) & set(EXCLUDED)


def test_fit_improves_the_training_error(result):
    # never worse than the prior (assumed values) nor than what the specs hold now, in what the
    # least squares minimises (the RMS of log errors; the median error may move either way)
    assert result.train_rms_log_after <= result.train_rms_log_before + 1e-9
    assert result.train_rms_log_after <= result.train_rms_log_current + 1e-6


def test_leave_one_out_is_finite(result):
    assert set(result.loo) == set(TRAINING)
    assert math.isfinite(result.loo_error) and result.loo_error >= 0
    assert all(math.isfinite(d["abs_error"]) for d in result.loo.values())


def test_fitted_values_respect_bounds_and_say_what_constrains_them(result):
    for p in PARAMETERS:
        v = result.values[p.name]
        assert p.lo * (1 - 1e-9) <= v <= p.hi * (1 + 1e-9)
        if p.unit == "":
            assert 0.2 <= v <= 1.0
        assert math.isfinite(result.log_sd[p.name])
        assert result.constrained_by[p.name], f"{p.name} is constrained by no training point"
    assert np.allclose(result.covariance, result.covariance.T)


def test_specs_hold_a_consistent_calibration():
    """Whatever the YAML holds: fitted values agree with their calibration block, assumed ones
    have none; every spec still loads."""
    for name in hardware_names():
        h = load_hardware(name).without_stack()  # the published-point fit writes efficiency:
        cal = calibration_block(name)
        if cal is None:
            continue
        for pname, p in cal["parameters"].items():
            for f in p["fields"]:
                assert getattr(h.efficiency, f) == pytest.approx(p["value"], rel=2e-3), (name, pname, f)
        order = cal["covariance_log"]["order"]
        assert np.asarray(cal["covariance_log"]["matrix"]).shape == (len(order), len(order))


def test_render_writes_loadable_fitted_specs(result):
    from planner.specs.reading import parse_yaml
    from planner.specs.registry import bundled_calibration_path, parse_bundled

    for name, h in family_hardware().items():
        text = render(bundled_calibration_path(name).read_text("utf-8"), h, result)
        doc = parse_yaml(text, name)
        new = parse_bundled(name, text).without_stack()
        assert doc["calibration"]["training_points"] == list(TRAINING)
        assert new.efficiency.compute == pytest.approx(result.values["compute"], rel=2e-3)
        assert doc["efficiency"]["compute"]["kind"] == "fitted"
        assert doc["efficiency"]["step_overhead"]["kind"] != "fitted"
        assert render(text, new, result) == text  # idempotent; the prior is kept


def test_cli_calibrate_json(capsys):
    rc = main(["calibrate", "--json", "--no-loo"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["written"] == []
    assert set(doc["parameters"]) == {p.name for p in PARAMETERS}


# ---- uncertainty bands ------------------------------------------------------------------------
BAND_KW = dict(serving="decode", context=2048, gpus=8, weights="fp8", mtp=None, overlap=False)


def test_band_is_ordered_and_brackets_the_nominal_frontier():
    b = frontier_band(Scenario("deepseek-r1", "hgx-h200", **BAND_KW), samples=8)
    assert {"tps_per_user", "lo", "mid", "hi", "nominal", "reach"} <= set(b.columns)
    assert (b.lo <= b.mid + 1e-9).all() and (b.mid <= b.hi + 1e-9).all()
    assert (b.hi > b.lo).any()
    inner = b.iloc[1:-1]
    assert ((inner.nominal >= inner.lo * 0.9) & (inner.nominal <= inner.hi * 1.1)).mean() > 0.8
    # same seed, same band
    b2 = frontier_band(Scenario("deepseek-r1", "hgx-h200", **BAND_KW), samples=8)
    assert np.allclose(b.hi, b2.hi)


def test_band_methods_and_errors():
    h = load_hardware("hgx-h200")
    rng = np.random.default_rng(0)
    for d in sampled_efficiencies(h, rng, 16, method="ranges"):
        assert 0 < d["compute"] <= 1 and 0 < d["hbm"] <= 1 and d["load_imbalance"] >= 1
    with pytest.raises(SpecError):
        frontier_band(Scenario("deepseek-r1", "hgx-h200", mode="bound", **BAND_KW), samples=4)


def test_cli_frontier_band_plot(tmp_path, capsys):
    png = tmp_path / "f.png"
    rc = main(["frontier", "--model", "deepseek-r1", "--hardware", "hgx-h200", "--gpus", "8", "--serving",
               "decode", "--mtp", "off", "--overlap", "off", "--band", "--band-samples", "16",
               "--plot", str(png)])
    out = capsys.readouterr().out
    assert rc == 0 and "uncertainty band" in out and "over 16 draws" in out
    assert png.stat().st_size > 10_000 and png.read_bytes()[:4] == b"\x89PNG"


def test_cli_band_csv_carries_the_band(tmp_path, capsys):
    import pandas as pd

    from planner.truth.uncertainty import DEFAULT_SAMPLES

    base = ["frontier", "--model", "deepseek-r1", "--hardware", "hgx-h200", "--gpus", "8", "--serving",
            "decode", "--mtp", "off", "--overlap", "off"]
    assert main([*base, "--csv", str(tmp_path / "plain.csv")]) == 0
    assert main([*base, "--band", "--band-samples", "16", "--csv", str(tmp_path / "band.csv")]) == 0
    capsys.readouterr()
    plain, band = pd.read_csv(tmp_path / "plain.csv"), pd.read_csv(tmp_path / "band.csv")
    assert list(band.columns[: len(plain.columns)]) == list(plain.columns)
    assert {"band_lo", "band_mid", "band_hi", "band_reach"} <= set(band.columns)
    inside = band.dropna(subset=["band_lo"])
    assert len(inside) > len(band) // 2
    assert (inside.band_lo <= inside.band_mid + 1e-9).all()
    assert (inside.band_mid <= inside.band_hi + 1e-9).all()
    # the 5th and 95th percentiles need more than a couple of draws beyond them on each side
    assert DEFAULT_SAMPLES >= 100
