"""Lower bounds on the number of identical containers a set of object sizes needs.

CP-SAT's own bound on "how many containers are used" is the volume bound at best; proving a
packing optimal needs better ones. Both bounds here are valid for sizes packed into bins of
one capacity C:

- Martello and Toth's L2 (combinatorial, instant);
- the Gilmore-Gomory bound: the linear relaxation of the model that chooses how often each
  packing pattern is used, solved by column generation (GLOP for the master LP, an exact
  dynamic program for the pricing knapsack). Its round-up equals the optimum on nearly every
  published instance (the "integer round-up property").
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


def gilmore_gomory(sizes: np.ndarray, capacity: int, iterations: int = 2000) -> int:
    """The round-up of the pattern model's LP relaxation (or, if column generation is cut
    short after ``iterations`` columns, Farley's bound, valid at any iteration). 0 when
    there is nothing to pack. Limited by a count, not by time, so the same input always
    gets the same bound (and the same model)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    sizes = sizes[sizes > 0]
    if len(sizes) == 0 or np.any(sizes > capacity):
        return 0
    weights, demand = np.unique(sizes, return_counts=True)
    solver = pywraplp.Solver.CreateSolver("GLOP")
    rows = [solver.Constraint(float(d), solver.infinity()) for d in demand]
    objective = solver.Objective()
    objective.SetMinimization()

    def add(pattern: np.ndarray) -> None:
        column = solver.NumVar(0.0, solver.infinity(), "")
        objective.SetCoefficient(column, 1.0)
        for k in np.flatnonzero(pattern):
            rows[k].SetCoefficient(column, float(pattern[k]))

    for k in range(len(weights)):  # one pattern per size: as many copies as fit
        pattern = np.zeros(len(weights), dtype=np.int64)
        pattern[k] = min(int(demand[k]), capacity // int(weights[k]))
        add(pattern)
    bound = 0
    for _ in range(iterations):
        if solver.Solve() != pywraplp.Solver.OPTIMAL:
            return bound
        prices = np.asarray([max(0.0, row.dual_value()) for row in rows])
        best, pattern = _best_pattern(weights, demand, prices, capacity)
        # prices / best is dual feasible for every pattern, exactly: a valid bound
        dual = float(demand @ prices) / max(best, 1.0)
        bound = max(bound, math.ceil(dual - EPSILON))
        if best <= 1.0 + 1e-9:
            return bound
        add(pattern)
    return bound
