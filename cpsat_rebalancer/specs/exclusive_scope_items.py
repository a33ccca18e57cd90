"""ExclusiveScopeItemsSpec: scope items that may not be in use at the same time
(docs/semantics.md#exclusivescopeitems).

An item is in use when its AFTER utilization of the dimension is above 1e-10. A conflict
entry (an item and the items it conflicts with) is broken when the item is in use and so is
the sum of the others. As a constraint: one expression, 1 when any entry is broken (else 0);
with a partition, one such expression per group, counting only the group's objects. As a
goal: MINIMIZE_INVALIDATED_SCOPE_ITEMS_COUNT counts the items that have a conflicting item
in use (conflicts made symmetric); AGGRESSIVE_PACKING is ``−Σ_i w_i·P_i²`` with
``P_i = w_i·used_i + Σ_j overlap_ij·used_j``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..context import EvalContext, MoveBatch
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Info
from ..cpsat.linear import Lin, lin_sum, to_fraction
from ..errors import InputError
from ..fields import Fields, check_list, check_number
from ..primitives import TOLERANCE
from ..problem import Problem, Scope
from .common import (
    GoalForm,
    Spec,
    register,
    resolve_dimension,
    resolve_partition,
    resolve_scope,
    spec_name,
)
from .group_diversity import group_after, group_after_forms, presence


def _segments(heads: list[int], tails: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lists of items as arrays for ``np.add.reduceat``: the head of each, every list
    flattened, and where each list starts in it (every list non-empty)."""
    lengths = [len(t) for t in tails]
    flat = np.asarray([i for t in tails for i in t], dtype=np.int64)
    starts = np.cumsum([0, *lengths[:-1]]).astype(np.int64)
    return np.asarray(heads, dtype=np.int64), flat, starts


@dataclass(frozen=True)
class Conflict:
    """One entry of conflictInfoList: an item and the items it conflicts with."""

    item: int
    others: tuple[int, ...]
    overlaps: tuple[float, ...]


def _parse_conflicts(f: Fields, scope: Scope) -> list[Conflict]:
    key = "conflictInfoList"
    path = f.at(key)
    entries = check_list(f.raw(key) if f.raw(key) is not None else [], path)

    def item_of(name: Any, where: str) -> int:
        index = scope.item_index.get(name) if isinstance(name, str) else None
        if index is None:
            raise InputError(where, f"unknown item of scope '{scope.name}'", name)
        return index

    conflicts = []
    for k, entry in enumerate(entries):
        e = Fields(entry, f"{path}[{k}]")
        main = item_of(e.text("scopeItem"), e.at("scopeItem"))
        if e.raw("conflictingScopeItems"):
            raise InputError(e.at("conflictingScopeItems"), "deprecated, and ignored by "
                             "Rebalancer 1.0.4: use conflictingScopeItemsWithOverlap")
        e.raw("conflictingScopeItems")
        inner_path = e.at("conflictingScopeItemsWithOverlap")
        inner = e.raw("conflictingScopeItemsWithOverlap")
        others, overlaps = [], []
        for j, info in enumerate(check_list(inner if inner is not None else [], inner_path)):
            c = Fields(info, f"{inner_path}[{j}]")
            others.append(item_of(c.text("conflictingScopeItem"),
                                  c.at("conflictingScopeItem")))
            overlaps.append(c.number("overlap", 1.0))
            c.done("ConflictingScopeItemInfo")
        e.done("ScopeItemConflictInfo")
        conflicts.append(Conflict(main, tuple(others), tuple(overlaps)))
    return conflicts


