"""UtilIncreaseCostSpec: price utilization increases above max(lowerBound, initial)
(docs/semantics.md#utilincreasecost)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from ..context import EvalContext, MoveBatch, positive
from ..cpsat.builder import CpBuilder
from ..cpsat.linear import Lin, lin_sum, to_fraction
from ..cpsat.pwl import convex_pwl
from ..errors import InputError
from ..fields import Fields
from ..problem import Problem, Scope
from .common import (
    GoalForm,
    Spec,
    parse_filter,
    positions_among,
    register,
    resolve_dimension,
    resolve_scope,
    spec_name,
    touched_among,
)

POWER = 1.1


@register
@dataclass(frozen=True, eq=False)
class UtilIncreaseCostSpec(Spec):
    arm = "utilIncreaseCostSpec"
    constraint_allowed = False

    name: str
    scope: Scope
    dimension: str
    items: np.ndarray
    lower_bound: float
    squares: bool

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> UtilIncreaseCostSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        dimension = resolve_dimension(problem, f.text("dimension"), f.at("dimension"),
                                      metrics=("AFTER", "INITIAL"), vector=True)
        lower = f.number("lowerBound", 0.0)
        squares = f.flag("squares")
        items = np.flatnonzero(parse_filter(f.raw("filter"), f.at("filter"), scope))
        f.done(cls.arm)
        zero = [scope.items[i] for i in items if scope.capacity(dimension)[i] == 0]
        if zero:
            raise InputError(f.at("dimension"), "scope item has zero capacity, so its relative "
                             "utilization is undefined (filter it out)", zero[0])
        return cls(name, scope, dimension, items, lower, squares)

    def _f(self, x: np.ndarray | float):
        return x**POWER if self.squares else x

    def _reference(self, initial_relative: np.ndarray) -> np.ndarray:
        return self._f(np.maximum(self.lower_bound, initial_relative))

    batched: ClassVar[bool] = True

    def _terms(self, ctx: EvalContext, util: np.ndarray, items: np.ndarray) -> np.ndarray:
        """Each of ``items``' term at its AFTER utilization ``util`` (absolute)."""
        caps = self.scope.capacity(self.dimension)[items]
        u0 = ctx.at_initial.util(self.scope, self.dimension, "AFTER")[items] / caps
        return positive(self._f(util / caps) - self._reference(u0))

    def evaluate(self, ctx: EvalContext) -> np.ndarray:
        if len(self.items) == 0:
            return np.float64(0.0)
        touched = touched_among(ctx, self.scope, self.dimension, self._positions)
        if touched is None:
            util = ctx.util(self.scope, self.dimension, "AFTER")[..., self.items]
            return self._terms(ctx, util, self.items).sum(axis=-1) / len(self.items)
        # the base's value, changed at the items a candidate's moves touch
        base = cast(MoveBatch, ctx).base
        terms = base.memo((self, "terms"), lambda: self._terms(
            base, base.util(self.scope, self.dimension, "AFTER")[self.items], self.items))
        candidate, position, _, after = touched
        change = self._terms(ctx, after, self.items[position]) - terms[position]
        return (terms.sum() + np.bincount(candidate, change, minlength=ctx.size)
                ) / len(self.items)

    @functools.cached_property
    def _positions(self) -> np.ndarray:
        return positions_among(self.scope, self.items)

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        if len(self.items) == 0:
            return GoalForm(Lin())
        util = b.util(self.scope, self.dimension, "AFTER")
        initial = b.initial_util(self.scope, self.dimension)
        caps = self.scope.capacity(self.dimension)
        terms = []
        with b.errors_scaled(1 / len(self.items)):  # the goal is the terms' mean
            for i in self.items:
                cap = to_fraction(float(caps[i]))
                u = util[i] / cap
                level = max(to_fraction(self.lower_bound), initial[i] / cap)
                if self.squares:
                    reference = float(level) ** POWER

                    def excess(x: float, r: float = reference) -> float:
                        return max(0.0, max(x, 0.0) ** POWER - r)

                    terms.append(convex_pwl(b, u, excess, kinks=[float(level)], what=self.name,
                                            from_below=True))
                else:
                    terms.append(b.positive_part(u - level, what=self.name))
        return GoalForm(lin_sum(terms) / len(self.items))
