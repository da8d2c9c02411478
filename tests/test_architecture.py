"""The package's layering (docs/architecture.md), checked by walking its imports: no module
outside ``planner.cli`` imports from it, no circle of imports anywhere, each layer imports only
the layers below it; and what a command line imports (``--help`` no heavy library, a warm
compiled cache no sympy)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "planner"

#: each layer and the layers it may import (besides itself and the shared top-level modules)
LAYERS = {
    "specs": set(),
    "physics": {"specs"},
    "serving": {"specs", "physics"},
    "economics": {"specs", "physics", "serving"},
    "truth": {"specs", "physics", "serving"},
    "fleet": {"specs", "physics", "serving", "economics", "truth"},
    "plot": set(),
    "explorer": {"specs", "physics", "serving", "plot"},
    "cli": {"specs", "physics", "serving", "economics", "truth", "fleet", "plot"},
}
#: top-level modules any layer may use (they import nothing of the layers)
SHARED = {"planner", "planner.errors", "planner.cache", "planner.outputs", "planner.cells"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports() -> dict[str, set[str]]:
    """module -> the planner modules it imports (at any depth of the file, lazy ones included)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py") if "hardware_specs" not in p.parts}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module.startswith("planner"):
                    deps.add(node.module)
                    for a in node.names:  # ``from planner.x import y`` where y is a module
                        if f"{node.module}.{a.name}" in modules:
                            deps.add(f"{node.module}.{a.name}")
            elif isinstance(node, ast.ImportFrom) and node.level:
                raise AssertionError(f"{name}: relative import (use planner.* so the layer shows)")
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("planner")}
        graph[name] = {d for d in deps if d in modules} - {name}
    return graph


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def test_nothing_outside_cli_imports_cli():
    # ``python -m planner`` (planner.__main__) is the program itself: it runs the command line
    bad = [(m, d) for m, deps in _imports().items()
           if not m.startswith("planner.cli") and m != "planner.__main__"
           for d in deps if d.startswith("planner.cli")]
    assert not bad, bad


def test_layers_import_only_layers_below():
    bad = []
    for m, deps in _imports().items():
        own = _layer(m)
        if own is None:
            continue
        for d in deps:
            other = _layer(d)
            if d in SHARED or other is None or other == own:
                continue
            if other not in LAYERS[own]:
                bad.append(f"{m} -> {d}")
    assert not bad, bad


def test_shared_modules_import_no_layer():
    graph = _imports()
    for m in SHARED - {"planner"}:
        assert all(_layer(d) is None for d in graph[m]), (m, graph[m])


def test_no_import_cycles():
    graph = _imports()
    # (the package root's lazy __getattr__ names modules as strings: they are not edges)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(d):] + [d]))
            if d not in state:
                visit(d)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)


def test_a_cycle_is_detected(monkeypatch):
    """The cycle check can fail: a graph with a circle is reported."""
    monkeypatch.setattr(sys.modules[__name__], "_imports",
                        lambda: {"planner.a": {"planner.b"}, "planner.b": {"planner.a"}})
    with pytest.raises(AssertionError, match="import cycle"):
        test_no_import_cycles()


def _loaded_after(code: str, env: dict[str, str] | None = None) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True, env={**os.environ, **(env or {})})
    return set(out.stdout.split())


HEAVY = {"sympy", "scipy", "pandas", "matplotlib", "pint"}


def test_help_imports_no_heavy_library():
    loaded = _loaded_after("from planner.cli import build_parser\nbuild_parser().format_help()")
    assert not HEAVY & loaded, HEAVY & loaded


def test_import_planner_is_light():
    loaded = _loaded_after("import planner")
    assert not (HEAVY | {"numpy"}) & loaded


def test_warm_cache_evaluates_without_sympy_or_pint(tmp_path):
    code = ("import planner\n"
            "s = planner.Scenario('deepseek-v2-lite', 'hgx-h200', gpus=8)\n"
            "r = planner.decode_step(s, batch=64, context=2048)\n"
            "assert r.tps_per_gpu > 0\n")
    env = {"XDG_CACHE_HOME": str(tmp_path), "MOE_PLANNER_NO_CACHE": "", "MOE_PLANNER_NO_BUNDLE": "1"}
    cold = _loaded_after(code, env)
    assert "sympy" in cold  # the first run generates the code (the shipped entries left out)
    warm = _loaded_after(code, env)
    assert not {"sympy", "pint"} & warm, {"sympy", "pint"} & warm


def test_a_fresh_install_runs_the_main_commands_without_sympy_or_pint(tmp_path):
    # the generated code of the main commands' call signatures and the bundled specs' quantities
    # ship with the package (planner/generated), so the first run with an empty cache loads them
    code = ("import planner\n"
            "s = planner.Scenario('kimi-k2-thinking', 'hgx-h200', gpus=8)\n"
            "r = planner.decode_step(s, batch=64, context=2048)\n"
            "assert r.tps_per_gpu > 0\n")
    first = _loaded_after(code, {"XDG_CACHE_HOME": str(tmp_path), "MOE_PLANNER_NO_CACHE": "",
                                 "MOE_PLANNER_NO_BUNDLE": ""})
    assert not {"sympy", "pint"} & first, {"sympy", "pint"} & first


def test_help_of_the_package_names_every_public_function():
    import planner

    classes = {"SpecError", "Hardware", "Model", "StepResult", "Comparison", "Explorer"}
    missing = [n for n in planner.__all__ if n not in classes and n not in (planner.__doc__ or "")]
    assert not missing, missing
