"""BalanceSpec: spread relative utilization over scope items (docs/semantics.md#balance).

Formulas LINEAR, SQUARES, MAX, IDEAL, RELATIVE_UTIL_VARIANCE and LEGACY (the optimal
solver's form); goal only. IDEAL alone in its
bucket is ordered leximin by the solve stages (``compile_leximin``); its reported
value is Rebalancer's scalar Σ a_i u_i².
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ..context import EvalContext, MoveBatch, positive
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import INT_LIMIT
from ..cpsat.linear import Lin, lin_sum, to_fraction
from ..cpsat.pwl import VALUE_LIMIT, convex_pwl, threshold_table
from ..errors import InputError
from ..fields import Fields
from ..primitives import TOLERANCE
from ..problem import Problem, Scope
from .common import (
    GoalForm,
    Spec,
    parse_filter,
    positions_among,
    register,
    resolve_dimension,
    resolve_items,
    resolve_scope,
    spec_name,
    touched_among,
)

POWER = 1.1  # Rebalancer's SQUARES exponent
LEGACY_WEIGHT = Fraction(1, 1000)  # LEGACY: weight of the mean excess beside the largest one
LEGACY_RULES = (  # what Rebalancer's checker demands of a LEGACY balance: (field, ok, why)
    ("fixAverageToInitial", lambda o: o["fix"], "LEGACY needs fixAverageToInitial"),
    ("definition", lambda o: o["definition"] == "AFTER", "LEGACY supports AFTER only"),
    ("boundType", lambda o: o["bound_type"] == "RELATIVE", "LEGACY supports RELATIVE only"),
    ("softUpperBound", lambda o: o["soft"] is None, "LEGACY takes no softUpperBound"),
    ("includeInInitialAverage", lambda o: not o["include"],
     "LEGACY takes no includeInInitialAverage"),
)


def power(x: float) -> float:
    """x^1.1 on utilizations; loose variable bounds may probe x < 0, never reached."""
    return max(x, 0.0) ** POWER


MOST_COUNTS = 256  # CAPACITY_PER_ITEM: the most values an item's object count may take


def per_object(b: CpBuilder, util: Lin, count: Lin, what: str) -> list[Lin]:
    """util / max(1, count) as a sum of exact forms of which at most one is not 0: one
    literal per value the count can take, and the utilization carried by the literal that
    holds (a ratio has no linear form). Each part is over one atom, so a function g with
    g(0) = 0 of the ratio is the sum of g over the parts, each tabulated."""
    form = b.integerize(count)
    lo, hi = max(0, math.ceil(form.lo)), math.floor(form.hi)

    def divisor(units: int) -> Fraction:
        return max(Fraction(1), units / form.factor)

    if count.is_constant or lo >= hi:
        return [util / divisor(lo)]
    if hi - lo + 1 > MOST_COUNTS:
        raise InputError(what, "CAPACITY_PER_ITEM is modelled exactly by one literal per value "
                         f"an item's count can take, and here it takes up to {hi - lo + 1} "
                         f"(more than {MOST_COUNTS}); Rebalancer's optimal solver refuses this "
                         "metric outright")
    amount = b.integerize(util)
    top = max(0, math.floor(amount.hi))
    value = b.variable(amount.expr, amount.lo, amount.hi, "per_object_util")
    choices, terms = [], []
    for units in range(lo, hi + 1):
        chosen = b.cp.new_bool_var("count_is")
        b.cp.add(form.expr == units).only_enforce_if(chosen)
        carried = b.cp.new_int_var(0, top, "carried")
        b.cp.add(carried == value).only_enforce_if(chosen)
        b.cp.add(carried == 0).only_enforce_if(chosen.Not())
        choices.append(chosen)
        terms.append(Lin.atom(b.new_atom(carried, 0, top), 1 / (amount.factor * divisor(units))))
    b.cp.add_exactly_one(choices)
    b.note_error(what, amount.error)
    return terms


class SortedUtils:
    """A base assignment's relative utilizations, sorted, with suffix sums that give at
    any level t the sums over the values above it (a batch prices its candidates from
    these and the few items each touches). The sums are of each value less ``center`` (the
    base's threshold), so that near it they do not cancel."""

    def __init__(self, utils: np.ndarray, center: float):
        self.total = float(utils.sum())
        self.center = float(center)
        order = np.argsort(-utils, kind="stable")  # largest first
        self.values = utils[order][::-1].copy()  # ascending
        self.place = np.empty(len(utils), dtype=np.int64)  # each item's place, largest 0
        self.place[order] = np.arange(len(utils))
        shifted = self.values - self.center
        self.power_center = max(self.center, 0.0)  # (a power of a negative level is NaN)
        powered = power_of(self.values) - power_of(self.power_center)
        self.sums = [np.append(np.cumsum(column[::-1])[::-1], 0.0)
                     for column in (shifted, shifted**2, powered)]

    def _above(self, levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        first = np.searchsorted(self.values, levels, side="right")
        return first, len(self.values) - first

    def linear(self, levels: np.ndarray) -> np.ndarray:
        """Σ (u - t)⁺ at each level t."""
        first, count = self._above(levels)
        return self.sums[0][first] - (levels - self.center) * count

    def squared(self, levels: np.ndarray) -> np.ndarray:
        """Σ ((u - t)⁺)² at each level t."""
        first, count = self._above(levels)
        shift = levels - self.center
        return self.sums[1][first] - 2 * shift * self.sums[0][first] + shift**2 * count

    def powered(self, levels: np.ndarray) -> np.ndarray:
        """Σ (u^1.1 - t^1.1)⁺ at each level t."""
        first, count = self._above(levels)
        with np.errstate(invalid="ignore"):
            return self.sums[2][first] - (power_of(levels) - power_of(self.power_center)) * count


@dataclass(frozen=True)
class Touched:
    """A batch's candidates as ``SortedUtils`` of the base and the (candidate, balanced
    item) pairs their moves touch: the item's position among the balanced, its relative
    utilization in the base and in the candidate; and each candidate's threshold."""

    base: SortedUtils
    candidate: np.ndarray
    position: np.ndarray
    before: np.ndarray
    after: np.ndarray
    threshold: np.ndarray

    def change(self, term: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
        """Per candidate, what its touched items change of Σ term(u, threshold)."""
        at = self.threshold[self.candidate]
        k = len(self.threshold)
        return (np.bincount(self.candidate, term(self.after, at), minlength=k)
                - np.bincount(self.candidate, term(self.before, at), minlength=k))

    def largest(self) -> np.ndarray:
        """Per candidate, its largest relative utilization: the base's largest among the
        items it does not touch, or a touched item's."""
        k = len(self.threshold)
        # a candidate touches at most this many items: among the base's largest this many
        # and one, one is untouched
        width = min(len(self.base.values), int(np.bincount(self.candidate, minlength=k)
                                                  .max(initial=0)) + 1)
        hit = np.zeros((k, width), dtype=bool)
        place = self.base.place[self.position]
        near = place < width
        hit[self.candidate[near], place[near]] = True
        untouched = ~hit
        first = untouched.argmax(axis=1)
        largest = np.where(untouched.any(axis=1),
                           self.base.values[::-1][first], -np.inf)
        np.maximum.at(largest, self.candidate, self.after)
        return largest


def power_of(x: np.ndarray | float) -> np.ndarray:
    """x^1.1, NaN below 0 (as the evaluator's power of a negative threshold)."""
    return np.asarray(x, dtype=float) ** POWER


@register
@dataclass(frozen=True, eq=False)
class BalanceSpec(Spec):
    arm = "balanceSpec"
    enum_fields = {
        "definition": "BalanceSpecDefinition",
        "boundType": "BalanceSpecBoundType",
        "formula": "BalanceSpecFormula",
        "balanceMetric": "BalanceSpecMetric",
    }
    constraint_allowed = False

    @classmethod
    def wheel_evaluates_as_mip(cls, body: dict) -> bool:
        return body.get("formula") == 5  # LEGACY: its optimal solver drops a square

    name: str
    scope: Scope
    dimension: str
    items: np.ndarray  # indices of balanced items: filtered, non-zero capacity
    definition: str  # AFTER, DURING, NEW, OLD
    formula: str
    bound_type: str
    upper_bound: float
    soft_upper_bound: float | None
    fixed_average: bool
    extra_average_items: np.ndarray  # includeInInitialAverage items not already balanced
    legacy_average: bool
    bound_on_ideal: bool
    # CAPACITY_PER_ITEM: the dimension counting objects (None: the RELATIVE_UTIL metric)
    count_dimension: str | None = None

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *, as_goal: bool) -> BalanceSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        definition = cls.enum(f, "definition", "AFTER")
        dimension = resolve_dimension(problem, f.text("dimension"), f.at("dimension"),
                                      metrics=(definition,), vector=True)
        upper = f.number("upperBound", 1.0)
        soft = f.number("softUpperBound")
        bound_type = cls.enum(f, "boundType", "RELATIVE")
        formula = cls.enum(f, "formula", "LINEAR")
        mask = parse_filter(f.raw("filter"), f.at("filter"), scope)
        fix = f.flag("fixAverageToInitial")
        include = resolve_items(scope, f.names("includeInInitialAverage"),
                                f.at("includeInInitialAverage"))
        legacy = f.flag("useLegacyAverage")
        ignore = f.flag("ignoreUpperBoundForIdealWithAbsOrRelBoundTypes", True)
        metric = cls.enum(f, "balanceMetric", "RELATIVE_UTIL")
        count_name = f.raw("capacityPerItemCountDimension")
        f.done(cls.arm)
        count_dimension = None
        if metric == "CAPACITY_PER_ITEM":
            if dimension in problem.vector_dims:
                raise InputError(f.at("balanceMetric"), "CAPACITY_PER_ITEM with a vector "
                                 "dimension is not supported", dimension)
            if formula in ("IDEAL", "LEGACY"):
                raise InputError(f.at("formula"), f"Rebalancer does not support {formula} with "
                                 "the CAPACITY_PER_ITEM metric", formula)
            count_dimension = resolve_dimension(
                problem, f.text("capacityPerItemCountDimension"),
                f.at("capacityPerItemCountDimension"), default=problem.count_dimension,
                metrics=(definition,))
        elif count_name is not None:
            raise InputError(f.at("capacityPerItemCountDimension"), "only read with the "
                             "CAPACITY_PER_ITEM metric (Rebalancer refuses it otherwise)",
                             count_name)
        if formula == "LEGACY":
            given = {"fix": fix, "definition": definition, "bound_type": bound_type,
                     "soft": soft, "include": include}
            for key, holds, why in LEGACY_RULES:
                if not holds(given):
                    raise InputError(f.at(key), f"{why} (Rebalancer's checker refuses it)")
        if not ignore and formula != "IDEAL":
            raise InputError(f.at("ignoreUpperBoundForIdealWithAbsOrRelBoundTypes"),
                             "may be false only with the IDEAL formula", formula)
        if legacy and include:
            raise InputError(f.at("includeInInitialAverage"),
                             "cannot be combined with useLegacyAverage")
        if formula == "SQUARES" and upper < 0:
            raise InputError(f.at("upperBound"), "SQUARES with a negative bound is undefined "
                             "(x^1.1 of a negative threshold; Rebalancer reports NaN)", upper)
        caps = scope.capacity(dimension)
        if count_dimension is not None:  # capacities are not read: every item is kept,
            # and the average is always that of the final values (no fixing, no extras)
            return cls(name, scope, dimension, np.flatnonzero(mask), definition, formula,
                       bound_type, upper, soft, False, np.zeros(0, dtype=np.int64), False,
                       bound_type == "RELATIVE_UTIL" or not ignore, count_dimension)
        balanced = mask & (caps > 0)
        fixed = fix or (definition == "AFTER" and bool(balanced.all())
                        and scope.covers_all_containers)
        extra = np.asarray(sorted({i for i in include if not balanced[i] and caps[i] > 0}),
                           dtype=np.int64)
        return cls(name, scope, dimension, np.flatnonzero(balanced), definition, formula,
                   bound_type, upper, soft, fixed, extra, legacy,
                   bound_type == "RELATIVE_UTIL" or not ignore)

    def dimensions(self) -> frozenset[str]:
        return frozenset({self.dimension, self.count_dimension} - {None})

    def prefers_staying(self) -> bool:
        if self.definition == "AFTER":
            return True
        if self.count_dimension is not None:
            return False  # a per-object average may gain from anything
        # u_i grows as STAYED shrinks; with a constant threshold every formula but the
        # variance is increasing in u_i (a moving average could reward swaps)
        constant = self.fixed_average or self.bound_type == "RELATIVE_UTIL"
        return constant and self.formula != "RELATIVE_UTIL_VARIANCE"

    @property
    def nonnegative(self) -> bool:  # type: ignore[override]
        """LEGACY with nothing initially in its items is worth -upperBound."""
        return self.formula != "LEGACY" or self.upper_bound >= 0

    @property
    def has_leximin(self) -> bool:
        return self.formula == "IDEAL"

    @property
    def caps(self) -> np.ndarray:
        return self.scope.capacity(self.dimension)[self.items]

    # ---------- evaluation ----------
    # Every utilization may carry leading candidate axes (context.MoveBatch): items are the
    # last axis, and values come out per candidate.
    batched: ClassVar[bool] = True

    def _relative(self, ctx: EvalContext) -> np.ndarray:
        """The balanced value per item: relative utilization, or (CAPACITY_PER_ITEM) the
        utilization per object counted, util / max(1, count)."""
        util = ctx.util(self.scope, self.dimension, self.definition)[..., self.items]
        if self.count_dimension is None:
            return util / self.caps
        count = ctx.util(self.scope, self.count_dimension, self.definition)[..., self.items]
        return util / np.maximum(1.0, count)

    def _average(self, ctx: EvalContext) -> np.ndarray:
        """The average the bound is taken from, with a trailing axis of one."""
        if self.count_dimension is not None:
            return np.mean(self._relative(ctx), axis=-1, keepdims=True)
        source = ctx.at_initial if self.fixed_average else ctx
        util = source.util(self.scope, self.dimension, self.definition)
        all_caps = self.scope.capacity(self.dimension)
        if self.legacy_average:
            return util[..., self.items].sum(axis=-1, keepdims=True) / self.caps.sum()
        used = np.concatenate([self.items, self.extra_average_items]) if self.fixed_average \
            else self.items
        return np.mean(util[..., used] / all_caps[used], axis=-1, keepdims=True)

    def _bound(self, average: np.ndarray) -> np.ndarray:
        if self.bound_type == "ABSOLUTE":
            return average + self.upper_bound
        if self.bound_type == "RELATIVE":
            return self.upper_bound * average
        return np.full_like(average, self.upper_bound)

    def evaluate(self, ctx: EvalContext) -> np.ndarray:
        n = len(self.items)
        if n == 0:
            return np.float64(0.0)
        priced = self._touched(ctx)
        if priced is not None:
            return self._batch_value(ctx, priced)
        u = self._relative(ctx)
        bound = self._bound(self._average(ctx))
        threshold = self._threshold(bound)
        if self.formula == "LINEAR":
            return positive(u - threshold).sum(axis=-1) / n
        if self.formula == "SQUARES":
            value = positive(u**POWER - threshold**POWER).sum(axis=-1) / n
            return np.where(threshold[..., 0] < 0, np.nan, value)
        if self.formula == "MAX":
            return np.maximum(0.0, u.max(axis=-1) - threshold[..., 0])
        if self.formula == "LEGACY":
            return self._legacy(ctx, u)
        if self.formula == "IDEAL":
            a = self.caps / (self.caps.sum() / n)
            if self.bound_on_ideal:
                return positive(a * u**2 - a * bound**2).sum(axis=-1)
            return (a * u**2).sum(axis=-1)
        v = positive(u - bound)  # RELATIVE_UTIL_VARIANCE
        return (v**2).sum(axis=-1) - v.sum(axis=-1) ** 2 / n

    def _threshold(self, bound: np.ndarray) -> np.ndarray:
        """The level above which an item is in excess: the bound, or the soft upper bound
        where that is higher."""
        return bound if self.soft_upper_bound is None \
            else np.maximum(self.soft_upper_bound, bound)

    def _legacy_excess(self, ctx: EvalContext, u: np.ndarray) -> np.ndarray | None:
        """LEGACY's m_i = u_i/b - upperBound, b the initial total over the capacity; None
        when nothing is there initially."""
        scale = self._legacy_scale(ctx)
        return None if scale is None else u / scale - self.upper_bound

    def _legacy_scale(self, ctx: EvalContext) -> float | None:
        """LEGACY's b (None when nothing is there initially)."""
        initial = float(ctx.at_initial.util(self.scope, self.dimension, "AFTER")[self.items].sum())
        return None if abs(initial) <= TOLERANCE else initial / self.caps.sum()

    def _legacy(self, ctx: EvalContext, u: np.ndarray) -> np.ndarray:
        """(0.001/n)·Σ m_i⁺ + max(0, max_i m_i); -upperBound when nothing is there
        initially."""
        excess = self._legacy_excess(ctx, u)
        if excess is None:
            return np.full(u.shape[:-1], -self.upper_bound)
        return (float(LEGACY_WEIGHT) / u.shape[-1] * positive(excess).sum(axis=-1)
                + np.maximum(0.0, excess.max(axis=-1)))

    def guide(self, ctx: EvalContext) -> np.ndarray | None:
        """MAX and LEGACY: ``Σ_i (excess_i⁺)²`` over the items. The value follows the
        hottest item alone, so a move off any other hot item leaves it flat, and where
        several items tie at the top no single move lowers it; this measure falls with
        each of those moves (Rebalancer's local search squares LEGACY's excess likewise)."""
        if self.formula not in ("MAX", "LEGACY") or not len(self.items):
            return None
        priced = self._touched(ctx)
        if priced is not None and self.formula == "MAX":
            return priced.base.squared(priced.threshold) + priced.change(
                lambda u, t: positive(u - t)**2)
        if priced is not None:  # LEGACY: Σ ((u_i - upperBound·b)⁺)² / b²
            scale = self._legacy_scale(ctx)
            if scale is None:
                return None
            level = np.full(len(priced.threshold), self.upper_bound * scale)
            return priced.base.squared(level) / scale**2 + priced.change(
                lambda u, _: positive(u / scale - self.upper_bound)**2)
        u = self._relative(ctx)
        excess = (u - self._threshold(self._bound(self._average(ctx))) if self.formula == "MAX"
                  else self._legacy_excess(ctx, u))
        return None if excess is None else (positive(excess) ** 2).sum(axis=-1)

    def _touched(self, ctx: EvalContext) -> Touched | None:
        """Under a batch, LINEAR, SQUARES, MAX and LEGACY of the AFTER relative utilization: what
        prices each candidate from the base (``Touched``); its average moves by the items
        its moves touch alone. None where a candidate needs its whole row."""
        if (not isinstance(ctx, MoveBatch) or self.definition != "AFTER"
                or self.count_dimension is not None
                or self.formula not in ("LINEAR", "SQUARES", "MAX", "LEGACY")):
            return None
        touched = touched_among(ctx, self.scope, self.dimension, self._position_of_item)
        if touched is None:
            return None
        base = ctx.base
        ranked = base.memo((self, "sorted"), lambda: SortedUtils(
            self._relative(base), self._threshold(self._bound(self._average(base)))[0]))
        candidate, position, before, after = touched
        caps = self.caps[position]
        relative_before, relative_after = before / caps, after / caps
        k = ctx.size
        if self.fixed_average:
            average = np.broadcast_to(self._average(base)[0], (k,))
        elif self.legacy_average:  # Σ util / Σ capacity, over the balanced items
            total = base.memo((self, "total"), lambda: float(base.util(
                self.scope, self.dimension, self.definition)[self.items].sum()))
            average = (total + np.bincount(candidate, after - before, minlength=k)
                       ) / self.caps.sum()
        else:  # the mean relative utilization
            average = (ranked.total + np.bincount(candidate, relative_after - relative_before,
                                                  minlength=k)) / len(self.items)
        return Touched(ranked, candidate, position, relative_before, relative_after,
                       self._threshold(self._bound(average)))

    def _batch_value(self, ctx: EvalContext, priced: Touched) -> np.ndarray:
        """LINEAR, SQUARES, MAX and LEGACY per candidate (``_touched``): the base's sums
        over the items above the candidate's threshold (LEGACY's upperBound·b), less the
        touched items' terms in the base, plus theirs in the candidate."""
        ranked, threshold = priced.base, priced.threshold
        if self.formula == "MAX":
            return np.maximum(0.0, priced.largest() - threshold)
        if self.formula == "LEGACY":
            scale = self._legacy_scale(ctx)
            if scale is None:
                return np.full(len(threshold), -self.upper_bound)
            level = np.full(len(threshold), self.upper_bound * scale)
            excess = ranked.linear(level) / scale + priced.change(
                lambda u, _: positive(u / scale - self.upper_bound))
            return (float(LEGACY_WEIGHT) / len(self.items) * excess
                    + np.maximum(0.0, priced.largest() / scale - self.upper_bound))
        if self.formula == "LINEAR":
            total = ranked.linear(threshold) + priced.change(lambda u, t: positive(u - t))
            return total / len(self.items)
        with np.errstate(invalid="ignore"):
            total = ranked.powered(threshold) + priced.change(
                lambda u, t: positive(u**POWER - t**POWER))
        return np.where(threshold < 0, np.nan, total / len(self.items))

    @functools.cached_property
    def _position_of_item(self) -> np.ndarray:
        return positions_among(self.scope, self.items)

    def leximin_values(self, ctx: EvalContext) -> np.ndarray:
        """Relative utilizations; with the bound applied (as in the scalar value, where items
        under it cost nothing), each raised to the bound so those items tie."""
        u = self._relative(ctx)
        if self.bound_on_ideal and u.shape[-1]:
            u = np.maximum(u, self._bound(self._average(ctx)))
        return u

    # ---------- compilation ----------
    def _relative_forms(self, b: CpBuilder) -> list[Lin]:
        return [lin_sum(parts) for parts in self._parts(b)]

    def _parts(self, b: CpBuilder) -> list[list[Lin]]:
        """Per item, forms summing to its balanced value (see ``per_object``)."""
        util = b.util(self.scope, self.dimension, self.definition)
        if self.count_dimension is None:
            return [[util[i] / to_fraction(float(c))] for i, c in zip(self.items, self.caps)]
        counts = b.util(self.scope, self.count_dimension, self.definition)
        return [per_object(b, util[i], counts[i], self.name) for i in self.items]

    def _average_form(self, b: CpBuilder, rel: list[Lin]) -> Lin:
        if self.count_dimension is not None:
            return lin_sum(rel) / len(rel)
        all_caps = self.scope.capacity(self.dimension)
        util = b.util(self.scope, self.dimension, self.definition)
        if self.fixed_average:
            def initial(i: int) -> Fraction:
                return b.initial_value(util[i])
            if self.legacy_average:
                total = sum((initial(i) for i in self.items), Fraction(0))
                return Lin(const=total / sum(to_fraction(float(c)) for c in self.caps))
            used = list(self.items) + list(self.extra_average_items)
            total = sum((initial(i) / to_fraction(float(all_caps[i])) for i in used), Fraction(0))
            return Lin(const=total / len(used))
        if self.legacy_average:
            return lin_sum(util[i] for i in self.items) / sum(
                to_fraction(float(c)) for c in self.caps)
        return lin_sum(rel) / len(rel)

    def _bound_form(self, average: Lin) -> Lin:
        upper = to_fraction(self.upper_bound)
        if self.bound_type == "ABSOLUTE":
            return average + upper
        if self.bound_type == "RELATIVE":
            return average * upper
        return Lin(const=upper)

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        n = len(self.items)
        if n == 0:
            return GoalForm(Lin())
        parts = self._parts(b)
        rel = [lin_sum(p) for p in parts]
        bound = self._bound_form(self._average_form(b, rel))
        threshold = bound
        if self.soft_upper_bound is not None:
            threshold = b.exact_max([Lin(const=to_fraction(self.soft_upper_bound)), bound])
        what = f"{self.name} ({self.formula})"
        if self.formula == "LINEAR":
            with b.errors_scaled(1 / n):
                terms = [b.positive_part(u - threshold, what=what) for u in rel]
            return GoalForm(lin_sum(terms) / n)
        if self.formula == "MAX":
            return GoalForm(b.maximum([Lin()] + [u - threshold for u in rel], what=what))
        if self.formula == "SQUARES":
            if threshold.is_constant:
                t = float(threshold.const)
                if t < 0:
                    raise InputError(self.name, "SQUARES threshold is negative (Rebalancer "
                                     "reports NaN)", t)
                with b.errors_scaled(1 / n):
                    terms = [lin_sum(convex_pwl(b, b.as_atom(u),
                                                lambda x, t=t: max(0.0, power(x) - t**POWER),
                                                kinks=[t], what=what, from_below=True)
                                     for u in item) for item in parts]
            else:
                if self.count_dimension is not None:
                    raise InputError(self.name, "CAPACITY_PER_ITEM with SQUARES is modelled "
                                     "exactly under a constant threshold only (boundType "
                                     "RELATIVE_UTIL); the moving average's power has no exact "
                                     "table at the per-object values' common denominator")
                table = threshold_table(b, threshold, power, what=what)
                with b.errors_scaled(1 / n):
                    terms = [b.positive_part(lin_sum(convex_pwl(b, b.as_atom(u), power, what=what,
                                                                from_below=True) for u in item)
                                             - table, what=what) for item in parts]
            return GoalForm(lin_sum(terms) / n)
        if self.formula == "IDEAL":
            return GoalForm(self._ideal(b, rel, bound, what))
        if self.formula == "LEGACY":
            return GoalForm(self._legacy_form(b, rel, what))
        return GoalForm(self._variance(b, rel, bound))

    def compile_leximin(self, b: CpBuilder) -> list[Lin]:
        rel = self._relative_forms(b)
        if not rel or not self.bound_on_ideal:
            return rel
        bound = self._bound_form(self._average_form(b, rel))
        return [b.exact_max([u, bound]) for u in rel]  # under the bound, all items tie

    def _legacy_form(self, b: CpBuilder, rel: list[Lin], what: str) -> Lin:
        """The LEGACY value as an exact form: linear excesses, under minimization."""
        util = b.util(self.scope, self.dimension, "AFTER")
        initial = sum((b.initial_value(util[i]) for i in self.items), Fraction(0))
        upper = to_fraction(self.upper_bound)
        if abs(initial) <= to_fraction(TOLERANCE):
            return Lin(const=-upper)
        balanced = initial / sum((to_fraction(float(c)) for c in self.caps), Fraction(0))
        excess = [u / balanced - upper for u in rel]
        n = len(rel)
        with b.errors_scaled(float(LEGACY_WEIGHT) / n):
            mean = lin_sum(b.positive_part(e, what=what) for e in excess) * (LEGACY_WEIGHT / n)
        return mean + b.maximum([Lin()] + excess, what=what)

    def _ideal(self, b: CpBuilder, rel: list[Lin], bound: Lin, what: str) -> Lin:
        caps = [to_fraction(float(c)) for c in self.caps]
        average_cap = sum(caps, Fraction(0)) / len(caps)
        weights = [c / average_cap for c in caps]
        if not self.bound_on_ideal:
            return lin_sum(convex_pwl(b, b.as_atom(u), lambda x, a=float(a): a * x * x,
                                      what=what, from_below=True)
                           for u, a in zip(rel, weights))
        if bound.is_constant:
            level = float(bound.const) ** 2
            return lin_sum(
                convex_pwl(b, b.as_atom(u), lambda x, a=float(a): max(0.0, a * (x * x - level)),
                           kinks=[abs(float(bound.const))], what=what, from_below=True)
                for u, a in zip(rel, weights))
        squared = threshold_table(b, bound, lambda x: x * x, what=what)
        return lin_sum(
            b.positive_part(convex_pwl(b, b.as_atom(u), lambda x, a=float(a): a * x * x,
                                       what=what, from_below=True) - squared * a, what=what)
            for u, a in zip(rel, weights))

    def _variance(self, b: CpBuilder, rel: list[Lin], bound: Lin) -> Lin:
        """n·Var(v) = Σ v² − (Σ v)²/n with v = (u − B)⁺: CP-SAT's integer products, exact,
        where the excesses fit in 20 bits (their squares then weigh precisely in a 64-bit
        objective); beyond, squares of spreads (``_spread_squares``)."""
        n = len(rel)
        if n < 2:
            return Lin()
        what = f"{self.name} (RELATIVE_UTIL_VARIANCE)"
        deviations = [u - bound for u in rel]
        reach = max(max(float(b.bounds(d)[1]) for d in deviations), 0.0)  # v_i in [0, reach]
        # two variables per item span the excess (its positive part and the form itself)
        forms = b.integerize_all(deviations, b.variable_limit(2 * n, INT_LIMIT), divide=True)
        top = max(max(f.hi for f in forms), 0)
        if top > min(2**20, 2**31 // n):  # (Σ v)² within 64 bits, squares within 2^40
            return self._spread_squares(b, deviations, reach, what)
        # an error e in every v_i moves Σ v² − (Σ v)²/n by at most 4n·(reach + e)·e
        b.note_error(what, 4 * (reach + 1) * sum(f.error + b.drift(d)
                                                 for f, d in zip(forms, deviations)))
        excess, squares = [], []
        for form in forms:
            hi = max(form.hi, 0)
            v = b.cp.new_int_var(0, hi, "excess")
            b.cp.add_max_equality(v, [b.variable(form.expr, form.lo, form.hi, "deviation"), 0])
            square = b.cp.new_int_var(0, hi * hi, "excess_sq")
            b.cp.add_multiplication_equality(square, [v, v])
            excess.append(v)
            squares.append(Lin.atom(b.new_atom(square, 0, hi * hi)))
        total_hi = sum(max(f.hi, 0) for f in forms)
        total = b.cp.new_int_var(0, total_hi, "excess_sum")
        b.cp.add(total == sum(excess))
        total_sq = b.cp.new_int_var(0, total_hi * total_hi, "excess_sum_sq")
        b.cp.add_multiplication_equality(total_sq, [total, total])
        value = lin_sum(squares) - Lin.atom(b.new_atom(total_sq, 0, total_hi * total_hi)) / n
        return value / (forms[0].factor ** 2)

    @staticmethod
    def _spread_squares(b: CpBuilder, deviations: list[Lin], reach: float, what: str) -> Lin:
        """n·Var(v) as Σ_i (v_i − S/n)² (S = Σ_j v_j): a convex square per item of one
        integer form, n·v_i − S, on chords from below that the searches refine where their
        solutions land (``convex_pwl``), so that the answer's value is exact where the
        excesses are. (The products on the excesses divided to fit stated errors above the
        value itself, and their difference gave the LP nothing.)"""
        n = len(deviations)
        # how an error e in the forms below reaches the value, with |n·v_i − S| <= n·reach:
        # e in every v_i moves each n·v_i − S by 2n·e, and the n squares over n² by at most
        # 4n·(reach + e)·e; e in S moves each by e, the squares by 2·(reach + e)·e; e in
        # one n·v_i − S moves its square by (2n·reach + e)·e/n² (e at most 1 in each)
        with b.errors_scaled(4 * n * (reach + 1)):
            excess = [b.exact_max([d, Lin()], what=what) for d in deviations]
            b.note_error(what, max(b.drift(d) for d in deviations))
        with b.errors_scaled(2 * (reach + 1)):
            total = b.as_atom(lin_sum(excess))
        terms = []
        for v in excess:
            with b.errors_scaled((2 * n * reach + 1) / n**2):
                spread = b.as_atom(v * n - total)
            if spread.is_constant:
                terms.append(Lin(const=(spread.const / n) ** 2))
                continue
            # squared in the atom's own units, so that the chords' values are integers
            # (a square of the value in its units is not), halved while the squares pass
            # what the pieces' values can hold
            (unit,) = (c for c in spread.terms.values() if c != 0)
            spread, scale = spread / unit, (unit / n) ** 2
            while b.magnitude(spread) ** 2 >= VALUE_LIMIT / 2:
                spread, scale = spread / 2, scale * 4
            with b.errors_scaled(float(scale)):
                squares = convex_pwl(b, spread, lambda y: y * y, what=what, from_below=True)
            terms.append(squares * scale)
        return lin_sum(terms)
