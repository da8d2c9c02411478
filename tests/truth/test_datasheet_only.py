"""Datasheet-only generalization (planner.truth.runs_fit): a held-out system keeps none of its own
kernel-fitted constants; its laws come from a family member with kernel tables of its own."""

from __future__ import annotations

import numpy as np
import pytest

from planner import Scenario
from planner.physics.step import resolve_precisions
from planner.specs.hardware import COMM_LAW_FIELDS
from planner.specs.registry import load_hardware, load_model
from planner.truth.runs import decode_tpot
from planner.truth.runs_fit import KERNEL_FIELDS, KERNEL_SYSTEMS, datasheet_only, kernel_donor


def _as_scored(name: str, stack: str):
    """The system as the runs fit scores it: the spec's efficiencies with the stack's kernel laws."""
    system = load_hardware(name)
    kernel = system.stacks[stack]
    hw = system.without_stack().replace(
        efficiency={f: getattr(kernel, f) for f in (*COMM_LAW_FIELDS, "gemm", "attn", "moe")}
    )
    return hw.replace(stack=stack)


def _tpot(hw) -> np.ndarray:
    m = load_model("deepseek-r1")
    prec = resolve_precisions(m, hw, "fp8", "fp8")
    dec = np.array([[8.0, 8.0, 1.0, 8.0], [8.0, 1.0, 8.0, 1.0]])
    b = np.array([16.0, 32.0])
    return decode_tpot(
        m,
        hw,
        prec,
        "realistic",
        dec,
        b,
        np.full(2, 1024.0),
        np.full(2, 1024.0),
        np.zeros(2, bool),
        categories=False,
    )[0]


def test_donors_are_family_members_with_their_own_kernels():
    assert kernel_donor("hgx-h200", "hopper") == "hgx-h100"
    assert kernel_donor("hgx-h100", "hopper") == "hgx-h200"
    for name, fam in (("hgx-b200", "blackwell"), ("hgx-b300", "blackwell"), ("gb300-nvl72", "blackwell")):
        d = kernel_donor(name, fam)
        assert d in KERNEL_SYSTEMS and d != name and load_hardware(d).family == fam
    # systems that borrow another's laws are never donors (they would lend that system's kernels)
    assert "hgx-h20" not in KERNEL_SYSTEMS and "hgx-h800" not in KERNEL_SYSTEMS


def test_held_out_system_uses_none_of_its_own_kernel_constants():
    hw = _as_scored("hgx-h200", "trtllm")
    donor = load_hardware("hgx-h100")
    out = datasheet_only(hw, donor)
    for f in KERNEL_FIELDS:
        assert getattr(out.efficiency, f) == getattr(donor.stacks["trtllm"], f)
    assert out.nccl_allreduce == donor.nccl_allreduce
    # its datasheet stays its own
    assert (out.hbm_bandwidth, out.hbm_capacity, out.flops) == (hw.hbm_bandwidth, hw.hbm_capacity, hw.flops)
    # poison every communication constant of its own: a prediction that used one would move
    poisoned = hw.replace(
        efficiency={
            "allreduce_latency": 1.0,
            "a2a_latency": 1.0,
            "a2a_efficiency": 1e-6,
            "allreduce_efficiency": 1e-6,
            "allreduce_large_efficiency": 1e-6,
        },
        nccl_allreduce=None,
    )
    assert _tpot(poisoned).min() > 10 * _tpot(hw).max()  # the poison shows where it is used
    np.testing.assert_allclose(_tpot(datasheet_only(poisoned, donor)), _tpot(datasheet_only(hw, donor)))


def test_no_donor_leaves_the_links_own_constants():
    hw = _as_scored("hgx-b200", "vllm")
    out = datasheet_only(hw, None)
    assert all(getattr(out.efficiency, f) in (None, ()) for f in KERNEL_FIELDS)
    assert np.isfinite(_tpot(out)).all()


def test_bad_key():
    from planner.errors import SpecError
    from planner.truth.runs_fit import held_out

    with pytest.raises(SpecError, match="system or model"):
        held_out(key="gpu")


def test_unmeasured_system_carries_a_wider_band():
    from planner.truth.uncertainty import (
        DATASHEET_ONLY_LOG_SD,
        UNMEASURED_FAMILY_LOG_SD,
        frontier_band,
        unmeasured_log_sd,
    )

    assert unmeasured_log_sd(load_hardware("hgx-h200")) == 0.0
    assert unmeasured_log_sd(load_hardware("hgx-h20")) == DATASHEET_ONLY_LOG_SD
    assert unmeasured_log_sd(load_hardware("mi355x")) == UNMEASURED_FAMILY_LOG_SD > DATASHEET_ONLY_LOG_SD
    # the same system, once as measured and once as not: the band widens, its median stays near
    kw = dict(serving="decode", gpus=8, isl=1024, osl=1024, mtp=0, weights="fp8")
    measured = frontier_band(Scenario("deepseek-r1", "hgx-h200", **kw), samples=24)
    h200 = load_hardware("hgx-h200")
    unmeasured = frontier_band(Scenario("deepseek-r1", h200.replace(name="my-h200"), **kw), samples=24)
    w0 = (measured.hi / measured.lo).median()
    w1 = (unmeasured.hi / unmeasured.lo).median()
    assert w1 > w0 * 1.3
    assert unmeasured.attrs["band_datasheet_log_sd"] == DATASHEET_ONLY_LOG_SD


def test_a_held_out_systems_other_stacks_lend_it_none_of_their_laws():
    # a stack without a law of its own takes the same GPU's other stacks' (Kimi K2 Thinking's INT4
    # experts on TensorRT-LLM take SGLang's H200 law): held out, those must be the donor's too
    import dataclasses

    from planner.specs.hardware import KernelLaw

    hw = _as_scored("hgx-h200", "trtllm")
    donor = load_hardware("hgx-h100")
    slow = KernelLaw(floor=1.0, hbm=1e-6, compute=1e-6)
    poisoned = dataclasses.replace(hw, stacks={
        s: dataclasses.replace(e, moe=tuple((k, slow) for k, _ in e.moe),
                               attn=tuple((k, slow) for k, _ in e.attn))
        for s, e in hw.stacks.items()})
    m = load_model("kimi-k2-thinking")
    prec = resolve_precisions(m, hw)
    assert hw.efficiency.moe_law("int4_wo") is None  # TensorRT-LLM's own tables have none

    def tpot(h):
        dec = np.array([[8.0, 8.0, 1.0, 8.0]])
        return decode_tpot(m, h, prec, "realistic", dec, np.array([32.0]), np.full(1, 1024.0),
                           np.full(1, 1024.0), np.zeros(1, bool), categories=False)[0]

    assert tpot(poisoned).min() > 10 * tpot(hw).max()  # the poison shows where it is used
    np.testing.assert_allclose(tpot(datasheet_only(poisoned, donor)), tpot(datasheet_only(hw, donor)))
