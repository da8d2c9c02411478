"""``moe-planner point`` (one configuration, term by term) and ``moe-planner equations`` (the
sympy model as text or LaTeX, with the symbol table)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from planner.cli.common import (
    add_command,
    positive_int,
    print_json,
)
from planner.cli.options import add_scenario_options, scenario_from_args
from planner.errors import SpecError

POINT_EPILOG = """\
examples:
  moe-planner point --model kimi-k2-thinking --hardware hgx-h200 --gpus 8 --tp-attn 8 --ep 8 \\
      --batch 8 --context 4096 --mode bound
  moe-planner point --model deepseek-v3 --hardware gb200-nvl72 --gpus 72 --batch 4608 \\
      --context 4096 --overlap --mtp 1 --json
  moe-planner point --model kimi-k2-thinking --hardware gb200-nvl72 --gpus 8 --prefill \\
      --prompt 8192 --batch 4

Layout: attention runs as TP (--tp-attn) x DP (--dp-attn) = --gpus; experts as EP (--ep) x
TP (--tp-moe) = --gpus.  Defaults: data-parallel attention (TP 1) and EP over every GPU.
--batch counts concurrent sequences in the whole instance (each attention-DP rank holds
batch / DP of them).  Times are per GPU; "per layer" is one layer's operator time, "per step"
multiplies by the layers that run it.  With --overlap the MoE layers run two micro-batches,
each layer costing 2 max(compute, communication) at half the batch; the operator rows show the
full batch and are not summed by the step.  An infeasible point prints one line on stderr and
exits with status 2.
"""

EQUATIONS_EPILOG = """\
examples:
  moe-planner equations                 # every expression, plain text, and the symbol table
  moe-planner equations --term experts  # one expression
  moe-planner equations --latex --term dispatch

