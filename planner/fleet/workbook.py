"""The plan as a live spreadsheet (openpyxl): totals are formulas over input cells, so finance can
change a price, the energy price, PUE, the years, the units or instances of a pool and see every
total move.

Sheets: ``Inputs`` (the shared figures and, per system, its unit price, GPU-hour price, watts
per GPU, GPUs per unit, supply limit), ``Pools`` (per pool: units, the instances of each block
of units and of the remainder, and each instance's output as inputs; GPUs, capacity, power and
money as formulas; tokens/s per GPU for reference), ``Workloads`` (demand as inputs; capacity,
headroom and $/Mtok as formulas), ``Totals`` (formulas), ``Sources`` (where every price and
spec figure comes from).  Only ``+ - * /``, ``SUM``, ``SUMIF``, ``MIN`` and cell references are used.

A pool's capacity counts whole instances, as the plan's does: per block of units and for the
remainder, the lesser of its decode instances' output and its prefill instances' (output tokens
their prompts allow).
"""

from __future__ import annotations

from typing import Any

from planner.economics.cost import HOURS_PER_YEAR
from planner.errors import SpecError
from planner.fleet.plan import FleetPlan

INSTALL_HINT = "openpyxl for --xlsx (pip install 'moe-planner[xlsx]' or pip install openpyxl)"


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
    if name in ("units", "gpus", "blocks") or name.endswith("_instances"):
        return _FORMATS["count"]
    return None


def _formats(*sheets: Any) -> None:
    """Each column of the Pools, Workloads and Totals sheets in its format (by its name; Totals by
    each row's name)."""
    for sheet in sheets:
        if sheet.title == "Totals":
            for row in sheet.iter_rows(min_row=2):
                fmt = _fmt(str(row[0].value))
                if fmt:
                    row[1].number_format = fmt
            continue
        for column in sheet.columns:
            fmt = _fmt(str(column[0].value))
            if fmt:
                for c in column[1:]:
                    c.number_format = fmt


