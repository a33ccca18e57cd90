"""The configuration (pattern) relaxation of a placement question, by column generation:
the strongest cheap proof that a set of containers is too small, and a placement built from
its solution.

Why: the LP over classes and container groups in :mod:`.proofs` splits objects fractionally
across a group's pooled capacity, so it cannot see that whole objects leave unusable room in
each container (an 8-GPU node holding 96 cores takes at most one 48-core pod per 4 GPUs...).
Here a *pattern* is a multiset of whole objects that fits one container of a group, and the
LP chooses how many containers of each group use each pattern, covering every object class:

    minimize  sum_k w_k uncovered_k                       (w_k: the class's volume)
    s.t.      sum_p a[p, k] x[p] + uncovered_k >= n_k     (every class k, n_k objects)
              sum_{p of group g} x[p] <= m_g              (every group g, m_g containers)

A feasible placement gives a solution with nothing uncovered, so a positive optimum proves
that none exists. Patterns are generated as needed (their value under the cover duals, a
bounded knapsack per group: greedy first, CP-SAT when greedy finds nothing). The proof does
not trust the LP solver's optimum: for any duals ``pi`` with 0 <= pi_k <= w_k,
``sum_k pi_k n_k - sum_g m_g U_g(pi)`` bounds the optimum from below when ``U_g`` bounds the
best pattern value of group g from above (weak duality with the group duals set to -U_g);
``U_g`` is CP-SAT's bound on a knapsack with values rounded up, sizes rounded down and
capacities rounded up, so it is an upper bound.

All objects count as movable (a relaxation) and containers named by a toFreeSpec hold
nothing; limits are those of :func:`.search.capacity_arrays`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cpsat_parameters import new_solver
from .search import capacity_arrays, freed_containers

TOLERANCE = 1e-9
PRICE_SCALE = 10**6  # duals to integer knapsack values (rounded up: still a bound)
SIZE_SCALE = 10**6  # the largest capacity of a dimension in knapsack units
PRICING_WORK = 2.0  # CP-SAT deterministic seconds per knapsack (then its bound is used)


@dataclass
class PatternResult:
    """``proven_infeasible``: the dual bound is positive. ``bound``: that bound (objects that
    no placement can cover, fractional). ``uncovered``: the LP's optimum. ``placement``: a
    placement built from the LP's patterns ({container: [objects]}), or None."""

    proven_infeasible: bool
    bound: float
    uncovered: float
    columns: int
    placement: dict[str, list[str]] | None


@dataclass
class ClassGroups:
    """Objects in classes of identical sizes, open containers in groups of identical limits
    (containers named by a toFreeSpec are in none)."""

    containers: list[str]
    objects: list[str]
    class_of: np.ndarray  # class per object
    sizes: np.ndarray  # [class, dim]
    demand: np.ndarray  # objects per class
    group_of: np.ndarray  # group per container, -1 for freed ones
    limits: np.ndarray  # [group, dim]
    members: np.ndarray  # containers per group


def class_groups(data: dict) -> ClassGroups:
    """The classes and groups of :class:`ClassGroups`, over :func:`.search.capacity_arrays`
    (limits equal to 9 decimals share a group)."""
    containers, objects, size, limit, _ = capacity_arrays(data)
    freed = freed_containers(data)
    open_rows = np.asarray([i for i, c in enumerate(containers) if c not in freed], dtype=int)
    sizes, class_of = np.unique(size, axis=0, return_inverse=True)
    limits, open_group = np.unique(np.round(limit[open_rows], 9), axis=0,
                                   return_inverse=True)
    group_of = np.full(len(containers), -1)
    group_of[open_rows] = open_group.ravel()
    return ClassGroups(containers, objects, class_of.ravel(), sizes,
                     np.bincount(class_of.ravel(), minlength=len(sizes)), group_of, limits,
                     np.bincount(open_group.ravel(), minlength=len(limits)))


