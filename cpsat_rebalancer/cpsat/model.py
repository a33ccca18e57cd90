"""The CP-SAT model of an assignment problem: object classes, count variables, utilizations.

Objects with the same dimension values and partition groups, and not named individually by
any spec, are interchangeable: they form a *class*, and the model holds one integer count per
(class, allowed container) instead of one boolean per object. The objects of a class that
stay in a scope item number min(final count, initial count) there, so STAYED (and with it
DURING, NEW, OLD, MOVED) is exact through one min per (class, item) that needs it; decoding
realises those minima for every scope at once when the scopes nest (a laminar family, the
usual container < rack < region). When they cross, classes are also split by initial
container, which makes every definition linear. A singleton class is the general case.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple

import numpy as np
from ortools.sat.python import cp_model

from ..errors import InputError, InternalError
from ..problem import OUT_OF_SCOPE, Problem, Scope
from ..specs.common import TOLERANCE
from .linear import Lin

INT_LIMIT = 2**60  # keep every integerized expression's magnitude below this
# a form that defines a new variable (an excess, a maximum) is exact only up to this scale,
# else rounded to the finest power of ten within it: the variables' domains then stay small
# enough that many of them (a LINEAR balance of 70 racks of distinct capacities at
# 50000x1000, each exact only at 10^17) still sum within CP-SAT's 64 bits
VARIABLE_LIMIT = 2**50
# an excess whose slope exceeds this many of its units per unit of its load is written in
# steps of the load (ModelBuilder._excess_in_steps): GLOP fails on rows 10^9 apart
WELL_SCALED = 2**20
DIGITS_TRIED = 9  # decimal digits tried to make a dimension integral


@dataclass
class Atom:
    expr: object  # CP-SAT integer expression (IntVar, LinearExpr or int)
    lo: int
    hi: int
    initial: int | None = None  # value at the initial assignment, when defined by the problem
    bounding: bool = False  # only bounds its value from above (exact under minimization only)


@dataclass
class Integerized:
    """``K·lin`` as an integer CP-SAT expression, with the rounding error bound (in value)."""

    expr: object
    factor: Fraction  # K
    lo: int
    hi: int
    error: float = 0.0


@dataclass(frozen=True)
class Info:
    """A constraint expression e (meaning e <= 0); with a gate, e counts only when gate > 0."""

    expr: Lin
    gate: Lin | None = None


@dataclass
class ObjectClasses:
    members: list[np.ndarray]  # object indices per class, ascending
    of_object: np.ndarray  # class index per object
    home: list[dict[int, int]]  # initial count per container, per class

    @property
    def sizes(self) -> np.ndarray:
        return np.asarray([len(m) for m in self.members], dtype=np.int64)


def object_classes(problem: Problem, named: set[int], by_initial_container: bool,
                   dims: frozenset[str] | None = None) -> ObjectClasses:
    """Group interchangeable objects: same values of the dimensions in ``dims`` (None: all;
    a dimension no spec reads cannot tell objects apart), same groups, not named by any spec
    (and the same initial container when ``by_initial_container``)."""
    n = problem.num_objects
    if n == 0:
        return ObjectClasses([], np.zeros(0, np.int64), [])
    columns = [problem.object_dims[d] for d in sorted(problem.object_dims)
               if dims is None or d in dims]
    for name in sorted(problem.dynamic_dims):
        if dims is None or name in dims:
            columns.extend(problem.dynamic_dims[name].by_item.T)
    if by_initial_container:
        columns.append(problem.initial.astype(float))
    for name in sorted(problem.partitions):
        group_of = np.full(n, -1.0)
        for g, members in enumerate(problem.partitions[name].values()):
            group_of[members] = g
        columns.append(group_of)
    singleton = np.zeros(n)
    if named:
        idx = np.fromiter(sorted(named), dtype=np.int64)
        singleton[idx] = idx + 1
    columns.append(singleton)
    keys = np.column_stack(columns)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    # order classes by their first object so class numbering follows the input
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    of_object = rank[inverse]
    sort = np.argsort(of_object, kind="stable")
    bounds = np.searchsorted(of_object[sort], np.arange(len(order) + 1))
    members = [sort[bounds[k]:bounds[k + 1]] for k in range(len(order))]
    home = []
    for m in members:
        containers, counts = np.unique(problem.initial[m], return_counts=True)
        home.append(dict(zip(containers.tolist(), counts.tolist())))
    return ObjectClasses(members, of_object, home)


def hint_first(cp: cp_model.CpModel, values: list[int] | None) -> None:
    """Replace the hints by ``values`` for the model's first variables (None: no hint),
    written into the proto in bulk: ``add_hint`` per variable is slow on large models."""
    cp.clear_hints()
    if values is not None:
        cp.proto.solution_hint.vars.extend(range(len(values)))
        cp.proto.solution_hint.values.extend(values)


def item_groups(scope: Scope) -> np.ndarray:
    """Item per container, with the out-of-scope containers as one more pseudo item."""
    return np.where(scope.container_item == OUT_OF_SCOPE, len(scope.items), scope.container_item)


def laminar_chain(problem: Problem) -> list[Scope] | None:
    """The custom scopes from finest to coarsest if each one's items lie inside the next
    one's (out-of-scope containers counting as one pseudo item); None if two scopes cross."""
    custom = [s for name, s in problem.scopes.items() if name != problem.container_name]
    custom.sort(key=lambda s: -len(np.unique(item_groups(s))))
    for finer, coarser in zip(custom, custom[1:]):
        fine, coarse = item_groups(finer), item_groups(coarser)
        for group in np.unique(fine):
            if len(np.unique(coarse[fine == group])) > 1:
                return None
    return custom


