"""``moe-planner landscape``: every system x model x workload at once, on Dask when installed
(:mod:`planner.fleet.landscape`, :mod:`planner.cells`)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from planner.cli.common import add_command, json_safe, positive_float, positive_int, print_json
from planner.cli.options import add_scenario_options, scenario_from_args
from planner.errors import SpecError

#: the scenario fields a landscape takes (the model and the lengths come per cell)
FIELDS = ("systems", "stack", "serving", "max_ttft", "gpus", "max_gpus", "tp_attn", "ep", "tp_moe",
          "weights", "kv", "mtp", "acceptance", "overlap", "kv_offload", "mode", "search", "metric")
#: band draws per cell unless told (each draw is a frontier: 64 cells x 32 draws is minutes)
BAND_SAMPLES = 32


def add_executor_options(p: Any) -> None:
    """``--workers`` and ``--scheduler``: where the cells of a command run (:mod:`planner.cells`)."""
    g = p.add_argument_group("where the cells run (the dask extra: pip install 'moe-planner[dask]')")
    g.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="worker processes of a local Dask cluster (default: the cores; 1: in this process, "
                        "no Dask)")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="an existing Dask cluster's scheduler (tcp://host:8786) instead of a local one")


def refuse_executor(args: argparse.Namespace, used: bool, expected: str) -> None:
    """``--workers`` or ``--scheduler`` where the command runs no cells (``used`` False): one line
    saying what takes them (``expected``)."""
    for flag in ("workers", "scheduler"):
        if getattr(args, flag, None) is not None and not used:
            raise SpecError("<input>", f"--{flag}", expected)


def executor_of(args: argparse.Namespace, cache: str | None = None) -> Any:
    from planner.cells import Executor

    if args.scheduler is not None and args.workers is not None:
        raise SpecError("<input>", "--workers", "no --scheduler with it (an existing cluster has its own)")
    return Executor(workers=args.workers, scheduler=args.scheduler, cache=cache)


def cmd_landscape(args: argparse.Namespace) -> int:
    from planner.cells import describe
    from planner.fleet.landscape import landscape, parse_workload
    from planner.outputs import fmt, table, write_outputs
    from planner.plot import plot_landscape, plot_landscape_best

    sc = scenario_from_args(args)
    if args.band_samples is not None and not args.band:
        raise SpecError("<input>", "--band-samples", "--band with it (the draws of the band)")
    out = args.out
    if os.path.exists(out) and not os.path.isdir(out):
        raise SpecError(out, "--out", "a directory (the table, figures, page and cells are written into it)")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):  # (only DIR itself is made, never the folders above it)
        raise SpecError(out, "--out", f"a directory in one that exists ({parent} does not)")
    for w in args.workloads:  # a bad workload is one line before any cell runs
        parse_workload(w)
    ex = executor_of(args, cache=os.path.join(out, "cells"))
    ls = landscape(sc, args.models, args.workloads, levels=args.levels,
                   band=(args.band_samples or BAND_SAMPLES) if args.band else 0, executor=ex)
    t = ls.table
    outputs: list[tuple[str, str, Any]] = [
        ("--out", os.path.join(out, "landscape.csv"), lambda tmp: t.to_csv(tmp, index=False))]
    from planner.cli.common import savefig_to

    figures = [(f"heatmap-{x:g}.png", lambda x=x: plot_landscape(ls, x)) for x in ls.levels]
    figures.append(("best.png", lambda: plot_landscape_best(ls)))
    for name, draw in figures:
        path = os.path.join(out, name)
        outputs.append(("--out", path, savefig_to(draw, path)))
    from planner.cli.report import landscape_page

    outputs.append(("--out", os.path.join(out, "landscape.html"),
                    landscape_page(ls, argv=list(getattr(args, "argv", None) or ["landscape"]))))
    write_outputs(outputs)
    if args.json:
        print_json({"scenario": sc.to_dict(), "models": list(args.models), "workloads": list(args.workloads),
                    "levels": list(ls.levels), "run": describe(ls.run),
                    "rows": [{k: json_safe(v) for k, v in r.items()} for r in t.to_dict("records")],
                    "best": [{k: json_safe(v) for k, v in r.items()} for r in ls.best().to_dict("records")],
                    "written": out})
        return 0
    print(f"# moe-planner landscape: {len(sc.systems)} systems x {len(args.models)} models x "
          f"{len(args.workloads)} workloads at {', '.join(f'{x:g}' for x in ls.levels)} tokens/s per user; "
          f"{sc.serving}, {sc.mode} mode")
    print(f"# {describe(ls.run)}")
    best = ls.best()
    rows = [[r.model, r.workload, r.tps_per_user, r.best, r.tps_per_gpu, fmt(r.lead, 3)]
            for r in best.itertuples()]
    print(table(rows, ["model", "workload", "tok/s/user", "best system", "tok/s/GPU", "lead over next"]))
    basis = t.drop_duplicates("hardware")
    rests = [f"{r.hardware}: " + ("its measured runs" if r.measured is True else
                                  f"its datasheet alone (log-sd {r.datasheet_log_sd:g})")
             for r in basis.itertuples() if isinstance(r.hardware, str) and r.measured in (True, False)]
    print("# what each system's figures rest on: " + "; ".join(rests))
    for c in ls.run.failed:
        s, label = c.key[0], c.key[1]
        print(f"# failed: {s.to_dict()['systems'][0]}, {s.to_dict()['model']}, {label}: {c.error}")
    print(f"# wrote {out}/: landscape.csv, landscape.html, best.png, "
          + ", ".join(f"heatmap-{x:g}.png" for x in ls.levels) + " (cells kept in cells/: a rerun computes "
          "only what changed)")
    return 0


def register(sub: Any) -> None:
    p = add_command(
        sub, "landscape", cmd_landscape,
        help="every system x model x workload at once (Dask when installed): a table, heatmaps, the best "
             "system per model and level, a page",
        description="For each system, model and workload, the frontier as `frontier` draws it, read at each "
        "service level as `compare`'s table is: tokens/s per GPU, per MW, $/Mtok (rental), the binding "
        "term, and with --band the uncertainty band; beside each system, whether its figures rest on its "
        "own measured runs or its datasheet alone.  The cells run in parallel on Dask (a local cluster of "
        "processes, or --scheduler); each cell's result is kept in OUT/cells by its inputs' hash, so a "
        "rerun computes only what changed; a cell that fails is a row with its error.",
        epilog="examples:\n"
        "  moe-planner landscape --hardware gb200-nvl72 hgx-b200 hgx-h200 --models deepseek-r1 "
        "kimi-k2-thinking --workloads 1k/1k 8k/1k\n"
        "  moe-planner landscape --hardware gb300-nvl72 mi355x --models deepseek-r1 --workloads 1k/1k "
        "chat --levels 20 50 --out portfolio --workers 2")
    add_scenario_options(p, FIELDS, changes={
        "systems": {"nargs": "+", "required": True,
                    "help": "the systems (NAME@STACK picks a stack's fit)"}})
    p.add_argument("--models", nargs="+", required=True, metavar="M",
                   help="the models (bundled names or paths)")
    p.add_argument("--workloads", nargs="+", default=["1k/1k"], metavar="W",
                   help="ISL/OSL pairs (1024/1024, 8k/1k) or workloads of sessions (agentic, reasoning, "
                        "chat, a YAML or a trace CSV; the limit search) (default 1k/1k)")
    p.add_argument("--levels", nargs="+", type=positive_float, default=[20.0, 50.0, 100.0], metavar="X",
                   help="service levels, tokens/s per user (default 20 50 100)")
    p.add_argument("--band", action="store_true",
                   help="also the 5th-95th percentile band of each cell (Monte Carlo over the efficiencies; "
                        "ISL/OSL workloads)")
    p.add_argument("--band-samples", type=positive_int, default=None, metavar="N",
                   help=f"draws for --band (default {BAND_SAMPLES}; 2 to 1000)")
    p.add_argument("--out", default="landscape", metavar="DIR",
                   help="directory of the table, figures, page and kept cells (default landscape)")
    add_executor_options(p)
    p.add_argument("--json", action="store_true", help="print the table as JSON")
