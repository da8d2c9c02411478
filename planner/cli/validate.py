"""``moe-planner validate``, ``moe-planner calibrate`` and ``moe-planner sensitivity``."""

from __future__ import annotations

import argparse
import math
from typing import Any

from planner.cli.common import (
    add_command,
    check_output_args,
    json_safe,
    plain_number,
    print_json,
)
from planner.errors import SpecError


# ---- validate ---------------------------------------------------------------------------------
def _cmd_kernels(args: argparse.Namespace) -> int:
    from planner.outputs import table
    from planner.truth.kernels import TIMING_OUTLIER_FACTOR, score_kernels

    if args.runs is not None or args.points or args.out:
        raise SpecError("<input>", "--kernels", "alone (not with --runs, --points or --out)")
    score = score_kernels()
    s = score.summary()
    if args.json:
        print_json(json_safe(s))
        return 0
    print(f"# measured kernels ({s['rows']} rows, planner/truth/data/kernels/PROVENANCE.md) against the step "
          "model's operator laws; error = |predicted / measured - 1| in realistic mode (each stack's fit; "
          "GEMMs, grouped MoE, decode and prefill attention: the fitted laws where the spec carries them); "
          "bound viol. = "
          "kernels measured faster than bound mode (GEMMs: gemm_bound, operands in L2 need not come from "
          "HBM; MoE: moe_bound, the fewest experts any routing touches); L2 = kernels faster than the plain "
          "roofline at the peaks (MoE: under uniform routing)")
    rows = [[o["op"], o["gpu"], o["stack"], o["n"], _pct(o["median_abs_err"]), _pct(o["p90_abs_err"]),
             f"{o['bias']:.2f}", o["bound_violations"], o["hbm_roofline_faster"]] for o in s["ops"]]
    print(table(rows, ["op", "gpu", "stack", "n", "median", "p90", "bias", "bound viol.", "L2"]))
    print(f"# overall median |error| {s['overall_median_abs_err']:.0%}; {s['bound_violations']} kernels "
          f"faster than the bound; {s['hbm_roofline_faster']} faster than the plain roofline: GEMMs whose "
          "operands fit in L2 (the benchmark reruns each shape on the same buffers), MoE layers whose "
          "routing touches fewer experts than uniform routing")
    out = score.outliers
    if len(out):
        f = TIMING_OUTLIER_FACTOR
        print(f"# {len(out)} attention kernels not scored, timing outliers: more than {f:g}x slower than "
              f"the same kernel at the next larger context of its sweep, and than at the next smaller "
              f"(the work cannot shrink as the context grows); by op: "
              + ", ".join(f"{op} {n}" for op, n in out.groupby("op").size().items())
              + " (listed under timing_outliers in --json)")
    w = score.worst(8)
    print("\n# worst shapes (realistic / measured)")
    print(table([[r.op, r.gpu, r.stack, r.dtype, _shape(r), f"{r.latency_us:.4g}", f"{r.realistic_us:.4g}",
                  f"{r.ratio:.2f}"] for r in w.itertuples()],
                ["op", "gpu", "stack", "dtype", "shape", "measured us", "predicted us", "ratio"]))
    for op, g in score.worst_by_op(5).items():
        if op.startswith(("allreduce", "a2a")):
            continue
        print(f"\n# worst {op} shapes (realistic / measured)")
        print(table([[r.gpu, r.stack, r.dtype, _shape(r), f"{r.latency_us:.4g}", f"{r.realistic_us:.4g}",
                      f"{r.ratio:.2f}"] for r in g.itertuples()],
                    ["gpu", "stack", "dtype", "shape", "measured us", "predicted us", "ratio"]))
    v = score.rows[score.rows.bound_violation]
    if len(v):
        print("\n# faster than the bound (first 8)")
        print(table([[r.op, r.gpu, r.stack, r.dtype, _shape(r), f"{r.latency_us:.4g}", f"{r.bound_us:.4g}"]
                     for r in v.head(8).itertuples()],
                    ["op", "gpu", "stack", "dtype", "shape", "measured us", "bound us"]))
    return 0


def _shape(r: Any) -> str:
    if r.op == "gemm":
        return f"m {r.m:g} n {r.n:g} k {r.k:g}"
    if r.op == "moe":
        return (f"{r.tokens:g} tok, d {r.hidden:g} f {r.inter:g} top-{r.topk:g}/{r.experts:g}, TP {r.tp:g} "
                f"EP {r.ep:g}, {r.distribution}")
    if r.op.startswith("attention"):
        heads = f"h {r.heads:g}" + (f"/{r.kv_heads:g}x{r.head_dim:g}" if r.op == "attention_gqa" else "")
        heads += {"gqa_mmha": " on MMHA", "gqa_triton": " on Triton"}.get(getattr(r, "kind", ""), "")
        return (f"b {r.batch:g} S {r.isl + r.step:g} {heads}, KV {r.kv_dtype}"
                + (f", window {r.window:g}" if r.window else ""))
    return f"{r.num_gpus:g} GPUs, {r.bytes:g} B"


def cmd_validate(args: argparse.Namespace) -> int:
    from planner.cli.landscape import refuse_executor

    refuse_executor(args, args.runs is not None and bool(args.leave_out),
                    "--runs --leave-out with it (its refits are the cells)")
    if args.frontiers is not None:
        return _cmd_frontiers(args)
    if args.recipe:
        raise SpecError("<input>", "--recipe", "--frontiers with it (the result file it scores)")
    if args.kernels:
        return _cmd_kernels(args)
    if args.runs is not None:
        return _cmd_runs(args)
    if args.leave_out:
        raise SpecError("<input>", "--leave-out", "--runs with it (the measured runs it refits)")
    if args.out:
        raise SpecError("<input>", "--out", "only with --runs or --frontiers (per-row results)")
    from planner.truth.validate import format_scorecard, load_points, scorecard

    card = scorecard(load_points(args.points))
    if args.json:
        print_json(json_safe(card.to_dict()))
    else:
        print(format_scorecard(card))
    return 1 if card.violations or not card.closed_ok else 0


def _pct(v: float) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:.0%}"


BELOW_TEXT = "0.85x a measured point"


