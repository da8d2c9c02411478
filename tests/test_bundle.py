"""The generated code shipped with the package (planner/generated): current, and the same numbers
as code generated afresh from the sympy expressions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources

from planner import cache
from planner.physics import compiled

SCRIPT = "scripts/bundle_generated_code.py"


def test_the_shipped_code_is_generated_from_these_sources():
    # the bundle's entries are keyed by the physics sources: an edited equation without a fresh
    # bundle leaves every first run generating its code again (correct, only slower)
    name = cache.entry_name("manifest", (compiled._bundle_key(),))
    shipped = resources.files("planner").joinpath("generated", name)
    assert shipped.is_file(), f"planner/generated is stale: run python {SCRIPT}"


def test_the_shipped_quantities_are_the_bundled_specs():
    name = cache.entry_name("quantities", cache.source_key("planner.specs", ("units",)))
    doc = json.loads(resources.files("planner").joinpath("generated", name).read_text("utf-8"))
    assert doc["bandwidth|4.8 TB/s"] == 4.8e12  # a datasheet figure, parsed once by pint


EVAL = """
import json, numpy as np
from planner.physics.step import evaluate_configs, resolve_precisions
from planner.specs.registry import load_hardware, load_model
m, hw = load_model("kimi-k2-thinking"), load_hardware("gb200-nvl72")
prec = resolve_precisions(m, hw)
G = np.array([[8.0], [72.0]])
out = evaluate_configs(m, hw, prec, "realistic", G=G, TP_a=np.array([[8.0], [1.0]]), EP=G, TP_e=1.0,
                       E_slots=np.array([[384.0], [432.0]]), b=np.array([[1.0, 16.0, 128.0]]), S=1536.0,
                       overlap=1)
print(json.dumps({k: np.asarray(out[k], float).ravel().tolist() for k in ("step", "tps_gpu", "tps_user")}))
"""


def _run(tmp_path, **env: str) -> dict[str, list[float]]:
    full = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "MOE_PLANNER_NO_CACHE": "", **env}
    out = subprocess.run([sys.executable, "-c", EVAL], capture_output=True, text=True, check=True, env=full)
    return json.loads(out.stdout)


def test_the_shipped_code_gives_the_numbers_of_code_generated_afresh(tmp_path):
    # the same grid through the shipped entries (empty cache) and through code generated from
    # the sympy expressions now (shipped entries left out): identical to the last bit
    shipped = _run(tmp_path / "a")
    fresh = _run(tmp_path / "b", MOE_PLANNER_NO_BUNDLE="1")
    assert shipped == fresh
    assert all(v > 0 for v in shipped["tps_gpu"])


def test_a_cached_code_entry_that_is_not_our_code_is_ignored_and_replaced(tmp_path, monkeypatch):
    # a .marshal entry holding an int gave a TypeError traceback (exec of a non-code object) on
    # every run; the cache promises to ignore bad entries
    import hashlib
    import marshal
    import types

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("MOE_PLANNER_NO_CACHE", raising=False)
    source = "_lambdifygenerated = lambda x: x + 1\n"
    entry = cache.entry_path("code", (hashlib.sha256(source.encode()).hexdigest(), sys.version))
    entry = entry.with_suffix(".marshal")
    entry.parent.mkdir(parents=True, exist_ok=True)
    for bad in (marshal.dumps(42), marshal.dumps(compile("x = 1", "elsewhere.py", "exec")), b"\x00junk"):
        entry.write_bytes(bad)
        ns: dict = {}
        exec(compiled._code(source), ns)  # noqa: S102 (the test's own source)
        assert ns["_lambdifygenerated"](1) == 2
        code = marshal.loads(entry.read_bytes())  # the bad entry replaced by the compiled code
        assert isinstance(code, types.CodeType) and code.co_filename == compiled.CODE_FILENAME
