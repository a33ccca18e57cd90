"""Lower bounds on the number of identical containers a set of object sizes needs.

CP-SAT's own bound on "how many containers are used" is the volume bound at best; proving a
packing optimal needs better ones. Both bounds here are valid for sizes packed into bins of
one capacity C:

- Martello and Toth's L2 (combinatorial, instant);
- the Gilmore-Gomory bound: the linear relaxation of the model that chooses how often each
  packing pattern is used, solved by column generation (GLOP for the master LP, an exact
  dynamic program for the pricing knapsack). Its round-up equals the optimum on nearly every
  published instance (the "integer round-up property").

The pattern knapsack runs over the capacity: sizes and capacity are first divided by their
common divisor, and beyond PATTERN_CELLS coarsened (a relaxation, still valid); column
generation is limited by a count of work, never by time, so the model repeats.
"""

from __future__ import annotations

import math

import numpy as np
from ortools.linear_solver import pywraplp

EPSILON = 1e-6  # LP values within this of an integer are rounded to it, not up


def martello_toth_l2(sizes: np.ndarray, capacity: int) -> int:
    """L2: for each K <= C/2, items larger than C−K each need a bin of their own; those in
    (C/2, C−K] too, and what is left of their bins must take the items in [K, C/2] before
    new bins are counted. Dominates ⌈Σ sizes / C⌉."""
    sizes = np.asarray(sizes, dtype=np.int64)
    sizes = sizes[sizes > 0]
    if len(sizes) == 0 or capacity <= 0:
        return 0
    best = math.ceil(int(sizes.sum()) / capacity)
    for k in sorted({0, *sizes[2 * sizes <= capacity].tolist()}):
        big = sizes > capacity - k
        middle = (sizes <= capacity - k) & (2 * sizes > capacity)
        small = (2 * sizes <= capacity) & (sizes >= k)
        room = int(middle.sum()) * capacity - int(sizes[middle].sum())
        extra = max(0, math.ceil((int(sizes[small].sum()) - room) / capacity))
        best = max(best, int(big.sum()) + int(middle.sum()) + extra)
    return best


