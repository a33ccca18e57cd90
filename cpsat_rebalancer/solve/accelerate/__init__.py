"""The accelerator wing: valid floors (load relaxation, configuration LP, move cuts) and
starts (greedy repairs, descents over containers) for a session's buckets. Every call
into it is made under ``accelerate``; ``accelerate=False`` skips the wing, with the same
optimum."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np
from ortools.sat.python import cp_model, cp_model_helper

from ...cpsat.forms import Integerized
from ...cpsat.linear import lin_sum
from ...cpsat.pwl import expr_value
from ...errors import OutOfTime
from ...evaluate import evaluate
from ..moves import moved_objects
from ..positions import Bucket
from ..session import Session
from .configurations import ConfigurationBound, configuration_bound
from .neighbourhoods import descend
from .relaxation import load_relaxation
from .repair import (
    PRESOLVE_SECONDS,
    add_move_cuts,
    leximin_descent,
    load_caps,
    relaxed_caps,
    repair,
)


def bucket_start(session: Session, bucket: Bucket, form: Integerized,
                    budget: float | None) -> tuple[int | None, int]:
    """Before a bucket's search: cut moves by what each container must shed under the limits
    the model now implies, and hold the greedy repair of the initial assignment when it is
    feasible and no worse for this bucket than the assignment held: first repaired to the
    optimal loads of the load relaxation (a solution there is optimal), then to the limits
    this bucket's lowest value would imply (optimal too), else to the current ones.
    Returns the compiled objective of the repair held (if one was taken) and the
    relaxation's lower bound on the form (its lowest value without one).
    Takes at most about ``budget`` seconds."""
    shares = session.budget
    builder = session.builder
    deadline = None if budget is None else time.monotonic() + budget
    floor = form.lo

    def left() -> float:  # nothing once the session is out of time or interrupted
        seconds = session.wall_limit(PRESOLVE_SECONDS,
                                   None if deadline is None else deadline - time.monotonic())
        return math.inf if seconds is None else max(0.0, seconds)

    # a deterministic run bounds the presolves by work instead (and the repairs by their
    # count of ejections)
    work = PRESOLVE_SECONDS if session.deterministic else None
    if left() <= 0.01:
        return None, floor
    session.progress.phase("load limits")
    caps = load_caps(builder, seconds=left(), run=session.run, work=work, known=session.values)
    if not caps:
        return None, floor
    session.moved_floor = max(session.moved_floor, add_move_cuts(builder, caps))
    initial = builder.problem.initial
    held = None
    if session.values is not None:
        current = session.decode()
        held = (evaluate(builder.problem, session.model, current).positions.get(
            bucket.position, 0.0), int((current != initial).sum()))
    if left() <= 0.01:
        return None, floor
    # the limits of the form's lowest value first: the repairs to them need no relaxation,
    # and on a fine objective (SQUARES' pieces) the relaxation may take its whole share
    # without a bound
    at_lowest = load_caps(builder, [(form.expr, form.lo)], left(), session.run, work)
    session.lowest_caps = at_lowest
    session.progress.phase("load relaxation")
    relax_seconds = session.wall_limit(shares.relax_share * left())
    relaxed = load_relaxation(builder, form, math.inf if relax_seconds is None else relax_seconds,
                              session.options.workers, session.options.seed, session.run,
                              None if work is None else shares.relax_share * work, session.values)
    if relaxed is not None:
        floor = max(floor, relaxed.bound)
        session.load_relaxed = True
    # a repair there is optimal (its evaluated value may exceed the floor by the stated
    # error of the compiled objective: SQUARES' pieces lie above the curve)
    best_value = float(Fraction(floor) / form.factor) + bucket.error + form.error

    def level_caps(level: int) -> dict[str, np.ndarray] | None:
        if left() <= 0.01:
            return None
        return load_caps(builder, [(form.expr, level)], left(), session.run, work)

    def attempts():
        """(limits, partial, exact, share of the time left): complete repairs to the
        relaxation's loads (when its bound says more than the form's lowest value), to the
        limits its bound implies (a MAX balance's: with room to spare, unlike exact loads),
        to those of the form's lowest value (raised where their total falls short of the
        load), to the relaxation's loads at that lowest value (a rack balance's: no
        per-host limit says what the racks need), and to the current ones; then one that
        meets the lowest value's limits where it can (fast: no ejections)."""
        targets = None if relaxed is None else {**caps, **relaxed.targets}
        if targets and relaxed.bound > form.lo:  # else the limits below do, mostly
            yield targets, False, True, 0.5
        at_floor = level_caps(floor) if floor > form.lo else None
        if at_floor:
            yield at_floor, False, False, 0.5
        yield at_lowest, False, False, 0.7
        if targets and relaxed.bound <= form.lo:
            yield targets, False, True, 0.5
        yield (relaxed_caps(builder, at_lowest, caps) if at_lowest else None), False, False, 0.7
        yield caps, False, False, 0.5
        yield at_lowest, True, False, 1.0

    session.progress.phase("greedy repair")
    candidates = []
    for limits, partial, exact, share in attempts():
        if session.interrupted:
            return None, floor
        if left() <= 0.01 and not partial:
            continue
        seconds = None if partial else session.wall_limit(share * left())
        counts = repair(builder, limits, partial,
                        None if seconds is None else time.monotonic() + seconds, exact
                        ) if limits else None
        if counts is None:
            continue
        assignment = builder.decode(counts)
        candidate = (evaluate(builder.problem, session.model, assignment).positions.get(
            bucket.position, 0.0), int((assignment != initial).sum()))
        if held is not None and candidate > held:
            continue
        candidates.append((candidate, assignment))
        if candidate[0] <= best_value:
            break
    # the best repair that CP-SAT accepts: the check is worth its time even past the repair
    # share (at most a quarter of what the session has left): a repair at the floor is optimal
    for _, assignment in sorted(candidates, key=lambda c: c[0]):
        if session.interrupted:
            break
        before = session.values
        if session.start_from(builder.counts_of(assignment), form.expr):
            return session.start_value, floor
        session.values = before
    return None, floor


