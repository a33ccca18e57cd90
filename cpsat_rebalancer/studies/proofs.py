"""Cheaper proofs for the probes of a minimum-capacity search (study field ``shortcuts:
true``): a full solve of a large scenario costs minutes even when the answer is plain, so a
probe is decided, in this order, by the first of

1. ``counting``: :func:`.search.counting_bound` above the probe's count proves it
   infeasible (no solve);
2. ``lp``: the linear relaxation over classes of identical objects and groups of identical
   containers (how many objects of each class go to each group, within the group's total
   capacity per dimension, only where one object fits one container): any placement gives a
   solution, so an infeasible LP proves the probe infeasible;
3. ``witness``: a placement that the library's own evaluator finds feasible, with the
   search's bucket at most its threshold, proves it feasible (no solve). Tried: the LP's
   solution rounded down and packed inside each group (worst fit), the rest first fit
   anywhere (it follows the LP's split of demand between container types, which plain
   first fit gets wrong: cpu-heavy GPU pods belong on nodes with many cores per GPU); then
   plain first fit (:mod:`.hints`);
4. ``restricted``: the objects that fit into no container outside the searched type
   (:func:`.search.restricted_objects`) must all sit on that type's containers; a solve of
   just those objects on just those containers is small. Proven infeasible, it proves the
   probe infeasible; feasible, its placement plus a first fit of the other objects into the
   room left is tried as a witness (as in 3);
5. ``patterns``: the configuration relaxation (:mod:`.patterns`: how many containers of
   each group hold each multiset of whole objects), by column generation with a dual bound
   that proves infeasibility when positive; otherwise a placement built by diving on it
   (fix whole patterns, re-solve, repeat; a CP-SAT repack of a small neighbourhood for
   objects left over) is tried as a witness. It sees what the pooled LP of step 2 cannot:
   room left inside each container that no whole object fits;
6. ``solve``: the full solve, started from the best placement found above (with
   ``shortcuts: only`` the probe is left unknown instead: on the full GPU trace a full solve
   takes minutes and, near the answer, ends without a placement or a bound).

Steps 1, 2, 4 and 5 rely on what feasibility means here: every constraint is a HARD capacity
that :func:`.search.hard_capacity_shares` counts, and the searched bucket holds only
toFreeSpec goals (count dimension) with a threshold of 0, so a feasible variant leaves the
freed containers empty and keeps every capacity. :func:`applicable` checks that; when it does
not hold, every probe is a full solve.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..api import solve_problem
from ..evaluate import evaluate
from ..result import INFEASIBLE, OPTIMAL, SolveResult
from ..scenario import Scenario, SolverOptions, parse_scenario
from .hints import first_fit, first_fit_into
from .patterns import class_groups, pattern_relaxation
from .search import (
    capacity_arrays,
    counting_bound,
    freed_containers,
    hard_capacity_shares,
    restricted_objects,
)

TOLERANCE = 1e-9
PATTERN_SECONDS = 120.0  # the pattern step's safety net when the study sets no time limit


@dataclass
class Decision:
    """How a probe was decided: ``verdict`` (feasible / infeasible / None: not decided),
    ``proof`` (counting, witness, restricted), the placement to start a full solve from
    (``{container: [objects]}``), and the restricted sub-solve's result (if any)."""

    verdict: str | None
    proof: str | None
    placement: dict[str, list[str]] | None = None
    sub_result: SolveResult | None = None
    restricted: int = 0  # objects in the restricted sub-problem


def applicable(data: dict, position: int | None, at_most: float) -> bool:
    """Whether the counting and restricted proofs are valid for this scenario and search."""
    if position is None or at_most > TOLERANCE:
        return False
    constraints = data.get("constraints", [])
    if len(constraints) != _counted_constraints(data):
        return False
    goals = _goals_at(data, position)
    return bool(goals) and all(
        "toFreeSpec" in g.get("spec", {}) and not g["spec"]["toFreeSpec"].get("dimension")
        for g in goals)


def _counted_constraints(data: dict) -> int:
    """Constraints that :func:`hard_capacity_shares` counts (tried one at a time)."""
    counted = 0
    for entry in data.get("constraints", []):
        single = {k: v for k, v in data.items() if k != "constraints"}
        single["constraints"] = [entry]
        counted += bool(hard_capacity_shares(single))
    return counted


def _goals_at(data: dict, position: int) -> list[dict]:
    """The goals of the bucket at ``position`` (buckets are split by boundary markers)."""
    buckets: list[list[dict]] = [[]]
    for goal in data.get("goals", []):
        if isinstance(goal, dict) and goal.get("boundary"):
            buckets.append([])
        elif isinstance(goal, dict):
            buckets[-1].append(goal)
    return buckets[position] if 0 <= position < len(buckets) else []


