"""Importers: published benchmark formats into ordinary scenario dicts.

Each importer writes the problem in Rebalancer's own terms (objects, containers, dimensions,
specs), so the result is solved by the same code path as any user's scenario:

- GAP (OR-Library / fontanf format: ``m n``, the m x n cost matrix, the m x n weight matrix,
  m capacities): items are objects, agents are containers; an item's weight depends on its
  agent (a dynamic dimension ``weight`` on the container scope) under a HARD Capacity per
  agent; the cost is a negative AssignmentAffinity, so the goal's value is the total cost.
- Bin packing (BPPLIB format: n, capacity C, n weights): items are objects in as many bins
  as first-fit decreasing needs, which is also the initial assignment; a HARD Capacity with
  absolute limit C, and MinimizeContainers on the size dimension.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError

GAP_FORMAT = ("a GAP instance (OR-Library format: m n, the m x n cost matrix, the m x n "
              "weight matrix, m capacities)")
BINPACKING_FORMAT = "a bin-packing instance (BPPLIB format: n, the capacity C, n weights)"


def _numbers(path: str | Path, expected: str) -> list[float]:
    """The numbers of an instance file; a file of another kind (a scenario, a binary) is
    named as such rather than failing on its first token."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(str(path), f"not a text file: expected {expected}") from None
    except OSError as error:
        raise InputError(str(path), f"cannot read: {error.strerror or error}") from None
    start = text.lstrip()[:1]
    try:
        return [float(token) for token in text.split()]
    except ValueError as error:
        kind = ("a JSON file (a scenario?)" if start in ("{", "[") else
                "a YAML or JSON file (a scenario?)" if ":" in text else "not numbers only")
        raise InputError(str(path), f"{kind}: expected {expected} ({error})") from None


def _counts(values: list[float]) -> dict[str, int | None]:
    """How many numbers each format expects, read from the leading numbers (None when they
    are not counts)."""
    def count(value: float) -> int | None:
        return int(value) if float(value).is_integer() and value > 0 else None

    m, n = (count(v) for v in (values + [0.0, 0.0])[:2])
    return {"gap": None if m is None or n is None else 2 + 2 * m * n + m,
            "binpacking": None if m is None else 2 + m}


def _check_count(values: list[float], path: str | Path, kind: str, expected: str) -> None:
    """The file holds exactly as many numbers as its leading counts say; when not, and the
    numbers fit the other format, say so."""
    counts = _counts(values)
    if counts[kind] == len(values):
        return
    other = next((k for k, c in counts.items() if k != kind and c == len(values)), None)
    hint = (f"; it looks like {BINPACKING_FORMAT if other == 'binpacking' else GAP_FORMAT}: "
            f"import it with 'import {other}'" if other else "")
    wanted = "an unknown count" if counts[kind] is None else f"{counts[kind]} numbers"
    raise InputError(str(path), f"not {expected}: its leading counts ask for {wanted}, the "
                     f"file holds {len(values)}{hint}")


def _take(values: list[float], start: int, count: int) -> list[float]:
    return values[start:start + count]


