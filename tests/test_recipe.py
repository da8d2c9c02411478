"""Launch recipes (``moe-planner recipe``, planner/serving/launch.py): every flag from the stacks'
table, the recipe read back to the same deployment and prediction, results scored against it."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

from planner import Scenario
from planner.cli import main
from planner.errors import SpecError
from planner.serving import launch
from planner.serving.deployed import LAYOUT_COLUMNS, predict
from planner.specs.registry import load_hardware, load_model

STACKS = ("trtllm", "sglang", "vllm")
RATES = (20.0, 50.0, 100.0)
#: the main job's systems (``moe-planner compare`` defaults)
SYSTEMS = ("gb200-nvl72", "hgx-h200")


@pytest.fixture(scope="module")
def main_job() -> dict:
    """Kimi K2 Thinking, disaggregated, ISL/OSL 1024, on both systems, each stack, 20/50/100."""
    return {(h, s, x): launch.build(Scenario("kimi-k2-thinking", h, stack=s, serving="disaggregated"), at=x,
                                    date="2026-12-07")
            for h in SYSTEMS for s in STACKS for x in RATES}


def test_flag_table_is_complete() -> None:
    t = launch.flags_table()
    for stack, e in t["stacks"].items():
        assert e["version"] and e["vendors"] and e["worker"]
        for f in e["flags"]:
            assert f["flag"].startswith("--") and f["field"] in launch.FIELDS, (stack, f)
            assert f["meaning"] and f["source"], (stack, f)
    for f in t["bench"]["flags"]:
        assert f["flag"].startswith("--") and f["source"].startswith("https://")


def _check_flags(r: launch.Recipe) -> None:
    used = launch.flags_used(r.text)
    stack = r.sidecar["stack"]
    held = set(launch.flat_flags(stack))
    assert used[stack] and used["bench"]
    assert set(used[stack]) <= held, set(used[stack]) - held
    assert set(used["bench"]) <= held, set(used["bench"]) - held


def _round_trip(r: launch.Recipe) -> None:
    s = r.sidecar
    dep, bench = launch.read_recipe(r.text)
    assert len(dep) == 1 and bench["stack"] == s["stack"]
    assert (bench["isl"], bench["osl"]) == (s["isl"], s["osl"])
    got = dep.iloc[0]
    want = s["deployment"]
    for c in (*LAYOUT_COLUMNS, "concurrency", "drafts"):
        if c.startswith("prefill") and not want["disagg"]:
            continue
        assert float(got[c]) == pytest.approx(want[c]), c
    assert bool(got.disagg) == want["disagg"]
    hw = load_hardware(s["hardware"]).with_stack(s["stack"])
    p = predict(load_model(s["model"]), hw, dep, weights=s["weights"], kv=s["kv"], isl=s["isl"], osl=s["osl"])
    assert int(p.reason.iloc[0]) == 0
    for col, key in (("output_tps_per_gpu", "output_tps_per_gpu"), ("tps_per_user", "tps_per_user"),
                     ("ttft_s", "ttft_median_s"), ("tpot_s", "tpot_median_s")):
        assert float(p[col].iloc[0]) == pytest.approx(s["predicted"][key], rel=1e-9), col


def test_main_job_recipes(main_job: dict) -> None:
    """GB200 NVL72 and HGX H200 at 20, 50 and 100 tokens/s/user: a recipe per stack, every flag in
    the stack's table, read back to the same deployment and prediction."""
    for (h, s, x), r in main_job.items():
        assert r.sidecar["predicted"]["tps_per_user"] >= x
        assert r.sidecar["calibration"].startswith(f"{h}: {s} fit")
        assert "# predicted:" in r.text and r.sidecar["version"] in r.text.splitlines()[0]
        assert re.fullmatch(r"[a-z0-9-]{1,63}", r.name)
        _check_flags(r)
        _round_trip(r)


def test_speculation_and_aggregated_round_trip() -> None:
    """An aggregated recipe with the model's own MTP layers (DeepSeek-R1 on HGX B200)."""
    for stack in STACKS:
        r = launch.build(Scenario("deepseek-r1", "hgx-b200", stack=stack, serving="aggregated", mtp=1),
                         at=50.0)
        assert r.sidecar["deployment"]["drafts"] > 0
        assert "without Dynamo:" in r.text
        _check_flags(r)
        _round_trip(r)


def test_a_flag_outside_the_table_fails(main_job: dict) -> None:
    r = main_job[("gb200-nvl72", "sglang", 50.0)]
    bad = r.text.replace("- --trust-remote-code\n", "- --enable-magic\n", 1)
    assert bad != r.text
    with pytest.raises(SpecError, match="--enable-magic"):
        launch.flags_used(bad)
    r = main_job[("hgx-h200", "trtllm", 50.0)]
    bad = r.text.replace('"enable_chunked_prefill":true', '"enable_magic":true', 1)
    assert bad != r.text
    with pytest.raises(SpecError, match="enable_magic"):
        launch.read_recipe(bad)


