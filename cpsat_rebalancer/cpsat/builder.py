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

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from fractions import Fraction
from typing import NamedTuple

import numpy as np
from ortools.sat.python import cp_model

from ..errors import InputError, InternalError, OutOfTime
from ..problem import OUT_OF_SCOPE, Problem, Scope
from .classes import DimensionScale, integral_scale, item_groups, laminar_chain, object_classes
from .forms import INT_LIMIT, IntegerForms
from .linear import Lin


def hint_first(cp: cp_model.CpModel, values: list[int] | None) -> None:
    """Replace the hints by ``values`` for the model's first variables (None: no hint),
    written into the proto in bulk: ``add_hint`` per variable is slow on large models."""
    cp.clear_hints()
    if values is not None:
        cp.proto.solution_hint.vars.extend(range(len(values)))
        cp.proto.solution_hint.values.extend(values)



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



class CpBuilder(IntegerForms):
    """Owns the CpModel, the count variables and every shared expression specs compile to."""

    def __init__(self, problem: Problem, fixed: frozenset[int] = frozenset(),
                 non_accepting: frozenset[int] = frozenset(), named: set[int] | None = None,
                 aggregate: bool = True, dims: frozenset[str] | None = None, *,
                 accelerate: bool = True, seconds: float | None = None,
                 deadline: float | None = None):
        super().__init__()
        self.problem = problem
        # the dimensions objects are classed by (None: all; the count dimension always, as
        # the symmetry breaking's default key); only theirs have class values
        self.class_dims = None if dims is None else dims | {problem.count_dimension}
        self.cp = cp_model.CpModel()
        chain = laminar_chain(problem) if aggregate else None
        self.scope_chain = chain or []  # custom scopes, finest first, for decoding
        self.classes = object_classes(problem, set(named or ()) | set(fixed),
                                      by_initial_container=chain is None,
                                      dims=self.class_dims)
        self._scales: dict[str, DimensionScale] = {}
        self._utils: dict[tuple[str, str], tuple[list[int], list[int] | None, np.ndarray]] = {}
        self._stays: dict[str, dict[tuple[int, int], tuple[object, int]]] = {}
        self._group_utils: dict[tuple, list[Lin]] = {}
        self._class_value_cache: dict[str, np.ndarray] = {}
        self._var_value_cache: dict[str, np.ndarray] = {}
        self.guard: object | None = None  # when set, hard rules hold only if it is true
        # valid redundant constraints (bounds, symmetry breaking) that speed up proofs
        self.accelerate = accelerate
        # assignments a spec's compiler proposes as the start (checked by the evaluator)
        self.suggested_starts: list[np.ndarray] = []
        # per class, the most of its objects that may leave their initial containers under
        # the move limits compiled so far (None: no limit); only heuristic starts read it,
        # the model itself holds the limits
        self.move_caps: np.ndarray | None = None
        # levels of a goal from its relaxation's bound up, each a search held there (see
        # TargetProbe and solve.probes)
        self.target_probes: list[TargetProbe] = []
        # the solve's time limit: it sizes the work of searches run while compiling (a
        # count, so the same limit always builds the same model); None: no limit
        self.seconds = seconds
        self.deadline = deadline  # time.monotonic() at which the solve's time limit ends
        self.container_classes: list[np.ndarray] = []
        self.symmetry: object | None = None  # literal enforcing the container order
        self._class_rank = np.zeros(0, dtype=np.int64)  # cache of class_rank()
        self._order_dim = ""
        self._build_counts(fixed, non_accepting)

    def check_time(self) -> None:
        """Stop building (OutOfTime) once the solve's time limit has passed: on a large model
        the pieces of one goal alone can take longer than a short limit."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise OutOfTime

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

    def cap_moves(self, classes: list[int], most: list[int]) -> None:
        """Record that at most ``most[i]`` objects of class ``classes[i]`` may leave their
        initial containers (see ``move_caps``)."""
        if self.move_caps is None:
            self.move_caps = self.classes.sizes.copy()
        for k, limit in zip(classes, most):
            self.move_caps[k] = min(int(self.move_caps[k]), max(0, int(limit)))

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

    @contextmanager
    def guarded(self, literal: object) -> Iterator[None]:
        """Hard rules required meanwhile hold only when ``literal`` is true (to explain an
        infeasibility by the rules CP-SAT needs)."""
        self.guard = literal
        try:
            yield
        finally:
            self.guard = None

    def fix(self, literal: object, value: int | None) -> None:
        """Fix a literal that switches constraints on or off, or free it (None): its domain
        is edited in place, as a CpModel cannot drop constraints."""
        domain = self.cp.Proto().variables[literal.index].domain
        domain.clear()
        domain.extend([0, 1] if value is None else [value, value])

    @contextmanager
    def scratch(self) -> Iterator[None]:
        """What is compiled meanwhile (an objective needed for one search) is dropped after:
        its constraints are emptied (a CpModel cannot delete one; an empty constraint
        constrains nothing), and the caches forget the forms built on them. Its variables
        stay, unconstrained, so solutions found meanwhile keep their length. A goal's pieces
        can be most of a model, which every later search, presolve and relaxation would
        otherwise carry."""
        constraints = len(self.cp.Proto().constraints)
        caches = (self._scales, self._utils, self._stays, self._group_utils, self._gates,
                  self.errors, self.overs)
        saved = [dict(cache) for cache in caches]
        probes, starts = len(self.target_probes), len(self.suggested_starts)
        try:
            yield
        finally:
            added = self.cp.Proto().constraints
            empty = cp_model.CpModel().Proto().constraints.add()
            for index in range(constraints, len(added)):
                added[index].copy_from(empty)
            for cache, before in zip(caches, saved):
                cache.clear()
                cache.update(before)
            del self.target_probes[probes:], self.suggested_starts[starts:]

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
            lost = np.argwhere((values != 0) & (scaled == 0))
            if len(lost):  # a size taken for 0 changes every step at 0: refused, not rounded
                where = lost[0]
                path = (f"objectDimensions.{dim}.{problem.objects[where[0]]}" if dynamic is None
                        else f"dynamicObjectDimensions.{dim}")
                raise InputError(path, "too small to model exactly beside the dimension's "
                                 f"largest value {float(np.abs(values).max()):g}: it is "
                                 f"modelled in steps of {1 / factor:g}, and this rounds to 0",
                                 float(values[tuple(where)]))
            most = float(scaled.sum() if dynamic is None else scaled.max(axis=1).sum())
            if most >= INT_LIMIT // 4:
                raise InputError(f"objectDimensions.{dim}", "values too large to model in "
                                 "CP-SAT's 64-bit integers (total of the dimension)",
                                 most / factor)
            ints = scaled.astype(np.int64)
            # the values' common factor is divided out: a load that is a large multiple of
            # one variable gets wrong bounds from CP-SAT's presolve (read by the
            # accelerators), and smaller coefficients serve every solve
            common = max(1, int(np.gcd.reduce(np.abs(ints.ravel())))) if ints.size else 1
            ints //= common
            unit = Fraction(factor, common)  # integer value = value * unit
            if dynamic is None:
                self._scales[dim] = DimensionScale(unit, ints, error)
            else:
                scope = problem.scopes[dynamic.scope]
                at_initial = np.round(dynamic.values_at(scope, problem.initial) * factor)
                self._scales[dim] = DimensionScale(
                    unit, at_initial.astype(np.int64) // common, error, ints)
            if error:
                self.note_error(f"dimension {dim} rounding (per object)", error)
        return self._scales[dim]

    # ---- utilizations ----
    def _class_values(self, dim: str) -> np.ndarray:
        """Integer value of a static ``dim`` per class (built once per dimension: specs read
        it per partition group; read-only)."""
        if dim in self.problem.dynamic_dims:
            raise InternalError(f"dimension {dim} is dynamic: its value depends on where")
        self._check_classed(dim)
        if dim not in self._class_value_cache:
            ints = self.scale(dim).values
            first = np.asarray([m[0] for m in self.classes.members], dtype=np.int64)
            values = ints[first].astype(np.int64) if len(first) else np.zeros(0, np.int64)
            values.flags.writeable = False
            self._class_value_cache[dim] = values
        return self._class_value_cache[dim]

    def _check_classed(self, dim: str) -> None:
        if self.class_dims is not None and dim not in self.class_dims:
            raise InternalError(f"dimension {dim} is read by no spec: a class's objects may "
                                "differ in it")

    def var_values(self, dim: str) -> np.ndarray:
        """Integer value of ``dim`` per count variable: of its class, in its container."""
        scale = self.scale(dim)
        if scale.table is None:
            if dim not in self._var_value_cache:
                values = self._class_values(dim)[self.var_class]
                values.flags.writeable = False
                self._var_value_cache[dim] = values
            return self._var_value_cache[dim]
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
            initial_util = self._item_totals(scope, ints, self.problem.initial)
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
            reference_util = self._item_totals(scope, ints, self.problem.reference)
            self._utils[key] = (after, None, reference_util)
        after, stays, reference_util = self._utils[key]
        if stayed and stays is None:
            ints = self.scale(dim).values
            class_value = self._class_values(dim)
            by_item: list[list[tuple[object, int]]] = [[] for _ in range(len(scope.items))]
            for (k, group), (expr, _) in self.stay_counts(scope).items():
                if group < len(scope.items) and class_value[k] != 0:
                    by_item[group].append((expr, int(class_value[k])))
            start = self._item_totals(scope, ints, self.problem.initial)
            offset = self._in_flight_stays(scope, ints)
            stays = [self.new_atom((cp_model.LinearExpr.weighted_sum(
                [e for e, _ in terms], [v for _, v in terms]) if terms else 0) - int(offset[i]),
                0, int(start[i] - offset[i]), int(start[i] - offset[i]))
                for i, terms in enumerate(by_item)]
            self._utils[key] = (after, stays, reference_util)
        return self._utils[key]

    @staticmethod
    def _item_totals(scope: Scope, ints: np.ndarray, where: np.ndarray,
                     members: np.ndarray | None = None) -> np.ndarray:
        """Integer total per item of ``scope`` of the objects (``members``, default all) with
        each object in ``where[o]``."""
        chosen = np.arange(len(where)) if members is None else members
        items = scope.container_item[where[chosen]]
        totals = np.zeros(len(scope.items), dtype=np.int64)
        inside = items != OUT_OF_SCOPE
        np.add.at(totals, items[inside], ints[chosen][inside])
        return totals

    def _in_flight(self, members: np.ndarray | None = None) -> np.ndarray:
        """Objects (among ``members``) whose move is already in flight (Problem.origin)."""
        problem = self.problem
        if problem.origin is None:
            return np.zeros(0, dtype=np.int64)
        moving = np.flatnonzero(problem.origin != problem.initial)
        return moving if members is None else np.intersect1d(moving, members)

    def _in_flight_stays(self, scope: Scope, ints: np.ndarray,
                         members: np.ndarray | None = None) -> np.ndarray:
        """Per item: the stay counts (kept from the start) count objects in flight to an item
        other than their origin's as staying; STAYED, counted from the origin, does not.
        Such objects are fixed at their destination, so the difference is a constant."""
        moving = self._in_flight(members)
        start = scope.container_item[self.problem.initial[moving]]
        origin = scope.container_item[self.problem.reference[moving]]
        left = (start != origin) & (start != OUT_OF_SCOPE)
        offset = np.zeros(len(scope.items), dtype=np.int64)
        np.add.at(offset, start[left], ints[moving][left])
        return offset

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
        forms = {  # only the metric asked for is built: one per item adds up on large scopes
            "AFTER": lambda a, init, s: a, "INITIAL": lambda a, init, s: Lin(const=init),
            "STAYED": lambda a, init, s: s, "DURING": lambda a, init, s: a + init - s,
            "NEW": lambda a, init, s: a - s, "OLD": lambda a, init, s: (s * -1) + init,
            "MOVED": lambda a, init, s: a + init - s * 2}[metric]
        result = []
        for i in range(len(scope.items)):
            a, init = Lin.atom(after[i], unit), initial[i] * unit
            s = Lin.atom(stayed[i], unit) if stayed is not None else Lin()
            result.append(forms(a, init, s))
        return result

    def initial_util(self, scope: Scope, dim: str) -> list[Fraction]:
        """Exact utilization per item at the start (AFTER of the initial assignment)."""
        start = self._item_totals(scope, self.scale(dim).values, self.problem.initial)
        unit = Fraction(1, self.scale(dim).factor)
        return [int(v) * unit for v in start]

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
        # objects in flight from inside the scope to outside it moved out for the origin
        moving = self._in_flight()
        start = scope.container_item[self.problem.initial[moving]]
        origin = scope.container_item[self.problem.reference[moving]]
        gone = int(self.scale(dim).values[moving][(start == OUT_OF_SCOPE)
                                                  & (origin != OUT_OF_SCOPE)].sum())
        unit = Fraction(1, self.scale(dim).factor)
        if not len(outside) and not stays:  # the scope covers every container: a constant
            return Lin(const=gone * unit)  # (whose wide bounds would coarsen every form)
        atom = self.new_atom(arrived - stayed + gone, -total, total, gone)
        return Lin.atom(atom, unit)

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
            initial = self._item_totals(scope, ints, self.problem.initial, members)
            reference = self._item_totals(scope, ints, self.problem.reference, members)
            offset = self._in_flight_stays(scope, ints, members)
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

            def atom(terms: list[tuple[object, int]], hi: int, start: int, less: int = 0) -> Lin:
                if not terms:
                    return Lin()
                expr = cp_model.LinearExpr.weighted_sum([e for e, _ in terms],
                                                        [c for _, c in terms])
                return Lin.atom(self.new_atom(expr - less, 0, hi, start), unit)

            result = []
            for i in range(n_items):
                start, less = int(initial[i]), int(offset[i])
                a = atom(after[i], total, start)
                s = atom(stayed[i], start - less, start - less, less)
                init = Lin(const=int(reference[i]) * unit)
                result.append({"AFTER": a, "INITIAL": init, "STAYED": s,
                               "DURING": a + init - s}[metric])
            self._group_utils[key] = result
        return self._group_utils[key]