def pattern_relaxation(data: dict, rounds: int = 300, seconds: float = 120.0,
                       seed: int = 0) -> PatternResult:
    """Column generation on the relaxation of the module docstring: at most ``rounds`` LP
    solves (a count, so the same input gets the same answer), and ``seconds`` as a safety
    net. Cut short, the bound comes from the duals at hand: still valid, maybe weaker.
    Unless infeasibility is proven, a placement is built by diving (:func:`_dive`)."""
    deadline = time.monotonic() + seconds
    inst = class_groups(data)
    if not len(inst.objects):
        return PatternResult(False, -math.inf, 0.0, 0, {c: [] for c in inst.containers})
    master = _Master(inst, seed)
    value, bound = master.generate(rounds, deadline)
    proven = bound > 1e-6 * max(1.0, float(master.cost @ inst.demand))
    columns = len(master.columns)
    placement = None if proven else _dive(master, deadline)
    return PatternResult(proven, bound, value, columns, placement)


class _Master:
    """The restricted master LP (GLOP) over the patterns generated so far."""

    def __init__(self, inst: ClassGroups, seed: int) -> None:
        from ortools.linear_solver import pywraplp

        self.inst = inst
        self.demand = inst.demand.astype(np.int64).copy()  # left to cover (diving lowers it)
        self.members = inst.members.astype(np.int64).copy()  # containers left per group
        fits = (inst.sizes[:, None, :] <= inst.limits[None, :, :] + TOLERANCE).all(axis=2)
        self.pricer = _Pricer(inst, fits, self.demand, seed)
        self.solver = solver = pywraplp.Solver.CreateSolver("GLOP")
        self.optimal = pywraplp.Solver.OPTIMAL
        self.uncovered = [solver.NumVar(0, float(n), "") for n in self.demand]
        self.cover = [solver.Constraint(float(n), solver.infinity()) for n in self.demand]
        for k, var in enumerate(self.uncovered):
            self.cover[k].SetCoefficient(var, 1.0)
        self.room = [solver.Constraint(-solver.infinity(), float(m)) for m in self.members]
        # an uncovered object costs its volume (shares of the largest capacities, summed):
        # with unit costs every dual is 0 or 1 and the generation crawls
        top = np.maximum(inst.limits.max(axis=0), TOLERANCE)
        self.cost = np.maximum((inst.sizes / top).sum(axis=1), 1e-6)
        objective = solver.Objective()
        for k, var in enumerate(self.uncovered):
            objective.SetCoefficient(var, float(self.cost[k]))
        objective.SetMinimization()
        self.columns: list[tuple[int, np.ndarray, Any]] = []
        self.seen: set[tuple[int, bytes]] = set()
        self.banned: set[int] = set()  # columns a dive found useless
        for g in range(len(inst.limits)):  # start: each class alone, as many as fit
            for k in np.flatnonzero(fits[:, g]):
                self.add(g, _single(inst, k, g), 1.0)

    def add(self, group: int, counts: np.ndarray | None, reduced: float) -> bool:
        if counts is None or reduced <= 1e-7 or (group, counts.tobytes()) in self.seen:
            return False
        self.seen.add((group, counts.tobytes()))
        var = self.solver.NumVar(0.0, float(self.members[group]), "")
        self.room[group].SetCoefficient(var, 1.0)
        for k in np.flatnonzero(counts):
            self.cover[k].SetCoefficient(var, float(counts[k]))
        self.columns.append((group, counts, var))
        return True

    def solve(self) -> tuple[float, np.ndarray, np.ndarray]:
        if self.solver.Solve() != self.optimal:
            raise ArithmeticError("the pattern relaxation's LP did not solve")
        pi = np.clip([c.dual_value() for c in self.cover], 0.0, self.cost)
        return (self.solver.Objective().Value(), pi,
                np.asarray([c.dual_value() for c in self.room]))

    def generate(self, rounds: int, deadline: float) -> tuple[float, float]:
        """Up to ``rounds`` LP solves with new patterns between them: (LP value, a valid
        lower bound on it, -inf when none was computed)."""
        bound = -math.inf
        groups = range(len(self.inst.limits))
        for _ in range(rounds):
            value, pi, mu = self.solve()
            if value <= TOLERANCE or time.monotonic() > deadline:
                return value, bound
            if sum(self.add(g, counts, pi @ counts + mu[g]) for g in groups
                   for counts in self.pricer.greedy(pi, g)):
                continue
            best, upper = self.pricer.exact(pi)  # greedy found nothing: proof-grade pricing
            bound = max(bound, float(pi @ self.demand - self.members @ upper))
            if bound > TOLERANCE or not sum(
                    self.add(g, counts, pi @ counts + mu[g]) for g, counts in enumerate(best)
                    if counts is not None):
                return value, bound
        value, pi, _ = self.solve()
        _, upper = self.pricer.exact(pi)  # out of rounds: the bound from the last duals
        return value, max(bound, float(pi @ self.demand - self.members @ upper))

    def usage(self) -> list[tuple[int, float]]:
        """(column, LP value) of the columns in use."""
        return [(c, var.solution_value()) for c, (_, _, var) in enumerate(self.columns)
                if var.solution_value() > 1e-6]

    def fix(self, column: int, times: int) -> np.ndarray:
        """Give ``times`` containers of the column's group its pattern: less to cover, fewer
        containers left. Returns what it covered (for :meth:`unfix`)."""
        group, counts, _ = self.columns[column]
        covered = np.minimum(self.demand, counts * times)
        self._update(group, -covered, -times)
        return covered

    def unfix(self, column: int, times: int, covered: np.ndarray) -> None:
        """Undo :meth:`fix`, and never use that column again."""
        group, _, var = self.columns[column]
        self.banned.add(column)
        self._update(group, covered, times)
        var.SetUb(0.0)

    def _update(self, group: int, demand: np.ndarray, members: int) -> None:
        self.demand += demand
        self.members[group] += members
        for k in np.flatnonzero(demand):
            self.cover[k].SetLb(float(self.demand[k]))
            self.uncovered[k].SetUb(float(self.demand[k]))
        self.room[group].SetUb(float(self.members[group]))
        for c, (g, _, var) in enumerate(self.columns):
            if g == group and c not in self.banned:
                var.SetUb(float(self.members[group]))


