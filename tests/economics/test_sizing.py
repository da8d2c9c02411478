"""Procurement sizing (planner.economics.sizing): the pure deployment arithmetic checked by hand, and the
API on the frontier engine (consistency: capacity covers demand, a higher service level never
costs less, a larger power budget never serves less).

Frontier-backed tests use deepseek-v2-lite with the instance size fixed (--gpus 8) unless the
instance-size search itself is under test, to stay fast.
"""

from __future__ import annotations

import numpy as np
import pytest

from planner import Costs, Scenario
from planner.economics import sizing
from planner.economics.cost import deployment, economics
from planner.economics.demand import make_demand, read_profile
from planner.economics.pools import max_load, pack_bins, plan_pools, units_for
from planner.errors import SpecError

MODEL = "deepseek-v2-lite"
FAST = dict(gpus=8)  # one instance size: one layout family, fast frontier

# an NVL72-like rack and the example configuration used throughout the hand checks
RACK = dict(gpus_per_unit=72, domain_size=72)
NODE = dict(gpus_per_unit=8, domain_size=8)
PERF = dict(decode_tps_per_gpu=5000.0, decode_instance_gpus=16, prefill_tps_per_gpu=20000.0,
            prefill_instance_gpus=8, isl=1024, osl=1024)
MONEY = dict(power_per_gpu=1667.0, price_per_unit=3e6, price_per_gpu_hour=9.0, pue=1.3,
             usd_per_kwh=0.08, years=4.0)


# ---- the hand-checked example ---------------------------------------------------------------------
def test_deployment_by_hand_rack():
    d = deployment(1e6, **PERF, **RACK, **MONEY)
    # decode: 1e6 / 5000 = 200 GPUs -> 200 / 16 = 12.5 -> 13 instances = 208 GPUs
    assert d["decode_instances"] == 13 and d["decode_gpus"] == 208
    # prefill: 1e6 x (1024/1024) / 20000 = 50 GPUs -> 50 / 8 = 6.25 -> 7 instances = 56 GPUs
    assert d["prefill_instances"] == 7 and d["prefill_gpus"] == 56
    # exact need 200 + 50 = 250 GPUs (= demand / y, y = 1/(1/5000 + 1/20000) = 4000); used 264
    assert d["gpus_needed"] == pytest.approx(250.0)
    assert d["gpus_used"] == 264
    # packing: 4 x 16 per 72-GPU domain -> 13 instances = 3 full domains (8 free each) + 1 domain
    # with one instance (56 free); the 7 prefill x 8 go 3 into the 8-GPU gaps, 4 into the 56.
    # 4 domains = 4 racks (264 / 72 = 3.67 -> 4 either way) = 288 GPUs
    assert d["units"] == 4 and d["gpus"] == 288
    # IT power 288 x 1667 W = 480,096 W; facility x 1.3 = 624,124.8 W
    assert d["it_power_mw"] == pytest.approx(0.480096)
    assert d["power_mw"] == pytest.approx(0.6241248)
    # capex 4 racks x $3M = $12M
    assert d["capex_usd"] == pytest.approx(12e6)
    # energy 624.1248 kW x 8760 h x $0.08 = $437,386.66 per year
    assert d["opex_usd_per_year"] == pytest.approx(437_386.65984)
    # rental $9 x 288 GPUs x 8760 h = $22,705,920 per year
    assert d["rental_usd_per_year"] == pytest.approx(22_705_920.0)
    # tokens per year 1e6 x 31,536,000 s = 3.1536e13 = 3.1536e7 M tokens
    assert d["tokens_per_year"] == pytest.approx(3.1536e13)
    # $/Mtok = ($12M / 4 + $437,386.66) / 3.1536e7 = 3,437,386.66 / 3.1536e7 = $0.108999
    assert d["usd_per_mtok_owned"] == pytest.approx(0.1089988, rel=1e-6)
    # rental $/Mtok = 22,705,920 / 3.1536e7 = $0.72
    assert d["usd_per_mtok_rental"] == pytest.approx(0.72)
    # tokens/s per facility MW = 1e6 / 0.6241248 = 1,602,243.65
    assert d["tps_per_facility_mw"] == pytest.approx(1_602_243.65, rel=1e-8)
    # capacity of the 4 racks: decode instance 16 x 5000 = 80k tok/s, prefill instance 8 x 20000
    # = 160k; balanced 14 decode + 7 prefill = 224 + 56 = 280 GPUs (racks hold 4,4,3,3 decode and
    # 1,1,3,3 prefill) -> min(14 x 80k, 7 x 160k) = 1.12M; 15 + 8 would need 304 GPUs > 288
    assert d["capacity_tps"] == pytest.approx(1.12e6)
    assert d["headroom"] == pytest.approx(0.12)
    # utilisation 1e6 / 1.12e6 = 0.892857; idle = 3,437,386.66 x (1 - 0.892857) = 368,291.43
    assert d["utilisation"] == pytest.approx(1 / 1.12)
    assert d["idle_usd_per_year"] == pytest.approx(368_291.43, rel=1e-7)


