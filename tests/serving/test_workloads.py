"""Workloads (planner.specs.workload) and their frontiers with KV tiers and service levels
(planner.serving.workloads, ``frontier --workload``, ``compare --workload``): means by hand, the
invariants of reuse, one-line errors."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from planner import Scenario
from planner.cli import main
from planner.errors import SpecError
from planner.serving.workloads import workload_frontier
from planner.specs.registry import load_hardware
from planner.specs.workload import load_workload, parse_slo, workload_names


def run(capsys, argv):
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def test_bundled_workloads_and_their_means_by_hand():
    assert {"agentic", "reasoning", "chat"} <= set(workload_names())
    w = load_workload("agentic")
    # turn k sends F + (k - 1)(N + O): the mean over 33 turns is F + 16 (N + O)
    assert w.isl == pytest.approx(12367 + 16 * (1732 + 522))
    # turn k >= 2 reuses F + (k - 2)(N + O) + O: (32 (F + O) + (N + O) 32 x 31 / 2) / 33
    assert w.cached == pytest.approx((32 * (12367 + 522) + 2254 * 32 * 31 / 2) / 33)
    assert 0.94 < w.cached / w.isl < 0.97       # the traces' card: 94.2% of input tokens cached
    r = load_workload("reasoning")
    assert (r.isl, r.osl, r.cached) == (1024, 8192, 0.0)
    assert load_workload("chat").slo == {"ttft_p99": 2.0, "tpot_p90": 0.05}


def test_slo_parsing_and_errors():
    assert parse_slo("ttft_p99=2,tpot_p90=0.05") == {"ttft_p99": 2.0, "tpot_p90": 0.05}
    assert parse_slo("tpot_p99.9=0.1") == {"tpot_p99.9": 0.1}
    for bad, where in (("ttft=2", "slo.ttft"), ("e2e_p99=3", "slo.e2e_p99"), ("ttft_p99=-1", "slo.ttft_p99"),
                       ("ttft_p100=1", "slo.ttft_p100"), ("", "slo"),
                       # the percentile in ASCII digits: float() would read these as 99
                       ("ttft_p9_9=2", "slo.ttft_p9_9"), ("ttft_p٩٩=2", "slo.ttft_p٩٩"),
                       ("ttft_p９９=2", "slo.ttft_p９９")):
        with pytest.raises(SpecError, match=where.replace(".", r"\.")):
            parse_slo(bad)


def test_trace_workload_by_hand(tmp_path):
    p = tmp_path / "trace.csv"
    # arrivals 1 s apart (a deterministic stream: c_a^2 = 0), two sessions
    p.write_text("arrival_s,input_tokens,output_tokens,cached_tokens,session\n"
                 "0,1000,100,0,a\n1,1000,100,0,b\n2,2100,100,1100,a\n3,2100,100,1100,b\n")
    w = load_workload(str(p))
    assert w.isl == pytest.approx(1550) and w.cached == pytest.approx(550) and w.osl == pytest.approx(100)
    assert w.arrival_cv2 == 0.0
    assert w.idle_s == pytest.approx(2.0)       # each session's requests are 2 s apart
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival_s,input_tokens,output_tokens,cached_tokens\n0,100,10,200\n1,100,10,0\n")
    with pytest.raises(SpecError, match=r"line 2\.cached_tokens: at most input_tokens"):
        load_workload(str(bad))


@pytest.fixture(scope="module")
def h200():
    return load_hardware("hgx-h200")


def _y(df, x):
    """The most tokens/s per GPU at x tokens/s per user or faster (0 if none)."""
    fast = df[df.tps_per_user >= x]
    return float(fast.tps_per_gpu.max()) if len(fast) else 0.0


def test_a_tier_of_zero_capacity_is_no_tier(h200):
    empty = dataclasses.replace(h200, host_capacity=0.0)
    a = workload_frontier(Scenario("deepseek-r1", empty, workload="agentic", kv_tiers=("hbm", "host")))
    b = workload_frontier(Scenario("deepseek-r1", h200, workload="agentic", kv_tiers=("hbm",)))
    assert np.allclose(a.tps_per_gpu, b.tps_per_gpu) and (a.kv_hit_share.to_numpy() == b.kv_hit_share).all()


def test_more_reuse_never_lowers_throughput_at_a_fixed_ttft_percentile(h200):
    xs = [20.0, 40.0, 60.0]
    prev = None
    for cap in (0.0, 20e9, 100e9, 1e12):
        hw = dataclasses.replace(h200, host_capacity=cap)
        f = workload_frontier(Scenario("deepseek-r1", hw, workload="agentic", kv_tiers=("host",)))
        assert (f.ttft_p99_s <= 3.0 + 1e-9).all()   # every point keeps the service level
        y = [_y(f, x) for x in xs]
        if prev is not None:
            assert all(b >= a * (1 - 1e-9) for a, b in zip(prev, y, strict=True)), (cap, prev, y)
        prev = y
    none = workload_frontier(Scenario("deepseek-r1", h200, workload="agentic", kv_tiers=()))
    assert (none.kv_hit_share == 0).all()
    # no tier asked: none is reported as binding, nor as held
    assert (none.kv_binding_tier == "no tier").all() and "kv_hbm_use" not in none.columns


def test_compare_workload_prints_tiers_and_json(capsys, tmp_path):
    argv = ["compare", "--model", "deepseek-v2-lite", "--workload", "chat", "--plot", ""]
    rc, out, err = run(capsys, [*argv, "--csv", str(tmp_path / "f.csv"), "--levels", "50", "100", "--json"])
    assert rc == 0, err
    d = json.loads(out)
    kv = d["kv_tiers"]
    for h in ("gb200-nvl72", "hgx-h200"):
        assert set(kv[h]["tiers"]) >= {"hbm", "host"}
        for t in kv[h]["tiers"].values():
            assert {"capacity_gb_per_gpu", "use", "binds"} <= set(t) and 0 <= t["use"] <= 1
    row = d["table"][0]
    assert {"ratio", "ratio_hbm_only"} <= set(row)
    assert (tmp_path / "f.csv").stat().st_size > 0
    rc, out, err = run(capsys, [*argv, "--csv", "", "--levels", "50"])
    assert rc == 0 and "ratio HBM only" in out and "KV tier HBM only" in out


def test_frontier_workload_rows_carry_percentiles_and_tier_use(capsys):
    rc, out, err = run(capsys, ["frontier", "--model", "kimi-k2-thinking", "--hardware", "gb200-nvl72",
                                "--workload", "agentic", "--plot", "", "--csv", "", "--json"])
    assert rc == 0, err
    pts = json.loads(out)["points"]
    assert pts and all({"ttft_p99_s", "tpot_p90_s", "kv_hit_share", "kv_host_use"} <= set(p) for p in pts)
    assert all(p["tpot_p90_s"] <= 0.03 + 1e-12 for p in pts)   # the workload's TPOT service level


@pytest.mark.parametrize(("argv", "needle"), [
    (["--slo", "ttft_p99=2"], "--slo: --workload with it"),
    (["--workload", "agentic", "--slo", "ttft=2"], "--slo.ttft"),
    (["--workload", "agentic", "--kv-tiers", "ssd"], "--kv-tiers: a comma list of hbm, host, nvme"),
    (["--workload", "agentc"], "did you mean agentic"),
    (["--workload", "agentic", "--gpus", "8"], "--gpus: no --workload with it"),
    (["--workload", "agentic", "--isl", "1024"], "--isl: no --workload with it"),
    (["--workload", "agentic", "--kv-offload"], "--kv-offload: no --workload with it"),
    (["--workload", "agentic", "--metric", "total"], "--metric: no --workload with it"),
    (["--workload", "agentic", "--serving", "aggregated"], "serving: disaggregated for a workload"),
    (["--workload", "agentic", "--serving", "decode"], "a decode pool alone has no TTFT"),
])
def test_workload_flags_refused_in_one_line(capsys, argv, needle):
    rc, out, err = run(capsys, ["frontier", "--model", "deepseek-r1", "--hardware", "hgx-h200", "--plot", "",
                                "--csv", "", *argv])
    assert rc == 2 and out == "" and err.count("\n") == 1 and needle in err, err


def test_size_with_a_workload_prices_the_workload_frontier(capsys):
    rc, out, err = run(capsys, ["size", "--model", "deepseek-r1", "--hardware", "hgx-h200", "--workload",
                                "chat", "--min-tps-user", "30", "--demand-tps", "1e5", "--json"])
    assert rc == 0, err
    row = json.loads(out)["options"]["hgx-h200"]
    f = workload_frontier(Scenario("deepseek-r1", "hgx-h200", workload="chat"))
    # the chosen point is one of the workload frontier's, at its tokens/s per GPU
    assert any(abs(row["tps_per_gpu"] / y - 1) < 1e-9 for y in f.tps_per_gpu)
    # its pools rate-matched at the prefill rate that counts reused tokens as done: the decode and
    # prefill GPUs per output token/s add up to the frontier's 1 / y
    g = row["decode_tps_per_gpu"]
    p = row["prefill_tps_per_gpu"]
    w = load_workload("chat")
    assert 1 / (1 / g + (w.isl / w.osl) / p) == pytest.approx(row["tps_per_gpu"], rel=1e-9)


def test_plan_with_sessions(tmp_path, capsys):
    plan = tmp_path / "plan.yaml"
    plan.write_text("workloads:\n  - {name: agents, model: deepseek-r1, sessions: chat, min_tps_user: 30, "
                    "demand_tps: 100000, kv_tiers: hbm}\nsystems:\n  - hardware: hgx-h200\n")
    rc, out, err = run(capsys, ["plan", str(plan), "--json"])
    assert rc == 0, err
    bad = tmp_path / "bad.yaml"
    bad.write_text("workloads:\n  - {name: a, model: deepseek-r1, sessions: chat, isl: 2048, "
                   "min_tps_user: 30, demand_tps: 100000}\nsystems:\n  - hardware: hgx-h200\n")
    rc, out, err = run(capsys, ["plan", str(bad)])
    assert rc == 2 and "workloads[0].isl: no isl with sessions" in err and err.count("\n") == 1
