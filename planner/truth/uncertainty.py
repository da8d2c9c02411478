"""Uncertainty bands on a frontier: Monte Carlo over the realistic-mode efficiencies.

Each draw replaces the system's efficiencies (:func:`planner.truth.calibrate.sampled_efficiencies`):
the fitted ones from the calibration's covariance (log-normal, recorded in the spec's
``calibration:`` block), the others uniform within +-15% of their value (or every one of them
with ``method='ranges'``).  For every draw the whole frontier is searched again (the best
configuration may change with the efficiencies) and read at a common grid of tokens/s per user.
``lo``/``hi`` are the 5th/95th percentiles over the draws, ``mid`` the median; a draw that cannot
reach a rate at all counts as zero throughput there.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from planner.errors import SpecError, shown
from planner.outputs import progress
from planner.serving.comparison import envelope
from planner.serving.frontiers import frontier
from planner.specs.hardware import Hardware
from planner.specs.model import Model
from planner.specs.scenario import Scenario
from planner.truth.calibrate import sampled_efficiencies

#: Systems with measurements of their own (serving runs or kernel tables in planner/truth/data):
#: their band is the fits' covariance alone.
MEASURED_SYSTEMS = ("gb200-nvl72", "gb300-nvl72", "hgx-b200", "hgx-b300", "hgx-h100", "hgx-h200")
#: Log-sd of a system's throughput predicted from its datasheet and a family member's laws: the
#: datasheet-only refits (validate --runs --leave-out system, 2026-12-04, the step composed of the
#: kernel laws: all-to-all, decode attention, grouped MoE) put the held-out systems' TPOT median
#: |error| at 10.5-15.7% (12.4% the middle of the five; 10-15% and 12.8% before the attention and
#: MoE laws entered the step), a log-normal with median |ln r| 0.117: sigma = 0.117 / 0.6745 = 0.17.
DATASHEET_ONLY_LOG_SD = 0.17
#: The same for a system whose GPU family nobody here has measured (efficiencies and compute-kernel
#: laws borrowed from another vendor's family): the AMD platforms' TPOT median |error| on the
#: public measured frontier points (validate --frontiers, 2026-12-04, after a spec without an SM
#: count took its law donor's) reaches 46% (MI300X; MI325X 44%, MI355X 11%; 39%, 37% and 26% before
#: that change): ln 1.46 / 0.6745 = 0.56.
UNMEASURED_FAMILY_LOG_SD = 0.56
DEFAULT_SAMPLES = 100  # the 5th/95th percentiles between the 5th and 6th of 100 draws: stable
DEFAULT_SEED = 20250
GRID_POINTS = 40
QUANTILES = (5.0, 95.0)


def frontier_band(scenario: Scenario, *, samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED,
                  method: str = "auto", rel: float = 0.15, grid: np.ndarray | None = None,
                  base: pd.DataFrame | None = None) -> pd.DataFrame:
    """Band around the realistic frontier of ``scenario`` (one system).

    ``method``: ``auto`` (the fit covariance where the spec records a calibration, declared
    +-``rel`` ranges for the rest), ``fit`` (require a recorded fit) or ``ranges`` (+-``rel`` on
    every efficiency).  The scenario's ``mode`` must be realistic: bound mode has no efficiencies to
    vary.  ``grid``: tokens/s per user to read the
    band at (default: ``GRID_POINTS`` log-spaced over the nominal frontier).  ``base``: the
    nominal frontier, if already computed with the same scenario.

    Returns a DataFrame with ``tps_per_user``, ``lo``, ``mid``, ``hi`` (tokens/s per GPU in the
    frontier's metric), ``nominal`` and ``reach`` (fraction of draws that reach the rate).
    """
    sc = scenario
    model, hw = sc.load_model(), sc.load_system()
    sc = sc.replace(model=model, systems=(hw,), stack=None)
    if sc.mode != "realistic":
        raise SpecError("<input>", "mode", "realistic for an uncertainty band (bound mode has no "
                        "efficiencies to vary)")
    if sc.serving == "prefill":
        raise SpecError("<input>", "serving", "decode, aggregated or disaggregated for a band on "
                        "tokens/s per user")
    if method not in ("auto", "fit", "ranges"):
        raise SpecError("<input>", "method", f"auto, fit or ranges, got {method!r}")
    if not (isinstance(samples, int) and 2 <= samples <= 1000):
        raise SpecError("<input>", "samples", f"an integer from 2 to 1000, got {shown(samples)}")
    nominal = base if base is not None else frontier(sc)
    if grid is None:
        x = nominal.tps_per_user.to_numpy(float)
        grid = np.geomspace(x.min(), x.max(), GRID_POINTS) if x.max() > x.min() else x[:1]
    grid = np.asarray(grid, dtype=float)
    rng = np.random.default_rng(seed)
    ys = np.zeros((samples, grid.size))
    models = acceptance_draws(model, samples, seed, given=sc.acceptance is not None)
    sd = unmeasured_log_sd(hw)
    # a system without measurements of its own: each draw also carries the datasheet-only error,
    # one log-normal factor on its throughput (its own seed: a measured system's draws are unchanged)
    extra = np.exp(np.random.default_rng(seed + 2).normal(0.0, sd, samples)) if sd else np.ones(samples)
    draws = sampled_efficiencies(hw, rng, samples, rel=rel, method=method)
    for i, eff in enumerate(progress(draws, f"band of {hw.name}")):
        try:
            f = frontier(sc.replace(model=models[i], systems=(hw.replace(efficiency=eff),)))
        except SpecError:
            continue  # nothing fits with these efficiencies: zero everywhere
        y = envelope(f, grid) if len(f) > 1 else np.where(np.isclose(grid, f.tps_per_user.iloc[0]),
                                                           f.tps_per_gpu.iloc[0], np.nan)
        # below the draw's slowest point the frontier continues flat (more batch cannot help)
        slowest = f.tps_per_user.min()
        y = np.where(grid < slowest, f.tps_per_gpu.max(), y)
        ys[i] = np.nan_to_num(y, nan=0.0) * extra[i]
    lo, mid, hi = np.percentile(ys, [QUANTILES[0], 50.0, QUANTILES[1]], axis=0)
    out = pd.DataFrame({"tps_per_user": grid, "lo": lo, "mid": mid, "hi": hi,
                        "nominal": envelope(nominal, grid) if len(nominal) > 1 else np.nan,
                        "reach": (ys > 0).mean(axis=0)})
    out.attrs.update(nominal.attrs, band_samples=samples, band_seed=seed, band_method=method,
                     band_quantiles=QUANTILES, band_rel=rel, band_datasheet_log_sd=sd)
    out.attrs["draws"] = ys  # tokens/s per GPU of every draw at every grid rate (samples x grid)
    return out


def unmeasured_log_sd(hw: Hardware) -> float:
    """The extra log-sd of a band for a system without measurements of its own (0 for one with
    them): :data:`DATASHEET_ONLY_LOG_SD`, or :data:`UNMEASURED_FAMILY_LOG_SD` where its GPU is not
    NVIDIA's (its efficiencies are borrowed from another vendor's family)."""
    name = hw.name.split("@")[0]
    if name in MEASURED_SYSTEMS:
        return 0.0
    other_vendor = any(w in hw.gpu_model for w in ("AMD", "Instinct", "CDNA", "TPU", "Trainium"))
    return UNMEASURED_FAMILY_LOG_SD if other_vendor else DATASHEET_ONLY_LOG_SD


def acceptance_draws(model: Model, samples: int, seed: int = DEFAULT_SEED, given: bool = False
                     ) -> list[Model]:
    """``samples`` copies of ``model`` whose speculative acceptance is drawn within its declared
    range (``speculation.tokens_per_step_range``): a share f of the accepted drafts, uniform
    between the range's edges at the draft count it is given for, scales every measured entry,
    ``1 + (A(n) - 1) f``, capped at n + 1.  Unchanged copies where there is no range or the
    acceptance is ``given``.  The draws depend on ``seed`` alone, so two systems' bands drawn
    with one seed pair the same acceptance (a property of the model, not of the system)."""
    if given or not model.spec_range:
        return [model] * samples
    n, (lo, hi) = next(iter(model.spec_range.items()))
    a = model.spec_tokens[n]
    if a <= 1.0:
        return [model] * samples
    q = np.random.default_rng(seed + 1).uniform((lo - 1.0) / (a - 1.0), (hi - 1.0) / (a - 1.0), samples)
    return [model.replace(spec_tokens={k: min(1.0 + (v - 1.0) * f, k + 1.0)
                                       for k, v in model.spec_tokens.items()}) for f in q]


def ratio_band_curve(band_a: pd.DataFrame, band_b: pd.DataFrame) -> pd.DataFrame:
    """5th / 50th / 95th percentile over paired draws of the per-GPU ratio A/B at each rate of
    the bands' common grid (NaN where no pair of draws reaches the rate on both sides)."""
    ya, yb = band_a.attrs.get("draws"), band_b.attrs.get("draws")
    x = band_a.tps_per_user.to_numpy(float)
    if ya is None or yb is None or ya.shape != yb.shape:
        raise SpecError("<input>", "band", "two bands read on one grid with the same number of draws")
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where((ya > 0) & (yb > 0), ya / yb, np.nan)
    ok = np.isfinite(r).any(axis=0)
    q = np.full((3, x.size), np.nan)
    if ok.any():
        q[:, ok] = np.nanpercentile(r[:, ok], [QUANTILES[0], 50.0, QUANTILES[1]], axis=0)
    return pd.DataFrame({"tps_per_user": x, "lo": q[0], "mid": q[1], "hi": q[2]})