def test_deployment_by_hand_nodes():
    d = deployment(1e6, **PERF, **NODE, **MONEY | dict(price_per_unit=316_000.0, power_per_gpu=1275.0))
    # 13 decode instances of 16 GPUs span 2 nodes each = 26 nodes; 7 prefill instances = 7 nodes
    assert d["units"] == 33 and d["gpus"] == 264
    # capex 33 x $316,000 = $10,428,000; IT power 264 x 1275 W = 336,600 W; x 1.3 = 437,580 W
    assert d["capex_usd"] == pytest.approx(10_428_000)
    assert d["power_mw"] == pytest.approx(0.43758)
    # energy 437.58 kW x 8760 x 0.08 = $306,656.06 per year
    assert d["opex_usd_per_year"] == pytest.approx(306_656.064)
    # $/Mtok = (10,428,000 / 4 + 306,656.06) / 3.1536e7 = 2,913,656.06 / 3.1536e7 = 0.092392
    assert d["usd_per_mtok_owned"] == pytest.approx(2_913_656.064 / 3.1536e7)
    # no spare GPU: capacity min(13 x 80k, 7 x 160k) = 1.04M
    assert d["capacity_tps"] == pytest.approx(1.04e6)


def test_profile_mean_drives_cost_and_utilisation():
    peak = deployment(1e6, **PERF, **RACK, **MONEY)
    half = deployment(1e6, **PERF, **RACK, **MONEY, mean_demand_tps=5e5)
    # same deployment (sized for the peak) serving half the tokens: $/Mtok doubles
    assert half["units"] == peak["units"] and half["capex_usd"] == peak["capex_usd"]
    assert half["usd_per_mtok_owned"] == pytest.approx(2 * peak["usd_per_mtok_owned"])
    # utilisation 5e5 / 1.12e6 = 0.4464; idle = yearly cost x (1 - 0.4464)
    assert half["utilisation"] == pytest.approx(5e5 / 1.12e6)
    yearly = 12e6 / 4 + peak["opex_usd_per_year"]
    assert half["idle_usd_per_year"] == pytest.approx(yearly * (1 - 5e5 / 1.12e6))


def test_pack_bins_keeps_instances_inside_domains():
    # 9 x 16 GPUs = 144 = exactly two 72-GPU racks by count, but only 4 fit in a rack -> 3
    assert pack_bins([(16, 9)], 72) == 3
    assert units_for(9, 16, 0, None, **RACK) == 3
    # a 128-GPU instance takes 2 domains and leaves 16 GPUs: two 8-GPU instances fit, three don't
    assert pack_bins([(128, 1), (8, 2)], 72) == 2
    assert pack_bins([(128, 1), (8, 3)], 72) == 3
    # nodes: 8-GPU domains; a 64-GPU instance = 8 nodes, 4-GPU instances pair up
    assert pack_bins([(64, 2), (4, 3)], 8) == 18
    assert pack_bins([], 72) == 0


