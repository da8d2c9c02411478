"""The realistic-mode parameters fitted to the measured runs, per GPU family and serving stack.

A *cell* is one GPU family (``hopper``: H100, H200; ``blackwell``: B200, B300, GB300) and one
serving stack (TensorRT-LLM, SGLang, vLLM).  In each cell the parameters of :data:`PARAMETERS`
are fitted by ``scipy.optimize.least_squares`` to ``log(predicted / measured)`` decode TPOT of
the cell's scored runs (:func:`planner.truth.runs.score_runs`: cleaned, at each run's own layout
and batch), in log space with bounds.  The covariance is ``s^2 (J^T J)^-1`` (J the Jacobian in
log space, ``s^2`` the residual variance), so the standard error of a log-parameter is its
relative standard error.  Runs of one configuration at several concurrencies are not
independent, so these errors are a lower bound on the true uncertainty; the leave-one-system-out
and leave-one-model-out errors are the honest measure of what the fit knows.

The per-step overhead and the share of the all-to-all kernels' floors a step pays are fitted once
per family and held at that value in every cell (:data:`FAMILY_ONLY`); a stack's host time per
sequence or network fraction that the runs of only one model pin is held, not fitted
(:data:`MODEL_SPREAD`).  A parameter the cell's runs cannot
pin (relative standard error above :data:`REL_SE_MAX`, or a singular Jacobian) is merged: held
at the value that every stack of the family pins together (:func:`fit_family`, one set of
parameters for all the family's runs), or at its spec value where that fit cannot pin it
either.  One pushed to a bound of its physical range is held there, and the cell refitted;
every held parameter is named, with why.  The leave-one-out refits redo the family fit on
their own training runs.  ``moe-planner calibrate --runs --write`` puts the
values into each hardware spec's ``stacks:`` block, which realistic mode then uses.

Nothing here reads the withheld rows: the fit sees only the file it is given (the bundled
measured runs by default).
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from planner.cells import Executor, run_cells
from planner.errors import SpecError
from planner.physics.step import pass_kernels
from planner.specs.hardware import COMM_LAW_FIELDS, FAMILY_REFERENCE, KERNEL_FITTED_STACK_FIELDS
from planner.specs.reading import yaml_number
from planner.truth.runs import GroupInputs, RunsScore, score_runs, served_ttft


@dataclass(frozen=True)
class RunParameter:
    """One fitted quantity: sets ``fields`` of a system's efficiency."""

    name: str
    fields: tuple[str, ...]
    lo: float
    hi: float
    unit: str = ""  #: "" for a fraction, "s" for a time
    shown_in: str = "us"  #: the unit a time is written in ("us" or "ms")
    #: a time per running sequence: where its spec value lies below the range (none), the search
    #: starts where it just binds, 5% above the smallest measured step per sequence (a cost that
    #: binds only as a max() has no gradient where it does not)
    per_sequence: bool = False

    def shown(self, v: float, digits: int = 4) -> str:
        """A time as written in the specs and tables (``"2.52 us"``), a fraction as a number."""
        if self.unit != "s":
            return yaml_number(v) if digits >= 4 else f"{v:.{digits}g}"
        return f"{v * (1e6 if self.shown_in == 'us' else 1e3):.{digits}g} {self.shown_in}"


PARAMETERS: tuple[RunParameter, ...] = (
    RunParameter("compute", ("compute",), 0.02, 1.0),
    RunParameter("hbm", ("hbm",), 0.1, 1.0),
    # the scale-out fraction (and the all-to-all's, on a stack whose spec has no a2a_efficiency
    # fitted to kernels); a link moves at least a fifth of its peak in bulk transfers (the measured
    # all-reduce kernels reach 0.38-0.50 of NVLink); a fit pushing it below that says fixed costs
    # are missing from the equations: held at the bound, and said
    RunParameter("network", ("scale_up", "scale_out"), 0.2, 1.0),
    RunParameter("kernel_overhead", ("kernel_overhead",), 0.05e-6, 300e-6, "s"),
    # the per-step host cost not hidden behind the GPU (sampling, scheduling): from 1 us (none) to 10 ms
    RunParameter("step_overhead", ("step_overhead",), 1e-6, 10e-3, "s", "ms"),
    # the host's work per running sequence per step (tau_q), which binds where a step's sequences
    # take the host longer than the GPU; 10 ns (none) to 1 ms
    RunParameter("host_per_sequence", ("host_per_sequence",), 1e-8, 1e-3, "s", per_sequence=True),
    # the share of the all-to-all kernels' isolated floor a serving step's phase pays (1: all of
    # it, as timed alone; 0.01: none)
    RunParameter("floor_share", ("floor_share",), 0.01, 1.0),
    # ... on a scale-up domain that spans hosts (an NVL72 rack's NVLink fabric)
    RunParameter("floor_share_fabric", ("floor_share_fabric",), 0.01, 1.0),
)
#: Fitted once per GPU family (every stack's runs together, :func:`fit_family`) and held at that
#: value in each of the family's cells.  Within one cell the per-step overhead trades with the
#: per-kernel one (a model's kernels per step are nearly fixed); across every model of a family
#: (gpt-oss-120b's 508 kernels a pass against DeepSeek-R1's 1,386) the two part.  Fitted per cell
#: it went to 1 us in three cells, and to 4.7 ms in Hopper SGLang's with the per-kernel cost at
#: its 0.05 us floor.  Per family, Blackwell's runs push it to its 1 us floor (2026 builds, whose
#: schedulers prepare the next step while the GPU runs this one); Hopper's, with the attention and
#: experts at their kernel laws, do not pin it (relative SE 0.33; 1.18 ms, SE 16%, before) and it
#: keeps the spec's 1 ms.  The share of the all-to-all kernels' floors a step pays is the family's
#: too (Blackwell 0.99; Hopper's runs, few of them attention-DP, do not pin it: the spec's 1).
#: Held at 1 ms on both families, the held-out
#: errors were no better (DeepSeek-R1 held out 20% against 18%, bias 0.87 against 0.96) and the
#: Blackwell TensorRT-LLM and vLLM cells' p90 35% and 31% against 28% and 27%.
FAMILY_ONLY = ("step_overhead", "floor_share", "floor_share_fabric")
#: A stack's own: where its runs do not pin it, it keeps its spec value (no host floor), never the
#: value another stack's runs pin in the family fit.  The host's per-request work is its
#: scheduler's code.  Kept only where several models' runs pin it (:data:`MODEL_SPREAD`): Hopper
#: TensorRT-LLM's, 102 us a sequence (Llama-3.1-8B, Qwen3-32B and DeepSeek-R1 runs).  Hopper
#: SGLang's 60 us (Llama-3.1-8B at 450 sequences: 23-29 ms a step at TP 8 and TP 4 alike, where
#: the GPU's work is 9-14 ms) and Blackwell vLLM's 79 us (MiniMax-M2.5 at 250-500 sequences a
#: rank) were one model's each, and are held at 0.
STACK_ONLY = ("host_per_sequence",)
#: Fitted after the TPOT parameters, to log(predicted / measured) TTFT (``ttft_served``: the pass,
#: a per-request latency, the pass's host time per kernel and the queued share of a prompt wave), at
#: the cell's fitted TPOT values.
TTFT_PARAMETERS: tuple[RunParameter, ...] = (
    RunParameter("ttft_request", ("ttft_request",), 1e-4, 10.0, "s", "ms"),
    RunParameter("ttft_wave", ("ttft_wave",), 1e-4, 1.0),
    RunParameter("ttft_host", ("ttft_host",), 1e-9, 1e-3, "s"),
)
#: Scale of the TTFT fit's robust (Cauchy) loss on the log error: a run within about this log
#: error of its prediction counts as in least squares, one far beyond it with a weight falling as
#: its inverse square.  TTFT holds gross artefacts no physics predicts (seconds of TTFT beside
#: 40 ms passes at one concurrency of a sweep, warm-up), which plain least squares lets set the
#: constants; 0.3 is the scatter of the measurements themselves: rows of one configuration
#: measured twice, differing only in OSL (which a pass does not see), differ by a median of 0.24 in
#: log TTFT on TensorRT-LLM and 0.09 on SGLang and vLLM.
TTFT_LOSS_SCALE = 0.3
#: Not fitted: the load imbalance, memory reserve and link latencies keep their spec values.
HELD = ("load_imbalance", "memory_reserve", "link latencies")
#: A parameter whose relative standard error exceeds this is held (at its family's value, or
#: its spec value).
REL_SE_MAX = 0.2
#: A parameter the solver leaves at a bound is held there only if the runs push it: moving it back
#: to the value it would be held at raises the residual sum of squares by more than this many
#: times the residual variance (3.84: the 95% point of chi-squared with one degree of freedom, a
#: likelihood-ratio test).  Otherwise it sits in a flat direction, where it drifted, and is held
#: (at its family's value, or its spec value).
PUSHED_CHI2 = 3.84
#: Fewest runs a cell (or a leave-one-out training set) needs to be fitted.
MIN_RUNS = 20
METHOD = (
    "scipy.optimize.least_squares (trust-region reflective) on log(predicted / measured) decode "
    "TPOT of the scored measured runs of each (GPU family, serving stack) cell, realistic mode at "
    "each run's own layout and batch; parameters in log space with bounds; covariance "
    "s^2 (J^T J)^-1; a parameter with relative standard error above 0.2 is held at the value the "
    "family's runs of every stack pin together (one fit of all of them), else at its spec value"
)