def _cmd_recipe(args: argparse.Namespace) -> int:
    """``validate --frontiers FILE --recipe SIDECAR``: the file's results of the recipe's deployment
    against the recipe's prediction."""
    from planner.outputs import table, write_atomic
    from planner.truth.frontiers import RECIPE_FIGURES, score_recipe

    check_output_args(args, files=["out"])
    import numpy as np

    with np.errstate(all="ignore"):
        sc = score_recipe(args.frontiers, args.recipe)
    if args.out:
        write_atomic(args.out, lambda tmp: sc.to_csv(tmp, index=False), "--out")
    s = sc.attrs["sidecar"]
    if args.json:
        print_json(json_safe({"recipe": args.recipe, "predicted": s["predicted"],
                              "rows": [{k: json_safe(v) for k, v in r.items()}
                                       for r in sc.to_dict("records")]}))
        return 0
    print(f"# recipe {args.recipe}: {s.get('model', '')} on {s['hardware']}, {s['stack']} "
          f"{s.get('stack_version', '')}, predicted by moe-planner {s.get('version', '')} on "
          f"{s.get('date', '')} "
          f"({s.get('calibration', '')}); {len(sc)} result row(s) of its deployment in {args.frontiers}")
    rows = [[r.date, *[x for p, _ in RECIPE_FIGURES for x in (getattr(r, f"{p}_measured"),
                                                              getattr(r, f"{p}_predicted"),
                                                              getattr(r, f"{p}_ratio"))]]
            for r in sc.itertuples()]
    print(table(rows, ["date", *[h for p in ("tok/s/GPU", "tok/s/user", "TTFT s", "TPOT s")
                                 for h in (f"{p} measured", "predicted", "ratio")]]))
    print("# ratio = measured / predicted; tokens/s per GPU: output tokens over every GPU")
    return 0


def _cmd_frontiers(args: argparse.Namespace) -> int:
    from planner.outputs import table, write_atomic
    from planner.truth.frontiers import per_row, score_frontiers

    if args.runs is not None or args.kernels or args.points:
        raise SpecError("<input>", "--frontiers", "alone (not with --runs, --kernels or --points)")
    if args.recipe:
        return _cmd_recipe(args)
    check_output_args(args, files=["out"])
    import numpy as np

    # a figure far out of range (scored out by a rule) must not print numpy's warnings as well
    with np.errstate(all="ignore"):
        score = score_frontiers(args.frontiers)
    if args.out:
        write_atomic(args.out, lambda tmp: per_row(score).to_csv(tmp, index=False), "--out")
    s = score.summary()
    if args.json:
        s["by_hardware"] = score.by("hardware")
        s["by_framework"] = score.by("framework")
        s["by_date"] = score.by_date()
        print_json(json_safe(s))
        return 0
    p, f = s["point"], s["frontier"]
    print(f"# measured frontier points: {score.source} ({s['points_total']} rows, "
          f"{s['points_scored']} scored; measurements: InferenceX, SemiAnalysis)")
    print("# point: each row predicted at its own deployment (layout, workers, concurrency, precision, "
          "speculation); frontier: each group's measured envelope against the frontier of "
          "its framework's launch recipes, at the measured tokens/s per user; error = |predicted / "
          "measured - 1|, bias = median predicted / measured; tokens/s per GPU = output tokens over "
          "every GPU")
    rows = []
    for key in ("hardware", "framework"):
        for r in score.by(key):
            rows.append([r[key], r["points"], _pct(r["tps_per_gpu_median_abs_err"]),
                         _pct(r["tpot_median_abs_err"]), _pct(r["ttft_median_abs_err"]),
                         r["frontier_points"], _pct(r["frontier_median_abs_err"]),
                         _pct(r["frontier_p90_abs_err"]), f"{r['frontier_bias']:.2f}"])
    rows.append(["all", s["points_scored"], _pct(p["tps_per_gpu_median_abs_err"]),
                 _pct(p["tpot_median_abs_err"]), _pct(p["ttft_median_abs_err"]), f["points_compared"],
                 _pct(f["median_abs_err"]), _pct(f["p90_abs_err"]), f"{f['bias']:.2f}"])
    print(table(rows, ["by", "points", "tok/s/GPU median", "TPOT median", "TTFT median", "envelope pts",
                       "frontier median", "frontier p90", "frontier bias"]))
    months = score.by_date()
    cells = sorted({(r["stack"], r["platform"]) for r in months})
    cols = sorted({r["month"] for r in months})
    at = {(r["stack"], r["platform"], r["month"]): r for r in months}
    print("# software by date: TPOT bias (median predicted / measured; above 1 the build ran faster than "
          "the fit predicts) and points, by stack and month of measurement")
    print(table([[f"{st} ({pl})", *[(f"{at[st, pl, m]['tpot_bias']:.2f} ({at[st, pl, m]['points']})"
                                     if (st, pl, m) in at else "-") for m in cols]] for st, pl in cells],
                ["stack", *cols]))
    q = s["p99"]
    print(f"# p99 of each benchmark burst ({q['points']} points with p99 columns; the first wave of 10 "
          f"requests per user queued, aggregated decode stalled by it): TTFT median error "
          f"{_pct(q['ttft_median_abs_err'])} (bias {q['ttft_bias']:.2f}), TPOT median error "
          f"{_pct(q['tpot_median_abs_err'])} (bias {q['tpot_bias']:.2f})")
    worst = sorted((g for g in f["groups"] if math.isfinite(g["worst_factor"])),
                   key=lambda g: -g["worst_factor"])[:5]
    print("\n# the five worst groups (largest predicted / measured factor on the envelope)")
    print(table([[g["hardware"], g["framework"], g["precision"], g["spec_decoding"],
                  f"{g['isl']:g}/{g['osl']:g}", g["compared"], f"{g['median_ratio']:.2f}",
                  f"{g['worst_factor']:.2f}"] for g in worst],
                ["system", "framework", "precision", "spec", "ISL/OSL", "points", "median ratio",
                 "worst factor"]))
    if "system" in s:
        sy, own = s["system"], s["own_point_envelope"]
        lv = "/".join(f"{u:g}" for u in sy["levels"])
        print(f"\n# system score: each system's default frontier (best of disaggregated and aggregated) "
              f"against the envelope of every point measured on it (any framework, precision, date), at "
              f"{lv} tokens/s per user; factor = exp(median |log(tool / measured)|)")
        rows = [[g["hardware"], f"{g['isl']:g}/{g['osl']:g}",
                 " ".join(f"{u}:{'-' if v is None else f'{v:.2f}'}" for u, v in g["ratios"].items()),
                 f"{g['median_factor']:.2f}"] for g in sy["groups"]]
        print(table(rows, ["system", "ISL/OSL", "tool / measured at each level ('-': not reached)",
                           "factor"]))
        print(f"# system score: {sy['cells']} cells, median factor {sy['median_factor']:.2f}x, p90 "
              f"{sy['p90_factor']:.2f}x, bias {sy['bias']:.2f}, below {BELOW_TEXT} {sy['below']}, "
              f"unreachable {sy['unreachable']}; the predictions at the measured deployments alone: "
              f"median factor {own['median_factor']:.2f}x, p90 {own['p90_factor']:.2f}x, bias "
              f"{own['bias']:.2f}")
    print("\n# rows not scored, by rule")
    print(table([[k, v] for k, v in s["unscored"].items()], ["rule", "rows"]))
    flags = ", ".join(f"{k} {v}" for k, v in s["flags"].items())
    print(f"# flags: {flags}; {f['points_beyond_reach']} envelope "
          f"points beyond the predicted frontier's reach; {s['bound_violations']} points above the bound "
          f"({s['bound_violations_flagged']} flagged)")
    if args.out:
        print(f"# wrote {args.out}")
    return 0


