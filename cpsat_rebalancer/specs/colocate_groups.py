"""ColocateGroupsSpec: over how many scope items each partition group may spread
(docs/semantics.md#colocategroups).

Per group g: X_g = Σ_{s in filter} w_s·step(util of g in s) - L_g (negated for MIN, x^1.1
of its positive part with squares). The value is the optimal solver's: Rebalancer's local
search adds a continuous term P_g on top, which the optimum does not see.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, NamedTuple

import numpy as np

from ..context import EvalContext, MoveBatch, membership, positive, step
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Info
from ..cpsat.linear import Lin, lin_sum, to_fraction
from ..cpsat.pwl import convex_pwl, exact_table
from ..errors import InputError
from ..fields import Fields, check_number
from ..primitives import TOLERANCE
from ..problem import Problem, Scope
from .common import (
    GoalForm,
    GroupLimit,
    Spec,
    leaving,
    parse_filter,
    register,
    resolve_dimension,
    resolve_partition,
    resolve_scope,
    spec_name,
)

POWER = 1.1  # Rebalancer's "squares" exponent for this spec
SPREAD_WEIGHT = Fraction(1, 10)  # the continuous penalty's quadratic coefficient


def _power(x: float) -> float:
    """x^1.1 of the excess; a group inside its bound contributes 0 (Rebalancer 1.0.4 gives NaN
    there on a full evaluation, 0 incrementally; 0 is the intended value)."""
    return max(0.0, x) ** POWER


class _Terms(NamedTuple):
    """A group's info W_g·Y_g, its penalty W_g·P_g (None without the continuous term),
    and its part of the value."""

    infos: np.ndarray
    penalties: np.ndarray | None
    values: np.ndarray


@register
@dataclass(frozen=True, eq=False)
class ColocateGroupsSpec(Spec):
    arm = "colocateGroupsSpec"
    enum_fields = {"bound": "ColocateGroupsSpecBound"}

    @classmethod
    def wheel_evaluates_as_mip(cls, body: dict) -> bool:
        return True  # its local search and optimal solver value it differently

    name: str
    scope: Scope
    dimension: str
    groups: list[str]  # groups with a finite limit, in partition order
    members: list[np.ndarray]
    limits: np.ndarray  # L_g per listed group
    group_weights: np.ndarray  # W_g per listed group
    items: np.ndarray  # filtered items
    item_weights: np.ndarray  # w_s per filtered item
    minimum: bool  # bound MIN: X_g is negated
    squares: bool
    # useContinuousPenaltyWithOptimal: the group's total M_g where a continuous penalty P_g
    # applies to it, 0 where none does (and everywhere without the option)
    masses: np.ndarray | None = None

    @property
    def nonnegative(self) -> bool:  # type: ignore[override]
        """A negative group or item weight rewards that group's excess."""
        return bool(np.all(self.group_weights >= 0) and np.all(self.item_weights >= 0))

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> ColocateGroupsSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        partition = resolve_partition(problem, f.text("partitionName"), f.at("partitionName"))
        dimension = resolve_dimension(problem, f.text("dimension"), f.at("dimension"),
                                      default=problem.count_dimension)
        bound = cls.enum(f, "bound", "MAX")
        limit = GroupLimit.parse(f.raw("limits"), f.at("limits"), scope, partition, "ABSOLUTE")
        if limit.kind != "ABSOLUTE":
            raise InputError(f"{f.at('limits')}.type", "ColocateGroups limits are ABSOLUTE "
                             "(a number of scope items)", limit.kind)
        for key, given in (("scopeItemLimits", limit.items),
                           ("scopeItemToGroupLimits", limit.item_groups)):
            if given:
                raise InputError(f"{f.at('limits')}.{key}", "per-item limits have no effect on "
                                 "this spec (Rebalancer reads groupLimits and globalLimit only)")
        items = np.flatnonzero(parse_filter(f.raw("filter"), f.at("filter"), scope))
        squares = f.flag("squares")
        continuous = f.flag("useContinuousPenaltyWithOptimal")
        item_weight = np.ones(len(scope.items))
        for item, value in f.mapping("scopeItemWeights").items():
            where = f"{f.at('scopeItemWeights')}.{item}"
            if item not in scope.item_index:
                raise InputError(where, f"weight for an unknown item of scope '{scope.name}'",
                                 item)
            item_weight[scope.item_index[item]] = check_number(value, where)
        group_weight = {}
        for group, value in f.mapping("groupToWeight").items():
            where = f"{f.at('groupToWeight')}.{group}"
            if group not in partition:
                raise InputError(where, "weight for an unknown group", group)
            group_weight[group] = check_number(value, where)
        f.done(cls.arm)
        minimum = bound == "MIN"
        groups, members, limits, weights = [], [], [], []
        for group, objs in partition.items():
            value = limit.of_group(group)
            weight = group_weight.get(group, 1.0)
            if math.isinf(value):
                if minimum:
                    raise InputError(f.at("limits"), "a MIN bound needs finite limits "
                                     "(isDefaultLimitUnbounded makes them infinite)", group)
                continue  # MAX with no limit: never in excess, no expression
            if squares and weight < 0 and as_goal:
                raise InputError(f"{f.at('groupToWeight')}.{group}", "a negative group weight "
                                 "with squares rewards the excess of a convex penalty, which "
                                 "is not modelled exactly", weight)
            groups.append(group)
            members.append(objs)
            limits.append(value)
            weights.append(weight)
        masses = None
        if continuous:  # MAX with W_g >= 0 or MIN with W_g < 0, and M_g > 0
            values = problem.object_dims[dimension]
            masses = np.asarray([values[m].sum() if (w >= 0) != minimum else 0.0
                                 for m, w in zip(members, weights)], dtype=float)
        return cls(name, scope, dimension, groups, members, np.asarray(limits, dtype=float),
                   np.asarray(weights, dtype=float), items, item_weight[items], minimum, squares,
                   masses)

    # ---------- evaluation ----------
    batched: ClassVar[bool] = True  # (a MoveBatch has static dimensions only)

    def _excess(self, after: np.ndarray, groups: np.ndarray | slice = slice(None)
                ) -> np.ndarray:
        """Y_g: X_g, or max(0, X_g)^1.1 with squares, of the groups whose AFTER rows
        (row, item) ``after`` holds (``groups``: which groups the rows are)."""
        x = step(after[:, self.items]) @ self.item_weights - self.limits[groups]
        x = -x if self.minimum else x
        return np.maximum(x, 0.0) ** POWER if self.squares else x

    def _spread(self, after: np.ndarray, groups: np.ndarray | slice = slice(None)
                ) -> np.ndarray:
        """P_g = Σ_s w_s·(x_s − 0.1·x_s²), x_s = U_gs / M_g (0 where no penalty applies)."""
        masses = self.masses[groups]
        x = after[:, self.items] / np.where(masses > 0, masses, 1.0)[:, None]
        spread = (x - float(SPREAD_WEIGHT) * x**2) @ self.item_weights
        return np.where(masses > 0, spread, 0.0)

    def _terms(self, after: np.ndarray, groups: np.ndarray | slice = slice(None)) -> _Terms:
        """Per group of the rows (``groups``: which groups they are)."""
        weights = self.group_weights[groups]
        excess = self._excess(after, groups)
        value = positive(excess)
        penalty = None
        if self.masses is not None:
            spread = self._spread(after, groups)
            penalty = weights * spread
            value = value + step(excess) * spread
        return _Terms(weights * excess, penalty, weights * value)

    def _at(self, ctx: EvalContext, term: str) -> np.ndarray:
        """One of the ``_Terms`` per group (per candidate, groups last, under a MoveBatch:
        the base's, changed for the groups a candidate's moves touch)."""
        if not isinstance(ctx, MoveBatch):
            return getattr(self._terms(ctx.group_after(self.scope, self.dimension,
                                                       self.members)), term)
        base = ctx.base
        after = base.group_after(self.scope, self.dimension, self.members)
        kept = getattr(base.memo((self, "terms"), lambda: self._terms(after)), term)
        _, candidate, touched, rows = ctx.touched_groups(self.scope, self.dimension,
                                                         self.members)
        result = np.repeat(kept[None, :], ctx.size, axis=0)
        result[candidate, touched] = getattr(self._terms(rows, touched), term)
        return result

    def infos(self, ctx: EvalContext) -> np.ndarray:
        return self._at(ctx, "infos")

    def evaluate(self, ctx: EvalContext) -> float | np.ndarray:
        value = self._at(ctx, "values").sum(axis=-1)
        return value if isinstance(ctx, MoveBatch) else float(value)

    def penalties(self, ctx: EvalContext) -> np.ndarray | None:
        """W_g·P_g: a broken group's soft term adds it (times invalidCost)."""
        return None if self.masses is None else self._at(ctx, "penalties")

    def compile_penalties(self, b: CpBuilder, infos: list[Info]) -> list[Lin] | None:
        if self.masses is None:
            return None
        return [self._spread_form(b, g, info.expr) * to_fraction(float(w))
                if self.masses[g] > 0 else Lin()
                for g, (info, w) in enumerate(zip(infos, self.group_weights))]

    def departures(self, ctx: EvalContext) -> list[tuple[np.ndarray, np.ndarray]]:
        """MAX: each group spread over more than its limit, its objects of positive size
        in each weighed item where it is, out of that item: it counts there until its last
        one leaves."""
        if self.minimum or self.dimension in ctx.problem.dynamic_dims:
            return []
        weight = np.zeros(len(self.scope.items) + 1)  # the last: out of scope
        weight[self.items] = self.item_weights
        groups, items, totals = ctx.group_cells(self.scope, self.dimension, self.members)
        spread = np.bincount(groups, weights=weight[items] * (totals > TOLERANCE),
                             minlength=len(self.members))
        over = spread - self.limits > TOLERANCE
        objects, of = membership(self.members)
        where = self.scope.container_item[ctx.final[objects]]
        chosen = (over[of] & (weight[where] > 0)
                  & (ctx.problem.object_dims[self.dimension][objects] > TOLERANCE))
        return leaving(self.scope, objects[chosen],
                       of[chosen] * len(self.scope.items) + where[chosen], where[chosen])

    def reads_groups(self) -> bool:
        return True

    def info_labels(self, problem: Problem) -> list[str]:
        return [f"group {group} spread" for group in self.groups]

    # ---------- compilation ----------
    def _excess_forms(self, b: CpBuilder) -> list[Lin]:
        return [y for _, y in self._excess_pairs(b)]

    def _excess_pairs(self, b: CpBuilder) -> list[tuple[Lin, Lin]]:
        """(X_g, Y_g) per group: the spread over the limit, and Y_g (X_g or its power). The
        error a power's chords state is kept at the group's weight, which Y_g is used with."""
        tolerance = math.floor(TOLERANCE * b.scale(self.dimension).factor)  # in units
        weights = [to_fraction(float(w)) for w in self.item_weights]
        forms = []
        for members, limit, group_weight in zip(self.members, self.limits, self.group_weights):
            b.check_time()  # groups x items presence literals: minutes on a large model
            utils = b.group_util(self.scope, self.dimension, "AFTER", members)
            present = []
            for w, item in zip(weights, self.items):
                u = utils[item]
                if w == 0 or u.is_constant:
                    continue  # a constant util is 0: nothing of g can land there
                present.append(Lin.atom(self._presence(b, u, tolerance), w))
            x = lin_sum(present) - to_fraction(float(limit))
            x = -x if self.minimum else x
            with b.errors_scaled(abs(float(group_weight))):
                forms.append((x, self._power_form(b, x) if self.squares else x))
        return forms

    @staticmethod
    def _presence(b: CpBuilder, u: Lin, tolerance: int) -> int:
        """An atom equal to step(u) for a group's utilization u (one atom, in units of the
        dimension): a literal true exactly when the atom exceeds the tolerance."""
        ((index, _),) = u.terms.items()
        atom = b.atoms[index]
        literal = b.cp.new_bool_var("present")
        b.cp.add(atom.expr >= tolerance + 1).only_enforce_if(literal)
        b.cp.add(atom.expr <= tolerance).only_enforce_if(literal.Not())
        return b.new_atom(literal, 0, 1, int(atom.initial > tolerance))

    def _power_form(self, b: CpBuilder, x: Lin) -> Lin:
        """max(0, x)^1.1: tabulated at every value of x (chords with a stated error beyond)."""
        if b.bounds(x)[1] <= 0:
            return Lin()
        if x.is_constant:
            return Lin(const=Fraction(_power(float(x.const))))
        atom = b.as_atom(x)
        table = exact_table(b, atom, _power, what=self.name)
        return table if table is not None else convex_pwl(b, atom, _power, kinks=[0.0],
                                                          what=self.name)

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        return [Info(y * to_fraction(float(w)))
                for y, w in zip(self._excess_forms(b), self.group_weights)]

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        terms = []
        for g, ((x, y), w) in enumerate(zip(self._excess_pairs(b), self.group_weights)):
            weight = to_fraction(float(w))
            with b.errors_scaled(abs(float(w))):  # (the terms are the weight's multiples)
                if w >= 0:
                    terms.append(b.positive_part(y, what=self.name) * weight)
                else:  # a reward: max(0, X) must be exact from both sides (not only bounded)
                    terms.append(b.exact_max([y, Lin()], what=self.name) * weight)
                if self.masses is not None and self.masses[g] > 0:
                    terms.append(self._spread_form(b, g, x) * weight)
        return GoalForm(lin_sum(terms))

    def _spread_form(self, b: CpBuilder, g: int, switch: Lin) -> Lin:
        """step(switch)·P_g exactly: P_g through exact integer squares of the group's
        utilizations, switched by a literal equal to switch > 0 (X_g in a goal, the
        expression W_g·Y_g in a constraint)."""
        if b.bounds(switch)[1] <= 0:
            return Lin()
        b.check_time()  # once per group, as the presence literals
        scale = b.scale(self.dimension)
        mass = Fraction(int(scale.values[self.members[g]].sum()), scale.factor)
        utils = b.group_util(self.scope, self.dimension, "AFTER", self.members[g])
        terms = []
        for w, item in zip(self.item_weights, self.items):
            u = utils[item]
            if w == 0 or u.is_constant:
                continue
            form = b.integerize(u)
            if form.hi > 2**25:
                raise InputError(self.name, "the continuous penalty squares a group's "
                                 "utilization, here up to "
                                 f"{form.hi} units: too wide to square exactly in 64 bits")
            value = b.variable(form.expr, form.lo, form.hi, "group_util")
            square = b.cp.new_int_var(0, form.hi * form.hi, "group_util_sq")
            b.cp.add_multiplication_equality(square, [value, value])
            share = u / mass - Lin.atom(b.new_atom(square, 0, form.hi * form.hi),
                                        1 / (form.factor * form.factor)) * (SPREAD_WEIGHT
                                                                            / mass**2)
            terms.append(share * to_fraction(float(w)))
        spread = lin_sum(terms)
        if spread.is_constant and spread.const == 0:
            return Lin()
        form = b.integerize(spread)
        b.note_error(self.name, form.error)
        switched = b.cp.new_int_var(min(0, form.lo), max(0, form.hi), "spread")
        broken = b.gate(switch)
        b.cp.add(switched == form.expr).only_enforce_if(broken)
        b.cp.add(switched == 0).only_enforce_if(broken.Not())
        return Lin.atom(b.new_atom(switched, min(0, form.lo), max(0, form.hi)),
                        1 / form.factor)
