"""A scale-up domain that is a torus of point-to-point links (TPU ICI) rather than a switch: the
all-to-all's seconds per byte derived by hand, never below a switched domain of the same per-chip
bandwidth; the spec fields that declare it."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from planner.errors import SpecError
from planner.physics import equations as eq
from planner.physics.step import link_symbols
from planner.physics.symbols import REGISTRY
from planner.specs.hardware import parse_hardware
from planner.specs.registry import bundled_hardware_text, load_hardware


def _a2a_per_byte(G: float, N_su: float, K_y: float, K_z: float, n_lk: float, B_su: float,
                  torus: bool = True) -> float:
    """seconds per byte a chip sends in a uniform all-to-all (su_seconds_per_byte) at these values."""
    S = {n: REGISTRY[n].symbol for n in ("G", "N_su", "K_y", "K_z", "n_lk", "B_su", "x_tor", "n_sw",
                                          "B_hb", "eta_hb")}
    expr = eq.su_seconds_per_byte(0)
    vals = {S["G"]: G, S["N_su"]: N_su, S["K_y"]: K_y, S["K_z"]: K_z, S["n_lk"]: n_lk, S["B_su"]: B_su,
            S["x_tor"]: 1.0 if torus else 0.0, S["n_sw"]: N_su, S["B_hb"]: B_su, S["eta_hb"]: 1.0}
    return float(expr.subs(vals))


def test_ring_of_eight_by_hand():
    # a chip sends m to each of 7 others at distances 1, 1, 2, 2, 3, 3, 4: 16 m byte-hops, carried
    # by its 2 links (one each way), each B per direction: 8 m / B for 7 m sent
    B = 100e9
    per_byte = _a2a_per_byte(8, 8, 1, 1, 2, 2 * B)
    assert per_byte == pytest.approx(8 / 7 / B)
    # a switch of the same per-chip bandwidth (2 B): 1 / (2 B), 2.29x faster
    assert _a2a_per_byte(8, 8, 1, 1, 2, 2 * B, torus=False) == pytest.approx(1 / (2 * B))


def test_cube_of_64_by_hand():
    # 4 x 4 x 4: along each dimension a chip's 63 destinations make 16 x floor(16 / 4) = 64 hops, over
    # its 2 links of that dimension; the three dimensions run at once
    B = 100e9
    per_byte = _a2a_per_byte(64, 64, 4, 4, 6, 6 * B)
    assert per_byte == pytest.approx(64 / 63 / (2 * B))
    # the mean hop count, 3 x 64 / 63 = 3.05, is how much slower than a switch at 6 B per chip
    assert per_byte * 6 * B == pytest.approx(3 * 64 / 63)


def test_an_instance_smaller_than_the_slice_fills_z_then_y():
    # 16 chips of a 4 x 4 x 4 slice: a 1 x 4 x 4 sub-torus; its two dimensions of 4 carry
    # (16 / 4) x 4 = 16 hops per 15 bytes each
    B = 100e9
    assert _a2a_per_byte(16, 64, 4, 4, 6, 6 * B) == pytest.approx(16 / 15 / (2 * B))


@pytest.mark.parametrize("shape", [(2, 1, 1), (4, 1, 1), (8, 1, 1), (2, 2, 2), (4, 4, 4), (8, 8, 4),
                                   (4, 4, 16)])
def test_torus_never_beats_a_switch_of_the_same_per_chip_bandwidth(shape):
    P = shape[0] * shape[1] * shape[2]
    links = 2 * sum(k > 1 for k in shape)
    for G in sorted({2, 4, 8, P}):
        if G > P:
            continue
        torus = _a2a_per_byte(G, P, shape[1], shape[2], links, 1e12)
        switched = _a2a_per_byte(G, P, shape[1], shape[2], links, 1e12, torus=False)
        assert torus >= switched * (1 - 1e-12)


def test_ring_all_reduce_is_one_hop_on_a_torus():
    # neighbour traffic: the all-reduce's ring pays no hop factor
    S = REGISTRY
    expr = eq.su_seconds_per_byte(0, hops=False)
    assert not ({S["x_tor"].symbol, S["K_y"].symbol} & expr.free_symbols)


def _spec(**scale_up):
    doc = yaml.safe_load(bundled_hardware_text("hgx-h200"))
    doc["scale_up"].update(scale_up)
    return doc


def test_spec_declares_a_torus():
    hw = parse_hardware(_spec(topology="torus", domain_size={"value": 8, "source": "test"},
                              torus_shape={"value": [2, 2, 2], "source": "test"},
                              links_per_chip={"value": 6, "source": "test"},
                              bandwidth={"value": "100 GB/s", "direction": "per_direction",
                                         "source": "test"}),
                        "t.yaml")
    assert hw.su_topology == "torus" and hw.torus_shape == (2, 2, 2) and hw.links_per_chip == 6
    assert hw.su_bandwidth == pytest.approx(600e9)   # the chip's: 6 links of 100 GB/s
    assert not hw.in_switch_reduction
    v = link_symbols(hw)
    assert (v["x_tor"], v["K_y"], v["K_z"], v["n_lk"]) == (1.0, 2.0, 2.0, 6.0)
    assert link_symbols(load_hardware("hgx-h200"))["x_tor"] == 0.0


def _torus(shape, links):
    return dict(topology="torus", torus_shape={"value": shape, "source": "t"},
                links_per_chip={"value": links, "source": "t"})


@pytest.mark.parametrize(("edit", "message"), [
    (_torus([4, 4], 4), r"scale_up\.torus_shape: a shape of scale_up\.domain_size \(8\) chips, got 4 x 4"),
    (_torus([2, 4], 6), r"scale_up\.links_per_chip: 2 per dimension of the torus shape \(4\), got 6"),
    (_torus("4x2", 4), r"scale_up\.torus_shape\.value: 1 to 3 whole ring sizes"),
    (dict(torus_shape={"value": [8], "source": "t"}), r"scale_up\.torus_shape: topology: torus with it"),
    (dict(topology="mesh"), r"scale_up\.topology: one of switched, torus"),
])
def test_bad_torus_specs_are_one_line_errors(edit, message):
    with pytest.raises(SpecError, match=message):
        parse_hardware(_spec(**edit), "t.yaml")


def test_counterfactual_keeps_the_torus():
    hw = parse_hardware(_spec(topology="torus", torus_shape={"value": [8], "source": "t"},
                              links_per_chip={"value": 2, "source": "t"}), "t.yaml")
    assert dataclasses.replace(hw, hbm_bandwidth=1e12).su_topology == "torus"
