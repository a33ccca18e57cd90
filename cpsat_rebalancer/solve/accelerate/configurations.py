"""A floor on the objects moved, from what each container can hold at the end (the
configuration LP, by column generation), and the searches its optimum points to.

A movement bucket after a frozen balance is a packing: the balance fixes how much each
container may hold (LINEAR thresholds can leave little room beyond the load itself), and
the fewest moves is an exact fill. The move cuts and the floor on moves
(``relaxation.moves_floor``) bound each container's loss of load by its largest objects,
but a container's contents are integers: it may have to shed more than its excess to land
on a load its remaining sizes can make up, and what one container sheds must be what the
others take, class by class. Both are the configuration LP's: one column per feasible
content of a container (a count per object class, within the load and count limits
CP-SAT's presolve reads back), the columns of each container a convex combination, every
class's columns summing to its objects, and the rules on loads (the load relaxation's
rows) between them. A variable those rules read only with one container's load (a
balance's excess, a SQUARES piece) is an attribute of each content, at the least value
its load allows, so the master mixes excesses, not loads (a total excess couples the
containers far more tightly then). Column generation prices a container's best content
by dynamic programming over one dimension's load (a bounded knapsack, whose gain per class
is concave in its count: its first objects stay, the rest arrive).

The floor is the Lagrangian bound of the master's duals, ``Σ y·b + min over each
container's contents and each variable's domain of its reduced cost``, evaluated with the
exact pricing: valid for any multipliers, so GLOP's tolerances cannot make it wrong, and
rounded up past the last bits of its floating-point sum only. The same sum gives
reduced-cost fixing: a solution below a target holds, in each container, a content whose
reduced cost is within target - bound of the least, which leaves each container a few
loads. The LP optimum's whole contents (often most containers') and those loads are what
the stages search next.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from ortools.linear_solver import linear_solver_pb2, pywraplp
from ortools.sat.python import cp_model

from ...cpsat.builder import CpBuilder
from .lp_bound import LinearRows, glop, linear_rows, snapshot
from .relaxation import loads_model, split_constraints
from .repair import presolved_bounds

TABLE_CELLS = 20_000  # the largest load (in the dimension's units) the pricing table spans
PRICING_WORK = 300_000_000  # table cells x knapsack items, over all rounds (seconds, not minutes)
PRESOLVE_SHARE = 0.3  # of the time, at most, to read back the load and count limits
PRICING_SHARE = 0.9  # of the time, at most, up to the end of the column generation
REDUCED_COST = 1e-7  # a column enters only below this reduced cost
ROUNDING = 1e-6  # the float sum's last bits: an integer floor is rounded up only past this
WHOLE = 1e-6  # an LP weight this close to 1 is a whole content (this close to 0, none)
IDLE_ROUNDS = 3  # a column out of the LP optimum this many solves in a row is held at 0,
RETIRE_COST = 1.0  # if its reduced cost is above this


@dataclass
class _Container:
    """One container's pricing data: its count variables, their classes' initial counts
    there, their domains and values per dimension, and its load window in the priced
    dimension (divided by the sizes' common divisor)."""
    index: int  # the container
    position: int  # in the master's list
    variables: np.ndarray  # count variable indices
    initial: np.ndarray  # initial count per variable
    lower: np.ndarray  # count domain per variable
    upper: np.ndarray
    values: dict[str, np.ndarray]  # dimension -> value per variable (integer units)
    low: int  # window of the priced dimension, in units of the common divisor
    high: int


@dataclass
class ConfigurationBound:
    floor: int  # objects moved, at least, in any solution of the model
    # count variable -> value in the containers whose content the LP optimum makes whole,
    # when the floor is below the target: a neighbourhood for the search (the others free)
    contents: dict[int, int] | None
    master: ConfigurationLP
    priced: float  # the Lagrangian bound of the last pricing (before rounding up)
    unassigned: int  # objects with no initial container: moved whatever happens

    def loads_below(self, moves: int) -> dict[int, np.ndarray] | None:
        """Reduced-cost fixing for solutions moving fewer than ``moves`` objects: per
        container, the loads (of ``master.priced``, integer units) its content can have;
        None when the last pricing gave no finite bound."""
        if not math.isfinite(self.priced):
            return None
        return self.master.load_domains(moves - 1 - self.unassigned - self.priced)


def configuration_bound(builder: CpBuilder, held: list[int], seconds: float,
                        run: Callable[[cp_model.CpSolver, cp_model.CpModel], int]
                        | None = None, work: float | None = None,
                        target: int | None = None,
                        floor: int = 0) -> ConfigurationBound | None:
    """A lower bound on the objects moved in any solution of the model (see the module
    docstring), and the contents its LP optimum makes whole; None where it does not apply
    (no moves or loads built, interchangeable containers ordered, loads too fine for the
    table) or nothing was priced in time. ``held`` is a solution of the model (every
    variable's value): its contents are the first columns; ``target``, its moves: pricing
    stops once the floor reaches it, or once the master's value is down to ``floor`` (a
    bound on moves already proven: more columns could not raise this one past it, and the
    LP's contents there are what the search needs). At most ``seconds`` (or, in a
    repeatable run, ``work`` deterministic seconds of presolve and PRICING_WORK of
    pricing)."""
    started = time.monotonic()
    deadline, until = started + PRICING_SHARE * seconds, started + seconds
    built = configuration_master(builder, held, PRESOLVE_SHARE * seconds, run, work,
                                 None if work is not None else until)
    if built is None or work is None and time.monotonic() >= until:
        return None
    master, unassigned = built
    budget = PRICING_WORK
    cost = sum(len(c.variables) * 2 * 8 * (c.high + 1) for c in master.containers)
    bound = priced = None  # the floor, and the last pricing's Lagrangian bound
    while work is not None or time.monotonic() < until:
        duals = master.solve()
        if duals is None or (work is not None and budget < cost):
            break
        budget -= cost
        priced, columns = master.lagrangian(duals)
        if not math.isfinite(priced):  # a container with no content to price: no bound
            break
        priced_floor = math.ceil(priced - ROUNDING) + unassigned
        bound = priced_floor if bound is None else max(bound, priced_floor)
        least = math.ceil(master.value + unassigned - ROUNDING)  # the master's, at most
        if (not columns or bound >= least or least <= floor
                or (target is not None and bound >= target)
                or (work is None and time.monotonic() > deadline)):
            break
        for container, counts in columns:
            master.add(container, counts)
    if bound is None or priced is None:
        return None
    contents = master.whole_contents() if target is None or bound < target else None
    return ConfigurationBound(bound, contents, master, priced, unassigned)


def configuration_master(builder: CpBuilder, held: list[int], seconds: float,
                         run: Callable[[cp_model.CpSolver, cp_model.CpModel], int]
                         | None = None, work: float | None = None,
                         until: float | None = None) -> tuple[ConfigurationLP, int] | None:
    """The configuration LP with the contents of ``held`` (and the initial ones that fit)
    as its first columns, and the number of objects with no initial container (moved
    whatever happens); None where it does not apply (see ``configuration_bound``).
    ``seconds`` and ``work`` bound the presolve that reads the limits; past ``until``
    (``time.monotonic()``) it gives up between its steps."""
    stays = builder.built_stays(builder.problem.container_scope)
    loads = {dim: variables for dim, variables in builder.container_loads().items()
             if dim not in builder.problem.dynamic_dims}
    if stays is None or not loads or builder.container_classes:
        return None
    kept, _, _ = split_constraints(builder)
    proto = snapshot(loads_model(builder, kept, loads, list(loads)))
    if until is not None and time.monotonic() >= until:
        return None
    rows = linear_rows(proto)
    used = sorted(set(rows.cols) | {v.Index() for vs in loads.values() for v in vs})
    counted = [v.Index() for v in builder.count_vars]
    bounds = presolved_bounds(builder, counted + used, (), seconds, run, work, held)
    if bounds is None or until is not None and time.monotonic() >= until:
        return None
    lows = np.asarray([v.domain[0] for v in proto.variables], dtype=np.int64)
    highs = np.asarray([v.domain[len(v.domain) - 1] for v in proto.variables], dtype=np.int64)
    lows[counted + used], highs[counted + used] = bounds
    priced = _priced_dimension(builder, loads, lows, highs)
    if priced is None:
        return None
    dim, divisor = priced
    containers = _containers(builder, loads, dim, divisor, lows, highs)
    if any(c.high < c.low for c in containers):
        return None  # no content fits: the model is infeasible, which its search will say
    unassigned = builder.problem.num_objects - int(
        sum(int(c.initial.sum()) for c in containers))
    master = ConfigurationLP(builder, loads, containers, dim, divisor, rows, used, lows, highs,
                             held, _stay_variables(builder, stays, containers))
    return master, unassigned


def _stay_variables(builder: CpBuilder, stays: dict[tuple[int, int], tuple[object, int]],
                    containers: list[_Container]) -> dict[int, tuple[int, int]]:
    """The model's stay variables (``min(final, initial)`` of a class in its initial
    container) that are variables of their own: each, by index, to its container's
    position and its count variable's position in that container's content."""
    found = {}
    for (k, c), (expr, _) in stays.items():
        if not isinstance(expr, cp_model.IntVar) or c >= len(containers):
            continue
        container = containers[c]
        for i, j in enumerate(container.variables.tolist()):
            if int(builder.var_class[j]) == k and expr.Index() != builder.count_vars[j].Index():
                found[expr.Index()] = (container.position, i)
    return found


def _priced_dimension(builder: CpBuilder, loads: dict[str, list[object]],
                      lows: np.ndarray, highs: np.ndarray) -> tuple[str, int] | None:
    """The dimension whose load windows are narrowest against its total (the one whose
    integrality the pricing must see), with its sizes' common divisor; None when its
    table would exceed TABLE_CELLS."""
    best = None
    for dim, variables in loads.items():
        index = [v.Index() for v in variables]
        total = int(builder.scale(dim).values.sum())
        if total <= 0:
            continue
        width = float((np.minimum(highs[index], total) - np.maximum(lows[index], 0)).sum())
        if best is None or width / total < best[0]:
            best = (width / total, dim, index)
    if best is None:
        return None
    _, dim, index = best
    values = builder.var_values(dim)
    divisor = int(np.gcd.reduce(values[values > 0])) if (values > 0).any() else 1
    if int(highs[index].max()) // divisor > TABLE_CELLS or (values < 0).any():
        return None
    return dim, divisor


def _containers(builder: CpBuilder, loads: dict[str, list[object]], dim: str,
                divisor: int, lows: np.ndarray, highs: np.ndarray) -> list[_Container]:
    count_index = np.asarray([v.Index() for v in builder.count_vars], dtype=np.int64)
    initial = np.asarray(builder.initial_counts(), dtype=np.int64)
    values = {d: builder.var_values(d) for d in loads}
    order = np.argsort(builder.var_cont, kind="stable")
    cuts = np.searchsorted(builder.var_cont[order], np.arange(builder.problem.num_containers))
    containers = []
    for c, load in enumerate(loads[dim]):
        chosen = order[cuts[c]:cuts[c + 1]] if c + 1 < len(cuts) else order[cuts[c]:]
        window = load.Index()
        containers.append(_Container(
            c, len(containers), chosen, initial[chosen], lows[count_index[chosen]],
            highs[count_index[chosen]],
            {d: v[chosen] for d, v in values.items()},
            -(-max(int(lows[window]), 0) // divisor), int(highs[window]) // divisor))
    return containers


@dataclass
class _Attribute:
    """A variable of the load relaxation that belongs to one container's content: its
    rows (``local``) read only it and the container's load in the priced dimension, and
    a lower value never hurts in its other rows (``rows``, with its coefficient there), so
    each content carries the least value its load allows (an excess, a piece of a
    power), and the master mixes those values, not the loads: stronger, as they are
    convex in the load."""
    variable: int  # in the master
    local: list[int]  # model rows it is read by alone with the load
    rows: list[tuple[int, int]]  # (model row, coefficient) of its other rows
    value: np.ndarray  # its least value per load (in units of the divisor)
    allowed: np.ndarray  # the loads at which its local rows hold


def _attributes(model_rows: list[list[tuple[int, int]]], lo: list[float], hi: list[float],
                priced_load: dict[int, int], lows: np.ndarray, highs: np.ndarray,
                cells: list[int], divisor: int) -> dict[int, list[_Attribute]]:
    """The attributes (see ``_Attribute``) of each container (by position), from the
    model rows (master variable, coefficient), their sides, the priced load variables
    (master variable -> container position) and every master variable's domain."""
    rows_of: dict[int, list[tuple[int, int]]] = {}  # variable -> (row, its coefficient)
    for r, terms in enumerate(model_rows):
        for k, coef in terms:
            rows_of.setdefault(k, []).append((r, coef))
    found: dict[int, list[_Attribute]] = {}
    for k, reading in rows_of.items():
        if k in priced_load:
            continue
        owner, local, other = None, [], []
        occurrences = Counter(r for r, _ in reading)
        for r, coef in reading:
            # the row's other terms, listed only when at most one: a total reads 1000s
            # of variables, and listing it for each of them would be quadratic
            size = len(model_rows[r]) - occurrences[r]
            others = [(u, a) for u, a in model_rows[r] if u != k] if size <= 1 else []
            if size == 1 and others[0][0] in priced_load:
                if owner not in (None, priced_load[others[0][0]]):
                    owner = -1
                    break
                owner = priced_load[others[0][0]]
                local.append((r, coef, others[0][1]))
            elif size == 0:
                local.append((r, coef, 0))
            elif (coef > 0 and math.isfinite(lo[r])) or (coef < 0 and math.isfinite(hi[r])):
                owner = -1  # a lower value could break this row: not an attribute
                break
            else:
                other.append((r, coef))
        if owner is None or owner < 0:
            continue
        load = np.arange(cells[owner], dtype=np.int64) * divisor
        least = np.full(len(load), int(lows[k]), dtype=np.int64)
        most = np.full(len(load), int(highs[k]), dtype=np.int64)
        for r, coef, per_load in local:
            for side, sign in ((lo[r], 1), (hi[r], -1)):
                if not math.isfinite(side):
                    continue
                rest = int(side) - per_load * load  # coef·x >= rest (sign 1) or <= rest
                if (coef > 0) == (sign > 0):
                    least = np.maximum(least, -((-rest) // coef))
                else:
                    most = np.minimum(most, rest // coef)
        found.setdefault(owner, []).append(_Attribute(
            k, [r for r, _, _ in local], other, least, least <= most))
    return found


def _best_content(container: _Container, dim: str, divisor: int, gain: np.ndarray,
                  extra: np.ndarray | None = None, bonus: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """max Σ_j (1 + bonus_j)·min(n_j, initial_j) - gain_j·n_j over the counts n within their
    domains whose load in ``dim`` lies in the container's window: a bounded knapsack over
    the exact load, each count split into its staying part (profit 1 + bonus - gain each)
    and its arriving part (profit -gain), each in binary chunks, plus ``extra`` per load (a
    multiple of the divisor; -inf where the load is not allowed). Returns the best value
    at each load and the counts of the best (at the window's best load). (Were a stay's
    profit below an arrival's, the table would take arrivals first: it then over-states
    the best value, which keeps a bound from it valid.)"""
    sizes = container.values[dim] // divisor
    lower, upper, initial = container.lower, container.upper, container.initial
    stay_profit = np.ones(len(sizes)) if bonus is None else 1.0 + bonus
    cells = container.high + 1
    value = np.full(cells, -np.inf)
    base_load = int((lower * sizes).sum())
    if base_load < cells:
        value[base_load] = float((np.minimum(lower, initial) * stay_profit
                                  - gain * lower).sum())
    room = max(0, container.high - base_load)
    parts = []  # (variable position, how many, profit each)
    arriving: dict[int, list[tuple[float, int, int]]] = {}  # size -> (profit, position, n)
    for j in range(len(sizes)):
        size = int(sizes[j])
        staying = max(0, int(min(initial[j], upper[j])) - int(lower[j]))
        extra_count = int(upper[j]) - int(lower[j]) - staying
        if size:
            staying = min(staying, room // size)
            extra_count = min(extra_count, room // size - staying)
        parts.append((j, staying, stay_profit[j] - gain[j]))
        if extra_count > 0:
            arriving.setdefault(size, []).append((-gain[j], j, extra_count))
    for size, options in arriving.items():
        # arrivals of one size: a solution takes a less profitable one only once the more
        # profitable ones are all taken, so those past the room are never needed
        fits = room // size if size else math.inf
        placed = 0
        for profit, j, number in sorted(options, key=lambda o: (-o[0], o[1])):
            if placed >= fits:
                break
            parts.append((j, number, profit))
            placed += number
    chunks: list[tuple[int, int, int, np.ndarray]] = []  # (position, how many, shift, better)
    for j, number, profit in parts:
        size = int(sizes[j])
        step = 1
        while number > 0:
            take = min(step, number)
            number -= take
            step *= 2
            shift = take * size
            if shift >= cells:
                continue
            candidate = value[:cells - shift] + take * profit
            better = candidate > value[shift:]
            np.maximum(value[shift:], candidate, out=value[shift:])
            chunks.append((j, take, shift, better))
    if extra is not None:
        value = value + extra
    best = int(np.argmax(value[container.low:])) + container.low
    counts = lower.copy()
    load = best
    for j, take, shift, better in reversed(chunks):
        if load >= shift and better[load - shift]:
            counts[j] += take
            load -= shift
    return value, counts


class ConfigurationLP:
    """The configuration LP: the load relaxation's variables and rows, one column per
    container content priced so far, and the rows that tie them: each container's loads
    equal its contents' (per dimension), one content per container (convexity), each
    class's objects all placed. Its objective is the objects leaving their container.
    A stay variable (``stay_of``: model variable -> container position and count
    position) is part of each content, ``min(n, initial)`` of its count there: the rows
    that read it (a move budget's stays, say) read the contents."""

    def __init__(self, builder: CpBuilder, loads: dict[str, list[object]],
                 containers: list[_Container], priced: str, divisor: int, rows: LinearRows,
                 used: list[int], lows: np.ndarray, highs: np.ndarray,
                 held: list[int], stay_of: dict[int, tuple[int, int]] | None = None) -> None:
        self.containers, self.dims = containers, list(loads)
        self.priced, self.divisor = priced, divisor
        # per container, from the last pricing: how far below its best each load's best
        # content is (its reduced cost above the least one)
        self.regret: list[np.ndarray] = [np.zeros(0)] * len(containers)
        self.solver = pywraplp.Solver.CreateSolver("GLOP")
        self.objective = self.solver.Objective()
        self.objective.SetMinimization()
        self.columns: dict[int, list[tuple[object, np.ndarray, float]]] = {}
        self.column_of: dict[tuple[int, bytes], int] = {}  # (container, counts) -> column
        self.idle: dict[int, int] = {}  # active column (LP index) -> solves out of the optimum
        position = {var: k for k, var in enumerate(used)}
        self.used = used  # the model variable of each master variable
        # the load relaxation's variables, within the domains every solution keeps
        self.var_lo, self.var_hi = lows[used].astype(float), highs[used].astype(float)
        self.variables = [self.solver.NumVar(lo, hi, "") for lo, hi in zip(self.var_lo,
                                                                           self.var_hi)]
        model_rows = [[(position[v], int(a)) for v, a in
                       zip(rows.cols[rows.starts[r]:rows.starts[r + 1]],
                           rows.coefs[rows.starts[r]:rows.starts[r + 1]])]
                      for r in range(len(rows.lo))]
        priced_load = {position[loads[priced][c.index].Index()]: c.position for c in containers}
        found = _attributes(model_rows, rows.lo, rows.hi, priced_load, lows[used], highs[used],
                            [c.high + 1 for c in containers], divisor)
        stays = {position[v]: at for v, at in (stay_of or {}).items() if v in position}
        found = {owner: [a for a in attributes if a.variable not in stays]
                 for owner, attributes in found.items()}
        local = {r for attributes in found.values() for a in attributes for r in a.local}
        moved = {a.variable for attributes in found.values() for a in attributes} | set(stays)
        self.rows = []  # (constraint, lo, hi)
        self.terms: list[list[tuple[int, float]]] = []  # per row: (master variable, coef)
        master_row = {}
        # each row divided by the geometric mean of its extreme coefficients: a balance's
        # rows mix integer scales 10^9 apart (GLOP failed on them, scaled or not)
        scale = [math.sqrt(max(abs(a) for _, a in terms) * min(abs(a) for _, a in terms))
                 if terms else 1.0 for terms in model_rows]
        for r, (lo, hi) in enumerate(zip(rows.lo, rows.hi)):
            if r not in local:
                master_row[r] = self._row(lo / scale[r], hi / scale[r],
                                          [(k, a / scale[r]) for k, a in model_rows[r]
                                           if k not in moved])
        # per container: its attributes (with their rows in the master) and the loads they
        # allow (in units of the divisor)
        self.attributes: list[list[tuple[np.ndarray, list[tuple[int, float]]]]] = []
        self.allowed: list[np.ndarray] = []
        for container in containers:
            allowed = np.ones(container.high + 1, dtype=bool)
            attributes = []
            for a in found.get(container.position, []):
                allowed &= a.allowed
                attributes.append((a.value, [(master_row[r], c / scale[r]) for r, c in a.rows]))
            self.attributes.append(attributes)
            self.allowed.append(allowed)
        # per container: (count position, its stay's rows in the master)
        self.stays: list[list[tuple[int, list[tuple[int, float]]]]] = [[] for _ in containers]
        reading: dict[int, list[tuple[int, float]]] = {k: [] for k in stays}
        for r, terms in enumerate(model_rows):
            for k, coef in terms:
                if k in reading:
                    reading[k].append((master_row[r], coef / scale[r]))
        for k, (owner, i) in stays.items():
            self.stays[owner].append((i, reading[k]))
        self.link: dict[tuple[int, str], int] = {}  # (container, dim) -> row
        for container in containers:
            for dim in self.dims:
                self.link[container.index, dim] = self._row(
                    0.0, 0.0, [(position[loads[dim][container.index].Index()], 1.0)])
        self.convexity = [self._row(1.0, 1.0, []) for _ in containers]
        self.class_of = builder.var_class
        self.class_sizes = builder.classes.sizes
        self.class_rows = [self._row(float(size), float(size), [])
                           for size in self.class_sizes.tolist()]
        # the rows' terms on the variables (row, variable, coefficient), fixed from here on
        flat = [(r, k, c) for r, terms in enumerate(self.terms) for k, c in terms]
        self.entries = (np.asarray([e[0] for e in flat], dtype=np.int64),
                        np.asarray([e[1] for e in flat], dtype=np.int64),
                        np.asarray([e[2] for e in flat], dtype=float))
        counts = np.asarray(held[:len(builder.count_vars)], dtype=np.int64)
        for container in containers:  # the held contents, and the initial ones that fit
            self.add(container, counts[container.variables])
            if self.fits(container, container.initial):
                self.add(container, container.initial)

    def fits(self, container: _Container, counts: np.ndarray) -> bool:
        """Whether ``counts`` is one of the contents the pricing ranges over."""
        load = int((counts * container.values[self.priced]).sum())
        cell = load // self.divisor
        return bool((counts >= container.lower).all() and (counts <= container.upper).all()
                    and container.low <= cell <= container.high
                    and self.allowed[container.position][cell])

    def _row(self, lo: float, hi: float, terms: list[tuple[int, float]]) -> int:
        constraint = self.solver.Constraint(lo, hi)
        for k, coef in terms:
            constraint.SetCoefficient(self.variables[k], coef)
        self.rows.append((constraint, lo, hi))
        self.terms.append(terms)
        return len(self.rows) - 1

    def add(self, container: _Container, counts: np.ndarray) -> None:
        """A column for ``counts`` (per count variable of ``container``), if new; a retired
        one is brought back."""
        known = self.columns.setdefault(container.index, [])
        key = (container.index, counts.tobytes())
        if key in self.column_of:
            column = known[self.column_of[key]][0]
            column.SetUb(self.solver.infinity())
            self.idle[column.index()] = 0
            return
        self.column_of[key] = len(known)
        moves = float(np.maximum(container.initial - counts, 0).sum())
        column = self.solver.NumVar(0.0, self.solver.infinity(), "")
        self.idle[column.index()] = 0
        self.objective.SetCoefficient(column, moves)
        for dim in self.dims:
            load = float((counts * container.values[dim]).sum())
            if load:
                self.rows[self.link[container.index, dim]][0].SetCoefficient(column, -load)
        self.rows[self.convexity[container.position]][0].SetCoefficient(column, 1.0)
        cell = int((counts * container.values[self.priced]).sum()) // self.divisor
        for value, attribute_rows in self.attributes[container.position]:
            for r, coef in attribute_rows:
                row = self.rows[r][0]
                row.SetCoefficient(column, row.GetCoefficient(column) + coef * float(value[cell]))
        for i, stay_rows in self.stays[container.position]:
            stayed = float(min(counts[i], container.initial[i]))
            for r, coef in stay_rows:
                row = self.rows[r][0]
                row.SetCoefficient(column, row.GetCoefficient(column) + coef * stayed)
        for j, number in zip(container.variables.tolist(), counts.tolist()):
            if number:
                row = self.rows[self.class_rows[int(self.class_of[j])]][0]
                row.SetCoefficient(column, row.GetCoefficient(column) + number)
        known.append((column, counts.copy(), moves))
        self.primal = None  # the LP optimum is not this master's until solved again

    def _retire(self, reduced: np.ndarray) -> None:
        """Hold at 0 the columns out of the LP optimum for IDLE_ROUNDS solves in a row and
        whose reduced cost is above RETIRE_COST (a move and more from entering): GLOP solves
        the master from scratch each time (its interface keeps no basis), so its time
        grows with the columns. The optimum does not use them, so it stays feasible; pricing
        brings back any that are needed again (columns near entering stay: retiring those
        can make the LP cycle)."""
        for index, rounds in list(self.idle.items()):
            if self.primal[index] > WHOLE or reduced[index] <= RETIRE_COST:
                self.idle[index] = 0
            elif rounds + 1 >= IDLE_ROUNDS:
                self.solver.variable(index).SetUb(0.0)
                del self.idle[index]
            else:
                self.idle[index] = rounds + 1

    def solve(self) -> np.ndarray | None:
        """The master's duals (one per row), or None when GLOP does not solve it. GLOP can
        end ABNORMAL or even INFEASIBLE on a feasible master (a rack balance's rows mix
        coefficients 10^9 apart); then from scratch with other settings (``glop``)."""
        response = linear_solver_pb2.MPSolutionResponse()
        started = time.monotonic()
        if self.solver.Solve() == pywraplp.Solver.OPTIMAL:
            self.solver.FillSolutionResponseProto(response)
        else:
            request = linear_solver_pb2.MPModelRequest(
                solver_type=linear_solver_pb2.MPModelRequest.GLOP_LINEAR_PROGRAMMING)
            self.solver.ExportModelToProto(request.model)
            response = glop(request, feasible=True, spent=time.monotonic() - started)
            if response is None:
                return None
        self.value = response.objective_value
        self.primal = np.asarray(response.variable_value, dtype=float)
        self._retire(np.asarray(response.reduced_cost, dtype=float))
        return np.asarray(response.dual_value, dtype=float)

    def lagrangian(self, duals: np.ndarray
                   ) -> tuple[float, list[tuple[_Container, np.ndarray]]]:
        """The Lagrangian bound of ``duals`` (each turned to 0 where its sign reads an
        open side, which keeps it valid) with every container's best content, and the
        contents of negative reduced cost (the next columns)."""
        y = duals.copy()
        total = 0.0
        for r, (_, lo, hi) in enumerate(self.rows):
            if y[r] > 0 and math.isfinite(lo):
                total += y[r] * lo
            elif y[r] < 0 and math.isfinite(hi):
                total += y[r] * hi
            else:
                y[r] = 0.0
        rows, variables, coefs = self.entries
        reduced = np.zeros(len(self.variables))
        np.subtract.at(reduced, variables, y[rows] * coefs)
        total += float(np.minimum(reduced * self.var_lo, reduced * self.var_hi).sum())
        magnitude = abs(total)
        columns = []
        class_price = np.asarray([y[r] for r in self.class_rows])
        for position, container in enumerate(self.containers):
            # a content n costs Σ max(0, initial - n) - y·(its column): with the link rows'
            # -load, the convexity row's 1 and the class rows' counts
            gain = -class_price[self.class_of[container.variables]]
            for d in self.dims:
                gain += y[self.link[container.index, d]] * container.values[d]
            extra = np.where(self.allowed[position], 0.0, -np.inf)
            for value, attribute_rows in self.attributes[position]:
                price = sum(y[r] * coef for r, coef in attribute_rows)
                if price:
                    extra = extra + price * value
            bonus = None
            if self.stays[position]:
                bonus = np.zeros(len(container.variables))
                for i, stay_rows in self.stays[position]:
                    bonus[i] += sum(y[r] * coef for r, coef in stay_rows)
            values, counts = _best_content(container, self.priced, self.divisor, gain, extra,
                                           bonus)
            best = float(values[container.low:].max())
            if not math.isfinite(best):
                return -math.inf, []
            self.regret[position] = best - values
            # its least reduced cost: the convexity row's side (counted above) is what the
            # Lagrangian keeps of the one content each container must hold
            lowest = float(container.initial.sum()) - best - y[self.convexity[position]]
            total += lowest
            magnitude += abs(lowest) + float(container.initial.sum())
            if lowest < -REDUCED_COST:
                columns.append((container, counts))
        return total - magnitude * 1e-12, columns

    def load_domains(self, gap: float) -> dict[int, np.ndarray]:
        """Reduced-cost fixing on loads, from the last ``lagrangian``: per container (its
        index), the loads (in the priced dimension's units) of the contents a solution can
        hold when its moves exceed that Lagrangian bound by at most ``gap``. A solution's
        moves are at least the bound plus, in each container, how far its content's reduced
        cost is above the least one (the other terms of the sum are not negative)."""
        return {c.index: (np.flatnonzero(self.regret[c.position][c.low:] <= gap + ROUNDING)
                          + c.low) * self.divisor
                for c in self.containers}

    def named_values(self, proto) -> dict[str, float]:
        """The LP optimum's value of each named model variable among the master's (a
        spec's auxiliaries: a budget's flow, say); empty when the master was not solved
        since its last column."""
        if self.primal is None:
            return {}
        return {proto.variables[v].name: float(self.primal[variable.index()])
                for v, variable in zip(self.used, self.variables)
                if proto.variables[v].name}

    def whole_contents(self) -> dict[int, int] | None:
        """Count variable -> value in every container whose LP content is whole (a single
        column at weight 1): at an LP optimum that is often most of them. None when the
        master was not solved since its last column."""
        if self.primal is None:
            return None
        held = {}
        for container in self.containers:
            known = self.columns.get(container.index, [])
            weights = [self.primal[column.index()] for column, _, _ in known]
            best = int(np.argmax(weights))
            if weights[best] >= 1 - WHOLE:
                held.update(zip(container.variables.tolist(), known[best][1].tolist()))
        return held
