"""The plan's workbook: its formulas, read back with openpyxl and evaluated by a small evaluator
(cell references, ranges, + - * /, SUM, SUMIF), reproduce the plan's totals, and move when an
input cell changes: a unit price, PUE, the years, a pool's units."""

from __future__ import annotations

import re

import pytest

from planner.fleet.plan import plan

openpyxl = pytest.importorskip("openpyxl")

CHAT = dict(name="chat", model="llama-3.1-8b", min_tps_user=50, demand_tps=3.0e6, isl=1024, osl=512,
            serving="aggregated", search={"max_gpus": 8})
BATCH = dict(name="batch", model="llama-3.1-8b", min_tps_user=10, demand_tps=1.0e6, isl=1024, osl=1024,
             serving="aggregated", search={"max_gpus": 8})

_REF = re.compile(r"(?:(\w+)!)?\$?([A-Z]{1,3})\$?(\d+)(?::\$?([A-Z]{1,3})\$?(\d+))?")


class Evaluator:
    """Evaluates the workbook's formulas: references (``B2``, ``Inputs!$B$5``), ranges
    (``Pools!$C$2:$C$9``), numbers, strings, + - * /, SUM, SUMIF and MIN."""

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
        from openpyxl.utils import range_boundaries

        c1, r1, c2, r2 = range_boundaries(f"{a}:{b}")
        from openpyxl.utils import get_column_letter

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
            if re.search(r"[^\w\s().,+\-*/'\"]", p):
                raise AssertionError(f"unexpected operator in formula {text!r}")
            out.append(p)
        env = dict(_V=lambda s, r: self.value(s, r) or 0.0, _R=self.cells,
                   SUM=lambda xs: sum(float(x or 0.0) for x in xs), MIN=lambda *xs: min(float(x) for x in xs),
                   SUMIF=lambda crit, want, xs: sum(float(x or 0.0) for c, x in zip(crit, xs, strict=True)
                                                    if c == want))
        return eval("".join(out), {"__builtins__": {}}, env)  # noqa: S307 -- the test's own formulas


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    from planner.fleet.workbook import write_workbook

    r = plan(workloads=[CHAT, BATCH], systems=[dict(hardware="gb200-nvl72", max_units=1),
                                               dict(hardware="hgx-h200")], site=dict(facility_mw=5))
    path = tmp_path_factory.mktemp("xlsx") / "plan.xlsx"
    write_workbook(r, str(path))
    return r, path


def _totals(wb) -> dict[str, float]:
    ev = Evaluator(wb)
    ws = wb["Totals"]
    return {ws.cell(i, 1).value: ev.value("Totals", f"B{i}") for i in range(2, ws.max_row + 1)}


def _find(ws, col: int, value) -> int:
    return next(i for i in range(1, ws.max_row + 1) if ws.cell(i, col).value == value)


def test_formulas_reproduce_the_plan(book):
    r, path = book
    wb = openpyxl.load_workbook(path)  # formulas, not cached values
    assert str(wb["Totals"]["B2"].value).startswith("=SUM(")
    t = _totals(wb)
    for key in ("capex_usd", "energy_usd_per_year", "rental_usd_per_year", "cost_owned_usd",
                "cost_rental_usd", "it_mw", "facility_mw", "gpus", "units"):
        assert t[key] == pytest.approx(r.totals[key], rel=1e-12), key
    assert t["units_gb200-nvl72"] == 1
    assert t["power_left_mw"] == pytest.approx(5 - r.totals["facility_mw"])
    ev = Evaluator(wb)
    ws = wb["Workloads"]
    for w in r.workloads.itertuples():
        i = _find(ws, 1, w.workload)
        # the sheet's capacity counts whole instances, as the plan's does: one meaning, one figure
        assert ev.value("Workloads", f"F{i}") == pytest.approx(w.capacity_tps, rel=1e-9)
        assert ev.value("Workloads", f"H{i}") == pytest.approx(w.usd_per_mtok_owned, rel=1e-12)
        assert ev.value("Workloads", f"I{i}") == pytest.approx(w.usd_per_mtok_rental, rel=1e-12)