@dataclass
class _Part:
    """The runs of one evaluation group that belong to a cell."""

    inputs: GroupInputs
    measured_s: np.ndarray
    systems: np.ndarray
    models: np.ndarray
    measured_ttft_s: np.ndarray | None = None


def _take(g: GroupInputs, mask: np.ndarray) -> GroupInputs:
    return dataclasses.replace(
        g,
        index=g.index[mask],
        dec=g.dec[mask],
        b=g.b[mask],
        isl=g.isl[mask],
        osl=g.osl[mask],
        agg=g.agg[mask],
        pre=g.pre[mask] if g.pre is not None else None,
        prompts=g.prompts[mask] if g.prompts is not None else None,
    )


def cells(score: RunsScore) -> dict[tuple[str, str], list[_Part]]:
    """The scored runs split by (family, stack), as evaluation parts."""
    rows = score.rows
    out: dict[tuple[str, str], list[_Part]] = {}
    for g in score.inputs:
        sub = rows.loc[g.index]
        ok = sub.scored.to_numpy(bool)
        for stack in sorted(set(sub.backend[ok])):
            m = ok & (sub.backend == stack).to_numpy()
            part = _Part(
                _take(g, m),
                sub.silicon_tpot_ms.to_numpy(float)[m] / 1e3,
                sub.hardware.to_numpy(object)[m],
                sub.model.to_numpy(object)[m],
                sub.silicon_ttft_ms.to_numpy(float)[m] / 1e3,
            )
            out.setdefault((g.hw.family, stack), []).append(part)
    return out


def _with(hw: Any, params: tuple[RunParameter, ...], values: np.ndarray) -> Any:
    eff = {f: float(v) for p, v in zip(params, values, strict=True) for f in p.fields}
    return dataclasses.replace(hw, efficiency=dataclasses.replace(hw.efficiency, **eff))


def _spec_value(hw: Any, p: RunParameter) -> float:
    return float(getattr(hw.efficiency, p.fields[0]))


def _residuals(parts: list[_Part], params: tuple[RunParameter, ...], values: np.ndarray) -> np.ndarray:
    res = []
    for part in parts:
        t = part.inputs.tpot(_with(part.inputs.hw, params, values))
        res.append(np.log(t / part.measured_s))
    r = np.concatenate(res) if res else np.zeros(0)
    return np.where(np.isfinite(r), r, 5.0)  # an infeasible prediction counts as far off


def _errors(parts: list[_Part], params: tuple[RunParameter, ...], values: np.ndarray
            ) -> dict[str, float]:
    r = _residuals(parts, params, values)
    ratio = np.exp(r)
    e = np.abs(ratio - 1)
    return {
        "n": int(len(r)),
        "tpot_median_abs_err": float(np.median(e)) if len(e) else math.nan,
        "tpot_p90_abs_err": float(np.quantile(e, 0.9)) if len(e) else math.nan,
        "tpot_bias": float(np.median(ratio)) if len(e) else math.nan,
    }


