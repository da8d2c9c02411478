"""The question as one object: a :class:`Scenario` names the model, the systems, the serving
mode, the request lengths or workload, precision, speculation, the stack, the search and its
limits, the mode and the metric.  It is checked once, where it is built (Python, the CLI, a
plan's YAML, the explorer), printed as the header every output carries, and written into every
JSON output so that a result says exactly what question it answers::

    from planner import Scenario, compare, frontier
    s = Scenario("deepseek-r1", ("gb200-nvl72", "hgx-h200"), isl=8192)
    c = compare(s)                            # the two systems' frontiers and their ratio
    f = frontier(s.on("hgx-h200"))            # one system's frontier
    g = frontier(s.on("hgx-h200").replace(search="limit", mtp=None))

Each field's unit, default and meaning live once, in :data:`FIELDS` (the CLI's options are made
from it: :mod:`planner.cli.options`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from planner.errors import SpecError, shown

if TYPE_CHECKING:  # (imported when a scenario is built: the command line's help stays fast)
    from planner.specs.hardware import Hardware
    from planner.specs.model import Model

SERVING_MODES = ("decode", "prefill", "aggregated", "disaggregated")
SEARCHES = ("rules", "recipes", "limit")
#: the searches whose points are whole deployments (prefill workers, users, TTFT of the loop)
DEPLOYMENT_SEARCHES = ("rules", "recipes")
#: earlier names of a search, still taken
SEARCH_ALIASES = {"deployed": "recipes"}
METRICS = ("output", "total", "decode")
MODES = ("bound", "realistic")
#: the serving stacks whose fits to measured runs a system may carry (``NAME@STACK``, ``stack``)
STACKS = ("trtllm", "sglang", "vllm")
#: Batch grid: sequences per instance on a fixed geometric ladder, BATCH_PER_OCTAVE points per
#: doubling from 1, plus each layout's memory limit.  The ladder does not depend on the hardware,
#: so a system with more of any resource is evaluated on a superset of the same points.
BATCH_PER_OCTAVE = 4

#: the fields only the limit search answers, and the values that leave them unasked
LIMIT_ONLY = {"gpus": (None,), "max_gpus": (None,), "tp_attn": (None,), "ep": (None,),
              "tp_moe": (None,), "acceptance": (None,), "overlap": (None, "auto"),
              "kv_offload": (None, False), "batch_per_octave": (None, BATCH_PER_OCTAVE)}


def _opt(default: Any, doc: str, *, unit: str = "", kind: str = "text", group: str = "search",
         choices: tuple[str, ...] = (), metavar: str | None = None,
         choice_docs: dict[str, str] | None = None, none_means: str = "") -> Any:
    """A scenario field: its default (``none_means``: what a default of None stands for), unit and
    meaning (``doc``; ``choice_docs``: each choice's, where the help lists only those a command
    takes), and how the CLI reads it (``kind``: text, count, positive, mtp, overlap, acceptance,
    flag, systems, choice, slo, tiers)."""
    return field(default=default, metadata=dict(doc=doc, unit=unit, kind=kind, group=group,
                                                choices=choices, metavar=metavar,
                                                choice_docs=choice_docs or {}, none_means=none_means))


@dataclass(frozen=True)
class Scenario:
    """What is asked: a model on one or more systems, served one way, at one workload.

    Fields (unit; default): see :data:`FIELDS` or ``help(Scenario)``.  Build variants with
    :meth:`replace` and one system's scenario with :meth:`on`; :meth:`to_dict` is the JSON every
    output embeds and :meth:`from_dict` reads it back."""

    model: Any = _opt("kimi-k2-thinking", "bundled model name or path (YAML or config.json)",
                      group="question", metavar="MODEL")
    systems: Any = _opt(("gb200-nvl72", "hgx-h200"), "systems: bundled names or YAML paths; "
                        "NAME@STACK picks a serving stack's fit", kind="systems", group="question",
                        metavar="H")
    stack: str | None = _opt(None, "serving stack whose fit to measured runs realistic mode uses, for "
                             "every system named without its own @STACK (NAME@STACK picks one per "
                             "system)", kind="choice", choices=STACKS, group="question",
                             none_means="each system's best-measured stack, named in the output header")
    serving: str = _opt("disaggregated", "serving mode: decode (decode pool only at the context), "
                        "prefill (prefill pool only: input tokens/s per GPU vs TTFT), aggregated "
                        "(prefill and decode share GPUs), disaggregated (separate, rate-matched pools)",
                        kind="choice", choices=SERVING_MODES, group="workload", choice_docs={
                            "decode": "decode: decode pool only at --context",
                            "prefill": "prefill: prefill pool only (input tokens/s per GPU vs TTFT)",
                            "aggregated": "aggregated: prefill and decode share GPUs",
                            "disaggregated": "disaggregated: separate, rate-matched pools"})
    isl: float = _opt(1024, "input (prompt) tokens per request", unit="tokens", kind="count",
                      group="workload")
    osl: float = _opt(1024, "output tokens per request", unit="tokens", kind="count", group="workload")
    context: float | None = _opt(None, "mean KV length in decode", unit="tokens", kind="positive",
                                 group="workload", none_means="ISL + OSL/2")
    max_ttft: float | None = _opt(None, "time-to-first-token limit: with the limit search, for the "
                                  "prefill pool (its latency outside the passes, its prefill pass and the "
                                  "KV hand-off); with rules or recipes, the median TTFT of each "
                                  "deployment's closed loop, its queue included", unit="s",
                                  kind="positive", group="workload",
                                  none_means="2 s with the limit search; none with rules or recipes, as a "
                                             "benchmark runs them")
    workload: str | None = _opt(None, "a workload instead of one ISL/OSL pair: agentic, reasoning, chat "
                                "(bundled), a workload YAML or a trace CSV (arrival_s, input_tokens, "
                                "output_tokens, cached_tokens[, session]); its sessions reuse earlier "
                                "turns' KV from the KV tiers, its prefill pool is sized for its TTFT "
                                "service level, and rows carry TTFT/TPOT percentiles", group="workload",
                                metavar="NAME|FILE")
    slo: Any = _opt(None, "service levels replacing the workload's, seconds: e.g. "
                    "ttft_p99=2,tpot_p90=0.05 (only with a workload)", kind="slo", group="workload",
                    metavar="LEVELS")
    kv_tiers: Any = _opt(None, "where sessions' KV may wait between turns: a comma list of hbm, host, "
                         "nvme, or none (only with a workload)", kind="tiers", group="workload",
                         metavar="TIERS", none_means="hbm,host,nvme")
    weights: str | None = _opt(None, "routed-expert storage: bf16, fp8, nvfp4, mxfp4, int4_g32, int4_a8",
                               none_means="the model's own, and NVFP4 / FP8 where the hardware "
                                          "multiplies them")
    kv: str | None = _opt(None, "KV-cache storage: bf16 or fp8", none_means="the model's")
    mtp: Any = _opt("auto", "speculative decoding / MTP: off, auto (tried where the model has MTP "
                    "layers) or a number of draft tokens", unit="draft tokens", kind="mtp")
    acceptance: float | None = _opt(None, "speculative acceptance replacing the model's published "
                                    "figures: tokens per step (>= 1, e.g. 2.3) or a per-draft acceptance "
                                    "rate (< 1, e.g. 0.7); with mtp auto, 1-3 drafts are tried (those "
                                    "that can emit it)", kind="acceptance", metavar="A",
                                    none_means="the model's published figures")
    search: str | None = _opt(None, "rules: whole deployments of the layouts every stack runs on "
                              "this hardware (attention TP over one or two nodes, attention DP with EP "
                              "up to the scale-up domain, several nodes over the NIC), prefill pools "
                              "rate-matched to their decode pools, the stack's MTP drafts as accepted "
                              "under load, the model's own launch recipes as priors; recipes (earlier "
                              "name: deployed): the InferenceX launch recipes alone, borrowed from "
                              "another model or system where it has none; limit: "
                              "every layout and batch the hardware could run with ideal software",
                              kind="choice", choices=(*SEARCHES, *SEARCH_ALIASES),
                              none_means="rules for aggregated and disaggregated serving in realistic "
                                         "mode, else limit")
    gpus: int | None = _opt(None, "fix the instance size in GPUs (e.g. 8 for one HGX node)",
                            unit="GPUs", kind="count", none_means="searched")
    max_gpus: int | None = _opt(None, "largest instance the search tries", unit="GPUs", kind="count",
                                none_means="4 scale-up domains, >= 128")
    tp_attn: int | None = _opt(None, "attention tensor parallel", unit="GPUs", kind="count",
                               none_means="searched")
    ep: int | None = _opt(None, "expert parallel", unit="GPUs", kind="count", none_means="searched")
    tp_moe: int | None = _opt(None, "expert tensor parallel", unit="GPUs", kind="count",
                              none_means="searched")
    overlap: Any = _opt("auto", "two-micro-batch overlap: auto (both tried), on, off", kind="overlap")
    kv_offload: bool = _opt(False, "let the KV cache spill to CPU-attached memory (Grace LPDDR5X, host "
                            "DDR)", kind="flag")
    batch_per_octave: int = _opt(BATCH_PER_OCTAVE, "decode batches tried per doubling of the batch "
                                 "(besides each layout's memory limit); fewer is faster and draws the "
                                 "frontier from fewer points", kind="count")
    mode: str = _opt("realistic", "bound: datasheet peaks, no overheads (the speed of light); realistic: "
                     "the spec's efficiencies and latencies", kind="choice", choices=MODES, group="answer")
    metric: str = _opt("output", "output: output tokens/s per GPU counting every GPU; total: input + "
                       "output (InferenceMAX); decode: output per decode GPU", kind="choice",
                       choices=METRICS, group="answer", choice_docs={
                           "output": "output: output tokens/s per GPU counting every GPU",
                           "total": "total: input + output (InferenceMAX)",
                           "decode": "decode: output per decode GPU"})
    region: str | None = _opt(None, "size only the systems that may be sold in this region "
                              "(system.regions: global, china); the others are named and left out",
                              group="question", metavar="R", none_means="every region")

    # ---- checks, once, where it is built ---------------------------------------------------------
    def __post_init__(self) -> None:
        from planner.specs.hardware import Hardware
        from planner.specs.model import Model

        systems = self.systems
        if isinstance(systems, str | Hardware | os.PathLike):
            systems = (systems,)
        try:
            systems = tuple(systems)
        except TypeError:
            raise SpecError("<input>", "hardware",
                            f"a system or a list of systems, got {shown(systems)}") from None
        if not systems:
            raise SpecError("<input>", "hardware", "at least one system")
        systems = tuple(os.fspath(s) if isinstance(s, os.PathLike) else s for s in systems)
        for s in systems:
            if not isinstance(s, str | Hardware):
                raise SpecError("<input>", "hardware", f"a system name, path or Hardware, got {shown(s)}")
        object.__setattr__(self, "systems", systems)
        if isinstance(self.model, os.PathLike):  # a path to a model's YAML or config.json
            object.__setattr__(self, "model", os.fspath(self.model))
        if not isinstance(self.model, str | Model):
            raise SpecError("<input>", "model", f"a model name, path or Model, got {shown(self.model)}")
        for name, allowed in (("serving", SERVING_MODES), ("metric", METRICS), ("mode", MODES)):
            v = getattr(self, name)
            if v not in allowed:
                words = "bound or realistic" if name == "mode" else f"one of {', '.join(allowed)}"
                raise SpecError("<input>", name, f"{words}, got {v!r}")
        if self.stack is not None and self.stack not in STACKS:
            raise SpecError("<input>", "stack", f"one of {', '.join(STACKS)}, got {self.stack!r}")
        bpo = self.batch_per_octave
        if isinstance(bpo, bool) or not isinstance(bpo, numbers.Integral) or bpo < 1:
            raise SpecError("<input>", "batch_per_octave", f"a whole number >= 1, got {shown(bpo)}")
        t = self.max_ttft
        if t is not None and not (isinstance(t, int | float) and not isinstance(t, bool)
                                  and math.isfinite(t) and t > 0):
            raise SpecError("<input>", "max_ttft", f"a positive time in seconds, got {shown(t)}")
        if self.search is not None:
            s = SEARCH_ALIASES.get(self.search, self.search) if isinstance(self.search, str) else self.search
            if s not in SEARCHES:
                raise SpecError("<input>", "search", f"one of {', '.join(SEARCHES)}, got {self.search!r}")
            object.__setattr__(self, "search", s)
            asked = self.limit_only()
            if s in DEPLOYMENT_SEARCHES and asked:
                raise SpecError("<input>", asked[0], "the limit search with it (search='limit', --search "
                                f"limit): the {s} search takes layouts, batches and speculation from the "
                                "stacks' rules and recipes")
        if self.workload is None:
            for k in ("slo", "kv_tiers"):
                if getattr(self, k) is not None:
                    raise SpecError("<input>", k, "a workload with it")

    # ---- reading it -----------------------------------------------------------------------------
    def limit_only(self) -> list[str]:
        """The fields asked for that only the limit search answers: a layout, a batch grid, a
        speculation rate, an overlap or offload choice (rules and recipes fix them)."""
        return [k for k, unset in LIMIT_ONLY.items() if getattr(self, k) not in unset]

    @property
    def resolved_search(self) -> str:
        """The search a frontier takes: the one asked, else the limit search where a limit-only
        field is asked, else ``rules`` for aggregated and disaggregated serving in realistic mode
        and ``limit`` otherwise (:func:`default_search`)."""
        if self.search is not None:
            return self.search
        return "limit" if self.limit_only() else default_search(self.serving, self.mode)

    @property
    def system(self) -> str | Hardware:
        """The one system of a one-system scenario (a frontier's)."""
        if len(self.systems) != 1:
            names = ", ".join(_name(s) for s in self.systems)
            raise SpecError("<input>", "hardware", f"one system for a frontier, got {len(self.systems)} "
                            f"({names}): scenario.on(NAME) picks one")
        return self.systems[0]

    def on(self, system: str | Hardware) -> Scenario:
        """This scenario on one system."""
        return self.replace(systems=(system,))

    def replace(self, **changes: Any) -> Scenario:
        """A variant with ``changes`` (field names), checked as any scenario is."""
        bad = sorted(set(changes) - set(FIELDS))
        if bad:
            raise SpecError("<input>", bad[0], f"a scenario field ({', '.join(FIELDS)})")
        return dataclasses.replace(self, **changes)

    def load_model(self) -> Model:
        from planner.specs.registry import load_model

        return load_model(self.model)

    def load_systems(self, field: str = "hardware") -> list[Hardware]:
        """The systems, each with :attr:`stack`'s fit where it names none of its own, under names
        of their own (:func:`planner.specs.registry.load_systems`; ``field`` names them in an
        error)."""
        from planner.specs.registry import load_systems

        return load_systems([_with_stack(s, self.stack) for s in self.systems], field)

    def load_system(self) -> Hardware:
        from planner.specs.registry import load_hardware

        return load_hardware(_with_stack(self.system, self.stack))

    # ---- writing it -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-ready values (a model or system object by its name), in field
        order: what outputs embed under ``scenario`` and :meth:`from_dict` reads back."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if f.name == "model":
                v = _name(v)
            elif f.name == "systems":
                v = [_name(s) for s in v]
            elif isinstance(v, Mapping):
                v = {str(k): float(x) for k, x in v.items()}
            elif isinstance(v, tuple):
                v = list(v)
            elif type(v).__module__ == "numpy" and hasattr(v, "item"):
                v = v.item()
            out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "<input>") -> Scenario:
        """A scenario from :meth:`to_dict`'s JSON (or any subset of its fields; the others take
        their defaults); an unknown field is a SpecError naming it and ``where``."""
        if not isinstance(data, Mapping):
            raise SpecError(where, "scenario", f"a mapping of scenario fields, got {shown(data)}")
        bad = sorted(str(k) for k in data if k not in FIELDS)
        if bad:
            raise SpecError(where, f"scenario.{bad[0]}", f"a scenario field ({', '.join(FIELDS)})")
        kw = dict(data)
        for k in ("systems", "kv_tiers"):
            if isinstance(kw.get(k), list):
                kw[k] = tuple(kw[k])
        try:
            return cls(**kw)
        except SpecError as exc:
            raise SpecError(where, f"scenario.{exc.field}", exc.expected) from None

    def header(self) -> str:
        """One line saying what is asked (the fields that differ from their defaults besides the
        model and systems)."""
        d = self.to_dict()
        rest = [f"{k} {_text(v)}" for k, v in d.items() if k not in ("model", "systems")
                and v != DEFAULTS[k]]
        return (f"{d['model']} on {', '.join(d['systems'])}, {self.serving}, ISL {self.isl:g} / OSL "
                f"{self.osl:g}" + "".join(f", {r}" for r in rest if not r.startswith(("serving ", "isl ",
                                                                                        "osl "))))

    def __str__(self) -> str:
        return self.header()


