"""The as-deployed search (planner.serving.deployed): recipes read as deployments, only what the
recipes schedule offered, a deployment's numbers consistent by hand, speculation under load."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner import Scenario
from planner.errors import SpecError
from planner.serving.deployed import (
    LENGTH_MEAN,
    MAX_RUNNING_PER_WORKER,
    OUTPUT_YIELD,
    bench_speculation,
    deployed_frontier,
    deployed_points,
    envelope_at,
    from_recipes,
    generic_deployments,
    predict,
    recipes,
)
from planner.serving.frontiers import frontier, frontier_at
from planner.specs.registry import load_hardware, load_model


def _recipe(**kw: str) -> pd.DataFrame:
    base = {c: "" for c in recipes().columns}
    base.update(kw)
    return pd.DataFrame([base])


def test_benchmark_lengths_are_uniform_from_0_8_to_1():
    # InferenceX draws lengths uniformly in [0.8 L, L]: the mean is 0.9 L
    assert LENGTH_MEAN == pytest.approx(0.9)


def test_recipe_rows_become_layouts_by_hand():
    agg = from_recipes(
        _recipe(disagg="false", tp="8", ep="8", dp_attn="true", conc="64", spec_decoding="none"), "sglang"
    )
    r = agg.iloc[0]
    # a DEP8 worker: 8 GPUs, attention DP 8 (TP 1), EP 8; one worker
    assert (r.decode_gpus, r.decode_tp_attn, r.decode_ep, r.decode_workers) == (8, 1, 8, 1)
    assert r.drafts == 0 and not r.disagg
    dis = from_recipes(
        _recipe(
            disagg="true",
            conc="256",
            spec_decoding="mtp",
            mtp_drafts="",
            prefill_workers="2",
            prefill_tp="4",
            prefill_ep="4",
            prefill_dp_attn="true",
            decode_workers="3",
            decode_tp="8",
            decode_ep="8",
            decode_dp_attn="false",
        ),
        "trtllm",
    ).iloc[0]
    assert (dis.prefill_workers, dis.prefill_gpus, dis.prefill_tp_attn) == (2, 4, 1)
    assert (dis.decode_workers, dis.decode_gpus, dis.decode_tp_attn, dis.decode_ep) == (3, 8, 8, 8)
    # TensorRT-LLM's launch script: MTP 3 drafts, 1 with attention DP
    assert dis.drafts == 3
    # a recipe of 0 decode workers serves nothing: not offered
    assert from_recipes(
        _recipe(
            disagg="true",
            conc="8",
            spec_decoding="none",
            prefill_workers="1",
            prefill_tp="8",
            decode_workers="0",
            decode_tp="8",
        ),
        "sglang",
    ).empty


def test_only_the_recipes_layouts_are_offered():
    m, hw = load_model("deepseek-r1"), load_hardware("hgx-h200").with_stack("sglang")
    dep, note = deployed_points(m, hw, disagg=False, precision="fp8", speculate=False, isl=1024, osl=1024)
    r = recipes()
    r = r[
        (r.runner == "h200")
        & (r.framework == "sglang")
        & (r.precision == "fp8")
        & (r.model_prefix == "dsr1")
        & (r.disagg == "false")
        & (r.spec_decoding == "none")
        & (r.isl == "1024")
        & (r.osl == "1024")
    ]
    shipped = {
        (float(t), 1.0 if d == "true" else float(t), float(e or 1))
        for t, e, d in zip(r.tp, r.ep, r.dp_attn, strict=True)
    }
    offered = set(zip(dep.decode_gpus, dep.decode_tp_attn, dep.decode_ep, strict=True))
    assert offered and offered <= shipped
    # the search's own layouts include ones no recipe runs (TP 2 on an 8-GPU node, for one)
    assert "launch recipes" in note


def test_no_more_users_than_the_workers_run():
    m, hw = load_model("deepseek-r1"), load_hardware("hgx-b200").with_stack("trtllm")
    dep, _ = deployed_points(m, hw, disagg=True, precision="fp4", speculate=None, isl=1024, osl=1024)
    base, _ = deployed_points(
        m, hw, disagg=True, precision="fp4", speculate=None, isl=1024, osl=1024, per_octave=0
    )
    keys = [c for c in base.columns if c != "concurrency"]
    top = base.groupby(keys).concurrency.max().rename("scheduled")
    j = dep.join(top, on=keys)
    # every layout offered is a recipe's, and no more users than its decode workers run at once
    # (512 each, or what its recipe schedules where that is more)
    assert j.scheduled.notna().all()
    cap = np.maximum(j.scheduled, MAX_RUNNING_PER_WORKER * j.decode_workers)
    assert (j.concurrency <= cap).all() and (j.concurrency >= 1).all()
    assert MAX_RUNNING_PER_WORKER == 512


def test_a_deployment_is_consistent_by_hand():
    m, hw = load_model("deepseek-r1"), load_hardware("hgx-b200").with_stack("sglang")
    dep = pd.DataFrame(
        [
            {
                "disagg": False,
                "concurrency": 64.0,
                "decode_workers": 1.0,
                "decode_gpus": 8.0,
                "decode_tp_attn": 8.0,
                "decode_ep": 1.0,
                "prefill_workers": 1.0,
                "prefill_gpus": 8.0,
                "prefill_tp_attn": 8.0,
                "prefill_ep": 1.0,
                "drafts": 0,
            }
        ]
    )
    p = predict(m, hw, dep, weights="nvfp4", isl=1024, osl=1024).iloc[0]
    O = 0.9 * 1024
    # the closed loop: each of 64 users gets one request every TTFT + (O - 1) TPOT
    assert p.e2e_s == pytest.approx(p.ttft_s + (O - 1) * p.tpot_s)
    # each request delivers the measured 0.872 of the nominal OSL (the public points' own figures)
    assert p.output_tps_per_gpu == pytest.approx(64 * 0.872 * 1024 / p.e2e_s / 8)
    assert p.tps_per_user == pytest.approx(1 / p.tpot_s)
    # the decode batch is the decoding share of the users (one rank: attention TP 8)
    f = (O - 1) * p.tpot_s / p.e2e_s
    assert p.batch_per_rank == pytest.approx(64 * f, rel=0.02)
    assert p.gpus_total == 8 and p.reason == 0


def test_speculation_under_load_by_hand():
    m = load_model("deepseek-r1")
    pub = bench_speculation(m, 1, "trtllm", 1.0).tokens_per_step("realistic")
    assert pub == pytest.approx(1.92)  # the published tokens per step at one draft
    half = bench_speculation(m, 1, "trtllm", 0.5).tokens_per_step("realistic")
    assert half == pytest.approx(1 + 0.92 * 0.5)
    assert bench_speculation(m, 0, "trtllm").drafts == 0


def test_envelope_reads_the_best_point_at_least_as_fast():
    f = pd.DataFrame({"tps_per_user": [10.0, 20.0, 40.0], "tps_per_gpu": [100.0, 80.0, 30.0]})
    assert envelope_at(f, [5.0, 10.0, 15.0, 40.0]).tolist() == [100.0, 100.0, 80.0, 30.0]
    assert np.isnan(envelope_at(f, [41.0])[0])


def test_frontier_search_deployed_and_limit():
    m, hw = "deepseek-r1", "hgx-b200"
    dep = frontier(Scenario(m, hw, serving="disaggregated", search="deployed", weights="nvfp4", mtp=0))
    assert dep.attrs["search"] == "recipes" and len(dep)   # "deployed": the recipes search's earlier name
    assert (np.diff(dep.tps_per_user) >= 0).all() and (np.diff(dep.tps_per_gpu) <= 1e-9).all()
    at = frontier_at(Scenario(m, hw, search="deployed", serving="disaggregated", weights="nvfp4", mtp=0),
                     [30.0])
    assert at.tps_per_gpu.iloc[0] == pytest.approx(envelope_at(dep, [30.0])[0])
    # no stack ships what ideal software could: the limit search's envelope is at least as high
    lim = frontier_at(Scenario(m, hw, serving="disaggregated", weights="nvfp4", mtp=0), [30.0])
    assert lim.tps_per_gpu.iloc[0] >= at.tps_per_gpu.iloc[0]
    with pytest.raises(SpecError, match="search"):
        frontier(Scenario(m, hw, search="ideal"))
    with pytest.raises(SpecError, match="aggregated or disaggregated"):
        deployed_frontier(
            load_model(m), load_hardware(hw), serving="decode", isl=1024, osl=1024, weights=None
        )


def test_cli_deployed_keeps_the_limit_frontier_beside_it(tmp_path, capsys):
    import json

    from planner.cli import main

    png = tmp_path / "f.png"
    args = [
        "frontier",
        "--model",
        "deepseek-r1",
        "--hardware",
        "hgx-b200",
        "--search",
        "deployed",
        "--weights",
        "nvfp4",
        "--mtp",
        "off",
        "--json",
        "--plot",
        str(png),
    ]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["search"] == "recipes" and out["points"] and out["limit_points"]
    assert png.stat().st_size > 0
    # a layout asked of the as-deployed search is refused in one line (the recipes fix the layouts)
    assert main([*args[:-3], "--gpus", "8"]) == 2
    assert "the limit search with it" in capsys.readouterr().err
    # and without --search it is the limit search's question: the default follows
    assert (
        frontier(Scenario("deepseek-r1", "hgx-b200", gpus=8, weights="nvfp4",
                          mtp=0)).attrs.get("search") == "limit"
    )
    assert frontier(Scenario("deepseek-r1", "hgx-b200", weights="nvfp4", mtp=0)).attrs["search"] == "rules"


def test_where_no_recipe_fits_the_layouts_every_stack_runs_take_over():
    # Kimi K2 in BF16 (2.1 TB) fits no H100 recipe (8 and 16 GPUs: 1.28 TB): 32 GPUs and more do
    f = frontier(Scenario("kimi-k2", "hgx-h100", serving="disaggregated", search="recipes", weights="bf16"))
    assert len(f) and "no recipe deployment" in f.attrs["deployments"]
    assert (f.gpus_total >= 32).all()
    # a GB200 NVL72 "node" for these layouts is one tray's 4 GPUs, not the 72-GPU domain
    dep = generic_deployments(load_hardware("gb200-nvl72"), False, False, "vllm")
    assert set(dep.decode_gpus) == {4.0, 8.0, 16.0, 32.0, 64.0}   # wide EP inside the 72-GPU domain
    g = frontier(Scenario("mixtral-8x7b", "gb200-nvl72", serving="aggregated", search="recipes"))
    assert len(g) and g.attrs["search"] == "recipes"


def test_a_system_the_matrices_do_not_cover_takes_its_class_recipes():
    from planner.serving.deployed import recipe_runner

    assert recipe_runner(load_hardware("hgx-b200")) == ("b200", False)
    assert recipe_runner(load_hardware("mi355x")) == ("mi355x", False)
    rack = load_hardware("gb300-nvl72").replace(name="my-rack")
    assert recipe_runner(rack) == ("gb300", True)
    assert recipe_runner(load_hardware("hgx-h20")) == ("h200", True)
    assert recipe_runner(load_hardware("rtx-6000d-server"))[1] is False   # PCIe: none
    f = frontier(Scenario("deepseek-r1", rack, serving="disaggregated", weights="nvfp4", mtp=0,
                          search="recipes"))
    assert "as run on gb300" in f.attrs["deployments"]
    # the rules search borrows no other system's recipes: a renamed rack is the same hardware
    r = frontier(Scenario("deepseek-r1", rack, serving="disaggregated", weights="nvfp4", mtp=0))
    assert r.attrs["search"] == "rules" and "gb300" not in r.attrs["deployments"]


def test_a_worker_of_tp_1_and_ep_16_is_16_gpus():
    # vLLM's and SGLang's GB200 recipes write an attention-DP worker as tp 1, ep N: N GPUs
    dep = from_recipes(_recipe(disagg="true", conc="64", spec_decoding="none", decode_workers="1",
                               decode_tp="1", decode_ep="16", decode_dp_attn="true", prefill_workers="2",
                               prefill_tp="1", prefill_ep="4", prefill_dp_attn="true"), "vllm")
    row = dep.iloc[0]
    assert (row.decode_gpus, row.decode_tp_attn, row.decode_ep) == (16, 1, 16)
    assert (row.prefill_gpus, row.prefill_tp_attn, row.prefill_ep) == (4, 1, 4)
    assert dep.attrs["dropped"] == {}


def test_a_recipe_row_that_gives_no_deployment_is_counted_by_reason():
    rows = pd.concat([
        _recipe(disagg="true", conc="8", spec_decoding="none", decode_workers="1", decode_tp="1",
                decode_ep="1", decode_dp_attn="true", prefill_workers="1", prefill_tp="4", prefill_ep="4"),
        _recipe(disagg="false", tp="8", ep="8", conc="", spec_decoding="none"),
        _recipe(disagg="false", tp="8", ep="8", conc="16", spec_decoding="none"),
    ], ignore_index=True)
    dep = from_recipes(rows, "sglang")
    assert len(dep) == 1
    assert dep.attrs["dropped"] == {"worker_size_not_stated": 1, "no_concurrency": 1}


def test_the_as_deployed_frontier_counts_what_it_could_not_use():
    model, hw = load_model("deepseek-r1"), load_hardware("hgx-h200")
    df = deployed_frontier(model, hw, serving="disaggregated", isl=1024, osl=1024, weights="fp8")
    d = df.attrs["dropped"]
    assert d["recipe_rows_read"] > 0
    assert set(d) == {"recipe_rows_read", "recipe_rows_dropped", "deployments_not_fitting"}


@pytest.mark.parametrize("spelling, name", [("GB200 NVL72", "gb200-nvl72"), ("gb200", "gb200-nvl72"),
                                            ("GB200-NVL72", "gb200-nvl72"), ("GB300 NVL72", "gb300-nvl72"),
                                            ("H200", "hgx-h200"), ("HGX H200", "hgx-h200"),
                                            ("MI355X", "mi355x"), ("b200", "hgx-b200")])
def test_hardware_names_take_their_usual_spellings(spelling, name):
    from planner.specs.registry import canonical_hardware_name

    assert canonical_hardware_name(spelling) == name
    assert load_hardware(spelling).name == name


def test_an_unknown_system_is_not_guessed():
    from planner.specs.registry import canonical_hardware_name

    assert canonical_hardware_name("Z900") is None
    with pytest.raises(SpecError):
        load_hardware("Z900")


def test_the_output_per_request_is_what_the_public_points_deliver():
    # measured output tokens/s x median E2E / (concurrency x OSL) over the public frontier points:
    # 0.872, below the 0.9 of the uniform length draw alone
    assert OUTPUT_YIELD == pytest.approx(0.872)
    assert OUTPUT_YIELD < LENGTH_MEAN


def _disagg(conc: float, prefill_workers: float = 1.0, decode_workers: float = 4.0) -> dict:
    return {"disagg": True, "concurrency": conc, "decode_workers": decode_workers, "decode_gpus": 8.0,
            "decode_tp_attn": 1.0, "decode_ep": 8.0, "prefill_workers": prefill_workers, "prefill_gpus": 8.0,
            "prefill_tp_attn": 8.0, "prefill_ep": 8.0, "drafts": 0}


def test_the_closed_loop_never_outruns_its_prefill_pool():
    m, hw = load_model("deepseek-r1"), load_hardware("hgx-b200").with_stack("sglang")
    dep = pd.DataFrame([_disagg(c) for c in (4.0, 64.0, 512.0, 2048.0, 8192.0)])
    p = predict(m, hw, dep, weights="fp8", isl=1024, osl=1024)
    assert (p.reason == 0).all()
    # requests a second never above what the prefill pool serves
    assert (p.request_rate <= p.prefill_capacity * (1 + 1e-6)).all()
    # one prefill worker for 32 decode GPUs: the largest loops are bounded by it, and what they ask
    # beyond it waits: by Little's law on the loop, TTFT = N / rate - (O - 1) TPOT
    top = p.iloc[-1]
    assert top.request_rate == pytest.approx(top.prefill_capacity, rel=1e-3)
    O = 0.9 * 1024
    assert top.ttft_s == pytest.approx(8192 / top.prefill_capacity - (O - 1) * top.tpot_s, rel=1e-3)
    assert top.ttft_s > 2 * top.ttft_unqueued_s
    # a small loop asks less than the pool serves and waits for nothing beyond its wave
    assert p.ttft_s.iloc[0] == pytest.approx(p.ttft_unqueued_s.iloc[0])


def test_a_larger_prefill_pool_serves_a_saturated_loop_faster():
    m, hw = load_model("deepseek-r1"), load_hardware("hgx-b200").with_stack("sglang")
    dep = pd.DataFrame([_disagg(8192.0, 1.0), _disagg(8192.0, 2.0)])
    p = predict(m, hw, dep, weights="fp8", isl=1024, osl=1024)
    assert p.prefill_capacity.iloc[1] == pytest.approx(2 * p.prefill_capacity.iloc[0])
    assert p.ttft_s.iloc[1] < p.ttft_s.iloc[0]
    assert p.request_rate.iloc[1] > p.request_rate.iloc[0]


def test_rule_layouts_come_from_the_hardware():
    from planner.serving.deployed import rule_layouts

    m = load_model("deepseek-r1")
    # an 8-GPU node that is its own scale-up domain: TP over one node or two, DEP8, 2-4 nodes over the NIC
    h200 = set(rule_layouts(m, load_hardware("hgx-h200")))
    assert {(8, 8, 1), (8, 8, 8), (8, 1, 8), (16, 1, 16), (32, 8, 32), (16, 16, 16)} <= h200
    assert max(g for g, _, _ in h200) == 32
    # a rack: a tray of 4 GPUs is the node; attention DP + EP doubles up to the 72-GPU domain
    rack = set(rule_layouts(m, load_hardware("gb200-nvl72")))
    assert {(4, 4, 1), (4, 1, 4), (8, 1, 8), (64, 1, 64), (72, 1, 72)} <= rack
    assert all(g <= 72 for g, _, _ in rack)
    # a dense model has no experts to spread: attention TP layouts alone
    assert all(ep == 1 for _, _, ep in rule_layouts(load_model("llama-3.1-70b"), load_hardware("hgx-h200")))


def test_the_rules_search_rate_matches_its_prefill_pools():
    from planner.serving.deployed import rate_matched, rules_deployments

    m, hw = load_model("deepseek-r1"), load_hardware("hgx-b200")
    first = predict(m, hw, rules_deployments(m, hw, disagg=True, speculate=False).assign(prefill_workers=1e4),
                    weights="nvfp4", isl=1024, osl=1024)
    dep = rate_matched(first)
    p = predict(m, hw, dep, weights="nvfp4", isl=1024, osl=1024)
    ok = p[p.reason == 0]
    # the fewest prefill workers that serve what the decode workers ask: with one more decode worker
    # per prefill worker the ratio falls, and pools at the matched size never queue much beyond their wave
    assert set(ok.decode_workers) == {1.0, 2.0, 4.0, 8.0}
    matched = ok.groupby(["decode_gpus", "decode_tp_attn", "prefill_gpus", "prefill_tp_attn",
                          "decode_workers"]).prefill_workers.max()
    assert (matched >= 1).all()
    assert (ok.request_rate <= ok.prefill_capacity * (1 + 1e-6)).all()


def test_the_rules_frontier_does_not_depend_on_a_systems_name_or_its_recipes():
    m = load_model("deepseek-r1")
    b200 = load_hardware("hgx-b200")
    a = frontier(Scenario(m, b200, serving="disaggregated", weights="nvfp4", mtp=0))
    # renamed, it loses its recipes (the priors) but not the rules: within 15% at every level
    b = frontier(Scenario(m, b200.replace(name="what-if"), serving="disaggregated", weights="nvfp4", mtp=0))
    levels = [10.0, 20.0, 50.0, 100.0]
    ya, yb = envelope_at(a, levels), envelope_at(b, levels)
    ok = np.isfinite(ya)
    assert ok.any() and np.all(np.isfinite(yb[ok]))
    assert np.all(np.abs(yb[ok] / ya[ok] - 1) <= 0.15), (ya, yb)


def test_a_ttft_limit_keeps_the_rules_search_and_drops_the_slower_deployments():
    m, hw = load_model("deepseek-r1"), load_hardware("hgx-b200")
    free = frontier(Scenario(m, hw, serving="disaggregated", weights="nvfp4", mtp=0), all_points=True)
    capped = frontier(Scenario(m, hw, serving="disaggregated", weights="nvfp4", mtp=0, max_ttft=2.0),
                      all_points=True)
    assert capped.attrs["search"] == "rules" and capped.attrs["max_ttft"] == 2.0
    assert len(capped) and (capped.ttft_s <= 2.0).all() and (free.ttft_s > 2.0).any()
    assert len(capped) == int((free.ttft_s <= 2.0).sum())
    assert any("TTFT above 2 s" in k for k in capped.attrs["dropped"]["deployments_not_fitting"])
    with pytest.raises(SpecError, match="max_ttft"):
        frontier(Scenario(m, hw, serving="disaggregated", max_ttft=-1.0))


@pytest.mark.parametrize("field", ["flops", "hbm_bandwidth"])
def test_a_resource_five_percent_larger_moves_the_rules_frontier_by_at_most_five_percent(field):
    from planner.explorer import what_if

    m, base = load_model("kimi-k2-thinking"), load_hardware("gb200-nvl72")
    hw = what_if(base, None, {field: 1.05})
    assert hw.name != base.name            # renamed, so it loses the recipes' priors: the rules stay
    levels = [10.0, 20.0, 50.0, 100.0]
    a = envelope_at(frontier(Scenario(m, base, serving="disaggregated", mtp=0)), levels)
    b = envelope_at(frontier(Scenario(m, hw, serving="disaggregated", mtp=0)), levels)
    ok = np.isfinite(a)
    assert ok.any() and np.isfinite(b[ok]).all()
    # more of one resource never lowers the frontier by more than the priors it lost, nor raises it
    # beyond the resource's own factor
    assert np.all(b[ok] / a[ok] <= 1.05 * (1 + 1e-6)), (a, b)
    assert np.all(b[ok] / a[ok] >= 0.85), (a, b)


def test_a_spec_renamed_after_a_bundled_system_takes_none_of_its_recipes():
    from planner.serving.deployed import recipe_runner

    rtx = load_hardware("rtx-pro-6000-server")
    impostor = rtx.replace(name="gb200-nvl72")
    assert recipe_runner(load_hardware("gb200-nvl72")) == ("gb200", False)
    assert recipe_runner(load_hardware("gb200-nvl72").with_stack("sglang")) == ("gb200", False)
    assert recipe_runner(impostor)[0] != "gb200"
    m = load_model("deepseek-v2-lite")
    a = frontier(Scenario(m, rtx, serving="disaggregated", mtp=0))
    b = frontier(Scenario(m, impostor, serving="disaggregated", mtp=0))
    levels = [10.0, 20.0, 50.0, 100.0]
    np.testing.assert_allclose(envelope_at(b, levels), envelope_at(a, levels), rtol=1e-9)
