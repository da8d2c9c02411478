"""Fuzzing the loaders (hypothesis, fixed seed): every broken spec ends in one SpecError line.

Each case mutates a bundled spec (drop a field, add one, replace a value by junk: wrong types,
units of the wrong dimension, negative, zero, huge, NaN, deep nesting, object-constructing YAML
tags) or a config.json, then loads it.  Allowed outcomes: a valid spec, or ``SpecError`` whose
message is one line starting with the file label.  Anything else (another exception, a
traceback, an object built from a tag) fails the test.
"""

from __future__ import annotations

import copy
import json
import math
import os
from importlib import resources

import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from planner.errors import SpecError
from planner.specs.hardware import parse_hardware
from planner.specs.hfconfig import load_hf_config
from planner.specs.model import parse_model
from planner.specs.reading import parse_yaml
from planner.specs.registry import bundled_hardware_text

# Fixed seed (derandomize); no "explain" phase (it re-runs failing cases to annotate them).
# CI runs FUZZ_EXAMPLES examples per test; a long run: MOE_PLANNER_FUZZ_EXAMPLES=5000 pytest ...
FUZZ_EXAMPLES = int(os.environ.get("MOE_PLANNER_FUZZ_EXAMPLES", "60"))
FUZZ = settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True, database=None,
                phases=[Phase.explicit, Phase.generate, Phase.shrink],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _doc(package: str, name: str) -> dict:
    return yaml.safe_load(resources.files(package).joinpath(name).read_text("utf-8"))


HW = yaml.safe_load(bundled_hardware_text("gb200-nvl72"))
MODEL = _doc("planner.model_specs", "kimi-k2-thinking.yaml")

JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-10**12, 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["4.8 TB", "4.8 TB/s", "-1 GB/s", "0 W", "nan GB", "1e400 GB/s", "fast", "",
                     "10 PFLOP/s", "141 GiB", "5 us", "3 km", "1e-30 W", "900 GB/s per direction",
                     "bidirectional", "per_direction", "mla", "gqa", "bf16", "int3", "nvfp4"]),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.recursive(st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
                 lambda c: st.dictionaries(st.text(max_size=4), c, max_size=2), max_leaves=6),
)


def _paths(doc, prefix=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield (*prefix, k)
            yield from _paths(v, (*prefix, k))


HW_PATHS = list(_paths(HW))
MODEL_PATHS = list(_paths(MODEL))


def _mutate(doc, path, action, junk):
    d = copy.deepcopy(doc)
    node = d
    for k in path[:-1]:
        node = node[k]
    if action == "drop":
        del node[path[-1]]
    elif action == "replace":
        node[path[-1]] = junk
    else:
        node[f"{path[-1]}_extra"] = junk
    return d


def _check(parse, text: str, label: str) -> None:
    try:
        doc = parse_yaml(text, label)
        parse(doc, label)
    except SpecError as exc:
        msg = str(exc)
        assert "\n" not in msg, msg
        assert msg.startswith(label + ": "), msg
    # any other exception propagates and fails the test


@FUZZ
@given(path=st.sampled_from(HW_PATHS), action=st.sampled_from(["drop", "replace", "extra"]), junk=JUNK)
def test_fuzz_hardware(path, action, junk):
    text = yaml.safe_dump(_mutate(HW, path, action, junk), allow_unicode=True)
    _check(parse_hardware, text, "fuzz/hw.yaml")


@FUZZ
@given(path=st.sampled_from(MODEL_PATHS), action=st.sampled_from(["drop", "replace", "extra"]), junk=JUNK)
def test_fuzz_model(path, action, junk):
    text = yaml.safe_dump(_mutate(MODEL, path, action, junk), allow_unicode=True)
    _check(parse_model, text, "fuzz/model.yaml")


@FUZZ
@given(text=st.one_of(
    st.text(max_size=200),
    st.sampled_from([
        "!!python/object/apply:os.system ['echo pwned']",
        "name: !!python/object/apply:os.system ['echo pwned']",
        "- a\n- b",
        "42",
        "[" * 300,
        "a: &x [*x]",
        "a: {b: {c: {d: {e: {f: {g: 1}}}}}}",
        "name: gb\n\tdescription: tab",
        "\x00\x01",
    ]),
))
def test_fuzz_yaml_text(text):
    for parse, label in ((parse_hardware, "fuzz/hw.yaml"), (parse_model, "fuzz/model.yaml")):
        _check(parse, text, label)


def test_yaml_tags_never_construct_objects(tmp_path):
    marker = tmp_path / "pwned"
    text = f"name: !!python/object/apply:os.system ['touch {marker}']\n"
    try:
        parse_hardware(parse_yaml(text, "x.yaml"), "x.yaml")
    except SpecError:
        pass
    assert not marker.exists()




def _hf_base() -> dict:
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "deepseek-v3" / "config.json"
    return json.loads(path.read_text())


@FUZZ
@given(key=st.sampled_from(sorted(_hf_base())), action=st.sampled_from(["drop", "replace"]), junk=JUNK)
def test_fuzz_hf_config(tmp_path_factory, key, action, junk):
    cfg = _hf_base()
    if action == "drop":
        cfg.pop(key)
    else:
        cfg[key] = junk
    d = tmp_path_factory.mktemp("cfg")
    p = d / "config.json"
    try:
        p.write_text(json.dumps(cfg, allow_nan=True))
    except (TypeError, ValueError):
        return
    try:
        m = load_hf_config(str(p))
        assert m.total_params > 0 and math.isfinite(m.total_params)
    except SpecError as exc:
        assert "\n" not in str(exc)
        assert str(exc).startswith(str(p)), str(exc)
