"""From the sympy expressions to Python source: the code generation behind
:mod:`planner.physics.compiled` (imported only when a call signature is compiled for the first
time; a warm cache never imports this module or sympy).

The steps for one call signature (which symbols are arrays, which switches are fixed):

1. *Switches*: a scalar overlap flag ``o``, spill flag ``x_off`` or a zero draft count ``n_d`` is
   substituted exactly, so the branch a call does not use is not computed at all.
2. *Constants*: every maximal sub-expression of symbols that are scalars in this call is hoisted
   out and computed once per call on Python floats (stage 1); sums are regrouped by their
   varying factor (``c1 X + c2 X -> (c1 + c2) X``).
3. *Grid*: the rest, with common sub-expressions shared (``cse=True``), over the arrays and the
   hoisted constants (stage 2).

Printing: ``Piecewise`` as ``numpy.where`` (an indicator as ``1.0 * condition``, several times
faster on mixed masks); ``Max``/``Min`` as nested ``numpy.maximum``/``minimum``; a step
``Heaviside(x, 0)`` as ``1.0 * (x > 0)``; ``x**-1`` as a division; integer powers by a per-call
constant through ``_ipow`` (repeated squaring).
"""

from __future__ import annotations

import inspect
from functools import lru_cache
from typing import Any

import sympy as sp
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.pycode import PythonCodePrinter

from planner.physics import equations as eq
from planner.physics import serving_eq
from planner.physics.symbols import REGISTRY


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

    _print_Maximum = _print_Max
    _print_Minimum = _print_Min

    def _print_Heaviside(self, expr: sp.Heaviside) -> str:
        # Heaviside(x, 0), the step equations.below builds: 1 where x > 0
        if len(expr.args) == 2 and expr.args[1] == 0:
            return f"(1.0*{self._module_format('numpy.greater')}({self._print(expr.args[0])}, 0))"
        # Heaviside(x, 1): 1 where x >= 0 (a limit the message may reach)
        if len(expr.args) == 2 and expr.args[1] == 1:
            return f"(1.0*{self._module_format('numpy.greater_equal')}({self._print(expr.args[0])}, 0))"
        return super()._print_Heaviside(expr)



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

    def is_const(e: sp.Basic) -> bool:  # free_symbols <= constants, memoised over the tree
        r = free.get(e)
        if r is None:
            if e.is_Symbol:
                r = e in constants
            elif e.is_Atom:
                r = True
            else:
                r = all(is_const(a) for a in e.args)
            free[e] = r
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


class Maximum(sp.Function):
    """``Max`` without evaluation: the same maximum, printed the same way, but a tree rebuilt
    around it (by hoisting or by cse) never calls ``Max``'s simplifier, which compares every
    pair of arguments symbolically and took most of a signature's compile time."""


class Minimum(sp.Function):
    """``Min`` without evaluation (see :class:`Maximum`)."""


class _MathPrinter(PythonCodePrinter):
    """Python printer for stage 1 (Python floats): the inert maximum and minimum as ``max`` and
    ``min``, as the stock printer writes ``Max`` and ``Min``."""

    def _print_Maximum(self, expr: Maximum) -> str:
        return f"max({', '.join(self._print(a) for a in expr.args)})"

    def _print_Minimum(self, expr: Minimum) -> str:
        return f"min({', '.join(self._print(a) for a in expr.args)})"


@lru_cache(maxsize=1)
def _plain() -> tuple[tuple[sp.Expr, ...], dict[str, sp.Symbol]]:
    """Every output expression of :data:`equations.ALL` rewritten once for code generation: the
    registry's symbols, which carry LaTeX names (``\\eta_{c}``) that lambdify would replace by
    dummies with a slow, re-simplifying substitution, become plain identifiers ``v_<name>``, and
    ``Max``/``Min`` their inert twins.  Returns (expressions, {name: plain symbol})."""
    plain = {n: sp.Symbol(f"v_{n}") for n in REGISTRY}
    swap: dict[sp.Basic, sp.Basic] = {REGISTRY[n].symbol: s for n, s in plain.items()}

    def walk(e: sp.Basic) -> sp.Basic:
        r = swap.get(e)
        if r is None:
            if e.is_Atom:
                return e
            args = [walk(a) for a in e.args]
            if isinstance(e, sp.Max):
                r = Maximum(*args)
            elif isinstance(e, sp.Min):
                r = Minimum(*args)
            else:
                r = e.func(*args)
            swap[e] = r
        return r

    with sp.evaluate(False):
        return tuple(walk(eq.ALL[n]) for n in eq.ALL), plain


