"""The sympy expressions of :mod:`planner.physics.equations`, compiled once to numpy with lambdify.

The numeric path is the lambdified sympy expressions themselves, compiled per *call signature*
(which symbols are arrays, which switches are fixed) so that a grid of configurations costs few
passes over its arrays:

1. *Switches*: a scalar overlap flag ``o``, spill flag ``x_off`` or a zero draft count ``n_d`` is
   substituted exactly, so the branch a call does not use (the no-overlap MoE layer, the host
   tier, the draft pass) is not computed at all.
2. *Constants*: every maximal sub-expression of symbols that are scalars in this call (the
   model, precision, hardware and efficiency symbols, usually also ``s_q``, ``A``...) is hoisted
   out and computed once per call on Python floats (stage 1); sums are regrouped by their
   varying factor (``c1 X + c2 X -> (c1 + c2) X``).
3. *Grid*: the rest, with common sub-expressions shared (``cse=True``), over the arrays and the
   hoisted constants (stage 2).

Printing: ``Piecewise`` as ``numpy.where`` (an indicator, 1 where a condition holds else 0, as
``1.0 * condition``, which is several times faster on mixed masks); ``Max``/``Min`` as nested
``numpy.maximum``/``minimum``; ``x**-1`` as a division; integer powers by a per-call constant
by repeated squaring.  The first call of a signature compiles it (about 1 s); later calls reuse
it.  Outputs always have the broadcast shape of the inputs.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import inspect
import json
import math
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import sympy as sp
from sympy.printing.numpy import NumPyPrinter

from planner.physics import equations as eq
from planner.physics.symbols import REGISTRY

#: Argument order of the compiled function: every registered symbol, by name.
ARG_NAMES: tuple[str, ...] = tuple(REGISTRY)
OUTPUT_NAMES: tuple[str, ...] = tuple(eq.ALL)
#: Symbol groups that hold one value per call: the default split when compiling without a call
#: signature (a call hoists whichever symbols it gives as scalars).
CONSTANT_GROUPS = ("model", "precision", "hardware", "efficiency")
CONSTANT_NAMES: tuple[str, ...] = tuple(n for n in ARG_NAMES if REGISTRY[n].group in CONSTANT_GROUPS)
GRID_NAMES: tuple[str, ...] = tuple(n for n in ARG_NAMES if n not in CONSTANT_NAMES)


class _Printer(NumPyPrinter):
    """NumPy printer: ``where`` / indicators for Piecewise, pairwise ``maximum``/``minimum``,
    divisions for ``x**-1`` and repeated squaring for integer powers by a per-call constant."""

    def _print_Piecewise(self, expr: sp.Piecewise) -> str:
        *pairs, last = expr.args
        if len(pairs) == 1 and pairs[0].expr == 1 and last.expr == 0 and last.cond == sp.true:
            # an indicator: 1.0 * (bool array) is one fast pass; where() with a random mask is
            # several times slower (branch mispredictions)
            return f"(1.0*{self._print(pairs[0].cond)})"
        if last.cond != sp.true:
            return super()._print_Piecewise(expr)
        out = self._print(last.expr)
        where = self._module_format("numpy.where")
        for pair in reversed(pairs):
            out = f"{where}({self._print(pair.cond)}, {self._print(pair.expr)}, {out})"
        return out

    def _print_Pow(self, expr: sp.Pow, rational: bool = False) -> str:
        base, exp = expr.args
        if exp == -1:  # numpy.power(x, -1.0) is ~4x slower than a division
            return f"(1.0/{self.parenthesize(base, 100)})"
        if isinstance(exp, sp.Symbol) and exp.name.startswith("k_"):
            # a per-call constant exponent (the experts per token k): integer powers by squaring
            return f"_ipow({self._print(base)}, {self._print(exp)})"
        return super()._print_Pow(expr, rational=rational)

    def _nested(self, func: str, args: tuple[sp.Expr, ...]) -> str:
        f = self._module_format(func)
        out = self._print(args[-1])
        for a in reversed(args[:-1]):
            out = f"{f}({self._print(a)}, {out})"
        return out

    def _print_Max(self, expr: sp.Max) -> str:
        return self._nested("numpy.maximum", expr.args)

    def _print_Min(self, expr: sp.Min) -> str:
        return self._nested("numpy.minimum", expr.args)


def _ipow(x: Any, e: Any) -> Any:
    """``x ** e``; for a scalar integer 1 <= e <= 64, by repeated squaring (a few multiplies
    instead of numpy's general power, which has no fast path for e > 2)."""
    if np.ndim(e) == 0 and np.ndim(x) and float(e).is_integer() and 1 <= e <= 64:
        n, result, sq = int(e), None, x
        while n:
            if n & 1:
                result = sq if result is None else result * sq
            n >>= 1
            if n:
                sq = sq * sq
        return result
    return x ** e


def hoist_constants(exprs: list[sp.Expr], constants: set[sp.Symbol]
                    ) -> tuple[list[sp.Expr], dict[sp.Symbol, sp.Expr]]:
    """Replace every maximal constant-only sub-expression by a fresh symbol.

    In sums and products the constant arguments are grouped into one factor or term.  Returns
    the rewritten expressions and ``{fresh symbol: constant expression}``; substituting the
    latter back gives the original expressions exactly.  Nothing is re-simplified (the trees
    are rebuilt with ``evaluate=False``), so this takes well under a second.
    """
    hoisted: dict[sp.Expr, sp.Symbol] = {}
    memo: dict[sp.Basic, sp.Basic] = {}
    free: dict[sp.Basic, bool] = {}

    def is_const(e: sp.Basic) -> bool:
        r = free.get(e)
        if r is None:
            r = free[e] = e.free_symbols <= constants
        return r

    def const(e: sp.Expr) -> sp.Expr:
        if e.is_Number:
            return e
        s = hoisted.get(e)
        if s is None:
            s = hoisted[e] = sp.Symbol(f"k_{len(hoisted)}")
        return s

    def walk(e: sp.Basic) -> sp.Basic:
        if e in memo:
            return memo[e]
        if isinstance(e, sp.Expr) and is_const(e):
            r = const(e)
        elif e.is_Atom:
            r = e
        elif isinstance(e, sp.Mul):
            fixed = [a for a in e.args if is_const(a)]
            rest = [walk(a) for a in e.args if not is_const(a)]
            # the varying factors stay one (unevaluated) node, so that cse shares them between
            # terms that differ only in their constant coefficient
            inner = sp.Mul(*rest) if len(rest) > 1 else rest[0]
            r = sp.Mul(const(sp.Mul(*fixed)), inner) if fixed else inner
        elif isinstance(e, sp.Add):
            # group terms by their varying factor: c1 X + c2 X -> (c1 + c2) X, one pass over X
            groups: dict[sp.Basic, list[sp.Expr]] = {}
            for a in e.args:
                if is_const(a):
                    c, v = a, sp.S.One
                elif isinstance(a, sp.Mul):
                    c = sp.Mul(*[f for f in a.args if is_const(f)])
                    v = sp.Mul(*[f for f in a.args if not is_const(f)])
                else:
                    c, v = sp.S.One, a
                groups.setdefault(v, []).append(c)
            terms = []
            for v, cs in groups.items():
                c = const(sp.Add(*cs)) if len(cs) > 1 else const(cs[0])
                terms.append(c if v == 1 else (walk(v) if c == 1 else sp.Mul(c, walk(v))))
            r = sp.Add(*terms)
        else:
            r = e.func(*(walk(a) for a in e.args))
        memo[e] = r
        return r

    with sp.evaluate(False):
        out = [walk(e) for e in exprs]
    return out, {s: e for e, s in hoisted.items()}


def _safe(exprs: list[sp.Expr], names: tuple[str, ...]) -> tuple[list[sp.Expr], list[sp.Symbol]]:
    """The registry's symbols carry LaTeX names (``\\eta_{c}``), which lambdify would replace
    by dummies with a slow, re-simplifying substitution (as it would for any Dummy argument);
    swap them here for plain identifiers, without evaluation."""
    swap = {REGISTRY[n].symbol: sp.Symbol(f"v_{n}") for n in names}
    with sp.evaluate(False):
        return [e.xreplace(swap) for e in exprs], list(swap.values())


#: Switches (0/1 flags and the draft count) whose scalar values are substituted exactly before
#: compiling: with overlap on, the no-overlap branch of every MoE layer is not computed at all.
SWITCHES: dict[str, tuple[float, ...]] = {"o": (0.0, 1.0), "x_off": (0.0, 1.0), "n_d": (0.0,)}


def _substitute(e: sp.Basic, fix: dict[sp.Symbol, sp.Expr], memo: dict[sp.Basic, sp.Basic]) -> sp.Basic:
    """``e`` with ``fix`` substituted: sums and products re-evaluate (so ``0 * X`` vanishes),
    ``Max``/``Min`` are rebuilt unevaluated (their simplifier is slow and changes nothing here)."""
    if e in fix:
        return fix[e]
    if e.is_Atom:
        return e
    r = memo.get(e)
    if r is None:
        args = [_substitute(a, fix, memo) for a in e.args]
        if all(a is b for a, b in zip(args, e.args, strict=True)):
            r = e
        elif isinstance(e, sp.Max | sp.Min):
            r = e.func(*args, evaluate=False)
        else:
            r = e.func(*args)
        memo[e] = r
    return r


@lru_cache(maxsize=32)
def _compiled(arrays: frozenset[str] | None = None, fixed: tuple[tuple[str, float], ...] = ()
              ) -> tuple[Any, Any, Any, tuple[str, ...], tuple[str, ...]]:
    """Compile for one call signature: ``arrays`` the symbols that vary over the grid (None: all
    but the spec constants), ``fixed`` the switches substituted.

    Returns (stage 1 on Python floats, the same on numpy, stage 2, stage-1 argument names,
    stage-2 argument names).
    """
    fixed_names = {n for n, _ in fixed}
    if arrays is None:
        arrays = frozenset(GRID_NAMES)
    const_names = tuple(n for n in ARG_NAMES if n not in arrays and n not in fixed_names)
    grid_names = tuple(n for n in ARG_NAMES if n in arrays and n not in fixed_names)
    exprs = [eq.ALL[n] for n in OUTPUT_NAMES]
    if fixed:
        fix = {REGISTRY[n].symbol: sp.Float(v) if v % 1 else sp.Integer(int(v)) for n, v in fixed}
        memo: dict[sp.Basic, sp.Basic] = {}
        exprs = [_substitute(e, fix, memo) for e in exprs]
    consts = {REGISTRY[n].symbol for n in const_names}
    exprs, hoisted = hoist_constants(exprs, consts)
    fresh = list(hoisted)
    k_exprs, k_args = _safe([hoisted[s] for s in fresh], const_names)
    g_exprs, g_args = _safe(exprs, grid_names)
    stage1 = sp.lambdify(k_args, k_exprs, modules="math", cse=True)
    stage1_np = sp.lambdify(k_args, k_exprs, modules=[{"_ipow": _ipow}, "numpy"], printer=_Printer,
                            cse=True)
    stage2 = sp.lambdify(g_args + fresh, g_exprs, modules=[{"_ipow": _ipow}, "numpy"],
                         printer=_Printer, cse=True)
    return stage1, stage1_np, stage2, const_names, grid_names


# ---- a disk cache of the generated code ------------------------------------------------------
# lambdify writes Python source; compiling it takes about a second per call signature, which
# every command-line run would pay again.  The generated source is kept in the user's cache
# directory under a key that hashes the source of the modules that define the expressions
# (symbols, equations, this one) and the sympy version, so any change to an equation makes a
# new entry.  Set MOE_PLANNER_NO_CACHE=1 to bypass it.

def _cache_dir() -> Path | None:
    if os.environ.get("MOE_PLANNER_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "moe-planner"


@lru_cache(maxsize=1)
def _source_hash() -> str:
    h = hashlib.sha256(sp.__version__.encode())
    for mod in ("symbols", "equations", "compiled"):
        h.update(importlib.resources.files("planner.physics").joinpath(f"{mod}.py").read_bytes())
    return h.hexdigest()[:20]


def _load(source: str, numpy_ns: bool) -> Any:
    ns: dict[str, Any] = {"_ipow": _ipow, "numpy": np} if numpy_ns else {}
    ns.update(np.__dict__ if numpy_ns else math.__dict__)
    exec(compile(source, "<moe-planner compiled>", "exec"), ns)  # noqa: S102 (our own cached code)
    return ns["_lambdifygenerated"]


@lru_cache(maxsize=32)
def _compiled_cached(arrays: frozenset[str] | None = None, fixed: tuple[tuple[str, float], ...] = ()
                     ) -> tuple[Any, Any, Any, tuple[str, ...], tuple[str, ...]]:
    """:func:`_compiled`, through the disk cache of generated sources when one is usable."""
    directory = _cache_dir()
    if directory is None:
        return _compiled(arrays, fixed)
    key = hashlib.sha256(repr((_source_hash(), sorted(arrays) if arrays is not None else None,
                               fixed)).encode()).hexdigest()[:24]
    path = directory / f"compiled-{key}.json"
    try:
        doc = json.loads(path.read_text("utf-8"))
        return (_load(doc["stage1"], False), _load(doc["stage1_np"], True),
                _load(doc["stage2"], True), tuple(doc["const_names"]), tuple(doc["grid_names"]))
    except (OSError, ValueError, KeyError, SyntaxError):
        pass
    stage1, stage1_np, stage2, const_names, grid_names = _compiled(arrays, fixed)
    try:
        doc = {"stage1": inspect.getsource(stage1), "stage1_np": inspect.getsource(stage1_np),
               "stage2": inspect.getsource(stage2), "const_names": const_names, "grid_names": grid_names}
        directory.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc), "utf-8")
        os.replace(tmp, path)
    except (OSError, TypeError):
        pass  # no cache: still correct, only slower next time
    return stage1, stage1_np, stage2, const_names, grid_names