@dataclass
class CellFit:
    """The fit of one (family, stack) cell."""

    family: str
    stack: str
    n: int
    values: dict[str, float]           #: every parameter (fitted or fixed), SI units
    rel_se: dict[str, float]           #: fitted parameters only
    corr: list[list[float]]            #: correlation of the fitted log-parameters
    fitted: list[str]
    fixed: dict[str, str]              #: parameter -> why it is held (and at what)
    before: dict[str, float]
    after: dict[str, float]
    systems: list[str] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    ttft: TtftFit | None = None
    #: relative SE of each parameter held at its family's fitted value (the family fit's: a band
    #: draws it from there, independently of the cell's own parameters)
    held_se: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class TtftFit:
    """The TTFT parameters of one cell (see :data:`TTFT_PARAMETERS`)."""

    n: int
    values: dict[str, float]
    rel_se: dict[str, float]
    fitted: list[str]
    fixed: dict[str, str]
    before: dict[str, float]   #: TTFT = the prefill pass alone
    after: dict[str, float]


@dataclass
class _TtftData:
    """The TTFT of a cell's runs with a finite measurement and prediction: the pass, the wave and
    the pass's kernels (``n_kp``) predicted, and the measurement, in s."""

    t: np.ndarray
    w: np.ndarray
    k: np.ndarray
    m: np.ndarray

    def predicted(self, v: dict[str, float]) -> np.ndarray:
        return served_ttft(v["ttft_request"], v["ttft_wave"], self.t, self.w, v["ttft_host"], self.k)


def _ttft_data(parts: list[_Part], values: dict[str, float]) -> _TtftData:
    """The TTFT data of the parts' runs at TPOT parameters ``values``."""
    ps, ws, ks, ms = [], [], [], []
    for part in parts:
        if part.measured_ttft_s is None or part.inputs.pre is None:
            continue
        hw = _with(part.inputs.hw, PARAMETERS, np.array([values[p.name] for p in PARAMETERS]))
        t, w = part.inputs.ttft_parts(hw)
        ps.append(t)
        ws.append(w)
        ks.append(np.full(len(t), pass_kernels(part.inputs.model)))
        ms.append(part.measured_ttft_s)
    if not ps:
        return _TtftData(*(np.zeros(0) for _ in range(4)))
    t, w, k, m = (np.concatenate(x) for x in (ps, ws, ks, ms))
    ok = np.isfinite(t) & np.isfinite(w) & np.isfinite(m) & (m > 0)
    return _TtftData(t[ok], w[ok], k[ok], m[ok])


#: TTFT parameters where none is fitted: TTFT is the pass alone
_TTFT_NONE = {p.name: 0.0 for p in TTFT_PARAMETERS}


def _ttft_errors(data: _TtftData, v: dict[str, float]) -> dict[str, float]:
    ratio = data.predicted(v) / data.m
    e = np.abs(ratio - 1)
    return {"n": int(len(e)), "ttft_median_abs_err": float(np.median(e)) if len(e) else math.nan,
            "ttft_p90_abs_err": float(np.quantile(e, 0.9)) if len(e) else math.nan,
            "ttft_bias": float(np.median(ratio)) if len(e) else math.nan}


#: Where the TTFT fit starts each parameter
_TTFT_START = {"ttft_request": 0.05, "ttft_wave": 0.1, "ttft_host": 20e-6}


def fit_ttft(parts: list[_Part], values: dict[str, float]) -> TtftFit | None:
    """Fit the TTFT parameters of a cell at its TPOT parameters ``values``: a robust (Cauchy, scale
    :data:`TTFT_LOSS_SCALE`) least-squares fit of the log error, each log-parameter's relative
    standard error from ``s^2 (J^T J)^-1`` with the loss-weighted Jacobian and ``s^2`` the
    loss-weighted residual variance (twice the cost over the degrees of freedom); a parameter the
    runs cannot pin is dropped (0: the request latency and the host time are one term where a cell
    holds one model, whose pass has one kernel count), one pushed to the top of its range held
    there."""
    from scipy.optimize import least_squares

    data = _ttft_data(parts, values)
    m = data.m
    if len(m) < MIN_RUNS:
        return None
    before = _ttft_errors(data, _TTFT_NONE)
    free = list(TTFT_PARAMETERS)
    fixed: dict[str, str] = {}
    held = dict(_TTFT_NONE)
    rel: dict[str, float] = {}
    if len(np.unique(data.k)) < 2:
        # every pass has one kernel count (one model, or one architecture): its host time and the
        # request latency are one constant, which t_req carries
        free = [p for p in free if p.name != "ttft_host"]
        fixed["ttft_host"] = "not separable from t_req (every run's pass has one kernel count); left out (0)"
    while free:
        def res(x: np.ndarray, free: list[RunParameter] = free) -> np.ndarray:
            v = dict(held)
            v.update({p.name: float(np.exp(xi)) for p, xi in zip(free, x, strict=True)})
            return np.log(data.predicted(v) / m)

        x0 = np.log([_TTFT_START[p.name] for p in free])
        sol = least_squares(res, x0, bounds=(np.log([p.lo for p in free]), np.log([p.hi for p in free])),
                            loss="cauchy", f_scale=TTFT_LOSS_SCALE)
        s2 = 2.0 * float(sol.cost) / max(len(m) - len(free), 1)
        try:
            var = np.diag(s2 * np.linalg.inv(sol.jac.T @ sol.jac))
            se = np.where(np.isfinite(var) & (var > 0), np.sqrt(np.abs(var)), np.inf)
        except np.linalg.LinAlgError:
            se = np.full(len(free), np.inf)
        x = np.exp(sol.x)
        at_bound = [abs(math.log(xi / p.lo)) < 1e-3 or abs(math.log(xi / p.hi)) < 1e-3
                    for p, xi in zip(free, x, strict=True)]
        bad = [i for i in range(len(free)) if not np.isfinite(se[i]) or se[i] > REL_SE_MAX or at_bound[i]]
        if not bad:
            held.update({p.name: float(xi) for p, xi in zip(free, x, strict=True)})
            rel = {p.name: float(se[i]) for i, p in enumerate(free)}
            break
        i, pushed = _least_pinned(bad, at_bound, se, lambda j: True)
        p = free.pop(i)
        if pushed and abs(math.log(x[i] / p.hi)) < 1e-3:
            held[p.name] = float(x[i])
            fixed[p.name] = f"pushed to the bound {x[i]:.3g} of its range; held there"
        else:
            fixed[p.name] = ("not pinned by these runs; left out (0)" if not pushed else
                             "pushed to the lower bound of its range; left out (0)")
    after = _ttft_errors(data, held)
    return TtftFit(after["n"], held, rel, [p.name for p in free], fixed, before, after)


