"""MinimizeContainersSpec: use as few (cheap) scope items as possible
(docs/semantics.md#minimizecontainers).

Value, as Rebalancer's optimal solver reports it (for both formulas; the local-search
surrogates are not counts): ``(Σ_{s∈F} cost_s·step(u_s) − |F| + mfl)⁺`` with F the filtered
items, u_s the relative AFTER utilization of the dimension, cost_s from ``containerCosts``
(default 1) and mfl = min(maxFreeLimit, |F|) (|F| when unset): the cost of the used items
beyond the ``|F| − mfl`` that may stay in use for free.

Compiled exactly: one "used" literal per item (Rebalancer's step). Because proving a count
optimal is where such models stall, the compilation also states valid lower bounds that
CP-SAT cannot derive itself (see :func:`add_volume_bounds`).
"""

from __future__ import annotations

import functools
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from ..context import EvalContext, MoveBatch, positive, step
from ..cpsat.builder import CpBuilder
from ..cpsat.linear import Lin, lin_sum
from ..cpsat.packing_bounds import dive_work, gilmore_gomory, martello_toth_l2, pattern_dive
from ..errors import InputError
from ..fields import Fields, check_number, is_integer
from ..primitives import TOLERANCE
from ..problem import Problem, Scope
from .common import (
    GoalForm,
    Spec,
    leaving,
    parse_filter,
    positions_among,
    register,
    resolve_dimension,
    resolve_scope,
    roles_by_item,
    spec_name,
    touched_among,
)


