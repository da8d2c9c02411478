"""Safe YAML reading with strict keys, shared by the hardware, model and validation loaders."""

from __future__ import annotations

import difflib
import math
import os
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from planner.errors import SpecError

#: the largest integer a spec may give: 2**53, the last one a float64 holds exactly (every count a
#: model or system has is far below it, and the sweeps compute in float64)
MAX_INTEGER = 2**53

#: "1e6": a number in scientific notation without a decimal point, which YAML 1.1 (PyYAML) reads
#: as text
_SCI_TEXT = re.compile(r"\s*[-+]?\d+(\.\d*)?[eE][-+]?\d+\s*")


def as_number(value: Any) -> Any:
    """``value``, or the number a YAML 1.1 reader left as text because it is written like
    ``1e6`` (scientific notation without a decimal point); anything else unchanged."""
    if isinstance(value, str) and _SCI_TEXT.fullmatch(value):
        return float(value)
    return value


def yaml_number(x: float, digits: int = 4) -> str:
    """``x`` to ``digits`` significant digits as YAML reads back a float: ``2e-17`` is a string
    to a YAML 1.1 reader such as PyYAML, ``2.0e-17`` a number."""
    t = f"{x:.{digits}g}"
    mant, e, exp = t.partition("e")
    return f"{mant}.0e{exp}" if e and "." not in mant else t

#: libyaml's safe loader when available (same semantics, ~10x faster), else the pure-Python one.
_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: Values a document may expand to through its aliases: a spec has a few thousand; a few hundred
#: bytes of nested aliases (a "billion laughs" document) expand to billions for whatever walks
#: the result.
MAX_EXPANDED_NODES = 1_000_000


def _expanded_nodes(root: Any) -> float:
    """Values the composed YAML ``root`` stands for once every alias is expanded (each shared node
    counted each time it is reached; computed once per node)."""
    memo: dict[int, float] = {}

    def size(node: Any) -> float:
        key = id(node)
        if key in memo:
            return memo[key]
        memo[key] = 1.0  # (a node reached again through itself counts once)
        if isinstance(node, yaml.SequenceNode):
            n = 1.0 + sum(size(v) for v in node.value)
        elif isinstance(node, yaml.MappingNode):
            n = 1.0 + sum(size(k) + size(v) for k, v in node.value)
        else:
            n = 1.0
        memo[key] = n
        return n

    return size(root) if root is not None else 0.0


class _DuplicateKey(ValueError):
    pass


class _SafeLoader(_BASE_LOADER):  # type: ignore[misc, valid-type]
    """The safe loader, refusing a mapping that gives one key twice (YAML keeps the last one
    silently)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                continue  # reported by the base constructor
            if key in seen:
                line = key_node.start_mark.line + 1 if key_node.start_mark else 0
                raise _DuplicateKey(f"each key once; {key!r} is given twice (line {line})")
            seen[key] = True
        return super().construct_mapping(node, deep=deep)


_SafeLoader.add_constructor("tag:yaml.org,2002:map", _SafeLoader.construct_yaml_map)


def _yaml_12_numbers(loader: Any) -> None:
    """Numbers as YAML 1.2 reads them: YAML 1.1's underscores (``1_32`` -> 132), base-60 forms
    (``2:12`` -> 132) and binary, octal and hex integers are text, which a spec's number field
    then refuses in one line, instead of a different number than the one meant."""
    int_tag, float_tag = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
    resolvers = {k: [(t, r) for t, r in v if t not in (int_tag, float_tag)]
                 for k, v in loader.yaml_implicit_resolvers.items()}
    loader.yaml_implicit_resolvers = resolvers
    loader.add_implicit_resolver(int_tag, re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"), list("-+0123456789"))
    loader.add_implicit_resolver(
        float_tag,
        re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*|[0-9]+)(?:[eE][-+]?[0-9]+)?"
                   r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
        list("-+.0123456789"))


_yaml_12_numbers(_SafeLoader)
_SAFE_LOADER = _SafeLoader


def path_kind(path: Path | str) -> str | None:
    """What a user-given name is on disk: ``"file"``, ``"dir"``, ``"other"`` (a device, a FIFO), or
    None when there is nothing there, or the name cannot be looked up at all (too long, a NUL
    byte, a component that is a file): a probe never raises."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return "dir" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other"


def read_text(path: Path | str, label: str | None = None) -> str:
    """A UTF-8 text file's content (a leading byte-order mark dropped, as editors on Windows write
    one); a missing or unreadable file is a SpecError naming it."""
    label = label or str(path)
    if path_kind(path) == "other":  # a FIFO or a device would block or never end
        raise SpecError(label, "file", "a regular file (this is a pipe, socket or device)")
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SpecError(label, "file", "no such file") from None
    except OSError as exc:
        why = exc.strerror or exc.__class__.__name__
        raise SpecError(label, "file", f"a readable UTF-8 text file ({why})") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise SpecError(label, "file", f"a readable UTF-8 text file ({exc.__class__.__name__})") from None


def read_yaml(path: Path | str, label: str | None = None) -> dict[str, Any]:
    """Load one YAML mapping safely (no object-constructing tags); errors name the file."""
    label = label or str(path)
    return parse_yaml(read_text(path, label), label)


def parse_yaml(text: str, label: str) -> dict[str, Any]:
    """A YAML document that is a mapping of fields (:func:`load_yaml`)."""
    doc = load_yaml(text, label)
    if not isinstance(doc, dict):
        raise SpecError(label, "document", f"a mapping of fields, got {type(doc).__name__}")
    return doc


