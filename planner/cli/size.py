"""``moe-planner size``: procurement sizing from demand and a service level (and the inverse
questions: a power budget, a cost target, a fixed fleet)."""

from __future__ import annotations

import argparse
import math
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from planner.cli.common import (
    add_command,
    check_output_args,
    json_safe,
    plain_number,
    positive_float,
    positive_int,
    print_json,
    savefig_to,
)
from planner.cli.frontier import LENGTHS, RATE_SERVING, SEARCH, SESSIONS, scenario_parent
from planner.cli.options import scenario_from_args
from planner.errors import SpecError
from planner.outputs import table, write_outputs
from planner.specs.regions import REGIONS

if TYPE_CHECKING:
    import pandas as pd

#: what size takes of the scenario: the question and the frontier's options but its metric (demand
#: is output tokens/s), and the region the systems are bought in
SIZE_FIELDS = ("model", "systems", "stack", *LENGTHS, *SESSIONS, *SEARCH, "search", "region")

FIGURE_LABELS = {
    "price_per_unit": "price per {unit}",
    "price_per_gpu_hour": "rental per GPU-hour",
    "power_per_gpu": "power per GPU (all-in)",
    "pue": "PUE",
    "usd_per_kwh": "energy price",
    "years": "capex amortised over",
}


def _nonneg_float(text: str) -> float:
    plain_number(text)
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return v


def _pue(text: str) -> float:
    v = positive_float(text)
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a PUE >= 1, got {text!r}")
    return v


def _override(values: list[str] | None, flag: str, names: list[str]) -> Any:
    """``X`` (every system) and/or ``NAME=X`` items -> a float or {name: float}."""
    if not values:
        return None
    common, named = None, {}
    for item in values:
        name, sep, num = item.rpartition("=")
        try:
            v = positive_float(num)
        except argparse.ArgumentTypeError as exc:
            raise SpecError("<input>", flag, f"a positive number or SYSTEM=NUMBER ({exc})") from None
        if not sep:
            if common is not None:
                raise SpecError("<input>", flag, "one value for every system, or SYSTEM=NUMBER per "
                                f"system; got {len(values)} plain values")
            common = v
        elif name not in names:
            raise SpecError("<input>", flag, f"a system being sized ({', '.join(names)}), got {name!r}")
        else:
            named[name] = v
    if not named:
        return common
    return {n: named.get(n, common) for n in names if named.get(n, common) is not None}


def _money(v: Any, digits: int = 3) -> str:
    v = json_safe(v)
    if v is None:
        return "-"
    if abs(v) >= 1e6:
        return f"${v / 1e6:,.{digits}g}M" if abs(v) < 1e9 else f"${v / 1e6:,.0f}M"
    if abs(v) >= 1e3:
        return f"${v:,.0f}"
    return f"${v:.{digits}g}"


def _units(n: Any, unit: str) -> str:
    n = json_safe(n)
    return "-" if n is None else f"{int(n)} {unit}{'' if int(n) == 1 else 's'}"


def _pct(v: Any) -> str:
    v = json_safe(v)
    return "-" if v is None else f"{100 * v:.0f}%"


def _pool(n: Any, g: Any) -> str:
    n, g = json_safe(n), json_safe(g)
    if n is None or g is None or not n:
        return "-"
    return f"{int(n) * int(g)} ({int(n)}x{int(g)})"


def _print_figures(df: pd.DataFrame) -> None:
    figs = df.attrs.get("figures", {})
    print("# prices and power used (override: --usd-per-unit, --usd-per-gpu-hour, --watts-per-gpu, "
          "--pue, --usd-per-kwh, --years):")
    shared_done = False
    for hw, f in figs.items():
        unit = str(df.loc[df.hardware == hw, "unit"].iloc[0]) if (df.hardware == hw).any() else "unit"
        for key in ("price_per_unit", "price_per_gpu_hour", "power_per_gpu"):
            fig = f[key]
            label = FIGURE_LABELS[key].format(unit=unit)
            val = (f"{_money(fig['value'], 4)}" if key != "power_per_gpu" else f"{fig['value']:,.0f} W")
            print(f"#   {hw} {label}: {val} - {fig['source']}")
        if not shared_done:
            shared = f
            shared_done = True
    if shared_done:
        print(f"#   PUE {shared['pue']['value']:g} - {shared['pue']['source']}")
        print(f"#   energy ${shared['usd_per_kwh']['value']:g}/kWh - {shared['usd_per_kwh']['source']}")
        print(f"#   capex amortised over {shared['years']['value']:g} years - {shared['years']['source']}")


