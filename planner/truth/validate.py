"""The validation scorecard: every published point, predicted at its own operating conditions.

Points live in ``planner/truth/data/points.yaml`` (package data); adding a point is adding an
entry there.  Two kinds:

* ``closed_form``: a published back-of-envelope calculation, reproduced from *our* equations
  (:func:`planner.physics.equations.speed_limit_step`) and compared with the publication's numbers.
* ``measured``: real serving software on real hardware.  Each is predicted in ``bound`` mode
  (datasheet peaks, no overheads: the speed of light, which no measurement may beat) and in
  ``realistic`` mode (the hardware specs' efficiencies), with the point's model, hardware, GPU
  count, layout, serving mode, precision, MTP and context.

How a measured point is predicted (its *basis*):

``batch``
    the point gives ``batch_per_gpu``: evaluate at that batch and compare tokens/s per GPU (per
    user when that is all the point gives; at a fixed batch the two ratios are the same).
``implied batch``
    the point gives tokens/s per user and per GPU, and their ratio (Little's law: sequences per
    GPU = per-GPU rate / per-user rate) is under one sequence per GPU: a single-request latency
    run.  Predicting per-GPU throughput at the measured per-user rate is ill-posed there (the
    frontier is vertical: a few percent of per-user speed moves the batch by orders of
    magnitude), so the point is evaluated at the implied whole number of sequences, like a
    ``batch`` point.
``rate``
    otherwise, with both rates given: tokens/s per GPU at the measured per-user rate, the batch
    solved exactly (brentq) on the point's fixed layout, the best over unknown options (MTP).
    If the configuration cannot reach the measured per-user rate at all, the compared quantity
    becomes the per-user rate of the fastest batch (one sequence).
``prefill``
    prompt tokens/s per GPU of the point's layout at its ISL, the best batch.

Aggregated points (prefill and decode on the same GPUs) decode at context ISL + OSL/2 and each
step is stretched by the chunked prefill the same GPUs carry
(:data:`planner.physics.serving_eq.t_step_aggregated`), at the same layout's prefill rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from planner.errors import SpecError
from planner.physics import compiled
from planner.physics.step import (
    CATEGORIES,
    KV_DOES_NOT_FIT,
    Precisions,
    Speculation,
    default_slots,
    evaluate_configs,
    layout_problems,
    resolve_precisions,
    resolve_speculation,
)
from planner.serving.prefill import aggregated_prefill_terms, chunked_prefill_rate
from planner.specs.hardware import Hardware
from planner.specs.model import Model
from planner.specs.reading import Fields, parse_yaml, read_yaml
from planner.specs.registry import load_hardware, load_model

KINDS = ("closed_form", "measured")
SERVINGS = ("decode", "prefill", "aggregated")
METRICS = ("output_per_gpu", "input_per_gpu")
#: |predicted / measured - 1| at or below this is "ok" in realistic mode.
OK_TOLERANCE = 0.25
#: A measurement above the bound prediction by more than this is a bound violation.
BOUND_SLACK = 0.01
#: Closed-form points must reproduce to this relative tolerance.
CLOSED_FORM_TOLERANCE = 1e-3
#: Draft counts tried when a point does not say whether MTP was on (``mtp: null``).
UNKNOWN_MTP_DRAFTS = (0, 1, 2, 3)
PREFILL_BATCH_POINTS = 96


# ---- the points ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Point:
    """One validation point, as read from ``points.yaml``."""

    id: str
    kind: str
    source: str
    model: str
    hardware: str
    note: str = ""
    stack: str = ""              #: the serving stack it was measured on ("" = not stated)
    # closed_form
    inputs: dict[str, Any] = field(default_factory=dict)
    expect: dict[str, float] = field(default_factory=dict)
    # measured
    serving: str = ""
    gpus: int = 0
    weights: str = ""
    attention: str | None = None
    kv: str = ""
    dispatch: str | None = None
    combine: str | None = None
    context: float | None = None
    isl: float | None = None
    osl: float | None = None
    batch_per_gpu: float | None = None
    mtp: Any = None              #: None = unknown, False = off, dict = drafts (+ acceptance)
    mtp_known: bool = True
    tp_attn: int = 1
    ep: int = 1
    tp_moe: int = 1
    overlap: bool = False
    measured_tps_per_user: float | None = None
    measured_tps_per_gpu: float | None = None
    metric: str = ""

    @property
    def decode_context(self) -> float:
        if self.context is not None:
            return float(self.context)
        return float(self.isl) + float(self.osl) / 2.0


def _label(path: str | Path | None) -> str:
    return str(path) if path is not None else "planner/truth/data/points.yaml"


def load_points(path: str | Path | None = None) -> list[Point]:
    """Read and check the validation points (the bundled file unless ``path``)."""
    label = _label(path)
    if path is None:
        text = resources.files("planner.truth.data").joinpath("points.yaml").read_text("utf-8")
        doc = parse_yaml(text, label)
    else:
        doc = read_yaml(path, label)
    top = Fields(doc, label)
    items = top.raw("points")
    top.done()
    if not isinstance(items, list) or not items:
        raise SpecError(label, "points", "a non-empty list of points")
    out: list[Point] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        p = _parse_point(item, label, f"points[{i}]")
        if p.id in seen:
            raise SpecError(label, f"points[{i}].id", f"a unique id, {p.id!r} appears twice")
        seen.add(p.id)
        out.append(p)
    return out


def _parse_point(item: Any, label: str, prefix: str) -> Point:
    f = Fields(item, label, prefix)
    pid = f.text("id")
    kind = f.text("kind", choices=KINDS)
    common = dict(id=pid, kind=kind, source=f.text("source"), model=f.text("model"),
                  hardware=f.text("hardware"), note=f.text("note", required=False, default=""),
                  stack=f.text("stack", required=False, default=""))
    if kind == "closed_form":
        inputs = f.raw("inputs")
        if not isinstance(inputs, dict):
            raise SpecError(label, f.path("inputs"), "a mapping of the publication's inputs")
        e = f.sub("expect")
        expect = {k: e.number(k) for k in list(e.doc)}
        e.done()
        f.done()
        inp = Fields(inputs, label, f.path("inputs"))
        for key in ("bytes_dispatch", "bytes_combine", "tokens_per_device", "experts_per_token",
                    "hidden", "layers", "micro_batches"):
            inp.number(key)
        inp.raw("link_bandwidth")
        inp.done()
        for key in ("t_comm_us", "t_layer_us", "tpot_ms", "tps_per_user"):
            if key not in expect:
                raise SpecError(label, e.path(key), "a value (the field is missing)")
        return Point(**common, inputs=dict(inputs), expect=expect)

    serving = f.text("serving", choices=SERVINGS)
    gpus = f.integer("gpus")
    pr = f.sub("precision")
    weights = pr.text("weights")
    attention = pr.text("attention", required=False)
    kv = pr.text("kv")
    dispatch = pr.text("dispatch", required=False, choices=("fp8", "bf16", "nvfp4"))
    combine = pr.text("combine", required=False, choices=("fp8", "bf16"))
    pr.done()
    context = f.number("context", required=False, lo=1.0, lo_open=False)
    isl = f.number("isl", required=False, lo=1.0, lo_open=False)
    osl = f.number("osl", required=False, lo=1.0, lo_open=False)
    if serving == "decode" and context is None:
        raise SpecError(label, f.path("context"), "the mean KV length of a decode point")
    if serving == "prefill" and isl is None:
        raise SpecError(label, f.path("isl"), "the prompt length of a prefill point")
    if serving == "aggregated" and (isl is None or osl is None):
        raise SpecError(label, f.path("isl" if isl is None else "osl"),
                        "input and output lengths of an aggregated point")
    batch = f.number("batch_per_gpu", required=False)
    f.known.add("mtp")
    if "mtp" not in f.doc:
        raise SpecError(label, f.path("mtp"), "false, null (unknown) or {draft_tokens: n, ...}")
    mtp_raw = f.doc["mtp"]
    mtp_known = mtp_raw is not None
    if mtp_raw is None or mtp_raw is False:
        mtp: Any = None if mtp_raw is None else False
    elif isinstance(mtp_raw, dict):
        m = Fields(mtp_raw, label, f.path("mtp"))
        drafts = m.integer("draft_tokens")
        mal = m.number("mean_acceptance_length", required=False, lo=1.0, lo_open=False)
        m.done()
        mtp = {"draft_tokens": drafts} | ({"mean_acceptance_length": mal} if mal else {})
    else:
        raise SpecError(label, f.path("mtp"),
                        f"false, null (unknown) or {{draft_tokens: n}}, got {mtp_raw!r}")
    lay = f.sub("layout")
    tp_attn, ep, tp_moe = lay.integer("tp_attn"), lay.integer("ep"), lay.integer("tp_moe")
    lay.done()
    if ep * tp_moe != gpus:
        raise SpecError(label, lay.path("ep"), f"ep x tp_moe = gpus ({ep} x {tp_moe} != {gpus})")
    overlap = f.boolean("overlap")
    me = f.sub("measured")
    tpu = me.number("tps_per_user", required=False)
    tpg = me.number("tps_per_gpu", required=False)
    me.done()
    metric = f.text("metric", choices=METRICS)
    f.done()
    if serving == "prefill":
        if tpg is None or metric != "input_per_gpu":
            raise SpecError(label, f.path("measured"),
                            "tps_per_gpu with metric input_per_gpu for a prefill point")
    elif metric != "output_per_gpu":
        raise SpecError(label, f.path("metric"), f"output_per_gpu for a {serving} point")
    elif tpu is None:
        raise SpecError(label, me.path("tps_per_user"), "the per-user rate of a decode/aggregated point")
    return Point(**common, serving=serving, gpus=gpus, weights=weights, attention=attention, kv=kv,
                 dispatch=dispatch, combine=combine, context=context, isl=isl, osl=osl,
                 batch_per_gpu=batch, mtp=mtp, mtp_known=mtp_known, tp_attn=tp_attn, ep=ep,
                 tp_moe=tp_moe, overlap=overlap, measured_tps_per_user=tpu, measured_tps_per_gpu=tpg,
                 metric=metric)


# ---- closed-form points ---------------------------------------------------------------------
def closed_form(point: Point) -> dict[str, Any]:
    """Reproduce a closed-form point with :func:`planner.physics.equations.speed_limit_step`."""
    from planner.physics import equations as eq
    from planner.physics.symbols import B_so, b_comb, b_disp
    from planner.specs.units import parse_quantity

    i = point.inputs
    bw = parse_quantity(str(i["link_bandwidth"]), "bandwidth", point.id, "inputs.link_bandwidth")
    exprs = eq.speed_limit_step(i["tokens_per_device"], i["experts_per_token"], i["hidden"],
                                i["layers"], i["micro_batches"])
    subs = {b_disp: i["bytes_dispatch"], b_comb: i["bytes_combine"], B_so: bw}
    got = {k: float(v.subs(subs)) for k, v in exprs.items()}
    computed = {"t_comm_us": got["t_comm"] * 1e6, "t_layer_us": got["t_layer"] * 1e6,
                "tpot_ms": got["tpot"] * 1e3, "tps_per_user": got["tps_user"]}
    rel = {k: computed[k] / point.expect[k] - 1.0 for k in computed}
    worst = max(abs(v) for v in rel.values())
    return {"id": point.id, "hardware": point.hardware, "computed": computed, "expect": dict(point.expect),
            "relative_error": rel, "worst_relative_error": worst,
            "verdict": "exact" if worst <= CLOSED_FORM_TOLERANCE else "MISMATCH"}


# ---- measured points -------------------------------------------------------------------------
@dataclass(frozen=True)
class Prediction:
    """One measured point predicted in one mode."""

    mode: str
    basis: str                 #: batch, implied batch, rate, rate (unreachable), prefill
    quantity: str              #: tps_per_gpu or tps_per_user: what is compared
    value: float               #: the predicted value of ``quantity``
    tps_per_user: float
    tps_per_gpu: float
    batch_per_gpu: float
    mtp: int
    bottleneck: str
    feasible: bool = True
    reason: str = ""


@dataclass
class _Setup:
    model: Model
    hw: Hardware
    prec: Precisions
    specs: list[Speculation]
    layout: dict[str, float]


def _setup(point: Point, hw: Hardware | None) -> _Setup:
    model = load_model(point.model)
    if hw is None:
        # realistic mode with the efficiencies fitted for the stack the point was measured on
        hw = load_hardware(point.hardware)
        if point.stack in hw.stacks:
            hw = hw.with_stack(point.stack)
    else:
        hw = load_hardware(hw)
    overrides = {"attention": point.attention} if point.attention else None
    prec = resolve_precisions(model, hw, point.weights, point.kv, overrides)
    if point.serving == "prefill":
        specs = [Speculation()]
    elif not point.mtp_known:
        specs = [resolve_speculation(model, n) for n in UNKNOWN_MTP_DRAFTS]
    else:
        specs = [resolve_speculation(model, point.mtp)]
    slots = float(default_slots(model, point.ep))
    layout = dict(G=float(point.gpus), TP_a=float(point.tp_attn), EP=float(point.ep),
                  TP_e=float(point.tp_moe), E_slots=slots)
    code = int(layout_problems(model, hw, *layout.values()))
    if code:
        from planner.physics.step import REASONS

        raise SpecError(point.id, "layout", f"a valid layout ({REASONS[code]})")
    return _Setup(model, hw, prec, specs, layout)


def _prefill_rate(s: _Setup, point: Point, mode: str, b_rank: Any, isl: float) -> dict[str, Any]:
    return evaluate_configs(s.model, s.hw, s.prec, mode, **s.layout, b=b_rank, S=isl,
                            overlap=int(point.overlap), phase="prefill")


def _decode_eval(s: _Setup, point: Point, mode: str, spec: Speculation, batch: float,
                 x_p: tuple[float, float] | None) -> dict[str, Any]:
    """Decode (or aggregated) rates at instance batch ``batch``: tps_user, tps_gpu, b_max..."""
    G, TPa = s.layout["G"], s.layout["TP_a"]
    b_rank = batch * TPa / G
    out = evaluate_configs(s.model, s.hw, s.prec, mode, **s.layout, b=b_rank, S=point.decode_context,
                           spec=spec, overlap=int(point.overlap))
    A = float(np.asarray(out["A"]))
    t = float(out["step"])
    if point.serving == "aggregated":
        rate, share = x_p
        t = float(compiled.evaluate_named("t_step_aggregated", t_step=t, I=point.isl, O=point.osl,
                                          b=b_rank, A=A, TP_a=TPa, X_p=rate,
                                          **aggregated_prefill_terms(s.model, mode, G, TPa, point.isl,
                                                                     share)))
    return {"t": t, "A": A, "tps_user": A / t, "tps_gpu": b_rank * A / (t * TPa),
            "b_max": float(out["memory.b_max"]) * G / TPa, "feasible": bool(out["feasible"]),
            "reason": int(out["reason"]), "bottleneck": CATEGORIES[int(out["bottleneck"])]}


def _aggregated_prefill_rate(s: _Setup, point: Point, mode: str) -> tuple[float, float] | None:
    """(prompt tokens/s per GPU, rank-local share) of the chunked prefill an aggregated point's
    steps carry; None for another serving mode."""
    if point.serving != "aggregated":
        return None
    rate, share = chunked_prefill_rate(s.model, s.hw, s.prec, mode, **s.layout, isl=point.isl,
                                       overlap=int(point.overlap), local_share=True)
    if math.isnan(float(rate)):
        raise SpecError(point.id, "prefill", "a feasible chunked prefill on the point's layout")
    return float(rate), float(share)


def _at_batch(s: _Setup, point: Point, mode: str, batch: float, basis: str,
              x_p: tuple[float, float] | None) -> Prediction:
    best = None
    for spec in s.specs:
        r = _decode_eval(s, point, mode, spec, batch, x_p)
        if best is None or r["tps_user"] > best[0]["tps_user"]:
            best = (r, spec)
    r, spec = best
    quantity = "tps_per_gpu" if point.measured_tps_per_gpu is not None else "tps_per_user"
    from planner.physics.step import REASONS

    return Prediction(mode, basis, quantity, r[quantity.replace("_per_", "_")], r["tps_user"], r["tps_gpu"],
                      batch / point.gpus, spec.drafts,
                      r["bottleneck"] if r["reason"] != KV_DOES_NOT_FIT else "memory_capacity",
                      r["feasible"], REASONS.get(r["reason"], ""))


def _at_rate(s: _Setup, point: Point, mode: str, x_p: tuple[float, float] | None) -> Prediction:
    target = point.measured_tps_per_user
    solved = []
    fastest = None
    for spec in s.specs:
        b_max = _decode_eval(s, point, mode, spec, 1.0, x_p)["b_max"]
        if b_max < 1.0:
            continue
        at1 = _decode_eval(s, point, mode, spec, 1.0, x_p)
        if fastest is None or at1["tps_user"] > fastest[0]["tps_user"]:
            fastest = (at1, spec)
        if at1["tps_user"] < target:
            continue
        top = _decode_eval(s, point, mode, spec, b_max, x_p)
        if top["tps_user"] >= target:
            batch, r = b_max, top
            r["bottleneck"] = "memory_capacity"
        else:
            from scipy.optimize import brentq

            batch = brentq(lambda B, sp=spec: _decode_eval(s, point, mode, sp, B, x_p)["tps_user"] - target,
                           1.0, b_max, xtol=1e-6, rtol=1e-10)
            r = _decode_eval(s, point, mode, spec, batch, x_p)
        solved.append((r, spec, batch))
    if solved:
        r, spec, batch = max(solved, key=lambda t: t[0]["tps_gpu"])
        return Prediction(mode, "rate", "tps_per_gpu", r["tps_gpu"], r["tps_user"], r["tps_gpu"],
                          batch / point.gpus, spec.drafts, r["bottleneck"])
    if fastest is None:
        return Prediction(mode, "rate", "tps_per_gpu", math.nan, math.nan, math.nan, math.nan, 0, "",
                          False, "the weights or one sequence's KV cache do not fit")
    r, spec = fastest
    return Prediction(mode, "rate (unreachable)", "tps_per_user", r["tps_user"], r["tps_user"], r["tps_gpu"],
                      1.0 / point.gpus, spec.drafts, r["bottleneck"])


def _prefill(s: _Setup, point: Point, mode: str) -> Prediction:
    G, TPa = s.layout["G"], s.layout["TP_a"]
    lo = np.log(TPa / G)
    hi = np.log(max(65536.0 / point.isl, TPa / G * 1.0001))
    b = np.exp(np.linspace(lo, hi, PREFILL_BATCH_POINTS))
    out = _prefill_rate(s, point, mode, b, point.isl)
    y = np.where(np.asarray(out["feasible"]), np.asarray(out["prefill_tps_gpu"]), -np.inf)
    i = int(np.argmax(y))
    if not np.isfinite(y[i]):
        return Prediction(mode, "prefill", "tps_per_gpu", math.nan, math.nan, math.nan, math.nan, 0, "",
                          False, "no feasible prefill batch")
    bn = CATEGORIES[int(np.asarray(out["bottleneck"]).ravel()[i])]
    return Prediction(mode, "prefill", "tps_per_gpu", float(y[i]), math.nan, float(y[i]),
                      float(b[i] * G / TPa) / point.gpus, 0, bn)


def implied_batch(point: Point, always: bool = False) -> float | None:
    """Instance batch a point implies: given, or (Little's law: concurrency = total rate / per-user
    rate) from its two rates when that is a latency run (under one sequence per GPU, rounded to
    whole sequences), or whenever ``always``; else None."""
    if point.batch_per_gpu is not None:
        return point.batch_per_gpu * point.gpus
    u, g = point.measured_tps_per_user, point.measured_tps_per_gpu
    if u is None or g is None or point.serving == "prefill":
        return None
    per_gpu = g / u
    if per_gpu < 1.0:
        return float(max(round(per_gpu * point.gpus), 1))
    if always:
        return per_gpu * point.gpus
    return None


def predict(point: Point, mode: str, hardware: Hardware | None = None, at_batch: bool = False) -> Prediction:
    """Predict a measured point in ``mode`` (``bound`` or ``realistic``); ``hardware`` replaces
    the point's system (calibration passes modified efficiencies).  ``at_batch``: evaluate every
    decode point at its implied batch (Little's law), comparing the step time, as calibration
    does, instead of per-GPU throughput at the measured per-user rate."""
    if point.kind != "measured":
        raise SpecError(point.id, "kind", "a measured point (closed-form points: closed_form())")
    s = _setup(point, hardware)
    if point.serving == "prefill":
        return _prefill(s, point, mode)
    x_p = _aggregated_prefill_rate(s, point, mode)
    batch = implied_batch(point, always=at_batch)
    if batch is not None:
        basis = "batch" if point.batch_per_gpu is not None else "implied batch"
        return _at_batch(s, point, mode, batch, basis, x_p)
    if point.measured_tps_per_gpu is None:
        raise SpecError(point.id, "measured", "tps_per_gpu, or batch_per_gpu with tps_per_user")
    return _at_rate(s, point, mode, x_p)


def measured_value(point: Point, quantity: str) -> float:
    return float(point.measured_tps_per_gpu if quantity == "tps_per_gpu" else point.measured_tps_per_user)


@dataclass
class Row:
    """One line of the scorecard."""

    point: Point
    bound: Prediction
    realistic: Prediction

    @property
    def quantity(self) -> str:
        return self.realistic.quantity

    @property
    def measured(self) -> float:
        return measured_value(self.point, self.quantity)

    @property
    def bound_ratio(self) -> float:
        """measured / bound prediction (of the bound's own compared quantity)."""
        return measured_value(self.point, self.bound.quantity) / self.bound.value

    @property
    def ratio(self) -> float:
        """measured / realistic prediction."""
        return self.measured / self.realistic.value

    @property
    def error(self) -> float:
        """|predicted / measured - 1| in realistic mode."""
        return abs(self.realistic.value / self.measured - 1.0)

    @property
    def over_bound(self) -> bool:
        return not (self.bound.feasible and self.bound_ratio <= 1.0 + BOUND_SLACK)

    @property
    def verdict(self) -> str:
        if self.over_bound:
            return "over bound"
        if not math.isfinite(self.error):
            return "no prediction"
        if self.error <= OK_TOLERANCE:
            return "ok"
        return "pred high" if self.realistic.value > self.measured else "pred low"

    def to_dict(self) -> dict[str, Any]:
        p = self.point
        return {
            "id": p.id, "model": p.model, "hardware": p.hardware, "serving": p.serving, "gpus": p.gpus,
            "basis": self.realistic.basis, "quantity": self.quantity, "measured": self.measured,
            "bound": _pred_dict(self.bound), "realistic": _pred_dict(self.realistic),
            "measured_over_bound": self.bound_ratio, "measured_over_realistic": self.ratio,
            "abs_error": self.error, "verdict": self.verdict, "source": p.source,
        }


def _pred_dict(p: Prediction) -> dict[str, Any]:
    return {"basis": p.basis, "quantity": p.quantity, "value": _finite(p.value),
            "tps_per_user": _finite(p.tps_per_user), "tps_per_gpu": _finite(p.tps_per_gpu),
            "batch_per_gpu": _finite(p.batch_per_gpu), "mtp": p.mtp, "bottleneck": p.bottleneck,
            "feasible": p.feasible, "reason": p.reason}


def _finite(v: float) -> float | None:
    return float(v) if v is not None and math.isfinite(v) else None


@dataclass
class Scorecard:
    rows: list[Row]
    closed: list[dict[str, Any]]

    @property
    def violations(self) -> list[Row]:
        return [r for r in self.rows if r.over_bound]

    @property
    def errors(self) -> np.ndarray:
        return np.array([r.error for r in self.rows], dtype=float)

    @property
    def median_error(self) -> float:
        e = self.errors
        return float(np.median(e)) if e.size else math.nan

    @property
    def worst(self) -> Row | None:
        return max(self.rows, key=lambda r: r.error if math.isfinite(r.error) else math.inf, default=None)

    @property
    def closed_ok(self) -> bool:
        return all(c["verdict"] == "exact" for c in self.closed)

    def summary(self) -> dict[str, Any]:
        w = self.worst
        return {"measured_points": len(self.rows), "bound_violations": len(self.violations),
                "violating_ids": [r.point.id for r in self.violations],
                "realistic_median_abs_error": _finite(self.median_error),
                "realistic_worst_abs_error": _finite(w.error) if w else None,
                "worst_id": w.point.id if w else None,
                "within_tolerance": int(sum(r.verdict == "ok" for r in self.rows)),
                "tolerance": OK_TOLERANCE,
                "closed_form_points": len(self.closed), "closed_form_exact": self.closed_ok}

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.summary(), "points": [r.to_dict() for r in self.rows],
                "closed_form": self.closed}


def scorecard(points: list[Point] | None = None, hardware: dict[str, Hardware] | None = None) -> Scorecard:
    """Predict every point; ``hardware`` maps system names to replacements (calibration)."""
    points = load_points() if points is None else points
    hardware = hardware or {}
    rows, closed = [], []
    for p in points:
        if p.kind == "closed_form":
            closed.append(closed_form(p))
            continue
        hw = hardware.get(p.hardware)
        rows.append(Row(p, predict(p, "bound", hw), predict(p, "realistic", hw)))
    return Scorecard(rows, closed)


def format_scorecard(card: Scorecard) -> str:
    from planner.outputs import table

    lines = ["# validation scorecard: measured vs predicted at each point's own operating conditions",
             "# ratio = measured / predicted; bound = datasheet peaks, no overheads (must be >= measured);"
             f" realistic 'ok' within {OK_TOLERANCE:.0%}"]
    rows = []
    for r in card.rows:
        q = "tok/s/GPU" if r.quantity == "tps_per_gpu" else "tok/s/user"
        if r.point.serving == "prefill":
            q = "in tok/s/GPU"
        rows.append([r.point.id, r.point.hardware, r.realistic.basis, q, r.measured, r.bound.value,
                     r.bound_ratio, r.realistic.value, r.ratio, f"{r.error:.0%}" if math.isfinite(r.error)
                     else "-", r.realistic.bottleneck, r.verdict])
    lines.append(table(rows, ["point", "hardware", "basis", "compared", "measured", "bound", "meas/bound",
                              "realistic", "meas/real", "error", "real. binds", "verdict"]))
    if card.closed:
        lines.append("")
        lines.append("# closed-form points (reproduced from our communication equations)")
        crow = []
        for c in card.closed:
            for k in ("t_comm_us", "t_layer_us", "tpot_ms", "tps_per_user"):
                crow.append([c["id"], k, c["expect"][k], c["computed"][k], f"{c['relative_error'][k]:+.2e}",
                             c["verdict"]])
        lines.append(table(crow, ["point", "quantity", "published", "computed", "rel. error", "verdict"]))
    s = card.summary()
    lines.append("")
    lines.append(f"# bound violations: {s['bound_violations']}"
                 + (f" ({', '.join(s['violating_ids'])})" if s["violating_ids"] else ""))
    if s["realistic_median_abs_error"] is not None:
        lines.append(f"# realistic mode |pred/meas - 1| over {s['measured_points']} measured points: median "
                     f"{s['realistic_median_abs_error']:.0%}, worst {s['realistic_worst_abs_error']:.0%} "
                     f"({s['worst_id']}); {s['within_tolerance']} within {OK_TOLERANCE:.0%}")
    lines.append(f"# closed-form points: {'all reproduced' if card.closed_ok else 'MISMATCH'} "
                 f"(tolerance {CLOSED_FORM_TOLERANCE:.1%})")
    return "\n".join(lines)
