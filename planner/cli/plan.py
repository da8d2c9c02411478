"""``moe-planner plan``: the cheapest fleet for several workloads under supply, region, power and
budget limits, its sensitivity, and the plan as a live spreadsheet."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from planner.cli.common import add_command, check_output_args, positive_float, print_json
from planner.errors import SpecError
from planner.outputs import table, write_outputs

if TYPE_CHECKING:
    from planner.fleet.plan import FleetPlan

DESCRIPTION = """\
The cheapest mix of systems that serves every workload of PLAN.yaml at its own service level.

Each workload (a model, ISL/OSL, a service level in output tokens/s per user, a demand: peak
output tokens/s, concurrent users, requests/s or a 24-hour profile) is served from pools of
whole units of one system; each pool's capacity comes from that system's frontier at the
workload's service level, in whole instances packed into scale-up domains and whole units.
An integer program (scipy.optimize.milp, HiGHS) picks the units of every pool so that every
peak is met within the limits: at most N units of a system (max_units), systems available
only from a date (available_from, checked against site.needed_by), or only in some regions
(regions, checked against site.region), the site's facility power (site.facility_mw) and
capex budget (site.capex_budget_usd).  The cost is capex + energy over --years, or rental
with --rental.  An infeasible plan says which limit makes it so, and by how much.

The output: units per system, the pools (which workload runs where, in what configuration),
power, $/Mtok per workload (owned and rental), headroom, and each limit: how much of it is
used, what one more unit of supply or lifting it would save, and which ones bind."""

EPILOG = """\
plan file (YAML; unknown keys are refused):
  years: 4                      basis: own | rental     pue: 1.3     usd_per_kwh: 0.08
  site: {facility_mw: 5, capex_budget_usd: 2.0e8, region: us, needed_by: 2026-06-01}
  systems:
    - {hardware: gb200-nvl72, max_units: 6, available_from: 2026-03-01, regions: [us, eu]}
    - {hardware: hgx-h200}                       # no limit: the fallback
  workloads:
    - {name: chat, model: llama-3.1-70b, isl: 2048, osl: 512, min_tps_user: 50, demand_tps: 1.0e6}
    - {name: reasoning, model: deepseek-r1, osl: 8192, min_tps_user: 100, users: 8000,
       search: {max_gpus: 72}}                   # also: serving, max_ttft, systems: [...]

examples:
  moe-planner plan planner/fleet/data/plan_example.yaml
  moe-planner plan PLAN.yaml --sensitivity --draws 8 --xlsx plan.xlsx --csv pools.csv
  moe-planner plan PLAN.yaml --rental --years 3 --json
  moe-planner plan PLAN.yaml --recipes recipes/
