"""DisasterRecoveryCapacitySpec: each scope item's primary load plus the worst failover load
it takes when a disaster group fails, against its capacity
(docs/semantics.md#disasterrecoverycapacity). Goal or constraint.

For item S and disaster group D (S not in D): a secondary R_k of primary P lands on S when
P and R_1..R_{k-1} are all in D and R_k is in S; S then takes R_k's value. One expression
per item: (primary(S) + max_D excess(S, D) − cap_S) / average capacity (1 when the
capacities sum to 0)."""

from __future__ import annotations

import functools
from collections.abc import Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from ..context import EvalContext, MoveBatch, positive
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import INT_LIMIT, Info
from ..cpsat.linear import Lin, lin_sum, to_fraction
from ..errors import InputError
from ..fields import Fields, check_list, check_mapping, check_names
from ..problem import Problem, Scope
from .common import (
    GoalForm,
    Spec,
    register,
    resolve_dimension,
    resolve_items,
    resolve_scope,
    spec_name,
)


def _inside(member: np.ndarray, item: np.ndarray) -> np.ndarray:
    """Whether each item of ``item`` (OUT_OF_SCOPE: none) is a ``member``."""
    return (item >= 0) & member[np.maximum(item, 0)]


@register
@dataclass(frozen=True, eq=False)
class DisasterRecoveryCapacitySpec(Spec):
    arm = "disasterRecoveryCapacitySpec"

    name: str
    scope: Scope
    dimension: str
    disaster_groups: list[frozenset[int]]  # items failing together (every item in one)
    primaries: list[tuple[int, list[int]]]  # (primary, its secondaries by priority)

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> DisasterRecoveryCapacitySpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        dimension = resolve_dimension(problem, f.text("dimension"), f.at("dimension"))
        groups_data = check_list(f.raw("sharedDisasterGroups") or [],
                                 f.at("sharedDisasterGroups"))
        pairs = check_mapping(f.raw("primaryToSetOfSecondaryObjects") or {},
                              f.at("primaryToSetOfSecondaryObjects"), "objects")
        f.done(cls.arm)
        groups: list[frozenset[int]] = []
        for k, group in enumerate(groups_data):
            where = f"{f.at('sharedDisasterGroups')}[{k}]"
            groups.append(frozenset(resolve_items(scope, check_names(group, where), where)))
        covered = frozenset().union(*groups)
        groups += [frozenset({i}) for i in range(len(scope.items)) if i not in covered]
        primaries = []
        for primary, secondaries in pairs.items():
            where = f"{f.at('primaryToSetOfSecondaryObjects')}.{primary}"
            if primary not in problem.object_index:
                raise InputError(where, "unknown object", primary)
            names = check_names(secondaries, where)
            indices = []
            for k, secondary in enumerate(names):
                if secondary not in problem.object_index:
                    raise InputError(f"{where}[{k}]", "unknown object", secondary)
                indices.append(problem.object_index[secondary])
            if len(set(indices)) != len(indices):
                raise InputError(where, "a secondary object is listed twice", names)
            primaries.append((problem.object_index[primary], indices))
        return cls(name, scope, dimension, groups, primaries)

    def object_roles(self) -> dict[int, Hashable]:
        roles: dict[int, Hashable] = {}
        for primary, secondaries in self.primaries:
            roles[primary] = "disaster recovery"
            roles.update(dict.fromkeys(secondaries, "disaster recovery"))
        return roles

    def reads_initial(self) -> bool:
        return False

    def info_labels(self, problem: Problem) -> list[str]:
        return list(self.scope.items)

    @functools.cached_property
    def _norm(self) -> Fraction:
        """n / Σ capacity, exactly (1 with no capacity): a constant, read by every evaluation."""
        caps = [to_fraction(float(c)) for c in self.scope.capacity(self.dimension)]
        total = sum(caps, Fraction(0))
        return Fraction(1) if total == 0 else Fraction(len(caps)) / total

    # ---------- evaluation ----------
    batched: ClassVar[bool] = True  # (a MoveBatch has static dimensions only)

    @functools.cached_property
    def _chains(self) -> tuple[np.ndarray, np.ndarray]:
        """The primaries, and per primary its secondaries by priority (padded with -1)."""
        longest = max((len(s) for _, s in self.primaries), default=0)
        secondaries = np.full((len(self.primaries), longest), -1, dtype=np.int64)
        for k, (_, chain) in enumerate(self.primaries):
            secondaries[k, :len(chain)] = chain
        return np.asarray([p for p, _ in self.primaries], dtype=np.int64), secondaries

    @functools.cached_property
    def _membership(self) -> np.ndarray:
        """Per disaster group, which items of the scope it holds."""
        member = np.zeros((len(self.disaster_groups), len(self.scope.items)), dtype=bool)
        for k, group in enumerate(self.disaster_groups):
            member[k, list(group)] = True
        return member

    def infos(self, ctx: EvalContext) -> np.ndarray:
        """Per item (per candidate, items last, under a MoveBatch): its primary load plus
        its worst failover load, over its capacity, normalized."""
        values = ctx.problem.object_dims[self.dimension]
        primaries, secondaries = self._chains
        listed = np.concatenate([primaries, np.maximum(secondaries, 0).ravel()])
        places = ctx.final_at(listed) if isinstance(ctx, MoveBatch) else ctx.final[listed][None]
        item = self.scope.container_item[places]  # (candidate, listed object)
        k, n = len(item), len(self.scope.items)
        rows = np.arange(k)[:, None]
        item_p = item[:, :len(primaries)]
        item_r = item[:, len(primaries):].reshape(k, *secondaries.shape)

        def per_item(where: np.ndarray, at: np.ndarray, weights: np.ndarray) -> np.ndarray:
            flat = (rows * n + np.maximum(at, 0))[where]
            return np.bincount(flat, np.broadcast_to(weights, at.shape)[where],
                               minlength=k * n).reshape(k, n)

        primary = per_item(item_p >= 0, item_p, values[primaries])
        worst = np.zeros((k, n))
        for member in self._membership:
            failing = _inside(member, item_p)  # a chain goes on while its objects are in it
            excess = np.zeros((k, n))
            for j in range(secondaries.shape[1]):
                listed_here = secondaries[:, j] >= 0
                at = item_r[:, :, j]
                lands = failing & listed_here & (at >= 0) & ~_inside(member, at)
                excess += per_item(lands, at, values[np.maximum(secondaries[:, j], 0)])
                failing &= listed_here & _inside(member, at)
            worst = np.maximum(worst, excess)
        caps = self.scope.capacity(self.dimension)
        infos = float(self._norm) * (primary + worst - caps)
        return infos if isinstance(ctx, MoveBatch) else infos[0]

    def evaluate(self, ctx: EvalContext) -> float | np.ndarray:
        value = positive(self.infos(ctx)).sum(axis=-1)
        return value if isinstance(ctx, MoveBatch) else float(value)

    # ---------- compilation ----------
    @staticmethod
    def _all(b: CpBuilder, forms: list[Lin]) -> Lin:
        """1 when every 0/1 form is 1 (exactly), with its value at the start."""
        live = [x for x in forms if not x.is_constant]
        if any(x.is_constant and x.const == 0 for x in forms):
            return Lin()
        if len(live) <= 1:
            return live[0] if live else Lin(const=1)
        both = b.cp.new_bool_var("all")
        exprs = [b.integerize(x).expr for x in live]
        for expr in exprs:
            b.cp.add(both <= expr)
        b.cp.add(both >= sum(exprs) - (len(exprs) - 1))
        try:
            start = int(min(b.initial_value(x) for x in live))
        except ValueError:
            start = None
        return Lin.atom(b.new_atom(both, 0, 1, start))

    def _exact_max(self, b: CpBuilder, forms: list[Lin]) -> Lin:
        """A form equal to the largest of ``forms`` (each >= 0), with its value at the start.
        Its variables take their share of the room for domains: sizes with every decimal
        make the forms' common denominator near 2^52, and a variable per item and group at
        that scale can pass 2^63 in all; where the share rounds, the error (far below the
        rules' tolerance at such magnitudes) is stated."""
        live = [x for x in forms if not x.is_constant or x.const != 0]
        if len(live) <= 1:
            return live[0] if live else Lin()
        ints = b.integerize_all(live, b.variable_limit(len(live) + 1, INT_LIMIT))
        b.note_error(self.name, max(f.error for f in ints))
        lo, hi = max(f.lo for f in ints), max(f.hi for f in ints)
        t = b.cp.new_int_var(lo, hi, "worst")
        b.cp.add_max_equality(t, [b.variable(f.expr, f.lo, f.hi, "excess") for f in ints])
        try:
            start = max(round(b.initial_value(x) * ints[0].factor) for x in live)
        except ValueError:
            start = None
        return Lin.atom(b.new_atom(t, lo, hi, start), 1 / ints[0].factor)

    def _info_forms(self, b: CpBuilder) -> list[Info]:
        values = b.problem.object_dims[self.dimension]
        n = len(self.scope.items)
        scope = self.scope

        def where(obj: int, items: frozenset[int] | set[int]) -> Lin:
            return lin_sum(b.object_in_item(obj, scope, i) for i in sorted(items))

        primary = [lin_sum(b.object_in_item(p, scope, i) * to_fraction(float(values[p]))
                           for p, _ in self.primaries) for i in range(n)]
        excess: list[list[Lin]] = [[] for _ in range(n)]
        for group in self.disaster_groups:
            per_item = [Lin() for _ in range(n)]
            for p, secondaries in self.primaries:
                failing = [where(p, group)]  # the conditions met so far
                for r in secondaries:
                    value = to_fraction(float(values[r]))
                    for i in range(n):
                        if i not in group and value != 0:
                            lands = self._all(b, [*failing, b.object_in_item(r, scope, i)])
                            per_item[i] = per_item[i] + lands * value
                    failing = [self._all(b, [*failing, where(r, group)])]
            for i in range(n):
                excess[i].append(per_item[i])
        caps = scope.capacity(self.dimension)
        norm = self._norm
        infos = []
        for i in range(n):
            with b.errors_scaled(float(norm)):  # (stated in the units the norm divides)
                worst = self._exact_max(b, excess[i])
            infos.append(Info((primary[i] + worst - to_fraction(float(caps[i]))) * norm))
        return infos

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        return self._info_forms(b)

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        return GoalForm(lin_sum(b.positive_part(info.expr, what=self.name)
                                for info in self._info_forms(b)))
