"""The plan's workbook: its formulas, read back with openpyxl and evaluated by a small evaluator
(cell references, ranges, + - * / ^, comparisons, SUM, SUMIF, SUMIFS, MIN, MAX, INT, IF),
reproduce the plan's figures at the initial inputs and move when an input cell changes: a unit
price, PUE, the years, a pool's units (capacity, headroom and cost together), a limit, the
discount rate."""

from __future__ import annotations

import re

import pytest

from planner.fleet.plan import plan

openpyxl = pytest.importorskip("openpyxl")

CHAT = dict(name="chat", model="llama-3.1-8b", min_tps_user=50, demand_tps=3.0e6, isl=1024, osl=512,
            serving="aggregated", search={"max_gpus": 8})
BATCH = dict(name="batch", model="llama-3.1-8b", min_tps_user=10, demand_tps=1.0e6, isl=1024, osl=1024,
             serving="aggregated", search={"max_gpus": 8})

CF = "owned cost, undiscounted"  # the Cash flow's first result row
_REF = re.compile(r"(?:(\w+)!)?\$?([A-Z]{1,3})\$?(\d+)(?::\$?([A-Z]{1,3})\$?(\d+))?")


def _flat(xs) -> list[float]:
    out = []
    for x in xs:
        out.extend(_flat(x) if isinstance(x, list) else [float(x or 0.0)])
    return out


def _sumifs(total, *pairs):
    """SUMIFS(sum range, criteria range 1, criterion 1, ...): equality criteria."""
    return sum(float(x or 0.0) for i, x in enumerate(total)
               if all(pairs[j][i] == pairs[j + 1] for j in range(0, len(pairs), 2)))


