"""The most VMs any placement can place: position 0 of the exact model, proven on a model
of its own.

The exact model (:mod:`.exact`) has one container per cluster/host/datastore triple, and
its first tuple position counts the VMs left unplaced. On clusters modelled host by host
that product is large and CP-SAT's own relaxation of it says little (every VM fits the
cluster totals), so the count is bounded and searched here on an equivalent, smaller model
of the hard constraints alone:

- *types*: VMs with the same reservation, disks, IOPS and allowed places are one type with
  a count (a VM in a hard VM-VM rule is a type of its own);
- *bins*: a host, or a cluster not modelled host by host, holding CPU and memory; a VM's
  disks go to a datastore connected to its cluster. A slot of the exact model is allowed
  exactly when its bin and its datastore are (the filters are a product: cluster, host,
  datastore), so counts per (type, bin) and per (type, cluster, datastore) that agree per
  (type, cluster) are the exact model's placements, VMs of one type being interchangeable.

The bound is the configuration LP: one column per content of a bin (a count per type within
its CPU and memory), each bin at most one content, each type at most its VMs, the disks of
each cluster's VMs on its datastores within their free space. Columns come from column
generation, a bin's best content priced exactly by a depth-first search. The bound stated
is Lagrangian: for any multipliers of the coupling rows (types, clusters' disks,
datastores), ``Σ multiplier x right-hand side + Σ over bins of the best content's reduced
value + Σ over disk placements of their best reduced value`` bounds every placement, so the
LP's floating-point duals cannot make it wrong; VM-VM rules are left out (a relaxation).
The search is CP-SAT on the count model (rules included), hinted with the engine's
placement and capped at the bound; when it reaches the bound, or CP-SAT proves its optimum,
the count is proven.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from ortools.linear_solver import pywraplp
from ortools.sat.python import cp_model

from ..cpsat_parameters import new_solver
from .count_model import Bin, CountModel, VmType, count_model
from .inputs import VcdScenario

REDUCED = 1e-7  # a content enters the LP only when its reduced value is above this
BOUND_SLACK = 1e-6  # the Lagrangian sum is floored only past this (its float rounding)
SEARCH_NODES = 50_000  # depth-first nodes per priced bin before its bound is taken instead
COLUMNS_SECONDS = 60.0  # the search over the LP's columns, at most


def _best_content(b: Bin, items: list[tuple[int, float, int, int, int]],
                  deadline: float = math.inf) -> tuple[float, dict[int, int], float]:
    """The most valuable content of ``b`` among ``items`` (type, value, CPU, memory, most),
    by depth-first search up to its node limit or ``deadline``: (value, counts, an upper
    bound on the best value, equal to the value when the search completed). Types of one
    size are one group whose n-th VM is worth the n-th best value among them (VM sizes come
    from a few flavours)."""
    by_size: dict[tuple[int, int], list[tuple[float, int, int]]] = defaultdict(list)
    for k, value, cpu, memory, most in items:
        by_size[(cpu, memory)].append((value, k, most))
    groups = []  # (cpu, memory, unit values best first, type of each unit)
    for (cpu, memory), members in by_size.items():
        fit = min(b.cpu // cpu if cpu else math.inf, b.memory // memory if memory else math.inf)
        units: list[float] = []
        owners: list[int] = []
        for value, k, most in sorted(members, reverse=True):
            take = int(min(most, fit - len(units)))
            units += [value] * take
            owners += [k] * take
        if units:
            groups.append((cpu, memory, units, owners))
    groups.sort(key=lambda g: -g[2][0] / max(g[0] / max(b.cpu, 1), g[1] / max(b.memory, 1),
                                              1e-12))
    prefix = [[0.0, *np.cumsum(g[2]).tolist()] for g in groups]
    # per resource, every unit by value per unit of that resource: the fractional bound
    orders = []
    for column in (0, 1):
        units = [(g[2][n] / g[column] if g[column] else math.inf, i, g[2][n], g[column])
                 for i, g in enumerate(groups) for n in range(len(g[2]))]
        orders.append(sorted(units, key=lambda u: -u[0]))
    best: list = [0.0, []]
    chosen: list[int] = []
    nodes = 0
    cut = 0.0  # the largest bound of a branch left unexplored

    def bound(k: int, room: tuple[int, int]) -> float:
        total = math.inf
        for column in (0, 1):
            value, left = 0.0, room[column]
            for _, i, unit, size in orders[column]:
                if i < k:
                    continue
                if size <= left:
                    value += unit
                    left -= size
                else:
                    value += unit * left / size
                    break
            total = min(total, value)
        return total

    def search(k: int, value: float, cpu: int, memory: int) -> None:
        nonlocal nodes, cut
        if value > best[0]:
            best[0], best[1] = value, list(chosen)
        if k == len(groups):
            return
        upper = value + bound(k, (cpu, memory))
        if upper <= best[0] + 1e-12:
            return
        nodes += 1
        if nodes > SEARCH_NODES or (nodes % 512 == 0 and time.monotonic() > deadline):
            nodes = SEARCH_NODES + 1  # stopped: every branch left adds its bound
            cut = max(cut, upper)
            return
        c, m, units, _ = groups[k]
        fit = min(len(units), cpu // c if c else len(units), memory // m if m else len(units))
        for n in range(fit, -1, -1):
            chosen.append(n)
            search(k + 1, value + prefix[k][n], cpu - n * c, memory - n * m)
            chosen.pop()

    if b.cpu >= 0 and b.memory >= 0:
        search(0, 0.0, b.cpu, b.memory)
    counts: dict[int, int] = defaultdict(int)
    for g, n in zip(groups, best[1]):
        for k in g[3][:n]:
            counts[k] += 1
    return best[0], dict(counts), max(best[0], cut)


@dataclass
class PlacedBound:
    """The configuration LP's answer: ``bound`` (no placement places more VMs), the LP
    value of the last round and whether column generation completed."""

    bound: int
    lp_value: float
    complete: bool
    rounds: int
    columns: list[tuple[int, dict[int, int]]] = field(default_factory=list, repr=False)


def placed_bound(model: CountModel, seconds: float, target: int | None = None,
                 contents: list[dict[int, int]] | None = None) -> PlacedBound:
    """The configuration LP's bound on the VMs placed, within about ``seconds``; stops as
    soon as the bound reaches ``target`` (a count already found). ``contents``: starting
    columns, a content per bin (the engine's, say)."""
    deadline = time.monotonic() + seconds
    bins, types = model.bins, model.types
    if model.placeable == 0:
        return PlacedBound(0, 0.0, True, 0)
    columns: list[tuple[int, dict[int, int]]] = []
    lp = pywraplp.Solver.CreateSolver("GLOP")
    bin_rows = [lp.Constraint(-lp.infinity(), 1.0) for _ in bins]
    type_rows = [lp.Constraint(-lp.infinity(), float(len(t.members))) for t in types]
    link_rows: dict[tuple[int, str], pywraplp.Constraint] = {}
    store_rows = {d: (lp.Constraint(-lp.infinity(), max(0.0, room)),
                      None if iops is None else lp.Constraint(-lp.infinity(), max(0.0, iops)))
                  for d, (room, iops) in model.store_room.items()}
    disks: list[tuple[int, str, str, pywraplp.Variable]] = []
    for k, t in enumerate(types):
        for c, stores in t.stores.items():
            row = link_rows[(k, c)] = lp.Constraint(0.0, 0.0)
            for d in stores:
                w = lp.NumVar(0.0, lp.infinity(), "")
                row.SetCoefficient(w, -1.0)
                storage, iops = store_rows[d]
                storage.SetCoefficient(w, float(t.storage))
                if iops is not None:
                    iops.SetCoefficient(w, float(t.iops))
                disks.append((k, c, d, w))
    objective = lp.Objective()
    objective.SetMaximization()
    seen: set[tuple[int, tuple]] = set()
    allowed_types: list[list[int]] = [[] for _ in bins]
    for k, t in enumerate(types):
        for j in t.bins:
            allowed_types[j].append(k)

    def add(j: int, content: dict[int, int]) -> bool:
        key = (j, tuple(sorted(content.items())))
        if not content or key in seen:
            return False
        seen.add(key)
        columns.append((j, content))
        x = lp.NumVar(0.0, lp.infinity(), "")
        bin_rows[j].SetCoefficient(x, 1.0)
        for k, n in content.items():
            type_rows[k].SetCoefficient(x, float(n))
            link_rows[(k, bins[j].cluster)].SetCoefficient(x, float(n))
        objective.SetCoefficient(x, float(sum(content.values())))
        return True

    for content in contents or []:
        for j, c in enumerate(content):
            add(j, {k: n for k, n in c.items() if n})
    best_bound, lp_value, rounds, complete = math.inf, math.inf, 0, False
    while time.monotonic() < deadline:
        rounds += 1
        if math.isfinite(deadline):
            lp.SetTimeLimit(max(1, int(1000 * (deadline - time.monotonic()))))
        if lp.Solve() != pywraplp.Solver.OPTIMAL:
            break
        lp_value = objective.Value()
        alpha = [max(0.0, r.dual_value()) for r in type_rows]
        beta = {key: r.dual_value() for key, r in link_rows.items()}
        mu = [max(0.0, r.dual_value()) for r in bin_rows]
        gamma = {d: (max(0.0, r.dual_value()), 0.0 if q is None else max(0.0, q.dual_value()))
                 for d, (r, q) in store_rows.items()}
        total = sum(a * len(t.members) for a, t in zip(alpha, types))
        total += sum(g * max(0.0, model.store_room[d][0]) + (
            0.0 if model.store_room[d][1] is None else h * max(0.0, model.store_room[d][1]))
                     for d, (g, h) in gamma.items())
        for k, c, d, _ in disks:
            reduced = beta[(k, c)] - gamma[d][0] * types[k].storage - gamma[d][1] * types[k].iops
            total += len(types[k].members) * max(0.0, reduced)
        added = 0
        for j, b in enumerate(bins):
            if time.monotonic() > deadline:
                total = math.inf  # a bin not priced: no bound this round
                break
            items = []
            for k in allowed_types[j]:
                value = 1.0 - alpha[k] - beta[(k, b.cluster)]
                t = types[k]
                if value > 1e-12 and t.cpu <= b.cpu and t.memory <= b.memory:
                    items.append((k, value, t.cpu, t.memory, len(t.members)))
            value, content, upper = _best_content(b, items, deadline)
            total += upper
            if value - mu[j] > REDUCED and add(j, content):
                added += 1
        best_bound = min(best_bound, total)
        if target is not None and math.floor(best_bound + BOUND_SLACK) <= target:
            break
        if not added:
            complete = True
            break
    bound = model.placeable if best_bound == math.inf else min(
        model.placeable, math.floor(best_bound + BOUND_SLACK))
    return PlacedBound(bound, lp_value, complete, rounds, columns)


# ---------------------------------------------------------------- the search


@dataclass
class MostPlaced:
    """The most VMs placed found (``placement``: VM -> (cluster, datastore, host), None
    when left unplaced), the proven bound on that count and whether it is reached."""

    placement: dict[str, tuple[str, str, str | None] | None]
    placed: int
    bound: int
    lp: PlacedBound | None
    seconds: float
    model: CountModel = field(repr=False)
    on_bin: dict[tuple[int, int], int] = field(repr=False)  # the placement as counts
    on_store: dict[tuple[int, str, str], int] = field(repr=False)

    @property
    def proven(self) -> bool:
        return self.placed >= self.bound


def _counts(model: CountModel, start: dict[str, tuple[str, str, str | None] | None]
            ) -> tuple[dict[tuple[int, int], int], dict[tuple[int, str, str], int]]:
    """A placement as counts per (bin, type) and per (type, cluster, datastore)."""
    bin_index = {(b.cluster, b.host): j for j, b in enumerate(model.bins)}
    type_of = model.type_of
    on_bin: dict[tuple[int, int], int] = defaultdict(int)
    on_store: dict[tuple[int, str, str], int] = defaultdict(int)
    for vm, where in start.items():
        if where is None or vm not in type_of:
            continue
        c, d, h = where
        k = type_of[vm]
        on_bin[(bin_index[(c, h)], k)] += 1
        on_store[(k, c, d)] += 1
    return on_bin, on_store


def most_placed(s: VcdScenario, start: dict[str, tuple[str, str, str | None] | None],
                seconds: float | None, workers: int = 2, seed: int = 0) -> MostPlaced | None:
    """The most VMs a placement of ``s`` can place, proven when the search reaches the
    bound, within about ``seconds`` (None: until proven); ``start`` (the engine's
    placement) is the search's hint and the LP's first columns. None when
    :func:`count_model` has no model."""
    started = time.monotonic()
    seconds = math.inf if seconds is None else seconds
    model = count_model(s)
    if model is None:
        return None
    start_bins, start_stores = _counts(model, start)
    hinted = sum(start_bins.values())
    contents = [defaultdict(int) for _ in model.bins]
    for (j, k), n in start_bins.items():
        contents[j][k] = n
    lp = placed_bound(model, 0.4 * seconds, target=hinted, contents=[contents])
    bound = lp.bound
    placement = {vm: start.get(vm) for t in model.types for vm in t.members}
    placed = hinted
    if placed < bound and not model.rules:  # the columns know no VM-VM rule
        left = seconds - (time.monotonic() - started)
        found = _columns_search(model, lp.columns, start_bins, start_stores, bound,
                                min(0.5 * left, COLUMNS_SECONDS), workers, seed)
        if found is not None and found[0] > placed:
            placed, start_bins, start_stores = found
    if placed < bound:
        left = seconds - (time.monotonic() - started)
        found = _search(model, start_bins, start_stores, bound, max(0.1, left), workers, seed)
        if found is not None:
            count, cp_bound, start_bins, start_stores = found
            bound = min(bound, cp_bound)
            placed = max(placed, count)
    if placed > hinted:
        placement = _placement(model, start_bins, start_stores)
    return MostPlaced(placement, placed, bound, lp, time.monotonic() - started, model,
                      start_bins, start_stores)


@dataclass
class FewestOn:
    """With the most VMs placed held, the fewest of them found on some clusters
    (``placement``), the proven lower bound on that count, and whether it is reached."""

    placement: dict[str, tuple[str, str, str | None] | None]
    value: int
    bound: int
    seconds: float

    @property
    def proven(self) -> bool:
        return self.value <= self.bound


def restricted(model: CountModel, keep: set[int]) -> CountModel:
    """The count model with the VMs allowed on the bins in ``keep`` only."""
    types = []
    for t in model.types:
        bins = [j for j in t.bins if j in keep]
        clusters = {model.bins[j].cluster for j in bins}
        types.append(VmType(t.members, t.cpu, t.memory, t.storage, t.iops, bins,
                            {c: d for c, d in t.stores.items() if c in clusters}))
    return CountModel(model.bins, types, model.cluster_room, model.store_room, model.rules)


def fewest_on(most: MostPlaced, clusters: set[str], seconds: float | None, workers: int = 2,
              seed: int = 0) -> FewestOn:
    """With ``most.placed`` VMs placed (the proven most), the fewest of them on
    ``clusters``: at least ``placed`` minus the most VMs the other bins can take (the
    configuration LP on them), searched by CP-SAT on the count model from ``most``'s
    placement, within about ``seconds`` (None: until proven)."""
    started = time.monotonic()
    seconds = math.inf if seconds is None else seconds
    model = most.model
    shunned = {j for j, b in enumerate(model.bins) if b.cluster in clusters}
    on_bin, on_store = most.on_bin, most.on_store
    value = sum(n for (j, _), n in on_bin.items() if j in shunned)
    contents = [defaultdict(int) for _ in model.bins]
    for (j, k), n in on_bin.items():
        if j not in shunned:
            contents[j][k] = n
    off = restricted(model, set(range(len(model.bins))) - shunned)
    lp = placed_bound(off, 0.4 * seconds, target=most.placed - value, contents=[contents])
    bound = max(0, most.placed - lp.bound)
    if value > bound:
        left = seconds - (time.monotonic() - started)
        found = _search(model, on_bin, on_store, most.placed, max(0.1, left), workers, seed,
                        shunned)
        if found is not None:
            count, cp_bound, found_bin, found_store = found
            bound = max(bound, cp_bound)
            if count < value:
                value, on_bin, on_store = count, found_bin, found_store
    placement = (most.placement if on_bin is most.on_bin
                 else _placement(model, on_bin, on_store))
    return FewestOn(placement, value, bound, time.monotonic() - started)


def _search(model: CountModel, start_bins: dict[tuple[int, int], int],
            start_stores: dict[tuple[int, str, str], int], bound: int, seconds: float,
            workers: int, seed: int, shunned: set[int] | None = None
            ) -> tuple[int, int, dict[tuple[int, int], int],
                       dict[tuple[int, str, str], int]] | None:
    """CP-SAT on the count model hinted with ``start``: the most VMs placed, capped at
    ``bound``, or with ``shunned`` bins, exactly ``bound`` VMs placed and the fewest of them
    on those bins. Returns (the value, its proven bound, counts per (bin, type), per (type,
    cluster, datastore))."""
    bins, types = model.bins, model.types
    m = cp_model.CpModel()
    p: dict[tuple[int, int], cp_model.IntVar] = {}
    for k, t in enumerate(types):
        for j in t.bins:
            b = bins[j]
            most = len(t.members)
            if t.cpu:
                most = min(most, max(0, b.cpu) // t.cpu)
            if t.memory:
                most = min(most, max(0, b.memory) // t.memory)
            if most > 0:
                p[(j, k)] = m.NewIntVar(0, most, "")
    w: dict[tuple[int, str, str], cp_model.IntVar] = {}
    for k, t in enumerate(types):
        for c, stores in t.stores.items():
            on_cluster = [p[(j, k)] for j in t.bins if bins[j].cluster == c and (j, k) in p]
            if not on_cluster:
                continue
            here = [w.setdefault((k, c, d), m.NewIntVar(0, len(t.members), "")) for d in stores]
            m.Add(sum(here) == sum(on_cluster))
    for k, t in enumerate(types):
        mine = [v for (j, kk), v in p.items() if kk == k]
        if mine:
            m.Add(sum(mine) <= len(t.members))
    by_bin: dict[int, list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
    for (j, k), v in p.items():
        by_bin[j].append((k, v))
    by_cluster: dict[str, list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
    for j, content in by_bin.items():
        b = bins[j]
        m.Add(sum(types[k].cpu * v for k, v in content) <= b.cpu)
        m.Add(sum(types[k].memory * v for k, v in content) <= b.memory)
        by_cluster[b.cluster] += content
    for c, (cpu, memory) in model.cluster_room.items():
        content = by_cluster.get(c, [])
        if content:
            m.Add(sum(types[k].cpu * v for k, v in content) <= cpu)
            m.Add(sum(types[k].memory * v for k, v in content) <= memory)
    by_store: dict[str, list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
    for (k, _, d), v in w.items():
        by_store[d].append((k, v))
    for d, content in by_store.items():
        room, iops = model.store_room[d]
        m.Add(sum(types[k].storage * v for k, v in content) <= room)
        if iops is not None:
            m.Add(sum(types[k].iops * v for k, v in content) <= iops)
    type_of = model.type_of
    for kind, scope, members, fixed in model.rules:
        at: dict[str, list[cp_model.IntVar]] = defaultdict(list)
        for vm in members:
            k = type_of[vm]
            if scope == "datastore":
                for (kk, _, d), v in w.items():
                    if kk == k:
                        at[d].append(v)
            else:
                for (j, kk), v in p.items():
                    if kk == k:
                        at[bins[j].cluster].append(v)
        if kind == "apart":
            for item, vs in at.items():
                m.Add(sum(vs) + (1 if item in fixed else 0) <= 1)
        else:
            used = {item: m.NewBoolVar("") for item in sorted(set(at) | fixed)}
            for item, vs in at.items():  # a ruled VM is a type of its own: 0 or 1
                for v in vs:
                    m.Add(v <= used[item])
            for item in fixed:
                m.Add(used[item] == 1)
            m.Add(sum(used.values()) <= 1)
    total = sum(p.values())
    if shunned is None:
        m.Add(total <= bound)
        m.Maximize(total)
    else:
        m.Add(total == bound)
        m.Minimize(sum(v for (j, _), v in p.items() if j in shunned))
    for key, v in p.items():
        m.AddHint(v, start_bins.get(key, 0))
    for key, v in w.items():
        m.AddHint(v, start_stores.get(key, 0))
    solver = new_solver()
    if math.isfinite(seconds):
        solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    solver.parameters.relative_gap_limit = 0.0
    solver.parameters.absolute_gap_limit = 0.0
    status = solver.Solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    cp_bound = (math.floor(solver.BestObjectiveBound() + BOUND_SLACK) if shunned is None
                else math.ceil(solver.BestObjectiveBound() - BOUND_SLACK))
    on_bin = {key: solver.Value(v) for key, v in p.items()}
    on_store = {key: solver.Value(v) for key, v in w.items()}
    return int(round(solver.ObjectiveValue())), cp_bound, on_bin, on_store


def _placement(model: CountModel, on_bin: dict[tuple[int, int], int],
               on_store: dict[tuple[int, str, str], int]
               ) -> dict[str, tuple[str, str, str | None] | None]:
    """Counts per (bin, type) and (type, cluster, datastore) as a placement of the VMs,
    the members of each type in order."""
    bins = model.bins
    placement: dict[str, tuple[str, str, str | None] | None] = {}
    for k, t in enumerate(model.types):
        hosts: dict[str, list[str | None]] = defaultdict(list)
        for j in t.bins:
            hosts[bins[j].cluster] += [bins[j].host] * on_bin.get((j, k), 0)
        spots = []
        for c, on_hosts in hosts.items():
            stores = [d for d in t.stores[c] for _ in range(on_store.get((k, c, d), 0))]
            spots += [(c, d, h) for h, d in zip(on_hosts, stores)]
        for n, vm in enumerate(t.members):
            placement[vm] = spots[n] if n < len(spots) else None
    return placement


def _columns_search(model: CountModel, columns: list[tuple[int, dict[int, int]]],
                    start_bins: dict[tuple[int, int], int],
                    start_stores: dict[tuple[int, str, str], int], bound: int, seconds: float,
                    workers: int, seed: int
                    ) -> tuple[int, dict[tuple[int, int], int],
                               dict[tuple[int, str, str], int]] | None:
    """CP-SAT over the LP's columns (one content or none per bin, the disks free), capped
    at ``bound`` and hinted with ``start``: (placed, counts per (bin, type), per (type,
    cluster, datastore))."""
    bins, types = model.bins, model.types
    m = cp_model.CpModel()
    chosen = [m.NewBoolVar("") for _ in columns]
    start = {}
    for (j, k), n in start_bins.items():
        start.setdefault(j, {})[k] = n
    per_bin: dict[int, list] = defaultdict(list)
    per_type: dict[int, list] = defaultdict(list)
    per_link: dict[tuple[int, str], list] = defaultdict(list)
    per_cluster: dict[str, list] = defaultdict(list)
    for y, (j, content) in zip(chosen, columns):
        per_bin[j].append(y)
        for k, n in content.items():
            per_type[k].append(n * y)
            per_link[(k, bins[j].cluster)].append(n * y)
        per_cluster[bins[j].cluster].append(
            (sum(types[k].cpu * n for k, n in content.items()),
             sum(types[k].memory * n for k, n in content.items()), y))
        m.AddHint(y, start.get(j) == content)
    for ys in per_bin.values():
        m.AddAtMostOne(ys)
    for k, terms in per_type.items():
        m.Add(sum(terms) <= len(types[k].members))
    for c, (cpu, memory) in model.cluster_room.items():
        if per_cluster.get(c):
            m.Add(sum(a * y for a, _, y in per_cluster[c]) <= cpu)
            m.Add(sum(b * y for _, b, y in per_cluster[c]) <= memory)
    w = {}
    by_store: dict[str, list] = defaultdict(list)
    for (k, c), terms in per_link.items():
        here = []
        for d in types[k].stores[c]:
            w[(k, c, d)] = v = m.NewIntVar(0, len(types[k].members), "")
            m.AddHint(v, start_stores.get((k, c, d), 0))
            here.append(v)
            by_store[d].append((k, v))
        m.Add(sum(here) == sum(terms))
    for d, content in by_store.items():
        room, iops = model.store_room[d]
        m.Add(sum(types[k].storage * v for k, v in content) <= room)
        if iops is not None:
            m.Add(sum(types[k].iops * v for k, v in content) <= iops)
    total = sum(sum(content.values()) * y for y, (_, content) in zip(chosen, columns))
    m.Add(total <= bound)
    m.Maximize(total)
    solver = new_solver()
    solver.parameters.max_time_in_seconds = max(0.1, seconds)  # finite: see its caller
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    status = solver.Solve(m)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    on_bin: dict[tuple[int, int], int] = defaultdict(int)
    for y, (j, content) in zip(chosen, columns):
        if solver.Value(y):
            for k, n in content.items():
                on_bin[(j, k)] += n
    return (int(round(solver.ObjectiveValue())), dict(on_bin),
            {key: solver.Value(v) for key, v in w.items()})
