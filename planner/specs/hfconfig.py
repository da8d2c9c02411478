"""Hugging Face ``config.json`` -> :class:`~planner.specs.model.Model`.

Reads the architecture fields and the ``quantization_config`` block of a checkpoint's
``config.json`` (a file, or a directory holding one) for the MoE families the planner models
(MLA or GQA attention; the first layers dense, then MoE with routed and shared experts), and
the dense ones (``llama``, ``qwen3``: every layer a dense FFN, no experts):

==============  ===========================================  ===================================
model_type      architectures                                examples
==============  ===========================================  ===================================
deepseek_v3     DeepseekV3ForCausalLM                        DeepSeek-V3, DeepSeek-R1
kimi_k2         DeepseekV3ForCausalLM                        Kimi K2, Kimi K2 Thinking
deepseek_v2     DeepseekV2ForCausalLM                        DeepSeek-V2, DeepSeek-V2-Lite
qwen3_moe       Qwen3MoeForCausalLM                          Qwen3-235B-A22B, Qwen3-30B-A3B
gpt_oss         GptOssForCausalLM                            gpt-oss-120b, gpt-oss-20b
mixtral         MixtralForCausalLM                           Mixtral-8x7B, Mixtral-8x22B
minimax_m2      MiniMaxM2ForCausalLM                         MiniMax-M2, MiniMax-M2.1, MiniMax-M2.5
glm4_moe        Glm4MoeForCausalLM                           GLM-4.5, GLM-4.5-Air, GLM-4.6, GLM-4.7
olmoe           OlmoeForCausalLM                             OLMoE-1B-7B-0924, OLMoE-1B-7B-0125
phimoe          PhiMoEForCausalLM, PhimoeForCausalLM         Phi-3.5-MoE-instruct
granitemoe      GraniteMoeForCausalLM                        granite-3.1-3b-a800m, granite-3.0-1b-a400m
hunyuan_v1_moe  HunYuanMoEV1ForCausalLM                      Hunyuan-A13B-Instruct
ernie4_5_moe    Ernie4_5_MoeForCausalLM                      ERNIE-4.5-21B-A3B-PT, ERNIE-4.5-300B-A47B-PT
llama4          Llama4ForConditionalGeneration,              Llama-4-Scout-17B-16E,
                Llama4ForCausalLM                            Llama-4-Maverick-17B-128E (text model)
llama           LlamaForCausalLM                             Llama-3.1-8B, Llama-3.1-70B (dense)
qwen3           Qwen3ForCausalLM                             Qwen3-32B, Qwen3-8B (dense)
==============  ===========================================  ===================================

Storage precision per tensor class (``planner.specs.precision``):

* no ``quantization_config``: every class at ``torch_dtype`` (``bfloat16`` -> bf16, ``float16``
  -> fp16; a ``float32`` checkpoint is planned as bf16, since nobody serves FP32);
* ``quant_method: fp8`` (DeepSeek-V3 style E4M3 with 128x128 block scales; ``fmt`` e4m3 or
  float8_e4m3fn): fp8 for every linear layer (attention, dense FFN and shared experts, routed
  experts), bf16 embeddings;
* ``quant_method: compressed-tensors``: each class takes the scheme of the ``config_groups``
  entry whose ``targets`` match its modules, unless the ``ignore`` list names them (Kimi K2
  Thinking: INT4 symmetric group 32 on the routed experts only -> ``int4_g32``);
* ``quant_method: mxfp4`` (gpt-oss): mxfp4 for the routed experts, the rest at ``torch_dtype``;
* ``quant_method: modelopt`` (NVIDIA ModelOpt, e.g. the ``-FP4`` checkpoints): ``quant_algo``
  NVFP4 -> nvfp4 or FP8 -> fp8 for every linear layer not matched by ``ignore`` (glob patterns;
  ``exclude_modules`` in older files).

The input embedding and LM head are one class (``embeddings``) and stay at ``torch_dtype``.
The KV cache is planned in bf16.  Keys the planner does not use (rope scaling, partial RoPE,
token ids, routing scale factors, Granite's multipliers) are ignored; a key it needs that is
missing is an error naming it.  Dense and MoE layers are counted wherever they sit (ERNIE's
start / end / interval, Llama 4's ``moe_layers`` or ``interleave_moe_layer_step``, Qwen3-MoE's
``mlp_only_layers``): the planner prices n_Ld dense and n_L - n_Ld MoE layers.  Llama 4's chunked
attention is planned as a sliding window of the chunk size (an upper bound; see ``_llama4_chunked``).
A layout the model cannot express is an error naming the field: Hunyuan's dense leading layers
(``moe_layer_num_skipped``), per-layer expert counts that vary, ERNIE-4.5-VL's two expert pools,
DeepSeek's ``moe_layer_freq``, and Hunyuan's cross-layer KV sharing (``use_cla``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from planner.errors import SpecError
from planner.specs.model import Model
from planner.specs.precision import TENSOR_CLASSES
from planner.specs.reading import Fields, path_kind, read_text

#: model_type -> Model.architecture
MODEL_TYPES = ("deepseek_v3", "kimi_k2", "deepseek_v2", "deepseek_v32", "deepseek_v4", "glm_moe_dsa",
               "qwen3_moe", "gpt_oss", "mixtral", "minimax_m2", "minimax_m3", "glm4_moe", "olmoe", "phimoe",
               "granitemoe", "hunyuan_v1_moe", "ernie4_5_moe", "llama4", "qwen3_next", "qwen3_5_moe",
               "kimi_linear", "nemotron_h", "llama", "qwen3")
#: other model_type spellings of a family (Llama 4's and Qwen3.5's text_config say ``llama4_text``
#: and ``qwen3_5_moe_text``)
_ALIASES = {"llama4_text": "llama4", "qwen3_5_moe_text": "qwen3_5_moe", "kimi_k3": "kimi_linear"}
#: ``architectures[0]`` -> model_type, used only when ``model_type`` is absent
ARCH_CLASSES = {
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV32ForCausalLM": "deepseek_v32",
    "DeepseekV4ForCausalLM": "deepseek_v4",
    "GlmMoeDsaForCausalLM": "glm_moe_dsa",
    "Qwen3NextForCausalLM": "qwen3_next",
    "Qwen3_5MoeForConditionalGeneration": "qwen3_5_moe",
    "KimiLinearForCausalLM": "kimi_linear",
    "NemotronHForCausalLM": "nemotron_h",
    "KimiK3ForConditionalGeneration": "kimi_linear",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "GptOssForCausalLM": "gpt_oss",
    "MixtralForCausalLM": "mixtral",
    "MiniMaxM2ForCausalLM": "minimax_m2",
    "MiniMaxM3SparseForCausalLM": "minimax_m3",
    "MiniMaxM3SparseForConditionalGeneration": "minimax_m3",
    "Glm4MoeForCausalLM": "glm4_moe",
    "OlmoeForCausalLM": "olmoe",
    "PhiMoEForCausalLM": "phimoe",  # the checkpoint's remote-code class
    "PhimoeForCausalLM": "phimoe",  # the transformers class
    "GraniteMoeForCausalLM": "granitemoe",
    "HunYuanMoEV1ForCausalLM": "hunyuan_v1_moe",
    "Ernie4_5_MoeForCausalLM": "ernie4_5_moe",
    "Llama4ForConditionalGeneration": "llama4",
    "Llama4ForCausalLM": "llama4",
    "LlamaForCausalLM": "llama",
    "Qwen3ForCausalLM": "qwen3",
}
#: the most layers a config may declare (the largest published model has under 200; the importers
#: walk the layers one by one, so an absurd count is refused rather than iterated)
MAX_LAYERS = 10_000
_MLA = ("deepseek_v3", "kimi_k2", "deepseek_v2", "deepseek_v32", "deepseek_v4", "glm_moe_dsa")
#: MLA families with DeepSeek sparse attention (an indexer picks the top-k tokens per query)
_DSA = ("deepseek_v32", "glm_moe_dsa")
#: GQA hybrids with gated DeltaNet layers (three of four) and gated full-attention layers
_GATED_DELTANET = ("qwen3_next", "qwen3_5_moe")
#: dense families: GQA attention and one dense FFN per layer, no experts
_DENSE = ("llama", "qwen3")
#: families whose attention takes no sliding window (a ``sliding_window`` key is unused)
_FULL_ATTENTION = ("llama", "glm4_moe", "olmoe", "granitemoe", "hunyuan_v1_moe", "ernie4_5_moe",
                   "minimax_m3", *_GATED_DELTANET)
#: the key that sets the dense layers, where a family has one (for the error naming it)
_DENSE_KEY = {"qwen3_moe": "mlp_only_layers", "qwen3_next": "mlp_only_layers",
              "qwen3_5_moe": "mlp_only_layers", "glm4_moe": "first_k_dense_replace",
              "minimax_m3": "moe_layer_freq",
              "ernie4_5_moe": "moe_layer_start_index", "llama4": "interleave_moe_layer_step"}
#: the key of the routed experts per token where it is not ``num_experts_per_tok``
_TOPK_KEY = {"hunyuan_v1_moe": "moe_topk", "ernie4_5_moe": "moe_k"}
_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "bf16"}
_GATE_UP_DOWN = ("gate_proj", "up_proj", "down_proj")
#: NVIDIA ModelOpt ``quant_algo`` -> storage format (W4A16_NVFP4 stores the same bytes as NVFP4)
_MODELOPT = {"NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4", "FP8": "fp8"}


def _unique_keys(label: str) -> Any:
    """A ``json.loads`` hook refusing a key given twice in one object (JSON readers differ on which
    one wins; YAML specs refuse it too)."""
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in items:
            if k in out:
                raise SpecError(label, str(k), "one value, given twice in the same object")
            out[k] = v
        return out
    return pairs


def load_hf_config(path: str | Path) -> Model:
    """A :class:`Model` from a Hugging Face ``config.json`` (or a directory holding one).

    Raises :class:`SpecError` (``<file>: <field>: <expected>``) for unreadable or invalid JSON,
    an unsupported ``model_type``, a missing key or a quantization scheme the planner does not
    model.
    """
    p = Path(path).expanduser()
    if path_kind(p) == "dir":
        p = p / "config.json"
        if path_kind(p) != "file":
            raise SpecError(str(path), "config.json", "a directory holding a Hugging Face config.json")
    label = str(p)
    text = read_text(p, label)
    try:
        doc = json.loads(text, object_pairs_hook=_unique_keys(label))
    except json.JSONDecodeError as exc:
        where = f"at line {exc.lineno}, column {exc.colno}"
        raise SpecError(label, "json", f"valid JSON ({exc.msg} {where})") from None
    except RecursionError:
        raise SpecError(label, "json", "a JSON document of reasonable nesting depth") from None
    except SpecError:  # a key given twice (_unique_keys)
        raise
    except ValueError as exc:  # an integer of more digits than Python converts (4,300)
        why = " ".join(str(exc).split())[:160]
        raise SpecError(label, "json", f"values JSON can read ({why})") from None
    if not isinstance(doc, dict):
        raise SpecError(label, "document", f"a JSON object of config fields, got {type(doc).__name__}")
    return parse_hf_config(doc, label, _default_name(doc, p))


def _default_name(doc: dict[str, Any], p: Path) -> str:
    """``_name_or_path``'s last component when present, else the directory (or file stem)."""
    name_or_path = doc.get("_name_or_path")
    if isinstance(name_or_path, str) and name_or_path.strip("/ "):
        return name_or_path.rstrip("/").rsplit("/", 1)[-1]
    if p.name == "config.json":
        return p.resolve().parent.name or "model"
    return p.stem


