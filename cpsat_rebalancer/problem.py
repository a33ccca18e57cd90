"""The indexed problem: names resolved to integer indices and numpy arrays, once.

Everything downstream (evaluator, compiler, heuristics) works on indices; names only come
back at the edges (results, CLI).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

OUT_OF_SCOPE = -1
DECIMAL_DIGITS = 15  # decimal digits tried to make a dimension's values whole units


@dataclass(frozen=True)
class Scope:
    """A partition of containers into scope items; containers not mapped are out of scope."""

    name: str
    items: list[str]
    item_index: dict[str, int]
    container_item: np.ndarray  # int per container, OUT_OF_SCOPE when not in this scope
    capacities: dict[str, np.ndarray]  # dimension -> capacity per item (float)

    def capacity(self, dimension: str) -> np.ndarray:
        """Capacities of ``dimension``; Rebalancer gives 1.0 to every item when none was set."""
        caps = self.capacities.get(dimension)
        if caps is None:
            return np.ones(len(self.items))
        return caps

    @property
    def covers_all_containers(self) -> bool:
        return bool(np.all(self.container_item != OUT_OF_SCOPE))

    def members(self) -> list[np.ndarray]:
        """Container indices of each item."""
        order = np.argsort(self.container_item, kind="stable")
        keys = self.container_item[order]
        return [order[keys == i] for i in range(len(self.items))]


@dataclass(frozen=True)
class DynamicDimension:
    """An object dimension whose value depends on where the object lands (Rebalancer's
    ``add_dynamic_object_dimension``): one value per (object, item of ``scope``); containers
    outside the scope give the default."""

    scope: str
    by_item: np.ndarray  # (objects, items + 1) floats; the last column is the default

    def values_at(self, scope: Scope, containers: np.ndarray) -> np.ndarray:
        """Each object's value when object o sits in ``containers[o]``."""
        items = np.where(scope.container_item[containers] == OUT_OF_SCOPE,
                         self.by_item.shape[1] - 1, scope.container_item[containers])
        return self.by_item[np.arange(len(containers)), items]