def integral_scale(values: np.ndarray) -> tuple[int, float]:
    """Smallest power of ten making ``values`` integral, and the rounding error per object."""
    top = float(np.max(np.abs(values))) if len(values) else 0.0
    for digits in range(DIGITS_TRIED + 1):
        scale = 10**digits
        scaled = values * scale
        if top * scale > 2**50:
            break
        # integral up to floating-point noise (0.1 * 10 = 1.0000000000000002), not more
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-7 + 1e-12 * np.abs(scaled)):
            return scale, 0.0
    digits = max(0, min(DIGITS_TRIED, int(math.floor(math.log10(2**50 / max(top, 1e-300))))))
    scale = 10**digits
    error = float(np.max(np.abs(values * scale - np.round(values * scale)))) / scale
    return scale, error


@dataclass
class DimensionScale:
    factor: int  # integer value = round(value * factor)
    values: np.ndarray  # integer value per object (int64) in its initial container
    error: float  # max |value - integer/factor| per object
    table: np.ndarray | None = None  # dynamic: integer value per (object, item of its scope)

    @property
    def most(self) -> int:
        """An upper bound on the total of the dimension, wherever objects go."""
        if self.table is None:
            return int(self.values.sum())
        return int(self.table.max(axis=1).sum())


class TargetProbe(NamedTuple):
    """A goal held at one level of its cost. ``gate``, in the model, is true iff the goal is
    at most the level. ``reduced`` is the assignment cut down to the (container, object)
    pairs that can be in one costing at most the level, minimizing that cost: a relaxation
    of the model held there (it keeps only rules the model implies), so what it proves empty
    is empty, and it finds candidates in a fraction of the time the whole model takes.
    ``pairs``: each of its literals with the model's count variable for the same pair."""
    level: int  # in the goal's own units (a GAP's cost)
    gate: object
    reduced: cp_model.CpModel
    pairs: list[tuple[object, object]]  # (literal in reduced, count variable in the model)


