"""Rebalancer's solver specs (``ProblemSolver.add_solver``): what each one asks of an exact
solve, read with errors that name the field.

An ``optimalSolverSpec`` becomes one solve with its ``solveTime`` as the time limit and its
``multiObjSolveSettings`` as an :class:`ObjectivePlan`; a ``localSearchSolverSpec`` (or a
staged one) becomes one solve with its ``solveTime`` too, which may instead be handed to the
wheel's own local search. Fields that tune Rebalancer's engines (move types, Xpress
arguments, output files) are accepted and have no effect on an exact solve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .errors import InputError
from .fields import Fields, check_integer, check_number, is_integer

MULTI_OBJECTIVE_TYPES = {"BLENDED": 0, "HIERARCHICAL": 1}  # SolverSpecs.thrift
INTENTS = {"MAX": 0}  # algopt_common Types.thrift
ARMS = ("optimalSolverSpec", "localSearchSolverSpec", "localSearchStageSolverSpec",
        "optimalSubsetSolverSpec")
OPTIMAL_FIELDS = ("printFullLp", "skipInitialAssignmentHint", "suppressLogs", "xpressArgs",
                  "xpressLogFile", "xpressTolerance", "skipMipSolveForTesting",
                  "solverPackage", "lpExprSubstitution", "enablePartitionHeuristic",
                  "simplifyLpProblem", "solverOutputFiles")


@dataclass(frozen=True)
class Allowance:
    """How far later positions may worsen a solved position of value v: up to
    ``max(v·(1 + percent/100), v + absolute)`` (Rebalancer's intent MAX)."""

    percent: Fraction
    absolute: Fraction

    def limit(self, value: Fraction) -> Fraction:
        return max(value * (1 + self.percent / 100), value + self.absolute)


@dataclass(frozen=True)
class ObjectivePlan:
    """Which tuple positions a solve optimizes and how (``multiObjSolveSettings``): those
    from ``first`` to ``last`` (inclusive; None: the last there is), in order
    (HIERARCHICAL) or as one sum (BLENDED); ``allowances`` by tuple position."""

    first: int = 0
    last: int | None = None
    blended: bool = False
    allowances: dict[int, Allowance] = field(default_factory=dict)

    @property
    def lexicographic(self) -> bool:
        """Whether this is the plain chain: every position, in order, none worsened."""
        return self.first == 0 and self.last is None and not self.blended and not self.allowances

    def covers(self, position: int) -> bool:
        return position >= self.first and (self.last is None or position <= self.last)


@dataclass(frozen=True)
class SolverStage:
    """One ``add_solver`` call: the kind of solver asked for, its time limit in seconds
    (None: no limit), its objective plan and the spec as given (for the wheel)."""

    arm: str
    seconds: float | None
    plan: ObjectivePlan
    spec: dict[str, Any]

    @property
    def local_search(self) -> bool:
        return self.arm in ("localSearchSolverSpec", "localSearchStageSolverSpec")


def parse_solver_spec(data: Any, path: str) -> SolverStage:
    """A ``SolverSpec`` union (``{"optimalSolverSpec": {...}}`` and the like)."""
    if not isinstance(data, dict) or len(data) != 1:
        raise InputError(path, 'expected exactly one solver spec, as {"optimalSolverSpec": '
                         '{...}} or {"localSearchSolverSpec": {...}}', data)
    arm, body = next(iter(data.items()))
    if arm not in ARMS:
        raise InputError(path, f"unknown solver spec (known: {', '.join(ARMS)})", arm)
    fields = Fields(body if body is not None else {}, f"{path}.{arm}")
    plan = ObjectivePlan()
    if arm == "optimalSubsetSolverSpec":
        seconds = _seconds(fields, "overallTime", integer=False)
        inner = fields.raw("optimalConfig")
        if inner is not None:
            optimal = Fields(inner, fields.at("optimalConfig"))
            plan = parse_plan(optimal.raw("multiObjSolveSettings"),
                              optimal.at("multiObjSolveSettings"))
        return SolverStage(arm, seconds, plan, data)
    seconds = _seconds(fields, "solveTime", integer=True)
    if arm == "optimalSolverSpec":
        plan = parse_plan(fields.raw("multiObjSolveSettings"), fields.at("multiObjSolveSettings"))
        for key in OPTIMAL_FIELDS:
            fields.raw(key)
        fields.done(arm)
    elif arm == "localSearchSolverSpec":
        moves = fields.raw("moveTypeList")
        if not moves and not fields.raw("moveTypes"):
            raise InputError(fields.at("moveTypeList"), "a local search needs at least one "
                             "move type (Rebalancer refuses an empty list)", moves)
    return SolverStage(arm, seconds, plan, data)


def _seconds(fields: Fields, key: str, *, integer: bool) -> float | None:
    """A solve time: Rebalancer's is whole seconds, 0 meaning at least 1 (as its optimal
    solver rounds it); negative times are refused."""
    value = fields.raw(key)
    if value is None:
        return None
    if integer and not is_integer(value):
        raise InputError(fields.at(key), "expected whole seconds (an integer)", value)
    seconds = check_number(value, fields.at(key))
    if seconds < 0:
        raise InputError(fields.at(key), "must not be negative", value)
    return max(float(seconds), 1.0)


def parse_plan(data: Any, path: str) -> ObjectivePlan:
    """``MultiObjectiveSolveSettings``. Keys of ``tuplePosToAllowedWorsening`` count from
    ``firstObjectiveIdx`` (the k-th objective solved), as the wheel's optimal solver reads
    them; the plan keeps them as tuple positions."""
    if data is None:
        return ObjectivePlan()
    fields = Fields(data, path)
    kind = fields.raw("solveType")
    blended = kind is not None and _member(kind, MULTI_OBJECTIVE_TYPES, fields.at("solveType"),
                                           "expected BLENDED (0) or HIERARCHICAL (1)") == "BLENDED"
    first, last = (_index(fields, key) for key in ("firstObjectiveIdx", "lastObjectiveIdx"))
    if first is not None and last is not None and first > last:
        raise InputError(fields.at("firstObjectiveIdx"), f"must not exceed lastObjectiveIdx "
                         f"({last})", first)
    first = first or 0
    allowances: dict[int, Allowance] = {}
    config = fields.raw("higherPriorityObjConfig")
    if config is not None:
        config_fields = Fields(config, fields.at("higherPriorityObjConfig"))
        where = config_fields.at("tuplePosToAllowedWorsening")
        worsening = config_fields.raw("tuplePosToAllowedWorsening")
        config_fields.done("higherPriorityObjConfig")
        if worsening is not None and not isinstance(worsening, dict):
            raise InputError(where, "expected a mapping {tuple position: AllowedWorsening}",
                             worsening)
        for key, value in (worsening or {}).items():
            index = _position_key(key, f"{where}.{key}")
            allowances[first + index] = _allowance(value, f"{where}.{key}")
    fields.raw("paramNamesToValues")  # solver parameters per objective: none apply here
    fields.done("multiObjSolveSettings")
    return ObjectivePlan(first, last, blended, allowances)


def _member(value: Any, members: dict[str, int], path: str, problem: str) -> str:
    """An enum member given by name or by Rebalancer's integer; its name."""
    if isinstance(value, str) and value in members:
        return value
    if is_integer(value):
        for name, number in members.items():
            if number == value:
                return name
    raise InputError(path, problem, value)


def _index(fields: Fields, key: str) -> int | None:
    value = fields.raw(key)
    if value is None:
        return None
    value = check_integer(value, fields.at(key), "a non-negative integer")
    if value < 0:
        raise InputError(fields.at(key), "must not be negative", value)
    return value


def _position_key(key: Any, path: str) -> int:
    """A map key: an integer, or its decimal text (JSON keys are strings)."""
    if isinstance(key, str) and key.isascii() and key.isdigit():
        key = int(key)
    if not is_integer(key) or key < 0:
        raise InputError(path, "expected a non-negative integer tuple position", key)
    return int(key)


def _allowance(data: Any, path: str) -> Allowance:
    fields = Fields(data, path)
    percent = fields.number("percent", 0.0)
    absolute = fields.number("absolute", 0.0)
    intent = fields.raw("intent")
    fields.done("AllowedWorsening")
    if intent is not None:
        _member(intent, INTENTS, f"{path}.intent", "expected MAX (0), the only intent there is")
    for key, value in (("percent", percent), ("absolute", absolute)):
        if value < 0 or not math.isfinite(value):
            raise InputError(f"{path}.{key}", "must be a non-negative number", value)
    return Allowance(Fraction(percent), Fraction(absolute))