DIVE_ROUNDS = 30  # LP solves of new patterns after each fixing step of a dive
DIVE_BACKTRACKS = 30  # fixings a dive may undo (when the rest can no longer be covered)


def _dive(master: _Master, deadline: float) -> dict[str, list[str]] | None:
    """Diving: fix the LP's whole pattern counts (or, when there are none, its largest
    fraction rounded up), cover what is left with a re-solved LP, repeat; a fixing that
    leaves the rest uncoverable is undone and its pattern banned. Then the fixed patterns'
    objects go on real containers and the rest as :func:`_place` says. None on failure."""
    fixed: list[tuple[int, int, np.ndarray]] = []  # (column, times, covered)
    backtracks = 0
    while master.demand.any() and time.monotonic() < deadline:
        usage = master.usage()
        whole = [(c, int(math.floor(x + 1e-6))) for c, x in usage if x >= 1 - 1e-6]
        if not whole and usage:
            whole = [(max(usage, key=lambda item: (item[1], -item[0]))[0], 1)]
        if not whole:
            break
        step = []
        for c, times in whole:
            times = min(times, int(master.members[master.columns[c][0]]))
            if times > 0 and master.demand.any():
                step.append((c, times, master.fix(c, times)))
        value = master.generate(DIVE_ROUNDS, deadline)[0]
        if value > 0.5 * master.cost.min() and backtracks < DIVE_BACKTRACKS:
            backtracks += 1
            for c, times, covered in reversed(step):
                master.unfix(c, times, covered)
            master.generate(DIVE_ROUNDS, deadline)
            continue
        fixed += step
        if value > 0.5 * master.cost.min():
            break  # out of backtracks: first fit tries the rest
    return _place(master.inst, [(master.columns[c][0], master.columns[c][1], times)
                                for c, times, _ in fixed], master.pricer.seed)