@register
@dataclass(frozen=True, eq=False)
class MinimizeContainersSpec(Spec):
    arm = "minimizeContainersSpec"
    enum_fields = {"formula": "MinimizeContainerSpecFormula"}

    @classmethod
    def wheel_evaluates_as_mip(cls, body: dict) -> bool:
        return True  # its local search and optimal solver value it differently
    constraint_allowed = False

    name: str
    scope: Scope
    dimension: str
    items: np.ndarray  # filtered items
    costs: np.ndarray  # cost per filtered item
    free_limit: int  # mfl

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> MinimizeContainersSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        dimension = resolve_dimension(problem, f.text("dimension"), f.at("dimension"),
                                      default=problem.count_dimension, metrics=("AFTER",))
        costs_given = f.mapping("containerCosts")
        max_free = f.raw("maxFreeLimit")
        items = np.flatnonzero(parse_filter(f.raw("filter"), f.at("filter"), scope))
        formula = cls.enum(f, "formula", "NEW")  # both have the same optimal-solver value
        f.done(cls.arm)
        if formula == "LEGACY" and max_free is not None:
            raise InputError(f.at("maxFreeLimit"), "Rebalancer supports maxFreeLimit with the "
                             "NEW formula only", max_free)
        costs = np.ones(len(scope.items))
        for item, value in costs_given.items():
            where = f"{f.at('containerCosts')}.{item}"
            index = scope.item_index.get(item)
            if index is None:
                raise InputError(where, f"unknown item of scope '{scope.name}'", item)
            costs[index] = check_number(value, where, nonnegative=True)
        if max_free is None:
            free_limit = len(items)
        else:
            if not is_integer(max_free) or max_free <= 0:
                raise InputError(f.at("maxFreeLimit"), "expected a positive integer", max_free)
            free_limit = min(int(max_free), len(items))
        zero = [scope.items[i] for i in items if scope.capacity(dimension)[i] == 0]
        if zero:
            raise InputError(f.at("dimension"), "scope item has zero capacity, so its relative "
                             "utilization is undefined (filter it out)", zero[0])
        return cls(name, scope, dimension, items, costs[items], free_limit)

    def container_roles(self, problem: Problem) -> list[Hashable]:
        return roles_by_item(self.scope, {int(i): float(c) for i, c in zip(self.items,
                                                                            self.costs)})

    def reads_initial(self) -> bool:
        return False

    def departures(self, ctx: EvalContext) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each used filtered item of positive cost, its objects of positive size out of
        its containers: the count falls only with the item's last such object."""
        item = self.scope.container_item[ctx.final]
        counted = np.zeros(len(self.scope.items) + 1, dtype=bool)  # the last: out of scope
        counted[self.items[self.costs > 0]] = True
        sizes = ctx.problem.values_at(self.dimension, ctx.final)
        objects = np.flatnonzero(counted[item] & (sizes > TOLERANCE))
        return leaving(self.scope, objects, item[objects], item[objects])

    batched: ClassVar[bool] = True

    def _relative(self, util: np.ndarray) -> np.ndarray:
        return util[..., self.items] / self.scope.capacity(self.dimension)[self.items]

    def evaluate(self, ctx: EvalContext) -> np.ndarray:
        touched = self._touched(ctx)
        if touched is None:
            used = step(self._relative(ctx.util(self.scope, self.dimension, "AFTER"))) @ self.costs
        else:  # the base's cost of the used items, changed at the items a candidate touches
            base, candidate, position, before, after = touched
            caps = self.scope.capacity(self.dimension)[self.items][position]
            costs = self.costs[position]
            whole = base.memo((self, "used"), lambda: float(step(self._relative(
                base.util(self.scope, self.dimension, "AFTER"))) @ self.costs))
            used = whole + np.bincount(candidate, costs * (step(after / caps)
                                                           - step(before / caps)),
                                       minlength=ctx.size)
        return positive(used - len(self.items) + self.free_limit)

    def _touched(self, ctx: EvalContext) -> tuple[EvalContext, np.ndarray, np.ndarray,
                                                  np.ndarray, np.ndarray] | None:
        """Under a batch, the base and per (candidate, filtered item) pair its moves touch:
        the candidate, the item's position among the filtered, its AFTER utilization in
        the base and in the candidate (``MoveBatch.touched_items``); else None."""
        touched = touched_among(ctx, self.scope, self.dimension, self._position_of_item)
        return None if touched is None else (cast(MoveBatch, ctx).base, *touched)

    @functools.cached_property
    def _position_of_item(self) -> np.ndarray:
        return positions_among(self.scope, self.items)

    def guide(self, ctx: EvalContext) -> np.ndarray:
        """``−Σ_s (u_s / Σu)^1.1 / cost_s`` over the filtered items (of positive cost): an
        item is emptied by a run of moves that each leave the count flat, and this measure
        falls with each move from a lighter item to a heavier one (Rebalancer's local
        search values the spec with this power, formula NEW)."""
        weights = np.divide(1.0, self.costs, out=np.zeros(len(self.costs)),
                            where=self.costs > 0)  # a free item: no pull
        touched = self._touched(ctx)
        if touched is None:
            util = np.maximum(ctx.util(self.scope, self.dimension, "AFTER")[..., self.items],
                              0.0)
            total = util.sum(axis=-1, keepdims=True)
            share = util / np.where(total > 0, total, 1.0)
            return -(share**1.1 * weights).sum(axis=-1)
        # Σ_s u_s^1.1·w_s / (Σu)^1.1: both sums the base's, changed at the touched items
        base, candidate, position, before, after = touched

        def sums() -> tuple[float, float]:
            util = np.maximum(base.util(self.scope, self.dimension, "AFTER")[self.items], 0.0)
            return float(util.sum()), float((util**1.1 * weights).sum())

        whole, whole_powered = base.memo((self, "guide sums"), sums)
        before, after = np.maximum(before, 0.0), np.maximum(after, 0.0)
        k = ctx.size
        total = whole + np.bincount(candidate, after - before, minlength=k)
        powered = whole_powered + np.bincount(
            candidate, (after**1.1 - before**1.1) * weights[position], minlength=k)
        return -powered / np.where(total > 0, total, 1.0)**1.1

    def _any_object_makes_its_item_used(self, problem: Problem) -> bool:
        """Whether an item is used exactly where it holds an object: every object's
        value, over every item's capacity, is above the tolerance."""
        if self.dimension in problem.dynamic_dims:
            return False
        caps = self.scope.capacity(self.dimension)[self.items]
        lightest = float(problem.object_dims[self.dimension].min(initial=np.inf))
        return len(caps) > 0 and caps.max() > 0 and lightest / float(caps.max()) > TOLERANCE

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        util = b.util(self.scope, self.dimension, "AFTER")
        caps = self.scope.capacity(self.dimension)
        if self._any_object_makes_its_item_used(b.problem):
            used = [b.item_used(self.scope, i, util[i] / caps[i]) for i in self.items]
        else:
            used = [b.used(util[i] / caps[i]) for i in self.items]
        add_volume_bounds(b, self, used)
        add_stay_links(b, self, used)
        total = lin_sum(used_i * cost for used_i, cost in zip(used, self.costs))
        if self.free_limit == len(self.items):  # nothing may stay in use for free
            return GoalForm(total)
        return GoalForm(b.positive_part(total - len(self.items) + self.free_limit,
                                        what=self.name))