def test_plan_pools_single_pool_and_rounding_noise():
    # aggregated / decode-only: one pool; 24,000 / 1000 = 24 GPUs = exactly 3 x 8 (no float creep)
    p = plan_pools(24_000.0, decode_tps_per_gpu=1000.0, decode_instance_gpus=8, **NODE)
    assert p["decode_instances"] == 3 and p["prefill_instances"] == 0 and p["units"] == 3
    p = plan_pools(0.3 * 3 * 80_000 / 0.3, decode_tps_per_gpu=1000.0, decode_instance_gpus=8, **NODE)
    assert p["units"] == 30


def test_tiny_demand_takes_one_of_each_instance_and_pays_for_idle():
    # 1e-9 requests/s x 1024 output tokens = 1.024e-6 tok/s: 2e-10 of a decode GPU, yet one whole
    # 16-GPU decode instance and one 8-GPU prefill instance = 24 GPUs in one 72-GPU rack
    d = deployment(1.024e-6, **PERF, **RACK, **MONEY)
    assert (d["decode_instances"], d["prefill_instances"], d["units"], d["gpus"]) == (1, 1, 1, 72)
    # power 72 x 1667 W x 1.3 = 156,031.2 W; tokens/s per MW = 1.024e-6 / 0.1560312
    assert d["tps_per_facility_mw"] == pytest.approx(1.024e-6 / 0.1560312)
    # the rack holds 3 decode instances (48 GPUs) and 3 prefill (24): capacity min(3 x 80k,
    # 3 x 160k) = 240k tok/s; almost all of the yearly cost is idle
    assert d["capacity_tps"] == pytest.approx(2.4e5)
    assert d["utilisation"] == pytest.approx(1.024e-6 / 2.4e5)
    yearly = 3e6 / 4 + d["opex_usd_per_year"]
    assert d["idle_usd_per_year"] == pytest.approx(yearly * (1 - 1.024e-6 / 2.4e5))
    p = plan_pools(1e-300, decode_tps_per_gpu=1000.0, decode_instance_gpus=8, **NODE)
    assert p["decode_instances"] == 1 and p["units"] == 1


def test_max_load_single_pool_and_too_small_fleet():
    # 2 nodes, 4-GPU instances at 1000 tok/s/GPU: 4 instances x 4000 = 16,000
    assert max_load(2, decode_tps_per_gpu=1000.0, decode_instance_gpus=4, **NODE) == pytest.approx(16_000)
    # a 16-GPU instance on one 8-GPU node: nothing fits
    assert max_load(1, decode_tps_per_gpu=1000.0, decode_instance_gpus=16, **NODE) == 0.0
    # monotone in the fleet
    caps = [max_load(n, **PERF, **RACK) for n in range(1, 8)]
    assert all(b >= a for a, b in zip(caps, caps[1:], strict=False))


def test_economics_zero_energy_price():
    e = economics(units=1, gpus_per_unit=8, peak_tps=1000.0, mean_tps=1000.0, capacity_tps=2000.0,
                  power_per_gpu=1000.0, price_per_unit=8e5, price_per_gpu_hour=2.0, pue=1.0,
                  usd_per_kwh=0.0, years=2.0)
    # $800k / 2 years = $400k per year over 1000 x 31,536,000 = 3.1536e10 tokens = 31,536 Mtok
    assert e["usd_per_mtok_owned"] == pytest.approx(4e5 / 31_536)
    assert e["opex_usd_per_year"] == 0.0 and e["headroom"] == pytest.approx(1.0)


# ---- demand ------------------------------------------------------------------------------------------
def test_demand_conversions():
    assert make_demand(users=1000).peak_mean(50.0, 1024) == (50_000.0, 50_000.0)
    assert make_demand(requests_per_s=10).peak_mean(50.0, 1000) == (10_000.0, 10_000.0)
    assert make_demand(demand_tps=7.0).peak_mean(50.0, 1000) == (7.0, 7.0)
    prof = make_demand(profile=[100.0] * 12 + [300.0] * 12)
    assert prof.peak_mean(1.0, 1.0) == (300.0, 200.0)


@pytest.mark.parametrize("kw", [dict(demand_tps=0.0), dict(demand_tps=-1.0), dict(users=float("nan")),
                                dict(), dict(demand_tps=1.0, users=1.0), dict(profile=[1.0] * 23),
                                dict(profile=[0.0] * 24), dict(profile=[1.0] * 23 + [-1.0])])
