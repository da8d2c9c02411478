"""The decode attention kernels' dispatchers, as read from the serving stacks' sources: how many
CTAs each kernel splits a sequence's KV over, how it tiles the heads, and which of a stack's kernels
runs a shape.  Pure numpy on arrays of shapes; the kernel scorecard (:mod:`planner.truth.kernels`)
and the decode step (:func:`planner.physics.step.attention_law_values`) both take them from here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: TensorRT-LLM's decode attention dispatch on Hopper (``decoderXQAImplJIT.cpp`` ``shouldUse`` /
#: ``mayHavePerfGain``, ``decoderXQAImplJIT/kernelUtils.cpp`` ``supportConfigHMMA`` /
#: ``supportConfigQGMMA``, ``decoderXQAConstants.h``; NVIDIA/TensorRT-LLM, Apache-2.0, as read): the
#: XQA kernel (tensor cores, a KV head's query group loaded once) runs a GQA decode only where
#: the group ``h / h_kv`` is at most :data:`XQA_MAX_GROUP`, the heads are not plain MHA
#: (``h = h_kv``: "do not use XQA kernel for vanilla MHA case for performance reasons") and the
#: grid fills the GPU, ``4 h_kv b max(1, floor(S / 128)) >= SMs``, the last only over a BF16
#: cache: with BF16 queries and an FP8 cache XQA runs whatever the grid, "because MMHA does not
#: support this combination" (``DecoderXQARunner::shouldUse``, 2026); every other shape falls back
#: to the masked multi-head attention kernel (MMHA), priced by its own fitted law
#: (``attn_gqa_mmha_<KV dtype>``, the same expression, other constants).  On Blackwell
#: (trtllm-gen kernels, whose dispatcher we have not read) the tables show the group limit alone:
#: under one law the shapes with groups over 32 ran 4-5x slower than predicted (median
#: predicted / measured 0.22), the plain-MHA and low-occupancy shapes within 5% of the rest.
XQA_MAX_GROUP = 32
XQA_TOKENS_PER_BLOCK = 128   #: kMinHistoryTokensPerBlock: context tokens per multi-block CTA
XQA_BLOCK_FACTOR = 4.0       #: kEnableMinBlockFactor
XQA_WAVE_FACTOR = 8.0        #: kTargetWaveFactor: the most CTAs per SM the multi-block count aims at
#: the GPU families whose TensorRT-LLM decode dispatch (XQA or MMHA, each split-KV) is modelled
XQA_FAMILIES = ("hopper",)


def xqa_subsequences(S: Any, blocks: Any, sms: float) -> np.ndarray:
    """CTAs per (sequence, KV head) block of TensorRT-LLM's XQA decode kernel (its multi-block
    count, ``computeMultiBlockCount`` in ``decoderXQAImplJIT.cpp``, as read): one per 128 context
    tokens, at most ``round(sqrt(8 n))`` of them ("otherwise the final reduction may dominate"),
    cut by ``floor`` to the wave factor where ``blocks n / SMs`` exceeds 8 CTAs per SM, at least
    one.  (Its cap on the workspace, 6,000 sub-sequences, never binds under that wave factor below
    750 SMs.)"""
    S, blocks = np.asarray(S, float), np.asarray(blocks, float)
    n = np.floor(S / XQA_TOKENS_PER_BLOCK)
    n = np.maximum(np.minimum(n, np.round(np.sqrt(n * 8.0))), 1.0)
    adj = blocks * n / sms / XQA_WAVE_FACTOR
    return np.maximum(np.where(adj > 1.0, np.floor(n / np.maximum(adj, 1.0)), n), 1.0)


def mmha_subsequences(S: Any, blocks: Any, sms: float) -> np.ndarray:
    """CTAs per (sequence, query head) block of TensorRT-LLM's MMHA decode kernel in multi-block
    mode (``multi_block_grid_setup`` in ``decoderMaskedMultiheadAttentionLaunch.h``, as read):
    enough to give every SM a CTA, ``ceil(SMs / blocks)``, at most one per 128 context tokens
    (``ceil((S + 1) / 128)``: a CTA runs at least one unrolled loop over the KV), at least one.
    The source multiplies the SMs by the kernel's resident CTAs per SM, an occupancy query we
    cannot read from a table: taken as 1 (against 2, 4 and 8, which fit the H200 BF16 MMHA rows at
    median 8.5, 8.9 and 9.2% against 7.8%)."""
    S, blocks = np.asarray(S, float), np.asarray(blocks, float)
    return np.clip(np.ceil(sms / blocks), 1.0, np.ceil((S + 1.0) / XQA_TOKENS_PER_BLOCK))


#: SGLang's Triton attention backend (table variant ``triton``: the head dimensions its other
#: backends do not take, 192, 256 and 512), whose decode kernel splits each (sequence, KV-head
#: block) over ``num_kv_splits`` CTAs (:func:`triton_decode_splits`); its GQA decode law is fitted
#: apart (kind ``gqa_triton``, spec ``attn_gqa_triton_<KV dtype>``)
SGLANG_TRITON_ATTN_VARIANT = "triton"
#: the backend's ``--triton-attention-num-kv-splits`` default: at most 8 splits
TRITON_MAX_KV_SPLITS = 8.0
#: vLLM's Triton attention backend (table variant ``vllm_triton_attn``), fitted apart the same way
#: (kind ``gqa_triton``): its unified kernel runs decode as its 3D kernel, each (sequence, KV head)
#: over :data:`VLLM_TRITON_SEGMENTS` softmax segments of 16-token tiles, where the sequences number
#: at most ``MIN_LAUNCH_GRID_SIZE_2D // h_kv`` (128 // h_kv: ``seq_threshold_3D`` in its
#: ``triton_attn.py``, as read), else as its 2D kernel, one CTA per (sequence, KV head)
VLLM_TRITON_ATTN_VARIANT = "vllm_triton_attn"
VLLM_TRITON_SEGMENTS = 16.0
VLLM_TRITON_MIN_GRID_2D = 128.0
VLLM_TRITON_TILE = 16.0


def vllm_triton_segments(b: Any, h_kv: Any, S: Any) -> np.ndarray:
    """CTAs per (sequence, KV head) of vLLM's Triton decode attention (:data:`VLLM_TRITON_ATTN_VARIANT`):
    ``min(16, ceil(S / 16))`` segments on the 3D kernel (``b <= 128 // h_kv``), else 1."""
    b, h_kv, S = (np.asarray(x, float) for x in (b, h_kv, S))
    three_d = b <= np.floor(VLLM_TRITON_MIN_GRID_2D / np.maximum(h_kv, 1.0))
    return np.where(three_d, np.minimum(VLLM_TRITON_SEGMENTS, np.ceil(S / VLLM_TRITON_TILE)), 1.0)


def triton_decode_splits(b: Any, h: Any, h_kv: Any, S: Any, sms: float) -> np.ndarray:
    """``num_kv_splits`` of SGLang's Triton decode attention (``get_num_kv_splits`` in its
    ``triton_backend.py``, as read) for ``b`` sequences of ``S`` tokens, ``h`` query and ``h_kv`` KV
    heads on ``sms`` SMs: the grid's blocks ``b h`` (MHA) or ``b ceil(h / min(16, h / h_kv))``
    (grouped), the core count scaled by ``max(log2(S / 64), 1)`` and shared among them, at most
    :data:`TRITON_MAX_KV_SPLITS`, rounded to whole chunks of the context (equal lengths: the
    length-spread term gives 1)."""
    b, h, h_kv, S = (np.asarray(x, float) for x in (b, h, h_kv, S))
    group = h / np.maximum(h_kv, 1.0)
    grid = np.where(group == 1, b * h, b * np.ceil(h / np.minimum(16.0, group)))
    cores = np.floor(sms * np.maximum(np.log2(np.maximum(S, 1.0) / 64.0), 1.0))
    n = np.minimum(np.ceil(cores / grid), TRITON_MAX_KV_SPLITS)
    return np.ceil(S / np.ceil(S / n))


def trtllm_mmha(family: str, sm_count: float, b: Any, h: Any, h_kv: Any, S: Any, fp8: Any) -> np.ndarray:
    """Where TensorRT-LLM runs a GQA decode of ``b`` sequences of ``S`` tokens, ``h`` query and
    ``h_kv`` KV heads on the GPU, on MMHA rather than XQA (rules above: a group over
    :data:`XQA_MAX_GROUP` anywhere; on :data:`XQA_FAMILIES` also plain MHA, and a grid that leaves
    SMs idle over a BF16 cache, ``fp8`` False)."""
    b, h, S = (np.asarray(x, float) for x in (b, h, S))
    h_kv = np.maximum(np.asarray(h_kv, float), 1.0)
    mmha = h / h_kv > XQA_MAX_GROUP
    if family in XQA_FAMILIES:
        per_seq = np.maximum(1.0, np.floor(S / XQA_TOKENS_PER_BLOCK))  # multi-block CTAs
        blocks = XQA_BLOCK_FACTOR * h_kv * b * per_seq
        mmha = mmha | (h == h_kv) | ((blocks < sm_count) & ~np.asarray(fp8, bool))
    return mmha


#: trtllm-gen's MLA decode dispatch (``selectMlaGenerationKernel`` / ``useSwapsMmaAbMlaGenKernel``
#: in TensorRT-LLM's ``fmhaKernels.h``, which FlashInfer's ``trtllm-gen`` MLA decode, SGLang's
#: ``trtllm_mla`` backend, mirrors; as read): the low-latency kernel (SwapsMmaAb) tiles the heads
#: 16 at a time (8 at up to 8 heads) and runs where there are at most 32 heads, or where its CTAs
#: fit the SMs, ``b ceil(h / 16) <= SMs``, and each CTA's share of the context, split over
#: ``min(ceil(S / 256), max(1, floor(SMs / (b ceil(h / 16)))))`` CTAs, is at most 1,024 tokens;
#: otherwise one tile of 64 heads (KeepsMmaAb; 128 heads on a 2-CTA cluster that loads the KV once).
TRTLLM_GEN_MLA_TILE = 16
TRTLLM_GEN_STEP_KV = 256
TRTLLM_GEN_MAX_SEQ_PER_CTA = 1024
#: the (family, stack) pairs whose MLA decode kernels take that dispatch
TRTLLM_GEN_MLA = {("blackwell", "trtllm"), ("blackwell", "sglang")}
#: (family, stack) whose MLA decode over an FP8 cache casts the whole cache to BF16 first and
#: attends the copy: SGLang's FlashAttention-3 backend on Hopper (``flashattention_backend.py``
#: ``forward_decode``, absorbed MLA: ``get_key_buffer(layer_id).to(q.dtype)``; its FP8 guard
#: casts the query to FP8 only for head dimensions up to 256, MLA's is 576, and FA3's FP8 path
#: does not take a value dimension unlike the key's).  The kernel tables agree: on H100 and H200
#: the FP8 rows take the BF16 rows' time plus 1.72 and 1.67 ns per cached token (p10-p90 within
#: 2%, whatever the heads), so 576 B read and 1,152 B written per token at ~1 TB/s on both GPUs:
#: the same time on 1.43x the bandwidth, the cast's CTAs' SM time, not HBM.
MLA_KV_CAST = {("hopper", "sglang")}


def mla_dispatch(b: Any, h: Any, S: Any, sms: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """trtllm-gen's MLA decode grid per sequence (:data:`TRTLLM_GEN_MLA_TILE` ...): ``(n_ht, n_hc,
    n_sub)``, the CTAs that each stream the sequence's whole KV range (head tiles x value-dimension
    slices; the 128-head kernel's 2-CTA cluster loads it once), the CTAs per KV split (those, 2 on
    that cluster) and the KV splits.  The splits fill the SMs, ``min(ceil(S / 256), max(1,
    floor(SMs / CTAs)))``; where the grid then fills at most half of them (all of them at one
    sequence, the source's DeepSeek-V3 minimum-latency mode) and the kernel is not the 2-CTA one,
    the 512-wide value dimension is cut in 4 slices of 128 (where it fills at most a quarter, half
    at one sequence) or 2 of 256, and the splits recounted (``computeNumCtas`` in TensorRT-LLM's
    ``fmhaKernels.h``, as read)."""
    b, h, S = (np.asarray(x, float) for x in (b, h, S))
    tiles = np.ceil(h / TRTLLM_GEN_MLA_TILE)
    ctas = b * tiles
    per_seq = np.minimum(np.ceil(S / TRTLLM_GEN_STEP_KV), np.maximum(1.0, np.floor(sms / ctas)))
    low = (h <= 32) | ((ctas <= sms) & (np.ceil(S / per_seq) <= TRTLLM_GEN_MAX_SEQ_PER_CTA))
    pair = ~low & (h > 64)                      # 2-CTA cluster, each 256 of the value dimension
    x = np.where(pair, 2.0, 1.0)                # CTAs per sequence along x before the KV split
    y = np.where(low, tiles, 1.0)               # head tiles
    max_kv = np.ceil(S / TRTLLM_GEN_STEP_KV)

    def splits(y: np.ndarray) -> np.ndarray:
        return np.minimum(max_kv, np.maximum(1.0, np.floor(sms / (x * y * b))))

    kv = splits(y)
    total = x * y * kv * b
    corr = np.where(b == 1, 1.0, 2.0)
    vsplit = np.where(pair | (total * corr > sms), 1.0, np.where(total * 2 * corr <= sms, 4.0, 2.0))
    kv = np.where(vsplit > 1, splits(y * vsplit), kv)
    return y * vsplit, x * y * vsplit, kv


#: FlashAttention-3's split-KV count on Hopper, which SGLang's ``fa3`` and vLLM's FlashAttention
#: decode backends run (their tables' kernels there: 6,370 and 6,440 of each cell's ~6,500 rows):
#: ``num_splits_heuristic`` in flash-attention's ``hopper/heuristics.h`` over ``b h_kv`` query
#: blocks (decode packs a KV head's query group into one 128-row block) and ``ceil(S / 128)`` KV
#: blocks, called with at most 128 splits; vLLM caps them at 16 under CUDA graphs
#: (``_DEFAULT_MAX_NUM_SPLITS_FOR_CUDA_GRAPH`` in its ``v1/attention/backends/flash_attn.py``)
FA3_MAX_SPLITS = {"sglang": 128, "vllm": 16}
FA3_BLOCK_N = 128
FA3_FAMILIES = ("hopper",)


def fa3_splits(blocks: Any, S: Any, sms: float, max_splits: int) -> np.ndarray:
    """KV splits per query block of FlashAttention-3's decode (``num_splits_heuristic``, as read):
    one where the ``blocks`` fill 80% of the SMs or a block has at most 4 KV blocks of 128 tokens;
    else the fewest splits whose wave efficiency ``w / ceil(w)`` (``w = blocks splits / SMs``)
    reaches 85% of the best over 1 .. min(max_splits, SMs, KV blocks)."""
    blocks, S = np.broadcast_arrays(np.asarray(blocks, float), np.asarray(S, float))
    n_blocks = np.ceil(S / FA3_BLOCK_N)
    top = np.minimum(np.minimum(max_splits, sms), n_blocks)
    # the heuristic per distinct (blocks, top) pair: a sweep's grid holds few of them, and the
    # table of every split count per pair is max_splits wide
    pairs, inverse = np.unique(np.stack([blocks.ravel(), top.ravel()]), axis=1, return_inverse=True)
    s = np.arange(1, int(max(max_splits, 1)) + 1, dtype=float)
    waves = pairs[0][:, None] * s[None, :] / sms
    eff = np.where(s[None, :] <= pairs[1][:, None], waves / np.ceil(waves), 0.0)
    best = eff.max(axis=1, initial=0.0)
    first = (np.argmax(eff >= 0.85 * best[:, None], axis=1) + 1.0)[inverse.ravel()].reshape(blocks.shape)
    return np.where((blocks >= 0.8 * sms) | (n_blocks <= 4), 1.0, first)


def decode_dispatch(family: str, stack: str, kind: str, sms: float, b: Any, h: Any, h_kv: Any, S: Any,
                    window: Any = 0.0) -> dict[str, np.ndarray]:
    """``n_sub``, ``n_ht`` and ``n_hc`` of a decode attention kernel of law ``kind`` that a stack runs
    on a GPU of ``family`` with ``sms`` SMs, for ``b`` sequences of ``S`` context tokens (``window``
    > 0: a sliding window), ``h`` query and ``h_kv`` KV heads on the GPU: the KV splits (CTAs per
    block: :func:`xqa_subsequences`, :func:`mmha_subsequences`, :func:`fa3_splits`,
    :func:`triton_decode_splits`, :func:`vllm_triton_segments`, :func:`mla_dispatch`'s) and MLA's head
    tiles; 1 where the dispatcher is not modelled.  The kernel scorecard's rows and the step's
    decode attention (:func:`planner.physics.step.attention_law_values`) both take them from here."""
    b, h, h_kv, S = (np.asarray(x, float) for x in (b, h, h_kv, S))
    ones = np.ones(np.broadcast(b, h, h_kv, S).shape)
    out = {"n_sub": ones, "n_ht": ones, "n_hc": ones}
    if kind == "mla":
        if (family, stack) in TRTLLM_GEN_MLA and sms > 1:
            n_ht, n_hc, n_kv = mla_dispatch(b, h, S, sms)
            out = {"n_sub": n_kv * ones, "n_ht": n_ht * ones, "n_hc": n_hc * ones}
        return out
    if kind == "gqa_triton":
        n = vllm_triton_segments(b, h_kv, S) if stack == "vllm" else triton_decode_splits(b, h, h_kv, S, sms)
    elif kind in ("gqa", "gqa_mmha") and family in XQA_FAMILIES and stack == "trtllm":
        n = (xqa_subsequences(S, b * h_kv, sms) if kind == "gqa" else mmha_subsequences(S, b * h, sms))
    elif kind == "gqa" and family in FA3_FAMILIES and stack in FA3_MAX_SPLITS:
        # FlashAttention-3 splits the window-limited context it loads
        w = np.asarray(window, float)
        loaded = np.where(w > 0, np.minimum(S, w), S)
        n = fa3_splits(b * h_kv, loaded, sms, FA3_MAX_SPLITS[stack])  # broadcasts any shapes
    else:
        return out
    return out | {"n_sub": n * ones}
