"""Launch recipes out, and read back: a frontier point as a deployment a team can run.

:func:`build` takes the deployment of a point of the deployment-search frontier (rules or recipes
search, :mod:`planner.serving.deployed`) at a per-user rate, on a system priced with one serving
stack's fit, and writes it as a Dynamo ``DynamoGraphDeployment`` (YAML): a frontend and the
stack's workers (aggregated: one worker; disaggregated: prefill and decode workers, each with its
replicas and nodes) with the stack's own server flags, and the benchmark that measures it
(``sglang.bench_serving`` at the ISL/OSL, length range and concurrency the prediction assumed) as
an annotation.  What the tool predicts rides along as YAML comments and a sidecar JSON.

Flags are data: ``data/stack_flags.yaml`` holds, per stack and version, each flag, the deployment
field it carries and where it is documented.  The writer sets deployment *fields*
(:data:`FIELDS`); the table spells them.  :func:`read_recipe` reads a recipe back through the same
table into a row of the launch-recipe table (``data/deployment_recipes.csv.gz``'s columns) and
from there, with :func:`planner.serving.deployed.from_recipes`, into the deployment :func:`predict`
prices, so a recipe read back gives the deployment and the prediction it was written from.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from planner.errors import SpecError

#: the deployment fields a worker's flags carry (the table's ``field``)
FIELDS = ("checkpoint", "trust_remote_code", "gpus", "tp_attn", "dp", "dp_attention", "ep", "expert_parallel",
          "max_running", "max_running_rank", "cuda_graph_bs", "cuda_graph_sizes", "cuda_graph_padding",
          "chunk", "chunked_prefill", "kv", "mem_fraction", "spec_method", "drafts", "draft_topk",
          "draft_tokens", "draft_checkpoint", "draft_one_model", "role", "prefill_worker", "kv_transfer")
#: how a benchmark client draws lengths (InferenceX's random-range-ratio; ``deployed.LENGTH_RANGE_RATIO``)
PROMPTS_PER_USER = 10
#: the annotation keys the recipe carries (the benchmark command; the tool's version)
BENCH_KEY = "moe-planner/benchmark"
VERSION_KEY = "moe-planner/version"
#: the KV hand-off a disaggregated recipe names (Dynamo's default transfer library)
KV_TRANSFER = "nixl"


@lru_cache(maxsize=1)
def flags_table() -> dict[str, Any]:
    """``data/stack_flags.yaml``."""
    with resources.files("planner.serving.data").joinpath("stack_flags.yaml").open("r") as fh:
        return yaml.safe_load(fh)


def stack_entry(stack: str) -> dict[str, Any]:
    stacks = flags_table()["stacks"]
    if stack not in stacks:
        raise SpecError("<input>", "stack", f"a stack with launch flags ({', '.join(stacks)}), got {stack!r}")
    return stacks[stack]


def vendor(hw: Any) -> str:
    """The GPU vendor a system's description names first (``NVIDIA GB200 NVL72 rack ...``)."""
    words = str(getattr(hw, "description", "") or "").split()
    return words[0].upper() if words else ""


def check_runs(stack: str, hw: Any) -> None:
    """One-line refusal where ``stack`` does not run on ``hw``'s GPUs."""
    e = stack_entry(stack)
    v = vendor(hw)
    if v not in e["vendors"]:
        raise SpecError("<input>", "stack", f"a stack that runs on {hw.name} ({v or 'unnamed vendor'} GPUs): "
                        f"{stack} {e['version']} runs on {' and '.join(e['vendors'])} GPUs")


def flat_flags(stack: str) -> list[str]:
    """Every flag name the table holds for ``stack``, and the benchmark client's."""
    own = [f["flag"] for f in stack_entry(stack)["flags"]]
    return own + [f["flag"] for f in flags_table()["bench"]["flags"]]


def _spell(entry: dict[str, Any], value: Any) -> Any:
    vals = entry.get("values")
    if vals is None:
        return value
    key = str(value)
    if key not in vals:
        raise SpecError("<input>", entry["field"],
                        f"a value {entry['flag']} can carry ({', '.join(map(str, vals))}), got {value!r}")
    return vals[key]


