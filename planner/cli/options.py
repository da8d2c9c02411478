"""The scenario's options on the command line, declared once: each subcommand names the fields of
:class:`planner.specs.scenario.Scenario` it takes, and :func:`add_scenario_options` makes their
flags from the fields' own defaults, units and meanings; :func:`scenario_from_args` builds the
scenario from what was given, over a ``--scenario FILE`` where one is named."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any

from planner.cli.common import DefaultInt, acceptance_arg, positive_float, positive_int
from planner.errors import SpecError

#: the groups the options are listed under in --help
GROUPS = {
    "question": "system and model",
    "workload": "workload and serving",
    "search": "search space (omit to let the search choose)",
    "answer": "mode and metric",
}
#: the flag of a field whose flag is not its name
FLAGS = {"systems": "--hardware"}


def flag_of(name: str) -> str:
    return FLAGS.get(name, "--" + name.replace("_", "-"))


def dest_of(name: str) -> str:
    return flag_of(name)[2:].replace("-", "_")


def _mtp(text: str) -> Any:
    if text in ("off", "0"):
        return None
    if text == "auto":
        return "auto"
    if text.isascii() and text.isdigit() and 0 < int(text) <= 16:
        return int(text)
    raise argparse.ArgumentTypeError(f"expected off, auto or a number of draft tokens (1-16), got {text!r}")


def _overlap(text: str) -> Any:
    values = {"auto": "auto", "on": True, "off": False}
    if text not in values:
        raise argparse.ArgumentTypeError(f"expected auto, on or off, got {text!r}")
    return values[text]


#: how the command line reads each kind of field
TYPES = {"count": positive_int, "positive": positive_float, "mtp": _mtp, "overlap": _overlap,
         "acceptance": acceptance_arg}


def _default_text(name: str, default: Any) -> str:
    if name == "systems":
        return " ".join(default) if isinstance(default, tuple | list) else str(default)
    if default is None:
        return ""
    if default is True:
        return "on"
    if default is False:
        return "off"
    return f"{default:g}" if isinstance(default, float) else str(default)


def add_scenario_options(p: argparse.ArgumentParser, names: Sequence[str], *,
                         changes: Mapping[str, Mapping[str, Any]] | None = None,
                         scenario_file: bool = True, titles: Mapping[str, str] | None = None) -> None:
    """Add the flags of scenario fields ``names`` to ``p``, grouped as :data:`GROUPS` says.

    ``changes``: per field, what this subcommand takes differently (``choices``: a subset of the
    field's; ``default``; ``required``; ``nargs``; ``help`` where the command's words are closer,
    such as the number of systems it takes).  ``titles``: the groups' headings where the command's
    differ from :data:`GROUPS`.  No flag has an argparse default: a flag not given takes
    the scenario's (or the ``--scenario`` file's) value, so that a flag given is known as given."""
    from planner.specs.scenario import FIELDS

    changes = changes or {}
    heading = {**GROUPS, **(titles or {})}
    required: list[str] = []
    groups: dict[str, Any] = {}
    if scenario_file:
        groups["question"] = p.add_argument_group(heading["question"])
        groups["question"].add_argument(
            "--scenario", metavar="FILE", default=None,
            help="start from the scenario in FILE (JSON or YAML: the 'scenario' of a command's --json "
                 "output, or the fields alone); the flags given replace its fields")
    for name in names:
        f = FIELDS[name]
        meta, ch = f.metadata, dict(changes.get(name, {}))
        g = groups.get(meta["group"])
        if g is None:
            g = groups[meta["group"]] = p.add_argument_group(heading[meta["group"]])
        default = ch.pop("default", f.default)
        kind = meta["kind"]
        kw: dict[str, Any] = {"dest": dest_of(name), "default": argparse.SUPPRESS}
        if kind == "flag":
            kw["action"] = "store_true"
        else:
            if kind in TYPES:
                kw["type"] = TYPES[kind]
            if meta["choices"]:
                kw["choices"] = ch.pop("choices", meta["choices"])
            if meta["metavar"]:
                kw["metavar"] = meta["metavar"]
        text = ch.pop("help", None)
        custom = text is not None  # (a command's own words say their default)
        if text is None and meta["choice_docs"] and "choices" in kw:  # the choices this command takes
            text = "; ".join(meta["choice_docs"][c] for c in kw["choices"])
        text = meta["doc"] if text is None else text
        shown = _default_text(name, default)
        if not shown and default is None and meta["none_means"]:
            shown = f": {meta['none_means']}"  # a phrase, not a value
        said = ["required"] if ch.pop("required", False) else (
            [f"default{'' if shown.startswith(':') else ' '}{shown}"] if shown and kind != "flag"
            and not custom else [])
        if said == ["required"]:  # (checked once the --scenario file is read: it may hold it)
            required.append(name)
        said = ([meta["unit"]] if meta["unit"] and not custom else []) + said
        if said:
            text += f" ({'; '.join(said)})"
        if ch.get("action"):  # (a flag alone: ``--overlap`` for on)
            for k in ("type", "metavar", "choices"):
                kw.pop(k, None)
        kw.update(ch)
        kw["help"] = text.replace("%", "%%")
        action = g.add_argument(flag_of(name), **kw)
        action.scenario_field = name  # (the test that every option is declared once reads it)
    p.set_defaults(_scenario_fields=tuple(names), _scenario_defaults={
        n: changes[n]["default"] for n in names if "default" in changes.get(n, {})},
        _systems_nargs=changes.get("systems", {}).get("nargs"), _scenario_required=tuple(required))


def given_fields(args: argparse.Namespace) -> set[str]:
    """The scenario fields whose flags were given on the command line."""
    return {n for n in getattr(args, "_scenario_fields", ()) if hasattr(args, dest_of(n))
            and n not in getattr(args, "_filled", ())}


def read_scenario_file(path: str) -> dict[str, Any]:
    """The scenario fields in ``path``: a command's JSON output (its ``scenario``) or the fields
    alone, in JSON or YAML."""
    from planner.specs.reading import read_yaml

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise SpecError(path, "--scenario", f"a readable file ({exc.strerror or exc})") from None
    try:
        doc = json.loads(text)
    except ValueError:
        doc = read_yaml(path)
    if isinstance(doc, Mapping) and isinstance(doc.get("scenario"), Mapping):
        doc = doc["scenario"]
    if not isinstance(doc, Mapping):
        raise SpecError(path, "scenario", "a mapping of scenario fields (or a command's JSON output with "
                        "one)")
    return dict(doc)


def scenario_from_args(args: argparse.Namespace) -> Any:
    """The scenario of a subcommand's arguments (the one place the command line builds one): the
    flags given, over the ``--scenario`` file's fields, over this subcommand's defaults, over the
    scenario's.  The flags not given are then set on ``args`` to the scenario's values, for the
    code that reads them there (an integer default as :class:`~planner.cli.common.DefaultInt`, so
    that it is told apart from the same value given)."""
    from planner.specs.scenario import DEFAULTS, FIELDS, Scenario

    names = getattr(args, "_scenario_fields", ())
    given = given_fields(args)
    base: dict[str, Any] = {}
    path = getattr(args, "scenario", None)
    if path:
        base = read_scenario_file(path)
        outside = sorted(k for k in base if k in FIELDS and k not in names
                         and base[k] != DEFAULTS[k])
        if outside:
            raise SpecError(path, f"scenario.{outside[0]}", f"a field this command takes "
                            f"({flag_of(outside[0])} is not one of its options), or its default")
        base = {k: v for k, v in base.items() if k in names or k not in FIELDS}
    fields = {**getattr(args, "_scenario_defaults", {}), **base}
    for n in given:
        fields[n] = getattr(args, dest_of(n))
    for n in getattr(args, "_scenario_required", ()):
        if n not in fields:
            raise SpecError("<input>", flag_of(n), f"a value (or a --scenario FILE that holds {n})")
    if isinstance(fields.get("systems"), str):
        fields["systems"] = (fields["systems"],)
    if "slo" in given:
        from planner.specs.workload import parse_slo

        fields["slo"] = parse_slo(fields["slo"], "<input>", "--slo")
    if "kv_tiers" in given:
        from planner.specs.workload import parse_tiers

        fields["kv_tiers"] = parse_tiers(fields["kv_tiers"], "<input>", "--kv-tiers")
    sc = Scenario.from_dict(fields, where=path) if path else Scenario(**fields)
    filled = []
    for n in names:
        if n in given:
            continue
        v = getattr(sc, n)
        if n == "systems":
            v = list(v) if isinstance(getattr(args, "_systems_nargs", None), str) else v[0]
        elif isinstance(v, int) and not isinstance(v, bool):
            v = DefaultInt(v)
        setattr(args, dest_of(n), v)
        filled.append(n)
    args._filled = tuple(filled)
    args.scenario_obj = sc
    return sc