def add_volume_bounds(b: CpBuilder, spec: MinimizeContainersSpec, used: list[Lin]) -> None:
    """Redundant constraints that give CP-SAT the bin-packing bounds it cannot find alone.

    For every static dimension d whose load per item is bounded by hard constraints (the
    builder knows each item's largest feasible load, e.g. from a Capacity constraint), when
    every object lands in a filtered item and any object with d > 0 makes its item used:
    the used items must hold the whole load, Σ_s cap_d(s)·used_s >= Σ_o d(o); and when
    every such cap is the same C, the number of used items is at least the bin-packing
    bounds of the sizes against C (Martello-Toth L2 and Gilmore-Gomory, see packing_bounds).
    """
    problem = b.problem
    if not (b.accelerate and len(spec.items) == len(spec.scope.items)
            and spec.scope.covers_all_containers):
        return
    marks = problem.values_at(spec.dimension, problem.initial)
    if spec.dimension in problem.dynamic_dims:
        return
    literals = [b.literal(u) for u in used]
    if spec.scope is problem.container_scope and np.all(marks > 0):
        for containers in b.container_classes:  # used ones first (they are the non-empty)
            for first, second in zip(containers, containers[1:]):
                b.ordered(literals[first], literals[second])
    for dim, values in problem.object_dims.items():
        if np.any((values > 0) & (marks <= 0)):
            continue  # an object could load an item without making it used
        caps = b.load_bounds(spec.scope, dim)
        if caps is None:
            continue
        total = int(b.scale(dim).values.sum())
        if total == 0 or int(caps.sum()) < total:
            continue  # infeasible anyway; CP-SAT will find out
        # loads as variables summing to the total: once some items are empty, the others
        # must hold the rest (with no slack, each is exactly full), which CP-SAT propagates
        loads = [b.cp.new_int_var(0, int(c), f"load{i}") for i, c in enumerate(caps)]
        for load, expr in zip(loads, b.loads(spec.scope, dim)):
            b.cp.add(load == expr)
        b.cp.add(sum(loads) == total)
        b.cp.add(sum(int(c) * x for c, x in zip(caps, literals)) >= total)
        if len(set(caps.tolist())) == 1:
            sizes = b.scale(dim).values
            bound = max(martello_toth_l2(sizes, int(caps[0])),
                        gilmore_gomory(sizes, int(caps[0])))
            b.cp.add(sum(literals) >= bound)
            if spec.scope is problem.container_scope and len(set(problem.initial)) > bound:
                _suggest_dive(b, spec, sizes, int(caps[0]))


def add_stay_links(b: CpBuilder, spec: MinimizeContainersSpec, used: list[Lin]) -> None:
    """Redundant rows that an object staying in its container keeps that container's item
    used: stays of class k in container c <= their start there times used(item of c),
    wherever one object of k makes the item used on its own. The count of used items is
    linked to the loads by a single row per item (load <= its most times used), which an
    LP meets by lowering every item's literal a little; these rows tie the literals to
    the moves instead, so that with the count held (a later bucket) an LP pays for every
    object an unused item sheds, and with moves priced (a move limit) it pays for the
    moves a count needs."""
    problem = b.problem
    if spec.dimension in problem.dynamic_dims or not b.accelerate:
        return
    position = {int(item): p for p, item in enumerate(spec.items)}
    stays = b.stay_counts(problem.container_scope)
    caps = spec.scope.capacity(spec.dimension)
    values = problem.values_at(spec.dimension, problem.initial)
    for (k, container), (stay, start) in stays.items():
        item = spec.scope.container_item[container]  # (the container scope holds them all)
        p = position.get(int(item))
        if p is None or isinstance(stay, int):
            continue
        value = float(values[b.classes.members[k][0]])
        if value / caps[item] <= TOLERANCE:  # one object may leave the item unused
            continue
        literal = b.literal(used[p])
        if not isinstance(literal, int):
            b.count_links.add(b.cp.add(stay <= start * literal).index)


def _suggest_dive(b: CpBuilder, spec: MinimizeContainersSpec, sizes: np.ndarray,
                  capacity: int) -> None:
    """Propose the pattern LP's dive as the start (bin j into the spec's j-th container):
    on hard packings first-fit decreasing misses the bound that the dive often reaches, and
    CP-SAT then only has to confirm it. The evaluator decides whether it is used."""
    bins = pattern_dive(sizes, capacity, dive_work(b.seconds))
    if bins is not None and bins.max() < len(spec.items):
        b.suggested_starts.append(np.asarray(spec.items)[bins])
