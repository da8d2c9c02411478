"""The fit of the realistic parameters to the measured runs (planner.truth.runs_fit) and the
``stacks:`` block it writes into the hardware specs."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

from planner import Scenario
from planner.cli import main
from planner.errors import SpecError
from planner.specs.hardware import parse_hardware
from planner.specs.reading import parse_yaml
from planner.specs.registry import bundled_hardware_text as _spec_text
from planner.specs.registry import load_hardware
from planner.truth import runs_fit as rf
from planner.truth.runs import score_runs


@pytest.fixture(scope="module")
def fit_cells():
    """The scored runs of the bundled file as the fit sees them, by (family, stack)."""
    return rf.cells(score_runs(stacks=False))


@pytest.fixture(scope="module")
def h200_trtllm_parts(fit_cells):
    """The scored H200 TensorRT-LLM runs of the bundled file, as fit parts."""
    parts = fit_cells[("hopper", "trtllm")]
    keep = []
    for p in parts:
        m = p.systems == "hgx-h200"
        if m.any():
            keep.append(rf._Part(rf._take(p.inputs, m), p.measured_s[m], p.systems[m], p.models[m]))
    return keep


def test_the_fit_prices_each_run_as_its_stack_dispatches(fit_cells):
    # the runs are fitted on the efficiency: block, but each stack's kernels keep their own
    # dispatch: SGLang's all-reduce spans one host (4 GPUs on GB300 NVL72), vLLM's one-shot limits
    # are not TensorRT-LLM's
    from planner.physics.step import allreduce_values

    for (_, stack), parts in fit_cells.items():
        for p in parts:
            assert p.inputs.hw.stack == stack
            assert allreduce_values(p.inputs.hw, "realistic") == allreduce_values(
                p.inputs.hw, "realistic", stack)


def test_fit_recovers_known_parameters(h200_trtllm_parts):
    # runs "measured" at known efficiencies, exactly as the model predicts them: the fit, started
    # from the spec values, must find those efficiencies again (a host time of 0.4 ms a sequence
    # makes 38 of these 199 runs host-bound, which pins it; half the all-to-all kernels' floor,
    # which the attention-DP runs pin; the share on a multi-host fabric at the spec's 0).  The
    # network fraction is the spec's: no run of a second model moves with it by 5%, so it is held
    # there (MODEL_SPREAD), and said
    spec_network = rf._spec_value(h200_trtllm_parts[0].inputs.hw, rf.PARAMETERS[2])
    truth = np.array([0.6, 0.7, spec_network, 10e-6, 0.8e-3, 0.4e-3, 0.5, 0.0])
    parts = []
    for p in h200_trtllm_parts:
        t = p.inputs.tpot(rf._with(p.inputs.hw, rf.PARAMETERS, truth))
        parts.append(dataclasses.replace(p, measured_s=t))
    f = rf.fit_cell(parts, "hopper", "trtllm")
    got = np.array([f.values[p.name] for p in rf.PARAMETERS])
    np.testing.assert_allclose(got, truth, rtol=1e-3)
    assert f.after["tpot_median_abs_err"] < 1e-3
    # the fabric's share of the floors touches no run of a one-host system: held at the spec's
    assert set(f.fitted) == {p.name for p in rf.PARAMETERS} - {"network", "floor_share_fabric"}
    assert set(f.fixed) == {"network", "floor_share_fabric"} and "one model only" in f.fixed["network"]
    assert "not pinned" in f.fixed["floor_share_fabric"]


def test_a_parameter_the_runs_do_not_touch_is_held_and_said(h200_trtllm_parts):
    # measured = predicted at the spec values, but with every run batch-1-like latency bound: the
    # network fraction of single-node TP all-reduces is barely visible.  Whatever is held must say
    # why, and every fitted parameter must have a relative SE under the limit
    f = rf.fit_cell(h200_trtllm_parts, "hopper", "trtllm")
    for name in f.fitted:
        assert f.rel_se[name] < rf.REL_SE_MAX
    for why in f.fixed.values():
        assert "held" in why
    assert len(f.corr) == len(f.fitted)


def test_a_parameter_a_cell_cannot_pin_takes_the_familys_value(fit_cells):
    # Hopper TensorRT-LLM's runs do not pin the compute fraction (only the few runs off the kernel
    # laws take it: gpt-oss-120b's W4A8 experts; relative SE over the limit): alone the cell keeps the
    # spec's value; given its family's fit (every stack together, here one that pinned compute at
    # 0.4321), it holds that value instead, and says so
    parts = fit_cells[("hopper", "trtllm")]
    alone = rf.fit_cell(parts, "hopper", "trtllm", ttft=False)
    assert "compute" not in alone.fitted and "spec value" in alone.fixed["compute"]
    assert alone.values["compute"] == rf._spec_value(parts[0].inputs.hw, rf.PARAMETERS[0])
    family = dataclasses.replace(alone, stack="all stacks", n=1246, fitted=[*alone.fitted, "compute"],
                                 values={**alone.values, "compute": 0.4321},
                                 rel_se={**alone.rel_se, "compute": 0.15})
    merged = rf.fit_cell(parts, "hopper", "trtllm", family, ttft=False)
    assert "compute" not in merged.fitted and merged.values["compute"] == 0.4321
    assert "all hopper stacks' 1246 runs" in merged.fixed["compute"]
    assert merged.ttft is None
    # the held value keeps the family fit's uncertainty: the stacks block records its variance
    # (0.15^2 in log space, uncorrelated with the cell's own parameters) and a band draws it
    # log-normally with that spread, not within a flat +-15%
    assert merged.held_se == {"compute": 0.15} and alone.held_se == {}
    fit = rf.RunsFit([merged], "test.csv", "0" * 64, "2026-12-01", {}, {})
    text = rf.render_stacks(_spec_text("hgx-h200"), rf.stacks_block(fit, "hopper"))
    entry = parse_yaml(text, "x.yaml")["stacks"]["trtllm"]["covariance_log"]
    assert entry["order"] == [*merged.fitted, "compute"]
    m = np.asarray(entry["matrix"], float)
    assert m[-1, -1] == pytest.approx(0.15 ** 2, rel=1e-3) and not m[-1, :-1].any() and not m[:-1, -1].any()


def test_the_step_overhead_is_the_familys_in_every_cell(fit_cells):
    # the per-step overhead trades with the per-kernel one inside one cell's models; it is fitted
    # once per family (every stack's runs together) and each cell holds that value, and says so,
    # while its other parameters are fitted around it
    parts = fit_cells[("blackwell", "vllm")]
    alone = rf.fit_cell(parts, "blackwell", "vllm", ttft=False)
    family = dataclasses.replace(alone, stack="all stacks", n=1163, fitted=[*alone.fitted, "step_overhead"],
                                 values={**alone.values, "step_overhead": 0.37e-3},
                                 rel_se={**alone.rel_se, "step_overhead": 0.12})
    merged = rf.fit_cell(parts, "blackwell", "vllm", family, ttft=False)
    assert merged.values["step_overhead"] == 0.37e-3 and "step_overhead" not in merged.fitted
    assert "fitted once per family" in merged.fixed["step_overhead"]
    assert "kernel_overhead" in merged.fitted
    # its family's standard error goes with it into the stacks block's covariance (a band draws it)
    assert merged.held_se == {"step_overhead": 0.12}


def test_the_host_time_per_sequence_is_a_stacks_own(h200_trtllm_parts):
    # a family fit that pinned the host's time per sequence (on another stack's runs) is not what a
    # cell holds: H200 TensorRT-LLM's runs, none host-bound, do not pin it, so the cell keeps the
    # spec's 0 (no host floor), says so, and its stacks block leaves it out
    alone = rf.fit_cell(h200_trtllm_parts, "hopper", "trtllm", ttft=False)
    assert alone.values["host_per_sequence"] == 0.0
    family = dataclasses.replace(alone, stack="all stacks", fitted=[*alone.fitted, "host_per_sequence"],
                                 values={**alone.values, "host_per_sequence": 70e-6},
                                 rel_se={**alone.rel_se, "host_per_sequence": 0.05})
    own = rf.fit_cell(h200_trtllm_parts, "hopper", "trtllm", family, ttft=False)
    assert own.values["host_per_sequence"] == 0.0 and "spec value" in own.fixed["host_per_sequence"]
    fit = rf.RunsFit([own], "test.csv", "0" * 64, "2026-12-01", {}, {})
    assert "host_per_sequence" not in rf.stacks_block(fit, "hopper")


def test_stacks_block_round_trips_through_the_spec_parser(h200_trtllm_parts):
    f = rf.fit_cell(h200_trtllm_parts, "hopper", "trtllm")
    fit = rf.RunsFit([f], "test.csv", "0" * 64, "2026-12-01", {}, {})
    text = rf.render_stacks(_spec_text("hgx-h200"), rf.stacks_block(fit, "hopper"))
    hw = parse_hardware(parse_yaml(text, "x.yaml"), "x.yaml")
    assert hw.stack == "trtllm" and set(hw.stacks) == {"trtllm"}
    assert hw.efficiency.compute == pytest.approx(f.values["compute"], rel=1e-3)
    assert hw.efficiency.scale_up == hw.efficiency.scale_out == pytest.approx(f.values["network"], rel=1e-3)
    # the efficiency: block as written is still there underneath
    assert hw.without_stack().efficiency == parse_hardware(
        parse_yaml(rf.render_stacks(text, ""), "y.yaml"), "y.yaml").efficiency
    # rendering twice replaces, never appends
    assert rf.render_stacks(text, rf.stacks_block(fit, "hopper")) == text
    # and every line of the trtllm entry fitted to kernels (GEMM, grouped MoE, attention,
    # all-reduce) comes through unchanged
    trt = _spec_text("hgx-h200").split("\n  trtllm:\n")[1].split("\n  vllm:\n")[0]
    kernel = [ln for ln in trt.splitlines() if ln.startswith(rf.KERNEL_LINES)]
    assert any(ln.startswith("    moe_") for ln in kernel)
    assert any(ln.startswith("    attn_") for ln in kernel)
    assert all(ln in text.splitlines() for ln in kernel)


def test_name_at_stack_selects_that_stacks_fit():
    hw = load_hardware("hgx-h200")
    assert hw.stack  # the bundled specs carry a fit; the default is the best-measured stack
    for stack in hw.stacks:
        s = load_hardware(f"hgx-h200@{stack}")
        assert s.stack == stack and s.efficiency == hw.stacks[stack]
    with pytest.raises(SpecError, match="a fitted serving stack"):
        load_hardware("hgx-h200@tgi")


def test_runs_are_scored_with_their_own_stacks_fit():
    from planner import decode_step

    s = score_runs()
    r = s.rows[s.rows.scored & (s.rows.hardware == "hgx-h200") & (s.rows.backend == "sglang")
               & (s.rows["mode"] == "disagg")].iloc[0]
    g = next(g for g in s.inputs if r.name in g.index)
    i = list(g.index).index(r.name)
    G, tp, ep, tpe = g.dec[i]
    kw = dict(gpus=int(G), tp_attn=int(tp), ep=int(ep), tp_moe=int(tpe),
              weights=g.prec.weights["routed_experts"],
              kv=g.prec.kv, overlap=False, mode="realistic")
    at = dict(batch=g.b[i] * G / tp, context=g.isl[i] + g.osl[i] / 2)
    own = decode_step(Scenario(r.model, "hgx-h200@sglang", **kw), **at).step_time
    other = decode_step(Scenario(r.model, "hgx-h200@trtllm", **kw), **at).step_time
    assert r.tpot_realistic_ms == pytest.approx(own * 1e3, rel=1e-9)
    assert own != pytest.approx(other, rel=1e-3)


def test_cli_calibrate_runs_json(capsys, tmp_path):
    # the bundled runs of two Hopper stacks (a user's own file, in the bundled columns): two cells
    # and their family fit, in a fraction of the time of the whole file
    from importlib import resources

    import pandas as pd

    with resources.files("planner.truth.data").joinpath("measured_runs.csv").open("rb") as fh:
        raw = pd.read_csv(fh)
    keep = raw["system"].isin(["h100_sxm", "h200_sxm"]) & raw["backend"].isin(["trtllm", "vllm"])
    path = tmp_path / "hopper_runs.csv"
    raw[keep].to_csv(path, index=False)
    rc = main(["calibrate", "--runs", str(path), "--no-loo", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["written"] == []
    cells = {(c["family"], c["stack"]) for c in doc["cells"]}
    assert cells == {("hopper", "trtllm"), ("hopper", "vllm")}
    for c in doc["cells"]:
        assert all(se < rf.REL_SE_MAX for se in c["rel_se"].values())
    # one family fit per family, on every run of its cells; what a cell holds from it is its value
    fams = {f["family"]: f for f in doc["families"]}
    assert set(fams) == {fam for fam, _ in cells}
    for fam, f in fams.items():
        assert f["n"] == sum(c["n"] for c in doc["cells"] if c["family"] == fam)
        for c in doc["cells"]:
            for name, why in c["fixed"].items() if c["family"] == fam else ():
                if name in rf.FAMILY_ONLY:  # the family's value, fitted or held at a bound there
                    assert "fitted once per family" in why and c["values"][name] == f["values"][name]
                elif "stacks' " in why:
                    assert name in f["fitted"] and c["values"][name] == f["values"][name]
    # the TensorRT-LLM runs alone do not pin the compute fraction (only gpt-oss-120b's W4A8 experts,
    # which no kernel law covers, and dense GEMMs off the GEMM law still take it); both stacks' runs
    # together do
    trt = next(c for c in doc["cells"] if c["stack"] == "trtllm")
    assert "hopper stacks' " in trt["fixed"]["compute"]


def test_cli_write_refuses_a_users_file(tmp_path, capsys):
    p = tmp_path / "mine.csv"
    p.write_text("x\n")
    assert main(["calibrate", "--runs", str(p), "--write"]) == 2
    err = capsys.readouterr().err
    assert "--write" in err and len(err.strip().splitlines()) == 1


def test_a_stacks_block_naming_a_missing_default_is_one_clear_error():
    text = _spec_text("hgx-h200").replace("  default: trtllm", "  default: tgi")
    with pytest.raises(SpecError, match=r"x\.yaml: stacks\.default: one of the stacks listed"):
        parse_hardware(parse_yaml(text, "x.yaml"), "x.yaml")


def test_largest_ratio_band_by_hand():
    import pandas as pd

    from planner.truth.uncertainty import largest_ratio_band

    grid = [10.0, 20.0, 40.0]
    a = pd.DataFrame({"tps_per_user": grid})
    b = pd.DataFrame({"tps_per_user": grid})
    # draw 1: ratios 4, 2, (B at 0.01 of its peak: left out) -> 4; draw 2: ratios 3, 3, 1 -> 3
    a.attrs["draws"] = np.array([[4.0, 2.0, 9.0], [6.0, 3.0, 1.0]])
    b.attrs["draws"] = np.array([[1.0, 1.0, 0.01], [2.0, 1.0, 1.0]])
    r = largest_ratio_band(a, b)
    assert r["draws"] == 2
    assert r["mid"] == pytest.approx(3.5)
    assert r["lo"] == pytest.approx(3.05) and r["hi"] == pytest.approx(3.95)  # 5th / 95th, linear


def test_band_draws_follow_the_stacks_covariance():
    from planner.truth.calibrate import sampled_efficiencies, stack_block

    hw = load_hardware("hgx-h200")
    blk = stack_block(hw)
    assert blk is not None and blk["covariance_log"]["order"]
    draws = sampled_efficiencies(hw, np.random.default_rng(0), 400)
    for i, name in enumerate(blk["covariance_log"]["order"]):
        field_ = blk["parameters"][name]["fields"][0]
        logs = np.log([d[field_] for d in draws])
        sd = np.sqrt(blk["covariance_log"]["matrix"][i][i])
        centre = np.log(getattr(hw.efficiency, field_))
        assert np.median(logs) == pytest.approx(centre, abs=3 * sd / 20 ** 0.5)
        assert np.std(logs) == pytest.approx(sd, rel=0.25)


def _served(parts, spec, t_req, q_w, tau_h):
    """The parts with TTFT "measured" exactly as the model serves it at these TTFT parameters (the
    pass and the wave at the TPOT values ``spec``)."""
    from planner.physics.step import pass_kernels

    out = []
    for p in parts:
        t, w = p.inputs.ttft_parts(rf._with(p.inputs.hw, rf.PARAMETERS,
                                            np.array([spec[q.name] for q in rf.PARAMETERS])))
        out.append(dataclasses.replace(p, measured_ttft_s=t_req + tau_h * pass_kernels(p.inputs.model)
                                       + t + q_w * w))
    return out


def test_ttft_fit_recovers_known_parameters_and_round_trips(h200_trtllm_parts):
    # TTFT "measured" as the model serves it at t_req = 80 ms, 30 us of host time per kernel of the
    # pass and q_w = 0.3: the H200 TensorRT-LLM runs hold three models (DeepSeek-R1, 1,386 kernels
    # a pass; gpt-oss-120b, 508; Llama-3.1-70B, 804), so the fit must find all three again, and the
    # stacks block carry them
    spec = {p.name: rf._spec_value(h200_trtllm_parts[0].inputs.hw, p) for p in rf.PARAMETERS}
    assert len({p.inputs.model.name for p in h200_trtllm_parts}) >= 2
    parts = _served(h200_trtllm_parts, spec, 0.080, 0.3, 30e-6)
    f = rf.fit_ttft(parts, spec)
    assert f is not None and f.fitted == ["ttft_request", "ttft_wave", "ttft_host"]
    assert f.values["ttft_request"] == pytest.approx(0.080, rel=1e-3)
    assert f.values["ttft_wave"] == pytest.approx(0.3, rel=1e-3)
    assert f.values["ttft_host"] == pytest.approx(30e-6, rel=1e-3)
    assert f.after["ttft_median_abs_err"] < 1e-3 < f.before["ttft_median_abs_err"]
    cell = dataclasses.replace(rf.fit_cell(h200_trtllm_parts, "hopper", "trtllm"), ttft=f)
    fit = rf.RunsFit([cell], "test.csv", "0" * 64, "2026-12-01", {}, {})
    text = rf.render_stacks(_spec_text("hgx-h200"), rf.stacks_block(fit, "hopper"))
    hw = parse_hardware(parse_yaml(text, "x.yaml"), "x.yaml")
    assert hw.efficiency.ttft_request == pytest.approx(0.080, rel=1e-3)
    assert hw.efficiency.ttft_wave == pytest.approx(0.3, rel=1e-3)
    assert hw.efficiency.ttft_host == pytest.approx(30e-6, rel=1e-3)


def test_ttft_fit_of_one_kernel_count_leaves_the_host_time_to_t_req(h200_trtllm_parts):
    # runs of one model: every pass launches the same kernels, so the host time and the request
    # latency are one constant; the fit says so and t_req carries both (80 ms + 1,386 x 30 us)
    spec = {p.name: rf._spec_value(h200_trtllm_parts[0].inputs.hw, p) for p in rf.PARAMETERS}
    one = [p for p in h200_trtllm_parts if p.inputs.model.name == "deepseek-r1"]
    f = rf.fit_ttft(_served(one, spec, 0.080, 0.3, 30e-6), spec)
    assert f is not None and "ttft_host" not in f.fitted and f.values["ttft_host"] == 0.0
    assert "not separable from t_req" in f.fixed["ttft_host"]
    assert f.values["ttft_request"] == pytest.approx(0.080 + 1386 * 30e-6, rel=1e-3)


def test_ttft_fit_is_robust_to_artefacts(h200_trtllm_parts):
    # one run in ten measured 20x slow (a warm-up or a stalled benchmark, as the file's 7-second
    # TTFTs beside 40 ms passes): the robust loss keeps the parameters within a few percent, where
    # least squares on the log error would follow the artefacts
    spec = {p.name: rf._spec_value(h200_trtllm_parts[0].inputs.hw, p) for p in rf.PARAMETERS}
    parts = _served(h200_trtllm_parts, spec, 0.080, 0.3, 30e-6)
    bad = []
    for p in parts:
        m = p.measured_ttft_s.copy()
        m[::10] *= 20.0
        bad.append(dataclasses.replace(p, measured_ttft_s=m))
    f = rf.fit_ttft(bad, spec)
    assert f is not None
    assert f.values["ttft_wave"] == pytest.approx(0.3, rel=0.1)
    assert f.after["ttft_median_abs_err"] < 0.05


def test_served_ttft_is_the_pass_plus_request_latency_plus_host_time_plus_the_queued_wave():
    from planner.physics.step import pass_kernels
    from planner.specs.registry import load_model

    s = score_runs()
    for _, r in s.scored.groupby(["backend", "model"]).head(1).iterrows():
        e = load_hardware(r.hardware).with_stack(r.backend).efficiency
        want = (e.ttft_request * 1e3 + e.ttft_host * pass_kernels(load_model(r.model)) * 1e3
                + r.ttft_pass_ms + e.ttft_wave * r.ttft_wave_ms)
        assert r.ttft_realistic_ms == pytest.approx(want, rel=1e-9)
    # bound mode keeps the pass alone: a lower bound on any served TTFT
    assert r.ttft_bound_ms <= r.ttft_pass_ms * (1 + 1e-9)


@pytest.mark.parametrize("value, expect", [('"77 tokens"', "a time .*another dimension"),
                                           ('"-3 us"', "a finite, positive value"),
                                           ("0.5", "a time .*with its unit")])
def test_a_bad_ttft_host_is_one_line(value, expect):
    # the host time per kernel of a prefill pass is a time: another dimension, a negative time or a
    # bare number is refused in one line naming the field
    text = _spec_text("hgx-b200")
    assert 'ttft_host: {value: "' in text
    bad = re.sub(r'(ttft_host: \{value: )"[^"]*"', lambda m: m.group(1) + value, text, count=1)
    with pytest.raises(SpecError, match=r"x\.yaml: stacks\.\w+\.ttft_host\.value: expected " + expect):
        parse_hardware(parse_yaml(bad, "x.yaml"), "x.yaml")


def test_a_host_time_only_one_models_runs_reveal_is_not_fitted(fit_cells):
    # runs "measured" exactly as predicted with a host time of 0.4 ms a sequence, but all of one
    # model: the host binds only that model's runs, so what it pins is that model's serving cost,
    # not the stack's; the cell holds the spec's value (no host floor) and names the model.  The
    # same host time on runs of several models (test_fit_recovers_known_parameters) is fitted.
    parts = [p for p in fit_cells[("hopper", "trtllm")]]
    one = []
    for p in parts:
        m = p.models == "llama-3.1-8b"
        if m.any():
            one.append(rf._Part(rf._take(p.inputs, m), p.measured_s[m], p.systems[m], p.models[m]))
    truth = np.array([0.6, 0.7, 0.5, 10e-6, 0.8e-3, 0.4e-3, 0.5, 0.0])
    synthetic = [dataclasses.replace(p, measured_s=p.inputs.tpot(rf._with(p.inputs.hw, rf.PARAMETERS, truth)))
                 for p in one]
    f = rf.fit_cell(synthetic, "hopper", "trtllm", ttft=False)
    assert "host_per_sequence" not in f.fitted
    assert "one model only (llama-3.1-8b)" in f.fixed["host_per_sequence"]
    host = next(p for p in rf.PARAMETERS if p.name == "host_per_sequence")
    assert f.values["host_per_sequence"] == rf._spec_value(one[0].inputs.hw, host)
