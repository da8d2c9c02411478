"""``moe-planner frontier`` and ``moe-planner compare`` (the main job)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from planner.cli.common import (
    add_command,
    check_output_args,
    json_safe,
    positive_float,
    positive_int,
    print_json,
    savefig_to,
    spans_text,
)
from planner.cli.options import add_scenario_options, scenario_from_args
from planner.errors import SpecError
from planner.outputs import fmt, table, write_outputs

if TYPE_CHECKING:
    import pandas as pd

CONFIG_COLUMNS = (
    "gpus", "tp_attn", "dp_attn", "ep", "tp_moe", "expert_slots", "batch", "batch_per_gpu",
    "weights", "attention", "kv", "mtp", "overlap", "kv_offload", "step_s", "decode_tps_per_gpu",
    "output_tps_per_gpu", "total_tps_per_gpu", "decode_gpu_fraction", "prefill_gpus",
    "prefill_tp_attn", "prefill_ep", "prefill_tp_moe", "prefill_batch", "prefill_weights",
    "prefill_overlap", "prefill_tps_per_gpu", "prefill_pass_s", "ttft_s", "kv_transfer_s",
    "ttft_request_s", "ttft_host_s",
)




#: serving modes with a tokens/s per user to compare or size at (a prefill pool has none)
RATE_SERVING = ("decode", "aggregated", "disaggregated")
#: the scenario fields of one request's lengths and its TTFT; of a workload of sessions; of the search
LENGTHS = ("serving", "isl", "osl", "context", "max_ttft")
SESSIONS = ("workload", "slo", "kv_tiers")
SEARCH = ("gpus", "max_gpus", "tp_attn", "ep", "tp_moe", "weights", "kv", "mtp", "acceptance", "overlap",
          "kv_offload", "mode")
#: what frontier, compare and size take: the question, the lengths or a workload, the search
FRONTIER_FIELDS = ("model", "systems", "stack", *LENGTHS, *SESSIONS, *SEARCH, "search", "metric")
#: what sensitivity takes: one request's lengths, the limit search's options and the metric
SENSITIVITY_FIELDS = ("model", "systems", "stack", *LENGTHS, *SEARCH, "metric")


def _samples(text: str) -> int:
    v = positive_int(text)
    if not 2 <= v <= 1000:
        raise argparse.ArgumentTypeError(f"expected 2 to 1000 draws, got {text!r}")
    return v


def scenario_parent(names: tuple[str, ...], **changes: dict[str, Any]) -> argparse.ArgumentParser:
    """A parent parser holding the flags of scenario fields ``names`` (:mod:`planner.cli.options`)."""
    p = argparse.ArgumentParser(add_help=False)
    add_scenario_options(p, names, changes=changes)
    return p


def points_json(df: pd.DataFrame) -> list[dict[str, Any]]:
    import pandas as pd

    pts = []
    for _, r in df.iterrows():
        cfg = {c: json_safe(r[c]) for c in CONFIG_COLUMNS if c in r.index and not pd.isna(r[c])}
        pts.append({
            "tps_per_user": json_safe(r.get("tps_per_user")), "tps_per_gpu": json_safe(r["tps_per_gpu"]),
            "tps_per_mw": json_safe(r.get("tps_per_mw")),
            "usd_per_mtok_rental": json_safe(r.get("usd_per_mtok_rental")),
            "bottleneck": r.get("bottleneck"),
            **({"ttft_s": json_safe(r["ttft_s"])} if "ttft_s" in r else {}),
            "config": cfg,
        })
    return pts


def _settings(attrs: dict[str, Any]) -> dict[str, Any]:
    """A table's attributes as JSON (its scenario apart: each output carries it at its top)."""
    return {k: json_safe(v) for k, v in attrs.items() if k != "scenario"}


