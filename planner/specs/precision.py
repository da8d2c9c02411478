"""Storage formats: effective bits per element, and the dtype the tensor cores multiply in.

Effective bits include the block scales (``../docs`` notation ``b_w``):

========  =====================================================  ==========
format    layout                                                 bits/elem
========  =====================================================  ==========
bf16      16-bit brain float                                     16
fp16      16-bit IEEE half                                       16
fp8       E4M3 + one FP32 scale per 128x128 block (DeepSeek-V3)  8 + 32/16384
nvfp4     E2M1 + one E4M3 scale per 16 (+ FP32 per tensor)       4.5
mxfp4     E2M1 + one E8M0 scale per 32 (OCP MX v1.0)             4.25
int4_g32  INT4 symmetric + one 16-bit scale per 32 (W4A16)       4.5
int4_a8   INT4 + one 16-bit scale per 128, FP8 activations       4.125
========  =====================================================  ==========

Sources: NVIDIA "Introducing NVFP4" blog (2025-06-24); OCP Microscaling spec v1.0;
DeepSeek-V3 README_WEIGHTS (128x128 FP32 block scales); Kimi-K2-Thinking quantization_config
(group 32, symmetric, 4 bits); TensorRT-LLM's W4A8 MoE path (``w4afp8``: group-wise INT4 weights,
group size 128, multiplied at FP8 after the activations are quantized to FP8).

The *compute* dtype is separate from storage: a GPU without FP4 tensor cores (Hopper)
dequantises FP4 weights and multiplies at FP8 (NVFP4, a W4A8 path) or BF16 (MXFP4 and INT4
W4A16) rate, while HBM traffic stays at the stored width.  INT4 W4A16 has no tensor-core path on
either generation: it always multiplies at BF16 rate.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.errors import SpecError


@dataclass(frozen=True)
class Precision:
    name: str
    bits: float
    #: compute dtypes in order of preference; the first the hardware has is used
    compute: tuple[str, ...]
    description: str

    @property
    def bytes(self) -> float:
        return self.bits / 8.0


PRECISIONS: dict[str, Precision] = {
    p.name: p
    for p in (
        Precision("bf16", 16.0, ("bf16",), "BF16"),
        Precision("fp16", 16.0, ("bf16",), "FP16 (multiplied at the BF16/FP16 rate)"),
        Precision("fp8", 8.0 + 32.0 / (128 * 128), ("fp8", "bf16"), "FP8 E4M3, 128x128 block scales"),
        Precision("nvfp4", 4.5, ("fp4", "fp8", "bf16"), "NVFP4: E2M1 + E4M3 scale per 16"),
        Precision("mxfp4", 4.25, ("fp4", "bf16"), "MXFP4: E2M1 + E8M0 scale per 32"),
        Precision("int4_g32", 4.5, ("bf16",), "INT4 W4A16, 16-bit scale per group of 32"),
        Precision("int4_a8", 4.0 + 16.0 / 128, ("fp8", "bf16"),
                  "INT4 W4A8, 16-bit scale per group of 128, FP8 activations"),
    )
}

#: KV-cache element widths (the KV cache is read by the attention kernel, which multiplies in
#: BF16 whatever the storage).
KV_PRECISIONS: dict[str, float] = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0}

TENSOR_CLASSES = ("routed_experts", "attention", "dense_ffn", "embeddings")


def get_precision(name: str, where: str = "<input>", field: str = "precision") -> Precision:
    try:
        return PRECISIONS[name]
    except (KeyError, TypeError):
        raise SpecError(where, field, f"expected one of {', '.join(PRECISIONS)}, got {name!r}") from None


def kv_bytes(name: str, where: str = "<input>", field: str = "precision.kv_cache") -> float:
    try:
        return KV_PRECISIONS[name]
    except (KeyError, TypeError):
        raise SpecError(where, field, f"expected one of {', '.join(KV_PRECISIONS)}, got {name!r}") from None


def compute_dtype(precision: Precision, available: tuple[str, ...] | list[str]) -> str:
    """The dtype a tensor stored as ``precision`` is multiplied in on hardware with ``available``."""
    for dt in precision.compute:
        if dt in available:
            return dt
    return "bf16"