def _cmd_leave_out(args: argparse.Namespace) -> int:
    from planner.outputs import table
    from planner.truth.runs_fit import held_out

    if args.out:
        raise SpecError("<input>", "--out", "not with --leave-out (its figures are per held-out group)")
    from planner.cli.landscape import executor_of

    r = held_out(None if args.runs is True else args.runs, args.leave_out, executor=executor_of(args))
    if args.json:
        print_json(json_safe(r))
        return 0
    if args.leave_out == "system":
        print(f"# datasheet-only accuracy ({r['source']}): each system left out with ALL of its data (its "
              "runs, its kernel tables and every constant fitted from them), every cell refitted without "
              "it, its runs predicted from its datasheet with a family member's kernel laws")
    else:
        print(f"# each model left out ({r['source']}): every cell refitted without its runs, its runs "
              "predicted")
    rows = [[h["group"], h["rows"], _pct(h["tpot_median_abs_err"]), _pct(h["tpot_p90_abs_err"]),
             f"{h['bias']:.2f}", _pct(h["ttft_median_abs_err"]), h.get("kernel_laws_from", "-")]
            for h in r["held_out"]]
    print(table(rows, ["held out", "runs", "TPOT median", "TPOT p90", "bias", "TTFT median",
                       "kernel laws from"]))
    return 0


def _cmd_runs(args: argparse.Namespace) -> int:
    import numpy as np

    from planner.outputs import table, write_atomic
    from planner.truth.runs import UNRECORDED_RULES, score_runs

    if args.points:
        raise SpecError("<input>", "--points", "not with --runs (published points and measured runs are "
                        "separate scorecards)")
    if args.leave_out:
        return _cmd_leave_out(args)
    check_output_args(args, files=["out"])
    with np.errstate(all="ignore"):  # (as for --frontiers: rules, not warnings, say what is off)
        score = score_runs(None if args.runs is True else args.runs)
    if args.out:
        write_atomic(args.out, lambda tmp: score.per_row().to_csv(tmp, index=False), "--out")
    s = score.summary()
    if args.json:
        print_json(json_safe(s))
        return 0
    print(f"# measured runs: {score.source} ({s['rows_total']} rows, {s['rows_scored']} scored)")
    print("# TPOT predicted at each run's own layout; error = |predicted / measured - 1| in realistic mode; "
          "bias = median predicted / measured (>1: predicted slower); bound/meas = median bound-mode "
          "TPOT / measured (must stay <= 1)")
    rows = [[g["system"], g["model"], g["stack"], g["serving"], g["n"], _pct(g["tpot_median_abs_err"]),
             _pct(g["tpot_p90_abs_err"]), f"{g['tpot_bias']:.2f}", f"{g['bound_tpot_median_ratio']:.2f}",
             _pct(g["ttft_median_abs_err"]), g["bound_violations"]] for g in s["groups"]]
    print(table(rows, ["system", "model", "stack", "serving", "n", "median", "p90", "bias", "bound/meas",
                       "TTFT median", "bound viol."]))
    print()
    rows = [[r["system"], r["n"], _pct(r["tpot_median_abs_err"]), _pct(r["tpot_p90_abs_err"]),
             f"{r['tpot_bias']:.2f}", _pct(r["ttft_median_abs_err"])] for r in score.by_system()]
    rows.append(["all", s["rows_scored"], _pct(s["tpot_median_abs_err"]), _pct(s["tpot_p90_abs_err"]),
                 f"{s['tpot_bias']:.2f}", _pct(s["ttft_median_abs_err"])])
    print(table(rows, ["system", "n", "TPOT median", "p90", "bias", "TTFT median"]))
    print("\n# software by build: each stack's builds the fit spans (bias above 1: the build ran faster "
          "than the fit predicts)")
    rows = [[r["stack"], r["build"], r["n"], _pct(r["tpot_median_abs_err"]), f"{r['tpot_bias']:.2f}"]
            for r in s["by_build"]]
    print(table(rows, ["stack", "build", "n", "TPOT median", "bias"]))
    print()
    print("# rows not scored, by reason")
    print(table([[k, v] for k, v in s["rows_unmapped_by_reason"].items()], ["reason", "rows"]))
    v = score.violations()
    print(f"\n# {s['bound_violations']} rows measured faster than the no-speculation bound "
          f"({s['bound_violations_flagged']} also flagged by another rule: a 1.3x faster twin, "
          "queueing, decode workers or concurrency not recorded; unflagged rows first)")
    if len(v):
        flag = np.where(v.twin_faster, "twin",
                        np.where(v.rule.isin(UNRECORDED_RULES), v.rule, ""))
        v = v.assign(flag=flag).sort_values("flag", kind="mergesort")
        print(table([[r.id, r.hardware, r.backend, r.mode, f"{r.silicon_tpot_ms:.3g}",
                      f"{r.tpot_bound_ms:.3g}", r.flag]
                     for r in v.itertuples()][:40],
                    ["id", "system", "stack", "mode", "TPOT ms", "bound ms", "flag"]))
        if len(v) > 40:
            print(f"... {len(v) - 40} more (--out FILE lists every row)")
    if args.out:
        print(f"# wrote {args.out}")
    return 0


