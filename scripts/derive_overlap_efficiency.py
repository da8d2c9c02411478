"""Derive the default overlap efficiency eta_o from the one published two-micro-batch decode.

The published point (LMSYS blog 2025-05-05, decode table: DeepSeek-V3 on 72 H100, EP72, DP
attention, two-batch overlap, batch 256 per GPU, context 2000, 22,282 output tokens/s per node)
is evaluated with the H100 SGLang efficiencies fitted to the measured runs (which ran without
overlap) at eta_o = 0 and 1.  The step is linear in eta_o, so the value that reproduces the
measured TPOT follows by interpolation.  Prints eta_o and the three step times.

    python scripts/derive_overlap_efficiency.py
"""

from __future__ import annotations

from planner import Scenario
from planner.physics.step import decode_step
from planner.specs.registry import load_hardware

GPUS, BATCH_PER_GPU, CONTEXT = 72, 256, 2000
TPOT_MEASURED = 8 * BATCH_PER_GPU / 22_282  # s: per-node output rate / sequences per node


def step(eta_o: float, overlap: bool = True) -> float:
    hw = load_hardware("hgx-h100@sglang").replace(efficiency={"overlap": eta_o})
    r = decode_step(Scenario("deepseek-v3", hw, gpus=GPUS, weights="fp8", kv="bf16", overlap=overlap),
                    batch=BATCH_PER_GPU * GPUS, context=CONTEXT)
    return r.step_time


def derive() -> tuple[float, float, float, float]:
    """eta_o (clamped to [0, 1]) and the step times at eta_o = 0, 1 and without overlap (s)."""
    t0, t1, t_off = step(0.0), step(1.0), step(0.0, overlap=False)
    return min(max((t0 - TPOT_MEASURED) / (t0 - t1), 0.0), 1.0), t0, t1, t_off


def main() -> None:
    eta, t0, t1, t_off = derive()
    print(f"measured TPOT {TPOT_MEASURED * 1e3:.1f} ms; model without overlap {t_off * 1e3:.1f} ms, "
          f"overlap with eta_o = 0 {t0 * 1e3:.1f} ms, with eta_o = 1 {t1 * 1e3:.1f} ms")
    print(f"eta_o = {eta:.3f}")


if __name__ == "__main__":
    main()