def render_args(stack: str, fields: dict[str, Any], role: str, spec_kind: str) -> list[str]:
    """The worker's arguments: each table entry of ``stack`` whose field is set (not None or
    False), on this ``role`` (aggregated, prefill, decode) and speculation kind, spelled as the table
    says; keys of a JSON flag gathered into its one JSON value."""
    args: list[str] = []
    blobs: dict[str, dict[str, Any]] = {}
    for e in stack_entry(stack)["flags"]:
        if e.get("role") not in (None, role) or e.get("when") not in (None, spec_kind):
            continue
        v = fields.get(e["field"])
        if v is None or v is False:
            continue
        v = _spell(e, v)
        base, _, path = e["flag"].partition(".")
        if path:
            if base not in blobs:
                blobs[base] = {}
                args += [base, ""]  # (filled below, at the position of its first key)
            node = blobs[base]
            *parents, leaf = path.split(".")
            for p in parents:
                node = node.setdefault(p, {})
            node[leaf] = v
        elif e.get("kind") == "switch":
            args.append(base)
        else:
            args += [base, str(v)]
    for i, a in enumerate(args):
        if a in blobs and i + 1 < len(args) and args[i + 1] == "":
            args[i + 1] = json.dumps(blobs[a], separators=(",", ":"))
    return args


