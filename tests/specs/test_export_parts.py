"""The PCIe systems an export-restricted buyer can get (RTX PRO 6000 Server, RTX 6000D) beside the
NVLink ones: their figures by hand from the cited part data, the PCIe link type in the all-to-all
and all-reduce terms, and the region attribute the fleet plan filters on."""

from __future__ import annotations

import pytest

from planner import Scenario
from planner.economics.options import by_region
from planner.errors import SpecError
from planner.physics.step import decode_step
from planner.specs.hardware import parse_hardware
from planner.specs.reading import parse_yaml
from planner.specs.registry import bundled_hardware_text, hardware_names, load_hardware


def test_rtx_pro_6000_figures_from_bus_width_data_rate_sms_and_clock():
    hw = load_hardware("rtx-pro-6000-server")
    # 512-bit bus / 8 bits per byte x 2 transfers per clock x 12,481 MHz = 1,597.6 GB/s
    assert hw.hbm_bandwidth == pytest.approx(512 / 8 * 2 * 12481e6, rel=5e-4)
    # 188 SMs x dense FLOP per SM per clock (FP4 4,096, FP8 2,048, BF16 1,024) x 2.43 GHz
    for dtype, per_clock in (("fp4", 4096), ("fp8", 2048), ("bf16", 1024)):
        assert hw.flops[dtype] == pytest.approx(188 * per_clock * 2.43e9, rel=1e-4)
    assert hw.flops["fp8"] == pytest.approx(935.6e12, rel=1e-4)
    for key, cited in (("gpu.hbm_bandwidth", "512-bit"), ("gpu.hbm_bandwidth", "12,481 MHz"),
                       ("gpu.dense_flops.fp8", "188 SMs"), ("gpu.dense_flops.fp8", "2,430 MHz")):
        assert cited in hw.sources[key] or cited in _note(hw, key), (key, cited)
    # PCIe Gen5 x16: 32 GT/s x 16 lanes x 128/130 / 8 bits per direction
    assert hw.su_bandwidth == pytest.approx(32e9 * 16 * 128 / 130 / 8, rel=1e-3)
    assert hw.su_link == "pcie" and not hw.in_switch_reduction and hw.su_switch_gpus == 2


def test_rtx_6000d_figures_from_bus_width_data_rate_sms_and_clock():
    hw = load_hardware("rtx-6000d-server")
    # 448-bit bus / 8 x 2 x 12,481 MHz = 1,397.9 GB/s
    assert hw.hbm_bandwidth == pytest.approx(448 / 8 * 2 * 12481e6, rel=5e-5)
    assert "448-bit" in hw.sources["gpu.hbm_bandwidth"] and "12481 MHz" in hw.sources["gpu.hbm_bandwidth"]
    # the value is the export-capped estimate: TPP = dense TFLOP/s x bits < 4,800
    assert hw.flops["fp8"] == pytest.approx(4800e12 / 8) and hw.flops["bf16"] == pytest.approx(4800e12 / 16)
    assert hw.flops["fp4"] == pytest.approx(4800e12 / 4)
    # the full per-SM rate in the note: 156 SMs x 2,048 x 2.43 GHz = 776.4 TFLOP/s
    assert round(156 * 2048 * 2.43e9 / 1e12) == 776 and "776 TFLOP/s" in _note(hw, "gpu.dense_flops.fp8")
    # 28 of the RTX PRO 6000's 32 GDDR7 chips
    assert hw.hbm_capacity == pytest.approx(load_hardware("rtx-pro-6000-server").hbm_capacity * 28 / 32,
                                            rel=1e-5)


def _note(hw, key: str) -> str:
    import yaml

    doc = yaml.safe_load(bundled_hardware_text(hw.name))
    for part in key.split("."):
        doc = doc[part]
    return doc.get("note", "")


