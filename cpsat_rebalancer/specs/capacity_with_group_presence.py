"""CapacityWithGroupPresenceSpec: a capacity on each scope item (or each group in it) where
every group present counts at least its presence weight, optionally rounded up and scaled
by multipliers (docs/semantics.md#capacitywithgrouppresence). Goal or constraint.

Per (aggregation item a, aggregation group j) with AFTER utilization u of j in a, the
contribution is max(P(a, j)·step(u), F(a, j, u)), P the presence weight and F the
utilization, each through its multipliers (and ceil after each, when rounding). Expressions:
Σ contributions − limit (MAX) or limit − Σ (MIN), per main item or per (main item, group),
not normalized. The value is the optimal solver's: no local-search continuous penalty."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ..context import EvalContext, InfoChanges, MoveBatch, positive
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import INT_LIMIT, Info
from ..cpsat.linear import Lin, lin_sum, to_fraction
from ..errors import InputError
from ..fields import Fields, check_list
from ..primitives import TOLERANCE
from ..problem import OUT_OF_SCOPE, Problem, Scope
from .common import (
    GoalForm,
    GroupLimit,
    Spec,
    parse_filter,
    parse_group_filter,
    register,
    resolve_dimension,
    resolve_partition,
    resolve_scope,
    spec_name,
)
from .group_diversity import presence

SIDES = {"PRESENCE_WEIGHT": "presence", "UTILIZATION": "utilization"}  # COMMON: both


HULL_UNITS = 1024  # the denominator of a rewarded contribution's hull slope (_exact_max)


def ceil_tolerant(values: np.ndarray) -> np.ndarray:
    """Rebalancer's ceil: a value within 1e-10 of an integer is that integer."""
    nearest = np.round(values)
    return np.where(np.abs(values - nearest) <= TOLERANCE, nearest, np.ceil(values))


