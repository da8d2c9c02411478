"""Comparing two systems: both frontiers, their ratio, and why (counterfactual swaps)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from planner.errors import SpecError, shown
from planner.serving.frontiers import frontier, frontier_at
from planner.serving.search import pareto
from planner.specs.hardware import Hardware
from planner.specs.scenario import Scenario

DEFAULT_LEVELS = (10.0, 20.0, 50.0, 100.0, 200.0)
#: A frontier below this fraction of its own peak is in its tail (see Comparison.ratio).
USEFUL = 0.05


def envelope(front: pd.DataFrame, x: np.ndarray, y: str = "tps_per_gpu") -> np.ndarray:
    """Frontier value at each rate in ``x``, interpolated between frontier points (linear in
    log x, as the frontier is drawn); NaN outside the frontier's range."""
    f = front.sort_values("tps_per_user")
    xs, ys = f.tps_per_user.to_numpy(), f[y].to_numpy()
    out = np.interp(np.log(x), np.log(xs), ys, left=np.nan, right=np.nan)
    return np.asarray(out)


def _two(scenario: Scenario | None) -> Scenario:
    """``scenario`` (default: the main job's) checked for a comparison: two systems, a serving mode
    with tokens/s per user."""
    sc = Scenario() if scenario is None else scenario
    if not isinstance(sc, Scenario):
        raise SpecError("<input>", "scenario", f"a Scenario (planner.Scenario(model, (A, B), ...)), got "
                        f"{type(sc).__name__}")
    if len(sc.systems) != 2:
        raise SpecError("<input>", "hardware", f"two systems, A then B, got {len(sc.systems)}")
    if sc.serving == "prefill":
        raise SpecError("<input>", "serving", "decode, aggregated or disaggregated: a comparison is "
                        "made at tokens/s per user, which a prefill pool does not have (use "
                        "frontier --serving prefill for each system)")
    return sc


@dataclass
class Comparison:
    """Two frontiers, the ratio curve, and the table at chosen interactivity levels."""

    a: pd.DataFrame
    b: pd.DataFrame
    ratio: pd.DataFrame
    table: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)
    #: rates -> (per-GPU ratio, per-MW ratio, both useful) with each side solved exactly at each
    #: rate, as the table's rows are (:func:`crossings` checks the curve's intervals with it)
    solve: Any = field(default=None, repr=False, compare=False)


def ratio_curve(fa: pd.DataFrame, fb: pd.DataFrame, ha: Hardware, hb: Hardware,
                points: int = 200) -> pd.DataFrame:
    """The ratio A/B of two frontiers (per GPU and per MW) at ``points`` rates spaced
    geometrically over the interactivity range both reach, each frontier interpolated as drawn
    (:func:`envelope`); ``both_useful`` marks the rates where neither is in its tail."""
    lo = max(fa.tps_per_user.min(), fb.tps_per_user.min())
    hi = min(fa.tps_per_user.max(), fb.tps_per_user.max())
    x = np.geomspace(lo, hi, points) if hi > lo else np.array([])
    ya, yb = envelope(fa, x), envelope(fb, x)
    ratio = pd.DataFrame({"tps_per_user": x, "tps_per_gpu_a": ya, "tps_per_gpu_b": yb,
                          "ratio": ya / yb,
                          "ratio_per_mw": (ya / ha.power_per_gpu) / (yb / hb.power_per_gpu)})
    # where either system is down to a few percent of its own peak (the tail of its frontier), the
    # ratio of two small numbers says little: flag it, so plots and maxima can leave it out
    ratio["both_useful"] = _both_useful(ya, yb, fa, fb)
    return ratio


def _both_useful(ya: Any, yb: Any, fa: pd.DataFrame, fb: pd.DataFrame) -> np.ndarray:
    """Where tokens/s per GPU ``ya`` and ``yb`` are both at least :data:`USEFUL` of their
    frontier's peak (``fa``, ``fb``): outside either one's tail."""
    return np.asarray((np.asarray(ya, float) >= USEFUL * fa.tps_per_gpu.max())
                      & (np.asarray(yb, float) >= USEFUL * fb.tps_per_gpu.max()))


#: curve points, largest useful ratio first, tried as the table's "largest" row
LARGEST_CANDIDATES = 8