# ---- calibrate --------------------------------------------------------------------------------
def _fmt_param(unit: str, v: float) -> str:
    return f"{v * 1e6:.3g} us" if unit == "s" else f"{v:.3g}"


def _cmd_calibrate_runs(args: argparse.Namespace) -> int:
    from planner.outputs import table, write_atomic
    from planner.truth.runs_fit import PARAMETERS, TTFT_LOSS_SCALE, TTFT_PARAMETERS, fit_runs, write_fit

    if args.write and args.runs is not True:
        raise SpecError("<input>", "--write", "only with the bundled runs (use --out FILE to keep a fit "
                        "of your own runs)")
    check_output_args(args, files=["out"])
    fit = fit_runs(None if args.runs is True else args.runs, leave_out=not args.no_loo)
    if args.out:
        import json

        write_atomic(args.out, json.dumps(json_safe(fit.to_dict()), indent=1) + "\n", "--out")
    written = write_fit(fit) if args.write else []
    if args.json:
        print_json(json_safe({**fit.to_dict(), "written": written}))
        return 0
    n = sum(c.n for c in fit.cells)
    print(f"# realistic-mode parameters fitted to {n} scored measured runs ({fit.source}), per GPU "
          "family and serving stack")
    print("# residual: log(predicted / measured) decode TPOT at each run's own layout and batch; "
          "se = relative standard error (s^2 (J^T J)^-1 in log space; runs of one configuration are "
          "not independent, so a lower bound)")
    def params(c: Any) -> list[str]:  # each parameter with its relative SE, or held
        return [f"{_fmt_param(p.unit, c.values[p.name])} ±{c.rel_se[p.name]:.0%}" if p.name in c.fitted
                else f"{_fmt_param(p.unit, c.values[p.name])} (held)" for p in PARAMETERS]

    rows = []
    for c in fit.cells:
        rows.append([c.family, c.stack, c.n, *params(c), _pct(c.before["tpot_median_abs_err"]),
                     _pct(c.after["tpot_median_abs_err"]), _pct(c.after["tpot_p90_abs_err"]),
                     f"{c.after['tpot_bias']:.2f}"])
    print(table(rows, ["family", "stack", "runs", *[p.name for p in PARAMETERS], "median before",
                       "median after", "p90 after", "bias after"]))
    for c in fit.cells:
        for name, why in c.fixed.items():
            print(f"# {c.family}/{c.stack}: {name} {why}")
    if fit.families:
        print("\n# each family's stacks fitted together (one set of parameters for all its runs): "
              "where a cell's own runs do not pin a parameter, the cell holds this value")
        frows = [[c.family, c.n, *params(c), _pct(c.after["tpot_median_abs_err"])] for c in fit.families]
        print(table(frows, ["family", "runs", *[p.name for p in PARAMETERS], "median"]))
        for c in fit.families:
            for name, why in c.fixed.items():
                print(f"# {c.family}, all stacks: {name} {why}")
    print("\n# TTFT: t_req + tau_h x the pass's kernels + prefill pass + q_w x wave (the prompts that arrive "
          "together at one prefill instance), fitted after TPOT to log(predicted / measured) TTFT with a "
          f"robust (Cauchy, scale {TTFT_LOSS_SCALE:g}) loss; before = the pass alone")
    trows = []
    for c in fit.cells:
        t = c.ttft
        if t is None:
            continue
        cells = []
        for p in TTFT_PARAMETERS:
            v = t.values[p.name]
            txt = p.shown(v, 3)
            cells.append(f"{txt} ±{t.rel_se[p.name]:.0%}" if p.name in t.fitted else f"{txt} (held)")
        trows.append([c.family, c.stack, t.n, *cells, _pct(t.before["ttft_median_abs_err"]),
                      _pct(t.after["ttft_median_abs_err"]), _pct(t.after["ttft_p90_abs_err"]),
                      f"{t.after['ttft_bias']:.2f}"])
    print(table(trows, ["family", "stack", "runs", "t_req", "q_w", "tau_h", "median before", "median after",
                        "p90 after", "bias after"]))
    from planner.truth.runs_fit import HELD

    print(f"# not fitted, spec values: {', '.join(HELD)}")
    print()
    for c in fit.cells:
        if len(c.fitted) > 1:
            print(f"# correlation of the fitted log-parameters, {c.family}/{c.stack}")
            print(table([[a, *[f"{x:+.2f}" for x in row]] for a, row in zip(c.fitted, c.corr, strict=True)],
                        ["", *c.fitted]))
    for title, d in (("leave one system out (refit every cell without it, predict its runs)", fit.loso),
                     ("leave one model out", fit.lomo)):
        if d:
            print(f"\n# {title}")
            print(table([[k, v["n"], _pct(v["median_abs_err"]),
                          f"{v['bias']:.2f}" if math.isfinite(v["bias"]) else "-",
                          _pct(v.get("ttft_median_abs_err", math.nan))] for k, v in d.items()],
                        ["held out", "runs", "TPOT median |err|", "bias", "TTFT median |err|"]))
    if written:
        print(f"\n# wrote the stacks: block of {len(written)} hardware specs: {', '.join(written)}")
    elif not args.json:
        print("\n# nothing written (--write puts the fit into the bundled hardware specs' stacks: block)")
    return 0


def _large(f: Any, key: str) -> str:
    """The in-switch fraction of an all-reduce fit, or where no row pins it, that it is eta_ar."""
    return f"{f.values[key]:.3g}{_se_shown(f.rel_se[key])}" if key in f.values else "= eta_ar"


def _se_shown(se: float) -> str:
    """A fitted kernel constant's relative standard error as printed: ``±12%``, ``(bound)`` at a
    bound of its range, ``(not pinned)`` where no kernel's time depends on it."""
    if not math.isfinite(se):
        return " (bound)"
    return f" ±{se:.0%}" if se > 1e-6 else " (not pinned)"


