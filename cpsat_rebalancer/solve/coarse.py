"""The coarse relaxation: the model without the specs that tell objects apart by their
partition groups, solved first where that merges many object classes, and its answer lifted
back to the whole model (docs/compiling.md#coarse-relaxation).

Every assignment of the whole model is one of the relaxation's, with the same value at every
tuple position but for the terms left out, which are never below 0. So when the relaxation
is proven at every position and an assignment keeps the whole model's hard rules with the
same values there (the terms left out at 0), that assignment is optimal: each position meets
the relaxation's bound, which holds once the positions before it are at their optima.

The lift swaps objects alike for the specs kept (the dimensions they read; named by no
spec): every spec the relaxation kept sees the same counts and the same stays, so only the
specs left out change. It spreads the objects that move over the partition groups and, where
they land, over the scope items; the evaluator judges the result, so a lift that fails costs
time, never exactness. Where the relaxation's answer is no optimum of the whole model, the
lift is the whole model's start and the bounds it proves stay.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from ..cpsat.classes import ObjectClasses, integral_scale, item_groups, object_classes
from ..cpsat_parameters import new_solver
from ..evaluate import Evaluation, evaluate
from ..primitives import TOLERANCE, MoveBudget, Restrictions
from ..problem import Problem
from ..result import FEASIBLE, OPTIMAL, BucketReport, SolveResult
from ..scenario import Model, SolverOptions
from .accelerate import tuples
from .compile import classes_may_span_containers
from .positions import EXACT, FLOAT_NOISE

COARSE_MERGE = 2  # the relaxation runs when it has at most 1/COARSE_MERGE of the classes
LIFT_SECONDS = 5.0  # at most, for the choice of the objects that stay within move budgets
LIFT_WORK = 2.0  # deterministic time of that choice: what makes a run repeatable


@dataclass(frozen=True)
class Relaxation:
    problem: Problem  # the problem without partitions
    model: Model  # without the specs that read groups


def class_count(problem: Problem, model: Model) -> int:
    """Object classes the compiler would build for ``model`` (see CpBuilder)."""
    return len(object_classes(problem, model.named_objects() | set(model.fixed_objects)
                              | set(model.held),
                              by_initial_container=not classes_may_span_containers(model),
                              dims=model.dimensions() | {problem.count_dimension}).members)


def relaxation(problem: Problem, model: Model, options: SolverOptions) -> Relaxation | None:
    """The coarse relaxation, where it is valid and worth a solve: some goal or HARD
    constraint reads partition groups; every goal left out has a weight of at least 0 and a
    value never below 0, and no other goal at its position is ordered leximin (the
    relaxation's bucket there would not be the whole model's); the relaxation has at most
    1/COARSE_MERGE of the object classes. None otherwise."""
    if problem.origin is not None or not options.plan.lexicographic:
        return None
    dropped_goals = [g for g in model.goals if g.spec.reads_groups()]
    dropped_constraints = [c for c in model.constraints if c.spec.reads_groups()]
    if not dropped_goals and not dropped_constraints:
        return None
    if any(c.policy != "HARD" for c in dropped_constraints):
        return None  # a soft term of a group spec: its floor is not known here
    if any(g.weight < 0 or not g.spec.nonnegative for g in dropped_goals):
        return None
    goals = [g for g in model.goals if not g.spec.reads_groups()]
    constraints = [c for c in model.constraints if not c.spec.reads_groups()]
    shared = {g.position for g in dropped_goals}
    if any(g.position in shared and getattr(g.spec, "has_leximin", False) for g in goals):
        return None
    relaxed = Relaxation(
        dataclasses.replace(problem, partitions={}),
        Model(goals, constraints,
              [(spec, r) for spec, r in model.restrictions if not spec.reads_groups()]))
    if class_count(relaxed.problem, relaxed.model) * COARSE_MERGE > class_count(problem, model):
        return None
    return relaxed


def with_budgets(problem: Problem, model: Model, relaxed: Relaxation) -> Relaxation | None:
    """The relaxation with the move budgets of the specs it leaves out (``Model.
    with_budget_stays``): still a relaxation, and an answer of it lifts to the whole model
    with the same values at the positions it keeps. None where no such budget is stated
    (or a budget weighs its members unequally)."""
    budgets = _budgets(problem, model)
    kept = relaxed.model.with_budget_stays(budgets, _alike(problem, model).of_object)
    return None if not budgets or kept is None else Relaxation(relaxed.problem, kept)


def stayers(budgeted: Relaxation, final: np.ndarray) -> Relaxation:
    """The relaxation with the objects fixed that keep the move budgets of ``budgeted``
    (its last constraint) on an answer ``final`` of the relaxation without them: per
    budget, first those the answer can keep home (the largest flow through its cells'
    stays), then, for the rest of what it needs, members whose containers hold the least
    share of their capacity home so far. A restriction, not a relaxation: its bounds
    prove nothing, but its answers keep the budgets, which makes them starts for
    ``budgeted``."""
    problem = budgeted.problem
    spec = budgeted.model.constraints[-1].spec  # the budgets' (with_budget_stays)
    chosen = spec.kept_home(problem.initial, final, problem.num_containers)
    fixed = {obj for kept in chosen for obj in kept}
    share = _shares(problem, budgeted.model)
    held = np.bincount(problem.initial[sorted(fixed)], weights=share[sorted(fixed)],
                       minlength=problem.num_containers)
    for members, need, kept in zip(spec.members, spec.needs.tolist(), chosen):
        rest = [o for o in members.tolist() if o not in kept]
        for _ in range(need - len(kept)):  # each where the least is held home so far
            obj = min(rest, key=lambda o: (held[problem.initial[o]] + share[o], o))
            rest.remove(obj)
            fixed.add(obj)
            held[problem.initial[obj]] += share[obj]
    return _fixed_home(budgeted, fixed)


def routed_stayers(budgeted: Relaxation, answer: SolveResult) -> Relaxation | None:
    """The relaxation with the objects fixed home that ``answer``'s last configuration LP
    routes the budgets' stays through (per budget, its cells by their flow, the largest
    first, then any where rounding fell short): the LP's optimum is often nearly whole
    there, and the restriction then reaches about what the LP says. None when ``answer``
    is proven or its LP routed nothing."""
    spec = budgeted.model.constraints[-1].spec  # the budgets' (with_budget_stays)
    routes = spec.routed(answer.lp_values)
    if answer.status == OPTIMAL or routes is None:
        return None
    problem = budgeted.problem
    fixed: set[int] = set()
    for members, need, route in zip(spec.members, spec.needs.tolist(), routes):
        taken = 0
        for value, first in sorted(route, key=lambda r: (-r[0], r[1])):
            if taken >= need:
                break
            alike = [o for o in members.tolist() if spec.kind[o] == spec.kind[first]
                     and problem.initial[o] == problem.initial[first] and o not in fixed]
            chosen = alike[:min(need - taken, max(1, round(value)))]
            fixed.update(chosen)
            taken += len(chosen)
        rest = [o for o in members.tolist() if o not in fixed]  # where rounding fell short
        fixed.update(rest[:max(0, need - taken)])
    return _fixed_home(budgeted, fixed)


def better_answer(budgeted: Relaxation, answer: SolveResult, final: np.ndarray
                  ) -> SolveResult:
    """``answer`` with ``final`` (an assignment of the same model) in its place where that
    is lexicographically better: each position keeps its bound (valid for every
    assignment) and is OPTIMAL where the new value meets it and every position before is
    OPTIMAL."""
    evaluation = evaluate(budgeted.problem, budgeted.model, final)
    if (not evaluation.feasible or any(r.leximin_levels is not None for r in answer.buckets)
            or not tuples.better(tuples.tuple_key(evaluation),
                                 tuples.tuple_key(answer.final_evaluation))):
        return answer
    reports, holds = [], True
    for report in answer.buckets:
        value = evaluation.positions.get(report.position, 0.0)
        gap = None if report.bound is None else max(0.0, value - report.bound)
        holds = holds and gap is not None and gap <= EXACT * abs(value) + FLOAT_NOISE
        reports.append(dataclasses.replace(
            report, status=OPTIMAL if holds else FEASIBLE,
            termination="optimal" if holds else report.termination
            if report.termination != "optimal" else "time_limit",
            objective=value, gap=gap, compiled_objective=None,
            relative_gap=None if gap is None else gap / abs(value) if value else 0.0))
    return dataclasses.replace(answer, status=OPTIMAL if holds else FEASIBLE,
                               termination="optimal" if holds else answer.termination,
                               final=final, final_evaluation=evaluation, buckets=reports)


def _fixed_home(budgeted: Relaxation, fixed: set[int]) -> Relaxation:
    """The relaxation (``budgeted`` without its budgets) with ``fixed`` held home."""
    spec = budgeted.model.constraints[-1].spec
    model = budgeted.model
    restriction = (spec, Restrictions(fixed_objects=frozenset(fixed)))
    return Relaxation(budgeted.problem, Model(model.goals, model.constraints[:-1],
                                              [*model.restrictions, restriction]))


def _shares(problem: Problem, model: Model) -> np.ndarray:
    """Per object, the largest share of its initial container's capacity it takes, over
    the dimensions the model reads but the object count (which movement goals read
    whatever the loads): 0 where it reads no other."""
    share = np.zeros(problem.num_objects)
    scope = problem.container_scope
    for dim in sorted(problem.scalar_dimensions(model.dimensions())):
        if dim in problem.dynamic_dims or dim == problem.count_dimension:
            continue
        capacity = scope.capacity(dim)[problem.initial]
        share = np.maximum(share, np.divide(problem.object_dims[dim], capacity,
                                            out=np.zeros(len(capacity)), where=capacity > 0))
    return share


def lifted(problem: Problem, model: Model, coarse: SolveResult, initial: Evaluation,
           seconds: float) -> SolveResult | None:
    """The relaxation's answer lifted to the whole model, with the bounds the relaxation
    proves for it: None when no lift keeps the whole model's hard rules. Position by
    position, in order, the relaxation's bound holds while every position before is proven
    (its value meets its bound, the terms left out at 0; positions holding only such terms
    are bounded by 0): those are OPTIMAL; the first that is not is FEASIBLE with that bound,
    and the ones after it FEASIBLE with none. OPTIMAL overall when every position is."""
    best: tuple[list, np.ndarray, Evaluation] | None = None
    for final in (coarse.final, lift(problem, model, coarse.final)):
        if final is None:
            continue
        evaluation = evaluate(problem, model, final)
        key = tuples.tuple_key(evaluation)
        if evaluation.feasible and (best is None or tuples.better(key, best[0])):
            best = (key, final, evaluation)
    if best is None:
        return None
    _, final, evaluation = best
    proven = {report.position: report for report in coarse.buckets}
    reports, holds = [], True
    for position, value in sorted(evaluation.positions.items()):
        report = proven.get(position)
        if report is None:  # only terms left out here, never below 0
            report = BucketReport(position, OPTIMAL, "optimal", value, value, 0.0, value,
                                  0.0 if value == 0 else 1.0, 0.0, 0.0)
        leximin = report.leximin_levels is not None
        bound = (report.objective if leximin and report.status == OPTIMAL
                 else None if leximin else report.bound)
        if not holds or report.positions:
            bound = None
        met = (bound is not None and report.status == OPTIMAL
               and value - bound <= EXACT * abs(value) + FLOAT_NOISE)
        if leximin and met:
            reports.append(report)
            continue
        if leximin:  # the relaxation's leximin value is no bound on the scalar
            bound = None
        gap = None if bound is None else max(0.0, value - bound)
        reports.append(dataclasses.replace(
            report, status=OPTIMAL if met else FEASIBLE,
            termination="optimal" if met else report.termination
            if report.termination != "optimal" else "time_limit",
            objective=value, bound=bound, gap=gap,
            compiled_objective=report.compiled_objective if met else None,
            relative_gap=None if gap is None else gap / abs(value) if value else 0.0,
            leximin_levels=None, leximin_level_value=None, leximin_level_bound=None))
        holds = holds and met
    status = OPTIMAL if holds else FEASIBLE
    return SolveResult(problem, status, "optimal" if holds else "time_limit", final, initial,
                       evaluation, reports, seconds, dict(coarse.approximation), [],
                       classes=coarse.classes)


def merge_bounds(reports: list[BucketReport], relaxed: list[BucketReport]) -> None:
    """Raise each position's bound to the one the relaxation's lift proved for it, while
    every position before is OPTIMAL in ``reports`` (both then bound the same
    lexicographic optimum, which the answer meets there); a position that meets it is
    OPTIMAL."""
    bounds = {r.position: r.bound for r in relaxed if r.bound is not None}
    for report in sorted(reports, key=lambda r: r.position):
        bound = bounds.get(report.position)
        if not (bound is None or report.leximin_levels is not None or (
                report.bound is not None and report.bound >= bound)):
            report.bound = bound
            report.gap = max(0.0, report.objective - bound)
            report.relative_gap = (report.gap / abs(report.objective) if report.objective
                                   else 0.0)
            if report.gap <= EXACT * abs(report.objective) + FLOAT_NOISE:
                report.status, report.termination = OPTIMAL, "optimal"
        if report.status != OPTIMAL:
            break


def lift(problem: Problem, model: Model, coarse_final: np.ndarray) -> np.ndarray | None:
    """``coarse_final`` with objects alike for the specs kept (same dimensions they read,
    named by no spec) permuted so that as many of each kind stay in and land in each
    container: in each container, the objects that leave are taken from the groups that
    have the fewest of their members leaving (and, on a tie, the most members left around
    them), then changed as little as the move budgets of the specs left out need; each lands
    in the container (with a slot for its kind) whose scope items, the coarsest first, hold
    the fewest of its groups. None when no choice of the objects that stay keeps the fixed
    objects and the budgets."""
    groups_of = _groups_of_objects(problem)
    if not any(groups_of):
        return coarse_final.copy()
    fixed = model.fixed_objects
    alike = _alike(problem, model)
    sizes: dict[int, int] = {}
    for groups in groups_of:
        for g in groups:
            sizes[g] = sizes.get(g, 0) + 1
    scopes = [item_groups(s) for s in _coarsest_first(problem)]
    initial, final = problem.initial, coarse_final.copy()
    # objects of each group per (scope, item) among those certain to stay; movers add theirs
    staying = np.ones(problem.num_objects, dtype=bool)
    for members in alike.members:
        staying[members] = coarse_final[members] == initial[members]
    near: dict[tuple[int, int, int], int] = {}
    for obj in np.flatnonzero(staying).tolist():
        for g in groups_of[obj]:
            for s, items in enumerate(scopes):
                key = (g, s, int(items[initial[obj]]))
                near[key] = near.get(key, 0) + 1
    leaving: dict[int, int] = {}

    def leave_key(obj: int) -> tuple:
        groups = groups_of[obj]
        share = max(((leaving.get(g, 0) + 1) / sizes[g] for g in groups), default=0.0)
        around = min((near.get((g, s, int(items[initial[obj]])), 0) for g in groups
                      for s, items in enumerate(scopes)), default=0)
        return share, -around, obj

    cells: list[tuple[list[int], int]] = []  # (objects of a kind in a container, stays)
    moving = np.zeros(problem.num_objects, dtype=bool)
    for members in alike.members:
        homes, finals = initial[members], coarse_final[members]
        for c in np.unique(homes).tolist():
            here = members[homes == c].tolist()
            stays = int(np.count_nonzero(finals[homes == c] == c))
            must = [o for o in here if o in fixed]
            if len(must) > stays:
                return None
            cells.append((here, stays))
            free = [o for o in here if o not in fixed]
            for _ in range(len(here) - stays):  # the leavers, one at a time
                chosen = min(free, key=leave_key)
                free.remove(chosen)
                moving[chosen] = True
                for g in groups_of[chosen]:
                    leaving[g] = leaving.get(g, 0) + 1
    budgets = _budgets(problem, model)
    if any(_over_budget(budget, moving) for budget in budgets):
        chosen = _budgeted_moves(cells, budgets, moving, fixed)
        if chosen is None:  # the relaxation's counts break a budget: some movers go back
            _send_back(budgets, moving)
        else:
            moving = chosen
    final[~moving] = initial[~moving]
    for members in alike.members:
        movers = members[moving[members]].tolist()
        if not movers:
            continue
        arrived = coarse_final[members][coarse_final[members] != initial[members]]
        slots = dict(zip(*(a.tolist() for a in np.unique(arrived, return_counts=True))))
        for obj in sorted(movers, key=lambda o: -len(groups_of[o])):
            open_slots = [d for d, left in slots.items() if left > 0]
            away = [d for d in open_slots if d != initial[obj]] or open_slots

            def land_key(d: int, obj: int = obj) -> tuple:
                return (*(sum(near.get((g, s, int(items[d])), 0) for g in groups_of[obj])
                          for s, items in enumerate(scopes)), d)

            target = min(away, key=land_key)
            slots[target] -= 1
            final[obj] = target
            for g in groups_of[obj]:
                for s, items in enumerate(scopes):
                    key = (g, s, int(items[target]))
                    near[key] = near.get(key, 0) + 1
    return final


def _alike(problem: Problem, model: Model) -> ObjectClasses:
    """Objects the lift may swap: alike for the specs kept (the dimensions they read,
    named by none)."""
    kept = Model([g for g in model.goals if not g.spec.reads_groups()],
                 [c for c in model.constraints if not c.spec.reads_groups()], [])
    return object_classes(dataclasses.replace(problem, partitions={}),
                          model.named_objects() - set(model.fixed_objects),
                          by_initial_container=False,
                          dims=kept.dimensions() | {problem.count_dimension})


def _budgets(problem: Problem, model: Model) -> list[MoveBudget]:
    """The move budgets of the HARD constraints the relaxation leaves out."""
    return [budget for entry in model.constraints
            if entry.spec.reads_groups() and entry.policy == "HARD"
            for budget in entry.spec.move_budgets(problem)]


def _over_budget(budget: MoveBudget, moving: np.ndarray) -> bool:
    return float(budget.weights[moving[budget.members]].sum()) > budget.limit + TOLERANCE


def _send_back(budgets: list[MoveBudget], moving: np.ndarray) -> None:
    """Keep the heaviest movers of each budget it exceeds at home until it holds (the
    relaxation's loads change there; the evaluator judges the result)."""
    for budget in budgets:
        order = np.argsort(-np.asarray(budget.weights, dtype=float), kind="stable")
        for index in order.tolist():
            if not _over_budget(budget, moving):
                break
            moving[int(budget.members[index])] = False


def _budgeted_moves(cells: list[tuple[list[int], int]], budgets: list[MoveBudget],
                    moving: np.ndarray, fixed: frozenset[int]) -> np.ndarray | None:
    """Which objects move, as many from each cell as before, within every budget and as
    close to ``moving`` as they allow (a small CP-SAT model over the cells that have a
    choice); None when no choice keeps them."""
    cp = cp_model.CpModel()
    stays: dict[int, object] = {}
    for here, count in cells:
        if 0 < count < len(here):
            literals = []
            for obj in here:
                literal = cp.new_bool_var("")
                if obj in fixed:
                    cp.add(literal == 1)
                stays[obj] = literal
                literals.append(literal)
            cp.add(sum(literals) == count)
    for budget in budgets:
        scale, _ = integral_scale(np.asarray(budget.weights, dtype=float))
        units = np.ceil(np.asarray(budget.weights) * scale - 1e-9).astype(np.int64)
        limit = math.floor((budget.limit + TOLERANCE) * scale + 1e-9)
        forced, terms = 0, []
        for obj, weight in zip(budget.members.tolist(), units.tolist()):
            if obj in stays:
                terms.append((stays[obj], weight))
            elif moving[obj]:
                forced += weight
        cp.add(forced + sum(w * (1 - v) for v, w in terms) <= limit)
    cp.minimize(sum(v if moving[obj] else 1 - v for obj, v in stays.items()))
    for obj, literal in stays.items():
        cp.add_hint(literal, not moving[obj])
    solver = new_solver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = LIFT_SECONDS
    solver.parameters.max_deterministic_time = LIFT_WORK
    solver.parameters.catch_sigint_signal = False
    if solver.solve(cp) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    result = moving.copy()
    for obj, literal in stays.items():
        result[obj] = not solver.boolean_value(literal)
    return result


def _groups_of_objects(problem: Problem) -> list[list[int]]:
    """The groups (numbered across every partition) each object is in."""
    groups: list[list[int]] = [[] for _ in range(problem.num_objects)]
    number = 0
    for name in sorted(problem.partitions):
        for members in problem.partitions[name].values():
            for obj in np.asarray(members, dtype=np.int64).tolist():
                groups[obj].append(number)
            number += 1
    return groups


def _coarsest_first(problem: Problem) -> list:
    """Every scope, the one with the fewest items first (the container scope last)."""
    return sorted(problem.scopes.values(), key=lambda s: (len(s.items), s.name))