def _signature(values: dict[str, Any]) -> tuple[frozenset[str], tuple[tuple[str, float], ...],
                                                tuple[int, ...]]:
    """(names of the array-valued symbols, switches fixed at their scalar value, output shape)."""
    arrays, shapes = [], []
    for n in ARG_NAMES:
        v = values[n]
        if not isinstance(v, float | int | np.generic):
            v = np.asarray(v)
            if v.ndim:
                shapes.append(v.shape)
            if v.size != 1:  # an empty grid is an array too
                arrays.append(n)
    fixed = []
    for n, allowed in SWITCHES.items():
        if n not in arrays:
            f = float(np.asarray(values[n]).reshape(()))
            if f in allowed:
                fixed.append((n, f))
    return frozenset(arrays), tuple(fixed), np.broadcast_shapes(*shapes)


def evaluate(values: dict[str, Any]) -> dict[str, np.ndarray]:
    """Evaluate every named expression at ``values`` (symbol name -> scalar or array).

    Arrays broadcast together, so a whole grid evaluates in one call.  Missing symbols raise
    ``KeyError`` naming them.  One compiled version exists per call signature (which symbols are
    arrays, which switches are fixed); the first call of a signature compiles it (about 1 s).
    """
    missing = [n for n in ARG_NAMES if n not in values]
    if missing:
        raise KeyError(f"missing symbol values: {', '.join(missing)}")
    arrays, fixed, shape = _signature(values)
    stage1, stage1_np, stage2, const_names, grid_names = _compiled_cached(arrays, fixed)
    scalars = [float(np.asarray(values[n]).reshape(())) for n in const_names]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        try:
            k = stage1(*scalars)
        except (ArithmeticError, ValueError, TypeError):  # 1/0, overflow, domain: IEEE semantics
            k = stage1_np(*(np.float64(x) for x in scalars))
        out = stage2(*(values[n] for n in grid_names), *k)
    return {n: _fit(v, shape) for n, v in zip(OUTPUT_NAMES, out, strict=True)}


def _fit(v: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Every output comes back as a writable float array with the broadcast shape of the inputs
    (outputs that do not depend on the arrays, e.g. a draft time of 0, are filled in)."""
    if isinstance(v, np.ndarray) and v.shape == shape:
        return v
    v = np.asarray(v, dtype=float)
    return np.full(shape, v) if v.shape != shape else v
