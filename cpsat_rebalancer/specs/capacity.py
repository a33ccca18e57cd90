"""CapacitySpec: MAX or MIN utilization per scope item, under a Limit
(docs/semantics.md#capacity)."""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ..context import EvalContext, InfoChanges, MoveBatch, positive
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Info
from ..cpsat.linear import Lin, lin_sum, to_fraction
from ..errors import InputError
from ..fields import Fields
from ..primitives import TOLERANCE, Restrictions
from ..problem import Problem, Scope
from .common import (
    GoalForm,
    Limit,
    Spec,
    parse_filter,
    positions_among,
    register,
    resolve_dimension,
    resolve_scope,
    roles_by_item,
    spec_name,
    touched_among,
)
from .utilization_bound import UtilizationBound

# utilization metrics per definition; DURING_AND_AFTER as a constraint is special (below)
METRICS = {
    "AFTER": ["AFTER"], "DURING": ["DURING"], "NEW": ["NEW"], "OLD": ["OLD"],
    "MOVED_DATA": ["MOVED"], "DOUBLE_DURING": ["DURING", "OLD"],
    "DURING_AND_AFTER": ["DURING", "AFTER"], "DOUBLE_DURING_AND_AFTER": ["DURING", "AFTER", "OLD"],
}


@register
@dataclass(frozen=True, eq=False)
class CapacitySpec(Spec):
    arm = "capacitySpec"
    enum_fields = {"definition": "CapacitySpecDefinition", "bound": "CapacitySpecBound"}

    name: str
    scope: Scope
    dimension: str
    definition: str
    bound: str  # MAX or MIN
    items: np.ndarray  # filtered items
    thresholds: np.ndarray  # absolute threshold per filtered item (inf: unbounded)
    norm: np.ndarray  # normalization coefficient per filtered item
    zero_allowed: bool
    is_constraint: bool
    limits: np.ndarray  # the limit per filtered item as given (for exact compilation)
    relative: bool  # thresholds are limit x capacity
    legacy: bool  # normalization 1/capacity per item instead of 1/average capacity
    utilization_bound: UtilizationBound | None  # groups' shares bounded (utilizationBound)

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *, as_goal: bool) -> CapacitySpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        definition = cls.enum(f, "definition", "AFTER")
        dimension = resolve_dimension(problem, f.text("dimension"), f.at("dimension"),
                                      metrics=tuple(METRICS[definition]), vector=True)
        bound = cls.enum(f, "bound", "MAX")
        limit = Limit.parse(f.raw("limit"), f.at("limit"), scope)
        items = np.flatnonzero(parse_filter(f.raw("filter"), f.at("filter"), scope))
        zero_allowed = f.flag("zeroAllowed")
        legacy = f.flag("useLegacyFormula")
        bound_data = f.raw("utilizationBound")
        f.done(cls.arm)
        if bound_data is not None and dimension in problem.vector_dims:
            raise InputError(f.at("utilizationBound"), "a utilization bound on a vector "
                             "dimension is not supported", dimension)
        utilization_bound = None if bound_data is None else UtilizationBound.parse(
            bound_data, f.at("utilizationBound"), problem, scope, dimension, items)
        caps = scope.capacity(dimension)[items]
        limits = limit.per_item[items]
        thresholds = limits * caps if limit.kind == "RELATIVE" else limits.astype(float)
        thresholds = np.where(np.isinf(limits), math.inf, thresholds)
        if legacy:
            if np.any(caps == 0):
                raise InputError(f.at("useLegacyFormula"), "the legacy formula needs non-zero "
                                 "capacities", scope.items[items[np.argmax(caps == 0)]])
            norm = 1.0 / caps
        else:
            average = caps.mean() if len(caps) else 0.0
            norm = np.full(len(items), 1.0 if average == 0 else 1.0 / average)
        return cls(name, scope, dimension, definition, bound, items, thresholds, norm,
                   zero_allowed, not as_goal, limits, limit.kind == "RELATIVE", legacy,
                   utilization_bound)

    def _exact(self) -> list[tuple[Fraction, Fraction]]:
        """Threshold and normalization per filtered item as exact fractions of the data
        (computing them in floating point would turn 0.1 x 3 into 0.30000000000000004)."""
        caps = [to_fraction(float(c)) for c in self.scope.capacity(self.dimension)[self.items]]
        total = sum(caps, Fraction(0))
        shared = Fraction(len(caps)) / total if total else Fraction(1)
        result = []
        for p, cap in enumerate(caps):
            if not np.isfinite(self.limits[p]):
                result.append((Fraction(0), Fraction(0)))  # no expression (see _kept)
                continue
            limit = to_fraction(float(self.limits[p]))
            result.append((limit * cap if self.relative else limit,
                           1 / cap if self.legacy else shared))
        return result

    def container_roles(self, problem: Problem) -> list[Hashable] | None:
        if self.utilization_bound is not None:
            return None  # group shares differ per container
        return roles_by_item(self.scope, {int(i): (float(t), float(n)) for i, t, n in zip(
            self.items, self.thresholds, self.norm)})

    def reads_groups(self) -> bool:
        return self.utilization_bound is not None

    def reads_initial(self) -> bool:
        return self.definition != "AFTER"

    def prefers_staying(self) -> bool:
        """MAX penalizes utilization, which only grows as STAYED shrinks; MIN rewards it."""
        return self.bound == "MAX" or self.definition == "AFTER"

    # ---------- which (metric, item) pairs carry an expression ----------
    def _kept(self) -> np.ndarray:
        """Positions (into items) with an expression: finite thresholds; MIN skips T·nc = 0."""
        keep = np.isfinite(self.thresholds)
        if self.bound == "MIN":
            keep &= self.thresholds * self.norm != 0
        return np.flatnonzero(keep)

    def _layout(self, initial_during: np.ndarray | None
                ) -> tuple[int, list[tuple[str, np.ndarray, np.ndarray]]]:
        """The info columns in Rebalancer's order, by metric: their count, and per metric its
        columns and the positions (into items) they read. As a constraint,
        DURING_AND_AFTER checks AFTER only where DURING is initially broken, right after
        that position's DURING."""
        kept = self._kept()
        if self.is_constraint and self.definition in ("DURING_AND_AFTER",
                                                      "DOUBLE_DURING_AND_AFTER"):
            broken = initial_during[kept] > TOLERANCE
            during = np.arange(len(kept)) + np.cumsum(broken) - broken
            layout = [("DURING", during, kept), ("AFTER", during[broken] + 1, kept[broken])]
            count = len(kept) + int(broken.sum())
            if self.definition == "DOUBLE_DURING_AND_AFTER":
                layout.append(("OLD", count + np.arange(len(kept)), kept))
                count += len(kept)
            return count, layout
        metrics = METRICS[self.definition]
        return len(metrics) * len(kept), [(metric, k * len(kept) + np.arange(len(kept)), kept)
                                          for k, metric in enumerate(metrics)]

    def _pairs(self, initial_during: np.ndarray | None) -> list[tuple[str, int]]:
        """(metric, position) per info column (see ``_layout``)."""
        count, layout = self._layout(initial_during)
        pairs: list[tuple[str, int]] = [("", 0)] * count
        for metric, columns, positions in layout:
            for column, p in zip(columns.tolist(), positions.tolist()):
                pairs[column] = (metric, p)
        return pairs

    # ---------- evaluation ----------
    batched: ClassVar[bool] = True  # (a MoveBatch has static dimensions only)

    def _utils(self, ctx: EvalContext, metric: str) -> np.ndarray:
        """Utilization of each filtered item, with the groups' shares bounded if asked."""
        if self.utilization_bound is not None:
            return self.utilization_bound.utils(ctx, self.scope, self.dimension, metric,
                                                self.items)
        return ctx.util(self.scope, self.dimension, metric)[..., self.items]

    def _expressions(self, ctx: EvalContext, metric: str) -> np.ndarray:
        return self._expressions_at(self._utils(ctx, metric))

    def _expressions_at(self, util: np.ndarray, positions: np.ndarray | slice = slice(None)
                        ) -> np.ndarray:
        """The expressions of the filtered items at ``positions`` (all by default) at these
        utilizations."""
        norm, thresholds = self.norm[positions], self.thresholds[positions]
        with np.errstate(invalid="ignore"):
            if self.bound == "MAX":
                return norm * (util - thresholds)
            e = norm * (thresholds - util)
            if self.zero_allowed:
                e = np.where((util == 0) | (util >= thresholds), 0.0, e)
            return e

    def _initial_during(self, ctx: EvalContext) -> np.ndarray:
        return self._expressions(ctx.at_initial, "DURING")

    def infos(self, ctx: EvalContext) -> np.ndarray:
        """The info columns, a metric at a time: a local search prices every candidate move
        through this, where a column per item of a large scope, gathered one by one, cost
        more than the expressions themselves."""
        count, layout = self._layout(self._initial_during(ctx) if self.is_constraint else None)
        if not count:
            return np.zeros(0)
        blocks = [(columns, self._expressions(ctx, metric)[..., positions])
                  for metric, columns, positions in layout if len(columns)]
        out = np.empty((*np.broadcast_shapes(*(b.shape[:-1] for _, b in blocks)), count))
        for columns, block in blocks:
            out[..., columns] = block
        return out

    def info_labels(self, problem: Problem) -> list[str]:
        ctx = EvalContext(problem, problem.initial, problem.initial)
        initial = self._initial_during(ctx) if self.is_constraint else None
        return [f"{metric} {self.scope.items[self.items[p]]}"
                for metric, p in self._pairs(initial)]

    def info_changes(self, batch: MoveBatch) -> InfoChanges | None:
        """Under the AFTER definition, an expression per item: only the items a candidate's
        moves touch change (``MoveBatch.touched_items``)."""
        if self.definition != "AFTER" or self.utilization_bound is not None:
            return None
        touched = touched_among(batch, self.scope, self.dimension, self._column_of_item)
        if touched is None:
            return None
        base = batch.base
        infos = base.memo((self, "infos"), lambda: np.asarray(self.infos(base), dtype=float))
        candidate, column, _, after = touched
        return InfoChanges(infos, candidate, column,
                           self._expressions_at(after, self._kept()[column]))

    @functools.cached_property
    def _column_of_item(self) -> np.ndarray:
        """Per item of the scope, its info column under the AFTER definition (-1: none)."""
        return positions_among(self.scope, self.items[self._kept()])

    def evaluate(self, ctx: EvalContext) -> np.ndarray:
        changes = self.info_changes(ctx) if isinstance(ctx, MoveBatch) else None
        if changes is None:
            return positive(self.infos(ctx)).sum(axis=-1)
        before = positive(changes.base)
        return before.sum() + np.bincount(changes.candidate, positive(changes.value)
                                          - before[changes.info], minlength=ctx.size)

    # ---------- compilation ----------
    def _info_forms(self, b: CpBuilder) -> list[Info]:
        initial = None
        if self.is_constraint:
            initial = self._initial_during(EvalContext(b.problem, b.problem.initial,
                                                       b.problem.initial))
        utils: dict[str, list[Lin]] = {}
        exact = self._exact()
        forms = []
        for metric, p in self._pairs(initial):
            if metric not in utils and self.utilization_bound is not None:
                utils[metric] = self.utilization_bound.forms(
                    b, self.scope, self.dimension, metric, self.items,
                    [float(abs(norm)) for _, norm in exact])
            elif metric not in utils:  # every item's form, built once
                every = b.util(self.scope, self.dimension, metric)
                utils[metric] = [every[i] for i in self.items]
            util = utils[metric][p]
            threshold, norm = exact[p]
            if self.bound == "MAX":
                forms.append(Info((util - threshold) * norm))
            elif self.zero_allowed:
                forms.append(Info((Lin(const=threshold) - util) * norm, gate=util))
            else:
                forms.append(Info((Lin(const=threshold) - util) * norm))
        return forms

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        return self._info_forms(b)

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        return GoalForm(lin_sum(b.positive_part(info.expr, gate=info.gate, what=self.name)
                                for info in self._info_forms(b)))

    def restrictions(self, problem: Problem) -> Restrictions:
        """Rebalancer makes single-container items whose DURING expression is initially at or
        above its limit non-accepting (constraints with a DURING metric, no zero-size objects)."""
        if not self.is_constraint or "DURING" not in METRICS[self.definition]:
            return Restrictions()
        if any(np.any(problem.object_dims[entry] == 0)  # a vector: any entry (as Rebalancer)
               for entry in problem.entries(self.dimension)):
            return Restrictions()
        ctx = EvalContext(problem, problem.initial, problem.initial)
        during = self._initial_during(ctx)
        members = self.scope.members()
        blocked = set()
        for p in self._kept():
            containers = members[self.items[p]]
            if during[p] >= -TOLERANCE and len(containers) == 1:
                blocked.add(int(containers[0]))
        return Restrictions(non_accepting=frozenset(blocked))
