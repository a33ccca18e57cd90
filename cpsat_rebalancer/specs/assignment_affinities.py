"""AssignmentAffinitiesSpec: objects prefer scope items (semantics reference §13).

Value ``-Σ_o a(o, item_final(o))`` over the listed (object, item) affinities, summed when a
pair is listed twice; an object in an item it has no affinity for (or out of scope) adds 0.
A cost is a negative affinity, so minimizing the goal minimizes total cost. The value is
linear in the assignment, so a negative weight (maximizing it) is modelled exactly too.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cpsat.linear import Lin
from ..cpsat.model import ModelBuilder
from ..errors import InputError
from ..evaluate import EvalContext
from ..problem import Problem, Scope
from .common import (
    Fields,
    GoalForm,
    Spec,
    check_number,
    register,
    resolve_scope,
    roles_by_item,
    spec_name,
)


@register
@dataclass(frozen=True, eq=False)
class AssignmentAffinitiesSpec(Spec):
    arm = "assignmentAffinitiesSpec"
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
        if listed is None:
            listed = []
        if not isinstance(listed, list):
            raise InputError(f.at("affinities"), "expected a list of "
                             "{objectName, scopeItemName, affinity}", listed)
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

    def evaluate(self, ctx: EvalContext) -> float:
        landed = self.scope.container_item[ctx.final[self.objects]] == self.items
        return -float(self.affinities[landed].sum())

    def compile_goal(self, b: ModelBuilder) -> GoalForm:
        by_object: dict[int, dict[int, float]] = {}
        for obj, item, value in zip(self.objects, self.items, self.affinities):
            by_object.setdefault(int(obj), {})[int(item)] = float(value)
        return GoalForm(-b.placement_value(self.scope, by_object, what=self.name)
                        if by_object else Lin())
