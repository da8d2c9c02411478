"""Sensitivities: elasticities of tokens/s per GPU to hardware resources, and what-ifs."""

from __future__ import annotations

import json

import pytest

from planner import Scenario
from planner.cli import main
from planner.errors import SpecError
from planner.truth.sensitivity import RESOURCES, elasticities, what_if

# One 8-GPU H200 node serving DeepSeek-R1 decode at 50 tokens/s/user: no scale-out traffic at all.
KW = dict(serving="decode", context=2048, gpus=8, weights="fp8", mtp=None)


@pytest.fixture(scope="module")
def el():
    return elasticities(Scenario("deepseek-r1", "hgx-h200", **KW), at_tps_user=50).set_index("param")


def test_one_row_per_resource(el):
    assert set(el.index) == set(RESOURCES)
    assert el.attrs["config"]["gpus"] == 8


def test_a_resource_that_does_not_bind_has_zero_elasticity(el):
    # one node: the NIC carries nothing; the batch at 50 tok/s/user is far below the memory limit
    # (to the batch solver's tolerance)
    assert el.loc["so_bandwidth", "elasticity"] == pytest.approx(0.0, abs=1e-4)
    assert el.loc["so_bandwidth", "symbolic"] == pytest.approx(0.0, abs=1e-9)
    assert el.loc["hbm_capacity", "elasticity"] == pytest.approx(0.0, abs=1e-4)
    assert el.loc["hbm_capacity", "symbolic"] == pytest.approx(0.0, abs=1e-9)


def test_a_resource_that_binds_has_positive_elasticity(el):
    assert max(el.loc["hbm_bandwidth", "elasticity"], el.loc["flops", "elasticity"]) > 0.1
    for p in ("hbm_bandwidth", "flops", "su_bandwidth"):
        assert el.loc[p, "elasticity"] >= -1e-4


def test_symbolic_partials_match_finite_differences_in_decode(el):
    # decode serving, configuration fixed by the search: sympy d/dp of t_step at the chosen
    # configuration (batch re-solved) equals the frontier's difference on the side where the same
    # terms bind.  Where a max() of two terms is tied within the step the two one-sided differences
    # part (here MLA decode attention at TP 4: its FLOPs and its KV read within 0.1% of each other,
    # so less compute slows it and more does not), and sympy differentiates the branch that binds
    import math

    step = el.attrs["step"]
    for p in ("hbm_bandwidth", "flops", "su_bandwidth"):
        y0, lo, hi = (el.loc[p, c] for c in ("tps_per_gpu", "tps_per_gpu_minus", "tps_per_gpu_plus"))
        sides = (math.log(y0 / lo) / -math.log(1 - step), math.log(hi / y0) / math.log(1 + step))
        assert any(el.loc[p, "symbolic"] == pytest.approx(e, rel=0.1, abs=0.02) for e in sides), (p, sides)
        if abs(sides[0] - sides[1]) < 0.01:  # no kink within the step: the central difference too
            assert el.loc[p, "symbolic"] == pytest.approx(el.loc[p, "elasticity"], rel=0.1, abs=0.02), p
        assert el.loc[p, "step_elasticity"] <= 1e-9  # more of a resource never slows a step


@pytest.mark.parametrize("param", ["hbm_bandwidth", "su_bandwidth", "so_bandwidth", "flops", "hbm_capacity"])
def test_more_of_a_resource_never_lowers_throughput(param):
    w = what_if(Scenario("deepseek-r1", "hgx-h200", **KW), factor=2.0, param=param, at=50)
    # the batch at the target rate is solved to brentq's xtol of 1e-4 sequences: where the change
    # leaves the configuration as it was (HBM capacity here) the two solves differ by ~1e-6
    assert w["gain"] >= 1 - 1e-5, w


def test_what_if_rejects_unknown_resources():
    with pytest.raises(SpecError):
        what_if(Scenario("deepseek-r1", "hgx-h200", **KW), factor=2.0, param="warp_drive", at=50)


def test_cli_sensitivity_table_and_what_if(capsys):
    base = ["sensitivity", "--model", "deepseek-r1", "--hardware", "hgx-h200", "--at", "50", "--gpus", "8",
            "--serving", "decode", "--mtp", "off"]
    rc = main(base + ["--what-if", "su_bandwidth=2", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["param"] == "su_bandwidth" and doc["gain"] >= 1 - 1e-9
    rc = main(base + ["--no-symbolic"])
    out = capsys.readouterr().out
    assert rc == 0 and "HBM bandwidth" in out and "elasticity" in out
    with pytest.raises(SystemExit) as exc:  # argparse usage error: one line, status 2
        main(base + ["--what-if", "su_bandwidth"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "PARAM=FACTOR" in err