def _substitute(e: sp.Basic, fix: dict[sp.Symbol, sp.Expr], memo: dict[sp.Basic, sp.Basic]) -> sp.Basic:
    """``e`` with ``fix`` substituted: sums, products and Piecewise re-evaluate (so ``0 * X``
    vanishes and a decided branch is dropped); the inert maximum and minimum stay as they are."""
    if e in fix:
        return fix[e]
    if e.is_Atom:
        return e
    r = memo.get(e)
    if r is None:
        args = [_substitute(a, fix, memo) for a in e.args]
        r = e if all(a is b for a, b in zip(args, e.args, strict=True)) else e.func(*args)
        memo[e] = r
    return r


def signature_sources(arrays: frozenset[str] | None, fixed: tuple[tuple[str, float], ...],
                      arg_names: tuple[str, ...], grid_default: tuple[str, ...]) -> dict[str, Any]:
    """Generated source for one call signature: ``arrays`` the symbols that vary over the grid
    (None: ``grid_default``), ``fixed`` the switches substituted.

    Returns ``stage1`` (Python floats), ``stage1_np`` (the same on numpy, for IEEE semantics),
    ``stage2`` (the grid), and the argument names of stage 1 (``const_names``) and stage 2
    (``grid_names``); each stage is the source of one function ``_lambdifygenerated``.
    """
    fixed_names = {n for n, _ in fixed}
    if arrays is None:
        arrays = frozenset(grid_default)
    const_names = tuple(n for n in arg_names if n not in arrays and n not in fixed_names)
    grid_names = tuple(n for n in arg_names if n in arrays and n not in fixed_names)
    exprs, plain = _plain()
    if fixed:
        fix = {plain[n]: sp.Float(v) if v % 1 else sp.Integer(int(v)) for n, v in fixed}
        memo: dict[sp.Basic, sp.Basic] = {}
        exprs = tuple(_substitute(e, fix, memo) for e in exprs)
    exprs, hoisted = hoist_constants(list(exprs), {plain[n] for n in const_names})
    fresh = list(hoisted)
    k_exprs = [hoisted[s] for s in fresh]
    k_args = [plain[n] for n in const_names]
    g_args = [plain[n] for n in grid_names]
    # the same common sub-expressions serve both versions of stage 1
    k_cse = sp.cse(k_exprs, list=False)

    def shared(_exprs: Any) -> Any:
        return k_cse

    opts = {"cse": True, "use_imps": False, "docstring_limit": 0}
    math_printer = _MathPrinter({"fully_qualified_modules": False, "inline": True,
                                 "allow_unknown_functions": True})  # as lambdify sets its own
    stage1 = sp.lambdify(k_args, k_exprs, modules="math", printer=math_printer,
                         **(opts | {"cse": shared}))
    stage1_np = sp.lambdify(k_args, k_exprs, modules=["numpy"], printer=_Printer,
                            **(opts | {"cse": shared}))
    stage2 = sp.lambdify(g_args + fresh, exprs, modules=["numpy"], printer=_Printer, **opts)
    return {"stage1": inspect.getsource(stage1), "stage1_np": inspect.getsource(stage1_np),
            "stage2": inspect.getsource(stage2), "const_names": const_names, "grid_names": grid_names}


def manifest() -> dict[str, Any]:
    """The names the numeric path needs without sympy: every registered symbol with its group,
    every output expression, the step terms, and the named serving equations' arguments."""
    registered = {v.symbol: k for k, v in REGISTRY.items()}
    named = {}
    for name, expr in serving_eq.EQUATIONS.items():
        syms = sorted(expr.free_symbols, key=lambda s: s.name)
        named[name] = [registered.get(s, s.name) for s in syms]
    return {"args": list(REGISTRY), "groups": {n: s.group for n, s in REGISTRY.items()},
            "outputs": list(eq.ALL), "terms": list(eq.TERMS), "named": named}


def named_source(name: str) -> str:
    """Source of the numpy function of one named serving equation (arguments in the order of
    :func:`manifest`'s ``named[name]``)."""
    expr = serving_eq.EQUATIONS[name]
    syms = sorted(expr.free_symbols, key=lambda s: s.name)
    return inspect.getsource(sp.lambdify(syms, expr, modules="numpy", printer=_Printer))