def cmd_frontier(args: argparse.Namespace) -> int:
    from planner.cli.workload import cmd_frontier_workload, workload_asked
    from planner.serving.frontiers import frontier

    sessions = workload_asked(args)
    sc = scenario_from_args(args)
    if sessions:
        return cmd_frontier_workload(args, sc)
    check_output_args(args, files=["csv"], plots=["plot"])
    if (args.recipe_at is None) != (args.recipes is None):
        raise SpecError("<input>", "--recipe-at" if args.recipes else "--recipes",
                        "--recipe-at X and --recipes DIR together (the rates whose points are written, and "
                        "where)")
    if args.recipes:
        from planner.cli.recipe import check_recipes_dir

        check_recipes_dir(args.recipes)
    df = frontier(sc)
    band = _band(args, sc, df)
    limit = _limit(sc) if args.plot or args.json else None
    outputs: list[tuple[str, str, Any]] = []
    recipes = _recipes_at(args, sc, df, band) if args.recipe_at else None
    if recipes is not None:
        outputs += recipes[0]
    if args.csv:
        rows = df if band is None else _with_band(df, band)
        outputs.append(("--csv", args.csv, lambda tmp: rows.to_csv(tmp, index=False)))
    if args.plot:
        from planner.plot import plot_frontiers

        outputs.append(("--plot", args.plot, savefig_to(
            lambda: plot_frontiers([df], bands=[band], logy=args.logy, limits=[limit]), args.plot)))
    write_outputs(outputs)
    if args.json:
        print_json({"scenario": sc.to_dict(), "settings": _settings(df.attrs), "points": points_json(df),
                    **({"limit_points": points_json(limit)} if limit is not None else {}),
                    **({"band": _band_json(band)} if band is not None else {}),
                    **({"recipes": recipes[1]} if recipes is not None else {})})
        return 0
    a = df.attrs
    print(f"# frontier: {a['model']} on {a['hardware']}, {a['serving']}, ISL {a['isl']:g} / OSL "
          f"{a['osl']:g}, decode context {a['context']:g}, {a['mode']} mode, metric {a['metric']}")
    if a["mode"] == "realistic":
        print(f"# calibration: {a['calibration']} (--stack or NAME@STACK picks another stack's fit)")
    if a.get("search") in ("rules", "recipes"):
        print(f"# {a['search']} search: {a['deployments']}")
        if a.get("dropped"):
            from planner.serving.deployed import dropped_summary

            print(f"# not used: {dropped_summary(a['dropped'])}")
        rows = [[r.tps_per_user, r.tps_per_gpu, r.tps_per_mw, r.usd_per_mtok_rental,
                 f"{r.decode_workers:g}x{r.decode_gpus:g} (TPa {r.tp_attn}, EP {r.ep})",
                 f"{r.prefill_workers:g}x{r.prefill_gpus:g}" if r.disagg else "-", f"{r.concurrency:g}",
                 r.weights, r.mtp, f"{r.ttft_s:.3g}", r.bottleneck] for r in df.itertuples()]
        print(table(rows, ["tok/s/user", "tok/s/GPU", "tok/s/IT-MW", "$/Mtok rental", "decode workers",
                           "prefill workers", "users", "weights", "MTP", "TTFT s", "binds"]))
    elif a["serving"] == "prefill":
        rows = [[r.ttft_s, r.tps_per_gpu, r.prefill_gpus, r.prefill_tp_attn, r.prefill_ep,
                 r.prefill_batch, r.prefill_weights, r.bottleneck] for r in df.itertuples()]
        print(table(rows, ["TTFT s", "in tok/s/GPU", "GPUs", "TP", "EP", "prompts", "weights",
                           "binds"]))
    else:
        rows = [[r.tps_per_user, r.tps_per_gpu, r.tps_per_mw, r.usd_per_mtok_rental, r.gpus, r.tp_attn, r.ep,
                 r.tp_moe, r.batch_per_gpu, r.weights, r.mtp, "on" if r.overlap else "off",
                 r.bottleneck] for r in df.itertuples()]
        print(table(rows, ["tok/s/user", "tok/s/GPU", "tok/s/IT-MW", "$/Mtok rental", "GPUs", "TPa", "EP",
                           "TPe", "batch/GPU", "weights", "MTP", "TBO", "binds"]))
    if band is not None:
        _print_band(band)
    if recipes is not None:
        from planner.cli.recipe import print_pool_recipes

        print_pool_recipes(recipes[1])
    return 0


def _recipes_at(args: argparse.Namespace, sc: Any, df: pd.DataFrame, band: pd.DataFrame | None
                ) -> tuple[list[tuple[str, str, Any]], dict[str, Any]]:
    """``--recipe-at X --recipes DIR``: the launch recipe of the frontier's point at each X, for the
    stack it was priced on, with the band at X where --band drew one (outputs, summary)."""
    import os

    import numpy as np

    from planner.cli.recipe import recipe_files
    from planner.serving.launch import build

    stack = df.attrs.get("stack")
    if df.attrs.get("search") not in ("rules", "recipes"):
        raise SpecError("<input>", "--recipe-at", "the rules or recipes search (a recipe launches a whole "
                        "deployment; the limit search's points are not ones)")
    if not stack:
        raise SpecError("<input>", "--recipe-at", f"a system priced with a serving stack's fit "
                        f"({df.attrs['hardware']} has none: --stack or NAME@STACK)")
    written, done, refused = [], [], []
    for x in args.recipe_at:
        try:
            r = build(sc.replace(stack=stack), x)
        except SpecError as exc:
            refused.append({"pool": f"{x:g} tokens/s per user", "why": exc.expected})
            continue
        if band is not None and len(band):
            # the band's spread about its nominal frontier at the point's own rate, carried to the
            # point (its weights may be a published checkpoint's rather than the frontier's best)
            pred = r.sidecar["predicted"]
            lo, mid, hi, nom = (float(np.interp(np.log(pred["tps_per_user"]), np.log(band.tps_per_user),
                                                band[c])) for c in ("lo", "mid", "hi", "nominal"))
            y = pred["output_tps_per_gpu"]
            pred["band_output_tps_per_gpu"] = {
                "lo": y * lo / nom, "mid": y * mid / nom, "hi": y * hi / nom,
                "quantiles": list(band.attrs.get("band_quantiles", ())),
                "samples": band.attrs.get("band_samples")}
        written.append(r)
        base = os.path.join(args.recipes, r.name)
        done.append({"path": base + ".yaml", "sidecar": base + ".json", "pool": f"{x:g} tokens/s per user",
                     "stack": stack, "copies": 1})
    if done:
        os.makedirs(args.recipes, exist_ok=True)
    return recipe_files(written, args.recipes, "--recipes"), {"dir": args.recipes, "recipes": done,
                                                               "refused": refused}


