"""Check the kernel laws' loss out of sample: fit on four fifths of each table's shapes, score the fifth.

The GEMM, grouped-MoE and attention laws are fitted per (GPU, stack, dtype) to the shipped kernel
tables (``planner/truth/data/kernels``) with every shape whose key hashes to 0 mod 5 held out, once
by plain squares and once by the Huber loss the package uses (``planner.truth.kernels.KERNEL_LOSS``),
and each fit prices the held-out shapes.  Prints, per loss, the held-out median |error| and how
many (op, GPU, stack) cells have a held-out median above 10% and a p90 above 30%.

    python scripts/kernel_loss_holdout.py
"""

from __future__ import annotations

import zlib

import numpy as np
import pandas as pd

import planner.truth.kernels as kern
from planner.specs.hardware import GemmLaw, KernelLaw
from planner.specs.registry import load_hardware

HELD_OUT = 5  #: one shape in this many is held out (its key's CRC-32 is 0 mod HELD_OUT)


def _held_out(df: pd.DataFrame, keys: list[str]) -> np.ndarray:
    key = df[keys].astype(str).agg("|".join, axis=1)
    return key.map(lambda k: zlib.crc32(k.encode()) % HELD_OUT == 0).to_numpy(bool)


def _score(test: pd.DataFrame, fits: list, price) -> pd.DataFrame:
    out = []
    for f in fits:
        d = test[(test.gpu == f.gpu) & (test["stack"] == f.stack) & (test["_dtype"] == f.dtype)
                 & (test["_law"] == f.law)]
        if len(d):
            hw = load_hardware(f.gpu).without_stack()
            pred = price(d, hw, f)
            out.append(d.assign(err=np.abs(pred / (d.latency_us.to_numpy(float) * 1e-6) - 1)))
    return pd.concat(out, ignore_index=True)


def held_out_errors(loss: str) -> pd.DataFrame:
    """Every held-out GEMM, grouped-MoE and attention kernel with its |error| under ``loss``."""
    kern.KERNEL_LOSS = loss
    parts = []
    gemm = kern.load_table("gemm").reset_index(drop=True)
    # a law's key: the dtype and, on a stack's second implementation, its path (bf16_triton ...)
    gemm = gemm.assign(_law="gemm", _dtype=kern.law_key(gemm, kern.gemm_paths(gemm)), op="gemm")
    test = _held_out(gemm, ["gpu", "stack", "dtype", "m", "n", "k"])
    parts.append(_score(gemm[test], kern.fit_gemm(gemm[~test]), lambda d, hw, f: kern.gemm_law_seconds(
        d, hw, d.dtype.iloc[0], GemmLaw(**f.values))))
    moe = kern.moe_kernels().reset_index(drop=True)
    moe = moe.assign(_law="moe", _dtype=kern.law_key(moe, kern.moe_paths(moe)), op="moe")
    test = _held_out(moe, kern.MOE_KEYS)
    parts.append(_score(moe[test], kern.fit_moe(moe[~test]), lambda d, hw, f: kern.moe_law_seconds(
        d, hw, d.dtype.iloc[0], KernelLaw(**f.values))))
    attn = kern.with_attention_kind(kern.attention_kernels()[0]).reset_index(drop=True)
    attn = attn.assign(_law="attn_" + attn["kind"].astype(str), _dtype=attn["kv_dtype"])
    test = _held_out(attn, kern.ATTN_KEYS)
    parts.append(_score(attn[test], kern.fit_attention(attn[~test]), lambda d, hw, f: kern.attn_law_seconds(
        d, hw, f.law.removeprefix("attn_"), KernelLaw(**f.values))))
    return pd.concat(parts, ignore_index=True)


def main() -> None:
    for loss in ("linear", "huber"):
        rows = held_out_errors(loss)
        cells = rows.groupby(["op", "gpu", "stack"]).err
        med, p90 = cells.median(), cells.quantile(0.9)
        print(f"{loss:>6}: {len(rows):,} held-out kernels in {len(med)} cells; median |error| "
              f"{rows.err.median():.1%}; cells over 10% median {int((med > 0.10).sum())}, "
              f"over 30% p90 {int((p90 > 0.30).sum())}")


if __name__ == "__main__":
    main()
