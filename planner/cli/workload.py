"""``frontier --workload`` and ``compare --workload``: a workload's frontier with KV tiers and
service levels as percentiles (:mod:`planner.serving.workloads`)."""

from __future__ import annotations

import argparse
from typing import Any

from planner.cli.common import check_output_args, given, json_safe, print_json
from planner.errors import SpecError
from planner.outputs import table, write_outputs


def add_workload_flags(g: Any) -> None:
    g.add_argument(
        "--workload",
        default=None,
        metavar="NAME|FILE",
        help="a workload instead of one ISL/OSL pair: agentic, reasoning, chat (bundled), a "
        "workload YAML or a trace CSV (arrival_s, input_tokens, output_tokens, cached_tokens"
        "[, session]); its sessions reuse earlier turns' KV from the KV tiers, its prefill "
        "pool is sized for its TTFT service level, and rows carry TTFT/TPOT percentiles",
    )
    g.add_argument(
        "--slo",
        default=None,
        metavar="LEVELS",
        help="service levels replacing the workload's, seconds: e.g. ttft_p99=2,tpot_p90=0.05 "
        "(only with --workload)",
    )
    g.add_argument(
        "--kv-tiers",
        default=None,
        metavar="TIERS",
        help="where sessions' KV may wait between turns: a comma list of hbm, host, nvme, or none "
        "(default hbm,host,nvme; only with --workload)",
    )


def workload_asked(args: argparse.Namespace) -> bool:
    if getattr(args, "workload", None) is None:
        for flag in ("slo", "kv_tiers"):
            if getattr(args, flag, None) is not None:
                raise SpecError("<input>", f"--{flag.replace('_', '-')}", "--workload with it")
        return False
    from planner.serving.workloads import NOT_WITH_WORKLOAD, refuse_with_workload

    values = {k: getattr(args, k, None) for k in ("isl", "osl", *NOT_WITH_WORKLOAD)}
    refuse_with_workload({f"--{k.replace('_', '-')}": v if given(v) else None for k, v in values.items()},
                         getattr(args, "search", None), "--workload")
    for k, unset in (("overlap", "auto"), ("kv_offload", False), ("metric", "output")):
        if getattr(args, k, unset) != unset:
            raise SpecError("<input>", f"--{k.replace('_', '-')}",
                            "no --workload with it (a workload's frontier searches overlap itself, keeps KV "
                            "in its tiers, and counts output tokens per GPU)")
    return True


def _tiers(sc: Any) -> tuple[str, ...]:
    from planner.specs.workload import KV_TIERS

    return KV_TIERS if sc.kv_tiers is None else tuple(sc.kv_tiers)


def _run(sc: Any, hardware: str, tiers: tuple[str, ...]) -> Any:
    from planner.serving.workloads import workload_frontier

    return workload_frontier(sc.on(hardware).replace(kv_tiers=tiers))


def _settings(df: Any, *leave_out: str) -> dict[str, Any]:
    return {k: json_safe(v) for k, v in df.attrs.items() if k not in ("scenario", *leave_out)}


def _names(df: Any) -> tuple[str, str]:
    from planner.serving.workloads import percentile_columns

    return percentile_columns(df.attrs)


def _points(df: Any) -> list[dict[str, Any]]:
    cols = [
        "tps_per_user",
        "tps_per_gpu",
        "tps_per_mw",
        "usd_per_mtok_rental",
        "bottleneck",
        "gpus",
        "tp_attn",
        "ep",
        "batch_per_gpu",
        "weights",
        "mtp",
        "kv_hit_share",
        "kv_need_gb_per_gpu",
        "kv_binding_tier",
        "kv_deepest_tier",
        "restore_s",
        "prefill_utilisation",
        *_names(df),
    ]
    cols += [
        c
        for c in df.columns
        if c.startswith("kv_") and (c.endswith("_use") or c.endswith("_gb_per_gpu")) and c not in cols
    ]
    return [{c: json_safe(r[c]) for c in cols if c in df.columns} for _, r in df.iterrows()]


def _header(df: Any) -> str:
    w = df.attrs["workload"]
    slo = ", ".join(f"{k} {v:g} s" for k, v in w["slo"].items()) or "none"
    return (
        f"# workload {w['name']}: {w['turns']:g} turns, mean prompt {w['isl_mean']:.0f} tokens of which "
        f"{w['cached_mean']:.0f} reusable, output {w['osl_mean']:.0f}, {w['idle_s']:g} s between turns; "
        f"service levels {slo}; KV tiers {','.join(df.attrs['tiers']) or 'none'}; limit search"
    )


