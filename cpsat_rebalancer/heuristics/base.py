"""The heuristic interface, the registry, and the pieces the built-in heuristics share.

A heuristic is any object with a ``name`` and ``assign(instance) -> assignment``, where the
assignment is an index array (container index per object, as :class:`Problem` orders them)
or ``{container: [objects]}``. The :class:`Instance` carries the indexed problem, the goals
and constraints (so a heuristic can aim at them), and the scenario dict itself (for
heuristics that hand the problem to another tool, as the Rebalancer ones do).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import InputError
from ..evaluate import Evaluation
from ..plugins import (
    ALLOW_CODE,
    HEURISTIC_GROUP,
    CodeFile,
    code_file,
    load_code_file,
    load_module_attribute,
    load_plugin,
    plugin,
    plugin_names,
)
from ..problem import OUT_OF_SCOPE, Problem, Scope
from ..scenario import Model, parse_scenario

TOLERANCE = 1e-9  # relative tolerance when comparing values of two assignments


@dataclass(frozen=True)
class Instance:
    """What a heuristic sees: the problem, the model, and the scenario dict they came from."""

    problem: Problem
    model: Model
    data: dict = field(repr=False)

    @classmethod
    def from_dict(cls, data: dict) -> Instance:
        scenario = parse_scenario(data)
        return cls(scenario.problem, scenario.model, data)


@runtime_checkable
class Heuristic(Protocol):
    name: str

    def assign(self, instance: Instance) -> np.ndarray | dict[str, list[str]]: ...


@dataclass(frozen=True)
class HeuristicOptions:
    """Settings a heuristic may use; each takes what applies to it."""

    time_limit: float | None = None  # seconds (the Rebalancer solvers)
    seed: int = 0
    peer_python: str | None = None  # interpreter with the rebalancer wheel
    move_types: tuple[str, ...] | None = None  # Rebalancer local search move types
    max_moves: int | None = None  # greedy-balance: stop after this many moves


REGISTRY: dict[str, Callable[[HeuristicOptions], Heuristic]] = {}
NEEDS_PEER: set[str] = set()


def register(name: str, needs_peer: bool = False):
    """Decorator: make a factory ``f(options) -> Heuristic`` known under ``name``."""
    def decorate(factory: Callable[[HeuristicOptions], Heuristic]):
        REGISTRY[name] = factory
        if needs_peer:
            NEEDS_PEER.add(name)
        return factory
    return decorate


class _FunctionHeuristic:
    def __init__(self, name: str, function: Callable[[Instance], Any]):
        self.name = name
        self.function = function

    def assign(self, instance: Instance):
        return self.function(instance)


def check_heuristic(name: str, where: str = "--heuristic", *, allow_code: bool = False,
                    folder: Path | None = None) -> None:
    """Refuse (:class:`InputError` at ``where``) a heuristic name :func:`make_heuristic`
    would refuse, without importing anything."""
    _reference(name, where, allow_code, folder)


def _reference(name: str, where: str, allow_code: bool, folder: Path | None) -> Any:
    """What ``name`` refers to: a built-in's name, an entry point, a checked code file, or
    (the command line only, with ``allow_code``) ``module:attribute``."""
    if name in REGISTRY:
        return name
    code = code_file(name, where, allow_code=allow_code, folder=folder)
    if code is not None:
        return code
    if ":" not in name:
        entry = plugin(HEURISTIC_GROUP, name)
        if entry is None:
            known = ", ".join(sorted(REGISTRY))
            installed = plugin_names(HEURISTIC_GROUP)
            raise InputError(where, f"unknown heuristic (built in: {known}"
                             + ("; installed plugins: " + ", ".join(installed)
                                if installed else "")
                             + "; or your own as FILE.py:NAME, with --allow-code)", name)
        return entry
    if folder is not None:
        raise InputError(where, "a data file may name a built-in heuristic, an installed "
                         "plugin, or FILE.py:NAME in its folder (with --allow-code), never a "
                         "module", name)
    if not allow_code:
        raise InputError(where, "imports and runs a Python module: " + ALLOW_CODE, name)
    return name


def make_heuristic(name: str, options: HeuristicOptions | None = None, *,
                   allow_code: bool = False, folder: Path | None = None,
                   where: str = "--heuristic") -> Heuristic:
    """A heuristic by name: a built-in, or an installed plugin (entry point group
    ``cpsat_rebalancer.heuristics``). With ``allow_code``, also your own code as
    ``FILE.py:NAME`` or ``module:attribute`` (a class taking no arguments, an object with
    ``assign``, or a function ``f(instance) -> assignment``). ``folder``: the folder of the
    data file (a study) naming it, which a ``FILE.py`` must lie in; a module is then refused.
    """
    options = options or HeuristicOptions()
    reference = _reference(name, where, allow_code, folder)
    if isinstance(reference, CodeFile):
        target = load_code_file(reference, where)
    elif isinstance(reference, EntryPoint):
        target = load_plugin(reference, where)
    elif reference in REGISTRY:
        return REGISTRY[name](options)
    else:
        target = load_module_attribute(name, where, allow_code=allow_code)
    if isinstance(target, type):
        target = target()
    if hasattr(target, "assign"):
        if not getattr(target, "name", None):
            target.name = name
        return target
    if callable(target):
        return _FunctionHeuristic(name, target)
    raise InputError(where, "expected a class, an object with assign(instance), or a "
                     "function", name)


def as_array(problem: Problem, assignment: Any, what: str = "assignment") -> np.ndarray:
    """A heuristic's answer as a checked index array."""
    if isinstance(assignment, dict):
        return problem.assignment_array(assignment, path=what)
    array = np.asarray(assignment)
    if array.shape != (problem.num_objects,) or not np.issubdtype(array.dtype, np.integer):
        raise InputError(what, f"expected {problem.num_objects} container indices or a "
                         "{container: [objects]} mapping", type(assignment).__name__)
    if len(array) and (array.min() < 0 or array.max() >= problem.num_containers):
        raise InputError(what, "container index out of range")
    return array.astype(np.int64)