def _header(a: dict[str, Any], extra: str = "") -> None:
    ttft = f", TTFT <= {a['max_ttft']:g} s (prefill pool)" if a.get("max_ttft") else ""
    if a.get("workload"):
        w = a["workload"]
        slo = ", ".join(f"{k} {v:g} s" for k, v in w["slo"].items()) or "none"
        ttft = (f"; workload {w['name']} (mean prompt {w['isl_mean']:.0f} tokens, {w['cached_mean']:.0f} "
                f"reusable, KV tiers {','.join(a.get('tiers') or []) or 'none'}; service levels {slo}; limit "
                "search)")
    search = (f"; {a.get('search')} search: whole deployments (prefill and decode workers), each "
              "replicated (a layout or another search option given takes the limit search)"
              + (f"; TTFT <= {a['max_ttft']:g} s" if a.get("max_ttft") else "")
              if a.get("search") in ("rules", "recipes") else "")
    print(f"# moe-planner size: {a['model']}, {a['serving']} serving, ISL {a['isl']:g} / OSL "
          f"{a['osl']:g}, {a['mode']} mode{ttft}{search}")
    if a.get("region"):
        out = a.get("not_sold_in_region") or []
        print(f"# region {a['region']}: only systems sold there (system.regions)"
              + (f"; left out: {', '.join(out)}" if out else ""))
    if extra:
        print(extra)


def _infeasible_lines(df: pd.DataFrame) -> None:
    if "feasible" not in df:
        return
    for r in df[~df.feasible.astype(bool)].itertuples():
        print(f"# {r.hardware}: cannot meet it: {r.reason}")


def _datasheet_band(sd: float, tps_per_gpu: float) -> dict[str, float] | None:
    """The 5th-95th percentile of tokens/s per GPU from the datasheet-only error ``sd`` (log-sd) of a
    system with no measurements of its own (:func:`planner.truth.uncertainty.unmeasured_log_sd`:
    wider for a family nobody here has measured); None for a measured system (``sd`` 0: its fit
    band is ``compare --band``'s)."""
    from planner.truth.uncertainty import QUANTILES

    if not sd or not math.isfinite(tps_per_gpu):
        return None
    z = NormalDist().inv_cdf(QUANTILES[1] / 100)
    return {"lo": tps_per_gpu * math.exp(-z * sd), "hi": tps_per_gpu * math.exp(z * sd), "log_sd": sd}


def _option_json(r: dict[str, Any], figs: dict[str, Any], sds: dict[str, float] | None = None
                 ) -> dict[str, Any]:
    out = {k: json_safe(v) for k, v in r.items() if not k.endswith("_source")
           and not (isinstance(v, float) and math.isnan(v))}
    out["figures"] = figs.get(r["hardware"], {})
    if r.get("feasible"):
        sd = (sds or {}).get(r["hardware"], 0.0)
        out["datasheet_band_tps_per_gpu"] = _datasheet_band(sd, float(r["tps_per_gpu"]))
    return out


def _settings(a: dict[str, Any]) -> dict[str, Any]:
    return {k: json_safe(v) if not isinstance(v, list | dict) else v for k, v in a.items()
            if k not in ("figures", "recipes", "scenario")}


def _recipes_json(a: dict[str, Any]) -> dict[str, Any]:
    """``--recipes``: what was written and why not, for the JSON output."""
    return {"recipes": a["recipes"]} if a.get("recipes") is not None else {}


