"""The per-container knapsack (Dantzig-Wolfe) relaxation of a costed assignment, and a dive
on it.

A generalized assignment puts every object in exactly one container, at a cost per (object,
container), with each container's load of one dimension within its capacity. CP-SAT's LP
sees each container's capacity as one row; the relaxation here sees every packing a
container can take as a column (the master LP: each object covered once, each container
used once; GLOP), priced by an exact 0/1 knapsack per container. Its bound is the
Lagrangian one (valid at every round), much closer to the optimum than the plain LP, and
diving on it (take the container's set closest to 1, re-solve for what is left) finds
assignments that local search over a few containers does not. Probing it per (container,
object) pair (forced_bounds, surviving_pairs) tells which pairs can be in an assignment at
or below a target cost.

Deterministic: a count of work (knapsack cells and the LP's nonzeros), never time, limits it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from ortools.linear_solver import pywraplp

from .packing_bounds import knapsack_01

EPSILON = 1e-6
SMOOTHING = 0.8  # weight of the best round's prices in the next round's (Wentges)
LP_WEIGHT = 30  # an LP solve's work per nonzero (GLOP rebuilds it), a knapsack cell's 1


def _best_set(profit: np.ndarray, weight: np.ndarray, capacity: int) -> tuple[float, list[int]]:
    """The 0/1 knapsack max Σ profit over objects of positive profit with Σ weight <= capacity:
    its value and its objects."""
    candidates = [int(o) for o in np.flatnonzero(profit > EPSILON)]
    value, chosen = knapsack_01([int(weight[o]) for o in candidates],
                                [float(profit[o]) for o in candidates], capacity)
    return value, [candidates[i] for i in chosen]


class _AssignmentLP:
    """The master LP, kept between solves: a row per object (= 1), a row per container
    (<= 1), a column per (container, set of objects) generated so far, and an artificial
    column per object at a prohibitive cost, so that any dive's LP stays feasible."""

    def __init__(self, cost: np.ndarray, weight: np.ndarray, capacity: np.ndarray) -> None:
        self.cost, self.weight, self.capacity = cost, weight, capacity
        containers, objects = cost.shape
        self.solver = pywraplp.Solver.CreateSolver("GLOP")
        infinity = self.solver.infinity()
        self.object_rows = [self.solver.Constraint(1.0, 1.0) for _ in range(objects)]
        self.container_rows = [self.solver.Constraint(-infinity, 1.0) for _ in range(containers)]
        self.objective = self.solver.Objective()
        self.objective.SetMinimization()
        finite = cost[np.isfinite(cost)]
        # an object left out costs more than its dearest container: moderate, for GLOP
        self.prohibitive = 3.0 * float(np.abs(finite).max() + 1.0) if len(finite) else 1.0
        for row in self.object_rows:
            artificial = self.solver.NumVar(0.0, infinity, "")
            self.objective.SetCoefficient(artificial, self.prohibitive)
            row.SetCoefficient(artificial, 1.0)
        self.sets: list[tuple[int, list[int]]] = []
        self.columns: list[object] = []
        self._known: set[tuple[int, tuple[int, ...]]] = set()
        self.work = 0  # see solve: knapsack cells and LP size, per round
        self.nonzeros = 3 * objects  # the LP's size: its nonzero coefficients
        self.out_of_work = False
        self.center: np.ndarray | None = None  # the last solve's best prices

    def add(self, container: int, objects: list[int]) -> bool:
        key = (container, tuple(sorted(objects)))
        if key in self._known or not objects:
            return False
        self._known.add(key)
        column = self.solver.NumVar(0.0, self.solver.infinity(), "")
        self.objective.SetCoefficient(column, float(self.cost[container, objects].sum()))
        self.container_rows[container].SetCoefficient(column, 1.0)
        for obj in objects:
            self.object_rows[obj].SetCoefficient(column, 1.0)
        self.sets.append((container, sorted(objects)))
        self.nonzeros += len(objects) + 1
        self.columns.append(column)
        return True

    def restricted(self, open_objects: np.ndarray, open_containers: np.ndarray
                   ) -> _AssignmentLP:
        """A new LP with only the columns within the open objects and containers, its work
        count carried on: a dive never reopens what it closed, and GLOP's time goes with
        the LP's size (it rebuilds the LP at every solve)."""
        lp = _AssignmentLP(self.cost, self.weight, self.capacity)
        lp.work = self.work
        for container, chosen in self.sets:
            if open_containers[container] and open_objects[chosen].all():
                lp.add(container, chosen)
        return lp

    def solve(self, open_objects: np.ndarray, open_containers: np.ndarray, work: int,
              least: Callable[[float], float] = lambda bound: bound
              ) -> tuple[float, list[tuple[int, float]]] | None:
        """Column generation over the open objects and containers (the others are held at
        0), pricing while work lasts: (the Lagrangian bound on the open part's cost, from
        the best round; -inf when no round was priced; the columns in use with their
        values), or None when the LP fails. Each round prices at a point between the best
        round's prices and the LP's (Wentges' smoothing), and pricing stops once ``least``
        of the bound (the least cost at or above it) meets the LP's value: together they
        cut the rounds a root needs several-fold, with the same bound."""
        for row, is_open in zip(self.object_rows, open_objects.tolist()):
            row.SetBounds(float(is_open), float(is_open))
        for row, is_open in zip(self.container_rows, open_containers.tolist()):
            row.SetUb(float(is_open))
        bound, center = -math.inf, None  # the best round's prices: the stability center
        self.center = None
        containers = np.flatnonzero(open_containers)
        cells = int(open_objects.sum()) * int(self.capacity[containers].sum() + len(containers))
        while True:
            if self.solver.Solve() != pywraplp.Solver.OPTIMAL:
                return None
            if center is not None and least(bound) >= self.objective.Value() - EPSILON:
                break  # the LP value cannot come down below the bound's least cost
            lp_prices = np.asarray([row.dual_value() for row in self.object_rows])
            lp_duals = np.minimum(0.0, [row.dual_value() for row in self.container_rows])
            smoothing, added = (SMOOTHING if center is not None else 0.0), 0
            while True:  # price between the center and the LP's duals (Wentges)
                spent = cells + LP_WEIGHT * self.nonzeros  # a round: knapsacks, an LP solve
                if self.work + spent > work:
                    self.out_of_work = True
                    break
                self.work += spent
                prices = lp_prices if center is None else (
                    smoothing * center + (1.0 - smoothing) * lp_prices)
                lagrangian = float(prices[open_objects].sum())
                for c in containers:
                    profit = np.where(open_objects, prices - self.cost[c], -np.inf)
                    best, chosen = _best_set(profit, self.weight[c], int(self.capacity[c]))
                    lagrangian -= best  # each open container takes its best set, or none
                    reduced = (float(self.cost[c, chosen].sum() - lp_prices[chosen].sum())
                               - lp_duals[c])
                    if chosen and reduced < -EPSILON and self.add(int(c), chosen):
                        added += 1
                if lagrangian > bound:
                    bound, center = lagrangian, prices
                if added or smoothing == 0.0:
                    break
                smoothing = 0.0  # no set improves the LP: price at its own duals
            if not added:
                break
        self.center = center
        return bound, [(k, value) for k, column in enumerate(self.columns)
                       if (value := column.solution_value()) > EPSILON]