def _top_rates(x: np.ndarray, y: np.ndarray, idx: np.ndarray) -> list[float]:
    """The rates of the curve points ``idx`` of largest ratio ``y``, largest first, at 3
    significant figures as the table's rows are, without repeats: at most
    :data:`LARGEST_CANDIDATES`."""
    out: list[float] = []
    for k in idx[np.argsort(-y[idx], kind="stable")]:
        v = float(f"{x[k]:.3g}")
        if v not in out:
            out.append(v)
        if len(out) == LARGEST_CANDIDATES:
            break
    return out


def _largest_useful_rate(ratio: pd.DataFrame, solve: Any) -> float | None:
    """The rate (3 significant figures) of the ratio curve's largest useful value, where the
    table, which solves each row exactly (``solve``: :attr:`Comparison.solve`), finds both sides
    useful there too: the curve's interpolated frontiers and the solved ones can disagree at a
    frontier's tail, so the curve's :data:`LARGEST_CANDIDATES` largest useful points are solved,
    largest first, and the first still useful is taken (at ISL 8192 the curve's largest, 9.6x at
    197 tokens/s/user, has the H200 at 4.97% of its peak when solved; the table then quoted an
    asked level's 5.9x)."""
    useful = ratio[ratio.both_useful & np.isfinite(ratio.ratio)]
    if useful.empty:
        return None
    cands = _top_rates(useful.tps_per_user.to_numpy(float), useful.ratio.to_numpy(float),
                       np.arange(len(useful)))
    if solve(cands[:1])[2][0]:  # the usual case: one solve
        return cands[0]
    if len(cands) == 1:
        return None
    ok = solve(cands[1:])[2]
    return cands[1 + int(np.argmax(ok))] if ok.any() else None


