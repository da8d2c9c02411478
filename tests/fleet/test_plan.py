"""The fleet plan: the integer program by hand, a small real plan checked against the sizing and
by hand, supply limits met by the fallback, cost never falling as a limit tightens, infeasible
plans naming their limit and by how much, strict plan files, sensitivity, the CLI."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

import planner
from planner.cli import main
from planner.errors import SpecError
from planner.fleet.plan import EXAMPLE_PLAN, Limits, PoolShape, plan, read_plan, solve_mix
from planner.fleet.sensitivity import sensitivity

# llama-3.1-8b, aggregated, instances of at most 8 GPUs: small frontiers, fast
#: more than one GB200 rack serves: the rack supply binds
DEMAND = 5.0e6
CHAT = dict(name="chat", model="llama-3.1-8b", min_tps_user=50, demand_tps=DEMAND, isl=1024, osl=512,
            serving="aggregated", search={"max_gpus": 8})
SYSTEMS = [dict(hardware="gb200-nvl72", max_units=1), dict(hardware="hgx-h200")]


# ---- the integer program on plain numbers ---------------------------------------------------------
def test_solve_mix_by_hand():
    # A: 100 tok/s per unit at 10 per unit; B: 30 tok/s per unit at 4 (A is cheaper per token).
    shapes = [PoolShape(0, 0, 1, 100.0), PoolShape(0, 1, 1, 30.0)]
    free = Limits((None, None))
    # 250 tok/s: 3A = 30, 2A + 2B = 28 (260 tok/s), 1A + 5B = 30, 9B = 36 -> 2A + 2B
    mix = solve_mix(shapes, [250.0], [10.0, 4.0], free)
    assert mix.units == (2, 2) and mix.objective == 28.0 and mix.capacity == (200.0, 60.0)
    # at most one A: 1A + ceil(150 / 30) = 5B = 30
    mix = solve_mix(shapes, [250.0], [10.0, 4.0], Limits((1, None)))
    assert mix.units == (1, 5) and mix.objective == 30.0
    # power: A 5 W, B 1 W.  11 W: 2A + 2B (12 W) no longer fits; 1A + 5B = 10 W, cost 30
    watts = [5.0, 1.0]
    mix = solve_mix(shapes, [250.0], [10.0, 4.0], Limits((None, None), facility_w=11.0), watts_per_unit=watts)
    assert mix.units == (1, 5)
    # 8 W: 9B = 9 W and 1A + 5B = 10 W both too much, and every other mix more: none
    assert solve_mix(shapes, [250.0], [10.0, 4.0], Limits((None, None), facility_w=8.0),
                     watts_per_unit=watts) is None


def test_solve_mix_blocks_and_remainders():
    # blocks of 3 units serve 100 tok/s; 1 unit alone 20, 2 units 55 (at most one remainder)
    shape = [PoolShape(0, 0, 3, 100.0, ((1, 20.0), (2, 55.0)))]
    assert solve_mix(shape, [150.0], [1.0], Limits((None,))).units == (5,)   # 3 + 2: 155 tok/s
    assert solve_mix(shape, [180.0], [1.0], Limits((None,))).units == (6,)   # 3 + 2 = 155 < 180
    assert solve_mix(shape, [180.0], [1.0], Limits((5,))) is None


def test_pool_of_a_prefill_instance_wider_than_the_block_search():
    # one prefill instance of 128 GPUs (16 nodes of 8) and decode instances of 2 GPUs: the
    # smallest pool is 17 nodes, one more than MAX_BLOCK.  By hand: the prefill instance serves
    # 128 x 8000 x 512 / 2048 = 256,000 output tok/s; the 17th node's 8 GPUs hold 4 decode
    # instances of 2 x 1000 tok/s: 8,000 tok/s, the pool's capacity
    from planner.fleet.plan import MAX_BLOCK, pool_shape
    perf = dict(decode_tps_per_gpu=1000.0, decode_instance_gpus=2, prefill_tps_per_gpu=8000.0,
                prefill_instance_gpus=128, isl=2048.0, osl=512.0, gpus_per_unit=8, domain_size=8)
    assert MAX_BLOCK < 17
    shape = pool_shape(0, 0, perf, 1.0e6)
    assert shape is not None and shape.block_units == 17 and shape.block_tps == pytest.approx(8000.0)


# ---- a small real plan ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def small():
    return plan(workloads=[CHAT], systems=SYSTEMS)


def test_one_system_plan_equals_sizing():
    # one workload on one system: the plan's units are the sizing's, and by hand
    one = dict(CHAT, demand_tps=1.0e6)
    r = plan(workloads=[one], systems=[dict(hardware="hgx-h200")])
    df = planner.size(planner.Scenario("llama-3.1-8b", "hgx-h200", isl=1024, osl=512, serving="aggregated",
                                       max_gpus=8), 1.0e6, min_tps_user=50)
    assert int(r.systems.units.iloc[0]) == int(df.units.iloc[0])
    p = r.pools.iloc[0]
    # aggregated, instances inside one 8-GPU node: a node serves 8 x tok/s per GPU
    assert p.units == math.ceil(1.0e6 / (8 * p.tps_per_gpu) - 1e-9)
    assert r.totals["capex_usd"] == p.units * 316_000
    # energy: units x 8 GPUs x 1275 W x PUE 1.3 x 8760 h x $0.08/kWh
    assert r.totals["energy_usd_per_year"] == pytest.approx(p.units * 8 * 1275 * 1.3 / 1e3 * 8760 * 0.08)
    assert r.totals["cost_usd"] == pytest.approx(r.totals["capex_usd"] + 4 * r.totals["energy_usd_per_year"])


def test_supply_limit_uses_the_fallback_for_the_rest(small):
    r = small
    units = dict(zip(r.systems.system, r.systems.units, strict=True))
    assert units["gb200-nvl72"] == 1  # the limit, all of it
    rack = r.pools[r.pools.system == "gb200-nvl72"].iloc[0]
    node = r.pools[r.pools.system == "hgx-h200"].iloc[0]
    # by hand: the rack's whole-instance capacity, the rest on H200 nodes of 8 x tok/s per GPU
    assert rack.capacity_tps == pytest.approx(72 * rack.tps_per_gpu, rel=1e-9)
    rest = DEMAND - rack.capacity_tps
    assert units["hgx-h200"] == math.ceil(rest / (8 * node.tps_per_gpu) - 1e-9)
    assert r.workloads.capacity_tps.iloc[0] >= DEMAND
    assert r.binding == ["supply of gb200-nvl72"]
    lim = r.limits.set_index("limit").loc["supply of gb200-nvl72"]
    assert lim.used == 1 and lim.left == 0 and lim.saving_one_more_usd > 0
    # $/Mtok: the yearly cost of both pools over the tokens of a year at the mean load
    yearly = r.totals["capex_usd"] / 4 + r.totals["energy_usd_per_year"]
    assert r.workloads.usd_per_mtok_owned.iloc[0] == pytest.approx(yearly / (DEMAND * 8760 * 3600 / 1e6))


def test_cost_never_falls_as_a_limit_tightens(small):
    pr = small.problem
    costs = [pr.solve(Limits((n, None))).objective for n in (4, 3, 2, 1, 0)]
    assert all(b >= a - 1e-6 for a, b in zip(costs, costs[1:], strict=False)), costs
    power = [pr.solve(Limits((None, None), facility_w=mw * 1e6)) for mw in (2.0, 0.6, 0.45, 0.4)]
    got = [m.objective for m in power if m is not None]
    assert all(b >= a - 1e-6 for a, b in zip(got, got[1:], strict=False)), got


def test_infeasible_names_the_limit_and_by_how_much(small):
    # least power for 5M tok/s with one rack: the rack (72 x 1833 W x 1.3) and the H200 nodes of the
    # plan (8 x 1275 W x 1.3 each) -- the cheapest plan is also the least power here
    nodes = int(small.systems.units.iloc[1])
    need_mw = (72 * 1833 * 1.3 + nodes * 8 * 1275 * 1.3) / 1e6
    with pytest.raises(SpecError) as e:
        plan(workloads=[CHAT], systems=SYSTEMS, site=dict(facility_mw=0.3))
    msg = str(e.value)
    assert "site.facility_mw" in msg and f"needs at least {need_mw:.4g} MW" in msg
    assert f"short by {need_mw - 0.3:.4g} MW" in msg
    # only the rack: supply of GB200 would lift it, by the racks sizing GB200 alone asks for
    alone = planner.Scenario("llama-3.1-8b", "gb200-nvl72", isl=1024, osl=512, serving="aggregated",
                             max_gpus=8)
    racks = int(planner.size(alone, DEMAND, min_tps_user=50).units.iloc[0])
    assert racks >= 2
    with pytest.raises(SpecError) as e:
        plan(workloads=[CHAT], systems=[dict(hardware="gb200-nvl72", max_units=1)],
             site=dict(facility_mw=5))
    assert (f"supply of gb200-nvl72 needs at least {racks} racks, at most 1 available "
            f"(short by {racks - 1})") in str(e.value)


def test_regions_and_dates_exclude_systems():
    with pytest.raises(SpecError) as e:
        plan(workloads=[CHAT], site=dict(region="cn", needed_by="2026-01-01"),
             systems=[dict(hardware="gb200-nvl72", regions=["us"]),
                      dict(hardware="hgx-h200", regions=["cn"], available_from="2026-06-01"),
                      dict(hardware="hgx-b200")])
    msg = str(e.value)
    assert "workloads[0].min_tps_user" in msg and "'chat'" in msg
    assert "gb200-nvl72: not permitted in region cn" in msg
    assert "hgx-h200: available from 2026-06-01, after the site's needed_by 2026-01-01" in msg
    # no regions in the plan: the spec's system.regions decide (the B200 needs a licence for China)
    assert "hgx-b200: not sold in region cn (china in the spec's system.regions terms" in msg


def test_a_site_region_is_a_name_of_the_plans_own():
    base = dict(workloads=[CHAT], systems=[dict(hardware="hgx-h200")])
    # no system lists regions: any site region is a site (it was refused unless a system listed it)
    for region in ("us", "de", "Hong Kong", "cn"):
        assert read_plan({**base, "site": {"region": region}}).site.region == region
    # ... but a slip of China's name would count as outside China, where the specs' limits differ
    with pytest.raises(SpecError, match=r"site\.region: 'china' if the site is in China .*got 'chna'"):
        read_plan({**base, "site": {"region": "chna"}})
    # where systems list regions, the site's is one of theirs (or the specs' terms or China's names)
    listed = dict(base, systems=[dict(hardware="hgx-h200", regions=["us", "eu"])])
    assert read_plan({**listed, "site": {"region": "eu"}}).site.region == "eu"
    assert read_plan({**listed, "site": {"region": "global"}}).site.region == "global"
    with pytest.raises(SpecError, match=r"site\.region: a region its systems or the specs name .*got 'usa'"):
        read_plan({**listed, "site": {"region": "usa"}})


def test_price_overrides_in_a_plan_are_checked_per_gpu():
    # the ranges of a spec's own prices: 5,408 USD per GPU-hour is 5.408 with a comma misread;
    # 300 USD for an 8-GPU node is 37.5 USD per GPU
    for over, needle in (({"usd_per_gpu_hour": 5408}, r"systems\[0\]\.usd_per_gpu_hour: a rental price per "
                                                      r"GPU-hour of hgx-h200 from 0\.01 to 1,000 USD/h"),
                         ({"usd_per_unit": 300}, r"systems\[0\]\.usd_per_unit: a purchase price per GPU of "
                                                 r"hgx-h200 from 100 to 10,000,000 USD, got 300 USD per unit "
                                                 r"of 8 GPUs = 37\.5 USD per GPU"),
                         ({"watts_per_gpu": 1e7}, r"systems\[0\]\.watts_per_gpu: an all-in power per GPU")):
        with pytest.raises(SpecError, match=needle):
            plan(workloads=[CHAT], systems=[dict(hardware="hgx-h200", **over)])


def test_plan_file_is_strict(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("systems: [{hardware: hgx-h200, max_unit: 3}]\nworkloads: [{name: a, model: llama-3.1-8b, "
                 "min_tps_user: 50, demand_tps: 1000}]\n")
    with pytest.raises(SpecError) as e:
        read_plan(p)
    assert str(e.value).startswith(f"{p}: systems[0].max_unit: a known field (did you mean 'max_units'?)")
    p.write_text("systems: [{hardware: hgx-h200}]\nworkloads: [{name: a, model: llama-3.1-8b, "
                 "min_tps_user: 50, demand_tps: 1000, users: 5}]\n")
    with pytest.raises(SpecError, match=r"workloads\[0\].demand_tps: exactly one of"):
        read_plan(p)
    spec = read_plan(EXAMPLE_PLAN)
    assert [w.name for w in spec.workloads] == ["chat", "reasoning"] and spec.site.facility_mw == 5


def test_sensitivity(small):
    df = sensitivity(small, draws=2)
    base = small.totals["cost_usd"]
    by = df.set_index("case")
    assert by.loc["supply of gb200-nvl72 0 (-1 rack)", "cost_usd"] >= base
    assert by.loc["supply of gb200-nvl72 2 (+1 rack)", "cost_usd"] <= base
    # energy +50% with the same mix costs half the energy more over the years; never less
    e = by.loc["energy price +50%"]
    assert e.cost_usd >= base
    assert e.cost_usd <= base + 0.5 * 4 * small.totals["energy_usd_per_year"] + 1e-6
    draws = df[df.kind == "efficiency"]
    assert len(draws) == 2 and draws.feasible.all()
    lo, hi = df.attrs["summary"]["cost_usd"]
    assert lo <= hi and lo == draws.cost_usd.min()


def test_rental_basis_and_years(small):
    r = plan(workloads=[CHAT], systems=SYSTEMS, rental=True, years=2)
    # rental: GPU-hours x price x 8760 h x 2 years; the cheapest rental mix costs no more than renting
    # the owned mix
    assert r.totals["cost_usd"] == pytest.approx(r.totals["rental_usd_per_year"] * 2)
    assert r.totals["cost_usd"] <= small.totals["rental_usd_per_year"] * 2 + 1e-6


# ---- the command line ---------------------------------------------------------------------------------
def _plan_file(tmp_path: Path) -> Path:
    p = tmp_path / "plan.yaml"
    p.write_text(json.dumps(dict(workloads=[CHAT], systems=SYSTEMS, site=dict(facility_mw=5))))
    return p


def test_cli_json_csv(tmp_path, capsys):
    p = _plan_file(tmp_path)
    rc = main(["plan", str(p), "--json", "--csv", str(tmp_path / "pools.csv")])
    out, err = capsys.readouterr()
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["binding"] == ["supply of gb200-nvl72"]
    assert {s["system"]: s["units"] for s in doc["systems"]}["gb200-nvl72"] == 1
    assert doc["workloads"][0]["usd_per_mtok_owned"] > 0 and doc["totals"]["facility_mw"] > 0
    assert "source" in doc["figures"]["hgx-h200"]["price_per_unit"]
    head = (tmp_path / "pools.csv").read_text().splitlines()[0].split(",")
    assert {"workload", "system", "units", "tps_per_gpu", "capacity_tps", "facility_mw", "it_mw"} <= set(head)


def _bad(capsys, argv: list[str]) -> str:
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    assert rc == 2, (out, err)
    assert err.startswith("error:") and err.count("\n") == 1, err
    return err


def test_cli_bad_input_one_line_nothing_written(tmp_path, capsys, monkeypatch):
    p = _plan_file(tmp_path)
    err = _bad(capsys, ["plan", str(tmp_path / "missing.yaml")])
    assert "missing.yaml: file: no such file" in err
    # an output path in a missing folder: refused before any work
    err = _bad(capsys, ["plan", str(p), "--csv", str(tmp_path / "no" / "x.csv")])
    assert "--csv" in err
    # infeasible: one line naming the limit; no file written
    p.write_text(json.dumps(dict(workloads=[CHAT], systems=SYSTEMS, site=dict(facility_mw=0.3))))
    err = _bad(capsys, ["plan", str(p), "--csv", str(tmp_path / "x.csv")])
    assert "site.facility_mw" in err and "short by" in err and not (tmp_path / "x.csv").exists()
    # no openpyxl: say what to install, write nothing
    monkeypatch.setitem(sys.modules, "openpyxl", None)
    err = _bad(capsys, ["plan", str(p), "--xlsx", str(tmp_path / "x.xlsx")])
    assert "pip install" in err and "openpyxl" in err and not (tmp_path / "x.xlsx").exists()


def test_money_at_rounding_noise_is_zero():
    # what lifting a slack limit saves is the difference of two solver objectives, which can come out
    # at -7e-9 dollars: printed as $0, not -$7.451e-09
    from planner.cli.plan import _money

    assert _money(-7.451e-09) == "$0" and _money(3e-4) == "$0"
    assert _money(-5.348e6) == "-$5.348M" and _money(721412.0) == "$721,412" and _money(9.01) == "$9.01"