def cmd_frontier_workload(args: argparse.Namespace, sc: Any) -> int:
    check_output_args(args, files=["csv"], plots=["plot"])
    df = _run(sc, args.hardware, _tiers(sc))
    outputs: list[tuple[str, str, Any]] = []
    if args.csv:
        outputs.append(("--csv", args.csv, lambda tmp: df.to_csv(tmp, index=False)))
    if args.plot:
        from planner.cli.common import savefig_to
        from planner.plot import plot_frontiers

        outputs.append(
            ("--plot", args.plot, savefig_to(lambda: plot_frontiers([df], logy=args.logy), args.plot))
        )
    write_outputs(outputs)
    if args.json:
        print_json({"scenario": sc.to_dict(), "settings": _settings(df), "points": _points(df)})
        return 0
    a = df.attrs
    print(f"# frontier: {a['model']} on {a['hardware']}, {a['serving']}, {a['mode']} mode")
    print(_header(df))
    tn, pn = _names(df)
    rows = [
        [
            r.tps_per_user,
            r.tps_per_gpu,
            r.kv_hit_share,
            r.kv_need_gb_per_gpu,
            r.kv_binding_tier,
            r[tn],
            r[pn],
            r.gpus,
            r.batch_per_gpu,
            r.weights,
            r.bottleneck,
        ]
        for _, r in df.iterrows()
    ]
    print(
        table(
            rows,
            [
                "tok/s/user",
                "tok/s/GPU",
                "KV hit",
                "KV GB/GPU",
                "KV tier",
                tn.replace("_s", " s"),
                pn.replace("_s", " s"),
                "GPUs",
                "batch/GPU",
                "weights",
                "binds",
            ],
        )
    )
    return 0


def _binding(df: Any, x: float) -> str:
    """The KV tier that binds at the best point of ``df`` at ``x`` tokens/s per user or faster."""
    from planner.serving.workloads import kv_tiers

    return kv_tiers(df, x).get("binding", "-")


def _y(df: Any, x: float) -> float:
    from planner.serving.workloads import best_at

    r = best_at(df, x)
    return float("nan") if r is None else float(r.tps_per_gpu)


def cmd_compare_workload(args: argparse.Namespace, sc: Any) -> int:
    import numpy as np

    from planner.serving.workloads import kv_tiers

    if len(args.hardware) != 2:
        raise SpecError("<input>", "--hardware", f"two systems to compare, got {len(args.hardware)}")
    for flag in ("band", "assumptions", "explain"):
        if getattr(args, flag, False):
            raise SpecError("<input>", f"--{flag}", "no --workload with it (not yet modelled for workloads)")
    check_output_args(args, files=["csv"], plots=["plot"])
    tiers = _tiers(sc)
    off = tuple(t for t in tiers if t == "hbm")
    runs = {(h, k): _run(sc, h, t) for h in args.hardware for k, t in (("on", tiers), ("off", off))}
    levels = np.asarray(args.levels, float)
    table_rows, out_rows = [], []
    for x in levels:
        ys = {key: _y(df, x) for key, df in runs.items()}
        a, b = args.hardware
        r_on, r_off = ys[(a, "on")] / ys[(b, "on")], ys[(a, "off")] / ys[(b, "off")]
        entry = {
            "tps_per_user": x,
            "ratio": r_on,
            "ratio_hbm_only": r_off,
            **{f"{h}_tps_per_gpu": ys[(h, "on")] for h in args.hardware},
            **{f"{h}_tps_per_gpu_hbm_only": ys[(h, "off")] for h in args.hardware},
            "kv_tiers": {h: kv_tiers(runs[(h, "on")], x) for h in args.hardware},
        }
        out_rows.append(entry)
        on_binds = [_binding(runs[(h, "on")], x) for h in args.hardware]
        off_binds = [_binding(runs[(h, "off")], x) for h in args.hardware]
        table_rows.append([x, ys[(a, "on")], ys[(b, "on")], r_on, *on_binds,
                           ys[(a, "off")], ys[(b, "off")], r_off, *off_binds])
    if args.csv:
        import pandas as pd

        both = pd.concat([df.assign(kv_tiers_asked=",".join(df.attrs["tiers"]) or "none")
                          for df in runs.values()], ignore_index=True)
        write_outputs([("--csv", args.csv, lambda tmp: both.to_csv(tmp, index=False))])
    if args.plot:
        from planner.cli.common import savefig_to
        from planner.plot import plot_frontiers

        fronts = [runs[(h, "on")] for h in args.hardware]
        write_outputs([("--plot", args.plot,
                        savefig_to(lambda: plot_frontiers(fronts, logy=args.logy), args.plot))])
    first = runs[(args.hardware[0], "on")]
    mid = float(levels[len(levels) // 2])
    if args.json:
        print_json({"scenario": sc.to_dict(), "settings": _settings(first, "hardware"),
                    "hardware": list(args.hardware), "table": json_safe(out_rows),
                    "kv_tiers": json_safe({"at_tps_per_user": mid,
                                           **{h: kv_tiers(runs[(h, "on")], mid) for h in args.hardware}}),
                    "points": {f"{h}|{k}": _points(df) for (h, k), df in runs.items()}})
        return 0
    a, b = args.hardware
    at = first.attrs
    print(f"# compare: {at['model']}, {a} vs {b}, {at['serving']}, {at['mode']} mode")
    print(_header(first))
    print(table(table_rows, ["tok/s/user", f"{a} tok/s/GPU", b, "ratio", f"{a} KV tier", f"{b} KV tier",
                             f"{a} HBM only", f"{b} HBM only", "ratio HBM only", f"{a} KV tier HBM only",
                             f"{b} KV tier HBM only"]))
    print("# 'HBM only': sessions wait between turns only in the HBM the running batch leaves; 'binds': "
          "the KV tier that is full (the last one in use), so some sessions recompute their prefix "
          "(none: every prefix is kept; no tier: none in use, every prefix recomputed; -: beyond the "
          "frontier)")
    return 0