def compare(scenario: Scenario | None = None, levels: tuple[float, ...] = DEFAULT_LEVELS) -> Comparison:
    """Frontiers of the scenario's model on its two systems (default: the main job, Kimi K2
    Thinking on GB200 NVL72 and HGX H200; each at its best precision unless ``weights`` is given),
    their ratio over the common interactivity range, and at ``levels`` (tokens/s/user): tokens/s
    per GPU and per MW on each side, the ratios, and the binding term of each.

    The table also holds the rate of the ratio curve's largest useful value (``asked`` False);
    ``both_useful`` flags rows where both sides give at least ``USEFUL`` of their peak, and
    ``largest`` the useful row with the largest per-GPU ratio (the one a summary quotes)."""
    sc = _two(scenario)
    _check_rates("levels", levels)
    m = sc.load_model()
    ha, hb = sc.load_systems()
    sa_, sb_ = sc.replace(model=m, stack=None).on(ha), sc.replace(model=m, stack=None).on(hb)
    pts_a = frontier(sa_, all_points=True)
    pts_b = frontier(sb_, all_points=True)
    fa, fb = pareto(pts_a), pareto(pts_b)
    fa.attrs.update(pts_a.attrs)
    fb.attrs.update(pts_b.attrs)
    ratio = ratio_curve(fa, fb, ha, hb)

    def solve(xs: list[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sa, sb = frontier_at(sa_, xs, points=pts_a), frontier_at(sb_, xs, points=pts_b)
        ya, yb = sa.tps_per_gpu.to_numpy(float), sb.tps_per_gpu.to_numpy(float)
        return ya / yb, (ya / ha.power_per_gpu) / (yb / hb.power_per_gpu), _both_useful(ya, yb, fa, fb)

    # the table's rates: the levels asked, and the rate of the curve's largest useful ratio, so
    # that the largest ratio quoted is a row of the table (computed as every row is)
    rows_at = [float(v) for v in levels]
    x_max = _largest_useful_rate(ratio, solve)
    if x_max is not None and all(not np.isclose(x_max, v, rtol=1e-3) for v in rows_at):
        rows_at.append(x_max)
    rows_at = sorted(set(rows_at))
    ta = frontier_at(sa_, rows_at, points=pts_a)
    tb = frontier_at(sb_, rows_at, points=pts_b)
    table = pd.DataFrame({"tps_per_user": rows_at,
                          "asked": [any(np.isclose(x, float(v)) for v in levels) for x in rows_at]})
    for tag, t in (("a", ta), ("b", tb)):
        table[f"tps_per_gpu_{tag}"] = t.tps_per_gpu.to_numpy()
        table[f"tps_per_mw_{tag}"] = t.get("tps_per_mw", pd.Series(np.nan, index=t.index)).to_numpy()
        rental = t.get("usd_per_mtok_rental", pd.Series(np.nan, index=t.index))
        table[f"usd_per_mtok_rental_{tag}"] = rental.to_numpy()
        table[f"bottleneck_{tag}"] = t.get("bottleneck", pd.Series(None, index=t.index)).to_numpy()
        table[f"weights_{tag}"] = t.get("weights", pd.Series(None, index=t.index)).to_numpy()
        gpus = t.get("gpus", pd.Series(np.nan, index=t.index)).to_numpy(float)
        table[f"gpus_{tag}"] = pd.Series([int(g) if np.isfinite(g) else None for g in gpus], dtype=object)
    # the fastest per-user rate each system reaches: a level above it is out of reach (NaN)
    table["max_tps_per_user_a"] = float(fa.tps_per_user.max())
    table["max_tps_per_user_b"] = float(fb.tps_per_user.max())
    table["ratio"] = table.tps_per_gpu_a / table.tps_per_gpu_b
    table["ratio_per_mw"] = table.tps_per_mw_a / table.tps_per_mw_b
    # the same rule as the curve's: a ratio where either side is in its tail is shown, not quoted
    table["both_useful"] = _both_useful(table.tps_per_gpu_a, table.tps_per_gpu_b, fa, fb)
    table["largest"] = False
    ok = table[table.both_useful & np.isfinite(table.ratio)]
    if not ok.empty:
        table.loc[ok.ratio.idxmax(), "largest"] = True
    settings = {**pts_a.attrs, "scenario": sc.to_dict(), "hardware_a": ha.name, "hardware_b": hb.name,
                "power_factor": hb.power_per_gpu / ha.power_per_gpu,
                "calibration": f"{pts_a.attrs['calibration']}; {pts_b.attrs['calibration']}"}
    settings.pop("hardware", None)
    return Comparison(fa, fb, ratio, table, settings, solve)


def confirmed(x: Any, y: Any, threshold: float, solve: Any, per_mw: bool = False) -> list[list[float]]:
    """:func:`crossing_intervals` of the curve (``x``, ``y``), each kept only where the ratio solved
    exactly (``solve``: :attr:`Comparison.solve`), at 3 significant figures as the table's rows
    are, is useful and at least ``threshold`` at one of the interval's :data:`LARGEST_CANDIDATES`
    largest curve points: at a frontier's tail the curve's interpolated frontiers and the solved
    ones can disagree (RTX 6000D against H20: the curve above 10x at 18-19 tokens/s per user,
    solved 6.4x), and the summary must not say 10x where no solved row does.  Without ``solve``,
    the curve's."""
    spans = crossing_intervals(x, y, threshold)
    if solve is None or not spans:
        return spans
    xv, yv = np.asarray(x, float), np.asarray(y, float)
    cands: list[list[float]] = []
    for lo, hi in spans:
        inside = np.flatnonzero((xv >= lo * (1 - 1e-9)) & (xv <= hi * (1 + 1e-9)) & np.isfinite(yv))
        cands.append(_top_rates(xv, yv, inside) or [float(f"{lo:.3g}")])
    flat = [v for c in cands for v in c]
    gpu, mw, useful = solve(flat)
    ok = useful & np.isfinite(mw if per_mw else gpu) & ((mw if per_mw else gpu) >= threshold)
    out, i = [], 0
    for span, c in zip(spans, cands, strict=True):
        if ok[i:i + len(c)].any():
            out.append(span)
        i += len(c)
    return out


def crossing_intervals(x: np.ndarray, y: np.ndarray, threshold: float) -> list[list[float]]:
    """Every interval of rates ``x`` (ascending) where the ratio ``y`` is at least ``threshold``:
    [from, to] in tokens/s per user each, the edges interpolated linearly in log x between grid
    points (a ratio that dips below the threshold and comes back gives two)."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    above = np.isfinite(y) & (y >= threshold)

    def edge(k0: int, k1: int) -> float:  # where y crosses threshold between grid points k0, k1
        y0, y1 = y[k0], y[k1]
        if not (np.isfinite(y0) and np.isfinite(y1)) or y1 == y0:
            return float(x[k1] if k1 > k0 else x[k0])
        t = (threshold - y0) / (y1 - y0)
        return float(np.exp(np.log(x[k0]) + t * (np.log(x[k1]) - np.log(x[k0]))))

    out, i = [], 0
    while i < len(x):
        if not above[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(x) and above[j + 1]:
            j += 1
        lo = edge(i - 1, i) if i > 0 else float(x[0])
        out.append([lo, edge(j, j + 1) if j + 1 < len(x) else float(x[-1])])
        i = j + 1
    return out


def crossing(x: np.ndarray, y: np.ndarray, threshold: float) -> list[float] | None:
    """The first of :func:`crossing_intervals`; None where the ratio never reaches ``threshold``."""
    spans = crossing_intervals(x, y, threshold)
    return spans[0] if spans else None


def crossings(ratio: pd.DataFrame, threshold: float, band: pd.DataFrame | None = None,
              power_factor: float = 1.0, solve: Any = None) -> dict[str, Any]:
    """Where the per-GPU and per-MW ratios first reach ``threshold``, on the rates where both
    systems are useful (see :class:`Comparison`): for each, the nominal interval (the first),
    every nominal interval (``intervals``, where the ratio dips below it and back) and, with a
    ratio ``band`` (:func:`planner.truth.uncertainty.ratio_band_curve`), the intervals where its
    upper edge (``earliest``: the ratio may reach it) and its lower edge (``surely``) do, over
    the same useful range.
    ``power_factor`` turns a per-GPU ratio into the per-MW one (power per GPU of B over A).
    ``solve`` (:attr:`Comparison.solve`): the nominal intervals are those :func:`confirmed`."""
    use = ratio[ratio.both_useful] if "both_useful" in ratio else ratio
    out: dict[str, Any] = {"threshold": float(threshold)}
    for key, col, f in (("per_gpu", "ratio", 1.0), ("per_mw", "ratio_per_mw", power_factor)):
        spans = confirmed(use.tps_per_user, use[col], threshold, solve, per_mw=key == "per_mw")
        entry: dict[str, Any] = {"nominal": spans[0] if spans else None, "intervals": spans}
        if band is not None:
            # on the same useful range as the nominal curve (past it, a ratio of small numbers)
            x = band.tps_per_user
            b = band[(x >= use.tps_per_user.min()) & (x <= use.tps_per_user.max())]
            entry["earliest"] = crossing(b.tps_per_user, b.hi * f, threshold)
            entry["surely"] = crossing(b.tps_per_user, b.lo * f, threshold)
        out[key] = entry
    return out


#: The chain of swaps that turns system B into system A, one resource at a time.
CHAIN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tensor-core FLOP/s (incl. FP4)", ("flops",)),
    ("HBM bandwidth", ("hbm_bandwidth",)),
    ("HBM capacity", ("hbm_capacity",)),
    ("scale-up domain (size, NVLink bandwidth, latency)", ("domain_size", "su_bandwidth",
                                                            "su_latency", "gpus_per_system")),
    ("scale-out NIC and CPU-attached memory", ("so_bandwidth", "so_latency", "host_capacity",
                                               "host_bandwidth")),
    # the GPU family sets the GEMM tile height the realistic GEMM law pads rows to, the SM count
    # the waves its tiles run in; the serving stack how its kernels are dispatched (all-reduce
    # reach, shared experts on a second stream), which A's fitted efficiencies assume; its other
    # stacks lend the laws a stack lacks (planner.physics.step.first_law)
    ("efficiencies, overheads, GEMM tiles and serving stack", ("efficiency", "family", "sm_count", "stack",
                                                               "stacks")),
)


def _y_at(sc: Scenario, x: float, points: pd.DataFrame | None = None) -> tuple[float, str]:
    try:
        t = frontier_at(sc, [x], points=points)
    except SpecError as exc:
        if exc.field != "search":
            raise
        # a counterfactual system none of whose recipe deployments fits (e.g. less HBM)
        return math.nan, "no recipe fits"
    r = t.iloc[0]
    return float(r.tps_per_gpu), str(r.get("bottleneck", ""))


def _check_rates(name: str, values: Any) -> None:
    """Tokens/s per user asked of a comparison: finite and positive, each (as the CLI takes them)."""
    try:
        vals = list(values)
    except TypeError:
        vals = [values]
    if not vals:
        raise SpecError("<input>", name, "at least one rate in tokens/s per user")
    for v in vals:
        if isinstance(v, bool) or not isinstance(v, int | float | np.number) or not (
                np.isfinite(v) and v > 0):
            raise SpecError("<input>", name, f"positive finite rates in tokens/s per user, got {shown(v)}")


def explain(scenario: Scenario | None = None, at: float = 50.0) -> pd.DataFrame:
    """Decompose the per-GPU throughput ratio A/B of the scenario's two systems (default: the
    main job's) at ``at`` tokens/s/user into causes.

    Chain: start from B and swap in A's resources one group at a time (:data:`CHAIN`); each
    row's ``factor`` is the throughput after the swap over before, so the factors multiply to
    the whole ratio.  Then single counterfactuals: B with A's scale-up domain, B with FP4 tensor
    cores (2x its FP8 rate), A cut to 8-GPU domains with B's NIC between them, A with B's HBM.
    """
    sc = _two(scenario)
    _check_rates("at", [at])
    m = sc.load_model()
    ha, hb = sc.load_systems()
    sc = sc.replace(model=m, stack=None)
    pts_a, pts_b = (frontier(sc.on(h), all_points=True) for h in (ha, hb))
    tops = [(h.name, float(p.tps_per_user.max())) for h, p in ((ha, pts_a), (hb, pts_b))]
    short = [f"{name} tops out at {top:.4g}" for name, top in tops if not at <= top]
    if short:
        raise SpecError("<input>", "at", f"a rate both systems reach, got {at:g} tokens/s/user: "
                        f"{', '.join(short)}; both reach up to {min(t for _, t in tops):.4g} "
                        "tokens/s/user")
    rows = []
    cur = hb
    y_cur, bn = _y_at(sc.on(cur), at, points=pts_b)
    rows.append(dict(kind="chain", step=f"{hb.name} as is", tps_per_gpu=y_cur, factor=1.0,
                     cumulative=1.0, bottleneck=bn))
    y0 = y_cur
    for label, fields in CHAIN:
        cur = cur.replace(**{f: getattr(ha, f) for f in fields})
        y_new, bn = _y_at(sc.on(cur), at)
        rows.append(dict(kind="chain", step=f"+ {ha.name} {label}", tps_per_gpu=y_new,
                         factor=y_new / y_cur, cumulative=y_new / y0, bottleneck=bn))
        y_cur = y_new
    ya, bna = _y_at(sc.on(ha), at, points=pts_a)
    if pts_a.attrs.get("search") in ("rules", "recipes"):
        # the as-deployed search offers each system its own stacks' launch recipes (by name): the
        # last step of the chain is A's recipes in place of B's on A's resources
        rows.append(dict(kind="chain", step=f"+ {ha.name} launch recipes (the layouts and workers its "
                         "stacks ship)", tps_per_gpu=ya, factor=ya / y_cur, cumulative=ya / y0,
                         bottleneck=bna))
    singles = [
        (f"{hb.name} with a {ha.domain_size}-GPU scale-up domain",
         hb.replace(domain_size=ha.domain_size, gpus_per_system=ha.domain_size), y0),
        (f"{hb.name} with FP4 tensor cores (2x FP8)",
         hb.replace(flops={**hb.flops, "fp4": 2 * hb.flops["fp8"]}), y0),
        (f"{ha.name} cut to {hb.domain_size}-GPU domains, {hb.name} NIC between them",
         ha.replace(domain_size=hb.domain_size, gpus_per_system=hb.domain_size,
                    so_bandwidth=hb.so_bandwidth, so_latency=hb.so_latency), ya),
        (f"{ha.name} with {hb.name} HBM", ha.replace(hbm_bandwidth=hb.hbm_bandwidth,
                                                      hbm_capacity=hb.hbm_capacity), ya),
    ]
    for label, hw, base in singles:
        y, bn = _y_at(sc.on(hw), at)
        rows.append(dict(kind="counterfactual", step=label, tps_per_gpu=y, factor=y / base,
                         cumulative=np.nan, bottleneck=bn))
    out = pd.DataFrame(rows)
    out.attrs.update(model=m.name, hardware_a=ha.name, hardware_b=hb.name, at_tps_per_user=at,
                     ratio=ya / y0)
    return out