def _place(inst: ClassGroups, fixed: list[tuple[int, np.ndarray, int]], seed: int
           ) -> dict[str, list[str]] | None:
    """Containers of each group given the fixed patterns, filled with objects of the
    patterns' classes; the objects left, first fit (fewest fitting containers first, then
    largest); those that still fit nowhere, by :func:`_repack`. None when that fails."""
    pool = [list(np.flatnonzero(inst.class_of == k)) for k in range(len(inst.demand))]
    final = np.full(len(inst.objects), -1)
    load = np.zeros((len(inst.containers), inst.sizes.shape[1]))
    limit = np.zeros_like(load)
    open_rows = inst.group_of >= 0
    limit[open_rows] = inst.limits[inst.group_of[open_rows]]
    free = [list(np.flatnonzero(inst.group_of == g)) for g in range(len(inst.limits))]
    for g, counts, times in fixed:
        for _ in range(times):
            node = free[g].pop(0)
            for k in np.flatnonzero(counts):
                for _ in range(min(int(counts[k]), len(pool[k]))):
                    final[pool[k].pop()] = node
                    load[node] += inst.sizes[k]
    left = [o for k in range(len(pool)) for o in pool[k]]
    size = inst.sizes[inst.class_of]
    top = np.maximum(limit.max(axis=0), TOLERANCE)
    eligible = {o: int((size[o] <= limit[open_rows] + TOLERANCE).all(axis=1).sum())
                for o in left}
    stuck = []
    for o in sorted(left, key=lambda o: (eligible[o], -(size[o] / top).max(), o)):
        fits = open_rows & (load + size[o] <= limit + TOLERANCE).all(axis=1)
        if fits.any():
            c = int(np.argmax(fits))
            final[o] = c
            load[c] += size[o]
        else:
            stuck.append(o)
    if stuck and not _repack(stuck, final, load, limit, size / top, seed):
        return None
    placement: dict[str, list[str]] = {c: [] for c in inst.containers}
    for o, c in enumerate(final):
        placement[inst.containers[c]].append(inst.objects[o])
    return placement


REPACK_CONTAINERS = 40  # the neighbourhood a repack re-solves
REPACK_WORK = 10.0  # CP-SAT deterministic seconds for it


