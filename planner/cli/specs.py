"""``moe-planner specs list | show``: the bundled hardware and model library, and your own files."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from planner.cli.common import add_command, json_safe, print_json
from planner.errors import SpecError

if TYPE_CHECKING:  # the spec modules load with the command, not with --help
    from planner.specs.hardware import Hardware
    from planner.specs.model import Model

CONVENTIONS = """\
conventions (hardware specs):
  * values are per GPU unless the name says otherwise, written as text with a unit
    ("4.8 TB/s", "141 GB", "989 TFLOP/s", "3 us", "1200 W"); prefixes are decimal
    (1 GB = 1e9 B) unless spelled binary (GiB); "Gb/s" is bits, "GB/s" bytes.
  * link bandwidths (scale_up, scale_out, host_memory) are per GPU and per direction.  Each
    says which it is: `direction: per_direction`, or `direction: bidirectional` for a summed
    figure such as NVLink 5's "1.8 TB/s", which the loader halves to 900 GB/s.
  * FLOP/s are dense tensor-core peaks: halve a datasheet figure marked "with sparsity".
  * every value carries its `source`; JSON output is in SI units (B, B/s, FLOP/s, s, W, USD).
"""

HW_KEYS = {"gpu", "scale_up", "scale_out", "host_memory", "system", "efficiency", "family", "calibration"}
MODEL_KEYS = {"architecture", "hidden_size", "layers", "dense_layers", "vocab_size", "attention", "moe",
              "precision", "mtp_layers", "mtp", "max_context", "tie_embeddings"}
SOURCE_WIDTH = 90
JSON_UNITS = {
    "hardware": "SI: bytes, B/s per GPU per direction, dense FLOP/s, s, W, USD, USD/h; per GPU unless "
    "the name says total",
    "model": "counts of parameters (weights) and bytes; kv_bytes_per_token over all layers",
}


def register(sub: Any) -> None:
    specs = add_command(
        sub, "specs", _cmd_help,
        help="list and inspect hardware and model specifications",
        description="List and inspect the bundled hardware and model specifications, or your own "
        "YAML files and Hugging Face config.json files.  Model parameter counts, KV-cache bytes and "
        "weight bytes are derived from the architecture, never typed in.",
        epilog=CONVENTIONS + """
examples:
  moe-planner specs list
  moe-planner specs show gb200-nvl72               # table with units and the source of each value
  moe-planner specs show kimi-k2-thinking --json   # SI numbers for scripts
  moe-planner specs show my-system.yaml            # check a spec you wrote (see docs/specs.md)
  moe-planner specs show path/to/Kimi-K2-Thinking  # a directory holding a HF config.json
