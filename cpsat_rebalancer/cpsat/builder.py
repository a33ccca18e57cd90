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
from typing import NamedTuple

import numpy as np
from ortools.sat.python import cp_model

from ..errors import OutOfTime
from ..problem import Problem
from .classes import item_groups, laminar_chain, object_classes
from .domains import DomainCountingModel
from .utilization import Utilizations

# seconds of building count variables after which their pace predicts the rest (sooner, the
# interpreter's warm-up and a busy machine's pauses mislead it)
PACE_AFTER = 0.5
# seconds per CP-SAT variable, with room for a busy machine (calibrated in
# benchmarks/RESULTS.md, "a model's fixed costs"): handing the model to CP-SAT for one solve
# (paid before its own time limit starts), and freeing it
HANDOVER_SECONDS_PER_VARIABLE = 5e-6
TEARDOWN_SECONDS_PER_VARIABLE = 2.5e-6


def fixed_costs_of(variables: int) -> float:
    """Seconds to hand a model of ``variables`` CP-SAT variables to CP-SAT once and free it."""
    return (HANDOVER_SECONDS_PER_VARIABLE + TEARDOWN_SECONDS_PER_VARIABLE) * variables


def hint_first(cp: cp_model.CpModel, values: list[int] | None) -> None:
    """Replace the hints by ``values`` for the model's first variables (None: no hint),
    written into the proto in bulk: ``add_hint`` per variable is slow on large models."""
    cp.clear_hints()
    if values is not None:
        cp.proto.solution_hint.vars.extend(range(len(values)))
        cp.proto.solution_hint.values.extend(values)



CLASSES_PER_TIME_CHECK = 64  # classes whose counts are built between two looks at the clock


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



class CpBuilder(Utilizations):
    """Owns the CpModel, the count variables and every shared expression specs compile to."""

    def __init__(self, problem: Problem, fixed: frozenset[int] = frozenset(),
                 non_accepting: frozenset[int] = frozenset(), named: set[int] | None = None,
                 aggregate: bool = True, dims: frozenset[str] | None = None, *,
                 accelerate: bool = True, seconds: float | None = None,
                 deadline: float | None = None, held: dict[int, int] | None = None):
        super().__init__()
        self.problem = problem
        # the dimensions objects are classed by (None: all; the count dimension always, as
        # the symmetry breaking's default key); only theirs have class values
        self.class_dims = (None if dims is None else
                           problem.scalar_dimensions(dims) | {problem.count_dimension})
        self.cp = DomainCountingModel()
        chain = laminar_chain(problem) if aggregate else None
        self.scope_chain = chain or []  # custom scopes, finest first, for decoding
        self.classes = object_classes(problem, set(named or ()) | set(fixed) | set(held or {}),
                                      by_initial_container=chain is None,
                                      dims=self.class_dims)
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
        self.compiled = False  # set once compile_model has built the model
        self.container_classes: list[np.ndarray] = []
        # indices of redundant rows that tie a load-read literal to the counts (a
        # MinimizeContainers item's used literal to its stays): a relaxation over loads
        # leaves them out without taking the literal for one the assignment defines
        self.count_links: set[int] = set()
        self.symmetry: object | None = None  # literal enforcing the container order
        self._class_rank = np.zeros(0, dtype=np.int64)  # cache of class_rank()
        self._order_dim = ""
        self._build_counts(fixed, non_accepting, held or {})

    def check_build_time(self) -> None:
        """``check_time`` while the model is being compiled (``compiled`` not yet set): the
        pieces built after it, by the stages, have their own time checks."""
        if not self.compiled:
            self.check_time()

    def check_time(self) -> None:
        """Stop building (OutOfTime) once the solve's time limit has passed, less the fixed
        costs of what is built: on a large model the pieces of one goal alone can take longer
        than a short limit."""
        if self.deadline is not None and (
                time.monotonic() + self.fixed_costs() >= self.deadline):
            raise OutOfTime

    def fixed_costs(self) -> float:
        """About what handing the model built so far to CP-SAT once and freeing it take
        (seconds at millions of variables): a time limit holds those too."""
        return fixed_costs_of(len(self.cp.proto.variables))

    def _check_pace(self, started: float, built: int, total: int) -> None:
        """OutOfTime when, at the pace of the first ``built`` of about ``total`` variables,
        the rest cannot be created before the deadline, the fixed costs of all of them
        included."""
        if self.deadline is None or built == 0:
            return
        now = time.monotonic()
        if now - started >= PACE_AFTER and (
                (now - started) * (total - built) / built
                + fixed_costs_of(total) > self.deadline - now):
            raise OutOfTime

    # ---- variables ----
    def _build_counts(self, fixed: frozenset[int], non_accepting: frozenset[int],
                      held: dict[int, int]) -> None:
        """A count per (class, allowed container); non-accepting containers take no more of a
        class than they held; fixed objects (singletons) keep their container, and held ones
        stay in theirs."""
        m = self.problem.num_containers
        accepting = np.ones(m, dtype=bool)
        accepting[list(non_accepting)] = False
        var_class, var_cont, variables, uppers = [], [], [], []
        self.class_vars: list[list[int]] = []
        # objects of distinct sizes are a class each: at 10,000 x 500 that is 5 M counts, whose
        # creation alone takes minutes (and freeing them, seconds): the build stops at the
        # deadline, or as soon as its pace shows it cannot end before it
        total = len(self.classes.members) * max(int(accepting.sum()), 1)
        started = time.monotonic()
        for k, members in enumerate(self.classes.members):
            if k % CLASSES_PER_TIME_CHECK == 0:  # thousands of classes take seconds
                self.check_build_time()
                self._check_pace(started, len(variables), total)
            size = len(members)
            home = self.classes.home[k]
            if size == 1 and int(members[0]) in held:
                bounds = {held[int(members[0])]: 1}
            elif size == 1 and int(members[0]) in fixed:
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
        # the least each count can be: what its class's other counts cannot hold (a fixed
        # or held object's only count is 1), which raises the loads' least values
        room = np.bincount(self.var_class, weights=self.count_upper,
                           minlength=len(self.classes.members)).astype(np.int64)
        self.count_lower = np.maximum(0, self.classes.sizes[self.var_class]
                                      - (room[self.var_class] - self.count_upper))

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

    def pinned(self) -> np.ndarray:
        """Per count variable: whether it is its class's only one (a fixed or held object,
        which is always there)."""
        choices = np.asarray([len(v) for v in self.class_vars], dtype=np.int64)
        return choices[self.var_class] == 1

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
        caches = (self._scales, self._utils, self._stays, self._group_utils, self._peaks,
                  self._gates, self._quotients, self.errors, self.overs, self.roundings,
                  self.stayed_definitions)
        saved = [dict(cache) for cache in caches]
        probes, starts = len(self.target_probes), len(self.suggested_starts)
        outer = [(piece, piece.snapshot()) for piece in self.outer]  # cuts meanwhile: emptied
        try:
            yield
        finally:
            self.outer[:] = [piece for piece, _ in outer]
            for piece, state in outer:
                piece.restore(state)
            added = self.cp.Proto().constraints
            holder = cp_model.CpModel()  # (a proto message lives only as long as its model)
            empty = holder.Proto().constraints.add()
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
