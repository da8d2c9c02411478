"""Calibration: fit the realistic-mode efficiencies to the published measurements.

What is fitted (``PARAMETERS``): a handful of physical parameters, each shared by the hardware
families whose physics is the same, in log space with ``scipy.optimize.least_squares``:

* ``compute``: achieved fraction of dense tensor-core peak (an FP8 or NVFP4 GEMM at serving
  shapes is the same question on SM90 and SM100, and only one Blackwell point is compute-bound);
* ``hbm``: achieved fraction of HBM bandwidth (weight and KV streaming).  A Hopper/Blackwell
  split was tried: the Blackwell value is then constrained by nothing (its points are latency-
  bound at batch 1; log-sd ~5) and would sit at its prior 0.8 against a fitted Hopper 0.34,
  an asymmetry that alone would inflate GB200/H200 ratios up to 2.4x where HBM binds;
* ``network``: achieved fraction of link bandwidth, one value for scale-up and scale-out (the
  DeepEP-style all-to-all efficiency);
* ``kernel_overhead``: fixed cost per kernel launched (launch and synchronisation).

All four are shared by both families: with seven training points, a family of its own is only
worth fitting where that family's points constrain it (``Parameter.families`` makes the split
one line when the data arrive).  Everything else (``step_overhead``, ``load_imbalance``,
``memory_reserve``, link latencies) keeps its assumed value.  Fractions are bounded to [0.2, 1].

The residual of a training point is ``log(predicted / measured)`` of its per-user rate at its own
batch (given, or implied by Little's law from its two rates: sequences per GPU = per-GPU rate /
per-user rate), i.e. of its step time, which is what efficiencies act on.  (The scorecard
compares per-GPU throughput at the measured per-user rate instead; where the frontier is nearly
vertical, weight-read-bound decode, that quantity moves by many percent for one percent of step
time and would hand such points all the leverage.)  Prefill points compare their best prompt
tokens/s per GPU.

No per-point constants; the training subset is declared in ``TRAINING`` and the one excluded
point says why in ``EXCLUDED``.  ``moe-planner calibrate`` prints the fit, which points
constrain each parameter (elasticity of their residual), the training error before and after,
and the leave-one-out error (refit without each point, predict it).  ``--write`` puts the values
into the hardware specs (``kind: fitted``) with a ``calibration:`` block saying how.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import yaml
from scipy.optimize import least_squares

from planner.errors import SpecError
from planner.outputs import progress
from planner.specs.hardware import Hardware
from planner.specs.reading import parse_yaml
from planner.specs.registry import bundled_calibration_path, hardware_names, load_hardware, parse_bundled
from planner.truth.validate import Point, load_points, measured_value, predict, scorecard

FAMILIES = ("hopper", "blackwell")
#: Efficiency fields never fitted here (they keep their assumed values).
EFFICIENCY_FIELDS = ("compute", "hbm", "scale_up", "scale_out", "kernel_overhead", "step_overhead",
                     "load_imbalance", "memory_reserve")


@dataclass(frozen=True)
class Parameter:
    """One fitted quantity: sets ``fields`` of the efficiency of every system in ``families``."""

    name: str
    fields: tuple[str, ...]
    families: tuple[str, ...]
    lo: float
    hi: float
    unit: str = ""  #: "" for a fraction, "s" for a time
    why: str = ""


#: The HBM fraction is not fitted: it keeps its measured-kernel value (0.8; FlashMLA streams 3.0
#: of 3.35 TB/s).  Fitted freely it trades off against the per-operator overhead (the batch-1
#: points cannot tell a slow weight stream from a slow launch) and lands at 0.34, an effective
#: value no kernel shows; holding it at the measured value gives the better out-of-sample error
#: (leave-one-out on the scorecard quantity 26% against 41%, 2026-11-30).
PARAMETERS: tuple[Parameter, ...] = (
    Parameter("compute", ("compute",), FAMILIES, 0.2, 1.0, "",
              "achieved fraction of dense tensor peak; shared: the same GEMM question on SM90 and SM100, "
              "and one Blackwell point alone is compute-bound"),
    Parameter("network", ("scale_up", "scale_out"), FAMILIES, 0.2, 1.0, "",
              "achieved fraction of link bandwidth in EP all-to-all and TP all-reduce; shared"),
    Parameter("kernel_overhead", ("kernel_overhead",), FAMILIES, 1e-6, 100e-6, "s",
              "fixed cost per kernel (launch, sync); shared: a software property"),
)

#: Measured points the fit uses; every measured point not listed must appear in EXCLUDED.
TRAINING: tuple[str, ...] = (
    "sglang-deepseek-decode-72xh100",
    "sglang-deepseek-prefill-32xh100",
    "trtllm-deepseek-r1-b200-batch1-no-mtp",
    "trtllm-deepseek-r1-b200-batch1-mtp3",
    "trtllm-deepseek-r1-b200-max-throughput",
    "trtllm-deepseek-r1-h200-batch1-mtp3",
    "trtllm-deepseek-r1-h200-max-throughput",
)
EXCLUDED: dict[str, str] = {
    "deepseek-production-decode-h800": "a 24-hour average including quiet hours (a lower bound on "
    "capacity, not an operating point), with MTP unknown",
}
#: An elasticity |d log(pred) / d log(param)| above this counts as "constrains".
CONSTRAINS = 0.05
METHOD = ("scipy.optimize.least_squares (trust-region reflective) on log(predicted / measured) "
          "per-user rate at each training point's own batch (given, or Little's law from its two "
          "rates), realistic mode; prefill points on their best prompt tokens/s per GPU; parameters "
          "in log space with bounds; covariance s^2 (J^T J)^-1 in log space")


# ---- hardware with a parameter vector applied --------------------------------------------------
def _raw_doc(name: str) -> dict[str, Any]:
    """Bundled system ``name``'s calibration file, as written."""
    path = bundled_calibration_path(name)
    return parse_yaml(path.read_text("utf-8"), str(path))


