"""Hostile inputs a new user tried: each gets one line naming the file and field, never a
traceback, a hang or a destroyed input."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from planner.cli import main
from planner.errors import SpecError
from planner.specs.reading import parse_yaml, read_text

SPEC = Path(__file__).resolve().parents[2] / "hardware_specs" / "hgx-h200.yaml"


def _err(capsys, argv):
    rc = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err.strip()


def test_integer_of_more_digits_than_python_converts(tmp_path, capsys):
    p = tmp_path / "big.yaml"
    p.write_text(SPEC.read_text().replace("domain_size: {value: 8", "domain_size: {value: " + "9" * 5000))
    rc, err = _err(capsys, ["specs", "show", str(p)])
    assert rc == 2 and "big.yaml: yaml:" in err and err.count("\n") == 0
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "config.json").write_text('{"model_type": "deepseek_v3", "hidden_size": ' + "9" * 5000 + "}")
    rc, err = _err(capsys, ["specs", "show", str(cfg)])
    assert rc == 2 and "config.json: json:" in err


def test_impossible_date_and_duplicate_keys():
    with pytest.raises(SpecError, match="values YAML can read"):
        parse_yaml("needed_by: 2026-13-45\n", "plan.yaml")
    with pytest.raises(SpecError, match="'name' is given twice"):
        parse_yaml("name: a\nx: 1\nname: b\n", "spec.yaml")


def test_billion_laughs_is_refused_at_once():
    doc = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8)
    )
    assert len(doc) < 400
    with pytest.raises(SpecError, match="aliases"):
        parse_yaml(doc, "laughs.yaml")
    # a few aliases are fine
    assert parse_yaml("a: &a [1, 2]\nb: *a\n", "ok.yaml") == {"a": [1, 2], "b": [1, 2]}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo_is_refused_not_read(tmp_path):
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    with pytest.raises(SpecError, match="a regular file"):
        read_text(fifo)


def test_output_on_an_input_is_refused_and_the_input_kept(tmp_path, capsys):
    mine = tmp_path / "my.yaml"
    mine.write_text(SPEC.read_text())
    before = mine.read_bytes()
    rc, err = _err(
        capsys,
        ["frontier", "--model", "deepseek-r1", "--hardware", str(mine), "--csv", str(mine), "--plot", ""],
    )
    assert rc == 2 and "a file other than the input" in err
    assert mine.read_bytes() == before


def test_missing_output_directory_says_so(tmp_path, capsys):
    rc, err = _err(
        capsys,
        [
            "frontier",
            "--model",
            "deepseek-r1",
            "--hardware",
            "hgx-h200",
            "--csv",
            str(tmp_path / "no" / "x.csv"),
            "--plot",
            "",
        ],
    )
    assert rc == 2 and "a path in an existing directory" in err and "NUL" not in err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("moe-planner ")


def test_decimal_comma_is_an_error_not_a_tenfold_value():
    from planner.specs.units import parse_quantity

    with pytest.raises(SpecError, match="without thousands or decimal commas"):
        parse_quantity("4,8 TB/s", "bandwidth", "my.yaml", "gpu.hbm_bandwidth")
    # a thousands separator is refused too: "5,408 USD/h" is 5.408 to half the world
    with pytest.raises(SpecError, match="'5.408 USD/h' or '5408 USD/h'"):
        parse_quantity("5,408 USD/h", "usd_per_hour", "my.yaml", "system.price_per_gpu_hour")


def test_scientific_notation_that_yaml_reads_as_text_is_a_number(tmp_path):
    from planner.specs.reading import Fields

    # numbers as YAML 1.2 reads them: 1e6 is a number (YAML 1.1 left it text)
    doc = parse_yaml("demand_tps: 1e6\nother: 2.5e3\n", "plan.yaml")
    assert doc["demand_tps"] == 1e6
    f = Fields(doc, "plan.yaml")
    assert f.number("demand_tps") == 1e6 and f.number("other") == 2500.0


@pytest.mark.parametrize("text", ["1_32", "2:12", "0x84", "1_000_000"])
def test_yaml_11_number_forms_are_text_and_refused_as_numbers(text):
    from planner.specs.reading import Fields

    # YAML 1.1 read 1_32 and 2:12 (base 60) as 132: a different number than the one meant
    doc = parse_yaml(f"sm_count: {text}\n", "hw.yaml")
    assert doc["sm_count"] == text
    with pytest.raises(SpecError, match="sm_count"):
        Fields(doc, "hw.yaml").number("sm_count")


@pytest.mark.parametrize("text", ["4 800 GB/s", "4_8 TB/s", "1.979.5 TB/s", "4\u2009800 GB/s", "4'800 GB/s",
                                  "\uff14.8 TB/s", "4\u066b8 TB/s"])
def test_separators_inside_a_quantity_are_refused(text):
    from planner.specs.units import parse_quantity

    # pint read "4 800 GB/s" as 4 x 800 GB/s and "4_8 TB/s" as 48 TB/s
    with pytest.raises(SpecError, match="one number in ASCII digits"):
        parse_quantity(text, "bandwidth", "hw.yaml", "hbm_bandwidth")


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (
            [
                "point",
                "--model",
                "deepseek-r1",
                "--hardware",
                "hgx-h200",
                "--gpus",
                "8",
                "--batch",
                "8",
                "--context",
                "1e-320",
            ],
            "--context",
        ),
        (
            [
                "size",
                "--model",
                "deepseek-r1",
                "--hardware",
                "hgx-h200",
                "--demand-tps",
                "1e308",
                "--cost-target",
                "1",
            ],
            "cost_target",
        ),
        (["plan", "planner/fleet/data/plan_example.yaml", "--years", "1e308"], "years"),
        (["plan", "planner/fleet/data/plan_example.yaml", "--usd-per-kwh", "1e308"], "usd_per_kwh"),
    ],
)
def test_numbers_beyond_any_plausible_range(capsys, monkeypatch, argv, field):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    rc, err = _err(capsys, argv)
    assert rc == 2 and f": {field}:" in err


def test_a_site_region_nobody_names(tmp_path, capsys):
    src = Path(__file__).resolve().parents[2] / "planner" / "fleet" / "data" / "plan_example.yaml"
    p = tmp_path / "mars.yaml"
    p.write_text(src.read_text().replace("region: us", "region: mars"))
    assert "region: mars" in p.read_text()
    rc, err = _err(capsys, ["plan", str(p)])
    assert rc == 2 and "site.region" in err and "'mars'" in err


def test_json_on_specs_list_and_equations(capsys):
    import json

    assert main(["specs", "list", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    names = {h["name"] for h in doc["hardware"]}
    assert {"gb200-nvl72", "mi355x"} <= names and any(m["name"] == "kimi-k2.5" for m in doc["models"])
    assert main(["equations", "--term", "dispatch", "--json"]) == 0
    eq = json.loads(capsys.readouterr().out)
    assert eq["expressions"][0]["name"] == "dispatch" and eq["expressions"][0]["latex"]
    assert all({"name", "unit", "meaning"} <= set(s) for s in eq["symbols"])


def test_graphics_memory_is_not_called_hbm(capsys):
    assert main(["specs", "list"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "rtx-6000d-server" in ln)
    assert "GDDR7" in line and "HBM" not in line


def test_dash_is_standard_output_and_the_text_goes_to_stderr(capsys):
    rc = main(
        [
            "frontier",
            "--model",
            "deepseek-r1",
            "--hardware",
            "hgx-b200",
            "--weights",
            "nvfp4",
            "--mtp",
            "off",
            "--csv",
            "-",
            "--plot",
            "",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 0 and out.startswith("model,hardware,serving")
    assert "# frontier:" in err and "# frontier:" not in out
    rc, err = _err(
        capsys, ["frontier", "--model", "deepseek-r1", "--hardware", "hgx-b200", "--csv", "-", "--plot", "-"]
    )
    assert rc == 2 and "already writes to standard output" in err


def test_error_lines_stay_one_line(capsys):
    rc, err = _err(
        capsys,
        [
            "frontier",
            "--model",
            "deepseek-r1",
            "--hardware",
            "hgx-b200",
            "--csv",
            "/nonexistent/a\nb.csv",
            "--plot",
            "",
        ],
    )
    assert rc == 2 and "\n" not in err and "a\\nb.csv" in err


def test_a_virtual_file_system_says_so(capsys):
    if not Path("/proc/version").exists():
        pytest.skip("no /proc here")
    rc, err = _err(
        capsys,
        [
            "frontier",
            "--model",
            "deepseek-r1",
            "--hardware",
            "hgx-b200",
            "--csv",
            "/proc/version",
            "--plot",
            "",
        ],
    )
    assert rc == 2 and "No such file" not in err


def test_sigterm_while_writing_leaves_no_temporary_file(tmp_path, capsys, monkeypatch):
    import signal

    import planner.outputs as outputs

    real_fill = outputs._fill

    def fill_then_terminated(tmp, data):
        real_fill(tmp, data)
        os.kill(os.getpid(), signal.SIGTERM)  # arrives while the file is half-way to its place

    monkeypatch.setattr(outputs, "_fill", fill_then_terminated)
    rc = main(
        [
            "frontier",
            "--model",
            "deepseek-r1",
            "--hardware",
            "hgx-b200",
            "--weights",
            "nvfp4",
            "--mtp",
            "off",
            "--csv",
            str(tmp_path / "f.csv"),
            "--plot",
            "",
        ]
    )
    assert rc == 143 and "terminated" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_interrupt_during_start_up_is_one_line(capsys, monkeypatch):
    import planner.cli as cli

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["specs", "list"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err


HW = Path(__file__).resolve().parents[2] / "hardware_specs"
MODELS = Path(__file__).resolve().parents[2] / "planner" / "model_specs"


@pytest.mark.parametrize(
    ("src", "old", "new", "field"),
    [
        ("hgx-h200.yaml", 'tdp: {value: "700 W"', 'tdp: {value: "700 kW"', "gpu.tdp"),
        ("hgx-h200.yaml", "domain_size: {value: 8,", "domain_size: {value: 1000000,", "scale_up.domain_size"),
        ("hgx-h200.yaml", "gpus_per_unit: {value: 8,", "gpus_per_unit: {value: 12,", "system.gpus_per_unit"),
        (
            "hgx-h200.yaml",
            'hbm_bandwidth: {value: "4.8 TB/s"',
            'hbm_bandwidth: {value: "4.8 kB/s"',
            "gpu.hbm_bandwidth",
        ),
        (
            "rtx-6000d-server.yaml",
            "domain_size: {value: 8,",
            "domain_size: {value: 16,",
            "scale_up.domain_size",
        ),
        # every bandwidth and capacity has a range, not HBM's alone: "400 Tb/s" for 400 Gb/s was
        # 50 TB/s of NIC per GPU
        ("hgx-h200.yaml", '{value: "400 Gb/s"', '{value: "400 Tb/s"', "scale_out.bandwidth"),
        ("hgx-h200.yaml", '{value: "450 GB/s"', '{value: "450 TB/s"', "scale_up.bandwidth"),
        ("hgx-h200.yaml", '{value: "250 GB"', '{value: "250 PB"', "host_memory.capacity"),
        ("hgx-h200.yaml", '{value: "64 GB/s"', '{value: "64 TB/s"', "host_memory.bandwidth"),
        ("hgx-h200.yaml", '{value: "3.84 TB"', '{value: "3.84 EB"', "local_storage.capacity"),
        ("hgx-h200.yaml", '{value: "6.5 GB/s"', '{value: "6.5 TB/s"', "local_storage.bandwidth"),
        ("hgx-h200.yaml", '{value: "1275 W"', '{value: "1275 kW"', "system.power_per_gpu"),
        # prices: a comma, a price a thousand times too high, a node's price of 39.5 USD per GPU
        ("hgx-h200.yaml", '{value: "5.408 USD/h"', '{value: "5,408 USD/h"', "system.price_per_gpu_hour"),
        ("hgx-h200.yaml", '{value: "5.408 USD/h"', '{value: "5408 USD/h"', "system.price_per_gpu_hour"),
        ("hgx-h200.yaml", '{value: "316000 USD"', '{value: "316 USD"', "system.price_per_unit"),
        # a name is a label, never a path; a unit holds whole scale-up domains
        ("hgx-h200.yaml", "name: hgx-h200", "name: ../../etc/x", "name"),
        ("hgx-h200.yaml", "name: hgx-h200", "name: ''", "name"),
        ("hgx-h200.yaml", "name: hgx-h200", "name: h200@sglang", "name"),
        ("hgx-h200.yaml", "gpus_per_unit: {value: 8,", "gpus_per_unit: {value: 1,", "system.gpus_per_unit"),
        ("hgx-h200.yaml", "gpus_per_unit: {value: 8,", "gpus_per_unit: {value: 4,", "system.gpus_per_unit"),
        ("deepseek-r1.yaml", "mtp_layers: 1 ", "mtp_layers: 100 ", "mtp_layers"),
        (
            "deepseek-r1.yaml",
            "max_groups_per_token: 4",
            "max_groups_per_token: 0",
            "moe.max_groups_per_token",
        ),
    ],
)
def test_contradictions_name_file_field_and_range(tmp_path, capsys, src, old, new, field):
    base = HW if (HW / src).exists() else MODELS
    text = (base / src).read_text()
    assert old in text, old
    p = tmp_path / src
    p.write_text(text.replace(old, new, 1))
    rc, err = _err(capsys, ["specs", "show", str(p)])
    assert rc == 2 and f"{src}: {field}" in err, err


def test_a_domain_across_systems_is_bought_a_system_at_a_time(tmp_path):
    # a unit smaller than its domain is refused above (1 or 4 GPUs of an 8-GPU NVLink node), but a
    # 16-GPU domain over two 8-GPU nodes is bought a node, half a domain, at a time
    from planner.specs.hardware import load_hardware_file

    p = tmp_path / "two-nodes.yaml"
    p.write_text(SPEC.read_text().replace("domain_size: {value: 8,", "domain_size: {value: 16,", 1))
    h = load_hardware_file(p)
    assert (h.domain_size, h.gpus_per_system, h.gpus_per_unit) == (16, 8, 8)


@pytest.mark.parametrize(("row", "field"), [("0,1e200,10,0", "line 2.input_tokens"),
                                            ("0,1e308,10,0", "line 2.input_tokens"),
                                            ("1e308,100,10,0", "line 2.arrival_s"),
                                            ("0,100,1e200,0", "line 2.output_tokens"),
                                            # a fraction of a token is no token count either
                                            ("0,100,10.5,0", "line 2.output_tokens"),
                                            ("0,100,10,2.5", "line 2.cached_tokens")])
def test_absurd_trace_values_are_one_line(tmp_path, capsys, row, field):
    # their means and spreads overflowed (OverflowError in _cv2)
    trace = tmp_path / "trace.csv"
    trace.write_text(f"arrival_s,input_tokens,output_tokens,cached_tokens\n{row}\n1,100,10,0\n2,200,20,0\n")
    rc, err = _err(capsys, ["frontier", "--model", "llama-3.1-8b", "--hardware", "hgx-h200",
                            "--workload", str(trace), "--plot", "", "--csv", ""])
    expected = "a whole number of tokens" if "." in row.split(",", 2)[2] else "a number from "
    assert rc == 2 and f"trace.csv: {field}: {expected}" in err and err.count("\n") == 0, err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
@pytest.mark.parametrize("flag", ["--runs", "--frontiers"])
def test_a_fifo_as_measurements_is_refused_not_read(tmp_path, capsys, flag):
    import threading

    fifo = tmp_path / "runs.csv"
    os.mkfifo(fifo)

    def unblock() -> None:  # were the reader to open it, a writer's close lets it end (and fail)
        with open(fifo, "w"):
            pass

    writer = threading.Timer(30.0, unblock)
    writer.daemon = True
    writer.start()
    try:
        rc, err = _err(capsys, ["validate", flag, str(fifo)])
    finally:
        writer.cancel()
    assert rc == 2 and "runs.csv: file: a regular file" in err, err


def test_a_workload_spread_beyond_ten_is_refused(tmp_path):
    from planner.specs.workload import load_workload

    text = (Path(__file__).resolve().parents[2] / "planner" / "workload_specs" / "chat.yaml").read_text()
    p = tmp_path / "bursty.yaml"
    p.write_text(text.replace("arrival_cv: 1.0", "arrival_cv: 1.0e9"))
    with pytest.raises(SpecError, match="arrival_cv"):
        load_workload(str(p))


def test_a_config_json_key_given_twice_is_refused_and_a_byte_order_mark_is_read(tmp_path, capsys):
    d = tmp_path / "dup"
    d.mkdir()
    (d / "config.json").write_text('{"model_type": "mixtral", "model_type": "llama"}')
    assert main(["specs", "show", str(d / "config.json")]) == 2
    err = capsys.readouterr().err
    assert "model_type: one value, given twice" in err and err.count("\n") == 1
    src = Path(__file__).resolve().parents[1] / "data" / "mixtral-8x7b" / "config.json"
    b = tmp_path / "bom"
    b.mkdir()
    (b / "config.json").write_bytes(b"\xef\xbb\xbf" + src.read_bytes())
    assert main(["specs", "show", str(b / "config.json")]) == 0


def test_a_trace_column_given_twice_is_refused(tmp_path, capsys):
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens,cached_tokens,input_tokens\n"
                     "0,1500,100,0,1\n1,1500,100,0,1\n2,1500,100,0,1\n")
    rc, err = _err(capsys, ["frontier", "--model", "llama-3.1-8b", "--hardware", "hgx-h200",
                            "--workload", str(trace), "--plot", "", "--csv", ""])
    assert rc == 2 and "trace.csv: input_tokens: a column given once" in err, err


def _whole(name: str) -> str:
    """A bundled system as one self-contained file (its datasheet and its calibration)."""
    from planner.specs.registry import bundled_hardware_text

    return bundled_hardware_text(name)


@pytest.mark.parametrize(("old", "new", "field", "span"), [
    ('step_overhead: {value: "1 ms"', 'step_overhead: {value: "5 h"', "efficiency.step_overhead", "overhead"),
    ('kernel_overhead: {value: "5.534 us"', 'kernel_overhead: {value: "3 days"', "efficiency.kernel_overhead",
     "overhead"),
    ("sm_count: {value: 132", "sm_count: {value: 1000000", "gpu.sm_count", "sm_count"),
    ("sm_count: {value: 132", "sm_count: {value: 10001", "gpu.sm_count", "sm_count"),
    # a multiple of the unit and the domain, so that only its size is wrong
    ("gpus_per_system: {value: 8,", "gpus_per_system: {value: 999999999992,", "system.gpus_per_system",
     "gpus_per_system"),
])
def test_counts_and_overheads_beyond_any_system_are_refused(tmp_path, capsys, old, new, field, span):
    from planner.specs.hardware import PLAUSIBLE

    text = _whole("hgx-h200")
    assert old in text, old
    p = tmp_path / "hgx-h200.yaml"
    p.write_text(text.replace(old, new, 1))
    rc, err = _err(capsys, ["specs", "show", str(p)])
    lo, hi, unit = PLAUSIBLE[span]
    top = f"{hi:,.0f} {unit}" if span != "overhead" else f"{hi:g} {unit}"
    assert rc == 2 and f"hgx-h200.yaml: {field}.value: a value " in err and f"to {top}, got" in err, err
    assert err.count("\n") == 0


@pytest.mark.parametrize(("old", "new", "span"), [
    ("sm_count: {value: 132", "sm_count: {value: 10000", "sm_count"),
    ('step_overhead: {value: "1 ms"', 'step_overhead: {value: "1 s"', "overhead"),
    ("gpus_per_system: {value: 8,", "gpus_per_system: {value: 100000,", "gpus_per_system"),
])
def test_counts_and_overheads_at_the_top_of_their_range_are_read(tmp_path, old, new, span):
    from planner.specs.hardware import PLAUSIBLE, load_hardware_file

    p = tmp_path / "hgx-h200.yaml"
    p.write_text(_whole("hgx-h200").replace(old, new, 1))
    h = load_hardware_file(p)
    eff = h.spec_efficiency or h.efficiency  # (the efficiency: block, not the default stack's fit)
    got = {"sm_count": h.sm_count, "overhead": eff.step_overhead, "gpus_per_system": h.gpus_per_system}[span]
    assert got == PLAUSIBLE[span][1]


def test_a_stack_overhead_beyond_any_system_is_refused(tmp_path, capsys):
    text = _whole("hgx-h200")
    old = 'step_overhead: {value: "1 ms", kind: fixed'
    at = text.index(old, text.index("\nstacks:"))
    p = tmp_path / "hgx-h200.yaml"
    p.write_text(text[:at] + 'step_overhead: {value: "2 h", kind: fixed' + text[at + len(old):])
    rc, err = _err(capsys, ["specs", "show", str(p)])
    assert rc == 2 and ": stacks." in err, err
    assert ".step_overhead.value: a value a GPU can have, from " in err and err.count("\n") == 0, err


#: numbers Python's float() reads as other numbers than a reader of the file sees, or any at all
SEPARATED = ["1_000", "１２", "٣٠٠", "1_0.5"]


@pytest.mark.parametrize("cell", SEPARATED)
def test_a_trace_cell_with_separators_or_foreign_digits_is_refused(tmp_path, capsys, cell):
    trace = tmp_path / "trace.csv"
    rows = f"0,100,10,0\n1,{cell},10,0\n2,200,20,0\n"
    trace.write_text("arrival_s,input_tokens,output_tokens,cached_tokens\n" + rows, encoding="utf-8")
    rc, err = _err(capsys, ["frontier", "--model", "llama-3.1-8b", "--hardware", "hgx-h200",
                            "--workload", str(trace), "--plot", "", "--csv", ""])
    assert rc == 2 and err.count("\n") == 0, err
    assert f"trace.csv: line 3.input_tokens: a number in ASCII digits without separators, got {cell!r}" in err


@pytest.mark.parametrize("cell", SEPARATED)
@pytest.mark.parametrize("form", ["one column", "header", "hour and load"])
def test_a_profile_cell_with_separators_or_foreign_digits_is_refused(tmp_path, cell, form):
    from planner.economics.demand import read_profile

    loads = [str(500 + h) for h in range(24)]
    loads[6] = cell
    lines = {"one column": loads, "header": ["users", *loads],
             "hour and load": ["hour,output_tps", *(f"{h},{v}" for h, v in enumerate(loads))]}[form]
    p = tmp_path / "day.csv"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    field = {"one column": "row 7", "header": "row 8.users", "hour and load": "row 8.output_tps"}[form]
    with pytest.raises(SpecError) as exc:
        read_profile(p)
    assert str(exc.value) == f"{p}: {field}: a number in ASCII digits without separators, got {cell!r}"
    # the same rows written plainly are read as written
    p.write_text("\n".join(lines).replace(cell, "506") + "\n", encoding="utf-8")
    assert read_profile(p).hourly == tuple(500.0 + h for h in range(24))


def test_a_profile_hour_or_yaml_load_with_an_underscore_is_refused(tmp_path, capsys):
    from planner.economics.demand import read_profile

    p = tmp_path / "day.csv"
    p.write_text("hour,output_tps\n" + "".join(f"{'1_0' if h == 10 else h},500\n" for h in range(24)))
    with pytest.raises(SpecError, match=r"day.csv: row 12.hour: an hour from 0 to 23 given once, got '1_0'"):
        read_profile(p)
    # YAML reads numbers as YAML 1.2 writes them: 1_000 and 2:12 are text, not 1000 and 132
    for bad in ("1_000", "2:12"):
        y = tmp_path / "day.yaml"
        y.write_text("[" + ", ".join(bad if h == 2 else "500" for h in range(24)) + "]\n")
        with pytest.raises(SpecError) as exc:
            read_profile(y)
        assert str(exc.value) == f"{y}: profile[2]: a number, got {bad!r}"
    rc, err = _err(capsys, ["size", "--model", "llama-3.1-8b", "--hardware", "hgx-h200", "--profile", str(p),
                            "--min-tps-user", "20"])
    assert rc == 2 and err.count("\n") == 0 and "day.csv: row 12.hour" in err, err


def test_numpy_numbers_are_shown_plainly_in_messages():
    import numpy as np

    from planner.economics.options import check_level
    from planner.errors import shown

    assert [shown(np.float64("nan")), shown(np.int64(3)), shown(np.bool_(True)), shown("1_0")] == [
        "nan", "3", "True", "'1_0'"]
    with pytest.raises(SpecError) as exc:
        check_level(np.float64("nan"))
    assert str(exc.value) == "<input>: min_tps_user: a positive rate in tokens/s per user, got nan"