def test_bad_demand(kw):
    with pytest.raises(SpecError):
        make_demand(**kw)


def test_read_profile_files(tmp_path):
    csv = tmp_path / "day.csv"
    csv.write_text("hour,users\n" + "".join(f"{h},{100 + h}\n" for h in range(24)))
    d = read_profile(csv)
    assert d.kind == "users" and d.hourly[0] == 100 and d.hourly[-1] == 123
    plain = tmp_path / "plain.csv"
    plain.write_text("".join(f"{10 * h}\n" for h in range(1, 25)))
    assert read_profile(plain).hourly[-1] == 240 and read_profile(plain).kind == "output_tps"
    y = tmp_path / "day.yaml"
    y.write_text("unit: requests_per_s\nhourly: [" + ", ".join(["5"] * 24) + "]\n")
    assert read_profile(y).kind == "requests_per_s"
    bad = tmp_path / "bad.yaml"
    bad.write_text("[1, 2, 3]\n")
    with pytest.raises(SpecError, match="24 hourly"):
        read_profile(bad)


def test_headerless_rows_of_two_numbers_are_refused(tmp_path):
    # '5000,5' without a header: hour and load, load and hour, or 5000.5 with a decimal comma; its
    # last cell (5) was read as the hour's load
    day = tmp_path / "day.csv"
    day.write_text("".join("5000,5\n" if h == 4 else f"{10 * h}\n" for h in range(1, 25)))
    with pytest.raises(SpecError, match=r"day\.csv: row 4: one load per row, or a header naming the columns"):
        read_profile(day)
    day.write_text("".join(f"{h},{100 + h}\n" for h in range(24)))  # hour,load all day, no header
    with pytest.raises(SpecError, match=r"day\.csv: row 1: one load per row"):
        read_profile(day)


def test_an_hour_column_orders_the_loads(tmp_path):
    day = tmp_path / "day.csv"
    hours = list(range(12, 24)) + list(range(12))  # from noon, as a log might start
    day.write_text("hour,output_tps\n" + "".join(f"{h},{1000 + h}\n" for h in hours))
    assert read_profile(day).hourly == tuple(1000.0 + h for h in range(24))
    for text, needle in (("hour,output_tps\n" + "0,5\n" * 24, r"row 3\.hour: an hour from 0 to 23 given"),
                         ("hour,output_tps,note\n" + "".join(f"{h},5,x\n" for h in range(24)), "header"),
                         ("hour,output_tps\n" + "".join(f"{h},5,6\n" for h in range(24)), "row 2: 2 cells")):
        day.write_text(text)
        with pytest.raises(SpecError, match=needle):
            read_profile(day)


# ---- on the frontier engine --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sized():
    return sizing.size(Scenario(MODEL, ["hgx-h200", "gb200-nvl72"], **FAST), 2e6, min_tps_user=50)


def test_size_covers_demand(sized):
    assert list(sized.hardware) == ["hgx-h200", "gb200-nvl72"]
    for r in sized.itertuples():
        assert r.feasible and r.tps_per_user >= 50 * (1 - 1e-6)
        assert r.gpus * r.tps_per_gpu >= 2e6  # GPUs bought x per-GPU output >= demand
        assert r.gpus_used * r.tps_per_gpu >= 2e6 * (1 - 1e-6)
        assert r.capacity_tps >= 2e6 and r.headroom >= 0
        assert r.gpus == r.units * r.gpus_per_unit
        assert r.decode_gpus % r.instance_gpus == 0 and r.prefill_gpus % r.prefill_instance_gpus == 0
        assert r.power_mw == pytest.approx(r.gpus * r.power_per_gpu * 1.3 / 1e6)
        assert r.capex_usd == pytest.approx(r.units * r.price_per_unit)
        assert "system.price_per_unit" in r.price_per_unit_source
    assert sized.cheapest.sum() == 1
    assert sized.loc[sized.cheapest, "usd_per_mtok_owned"].iloc[0] == sized.usd_per_mtok_owned.min()


