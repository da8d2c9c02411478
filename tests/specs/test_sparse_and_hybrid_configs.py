"""The 2026 families with sparse or linear attention, loaded from trimmed copies of their published
config.json (tests/data/<name>/config.json, source in ``_source``): DeepSeek-V3.2 and GLM-5
(DeepSeek sparse attention), Qwen3.5 and Qwen3-Next (gated DeltaNet hybrids)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from planner.errors import SpecError
from planner.specs.hfconfig import load_hf_config
from planner.specs.registry import load_model

DATA = Path(__file__).resolve().parents[1] / "data"


def fixture(name: str) -> dict:
    return json.loads((DATA / name / "config.json").read_text())


def write(tmp_path: Path, cfg: dict) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return path


PUBLISHED = [
    # DeepSeek-V3.2 is DeepSeek-V3.1-Terminus with the lightning indexer added (DeepSeek-V3.2-Exp report,
    # sec. 2: "the same architecture ... except DSA"); the V3 README: "671B total parameters with 37B
    # activated for each token".  The 61 indexers add 0.85B (13,959,424 each: wq_b 1536 x 8192, wk
    # 7168 x 128, its LayerNorm 2 x 128, weights_proj 7168 x 64), inside 3%
    ("deepseek-v3.2", 671e9, 37e9),
    # zai-org/GLM-5 model card: "744B parameters (40B active)"
    ("glm-5-fp8", 744e9, 40e9),
    # Qwen/Qwen3.5-397B-A17B model card: "397B in total and 17B activated"; the 397B holds the vision
    # tower (0.46B), which the text model does not; the 17B counts the input embedding, which ours
    # leaves out: - V d = 248,320 x 4,096
    ("qwen3.5-397b-a17b", 397e9, 17e9 - 248_320 * 4096),
    # MiniMaxAI/MiniMax-M3 model card: "~428B parameters and ~23B activated parameters"; the checkpoint's
    # 427,040,140,160 hold the vision tower (0.85B), which the text model does not; the ~23B leaves out
    # the LM head, which ours counts: + V d = 200,064 x 6,144
    ("minimax-m3", 427.04e9 - 0.85e9, 23e9 + 200_064 * 6144),
    # NVIDIA's Nemotron-3 Nano page: "31.6B total", "3.2B active (3.6B with embeddings)": the 3.2B leaves
    # out the input embedding, as ours does; the Nemotron-3 Super model card: "120B (12B active)"
    ("nemotron-3-nano-30b-a3b", 31.6e9, 3.2e9),
    ("nemotron-3-super", 120e9, 12e9),
    # DeepSeek-V4 model card: "DeepSeek-V4-Pro with 1.6T parameters (49B activated) and DeepSeek-V4-Flash
    # with 284B parameters (13B activated)"
    ("deepseek-v4-pro", 1.6e12, 49e9),
    ("deepseek-v4-flash", 284e9, 13e9),
]


@pytest.mark.parametrize(("name", "total", "active"), PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_totals_match_the_published_figures(name, total, active):
    m = load_hf_config(DATA / name)
    assert math.isclose(m.total_params, total, rel_tol=0.03)
    assert math.isclose(m.active_params, active, rel_tol=0.03)


def test_qwen3_next_total_matches_its_card():
    # transformers docs (model_doc/qwen3_next.md): "80B total parameters, only 3B active".  The 3B is
    # the rounded name (A3B): this count gives 3.56B with the LM head (3.87B with both tables), so
    # only the total is held to 3%
    m = load_hf_config(DATA / "qwen3-next-80b-a3b")
    assert math.isclose(m.total_params, 80e9, rel_tol=0.03)
    assert 3e9 < m.active_params < 4e9


def test_deepseek_v32_counts_the_checkpoint_exactly():
    # Hugging Face's count of the DeepSeek-V3.2 checkpoint, 685,355,329,792 parameters, holds the main
    # model, the MTP layer (with its own indexer, 13,959,424) and the MTP layer's copies of the
    # embedding and LM head (2 V d)
    m = load_hf_config(DATA / "deepseek-v3.2")
    indexer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert m.indexer_params == indexer == 13_959_424
    checkpoint = m.total_params + m.mtp_params + indexer + 2 * m.V * m.d
    assert math.isclose(checkpoint, 685_355_329_792, rel_tol=1e-6)


def test_dsa_fields_and_cache_bytes():
    m = load_hf_config(DATA / "deepseek-v3.2")
    assert (m.architecture, m.attention, m.sparse_top_k, m.sparse_layers) == ("deepseek_v32", "mla", 2048, 61)
    assert (m.indexer_heads, m.indexer_head_dim) == (64, 128)
    # the indexer key cache: 128 FP8 values and one FP32 scale per 128 (vLLM's DeepseekV32IndexerCache,
    # head_dim + head_dim // 128 * 4 = 132 B)
    assert m.indexer_key_bytes == 132
    # per token: 61 layers x (512 + 64) BF16 latent + 61 x 132 indexer bytes
    assert m.kv_bytes_per_token() == 61 * 576 * 2 + 61 * 132 == 78_324
    assert m.spec_tokens  # DeepSeek's own MTP module
    glm = load_hf_config(DATA / "glm-5-fp8")
    assert (glm.architecture, glm.sparse_top_k, glm.indexer_heads, glm.n_Ld) == ("glm_moe_dsa", 2048, 32, 3)
    assert (glm.d_n, glm.d_r, glm.d_v, glm.r_q) == (192, 64, 256, 2048)
    assert glm.mtp_layers == 1 and not glm.spec_tokens  # no published acceptance for GLM-5's MTP layer
    assert set(glm.precision.values()) == {"fp8", "bf16"} and glm.precision["routed_experts"] == "fp8"


def test_gated_deltanet_fields_state_and_flops():
    m = load_hf_config(DATA / "qwen3.5-397b-a17b")
    assert (m.linear_kind, m.linear_layers, m.n_attn, m.n_L) == ("gated_deltanet", 45, 15, 60)
    assert (m.linear_heads, m.linear_key_heads, m.linear_key_dim, m.linear_value_dim) == (64, 16, 128, 128)
    assert m.output_gate and (m.E, m.k, m.E_s, m.f_e) == (512, 10, 1, 1024)
    # one DeltaNet layer's weights, by tensor (transformers' Qwen3_5GatedDeltaNet): in_proj_qkv
    # 12288 x 4096, in_proj_z 8192 x 4096, in_proj_b and in_proj_a 64 x 4096, conv1d 12288 x 4,
    # dt_bias and A_log 64, norm 128, out_proj 4096 x 8192
    assert m.linear_params == (12288 * 4096 + 8192 * 4096 + 2 * 64 * 4096 + 12288 * 4 + 2 * 64 + 128
                               + 4096 * 8192) == 118_014_208
    # the state per sequence and layer (SGLang and vLLM: [64, 128, 128] in FP32, mamba_ssm_dtype) and
    # the convolution's last 3 inputs of 12,288 channels in BF16
    assert m.linear_state_bytes_per_layer == 64 * 128 * 128 * 4 + 12288 * 3 * 2 == 4_268_032
    assert m.state_bytes == 45 * 4_268_032
    # the KV cache: only the 15 full-attention layers, 2 KV heads of 256, K and V in BF16
    assert m.kv_bytes_per_token() == 15 * 2 * 2 * 256 * 2 == 30_720
    # decode FLOPs per token and layer: 7 d_k d_v per value head, 2 K per convolution channel
    assert m.linear_flops_per_token("decode") == 7 * 64 * 128 * 128 + 2 * 4 * 12288
    # prefill adds the chunk's own attention: 2 x 64 x (128 + 128) per head
    assert m.linear_flops_per_token("prefill") - m.linear_flops_per_token("decode") == 2 * 64 * 256 * 64
    nxt = load_hf_config(DATA / "qwen3-next-80b-a3b")  # no layer_types: every 4th layer full
    assert (nxt.linear_layers, nxt.n_attn, nxt.linear_heads, nxt.output_gate) == (36, 12, 32, True)


def test_bad_hybrid_configs_are_one_line_errors(tmp_path):
    cfg = fixture("qwen3.5-397b-a17b")
    cfg["text_config"]["layer_types"] = ["linear_attention"] * 60
    with pytest.raises(SpecError, match="layer_types: at least one full_attention layer"):
        load_hf_config(write(tmp_path, cfg))
    cfg = fixture("qwen3.5-397b-a17b")
    cfg["text_config"]["shared_expert_intermediate_size"] = 1500
    with pytest.raises(SpecError, match="shared_expert_intermediate_size: a multiple of the routed experts"):
        load_hf_config(write(tmp_path, cfg))
    cfg = fixture("deepseek-v3.2")
    del cfg["index_topk"]
    with pytest.raises(SpecError, match="index_topk: a value"):
        load_hf_config(write(tmp_path, cfg))


@pytest.mark.parametrize(("name", "edit", "message"), [
    # an absurd layer count is refused before the importers walk the layers one by one
    ("qwen3.5-397b-a17b", lambda c: c["text_config"].update(num_hidden_layers=10**30),
     r"text_config\.num_hidden_layers: an integer <= 10000, got 10{30}"),
    ("kimi-k3", lambda c: c["text_config"].update(num_hidden_layers=10**30),
     "num_hidden_layers: an integer <="),
    # every dense layer: the error names the key of the family (K3's first_k_dense_replace)
    ("kimi-k3", lambda c: c["text_config"].update(first_k_dense_replace=10**6),
     "first_k_dense_replace: fewer dense layers than num_hidden_layers"),
    # architectures of the wrong kind are named, not hashed
    ("minimax-m3", lambda c: (c["text_config"].pop("model_type", None), c.pop("model_type", None),
                              c["text_config"].update(architectures=[{}])), "architectures: one of"),
    ("nemotron-3-nano-30b-a3b",
     lambda c: c.update(hybrid_override_pattern=None, layers_block_type=[["mamba"]]),
     "a list of block kinds"),
    # an integer past 2**53 is not a count any model has (and would not survive float64)
    ("deepseek-v3.2", lambda c: c.update(hidden_size=2**53 + 1),
     r"hidden_size: an integer <= 9007199254740992"),
])
def test_absurd_sizes_and_kinds_are_one_line_errors(tmp_path, name, edit, message):
    cfg = fixture(name)
    edit(cfg)
    with pytest.raises(SpecError, match=message):
        load_hf_config(write(tmp_path, cfg))


@pytest.mark.parametrize(("fixture_name", "bundled"), [("deepseek-v3.2", "deepseek-v3.2"),
                                                       ("glm-5-fp8", "glm-5"),
                                                       ("qwen3.5-397b-a17b", "qwen3.5-397b-a17b"),
                                                       ("kimi-k3", "kimi-k3"), ("minimax-m3", "minimax-m3"),
                                                       ("llama-4-maverick-17b-128e", "llama-4-maverick"),
                                                       ("deepseek-v4-pro", "deepseek-v4-pro")])
def test_bundled_specs_are_their_configs(fixture_name, bundled):
    hf, ref = load_hf_config(DATA / fixture_name), load_model(bundled)
    counts = ("total_params", "active_params", "mtp_params")
    assert [getattr(hf, c) for c in counts] == [getattr(ref, c) for c in counts]
    assert hf.class_params() == ref.class_params()
    assert hf.kv_bytes_per_token() == ref.kv_bytes_per_token() and hf.state_bytes == ref.state_bytes
    assert hf.linear_flops_per_token("prefill") == ref.linear_flops_per_token("prefill")
    assert (hf.sparse_top_k, hf.indexer_key_bytes) == (ref.sparse_top_k, ref.indexer_key_bytes)
    if bundled != "glm-5":  # the bundled GLM-5 is the BF16 release, the fixture its FP8 twin
        assert hf.precision == ref.precision


def test_kimi_k3_counts_by_tensor():
    # Moonshot's Kimi K3 model card: "Total Parameters 2.8T", "Activated Parameters 104B" (the
    # activated count leaves out the input embedding, as ours does: 104.19B)
    m = load_hf_config(DATA / "kimi-k3")
    assert math.isclose(m.total_params, 2.8e12, rel_tol=0.03)
    assert math.isclose(m.active_params, 104e9, rel_tol=0.03)
    assert (m.linear_kind, m.linear_layers, m.n_attn, m.n_Ld, m.latent_dim) == ("kda", 69, 24, 1, 3584)
    # a KDA layer, by tensor (vLLM's KimiK3DeltaAttention): q, k, v and the full-rank gate g 12288 x 7168
    # each, f_a 128 x 7168, f_b 12288 x 128, b 96 x 7168, three convolutions 12288 x 4, A_log 96,
    # dt_bias 12288, o_norm 128, o_proj 7168 x 12288
    assert m.linear_params == (4 * 12288 * 7168 + 128 * 7168 + 12288 * 128 + 96 * 7168 + 3 * 12288 * 4 + 96
                               + 12288 + 128 + 7168 * 12288) == 443_740_384
    # a gated MLA layer: q_a 1536 x 7168 (+ norm), q_b 96 x 192 x 1536, kv_a 576 x 7168 (+ norm 512),
    # kv_b 96 x 256 x 512, the gate g_proj and o_proj 12288 x 7168 each
    assert m.attn_params == (1536 * 7168 + 1536 + 18432 * 1536 + 576 * 7168 + 512 + 24576 * 512
                             + 2 * 12288 * 7168) == 232_196_096
    # a routed expert in the latent: gate, up 3072 x 3584, down 3584 x 3072; a shared one on the hidden
    # state, 3 x 3072 x 7168; the latent projections 7168 x 3584 twice and their norm
    assert m.expert_params == 3 * 3584 * 3072 and m.shared_expert_params == 3 * 7168 * 3072
    assert m.latent_params == 2 * 7168 * 3584 + 3584
    # the state a sequence holds: 69 x (96 x 128 x 128 x 4 B + 3 x 12288 x 3 x 2 B) = 449,372,160 B
    assert m.state_bytes == 69 * (96 * 128 * 128 * 4 + 3 * 12288 * 3 * 2) == 449_372_160
    assert m.precision["routed_experts"] == "mxfp4" and m.precision["attention"] == "bf16"
    assert m.precision["dense_ffn"] == "bf16"  # the shared experts: the checkpoint's ignore list


def test_kimi_linear_low_rank_gate():
    # moonshotai/Kimi-Linear-48B-A3B-Instruct card: 48B total ("3B" activated is the rounded name; 3.11B
    # here with the LM head).  No use_full_rank_gate: the output gate is g_a 128 x 2304, g_b 4096 x 128
    m = load_hf_config(DATA / "kimi-linear-48b-a3b")
    assert math.isclose(m.total_params, 48e9, rel_tol=0.03)
    assert m.linear_gate_rank == 128 and m.latent_dim == 0 and m.r_q == 0
    full_rank = m.replace(linear_gate_rank=0)
    assert full_rank.linear_params - m.linear_params == 2304 * 4096 - (128 * 2304 + 4096 * 128)


def test_minimax_m3_block_sparse_attention():
    m = load_hf_config(DATA / "minimax-m3")
    # 16 blocks of 128 tokens per query on layers 3-59; an indexer of 4 heads of 128 against one BF16
    # index key per token (256 B); layers 0-2 dense in attention and FFN
    assert (m.sparse_top_k, m.sparse_layers, m.indexer_heads, m.indexer_key_bytes) == (2048, 57, 4, 256)
    assert (m.n_Ld, m.f_d, m.E, m.k, m.E_s, m.f_e) == (3, 12288, 128, 4, 1, 3072)
    # the cache per token: 60 layers of 4 KV heads of 128, K and V in BF16, and 57 index keys
    assert m.kv_bytes_per_token() == 60 * 2 * 4 * 128 * 2 + 57 * 256 == 137_472


def test_nemotron_h_blocks_mamba_and_plain_experts():
    m = load_hf_config(DATA / "nemotron-3-nano-30b-a3b")
    # 52 blocks: 23 Mamba-2, 23 MoE, 6 attention; the planner's layers are the MoE blocks
    assert (m.n_L, m.linear_layers, m.n_attn, m.linear_kind) == (23, 23, 6, "mamba2")
    # squared-ReLU experts: up and down only, 2 x 2688 x 1856; the shared MLP of 3712 = 2 experts' width
    assert m.ffn_matrices == 2 and m.expert_params == 2 * 2688 * 1856 and m.E_s == 2
    # a Mamba-2 block, by tensor (transformers' NemotronHMamba2Mixer): in_proj 10304 x 2688 (z and x of
    # 4096, B and C of 8 x 128, dt of 64), the convolution 6144 x 4 with its bias, dt_bias, A_log and D
    # of 64, the gated norm 4096, out_proj 2688 x 4096
    assert m.linear_params == (10304 * 2688 + 6144 * 4 + 6144 + 3 * 64 + 4096 + 2688 * 4096) == 38_742_208
    # its state: 64 heads x 64 x 128 in FP32 (mamba_ssm_cache_dtype) and the convolution's last 3
    # inputs of 6144 channels in BF16, in each of the 23 Mamba blocks
    assert m.state_bytes == 23 * (64 * 64 * 128 * 4 + 6144 * 3 * 2)
    super_ = load_hf_config(DATA / "nemotron-3-super")
    assert super_.latent_dim == 1024 and super_.expert_params == 2 * 1024 * 2688


def test_deepseek_v4_compressed_kv():
    m = load_hf_config(DATA / "deepseek-v4-pro")
    # compress_ratios: layers 0 and 1 at 128, then 4 and 128 alternating: 30 sparse layers of 4-token
    # rows (the indexer's top 1,024 of them) and 31 layers of 128-token rows, all read; every layer
    # also keeps its last 128 raw tokens
    assert (m.sparse_layers, m.sparse_compress, m.sparse_top_k) == (30, 4, 1024)
    assert (m.compressed_layers, m.compress_ratio, m.sliding_window) == (31, 128, 128) and m.compressed_window
    # one KV head of 512 (448 + 64 RoPE) read as key and value; FP8 cache: per token of context
    # 30 x (512 / 4 + 132 / 4) + 31 x 512 / 128 = 4,954 B (vLLM's rows carry 72 B of scales and BF16
    # RoPE more: 584 B a row)
    assert m.kv_elems_per_token_layer == 512 and m.kv_precision == "fp8"
    assert m.kv_bytes_per_token() == 30 * (512 / 4 + 132 / 4) + 31 * 512 / 128 == 4954
    assert m.precision["routed_experts"] == "mxfp4" and m.precision["attention"] == "fp8"
    # the attention weights of a layer: q_a 7168 x 1536 (+ norm), q_b 1536 x 128 x 512, the shared KV
    # head 7168 x 512 (+ norm), wo_a 128 x 512 x 1024, wo_b 16 x 1024 x 7168, the hyper-connections'
    # 2 x (24 x 4 x 7168 + 24 + 3)
    assert m.attn_params == (7168 * 1536 + 1536 + 1536 * 128 * 512 + 7169 * 512 + 128 * 512 * 1024
                             + 16 * 1024 * 7168 + 2 * (24 * (4 * 7168 + 1) + 3))