def configurations_floor(session: Session, bucket: Bucket, form: Integerized, error: float,
                    held: int, budget: float | None) -> int:
    """Raise the floor on moves by the configuration LP (``configurations``), and search
    where its optimum points: first with the containers whose LP content is whole held to
    it, the others free (most contents are usually whole, and holding them leaves a small
    search), then for fewer moves within the loads reduced-cost fixing leaves. A solution
    is kept if the bucket is better there than at ``held`` (its value at the assignment
    held); returns the value at the one kept."""
    shares = session.budget
    builder = session.builder
    moves = session.moves()
    seconds = session.wall_limit(None if budget is None else shares.configuration_share * budget)
    started = time.monotonic()
    session.progress.phase("configuration LP")
    try:
        found = configuration_bound(
            builder, session.values, shares.configuration_seconds if seconds is None else seconds,
            session.run,
            shares.configuration_share * PRESOLVE_SECONDS if session.deterministic else None,
            moves, session.moved_floor)
    except KeyboardInterrupt:  # Ctrl-C outside a search: stop the session the same way
        session.interrupted, found = True, None
    if found is not None:
        session.moved_floor = max(session.moved_floor, found.floor)
        session.lp_values = found.master.named_values(builder.cp.proto)
    if found is not None and found.contents is not None and not session.interrupted:
        values = session.values
        held_vars = [builder.count_vars[j] for j in found.contents]
        with builder.held(held_vars, list(found.contents.values())):
            status, _ = session.solve(form.expr, session.wall_limit(shares.completion_seconds),
                                    shares.completion_work, probing=True)
        completed = session.held_value(bucket.members, form.factor, error)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) and completed < held:
            held = completed
        else:
            session.values = values
    if found is not None and not session.interrupted:
        held = fewer_moves_within(session, bucket, form, error, held, found,
                                   None if budget is None
                                   else budget - (time.monotonic() - started))
    return held


