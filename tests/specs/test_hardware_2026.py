"""The systems a buyer weighs for 2026-27 (Vera Rubin NVL72, MI455X Helios, a TPU7x slice,
Trainium3): each loads with sources, the TPU as a torus, and an unmeasured system's band is the
datasheet-only error, wider for a family nobody here has measured, never narrower than a measured
system's."""

from __future__ import annotations

import json

import pytest

from planner.cli import main
from planner.specs.registry import hardware_names, load_hardware
from planner.truth.uncertainty import DATASHEET_ONLY_LOG_SD, UNMEASURED_FAMILY_LOG_SD, unmeasured_log_sd

NEW = ("vr200-nvl72", "mi455x-helios", "tpu7x-ironwood", "trainium3")


def test_listed_with_a_source_for_every_fact():
    assert set(NEW) <= set(hardware_names())
    for name in NEW:
        hw = load_hardware(name)
        assert hw.sources and all(str(v).strip() for v in hw.sources.values()), name


def test_tpu7x_is_a_torus_slice_by_its_datasheet():
    tpu = load_hardware("tpu7x-ironwood")
    assert tpu.su_topology == "torus" and tpu.torus_shape == (4, 4, 4) and tpu.domain_size == 64
    # Google: 1,200 GB/s bidirectional ICI per chip over 6 links = 600 GB/s per direction
    assert tpu.links_per_chip == 6 and tpu.su_bandwidth == pytest.approx(600e9)
    assert tpu.flops["fp8"] == pytest.approx(4614e12) and "fp4" not in tpu.flops
    assert not tpu.in_switch_reduction
    trn = load_hardware("trainium3")
    assert trn.su_topology == "switched" and trn.su_link == "switch" and not trn.in_switch_reduction


def test_bands_wider_for_unmeasured_systems_and_families():
    assert unmeasured_log_sd(load_hardware("gb200-nvl72")) == 0.0
    assert unmeasured_log_sd(load_hardware("vr200-nvl72")) == DATASHEET_ONLY_LOG_SD      # Blackwell's laws
    for name in ("mi455x-helios", "tpu7x-ironwood", "trainium3"):
        assert unmeasured_log_sd(load_hardware(name)) == UNMEASURED_FAMILY_LOG_SD > DATASHEET_ONLY_LOG_SD


def test_size_prints_the_datasheet_band_of_an_unmeasured_system(capsys):
    argv = ["size", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "tpu7x-ironwood",
            "--min-tps-user", "50", "--demand-tps", "1e5", "--search", "limit"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "tpu7x-ironwood has no measurements of its own" in out and "hgx-h200 has no" not in out
    assert main([*argv, "--json"]) == 0
    opts = json.loads(capsys.readouterr().out)["options"]
    band = opts["tpu7x-ironwood"]["datasheet_band_tps_per_gpu"]
    y = opts["tpu7x-ironwood"]["tps_per_gpu"]
    assert band["lo"] < y < band["hi"] and band["log_sd"] == UNMEASURED_FAMILY_LOG_SD
    assert opts["hgx-h200"]["datasheet_band_tps_per_gpu"] is None