def family_hardware(parameters: tuple[Parameter, ...] = PARAMETERS) -> dict[str, Hardware]:
    """Every bundled system a parameter applies to, with its ``efficiency:`` block as written (the
    published-point fit works on that block, not on a serving stack's fit to the runs).  Systems
    whose scale-up fabric is PCIe are left out: the points were all measured over NVLink."""
    fams = {f for p in parameters for f in p.families}
    out = {}
    for n in hardware_names():
        h = load_hardware(n).without_stack()
        # every training point ran on NVLink systems: a PCIe scale-up fabric keeps its own values
        if h.family in fams and h.su_link == "nvlink":
            out[n] = h
    return out


def priors(parameters: tuple[Parameter, ...] = PARAMETERS) -> dict[str, dict[str, Any]]:
    """Each parameter's value before any fit: the ``calibration.prior`` recorded when a fit was
    written, else the spec's current value; the mean over the systems it applies to."""
    hws = family_hardware(parameters)
    out = {}
    for p in parameters:
        vals, srcs = [], []
        for n, h in hws.items():
            if h.family not in p.families:
                continue
            cal = _raw_doc(n).get("calibration") or {}
            pri = (cal.get("prior") or {}) if isinstance(cal, dict) else {}
            for f in p.fields:
                if f in pri:
                    vals.append(float(pri[f]["value"]))
                    srcs.append(str(pri[f].get("source", "")))
                else:
                    vals.append(float(getattr(h.efficiency, f)))
                    srcs.append(h.sources.get(f"efficiency.{f}", ""))
        out[p.name] = {"value": float(np.mean(vals)), "sources": sorted(set(srcs))}
    return out


