"""Single-operator laws, in sympy, for checking the step model against measured kernels.

Each law is built from the step model's own pieces (:func:`planner.physics.equations.roofline`,
:func:`planner.physics.equations.allreduce_time`), so a kernel checked here is priced exactly as
the step model prices it; only the shape symbols are new.  ``OPERATORS`` maps a name to its
expression; :func:`compile_operator` lambdifies one (sympy is imported on first use).

- ``gemm``: an ``m x k`` by ``k x n`` matrix product: ``F = 2 m n k`` FLOPs, and HBM bytes
  ``m k b_in + k n b_w + m n b_out`` (activations in, weights, output), one kernel: the step
  model's roofline.  In bound mode (peaks, no latency) it is the lower bound of a cold kernel.
- ``gemm_bound``: the lower bound of a kernel timed in a loop with its operands left in L2 from
  the previous run: ``max(F / P, max(m k b_in + k n b_w - C_L2, 0) / B_hbm)``; only the input
  bytes the L2 cache (``C_L2``) cannot already hold must come from HBM, and the output may stay
  in L2 when the kernel ends.  It equals the bound-mode roofline's compute side where the
  operands fit in L2, and approaches its memory side where they are much larger.
- ``gemm_law``: the GEMM law fitted to measured kernels (``moe-planner calibrate --kernels``):
  ``max(F_pad / (eta_g P), M / (eta_gm B_hbm)) + m k b_q / (eta_q B_hbm) + t_g0``, with
  ``F_pad = 2 ceil(m / t_m) t_m n k`` (tile quantization: rows padded to the MMA tile height
  ``t_m``), the activation cast to the GEMM's input dtype (``b_q`` bytes per element: BF16 read,
  FP8 or FP4 written; 0 for a BF16 GEMM) as a second HBM pass at its own bandwidth fraction,
  and a per-kernel floor ``t_g0`` (launch, prologue, the HBM latency before the stream ramps).
- ``allreduce``: ``x`` bytes over ``n_g`` GPUs (two-shot inside a domain, hierarchical across).
- ``a2a``: one dispatch or combine phase of ``tokens`` per GPU inside one domain, to the
  ``(EP - 1)(1 - (1 - 1/EP)^k)`` other ranks a token's experts reach, at the GPU's link or, over
  PCIe, the host bridge that traffic to peers under other switches crosses.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import sympy as sp

from planner.physics import equations as eq
from planner.physics.symbols import REGISTRY

m_g = sp.Symbol("m", positive=True)        #: GEMM rows (tokens)
n_g = sp.Symbol("n", positive=True)        #: GEMM output columns
k_g = sp.Symbol("k_gemm", positive=True)   #: GEMM reduction length
b_in = sp.Symbol("b_in", positive=True)    #: bytes per input activation element
b_w = sp.Symbol("b_w", positive=True)      #: bytes per weight element
b_out = sp.Symbol("b_out", positive=True)  #: bytes per output element
P_g = sp.Symbol("P", positive=True)        #: dense peak of the GEMM's compute dtype, FLOP/s
x_bytes = sp.Symbol("x", positive=True)    #: all-reduce message, bytes per GPU
n_ar = sp.Symbol("n_g", positive=True)     #: GPUs in the all-reduce
t_a2a = sp.Symbol("tokens", positive=True)  #: tokens each GPU sends in an all-to-all phase
b_ph = sp.Symbol("b_phase", positive=True)  #: bytes per element of that phase
eta_g = sp.Symbol("eta_g", positive=True)   #: fitted fraction of the dense peak a GEMM reaches
eta_gm = sp.Symbol("eta_gm", positive=True)  #: fitted fraction of HBM bandwidth a GEMM streams at
eta_q = sp.Symbol("eta_q", positive=True)   #: fitted HBM fraction of the activation cast pass
b_q = sp.Symbol("b_q", nonnegative=True)    #: bytes per element of that pass (0: none)
t_g0 = sp.Symbol("t_g0", nonnegative=True)  #: fitted per-kernel floor of a GEMM, s
C_l2 = sp.Symbol("C_L2", positive=True)     #: L2 cache capacity, B

OPERATOR_SYMBOLS = {
    "m": (m_g, "GEMM rows (tokens)", "1"), "n": (n_g, "GEMM output columns", "1"),
    "k_gemm": (k_g, "GEMM reduction length", "1"),
    "b_in": (b_in, "bytes per input activation element", "B"), "b_w": (b_w, "bytes per weight", "B"),
    "b_out": (b_out, "bytes per output element", "B"),
    "P": (P_g, "dense peak of the compute dtype", "FLOP/s"),
    "x": (x_bytes, "all-reduce message per GPU", "B"), "n_g": (n_ar, "GPUs in the all-reduce", "1"),
    "tokens": (t_a2a, "tokens each GPU sends in an all-to-all phase", "token"),
    "b_phase": (b_ph, "bytes per element of the phase (dispatch or combine)", "B"),
    "eta_g": (eta_g, "fraction of the dense peak a GEMM reaches (fitted per GPU, stack, dtype)", "1"),
    "eta_gm": (eta_gm, "fraction of HBM bandwidth a GEMM streams its operands at (fitted)", "1"),
    "eta_q": (eta_q, "fraction of HBM bandwidth of the activation cast before the GEMM (fitted)", "1"),
    "b_q": (b_q, "bytes per activation element of that cast (BF16 read + input dtype written; 0: none)",
            "B"),
    "t_g0": (t_g0, "per-kernel floor of a GEMM: launch, prologue, HBM latency (fitted)", "s"),
    "C_L2": (C_l2, "L2 cache capacity", "B"),
}

F_gemm = 2 * m_g * n_g * k_g
M_gemm = m_g * k_g * b_in + k_g * n_g * b_w + m_g * n_g * b_out
M_in = m_g * k_g * b_in + k_g * n_g * b_w
OPERATORS: dict[str, sp.Expr] = {
    "gemm": eq.roofline(F_gemm, M_gemm, P_g),
    "gemm_bound": eq._max(F_gemm / P_g, eq._max(M_in - C_l2, 0) / eq.B_hbm),
    # the step model's own GEMM law, on one kernel of this shape
    "gemm_law": eq.gemm_law(F_gemm, M_gemm, P_g, m_g, k_g,
                            {"eta_g": eta_g, "eta_gm": eta_gm, "eta_q": eta_q, "b_q": b_q, "t_g0": t_g0}),
    "allreduce": eq.allreduce_time(x_bytes, n_ar),
    # one phase inside a domain: every other EP rank a token's k experts reach, uniform routing
    # (the instance is the EP group, inside one domain: G = EP)
    "a2a": eq.a_a2a + eq.a2a_volume(eq.n_dest, b_ph, t_a2a)
    * eq.su_seconds_per_byte(eq.at(eq.phi_hb, {eq.G: eq.EP})) / eq.eta_a2a,
}


def arguments(name: str) -> tuple[str, ...]:
    """The argument names of operator ``name``, in a fixed order (registry names for the step
    model's symbols)."""
    names = {v.symbol: k for k, v in REGISTRY.items()} | {v[0]: k for k, v in OPERATOR_SYMBOLS.items()}
    return tuple(sorted(names[s] for s in OPERATORS[name].free_symbols))


@cache
def compile_operator(name: str) -> Any:
    """A numpy function of operator ``name`` taking keyword arguments named as :func:`arguments`."""
    from planner.physics.codegen import _Printer

    args = arguments(name)
    by_name = {k: v.symbol for k, v in REGISTRY.items()} | {k: v[0] for k, v in OPERATOR_SYMBOLS.items()}
    fn = sp.lambdify([by_name[a] for a in args], OPERATORS[name], modules="numpy", printer=_Printer)

    def call(**values: Any) -> Any:
        return fn(*(values[a] for a in args))

    return call
