"""GroupDiversitySpec: at least (MIN) or at most (MAX) N distinct partition groups per scope
item (docs/semantics.md#groupdiversity).

Per filtered item s, with D_s the number of groups present there (step of the group's AFTER
utilization of the dimension) and N_s its limit: e_s = N_s − D_s (MIN) or D_s − N_s (MAX),
one constraint expression per item; the goal is Σ_s e_s⁺. The value is the optimal solver's:
for MAX, Rebalancer's local search adds a continuous term P_s on top, which the optimum
does not see.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..context import EvalContext, MoveBatch, membership, positive, step
from ..cpsat.builder import CpBuilder
from ..cpsat.classes import item_groups
from ..cpsat.forms import Info
from ..cpsat.linear import Lin, lin_sum, to_fraction
from ..errors import InputError
from ..fields import Fields
from ..primitives import TOLERANCE
from ..problem import OUT_OF_SCOPE, Problem, Scope
from .common import (
    GoalForm,
    Limit,
    Spec,
    leaving,
    parse_filter,
    register,
    resolve_dimension,
    resolve_partition,
    resolve_scope,
    roles_by_item,
    spec_name,
)


def presence(b: CpBuilder, u: Lin, count: tuple[object, int] | None = None,
             rewarded: bool = False) -> Lin:
    """step(u) as a literal, exact both ways, for a utilization u = c·atom (c > 0): true
    exactly when the atom exceeds 1e-10 in its own integer units. ``count``: the objects
    that make up u and the most there can be (``CpBuilder.group_counts``), tied to the
    literal for an LP, on the side ``rewarded`` says (``CpBuilder.tie_to_count``)."""
    if u.is_constant:  # nothing can land there
        return Lin(const=int(float(u.const) > TOLERANCE))
    ((index, coef),) = [(a, c) for a, c in u.terms.items() if c != 0]
    tolerance = math.floor(TOLERANCE * (1 / coef))
    atom = b.atoms[index]
    literal = b.cp.new_bool_var("present")
    b.cp.add(atom.expr >= tolerance + 1).only_enforce_if(literal)
    b.cp.add(atom.expr <= tolerance).only_enforce_if(literal.Not())
    if count is not None:
        b.tie_to_count(literal, count, rewarded)
    initial = None if atom.initial is None else int(atom.initial > tolerance)
    return Lin.atom(b.new_atom(literal, 0, 1, initial))


def group_after(ctx: EvalContext, scope: Scope, dim: str,
                members: list[np.ndarray]) -> np.ndarray:
    """AFTER utilization per (group, item of ``scope``), each object at its size where it
    lands (``members``: object indices per group; groups may overlap, and an object then
    counts in each of its groups, as in Rebalancer)."""
    if dim not in ctx.problem.dynamic_dims:
        return ctx.group_after(scope, dim, members)
    n = len(scope.items)
    if not members:
        return np.zeros((0, n))
    objects = np.concatenate(members).astype(np.int64)
    groups = np.repeat(np.arange(len(members)), [len(m) for m in members])
    values = ctx.problem.values_at(dim, ctx.final)[objects]
    items = scope.container_item[ctx.final[objects]]
    mask = items != OUT_OF_SCOPE
    flat = np.bincount(groups[mask] * n + items[mask], weights=values[mask],
                       minlength=len(members) * n)
    return flat.astype(float).reshape(len(members), n)


def group_after_forms(b: CpBuilder, scope: Scope, dim: str, members: np.ndarray) -> list[Lin]:
    """One group's AFTER utilization per item of ``scope`` as forms over one atom each; for
    a dynamic dimension each count variable weighs its class's size in its container."""
    problem = b.problem
    if dim not in problem.dynamic_dims:
        return b.group_util(scope, dim, "AFTER", members)
    values = b.var_values(dim)
    where = scope.container_item[b.var_cont]
    table = b.scale(dim).table  # integer size per (object, item of the dimension's scope)
    sized_by = item_groups(problem.scopes[problem.dynamic_dims[dim].scope])
    start = table[members, sized_by[problem.initial[members]]]
    start_items = scope.container_item[problem.initial[members]]
    most = int(table[members].max(axis=1).sum())
    terms: list[list[tuple[object, int]]] = [[] for _ in scope.items]
    for k in b.group_classes(members):
        for j in b.class_vars[k]:
            if where[j] != OUT_OF_SCOPE and values[j] != 0:
                terms[where[j]].append((b.count_vars[j], int(values[j])))
    unit = 1 / b.scale(dim).factor
    result = []
    for item, chosen in enumerate(terms):
        if not chosen:
            result.append(Lin())
            continue
        expr = sum(c * v for v, c in chosen)
        initial = int(start[start_items == item].sum())
        result.append(Lin.atom(b.new_atom(expr, 0, most, initial), unit))
    return result