def apply(values: dict[str, float], parameters: tuple[Parameter, ...] = PARAMETERS,
          hardware: dict[str, Hardware] | None = None) -> dict[str, Hardware]:
    """Systems with the parameter ``values`` (name -> value) put into their efficiencies."""
    hws = hardware if hardware is not None else family_hardware(parameters)
    out = {}
    for n, h in hws.items():
        eff = {}
        for p in parameters:
            if h.family in p.families and p.name in values:
                for f in p.fields:
                    eff[f] = float(values[p.name])
        out[n] = h.replace(efficiency=eff) if eff else h
    return out


# ---- the fit ---------------------------------------------------------------------------------
@dataclass
class Fit:
    """A calibration: values, uncertainties, errors and leave-one-out."""

    parameters: tuple[Parameter, ...]
    prior: dict[str, float]
    values: dict[str, float]
    log_sd: dict[str, float]
    covariance: np.ndarray                  #: of log(values), parameter order
    at_bound: dict[str, bool]
    constrained_by: dict[str, dict[str, float]]  #: param -> {point id: elasticity}
    train_ids: list[str]
    residual_before: dict[str, float]      #: log(pred/meas) at the prior
    residual_current: dict[str, float]     #: at the values the specs hold now
    residual_after: dict[str, float]       #: at the fit
    loo: dict[str, dict[str, float]] = field(default_factory=dict)
    scorecard_before: dict[str, float] = field(default_factory=dict)  #: |pred/meas-1| per point
    scorecard_after: dict[str, float] = field(default_factory=dict)
    date: str = ""
    nfev: int = 0

    @staticmethod
    def _med(res: dict[str, float]) -> float:
        v = [abs(math.exp(r) - 1.0) for r in res.values()]
        return float(np.median(v)) if v else math.nan

    @property
    def train_error_before(self) -> float:
        """Median |pred/meas - 1| over the training points at the prior."""
        return self._med(self.residual_before)

    @property
    def train_error_current(self) -> float:
        return self._med(self.residual_current)

    @property
    def train_error_after(self) -> float:
        return self._med(self.residual_after)

    @property
    def train_rms_log_before(self) -> float:
        return float(np.sqrt(np.mean(np.square(list(self.residual_before.values())))))

    @property
    def train_rms_log_after(self) -> float:
        return float(np.sqrt(np.mean(np.square(list(self.residual_after.values())))))

    @property
    def train_rms_log_current(self) -> float:
        return float(np.sqrt(np.mean(np.square(list(self.residual_current.values())))))

    @property
    def loo_error(self) -> float:
        """Median over training points of |pred/meas - 1| of the point left out (step basis)."""
        v = [d["abs_error"] for d in self.loo.values()]
        return float(np.median(v)) if v else math.nan

    @property
    def loo_scorecard_error(self) -> float:
        v = [d["scorecard_abs_error"] for d in self.loo.values() if math.isfinite(d["scorecard_abs_error"])]
        return float(np.median(v)) if v else math.nan

    def hardware(self) -> dict[str, Hardware]:
        return apply(self.values, self.parameters)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": METHOD, "date": self.date, "training_points": self.train_ids,
            "excluded_points": EXCLUDED,
            "parameters": {p.name: {
                "applies_to": list(p.families), "fields": list(p.fields), "unit": p.unit,
                "prior": self.prior[p.name], "value": self.values[p.name],
                "log_sd": self.log_sd[p.name], "at_bound": self.at_bound[p.name],
                "bounds": [p.lo, p.hi], "constrained_by": self.constrained_by[p.name], "why": p.why}
                for p in self.parameters},
            "covariance_log": self.covariance.tolist(),
            "training": {pid: {"residual_log_before": self.residual_before[pid],
                               "residual_log_after": self.residual_after[pid]} for pid in self.train_ids},
            "train_median_abs_error_before": self.train_error_before,
            "train_median_abs_error_current": self.train_error_current,
            "train_median_abs_error_after": self.train_error_after,
            "train_rms_log_before": self.train_rms_log_before,
            "train_rms_log_after": self.train_rms_log_after,
            "loo": self.loo, "loo_median_abs_error": self.loo_error,
            "loo_scorecard_median_abs_error": self.loo_scorecard_error,
            "scorecard_abs_error_before": self.scorecard_before,
            "scorecard_abs_error_after": self.scorecard_after,
            "nfev": self.nfev,
        }