def band_columns(front: pd.DataFrame, band: pd.DataFrame) -> pd.DataFrame:
    """``front`` with the band read at each of its points (linear in log x, as drawn):
    ``band_lo``, ``band_mid``, ``band_hi`` (tokens/s per GPU) and ``band_reach``; NaN outside the
    band's grid."""
    x = np.log(front.tps_per_user.to_numpy(float))
    gx = np.log(band.tps_per_user.to_numpy(float))
    out = front.copy()
    for c in ("lo", "mid", "hi", "reach"):
        out[f"band_{c}"] = np.interp(x, gx, band[c].to_numpy(float), left=np.nan, right=np.nan)
    out.attrs.update(front.attrs)
    return out


def largest_ratio_band(band_a: pd.DataFrame, band_b: pd.DataFrame, useful: float = 0.05
                       ) -> dict[str, float]:
    """5th/50th/95th percentile over paired draws of the largest per-GPU ratio A/B, both bands
    read on one grid; a rate counts where both draws still give at least ``useful`` of their own
    peak (as :func:`planner.serving.comparison.compare` does for the nominal ratio)."""
    ya, yb = band_a.attrs.get("draws"), band_b.attrs.get("draws")
    if ya is None or yb is None or ya.shape != yb.shape or not np.allclose(
            band_a.tps_per_user, band_b.tps_per_user):
        raise SpecError("<input>", "bands", "two bands read on the same grid")
    ok = (ya >= useful * ya.max(axis=1, keepdims=True)) & (yb >= useful * yb.max(axis=1, keepdims=True))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(ok & (yb > 0), ya / yb, np.nan)
    best = np.array([np.nanmax(row) if np.isfinite(row).any() else np.nan for row in r])
    best = best[np.isfinite(best)]
    if best.size == 0:
        return {"lo": math.nan, "mid": math.nan, "hi": math.nan, "draws": 0}
    lo, mid, hi = np.percentile(best, [QUANTILES[0], 50.0, QUANTILES[1]])
    return {"lo": float(lo), "mid": float(mid), "hi": float(hi), "draws": int(best.size)}