def default_search(serving: str, mode: str) -> str:
    """The search a frontier takes unless told: ``rules`` for aggregated and disaggregated
    serving in realistic mode (what deployments reach); ``limit`` in bound mode (the speed of
    light is a statement about the hardware, not about a stack) and for a decode or prefill pool
    alone (no recipe runs one)."""
    return "rules" if mode == "realistic" and serving in ("aggregated", "disaggregated") else "limit"


def _name(obj: Any) -> str:
    return obj if isinstance(obj, str) else str(getattr(obj, "name", obj))


def _text(v: Any) -> str:
    if v is True:
        return "on"
    if v is False or v is None:
        return "off"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _with_stack(system: str | Hardware, stack: str | None) -> str | Hardware:
    """``system`` with serving stack ``stack``'s fit unless it names its own (NAME@STACK)."""
    if not stack:
        return system
    if not isinstance(system, str):
        return system if system.stack == stack else system.with_stack(stack)
    return system if "@" in system else f"{system}@{stack}"


#: field name -> its dataclass field (default and metadata: doc, unit, kind, group, choices)
FIELDS: dict[str, dataclasses.Field] = {f.name: f for f in dataclasses.fields(Scenario)}
DEFAULTS = {name: (list(f.default) if isinstance(f.default, tuple) else f.default)
             for name, f in FIELDS.items()}
