"""The question as one object: the public functions take a Scenario (at most 8 parameters, no
**kw), each of its options is declared once (the command line's flags are made from its fields),
every output's JSON carries the scenario that produced it and feeding it back reproduces the
output, and the main commands' figures are those kept in tests/data/golden."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import io
import json
from pathlib import Path

import pytest

import planner
from planner import Scenario
from planner.cli import build_parser, main
from planner.cli.options import flag_of
from planner.errors import SpecError
from planner.specs.scenario import FIELDS

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--model", "deepseek-v2-lite"]


def _run(argv: list[str]) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return json.loads(out.getvalue())


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    out = {}
    for name, p in sub.choices.items():
        out[name] = p
        for a in p._actions:  # nested subcommands (specs list/show, ...)
            if isinstance(a, argparse._SubParsersAction):
                out.update({f"{name} {n}": q for n, q in a.choices.items()})
    return out


# ---- signatures -------------------------------------------------------------------------------------
def test_no_public_function_takes_more_than_eight_parameters_or_any_keywords():
    checked = []
    for name in planner.__all__:
        obj = getattr(planner, name)
        if not inspect.isfunction(obj):
            continue
        params = inspect.signature(obj).parameters.values()
        assert len(params) <= 8, (name, len(params))
        assert not any(p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in params), name
        checked.append(name)
    assert {"frontier", "compare", "size", "cost_target", "decode_step", "plot_frontiers"} <= set(checked)


def test_the_public_functions_take_the_scenario_first():
    for name in ("frontier", "frontier_at", "compare", "explain", "assumptions", "workload_frontier", "size",
                 "power_budget", "cost_target", "fleet_capacity", "decode_step", "prefill", "explore"):
        first = next(iter(inspect.signature(getattr(planner, name)).parameters))
        assert first == "scenario", name


# ---- one declaration per option ---------------------------------------------------------------------
def test_every_scenario_option_is_declared_once_from_its_field():
    flags = {flag_of(n): n for n in FIELDS}
    seen: set[str] = set()
    for cmd, p in _subparsers().items():
        for a in p._actions:
            for s in a.option_strings:
                if s in flags:
                    # made by add_scenario_options from the field (never an add_argument of its own)
                    assert getattr(a, "scenario_field", None) == flags[s], (cmd, s)
                    seen.add(flags[s])
    # every field a user sets has a flag somewhere (batch_per_octave: the explorer's and Python's)
    assert set(FIELDS) - seen == {"batch_per_octave"}


def test_each_flag_says_its_fields_meaning_unit_and_default():
    p = _subparsers()["frontier"]
    by = {a.dest: a for a in p._actions}
    assert "input (prompt) tokens per request (tokens; default 1024)" == by["isl"].help
    assert by["context"].help.endswith("(tokens; default: ISL + OSL/2)")
    assert by["max_gpus"].help.startswith(FIELDS["max_gpus"].metadata["doc"])
    # a subcommand takes only the serving modes it can answer, and says only those
    size = {a.dest: a for a in _subparsers()["size"]._actions}
    assert "prefill" not in size["serving"].choices and "prefill pool only" not in size["serving"].help


# ---- the scenario itself ----------------------------------------------------------------------------
def test_a_scenario_is_checked_where_it_is_built():
    for bad, field in ((dict(serving="batch"), "serving"), (dict(metric="tokens"), "metric"),
                       (dict(mode="fast"), "mode"), (dict(max_ttft=-1.0), "max_ttft"),
                       (dict(batch_per_octave=0), "batch_per_octave"), (dict(stack="tgi"), "stack"),
                       (dict(search="rules", gpus=8), "gpus"), (dict(slo={"ttft_p99": 2.0}), "slo"),
                       (dict(systems=()), "hardware")):
        with pytest.raises(SpecError) as e:
            Scenario(**bad)
        assert e.value.field == field and "\n" not in str(e.value)
    with pytest.raises(SpecError, match="hardware: one system for a frontier"):
        planner.frontier(Scenario())  # the default names two systems: frontier draws one
    with pytest.raises(SpecError, match="isl_tokens: a scenario field"):
        Scenario().replace(isl_tokens=8192)
    # a path is a model or system named by its file, as the command line names it
    on_disk = Scenario(ROOT / "tests/data/deepseek-v3/config.json",
                       ROOT / "planner/hardware_specs/hgx-h200.yaml")
    assert on_disk.model.endswith("config.json") and on_disk.load_system().name == "hgx-h200"


def test_a_scenario_round_trips_through_its_json():
    s = Scenario("deepseek-r1", ("hgx-b200", "hgx-h200@sglang"), isl=8192, mtp=2, search="deployed",
                 slo=None, kv_tiers=None)
    d = s.to_dict()
    assert d["search"] == "recipes"  # the earlier name, read as the current one
    assert json.loads(json.dumps(d)) == d and Scenario.from_dict(d) == s
    assert list(d) == list(FIELDS)
    with pytest.raises(SpecError, match=r"plan.json: scenario.prompt: a scenario field"):
        Scenario.from_dict({**d, "prompt": 3}, where="plan.json")
    assert str(s).startswith("deepseek-r1 on hgx-b200, hgx-h200@sglang, disaggregated, ISL 8192 / OSL 1024")
    assert "mtp 2" in s.header() and "search recipes" in s.header()
    assert s.on("hgx-b200").systems == ("hgx-b200",)


# ---- every output carries its scenario, and it reproduces the output --------------------------------
def test_frontier_json_carries_its_scenario_and_feeding_it_back_reproduces_it(tmp_path, capsys):
    args = ["frontier", *SMALL, "--hardware", "hgx-h200", "--search", "limit", "--max-gpus", "8",
            "--isl", "2048", "--mtp", "off", "--json"]
    first = _run(args)
    sc = first["scenario"]
    assert sc["model"] == "deepseek-v2-lite" and sc["systems"] == ["hgx-h200"] and sc["isl"] == 2048
    path = tmp_path / "out.json"
    path.write_text(json.dumps(first))
    again = _run(["frontier", "--scenario", str(path), "--json"])
    assert again["points"] == first["points"] and again["scenario"] == sc
    # the same question from Python
    f = planner.frontier(Scenario.from_dict(sc))
    assert [p["tps_per_gpu"] for p in first["points"]] == pytest.approx(f.tps_per_gpu.tolist(), rel=1e-12)
    # a flag given replaces the file's field
    other = _run(["frontier", "--scenario", str(path), "--isl", "1024", "--json"])
    capsys.readouterr()
    assert main(["frontier", "--isl", "1024"]) == 2  # no model: one line naming the flag
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--model" in err
    assert other["scenario"]["isl"] == 1024 and other["points"] != first["points"]


def test_compare_point_and_size_json_carry_their_scenario_and_reproduce(tmp_path):
    cmp_args = ["compare", *SMALL, "--hardware", "hgx-b200", "hgx-h200", "--search", "limit",
                "--max-gpus", "8", "--mtp", "off", "--levels", "20", "50", "--plot", "", "--csv", "",
                "--json"]
    c = _run(cmp_args)
    assert c["scenario"]["systems"] == ["hgx-b200", "hgx-h200"]
    path = tmp_path / "cmp.json"
    path.write_text(json.dumps(c))
    again = _run(["compare", "--scenario", str(path), "--levels", "20", "50", "--plot", "", "--csv", "",
                  "--json"])
    assert again["table"] == c["table"] and again["verdict"] == c["verdict"]
    py = planner.compare(Scenario.from_dict(c["scenario"]), levels=(20.0, 50.0))
    assert [r["ratio"] for r in c["table"]] == pytest.approx(py.table.ratio.tolist(), rel=1e-12)

    pt = _run(["point", *SMALL, "--hardware", "hgx-h200", "--gpus", "8", "--batch", "64", "--context", "2048",
               "--json"])
    step = planner.decode_step(Scenario.from_dict(pt["scenario"]), batch=64, context=2048)
    assert pt["step_s"] == pytest.approx(step.step_time, rel=1e-12)

    sz = _run(["size", *SMALL, "--hardware", "hgx-h200", "--search", "limit", "--max-gpus", "8",
               "--min-tps-user", "30", "--demand-tps", "1e5", "--json"])
    df = planner.size(Scenario.from_dict(sz["scenario"]), 1e5, min_tps_user=30)
    assert sz["options"]["hgx-h200"]["gpus"] == int(df.gpus.iloc[0])


def test_a_scenario_file_with_a_field_the_command_does_not_take_is_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("model: deepseek-v2-lite\nsystems: [hgx-h200]\nregion: china\n")
    assert main(["frontier", "--scenario", str(path), "--model", "deepseek-v2-lite", "--hardware",
                 "hgx-h200"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "scenario.region" in err and str(path) in err
    path.write_text("model: deepseek-v2-lite\nsystems: [hgx-h200]\nisl: lots\n")
    assert main(["frontier", "--scenario", str(path), "--model", "deepseek-v2-lite", "--hardware",
                 "hgx-h200"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "isl" in err


# ---- the figures did not move ------------------------------------------------------------------------
def _golden():
    spec = importlib.util.spec_from_file_location("golden_outputs", ROOT / "scripts" / "golden_outputs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GOLDEN = _golden()


@pytest.mark.parametrize("name", list(GOLDEN.COMMANDS))
def test_the_main_commands_print_the_kept_figures(name):
    """Every number of the main commands' JSON as kept in tests/data/golden (written by
    scripts/golden_outputs.py before the scenario replaced the keyword arguments); a change meant
    to move figures rewrites them with ``--write`` and says so."""
    kept = json.loads((GOLDEN.GOLDEN / f"{name}.json").read_text())
    got = GOLDEN.strip(GOLDEN.run(GOLDEN.COMMANDS[name]))
    assert GOLDEN.differences(kept, got) == []


def test_a_plans_workloads_carry_their_scenarios_checked_when_the_plan_is_read(tmp_path):
    out = _run(["plan", "planner/fleet/data/plan_example.yaml", "--json"])
    for w in out["workloads"]:
        sc = Scenario.from_dict(w["scenario"])
        assert sc.model == w["model"] and sc.isl == w["isl"] and sc.osl == w["osl"]
    # a search block the scenario refuses is refused when the plan is read, naming its place
    plan = {"workloads": [{"name": "chat", "model": "deepseek-v2-lite", "min_tps_user": 30,
                           "demand_tps": 1e5, "search": {"search": "rules", "gpus": 8}}],
            "systems": [{"hardware": "hgx-h200"}]}
    with pytest.raises(SpecError, match=r"workloads\[0\]\.search\.gpus: the limit search with it"):
        planner.plan(plan)