def _cmd_calibrate_kernels(args: argparse.Namespace) -> int:
    from planner.outputs import table
    from planner.truth.kernels import (
        ALLREDUCE_PARAMS,
        CONSTANT_UNITS,
        borrowed_a2a,
        fit_a2a,
        fit_allreduce,
        fit_attention,
        fit_gemm,
        fit_moe,
        fit_nccl,
        write_allreduce,
    )

    if args.runs or args.out:
        raise SpecError("<input>", "--kernels", "not with --runs or --out")
    nccl = fit_nccl()
    ar, a2a = fit_allreduce(nccl), fit_a2a()  # the stacks' rows beyond their reach at NCCL's new law
    a2a += borrowed_a2a(a2a)
    fits = {"allreduce": ar, "nccl": nccl, "a2a": a2a}
    gemm = fit_gemm()
    moe, attn = fit_moe(), fit_attention()
    # the all-to-all law goes in whole: the step model prices a phase with its floors where
    # attention is data-parallel (equations.a2a_floor), with the link's latency elsewhere
    written = write_allreduce(ar + nccl + a2a + gemm + moe + attn) if args.write else []
    if args.json:
        print_json(json_safe({**{k: [f.__dict__ for f in v] for k, v in
                              {**fits, "gemm": gemm, "moe": moe, "attention": attn}.items()},
                            "written": written}))
        return 0
    print("# communication laws fitted to measured kernels per GPU and stack; se = relative standard error")
    lat, eff, large = ALLREDUCE_PARAMS
    print("\n# allreduce (CUDA-graph custom all-reduce; moe-planner equations --term op.allreduce): "
          "latency per pass a_ar and NVLink fraction eta_ar of the one-shot and two-shot kernel, "
          "in-switch fraction eta_nv beyond its 8 MiB; groups larger than the stack's kernel spans "
          "(N_ar: SGLang one host, vLLM 8 GPUs; over PCIe vLLM and SGLang 2, TensorRT-LLM none) priced "
          "by NCCL's law below (a stack none of whose rows its kernel spans: not pinned)")
    print(table([[f.gpu, f.stack, f.n, f"{f.values[lat] * 1e6:.3g} us{_se_shown(f.rel_se[lat])}",
                  f"{f.values[eff]:.3g}{_se_shown(f.rel_se[eff])}", _large(f, large),
                  _pct(f.median_abs_err), _pct(f.p90_abs_err)] for f in ar],
                ["gpu", "stack", "kernels", "a_ar", "eta_ar", "eta_nv", "median |err|", "p90"]))
    print("\n# nccl all-reduce, per system (a library's, not a stack's: the kernel scorecard's NCCL rows): "
          "t_n0 + min over NCCL's protocols of 2 (n - 1) a_p + r_p 2 (n - 1)/n x / (eta_nc B_su), LL (a_nl, "
          "r = 2), LL128 (a_nm, r = 16/15), Simple (a_nc, r = 1) (moe-planner equations --term "
          "op.allreduce_nccl): a ring, as measured (latency grows with the GPU count); over PCIe a ring "
          "beyond one switch's n_sw GPUs at max(1 / B_su, (1 / n_sw) / (eta_hb B_hb)) per byte")
    print(table([[f.gpu, f.n]
                 + [f"{f.values[p] * 1e6:.3g} us{_se_shown(f.rel_se[p])}"
                    for p in ("floor", "latency_ll", "latency_ll128", "latency")]
                 + [f"{f.values[p]:.3g}{_se_shown(f.rel_se[p])}" if p in f.values else "-"
                    for p in ("efficiency", "bridge")]
                 + [_pct(f.median_abs_err), _pct(f.p90_abs_err)] for f in nccl],
                ["gpu", "kernels", "t_n0", "a_nl", "a_nm", "a_nc", "eta_nc", "eta_hb", "median |err|",
                 "p90"]))
    print("\n# a2a (low-latency dispatch and combine): t = floor[phase, dtype] + V / (eta_a2a B_su) "
          "(moe-planner equations --term op.a2a, the floor as a_phase); eta_a2a fitted once per stack "
          "over the systems with the same links; the step model takes both (a_disp, a_comb) where "
          "attention is data-parallel")
    print(table([[f.gpu, f.stack, f.n, f"{f.values['efficiency']:.3g}{_se_shown(f.rel_se['efficiency'])}",
                  ", ".join(f"{k} {v * 1e6:.0f} us" for k, v in f.values.items() if k != "efficiency") or "-",
                  _pct(f.median_abs_err), _pct(f.p90_abs_err), f.source or "-"] for f in a2a],
                ["gpu", "stack", "kernels", "eta_a2a", "floors", "median |err|", "p90", "note"]))
    print("\n# gemm law: max(F_pad / (eta_g P), M / (eta_gm B_hbm)) + m k b_q / (eta_q B_hbm) + t_g0 "
          "(moe-planner equations --term op.gemm_law), per dtype")
    print(table([[f.gpu, f.stack, f.dtype, f.n] + [
        "-" if p not in f.values else
        (f"{f.values[p] * 1e6:.3g} us" if p == "floor" else f"{f.values[p]:.3g}")
        + _se_shown(f.rel_se[p])
        for p in ("compute", "hbm", "cast", "floor")] + [_pct(f.median_abs_err), _pct(f.p90_abs_err)]
        for f in gemm], ["gpu", "stack", "dtype", "kernels", "eta_g", "eta_gm", "eta_q", "t_g0",
                         "median |err|", "p90"]))
    def _v(f: Any, p: str) -> str:
        if p not in f.values:
            return "-"
        scale, unit = CONSTANT_UNITS.get(p, (1.0, ""))
        v = f"{f.values[p] * scale:{'.0f' if unit == 'tokens' else '.3g'}}" + (f" {unit}" if unit else "")
        return v + _se_shown(f.rel_se[p])

    print("\n# grouped MoE law: max(2*3 d f_e max(T_er, n_er t_m) / TP_e / (eta_e P_e), "
          "n_er 3 d f_e b_we / TP_e / (eta_em B_hbm)) + T_ea (2 d + 4 f_e / TP_e) 2 B / (eta_ea B_hbm) "
          "+ T_moe 2 d 2 B / (eta_et B_hbm) + n_ez (2 f_e / TP_e + d) t_z / N_sm + t_e0 (moe-planner "
          "equations --term op.moe_law), per weight dtype (a _triton suffix: SGLang's Triton path on "
          "Blackwell, fitted apart); T_er rows and n_er experts on the measured rank under the table's own "
          "routing (balanced, power law), T_ea the slots its activation passes carry (all T_moe k on "
          "SGLang's masked Triton path at EP > 1), n_ez the remote experts that path launches zero-writing "
          "blocks for, T_moe the tokens entering it; eta_em 'few' on the Triton kernel's few-token default "
          "config (T_moe <= experts on the rank, not block-FP8)")
    print(table([[f.gpu, f.stack, f.dtype, f.n]
                 + [_v(f, p) for p in ("compute", "hbm", "few", "act", "token", "mask", "floor")]
                 + [_pct(f.median_abs_err), _pct(f.p90_abs_err)] for f in moe],
                ["gpu", "stack", "dtype", "kernels", "eta_e", "eta_em", "eta_em few", "eta_ea", "eta_et",
                 "t_z", "t_e0", "median |err|", "p90"]))
    print("\n# decode attention laws: MLA max((F + F_row) / (eta_a P_c), (M_kv + M_row) (1 + phi_rp (n_ht - "
          "1)) / (eta_am B_hbm)) + n_sub b (n_hc t_c + h (r_kv + d_r) t_q) / N_sm + t_a0, each sequence's "
          "query rows S_a0 context tokens' worth; where trtllm-gen's dispatch is modelled (Blackwell "
          "TensorRT-LLM, SGLang) n_ht CTAs streaming each sequence's KV (head tiles x value slices), "
          "n_sub KV splits of n_hc CTAs, each costing t_c and t_q per query-head element (else 1, 1, "
          "no t_c, t_q) "
          "(moe-planner equations --term op.attn_mla_law); GQA max(F / (eta_a P_c), M_kv / (eta_am "
          "B_hbm), b h_kv t_r, M_kv / (b h_kv n_sub beta_c)) + n_sub (b h_kv t_c + b h d_head t_q) / "
          "N_sm + t_a0, t_r per sequence and KV head, n_sub split-KV CTAs per block where the "
          "dispatcher is modelled (TensorRT-LLM, SGLang and vLLM on Hopper; else 1, no beta_c, t_c, t_q) "
          "(op.attn_gqa_law; per query head on TensorRT-LLM's MMHA fallback, "
          "op.attn_gqa_mmha_law); per KV dtype; scored against kernels only")
    dec = [f for f in attn if not f.law.endswith("_prefill")]
    print(table([[f.law, f.gpu, f.stack, f.dtype, f.n]
                 + [_v(f, p) for p in ("compute", "hbm", "offset", "repeat", "row", "stream", "cta", "query",
                                       "floor")]
                 + [_pct(f.median_abs_err), _pct(f.p90_abs_err)] for f in dec],
                ["law", "gpu", "stack", "KV", "kernels", "eta_a", "eta_am", "S_a0", "phi_rp", "t_r", "beta_c",
                 "t_c", "t_q", "t_a0", "median |err|", "p90"]))
    print("\n# prefill attention laws: (F + F_row) / (eta_fa P_c) + N_exp / X_sm + kappa_lc N_sm (F_lc / "
          "(eta_fa P_c) + N_exp_lc / X_sm) + t_a0, F_row = S_a0 context tokens' worth per query row, N_exp "
          "one softmax exponential per score (GQA only), F_lc and N_exp_lc the longest CTA's (t_qt = 128 "
          "query rows of one head attending the whole prompt), P_c "
          "the BF16 peak (FP8 over an FP8 cache) (moe-planner equations --term op.attn_gqa_prefill_law); "
          "the step model's prefill pass takes eta_fa, S_a0, X_sm and kappa_lc, per KV dtype")
    pre = [f for f in attn if f.law.endswith("_prefill")]
    print(table([[f.law, f.gpu, f.stack, f.dtype, f.n]
                 + [_v(f, p) for p in ("compute", "offset", "softmax", "tail", "floor")]
                 + [_pct(f.median_abs_err), _pct(f.p90_abs_err)] for f in pre],
                ["law", "gpu", "stack", "KV", "kernels", "eta_fa", "S_a0", "X_sm", "kappa_lc", "t_a0",
                 "median |err|", "p90"]))
    if written:
        print(f"# wrote the all-reduce (stacks' and NCCL's), all-to-all, GEMM, grouped-MoE and attention "
              f"laws into the stacks: and collectives: entries of {len(written)} hardware specs: "
              f"{', '.join(written)} (the step model takes the all-to-all law's bandwidth fraction, not "
              "its floors: see docs/accuracy.md)")
    else:
        print("# nothing written (--write puts the all-reduce, all-to-all, GEMM, grouped-MoE and attention "
              "laws into the bundled specs' stacks: entries, NCCL's into their collectives: block)")
    return 0