def parse_hf_config(doc: dict[str, Any], label: str, name: str = "model") -> Model:
    """The :class:`Model` of an already-parsed ``config.json`` mapping (see :func:`load_hf_config`)."""
    top = Fields(doc, label)
    f = top.sub("text_config") if isinstance(doc.get("text_config"), dict) else top
    arch = _model_type(top, f)

    kw: dict[str, Any] = {"name": name, "architecture": arch, "source": f"Hugging Face config.json: {label}"}
    kw["d"] = f.integer("hidden_size")
    n_L = kw["n_L"] = f.integer("num_hidden_layers", required=arch != "nemotron_h", default=0,
                                minimum=0 if arch == "nemotron_h" else 1, maximum=MAX_LAYERS)
    if arch == "nemotron_h":  # a model of blocks: the planner's layers are its MoE blocks
        n_L = kw["n_L"] = _nemotron_blocks(f).count("E")
    kw["V"] = f.integer("vocab_size")
    kw["tie_embeddings"] = f.boolean("tie_word_embeddings", default=False)
    kw["max_context"] = f.integer(_key(f, "max_position_embeddings", "model_max_length"))
    kw["h"] = f.integer("num_attention_heads")
    if arch == "kimi_linear":
        _kimi_linear(f, kw)
    elif arch == "nemotron_h":
        _nemotron_h(f, kw)
    elif arch == "deepseek_v4":
        _deepseek_v4(f, kw)
    elif arch in _MLA:
        _deepseek(f, kw)
        if arch in _DSA:
            _sparse_indexer(f, kw)
    else:
        _gqa(f, arch, kw)
    if arch in _GATED_DELTANET:
        _gated_deltanet(f, kw)
    if kw["k"] > kw["E"]:
        topk = _TOPK_KEY.get(arch) or _key(f, "num_experts_per_tok", "experts_per_token")
        raise SpecError(label, f.path(topk),
                        f"at most the number of routed experts ({kw['E']}), got {kw['k']}")
    if kw["n_Ld"] >= n_L and arch not in _DENSE:
        raise SpecError(label, f.path(_DENSE_KEY.get(arch, "first_k_dense_replace")),
                        f"fewer dense layers than num_hidden_layers ({n_L}), got {kw['n_Ld']}")
    if kw["n_Ld"] and not kw["f_d"]:
        raise SpecError(label, f.path("intermediate_size"), "a dense FFN size, since there are dense layers")

    base, base_note = _base_dtype(top, f)
    kw["precision"], quant = _precision(top, f, arch, kw, base)
    kw["kv_precision"] = "bf16"
    if arch == "deepseek_v4":
        if f.text("expert_dtype", required=False, default="") == "fp4":
            kw["precision"]["routed_experts"] = "mxfp4"  # FP4 E2M1 with a UE8M0 scale per 32
            quant = quant.replace("routed_experts fp8", "routed_experts mxfp4")
        kw["kv_precision"] = "fp8"  # vLLM: "DeepseekV4 only supports fp8 kv-cache format for now"
    shape = kw["attention"].upper() + (f", sparse top-{kw['sparse_top_k']}" if kw.get("sparse_top_k")
                                                  else "")
    if arch == "nemotron_h":
        shape += f", blocks: {kw['linear_layers']} Mamba-2, {kw['attention_layers']} attention, {n_L} MoE"
        shape += ", plain (squared-ReLU) experts" if kw["ffn_matrices"] == 2 else ""
    elif kw.get("linear_layers"):
        shape += f", {kw['linear_layers']} of {n_L} layers {_LINEAR_NAMES[kw['linear_kind']]}"
    if kw.get("latent_dim"):
        shape += f", latent MoE {kw['latent_dim']}"
    if kw.get("compressed_layers"):
        shape += (f", KV compressed {kw['sparse_compress']}x on the sparse layers and "
                  f"{kw['compress_ratio']}x on {kw['compressed_layers']} more, window {kw['sliding_window']}")
    shape += (f", dense FFN {kw['f_d']}" if arch in _DENSE
                                                  else f", {kw['E']} experts top-{kw['k']}")
    if kw["E_s"]:
        shape += f" + {kw['E_s']} shared"
    kw["description"] = f"{name} ({arch}, {shape}; weights {quant}{base_note}), from a HF config.json"
    kw.pop("_moe_ids", None)
    return Model(**kw, path=label)


def _key(f: Fields, *names: str) -> str:
    """The first of ``names`` present in the mapping (the first one if none is, for the error)."""
    for n in names:
        if n in f.doc:
            return n
    return names[0]


