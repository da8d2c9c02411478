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
from importlib import metadata, resources
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
    h = hashlib.sha256()
    for dist in distributions:
        try:
            h.update(f"{dist}={metadata.version(dist)};".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{dist}=?;".encode())
    for mod in modules:
        h.update(resources.files(package).joinpath(f"{mod}.py").read_bytes())
    return h.hexdigest()[:20]


def entry_path(kind: str, key: Any) -> Path | None:
    """Where the entry ``kind`` with ``key`` (any repr-able value) lives; None without a cache."""
    directory = cache_dir()
    if directory is None:
        return None
    digest = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
    return directory / f"{kind}-{digest}.json"


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
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(doc), "utf-8")
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError):
        pass
