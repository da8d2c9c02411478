"""``moe-planner size``: JSON and text output, the inverse questions, the plot, and bad input
(exit status 2 and one line on stderr starting with ``error:``)."""

from __future__ import annotations

import json

import pytest

from planner.cli import main

BASE = ["size", "--model", "deepseek-v2-lite", "--gpus", "8", "--isl", "1024", "--osl", "1024"]
TWO = ["--hardware", "hgx-h200", "gb200-nvl72"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main([*BASE, *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def bad(capsys, *argv: str) -> str:
    try:
        rc = main([*BASE, *argv])
    except SystemExit as exc:  # argparse usage errors exit from the parser
        rc = exc.code
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert err.startswith("error:") and err.count("\n") == 1, err
    return err


def test_json_per_hardware(capsys):
    rc, out, err = run(capsys, *TWO, "--demand-tps", "2000000", "--min-tps-user", "50", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert set(doc["options"]) == {"hgx-h200", "gb200-nvl72"}
    for name, o in doc["options"].items():
        for key in ("gpus", "units", "power_mw", "usd_per_mtok_owned", "capex_usd", "opex_usd_per_year",
                    "tps_per_user", "tps_per_gpu"):
            assert isinstance(o[key], int | float), (name, key)
        assert o["gpus"] * o["tps_per_gpu"] >= 2e6
        assert o["figures"]["price_per_unit"]["source"]
        assert "system.power_per_gpu" in o["figures"]["power_per_gpu"]["source"]
    assert doc["cheapest"] in doc["options"]
    assert doc["settings"]["min_tps_user"] == 50


def test_text_marks_cheapest_and_prints_sources(capsys):
    rc, out, _ = run(capsys, *TWO, "--users", "40000", "--min-tps-user", "50", "--usd-per-unit",
                     "hgx-h200=250000")
    assert rc == 0
    assert "# * cheapest" in out
    marked = [line for line in out.splitlines() if line.startswith("*")]
    assert len(marked) == 2  # one per table (deployment, cost)
    assert "2,000,000" not in out.splitlines()[1] and "40,000 concurrent users" in out
    assert "hgx-h200 price per node: $250,000 - user override (--usd-per-unit)" in out
    assert "gb200-nvl72 price per rack: $3M - 'about US$3 million'" in out
    assert "power per GPU (all-in)" in out and "PUE 1.3 - default" in out


def test_profile_and_plot(capsys, tmp_path):
    prof = tmp_path / "day.csv"
    prof.write_text("hour,output_tps\n" + "".join(f"{h},{20000 + 1000 * h}\n" for h in range(24)))
    png = tmp_path / "s.png"
    rc, out, err = run(capsys, "--hardware", "hgx-h200", "--profile", str(prof), "--min-tps-user", "50",
                       "--plot", str(png))
    assert rc == 0, err
    assert "daily profile" in out and "avg util" in out and f"wrote {png}" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_power_budget_json(capsys):
    rc, out, err = run(capsys, "--hardware", "hgx-h200", "--min-tps-user", "50", "--power-budget-mw",
                       "0.1", "--json")
    assert rc == 0, err
    r = json.loads(out)["power_budget"]["hgx-h200"]
    assert r["units"] == 7  # 0.1 MW / (8 x 1275 W x 1.3 = 13.26 kW) = 7.5 -> 7 nodes
    assert r["capacity_tps"] > 0 and r["power_mw"] <= 0.1


def test_fleet_and_cost_target_text(capsys):
    rc, out, err = run(capsys, "--hardware", "hgx-h200", "--fleet-units", "4", "--levels", "20", "100")
    assert rc == 0, err
    assert "fixed fleet: 4 units" in out and "4 nodes" in out
    rc, out, err = run(capsys, "--hardware", "hgx-h200", "--demand-tps", "500000", "--cost-target", "0.2")
    assert rc == 0, err
    assert "max tok/s/user" in out and "cost target $0.2" in out


# ---- bad input: one line, exit 2 ------------------------------------------------------------------
@pytest.mark.parametrize("demand", [["--demand-tps", "0"], ["--demand-tps", "-5"], ["--users", "0"],
                                    ["--requests-per-s", "-1"]])
def test_bad_demand_value(capsys, demand):
    err = bad(capsys, "--hardware", "hgx-h200", "--min-tps-user", "50", *demand)
    assert "positive" in err


def test_two_demand_flags(capsys):
    err = bad(capsys, "--hardware", "hgx-h200", "--min-tps-user", "50", "--demand-tps", "5",
              "--users", "3")
    assert "not allowed with" in err


def test_no_demand(capsys):
    assert "demand" in bad(capsys, "--hardware", "hgx-h200", "--min-tps-user", "50")


def test_unreachable_sla_says_best_of_each(capsys):
    err = bad(capsys, *TWO, "--demand-tps", "1e5", "--min-tps-user", "100000")
    assert "service_level" in err and "asked: >= 100000 tokens/s/user, TTFT <= 2 s" in err
    assert "hgx-h200: at most" in err and "gb200-nvl72: at most" in err and "tokens/s/user" in err


def test_unreachable_ttft(capsys):
    err = bad(capsys, "--hardware", "hgx-h200", "--demand-tps", "1e5", "--min-tps-user", "10",
              "--max-ttft", "1e-6")
    assert "hgx-h200" in err and "max_ttft" in err


def test_unknown_hardware(capsys):
    err = bad(capsys, "--hardware", "hgx-h200", "hgx-h2000", "--demand-tps", "1e5", "--min-tps-user", "10")
    assert "hgx-h2000" in err and "known" in err


@pytest.mark.parametrize("argv", [
    ["--serving", "prefill"],
    ["--serving", "aggregated", "--max-ttft", "1"],
    ["--metric", "total"],
    ["--usd-per-unit", "hgx-b999=5"],
    ["--usd-per-unit", "1", "2"],
    ["--pue", "0.5"],
    ["--power-budget-mw", "1", "--fleet-units", "2"],
    ["--profile", "/nonexistent/day.csv"],
])
def test_other_bad_input(capsys, argv):
    bad(capsys, "--hardware", "hgx-h200", "--min-tps-user", "50",
        *([] if "--profile" in argv else ["--demand-tps", "1e5"]), *argv)


@pytest.mark.parametrize(("flag", "value", "needle"), [
    # 5,408 USD/h is 5.408 misread; 100 USD for an 8-GPU node is 12.5 USD per GPU
    ("--usd-per-gpu-hour", "5408", "usd_per_gpu_hour: a rental price per GPU-hour of hgx-h200 from 0.01 to "
                                   "1,000 USD/h, got 5,408 USD/h"),
    ("--usd-per-unit", "hgx-h200=100", "usd_per_unit: a purchase price per GPU of hgx-h200 from 100 to "
                                       "10,000,000 USD, got 100 USD per unit of 8 GPUs = 12.5 USD per GPU"),
    ("--watts-per-gpu", "1e7", "watts_per_gpu: an all-in power per GPU of hgx-h200 from 10 to 20000 W"),
])
def test_overrides_within_the_ranges_of_a_specs_own(capsys, flag, value, needle):
    err = bad(capsys, "--hardware", "hgx-h200", "--min-tps-user", "50", "--demand-tps", "1e5", flag, value)
    assert needle in err, err


def test_a_headerless_profile_row_of_two_numbers(capsys, tmp_path):
    f = tmp_path / "day.csv"
    f.write_text("".join("5000,5\n" if h == 6 else "5000\n" for h in range(24)))
    err = bad(capsys, "--hardware", "hgx-h200", "--min-tps-user", "50", "--profile", str(f))
    assert "day.csv: row 7: one load per row" in err, err


def test_bad_profile_length(capsys, tmp_path):
    f = tmp_path / "short.yaml"
    f.write_text("[1, 2, 3]\n")
    assert "24 hourly" in bad(capsys, "--hardware", "hgx-h200", "--min-tps-user", "50", "--profile", str(f))


@pytest.mark.parametrize("demand", [["--requests-per-s", "1e-9"], ["--demand-tps", "1e-6"]])
def test_tiny_demand_one_unit(capsys, demand):
    rc, out, err = run(capsys, "--hardware", "hgx-h200", *demand, "--min-tps-user", "50", "--json")
    assert rc == 0, err
    o = json.loads(out)["options"]["hgx-h200"]
    # a trickle of demand still takes one whole instance of each pool: an 8-GPU decode instance
    # and an 8-GPU prefill instance, one 8-GPU node each, almost all of it idle
    assert (o["decode_instances"], o["prefill_instances"], o["units"], o["gpus"]) == (1, 1, 2, 16)
    assert 0 < o["utilisation"] < 1e-6 and o["idle_usd_per_year"] > 0


LONG = "a" * 300


@pytest.mark.parametrize("flag, value, field", [
    ("--model", LONG, "model"), ("--hardware", LONG, "hardware"),
    ("--hardware", LONG + "@trtllm", "hardware"),
    ("--model", f"/tmp/{LONG}/config.json", "file"), ("--hardware", f"/tmp/{LONG}.yaml", "file"),
    ("--model", f"/tmp/{LONG}", "file"),
])
def test_name_too_long_is_one_line(capsys, flag, value, field):
    argv = ["size", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--demand-tps", "1e5",
            "--min-tps-user", "50"]
    argv[argv.index(flag) + 1] = value
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error:") and err.count("\n") == 1, err
    assert f": {field}: " in err


def test_systems_sharing_a_name_sized_apart(capsys, tmp_path):
    from planner.specs.registry import bundled_hardware_text

    for stem in ("mine", "theirs"):
        (tmp_path / f"{stem}.yaml").write_text(bundled_hardware_text("hgx-h200"))
    rc, out, err = run(capsys, "--hardware", str(tmp_path / "mine.yaml"), str(tmp_path / "theirs.yaml"),
                       "--demand-tps", "1e5", "--min-tps-user", "50", "--usd-per-unit", "mine=1e5", "--json")
    assert rc == 0, err
    options = json.loads(out)["options"]
    assert set(options) == {"mine", "theirs"}
    assert options["mine"]["capex_usd"] < options["theirs"]["capex_usd"]  # the override found its system
    err = bad(capsys, "--hardware", "hgx-h200", "hgx-h200", "--demand-tps", "1e5", "--min-tps-user", "50")
    assert "--hardware: different systems, got 'hgx-h200' more than once" in err