def _least_pinned(bad: list[int], at_bound: list[bool], se: np.ndarray,
                  pushed: Any) -> tuple[int, bool]:
    """Which of the ``bad`` parameters to hold next, and whether at the bound the runs push it to:
    one at a bound that ``pushed(i)`` confirms goes first (the least pinned of those), else the
    least pinned of the rest (relative SE above :data:`REL_SE_MAX`, none, or at a bound only by
    drift), held (at its family's value, or its spec value)."""
    def rel(i: int) -> float:
        return float(se[i]) if np.isfinite(se[i]) else math.inf

    edge = [i for i in bad if at_bound[i] and pushed(i)]
    if edge:
        return max(edge, key=rel), True
    return max(bad, key=rel), False


def _solve(parts: list[_Part], free: tuple[RunParameter, ...], fixed_vals: dict[str, float]
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values of ``free``, covariance of their logs, residuals)."""
    from scipy.optimize import least_squares

    hw0 = parts[0].inputs.hw
    every = PARAMETERS

    def full(x: np.ndarray) -> np.ndarray:
        v = dict(fixed_vals)
        v.update({p.name: float(np.exp(xi)) for p, xi in zip(free, x, strict=True)})
        return np.array([v[p.name] for p in every])

    def start(p: RunParameter) -> float:
        v = _spec_value(hw0, p)
        if p.per_sequence and v < p.lo:
            v = 1.05 * min(float(np.min(part.measured_s / part.inputs.b)) for part in parts)
        return min(max(v, p.lo * 1.01), p.hi * 0.99)

    x0 = np.log([start(p) for p in free])
    lo = np.log([p.lo for p in free])
    hi = np.log([p.hi for p in free])
    sol = least_squares(lambda x: _residuals(parts, every, full(x)), x0, bounds=(lo, hi),
                        diff_step=1e-3, x_scale=1.0)
    J = sol.jac
    dof = max(len(sol.fun) - len(free), 1)
    s2 = float(sol.fun @ sol.fun) / dof
    # a parameter the runs do not touch at all (a zero Jacobian column: e.g. the network fraction
    # where every all-to-all takes its bandwidth from the kernels' law) has an infinite error; the
    # others' covariance comes from the columns that move the residuals
    norms = np.linalg.norm(J, axis=0)
    live = norms > 1e-9 * max(float(norms.max(initial=0.0)), 1e-300)
    cov = np.full((len(free), len(free)), np.inf)
    try:
        cov[np.ix_(live, live)] = s2 * np.linalg.inv(J[:, live].T @ J[:, live])
    except np.linalg.LinAlgError:
        pass
    return np.exp(sol.x), cov, sol.fun


#: The parameters a cell keeps only where several models' runs pin them: a constant of the stack
#: or of the links (the host's time per sequence, the network fraction) that one model's runs
#: alone reveal says what serving that model costs, not what the stack costs whatever it runs
#: (Blackwell vLLM's host time per sequence, 79 us, was revealed by MiniMax-M2.5's runs alone and
#: set a floor under every model's step on that stack).  The GPU's fractions and per-kernel cost are
#: the GPU's, and stay fitted where one model's runs pin them.
MODEL_SPREAD = ("network", "host_per_sequence")
#: ... kept where at least this many models each have :data:`MODEL_SPREAD_RUNS` runs whose predicted
#: TPOT the fitted value moves by more than :data:`MODEL_SPREAD_MOVE` against the value it would be
#: held at (a stray run of a second model does not make a constant general)
MODEL_SPREAD_MODELS = 2
MODEL_SPREAD_RUNS = 3
MODEL_SPREAD_MOVE = 0.05


def _lone_model(parts: list[_Part], free: list[RunParameter], at_x: dict[str, float],
                held: dict[str, float]) -> tuple[int, str] | None:
    """(index in ``free``, the model whose runs move most) of the first :data:`MODEL_SPREAD`
    parameter whose fitted value (``at_x``) moves, against its ``held`` value, the runs of fewer than
    :data:`MODEL_SPREAD_MODELS` models (each by :data:`MODEL_SPREAD_RUNS` runs), else None."""
    on = np.array([at_x[q.name] for q in PARAMETERS])
    fitted: list[np.ndarray] | None = None  # the parts' predictions at at_x, computed once
    for i, p in enumerate(free):
        if p.name not in MODEL_SPREAD:
            continue
        if fitted is None:
            fitted = [part.inputs.tpot(_with(part.inputs.hw, PARAMETERS, on)) for part in parts]
        runs: dict[str, int] = {}
        off = np.array([held[p.name] if q.name == p.name else at_x[q.name] for q in PARAMETERS])
        for part, with_it in zip(parts, fitted, strict=True):
            without = part.inputs.tpot(_with(part.inputs.hw, PARAMETERS, off))
            moved = (np.isfinite(with_it) & np.isfinite(without)
                     & (np.abs(np.log(with_it / without)) > math.log1p(MODEL_SPREAD_MOVE)))
            for m in part.models[moved]:
                runs[str(m)] = runs.get(str(m), 0) + 1
        if sum(n >= MODEL_SPREAD_RUNS for n in runs.values()) < MODEL_SPREAD_MODELS:
            return i, max(runs, key=runs.__getitem__) if runs else "none"
    return None


def _untouched(parts: list[_Part], free: list[RunParameter], at: dict[str, float]) -> list[RunParameter]:
    """The parameters of ``free`` that move no run's prediction from one end of their range to the
    other: e.g. the fabric's share of the all-to-all floors on one-host systems.  Held
    before the fit rather than left to it (a zero column of the Jacobian slows the solver)."""
    def res(v: dict[str, float]) -> np.ndarray:
        return _residuals(parts, PARAMETERS, np.array([v[q.name] for q in PARAMETERS]))

    return [p for p in free
            if np.allclose(res({**at, p.name: p.lo}), res({**at, p.name: p.hi}), rtol=0.0, atol=1e-12)]


def fit_cell(parts: list[_Part], family: str, stack: str,
             pooled: CellFit | None = None, ttft: bool = True) -> CellFit:
    """Fit one cell; fix, one at a time, the parameter its runs pin least until all are pinned.

    A parameter these runs do not pin is held at ``pooled``'s value where that fit (every stack of
    the family together, :func:`fit_family`) pinned it, else at the spec value.  ``ttft``: also
    fit the TTFT parameters (:func:`fit_ttft`) at the fitted TPOT parameters."""
    hw0 = parts[0].inputs.hw
    spec = {p.name: _spec_value(hw0, p) for p in PARAMETERS}
    before = _errors(parts, PARAMETERS, np.array([spec[p.name] for p in PARAMETERS]))
    held_by = {p.name: "the spec value" for p in PARAMETERS}
    family_se: dict[str, float] = {}
    if pooled is not None:
        for name in pooled.fitted:
            if name in STACK_ONLY:
                continue
            spec[name] = pooled.values[name]
            family_se[name] = pooled.rel_se[name]
            held_by[name] = (f"the value all {family} stacks' {pooled.n} runs pin together "
                             f"(relative SE {pooled.rel_se[name]:.2g})")
    fixed: dict[str, str] = {}
    family_only = []
    if pooled is not None:
        for name in FAMILY_ONLY:
            spec[name] = pooled.values[name]
            family_only.append(name)
            how = pooled.fixed.get(name) or f"relative SE {pooled.rel_se.get(name, math.nan):.2g}"
            fixed[name] = (f"fitted once per family: the value all {family} stacks' {pooled.n} runs "
                           f"give together ({how})")
    spec0 = dict(spec)  # where an unpinned parameter is held
    free = [p for p in PARAMETERS if p.name not in family_only]
    for p in _untouched(parts, free, spec0):
        free.remove(p)
        fixed[p.name] = f"moves no run of these (not pinned); held at {held_by[p.name]}"
    values = dict(spec)
    spec = dict(spec)  # values held fixed (spec0's, or a bound a parameter was pushed to)
    cov = np.zeros((0, 0))
    while free:
        fixed_vals = {p.name: spec[p.name] for p in PARAMETERS if p not in free}
        values.update(fixed_vals)
        x, cov, res = _solve(parts, tuple(free), fixed_vals)
        se = np.sqrt(np.clip(np.diag(cov), 0, np.inf))
        at_bound = [(abs(math.log(xi / p.lo)) < 1e-3 or abs(math.log(xi / p.hi)) < 1e-3)
                    for p, xi in zip(free, x, strict=True)]
        bad = [i for i in range(len(free)) if not np.isfinite(se[i]) or se[i] > REL_SE_MAX or at_bound[i]]
        at_x = {**fixed_vals, **{q.name: float(xi) for q, xi in zip(free, x, strict=True)}}
        lone = _lone_model(parts, free, at_x, spec0)
        if lone is not None:
            i, model = lone
            p = free.pop(i)
            fixed[p.name] = (f"pinned by the runs of one model only ({model}), not carried to others; "
                             f"held at {held_by[p.name]}")
            continue
        if not bad:
            values.update({p.name: float(xi) for p, xi in zip(free, x, strict=True)})
            break
        ss = float(res @ res)
        s2 = ss / max(len(res) - len(free), 1)

        def pushed(i: int, at_x: dict[str, float] = at_x, ss: float = ss, s2: float = s2) -> bool:
            back = {**at_x, free[i].name: spec0[free[i].name]}
            r = _residuals(parts, PARAMETERS, np.array([back[q.name] for q in PARAMETERS]))
            return float(r @ r) - ss > PUSHED_CHI2 * s2

        worst, at_edge = _least_pinned(bad, at_bound, se, pushed)
        p = free.pop(worst)
        if at_edge:
            # the runs push it to the edge of its physical range: held there (missing physics),
            # and said
            spec[p.name] = values[p.name] = float(x[worst])
            fixed[p.name] = f"pushed to the bound {x[worst]:.3g} of its range; held there"
        else:
            fixed[p.name] = (f"not pinned by these runs (relative SE {se[worst]:.2g}); "
                             f"held at {held_by[p.name]}")
    rel = {p.name: float(math.sqrt(max(cov[i, i], 0))) for i, p in enumerate(free)}
    d = np.sqrt(np.clip(np.diag(cov), 1e-300, np.inf)) if len(free) else np.ones(0)
    corr = (cov / np.outer(d, d)).round(3).tolist() if len(free) else []
    after = _errors(parts, PARAMETERS, np.array([values[p.name] for p in PARAMETERS]))
    systems = sorted({s for part in parts for s in part.systems})
    models = sorted({m for part in parts for m in part.models})
    held_se = {name: family_se[name] for name, why in fixed.items()
               if name in family_se and (why.startswith("not pinned") or name in family_only)}
    return CellFit(family, stack, after["n"], values, rel, corr, [p.name for p in free], fixed,
                   before, after, systems, models, fit_ttft(parts, values) if ttft else None, held_se)


def fit_family(by_cell: dict[tuple[str, str], list[_Part]], family: str) -> CellFit | None:
    """One fit of every stack of ``family`` together (one set of parameters for all its runs):
    what a cell's parameter falls back to where the cell's own runs do not pin it."""
    parts = [p for (fam, _), ps in sorted(by_cell.items()) if fam == family for p in ps]
    if sum(len(p.measured_s) for p in parts) < MIN_RUNS:
        return None
    return fit_cell(parts, family, "all stacks", ttft=False)  # TTFT is fitted per stack only


def _subset(parts: list[_Part], key: str, keep: Any) -> list[_Part]:
    out = []
    for part in parts:
        col = part.systems if key == "system" else part.models
        m = keep(col)
        if m.any():
            out.append(_Part(_take(part.inputs, m), part.measured_s[m], part.systems[m], part.models[m],
                             part.measured_ttft_s[m] if part.measured_ttft_s is not None else None))
    return out


def _families(by_cell: dict[tuple[str, str], list[_Part]]) -> dict[str, CellFit]:
    """:func:`fit_family` of every family with enough runs."""
    fits = {fam: fit_family(by_cell, fam) for fam in sorted({f for f, _ in by_cell})}
    return {fam: f for fam, f in fits.items() if f is not None}


#: Systems with measured kernel tables of their own (planner/truth/data/kernels): the donors a
#: held-out system may borrow its family's kernel laws from.  (hgx-h20 and hgx-h800 carry hgx-h100's
#: laws, so they are never donors: lending them would lend hgx-h100's own kernels.)
KERNEL_SYSTEMS = ("gb200-nvl72", "gb300-nvl72", "hgx-b200", "hgx-b300", "hgx-h100", "hgx-h200")


def kernel_donor(name: str, family: str) -> str | None:
    """The system a held-out ``name`` borrows its kernel laws from in a datasheet-only refit: of
    :data:`KERNEL_SYSTEMS` in its family, not itself, the nearest by datasheet (HBM bandwidth and
    dense FP8 peak, in log ratio); None where the family has no other."""
    from planner.specs.registry import load_hardware

    me = load_hardware(name)
    best, gap = None, math.inf
    for other in KERNEL_SYSTEMS:
        if other == name:
            continue
        hw = load_hardware(other)
        if hw.family != family:
            continue
        d = abs(math.log(hw.hbm_bandwidth / me.hbm_bandwidth)) + abs(
            math.log(hw.flops.get("fp8", 1.0) / me.flops.get("fp8", 1.0)))
        if d < gap:
            best, gap = other, d
    return best


#: The fields of a stack's fit that come from a system's own measured kernels.
KERNEL_FIELDS = (*COMM_LAW_FIELDS, "a2a_floors", "gemm", "moe", "attn")


def datasheet_only(hw: Any, donor: Any | None) -> Any:
    """``hw`` (a runs-scoring system: the spec's efficiencies with its stack's kernel laws) with
    every kernel-fitted constant replaced by ``donor``'s for the same stack (None, or a donor
    without that stack: the link's own latency and bandwidth fractions, the roofline GEMMs), and
    NCCL's law by the donor's: what a buyer predicts for a part nobody here has measured."""
    blank = {f: (() if f in ("a2a_floors", "gemm", "moe", "attn") else None) for f in KERNEL_FIELDS}
    nccl = donor.nccl_allreduce if donor is not None else None

    def swapped(stack: str) -> dict[str, Any]:
        k = donor.stacks.get(stack) if donor is not None and stack else None
        return {f: getattr(k, f) for f in KERNEL_FIELDS} if k is not None else dict(blank)

    # every stack's laws, not the scored one's alone: a stack without a law of its own takes the
    # same GPU's other stacks' (planner.physics.step.moe_law), which must be the donor's too
    stacks = {s: dataclasses.replace(e, **swapped(s)) for s, e in hw.stacks.items()}
    return dataclasses.replace(hw.replace(efficiency=swapped(hw.stack), nccl_allreduce=nccl), stacks=stacks)


#: the runs of a leave-out by their source (path and digest), for its cells in this process and in
#: the workers forked from it; a spawned or remote worker scores them again from the source
_RUNS: dict[str, dict[tuple[str, str], list[_Part]]] = {}


def runs_by_cell(path: str | Path | None, score: RunsScore | None = None
                 ) -> dict[tuple[str, str], list[_Part]]:
    """The scored runs of ``path`` (``score``, where already scored) by (family, stack), the cells
    with at least :data:`MIN_RUNS`."""
    score = score_runs(path, stacks=False) if score is None else score
    by_cell = {k: v for k, v in cells(score).items() if sum(len(p.measured_s) for p in v) >= MIN_RUNS}
    if not by_cell:
        raise SpecError(score.source, "rows", f"at least {MIN_RUNS} scored runs of one family and stack")
    return by_cell


def _leave_one_out(by_cell: dict[tuple[str, str], list[_Part]], key: str, datasheet: bool = False,
                   executor: Executor | None = None, path: str | Path | None = None
                   ) -> dict[str, dict[str, Any]]:
    """For each system (or model): refit every cell without it (the family fallback too, on the
    same training runs), predict its runs.  ``datasheet`` (systems): the held-out system's runs
    are also predicted without its own kernel laws, from its datasheet and a family member's laws
    (:func:`datasheet_only`, :func:`kernel_donor`).  Each name is a cell of :mod:`planner.cells`
    (in parallel on ``executor`` where Dask is installed)."""
    names = sorted({x for parts in by_cell.values() for p in parts
                    for x in (p.systems if key == "system" else p.models)})

    def work(name: str) -> int:  # the runs its refits fit: the cells of its families
        fams = {fam for (fam, _), parts in by_cell.items() for p in parts
                if name in (p.systems if key == "system" else p.models)}
        return sum(len(p.measured_s) for (fam, _), parts in by_cell.items() if fam in fams for p in parts)

    # the longest refits first, so that parallel workers finish together; each cell names the runs
    # by their source, not a copy of them (forked workers hold them already)
    order = sorted(names, key=lambda n: -work(n))
    source = f"{path or 'bundled'}:{_sha256(path)}"
    _RUNS[source] = by_cell
    try:
        run = run_cells(_held_out_one, [(name, source, None if path is None else str(path), key, datasheet)
                                        for name in order], executor, f"leave one {key} out")
    finally:
        _RUNS.pop(source, None)
    out = {}
    for c in run.cells:
        if c.error is not None:
            raise SpecError("<input>", "--leave-out", f"a refit without {c.key[0]} ({c.error})")
        out[c.key[0]] = c.result
    return {name: out[name] for name in names}


def _held_out_one(cell: tuple[str, str, str | None, str, bool]) -> dict[str, Any]:
    """One name of :func:`_leave_one_out`: every cell refitted without it, its runs predicted."""
    from planner.specs.registry import load_hardware

    name, source, path, key, datasheet = cell
    if source not in _RUNS:
        _RUNS[source] = runs_by_cell(path)
    by_cell = _RUNS[source]
    ratios, ttft = [], []
    train_cells = {k: _subset(parts, key, lambda c, n=name: c != n) for k, parts in by_cell.items()}
    train_cells = {k: t for k, t in train_cells.items() if sum(len(p.measured_s) for p in t) >= MIN_RUNS}
    # the family fits of the families that hold its runs (each family is fitted on its own cells)
    held_families = {fam for (fam, _), parts in by_cell.items()
                     if _subset(parts, key, lambda c, n=name: c == n)}
    pooled = _families({k: t for k, t in train_cells.items() if k[0] in held_families})
    donor_name = None
    for (fam, stack), parts in by_cell.items():
        held = _subset(parts, key, lambda c, n=name: c == n)
        if not held or (fam, stack) not in train_cells:
            continue
        if datasheet and key == "system":
            donor_name = kernel_donor(name, fam)
            donor = load_hardware(donor_name) if donor_name else None
            held = [dataclasses.replace(p, inputs=dataclasses.replace(
                p.inputs, hw=datasheet_only(p.inputs.hw, donor))) for p in held]
        f = fit_cell(train_cells[(fam, stack)], fam, stack, pooled.get(fam))
        v = np.array([f.values[p.name] for p in PARAMETERS])
        ratios.append(np.exp(_residuals(held, PARAMETERS, v)))
        if f.ttft is not None:
            data = _ttft_data(held, f.values)
            ttft.append(data.predicted(f.ttft.values) / data.m)
    if not ratios:
        return {"n": 0, "median_abs_err": math.nan, "bias": math.nan,
                "why": "no cell keeps enough runs without it"}
    r = np.concatenate(ratios)
    rt = np.concatenate(ttft) if ttft else np.zeros(0)
    out = {"n": int(len(r)), "median_abs_err": float(np.median(np.abs(r - 1))),
           "p90_abs_err": float(np.quantile(np.abs(r - 1), 0.9)), "bias": float(np.median(r)),
           "ttft_median_abs_err": float(np.median(np.abs(rt - 1))) if len(rt) else math.nan}
    if datasheet and key == "system":
        out["kernel_laws_from"] = donor_name or "none (the links' own constants)"
    return out


@dataclass
class RunsFit:
    """Every cell's fit, with the data it came from and the leave-one-out errors."""

    cells: list[CellFit]
    source: str
    sha256: str
    date: str
    loso: dict[str, dict[str, Any]]
    lomo: dict[str, dict[str, Any]]
    method: str = METHOD
    #: each family's stacks fitted together (:func:`fit_family`): where a cell's runs do not pin
    #: a parameter, the cell holds this fit's value
    families: list[CellFit] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "source": self.source, "sha256": self.sha256, "date": self.date,
                "cells": [c.to_dict() for c in self.cells],
                "families": [c.to_dict() for c in self.families], "leave_one_system_out": self.loso,
                "leave_one_model_out": self.lomo}

    def cell(self, family: str, stack: str) -> CellFit | None:
        return next((c for c in self.cells if c.family == family and c.stack == stack), None)


