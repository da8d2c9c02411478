"""Would a fused evaluation of the step pay?  The grid stage of the compiled step, run as one
loop per configuration compiled with numba, against the numpy stage it is generated from.

Usage: ``python benchmarks/probe_fused.py [--n 65536]`` (needs ``pip install numba``; numba is
not a dependency of the package).

The loop's body is the generated numpy source itself, line by line, on scalars (``numpy.where``
becomes a conditional expression), so both evaluate the same sympy expressions.  Prints the
compile time, configurations per second of each on one core (CPU time, best of 10) and the
largest relative difference between their outputs.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from bench_step import random_configs  # noqa: E402

from planner.physics import compiled  # noqa: E402
from planner.physics.step import evaluate_configs, resolve_precisions  # noqa: E402
from planner.specs.registry import load_hardware, load_model  # noqa: E402


def _split_top(text: str) -> list[str]:
    """The items of a comma-separated list, splitting only outside brackets."""
    items, depth, cur = [], 0, []
    for ch in text:
        depth += ch in "(["
        depth -= ch in ")]"
        if ch == "," and depth == 0:
            items.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    items.append("".join(cur).strip())
    return items


def loop_source(stage2: str) -> tuple[str, int]:
    """numba source of a per-configuration loop over the generated grid stage; (source, outputs)."""
    lines = stage2.strip().splitlines()
    args = re.search(r"\((.*)\)", lines[0]).group(1).split(", ")
    grid = [a for a in args if a.startswith("v_")]
    consts = [a for a in args if not a.startswith("v_")]
    outs = _split_top(lines[-1].strip()[len("return ["):-1])
    src = ["import numpy", "from numba import njit", "",
           "@njit(inline='always')", "def _where(c, a, b):", "    return a if c else b", "",
           "@njit(inline='always')", "def _ipow(x, e):", "    return x ** e", "",
           "@njit(error_model='numpy')",
           f"def kernel(n, {', '.join('a_' + a for a in grid)}, {', '.join(consts)}, out):",
           "    for i in range(n):"]
    src += [f"        {a} = a_{a}[i]" for a in grid]
    src += ["        " + ln.strip().replace("numpy.where(", "_where(") for ln in lines[1:-1]]
    src += [f"        out[{j}, i] = {o}" for j, o in enumerate(outs)]
    return "\n".join(src) + "\n", len(outs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=65_536, help="configurations (default 65536)")
    args = ap.parse_args(argv)
    if importlib.util.find_spec("numba") is None:
        print("numba is not installed: pip install numba")
        return 2

    model, hw = load_model("kimi-k2-thinking"), load_hardware("gb200-nvl72")
    prec = resolve_precisions(model, hw)
    seen: dict[str, dict] = {}
    real = compiled.evaluate

    def spy(values: dict) -> dict:
        seen["values"] = values
        return real(values)

    compiled.evaluate = spy
    try:
        evaluate_configs(model, hw, prec, "realistic", overlap=1, **random_configs(args.n))
    finally:
        compiled.evaluate = real
    values = seen["values"]
    arrays, fixed, shape = compiled._signature(values)
    stage1, _, stage2, const_names, grid_names = compiled._compiled(arrays, fixed)
    doc_source = compiled._entry("compiled", (sorted(arrays), fixed), lambda d: isinstance(d, dict),
                                 lambda: None)["stage2"]
    k = stage1(*(float(np.asarray(values[n]).reshape(())) for n in const_names))
    grid = [np.ascontiguousarray(np.broadcast_to(np.asarray(values[n], float), shape)) for n in grid_names]

    source, n_out = loop_source(doc_source)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fused_kernel.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location("fused_kernel", path)
        mod = importlib.util.module_from_spec(spec)
        c0 = time.process_time()
        spec.loader.exec_module(mod)
        out = np.empty((n_out, args.n))
        mod.kernel(args.n, *grid, *k, out)
        compile_s = time.process_time() - c0

    def best(fn) -> float:
        t = float("inf")
        for _ in range(10):
            c0 = time.process_time()
            fn()
            t = min(t, time.process_time() - c0)
        return t

    with np.errstate(all="ignore"):
        ref = stage2(*grid, *k)
        t_np = best(lambda: stage2(*grid, *k))
    t_nb = best(lambda: mod.kernel(args.n, *grid, *k, out))
    worst = 0.0
    with np.errstate(all="ignore"):
        for j, r in enumerate(ref):
            r = np.broadcast_to(np.asarray(r, float), shape)
            fin = np.isfinite(r)
            if not np.array_equal(fin, np.isfinite(out[j])):
                worst = float("inf")
            d = np.abs(out[j][fin] - r[fin]) / np.maximum(np.abs(r[fin]), 1e-300)
            worst = max(worst, float(d.max(initial=0.0)))
    print(f"grid stage: {len(grid_names)} array inputs, {len(k)} constants, {n_out} outputs, "
          f"{doc_source.count(chr(10))} lines")
    print(f"numba compile: {compile_s:.2f} s CPU")
    print(f"numpy stage: {args.n / t_np:,.0f} configurations/s (CPU)")
    print(f"fused loop:  {args.n / t_nb:,.0f} configurations/s (CPU)")
    print(f"largest relative difference: {worst:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
