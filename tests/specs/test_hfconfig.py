"""Hugging Face config.json loading: the fixtures in tests/data/ (hand-written from the
models' published facts, see tests/data/README.md) must give the same derived numbers as the bundled YAML."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from planner.cli import main
from planner.errors import SpecError
from planner.specs.hfconfig import load_hf_config
from planner.specs.registry import load_model

DATA = Path(__file__).resolve().parents[1] / "data"
FIXTURES = ["deepseek-v3", "kimi-k2-thinking", "qwen3-235b-a22b", "gpt-oss-120b", "mixtral-8x7b",
            "minimax-m2.5", "llama-3.1-8b", "llama-3.1-70b", "qwen3-32b"]


def fixture(name: str) -> dict:
    return json.loads((DATA / name / "config.json").read_text())


def write(tmp_path: Path, cfg, name: str = "cfg") -> Path:
    d = tmp_path / name
    d.mkdir(exist_ok=True)
    path = d / "config.json"
    path.write_text(cfg if isinstance(cfg, str) else json.dumps(cfg))
    return path


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_matches_bundled_yaml(name):
    hf, ref = load_hf_config(DATA / name), load_model(name)
    assert hf.total_params == ref.total_params
    assert hf.active_params == ref.active_params
    assert hf.mtp_params == ref.mtp_params
    assert hf.class_params() == ref.class_params()
    assert hf.kv_bytes_per_token() == ref.kv_bytes_per_token()
    assert hf.precision == ref.precision
    assert hf.weight_bytes() == ref.weight_bytes()
    assert (hf.E, hf.k, hf.E_s, hf.n_Ld) == (ref.E, ref.k, ref.E_s, ref.n_Ld)
    assert (hf.sliding_window, hf.sliding_layers) == (ref.sliding_window, ref.sliding_layers)


def test_kimi_k2_thinking_quantization():
    m = load_hf_config(DATA / "kimi-k2-thinking" / "config.json")
    # compressed-tensors INT4 group 32 on Linear, with attention, shared experts, the dense
    # layer-0 MLP and lm_head in `ignore`: only the routed experts are INT4
    assert m.precision == {"routed_experts": "int4_g32", "attention": "bf16", "dense_ffn": "bf16",
                           "embeddings": "bf16"}
    assert math.isclose(sum(m.weight_bytes().values()), 594e9, rel_tol=0.01)  # ~594 GB checkpoint
    assert m.kv_bytes_per_token() == 61 * 576 * 2
    assert m.architecture == "kimi_k2" and m.max_context == 262144


def test_ignore_list_is_read(tmp_path):
    cfg = fixture("kimi-k2-thinking")
    cfg["quantization_config"]["ignore"] = ["lm_head"]
    m = load_hf_config(write(tmp_path, cfg))
    # without the regexes every Linear (attention, shared + dense MLPs) would be INT4 too
    assert m.precision["attention"] == m.precision["dense_ffn"] == "int4_g32"


def test_kimi_k2_fp8_block(tmp_path):
    cfg = fixture("kimi-k2-thinking")
    cfg["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                  "weight_block_size": [128, 128]}
    cfg["max_position_embeddings"] = 131072
    m = load_hf_config(write(tmp_path, cfg))
    ref = load_model("kimi-k2")  # the FP8 Instruct checkpoint
    assert m.precision == ref.precision == {"routed_experts": "fp8", "attention": "fp8", "dense_ffn": "fp8",
                                            "embeddings": "bf16"}
    assert m.weight_bytes() == ref.weight_bytes()


def test_modelopt_nvfp4(tmp_path):
    cfg = fixture("deepseek-v3")  # as NVIDIA's -FP4 checkpoints: ModelOpt NVFP4, attention left out
    cfg["quantization_config"] = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
                                  "ignore": ["lm_head", "model.layers.*.self_attn*"]}
    m = load_hf_config(write(tmp_path, cfg))
    assert m.precision == {"routed_experts": "nvfp4", "attention": "bf16", "dense_ffn": "nvfp4",
                           "embeddings": "bf16"}
    routed = 58 * 256 * 3 * 7168 * 2048  # 58 MoE layers x 256 experts x 3 d f_e = 653.9B
    assert math.isclose(m.weight_bytes()["routed_experts"], routed * 4.5 / 8, rel_tol=1e-12)
    cfg["quantization_config"]["quant_algo"] = "MIXED_PRECISION"
    with pytest.raises(SpecError, match="quantization_config.quant_algo: one of NVFP4"):
        load_hf_config(write(tmp_path, cfg))


def test_deepseek_v3_fields():
    m = load_hf_config(DATA / "deepseek-v3")
    assert m.name == "DeepSeek-V3"  # from _name_or_path "deepseek-ai/DeepSeek-V3"
    assert (m.n_Ld, m.mtp_layers) == (3, 1)  # first_k_dense_replace, num_nextn_predict_layers
    assert (m.routing_groups, m.max_groups) == (8, 4)  # n_group, topk_group
    assert m.max_context == 163840  # the config's value (the bundled YAML uses the README's 128K)
    assert m.kv_bytes_per_token() == 70_272  # 61 x 576 x 2


def test_name_from_directory():
    assert load_hf_config(DATA / "kimi-k2-thinking").name == "kimi-k2-thinking"
    assert load_hf_config(str(DATA / "mixtral-8x7b" / "config.json")).name == "mixtral-8x7b"


def test_gpt_oss_fields(tmp_path):
    m = load_hf_config(DATA / "gpt-oss-120b")
    assert m.precision["routed_experts"] == "mxfp4" and m.precision["attention"] == "bf16"
    assert (m.sliding_window, m.sliding_layers) == (128, 18)  # layer_types: 18 of 36 sliding
    assert m.qkv_bias and m.expert_bias
    cfg = fixture("gpt-oss-120b")
    del cfg["layer_types"], cfg["num_experts_per_tok"]  # original-style config: experts_per_token only
    m2 = load_hf_config(write(tmp_path, cfg))
    assert m2.sliding_layers == 18 and m2.k == 4  # even layers 0, 2, ..., 34 slide: 36 / 2


def test_mixtral_head_dim_default():
    m = load_hf_config(DATA / "mixtral-8x7b")
    assert m.d_head == 128  # no head_dim key: hidden_size / heads = 4096 / 32
    assert m.kv_bytes_per_token() == 2 * 8 * 128 * 32 * 2  # 131,072 B


def test_minimax_m2_fields(tmp_path):
    m = load_hf_config(DATA / "minimax-m2.5")
    assert m.architecture == "minimax_m2" and m.attention == "gqa"
    assert (m.E, m.k, m.E_s, m.n_Ld, m.f_e) == (256, 8, 0, 0, 1536)  # num_local_experts, intermediate_size
    assert m.mtp_layers == 0  # num_mtp_modules 3 is not read: the checkpoint has no MTP weights
    # FP8 block scheme with fmt "float8_e4m3fn"; modules_to_not_convert names gate and lm_head
    assert m.precision == {"routed_experts": "fp8", "attention": "fp8", "dense_ffn": "bf16",
                           "embeddings": "bf16"}
    assert m.kv_bytes_per_token() == 2 * 8 * 128 * 62 * 2 == 253_952
    assert m.max_context == 196608
    cfg = fixture("minimax-m2.5")
    del cfg["model_type"]  # architectures alone decide
    assert load_hf_config(write(tmp_path, cfg)).architecture == "minimax_m2"
    cfg = fixture("minimax-m2.5")
    cfg["attn_type_list"][0] = 0  # a lightning-attention layer (MiniMax-Text-01 / M1 style)
    with pytest.raises(SpecError, match=r"attn_type_list: a list of 62 ones .*values \['0', '1'\]"):
        load_hf_config(write(tmp_path, cfg))
    cfg = fixture("minimax-m2.5")
    cfg["shared_intermediate_size"] = 1536
    with pytest.raises(SpecError, match="shared_intermediate_size: 0"):
        load_hf_config(write(tmp_path, cfg))


# ---- families loaded from trimmed copies of their published config.json (source in `_source`) ----

PUBLISHED = [
    # fixture, published total, published active (the expected value in our convention: the LM head
    # counted, the input embedding not), where each figure is stated
    # zai-org/GLM-4.5 model card (README, Model Introduction): "GLM-4.5-Air ... 106 billion total parameters
    # and 12 billion active parameters"; the 12B leaves out the LM head (12.18B here without it), which
    # ours counts: + V d = 151,552 x 4,096 (12B as stated would be 6.7% under ours)
    ("glm-4.5-air", 106e9, 12e9 + 151_552 * 4096),
    # GLM-4.7 keeps GLM-4.5's architecture (the GLM-5 technical report's GLM-4.5 column: 3 dense + 89 MoE
    # layers, hidden 5120, 160 experts, 8 routed + 1 shared of 1536, 96 / 8 heads, vocab 151,552); the
    # zai-org/GLM-4.5 model card: "355 billion total parameters with 32 billion active parameters",
    # the 32B without the LM head as for the Air: + V d = 151,552 x 5,120
    ("glm-4.7", 355e9, 32e9 + 151_552 * 5120),
    # OLMoE paper (arXiv:2409.02060, linked from the allenai/OLMoE-1B-7B-0924 model card, whose "1B
    # active and 7B total" are the rounded name), Table 1: 6.9B total, 1.3B active; the 1.3B counts the
    # input embedding, which ours leaves out: - V d = 50,304 x 2,048
    ("olmoe-1b-7b-0924", 6.9e9, 1.3e9 - 50_304 * 2048),
    # microsoft/Phi-3.5-MoE-instruct model card: "16x3.8B parameters with 6.6B active parameters when
    # using 2 experts"; the model page's safetensors count: 41.9B params
    ("phi-3.5-moe-instruct", 41.9e9, 6.6e9),
    # ibm-granite/granite-3.1-3b-a800m-instruct model card, architecture table (3B MoE column):
    # "# Parameters 3.3B", "# Active Parameters 800M"; the 800M leaves out the tied embedding / LM head
    # (0.81B here without it), which ours counts: + V d = 49,155 x 1,536
    ("granite-3.1-3b-a800m-instruct", 3.3e9, 800e6 + 49_155 * 1536),
    # tencent/Hunyuan-A13B-Instruct model card: "13 billion active parameters (out of a total of 80
    # billion)"
    ("hunyuan-a13b-instruct", 80e9, 13e9),
    # baidu/ERNIE-4.5-21B-A3B-PT model page, safetensors count: 21.8B params (the card's "21B / 3B" are
    # rounded: 21B would be 3.9% under ours); the card's 3B activated leaves out the tied embedding / LM
    # head (3.09B here without it), which ours counts: + V d = 103,424 x 2,560
    ("ernie-4.5-21b-a3b-pt", 21.8e9, 3e9 + 103_424 * 2560),
    # baidu/ERNIE-4.5-300B-A47B-PT model card: "300B total parameters and 47B activated parameters per
    # token" (299.5B and 47.1B here, the LM head counted)
    ("ernie-4.5-300b-a47b-pt", 300e9, 47e9),
    # meta-llama/Llama-4-Scout-17B-16E and Llama-4-Maverick-17B-128E model cards: 17B activated, 109B /
    # 400B total.  The 17B counts both the input embedding and the LM head (16.1B here without the
    # embedding): - V d = 202,048 x 5,120.  The vision tower is not part of the text model and is not
    # counted here (107.8B for Scout's text model, 1.1% under the card's 109B)
    ("llama-4-scout-17b-16e", 109e9, 17e9 - 202_048 * 5120),
    ("llama-4-maverick-17b-128e", 400e9, 17e9 - 202_048 * 5120),
]


@pytest.mark.parametrize(("name", "total", "active"), PUBLISHED, ids=[p[0] for p in PUBLISHED])
def test_family_config_totals_match_the_published_figures(name, total, active):
    m = load_hf_config(DATA / name)
    assert math.isclose(m.total_params, total, rel_tol=0.03)
    assert math.isclose(m.active_params, active, rel_tol=0.03)


@pytest.mark.parametrize(("name", "arch"), [("glm-4.5-air", "glm4_moe"), ("olmoe-1b-7b-0924", "olmoe"),
                                            ("phi-3.5-moe-instruct", "phimoe"),
                                            ("granite-3.1-3b-a800m-instruct", "granitemoe"),
                                            ("hunyuan-a13b-instruct", "hunyuan_v1_moe"),
                                            ("ernie-4.5-21b-a3b-pt", "ernie4_5_moe"),
                                            ("ernie-4.5-300b-a47b-pt", "ernie4_5_moe")])
def test_architectures_alone_name_the_family(name, arch, tmp_path):
    cfg = fixture(name)
    del cfg["model_type"]
    m = load_hf_config(write(tmp_path, cfg))
    assert m.architecture == arch and m.attention == "gqa" and not m.is_dense
    assert m.total_params == load_hf_config(DATA / name).total_params


def test_glm4_moe_reads_dense_layers_shared_expert_and_mtp(tmp_path):
    m = load_hf_config(DATA / "glm-4.5-air")
    # first_k_dense_replace 1 (FFN 10944), then 128 routed top-8 + 1 shared expert of 1408
    assert (m.E, m.k, m.E_s, m.n_Ld, m.f_e, m.f_d) == (128, 8, 1, 1, 1408, 10944)
    assert m.qkv_bias and m.mtp_layers == 1 and m.sliding_layers == 0
    assert m.kv_bytes_per_token() == 2 * 8 * 128 * 46 * 2 == 188_416
    assert m.class_params()["dense_ffn"] == 3 * 4096 * 10944 + 45 * 3 * 4096 * 1408  # layer 0 + shared
    big = load_hf_config(DATA / "glm-4.7")
    assert (big.n_Ld, big.E, big.max_context) == (3, 160, 202752)
    cfg = fixture("glm-4.7")  # compressed-tensors FP8 on every Linear, as zai-org's -FP8 releases
    fp8_group = {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}
    cfg["quantization_config"] = {"quant_method": "compressed-tensors",
                                  "config_groups": {"group_0": fp8_group}, "ignore": ["lm_head"]}
    assert load_hf_config(write(tmp_path, cfg)).precision == {
        "routed_experts": "fp8", "attention": "fp8", "dense_ffn": "fp8", "embeddings": "bf16"}
    # the shared experts are most of the dense_ffn class (89 layers' against 3 dense layers' MLPs)
    cfg["quantization_config"]["ignore"] = ["lm_head", "re:.*mlp[.]shared_experts[.].*"]
    assert load_hf_config(write(tmp_path, cfg)).precision["dense_ffn"] == "bf16"


def test_olmoe_and_granite_route_every_layer_without_a_shared_expert(tmp_path):
    olmoe = load_hf_config(DATA / "olmoe-1b-7b-0924")
    assert (olmoe.E, olmoe.k, olmoe.E_s, olmoe.n_Ld, olmoe.f_e) == (64, 8, 0, 0, 1024)  # num_experts
    assert olmoe.kv_bytes_per_token() == 2 * 16 * 128 * 16 * 2 == 131_072  # 16 KV heads of 2048 / 16
    granite = load_hf_config(DATA / "granite-3.1-3b-a800m-instruct")
    assert (granite.E, granite.k, granite.E_s, granite.f_e, granite.d_head) == (40, 8, 0, 512, 64)
    assert granite.class_params()["embeddings"] == 49_155 * 1536  # tied: one table
    cfg = fixture("olmoe-1b-7b-0924")
    cfg["sliding_window"] = 4096  # Llama-derived attention (as OLMoE's) takes no window: the key is unused
    assert load_hf_config(write(tmp_path, cfg)).sliding_layers == 0


def test_phimoe_slides_over_its_whole_context_with_attention_biases(tmp_path):
    m = load_hf_config(DATA / "phi-3.5-moe-instruct")
    assert (m.E, m.k, m.f_e) == (16, 2, 6400) and m.qkv_bias
    assert (m.sliding_window, m.sliding_layers, m.max_context) == (131072, 32, 131072)
    cfg = fixture("phi-3.5-moe-instruct")
    del cfg["model_type"]
    cfg["architectures"] = ["PhimoeForCausalLM"]  # the transformers class name
    assert load_hf_config(write(tmp_path, cfg)).architecture == "phimoe"


def test_hunyuan_reads_per_layer_lists_and_a_shared_mlp(tmp_path):
    m = load_hf_config(DATA / "hunyuan-a13b-instruct")
    # moe_topk / moe_intermediate_size / num_shared_expert given per layer (32 equal values); the shared
    # MLP is intermediate_size x num_shared_expert = 3072 wide: one expert's width
    assert (m.E, m.k, m.E_s, m.n_Ld, m.f_e, m.d_head) == (64, 8, 1, 0, 3072, 128)
    assert m.kv_bytes_per_token() == 2 * 8 * 128 * 32 * 2 == 131_072  # use_cla false: a cache per layer
    cfg = fixture("hunyuan-a13b-instruct")
    cfg.update(moe_topk=8, moe_intermediate_size=1536, num_shared_expert=2)  # scalars
    m2 = load_hf_config(write(tmp_path, cfg))
    assert (m2.k, m2.f_e, m2.E_s) == (8, 1536, 4)  # a 2 x 3072 shared MLP: four experts of 1536
    cfg.update(use_mixed_mlp_moe=False)
    assert load_hf_config(write(tmp_path, cfg)).E_s == 0
    cfg.update(use_mixed_mlp_moe=True, moe_intermediate_size=4096)
    with pytest.raises(SpecError, match=r"num_shared_expert: a shared MLP whose width .*6144.* \(4096\)"):
        load_hf_config(write(tmp_path, cfg))


def test_ernie_leading_dense_layers_come_from_the_moe_start_index(tmp_path):
    m = load_hf_config(DATA / "ernie-4.5-21b-a3b-pt")
    # layer 0 dense (FFN 12288), layers 1-27 MoE: 64 routed top-6 + 2 shared experts of 1536
    assert (m.E, m.k, m.E_s, m.n_Ld, m.f_e, m.f_d) == (64, 6, 2, 1, 1536, 12288)
    assert m.tie_embeddings and not m.qkv_bias
    for end in (-1, None):  # the end index as transformers' default, and as some copies write it
        cfg = fixture("ernie-4.5-21b-a3b-pt")
        cfg["moe_layer_end_index"] = end
        assert load_hf_config(write(tmp_path, cfg)).total_params == m.total_params


def test_ernie_counts_moe_layers_by_start_end_and_interval(tmp_path):
    big = load_hf_config(DATA / "ernie-4.5-300b-a47b-pt")
    # layers 0-2 dense (FFN 28672), 3-53 MoE: 64 routed top-8 of 3584, no shared expert
    assert (big.E, big.k, big.E_s, big.n_Ld, big.f_e, big.f_d) == (64, 8, 0, 3, 3584, 28672)
    assert big.kv_bytes_per_token() == 2 * 8 * 128 * 54 * 2
    ref = load_hf_config(DATA / "ernie-4.5-21b-a3b-pt")
    assert ref.class_params()["routed_experts"] == 27 * 64 * 3 * 2560 * 1536
    # MoE on layer i of [start, end] when (i + 1) % interval == 0, as ERNIE's and transformers' code
    for start, end, interval, n_moe in [(1, 27, 2, 14),    # 1, 3, ..., 27
                                        (0, 27, 2, 14),    # the same layers: layer 0 is not one
                                        (1, 20, 1, 20),    # 1-20; 0 and 21-27 dense
                                        (1, None, 3, 9),   # 2, 5, ..., 26
                                        (4, -1, 4, 6)]:    # 7, 11, ..., 27
        cfg = fixture("ernie-4.5-21b-a3b-pt")
        cfg.update(moe_layer_start_index=start, moe_layer_end_index=end, moe_layer_interval=interval)
        m = load_hf_config(write(tmp_path, cfg))
        assert (m.n_L - m.n_Ld, m.n_Ld, m.f_d) == (n_moe, 28 - n_moe, 12288), (start, end, interval)
        cls = m.class_params()
        assert cls["routed_experts"] == n_moe * 64 * 3 * 2560 * 1536
        assert cls["dense_ffn"] == (28 - n_moe) * 3 * 2560 * 12288 + n_moe * 2 * 3 * 2560 * 1536  # + shared
        assert m.router_params == 64 * 2560  # per MoE layer


def test_llama4_scout_and_maverick_fields(tmp_path):
    scout = load_hf_config(DATA / "llama-4-scout-17b-16e")
    assert scout.architecture == "llama4" and scout.attention == "gqa" and not scout.tie_embeddings
    # every layer MoE: 16 routed top-1 + 1 shared expert, all of intermediate_size 8192
    assert (scout.E, scout.k, scout.E_s, scout.n_Ld, scout.f_e, scout.f_d) == (16, 1, 1, 0, 8192, 0)
    # chunked attention (8192-token chunks) on the RoPE layers, 3 of every 4; priced as a window
    assert (scout.sliding_window, scout.sliding_layers) == (8192, 36)
    assert scout.kv_bytes_per_token() == 2 * 8 * 128 * 48 * 2
    assert scout.max_context == 10485760 and not scout.qkv_bias
    mav = load_hf_config(DATA / "llama-4-maverick-17b-128e")
    # interleave_moe_layer_step 2: layers 1, 3, ..., 47 MoE; the other 24 a dense MLP of 16384
    assert (mav.E, mav.k, mav.E_s, mav.n_Ld, mav.f_e, mav.f_d) == (128, 1, 1, 24, 8192, 16384)
    assert (mav.sliding_window, mav.sliding_layers) == (8192, 36)  # no no_rope_layers: every 4th NoPE
    assert mav.class_params()["dense_ffn"] == 24 * 3 * 5120 * 16384 + 24 * 3 * 5120 * 8192
    cfg = fixture("llama-4-maverick-17b-128e")
    cfg["text_config"]["moe_layers"] = list(range(1, 48, 2))  # the explicit list, as newer copies write it
    assert load_hf_config(write(tmp_path, cfg)).total_params == mav.total_params
    cfg["text_config"]["moe_layers"] = [0, 5, 9]  # the list wins over the step
    assert load_hf_config(write(tmp_path, cfg)).n_Ld == 45
    cfg = fixture("llama-4-maverick-17b-128e")
    cfg["text_config"]["layer_types"] = ["full_attention"] * 40 + ["chunked_attention"] * 8
    assert load_hf_config(write(tmp_path, cfg)).sliding_layers == 8
    del cfg["text_config"]["layer_types"]
    cfg["text_config"]["no_rope_layer_interval"] = 2
    assert load_hf_config(write(tmp_path, cfg)).sliding_layers == 24
    cfg["text_config"]["attention_chunk_size"] = None  # no chunking: full attention everywhere
    assert load_hf_config(write(tmp_path, cfg)).sliding_layers == 0


def test_llama4_text_only_config(tmp_path):
    # a Llama4ForCausalLM checkpoint: the text config at the top, model_type llama4_text
    cfg = dict(fixture("llama-4-scout-17b-16e")["text_config"], architectures=["Llama4ForCausalLM"])
    m = load_hf_config(write(tmp_path, cfg))
    assert m.architecture == "llama4"
    assert m.total_params == load_hf_config(DATA / "llama-4-scout-17b-16e").total_params
    del cfg["model_type"]  # architectures alone decide
    assert load_hf_config(write(tmp_path, cfg)).architecture == "llama4"


def test_llama4_fp8_compressed_tensors(tmp_path):
    # as the -FP8 Maverick release: FP8 on the Linear layers, the routers, attention and vision left out
    cfg = fixture("llama-4-maverick-17b-128e")
    fp8_group = {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}
    cfg["quantization_config"] = {"quant_method": "compressed-tensors",
                                  "config_groups": {"group_0": fp8_group},
                                  "ignore": ["re:.*self_attn.*", "re:.*router", "re:vision_model.*",
                                             "language_model.lm_head"]}
    m = load_hf_config(write(tmp_path, cfg))
    assert m.precision == {"routed_experts": "fp8", "attention": "bf16", "dense_ffn": "fp8",
                           "embeddings": "bf16"}
    # a layer-specific ignore sees the MoE layers where they are (odd indices), not in one block
    cfg["quantization_config"]["ignore"] = [r"re:.*layers\.\d*[13579]\.feed_forward\..*"]
    assert load_hf_config(write(tmp_path, cfg)).precision["routed_experts"] == "bf16"


def test_cli_shows_a_family_config(capsys):
    rc = main(["specs", "show", str(DATA / "hunyuan-a13b-instruct"), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["architecture"] == "hunyuan_v1_moe"
    assert d["total_params"] == load_hf_config(DATA / "hunyuan-a13b-instruct").total_params


@pytest.mark.parametrize(("name", "arch"), [("llama-3.1-8b", "llama"), ("llama-3.1-70b", "llama"),
                                            ("qwen3-32b", "qwen3")])
def test_dense_fields(name, arch, tmp_path):
    m = load_hf_config(DATA / name)
    assert m.architecture == arch and m.is_dense
    # every layer a dense FFN of intermediate_size; no router, no expert weights
    assert (m.n_Ld, m.f_d) == (m.n_L, fixture(name)["intermediate_size"])
    assert (m.E, m.k, m.E_s, m.f_e) == (1, 1, 0, 0)
    assert m.class_params()["routed_experts"] == 0 and m.router_params == 0
    cfg = fixture(name)
    del cfg["model_type"]  # architectures alone decide
    assert load_hf_config(write(tmp_path, cfg)).architecture == arch


def test_llama_fields(tmp_path):
    m = load_hf_config(DATA / "llama-3.1-8b")
    assert m.d_head == 128  # no head_dim key: hidden_size / heads = 4096 / 32
    assert m.kv_bytes_per_token() == 2 * 8 * 128 * 32 * 2 == 131_072
    # 32 x (41,943,040 + 176,160,768 + 8,192) + 2 x 128,256 x 4,096 + 4,096
    assert m.total_params == 8_030_261_248
    assert m.max_context == 131072  # rope_scaling llama3, factor 8 on 8192
    cfg = fixture("llama-3.1-8b")
    cfg["sliding_window"] = 8192  # some Llama fine-tunes carry the key; LlamaForCausalLM ignores it
    assert load_hf_config(write(tmp_path, cfg)).sliding_layers == 0
    cfg["mlp_bias"] = True
    with pytest.raises(SpecError, match="mlp_bias: false"):
        load_hf_config(write(tmp_path, cfg))


def test_qwen3_dense_fields(tmp_path):
    m = load_hf_config(DATA / "qwen3-32b")
    assert m.max_context == 40960  # the config's value (the bundled YAML uses the advertised 128K)
    assert m.kv_bytes_per_token() == 2 * 8 * 128 * 64 * 2 == 262_144
    assert not m.qkv_bias and m.sliding_layers == 0  # attention_bias false, use_sliding_window false
    cfg = fixture("qwen3-32b")  # as Qwen's -FP8 release: E4M3 with 128x128 block scales
    cfg["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                  "weight_block_size": [128, 128]}
    fp8 = load_hf_config(write(tmp_path, cfg))
    # no routed experts to quantize: that class has no parameters and stays at torch_dtype
    assert fp8.precision == {"routed_experts": "bf16", "attention": "fp8", "dense_ffn": "fp8",
                             "embeddings": "bf16"}


def test_text_config_nesting(tmp_path):
    inner = fixture("kimi-k2-thinking")
    quant = inner.pop("quantization_config")
    cfg = {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
           "text_config": inner, "quantization_config": quant}
    m = load_hf_config(write(tmp_path, cfg))
    ref = load_model("kimi-k2-thinking")
    assert m.total_params == ref.total_params and m.weight_bytes() == ref.weight_bytes()
    del cfg["text_config"]["hidden_size"]
    with pytest.raises(SpecError, match=r"config\.json: text_config\.hidden_size: a value"):
        load_hf_config(write(tmp_path, cfg))


def test_load_model_accepts_config_json():
    via_specs = load_model(str(DATA / "qwen3-235b-a22b" / "config.json"))
    assert via_specs.total_params == load_model("qwen3-235b-a22b").total_params


def test_cli_show_config_json(capsys):
    rc = main(["specs", "show", str(DATA / "kimi-k2-thinking"), "--json"])
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["kind"] == "model"
    assert d["total_params"] == load_model("kimi-k2-thinking").total_params
    assert d["kv_bytes_per_token"] == 70_272


# ---- bad config.json --------------------------------------------------------------------------

def _edit(name, fn):
    def make():
        cfg = copy.deepcopy(fixture(name))
        fn(cfg)
        return cfg
    return make


BAD = [
    ("unsupported-architecture", _edit("mixtral-8x7b", lambda c: c.update(model_type="gemma3")),
     "model_type: one of deepseek_v3, kimi_k2, deepseek_v2, deepseek_v32, deepseek_v4, glm_moe_dsa, "
     "qwen3_moe, gpt_oss, mixtral, minimax_m2, minimax_m3, glm4_moe, olmoe, phimoe, granitemoe, "
     "hunyuan_v1_moe, ernie4_5_moe, llama4, qwen3_next, qwen3_5_moe, kimi_linear, nemotron_h, llama, qwen3; "
     "got 'gemma3'"),
    ("hybrid-granite", _edit("granite-3.1-3b-a800m-instruct",
                             lambda c: c.update(model_type="granitemoehybrid")),
     "model_type: one of deepseek_v3"),
    ("hunyuan-cla", _edit("hunyuan-a13b-instruct", lambda c: c.update(use_cla=True)),
     "use_cla: false (cross-layer KV sharing, one KV cache per 2 layers, is not modelled), got true"),
    ("hunyuan-skipped", _edit("hunyuan-a13b-instruct", lambda c: c.update(moe_layer_num_skipped=1)),
     "moe_layer_num_skipped: 0 (MoE in every layer"),
    ("hunyuan-varying-topk", _edit("hunyuan-a13b-instruct", lambda c: c["moe_topk"].__setitem__(5, 4)),
     "moe_topk: one integer, or a list of 32 equal ones (a value that varies by layer is not modelled), "
     "got 32 entries, values ['4', '8']"),
    ("ernie-end-before-start", _edit("ernie-4.5-21b-a3b-pt", lambda c: c.update(moe_layer_end_index=0)),
     "moe_layer_end_index: a layer index from moe_layer_start_index (1) on, -1 or null (the last layer), "
     "got 0"),
    ("ernie-no-moe-layer", _edit("ernie-4.5-21b-a3b-pt", lambda c: c.update(moe_layer_interval=40)),
     "moe_layer_start_index: fewer dense layers than num_hidden_layers (28), got 28"),
    ("llama4-moe-layers", _edit("llama-4-maverick-17b-128e",
                                lambda c: c["text_config"].update(moe_layers=[1, 48])),
     "text_config.moe_layers: a list of distinct layer indices from 0 to 47, got [1, 48]"),
    ("llama4-no-rope-layers", _edit("llama-4-maverick-17b-128e",
                                    lambda c: c["text_config"].update(no_rope_layers=[1, 0])),
     "text_config.no_rope_layers: a list of 48 flags"),
    ("llama4-text-type", _edit("llama-4-scout-17b-16e",
                               lambda c: c["text_config"].update(model_type="gemma3_text")),
     "text_config.model_type: one of deepseek_v3"),
    ("ernie-vl-pools", _edit("ernie-4.5-21b-a3b-pt", lambda c: c.update(moe_num_experts=[64, 64])),
     "moe_num_experts: one integer (one expert pool"),
    ("ernie-bias", _edit("ernie-4.5-21b-a3b-pt", lambda c: c.update(use_bias=True)), "use_bias: false"),
    ("glm-all-dense", _edit("glm-4.5-air", lambda c: c.update(first_k_dense_replace=46)),
     "first_k_dense_replace: fewer dense layers than num_hidden_layers (46), got 46"),
    ("olmoe-topk", _edit("olmoe-1b-7b-0924", lambda c: c.update(num_experts_per_tok=65)),
     "num_experts_per_tok: at most the number of routed experts (64), got 65"),
    ("unknown-architectures", _edit("mixtral-8x7b", lambda c: (c.pop("model_type"),
                                                               c.update(architectures=["Gemma3ForCausalLM"]))),
     "architectures: one of DeepseekV3ForCausalLM"),
    ("missing-key", _edit("deepseek-v3", lambda c: c.pop("kv_lora_rank")),
     "kv_lora_rank: a value (the field is missing)"),
    ("missing-experts", _edit("qwen3-235b-a22b", lambda c: c.pop("num_experts")), "num_experts: a value"),
    ("wrong-type", _edit("mixtral-8x7b", lambda c: c.update(hidden_size="4096")), "hidden_size: an integer"),
    ("zero", _edit("mixtral-8x7b", lambda c: c.update(num_hidden_layers=0)),
     "num_hidden_layers: an integer >= 1"),
    ("kv-heads", _edit("mixtral-8x7b", lambda c: c.update(num_key_value_heads=5)),
     "num_key_value_heads: a divisor of num_attention_heads (32)"),
    ("quant-method", _edit("deepseek-v3", lambda c: c["quantization_config"].update(quant_method="awq")),
     "quantization_config.quant_method: one of fp8, compressed-tensors, mxfp4, modelopt, got 'awq'"),
    ("int4-g128", _edit("kimi-k2-thinking", lambda c: c["quantization_config"]["config_groups"]["group_0"]
                        ["weights"].update(group_size=128)),
     "quantization_config.config_groups.group_0.weights.num_bits: a weight scheme the planner models"),
    ("dtype", _edit("mixtral-8x7b", lambda c: c.update(torch_dtype="int8")), "torch_dtype: one of bfloat16"),
    ("moe-layer-freq", _edit("deepseek-v3", lambda c: c.update(moe_layer_freq=2)), "moe_layer_freq: 1"),
]


@pytest.mark.parametrize(("make", "expected"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_config_cli(make, expected, tmp_path, capsys):
    path = write(tmp_path, make())
    rc = main(["specs", "show", str(path)])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert err.startswith(f"error: {path}: {expected}"), err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(("make", "expected"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_config_api(make, expected, tmp_path):
    path = write(tmp_path, make())
    for load in (load_hf_config, load_model):
        with pytest.raises(SpecError) as exc:
            load(str(path))
        assert isinstance(exc.value, ValueError)
        assert str(exc.value).startswith(f"{path}: {expected}")


def test_invalid_json(tmp_path, capsys):
    path = write(tmp_path, '{"model_type": "mixtral",\n  "hidden_size": 4096,,\n}')
    rc = main(["specs", "show", str(path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith(f"error: {path}: json: valid JSON (Expecting property name") and "line 2" in err
    assert err.count("\n") == 1


def test_not_an_object(tmp_path):
    with pytest.raises(SpecError, match="document: a JSON object"):
        load_hf_config(write(tmp_path, "[1, 2]"))


def test_directory_without_config(tmp_path, capsys):
    rc = main(["specs", "show", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err == f"error: {tmp_path}: config.json: a directory holding a Hugging Face config.json\n"


def test_a_checkpoint_directory_named_without_a_slash(tmp_path, monkeypatch):
    # `--model ckpt` was refused as an unknown model name while `--model ckpt/` loaded
    ckpt = write(tmp_path, fixture("mixtral-8x7b"), "ckpt").parent
    monkeypatch.chdir(tmp_path)
    total = load_hf_config(ckpt).total_params
    assert load_model("ckpt").total_params == load_model("ckpt/").total_params == total
    (tmp_path / "notes").mkdir()  # a directory without a config.json stays a name to look up
    with pytest.raises(SpecError, match=r"a known model, got 'notes' \(a directory, but without a config"):
        load_model("notes")
