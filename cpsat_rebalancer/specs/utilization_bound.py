"""Capacity's ``utilizationBound``: each partition group's share of a scope item's
utilization capped (UPPER) or raised to a floor when present (LOWER)
(docs/semantics.md#utilization-bound).

Per scope item i, with U_g the utilization of group g in i (summed over the items of the
aggregation scope inside i when one is given): when the item's default bound is set, the
item counts Σ_g b(U_g, L_g) over every group, and objects in no group count nothing; when it
is unbounded, only the groups with a bound of their own are bounded and everything else
counts in full. b is min(U, L) for UPPER and max(U, step(U)·L) for LOWER.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..context import EvalContext, MoveBatch, step
from ..cpsat.builder import CpBuilder
from ..cpsat.linear import Lin, lin_sum, to_fraction
from ..errors import InputError
from ..fields import Fields
from ..problem import OUT_OF_SCOPE, Problem, Scope
from .common import GroupLimit, resolve_partition, resolve_scope

NEEDS = {"AFTER": ("AFTER",), "INITIAL": ("INITIAL",), "STAYED": ("STAYED",),
         "DURING": ("AFTER", "INITIAL", "STAYED"), "NEW": ("AFTER", "STAYED"),
         "OLD": ("INITIAL", "STAYED"), "MOVED": ("AFTER", "INITIAL", "STAYED")}


def _metric(after, initial, stayed, metric: str):
    """A utilization definition from the AFTER, INITIAL and STAYED parts (arrays or forms)."""
    return {"AFTER": lambda: after, "INITIAL": lambda: initial, "STAYED": lambda: stayed,
            "DURING": lambda: after + initial - stayed, "NEW": lambda: after - stayed,
            "OLD": lambda: initial - stayed,
            "MOVED": lambda: after + initial - stayed * 2}[metric]()


@dataclass(frozen=True, eq=False)
class UtilizationBound:
    upper: bool  # UPPER: min(U, L); LOWER: max(U, step(U)·L)
    members: list[np.ndarray]  # object indices per group
    bound_all: np.ndarray  # per filtered item: every group bounded, ungrouped objects dropped
    limits: np.ndarray  # (filtered item, group): the group's bound, nan where it has none
    aggregation: Scope | None  # the scope group utilizations are summed over, if any
    image: list[np.ndarray]  # per filtered item: its items in the aggregation scope

    @classmethod
    def parse(cls, data: Any, path: str, problem: Problem, scope: Scope, dimension: str,
              items: np.ndarray) -> UtilizationBound | None:
        """The union ``{"groupUtilizationBound": {...}}``; None when it sets no arm (the
        wheel then bounds nothing)."""
        union = Fields(data, path)
        body = union.raw("groupUtilizationBound")
        union.done("UtilizationBound")
        if body is None:
            return None
        f = Fields(body, union.at("groupUtilizationBound"))
        partition = resolve_partition(problem, f.text("partitionName"), f.at("partitionName"))
        upper = f.enum("boundType", "UtilizationBoundType", "UPPER") == "UPPER"
        given = f.raw("perGroupValues")
        aggregation_name = f.text("aggregationScope")
        f.done("GroupUtilizationBound")
        if dimension in problem.dynamic_dims:
            raise InputError(f.at("partitionName"), "a utilization bound needs a static "
                             "dimension (group utilizations of a dynamic one are not modelled)",
                             dimension)
        members = list(partition.values())
        seen = np.concatenate(members) if members else np.zeros(0, dtype=np.int64)
        if len(np.unique(seen)) < len(seen):
            raise InputError(f.at("partitionName"), "Rebalancer does not bound utilization "
                             "on a partition whose groups overlap", f.text("partitionName"))
        # a Limit given here keeps the defaults of the field it replaces for what it omits
        # (ABSOLUTE, unbounded by default), as the wheel merges it; the type is not read
        if given is not None and not isinstance(given, dict):
            raise InputError(f.at("perGroupValues"), "expected a Limit mapping", given)
        values = {"isDefaultLimitUnbounded": True, **(given or {})}
        limit = GroupLimit.parse(values, f.at("perGroupValues"), scope, partition, "ABSOLUTE")
        groups = list(partition)
        bound_all = np.zeros(len(items), dtype=bool)
        limits = np.full((len(items), len(groups)), math.nan)
        anything = bool(limit.groups)
        for p, item in enumerate(items.tolist()):
            default = limit.items.get(item, limit.global_limit)
            overrides = {}
            if anything or item in limit.items or item in limit.item_groups:
                overrides = {g: value for g, name in enumerate(groups)
                             if (value := limit.resolve(item, name)) != limit.global_limit}
            # LOWER: a default of 0 or below bounds nothing; an infinite one (the wheel gives
            # NaN there) is taken as no bound too
            unbounded = math.isinf(default) or (not upper and default <= 0)
            bound_all[p] = not unbounded
            for g in range(len(groups)):
                if g in overrides or not unbounded:
                    limits[p, g] = overrides.get(g, default)
        aggregation, image = None, []
        if aggregation_name:
            aggregation = resolve_scope(problem, aggregation_name, f.at("aggregationScope"))
            image = cls._images(scope, aggregation, items, f.at("aggregationScope"))
        return cls(upper, members, bound_all, limits, aggregation, image)

    @staticmethod
    def _images(scope: Scope, aggregation: Scope, items: np.ndarray,
                path: str) -> list[np.ndarray]:
        """Per item, the aggregation scope's items inside it; they must cover it exactly."""
        images = []
        for item in items.tolist():
            inside = np.flatnonzero(scope.container_item == item)
            finer = aggregation.container_item[inside]
            name = scope.items[item]
            if len(inside) == 0 or np.any(finer == OUT_OF_SCOPE):
                raise InputError(path, f"item '{name}' must be covered by items of the "
                                 "aggregation scope", aggregation.name)
            image = np.unique(finer)
            for j in image.tolist():
                if np.any(scope.container_item[aggregation.container_item == j] != item):
                    raise InputError(path, f"item '{aggregation.items[j]}' of the aggregation "
                                     f"scope is not inside item '{name}'", aggregation.name)
            images.append(image)
        return images

    def _per_item(self, group_values: list, p: int, item: int, zero: Any) -> list:
        """Each group's utilization of filtered item p (scope item ``item``): its own, or
        the sum over its items in the aggregation scope."""
        if self.aggregation is None:
            return [values[item] for values in group_values]
        return [sum((values[j] for j in self.image[p].tolist()), start=zero)
                for values in group_values]

    # ---------- evaluation ----------
    def _changes(self, after: np.ndarray, initial: np.ndarray, stayed: np.ndarray,
                 metric: str, items: np.ndarray, groups: np.ndarray | None = None
                 ) -> np.ndarray:
        """What bounding changes of each filtered item's utilization, per group: (filtered
        item, row) for rows of (group, item) utilizations, every group in order or the
        ``groups`` given."""
        by_group = np.asarray(_metric(after, initial, stayed, metric), dtype=float)
        # u[p, r]: row r's utilization of filtered item p (summed over its image)
        if self.aggregation is None:
            u = by_group[:, items].T
        else:
            u = np.stack([by_group[:, image].sum(axis=1) for image in self.image]) \
                if len(items) else np.zeros((0, len(by_group)))
        limits = self.limits if groups is None else self.limits[:, groups]
        bounded = (np.minimum(u, limits) if self.upper
                   else np.maximum(u, step(u) * limits))
        kept = ~np.isnan(limits)
        return np.where(kept, bounded - np.where(self.bound_all[:, None], 0.0, u), 0.0)

    def utils(self, ctx: EvalContext, scope: Scope, dim: str, metric: str,
              items: np.ndarray) -> np.ndarray:
        """The bounded utilization of every filtered item under ``metric`` (per candidate,
        items last, under a ``MoveBatch``: the base's changes, and the touched groups')."""
        where = self.aggregation or scope
        totals = ctx.util(scope, dim, metric)
        unbounded = np.where(self.bound_all, 0.0, totals[..., items])
        if not isinstance(ctx, MoveBatch):
            changes = self._changes(*ctx.group_utils(where, dim, self.members), metric, items)
            return unbounded + changes.sum(axis=1)
        base = ctx.base
        changes = base.memo((self, metric, tuple(items.tolist())), lambda: self._changes(
            *base.group_utils(where, dim, self.members), metric, items))
        candidate, group, rows = ctx.touched_group_utils(where, dim, self.members)
        result = unbounded + changes.sum(axis=1)
        np.add.at(result, candidate,
                  (self._changes(*rows, metric, items, group) - changes[:, group]).T)
        return result

    # ---------- compilation ----------
    def forms(self, b: CpBuilder, scope: Scope, dim: str, metric: str,
              items: np.ndarray, scales: list[float]) -> list[Lin]:
        """The bounded utilization of every filtered item as an exact form. ``scales``: per
        filtered item, the factor the caller multiplies its form by (a normalization), which
        the errors its bounds state are kept at."""
        where = self.aggregation or scope
        needed = NEEDS[metric]
        by_group = []
        for members in self.members:
            parts = [b.group_util(where, dim, m, members) if m in needed
                     else [Lin()] * len(where.items) for m in ("AFTER", "INITIAL", "STAYED")]
            by_group.append([_metric(a, i, s, metric) for a, i, s in zip(*parts)])
        totals = b.util(scope, dim, metric)
        result = []
        for p, item in enumerate(items.tolist()):
            terms = [] if self.bound_all[p] else [totals[item]]
            for g, u in enumerate(self._per_item(by_group, p, item, Lin())):
                limit = self.limits[p, g]
                if math.isnan(limit):
                    continue
                with b.errors_scaled(scales[p]):
                    terms.append(self._bounded(b, u, to_fraction(float(limit))))
                if not self.bound_all[p]:
                    terms.append(u * -1)
            result.append(lin_sum(terms))
        return result

    def _bounded(self, b: CpBuilder, u: Lin, limit: Fraction) -> Lin:
        """min(u, L) or max(u, step(u)·L), exactly (not only bounding it)."""
        if self.upper:
            return u - b.exact_max([u - limit, Lin()], what="utilization bound")
        if limit <= 0 or u.is_constant:
            return u if limit <= 0 else Lin(const=max(u.const, limit if u.const > 0 else 0))
        present = Lin.atom(b.new_atom(b.gate(u), 0, 1))  # exactly u > 0, from both sides
        return b.exact_max([u, present * limit], what="utilization bound")