def training_points(points: list[Point] | None = None, train: tuple[str, ...] = TRAINING) -> list[Point]:
    pts = load_points() if points is None else points
    by_id = {p.id: p for p in pts}
    missing = [t for t in train if t not in by_id]
    if missing:
        raise SpecError("calibration", "training", f"points that exist, unknown: {', '.join(missing)}")
    return [by_id[t] for t in train]


def _residuals(x: np.ndarray, pts: list[Point], parameters: tuple[Parameter, ...],
               hws: dict[str, Hardware]) -> np.ndarray:
    sysm = apply({p.name: math.exp(v) for p, v in zip(parameters, x, strict=True)}, parameters, hws)
    out = np.empty(len(pts))
    for i, pt in enumerate(pts):
        pr = predict(pt, "realistic", sysm.get(pt.hardware), at_batch=True)
        out[i] = math.log(pr.value / measured_value(pt, pr.quantity)) if pr.value > 0 else 10.0
    return out


def _solve(pts: list[Point], parameters: tuple[Parameter, ...], hws: dict[str, Hardware],
           x0: np.ndarray) -> Any:
    lo = np.log([p.lo for p in parameters])
    hi = np.log([p.hi for p in parameters])
    return least_squares(_residuals, np.clip(x0, lo, hi), bounds=(lo, hi), args=(pts, parameters, hws),
                         diff_step=1e-3, xtol=1e-8, ftol=1e-10, max_nfev=400)


#: Half-width, in log space, of the central differences behind the covariance and the elasticities
#: (wide enough to straddle the kinks of the max() in each roofline instead of reading one side).
JAC_STEP = 0.05


def _jacobian(x: np.ndarray, pts: list[Point], parameters: tuple[Parameter, ...],
              hws: dict[str, Hardware]) -> np.ndarray:
    """d residual / d log(param) by central differences of +-JAC_STEP (one-sided at a bound)."""
    lo, hi = np.log([p.lo for p in parameters]), np.log([p.hi for p in parameters])
    J = np.empty((len(pts), len(parameters)))
    for i in range(len(parameters)):
        a, b = max(x[i] - JAC_STEP, lo[i]), min(x[i] + JAC_STEP, hi[i])
        xa, xb = x.copy(), x.copy()
        xa[i], xb[i] = a, b
        J[:, i] = (_residuals(xb, pts, parameters, hws) - _residuals(xa, pts, parameters, hws)) / (b - a)
    return J


