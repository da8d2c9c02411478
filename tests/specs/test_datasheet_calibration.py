"""Datasheets apart from fits: each bundled system's file holds what a datasheet says, its
calibration (efficiencies, fits per stack) lives in hardware_specs/calibration/, and a system
given as a datasheet alone predicts with its family's reference calibration and says so."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from planner.errors import SpecError
from planner.serving.frontiers import calibration_label
from planner.specs.hardware import CALIBRATION_KEYS, FAMILY_REFERENCE, load_hardware_file, parse_hardware
from planner.specs.reading import parse_yaml
from planner.specs.registry import (
    bundled_calibration_path,
    bundled_hardware_path,
    bundled_hardware_text,
    hardware_names,
    load_hardware,
)


@pytest.mark.parametrize("name", hardware_names())
def test_a_bundled_file_is_a_datasheet_and_its_calibration_lies_apart(name):
    sheet = yaml.safe_load(bundled_hardware_path(name).read_text("utf-8"))
    assert not set(sheet) & set(CALIBRATION_KEYS)
    cal = yaml.safe_load(bundled_calibration_path(name).read_text("utf-8"))
    assert cal["calibrates"] == name and set(cal) <= {"calibrates", *CALIBRATION_KEYS}
    # every datasheet fact has a source
    for section in ("gpu", "scale_up", "scale_out", "system"):
        for key, fact in sheet[section].items():
            if isinstance(fact, dict) and "value" in fact:
                assert fact.get("source"), (name, section, key)


@pytest.mark.parametrize("name", hardware_names())
def test_the_two_files_load_as_the_one_self_contained_file(name):
    text = bundled_hardware_text(name)
    one = parse_hardware(parse_yaml(text, "one.yaml"), "one.yaml")
    two = load_hardware(name)
    assert one == two and one.stacks == two.stacks and one.stack == two.stack
    assert one.nccl_allreduce == two.nccl_allreduce and two.calibration_from == ""


def _datasheet(tmp_path: Path, name: str, new_name: str = "my-gpu") -> Path:
    text = re.sub(r"^name: .*$", f"name: {new_name}", bundled_hardware_path(name).read_text("utf-8"),
                  count=1, flags=re.M)
    p = tmp_path / f"{new_name}.yaml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(("name", "family"), [("mi455x-helios", "blackwell"), ("hgx-h200", "hopper")])
def test_a_datasheet_alone_borrows_its_familys_reference_and_says_so(tmp_path, name, family):
    hw = load_hardware_file(_datasheet(tmp_path, name))
    ref = load_hardware(FAMILY_REFERENCE[family])
    assert hw.family == family and hw.calibration_from == ref.name
    # the datasheet's facts are its own; the stacks' fractions are the reference's
    own = load_hardware(name)
    assert (hw.hbm_bandwidth, hw.flops, hw.domain_size) == (own.hbm_bandwidth, own.flops, own.domain_size)
    assert hw.stack == ref.stack and set(hw.stacks) == set(ref.stacks)
    for stack, eff in hw.stacks.items():
        theirs = ref.stacks[stack]
        assert (eff.compute, eff.hbm, eff.kernel_overhead, eff.gemm, eff.moe, eff.attn) == (
            theirs.compute, theirs.hbm, theirs.kernel_overhead, theirs.gemm, theirs.moe, theirs.attn)
        # the fits to the reference's own links are not borrowed
        assert eff.a2a_floors == () and eff.allreduce_latency is None
    assert hw.nccl_allreduce is None
    assert "borrowed from" in calibration_label(hw) and ref.name in calibration_label(hw)
    assert hw.sources["efficiency.compute"].startswith(f"borrowed from {ref.name}")
    assert "borrowed" not in hw.sources["gpu.hbm_bandwidth"]


def test_the_command_line_says_the_calibration_is_borrowed(tmp_path, capsys):
    from planner.cli import main

    p = _datasheet(tmp_path, "mi455x-helios")
    assert main(["frontier", "--model", "deepseek-v2-lite", "--hardware", str(p), "--search", "limit"]) == 0
    out = capsys.readouterr().out
    assert "borrowed from hgx-b200 (a datasheet alone" in out


def test_a_calibration_file_beside_a_datasheet_is_its_own(tmp_path):
    p = _datasheet(tmp_path, "hgx-h200", "hgx-h200-copy")
    (tmp_path / "calibration").mkdir()
    cal = bundled_calibration_path("hgx-h200").read_text("utf-8").replace("calibrates: hgx-h200",
                                                                           "calibrates: hgx-h200-copy")
    (tmp_path / "calibration" / p.name).write_text(cal)
    hw = load_hardware_file(p)
    assert hw.calibration_from == "" and hw.stacks == load_hardware("hgx-h200").stacks
    # another system's calibration is refused, naming the calibration file
    (tmp_path / "calibration" / p.name).write_text(cal.replace("calibrates: hgx-h200-copy", "calibrates: x"))
    with pytest.raises(SpecError, match=r"calibration/hgx-h200-copy.yaml: calibrates: the name of"):
        load_hardware_file(p)
    # a bad value in a calibration block is reported in the calibration file, not the datasheet
    bad = cal.replace("  hbm: {value: 0.8,", "  hbm: {value: 1.8,", 1)
    assert bad != cal
    (tmp_path / "calibration" / p.name).write_text(bad)
    with pytest.raises(SpecError, match=r"calibration/hgx-h200-copy.yaml: efficiency.hbm"):
        load_hardware_file(p)
    # a datasheet fact in a calibration file is refused
    (tmp_path / "calibration" / p.name).write_text(cal + "gpu: {}\n")
    with pytest.raises(SpecError, match=r"calibration/hgx-h200-copy.yaml: gpu: a calibration block"):
        load_hardware_file(p)


def test_a_family_without_a_reference_needs_its_own_calibration(tmp_path):
    p = _datasheet(tmp_path, "hgx-h200")
    p.write_text(p.read_text().replace("family: hopper", "family: other"))
    with pytest.raises(SpecError, match=r"my-gpu.yaml: efficiency: an efficiency: block, or a calibration"):
        load_hardware_file(p)