""",
    )
    specs_sub = specs.add_subparsers(dest="specs_command", metavar="ACTION")
    lst = add_command(
        specs_sub, "list", _cmd_list,
        help="one line per bundled system and model",
        description="List the bundled hardware (per-GPU HBM capacity and bandwidth, scale-up domain "
        "size, best dense tensor peak) and models (derived total / active parameters, attention "
        "kind, experts).  Names are what --hardware and --model accept elsewhere.",
    )
    lst.add_argument("--json", action="store_true", help="print JSON (SI units) instead of the list")
    show = add_command(
        specs_sub, "show", _cmd_show,
        help="every value of one spec, with units and sources (or --json)",
        description="Show one system or model: a bundled NAME, a YAML file you wrote, or a Hugging "
        "Face config.json (or the directory holding it).  The table gives each value with its unit "
        "and, for hardware, its source; derived quantities (totals, parameter counts, KV bytes per "
        "token, weight bytes per tensor class) are marked as such.",
        epilog=CONVENTIONS,
    )
    show.add_argument("spec", metavar="NAME|PATH",
                      help="bundled name (see `moe-planner specs list`), a .yaml spec, or a config.json / "
                      "checkpoint directory")
    show.add_argument("--json", action="store_true",
                      help="print JSON in SI units (bytes, B/s per GPU per direction, dense FLOP/s, s, W, "
                      "USD) instead of the table")
    show.add_argument("--full", action="store_true",
                      help=f"print whole source strings (the table cuts them at {SOURCE_WIDTH} characters)")
    specs.set_defaults(func=_cmd_help, _specs_parser=specs)


def _cmd_help(args: argparse.Namespace) -> int:
    args._specs_parser.print_help()
    return 0


# ---- loading ----------------------------------------------------------------------------------

def load_spec(name: str) -> Hardware | Model:
    """A bundled system or model by name, or a hardware / model YAML or config.json by path."""
    from planner.specs.hardware import hardware_from_doc
    from planner.specs.hfconfig import load_hf_config
    from planner.specs.model import parse_model
    from planner.specs.reading import path_kind, read_yaml, suggest
    from planner.specs.registry import hardware_names, load_hardware, load_model, model_names

    if not isinstance(name, str) or not name:
        raise SpecError("<input>", "spec", f"a spec name or path, got {name!r}")
    if name in hardware_names():
        return load_hardware(name)
    if name in model_names():
        return load_model(name)
    kind = path_kind(name)
    if name.endswith(".json") or kind == "dir":
        return load_hf_config(name)
    if kind is not None or name.endswith((".yaml", ".yml")) or "/" in name:
        doc = read_yaml(name)
        if _kind(doc, name) == "hardware":
            return hardware_from_doc(doc, name, name)
        return parse_model(doc, name)
    known = hardware_names() + model_names()
    raise SpecError("<input>", "spec",
                    f"a bundled system or model, or a path to a YAML or config.json; got {name!r}"
                    f"{suggest(name, known)}; known: {', '.join(known)}")


def _kind(doc: dict[str, Any], label: str) -> str:
    keys = {str(k) for k in doc}
    hw, mo = len(keys & HW_KEYS), len(keys & MODEL_KEYS)
    if not hw and not mo:
        raise SpecError(label, "document",
                        "a hardware spec (with gpu:, scale_up:, system: ...) or a model spec (with "
                        "architecture:, attention:, moe: ...)")
    return "hardware" if hw > mo else "model"


# ---- summaries --------------------------------------------------------------------------------

def hardware_summary(h: Hardware) -> str:
    from planner.specs.units import format_si

    dt = next(d for d in ("fp4", "fp8", "bf16") if d in h.flops)
    gpus = f"{h.gpus_per_system} GPUs, " if h.gpus_per_system != h.domain_size else ""
    # (the spec's "hbm" fields hold a graphics-class part's memory too: the RTX cards carry GDDR7)
    mem = "GDDR7" if "RTX" in h.gpu_model else "HBM"
    return (f"{gpus}{h.domain_size} GPUs/domain, {format_si(h.hbm_capacity, 'B')} {mem} @ "
            f"{format_si(h.hbm_bandwidth, 'B/s')}, {dt} {format_si(h.flops[dt], 'FLOP/s')}")


def model_summary(m: Model) -> str:
    shared = f" + {m.E_s} shared" if m.E_s else ""
    formats = sorted(set(m.precision.values()), key=lambda f: (f == "bf16", f))
    ffn = f"dense FFN {m.f_d}" if m.is_dense else f"{m.E} experts top-{m.k}{shared}"
    return (f"{m.total_params / 1e9:.0f}B total / {m.active_params / 1e9:.1f}B active, "
            f"{m.attention.upper()}, {ffn}, weights {'/'.join(formats)}")


def _cmd_list(args: argparse.Namespace) -> int:
    from planner.specs.registry import hardware_names, load_hardware, load_model, model_names

    if args.json:
        hws = [load_hardware(n) for n in hardware_names()]
        mos = [load_model(n) for n in model_names()]
        print_json(json_safe({
            "units": JSON_UNITS,
            "hardware": [{"name": h.name, "summary": hardware_summary(h), "family": h.family,
                          "gpus_per_system": h.gpus_per_system, "domain_size": h.domain_size,
                          "hbm_capacity": h.hbm_capacity, "hbm_bandwidth": h.hbm_bandwidth,
                          "dense_flops": h.flops, "power_per_gpu": h.power_per_gpu,
                          "stack": h.stack or None} for h in hws],
            "models": [{"name": m.name, "summary": model_summary(m)} for m in mos]}))
        return 0
    hw = [(n, hardware_summary(load_hardware(n))) for n in hardware_names()]
    mo = [(n, model_summary(load_model(n))) for n in model_names()]
    width = max(len(n) for n, _ in hw + mo) + 2
    out = ["hardware (per GPU; `specs show NAME` for every value and its source)"]
    out += [f"  {n:<{width}}{s}" for n, s in hw]
    out += ["", "models (parameters derived from the architecture)"]
    out += [f"  {n:<{width}}{s}" for n, s in mo]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


# ---- show -------------------------------------------------------------------------------------

def _cmd_show(args: argparse.Namespace) -> int:
    from planner.specs.hardware import Hardware

    spec = load_spec(args.spec)
    if args.json:
        kind = "hardware" if isinstance(spec, Hardware) else "model"
        print_json(json_safe({"kind": kind, "file": spec.path, "units": JSON_UNITS[kind], **spec.to_dict()}))
        return 0
    lines = _hardware_table(spec, args.full) if isinstance(spec, Hardware) else _model_table(spec)
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _table(sections: list[tuple[str, list[tuple[str, str, str]]]], header: tuple[str, str, str]) -> list[str]:
    """Three aligned columns under section titles; a row without a third column does not widen
    the second."""
    rows = [r for _, rs in sections for r in rs] + [header]
    w0 = max(len(r[0]) for r in rows) + 2
    w1 = max(len(r[1]) for r in rows if r[2]) + 2
    out = [f"  {header[0]:<{w0}}{header[1]:<{w1}}{header[2]}".rstrip()]
    for title, rs in sections:
        out.append(title)
        out += [f"  {a:<{w0}}{b:<{w1}}{c}".rstrip() for a, b, c in rs]
    return out


def _hardware_table(h: Hardware, full: bool) -> list[str]:
    from planner.specs.units import format_si

    def src(key: str) -> str:
        s = h.sources.get(key, "")
        return s if full or len(s) <= SOURCE_WIDTH else s[: SOURCE_WIDTH - 3] + "..."

    gpu = [(f"dense {dt} peak", format_si(v, "FLOP/s"), src(f"gpu.dense_flops.{dt}"))
           for dt, v in h.flops.items()]
    gpu += [
        ("HBM capacity", format_si(h.hbm_capacity, "B"), src("gpu.hbm_capacity")),
        ("HBM bandwidth", format_si(h.hbm_bandwidth, "B/s"), src("gpu.hbm_bandwidth")),
        ("TDP", format_si(h.tdp, "W"), src("gpu.tdp")),
    ]
    su = [
        ("domain size", f"{h.domain_size} GPUs", src("scale_up.domain_size")),
        ("bandwidth", format_si(h.su_bandwidth, "B/s") + " per direction", src("scale_up.bandwidth")),
        ("latency", format_si(h.su_latency, "s"), src("scale_up.latency")),
    ]
    if h.su_link == "pcie":
        su = [("link", "pcie (peer-to-peer, ring all-reduce)", "scale_up.link")] + su + [
            ("GPUs per switch", f"{h.su_switch_gpus}", src("scale_up.gpus_per_switch")),
            ("host-bridge bandwidth", format_si(h.su_bridge_bandwidth, "B/s") + " per direction",
             src("scale_up.bridge_bandwidth")),
        ]
    else:
        su = [("link", "nvlink (NVSwitch, in-switch reduction)", "scale_up.link (default)")] + su
    so = [
        ("bandwidth", format_si(h.so_bandwidth, "B/s") + " per direction", src("scale_out.bandwidth")),
        ("latency", format_si(h.so_latency, "s"), src("scale_out.latency")),
    ]
    host = [
        ("capacity", format_si(h.host_capacity, "B"), src("host_memory.capacity")),
        ("bandwidth", format_si(h.host_bandwidth, "B/s") + " per direction", src("host_memory.bandwidth")),
    ] if h.host_capacity else [("(none)", "0 B", "")]
    system = [
        ("GPUs", f"{h.gpus_per_system}", src("system.gpus_per_system")),
        ("purchase unit", f"{h.unit} of {h.gpus_per_unit} GPUs", src("system.gpus_per_unit")),
        ("GPUs per host", f"{h.gpus_per_host}",
         src("system.gpus_per_host") if h.gpus_per_host != h.gpus_per_system else "the whole system"),
        ("power per GPU, all-in", format_si(h.power_per_gpu, "W"), src("system.power_per_gpu")),
        ("price per unit", f"{h.price_per_unit:,.0f} USD", src("system.price_per_unit")),
        ("price per GPU-hour", f"{h.price_per_gpu_hour:.3g} USD/h", src("system.price_per_gpu_hour")),
        ("sold in", ", ".join(h.regions) if h.regions else "(not stated)", src("system.regions")),
        ("HBM total", format_si(h.hbm_capacity_total, "B"), "derived: HBM capacity x GPUs"),
        ("fast memory total", format_si(h.fast_memory_total, "B"), "derived: (HBM + host memory) x GPUs"),
        ("HBM bandwidth total", format_si(h.hbm_bandwidth * h.gpus_per_system, "B/s"), "derived"),
    ]
    e = h.efficiency

    def esrc(field: str, entry: str | None = None) -> str:
        """The source of an efficiency: the serving stack's fit where it sets the field, else the
        efficiency: block's."""
        key = f"stacks.{h.stack}.{entry or field}"
        return src(key) if h.stack and key in h.sources else src(f"efficiency.{field}")

    eff = [
        ("compute (eta_c)", f"{e.compute:g}", esrc("compute")),
        ("HBM (eta_m)", f"{e.hbm:g}", esrc("hbm")),
        ("scale-up (eta_n)", f"{e.scale_up:g}", esrc("scale_up", "network")),
        ("scale-out (eta_n)", f"{e.scale_out:g}", esrc("scale_out", "network")),
        ("kernel overhead", format_si(e.kernel_overhead, "s"), esrc("kernel_overhead")),
        ("step overhead", format_si(e.step_overhead, "s"), esrc("step_overhead")),
        *([("host per running sequence", format_si(e.host_per_sequence, "s"), esrc("host_per_sequence"))]
          if e.host_per_sequence > 0 else []),
        ("load imbalance", f"{e.load_imbalance:g}", src("efficiency.load_imbalance")),
        ("memory reserve", f"{e.memory_reserve:g}", src("efficiency.memory_reserve")),
    ]
    for key, label in (("allreduce_latency", "all-reduce latency per pass"),
                       ("allreduce_efficiency", "all-reduce bandwidth fraction"),
                       ("allreduce_large_efficiency", "large all-reduce in-switch fraction"),
                       ("a2a_latency", "all-to-all latency per phase"),
                       ("a2a_efficiency", "all-to-all bandwidth fraction")):
        v = getattr(e, key)
        if v is not None:
            text = format_si(v, "s") if key.endswith("latency") else f"{v:g}"
            eff.append((label, text, esrc(key)))
    head = [f"{h.name}: {h.description}", f"file: {h.path}  (family {h.family}, GPU {h.gpu_model})", ""]
    body = _table([
        ("per GPU", gpu),
        ("scale-up domain, per GPU", su),
        ("scale-out (NIC network), per GPU", so),
        ("host memory reachable by the GPU, per GPU", host),
        ("system", system),
        ("efficiency (realistic mode; peaks above are not derated)", eff),
    ], ("field", "value", "source"))
    tail = [] if full else ["", f"(sources cut at {SOURCE_WIDTH} characters: --full or --json for all)"]
    return head + body + tail


