"""TopologySpreadSpec: this project's own spec (Rebalancer has none like it), the static
form of Kubernetes' ``whenUnsatisfiable: DoNotSchedule`` topology spread
(docs/semantics.md#topologyspread).

Per group g of the partition and filtered item d of the scope (a topology domain), with
c_g(d) the group's AFTER utilization of the dimension there (by default its object count):
e_gd = c_g(d) − m_g − maxSkew, where m_g = min over the filtered items of c_g, or 0 when
fewer items than ``minDomains`` are filtered in. One constraint expression per (group,
item); the goal is Σ e_gd⁺. Compiled exactly: m_g is one CP-SAT minimum per group.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..context import EvalContext, positive
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Info
from ..cpsat.linear import Lin, lin_sum, to_fraction
from ..errors import InputError
from ..fields import Fields
from ..problem import Problem, Scope
from .common import (
    GoalForm,
    Spec,
    group_of,
    parse_filter,
    register,
    resolve_dimension,
    resolve_partition,
    resolve_scope,
    roles_by_item,
    spec_name,
)
from .group_diversity import group_after, group_after_forms


@register
@dataclass(frozen=True, eq=False)
class TopologySpreadSpec(Spec):
    arm = "topologySpreadSpec"
    in_rebalancer = False

    name: str
    scope: Scope
    dimension: str
    group_names: list[str]
    members: list[np.ndarray]  # object indices per group (disjoint)
    items: np.ndarray  # the filtered items: the domains
    max_skew: float
    floor_is_zero: bool  # fewer domains than minDomains: the global minimum is 0

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> TopologySpreadSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        partition = resolve_partition(problem, f.text("partition"), f.at("partition"))
        dimension = resolve_dimension(problem, f.text("dimension"), f.at("dimension"),
                                      default=problem.count_dimension, metrics=("AFTER",))
        max_skew = f.number("maxSkew", 1.0)
        if max_skew < 0:
            raise InputError(f.at("maxSkew"), "must be at least 0", max_skew)
        min_domains = f.number("minDomains", 1.0)
        if min_domains < 1 or min_domains != math.floor(min_domains):
            raise InputError(f.at("minDomains"), "must be a whole number, at least 1",
                             min_domains)
        mask = parse_filter(f.raw("filter"), f.at("filter"), scope)
        f.done(cls.arm)
        items = np.flatnonzero(mask)
        members = list(partition.values())
        group_of(problem, members, f.at("partition"))  # refuses overlapping groups
        return cls(name, scope, dimension, list(partition), members, items, float(max_skew),
                   len(items) < min_domains)

    def reads_groups(self) -> bool:
        return True

    def reads_initial(self) -> bool:
        return False

    def container_roles(self, problem: Problem) -> list[Hashable]:
        # swapping containers within one domain changes no count; across domains it may
        return roles_by_item(self.scope, {int(i): ("domain", int(i)) for i in self.items})

    def info_labels(self, problem: Problem) -> list[str]:
        return [f"skew of {g} in {self.scope.items[i]}" for g in self.group_names
                for i in self.items]

    # ---------- evaluation ----------
    def infos(self, ctx: EvalContext) -> np.ndarray:
        after = group_after(ctx, self.scope, self.dimension, self.members)
        counts = after[:, self.items]
        if counts.shape[1] == 0:
            return np.zeros(0)
        floor = np.zeros(len(self.members)) if self.floor_is_zero else counts.min(axis=1)
        return (counts - floor[:, None] - self.max_skew).ravel()

    def evaluate(self, ctx: EvalContext) -> float:
        return float(positive(self.infos(ctx)).sum())

    # ---------- compilation ----------
    def _forms(self, b: CpBuilder) -> list[Lin]:
        skew = to_fraction(self.max_skew)
        forms: list[Lin] = []
        for members in self.members:
            if len(members) == 0:
                forms += [Lin(const=-skew)] * len(self.items)
                continue
            utils = group_after_forms(b, self.scope, self.dimension, members)
            counts = [utils[i] for i in self.items]
            floor = Lin() if self.floor_is_zero or not counts else \
                -b.exact_max([-c for c in counts], what=self.name)
            forms += [c - floor - skew for c in counts]
        return forms

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        return [Info(form) for form in self._forms(b)]

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        return GoalForm(lin_sum(b.positive_part(form, what=self.name)
                                for form in self._forms(b)))