def fit(points: list[Point] | None = None, train: tuple[str, ...] = TRAINING,
        parameters: tuple[Parameter, ...] = PARAMETERS, loo: bool = True,
        with_scorecard: bool = True) -> Fit:
    """Fit ``parameters`` on the ``train`` points; ``loo``: also refit without each point."""
    allp = load_points() if points is None else points
    pts = training_points(allp, train)
    hws = family_hardware(parameters)
    for pt in pts:
        if pt.hardware not in hws:
            raise SpecError("calibration", pt.id, f"a system in the fitted families ({pt.hardware} is not)")
    pri = priors(parameters)
    x0 = np.log([min(max(pri[p.name]["value"], p.lo), p.hi) for p in parameters])
    current = {p.name: _current_value(p, hws) for p in parameters}
    x_cur = np.log([current[p.name] for p in parameters])
    # two starts, the prior and what the specs hold now; the lower cost wins (so a refit never
    # ends above the values already written)
    sol = min((_solve(pts, parameters, hws, start) for start in (x0, x_cur)), key=lambda r: r.cost)
    x = sol.x
    J = _jacobian(x, pts, parameters, hws)
    m, n = J.shape
    s2 = float(np.sum(sol.fun ** 2) / max(m - n, 1))
    cov = s2 * np.linalg.pinv(J.T @ J)
    lo, hi = np.log([p.lo for p in parameters]), np.log([p.hi for p in parameters])
    ids = [p.id for p in pts]
    res_cur = _residuals(x_cur, pts, parameters, hws)
    res_before = _residuals(x0, pts, parameters, hws)
    result = Fit(
        parameters=parameters, prior={p.name: pri[p.name]["value"] for p in parameters},
        values={p.name: float(math.exp(v)) for p, v in zip(parameters, x, strict=True)},
        log_sd={p.name: float(math.sqrt(max(cov[i, i], 0.0))) for i, p in enumerate(parameters)},
        covariance=cov,
        at_bound={p.name: bool(abs(x[i] - lo[i]) < 1e-6 or abs(x[i] - hi[i]) < 1e-6)
                  for i, p in enumerate(parameters)},
        constrained_by={p.name: {ids[j]: float(J[j, i]) for j in range(m) if abs(J[j, i]) > CONSTRAINS}
                        for i, p in enumerate(parameters)},
        train_ids=ids,
        residual_before=dict(zip(ids, map(float, res_before), strict=True)),
        residual_current=dict(zip(ids, map(float, res_cur), strict=True)),
        residual_after=dict(zip(ids, map(float, sol.fun), strict=True)),
        date=datetime.date.today().isoformat(), nfev=int(sol.nfev),
    )
    if with_scorecard:
        before = apply(result.prior, parameters, hws)
        after = result.hardware()
        result.scorecard_before = {r.point.id: r.error for r in scorecard(allp, before).rows}
        result.scorecard_after = {r.point.id: r.error for r in scorecard(allp, after).rows}
    if loo:
        for i, pt in enumerate(progress(pts, "leave-one-out refits")):
            rest = pts[:i] + pts[i + 1:]
            s = _solve(rest, parameters, hws, x0)
            r = float(_residuals(s.x, [pt], parameters, hws)[0])
            sysm = apply({p.name: math.exp(v) for p, v in zip(parameters, s.x, strict=True)}, parameters, hws)
            pb = predict(pt, "realistic", sysm.get(pt.hardware))
            sc = abs(pb.value / measured_value(pt, pb.quantity) - 1.0)
            result.loo[pt.id] = {"residual_log": r, "abs_error": abs(math.exp(r) - 1.0),
                                 "scorecard_abs_error": float(sc),
                                 "values": {p.name: float(math.exp(v))
                                            for p, v in zip(parameters, s.x, strict=True)}}
    return result


def _current_value(p: Parameter, hws: dict[str, Hardware]) -> float:
    vals = [getattr(h.efficiency, f) for h in hws.values() if h.family in p.families for f in p.fields]
    return float(np.clip(np.mean(vals), p.lo, p.hi))


# ---- reading a written calibration -----------------------------------------------------------
def calibration_block(hw: Hardware | str) -> dict[str, Any] | None:
    """The ``calibration:`` block of a bundled system's spec (None if absent or not bundled)."""
    name = hw.name if isinstance(hw, Hardware) else hw
    if name not in hardware_names():
        return None
    cal = _raw_doc(name).get("calibration")
    return cal if isinstance(cal, dict) else None


# ---- writing ------------------------------------------------------------------------------------
def stack_block(hw: Hardware) -> dict[str, Any] | None:
    """The fit to measured runs of the serving stack ``hw`` carries, in the shape of a
    ``calibration:`` block (``parameters`` with ``fields`` and ``bounds``, ``covariance_log``);
    None without one."""
    from planner.truth.runs_fit import PARAMETERS

    if not hw.stack or hw.name not in hardware_names():
        return None
    entry = ((_raw_doc(hw.name).get("stacks") or {}).get(hw.stack)) or {}
    cov = entry.get("covariance_log")
    if not isinstance(cov, dict):
        return None
    by_name = {p.name: p for p in PARAMETERS}  # the fields and bounds the fit itself used
    params = {n: {"fields": list(by_name[n].fields), "bounds": [by_name[n].lo, by_name[n].hi]}
              for n in cov.get("order", [])}
    return {"parameters": params, "covariance_log": cov}