ASSIGNMENT_WORK = 10_000_000_000  # the dive's largest work (no time limit), as solve counts it
# a slow machine's rate of work units per second (converts a time limit into a work budget)
WORK_PER_SECOND = 60_000_000


def assignment_work(seconds: float | None) -> int:
    """The dive's work for a solve of ``seconds``: at most 40% of that time (the search
    from its start needs the rest), as a count, so the same limit gives the same dive."""
    return (ASSIGNMENT_WORK if seconds is None
            else int(min(ASSIGNMENT_WORK, 0.4 * seconds * WORK_PER_SECOND)))


class Relaxation(NamedTuple):
    """What the knapsack relaxation tells of an assignment problem."""
    bound: float  # on the cost of every assignment within the capacities; -inf if none
    prices: np.ndarray | None  # the bound's Lagrangian price per object (None without one)
    final: np.ndarray | None  # the container per object of the dive's assignment, if whole
    work: int  # what it spent, as solve counts it
    sets: list[tuple[int, list[int]]]  # the (container, objects) columns it generated


def assignment_dive(cost: np.ndarray, weight: np.ndarray, capacity: np.ndarray,
                    work: int = ASSIGNMENT_WORK) -> Relaxation:
    """The root's Lagrangian bound and prices, and the assignment one dive found.

    ``cost`` (containers x objects; +inf where an object may not go), ``weight`` (integers
    >= 0, same shape), ``capacity`` (integers per container). The bound is -inf if the
    work allowed no round of pricing; the assignment None if the dive left objects out."""
    containers, objects = cost.shape
    lp = _AssignmentLP(cost, weight, capacity)
    finite = cost[np.isfinite(cost)]
    integral = bool(np.all(finite == np.round(finite)))

    def least(bound: float) -> float:  # the least cost at or above a bound
        return math.ceil(bound - EPSILON) if integral and math.isfinite(bound) else bound

    open_objects = np.ones(objects, dtype=bool)
    open_containers = np.ones(containers, dtype=bool)
    final = np.full(objects, -1, dtype=np.int64)
    root, prices = -math.inf, None
    root_sets: list[tuple[int, list[int]]] = []
    while open_objects.any() and open_containers.any():
        solved = lp.solve(open_objects, open_containers, work, least)
        if solved is None:
            return Relaxation(root, prices, None, lp.work, root_sets or lp.sets)
        bound, columns = solved
        if root == -math.inf:
            root, prices, root_sets = bound, lp.center, list(lp.sets)
        if not columns:
            break
        column, _ = max(columns, key=lambda kv: (kv[1], -kv[0]))
        container, chosen = lp.sets[column]
        final[chosen] = container
        open_objects[chosen] = False
        open_containers[container] = False
        lp = lp.restricted(open_objects, open_containers)
    return Relaxation(root, prices, final if (final >= 0).all() else None, lp.work, root_sets)