def _repack(stuck: list[int], final: np.ndarray, load: np.ndarray, limit: np.ndarray,
            share: np.ndarray, seed: int) -> bool:
    """Place the ``stuck`` objects by re-solving a neighbourhood with CP-SAT: the containers
    that could hold them with the most room left, and every object on them (``final`` and
    ``load`` updated in place). False when the neighbourhood has no placement."""
    from ortools.sat.python import cp_model

    open_rows = limit.max(axis=1) > 0
    size = share * np.maximum(limit.max(axis=0), TOLERANCE)
    closeness = np.zeros(len(limit))  # per container, how near the nearest stuck one fits
    for o in stuck:
        needs = size[o] > 0
        capable = open_rows & (size[o] <= limit + TOLERANCE).all(axis=1)
        near = ((limit - load)[:, needs] / size[o, needs]).min(axis=1) if needs.any() \
            else np.ones(len(limit))
        closeness = np.maximum(closeness, np.where(capable, near + 1.0, 0.0))
    nodes = [int(c) for c in np.argsort(-closeness, kind="stable")[:REPACK_CONTAINERS]
             if closeness[c] > 0]
    # and the emptiest containers, where what the stuck objects displace can go
    room = np.where(open_rows, ((limit - load) / np.maximum(limit.max(axis=0), TOLERANCE)
                                ).min(axis=1), -np.inf)
    nodes += [int(c) for c in np.argsort(-room, kind="stable")[:REPACK_CONTAINERS // 2]
              if open_rows[c] and int(c) not in nodes]
    objects = stuck + [int(o) for o in np.flatnonzero(np.isin(final, nodes))]
    unit = SIZE_SCALE / np.maximum(limit.max(axis=0), TOLERANCE)
    model = cp_model.CpModel()
    x = {}
    for o in objects:
        options = [c for c in nodes if (size[o] <= limit[c] + TOLERANCE).all()]
        for c in options:
            x[o, c] = model.new_bool_var("")
        model.add_exactly_one(x[o, c] for c in options)
    for c in nodes:
        for d in range(limit.shape[1]):
            # sizes rounded up and capacities down: a solution is feasible in real numbers
            terms = [(int(math.ceil(size[o, d] * unit[d] - 1e-9)), x[o, c]) for o in objects
                     if (o, c) in x and size[o, d] > 0]
            if terms:
                model.add(sum(w * v for w, v in terms)
                          <= int(math.floor(limit[c, d] * unit[d] + 1e-9)))
    solver = new_solver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = seed
    solver.parameters.max_deterministic_time = REPACK_WORK
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return False
    for c in nodes:
        load[c] = 0.0
    for (o, c), var in x.items():
        if solver.value(var):
            final[o] = c
            load[c] += size[o]
    return True


def _single(inst: ClassGroups, k: int, g: int) -> np.ndarray:
    counts = np.zeros(len(inst.demand), dtype=np.int64)
    positive = inst.sizes[k] > 0
    most = inst.demand[k] if not positive.any() else min(
        inst.demand[k], int(np.floor(np.min((inst.limits[g, positive] + TOLERANCE)
                                            / inst.sizes[k, positive]))))
    counts[k] = most
    return counts


class _Pricer:
    """Best patterns under the cover duals: greedy, and CP-SAT with a proven upper bound."""

    def __init__(self, inst: ClassGroups, fits: np.ndarray, demand: np.ndarray,
                 seed: int) -> None:
        self.inst, self.fits, self.demand, self.seed = inst, fits, demand, seed
        top = np.maximum(inst.limits.max(axis=0), TOLERANCE)
        self.unit = SIZE_SCALE / top  # knapsack units per dimension
        self.size_lists = inst.sizes.tolist()

    def greedy(self, pi: np.ndarray, g: int) -> list[np.ndarray]:
        """Patterns filled in order of dual value per unit of size: per unit of the largest
        share, and per unit of each dimension's share (cheap, several columns per round)."""
        inst = self.inst
        candidates = np.flatnonzero(self.fits[:, g] & (pi > TOLERANCE) & (self.demand > 0))
        if not candidates.size:
            return []
        sizes = inst.sizes[candidates]
        shares = sizes / np.maximum(inst.limits[g], TOLERANCE)
        keys = [shares.max(axis=1), shares.sum(axis=1)]
        patterns = []
        for key in keys:
            order = np.argsort(-pi[candidates] / np.maximum(key, 1e-12), kind="stable")
            patterns.append(self._fill(candidates[order], g))
        return patterns

    def _fill(self, order: np.ndarray, g: int) -> np.ndarray:
        inst = self.inst
        counts = np.zeros(len(inst.demand), dtype=np.int64)
        left = inst.limits[g].astype(float).tolist()
        dims = range(len(left))
        for k in order.tolist():
            size = self.size_lists[k]
            most = int(self.demand[k])
            for d in dims:
                if size[d] > 0:
                    most = min(most, int((left[d] + TOLERANCE) // size[d]))
            if most > 0:
                counts[k] = most
                for d in dims:
                    left[d] -= most * size[d]
        return counts

    def exact(self, pi: np.ndarray) -> tuple[list[np.ndarray | None], np.ndarray]:
        """Per group, the best pattern found (checked in exact sizes) and an upper bound on
        the best pattern value."""
        from ortools.sat.python import cp_model

        inst = self.inst
        value = np.ceil(pi * PRICE_SCALE).astype(np.int64)
        found: list[np.ndarray | None] = []
        upper = np.zeros(len(inst.limits))
        for g in range(len(inst.limits)):
            useful = np.flatnonzero(self.fits[:, g] & (value > 0) & (self.demand > 0))
            if not useful.size:
                found.append(None)
                continue
            model = cp_model.CpModel()
            take = [model.new_int_var(0, int(self.demand[k]), "") for k in useful]
            for d in range(inst.sizes.shape[1]):
                coef = np.floor(inst.sizes[useful, d] * self.unit[d]).astype(np.int64)
                if coef.any():
                    cap = int(math.ceil(inst.limits[g, d] * self.unit[d]))
                    model.add(sum(int(c) * t for c, t in zip(coef, take) if c) <= cap)
            model.maximize(sum(int(value[k]) * t for k, t in zip(useful, take)))
            solver = new_solver()
            solver.parameters.num_workers = 1
            solver.parameters.random_seed = self.seed
            solver.parameters.max_deterministic_time = PRICING_WORK  # repeatable
            status = solver.solve(model)
            upper[g] = solver.best_objective_bound / PRICE_SCALE
            counts = None
            if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                counts = np.zeros(len(inst.demand), dtype=np.int64)
                counts[useful] = [solver.value(t) for t in take]
                if (counts @ inst.sizes > inst.limits[g] + TOLERANCE).any():
                    counts = None  # rounding let it through: not a real pattern
            found.append(counts)
        return found, upper
