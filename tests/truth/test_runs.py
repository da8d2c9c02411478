"""Measured runs (planner.truth.runs): each cleaning rule on a small hand-made CSV, the
accounting of the bundled file, and the ``validate --runs`` command line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from planner import Scenario
from planner.cli import main
from planner.errors import SpecError
from planner.truth.runs import REQUIRED, load_runs, running_fraction, score_runs

SUMMARY_KEYS = {"rows_total", "rows_scored", "rows_unmapped_by_reason", "tpot_median_abs_err",
                "tpot_p90_abs_err", "tpot_bias", "ttft_median_abs_err", "bound_violations",
                "bound_violations_flagged", "groups", "by_build"}

#: an aggregated DeepSeek-R1 run on 8 x H200 (TRT-LLM, FP8, TP8 EP8, 16 sequences), numbers made up
BASE = dict(
    id="dsr1_h200_trtllm_fp8_agg_1024x1024_c16_tp8_ep8_1", silicon_data_source="hand-made",
    backend="trtllm", backend_version="1.0", model_path="deepseek-ai/DeepSeek-R1", system="h200_sxm",
    precision="fp8", mode="agg", isl=1024, osl=1024, gemm_quant_mode="fp8", moe_quant_mode="fp8",
    batch_size=16, tp_size=8, pp_size=1, attention_dp_size=1, moe_tp_size=1, moe_ep_size=8,
    silicon_ttft_ms=600.0, silicon_tpot_ms=20.0, concurrency=16,
)


def _csv(tmp_path, rows: list[dict]) -> str:
    full = [{c: None for c in REQUIRED} | BASE | r for r in rows]
    path = tmp_path / "runs.csv"
    pd.DataFrame(full).to_csv(path, index=False)
    return str(path)


def _by_id(score) -> pd.DataFrame:
    return score.rows.set_index("id")


def test_duplicate_rows_are_dropped_and_counted(tmp_path):
    path = _csv(tmp_path, [
        {},
        {"id": "copy_of_first"},                                             # same run, another id
        {"id": "dsr1_h200_v3_label", "model_path": "deepseek-ai/DeepSeek-V3"},  # V3 label on an R1 run
        {"id": "dsr1_h200_v3_own", "model_path": "deepseek-ai/DeepSeek-V3", "silicon_tpot_ms": 21.0},
    ])
    s = score_runs(path)
    r = _by_id(s)
    assert r.loc["copy_of_first", "rule"] == "duplicate"
    assert r.loc["dsr1_h200_v3_label", "rule"] == "duplicate"
    assert r.loc[BASE["id"], "rule"] == ""
    # not a duplicate (another TPOT), but its id names DeepSeek-R1: scored, flagged, as DeepSeek-R1
    assert r.loc["dsr1_h200_v3_own", "flags"] == "label_contradicts_id"
    assert r.loc["dsr1_h200_v3_own", "model"] == "deepseek-r1"
    assert s.summary()["rows_unmapped_by_reason"]["cleaning: duplicate"] == 2


def test_a_copy_whose_times_differ_in_the_last_bit_is_a_duplicate(tmp_path):
    # the bundled file's copies of one run exported twice: 12.277643327434149 and ...147 ms
    path = _csv(tmp_path, [
        {"silicon_tpot_ms": 12.277643327434149},
        {"id": "copy_last_bit", "silicon_tpot_ms": 12.277643327434147},
        {"id": "another_run", "silicon_tpot_ms": 12.27764332},  # differs in the 10th digit
    ])
    r = _by_id(score_runs(path))
    assert r.loc["copy_last_bit", "rule"] == "duplicate"
    assert r.loc["another_run", "rule"] != "duplicate"


def test_queueing_from_the_rows_own_numbers(tmp_path):
    # OSL 128, TPOT 20 ms: 127 x 20 ms = 2.54 s decoding per request; with TTFT 10 s the share of
    # the concurrency decoding is 2.54 / 12.54 = 0.20 < 0.5: queueing.  TTFT 1 s: 2.54 / 3.54 = 0.72.
    path = _csv(tmp_path, [
        {"id": "queued", "osl": 128, "silicon_ttft_ms": 10_000.0},
        {"id": "fine", "osl": 128, "silicon_ttft_ms": 1_000.0},
    ])
    s = score_runs(path)
    r = _by_id(s)
    assert r.loc["queued", "running_fraction"] == pytest.approx(2540 / 12540)
    assert r.loc["queued", "rule"] == "queueing"
    assert r.loc["fine", "rule"] == ""
    assert not r.loc["queued", "scored"] and r.loc["fine", "scored"]


def test_running_fraction_by_hand():
    df = pd.DataFrame({"osl": [1001.0], "silicon_tpot_ms": [10.0], "silicon_ttft_ms": [10_000.0]})
    assert float(running_fraction(df).iloc[0]) == pytest.approx(0.5)  # 1000 x 10 ms vs 10 s


def test_layout_that_contradicts_its_id(tmp_path):
    # the id says TP8 EP8 (8 GPUs); tp_size records 8 x 8 = 64
    # and the same 8 x 8 recorded as a worker of TP 1 x attention DP 64
    path = _csv(tmp_path, [{"id": "x_tp8_ep8_7", "tp_size": 64, "moe_tp_size": 8, "moe_ep_size": 8},
                           {"id": "z_tp8_ep8_9", "tp_size": 1, "attention_dp_size": 64, "moe_tp_size": 8,
                            "moe_ep_size": 8, "batch_size": 1, "concurrency": 64},
                           {"id": "y_tp8_ep8_8"}])
    r = _by_id(score_runs(path))
    assert r.loc["x_tp8_ep8_7", "rule"] == "layout_contradicts_id"
    assert r.loc["z_tp8_ep8_9", "rule"] == "layout_contradicts_id"
    assert r.loc["y_tp8_ep8_8", "rule"] == ""


def test_faster_than_the_bound_is_listed_as_speculation(tmp_path):
    # 0.1 ms per token: 8 x H200 cannot even read the attention weights of one layer that fast
    # (the normal row runs 32 sequences: not a twin of the fast one, which would flag it too)
    path = _csv(tmp_path, [{"id": "too_fast", "silicon_tpot_ms": 0.1, "silicon_ttft_ms": 10.0},
                           {"id": "normal", "batch_size": 32, "concurrency": 32}])
    s = score_runs(path)
    r = _by_id(s)
    assert r.loc["too_fast", "bound_violation"]
    assert r.loc["too_fast", "rule"] == "speculation_suspected"
    assert list(s.violations().id) == ["too_fast"]
    summary = s.summary()
    assert summary["bound_violations"] == 1 and summary["bound_violations_flagged"] == 0
    assert not r.loc["normal", "bound_violation"] and r.loc["normal", "scored"]


def test_a_much_faster_twin_is_flagged(tmp_path):
    # the same configuration measured with two builds: 20 ms and 12 ms (1.67x > 1.3x)
    path = _csv(tmp_path, [{"id": "slow_build", "backend_version": "1.0"},
                           {"id": "fast_build", "backend_version": "1.1", "silicon_tpot_ms": 12.0}])
    r = _by_id(score_runs(path))
    assert r.loc["fast_build", "twin_faster"] and r.loc["fast_build", "rule"] == "speculation_suspected"
    assert r.loc["slow_build", "rule"] == ""


def test_bound_is_below_realistic_and_unmapped_rows_say_why(tmp_path):
    path = _csv(tmp_path, [{}, {"id": "glm", "model_path": "zhipuai/GLM-5"},
                           {"id": "odd_layout", "moe_tp_size": 2, "moe_ep_size": 8},
                           {"id": "other", "model_path": "some/unknown-model"}])
    s = score_runs(path)
    r = _by_id(s)
    base = r.loc[BASE["id"]]
    assert 0 < base.tpot_bound_ms <= base.tpot_realistic_ms
    assert base.tpot_ratio == pytest.approx(base.tpot_realistic_ms / 20.0)
    # GLM-5 (DeepSeek sparse attention) is modelled: its row is priced like any other
    assert r.loc["glm", "model"] == "glm-5" and 0 < r.loc["glm", "tpot_realistic_ms"]
    assert r.loc["odd_layout", "status"].startswith("layout inconsistent")
    assert r.loc["other", "status"] == "model not bundled"
    summary = s.summary()
    assert set(summary) == SUMMARY_KEYS
    assert summary["rows_scored"] + sum(summary["rows_unmapped_by_reason"].values()) == summary["rows_total"]


def test_bundled_file_accounts_for_every_row():
    s = score_runs()
    summary = s.summary()
    assert summary["rows_total"] == 4407
    assert summary["rows_scored"] + sum(summary["rows_unmapped_by_reason"].values()) == 4407
    assert summary["rows_unmapped_by_reason"]["cleaning: duplicate"] > 0
    assert summary["rows_scored"] > 1000
    for g in summary["groups"]:
        assert g["n"] > 0 and g["tpot_bias"] > 0


def test_missing_column_is_one_line(tmp_path):
    path = tmp_path / "bad.csv"
    pd.DataFrame([BASE]).drop(columns=["moe_ep_size"]).to_csv(path, index=False)
    with pytest.raises(SpecError, match="missing .*moe_ep_size"):
        load_runs(path)


def test_cli_runs_json_and_out(tmp_path, capsys):
    path = _csv(tmp_path, [{}, {"id": "copy"}])
    out = tmp_path / "rows.csv"
    assert main(["validate", "--runs", path, "--json", "--out", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == SUMMARY_KEYS
    assert doc["rows_total"] == 2 and doc["rows_scored"] == 1
    rows = pd.read_csv(out)
    assert len(rows) == 2 and {"tpot_realistic_ms", "tpot_bound_ms", "rule", "status"} <= set(rows.columns)


def test_cli_runs_table(tmp_path, capsys):
    assert main(["validate", "--runs", _csv(tmp_path, [{}])]) == 0
    text = capsys.readouterr().out
    assert "hgx-h200" in text and "deepseek-r1" in text and "rows not scored" in text


@pytest.mark.parametrize("argv", [["validate", "--runs", "/nonexistent/runs.csv"],
                                  ["validate", "--out", "x.csv"]])
def test_cli_runs_bad_input(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


#: a disaggregated DeepSeek-R1 run on H200 (decode TP8 EP8, prefill TP8 EP8), workers not recorded
DISAGG = dict(
    id="dsr1_h200_trtllm_fp8_disagg_1024x1024_tp8_ep8_w", mode="disagg", batch_size=None,
    tp_size=None, attention_dp_size=None, moe_tp_size=None, moe_ep_size=None,
    prefill_tp_size=8, prefill_attention_dp_size=1, prefill_moe_tp_size=1, prefill_moe_ep_size=8,
    decode_tp_size=8, decode_attention_dp_size=1, decode_moe_tp_size=1, decode_moe_ep_size=8,
    decode_batch_size=None, decode_num_workers=None,
)


def _kv_capacity(isl: int, osl: int) -> float:
    """Sequences one TP8 EP8 decode worker on 8 x H200 holds at context ISL + OSL/2 (realistic)."""
    from planner import decode_step

    r = decode_step(Scenario("deepseek-r1", "hgx-h200", gpus=8, tp_attn=8, ep=8, weights="fp8", kv="fp8",
                             mode="realistic"), batch=1, context=isl + osl / 2)
    return r.memory["max_batch"]


def test_unrecorded_decode_workers_are_the_fewest_that_hold_the_kv(tmp_path):
    cap = _kv_capacity(8192, 1024)
    c = int(2.5 * cap)  # needs three workers: two hold 2 x cap < c
    path = _csv(tmp_path, [DISAGG | {"isl": 8192, "concurrency": c, "silicon_tpot_ms": 60.0,
                                     "silicon_ttft_ms": 900.0}])
    r = score_runs(path).rows.iloc[0]
    assert r.decode_workers == 3
    f = 1023 * 60.0 / (900.0 + 1023 * 60.0)  # the decoding share of the concurrency (Little's law)
    assert r.batch_per_rank == pytest.approx(c * f / 3)
    assert "fewest that hold the KV cache" in r.batch_basis
    assert r.scored


def test_faster_than_the_bound_without_workers_means_more_workers(tmp_path):
    # 2 ms per token is below the bound of any batch that fits: the row ran on more workers than
    # the fewest that hold its KV, at a batch it does not record -- a rule of its own, not
    # speculation; with the workers recorded the same row is speculation suspected
    cap = _kv_capacity(1024, 1024)
    row = DISAGG | {"concurrency": int(3 * cap), "silicon_tpot_ms": 2.0}
    # (another TPOT: the same numbers under two records would be one run, kept once)
    path = _csv(tmp_path, [row, row | {"id": "recorded", "decode_num_workers": 3, "silicon_tpot_ms": 2.01}])
    r = _by_id(score_runs(path))
    assert r.loc[DISAGG["id"], "rule"] == "decode_workers_unknown"
    assert r.loc[DISAGG["id"], "bound_violation"]
    assert r.loc["recorded", "rule"] == "speculation_suspected"


def test_running_batch_is_what_the_kv_cache_holds(tmp_path):
    # aggregated, concurrency 4096 at ISL 8192 on one TP8 worker: far more than the KV holds, so
    # the scheduler runs as many as fit and the rest wait
    cap = _kv_capacity(8192, 1024)
    path = _csv(tmp_path, [{"isl": 8192, "batch_size": 4096, "concurrency": 4096,
                            "silicon_ttft_ms": 900.0, "silicon_tpot_ms": 80.0}])
    r = score_runs(path).rows.iloc[0]
    assert r.status == ""
    assert r.batch_per_rank == np.floor(cap) < 4096
    assert "all the KV cache holds" in r.batch_basis


def test_attention_dp_left_blank_is_inferred_from_the_moe_layout_where_the_batch_agrees(tmp_path):
    # vLLM, TP1 with MoE TP2 and no attention DP recorded: the worker has MoE TP x EP = 2 GPUs, so 2
    # attention-DP ranks of TP1.  The file's convention, concurrency = batch_size x attention DP,
    # must agree: batch 4 at concurrency 8 does (scored at 4 per rank); batch 8 at concurrency 8
    # records DP 1, one GPU, where the MoE spans two (Qwen3-235B in FP8, 235 GB, does not fit one
    # 141 GB H200): not scored, counted as an inconsistent layout
    row = {"backend": "vllm", "model_path": "Qwen/Qwen3-235B-A22B-FP8", "gemm_quant_mode": "fp8",
           "moe_quant_mode": "fp8", "tp_size": 1, "attention_dp_size": None, "moe_tp_size": 2,
           "moe_ep_size": 1, "concurrency": 8, "silicon_tpot_ms": 30.0}
    path = _csv(tmp_path, [row | {"id": "dp2", "batch_size": 4}, row | {"id": "dp1", "batch_size": 8},
                           row | {"id": "no_batch", "batch_size": None, "silicon_tpot_ms": 31.0}])
    r = _by_id(score_runs(path))
    assert r.loc["dp2", "status"] == "" and r.loc["dp2", "scored"]
    assert r.loc["dp2", "batch_per_rank"] == pytest.approx(4 * r.loc["dp2", "running_fraction"])
    assert r.loc["dp1", "status"].startswith("layout inconsistent") and not r.loc["dp1", "scored"]
    assert r.loc["no_batch", "batch_per_rank"] == pytest.approx(4 * r.loc["no_batch", "running_fraction"])
    assert "DP not recorded" in r.loc["no_batch", "batch_basis"]


def test_attention_tp_that_does_not_divide_the_heads_is_a_data_defect(tmp_path):
    # DeepSeek-R1 has 128 attention heads: TP 6 (x DP 1, MoE EP 6) cannot have run
    path = _csv(tmp_path, [{"id": "dsr1_tp6", "tp_size": 6, "moe_ep_size": 6}])
    s = score_runs(path)
    reason = "data defect: attention TP does not divide the attention heads"
    assert s.rows.iloc[0].status == reason
    assert s.summary()["rows_unmapped_by_reason"] == {reason: 1}


def test_one_measurement_under_two_layouts_is_one_run(tmp_path):
    # the same TTFT and TPOT, to every digit, recorded once as disaggregated TP8 EP8 with 5 decode
    # workers and once as TP8 MoE-EP4 x MoE-TP2 without its worker count: one run; the full record
    # is kept even though it comes second in the file.  A third row at another TPOT is its own run.
    dis = dict(mode="disagg", tp_size=None, moe_ep_size=None, moe_tp_size=None, batch_size=None,
               prefill_tp_size=8, prefill_attention_dp_size=1, prefill_moe_tp_size=1,
               prefill_moe_ep_size=8, prefill_num_workers=1, prefill_batch_size=1,
               decode_tp_size=8, decode_attention_dp_size=1, concurrency=10)
    path = _csv(tmp_path, [
        dis | {"id": "partial", "decode_moe_ep_size": 4, "decode_moe_tp_size": 2},
        dis | {"id": "full", "decode_moe_ep_size": 8, "decode_moe_tp_size": 1, "decode_num_workers": 5},
        dis | {"id": "other", "decode_moe_ep_size": 4, "decode_moe_tp_size": 2, "silicon_tpot_ms": 20.5},
    ])
    s = score_runs(path)
    r = _by_id(s)
    assert r.loc["partial", "rule"] == "same_measurement"
    assert r.loc["full", "rule"] == "" and r.loc["other", "rule"] != "same_measurement"
    assert s.summary()["rows_unmapped_by_reason"]["cleaning: same_measurement"] == 1


def test_kimi_k25_runs_are_expressed(tmp_path):
    # a Kimi K2.5 run (INT4 W4A16 routed experts, BF16 GEMMs, the source's quant-mode names) is
    # scored with the Kimi K2.5 spec, not left out as an unbundled model; W4AFP8 multiplies at FP8
    from planner.physics.step import resolve_precisions
    from planner.specs.registry import load_hardware, load_model

    kimi = dict(model_path="moonshotai/Kimi-K2.5", id="kimi_k25_h200_trtllm_agg_1",
                gemm_quant_mode="bfloat16", moe_quant_mode="int4_wo", precision="int4_wo",
                silicon_tpot_ms=30.0)
    path = _csv(tmp_path, [kimi, kimi | {"id": "kimi_k25_w4a8", "moe_quant_mode": "w4afp8",
                                         "silicon_tpot_ms": 29.0}])
    r = _by_id(score_runs(path))
    assert set(r.model) == {"kimi-k2.5"} and r.status.eq("").all()
    assert np.isfinite(r.tpot_realistic_ms).all()
    prec = resolve_precisions(load_model("kimi-k2.5"), load_hardware("hgx-h200"), weights="int4_a8")
    assert prec.compute["routed_experts"] == "fp8"


def test_faster_than_the_bound_without_concurrency_means_a_smaller_batch(tmp_path):
    # no concurrency: the row is scored at its batch size, a configured maximum; 512 sequences of
    # an 8k context on 8 x H200 cannot decode in 2 ms, so a smaller batch ran (not speculation)
    path = _csv(tmp_path, [{"id": "capped", "concurrency": None, "batch_size": 64, "isl": 8192,
                            "silicon_tpot_ms": 2.0}])
    s = score_runs(path)
    r = _by_id(s)
    assert r.loc["capped", "bound_violation"] and r.loc["capped", "rule"] == "concurrency_unknown"
    assert s.summary()["bound_violations_flagged"] == 1


def test_the_running_batch_is_the_decoding_share_of_the_concurrency(tmp_path):
    # a closed loop of 64 users, TTFT equal to the decoding time (OSL - 1) TPOT: by Little's law
    # half of them are decoding at any time, so the step runs 32 sequences, not 64
    osl, tpot = 1024, 20.0
    path = _csv(tmp_path, [{"batch_size": 64, "concurrency": 64, "osl": osl, "silicon_tpot_ms": tpot,
                            "silicon_ttft_ms": (osl - 1) * tpot}])
    r = score_runs(path).rows.iloc[0]
    assert r.running_fraction == pytest.approx(0.5)
    assert r.batch_per_rank == pytest.approx(32.0)
    assert "Little's law" in r.batch_basis
    # the bound at 32 sequences is faster than at 64: the rule keeps the bound a bound
    full = score_runs(_csv(tmp_path, [{"batch_size": 64, "concurrency": 64, "osl": osl,
                                       "silicon_tpot_ms": tpot, "silicon_ttft_ms": 1.0}])).rows.iloc[0]
    assert full.batch_per_rank == pytest.approx(64 * full.running_fraction)
    assert r.tpot_bound_ms < full.tpot_bound_ms


# ---- the benchmark's launch matrix (planner.truth.matrix) ------------------------------------------
#: a disaggregated DeepSeek-R1 FP4 run on GB300 as the runs file records an InferenceX point: the
#: worker sizes (prefill TP 2 EP 2, decode 8 GPUs with the prefill's EP), no workers, no DP flag;
#: the matrix (commit 3eb1b779, 2026-02-03) schedules 1k/1k concurrency 8 with MTP only and
#: concurrency 5 both with and without MTP, decode TEP8 x 4 workers, prefill DEP2 x 1
GB300_POINT = dict(
    silicon_data_source="source_file=2026-03-25.csv; model=DeepSeek-R1; silicon_concurrency=8; "
                        "image=nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post2",
    system="gb300", precision="fp4", mode="disagg", gemm_quant_mode="nvfp4", moe_quant_mode="nvfp4",
    batch_size=None, tp_size=None, attention_dp_size=None, moe_tp_size=None, moe_ep_size=None,
    prefill_tp_size=2, prefill_attention_dp_size=1, prefill_moe_tp_size=1, prefill_moe_ep_size=2,
    decode_tp_size=8, decode_attention_dp_size=1, decode_moe_tp_size=4, decode_moe_ep_size=2,
    concurrency=8, silicon_tpot_ms=3.3, silicon_ttft_ms=150.0,
)


def test_matrix_points_are_read_where_unanimous():
    from planner.truth.matrix import published
    rows = pd.DataFrame([{c: None for c in REQUIRED} | BASE | GB300_POINT | {"id": "c8"},
                         {c: None for c in REQUIRED} | BASE | GB300_POINT | {"id": "c5", "concurrency": 5},
                         {c: None for c in REQUIRED} | BASE | GB300_POINT | {"id": "c7", "concurrency": 7},
                         {c: None for c in REQUIRED} | BASE | {"id": "no_image"}])
    p = published(rows).set_index(rows.id)
    assert p.loc["c8", "spec"] == "mtp" and p.loc["c5", "spec"] == "mtp/none"
    # decode: 8 GPUs, attention TP 8 (dp-attn false), DP 1, EP 8 (not the prefill's 2); 4 workers
    assert p.loc["c8", "decode"] == (8.0, 8.0, 1.0, 8.0) and p.loc["c8", "decode_workers"] == 4
    # prefill: DEP2, attention DP over its 2 GPUs
    assert p.loc["c5", "prefill"] == (2.0, 1.0, 2.0, 2.0) and p.loc["c5", "prefill_workers"] == 1
    # a concurrency the matrix never scheduled, and a row without an image: nothing said
    assert p.loc["c7", "matrix_points"] == 0 and p.loc["c7", "spec"] == "" and p.loc["c7", "decode"] is None
    assert p.loc["no_image", "matrix_points"] == 0


def test_runs_the_matrix_schedules_with_speculation_are_not_scored(tmp_path):
    path = _csv(tmp_path, [
        GB300_POINT | {"id": "mtp_only"},                                               # concurrency 8
        GB300_POINT | {"id": "both_alone", "concurrency": 5, "silicon_tpot_ms": 3.1},
        GB300_POINT | {"id": "pair_fast", "concurrency": 12, "silicon_tpot_ms": 3.6},
        GB300_POINT | {"id": "pair_slow", "concurrency": 12, "silicon_tpot_ms": 6.5,
                       "backend_version": "2.0"},
        GB300_POINT | {"id": "no_mtp", "concurrency": 96, "silicon_tpot_ms": 10.0},
    ])
    score = score_runs(path)
    r = _by_id(score)
    assert r.loc["mtp_only", "rule"] == "speculation_published"
    # what the matrix scheduled travels with each row of --out
    out = score.per_row().set_index("id")
    assert out.loc["mtp_only", "matrix_speculation"] == "mtp"
    assert out.loc["both_alone", "matrix_speculation"] == "mtp/none"
    assert out.loc["no_mtp", "matrix_speculation"] == "none"
    # scheduled both ways, and the file holds one run: which one cannot be told
    assert r.loc["both_alone", "rule"] == "speculation_unrecorded"
    # scheduled both ways and the file holds both: the 2x faster one is the speculative run
    assert r.loc["pair_fast", "rule"] == "speculation_suspected"
    assert r.loc["pair_slow", "rule"] == "" and bool(r.loc["pair_slow", "scored"])
    # the scored run takes its layout from the matrix: 4 decode workers of 8 GPUs, 2 sequences each
    assert r.loc["pair_slow", "flags"] == "layout_from_benchmark_matrix"
    assert r.loc["pair_slow", "batch_per_rank"] <= 12 / 4
    # scheduled without speculation only: scored
    assert r.loc["no_mtp", "rule"] == "" and bool(r.loc["no_mtp", "scored"])


def test_matrix_extraction_reads_one_file_by_hand():
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(
        "extract_benchmark_matrix", Path(__file__).parents[2] / "scripts" / "extract_benchmark_matrix.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = """
