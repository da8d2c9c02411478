"""What-if exploration in Jupyter: sliders and dropdowns over one or two systems' resources and
the workload; each change redraws both frontiers, their ratio and binding terms
(:func:`planner.plot.plot_frontiers`), and states the ratio at a chosen interactivity.

:func:`explore` builds the panel over a :class:`~planner.specs.scenario.Scenario` (ipywidgets, the
``jupyter`` extra).  Everything it draws comes from :func:`planner.frontier` of the scenario
:meth:`Explorer.call` returns, and :meth:`Explorer.code` prints the ``planner.Scenario(...)`` and
``planner.compare(...)`` calls that reproduce the view.  With the ``fast`` search it is kept
interactive by :data:`FAST` (one rack's worth of GPUs, half the batch ladder) and
by caching each side's frontier by its inputs, so a change to one system recomputes that side
only.
"""

from __future__ import annotations

import dataclasses
import html
import io
import time
from collections import OrderedDict
from typing import Any

import matplotlib
import numpy as np
import pandas as pd

from planner.errors import SpecError, shown
from planner.plot import Marks, plot_frontiers
from planner.serving.comparison import envelope, explain, ratio_curve
from planner.serving.frontiers import frontier, frontier_at
from planner.serving.search import pareto
from planner.specs.hardware import Hardware
from planner.specs.precision import PRECISIONS
from planner.specs.registry import hardware_names, load_hardware, load_systems
from planner.specs.scenario import BATCH_PER_OCTAVE, DEFAULTS, Scenario

INSTALL_HINT = "planner.explore needs ipywidgets: pip install 'moe-planner[jupyter]'"
#: the interactive search: instances of up to 72 GPUs (one NVL72 rack, nine 8-GPU nodes) and 2
#: decode batches per doubling instead of 4; ``search="full"`` is :func:`planner.frontier`'s own
FAST: dict[str, Any] = {"max_gpus": 72, "batch_per_octave": 2}
#: the panel's searches: the as-deployed one (the default, as on the command line), the limit
#: search kept interactive (FAST), and the limit search as the command line runs it
SEARCH_CHOICES = ("rules", "recipes", "fast", "full")
#: the label column of every control: the longest label, "scale-out BW ×", in full
LABEL_WIDTH = "8.5em"
#: resources scaled by a slider (factor on the base system's value)
FACTORS: tuple[tuple[str, str], ...] = (
    ("hbm_bandwidth", "HBM BW ×"), ("hbm_capacity", "HBM cap. ×"), ("flops", "FLOP/s ×"),
    ("su_bandwidth", "scale-up BW ×"), ("so_bandwidth", "scale-out BW ×"),
)
DOMAIN_SIZES = (1, 2, 4, 8, 16, 32, 36, 64, 72, 144, 288, 576)
TOKEN_LENGTHS = (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
SERVINGS = ("disaggregated", "aggregated", "decode")
SPECULATION = ("published", "off", "given")
NO_STACK = "none (spec efficiencies)"
WHAT_IF = " what-if"
CACHE_SIZE = 24


def _ipywidgets() -> Any:
    try:
        import ipywidgets
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
    return ipywidgets


def what_if(base: Hardware, stack: str | None = None, factors: dict[str, float] | None = None,
            domain_size: int | None = None) -> Hardware:
    """``base`` with serving stack ``stack`` (``None``: as it is; ``""``: the spec's efficiency
    block), each resource in ``factors`` scaled (``flops`` scales every dtype) and the scale-up
    domain set to ``domain_size`` GPUs (one system per domain, as :func:`planner.explain` cuts
    it).  A changed resource renames the system ``NAME what-if``, so it can sit beside the
    original in a comparison."""
    hw = base
    if stack is not None and stack != base.stack:
        hw = hw.with_stack(stack) if stack else hw.without_stack()
    changes: dict[str, Any] = {}
    for field, f in (factors or {}).items():
        if f == 1.0:
            continue
        if not (np.isfinite(f) and f > 0):
            raise SpecError("<input>", field, f"a positive factor, got {shown(f)}")
        v = getattr(base, field)
        changes[field] = {k: x * f for k, x in v.items()} if isinstance(v, dict) else v * f
    if domain_size is not None and domain_size != base.domain_size:
        changes.update(domain_size=int(domain_size), gpus_per_system=int(domain_size))
    if changes:
        changes["name"] = base.name + WHAT_IF
    return hw.replace(**changes) if changes else hw


def _num(v: Any) -> str:
    """A value as Python source that reads back exactly (1.04e+13, not 10400000000000.0)."""
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return repr(v)
    if isinstance(v, int | np.integer):
        return str(int(v))
    if isinstance(v, float | np.floating):
        f = float(v)
        return repr(f) if f == 0 or 1e-4 <= abs(f) < 1e6 else np.format_float_scientific(f, trim="-")
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {_num(x)}" for k, x in v.items()) + "}"
    if isinstance(v, tuple | list):
        inner = ", ".join(_num(x) for x in v)
        return f"({inner},)" if isinstance(v, tuple) and len(v) == 1 else (
            f"({inner})" if isinstance(v, tuple) else f"[{inner}]")
    return repr(v)


