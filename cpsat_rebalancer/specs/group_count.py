"""GroupCountSpec: how much of each partition group a scope item may hold
(docs/semantics.md#groupcount).

Rebalancer builds one of two shapes per (definition, bound) part, and the shape matters for
constraint policies (what is one "info"): the *compact* one (MAX, or MIN without
zeroAllowed; limits relative to the group size; not STAYED) has one expression per item,
the sum over groups of their excess; every other part has one per (item, group).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..context import EvalContext, MoveBatch, positive
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Info
from ..cpsat.linear import Lin, lin_sum, to_fraction
from ..cpsat.pwl import exact_table
from ..errors import InputError
from ..fields import Fields
from ..primitives import TOLERANCE
from ..problem import Problem, Scope
from .common import (
    GoalForm,
    GroupLimit,
    Spec,
    parse_filter,
    register,
    resolve_dimension,
    resolve_partition,
    resolve_scope,
    spec_name,
)

RECTANGLE_MARGIN = Fraction(1, 10**5)  # Rebalancer's kRectangleTolerance (MIN + zeroAllowed)
# the (filtered item, group) cells up to which a part with one expression per cell prices a
# batch (its expressions are copied for every candidate of a batch)
BATCH_CELLS = 20_000


def _metric(after: np.ndarray, initial: np.ndarray, stayed: np.ndarray, metric: str
            ) -> np.ndarray:
    """Group utilizations (rows of groups, or of touched pairs) under ``metric``."""
    return {"AFTER": after, "STAYED": stayed, "DURING": after + initial - stayed}[metric]


def _square(x: float) -> float:
    """The squares penalty of a (normalized) deviation: only an excess counts."""
    return max(0.0, x) ** 2


def _times(limits: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Limits relative to each group's weight; an unbounded limit stays unbounded."""
    return np.where(np.isinf(limits), limits, limits * weights)


@dataclass(frozen=True)
class Part:
    """One (definition, bound) pair of the spec; DURING_AND_AFTER and EXACT have two."""

    metric: str  # AFTER, DURING or STAYED
    bound: str  # MAX, MIN or MULTIPLE
    compact: bool