def _check_source_checkout() -> None:
    """``--write`` rewrites the bundled hardware specs in the repository (development time): never
    an installed package's files, which an upgrade replaces and other users share."""
    from planner.specs.registry import source_checkout

    if source_checkout() is None:
        raise SpecError("<input>", "--write", "a source checkout of moe-planner (an editable install or "
                        "python -m planner in the repository): it rewrites the bundled specs there, never "
                        "an installed package's files; use --json or --out FILE to keep a fit")


def cmd_calibrate(args: argparse.Namespace) -> int:
    from planner.outputs import table
    from planner.truth.calibrate import EFFICIENCY_FIELDS, EXCLUDED, FAMILIES, fit, write

    if args.write:
        _check_source_checkout()
    if args.kernels:
        return _cmd_calibrate_kernels(args)
    if args.runs:
        return _cmd_calibrate_runs(args)
    if args.out:
        raise SpecError("<input>", "--out", "only with --runs")

    result = fit(loo=not args.no_loo)
    written = write(result) if args.write else []
    if args.json:
        print_json(json_safe({**result.to_dict(), "written": written}))
        return 0
    print(f"# calibration of the realistic-mode efficiencies on {len(result.train_ids)} published points")
    print("# residual: log(predicted / measured) per-user rate at each point's own batch (step time); "
          "parameters in log space")
    rows = []
    for p in result.parameters:
        cons = ", ".join(f"{k} ({v:+.2f})" for k, v in sorted(result.constrained_by[p.name].items(),
                                                               key=lambda kv: -abs(kv[1])))
        rows.append([p.name, "+".join(p.families), "/".join(p.fields),
                     _fmt_param(p.unit, result.prior[p.name]), _fmt_param(p.unit, result.values[p.name]),
                     f"x/ {math.exp(result.log_sd[p.name]):.2f}", "yes" if result.at_bound[p.name] else "no",
                     cons or "(none)"])
    print(table(rows, ["parameter", "families", "sets", "prior", "fitted", "1-sigma", "at bound",
                       "constrained by (elasticity of the point's prediction)"]))
    fixed = []
    for f in EFFICIENCY_FIELDS:
        fams = [fam for fam in FAMILIES
                if not any(fam in p.families and f in p.fields for p in result.parameters)]
        if fams:
            fixed.append(f if len(fams) == len(FAMILIES) else f"{f} ({', '.join(fams)})")
    print(f"# fixed at their assumed values: {', '.join(fixed)}, link latencies")
    print()
    rows = []
    for pid in result.train_ids:
        b, a = result.residual_before[pid], result.residual_after[pid]
        loo = result.loo.get(pid, {})
        rows.append([pid, math.exp(b), math.exp(a), f"{abs(math.exp(a) - 1):.0%}",
                     math.exp(loo["residual_log"]) if loo else None,
                     f"{loo['abs_error']:.0%}" if loo else "-",
                     f"{loo['scorecard_abs_error']:.0%}" if loo else "-"])
    print(table(rows, ["training point", "pred/meas prior", "pred/meas fit", "error", "pred/meas LOO",
                       "LOO error", "LOO scorecard err."]))
    for pid, why in EXCLUDED.items():
        print(f"# not trained on: {pid}: {why}")
    print()
    print(f"# training median |pred/meas - 1|: {result.train_error_before:.0%} at the prior -> "
          f"{result.train_error_after:.0%} fitted (rms log {result.train_rms_log_before:.3f} -> "
          f"{result.train_rms_log_after:.3f}; specs as they are now: {result.train_error_current:.0%})")
    if result.loo:
        print(f"# leave-one-out median |pred/meas - 1|: {result.loo_error:.0%} (step time at the point's "
              f"batch); {result.loo_scorecard_error:.0%} on the scorecard's quantity")
    if result.scorecard_after:
        import numpy as np

        print(f"# scorecard realistic median error, all measured points: "
              f"{np.median(list(result.scorecard_before.values())):.0%} at the prior -> "
              f"{np.median(list(result.scorecard_after.values())):.0%} fitted")
    if written:
        print(f"# wrote {len(written)} hardware specs: {', '.join(written)}")
    else:
        print("# nothing written (use --write to put the fit into the hardware specs)")
    return 0