def hardware_code(hw: Hardware, ref: str) -> str:
    """Python source that builds ``hw`` from the spec ``ref`` (a bundled name or a path):
    ``planner.load_hardware("REF@STACK").replace(...)`` with the fields that differ."""
    start = f"{ref}@{hw.stack}" if hw.stack else ref
    loaded = load_hardware(start)
    code = f"planner.load_hardware({start!r})"
    if not hw.stack and loaded.stack:
        loaded, code = loaded.without_stack(), code + ".without_stack()"
    diff: list[str] = []
    for f in dataclasses.fields(Hardware):
        if not f.compare or f.name == "stack":
            continue
        new, old = getattr(hw, f.name), getattr(loaded, f.name)
        if new == old:
            continue
        if f.name == "efficiency":
            eff = {e.name: getattr(new, e.name) for e in dataclasses.fields(new)
                   if getattr(new, e.name) != getattr(old, e.name)}
            diff.append(f"efficiency={_num(eff)}")
        else:
            diff.append(f"{f.name}={_num(new)}")
    return code + (f".replace({', '.join(diff)})" if diff else "")


def _spec_ref(hw: Hardware) -> str:
    """How ``hw``'s spec is named in code: its bundled name where it is that spec, else its file."""
    if hw.name in hardware_names() and (not hw.path or load_hardware(hw.name).path == hw.path):
        return hw.name
    return hw.path or hw.name


#: the workload control's first choice: one ISL/OSL pair (the ISL and OSL sliders)
PAIR = "ISL/OSL"
#: the KV-tier control's choices for a workload of sessions
TIER_CHOICES = ("hbm,host,nvme", "hbm,host", "hbm", "none")