@dataclass(frozen=True)
class Problem:
    object_name: str
    container_name: str
    objects: list[str]
    object_index: dict[str, int]
    containers: list[str]
    container_index: dict[str, int]
    initial: np.ndarray  # container index per object: where the solve starts
    object_dims: dict[str, np.ndarray]  # dimension -> value per object (float, >= 0)
    scopes: dict[str, Scope]
    partitions: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    dynamic_dims: dict[str, DynamicDimension] = field(default_factory=dict)
    # where objects were before the moves already in flight (MovesInProgressSpec): the
    # utilization definitions count from there, while the solve starts from ``initial``,
    # which has those objects at their destinations already; None when nothing is in flight
    origin: np.ndarray | None = None
    # vector dimensions (Rebalancer's ``add_object_dimension_vector``): name -> the names of
    # its entries, each an ordinary static dimension in ``object_dims``; a scope item's load
    # is the largest of its entries' loads (docs/semantics.md#vector-dimensions)
    vector_dims: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def reference(self) -> np.ndarray:
        """The assignment INITIAL, STAYED (and so DURING, NEW, OLD, MOVED) count from
        (docs/semantics.md#movesinprogress)."""
        return self.initial if self.origin is None else self.origin

    def with_moves_in_flight(self, moves: dict[int, int]) -> Problem:
        """This problem with ``moves`` (object -> destination) already under way: the
        solve starts with each object at its destination; metrics still count from here."""
        start = self.initial.copy()
        for obj, container in moves.items():
            start[obj] = container
        return replace(self, initial=start, origin=self.reference.copy())

    @property
    def count_dimension(self) -> str:
        return f"{self.object_name}_count"

    def has_dimension(self, name: str) -> bool:
        """Whether ``name`` is a dimension the user gave (a vector's entries are not)."""
        return name in self.dimension_names

    @property
    def dimension_names(self) -> list[str]:
        entries = {e for names in self.vector_dims.values() for e in names}
        return sorted([*(d for d in self.object_dims if d not in entries), *self.dynamic_dims,
                       *self.vector_dims])

    def decimal_scale(self, dim: str) -> float | None:
        """The least power of ten 10^k (k up to DECIMAL_DIGITS) at which every value of the
        scalar dimension ``dim`` is the double nearest a whole number of units of 10^-k,
        with every load of them below 2^53 units; None if there is none. A load summed in
        those units is exact, and divided back it is the double nearest the decimal total:
        0.292 + 0.276 is 0.568, as written, where a sum of the doubles is 2^-53 above."""
        if dim not in self._decimal_scales:
            dynamic = self.dynamic_dims.get(dim)
            values = self.object_dims[dim] if dynamic is None else dynamic.by_item
            self._decimal_scales[dim] = _decimal_scale(values)
        return self._decimal_scales[dim]

    @cached_property
    def _decimal_scales(self) -> dict[str, float | None]:
        return {}

    def entries(self, dim: str) -> tuple[str, ...]:
        """The scalar dimensions whose loads ``dim`` takes the largest of: its entries for a
        vector dimension, else ``dim`` alone."""
        return self.vector_dims.get(dim, (dim,))

    def scalar_dimensions(self, dims: frozenset[str]) -> frozenset[str]:
        """``dims`` with each vector dimension replaced by its entries."""
        return frozenset(e for d in dims for e in self.entries(d))

    def values_at(self, dim: str, containers: np.ndarray) -> np.ndarray:
        """Each object's value of ``dim`` when object o sits in ``containers[o]`` (static
        dimensions ignore where)."""
        if dim in self.vector_dims:
            raise ValueError(f"{dim} is a vector dimension: it has one value per entry")
        dynamic = self.dynamic_dims.get(dim)
        if dynamic is None:
            return self.object_dims[dim]
        return dynamic.values_at(self.scopes[dynamic.scope], containers)

    @property
    def num_objects(self) -> int:
        return len(self.objects)

    @property
    def num_containers(self) -> int:
        return len(self.containers)

    @property
    def container_scope(self) -> Scope:
        return self.scopes[self.container_name]

    def assignment_dict(self, assignment: np.ndarray) -> dict[str, list[str]]:
        """``{container: [objects]}`` for every container, in index order."""
        result: dict[str, list[str]] = {c: [] for c in self.containers}
        for obj, cont in zip(self.objects, assignment):
            result[self.containers[cont]].append(obj)
        return result

    def assignment_array(self, assignment: dict[str, list[str]],
                         path: str = "assignment") -> np.ndarray:
        """Index array from ``{container: [objects]}``; every object exactly once."""
        from .errors import InputError

        if not isinstance(assignment, dict):
            raise InputError(path, "expected a mapping container -> list of objects", assignment)
        result = np.full(self.num_objects, -1, dtype=np.int64)
        for cont, objs in assignment.items():
            if cont not in self.container_index:
                raise InputError(f"{path}.{cont}", "unknown container", cont)
            if isinstance(objs, tuple | np.ndarray):
                objs = list(objs)
            if not isinstance(objs, list):
                raise InputError(f"{path}.{cont}", "expected a list of objects", objs)
            for obj in objs:
                idx = self.object_index.get(obj) if isinstance(obj, str) else None
                if idx is None:
                    raise InputError(f"{path}.{cont}", "unknown object", obj)
                if result[idx] >= 0:
                    raise InputError(f"{path}.{cont}", "object listed in two containers", obj)
                result[idx] = self.container_index[cont]
        missing = np.flatnonzero(result < 0)
        if len(missing):
            raise InputError(path, "object without a container", self.objects[missing[0]])
        return result


def _decimal_scale(values: np.ndarray) -> float | None:
    """``Problem.decimal_scale`` of a dimension's values: per object (static), or per
    (object, item) where the largest of an object's counts toward the largest load."""
    table = values.reshape(len(values), -1) if len(values) else np.zeros((0, 1))
    if not np.all(np.isfinite(table)):
        return None
    largest_load = float(np.abs(table).max(axis=1).sum())
    for digits in range(DECIMAL_DIGITS + 1):
        scale = 10.0**digits
        if largest_load * scale >= 2.0**53:
            return None
        if np.array_equal(np.round(table * scale) / scale, table):
            return scale
    return None
