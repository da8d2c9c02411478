"""Unit parsing: decimal prefixes, bits vs bytes, dimension checks (hand-computed values)."""

import math

import pytest

from planner.errors import SpecError
from planner.specs.units import parse_quantity


@pytest.mark.parametrize(
    ("text", "dim", "expected"),
    [
        ("4.8 TB/s", "bandwidth", 4.8e12),
        ("4800 GB/s", "bandwidth", 4.8e12),
        ("400 Gb/s", "bandwidth", 50e9),  # 400e9 bit/s / 8
        ("800 Gbps", "bandwidth", 100e9),
        ("141 GB", "bytes", 141e9),
        ("80 GiB", "bytes", 80 * 2**30),
        ("10 PFLOP/s", "flops", 1e16),
        ("989 TFLOPS", "flops", 989e12),
        ("5 us", "time", 5e-6),
        ("1.2 kW", "power", 1200.0),
        ("5.41 USD/h", "usd_per_hour", 5.41),
    ],
)
def test_parse(text, dim, expected):
    assert math.isclose(parse_quantity(text, dim), expected, rel_tol=1e-12)


@pytest.mark.parametrize("text", ["4.8 TB", "4.8 TFLOP/s", "fast", "5", "-1 GB/s", "0 GB/s", "nan GB/s"])
def test_bad_bandwidth(text):
    with pytest.raises(SpecError, match="f.yaml: gpu.hbm_bandwidth: "):
        parse_quantity(text, "bandwidth", "f.yaml", "gpu.hbm_bandwidth")


@pytest.mark.parametrize(("text", "dim"), [("5,408 USD/h", "usd_per_hour"), ("4,8 TB/s", "bandwidth"),
                                           ("1,000 W", "power"), ("3,000,000 USD", "usd"),
                                           ("141,5 GB", "bytes")])
def test_a_comma_inside_a_number_is_refused(text, dim):
    # "5,408 USD/h" is 5.408 with a decimal comma and 5408 with a thousands separator: neither is
    # guessed (it was read as 5408 USD per GPU-hour, a thousand times the price)
    with pytest.raises(SpecError, match="f.yaml: system.x: .*a number without thousands or decimal commas"):
        parse_quantity(text, dim, "f.yaml", "system.x")
