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

from planner.errors import SpecError
from planner.specs.precision import TENSOR_CLASSES, get_precision, kv_bytes
from planner.specs.reading import Fields, read_yaml

ARCHITECTURES = ("deepseek_v3", "deepseek_v2", "kimi_k2", "qwen3_moe", "gpt_oss", "mixtral",
                 "minimax_m2", "glm4_moe", "olmoe", "phimoe", "granitemoe", "hunyuan_v1_moe", "ernie4_5_moe",
                 "llama4", "llama", "qwen3")


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
            kv = d * (self.r_kv + self.d_r) + self.r_kv + self.r_kv * h * (self.d_n + self.d_v)
            return q + kv + h * self.d_v * d
        p = d * h * self.d_head + 2 * d * self.h_kv * self.d_head + h * self.d_head * d
        if self.qkv_bias:
            p += (h + 2 * self.h_kv) * self.d_head + d
        return p

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
    def expert_params(self) -> int:
        """One expert's weights: 3 d f_e (+ biases)."""
        return 3 * self.d * self.f_e + ((2 * self.f_e + self.d) if self.expert_bias else 0)

    @property
    def dense_ffn_params(self) -> int:
        return 3 * self.d * self.f_d

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
            "attention": self.n_L * self.attn_params + norms + self.n_moe * self.router_params,
            "dense_ffn": self.n_Ld * self.dense_ffn_params + self.n_moe * self.E_s * self.expert_params,
            "embeddings": self.embedding_params + self.head_params,
        }

    @property
    def total_params(self) -> int:
        return sum(self.class_params().values())

    @property
    def active_params(self) -> int:
        """Weights one token multiplies (input embedding excluded, LM head included)."""
        per_layer = self.attn_params + 2 * self.d
        moe = (self.k + self.E_s) * self.expert_params + self.router_params
        lm_head = self.V * self.d
        return self.n_L * per_layer + self.n_Ld * self.dense_ffn_params + self.n_moe * moe + lm_head

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
        layer = self.attn_params + self.E * self.expert_params + self.E_s * self.expert_params
        return self.mtp_layers * (layer + self.router_params + 2 * self.d * self.d + 4 * self.d)

    # ---- KV cache -------------------------------------------------------------------------
    @property
    def kv_elems_per_token_layer(self) -> int:
        """KV-cache elements per token per layer (e_kv): MLA r_kv + d_r; GQA 2 h_kv d_head."""
        if self.attention == "mla":
            return self.r_kv + self.d_r
        return 2 * self.h_kv * self.d_head

    def kv_bytes_per_token(self, kv: str | None = None) -> float:
        """KV bytes per token over all layers (sliding-window layers counted in full)."""
        return self.n_L * self.kv_elems_per_token_layer * kv_bytes(kv or self.kv_precision)

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
            class_params=self.class_params(),
            kv_bytes_per_token=self.kv_bytes_per_token(),
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
                            f"tokens per step between 1 and draft tokens + 1 = {n + 1}, got {a!r}")
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
    else:
        kw["h_kv"] = a.integer("kv_heads")
        kw["d_head"] = a.integer("head_dim")
        kw["sliding_window"] = a.integer("sliding_window", required=False, default=0, minimum=0)
        kw["sliding_layers"] = a.integer("sliding_layers", required=False, default=0, minimum=0)
        kw["qkv_bias"] = a.boolean("qkv_bias")
        a.boolean("attention_sinks")
        if kw["h"] % kw["h_kv"]:
            raise SpecError(label, "attention.kv_heads", f"a divisor of heads ({kw['h']})")
    a.done()
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
    if kw.get("sliding_layers", 0) > kw["n_L"]:
        raise SpecError(label, "attention.sliding_layers", f"at most layers ({kw['n_L']})")
    return Model(**kw, path=str(label))


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
