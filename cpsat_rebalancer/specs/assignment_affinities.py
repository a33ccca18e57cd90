"""AssignmentAffinitiesSpec: objects prefer scope items
(docs/semantics.md#assignmentaffinities).

Value ``-Σ_o a(o, item_final(o))`` over the listed (object, item) affinities, summed when a
pair is listed twice; an object in an item it has no affinity for (or out of scope) adds 0.
A cost is a negative affinity, so minimizing the goal minimizes total cost. The value is
linear in the assignment, so a negative weight (maximizing it) is modelled exactly too.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from ortools.sat.python import cp_model

from ..context import EvalContext
from ..cpsat.assignment_lp import assignment_dive, assignment_work, forced_bounds, surviving_pairs
from ..cpsat.builder import CpBuilder, TargetProbe
from ..cpsat.linear import Lin
from ..errors import InputError
from ..fields import Fields, check_list, check_number
from ..problem import Problem, Scope
from .common import GoalForm, Spec, register, resolve_scope, roles_by_item, spec_name

# probe the relaxation's bound when its surviving pairs give objects at most this many
# containers on average: with so few choices the bound tends to be the optimum and a probe
# settles it; with more, the bound is often below the optimum and a probe only spends time
PROBE_CHOICES = 2
TARGET_LEVELS = 3  # probe the bound and the next levels up, each a search in a few pairs


@register
@dataclass(frozen=True, eq=False)
class AssignmentAffinitiesSpec(Spec):
    arm = "assignmentAffinitiesSpec"
    nonnegative = False  # affinities are rewards: the value is minus their sum
    constraint_allowed = False

    name: str
    scope: Scope
    objects: np.ndarray  # object index per (object, item) pair, pairs unique
    items: np.ndarray  # item index per pair
    affinities: np.ndarray  # summed affinity per pair

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> AssignmentAffinitiesSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        listed = f.raw("affinities")
        f.done(cls.arm)
        listed = check_list([] if listed is None else listed, f.at("affinities"),
                            "a list of {objectName, scopeItemName, affinity}")
        summed: dict[tuple[int, int], float] = {}
        for k, entry in enumerate(listed):
            e = Fields(entry, f"{f.at('affinities')}[{k}]")
            obj_name, item_name = e.text("objectName"), e.text("scopeItemName")
            value = e.number("affinity", 0.0)
            e.done("AssignmentAffinity")
            obj = problem.object_index.get(obj_name)
            if obj is None:
                raise InputError(e.at("objectName"), "unknown object", obj_name)
            item = scope.item_index.get(item_name)
            if item is None:
                raise InputError(e.at("scopeItemName"), f"unknown item of scope '{scope.name}'",
                                 item_name)
            summed[(obj, item)] = summed.get((obj, item), 0.0) + check_number(
                value, e.at("affinity"))
        pairs = sorted(summed)
        return cls(name, scope, np.asarray([o for o, _ in pairs], dtype=np.int64),
                   np.asarray([i for _, i in pairs], dtype=np.int64),
                   np.asarray([summed[p] for p in pairs], dtype=float))

    @property
    def linear_in_assignment(self) -> bool:
        return True

    def object_roles(self) -> dict[int, Hashable]:
        return {int(o): ("affinity", self.name) for o in np.unique(self.objects)}

    def container_roles(self, problem: Problem) -> list[Hashable]:
        per_item: dict[int, list[tuple[int, float]]] = {}
        for obj, item, value in zip(self.objects, self.items, self.affinities):
            per_item.setdefault(int(item), []).append((int(obj), float(value)))
        return roles_by_item(self.scope, {i: tuple(v) for i, v in per_item.items()})

    def reads_initial(self) -> bool:
        return False

    batched: ClassVar[bool] = True

    def suggested_containers(self, problem: Problem) -> dict[int, np.ndarray]:
        """The containers of each object's items of positive affinity, most first."""
        rewarded = self.affinities > 0
        order = np.argsort(-self.affinities[rewarded], kind="stable")
        containers: dict[int, list[int]] = {}
        item = self.scope.container_item
        for obj, at in zip(self.objects[rewarded][order].tolist(),
                           self.items[rewarded][order].tolist()):
            containers.setdefault(obj, []).extend(np.flatnonzero(item == at).tolist())
        return {obj: np.asarray(c, dtype=np.int64) for obj, c in containers.items()}

    def lowest(self) -> float:
        """Each object on its item of highest (positive) affinity."""
        best = np.zeros(int(self.objects.max()) + 1 if len(self.objects) else 0)
        np.maximum.at(best, self.objects, self.affinities)
        return -float(best.sum())

    def evaluate(self, ctx: EvalContext) -> np.ndarray:
        landed = self.scope.container_item[ctx.final_at(self.objects)] == self.items
        return -(self.affinities * landed).sum(axis=-1)

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        by_object: dict[int, dict[int, float]] = {}
        for obj, item, value in zip(self.objects, self.items, self.affinities):
            by_object.setdefault(int(obj), {})[int(item)] = float(value)
        if not by_object:
            return GoalForm(Lin())
        errors = dict(b.errors)
        placed = b.placement_value(self.scope, by_object, what=self.name)
        if b.accelerate:
            add_knapsack_relaxation(b, self, by_object, placed, exact=b.errors == errors)
        return GoalForm(-placed)