# --------------------------------------------------------------------------- shared pieces


@dataclass(frozen=True)
class Target:
    """What the built-in heuristics balance or pack: one dimension on one scope."""

    scope: Scope
    dimension: str
    items: np.ndarray  # indices of the items that count (the spec's filter, capacity > 0)
    source: str  # which spec chose it

    def relative_util(self, problem: Problem, final: np.ndarray) -> np.ndarray:
        """AFTER utilization / capacity of every item of the scope (inf for capacity 0)."""
        items = self.scope.container_item[final]
        inside = items != OUT_OF_SCOPE
        util = np.bincount(items[inside], weights=problem.object_dims[self.dimension][inside],
                           minlength=len(self.scope.items))
        caps = self.scope.capacity(self.dimension)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(caps > 0, util / np.where(caps > 0, caps, 1), np.inf)


def balanced_target(problem: Problem, model: Model) -> Target:
    """The first Balance goal (lowest tuple position, then order given); otherwise the first
    UtilIncreaseCost goal, Capacity goal or constraint, or other spec with a scope and a
    dimension; otherwise object counts per container."""
    specs = [g.spec for g in sorted(model.goals, key=lambda g: g.position)]
    specs += [c.spec for c in model.constraints]
    preference = {"balanceSpec": 0, "utilIncreaseCostSpec": 1, "capacitySpec": 2}
    for spec in sorted(specs, key=lambda s: preference.get(s.arm, 3)):  # stable
        scope = getattr(spec, "scope", None)
        dimension = getattr(spec, "dimension", None)
        if isinstance(scope, Scope) and isinstance(dimension, str) and dimension:
            caps = scope.capacity(dimension)
            items = getattr(spec, "items", None)
            if not isinstance(items, np.ndarray) or items.dtype == bool:
                items = np.flatnonzero(caps > 0)
            items = np.asarray([i for i in items if caps[i] > 0], dtype=np.int64)
            if len(items):
                return Target(scope, dimension, items, f"{spec.arm} {spec.name}")
    scope = problem.container_scope
    return Target(scope, problem.count_dimension, np.arange(len(scope.items)), "object count")


class MoveRules:
    """Moves the constraints forbid outright: fixed objects, non-accepting containers."""

    def __init__(self, problem: Problem, model: Model):
        fixed: set[int] = set()
        closed: set[int] = set()
        for _, restriction in model.restrictions:
            fixed |= restriction.fixed_objects
            closed |= restriction.non_accepting
        self.problem = problem
        self.fixed = np.zeros(problem.num_objects, bool)
        self.fixed[list(fixed)] = True
        self.accepting = np.ones(problem.num_containers, bool)
        self.accepting[list(closed)] = False

    def allowed(self, obj: int) -> np.ndarray:
        """Containers ``obj`` may end in."""
        initial = self.problem.initial[obj]
        if self.fixed[obj]:
            mask = np.zeros(self.problem.num_containers, bool)
        else:
            mask = self.accepting.copy()
        mask[initial] = True
        return mask


def bucket_order(position: int, a: Evaluation, b: Evaluation,
                 tolerance: float = TOLERANCE) -> int:
    """-1 when ``a`` is better than ``b`` at tuple ``position``, 1 when worse, 0 on a tie;
    leximin order where both evaluations have it (IDEAL alone in its bucket)."""
    if position in a.leximin and position in b.leximin:
        for x, y in zip(a.leximin[position], b.leximin[position]):
            if abs(x - y) > tolerance * max(1.0, abs(x), abs(y)):
                return -1 if x < y else 1
        return 0
    x, y = a.positions.get(position, 0.0), b.positions.get(position, 0.0)
    if abs(x - y) <= tolerance * max(1.0, abs(x), abs(y)):
        return 0
    return -1 if x < y else 1


def tuple_order(a: Evaluation, b: Evaluation,
                tolerance: float = TOLERANCE) -> tuple[int, int | None]:
    """Lexicographic comparison over tuple positions: (order, deciding position)."""
    for position in sorted(set(a.positions) | set(b.positions)):
        order = bucket_order(position, a, b, tolerance)
        if order:
            return order, position
    return 0, None
