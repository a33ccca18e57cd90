"""The load relaxation of a bucket: its objective over container loads alone.

Every constraint that reads a count variable (which object class sits where) is dropped;
what is left is the objective with the rules on loads (hard capacities, frozen earlier
buckets that read loads), plus what every assignment keeps: each dimension's loads sum to
its total, a scope item's load is the sum of its containers', what stayed in an item is
part of its load (a movement rule then bounds how far loads rise), and one dimension's
load lies within the extreme ratios of the objects' values to another's. Any assignment's
loads satisfy this model, so its optimum is a valid lower bound on the bucket. The model
has a few variables per container instead of one per (class, container), so it solves
quickly where the full search cannot even close its LP.

Its optimal loads are also targets: an assignment that packs every container to exactly
its target load is optimal for the bucket (see ``repair.repair``), which is how a balance
that local search reaches with single moves is reached and proven here.

It is solved as an LP by GLOP first (``lp_bound``): a proven bound in a fraction of the time
CP-SAT's own search takes on SQUARES' pieces, and often loads at that bound; CP-SAT
searches only when the LP's loads do not complete to integers at its bound (integral
effects: a LINEAR or MAX balance's exact packing), starting from the LP's bound.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from ortools.sat import cp_model_pb2
from ortools.sat.python import cp_model, cp_model_helper

from ...cpsat.builder import CpBuilder, hint_first
from ...cpsat.classes import item_groups
from ...cpsat.forms import Integerized
from ...cpsat_parameters import new_solver
from .lp_bound import LinearRelaxation, objective_at, snapshot, solve_lp

POLISH_SECONDS = 0.5  # the search for target loads near the start: at least this long
POLISH_WORK = 0.2  # (deterministic seconds, in a repeatable run)
COMPLETION_SHARE = 0.3  # of the time left, at most, to complete the LP's loads
CHECK_SECONDS = 1.0  # at most, to look for a solution below a bound CP-SAT raised alone
CHECK_WORK = 0.5  # (deterministic seconds, in a repeatable run)


@dataclass
class LoadRelaxation:
    bound: int  # lower bound on the bucket's objective (its integer units)
    optimal: bool  # the relaxation was solved to optimality (targets below reach ``bound``)
    targets: dict[str, np.ndarray]  # per dimension the objective reads: a load per container


def _variable(literal: int) -> int:
    """The variable index of a literal (CP-SAT writes a negated literal as -index - 1)."""
    return literal if literal >= 0 else -literal - 1


def _references(constraint: cp_model_pb2.ConstraintProto) -> set[int] | None:
    """Every variable index a constraint reads (negated literals turned back), for the
    kinds this engine builds; None for any other kind (the relaxation drops it: dropping a
    constraint is always a valid relaxation)."""
    used = {_variable(v) for v in constraint.enforcement_literal}
    kind = constraint.WhichOneof("constraint")
    if kind == "linear":
        used.update(constraint.linear.vars)
    elif kind in ("lin_max", "int_prod", "int_div"):
        argument = getattr(constraint, kind)
        for expr in (argument.target, *argument.exprs):
            used.update(expr.vars)
    elif kind == "element":
        element = constraint.element
        for expr in (element.linear_index, element.linear_target, *element.exprs):
            used.update(expr.vars)
    elif kind in ("exactly_one", "bool_or"):
        used.update(_variable(v) for v in getattr(constraint, kind).literals)
    else:
        return None
    return used


def load_relaxation(builder: CpBuilder, form: Integerized, seconds: float,
                    workers: int, seed: int,
                    run: Callable[[cp_model.CpSolver, cp_model.CpModel], int] | None = None,
                    work: float | None = None,
                    hint: list[int] | None = None) -> LoadRelaxation | None:
    """Solve the load relaxation of a bucket's ``form`` (see the module docstring) in at
    most ``seconds`` (and ``work`` deterministic seconds, when given). ``hint``, values of
    every variable of the full model (a solution of it), is a solution of the relaxation
    too: the search starts there. None when the form reads no container load, or no
    solution of the relaxation was found in time (or there is none: the full model then
    has none either, which the caller's search will say)."""
    objective = form.expr
    loads = builder.container_loads()
    if not loads or isinstance(objective, int):
        return None
    kept, dropped, counts = split_constraints(builder)
    loads = {dim: variables for dim, variables in loads.items()
             if dim not in builder.problem.dynamic_dims}
    # targets for the dimensions the objective reads (through the constraints kept), not
    # for those only the coupling below ties to them: exact loads in two dimensions at
    # once are rarely packable. Decided before the copy, which a movement bucket or an
    # assignment cost (they read counts) would not need.
    reads = [used for _, used in kept]
    flat = cp_model_helper.FlatIntExpr(objective)
    terms = {v.index for v, c in zip(flat.vars, flat.coeffs) if c}
    # a load itself is the relaxation's own variable (an excess that cannot fall below 0,
    # a container's load under fixed objects, is the load)
    own = {v.Index() for variables in loads.values() for v in variables}.union(
        *(_scope_load_indices(builder, dim) for dim in loads))
    if terms & ((dropped - own) | counts):
        # the objective is defined through the assignment itself (moves, costs): the
        # relaxation would bound it only through the cuts on moves, which the stages
        # reads directly (a search here would spend seconds for nothing)
        return None
    read = _reached(terms, reads)
    targets = [dim for dim, variables in loads.items()
               if read.intersection(v.Index() for v in variables)
               or read.intersection(_scope_load_indices(builder, dim))]
    if not targets:
        return None
    cp = loads_model(builder, kept, loads, targets)
    cp.minimize(objective)
    started = time.monotonic()

    def left() -> float:
        return max(seconds - (time.monotonic() - started), 0.01)

    # GLOP first: its bound is proven in a fraction of a second, and its rounded optimum
    # often is, or completes to, a solution at that bound (then no search is needed)
    fixed = [v for dim in targets for v in loads[dim]]
    lp = solve_lp(cp, left(), work)
    found = None if lp is None else _from_lp(cp, lp, fixed, left(), work, workers, seed, run)
    spent_work = 0.0
    if found is not None and found[0] <= lp.floor:
        bound, level, optimal, solution = lp.floor, found[0], True, found[1]
    else:
        if lp is not None:
            cp.add(objective >= lp.floor)  # proven: CP-SAT stops once it finds a solution there
        searched = _search(cp, hint if found is None else found[1], left(), work, workers,
                           seed, run)
        if searched is not None:
            status, searched_bound, level, solution, spent_work = searched
            proven = form.lo if lp is None else lp.floor  # what no search of CP-SAT's raised
            bound = max(searched_bound, proven)
            refuted = None if bound <= proven else _refuted(
                cp, objective, bound, min(CHECK_SECONDS, left()),
                None if work is None else CHECK_WORK, workers, seed, run)
            if refuted is not None:
                bound, (level, solution) = proven, refuted
            optimal = (status == cp_model.OPTIMAL and refuted is None) or bound >= level
        elif found is not None:
            bound, level, optimal, solution = lp.floor, found[0], False, found[1]
        else:
            return None
    # among the loads at that level, those that keep the most of each container's initial
    # load (they move the least): a second problem (a blended objective in one search
    # proves the level far more slowly)
    spent = time.monotonic() - started
    cp.add(objective <= level)
    shed = []  # per container, how much of its initial load it gives up
    for dim in targets:
        for load, held in zip(loads[dim], builder.initial_loads(dim).tolist()):
            if held:
                drop = cp.new_int_var(0, held, "")
                cp.add(drop >= held - load)
                shed.append(drop)
    cp.minimize(sum(shed))
    polish_seconds = max(min(seconds - spent, max(spent, POLISH_SECONDS)), 0.01)
    polish_work = None if work is None else max(spent_work, POLISH_WORK)
    polish_started = time.monotonic()
    lp = solve_lp(cp, polish_seconds, polish_work)
    found = None if lp is None else _from_lp(cp, lp, fixed, polish_seconds, polish_work,
                                             workers, seed, run)
    if found is not None:
        solution = found[1]
    else:
        if work is not None:  # a repeatable run: bounded by work, not by the clock
            polish_seconds = max(seconds - spent, 0.01)
        polish_seconds -= time.monotonic() - polish_started
        searched = _search(cp, solution, polish_seconds, polish_work, workers, seed, run)
        if searched is not None:
            solution = searched[3]
    return LoadRelaxation(
        bound, optimal,
        {dim: np.asarray([solution[v.Index()] for v in loads[dim]], dtype=np.int64)
         for dim in targets})


def split_constraints(builder: CpBuilder
                       ) -> tuple[list[tuple[int, set[int]]], set[int], set[int]]:
    """The model's constraints that read no count variable, as (index, variables read); the
    variables the others read (not counting the builder's ``count_links``, redundant
    rows left out altogether); the count variables' indices."""
    counts = {var.Index() for var in builder.count_vars}
    kept = []
    dropped = set()
    for index, constraint in enumerate(snapshot(builder.cp).constraints):
        if index in builder.count_links:
            continue
        used = _references(constraint)
        if used is not None and not used & counts:
            kept.append((index, used))
        elif used is not None:
            dropped |= used
    return kept, dropped, counts


def loads_model(builder: CpBuilder, kept: list[tuple[int, set[int]]],
                 loads: dict[str, list[object]], targets: list[str]) -> cp_model.CpModel:
    """The same variables (same indices) with the constraints ``kept``, plus what every
    assignment keeps for the ``targets`` dimensions: loads summing to their total, scope
    items' loads the sums of their containers', the objects that cannot leave a container
    in its load, what stayed in an item within its load, and the ratios between
    dimensions."""
    full = builder.cp.proto
    cp = cp_model.CpModel()
    for variable in full.variables:
        cp.proto.variables.add().copy_from(variable)
    for index, _ in kept:
        cp.proto.constraints.add().copy_from(full.constraints[index])
    pinned = builder.pinned()
    counts = np.where(pinned, builder.classes.sizes[builder.var_class], 0)
    for dim in targets:
        cp.add(sum(loads[dim]) == int(builder.scale(dim).values.sum()))
        _link_scopes(builder, cp, dim, loads[dim])
        if pinned.any():
            for load, least in zip(loads[dim], builder.loads_at(counts, dim).tolist()):
                if least > 0:
                    cp.add(load >= least)
    if builder.problem.origin is None:  # (in flight, STAYED counts from the origin)
        for stayed, after in builder.stayed_within_loads():
            cp.add(stayed <= after)
    constrained = set().union(*(used for _, used in kept))
    _couple_dimensions(builder, cp, loads, targets, constrained)
    return cp


def moves_floor(builder: CpBuilder, seconds: float, workers: int, seed: int,
                run: Callable[[cp_model.CpSolver, cp_model.CpModel], int] | None = None,
                work: float | None = None) -> int | None:
    """A lower bound on the number of objects moved, over the loads the model's load rules
    allow (the constraints kept above). A container's leaving objects carry at least its
    initial load minus its final one in every dimension, and the fewest objects that carry
    x are its largest: a concave staircase in their number, exact as the minimum of its
    steps' lines. Where the rules leave the loads some freedom (a LINEAR balance frozen
    above 0: a total excess, not a limit per container), this couples the containers,
    which the move cuts (each container's limit alone) do not. None when no bound is found
    in ``seconds`` (``work`` deterministic seconds, when given)."""
    until = time.monotonic() + seconds  # building counts too: a large model's takes long
    loads = {dim: variables for dim, variables in builder.container_loads().items()
             if dim not in builder.problem.dynamic_dims}
    if not loads or builder.built_stays(builder.problem.container_scope) is None:
        return None
    kept, _, _ = split_constraints(builder)
    cp = loads_model(builder, kept, loads, list(loads))
    initial = np.asarray(builder.initial_counts(), dtype=np.int64)
    occupied = np.flatnonzero(initial > 0)
    occupied = occupied[np.argsort(builder.var_cont[occupied], kind="stable")]
    containers, starts = np.unique(builder.var_cont[occupied], return_index=True)
    values = {dim: builder.var_values(dim) for dim in loads}
    leaving = []
    for c, held in zip(containers.tolist(), np.split(occupied, starts[1:])):
        out = cp.new_int_var(0, int(initial[held].sum()), "")
        leaving.append(out)
        for dim, variables in loads.items():
            sizes = values[dim][held]
            start = int((initial[held] * sizes).sum())
            carried, taken = 0, 0  # by the ``taken`` largest objects
            for j in np.argsort(-sizes, kind="stable").tolist():
                size, number = int(sizes[j]), int(initial[held][j])
                # start - load <= carried + size·(out - taken), on this step's line
                cp.add(start - variables[c] <= carried + size * (out - taken))
                carried += size * number
                taken += number
    if not leaving or work is None and time.monotonic() >= until:
        return None
    moved = sum(leaving)
    cp.minimize(moved)
    # GLOP's bound first (fast, and most of the floor), then CP-SAT's search from it for the
    # rest of the time (the integer staircases raise it further)
    lp = solve_lp(cp, seconds if work is not None else until - time.monotonic(), work)
    floor = 0 if lp is None else max(0, lp.floor)
    if work is None and time.monotonic() >= until:
        return None if lp is None else floor
    cp.add(moved >= floor)
    solver = new_solver()
    params = solver.parameters
    params.num_workers = workers
    params.random_seed = seed
    params.max_time_in_seconds = max(until - time.monotonic(), 0.01)
    if work is not None:
        params.max_deterministic_time = work
    params.catch_sigint_signal = False
    status = solver.solve(cp) if run is None else run(solver, cp)
    if status == cp_model.INFEASIBLE:
        return None  # no loads meet the rules: the full model's search will say so
    bound = solver.best_objective_bound
    if not math.isfinite(bound):
        return None if lp is None else floor
    raised = math.ceil(bound - 1e-6)
    if raised <= floor:
        return floor
    # a bound CP-SAT alone raised is checked as the load relaxation's is
    check = CHECK_SECONDS if work is not None else min(CHECK_SECONDS, until - time.monotonic())
    refuted = _refuted(cp, moved, raised, check, None if work is None else CHECK_WORK,
                       workers, seed, run)
    return floor if refuted is not None else raised


def _from_lp(cp: cp_model.CpModel, lp: LinearRelaxation, fixed: list[object],
             seconds: float, work: float | None, workers: int, seed: int,
             run: Callable[[cp_model.CpSolver, cp_model.CpModel], int] | None
             ) -> tuple[int, list[int]] | None:
    """A solution of ``cp`` from its LP optimum, with its objective: the rounded point
    itself when it is one, else CP-SAT's completion of the point's values of the ``fixed``
    variables (the target loads; what is left, other dimensions' loads within their
    ratios, is a feasibility search of a fraction of a second). None when neither works."""
    if lp.value is not None:
        return lp.value, lp.point
    completion = cp.clone()
    for var in fixed:
        completion.add(var == lp.point[var.Index()])
    searched = _search(completion, lp.point, COMPLETION_SHARE * seconds,
                       None if work is None else COMPLETION_SHARE * work, workers, seed, run)
    return None if searched is None else (searched[2], searched[3])


def _refuted(cp: cp_model.CpModel, objective: object, bound: int, seconds: float,
             work: float | None, workers: int, seed: int,
             run: Callable[[cp_model.CpSolver, cp_model.CpModel], int] | None
             ) -> tuple[int, list[int]] | None:
    """A solution of ``cp`` below ``bound``, CP-SAT's own bound on ``objective`` there
    (its objective and values), found in a short search capped below it; None when none is
    found. CP-SAT has stated a relaxation OPTIMAL above a point it accepts
    (benchmarks/cpsat_false_bound.py): a bound it alone raised is checked so before use."""
    capped = cp.clone()
    capped.add(objective <= bound - 1)
    searched = _search(capped, None, seconds, work, workers, seed, run)
    return None if searched is None else (searched[2], searched[3])


def _search(cp: cp_model.CpModel, hint: list[int] | None, seconds: float, work: float | None,
            workers: int, seed: int,
            run: Callable[[cp_model.CpSolver, cp_model.CpModel], int] | None
            ) -> tuple[int, int, int, list[int], float] | None:
    """CP-SAT on ``cp`` from ``hint`` (values of its first variables): its status, its bound
    (rounded up only past the float's last bits), its objective, its solution and the
    deterministic time it took; None without a solution."""
    hint_first(cp, hint)
    solver = new_solver()
    params = solver.parameters
    params.num_workers = workers
    params.random_seed = seed
    params.max_time_in_seconds = max(seconds, 0.01)
    if work is not None:
        params.max_deterministic_time = work
    params.catch_sigint_signal = False
    status = solver.solve(cp) if run is None else run(solver, cp)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None
    bound = math.ceil(solver.best_objective_bound * (1 - 1e-12) - 1e-6)
    solution = list(solver.response_proto.solution)
    return (status, bound, objective_at(cp.proto.objective, solution), solution,
            solver.response_proto.deterministic_time)


def _reached(reached: set[int], reads: list[set[int]]) -> set[int]:
    """``reached`` and the variables linked to them through the constraints that read
    ``reads`` (transitively)."""
    grew = True
    while grew:
        grew = False
        for used in reads:
            if used & reached and not used <= reached:
                reached |= used
                grew = True
    return reached


def _scope_load_indices(builder: CpBuilder, dim: str) -> set[int]:
    """The load variables of ``dim`` per item of every custom scope (racks): an objective
    on them reads the containers' loads through the links ``_link_scopes`` adds."""
    indices = set()
    for scope in builder.problem.scopes.values():
        if scope is not builder.problem.container_scope:
            indices.update(v.Index() for v in builder.scope_loads(scope, dim) or ())
    return indices


def _link_scopes(builder: CpBuilder, cp: cp_model.CpModel, dim: str,
                 container_loads: list[object]) -> None:
    """A custom scope's item load is the sum of its containers' loads (the count variables
    that tied them together are gone)."""
    for scope in builder.problem.scopes.values():
        if scope is builder.problem.container_scope:
            continue
        built = builder.scope_loads(scope, dim)
        if built is None:
            continue
        groups = item_groups(scope)
        for item, load in enumerate(built):
            members = np.flatnonzero(groups == item)
            cp.add(load == sum(container_loads[c] for c in members.tolist()))


def _couple_dimensions(builder: CpBuilder, cp: cp_model.CpModel,
                       loads: dict[str, list[object]], targets: list[str],
                       constrained: set[int]) -> None:
    """Per container, a target dimension's load within the extreme ratios of the objects'
    values to another dimension's (positive) values, ``min r <= load_a / load_b <= max r``,
    which holds for any set of objects: without it the relaxation could empty a container
    of objects (a drain) and keep its cpu. Only with dimensions that a kept constraint
    reads (elsewhere it holds anyway, and only slows CP-SAT down)."""
    values = {dim: builder.scale(dim).values for dim in loads}
    for a in targets:
        for b in loads:
            if b == a or not constrained.intersection(v.Index() for v in loads[b]):
                continue
            if len(values[b]) == 0 or values[b].min() <= 0 or values[a].min() < 0:
                continue
            ratios = [Fraction(int(x), int(y)) for x, y in set(zip(values[a].tolist(),
                                                                   values[b].tolist()))]
            low, high = min(ratios), max(ratios)
            for load_a, load_b in zip(loads[a], loads[b]):
                cp.add(load_a * high.denominator <= load_b * high.numerator)
                cp.add(load_a * low.denominator >= load_b * low.numerator)
