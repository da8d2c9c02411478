"""``moe-planner recipe``: a frontier point's deployment as a launch recipe and its benchmark."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from planner.cli.common import add_command, positive_float, print_json
from planner.cli.options import add_scenario_options, scenario_from_args
from planner.errors import SpecError
from planner.specs.scenario import STACKS


def cmd_recipe(args: argparse.Namespace) -> int:
    from planner.outputs import table, write_outputs
    from planner.serving.launch import build

    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise SpecError(args.out, "--out", "a directory (the recipes and their sidecars are written into it)")
    named = getattr(args, "stack", None)  # (several stacks: each point's scenario takes one)
    if named is not None:
        del args.stack
    sc = scenario_from_args(args)
    stacks = list(dict.fromkeys(named or STACKS))
    recipes, refused, errors = [], [], []
    for stack in stacks:
        for x in args.at:
            try:
                recipes.append(build(sc.replace(stack=stack), x, checkpoint=args.checkpoint))
            except SpecError as exc:
                if named:  # a stack asked by name that cannot run the point: one line, exit 2
                    raise
                refused.append((stack, x, exc.expected if hasattr(exc, "expected") else str(exc)))
                errors.append(exc)
    if not recipes and len({(e.field, e.expected) for e in errors}) == 1:
        raise errors[0]  # the same reason for every stack (a bad --checkpoint): said once, as itself
    if not recipes:
        raise SpecError("<input>", "--stack", "a stack that can run the point: "
                        + "; ".join(f"{s} at {x:g}: {why}" for s, x, why in refused))
    os.makedirs(args.out, exist_ok=True)
    write_outputs(recipe_files(recipes, args.out, "--out"))
    if args.json:
        print_json({"scenario": sc.to_dict(),
                    "recipes": [{"path": os.path.join(args.out, r.name + ".yaml"), **r.sidecar}
                                for r in recipes],
                    "refused": [{"stack": s, "at": x, "why": w} for s, x, w in refused]})
        return 0
    rows = []
    for r in recipes:
        s, d, p = r.sidecar, r.sidecar["deployment"], r.sidecar["predicted"]
        workers = f"{d['decode_workers']:g}x{d['decode_gpus']:g}"
        if d["disagg"]:
            workers = f"{d['prefill_workers']:g}x{d['prefill_gpus']:g} + {workers}"
        rows.append([s["stack"], s["at_tps_per_user"], p["tps_per_user"], p["output_tps_per_gpu"], workers,
                     f"{d['concurrency']:g}", d["drafts"], f"{p['ttft_median_s']:.3g}", r.name + ".yaml"])
    print(f"# moe-planner recipe: {args.model} on {args.hardware}, {args.serving}, ISL {args.isl:g} / OSL "
          f"{args.osl:g}; written to {args.out} (each with a .json sidecar of the prediction)")
    print(table(rows, ["stack", "at", "tok/s/user", "tok/s/GPU", "workers (prefill + decode)", "users",
                       "drafts", "TTFT s", "recipe"]))
    for s, x, why in refused:
        print(f"# {s} at {x:g}: not written: {why}")
    return 0


def check_recipes_dir(path: str | None) -> None:
    """``--recipes DIR`` of ``size`` and ``plan``: a directory (or nothing yet)."""
    if path is not None and os.path.exists(path) and not os.path.isdir(path):
        raise SpecError(path, "--recipes", "a directory (the pools' recipes and their sidecars are "
                        "written into it)")


def recipe_files(recipes: list[Any], out: str, flag: str) -> list[tuple[str, str, Any]]:
    """Each recipe's YAML and its .json sidecar under ``out``, as outputs for
    :func:`planner.outputs.write_outputs` (``flag`` names the option that asked for them)."""
    outputs: list[tuple[str, str, Any]] = []
    for r in recipes:
        base = os.path.join(out, r.name)
        outputs.append((flag, base + ".yaml", r.text))
        outputs.append((flag, base + ".json", json.dumps(r.sidecar, indent=2) + "\n"))
    return outputs


def pool_recipe_outputs(sources: list[Any], out: str, what: str
                        ) -> tuple[list[tuple[str, str, Any]], dict[str, Any]]:
    """The recipes of pools (:mod:`planner.economics.recipes`) as outputs for
    :func:`planner.outputs.write_outputs` under ``out``, and their summary: ``recipes`` (path,
    pool, stack, copies) and ``refused`` (pool, why)."""
    from planner.economics.recipes import pool_recipes

    recipes, refused = pool_recipes(sources, what=what)
    outputs = recipe_files(recipes, out, "--recipes")
    done = []
    for r in recipes:
        base = os.path.join(out, r.name)
        pool = r.sidecar["pool"]
        done.append({"path": base + ".yaml", "sidecar": base + ".json", "pool": pool["label"],
                     "stack": r.sidecar["stack"], "copies": pool["copies"]})
    if recipes:
        os.makedirs(out, exist_ok=True)
    return outputs, {"dir": out, "recipes": done, "refused": [{"pool": p, "why": w} for p, w in refused]}


def print_pool_recipes(summary: dict[str, Any]) -> None:
    """The recipes written, and the one-line reason of each pool without one."""
    n = len(summary["recipes"])
    print(f"# recipes: {n} written to {summary['dir']} (each with a .json sidecar of the prediction)"
          + (":" if n else ""))
    for r in summary["recipes"]:
        print(f"#   {os.path.basename(r['path'])}: {r['pool']}, {r['stack']}, {r['copies']} "
              f"cop{'y' if r['copies'] == 1 else 'ies'}")
    for r in summary["refused"]:
        print(f"# {r['pool']}: no recipe: {r['why']}")


def register(sub: Any) -> None:
    p = add_command(
        sub, "recipe", cmd_recipe,
        help="launch recipes of frontier points: Dynamo graph deployments with the stack's flags, and "
        "the benchmark that measures them",
        description="For the frontier point at each --at tokens/s per user (the deployment searches: the "
        "most tokens/s per GPU at least that fast per user), priced with each --stack's fit, write a "
        "DynamoGraphDeployment YAML (frontend and the stack's workers with their server flags: parallel "
        "sizes, attention DP, running requests, CUDA-graph batch, chunked prefill, speculation, KV dtype, "
        "memory share) with the sglang.bench_serving command that measures it, and a .json sidecar of "
        "the prediction (tokens/s per GPU and per user, TTFT and TPOT medians, version, calibration, "
        "date).  Every flag comes from planner/serving/data/stack_flags.yaml.",
        epilog="examples:\n  moe-planner recipe --out recipes --at 20 50 100\n"
        "  moe-planner recipe --hardware hgx-h200 --stack sglang --at 50 --out recipes\n"
        "  moe-planner validate --frontiers result.csv --recipe recipes/NAME.json")
    add_scenario_options(p, ("model", "systems", "stack", "serving", "isl", "osl", "weights", "mtp",
                             "search"), changes={
        "systems": {"default": "gb200-nvl72", "help": "system"},
        "stack": {"nargs": "+", "metavar": "STACK",
                  "help": "serving stacks (trtllm, sglang, vllm; default: each that can run the point, the "
                          "others named with why not)"},
        "serving": {"choices": ("aggregated", "disaggregated"),
                    "help": "aggregated: one worker; disaggregated: prefill and decode workers"},
        "search": {"choices": ("rules", "recipes"),
                   "help": "the deployment search the point is read from: rules (default) or recipes"},
        "weights": {"help": "routed-expert storage (default: the frontier's best)"}})
    p.add_argument("--at", nargs="+", type=positive_float, required=True, metavar="X",
                   help="tokens/s per user of each point (the most tokens/s per GPU at least that fast)")
    p.add_argument("--checkpoint", default=None,
                   help="checkpoint id or path (default: the model's at its weights, stack_flags.yaml)")
    p.add_argument("--out", required=True, metavar="DIR", help="directory the recipes are written into")
    p.add_argument("--json", action="store_true", help="print the sidecars as JSON")