def _sha256(path: str | Path | None) -> str:
    if path is None:
        data = resources.files("planner.truth.data").joinpath("measured_runs.csv").read_bytes()
    else:
        data = Path(path).read_bytes()
    return hashlib.sha256(data).hexdigest()


def held_out(path: str | Path | None = None, key: str = "system", executor: Executor | None = None
             ) -> dict[str, Any]:
    """Accuracy for what nobody here has measured: for each system (``key="system"``) every
    cell refitted without its runs, and its runs predicted from its datasheet with its family's
    kernel laws (none of its own kernels: :func:`datasheet_only`); for each model
    (``key="model"``) every cell refitted without that model's runs.  ``validate --runs
    --leave-out``."""
    if key not in ("system", "model"):
        raise SpecError("<input>", "--leave-out", f"system or model, got {key!r}")
    score = score_runs(path, stacks=False)
    by_cell = runs_by_cell(path, score)
    loo = _leave_one_out(by_cell, key, datasheet=key == "system", executor=executor, path=path)
    rows = []
    for name, d in loo.items():
        row = {"group": name, "rows": d["n"], "tpot_median_abs_err": d["median_abs_err"],
               "tpot_p90_abs_err": d.get("p90_abs_err", math.nan),
               "ttft_median_abs_err": d["ttft_median_abs_err"], "bias": d["bias"]}
        if "kernel_laws_from" in d:
            row["kernel_laws_from"] = d["kernel_laws_from"]
        rows.append(row)
    return {"mode": "datasheet-only" if key == "system" else "model held out", "leave_out": key,
            "source": score.source, "held_out": rows}


