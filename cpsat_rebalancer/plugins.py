"""Where code named in data comes from: the project's registries, installed plugins, or (only
when the user allows code) a ``.py`` file.

A study names generators and heuristics by name. A name is looked up in the project's
registry first, then among the installed plugins: Python entry points of the groups
``cpsat_rebalancer.generators`` and ``cpsat_rebalancer.heuristics`` (installing a package
is the user's own act of trust). ``FILE.py:NAME`` runs the code in that file, and only with
``allow_code`` (``--allow-code`` on the command line); a data file may name only a file in
its own folder. Anything else (``os:system``, any ``module:attribute``) is refused with an
:class:`InputError` naming the field, before anything is imported.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

from .errors import InputError

GENERATOR_GROUP = "cpsat_rebalancer.generators"  # entry point groups
HEURISTIC_GROUP = "cpsat_rebalancer.heuristics"
ALLOW_CODE = "pass --allow-code (allow_code=True in Python) to run it"


def plugin(group: str, name: str) -> EntryPoint | None:
    """The installed entry point ``name`` of ``group`` (nothing is imported)."""
    for entry in entry_points(group=group):
        if entry.name == name:
            return entry
    return None


def plugin_names(group: str) -> list[str]:
    return sorted({entry.name for entry in entry_points(group=group)})


def load_plugin(entry: EntryPoint, where: str) -> Any:
    try:
        return entry.load()
    except Exception as exc:  # noqa: BLE001 - a broken plugin is the user's input error
        raise InputError(where, f"cannot load the plugin {entry.name} ({entry.value}): "
                         f"{type(exc).__name__}: {exc}") from None


@dataclass(frozen=True)
class CodeFile:
    """``FILE.py:NAME``, checked: ``path`` resolved, inside the allowed folder."""

    path: Path
    attribute: str


def code_file(reference: str, where: str, *, allow_code: bool,
              folder: Path | None = None) -> CodeFile | None:
    """``reference`` as ``FILE.py:NAME`` (None when it is not of that form). ``folder``: the
    folder of the data file that names it, which FILE is relative to and must lie inside
    (symbolic links resolved); None for the user's own command line (relative to the
    current folder, anywhere). Refused without ``allow_code``."""
    module, sep, attribute = reference.rpartition(":")
    if not sep or not module.endswith(".py"):
        return None
    if not attribute.isidentifier():
        raise InputError(where, "expected FILE.py:NAME", reference)
    base = Path.cwd() if folder is None else Path(folder).resolve()
    path = (base / module).resolve()
    if folder is not None and not path.is_relative_to(base):
        raise InputError(where, f"a .py file named by a data file must lie in its folder "
                         f"({base})", reference)
    if not allow_code:
        raise InputError(where, "runs the code in a .py file: " + ALLOW_CODE, reference)
    if not path.is_file():
        raise InputError(where, "file not found", reference)
    return CodeFile(path, attribute)


def load_code_file(code: CodeFile, where: str) -> Any:
    """Run the file as a module of its own (once per process) and return its ``NAME``."""
    name = "cpsat_rebalancer_code_" + hashlib.sha256(str(code.path).encode()).hexdigest()[:12]
    try:
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, code.path)
            if spec is None or spec.loader is None:
                raise ImportError(f"not a Python file: {code.path}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[name] = module
        return getattr(module, code.attribute)
    except Exception as exc:  # noqa: BLE001 - any failure of the user's code, named
        raise InputError(where, f"cannot load {code.attribute} from {code.path}: "
                         f"{type(exc).__name__}: {exc}") from None


def load_module_attribute(reference: str, where: str, *, allow_code: bool) -> Any:
    """``module:attribute`` typed by the user on the command line: imports any module, so
    only with ``allow_code``."""
    if not allow_code:
        raise InputError(where, "imports and runs a Python module: " + ALLOW_CODE, reference)
    module, _, attribute = reference.partition(":")
    try:
        return getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as exc:
        raise InputError(where, f"cannot load {reference}: {exc}") from None