def test_totals_move_with_inputs(book):
    r, path = book
    wb = openpyxl.load_workbook(path)
    before = _totals(wb)
    ws = wb["Inputs"]
    row = _find(ws, 1, "hgx-h200")
    nodes = int(r.systems.set_index("system").units["hgx-h200"])
    ws.cell(row, 3).value = 400_000  # H200 node price: 316,000 -> 400,000
    ws.cell(_find(ws, 1, "PUE"), 2).value = 1.5
    ws.cell(_find(ws, 1, "years"), 2).value = 5
    after = _totals(wb)
    assert after["capex_usd"] == pytest.approx(before["capex_usd"] + nodes * (400_000 - 316_000))
    assert after["facility_mw"] == pytest.approx(before["facility_mw"] * 1.5 / 1.3)
    assert after["energy_usd_per_year"] == pytest.approx(before["energy_usd_per_year"] * 1.5 / 1.3)
    assert after["cost_owned_usd"] == pytest.approx(after["capex_usd"] + 5 * after["energy_usd_per_year"])
    assert after["it_mw"] == pytest.approx(before["it_mw"])
    # one more node in the first H200 pool: one node's price, GPUs and power more
    wp = wb["Pools"]
    i = _find(wp, 2, "hgx-h200")
    wp.cell(i, 3).value = wp.cell(i, 3).value + 1
    more = _totals(wb)
    assert more["capex_usd"] - after["capex_usd"] == pytest.approx(400_000)
    assert more["gpus"] - after["gpus"] == 8
    assert more["it_mw"] - after["it_mw"] == pytest.approx(8 * 1275 / 1e6)


def test_sources_sheet_covers_every_figure(book):
    r, path = book
    wb = openpyxl.load_workbook(path)
    rows = list(wb["Sources"].iter_rows(min_row=2, values_only=True))
    figures = {(s, f) for s, f, *_ in rows}
    for name in ("gb200-nvl72", "hgx-h200"):
        for key in ("price_per_unit", "price_per_gpu_hour", "power_per_gpu", "gpus_per_unit"):
            assert (name, key) in figures
    for key in ("pue", "usd_per_kwh", "years"):
        assert ("(all)", key) in figures
    assert all(src for *_, src in rows)
    assert sum(1 for _, f, *_ in rows if str(f).startswith("tps_per_gpu for")) == len(r.pools)


def test_formats_print_setup_and_one_figure_for_a_year(book):
    r, path = book
    wb = openpyxl.load_workbook(path)
    ws = wb["Inputs"]
    hours, seconds = _find(ws, 1, "hours per year"), _find(ws, 1, "seconds per year")
    assert str(ws.cell(seconds, 2).value) == f"=Inputs!$B${hours}*3600"
    assert Evaluator(wb).value("Inputs", f"B{seconds}") == pytest.approx(ws.cell(hours, 2).value * 3600)
    # money, counts and shares carry their formats
    wp = wb["Pools"]
    head = [c.value for c in wp[1]]
    assert wp.cell(2, head.index("capex_usd") + 1).number_format.startswith("$")
    assert wp.cell(2, head.index("units") + 1).number_format == "#,##0"
    wwk = wb["Workloads"]
    wh = [c.value for c in wwk[1]]
    assert wwk.cell(2, wh.index("headroom") + 1).number_format == "0.0%"
    # max_units: no formula reads it, so it is not styled as an input
    head_row = _find(ws, 1, "system")
    col = [c.value for c in ws[head_row]].index("max_units") + 1
    row = _find(ws, 1, "gb200-nvl72")
    assert ws.cell(row, col).fill.fill_type is None
    assert ws.cell(row, col - 1).fill.fill_type == "solid"   # gpus_per_unit: a formula reads it
    # printing: landscape, one page wide, the header repeated
    for sheet in wb.worksheets:
        assert sheet.page_setup.orientation == "landscape" and sheet.page_setup.fitToWidth == 1
        assert sheet.sheet_properties.pageSetUpPr.fitToPage