class Explorer:
    """The panel :func:`explore` returns: its widgets (``controls``: name -> widget), the
    frontiers last drawn (``frontiers``; ``ratio`` with two systems), the matplotlib ``figure``,
    ``summary`` (the text under the figure), ``redraw_s`` (seconds the last redraw took) and
    ``timings`` (of which: ``search_s`` computing frontiers, ``draw_s`` the figure and text).
    In Jupyter it shows itself; where widgets cannot be shown (a static render of the notebook)
    its picture stands in."""

    def __init__(self, scenario: Scenario, at: float = 50.0, search: str | None = None) -> None:
        w = _ipywidgets()
        from matplotlib.figure import Figure

        if not isinstance(scenario, Scenario):
            raise SpecError("<input>", "scenario", f"a Scenario (planner.Scenario(model, (A, B), ...)), got "
                            f"{type(scenario).__name__}")
        sc = scenario
        if len(sc.systems) > 2:
            raise SpecError("<input>", "hardware", f"one or two systems, got {len(sc.systems)}")
        self._w = w
        self.model = sc.load_model()
        self.bases = [sc.on(h).load_system() for h in sc.systems]
        self.refs = [_spec_ref(b) for b in self.bases]
        at = float(at)
        self.fast = {"max_gpus": sc.max_gpus if sc.max_gpus is not None else FAST["max_gpus"],
                     "batch_per_octave": (sc.batch_per_octave if sc.batch_per_octave != BATCH_PER_OCTAVE
                                          else FAST["batch_per_octave"])}
        search = search or {"limit": "full", None: "rules"}.get(sc.search, sc.search)
        serving, isl, osl = sc.serving, int(sc.isl), int(sc.osl)
        from planner.specs.workload import KV_TIERS, workload_names

        workload = sc.workload or PAIR
        tiers = sc.kv_tiers if sc.kv_tiers is not None else KV_TIERS
        tiers = ",".join(tiers) if not isinstance(tiers, str) else tiers
        tiers = tiers or "none"
        if workload not in (PAIR, *workload_names()):
            raise SpecError("<input>", "workload", f"one of {', '.join(workload_names())}, got {workload!r}")
        if tiers not in TIER_CHOICES:
            raise SpecError("<input>", "tiers", f"one of {', '.join(TIER_CHOICES)}, got {tiers!r}")
        mode = sc.mode
        weights = sc.weights or "auto"
        acceptance = sc.acceptance
        spec = "given" if acceptance is not None else "published"
        mtp = sc.mtp
        if mtp in (0, None):
            mtp, spec = "auto", "off"
        for field, value, allowed in (("serving", serving, SERVINGS), ("mode", mode, ("realistic", "bound")),
                                      ("weights", weights, ("auto", *PRECISIONS)),
                                      ("search", search, SEARCH_CHOICES)):
            if value not in allowed:
                raise SpecError("<input>", field, f"one of {', '.join(allowed)}, got {value!r}")
        #: the scenario's fields without a control (max_ttft, kv_offload, gpus, ...), held fixed
        self.base = sc.replace(model=self.model, systems=tuple(self.bases), stack=None, search=None,
                               acceptance=None, weights=None, mtp=mtp, max_gpus=None,
                               batch_per_octave=BATCH_PER_OCTAVE, workload=None, slo=None, kv_tiers=None)
        self.slo = sc.slo
        self.frontiers: list[pd.DataFrame] = []
        self.ratio: pd.DataFrame | None = None
        self.summary = ""
        self.redraw_s = float("nan")
        self.timings: dict[str, float] = {}
        self._cache: OrderedDict[tuple, tuple[pd.DataFrame, pd.DataFrame | None]] = OrderedDict()
        self._hold = False
        # 840 x 480 px (two panels) under controls about 400 px high: the view fits a 900 px screen
        self.figure = Figure(figsize=(10.5, 6.0 if len(self.bases) == 2 else 4.6), dpi=80)

        c: dict[str, Any] = {}
        slider = dict(min=0.25, max=4.0, step=0.05, value=1.0, continuous_update=False,
                      readout_format=".2f", style={"description_width": "initial"})
        columns = []
        for tag, base in zip("ab", self.bases, strict=False):
            stacks = [*sorted(base.stacks), NO_STACK]
            c[f"stack_{tag}"] = w.Dropdown(options=stacks, value=base.stack or NO_STACK,
                                           description="stack")
            for field, text in FACTORS:
                c[f"{field}_{tag}"] = w.FloatSlider(description=text, **slider)
            sizes = sorted({*DOMAIN_SIZES, base.domain_size})
            c[f"domain_size_{tag}"] = w.Dropdown(options=sizes, value=base.domain_size,
                                                 description="scale-up GPUs")
            c[f"info_{tag}"] = w.HTML()
            head = w.HTML(f"<b>{'A' if tag == 'a' else 'B'}: {html.escape(base.name)}</b>")
            columns.append(w.VBox([head, c[f"stack_{tag}"], *(c[f"{f}_{tag}"] for f, _ in FACTORS),
                                   c[f"domain_size_{tag}"], c[f"info_{tag}"]]))
        lengths = sorted({*TOKEN_LENGTHS, isl, osl})
        c["serving"] = w.Dropdown(options=SERVINGS, value=serving, description="serving")
        c["isl"] = w.SelectionSlider(options=lengths, value=isl, description="ISL (tokens)",
                                     continuous_update=False)
        c["osl"] = w.SelectionSlider(options=lengths, value=osl, description="OSL (tokens)",
                                     continuous_update=False)
        c["workload"] = w.Dropdown(options=[PAIR, *workload_names()], value=workload, description="workload")
        c["kv_tiers"] = w.Dropdown(options=list(TIER_CHOICES), value=tiers, description="KV tiers",
                                   disabled=workload == PAIR)
        c["isl"].disabled = c["osl"].disabled = workload != PAIR
        c["weights"] = w.Dropdown(options=["auto", *PRECISIONS], value=weights,
                                  description="expert weights")
        # drop-downs, not toggle buttons: a third of a page's width cut "realistic" to "reali…"
        c["mode"] = w.Dropdown(options=("realistic", "bound"), value=mode, description="mode")
        c["speculation"] = w.Dropdown(options=SPECULATION, value=spec, description="speculation")
        c["acceptance"] = w.FloatSlider(value=float(acceptance) if acceptance is not None else 2.0,
                                        min=1.0, max=4.0, step=0.05, continuous_update=False,
                                        description="tokens/step", disabled=spec != "given")
        c["search"] = w.Dropdown(options=SEARCH_CHOICES, value=search, description="search")
        c["at"] = w.FloatLogSlider(value=at, base=10, min=0.0, max=3.0, step=0.01,
                                   continuous_update=False, description="at tok/s/user",
                                   style={"description_width": "initial"})
        columns.append(w.VBox([w.HTML("<b>workload and serving</b>"), c["workload"], c["kv_tiers"],
                               c["serving"], c["isl"], c["osl"],
                               c["weights"], c["mode"], c["speculation"], c["acceptance"], c["search"],
                               c["at"]]))
        # a 1,280 px page holds the three columns side by side: each a third of the width (allowed to
        # shrink below its content), every control as wide as its column with a label column wide
        # enough for the longest label ("scale-out BW ×", "at tok/s/user"), slider readouts kept
        for name, ctl in c.items():
            if name.startswith("info_"):
                continue
            ctl.layout.width = "100%"
            ctl.layout.min_width = "0"
            if hasattr(ctl.style, "description_width"):
                ctl.style.description_width = LABEL_WIDTH
        for col in columns:
            col.layout = w.Layout(flex="1 1 0%", min_width="0", width="33%", padding="0 6px 0 0")
        self.controls = c
        self.image = w.Image(format="svg+xml")
        self.text = w.HTML()
        self.code_box = w.Textarea(layout=w.Layout(width="100%", height="9em"),
                                   description="as code", disabled=False)
        self.explain_button = w.Button(description="explain the ratio", disabled=len(self.bases) < 2,
                                       tooltip="planner.explain at the chosen rate: swaps B's resources "
                                               "for A's one at a time (several seconds)")
        self.explain_out = w.HTML()
        self.explain_button.on_click(lambda _: self.run_explain())
        # the code and the explanation folded under the figure until asked for
        self.code_fold = w.Accordion(children=[self.code_box], selected_index=None)
        self.code_fold.set_title(0, "as code (planner calls that reproduce this view)")
        self.widget = w.VBox([w.HBox(columns, layout=w.Layout(width="100%")), self.image, self.text,
                              w.HBox([self.explain_button]), self.explain_out, self.code_fold])
        for name, ctl in c.items():
            if not name.startswith("info_"):
                ctl.observe(self._changed, names="value")
        self.redraw()

    # ---- state -> plain calls -----------------------------------------------------------
    def systems(self) -> list[Hardware]:
        """The systems as the controls set them (named apart as :func:`planner.compare` does)."""
        c = self.controls
        out = []
        for tag, base in zip("ab", self.bases, strict=False):
            stack = c[f"stack_{tag}"].value
            out.append(what_if(base, "" if stack == NO_STACK else stack,
                               {f: float(c[f"{f}_{tag}"].value) for f, _ in FACTORS},
                               int(c[f"domain_size_{tag}"].value)))
        return load_systems(out) if len(out) == 2 else out

    def call(self) -> Scenario:
        """The scenario that draws the current view (:func:`planner.frontier` of each side,
        :func:`planner.compare` of two)."""
        c = self.controls
        # "rules" or "recipes": whole deployments, where they apply (aggregated or disaggregated
        # serving, realistic mode, the published speculation); else, and with "fast" or "full", the
        # limit search: said in the call it copies
        deployed = (c["search"].value in ("rules", "recipes")
                    and c["serving"].value in ("aggregated", "disaggregated")
                    and c["mode"].value == "realistic" and c["speculation"].value != "given"
                    and not self.base.limit_only())
        view = self.base.replace(systems=tuple(self.systems()), serving=c["serving"].value,
                                 isl=int(c["isl"].value), osl=int(c["osl"].value), mode=c["mode"].value,
                                 search=c["search"].value if deployed else "limit",
                                 weights=None if c["weights"].value == "auto" else c["weights"].value)
        if c["speculation"].value == "off":
            view = view.replace(mtp=0)
        elif c["speculation"].value == "given":
            view = view.replace(acceptance=float(c["acceptance"].value))
        if c["search"].value == "fast":
            view = view.replace(**self.fast)
        if c["workload"].value != PAIR:  # a workload of sessions: its lengths, the limit search
            from planner.specs.workload import parse_tiers

            return Scenario(self.model, view.systems, serving=view.serving, mode=view.mode,
                            weights=view.weights, mtp=view.mtp, workload=c["workload"].value,
                            kv_tiers=parse_tiers(c["kv_tiers"].value), slo=self.slo)
        return view

    def code(self) -> str:
        """Python source of the plain calls that reproduce the current view."""
        view = self.call()
        hws = list(view.systems)
        at = float(self.controls["at"].value)
        fields = [f"{k}={_num(v)}" for k, v in view.to_dict().items()
                  if k not in ("model", "systems") and v != DEFAULTS[k]]
        lines = ["import planner", ""]
        for var, hw, ref in zip("ab", hws, self.refs, strict=False):
            lines.append(f"{var} = {hardware_code(hw, ref)}")
        systems = f"({', '.join('ab'[:len(hws)])}{',' if len(hws) == 1 else ''})"
        lines.append(f"s = planner.Scenario({', '.join([repr(self.model.name), systems, *fields])})")
        if view.workload is not None:
            lines += [f"{var}f = planner.workload_frontier(s.on({var}))" for var in "ab"[:len(hws)]]
            lines.append(f"planner.plot_frontiers([{', '.join(f'{v}f' for v in 'ab'[:len(hws)])}])")
        elif len(hws) == 2:
            level = _num(round(at, 2))
            lines += [f"c = planner.compare(s, levels=({level},))",
                      "planner.plot_frontiers([c.a, c.b], c.ratio)"]
        else:
            lines += ["f = planner.frontier(s)", "planner.plot_frontiers([f])"]
        return "\n".join(lines)

    # ---- computing and drawing ------------------------------------------------------------
    @staticmethod
    def _key(side: Scenario) -> tuple:
        """A side's cache key: its system and the scenario's other fields."""
        return repr(side.system), tuple(sorted((k, repr(v)) for k, v in side.to_dict().items()
                                               if k != "systems"))

    def _frontier(self, side: Scenario) -> pd.DataFrame:
        key = self._key(side)
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key][0]
        if side.workload is not None:
            from planner.serving.workloads import workload_frontier

            df = workload_frontier(side)
        else:
            # every point kept beside the frontier drawn: the headline reads the rate off them as
            # compare's table does (frontier_at)
            pts = frontier(side, all_points=True)
            df = pareto(pts)
            df.attrs.update(pts.attrs)
        self._cache[key] = (df, pts if side.workload is None else None)
        if len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return df

    def _points(self, side: Scenario) -> pd.DataFrame | None:
        """Every point of a side's last frontier (None: a workload's)."""
        key = self._key(side)
        return self._cache[key][1] if key in self._cache else None

    def set(self, **values: Any) -> Explorer:
        """Set several controls (``hbm_bandwidth_a=1.3, isl=8192``) and redraw once."""
        unknown = sorted(set(values) - set(self.controls))
        if unknown:
            raise KeyError(f"no control named {', '.join(unknown)}; controls: {', '.join(self.controls)}")
        self._hold = True
        try:
            for k, v in values.items():
                self.controls[k].value = v
        finally:
            self._hold = False
        self.redraw()
        return self

    def _changed(self, change: dict[str, Any]) -> None:
        self.controls["acceptance"].disabled = self.controls["speculation"].value != "given"
        pair = self.controls["workload"].value == PAIR
        self.controls["isl"].disabled = self.controls["osl"].disabled = not pair
        self.controls["kv_tiers"].disabled = pair
        if not self._hold:
            self.redraw()

    def redraw(self) -> None:
        """Recompute what changed, redraw the figure and the text (a bad combination, such as
        an instance the model does not fit, says so in one line and keeps the last picture)."""
        t0 = time.perf_counter()
        try:
            view = self.call()
            hws = list(view.systems)
            fronts = [self._frontier(view.on(hw)) for hw in hws]
            t1 = time.perf_counter()
        except SpecError as e:
            self.text.value = f"<pre style='color:#b00'>{html.escape(str(e))}</pre>"
            return
        self.frontiers = fronts
        self.ratio = ratio_curve(fronts[0], fronts[1], hws[0], hws[1]) if len(fronts) == 2 else None
        at = float(self.controls["at"].value)
        plot_frontiers(fronts, self.ratio, marks=Marks(fig=self.figure, mark_x=at, minor_ticks=False))
        buf = io.BytesIO()
        with matplotlib.rc_context({"svg.fonttype": "none"}):  # text as text: the fastest to write
            self.figure.savefig(buf, format="svg")
        self.image.value = buf.getvalue()
        self.summary = self._summary(view, at)
        self.text.value = f"<pre>{html.escape(self.summary)}</pre>"
        for tag, hw in zip("ab", hws, strict=False):
            self.controls[f"info_{tag}"].value = f"<small>{html.escape(_resources(hw))}</small>"
        self.code_box.value = self.code()
        self.explain_out.value = ""
        t2 = time.perf_counter()
        self.redraw_s = t2 - t0
        self.timings = {"search_s": t1 - t0, "draw_s": t2 - t1}

    def _summary(self, view: Scenario, at: float) -> str:
        lines = []
        ys = []
        hws = list(view.systems)
        for hw, f in zip(hws, self.frontiers, strict=True):
            pts = self._points(view.on(hw))
            # compare's number: the best configuration at least that fast for each user, from the
            # same function compare's table uses; a workload's frontier as drawn
            y = (float(frontier_at(view.on(hw), [at], points=pts).tps_per_gpu.iloc[0])
                 if pts is not None else value_at(f, at))
            ys.append(y)
            reach = f[f.tps_per_user >= at]
            if reach.empty:
                lines.append(f"{hw.name}: does not reach {at:.3g} tokens/s per user "
                             f"(tops out at {f.tps_per_user.max():.3g})")
                continue
            r = reach.iloc[0]
            spec = f", {int(r.mtp)} drafts" if "mtp" in r and r.mtp else ""
            lines.append(f"{hw.name}: {y:,.0f} output tokens/s per GPU at {at:.3g} tokens/s per user; "
                         f"binding term {str(r.bottleneck).replace('_', ' ')} "
                         f"({int(r.gpus)} GPUs, attention TP {int(r.tp_attn)} x DP {int(r.dp_attn)}, "
                         f"EP {int(r.ep)} x MoE TP {int(r.tp_moe)}, {r.weights}{spec}, "
                         f"batch {r.batch:,.0f})")
        if len(ys) == 2:
            a, b = hws
            if np.isfinite(ys[0]) and np.isfinite(ys[1]) and ys[1] > 0:
                per_mw = ys[0] / a.power_per_gpu / (ys[1] / b.power_per_gpu)
                lines.insert(0, f"ratio {a.name} / {b.name} at {at:.3g} tokens/s per user: "
                                f"{ys[0] / ys[1]:.2f}x per GPU, {per_mw:.2f}x per MW")
            else:
                lines.insert(0, f"ratio at {at:.3g} tokens/s per user: not both systems reach it")
        return "\n".join(lines)

    def run_explain(self) -> pd.DataFrame | None:
        """:func:`planner.explain` at the chosen rate with the view's arguments; shown under the
        figure and returned (None where the rate is out of reach)."""
        if len(self.bases) < 2:
            return None
        view = self.call()
        at = float(self.controls["at"].value)
        if view.workload is not None:
            self.explain_out.value = "<pre style='color:#b00'>explain: not for a workload of sessions</pre>"
            return None
        try:
            table = explain(view, at=at)
        except SpecError as e:
            self.explain_out.value = f"<pre style='color:#b00'>{html.escape(str(e))}</pre>"
            return None
        cols = ["kind", "step", "tps_per_gpu", "factor", "cumulative", "bottleneck"]
        self.explain_out.value = table[cols].to_html(index=False, float_format=lambda v: f"{v:,.3g}")
        return table

    # ---- display -------------------------------------------------------------------------
    def picture(self) -> Any:
        """The current figure as a static SVG picture (shows in any notebook render)."""
        from IPython.display import SVG

        return SVG(bytes(self.image.value))

    def _repr_mimebundle_(self, **kw: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kw) or {}
        data = dict(bundle[0] if isinstance(bundle, tuple) else bundle)
        data["image/svg+xml"] = bytes(self.image.value).decode()
        data["text/plain"] = self.summary
        return data