def ceil_fraction(value: Fraction) -> int:
    return -((-value.numerator) // value.denominator)


def nested(outer: np.ndarray, members: list[np.ndarray], path: str, what: str,
           names: list[str]) -> np.ndarray:
    """For each inner unit (members: its elements), the one outer unit its elements lie in
    (-1: none); an inner unit spread over two outer ones is an error naming it."""
    result = np.full(len(members), -1, dtype=np.int64)
    for k, elements in enumerate(members):
        found = set(outer[elements].tolist()) - {OUT_OF_SCOPE}
        if len(found) > 1:
            raise InputError(path, f"{what} {names[k]} is not inside one {what} of the main "
                             "one", names[k])
        if found and (outer[elements] == OUT_OF_SCOPE).any():
            raise InputError(path, f"{what} {names[k]} is only partly inside the main one",
                             names[k])
        if found:
            result[k] = found.pop()
    return result


def nested_groups(problem: Problem, main: dict[str, np.ndarray], kept: list[str],
                  fine: dict[str, np.ndarray], path: str) -> tuple[list[str], np.ndarray]:
    """The aggregation groups counted and, per (aggregation group, kept main group), whether
    the first lies in the second, by Rebalancer's rule for a distinct aggregation partition:
    every object of a kept main group is in exactly one aggregation group, and each of those
    lies wholly inside the main group (main groups may overlap, so one aggregation group may
    lie in several). Anything else is an InputError at ``path``, as the wheel refuses it."""
    groups_of: list[list[str]] = [[] for _ in range(problem.num_objects)]
    for name, members in fine.items():
        for obj in members.tolist():
            groups_of[obj].append(name)
    image: dict[str, set[str]] = {}
    for outer in kept:
        objects = set(main[outer].tolist())
        for obj in sorted(objects):
            inner = groups_of[obj]
            if len(inner) != 1:
                what = "no group" if not inner else f"{len(inner)} groups ({', '.join(inner)})"
                raise InputError(path, f"object {problem.objects[obj]} of group {outer} is in "
                                 f"{what} of the aggregation partition; each must be in "
                                 "exactly one", problem.objects[obj])
            (name,) = inner
            stray = sorted(set(fine[name].tolist()) - objects)
            if stray:
                raise InputError(path, f"group {name} is not inside group {outer} of the main "
                                 f"partition (object {problem.objects[stray[0]]} is not in "
                                 "it)", name)
            image.setdefault(name, set()).add(outer)
    counted = [name for name in fine if name in image]
    inside = np.asarray([[outer in image[name] for outer in kept] for name in counted],
                        dtype=bool).reshape(len(counted), len(kept))
    return counted, inside


@register
@dataclass(frozen=True, eq=False)
class CapacityWithGroupPresenceSpec(Spec):
    arm = "capacityWithGroupPresenceSpec"
    enum_fields = {"bound": "CapacityWithGroupPresenceBound",
                   "intent": "CapacityWithGroupPresenceUsageIntent",
                   "continuousPenaltyType": "ContinuousPenaltyType"}

    name: str
    scope: Scope  # the main scope: limits and the filter are on its items
    aggregation_scope: Scope  # where contributions are computed (nested in ``scope``)
    dimension: str
    bound: str  # MAX or MIN
    per_group: bool  # intent PER_GROUP_AND_SCOPE_ITEM
    round_up: bool
    groups: list[np.ndarray]  # members of each aggregation group counted (may overlap)
    inside: np.ndarray  # per (counted group, kept main group): the first lies in the second
    main_groups: list[str]  # kept main groups, in partition order
    main_of_item: np.ndarray  # main item of each aggregation item (-1: none kept)
    presence: np.ndarray  # weight per (aggregation group, aggregation item)
    multipliers: dict[str, list[np.ndarray]]  # per side, in order, (group, item) values
    infos_at: list[tuple[int, int]]  # (main item, kept main group or -1) per expression
    limits: list[tuple[float, float]]  # (limit as given, capacity or 1) per expression

    @classmethod
    def wheel_evaluates_as_mip(cls, body: dict) -> bool:
        """Local search adds a continuous penalty to the goal; the optimal solver does not."""
        return True

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> CapacityWithGroupPresenceSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        aggregation_name = f.raw("aggregationScope")
        aggregation_scope = (scope if aggregation_name is None else
                             resolve_scope(problem, f.text("aggregationScope"),
                                           f.at("aggregationScope")))
        partition_name = f.text("partition")
        main = resolve_partition(problem, partition_name, f.at("partition"))
        fine_name = (partition_name if f.raw("aggregationPartition") is None
                     else f.text("aggregationPartition"))
        fine = resolve_partition(problem, fine_name, f.at("aggregationPartition"))
        dimension = resolve_dimension(problem, f.text("dimension"), f.at("dimension"))
        bound = cls.enum(f, "bound", "MAX")
        per_group = cls.enum(f, "intent", "PER_SCOPE_ITEM") == "PER_GROUP_AND_SCOPE_ITEM"
        cls.enum(f, "continuousPenaltyType", "NORMALIZED_CONTINUOUS_UTILIZATION")
        round_up = f.flag("roundUpGroupUtilOnScopeItem", True)
        if not per_group and fine_name != partition_name:
            raise InputError(f.at("aggregationPartition"), "must equal partition under "
                             "intent PER_SCOPE_ITEM", fine_name)
        main_names = list(main)
        keep_main = parse_group_filter(f.raw("groupFilter"), f.at("groupFilter"), main_names)
        keep_items = parse_filter(f.raw("scopeItemFilter"), f.at("scopeItemFilter"), scope)
        kept_main = [g for g, keep in zip(main_names, keep_main) if keep]
        if fine_name == partition_name:  # each kept main group aggregates itself
            fine_names = kept_main
            inside = np.eye(len(kept_main), dtype=bool)
        else:
            fine_names, inside = nested_groups(problem, main, kept_main, fine,
                                               f.at("aggregationPartition"))
        counted = [j for j, g in enumerate(fine_names) if len(fine[g])]
        item_members = aggregation_scope.members()
        main_of_agg = nested(scope.container_item, item_members,
                             f.at("aggregationScope"), "item", aggregation_scope.items)
        main_of_item = np.where((main_of_agg >= 0) & keep_items[np.maximum(main_of_agg, 0)],
                                main_of_agg, -1)

        def table(limit: GroupLimit) -> np.ndarray:
            return np.asarray([[limit.resolve(a, fine_names[j])
                                for a in range(len(aggregation_scope.items))]
                               for j in counted], dtype=float).reshape(
                                   len(counted), len(aggregation_scope.items))

        presence_limit = GroupLimit.parse(f.raw("groupToPresenceWeight"),
                                          f.at("groupToPresenceWeight"), aggregation_scope,
                                          fine, "ABSOLUTE")
        if presence_limit.kind != "ABSOLUTE":
            raise InputError(f.at("groupToPresenceWeight"), "the presence weight must be an "
                             "ABSOLUTE limit", presence_limit.kind)
        presence = table(presence_limit)
        if (presence < 0).any() or np.isinf(presence).any():
            raise InputError(f.at("groupToPresenceWeight"), "presence weights must be finite "
                             "and not negative")
        GroupLimit.parse(f.raw("groupToExtraAdditivePenalty"),
                         f.at("groupToExtraAdditivePenalty"), aggregation_scope, fine,
                         "ABSOLUTE", 0.0)  # local search's continuous penalty only
        multipliers: dict[str, list[np.ndarray]] = {"presence": [], "utilization": []}
        common: list[np.ndarray] = []
        detailed = check_list(f.raw("groupUtilMultipliers") or [],
                              f.at("groupUtilMultipliers"))
        legacy = check_list(f.raw("multiplierList") or [], f.at("multiplierList"))

        def multiplier(value: Any, where: str) -> np.ndarray:
            values = table(GroupLimit.parse(value, where, aggregation_scope, fine,
                                            "ABSOLUTE"))
            if (values < 0).any() or np.isinf(values).any():
                raise InputError(where, "multipliers must be finite and not negative")
            return values

        if detailed:
            for k, entry in enumerate(detailed):
                m = Fields(entry, f"{f.at('groupUtilMultipliers')}[{k}]")
                values = multiplier(m.raw("value"), m.at("value"))
                target = m.enum("target", "GroupUtilMultiplierTarget", "COMMON")
                m.done("GroupUtilMultiplier")
                (common if target == "COMMON" else multipliers[SIDES[target]]).append(values)
        else:
            common = [multiplier(value, f"{f.at('multiplierList')}[{k}]")
                      for k, value in enumerate(legacy)]
        for side in multipliers.values():
            side.extend(common)
        capacity = GroupLimit.parse(f.raw("scopeItemToLimit"), f.at("scopeItemToLimit"),
                                    scope, main, "RELATIVE")
        f.done(cls.arm)
        if not per_group and (capacity.groups or capacity.item_groups):
            raise InputError(f.at("scopeItemToLimit"), "group limits need intent "
                             "PER_GROUP_AND_SCOPE_ITEM")
        caps = scope.capacity(dimension)
        infos_at, limits = [], []
        for item in np.flatnonzero(keep_items):
            for group in (range(len(kept_main)) if per_group else [-1]):
                limit = (capacity.resolve(int(item), kept_main[group])
                         if per_group else capacity.items.get(int(item),
                                                              capacity.global_limit))
                if math.isinf(limit):
                    if bound == "MIN":
                        raise InputError(f.at("scopeItemToLimit"), "an unbounded lower "
                                         "limit can never be met")
                    continue
                infos_at.append((int(item), group))
                limits.append((float(limit), float(caps[item])
                               if capacity.kind == "RELATIVE" else 1.0))
        return cls(name, scope, aggregation_scope, dimension, bound, per_group, round_up,
                   [np.asarray(fine[fine_names[j]], dtype=np.int64) for j in counted],
                   inside[counted], kept_main, main_of_item, presence, multipliers,
                   infos_at, limits)

    def reads_groups(self) -> bool:
        return True

    def reads_initial(self) -> bool:
        return False

    def info_labels(self, problem: Problem) -> list[str]:
        return [self.scope.items[i] + ("" if g < 0 else f" {self.main_groups[g]}")
                for i, g in self.infos_at]

    # ---------- evaluation ----------
    batched: ClassVar[bool] = True  # (a MoveBatch has static dimensions only)

    def _side(self, base: np.ndarray, side: str, at: Any) -> np.ndarray:
        """``base`` through a side's multipliers; ``at`` indexes the (group, item) arrays
        where ``base`` is not every cell in order (rows, or (groups, items) cells)."""
        value = ceil_tolerant(base) if self.round_up else base
        zero = np.zeros(base.shape, dtype=bool)
        for m in self.multipliers[side]:
            rows = m if at is None else m[at]
            zero |= np.abs(rows) <= TOLERANCE
            value = value * rows
            if self.round_up:
                value = ceil_tolerant(value)
        return np.where(zero, 0.0, value)

    def _contributions(self, after: np.ndarray, at: Any = None) -> np.ndarray:
        """Contribution of the groups' AFTER utilizations ``after``: per (aggregation
        group, aggregation item), or at the cells ``at`` indexes. A cell where nothing is
        contributes 0."""
        present = (after > TOLERANCE).astype(float)
        weight = self.presence if at is None else self.presence[at]
        return np.maximum(self._side(weight * present, "presence", at),
                          self._side(after, "utilization", at))

    def _per_item(self, ctx: EvalContext, raw: bool = False
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Contributions at ``ctx`` (not a batch) of the cells where something is (the
        others contribute 0), as (group, main item, contribution) entries; ``raw``: the
        utilizations themselves, neither rounded nor weighed by presence."""
        group, item, after = ctx.group_cells(self.aggregation_scope, self.dimension,
                                             self.groups)
        contributions = after if raw else self._contributions(after, (group, item))
        main = self.main_of_item[item]
        kept = main >= 0
        return group[kept], main[kept], contributions[kept]

    def infos(self, ctx: EvalContext) -> np.ndarray:
        if isinstance(ctx, MoveBatch):
            util, candidate, info, change, *_ = self._changes_in_batch(ctx)
            util = np.repeat(util[None, :], ctx.size, axis=0)
            np.add.at(util, (candidate, info), change)
        else:
            util = self._utils(self._per_item(ctx))
        return self._expressions(util)

    def _expressions(self, util: np.ndarray, infos: np.ndarray | None = None) -> np.ndarray:
        """The expressions at these utilizations (of the expressions ``infos``, else all)."""
        limit = self._info_arrays[1] if infos is None else self._info_arrays[1][infos]
        return util - limit if self.bound == "MAX" else limit - util

    def _utils(self, per_item: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
        """Each expression's utilization: the contributions (``_per_item``) summed per kept
        main group, or over all groups, at the expression's main item."""
        at, _ = self._info_arrays
        group, main, contribution = per_item
        n = len(self.scope.items)
        util = np.bincount(main, weights=contribution, minlength=n).astype(float)[at[:, 0]]
        within = at[:, 1] >= 0
        if within.any():  # Σ over the groups inside each expression's main group
            cell, main_group = np.nonzero(self.inside[group])
            per_group = np.bincount(main_group * n + main[cell], weights=contribution[cell],
                                    minlength=self.inside.shape[1] * n)
            util[within] = per_group.reshape(-1, n)[at[within, 1], at[within, 0]]
        return util

    def _changes_in_batch(self, batch: MoveBatch) -> tuple[np.ndarray, ...]:
        """Each expression's utilization in the base assignment, and what the cells each
        candidate's moves touch change of it, as (candidate, expression, change, raw
        change, squared change) entries (one pair may repeat; the raw change is the
        utilization's, the squared one its square's, see ``guide``): a group counts in the
        expressions over all groups, and in those of each main group it lies in. Kept per
        batch: the value and the guide both read it."""
        return batch.memo((self, "changes"), lambda: self._changes_of(batch))

    def _changes_of(self, batch: MoveBatch) -> tuple[np.ndarray, ...]:
        base = batch.base
        util = base.memo((self, "utils"), lambda: self._utils(self._per_item(base)))
        candidate, group, item, before, after = batch.touched_cells(
            self.aggregation_scope, self.dimension, self.groups)
        cells = (group, item)
        change = self._contributions(after, cells) - self._contributions(before, cells)
        main = self.main_of_item[item]
        kept = main >= 0
        candidate, group, main = candidate[kept], group[kept], main[kept]
        columns = (change[kept], (after - before)[kept], (after**2 - before**2)[kept])
        everything, per_main = self._info_index
        ids = everything[main]
        over_all = ids >= 0
        entries = [(candidate[over_all], ids[over_all], *(c[over_all] for c in columns))]
        if per_main.size and (per_main >= 0).any():
            cell, main_group = np.nonzero(self.inside[group])  # the main groups it lies in
            ids = per_main[main_group, main[cell]]
            within = ids >= 0
            entries.append((candidate[cell][within], ids[within],
                            *(c[cell][within] for c in columns)))
        return (util, *(np.concatenate(column) for column in zip(*entries)))

    @functools.cached_property
    def _info_index(self) -> tuple[np.ndarray, np.ndarray]:
        """Per main item, its expression over all groups (-1: none), and per (kept main
        group, main item) the expression there (-1: none)."""
        at, _ = self._info_arrays
        n = len(self.scope.items)
        everything = np.full(n, -1, dtype=np.int64)
        over_all = np.flatnonzero(at[:, 1] < 0)
        everything[at[over_all, 0]] = over_all
        per_main = np.full((self.inside.shape[1], n), -1, dtype=np.int64)
        within = np.flatnonzero(at[:, 1] >= 0)
        per_main[at[within, 1], at[within, 0]] = within
        return everything, per_main

    @functools.cached_property
    def _info_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``infos_at`` as an array (main item, main group) and each info's limit x
        capacity: built once, as an evaluation reads them all (a local search, many times)."""
        return (np.asarray(self.infos_at, dtype=np.int64).reshape(-1, 2),
                np.asarray([limit * cap for limit, cap in self.limits], dtype=float))

    def info_changes(self, batch: MoveBatch) -> InfoChanges:
        util, candidate, info, change, *_ = self._changes_in_batch(batch)
        changed, where = np.unique(candidate * len(util) + info, return_inverse=True)
        infos = changed % len(util)
        after = util[infos] + np.bincount(where, weights=change, minlength=len(changed))
        return InfoChanges(self._expressions(util), changed // len(util), infos,
                           self._expressions(after, infos))

    def evaluate(self, ctx: EvalContext) -> float | np.ndarray:
        if not isinstance(ctx, MoveBatch):
            return float(positive(self.infos(ctx)).sum())
        # the base's value, changed where a candidate changes an expression
        changes = self.info_changes(ctx)
        before = positive(changes.base)
        return before.sum() + np.bincount(
            changes.candidate, positive(changes.value) - before[changes.info],
            minlength=ctx.size)

    def guide(self, ctx: EvalContext) -> float | np.ndarray | None:
        """Over the expressions beyond their limit, a measure of their cells' utilizations
        (neither rounded nor weighed by presence) that falls along the moves that leave the
        value flat on its way down. Under a MAX bound, the utilization over the limit: a
        group's last object leaving an item lowers the value, and the moves before it leave
        the value flat (Rebalancer's local search adds a continuous penalty to this spec for
        the same reason). Under a MIN bound, minus the squared utilization of each (group,
        item) cell over the limit squared: moving a group's objects between two items where
        it weighs more than its presence leaves the value flat, until the lighter item falls
        below its presence weight; this measure falls with each move into the heavier."""
        limit = self._info_arrays[1]
        maximum = self.bound == "MAX"
        scale = np.where(limit > 0, limit, 1.0) ** (1 if maximum else 2)

        def term(util: np.ndarray, measured: np.ndarray, infos: np.ndarray | None = None):
            beyond = self._expressions(util, infos) > TOLERANCE
            return ((1.0 if maximum else -1.0) * np.where(beyond, measured, 0.0)
                    / (scale if infos is None else scale[infos]))

        if not isinstance(ctx, MoveBatch):
            return float(term(self._utils(self._per_item(ctx)), self._measured(ctx)).sum())
        base = ctx.base
        measured = base.memo((self, "measured"), lambda: self._measured(base))
        util, candidate, info, change, raw_change, squared_change = self._changes_in_batch(ctx)
        measured_change = raw_change if maximum else squared_change
        before = term(util, measured)
        changed, where = np.unique(candidate * len(util) + info, return_inverse=True)
        infos = changed % len(util)
        after = term(util[infos] + np.bincount(where, change, minlength=len(changed)),
                     measured[infos] + np.bincount(where, measured_change,
                                                   minlength=len(changed)),
                     infos)
        return before.sum() + np.bincount(changed // len(util), after - before[infos],
                                          minlength=ctx.size)

    def _measured(self, ctx: EvalContext) -> np.ndarray:
        """Per expression, the sum of its cells' utilizations (MAX) or of their squares
        (MIN), as ``guide`` reads them."""
        group, main, raw = self._per_item(ctx, raw=True)
        return self._utils((group, main, raw if self.bound == "MAX" else raw**2))

    # ---------- compilation ----------
    def _ceil_times(self, b: CpBuilder, expr: object, lo: int, hi: int, initial: int | None,
                    factor: Fraction) -> tuple[object, int, int, int | None]:
        """ceil(expr·factor) as an integer variable (expr integer, factor > 0 rational)."""
        p, q = factor.numerator, factor.denominator
        low, high = ceil_fraction(lo * factor), ceil_fraction(hi * factor)
        if max(abs(p * lo), abs(p * hi), abs(q * low), abs(q * high)) + q >= INT_LIMIT:
            raise InputError(self.name, "a rounded-up group utilization is too large to model "
                             "in CP-SAT's 64-bit integers", float(hi * factor))
        z = b.cp.new_int_var(low, high, "ceil")
        b.cp.add(q * z >= p * expr)
        b.cp.add(q * z <= p * expr + q - 1)
        start = None if initial is None else ceil_fraction(initial * factor)
        return z, low, high, start

    def _contribution(self, b: CpBuilder, util: Lin, j: int, a: int,
                      enough: Fraction | None, count: tuple[object, int] | None,
                      values: list[tuple[object, int]] | None) -> Lin:
        """max(P·step(u), F(u)) for group j in item a, exactly; under a MIN bound, where
        every expression it counts in has a limit of at most ``enough``, a term that equals
        it wherever it is below ``enough`` (see ``_reads_at_most``). ``count``: the
        group's objects there that weigh in the dimension, and the most there can be;
        ``values``: their count variables with their values (``CpBuilder.group_values``);
        None: not known."""
        weight = to_fraction(float(self.presence[j, a]))
        if self.round_up:
            weight = Fraction(ceil_fraction(weight))
        for m in self.multipliers["presence"]:
            value = to_fraction(float(m[j, a]))
            weight = Fraction(0) if abs(value) <= TOLERANCE else weight * value
            if self.round_up:
                weight = Fraction(ceil_fraction(weight))
        form = b.integerize(util)
        if enough is not None and (enough <= 0 or form.hi <= 0):
            return Lin()
        rewarded = self.bound == "MIN"
        if enough is not None and weight >= enough:
            # present, it counts at least ``enough``: the utilization side cannot matter
            return presence(b, util, count, rewarded) * enough
        factors = [to_fraction(float(m[j, a])) for m in self.multipliers["utilization"]]
        if any(abs(factor) <= TOLERANCE for factor in factors):
            side = Lin()
        elif not self.round_up:
            side = util
            for factor in factors:
                side = side * factor
        else:
            try:
                initial = int(b.initial_value(util) * form.factor)
            except ValueError:
                initial = None
            expr, lo, hi, start = self._ceil_times(b, form.expr, form.lo, form.hi, initial,
                                                   1 / form.factor)
            for factor in factors:
                expr, lo, hi, start = self._ceil_times(b, expr, lo, hi, start, factor)
            side = Lin.atom(b.new_atom(expr, lo, hi, start))
        if weight == 0 or form.hi <= 0:
            return side
        step = presence(b, util, count, rewarded) * weight
        if side.is_constant:  # the utilization side is 0
            return step
        per_object = None
        if rewarded and values is not None:  # (every object there is above 1e-10 or 0)
            # each object there adds at most the larger of the weight and its own side
            scale = b.scale(self.dimension).factor
            per_object = [(count_var, max(weight, self._side_of(Fraction(value, scale),
                                                                 factors)))
                          for count_var, value in values]
        return self._exact_max(b, step, side, per_object)

    def _side_of(self, value: Fraction, factors: list[Fraction]) -> Fraction:
        """The utilization side of a lone object of ``value``, as compiled (rounded up
        exactly at each step where rounding): the side of several objects is at most the
        sum of theirs, as a ceiling of a sum is at most the sum of the ceilings."""
        side = Fraction(ceil_fraction(value)) if self.round_up else value
        for factor in factors:
            side = side * factor
            if self.round_up:
                side = Fraction(ceil_fraction(side))
        return side

    @staticmethod
    def _exact_max(b: CpBuilder, step: Lin, side: Lin,
                   per_object: list[tuple[object, Fraction]] | None = None) -> Lin:
        """max(step, side), exactly: ``step`` is the presence weight w times the presence
        literal, ``side`` a utilization side. An LP reads a maximum only from below (at
        least each side), which is all it needs where the maximum is paid for; where it is
        rewarded (a MIN bound) the LP would raise it to its domain's top. Given
        ``per_object`` there (count variables, each with the most one object adds: the
        larger of w and the object's own side, which sides never exceed in sum; known only
        where every object is 0 or above the presence tolerance, so that the side is 0
        exactly where the group is absent), it is also held under its hull's upper face,
        with the side in [0, U], ``max <= step + (1 - w/U)·side`` (``max <= step`` when
        U <= w), and under the per-object sum, which an LP cannot raise by spreading an
        object thinly."""
        forms = b.integerize_all([step, side])
        lo, hi = max(f.lo for f in forms), max(f.hi for f in forms)
        t = b.cp.new_int_var(lo, hi, "contribution")
        sides = [b.variable(f.expr, f.lo, f.hi, "side") for f in forms]
        b.cp.add_max_equality(t, sides)
        weight, most = forms[0].hi, forms[1].hi
        if per_object and forms[0].lo == 0 and forms[1].lo >= 0:
            if most <= weight:
                b.cp.add(t <= sides[0])
            else:  # the slope rounded up to a multiple of 1/HULL_UNITS: small coefficients
                slope = -(-(most - weight) * HULL_UNITS // most)
                b.cp.add(HULL_UNITS * t <= HULL_UNITS * sides[0] + slope * sides[1])
            factor = forms[0].factor
            b.cp.add(t <= sum(ceil_fraction(cap * factor) * count_var
                              for count_var, cap in per_object))
        try:
            start = max(round(b.initial_value(x) * forms[0].factor) for x in (step, side))
        except ValueError:
            start = None
        return Lin.atom(b.new_atom(t, lo, hi, start), 1 / forms[0].factor)

    def _info_forms(self, b: CpBuilder) -> list[Info]:
        thresholds = [to_fraction(limit) * to_fraction(cap) for limit, cap in self.limits]
        reads_at_most = self._reads_at_most(thresholds)
        by_item: dict[int, list[tuple[int, Lin]]] = {}  # main item: (group, contribution)
        for j, members in enumerate(self.groups):
            utils = b.group_util(self.aggregation_scope, self.dimension, "AFTER", members)
            values = b.group_values(self.aggregation_scope, self.dimension, members)
            counts = b.group_counts(self.aggregation_scope, self.dimension, members, values)
            for a in np.flatnonzero(self.main_of_item >= 0):
                if not utils[a].is_constant:
                    main = int(self.main_of_item[a])
                    enough = None if reads_at_most is None else reads_at_most(j, main)
                    by_item.setdefault(main, []).append(
                        (j, self._contribution(b, utils[a], j, int(a), enough,
                                               None if counts is None else counts[a],
                                               None if values is None else values[a])))
        forms = []
        for (item, group), threshold in zip(self.infos_at, thresholds):
            util = lin_sum(c for j, c in by_item.get(int(item), ())
                           if group < 0 or self.inside[j, group])
            forms.append(Info(util - threshold if self.bound == "MAX"
                              else Lin(const=threshold) - util))
        return forms

    def _reads_at_most(self, thresholds: list[Fraction]
                       ) -> Callable[[int, int], Fraction] | None:
        """Under a MIN bound, the largest limit among the expressions a (group j, main item)
        cell counts in, as a function of (j, item): an expression limit − Σ contributions
        is read only above 0, so each contribution only up to the limit (one at or above
        it leaves the expression at most 0 alone). None under a MAX bound."""
        if self.bound != "MIN":
            return None
        over_all: dict[int, Fraction] = {}
        per_group: dict[tuple[int, int], Fraction] = {}
        for (item, group), threshold in zip(self.infos_at, thresholds):
            if group < 0:
                over_all[item] = threshold
            else:
                per_group[item, group] = threshold

        def largest(j: int, item: int) -> Fraction:
            limits = [per_group[item, g] for g in np.flatnonzero(self.inside[j]).tolist()
                      if (item, g) in per_group]
            if item in over_all:
                limits.append(over_all[item])
            return max(limits, default=Fraction(0))

        return largest

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        return self._info_forms(b)

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        return GoalForm(lin_sum(b.positive_part(info.expr, what=self.name)
                                for info in self._info_forms(b)))