def _model_table(m: Model) -> list[str]:
    from planner.specs.units import format_si

    if m.attention == "mla":
        q = f"q_lora {m.r_q}" if m.r_q else "no query compression"
        attn = (f"MLA, {m.h} heads, {q}, kv_lora {m.r_kv}, "
                f"nope/rope/v head dims {m.d_n}/{m.d_r}/{m.d_v}")
        attn += ", gated output" if m.output_gate else ""
        attn += ", one KV head read as key and value" if m.kv_shared else ""
    else:
        attn = f"GQA, {m.h} query / {m.h_kv} KV heads of {m.d_head}" + (", QKV bias" if m.qkv_bias else "")
        if m.output_gate:
            attn += ", gated output"
        if m.sliding_window:
            attn += f", {m.sliding_window}-token window on {m.sliding_layers} layers"
    if m.sparse_top_k:
        rows = "rows" if m.sparse_compress > 1 else "tokens"
        attn += (f"; sparse on {m.sparse_layers} layers: top {m.sparse_top_k} {rows} per query, indexer "
                 f"{m.indexer_heads} heads of {m.indexer_head_dim}")
    if m.sparse_compress > 1 or m.compressed_layers:
        attn += (f"; KV kept as rows of {m.sparse_compress} tokens on the sparse layers and of "
                 f"{m.compress_ratio} on {m.compressed_layers} more")
        attn += f", each also reading its last {m.sliding_window} tokens" if m.compressed_window else ""
    if m.linear_kind:
        kind = {"gated_deltanet": "gated DeltaNet", "kda": "KDA", "mamba2": "Mamba-2"}[m.linear_kind]
        attn += (f"; {m.n_attn} attention and {m.linear_layers} {kind} layers "
                 f"({m.linear_heads} heads, key {m.linear_key_dim}, value {m.linear_value_dim})")
    moe = f"{m.E} routed, top-{m.k}" + (f", + {m.E_s} shared" if m.E_s else "") + f", expert FFN {m.f_e}"
    if m.latent_dim:
        moe += f", in a latent of {m.latent_dim} (of {m.d})"
    if m.routing_groups:
        moe += f", {m.max_groups} of {m.routing_groups} groups per token"
    if m.is_dense:
        moe = "none (dense model)"
    arch = [
        ("architecture", m.architecture, ""),
        ("hidden size", f"{m.d}", ""),
        ("layers", f"{m.n_L} ({m.n_Ld} dense FFN, {m.n_moe} MoE)", ""),
        ("attention", attn, ""),
        ("experts", moe, ""),
        ("dense FFN", f"{m.f_d}" if m.n_Ld else "none", ""),
        ("vocabulary", f"{m.V}" + (" (tied embeddings)" if m.tie_embeddings else ""), ""),
        ("max context", f"{m.max_context} tokens", ""),
        ("MTP layers", f"{m.mtp_layers}" + (f", draft acceptance {m.mtp_acceptance:g}" if m.mtp_acceptance
                                            else ""), ""),
    ]
    kv_note = f"{m.n_attn} layers x {m.kv_elems_per_token_layer} elements x {m.kv_precision}"
    if m.sparse_top_k:
        kv_note += f" + {m.sparse_layers} indexer keys x {m.indexer_key_bytes:g} B"
    derived = [
        ("total params", f"{m.total_params / 1e9:.1f} B", "embeddings and LM head included, MTP excluded"),
        ("active params", f"{m.active_params / 1e9:.2f} B per token",
         "input embedding excluded, LM head included"),
        ("MTP params", f"{m.mtp_params / 1e9:.2f} B", "reported apart"),
        ("KV cache", format_si(m.kv_bytes_per_token(), "B") + " per token", kv_note),
    ]
    if m.linear_kind:
        derived.append(("linear state", format_si(m.state_bytes, "B") + " per sequence",
                        f"{m.linear_layers} layers x {format_si(m.linear_state_bytes_per_layer, 'B')}, "
                        "whatever the context"))
    wb = m.weight_bytes()
    cp = m.class_params()
    weights = [(c, format_si(wb[c], "B") if wb[c] else "0 B",
                f"{cp[c] / 1e9:.2f} B params as {m.precision[c]}") for c in wb]
    weights.append(("total", format_si(sum(wb.values()), "B"), ""))
    head = [f"{m.name}: {m.description}", f"file: {m.path}", f"source: {m.source}", ""]
    return head + _table([("architecture", arch), ("derived", derived), ("weights by tensor class", weights)],
                         ("field", "value", "note"))