def _integral(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def read_gap(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cost m x n, weight m x n, capacity m) of a GAP instance file."""
    values = _numbers(path, GAP_FORMAT)
    _check_count(values, path, "gap", GAP_FORMAT)
    m, n = (int(v) for v in _take(values, 0, 2))
    cost = np.asarray(_take(values, 2, m * n)).reshape(m, n)
    weight = np.asarray(_take(values, 2 + m * n, m * n)).reshape(m, n)
    capacity = np.asarray(_take(values, 2 + 2 * m * n, m))
    if np.any(weight < 0) or np.any(capacity < 0):
        raise InputError(str(path), "weights and capacities must not be negative")
    return cost, weight, capacity


def gap_scenario(path: str | Path) -> dict[str, Any]:
    """A scenario minimizing the total cost of a GAP instance (its goal value is the cost)."""
    cost, weight, capacity = read_gap(path)
    m, n = cost.shape
    agents = [f"agent{a}" for a in range(m)]
    items = [f"item{i}" for i in range(n)]
    start = _greedy_gap(cost, weight, capacity)
    return {
        "name": f"gap {Path(path).name}",
        "description": f"Generalized assignment problem imported from {path}",
        "objectName": "item", "containerName": "agent",
        "assignment": {agents[a]: [items[i] for i in range(n) if start[i] == a]
                       for a in range(m)},
        "dynamicObjectDimensions": {"weight": {"scope": "agent", "values": {
            agents[a]: {items[i]: _integral(weight[a, i]) for i in range(n)}
            for a in range(m)}}},
        "containerDimensions": {"weight": {agents[a]: _integral(capacity[a])
                                           for a in range(m)}},
        "constraints": [{"spec": {"capacitySpec": {"name": "agent_capacity",
                                                   "dimension": "weight"}},
                         "policy": "HARD"}],
        "goals": [{"spec": {"assignmentAffinitiesSpec": {"name": "total_cost", "affinities": [
            {"objectName": items[i], "scopeItemName": agents[a],
             "affinity": _integral(-cost[a, i])}
            for i in range(n) for a in range(m)]}}}],
    }


def _greedy_gap(cost: np.ndarray, weight: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """A starting assignment: items by decreasing least weight, each to its cheapest agent
    with room (the agent where it weighs least relative to capacity when none has room)."""
    m, n = cost.shape
    left = capacity.astype(float).copy()
    agent = np.zeros(n, dtype=np.int64)
    for i in np.argsort(-weight.min(axis=0), kind="stable"):
        fits = np.flatnonzero(weight[:, i] <= left)
        if len(fits):
            a = int(fits[np.argmin(cost[fits, i])])
        else:
            a = int(np.argmin(weight[:, i] / np.maximum(capacity, 1e-300)))
        agent[i] = a
        left[a] -= weight[a, i]
    return agent


def read_binpacking(path: str | Path) -> tuple[int, np.ndarray]:
    """(capacity, weights) of a BPPLIB instance file."""
    values = _numbers(path, BINPACKING_FORMAT)
    _check_count(values, path, "binpacking", BINPACKING_FORMAT)
    n, capacity = (_integral(v) for v in _take(values, 0, 2))
    sizes = np.asarray(_take(values, 2, n))
    if capacity <= 0 or np.any(sizes < 0):
        raise InputError(str(path), "capacity must be positive and weights not negative")
    if np.any(sizes > capacity):
        raise InputError(str(path), "an item is larger than the capacity", float(sizes.max()))
    return capacity, sizes


def first_fit_decreasing(sizes: np.ndarray, capacity: float) -> np.ndarray:
    """Bin index per item, first-fit decreasing."""
    loads: list[float] = []
    bins = np.zeros(len(sizes), dtype=np.int64)
    for i in np.argsort(-sizes, kind="stable"):
        for b, load in enumerate(loads):
            if load + sizes[i] <= capacity:
                loads[b] += sizes[i]
                bins[i] = b
                break
        else:
            loads.append(float(sizes[i]))
            bins[i] = len(loads) - 1
    return bins


def binpacking_scenario(path: str | Path) -> dict[str, Any]:
    """A scenario minimizing the number of bins of a bin-packing instance."""
    capacity, sizes = read_binpacking(path)
    start = first_fit_decreasing(sizes, capacity)
    bins = [f"bin{b}" for b in range(int(start.max()) + 1)]
    items = [f"item{i}" for i in range(len(sizes))]
    return {
        "name": f"binpacking {Path(path).name}",
        "description": f"Bin packing imported from {path}; bins: as many as first-fit "
                       "decreasing needs, which is the initial assignment",
        "objectName": "item", "containerName": "bin",
        "assignment": {bins[b]: [items[i] for i in np.flatnonzero(start == b)]
                       for b in range(len(bins))},
        "objectDimensions": {"size": {items[i]: _integral(s) for i, s in enumerate(sizes)}},
        "constraints": [{"spec": {"capacitySpec": {
            "name": "bin_capacity", "dimension": "size",
            "limit": {"type": "ABSOLUTE", "globalLimit": capacity}}}, "policy": "HARD"}],
        "goals": [{"spec": {"minimizeContainersSpec": {"name": "bins", "dimension": "size"}}}],
    }


IMPORTERS = {"gap": gap_scenario, "binpacking": binpacking_scenario}
