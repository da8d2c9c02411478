"""The README's answer table, regenerated from ``moe-planner compare --json``.

Runs the main job on its defaults (Kimi K2 Thinking, GB200 NVL72 against HGX H200) through
``planner.cli.main`` and prints the markdown the README holds between its ``readme-numbers``
markers: the compare table (tokens/s per user, each side's tokens/s per GPU, the per-GPU and
per-MW ratios, the term that binds each side), where each ratio is 10x or more, and the largest.

    python scripts/readme_numbers.py                    # print the table
    python scripts/readme_numbers.py --check README.md  # exit 1 if the README's table differs
    python scripts/readme_numbers.py --write README.md  # replace the README's table with it

With ``--frontiers FILE`` (the public measured-frontier points, InferenceX columns; never bundled),
the README's accuracy table, between its ``readme-accuracy`` markers, is regenerated and checked
as well, from ``validate --frontiers FILE`` at each point's own deployment.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import json
import sys
import textwrap
from pathlib import Path

BEGIN = "<!-- readme-numbers: begin (scripts/readme_numbers.py writes this table) -->"
END = "<!-- readme-numbers: end -->"

#: the CLI's command for the answer, its files switched off
ARGV = ["compare", "--plot", "", "--csv", "", "--json"]

NAMES = {"gb200-nvl72": "GB200 NVL72", "hgx-h200": "HGX H200"}
SHORT = {"gb200-nvl72": "GB200", "hgx-h200": "H200"}
BINDS = {"compute": "compute", "hbm_weights": "HBM (weights)", "kv_read": "KV read", "scale_up": "scale-up",
         "scale_out": "scale-out", "latency": "latency", "memory_capacity": "memory capacity"}


def compare_json(argv: list[str] | None = None) -> dict:
    """``moe-planner compare --json`` on the defaults (or with ``argv`` added), as a dict."""
    from planner.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(ARGV + list(argv or []))
    if rc != 0:
        raise RuntimeError(f"moe-planner {' '.join(ARGV)} exited {rc}")
    return json.loads(out.getvalue())


def _rate(x: float) -> str:
    return f"{round(x, 1):g}"


def _gpu(x: float | None) -> str:
    return "-" if x is None else f"{x:,.0f}"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}x"


def _binds(b: str | None) -> str:
    return "-" if b is None else BINDS.get(b, b.replace("_", " "))


def _intervals(iv: list) -> str:
    if not iv:
        return "nowhere"
    return ", ".join(f"from {lo:.0f} to {hi:.0f}" for lo, hi in iv)


def render(data: dict) -> str:
    """The README's block (markers included) from the compare JSON."""
    s = data["settings"]
    a, b = s["hardware_a"], s["hardware_b"]
    na, nb = NAMES.get(a, a), NAMES.get(b, b)
    sa, sb = SHORT.get(a, a), SHORT.get(b, b)
    lines = [BEGIN,
             f"| tokens/s per user | {na} tok/s/GPU | {nb} tok/s/GPU | per GPU | per MW "
             f"| {sa} binds | {sb} binds |",
             "|---|---|---|---|---|---|---|"]
    top_a = top_b = None
    for r in data["table"]:
        top_a, top_b = r["max_tps_per_user_a"], r["max_tps_per_user_b"]
        ratio = _ratio(r["ratio"])
        if r["largest"]:
            ratio = f"**{ratio}** (largest)"
        elif r["ratio"] is not None and not r["both_useful"]:
            ratio = f"{ratio} (tail)"
        cells = [_rate(r["tps_per_user"]), _gpu(r["tps_per_gpu_a"]), _gpu(r["tps_per_gpu_b"]), ratio,
                 _ratio(r["ratio_per_mw"]), _binds(r["bottleneck_a"]), _binds(r["bottleneck_b"])]
        lines.append("| " + " | ".join(cells) + " |")
    v = data["verdict"]
    t = f"{v['threshold']:g}x"
    largest = v["largest"]
    summary = (f"**The per-GPU ratio is {t} or more {_intervals(v['per_gpu']['intervals'])} "
               f"tokens/s per user, "
               f"the per-MW ratio {_intervals(v['per_mw']['intervals'])}; the largest is "
               f"{largest['ratio']:.1f}x at {_rate(largest['tps_per_user'])} tokens/s per user.**  "
               f"{sa} tops out at {top_a:.0f} tokens/s per user, {sb} at {top_b:.0f} (`-`: not reachable); "
               f"a `tail` row is one where a side gives under 5% of its peak tokens/s per GPU.")
    lines += ["", textwrap.fill(summary, width=100, break_on_hyphens=False), END]
    return "\n".join(lines)


