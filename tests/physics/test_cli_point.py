"""``moe-planner point`` and ``moe-planner equations``: help, one end-to-end run each, JSON, and
bad or infeasible input as one line on stderr with exit status 2."""

from __future__ import annotations

import json
import math
import re

import pytest

from planner.cli import main

KIMI_H200 = ["point", "--model", "kimi-k2-thinking", "--hardware", "hgx-h200", "--gpus", "8",
             "--tp-attn", "8", "--ep", "8", "--batch", "8", "--context", "4096", "--mode", "bound"]


def run(capsys, argv):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("cmd", [["point", "--help"], ["equations", "--help"]])
def test_help(capsys, cmd):
    with pytest.raises(SystemExit) as exc:
        main(cmd)
    assert exc.value.code == 0
    assert "usage" in capsys.readouterr().out


def _point_parser():
    import argparse

    from planner.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["point"]


def test_every_numeric_flag_states_unit_and_default():
    units = ("GPUs", "count", "ranks", "tokens", "fraction")
    numeric = [a for a in _point_parser()._actions if a.type is not None]
    assert {a.option_strings[0] for a in numeric} >= {
        "--gpus", "--tp-attn", "--dp-attn", "--ep", "--tp-moe", "--expert-slots", "--batch", "--context",
        "--prompt", "--mtp", "--acceptance"}
    for a in numeric:
        assert "default" in a.help or "required" in a.help, a.option_strings
        assert any(u in a.help for u in units), a.option_strings


def test_point_table(capsys):
    code, out, err = run(capsys, KIMI_H200)
    assert code == 0 and err == ""
    for needle in ("attn_proj", "experts", "dispatch", "per layer (us)", "per step (us)", "TPOT",
                   "tokens/s per user", "tokens/s per GPU", "bottleneck: hbm_weights", "memory per GPU",
                   "largest term: experts"):
        assert needle in out, needle
    # the experts row: 38.40 us per layer, x 60 MoE layers
    assert re.search(r"experts\s+38\.40\s+x 60\s+2303\.96", out)


def test_point_json(capsys):
    code, out, err = run(capsys, KIMI_H200 + ["--json"])
    assert code == 0 and err == ""
    d = json.loads(out)
    for key in ("tpot_s", "tps_per_user", "tps_per_gpu", "bottleneck", "feasible"):
        assert key in d
    assert d["feasible"] is True and d["bottleneck"] == "hbm_weights"
    # the step worked by hand in test_step.py (attention with replicated down-projections and
    # router, experts, KV, head; all-reduces in the switch): 3.77516 ms less 62 x 0.191147 us
    assert math.isclose(d["tpot_s"], 3.7751576e-3 - 62 * (2 * 7 / 8 - 1) * 8 * 7168 * 2 / 450e9, rel_tol=1e-6)
    assert math.isclose(d["tps_per_gpu"], 1 / d["tpot_s"], rel_tol=1e-12)
    assert math.isclose(d["per_step_s"]["experts"], 60 * d["terms_s"]["experts"], rel_tol=1e-12)


def test_point_with_overlap_mtp_and_prefill(capsys):
    code, out, _ = run(capsys, ["point", "--model", "deepseek-v3", "--hardware", "gb200-nvl72", "--gpus",
                                "72", "--batch", "4608", "--context", "4096", "--overlap", "--mtp", "1"])
    assert code == 0 and "overlap on" in out and "MTP 1" in out
    code, out, _ = run(capsys, ["point", "--model", "kimi-k2-thinking", "--hardware", "gb200-nvl72", "--gpus",
                                "8", "--prefill", "--prompt", "8192", "--batch", "2", "--json"])
    d = json.loads(out)
    assert code == 0 and d["phase"] == "prefill" and d["config"]["prompt"] == 8192


def test_dp_attn_sets_tp_attn(capsys):
    code, out, _ = run(capsys, ["point", "--model", "kimi-k2-thinking", "--hardware", "hgx-h200", "--gpus",
                                "8", "--dp-attn", "2", "--batch", "8", "--context", "1024", "--json"])
    d = json.loads(out)
    assert code == 0 and d["config"]["tp_attn"] == 4 and d["config"]["dp_attn"] == 2


