"""The solve, as its list of stages: compile, start, the buckets in tuple order, the fewest
moves at the optima, evaluate, check, explain."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TypeVar

import numpy as np

from ..cpsat.builder import CpBuilder
from ..errors import OutOfTime
from ..evaluate import Evaluation, batchable, evaluate
from ..interrupts import holding_signals
from ..problem import Problem
from ..progress import Progress, ProgressEvent
from ..result import FEASIBLE, INFEASIBLE, NO_SOLUTION, OPTIMAL, BucketReport, SolveResult
from ..scenario import Model, SolverOptions
from . import coarse, large
from .accelerate import local_search, pass_cost, tuples
from .bucket import keep_answer, solve_bucket
from .budget import DEFAULT_BUDGET, Budget
from .check import check_result, settle
from .compile import compile_model
from .explain import explain_infeasibility
from .leximin import solve_leximin
from .moves import fewest_moves
from .positions import EXACT, FLOAT_NOISE, Bucket, meets, planned, relative_gap
from .session import Session

T = TypeVar("T")


def solve_model(problem: Problem, model: Model, options: SolverOptions,
                aggregate: bool = True, hint: np.ndarray | None = None,
                accelerate: bool = True, budget: Budget = DEFAULT_BUDGET,
                on_progress: Callable[[ProgressEvent], None] | None = None) -> SolveResult:
    """Solve every bucket in tuple-position order and evaluate the result independently.
    ``on_progress`` receives the solve's progress events (see :mod:`..progress`).

    ``hint``, an assignment (a heuristic's, say), is where the search starts when it keeps the
    hard constraints and beats the initial one: the answer is then never worse than it.
    The time limit covers everything from here (compilation included). A session stopped
    early (time, Ctrl-C) returns its best assignment as FEASIBLE with the bounds reached;
    with no assignment at all, the initial one with status NO_SOLUTION; when the hard
    constraints cannot all hold, INFEASIBLE with the constraints that conflict."""
    started = time.monotonic()
    model.check_solvable()
    progress = Progress(on_progress, options.time_limit, started)
    with progress.running():
        result = _solve(problem, model, options, aggregate, hint, accelerate, budget, progress)
        progress.done(result.status, result.termination)
    return result


def _solve(problem: Problem, model: Model, options: SolverOptions, aggregate: bool,
           hint: np.ndarray | None, accelerate: bool, budget: Budget,
           progress: Progress, started: float | None = None) -> SolveResult:
    # (``started``: when this solve's time limit began, if not with the whole solve's)
    started = progress.started if started is None else started
    deadline = None if options.time_limit is None else started + options.time_limit
    progress.phase("initial evaluation")
    initial, came = settled(lambda: evaluate(problem, model, problem.initial))
    if came:  # Ctrl-C before any search: the initial assignment, as it is
        return stopped_at_start(problem, initial, started, "interrupted")
    relaxed = coarse.relaxation(problem, model, options) if accelerate and aggregate else None
    fallback = None  # the relaxation's answer lifted, with the bounds it proves
    if relaxed is not None:
        progress.phase("coarse relaxation")
        limit = options.time_limit
        relaxed_options = replace(options, time_limit=None if limit is None
                                  else budget.coarse_share * limit)
        relaxed_result = _solve(relaxed.problem, relaxed.model, relaxed_options, aggregate,
                                hint, accelerate, budget, progress)
        if relaxed_result.termination == "interrupted":
            return stopped_at_start(problem, initial, started, "interrupted")
        try:
            with_budgets = budgeted_relaxation(problem, model, relaxed, relaxed_result,
                                               options, aggregate, accelerate, budget,
                                               progress, started)
        except KeyboardInterrupt:  # Ctrl-C between its solves
            with_budgets = replace(relaxed_result, termination="interrupted")
        came = with_budgets.termination == "interrupted"
        if not came:
            relaxed_result = with_budgets
        progress.phase("lift")
        fallback, came_now = settled(lambda: coarse.lifted(
            problem, model, relaxed_result, initial, time.monotonic() - started))
        if came or came_now:  # the relaxation's answer lifted, or the initial one
            if fallback is None:
                return stopped_at_start(problem, initial, started, "interrupted")
            check_result(fallback.final_evaluation, fallback.buckets)
            fallback.termination = "interrupted"
            return fallback
        if fallback is not None:
            check_result(fallback.final_evaluation, fallback.buckets)
            if fallback.status == OPTIMAL:
                return fallback
            if hint is None or tuples.ahead(fallback.final_evaluation,
                                            evaluate(problem, model, hint)):
                hint = fallback.final
    if large.too_large(problem, model, options) and options.plan.lexicographic:
        return neighbourhood_answer(problem, model, options, budget, progress, initial,
                                    fallback, started)
    try:
        progress.phase("compile")
        builder, buckets = compile_model(problem, model, aggregate, accelerate=accelerate,
                                         seconds=options.time_limit, deadline=deadline,
                                         leximin=not options.plan.blended,
                                         scalar_positions=frozenset(options.plan.allowances))
    except (KeyboardInterrupt, OutOfTime) as stop:  # Ctrl-C (or SIGTERM) while compiling
        termination = "time_limit" if isinstance(stop, OutOfTime) else "interrupted"
        if fallback is None:
            given, _ = settled(lambda: hinted(problem, model, initial, hint, options))
            return stopped_at_start(problem, initial, started, termination, given)
        fallback.seconds = time.monotonic() - started
        return fallback
    session = Session(builder, model, options, started, budget, progress, accelerators=accelerate)
    session.carried = local_search.Carried()
    early = None
    try:
        if options.plan.lexicographic:  # it judges in the plain order only
            progress.phase("local search from the start")
            early = early_floor(session, initial)
        progress.phase("start")
        start(session, initial, hint, None if early is None else early[0])
    except KeyboardInterrupt:
        session.interrupted = True
    buckets = planned(buckets or {0: Bucket(0)}, options.plan)
    reports, stop = solve_buckets(session, buckets)
    polish_stopped = False
    # the fewest moves at the buckets' values only where each is proven: where one is not,
    # the local-search floor after the chain may still improve it, and takes that time
    unproven = any(r.status != OPTIMAL for r in reports) and session.reserve > 0 and (
        options.plan.lexicographic)
    if stop is None and session.values is not None and not unproven:
        progress.after_buckets("fewest moves")
        held = list(session.values)
        try:
            fewest_moves(session, started)
        except KeyboardInterrupt:  # the buckets stand proven; only the tie-break is cut
            polish_stopped = session.interrupted = True
        # the frozen values are compiled ones: a closure that listed assignments may hold
        # one the evaluator ranks above others at the same compiled value
        if session.values != held and tuples.outranks(
                evaluate(problem, model, session.decode(held)),
                evaluate(problem, model, session.decode())):
            session.values = held
    infeasible = stop == "infeasible"
    final = problem.initial.copy() if infeasible else session.decode()
    holding_initial = session.values is None and initial.feasible and not infeasible
    progress.after_buckets("evaluate")
    final_eval, came = (initial, False) if holding_initial else settled(
        lambda: evaluate(problem, model, final))
    proven = all(r.status == OPTIMAL and (r.position not in buckets
                                          or exactly_proven(buckets[r.position], r, final_eval))
                 for r in reports)
    if (session.reserve and not infeasible and not session.interrupted and not proven
            and options.plan.lexicographic):  # the floor improves in the plain order only
        floor = None
        if came:  # Ctrl-C: the chain's answer stands, without the floor
            polish_stopped = True
        else:
            progress.after_buckets("local search floor")
            try:
                floor = move_floor(session, final)
            except KeyboardInterrupt:
                session.interrupted = True
            polish_stopped |= session.interrupted
        if floor is not None and tuples.outranks(floor[1], final_eval):
            unsettle_after(reports, final_eval, floor[1])
            final, final_eval = floor
    given, came_now = settled(lambda: hinted(problem, model, initial, hint, options))
    polish_stopped |= came_now
    for searched in (early, session.searched, given):  # the local searches', the hint
        # (each keeps the hard rules: where the chain held nothing, it is the answer)
        if searched is not None and not infeasible and (
                not final_eval.feasible or tuples.outranks(searched[1], final_eval)):
            unsettle_after(reports, final_eval, searched[1])
            final, final_eval = searched
    unsettle_below(reports, buckets, final_eval)
    for report in reports:
        report.objective = sum(final_eval.positions.get(p, 0.0)
                               for p in buckets[report.position].members)
        if report.position in final_eval.leximin:
            report.leximin = list(final_eval.leximin[report.position])
    held = session.values is not None or holding_initial or final_eval.feasible
    if held and not infeasible:
        progress.after_buckets("check")
        check_result(final_eval, reports)
        for report in reports:
            if report.status == NO_SOLUTION:  # a search's answer, where the chain held none
                report.status = FEASIBLE
            settle(report, buckets[report.position])
        if fallback is not None:
            coarse.merge_bounds(reports, fallback.buckets)
    name_work_limits(session, reports)
    stop = "work_limit" if stop == "time_limit" and session.out_of_work() else stop
    status = overall_status(reports, stop, infeasible, not held)
    conflict = []
    if infeasible:
        progress.after_buckets("explain")
        conflict = explain(session, problem, model, options)
    termination = stop or ("interrupted" if polish_stopped else "optimal"
                           if status == OPTIMAL else next(
                               (r.termination for r in reports
                                if r.termination in ("approximated", "work_limit")),
                               "time_limit"))
    if (fallback is not None and held and not infeasible
            and tuples.outranks(fallback.final_evaluation, final_eval)):
        fallback.seconds = time.monotonic() - started
        return fallback  # the whole model's search ended behind the relaxation's lift
    return SolveResult(problem, status, termination, final, initial, final_eval, reports,
                       time.monotonic() - started, builder.roundings | builder.errors, conflict,
                       classes=len(builder.classes.members), lp_values=session.lp_values)


ROUTED_SHARE = 0.25  # of the relaxation's time left after its first restriction
ROUTED_CONFIGURATION_SHARE = 0.7  # of the relaxation with budgets' movement bucket


def budgeted_relaxation(problem: Problem, model: Model, relaxed: coarse.Relaxation,
                        result: SolveResult, options: SolverOptions, aggregate: bool,
                        accelerate: bool, budget: Budget, progress: Progress,
                        started: float) -> SolveResult:
    """Where the relaxation's answer breaks the move budgets of the specs it leaves out
    (no choice of the objects that stay keeps them, so its lift cannot keep its values),
    the relaxation again with those budgets (``coarse.with_budgets``): its answer lifts,
    and its bounds hold for the whole model. Its search starts from an answer that keeps
    them by construction: the relaxation with members fixed home (``coarse.stayers``,
    a quarter of the time left), whose own bounds prove nothing. Where its last
    configuration LP routes the budgets' stays (``coarse.routed_stayers``), those fixed
    home once more (ROUTED_SHARE of the time after the first restriction) often reach
    what the LP says. Returns its answer where there is one, else ``result``."""
    budgeted = coarse.with_budgets(problem, model, relaxed)
    if budgeted is None or evaluate(budgeted.problem, budgeted.model, result.final).feasible:
        return result
    limit = options.time_limit
    left = None if limit is None else started + budget.coarse_share * limit - time.monotonic()
    if left is not None and left <= 0:
        return result
    progress.phase("relaxation with move budgets")
    fixed = coarse.stayers(budgeted, result.final)
    start = _solve(fixed.problem, fixed.model,
                   replace(options, time_limit=None if left is None else left / 4), aggregate,
                   result.final, accelerate, budget, progress, time.monotonic())
    if start.termination == "interrupted":  # the caller stops (a restriction's answer is
        return start                        # never taken for the relaxation's)
    if start.status == NO_SOLUTION:
        return result
    left = None if limit is None else started + budget.coarse_share * limit - time.monotonic()
    if left is not None and left <= 0:
        return result
    # its configuration LP's bound and routing are what it is for: they may take most of
    # a movement bucket's share
    answer = _solve(budgeted.problem, budgeted.model,
                    replace(options, time_limit=None if left is None
                            else (1 - ROUTED_SHARE) * left),
                    aggregate, start.final, accelerate,
                    replace(budget, configuration_share=ROUTED_CONFIGURATION_SHARE), progress,
                    time.monotonic())
    if answer.status == NO_SOLUTION:
        return result
    routed = coarse.routed_stayers(budgeted, answer)
    if routed is None or answer.termination == "interrupted":
        return answer
    left = None if limit is None else started + budget.coarse_share * limit - time.monotonic()
    if left is not None and left <= 0:
        return answer
    pointed = _solve(routed.problem, routed.model, replace(options, time_limit=left), aggregate,
                     answer.final, accelerate, budget, progress, time.monotonic())
    if pointed.termination == "interrupted":  # the caller stops
        return pointed
    if pointed.status == NO_SOLUTION:
        return answer
    return coarse.better_answer(budgeted, answer, pointed.final)


def neighbourhood_answer(problem: Problem, model: Model, options: SolverOptions,
                         budget: Budget, progress: Progress, initial: Evaluation,
                         fallback: SolveResult | None, started: float) -> SolveResult:
    """The whole model is too large to build in the time limit: the start (the coarse
    relaxation's lift where there is one) improved by single moves and swaps where a batch
    prices them, then by the large-neighbourhood search (``large``); FEASIBLE with the
    bounds the lift proved before the first position the searches improved, the floors
    (``Model.floors``) elsewhere; OPTIMAL at the positions leading at their floors."""
    base = fallback if fallback is not None else stopped_at_start(
        problem, initial, started, "time_limit")
    if not base.final_evaluation.feasible and not batchable(problem, model):
        base.seconds = time.monotonic() - started
        return base  # nothing here repairs it
    progress.phase("neighbourhood search")
    interrupted = False

    def sub_solve(sub_model: Model, start: np.ndarray, sub_options: SolverOptions
                  ) -> SolveResult:
        # without the accelerators: they read the start, where held objects no longer are;
        # its time limit starts now
        nonlocal interrupted
        result = _solve(problem, sub_model, sub_options, True, start, False, budget, progress,
                        time.monotonic())
        interrupted |= result.termination == "interrupted"
        return result

    def stop() -> None:
        nonlocal interrupted
        interrupted = True

    carried = local_search.Carried()  # the walk the descents here share

    def touched_up(x: np.ndarray, _: Evaluation) -> tuple[np.ndarray, Evaluation] | None:
        return local_search.descend(problem, model, x, deadline, options.seed, stop,
                                    hot_first=True, carried=carried, touch_up=True)

    deadline = started + options.time_limit
    final, final_eval = base.final, base.final_evaluation
    reports = base.buckets
    if batchable(problem, model):  # single moves first (a repair first), where a batch
        # prices them, until no move helps: the sub-models are for a walk that has stopped;
        # the walk goes on around what each better sub-model changed (``touched_up``)
        searched = local_search.descend(problem, model, final, deadline, options.seed, stop,
                                        hot_first=True, carried=carried)
        if searched is not None:
            unsettle_after(reports, final_eval, searched[1])
            final, final_eval = searched
    if not final_eval.feasible:
        base.seconds = time.monotonic() - started
        return base
    found = None if interrupted else large.search(
        problem, model, options, final, final_eval, deadline, sub_solve, lambda: interrupted,
        stop, touched_up if batchable(problem, model) else None)
    if found is not None:
        unsettle_after(reports, final_eval, found[1])
        final, final_eval = found
    floors = model.floors()
    leading = True  # every position before this one proven
    for report in sorted(reports, key=lambda r: r.position):
        # a position no search improved stays as the start left it
        report.objective = final_eval.positions.get(report.position, report.objective)
        floor = floors.get(report.position, -math.inf)  # no assignment is lower here
        if report.position not in final_eval.leximin and math.isfinite(floor) and (
                report.bound is None or report.bound < floor):
            report.bound = floor
            report.gap = max(0.0, report.objective - floor)
            report.relative_gap = relative_gap(report.gap, report.objective)
            if leading and meets(report.objective, floor):  # and the positions before it
                report.status, report.termination = OPTIMAL, "optimal"  # are proven
        if report.status != OPTIMAL:
            if final_eval is not base.final_evaluation:
                report.status = FEASIBLE
            report.termination = "interrupted" if interrupted else "time_limit"
        leading = report.status == OPTIMAL
    check_result(final_eval, reports)
    status = OPTIMAL if all(r.status == OPTIMAL for r in reports) else FEASIBLE
    termination = ("optimal" if status == OPTIMAL
                   else "interrupted" if interrupted else "time_limit")
    return SolveResult(problem, status, termination, final, initial, final_eval, reports,
                       time.monotonic() - started, dict(base.approximation), [],
                       classes=base.classes)


def early_floor(session: Session, initial: Evaluation
                ) -> tuple[np.ndarray, Evaluation] | None:
    """A local search from the initial assignment (single moves and swaps judged by the
    evaluator) before the chain, until it converges or its share of the time left ends.
    The chain starts from its answer where that is better, and the answer returned is never
    worse than it: a local search from the same start is the floor of what the solve
    returns. Skipped where the share cannot hold a useful part of a pass of single moves
    (priced by ``pass_cost.pass_seconds``): there it would only take time from the
    search. A start that breaks hard rules is first repaired where a batch prices moves,
    however long a pass (``Budget.early_repair_share``)."""
    problem, shares = session.builder.problem, session.budget
    if not session.reserve or not (initial.feasible or batchable(problem, session.model)):
        return None

    def stop() -> None:
        session.interrupted = True

    def share(fraction: float) -> float:
        remaining = session.remaining()  # (less than the limit after a coarse relaxation)
        return fraction * min(session.options.time_limit, max(remaining or 0.0, 0.0))

    found, start, began = None, problem.initial, time.monotonic()
    seconds = min(share(shares.early_search_share), shares.early_search_seconds)
    if not initial.feasible:
        found = local_search.descend(problem, session.model, start,
                                     began + share(shares.early_repair_share),
                                     session.options.seed, stop, carried=session.carried,
                                     until_feasible=True)
        if found is None or session.interrupted:
            return found
        start = found[0]
        seconds -= time.monotonic() - began  # the repair spent the search's time first
    if pass_cost.pass_seconds(problem, session.model) * shares.early_search_passes > seconds:
        return found
    searched = local_search.descend(problem, session.model, start, time.monotonic() + seconds,
                                    session.options.seed, stop, carried=session.carried)
    return searched or found


def start(session: Session, initial: Evaluation, hint: np.ndarray | None,
          searched: np.ndarray | None = None) -> None:
    """Hold the best start: the hint, the early local search's answer (``searched``) or a
    spec's suggestion where it beats the initial assignment, else the initial assignment
    when it keeps the hard constraints."""
    builder = session.builder
    candidates = [c for c in (hint, searched) if c is not None] + builder.suggested_starts
    counts = better_start(builder, session.model, initial, candidates)
    if counts is not None:
        session.start_from(counts)
    elif initial.feasible:
        session.start_from()


def settled(compute: Callable[[], T]) -> tuple[T, bool]:
    """``compute()`` (an evaluation), which the answer needs whole: when Ctrl-C cuts it, it
    is computed again with Ctrl-C and SIGTERM held back meanwhile. Returns its value and
    whether an interrupt came."""
    try:
        return compute(), False
    except KeyboardInterrupt:
        with holding_signals():
            return compute(), True


def better_start(builder: CpBuilder, model: Model, initial: Evaluation,
                 candidates: list[np.ndarray]) -> list[int] | None:
    """The counts of the best candidate (the user's hint, a spec's suggestion) that keeps the
    hard constraints and beats the initial assignment (lexicographically); None to start
    from the initial assignment."""
    best: tuple[tuple, list[int]] | None = None
    for candidate in candidates:
        proposed = evaluate(builder.problem, model, candidate)
        counts = builder.counts_of(candidate)
        if not proposed.feasible or counts is None:
            continue
        if initial.feasible and proposed.tuple() >= initial.tuple():
            continue
        if best is None or proposed.tuple() < best[0]:
            best = (proposed.tuple(), counts)
    return None if best is None else best[1]


def solve_buckets(session: Session, buckets: dict[int, Bucket]
                  ) -> tuple[list[BucketReport], str | None]:
    """Each bucket in tuple order, frozen before the next. Returns their reports and why the
    chain stopped early (infeasible, time_limit, interrupted), None when it did not."""
    reports: list[BucketReport] = []
    stop: str | None = None
    for index, (position, bucket) in enumerate(buckets.items()):
        t0 = time.monotonic()
        remaining = session.remaining()
        if stop is None and remaining is not None and remaining <= 0:
            stop = "interrupted" if session.interrupted else "time_limit"
        if stop is not None:
            reports.append(BucketReport(position, "NOT_SOLVED", stop, 0.0, None, None, None,
                                        None, bucket.error, 0.0))
            continue
        # under a time limit, a bucket gets its weighted share of what is left
        # (Budget.bucket_weight), so a hard first bucket cannot starve the later ones; time
        # it does not use flows on. Until some assignment keeps the hard rules, all of it:
        # the later buckets need one. Not in a deterministic run, whose steps depend on no
        # clock (see Session.wall_limit)
        weight = session.budget.bucket_weight
        share = (None if remaining is None or session.deterministic
                 else remaining if session.values is None
                 else remaining * weight / (weight + len(buckets) - index - 1))
        solve = solve_leximin if bucket.leximin else solve_bucket
        session.progress.start_bucket(position, "leximin" if bucket.leximin else "objective")
        try:
            report = solve(session, bucket, share)
            keep_held(session, bucket)
        except KeyboardInterrupt:  # in any phase: the solution held stands
            session.interrupted = True
            report = BucketReport(position, "NOT_SOLVED", "interrupted", 0.0, None, None,
                                  None, None, bucket.error, 0.0)
        with holding_signals() as came:  # a Ctrl-C here stops the chain, the report kept
            report.seconds = time.monotonic() - t0
            reports.append(report)
            if report.status == INFEASIBLE:
                stop = "infeasible"
            elif report.status == NO_SOLUTION:
                # nothing better found in time; an earlier bucket's assignment (if any) stands
                stop = "time_limit"
                if session.values is not None:
                    report.status = FEASIBLE
            session.progress.end_bucket(report.status, report.compiled_objective,
                                        report.bound)
        session.interrupted |= bool(came)
        if session.interrupted:
            stop = "interrupted"
            report.termination = "interrupted"
    return reports, stop


def keep_held(session: Session, bucket: Bucket) -> None:
    """Offer the assignment a bucket on rounded forms ends with to the final choice (as
    ``session.searched``): the buckets after it hold it only within its stated error, so
    they may trade some of its exact value for a later position's, where the final choice
    compares exact tuples. In the plain lexicographic order (an allowed worsening or a
    blended sum judges positions otherwise)."""
    if (bucket.error <= 0 or session.values is None
            or not session.options.plan.lexicographic):
        return
    assignment = session.decode()
    evaluation = evaluate(session.builder.problem, session.model, assignment)
    if evaluation.feasible:
        keep_answer(session, (assignment, evaluation))


def overall_status(reports: list[BucketReport], stop: str | None, infeasible: bool,
                   nothing_held: bool) -> str:
    if infeasible:
        return INFEASIBLE
    if nothing_held:
        return NO_SOLUTION
    if stop is None and all(r.status == OPTIMAL for r in reports):
        return OPTIMAL
    return FEASIBLE


def explain(session: Session, problem: Problem, model: Model,
            options: SolverOptions) -> list[str]:
    """The conflicting constraints, in the time left (at most the budget's share)."""
    remaining = session.remaining()
    seconds = session.budget.explain_seconds
    try:
        return explain_infeasibility(problem, model, options,
                                     seconds if remaining is None else min(seconds, remaining))
    except KeyboardInterrupt:  # the proof of infeasibility stands; its explanation is cut
        return ["(not explained: interrupted)"]


def stopped_at_start(problem: Problem, initial: Evaluation, started: float,
                     termination: str,
                     given: tuple[np.ndarray, Evaluation] | None = None) -> SolveResult:
    """Stopped (interrupted, or out of time) before any search: the initial assignment, as
    it is, or the ``given`` one (a hint better than it)."""
    final, final_eval = given if given is not None else (problem.initial.copy(), initial)
    reports = [BucketReport(position, "NOT_SOLVED", termination, value, None, None, None,
                            None, 0.0, 0.0) for position, value in final_eval.positions.items()]
    status = FEASIBLE if final_eval.feasible else NO_SOLUTION
    return SolveResult(problem, status, termination, final, initial, final_eval,
                       reports, time.monotonic() - started, {}, [], classes=0)


def hinted(problem: Problem, model: Model, initial: Evaluation, hint: np.ndarray | None,
           options: SolverOptions) -> tuple[np.ndarray, Evaluation] | None:
    """The hint and its evaluation, where it keeps every rule and beats the initial
    assignment in the plain lexicographic order: the least a hinted solve returns, however
    early it stops. (A plan that optimizes some positions only, or blends them, judges
    answers otherwise.)"""
    if hint is None or not options.plan.lexicographic:
        return None
    evaluation = evaluate(problem, model, hint)
    if evaluation.feasible and (not initial.feasible or tuples.ahead(evaluation, initial)):
        return hint.copy(), evaluation
    return None


def name_work_limits(session: Session, reports: list[BucketReport]) -> None:
    """In a repeatable run whose wall clock did not run out, a search cut short was cut by
    its deterministic budget: say so ('work_limit'), not 'time_limit'."""
    if session.out_of_work():
        for report in reports:
            if report.termination == "time_limit":
                report.termination = "work_limit"


def exactly_proven(bucket: Bucket, report: BucketReport, final: Evaluation) -> bool:
    """Whether a bucket proven on its compiled value is proven on the evaluator's too: the
    compiled bound less what compiled values may lie above exact ones meets the answer's
    value there (as check.settle judges it), the exact closure proved it, or that value is
    the lowest any assignment can have."""
    value = sum(final.positions.get(p, 0.0) for p in bucket.members)
    if report.leximin_levels is not None:  # proven level by level
        met = not bucket.over
    else:
        met = report.bound is not None and meets(value, report.bound - bucket.over)
    return met or bucket.exact_bound is not None or value <= bucket.floor + FLOAT_NOISE


FLOOR_WINDOW = 0.2  # of the time left: the floor goes on past a window where it improved


def move_floor(session: Session, final: np.ndarray) -> tuple[np.ndarray, Evaluation] | None:
    """The chain's answer improved by single moves and swaps in the time kept back for it
    (and any the chain left): where the proof did not close, a local search from the same
    answer is the floor of what is returned. In windows of the time kept back or
    FLOOR_WINDOW of the time left, whichever is longer: past one where the tuple did not
    fall, it stops (a walk guided along equal tuples can go on until the deadline for
    nothing). Ctrl-C ends it with the best found (``session.interrupted``)."""
    deadline = session.deadline()
    best = None

    def stop() -> None:
        session.interrupted = True

    while deadline is not None and deadline - time.monotonic() > 0.05:
        now = time.monotonic()
        window = min(deadline, now + max(session.reserve, FLOOR_WINDOW * (deadline - now)))
        found = local_search.descend(
            session.builder.problem, session.model, final if best is None else best[0],
            window, session.options.seed, stop, carried=session.carried)
        if found is None:
            break
        best = found
        if session.interrupted:
            break
    return best


def unsettle_after(reports: list[BucketReport], before: Evaluation, after: Evaluation) -> None:
    """The move-based floor improved the answer lexicographically: at the first position it
    improved, the chain's bound still holds; after it, the chain's bounds and compiled values
    described a search held at the worse value there, so they are dropped (unknown)."""
    first = next((p for p, (old, new) in enumerate(zip(tuples.tuple_key(before),
                                                       tuples.tuple_key(after)))
                  if new != old), None)
    positions = sorted(set(before.positions) | set(before.leximin))
    if first is None:
        return
    unsettle(reports, positions[first])


def unsettle(reports: list[BucketReport], after: int) -> None:
    """Drop the bounds and compiled values of the buckets after position ``after``: their
    searches ran under a worse value there than the answer's."""
    for report in reports:
        if report.position > after:
            report.bound = report.gap = report.relative_gap = None
            report.compiled_objective = None
            if report.status == OPTIMAL:  # its search ran under the worse earlier value
                report.status, report.termination = FEASIBLE, "time_limit"


def unsettle_below(reports: list[BucketReport], buckets: dict[int, Bucket],
                   final: Evaluation) -> None:
    """Where the answer lies below an unproven bucket's reported value by more than its
    stated error (a local search inside a later bucket walked that position down, at the
    cost of the later bucket's own value), unsettle the buckets after it (``unsettle``).
    (A proven bucket's compiled value may lie above the exact one by its over-estimate.)"""
    for report in reports:
        reported = [v for v in (report.objective, report.compiled_objective) if v is not None]
        if not reported or report.status == OPTIMAL or report.position in final.leximin:
            continue
        value = sum(final.positions.get(p, 0.0) for p in buckets[report.position].members)
        if value < max(reported) - report.approximation_error - EXACT * max(map(abs, reported)):
            unsettle(reports, report.position)
            return