class ModelBuilder:
    """Owns the CpModel, the count variables and every shared expression specs compile to."""

    def __init__(self, problem: Problem, fixed: frozenset[int] = frozenset(),
                 non_accepting: frozenset[int] = frozenset(), named: set[int] | None = None,
                 aggregate: bool = True, dims: frozenset[str] | None = None):
        self.problem = problem
        # the dimensions objects are classed by (None: all; the count dimension always, as
        # the symmetry breaking's default key); only theirs have class values
        self.class_dims = None if dims is None else dims | {problem.count_dimension}
        self.cp = cp_model.CpModel()
        self.atoms: list[Atom] = []
        self.errors: dict[str, float] = {}
        chain = laminar_chain(problem) if aggregate else None
        self.scope_chain = chain or []  # custom scopes, finest first, for decoding
        self.classes = object_classes(problem, set(named or ()) | set(fixed),
                                      by_initial_container=chain is None,
                                      dims=self.class_dims)
        self._scales: dict[str, DimensionScale] = {}
        self._utils: dict[tuple[str, str], tuple[list[int], list[int] | None, np.ndarray]] = {}
        self._stays: dict[str, dict[tuple[int, int], tuple[object, int]]] = {}
        self._gates: dict[tuple, object] = {}
        self._group_utils: dict[tuple, list[Lin]] = {}
        self.guard: object | None = None  # when set, hard rules hold only if it is true
        # valid redundant constraints (bounds, symmetry breaking) that speed up proofs
        self.accelerate = True
        # assignments a spec's compiler proposes as the start (checked by the evaluator)
        self.suggested_starts: list[np.ndarray] = []
        # levels of a goal from its relaxation's bound up, each a search held there (see
        # TargetProbe and the driver's target probes)
        self.target_probes: list[TargetProbe] = []
        # the solve's time limit: it sizes the work of searches run while compiling (a
        # count, so the same limit always builds the same model); None: no limit
        self.seconds: float | None = None
        self.container_classes: list[np.ndarray] = []
        self.symmetry: object | None = None  # literal enforcing the container order
        self._class_rank = np.zeros(0, dtype=np.int64)  # cache of class_rank()
        self._order_dim = ""
        self._build_counts(fixed, non_accepting)

    # ---- variables ----
    def _build_counts(self, fixed: frozenset[int], non_accepting: frozenset[int]) -> None:
        """A count per (class, allowed container); non-accepting containers take no more of a
        class than they held; fixed objects (singletons) keep their container."""
        m = self.problem.num_containers
        accepting = np.ones(m, dtype=bool)
        accepting[list(non_accepting)] = False
        var_class, var_cont, variables, uppers = [], [], [], []
        self.class_vars: list[list[int]] = []
        for k, members in enumerate(self.classes.members):
            size = len(members)
            home = self.classes.home[k]
            if size == 1 and int(members[0]) in fixed:
                bounds = {next(iter(home)): 1}
            else:
                bounds = {int(c): size for c in np.flatnonzero(accepting)}
                for c, count in home.items():
                    bounds[c] = size if accepting[c] else count
                bounds = dict(sorted(bounds.items()))
            self.class_vars.append(list(range(len(variables), len(variables) + len(bounds))))
            row = []
            for c, upper in bounds.items():
                var = (self.cp.new_bool_var(f"x{k}_{c}") if size == 1
                       else self.cp.new_int_var(0, upper, f"n{k}_{c}"))
                row.append(var)
                var_class.append(k)
                var_cont.append(c)
                uppers.append(1 if size == 1 else upper)
            variables.extend(row)
            self.cp.add(sum(row) == size)
        self.var_class = np.asarray(var_class, dtype=np.int64)
        self.var_cont = np.asarray(var_cont, dtype=np.int64)
        self.count_vars = variables
        self.count_upper = np.asarray(uppers, dtype=np.int64)  # each count's domain bound

    def forbid(self, fixed: frozenset[int], non_accepting: frozenset[int]) -> None:
        """Restrictions as (guarded) constraints instead of domains, to explain infeasibility:
        fixed objects stay; non-accepting containers take no more of a class than they held."""
        literals = [self.guard] if self.guard is not None else []
        for obj in fixed:
            k = int(self.classes.of_object[obj])
            home = int(self.problem.initial[obj])
            for j in self.class_vars[k]:
                if self.var_cont[j] == home:
                    self.cp.add(self.count_vars[j] == 1).only_enforce_if(literals)
        for j, (k, c) in enumerate(zip(self.var_class, self.var_cont)):
            if int(c) in non_accepting:
                held = self.classes.home[int(k)].get(int(c), 0)
                self.cp.add(self.count_vars[j] <= held).only_enforce_if(literals)

    def initial_counts(self) -> list[int]:
        """Count variable values of the initial assignment (for hints)."""
        if self.container_classes:
            return self.counts_of(self.problem.initial)
        return [self.classes.home[k].get(int(c), 0)
                for k, c in zip(self.var_class, self.var_cont)]

    def initial_loads(self, dim: str) -> np.ndarray:
        """Integer load of ``dim`` per container at the initial counts (in the model's
        container order, which orders interchangeable containers)."""
        return self.loads_at(self.initial_counts(), dim)

    def loads_at(self, counts: list[int] | np.ndarray, dim: str) -> np.ndarray:
        """Integer load of ``dim`` per container at ``counts`` (one per count variable)."""
        load = np.zeros(self.problem.num_containers, dtype=np.int64)
        np.add.at(load, self.var_cont, np.asarray(counts, dtype=np.int64) * self.var_values(dim))
        return load

    def ordered(self, first: object, second: object) -> None:
        """``first >= second`` for two expressions of consecutive interchangeable containers,
        a spec's addition to the symmetry breaking (valid in the order it imposes)."""
        self.cp.add(first >= second).only_enforce_if(self.symmetry)

    def break_symmetry(self, container_classes: list[np.ndarray], dim: str) -> None:
        """Allow one order of each class of interchangeable containers: rank the object
        classes by decreasing ``dim`` and sort the containers by the best-ranked class they
        hold (empty ones last). Then the t-th container holds class k only if t < s_k + n_k,
        where s_k objects rank before class k and n_k are in it (each earlier container holds
        one of those objects): the largest object goes to the first container, and so on.
        Held under the ``symmetry`` literal, which the moves tie-break lifts (moves are the
        one thing a permutation changes)."""
        self._order_dim = dim
        if not container_classes:
            return
        self.container_classes = container_classes
        self.symmetry = self.cp.new_bool_var("symmetry_breaking")
        self.fix(self.symmetry, 1)
        order = np.argsort(self.class_rank())
        sizes = self.classes.sizes
        reach = np.empty(len(order), dtype=np.int64)  # s_k + n_k
        reach[order] = np.cumsum(sizes[order])
        position = {int(c): t for containers in container_classes
                    for t, c in enumerate(containers)}
        for j, (k, c) in enumerate(zip(self.var_class, self.var_cont)):
            t = position.get(int(c))
            if t is not None and t >= reach[k]:
                self.cp.add(self.count_vars[j] == 0).only_enforce_if(self.symmetry)

    def fix(self, literal: object, value: int | None) -> None:
        """Fix a literal that switches constraints on or off, or free it (None): its domain
        is edited in place, as a CpModel cannot drop constraints."""
        domain = self.cp.Proto().variables[literal.index].domain
        domain.clear()
        domain.extend([0, 1] if value is None else [value, value])

    @contextmanager
    def held(self, variables: list[object], value: int | Sequence[int]) -> Iterator[None]:
        """The variables fixed to ``value`` (one for all, or one each) meanwhile, their
        domains restored after."""
        domains = [self.cp.Proto().variables[var.index].domain for var in variables]
        saved = [list(domain) for domain in domains]
        values = [value] * len(domains) if isinstance(value, int) else value
        for domain, fixed in zip(domains, values, strict=True):
            domain.clear()
            domain.extend([fixed, fixed])
        try:
            yield
        finally:
            for domain, before in zip(domains, saved):
                domain.clear()
                domain.extend(before)

    def relax_symmetry(self) -> None:
        """Lift the container order."""
        if self.symmetry is not None:
            self.fix(self.symmetry, None)

    def class_rank(self) -> np.ndarray:
        """Rank of each object class by decreasing value in the order dimension (the count
        when none was chosen), ties by class index."""
        if len(self._class_rank) != len(self.classes.members):
            values = self._class_values(self._order_dim or self.problem.count_dimension)
            rank = np.empty(len(values), dtype=np.int64)
            rank[np.lexsort((np.arange(len(values)), -values))] = np.arange(len(values))
            self._class_rank = rank
        return self._class_rank

    def first_fit_order(self, by_container: bool = False) -> list[object]:
        """Count variables with the largest object classes (in the order dimension) first,
        containers in index order: with largest values tried first, a depth-first search
        in this order starts as first-fit decreasing. ``by_container``: containers first,
        each with its classes largest first (a search that completes one bin at a time)."""
        keys = (self.class_rank()[self.var_class], self.var_cont)
        order = np.lexsort(keys if by_container else keys[::-1])
        return [self.count_vars[j] for j in order]

    def canonical(self, assignment: np.ndarray) -> np.ndarray:
        """The same assignment with each class's containers permuted into the model's order
        (by the best-ranked object class they hold); every goal and constraint value is
        unchanged."""
        if not self.container_classes:
            return assignment
        rank = self.class_rank()
        first = np.full(self.problem.num_containers, len(rank), dtype=np.int64)
        np.minimum.at(first, assignment, rank[self.classes.of_object])
        target = np.arange(self.problem.num_containers)
        for containers in self.container_classes:
            target[containers[np.argsort(first[containers], kind="stable")]] = containers
        return target[assignment]

    def counts_of(self, assignment: np.ndarray) -> list[int] | None:
        """Count variable values of an assignment (in the model's container order); None if
        it puts an object where the model has no variable (a restriction forbids it)."""
        assignment = self.canonical(assignment)
        m = self.problem.num_containers
        var_keys = self.var_class * m + self.var_cont
        order = np.argsort(var_keys, kind="stable")
        keys = self.classes.of_object.astype(np.int64) * m + assignment
        slot = np.searchsorted(var_keys[order], keys)
        slot = np.minimum(slot, len(order) - 1) if len(order) else slot
        if len(keys) and (len(order) == 0 or np.any(var_keys[order][slot] != keys)):
            return None
        return np.bincount(order[slot], minlength=len(self.count_vars)).tolist()

    def decode(self, counts: list[int]) -> np.ndarray:
        """A concrete assignment from class counts that keeps, in every container and then in
        every scope item (finest scope first), as many of a class's objects as the counts
        allow, so STAYED is min(final, initial) everywhere, as the model assumed."""
        problem = self.problem
        final = problem.initial.copy()
        levels = [item_groups(scope) for scope in self.scope_chain]
        slots_of = np.zeros(problem.num_containers, dtype=np.int64)
        for k, members in enumerate(self.classes.members):
            chosen = self.class_vars[k]
            slots = {int(self.var_cont[j]): counts[j] for j in chosen if counts[j]}
            # keep objects in their own container while slots last (the first ones by index)
            homes = problem.initial[members]
            for c, count in slots.items():
                slots_of[c] = count
            order = np.argsort(homes, kind="stable")
            sorted_homes = homes[order]
            starts = np.searchsorted(sorted_homes, sorted_homes, side="left")
            rank = np.empty(len(members), dtype=np.int64)
            rank[order] = np.arange(len(members)) - starts
            keep = rank < slots_of[homes]
            for c, kept in zip(*np.unique(homes[keep], return_counts=True)):
                slots[int(c)] -= int(kept)
            for c in list(slots):
                slots_of[c] = 0
            waiting = members[~keep].tolist()
            for groups in levels + [None]:  # then within each scope item; then anywhere
                if not waiting:
                    break
                # the first container (in index order) of the object's group with a slot left
                open_by_group: dict[int | None, list[int]] = {}
                for c, left in slots.items():
                    if left > 0:
                        open_by_group.setdefault(None if groups is None else int(groups[c]),
                                                 []).append(c)
                next_open = dict.fromkeys(open_by_group, 0)
                still = []
                for obj in waiting:
                    group = None if groups is None else int(groups[problem.initial[obj]])
                    candidates = open_by_group.get(group, [])
                    i = next_open.get(group, 0)
                    while i < len(candidates) and slots[candidates[i]] == 0:
                        i += 1
                    if i == len(candidates):
                        still.append(obj)
                        continue
                    next_open[group] = i
                    slots[candidates[i]] -= 1
                    final[obj] = candidates[i]
                waiting = still
        return final

    def scale(self, dim: str) -> DimensionScale:
        if dim not in self._scales:
            problem = self.problem
            dynamic = problem.dynamic_dims.get(dim)
            values = problem.object_dims[dim] if dynamic is None else dynamic.by_item
            factor, error = integral_scale(values.ravel())
            scaled = np.round(values * factor)
            most = float(scaled.sum() if dynamic is None else scaled.max(axis=1).sum())
            if most >= INT_LIMIT // 4:
                raise InputError(f"objectDimensions.{dim}", "values too large to model in "
                                 "CP-SAT's 64-bit integers (total of the dimension)",
                                 most / factor)
            ints = scaled.astype(np.int64)
            if dynamic is None:
                self._scales[dim] = DimensionScale(factor, ints, error)
            else:
                scope = problem.scopes[dynamic.scope]
                at_initial = np.round(dynamic.values_at(scope, problem.initial) * factor)
                self._scales[dim] = DimensionScale(factor, at_initial.astype(np.int64), error,
                                                   ints)
            if error:
                self.errors[f"dimension {dim} rounding (per object)"] = error
        return self._scales[dim]

    def new_atom(self, expr: object, lo: int, hi: int, initial: int | None = None,
                 bounding: bool = False) -> int:
        self.atoms.append(Atom(expr, int(lo), int(hi), initial, bounding))
        return len(self.atoms) - 1

    def minimization_only(self, lin: Lin) -> bool:
        """Whether ``lin`` involves a variable that only bounds its value from above (excess,
        step, chords): minimizing it is exact, maximizing it is not."""
        return any(self.atoms[a].bounding for a, c in lin.terms.items() if c != 0)

    # ---- utilizations ----
    def _class_values(self, dim: str) -> np.ndarray:
        if dim in self.problem.dynamic_dims:
            raise InternalError(f"dimension {dim} is dynamic: its value depends on where")
        self._check_classed(dim)
        ints = self.scale(dim).values
        return np.asarray([int(ints[m[0]]) for m in self.classes.members], dtype=np.int64)

    def _check_classed(self, dim: str) -> None:
        if self.class_dims is not None and dim not in self.class_dims:
            raise InternalError(f"dimension {dim} is read by no spec: a class's objects may "
                                "differ in it")

    def var_values(self, dim: str) -> np.ndarray:
        """Integer value of ``dim`` per count variable: of its class, in its container."""
        scale = self.scale(dim)
        if scale.table is None:
            return self._class_values(dim)[self.var_class]
        self._check_classed(dim)
        dynamic = self.problem.dynamic_dims[dim]
        items = item_groups(self.problem.scopes[dynamic.scope])[self.var_cont]
        first = np.asarray([m[0] for m in self.classes.members], dtype=np.int64)
        return scale.table[first[self.var_class], items]

    def stay_counts(self, scope: Scope) -> dict[tuple[int, int], tuple[object, int]]:
        """Per (class, group) with initial objects there: how many stay, min(final, initial),
        as an expression and its upper bound. Groups are items plus the out-of-scope one."""
        if scope.name not in self._stays:
            groups = item_groups(scope)
            var_group = groups[self.var_cont]
            stays = {}
            for k, home in enumerate(self.classes.home):
                initial: dict[int, int] = {}
                for c, count in home.items():
                    initial[int(groups[c])] = initial.get(int(groups[c]), 0) + count
                size = len(self.classes.members[k])
                by_group: dict[int, list[int]] = {}
                for j in self.class_vars[k]:
                    by_group.setdefault(int(var_group[j]), []).append(j)
                for group, count in initial.items():
                    chosen = by_group.get(group, [])
                    final = (self.count_vars[chosen[0]] if len(chosen) == 1 else
                             sum(self.count_vars[j] for j in chosen) if chosen else 0)
                    if count >= size or not chosen:  # all of the class started here
                        stays[(k, group)] = (final, count)
                        continue
                    stay = self.cp.new_int_var(0, count, f"stay{k}_{scope.name}{group}")
                    self.cp.add_min_equality(stay, [final, count])
                    stays[(k, group)] = (stay, count)
            self._stays[scope.name] = stays
        return self._stays[scope.name]

    def _util_atoms(self, scope: Scope, dim: str, stayed: bool = True):
        """Atoms AFTER_i and STAYED_i (integer units; STAYED only built when asked for) and
        integer INITIAL_i per item."""
        key = (scope.name, dim)
        if key not in self._utils:
            ints = self.scale(dim).values
            n_items = len(scope.items)
            initial_item = scope.container_item[self.problem.initial]
            initial_util = np.zeros(n_items, dtype=np.int64)
            inside = initial_item != OUT_OF_SCOPE
            np.add.at(initial_util, initial_item[inside], ints[inside])
            item_of_var = scope.container_item[self.var_cont]
            coef = self.var_values(dim)
            order = np.argsort(item_of_var, kind="stable")
            bounds = np.searchsorted(item_of_var[order], np.arange(n_items + 1))
            total = self.scale(dim).most
            after = []
            for i in range(n_items):
                chosen = order[bounds[i]:bounds[i + 1]]
                chosen = chosen[coef[chosen] != 0]
                # a variable per load (not just an expression): presolve then derives its
                # bounds from every rule built on it, which load_caps() reads back
                load = self.cp.new_int_var(0, total, f"load_{scope.name}{i}_{dim}")
                self.cp.add(load == self._weighted(chosen, coef))
                after.append(self.new_atom(load, 0, total, int(initial_util[i])))
            self._utils[key] = (after, None, initial_util)
        after, stays, initial_util = self._utils[key]
        if stayed and stays is None:
            class_value = self._class_values(dim)
            by_item: list[list[tuple[object, int]]] = [[] for _ in range(len(scope.items))]
            for (k, group), (expr, _) in self.stay_counts(scope).items():
                if group < len(scope.items) and class_value[k] != 0:
                    by_item[group].append((expr, int(class_value[k])))
            stays = [self.new_atom(cp_model.LinearExpr.weighted_sum(
                [e for e, _ in terms], [v for _, v in terms]) if terms else 0,
                0, int(initial_util[i]), int(initial_util[i])) for i, terms in enumerate(by_item)]
            self._utils[key] = (after, stays, initial_util)
        return self._utils[key]

    def _weighted(self, chosen: np.ndarray, coef: np.ndarray) -> object:
        if len(chosen) == 0:
            return 0
        return cp_model.LinearExpr.weighted_sum([self.count_vars[j] for j in chosen],
                                                coef[chosen].tolist())

    def util(self, scope: Scope, dim: str, metric: str) -> list[Lin]:
        """Absolute utilization per item under a definition, on the user's scale."""
        after, stayed, initial = self._util_atoms(scope, dim, stayed=metric not in (
            "AFTER", "INITIAL"))
        unit = Fraction(1, self.scale(dim).factor)
        result = []
        for i in range(len(scope.items)):
            a, init = Lin.atom(after[i], unit), initial[i] * unit
            s = Lin.atom(stayed[i], unit) if stayed is not None else Lin()
            result.append({
                "AFTER": a, "INITIAL": Lin(const=init), "STAYED": s, "DURING": a + init - s,
                "NEW": a - s, "OLD": (s * -1) + init, "MOVED": a + init - s * 2,
            }[metric])
        return result

    def initial_util(self, scope: Scope, dim: str) -> list[Fraction]:
        """Exact initial utilization per item."""
        _, _, initial = self._util_atoms(scope, dim, stayed=False)
        unit = Fraction(1, self.scale(dim).factor)
        return [int(v) * unit for v in initial]

    def object_in_item(self, obj: int, scope: Scope, item: int) -> Lin:
        """1 when the (singleton-class) object ends in ``item`` of ``scope``."""
        k = int(self.classes.of_object[obj])
        assert len(self.classes.members[k]) == 1, "named objects are singleton classes"
        chosen = [j for j in self.class_vars[k]
                  if scope.container_item[self.var_cont[j]] == item]
        initial = int(scope.container_item[self.problem.initial[obj]] == item)
        if not chosen:
            return Lin()
        expr = sum(self.count_vars[j] for j in chosen)
        return Lin.atom(self.new_atom(expr, 0, 1, initial))

    def placement_value(self, scope: Scope, by_object: dict[int, dict[int, float]],
                        what: str = "rounding") -> Lin:
        """``Σ_o v(o, item of o)`` for singleton objects with values per item of ``scope``
        (0 in other items and out of scope), as one integer expression over their variables."""
        values = np.asarray([v for per_item in by_object.values() for v in per_item.values()])
        factor, error = integral_scale(values)
        self.note_error(f"{what} (value rounding per object)", error * len(by_object))
        variables, coefs = [], []
        lo = hi = initial = 0
        for obj, per_item in by_object.items():
            k = int(self.classes.of_object[obj])
            assert len(self.classes.members[k]) == 1, "valued objects are singleton classes"
            reachable = []
            for j in self.class_vars[k]:
                item = int(scope.container_item[self.var_cont[j]])
                value = round(per_item.get(item, 0.0) * factor)
                reachable.append(value)
                if value:
                    variables.append(self.count_vars[j])
                    coefs.append(value)
            lo += min(reachable)
            hi += max(reachable)
            start = int(scope.container_item[self.problem.initial[obj]])
            initial += round(per_item.get(start, 0.0) * factor)
        expr = cp_model.LinearExpr.weighted_sum(variables, coefs) if variables else 0
        return Lin.atom(self.new_atom(expr, lo, hi, initial), Fraction(1, factor))

    def out_of_scope_new(self, scope: Scope, dim: str) -> Lin:
        """Size of objects moved from inside ``scope`` to outside it (MinimizeMovement)."""
        class_value = self._class_values(dim)
        out = len(scope.items)
        outside = np.flatnonzero(scope.container_item[self.var_cont] == OUT_OF_SCOPE)
        coef = class_value[self.var_class]
        arrived = self._weighted(outside[coef[outside] != 0], coef)
        stays = [(e, int(class_value[k])) for (k, group), (e, _) in
                 self.stay_counts(scope).items() if group == out and class_value[k] != 0]
        stayed = (cp_model.LinearExpr.weighted_sum([e for e, _ in stays], [v for _, v in stays])
                  if stays else 0)
        total = int(self.scale(dim).values.sum())
        atom = self.new_atom(arrived - stayed, -total, total, 0)
        return Lin.atom(atom, Fraction(1, self.scale(dim).factor))

    # ---- evaluating forms ----
    def bounds(self, lin: Lin) -> tuple[Fraction, Fraction]:
        lo = hi = lin.const
        for a, c in lin.terms.items():
            atom = self.atoms[a]
            lo += min(c * atom.lo, c * atom.hi)
            hi += max(c * atom.lo, c * atom.hi)
        return lo, hi

    def initial_value(self, lin: Lin) -> Fraction:
        """Exact value of a form built from problem atoms at the initial assignment."""
        total = lin.const
        for a, c in lin.terms.items():
            initial = self.atoms[a].initial
            if initial is None:
                raise ValueError("form depends on a variable without an initial value")
            total += c * initial
        return total

    def integerize(self, lin: Lin, limit: int = INT_LIMIT) -> Integerized:
        return self.integerize_all([lin], limit)[0]

    def integerize_all(self, lins: list[Lin], limit: int = INT_LIMIT) -> list[Integerized]:
        """``K·lin`` for each form with one integer factor K: the least common denominator
        when magnitudes allow (exact, up to ``limit``), else a power of ten with the
        rounding error stated."""
        factor = 1
        magnitude = Fraction(0)
        for lin in lins:
            factor = math.lcm(factor, lin.const.denominator,
                              *(c.denominator for c in lin.terms.values()))
            magnitude = max(magnitude, abs(lin.const) + sum(
                abs(c) * max(abs(self.atoms[a].lo), abs(self.atoms[a].hi))
                for a, c in lin.terms.items()))
        if magnitude * factor > limit:
            if magnitude >= INT_LIMIT:
                raise InputError("", "numbers too large to model in CP-SAT's 64-bit integers",
                                 float(magnitude))
            factor = 10 ** max(0, int(math.floor(math.log10(limit / max(magnitude, 1)))))
        return [self._scaled(lin, factor) for lin in lins]

    def _scaled(self, lin: Lin, factor: int) -> Integerized:
        atoms, coefs = [], []
        error = Fraction(0)
        lo = hi = 0
        for a, c in lin.terms.items():
            if c == 0:
                continue
            atom = self.atoms[a]
            exact = c * factor
            coef = round(exact)
            error += abs(exact - coef) * max(abs(atom.lo), abs(atom.hi))
            if coef:
                atoms.append(atom.expr)
                coefs.append(coef)
                lo += min(coef * atom.lo, coef * atom.hi)
                hi += max(coef * atom.lo, coef * atom.hi)
        exact_const = lin.const * factor
        const = round(exact_const)
        error += abs(exact_const - const)
        expr = cp_model.LinearExpr.weighted_sum(atoms, coefs) + const if atoms else const
        return Integerized(expr, Fraction(factor), lo + const, hi + const, float(error / factor))

    def note_error(self, what: str, error: float) -> None:
        if error > 0:
            self.errors[what] = self.errors.get(what, 0.0) + error

    @contextmanager
    def errors_scaled(self, factor: float) -> Iterator[None]:
        """Errors noted meanwhile belong to terms the caller then scales by ``factor`` (a
        balance's mean over its items): they are kept at that scale. Stated n times too
        large, a SQUARES balance's error (5e-7 at 10000x500 for 1e-9) widened its freeze
        enough for the movement bucket to trade 1e-6 of balance, worse than local search."""
        before = dict(self.errors)
        yield
        for what, value in list(self.errors.items()):
            earlier = before.get(what, 0.0)
            self.errors[what] = earlier + (value - earlier) * factor

    # ---- building blocks specs compile to ----
    def gate(self, lin: Lin) -> object:
        """Literal true exactly when ``lin`` > 0 (lin integer-valued once integerized)."""
        key = (tuple(sorted(lin.terms.items())), lin.const)
        if key not in self._gates:
            form = self.integerize(lin)
            literal = self.cp.new_bool_var("gate")
            self.cp.add(form.expr >= 1).only_enforce_if(literal)
            self.cp.add(form.expr <= 0).only_enforce_if(literal.Not())
            self._gates[key] = literal
        return self._gates[key]

    def positive_part(self, lin: Lin, gate: Lin | None = None, what: str = "") -> Lin:
        """max(0, lin) as a form (a new integer variable), zero unless ``gate`` > 0."""
        form = self.integerize(lin, VARIABLE_LIMIT)
        self.note_error(what or "rounding", form.error)
        if form.hi <= 0:
            return Lin()
        if form.lo >= 0 and gate is None:
            return lin
        kink = self._kink(lin, form.factor) if gate is None else None
        if kink is not None and kink[0] > WELL_SCALED:
            return self._excess_in_steps(*kink, form.factor)
        z = self.cp.new_int_var(0, form.hi, "pos")
        constraint = self.cp.add(z >= form.expr)
        if gate is not None:
            constraint.only_enforce_if(self.gate(gate))
        elif kink is not None and self.accelerate:
            # the chord below a kink between integers f and f + 1: z >= s·(U - f), with s
            # the excess at f + 1, holds at every integer U (0 up to f, below the slope a
            # beyond) and makes the LP exact at the integers
            a, b, u, f, _ = kink
            if b % a:
                self.cp.add(z >= (a * (f + 1) + b) * (u - f))
        return Lin.atom(self.new_atom(z, 0, form.hi, bounding=True), 1 / form.factor)

    def _kink(self, lin: Lin, factor: Fraction) -> tuple[int, int, object, int, int] | None:
        """A one-atom form K·lin = a·U + b (K = ``factor``, rounded as ``_scaled`` rounds it)
        written with a > 0 over U = ±atom, whose kink -b/a lies in U's range, as
        (a, b, U, f = floor(-b/a), U's largest value); None for a form over several atoms."""
        live = [(a, c) for a, c in lin.terms.items() if c != 0]
        if len(live) != 1:
            return None
        atom = self.atoms[live[0][0]]
        a, b = round(live[0][1] * factor), round(lin.const * factor)
        sign = 1 if a > 0 else -1
        f = (-b) // abs(a)
        lo, hi = sorted((sign * atom.lo, sign * atom.hi))
        return (abs(a), b, atom.expr * sign, f, hi) if lo <= f < hi else None

    def _excess_in_steps(self, a: int, b: int, u: object, f: int, hi: int,
                         factor: Fraction) -> Lin:
        """max(0, a·U + b) over integers U as s·y + a·w, with y + w >= U - f, y in {0, 1},
        w >= 0 and s = a·(f + 1) + b, the excess at f + 1 (y is left out where the kink is
        at f itself: s = a). Exact under minimization, and its LP is the hull at the
        integers, in a row of unit coefficients: a rack balance's z >= a·U + b, with a
        near 10^9 against z's 1, left GLOP ABNORMAL at 3000x300."""
        s = a * (f + 1) + b
        w = self.cp.new_int_var(0, hi - f, "steps")
        excess = Lin.atom(self.new_atom(w, 0, hi - f, bounding=True), a / factor)
        if s == a:
            self.cp.add(w >= u - f)
            return excess
        y = self.cp.new_bool_var("first_step")
        self.cp.add(y + w >= u - f)
        return excess + Lin.atom(self.new_atom(y, 0, 1, bounding=True), s / factor)

    @staticmethod
    def tolerance_units(form: Integerized) -> int:
        """Rebalancer's 1e-10 comparison tolerance in the integer units of ``form``: a rule
        e <= 0 holds, and step(e) is 0, up to e = 1e-10 (zero unless the units are finer)."""
        return math.floor(form.factor * TOLERANCE)

    def step(self, lin: Lin, gate: Lin | None = None) -> Lin:
        """1 when lin > 0 (and gate > 0), else 0: Rebalancer's step(e)."""
        form = self.integerize(lin)
        if form.hi <= 0:
            return Lin()
        s = self.cp.new_bool_var("step")
        constraint = self.cp.add(form.expr <= self.tolerance_units(form)).only_enforce_if(s.Not())
        if gate is not None:
            constraint.only_enforce_if([s.Not(), self.gate(gate)])
        if form.lo > self.tolerance_units(form) and gate is None:
            self.cp.add(s == 1)
        return Lin.atom(self.new_atom(s, 0, 1, bounding=True))

    def used(self, load: Lin) -> Lin:
        """step(load) for a load that cannot be negative: 1 when the item holds anything.
        Beyond step's rule, the load is at most its largest feasible value times the
        literal: the linking an LP relaxation needs to bound the number of used items."""
        s = self.step(load)
        form = self.integerize(load)
        if not s.is_constant and form.lo >= 0 and self.tolerance_units(form) == 0:
            self.cp.add(form.expr <= form.hi * self.literal(s))
        return s

    def literal(self, lin: Lin) -> object:
        """The CP-SAT expression behind a one-atom form with coefficient 1 (a step's literal)."""
        live = [(a, c) for a, c in lin.terms.items() if c != 0]
        if not live:
            return int(lin.const)
        ((atom, coef),) = live
        assert coef == 1 and lin.const == 0, "a literal form is one atom with coefficient 1"
        return self.atoms[atom].expr

    def loads(self, scope: Scope, dim: str) -> list[object]:
        """The AFTER load expression per item (integer units of ``dim``)."""
        after, _, _ = self._util_atoms(scope, dim, stayed=False)
        return [self.atoms[a].expr for a in after]

    def container_loads(self) -> dict[str, list[object]]:
        """The AFTER load variable of every container, per dimension built so far."""
        name = self.problem.container_scope.name
        return {dim: [self.atoms[a].expr for a in built[0]]
                for (scope, dim), built in self._utils.items() if scope == name}

    def scope_loads(self, scope: Scope, dim: str) -> list[object] | None:
        """The AFTER load variable per item of ``scope`` if a spec built them, else None."""
        built = self._utils.get((scope.name, dim))
        return None if built is None else [self.atoms[a].expr for a in built[0]]

    def built_stays(self, scope: Scope) -> dict[tuple[int, int], tuple[object, int]] | None:
        """The stay counts of ``scope`` if a spec has built them (see stay_counts)."""
        return self._stays.get(scope.name)

    def load_bounds(self, scope: Scope, dim: str) -> np.ndarray | None:
        """Largest feasible AFTER load per item of ``scope`` (integer units of ``dim``), as
        hard constraints compiled so far have bounded it; None if no spec built the loads."""
        built = self._utils.get((scope.name, dim))
        if built is None:
            return None
        return np.asarray([self.atoms[a].hi for a in built[0]], dtype=np.int64)

    def require(self, lin: Lin, rhs: Fraction = Fraction(0), gate: Lin | None = None) -> None:
        """Hard rule lin <= rhs (only when gate > 0, if a gate is given)."""
        form = self.integerize(lin - rhs)
        slack = math.ceil(form.error * form.factor) + self.tolerance_units(form)
        if form.lo <= slack and form.hi <= slack:
            return
        literals = [self.gate(gate)] if gate is not None else []
        if self.guard is not None:
            literals.append(self.guard)
        elif gate is None and not form.error and not self.tolerance_units(form):
            self._tighten(lin - rhs)
        constraint = self.cp.add(form.expr <= slack)
        if literals:
            constraint.only_enforce_if(literals)

    def _tighten(self, lin: Lin) -> None:
        """An exact, unconditional hard rule c·atom + d <= 0 on one atom bounds that atom, so
        that everything built on it later (piecewise-linear ranges, domains) is tighter."""
        live = [(a, c) for a, c in lin.terms.items() if c != 0]
        if len(live) != 1:
            return
        coef, atom = live[0][1], self.atoms[live[0][0]]
        limit = -lin.const / coef
        if coef > 0:
            atom.hi = max(atom.lo, min(atom.hi, math.floor(limit)))
        else:
            atom.lo = min(atom.hi, max(atom.lo, math.ceil(limit)))

    def as_atom(self, lin: Lin) -> Lin:
        """The same form over a single atom (a new variable when it spans several), so that a
        function of it can be tabulated."""
        live = [a for a, c in lin.terms.items() if c != 0]
        if len(live) <= 1:
            return lin
        form = self.integerize(lin, VARIABLE_LIMIT)
        self.note_error("rounding", form.error)
        v = self.cp.new_int_var(form.lo, form.hi, "aux")
        self.cp.add(v == form.expr)
        initial = None
        if all(self.atoms[a].initial is not None for a in live):
            initial = round(self.initial_value(lin) * form.factor)
        return Lin.atom(self.new_atom(v, form.lo, form.hi, initial), 1 / form.factor)

    def exact_max(self, lins: list[Lin], what: str = "rounding") -> Lin:
        """A form equal to the max of ``lins`` (not only bounding it), for thresholds."""
        if all(lin.is_constant for lin in lins):
            return Lin(const=max(lin.const for lin in lins))
        forms = self.integerize_all(lins, VARIABLE_LIMIT)
        lo, hi = max(f.lo for f in forms), max(f.hi for f in forms)
        t = self.cp.new_int_var(lo, hi, "exact_max")
        self.cp.add_max_equality(t, [f.expr for f in forms])
        for f in forms:
            self.note_error(what, f.error)
        return Lin.atom(self.new_atom(t, lo, hi), 1 / forms[0].factor)

    def maximum(self, lins: list[Lin], what: str = "rounding") -> Lin:
        """A form at least every one of ``lins`` (equal to their max under minimization)."""
        if len(lins) == 1:
            return lins[0]
        forms = self.integerize_all(lins, VARIABLE_LIMIT)
        lo, hi = max(f.lo for f in forms), max(f.hi for f in forms)
        t = self.cp.new_int_var(lo, hi, "max")
        for f in forms:
            self.cp.add(t >= f.expr)
            self.note_error(what, f.error)
        return Lin.atom(self.new_atom(t, lo, hi, bounding=True), 1 / forms[0].factor)

    # ---- partition groups ----
    def group_classes(self, members: np.ndarray) -> list[int]:
        """The classes of one partition group's objects; classes never mix groups (they are
        keyed by every partition's group), which this checks."""
        classes = sorted({int(k) for k in self.classes.of_object[members]})
        if sum(len(self.classes.members[k]) for k in classes) != len(members):
            raise InternalError("an object class mixes partition groups")
        return classes

    def group_util(self, scope: Scope, dim: str, metric: str, members: np.ndarray) -> list[Lin]:
        """Utilization per item of ``scope`` counting only ``members`` (one partition group),
        under AFTER, INITIAL, STAYED or DURING, on the user's scale."""
        key = (scope.name, dim, metric, members.tobytes())
        if key not in self._group_utils:
            classes = self.group_classes(members)
            class_value = self._class_values(dim)
            unit = Fraction(1, self.scale(dim).factor)
            n_items = len(scope.items)
            ints = self.scale(dim).values
            initial = np.zeros(n_items, dtype=np.int64)
            where = scope.container_item[self.problem.initial[members]]
            inside = where != OUT_OF_SCOPE
            np.add.at(initial, where[inside], ints[members][inside])
            after: list[list[tuple[object, int]]] = [[] for _ in range(n_items)]
            stayed: list[list[tuple[object, int]]] = [[] for _ in range(n_items)]
            valued = [k for k in classes if class_value[k] != 0]
            if metric in ("AFTER", "DURING") and valued:
                chosen = np.concatenate([self.class_vars[k] for k in valued]).astype(np.int64)
                where = scope.container_item[self.var_cont[chosen]]
                coef = class_value[self.var_class[chosen]]
                for j, item, c in zip(chosen[where != OUT_OF_SCOPE].tolist(),
                                      where[where != OUT_OF_SCOPE].tolist(),
                                      coef[where != OUT_OF_SCOPE].tolist()):
                    after[item].append((self.count_vars[j], c))
            if metric in ("STAYED", "DURING"):
                stays = self.stay_counts(scope)
                for k in classes:
                    for item in range(n_items):
                        if (k, item) in stays and class_value[k] != 0:
                            stayed[item].append((stays[(k, item)][0], int(class_value[k])))
            total = int(ints[members].sum())

            def atom(terms: list[tuple[object, int]], hi: int, start: int) -> Lin:
                if not terms:
                    return Lin()
                expr = cp_model.LinearExpr.weighted_sum([e for e, _ in terms],
                                                        [c for _, c in terms])
                return Lin.atom(self.new_atom(expr, 0, hi, start), unit)

            result = []
            for i in range(n_items):
                start = int(initial[i])
                a = atom(after[i], total, start)
                s = atom(stayed[i], start, start)
                init = Lin(const=start * unit)
                result.append({"AFTER": a, "INITIAL": init, "STAYED": s,
                               "DURING": a + init - s}[metric])
            self._group_utils[key] = result
        return self._group_utils[key]