def fit_runs(path: str | Path | None = None, leave_out: bool = True) -> RunsFit:
    """Fit every (family, stack) cell with at least :data:`MIN_RUNS` scored runs of ``path``
    (the bundled measured runs by default); with ``leave_out``, also the leave-one-system-out
    and leave-one-model-out errors (a refit per system and per model: minutes)."""
    score = score_runs(path, stacks=False)
    by_cell = runs_by_cell(path, score)
    pooled = _families(by_cell)
    fits = [fit_cell(parts, fam, stack, pooled.get(fam)) for (fam, stack), parts in sorted(by_cell.items())]
    loso = _leave_one_out(by_cell, "system", path=path) if leave_out else {}
    lomo = _leave_one_out(by_cell, "model", path=path) if leave_out else {}
    return RunsFit(fits, score.source, _sha256(path), datetime.date.today().isoformat(), loso, lomo,
                   families=list(pooled.values()))


def summary_frame(fit: RunsFit) -> pd.DataFrame:
    """One row per cell: parameters with relative SE, and errors before and after."""
    rows = []
    for c in fit.cells:
        r: dict[str, Any] = {"family": c.family, "stack": c.stack, "n": c.n}
        for p in PARAMETERS:
            r[p.name] = c.values[p.name]
            r[f"{p.name}_rel_se"] = c.rel_se.get(p.name, math.nan)
        r.update({f"before_{k}": v for k, v in c.before.items() if k != "n"})
        r.update({f"after_{k}": v for k, v in c.after.items() if k != "n"})
        rows.append(r)
    return pd.DataFrame(rows)