def load_yaml(text: str, label: str) -> Any:
    """A YAML document of any shape, read safely: numbers as YAML 1.2 writes them (``1_000`` and
    ``2:12`` are text), each key once, aliases that expand to at most :data:`MAX_EXPANDED_NODES`
    values; whatever is wrong a SpecError naming ``label``."""
    if "*" in text:
        try:
            expanded = _expanded_nodes(yaml.compose(text, Loader=_SAFE_LOADER))
        except (yaml.YAMLError, RecursionError):
            expanded = 0  # the load below says what is wrong
        if expanded > MAX_EXPANDED_NODES:
            raise SpecError(label, "yaml", f"a document whose aliases (*name) expand to at most "
                            f"{MAX_EXPANDED_NODES:,} values, got {expanded:,.3g}")
    try:
        doc = yaml.load(text, Loader=_SAFE_LOADER)  # safe: no object-constructing tags
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "malformed YAML"
        raise SpecError(label, "yaml", f"valid YAML ({problem}{at})") from None
    except RecursionError:
        raise SpecError(label, "yaml", "a YAML document of reasonable nesting depth") from None
    except _DuplicateKey as exc:
        raise SpecError(label, "yaml", str(exc)) from None
    except (ValueError, OverflowError, TypeError) as exc:
        # a value the YAML types cannot hold: a date such as 2026-13-45, an integer of more digits
        # than Python converts (4,300), a key that is a list
        why = " ".join(str(exc).split())[:160]
        raise SpecError(label, "yaml", f"values YAML can read ({why})") from None
    return doc


def written_plainly(cell: str) -> bool:
    """Whether a data file's cell (a CSV's) is written as a number should be: in ASCII, without
    underscores.  Python's ``float`` reads ``1_000`` as 1000 and fullwidth (``１２``) or
    Arabic-Indic digits as ASCII ones, where a writer meant something else or nothing; commas and
    spaces inside a number it refuses by itself."""
    return cell.isascii() and "_" not in cell


class Fields:
    """A strict view of one mapping in a spec: every key must be known and read.

    ``Fields(doc, label, prefix)`` remembers which keys were taken; :meth:`done` raises for
    any key left unread (an unknown field), suggesting the closest known name.
    """

    def __init__(self, doc: Any, label: str, prefix: str = "") -> None:
        if not isinstance(doc, Mapping):
            raise SpecError(label, prefix or "document", f"a mapping, got {type(doc).__name__}")
        self.doc = doc
        self.label = label
        self.prefix = prefix
        self.known: set[str] = set()

    def path(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def has(self, key: str) -> bool:
        self.known.add(key)
        return key in self.doc and self.doc[key] is not None

    def raw(self, key: str, required: bool = True, default: Any = None) -> Any:
        self.known.add(key)
        if key not in self.doc or self.doc[key] is None:
            if required:
                raise SpecError(self.label, self.path(key), "a value (the field is missing)")
            return default
        return self.doc[key]

    def sub(self, key: str, required: bool = True) -> Fields | None:
        value = self.raw(key, required)
        if value is None:
            return None
        return Fields(value, self.label, self.path(key))

    def integer(self, key: str, required: bool = True, default: int | None = None,
                minimum: int = 1, maximum: int = MAX_INTEGER) -> int | None:
        value = self.raw(key, required, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(self.label, self.path(key), f"an integer, got {value!r}")
        if value < minimum:
            raise SpecError(self.label, self.path(key), f"an integer >= {minimum}, got {value}")
        if value > maximum:
            raise SpecError(self.label, self.path(key), f"an integer <= {maximum}, got {value}")
        return value

    def number(self, key: str, lo: float = 0.0, hi: float = math.inf, required: bool = True,
               default: float | None = None, lo_open: bool = True) -> float | None:
        value = as_number(self.raw(key, required, default))
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SpecError(self.label, self.path(key), f"a number, got {value!r}")
        value = float(value)
        low_ok = value > lo if lo_open else value >= lo
        if not math.isfinite(value) or not low_ok or value > hi:
            bounds = f"{'>' if lo_open else '>='} {lo:g}" + (f" and <= {hi:g}" if math.isfinite(hi) else "")
            raise SpecError(self.label, self.path(key), f"a finite number {bounds}, got {value!r}")
        return value

    def text(self, key: str, required: bool = True, default: str | None = None,
             choices: Iterable[str] | None = None) -> str | None:
        value = self.raw(key, required, default)
        if value is None:
            return None
        if not isinstance(value, str):
            raise SpecError(self.label, self.path(key), f"text, got {value!r}")
        if choices is not None:
            choices = list(choices)
            if value not in choices:
                raise SpecError(self.label, self.path(key), f"one of {', '.join(choices)}, got {value!r}")
        return value

    def boolean(self, key: str, default: bool = False) -> bool:
        value = self.raw(key, False, default)
        if not isinstance(value, bool):
            raise SpecError(self.label, self.path(key), f"true or false, got {value!r}")
        return value

    def done(self) -> None:
        for key in self.doc:
            if key not in self.known:
                close = difflib.get_close_matches(str(key), sorted(self.known), n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                known = ", ".join(sorted(self.known))
                raise SpecError(self.label, self.path(str(key)),
                                f"a known field{hint}; known fields here: {known}")


def suggest(name: str, names: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(names), n=3, cutoff=0.4)
    return f" (did you mean {', '.join(close)}?)" if close else ""
