"""Every flag a command accepts does something: flags a command would ignore are not offered (or
are refused with one line), and counts (batch, prompts, GPUs, users, token lengths) are whole
numbers on the way in and out."""

from __future__ import annotations

import json
import math

import pytest

from planner.cli import build_parser, main

SMALL = ["--model", "deepseek-v2-lite", "--gpus", "8"]


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse usage errors exit from the parser
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def refused(capsys, argv: list[str], needle: str) -> None:
    rc, out, err = run(capsys, argv)
    assert rc == 2, (argv, out, err)
    assert err.startswith("error:") and err.count("\n") == 1 and needle in err, err
    assert out == "", out


def _choices(cmd: str, flag: str) -> tuple[str, ...] | None:
    sub = build_parser()._subparsers._group_actions[0].choices[cmd]  # noqa: SLF001
    for a in sub._actions:  # noqa: SLF001
        if flag in a.option_strings:
            return tuple(a.choices) if a.choices else ()
    return None


@pytest.mark.parametrize("serving", ["prefill", "aggregated", "disaggregated"])
def test_sweep_is_decode_only(capsys, serving):
    # the sweep evaluates decode steps only: any other serving mode is refused, not ignored
    refused(capsys, ["sweep", "--hardware", "hgx-h200", "--no-progress", *SMALL, "--serving", serving],
            "--serving")


@pytest.mark.parametrize("flag", [["--isl", "2048"], ["--osl", "64"],
                                  ["--max-ttft", "1"], ["--metric", "total"]])
def test_sweep_refuses_workload_flags_it_does_not_use(capsys, flag):
    refused(capsys, ["sweep", "--hardware", "hgx-h200", "--no-progress", *SMALL, *flag], flag[0])


def test_help_offers_only_what_each_command_accepts():
    # compare, size and sensitivity work at a tokens/s per user, which a prefill pool has not
    for cmd in ("compare", "size", "sensitivity"):
        assert "prefill" not in _choices(cmd, "--serving"), cmd
    assert _choices("sweep", "--serving") == ("decode",)
    assert _choices("size", "--metric") is None  # sizing counts output tokens per GPU, always
    assert _choices("frontier", "--serving") == ("decode", "prefill", "aggregated", "disaggregated")


def test_at_needs_explain(capsys):
    refused(capsys, ["compare", *SMALL, "--hardware", "hgx-b200", "hgx-h200", "--at", "20", "--plot", "",
                     "--csv", ""], "--at")


def test_levels_need_fleet_units(capsys):
    refused(capsys, ["size", *SMALL, "--hardware", "hgx-h200", "--demand-tps", "1e5", "--min-tps-user",
                     "20", "--levels", "10", "20"], "--levels")


def test_json_explain_keeps_table_and_frontiers(capsys):
    rc, out, err = run(capsys, ["compare", *SMALL, "--hardware", "hgx-b200", "hgx-h200", "--explain",
                                "--at", "20", "--json", "--plot", "", "--csv", ""])
    assert rc == 0, err
    doc = json.loads(out)
    assert {"settings", "table", "frontiers", "explain"} <= set(doc)
    assert doc["explain"]["settings"]["at_tps_per_user"] == 20
    steps = [s for s in doc["explain"]["steps"] if s["kind"] == "chain"]
    # the chain's factors multiply to the ratio it explains
    assert math.prod(s["factor"] for s in steps) == pytest.approx(doc["explain"]["settings"]["ratio"])


@pytest.mark.parametrize(("argv", "flag"), [
    (["point", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--gpus", "8", "--batch", "1.2",
      "--context", "2048"], "--batch"),
    (["point", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--gpus", "8", "--prefill",
      "--prompt", "100.5"], "--prompt"),
    (["frontier", *SMALL, "--hardware", "hgx-h200", "--isl", "1.5"], "--isl"),
    (["frontier", *SMALL, "--hardware", "hgx-h200", "--osl", "0.5"], "--osl"),
    (["size", *SMALL, "--hardware", "hgx-h200", "--users", "0.5", "--min-tps-user", "20"], "--users"),
])
def test_fractional_counts_refused(capsys, argv, flag):
    refused(capsys, argv, flag)


def _counts_whole(obj, keys=("batch", "prefill_batch", "gpus", "gpus_a", "gpus_b", "prefill_gpus",
                             "users", "units", "decode_instances", "prefill_instances", "max_batch")):
    """Every count in a JSON document is an int (or null), never 32.0."""
    n = 0
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in keys and isinstance(v, int | float) and not isinstance(v, bool):
                assert isinstance(v, int), (k, v)
                n += 1
            n += _counts_whole(v, keys)
    elif isinstance(obj, list):
        n += sum(_counts_whole(v, keys) for v in obj)
    return n