def _fmt_value(p: Parameter, v: float) -> str:
    if p.unit == "s":
        return f'"{v * 1e6:.4g} us"'
    return f"{v:.4g}"


def render(text: str, h: Hardware, result: Fit) -> str:
    """The calibration file's text with the fitted efficiencies and a new ``calibration:`` block."""
    doc = parse_yaml(text, h.name)
    old_cal = doc.get("calibration") if isinstance(doc.get("calibration"), dict) else {}
    old_prior = old_cal.get("prior") or {}
    eff_doc = doc["efficiency"]
    mine = [p for p in result.parameters if h.family in p.families]
    prior_block: dict[str, Any] = {}
    lines = text.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.rstrip() == "efficiency:")
    except StopIteration:
        raise SpecError(h.name, "efficiency", "an 'efficiency:' block to write into") from None
    for p in mine:
        for f in p.fields:
            old = eff_doc[f]
            if f in old_prior:
                prior_block[f] = old_prior[f]
            else:
                prior_block[f] = {"value": getattr(h.efficiency, f), "kind": old.get("kind", "assumed"),
                                  "source": old.get("source", "")}
            src = (f"least-squares fit ({p.name}, shared by {' and '.join(p.families)} systems) to "
                   f"{len(result.train_ids)} published points; see calibration")
            note = (f"fitted {result.date}; log-sd {result.log_sd[p.name]:.2f}"
                    + ("; at a bound of the fit" if result.at_bound[p.name] else "")
                    + f"; prior {_prior_text(prior_block[f], p)}")
            new = f"  {f}: {{value: {_fmt_value(p, result.values[p.name])}, kind: fitted, " \
                  f"source: {json.dumps(src)}, note: {json.dumps(note)}}}"
            pat = re.compile(rf"^  {re.escape(f)}:\s")
            idx = next((i for i in range(start + 1, len(lines)) if pat.match(lines[i])), None)
            if idx is None:
                raise SpecError(h.name, f"efficiency.{f}", "a one-line entry to replace")
            lines[idx] = new
    # drop an old calibration block (top level key to the next top-level key or the end)
    out, skip = [], False
    for ln in lines:
        if ln.startswith("calibration:"):
            skip = True
            continue
        if skip and ln and not ln.startswith((" ", "#")):
            skip = False
        if not skip:
            out.append(ln)
    while out and not out[-1].strip():
        out.pop()
    block = {
        "calibration": {
            "method": METHOD, "date": result.date,
            "code": "planner/calibrate.py (moe-planner calibrate --write)",
            "training_points": list(result.train_ids), "excluded_points": dict(EXCLUDED),
            "parameters": {p.name: {
                "fields": list(p.fields), "applies_to": list(p.families),
                "value": float(f"{result.values[p.name]:.4g}"), "log_sd": round(result.log_sd[p.name], 4),
                "at_bound": result.at_bound[p.name], "bounds": [p.lo, p.hi],
                "constrained_by": {k: round(v, 3) for k, v in result.constrained_by[p.name].items()}}
                for p in mine},
            "covariance_log": {"order": [p.name for p in mine],
                               "matrix": [[float(f"{result.covariance[i, j]:.4g}")
                                           for j in _idx(result, mine)] for i in _idx(result, mine)]},
            "training_median_abs_error": {"before": round(result.train_error_before, 4),
                                          "after": round(result.train_error_after, 4)},
            "loo_median_abs_error": round(result.loo_error, 4) if result.loo else None,
            "loo_scorecard_median_abs_error": round(result.loo_scorecard_error, 4) if result.loo else None,
            "prior": prior_block,
        }
    }
    dumped = yaml.safe_dump(block, sort_keys=False, width=100, default_flow_style=None, allow_unicode=True)
    new_text = "\n".join(out) + "\n" + dumped
    parse_bundled(h.name, new_text)  # must still load
    return new_text