Names: the per-operator times (attn_proj, experts, dispatch, ...), the layer and step times,
part.<op>.<resource> (the roofline parts behind the bottleneck attribution), memory.<...>
(bytes per GPU, the largest batch), the rates tps_user / tps_gpu / prefill_tps_gpu, and
op.<name>: the single-kernel laws checked against measured kernels (op.gemm, op.gemm_bound,
op.gemm_law, op.moe_law, op.moe_bound, op.attn_mla_law, op.attn_gqa_law, op.allreduce, op.a2a ...;
planner/physics/operators.py).
Conventions: per GPU, per layer unless named otherwise; SI units (s, B, FLOP, B/s, FLOP/s).
"""

#: How many times per step each per-layer term runs (n_L layers, n_Ld dense first, the rest MoE).
_COUNT = {
    "attn_proj": "n_L", "attn_core": "n_L", "attn_indexer": "n_L", "attn_linear": "n_L",
    "experts": "n_moe", "shared_experts": "n_moe",
    "experts_together": "n_moe",
    "dense_ffn": "n_Ld", "lm_head": "1", "dispatch": "n_moe", "combine": "n_moe",
    "allreduce_attn": "n_moe+2n_Ld", "allreduce_moe": "n_moe", "layer_moe": "n_moe",
    "layer_dense": "n_Ld", "draft": "1", "host": "1", "step": "1",
}
_PER_STEP_ONLY = {"lm_head", "draft", "host", "step"}
#: rows that are parts of another (shown only where the model has them)
_PARTS_OF = {"attn_indexer": "attn_core", "attn_linear": "attn_core"}




#: the scenario fields of one configuration
POINT_FIELDS = ("model", "systems", "stack", "gpus", "tp_attn", "ep", "tp_moe", "context", "weights", "kv",
                "mtp", "acceptance", "overlap", "kv_offload", "mode")


def register(sub: Any) -> None:
    p = add_command(
        sub, "point", _cmd_point,
        help="one configuration: every term of a decode step (or a prefill pass)",
        description="Evaluate one configuration with the closed-form step model and show where the "
        "time goes: each operator's time per layer and per step, the time per bottleneck category, "
        "the binding term, memory per GPU, TPOT and throughput per user and per GPU.",
        epilog=POINT_EPILOG,
    )
    add_scenario_options(p, POINT_FIELDS, scenario_file=False, titles={
        "search": "the configuration", "workload": "workload",
        "answer": "mode"}, changes={
        "model": {"required": True},
        "systems": {"required": True, "help": "bundled system name or path to a YAML (NAME@STACK picks a "
                                              "stack's fit)"},
        "gpus": {"required": True, "help": "GPUs in the instance (count)"},
        "tp_attn": {"help": "attention tensor-parallel degree (GPUs; default 1, or gpus / --dp-attn)"},
        "ep": {"help": "expert-parallel degree (GPUs; default gpus / --tp-moe)"},
        "tp_moe": {"help": "expert tensor-parallel degree (GPUs; default 1, or gpus / --ep)"},
        "context": {"help": "mean KV-cache length per sequence (tokens; required for decode)"},
        "weights": {"help": "routed-expert storage format: bf16, fp8, nvfp4, mxfp4, int4_g32, int4_a8 "
                            "(default: the model's)"},
        "mtp": {"default": None, "metavar": "off|N",
                "help": "speculative / MTP draft tokens per step (tokens; default off)"},
        "acceptance": {"help": "speculative acceptance with --mtp N, as frontier and compare take it: tokens "
                               "per step (>= 1, at most N + 1, e.g. 2.3) or a per-draft acceptance rate "
                               "(< 1, e.g. 0.7); default: the model's published figures"},
        "overlap": {"default": False, "action": "store_true",
                    "help": "two-micro-batch overlap of communication with compute (default off)"},
        "kv_offload": {"help": "let the KV cache spill to CPU-attached memory where the system has it "
                               "(default off)"},
        "mode": {"help": "bound: every efficiency 1 and every latency 0 (the speed of light); realistic: "
                         "the system's measured efficiencies (default realistic)"},
    })
    lay = p.add_argument_group("layout (products must equal --gpus)")
    lay.add_argument("--dp-attn", type=positive_int, default=None,
                     help="attention data-parallel degree (ranks; default gpus / --tp-attn)")
    lay.add_argument("--expert-slots", type=positive_int, default=None,
                     help="routed-expert slots incl. redundant replicas (count; default: the fewest "
                     ">= the routed experts that EP divides)")
    wl = p.add_argument_group("workload")
    wl.add_argument("--batch", type=positive_int, default=None,
                    help="concurrent sequences in the instance (count; required for decode, default "
                    "1 prompt for --prefill)")
    wl.add_argument("--prefill", action="store_true",
                    help="evaluate one prefill pass of --batch prompts instead of a decode step")
    wl.add_argument("--prompt", type=positive_int, default=None,
                    help="prompt length for --prefill (tokens; required with --prefill)")
    p.add_argument("--json", action="store_true",
                   help="print the result as JSON (SI units: s, B, tokens/s) instead of the table")

    e = add_command(
        sub, "equations", _cmd_equations,
        help="print the model's sympy expressions (text or LaTeX) and the symbol table",
        description="Print every expression the numeric path evaluates (planner.physics.equations.ALL, the "
                    "operator laws as op.NAME, the serving equations as serving.NAME), or "
        "one of them, as plain text or LaTeX, followed by the symbol table (name, meaning, unit).",
        epilog=EQUATIONS_EPILOG,
    )
    e.add_argument("--latex", action="store_true", help="print LaTeX (sympy.latex) instead of text")
    e.add_argument("--term", metavar="NAME", default=None,
                   help="print only this expression (e.g. experts, dispatch, step, memory.b_max)")
    e.add_argument("--json", action="store_true",
                   help="print JSON: each expression as text and LaTeX, and the symbols it uses (name, "
                        "LaTeX, unit, meaning, group)")


# ---- point ------------------------------------------------------------------------------------
def _layout_args(args: argparse.Namespace) -> int | None:
    """--tp-attn from --tp-attn / --dp-attn."""
    tp, dp = args.tp_attn, args.dp_attn
    if dp is None:
        return tp
    if args.gpus % dp:
        raise SpecError("<input>", "--dp-attn", f"a divisor of --gpus ({args.gpus}), got {dp}")
    if tp is not None and tp * dp != args.gpus:
        raise SpecError("<input>", "--tp-attn", f"--tp-attn x --dp-attn = --gpus ({args.gpus}), "
                        f"got {tp} x {dp}")
    return args.gpus // dp


def _cmd_point(args: argparse.Namespace) -> int:
    from planner.physics.step import decode_step, prefill

    sc = scenario_from_args(args)
    model = sc.load_model()
    tp_attn = _layout_args(args)
    if args.ep is not None and args.tp_moe is not None and args.ep * args.tp_moe != args.gpus:
        raise SpecError("<input>", "--ep", f"--ep x --tp-moe = --gpus ({args.gpus}), "
                        f"got {args.ep} x {args.tp_moe}")
    for flag, val in (("--ep", args.ep), ("--tp-moe", args.tp_moe)):
        if val is not None and args.gpus % val:
            raise SpecError("<input>", flag, f"a divisor of --gpus ({args.gpus}), got {val}")
    sc = sc.replace(model=model, tp_attn=tp_attn)
    if args.prefill:
        if args.prompt is None:
            raise SpecError("<input>", "--prompt", "a prompt length in tokens with --prefill")
        if args.mtp is not None:
            raise SpecError("<input>", "--mtp", "off with --prefill (drafts are a decode feature)")
        res = prefill(sc, prompt=args.prompt, batch=args.batch if args.batch is not None else 1.0,
                      expert_slots=args.expert_slots)
    else:
        if args.batch is None:
            raise SpecError("<input>", "--batch", "the number of concurrent sequences in the instance")
        if args.context is None:
            raise SpecError("<input>", "--context", "the mean KV length in tokens")
        if args.context < 1:
            raise SpecError("<input>", "--context", f"a mean KV length of at least 1 token, got "
                            f"{args.context:g}")
        if args.prompt is not None:
            raise SpecError("<input>", "--prompt", "used only with --prefill (decode takes --context)")
        if args.acceptance is not None and args.mtp is None:
            raise SpecError("<input>", "--acceptance", "used only with --mtp N")
        if args.mtp and args.acceptance is None and model.mtp_acceptance <= 0:
            raise SpecError("<input>", "--acceptance", f"a per-token acceptance rate with --mtp: "
                            f"{model.name} has no published default")
        try:
            res = decode_step(sc, batch=args.batch, context=args.context, expert_slots=args.expert_slots)
        except SpecError as exc:  # the one configuration's speculation, named by its flag
            if exc.where != "<input>" or exc.field not in ("acceptance", "mtp"):
                raise
            raise SpecError("<input>", f"--{exc.field}", exc.expected.replace("mtp N", "--mtp N")
                            .replace("with mtp", "with --mtp")) from None
    if not res.feasible:  # one line on stderr, nothing on stdout (as for any bad input)
        length = args.prompt if args.prefill else args.context
        model.check_length(length, "prompt" if args.prefill else "context")  # says which window
        sys.stderr.write(f"error: infeasible: {res.reason} ({_infeasible_detail(res)})\n")
        return 2
    counts = _counts(model, res)
    binding = _binding_term(res, counts)
    if args.json:
        d = {"scenario": sc.to_dict(), **res.to_dict()}
        d["binding_term"] = binding
        d["per_step_s"] = {t: res.terms[t] * counts[t] for t in res.terms}
        d["units"] = "SI: seconds, bytes per GPU, tokens/s; terms_s per layer (lm_head, draft, " \
                     "host, step per step), per_step_s = terms_s x the layers that run each term"
        print_json(d)
    else:
        sys.stdout.write(_table(res, counts, binding))
    return 0


def _counts(m: Any, res: Any) -> dict[str, float]:
    n = {"n_L": m.n_L, "n_Ld": m.n_Ld, "n_moe": m.n_moe, "1": 1,
         "n_moe+2n_Ld": m.n_moe + 2 * m.n_Ld}
    return {t: float(n[_COUNT.get(t, "1")]) for t in res.terms}


def _binding_term(res: Any, counts: dict[str, float]) -> str:
    """The operator that takes the largest share of the step."""
    ops = [t for t in res.terms if not t.startswith("layer_") and t not in ("step", "draft", *_PARTS_OF)]
    if not ops:
        return ""
    return max(ops, key=lambda t: res.terms[t] * counts[t])


def _infeasible_detail(res: Any) -> str:
    c, m = res.config, res.memory
    if "KV cache" in res.reason:
        return (f"batch {c['batch']:g} needs {m['kv'] / 1e9:.1f} GB of KV per GPU, "
                f"{m['hbm_free_for_kv'] / 1e9:.1f} GB free; at most {m['max_batch']} sequences fit")
    if "weights" in res.reason:
        return f"weights take {m['weights'] / 1e9:.1f} GB per GPU of {m['hbm_capacity'] / 1e9:.1f} GB"
    return (f"gpus {c['gpus']}, attention TP {c['tp_attn']}, EP {c['ep']}, MoE TP {c['tp_moe']}, "
            f"expert slots {c['expert_slots']}")


def _us(x: float) -> str:
    return f"{x * 1e6:12.2f}"


def _table(res: Any, counts: dict[str, float], binding: str) -> str:
    c, m = res.config, res.memory
    phase = "prefill pass" if res.phase == "prefill" else "decode step"
    lines = [
        f"{res.model} on {res.hardware}: one {phase}, {res.mode} mode",
        f"layout: {c['gpus']} GPUs; attention TP {c['tp_attn']} x DP {c['dp_attn']}; experts EP "
        f"{c['ep']} x TP {c['tp_moe']}, {c['expert_slots']} expert slots",
    ]
    if res.phase == "prefill":
        lines.append(f"workload: {c['batch']:g} prompts of {c['prompt']:g} tokens")
    else:
        lines.append(f"workload: {c['batch']:g} sequences ({c['batch_per_gpu']:g} per GPU), mean context "
                     f"{c['context']:g} tokens")
    lines.append(f"precision: {c['weights']} experts / {c['attention']} attention / {c['kv']} KV; "
                 f"MTP {c['mtp'] or 'off'}; overlap {'on' if c['overlap'] else 'off'}"
                 + ("; KV may spill to host memory" if c.get("kv_offload") else ""))
    lines.append("")
    lines.append(f"{'term':<16}{'per layer (us)':>15}  {'x count':<12}{'per step (us)':>14}")
    for t, v in res.terms.items():
        if t in _PARTS_OF and not v:
            continue
        per_layer = "" if t in _PER_STEP_ONLY else _us(v)
        cnt = f"x {counts[t]:g}"
        name = f"  {t}" if t in _PARTS_OF else t  # indented: a part of the row above
        lines.append(f"{name:<16}{per_layer:>15}  {cnt:<12}{_us(v * counts[t]):>14}")
    if c["overlap"]:
        lines.append("(overlap: layer_moe = 2 max(compute, comm) at half the batch; the operator rows "
                     "above are for the full batch)")
    lines.append("")
    lines.append("busy time per step by category (ms): " + ", ".join(
        f"{k} {v * 1e3:.3f}" for k, v in res.categories.items()))
    lines.append(f"bottleneck: {res.bottleneck}; largest term: {binding} "
                 f"({res.terms[binding] * counts[binding] / res.step_time:.0%} of the step)"
                 if binding else f"bottleneck: {res.bottleneck}")
    lines.append(f"memory per GPU: weights {m['weights'] / 1e9:.2f} GB, KV {m['kv'] / 1e9:.2f} GB"
                 + (f" ({m['kv_in_host'] / 1e9:.2f} GB in host memory)" if m.get("kv_in_host") else "")
                 + f", free for KV {m['hbm_free_for_kv'] / 1e9:.2f} GB of {m['hbm_capacity'] / 1e9:.0f} GB"
                 f"; largest batch {m['max_batch']:.0f} sequences")
    if res.phase == "prefill":
        lines.append(f"pass time {res.step_time * 1e3:.3f} ms; prompt tokens/s per GPU "
                     f"{res.tps_per_gpu:,.1f}")
    else:
        lines.append(f"step {res.step_time * 1e3:.3f} ms, {res.tokens_per_step:g} tokens per sequence per "
                     f"step; TPOT {res.tpot * 1e3:.3f} ms")
        lines.append(f"tokens/s per user {res.tps_per_user:,.1f}; tokens/s per GPU {res.tps_per_gpu:,.1f}")
    if not res.feasible:
        lines.append(f"INFEASIBLE: {res.reason}")
    return "\n".join(lines) + "\n"


# ---- equations --------------------------------------------------------------------------------
def _cmd_equations(args: argparse.Namespace) -> int:
    import sympy as sp

    from planner.physics import equations as eq
    from planner.physics.operators import OPERATOR_SYMBOLS, OPERATORS
    from planner.physics.serving_eq import EQUATIONS as SERVING
    from planner.physics.serving_eq import SERVING_SYMBOLS
    from planner.physics.symbols import REGISTRY

    exprs = (dict(eq.ALL) | {f"op.{k}": v for k, v in OPERATORS.items()}
             | {f"serving.{k}": v for k, v in SERVING.items()})
    if args.term is not None and args.term not in exprs:
        raise SpecError("<input>", "--term", f"one of the expression names, got {args.term!r}"
                        f"{_suggest(args.term, list(exprs))}; see `moe-planner equations` for all")
    names = [args.term] if args.term else list(exprs)
    plain = {s.symbol: sp.Symbol(n) for n, s in REGISTRY.items()}
    used: set[sp.Symbol] = set()
    out = []
    for n in names:
        expr = exprs[n]
        used |= expr.free_symbols
        if args.latex:
            out.append(f"{n}:\n  {sp.latex(expr)}")
        else:
            with sp.evaluate(False):
                text = sp.sstr(expr.xreplace(plain))
            out.append(f"{n} =\n  {text}")
    out.append("")
    out.append("symbols" + (" (LaTeX)" if args.latex else "") + ":")
    rows = [(n, s.symbol, s.unit, s.meaning, s.group) for n, s in REGISTRY.items() if s.symbol in used]
    rows += [(n, sym, unit, meaning, "operators") for n, (sym, meaning, unit) in OPERATOR_SYMBOLS.items()
             if sym in used]
    listed = {r[1] for r in rows}
    rows += [(n, sym, unit, meaning, "serving") for n, (sym, meaning, unit) in SERVING_SYMBOLS.items()
             if sym in used and sym not in listed]
    if args.json:
        print_json({"expressions": [{"name": n, "text": sp.sstr(exprs[n].xreplace(plain)),
                                     "latex": sp.latex(exprs[n])} for n in names],
                    "symbols": [{"name": n, "latex": sp.latex(sym), "unit": unit, "meaning": meaning,
                                 "group": group} for n, sym, unit, meaning, group in rows]})
        return 0
    width = max(len(r[0]) for r in rows) if rows else 4
    for n, sym, unit, meaning, group in rows:
        label = sp.latex(sym) if args.latex else n
        out.append(f"  {label:<{max(width, 12)}}  [{unit}]  {meaning}  ({group})")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def _suggest(name: str, known: list[str]) -> str:
    from planner.specs.reading import suggest

    return suggest(name, known)
