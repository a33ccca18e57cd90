"""cpsat-rebalancer: Rebalancer's declarative specs, solved exactly with OR-Tools CP-SAT.

The names below are imported on first use, so that ``cpsat-rebalancer --help`` (and any
import of a light module) does not load OR-Tools, pandas and the spec registry."""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS = {
    "InputError": "errors",
    "InternalError": "errors",
    "ProblemSolver": "api",
    "SolveResult": "result",
    "evaluate": "evaluate",
    "load_scenario": "scenario",
    "parse_scenario": "scenario",
    "solve_problem": "api",
    "solve_scenario": "api",
    "ProgressEvent": "progress",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # once found, an ordinary attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


class _Package(types.ModuleType):
    """The package, whose exported names win over its submodules of the same name: importing
    the submodule ``evaluate`` would otherwise replace the function ``evaluate`` here (the
    submodule stays in ``sys.modules``, and ``from cpsat_rebalancer.evaluate import ...``
    works as ever)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