def test_ep8_pcie_all_to_all_of_one_decode_step_by_hand():
    # Kimi K2 Thinking, 8 RTX PRO 6000 Server, attention TP 8, EP 8, 64 sequences: each GPU sends
    # its 64 / 8 = 8 tokens.  A token's 8 experts reach 7 x (1 - (7/8)^8) = 4.5947 other GPUs;
    # INT4 W4A16 experts multiply in BF16, so 2 B per element: 8 x 4.5947 x 7168 x 2 = 526,961 B.
    # 6 of the 7 peers sit under other PCIe switches (2 GPUs per switch): 6/7 of the bytes cross
    # the 31.5 GB/s host bridge, at its fitted fraction 0.6809 (NCCL's rings that leave a switch),
    # slower than the GPU's own 63 GB/s link: max(1 / 63e9, (6/7) / (0.6809 x 31.5e9)) = 1 / 25.02e9
    # s per byte.  At the measured alltoall's 0.7353 of that (18.4 GB/s) and 9.5 us per phase:
    # 526,961 / (0.7353 x 25.02e9) + 9.5e-6 = 38.14 us.
    r = decode_step(Scenario("kimi-k2-thinking", "rtx-pro-6000-server", gpus=8, tp_attn=8, ep=8, mtp=None),
                    batch=64, context=2048)
    volume = 8 * 7 * (1 - (7 / 8) ** 8) * 7168 * 2
    assert volume == pytest.approx(526_961, abs=1)
    per_byte = max(1 / 63e9, (6 / 7) / (0.6809 * 31.5e9))
    assert 1 / per_byte == pytest.approx(25.02e9, rel=1e-3)
    assert r.terms["dispatch"] == pytest.approx(volume * per_byte / 0.7353 + 9.5e-6, rel=1e-9)
    assert r.terms["dispatch"] == pytest.approx(38.14e-6, rel=1e-3)
    assert r.terms["combine"] == pytest.approx(r.terms["dispatch"], rel=1e-12)  # BF16 both ways
    # the same node over NVSwitch would have no bridge: the GPU's own link alone
    nv = load_hardware("rtx-pro-6000-server").replace(su_link="nvlink", su_switch_gpus=8,
                                                       su_bridge_bandwidth=63e9)
    r_nv = decode_step(Scenario("kimi-k2-thinking", nv, gpus=8, tp_attn=8, ep=8, mtp=None), batch=64,
                       context=2048)
    assert r_nv.terms["dispatch"] == pytest.approx(volume / (0.7353 * 63e9) + 9.5e-6, rel=1e-9)


def test_pcie_all_reduce_is_nccls_ring_without_in_switch_reduction():
    # the attention-output all-reduce over TP 8: 64 tokens x 7168 x 2 B = 917,504 B.  Over PCIe
    # the custom kernels span 2 GPUs at most (vLLM's rule, the system having no fitted stack), so
    # 8 GPUs go through NCCL's fitted ring: 2 x 7/8 of the bytes (PCIe switches do not reduce) at
    # 0.586 of the slower of the 63 GB/s link and the ring's one hop per switch leaving it, (1/2) /
    # (0.6809 x 31.5 GB/s): 1 / 42.90 GB/s, 63.87 us; on the fastest protocol: LL 14 x 1.567 us +
    # twice that = 149.7 us, LL128 14 x 4.784 + 16/15 of it = 135.1 us, Simple 14 x 5.133 + 63.87
    # = 135.7 us: LL128, plus t_n0 3.196 us = 138.3 us (measured at 1 MiB over 8: 166.6 us)
    r = decode_step(Scenario("kimi-k2-thinking", "rtx-pro-6000-server", gpus=8, tp_attn=8, ep=8, mtp=None),
                    batch=64, context=2048)
    m = 64 * 7168 * 2
    per_byte = max(1 / 63e9, 0.5 / (0.6809 * 31.5e9))
    assert 1 / per_byte == pytest.approx(42.90e9, rel=1e-3)
    volume = 1.75 * m * per_byte / 0.586
    assert r.terms["allreduce_attn"] == pytest.approx(3.196e-6 + 14 * 4.784e-6 + 16 / 15 * volume, rel=1e-9)
    assert r.terms["allreduce_attn"] == pytest.approx(138.3e-6, rel=1e-3)
    # over TP 2 the two GPUs share a switch and vLLM's own kernel runs, priced over PCIe as a ring
    # of 2 at its fitted constants: 2 x 2.153 us + m at 0.6011 x 63 GB/s (2 x (2 - 1)/2 m = m)
    r2 = decode_step(Scenario("kimi-k2-thinking", "rtx-pro-6000-server", gpus=8, tp_attn=2, ep=8, mtp=None),
                     batch=64, context=2048)
    m2 = 64 / 4 * 7168 * 2  # attention DP 4: 16 sequences per rank
    assert r2.terms["allreduce_attn"] == pytest.approx(2 * 2.153e-6 + m2 / (0.6011 * 63e9), rel=1e-9)
    # the same server on NVLink (no stack fitted: vLLM's kernel rule, spanning the domain): 917,504 B
    # over 8 is at least 256 KiB, so two-shot: the same 2 x 7/8 volume in two passes of its own kernel
    nv = load_hardware("rtx-pro-6000-server").replace(su_link="nvlink", su_switch_gpus=8)
    r_nv = decode_step(Scenario("kimi-k2-thinking", nv, gpus=8, tp_attn=8, ep=8, mtp=None), batch=64,
                       context=2048)
    assert r_nv.terms["allreduce_attn"] == pytest.approx(1.75 * m / (0.6011 * 63e9) + 2 * 2.153e-6, rel=1e-9)