class Evaluator:
    """Evaluates the workbook's formulas: references (``B2``, ``Inputs!$B$5``), ranges
    (``Pools!$C$2:$C$9``), numbers, strings, + - * / ^, comparisons, SUM, SUMIF, SUMIFS, MIN,
    MAX, INT and IF."""

    def __init__(self, wb) -> None:
        self.wb = wb
        self.memo: dict[tuple[str, str], object] = {}

    def value(self, sheet: str, ref: str):
        key = (sheet, ref)
        if key not in self.memo:
            v = self.wb[sheet][ref].value
            self.memo[key] = self.formula(sheet, v[1:]) if isinstance(v, str) and v.startswith("=") else v
        return self.memo[key]

    def cells(self, sheet: str, a: str, b: str) -> list:
        from openpyxl.utils import get_column_letter, range_boundaries

        c1, r1, c2, r2 = range_boundaries(f"{a}:{b}")
        return [self.value(sheet, f"{get_column_letter(c)}{r}") for r in range(r1, r2 + 1)
                for c in range(c1, c2 + 1)]

    def formula(self, sheet: str, text: str):
        parts = re.split(r'("[^"]*")', text)  # keep string literals apart
        out = []
        for p in parts:
            if p.startswith('"'):
                out.append(repr(p[1:-1]))
                continue

            def sub(m: re.Match) -> str:
                sh = m.group(1) or sheet
                if m.group(4):
                    return f"_R({sh!r}, '{m.group(2)}{m.group(3)}', '{m.group(4)}{m.group(5)}')"
                return f"_V({sh!r}, '{m.group(2)}{m.group(3)}')"

            p = _REF.sub(sub, p)
            if re.search(r"[^\w\s().,+\-*/'\"<>=^]", p):
                raise AssertionError(f"unexpected operator in formula {text!r}")
            p = p.replace("^", "**").replace("<>", "!=")
            p = re.sub(r"(?<![<>!=])=(?!=)", "==", p)
            out.append(p)
        env = dict(_V=lambda s, r: self.value(s, r) or 0.0, _R=self.cells,
                   SUM=lambda *xs: sum(_flat(xs)), MIN=lambda *xs: min(_flat(xs)),
                   MAX=lambda *xs: max(_flat(xs)), INT=lambda x: float(int(x // 1)),
                   IF=lambda c, a, b: a if c else b,
                   SUMIF=lambda crit, want, xs: sum(float(x or 0.0) for c, x in zip(crit, xs, strict=True)
                                                    if c == want),
                   SUMIFS=_sumifs)
        try:
            return eval("".join(out), {"__builtins__": {}}, env)  # noqa: S307 -- the test's own formulas
        except (TypeError, ZeroDivisionError) as exc:
            raise AssertionError(f"{sheet}: ={text}: {exc}") from exc


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    from planner.fleet.workbook import write_workbook

    r = plan(workloads=[CHAT, BATCH], systems=[dict(hardware="gb200-nvl72", max_units=1),
                                               dict(hardware="hgx-h200")], site=dict(facility_mw=5))
    path = tmp_path_factory.mktemp("xlsx") / "plan.xlsx"
    write_workbook(r, str(path))
    return r, path


def _named(wb, sheet: str, start: str | None = None) -> dict[str, float]:
    """A row-wise sheet's values by code name (column D): Totals, the Cash flow's results (from
    the row labelled ``start``)."""
    ev = Evaluator(wb)
    ws = wb[sheet]
    lo = _find(ws, 1, start) if start else 2
    return {ws.cell(i, 4).value: ev.value(sheet, f"B{i}") for i in range(lo, ws.max_row + 1)
            if ws.cell(i, 4).value and ws.cell(i, 2).value is not None}


def _totals(wb) -> dict[str, float]:
    return _named(wb, "Totals")


def _find(ws, col: int, value) -> int:
    return next(i for i in range(1, ws.max_row + 1) if ws.cell(i, col).value == value)


def _table(wb, sheet: str) -> tuple[Evaluator, dict[str, str]]:
    """An evaluator and the sheet's columns by code name (row 2 holds the code names)."""
    from openpyxl.utils import get_column_letter

    return Evaluator(wb), {c.value: get_column_letter(c.column) for c in wb[sheet][2] if c.value}


def test_formulas_reproduce_the_plan(book):
    r, path = book
    wb = openpyxl.load_workbook(path)  # formulas, not cached values
    assert str(wb["Totals"]["B2"].value).startswith("=SUM(")
    t = _totals(wb)
    for key in ("capex_usd", "energy_usd_per_year", "rental_usd_per_year", "cost_owned_usd",
                "cost_rental_usd", "it_mw", "facility_mw", "gpus", "units"):
        assert t[key] == pytest.approx(r.totals[key], rel=1e-12), key
    assert t["units_gb200-nvl72"] == 1
    ev, wc = _table(wb, "Workloads")
    ws = wb["Workloads"]
    for w in r.workloads.itertuples():
        i = _find(ws, 1, w.workload)
        # the sheet's capacity counts whole instances, as the plan's does: one meaning, one figure
        assert ev.value("Workloads", f"{wc['capacity_tps']}{i}") == pytest.approx(w.capacity_tps, rel=1e-9)
        assert ev.value("Workloads", f"{wc['headroom']}{i}") == pytest.approx(w.headroom, rel=1e-9, abs=1e-12)
        assert ev.value("Workloads", f"{wc['usd_per_mtok_owned']}{i}") == pytest.approx(w.usd_per_mtok_owned,
                                                                                        rel=1e-12)
        assert ev.value("Workloads", f"{wc['usd_per_mtok_rental']}{i}") == pytest.approx(
            w.usd_per_mtok_rental, rel=1e-12)
    ev, pc = _table(wb, "Pools")
    for k, p in enumerate(r.pools.itertuples()):
        i = 3 + k
        for key in ("capacity_tps", "blocks", "remainder_units", "decode_instances", "prefill_instances",
                    "gpus", "capex_usd", "energy_usd_per_year", "mean_tps"):
            want = p.mean_share_tps if key == "mean_tps" else getattr(p, key)
            assert ev.value("Pools", f"{pc[key]}{i}") == pytest.approx(float(want), rel=1e-9), key


def test_units_drive_capacity_headroom_and_cost(book):
    """Fewer units in a pool: fewer whole blocks, less capacity (as the plan counts it), less
    headroom (red below zero), less capex and energy; the totals follow."""
    from planner.economics.pools import max_load
    from planner.fleet.workbook import _pool_perfs

    r, path = book
    wb = openpyxl.load_workbook(path)
    before = _totals(wb)
    k = next(k for k, p in enumerate(r.pools.itertuples()) if p.system == "hgx-h200" and p.units > 3)
    p = r.pools.iloc[k]
    sh, perf = _pool_perfs(r)[k]
    i = 3 + k
    _, pc = _table(wb, "Pools")
    for cut in (1, 2, int(p.units) - 1):
        wb2 = openpyxl.load_workbook(path)
        new = int(p.units) - cut
        wb2["Pools"][f"{pc['units']}{i}"].value = new
        ev = Evaluator(wb2)
        blocks, rem = divmod(new, sh.block_units)
        want = blocks * max_load(sh.block_units, **perf) + (max_load(rem, **perf) if rem else 0.0)
        cap = ev.value("Pools", f"{pc['capacity_tps']}{i}")
        assert cap == pytest.approx(want, rel=1e-9)
        assert cap < p.capacity_tps
        wl = r.workloads.set_index("workload").loc[p.workload]
        ws = wb2["Workloads"]
        _, wc = _table(wb2, "Workloads")
        j = _find(ws, 1, p.workload)
        cap_w = ev.value("Workloads", f"{wc['capacity_tps']}{j}")
        assert cap_w == pytest.approx(wl.capacity_tps - p.capacity_tps + want, rel=1e-9)
        headroom = ev.value("Workloads", f"{wc['headroom']}{j}")
        assert headroom == pytest.approx(cap_w / wl.peak_tps - 1, rel=1e-9)
        after = _totals(wb2)
        price = r.systems.set_index("system").usd_per_unit["hgx-h200"]
        assert after["capex_usd"] == pytest.approx(before["capex_usd"] - cut * price)
        assert after["gpus"] == before["gpus"] - cut * 8
        assert after["energy_usd_per_year"] < before["energy_usd_per_year"]
    # enough cut to go short: the headroom is negative and its cell has a red rule below zero
    assert cap_w < wl.peak_tps
    rules = wb["Workloads"].conditional_formatting
    assert any(wc["headroom"] in str(cf.sqref) and any(rule.operator == "lessThan" for rule in cf.rules)
               for cf in rules)


def test_limits_as_check_cells_with_the_binding_one(book):
    r, path = book
    wb = openpyxl.load_workbook(path)
    ev, lc = _table(wb, "Limits")
    ws = wb["Limits"]
    assert len(r.limits) == 2   # supply of gb200-nvl72, site power
    for lim in r.limits.itertuples():
        i = _find(ws, 1, lim.limit)
        assert ev.value("Limits", f"{lc['used']}{i}") == pytest.approx(lim.used, rel=1e-12)
        assert ev.value("Limits", f"{lc['limit_value']}{i}") == pytest.approx(lim.limit_value)
        assert ev.value("Limits", f"{lc['left']}{i}") == pytest.approx(lim.left, rel=1e-9, abs=1e-12)
        assert ev.value("Limits", f"{lc['within']}{i}") == "yes"
        assert ws[f"{lc['binding']}{i}"].value == ("yes" if lim.binding else "no")
    binding = ws.cell(_find(ws, 1, "binding (the solver, at the initial inputs)"), 2).value
    assert binding == (", ".join(r.binding) if r.binding else "none; the demand alone sets the mix")
    # max_units is an input a formula reads: lowered below the units used, the check says OVER
    wi = wb["Inputs"]
    head = _find(wi, 1, "system")
    col = [c.value for c in wi[head]].index("max_units") + 1
    row = _find(wi, 1, "gb200-nvl72")
    assert wi.cell(row, col).fill.fill_type == "solid"
    wi.cell(row, col).value = 0
    ev = Evaluator(wb)
    i = _find(ws, 1, "supply of gb200-nvl72")
    assert ev.value("Limits", f"{lc['left']}{i}") == -1
    assert ev.value("Limits", f"{lc['within']}{i}") == "OVER"
    # the site's power limit is an input too
    i = _find(ws, 1, "site power")
    ws[f"{lc['limit_value']}{i}"].value = r.totals["facility_mw"] / 2
    assert Evaluator(wb).value("Limits", f"{lc['within']}{i}") == "OVER"


def test_totals_move_with_inputs(book):
    r, path = book
    wb = openpyxl.load_workbook(path)
    before = _totals(wb)
    ws = wb["Inputs"]
    row = _find(ws, 1, "hgx-h200")
    nodes = int(r.systems.set_index("system").units["hgx-h200"])
    price = r.systems.set_index("system").usd_per_unit["hgx-h200"]
    ws.cell(row, 3).value = price + 84_000
    ws.cell(_find(ws, 1, "PUE"), 2).value = 1.5
    ws.cell(_find(ws, 1, "years"), 2).value = 5
    after = _totals(wb)
    assert after["capex_usd"] == pytest.approx(before["capex_usd"] + nodes * 84_000)
    assert after["facility_mw"] == pytest.approx(before["facility_mw"] * 1.5 / 1.3)
    assert after["energy_usd_per_year"] == pytest.approx(before["energy_usd_per_year"] * 1.5 / 1.3)
    assert after["cost_owned_usd"] == pytest.approx(after["capex_usd"] + 5 * after["energy_usd_per_year"])
    assert after["it_mw"] == pytest.approx(before["it_mw"])
    # average power at 50%: half the energy
    ws.cell(_find(ws, 1, "average power"), 2).value = 0.5
    assert _totals(wb)["energy_usd_per_year"] == pytest.approx(after["energy_usd_per_year"] / 2)
    ws.cell(_find(ws, 1, "average power"), 2).value = 1.0
    # one more node in the first H200 pool: one node's price, GPUs and power more
    wp = wb["Pools"]
    i = _find(wp, 3, "hgx-h200")
    _, pc = _table(wb, "Pools")
    wp[f"{pc['units']}{i}"].value = wp[f"{pc['units']}{i}"].value + 1
    more = _totals(wb)
    assert more["capex_usd"] - after["capex_usd"] == pytest.approx(price + 84_000)
    assert more["gpus"] - after["gpus"] == 8
    assert more["it_mw"] - after["it_mw"] == pytest.approx(8 * 1275 / 1e6)


def test_cash_flow_reproduces_the_cli_and_discounts(book):
    r, path = book
    wb = openpyxl.load_workbook(path)
    cf = _named(wb, "Cash flow", CF)
    mtok = float(r.workloads.mean_tps.sum()) * 8760 * 3600 / 1e6
    # initial inputs (rate, maintenance and network 0%, full power): the CLI's cost, undiscounted
    assert cf["cost_owned_usd"] == pytest.approx(r.totals["cost_owned_usd"], rel=1e-12)
    assert cf["npv_owned_usd"] == pytest.approx(r.totals["cost_owned_usd"], rel=1e-12)
    assert cf["cost_rental_usd"] == pytest.approx(r.totals["cost_rental_usd"], rel=1e-12)
    assert cf["pv_mtok"] == pytest.approx(mtok * r.years, rel=1e-12)
    assert cf["levelised_usd_per_mtok_owned"] == pytest.approx(r.totals["cost_owned_usd"] / (mtok * r.years))
    assert cf["rows_cover_horizon"] == "yes"
    # 2 years at 10%: C0 + C1 / 1.1, with maintenance 5% and network 10% of capex
    ws = wb["Inputs"]
    for label, v in (("years", 2), ("discount rate", 0.10), ("maintenance", 0.05), ("network", 0.10)):
        ws.cell(_find(ws, 1, label), 2).value = v
    capex, energy = r.totals["capex_usd"], r.totals["energy_usd_per_year"]
    c0 = capex * 1.10 + energy + 0.05 * capex
    c1 = energy + 0.05 * capex
    cf = _named(wb, "Cash flow", CF)
    assert cf["cost_owned_usd"] == pytest.approx(c0 + c1)
    assert cf["npv_owned_usd"] == pytest.approx(c0 + c1 / 1.1)
    assert cf["pv_mtok"] == pytest.approx(mtok + mtok / 1.1)
    assert cf["levelised_usd_per_mtok_owned"] == pytest.approx((c0 + c1 / 1.1) / (mtok + mtok / 1.1))
    # H200 available a year later: its capex falls in year 1 and it runs years 1 and 2
    head = _find(ws, 1, "system")
    col = [c.value for c in ws[head]].index("available_year") + 1
    first = ws.cell(_find(ws, 1, "first year"), 2).value
    ws.cell(_find(ws, 1, "hgx-h200"), col).value = first + 1
    s = r.systems.set_index("system")
    hc, he = s.capex_usd["hgx-h200"], s.energy_usd_per_year["hgx-h200"]
    gc, ge = s.capex_usd["gb200-nvl72"], s.energy_usd_per_year["gb200-nvl72"]
    y0 = gc * 1.15 + ge
    y1 = hc * 1.15 + he + ge + 0.05 * gc
    y2 = he + 0.05 * hc
    cf = _named(wb, "Cash flow", CF)
    assert cf["npv_owned_usd"] == pytest.approx(y0 + y1 / 1.1 + y2 / 1.1 ** 2)
    ws.cell(_find(ws, 1, "years"), 2).value = 30
    assert _named(wb, "Cash flow", CF)["rows_cover_horizon"].startswith("NO")


def test_sources_sheet_covers_every_figure(book):
    r, path = book
    wb = openpyxl.load_workbook(path)
    rows = list(wb["Sources"].iter_rows(min_row=2, values_only=True))
    figures = {(s, f) for s, f, *_ in rows}
    for name in ("gb200-nvl72", "hgx-h200"):
        for key in ("price_per_unit", "price_per_gpu_hour", "power_per_gpu", "gpus_per_unit"):
            assert (name, key) in figures
    for key in ("pue", "usd_per_kwh", "years", "discount_rate", "maintenance_share", "network_share"):
        assert ("(all)", key) in figures
    assert all(src for *_, src in rows)
    assert sum(1 for _, f, *_ in rows if str(f).startswith("tps_per_gpu for")) == len(r.pools)


def test_labels_formats_print_setup_and_one_figure_for_a_year(book):
    from planner.fleet.workbook import LABELS

    r, path = book
    wb = openpyxl.load_workbook(path)
    ws = wb["Inputs"]
    hours, seconds = _find(ws, 1, "hours per year"), _find(ws, 1, "seconds per year")
    assert str(ws.cell(seconds, 2).value) == f"=Inputs!$B${hours}*3600"
    assert Evaluator(wb).value("Inputs", f"B{seconds}") == pytest.approx(ws.cell(hours, 2).value * 3600)
    # human labels above the code names
    for name in ("Pools", "Instances", "Workloads", "Limits", "Cash flow"):
        sheet = wb[name]
        for label, code in zip(sheet[1], sheet[2], strict=False):
            if code.value in LABELS:
                assert label.value == LABELS[code.value] and label.font.bold
    # money, counts and shares carry their formats
    wp = wb["Pools"]
    head = [c.value for c in wp[2]]
    assert wp.cell(3, head.index("capex_usd") + 1).number_format.startswith("$")
    assert wp.cell(3, head.index("units") + 1).number_format == "#,##0"
    wwk = wb["Workloads"]
    wh = [c.value for c in wwk[2]]
    assert wwk.cell(3, wh.index("headroom") + 1).number_format == "0.0%"
    # printing: landscape, one page wide, the header rows repeated
    for sheet in wb.worksheets:
        assert sheet.page_setup.orientation == "landscape" and sheet.page_setup.fitToWidth == 1
        assert sheet.sheet_properties.pageSetUpPr.fitToPage
        assert sheet.print_title_rows in ("$1:$1", "$1:$2")
    assert wb["Pools"].print_title_rows == "$1:$2"
