"""One bucket (tuple position): minimize its objective, then freeze it for the buckets after."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from fractions import Fraction

import numpy as np
from ortools.sat.python import cp_model

from ..cpsat.builder import TargetProbe
from ..cpsat.forms import INT_LIMIT, Integerized
from ..cpsat.linear import Lin, lin_sum
from ..evaluate import Evaluation, batchable
from ..progress import LOGGER
from ..result import BucketReport
from . import closure
from .accelerate import (
    bucket_start,
    configurations_floor,
    expr_known,
    expr_value,
    local_search,
    tuples,
)
from .accelerate.lp_bound import solve_lp
from .accelerate.neighbourhoods import descend
from .accelerate.relaxation import moves_floor
from .accelerate.repair import PRESOLVE_SECONDS, add_move_cuts, caps_hold
from .moves import implied_floor, moved_objects, start_excluded
from .positions import EXACT, FLOAT_NOISE, Bucket, meets
from .probes import probe, target_probes
from .session import Session, bucket_report, bucket_values, compiled_level


def solve_bucket(session: Session, bucket: Bucket, budget: float | None) -> BucketReport:
    shares = session.budget
    builder = session.builder
    objective = lin_sum(bucket.terms)
    if not builder.integral(objective) and bucket.allowance is None:
        fit_objective(session, bucket, objective,
                      None if budget is None else shares.first_share * budget)
    form = builder.integerize(objective, objective=True)
    session.progress.show(form.expr, form.factor, form.lo)
    builder.note_error(f"position {bucket.position} objective rounding", form.error)
    error = bucket.error + form.error
    bucket.over += form.over
    if not bucket.terms and session.values is not None:  # nothing to minimize: keep what we hold
        value = float(Fraction(int(form.expr)) / form.factor)
        return bucket_report(bucket.position, cp_model.OPTIMAL, value, value, error)
    t0 = time.monotonic()
    # the assignment held may already sit at the floor the move cuts prove (the repair
    # before the first bucket can reach it, and on a large model this bucket's presolves
    # alone are costly); if not, a movement bucket first raises that floor over the loads
    floor = implied_floor(builder, form, session.moved_floor)
    moves_here = builder.accelerate and session.moves_at(bucket.position)
    value = session.held_sum(bucket.members) if session.values is not None else None
    held = None if value is None else compiled_level(value, form.factor, error)
    if (value is not None and meets(value, bucket.floor)
            and (not session.moves_later(bucket.position) or session.moves() == 0)):
        # the evaluator's value of the assignment held is the lowest there is (Model.floors,
        # to what OPTIMAL promises): optimal, whatever the compiled model's rounding (its
        # compiled value lies at most ``error`` below). Not where later goals count the
        # moves it made: the repair below may reach the floor with fewer (see ``lowest``)
        return finish(session, bucket, form, cp_model.OPTIMAL, held,
                      float(Fraction(held) / form.factor), bucket.floor - error, error,
                      closure_seconds(session, budget, t0))
    if (moves_here and (held is None or held > floor) and not session.interrupted
            and (budget is not None or session.deterministic)):
        # not without a time limit, where the bucket's own search proves its optimum
        seconds = session.wall_limit(None if budget is None else shares.moves_floor_share * budget)
        session.progress.phase("floor on moves")
        try:
            found = moves_floor(builder, shares.moves_floor_seconds if seconds is None else seconds,
                                session.options.workers, session.options.seed, session.run,
                                shares.moves_floor_share * PRESOLVE_SECONDS if session.deterministic
                                else None)
        except KeyboardInterrupt:  # Ctrl-C outside a search: stop the session the same way
            session.interrupted, found = True, None
        session.moved_floor = max(session.moved_floor, found or 0)
        if session.moved_floor == 0 and start_excluded(session, bucket.position,
                                                       shares.start_check_seconds):
            session.moved_floor = 1
        floor = implied_floor(builder, form, session.moved_floor)
        if held is not None and held > floor and session.values is not None:
            held = configurations_floor(session, bucket, form, error, held, budget)
            floor = implied_floor(builder, form, session.moved_floor)
    # at the form's lowest value (a start that breaks no rule of a penalty goal) it is
    # optimal too; but when later goals count moves and the assignment held has moved
    # objects, the repair below may reach that value with fewer moves, and the bounds it
    # reads serve the movement bucket
    lowest = held is not None and held <= form.lo and (
        not session.moves_later(bucket.position) or session.moves() == 0)
    if held is not None and ((form.lo < floor and held <= floor) or lowest):
        return finish(session, bucket, form, cp_model.OPTIMAL, held,
                       float(Fraction(held) / form.factor),
                       float(Fraction(max(floor, form.lo)) / form.factor), error,
                       closure_seconds(session, budget, t0))
    repaired, relaxed_floor = None, form.lo
    session.load_relaxed = False
    if builder.accelerate and bucket.terms:
        try:
            repaired, relaxed_floor = bucket_start(
                session, bucket, form, None if budget is None else shares.repair_share * budget)
        except KeyboardInterrupt:  # Ctrl-C outside a search: stop the session the same way
            session.interrupted = True
    floor = max(relaxed_floor, implied_floor(builder, form, session.moved_floor))
    # as low as the form can go: optimal. A form rounded where its compiled value may lie
    # above the exact one (a rack balance's many distinct capacities may have no common
    # denominator below 2^50) is proven within that over-estimate only, and the gap left
    # adds to it: GLOP's duals can leave the floor a unit short of the repair, and CP-SAT
    # would spend its time on a gap far inside it. (A rounding only ever below the exact
    # value, as a soft term's, leaves the proof to the search.)
    if repaired is None and session.values is not None:  # the assignment held may be there
        repaired = session.held_value(bucket.members, form.factor, error)
    if repaired is not None and repaired < relaxed_floor:
        # an assignment of the model below the relaxation's bound: CP-SAT's optimum of the
        # relaxation is false (it has claimed one above a point of that model); the
        # search proves the bucket instead
        LOGGER.warning("bucket %d: the load relaxation's bound is above a solution: "
                       "dropped", bucket.position)
        floor = implied_floor(builder, form, session.moved_floor)
    # (a bucket of moves alone has floors of its own, the floor on moves and the
    # configuration LP, which read the loads: the whole model's rows also hold what earlier
    # buckets froze beyond them, as a count of used items, whose stay rows make the moves
    # pay for what an emptied item sheds)
    if (session.accelerators and (session.moves_only(bucket.position) or not session.load_relaxed)
            and not session.interrupted and (repaired is None or repaired > floor)
            and (budget is not None or session.deterministic)):
        floor = max(floor, model_floor(session, form,
                                       None if budget is None else shares.lp_share * budget))
    if repaired is not None and repaired <= floor + math.floor(bucket.over * form.factor):
        return finish(session, bucket, form, cp_model.OPTIMAL, repaired,
                       float(Fraction(repaired) / form.factor),
                       float(Fraction(floor) / form.factor),
                       error + float(Fraction(max(repaired - floor, 0)) / form.factor),
                       closure_seconds(session, budget, t0))
    most = builder.problem.num_objects
    weight = most + 1
    blend_fits = (form.hi - form.lo + 1) * weight < INT_LIMIT
    incumbent = objective = bound = None
    floor = max(floor, form.lo)
    session.progress.phase("search")
    if builder.accelerate and blend_fits and session.moves_later(bucket.position):
        # A later goal counts moves: search on weight·objective + moves from the start, so
        # that the solutions found stay near the initial assignment (a search on the
        # objective alone drifts far from it, and the movement bucket cannot walk back).
        status, solver, incumbent, bound = blended(
            session, form, None,
            None if budget is None else shares.blend_share * (budget - (time.monotonic() - t0)))
        if incumbent is not None:
            objective = float(Fraction(incumbent) / form.factor)
        if status == cp_model.FEASIBLE and at_form_floor(form, floor, incumbent):
            status, bound = cp_model.OPTIMAL, floor_bound(form, floor, bound)
        elif status == cp_model.FEASIBLE and budget is not None:
            # then the objective alone, for its bound (and maybe a better value)
            left = shares.pure_share * (budget - (time.monotonic() - t0))
            builder.cp.add(form.expr <= incumbent)
            blended_values = session.values
            session.progress.phase("search")
            again, solver_b = session.solve(form.expr, left)
            better, _, bound_b = bucket_values(again, solver_b, form.expr, form.factor)
            if better is not None:
                bound = max((b for b in (bound, bound_b) if b is not None), default=None)
                if again == cp_model.OPTIMAL:
                    status = again
                if better < incumbent:
                    solver, incumbent = solver_b, better
                    objective = float(Fraction(incumbent) / form.factor)
                    # a better value found alone drifts: blended again for the rest
                    left = budget - (time.monotonic() - t0)
                    if left > 0.05:
                        _, _, blended_better, _ = blended(session, form, incumbent, left)
                        session.blend_floor = None  # proven only for that value, not reported
                        if blended_better is not None:
                            incumbent = blended_better
                            objective = float(Fraction(incumbent) / form.factor)
                else:  # the same value: keep the blended solution, which moves fewer
                    session.values = blended_values
    else:
        status, solver, incumbent, objective, bound = pure_then_blended(
            session, form, budget, t0, weight if blend_fits else None, bucket.probes,
            lambda values: session.held_value(bucket.members, form.factor, error, values),
            bucket.position, floor)
    if status != cp_model.OPTIMAL and session.values is not None:
        # the assignment held (new, initial or an earlier bucket's) is this bucket's
        # incumbent, at its evaluated value, with the bound CP-SAT proved
        held = session.held_value(bucket.members, form.factor, error)
        incumbent = held if incumbent is None else min(incumbent, held)
        status = cp_model.FEASIBLE
        objective = float(Fraction(incumbent) / form.factor)
        # (only a search that found a solution states a bound: one that found none leaves
        # CP-SAT's field at its default, 0, which is no bound on an objective that can be
        # negative, and was taken for a proof of optimality at a negative incumbent)
        found = solver is not None and solver.response_proto.status in (cp_model.OPTIMAL,
                                                                         cp_model.FEASIBLE)
        proven = solver.best_objective_bound if found else math.inf
        if bound is None and math.isfinite(proven):
            bound = float(Fraction(min(incumbent, math.ceil(proven))) / form.factor)
    if incumbent is not None and floor > form.lo:
        bound = floor_bound(form, floor, bound)
    return finish(session, bucket, form, status, incumbent, objective, bound, error,
                  closure_seconds(session, budget, t0))


def at_form_floor(form: Integerized, floor: int, value: int) -> bool:
    """Whether the form's ``value`` meets its ``floor`` (integer units) to what OPTIMAL
    promises: nothing below is worth a search (``check.settle`` judges the evaluator's
    value against the bound the same way)."""
    return value <= floor or meets(float(Fraction(value) / form.factor),
                                   float(Fraction(floor) / form.factor))


def floor_bound(form: Integerized, floor: int, known: float | None) -> float:
    """The higher of the form's ``floor`` (integer units; on the user's scale) and the
    bound ``known`` from a search, where there is one."""
    lowest = float(Fraction(floor) / form.factor)
    return lowest if known is None else max(known, lowest)


def model_floor(session: Session, form: Integerized, budget: float | None) -> int:
    """GLOP's floor on the bucket's form over the whole model's linear rows, in at most
    ``budget`` seconds, held in the model as a bound the search can stop at (it proves the
    bucket as soon as it finds a solution there); the form's lowest value when GLOP finds
    none in time. For a bucket no load relaxation bounds (the objective reads the
    assignment, as a group's presence does, or the loads are too wide to be variables) and
    for a movement bucket: CP-SAT's own LP may not settle within the bucket's search at all
    on a large model."""
    shares = session.budget
    seconds = session.wall_limit(budget)
    session.progress.phase("linear bound")
    cp = session.builder.cp
    cp.minimize(form.expr)
    lp = solve_lp(cp, shares.lp_seconds if seconds is None else seconds,
                  shares.lp_work if session.deterministic else None)
    if lp is None or lp.floor <= form.lo:
        return form.lo
    cp.add(form.expr >= lp.floor)
    LOGGER.debug("bucket: the linear bound %s", lp.floor)
    return lp.floor


def fit_objective(session: Session, bucket: Bucket, objective: Lin,
                  budget: float | None) -> None:
    """An objective too wide to take to integers exactly (a soft limit's excess over loads
    near 1e16, at a large cost, beside a fine movement term) that no assignment as good as
    the one held can take to its full range: its atoms are cut to the values such an
    assignment can give them (``cut_above``), which often makes it exact again. When
    nothing is held, or the cut is not enough where a narrower range would be, a search on
    the objective rounded (its error stated) first finds a better assignment to cut by. Not
    with an allowance, which lets later buckets go above the value held."""
    builder = session.builder
    if session.values is not None:
        cut_at_held(session, bucket, objective)
    if (builder.integral(objective) or session.interrupted
            or builder.denominator(objective) > INT_LIMIT):  # no range is narrow enough
        return
    rounded = builder.integerize(objective, objective=True)
    session.progress.phase("search on the rounded objective")
    session.solve(rounded.expr, session.wall_limit(budget))
    if session.values is not None:
        cut_at_held(session, bucket, objective)


def cut_at_held(session: Session, bucket: Bucket, objective: Lin) -> None:
    """Cut at the held assignment's value, plus the bucket's stated error (the compiled
    value of an assignment that ties it may lie that far above) and the evaluator's noise."""
    held = session.held_sum(bucket.members)
    session.builder.cut_above(objective, Fraction(held) + Fraction(bucket.error)
                              + Fraction(EXACT * abs(held) + FLOAT_NOISE))


def blended(session: Session, form: Integerized, incumbent: int | None,
             budget: float | None) -> tuple[int, cp_model.CpSolver | None, int | None,
                                            float | None]:
    """Minimize weight·objective + moves (weight > most moves keeps the objective first),
    no worse than ``incumbent`` when given. Returns the status, the solver, the objective's
    incumbent (integer units) and its bound (user's scale). When proven, the bound on the
    whole also bounds the moves of every assignment at that objective (kept in
    ``session.blend_floor`` for the freeze to turn into a cut)."""
    builder = session.builder
    most = builder.problem.num_objects
    weight = most + 1
    if incumbent is not None:
        builder.cp.add(form.expr <= incumbent)
    moved = moved_objects(builder)
    objective = form.expr * weight + moved
    session.progress.show(objective, form.factor, form.lo, weight)
    session.progress.phase("search with moves")
    status, solver = session.solve(objective, budget)
    value, _, bound = bucket_values(status, solver, form.expr, form.factor, (weight, most))
    if status == cp_model.OPTIMAL:  # (exactly: the float objective_value loses units near 1e17)
        session.blend_floor = int(solver.value(objective))
    elif value is None:
        return status, None, incumbent, None
    return status, solver, value if incumbent is None else min(incumbent, value), bound


def pure_then_blended(session: Session, form: Integerized, budget: float | None, t0: float,
                       weight: int | None, probes: list[TargetProbe],
                       held: Callable[[list[int]], int], position: int, floor: int
                       ) -> tuple[int, cp_model.CpSolver, int | None, float | None,
                                  float | None]:
    """The objective alone: a first search (where it finds nothing better than the value
    ``held`` gives the assignment held before it, a local search from there, down towards
    the bucket's ``floor``: ``stalled_search``), the goals' target probes, a probe at its
    bound (coarse objectives), the descent over containers from its incumbent (most of the
    share left), the rest of the pure share; then, if still unproven, the rest of the share
    blended with moves (``weight`` None when that does not fit in 64 bits). An incumbent
    that meets the ``floor`` (to relative EXACT) ends it OPTIMAL, whichever step found it."""
    shares = session.budget
    builder = session.builder
    before = session.values
    floor = max(floor, form.lo)

    def at_floor(value: int) -> bool:
        return at_form_floor(form, floor, value)

    status, solver = session.solve(form.expr,
                                   None if budget is None else shares.first_share * budget)
    incumbent, objective, bound = bucket_values(status, solver, form.expr, form.factor)
    if status == cp_model.FEASIBLE and at_floor(incumbent):
        status, bound = cp_model.OPTIMAL, floor_bound(form, floor, bound)
    if (budget is not None and status in (cp_model.FEASIBLE, cp_model.UNKNOWN)
            and before is not None
            and (incumbent is None or incumbent >= held(before))):
        left = budget - (time.monotonic() - t0)
        found = stalled_search(session, form, shares.stalled_search_share * left,
                               shares.stalled_search_most * left, position,
                               floor_bound(form, floor, bound))
        if found is not None and (incumbent is None or found < incumbent):
            incumbent, objective = found, float(Fraction(found) / form.factor)
            status = cp_model.FEASIBLE
            if at_floor(incumbent):
                status, bound = cp_model.OPTIMAL, floor_bound(form, floor, bound)
    if probes and budget is not None and status in (cp_model.FEASIBLE, cp_model.UNKNOWN):
        session.progress.phase("target probes")
        found = target_probes(session, form, probes,
                               shares.target_probe_share * (budget - (time.monotonic() - t0)))
        if found is not None and (incumbent is None or found < incumbent):
            incumbent, objective = found, float(Fraction(found) / form.factor)
            status = cp_model.FEASIBLE
            if at_floor(incumbent):
                status, bound = cp_model.OPTIMAL, floor_bound(form, floor, bound)
    probed = descended = False
    for _ in range(2 if budget is not None else 0):
        if status == cp_model.FEASIBLE and bound is not None and not probed:
            probed = True
            left = shares.probe_share * (budget - (time.monotonic() - t0))
            session.progress.phase("probes at the bound")
            found = probe(session, form, incumbent, round(bound * form.factor), left)
            if found is not None:
                incumbent, low = found
                objective = float(Fraction(incumbent) / form.factor)
                bound = float(Fraction(low) / form.factor)
                status = cp_model.OPTIMAL if low >= incumbent else status
        if status not in (cp_model.FEASIBLE, cp_model.UNKNOWN):
            break
        if (status == cp_model.FEASIBLE and not descended and session.values is not None
                and session.accelerate):
            descended = True
            left = shares.neighbourhood_share * (budget - (time.monotonic() - t0))
            session.progress.phase("descent over containers")
            session.values, better = descend(builder, form.expr, session.values, incumbent,
                                           time.monotonic() + left, session, form.lo)
            if better < incumbent:
                incumbent, objective = better, float(Fraction(better) / form.factor)
            if at_floor(incumbent):
                status, bound = cp_model.OPTIMAL, floor_bound(form, floor, bound)
                break
        # the rest of the pure share (the first search may not even finish presolving); all
        # of the bucket's while nothing is found, as the blended search needs an incumbent
        left = ((shares.pure_share if incumbent is not None else 1.0) * budget
                - (time.monotonic() - t0))
        if left <= 0.05:
            break
        if incumbent is not None:
            builder.cp.add(form.expr <= incumbent)
        session.progress.phase("search")
        again, solver_b = session.solve(form.expr, left)
        better, _, bound_b = bucket_values(again, solver_b, form.expr, form.factor)
        if better is not None or again == cp_model.INFEASIBLE and incumbent is None:
            solver, status = solver_b, again
        if better is not None:
            incumbent, objective = better, float(Fraction(better) / form.factor)
            bound = max((b for b in (bound, bound_b) if b is not None), default=None)
            if status == cp_model.FEASIBLE and at_floor(incumbent):
                status, bound = cp_model.OPTIMAL, floor_bound(form, floor, bound)
    if status == cp_model.FEASIBLE and budget is not None and weight is not None:
        # Stopped by time: spend the rest of the share on weight·objective + moves. An
        # incumbent found by large neighbourhoods tends to move far more than needed; this
        # pulls it back towards the initial assignment, for later buckets and for the user.
        left = budget - (time.monotonic() - t0)
        again, _, better, bound_b = blended(session, form, incumbent, left)
        if better is not None:
            incumbent = better
            objective = float(Fraction(incumbent) / form.factor)
            bound = max((b for b in (bound, bound_b) if b is not None), default=None)
            status = cp_model.OPTIMAL if again == cp_model.OPTIMAL else cp_model.FEASIBLE
    return status, solver, incumbent, objective, bound


def stalled_search(session: Session, form: Integerized, seconds: float, most: float,
                   position: int, floor: float) -> int | None:
    """Where CP-SAT's first search found nothing better than the assignment held (a large
    model it had no time to get into), a local search from that assignment, priced in
    batches, for ``seconds``, then slices as long again while each lowers the tuple, up to
    the bucket's ``position``, by the budget's ``walk_gain`` of its value or of its
    distance above the ``floor`` known for it, and until it meets that floor
    (``tuples.gained``; ``most`` seconds in all, at most; a gain only after that position
    leaves the time to the bucket's own search): on such models it often walks far below
    in the time CP-SAT would take to start. Its answer is kept for the end
    (``session.searched``) and, when the model takes it, held, so that the searches after
    start from it. Returns its objective (integer units) when held, else None."""
    builder = session.builder
    problem, model = builder.problem, session.model
    if (session.values is None or not session.accelerators or seconds <= 0.05
            or session.interrupted or not batchable(problem, model)):
        return None

    def stop() -> None:
        session.interrupted = True

    session.progress.phase("local search")
    end = time.monotonic() + max(seconds, most)
    found = None  # the last slice's answer and its evaluation
    while not session.interrupted:  # slices while the walk descends
        more = local_search.descend(problem, model,
                                    session.decode() if found is None else found[0],
                                    min(time.monotonic() + seconds, end),
                                    session.options.seed, stop, carried=session.carried)
        if more is None:
            break
        descending = found is None or tuples.gained(more[1], found[1],
                                                    session.budget.walk_gain, position, floor)
        found = more
        if (not descending or time.monotonic() + seconds / 2 >= end
                or meets(found[1].positions.get(position, math.inf), floor)):
            break
    if found is None:
        return None
    keep_answer(session, found)
    counts = builder.counts_of(found[0])
    if counts is None or not session.start_from(counts, form.expr):
        return None
    return session.start_value


def keep_answer(session: Session, found: tuple[np.ndarray, Evaluation]) -> None:
    """Keep an assignment and its evaluation for the final choice (``session.searched``)
    where it is ahead of the one kept."""
    if session.searched is None or tuples.ahead(found[1], session.searched[1]):
        session.searched = found


def closure_seconds(session: Session, budget: float | None, t0: float) -> float | None:
    """The exact closure's time: what the bucket's share has left, and at least
    ``closure_share`` of it."""
    if budget is None:
        return session.wall_limit()
    return session.wall_limit(max(budget - (time.monotonic() - t0),
                                  session.budget.closure_share * budget))


def finish(session: Session, bucket: Bucket, form: Integerized, status: int,
           incumbent: int | None, objective: float | None, bound: float | None,
           error: float, seconds: float | None) -> BucketReport:
    """Freeze the bucket and report it. A compiled optimum on rounded forms goes through
    the exact closure first (solve.closure): it may hold a better assignment, prove the
    exact value, and hold the buckets after to the assignments that tie it."""
    closed = None
    if status == cp_model.OPTIMAL and incumbent is not None and closure.wanted(
            session, bucket, error, None if bound is None else bound - bucket.over):
        closed = closure.close_bucket(session, bucket, form, error, seconds)
    if closed is not None:
        incumbent = closed.incumbent
        objective = float(Fraction(incumbent) / form.factor)
        if bound is not None and objective < bound:
            # a compiled value below the compiled optimum proven: that proof was wrong
            # (CP-SAT's presolve has claimed OPTIMAL on models with large coefficients),
            # and so is the floor on moves a blended search proved with it
            bound = session.blend_floor = None
            if not closed.complete:
                status = cp_model.FEASIBLE
        if closed.complete:
            bucket.exact_bound = closed.value
    report = freeze(session, bucket, form, status, incumbent, objective, bound, error)
    if closed is not None and closed.complete:
        session.builder.cp.add_allowed_assignments(session.builder.count_vars, closed.ties)
    return report


def outer_level(session: Session, bucket: Bucket, form: Integerized, incumbent: int,
                slack: int) -> tuple[int, int]:
    """The freeze level and slack of a model with outer pieces (``pwl.refine``), which lie
    below g and are exact only where cut: the assignment held, at its compiled value with
    the cuts made at it, must stay feasible; and an assignment whose exact value ties the
    held one's lies at most ``bucket.over`` above it, plus what the held one's compiled
    value still lies below its exact value. Tighter than twice the stated error, which
    counts the pieces' gaps between cuts. Held values older than some of the objective's
    variables (no solve since this bucket's objective was built) keep the general rule;
    variables built since for other ends (the exact closure's) do not matter. Held values
    from a solve for another objective may leave the form's bounding variables (excesses
    held from below only) above their least: the held value above the incumbent is then
    taken again with them at their least, else the freeze would not hold the bucket."""
    if not expr_known(form.expr, session.values):
        return incumbent, slack
    held = expr_value(form.expr, session.values)
    if held > incumbent and session.start_from(
            session.values[: len(session.builder.count_vars)], form.expr):
        held = session.start_value
    exact = session.held_sum(bucket.members) * form.factor
    tight = math.floor(bucket.over * form.factor + max(0, exact - held)) + 1
    return max(incumbent, held), min(slack, tight)


def freeze(session: Session, bucket: Bucket, form: Integerized, status: int,
            incumbent: int | None, objective: float | None, bound: float | None,
            error: float) -> BucketReport:
    """Hold the bucket at its incumbent for the buckets after it, and report it."""
    builder = session.builder
    weight = builder.problem.num_objects + 1
    # the form's lowest value bounds it too (a blended search's bound can fall below it, or
    # a stopped search can give none at all while its incumbent sits there)
    if bound is not None or incumbent is not None and incumbent <= form.lo:
        bound = floor_bound(form, form.lo, bound)
    if incumbent is not None and bound is not None and bound >= objective:
        status = cp_model.OPTIMAL  # the bound met the incumbent: proven, though late
    lowest_caps, session.lowest_caps = session.lowest_caps, None
    if incumbent is not None:
        # freeze this bucket; where the model approximates, keep every assignment whose
        # exact value may tie the incumbent's: its compiled value lies at most ``over``
        # above its exact one, the incumbent's at most ``error`` below (in whole units).
        # Later buckets may pick any of them, so that slack adds to the error.
        # (no further than the form's highest value: a coarse scale's slack may exceed it, and
        # CP-SAT's 64 bits)
        slack = math.floor((error + bucket.over) * form.factor)
        if builder.outer and session.values is not None:
            incumbent, slack = outer_level(session, bucket, form, incumbent, slack)
        # and every assignment within what OPTIMAL promises of it (relative EXACT, kept
        # within it however the sign): they tie it, so the later positions decide between
        # them, as the exact closure and the brute-force tests judge
        slack += math.floor(EXACT * abs(incumbent) / (1 + EXACT))
        if bucket.allowance is not None:  # later buckets may worsen this one that far
            value = Fraction(incumbent) / form.factor
            allowed_up_to = bucket.allowance.limit(value)
            slack += math.floor((allowed_up_to - value) * form.factor)
        slack = min(slack, max(form.hi - incumbent, 0))
        builder.cp.add(form.expr <= incumbent + slack)
        if (incumbent + slack <= form.lo and lowest_caps and session.values is not None
                and caps_hold(builder, lowest_caps, session.values)):
            # frozen at its lowest value: the limits read for that value hold from now on,
            # and the moves they force bound a later bucket without another presolve
            session.moved_floor = max(session.moved_floor, add_move_cuts(builder, lowest_caps))
        if session.blend_floor is not None:  # weight·objective + moves >= floor held for all
            floor = session.blend_floor - weight * (incumbent + slack)
            builder.cp.add(moved_objects(builder) >= floor)
            session.moved_floor = max(session.moved_floor, floor)
    session.blend_floor = None
    report = bucket_report(bucket.position, status, objective, bound, error)
    if incumbent is not None:
        report.freeze_slack = float(Fraction(slack) / form.factor)
        if bucket.allowance is not None:
            report.allowed_up_to = float(allowed_up_to)
            report.stage_value = session.held_sum(bucket.members)
    if len(bucket.members) > 1:
        report.positions = list(bucket.members)
    return report