def fewer_moves_within(session: Session, bucket: Bucket, form: Integerized, error: float,
                        held: int, found: ConfigurationBound, budget: float | None) -> int:
    """Search for fewer moves than the assignment held, with each container's load within
    the loads reduced-cost fixing leaves to solutions moving at most as many
    (``found.loads_below``), which the assignment held satisfies: a much smaller search,
    held behind a gate freed after. CP-SAT's search first, hinted with the assignment held
    (its optimum there is the fewest anywhere), then, if unproven, the descent over
    containers in the same region (it keeps finding fewer moves where CP-SAT's search
    alone stalls). Keeps a solution found if the bucket is
    better there than at ``held``; returns the bucket's value at the one kept."""
    shares = session.budget
    builder = session.builder
    moved = moved_objects(builder)
    moves = session.moves()
    domains = found.loads_below(moves + 1)
    if moves <= session.moved_floor or domains is None:
        return held
    loads = builder.container_loads()[found.master.priced]
    gate = builder.cp.new_bool_var("fewer_moves")
    for c, allowed in domains.items():
        builder.cp.add_linear_expression_in_domain(
            loads[c], cp_model.Domain.from_values(allowed.tolist())).only_enforce_if(gate)
    builder.fix(gate, 1)
    values = session.values
    share = None if budget is None else shares.fewer_moves_share * budget
    started = time.monotonic()
    session.progress.phase("fewer moves within the LP's loads")
    status, solver = session.solve(
        moved, session.wall_limit(None if share is None else shares.fewer_moves_search * share),
        shares.fewer_moves_work, probing=True)
    if status == cp_model.OPTIMAL:  # the fewest moves of the region: of any solution
        session.moved_floor = max(session.moved_floor, int(solver.value(moved)))
    elif status == cp_model.FEASIBLE and share is not None and not session.interrupted:
        session.values, _ = descend(builder, moved, session.values, int(solver.value(moved)),
                                  started + share, session, session.moved_floor)
    builder.fix(gate, 0)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        better = session.held_value(bucket.members, form.factor, error)
        if better < held:
            return better
    session.values = values
    return held


def step_start(session: Session, form: Integerized, share: float | None,
                held_repair: Callable[[int], int | None]) -> tuple[int | None, int]:
    """A leximin step's accelerators: its load relaxation's bound (the floor), then
    ``held_repair`` to that floor, else a repair of the initial assignment to the
    relaxation's loads, each checked by CP-SAT. Returns the step's objective at the
    assignment held after them (None: none taken) and the floor. At most about
    shares.step_repair_share of ``share`` seconds."""
    shares = session.budget
    builder = session.builder
    deadline = None if share is None else time.monotonic() + shares.step_repair_share * share

    def left() -> float:
        seconds = session.wall_limit(None if deadline is None else deadline - time.monotonic())
        return math.inf if seconds is None else max(0.0, seconds)

    work = PRESOLVE_SECONDS if session.deterministic else None
    session.progress.phase("load relaxation")
    relaxed = load_relaxation(builder, form, shares.relax_share * left(), session.options.workers,
                              session.options.seed, session.run,
                              None if work is None else shares.relax_share * work, session.values)
    if relaxed is None or relaxed.bound <= form.lo or left() <= 0.01 or session.interrupted:
        return None, form.lo if relaxed is None else max(form.lo, relaxed.bound)
    floor = relaxed.bound
    session.progress.phase("greedy repair")
    reached = held_repair(floor)
    if reached is not None and reached <= floor or not relaxed.optimal or left() <= 0.01:
        return reached, floor
    # the relaxation's loads, exactly, from the initial assignment (with the limits presolve
    # gives the dimensions it leaves free)
    limits = dict(relaxed.targets)
    if set(builder.container_loads()) - set(limits):
        limits = {**(load_caps(builder, seconds=left(), run=session.run, work=work,
                               known=session.values) or {}), **limits}
    counts = repair(builder, limits, False,
                    None if deadline is None else deadline, exact=True)
    before = session.values
    if counts is not None and session.start_from(counts, form.expr):
        if reached is None or session.start_value < reached:
            return session.start_value, floor
    session.values = before
    return reached, floor


