"""Solve a scenario with Meta's Rebalancer itself: its local search or its HiGHS optimal solver.

The wheel runs in the peer interpreter (see :mod:`.bridge`); the scenario is sent exactly as
given (enum names turned into the wheel's integers, blank names filled in) with one solver
spec, and the wheel's final assignment, its own objective values and its timing come back.

* ``local-search``: ``localSearchSolverSpec`` with a ``moveTypeList`` (default single moves
  and swaps; any ``MoveTypeSpec`` arm can be named, see :func:`move_type_specs`), the time
  limit as ``solveTime`` (whole seconds, rounded up) and ``randomSeed``.
* ``optimal-highs``: ``optimalSolverSpec`` with ``solverPackage`` HiGHS (the wheel has no
  XPRESS) and the time limit as ``solveTime`` (whole seconds, at least 1; shared by its
  hierarchical solves of the tuple positions, as ours is). Rebalancer sets HiGHS's gap
  limits to 0, so its ``OPTIMAL`` end reason is a proof (up to HiGHS's tolerances). When
  HiGHS finds no solution in time, Rebalancer returns the initial assignment.

Values the wheel reports are in its solver's flavour: local search reports continuous
surrogates where a spec has them (ToFree MINIMIZE_OCCUPIED_CONTAINERS), the optimal solver
discrete values (see docs/semantics.md#local-search-and-optimal-solver). Evaluate the
returned assignment with :func:`cpsat_rebalancer.evaluate` (or :func:`.evaluate_with_wheel`)
to compare like with like.
"""

from __future__ import annotations

import copy
import math
import re
import time
from collections.abc import Sequence
from typing import Any

from ..errors import InputError
from ..solver_specs import INTENTS, MULTI_OBJECTIVE_TYPES, parse_plan
from .bridge import (
    call_peer,
    normalise_scenario,
    require_peer_python,
    scenario_run,
)

SOLVERS = ("local-search", "optimal-highs")
DEFAULT_MOVE_TYPES = ("single", "swap")
END_REASONS = {1: "OPTIMAL", 2: "HIT_TIME_LIMIT", 3: "HIT_MOVE_LIMIT", 4: "HIT_STOP_CONSTRAINT",
               5: "HIT_PLATEAU_TIME", 6: "NO_SOLUTION_FOUND", 7: "HIT_STAGE_MOVE_LIMIT",
               8: "HIT_EXCEPTION", 9: "UNABLE_TO_FIND_MORE_MOVES",
               10: "HIT_MIN_CYCLE_OBJECTIVE_IMPROVEMENT"}  # Types.thrift EndReason
HIGHS = 2  # OptimalSolverPackage


def move_type_specs(move_types: Sequence[str | dict] | None) -> list[dict]:
    """``MoveTypeSpec`` dicts from short names (``single``, ``swap``, ``singleGreedy``,
    ``tripleLoop``, ``klSearch``, ...: the arm without ``MoveTypeSpec``), full arm names
    (``swapMoveTypeSpec``) or ready dicts (``{"swapMoveTypeSpec": {"greedyOnSrc": true}}``)."""
    result = []
    for k, item in enumerate(DEFAULT_MOVE_TYPES if move_types is None else move_types):
        if isinstance(item, dict):
            if len(item) != 1:
                raise InputError(f"moveTypes[{k}]", "expected one MoveTypeSpec arm", item)
            result.append(item)
            continue
        if not isinstance(item, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9]*", item):
            raise InputError(f"moveTypes[{k}]", "expected a move type name such as single, "
                             "swap, singleGreedy or tripleLoop", item)
        arm = item if item.endswith("MoveTypeSpec") else f"{item}MoveTypeSpec"
        result.append({arm[0].lower() + arm[1:]: {}})
    if not result:
        raise InputError("moveTypes", "local search needs at least one move type")
    return result


def solver_spec(solver: str, time_limit: float | None = None,
                move_types: Sequence[str | dict] | None = None, seed: int = 0) -> dict:
    """The wheel's ``SolverSpec`` for ``solver`` (``local-search`` or ``optimal-highs``)."""
    if time_limit is not None and time_limit <= 0:
        raise InputError("time_limit", "must be positive", time_limit)
    seconds = None if time_limit is None else max(1, math.ceil(time_limit))
    if solver == "local-search":
        spec: dict[str, Any] = {"moveTypeList": move_type_specs(move_types), "randomSeed": seed}
        if seconds is not None:
            spec["solveTime"] = seconds
        return {"localSearchSolverSpec": spec}
    if solver == "optimal-highs":
        spec = {"solverPackage": HIGHS, "suppressLogs": True}
        if seconds is not None:
            spec["solveTime"] = seconds
        return {"optimalSolverSpec": spec}
    raise InputError("solver", f"unknown Rebalancer solver (expected one of {', '.join(SOLVERS)})",
                     solver)