# ---- writing the fit into the hardware specs ------------------------------------------------------
def _fmt(p: RunParameter, v: float) -> str:
    return f'"{p.shown(v)}"' if p.unit == "s" else yaml_number(v)


def stacks_block(fit: RunsFit, family: str) -> str:
    """The ``stacks:`` YAML block of one family's cells (default: the stack with most runs)."""
    mine = [c for c in fit.cells if c.family == family]
    if not mine:
        return ""
    default = max(mine, key=lambda c: c.n).stack
    lines = [
        "stacks:",
        f"  default: {default}",
        "  fit:",
        f"    source: {json.dumps(_source_text(fit))}",
        f"    date: '{fit.date}'",
        f"    data_sha256: {fit.sha256}",
        f"    method: {json.dumps(fit.method)}",
        "    code: planner/truth/runs_fit.py (moe-planner calibrate --runs --write)",
    ]
    for c in sorted(mine, key=lambda c: c.stack):
        lines.append(f"  {c.stack}:")
        lines.append(f"    runs: {c.n}")
        for p in PARAMETERS:
            v = c.values[p.name]
            if p.name in c.fitted:
                se = c.rel_se[p.name]
                lines.append(f"    {p.name}: {{value: {_fmt(p, v)}, se: {yaml_number(se, 3)}, kind: fitted}}")
            elif v > 0:  # a cost held at 0 (none) is left out: the efficiency: block's 0 applies
                why = c.fixed[p.name]
                kind = "bound" if "bound" in why else "fixed"
                lines.append(f"    {p.name}: {{value: {_fmt(p, v)}, kind: {kind}, note: {json.dumps(why)}}}")
        if c.ttft is not None:
            for p in TTFT_PARAMETERS:
                v = c.ttft.values[p.name]
                text = _fmt(p, v)
                if p.name in c.ttft.fitted:
                    se_t = c.ttft.rel_se[p.name]
                    lines.append(f"    {p.name}: {{value: {text}, se: {yaml_number(se_t, 3)}, kind: fitted}}")
                elif v > 0:
                    lines.append(f"    {p.name}: {{value: {text}, kind: bound, "
                                 f"note: {json.dumps(c.ttft.fixed[p.name])}}}")
        order = c.fitted + [n for n in (p.name for p in PARAMETERS) if n in c.held_se]
        if order:
            # the cell's own parameters with their correlations, then those held at the family's
            # value with the family fit's variance, uncorrelated with them (a band draws both)
            se = np.array([c.rel_se[n] for n in c.fitted])
            cov = np.zeros((len(order), len(order)))
            k = len(c.fitted)
            if k:
                cov[:k, :k] = np.asarray(c.corr) * np.outer(se, se)
            for i, n in enumerate(order[k:], start=k):
                cov[i, i] = c.held_se[n] ** 2
            rows = ", ".join("[" + ", ".join(yaml_number(x) for x in row) + "]" for row in cov)
            lines.append(f"    covariance_log: {{order: [{', '.join(order)}], matrix: [{rows}]}}")
    return "\n".join(lines) + "\n"


