"""Frontier plots the way the field draws them: x tokens/s per user, y tokens/s per GPU."""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.backend_bases
import matplotlib.lines
import matplotlib.ticker
import numpy as np
import pandas as pd  # noqa: E402

from planner.errors import SpecError

METRIC_LABELS = {
    "output": "output tokens/s per GPU (all GPUs)",
    "total": "input + output tokens/s per GPU",
    "decode": "output tokens/s per decode GPU",
}
MARKERS = {"compute": "s", "hbm_weights": "o", "kv_read": "D", "scale_up": "^",
           "scale_out": "v", "latency": "x", "memory_capacity": "P"}
Y_LABELS = {
    "tps_per_mw": "output tokens/s per MW (all-in power)",
    "usd_per_mtok_rental": "USD per million output tokens (rental)",
    "usd_per_mtok_owned": "USD per million output tokens (owned: capex + energy)",
    "output_tps_per_gpu": METRIC_LABELS["output"],
    "total_tps_per_gpu": METRIC_LABELS["total"],
    "decode_tps_per_gpu": METRIC_LABELS["decode"],
}
#: y range (max / min) beyond which the frontier is drawn on a log y axis by default
LOGY_SPAN = 20.0
COLORS = ("#76b900", "#1f77b4", "#d62728", "#9467bd", "#ff7f0e", "#8c564b")


def new_figure(**kw: Any) -> Any:
    """A matplotlib Figure: through pyplot where the caller has imported it (a notebook, whose
    inline display shows pyplot's figures), else a bare Figure on the Agg canvas, so that writing a
    figure from the command line never imports pyplot (a third of a second)."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        return plt.figure(**kw)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(**kw)
    FigureCanvasAgg(fig)
    return fig


def close_figure(fig: Any) -> None:
    """Release ``fig``: pyplot's bookkeeping where pyplot made it; a bare Figure needs none."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close(fig)


#: file formats a plot may be written in (matplotlib's, less pgf, which needs a LaTeX installation)
PLOT_FORMATS = tuple(sorted(set(matplotlib.backend_bases.FigureCanvasBase.get_supported_filetypes())
                            - {"pgf"}))


def plot_format(path: str | Path, flag: str = "plot") -> str:
    """The format a plot written to ``path`` takes: its extension's (``f.svg`` -> svg), PNG for a
    name without one (``/dev/null``); SpecError naming ``flag`` for an extension matplotlib does not
    write."""
    suffix = Path(path).suffix.lower().lstrip(".")
    if not suffix:
        return "png"
    if suffix not in PLOT_FORMATS:
        raise SpecError(str(path), flag, f"a file name ending in a plot format ({', '.join(PLOT_FORMATS)}; "
                        f"none: PNG), got .{suffix}")
    return suffix


@functools.lru_cache(maxsize=1)
def _glyphs() -> frozenset[int]:
    from matplotlib import font_manager, ft2font

    path = font_manager.findfont(font_manager.FontProperties())  # the default text font
    return frozenset(ft2font.FT2Font(path).get_charmap())


def text(s: Any) -> str:
    """``s`` with every character the plot font cannot draw replaced by '?' (names from a
    user's spec may hold any Unicode; matplotlib would draw a box and warn on each)."""
    s = str(s)
    if s.isascii():
        return s
    have = _glyphs()
    return "".join(c if ord(c) in have or c.isspace() else "?" for c in s)


def label(df: pd.DataFrame) -> str:
    """Legend text: model, hardware, precision, serving mode, workload."""
    a = df.attrs
    prec = "/".join(pd.unique(df["weights"])) if "weights" in df else "?"
    if a.get("serving") in ("decode",):
        wl = f"context {a.get('context'):g}"
    else:
        wl = f"ISL {a.get('isl'):g}/OSL {a.get('osl'):g}"
    return text(f"{a.get('model')} · {a.get('hardware')} · {prec} experts · {a.get('serving')} · {wl}")


