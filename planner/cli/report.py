"""``compare --html FILE``: the comparison as one self-contained HTML page.

The page carries, in this order: the verdict, both frontiers and the ratio (an inline SVG drawn by
:func:`planner.plot.plot_frontiers`), the table, the ratio's band where ``--band`` drew one, the
decomposition of the ratio at ``--at`` (default 50 tokens/s per user) as a waterfall, the
assumptions table where ``--assumptions`` ran it, each side's calibration (whose measurements
its efficiencies were fitted on, or borrowed from), every source of both systems and the model,
and the command that reproduces it.  No script, no link to load: it opens with no network.  Every
figure on it is the one ``compare --json`` prints.
"""

from __future__ import annotations

import datetime
import html
import io
import math
import shlex
from typing import Any

import pandas as pd

from planner.specs.hardware import Hardware

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 1100px;
       margin: 2em auto; padding: 0 1em; color: #1a1a1a; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
.verdict { background: #f4f7ee; border-left: 4px solid #76b900; padding: 0.6em 1em; }
.verdict p { margin: 0.25em 0; }
table { border-collapse: collapse; margin: 0.5em 0; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.7em; text-align: right; }
th { background: #f2f2f2; } td.l, th.l { text-align: left; }
.muted { color: #666; font-size: 0.9em; } code, pre { background: #f5f5f5; padding: 0.1em 0.3em; }
pre { padding: 0.6em; overflow-x: auto; } svg { max-width: 100%; height: auto; }
.bar { display: inline-block; height: 0.8em; background: #76b900; vertical-align: middle; }
.bar.down { background: #d62728; }
"""


def _e(v: Any) -> str:
    return html.escape(str(v))


def num(v: Any, digits: int = 3) -> str:
    """A number as the page prints it: '-' where none; whole numbers with thousands separators
    from 1,000 up, else ``digits`` significant digits."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if isinstance(v, bool) or not isinstance(v, int | float):
        return _e(v)
    v = float(v)
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.{digits}g}"


def _table(rows: list[list[Any]], header: list[str], left: int = 0) -> str:
    """An HTML table; the first ``left`` columns left-aligned (text), numbers through :func:`num`."""
    head = "".join(f'<th class="{"l" if i < left else ""}">{_e(h)}</th>' for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(f'<td class="{"l" if i < left else ""}">{num(v) if i >= left else _e(v)}'
                                    "</td>" for i, v in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _svg(fig: Any) -> str:
    import matplotlib

    from planner.plot import close_figure

    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(buf, format="svg")
    close_figure(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # the inline element, without its XML prologue


def _waterfall(e: pd.DataFrame) -> str:
    """The chain of swaps that turns B into A, one factor a row, with a bar of each factor's size
    on a log scale (green up, red down), then the single counterfactuals."""
    a = e.attrs
    rows = []
    chain = e[e.kind == "chain"]
    span = max([abs(math.log(f)) for f in chain.factor if f and f > 0 and math.isfinite(f)] or [1.0])
    for r in chain.itertuples():
        f = float(r.factor)
        ok = f > 0 and math.isfinite(f)
        width = 0 if not ok else 180 * abs(math.log(f)) / span
        bar = f'<span class="bar{" down" if ok and f < 1 else ""}" style="width:{width:.0f}px"></span>'
        rows.append(f"<tr><td class='l'>{_e(r.step)}</td><td>{num(r.tps_per_gpu)}</td>"
                    f"<td>{num(f)}x</td><td>{num(r.cumulative)}x</td><td class='l'>{bar}</td>"
                    f"<td class='l'>{_e(r.bottleneck)}</td></tr>")
    cf = e[e.kind == "counterfactual"]
    single = _table([[r.step, r.tps_per_gpu, r.factor, r.bottleneck] for r in cf.itertuples()],
                    ["counterfactual", "tok/s/GPU", "factor", "binds"], left=1)
    return (f"<p id='why'>{_e(a['hardware_a'])} / {_e(a['hardware_b'])} = {num(a['ratio'])}x at "
            f"{num(a['at_tps_per_user'])} tokens/s per user: start from B, swap in A's resources one "
            "group at a time; the factors multiply to the ratio.</p>"
            "<table><tr><th class='l'>step</th><th>tok/s/GPU</th><th>factor</th><th>cumulative</th>"
            f"<th class='l'>log size</th><th class='l'>binds</th></tr>{''.join(rows)}</table>"
            f"<p class='muted'>Single counterfactuals (one change to an unmodified system):</p>{single}")


def _sources(name: str, sources: dict[str, str]) -> str:
    items = "".join(f"<li><code>{_e(k)}</code>: {_e(v)}</li>" for k, v in sorted(sources.items()) if v)
    return f"<details><summary>{_e(name)} ({len(sources)} facts)</summary><ul>{items}</ul></details>"


def _calibration(hw: Hardware, label: str) -> str:
    fit = hw.sources.get(f"stacks.{hw.stack}.kernel_overhead") or hw.sources.get("efficiency.compute", "")
    return (f"<li><b>{_e(hw.name)}</b>: {_e(label)}."
            f"<br><span class='muted'>{_e(fit)}</span></li>")


def render(c: Any, verdict: dict[str, Any], *, argv: list[str], figure: Any, explain: pd.DataFrame | None,
           moves: pd.DataFrame | None, ratio_band: dict[str, Any] | None, hardware: list[Hardware],
           model_sources: dict[str, str]) -> str:
    """The page's text."""
    s = c.settings
    a, b = s["hardware_a"], s["hardware_b"]
    t = verdict["threshold"]

    from planner.cli.common import spans_text  # the intervals as the command line writes them

    def where(key: str) -> str:
        iv = verdict[key]["intervals"]
        return f"{spans_text(iv)} tokens/s per user" if iv else "no rate"

    lg = verdict["largest"]
    rests = "; ".join(f"{r['assumption']} ({r['setting']})" + (
        f": {num(r['largest_ratio'])}x at {num(r['at_tps_per_user'])}" if "largest_ratio" in r else "")
        for r in verdict["rests_on"])
    band = (f"<p>Largest per-GPU ratio over {ratio_band['draws']} paired draws of the efficiencies: "
            f"{num(ratio_band['lo'])}x to {num(ratio_band['hi'])}x (5th-95th percentile).</p>"
            if ratio_band and ratio_band.get("draws") else "")
    rows = [[r.tps_per_user, r.tps_per_gpu_a, r.tps_per_gpu_b, r.ratio, r.tps_per_mw_a, r.tps_per_mw_b,
             r.ratio_per_mw, r.bottleneck_a, r.bottleneck_b] for r in c.table.itertuples()]
    table = _table(rows, ["tok/s/user", f"{a} tok/s/GPU", f"{b} tok/s/GPU", "ratio", f"{a} tok/s/IT-MW",
                          f"{b} tok/s/IT-MW", "ratio/MW", f"{a} binds", f"{b} binds"])
    moves_html = ("<p class='muted'>Not run: add <code>--assumptions</code> (about ten comparisons).</p>"
                  if moves is None else
                  _table([[r.assumption, r.setting, r.largest_ratio, r.at_tps_per_user, r.change]
                          for r in moves.itertuples()],
                         ["assumption", "setting", "largest ratio", "at tok/s/user", "x base"], left=2))
    labels = [str(x) for x in (c.a.attrs.get("calibration"), c.b.attrs.get("calibration"))]
    cal = "".join(_calibration(h, lab) for h, lab in zip(hardware, labels, strict=True))
    sources = "".join(_sources(h.name, h.sources) for h in hardware) + _sources(s["model"], model_sources)
    command = "moe-planner " + " ".join(shlex.quote(str(x)) for x in argv)
    today = datetime.date.today().isoformat()
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{_e(s['model'])}: {_e(a)} vs {_e(b)}</title><style>{STYLE}</style></head>
<body>
<h1>{_e(s['model'])}: {_e(a)} vs {_e(b)}</h1>
<p class="muted">{_e(s['serving'])} serving, ISL {num(s['isl'])} / OSL {num(s['osl'])}, {_e(s['mode'])} mode,
{_e(s.get('search'))} search; moe-planner, {today}</p>
<div class="verdict" id="verdict">
<p id="answer">{_e(a)} gives &ge; {num(t)}x the tokens/s per GPU of {_e(b)} at {_e(where('per_gpu'))};
per MW at {_e(where('per_mw'))}.</p>
<p id="largest">Largest: {f"{num(lg['ratio'])}x at {num(lg['tps_per_user'])} tokens/s per user" if lg else
"no rate where both systems are useful"}.</p>
<p id="rests">Rests on: {_e(rests)}.</p></div>
<h2>Frontiers and their ratio</h2>
{figure}
{band}
<h2>At each level</h2>
{table}
<h2>Why: the ratio decomposed</h2>
{_waterfall(explain) if explain is not None else "<p class='muted'>Not computed.</p>"}
<h2>Assumptions that move the answer</h2>
{moves_html}
<h2>How sure: each side's calibration</h2>
<ul>{cal}</ul>
<p class="muted">The accuracy of the model on measured data, by system and stack:
<code>moe-planner validate --runs</code> and <code>moe-planner validate --frontiers FILE</code>
(docs/accuracy.md).</p>
<h2>Sources</h2>
{sources}
<h2>Reproduce</h2>
<pre>{_e(command)}</pre>
</body></html>
"""


def report_page(c: Any, verdict: dict[str, Any], *, argv: list[str], hardware: list[Hardware],
                bands: list[Any], limits: list[Any], threshold: float, peak: tuple[float, float] | None,
                explain: pd.DataFrame | None, moves: pd.DataFrame | None,
                ratio_band: dict[str, Any] | None) -> str:
    """Draw the figure and render the page (written with the command's other outputs)."""
    from planner.plot import Marks, plot_frontiers
    from planner.specs.registry import load_model

    fig = plot_frontiers([c.a, c.b], c.ratio, bands=bands, limits=limits,
                         marks=Marks(threshold=threshold, peak=peak))
    model = load_model(c.settings["model"])
    facts = {"source": model.source, "mtp_source": model.mtp_source, "speculation source": model.spec_source}
    return render(c, verdict, argv=argv, figure=_svg(fig), explain=explain, moves=moves,
                  ratio_band=ratio_band, hardware=hardware, model_sources=facts)


def landscape_page(ls: Any, *, argv: list[str]) -> str:
    """``landscape``'s page: what was asked and how the cells ran, the best system per model,
    workload and level, a heatmap per level, the whole table, the cells that failed with their
    inputs, and the command.  Self-contained like ``compare --html``'s."""
    from planner.cells import describe
    from planner.plot import plot_landscape, plot_landscape_best

    t = ls.table
    today = datetime.date.today().isoformat()
    sc = ls.scenario
    best = ls.best()
    parts = [f"<h1>Landscape: {len(sc['systems'])} systems x {t.model.nunique()} models x "
             f"{t.workload.nunique()} workloads</h1>",
             f'<p class="muted">{_e(sc["serving"])} serving, {_e(sc["mode"])} mode, metric {_e(sc["metric"])}'
             f"; {_e(describe(ls.run))}; moe-planner, {today}</p>",
             "<h2>Best system per model, workload and level</h2>",
             _table([[r.model, r.workload, r.best, r.tps_per_user, r.tps_per_gpu, r.lead]
                     for r in best.itertuples()],
                    ["model", "workload", "best system", "tok/s/user", "tok/s/GPU",
                     "lead over next"], left=3),
             _svg(plot_landscape_best(ls))]
    for x in ls.levels:
        parts += [f"<h2>At {num(x)} tokens/s per user</h2>", _svg(plot_landscape(ls, x))]
    basis = t.drop_duplicates("hardware")
    parts += ["<h2>What each system's figures rest on</h2>",
              _table([[r.hardware, "its measured runs" if r.measured is True else "its datasheet alone",
                       r.datasheet_log_sd] for r in basis.itertuples()],
                     ["system", "figures rest on", "extra log-sd of its band"], left=2)]
    cols = ["hardware", "model", "workload", "tps_per_user", "tps_per_gpu", "tps_per_mw",
            "usd_per_mtok_rental",
            "bottleneck", "gpus", "band_lo", "band_hi"]
    parts += ["<h2>Every cell</h2>",
              _table([[r[c] for c in cols] for r in t.to_dict("records")],
                     ["system", "model", "workload", "tok/s/user", "tok/s/GPU", "tok/s/IT-MW",
                      "$/Mtok rental",
                      "binds", "GPUs", "band 5%", "band 95%"], left=3)]
    failed = t[t.error.notna()] if "error" in t else t.iloc[:0]
    if len(failed):
        parts += ["<h2>Cells that failed</h2>",
                  _table([[r.hardware, r.model, r.workload, r.error]
                          for r in failed.drop_duplicates(["hardware", "model", "workload"]).itertuples()],
                         ["system", "model", "workload", "error"], left=4)]
    parts += ["<h2>Command</h2>", f"<pre>{_e(shlex.join(['moe-planner', *argv]))}</pre>"]
    body = "\n".join(parts)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>moe-planner landscape'
            f"</title><style>{STYLE}</style></head><body>\n{body}\n</body></html>\n")
