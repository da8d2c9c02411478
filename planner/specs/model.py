"""Model specifications and the quantities derived from them (never typed in).

Parameter accounting (``physics.md`` section 1 notation):

* MLA attention per layer: ``d r_q + r_q h (d_n + d_r)`` (or ``d h (d_n + d_r)`` without a query
  low rank) + ``d (r_kv + d_r)`` + ``r_kv h (d_n + d_v)`` + ``h d_v d``, plus the RMSNorm weights of
  the low ranks.
* GQA attention per layer: ``d h d_head + 2 d h_kv d_head + h d_head d`` (+ biases).
* An expert (routed or shared) is ``3 d f_e`` weights (gate, up, down); a dense FFN ``3 d f_d``;
  the router ``d E``.
* ``total_params`` counts every weight of the main model, embeddings and LM head included, and
  excludes the MTP module (as DeepSeek's "671B" does); ``mtp_params`` is reported apart.
* ``active_params`` counts the weights a token multiplies: attention, dense FFN, ``k`` routed +
  ``E_s`` shared experts, router, LM head; it excludes the input embedding (a table lookup,
  not a matmul).  DeepSeek's "37B" includes both tables (36.7B); ours is 0.9B lower by design.
* A dense model (Llama, Qwen3 dense) has ``n_Ld = n_L``: every layer a dense FFN of ``f_d``, no
  routed or shared expert and no router.  It is stored with ``E = k = 1`` and ``f_e = 0`` (no
  expert weights), so the MoE terms of the step model vanish with ``n_L - n_Ld = 0``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.errors import SpecError, shown
from planner.specs.precision import TENSOR_CLASSES, get_precision, kv_bytes
from planner.specs.reading import Fields, read_yaml

ARCHITECTURES = ("deepseek_v3", "deepseek_v2", "deepseek_v32", "deepseek_v4", "glm_moe_dsa", "kimi_k2",
                 "qwen3_moe", "gpt_oss", "mixtral", "minimax_m2", "minimax_m3", "glm4_moe", "olmoe", "phimoe",
                 "granitemoe", "hunyuan_v1_moe", "ernie4_5_moe", "llama4", "qwen3_next", "qwen3_5_moe",
                 "kimi_linear", "nemotron_h", "llama", "qwen3")


@dataclass(frozen=True)
class Model:
    name: str
    description: str
    source: str
    architecture: str
    d: int                  #: hidden size
    n_L: int                #: layers
    n_Ld: int               #: dense-FFN layers (first)
    V: int                  #: vocabulary
    tie_embeddings: bool
    max_context: int
    attention: str          #: "mla" or "gqa"
    h: int                  #: query heads
    # MLA
    r_q: int = 0            #: query low rank (0: none)
    r_kv: int = 0
    d_n: int = 0
    d_r: int = 0
    d_v: int = 0
    # GQA
    h_kv: int = 0
    d_head: int = 0
    sliding_window: int = 0  #: tokens (0: none)
    sliding_layers: int = 0
    qkv_bias: bool = False
    output_gate: bool = False    #: a sigmoid gate on the attention output (GQA: q_proj twice as wide;
    #: MLA: a g_proj of h d_v x d beside o_proj)
    # sparse attention (DeepSeek sparse attention: an indexer picks the top-k tokens per query)
    sparse_top_k: int = 0        #: tokens a query reads (0: dense attention)
    sparse_layers: int = 0       #: attention layers that are sparse
    indexer_heads: int = 0
    indexer_head_dim: int = 0
    indexer_key_bytes: float = 0.0  #: indexer key-cache bytes per token per sparse layer
    # compressed KV (DeepSeek-V4): rows of several tokens, each layer keeping a raw window beside them
    sparse_compress: int = 1     #: tokens per compressed row of the sparse layers (1: none)
    compressed_layers: int = 0   #: layers that attend every compressed row of compress_ratio tokens
    compress_ratio: int = 1
    compressed_window: bool = False  #: compressed layers also attend the last sliding_window raw tokens
    # DeepSeek-V4's MLA variant: one KV head used as K and V (no kv_b), a grouped low-rank output
    kv_shared: bool = False
    o_groups: int = 0            #: output groups (0: one o_proj of h d_v x d)
    o_lora_rank: int = 0
    hc_mult: int = 0             #: hyper-connection streams (0: a plain residual)
    # linear-attention / state-space mixers (hybrids): one fixed-size state per sequence
    linear_kind: str = ""        #: "gated_deltanet", "kda" or "mamba2" ("": none)
    linear_layers: int = 0       #: mixer layers that are linear
    linear_heads: int = 0        #: value heads (Mamba-2: heads)
    linear_key_heads: int = 0    #: key heads (Mamba-2: groups of B and C)
    linear_key_dim: int = 0      #: key head size (Mamba-2: state size N)
    linear_value_dim: int = 0    #: value head size (Mamba-2: head size P)
    linear_conv_kernel: int = 0
    linear_chunk: int = 64       #: chunk of the chunked (prefill) form
    linear_state_bytes: float = 4.0  #: bytes per recurrent-state element (FP32 in the stacks)
    linear_gate_rank: int = 0    #: KDA's output gate: 0 full rank (d x h d_v), else the rank of g_a g_b
    latent_dim: int = 0          #: latent MoE: the routed experts' width (0: the model's d)
    ffn_matrices: int = 3        #: 3: gated FFNs and experts (gate, up, down); 2: plain (up, down)
    attention_layers: int = 0    #: softmax-attention layers (0: every layer; Nemotron-H counts blocks)
    # MoE
    E: int = 1              #: routed experts
    k: int = 1              #: routed experts per token
    E_s: int = 0            #: shared experts
    f_e: int = 0            #: expert intermediate size
    f_d: int = 0            #: dense FFN intermediate size
    max_groups: int = 0     #: node-limited routing: groups (nodes) per token; 0 = no limit
    routing_groups: int = 0
    expert_bias: bool = False
    mtp_layers: int = 0
    mtp_acceptance: float = 0.0   #: per-token acceptance rate of a draft (published)
    mtp_source: str = ""
    #: speculative decoding as published for this model (``speculation:`` block): ``mtp`` (its own
    #: MTP layers) or ``draft`` (a separate draft head), measured tokens per step by draft tokens,
    #: and a declared range at one draft length (or none)
    spec_kind: str = ""
    spec_tokens: dict[int, float] = field(default_factory=dict)
    spec_range: dict[int, tuple[float, float]] = field(default_factory=dict)
    spec_source: str = ""
    draft_layers: int = 0          #: draft head decoder layers
    draft_ffn: int = 0             #: draft head FFN intermediate size
    draft_fuse: int = 0            #: verifier hidden states fused by its input projection
    draft_own_head: bool = False   #: the draft head holds an LM head of its own
    draft_vocab: int = 0           #: rows of the LM head a draft pass multiplies (0: the model's V)
    precision: dict[str, str] = field(default_factory=dict)  #: tensor class -> format
    kv_precision: str = "bf16"
    path: str = field(default="", compare=False, repr=False)

    def check_length(self, tokens: float, name: str, what: str = "tokens") -> None:
        """SpecError unless ``tokens`` (a context, a prompt, a request's prompt + output) fits the
        model's context window (``max_context``); ``name`` is the input it came from."""
        if self.max_context and tokens > self.max_context:
            raise SpecError("<input>", name, f"at most the context window of {self.name}, "
                            f"{self.max_context:,} tokens; got {tokens:,.0f} {what}")

    # ---- parameter counts ---------------------------------------------------------------

    @property
    def n_moe(self) -> int:
        return self.n_L - self.n_Ld

    @property
    def is_dense(self) -> bool:
        """No MoE layer: every layer has a dense FFN (expert parallelism does not apply)."""
        return self.n_moe == 0

    @property
    def attn_params(self) -> int:
        """Attention weights per layer (W_attn)."""
        d, h = self.d, self.h
        if self.attention == "mla":
            dqk = self.d_n + self.d_r
            q = d * self.r_q + self.r_q + self.r_q * h * dqk if self.r_q else d * h * dqk
            if self.kv_shared:  # one head of r_kv + d_r read as both key and value, its norm
                kv = (d + 1) * (self.r_kv + self.d_r)
            else:
                kv = d * (self.r_kv + self.d_r) + self.r_kv + self.r_kv * h * (self.d_n + self.d_v)
            if self.o_groups:  # grouped low-rank output: wo_a h d_v x r_o (per group), wo_b g r_o x d
                out = h * self.d_v * self.o_lora_rank + self.o_groups * self.o_lora_rank * d
            else:
                out = h * self.d_v * d
            return q + kv + out + h * self.d_v * d * (1 if self.output_gate else 0) + self.hc_params
        p = d * h * self.d_head * (2 if self.output_gate else 1) + 2 * d * self.h_kv * self.d_head
        p += h * self.d_head * d
        if self.qkv_bias:
            p += (h + 2 * self.h_kv) * self.d_head + d
        return p

    @property
    def hc_params(self) -> int:
        """Hyper-connections (DeepSeek-V4's mHC) per layer: for the attention and the FFN sub-block each,
        a mixing projection of (2 + m) m x m d and its bias (2 + m) m and 3 scales, m = ``hc_mult``
        streams (0 without)."""
        m = self.hc_mult
        return 2 * ((2 + m) * m * (m * self.d + 1) + 3) if m else 0

    @property
    def compressor_params(self) -> int:
        """DeepSeek-V4's KV compressors over all layers: each compressed layer projects every token to
        a key-value and a score of coff x head width (coff = 2 where rows overlap, the sparse layers'
        ratio-4 rows; 1 for the others), d x 2 coff (r_kv + d_r); the sparse layers' indexer has its
        own, of its head width d_I (vLLM's deepseek_compressor: state of 2 coff head_dim)."""
        head = self.r_kv + self.d_r
        sparse = 2 if self.sparse_compress > 1 else 0
        per_sparse = self.d * 2 * sparse * (head + self.indexer_head_dim) if sparse else 0
        return self.sparse_layers * per_sparse + self.compressed_layers * self.d * 2 * head

    @property
    def indexer_params(self) -> int:
        """The indexer of a sparse layer (DeepSeek-V3.2): its query up-projection from the query
        low rank r_q h_I d_I (or d h_I d_I), one key head d d_I with its LayerNorm (2 d_I), and the
        per-head weights d h_I.  0 without sparse attention."""
        if not self.sparse_top_k:
            return 0
        q_in = self.r_q or self.d
        return q_in * self.indexer_heads * self.indexer_head_dim + self.d * self.indexer_head_dim \
            + 2 * self.indexer_head_dim + self.d * self.indexer_heads

    @property
    def n_attn(self) -> int:
        """Softmax-attention layers: every layer but the linear mixers (Nemotron-H: its own count)."""
        return self.attention_layers or self.n_L - self.linear_layers

    @property
    def linear_conv_dim(self) -> int:
        """Channels of a linear mixer's short convolution: gated DeltaNet's and KDA's q, k and v
        (2 h_k d_k + h_v d_v); Mamba-2's x, B and C (h P + 2 G N)."""
        if not self.linear_kind:
            return 0
        return 2 * self.linear_key_heads * self.linear_key_dim + self.linear_heads * self.linear_value_dim

    @property
    def linear_params(self) -> int:
        """Weights of one linear mixer.

        * Gated DeltaNet (Qwen3-Next, Qwen3.5): in_proj_qkvz d (2 h_k d_k + 2 h_v d_v), in_proj_ba
          d 2 h_v, the convolution (2 h_k d_k + h_v d_v) K, A_log and dt_bias h_v each, the gated
          RMSNorm d_v, out_proj h_v d_v d.
        * Mamba-2 (Nemotron-H): in_proj d (2 h P + 2 G N + h), the convolution with its bias
          (h P + 2 G N)(K + 1), A_log, D and dt_bias h each, the gated RMSNorm h P, out_proj h P d.
        """
        d, hv, dv = self.d, self.linear_heads, self.linear_value_dim
        inner, conv = hv * dv, self.linear_conv_dim
        if self.linear_kind == "gated_deltanet":
            qkvz = d * (2 * self.linear_key_heads * self.linear_key_dim + 2 * inner)
            return qkvz + d * 2 * hv + conv * self.linear_conv_kernel + 2 * hv + dv + inner * d
        if self.linear_kind == "kda":
            # Kimi Delta Attention (Kimi Linear, Kimi K3): q, k, v of h d_k / h d_v, the output gate
            # (full rank d h d_v, or g_a g_b of rank r), beta d h, the per-channel decay f_a f_b of
            # rank d_k, three convolutions, A_log h, dt_bias h d_k, the gated norm d_v, o_proj
            hk = self.linear_key_heads * self.linear_key_dim
            r = self.linear_gate_rank
            gate = r * (d + inner) if r else d * inner
            return (d * (2 * hk + inner) + gate + d * hv + self.linear_key_dim * (d + hk)
                    + conv * self.linear_conv_kernel + hv + hk + dv + inner * d)
        if self.linear_kind == "mamba2":
            return d * (inner + conv + hv) + conv * (self.linear_conv_kernel + 1) + 3 * hv + inner + inner * d
        return 0

    @property
    def mixer_params(self) -> int:
        """Attention and linear-mixer weights over all layers."""
        attention = self.n_attn * self.attn_params + self.sparse_layers * self.indexer_params
        return attention + self.compressor_params + self.linear_layers * self.linear_params

    @property
    def linear_state_bytes_per_layer(self) -> float:
        """One sequence's state in one linear mixer: h_v d_k d_v recurrent elements (Mamba-2: h P N)
        at ``linear_state_bytes`` each, and the convolution's last K - 1 inputs of each channel in
        BF16."""
        if not self.linear_kind:
            return 0.0
        rec = self.linear_heads * self.linear_key_dim * self.linear_value_dim
        return rec * self.linear_state_bytes + self.linear_conv_dim * (self.linear_conv_kernel - 1) * 2.0

    def linear_flops_per_token(self, phase: str = "decode") -> float:
        """FLOPs per token of one linear mixer's core.

        Decode (the recurrent form), per head: gated DeltaNet (and KDA, whose decay is per channel:
        the same count) decays the state (d_k d_v), reads it with the key (2 d_k d_v), adds the
        rank-one correction (2 d_k d_v) and reads it with the query (2 d_k d_v): 7 d_k d_v; Mamba-2
        decays it (P N), adds the outer product of the input and B (2 P N) and reads it with C
        (2 P N): 5 P N.  The short convolution: 2 K per channel.
        Prefill (the chunked form) adds the attention inside each chunk of C_ch tokens, scores and
        values: 2 C_ch (d_k + d_v) per head and token.
        """
        if not self.linear_kind:
            return 0.0
        per = 5 if self.linear_kind == "mamba2" else 7
        f = per * self.linear_heads * self.linear_key_dim * self.linear_value_dim
        f += 2 * self.linear_conv_kernel * self.linear_conv_dim
        if phase != "decode":
            f += 2 * self.linear_chunk * (self.linear_key_dim + self.linear_value_dim) * self.linear_heads
        return float(f)

    @property
    def attn_replicated_params(self) -> int:
        """Attention weights per layer every attention-TP rank holds whole: MLA's low-rank
        down-projections (q_a and kv_a with their norms), which serving stacks replicate rather
        than split.  0 for GQA (every projection splits by heads)."""
        if self.attention != "mla":
            return 0
        q_a = self.d * self.r_q + self.r_q if self.r_q else 0
        return q_a + self.d * (self.r_kv + self.d_r) + self.r_kv

    @property
    def d_e(self) -> int:
        """The routed experts' width: d, or a latent MoE's latent width (Kimi K3: 3,584 of 7,168)."""
        return self.latent_dim or self.d

    @property
    def expert_params(self) -> int:
        """One routed expert's weights: 3 d_e f_e (+ biases); 2 d_e f_e for a plain (ungated) one."""
        bias = (2 * self.f_e + self.d_e) if self.expert_bias else 0
        return self.ffn_matrices * self.d_e * self.f_e + bias

    @property
    def shared_expert_params(self) -> int:
        """One shared expert's weights, on the hidden state: 3 d f_e (+ biases; 2 d f_e ungated)."""
        return self.ffn_matrices * self.d * self.f_e + ((2 * self.f_e + self.d) if self.expert_bias else 0)

    @property
    def latent_params(self) -> int:
        """A latent MoE layer's projections into and out of the experts' width and the norm between
        (Kimi K3's routed_expert_down_proj d x d_l, routed_expert_norm d_l, routed_expert_up_proj
        d_l x d); 0 without a latent."""
        return 2 * self.d * self.latent_dim + self.latent_dim if self.latent_dim else 0

    @property
    def dense_ffn_params(self) -> int:
        return self.ffn_matrices * self.d * self.f_d

    @property
    def router_params(self) -> int:
        return self.d * self.E + (self.E if self.expert_bias else 0) if self.E > 1 else 0

    @property
    def embedding_params(self) -> int:
        return self.V * self.d

    @property
    def head_params(self) -> int:
        return 0 if self.tie_embeddings else self.V * self.d

    def class_params(self) -> dict[str, int]:
        """Weights per tensor class, whole model (MTP excluded)."""
        norms = 2 * self.d * self.n_L + self.d
        return {
            "routed_experts": self.n_moe * self.E * self.expert_params,
            "attention": self.mixer_params + norms + self.n_moe * self.router_params,
            "dense_ffn": self.n_Ld * self.dense_ffn_params
            + self.n_moe * (self.E_s * self.shared_expert_params + self.latent_params),
            "embeddings": self.embedding_params + self.head_params,
        }

    @property
    def total_params(self) -> int:
        return sum(self.class_params().values())

    @property
    def active_params(self) -> int:
        """Weights one token multiplies (input embedding excluded, LM head included)."""
        moe = (self.k * self.expert_params + self.E_s * self.shared_expert_params + self.router_params
               + self.latent_params)
        lm_head = self.V * self.d
        return (self.mixer_params + 2 * self.d * self.n_L + self.n_Ld * self.dense_ffn_params
                + self.n_moe * moe + lm_head)

    @property
    def draft_params(self) -> int:
        """Parameters of the draft head (its decoder layers with the verifier's attention shape,
        the fusing projection, its own LM head if any; 0 without a draft head)."""
        if self.spec_kind != "draft":
            return 0
        layer = self.attn_params + 3 * self.d * self.draft_ffn + 2 * self.d
        head = (self.draft_vocab or self.V) * self.d if self.draft_own_head else 0
        return self.draft_layers * layer + self.draft_fuse * self.d * self.d + head

    @property
    def speculates(self) -> bool:
        """Published speculation exists: MTP layers with an acceptance, or a draft head."""
        return bool(self.spec_tokens) or (self.mtp_layers > 0 and self.mtp_acceptance > 0)

    @property
    def mtp_params(self) -> int:
        """One MTP module per layer: a full MoE decoder layer + the 2d x d projection + norms
        (embedding and head shared with the main model)."""
        layer = (self.attn_params + self.E * self.expert_params + self.E_s * self.shared_expert_params
                 + self.latent_params)
        return self.mtp_layers * (layer + self.router_params + 2 * self.d * self.d + 4 * self.d)

    # ---- KV cache -------------------------------------------------------------------------
    @property
    def kv_elems_per_token_layer(self) -> int:
        """KV-cache elements per token per layer (e_kv): MLA r_kv + d_r; GQA 2 h_kv d_head."""
        if self.attention == "mla":
            return self.r_kv + self.d_r
        return 2 * self.h_kv * self.d_head

    def kv_bytes_per_token(self, kv: str | None = None) -> float:
        """KV bytes per token over the attention layers (sliding-window layers counted in full; a
        compressed layer a row per ``c`` tokens, its window aside), with the sparse layers' indexer
        keys; linear mixers hold none (:attr:`state_bytes`)."""
        rows = (self.n_attn - self.sparse_layers - self.compressed_layers
                + self.sparse_layers / self.sparse_compress + self.compressed_layers / self.compress_ratio)
        return (rows * self.kv_elems_per_token_layer * kv_bytes(kv or self.kv_precision)
                + self.sparse_layers * self.indexer_key_bytes / self.sparse_compress)

    @property
    def state_bytes(self) -> float:
        """Bytes of one sequence's linear-mixer states over all layers (0 without linear mixers)."""
        return self.linear_layers * self.linear_state_bytes_per_layer

    def weight_bytes(self, overrides: dict[str, str] | None = None) -> dict[str, float]:
        """Bytes per tensor class at the model's (or overridden) storage precision."""
        prec = {**self.precision, **(overrides or {})}
        return {c: n * get_precision(prec[c]).bytes for c, n in self.class_params().items()}

    def replace(self, **changes: Any) -> Model:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.pop("path")
        wb = self.weight_bytes()
        d.update(
            total_params=self.total_params,
            active_params=self.active_params,
            mtp_params=self.mtp_params,
            draft_params=self.draft_params,
            attn_params_per_layer=self.attn_params,
            expert_params=self.expert_params,
            shared_expert_params=self.shared_expert_params,
            class_params=self.class_params(),
            kv_bytes_per_token=self.kv_bytes_per_token(),
            state_bytes_per_sequence=self.state_bytes,
            weight_bytes=wb,
            weight_bytes_total=sum(wb.values()),
        )
        return d


def _parse_speculation(f: Fields, kw: dict[str, Any], label: str) -> None:
    """The optional ``speculation:`` block: how this model is published to speculate and how
    many tokens a step emits, measured, by draft tokens."""
    sp = f.sub("speculation", required=False)
    if sp is None:
        return
    kind = sp.text("kind", choices=("mtp", "draft"))
    kw["spec_kind"] = kind
    kw["spec_source"] = sp.text("source")
    if not kw["spec_source"].strip():
        raise SpecError(label, sp.path("source"), "a non-empty source for the acceptance figures")
    if kind == "mtp" and not kw.get("mtp_layers"):
        raise SpecError(label, sp.path("kind"), "draft (mtp needs mtp_layers > 0)")
    table = sp.raw("tokens_per_step")
    if not isinstance(table, dict) or not table:
        raise SpecError(label, sp.path("tokens_per_step"),
                        "a mapping of draft tokens to measured tokens per step, e.g. {1: 1.9, 3: 2.8}")
    tokens: dict[int, float] = {}
    for n, a in table.items():
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 16:
            raise SpecError(label, sp.path(f"tokens_per_step.{n}"), "draft tokens, an integer 1 to 16")
        if isinstance(a, bool) or not isinstance(a, int | float) or not 1.0 <= a <= n + 1:
            raise SpecError(label, sp.path(f"tokens_per_step.{n}"),
                            f"tokens per step between 1 and draft tokens + 1 = {n + 1}, got {shown(a)}")
        tokens[n] = float(a)
    kw["spec_tokens"] = dict(sorted(tokens.items()))
    rng = sp.raw("tokens_per_step_range", required=False)
    if rng is not None:
        if not isinstance(rng, dict):
            raise SpecError(label, sp.path("tokens_per_step_range"), "a mapping {drafts: [low, high]}")
        out = {}
        for n, pair in rng.items():
            ok = (n in tokens and isinstance(pair, list | tuple) and len(pair) == 2
                  and all(isinstance(x, int | float) and not isinstance(x, bool) for x in pair)
                  and 1.0 <= pair[0] <= tokens[n] <= pair[1] <= n + 1)
            if not ok:
                raise SpecError(label, sp.path(f"tokens_per_step_range.{n}"),
                                "[low, high] around the measured value at a draft count of tokens_per_step, "
                                "within 1 and drafts + 1")
            out[n] = (float(pair[0]), float(pair[1]))
        kw["spec_range"] = out
    if kind == "draft":
        h = sp.sub("draft_head")
        kw["draft_layers"] = h.integer("layers", minimum=1)
        kw["draft_ffn"] = h.integer("intermediate_size", minimum=1)
        kw["draft_fuse"] = h.integer("fused_hidden_states", minimum=0)
        kw["draft_own_head"] = h.boolean("own_lm_head")
        kw["draft_vocab"] = h.integer("vocab_size", required=False, default=0, minimum=0)
        h.text("source")
        h.done()
    sp.done()


def parse_model(doc: dict[str, Any], label: str) -> Model:
    f = Fields(doc, label)
    kw: dict[str, Any] = {}
    kw["name"] = f.text("name")
    kw["description"] = f.text("description")
    kw["source"] = f.text("source")
    kw["architecture"] = f.text("architecture", choices=ARCHITECTURES)
    kw["d"] = f.integer("hidden_size")
    kw["n_L"] = f.integer("layers")
    kw["n_Ld"] = f.integer("dense_layers", minimum=0)
    kw["V"] = f.integer("vocab_size")
    kw["tie_embeddings"] = f.boolean("tie_embeddings")
    kw["max_context"] = f.integer("max_context")
    a = f.sub("attention")
    kind = a.text("kind", choices=("mla", "gqa"))
    kw["attention"] = kind
    kw["h"] = a.integer("heads")
    if kind == "mla":
        kw["r_q"] = a.integer("q_lora_rank", required=False, default=0, minimum=0)
        kw["r_kv"] = a.integer("kv_lora_rank")
        kw["d_n"] = a.integer("qk_nope_head_dim")
        kw["d_r"] = a.integer("qk_rope_head_dim")
        kw["d_v"] = a.integer("v_head_dim")
        kw["output_gate"] = a.boolean("output_gate")
        kw["kv_shared"] = a.boolean("kv_shared")
        kw["o_groups"] = a.integer("o_groups", required=False, default=0, minimum=0)
        kw["o_lora_rank"] = a.integer("o_lora_rank", required=False, default=0, minimum=0)
        if bool(kw["o_groups"]) != bool(kw["o_lora_rank"]):
            raise SpecError(label, "attention.o_lora_rank", "given with attention.o_groups (both or neither)")
        kw["hc_mult"] = a.integer("hc_mult", required=False, default=0, minimum=0)
        kw["sliding_window"] = a.integer("sliding_window", required=False, default=0, minimum=0)
        kw["sliding_layers"] = a.integer("sliding_layers", required=False, default=0, minimum=0)
    else:
        kw["h_kv"] = a.integer("kv_heads")
        kw["d_head"] = a.integer("head_dim")
        kw["sliding_window"] = a.integer("sliding_window", required=False, default=0, minimum=0)
        kw["sliding_layers"] = a.integer("sliding_layers", required=False, default=0, minimum=0)
        kw["qkv_bias"] = a.boolean("qkv_bias")
        kw["output_gate"] = a.boolean("output_gate")
        a.boolean("attention_sinks")
        if kw["h"] % kw["h_kv"]:
            raise SpecError(label, "attention.kv_heads", f"a divisor of heads ({kw['h']})")
    _parse_sparse(a, kw, label)
    _parse_compressed(a, kw, label)
    a.done()
    _parse_linear(f, kw, label)
    m = f.sub("moe", required=False)
    if m is None:
        _parse_dense(f, kw, label)
    else:
        _parse_moe(f, m, kw, label)
    kw["mtp_layers"] = f.integer("mtp_layers", required=False, default=0, minimum=0)
    if kw["mtp_layers"] > kw["n_L"]:
        raise SpecError(label, "mtp_layers", f"at most the model's layers ({kw['n_L']}): a draft module has "
                        f"a layer or a few, got {kw['mtp_layers']}")
    mtp = f.sub("mtp", required=False)
    if mtp is not None:
        kw["mtp_acceptance"] = mtp.number("acceptance_rate", hi=0.999)
        kw["mtp_source"] = mtp.text("source")
        mtp.done()
    _parse_speculation(f, kw, label)
    p = f.sub("precision")
    prec = {}
    for c in TENSOR_CLASSES:
        prec[c] = p.text(c)
        get_precision(prec[c], label, p.path(c))
    kw["precision"] = prec
    kw["kv_precision"] = p.text("kv_cache")
    kv_bytes(kw["kv_precision"], label, p.path("kv_cache"))
    p.done()
    f.done()

    if kw["k"] > kw["E"]:
        raise SpecError(label, "moe.experts_per_token", f"at most routed_experts ({kw['E']})")
    if kw["n_Ld"] >= kw["n_L"] and kw["E"] > 1:
        raise SpecError(label, "dense_layers", f"fewer than layers ({kw['n_L']})")
    if kw["n_Ld"] > kw["n_L"]:
        raise SpecError(label, "dense_layers", f"at most layers ({kw['n_L']})")
    if kw["n_Ld"] and not kw["f_d"]:
        raise SpecError(label, "moe.dense_intermediate_size", "a size, since dense_layers > 0")
    n_attn = kw.get("attention_layers") or kw["n_L"] - kw.get("linear_layers", 0)
    kinds = kw.get("sliding_layers", 0) + kw.get("sparse_layers", 0) + kw.get("compressed_layers", 0)
    if kinds > n_attn:
        raise SpecError(label, "attention.sliding_layers", f"with the sparse and compressed layers, at most "
                        f"the attention layers ({n_attn})")
    return Model(**kw, path=str(label))


def _parse_sparse(a: Fields, kw: dict[str, Any], label: str) -> None:
    """The optional sparse-attention fields of the ``attention:`` block (DeepSeek sparse
    attention: ``sparse_top_k`` tokens per query, picked by an indexer of ``indexer_heads`` heads
    of ``indexer_head_dim``, whose key cache holds ``indexer_key_bytes`` per token and layer)."""
    top = a.integer("sparse_top_k", required=False, default=0, minimum=0)
    if not top:
        for extra in ("sparse_layers", "indexer_heads", "indexer_head_dim", "indexer_key_bytes",
                      "sparse_compress"):
            if a.has(extra):
                raise SpecError(label, a.path(extra), "only with attention.sparse_top_k")
        return
    kw["sparse_top_k"] = top
    kw["sparse_layers"] = a.integer("sparse_layers", minimum=1)
    kw["indexer_heads"] = a.integer("indexer_heads", minimum=1)
    kw["indexer_head_dim"] = a.integer("indexer_head_dim", minimum=1)
    kw["indexer_key_bytes"] = a.number("indexer_key_bytes", lo=1.0, lo_open=False)
    kw["sparse_compress"] = a.integer("sparse_compress", required=False, default=1)


def _parse_compressed(a: Fields, kw: dict[str, Any], label: str) -> None:
    """The optional compressed-KV fields of the ``attention:`` block (DeepSeek-V4): layers that
    attend every row of ``compress_ratio`` tokens, and whether compressed layers also attend the
    last ``sliding_window`` raw tokens."""
    kw["compressed_layers"] = a.integer("compressed_layers", required=False, default=0, minimum=0)
    kw["compress_ratio"] = a.integer("compress_ratio", required=kw["compressed_layers"] > 0, default=1)
    kw["compressed_window"] = a.boolean("compressed_window")
    if kw["compressed_window"] and not kw.get("sliding_window"):
        raise SpecError(label, a.path("compressed_window"), "given with attention.sliding_window (its size)")


LINEAR_KINDS = ("gated_deltanet", "kda", "mamba2")


def _parse_linear(f: Fields, kw: dict[str, Any], label: str) -> None:
    """The optional ``linear_attention:`` block of a hybrid: how many layers are linear mixers and
    their shape (gated DeltaNet: heads of keys and values and their sizes; Mamba-2: heads, groups,
    state size N as the key size and head size P as the value size)."""
    b = f.sub("linear_attention", required=False)
    if b is None:
        return
    kw["linear_kind"] = b.text("kind", choices=LINEAR_KINDS)
    kw["linear_layers"] = b.integer("layers", minimum=1)
    kw["linear_heads"] = b.integer("heads", minimum=1)
    kw["linear_key_heads"] = b.integer("key_heads", minimum=1)
    kw["linear_key_dim"] = b.integer("key_head_dim", minimum=1)
    kw["linear_value_dim"] = b.integer("value_head_dim", minimum=1)
    kw["linear_conv_kernel"] = b.integer("conv_kernel", minimum=1)
    kw["linear_chunk"] = b.integer("chunk_size", required=False, default=64, minimum=1)
    kw["linear_state_bytes"] = b.number("state_bytes", required=False, default=4.0, lo=1.0, lo_open=False)
    kw["linear_gate_rank"] = b.integer("gate_rank", required=False, default=0, minimum=0)
    kw["attention_layers"] = b.integer("attention_layers", required=False, default=0, minimum=0)
    b.text("source")
    b.done()
    if kw["linear_layers"] >= kw["n_L"] and not kw["attention_layers"]:
        raise SpecError(label, "linear_attention.layers", f"fewer than layers ({kw['n_L']}), or give "
                        "attention_layers (a model of blocks)")


def _parse_moe(f: Fields, m: Fields, kw: dict[str, Any], label: str) -> None:
    """The ``moe:`` block of a MoE model."""
    if "intermediate_size" in f.doc:
        raise SpecError(label, "intermediate_size", "no top-level value in a MoE model (its dense "
                        "FFN size is moe.dense_intermediate_size)")
    kw["E"] = m.integer("routed_experts")
    kw["k"] = m.integer("experts_per_token")
    kw["E_s"] = m.integer("shared_experts", minimum=0)
    kw["f_e"] = m.integer("expert_intermediate_size")
    kw["f_d"] = m.integer("dense_intermediate_size", required=False, default=0, minimum=0)
    # (absent: no node-limited routing; given, at least one group a token may reach)
    kw["max_groups"] = m.integer("max_groups_per_token", required=False, default=0,
                                 minimum=1 if m.has("max_groups_per_token") else 0)
    kw["routing_groups"] = m.integer("routing_groups", required=False, default=0, minimum=0)
    kw["expert_bias"] = m.boolean("expert_bias")
    kw["latent_dim"] = m.integer("latent_dim", required=False, default=0, minimum=0)
    kw["ffn_matrices"] = m.integer("ffn_matrices", required=False, default=3, minimum=2)
    if kw["ffn_matrices"] > 3:
        raise SpecError(label, m.path("ffn_matrices"),
                        f"2 (up, down) or 3 (gate, up, down), got {kw['ffn_matrices']}")
    m.done()


def _parse_dense(f: Fields, kw: dict[str, Any], label: str) -> None:
    """A dense model (no ``moe:`` block): ``dense_layers`` equals ``layers`` and the top-level
    ``intermediate_size`` is every layer's FFN; no experts (E = k = 1, f_e = 0: no expert weights)."""
    if kw["n_Ld"] != kw["n_L"]:
        raise SpecError(label, "dense_layers",
                        f"equal to layers ({kw['n_L']}) in a dense model (one without a moe: block), "
                        f"got {kw['n_Ld']}")
    kw["f_d"] = f.integer("intermediate_size")
    kw["E"], kw["k"], kw["E_s"], kw["f_e"] = 1, 1, 0, 0


def load_model_file(path: Path | str) -> Model:
    return parse_model(read_yaml(path), str(path))