# ---- the command ---------------------------------------------------------------------------------
def cmd_size(args: argparse.Namespace) -> int:
    from planner.cli.workload import workload_asked
    from planner.economics import sizing
    from planner.economics.cost import Costs

    workload_asked(args)  # (a flag --workload replaces: refused before the scenario is built)
    sc = scenario_from_args(args)
    hws = sc.load_systems("--hardware")  # unknown hardware fails here, before any search
    names = [h.name for h in hws]
    inverse = args.power_budget_mw is not None or args.fleet_units is not None
    given = dict(demand_tps=args.demand_tps, users=args.users, requests_per_s=args.requests_per_s,
                 profile=args.profile)
    demand = {k: v for k, v in given.items() if v is not None}
    has_demand = bool(demand)
    if not has_demand and not inverse:
        raise SpecError("<input>", "demand", "one of --demand-tps, --users, --requests-per-s or --profile "
                        "(or ask --power-budget-mw / --fleet-units)")
    if args.min_tps_user is None and args.cost_target is None and args.fleet_units is None:
        raise SpecError("<input>", "--min-tps-user", "the service level, output tokens/s per user")
    if args.levels and args.fleet_units is None:
        raise SpecError("<input>", "--levels", "--fleet-units with it (--levels are the service levels "
                        "a fixed fleet is read at; size at one level with --min-tps-user)")
    if args.plot and not has_demand:
        raise SpecError("<input>", "--plot", "a demand to size for (--demand-tps, --users, "
                        "--requests-per-s or --profile)")
    check_output_args(args, plots=["plot"])
    from planner.cli.recipe import check_recipes_dir

    check_recipes_dir(args.recipes)
    costs = Costs(pue=args.pue, usd_per_kwh=args.usd_per_kwh, years=args.years, basis=args.basis,
                  usd_per_unit=_override(args.usd_per_unit, "--usd-per-unit", names),
                  usd_per_gpu_hour=_override(args.usd_per_gpu_hour, "--usd-per-gpu-hour", names),
                  watts_per_gpu=_override(args.watts_per_gpu, "--watts-per-gpu", names))
    sized = sc.replace(systems=tuple(hws), stack=None)  # (loaded once, under their own names)
    options: list[Any] = []
    out = options if args.recipes else None
    if args.power_budget_mw is not None:
        df = sizing.power_budget(sized, args.power_budget_mw, min_tps_user=args.min_tps_user, costs=costs,
                                 options_out=out)
        report = _report_budget
    elif args.cost_target is not None:
        df = sizing.cost_target(sized, args.cost_target, demand, costs=costs, options_out=out)
        report = _report_cost
    elif args.fleet_units is not None:
        levels = args.levels or sorted(set(sizing.DEFAULT_LEVELS) | (
            {args.min_tps_user} if args.min_tps_user else set()))
        df = sizing.fleet_capacity(sized, args.fleet_units, levels=levels, costs=costs, options_out=out)
        report = _report_fleet
    else:
        df = sizing.size(sized, demand, min_tps_user=args.min_tps_user, costs=costs, options_out=out)
        report = _report_size
    df.attrs["scenario"] = sc.to_dict()
    from planner.truth.uncertainty import unmeasured_log_sd

    df.attrs["datasheet_log_sd"] = {h.name: unmeasured_log_sd(h) for h in hws}
    outputs: list[tuple[str, str, Any]] = []
    if args.plot:  # written before anything is printed
        from planner.plot import plot_sizing

        level = args.min_tps_user
        curve = sizing.sizing_curve(sized, demand, costs=costs, also_at=[level] if level else [])
        outputs.append(("--plot", args.plot, savefig_to(lambda: plot_sizing(
            curve, level=level, cost_target=args.cost_target, basis=args.basis), args.plot)))
    summary = None
    if args.recipes:
        from planner.cli.recipe import pool_recipe_outputs
        from planner.economics.recipes import sizing_sources

        more, summary = pool_recipe_outputs(sizing_sources(df, options), args.recipes,
                                            "the sizing's deployment")
        outputs += more
        df.attrs["recipes"] = summary
    if outputs:
        write_outputs(outputs)
    report(df, args)
    if args.plot and not args.json:
        print(f"# wrote {args.plot}")
    if summary is not None and not args.json:
        from planner.cli.recipe import print_pool_recipes

        print_pool_recipes(summary)
    return 0


