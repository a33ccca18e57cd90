"""AvoidAssignmentsSpec: listed objects should not end up in listed scope items
(docs/semantics.md#avoidassignments)."""

from __future__ import annotations

import functools
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..context import EvalContext
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Info
from ..cpsat.linear import lin_sum
from ..fields import Fields, check_list
from ..problem import Problem, Scope
from .common import Spec, register, resolve_items, resolve_objects, resolve_scope, spec_name


@register
@dataclass(frozen=True, eq=False)
class AvoidAssignmentsSpec(Spec):
    arm = "avoidAssignmentsSpec"
    goal_allowed = False

    name: str
    scope: Scope
    item_objects: list[tuple[int, np.ndarray]]  # (item, distinct objects to keep out of it)

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> AvoidAssignmentsSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        entries = f.raw("assignments")
        f.done(cls.arm)
        entries = check_list([] if entries is None else entries, f.at("assignments"))
        per_item: dict[int, set[int]] = {}
        for k, entry in enumerate(entries):
            sub = Fields(entry, f"{f.at('assignments')}[{k}]")
            obj = resolve_objects(problem, [sub.text("object")], sub.at("object"))[0]
            items = resolve_items(scope, sub.names("scopeItems"), sub.at("scopeItems"))
            sub.done("AvoidAssignment")
            for item in items:
                per_item.setdefault(item, set()).add(obj)
        return cls(name, scope, [(i, np.asarray(sorted(o), dtype=np.int64))
                                 for i, o in per_item.items()])

    batched: ClassVar[bool] = True

    def infos(self, ctx: EvalContext) -> np.ndarray:
        if not self.item_objects:
            return np.zeros(0)
        named, starts, avoided = self._named
        inside = self.scope.container_item[ctx.final_at(named)] == avoided
        return np.add.reduceat(inside.astype(float), starts, axis=-1)

    @functools.cached_property
    def _named(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every item's objects, one list after another, where each item's list starts,
        and the item each entry avoids (a batch then reads where these objects end, not
        every candidate's assignment)."""
        lengths = [len(objs) for _, objs in self.item_objects]
        named = np.concatenate([objs for _, objs in self.item_objects])
        avoided = np.repeat([item for item, _ in self.item_objects], lengths)
        return named, np.cumsum([0, *lengths[:-1]]), avoided

    def info_labels(self, problem: Problem) -> list[str]:
        return [", ".join(problem.objects[o] for o in objs) + f" not on {self.scope.items[i]}"
                for i, objs in self.item_objects]

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        return [Info(lin_sum(b.object_in_item(int(o), self.scope, item) for o in objs))
                for item, objs in self.item_objects]

    def object_roles(self) -> dict[int, Hashable]:
        return {int(o): "avoid" for _, objs in self.item_objects for o in objs}