# ---- sensitivity ------------------------------------------------------------------------------
def _what_if_arg(text: str) -> tuple[str, float]:
    from planner.truth.sensitivity import ALL_RESOURCES

    name, sep, val = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected PARAM=FACTOR (e.g. su_bandwidth=2), got {text!r}")
    if name not in ALL_RESOURCES:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(ALL_RESOURCES)}, got {name!r}")
    plain_number(val)
    try:
        f = float(val)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number after '=', got {val!r}") from None
    if not math.isfinite(f) or f <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive factor, got {val!r}")
    return name, f


def cmd_sensitivity(args: argparse.Namespace) -> int:
    from planner.cli.options import scenario_from_args
    from planner.outputs import table
    from planner.truth.sensitivity import elasticities, what_if

    sc = scenario_from_args(args)
    if sc.serving == "prefill":
        raise SpecError("<input>", "--serving", "decode, aggregated or disaggregated (sensitivities are "
                        "taken at a per-user rate)")
    if args.what_if:
        param, factor = args.what_if
        w = what_if(sc, factor=factor, param=param, at=args.at)
        if args.json:
            print_json(json_safe(w))
            return 0
        print(f"# what if: {w['label']} x{factor:g} on {w['hardware']}, {w['model']} at {args.at:g} "
              f"tokens/s/user ({args.serving}, {args.mode} mode)")
        rows = [["as is", w["tps_per_gpu"], 1.0, w["bottleneck"], _cfg(w["config"])],
                [f"{param} x{factor:g}", w["tps_per_gpu_new"], w["gain"], w["bottleneck_new"],
                 _cfg(w["config_new"])]]
        print(table(rows, ["system", "tok/s/GPU", "gain", "binds", "configuration"]))
        return 0
    e = elasticities(sc, at_tps_user=args.at, symbolic=not args.no_symbolic)
    if args.json:
        print_json(json_safe({"scenario": sc.to_dict(), "settings": {k: v for k, v in e.attrs.items()},
                           "elasticities": e.to_dict("records")}))
        return 0
    a = e.attrs
    print(f"# sensitivities: {a['model']} on {a['hardware']} at {a['at_tps_per_user']:g} tokens/s/user "
          f"({a['serving']}, {a['mode']} mode); elasticity = d ln(tokens/s per GPU) / d ln(resource)")
    print(f"# nominal: {_cfg(a['config'])}, {a['config'].get('tps_per_gpu', float('nan')):,.0f} tok/s/GPU")
    rows = [[r.label, r.value, r.tps_per_gpu_minus, r.tps_per_gpu_plus, r.elasticity, r.symbolic,
             r.step_elasticity, r.bottleneck_plus] for r in e.itertuples()]
    print(table(rows, ["resource", "value (SI)", f"tok/s/GPU -{a['step']:.0%}", f"+{a['step']:.0%}",
                       "elasticity", "symbolic", "d ln t/d ln p", "binds at +"]))
    print("# elasticity: central difference of the frontier (configuration re-optimised); symbolic: sympy "
          "d/dp of the decode step time at the nominal configuration, per-user rate held (batch re-solved"
          + (", batch at the memory limit" if a.get("memory_capped") else "") + ")")
    return 0


def _cfg(c: dict[str, Any]) -> str:
    if not c:
        return "-"
    parts = [f"{c.get('gpus')} GPUs", f"TPa {c.get('tp_attn')}", f"EP {c.get('ep')}",
             f"TPe {c.get('tp_moe')}"]
    if c.get("batch_per_gpu") is not None and not (isinstance(c["batch_per_gpu"], float)
                                                   and not math.isfinite(c["batch_per_gpu"])):
        parts.append(f"{c['batch_per_gpu']:.3g} seq/GPU")
    parts.append(f"{c.get('weights')}")
    if c.get("mtp"):
        parts.append(f"MTP {c['mtp']}")
    return ", ".join(str(p) for p in parts)