def _report_size(df: pd.DataFrame, args: argparse.Namespace) -> None:
    a = df.attrs
    figs = a.get("figures", {})
    if args.json:
        ok = df[df.feasible]
        print_json({"scenario": a["scenario"], "settings": _settings(a), **_recipes_json(a),
                    "cheapest": str(df.loc[df.cheapest, "hardware"].iloc[0]) if df.cheapest.any() else None,
                    "options": {r["hardware"]: _option_json(r, figs, a.get("datasheet_log_sd", {}))
                                for r in df.to_dict("records")},
                    "feasible": [str(h) for h in ok.hardware]})
        return
    basis = "owned: capex + energy" if a["basis"] == "own" else "rental"
    _header(a, f"# demand: {a['demand']}; service level >= {a['min_tps_user']:g} tokens/s/user; "
               "sized for the peak")
    ok = df[df.feasible]
    rows = []
    for r in ok.itertuples():
        rows.append(["*" if r.cheapest else "", r.hardware, r.tps_per_user, r.ttft_s, r.tps_per_gpu,
                     r.weights, _pool(r.decode_instances, r.instance_gpus),
                     _pool(r.prefill_instances, r.prefill_instance_gpus), r.gpus,
                     _units(r.units, r.unit), r.it_power_mw, r.power_mw, _pct(r.headroom), r.bottleneck])
    pool = "decode GPUs" if a["serving"] == "disaggregated" else f"{a['serving']} GPUs"
    if a.get("search") in ("rules", "recipes"):  # whole deployments, prefill workers included
        pool = "deployments (copies x GPUs)"
    print(table(rows, ["", "option", "tok/s/user", "TTFT s", "tok/s/GPU", "weights", pool,
                       "prefill GPUs", "GPUs", "units", "IT MW", "facility MW", "headroom", "binds"]))
    sds = a.get("datasheet_log_sd", {})
    bands = [(r.hardware, _datasheet_band(sds.get(r.hardware, 0.0), float(r.tps_per_gpu)))
             for r in ok.itertuples()]
    for name, b in bands:
        if b is not None:
            print(f"# {name} has no measurements of its own: tok/s/GPU {b['lo']:,.0f} to {b['hi']:,.0f} "
                  f"(5th-95th percentile of its datasheet-only error, log-sd {b['log_sd']:.2f}); the GPUs, "
                  "units and money above scale inversely")
    print()
    rows = []
    for r in ok.itertuples():
        rows.append(["*" if r.cheapest else "", r.hardware, _money(r.capex_usd), _money(r.opex_usd_per_year),
                     _money(r.usd_per_mtok_owned, 4), _money(r.rental_usd_per_year),
                     _money(r.usd_per_mtok_rental, 4), r.tps_per_facility_mw, _pct(r.utilisation),
                     _money(r.idle_usd_per_year)])
    print(table(rows, ["", "option", "capex", "energy/yr", "owned $/Mtok", "rental/yr", "rental $/Mtok",
                       "tok/s/facility-MW", "avg util", "idle cost/yr"]))
    if df.cheapest.any():
        c = df[df.cheapest].iloc[0]
        key = "usd_per_mtok_owned" if a["basis"] == "own" else "usd_per_mtok_rental"
        print(f"# * cheapest ({basis}): {c.hardware} at {_money(c[key], 4)} per million output tokens")
    print(f"# $/Mtok = (capex / {a['years']:g} years + energy per year) / output tokens served per year; "
          "rental $/Mtok = GPU-hour price x GPUs bought x 8760 h / tokens; every GPU bought is powered")
    if a.get("profile"):
        print("# daily profile: sized for the peak hour; avg util = mean load / capacity; idle cost = "
              "the yearly cost of the unused capacity")
    _infeasible_lines(df)
    _print_figures(df)


