"""Rebalancer's solver specs (``ProblemSolver.add_solver``): what each one asks of an exact
solve, read with errors that name the field.

An ``optimalSolverSpec`` becomes one solve with its ``solveTime`` as the time limit and its
``multiObjSolveSettings`` as an :class:`ObjectivePlan`; a ``localSearchSolverSpec`` becomes
one solve with its ``solveTime`` too, which may instead be handed to the wheel's own local
search. A ``localSearchStageSolverSpec`` becomes one solve of the positions its stages
optimize, with the time its stages may take; what a staged search means that one exact solve
cannot (move budgets, allowed worsening inside a stage, stages that leave a position
behind) is refused when it runs exactly, naming the field. Fields that tune Rebalancer's
engines (move types, Xpress arguments, output files) are accepted and have no effect on an
exact solve.
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
    # what an exact solve cannot honour, as (field path, why, value): refused when the stage
    # runs exactly; Rebalancer's own local search (the wheel) takes the spec as it is
    inexact: tuple[tuple[str, str, Any], ...] = ()

    def check_exact(self) -> None:
        """Refuse, naming the field, what an exact solve of this stage cannot honour."""
        if self.inexact:
            path, problem, value = self.inexact[0]
            raise InputError(path, problem, value)

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
        _check_move_types(fields)
    elif arm == "localSearchStageSolverSpec":
        return _staged(fields, seconds, data)
    return SolverStage(arm, seconds, plan, data)


def _check_move_types(fields: Fields) -> None:
    """A LocalSearchSolverSpec's move types: at least one, as Rebalancer's checker wants."""
    moves = fields.raw("moveTypeList")
    if not moves and not fields.raw("moveTypes"):
        raise InputError(fields.at("moveTypeList"), "a local search needs at least one "
                         "move type (Rebalancer refuses an empty list)", moves)


STAGE_SOLVER_TUNING = ("recomputeContainerOrderingAfterEveryMove",
                       "exploreMovesFromContainersNotInObjective",
                       "customEquivalenceSetConfig", "hottestTraversalConfig",
                       "parallelExecutionConfig")
MOVE_BUDGET = ("a move budget stops a local search after that many moves, which an exact "
               "solve cannot honour; leave it out, or solve with local_search='wheel'")


def _staged(fields: Fields, master: float | None, data: dict[str, Any]) -> SolverStage:
    """A ``localSearchStageSolverSpec``. Stage k optimizes tuple positions [begin, end)
    lexicographically while holding [0, begin) no worse than it found them. When the first
    stage begins at 0 and each later one begins within the positions already optimized
    and ends no earlier than they do, optimizing every stage exactly is the lexicographic
    optimum of positions [0, last end): one exact solve with that plan. Its time is what the
    stages may take in Rebalancer (solverSpec.solveTime each, within the master solveTime
    and the multiStageConfigs' times, at least minRuntimeSec)."""
    inexact: list[tuple[str, str, Any]] = []
    stages = fields.raw("stageSpecs")
    where = fields.at("stageSpecs")
    if not isinstance(stages, list) or not stages:
        raise InputError(where, "expected a list of at least one LocalSearchStageSpec", stages)
    budget = fields.raw("stopAfterMoves")
    if budget is not None and check_integer(budget, fields.at("stopAfterMoves")) >= 0:
        inexact.append((fields.at("stopAfterMoves"), MOVE_BUDGET, budget))
    groups = _multi_stage_configs(fields, len(stages), inexact)
    for key in STAGE_SOLVER_TUNING:
        fields.raw(key)
    fields.done("localSearchStageSolverSpec")
    elapsed, reached = 0.0, 0
    used: list[float] = []
    for k, stage in enumerate(stages):
        path = f"{where}[{k}]"
        f = Fields(stage, path)
        begin, end = _index(f, "begin") or 0, _index(f, "end") or 0
        if begin >= end:
            raise InputError(f.at("end"), f"must exceed begin ({begin}), as Rebalancer's "
                             "checker requires", end)
        if begin > reached:
            why = ("the first stage must begin at 0: positions before it would be held, "
                   "not optimized" if k == 0 else
                   f"position{'s' if begin - reached > 1 else ''} "
                   f"{reached}{f' to {begin - 1}' if begin - reached > 1 else ''} would be "
                   "held before any stage optimized them")
            inexact.append((f.at("begin"), f"{why}; an exact solve cannot honour that", begin))
        elif end < reached:
            inexact.append((f.at("end"), f"ends before position {reached - 1}, which an "
                            "earlier stage optimized and this one would leave free to "
                            "worsen; an exact solve cannot honour that", end))
        reached = max(reached, end)
        if f.raw("higherPriorityObjConfig") is not None:
            inexact.append((f.at("higherPriorityObjConfig"), "allowed worsening inside a "
                            "staged local search is not supported by an exact solve",
                            f.raw("higherPriorityObjConfig")))
        till = f.raw("stopAfterMovesTillStage")
        if till is not None and check_integer(till, f.at("stopAfterMovesTillStage")) >= 0:
            inexact.append((f.at("stopAfterMovesTillStage"), MOVE_BUDGET, till))
        least = _seconds(f, "minRuntimeSec", integer=True, at_least_one=False) or 0.0
        f.text("name")
        inner = Fields(f.raw("solverSpec") or {}, f.at("solverSpec"))
        _check_move_types(inner)
        stage_budget = inner.raw("stopAfterMoves")
        if stage_budget is not None and check_integer(
                stage_budget, inner.at("stopAfterMoves")) >= 0:
            inexact.append((inner.at("stopAfterMoves"), MOVE_BUDGET, stage_budget))
        most = _seconds(inner, "solveTime", integer=True, at_least_one=False)
        f.done("LocalSearchStageSpec")
        # as Rebalancer allots it: the stage's own limit within what the master limit and
        # every multi-stage group holding the stage leave, and never below minRuntimeSec
        allotted = math.inf if most is None else most
        if master is not None:
            allotted = min(allotted, max(0.0, master - elapsed))
        for members, seconds in groups:
            if k in members and seconds is not None:
                allotted = min(allotted, max(0.0, seconds - sum(used[j] for j in members
                                                                 if j < k)))
        allotted = max(least, allotted)
        used.append(allotted)
        elapsed += allotted
    seconds = None if math.isinf(elapsed) else max(elapsed, 1.0)
    return SolverStage("localSearchStageSolverSpec", seconds, ObjectivePlan(0, reached - 1),
                       data, tuple(inexact))


def _multi_stage_configs(fields: Fields, count: int, inexact: list[tuple[str, str, Any]]
                         ) -> list[tuple[set[int], float | None]]:
    """``multiStageConfigs``: each a set of stage indices with a shared time (and move
    budget, which an exact solve cannot honour)."""
    groups = []
    where = fields.at("multiStageConfigs")
    configs = fields.raw("multiStageConfigs") or []
    if not isinstance(configs, list):
        raise InputError(where, "expected a list of MultiStageConfig", configs)
    for k, config in enumerate(configs):
        f = Fields(config, f"{where}[{k}]")
        ids = f.raw("stageIds") or []
        if not isinstance(ids, list):
            raise InputError(f.at("stageIds"), "expected a list of stage indices", ids)
        members = set()
        for j, stage in enumerate(ids):
            index = check_integer(stage, f"{f.at('stageIds')}[{j}]", "a stage index")
            if not 0 <= index < count:
                raise InputError(f"{f.at('stageIds')}[{j}]", f"no such stage (there are "
                                 f"{count})", stage)
            members.add(index)
        limit = f.raw("moveLimit")
        if limit is not None and check_integer(limit, f.at("moveLimit")) >= 0:
            inexact.append((f.at("moveLimit"), MOVE_BUDGET, limit))
        groups.append((members, _seconds(f, "solveTime", integer=False, at_least_one=False)))
        f.done("MultiStageConfig")
    return groups


def _seconds(fields: Fields, key: str, *, integer: bool, at_least_one: bool = True
             ) -> float | None:
    """A solve time: Rebalancer's is whole seconds, 0 meaning at least 1 (as its optimal
    solver rounds it; ``at_least_one`` False keeps it as given, for a stage's share);
    negative times are refused."""
    value = fields.raw(key)
    if value is None:
        return None
    if integer and not is_integer(value):
        raise InputError(fields.at(key), "expected whole seconds (an integer)", value)
    seconds = check_number(value, fields.at(key))
    if seconds < 0:
        raise InputError(fields.at(key), "must not be negative", value)
    return max(float(seconds), 1.0) if at_least_one else float(seconds)


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
