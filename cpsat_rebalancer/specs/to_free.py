"""ToFreeSpec: empty the listed containers (docs/semantics.md#tofree). Goal: total
utilization or (optimal-solver flavour) occupied containers; constraint: no utilization and
nothing new on them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..context import EvalContext, step
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Info
from ..cpsat.linear import lin_sum
from ..enums import enum_value
from ..errors import InputError
from ..fields import Fields
from ..primitives import TOLERANCE, Restrictions
from ..problem import Problem
from .common import (
    GoalForm,
    Spec,
    leaving,
    register,
    resolve_dimension,
    resolve_items,
    spec_name,
)


@register
@dataclass(frozen=True, eq=False)
class ToFreeSpec(Spec):
    arm = "toFreeSpec"
    enum_fields = {"formula": "ToFreeSpecFormula"}

    @classmethod
    def wheel_evaluates_as_mip(cls, body: dict) -> bool:
        """Occupied containers: the local search counts them differently
        (docs/semantics.md#tofree)."""
        return body.get("formula") == enum_value("ToFreeSpecFormula",
                                                 "MINIMIZE_OCCUPIED_CONTAINERS")

    name: str
    containers: np.ndarray  # container indices (= items of the container scope)
    dimension: str
    formula: str
    is_constraint: bool

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *, as_goal: bool) -> ToFreeSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = problem.container_scope
        containers = resolve_items(scope, f.names("containers"), f.at("containers"))
        dim = f.raw("dimension")
        if dim is not None and not isinstance(dim, str):
            raise InputError(f.at("dimension"), "expected a string", dim)
        if dim:
            resolve_dimension(problem, dim, f.at("dimension"), metrics=("NEW",))
        formula = cls.enum(f, "formula", "MINIMIZE_TOTAL_UTILIZATION")
        f.done(cls.arm)
        if not as_goal and formula != "MINIMIZE_TOTAL_UTILIZATION":
            raise InputError(f.at("formula"), "as a constraint only MINIMIZE_TOTAL_UTILIZATION "
                             "is allowed", formula)
        return cls(name, np.asarray(sorted(set(containers)), dtype=np.int64),
                   dim or problem.count_dimension, formula, not as_goal)

    @property
    def linear_in_assignment(self) -> bool:
        return self.formula == "MINIMIZE_TOTAL_UTILIZATION"

    def _scope(self, problem: Problem):
        return problem.container_scope

    batched: ClassVar[bool] = True

    def evaluate(self, ctx: EvalContext) -> np.ndarray:
        after = ctx.util(self._scope(ctx.problem), self.dimension, "AFTER")[..., self.containers]
        if self.formula == "MINIMIZE_OCCUPIED_CONTAINERS":
            return step(after).sum(axis=-1)
        return after.sum(axis=-1)

    def guide(self, ctx: EvalContext) -> np.ndarray | None:
        """Occupied containers: Rebalancer's local-search form of the spec,
        ``(1.1/v_min)·Σ_c A_c − Σ_c A_c² / (Σv)²``. The count falls only when a container's
        last object leaves; this falls with each object that leaves, most where a
        container is nearly empty."""
        if self.formula != "MINIMIZE_OCCUPIED_CONTAINERS":
            return None
        values = ctx.problem.object_dims[self.dimension]
        positive_values = values[values > 0]
        total = float(values.sum())
        if not len(positive_values) or total <= 0:
            return None
        after = ctx.util(self._scope(ctx.problem), self.dimension, "AFTER")[..., self.containers]
        return (1.1 / float(positive_values.min()) * after.sum(axis=-1)
                - (after**2).sum(axis=-1) / total**2)

    def departures(self, ctx: EvalContext) -> list[tuple[np.ndarray, np.ndarray]]:
        """Occupied containers: each listed container's objects of positive size out of it,
        together (the count falls only with the last of them; on the way, each move may
        cost a goal beside it at the same position)."""
        if self.formula != "MINIMIZE_OCCUPIED_CONTAINERS":
            return []
        scope = self._scope(ctx.problem)
        listed = np.zeros(ctx.problem.num_containers, dtype=bool)
        listed[self.containers] = True
        sizes = ctx.problem.values_at(self.dimension, ctx.final)
        objects = np.flatnonzero(listed[ctx.final] & (sizes > TOLERANCE))
        where = ctx.final[objects]
        return leaving(scope, objects, where, scope.container_item[where])

    def infos(self, ctx: EvalContext) -> np.ndarray:
        scope = self._scope(ctx.problem)
        after = ctx.util(scope, self.dimension, "AFTER")[..., self.containers]
        new = ctx.util(scope, self.dimension, "NEW")[..., self.containers]
        return np.stack([after, new], axis=-1).reshape(after.shape[:-1] + (-1,))

    def info_labels(self, problem: Problem) -> list[str]:
        return [f"{what} {problem.containers[c]}" for c in self.containers
                for what in ("empty", "nothing new on")]

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        after = b.util(self._scope(b.problem), self.dimension, "AFTER")
        if self.formula == "MINIMIZE_OCCUPIED_CONTAINERS":
            return GoalForm(lin_sum(b.step(after[c]) for c in self.containers))
        return GoalForm(lin_sum(after[c] for c in self.containers))

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        scope = self._scope(b.problem)
        after = b.util(scope, self.dimension, "AFTER")
        new = b.util(scope, self.dimension, "NEW")
        return [Info(form) for c in self.containers for form in (after[c], new[c])]

    def restrictions(self, problem: Problem) -> Restrictions:
        """As a constraint, the containers accept nothing new unless zero-size objects exist
        (Rebalancer's rule: a zero-size object could enter without breaking the spec)."""
        if self.is_constraint and bool(np.all(problem.object_dims[self.dimension] > 0)):
            return Restrictions(non_accepting=frozenset(self.containers.tolist()))
        return Restrictions()
