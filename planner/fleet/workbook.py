"""The plan as a live spreadsheet (openpyxl): totals are formulas over input cells, so finance can
change a price, the energy price, PUE, the years, the units of a pool, a supply or site limit, the
discount rate, and see every figure move.  At the workbook's initial inputs every formula equals the
figure ``moe-planner plan`` prints (``--json``); the cash-flow inputs start where they reproduce it
(utilisation 100%, maintenance, network and discount rate 0%).

Every sheet has human labels above (or beside) the code names the plan's JSON uses.  Sheets:

* ``Inputs``: the shared figures (years, energy price, PUE, average power as a share of rated,
  hours per year; first year, discount rate, maintenance and network as shares of capex) and, per
  system, its unit price, GPU-hour price, watts per GPU, GPUs per unit, supply limit
  (``max_units``) and the year it is available from;
* ``Pools``: per pool its units (input); the whole blocks and the remainder those units make
  (``INT``), the output of a block and of the remainder (looked up in ``Instances``), capacity,
  instances, GPUs, power, money, and the mean load it carries;
* ``Instances``: per pool and per number of units n up to its block, the whole decode and prefill
  instances the plan packs into n units (inputs) and their output;
* ``Workloads``: demand (inputs); capacity, headroom (red below zero) and $/Mtok;
* ``Limits``: each limit the plan reports (supply per system, site power, capex budget): used,
  limit (input), left (red below zero), whether the current inputs keep within it, and, from the
  solver at the initial inputs, whether it binds and what lifting it saves;
* ``Cash flow``: by year, capex in each system's first year in service, network, energy,
  maintenance and rental, discount factors, NPV and the levelised $/Mtok (discounted cost over
  discounted output tokens);
* ``Totals`` (formulas) and ``Sources`` (where every price and spec figure comes from).

Functions used: ``+ - * / ^``, comparisons, ``SUM``, ``SUMIF``, ``SUMIFS``, ``MIN``, ``MAX``,
``INT``, ``IF`` and cell references.

A pool's capacity counts whole instances, as the plan's does: ``units`` make ``INT(units /
block)`` whole blocks and a remainder; each contributes the lesser of its decode instances' output
and its prefill instances' (output tokens their prompts allow), from the ``Instances`` table.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from planner.economics.cost import HOURS_PER_YEAR
from planner.economics.pools import max_load, plan_pools
from planner.errors import SpecError
from planner.fleet.plan import FleetPlan

INSTALL_HINT = "openpyxl for --xlsx (pip install 'moe-planner[xlsx]' or pip install openpyxl)"

#: human labels of the code names (the plan's JSON keys), shown above or beside them
LABELS = {
    "pool": "Pool", "workload": "Workload", "system": "System", "model": "Model", "unit": "Unit",
    "units": "Units (input)", "block_units": "Units per block", "blocks": "Whole blocks",
    "remainder_units": "Remainder units", "block_tps": "Output of a block (tok/s)",
    "remainder_tps": "Output of the remainder (tok/s)", "capacity_tps": "Capacity (output tok/s)",
    "decode_instances": "Decode instances", "prefill_instances": "Prefill instances",
    "decode_tps_per_instance": "Output per decode instance (tok/s)",
    "prefill_output_tps_per_instance": "Output per prefill instance (output tok/s)",
    "tps_per_gpu": "Output per GPU (tok/s, for reference)", "gpus": "GPUs", "it_mw": "IT power (MW)",
    "facility_mw": "Facility power (MW)", "capex_usd": "Capex ($)", "energy_usd_per_year": "Energy ($/year)",
    "rental_usd_per_year": "Rental ($/year)",
    "cost_owned_usd_per_year": "Owned cost ($/year: capex / years + energy)",
    "cost_rental_usd_per_year": "Rental cost ($/year)", "mean_tps": "Mean load (output tok/s)",
    "mtok_per_year": "Output (M tokens/year)", "min_tps_user": "Service level (tok/s per user)",
    "peak_tps": "Peak load (output tok/s)", "headroom": "Headroom (capacity / peak - 1)",
    "usd_per_mtok_owned": "$/M tokens, owned", "usd_per_mtok_rental": "$/M tokens, rental",
    "usd_per_unit": "Price per unit ($)", "usd_per_gpu_hour": "Rental per GPU-hour ($)",
    "watts_per_gpu": "Power per GPU (W)", "gpus_per_unit": "GPUs per unit",
    "max_units": "Supply limit (units; blank: none)", "available_year": "Available from (year)",
    "n_units": "Units (n)", "limit": "Limit", "field": "Plan file field", "used": "Used",
    "limit_value": "Limit (input)", "left": "Left", "within": "Within it now?",
    "binding": "Binding (solver, initial inputs)", "saving_lifted_usd": "Lifting it saves ($, solver)",
    "saving_one_more_usd": "One more unit saves ($, solver)",
    "year_index": "Year (0 = first)", "year": "Calendar year", "network_usd": "Network ($)",
    "maintenance_usd": "Maintenance ($)", "energy_usd": "Energy ($)",
    "cost_owned_usd": "Owned cost ($)", "rental_usd": "Rental ($)",
    "discount_factor": "Discount factor", "pv_owned_usd": "Owned cost, discounted ($)",
    "pv_rental_usd": "Rental, discounted ($)", "mtok": "Output (M tokens)",
    "pv_mtok": "Output, discounted (M tokens)", "in_service_year": "First year in service",
    "offset": "Years after the first", "network_capex_usd": "Network capex ($)",
    "maintenance_usd_per_year": "Maintenance ($/year)",
}

#: the cash flow's inputs: code, label, initial value (the one that reproduces the CLI), unit
CASH_INPUTS = (
    ("discount_rate", "discount rate", 0.0, "per year (0% reproduces the CLI's undiscounted cost)"),
    ("maintenance_share", "maintenance", 0.0, "of capex per year in service (the CLI counts none)"),
    ("network_share", "network", 0.0, "of capex, bought with the systems (the CLI counts none)"),
)


def require_openpyxl() -> Any:
    """The openpyxl module, or a SpecError saying what to install."""
    try:
        import openpyxl
    except ImportError:
        raise SpecError("<input>", "--xlsx", INSTALL_HINT) from None
    return openpyxl


def _col(i: int) -> str:
    from openpyxl.utils import get_column_letter

    return get_column_letter(i)


#: number formats by column name: money, thousands, power, shares
_FORMATS = {"usd": "$#,##0", "usd_per_mtok": "$#,##0.0000", "mw": "#,##0.000", "tps": "#,##0",
            "count": "#,##0", "share": "0.0%"}


def _fmt(name: str) -> str | None:
    if "usd_per_mtok" in name:
        return _FORMATS["usd_per_mtok"]
    if "usd" in name:
        return _FORMATS["usd"]
    if name.endswith("_mw"):
        return _FORMATS["mw"]
    if "tps" in name or name in ("min_tps_user",):
        return _FORMATS["tps"]
    if name in ("headroom",):
        return _FORMATS["share"]
    if name in ("mtok", "pv_mtok", "mtok_per_year"):
        return "#,##0"
    if name == "discount_factor":
        return "0.0000"
    if name in ("units", "gpus", "blocks", "block_units", "remainder_units", "n_units") \
            or name.endswith("_instances"):
        return _FORMATS["count"]
    return None


class _Book:
    """The styles and the two-row headers every table sheet shares."""

    def __init__(self, openpyxl: Any) -> None:
        from openpyxl.styles import Alignment, Font, PatternFill

        self.bold = Font(bold=True)
        self.code = Font(italic=True, color="808080", size=8)
        self.wrap = Alignment(wrap_text=True, vertical="top")
        self.inp = PatternFill("solid", fgColor="FFF2CC")  # input cells: pale yellow
        self.red = PatternFill("solid", fgColor="F4B6B6")
        self.wb = openpyxl.Workbook()

    def header(self, ws: Any, codes: list[str]) -> dict[str, str]:
        """Two header rows: human labels (row 1), code names (row 2); data from row 3."""
        ws.append([LABELS.get(c, c) for c in codes])
        ws.append(codes)
        for c in ws[1]:
            c.font, c.alignment = self.bold, self.wrap
        for c in ws[2]:
            c.font = self.code
        ws.freeze_panes = "A3"
        return {h: _col(i + 1) for i, h in enumerate(codes)}

    def fill(self, ws: Any, row: int, cols: dict[str, str], names: tuple[str, ...]) -> None:
        for name in names:
            ws[f"{cols[name]}{row}"].fill = self.inp

    def red_below_zero(self, ws: Any, ref: str) -> None:
        from openpyxl.formatting.rule import CellIsRule

        ws.conditional_formatting.add(ref, CellIsRule(operator="lessThan", formula=["0"], fill=self.red))


def _formats(ws: Any, code_row: int) -> None:
    """Each column of a table sheet in its format (by its code name)."""
    for column in ws.iter_cols(min_row=code_row):
        fmt = _fmt(str(column[0].value))
        if fmt:
            for c in column[1:]:
                c.number_format = fmt


def _pool_perfs(result: FleetPlan) -> list[tuple[Any, dict[str, Any]]]:
    """Per row of ``result.pools``: its pool shape and performance figures (the rows are the
    pools the mix uses, in the problem's order)."""
    pr = result.problem
    out = []
    for (sh, c), u in zip(pr.pools, result.mix.units, strict=True):
        if u:
            out.append((sh, pr.options[sh.workload][sh.system].perf(c)))
    return out


def _instances(n: int, perf: dict[str, Any]) -> tuple[int, int]:
    """The whole decode and prefill instances the plan packs into ``n`` units (as the plan's
    result counts a block's and a remainder's)."""
    load = max_load(n, **perf)
    if not load:
        return 0, 0
    got = plan_pools(load, **perf)
    return int(got["decode_instances"]), int(got["prefill_instances"])


def _first_year(result: FleetPlan) -> int:
    site = result.spec.site
    if site.needed_by is not None:
        return site.needed_by.year
    years = [s.available_from.year for s in result.spec.systems if s.available_from is not None]
    return min(years) if years else dt.date.today().year


def build_workbook(result: FleetPlan) -> Any:
    """An openpyxl Workbook of the plan (see the module's docstring)."""
    openpyxl = require_openpyxl()
    bk = _Book(openpyxl)
    wb, inp = bk.wb, bk.inp
    ws = wb.active
    ws.title = "Inputs"
    a = ws.append
    a(["moe-planner fleet plan", result.spec.name or result.spec.label])
    a(["Yellow cells are inputs (here and in Pools, Instances, Workloads, Limits); every other figure "
       "is a formula over them."])
    a([])
    a(["input", "value", "unit", "code name"])
    for c in ws[4]:
        c.font = bk.bold
    shared: dict[str, str] = {}
    first = _first_year(result)
    for key, label, value, unit, fmt in (
            ("years", "years", result.years, "years (capex amortised over; the cost counts this many years)",
             "#,##0.##"),
            ("usd_per_kwh", "energy price", result.usd_per_kwh, "USD per kWh", "$#,##0.000"),
            ("pue", "PUE", result.spec.pue, "facility W per IT W", "0.00"),
            ("utilisation", "average power", 1.0, "share of rated power drawn all year (100%: the CLI's)",
             "0.0%"),
            ("hours", "hours per year", HOURS_PER_YEAR, "h", "#,##0"),
            ("seconds", "seconds per year", None, "s (hours per year x 3,600)", "#,##0"),
            ("first_year", "first year", first, "calendar year the cash flow starts (site.needed_by, "
             "else the earliest available_from)", "0"),
            *((k, lab, v, u, "0.0%") for k, lab, v, u in CASH_INPUTS)):
        if key == "seconds":  # a formula of the hours: one figure for the length of a year
            value = f"={shared['hours']}*3600"
        a([label, value, unit, key])
        shared[key] = f"Inputs!$B${ws.max_row}"
        ws.cell(ws.max_row, 2).number_format = fmt
        ws.cell(ws.max_row, 4).font = bk.code
        if key not in ("hours", "seconds"):
            ws.cell(ws.max_row, 2).fill = inp
    a([])
    head = ["system", "unit", "usd_per_unit", "usd_per_gpu_hour", "watts_per_gpu", "gpus_per_unit",
            "max_units", "available_year"]
    a([LABELS[h] for h in head])
    for c in ws[ws.max_row]:
        c.font, c.alignment = bk.bold, bk.wrap
    a(head)
    for c in ws[ws.max_row]:
        c.font = bk.code
    sys_row: dict[str, int] = {}
    avail = {s.hardware: s.available_from for s in result.spec.systems}
    for s in result.problem.systems:
        avail[s.hw.name] = s.spec.available_from
    for r in result.systems.itertuples():
        if r.excluded:
            continue
        day = avail.get(r.system)
        a([r.system, r.unit, r.usd_per_unit, r.usd_per_gpu_hour, r.watts_per_gpu, int(r.gpus_per_unit),
           None if r.max_units is None or r.max_units != r.max_units else int(r.max_units),
           day.year if day is not None else None])
        sys_row[r.system] = ws.max_row
        for j, fmt in ((3, "$#,##0"), (4, "$#,##0.00"), (5, "#,##0"), (6, "#,##0"), (7, "#,##0"), (8, "0")):
            ws.cell(ws.max_row, j).fill = inp
            ws.cell(ws.max_row, j).number_format = fmt

    def sysref(name: str, field: str) -> str:
        return f"Inputs!${_col(head.index(field) + 1)}${sys_row[name]}"

    # -- pools
    perfs = _pool_perfs(result)
    wp = wb.create_sheet("Pools")
    ph = ["pool", "workload", "system", "units", "block_units", "blocks", "remainder_units", "block_tps",
          "remainder_tps", "capacity_tps", "decode_instances", "prefill_instances", "decode_tps_per_instance",
          "prefill_output_tps_per_instance", "tps_per_gpu", "gpus", "it_mw", "facility_mw", "capex_usd",
          "energy_usd_per_year", "rental_usd_per_year", "cost_owned_usd_per_year", "cost_rental_usd_per_year",
          "mean_tps", "mtok_per_year"]
    col = bk.header(wp, ph)
    first_pool, last = 3, max(len(result.pools) + 2, 3)

    def rng(name: str) -> str:
        return f"Pools!${col[name]}${first_pool}:${col[name]}${last}"

    # the Instances sheet's ranges (its rows are known before it is written)
    ih = ["pool", "workload", "system", "n_units", "decode_instances", "prefill_instances", "capacity_tps"]
    icol = {h: _col(i + 1) for i, h in enumerate(ih)}
    ilast = max(2 + sum(sh.block_units for sh, _ in perfs), 3)

    wh = ["workload", "model", "min_tps_user", "peak_tps", "mean_tps", "capacity_tps", "headroom",
          "usd_per_mtok_owned", "usd_per_mtok_rental"]
    wl_last = max(len(result.workloads) + 2, 3)

    def wrng(name: str) -> str:
        return f"Workloads!${_col(wh.index(name) + 1)}$3:${_col(wh.index(name) + 1)}${wl_last}"

    def irng(name: str) -> str:
        return f"Instances!${icol[name]}$3:${icol[name]}${ilast}"

    def look(name: str, pool: str, n: str) -> str:
        return f"SUMIFS({irng(name)},{irng('pool')},{pool},{irng('n_units')},{n})"

    prefill_of: list[bool] = []
    for p, r in enumerate(result.pools.itertuples()):
        i = wp.max_row + 1
        c = {h: f"{col[h]}{i}" for h in ph}
        pid = f"$A{i}"
        prefill = r.prefill_output_tps_per_instance is not None and r.prefill_output_tps_per_instance == \
            r.prefill_output_tps_per_instance  # (NaN: no prefill pool)
        prefill_of.append(prefill)
        wl = f"$B{i}"
        wp.append([
            f"P{p + 1}", r.workload, r.system, int(r.units), int(r.block_units),
            f"=INT({c['units']}/{c['block_units']})", f"={c['units']}-{c['blocks']}*{c['block_units']}",
            f"={look('capacity_tps', pid, c['block_units'])}",
            f"={look('capacity_tps', pid, c['remainder_units'])}",
            f"={c['blocks']}*{c['block_tps']}+{c['remainder_tps']}",
            f"={c['blocks']}*{look('decode_instances', pid, c['block_units'])}"
            f"+{look('decode_instances', pid, c['remainder_units'])}",
            f"={c['blocks']}*{look('prefill_instances', pid, c['block_units'])}"
            f"+{look('prefill_instances', pid, c['remainder_units'])}",
            float(r.decode_tps_per_instance), float(r.prefill_output_tps_per_instance) if prefill else 0.0,
            float(r.tps_per_gpu),
            f"={c['units']}*{sysref(r.system, 'gpus_per_unit')}",
            f"={c['gpus']}*{sysref(r.system, 'watts_per_gpu')}/1000000", f"={c['it_mw']}*{shared['pue']}",
            f"={c['units']}*{sysref(r.system, 'usd_per_unit')}",
            f"={c['facility_mw']}*1000*{shared['hours']}*{shared['usd_per_kwh']}*{shared['utilisation']}",
            f"={c['gpus']}*{sysref(r.system, 'usd_per_gpu_hour')}*{shared['hours']}",
            f"={c['capex_usd']}/{shared['years']}+{c['energy_usd_per_year']}",
            f"={c['rental_usd_per_year']}",
            f"=SUMIF({wrng('workload')},{wl},{wrng('mean_tps')})*{c['capacity_tps']}"
            f"/SUMIF({rng('workload')},{wl},{rng('capacity_tps')})",
            f"={c['mean_tps']}*{shared['seconds']}/1000000"])
        bk.fill(wp, i, col, ("units", "decode_tps_per_instance", "prefill_output_tps_per_instance"))

    # -- instances per n units
    wi = wb.create_sheet("Instances")
    bk.header(wi, ih)
    for p, ((sh, perf), r) in enumerate(zip(perfs, result.pools.itertuples(), strict=True)):
        prow = first_pool + p
        a_ref, b_ref = f"Pools!${col['decode_tps_per_instance']}${prow}", \
            f"Pools!${col['prefill_output_tps_per_instance']}${prow}"
        for n in range(1, sh.block_units + 1):
            i = wi.max_row + 1
            d, q = _instances(n, perf)
            cap = (f"=MIN(E{i}*{a_ref},F{i}*{b_ref})" if prefill_of[p] else f"=E{i}*{a_ref}")
            wi.append([f"P{p + 1}", r.workload, r.system, n, d, q, cap])
            bk.fill(wi, i, icol, ("decode_instances", "prefill_instances"))

    # -- workloads
    ww = wb.create_sheet("Workloads")
    wc = bk.header(ww, wh)
    for r in result.workloads.itertuples():
        i = ww.max_row + 1
        name = f"$A{i}"
        mean_tok = f"({wc['mean_tps']}{i}*{shared['seconds']}/1000000)"
        ww.append([r.workload, r.model, float(r.min_tps_user), float(r.peak_tps), float(r.mean_tps),
                   f"=SUMIF({rng('workload')},{name},{rng('capacity_tps')})",
                   f"={wc['capacity_tps']}{i}/{wc['peak_tps']}{i}-1",
                   f"=SUMIF({rng('workload')},{name},{rng('cost_owned_usd_per_year')})/{mean_tok}",
                   f"=SUMIF({rng('workload')},{name},{rng('cost_rental_usd_per_year')})/{mean_tok}"])
        bk.fill(ww, i, wc, ("peak_tps", "mean_tps"))
    bk.red_below_zero(ww, f"{wc['headroom']}3:{wc['headroom']}{max(ww.max_row, 3)}")

    # -- totals
    wt = wb.create_sheet("Totals")
    wt.append(["total", "value", "unit", "code name"])
    for c in wt[1]:
        c.font = bk.bold
    rows = [
        ("capex", "capex_usd", f"=SUM({rng('capex_usd')})", "USD"),
        ("energy per year", "energy_usd_per_year", f"=SUM({rng('energy_usd_per_year')})", "USD per year"),
        ("rental per year", "rental_usd_per_year", f"=SUM({rng('rental_usd_per_year')})", "USD per year"),
        ("owned cost over the years", "cost_owned_usd", f"=B2+B3*{shared['years']}",
         "USD over the years: capex + energy"),
        ("rental cost over the years", "cost_rental_usd", f"=B4*{shared['years']}",
         "USD over the years: rental"),
        ("IT power", "it_mw", f"=SUM({rng('it_mw')})", "MW"),
        ("facility power", "facility_mw", f"=SUM({rng('facility_mw')})", "MW (IT x PUE)"),
        ("GPUs", "gpus", f"=SUM({rng('gpus')})", "GPUs"),
        ("units", "units", f"=SUM({rng('units')})", "units"),
    ]
    for name in sys_row:
        rows.append((f"units of {name}", f"units_{name}",
                     f"=SUMIF({rng('system')},\"{name}\",{rng('units')})", "units"))
    total_row = {}
    for label, code, formula, unit in rows:
        wt.append([label, formula, unit, code])
        total_row[code] = wt.max_row
        fmt = _fmt(code)
        if fmt:
            wt.cell(wt.max_row, 2).number_format = fmt
        wt.cell(wt.max_row, 4).font = bk.code

    # -- limits: the ones the plan reports, as check cells
    wl_ = wb.create_sheet("Limits")
    lh = ["limit", "field", "used", "limit_value", "left", "unit", "within", "binding", "saving_lifted_usd",
          "saving_one_more_usd"]
    lc = bk.header(wl_, lh)
    fmt_of = {"USD": "$#,##0", "MW": "#,##0.000"}
    for lim in result.limits.itertuples():
        i = wl_.max_row + 1
        if lim.field == "site.facility_mw":
            used, cap = f"=Totals!$B${total_row['facility_mw']}", float(lim.limit_value)
        elif lim.field == "site.capex_budget_usd":
            used, cap = f"=Totals!$B${total_row['capex_usd']}", float(lim.limit_value)
        else:  # supply of a system: its max_units on the Inputs sheet
            name = lim.limit.removeprefix("supply of ")
            used, cap = f"=SUMIF({rng('system')},\"{name}\",{rng('units')})", f"={sysref(name, 'max_units')}"
        one_more = lim.saving_one_more_usd
        wl_.append([lim.limit, lim.field, used, cap, f"=D{i}-C{i}", lim.unit,
                    f"=IF(E{i}<0,\"OVER\",\"yes\")", "yes" if lim.binding else "no",
                    _num(lim.saving_lifted_usd), _num(one_more)])
        if not str(cap).startswith("="):
            wl_[f"D{i}"].fill = inp
        if lim.binding:
            for cell in wl_[i]:
                cell.font = bk.bold
        for k in ("used", "limit_value", "left"):
            wl_[f"{lc[k]}{i}"].number_format = fmt_of.get(lim.unit, "#,##0")
    n_lim = wl_.max_row
    bk.red_below_zero(wl_, f"E3:E{max(n_lim, 3)}")
    from openpyxl.formatting.rule import CellIsRule

    wl_.conditional_formatting.add(f"G3:G{max(n_lim, 3)}",
                                   CellIsRule(operator="equal", formula=['"OVER"'], fill=bk.red))
    wl_.append([])
    wl_.append(["binding (the solver, at the initial inputs)",
                ", ".join(result.binding) if result.binding else "none; the demand alone sets the mix"])
    wl_.cell(wl_.max_row, 1).font = bk.bold
    wl_.append(["Which limit binds is the solver's answer: lifting it lowers the cost.  The sheet cannot "
                "re-solve; 'Within it now?' checks the current inputs against each limit."])

    _cash_flow(bk, result, shared, sys_row, sysref, rng, total_row)

    # -- sources
    wsrc = wb.create_sheet("Sources")
    wsrc.append(["system", "figure", "value", "unit", "source"])
    for c in wsrc[1]:
        c.font = bk.bold
    shared_done = False
    pr = result.problem
    for name, figs in result.figures.items():
        for key in ("price_per_unit", "price_per_gpu_hour", "power_per_gpu"):
            f = figs[key]
            wsrc.append([name, key, f["value"], f["unit"], f["source"]])
        hw = next(s.hw for s in pr.systems if s.hw.name == name)
        src = hw.sources.get("system.gpus_per_unit", "no source recorded in the spec")
        wsrc.append([name, "gpus_per_unit", hw.gpus_per_unit, "GPUs per " + hw.unit,
                     f"{src} [{hw.path or hw.name}: system.gpus_per_unit]"])
        if not shared_done:
            for key in ("pue", "usd_per_kwh", "years"):
                f = figs[key]
                wsrc.append(["(all)", key, f["value"], f["unit"], f["source"]])
            shared_done = True
    for key, _label, value, unit in CASH_INPUTS:
        wsrc.append(["(all)", key, value, unit, "the workbook's initial input: the value at which the cash "
                     "flow reproduces the CLI's cost; set your own"])
    for r in result.pools.itertuples():
        wsrc.append([r.system, f"tps_per_gpu for {r.workload}", float(r.tps_per_gpu),
                     "output tokens/s per GPU",
                     f"moe-planner frontier: {r.model} on {r.system}, {r.serving} serving, at >= "
                     f"{r.min_tps_user:g} tokens/s/user ({r.weights}, {int(r.instance_gpus)}-GPU decode "
                     "instance"
                     + (f", {int(r.prefill_instance_gpus)}-GPU prefill instance"
                        if r.prefill_instance_gpus == r.prefill_instance_gpus and r.prefill_instance_gpus
                        else "") + ")"])
    for sheet in (wp, wi, ww, wl_):
        _formats(sheet, 2)
    _print_setup(wb)
    return wb


def _num(v: Any) -> float | None:
    return None if v is None or v != v else float(v)


def _cash_flow(bk: _Book, result: FleetPlan, shared: dict[str, str], sys_row: dict[str, int],
               sysref: Any, rng: Any, total_row: dict[str, int]) -> None:
    """The ``Cash flow`` sheet: per system its first year in service and yearly figures, then by
    year capex (in that first year), network, energy, maintenance, rental and output in service,
    discounted at the input rate; NPV and levelised $/Mtok."""
    wf = bk.wb.create_sheet("Cash flow")
    sh = ["system", "in_service_year", "offset", "capex_usd", "network_capex_usd", "energy_usd_per_year",
          "maintenance_usd_per_year", "rental_usd_per_year", "mtok_per_year"]
    sc = bk.header(wf, sh)
    names = list(sys_row)
    srow: dict[str, int] = {}
    for name in names:
        i = wf.max_row + 1
        srow[name] = i

        def by(field: str, name: str = name) -> str:
            return f"SUMIF({rng('system')},\"{name}\",{rng(field)})"

        wf.append([name, f"=MAX({shared['first_year']},{sysref(name, 'available_year')})",
                   f"=B{i}-{shared['first_year']}", f"={by('capex_usd')}", f"=D{i}*{shared['network_share']}",
                   f"={by('energy_usd_per_year')}", f"=D{i}*{shared['maintenance_share']}",
                   f"={by('rental_usd_per_year')}", f"={by('mtok_per_year')}"])
    s_first, s_last = 3, max(wf.max_row, 3)
    _formats_rows(wf, sc, sh, s_first, s_last)
    # the years: enough rows for every system's years in service (a longer horizon: copy the last row)
    offsets = [max(0, (result.problem.systems[j].spec.available_from.year - _first_year(result))
                   if result.problem.systems[j].spec.available_from else 0)
               for j in range(len(result.problem.systems)) if result.problem.systems[j].hw.name in sys_row]
    n_years = int(math.ceil(max(offsets, default=0) + result.years - 1e-9)) + 2
    yh = ["year_index", "year", *[f"in_service_{n}" for n in names], "capex_usd", "network_usd",
          "energy_usd", "maintenance_usd", "cost_owned_usd", "rental_usd", "mtok", "discount_factor",
          "pv_owned_usd", "pv_rental_usd", "pv_mtok"]
    labels = {f"in_service_{n}": f"{n}: share of the year in service" for n in names}
    top = wf.max_row + 2  # (a blank row above; cells written by position, so appends follow them)
    for j, h in enumerate(yh, start=1):
        wf.cell(top, j, labels.get(h, LABELS.get(h, h)))
        wf.cell(top + 1, j, h)
    for c in wf[top]:
        c.font, c.alignment = bk.bold, bk.wrap
    for c in wf[top + 1]:
        c.font = bk.code
    yc = {h: _col(i + 1) for i, h in enumerate(yh)}
    y_first = top + 2
    sr = {h: f"${sc[h]}${s_first}:${sc[h]}${s_last}" for h in sh}
    for k in range(n_years):
        i = y_first + k
        share = {n: f"{yc[f'in_service_{n}']}{i}" for n in names}

        def over(field: str, i: int = i, share: dict[str, str] = share) -> str:
            return "+".join(f"{share[n]}*${sc[field]}${srow[n]}" for n in names) or "0"

        row: list[Any] = [k, f"={shared['first_year']}+A{i}"]
        for n in names:
            off = f"${sc['offset']}${srow[n]}"
            row.append(f"=MAX(0,MIN(A{i}+1,{off}+{shared['years']})-MAX(A{i},{off}))")
        c = {h: f"{yc[h]}{i}" for h in yh}
        row += [f"=SUMIF({sr['offset']},A{i},{sr['capex_usd']})",
                f"=SUMIF({sr['offset']},A{i},{sr['network_capex_usd']})",
                f"={over('energy_usd_per_year')}", f"={over('maintenance_usd_per_year')}",
                f"={c['capex_usd']}+{c['network_usd']}+{c['energy_usd']}+{c['maintenance_usd']}",
                f"={over('rental_usd_per_year')}", f"={over('mtok_per_year')}",
                f"=1/(1+{shared['discount_rate']})^A{i}", f"={c['cost_owned_usd']}*{c['discount_factor']}",
                f"={c['rental_usd']}*{c['discount_factor']}", f"={c['mtok']}*{c['discount_factor']}"]
        wf.append(row)
    y_last = y_first + n_years - 1
    _formats_rows(wf, yc, yh, y_first, y_last)
    for n in names:
        for i in range(y_first, y_last + 1):
            wf[f"{yc[f'in_service_{n}']}{i}"].number_format = "0.00"

    def tot(h: str) -> str:
        return f"SUM({yc[h]}{y_first}:{yc[h]}{y_last})"

    wf.append([])
    res = [("owned cost, undiscounted", "cost_owned_usd", f"={tot('cost_owned_usd')}", "$#,##0",
            "USD (at the initial inputs: the CLI's cost, capex + energy over the years)"),
           ("NPV of the owned cost", "npv_owned_usd", f"={tot('pv_owned_usd')}", "$#,##0", "USD"),
           ("rental, undiscounted", "cost_rental_usd", f"={tot('rental_usd')}", "$#,##0", "USD"),
           ("NPV of the rental", "npv_rental_usd", f"={tot('pv_rental_usd')}", "$#,##0", "USD"),
           ("output, discounted", "pv_mtok", f"={tot('pv_mtok')}", "#,##0", "M tokens (at the mean load)"),
           ("levelised cost, owned", "levelised_usd_per_mtok_owned",
            f"={tot('pv_owned_usd')}/{tot('pv_mtok')}", "$#,##0.0000",
            "USD per M output tokens: discounted cost / discounted tokens"),
           ("levelised cost, rental", "levelised_usd_per_mtok_rental",
            f"={tot('pv_rental_usd')}/{tot('pv_mtok')}", "$#,##0.0000", "USD per M output tokens"),
           ("the rows cover the horizon", "rows_cover_horizon",
            f"=IF(MAX({sr['offset']})+{shared['years']}<=A{y_last}+1,\"yes\",\"NO: copy the last year's row "
            "down\")", None, "every system's years in service fall within the rows above")]
    for label, code, formula, fmt, unit in res:
        wf.append([label, formula, unit, code])
        wf.cell(wf.max_row, 1).font = bk.bold
        wf.cell(wf.max_row, 4).font = bk.code
        if fmt:
            wf.cell(wf.max_row, 2).number_format = fmt
    wf.append(["Capex falls in each system's first year in service (the later of the first year and the "
               "year it is available from); each system then runs the plan's years (a part year pro rata). "
               "Year k is discounted by 1/(1+rate)^k."])


def _formats_rows(ws: Any, cols: dict[str, str], codes: list[str], lo: int, hi: int) -> None:
    for h in codes:
        fmt = _fmt(h)
        if fmt:
            for i in range(lo, hi + 1):
                ws[f"{cols[h]}{i}"].number_format = fmt


def _print_setup(wb: Any) -> None:
    """Print: landscape, every column on one page's width, the header rows repeated; widths that
    fit the labels (headers wrap)."""
    for sheet in wb.worksheets:
        sheet.page_setup.orientation = "landscape"
        sheet.page_setup.paperSize = sheet.PAPERSIZE_A4
        sheet.page_setup.fitToWidth = 1
        sheet.page_setup.fitToHeight = 0
        sheet.sheet_properties.pageSetUpPr.fitToPage = True
        sheet.print_options.gridLines = True
        sheet.page_margins.left = sheet.page_margins.right = 0.4
        sheet.print_title_rows = "1:2" if sheet.title in ("Pools", "Instances", "Workloads", "Limits",
                                                          "Cash flow") else "1:1"
        tables = sheet.title in ("Pools", "Instances", "Workloads", "Limits", "Cash flow")
        for column in sheet.columns:
            cells = [c for c in column if c.value is not None and not str(c.value).startswith("=")
                     and not (tables and c.row == 1)]
            long = [len(str(c.value)) for c in cells if len(str(c.value)) <= 60]
            width = max(long, default=10)
            sheet.column_dimensions[column[0].column_letter].width = min(max(width + 2, 11), 40)


def write_workbook(result: FleetPlan, path: str) -> None:
    """Save the plan's workbook to ``path`` (used through :func:`planner.outputs.write_outputs`)."""
    build_workbook(result).save(path)