@register
@dataclass(frozen=True, eq=False)
class GroupDiversitySpec(Spec):
    arm = "groupDiversitySpec"
    enum_fields = {"bound": "GroupDiversityBound"}

    @classmethod
    def wheel_evaluates_as_mip(cls, body: dict) -> bool:
        return body.get("bound", 1) == 2  # MAX: its local search adds a continuous term

    name: str
    scope: Scope
    dimension: str
    members: list[np.ndarray]  # object indices per group (groups may overlap)
    items: np.ndarray  # filtered items with an expression (MAX: a finite limit)
    limits: np.ndarray  # N_s per item of ``items``
    maximum: bool  # bound MAX
    # the largest |g|·max_o v_o over the groups (1 where that is 0, or for a dynamic
    # dimension): the unit of the local-search term ``guide`` follows
    spread_scale: float = 1.0

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> GroupDiversitySpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        partition = resolve_partition(problem, f.text("partition"), f.at("partition"))
        dimension = resolve_dimension(problem, f.text("dimension"), f.at("dimension"),
                                      metrics=("AFTER",))
        # the limit's type is not read: N is a number of groups either way
        limit = Limit.parse(f.raw("limit"), f.at("limit"), scope)
        maximum = cls.enum(f, "bound", "MIN") == "MAX"
        mask = parse_filter(f.raw("filter"), f.at("filter"), scope)
        f.done(cls.arm)
        items = np.flatnonzero(mask)
        limits = limit.per_item[items]
        if not maximum and np.isinf(limits).any():
            raise InputError(f.at("limit"), "a MIN bound needs finite limits "
                             "(isDefaultLimitUnbounded makes them infinite; the wheel "
                             "reports an infinite value)")
        finite = ~np.isinf(limits)  # MAX with no limit: never broken, no expression
        members = list(partition.values())
        scale = 0.0
        if dimension not in problem.dynamic_dims:
            values = problem.object_dims[dimension]
            scale = max((len(m) * float(values[m].max()) for m in members if len(m)),
                        default=0.0)
        return cls(name, scope, dimension, members, items[finite], limits[finite], maximum,
                   scale if scale > 0 else 1.0)

    def reads_groups(self) -> bool:
        return True

    def reads_initial(self) -> bool:
        return False

    def container_roles(self, problem: Problem) -> list[Hashable]:
        return roles_by_item(self.scope, {int(i): float(n) for i, n in
                                          zip(self.items, self.limits)})

    def info_labels(self, problem: Problem) -> list[str]:
        return [f"groups in {self.scope.items[i]}" for i in self.items]

    # ---------- evaluation ----------
    batched: ClassVar[bool] = True  # (a MoveBatch has static dimensions only)

    def infos(self, ctx: EvalContext) -> np.ndarray:
        if isinstance(ctx, MoveBatch):  # read by the value and the guide: once a batch
            present = ctx.memo((self, "present"), lambda: self._present_in_batch(ctx))
        else:
            after = group_after(ctx, self.scope, self.dimension, self.members)
            present = step(after[:, self.items]).sum(axis=0)
        return present - self.limits if self.maximum else self.limits - present

    def _present_in_batch(self, batch: MoveBatch) -> np.ndarray:
        """Groups present per (candidate, item): the base's count, changed by the rows of
        the groups each candidate's moves touch."""
        base, candidate, group, rows = batch.touched_groups(self.scope, self.dimension,
                                                            self.members)
        present = np.repeat(step(base[:, self.items]).sum(axis=0)[None, :], batch.size, axis=0)
        change = step(rows[:, self.items]) - step(base[group][:, self.items])
        np.add.at(present, candidate, change)
        return present

    def evaluate(self, ctx: EvalContext) -> float | np.ndarray:
        value = positive(self.infos(ctx)).sum(axis=-1)
        return value if isinstance(ctx, MoveBatch) else float(value)

    def _spread(self, after: np.ndarray) -> np.ndarray:
        """Per (group row, filtered item): x − 0.1·x², x the group's utilization there over
        ``spread_scale`` (Rebalancer's local-search term)."""
        x = after[:, self.items] / self.spread_scale
        return x - 0.1 * x**2

    def guide(self, ctx: EvalContext) -> float | np.ndarray | None:
        """MAX: over the items above their limit, Rebalancer's local-search term
        ``P_s = Σ_g (x_g − 0.1·x_g²)``. A group counts in an item until its last object
        leaves it; this falls with each object that leaves an item with too many groups."""
        if not self.maximum or self.dimension in ctx.problem.dynamic_dims:
            return None
        if not isinstance(ctx, MoveBatch):
            after = group_after(ctx, self.scope, self.dimension, self.members)
            spread = self._spread(after).sum(axis=0)
            return float((step(self.infos(ctx)) * spread).sum())
        base = ctx.base
        spread = base.memo((self, "spread"), lambda: self._spread(
            base.group_after(self.scope, self.dimension, self.members)))
        _, candidate, group, rows = ctx.touched_groups(self.scope, self.dimension,
                                                       self.members)
        total = np.repeat(spread.sum(axis=0)[None, :], ctx.size, axis=0)
        np.add.at(total, candidate, self._spread(rows) - spread[group])
        return (step(self.infos(ctx)) * total).sum(axis=-1)

    def departures(self, ctx: EvalContext) -> list[tuple[np.ndarray, np.ndarray]]:
        """MAX: each group present in an item above its limit, its objects of positive
        size there out of the item: the group counts there until its last one leaves."""
        if not self.maximum or self.dimension in ctx.problem.dynamic_dims:
            return []
        over = np.zeros(len(self.scope.items) + 1, dtype=bool)  # the last: out of scope
        over[self.items[self.infos(ctx) > 0]] = True
        objects, groups = membership(self.members)
        items = self.scope.container_item[ctx.final[objects]]
        chosen = over[items] & (ctx.problem.object_dims[self.dimension][objects] > TOLERANCE)
        objects, groups, items = objects[chosen], groups[chosen], items[chosen]
        return leaving(self.scope, objects, groups * len(self.scope.items) + items, items)

    # ---------- compilation ----------
    def _forms(self, b: CpBuilder) -> list[Lin]:
        counts = [[] for _ in self.items]
        for members in self.members:
            if len(members) == 0:
                continue
            utils = group_after_forms(b, self.scope, self.dimension, members)
            objects = b.group_counts(self.scope, self.dimension, members)
            for k, item in enumerate(self.items):
                counts[k].append(presence(b, utils[item],
                                          None if objects is None else objects[item],
                                          rewarded=not self.maximum))
        forms = []
        held = set(self.scope.container_item[b.problem.initial].tolist())  # items in use
        for item, count, limit in zip(self.items, counts, self.limits):
            groups = lin_sum(count)
            n = to_fraction(float(limit))
            if groups.is_constant or n <= 0:
                forms.append(groups - n if self.maximum else n - groups)
                continue
            # the same value where the item holds an object, and where it holds none the
            # same positive part, but tied to the item's occupancy (shared with a count of
            # used items): an empty item breaks a MIN limit by all of n and a MAX one by
            # nothing, which an LP then reads
            occupied = b.occupancy(self.scope, int(item))
            if self.maximum:
                forms.append(groups - Lin.atom(b.new_atom(occupied, 0, 1, int(item in held)),
                                               n))
            else:
                forms.append(n - self._clipped(b, groups, math.ceil(n), occupied))
        return forms

    @staticmethod
    def _clipped(b: CpBuilder, groups: Lin, top: int, occupied: object) -> Lin:
        """min(groups, top) from above (the form it enters is minimized), and at most
        top times the occupancy: a MIN limit of n broken by n - groups while groups is
        below ceil(n), and not at all from there."""
        form = b.integerize(groups)
        clipped = b.cp.new_int_var(0, top, "groups_clipped")
        b.cp.add(clipped * form.factor <= form.expr)
        b.cp.add(clipped <= top * occupied)
        try:
            initial = min(int(b.initial_value(groups)), top)
        except ValueError:
            initial = None
        return Lin.atom(b.new_atom(clipped, 0, top, initial, bounding=True))

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        return [Info(form) for form in self._forms(b)]

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        return GoalForm(lin_sum(b.positive_part(form, what=self.name)
                                for form in self._forms(b)))