def test_refusals(tmp_path, capsys) -> None:
    with pytest.raises(SpecError, match="runs on NVIDIA GPUs"):
        launch.build(Scenario("kimi-k2-thinking", "mi355x", stack="trtllm", serving="disaggregated"), at=50.0)
    with pytest.raises(SpecError, match="a worker layout"):
        launch.worker_layout("sglang", 8, 2, 8)
    assert main(["recipe", "--hardware", "mi355x", "--stack", "trtllm", "--at", "50",
                 "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "trtllm" in err
    assert not (tmp_path / "r").exists()
    # a blank checkpoint is no checkpoint (not the default taken silently)
    for bad in ("", " ", "a\nb"):
        with pytest.raises(SpecError, match="--checkpoint: a checkpoint id or path"):
            launch.checkpoint_of("kimi-k2-thinking", "nvfp4", bad)
    assert launch.checkpoint_of("kimi-k2-thinking", "nvfp4", "my/ckpt") == "my/ckpt"
    assert main(["recipe", "--at", "50", "--checkpoint", "", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: <input>: --checkpoint: a checkpoint id or path, got ''"


def test_cli_writes_recipes_and_validate_scores_a_result(tmp_path, capsys) -> None:
    out = tmp_path / "recipes"
    assert main(["recipe", "--hardware", "hgx-h200", "--stack", "sglang", "--at", "50",
                 "--out", str(out)]) == 0
    capsys.readouterr()
    [yml] = list(out.glob("*.yaml"))
    side = json.loads(yml.with_suffix(".json").read_text())
    assert yml.name == side["recipe"]
    # a hand-made benchmark result of the recipe, in InferenceX's columns: 10% below the prediction
    row = dict(side["result_row"])
    pr = side["predicted"]
    row.update(date="2026-12-08", tps_per_user=0.9 * pr["tps_per_user"],
               tps_per_gpu_output=0.9 * pr["output_tps_per_gpu"], ttft_s=pr["ttft_median_s"],
               tpot_s=pr["tpot_median_s"] / 0.9, e2e_s=pr["e2e_s"] / 0.9)
    res = tmp_path / "result.csv"
    with open(res, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(row))
        w.writeheader()
        w.writerow(row)
    side_path = str(yml.with_suffix(".json"))
    assert main(["validate", "--frontiers", str(res), "--recipe", side_path, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    [r] = got["rows"]
    assert r["output_tps_per_gpu_ratio"] == pytest.approx(0.9)
    assert r["tps_per_user_ratio"] == pytest.approx(0.9)
    assert r["ttft_median_s_ratio"] == pytest.approx(1.0)
    # another deployment's result is not this recipe's
    row["concurrency"] = int(row["concurrency"]) + 1
    with open(res, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(row))
        w.writeheader()
        w.writerow(row)
    assert main(["validate", "--frontiers", str(res), "--recipe", str(yml.with_suffix(".json"))]) == 2
    assert "a result of the recipe's deployment" in capsys.readouterr().err
    assert np.isfinite(side["predicted"]["ttft_median_s"])


def test_frontier_writes_the_recipe_of_its_point_with_the_band_and_its_scenario(tmp_path, capsys) -> None:
    out = tmp_path / "r"
    assert main(["frontier", "--model", "kimi-k2-thinking", "--hardware", "hgx-h200", "--recipe-at", "50",
                 "--recipes", str(out), "--band", "--band-samples", "4", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    [written] = got["recipes"]["recipes"]
    side = json.loads(open(written["sidecar"]).read())
    # the recipe's point is the one `recipe` writes for the same question, with its scenario
    same = launch.build(Scenario("kimi-k2-thinking", "hgx-h200", stack=side["stack"]), 50.0)
    assert side["deployment"] == same.sidecar["deployment"]
    y = side["predicted"]["output_tps_per_gpu"]
    assert y == pytest.approx(same.sidecar["predicted"]["output_tps_per_gpu"])
    assert side["scenario"]["systems"] == ["hgx-h200"] and side["scenario"]["stack"] == side["stack"]
    band = side["predicted"]["band_output_tps_per_gpu"]
    assert band["lo"] <= band["mid"] <= band["hi"] and band["samples"] == 4
    # the burst's percentiles beside the closed loop's medians
    assert side["predicted"]["ttft_p99_s"] >= side["predicted"]["ttft_median_s"]
    # the limit search's points are not deployments; a rate without a directory is refused
    for argv, needle in ((["--search", "limit", "--recipe-at", "50", "--recipes", str(tmp_path / "x")],
                          "--recipe-at: the rules or recipes search"),
                         (["--recipe-at", "50"], "--recipe-at X and --recipes DIR together")):
        assert main(["frontier", "--model", "kimi-k2-thinking", "--hardware", "hgx-h200", *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and needle in err
    assert not (tmp_path / "x").exists()
