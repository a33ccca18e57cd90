"""MaximizeAllocationSpec: fill the filtered scope items as much as possible
(docs/semantics.md#maximizeallocation).

Value ``−(1/N)·Σ_{s∈F} A_s/cap_s`` with N the number of objects, F the filtered items and
A_s the AFTER utilization of the dimension: negative, and linear in the assignment, so it is
compiled exactly as it stands (a negative weight, which empties items, is exact too).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..context import EvalContext
from ..cpsat.builder import CpBuilder
from ..cpsat.linear import Lin, lin_sum, to_fraction
from ..errors import InputError
from ..fields import Fields
from ..problem import Problem, Scope
from .common import (
    GoalForm,
    Spec,
    parse_filter,
    register,
    resolve_dimension,
    resolve_scope,
    roles_by_item,
    spec_name,
)


@register
@dataclass(frozen=True, eq=False)
class MaximizeAllocationSpec(Spec):
    arm = "maximizeAllocationSpec"
    constraint_allowed = False
    nonnegative = False

    name: str
    scope: Scope
    dimension: str
    items: np.ndarray  # filtered items
    dynamic: bool  # the dimension's values depend on where objects land

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> MaximizeAllocationSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        dimension = resolve_dimension(problem, f.text("dimension"), f.at("dimension"),
                                      metrics=("AFTER",), vector=True)
        items = np.flatnonzero(parse_filter(f.raw("filter"), f.at("filter"), scope))
        f.done(cls.arm)
        zero = [scope.items[i] for i in items if scope.capacity(dimension)[i] == 0]
        if zero:  # the wheel stops with "capacity of ... is zero"
            raise InputError(f.at("dimension"), "scope item has zero capacity, so its relative "
                             "utilization is undefined (filter it out)", zero[0])
        return cls(name, scope, dimension, items, dimension in problem.dynamic_dims)

    @property
    def linear_in_assignment(self) -> bool:
        return True

    def reads_initial(self) -> bool:
        return False

    def container_roles(self, problem: Problem) -> list[Hashable] | None:
        if self.dynamic:  # an object's size depends on the item: no two items alike
            return None
        caps = self.scope.capacity(self.dimension)
        return roles_by_item(self.scope, {int(i): float(caps[i]) for i in self.items})

    batched: ClassVar[bool] = True  # a model with dynamic dimensions takes no batch at all

    def evaluate(self, ctx: EvalContext) -> np.ndarray:
        objects = ctx.problem.num_objects
        if objects == 0 or len(self.items) == 0:
            return np.float64(0.0)
        caps = self.scope.capacity(self.dimension)[self.items]
        relative = ctx.util(self.scope, self.dimension, "AFTER")[..., self.items] / caps
        return np.sum((-1.0 / objects) * relative, axis=-1)

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        objects = b.problem.num_objects
        if objects == 0:
            return GoalForm(Lin())
        util = b.util(self.scope, self.dimension, "AFTER")
        caps = self.scope.capacity(self.dimension)
        total = lin_sum(util[i] / to_fraction(float(caps[i])) for i in self.items)
        return GoalForm(total * to_fraction(-1.0) / objects)