def held_repair(session: Session, forms: list[Integerized], marks: list[object] | None,
                 keep: int, level: int, objective: object,
                 target: tuple[object, int] | None = None) -> int | None:
    """Repair the held assignment (not the initial one) to what a leximin step asks: at
    most ``keep`` items marked (of those at ``level`` or more now, the highest), every
    other mark off, and ``target`` when given, through the load limits presolve derives from
    that. The items let go shed little each, where a repair from the initial assignment must
    fill every container to an exact load. Returns ``objective`` at the repair when CP-SAT
    accepts it (then held), else None."""
    builder = session.builder
    if not session.held_whole():  # nothing held to repair
        return None
    values = [expr_value(f.expr, session.values) for f in forms]
    # the highest first: one let go from above an earlier level must shed the most
    there = sorted((i for i, value in enumerate(values) if value >= level),
                   key=lambda i: -values[i])
    kept = set(there[:keep])
    let_go = [mark for i, mark in enumerate(marks or []) if i not in kept]
    targets = ([(sum(let_go), 0)] if let_go else []) + ([target] if target else [])
    caps = load_caps(builder, targets, run=session.run,
                     seconds=session.wall_limit(PRESOLVE_SECONDS) or PRESOLVE_SECONDS)
    if not caps:
        return None
    held = session.values[: len(builder.count_vars)]
    over = any((builder.loads_at(held, dim) > limits).any() for dim, limits in caps.items())
    counts = repair(builder, caps, start=held) if over else held  # within them: as held
    before = session.values
    if counts is None or not session.start_from(counts, objective):
        session.values = before
        return None
    return session.start_value


def descend_leximin(session: Session, bucket: Bucket, deadline: float) -> None:
    """Single moves that lower the sorted vector (repair.leximin_descent) from the
    assignment held, checked by CP-SAT against every held level before it is taken."""
    builder = session.builder
    stop = time.monotonic() + session.budget.descent_share * (deadline - time.monotonic())
    session.progress.phase("leximin descent")
    caps = load_caps(builder, seconds=max(0.01, stop - time.monotonic()), run=session.run,
                     known=session.values)
    if not caps:
        return
    counts = builder.counts_of(session.decode())
    found = leximin_descent(builder, bucket.leximin, counts, caps, stop)
    if found is None:
        return
    before = session.values
    if not session.start_from(builder.counts_of(builder.decode(found)), None,
                            max(0.01, deadline - time.monotonic())):
        session.values = before


def polish_leximin(session: Session, bucket: Bucket, budget: float) -> None:
    """The levels below the last one reached are not proven: spend the time left on IDEAL's
    scalar Σ a_i·u_i² (which spreads load the same way), with the levels reached held, and
    keep the result only if its sorted vector is lexicographically smaller (evaluator)."""
    if budget <= 0.05:
        return
    # the scalar's pieces would weigh on every later search (scratch); building them may take
    # the time left (OutOfTime: nothing polished)
    with session.builder.scratch(), contextlib.suppress(OutOfTime):
        _polish_with_scalar(session, bucket, budget)


def _polish_with_scalar(session: Session, bucket: Bucket, budget: float) -> None:
    builder = session.builder
    problem, model = builder.problem, session.model
    before = session.values
    session.progress.phase("leximin polish on the scalar")
    held = evaluate(problem, model, session.decode()).leximin[bucket.position]
    form = builder.integerize(lin_sum(spec.compile_goal(builder).value
                                      for spec in bucket.scalar))
    deadline = time.monotonic() + budget
    # from the assignment held, with its auxiliaries at their best for the scalar: a first
    # search of the scalar from nothing may find no solution in its share
    if not session.start_from(builder.counts_of(session.decode()), form.expr, budget):
        session.values = before
        return
    stop = time.monotonic() + session.budget.neighbourhood_share * (deadline - time.monotonic())
    session.values, _ = descend(builder, form.expr, session.values, session.start_value, stop,
                                session)
    if deadline - time.monotonic() > 0.05:  # then the full search, from there
        session.solve(form.expr, deadline - time.monotonic())
    found = evaluate(problem, model, session.decode()).leximin[bucket.position]
    if not leximin_smaller(found, held):
        session.values = before


def expr_known(expr: object, values: list[int]) -> bool:
    """Whether ``values`` (a solution of the model as it was) holds every variable of a
    linear expression (variables built since have none)."""
    if isinstance(expr, int):
        return True
    return all(v.index < len(values) for v in cp_model_helper.FlatIntExpr(expr).vars)


def leximin_smaller(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    for x, y in zip(a, b):
        if abs(x - y) > 1e-12 * max(1.0, abs(y)):
            return x < y
    return False