def _number(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _flatten(d: dict[str, Any], prefix: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for k, v in d.items():
        key = f"{prefix}.{k}"
        out += _flatten(v, key) if isinstance(v, dict) else [(key, v)]
    return out


def parse_args(stack: str, argv: list[str], where: str = "recipe") -> tuple[dict[str, Any], list[str]]:
    """The fields a worker's arguments carry (read through the table), and every flag name used
    (a JSON flag's keys as ``--flag.key``).  A flag the table does not hold is refused."""
    entries = {e["flag"]: e for e in stack_entry(stack)["flags"]}
    bases = {f.partition(".")[0] for f in entries if "." in f}
    fields: dict[str, Any] = {}
    used: list[str] = []

    def take(e: dict[str, Any], raw: Any) -> None:
        vals = e.get("values")
        if vals is not None:
            back = {str(v): k for k, v in vals.items()}
            raw = back.get(str(raw), raw)
        fields[e["field"]] = _number(raw) if isinstance(raw, str) else raw

    i = 0
    while i < len(argv):
        a = argv[i]
        if a in bases:
            try:
                blob = json.loads(argv[i + 1])
            except (IndexError, json.JSONDecodeError) as err:
                raise SpecError(where, a, f"a JSON object ({err})") from None
            for key, v in _flatten(blob, a):
                if key not in entries:
                    raise SpecError(where, key, f"a {stack} flag in stack_flags.yaml")
                used.append(key)
                take(entries[key], v)
            i += 2
        elif a in entries:
            used.append(a)
            e = entries[a]
            if e.get("kind") == "switch":
                fields[e["field"]] = True
                i += 1
            else:
                if i + 1 >= len(argv):
                    raise SpecError(where, a, "a value after it")
                take(e, argv[i + 1])
                i += 2
        else:
            raise SpecError(where, a, f"a {stack} flag in stack_flags.yaml")
    return fields, used


def parse_bench(argv: list[str], where: str = "recipe") -> dict[str, Any]:
    """The benchmark client's fields (``bench`` of the table) from its command line."""
    b = flags_table()["bench"]
    cmd = list(b["command"])
    if argv[: len(cmd)] != cmd:
        raise SpecError(where, BENCH_KEY, f"a command starting {' '.join(cmd)}")
    entries = {e["flag"]: e for e in b["flags"]}
    out: dict[str, Any] = {}
    rest = argv[len(cmd):]
    for k in range(0, len(rest), 2):
        if rest[k] not in entries or k + 1 >= len(rest):
            raise SpecError(where, rest[k], "a benchmark flag in stack_flags.yaml with its value")
        out[entries[rest[k]]["field"]] = _number(rest[k + 1])
    return out


def worker_layout(stack: str, gpus: float, tp_attn: float, ep: float) -> None:
    """One-line refusal of a worker layout the stack's flags cannot state: attention TP over every
    GPU or attention DP (one GPU a rank), experts over one GPU or every GPU of the worker."""
    g, t, e = float(gpus), float(tp_attn), float(ep)
    if t not in (1.0, g) or e not in (1.0, g):
        raise SpecError("<input>", "layout", f"a worker layout {stack} runs (attention TP over all its "
                        "GPUs or attention DP, EP 1 or over every GPU), got "
                        f"{g:g} GPUs, attention TP {t:g}, EP {e:g}")


def _graph_sizes(b: int) -> list[int]:
    sizes = [1]
    while sizes[-1] * 2 < b:
        sizes.append(sizes[-1] * 2)
    return sizes + ([b] if b > 1 else [])


def worker_fields(stack: str, *, role: str, gpus: float, tp_attn: float, ep: float, users: float,
                  batch_per_rank: float, kv: str, drafts: int, spec_kind: str, checkpoint: str,
                  draft_checkpoint: str | None, chunk: int) -> dict[str, Any]:
    """The deployment fields of one worker (``role``: aggregated, prefill or decode; ``users``:
    the concurrency one such worker holds)."""
    worker_layout(stack, gpus, tp_attn, ep)
    g, t, e = int(gpus), int(tp_attn), int(ep)
    dp = g // t
    decodes = role != "prefill"
    per_rank = max(1, math.ceil(users / dp))
    graph = max(1, math.ceil(batch_per_rank)) if decodes else None
    f: dict[str, Any] = {
        "checkpoint": checkpoint, "trust_remote_code": True, "gpus": g, "tp_attn": t,
        "dp": dp if dp > 1 else None, "dp_attention": dp > 1, "ep": e if e > 1 else None,
        "expert_parallel": e > 1,
        "max_running": max(1, math.ceil(users)) if decodes else None,
        "max_running_rank": per_rank if decodes else None,
        "cuda_graph_bs": graph, "cuda_graph_sizes": _graph_sizes(graph) if graph else None,
        "cuda_graph_padding": bool(graph),
        "chunk": chunk, "chunked_prefill": True, "kv": kv,
        "mem_fraction": stack_entry(stack)["mem_fraction"],
        "role": role if role != "aggregated" else None, "prefill_worker": role == "prefill",
        "kv_transfer": KV_TRANSFER if role != "aggregated" else None,
    }
    if drafts > 0:
        f.update(spec_method=spec_kind, drafts=int(drafts), draft_topk=1, draft_tokens=int(drafts) + 1,
                 draft_checkpoint=draft_checkpoint if spec_kind == "draft" else None,
                 draft_one_model=spec_kind == "draft")
    return f


def checkpoint_of(model: str, weights: str, asked: str | None) -> str:
    """The checkpoint a recipe loads: the one asked (a Hugging Face id or a path), else the model's
    at these weights in stack_flags.yaml."""
    if asked is not None:
        if not asked.strip() or not asked.isprintable() or asked != asked.strip():
            raise SpecError("<input>", "--checkpoint", f"a checkpoint id or path, got {asked!r}")
        return asked
    ck = flags_table().get("checkpoints", {}).get(model, {})
    if weights in ck:
        return ck[weights]["id"]
    raise SpecError("<input>", "--checkpoint", f"the checkpoint of {model} at {weights} weights (none is "
                    "listed in stack_flags.yaml)")


def _k8s_name(text: str) -> str:
    s = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return s[:63].rstrip("-")


def point_at(front: Any, x: float) -> Any:
    """The frontier row of the most tokens/s per GPU among those at least ``x`` tokens/s per user
    (:func:`planner.serving.frontiers.deployments_at`); a rate beyond the frontier is refused."""
    from planner.serving.frontiers import deployments_at

    row = deployments_at(front, [x]).iloc[0]
    if not row.tps_per_gpu == row.tps_per_gpu:  # NaN: no deployment is that fast
        top = float(front.tps_per_user.max()) if len(front) else math.nan
        raise SpecError("<input>", "--at", f"a rate the frontier reaches (at most {top:.3g} tokens/s per "
                        f"user), got {x:g}")
    return row.drop(labels="target_tps_per_user")


#: the benchmark framework names of InferenceX's result files, per stack (aggregated; under Dynamo)
RESULT_FRAMEWORKS = {"sglang": ("sglang", "dynamo-sglang"), "trtllm": ("trt", "dynamo-trt"),
                     "vllm": ("vllm", "dynamo-vllm")}


def sidecar_point(point: Any) -> dict[str, Any]:
    from planner.serving.deployed import LAYOUT_COLUMNS

    d = {c: float(point[c]) for c in LAYOUT_COLUMNS}
    d.update(disagg=bool(point["disagg"]), concurrency=float(point["concurrency"]),
             drafts=int(point["drafts"]))
    return d


def result_row(d: dict[str, Any], *, stack: str, model: str, hardware: str, weights: str, isl: float,
               osl: float) -> dict[str, Any]:
    """The recipe's deployment in the columns of InferenceX's measured points (``validate
    --frontiers``), the measured figures blank: a benchmark of the recipe fills them in."""
    from planner.serving.deployed import RUNNERS

    disagg = bool(d["disagg"])
    row: dict[str, Any] = {
        "date": "", "model": model, "hardware": RUNNERS.get(hardware, hardware),
        "framework": RESULT_FRAMEWORKS[stack][int(disagg)], "precision": weights,
        "spec_decoding": "mtp" if d["drafts"] else "none", "isl": int(isl), "osl": int(osl),
        "serving": "disaggregated" if disagg else "aggregated", "concurrency": int(d["concurrency"])}
    for c in ("tp", "ep", "dp_attention"):
        row[c] = ""
    for role in ("prefill", "decode"):
        use = disagg or role == "decode"
        g, t, e, w = (d[f"{role}_gpus"], d[f"{role}_tp_attn"], d[f"{role}_ep"], d[f"{role}_workers"])
        lay = {"tp": int(g), "ep": int(e), "dp_attention": "true" if t < g else "false"}
        if disagg:
            row.update({f"{role}_{k}": v for k, v in lay.items()})
            row.update({f"{role}_workers": int(w), f"{role}_gpus": int(w * g)})
        else:
            row.update({f"{role}_{k}": "" for k in (*lay, "workers", "gpus")})
            if use:
                row.update(lay)
    total = d["decode_workers"] * d["decode_gpus"]
    total += d["prefill_workers"] * d["prefill_gpus"] if disagg else 0.0
    row.update(total_gpus=int(total), tps_per_user="", tps_per_gpu_output="", ttft_s="", tpot_s="", e2e_s="")
    return row


@dataclass
class Recipe:
    name: str
    text: str                    #: the DynamoGraphDeployment YAML with its comments
    sidecar: dict[str, Any]      #: what the tool predicts, and of what


def _nodes(gpus: int, per_host: int) -> tuple[int, int]:
    """(nodes, GPUs per node) of a worker of ``gpus`` on hosts of ``per_host``."""
    if gpus <= per_host:
        return 1, gpus
    return math.ceil(gpus / per_host), per_host


def render(point: Any, *, model: Any, hw: Any, stack: str, isl: float, osl: float, kv: str, x: float,
           calibration: str, checkpoint: str | None = None, date: str | None = None, name: str | None = None,
           chosen: str | None = None, pool: dict[str, Any] | None = None) -> Recipe:
    """The recipe of one frontier row ``point`` (a :func:`planner.serving.deployed.predict` row of
    the deployment searches).  ``name``: the recipe's (default: model, system, stack, serving and
    ``x``); ``chosen``: how the point was chosen (default: the most tokens/s per GPU at >= ``x``
    tokens/s per user); ``pool``: the sizing's or fleet plan's pool it launches (its ``note`` a
    header line; the whole of it in the sidecar)."""
    from planner import __version__
    from planner.physics.step import resolve_speculation
    from planner.serving.deployed import LENGTH_RANGE_RATIO, OUTPUT_YIELD
    from planner.serving.prefill import PREFILL_CHUNK

    check_runs(stack, hw)
    disagg = bool(point["disagg"])
    weights = str(point["weights"])
    drafts = int(point["drafts"])
    spec_kind = resolve_speculation(model, drafts).kind if drafts else ""
    spec_kind = "mtp" if spec_kind == "mtp" else ("draft" if drafts else "")
    ck = checkpoint_of(model.name, weights, checkpoint)
    draft_ck = None
    if spec_kind == "draft":
        draft_ck = flags_table().get("checkpoints", {}).get(model.name, {}).get("draft", {}).get("id")
        if not draft_ck:
            raise SpecError("<input>", "--mtp", f"a draft checkpoint of {model.name} (none is listed in "
                            "stack_flags.yaml): --mtp off")
    e = stack_entry(stack)
    dyn = flags_table()["dynamo"]
    conc = float(point["concurrency"])
    wd = float(point["decode_workers"])
    per_host = int(min(hw.gpus_per_host or hw.gpus_per_system, hw.domain_size))
    name = name or _k8s_name(f"{model.name}-{hw.name}-{stack}-{'disagg' if disagg else 'agg'}-{x:g}tpsu")
    image = dyn["image"].format(stack=stack)
    services: dict[str, Any] = {"Frontend": {
        "componentType": "frontend", "replicas": 1,
        "extraPodSpec": {"mainContainer": {"image": image, "command": list(dyn["frontend"])}}}}
    roles = (("prefill", "prefill"), ("decode", "decode")) if disagg else (("aggregated", "decode"),)
    standalone = ""
    for role, col in roles:
        g = float(point[f"{col}_gpus"])
        workers = float(point[f"{col}_workers"]) if disagg else 1.0
        users = conc / wd if role != "prefill" else conc / workers
        fields = worker_fields(stack, role=role, gpus=g, tp_attn=float(point[f"{col}_tp_attn"]),
                               ep=float(point[f"{col}_ep"]), users=users,
                               batch_per_rank=float(point["batch_per_rank"]), kv=kv, drafts=drafts,
                               spec_kind=spec_kind, checkpoint=ck, draft_checkpoint=draft_ck,
                               chunk=int(PREFILL_CHUNK))
        args = render_args(stack, fields, role, spec_kind)
        nodes, per_node = _nodes(int(g), per_host)
        svc: dict[str, Any] = {"componentType": "worker"}
        if disagg:
            svc["subComponentType"] = role
        svc["replicas"] = int(workers)
        if nodes > 1:
            svc["multinode"] = {"nodeCount": nodes}
        svc["resources"] = {"limits": {"gpu": str(per_node)}}
        svc["extraPodSpec"] = {"mainContainer": {"image": image, "command": list(e["worker"]), "args": args}}
        services[role if disagg else "worker"] = svc
        if not disagg:
            standalone = shlex.join([*e["server"], *args])
    bench = [*flags_table()["bench"]["command"], "--backend", "sglang-oai", "--base-url",
             f"http://{name}-frontend:8000", "--model", ck, "--dataset-name", "random",
             "--random-input-len", str(int(isl)), "--random-output-len", str(int(osl)),
             "--random-range-ratio", f"{LENGTH_RANGE_RATIO:g}",
             "--num-prompts", str(int(PROMPTS_PER_USER * conc)), "--max-concurrency", str(int(conc))]
    doc = {"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
           "metadata": {"name": name,
                        "annotations": {BENCH_KEY: shlex.join(bench), VERSION_KEY: __version__}},
           "spec": {"backendFramework": stack, "services": services}}
    date = date or datetime.date.today().isoformat()
    deployment = sidecar_point(point)
    predicted = {
        "output_tps_per_gpu": float(point["output_tps_per_gpu"]),
        "tps_per_user": float(point["tps_per_user"]),
        "ttft_median_s": float(point["ttft_s"]), "tpot_median_s": float(point["tpot_s"]),
        "e2e_s": float(point["e2e_s"]), "gpus_total": float(point["gpus_total"]),
        "batch_per_rank": float(point["batch_per_rank"]),
        # the benchmark's burst: its first wave queued at the prefill pool, aggregated decode stalled
        **{k: float(point[k]) for k in ("ttft_p99_s", "tpot_p99_s") if k in point and point[k] == point[k]},
    }
    sidecar = {
        "tool": "moe-planner", "version": __version__, "date": date, "calibration": calibration,
        "model": model.name, "hardware": hw.name, "stack": stack, "stack_version": e["version"],
        "dynamo_version": dyn["version"], "serving": "disaggregated" if disagg else "aggregated",
        "isl": float(isl), "osl": float(osl), "at_tps_per_user": float(x), "weights": weights, "kv": kv,
        "checkpoint": ck, "deployment": deployment, "predicted": predicted,
        **({"pool": pool} if pool is not None else {}),
        "benchmark": bench, "recipe": f"{name}.yaml",
        "result_row": result_row(sidecar_point(point), stack=stack, model=model.name, hardware=hw.name,
                                 weights=weights, isl=isl, osl=osl),
        "notes": (f"tokens/s per GPU: output tokens over every GPU ({OUTPUT_YIELD:g} of the nominal OSL "
                  f"delivered); lengths uniform in [{LENGTH_RANGE_RATIO:g}, 1] x ISL/OSL; TTFT and TPOT "
                  "medians of the closed loop"),
    }
    gpus_total = predicted["gpus_total"]
    head = [
        f"moe-planner {__version__} recipe, {date}: {model.name} on {hw.name}, {sidecar['serving']}, "
        f"{stack} {e['version']} under Dynamo {dyn['version']}",
        f"calibration: {calibration}",
        f"point: {chosen or f'the most tokens/s per GPU at >= {x:g} tokens/s per user'}; ISL {isl:g} / "
        f"OSL {osl:g}; "
        f"weights {weights}, KV {kv}, {drafts} drafts",
        f"predicted: {predicted['output_tps_per_gpu']:.1f} output tokens/s per GPU over {gpus_total:g} GPUs, "
        f"{predicted['tps_per_user']:.1f} tokens/s per user, TTFT median {predicted['ttft_median_s']:.3g} s, "
        f"TPOT median {1e3 * predicted['tpot_median_s']:.3g} ms, at {conc:g} users",
        f"benchmark: {shlex.join(bench)}",
        f"sidecar: {name}.json (the prediction; `moe-planner validate --frontiers RESULT.csv --recipe "
        f"{name}.json` scores a result)",
        "flags: planner/serving/data/stack_flags.yaml (each flag's meaning and source)",
    ]
    if pool is not None and pool.get("note"):
        head.insert(3, f"pool: {pool['note']}")
    if standalone:
        head.append(f"without Dynamo: {standalone}")
    text = "".join(f"# {h}\n" for h in head) + yaml.safe_dump(doc, sort_keys=False, width=10_000)
    return Recipe(name=name, text=text, sidecar=sidecar)


def build(scenario: Any, at: float, *, checkpoint: str | None = None, date: str | None = None) -> Recipe:
    """The recipe of the frontier point of the scenario's model on its system, priced with
    ``scenario.stack``'s fit, at ``at`` tokens/s per user (see the module docstring)."""
    from planner.serving.frontiers import frontier

    sc = scenario
    stack, serving, isl, osl, weights, search = sc.stack, sc.serving, sc.isl, sc.osl, sc.weights, sc.search
    if stack is None:
        raise SpecError("<input>", "--stack", "a serving stack to launch (trtllm, sglang or vllm)")

    if serving not in ("aggregated", "disaggregated"):
        raise SpecError("<input>", "--serving", f"aggregated or disaggregated, got {serving!r}")
    if search not in (None, "rules", "recipes"):
        raise SpecError("<input>", "--search", f"rules or recipes (a deployment to launch), got {search!r}")
    m, hw = sc.load_model(), sc.replace(stack=None).load_system()
    check_runs(stack, hw)
    hw = hw.with_stack(stack)
    # the weights a checkpoint is listed for (without --weights or --checkpoint: a point at weights
    # nobody publishes cannot be launched), of those the hardware runs (precision_options: NVFP4 only
    # where it has FP4 tensor cores)
    from planner.serving.search import precision_options

    runs = precision_options(m, hw, None)
    listed = [w for w, c in flags_table().get("checkpoints", {}).get(m.name, {}).items()
              if w != "draft" and w in runs and vendor(hw) in c.get("vendors", [vendor(hw)])]
    options = [weights] if weights or checkpoint or not listed else listed
    best, why = None, None
    for w in options:
        try:
            front = frontier(sc.replace(model=m, systems=(hw,), stack=None, weights=w))
            p = point_at(front, at)
        except SpecError as exc:
            why = why or exc
            continue
        if best is None or p.tps_per_gpu > best[0].tps_per_gpu:
            best = (p, front)
    if best is None:
        raise why if why is not None else SpecError("<input>", "--weights", "weights the system runs")
    p, front = best
    rec = render(p, model=m, hw=hw, stack=stack, isl=isl, osl=osl, kv=str(front.attrs["kv"]), x=at,
                 calibration=str(front.attrs["calibration"]), checkpoint=checkpoint, date=date)
    rec.sidecar["scenario"] = sc.to_dict()  # the question the recipe answers
    return rec


def recipe_doc(text: str, where: str = "recipe") -> dict[str, Any]:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise SpecError(where, "yaml", f"a YAML document ({str(err).splitlines()[0]})") from None
    if not isinstance(doc, dict) or doc.get("kind") != "DynamoGraphDeployment":
        raise SpecError(where, "kind", "a DynamoGraphDeployment")
    return doc


def flags_used(text: str, where: str = "recipe") -> dict[str, list[str]]:
    """Every flag a recipe's workers and benchmark use, by stack (``bench``: the client's)."""
    doc = recipe_doc(text, where)
    stack = str(doc.get("spec", {}).get("backendFramework", ""))
    used: list[str] = []
    for svc in doc["spec"]["services"].values():
        if svc.get("componentType") == "worker":
            _, u = parse_args(stack, list(svc["extraPodSpec"]["mainContainer"].get("args", [])), where)
            used += u
    bench = shlex.split(doc["metadata"]["annotations"][BENCH_KEY])
    n = len(flags_table()["bench"]["command"])
    return {stack: used, "bench": [a for a in bench[n:] if a.startswith("--")]}


def read_recipe(text: str, where: str = "recipe") -> tuple[Any, dict[str, Any]]:
    """A recipe read back: the deployment (one row, :func:`planner.serving.deployed.from_recipes`
    of the launch-recipe row its flags state) and the benchmark's fields (ISL, OSL, concurrency)."""
    import pandas as pd

    from planner.serving.deployed import from_recipes

    doc = recipe_doc(text, where)
    stack = str(doc.get("spec", {}).get("backendFramework", ""))
    stack_entry(stack)
    try:
        bench = parse_bench(shlex.split(doc["metadata"]["annotations"][BENCH_KEY]), where)
    except (KeyError, TypeError):
        raise SpecError(where, BENCH_KEY, "the benchmark command as an annotation") from None
    workers = {}
    for key, svc in doc["spec"]["services"].items():
        if svc.get("componentType") != "worker":
            continue
        role = svc.get("subComponentType", "aggregated")
        f, _ = parse_args(stack, list(svc["extraPodSpec"]["mainContainer"].get("args", [])), where)
        g = f.get("gpus") or int(f.get("tp_attn", 1)) * int(f.get("dp", 1))
        if "tp_attn" in f:
            t = int(f["tp_attn"])
        else:
            t = g // int(f.get("dp", g)) if f.get("dp_attention") else g
        ep = f.get("ep") or (g if f.get("expert_parallel") else 1)
        if t not in (1, g):
            raise SpecError(where, key, "a worker of attention TP over all its GPUs or attention DP")
        workers[role] = dict(tp=g, ep=ep, dp=t < g or (t == 1 and f.get("dp_attention", False)),
                             workers=int(svc.get("replicas", 1)), drafts=int(f.get("drafts", 0) or 0))
    disagg = "decode" in workers
    if disagg and "prefill" not in workers or not workers:
        raise SpecError(where, "services", "an aggregated worker, or prefill and decode workers")
    dec = workers["decode" if disagg else "aggregated"]
    row = {c: "" for c in ("tp", "ep", "dp_attn", "prefill_workers", "prefill_tp", "prefill_ep",
                           "prefill_dp_attn", "decode_workers", "decode_tp", "decode_ep", "decode_dp_attn",
                           "decode_max_batch")}
    row.update(disagg="true" if disagg else "false", conc=str(bench["concurrency"]),
               spec_decoding="mtp" if dec["drafts"] else "none",
               mtp_drafts=str(dec["drafts"]) if dec["drafts"] else "")
    if disagg:
        for role in ("prefill", "decode"):
            w = workers[role]
            row.update({f"{role}_workers": str(w["workers"]), f"{role}_tp": str(w["tp"]),
                        f"{role}_ep": str(w["ep"]), f"{role}_dp_attn": "true" if w["dp"] else "false"})
    else:
        row.update(tp=str(dec["tp"]), ep=str(dec["ep"]), dp_attn="true" if dec["dp"] else "false")
    dep = from_recipes(pd.DataFrame([row]), stack)
    if dep.empty:
        raise SpecError(where, "services", f"a deployment ({dep.attrs.get('dropped')})")
    return dep, {"stack": stack, **bench}
