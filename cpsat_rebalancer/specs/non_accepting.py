"""NonAcceptingSpec: no new objects enter the listed scope items
(docs/semantics.md#nonaccepting). Constraint only; single-container items become
non-accepting containers (unless the policy is SOFT)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..context import EvalContext
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Info
from ..fields import Fields
from ..primitives import Restrictions
from ..problem import Problem, Scope
from .common import Spec, register, resolve_items, resolve_scope, spec_name


@register
@dataclass(frozen=True, eq=False)
class NonAcceptingSpec(Spec):
    arm = "nonAcceptingSpec"
    goal_allowed = False

    name: str
    scope: Scope
    items: list[int]

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> NonAcceptingSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        items = resolve_items(scope, f.names("items"), f.at("items"))
        f.done(cls.arm)
        return cls(name, scope, items)

    batched: ClassVar[bool] = True

    def infos(self, ctx: EvalContext) -> np.ndarray:
        new = ctx.util(self.scope, ctx.problem.count_dimension, "NEW")
        return new[..., self.items].astype(float)

    def info_labels(self, problem: Problem) -> list[str]:
        return [f"nothing new on {self.scope.items[i]}" for i in self.items]

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        new = b.util(self.scope, b.problem.count_dimension, "NEW")
        return [Info(new[i]) for i in self.items]

    def restrictions(self, problem: Problem) -> Restrictions:
        members = self.scope.members()
        single = {int(members[i][0]) for i in self.items if len(members[i]) == 1}
        return Restrictions(non_accepting=frozenset(single))
