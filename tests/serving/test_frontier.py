"""Frontier engine: Pareto envelope, serving modes, reproduction of points, compare/explain."""

import math

import numpy as np
import pandas as pd
import pytest

from planner import Scenario, decode_step
from planner.serving.comparison import compare, envelope, explain
from planner.serving.frontiers import frontier, frontier_at
from planner.serving.search import pareto

MODEL, HW = "deepseek-v2-lite", "hgx-h200"  # small model: fast frontiers


@pytest.fixture(scope="module")
def dec():
    return frontier(Scenario(MODEL, HW, serving="decode", context=2048, gpus=8, mode="realistic"))


def test_pareto_hand_example():
    # (x, y): (1, 10) dominated by (2, 10); (3, 5) kept; (2.5, 4) dominated by (3, 5)
    df = pd.DataFrame({"tps_per_user": [1, 2, 3, 2.5, 4], "tps_per_gpu": [10, 10, 5, 4, 1]})
    f = pareto(df)
    assert f.tps_per_user.tolist() == [2, 3, 4]
    assert f.tps_per_gpu.tolist() == [10, 5, 1]


def test_frontier_monotone(dec):
    assert len(dec) > 5
    assert (np.diff(dec.tps_per_user) > 0).all()
    assert (np.diff(dec.tps_per_gpu) <= 0).all()
    assert np.isfinite(dec[["tps_per_user", "tps_per_gpu", "tps_per_mw", "usd_per_mtok_rental"]]).all().all()


