"""Finding specs: bundled names (package data) or paths to YAML / Hugging Face config.json."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path

from planner.errors import SpecError
from planner.specs.hardware import (
    Hardware,
    bundled_calibration_path,
    load_hardware_file,
    parse_with_calibration,
)
from planner.specs.model import Model, parse_model
from planner.specs.reading import parse_yaml, path_kind, suggest


def _bundled(package: str) -> dict[str, str]:
    root = resources.files(package)
    return {p.name[:-5]: p.name for p in root.iterdir() if p.name.endswith(".yaml")}


def hardware_names() -> list[str]:
    return sorted(_bundled("planner.hardware_specs"))


def canonical_hardware_name(name: str) -> str | None:
    """The bundled system a usual spelling names (``"GB200 NVL72"``, ``"gb200"``, ``"GB200-NVL72"``,
    ``"H200"``, ``"HGX H200"``, ``"MI355X"``), or None: case, spaces and underscores aside, the
    bundled name itself, with the ``hgx-`` of an 8-GPU board added, or with the ``-nvl72`` of a
    rack added."""
    if not isinstance(name, str):
        return None
    n = "-".join(name.strip().lower().replace("_", " ").replace("-", " ").split())
    n = n.removeprefix("nvidia-").removeprefix("amd-").removeprefix("instinct-")
    names = set(hardware_names())
    for c in (n, f"hgx-{n}", f"{n}-nvl72", f"{n}-server"):
        if c in names:
            return c
    return None


def model_names() -> list[str]:
    return sorted(_bundled("planner.model_specs"))


def _looks_like_path(name: str) -> bool:
    return "/" in name or name.endswith((".yaml", ".yml", ".json")) or path_kind(name) == "file"


def source_checkout() -> Path | None:
    """The repository the package runs from (its ``setup.cfg`` and ``.git`` beside ``planner/``),
    or None for an installed package."""
    pkg = Path(str(resources.files("planner")))
    root = pkg.parent
    if (root / "setup.cfg").is_file() and (root / ".git").exists() and "site-packages" not in pkg.parts:
        return root
    return None


def bundled_hardware_path(name: str) -> Path:
    """The file of bundled system ``name`` (what ``calibrate --write`` rewrites)."""
    return Path(str(resources.files("planner.hardware_specs").joinpath(f"{name}.yaml")))


def bundled_hardware_text(name: str) -> str:
    """Bundled system ``name`` as one self-contained spec: its datasheet, then its calibration's
    blocks (what a user copies to change a fact or an efficiency)."""
    sheet = bundled_hardware_path(name).read_text("utf-8").rstrip("\n")
    cal = bundled_calibration_path(name)
    if not cal.is_file():
        return sheet + "\n"
    lines = [ln for ln in cal.read_text("utf-8").splitlines() if not ln.startswith("calibrates:")]
    return sheet + "\n" + "\n".join(lines).rstrip("\n") + "\n"


def parse_bundled(name: str, calibration_text: str) -> Hardware:
    """Bundled system ``name`` with ``calibration_text`` as its calibration file (a writer's check
    that a new calibration still loads before it is written)."""
    path = bundled_calibration_path(name)
    doc = parse_yaml(calibration_text, str(path))
    if not isinstance(doc, dict) or doc.get("calibrates") != name:
        raise SpecError(str(path), "calibrates", f"the name of the system it calibrates ({name!r})")
    sheet = parse_yaml(bundled_hardware_path(name).read_text("utf-8"), f"hardware_specs/{name}.yaml")
    return parse_with_calibration(sheet, f"hardware_specs/{name}.yaml",
                                  {k: v for k, v in doc.items() if k != "calibrates"}, str(path))


@lru_cache(maxsize=64)
def _bundled_hardware(name: str) -> Hardware:
    return load_hardware_file(bundled_hardware_path(name), f"hardware_specs/{name}.yaml")


@lru_cache(maxsize=64)
def _bundled_model(name: str) -> Model:
    text = resources.files("planner.model_specs").joinpath(f"{name}.yaml").read_text("utf-8")
    label = f"model_specs/{name}.yaml"
    return parse_model(parse_yaml(text, label), label)


def load_hardware(name: str | Hardware) -> Hardware:
    """A bundled system by name (``"gb200-nvl72"``) or a YAML file by path."""
    if isinstance(name, Hardware):
        return name
    if not isinstance(name, str) or not name:
        raise SpecError("<input>", "hardware", f"a hardware name or path, got {name!r}")
    if "@" in name and path_kind(name) is None:
        # NAME@STACK: the system with the efficiencies fitted for that serving stack
        if name.count("@") > 1:
            raise SpecError("<input>", "hardware", f"NAME or NAME@STACK (one stack), got {name!r}")
        base, _, stack = name.rpartition("@")
        return load_hardware(base).with_stack(stack)
    if name in hardware_names():
        return _bundled_hardware(name)
    if _looks_like_path(name):
        return load_hardware_file(name)
    canonical = canonical_hardware_name(name)
    if canonical is not None:
        return _bundled_hardware(canonical)
    raise SpecError("<input>", "hardware",
                    f"a known system, got {name!r}{suggest(name, hardware_names())}; "
                    f"known: {', '.join(hardware_names())}")


def load_systems(names: Sequence[str | Hardware], field: str = "hardware") -> list[Hardware]:
    """Several systems, each under a name of its own (what tables, plots and JSON keys show).

    A system keeps its spec's ``name:`` unless another shares it; those that share one are told
    apart by NAME@STACK where their serving stacks differ, else by their spec files' stems, else
    by the files' paths.  The same system twice is a SpecError naming ``field``."""
    hws = [load_hardware(n) for n in names]
    labels = [h.name for h in hws]
    ways: tuple[Callable[[Hardware], str], ...] = (
        lambda h: f"{h.name}@{h.stack}" if h.stack else h.name,
        lambda h: Path(h.path).stem if h.path else h.name,
        lambda h: h.path or h.name,
    )
    for name in sorted({n for n in labels if labels.count(n) > 1}):
        group = [i for i, h in enumerate(hws) if h.name == name]
        others = {labels[i] for i in range(len(hws)) if i not in group}
        for way in ways:
            new = [way(hws[i]) for i in group]
            if len(set(new)) == len(new) and not set(new) & others:
                for i, label in zip(group, new, strict=True):
                    labels[i] = label
                break
        else:
            raise SpecError("<input>", field, f"different systems, got {name!r} more than once")
    return [h if h.name == label else dataclasses.replace(h, name=label) for h, label in zip(hws, labels,
                                                                                               strict=True)]


def load_model(name: str | Model) -> Model:
    """A bundled model by name, a model YAML by path, or a Hugging Face ``config.json``."""
    if isinstance(name, Model):
        return name
    if not isinstance(name, str) or not name:
        raise SpecError("<input>", "model", f"a model name or path, got {name!r}")
    if name in model_names():
        return _bundled_model(name)
    # a checkpoint directory named without a slash (``--model ckpt``) is as much a path as ``ckpt/``
    # where it holds a config.json (a directory of another name stays a name to look up)
    if _looks_like_path(name) or path_kind(Path(name, "config.json")) == "file":
        if name.endswith(".json") or path_kind(name) == "dir":
            from planner.specs.hfconfig import load_hf_config

            return load_hf_config(name)
        from planner.specs.model import load_model_file

        return load_model_file(name)
    where = " (a directory, but without a config.json)" if path_kind(name) == "dir" else ""
    raise SpecError("<input>", "model",
                    f"a known model, got {name!r}{where}{suggest(name, model_names())}; "
                    f"known: {', '.join(model_names())}")
