"""MinimizeMovementSpec: the (normalized) size of what moves into each scope item
(docs/semantics.md#minimizemovement)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ..context import EvalContext
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Info
from ..cpsat.linear import Lin, lin_sum, to_fraction
from ..errors import InputError
from ..fields import Fields
from ..problem import Problem, Scope
from .common import GoalForm, Spec, register, resolve_dimension, resolve_scope, spec_name

MAGIC_SCALING = 0.001


@register
@dataclass(frozen=True, eq=False)
class MinimizeMovementSpec(Spec):
    arm = "minimizeMovementSpec"
    counts_moves = True

    name: str
    scope: Scope
    dimension: str
    magic_scaling: bool
    normalize: bool
    allowance: float

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> MinimizeMovementSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        dimension = resolve_dimension(problem, f.text("dimension"), f.at("dimension"),
                                      default=problem.count_dimension, vector=True)
        magic = f.flag("magicScaling", True)
        normalize = not f.flag("doNotNormalize")
        allowance = f.number("allowance", 0.0)
        f.done(cls.arm)
        if allowance < 0:
            raise InputError(f.at("allowance"), "must not be negative", allowance)
        if normalize:
            caps = scope.capacity(dimension)
            if (caps == 0).any():
                raise InputError(f.at("dimension"), "normalized movement divides by capacity; "
                                 "this scope item has zero capacity (set doNotNormalize)",
                                 scope.items[int((caps == 0).argmax())])
            if not scope.items:
                raise InputError(f.at("scope"), "normalized movement needs at least one item")
        return cls(name, scope, dimension, magic, normalize, allowance)

    @property
    def linear_in_assignment(self) -> bool:
        return self.normalize or self.allowance == 0

    batched: ClassVar[bool] = True

    def evaluate(self, ctx: EvalContext) -> np.ndarray:
        new = ctx.util(self.scope, self.dimension, "NEW")
        outside = ctx.out_of_scope_new(self.scope, self.dimension)
        if self.normalize:
            weight = MAGIC_SCALING if self.magic_scaling else 1.0
            caps = self.scope.capacity(self.dimension)
            return weight / len(caps) * ((new / caps).sum(axis=-1) + outside)
        total = new.sum(axis=-1) + outside
        return np.maximum(0.0, total - self.allowance) if self.allowance != 0 else total

    def infos(self, ctx: EvalContext) -> np.ndarray:
        return np.asarray(self.evaluate(ctx), dtype=float)[..., None]

    def budget(self, ctx: EvalContext) -> tuple[float | np.ndarray, float] | None:
        if not self._allowed:  # normalized, or no allowance: nothing moves for free
            return None
        new = ctx.util(self.scope, self.dimension, "NEW")
        return new.sum(axis=-1) + ctx.out_of_scope_new(self.scope, self.dimension), \
            self.allowance

    @property
    def _allowed(self) -> bool:
        """Whether moves up to the allowance are free (never when normalized)."""
        return self.allowance != 0 and not self.normalize

    def _rule(self, b: CpBuilder) -> Lin:
        """What moved beyond the allowance (negative when within it), or all that moved."""
        moved = self._moved(b)
        return moved - to_fraction(self.allowance) if self._allowed else moved

    def _form(self, b: CpBuilder) -> Lin:
        rule = self._rule(b)
        return b.positive_part(rule, what=self.name) if self._allowed else rule

    def _moved(self, b: CpBuilder) -> Lin:
        """What moved, as the spec counts it: normalized per item capacity, or in all."""
        new = b.util(self.scope, self.dimension, "NEW")
        outside = b.out_of_scope_new(self.scope, self.dimension)
        if self.normalize:
            weight = to_fraction(MAGIC_SCALING) if self.magic_scaling else 1
            caps = self.scope.capacity(self.dimension)
            total = lin_sum(n / to_fraction(float(c)) for n, c in zip(new, caps)) + outside
            return total * weight / len(caps)
        if self.dimension in b.problem.vector_dims:
            return lin_sum(new) + outside
        # every object counts once at most: what moved never exceeds all sizes together
        scale = b.scale(self.dimension)
        return b.bounded_sum([*new, outside], Fraction(scale.most) / scale.factor)

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        return GoalForm(self._form(b))

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        # the rule itself, not its positive part: a hard rule then reads it exactly, where a
        # positive part over loads near 1e16 units may have no integer form left
        return [Info(self._rule(b))]