def build_workbook(result: FleetPlan) -> Any:
    """An openpyxl Workbook of the plan (see the module's docstring)."""
    openpyxl = require_openpyxl()
    from openpyxl.styles import Font, PatternFill

    bold = Font(bold=True)
    inp = PatternFill("solid", fgColor="FFF2CC")  # input cells: pale yellow
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Inputs"
    pr = result.problem
    a = ws.append
    a(["moe-planner fleet plan", result.spec.name or result.spec.label])
    a(["Yellow cells are inputs; every total in Pools, Workloads and Totals is a formula over them."])
    a([])
    a(["input", "value", "unit"])
    shared = {}
    for key, label, value, unit in (
            ("years", "years", result.years, "years (capex amortised over; the cost counts this many years)"),
            ("usd_per_kwh", "energy price", result.usd_per_kwh, "USD per kWh"),
            ("pue", "PUE", result.spec.pue, "facility W per IT W"),
            ("hours", "hours per year", HOURS_PER_YEAR, "h"),
            ("seconds", "seconds per year", None, "s (hours per year x 3,600)")):
        if key == "seconds":  # a formula of the hours: one figure for the length of a year
            value = f"={shared['hours']}*3600"
        a([label, value, unit])
        shared[key] = f"Inputs!$B${ws.max_row}"
        ws.cell(ws.max_row, 2).number_format = {"usd_per_kwh": "$#,##0.000", "pue": "0.00"}.get(key, "#,##0")
        if key not in ("hours", "seconds"):
            ws.cell(ws.max_row, 2).fill = inp
    a([])
    head = ["system", "unit", "usd_per_unit", "usd_per_gpu_hour", "watts_per_gpu", "gpus_per_unit",
            "max_units"]
    a(head)
    for c in ws[ws.max_row]:
        c.font = bold
    sys_row: dict[str, int] = {}
    for r in result.systems.itertuples():
        if r.excluded:
            continue
        a([r.system, r.unit, r.usd_per_unit, r.usd_per_gpu_hour, r.watts_per_gpu, int(r.gpus_per_unit),
           None if r.max_units is None or r.max_units != r.max_units else int(r.max_units)])
        sys_row[r.system] = ws.max_row
        # inputs a formula reads (max_units is the plan's limit: no formula here reads it)
        for j, fmt in ((3, "$#,##0"), (4, "$#,##0.00"), (5, "#,##0"), (6, "#,##0")):
            ws.cell(ws.max_row, j).fill = inp
            ws.cell(ws.max_row, j).number_format = fmt

    def sysref(name: str, field: str) -> str:
        return f"Inputs!${_col(head.index(field) + 1)}${sys_row[name]}"

    # -- pools
    wp = wb.create_sheet("Pools")
    ph = ["workload", "system", "units", "tps_per_gpu", "gpus", "capacity_tps",
          "blocks", "block_decode_instances", "block_prefill_instances", "remainder_decode_instances",
          "remainder_prefill_instances", "decode_tps_per_instance", "prefill_output_tps_per_instance",
          "it_mw", "facility_mw", "capex_usd", "energy_usd_per_year", "rental_usd_per_year",
          "cost_owned_usd_per_year", "cost_rental_usd_per_year"]
    wp.append(ph)
    for c in wp[1]:
        c.font = bold
    col = {h: _col(i + 1) for i, h in enumerate(ph)}
    for r in result.pools.itertuples():
        i = wp.max_row + 1
        u, g = f"{col['units']}{i}", f"{col['gpus']}{i}"
        it = f"{col['it_mw']}{i}"
        fac = f"{col['facility_mw']}{i}"
        a, b = f"{col['decode_tps_per_instance']}{i}", f"{col['prefill_output_tps_per_instance']}{i}"
        bd, bp = f"{col['block_decode_instances']}{i}", f"{col['block_prefill_instances']}{i}"
        rd, rp = f"{col['remainder_decode_instances']}{i}", f"{col['remainder_prefill_instances']}{i}"
        n = f"{col['blocks']}{i}"
        prefill = r.prefill_output_tps_per_instance is not None and r.prefill_output_tps_per_instance == \
            r.prefill_output_tps_per_instance  # (NaN: no prefill pool)
        cap = (f"={n}*MIN({bd}*{a},{bp}*{b})+MIN({rd}*{a},{rp}*{b})" if prefill
               else f"=({n}*{bd}+{rd})*{a}")
        wp.append([
            r.workload, r.system, int(r.units), float(r.tps_per_gpu),
            f"={u}*{sysref(r.system, 'gpus_per_unit')}", cap, int(r.blocks), int(r.block_decode_instances),
            int(r.block_prefill_instances), int(r.remainder_decode_instances),
            int(r.remainder_prefill_instances),
            float(r.decode_tps_per_instance), float(r.prefill_output_tps_per_instance) if prefill else 0.0,
            f"={g}*{sysref(r.system, 'watts_per_gpu')}/1000000", f"={it}*{shared['pue']}",
            f"={u}*{sysref(r.system, 'usd_per_unit')}",
            f"={fac}*1000*{shared['hours']}*{shared['usd_per_kwh']}",
            f"={g}*{sysref(r.system, 'usd_per_gpu_hour')}*{shared['hours']}",
            f"={col['capex_usd']}{i}/{shared['years']}+{col['energy_usd_per_year']}{i}",
            f"={col['rental_usd_per_year']}{i}"])
        for name in ("units", "blocks", "block_decode_instances", "block_prefill_instances",
                     "remainder_decode_instances", "remainder_prefill_instances", "decode_tps_per_instance",
                     "prefill_output_tps_per_instance"):
            wp.cell(i, ph.index(name) + 1).fill = inp   # (no formula reads tps_per_gpu: not an input)
    last = max(wp.max_row, 2)

    def rng(name: str) -> str:
        return f"Pools!${col[name]}$2:${col[name]}${last}"

    # -- workloads
    ww = wb.create_sheet("Workloads")
    wh = ["workload", "model", "min_tps_user", "peak_tps", "mean_tps", "capacity_tps", "headroom",
          "usd_per_mtok_owned", "usd_per_mtok_rental"]
    ww.append(wh)
    for c in ww[1]:
        c.font = bold
    wc = {h: _col(i + 1) for i, h in enumerate(wh)}
    for r in result.workloads.itertuples():
        i = ww.max_row + 1
        name = f"$A{i}"
        mean_tok = f"({wc['mean_tps']}{i}*{shared['seconds']}/1000000)"
        ww.append([r.workload, r.model, float(r.min_tps_user), float(r.peak_tps), float(r.mean_tps),
                   f"=SUMIF({rng('workload')},{name},{rng('capacity_tps')})",
                   f"={wc['capacity_tps']}{i}/{wc['peak_tps']}{i}-1",
                   f"=SUMIF({rng('workload')},{name},{rng('cost_owned_usd_per_year')})/{mean_tok}",
                   f"=SUMIF({rng('workload')},{name},{rng('cost_rental_usd_per_year')})/{mean_tok}"])
        ww.cell(i, 4).fill = inp
        ww.cell(i, 5).fill = inp

    # -- totals
    wt = wb.create_sheet("Totals")
    wt.append(["total", "value", "unit"])
    for c in wt[1]:
        c.font = bold
    rows = [
        ("capex_usd", f"=SUM({rng('capex_usd')})", "USD"),
        ("energy_usd_per_year", f"=SUM({rng('energy_usd_per_year')})", "USD per year"),
        ("rental_usd_per_year", f"=SUM({rng('rental_usd_per_year')})", "USD per year"),
        ("cost_owned_usd", f"=B2+B3*{shared['years']}", "USD over the years: capex + energy"),
        ("cost_rental_usd", f"=B4*{shared['years']}", "USD over the years: rental"),
        ("it_mw", f"=SUM({rng('it_mw')})", "MW"),
        ("facility_mw", f"=SUM({rng('facility_mw')})", "MW (IT x PUE)"),
        ("gpus", f"=SUM({rng('gpus')})", "GPUs"),
        ("units", f"=SUM({rng('units')})", "units"),
    ]
    for name in sys_row:
        rows.append((f"units_{name}", f"=SUMIF({rng('system')},\"{name}\",{rng('units')})", "units"))
    site = result.spec.site
    if site.facility_mw is not None:
        rows.append(("site_facility_mw", site.facility_mw, "MW, the site's limit (input)"))
        rows.append(("power_left_mw", f"=B{len(rows) + 1}-B8", "MW"))
    for r in rows:
        wt.append(list(r))
    if site.facility_mw is not None:
        wt.cell(len(rows), 2).fill = inp
    # -- sources
    wsrc = wb.create_sheet("Sources")
    wsrc.append(["system", "figure", "value", "unit", "source"])
    for c in wsrc[1]:
        c.font = bold
    shared_done = False
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
    for r in result.pools.itertuples():
        wsrc.append([r.system, f"tps_per_gpu for {r.workload}", float(r.tps_per_gpu),
                     "output tokens/s per GPU",
                     f"moe-planner frontier: {r.model} on {r.system}, {r.serving} serving, at >= "
                     f"{r.min_tps_user:g} tokens/s/user ({r.weights}, {int(r.instance_gpus)}-GPU decode "
                     "instance"
                     + (f", {int(r.prefill_instance_gpus)}-GPU prefill instance"
                        if r.prefill_instance_gpus == r.prefill_instance_gpus and r.prefill_instance_gpus
                        else "") + ")"])
    _formats(wp, ww, wt)
    for sheet in wb.worksheets:
        # print: landscape, every column on one page's width, the header row repeated
        sheet.page_setup.orientation = "landscape"
        sheet.page_setup.paperSize = sheet.PAPERSIZE_A4
        sheet.page_setup.fitToWidth = 1
        sheet.page_setup.fitToHeight = 0
        sheet.sheet_properties.pageSetUpPr.fitToPage = True
        sheet.print_title_rows = "1:1"
        for column in sheet.columns:
            width = max(len(str(c.value)) if c.value is not None and not str(c.value).startswith("=") else 12
                        for c in column)
            sheet.column_dimensions[column[0].column_letter].width = min(max(width + 2, 10), 60)
    return wb


def write_workbook(result: FleetPlan, path: str) -> None:
    """Save the plan's workbook to ``path`` (used through :func:`planner.outputs.write_outputs`)."""
    build_workbook(result).save(path)