@pytest.mark.parametrize("argv", [
    ["compare", *SMALL, "--hardware", "hgx-b200", "hgx-h200", "--levels", "10", "50", "1000", "--json",
     "--plot", "", "--csv", ""],
    ["frontier", *SMALL, "--hardware", "hgx-h200", "--json"],
    ["frontier", *SMALL, "--hardware", "hgx-h200", "--serving", "prefill", "--json"],
    ["size", *SMALL, "--hardware", "hgx-h200", "--users", "3000", "--min-tps-user", "40", "--json"],
    ["size", *SMALL, "--hardware", "hgx-h200", "--min-tps-user", "40", "--power-budget-mw", "1", "--json"],
    ["point", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--gpus", "8", "--batch", "64",
     "--context", "2048", "--json"],
    ["sweep", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--gpus", "8", "--batch-points", "16",
     "--no-progress", "--json"],
])
def test_counts_are_integers_in_json(capsys, argv):
    rc, out, err = run(capsys, argv)
    assert rc == 0, err
    assert _counts_whole(json.loads(out)) > 0


# ---- inputs the model cannot take, and names from a user's spec ------------------------------------
@pytest.mark.parametrize(("argv", "flag"), [
    (["frontier", "--model", "mixtral-8x7b", "--hardware", "hgx-h200", "--gpus", "8", "--context", "40000"],
     "context"),
    (["frontier", "--model", "mixtral-8x7b", "--hardware", "hgx-h200", "--gpus", "8", "--isl", "32768"],
     "isl"),  # 32,768 + 1,024 output tokens > the 32,768-token window
    (["point", "--model", "mixtral-8x7b", "--hardware", "hgx-h200", "--gpus", "8", "--batch", "1",
      "--context", "40000"], "context"),
    (["sweep", "--model", "mixtral-8x7b", "--hardware", "hgx-h200", "--gpus", "8", "--contexts", "40000",
      "--no-progress"], "contexts"),
])
def test_context_beyond_the_model_window_says_so(capsys, argv, flag):
    refused(capsys, argv, f"{flag}: at most the context window of mixtral-8x7b, 32,768 tokens")


def test_frontier_takes_a_config_directory(capsys):
    # as `specs show DIR` does: a directory holding a config.json
    rc, out, err = run(capsys, ["frontier", "--model", "tests/data/mixtral-8x7b", "--hardware", "hgx-h200",
                                "--gpus", "8", "--json"])
    assert rc == 0, err
    assert json.loads(out)["settings"]["model"] == "mixtral-8x7b"