def add_knapsack_relaxation(b: CpBuilder, spec: AssignmentAffinitiesSpec,
                            by_object: dict[int, dict[int, float]], placed: Lin,
                            exact: bool) -> None:
    """The generalized-assignment shape: every object its own class, and the hard rules
    bound the load of exactly one dimension per container. Then the per-container knapsack
    relaxation (cpsat/assignment_lp) bounds the goal from below, far closer than CP-SAT's LP,
    and its dive is proposed as the start (the evaluator decides whether it is used).

    Valid for any scenario of that shape: the relaxation keeps only rules the model implies
    (each container's load limit, where each object may go), so every feasible assignment
    costs at least its bound; other specs only remove assignments. The bound is added only
    when the affinities are exact in CP-SAT's integers, and with it, per (container,
    object) variable, the bound forced on the goal when it is 1 (Lagrangian probing).
    With integral costs, the levels from the bound up where few pairs survive get target
    probes (CpBuilder.target_probes); a level where none survive raises the bound."""
    problem = b.problem
    scope = problem.container_scope
    if spec.scope is not scope or np.any(b.classes.sizes != 1):
        return
    limited = [dim for dim in problem.dimension_names if b.load_bounds(scope, dim) is not None]
    if len(limited) != 1:
        return
    dim = limited[0]
    capacity = b.load_bounds(scope, dim)[scope.container_item]
    objects, containers = len(problem.initial), len(scope.container_item)
    cost = np.full((containers, objects), np.inf)
    weight = np.zeros((containers, objects), dtype=np.int64)
    obj_of_class = np.asarray([m[0] for m in b.classes.members], dtype=np.int64)
    var_obj, var_weight = obj_of_class[b.var_class], b.var_values(dim)
    var_of_pair: dict[tuple[int, int], object] = {}  # (container, object) -> count variable
    for j, (obj, container) in enumerate(zip(var_obj.tolist(), b.var_cont.tolist())):
        item = int(scope.container_item[container])
        cost[container, obj] = -by_object.get(obj, {}).get(item, 0.0)
        weight[container, obj] = var_weight[j]
        var_of_pair[container, obj] = b.count_vars[j]
    if np.any(weight < 0) or np.any(capacity < 0) or np.all(weight.sum(axis=1) <= capacity):
        return  # (when no limit binds, every object simply takes its cheapest container)
    work = assignment_work(b.seconds)
    relaxation = assignment_dive(cost, weight, capacity, work)
    if relaxation.final is not None:
        b.suggested_starts.append(relaxation.final)
    if not exact or relaxation.prices is None:
        return
    (atom, coef), = placed.terms.items()  # the goal is -placed, placed = coef * atom
    placed_atom = b.cp.new_int_var(b.atoms[atom].lo, b.atoms[atom].hi, "placed_affinity")
    b.cp.add(placed_atom == b.atoms[atom].expr)  # one variable for the per-pair bounds

    def most_placed(cost_bound: float) -> int:  # the atom's largest value at that cost
        limit = -cost_bound / float(coef)
        return math.floor(limit + 1e-6 * max(1.0, abs(limit)))

    bound = relaxation.bound
    pairs = forced_bounds(cost, weight, capacity, relaxation.prices)
    finite = cost[np.isfinite(cost)]
    integral = bool(np.all(finite == np.round(finite)))  # levels are whole costs
    # the levels worth probing end at a solution's cost, or else past the most any
    # assignment costs (no assignment within the capacities at all: every level is empty)
    start = (float(np.where(np.isfinite(cost), cost, -np.inf).max(axis=0).sum()) + 1
             if relaxation.final is None
             else float(cost[relaxation.final, np.arange(objects)].sum()))
    spare = work - relaxation.work
    level = math.ceil(bound - 1e-6 * max(1.0, abs(bound)))  # the least cost at the bound
    probes = 0
    while integral and level < start and probes < TARGET_LEVELS and spare > 0:
        alive, spent = surviving_pairs(cost, weight, capacity, pairs, level, spare,
                                       relaxation.sets)
        spare -= spent
        if alive is None:
            bound = level = level + 1  # no assignment costs as little as that
            continue
        pairs = np.where(alive, pairs, np.maximum(pairs, level + 1))
        if alive.sum() > PROBE_CHOICES * objects:
            break
        gate = b.cp.new_bool_var(f"{spec.name} at {level}")
        b.cp.add(placed_atom >= -most_placed(-level)).only_enforce_if(gate)
        b.cp.add(placed_atom <= most_placed(level + 1)).only_enforce_if(~gate)
        b.target_probes.append(TargetProbe(level, gate, *_reduced_assignment(
            cost, weight, capacity, alive, level, var_of_pair)))
        level, probes = level + 1, probes + 1
    overall = most_placed(bound)
    b.cp.add(placed_atom <= overall)
    for (container, obj), var in var_of_pair.items():
        if math.isfinite(pairs[container, obj]) and (
                most := most_placed(pairs[container, obj])) < overall:
            b.cp.add(placed_atom <= most).only_enforce_if(var)


