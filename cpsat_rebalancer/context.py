"""What a spec reads to evaluate itself: utilizations of an (initial, final) assignment pair
under every utilization definition, and the step and positive-part functions. Plain numpy,
no CP-SAT: the evaluator and every spec's ``evaluate`` stand on it."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .primitives import TOLERANCE
from .problem import OUT_OF_SCOPE, Problem, Scope


class EvalContext:
    """Utilizations of an (initial, final) assignment pair, computed once per (scope, dim).
    ``initial`` is where the solve starts; the definitions count from ``reference``, which
    differs only for objects whose move is already in flight (``Problem.origin``)."""

    def __init__(self, problem: Problem, initial: np.ndarray, final: np.ndarray):
        self.problem = problem
        self.initial = initial
        self.final = final
        self.reference = initial if problem.origin is None else problem.origin
        self._base: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._memo: dict[Hashable, Any] = {}
        self._at_initial: EvalContext | None = None

    def memo(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """``compute()``, once while this context lives: what a spec derives from this
        assignment alone (keyed by the spec and a name), which every batch of candidates
        around it reads again."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def memo_of(self, members: list[np.ndarray], key: Hashable, compute: Callable[[], Any]
                ) -> Any:
        """``memo`` of what a list of groups (``members``) gives: kept per list object, so
        computed again when a new list reuses a gone one's id."""
        kept = self.memo((id(members), key), lambda: (members, compute()))
        if kept[0] is not members:
            kept = (members, compute())
            self._memo[(id(members), key)] = kept
        return kept[1]

    @property
    def at_initial(self) -> EvalContext:
        """The same problem evaluated with nothing moved (initial values of every metric).
        Never kept on itself: a context in a reference cycle, with the arrays it memoizes,
        would outlive its evaluation until a full garbage collection."""
        if self.final is self.initial:
            return self
        if self._at_initial is None:
            self._at_initial = EvalContext(self.problem, self.initial, self.initial)
        return self._at_initial

    def final_at(self, objects: np.ndarray) -> np.ndarray:
        """Where ``objects`` end (per candidate, in a batch): what a spec that names a few
        objects reads, without building every candidate's whole assignment."""
        return self.final[..., objects]

    def _after_initial_stayed(self, scope: Scope, dim: str):
        key = (scope.name, dim)
        if key not in self._base:
            final_values = self.problem.values_at(dim, self.final)
            initial_values = self.problem.values_at(dim, self.reference)
            n = len(scope.items)
            item_initial = scope.container_item[self.reference]
            item_final = scope.container_item[self.final]

            scale = self.problem.decimal_scale(dim)

            def total(items: np.ndarray, mask: np.ndarray, values: np.ndarray) -> np.ndarray:
                return load_totals(items[mask], values[mask], n, scale)

            after = total(item_final, item_final != OUT_OF_SCOPE, final_values)
            initial = total(item_initial, item_initial != OUT_OF_SCOPE, initial_values)
            stayed = total(item_final, (item_final == item_initial) & (item_final != OUT_OF_SCOPE),
                           final_values)
            self._base[key] = (after, initial, stayed)
        return self._base[key]

    def touched_items(self, scope: Scope, dim: str
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """None: one assignment has no candidates to price from a base (``MoveBatch``)."""
        return None

    def util(self, scope: Scope, dim: str, metric: str) -> np.ndarray:
        """Absolute utilization per item of ``scope`` under a definition
        (docs/semantics.md#scopes-dimensions-and-utilization); for a vector dimension the
        largest of its entries' utilizations under that definition."""
        entries = self.problem.vector_dims.get(dim)
        if entries is not None:
            return np.max([self.util(scope, entry, metric) for entry in entries], axis=0)
        after, initial, stayed = self._after_initial_stayed(scope, dim)
        if metric == "AFTER":
            return after
        if metric == "INITIAL":
            return initial
        if metric == "STAYED":
            return stayed
        # what stayed is part of what is there after and of what was there initially, so no
        # difference below is negative; a batch's totals, shifted by subtraction, can put one
        # a rounding below 0 (NEW with nothing new), where a power of it is NaN
        if metric == "DURING":
            return np.maximum(after + initial - stayed, 0.0)
        if metric == "NEW":
            return np.maximum(after - stayed, 0.0)
        if metric == "OLD":
            return np.maximum(initial - stayed, 0.0)
        if metric == "MOVED":
            return np.maximum(after + initial - 2 * stayed, 0.0)
        raise ValueError(f"unknown utilization metric {metric}")

    def group_after(self, scope: Scope, dim: str, members: list[np.ndarray]) -> np.ndarray:
        """AFTER utilization per (group, item of ``scope``) of a static dimension, each group
        given by its objects (``members``; the array is kept per list object while this
        context lives). Groups may overlap: an object in two groups counts in both, as in
        Rebalancer (docs/semantics.md#partitions)."""
        def compute() -> np.ndarray:
            objects, groups = membership(members)
            items = scope.container_item[self.final[objects]]
            return group_totals(groups, items, self.problem.object_dims[dim][objects],
                                len(members), len(scope.items), self.problem.decimal_scale(dim))

        return self.memo_of(members, ("group after", scope.name, dim), compute)

    def group_cells(self, scope: Scope, dim: str, members: list[np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``group_after`` at the cells where some object of the group is, in increasing
        order of (group, item): the groups, the items and the utilizations. Every other
        cell is 0. With thousands of groups on hundreds of items, most cells are empty,
        and a spec summing over cells reads these alone."""
        def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            objects, groups = membership(members)
            items = scope.container_item[self.final[objects]]
            inside = items != OUT_OF_SCOPE
            n_items = len(scope.items)
            cells, of = np.unique(groups[inside] * n_items + items[inside],
                                  return_inverse=True)
            totals = load_totals(of, self.problem.object_dims[dim][objects[inside]],
                                 len(cells), self.problem.decimal_scale(dim))
            return cells // n_items, cells % n_items, totals

        return self.memo_of(members, ("group cells", scope.name, dim), compute)

    def group_utils(self, scope: Scope, dim: str, members: list[np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """AFTER, INITIAL and STAYED utilization of each group (``members``: object indices
        per group) per item of ``scope``, a static dimension: arrays (group, item), at
        scope-item level as ``util``. Groups may overlap: an object in two groups counts in
        both, as in Rebalancer (docs/semantics.md#partitions)."""
        def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            objects, groups = membership(members)
            values = self.problem.object_dims[dim][objects]
            before = scope.container_item[self.reference[objects]]
            after = scope.container_item[self.final[objects]]
            shape = (len(members), len(scope.items), self.problem.decimal_scale(dim))
            stayed = group_totals(groups, np.where(after == before, after, OUT_OF_SCOPE),
                                  values, *shape)
            return (self.group_after(scope, dim, members),
                    group_totals(groups, before, values, *shape), stayed)

        return self.memo_of(members, ("group utils", scope.name, dim), compute)

    def out_of_scope_new(self, scope: Scope, dim: str) -> float:
        """Size of objects finally out of ``scope`` that were initially in it
        (docs/semantics.md#minimizemovement); for a vector dimension the largest over its
        entries."""
        entries = self.problem.vector_dims.get(dim)
        if entries is not None:
            return max(self.out_of_scope_new(scope, entry) for entry in entries)
        values = self.problem.values_at(dim, self.reference)
        item_initial = scope.container_item[self.reference]
        item_final = scope.container_item[self.final]
        mask = (item_final == OUT_OF_SCOPE) & (item_initial != OUT_OF_SCOPE)
        return float(load_totals(np.zeros(int(mask.sum()), dtype=np.int64), values[mask], 1,
                                 self.problem.decimal_scale(dim))[0])


# ``membership`` per list of groups (kept with the list, so its id is not reused while
# here), newest last: a spec's groups never change, and a walk asks again at every step
_MEMBERSHIPS: dict[tuple[int, bool], tuple[list[np.ndarray], tuple[np.ndarray, np.ndarray]]] = {}
MEMBERSHIPS_KEPT = 32


def membership(members: list[np.ndarray], by_object: bool = False
               ) -> tuple[np.ndarray, np.ndarray]:
    """Every (object, group) pair of ``members`` (object indices per group), as two aligned
    read-only arrays: the objects, and the group of each; in group order, or in object
    order (``by_object``)."""
    key = (id(members), by_object)
    if key in _MEMBERSHIPS and _MEMBERSHIPS[key][0] is members:
        return _MEMBERSHIPS[key][1]
    if not members:
        objects, groups = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    else:
        objects = np.concatenate(members).astype(np.int64)
        sizes = np.fromiter(map(len, members), dtype=np.int64, count=len(members))
        groups = np.repeat(np.arange(len(members)), sizes)
    if by_object:
        order = np.argsort(objects, kind="stable")
        objects, groups = objects[order], groups[order]
    objects.setflags(write=False)
    groups.setflags(write=False)
    _MEMBERSHIPS.pop(key, None)
    _MEMBERSHIPS[key] = (members, (objects, groups))
    while len(_MEMBERSHIPS) > MEMBERSHIPS_KEPT:
        del _MEMBERSHIPS[next(iter(_MEMBERSHIPS))]
    return objects, groups


def load_totals(bins: np.ndarray, values: np.ndarray, n: int, scale: float | None
                ) -> np.ndarray:
    """``values`` summed per bin (0 to n - 1); with the dimension's decimal scale
    (``Problem.decimal_scale``) summed exactly in its units, each total the double nearest
    the decimal sum whatever the order of the objects."""
    if scale is None or scale == 1.0:
        return np.bincount(bins, weights=values, minlength=n).astype(float)
    return np.bincount(bins, weights=np.round(values * scale), minlength=n) / scale


def group_totals(groups: np.ndarray, items: np.ndarray, values: np.ndarray, n_groups: int,
                 n_items: int, scale: float | None) -> np.ndarray:
    """``values`` summed per (group, item) as ``load_totals``, an array (group, item); pairs
    whose item is OUT_OF_SCOPE count nowhere."""
    inside = items != OUT_OF_SCOPE
    flat = load_totals(groups[inside] * n_items + items[inside], values[inside],
                       n_groups * n_items, scale)
    return flat.reshape(n_groups, n_items)


def step(x: np.ndarray | float) -> np.ndarray:
    return (np.asarray(x) > TOLERANCE).astype(float)


def positive(x: np.ndarray | float) -> np.ndarray:
    return np.maximum(np.asarray(x, dtype=float), 0.0)


@dataclass(frozen=True)
class InfoChanges:
    """A constraint's expressions under a MoveBatch, as those of its base and the few each
    candidate changes: ``candidate[i]`` sets expression ``info[i]`` to ``value[i]`` (each
    pair once). Where each move touches a few of thousands of expressions, a local search
    prices a batch from these without a row per candidate."""

    base: np.ndarray  # every expression at the batch's base assignment
    candidate: np.ndarray
    info: np.ndarray
    value: np.ndarray


class MoveBatch(EvalContext):
    """K assignments at once, each the ``base`` one with a few objects moved: candidate k
    moves ``objects[k, j]`` to ``targets[k, j]`` for every j (-1: no object), and every
    utilization is an array (K, items). A local search prices all the destinations of an
    object in one evaluation this way. Only static dimensions: a dynamic one's values
    change with where the object lands."""

    def __init__(self, base: EvalContext, objects: np.ndarray, targets: np.ndarray):
        self.problem = base.problem
        self.initial = base.initial
        self.reference = base.reference
        self.current = base.final
        self.objects = np.asarray(objects, dtype=np.int64).reshape(len(objects), -1)
        self.targets = np.asarray(targets, dtype=np.int64).reshape(self.objects.shape)
        self.size = len(self.objects)
        self._parent = base
        self._base = {}
        self._memo = {}
        self._final: np.ndarray | None = None

    @property
    def base(self) -> EvalContext:
        """The assignment every candidate starts from."""
        return self._parent

    @property
    def at_initial(self) -> EvalContext:
        return self._parent.at_initial

    @property
    def final(self) -> np.ndarray:
        """The K assignments (K, objects), built when a spec reads them."""
        if self._final is None:
            final = np.repeat(self.current[None, :], self.size, axis=0)
            rows = np.arange(self.size)
            for j in range(self.objects.shape[1]):
                moved = self.objects[:, j] >= 0
                final[rows[moved], self.objects[moved, j]] = self.targets[moved, j]
            self._final = final
        return self._final

    def final_at(self, objects: np.ndarray) -> np.ndarray:
        if self._final is not None:
            return self._final[:, objects]
        objects = np.asarray(objects, dtype=np.int64)
        at = np.repeat(self.current[objects][None, :], self.size, axis=0)
        order = np.argsort(objects, kind="stable")
        listed = objects[order]
        for j in range(self.objects.shape[1]):  # each moved object, at every place listed
            first = np.searchsorted(listed, self.objects[:, j], side="left")
            places = np.searchsorted(listed, self.objects[:, j], side="right") - first
            rows = np.repeat(np.arange(self.size), places)
            columns = order[np.repeat(first, places) + _ranks(places)]
            at[rows, columns] = np.repeat(self.targets[:, j], places)
        return at

    def _shifts(self, scope: Scope, dim: str):
        """Per candidate and moved object: its value, and its scope item before, after and
        in the reference assignment (OUT_OF_SCOPE for no object)."""
        objects = np.maximum(self.objects, 0)
        moved = self.objects >= 0
        values = np.where(moved, self.problem.values_at(dim, self.current)[objects], 0.0)
        item = scope.container_item
        source = np.where(moved, item[self.current[objects]], OUT_OF_SCOPE)
        target = np.where(moved, item[np.maximum(self.targets, 0)], OUT_OF_SCOPE)
        home = np.where(moved, item[self.reference[objects]], OUT_OF_SCOPE)
        return values, source, target, home

    def _after_initial_stayed(self, scope: Scope, dim: str):
        key = (scope.name, dim)
        if key not in self._base:
            after, initial, stayed = self._parent._after_initial_stayed(scope, dim)
            values, source, target, home = self._shifts(scope, dim)
            n = len(scope.items)
            rows = np.repeat(np.arange(self.size)[:, None], values.shape[1], axis=1)

            def shifted(base: np.ndarray, leaving: np.ndarray, arriving: np.ndarray):
                batch = np.repeat(base[None, :], self.size, axis=0)
                flat = batch.reshape(-1)
                out = leaving != OUT_OF_SCOPE
                np.add.at(flat, rows[out] * n + leaving[out], -values[out])
                into = arriving != OUT_OF_SCOPE
                np.add.at(flat, rows[into] * n + arriving[into], values[into])
                return batch

            after_batch = shifted(after, source, target)
            # an object counts as stayed where its item is its reference item
            stayed_batch = shifted(stayed, np.where(source == home, source, OUT_OF_SCOPE),
                                   np.where(target == home, target, OUT_OF_SCOPE))
            self._base[key] = (after_batch, initial, stayed_batch)
        return self._base[key]

    def touched_items(self, scope: Scope, dim: str
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """The items of ``scope`` a candidate's moves change, each once per candidate: the
        candidate, the item, and the item's AFTER utilization in the base assignment and in
        the candidate. A spec whose value is a sum over items prices a candidate by these
        alone, not by a row of every item. None for a vector dimension (its utilization is
        the largest of its entries')."""
        if dim in self.problem.vector_dims:
            return None

        def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
            values, source, target, _ = self._shifts(scope, dim)
            candidate = np.repeat(np.arange(self.size), values.shape[1])
            items = np.concatenate([source.ravel(), target.ravel()])
            inside = items != OUT_OF_SCOPE
            n = len(scope.items)
            key = (np.concatenate([candidate, candidate]) * n + items)[inside]
            unique, of = np.unique(key, return_inverse=True)
            change = np.bincount(of, weights=np.concatenate([-values.ravel(),
                                                            values.ravel()])[inside],
                                 minlength=len(unique))
            item = unique % n
            before = self._parent.util(scope, dim, "AFTER")[item]
            return unique // n, item, before, before + change

        return self.memo(("touched items", scope.name, dim), compute)

    def group_moves(self, members: list[np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every (move, group of the moved object) pair of the batch, as aligned arrays: the
        candidate, the object moved, where it goes, and the group (an object in two groups
        gives two pairs)."""
        objects, groups = membership(members, by_object=True)
        moved = self.objects >= 0
        candidate = np.repeat(np.arange(self.size), self.objects.shape[1])[moved.ravel()]
        mover, target = self.objects[moved], self.targets[moved]
        first = np.searchsorted(objects, mover, side="left")
        per_move = np.searchsorted(objects, mover, side="right") - first
        move = np.repeat(np.arange(len(mover)), per_move)
        group = groups[np.repeat(first, per_move) + _ranks(per_move)]
        return candidate[move], mover[move], target[move], group

    def touched_groups(self, scope: Scope, dim: str, members: list[np.ndarray]
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The groups a candidate's moves change, and their AFTER utilizations in it: only
        these rows of ``group_after`` differ from the base assignment's, so a group spec
        prices K candidates from the base and a few rows each, never K copies of every
        group. Returns the base's (group, item) array and, per (candidate, group) pair
        touched (each once): the candidate, the group and the group's row (pair, item).
        Kept while the batch lives (a spec's value and guide both read it)."""
        def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
            base = self._parent.group_after(scope, dim, members)
            candidate, mover, target, group = self.group_moves(members)
            n_groups = len(members)
            pairs, pair_of = np.unique(candidate * n_groups + group, return_inverse=True)
            rows = base[pairs % n_groups].copy()
            item = scope.container_item
            _shift(rows, pair_of, item[self.current[mover]], item[target],
                   self.problem.object_dims[dim][mover])
            return base, pairs // n_groups, pairs % n_groups, rows

        return self.memo_of(members, ("touched groups", scope.name, dim), compute)

    def touched_group_utils(self, scope: Scope, dim: str, members: list[np.ndarray]
                            ) -> tuple[np.ndarray, np.ndarray,
                                       tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``group_utils`` of the groups a candidate's moves change: per (candidate, group)
        pair touched (each once), the candidate, the group, and the pair's AFTER, INITIAL
        and STAYED rows (pair, item)."""
        after, initial, stayed = self._parent.group_utils(scope, dim, members)
        candidate, mover, target, group = self.group_moves(members)
        n_groups = len(members)
        pairs, pair_of = np.unique(candidate * n_groups + group, return_inverse=True)
        touched = pairs % n_groups
        values = self.problem.object_dims[dim][mover]
        item = scope.container_item
        source, arriving = item[self.current[mover]], item[target]
        home = item[self.reference[mover]]
        after_rows, stayed_rows = after[touched].copy(), stayed[touched].copy()
        _shift(after_rows, pair_of, source, arriving, values)
        # an object counts as stayed where its item is its reference item
        _shift(stayed_rows, pair_of, np.where(source == home, source, OUT_OF_SCOPE),
               np.where(arriving == home, arriving, OUT_OF_SCOPE), values)
        return pairs // n_groups, touched, (after_rows, initial[touched], stayed_rows)

    def touched_cells(self, scope: Scope, dim: str, members: list[np.ndarray]
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The (group, item) cells of ``group_after`` a candidate's moves change (the items
        its moved objects leave and enter, for each of their groups), each once per
        candidate: the candidate, the group, the item, and the cell's AFTER utilization in
        the base assignment and in the candidate. A spec whose value is a sum over cells
        prices a candidate by these alone."""
        candidate, mover, target, group = self.group_moves(members)
        values = self.problem.object_dims[dim][mover]
        item = scope.container_item
        cells = np.concatenate([item[self.current[mover]], item[target]])
        inside = cells != OUT_OF_SCOPE
        n_groups, n_items = len(members), len(scope.items)
        key = ((np.concatenate([candidate, candidate]) * n_groups
                + np.concatenate([group, group])) * n_items + cells)[inside]
        unique, of = np.unique(key, return_inverse=True)
        change = np.bincount(of, weights=np.concatenate([-values, values])[inside],
                             minlength=len(unique))
        cell_item, rest = unique % n_items, unique // n_items
        cell_group, cell_candidate = rest % n_groups, rest // n_groups
        group, item, after = self._parent.group_cells(scope, dim, members)
        known = group * n_items + item  # the base's non-empty cells, in increasing order
        wanted = cell_group * n_items + cell_item
        at = np.searchsorted(known, wanted).clip(max=max(len(known) - 1, 0))
        before = (np.where(known[at] == wanted, after[at], 0.0) if len(known)
                  else np.zeros(len(wanted)))
        return cell_candidate, cell_group, cell_item, before, before + change

    def out_of_scope_new(self, scope: Scope, dim: str) -> np.ndarray:
        entries = self.problem.vector_dims.get(dim)
        if entries is not None:
            return np.max([self.out_of_scope_new(scope, entry) for entry in entries], axis=0)
        base = self._parent.out_of_scope_new(scope, dim)
        values, source, target, home = self._shifts(scope, dim)  # static: values anywhere
        moved = self.objects >= 0
        was = (source == OUT_OF_SCOPE) & (home != OUT_OF_SCOPE) & moved
        now = (target == OUT_OF_SCOPE) & (home != OUT_OF_SCOPE) & moved
        return base + (values * (now.astype(float) - was.astype(float))).sum(axis=1)


def _shift(rows: np.ndarray, row_of: np.ndarray, leaving: np.ndarray, entering: np.ndarray,
           values: np.ndarray) -> None:
    """Move each object's value (``values``) in its row (``row_of``) of ``rows`` (row,
    item) from the item it leaves to the one it enters (OUT_OF_SCOPE: none), in place."""
    flat, n = rows.reshape(-1), rows.shape[1]
    out = leaving != OUT_OF_SCOPE
    np.add.at(flat, row_of[out] * n + leaving[out], -values[out])
    into = entering != OUT_OF_SCOPE
    np.add.at(flat, row_of[into] * n + entering[into], values[into])


def _ranks(counts: np.ndarray) -> np.ndarray:
    """0, 1, ..., c - 1 for each count c, concatenated."""
    total = int(counts.sum())
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(total) - starts