def test_unicode_names_plot_without_warnings(tmp_path, capsys):
    import warnings
    from pathlib import Path

    text = Path("planner/model_specs/deepseek-v2-lite.yaml").read_text(encoding="utf-8")
    spec = tmp_path / "uni.yaml"
    spec.write_text("\n".join('name: "模型-🚀-ü"' if line.startswith("name:") else line
                              for line in text.splitlines()) + "\n", encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc, out, err = run(capsys, ["frontier", "--model", str(spec), "--hardware", "hgx-h200", "--gpus", "8",
                                    "--plot", str(tmp_path / "f.png")])
    assert rc == 0, err
    assert (tmp_path / "f.png").stat().st_size > 0
    assert not [w for w in caught if "Glyph" in str(w.message)], [str(w.message) for w in caught]
    assert "模型-🚀-ü" in out  # the text output keeps the name as written


def test_stack_selects_the_fit_for_every_system_not_naming_its_own(capsys):
    # --stack S is NAME@S for each system that does not choose its own stack: the same step as
    # hgx-h200@vllm, another than the default stack's (TensorRT-LLM on Hopper), and an explicit
    # @STACK wins; a system with no fit for S is one line naming its file, exit 2
    point = ["point", "--model", "llama-3.1-8b", "--gpus", "1", "--batch", "8", "--context", "1024", "--json"]

    def step(*extra: str) -> float:
        rc, out, err = run(capsys, [*point, *extra])
        assert rc == 0, err
        return json.loads(out)["step_s"]

    vllm = step("--hardware", "hgx-h200@vllm")
    assert step("--hardware", "hgx-h200", "--stack", "vllm") == vllm
    assert step("--hardware", "hgx-h200") != vllm
    assert step("--hardware", "hgx-h200@trtllm", "--stack", "vllm") == step("--hardware", "hgx-h200")
    refused(capsys, [*point, "--hardware", "rtx-pro-6000-server", "--stack", "sglang"],
            "rtx-pro-6000-server.yaml: stack: a fitted serving stack")
    assert _choices("compare", "--stack") == ("trtllm", "sglang", "vllm")


def test_ratio_spans_print_whole_tokens_unless_two_would_touch():
    # the tokens/s per user where a ratio is above its threshold: whole numbers where they read
    # apart; where a dip under 1 token/s per user would print as "128-131, 131-160" (or a span as
    # "148-148"), tenths
    from planner.cli.common import spans_text as _spans

    assert _spans([(112.2, 167.4)]) == "112-167"
    assert _spans([(96.0, 120.0), (140.0, 160.0)]) == "96-120, 140-160"
    assert _spans([(127.7, 130.6), (131.3, 159.9)]) == "127.7-130.6, 131.3-159.9"
    assert _spans([(148.2, 148.4), (154.0, 178.0)]) == "148.2-148.4, 154.0-178.0"
    assert _spans([(187.1, 191.4), (207.71, 207.74)]) == "187.1-191.4, 207.7"


def test_the_python_api_refuses_what_the_command_line_refuses():
    import planner
    from planner.errors import SpecError

    with pytest.raises(SpecError, match="context window"):
        planner.decode_step(planner.Scenario("deepseek-v2-lite", "hgx-h200", gpus=8), batch=8,
                            context=1_000_000)
    # (a fractional batch is a mean over time, which the API takes and the command line does not)
    small = planner.Scenario("deepseek-v2-lite", "hgx-h200", gpus=8)
    assert planner.decode_step(small, batch=1.5, context=1000).feasible
    with pytest.raises(SpecError, match="levels"):
        planner.compare(levels=(-5,))
    with pytest.raises(SpecError, match="at"):
        planner.explain(at=-1)


@pytest.mark.parametrize("extra", [[], ["--runs"], ["--kernels"]])
def test_calibrate_write_never_rewrites_an_installed_package(capsys, monkeypatch, extra):
    import planner.specs.registry as registry

    monkeypatch.setattr(registry, "source_checkout", lambda: None)
    names = registry.hardware_names()
    before = {p: p.read_bytes() for p in [*map(registry.bundled_hardware_path, names),
                                          *map(registry.bundled_calibration_path, names)]}
    refused(capsys, ["calibrate", *extra, "--write"], "--write: a source checkout of moe-planner")
    assert all(p.read_bytes() == b for p, b in before.items())


@pytest.mark.parametrize(("argv", "needle"), [
    (["frontier", *SMALL, "--hardware", "hgx-h200", "--context", "1_0"], "without separators"),
    (["frontier", *SMALL, "--hardware", "hgx-h200", "--kv", ""], "kv: a KV-cache format"),
    (["frontier", *SMALL, "--hardware", "hgx-h200@sglang@vllm"], "one stack"),
    (["frontier", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--workload", "chat", "--slo",
      "ttft_p99=3,ttft_p99=4"], "given twice"),
    (["frontier", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--workload", "chat", "--slo", ""],
     "--slo"),
    (["frontier", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--workload", "chat",
      "--kv-tiers", "hbm,"], "--kv-tiers"),
])
def test_small_inputs_that_were_taken_silently_are_refused(capsys, argv, needle):
    refused(capsys, argv, needle)


def test_an_amortisation_shorter_than_a_month_is_refused(capsys):
    # 1e-9 years priced Kimi K2 Thinking on H200 at $701M per million tokens
    refused(capsys, ["size", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--demand-tps", "1000",
                     "--min-tps-user", "20", "--years", "1e-9"], "years: a number of years from 1/12")


def test_explain_says_why_the_chain_and_the_counterfactuals_differ(capsys):
    rc, out, _ = run(capsys, ["compare", "--model", "deepseek-v2-lite", "--explain", "--at", "20",
                              "--plot", "", "--csv", ""])
    assert rc == 0
    note = [line for line in out.splitlines() if line.startswith("# the scale-up domain is worth")]
    assert len(note) == 1 and "do not multiply to the ratio" in note[0]


@pytest.mark.parametrize(("argv", "needle"), [
    (["point", "--model", "deepseek-r1", "--hardware", "hgx-h200", "--gpus", "8", "--batch", "8",
      "--context", "2048", "--mtp", "1_0"], "--mtp"),
    (["frontier", *SMALL, "--hardware", "hgx-h200", "--mtp", "\uff13"], "--mtp"),
    (["frontier", *SMALL, "--hardware", "hgx-h200", "--acceptance", "\uff12.3"], "--acceptance"),
    (["size", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--demand-tps", "1000",
      "--min-tps-user", "20", "--usd-per-kwh", "1_0"], "--usd-per-kwh"),
    (["frontier", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--workload", "chat", "--slo",
      "ttft_p99=1_0"], "ASCII digits"),
    (["sensitivity", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--what-if",
      "su_bandwidth=1_0"], "--what-if"),
])
def test_numbers_with_separators_or_other_digits_are_refused(capsys, argv, needle):
    # Python's float() and int() read 1_0 as 10 and fullwidth digits as ASCII ones
    refused(capsys, argv, needle)