def _report_budget(df: pd.DataFrame, args: argparse.Namespace) -> None:
    a = df.attrs
    if args.json:
        print_json({"scenario": a["scenario"], "settings": _settings(a), **_recipes_json(a), "power_budget": {
            r["hardware"]: _option_json(r, a.get("figures", {})) for r in df.to_dict("records")}})
        return
    _header(a, f"# power budget {a['power_budget_mw']:g} MW of facility power (PUE {a['pue']:g}): "
               f"the most load each option serves at >= {a['min_tps_user']:g} tokens/s/user")
    rows = []
    for r in df[df.feasible].itertuples():
        rows.append([r.hardware, _units(r.units, r.unit), r.gpus, r.power_mw, r.capacity_tps, r.users,
                     r.requests_per_s, r.tps_per_user, r.tps_per_gpu, _money(r.capex_usd),
                     _money(r.usd_per_mtok_owned, 4)])
    print(table(rows, ["option", "units", "GPUs", "MW used", "output tok/s", "users", "requests/s",
                       "tok/s/user", "tok/s/GPU", "capex", "$/Mtok at full load"]))
    _infeasible_lines(df)
    _print_figures(df)


def _report_cost(df: pd.DataFrame, args: argparse.Namespace) -> None:
    a = df.attrs
    if args.json:
        print_json({"scenario": a["scenario"], "settings": _settings(a), **_recipes_json(a), "cost_target": {
            r["hardware"]: _option_json(r, a.get("figures", {})) for r in df.to_dict("records")}})
        return
    basis = "owned: capex + energy" if a["basis"] == "own" else "rental"
    _header(a, f"# cost target {_money(a['cost_target'], 4)} per million output tokens ({basis}) "
               f"serving {a['demand']}: the highest interactivity each option reaches")
    rows = []
    for r in df[df.feasible].itertuples():
        key = r.usd_per_mtok_owned if a["basis"] == "own" else r.usd_per_mtok_rental
        rows.append([r.hardware, r.tps_per_user, _money(key, 4), r.tps_per_gpu, r.gpus,
                     _units(r.units, r.unit), r.power_mw, _money(r.capex_usd), r.bottleneck])
    print(table(rows, ["option", "max tok/s/user", "owned $/Mtok", "tok/s/GPU", "GPUs", "units", "MW",
                       "capex", "binds"]))
    _infeasible_lines(df)
    _print_figures(df)


def _report_fleet(df: pd.DataFrame, args: argparse.Namespace) -> None:
    a = df.attrs
    if args.json:
        figs = a.get("figures", {})
        out: dict[str, list[dict[str, Any]]] = {}
        for r in df.to_dict("records"):
            out.setdefault(r["hardware"], []).append(_option_json(r, figs))
        print_json({"scenario": a["scenario"], "settings": _settings(a), **_recipes_json(a), "fleet": out})
        return
    _header(a, f"# fixed fleet: {a['fleet_units']} units of each option; load served at each service level")
    rows = []
    for r in df.itertuples():
        if r.feasible:
            rows.append([r.hardware, r.min_tps_user, r.capacity_tps, r.users, r.requests_per_s,
                         _units(r.units, r.unit), r.gpus_used, r.power_mw, _money(r.usd_per_mtok_owned, 4),
                         r.bottleneck])
        else:
            rows.append([r.hardware, r.min_tps_user, 0.0, 0.0, 0.0, _units(r.units, r.unit), None, None,
                         "-", f"({r.reason})"])
    print(table(rows, ["option", "tok/s/user", "output tok/s", "users", "requests/s", "units",
                       "GPUs used", "MW", "$/Mtok at full load", "binds"]))
    _print_figures(df)