"""


def _money(v: Any) -> str:
    if v is None or v != v:
        return "-"
    if abs(v) < 0.005:  # a difference of two solver objectives at rounding noise: no money
        return "$0"
    if v < 0:
        return "-" + _money(-v)
    if abs(v) >= 1e6:
        return f"${v / 1e6:,.4g}M"
    if abs(v) >= 1e3:
        return f"${v:,.0f}"
    return f"${v:.4g}"


def _int(v: Any) -> Any:
    return None if v is None or v != v else int(v)


def cmd_plan(args: argparse.Namespace) -> int:
    check_output_args(args, files=["csv", "xlsx"])
    from planner.cli.recipe import check_recipes_dir

    check_recipes_dir(args.recipes)
    if args.xlsx:
        from planner.fleet.workbook import require_openpyxl

        require_openpyxl()
    if args.draws is not None and not args.sensitivity:
        raise SpecError("<input>", "--draws", "--sensitivity as well (the draws are part of it)")
    from planner.fleet.plan import plan

    result = plan(args.plan, years=args.years, rental=args.rental, usd_per_kwh=args.usd_per_kwh)
    if args.sensitivity:
        from planner.fleet.sensitivity import DEFAULT_DRAWS, sensitivity

        sensitivity(result, draws=DEFAULT_DRAWS if args.draws is None else args.draws)
    outputs = []
    if args.csv:
        pools = result.pools
        outputs.append(("--csv", args.csv, lambda tmp: pools.to_csv(tmp, index=False)))
    if args.xlsx:
        from planner.fleet.workbook import write_workbook

        outputs.append(("--xlsx", args.xlsx, lambda tmp: write_workbook(result, tmp)))
    summary = None
    if args.recipes:
        from planner.cli.recipe import pool_recipe_outputs

        more, summary = pool_recipe_outputs(result.recipe_sources(), args.recipes, "the fleet plan's pool")
        outputs += more
    if outputs:
        write_outputs(outputs)
    if args.json:
        print_json({**result.to_dict(), **({"recipes": summary} if summary is not None else {})})
        return 0
    report(result)
    for flag, path, _ in outputs:
        if flag != "--recipes":
            print(f"# wrote {path} ({flag})")
    if summary is not None:
        from planner.cli.recipe import print_pool_recipes

        print_pool_recipes(summary)
    return 0


def report(r: FleetPlan) -> None:
    """The plan as text, the way ``moe-planner plan`` prints it."""
    spec, t = r.spec, r.totals
    basis = (f"owned: capex + energy over {r.years:g} years" if r.basis == "own"
             else f"rental over {r.years:g} years")
    print(f"# moe-planner plan: {spec.label}{' (' + spec.name + ')' if spec.name else ''}; {basis}; "
          f"PUE {spec.pue:g}, ${r.usd_per_kwh:g}/kWh")
    site = spec.site
    bits = [f"{site.facility_mw:g} MW facility power" if site.facility_mw is not None else "no power limit"]
    if site.capex_budget_usd is not None:
        bits.append(f"capex budget {_money(site.capex_budget_usd)}")
    if site.region:
        bits.append(f"region {site.region}")
    if site.needed_by:
        bits.append(f"needed by {site.needed_by}")
    print("# site: " + ", ".join(bits))
    print(f"# cheapest mix: {_money(t['cost_usd'])} over {r.years:g} years ({basis.split(' over')[0]}); "
          f"{t['units']} units, {t['gpus']:,} GPUs, {t['it_mw']:.3g} MW IT, "
          f"{t['facility_mw']:.3g} MW facility")
    print()
    rows = []
    for s in r.systems.itertuples():
        if s.excluded:
            continue
        rows.append([s.system, f"{int(s.units)} {s.unit}s", _int(s.max_units), s.gpus, s.it_mw, s.facility_mw,
                     _money(s.capex_usd), _money(s.energy_usd_per_year), _money(s.rental_usd_per_year),
                     _money(s.cost_usd)])
    print(table(rows, ["system", "units", "max units", "GPUs", "IT MW", "facility MW", "capex", "energy/yr",
                       "rental/yr", f"cost {r.years:g} y"]))
    print()
    rows = []
    for p in r.pools.itertuples():
        pre = (f"{int(p.prefill_instances) * int(p.prefill_instance_gpus)} ({int(p.prefill_instances)}x"
               f"{int(p.prefill_instance_gpus)})" if p.prefill_instances else "-")
        whole = "deployed " if getattr(p, "search", "limit") in ("rules", "recipes") else ""  # prefill in
        rows.append([p.workload, p.system, int(p.units), p.tps_per_user, p.tps_per_gpu, p.weights,
                     f"{whole}{int(p.decode_instances) * int(p.instance_gpus)} ({int(p.decode_instances)}x"
                     f"{int(p.instance_gpus)})", pre, p.capacity_tps])
    print(table(rows, ["workload", "system", "units", "tok/s/user", "tok/s/GPU", "weights", "decode GPUs",
                       "prefill GPUs", "capacity tok/s"]))
    print()
    rows = []
    for w in r.workloads.itertuples():
        rows.append([w.workload, w.model, w.min_tps_user, w.peak_tps, w.capacity_tps,
                     f"{100 * w.headroom:.1f}%", _money(w.usd_per_mtok_owned), _money(w.usd_per_mtok_rental),
                     w.systems])
    print(table(rows, ["workload", "model", "tok/s/user", "peak tok/s", "capacity", "headroom",
                       "$/Mtok owned", "$/Mtok rental", "on"]))
    if not r.limits.empty:
        print()
        rows = []
        for lim in r.limits.itertuples():
            fmt = _money if lim.unit == "USD" else (lambda v: v)
            rows.append([lim.limit, fmt(lim.used), fmt(lim.limit_value), fmt(lim.left),
                         _money(lim.saving_one_more_usd), _money(lim.saving_lifted_usd),
                         "yes" if lim.binding else "no"])
        print(table(rows, ["limit", "used", "limit", "left", "one more unit saves", "lifting it saves",
                           "binding"]))
    if r.binding:
        print(f"# binding: {', '.join(r.binding)} (lifting it lowers the cost)")
    else:
        print("# binding: none; the demand alone sets the mix")
    for s in r.systems.itertuples():
        if s.excluded:
            print(f"# excluded: {s.system}: {s.excluded}")
    if r.sensitivity is not None:
        _report_sensitivity(r)
    print("# $/Mtok = (capex / years + energy per year) / output tokens per year at the mean load; rental "
          "$/Mtok = GPU-hours x price / tokens; capacity counts whole instances")
    print("# prices and power used (sources: --json figures, or the Sources sheet of --xlsx):")
    for name, f in r.figures.items():
        print(f"#   {name}: {_money(f['price_per_unit']['value'])} per unit, "
              f"${f['price_per_gpu_hour']['value']:g}/GPU-h, {f['power_per_gpu']['value']:,.0f} W/GPU")


def _report_sensitivity(r: FleetPlan) -> None:
    df = r.sensitivity
    names = [s.hw.name for s in r.problem.systems if not s.excluded]
    print()
    rows = []
    for c in df.itertuples():
        d = c._asdict()
        serves = d.get("baseline_serves")
        rows.append([c.case, _money(c.cost_usd), _money(c.delta_usd) if c.kind != "baseline" else "-",
                     f"{c.delta_pct:+.1f}%" if c.kind != "baseline" and c.feasible else "-",
                     *[_int(df.at[c.Index, f"units_{n}"]) for n in names],
                     "-" if serves is None or serves != serves else ("yes" if serves else "no"),
                     c.note or ""])
    print(table(rows, ["case", f"cost {r.years:g} y", "change", "change %", *[f"units {n}" for n in names],
                       "baseline serves", "note"]))
    s = df.attrs.get("summary") or {}
    if s:
        units = ", ".join(f"{n} {s[f'units_{n}'][0]}-{s[f'units_{n}'][1]}" for n in names)
        print(f"# efficiency draws ({s['draws']}, fit covariance where calibrated, +-15% otherwise): cost "
              f"{_money(s['cost_usd'][0])} to {_money(s['cost_usd'][1])}; units {units}; the baseline's "
              f"units serve every workload in {s['baseline_serves']} of {s['draws']}")


def _years(text: str) -> float:
    return positive_float(text)


def register(sub: Any) -> None:
    p = add_command(sub, "plan", cmd_plan, help="fleet plan: the cheapest mix of systems for several "
                    "workloads under supply, region, power and budget limits", description=DESCRIPTION,
                    epilog=EPILOG)
    p.add_argument("plan", metavar="PLAN.yaml", help="the plan file (see below)")
    p.add_argument("--years", type=_years, metavar="Y", help="the plan's horizon and capex amortisation "
                   "(default: the file's years, else 4)")
    p.add_argument("--rental", action="store_true", help="cost the plan as rental (GPU-hour prices) "
                   "instead of capex + energy")
    p.add_argument("--usd-per-kwh", type=positive_float, metavar="C", help="energy price (default: the "
                   "file's, else 0.08)")
    p.add_argument("--sensitivity", action="store_true", help="also re-solve with the scarcest system's "
                   "supply limit -1/+1 unit, energy +50%%, and efficiency draws within their band")
    p.add_argument("--draws", type=int, metavar="N", help="efficiency draws for --sensitivity (default 8; "
                   "0 to skip; each draw searches the frontiers again)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--csv", metavar="FILE", help="also write the pools (one row per workload and system) "
                   "to FILE")
    p.add_argument("--recipes", metavar="DIR", help="also write each pool's launch recipe into DIR: its "
                   "deployment as a Dynamo graph deployment with the flags of the stack it was priced on, "
                   "the benchmark that measures it and a .json sidecar of the prediction (a pool the stack "
                   "cannot run: one line saying why)")
    p.add_argument("--xlsx", metavar="FILE", help="also write the plan as a workbook whose totals are "
                   "formulas over its input cells (needs openpyxl)")