def _best_pattern(weights: np.ndarray, demand: np.ndarray, prices: np.ndarray,
                  capacity: int) -> tuple[float, np.ndarray]:
    """The bounded knapsack max Σ price·a, Σ weight·a <= C, 0 <= a <= demand (integers), by
    dynamic programming over capacity with each demand split into binary chunks."""
    chunks: list[tuple[int, int]] = []  # (size class, how many)
    for k, d in enumerate(demand.tolist()):
        d = min(d, capacity // int(weights[k]))
        step = 1
        while d > 0:
            take = min(step, d)
            chunks.append((k, take))
            d -= take
            step *= 2
    value = np.zeros(capacity + 1)
    keep = np.zeros((len(chunks), capacity + 1), dtype=bool)
    for c, (k, take) in enumerate(chunks):
        size, gain = int(weights[k]) * take, float(prices[k]) * take
        if gain <= 0 or size > capacity:
            continue
        candidate = np.full(capacity + 1, -np.inf)
        candidate[size:] = value[: capacity + 1 - size] + gain
        keep[c] = candidate > value + 1e-12
        value = np.maximum(value, candidate)
    pattern = np.zeros(len(weights), dtype=np.int64)
    room = capacity
    for c in range(len(chunks) - 1, -1, -1):
        if keep[c, room]:
            k, take = chunks[c]
            pattern[k] += take
            room -= int(weights[k]) * take
    return float(value[capacity]), pattern


PATTERN_CELLS = 100_000  # the largest capacity the pricing knapsack's table spans
PATTERN_WORK = 300_000_000  # size classes x capacity, over all pricing rounds (seconds)


def _reduced(sizes: np.ndarray, capacity: int) -> tuple[np.ndarray, int, bool]:
    """Sizes and capacity divided by their greatest common divisor (the same packings);
    when the capacity is still above PATTERN_CELLS, both coarsened to ⌊size/q⌋ and ⌊C/q⌋, a
    relaxation (what fits still fits: Σ⌊s/q⌋ <= ⌊Σs/q⌋ <= ⌊C/q⌋), so its bounds stay
    valid, if weaker. Third: whether the packings are still exactly the same."""
    divisor = int(np.gcd.reduce(np.append(sizes, capacity)))
    sizes, capacity = sizes // divisor, capacity // divisor
    if capacity <= PATTERN_CELLS:
        return sizes, capacity, True
    step = -(-capacity // PATTERN_CELLS)
    return sizes // step, capacity // step, False


def _pattern_lp(weights: np.ndarray, demand: np.ndarray, capacity: int, work: int,
                start: list[np.ndarray] = ()) -> tuple[int, list[tuple[np.ndarray, float]], int]:
    """Column generation on the pattern model, from ``start`` patterns (those within the
    demand) and one per size, pricing while ``work`` (size classes x capacity per round)
    lasts: (round-up of its LP, or Farley's bound when cut short; the patterns in use with
    their LP values; the work spent)."""
    solver = pywraplp.Solver.CreateSolver("GLOP")
    rows = [solver.Constraint(float(d), solver.infinity()) for d in demand]
    objective = solver.Objective()
    objective.SetMinimization()
    columns: list[tuple[np.ndarray, object]] = []

    def add(pattern: np.ndarray) -> None:
        column = solver.NumVar(0.0, solver.infinity(), "")
        objective.SetCoefficient(column, 1.0)
        for k in np.flatnonzero(pattern):
            rows[k].SetCoefficient(column, float(pattern[k]))
        columns.append((pattern, column))

    for k in range(len(weights)):  # one pattern per size: as many copies as fit
        pattern = np.zeros(len(weights), dtype=np.int64)
        pattern[k] = min(int(demand[k]), capacity // int(weights[k]))
        if pattern[k]:
            add(pattern)
    for pattern in start:
        if (pattern <= demand).all():
            add(pattern)
    bound = spent = 0
    cost = len(weights) * (capacity + 1)
    while True:
        if solver.Solve() != pywraplp.Solver.OPTIMAL:
            return bound, [], spent
        if spent + cost > work:
            break
        spent += cost
        prices = np.asarray([max(0.0, row.dual_value()) for row in rows])
        best, pattern = _best_pattern(weights, demand, prices, capacity)
        # prices / best is dual feasible for every pattern, exactly: a valid bound
        dual = float(demand @ prices) / max(best, 1.0)
        bound = max(bound, math.ceil(dual - EPSILON))
        if best <= 1.0 + 1e-9:
            break
        add(pattern)
    return bound, [(pattern, column.solution_value()) for pattern, column in columns
                   if column.solution_value() > EPSILON], spent


def gilmore_gomory(sizes: np.ndarray, capacity: int, work: int = PATTERN_WORK) -> int:
    """The round-up of the pattern model's LP relaxation (or, if column generation is cut
    short by ``work``, Farley's bound, valid at any round; on a coarsened instance when the
    capacity is large, see _reduced). 0 when there is nothing to pack. Limited by a count,
    not by time, so the same input always gets the same bound (and the same model)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    sizes = sizes[sizes > 0]
    if len(sizes) == 0 or np.any(sizes > capacity):
        return 0
    sizes, capacity, _ = _reduced(sizes, capacity)
    sizes = sizes[sizes > 0]
    if len(sizes) == 0:
        return 0
    weights, demand = np.unique(sizes, return_counts=True)
    return _pattern_lp(weights, demand, capacity, work)[0]


def pattern_dive(sizes: np.ndarray, capacity: int, work: int = PATTERN_WORK
                 ) -> np.ndarray | None:
    """A packing found by diving on the pattern LP: use the pattern the LP uses most
    (its whole count, at least once), solve the LP again for what is left, repeat (pricing
    while ``work`` lasts, then on the patterns at hand). Where the LP has the integer
    round-up property (most published instances) this often packs into as many bins as the
    bound, which first-fit decreasing misses on hard instances. Returns a bin index per
    size (sizes of 0 in bin 0), or None when some size does not fit or the capacity is too
    large for exact patterns. Deterministic: counts, not time, limit it."""
    sizes = np.asarray(sizes, dtype=np.int64)
    if len(sizes) == 0 or np.any(sizes > capacity):
        return None
    sizes, capacity, exact = _reduced(sizes, capacity)
    if not exact:
        return None
    positive = sizes > 0
    weights, demand = np.unique(sizes[positive], return_counts=True)
    left = demand.copy()
    bins: list[np.ndarray] = []
    used: list[tuple[np.ndarray, float]] = []
    while left.any():
        _, used, spent = _pattern_lp(weights, left, capacity, work, [p for p, _ in used])
        work -= spent
        if not used:
            return None
        pattern, value = max(used, key=lambda item: (item[1], int(item[0] @ weights)))
        times = max(1, min(int(math.floor(value + EPSILON)),
                           int(min(left[k] // pattern[k] for k in np.flatnonzero(pattern)))))
        bins += [pattern] * times
        left -= pattern * times
        if (left < 0).any():  # the LP's patterns keep within the demand: never expected
            return None
    assignment = np.zeros(len(sizes), dtype=np.int64)
    slots = {int(w): [] for w in weights}
    for b, pattern in enumerate(bins):
        for k in np.flatnonzero(pattern):
            slots[int(weights[k])] += [b] * int(pattern[k])
    for i in np.flatnonzero(positive):
        assignment[i] = slots[int(sizes[i])].pop()
    return assignment