def _with(table: np.ndarray, size: int, gain: float) -> np.ndarray:
    """A knapsack's best value per room once one more object may be taken."""
    grown = table.copy()
    grown[size:] = np.maximum(table[size:], table[:len(table) - size] + gain)
    return grown


def forced_bounds(cost: np.ndarray, weight: np.ndarray, capacity: np.ndarray,
                  prices: np.ndarray) -> np.ndarray:
    """Per (container, object), a lower bound on the cost of every assignment within the
    capacities that puts the object in the container: the Lagrangian bound at ``prices``
    with that container's knapsack made to take the object (Lagrangian probing; +inf where
    it cannot). Once a solution costs less than a pair's bound, the pair is out of every
    better one: on GAP this leaves a few candidate containers per object.

    The forced knapsack is the object's profit plus the best of the others in the room
    left, read from a forward and a backward dynamic program over the container's objects
    of positive profit: O(those objects x capacity) per container."""
    containers, objects = cost.shape
    best = np.zeros(containers)
    forced = np.full((containers, objects), -np.inf)  # -inf: the pair cannot be
    for c in range(containers):
        room = int(capacity[c])
        profit = prices - cost[c]
        fits = np.isfinite(profit) & (weight[c] <= room)
        taken = np.flatnonzero(fits & (profit > EPSILON))
        ahead = np.zeros((len(taken) + 1, room + 1))  # best of the first k, per room
        behind = np.zeros((len(taken) + 1, room + 1))  # best of those from k on
        for k, o in enumerate(taken):
            ahead[k + 1] = _with(ahead[k], int(weight[c, o]), profit[o])
        for k in range(len(taken) - 1, -1, -1):
            behind[k] = _with(behind[k + 1], int(weight[c, taken[k]]), profit[taken[k]])
        best[c] = ahead[-1, room]
        for o in np.flatnonzero(fits):
            left = room - int(weight[c, o])
            forced[c, o] = profit[o] + ahead[-1, left]  # an object of no profit: the rest
        for k, o in enumerate(taken):
            left = room - int(weight[c, o])
            forced[c, o] = profit[o] + float(np.max(ahead[k, :left + 1] + behind[k + 1, left::-1]))
    bound = float(prices.sum() - best.sum())
    return bound + best[:, None] - forced


def surviving_pairs(cost: np.ndarray, weight: np.ndarray, capacity: np.ndarray,
                    pairs: np.ndarray, target: float, work: int,
                    seeds: Sequence[tuple[int, list[int]]] = ()
                    ) -> tuple[np.ndarray | None, int]:
    """The (container, object) pairs that may be in an assignment within the capacities
    costing at most ``target`` (integral costs), or None when no assignment does; and the
    work spent.

    Starts from the pairs whose forced bound (``pairs``, from forced_bounds) is within the
    target. The relaxation restricted to those pairs has a higher bound, and probing on it
    removes more: repeated while a round removes over 3% of the survivors and work lasts,
    each round's LP starting from the columns (``seeds``, then the last round's) it keeps
    (later rounds still remove a good share of the pairs, and a search over fewer pairs
    reaches the optimum much sooner)."""
    tolerance = EPSILON * max(1.0, abs(target))
    alive = pairs <= target + tolerance
    containers, objects = cost.shape
    spent = 0
    while alive.any(axis=0).all():
        restricted = np.where(alive, cost, np.inf)
        lp = _AssignmentLP(restricted, weight, capacity)
        for container, chosen in seeds:
            if alive[container, chosen].all():
                lp.add(container, chosen)
        solved = lp.solve(np.ones(objects, dtype=bool), np.ones(containers, dtype=bool),
                          work - spent, lambda bound: math.ceil(bound - EPSILON))
        spent += lp.work + int(objects * (capacity.sum() + containers))  # and the probing
        if solved is None or lp.center is None:
            return alive, spent
        if solved[0] > target + tolerance:
            return None, spent
        narrowed = alive & (forced_bounds(restricted, weight, capacity, lp.center)
                            <= target + tolerance)
        removed = alive.sum() - narrowed.sum()
        alive, seeds = narrowed, lp.sets
        if removed <= 0.03 * alive.sum() or lp.out_of_work or spent >= work:
            return alive, spent
    return None, spent