ACC_BEGIN = "<!-- readme-accuracy: begin (scripts/readme_numbers.py --frontiers FILE writes this table) -->"
ACC_END = "<!-- readme-accuracy: end -->"
SYSTEMS = {"B200": "HGX B200", "B300": "HGX B300", "H100": "HGX H100", "H200": "HGX H200"}


def accuracy_block(path: str) -> str:
    """The README's accuracy table from the measured-frontier file at ``path``: each system's
    points and median |error| of tokens/s per GPU, TPOT and TTFT at each point's own deployment."""
    import numpy as np

    from planner.truth.frontiers import score_frontiers

    with np.errstate(all="ignore"):
        score = score_frontiers(path, frontier=False, system=False)
    s = score.summary()
    rows = [f"| {SYSTEMS.get(r['hardware'], r['hardware'])} | {r['points']:,} | "
            f"{r['tps_per_gpu_median_abs_err']:.0%} | {r['tpot_median_abs_err']:.0%} | "
            f"{r['ttft_median_abs_err']:.0%} |" for r in score.by("hardware")]
    p = s["point"]
    dates = score.rows.date.astype(str)
    return "\n".join([
        ACC_BEGIN,
        f"Each public InferenceX DeepSeek-R1 benchmark point ({s['points_scored']:,} of "
        f"{s['points_total']:,} scored, {dates.min()[:7]} to {dates.max()[:7]})",
        "predicted at its own deployment; median |error| (`moe-planner validate --frontiers FILE`):",
        "", "| system | points | tok/s/GPU | TPOT | TTFT |", "|---|---:|---:|---:|---:|", *rows,
        f"| **all** | {s['points_scored']:,} | **{p['tps_per_gpu_median_abs_err']:.0%}** | "
        f"**{p['tpot_median_abs_err']:.0%}** | **{p['ttft_median_abs_err']:.0%}** |", "",
        f"The bound lies above all of them ({s['bound_violations']} violations).",
        ACC_END])


def extract(text: str, begin: str = BEGIN, end: str = END) -> str | None:
    """The block between the markers (markers included), or None."""
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < i:
        return None
    return text[i:j + len(end)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--check", metavar="README", help="exit 1 if this file's table differs from the CLI's")
    g.add_argument("--write", metavar="README", help="replace this file's table with the CLI's")
    p.add_argument("--from-json", metavar="FILE", help="read a saved `compare --json` instead of running it")
    p.add_argument("--frontiers", metavar="FILE",
                   help="also the accuracy table, from this measured-frontier file (InferenceX columns)")
    args = p.parse_args(argv)
    data = json.loads(Path(args.from_json).read_text()) if args.from_json else compare_json()
    blocks = [(BEGIN, END, render(data), "the answer table", "moe-planner compare --json")]
    if args.frontiers:
        blocks.append((ACC_BEGIN, ACC_END, accuracy_block(args.frontiers), "the accuracy table",
                       "moe-planner validate --frontiers"))
    path = args.check or args.write
    if path is None:
        print("\n\n".join(b[2] for b in blocks))
        return 0
    text = Path(path).read_text()
    rc = 0
    for begin, end, block, what, source in blocks:
        have = extract(text, begin, end)
        if have is None:
            print(f"{path}: no table between the markers of {what}", file=sys.stderr)
            return 1
        if args.write:
            if have != block:
                text = text.replace(have, block)
                Path(path).write_text(text)
                print(f"{path}: {what} rewritten")
            continue
        if have != block:
            sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), block.splitlines(True),
                                                       f"{path} (as written)", source))
            print(f"\n{path}: {what} differs from the CLI's", file=sys.stderr)
            rc = 1
        else:
            print(f"{path}: {what} matches the CLI's")
    return rc


if __name__ == "__main__":
    sys.exit(main())
