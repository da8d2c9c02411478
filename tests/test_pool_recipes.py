"""Launch recipes of the pools a fleet plan or a sizing chose (``plan --recipes``, ``size --recipes``,
planner/economics/recipes.py): one per pool for the stack it was priced on, or one line saying why
not; every flag in the stack's table; each read back to the pool's deployment."""

from __future__ import annotations

import json

import pytest

from planner.cli import main
from planner.economics.recipes import pool_recipes
from planner.fleet.plan import EXAMPLE_PLAN, plan
from planner.serving import launch
from planner.serving.deployed import LAYOUT_COLUMNS, predict
from planner.specs.registry import load_hardware, load_model


@pytest.fixture(scope="module")
def example() -> tuple:
    result = plan(EXAMPLE_PLAN)
    sources = result.recipe_sources()
    return result, sources, pool_recipes(sources, what="the fleet plan's pool", date="2026-12-07")


def _read_back(r: launch.Recipe) -> None:
    """Every flag in the stack's table; the recipe read back to its deployment and prediction."""
    s = r.sidecar
    used = launch.flags_used(r.text)
    held = set(launch.flat_flags(s["stack"]))
    assert used[s["stack"]] and set(used[s["stack"]]) <= held and set(used["bench"]) <= held
    dep, bench = launch.read_recipe(r.text)
    assert bench["stack"] == s["stack"] and (bench["isl"], bench["osl"]) == (s["isl"], s["osl"])
    got, want = dep.iloc[0], s["deployment"]
    for c in (*LAYOUT_COLUMNS, "concurrency", "drafts"):
        if not (c.startswith("prefill") and not want["disagg"]):
            assert float(got[c]) == pytest.approx(want[c]), c
    hw = load_hardware(s["hardware"]).with_stack(s["stack"])
    p = predict(load_model(s["model"]), hw, dep, weights=s["weights"], kv=s["kv"], isl=s["isl"], osl=s["osl"])
    assert int(p.reason.iloc[0]) == 0
    want_tps = s["predicted"]["output_tps_per_gpu"]
    assert float(p.output_tps_per_gpu.iloc[0]) == pytest.approx(want_tps, rel=1e-9)


def test_every_pool_of_the_example_plan(example) -> None:
    """A recipe per pool for its system's stack, or one line why not; the recipe states the
    deployment the pool priced (the rules search's row: same layout, concurrency, drafts, output)."""
    result, sources, (recipes, refused) = example
    assert len(sources) == len(result.pools) >= 3
    by_label = {r.sidecar["pool"]["label"]: r for r in recipes}
    assert len(by_label) + len(refused) == len(sources)
    assert recipes, "some pool of the example plan has a recipe"
    for _, why in refused:
        assert "\n" not in why and why
    assert len({r.name for r in recipes}) == len(recipes)
    for src, pool in zip(sources, result.pools.to_dict("records"), strict=True):
        if src.label not in by_label:
            assert src.label in dict(refused)
            continue
        r = by_label[src.label]
        s = r.sidecar
        assert s["stack"] == src.option.hw.stack and s["hardware"] == pool["system"]
        assert s["model"] == pool["model"] and s["weights"] == pool["weights"]
        assert s["serving"] == pool["serving"] and s["pool"]["units"] == pool["units"]
        row = src.option.point(src.c, src.level)
        for c in (*LAYOUT_COLUMNS, "concurrency", "drafts"):
            assert s["deployment"][c] == pytest.approx(float(row[c])), c
        assert s["predicted"]["output_tps_per_gpu"] == pytest.approx(pool["tps_per_gpu"], rel=1e-12)
        assert s["pool"]["copies"] == pool["decode_instances"]
        _read_back(r)


def test_refusals_are_the_stacks(example) -> None:
    _, _, (_, refused) = example
    why = dict(refused)
    assert any("worker layout vllm runs" in w for w in why.values())     # limit search: TP 2 of 64
    assert any("checkpoint of llama-3.1-70b at nvfp4" in w for w in why.values())


def test_plan_cli_writes_the_recipes(tmp_path, capsys) -> None:
    out = tmp_path / "recipes"
    assert main(["plan", str(EXAMPLE_PLAN), "--recipes", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    got = doc["recipes"]
    assert len(got["recipes"]) + len(got["refused"]) == len(doc["pools"])
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(n for r in got["recipes"] for n in (r["path"].split("/")[-1],
                                                                 r["sidecar"].split("/")[-1]))
    for r in got["recipes"]:
        side = json.loads(open(r["sidecar"]).read())
        text = open(r["path"]).read()
        assert side["pool"]["label"] == r["pool"] and "# pool: " in text
        dep, _ = launch.read_recipe(text)
        assert float(dep.concurrency.iloc[0]) == side["deployment"]["concurrency"]
    (tmp_path / "file").write_text("x")
    assert main(["plan", str(EXAMPLE_PLAN), "--recipes", str(tmp_path / "file")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--recipes" in err


def test_size_cli_recipes_limit_search(tmp_path, capsys) -> None:
    """A sizing under the limit search (--max-gpus): the pool's instances in their ratio, priced as
    deployed, each recipe read back to that deployment."""
    out = tmp_path / "r"
    assert main(["size", "--model", "deepseek-r1", "--hardware", "hgx-b200", "--demand-tps", "100000",
                 "--min-tps-user", "30", "--max-gpus", "16", "--recipes", str(out)]) == 0
    text = capsys.readouterr().out
    assert "# recipes: 1 written" in text
    [yml] = list(out.glob("*.yaml"))
    side = json.loads(yml.with_suffix(".json").read_text())
    r = launch.Recipe(name=yml.stem, text=yml.read_text(), sidecar=side)
    assert r.sidecar["pool"]["search"] == "limit"
    _read_back(r)
