"""Large-neighbourhood descent over containers: free the counts of a few containers, hold
every other container at the incumbent, and let CP-SAT re-optimize that small model.

Why: a movement bucket whose loads an earlier bucket nearly fixed is an exact-fill packing
(nearly all the load into hosts with almost no room to spare). CP-SAT's own neighbourhoods
are generic and its full search stalls there, far above its bound, where re-optimizing a
few hosts at a time comes close to it. Every
neighbourhood keeps all of the model's constraints (other containers are only fixed), so
each accepted step is feasible and the descent never worsens the incumbent.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING

import numpy as np
from ortools.sat.python import cp_model

from ...cpsat.builder import CpBuilder, hint_first
from ...cpsat_parameters import new_solver

if TYPE_CHECKING:
    from ..session import Session

FIRST_SIZE = 8  # containers freed per neighbourhood at first
LARGEST_SIZE = 64  # never more (a neighbourhood's solve must stay far cheaper than the whole)
STEP_SECONDS = 0.5  # wall limit of one neighbourhood's solve
GROW_AFTER = 20  # neighbourhoods in a row proven without a gain before freeing more
RANDOM_SHARE = 0.25  # of the containers freed, picked at random rather than along flows


def descend(builder: CpBuilder, objective: object, values: list[int], incumbent: int,
            deadline: float, chain: Session, floor: int | None = None) -> tuple[list[int], int]:
    """Improve ``values`` (a full solution, ``incumbent`` its objective) until ``deadline``
    (monotonic clock: a wall-clock search, never part of a deterministic run) or down to
    ``floor`` (a proven bound on the objective). One
    neighbourhood per worker at a time, each solved on one thread; the best gain of a round
    is kept. The neighbourhood grows when many in a row are proven without a gain and
    shrinks when they run out of time. Returns the best solution and its objective, and
    leaves the model as it was."""
    cp = builder.cp
    cp.minimize(objective)
    count_vars = [var.index for var in builder.count_vars]
    originals = [list(cp.proto.variables[i].domain) for i in count_vars]
    lanes = [_Lane(model, count_vars, originals) for model in
             [cp] + [cp.clone() for _ in range(max(1, chain.options.workers) - 1)]]
    containers = sorted(set(builder.var_cont.tolist()))
    initial = np.asarray(builder.initial_counts(), dtype=np.int64)
    rng = random.Random(chain.options.seed)
    size, idle = min(FIRST_SIZE, len(containers)), 0
    counts = np.asarray(values, dtype=np.int64)[count_vars]
    while (time.monotonic() < deadline - 0.05 and size < len(containers)
           and not chain.interrupted and (floor is None or incumbent > floor)):
        solves = []
        for lane in lanes:
            freed = _neighbourhood(builder, counts - initial, containers, size, rng)
            lane.restrict(counts, np.isin(builder.var_cont, list(freed)), values)
            solver = new_solver()
            params = solver.parameters
            params.num_workers = 1
            params.random_seed = chain.options.seed
            params.max_time_in_seconds = max(0.01, min(STEP_SECONDS,
                                                       deadline - time.monotonic()))
            solves.append((solver, lane.cp))
        statuses = chain.run_all(solves)
        for (solver, _), status in zip(solves, statuses):
            if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                found = int(solver.value(objective))  # not the double: inexact past 2^53
                if found < incumbent:
                    values, incumbent, idle = list(solver.response_proto.solution), found, 0
                    counts = np.asarray(values, dtype=np.int64)[count_vars]
        if any(s == cp_model.INFEASIBLE for s in statuses):
            break  # impossible around a feasible incumbent; never loop on it
        if all(s == cp_model.OPTIMAL for s in statuses):
            idle += len(statuses)
            if idle >= GROW_AFTER:
                size, idle = min(LARGEST_SIZE, 2 * size, len(containers)), 0
        else:
            size = max(2, size - size // 4)
    lanes[0].restrict(None, None, None)
    return values, incumbent


class _Lane:
    """One copy of the model for one thread, with the count domains it currently has, so a
    round edits only what changed (editing all of them costs more than the solves)."""

    def __init__(self, cp: cp_model.CpModel, count_vars: list[int], originals: list[list[int]]):
        self.cp = cp
        self.count_vars = count_vars
        self.originals = originals
        self.fixed_at = np.full(len(count_vars), -1, dtype=np.int64)  # -1: its own domain
        self.hinted: list[int] | None = None

    def restrict(self, counts: np.ndarray | None, free: np.ndarray | None,
                 values: list[int] | None) -> None:
        """Fix the counts not ``free`` at ``counts`` and give the others their own domains
        (``counts`` None: every count its own domain, no hint); hint ``values``."""
        wanted = (np.full(len(self.count_vars), -1, dtype=np.int64) if counts is None
                  else np.where(free, -1, counts))
        variables = self.cp.proto.variables
        for position in np.flatnonzero(wanted != self.fixed_at).tolist():
            domain = variables[self.count_vars[position]].domain
            domain.clear()
            value = int(wanted[position])
            domain.extend(self.originals[position] if value < 0 else [value, value])
        self.fixed_at = wanted
        if values is not self.hinted:
            hint_first(self.cp, values)
            self.hinted = values


def _neighbourhood(builder: CpBuilder, change: np.ndarray, containers: list[int],
                   size: int, rng: random.Random) -> set[int]:
    """``size`` containers linked by the incumbent's flows: from a container whose counts
    changed, add one that changed the other way in a class already in the set (where an
    object came from, or went), and now and then any container (one with room the
    incumbent leaves unused). Random containers alone rarely meet among hundreds."""
    changed = np.flatnonzero(change)
    if len(changed) == 0:
        return set(rng.sample(containers, size))
    freed = {int(builder.var_cont[changed[rng.randrange(len(changed))]])}
    while len(freed) < size:
        if rng.random() < RANDOM_SHARE:
            freed.add(rng.choice(containers))
            continue
        inside = changed[np.isin(builder.var_cont[changed], list(freed))]
        pick = inside[rng.randrange(len(inside))] if len(inside) else None
        partners = [] if pick is None else changed[
            (builder.var_class[changed] == builder.var_class[pick])
            & (np.sign(change[changed]) == -np.sign(change[pick]))
            & ~np.isin(builder.var_cont[changed], list(freed))]
        if len(partners):
            freed.add(int(builder.var_cont[partners[rng.randrange(len(partners))]]))
        else:
            freed.add(rng.choice(containers))
    return freed
