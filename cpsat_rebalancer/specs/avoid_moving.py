"""AvoidMovingSpec: the listed objects stay where they are
(docs/semantics.md#avoidmoving). Constraint only; the objects are fixed (unless the global
policy is SOFT, which only prices their moves)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..context import EvalContext
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Info
from ..cpsat.linear import lin_sum
from ..fields import Fields
from ..primitives import Restrictions
from ..problem import Problem
from .common import Spec, register, resolve_objects, spec_name


@register
@dataclass(frozen=True, eq=False)
class AvoidMovingSpec(Spec):
    arm = "avoidMovingSpec"
    goal_allowed = False
    single_parameter = True

    name: str
    objects: np.ndarray

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *, as_goal: bool) -> AvoidMovingSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        objects = resolve_objects(problem, f.names("objects"), f.at("objects"))
        f.done(cls.arm)
        return cls(name, np.asarray(sorted(set(objects)), dtype=np.int64))

    batched: ClassVar[bool] = True

    def infos(self, ctx: EvalContext) -> np.ndarray:
        stayed = ctx.final_at(self.objects) == ctx.initial[self.objects]
        return (len(self.objects) - stayed.sum(axis=-1, keepdims=True)).astype(float)

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        """e = listed objects not in their initial container (0 whenever they are fixed)."""
        scope = b.problem.container_scope
        home = b.problem.initial
        return [Info(lin_sum(b.object_in_item(int(o), scope, int(home[o])) for o in self.objects)
                     * -1 + len(self.objects))]

    def restrictions(self, problem: Problem) -> Restrictions:
        return Restrictions(fixed_objects=frozenset(self.objects.tolist()))

    def object_roles(self) -> dict[int, Hashable]:
        return {int(o): "fixed" for o in self.objects}
