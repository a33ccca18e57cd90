"""Object classes and integer scales: what the assignment model is indexed by. Objects that no
spec tells apart form one class with one count per container; each dimension is scaled to
exact integers by a power of ten."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..problem import OUT_OF_SCOPE, Problem, Scope

DIGITS_TRIED = 9  # decimal digits tried to make a dimension integral
FLOAT_NOISE = 4 * 2.0**-52  # relative noise of a decimal value times a power of ten


@dataclass
class ObjectClasses:
    members: list[np.ndarray]  # object indices per class, ascending
    of_object: np.ndarray  # class index per object
    home: list[dict[int, int]]  # initial count per container, per class

    @property
    def sizes(self) -> np.ndarray:
        return np.asarray([len(m) for m in self.members], dtype=np.int64)


def object_classes(problem: Problem, named: set[int], by_initial_container: bool,
                   dims: frozenset[str] | None = None) -> ObjectClasses:
    """Group interchangeable objects: same values of the dimensions in ``dims`` (None: all;
    a dimension no spec reads cannot tell objects apart), same groups, not named by any spec
    (and the same initial container when ``by_initial_container``)."""
    n = problem.num_objects
    if n == 0:
        return ObjectClasses([], np.zeros(0, np.int64), [])
    columns = [problem.object_dims[d] for d in sorted(problem.object_dims)
               if dims is None or d in dims]
    for name in sorted(problem.dynamic_dims):
        if dims is None or name in dims:
            columns.extend(problem.dynamic_dims[name].by_item.T)
    if by_initial_container:
        columns.append(problem.initial.astype(float))
    for name in sorted(problem.partitions):
        columns.append(group_sets(problem.partitions[name].values(), n))
    singleton = np.zeros(n)
    if named:
        idx = np.fromiter(sorted(named), dtype=np.int64)
        singleton[idx] = idx + 1
    columns.append(singleton)
    keys = np.column_stack(columns)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    # order classes by their first object so class numbering follows the input
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    of_object = rank[inverse]
    sort = np.argsort(of_object, kind="stable")
    bounds = np.searchsorted(of_object[sort], np.arange(len(order) + 1))
    members = [sort[bounds[k]:bounds[k + 1]] for k in range(len(order))]
    home = []
    for m in members:
        containers, counts = np.unique(problem.initial[m], return_counts=True)
        home.append(dict(zip(containers.tolist(), counts.tolist())))
    return ObjectClasses(members, of_object, home)



def group_sets(groups, n: int) -> np.ndarray:
    """A number per object naming the set of ``groups`` it belongs to (0: none), equal for
    two objects exactly when they are in the same groups (groups may overlap)."""
    sets: list[list[int]] = [[] for _ in range(n)]
    for g, members in enumerate(groups):
        for obj in members.tolist():
            sets[obj].append(g)
    ids: dict[tuple[int, ...], int] = {(): 0}
    return np.asarray([ids.setdefault(tuple(s), len(ids)) for s in sets], dtype=float)


def item_groups(scope: Scope) -> np.ndarray:
    """Item per container, with the out-of-scope containers as one more pseudo item."""
    return np.where(scope.container_item == OUT_OF_SCOPE, len(scope.items), scope.container_item)


def laminar_chain(problem: Problem) -> list[Scope] | None:
    """The custom scopes from finest to coarsest if each one's items lie inside the next
    one's (out-of-scope containers counting as one pseudo item); None if two scopes cross."""
    custom = [s for name, s in problem.scopes.items() if name != problem.container_name]
    custom.sort(key=lambda s: -len(np.unique(item_groups(s))))
    for finer, coarser in zip(custom, custom[1:]):
        fine, coarse = item_groups(finer), item_groups(coarser)
        for group in np.unique(fine):
            if len(np.unique(coarse[fine == group])) > 1:
                return None
    return custom


def integral_scale(values: np.ndarray, total: float = 0.0, total_limit: float = math.inf
                   ) -> tuple[int, float]:
    """Smallest power of ten making ``values`` integral, and the rounding error per object;
    none past 2^50 per value, nor past ``total_limit`` for ``total`` (the largest sum of
    them the caller forms): beyond, the finest within both, rounded."""
    top = float(np.max(np.abs(values))) if len(values) else 0.0
    finest = min(2**50 / max(top, 1e-300), total_limit / total if total > 0 else math.inf)
    for digits in range(DIGITS_TRIED + 1):
        scale = 10**digits
        scaled = values * scale
        if scale > finest:
            break
        # integral up to floating-point noise (0.1 * 10 = 1.0000000000000002: a few units of
        # the last place), not more (4e8 with six decimals is not integral at 10^3), and no
        # value that is not 0 taken for 0 (1e-8 beside 3 needs the scale 10^8)
        rounded = np.round(scaled)
        if np.all((np.abs(scaled - rounded) <= 1e-7 + FLOAT_NOISE * np.abs(scaled))
                  & ((rounded != 0) | (values == 0))):
            return scale, 0.0
    digits = max(0, min(DIGITS_TRIED, int(math.floor(math.log10(finest)))))
    scale = 10**digits
    error = float(np.max(np.abs(values * scale - np.round(values * scale)))) / scale
    return scale, error


def drift_of(values: np.ndarray, factor: int, scaled: np.ndarray, common: int) -> float:
    """How far a sum of the rounded values may lie from the sum of the values (integer
    units after dividing by ``common``): the sum of every object's rounding."""
    return float(np.abs(values * factor - scaled).sum()) / common


@dataclass
class DimensionScale:
    factor: Fraction  # integer value = round(value * factor)
    values: np.ndarray  # integer value per object (int64) in its initial container
    error: float  # max |value - integer/factor| per object
    table: np.ndarray | None = None  # dynamic: integer value per (object, item of its scope)
    # the sum over objects of |integer value - value * factor| (integer units): how far a
    # load of the rounded values may lie from the load of the values, whichever way
    drift: float = 0.0

    @property
    def most(self) -> int:
        """An upper bound on the total of the dimension, wherever objects go."""
        if self.table is None:
            return int(self.values.sum())
        return int(self.table.max(axis=1).sum())

