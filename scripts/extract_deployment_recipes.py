"""Extract the deployment recipes of the InferenceX benchmark (NVIDIA and AMD launch matrices).

Development time only; the installed tool never needs the InferenceX repository or the network.

    git clone https://github.com/SemiAnalysisAI/InferenceX /tmp/inferencex
    git clone https://github.com/NVIDIA/srt-slurm /tmp/srt-slurm        # (optional)
    python scripts/extract_deployment_recipes.py /tmp/inferencex [/tmp/srt-slurm]

writes ``planner/truth/data/deployment_recipes.csv.gz`` (gzip with a zero timestamp) and prints
the sha256 of the uncompressed CSV.

Why: the as-deployed search (:mod:`planner.serving.deployed`) offers only what serving stacks
ship.  The benchmark's launch matrices (``nvidia-master.yaml``, ``amd-master.yaml``) are the
public record of which layouts each stack runs on each system: for each (system, framework,
precision, model, ISL/OSL, speculation) the worker layouts (attention TP / DP, EP), the
disaggregated prefill and decode worker counts, the concurrencies scheduled on each, and (in the
recipe file names they cite) the MTP draft count.  These are launch configurations, not
measurements.  With the NVIDIA srt-slurm repository (second argument), each point that cites a
TensorRT-LLM recipe file (``CONFIG_FILE=recipes/trtllm/...yaml``) also gets that file's decode
``max_batch_size`` (requests one attention rank runs at once: per attention-DP rank, or per
worker under attention TP), read at the branch the matrix's comments cite
(``sa-submission-q2-2026``, else ``main``).

What is kept: every version of either file committed from ``SINCE`` to ``UNTIL``, in both the
older (``seq-len-configs``) and newer (``scenarios: fixed-seq-len``) layouts; every search-space
point, one row per concurrency (``conc-start``..``conc-end`` doubled, as the benchmark's
generator expands it); identical rows (image ignored) once, with the last date a version held it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from extract_benchmark_matrix import _bool, _concs, _git, _num, write_table  # noqa: E402  (the same matrix readers)

OUT = Path(__file__).resolve().parents[1] / "planner" / "serving" / "data" / "deployment_recipes.csv.gz"
FILES = ("nvidia-master.yaml", "amd-master.yaml")
DIRS = (".github/configs/", "configs/")
SINCE, UNTIL = "2025-10-01", "2026-09-03"
COLUMNS = (
    "vendor",
    "model_prefix",
    "runner",
    "precision",
    "framework",
    "disagg",
    "isl",
    "osl",
    "conc",
    "spec_decoding",
    "mtp_drafts",
    "tp",
    "ep",
    "dp_attn",
    "prefill_workers",
    "prefill_tp",
    "prefill_ep",
    "prefill_dp_attn",
    "decode_workers",
    "decode_tp",
    "decode_ep",
    "decode_dp_attn",
    "decode_max_batch",
)
#: the srt-slurm branches a cited recipe file is read at, first found first (the matrix's comments
#: cite ``blob/sa-submission-q2-2026``)
RECIPE_REFS = ("sa-submission-q2-2026", "main")
_CONFIG = re.compile(r"CONFIG_FILE=(recipes/trtllm/\S+?\.yaml)\b")
_DRAFTS = re.compile(r"mtp(\d)")


def _drafts(space: dict[str, Any]) -> str:
    """The MTP draft count a recipe file name states (``..._mtp3.yaml``), else blank."""
    text = " ".join(
        str(s)
        for role in ("prefill", "decode", None)
        for s in ((space.get(role) or {}) if role else space).get("additional-settings") or []
    )
    found = {m for m in _DRAFTS.findall(text)}
    return found.pop() if len(found) == 1 else ""


def _max_batch(space: dict[str, Any], recipes: Path | None, cache: dict[str, str]) -> str:
    """The decode ``max_batch_size`` of the TensorRT-LLM recipe file a point cites, else blank."""
    if recipes is None:
        return ""
    text = " ".join(
        str(s)
        for role in ("prefill", "decode", None)
        for s in ((space.get(role) or {}) if role else space).get("additional-settings") or []
    )
    found = set(_CONFIG.findall(text))
    if len(found) != 1:
        return ""
    path = found.pop()
    if path not in cache:
        cache[path] = ""
        for ref in RECIPE_REFS:
            body = _git(recipes, "show", f"{ref}:{path}")
            if not body:
                continue
            try:
                dec = ((yaml.safe_load(body) or {}).get("backend") or {}).get("trtllm_config") or {}
                cache[path] = _num((dec.get("decode") or {}).get("max_batch_size"))
            except (yaml.YAMLError, AttributeError):
                pass
            break
    return cache[path]


def _seqs(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    if cfg.get("seq-len-configs"):
        return list(cfg["seq-len-configs"])
    scen = cfg.get("scenarios") or {}
    return list(scen.get("fixed-seq-len") or []) if isinstance(scen, dict) else []


def points(text: str, vendor: str, recipes: Path | None = None,
           cache: dict[str, str] | None = None) -> list[dict[str, str]]:
    """Every (config, sequence lengths, search-space point, concurrency) of one matrix file;
    ``recipes``: the srt-slurm repository the cited TensorRT-LLM recipe files are read from."""
    cache = {} if cache is None else cache
    doc = yaml.safe_load(text) or {}
    out = []
    for _name, cfg in doc.items():
        if not isinstance(cfg, dict):
            continue
        disagg = bool(cfg.get("disagg"))
        for seq in _seqs(cfg):
            for space in seq.get("search-space") or []:
                if not isinstance(space, dict):
                    continue
                for conc in _concs(space):
                    row = {
                        "vendor": vendor,
                        "model_prefix": str(cfg.get("model-prefix", "")),
                        "runner": str(cfg.get("runner", "")).split("-")[0],
                        "precision": str(cfg.get("precision", "")),
                        "framework": str(cfg.get("framework", "")),
                        "disagg": _bool(disagg),
                        "isl": _num(seq.get("isl")),
                        "osl": _num(seq.get("osl")),
                        "conc": str(conc),
                        "spec_decoding": str(space.get("spec-decoding", "none")),
                        "mtp_drafts": _drafts(space),
                        "decode_max_batch": _max_batch(space, recipes, cache),
                    }
                    if disagg:
                        row.update(tp="", ep="", dp_attn="")
                        for role in ("prefill", "decode"):
                            d = space.get(role) or {}
                            row[f"{role}_workers"] = _num(d.get("num-worker"))
                            row[f"{role}_tp"] = _num(d.get("tp"))
                            row[f"{role}_ep"] = _num(d.get("ep"))
                            row[f"{role}_dp_attn"] = _bool(d.get("dp-attn"))
                    else:
                        row.update(
                            tp=_num(space.get("tp")),
                            ep=_num(space.get("ep")),
                            dp_attn=_bool(space.get("dp-attn")),
                        )
                        for role in ("prefill", "decode"):
                            row.update({f"{role}_{k}": "" for k in ("workers", "tp", "ep", "dp_attn")})
                    out.append(row)
    return out


def extract(repo: Path, recipes: Path | None = None) -> pd.DataFrame:
    last: dict[tuple[str, ...], str] = {}
    cache: dict[str, str] = {}
    for fname in FILES:
        vendor = fname.split("-")[0]
        paths = [d + fname for d in DIRS]
        log = _git(
            repo, "log", "--reverse", "--format=%H %cs", f"--since={SINCE}", f"--until={UNTIL}", "--", *paths
        )
        for line in log.splitlines():
            commit, date = line.split()
            for path in paths:
                text = _git(repo, "show", f"{commit}:{path}")
                if not text:
                    continue
                try:
                    found = points(text, vendor, recipes, cache)
                except yaml.YAMLError:
                    print(f"skipped {commit[:10]} {path}: not valid YAML", file=sys.stderr)
                    continue
                for row in found:
                    last[tuple(row[c] for c in COLUMNS)] = date
    rows = [{**dict(zip(COLUMNS, k, strict=True)), "last_date": d} for k, d in sorted(last.items())]
    return pd.DataFrame(rows, columns=[*COLUMNS, "last_date"])


def main(argv: list[str]) -> int:
    if len(argv) not in (1, 2):
        print(__doc__, file=sys.stderr)
        return 2
    write_table(extract(Path(argv[0]), Path(argv[1]) if len(argv) == 2 else None), OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