def test_a_changed_nvswitch_domain_stays_one_switch():
    # counterfactuals (compare --explain) that give an 8-GPU HGX a 72-GPU domain or a faster link:
    # an NVSwitch domain is one switch, so no peer traffic crosses a host bridge (n_sw = N_su,
    # B_hb = B_su); a PCIe server keeps its switches
    h = load_hardware("hgx-h200").replace(domain_size=72, gpus_per_system=72, su_bandwidth=900e9)
    assert (h.su_switch_gpus, h.su_bridge_bandwidth) == (72, 900e9)
    pcie = load_hardware("rtx-pro-6000-server")
    p = pcie.replace(su_bandwidth=2 * pcie.su_bandwidth)
    assert (p.su_switch_gpus, p.su_bridge_bandwidth) == (pcie.su_switch_gpus, pcie.su_bridge_bandwidth)


def _spec_text(name: str) -> str:
    return bundled_hardware_text(name)


def _without(text: str, key: str) -> str:
    """``text`` without the fact ``key:`` of a top-level section (its line, and the lines its
    source and note continue on)."""
    out, skip = [], False
    for ln in text.splitlines():
        if ln.startswith(f"  {key}:"):
            skip = True
            continue
        if skip and ln.startswith("    "):
            continue
        skip = False
        out.append(ln)
    return "\n".join(out)


def test_regions_parse_and_old_specs_without_them_still_load():
    assert load_hardware("rtx-6000d-server").regions == ("china",)
    assert load_hardware("hgx-h20").sold_in("china") and not load_hardware("gb200-nvl72").sold_in("china")
    text = _without(_spec_text("hgx-h200"), "regions")
    old = parse_hardware(parse_yaml(text, "old.yaml"), "old.yaml")
    assert old.regions == () and old.sold_in("china") and old.su_link == "nvlink"
    assert old.su_switch_gpus == old.domain_size and old.su_bridge_bandwidth == old.su_bandwidth
    bad = _spec_text("hgx-h20").replace("value: [china]", "value: [mars]")
    with pytest.raises(SpecError, match=r"system\.regions\.value: a list of regions among global, china"):
        parse_hardware(parse_yaml(bad, "x.yaml"), "x.yaml")


def test_a_pcie_link_needs_its_switch_and_bridge():
    text = _without(_spec_text("rtx-6000d-server"), "bridge_bandwidth")
    with pytest.raises(SpecError, match="gpus_per_switch and bridge_bandwidth on a pcie scale-up link"):
        parse_hardware(parse_yaml(text, "x.yaml"), "x.yaml")


def test_the_fleet_plan_keeps_what_may_be_sold_in_the_region():
    hws = [load_hardware(n) for n in ("rtx-6000d-server", "hgx-h20", "rtx-pro-6000-server", "gb200-nvl72")]
    keep, out = by_region(hws, "china")
    assert [h.name for h in keep] == ["rtx-6000d-server", "hgx-h20"]
    assert out == ["rtx-pro-6000-server", "gb200-nvl72"]
    assert by_region(hws, None) == (hws, [])
    with pytest.raises(SpecError, match="a system sold in china"):
        by_region(hws[2:], "china")
    assert all(load_hardware(n).regions for n in hardware_names())  # every bundled system says


def test_nvlink_fits_leave_the_pcie_systems_alone():
    from planner.truth.calibrate import family_hardware

    fam = family_hardware()
    assert "hgx-b200" in fam and not {"rtx-pro-6000-server", "rtx-6000d-server"} & set(fam)
    for n in ("rtx-pro-6000-server", "rtx-6000d-server"):
        hw = load_hardware(n)
        assert hw.stacks == {} and hw.efficiency.compute == load_hardware("hgx-b200").without_stack(
        ).efficiency.compute
