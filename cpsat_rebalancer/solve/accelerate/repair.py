"""Per-container load limits implied by the model, the lower-bound cuts on moves they give,
and a greedy repair of the initial assignment that meets them moving few objects.

CP-SAT's presolve propagates every rule built on a container's load variable (hard
capacities, frozen buckets: a LINEAR balance frozen at 0 caps each load at its threshold, a
MAX balance at its value times the capacity) and reports the tightened domains. From those:
* a container loaded above its limit must shed at least its fewest largest initial objects
  that bring it under (a valid cut on moves that CP-SAT's LP does not find on its own);
* shedding exactly those and placing them best-fit decreasing where there is room is often
  a complete assignment with that many moves, so bound and solution meet at once.
Both are accelerators: the cuts are implied by the model and the repair is only a hint,
checked by CP-SAT before use.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable, Sequence

import numpy as np
from ortools.sat.python import cp_model

from ...cpsat.builder import CpBuilder
from ...cpsat.classes import item_groups
from ...cpsat_parameters import new_solver
from ...progress import LOGGER

PRESOLVE_SECONDS = 20.0  # at most this long to read back the limits


def load_caps(builder: CpBuilder, targets: Sequence[tuple[object, int]] = (),
              seconds: float = PRESOLVE_SECONDS,
              run: Callable[[cp_model.CpSolver, cp_model.CpModel], int] | None = None,
              work: float | None = None, known: Sequence[int] | None = None
              ) -> dict[str, np.ndarray] | None:
    """Upper bound per container on each built container load (integer units, by
    dimension), as CP-SAT's presolve derives them from the model (plus ``expr <= level`` for
    each of ``targets``). None when presolve proves the model (with the targets) infeasible
    or gives up. ``run`` solves (the session's, which Ctrl-C can stop); ``work``, when given,
    bounds the presolve in deterministic seconds as well (a repeatable run). ``known``: a
    solution of the model with the targets (see ``presolved_bounds``)."""
    loads = builder.container_loads()
    if not loads:
        return {}
    variables = [v.Index() for vs in loads.values() for v in vs]
    bounds = presolved_bounds(builder, variables, targets, seconds, run, work, known)
    if bounds is None:
        return None
    uppers = iter(bounds[1].tolist())
    caps = {dim: np.asarray([next(uppers) for _ in vs], dtype=np.int64)
            for dim, vs in loads.items()}
    for dim, cap in caps.items():
        # every object ends in some container: limits that cannot hold a dimension's total
        # are not limits of this model (CP-SAT's tightened domains can be wrong), so none
        if dim not in builder.problem.dynamic_dims and cap.sum() < builder.scale(dim).most:
            return None
    return caps


def presolved_bounds(builder: CpBuilder, variables: Sequence[int],
                     targets: Sequence[tuple[object, int]] = (),
                     seconds: float = PRESOLVE_SECONDS,
                     run: Callable[[cp_model.CpSolver, cp_model.CpModel], int] | None = None,
                     work: float | None = None, known: Sequence[int] | None = None
                     ) -> tuple[np.ndarray, np.ndarray] | None:
    """The lowest and highest value of each of ``variables`` (indices) after CP-SAT's
    presolve of the model with ``expr <= level`` for each of ``targets``, valid for every
    solution; None when presolve proves it infeasible or gives up. See ``load_caps``.
    ``known``: the values of a solution (those of the variables built since missing), which
    every bound must hold; else none is taken: CP-SAT 9.15's presolve has fixed a load at 0
    that solutions leave above it, with every feasible solution kept."""
    cp = builder.cp.clone()
    cp.clear_objective()
    cp.clear_hints()
    for expr, level in targets:
        cp.add(expr <= level)
    solver = new_solver()
    params = solver.parameters
    params.stop_after_presolve = True
    params.fill_tightened_domains_in_response = True
    params.keep_all_feasible_solutions_in_presolve = True  # domains valid for every solution
    params.presolve_substitution_level = 0  # keep the load variables themselves
    params.cp_model_probing_level = 0  # bounds come from propagation; probing costs 3x
    params.max_presolve_iterations = 1  # later rounds add little to load bounds, much time
    params.num_workers = 1
    params.max_time_in_seconds = max(seconds, 0.01)
    if work is not None:
        params.max_deterministic_time = work
    params.catch_sigint_signal = False
    status = solver.solve(cp) if run is None else run(solver, cp)
    if status == cp_model.INFEASIBLE:
        return None
    domains = solver.response_proto.tightened_variables
    if not domains or any(not domains[index].domain for index in variables):
        return None  # an empty domain: presolve proved the levels infeasible
    lows, highs = [], []
    for index in variables:
        domain = domains[index].domain  # protobuf: no negative indexing here
        lows.append(domain[0])
        highs.append(domain[len(domain) - 1])
        if known is not None and index < len(known) and not lows[-1] <= known[index] <= highs[-1]:
            LOGGER.warning("CP-SAT's presolve bounds a variable away from a known solution: "
                           "its bounds are not used")
            return None
    return np.asarray(lows, dtype=np.int64), np.asarray(highs, dtype=np.int64)


def shed_counts(builder: CpBuilder, caps: dict[str, np.ndarray]) -> np.ndarray:
    """Per container, the fewest initial objects that must leave it: for each dimension,
    the fewest of its largest initial objects whose removal brings the load under the cap
    (the maximum over dimensions)."""
    problem = builder.problem
    shed = np.zeros(problem.num_containers, dtype=np.int64)
    for dim, cap in caps.items():
        sizes = builder.var_values(dim)
        initial = np.asarray(builder.initial_counts(), dtype=np.int64)
        load = builder.initial_loads(dim)
        for c in np.flatnonzero(load > cap):
            held = np.flatnonzero((builder.var_cont == c) & (initial > 0))
            excess = int(load[c] - cap[c])
            count = 0
            for j in held[np.argsort(-sizes[held], kind="stable")]:
                if sizes[j] <= 0:
                    break
                take = min(int(initial[j]), math.ceil(excess / int(sizes[j])))
                count += take
                excess -= take * int(sizes[j])
                if excess <= 0:
                    break
            shed[c] = max(shed[c], count if excess <= 0 else int(initial[held].sum()))
    return shed


def relaxed_caps(builder: CpBuilder, target: dict[str, np.ndarray],
                 hard: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """``target`` limits raised just enough to hold the whole load: where their total falls
    short of it, the containers over them at the start keep the shortfall, shared in
    proportion to how far over they are (never above the ``hard`` limits). None when the
    target already holds the load, or cannot be raised."""
    raised = {}
    short = False
    for dim, cap in target.items():
        load = builder.initial_loads(dim)
        deficit = int(load.sum() - cap.sum())
        over = np.maximum(load - cap, 0)
        if deficit <= 0:
            raised[dim] = cap
            continue
        short = True
        if over.sum() == 0:
            return None
        extra = np.ceil(deficit * over / over.sum()).astype(np.int64)
        raised[dim] = np.minimum(cap + extra, hard.get(dim, cap + extra))
    return raised if short else None


def caps_hold(builder: CpBuilder, caps: dict[str, np.ndarray], values: Sequence[int]) -> bool:
    """Whether the solution ``values`` keeps every load within ``caps``: presolve's bounds
    at a level are taken only where an assignment at that level keeps them (see
    ``presolved_bounds``)."""
    loads = builder.container_loads()
    return all(values[v.Index()] <= cap for dim, cap_row in caps.items()
               for v, cap in zip(loads.get(dim, ()), cap_row.tolist())
               if v.Index() < len(values))


def add_move_cuts(builder: CpBuilder, caps: dict[str, np.ndarray]) -> int:
    """Objects staying in a container <= its initial count minus what it must shed; only when
    stays at the container level are built (a spec reads moves). Returns the total shed."""
    stays = builder.built_stays(builder.problem.container_scope)
    if stays is None:
        return 0
    shed = shed_counts(builder, caps)
    groups = item_groups(builder.problem.container_scope)
    by_group: dict[int, list[object]] = {}
    initial_by_group: dict[int, int] = {}
    for (_, group), (expr, count) in stays.items():
        by_group.setdefault(group, []).append(expr)
        initial_by_group[group] = initial_by_group.get(group, 0) + count
    for c in np.flatnonzero(shed > 0):
        group = int(groups[c])
        builder.cp.add(sum(by_group[group]) <= initial_by_group[group] - int(shed[c]))
    if shed.any():  # and their sum, which bounds a moves objective without the LP
        builder.cp.add(sum(expr for expr, _ in stays.values())
                       <= sum(initial_by_group.values()) - int(shed.sum()))
    return int(shed.sum())


def repair(builder: CpBuilder, caps: dict[str, np.ndarray], partial: bool = False,
           deadline: float | None = None, exact: bool = False,
           start: list[int] | None = None) -> list[int] | None:
    """Counts from the initial assignment (or ``start``, counts of another assignment that
    meets the model's hard rules): each container over a cap sheds its largest
    objects until under every cap, then the shed objects go, largest first, to the allowed
    container with the least room left that fits them in every dimension (ejecting smaller
    objects to make room). None when some object finds no room (or nothing needs to move).
    ``partial``: without ejections, objects that find no room go back where they were, so
    the caps hold except where they came back (the initial assignment's hard rules keep
    holding when the caps are tighter than they are). A complete repair gives up (None) at
    ``deadline`` (time.monotonic()). ``exact``: the caps hold just the load (target loads),
    so the last rooms are small and scattered: making room looks at more containers."""
    if not caps:
        return None
    counts = np.asarray(builder.initial_counts() if start is None else start, dtype=np.int64)
    budget = _MoveBudget(builder, counts)
    upper = builder.count_upper
    m = builder.problem.num_containers
    sizes = {dim: builder.var_values(dim) for dim in caps}
    dims = list(caps)
    primary = dims[0]
    load = {dim: builder.loads_at(counts, dim) for dim in dims}
    over = np.zeros(m, dtype=bool)
    for dim in dims:
        over |= load[dim] > caps[dim]
    if not over.any():
        return None
    waiting: dict[int, int] = {}  # object class -> how many to place
    origins: dict[int, list[tuple[int, int]]] = {}  # object class -> (variable, count) shed
    order = np.argsort(builder.var_cont, kind="stable")
    by_container = np.split(order, np.searchsorted(builder.var_cont[order], np.arange(1, m)))
    for c in np.flatnonzero(over):
        held = by_container[c][counts[by_container[c]] > 0]
        shed_here: dict[int, int] = {}  # variable -> objects shed from it
        while True:
            excess = {d: int(load[d][c] - caps[d][c]) for d in dims if load[d][c] > caps[d][c]}
            if not excess:
                break
            worst = max(excess, key=lambda d: excess[d] / max(1, int(caps[d][c])))
            live = held[(counts[held] > 0) & budget.may_leave(held)]
            if len(live) == 0:
                return None
            j = live[np.argmax(sizes[worst][live])]
            if sizes[worst][j] <= 0:
                return None
            take = min(int(counts[j]), math.ceil(excess[worst] / int(sizes[worst][j])),
                       budget.left(int(j)))
            budget.spend(int(j), take)
            counts[j] -= take
            for d in dims:
                load[d][c] -= take * sizes[d][j]
            shed_here[int(j)] = shed_here.get(int(j), 0) + take
        _tighten_shed(shed_here, counts, load, caps, sizes, held, c, budget)
        for j, take in shed_here.items():
            if take:
                k = int(builder.var_class[j])
                waiting[k] = waiting.get(k, 0) + take
                origins.setdefault(k, []).append((j, take))

    def class_size(k: int) -> int:
        return max((int(sizes[primary][j]) for j in builder.class_vars[k]), default=0)

    queue = [(-class_size(k), k) for k in waiting]
    heapq.heapify(queue)
    ejections = 0
    while queue:
        _, k = heapq.heappop(queue)
        left = waiting.pop(k, 0)
        choices = np.asarray(builder.class_vars[k], dtype=np.int64)
        while left > 0:
            cont = builder.var_cont[choices]
            fit = upper[choices] - counts[choices]
            for d in dims:
                w = sizes[d][choices]
                room = caps[d][cont] - load[d][cont]
                fit = np.minimum(fit, np.where(w > 0, room // np.maximum(w, 1), left))
            fitting = np.flatnonzero(fit > 0)
            if len(fitting) == 0 and partial:
                while left > 0:  # back where they came from
                    j, count = origins[k].pop()
                    back = min(left, count)
                    counts[j] += back
                    for d in dims:
                        load[d][builder.var_cont[j]] += back * sizes[d][j]
                    left -= back
                    if count > back:
                        origins[k].append((j, count - back))
                break
            if len(fitting) == 0:
                # no room anywhere: make room for one object by ejecting smaller ones
                # (placed later, they pack more easily); each ejection may cost a move
                if ejections >= EJECTION_LIMIT * len(counts) or (
                        deadline is not None and time.monotonic() > deadline):
                    return None
                ejected = _make_room(builder, counts, upper, load, caps, sizes, choices,
                                     by_container, EJECTION_CANDIDATES * (4 if exact else 1),
                                     budget)
                if ejected is None:
                    return None
                for j, count in ejected:
                    kj = int(builder.var_class[j])
                    if kj not in waiting:
                        heapq.heappush(queue, (-class_size(kj), kj))
                    waiting[kj] = waiting.get(kj, 0) + count
                    ejections += count
                continue
            room = (caps[primary][cont] - load[primary][cont])[fitting]
            pick = fitting[np.argmin(room)]
            j = int(choices[pick])
            take = min(left, int(fit[pick]))
            counts[j] += take
            for d in dims:
                load[d][builder.var_cont[j]] += take * sizes[d][j]
            left -= take
    if partial:
        _top_off(builder, counts, upper, load, caps, sizes, by_container)
    return counts.tolist()


def _top_off(builder: CpBuilder, counts: np.ndarray, upper: np.ndarray,
             load: dict[str, np.ndarray], caps: dict[str, np.ndarray],
             sizes: dict[str, np.ndarray], by_container: list[np.ndarray]) -> None:
    """After a partial repair: move single objects out of containers still over a cap into
    the container with the least room that takes them, largest objects first, while any
    fits (each such move lowers the excess)."""
    dims = list(caps)
    primary = dims[0]
    over = np.zeros(len(load[primary]), dtype=bool)
    for d in dims:
        over |= load[d] > caps[d]
    for c in np.flatnonzero(over):
        held = by_container[c]
        for j in held[np.argsort(-sizes[primary][held], kind="stable")]:
            k = int(builder.var_class[j])
            choices = np.asarray([v for v in builder.class_vars[k] if v != j], dtype=np.int64)
            while counts[j] > 0 and any(load[d][c] > caps[d][c] for d in dims):
                if len(choices) == 0:
                    break
                cont = builder.var_cont[choices]
                fits = upper[choices] > counts[choices]
                for d in dims:
                    fits &= caps[d][cont] - load[d][cont] >= sizes[d][choices]
                fitting = np.flatnonzero(fits)
                if len(fitting) == 0:
                    break
                room = (caps[primary][cont] - load[primary][cont])[fitting]
                target = int(choices[fitting[np.argmin(room)]])
                counts[j] -= 1
                counts[target] += 1
                for d in dims:
                    load[d][c] -= sizes[d][j]
                    load[d][builder.var_cont[target]] += sizes[d][target]


class _MoveBudget:
    """How many more objects of each class may leave their initial containers (the move
    limits' caps, ``CpBuilder.move_caps``); a count variable of a container a class did not
    start in holds objects that moved already and may move again for free."""

    def __init__(self, builder: CpBuilder, counts: np.ndarray):
        self.var_class = builder.var_class
        self.movable = ~builder.pinned()  # a fixed or held object has nowhere else to go
        self.home: np.ndarray | None = None
        self.remaining: np.ndarray | None = None
        if builder.move_caps is None:
            return
        initial = np.asarray(builder.initial_counts(), dtype=np.int64)
        self.home = initial > 0
        gone = np.bincount(builder.var_class, np.maximum(0, initial - counts),
                           len(builder.move_caps)).astype(np.int64)
        self.remaining = builder.move_caps - gone

    def may_leave(self, variables: np.ndarray) -> np.ndarray:
        if self.remaining is None:
            return self.movable[variables]
        return self.movable[variables] & (
            ~self.home[variables] | (self.remaining[self.var_class[variables]] > 0))

    def left(self, j: int) -> int:
        if not self.movable[j]:
            return 0
        if self.remaining is None or not self.home[j]:
            return np.iinfo(np.int64).max
        return max(0, int(self.remaining[self.var_class[j]]))

    def spend(self, j: int, count: int) -> None:
        if self.remaining is not None and self.home[j]:
            self.remaining[self.var_class[j]] -= count


def _tighten_shed(shed: dict[int, int], counts: np.ndarray, load: dict[str, np.ndarray],
                  caps: dict[str, np.ndarray], sizes: dict[str, np.ndarray],
                  held: np.ndarray, c: int, budget: _MoveBudget) -> None:
    """Keep the number shed from container ``c`` but make it lighter: put a shed object back
    and shed the smallest kept one instead whenever the container stays under every cap
    (lighter objects are easier to place)."""
    dims = list(caps)
    primary = dims[0]
    changed = True
    while changed:
        changed = False
        for j in sorted(shed, key=lambda v: -int(sizes[primary][v])):
            if shed[j] == 0:
                continue
            slack = {d: int(caps[d][c] - load[d][c]) for d in dims}
            kept = held[(counts[held] > 0) & budget.may_leave(held)]
            fits = np.ones(len(kept), dtype=bool)
            for d in dims:
                fits &= sizes[d][j] - sizes[d][kept] <= slack[d]
            fits &= sizes[primary][kept] < sizes[primary][j]
            if not fits.any():
                continue
            h = int(kept[fits][np.argmin(sizes[primary][kept[fits]])])
            shed[j] -= 1
            budget.spend(j, -1)
            budget.spend(h, 1)
            counts[j] += 1
            counts[h] -= 1
            shed[h] = shed.get(h, 0) + 1
            for d in dims:
                load[d][c] += sizes[d][j] - sizes[d][h]
            changed = True
            break


EJECTION_LIMIT = 1  # ejections allowed per count variable, to bound the repair's work
EJECTION_CANDIDATES = 24  # containers (most room first) tried when making room


def _make_room(builder: CpBuilder, counts: np.ndarray, upper: np.ndarray,
               load: dict[str, np.ndarray], caps: dict[str, np.ndarray],
               sizes: dict[str, np.ndarray], choices: np.ndarray,
               by_container: list[np.ndarray], candidates: int, budget: _MoveBudget
               ) -> list[tuple[int, int]] | None:
    """Empty enough of one allowed container (for the class of ``choices``) for one object:
    eject objects smaller in every dimension, largest first, from the container that needs
    the fewest ejections (of the ``candidates`` with the most room). Updates counts and
    loads; returns (variable, count) ejected."""
    dims = list(caps)
    primary = dims[0]
    best: tuple[int, int, list[tuple[int, int]]] | None = None
    open_choices = choices[upper[choices] > counts[choices]]
    cont = builder.var_cont[open_choices]
    room = caps[primary][cont] - load[primary][cont]
    # only containers whose smaller objects can make the room: after a best-fit packing of
    # large objects first, those with the most room often hold none
    threshold = np.full(len(by_container), -1, dtype=np.int64)
    threshold[cont] = sizes[primary][open_choices]
    lighter = ((sizes[primary] < threshold[builder.var_cont]) & (counts > 0)
               & budget.may_leave(np.arange(len(counts))))
    movable = np.bincount(builder.var_cont[lighter],
                          (counts * sizes[primary])[lighter], len(by_container))
    able = np.flatnonzero(room + movable[cont] >= sizes[primary][open_choices])
    # the containers with the most room left need the fewest ejections: try only those
    for j in open_choices[able[np.argsort(-room[able], kind="stable")[:candidates]]]:
        c = int(builder.var_cont[j])
        need = {d: int(sizes[d][j] - (caps[d][c] - load[d][c])) for d in dims}
        held = by_container[c][(counts[by_container[c]] > 0)
                               & budget.may_leave(by_container[c])]
        smaller = held[np.all([sizes[d][held] <= sizes[d][j] for d in dims], axis=0)
                       & (sizes[dims[0]][held] < sizes[dims[0]][j])]
        taken: list[tuple[int, int]] = []
        for h in smaller[np.argsort(-sizes[primary][smaller], kind="stable")]:
            if all(need[d] <= 0 for d in dims):
                break
            worst = max(dims, key=lambda d: need[d])
            if sizes[worst][h] <= 0:
                continue
            count = min(int(counts[h]), math.ceil(need[worst] / int(sizes[worst][h])),
                        budget.left(int(h)))
            if count <= 0:
                continue
            taken.append((int(h), count))
            for d in dims:
                need[d] -= count * int(sizes[d][h])
        if all(need[d] <= 0 for d in dims):
            total = sum(count for _, count in taken)
            if best is None or total < best[0]:
                best = (total, c, taken)
    if best is None:
        return None
    for h, count in best[2]:
        budget.spend(h, count)
        counts[h] -= count
        for d in dims:
            load[d][best[1]] -= count * sizes[d][h]
    return best[2]


def leximin_descent(builder: CpBuilder, lins: list, counts: list[int],
                    caps: dict[str, np.ndarray], deadline: float) -> list[int] | None:
    """Single moves that make the sorted vector of relative utilizations (``lins``, one per
    container, each a multiple of that container's load) lexicographically smaller: take an
    object from the container at some rank (highest first) to one whose new utilization, like
    the source's, stays below the source's old one. Only towards containers whose
    coefficient is no larger (capacity no smaller): the pair's sum then does not grow, so no
    sum of the k largest grows and every leximin level already held stays held. Respects
    ``caps`` in every dimension. None when the forms are not plain container loads or when
    no move helps."""
    m = builder.problem.num_containers
    place = {}
    for dim, variables in builder.container_loads().items():
        for c, variable in enumerate(variables):
            place[variable.Index()] = (dim, c)
    coef = np.full(m, np.nan)
    dims = set()
    for lin in lins:
        live = [(a, c) for a, c in lin.terms.items() if c != 0]
        if len(live) != 1 or lin.const != 0:
            return None
        atom, c = live[0]
        expr = builder.atoms[atom].expr
        where = place.get(expr.Index()) if hasattr(expr, "Index") else None
        if where is None:
            return None
        dims.add(where[0])
        coef[where[1]] = float(c)
    if len(dims) != 1 or np.isnan(coef).any() or not all(d in caps for d in dims):
        return None
    (dim,) = dims
    counts_now = np.asarray(counts, dtype=np.int64)
    sizes = {d: builder.var_values(d) for d in caps}
    load = {d: builder.loads_at(counts_now, d) for d in caps}
    slots = {(int(k), int(c)): j for j, (k, c) in enumerate(zip(builder.var_class,
                                                                  builder.var_cont))}
    order = np.argsort(builder.var_cont, kind="stable")
    by_container = np.split(order, np.searchsorted(builder.var_cont[order], np.arange(1, m)))
    moved = False
    while time.monotonic() < deadline:
        rel = coef * load[dim]
        improved = False
        for a in np.argsort(-rel, kind="stable"):
            top = rel[a]
            held = by_container[a][counts_now[by_container[a]] > 0]
            for j in held[np.argsort(-sizes[dim][held], kind="stable")]:
                w = sizes[dim][j]
                if w <= 0 or coef[a] * (load[dim][a] - w) >= top:
                    continue
                targets = (coef <= coef[a]) & (rel + coef * w < top)
                targets[a] = False
                for d in caps:
                    targets &= load[d] + sizes[d][j] <= caps[d]
                k = int(builder.var_class[j])
                for b in np.flatnonzero(targets)[np.argsort(rel[targets], kind="stable")]:
                    target = slots.get((k, int(b)))
                    if target is None or counts_now[target] >= builder.count_upper[target]:
                        continue
                    counts_now[j] -= 1
                    counts_now[target] += 1
                    for d in caps:
                        load[d][a] -= sizes[d][j]
                        load[d][b] += sizes[d][target]
                    improved = moved = True
                    break
                if improved:
                    break
            if improved:
                break
        if not improved:
            break
    return counts_now.tolist() if moved else None