def test_frontier_point_reproduces_through_decode_step(dec):
    for _, r in dec.iloc[:: max(len(dec) // 5, 1)].iterrows():
        at = Scenario(MODEL, HW, gpus=int(r.gpus), tp_attn=int(r.tp_attn), ep=int(r.ep), tp_moe=int(r.tp_moe),
                      weights=r.weights, kv=r.kv, mtp=int(r.mtp), overlap=bool(r.overlap), mode="realistic")
        res = decode_step(at, expert_slots=int(r.expert_slots), batch=float(r.batch), context=2048)
        assert res.feasible
        assert math.isclose(res.tps_per_user, r.tps_per_user, rel_tol=1e-9)
        assert math.isclose(res.tps_per_gpu, r.tps_per_gpu, rel_tol=1e-9)


def test_cost_columns_follow_spec(dec):
    from planner import load_hardware

    hw = load_hardware(HW)
    r = dec.iloc[len(dec) // 2]
    # tokens/s/MW = y * 1e6 / W_gpu; $/Mtok = price per GPU-hour / (3600 y) * 1e6
    assert math.isclose(r.tps_per_mw, r.output_tps_per_gpu * 1e6 / hw.power_per_gpu, rel_tol=1e-12)
    assert math.isclose(r.usd_per_mtok_rental, hw.price_per_gpu_hour / (3600 * r.output_tps_per_gpu) * 1e6,
                        rel_tol=1e-12)


def test_bound_frontier_above_realistic():
    kw = dict(serving="decode", context=2048, gpus=8)
    fb = frontier(Scenario(MODEL, HW, mode="bound", **kw))
    fr = frontier(Scenario(MODEL, HW, mode="realistic", **kw))
    x = fr.tps_per_user.to_numpy()
    yb = envelope(fb, x)
    ok = np.isfinite(yb)
    assert ok.any()
    assert (yb[ok] >= fr.tps_per_gpu.to_numpy()[ok] * (1 - 1e-9)).all()
    assert fb.tps_per_user.max() >= fr.tps_per_user.max()


def test_disaggregated_rate_matching():
    f = frontier(Scenario(MODEL, HW, serving="disaggregated", isl=2048, osl=512, gpus=8))
    r = f.iloc[len(f) // 2]
    # G_p X_p = (I/O) G_d X_d  =>  output per GPU = X_d G_d / (G_d + G_p)
    g_d = r.decode_gpu_fraction
    g_p = 1 - g_d
    assert math.isclose(g_p * r.prefill_tps_per_gpu, (2048 / 512) * g_d * r.decode_tps_per_gpu, rel_tol=1e-9)
    assert math.isclose(r.output_tps_per_gpu, r.decode_tps_per_gpu * g_d, rel_tol=1e-9)
    assert math.isclose(r.total_tps_per_gpu, r.output_tps_per_gpu * (2048 + 512) / 512, rel_tol=1e-12)
    assert r.ttft_s <= 2.0
    # TTFT = the request's latency outside the passes (the stack's fitted t_req) + the pass's host
    # time (tau_h per kernel of the pass) + pass + hand-off
    from planner.physics.step import pass_kernels
    from planner.specs.registry import load_hardware, load_model

    e = load_hardware(HW).efficiency
    assert e.ttft_request > 0 and r.ttft_request_s == e.ttft_request
    assert e.ttft_host > 0 and r.ttft_host_s == pytest.approx(e.ttft_host * pass_kernels(load_model(MODEL)))
    assert math.isclose(r.ttft_s, e.ttft_request + r.ttft_host_s + r.prefill_pass_s + r.kv_transfer_s,
                        rel_tol=1e-12)
    b = frontier(Scenario(MODEL, HW, serving="disaggregated", isl=2048, osl=512, gpus=8,
                          mode="bound")).iloc[0]
    assert b.ttft_request_s == 0 and b.ttft_host_s == 0
    assert math.isclose(b.ttft_s, b.prefill_pass_s + b.kv_transfer_s)


def test_aggregated_below_decode_only():
    kw = dict(context=None, isl=1024, osl=1024, gpus=8, mtp=None, overlap=False)
    fa = frontier(Scenario(MODEL, HW, serving="aggregated", **kw))
    fd = frontier(Scenario(MODEL, HW, serving="decode", **kw))
    x = fa.tps_per_user.to_numpy()
    yd = envelope(fd, x)
    ok = np.isfinite(yd)
    assert (fa.tps_per_gpu.to_numpy()[ok] <= yd[ok] * (1 + 1e-9)).all()


def test_prefill_frontier_trades_ttft():
    f = frontier(Scenario(MODEL, HW, serving="prefill", isl=2048, gpus=8))
    assert (np.diff(f.ttft_s) > 0).all() and (np.diff(f.tps_per_gpu) > 0).all()


def test_prefill_does_not_split_a_prompt_over_data_parallel_ranks():
    # a prompt's attention runs on one attention rank: every prefill point gives each of an
    # instance's G / TP_a attention ranks a whole number of prompts, at least one
    pts = frontier(Scenario("llama-3.1-8b", "hgx-h200", serving="prefill", isl=2048), all_points=True)
    ranks = pts.prefill_gpus / pts.prefill_tp_attn
    per_rank = pts.prefill_batch / ranks
    assert (ranks > 1).any() and (per_rank >= 1).all() and np.allclose(per_rank, np.round(per_rank))
    # a dense model at TP 1: 8 replicas with a prompt each take one replica's pass with one prompt
    dp = pts[(pts.prefill_tp_attn == 1) & (pts.prefill_weights == "bf16")]
    one = dp[(dp.prefill_gpus == 1) & (dp.prefill_batch == 1)].prefill_pass_s
    eight = dp[(dp.prefill_gpus == 8) & (dp.prefill_batch == 8)].prefill_pass_s
    assert len(one) and len(eight) and np.allclose(eight.to_numpy()[:1], one.to_numpy()[:1], rtol=1e-9)


def test_frontier_at_solves_exact_rate(dec):
    t = frontier_at(Scenario(MODEL, HW, serving="decode", context=2048, gpus=8), [20.0, 60.0])
    for x, r in zip([20.0, 60.0], t.itertuples(), strict=True):
        assert r.tps_per_user >= x * (1 - 1e-6)
        # never worse than the sampled frontier at that rate
        best_grid = dec[dec.tps_per_user >= x].tps_per_gpu.max()
        assert r.tps_per_gpu >= best_grid * (1 - 1e-9)


def test_frontier_at_does_not_depend_on_the_points_tables_order():
    """frontier_at reads the all-points table by position: the same table with its rows shuffled
    (and a fresh index) gives the same answer, and the unsorted table it builds for itself too."""
    kw = dict(serving="decode", context=2048, gpus=8)
    pts = frontier(Scenario(MODEL, HW, **kw), all_points=True)
    levels = [15.0, 40.0, 90.0]
    t = frontier_at(Scenario(MODEL, HW, **kw), levels, points=pts)
    shuffled = pts.sample(frac=1.0, random_state=5).reset_index(drop=True)
    shuffled.attrs.update(pts.attrs)
    for other in (frontier_at(Scenario(MODEL, HW, **kw), levels, points=shuffled),
                  frontier_at(Scenario(MODEL, HW, **kw), levels)):
        for col in ("tps_per_gpu", "tps_per_user", "batch"):
            assert np.allclose(other[col].to_numpy(float), t[col].to_numpy(float), rtol=1e-12), col


#: KV spilled to CPU memory: past the HBM limit a larger batch lowers tokens/s per GPU, so the
#: largest batch meeting a rate is not the best one
OFFLOAD = dict(serving="decode", context=16384, gpus=8, kv_offload=True)
LEVELS = [5.0, 10.0, 20.0, 30.0, 50.0, 100.0]


def _check_envelope(front: pd.DataFrame, levels: list[float], got: np.ndarray, rates: np.ndarray) -> None:
    for x, y, r in zip(levels, got, rates, strict=True):
        # a point at least as fast for each user can serve x: nothing below the frontier's best
        assert y >= front[front.tps_per_user >= x].tps_per_gpu.max() * (1 - 1e-9), (x, y)
        assert r >= x * (1 - 1e-6)
    assert (np.diff(got) <= 1e-9 * got[:-1]).all(), got  # never rises with interactivity


def test_frontier_at_is_the_upper_envelope_with_kv_offload():
    pts = frontier(Scenario(MODEL, HW, **OFFLOAD), all_points=True)
    front = frontier(Scenario(MODEL, HW, **OFFLOAD))
    t = frontier_at(Scenario(MODEL, HW, **OFFLOAD), LEVELS, points=pts)
    _check_envelope(front, LEVELS, t.tps_per_gpu.to_numpy(), t.tps_per_user.to_numpy())
    # the same in any order, and every consumer sees it: the comparison table and the sizing
    t2 = frontier_at(Scenario(MODEL, HW, **OFFLOAD), LEVELS[::-1], points=pts)
    assert np.allclose(t2.tps_per_gpu.to_numpy()[::-1], t.tps_per_gpu.to_numpy(), rtol=1e-12)
    c = compare(Scenario(MODEL, ("hgx-b200", HW), **OFFLOAD), levels=tuple(LEVELS))
    asked = c.table[c.table.asked]  # the levels asked (the table also carries the largest ratio's rate)
    _check_envelope(c.b, LEVELS, asked.tps_per_gpu_b.to_numpy(), np.array(LEVELS))
    _check_envelope(c.a, LEVELS, asked.tps_per_gpu_a.to_numpy(), np.array(LEVELS))
    from planner.economics.sizing import size

    sz = size(Scenario(MODEL, HW, serving="decode", **{k: v for k, v in OFFLOAD.items()
                                                               if k != "serving"}), 1e6, min_tps_user=5.0)
    assert sz.tps_per_gpu.iloc[0] >= front[front.tps_per_user >= 5.0].tps_per_gpu.max() * (1 - 1e-9)


def test_more_bandwidth_never_lowers_frontier():
    from planner import load_hardware

    hw = load_hardware(HW)
    kw = dict(serving="decode", context=2048, gpus=16)
    f0 = frontier(Scenario(MODEL, hw, **kw))
    f1 = frontier(Scenario(MODEL, hw.replace(hbm_bandwidth=hw.hbm_bandwidth * 1.5,
                                    so_bandwidth=hw.so_bandwidth * 2), **kw))
    x = f0.tps_per_user.to_numpy()
    y1 = envelope(f1, x)
    ok = np.isfinite(y1)
    # the sampled envelopes are compared at the sampled points of f0 (f1 reaches at least as far)
    assert f1.tps_per_user.max() >= f0.tps_per_user.max()
    assert (y1[ok] >= f0.tps_per_gpu.to_numpy()[ok] * 0.97).all()


def test_compare_and_explain_small():
    c = compare(Scenario(MODEL, ("hgx-b200", "hgx-h200"), serving="decode", context=2048, gpus=8),
                levels=(20.0, 50.0))
    # the two levels asked, and the rate of the largest ratio (unless one of them)
    assert c.table.asked.sum() == 2 and len(c.table) <= 3 and (c.table.ratio > 1).all()  # B200 beats H200
    e = explain(Scenario(MODEL, ("hgx-b200", "hgx-h200"), serving="decode", context=2048, gpus=8), at=50.0)
    chain = e[e.kind == "chain"]
    assert math.isclose(chain.factor.prod(), e.attrs["ratio"], rel_tol=1e-6)


def test_explain_out_of_reach_names_the_side_and_the_range(capsys):
    from planner import SpecError
    from planner.cli import main

    kw = dict(serving="decode", context=2048, gpus=8)
    top_a = frontier(Scenario(MODEL, "hgx-b200", **kw)).tps_per_user.max()
    top_b = frontier(Scenario(MODEL, HW, **kw)).tps_per_user.max()
    assert top_b < top_a
    at = (top_a + top_b) / 2  # B200 reaches it, H200 does not
    with pytest.raises(SpecError, match=rf"at: a rate both systems reach.*: {HW} tops out at "
                                        rf"{top_b:.4g}; both reach up to {top_b:.4g} tokens/s/user$"):
        explain(Scenario(MODEL, ("hgx-b200", HW), **kw), at=at)
    argv = ["compare", "--model", MODEL, "--hardware", "hgx-b200", HW, "--serving", "decode", "--context",
            "2048", "--gpus", "8", "--explain", "--at", f"{at:g}"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"{HW} tops out at" in err and "nan" not in err


def test_systems_sharing_a_name_are_kept_apart(tmp_path, capsys):
    import json

    from planner import SpecError
    from planner.cli import main
    from planner.specs.registry import bundled_hardware_text

    spec = bundled_hardware_text(HW)
    a, b = tmp_path / "h200-a.yaml", tmp_path / "h200-b.yaml"
    a.write_text(spec)
    b.write_text(spec.replace('hbm_bandwidth: {value: "4.8 TB/s"', 'hbm_bandwidth: {value: "2.4 TB/s"'))
    kw = dict(serving="decode", context=2048, gpus=8)
    # at 100 tokens/s per user, where the step is the GPU's (at 20 both run at the host's pace: the
    # TensorRT-LLM fit's time per sequence caps tokens/s per GPU whatever the HBM)
    c = compare(Scenario(MODEL, (str(a), str(b)), **kw), levels=(100.0,))
    assert (c.settings["hardware_a"], c.settings["hardware_b"]) == ("h200-a", "h200-b")
    assert set(c.a.hardware) == {"h200-a"} and set(c.b.hardware) == {"h200-b"}
    assert c.table.ratio.iloc[0] > 1  # twice the HBM bandwidth: the two are not one system
    argv = ["compare", "--model", MODEL, "--hardware", str(a), str(b), "--serving", "decode", "--context",
            "2048", "--gpus", "8", "--levels", "100", "--plot", "", "--csv", "", "--json"]
    assert main(argv) == 0
    assert set(json.loads(capsys.readouterr().out)["frontiers"]) == {"h200-a", "h200-b"}
    # one bundled system under two stacks: the stacks tell them apart; the same one twice: refused
    c = compare(Scenario(MODEL, (HW + "@trtllm", HW + "@sglang"), **kw), levels=(20.0,))
    assert (c.settings["hardware_a"], c.settings["hardware_b"]) == (HW + "@trtllm", HW + "@sglang")
    with pytest.raises(SpecError, match=f"hardware: different systems, got '{HW}' more than once"):
        compare(Scenario(MODEL, (HW, HW), **kw), levels=(20.0,))


@pytest.mark.parametrize("bad", [dict(serving="sideways"), dict(metric="joules"), dict(isl=0),
                                 dict(max_ttft=-1.0), dict(mode="fast")])
def test_bad_frontier_input(bad):
    from planner import SpecError

    kw = dict(serving="decode", gpus=8) | bad
    with pytest.raises(SpecError):
        frontier(Scenario(MODEL, HW, **kw))


def test_aggregated_is_harmonic_mean_of_same_layout_rates():
    # every GPU decodes and prefills: per-GPU output = 1 / (1/X_d + (I/O) / X_p), with X_d the
    # decode-only rate of the same configuration and X_p its chunked-prefill rate, where one
    # attention rank spans the instance; with attention DP the ranks step together and a step
    # waits for any rank's prefill chunk, so the output is below that harmonic mean
    f = frontier(Scenario(MODEL, HW, serving="aggregated", isl=2048, osl=512, gpus=8, mtp=None))
    ranks = f.gpus / f.tp_attn
    for rows, equal in ((f[ranks == 1], True), (f[ranks > 1], False)):
        assert len(rows)
        r = rows.iloc[len(rows) // 2]
        at = Scenario(MODEL, HW, gpus=int(r.gpus), tp_attn=int(r.tp_attn), ep=int(r.ep), tp_moe=int(r.tp_moe),
                      weights=r.weights, kv=r.kv, overlap=bool(r.overlap))
        d = decode_step(at, expert_slots=int(r.expert_slots), batch=float(r.batch), context=2048 + 512 / 2)
        expected = 1 / (1 / d.tps_per_gpu + (2048 / 512) / r.prefill_tps_per_gpu)
        if equal:
            assert math.isclose(r.output_tps_per_gpu, expected, rel_tol=1e-9)
            assert math.isclose(r.tps_per_gpu, expected, rel_tol=1e-9)
        else:
            assert r.output_tps_per_gpu < expected * (1 - 1e-6)


def test_frontier_point_reproduces_through_point_cli(dec, capsys):
    import json

    from planner.cli import main

    r = dec.iloc[len(dec) // 3]
    argv = ["point", "--model", MODEL, "--hardware", HW, "--gpus", str(int(r.gpus)),
            "--tp-attn", str(int(r.tp_attn)), "--ep", str(int(r.ep)), "--tp-moe", str(int(r.tp_moe)),
            "--expert-slots", str(int(r.expert_slots)), "--batch", str(int(r.batch)), "--context", "2048",
            "--weights", r.weights, "--kv", r.kv, "--mtp", str(int(r.mtp)) if r.mtp else "off",
            "--mode", "realistic", "--json"] + (["--overlap"] if r.overlap else [])
    assert main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert math.isclose(d["tps_per_user"], r.tps_per_user, rel_tol=1e-9)
    assert math.isclose(d["tps_per_gpu"], r.tps_per_gpu, rel_tol=1e-9)


def test_compare_summary_is_a_row_of_its_table(capsys):
    # the largest ratio quoted is a row of the table, at least every useful row's ratio; a row
    # where one side is in its tail (< 5% of its peak) is flagged, never quoted
    from planner.cli import main
    from planner.serving.comparison import USEFUL

    c = compare(Scenario(MODEL, ("gb200-nvl72", "hgx-h200"), serving="decode", context=2048, gpus=8),
                levels=(10.0, 50.0, 100.0, 150.0))
    t = c.table
    assert t.largest.sum() == 1 and t.asked.sum() == 4
    top = t[t.largest].iloc[0]
    assert top.both_useful and (t[t.both_useful].ratio <= top.ratio).all()
    # ... and it is the curve's largest useful ratio, to within the curve's interpolation (the
    # table solves each row exactly): not an asked level's smaller ratio where the curve's own
    # peak fell into a tail when solved (ISL 8192 once quoted 5.9x at 100 beside a 9.6x peak)
    curve = c.ratio[c.ratio.both_useful].ratio
    assert curve.empty or top.ratio >= 0.9 * curve.max()
    assert (t.both_useful == ((t.tps_per_gpu_a >= USEFUL * c.a.tps_per_gpu.max())
                              & (t.tps_per_gpu_b >= USEFUL * c.b.tps_per_gpu.max()))).all()
    assert main(["compare", "--model", MODEL, "--hardware", "gb200-nvl72", "hgx-h200", "--serving", "decode",
                 "--context", "2048", "--gpus", "8", "--levels", "10", "50", "100", "150", "--plot", "",
                 "--csv", ""]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("# largest per-GPU ratio"))
    quoted = line.split()[4]
    row = next(x for x in out.splitlines() if x.rstrip().endswith("largest"))
    numbers = [v.replace(",", "") for v in row.split()]
    cells = [float(v) for v in numbers if v.replace(".", "", 1).isdigit()]
    assert float(quoted.rstrip("x")) in cells  # the summary's figure is the marked row's


def test_largest_row_is_the_curves_peak_that_stays_useful_when_solved():
    # the ratio curve's useful peaks at 197, 150 and 100 tokens/s/user (9.6x, 8x, 5x); solved
    # exactly for the table, system b at 197 gives 31 tok/s/GPU, under 5% of its 630 peak (its
    # tail), so the table's largest row is the curve's next, 150, not an asked level's 5x
    import planner.serving.comparison as cmp

    ratio = pd.DataFrame({"tps_per_user": [100.0, 150.0, 197.3], "ratio": [5.0, 8.0, 9.6],
                          "both_useful": [True, True, True]})
    solved = {"a": {100.0: 1500.0, 150.0: 600.0, 197.0: 300.0}, "b": {100.0: 300.0, 150.0: 75.0, 197.0: 31.0}}

    fa, fb = pd.DataFrame({"tps_per_gpu": [2338.0]}), pd.DataFrame({"tps_per_gpu": [630.0]})

    def solve(xs):  # as Comparison.solve: each side solved at each rate, and both useful
        ya = np.array([solved["a"][float(x)] for x in xs])
        yb = np.array([solved["b"][float(x)] for x in xs])
        return ya / yb, ya / yb, cmp._both_useful(ya, yb, fa, fb)

    assert cmp._largest_useful_rate(ratio, solve) == 150.0
    solved["b"][197.0] = 32.0  # at 5.1% of its peak: useful, and the peak is quoted
    assert cmp._largest_useful_rate(ratio, solve) == 197.0
    # a curve with one useful point that falls into the tail when solved: no row is added
    solved["b"][197.0] = 31.0
    assert cmp._largest_useful_rate(ratio.iloc[2:], solve) is None


def test_table_columns_have_one_format():
    from planner.outputs import table

    out = table([[1.993, 19_340.0, "a"], [2.1, 547.5, "b"], [18.25, None, "c"], [0.004, 12.0, "d"]],
                ["ratio", "tok/s/GPU", "x"])
    cols = list(zip(*[line.split() for line in out.splitlines()[2:]], strict=True))
    # ratio: 4 significant digits for 18.25 -> 2 decimals, widened to 3 so that 0.004 is not 0.00
    assert cols[0] == ("1.993", "2.100", "18.250", "0.004")
    assert cols[1] == ("19,340", "548", "-", "12")  # from 10,000 up: no decimals, in every row


def test_frontier_at_never_falls_when_a_resource_improves():
    # Kimi K2 Thinking disaggregated on HGX H200 (TensorRT-LLM fit) at 50 tokens/s per user: with
    # the network fraction raised from 0.3 to 0.4 every configuration is at least as fast, so the
    # best one is too.  A search that solved only the four best grid candidates exactly left out
    # the 8-GPU INT4 layout (1,439 tokens/s per GPU) at 0.4 and returned a 72-GPU one at 1,399.
    from planner.specs.registry import load_hardware

    hw = load_hardware("hgx-h200@trtllm")
    sides = [Scenario("kimi-k2-thinking", hw.replace(efficiency={"scale_out": f, "scale_up": f}),
                      serving="disaggregated") for f in (0.3, 0.4)]
    got = [float(frontier_at(s, [50.0]).tps_per_gpu.iloc[0]) for s in sides]
    assert got[1] >= got[0] * (1 - 1e-9), got