@register
@dataclass(frozen=True, eq=False)
class GroupCountSpec(Spec):
    arm = "groupCountSpec"
    enum_fields = {
        "definition": "GroupCountSpecDefinition",
        "bound": "GroupCountSpecBound",
        "limitRelativeTo": "GroupCountSpecLimitRelativeTo",
    }

    name: str
    scope: Scope
    dimension: str
    groups: list[str]
    members: list[np.ndarray]  # object indices per group
    sizes: np.ndarray  # objects per group (the squares normalization)
    items: np.ndarray  # filtered items
    parts: list[Part]
    raw_constant: np.ndarray  # (item position, group): the resolved limit L as given
    raw_compact: np.ndarray  # (item position, group): the compact form's limit as given
    weights: np.ndarray  # Wt_g: objects per group (count dimension) or its total value
    by_group: bool  # RELATIVE to GROUP_SIZE: the per-pair limit is L x Wt_g
    relative: bool  # RELATIVE: the compact limit is L x Wt_g
    scope_relative: bool  # RELATIVE to SCOPE_ITEM_UTIL: utils and limits divided by capacity
    squares: bool
    zero_allowed: bool
    minimum: float  # minimumLimit (MIN + zeroAllowed)
    definition: str
    bound: str

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *, as_goal: bool) -> GroupCountSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        partition = resolve_partition(problem, f.text("partitionName"), f.at("partitionName"))
        dimension = resolve_dimension(problem, f.text("dimension"), f.at("dimension"),
                                      default=problem.count_dimension)
        definition = cls.enum(f, "definition", "AFTER")
        bound = cls.enum(f, "bound", "MAX")
        limit = GroupLimit.parse(f.raw("limit"), f.at("limit"), scope, partition, "ABSOLUTE")
        squares = f.flag("squares")
        zero_allowed = f.flag("zeroAllowed")
        relative_to = cls.enum(f, "limitRelativeTo", "GROUP_SIZE")
        minimum = f.number("minimumLimit", 0.0)
        items = np.flatnonzero(parse_filter(f.raw("filter"), f.at("filter"), scope))
        if f.raw("routingConfigForLimit") is not None:
            raise InputError(f.at("routingConfigForLimit"), "routing configs are not supported")
        f.done(cls.arm)
        if relative_to == "SCOPE_ITEM_UTIL" and bound == "MIN" and zero_allowed:
            raise InputError(f.at("zeroAllowed"), "Rebalancer rejects zeroAllowed with a MIN "
                             "bound and limits relative to SCOPE_ITEM_UTIL")
        if relative_to == "GROUP_TO_SCOPE_ITEM_ROUTING_TRAFFIC":
            raise InputError(f.at("limitRelativeTo"), "routing-traffic limits are not supported",
                             relative_to)

        metrics = ["DURING", "AFTER"] if definition == "DURING_AND_AFTER" else [definition]
        bounds = ["MIN", "MAX"] if bound == "EXACT" else [bound]
        parts = [Part(m, b, (b == "MAX" or (b == "MIN" and not zero_allowed))
                      and relative_to == "GROUP_SIZE" and m != "STAYED")
                 for m in metrics for b in bounds]
        if squares and any(not p.compact and p.bound != "MAX" for p in parts):
            raise InputError(f.at("squares"), "squares with a MIN or MULTIPLE bound needs the "
                             "compact form (no zeroAllowed, not STAYED, limits relative to the "
                             "group size); Rebalancer does not implement it")

        groups = list(partition)
        members = [partition[g] for g in groups]
        sizes = np.asarray([len(m) for m in members], dtype=float)
        if squares and np.any(sizes == 0):
            raise InputError(f.at("squares"), "squares divide by the group size, and group "
                             f"'{groups[int(np.argmin(sizes))]}' is empty")
        values = problem.object_dims[dimension]
        weight = np.asarray([values[m].sum() for m in members], dtype=float)
        relative = limit.kind == "RELATIVE"
        by_group = relative and relative_to == "GROUP_SIZE"
        scope_relative = relative and relative_to == "SCOPE_ITEM_UTIL"
        raw_constant = np.asarray([[limit.resolve(int(i), g) for g in groups] for i in items],
                                  dtype=float).reshape(len(items), len(groups))
        raw_compact = np.asarray([[limit.compact(int(i), g) for g in groups] for i in items],
                                 dtype=float).reshape(len(items), len(groups))
        constant = _times(raw_constant, weight) if by_group else raw_constant
        if any(p.bound != "MAX" for p in parts) and np.isinf(constant).any():
            raise InputError(f.at("limit"), "a MIN, EXACT or MULTIPLE bound needs finite limits "
                             "(isDefaultLimitUnbounded makes them infinite)")
        if bound == "MULTIPLE":
            if relative_to != "GROUP_SIZE":
                raise InputError(f.at("limitRelativeTo"), "a MULTIPLE bound needs constant limits "
                                 "(GROUP_SIZE)", relative_to)
            if np.any(constant <= 0):
                raise InputError(f.at("limit"), "a MULTIPLE bound needs positive limits",
                                 float(constant.min()))
        if scope_relative:
            caps = scope.capacity(dimension)[items]
            if np.any(caps == 0):
                raise InputError(f.at("limitRelativeTo"), "limits relative to the item "
                                 "utilization divide by the capacity, which is 0 for item "
                                 f"'{scope.items[items[int(np.argmin(caps))]]}'")
        return cls(name, scope, dimension, groups, members, sizes,
                   items, parts, raw_constant,
                   raw_compact, weight, by_group, relative, scope_relative, squares,
                   zero_allowed, minimum, definition, bound)

    @property
    def limit_constant(self) -> np.ndarray:
        """Per (item position, group): the limit constant of the per-pair form."""
        return _times(self.raw_constant, self.weights) if self.by_group else self.raw_constant

    @property
    def limit_compact(self) -> np.ndarray:
        """Per (item position, group): the limit of the compact form."""
        return _times(self.raw_compact, self.weights) if self.relative else self.raw_compact

    def reads_groups(self) -> bool:
        return True

    def prefers_staying(self) -> bool:
        """AFTER ignores staying; MAX on DURING penalizes moving out (DURING grows as STAYED
        shrinks) and MIN on STAYED rewards staying; anything else may gain from a swap."""
        if self.definition == "AFTER":
            return True
        if self.scope_relative or self.bound in ("MULTIPLE", "EXACT"):
            return False
        if self.bound == "MAX":
            return self.definition in ("DURING", "DURING_AND_AFTER")
        return self.definition == "STAYED" and not self.zero_allowed

    # ---------- evaluation ----------
    @property
    def batched(self) -> bool:  # type: ignore[override]
        """A compact part prices a batch from the touched groups; a part with one
        expression per (item, group) copies them per candidate, so only where they are few.
        (A MoveBatch has static dimensions only.)"""
        return all(part.compact for part in self.parts) or \
            len(self.items) * len(self.groups) <= BATCH_CELLS

    def _group_util(self, ctx: EvalContext, metric: str) -> np.ndarray:
        """(filtered item, group) utilization of each group under ``metric``."""
        return _metric(*ctx.group_utils(self.scope, self.dimension, self.members),
                       metric)[:, self.items].T

    def _compact_cells(self, util: np.ndarray, part: Part,
                       groups: np.ndarray | None = None) -> np.ndarray:
        """The compact part's terms per (…, filtered item, group) of ``util``: its
        per-item expression is their sum (``groups``: util's columns are these groups)."""
        limit = self.limit_compact if groups is None else self.limit_compact[:, groups]
        sizes = self.sizes if groups is None else self.sizes[groups]
        finite = np.isfinite(limit)  # MAX with an unbounded limit: never in excess
        d = np.where(finite, util - np.where(finite, limit, 0), 0.0)
        d = np.maximum(d if part.bound == "MAX" else -d, 0.0)
        if self.squares:
            d = (d / sizes) ** 2
        return np.where(finite, d, 0.0)

    def _part_values(self, ctx: EvalContext, part: Part) -> np.ndarray:
        """The part's expressions: one per item (compact), else one per (item, group) with a
        finite limit, items outer (per candidate, expressions last, under a MoveBatch)."""
        if isinstance(ctx, MoveBatch):
            return self._part_in_batch(ctx, part)
        totals = (ctx.util(self.scope, self.dimension, part.metric)[self.items]
                  if self.scope_relative and not part.compact else None)
        return self._part_of(self._group_util(ctx, part.metric), part, totals)

    def _part_of(self, util: np.ndarray, part: Part, totals: np.ndarray | None
                 ) -> np.ndarray:
        """The part's expressions from the (…, filtered item, group) utilizations ``util``
        (``totals``: the items' own utilizations, for limits relative to them)."""
        if part.compact:
            return self._compact_cells(util, part).sum(axis=-1)
        limit = self.limit_constant
        finite = np.isfinite(limit)
        limit = np.where(finite, limit, 1.0)
        u, level = util, limit
        if self.scope_relative:
            caps = self.scope.capacity(self.dimension)[self.items][:, None]
            u, level = util / caps, limit * totals[..., None] / caps
        if part.bound == "MULTIPLE":
            t = u / limit
            nearest = np.round(t)
            up = np.where(np.abs(t - nearest) <= TOLERANCE, nearest, np.ceil(t))  # tolerant ceil
            e = (up - t) * limit
        elif part.bound == "MAX":
            e = np.maximum((u - level) / self.sizes, 0.0) ** 2 if self.squares else u - level
        elif self.zero_allowed:  # an indicator of 0 < u < L (with margins), not a deficit
            low, high = self.minimum + float(RECTANGLE_MARGIN), limit - float(RECTANGLE_MARGIN)
            e = ((low <= u) & (u <= high)).astype(float)
        else:
            e = level - u
        return e[..., finite]

    def _part_in_batch(self, batch: MoveBatch, part: Part) -> np.ndarray:
        """The part's expressions per candidate: the base's, changed in the columns of the
        groups each candidate's moves touch."""
        base = batch.base
        util = base.memo((self, part.metric), lambda: self._group_util(base, part.metric))
        candidate, touched, rows = batch.touched_group_utils(self.scope, self.dimension,
                                                             self.members)
        new = _metric(*rows, part.metric)[:, self.items]  # (touched pair, filtered item)
        if part.compact:
            cells = base.memo((self, part), lambda: self._compact_cells(util, part))
            result = np.repeat(cells.sum(axis=1)[None, :], batch.size, axis=0)
            change = self._compact_cells(new.T, part, touched) - cells[:, touched]
            np.add.at(result, candidate, change.T)
            return result
        utils = np.repeat(util[None], batch.size, axis=0)
        utils[candidate, :, touched] = new
        totals = (batch.util(self.scope, self.dimension, part.metric)[..., self.items]
                  if self.scope_relative else None)
        return self._part_of(utils, part, totals)

    def infos(self, ctx: EvalContext) -> np.ndarray:
        return np.concatenate([self._part_values(ctx, part) for part in self.parts], axis=-1)

    def evaluate(self, ctx: EvalContext) -> float | np.ndarray:
        value = positive(self.infos(ctx)).sum(axis=-1)
        return value if isinstance(ctx, MoveBatch) else float(value)

    def info_labels(self, problem: Problem) -> list[str]:
        constant = self.limit_constant
        labels = []
        for part in self.parts:
            for p in range(len(self.items)):
                item = self.scope.items[self.items[p]]
                if part.compact:
                    labels.append(f"{part.metric} {part.bound} on {item}")
                    continue
                labels += [f"{part.metric} {part.bound} {group} on {item}"
                           for g, group in enumerate(self.groups)
                           if not math.isinf(constant[p, g])]
        return labels

    # ---------- compilation ----------
    def _exact_limits(self, b: CpBuilder, raw: np.ndarray,
                      relative: bool) -> list[list[Fraction | None]]:
        """Limits as exact fractions of the data (None: unbounded); relative ones times the
        group's weight in the model's integer units (0.1 x 3 is 3/10, not 0.30000000000000004)."""
        scale = b.scale(self.dimension)
        weights = [Fraction(int(scale.values[m].sum()), scale.factor) for m in self.members]
        return [[None if math.isinf(raw[p, g]) else
                 to_fraction(float(raw[p, g])) * (weights[g] if relative else 1)
                 for g in range(len(self.groups))] for p in range(len(self.items))]

    def _square_form(self, b: CpBuilder, x: Lin) -> Lin:
        """max(0, x)²: tabulated at every value of x, or an exact product for wide ranges."""
        if b.bounds(x)[1] <= 0:
            return Lin()
        if x.is_constant:
            return Lin(const=max(Fraction(0), x.const) ** 2)
        atom = b.as_atom(x)
        table = exact_table(b, atom, _square, what=self.name)
        if table is not None:
            return table
        # a wide range: z = d·d with d >= K·x, d >= 0 (exact under minimization, and at the
        # initial assignment, so a DEFAULT rule "no worse than initially" stays exact)
        form = b.integerize(atom)
        # x off by at most e puts its square off by at most 2·|x|·e + e²
        top = float(max(abs(bound) for bound in b.bounds(atom)))
        b.note_error(self.name, 2 * top * form.error + form.error**2)
        d = b.cp.new_int_var(0, form.hi, "excess")
        b.cp.add(d >= form.expr)
        z = b.cp.new_int_var(0, form.hi * form.hi, "square")
        b.cp.add_multiplication_equality(z, [d, d])
        start = max(0, round(b.initial_value(atom) * form.factor))
        return Lin.atom(b.new_atom(z, 0, form.hi * form.hi, start * start, bounding=True),
                        1 / form.factor**2)

    def _rectangle(self, b: CpBuilder, u: Lin, low: Fraction, high: Fraction) -> Lin:
        """1 when low <= u <= high, else 0, exactly (u counts in units of the dimension)."""
        unit = Fraction(1, b.scale(self.dimension).factor)
        first, last = math.ceil(low / unit), math.floor(high / unit)  # in units
        if first > last:
            return Lin()
        if u.is_constant:
            return Lin(const=int(first <= u.const / unit <= last))
        at_least = b.gate(u - (first - 1) * unit)
        at_most = b.gate((last + 1) * unit - u)
        inside = b.cp.new_bool_var("rectangle")
        b.cp.add(inside <= at_least)
        b.cp.add(inside <= at_most)
        b.cp.add(inside >= at_least + at_most - 1)
        start = b.initial_value(u) / unit
        return Lin.atom(b.new_atom(inside, 0, 1, int(first <= start <= last)))

    def _multiple(self, b: CpBuilder, u: Lin, limit: Fraction) -> Lin:
        """(⌈u/L⌉ - u/L)·L = L·k - u with k the integer that puts it in [0, L)."""
        if u.is_constant:
            return Lin(const=math.ceil(u.const / limit) * limit - u.const)
        top = math.ceil(b.bounds(u)[1] / limit)
        k = b.cp.new_int_var(0, top, "multiple")
        start = math.ceil(b.initial_value(u) / limit)
        gap = Lin.atom(b.new_atom(k, 0, top, start), limit) - u
        form = b.integerize(gap)
        b.note_error(self.name, form.error)
        b.cp.add(form.expr >= 0)
        b.cp.add(form.expr <= math.ceil(form.factor * limit) - 1)
        return gap

    def _info_forms(self, b: CpBuilder) -> list[Info]:
        compact = self._exact_limits(b, self.raw_compact, self.relative)
        constant = self._exact_limits(b, self.raw_constant, self.by_group)
        caps = self.scope.capacity(self.dimension)
        margin = RECTANGLE_MARGIN
        forms = []
        for part in self.parts:
            utils = [b.group_util(self.scope, self.dimension, part.metric, m)
                     for m in self.members]
            totals = b.util(self.scope, self.dimension, part.metric) if (
                self.scope_relative and not part.compact) else None
            for p, item in enumerate(self.items):
                if part.compact:
                    terms = []
                    for g, limit in enumerate(compact[p]):
                        if limit is None:
                            continue
                        u = utils[g][item]
                        d = u - limit if part.bound == "MAX" else limit - u
                        terms.append(self._square_form(b, d / int(self.sizes[g])) if self.squares
                                     else b.positive_part(d, what=self.name))
                    forms.append(Info(lin_sum(terms)))
                    continue
                for g, limit in enumerate(constant[p]):
                    if limit is None:
                        continue
                    u, level = utils[g][item], Lin(const=limit)
                    cap = to_fraction(float(caps[item]))
                    if self.scope_relative:
                        u, level = u / cap, totals[item] * (limit / cap)
                    if part.bound == "MULTIPLE":
                        forms.append(Info(self._multiple(b, u, limit)))
                    elif part.bound == "MAX":
                        forms.append(Info(self._square_form(b, (u - level) / int(self.sizes[g]))
                                          if self.squares else u - level))
                    elif self.zero_allowed:  # thresholds on the absolute utilization
                        scale = cap if self.scope_relative else 1
                        forms.append(Info(self._rectangle(
                            b, utils[g][item], (to_fraction(self.minimum) + margin) * scale,
                            (limit - margin) * scale)))
                    else:
                        forms.append(Info(level - u))
        return forms

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        return self._info_forms(b)

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        return GoalForm(lin_sum(b.positive_part(info.expr, what=self.name)
                                for info in self._info_forms(b)))