def _reduced_assignment(cost: np.ndarray, weight: np.ndarray, capacity: np.ndarray,
                        alive: np.ndarray, level: int, var_of_pair: dict[tuple[int, int], object]
                        ) -> tuple[cp_model.CpModel, list[tuple[object, object]]]:
    """The assignment of every object to one of its surviving containers (``alive``) within
    the capacities, costing at most ``level`` (integral costs), cheapest first; and each of
    its literals with the count variable of the same pair (see TargetProbe)."""
    reduced = cp_model.CpModel()
    pairs: list[tuple[object, object]] = []
    costs: list[int] = []
    by_object: list[list[object]] = [[] for _ in range(cost.shape[1])]
    in_container: list[tuple[list[object], list[int]]] = [([], []) for _ in range(cost.shape[0])]
    containers, objects = np.nonzero(alive)
    for container, obj in zip(containers.tolist(), objects.tolist()):
        literal = reduced.new_bool_var(f"object {obj} in container {container}")
        pairs.append((literal, var_of_pair[container, obj]))
        costs.append(round(float(cost[container, obj])))
        by_object[obj].append(literal)
        in_container[container][0].append(literal)
        in_container[container][1].append(int(weight[container, obj]))
    for literals in by_object:
        reduced.add_exactly_one(literals)
    for container, (literals, sizes) in enumerate(in_container):
        reduced.add(cp_model.LinearExpr.weighted_sum(literals, sizes) <= int(capacity[container]))
    total = cp_model.LinearExpr.weighted_sum([literal for literal, _ in pairs], costs)
    reduced.add(total <= level)
    reduced.minimize(total)
    return reduced, pairs