def _idx(result: Fit, mine: list[Parameter]) -> list[int]:
    names = [p.name for p in result.parameters]
    return [names.index(p.name) for p in mine]


def _prior_text(pr: dict[str, Any], p: Parameter) -> str:
    v = pr["value"]
    if p.unit == "s" and not isinstance(v, str):
        v = f"{float(v) * 1e6:.3g} us"
    return f"{v} ({pr.get('kind', 'assumed')})"


def write(result: Fit) -> list[str]:
    """Write the fit into the calibration file of every bundled system it applies to; returns the
    paths written."""
    from planner.outputs import write_atomic
    from planner.specs.registry import _bundled_hardware

    written = []
    for name, h in family_hardware(result.parameters).items():
        path = bundled_calibration_path(name)
        text = render(path.read_text("utf-8"), h, result)
        write_atomic(path, text)
        written.append(os.path.relpath(os.path.realpath(path)))
    _bundled_hardware.cache_clear()
    return written


def sampled_efficiencies(hw: Hardware, rng: np.random.Generator, n: int, rel: float = 0.15,
                         method: str = "auto") -> list[dict[str, float]]:
    """``n`` draws of ``hw``'s efficiencies: fitted ones from the recorded fit covariance (log
    normal, kept within the fit's bounds; the serving stack's fit to measured runs where the
    system carries one, else the published-point calibration), the others (and all of them with
    ``method='ranges'`` or no fit recorded) uniform within +-``rel`` of their value.  Fractions
    stay in (0, 1]; times and lambda >= their floor."""
    # the numeric efficiencies (the laws fitted to measured kernels, tuples per dtype, are not
    # sampled: a draw leaves them as they are)
    eff = {f.name: getattr(hw.efficiency, f.name) for f in dataclasses.fields(hw.efficiency)
           if not isinstance(getattr(hw.efficiency, f.name), tuple)}
    cal = (stack_block(hw) or calibration_block(hw)) if method in ("auto", "fit") else None
    if method == "fit" and cal is None:
        raise SpecError(hw.name, "calibration", "a recorded fit (run moe-planner calibrate --write) for "
                        "method 'fit'")
    fitted: dict[str, list[str]] = {}
    mean, cov = None, None
    if cal is not None:
        params = cal.get("parameters") or {}
        order = cal.get("covariance_log", {}).get("order", [])
        mat = np.asarray(cal.get("covariance_log", {}).get("matrix", []), dtype=float)
        if order and mat.shape == (len(order), len(order)):
            for name in order:
                fitted[name] = list(params[name]["fields"])
            mean = np.log([float(getattr(hw.efficiency, fitted[nm][0])) for nm in order])
            cov = mat
    draws = []
    for _ in range(n):
        d: dict[str, Any] = {}
        for k, v in eff.items():
            if v is None:  # not set: the step model falls back to the link's own values
                d[k] = None
                continue
            lo_v = 1.0 if k == "load_imbalance" else 0.0
            if k == "load_imbalance":
                d[k] = 1.0 + (v - 1.0) * rng.uniform(1 - rel, 1 + rel)
            else:
                d[k] = max(v * rng.uniform(1 - rel, 1 + rel), lo_v + 1e-12)
        if cov is not None:
            z = rng.multivariate_normal(mean, cov, method="eigh")
            for name, val in zip(fitted, np.exp(z), strict=True):
                lo_b, hi_b = (params[name].get("bounds") or [0.0, math.inf])[:2]
                for f in fitted[name]:
                    d[f] = float(min(max(val, lo_b), hi_b))  # within the fit's own bounds
        for k in ("compute", "hbm", "scale_up", "scale_out"):
            d[k] = float(min(max(d[k], 0.05), 1.0))
        d["memory_reserve"] = float(min(max(d["memory_reserve"], 0.0), 0.9))
        draws.append(d)
    return draws