def register(sub: Any) -> None:
    v = add_command(
        sub, "validate", cmd_validate,
        help="scorecard: predictions vs published measurements (exit 1 on a bound violation)",
        description="Predict every published point (planner/truth/data/points.yaml) at its own operating "
        "conditions in bound mode (datasheet peaks: must not be beaten by any measurement) and realistic "
        "mode (the specs' efficiencies), and reproduce the closed-form points.  Exit status 1 if a "
        "measurement exceeds its bound or a closed-form point does not reproduce.",
        epilog="examples:\n  moe-planner validate\n  moe-planner validate --json\n"
        "  moe-planner validate --runs                  # the 4,407 bundled measured runs\n"
        "  moe-planner validate --runs my_runs.csv --json --out rows.csv\n"
        "  moe-planner validate --frontiers measured_frontiers.csv --json\n\n"
        "--frontiers scores measured benchmark points (InferenceX columns: system, framework, precision,\n"
        "speculation, ISL/OSL, layout, concurrency, tokens/s per user and per GPU, TTFT, TPOT) point by\n"
        "point at each row's own deployment, and as envelopes against the as-deployed frontier.\n\n"
        "--runs scores measured serving runs (TTFT and TPOT at a stated layout) at each run's exact\n"
        "layout, in bound and realistic mode; FILE is any CSV with the columns of\n"
        "planner/truth/data/measured_runs.csv (see measured_runs.md there).  Errors are fractions\n"
        "(0.12 = 12%); tpot_bias is the median predicted / measured TPOT.  With --runs the exit\n"
        "status is 0 unless the input is bad: runs faster than the bound are listed (speculative\n"
        "decoding is suspected; the file does not record it), not treated as failures.")
    v.add_argument("--json", action="store_true", help="print the scorecard as JSON")
    v.add_argument("--kernels", action="store_true",
                   help="score measured kernel latencies (GEMM, all-reduce, all-to-all, grouped MoE, decode "
                        "attention; planner/truth/data/kernels) against the step model's operator laws "
                        "instead")
    v.add_argument("--runs", nargs="?", const=True, default=None, metavar="FILE",
                   help="score measured serving runs instead of the published points (default FILE: "
                        "the bundled runs)")
    v.add_argument("--leave-out", choices=("system", "model"), default=None,
                   help="with --runs: refit without each system (datasheet-only: its runs, kernel tables "
                        "and every constant fitted from them removed) or each model, and score it (minutes)")
    from planner.cli.landscape import add_executor_options

    add_executor_options(v)
    v.add_argument("--frontiers", metavar="FILE", default=None,
                   help="score measured frontier points (a CSV in InferenceX's columns) instead")
    v.add_argument("--recipe", metavar="SIDECAR", default=None,
                   help="with --frontiers: score the file's results of this recipe's deployment (the .json "
                        "sidecar of moe-planner recipe) against its prediction")
    v.add_argument("--out", metavar="CSV", default=None,
                   help="with --runs or --frontiers: write one row per input row (predictions, ratios, "
                        "flags, status)")
    v.add_argument("--points", metavar="FILE", default=None,
                   help="a points YAML in the same format (default: the bundled points)")

    c = add_command(
        sub, "calibrate", cmd_calibrate,
        help="fit the realistic-mode efficiencies to the published points (leave-one-out error)",
        description="Least-squares fit of the realistic-mode efficiencies (compute, HBM, network "
        "fractions, per-operator overhead; shared across hardware families where the physics is the "
        "same) to the declared training points, with per-parameter uncertainty, which points constrain "
        "each parameter, and the leave-one-out error.  --write puts the values into the bundled "
        "hardware specs (kind: fitted) with a calibration: block.",
        epilog="examples:\n  moe-planner calibrate\n  moe-planner calibrate --write\n"
        "  moe-planner calibrate --runs --no-loo\n  moe-planner calibrate --kernels --write\n"
        "  moe-planner calibrate --runs --write")
    c.add_argument("--kernels", action="store_true",
                   help="fit the all-reduce, all-to-all, GEMM, grouped-MoE and attention laws to the "
                        "measured kernels instead, per GPU and stack")
    c.add_argument("--runs", nargs="?", const=True, default=None, metavar="FILE",
                   help="fit to measured runs instead (default FILE: the bundled runs), per GPU family and "
                        "serving stack, with leave-one-system-out and leave-one-model-out errors (minutes)")
    c.add_argument("--write", action="store_true",
                   help="write the fitted values into hardware_specs/*.yaml (with --runs: their "
                        "stacks: block)")
    c.add_argument("--out", metavar="JSON", default=None, help="with --runs: write the fit as JSON")
    c.add_argument("--json", action="store_true", help="print the fit as JSON")
    c.add_argument("--no-loo", action="store_true", help="skip the leave-one-out refits")

    from planner.cli.common import positive_float
    from planner.cli.frontier import RATE_SERVING, SENSITIVITY_FIELDS, scenario_parent

    s = add_command(
        sub, "sensitivity", cmd_sensitivity, parents=[scenario_parent(
            SENSITIVITY_FIELDS, serving={"choices": RATE_SERVING}, model={"required": True},
            systems={"required": True, "help": "bundled system name or path (NAME@STACK picks a stack's "
                                               "fit)"})],
        help="elasticity of tokens/s per GPU to each hardware resource at a per-user rate; what-ifs",
        description="d ln(tokens/s per GPU) / d ln(resource) at a fixed tokens/s per user for HBM "
        "bandwidth, NVLink bandwidth, NIC bandwidth, FLOP/s and HBM capacity: by central differences "
        "(+-5%) of the frontier, and symbolically (sympy) at the chosen configuration.  --what-if "
        "PARAM=FACTOR instead answers one counterfactual.",
        epilog="examples:\n  moe-planner sensitivity --model kimi-k2-thinking --hardware hgx-h200 --at 50\n"
        "  moe-planner sensitivity --model kimi-k2-thinking --hardware hgx-h200 --at 50 "
        "--what-if su_bandwidth=2")
    s.add_argument("--at", type=positive_float, default=50.0, help="tokens/s per user (default 50)")
    s.add_argument("--what-if", type=_what_if_arg, default=None, metavar="PARAM=FACTOR",
                   help="scale one resource (hbm_bandwidth, su_bandwidth, so_bandwidth, flops, "
                        "hbm_capacity, su_latency, so_latency, host_bandwidth, host_capacity)")
    s.add_argument("--no-symbolic", action="store_true", help="skip the sympy column")
    s.add_argument("--json", action="store_true", help="print JSON")