def witness(scenario: Scenario, placement: dict[str, list[str]] | None,
            position: int, at_most: float) -> bool:
    """Whether ``placement`` keeps every hard constraint with the bucket at most ``at_most``,
    by the library's evaluator (independent of how the placement was found)."""
    if placement is None:
        return False
    result = evaluate(scenario.problem, scenario.model,
                      scenario.problem.assignment_array(placement, "witness"))
    return bool(result.feasible) and result.positions.get(position, 0.0) <= at_most + TOLERANCE


def decide(data: dict, scenario: Scenario, scope: str, item: str, count: int,
           position: int, at_most: float, options: SolverOptions) -> Decision:
    """Steps 1-3 of the module docstring for the probe ``containers.SCOPE.ITEM = count``."""
    if counting_bound(data, scope, item) > count:
        return Decision("infeasible", "counting")
    shares = lp_shares(data)
    if shares is None:
        return Decision("infeasible", "lp")
    placed = lp_first_fit(data, shares)
    if witness(scenario, placed, position, at_most):
        return Decision("feasible", "witness", placed)
    placed = first_fit(data)
    if witness(scenario, placed, position, at_most):
        return Decision("feasible", "witness", placed)
    restricted = set(restricted_objects(data, scope, item))
    result = None
    if restricted:
        sub = _restricted_scenario(data, scope, item, restricted)
        sub_scenario = parse_scenario(sub)
        result = solve_problem(sub_scenario.problem, sub_scenario.model, options)

        sub_verdict = verdict(result, position, at_most)
        if sub_verdict == "infeasible":
            return Decision("infeasible", "restricted", None, result, len(restricted))
        if sub_verdict == "feasible":
            fixed = copy.deepcopy(data)
            moved = {o: c for c, objs in _named(sub_scenario, result).items() for o in objs}
            for container, objects in fixed["assignment"].items():
                fixed["assignment"][container] = [o for o in objects if o not in moved]
            for o, c in moved.items():
                fixed["assignment"][c].append(o)
            combined = first_fit(fixed)
            if witness(scenario, combined, position, at_most):
                return Decision("feasible", "restricted", combined, result, len(restricted))
            placed = combined or placed
    patterns = pattern_relaxation(data, seconds=options.time_limit or PATTERN_SECONDS,
                                  seed=options.seed)
    if patterns.proven_infeasible:
        return Decision("infeasible", "patterns", None, result, len(restricted))
    if witness(scenario, patterns.placement, position, at_most):
        return Decision("feasible", "patterns", patterns.placement, result, len(restricted))
    return Decision(None, None, placed, result, len(restricted))


@dataclass
class Shares:
    """An LP solution: ``count[k, g]`` objects of class k in container group g."""

    classes: np.ndarray  # class per object
    groups: np.ndarray  # group per container (-1 for freed containers)
    count: np.ndarray


def lp_shares(data: dict) -> Shares | None:
    """The linear relaxation of step 2 (GLOP), over every object (any of them may move: an
    object held in place would make it a restriction, not a proof): None when it is
    infeasible."""
    from ortools.linear_solver import pywraplp

    grouped = class_groups(data)
    sizes, counts = grouped.sizes, grouped.demand
    kinds, members = grouped.limits, grouped.members
    fits = (sizes[:, None, :] <= kinds[None, :, :] + 1e-9).all(axis=2)
    solver = pywraplp.Solver.CreateSolver("GLOP")
    x = {(k, g): solver.NumVar(0, float(counts[k]), "") for k, g in zip(*np.nonzero(fits))}
    for k in range(len(sizes)):
        terms = [x[k, g] for g in np.flatnonzero(fits[k])]
        if not terms:
            return None
        solver.Add(solver.Sum(terms) == float(counts[k]))
    # rows scaled to shares of the group's capacity (GLOP's tolerances are absolute); the
    # feasibility question first, so only a clean INFEASIBLE counts as a proof
    rows = []
    for g in range(len(kinds)):
        for d in range(sizes.shape[1]):
            capacity = float(members[g] * kinds[g, d])
            terms = [x[k, g] * float(sizes[k, d] / capacity) if capacity > 0 else x[k, g]
                     for k in np.flatnonzero(fits[:, g]) if sizes[k, d] > 0]
            if terms:  # (a zero capacity leaves no fitting class with a positive size)
                rows.append((d, solver.Sum(terms)))
                solver.Add(rows[-1][1] <= 1.0)
    status = solver.Solve()
    if status == pywraplp.Solver.INFEASIBLE:
        return None
    if status != pywraplp.Solver.OPTIMAL:
        raise ArithmeticError(f"the LP relaxation ended with GLOP status {status}")
    count = np.zeros((len(sizes), len(kinds)))
    for (k, g), var in x.items():
        count[k, g] = var.solution_value()
    # then the largest share of any group's capacity used, minimized: a balanced split
    # leaves room everywhere for packing whole objects (where GLOP's tolerances make that
    # second solve fail at the edge of feasibility, the first split stands)
    peak = solver.NumVar(0, 1, "peak")
    for _, share in rows:
        solver.Add(share <= peak)
    solver.Minimize(peak)
    if solver.Solve() == pywraplp.Solver.OPTIMAL:
        for (k, g), var in x.items():
            count[k, g] = var.solution_value()
    return Shares(grouped.class_of, grouped.group_of, count)