# ---- registration ------------------------------------------------------------------------------------
def register(sub: Any) -> None:
    p = add_command(
        sub, "size", cmd_size,
        parents=[scenario_parent(SIZE_FIELDS, serving={"choices": RATE_SERVING}, model={"required": True},
                                 systems={"required": True, "nargs": "+",
                                          "help": "one or more systems to size (NAME@STACK picks a "
                                                  "stack's fit)"},
                                 region={"choices": REGIONS})],
        help="procurement sizing: from demand and a service level to GPUs, racks, MW and dollars",
        description="For each hardware option, the best frontier configuration meeting the service level "
        "(tokens/s per user; TTFT for the disaggregated prefill pool), then the deployment for the "
        "demand: GPUs rounded up to whole instances and purchasable units (racks, nodes), IT and facility "
        "power, capex (with its source), energy and rental opex, $ per million tokens, tokens per MW and "
        "headroom.  Inverse questions: --power-budget-mw, --cost-target, --fleet-units.",
        epilog="examples:\n"
        "  moe-planner size --model kimi-k2-thinking --hardware gb200-nvl72 hgx-h200 --demand-tps 1000000 "
        "--isl 1024 --osl 1024 --min-tps-user 50\n"
        "  moe-planner size --model deepseek-r1 --hardware hgx-b200 --users 20000 --min-tps-user 30 --json\n"
        "  moe-planner size --model kimi-k2-thinking --hardware gb200-nvl72 hgx-h200 --min-tps-user 50 "
        "--power-budget-mw 10\n"
        "  moe-planner size --model kimi-k2-thinking --hardware gb200-nvl72 --profile day.csv "
        "--min-tps-user 50 --plot sizing.png\n"
        "profile files: YAML (a list of 24 output tokens/s, or {unit: output_tps|users|requests_per_s, "
        "hourly: [...]}) or CSV (24 rows; optional header naming the unit, optional hour column)")
    d = p.add_argument_group("demand (one of)").add_mutually_exclusive_group()
    d.add_argument("--demand-tps", type=positive_float, metavar="X", help="peak output tokens/s")
    d.add_argument("--users", type=positive_int, metavar="N",
                   help="peak concurrent users (x --min-tps-user = output tokens/s)")
    d.add_argument("--requests-per-s", type=positive_float, metavar="R",
                   help="peak requests/s (x --osl = output tokens/s)")
    d.add_argument("--profile", metavar="FILE", help="daily profile: 24 hourly loads (CSV or YAML); "
                   "sized for the peak, with average utilisation and the cost of idle capacity")
    s = p.add_argument_group("service level")
    s.add_argument("--min-tps-user", type=positive_float, metavar="Y",
                   help="output tokens/s each user gets at least (TTFT: --max-ttft)")
    c = p.add_argument_group("costs (defaults: the spec files' figures, printed with their sources)")
    c.add_argument("--pue", type=_pue, default=1.3, help="facility power / IT power (default 1.3)")
    c.add_argument("--usd-per-kwh", type=_nonneg_float, default=0.08, metavar="C",
                   help="energy price (default 0.08)")
    c.add_argument("--years", type=positive_float, default=4.0, metavar="Y",
                   help="capex amortisation period (default 4)")
    c.add_argument("--usd-per-unit", nargs="+", metavar="C",
                   help="capex per rack/node: one number for every system, or SYSTEM=NUMBER")
    c.add_argument("--usd-per-gpu-hour", nargs="+", metavar="R",
                   help="rental price per GPU-hour: a number or SYSTEM=NUMBER")
    c.add_argument("--watts-per-gpu", nargs="+", metavar="W",
                   help="all-in power per GPU: a number or SYSTEM=NUMBER")
    c.add_argument("--basis", choices=("own", "rental"), default="own",
                   help="which $/Mtok picks the configuration, marks the cheapest and meets --cost-target: "
                        "own (capex over --years + energy, default) or rental")
    q = p.add_argument_group("inverse questions (one of)").add_mutually_exclusive_group()
    q.add_argument("--power-budget-mw", type=positive_float, metavar="P",
                   help="the largest load served at the service level within P MW of facility power")
    q.add_argument("--cost-target", type=positive_float, metavar="USD",
                   help="the highest tokens/s/user reachable at USD per million tokens or less")
    q.add_argument("--fleet-units", type=positive_int, metavar="N",
                   help="the load N units serve at each service level (--levels)")
    p.add_argument("--levels", nargs="+", type=positive_float, metavar="X",
                   help="service levels for --fleet-units, tokens/s/user (default 10 20 50 100 200 and "
                        "--min-tps-user)")
    p.add_argument("--recipes", metavar="DIR", help="also write the launch recipe of each option's "
                   "deployment into DIR: a Dynamo graph deployment with the flags of the stack it was priced "
                   "on, the benchmark that measures it and a .json sidecar of the prediction (an option the "
                   "stack cannot run: one line saying why)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--plot", metavar="FILE",
                   help="also draw $/Mtok and units against the service level, one curve per system "
                        "(format from the extension: .png, .svg, .pdf, ...; PNG without one)")
