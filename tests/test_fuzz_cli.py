"""CLI fuzzing (hypothesis, fixed seed): generated argument lists for every subcommand.

Allowed outcomes: exit status 0 with output, or 2 with exactly one line on stderr starting with
``error:``; never a traceback; never a partially written output file (outputs go through a
temporary file and a rename, so a failed run leaves the target absent and no temporary behind).
Output paths include a symlink (its target is written, the link stays), ``/dev/null`` (stays a
device), a directory, and one path given to two flags (refused before anything is written).
"""

from __future__ import annotations

import os
import stat

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

from planner.cli import build_parser, main

EXAMPLES = int(os.environ.get("MOE_PLANNER_FUZZ_EXAMPLES", "12"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

def mostly(valid: list[str], invalid: list[str]) -> st.SearchStrategy[str]:
    """Valid values four times as likely as junk, so that runs also get past the parser."""
    return st.sampled_from(valid * 4 + invalid)


MODELS = mostly(["deepseek-v2-lite", "mixtral-8x7b", "gpt-oss-120b"],
                ["no-such-model", "deepseek-v2", "", "tests/data/nope.yaml"])
HARDWARE = mostly(["hgx-h200", "hgx-b200", "gb200-nvl72", "hgx-h100"], ["h200", "nvl72", ""])
NUM = mostly(["1", "8", "16", "2048", "64", "0.5"], ["0", "-3", "1e9", "nan", "inf", "abc", "1.2"])
SPECIAL = ["/nonexistent-dir/x.csv", "OUT", "OUT/sub/x.png", "OUT/link.csv", "NULL", "OUT/same.png"]
OUTPUT = mostly(["OUT/x.csv", "OUT/x.json"], SPECIAL)
PLOT = mostly(["OUT/x.png", "OUT/x.svg"], [*SPECIAL, "OUT/x.csv"])
#: OUT/link.csv is a symlink to this file, made before each run
LINK_TARGET = "target.csv"


def _outputs(out) -> str:
    """Make OUT's special files: the symlink, and a device like /dev/null (as root a fresh node in
    OUT, so that a broken writer cannot replace the real one; otherwise /dev/null itself)."""
    (out / "link.csv").symlink_to(LINK_TARGET)
    if os.geteuid() != 0:
        return "/dev/null"
    os.mknod(out / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return str(out / "null")


def _paths(argv: list[str], out, null: str) -> list[str]:
    return [a.replace("NULL", null).replace("OUT", str(out)) for a in argv]

COMMON = {
    "--serving": st.sampled_from(["decode", "prefill", "aggregated", "disaggregated", "fast"]),
    "--isl": NUM, "--osl": NUM, "--context": NUM, "--gpus": st.sampled_from(["8", "16", "0", "x", "3"]),
    "--max-gpus": st.sampled_from(["8", "16", "0"]), "--tp-attn": NUM, "--ep": NUM, "--tp-moe": NUM,
    "--weights": st.sampled_from(["fp8", "nvfp4", "int4_g32", "bf16", "int3", "mxfp4"]),
    "--kv": st.sampled_from(["bf16", "fp8", "fp4"]),
    "--mtp": st.sampled_from(["off", "auto", "1", "3", "-1", "x"]),
    "--overlap": st.sampled_from(["auto", "on", "off", "maybe"]),
    "--mode": st.sampled_from(["bound", "realistic", "fast"]),
    "--metric": st.sampled_from(["output", "total", "decode", "joules"]),
    "--max-ttft": NUM,
}

COMMANDS = {
    "specs list": ({}, []),
    "specs show": ({"--json": None}, [st.sampled_from(["gb200-nvl72", "kimi-k2", "nope", "hgx-h2O",
                                                       "tests/data/deepseek-v3/config.json"])]),
    "frontier": ({**COMMON, "--model": MODELS, "--hardware": HARDWARE, "--json": None, "--csv": OUTPUT,
                  "--plot": PLOT, "--band-samples": st.sampled_from(["2", "3", "0"]), "--logy": None,
                  "--no-logy": None}, []),
    "compare": ({**COMMON, "--model": MODELS,
                 "--hardware": st.sampled_from(["hgx-b200 hgx-h200", "hgx-h200", "x y",
                                                "hgx-h200 hgx-h100 hgx-b200"]),
                 "--levels": st.sampled_from(["10 50", "0", "x"]), "--csv": OUTPUT, "--plot": PLOT,
                 "--json": None, "--explain": None, "--at": NUM,
                 "--band-samples": st.sampled_from(["2", "1"]),
                 "--logy": None}, []),
    "point": ({"--model": MODELS, "--hardware": HARDWARE, "--gpus": NUM, "--batch": NUM, "--context": NUM,
               "--tp-attn": NUM, "--ep": NUM, "--tp-moe": NUM, "--weights": COMMON["--weights"],
               "--kv": COMMON["--kv"], "--mode": COMMON["--mode"], "--json": None}, []),
    # (equations: its only inputs are --latex and --term; fuzzing two outcomes twelve times took 20 s
    # of sympy printing: test_every_equations_form_runs_once below)
    "size": ({**COMMON, "--model": MODELS,
              "--hardware": st.sampled_from(["hgx-h200", "hgx-b200 hgx-h200", "x"]),
              "--demand-tps": NUM, "--users": NUM, "--requests-per-s": NUM, "--min-tps-user": NUM,
              "--pue": st.sampled_from(["1.2", "0", "-1", "x"]), "--usd-per-kwh": NUM, "--years": NUM,
              "--power-budget-mw": NUM, "--cost-target": NUM, "--fleet-units": NUM,
              "--usd-per-gpu-hour": st.sampled_from(["3", "hgx-h200=2", "bad=1", "x"]),
              "--json": None, "--plot": PLOT, "--profile": OUTPUT,
              "--levels": st.sampled_from(["10 20", "0"])}, []),
    "sensitivity": ({**COMMON, "--model": MODELS, "--hardware": HARDWARE, "--at": NUM,
                     "--what-if": st.sampled_from(["su_bandwidth=2", "hbm_bandwidth=0.5", "x=2",
                                                   "su_bandwidth=-1", "flops"]),
                     "--no-symbolic": None, "--json": None}, []),
    "validate": ({"--json": None, "--points": st.sampled_from(["OUT/none.yaml", "/nonexistent/p.yaml",
                                                               "tests/data/README.md"])}, []),
    "sweep": ({**COMMON, "--model": MODELS, "--hardware": HARDWARE,
               "--contexts": st.sampled_from(["1024", "0", "x"]),
               "--batch-points": st.sampled_from(["4", "1", "0"]), "--chunk": st.sampled_from(["4096", "1"]),
               "--csv": OUTPUT, "--json": None, "--no-progress": None}, []),
    "landscape": ({"--hardware": st.sampled_from(["hgx-h200", "hgx-b200 hgx-h200", "x", "hgx-h200 hgx-h200"]),
                   "--models": st.sampled_from(["deepseek-v2-lite", "deepseek-v2-lite mixtral-8x7b", "nope"]),
                   "--workloads": st.sampled_from(["1k/1k", "2k/1k 1k/1k", "0/1", "k/", "chat", "nope"]),
                   "--levels": st.sampled_from(["20 50", "0", "x"]), "--search": st.sampled_from(["limit"]),
                   "--max-gpus": st.sampled_from(["8", "0"]), "--mode": COMMON["--mode"],
                   "--out": st.sampled_from(["OUT/ls", "OUT/same.png", "/nonexistent-dir/ls"]),
                   "--workers": st.sampled_from(["1", "0", "x"]), "--json": None}, []),
}
#: Flags each command always gets (their values may still be junk).
REQUIRED = {
    "frontier": ["--model", "--hardware"], "compare": ["--model"], "point": ["--model", "--hardware",
                                                                           "--gpus", "--batch", "--context"],
    "size": ["--model", "--hardware", "--demand-tps", "--min-tps-user"],
    "sensitivity": ["--model", "--hardware"], "sweep": ["--model", "--hardware"],
    "landscape": ["--hardware", "--models", "--search", "--max-gpus", "--out", "--workers"],
}
AVAILABLE = set(build_parser()._subparsers._group_actions[0].choices)  # noqa: SLF001


def _argv(cmd: str, opts: dict, data) -> list[str]:
    argv = cmd.split()
    spec, positional = COMMANDS[cmd]
    for p in positional:
        argv.append(data.draw(p))
    chosen = data.draw(st.lists(st.sampled_from(sorted(spec)), unique=True, max_size=4)) if spec else []
    for flag in REQUIRED.get(cmd, []) + [f for f in chosen if f not in REQUIRED.get(cmd, [])]:
        if spec[flag] is None:
            argv.append(flag)
        else:
            argv += [flag, *str(data.draw(spec[flag])).split()]
    return argv


@pytest.mark.parametrize("cmd", sorted(COMMANDS))
@FUZZ
@given(data=st.data())
def test_fuzz_cli(cmd, data, tmp_path_factory, capsys):
    if cmd.split()[0] not in AVAILABLE:
        pytest.skip(f"{cmd} not available")
    out = tmp_path_factory.mktemp("out")
    null = _outputs(out)
    argv = _paths(_argv(cmd, COMMANDS[cmd][0], data), out, null)
    # keep generated frontiers small: fix the instance size unless the case already did
    if cmd in ("frontier", "compare", "size", "sweep", "sensitivity") and "--gpus" not in argv:
        argv += ["--gpus", "8"]
    # the symbolic elasticities (sympy on the whole step, seconds a case) are tested in
    # truth/test_sensitivity.py; here the command line is what is fuzzed
    if cmd == "sensitivity" and "--no-symbolic" not in argv:
        argv += ["--no-symbolic"]
    if cmd == "compare" and "--plot" not in argv:
        argv += ["--plot", ""]
    if cmd == "compare" and "--csv" not in argv:
        argv += ["--csv", ""]
    rc, captured = _run(argv, capsys)
    event(f"exit {rc}")  # --hypothesis-show-statistics tells how many runs succeeded
    _check(argv, rc, captured, out, null)


def _run(argv: list[str], capsys) -> tuple[int, object]:
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse usage errors
        rc = exc.code
    return rc, capsys.readouterr()


def _check(argv: list[str], rc: int, captured, out, null: str) -> None:
    assert rc in (0, 2), (argv, rc, captured.err)
    assert "Traceback" not in captured.err, argv
    if rc == 2:
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), (argv, captured.err)
        for a in argv:  # nothing written half-way (a symlink's target included)
            if a.startswith(str(out)) and a not in (str(out), null):
                assert not os.path.exists(a), (argv, a)
    else:
        assert captured.out.strip(), argv
    assert (out / "link.csv").is_symlink(), argv  # written through, never replaced
    assert stat.S_ISCHR(os.lstat(null).st_mode), argv  # written in place, never replaced
    leftovers = [p for p in os.listdir(out) if p.startswith(".")]
    assert not leftovers, (argv, leftovers)


SMALL = ["--model", "deepseek-v2-lite", "--gpus", "8", "--mode", "bound", "--serving", "decode"]


@pytest.mark.parametrize("argv, rc", [
    (["frontier", "--hardware", "hgx-h200", *SMALL, "--csv", "OUT/link.csv", "--plot", "NULL"], 0),
    (["frontier", "--hardware", "hgx-h200", *SMALL, "--csv", "NULL", "--plot", "NULL"], 0),
    (["frontier", "--hardware", "hgx-h200", *SMALL, "--csv", "OUT/x.csv", "--plot", "OUT"], 2),
    (["frontier", "--hardware", "hgx-h200", *SMALL, "--csv", "OUT/same.png", "--plot", "OUT/same.png"], 2),
    (["frontier", "--hardware", "hgx-h200", *SMALL, "--csv", "OUT/link.csv", "--plot",
      f"OUT/{LINK_TARGET}"], 2),
    (["compare", "--hardware", "hgx-b200", "hgx-h200", *SMALL, "--csv", "OUT/x.csv", "--plot",
      "OUT/./x.csv"], 2),
    (["sweep", "--hardware", "hgx-h200", "--model", "deepseek-v2-lite", "--gpus", "8", "--batch-points", "4",
      "--no-progress", "--csv", "OUT/link.csv"], 0),
    (["sweep", "--hardware", "hgx-h200", "--model", "deepseek-v2-lite", "--gpus", "8", "--batch-points", "4",
      "--no-progress", "--csv", "OUT"], 2),
])
def test_special_output_paths(argv, rc, tmp_path, capsys):
    null = _outputs(tmp_path)
    through_link = rc == 0 and "OUT/link.csv" in argv
    argv = _paths(argv, tmp_path, null)
    got, captured = _run(argv, capsys)
    _check(argv, got, captured, tmp_path, null)
    assert got == rc, (argv, captured.err)
    assert (tmp_path / LINK_TARGET).exists() == through_link


#: Flags that once were accepted and then ignored: each now changes the output or is refused with one
#: line (exit 2).  (command line, flag added)
SWEEP = ["sweep", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--batch-points", "8",
         "--no-progress"]
IGNORED_ONCE = [
    (SWEEP, ["--serving", "aggregated"]),
    (SWEEP, ["--isl", "4096"]),
    (["compare", "--model", "deepseek-v2-lite", "--hardware", "hgx-b200", "hgx-h200", "--serving", "decode",
      "--levels", "20", "--plot", "", "--csv", ""], ["--at", "20"]),
    (["compare", "--model", "deepseek-v2-lite", "--hardware", "hgx-b200", "hgx-h200", "--serving", "decode",
      "--levels", "20", "--plot", "", "--csv", "", "--json"], ["--explain"]),
    (["compare", "--model", "deepseek-v2-lite", "--hardware", "hgx-b200", "hgx-h200", "--plot", "",
      "--csv", ""],
     ["--serving", "prefill"]),
    (["size", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--demand-tps", "1e5",
      "--min-tps-user", "20"], ["--levels", "10", "20"]),
    (["size", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--demand-tps", "1e5",
      "--min-tps-user", "20"], ["--metric", "total"]),
    (["frontier", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--serving", "decode"],
     ["--band-samples", "4"]),
    (["frontier", "--model", "deepseek-v2-lite", "--hardware", "hgx-h200", "--serving", "decode", "--band",
      "--band-samples", "3", "--csv", "OUT/f.csv"], []),
]


@pytest.mark.parametrize(("argv", "flag"), IGNORED_ONCE, ids=lambda v: " ".join(v)[:40])
def test_no_flag_is_accepted_and_ignored(argv, flag, tmp_path, capsys):
    def run(a: list[str]) -> tuple[int, str, str]:
        a = [x.replace("OUT", str(tmp_path)) for x in a] + ["--gpus", "8"]
        try:
            rc = main(a)
        except SystemExit as exc:
            rc = exc.code
        out, err = capsys.readouterr()
        # the sweep's header carries its own timing: not part of the answer
        out = "\n".join(line for line in out.splitlines() if not line.startswith("# sweep:"))
        csv = tmp_path / "f.csv"
        return rc, out + (csv.read_text() if csv.exists() else ""), err

    rc0, out0, _ = run(argv)
    assert rc0 == 0
    if not flag:  # --band with --csv: the CSV has the band's columns
        assert "band_lo" in out0
        return
    rc, out, err = run(argv + flag)
    if rc == 2:
        assert err.startswith("error:") and err.count("\n") == 1, err
    else:
        assert rc == 0 and out != out0, (flag, "accepted but changed nothing")


@pytest.mark.parametrize("stdout", ["full", "closed", "pipe closed early"])
@pytest.mark.parametrize("argv", [["specs", "list"], ["--help"], ["specs", "show", "hgx-h200", "--json"]])
def test_an_unwritable_standard_output_is_one_line(stdout, argv):
    # `specs list > /dev/full` ended in an OSError traceback and `specs list >&-` in an
    # AttributeError one; a reader that stops early (`| head`) is no error
    import subprocess
    import sys

    if stdout == "full" and not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    redirect = {"full": ">/dev/full", "closed": ">&-", "pipe closed early": "| head -c 1 >/dev/null"}[stdout]
    cmd = " ".join([f"'{sys.executable}'", "-m", "planner", *argv, redirect])
    # the shell reports the status of the last command of a pipe: the planner's with pipefail's help
    p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, timeout=120,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if stdout == "pipe closed early":
        assert p.returncode in (0, 141) and p.stderr == "", p.stderr  # 141: head left before the write
        return
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert p.stderr.startswith("error: <stdout>: output: a writable standard output (") and \
        p.stderr.count("\n") == 1, p.stderr


@pytest.mark.parametrize("argv", [["equations", "--latex"], ["equations", "--term", "no_such_term"]])
def test_every_equations_form_runs_once(argv, tmp_path, capsys):
    rc, captured = _run(argv, capsys)
    assert rc in (0, 2) and "Traceback" not in captured.err
    assert rc == 0 or captured.err.count("\n") == 1
