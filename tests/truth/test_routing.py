"""The MoE tables' routing, rebuilt (planner.truth.routing): the balanced routing by hand and the
power-law draws' invariants."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from planner.truth.routing import _power_law_ids, measured_rank


def _rank(tokens, experts, topk, ep, distribution, tile=64.0, **cols):
    d = pd.DataFrame({"tokens": tokens, "experts": experts, "topk": topk, "ep": ep,
                      "distribution": distribution, **cols})
    return measured_rank(d, tile)


def _rows(*args, **kw):
    """Rows, experts touched and padded rows (not the activation slots)."""
    return _rank(*args, **kw)[:3]


def test_balanced_routing_by_hand():
    # DeepSeek-V3: 256 experts, top 8, stride ceil(256 / 8) = 32.
    # 8 tokens (< 32): token t's slot i goes to floor(t 32 / 8 + 32 i) = 4 t + 32 i, 64 distinct
    # experts at EP 1 (uniform routing would touch 256 (1 - (31/32)^8) = 57.4); on rank 0 of 8
    # (experts 0-31) slot 0 only: 8 rows on experts 0, 4, ..., 28.
    rows, touched, pad = _rows([8, 8], [256, 256], [8, 8], [1, 8], ["balanced"] * 2)
    assert list(rows) == [64, 8] and list(touched) == [64, 8]
    assert list(pad) == [64 * 64, 8 * 64]  # each touched expert one 64-row tile
    # 64 tokens (>= 32): expert (t + 32 i) mod 256; rank 0 gets t for t < 32 (slot 0) and t + 224
    # - 256 for 32 <= t < 64 (slot 7): 64 rows on all 32 of its experts, two each
    rows, touched, pad = _rows([64], [256], [8], [8], ["balanced"], tile=128.0)
    assert (rows[0], touched[0], pad[0]) == (64, 32, 32 * 128)


def test_group_limited_router_on_the_balanced_routing_by_hand():
    # DeepSeek-V3's layer in the SGLang and vLLM tables: the balanced logits mark one expert in each
    # of the 8 groups of 32 (token t: t + 32 i), so every group scores the same and the router keeps
    # groups 0-3 (ties to the lowest index): the marked t, 32 + t, 64 + t, 96 + t, then the lowest
    # unmarked experts 0, 1, 2, 3 (skipping t).  1024 tokens: at EP 1, 8192 rows on the 128 experts
    # of groups 0-3; at EP 8 (rank 0: group 0) each token's t mod 32 and four of 0-4, 5 rows each;
    # at EP 256 (rank 0: expert 0 alone) every token, 1024 rows.  TensorRT-LLM's table keeps the
    # constructed experts: 1024 x 8 / 8 rows at EP 8.
    deepseek = dict(hidden=[7168] * 3, inter=[2048] * 3)
    rows, touched, _ = _rows([1024] * 3, [256] * 3, [8] * 3, [1, 8, 256], ["balanced"] * 3,
                             stack=["vllm"] * 3, **deepseek)
    assert list(rows) == [8192, 5 * 1024, 1024] and list(touched) == [128, 32, 1]
    rows, touched, _ = _rows([1024] * 3, [256] * 3, [8] * 3, [1, 8, 256], ["balanced"] * 3,
                             stack=["trtllm"] * 3, **deepseek)
    assert list(rows) == [8192, 1024, 32] and list(touched) == [256, 32, 1]


def test_power_law_draws_keep_the_tables_invariants():
    n, e, k = 256, 128, 8
    for ep in (1, 4, 8):
        rows, touched, _ = _rows([n], [e], [k], [ep], ["power_law_1.01"])
        # the busiest rank is measured: at least the mean rank's N k / EP rows, at most N per expert
        assert n * k / ep <= rows[0] <= n * e / ep
        assert 1 <= touched[0] <= e / ep
        if ep == 1:
            assert rows[0] == n * k
    # a power law leaves experts empty that balanced routing would fill
    assert _rows([16], [256], [8], [1], ["power_law_1.01"])[1][0] < 128
    # the same seed: the same answer
    a = _rows([1000], [256], [8], [8], ["power_law_1.01"])
    assert a == _rows([1000], [256], [8], [8], ["power_law_1.01"])


def test_an_undescribed_routing_is_an_error():
    with pytest.raises(ValueError, match="uniform"):
        _rows([8], [256], [8], [1], ["uniform"])


def test_power_law_tokens_get_their_experts_largest_count_first():
    # the collector's own example: counts [4, 1, 3, 2] over 5 tokens, top 2: the experts sorted by
    # count (0, 2, 3, 1) repeated by count, read slot by slot: token 0 gets (0, 2) ... token 4 (2, 1)
    ids = _power_law_ids(np.array([4.0, 1.0, 3.0, 2.0]), 5, 2)
    assert ids.tolist() == [[0, 2], [0, 2], [0, 3], [0, 3], [2, 1]]


def test_group_limited_router_on_the_power_law_rows():
    # DeepSeek-V3's layer, 1024 tokens.  Each token keeps 8 experts, so at EP 1 the rows stay N k
    # with or without the router.  At EP 32 rank 0 holds experts 0-7 of group 0, the group the
    # router's ties go to and where tokens whose marked experts fall short take experts 0-3: it runs
    # more rows than without the router (TensorRT-LLM's table keeps the constructed experts)
    n = 4
    deepseek = dict(hidden=[7168] * n, inter=[2048] * n, experts=[256] * n, topk=[8] * n,
                    distribution=["power_law_1.01"] * n)
    eps = [1, 2, 8, 32]
    grouped, _, _ = _rows([1024] * n, ep=eps, stack=["sglang"] * n, **deepseek)
    plain, _, _ = _rows([1024] * n, ep=eps, stack=["trtllm"] * n, **deepseek)
    assert grouped[0] == plain[0] == 1024 * 8
    assert grouped[3] > plain[3]
    assert (grouped <= 1024 * 256 / np.array(eps)).all()  # at most N on each of the E / EP experts


def test_sglang_raw_triton_path_masks_the_remote_slots_in_its_gemms_not_its_buffers():
    # 128 experts, top 8, 32 tokens, balanced (stride 16): at EP 8 rank 0 holds experts 0-15 and every
    # token has exactly one slot there (token t < 16 on expert t, token 16 + j on expert j): 32 rows
    # on 16 experts, two each, for every implementation.  SGLang's raw Triton path is handed all 32
    # tokens with their 8 slots, the 7 remote ones masked: its activation buffers carry 32 x 8 = 256
    # slots; its FlashInfer kernels and TensorRT-LLM's carry their 32 rows.  The 32 tokens' slots
    # (t + 16 i mod 128) reach all 128 experts: the masked path launches blocks for the 112 remote
    # ones, the others for none
    kw = dict(experts=[128] * 3, topk=[8] * 3, ep=[8] * 3, distribution=["balanced"] * 3,
              hidden=[2048] * 3, inter=[768] * 3)
    rows, touched, pad, slots, remote = _rank([32] * 3, stack=["sglang", "sglang", "trtllm"],
                                      variant=["sglang_fused_moe_triton", "sglang_flashinfer_trtllm_moe",
                                               "moe_torch_flow_cutlass"], **kw)
    assert list(rows) == [32, 32, 32] and list(touched) == [16, 16, 16]
    assert list(pad) == [16 * 64] * 3  # one 64-row tile per touched expert
    assert list(slots) == [256, 32, 32]
    assert list(remote) == [112, 0, 0]
    # at EP 1 nothing is masked: 256 rows, 256 slots
    one = _rank([32], stack=["sglang"], variant=["sglang_fused_moe_triton"],
                **{k: v[:1] for k, v in kw.items() if k != "ep"}, ep=[1])
    assert (one[0][0], one[3][0], one[4][0]) == (256, 256, 0)
    # power-law rows at EP 4: the rank's own rows are its draw's, the buffers every slot (64 x 8)
    pl = _rank([64], stack=["sglang"], variant=["sglang_fused_moe_triton"], experts=[128], topk=[8],
               ep=[4], distribution=["power_law_1.01"], hidden=[2048], inter=[768])
    assert pl[0][0] < 512 and pl[3][0] == 512 and 0 < pl[4][0] <= 96