def _limit(sc: Any) -> pd.DataFrame | None:
    """With the as-deployed search: the limit search's frontier of the same system and inputs (drawn
    dashed beside it, kept in JSON); else None."""
    from planner.serving.frontiers import frontier

    if sc.resolved_search == "limit":
        return None
    return frontier(sc.replace(search="limit"))


def _band(args: argparse.Namespace, sc: Any, nominal: pd.DataFrame, grid: Any = None) -> pd.DataFrame | None:
    """The uncertainty band (``--band``) of scenario ``sc`` (one system), or None."""
    if not getattr(args, "band", False):
        if getattr(args, "band_samples", None) is not None:
            raise SpecError("<input>", "--band-samples", "--band with it (the draws of the band)")
        return None
    from planner.truth.uncertainty import DEFAULT_SAMPLES, frontier_band

    return frontier_band(sc, base=nominal, grid=grid, samples=args.band_samples or DEFAULT_SAMPLES)


def _with_band(front: pd.DataFrame, band: pd.DataFrame) -> pd.DataFrame:
    from planner.truth.uncertainty import band_columns

    return band_columns(front, band)


def _band_json(band: pd.DataFrame) -> dict[str, Any]:
    a = band.attrs
    return {"samples": a.get("band_samples"), "seed": a.get("band_seed"), "method": a.get("band_method"),
            "quantiles": list(a.get("band_quantiles", ())),
            "points": [{k: json_safe(v) for k, v in r.items()} for r in band.to_dict("records")]}


