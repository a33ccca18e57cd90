"""MovesInProgressSpec: moves already under way, honoured by every other spec
(docs/semantics.md#movesinprogress). Constraint only.

Each listed object is held at its destination whatever the policy (Rebalancer fixes it
there). The solve starts with the moves done (``Problem.initial``), while every utilization
definition counts from before them (``Problem.origin``), so DURING still sees a moving
object at its source too. The scenario applies the moves (``moves_in_flight``)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..context import EvalContext
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Info
from ..cpsat.linear import lin_sum
from ..errors import InputError
from ..fields import Fields, check_list
from ..primitives import Restrictions
from ..problem import Problem
from .common import Spec, register, spec_name


@register
@dataclass(frozen=True, eq=False)
class MovesInProgressSpec(Spec):
    arm = "movesInProgressSpec"
    goal_allowed = False
    single_parameter = True  # Rebalancer's binding applies the global policy only
    restricts_when_soft = True

    name: str
    objects: np.ndarray  # per listed move, in order (an object may be listed twice)
    destinations: np.ndarray  # container per listed move

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> MovesInProgressSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        moves = check_list(f.raw("moves") if f.raw("moves") is not None else [], f.at("moves"))
        f.done(cls.arm)
        objects, destinations = [], []
        for k, move in enumerate(moves):
            where = f"{f.at('moves')}[{k}]"
            m = Fields(move, where)
            obj, container = m.text("objName"), m.text("toContainer")
            m.done("MoveInProgress")
            if obj not in problem.object_index:
                raise InputError(m.at("objName"), "unknown object", obj)
            if container not in problem.container_index:
                raise InputError(m.at("toContainer"), "unknown container", container)
            objects.append(problem.object_index[obj])
            destinations.append(problem.container_index[container])
        return cls(name, np.asarray(objects, dtype=np.int64),
                   np.asarray(destinations, dtype=np.int64))

    @classmethod
    def wire_moves_in_flight(cls, body: dict) -> list[tuple[str, str]]:
        return [(move["objName"], move["toContainer"]) for move in body.get("moves") or []]

    def moves_in_flight(self) -> list[tuple[int, int]]:
        return list(zip(self.objects.tolist(), self.destinations.tolist()))

    batched: ClassVar[bool] = True

    def infos(self, ctx: EvalContext) -> np.ndarray:
        """One expression: the listed moves whose object is not at its destination. It is 0
        unless an object is listed with two destinations (only the first one holds)."""
        done = ctx.final_at(self.objects) == self.destinations
        return (len(self.objects) - done.sum(axis=-1, keepdims=True)).astype(float)

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        scope = b.problem.container_scope
        arrived = lin_sum(b.object_in_item(int(o), scope, int(c))
                          for o, c in zip(self.objects, self.destinations))
        return [Info(arrived * -1 + len(self.objects))]

    def restrictions(self, problem: Problem) -> Restrictions:
        """Every listed object is fixed where the solve starts: at its (first) destination."""
        return Restrictions(fixed_objects=frozenset(self.objects.tolist()))

    def object_roles(self) -> dict[int, Hashable]:
        return {int(o): "in flight" for o in self.objects}

    def info_labels(self, problem: Problem) -> list[str]:
        return [", ".join(f"{problem.objects[o]} to {problem.containers[c]}"
                          for o, c in zip(self.objects, self.destinations))]