def test_size_matches_pure_arithmetic(sized):
    r = sized.iloc[0]
    d = deployment(2e6, decode_tps_per_gpu=r.decode_tps_per_gpu, decode_instance_gpus=r.instance_gpus,
                   prefill_tps_per_gpu=r.prefill_tps_per_gpu, prefill_instance_gpus=r.prefill_instance_gpus,
                   isl=1024, osl=1024, gpus_per_unit=8, domain_size=8, power_per_gpu=r.power_per_gpu,
                   price_per_unit=r.price_per_unit, price_per_gpu_hour=r.price_per_gpu_hour)
    assert d["units"] == r.units and d["usd_per_mtok_owned"] == pytest.approx(r.usd_per_mtok_owned)


def _top(hw: str) -> float:
    """The fastest per-user rate the frontier reaches on ``hw`` (same search as the sizing)."""
    from planner.serving.frontiers import frontier

    return float(frontier(Scenario(MODEL, hw, **FAST)).tps_per_user.max())


def test_higher_service_level_never_costs_less():
    top = 0.95 * _top("hgx-h200")  # the levels must rise: drop those above the reachable top
    levels = [x for x in (10.0, 40.0, 100.0, 200.0) if x < top] + [top]
    costs, units = [], []
    for x in levels:
        df = sizing.size(Scenario(MODEL, "hgx-h200", **FAST), 5e5, min_tps_user=x)
        costs.append(float(df.usd_per_mtok_owned.iloc[0]))
        units.append(int(df.units.iloc[0]))
    assert all(b >= a * (1 - 1e-12) for a, b in zip(costs, costs[1:], strict=False)), costs
    assert all(b >= a for a, b in zip(units, units[1:], strict=False)), units
    assert costs[-1] > costs[0]


def test_instance_search_and_curve_monotone():
    curve = sizing.sizing_curve(Scenario(MODEL, "hgx-h200"), 3e5, points=12)
    c = curve.usd_per_mtok_owned.to_numpy()
    assert len(c) >= 10 and np.all(np.diff(c) >= -1e-12 * c[:-1])