x-fp8-h200-trt:
  image: nvcr.io#nvidia/tensorrt-llm/release:1.0
  model-prefix: x
  runner: h200
  precision: fp8
  framework: trt
  seq-len-configs:
  - isl: 1024
    osl: 1024
    search-space:
    - {tp: 8, ep: 8, dp-attn: true, conc-start: 4, conc-end: 32, spec-decoding: mtp}
    - {tp: 4, conc-list: [7]}
"""
    pts = mod.points(text)
    assert [p["conc"] for p in pts] == ["4", "8", "16", "32", "7"]   # powers of 2 from start to end
    assert pts[0]["image"] == "nvcr.io/nvidia/tensorrt-llm/release:1.0"
    assert pts[0]["spec_decoding"] == "mtp" and pts[0]["dp_attn"] == "true"
    assert pts[4]["spec_decoding"] == "none" and pts[4]["ep"] == "" and pts[4]["dp_attn"] == ""


def test_bundled_matrix_is_what_its_provenance_says():
    import gzip
    import hashlib
    import os
    from importlib import resources
    data = resources.files("planner.truth.data")
    csv = gzip.decompress(data.joinpath("benchmark_matrix.csv.gz").read_bytes())
    doc = data.joinpath("benchmark_matrix.md").read_text()
    assert hashlib.sha256(csv).hexdigest() in doc
    rows = csv.decode().count("\n") - 1
    assert f"{rows:,} rows" in doc
    repo = os.environ.get("INFERENCEX_REPO")
    if not repo:
        pytest.skip("set INFERENCEX_REPO to a clone of SemiAnalysisAI/InferenceX to re-extract")
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(
        "extract_benchmark_matrix", Path(__file__).parents[2] / "scripts" / "extract_benchmark_matrix.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    import io
    buf = io.StringIO()
    mod.extract(Path(repo)).to_csv(buf, index=False, lineterminator="\n")
    assert buf.getvalue() == csv.decode()


@pytest.mark.parametrize("backend", ["nope", "", "TensorRT", None])
def test_a_backend_not_modelled_is_counted_not_scored(tmp_path, backend):
    from planner.truth.runs import BACKENDS

    assert backend not in BACKENDS
    path = _csv(tmp_path, [{}, {"id": "other", "backend": backend, "silicon_tpot_ms": 21.0}])
    s = score_runs(path)
    r = _by_id(s)
    assert bool(r.loc[BASE["id"], "scored"]) and not bool(r.loc["other", "scored"])
    assert r.loc["other", "status"] == "backend not modelled"
    assert s.summary()["rows_unmapped_by_reason"] == {"backend not modelled": 1}


@pytest.mark.parametrize(("row", "column"), [
    ({"attention_dp_size": 0}, "attention_dp_size"),
    ({"attention_dp_size": -2}, "attention_dp_size"),
    ({"attention_dp_size": "inf"}, "attention_dp_size"),
    ({"tp_size": 1.5}, "tp_size"),
    ({"moe_ep_size": 2.5}, "moe_ep_size"),
    ({"moe_tp_size": -1}, "moe_tp_size"),
    ({"pp_size": "inf"}, "pp_size"),
    ({**DISAGG, "concurrency": 16, "decode_batch_size": 16, "decode_num_workers": 0.5}, "decode_num_workers"),
    ({**DISAGG, "concurrency": 16, "decode_batch_size": 16, "decode_num_workers": 1,
      "prefill_attention_dp_size": 0}, "prefill_attention_dp_size"),
    ({**DISAGG, "concurrency": 16, "decode_batch_size": 16, "decode_num_workers": 1,
      "decode_moe_ep_size": 1e308}, "decode_moe_ep_size")])
def test_a_layout_no_deployment_has_is_counted_not_scored(tmp_path, row, column):
    from planner.truth.runs import MAX_LAYOUT

    path = _csv(tmp_path, [{}, {"silicon_tpot_ms": 21.0, **row, "id": "bad"}])
    s = score_runs(path)
    r = _by_id(s)
    lo = 0 if "moe_" in column else 1  # an MoE size of 0 is the file's "not recorded"
    why = f"layout impossible: {column} not a whole number from {lo} to {MAX_LAYOUT:,}"
    assert r.loc["bad", "status"] == why and not bool(r.loc["bad", "scored"])
    assert bool(r.loc[BASE["id"], "scored"])
    assert s.summary()["rows_unmapped_by_reason"] == {why: 1}


def test_an_moe_size_of_zero_stays_not_recorded(tmp_path):
    r = _by_id(score_runs(_csv(tmp_path, [{"moe_tp_size": 0}])))
    assert r.loc[BASE["id"], "status"].startswith("MoE layout not recorded")


@pytest.mark.parametrize(("column", "bad", "expected"), [
    ("isl", 1.5, "a whole number of tokens from 1 to 10,000,000, got 1.5"),
    ("osl", 0.5, "a whole number of tokens from 1 to 10,000,000, got 0.5"),
    ("concurrency", 0.5, "a whole number of sequences from 1 to 1,000,000, got 0.5"),
    ("concurrency", 0, "a whole number of sequences from 1 to 1,000,000, got 0"),
    # numpy's reprs never reach a message: a NaN read from the file is shown as nan
    ("silicon_tpot_ms", "nan", "a positive number up to 60000, got nan")])
def test_fractional_counts_refuse_the_file_in_one_line(tmp_path, capsys, column, bad, expected):
    from planner.truth.runs import RUN_RANGES

    if column in RUN_RANGES:
        assert f"{RUN_RANGES[column]:,.0f}" in expected or f"{RUN_RANGES[column]:g}" in expected
    path = _csv(tmp_path, [{}, {"id": "bad", column: bad}])
    with pytest.raises(SpecError) as exc:
        load_runs(path)
    assert str(exc.value) == f"{path}: row 3: {column}: {expected}"
    assert main(["validate", "--runs", path, "--json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "np." not in err and "Traceback" not in err


@pytest.mark.parametrize(("column", "why"), [("model_path", "model not bundled"),
                                             ("system", "system not bundled"),
                                             ("backend", "backend not modelled")])
def test_a_file_whose_every_row_leaves_a_name_blank_scores_none(tmp_path, column, why):
    # (a column with no text at all reads as numbers: relabelling a row's model in it raised)
    path = _csv(tmp_path, [{column: None}, {"id": "b", column: None, "silicon_tpot_ms": 22.0}])
    s = score_runs(path).summary()
    assert s["rows_scored"] == 0 and s["rows_unmapped_by_reason"] == {why: 2}


def test_the_scorecard_reads_each_build_apart(tmp_path):
    # two configurations on two builds: each build's figures are its own runs' (bias: the median
    # predicted / measured TPOT of its runs)
    other = "dsr1_h200_trtllm_fp8_agg_1024x1024_c32_tp8_ep8_2"
    path = _csv(tmp_path, [{}, {"id": other, "backend_version": "1.1", "batch_size": 32, "concurrency": 32,
                                "silicon_tpot_ms": 25.0}])
    s = score_runs(path)
    rows = s.scored.set_index("id")
    builds = {r["build"]: r for r in s.by_build()}
    assert set(builds) == {"1.0", "1.1"} and all(r["n"] == 1 for r in builds.values())
    assert builds["1.0"]["tpot_bias"] == pytest.approx(rows.loc[BASE["id"], "tpot_ratio"])
    assert builds["1.1"]["tpot_bias"] == pytest.approx(rows.loc[other, "tpot_ratio"])
    assert s.summary()["by_build"] == s.by_build()