@register
@dataclass(frozen=True, eq=False)
class ExclusiveScopeItemsSpec(Spec):
    arm = "exclusiveScopeItemsSpec"
    enum_fields = {"formula": "ExclusiveScopeItemsFormula"}

    name: str
    scope: Scope
    dimension: str
    conflicts: list[Conflict]  # entries with at least one conflicting item
    groups: list[str]  # the partition's groups (none without a partition)
    members: list[np.ndarray] | None  # per group, may overlap (None: no partition)
    formula: str
    neighbours: dict[int, list[int]]  # symmetric conflicts, per item in any of them
    overlaps: dict[int, dict[int, float]]  # symmetric overlaps (the last given wins)
    weights: np.ndarray  # per item (AGGRESSIVE_PACKING), 1 unless given

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *,
                  as_goal: bool) -> ExclusiveScopeItemsSpec:
        f = Fields(data, path)
        name = spec_name(f, cls.arm)
        scope = resolve_scope(problem, f.text("scope"), f.at("scope"))
        partition_name = f.raw("partitionName")
        members, groups = None, []
        if partition_name is not None:
            partition = resolve_partition(problem, f.text("partitionName"),
                                          f.at("partitionName"))
            groups, members = list(partition), list(partition.values())
        dimension = resolve_dimension(problem, f.text("dimension"), f.at("dimension"),
                                      metrics=("AFTER",))
        formula = cls.enum(f, "formula", "MINIMIZE_INVALIDATED_SCOPE_ITEMS_COUNT")
        if f.raw("pairs"):
            raise InputError(f.at("pairs"), "deprecated, and refused by Rebalancer 1.0.4: use "
                             "conflictInfoList")
        f.raw("pairs")
        conflicts = _parse_conflicts(f, scope)
        weights = np.ones(len(scope.items))
        for item, value in f.mapping("scopeItemWeights").items():
            where = f"{f.at('scopeItemWeights')}.{item}"
            if item not in scope.item_index:
                raise InputError(where, f"weight for an unknown item of scope '{scope.name}'",
                                 item)
            weights[scope.item_index[item]] = check_number(value, where)
        f.done(cls.arm)
        neighbours: dict[int, list[int]] = {}
        overlaps: dict[int, dict[int, float]] = {}
        for conflict in conflicts:
            for other, overlap in zip(conflict.others, conflict.overlaps):
                for a, b in ((conflict.item, other), (other, conflict.item)):
                    if b not in neighbours.setdefault(a, []):
                        neighbours[a].append(b)
                    overlaps.setdefault(a, {})[b] = overlap
        return cls(name, scope, dimension, [c for c in conflicts if c.others], groups, members,
                   formula, neighbours, overlaps, weights)

    def reads_groups(self) -> bool:
        return self.members is not None

    @property
    def nonnegative(self) -> bool:  # type: ignore[override]
        """AGGRESSIVE_PACKING rewards packing: its value is at most 0."""
        return self.formula != "AGGRESSIVE_PACKING"

    def lowest(self) -> float:
        """AGGRESSIVE_PACKING: each item's ``-w_i·P_i²`` at the largest ``P_i²`` its terms
        reach (every item in use, where weights and overlaps are positive)."""
        if self.formula != "AGGRESSIVE_PACKING":
            return 0.0
        total = 0.0
        for item, overlaps in self.overlaps.items():
            own = float(self.weights[item])
            terms = [own, *overlaps.values()]
            reach = max(sum(max(t, 0.0) for t in terms), -sum(min(t, 0.0) for t in terms))
            total -= max(own, 0.0) * reach**2
        return total

    def reads_initial(self) -> bool:
        return False

    def info_labels(self, problem: Problem) -> list[str]:
        if self.members is None:
            return ["conflicting items in use"]
        return [f"group {group} on conflicting items" for group in self.groups]

    # ---------- evaluation ----------
    # on utilizations with leading candidate axes (items last), so a batch prices K at once
    batched: ClassVar[bool] = True  # (a MoveBatch has static dimensions only)

    @functools.cached_property
    def _entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The conflict entries as arrays: each entry's item, and its conflicting items
        flattened with each entry's start among them."""
        return _segments([c.item for c in self.conflicts], [c.others for c in self.conflicts])

    @functools.cached_property
    def _neighbourhoods(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per item in a conflict: its symmetric neighbours, flattened, with starts."""
        return _segments(list(self.neighbours), list(self.neighbours.values()))

    @functools.cached_property
    def _packing(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """AGGRESSIVE_PACKING's terms: per item with overlaps, its neighbours flattened
        (with starts) and each neighbour's overlap."""
        items, flat, starts = _segments(list(self.overlaps),
                                        [list(o) for o in self.overlaps.values()])
        overlaps = np.asarray([v for o in self.overlaps.values() for v in o.values()],
                              dtype=float)
        return items, flat, starts, overlaps

    def _broken(self, util: np.ndarray) -> np.ndarray:
        """1 where some entry's item and conflicting items are both in use (per row of
        ``util``, items last)."""
        items, flat, starts = self._entries
        main = util[..., items] > TOLERANCE
        others = np.add.reduceat(util[..., flat], starts, axis=-1) > TOLERANCE
        return (main & others).any(axis=-1).astype(float)

    def infos(self, ctx: EvalContext) -> np.ndarray:
        batch = ctx.size if isinstance(ctx, MoveBatch) else None
        if not self.conflicts:
            return np.zeros((0,) if batch is None else (batch, 0))
        if self.members is None:
            return self._broken(ctx.util(self.scope, self.dimension, "AFTER"))[..., None]
        if batch is None:
            return self._broken(group_after(ctx, self.scope, self.dimension, self.members))
        # the base's broken groups, changed in the groups a candidate's moves touch
        base_after, candidate, group, rows = ctx.touched_groups(self.scope, self.dimension,
                                                                self.members)
        broken = ctx.base.memo((self, "broken"), lambda: self._broken(base_after))
        infos = np.repeat(broken[None, :], batch, axis=0)
        infos[candidate, group] = self._broken(rows)
        return infos

    def evaluate(self, ctx: EvalContext) -> float | np.ndarray:
        util = ctx.util(self.scope, self.dimension, "AFTER")
        value: float | np.ndarray
        if self.formula == "AGGRESSIVE_PACKING":
            if not self.overlaps:
                return np.zeros(util.shape[:-1]) if util.ndim > 1 else 0.0
            items, flat, starts, overlaps = self._packing
            used = (util > TOLERANCE).astype(float)
            packed = self.weights[items] * used[..., items] + np.add.reduceat(
                used[..., flat] * overlaps, starts, axis=-1)
            value = -(self.weights[items] * packed**2).sum(axis=-1)
        elif not self.neighbours:
            return np.zeros(util.shape[:-1]) if util.ndim > 1 else 0.0
        else:
            _, flat, starts = self._neighbourhoods
            value = (np.add.reduceat(util[..., flat], starts, axis=-1) > TOLERANCE).sum(axis=-1)
        return value.astype(float) if util.ndim > 1 else float(value)

    # ---------- compilation ----------
    @staticmethod
    def _used(b: CpBuilder, utils: list[Lin], items: list[int],
              counts: list[tuple[object, int]] | None) -> Lin:
        """step(Σ utils over ``items``) exactly (a literal), tied to the objects counted
        there (``counts``, per item, from ``CpBuilder.group_counts``) when known: a use
        the value pays for (``CpBuilder.tie_to_count``)."""
        count = None
        if counts is not None:
            objects = [counts[i] for i in items if counts[i][1]]
            count = (sum(o for o, _ in objects), max((m for _, m in objects), default=0))
        return presence(b, b.as_atom(lin_sum(utils[i] for i in items)), count)

    def _counts(self, b: CpBuilder, members: np.ndarray | None
                ) -> list[tuple[object, int]] | None:
        """Per item, the objects (``members``, else all) there that weigh in the dimension."""
        if self.dimension in b.problem.vector_dims:
            return None
        chosen = np.arange(b.problem.num_objects) if members is None else members
        return b.group_counts(self.scope, self.dimension, chosen)

    def _broken_form(self, b: CpBuilder, utils: list[Lin],
                     counts: list[tuple[object, int]] | None) -> Lin:
        """max over the entries of used(item) + used(others) − 1: positive exactly when
        some entry is broken (the wheel's "any positive")."""
        terms = [self._used(b, utils, [c.item], counts)
                 + self._used(b, utils, list(c.others), counts) - 1
                 for c in self.conflicts]
        return b.exact_max(terms, what=self.name)

    def compile_infos(self, b: CpBuilder) -> list[Info]:
        if not self.conflicts:
            return []
        if self.members is None:
            return [Info(self._broken_form(b, b.util(self.scope, self.dimension, "AFTER"),
                                           self._counts(b, None)))]
        return [Info(self._broken_form(b, group_after_forms(b, self.scope, self.dimension,
                                                            members),
                                       self._counts(b, members)))
                for members in self.members]

    def compile_goal(self, b: CpBuilder) -> GoalForm:
        util = b.util(self.scope, self.dimension, "AFTER")
        counts = self._counts(b, None)
        if self.formula != "AGGRESSIVE_PACKING":
            return GoalForm(lin_sum(self._used(b, util, list(others), counts)
                                    for others in self.neighbours.values()))
        # (no tie: the packing's terms, of weights of either sign, read a use both ways)
        used = {i: self._used(b, util, [i], None) for i in self.overlaps}
        for overlaps in self.overlaps.values():
            for other in overlaps:
                if other not in used:
                    used[other] = self._used(b, util, [other], None)
        terms = []
        for item, overlaps in self.overlaps.items():
            # P² over literals x (x² = x): Σ_j c_j² x_j + 2·Σ_{j<k} c_j c_k (x_j ∧ x_k)
            coefs: dict[int, Any] = {item: to_fraction(float(self.weights[item]))}
            for other, overlap in overlaps.items():
                coefs[other] = coefs.get(other, 0) + to_fraction(float(overlap))
            keys = list(coefs)
            square = []
            for a, j in enumerate(keys):
                square.append(used[j] * coefs[j] ** 2)
                for k in keys[a + 1:]:
                    square.append(self._both(b, used[j], used[k]) * (2 * coefs[j] * coefs[k]))
            terms.append(lin_sum(square) * -to_fraction(float(self.weights[item])))
        return GoalForm(lin_sum(terms))

    @staticmethod
    def _both(b: CpBuilder, x: Lin, y: Lin) -> Lin:
        """x ∧ y for two literal forms, exact both ways."""
        if x.is_constant or y.is_constant:
            return y * x.const if x.is_constant else x * y.const
        lx, ly = b.literal(x), b.literal(y)
        z = b.cp.new_bool_var("both")
        b.cp.add_bool_and([lx, ly]).only_enforce_if(z)
        b.cp.add_bool_or([lx.Not(), ly.Not(), z])
        initial = None
        atoms = [b.atoms[a] for a in (*x.terms, *y.terms)]
        if all(atom.initial is not None for atom in atoms):
            initial = int(all(atom.initial for atom in atoms))
        return Lin.atom(b.new_atom(z, 0, 1, initial))