def _model_type(top: Fields, f: Fields) -> str:
    for fields in (f, top):
        if "model_type" in fields.doc:
            mt = fields.text("model_type")
            mt = _ALIASES.get(mt, mt)
            if mt in MODEL_TYPES:
                return mt
            if fields is top and f is not top and "model_type" not in f.doc:
                continue  # a wrapper (e.g. a vision-language config): judge by text_config's fields
            raise SpecError(top.label, fields.path("model_type"),
                            f"one of {', '.join(MODEL_TYPES)}; got {mt!r}")
    for fields in (f, top):
        archs = fields.doc.get("architectures")
        if isinstance(archs, list) and archs:
            for a in archs:
                if isinstance(a, str) and a in ARCH_CLASSES:
                    return ARCH_CLASSES[a]
            raise SpecError(top.label, fields.path("architectures"),
                            f"one of {', '.join(ARCH_CLASSES)} (or a model_type among "
                            f"{', '.join(MODEL_TYPES)}); got {archs!r}")
    raise SpecError(top.label, f.path("model_type"),
                    f"one of {', '.join(MODEL_TYPES)} (the field is missing)")


def _deepseek(f: Fields, kw: dict[str, Any]) -> None:
    """DeepSeek-V2/V3 and Kimi K2: MLA attention, first_k_dense_replace dense layers, then MoE."""
    n_L = kw["n_L"]
    kw["attention"] = "mla"
    kw["r_q"] = f.integer("q_lora_rank", required=False, default=0, minimum=0)
    kw["r_kv"] = f.integer("kv_lora_rank")
    kw["d_n"] = f.integer("qk_nope_head_dim")
    kw["d_r"] = f.integer("qk_rope_head_dim")
    kw["d_v"] = f.integer("v_head_dim")
    kw["E"] = f.integer("n_routed_experts")
    kw["k"] = f.integer("num_experts_per_tok")
    kw["E_s"] = f.integer("n_shared_experts", required=False, default=0, minimum=0)
    kw["f_e"] = f.integer("moe_intermediate_size")
    kw["f_d"] = f.integer("intermediate_size", minimum=0)
    first_dense = f.integer("first_k_dense_replace", minimum=0)
    freq = f.integer("moe_layer_freq", required=False, default=1)
    if freq != 1:
        raise SpecError(f.label, f.path("moe_layer_freq"),
                        f"1 (every layer after first_k_dense_replace is MoE), got {freq}")
    kw["n_Ld"] = min(first_dense, n_L)
    _routing_groups(f, kw)
    kw["mtp_layers"] = f.integer("num_nextn_predict_layers", required=False, default=0, minimum=0)
    if kw["mtp_layers"] and kw["architecture"] != "glm_moe_dsa":
        # the MTP module of this architecture, as measured on DeepSeek-R1's (the bundled spec's
        # figures): a checkpoint of its own may accept more or less, so the range is declared wide
        kw.update(spec_kind="mtp", spec_tokens=dict(MTP_TOKENS_PER_STEP), spec_range={1: (1.6, 1.95)},
                  spec_source=MTP_SOURCE)


#: Bytes per token and layer of DeepSeek sparse attention's indexer key cache: the key's
#: ``index_head_dim`` elements in FP8 and one FP32 scale per 128 of them (DeepSeek-V3.2-Exp's
#: reference ``kernel.act_quant`` with block 128, as the serving stacks store it: 128 + 4 = 132 B).
INDEXER_SCALE_BLOCK = 128


