"""GroupMoveLimitSpec: how much of each partition group may move
(docs/semantics.md#groupmovelimit). Constraint only, on the container scope.

An object o of group g counts when it ends outside its initial container h, h is a source
that affects the limit and its final container a destination that does; it weighs its value
of the dimension (for a dynamic one, the larger of its values at h and where it lands). With
M_g the weight of g's counted objects and L_g its limit, the one constraint expression is
``e = max(0, max_g (M_g − L_g))``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..context import EvalContext, MoveBatch, membership
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Info
from ..cpsat.linear import Lin, to_fraction
from ..errors import InputError
from ..fields import Fields
from ..primitives import TOLERANCE, MoveBudget, Restrictions
from ..problem import Problem
from .common import (
    GroupLimit,
    Spec,
    parse_filter,
    register,
    resolve_dimension,
    resolve_partition,
    spec_name,
)


@register
@dataclass(frozen=True, eq=False)
class GroupMoveLimitSpec(Spec):
    arm = "groupMoveLimitSpec"
    goal_allowed = False

    name: str
    dimension: str
    groups: list[str]  # groups with a finite limit, in partition order
    members: list[np.ndarray]
    limits: np.ndarray  # L_g per listed group
    source: np.ndarray  # per container: moves out of it count
    destination: np.ndarray  # per container: moves into it count
    dynamic: bool

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> GroupMoveLimitSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        partition = resolve_partition(problem, f.text("partitionName"), f.at("partitionName"))
        dimension = resolve_dimension(problem, f.text("dimension"), f.at("dimension"),
                                      default=problem.count_dimension,
                                      metrics=("AFTER", "INITIAL"))
        containers = problem.container_scope
        limit = GroupLimit.parse(f.raw("limit"), f.at("limit"), containers, partition,
                                 "ABSOLUTE")
        for key, given in (("scopeItemLimits", limit.items),
                           ("scopeItemToGroupLimits", limit.item_groups)):
            if given:
                raise InputError(f"{f.at('limit')}.{key}", "per-item limits have no effect on "
                                 "this spec (Rebalancer reads groupLimits and globalLimit only)")
        source = parse_filter(f.raw("sourceScopeItemsAffectingLimitFilter"),
                              f.at("sourceScopeItemsAffectingLimitFilter"), containers)
        destination = parse_filter(f.raw("destinationScopeItemsAffectingLimitFilter"),
                                   f.at("destinationScopeItemsAffectingLimitFilter"),
                                   containers)
        if f.raw("scope") is not None:
            raise InputError(f.at("scope"), "GroupMoveLimit has no scope field: it is on the "
                             "container scope")
        f.done(cls.arm)
        dynamic = dimension in problem.dynamic_dims
        if dynamic and problem.dynamic_dims[dimension].scope != problem.container_name:
            raise InputError(f.at("dimension"), "a dynamic dimension here must be defined on "
                             "the container scope (a move weighs the object's value in the "
                             "containers it leaves and enters)", dimension)
        groups, members, limits = [], [], []
        for group, objects in partition.items():
            value = limit.of_group(group)
            if value < 0:
                where = (f"{f.at('limit')}.groupLimits.{group}" if group in limit.groups
                         else f"{f.at('limit')}.globalLimit")
                raise InputError(where, "a move limit cannot be negative", value)
            if np.isinf(value):
                continue  # never exceeded
            groups.append(group)
            members.append(objects)
            limits.append(value)
        return cls(name, dimension, groups, members, np.asarray(limits, dtype=float),
                   source, destination, dynamic)

    @property
    def filtered(self) -> bool:
        """Whether some moves do not count (a filter leaves a container out)."""
        return not (self.source.all() and self.destination.all())

    def prefers_staying(self) -> bool:
        """More objects staying never adds to a group's moves; but when where a mover came
        from and where it went both matter (a destination filter, a dynamic size), objects
        are kept apart by initial container so the model sees each mover's origin."""
        return not self.dynamic and self.destination.all()

    def restrictions(self, problem: Problem) -> Restrictions:
        """Groups that may not move at all are fixed, as Rebalancer fixes them (unless a
        filter lets some of their moves go uncounted)."""
        if self.filtered:
            return Restrictions()
        fixed = [obj for objects, limit in zip(self.members, self.limits)
                 if limit <= TOLERANCE for obj in objects.tolist()]
        return Restrictions(fixed_objects=frozenset(fixed))

    def reads_groups(self) -> bool:
        return True

    def move_budgets(self, problem: Problem) -> list[MoveBudget]:
        """Each group's limit, when every move counts at the object's one size."""
        if self.filtered or self.dynamic:
            return []
        values = problem.object_dims[self.dimension]
        return [MoveBudget(members, values[members], float(limit))
                for members, limit in zip(self.members, self.limits)]

    def container_roles(self, problem: Problem) -> list[Hashable] | None:
        if self.dynamic:
            return None
        return list(zip(self.source.tolist(), self.destination.tolist()))

    def info_labels(self, problem: Problem) -> list[str]:
        return ["largest group excess of moves"]

    # ---------- evaluation ----------
    @property
    def batched(self) -> bool:  # type: ignore[override]
        """A batch prices static sizes only (a dynamic one weighs where the object lands)."""
        return not self.dynamic

    def _counted(self, home: np.ndarray, final: np.ndarray, weights: np.ndarray
                 ) -> np.ndarray:
        """Each object's weight where its move counts (out of a source, into a
        destination), else 0."""
        return np.where((final != home) & self.source[home] & self.destination[final],
                        weights, 0.0)

    def _moved(self, ctx: EvalContext) -> np.ndarray:
        """M_g per listed group."""
        problem = ctx.problem
        home, final = ctx.initial, ctx.final
        weights = problem.values_at(self.dimension, home)
        if self.dynamic:
            weights = np.maximum(weights, problem.values_at(self.dimension, final))
        counted = self._counted(home, final, weights)
        objects, groups = self._membership
        return np.bincount(groups, weights=counted[objects], minlength=len(self.members))

    @functools.cached_property
    def _membership(self) -> tuple[np.ndarray, np.ndarray]:
        return membership(self.members)

    def infos(self, ctx: EvalContext) -> np.ndarray:
        if isinstance(ctx, MoveBatch):
            return self._largest_excess_in_batch(ctx)[:, None]
        excess = self._moved(ctx) - self.limits
        return np.asarray([max(0.0, float(excess.max())) if len(excess) else 0.0])

    def _largest_excess_in_batch(self, batch: MoveBatch) -> np.ndarray:
        """max(0, max_g (M_g − L_g)) per candidate: the base's excess per group, changed in
        the groups a candidate's moves touch; the largest of the others is the first of the
        base's largest that the candidate leaves alone."""
        if not len(self.limits):
            return np.zeros(batch.size)
        base = batch.base
        excess = base.memo((self, "excess"), lambda: self._moved(base) - self.limits)
        largest = base.memo((self, "largest"), lambda: np.argsort(-excess, kind="stable"))
        candidate, mover, target, group = batch.group_moves(self.members)
        home = batch.initial[mover]
        weights = batch.problem.object_dims[self.dimension][mover]
        change = (self._counted(home, target, weights)
                  - self._counted(home, batch.current[mover], weights))
        n_groups = len(self.limits)
        pairs, pair_of = np.unique(candidate * n_groups + group, return_inverse=True)
        owner, touched = pairs // n_groups, pairs % n_groups
        now = excess[touched] + np.bincount(pair_of, weights=change, minlength=len(pairs))
        result = np.full(batch.size, -np.inf)
        np.maximum.at(result, owner, now)
        count = np.bincount(owner, minlength=batch.size)
        top = largest[:min(n_groups, int(count.max(initial=0)) + 1)]
        rank = np.full(n_groups, -1)
        rank[top] = np.arange(len(top))
        taken = np.zeros((batch.size, len(top)), dtype=bool)
        ranked = rank[touched] >= 0
        taken[owner[ranked], rank[touched][ranked]] = True
        free = ~taken
        others = np.where(free.any(axis=1), excess[top][free.argmax(axis=1)], -np.inf)
        return np.maximum(0.0, np.maximum(result, others))

    # ---------- compilation ----------
    def _moved_units(self, b: CpBuilder, members: np.ndarray) -> tuple[list, list[int]]:
        """M_g in integer units of the dimension, as terms (expressions, coefficients)."""
        problem = b.problem
        values = b.var_values(self.dimension)
        scale = b.scale(self.dimension)
        variables, coefs = [], []
        for k in b.group_classes(members):
            home = b.classes.home[k]
            if len(home) == 1:  # one origin: each count variable is a move or not
                (start,) = home
                if not self.source[start]:
                    continue
                first = int(b.classes.members[k][0])
                at_home = (int(scale.table[first, start]) if scale.table is not None
                           else int(scale.values[first]))
                for j in b.class_vars[k]:
                    c = int(b.var_cont[j])
                    if c != start and self.destination[c]:
                        variables.append(b.count_vars[j])
                        coefs.append(max(at_home, int(values[j])) if self.dynamic
                                     else int(values[j]))
                continue
            # several origins (static dimension, no destination filter): those that left
            value = int(scale.values[int(b.classes.members[k][0])])
            stays = b.stay_counts(problem.container_scope)
            for start, count in home.items():
                if self.source[start]:
                    expr, _ = stays[(k, start)]
                    variables.append(count - expr)
                    coefs.append(value)
        return variables, coefs

    def _cap_moves(self, b: CpBuilder, members: np.ndarray, limit: float) -> None:
        """Tell the greedy starts how many objects of each class of a group may move: as
        many as weigh at most the group's limit (each class alone; the model checks the
        sum)."""
        values = b.problem.values_at(self.dimension, b.problem.initial)
        classes = b.group_classes(members)
        most = []
        for k in classes:
            weight = float(values[b.classes.members[k][0]])
            most.append(len(b.classes.members[k]) if weight <= 0
                        else math.floor(limit / weight + TOLERANCE))
        b.cap_moves(classes, most)

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        if not self.groups:
            return [Info(Lin())]
        scale = b.scale(self.dimension)
        unit = Fraction(1, scale.factor)
        forms = []
        for members, limit in zip(self.members, self.limits):
            if not self.filtered and not self.dynamic:
                self._cap_moves(b, members, float(limit))
            variables, coefs = self._moved_units(b, members)
            most = (int(scale.table[members].max(axis=1).sum()) if self.dynamic
                    else int(scale.values[members].sum()))
            expr = sum(c * v for c, v in zip(coefs, variables)) if variables else 0
            atom = b.new_atom(expr, 0, most, 0)
            forms.append(Lin.atom(atom, unit) - to_fraction(float(limit)))
        return [Info(b.exact_max(forms, what=self.name))]