def scenario_solver_spec(scenario: dict, solver: str, time_limit: float | None = None,
                         move_types: Sequence[str | dict] | None = None, seed: int = 0) -> dict:
    """:func:`solver_spec` for ``scenario``: its optimal solver also gets the scenario's
    ``solver.multiObjSolveSettings``, with the enum names the wheel reads as integers."""
    spec = solver_spec(solver, time_limit, move_types, seed)
    options = scenario.get("solver")
    settings = options.get("multiObjSolveSettings") if isinstance(options, dict) else None
    if solver == "optimal-highs" and settings is not None:
        parse_plan(settings, "solver.multiObjSolveSettings")  # bad settings: named here
        settings = copy.deepcopy(settings)
        kind = settings.get("solveType")
        if kind in MULTI_OBJECTIVE_TYPES:
            settings["solveType"] = MULTI_OBJECTIVE_TYPES[kind]
        worsening = (settings.get("higherPriorityObjConfig") or {}).get(
            "tuplePosToAllowedWorsening") or {}
        for allowance in worsening.values():
            if allowance.get("intent") in INTENTS:
                allowance["intent"] = INTENTS[allowance["intent"]]
        spec["optimalSolverSpec"]["multiObjSolveSettings"] = settings
    return spec


def _positions(summary: dict | None) -> dict[str, float]:
    if not summary:
        return {}
    return {str(p): float(goal["value"]) for p, goal in enumerate(summary.get("goals", []))}


def solve_with_wheel(
    scenario: dict,
    solver: str = "local-search",
    *,
    time_limit: float | None = None,
    move_types: Sequence[str | dict] | None = None,
    seed: int = 0,
    peer_python: str | None = None,
    timeout: float | None = None,
    spec: dict | None = None,
) -> dict:
    """Solve ``scenario`` (our scenario dict) with Rebalancer's ``solver``, or with ``spec``
    (a ``SolverSpec`` dict, handed to the wheel as given; ``solver`` then names its kind).

    Returns a dict:

    * ``assignment``: ``{container: [objects]}``, every container listed; ``moves``: how many
      objects changed container;
    * ``positions`` / ``initialPositions``: the wheel's own per-tuple-position sums
      (``finalGlobalObjective`` / ``initialGlobalObjective``), keys ``"0"``, ``"1"``, ...;
      ``goals``: per goal (in order) its weighted value in the final assignment;
      ``constraints``: per constraint its violation (``finalConstraint``);
    * ``flavour``: ``continuous`` (local search) or ``discrete`` (optimal solver), and
      ``surrogate``: whether a goal's reported value is a surrogate in this flavour;
    * ``endReason`` (the wheel's, e.g. ``UNABLE_TO_FIND_MORE_MOVES``, ``OPTIMAL``,
      ``HIT_TIME_LIMIT``); for ``optimal-highs`` also ``proven`` (end reason OPTIMAL),
      ``noFeasibleSolution`` and ``gaps`` (per solved objective: relative, absolute, found);
    * ``seconds``: wall time of the whole peer call (interpreter start, building, solving);
      ``solveSeconds``: the wheel's ``solve()`` alone.
    """
    python = require_peer_python(peer_python)
    sc = normalise_scenario(scenario)
    if spec is None:
        spec = scenario_solver_spec(scenario, solver, time_limit, move_types, seed)
    run = scenario_run(sc, spec)
    run["report"] = True
    if timeout is None:
        timeout = 3600.0 if time_limit is None else 3 * time_limit + 600.0
    started = time.perf_counter()
    (result,) = call_peer(python, [run], timeout)
    seconds = time.perf_counter() - started

    where = result["assignment"]
    assignment: dict[str, list[str]] = {c: [] for c in sc.containers}
    for obj in sc.initial:
        assignment[where.get(obj, sc.initial[obj])].append(obj)
    weighted = {o["name"]: float(o["value"])
                for p in (result.get("finalGlobalObjective") or {}).get("goals", [])
                for o in p.get("objs", [])}
    violations = {c["name"]: float(c["value"])
                  for c in (result.get("finalConstraint") or {}).get("constraints", [])}
    summaries = result.get("solverSummaries") or [{}]
    end = summaries[-1].get("endReason")
    answer: dict[str, Any] = {
        "solver": solver,
        "assignment": assignment,
        "moves": sum(1 for obj, c in sc.start.items() if where.get(obj, c) != c),
        "positions": _positions(result.get("finalGlobalObjective")),
        "initialPositions": _positions(result.get("initialGlobalObjective")),
        "goals": [{"index": g.index, "name": g.name,
                   "weighted": weighted.get(f"__goal{g.index}")} for g in sc.goals],
        "constraints": [{"index": c.index, "name": c.name,
                         "value": violations.get(f"__constraint{c.index}")}
                        for c in sc.constraints],
        "flavour": "continuous" if solver == "local-search" else "discrete",
        "surrogate": solver == "local-search" and any(g.mip for g in sc.goals),
        "endReason": END_REASONS.get(end, str(end)),
        "seconds": seconds,
        "solveSeconds": result.get("solveSeconds"),
    }
    if solver == "optimal-highs":
        profile = (result.get("problemProfile") or {}).get("optimalSolverProfile") or {}
        answer["proven"] = answer["endReason"] == "OPTIMAL"
        answer["noFeasibleSolution"] = bool(profile.get("noFeasibleSolution", False))
        answer["gaps"] = [{"relative": (s.get("gap") or {}).get("relative"),
                           "absolute": (s.get("gap") or {}).get("absolute"),
                           "found": s.get("solverFoundSolution")}
                          for s in profile.get("solverStatsForObjectives") or []]
    return answer


__all__ = ["DEFAULT_MOVE_TYPES", "SOLVERS", "move_type_specs", "scenario_solver_spec",
           "solve_with_wheel", "solver_spec"]
