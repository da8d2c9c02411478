"""Extract the NVIDIA launch matrix of the InferenceX benchmark into a compact CSV.

Development time only; the installed tool never needs the InferenceX repository or the network.

    git clone https://github.com/SemiAnalysisAI/InferenceX /tmp/inferencex
    python scripts/extract_benchmark_matrix.py /tmp/inferencex

writes ``planner/truth/data/benchmark_matrix.csv.gz`` (gzip with a zero timestamp, so the bytes
are reproducible) and prints the sha256 of the uncompressed CSV.

Why: the measured runs whose source names a container image (``image=`` in
``silicon_data_source``; the dated ``source_file=YYYY-MM-DD.csv`` rows) are InferenceX runs.
The measured-runs file does not record whether a run used speculative decoding, nor, for a
disaggregated run, its decode workers and whether its decode attention is data-parallel
(``dp-attn``).  The benchmark's launch matrix (``nvidia-master.yaml``) states all three for
every point it schedules.  :mod:`planner.truth.matrix` looks each run up in it.

What is kept (deterministic): every version of ``nvidia-master.yaml`` (``.github/configs/`` or
``configs/``) committed from ``SINCE`` to ``UNTIL`` (the runs were measured from 2026-01 to
2026-03; the file's newest source is dated 2026-04-27); from each, every search-space point
(one row per concurrency) with the fields below; identical rows once (the first commit that
has it).  ``conc-start``/``conc-end`` ranges are expanded in powers of 2, as the benchmark's
matrix generator does.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

OUT = Path(__file__).resolve().parents[1] / "planner" / "truth" / "data" / "benchmark_matrix.csv.gz"
PATHS = (".github/configs/nvidia-master.yaml", "configs/nvidia-master.yaml")
SINCE, UNTIL = "2025-10-01", "2026-04-27"
COLUMNS = (
    "config", "model_prefix", "image", "runner", "precision", "framework", "disagg", "isl", "osl",
    "conc", "spec_decoding", "tp", "ep", "dp_attn",
    "prefill_workers", "prefill_tp", "prefill_ep", "prefill_dp_attn",
    "decode_workers", "decode_tp", "decode_ep", "decode_dp_attn",
)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False).stdout


def _concs(space: dict[str, Any]) -> list[int]:
    if space.get("conc-list") is not None:
        return [int(c) for c in space["conc-list"]]
    if "conc-start" in space:
        out, c = [], int(space["conc-start"])
        while c <= int(space["conc-end"]):
            out.append(c)
            c *= 2
        return out
    return []


def _bool(v: Any) -> str:
    return "" if v is None else str(bool(v)).lower()


def _num(v: Any) -> str:
    return "" if v is None else str(int(v))


def points(text: str) -> list[dict[str, str]]:
    """Every (config, sequence lengths, search-space point, concurrency) of one matrix file."""
    doc = yaml.safe_load(text) or {}
    out = []
    for name, cfg in doc.items():
        if not isinstance(cfg, dict):
            continue
        disagg = bool(cfg.get("disagg"))
        for seq in cfg.get("seq-len-configs") or []:
            for space in seq.get("search-space") or []:
                for conc in _concs(space):
                    row = {
                        "config": str(name), "model_prefix": str(cfg.get("model-prefix", "")),
                        "image": str(cfg.get("image", "")).replace("#", "/"),
                        "runner": str(cfg.get("runner", "")), "precision": str(cfg.get("precision", "")),
                        "framework": str(cfg.get("framework", "")), "disagg": _bool(disagg),
                        "isl": _num(seq.get("isl")), "osl": _num(seq.get("osl")), "conc": str(conc),
                        "spec_decoding": str(space.get("spec-decoding", "none")),
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
                        row.update(tp=_num(space.get("tp")), ep=_num(space.get("ep")),
                                   dp_attn=_bool(space.get("dp-attn")))
                        for role in ("prefill", "decode"):
                            row.update({f"{role}_{k}": "" for k in ("workers", "tp", "ep", "dp_attn")})
                    out.append(row)
    return out


def extract(repo: Path) -> pd.DataFrame:
    log = _git(repo, "log", "--reverse", "--format=%H %cs", f"--since={SINCE}", f"--until={UNTIL}",
               "--", *PATHS)
    seen: set[tuple[str, ...]] = set()
    rows = []
    for line in log.splitlines():
        commit, date = line.split()
        for path in PATHS:
            text = _git(repo, "show", f"{commit}:{path}")
            if not text:
                continue
            try:
                found = points(text)
            except yaml.YAMLError:
                print(f"skipped {commit[:10]} {path}: not valid YAML", file=sys.stderr)
                continue
            for row in found:
                key = tuple(row[c] for c in COLUMNS)
                if key not in seen:
                    seen.add(key)
                    rows.append({**row, "first_commit": commit, "first_date": date})
    return pd.DataFrame(rows, columns=[*COLUMNS, "first_commit", "first_date"])


def write_table(df: pd.DataFrame, out: Path) -> None:
    """``df`` as gzip'd CSV at ``out`` (zero timestamp: reproducible bytes); prints its checksum."""
    buf = io.StringIO()
    df.to_csv(buf, index=False, lineterminator="\n")
    data = buf.getvalue().encode()
    out.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"{out.name}: {len(df)} rows, sha256 of the CSV {hashlib.sha256(data).hexdigest()}")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    write_table(extract(Path(argv[0])), OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