def lp_first_fit(data: dict, shares: Shares) -> dict[str, list[str]] | None:
    """Step 3's rounding: per group, floor(LP count) objects of each class, largest first,
    each into the group's container with the most room left (worst fit spreads them the way
    the LP's balanced split does); every object left, first fit anywhere, the ones that fit
    into the fewest containers first. None when some object fits nowhere."""
    containers, objects, size, limit, where = capacity_arrays(data)
    load = np.zeros_like(limit)
    final = where.copy()
    closed = shares.groups < 0
    scale = np.where(limit.max(axis=0) > 0, limit.max(axis=0), 1.0)
    weight = (size / scale).max(axis=1) if size.shape[1] else np.zeros(len(objects))
    quota = np.floor(shares.count + 1e-6).astype(np.int64)
    left: list[int] = []
    for o in sorted(range(len(objects)), key=lambda o: (-weight[o], o)):
        k = shares.classes[o]
        for g in np.flatnonzero(quota[k] > 0):
            fits = (shares.groups == g) & (load + size[o] <= limit + 1e-9).all(axis=1)
            if fits.any():
                room = ((limit - load) / scale).sum(axis=1)
                c = int(np.argmax(np.where(fits, room, -np.inf)))
                final[o], quota[k, g] = c, quota[k, g] - 1
                load[c] += size[o]
                break
        else:
            left.append(o)
    eligible = {o: int(((size[o] <= limit[~closed] + 1e-9).all(axis=1)).sum()) for o in left}
    final = first_fit_into(sorted(left, key=lambda o: (eligible[o], -weight[o], o)), final,
                           size, limit, load, closed)
    if final is None:
        return None
    placement: dict[str, list[str]] = {c: [] for c in containers}
    for o, c in zip(objects, final):
        placement[containers[c]].append(o)
    return placement


def _named(scenario: Scenario, result: SolveResult) -> dict[str, list[str]]:
    problem = scenario.problem
    placement: dict[str, list[str]] = {c: [] for c in problem.containers}
    for o, c in enumerate(np.asarray(result.final)):
        placement[problem.containers[int(c)]].append(problem.objects[o])
    return placement


def _restricted_scenario(data: dict, scope: str, item: str, restricted: set[str]) -> dict:
    """Only the restricted objects, on ITEM's containers and the containers they start on
    (toFreeSpec lists reduced to the containers kept)."""
    mapping = data.get("scopes", {}).get(scope, {})
    start = {c for c, objs in data["assignment"].items() if restricted.intersection(objs)}
    keep = {c for c in data["assignment"] if mapping.get(c) == item} | start
    keep |= {c for c in data.get("containers", []) if mapping.get(c) == item}
    sub: dict[str, Any] = {k: v for k, v in data.items()
                           if k not in ("assignment", "containers", "objects")}
    sub["assignment"] = {c: [o for o in objs if o in restricted]
                         for c, objs in data["assignment"].items() if c in keep}
    for c in keep - set(sub["assignment"]):
        sub["assignment"][c] = []
    sub["objectDimensions"] = {d: {o: v for o, v in values.items() if o in restricted}
                               for d, values in data.get("objectDimensions", {}).items()}
    sub["containerDimensions"] = {d: {c: v for c, v in values.items() if c in keep}
                                  for d, values in data.get("containerDimensions", {}).items()}
    sub["scopes"] = {name: {c: i for c, i in values.items() if c in keep}
                     for name, values in data.get("scopes", {}).items()}
    if "partitions" in data:
        sub["partitions"] = {name: {g: [o for o in members if o in restricted]
                                    for g, members in groups.items()}
                             for name, groups in data["partitions"].items()}
    freed = freed_containers(data)
    for kind in ("goals", "constraints"):
        entries = []
        for entry in copy.deepcopy(data.get(kind, [])):
            body = entry.get("spec", {}).get("toFreeSpec") if isinstance(entry, dict) else None
            if isinstance(body, dict):
                body["containers"] = [c for c in body.get("containers", [])
                                      if c in keep and c in freed]
            entries.append(entry)
        sub[kind] = entries
    return sub


def verdict(result: SolveResult, position: int | None, at_most: float) -> str:
    """feasible (a solution shows it), infeasible (a proof: CP-SAT's INFEASIBLE, or a proven
    bound above ``at_most`` at ``position``), or unknown."""
    if result.status == INFEASIBLE:
        return "infeasible"
    if not result.final_evaluation.feasible:
        return "unknown"
    if position is None:
        return "feasible"
    bucket = next((b for b in result.buckets if b.position == position), None)
    value = result.final_evaluation.positions.get(position, 0.0)
    if value <= at_most + TOLERANCE:
        return "feasible"
    if bucket is not None and bucket.leximin_levels is None:
        if bucket.status == OPTIMAL or (
                bucket.bound is not None
                and bucket.bound > at_most + TOLERANCE):
            return "infeasible"
    return "unknown"
