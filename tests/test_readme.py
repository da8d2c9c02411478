"""The README as a five-minute read: at most 250 lines, the two setup commands as CI runs them,
the answer table equal to what `moe-planner compare --json` gives today (one compare, ~5 s), and
every relative link in README.md and docs/*.md pointing at a file (and heading) that exists."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from planner import Scenario

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

#: the two setup commands, byte for byte (command 2 is what .ci/run runs)
COMMAND_1 = "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/moe-planner compare"
COMMAND_2 = ("python3 -m venv .venv && .venv/bin/pip install -q '.[test]' && "
             ".venv/bin/python -m pytest -q -n 2 --dist worksteal")


def _readme_numbers():
    spec = importlib.util.spec_from_file_location("readme_numbers", ROOT / "scripts" / "readme_numbers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rn():
    return _readme_numbers()


@pytest.fixture(scope="module")
def compare(rn):
    return rn.compare_json()


def test_readme_is_at_most_250_lines():
    n = len(README.read_text().splitlines())
    assert n <= 250, f"README.md has {n} lines"


def test_setup_commands_and_ci():
    lines = README.read_text().splitlines()
    assert COMMAND_1 in lines and COMMAND_2 in lines
    assert lines.index(COMMAND_1) < lines.index(COMMAND_2)
    ci = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines() if ln.startswith("python3 ")]
    assert ci == [COMMAND_2]  # CI runs exactly the README's command 2


def test_answer_table_matches_the_cli(rn, compare):
    text = README.read_text()
    have = rn.extract(text)
    assert have is not None, "README.md has no readme-numbers block"
    stale = "README.md's answer table is stale: python scripts/readme_numbers.py --write README.md"
    assert have == rn.render(compare), stale
    end = text[:text.index(rn.END)].count("\n") + 1
    assert end <= 40, f"the answer table ends on line {end}, past the README's first 40"
    # the figures the table states are the CLI's own
    assert f"{compare['verdict']['largest']['ratio']:.1f}x" in have
    for r in compare["table"]:
        if r["tps_per_gpu_a"] is not None:
            assert f"{r['tps_per_gpu_a']:,.0f}" in have and f"{r['ratio']:.1f}x" in have


PUBLIC = ROOT.parent / "shared" / "validation" / "measured_frontiers.csv"


@pytest.mark.skipif(not PUBLIC.exists(), reason="no public measured-frontier file beside the checkout")
def test_accuracy_table_matches_validate_frontiers(rn):
    # the README's accuracy table is what validate --frontiers gives on the public file (read from
    # its path, never bundled)
    have = rn.extract(README.read_text(), rn.ACC_BEGIN, rn.ACC_END)
    assert have is not None, "README.md has no readme-accuracy block"
    stale = "stale: python scripts/readme_numbers.py --write README.md --frontiers FILE"
    assert have == rn.accuracy_block(str(PUBLIC)), stale


def test_check_exits_1_when_the_table_differs(rn, compare, tmp_path, capsys):
    saved = tmp_path / "compare.json"
    saved.write_text(json.dumps(compare))
    good = tmp_path / "README.md"
    good.write_text(README.read_text())
    assert rn.main(["--check", str(good), "--from-json", str(saved)]) == 0
    bad = tmp_path / "README-stale.md"
    block = rn.extract(README.read_text())
    bad.write_text(README.read_text().replace(block, block.replace("| 50 |", "| 51 |")))
    assert rn.main(["--check", str(bad), "--from-json", str(saved)]) == 1
    none = tmp_path / "README-none.md"
    none.write_text("# no table\n")
    assert rn.main(["--check", str(none), "--from-json", str(saved)]) == 1
    capsys.readouterr()


_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _prose(path: Path) -> str:
    text = _FENCE.sub("", path.read_text())
    return re.sub(r"`[^`\n]*`", "", text)  # inline code is not a link


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats -1, -2."""
    seen: dict[str, int] = {}
    out = set()
    for line in _FENCE.sub("", path.read_text()).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _documents() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def test_slugs_by_hand(tmp_path):
    p = tmp_path / "a.md"
    p.write_text("# A\n## Measured frontiers, the rules search\n### The hardware of 2026-27\n## A\n"
                 "```\n# not a heading\n```\n")
    assert _anchors(p) == {"a", "measured-frontiers-the-rules-search", "the-hardware-of-2026-27", "a-1"}


@pytest.mark.parametrize("doc", _documents(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_exist(doc):
    bad = []
    for target in _LINK.findall(_prose(doc)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (doc.parent / file).resolve() if file else doc
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{target}: no such heading")
    assert not bad, f"{doc.relative_to(ROOT)}: " + "; ".join(bad)


def test_every_doc_is_reachable_from_the_readme():
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in _LINK.findall(_prose(README))}
    missing = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.resolve() not in linked]
    assert not missing, f"docs not linked from README.md: {missing}"


def test_the_readmes_recipe_is_the_one_the_tool_writes():
    # the excerpt: GB200 NVL72's SGLang decode worker at 50 tokens/s per user, as `recipe --at 50
    # --stack sglang` writes it (its list items joined on one line in the README)
    from planner.serving.launch import build

    r = build(Scenario("kimi-k2-thinking", "gb200-nvl72", stack="sglang", serving="disaggregated"), at=50.0)
    text = README.read_text()
    decode = r.text[r.text.index("    decode:"):]
    args = decode[decode.index("args:"):].split("\n")
    flags = " ".join(a.strip()[2:] for a in args[1:] if a.strip().startswith("- "))
    readme = " ".join(text[text.index("    decode:"):].split("```")[0].split())
    assert " ".join(flags.split()) in readme
    assert "replicas: 8" in readme and "nodeCount: 16" in readme