def test_larger_power_budget_never_serves_less():
    df = None
    caps = []
    for mw in (0.03, 0.06, 0.1, 0.5):
        df = sizing.power_budget(Scenario(MODEL, "hgx-h200", **FAST), mw, min_tps_user=50)
        r = df.iloc[0]
        assert r.power_mw <= mw * (1 + 1e-9)
        caps.append(float(r.capacity_tps))
    assert all(b >= a for a, b in zip(caps, caps[1:], strict=False)) and caps[-1] > caps[0]
    # one node is 8 x 1275 W x 1.3 = 13.26 kW: 0.5 MW buys floor(500 / 13.26) = 37 nodes
    assert int(df.units.iloc[0]) == 37
    assert df.users.iloc[0] == int(caps[-1] // 50)  # whole users the capacity holds at 50 tok/s each
    with pytest.raises(SpecError, match="power_budget_mw"):
        sizing.power_budget(Scenario(MODEL, "hgx-h200", **FAST), 0.01,
                            min_tps_user=50)  # < one node (13.26 kW)
    # one node holds no 8-GPU decode instance and 8-GPU prefill instance together
    with pytest.raises(SpecError, match="no whole set of instances"):
        sizing.power_budget(Scenario(MODEL, "hgx-h200", **FAST), 0.014, min_tps_user=50)


def test_fleet_capacity_table():
    df = sizing.fleet_capacity(Scenario(MODEL, "hgx-h200", **FAST), 4, levels=[20, 100, 300, 5000])
    assert list(df.min_tps_user) == [20, 100, 300, 5000]
    caps = df.capacity_tps.to_numpy()
    # non-increasing; equal on the host-bound plateau (tokens/s per GPU 1 / (tau_q TP_a) whatever
    # the batch), up to rounding
    assert all(b <= a * (1 + 1e-12) for a, b in zip(caps, caps[1:], strict=False))
    assert not df.feasible.iloc[-1] and "at most" in df.reason.iloc[-1]
    # the fleet sized for its own capacity needs no more units than it has
    x, cap = 100.0, float(caps[1])
    back = sizing.size(Scenario(MODEL, "hgx-h200", **FAST), cap, min_tps_user=x)
    assert int(back.units.iloc[0]) <= 4


def test_cost_target():
    loose = sizing.cost_target(Scenario(MODEL, "hgx-h200", **FAST), 0.2, 5e5, refine=3).iloc[0]
    tight = sizing.cost_target(Scenario(MODEL, "hgx-h200", **FAST), 0.05, 5e5, refine=3).iloc[0]
    assert loose.feasible and tight.feasible
    assert loose.usd_per_mtok_owned <= 0.2 and tight.usd_per_mtok_owned <= 0.05
    assert loose.tps_per_user >= tight.tps_per_user  # a higher price buys more interactivity
    with pytest.raises(SpecError, match="cost_target"):
        sizing.cost_target(Scenario(MODEL, "hgx-h200", **FAST), 1e-6, 5e5, refine=0)


def test_overrides_and_sources():
    df = sizing.size(Scenario(MODEL, ["hgx-h200", "gb200-nvl72"], **FAST), 2e6, min_tps_user=50,
                     costs=Costs(usd_per_unit={"hgx-h200": 250_000.0}, watts_per_gpu=1000.0, pue=1.1,
                                 usd_per_kwh=0.1, years=5))
    h, g = df.iloc[0], df.iloc[1]
    assert h.price_per_unit == 250_000 and "user override" in h.price_per_unit_source
    assert g.price_per_unit == 3e6 and "about US$3 million" in g.price_per_unit_source
    assert h.power_per_gpu == 1000 and g.power_per_gpu == 1000
    assert h.capex_usd == pytest.approx(h.units * 250_000)
    assert h.power_mw == pytest.approx(h.gpus * 1000 * 1.1 / 1e6)
    yearly = h.capex_usd / 5 + h.opex_usd_per_year
    assert h.usd_per_mtok_owned == pytest.approx(yearly / (2e6 * 31_536_000 / 1e6))
    assert "user override (--pue)" in h.pue_source


def test_users_and_requests_demand():
    a = sizing.size(Scenario(MODEL, "hgx-h200", **FAST), {"users": 10_000}, min_tps_user=40).iloc[0]
    # 10,000 users x the tokens/s each gets (at least 40; the whole batch may give a little more)
    assert a.tps_per_user >= 40 and a.demand_tps == pytest.approx(10_000 * a.tps_per_user)
    b = sizing.size(Scenario(MODEL, "hgx-h200", osl=2000, **FAST), {"requests_per_s": 100},
                    min_tps_user=40).iloc[0]
    assert b.demand_tps == pytest.approx(200_000)  # 100 requests/s x 2000 output tokens


def test_unreachable_sla_names_best_of_each():
    with pytest.raises(SpecError) as e:
        sizing.size(Scenario(MODEL, ["hgx-h200", "hgx-h100"], **FAST), 1e5, min_tps_user=1e5)
    msg = str(e.value)
    assert "service_level" in msg and ">= 100000 tokens/s/user" in msg
    assert "hgx-h200: at most" in msg and "hgx-h100: at most" in msg
    # between the two tops (H100 below H200: less HBM bandwidth): one row each, the option out
    # of reach marked infeasible with its best
    top_h200, top_h100 = _top("hgx-h200"), _top("hgx-h100")
    assert top_h100 < top_h200
    level = (top_h100 + top_h200) / 2
    df = sizing.size(Scenario(MODEL, ["hgx-h200", "hgx-h100"], **FAST), 1e4, min_tps_user=level)
    ok, no = df.iloc[0], df.iloc[1]
    assert ok.feasible and ok.cheapest and ok.tps_per_user >= level * (1 - 1e-6)
    assert not no.feasible and not no.cheapest and no.max_tps_per_user < level
    assert no.reason.startswith("at most ")


@pytest.mark.parametrize("kw", [dict(serving="prefill"), dict(serving="aggregated", max_ttft=1.0),
                                dict(metric="total"), dict(basis="lease"), dict(pue=0.9),
                                dict(usd_per_unit={"hgx-b300": 1.0}), dict(years=0)])
def test_bad_options(kw):
    with pytest.raises(SpecError):
        costs = {k: kw[k] for k in kw if k in ("basis", "pue", "usd_per_unit", "years")}
        question = {k: v for k, v in kw.items() if k not in costs}
        sizing.size(Scenario(MODEL, "hgx-h200", **FAST | question), 1e5, min_tps_user=50,
                    costs=Costs(**costs))


# ---- one computation behind the table, the plot and the inverse questions ------------------------
def test_curve_at_the_level_is_the_table():
    # the plot's curve (sizing_curve) is read through the same deployment as the table (size)
    t = sizing.size(Scenario(MODEL, "hgx-h200", **FAST), 2e5, min_tps_user=30.0).iloc[0]
    c = sizing.sizing_curve(Scenario(MODEL, "hgx-h200", **FAST), 2e5, points=6, also_at=[30.0])
    at = c[c.tps_per_user == 30.0].iloc[0]
    assert at.units == t.units and at.gpus == t.gpus
    assert at.usd_per_mtok_owned == pytest.approx(t.usd_per_mtok_owned, rel=1e-12)


def test_cheapest_reported_is_what_the_target_reaches():
    # "cheapest $C (up to X tokens/s/user)" for an unreachable target; asking for $C then reaches
    # exactly X, and a level just above X costs more than C
    import re

    with pytest.raises(SpecError) as e:
        sizing.cost_target(Scenario(MODEL, "hgx-h200", **FAST), 1e-6, 2e5)
    m = re.search(r"cheapest \$([0-9.e-]+)/Mtok \(up to ([0-9.e+-]+) tokens/s/user\)", str(e.value))
    cheapest, x = float(m.group(1)), float(m.group(2))
    r = sizing.cost_target(Scenario(MODEL, "hgx-h200", **FAST), cheapest, 2e5).iloc[0]
    # the level is found by bisection (6 halvings of one step of the 64-level grid: about 0.1%), and
    # two searches at one price may stop at neighbouring levels of it
    assert r.usd_per_mtok_owned <= cheapest and r.tps_per_user == pytest.approx(x, rel=2e-3)
    above = sizing.size(Scenario(MODEL, "hgx-h200", **FAST), 2e5, min_tps_user=x * 1.05).iloc[0]
    assert above.usd_per_mtok_owned > cheapest


@pytest.mark.parametrize("serving", ["aggregated", "disaggregated"])
def test_users_demand_holds_every_user(serving):
    # each decode instance holds `batch` sequences: the plan holds every one of the users, each at
    # the level or faster (a grid point faster than the level serves the same tokens with fewer
    # sequences, so tokens alone do not say it)
    for level in (20.0, 55.0, 90.0):
        r = sizing.size(Scenario(MODEL, "hgx-h200", serving=serving, **FAST), {"users": 20_000},
                        min_tps_user=level).iloc[0]
        assert float(r.batch).is_integer()
        assert r.decode_instances * r.batch >= 20_000, (level, r.decode_instances, r.batch)
        assert r.tps_per_user >= level


def test_demand_no_fleet_serves_is_refused_and_costs_never_negative():
    # up to a billion GPUs the plan covers the demand (headroom >= 0, idle cost >= 0); beyond it
    # (1e20 tokens/s at 4000 tokens/s per GPU = 2.5e16 GPUs) the demand is refused, not priced
    for demand in np.geomspace(1.0, 3.9e12, 40):  # 3.9e12 / 4000 = 9.75e8 GPUs
        d = deployment(float(demand), **PERF, **RACK, **MONEY)
        assert d["capacity_tps"] >= demand and d["headroom"] >= 0 and d["idle_usd_per_year"] >= 0, demand
    with pytest.raises(SpecError, match="demand"):
        deployment(1e20, **PERF, **RACK, **MONEY)
    with pytest.raises(SpecError, match="demand: .*GPUs"):
        sizing.size(Scenario(MODEL, "hgx-h200", **FAST), 1e20, min_tps_user=20.0)