@dataclass(frozen=True)
class Marks:
    """What a frontier figure marks besides its curves.

    ``y``: the column drawn against interactivity (``tps_per_gpu``, ``tps_per_mw``,
    ``usd_per_mtok_rental``, ...); ``threshold``: on the ratio panel, a line at that ratio and the
    rates where the per-GPU ratio reaches it shaded; ``peak``: the (tokens/s per user, ratio) to
    annotate as the largest ratio (a comparison's own, solved at whole deployments; default: the
    curve's highest point); ``mark_x``: a dotted vertical line at that interactivity on every
    panel; ``annotate_bottleneck``: each point's binding term as its marker; ``minor_ticks=False``:
    major ticks and grid lines only (a quicker redraw); ``footnote``: the search, calibration and
    date under the figure (True: from the frontiers' attributes; a text: that); ``fig``: a Figure
    to clear and draw into (fixed margins, no layout pass: redrawing one figure in an interactive
    view) instead of a new one."""

    y: str = "tps_per_gpu"
    threshold: float | None = None
    peak: tuple[float, float] | None = None
    mark_x: float | None = None
    annotate_bottleneck: bool = True
    minor_ticks: bool = True
    footnote: bool | str = True
    fig: Any = None


def plot_frontiers(frontiers: Sequence[pd.DataFrame], ratio: pd.DataFrame | None = None,
                   path: str | Path | None = None, *, title: str | None = None,
                   bands: Sequence[pd.DataFrame | None] | None = None,
                   limits: Sequence[pd.DataFrame | None] | None = None, logy: bool | None = None,
                   marks: Marks | None = None) -> Any:
    """Draw frontiers (and, if given, the ratio curve of the first two in a second panel).

    ``logy``: logarithmic y axis (a small system next to a large one); None (default):
    logarithmic where the curves span more than :data:`LOGY_SPAN`, so that the interactive tail
    is not flattened onto zero.  ``bands``: per frontier, a DataFrame with ``tps_per_user``,
    ``lo``, ``hi`` to shade (per GPU), drawn where its lower edge is above zero.  ``limits``: per
    frontier, the limit search's frontier of the same system (what the hardware could do with
    ideal software), drawn dashed beside an as-deployed one.  ``marks``: what else the figure
    marks (:class:`Marks`: the column drawn, a threshold and the peak on the ratio panel, a rate,
    the binding terms, the footnote, a figure to draw into).
    Returns the matplotlib Figure; saves it to ``path`` when given.
    """
    mk = Marks() if marks is None else marks
    y, threshold, peak, mark_x = mk.y, mk.threshold, mk.peak, mk.mark_x
    annotate_bottleneck, minor_ticks, footnote, fig = (mk.annotate_bottleneck, mk.minor_ticks, mk.footnote,
                                                       mk.fig)
    if not frontiers:
        raise ValueError("no frontier to plot")
    prefill = frontiers[0].attrs.get("serving") == "prefill"
    two = ratio is not None and not ratio.empty
    reuse = fig is not None
    if reuse:
        fig.clear()
        axes = fig.subplots(2 if two else 1, 1, sharex=two, squeeze=False,
                            gridspec_kw={"height_ratios": [3, 1.3]} if two else None)
    else:
        fig = new_figure(figsize=(10.5, 7.5 if two else 5.2))
        axes = fig.subplots(2 if two else 1, 1, sharex=two,
                            gridspec_kw={"height_ratios": [3, 1.3]} if two else None, squeeze=False)
    ax = axes[0, 0]
    xcol = "ttft_s" if prefill else "tps_per_user"
    for i, f in enumerate(frontiers):
        c = COLORS[i % len(COLORS)]
        f = f.sort_values(xcol)
        ax.plot(f[xcol], f[y], color=c, lw=2, label=label(f))
        if limits and i < len(limits) and limits[i] is not None and len(limits[i]):
            g = limits[i].sort_values(xcol)
            ax.plot(g[xcol], g[y], color=c, lw=1.2, ls="--",
                    label=text(f"{g.attrs.get('hardware')}: limit search (ideal software)"))
        if bands and i < len(bands) and bands[i] is not None and y == "tps_per_gpu":
            b = bands[i]
            # where fewer draws than the lower percentile reach a rate, the lower edge is zero: the
            # band ends there instead of dropping to the axis
            b = b[b["lo"] > 0]
            ax.fill_between(b["tps_per_user"], b["lo"], b["hi"], color=c, alpha=0.18, lw=0,
                            label=text(f"{f.attrs.get('hardware')} uncertainty band"))
        if annotate_bottleneck and "bottleneck" in f:
            _mark_bottlenecks(ax, f, xcol, c, y)
    metric = frontiers[0].attrs.get("metric", "output")
    if y == "tps_per_gpu":
        ax.set_ylabel("input tokens/s per GPU" if prefill else METRIC_LABELS.get(metric, metric))
    else:
        ax.set_ylabel(Y_LABELS.get(y, y))
    ax.set_xscale("log")
    _plain_log_ticks(ax.xaxis)
    if logy is None:
        drawn = [*frontiers, *(g for g in limits or () if g is not None)]
        ys = pd.concat([f[y] for f in drawn]).to_numpy(float)
        ys = ys[np.isfinite(ys) & (ys > 0)]
        logy = bool(len(ys)) and ys.max() / ys.min() > LOGY_SPAN
    if logy:
        ax.set_yscale("log")
        _plain_log_ticks(ax.yaxis)
    ax.grid(True, which="both", alpha=0.3)
    if annotate_bottleneck:
        # only the binding terms the curves show
        used = {str(b) for f in frontiers if "bottleneck" in f for b in f["bottleneck"].dropna().unique()}
        handles = [matplotlib.lines.Line2D([], [], ls="", marker=MARKERS[b], color="0.3", ms=6,
                              label=b.replace("_", " ")) for b in MARKERS if b in used]
        # outside the axes, so it never covers a curve
        ax.legend(handles=handles, title="binding term", fontsize=7, title_fontsize=7,
                  loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    mode = frontiers[0].attrs.get("mode", "")
    a0 = frontiers[0].attrs
    default = "Pareto frontier" + (f" ({mode} mode)" if mode else "")
    if a0.get("search") in ("rules", "recipes"):  # whole deployments
        default = "as-deployed " + default
    if len(frontiers) == 1 and a0.get("model"):
        default = f"{a0.get('model')} on {a0.get('hardware')}: {default}"
    elif a0.get("model"):
        names = " vs ".join(str(f.attrs.get("hardware")) for f in frontiers)
        default = f"{a0.get('model')}, {names}: {default}"
    # y given: matplotlib then skips searching the axes' decorations for a title position (0.1-0.3 s a draw)
    ax.set_title(text(title or default), fontsize=11, y=1.0)
    if two:
        ax2 = axes[1, 0]
        if "both_useful" in ratio:
            ratio = ratio[ratio["both_useful"]]
        ax2.plot(ratio["tps_per_user"], ratio["ratio"], color="k", lw=2, label="per GPU")
        if "ratio_per_mw" in ratio:
            ax2.plot(ratio["tps_per_user"], ratio["ratio_per_mw"], color="k", lw=1.2, ls="--",
                     label="per MW")
        ax2.set_ylabel(text(f"{frontiers[0].attrs.get('hardware')} / {frontiers[1].attrs.get('hardware')}"),
                       fontsize=8)
        ax2.set_ylim(bottom=0)
        ax2.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
        ax2.grid(True, which="both", alpha=0.3)
        xs, rs = ratio["tps_per_user"].to_numpy(float), ratio["ratio"].to_numpy(float)
        ok = np.isfinite(rs)
        if threshold is not None:
            ax2.axhline(threshold, color="tab:red", lw=1, ls="--", label=f"{threshold:g}x")
            above = ok & (rs >= threshold)
            if above.any():
                ax2.fill_between(xs, 0, 1, where=above, transform=ax2.get_xaxis_transform(),
                                 color="tab:red", alpha=0.08, lw=0,
                                 label=text(f"per GPU >= {threshold:g}x"))
        if peak is None and ok.any():
            i = int(np.nanargmax(np.where(ok, rs, -np.inf)))
            peak = (float(xs[i]), float(rs[i]))
        if peak is not None and all(np.isfinite(peak)):
            ax2.plot([peak[0]], [peak[1]], marker="o", color="k", ms=4, ls="")
            ax2.annotate(f"largest {peak[1]:.1f}x at {peak[0]:.0f}", peak, xytext=(-6, 6),
                         textcoords="offset points", ha="right", va="bottom", fontsize=8)
            ax2.set_ylim(top=max(rs[ok].max() if ok.any() else 0, peak[1], threshold or 0) * 1.25)
        # beside the panel, off the curve and its peak
        ax2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        axes[-1, 0].set_xlabel("interactivity: output tokens/s per user")
    else:
        ax.set_xlabel("time to first token (s)" if prefill else "interactivity: output tokens/s per user")
    if not minor_ticks:
        for a in axes[:, 0]:
            a.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
            a.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    if mark_x is not None:
        for a in axes[:, 0]:
            a.axvline(mark_x, color="0.4", ls=":", lw=1.2)
    # the curves' legend under the figure, so it never covers a curve or a band
    handles, labels = ax.get_legend_handles_labels()
    foot = (0.2 if footnote else 0.0) / fig.get_figheight()  # a line under the legend for the footnote
    bottom = (0.22 * len(labels) + 0.25) / fig.get_figheight() + foot
    fig.legend(handles, labels, fontsize=8, loc="lower left", bbox_to_anchor=(0.01, 0.005 + foot))
    if footnote:
        fig.text(0.01, 0.005, text(footnote if isinstance(footnote, str) else _footnote(frontiers)),
                 fontsize=6.5, color="0.35", ha="left", va="bottom")
    # fixed margins (tight_layout measured every text box: a third of a second per figure)
    fig.subplots_adjust(left=0.08, right=0.86 if annotate_bottleneck else 0.97, top=0.94,
                        bottom=bottom + 0.06, hspace=0.08)
    if path is not None:
        fig.savefig(path, dpi=130)
    return fig


def _footnote(frontiers: Sequence[pd.DataFrame]) -> str:
    """What a figure rests on, for its foot: the search, each side's calibration, and the date."""
    import datetime

    a0 = frontiers[0].attrs
    cal = "; ".join(str(f.attrs["calibration"]) for f in frontiers if f.attrs.get("calibration"))
    parts = [f"search: {a0['search']}" if a0.get("search") else "",
             f"calibration: {cal}" if cal else "", f"moe-planner, {datetime.date.today().isoformat()}"]
    return " | ".join(p for p in parts if p)


def _plain_log_ticks(axis: Any) -> None:
    """Ticks at 1, 2, 5 x 10^n written as plain numbers (20, 50, 100), not 2 x 10^1 (which also
    keeps matplotlib's math-text parser, a tenth of a second, out of every figure)."""
    axis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _mark_bottlenecks(ax: Any, f: pd.DataFrame, xcol: str, color: str, y: str = "tps_per_gpu") -> None:
    """One marker shape per binding term along the frontier."""
    for b, grp in f.groupby("bottleneck"):
        ax.plot(grp[xcol], grp[y], ls="", marker=MARKERS.get(str(b), "o"), ms=5,
                mfc="white", mec=color, mew=1.2)


def plot_sizing(curves: pd.DataFrame, path: str | Path | None = None, title: str | None = None,
                level: float | None = None, cost_target: float | None = None,
                basis: str = "own") -> Any:
    """Cost per million tokens (top) and purchasable units needed (bottom) against the per-user
    service level, one curve per hardware (:func:`planner.economics.sizing.sizing_curve`'s table).

    ``level``: the service level asked (a vertical line); ``cost_target``: a horizontal line on
    the cost panel; ``basis``: ``own`` (capex + energy) or ``rental`` $/M tokens.
    """
    if curves.empty:
        raise ValueError("no sizing curve to plot")
    ycol = "usd_per_mtok_owned" if basis == "own" else "usd_per_mtok_rental"
    fig = new_figure(figsize=(9, 7.5))
    axes = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    for i, (hw, grp) in enumerate(curves.groupby("hardware", sort=False)):
        c = COLORS[i % len(COLORS)]
        g = grp.sort_values("tps_per_user")
        unit = str(g["unit"].iloc[0]) if "unit" in g else "unit"
        # steps: the value at each level holds back to the previous one (what a level up to
        # it costs at most), so at the level asked the plot reads what the sizing table says
        axes[0].step(g["tps_per_user"], g[ycol], where="pre", color=c, lw=2, label=text(hw))
        axes[1].step(g["tps_per_user"], g["units"], where="pre", color=c, lw=2,
                     label=text(f"{hw} ({unit}s)"))
    for ax in axes:
        ax.set_xscale("log")
        _plain_log_ticks(ax.xaxis)
        # only where the frontiers exist
        ax.set_xlim(float(curves["tps_per_user"].min()), float(curves["tps_per_user"].max()))
        ax.grid(True, which="both", alpha=0.3)
        if level is not None:
            ax.axvline(level, color="0.4", ls=":", lw=1.2)
    axes[0].set_yscale("log")
    _plain_log_ticks(axes[0].yaxis)
    axes[0].set_ylabel("USD per million output tokens" + (" (rental)" if basis != "own" else
                                                          " (capex + energy)"))
    if cost_target is not None:
        axes[0].axhline(cost_target, color="0.4", ls="--", lw=1.2, label=f"target ${cost_target:g}/Mtok")
    axes[0].legend(fontsize=8, loc="upper left")
    axes[1].set_yscale("log")
    _plain_log_ticks(axes[1].yaxis)
    axes[1].set_ylabel("units to buy")
    axes[1].legend(fontsize=8, loc="upper left")
    axes[1].set_xlabel("service level: output tokens/s per user")
    a = curves.attrs
    default = "Sizing" + (f": {a['model']}" if a.get("model") else "") + (
        f", {a['demand']}" if a.get("demand") else "")
    axes[0].set_title(text(title or default), fontsize=11, y=1.0)
    fig.subplots_adjust(left=0.1, right=0.97, top=0.94, bottom=0.08, hspace=0.08)
    if path is not None:
        fig.savefig(path, dpi=130)
    return fig


# ---- a landscape (planner.fleet.landscape) -------------------------------------------------------
def plot_landscape(ls: Any, level: float) -> Any:
    """Tokens/s per GPU at ``level``: one row per system, one column per model x workload, each
    cell annotated with its figure and binding term (grey: out of reach or failed)."""
    t = ls.table[ls.table.tps_per_user == level]
    systems = list(dict.fromkeys(t.hardware))
    cols = list(dict.fromkeys(zip(t.model, t.workload, strict=True)))
    z = np.full((len(systems), len(cols)), np.nan)
    notes = [["" for _ in cols] for _ in systems]
    for r in t.itertuples():
        i, j = systems.index(r.hardware), cols.index((r.model, r.workload))
        z[i, j] = r.tps_per_gpu
        notes[i][j] = (f"{r.tps_per_gpu:,.0f}\n{str(r.bottleneck).replace('_', ' ')}"
                       if np.isfinite(r.tps_per_gpu) else str(r.bottleneck))
    fig = new_figure(figsize=(2.0 + 1.7 * len(cols), 1.2 + 0.6 * len(systems)))
    ax = fig.subplots()
    masked = np.ma.masked_invalid(np.log10(np.where(z > 0, z, np.nan)))
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#dddddd")
    im = ax.imshow(masked, aspect="auto", cmap=cmap)
    lo, hi = (float(masked.min()), float(masked.max())) if masked.count() else (0.0, 1.0)
    for i in range(len(systems)):
        for j in range(len(cols)):
            # dark text on the light (high) end of the scale, white on the dark end
            light = np.isfinite(z[i, j]) and (np.log10(z[i, j]) - lo) > 0.6 * (hi - lo)
            ax.text(j, i, notes[i][j], ha="center", va="center", fontsize=7,
                    color="black" if light or not np.isfinite(z[i, j]) else "white")
    ax.set_xticks(range(len(cols)), [f"{m}\n{w}" for m, w in cols], fontsize=7)
    ax.set_yticks(range(len(systems)), systems, fontsize=8)
    ax.set_title(f"output tokens/s per GPU at {level:g} tokens/s per user (log colour scale)", fontsize=10)
    bar = fig.colorbar(im, ax=ax, fraction=0.03)
    bar.set_label("log10 tokens/s per GPU", fontsize=8)
    fig.tight_layout()
    return fig


def plot_landscape_best(ls: Any) -> Any:
    """Per model x workload (rows) and level (columns): the system with the most tokens/s per GPU,
    named in the cell, coloured by system, with its lead over the runner-up."""
    b = ls.best()
    rows = list(dict.fromkeys(zip(b.model, b.workload, strict=True)))
    systems = sorted(set(b.best))
    fig = new_figure(figsize=(2.5 + 1.6 * len(ls.levels), 1.2 + 0.55 * max(len(rows), 1)))
    ax = fig.subplots()
    z = np.full((len(rows), len(ls.levels)), np.nan)
    for r in b.itertuples():
        i, j = rows.index((r.model, r.workload)), ls.levels.index(r.tps_per_user)
        z[i, j] = systems.index(r.best)
        lead = f"\n{r.lead:.2f}x next" if np.isfinite(r.lead) else ""
        ax.text(j, i, f"{r.best}{lead}", ha="center", va="center", fontsize=7)
    cmap = matplotlib.colormaps["tab20"].with_extremes(bad="#eeeeee")
    ax.imshow(np.ma.masked_invalid(z), aspect="auto", cmap=cmap, vmin=0, vmax=19, alpha=0.45)
    ax.set_xticks(range(len(ls.levels)), [f"{x:g} tok/s/user" for x in ls.levels], fontsize=8)
    ax.set_yticks(range(len(rows)), [f"{m}, {w}" for m, w in rows], fontsize=8)
    ax.set_title("best system by output tokens/s per GPU (lead: over the runner-up)", fontsize=10)
    fig.tight_layout()
    return fig
