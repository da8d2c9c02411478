"""Speculative decoding for any model: the draft head's cost from its shape, acceptance from the
model's published figures, and what a user gives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import planner
from planner import Scenario
from planner.errors import SpecError
from planner.physics.step import decode_step, resolve_speculation
from planner.serving.search import mtp_options
from planner.specs.registry import load_hardware, load_model


def test_draft_head_pass_costs_its_weights_by_hand():
    """Llama-3.1-8B with its EAGLE-3 head (1 layer, FFN 14336, 3 fused states, own head over a
    32000-token vocabulary), batch 1 on one H100 in bound mode: every operator of a draft pass
    is a weight (and KV) read at the HBM peak, so 3 drafts cost 3 x bytes / B_hbm."""
    m, hw = load_model("llama-3.1-8b"), load_hardware("hgx-h100")
    d, S = 4096, 2000
    attn = d * (32 * 128) + 2 * d * (8 * 128) + (32 * 128) * d          # q, k, v, o projections
    weights = 2 * (attn + 3 * d * 14336 + 3 * d * d + 32000 * d)         # BF16 bytes
    kv = 2 * 8 * 128 * S * 2                                              # one layer's K and V, BF16
    r = decode_step(Scenario(m, hw, gpus=1, mtp=3, mode="bound"), batch=1, context=S)
    assert r.terms["draft"] == pytest.approx(3 * (weights + kv) / hw.hbm_bandwidth, rel=0.01)
    # a pass reads about 0.8 GB against the verifier's 16 GB: three cost under a fifth of the step
    assert r.terms["draft"] < 0.2 * r.step_time


def test_mtp_draft_is_one_moe_layer_and_the_head():
    r = decode_step(Scenario("deepseek-r1", "hgx-b200", gpus=8, mtp=1, mode="bound"), batch=8, context=2000)
    one = decode_step(Scenario("deepseek-r1", "hgx-b200", gpus=8, mode="bound"), batch=8, context=2000)
    # one draft pass at one token per sequence: about one MoE layer plus the LM head
    per_layer = one.terms["layer_moe"] + one.terms["lm_head"]
    assert 0.5 * per_layer < r.terms["draft"] < 1.5 * per_layer


@pytest.mark.parametrize("name", ["deepseek-r1", "kimi-k2-thinking", "llama-3.1-8b"])
def test_published_tokens_per_step_never_exceed_drafts_plus_one(name):
    m = load_model(name)
    assert m.spec_tokens, name
    for n, a in m.spec_tokens.items():
        assert 1.0 <= a <= n + 1
        s = resolve_speculation(m, n)
        assert s.tokens_per_step("realistic") == a and s.tokens_per_step("bound") == n + 1
    # tokens per step rise with drafts, by less each time (later drafts are accepted less often)
    a = list(m.spec_tokens.values())
    assert all(np.diff(a) > 0) and all(np.diff(a, 2) <= 1e-9)


def test_kimi_speculates_by_default_with_its_draft_head():
    opts = mtp_options(load_model("kimi-k2-thinking"), "auto")
    assert [s.drafts for s in opts] == [0, 1, 2, 3]
    assert {s.kind for s in opts if s.drafts} == {"draft"}
    assert opts[3].tokens_per_step("realistic") == pytest.approx(2.30)


def test_given_acceptance_tokens_per_step_or_rate():
    m = load_model("kimi-k2-thinking")
    assert resolve_speculation(m, 3, 2.5).tokens_per_step("realistic") == 2.5
    alpha = 0.6
    a2 = resolve_speculation(m, 2, alpha).tokens_per_step("realistic")
    assert a2 == pytest.approx(1 + alpha + alpha**2)
    with pytest.raises(SpecError, match="at most drafts"):
        resolve_speculation(m, 1, 2.5)
    # auto with a given 2.5 tokens per step: only draft counts that can emit it; none can emit 5
    assert [s.drafts for s in mtp_options(m, "auto", 2.5)] == [0, 2, 3]
    with pytest.raises(SpecError, match="at most 4 tokens per step with mtp auto"):
        mtp_options(m, "auto", 5.0)


def test_a_model_without_published_speculation_needs_an_acceptance():
    m = load_model("qwen3-32b")
    assert [s.drafts for s in mtp_options(m, "auto")] == [0]
    with pytest.raises(SpecError, match="acceptance"):
        resolve_speculation(m, 2)
    s = resolve_speculation(m, 2, 1.8)   # the default EAGLE-3 style head drafts
    r = decode_step(Scenario(m, "hgx-h100", gpus=1, mtp={"draft_tokens": 2,
                    "mean_acceptance_length": 1.8}), batch=4, context=2000)
    assert s.kind == "draft" and r.terms["draft"] > 0 and r.tokens_per_step == 1.8


def test_bad_speculation_block_is_one_clear_line(tmp_path):
    import yaml

    from planner.specs.registry import load_model as load

    doc = yaml.safe_load((Path(planner.__file__).parent / "model_specs" / "llama-3.1-8b.yaml").read_text())
    doc["speculation"]["tokens_per_step"] = {2: 3.5}
    p = tmp_path / "m.yaml"
    p.write_text(yaml.safe_dump(doc))
    with pytest.raises(SpecError, match=r"speculation\.tokens_per_step\.2: .*draft tokens \+ 1 = 3, got 3.5"):
        load(str(p))


def test_a_hugging_face_config_with_mtp_layers_speculates_like_the_bundled_model():
    from planner.specs.registry import load_model as load

    m = load(str(Path(__file__).resolve().parents[1] / "data" / "deepseek-v3" / "config.json"))
    assert m.mtp_layers == 1 and m.spec_kind == "mtp"
    assert [s.drafts for s in mtp_options(m, "auto")] == [0, 1, 2, 3]
    assert m.spec_tokens == load_model("deepseek-v3").spec_tokens
    # a config without MTP layers (Kimi K2 Thinking's) gets none
    k = load(str(Path(__file__).resolve().parents[1] / "data" / "kimi-k2-thinking" / "config.json"))
    assert k.mtp_layers == 0 and not k.spec_tokens


def test_speculation_summary_says_why_it_is_off():
    from planner.serving.frontiers import speculation_summary

    assert speculation_summary(load_model("kimi-k2-thinking"), None)["source"] == "asked off"
    assert speculation_summary(load_model("qwen3-32b"), "auto")["source"] == "none published"
    on = speculation_summary(load_model("kimi-k2-thinking"), "auto")
    assert on["kind"] == "draft" and on["tokens_per_step"][3] == pytest.approx(2.30)
    assert on["draft_head"]["published"] and on["range"] == {3: [2.0, 2.67]}