def value_at(front: pd.DataFrame, x: float) -> float:
    """The frontier's tokens/s per GPU at ``x`` tokens/s per user as drawn: interpolated
    between its points (:func:`planner.serving.comparison.envelope`), its highest value below
    its slowest point (what serves users faster serves them at ``x`` too), NaN above its
    fastest."""
    if x < float(front.tps_per_user.min()):
        return float(front.tps_per_gpu.max())
    return float(envelope(front, np.array([x]))[0])


def _resources(hw: Hardware) -> str:
    top = max(hw.flops.values())
    return (f"HBM {hw.hbm_bandwidth / 1e12:.3g} TB/s, {hw.hbm_capacity / 1e9:.4g} GB; "
            f"peak {top / 1e15:.3g} PFLOP/s; scale-up {hw.su_bandwidth / 1e9:.4g} GB/s x "
            f"{hw.domain_size} GPUs; scale-out {hw.so_bandwidth / 1e9:.3g} GB/s (per GPU, per direction)")


def explore(scenario: Scenario | None = None, at: float = 50.0, search: str | None = None) -> Explorer:
    """An ipywidgets panel over the scenario (default: the main job's) on its one or two systems:
    sliders for each system's HBM bandwidth and capacity, FLOP/s, scale-up and scale-out bandwidth
    (factors on the spec's values), its scale-up domain size and serving stack; ISL/OSL,
    expert-weight precision, speculation (published, off, or a given number of tokens per step),
    serving mode, bound/realistic, the search (``rules``, the default, and ``recipes``: whole
    deployments; ``fast``: the limit search with :data:`FAST`, or the scenario's ``max_gpus`` and
    ``batch_per_octave``; ``full``: the command line's limit search) and the interactivity ``at``
    which the text and the dotted line report.

    The scenario's fields start the controls; those without one (``max_ttft``, ``kv_offload``,
    ``gpus``, ...) are held fixed.  Needs ipywidgets (ImportError naming the extra otherwise)."""
    _ipywidgets()
    return Explorer(Scenario() if scenario is None else scenario, at, search)