def _sparse_indexer(f: Fields, kw: dict[str, Any]) -> None:
    """DeepSeek sparse attention (DeepSeek-V3.2, GLM-5): every layer's MLA reads the ``index_topk``
    tokens an indexer of ``index_n_heads`` heads of ``index_head_dim`` picks; the indexer's keys are
    cached beside the latent KV (FP8 with a scale per 128 elements)."""
    kw["sparse_top_k"] = f.integer("index_topk")
    kw["indexer_heads"] = f.integer("index_n_heads")
    kw["indexer_head_dim"] = dim = f.integer("index_head_dim")
    kw["indexer_key_bytes"] = float(dim + 4 * -(-dim // INDEXER_SCALE_BLOCK))
    kw["sparse_layers"] = kw["n_L"]


def _gated_deltanet(f: Fields, kw: dict[str, Any]) -> None:
    """Qwen3-Next and Qwen3.5: ``layer_types`` (else every ``full_attention_interval``-th layer full)
    says which layers are full attention (with a sigmoid output gate: q_proj twice as wide) and
    which gated DeltaNet: ``linear_num_value_heads`` value heads and ``linear_num_key_heads`` key
    heads of ``linear_value_head_dim`` / ``linear_key_head_dim``, a short convolution of
    ``linear_conv_kernel_dim`` taps.  The MoE's shared expert is one MLP of
    ``shared_expert_intermediate_size`` (its scalar gate, d weights, too small to count)."""
    n_L = kw["n_L"]
    if f.has("layer_types"):
        linear = _layers_of_type(f, n_L, "linear_attention")
    else:
        every = f.integer("full_attention_interval", required=False, default=4)
        linear = sum(1 for i in range(n_L) if (i + 1) % every != 0)
    if linear >= n_L:
        raise SpecError(f.label, f.path("layer_types"), "at least one full_attention layer")
    kw.update(linear_kind="gated_deltanet", linear_layers=linear,
              linear_heads=f.integer("linear_num_value_heads"),
              linear_key_heads=f.integer("linear_num_key_heads"),
              linear_key_dim=f.integer("linear_key_head_dim"),
              linear_value_dim=f.integer("linear_value_head_dim"),
              linear_conv_kernel=f.integer("linear_conv_kernel_dim"))
    # Qwen3-Next's attention is always gated; Qwen3.5 says so (attn_output_gate)
    kw["output_gate"] = f.boolean("attn_output_gate", default=True)
    kw["E_s"] = _shared_experts(f, kw, "shared_expert_intermediate_size")
    kw["mtp_layers"] = f.integer(_key(f, "mtp_num_hidden_layers", "num_nextn_predict_layers"),
                                 required=False, default=0, minimum=0)


def _shared_experts(f: Fields, kw: dict[str, Any], width_key: str, count_key: str | None = None) -> int:
    """Shared experts as the planner counts them: the shared MLP's width (``width_key``, times
    ``count_key`` of them where given) in routed experts' widths ``f_e``, which it must be a
    multiple of."""
    shared = f.integer(width_key, required=False, default=0, minimum=0)
    if count_key:
        shared *= f.integer(count_key, required=False, default=1, minimum=0)
    if shared % kw["f_e"]:
        raise SpecError(f.label, f.path(width_key), f"a multiple of the routed experts' width ({kw['f_e']}), "
                        f"got {shared}")
    return shared // kw["f_e"]


_LINEAR_NAMES = {"gated_deltanet": "gated DeltaNet", "kda": "KDA", "mamba2": "Mamba-2"}


def _kimi_linear(f: Fields, kw: dict[str, Any]) -> None:
    """Kimi Linear and Kimi K3 (``kimi_linear``, K3 under the ``text_config`` of a ``kimi_k3``
    wrapper): ``linear_attn_config`` names the KDA layers (``kda_layers``) and the MLA layers
    (``full_attn_layers``, 1-based), KDA with ``num_heads`` heads of ``head_dim`` for keys and values
    alike, a ``short_conv_kernel_size`` convolution, and an output gate of full rank
    (``use_full_rank_gate``) or of rank ``head_dim``; MLA with an output gate where
    ``mla_use_output_gate``; MoE of ``num_experts`` (``num_experts_per_token`` per token) and
    ``num_shared_experts`` shared experts, after ``first_k_dense_replace`` dense layers; the routed
    experts in a latent of ``routed_expert_hidden_size`` where it is narrower than the model (K3's
    LatentMoE).  The vision tower of K3 is not part of the text model.  Its attention-residual
    vectors (AttnRes: 4 d per layer) are too small to count."""
    n_L = kw["n_L"]
    kw["attention"] = "mla"
    kw["r_q"] = f.integer("q_lora_rank", required=False, default=0, minimum=0) or 0
    kw["r_kv"] = f.integer("kv_lora_rank")
    kw["d_n"] = f.integer("qk_nope_head_dim")
    kw["d_r"] = f.integer("qk_rope_head_dim")
    kw["d_v"] = f.integer("v_head_dim")
    kw["output_gate"] = f.boolean("mla_use_output_gate", default=False)
    kw["E"] = f.integer("num_experts")
    kw["k"] = f.integer("num_experts_per_token")
    kw["E_s"] = f.integer("num_shared_experts", required=False, default=0, minimum=0)
    kw["f_e"] = f.integer("moe_intermediate_size")
    freq = f.integer("moe_layer_freq", required=False, default=1)
    if freq != 1:
        raise SpecError(f.label, f.path("moe_layer_freq"),
                        f"1 (every layer after first_k_dense_replace is MoE), got {freq}")
    kw["n_Ld"] = min(f.integer("first_k_dense_replace", required=False, default=0, minimum=0), n_L)
    kw["f_d"] = f.integer("intermediate_size") if kw["n_Ld"] else 0
    latent = f.integer("routed_expert_hidden_size", required=False, default=0, minimum=0)
    kw["latent_dim"] = latent if latent and latent != kw["d"] else 0
    groups = f.integer("num_expert_group", required=False, default=1)
    if groups > 1:
        kw["routing_groups"] = groups
        kw["max_groups"] = f.integer("topk_group", required=False, default=groups)
    kw["mtp_layers"] = f.integer("num_nextn_predict_layers", required=False, default=0, minimum=0)
    la = f.sub("linear_attn_config")
    kda, full = la.raw("kda_layers"), la.raw("full_attn_layers")
    for key, ids in (("kda_layers", kda), ("full_attn_layers", full)):
        if not isinstance(ids, list) or not all(type(i) is int and 1 <= i <= n_L for i in ids):
            raise SpecError(f.label, la.path(key), f"a list of layer numbers from 1 to {n_L}, got {ids!r}")
    if sorted(kda + full) != list(range(1, n_L + 1)):
        raise SpecError(f.label, la.path("full_attn_layers"),
                        f"with kda_layers, every layer 1 to {n_L} once (got {len(kda)} + {len(full)} layers)")
    if not full:
        raise SpecError(f.label, la.path("full_attn_layers"), "at least one MLA layer")
    heads, dim = la.integer("num_heads"), la.integer("head_dim")
    kw.update(linear_kind="kda", linear_layers=len(kda), linear_heads=heads, linear_key_heads=heads,
              linear_key_dim=dim, linear_value_dim=dim,
              linear_conv_kernel=la.integer("short_conv_kernel_size"),
              linear_gate_rank=0 if la.boolean("use_full_rank_gate", default=False) else dim)


def _deepseek_v4(f: Fields, kw: dict[str, Any]) -> None:
    """DeepSeek-V4 (Pro, Flash): MLA-like attention with one KV head of ``head_dim`` (RoPE on its last
    ``qk_rope_head_dim``) read as both key and value, queries from a ``q_lora_rank`` low rank, a
    grouped low-rank output (``o_groups`` groups of rank ``o_lora_rank``) and ``hc_mult``
    hyper-connection streams.  ``compress_ratios`` (one per layer, then the MTP layers') sets each
    layer's KV: 4, rows of 4 tokens a lightning indexer picks the top ``index_topk`` of
    (``index_n_heads`` heads of ``index_head_dim``); a larger ratio, rows of that many tokens all
    attended; 0, the window alone; every layer also keeps its last ``sliding_window`` raw tokens.
    Every layer is MoE (``num_hash_layers`` route by token id: the same cost); the routed experts in
    FP4 where ``expert_dtype`` says so (MXFP4: vLLM's DeepseekV4FP8Config).  Left out: the
    compressors' bounded FP32 states and the hyper-connections' residual traffic."""
    n_L = kw["n_L"]
    if f.integer("num_key_value_heads", required=False, default=1) != 1:
        raise SpecError(f.label, f.path("num_key_value_heads"), "1 (one shared KV head)")
    head, rope = f.integer("head_dim"), f.integer("qk_rope_head_dim")
    kw.update(attention="mla", r_q=f.integer("q_lora_rank"), r_kv=head - rope, d_r=rope, d_n=head - rope,
              d_v=head, kv_shared=True, o_groups=f.integer("o_groups", required=False, default=0, minimum=0),
              o_lora_rank=f.integer("o_lora_rank", required=False, default=0, minimum=0),
              hc_mult=f.integer("hc_mult", required=False, default=0, minimum=0))
    kw["E"] = f.integer("n_routed_experts")
    kw["k"] = f.integer("num_experts_per_tok")
    kw["E_s"] = f.integer("n_shared_experts", required=False, default=0, minimum=0)
    kw["f_e"] = f.integer("moe_intermediate_size")
    kw["n_Ld"], kw["f_d"] = 0, 0
    kw["mtp_layers"] = f.integer("num_nextn_predict_layers", required=False, default=0, minimum=0)
    ratios = f.raw("compress_ratios")
    if (not isinstance(ratios, list) or len(ratios) < n_L
            or not all(type(r) is int and r >= 0 for r in ratios)):
        raise SpecError(f.label, f.path("compress_ratios"),
                        f"a list of at least {n_L} ratios (0: window only)")
    main = ratios[:n_L]
    other = sorted({r for r in main if r > 4})
    if len(other) > 1 or any(r in (1, 2, 3) for r in main):
        raise SpecError(f.label, f.path("compress_ratios"),
                        f"0, 4 (sparse) and one larger ratio, got {sorted(set(main))}")
    window = f.integer("sliding_window")
    kw.update(sliding_window=window, sliding_layers=main.count(0), compressed_window=True,
              sparse_compress=4, sparse_layers=main.count(4),
              compressed_layers=sum(1 for r in main if r > 4), compress_ratio=other[0] if other else 1)
    if kw["sparse_layers"]:
        kw["sparse_top_k"] = f.integer("index_topk")
        kw["indexer_heads"] = f.integer("index_n_heads")
        kw["indexer_head_dim"] = dim = f.integer("index_head_dim")
        kw["indexer_key_bytes"] = float(dim + 4 * -(-dim // INDEXER_SCALE_BLOCK))


_BLOCK_KINDS = {"mamba": "M", "moe": "E", "attention": "*", "mlp": "-"}


def _nemotron_blocks(f: Fields) -> str:
    """Nemotron-H's blocks as pattern letters (M Mamba-2, E MoE, * attention, - MLP), from
    ``hybrid_override_pattern`` or ``layers_block_type`` (Nemotron-3 Ultra)."""
    if f.has("hybrid_override_pattern"):
        pattern = f.text("hybrid_override_pattern")
    else:
        kinds = f.raw("layers_block_type")
        if not isinstance(kinds, list) or any(not isinstance(k, str) or k not in _BLOCK_KINDS for k in kinds):
            raise SpecError(f.label, f.path("layers_block_type"),
                            f"a list of block kinds ({', '.join(_BLOCK_KINDS)})")
        pattern = "".join(_BLOCK_KINDS[k] for k in kinds)
    if not pattern or set(pattern) - set("ME*-"):
        raise SpecError(f.label, f.path("hybrid_override_pattern"),
                        f"a string of block letters M, E, * and -, got {pattern!r}")
    if "-" in pattern:
        raise SpecError(f.label, f.path("hybrid_override_pattern"),
                        "no '-' (dense MLP) blocks beside MoE blocks (not modelled)")
    if not pattern.count("E") or not pattern.count("*"):
        raise SpecError(f.label, f.path("hybrid_override_pattern"),
                        "at least one E (MoE) and one * (attention) block")
    return pattern


def _nemotron_h(f: Fields, kw: dict[str, Any]) -> None:
    """Nemotron-H (Nemotron-3 Nano, Super, Ultra): a stack of blocks, each one mixer or one FFN: Mamba-2
    (M), MoE (E) or GQA attention (*).  The planner's layers are the MoE blocks, with the attention
    and Mamba-2 blocks counted per layer (``attention_layers``, ``linear_attention.layers``).  Mamba-2:
    ``mamba_num_heads`` heads of ``mamba_head_dim``, ``n_groups`` groups of B and C of
    ``ssm_state_size``, a ``conv_kernel`` convolution with bias, the state in
    ``mamba_ssm_cache_dtype``.  The experts are plain (up, down: ``mlp_hidden_act`` relu2), routed
    ones of ``moe_intermediate_size`` in a latent of ``moe_latent_size`` where given (Super, Ultra),
    and ``n_shared_experts`` of ``moe_shared_expert_intermediate_size`` on the hidden state.  Each
    block has one norm (here two per layer: a few d more or less)."""
    pattern = _nemotron_blocks(f)
    kw["attention"] = "gqa"
    kw["h_kv"] = f.integer("num_key_value_heads")
    kw["d_head"] = f.integer("head_dim")
    kw["qkv_bias"] = f.boolean("attention_bias", default=False)
    kw["E"] = f.integer("n_routed_experts")
    kw["k"] = f.integer("num_experts_per_tok")
    kw["f_e"] = f.integer("moe_intermediate_size")
    kw["n_Ld"], kw["f_d"] = 0, 0
    act = f.text("mlp_hidden_act", required=False, default="relu2")
    kw["ffn_matrices"] = 2 if act == "relu2" else 3
    kw["E_s"] = _shared_experts(f, kw, "moe_shared_expert_intermediate_size", "n_shared_experts")
    latent = f.integer("moe_latent_size", required=False, default=0, minimum=0)
    kw["latent_dim"] = latent if latent and latent != kw["d"] else 0
    _routing_groups(f, kw)
    kw["mtp_layers"] = f.integer("num_nextn_predict_layers", required=False, default=0, minimum=0)
    state = {"float32": 4.0, "bfloat16": 2.0, "float16": 2.0}
    dtype = f.text("mamba_ssm_cache_dtype", required=False, default="float32", choices=state)
    kw.update(linear_kind="mamba2", linear_layers=pattern.count("M"), attention_layers=pattern.count("*"),
              linear_heads=f.integer("mamba_num_heads"), linear_key_heads=f.integer("n_groups"),
              linear_key_dim=f.integer("ssm_state_size"), linear_value_dim=f.integer("mamba_head_dim"),
              linear_conv_kernel=f.integer("conv_kernel"),
              linear_chunk=f.integer("chunk_size", required=False, default=128),
              linear_state_bytes=state[dtype])


def _routing_groups(f: Fields, kw: dict[str, Any]) -> None:
    """Node-limited routing (DeepSeek-V3 style ``n_group`` / ``topk_group``), where ``n_group`` > 1."""
    n_group = f.integer("n_group", required=False, default=1)
    topk_group = f.integer("topk_group", required=False, default=n_group)
    if n_group > 1:
        if topk_group > n_group:
            raise SpecError(f.label, f.path("topk_group"), f"at most n_group ({n_group}), got {topk_group}")
        kw["routing_groups"], kw["max_groups"] = n_group, topk_group


#: Tokens per step of a DeepSeek-V3-architecture MTP module by draft tokens, as measured on
#: DeepSeek-R1 (TensorRT-LLM tech blog 1, "Pushing Latency Boundaries: Optimizing DeepSeek-R1
#: Performance on NVIDIA B200 GPUs", table of autoregressive MTP layers; strict acceptance).
MTP_TOKENS_PER_STEP = {1: 1.92, 2: 2.58, 3: 2.82}
MTP_SOURCE = ("the architecture's MTP module as measured on DeepSeek-R1 (TensorRT-LLM tech blog 1, B200, "
              "1.92 / 2.58 / 2.82 tokens per step at 1 / 2 / 3 drafts); declared range 1.6-1.95 at one "
              "draft for another checkpoint")


def _gqa(f: Fields, arch: str, kw: dict[str, Any]) -> None:
    """Grouped-query attention, then the family's FFN: a routed-only MoE (Qwen3-MoE, gpt-oss,
    Mixtral, MiniMax-M2, OLMoE, Phi-3.5-MoE, Granite MoE), routed + shared experts after leading
    dense layers (GLM-4.5, Hunyuan-A13B, ERNIE-4.5), or one dense FFN per layer (Llama, Qwen3)."""
    n_L, h = kw["n_L"], kw["h"]
    kw["attention"] = "gqa"
    kw["h_kv"] = f.integer("num_key_value_heads", required=False, default=h)
    if h % kw["h_kv"]:
        raise SpecError(f.label, f.path("num_key_value_heads"),
                        f"a divisor of num_attention_heads ({h}), got {kw['h_kv']}")
    head_key = _key(f, "head_dim", "attention_head_dim")  # Hunyuan's own files: attention_head_dim
    if f.has(head_key):
        kw["d_head"] = f.integer(head_key)
    else:
        if kw["d"] % h:
            raise SpecError(f.label, f.path("head_dim"),
                            f"a value (the field is missing and hidden_size {kw['d']} is not a multiple "
                            f"of num_attention_heads {h})")
        kw["d_head"] = kw["d"] // h
    if arch == "ernie4_5_moe":
        # ERNIE's one bias switch covers attention and FFN alike; the published checkpoints have none
        if f.boolean("use_bias", default=False):
            raise SpecError(f.label, f.path("use_bias"),
                            "false (biases on the FFN and experts are not modelled)")
        kw["qkv_bias"] = False
    else:
        kw["qkv_bias"] = f.boolean("attention_bias", default=arch == "gpt_oss")
    kw["E_s"], kw["n_Ld"], kw["f_d"] = 0, 0, 0
    if arch in _DENSE:
        # every layer's MLP is one dense FFN (gate, up, down); no router, no expert weights
        kw["n_Ld"], kw["f_d"] = n_L, f.integer("intermediate_size")
        kw["E"], kw["f_e"], kw["k"] = 1, 0, 1
        if f.boolean("mlp_bias", default=False):
            raise SpecError(f.label, f.path("mlp_bias"), "false (biases on the dense FFN are not modelled)")
    elif arch in _SHARED_EXPERT_FFN:
        _SHARED_EXPERT_FFN[arch](f, kw)
    else:
        _routed_only_ffn(f, arch, kw)
    kw["sliding_window"], kw["sliding_layers"] = _sliding(f, arch, n_L)


def _routed_only_ffn(f: Fields, arch: str, kw: dict[str, Any]) -> None:
    """Routed experts in every layer, no shared expert (Qwen3-MoE: possibly some dense layers).

    Mixtral, MiniMax-M2, gpt-oss, Phi-3.5-MoE and Granite MoE name the experts
    ``num_local_experts`` and their width ``intermediate_size``; Qwen3-MoE and OLMoE
    ``num_experts`` (OLMoE's width is ``intermediate_size``, Qwen3-MoE's ``moe_intermediate_size``).
    Phi-3.5-MoE's LayerNorm biases and LM-head bias and OLMoE's and Granite's norm vectors are
    too small to count; Granite's embedding, residual, attention and logit multipliers are scalars.
    """
    n_L = kw["n_L"]
    if arch in ("qwen3_moe", *_GATED_DELTANET):
        kw["E"] = f.integer("num_experts")
        kw["f_e"] = f.integer("moe_intermediate_size")
        step = f.integer("decoder_sparse_step", required=False, default=1)
        only = f.raw("mlp_only_layers", required=False, default=[])
        if not isinstance(only, list) or not all(type(i) is int for i in only):
            raise SpecError(f.label, f.path("mlp_only_layers"), f"a list of layer indices, got {only!r}")
        dense = [i for i in range(n_L) if i in only or (i + 1) % step != 0]
        kw["n_Ld"] = len(dense)  # the planner sums over layers: where the dense ones sit does not matter
        kw["f_d"] = f.integer("intermediate_size") if dense else 0
        if arch == "qwen3_moe" and f.has("shared_expert_intermediate_size"):
            raise SpecError(f.label, f.path("shared_expert_intermediate_size"),
                            "no shared expert (qwen3_moe has none; Qwen2-MoE is not supported)")
    elif arch == "olmoe":
        kw["E"] = f.integer("num_experts")
        kw["f_e"] = f.integer("intermediate_size")
    else:
        kw["E"] = f.integer("num_local_experts")
        kw["f_e"] = f.integer("intermediate_size")
        kw["expert_bias"] = arch == "gpt_oss"  # gpt-oss experts and router carry biases
        if arch == "minimax_m2":
            _minimax_m2(f, n_L)
    kw["k"] = f.integer(_key(f, "num_experts_per_tok", "experts_per_token"))


def _glm4_moe(f: Fields, kw: dict[str, Any]) -> None:
    """GLM-4.5 / 4.6 / 4.7: DeepSeek-V3's MoE layout (``first_k_dense_replace`` dense layers, then
    ``n_routed_experts`` routed + ``n_shared_experts`` shared experts of ``moe_intermediate_size``;
    an MTP layer per ``num_nextn_predict_layers``) under grouped-query attention with q/k/v biases.
    Partial RoPE changes no weight; the QK-norm and routing-bias vectors are too small to count."""
    kw["E"] = f.integer("n_routed_experts")
    kw["k"] = f.integer("num_experts_per_tok")
    kw["E_s"] = f.integer("n_shared_experts", required=False, default=0, minimum=0)
    kw["f_e"] = f.integer("moe_intermediate_size")
    kw["n_Ld"] = min(f.integer("first_k_dense_replace", required=False, default=0, minimum=0), kw["n_L"])
    kw["f_d"] = f.integer("intermediate_size") if kw["n_Ld"] else 0
    _routing_groups(f, kw)
    # the checkpoints hold the MTP layer; with no published acceptance for it, speculation stays
    # the user's to give (--mtp N with an acceptance)
    kw["mtp_layers"] = f.integer("num_nextn_predict_layers", required=False, default=0, minimum=0)


def _ernie4_5_moe(f: Fields, kw: dict[str, Any]) -> None:
    """ERNIE-4.5 MoE: layers ``moe_layer_start_index`` to ``moe_layer_end_index`` hold
    ``moe_num_experts`` routed experts (``moe_k`` per token) and ``moe_num_shared_experts`` shared
    ones (one MLP of that many times ``moe_intermediate_size``), in every layer i of that range with
    (i + 1) % ``moe_layer_interval`` == 0; every other layer is a dense FFN of ``intermediate_size``.
    The planner prices n_Ld dense and n_L - n_Ld MoE layers wherever they sit, so dense layers
    between or after the MoE ones are counted, not refused.  The text + vision expert pools of
    ERNIE-4.5-VL (lists of expert counts) are refused."""
    n_L = kw["n_L"]
    experts = f.raw("moe_num_experts")
    if isinstance(experts, list):  # ERNIE-4.5-VL: one pool of text and one of vision experts
        raise SpecError(f.label, f.path("moe_num_experts"),
                        f"one integer (one expert pool; the text + vision pools of ERNIE-4.5-VL are not "
                        f"modelled), got {experts!r}")
    kw["E"] = f.integer("moe_num_experts")
    kw["k"] = f.integer("moe_k")
    kw["E_s"] = f.integer("moe_num_shared_experts", required=False, default=0, minimum=0)
    kw["f_e"] = f.integer("moe_intermediate_size")
    interval = f.integer("moe_layer_interval", required=False, default=1)
    start = f.integer("moe_layer_start_index", minimum=0)
    end = f.raw("moe_layer_end_index", required=False, default=-1)
    if end is None or end == -1:
        end = n_L - 1
    if isinstance(end, bool) or not isinstance(end, int) or end < start:
        raise SpecError(f.label, f.path("moe_layer_end_index"),
                        f"a layer index from moe_layer_start_index ({start}) on, -1 or null (the last "
                        f"layer), got {end!r}")
    # as ERNIE's own modelling code and transformers' decide it: (i + 1) % interval == 0, not
    # (i - start) % interval (the two agree for interval 1, and for start 1 with interval 2)
    moe = [i for i in range(start, min(end, n_L - 1) + 1) if (i + 1) % interval == 0]
    kw["n_Ld"] = n_L - len(moe)  # the planner sums over layers: where the dense ones sit does not matter
    kw["_moe_ids"] = moe
    kw["f_d"] = f.integer("intermediate_size") if kw["n_Ld"] else 0


def _hunyuan_v1_moe(f: Fields, kw: dict[str, Any]) -> None:
    """Hunyuan-A13B: ``num_experts`` routed experts (``moe_topk`` per token) of
    ``moe_intermediate_size`` in every layer, and a shared MLP of ``intermediate_size`` x
    ``num_shared_expert`` (``use_mixed_mlp_moe``); the three may be given per layer (equal values).

    Cross-layer attention (``use_cla``: one K/V projection and cache shared by ``cla_share_factor``
    layers) is refused: the model gives every layer its own KV heads, so neither the cache nor the
    attention reads would be priced as stated.  ``moe_layer_num_skipped`` > 0 (dense leading
    layers) is refused too; no published checkpoint sets it.  The QK-norm vectors are too small to
    count."""
    n_L = kw["n_L"]
    if f.boolean("use_cla", default=False):
        share = f.raw("cla_share_factor", required=False, default="?")
        raise SpecError(f.label, f.path("use_cla"),
                        f"false (cross-layer KV sharing, one KV cache per {share} layers, is not modelled), "
                        "got true")
    skipped = f.integer("moe_layer_num_skipped", required=False, default=0, minimum=0)
    if skipped:
        raise SpecError(f.label, f.path("moe_layer_num_skipped"),
                        f"0 (MoE in every layer; dense leading layers of Hunyuan are not modelled), "
                        f"got {skipped}")
    kw["E"] = _per_layer(f, "num_experts", n_L)
    kw["k"] = _per_layer(f, "moe_topk", n_L)
    width = f.integer("intermediate_size")
    kw["f_e"] = _per_layer(f, "moe_intermediate_size", n_L, default=width)
    shared = _per_layer(f, "num_shared_expert", n_L, default=1, minimum=0) * width
    if not f.boolean("use_mixed_mlp_moe", default=True):
        shared = 0
    if shared % kw["f_e"]:
        raise SpecError(f.label, f.path("num_shared_expert"),
                        f"a shared MLP whose width (intermediate_size x num_shared_expert = {shared}) is a "
                        f"multiple of the expert width ({kw['f_e']})")
    kw["E_s"] = shared // kw["f_e"]


def _llama4(f: Fields, kw: dict[str, Any]) -> None:
    """Llama 4 (Scout, Maverick; the text model, under ``text_config`` of a
    ``Llama4ForConditionalGeneration`` config): MoE layers hold ``num_local_experts`` routed experts
    (``num_experts_per_tok`` per token) and one shared expert, all of ``intermediate_size``; the
    other layers a dense FFN of ``intermediate_size_mlp``.  The MoE layers are the ``moe_layers``
    list where given, else every ``interleave_moe_layer_step``-th layer (layers step-1, 2 step-1,
    ...: Scout's step 1 makes every layer MoE, Maverick's 2 every second one), as transformers
    derives them.  The vision tower and projector are not part of the text model and are not
    counted; the QK-norm (no weights) and the router's scale are nothing to count."""
    n_L = kw["n_L"]
    kw["E"] = f.integer("num_local_experts")
    kw["k"] = f.integer("num_experts_per_tok")
    kw["f_e"] = f.integer("intermediate_size")
    kw["E_s"] = 1  # the shared expert: gate, up, down of the routed experts' width
    if f.has("moe_layers"):
        ids = f.raw("moe_layers")
        if (not isinstance(ids, list) or not all(type(i) is int and 0 <= i < n_L for i in ids)
                or len(set(ids)) != len(ids)):
            raise SpecError(f.label, f.path("moe_layers"),
                            f"a list of distinct layer indices from 0 to {n_L - 1}, got {ids!r}")
    else:
        step = f.integer("interleave_moe_layer_step", required=False, default=1)
        ids = list(range(step - 1, n_L, step))
    kw["n_Ld"] = n_L - len(ids)  # the planner sums over layers: where the dense ones sit does not matter
    kw["_moe_ids"] = sorted(ids)
    kw["f_d"] = f.integer("intermediate_size_mlp") if kw["n_Ld"] else 0


def _layers_of_type(f: Fields, n_L: int, kind: str) -> int:
    """How many entries of the config's ``layer_types`` (one per layer) are ``kind``."""
    types = f.raw("layer_types")
    if not isinstance(types, list) or len(types) != n_L:
        raise SpecError(f.label, f.path("layer_types"), f"a list of {n_L} layer types (one per layer)")
    return sum(1 for t in types if t == kind)


def _llama4_chunked(f: Fields, n_L: int) -> tuple[int, int]:
    """(window, layers) for Llama 4's chunked attention: ``layer_types`` where given, else
    ``no_rope_layers`` (1: a RoPE layer, which attends within its chunk; 0: a NoPE layer, full
    attention), else one NoPE layer in every ``no_rope_layer_interval`` (4), as transformers derives
    them.

    Approximation: a chunked layer is priced as a sliding-window layer of window
    ``attention_chunk_size`` C.  A query in a chunk attends the S mod C tokens of its own chunk so
    far (C/2 on average over a long sequence), where a window attends min(S, C); and the KV cache
    holds at most one chunk per such layer.  The window is an upper bound on both the attention
    reads and the cache of these layers."""
    chunk = f.integer("attention_chunk_size", required=False, default=0, minimum=0)
    if not chunk:
        return 0, 0
    if f.has("layer_types"):
        return chunk, _layers_of_type(f, n_L, "chunked_attention")
    flags = f.raw("no_rope_layers", required=False, default=[])
    if flags:  # an empty list means "derive it", as in transformers
        if not isinstance(flags, list) or len(flags) != n_L or any(x not in (0, 1) for x in flags):
            raise SpecError(f.label, f.path("no_rope_layers"),
                            f"a list of {n_L} flags, 1 (RoPE, chunked attention) or 0 (NoPE, full attention)")
        return chunk, sum(flags)
    every = f.integer("no_rope_layer_interval", required=False, default=4)
    return chunk, sum(1 for i in range(n_L) if (i + 1) % every != 0)


#: families with shared experts or leading dense layers, each read by its own function
def _flags(f: Fields, key: str, n_L: int) -> list[int]:
    """A per-layer list of 0/1 flags (``moe_layer_freq``, ``sparse_attention_freq``)."""
    flags = f.raw(key)
    if not isinstance(flags, list) or len(flags) != n_L or any(x not in (0, 1) for x in flags):
        raise SpecError(f.label, f.path(key), f"a list of {n_L} flags, 0 or 1, one per layer")
    return flags


#: Bytes per element of MiniMax-M3's index-key cache (vLLM's MiniMaxM3IndexerCache: BF16 by default)
MINIMAX_M3_INDEX_BYTES = 2


def _minimax_m3(f: Fields, kw: dict[str, Any]) -> None:
    """MiniMax-M3 (text model of a ``minimax_m3_vl`` checkpoint): dense FFN layers of
    ``dense_intermediate_size`` where ``moe_layer_freq`` is 0, else ``num_local_experts`` routed
    experts (``num_experts_per_tok``) of ``intermediate_size`` and ``n_shared_experts`` of
    ``shared_intermediate_size``; block-sparse attention (``sparse_attention_config``) on the layers
    ``sparse_attention_freq`` marks: a query reads ``sparse_topk_blocks`` blocks of
    ``sparse_block_size`` tokens, picked by an indexer of ``sparse_num_index_heads`` query heads of
    ``sparse_index_dim`` against one index key per token (cached in BF16).  Planned as DeepSeek
    sparse attention with top-k = blocks x block size (the forced local block counts inside it).
    The published checkpoint holds no MTP weights (``num_mtp_modules`` is not read)."""
    n_L = kw["n_L"]
    moe = _flags(f, "moe_layer_freq", n_L)
    kw["E"] = f.integer("num_local_experts")
    kw["k"] = f.integer("num_experts_per_tok")
    kw["f_e"] = f.integer("intermediate_size")
    kw["n_Ld"] = n_L - sum(moe)
    kw["_moe_ids"] = [i for i, x in enumerate(moe) if x]
    kw["f_d"] = f.integer("dense_intermediate_size") if kw["n_Ld"] else 0
    kw["E_s"] = _shared_experts(f, kw, "shared_intermediate_size", "n_shared_experts")
    if f.boolean("attention_output_gate", default=False):
        kw["output_gate"] = True
    sa = f.sub("sparse_attention_config", required=False)
    if sa is not None and sa.boolean("use_sparse_attention", default=True):
        kw["sparse_layers"] = sum(_flags(sa, "sparse_attention_freq", n_L))
        kw["sparse_top_k"] = sa.integer("sparse_topk_blocks") * sa.integer("sparse_block_size")
        kw["indexer_heads"] = sa.integer("sparse_num_index_heads")
        kw["indexer_head_dim"] = dim = sa.integer("sparse_index_dim")
        kw["indexer_key_bytes"] = float(dim * MINIMAX_M3_INDEX_BYTES)


_SHARED_EXPERT_FFN = {"minimax_m3": _minimax_m3, "glm4_moe": _glm4_moe, "ernie4_5_moe": _ernie4_5_moe,
                      "hunyuan_v1_moe": _hunyuan_v1_moe, "llama4": _llama4}


def _per_layer(f: Fields, key: str, n_L: int, default: int | None = None, minimum: int = 1) -> int:
    """An integer given once, or once per layer (a list of ``n_L`` values, which must be equal)."""
    raw = f.raw(key, required=default is None, default=default)
    if isinstance(raw, list):
        if len(raw) != n_L or len(set(map(repr, raw))) != 1:
            got = f"{len(raw)} entries, values {sorted(set(map(repr, raw)))[:4]}"
            raise SpecError(f.label, f.path(key),
                            f"one integer, or a list of {n_L} equal ones (a value that varies by layer is "
                            f"not modelled), got {got}")
        raw = raw[0]
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < minimum:
        raise SpecError(f.label, f.path(key), f"an integer >= {minimum} (or a list of them), got {raw!r}")
    return raw


def _minimax_m2(f: Fields, n_L: int) -> None:
    """MiniMax-M2 keeps Mixtral's field names; reject the variants the planner cannot represent.

    ``attn_type_list`` marks each layer's attention (1: softmax, 0: the lightning/linear attention
    of MiniMax-Text-01 and M1); ``shared_intermediate_size`` > 0 would add a shared expert of its
    own width.  ``num_mtp_modules`` is not read: the published M2, M2.5 and M2.7 checkpoints hold
    no MTP weights.  Partial RoPE (``rotary_dim``) changes no weight; the QK-norm and routing-bias
    vectors (7,424 values per layer) are too small to count.
    """
    types = f.raw("attn_type_list", required=False, default=[1] * n_L)
    if not isinstance(types, list) or len(types) != n_L or any(t != 1 for t in types):
        got = (f"{len(types)} entries, values {sorted(set(map(repr, types)))}" if isinstance(types, list)
               else repr(types))
        raise SpecError(f.label, f.path("attn_type_list"),
                        f"a list of {n_L} ones (softmax attention in every layer; linear-attention "
                        f"layers are not modelled), got {got}")
    shared = f.integer("shared_intermediate_size", required=False, default=0, minimum=0)
    if shared:
        raise SpecError(f.label, f.path("shared_intermediate_size"),
                        f"0 (a shared expert of its own width is not modelled), got {shared}")


def _sliding(f: Fields, arch: str, n_L: int) -> tuple[int, int]:
    """(window in tokens, number of layers that use it)."""
    if arch == "llama4":
        return _llama4_chunked(f, n_L)
    if arch in _FULL_ATTENTION:
        return 0, 0  # e.g. LlamaForCausalLM attends to the full context (a sliding_window key is unused)
    window = f.integer("sliding_window", required=False, default=0, minimum=0)
    if arch in ("qwen3_moe", "qwen3") and not f.boolean("use_sliding_window", default=False):
        return 0, 0
    if not window:
        return 0, 0
    if f.has("layer_types"):
        return window, _layers_of_type(f, n_L, "sliding_attention")
    if arch == "gpt_oss":
        return window, (n_L + 1) // 2  # even layers (0, 2, ...) use the window
    if arch in ("qwen3_moe", "qwen3"):
        first = f.integer("max_window_layers", required=False, default=0, minimum=0)
        return window, max(0, n_L - first)  # layers >= max_window_layers slide
    return window, n_L  # mixtral, phimoe: every layer (Phi-3.5-MoE's window is its whole context)


def _base_dtype(top: Fields, f: Fields) -> tuple[str, str]:
    for fields in (f, top):
        for key in ("torch_dtype", "dtype"):
            if key in fields.doc and fields.doc[key] is not None:
                dt = fields.text(key)
                if dt not in _DTYPES:
                    raise SpecError(top.label, fields.path(key), f"one of {', '.join(_DTYPES)}; got {dt!r}")
                return _DTYPES[dt], (", float32 checkpoint planned as bf16" if dt == "float32" else "")
    return "bf16", ""


# ---- quantization -------------------------------------------------------------------------------

def _module_names(arch: str, kw: dict[str, Any]) -> dict[str, list[str]]:
    """Representative module names per tensor class, as the checkpoint spells them."""
    n_L, n_Ld = kw["n_L"], kw["n_Ld"]
    moe_layers = kw.get("_moe_ids", range(n_Ld, n_L))  # where a family reads them, the actual indices
    moe_set = set(moe_layers)
    dense_layers = [i for i in range(n_L) if i not in moe_set]
    layers, mlp = "model.layers", "mlp"
    if arch in _MLA:
        attn = (["q_a_proj", "q_b_proj"] if kw["r_q"] else ["q_proj"]) + ["kv_a_proj_with_mqa", "kv_b_proj",
                                                                          "o_proj"]
        routed = [f"mlp.experts.0.{p}" for p in _GATE_UP_DOWN]
        shared = [f"mlp.shared_experts.{p}" for p in _GATE_UP_DOWN] if kw["E_s"] else []
    else:
        attn = ["q_proj", "k_proj", "v_proj", "o_proj"]
        mlp_experts = [f"mlp.experts.0.{p}" for p in _GATE_UP_DOWN]
        w123 = [f"block_sparse_moe.experts.0.{w}" for w in ("w1", "w2", "w3")]
        routed = {
            "qwen3_moe": mlp_experts, "qwen3_next": mlp_experts, "qwen3_5_moe": mlp_experts,
            "olmoe": mlp_experts, "glm4_moe": mlp_experts,
            "ernie4_5_moe": mlp_experts, "hunyuan_v1_moe": mlp_experts,
            "mixtral": w123, "minimax_m2": w123, "minimax_m3": w123, "phimoe": w123,
            "granitemoe": ["block_sparse_moe.input_linear", "block_sparse_moe.output_linear"],
            "gpt_oss": ["mlp.experts.gate_up_proj", "mlp.experts.down_proj"],
            "llama4": ["feed_forward.experts.gate_up_proj", "feed_forward.experts.down_proj"],
            "kimi_linear": [f"block_sparse_moe.experts.0.{w}" for w in ("w1", "w2", "w3")],
            "nemotron_h": ["mixer.experts.0.up_proj", "mixer.experts.0.down_proj"],
        }.get(arch, [])  # dense families: no experts
        shared_mlp = {"hunyuan_v1_moe": "mlp.shared_mlp", "llama4": "feed_forward.shared_expert",
                      "qwen3_next": "mlp.shared_expert", "qwen3_5_moe": "mlp.shared_expert",
                      "kimi_linear": "block_sparse_moe.shared_experts"}.get(
            arch, "mlp.shared_experts")
        if arch == "llama4":  # the checkpoint's names: the text model is the wrapper's language_model
            layers, mlp = "language_model.model.layers", "feed_forward"
        shared = [f"{shared_mlp}.{p}" for p in _GATE_UP_DOWN] if kw["E_s"] else []
    names = {
        "attention": [f"{layers}.{i}.self_attn.{p}" for i in range(n_L) for p in attn],
        "routed_experts": [f"{layers}.{i}.{p}" for i in moe_layers for p in routed],
        "dense_ffn": [f"{layers}.{i}.{mlp}.{p}" for i in dense_layers for p in _GATE_UP_DOWN]
        + [f"{layers}.{i}.{p}" for i in moe_layers for p in shared],
        "embeddings": ["lm_head"],
    }
    return names


def _precision(top: Fields, f: Fields, arch: str, kw: dict[str, Any],
               base: str) -> tuple[dict[str, str], str]:
    """(tensor class -> storage format, a short description of the scheme)."""
    holder = f if isinstance(f.doc.get("quantization_config"), dict) else top
    q = holder.sub("quantization_config", required=False)
    prec = dict.fromkeys(TENSOR_CLASSES, base)
    if q is None:
        return prec, base
    method = q.text("quant_method", choices=("fp8", "compressed-tensors", "mxfp4", "modelopt"))
    names = _module_names(arch, kw)
    linear = ("attention", "dense_ffn", "routed_experts")
    if method == "fp8":
        fmt = q.text("fmt", required=False, default="e4m3")
        if fmt not in ("e4m3", "float8_e4m3fn"):  # DeepSeek writes the short name, MiniMax torch's
            raise SpecError(q.label, q.path("fmt"), f"e4m3 (the planner's fp8 format), got {fmt!r}")
        skip = _not_converted(q, "modules_to_not_convert")
        choose = {c: (lambda n: None if skip(n) else "fp8") for c in linear}
    elif method == "mxfp4":
        skip = _not_converted(q, "modules_to_not_convert")
        choose = {"routed_experts": lambda n: None if skip(n) else "mxfp4"}
    elif method == "modelopt":
        algo = q.text("quant_algo")
        fmt = _MODELOPT.get(algo.upper())
        if fmt is None:
            raise SpecError(q.label, q.path("quant_algo"),
                            f"one of {', '.join(_MODELOPT)} (a single format for all layers), got {algo!r}")
        skip = _not_converted(q, "ignore" if "ignore" in q.doc else "exclude_modules")
        choose = {c: (lambda n, fmt=fmt: None if skip(n) else fmt) for c in linear}
    else:
        choose = {c: _compressed_tensors(q) for c in ("attention", "dense_ffn", "routed_experts")}
    for cls, chooser in choose.items():
        if names[cls]:
            votes = Counter(chooser(n) for n in names[cls])
            fmt = votes.most_common(1)[0][0]  # a class has one format: the one most of its modules use
            prec[cls] = fmt or base
    summary = ", ".join(f"{c} {prec[c]}" for c in TENSOR_CLASSES if prec[c] != base)
    return prec, (f"{summary}, rest {base}" if summary else base)


def _not_converted(q: Fields, key: str) -> Any:
    """A predicate for an exclusion list (glob patterns or module-name prefixes)."""
    raw = q.raw(key, required=False, default=[])
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise SpecError(q.label, q.path(key), f"a list of module names, got {raw!r}")

    def skip(name: str) -> bool:
        return any(fnmatchcase(name, pat) or fnmatchcase(name, pat + ".*") for pat in raw)

    return skip


def _compressed_tensors(q: Fields) -> Any:
    """A chooser for a ``compressed-tensors`` block: module name -> format (None: not quantized)."""
    ignore = q.raw("ignore", required=False, default=[])
    if not isinstance(ignore, list) or not all(isinstance(x, str) for x in ignore):
        raise SpecError(q.label, q.path("ignore"),
                        f"a list of module names or 're:' patterns, got {ignore!r}")
    groups = q.sub("config_groups")
    schemes: list[tuple[str, list[str], str | None]] = []
    for gname in groups.doc:
        g = groups.sub(str(gname))
        targets = g.raw("targets")
        if not isinstance(targets, list) or not all(isinstance(x, str) for x in targets):
            raise SpecError(q.label, g.path("targets"), f"a list of module names or classes, got {targets!r}")
        schemes.append((str(gname), targets, _scheme_format(g.sub("weights"))))
    if not schemes:
        raise SpecError(q.label, groups.path("group_0"), "at least one quantization group")

    def match(name: str, pattern: str, field: str) -> bool:
        if pattern.startswith("re:"):
            try:
                return re.match(pattern[3:], name) is not None
            except re.error:
                raise SpecError(q.label, field, f"valid regular expressions, got {pattern!r}") from None
        return pattern == "Linear" or name == pattern  # every module the planner names is a Linear

    def choose(name: str) -> str | None:
        if any(match(name, pat, q.path("ignore")) for pat in ignore):
            return None
        for gname, targets, fmt in schemes:
            if any(match(name, t, groups.path(f"{gname}.targets")) for t in targets):
                return fmt
        return None

    return choose


def _scheme_format(w: Fields) -> str:
    """compressed-tensors weight scheme -> planner storage format."""
    bits = w.integer("num_bits")
    kind = w.text("type", required=False, default="int")
    strategy = w.text("strategy", required=False, default="tensor")
    group = w.integer("group_size", required=False, default=0, minimum=0)
    symmetric = w.boolean("symmetric", default=True)
    if kind == "float" and bits == 8:
        return "fp8"
    if kind == "int" and bits == 4 and strategy == "group" and group == 32 and symmetric:
        return "int4_g32"
    if kind == "float" and bits == 4 and group == 16:
        return "nvfp4"
    if kind == "float" and bits == 4 and group == 32:
        return "mxfp4"
    got = f"{kind} {bits}-bit, strategy {strategy}" + (f", group {group}" if group else "") + (
        "" if symmetric else ", asymmetric")
    raise SpecError(w.label, w.path("num_bits"),
                    "a weight scheme the planner models (int 4-bit symmetric group 32, float 4-bit group 16 "
                    f"or 32, float 8-bit); got {got}")