def _print_band(band: pd.DataFrame, name: str = "") -> None:
    a = band.attrs
    q = a.get("band_quantiles", (5, 95))
    print(f"\n# uncertainty band{' ' + name if name else ''}: {q[0]:g}th-{q[1]:g}th percentile of "
          f"tok/s/GPU over {a.get('band_samples')} draws of the efficiencies ({a.get('band_method')}: "
          "fit covariance where calibrated, +-15% otherwise)")
    sub = band.iloc[::max(len(band) // 10, 1)]
    print(table([[r.tps_per_user, r.lo, r.mid, r.hi, r.nominal] for r in sub.itertuples()],
                ["tok/s/user", "lo", "mid", "hi", "nominal"]))


#: The basis every system's power figure is on (the specs' ``system.power_per_gpu``).
POWER_BASIS = ("maximum system power per GPU (IT power: GPUs, CPUs, switches, NICs, fans; no "
               "cooling plant), the same basis on both sides; tok/s/MW is per MW of that IT power")


def speculation_line(sp: dict[str, Any]) -> str:
    """One line saying how a frontier may speculate (from its ``speculation`` attribute)."""
    if not sp or sp.get("kind") == "off":
        if sp.get("source") == "asked off":
            return "off (--mtp off; the default searches with the model's published speculation)"
        return "off (the model publishes none; give --acceptance to try a draft head)"
    how = "its own MTP layers" if sp["kind"] == "mtp" else (
        "a draft head" + (" (published shape)" if sp.get("draft_head", {}).get("published") else
                          " (default EAGLE-3 style: 1 layer, own LM head)"))
    tps = sp.get("tokens_per_step", {})
    nums = " / ".join(f"{a:.2f}" for a in tps.values())
    counts = " / ".join(str(n) for n in tps)
    rng = "".join(f", range {lo:g}-{hi:g} at {n}" for n, (lo, hi) in sp.get("range", {}).items())
    src = "given" if sp.get("source") == "given" else "published"
    searched = ("searched with it and without; --mtp off to compare without" if sp.get("auto", True)
                else "as asked (--mtp)")
    return f"{how}, {nums} tokens per step at {counts} drafts ({src}{rng}); {searched}"


def _print_assumptions(df: Any) -> None:
    t = df.attrs["threshold"]

    def span(v: Any) -> str:  # every interval where the ratio dips below the threshold and back
        return spans_text(v) if v else "never"

    print(f"\n# assumptions that move the answer (one changed at a time; largest per-GPU ratio and the "
          f"tokens/s/user where the ratio is >= {t:g}x)")
    rows = [[r.assumption, r.setting, r.largest_ratio, r.at_tps_per_user, r.change,
             span(r.intervals_per_gpu), span(r.intervals_per_mw)] for r in df.itertuples()]
    print(table(rows, ["assumption", "setting", "largest ratio", "at tok/s/user", "x base",
                       f"per GPU >= {t:g}x", f"per MW >= {t:g}x"]))


def peak_of(answer: dict[str, Any]) -> tuple[float, float] | None:
    """The verdict's largest ratio as the figure annotates it: (tokens/s per user, ratio)."""
    lg = answer["largest"]
    return (lg["tps_per_user"], lg["ratio"]) if lg else None


def verdict(c: Any, cross: dict[str, Any], moves: Any = None) -> dict[str, Any]:
    """The answer before the table: where the per-GPU and per-MW ratios reach the threshold (with
    the band's edges where one was drawn), the largest ratio and where, and what it rests on (the
    assumptions that move it most where ``--assumptions`` ran them, else the ones that would)."""
    import math

    s, t = c.settings, cross["threshold"]
    out: dict[str, Any] = {"threshold": t}
    for key in ("per_gpu", "per_mw"):
        e = cross[key]
        out[key] = {"intervals": e.get("intervals") or ([e["nominal"]] if e.get("nominal") else []),
                    **({"band_upper_edge": e["earliest"], "band_lower_edge": e["surely"]}
                       if "earliest" in e else {})}
    largest = c.table[c.table.largest] if "largest" in c.table else c.table.iloc[:0]
    ok = len(largest) and math.isfinite(float(largest.ratio.iloc[0]))
    out["largest"] = ({"ratio": float(largest.ratio.iloc[0]),
                       "tps_per_user": float(largest.tps_per_user.iloc[0])} if ok else None)
    if moves is not None and len(moves) > 1:
        rest = moves.iloc[1:]
        moved = rest.change.map(lambda v: abs(math.log(v)) if v and math.isfinite(v) else 0.0)
        rest = rest.reindex(moved.sort_values(ascending=False).index)[:3]
        out["rests_on"] = [{"assumption": r.assumption, "setting": r.setting,
                            "largest_ratio": r.largest_ratio, "at_tps_per_user": r.at_tps_per_user}
                           for r in rest.itertuples()]
        out["rests_on_measured"] = True
    else:
        stacks = f"{s['hardware_a']}: {c.a.attrs.get('stack') or 'spec'}, {s['hardware_b']}: " \
                 f"{c.b.attrs.get('stack') or 'spec'}"
        out["rests_on"] = [{"assumption": "serving stack fits", "setting": stacks},
                           {"assumption": "speculation", "setting": f"MTP {s['mtp']}"},
                           {"assumption": "precision", "setting": f"weights {s['weights'] or 'auto'}"}]
        out["rests_on_measured"] = False
    return out


def _print_verdict(v: dict[str, Any], a: str, b: str) -> None:
    t = v["threshold"]

    def where(key: str) -> str:
        e = v[key]
        text = f"at {spans_text(e['intervals'])} tokens/s per user" if e["intervals"] else "at no rate"
        if "band_upper_edge" in e:
            up, lo = e["band_upper_edge"], e["band_lower_edge"]
            text += (f" (band: upper edge {spans_text([up]) if up else 'nowhere'}, "
                     f"lower edge {spans_text([lo]) if lo else 'nowhere'})")
        return text

    print(f"# answer: {a} gives >= {t:g}x the tokens/s per GPU of {b} {where('per_gpu')}; "
          f"per MW {where('per_mw')}")
    lg = v["largest"]
    print("# largest: " + (f"{lg['ratio']:.1f}x at {lg['tps_per_user']:.0f} tokens/s per user" if lg else
                           "no rate where both systems are useful"))
    if v["rests_on_measured"]:
        what = "; ".join(f"{r['assumption']} {r['setting']}: {r['largest_ratio']:.1f}x at "
                         f"{r['at_tps_per_user']:.0f}" for r in v["rests_on"])
        print(f"# rests on (the largest ratio with one assumption changed, most moved first): {what}")
    else:
        what = "; ".join(f"{r['assumption']} ({r['setting']})" for r in v["rests_on"])
        print(f"# rests on: {what}; --assumptions measures how far each moves it")


def _crossing_text(entry: dict[str, Any]) -> str:
    def span(v: Any) -> str:
        return "never" if v is None else f"{spans_text([v])} tokens/s/user"

    spans = entry.get("intervals") or ([entry["nominal"]] if entry["nominal"] is not None else [])
    # every interval where the ratio dips below the threshold and comes back
    out = (spans_text(spans) + " tokens/s/user") if spans else "never"
    if "earliest" in entry:
        out += f" (band: upper edge {span(entry['earliest'])}, lower edge {span(entry['surely'])})"
    return out


def _ratio_rows(c: Any, curve: Any) -> list[dict[str, Any]]:
    """The ratio curve per GPU and per MW, each lo/mid/hi (the band's where ``curve`` is given,
    else the nominal value three times)."""
    import numpy as np

    f = c.settings["power_factor"]
    r = c.ratio
    rows = []
    for x, y in zip(r.tps_per_user, r.ratio, strict=True):
        lo = mid = hi = float(y)
        if curve is not None and len(curve):
            xs = curve.tps_per_user.to_numpy()
            lo, mid, hi = (float(np.interp(np.log(x), np.log(xs), curve[k].to_numpy(), left=np.nan,
                                           right=np.nan)) for k in ("lo", "mid", "hi"))
        rows.append({"tps_per_user": json_safe(float(x)),
                     "per_gpu": {"lo": json_safe(lo), "mid": json_safe(mid), "hi": json_safe(hi)},
                     "per_mw": {"lo": json_safe(lo * f), "mid": json_safe(mid * f), "hi": json_safe(hi * f)}})
    return rows


def _print_explain(e: pd.DataFrame, args: argparse.Namespace) -> None:
    a = e.attrs
    print(f"\n# why {a['hardware_a']} / {a['hardware_b']} = {a['ratio']:.2f}x on {a['model']} at "
          f"{a['at_tps_per_user']:g} tokens/s/user ({args.serving}, {args.mode} mode)")
    print("# chain: start from B, swap in A's resources one group at a time; "
          "the factors multiply to the ratio")
    rows = [[r.step, r.tps_per_gpu, r.factor, r.cumulative, r.bottleneck] for r in e.itertuples()
            if r.kind == "chain"]
    print(table(rows, ["step", "tok/s/GPU", "factor", "cumulative", "binds"]))
    print("\n# single counterfactuals (factor vs the unmodified system)")
    rows = [[r.step, r.tps_per_gpu, r.factor, r.bottleneck] for r in e.itertuples()
            if r.kind == "counterfactual"]
    print(table(rows, ["counterfactual", "tok/s/GPU", "factor", "binds"]))
    print(_interaction_note(e))


def _interaction_note(e: pd.DataFrame) -> str:
    """Why a chain factor and a single counterfactual of the same resource differ: the chain's is
    the resource's effect once the groups above it are swapped in, a counterfactual's its effect on
    an unmodified system; where resources interact (each changes which term binds for the others)
    the two differ, and neither is 'the' share of the ratio."""
    chain = e[(e.kind == "chain") & e.step.str.contains("scale-up domain")]
    cuts = e[(e.kind == "counterfactual") & e.step.str.contains("scale-up domain|domains")]
    if chain.empty or cuts.empty:
        return ("# chain factors are each group's effect after the groups above it; single "
                "counterfactuals change one thing of an unmodified system: where resources interact "
                "they differ")
    parts = ", ".join(f"{r.step}: {r.factor:.2f}x" for r in cuts.itertuples())
    return (f"# the scale-up domain is worth {float(chain.factor.iloc[0]):.2f}x in the chain (after the "
            f"groups above it) and {parts} alone: resources interact (each changes which term binds "
            "for the others), so the chain's factors depend on its order and the single "
            "counterfactuals do not multiply to the ratio")


def cmd_compare(args: argparse.Namespace) -> int:
    import numpy as np
    import pandas as pd

    from planner.cli.workload import cmd_compare_workload, workload_asked
    from planner.serving.comparison import compare, explain

    sessions = workload_asked(args)
    sc = scenario_from_args(args)
    if sessions:
        return cmd_compare_workload(args, sc)
    if len(args.hardware) != 2:
        raise SpecError("<input>", "--hardware", f"two systems to compare, got {len(args.hardware)}")
    from planner.cli.landscape import refuse_executor

    refuse_executor(args, args.assumptions, "--assumptions with it (its comparisons are the cells)")
    if args.at is not None and not (args.explain or args.html):
        raise SpecError("<input>", "--at", "--explain or --html with it (--at is the rate they decompose "
                        "the ratio at; the table's rates are --levels)")
    check_output_args(args, files=["csv", "html"], plots=["plot"])
    at = 50.0 if args.at is None else args.at
    # the page carries the decomposition: --html computes it as --explain does
    e = explain(sc, at=at) if args.explain or args.html else None
    c = compare(sc, levels=tuple(args.levels))
    grid = c.ratio.tps_per_user.to_numpy()[::5] if len(c.ratio) else None  # one grid: paired draws
    sides = [sc.on(h) for h in sc.systems]
    bands = [_band(args, side, f, grid) for side, f in zip(sides, (c.a, c.b), strict=True)]
    # the limit search beside the deployed one: drawn and kept in JSON, so only computed for those
    limits = [_limit(side) for side in sides] if args.plot or args.json else [None, None]
    both = pd.concat([f if b is None else _with_band(f, b)
                      for f, b in zip((c.a, c.b), bands, strict=True)], ignore_index=True)
    ratio_band = ratio_curve = None
    if bands[0] is not None and grid is not None and len(grid):
        from planner.truth.uncertainty import largest_ratio_band, ratio_band_curve

        ratio_band = largest_ratio_band(bands[0], bands[1])
        ratio_curve = ratio_band_curve(bands[0], bands[1])
    from planner.serving.comparison import crossings

    cross = crossings(c.ratio, args.threshold, ratio_curve, c.settings["power_factor"], c.solve)
    moves = None
    if args.assumptions:
        from planner.cli.landscape import executor_of
        from planner.serving.assumptions import assumptions

        moves = assumptions(sc, threshold=args.threshold, base=c, executor=executor_of(args))
    outputs: list[tuple[str, str, Any]] = []
    if args.csv:
        outputs.append(("--csv", args.csv, lambda tmp: both.to_csv(tmp, index=False)))
    answer = verdict(c, cross, moves)
    if args.html:
        from planner.cli.report import report_page

        page = report_page(c, answer, argv=list(getattr(args, "argv", None) or ["compare"]),
                           hardware=sc.load_systems(), bands=bands, limits=limits,
                           threshold=args.threshold, peak=peak_of(answer), explain=e, moves=moves,
                           ratio_band=ratio_band)
        outputs.append(("--html", args.html, page))
    if args.plot:
        from planner.plot import Marks, plot_frontiers  # matplotlib only when a figure is written

        outputs.append(("--plot", args.plot, savefig_to(
            lambda: plot_frontiers([c.a, c.b], c.ratio, bands=bands, logy=args.logy, limits=limits,
                                   marks=Marks(threshold=args.threshold, peak=peak_of(answer))),
            args.plot)))
    write_outputs(outputs)
    s = c.settings
    if args.json:
        print_json({"verdict": json_safe(answer), "scenario": sc.to_dict(), "settings": _settings(s),
                    "speculation": {s["hardware_a"]: c.a.attrs.get("speculation"),
                                    s["hardware_b"]: c.b.attrs.get("speculation")},
                    "power_basis": POWER_BASIS,
                    "ratio": _ratio_rows(c, ratio_curve), "crossings": json_safe(cross),
                    **({"assumptions": [{k: json_safe(v) for k, v in r.items()}
                                        for r in moves.to_dict("records")]} if moves is not None else {}),
                    "table": [{k: json_safe(v) for k, v in r.items()} for r in c.table.to_dict("records")],
                    "frontiers": {s["hardware_a"]: points_json(c.a), s["hardware_b"]: points_json(c.b)},
                    **({"limit_frontiers": {s["hardware_a"]: points_json(limits[0]),
                                            s["hardware_b"]: points_json(limits[1])}}
                       if limits[0] is not None else {}),
                    **({"bands": {s["hardware_a"]: _band_json(bands[0]),
                                  s["hardware_b"]: _band_json(bands[1])},
                        "largest_ratio_band": json_safe(ratio_band)} if bands[0] is not None else {}),
                    **({"explain": {"settings": _settings(e.attrs), "steps": [
                        {k: json_safe(v) for k, v in r.items()} for r in e.to_dict("records")]}}
                       if e is not None and args.explain else {})})
        return 0
    A, B = s["hardware_a"], s["hardware_b"]
    print(f"# moe-planner compare: {s['model']} on {A} vs {B}")
    _print_verdict(answer, A, B)
    print(f"# serving {s['serving']}, ISL {s['isl']:g} / OSL {s['osl']:g} (decode context "
          f"{s['context']:g}), {s['mode']} mode, metric: {s['metric']} tokens/s per GPU, "
          + (f"max TTFT {s['max_ttft']:g} s" if s.get("max_ttft") is not None else
             f"{s.get('search')} search of whole deployments (TTFT as each deployment's users give it)"))
    if s.get("search") in ("rules", "recipes"):
        print(f"# {s['search']} search: {A}: {c.a.attrs.get('deployments')}; "
              f"{B}: {c.b.attrs.get('deployments')}")
        from planner.serving.deployed import dropped_summary

        for name, side in ((A, c.a), (B, c.b)):
            if side.attrs.get("dropped"):
                print(f"# not used ({name}): {dropped_summary(side.attrs['dropped'])}")
    if s["mode"] == "realistic":
        print(f"# calibration: {s['calibration']} (--stack or NAME@STACK picks another stack's fit)")
    print(f"# precision: best each system supports unless --weights (weights {s['weights'] or 'auto'}, "
          f"KV {s['kv']}), MTP {s['mtp']}, instance size {'searched' if not s['gpus'] else s['gpus']}")
    print(f"# speculation (both sides): {speculation_line(c.a.attrs.get('speculation') or {})}")
    print(f"# power: {POWER_BASIS}")
    rows = []
    for r in c.table.itertuples():
        note = "largest" if r.largest else ("tail" if np.isfinite(r.ratio) and not r.both_useful else "")
        rows.append([r.tps_per_user, r.tps_per_gpu_a, r.tps_per_gpu_b, r.ratio, r.tps_per_mw_a,
                     r.tps_per_mw_b, r.ratio_per_mw, r.bottleneck_a, r.bottleneck_b, note])
    print(table(rows, ["tok/s/user", f"{A} tok/s/GPU", f"{B} tok/s/GPU", "ratio",
                       f"{A} tok/s/IT-MW", f"{B} tok/s/IT-MW", "ratio/MW", f"{A} binds", f"{B} binds",
                       "note"]))
    if c.table.largest.any():
        r = c.table[c.table.largest].iloc[0]
        print(f"# largest per-GPU ratio {fmt(r.ratio)}x at {fmt(r.tps_per_user)} tokens/s/user (the row "
              "marked largest; over the rows where both systems give at least 5% of their peak tokens/s "
              "per GPU, the rate of the largest on a 200-point curve added; 'tail' rows are below that)")
    if ratio_band is not None and ratio_band["draws"]:
        print(f"# largest per-GPU ratio over {ratio_band['draws']} paired draws of the efficiencies: "
              f"{ratio_band['lo']:.1f}x to {ratio_band['hi']:.1f}x (5th-95th percentile, median "
              f"{ratio_band['mid']:.1f}x)")
    for key, what in (("per_gpu", "per-GPU"), ("per_mw", "per-MW")):
        print(f"# {what} ratio >= {args.threshold:g}x: {_crossing_text(cross[key])}")
    tops = ", ".join(f"{h} tops out at {c.table[f'max_tps_per_user_{t}'].iloc[0]:.0f}"
                     for h, t in ((A, "a"), (B, "b")))
    print(f"# '-' = not reachable ({tops} tokens/s/user); --explain --at X gives the causes of a ratio")
    for h, band in zip((A, B), bands, strict=True):
        if band is not None:
            _print_band(band, h)
    if e is not None and args.explain:
        _print_explain(e, args)
    if moves is not None:
        _print_assumptions(moves)
    written = [p for p in (args.plot, args.csv, args.html) if p]
    if written:
        print(f"# wrote {', '.join(written)}")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from planner.serving.search import SearchSpace
    from planner.serving.sweep import SweepInterrupted, sweep

    sc = scenario_from_args(args)
    check_output_args(args, files=["csv"])
    space = SearchSpace(args.gpus, args.max_gpus, args.tp_attn, args.ep, args.tp_moe, args.weights,
                        args.kv, args.mtp, args.overlap, args.kv_offload, args.acceptance)
    try:
        r = sweep(sc.load_model(), sc.load_system(), contexts=args.contexts, batch_points=args.batch_points,
                  space=space, mode=args.mode, chunk=args.chunk,
                  progress=None if not args.no_progress else False)
    except SweepInterrupted as exc:
        sys.stderr.write(f"interrupted: {exc}; nothing was written\n")
        return 130
    if args.csv:
        write_outputs([("--csv", args.csv, lambda tmp: r.frontier.to_csv(tmp, index=False))])
    summary = {"evaluated": r.evaluated, "feasible": r.feasible, "seconds": r.seconds,
               "configs_per_second": r.configs_per_second}
    if args.json:
        print_json({"scenario": sc.to_dict(), "summary": summary, "points": points_json(r.frontier)})
        return 0
    print(f"# sweep: {r.evaluated:,} configurations ({r.feasible:,} feasible) in {r.seconds:.1f} s, "
          f"{r.configs_per_second:,.0f} configurations/s")
    for ctx, g in r.frontier.groupby("context"):
        best = g.loc[g.tps_per_gpu.idxmax()]
        print(f"context {ctx:>8g}: {len(g):4d} frontier points; max {best.tps_per_gpu:,.0f} tok/s/GPU "
              f"at {best.tps_per_user:.1f} tok/s/user; max {g.tps_per_user.max():.1f} tok/s/user")
    return 0


def register(sub: Any) -> None:
    p = add_command(
        sub, "frontier", cmd_frontier, parents=[scenario_parent(FRONTIER_FIELDS, model={"required": True},
                                                                systems={"required": True, "help": (
                                                                    "bundled system name or path to a YAML "
                                                                    "(NAME@STACK picks a stack's fit)")})],
        help="Pareto frontier of tokens/s per user vs tokens/s per GPU for one model and system",
        description="Search layouts (instance size, attention TP x DP, MoE EP x TP), batch, precision, "
        "MTP and overlap, and print the upper-right envelope of (tokens/s per user, tokens/s per GPU) "
        "with each point's configuration and binding term.",
        epilog="example:\n  moe-planner frontier --model deepseek-r1 --hardware hgx-b200 --gpus 8 "
        "--serving aggregated --json")
    p.add_argument("--json", action="store_true",
                   help='print {"scenario": ..., "settings": ..., "points": [...]}')
    p.add_argument("--csv", metavar="FILE", help="also write every frontier point to FILE")
    p.add_argument("--plot", metavar="FILE",
                   help="also draw the frontier to FILE (format from the extension: .png, .svg, .pdf, "
                        "...; PNG without one)")
    p.add_argument("--logy", action=argparse.BooleanOptionalAction, default=None,
                   help="log y axis in the plot (default: log where the frontier spans more than 20x, so "
                        "the interactive tail does not sit on zero; --no-logy: linear)")
    p.add_argument("--band", action="store_true",
                   help="also an uncertainty band: Monte Carlo over the realistic-mode efficiencies "
                        "(fit covariance where calibrated, +-15%% otherwise); in the plot and output")
    p.add_argument("--band-samples", type=_samples, default=None, metavar="N",
                   help="draws for --band (default 100; 2 to 1000)")
    p.add_argument("--recipe-at", nargs="+", type=positive_float, default=None, metavar="X",
                   help="also write the launch recipe of the frontier's point at each X tokens/s per user "
                        "(the most tokens/s per GPU at least that fast) into --recipes DIR, for the stack "
                        "it was priced on (with --band: the band's spread at the point in its sidecar)")
    p.add_argument("--recipes", metavar="DIR", default=None,
                   help="the directory --recipe-at writes into (a Dynamo graph deployment and a .json "
                        "sidecar of the prediction per point)")

    c = add_command(
        sub, "compare", cmd_compare, parents=[scenario_parent(
            FRONTIER_FIELDS, serving={"choices": RATE_SERVING},
            systems={"nargs": "+", "help": "two systems, A then B; ratios are A/B (NAME@STACK picks a "
                                           "stack's fit)"})],
        help="the main job: frontiers of one model on two systems, their ratio, and why",
        description="Compare two systems on one model: both Pareto frontiers, the ratio of tokens/s "
        "per GPU (and per MW) at chosen interactivity levels with the binding term on each side, a "
        "plot and a CSV.  With no arguments: Kimi K2 Thinking on GB200 NVL72 vs HGX H200, "
        "disaggregated, ISL 1024 / OSL 1024, realistic mode, each at its best precision.",
        epilog="examples:\n  moe-planner compare\n  moe-planner compare --explain --at 50\n"
        "  moe-planner compare --model deepseek-r1 --hardware gb200-nvl72 hgx-b200 --mode bound")
    c.add_argument("--levels", nargs="+", type=positive_float, default=[10, 20, 50, 100, 200],
                   metavar="X", help="interactivity levels for the table, tokens/s/user "
                   "(default 10 20 50 100 200)")
    c.add_argument("--plot", metavar="FILE", default="frontier.png",
                   help="plot file, format from its extension (.png, .svg, .pdf, ...; default frontier.png; "
                        "'' to skip)")
    c.add_argument("--csv", metavar="FILE", default="frontier.csv",
                   help="CSV of both frontiers (default frontier.csv; '' to skip)")
    c.add_argument("--logy", action=argparse.BooleanOptionalAction, default=None,
                   help="log y axis in the plot (default: log where the frontiers span more than 20x; "
                        "--no-logy: linear)")
    c.add_argument("--json", action="store_true", help="print the table and frontiers as JSON")
    c.add_argument("--threshold", type=positive_float, default=10.0, metavar="X",
                   help="say where the per-GPU and per-MW ratios first reach X (default 10, as in "
                        "'10x the throughput')")
    c.add_argument("--band", action="store_true",
                   help="also uncertainty bands on both frontiers (Monte Carlo over the efficiencies)")
    c.add_argument("--assumptions", action="store_true",
                   help="also the table of assumptions that move the answer: the comparison re-run with "
                        "one changed at a time (speculation, acceptance range, precision, serving stack, "
                        "power basis, prompt length); about ten times as long")
    c.add_argument("--band-samples", type=_samples, default=None, metavar="N",
                   help="draws for --band (default 100; 2 to 1000)")
    from planner.cli.landscape import add_executor_options

    add_executor_options(c)
    c.add_argument("--explain", action="store_true",
                   help="also decompose the ratio at --at into causes by counterfactual swaps (after the "
                        "table; in --json under \"explain\")")
    c.add_argument("--at", type=positive_float, default=None,
                   help="interactivity for --explain, tokens/s/user (default 50; only with --explain)")
    c.add_argument("--html", metavar="FILE", default="",
                   help="also write the comparison as one self-contained HTML page: the verdict, the "
                        "figure, the table, the ratio decomposed at --at, the assumptions (with "
                        "--assumptions), each side's calibration, every source and the command")

    w = add_command(
        sub, "sweep", cmd_sweep, parents=[scenario_parent(
            ("model", "systems", "stack", "serving", *SEARCH),
            serving={"choices": ("decode",), "default": "decode"},
            model={"required": True}, systems={"required": True})],
        help="evaluate a large grid of decode configurations in chunks (bounded memory)",
        description="Evaluate decode layouts x precision x MTP x overlap x contexts x batch (geometric "
        "from one sequence to the memory limit) in chunks, keeping only the Pareto envelope per context "
        "(decode pool only: --contexts replaces ISL/OSL, tokens/s per decode GPU). Shows a progress bar "
        "on a terminal; Ctrl-C stops cleanly.",
        epilog="example (about 50 million configurations):\n  moe-planner sweep --model kimi-k2-thinking "
        "--hardware gb200-nvl72 --contexts 1024 2048 4096 8192 16384 32768 65536 131072 "
        "--batch-points 4096")
    w.add_argument("--contexts", nargs="+", type=positive_float, default=[2048.0], metavar="S",
                   help="mean KV lengths to sweep, tokens (default 2048)")
    w.add_argument("--batch-points", type=positive_int, default=256,
                   help="batch values per layout and context (default 256)")
    w.add_argument("--chunk", type=positive_int, default=1 << 16,  # planner.serving.sweep.DEFAULT_CHUNK
                   help="configurations evaluated at once; bounds memory (default 65536)")
    w.add_argument("--no-progress", action="store_true", help="no progress bar")
    w.add_argument("--csv", metavar="FILE", help="write the frontier points to FILE")
    w.add_argument("--json", action="store_true", help="print the summary and frontier as JSON")
