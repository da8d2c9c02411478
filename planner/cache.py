"""A small on-disk cache of derived text (generated code, parsed quantities), so that a second
run need not import sympy or pint.

Entries live in ``$XDG_CACHE_HOME/moe-planner`` (default ``~/.cache/moe-planner``) as JSON,
under a key that hashes whatever they are derived from; a changed source makes a new entry.
``MOE_PLANNER_NO_CACHE=1`` turns the cache off (everything is then derived afresh, only
slower).  A cache that cannot be read or written is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any


def cache_dir() -> Path | None:
    """The cache directory, or None when the cache is turned off."""
    if os.environ.get("MOE_PLANNER_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "moe-planner"


def source_key(package: str, modules: tuple[str, ...], distributions: tuple[str, ...] = ()) -> str:
    """A hash of the source of ``modules`` of ``package`` and the installed versions of
    ``distributions`` (e.g. ``("sympy",)``)."""
    from importlib import metadata  # only here: it costs a command's start 20 ms

    h = hashlib.sha256()
    for dist in distributions:
        try:
            h.update(f"{dist}={metadata.version(dist)};".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{dist}=?;".encode())
    for mod in modules:
        h.update(resources.files(package).joinpath(f"{mod}.py").read_bytes())
    return h.hexdigest()[:20]


def entry_name(kind: str, key: Any) -> str:
    """The file name of the entry ``kind`` with ``key`` (any repr-able value)."""
    return f"{kind}-{hashlib.sha256(repr(key).encode()).hexdigest()[:24]}.json"


def entry_path(kind: str, key: Any) -> Path | None:
    """Where the entry ``kind`` with ``key`` (any repr-able value) lives; None without a cache."""
    directory = cache_dir()
    if directory is None:
        return None
    return directory / entry_name(kind, key)


#: The entries shipped with the package (``planner/generated``, written by
#: ``scripts/bundle_generated_code.py``): the generated code of the call signatures the main
#: commands use and the parsed quantities of the bundled specs, so that a fresh install's first
#: run need not import sympy or pint.  Their keys hash the package's own sources only (not the
#: installed sympy, numpy or pint: generated numpy source and SI floats do not depend on them).
BUNDLE_ENV = "MOE_PLANNER_BUNDLE"


def bundled(kind: str, key: Any) -> Any:
    """The shipped entry ``kind`` with ``key``, or None (none shipped, the cache turned off, or
    ``MOE_PLANNER_NO_BUNDLE=1``: everything not in the user's cache derived afresh)."""
    if cache_dir() is None or os.environ.get("MOE_PLANNER_NO_BUNDLE"):
        return None
    try:
        text = resources.files("planner").joinpath("generated", entry_name(kind, key)).read_text("utf-8")
        return json.loads(text)
    except (OSError, ValueError):
        return None


def record(kind: str, key: Any, doc: Any) -> None:
    """With ``MOE_PLANNER_BUNDLE`` set to a directory (``scripts/bundle_generated_code.py``), write
    ``doc`` there as the shipped entry ``kind`` with ``key``; otherwise nothing."""
    directory = os.environ.get(BUNDLE_ENV)
    if directory:
        write(Path(directory) / entry_name(kind, key), doc)


def read(path: Path | None) -> Any:
    """The JSON document at ``path``, or None if there is none or it cannot be read."""
    if path is None:
        return None
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None


def write(path: Path | None, doc: Any) -> None:
    """Write ``doc`` as JSON at ``path`` through a temporary file and a rename; failures are
    ignored (the cache only saves time)."""
    if path is None:
        return
    try:
        write_bytes(path, json.dumps(doc).encode("utf-8"))
    except (TypeError, ValueError):
        pass


def read_bytes(path: Path | None) -> bytes | None:
    """The bytes at ``path``, or None if there are none or they cannot be read."""
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError:
        return None


def remove(path: Path | None) -> None:
    """Remove the entry at ``path`` (one found bad, so that it is not read again); failures are
    ignored."""
    if path is None:
        return
    try:
        path.unlink()
    except OSError:
        pass


def write_bytes(path: Path | None, data: bytes) -> None:
    """Write ``data`` at ``path`` through a temporary file and a rename; failures are ignored."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        pass
