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
from ortools.linear_solver import linear_solver_pb2, pywraplp

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


def knapsack_01(sizes: list[int], gains: list[float], capacity: int) -> tuple[float, list[int]]:
    """The 0/1 knapsack max Σ gain over items with Σ size <= capacity (sizes integers >= 0),
    by dynamic programming over capacity: its value and the indices of its items. Items
    with no gain, or larger than the capacity, are never taken."""
    value = np.zeros(capacity + 1)
    keep = np.zeros((len(sizes), capacity + 1), dtype=bool)
    for i, (size, gain) in enumerate(zip(sizes, gains)):
        if gain <= 0 or size > capacity:
            continue
        candidate = np.full(capacity + 1, -np.inf)
        candidate[size:] = value[: capacity + 1 - size] + gain
        keep[i] = candidate > value + 1e-12
        value = np.maximum(value, candidate)
    chosen, room = [], capacity
    for i in range(len(sizes) - 1, -1, -1):
        if keep[i, room]:
            chosen.append(i)
            room -= sizes[i]
    return float(value[capacity]), chosen


def _best_pattern(weights: np.ndarray, demand: np.ndarray, prices: np.ndarray,
                  capacity: int) -> tuple[float, np.ndarray]:
    """The bounded knapsack max Σ price·a, Σ weight·a <= C, 0 <= a <= demand (integers): a
    0/1 knapsack over each demand split into binary chunks."""
    chunks: list[tuple[int, int]] = []  # (size class, how many)
    for k, d in enumerate(demand.tolist()):
        d = min(d, capacity // int(weights[k]))
        step = 1
        while d > 0:
            take = min(step, d)
            chunks.append((k, take))
            d -= take
            step *= 2
    value, chosen = knapsack_01([int(weights[k]) * take for k, take in chunks],
                                [float(prices[k]) * take for k, take in chunks], capacity)
    pattern = np.zeros(len(weights), dtype=np.int64)
    for c in chosen:
        k, take = chunks[c]
        pattern[k] += take
    return value, pattern


PATTERN_CELLS = 100_000  # the largest capacity the pricing knapsack's table spans
LP_CELLS = 400  # a master LP solve, counted as pricing over this much more capacity
# size classes x (capacity + LP_CELLS), over all rounds (ten seconds' worth at WORK_PER_SECOND)
PATTERN_WORK = 400_000_000


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


class _PatternLP:
    """The pattern model's LP relaxation, kept between solves so that a dive re-solves it
    warm: one row per size (cover its demand, >=), one column per pattern generated so far.

    It also holds the dual-optimal exchange columns of Ben Amor, Desrosiers and Valério de
    Carvalho: a slot of one size may hold the next smaller size, at no cost. Any packing
    that uses them is still a packing (the smaller item fits where the larger did), so the
    LP stays a relaxation, while the duals stay ordered by size; that cuts the column
    generation's rounds and steers a dive to whole patterns."""

    def __init__(self, weights: np.ndarray, demand: np.ndarray, capacity: int) -> None:
        self.weights, self.capacity = weights, capacity  # weights ascending (np.unique)
        self.solver = pywraplp.Solver.CreateSolver("GLOP")
        infinity = self.solver.infinity()
        self.rows = [self.solver.Constraint(float(d), infinity) for d in demand]
        self.objective = self.solver.Objective()
        self.objective.SetMinimization()
        for smaller in range(len(weights) - 1):
            exchange = self.solver.NumVar(0.0, infinity, "")
            self.rows[smaller + 1].SetCoefficient(exchange, -1.0)
            self.rows[smaller].SetCoefficient(exchange, 1.0)
        self.first_column = self.solver.NumVariables()  # the patterns' columns follow
        self.patterns: list[np.ndarray] = []
        self.columns: list[object] = []
        self._known: set[bytes] = set()
        self._off: set[int] = set()
        self.work = 0  # size classes x (capacity + 1 + LP_CELLS) per round
        self.out_of_work = False  # a round was not priced for lack of work
        for k in range(len(weights)):  # one pattern per size: as many copies as fit
            pattern = np.zeros(len(weights), dtype=np.int64)
            pattern[k] = min(int(demand[k]), capacity // int(weights[k]))
            if pattern[k]:
                self.add(pattern)

    def add(self, pattern: np.ndarray) -> bool:
        """A new column for ``pattern``; False when it is already there."""
        key = pattern.tobytes()
        if key in self._known:
            return False
        self._known.add(key)
        column = self.solver.NumVar(0.0, self.solver.infinity(), "")
        self.objective.SetCoefficient(column, 1.0)
        for k in np.flatnonzero(pattern):
            self.rows[k].SetCoefficient(column, float(pattern[k]))
        self.patterns.append(pattern)
        self.columns.append(column)
        return True

    def solve(self, demand: np.ndarray, work: int, off: frozenset[int] = frozenset()
              ) -> tuple[int, list[tuple[int, float]]] | None:
        """Column generation for ``demand``, with the columns ``off`` held at 0, pricing
        while the work spent stays within ``work``: (a lower bound on the bins the demand
        needs, from the last round's duals, exact at every round (Farley), 0 when no round
        was priced; the columns in use with their LP values), or None if the LP fails."""
        for row, need in zip(self.rows, demand.tolist()):
            row.SetLb(float(need))
        for k in self._off - off:
            self.columns[k].SetUb(self.solver.infinity())
        for k in off - self._off:
            self.columns[k].SetUb(0.0)
        self._off = set(off)
        bound = 0
        cost = len(self.weights) * (self.capacity + 1 + LP_CELLS)
        while True:
            if self.solver.Solve() != pywraplp.Solver.OPTIMAL:
                return None
            if self.work + cost > work:
                self.out_of_work = True
                break
            self.work += cost
            prices = np.asarray([max(0.0, row.dual_value()) for row in self.rows])
            best, pattern = _best_pattern(self.weights, demand, prices, self.capacity)
            # prices / best is dual feasible for every pattern, exactly: a valid bound
            bound = max(bound, math.ceil(float(demand @ prices) / max(best, 1.0) - EPSILON))
            if best <= 1.0 + 1e-9 or not self.add(pattern):  # or priced a column held off
                break
        solution = linear_solver_pb2.MPSolutionResponse()  # read at once: far faster
        self.solver.FillSolutionResponseProto(solution)
        values = np.asarray(solution.variable_value)[self.first_column:]
        return bound, [(int(k), float(values[k])) for k in np.flatnonzero(values > EPSILON)]


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
    solved = _PatternLP(weights, demand, capacity).solve(demand, work)
    return 0 if solved is None else solved[0]


DIVE_WORK = 2_000_000_000  # the dive's largest count of pricing work (no time limit)
DIVE_DISCREPANCIES = 2  # how often one dive may take another column than the LP's choice
# a slow machine's rate of pricing work units per second (converts a time limit into a work
# budget, so the same limit always buys the same dive)
WORK_PER_SECOND = 40_000_000


def dive_work(seconds: float | None) -> int:
    """The dive's work for a solve of ``seconds``: about half of that time, so that the
    same time limit always buys the same dive (and the same answer)."""
    return DIVE_WORK if seconds is None else int(min(DIVE_WORK, 0.5 * seconds * WORK_PER_SECOND))


def pattern_dive(sizes: np.ndarray, capacity: int, work: int = DIVE_WORK
                 ) -> np.ndarray | None:
    """A packing found by diving on the pattern LP, with limited discrepancy search.

    A dive takes the column whose LP value is closest to its round-up (rounded up, at least
    once), solves the LP again for what is left, and repeats until everything is packed. A
    dive that cannot end below the best packing so far (bins taken plus the LP's bound for
    the rest) stops there. After the first dive, the search goes back to the latest choice
    and takes the LP's second or third column instead (at most DIVE_DISCREPANCIES such
    detours per dive, with the columns passed over held off below), while ``work`` lasts or
    until a packing meets the LP's bound: then it is optimal. Where the LP has the integer
    round-up property (most published instances, the hardest ones included) this finds
    packings at the bound that first-fit decreasing and CP-SAT's search miss. Returns a bin
    index per size (sizes of 0 in bin 0), or None when some size does not fit or the
    capacity is too large for exact patterns. Deterministic: counts, not time, limit it."""
    sizes = np.asarray(sizes, dtype=np.int64)
    if len(sizes) == 0 or np.any(sizes > capacity):
        return None
    sizes, capacity, exact = _reduced(sizes, capacity)
    if not exact:
        return None
    positive = sizes > 0
    if not positive.any():
        return np.zeros(len(sizes), dtype=np.int64)
    weights, demand = np.unique(sizes[positive], return_counts=True)
    bins = _limited_discrepancy_dive(_PatternLP(weights, demand, capacity), demand, work)
    if not bins:  # the LP failed: never expected
        return None
    assignment = np.zeros(len(sizes), dtype=np.int64)
    slots = {int(w): [] for w in weights}
    for b, pattern in enumerate(bins):
        for k in np.flatnonzero(pattern):
            slots[int(weights[k])] += [b] * int(pattern[k])
    for i in np.flatnonzero(positive):
        assignment[i] = slots[int(sizes[i])].pop()
    return assignment


def _limited_discrepancy_dive(lp: _PatternLP, demand: np.ndarray, work: int
                              ) -> list[np.ndarray]:
    """The fewest bins found (each a count per size) by the dives of pattern_dive. The
    first dive always ends (pricing stops when work is out; the LP's columns remain); the
    detours are explored depth first from an explicit stack, latest choice first."""
    best: list[np.ndarray] | None = None
    target = 0  # the root LP's bound: a packing that meets it ends the search
    # a dive's state: what is left, the bins so far (a linked trail), detours left, off
    stack: list[tuple[np.ndarray, tuple | None, int, int, frozenset[int]]] = [
        (demand.copy(), None, 0, DIVE_DISCREPANCIES, frozenset())]
    while stack:
        left, trail, used, detours, off = stack.pop()
        while left.any():
            if best is not None and lp.out_of_work:
                break  # out of work: only the first dive is finished without pricing
            solved = lp.solve(left, work, off)
            if solved is None:
                break
            bound, columns = solved
            if trail is None and not used:
                target = bound
            if best is not None and used + bound >= len(best):
                break  # this dive cannot end below the best packing so far
            choices = []
            for k, value in sorted(columns, key=lambda kv: _closest_to_round_up(lp, *kv)):
                taken = _take(lp.patterns[k], max(1, math.ceil(value - EPSILON)), left)
                if taken:
                    choices.append((k, taken))
                if len(choices) > detours:
                    break
            if not choices:  # never expected: the largest size left, alone, always fits
                alone = np.zeros(len(left), dtype=np.int64)
                alone[np.flatnonzero(left)[-1]] = 1
                choices = [(-1, [alone])]
            detour_states = []
            passed = set(off)
            for n, (_, taken) in enumerate(choices[1:], start=1):
                passed.add(choices[n - 1][0])
                detour_states.append((left - sum(taken), (taken, trail), used + len(taken),
                                      detours - n, frozenset(passed)))
            stack += reversed(detour_states)  # the LP's second choice is tried first
            taken = choices[0][1]
            left, trail, used = left - sum(taken), (taken, trail), used + len(taken)
        else:
            if best is None or used < len(best):
                best = _unwind(trail)
        if best is not None and (len(best) <= target or lp.out_of_work):
            break
    return best or []


def _closest_to_round_up(lp: _PatternLP, column: int, value: float) -> tuple:
    """A dive's preference: the LP value closest to its round-up, then the largest value,
    then the fullest pattern (then the oldest column, for determinism)."""
    return (math.ceil(value - EPSILON) - value, -value,
            -int(lp.patterns[column] @ lp.weights), column)


def _take(pattern: np.ndarray, times: int, left: np.ndarray) -> list[np.ndarray]:
    """Up to ``times`` bins of ``pattern`` filled from ``left`` (unchanged): each slot with
    its own size, else the largest smaller size still left (what the LP's exchange columns
    stand for); a bin that would hold nothing is not taken."""
    rest = left.copy()
    bins = []
    for _ in range(times):
        filled = np.minimum(pattern, rest)
        rest -= filled
        for k in np.flatnonzero(pattern - filled)[::-1]:  # spare slots, largest first
            for _ in range(int(pattern[k] - filled[k])):
                smaller = np.flatnonzero(rest[:k])
                if len(smaller) == 0:
                    break
                filled[smaller[-1]] += 1
                rest[smaller[-1]] -= 1
        if not filled.any():
            break
        bins.append(filled)
    return bins


def _unwind(trail: tuple | None) -> list[np.ndarray]:
    """The bins of a dive's trail ((bins taken, previous trail) links), first taken first."""
    steps = []
    while trail is not None:
        taken, trail = trail
        steps.append(taken)
    return [pattern for taken in reversed(steps) for pattern in taken]