@pytest.mark.parametrize(("extra", "needle"), [
    (["--batch", "4000", "--context", "100000"], "KV cache does not fit"),
    (["--tp-attn", "3", "--batch", "8", "--context", "1000"], "attention TP must divide"),
    (["--ep", "8", "--expert-slots", "390", "--batch", "8", "--context", "1000"], "EP must divide"),
])
def test_infeasible_is_one_line_exit_2(capsys, extra, needle):
    base = ["point", "--model", "kimi-k2-thinking", "--hardware", "hgx-h200", "--gpus", "8"]
    code, out, err = run(capsys, base + extra)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: infeasible:") and needle in err
    assert out == ""  # the one line is all (the help says so)
    code, out, err = run(capsys, base + extra + ["--json"])
    assert code == 2 and err.count("\n") == 1 and out == ""


@pytest.mark.parametrize("argv", [
    ["--batch", "8"],                                       # no --context
    ["--batch", "8", "--context", "100", "--mtp", "2"],     # Kimi K2 Thinking: no published acceptance
    ["--batch", "8", "--context", "100", "--dp-attn", "3"],
    ["--batch", "8", "--context", "100", "--ep", "4", "--tp-moe", "4"],
    ["--batch", "8", "--context", "100", "--weights", "fp3"],
    ["--batch", "0", "--context", "100"],
    ["--batch", "8", "--context", "100", "--mtp", "lots"],
    ["--prefill", "--batch", "1"],                          # no --prompt
])
def test_bad_input_is_one_line_exit_2(capsys, argv):
    base = ["point", "--model", "kimi-k2-thinking", "--hardware", "hgx-h200", "--gpus", "8"]
    code = None
    try:
        code = main(base + argv)
    except SystemExit as exc:  # argparse type errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error:")


def test_unknown_model_is_one_line(capsys):
    code, _, err = run(capsys, ["point", "--model", "kimi-k3", "--hardware", "hgx-h200", "--gpus", "8",
                                "--batch", "8", "--context", "100"])
    assert code == 2 and err.count("\n") == 1


def test_equations_one_term_text_and_latex(capsys):
    code, out, _ = run(capsys, ["equations", "--term", "experts"])
    assert code == 0
    assert out.startswith("experts =")
    assert "E_slots" in out and "tau_k" in out
    assert re.search(r"B_hbm\s+\[B/s\]\s+HBM bandwidth", out)  # the symbol table: name, unit, meaning
    code, out, _ = run(capsys, ["equations", "--latex", "--term", "dispatch"])
    assert code == 0 and r"\alpha_{a2a}" in out and r"\frac" in out  # the all-to-all kernels' latency


def test_equations_all(capsys):
    from planner.physics import equations as eq

    code, out, _ = run(capsys, ["equations"])
    assert code == 0
    from planner.physics.serving_eq import EQUATIONS
    for name in [*eq.ALL, *(f"serving.{k}" for k in EQUATIONS)]:
        assert f"\n{name} =\n" in "\n" + out, name
    assert "symbols:" in out


def test_equations_serving_term_with_its_symbols(capsys):
    code, out, _ = run(capsys, ["equations", "--term", "serving.t_step_aggregated"])
    assert code == 0 and out.startswith("serving.t_step_aggregated =")
    # the attention-DP ranks stepping together and the pass's rank-local share, with their units
    assert re.search(r"D_a\s+\[1\]\s+attention-DP ranks", out)
    assert re.search(r"C_p\s+\[token\]", out) and "phi_l" in out


def test_equations_unknown_term(capsys):
    code, _, err = run(capsys, ["equations", "--term", "expert"])
    assert code == 2 and err.count("\n") == 1 and "experts" in err


def test_point_takes_acceptance_as_tokens_per_step_or_as_a_rate(capsys):
    # as frontier and compare take it: 2.3 tokens per step with 2 drafts is the per-draft rate a
    # with 1 + a + a^2 = 2.3, a = 0.7179...
    from planner.serving.percentiles import acceptance_rate

    base = ["point", "--model", "deepseek-r1", "--hardware", "hgx-h200", "--gpus", "8", "--batch", "8",
            "--context", "2048", "--mtp", "2", "--json"]
    rc, out, _ = run(capsys, [*base, "--acceptance", "2.3"])
    assert rc == 0
    a = float(acceptance_rate(2.3, 2))
    assert 1 + a + a * a == pytest.approx(2.3, rel=1e-9)
    rc2, out2, _ = run(capsys, [*base, "--acceptance", repr(a)])
    assert rc2 == 0
    assert json.loads(out)["step_s"] == pytest.approx(json.loads(out2)["step_s"], rel=1e-9)
    # more tokens per step than N drafts can emit is refused in one line
    rc, out, err = run(capsys, [*base[:-1], "--acceptance", "3.5"])
    assert rc == 2 and out == "" and "at most 3 tokens per step" in err and err.count("\n") == 1