def _source_text(fit: RunsFit) -> str:
    n = sum(c.n for c in fit.cells)
    return (f"least-squares fit to {n} scored measured runs ({fit.source}: NVIDIA aiconfigurator-core "
            "0.12.0 silicon_sample.csv, Apache-2.0, GB200 and Kimi K2.5 rows withheld), per GPU family "
            "and serving stack")


#: A stack entry's lines fitted to measured kernels (``moe-planner calibrate --kernels``), which a
#: runs fit carries over unchanged.
KERNEL_LINES = tuple(f"    {p}" for p in (*KERNEL_FITTED_STACK_FIELDS, "gemm_", "moe_", "attn_"))


def _split_stacks(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """(the spec's lines outside its ``stacks:`` block, each stack entry's :data:`KERNEL_LINES`)."""
    out, skip, stack = [], False, None
    kept: dict[str, list[str]] = {}
    for ln in text.splitlines():
        if ln.startswith("stacks:"):
            skip = True
            continue
        if skip and ln and not ln.startswith((" ", "#")):
            skip = False
        if skip:
            if re.match(r"^  [a-z][\w.-]*:\s*$", ln):
                stack = ln.strip()[:-1]
            elif stack and ln.startswith(KERNEL_LINES):
                kept.setdefault(stack, []).append(ln)
            continue
        out.append(ln)
    return out, kept


#: The law lines (by prefix) of a stack entry that a spec without kernel tables borrows.
BORROWED_LAWS = ("    gemm_", "    moe_", "    attn_")


def borrowed_gemm_lines(reference: str, text: str) -> dict[str, list[str]]:
    """The compute-kernel law lines (:data:`BORROWED_LAWS`) of each stack entry of ``reference``'s
    spec ``text``, their notes saying they are borrowed from it."""
    lines = {}
    for stack, kl in _split_stacks(text)[1].items():
        tag = (f'note: "borrowed from {reference} (the family reference; no measured kernels of this GPU): '
               'fitted to')
        g = [ln.replace('note: "fitted to', tag).replace("of this GPU and stack", "of that GPU and stack")
             for ln in kl if ln.startswith(BORROWED_LAWS)]
        if g:
            lines[stack] = g
    return lines


def render_stacks(text: str, block: str, borrowed: dict[str, list[str]] | None = None) -> str:
    """Spec text with its ``stacks:`` block (top-level key to the next one) replaced by ``block``;
    the laws fitted to kernels (the :data:`KERNEL_LINES` of a stack entry) are carried over into
    the same stack's new entry, and a stack entry without law lines of one kind (:data:`BORROWED_LAWS`)
    of its own takes those of ``borrowed`` (stack -> lines), replacing any it borrowed before."""
    out, kept = _split_stacks(text)
    for stack, lines in (borrowed or {}).items():
        own = [ln for ln in kept.get(stack, [])  # lines borrowed before give way to today's
               if not (ln.startswith(BORROWED_LAWS) and "borrowed from" in ln)]
        take = [ln for ln in lines
                if not any(ln.startswith(p) and any(o.startswith(p) for o in own) for p in BORROWED_LAWS)]
        kept[stack] = take + own
    while out and not out[-1].strip():
        out.pop()
    new, stack = [], None
    for ln in block.splitlines():
        if re.match(r"^  [a-z][\w.-]*:\s*$", ln):
            stack = ln.strip()[:-1]
        new.append(ln)
        if stack in kept and ln.startswith("    runs:"):
            new.extend(kept[stack])
    return "\n".join(out) + "\n" + "\n".join(new) + ("\n" if new else "")


def write_fit(fit: RunsFit) -> list[str]:
    """Write each family's ``stacks:`` block into every bundled hardware spec of that family
    whose scale-up fabric is NVLink (every run was measured on one; a PCIe system keeps its
    ``efficiency:`` block), with the family reference GPU's compute-kernel laws where the spec has
    none of its own (:data:`planner.specs.hardware.FAMILY_REFERENCE`); checks every new text parses
    before writing any.  A calibration whose ``stacks.fit`` names another keeper (``kept_by``: the
    CDNA 3 systems, fitted by scripts/derive_rocm_fit.py) is left alone.  Returns the names written."""
    from planner.outputs import write_atomic
    from planner.specs.registry import bundled_calibration_path, hardware_names, load_hardware, parse_bundled

    new: dict[str, tuple[Path, str]] = {}
    for name in hardware_names():
        hw = load_hardware(name)
        block = stacks_block(fit, hw.family)
        if not block or hw.su_link != "nvlink":  # the runs were all measured over NVLink
            continue
        path = bundled_calibration_path(name)
        if "\n    kept_by:" in path.read_text("utf-8"):
            continue
        ref = FAMILY_REFERENCE.get(hw.family)
        borrowed = (borrowed_gemm_lines(ref, bundled_calibration_path(ref).read_text("utf-8"))
                    if ref and ref != name else None)
        text = render_stacks(path.read_text("utf-8"), block, borrowed)
        parse_bundled(name, text)  # refuse a block that does not parse
        new[name] = (path, text)
    for _name, (path, text) in new.items():
        write_atomic(path, text)
    return sorted(new)
