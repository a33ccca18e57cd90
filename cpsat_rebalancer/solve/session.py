"""One solve session: every CP-SAT solve of a compiled model under one deadline, one stop
flag (Ctrl-C) and one Budget; it holds the last solution for hints and decoding."""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from ..cpsat.builder import CpBuilder, hint_first
from ..cpsat.domains import INT64_MAX
from ..cpsat.pwl import RefinedSolver, refine
from ..cpsat_parameters import apply_cpsat_parameters, new_solver
from ..errors import InputError, InternalError
from ..evaluate import Evaluation, evaluate
from ..interrupts import holding_signals
from ..progress import Progress, Scale
from ..result import FEASIBLE, INFEASIBLE, NO_SOLUTION, OPTIMAL, BucketReport
from ..scenario import Model, SolverOptions
from .budget import DEFAULT_BUDGET, Budget

OVERRUN_SECONDS = 1.0  # past a solve's own time limit, it is stopped from outside
# an OPTIMAL of CP-SAT's presolve on a model of at most this many count variables (its other
# variables grow with its specs and what earlier searches left unconstrained) is checked by a
# search without presolve for a better one, of CHECK_WORK deterministic seconds at most
CHECKED_COUNTS, CHECK_WORK = 2000, 1.0
RECHECK_SECONDS = 0.2  # the least a solve refuted so gets to run again


def run_solver(solver: cp_model.CpSolver, cp: cp_model.CpModel) -> tuple[int, bool]:
    """Solve in a worker thread so that Ctrl-C in the main thread stops the search
    (``stop_search``) as a time limit would; returns the status and whether it was stopped.
    CP-SAT's own SIGINT handling is turned off: it could end the whole process."""
    statuses, interrupted = run_solvers([(solver, cp)])
    return statuses[0], interrupted


def run_solvers(solves: list[tuple[cp_model.CpSolver, cp_model.CpModel]],
                reporters: list[cp_model.CpSolverSolutionCallback | None] | None = None
                ) -> tuple[list[int], bool]:
    """Several solves at once, one thread each, as ``run_solver`` (Ctrl-C stops them all);
    ``reporters``, per solve, a solution callback (None: none)."""
    outcome: dict[int, int] = {}
    failures: list[BaseException] = []
    callbacks = reporters or [None] * len(solves)

    def run(index: int, solver: cp_model.CpSolver, cp: cp_model.CpModel) -> None:
        solver.parameters.catch_sigint_signal = False
        safe_interleaving(solver.parameters)
        try:
            outcome[index] = solver.solve(cp, callbacks[index])
        except BaseException as failure:  # raised again in the caller's thread
            failures.append(failure)

    def stop() -> None:
        for solver, _ in solves:
            solver.stop_search()

    limits = [solver.parameters.max_time_in_seconds for solver, _ in solves]
    interrupted = run_threads([functools.partial(run, i, *pair)
                               for i, pair in enumerate(solves)], stop,
                              time.monotonic() + max(limits) + OVERRUN_SECONDS)
    if failures:
        raise failures[0]
    return [outcome.get(i, cp_model.UNKNOWN) for i in range(len(solves))], interrupted


def safe_interleaving(params: object) -> None:
    """CP-SAT aborts the whole process (a failed CHECK: no fixed search configured) when an
    interleaved search of several workers, as a deterministic budget runs, meets an
    infeasible model with a hint: an infeasible scenario, a probe, a doubted INFEASIBLE's
    rerun. With the hint repaired first, it does not."""
    if params.interleave_search and params.num_workers != 1:
        params.repair_hint = True


def run_threads(targets: list[Callable[[], None]], stop: Callable[[], None],
                deadline: float = math.inf) -> bool:
    """Run each target in a thread of its own and wait until every one has ended, in timed
    waits on events (a join broken by Ctrl-C can take a running thread for ended). Ctrl-C,
    wherever it lands here, calls ``stop`` and the wait goes on: a solve thread must never
    outlive the call (a process that exits under a running CP-SAT thread aborts). Past
    ``deadline`` (``time.monotonic()``), ``stop`` is called too: CP-SAT can miss its own
    time limit on a large model under load. Returns whether Ctrl-C came."""
    finished = [threading.Event() for _ in targets]

    def thread(target: Callable[[], None], done: threading.Event) -> threading.Thread:
        def run() -> None:
            try:
                target()
            finally:
                done.set()
        return threading.Thread(target=run, daemon=True)

    interrupted = start_all([thread(t, e) for t, e in zip(targets, finished)])
    if interrupted:
        stop()
    overdue = False
    while True:
        try:
            for done in finished:
                while not done.is_set():
                    done.wait(0.05)
                    if not overdue and time.monotonic() > deadline:
                        overdue = True
                        stop()
            return interrupted
        except KeyboardInterrupt:
            interrupted = True
            stop()


def start_all(threads: list[threading.Thread]) -> bool:
    """Start every thread with Ctrl-C and SIGTERM held back meanwhile (a Thread.start that
    an interrupt breaks can leave its thread running unseen); returns whether one came."""
    with holding_signals() as came:
        for thread in threads:
            thread.start()
    return bool(came)


class SolutionReporter(cp_model.CpSolverSolutionCallback):
    """Reports each solution of a search to the progress tracker (its objective on the
    bucket's scale when the search minimizes a shown objective)."""

    def __init__(self, progress: Progress, scale: Scale | None):
        super().__init__()
        self.progress = progress
        self.scale = scale

    def on_solution_callback(self) -> None:
        self.progress.solution(self.objective_value if self.scale else None, self.scale)


# a depth-first search's outcome, most telling first (a solution, then a proof of none)
DECIDED_FIRST = {cp_model.OPTIMAL: 0, cp_model.FEASIBLE: 0, cp_model.INFEASIBLE: 1}


class Session:
    """Runs the solves of one compiled model under one global deadline; Ctrl-C (SIGINT)
    stops the current search and the session, keeping the best solution found."""

    def __init__(self, builder: CpBuilder, model: Model, options: SolverOptions,
                 started: float | None = None, budget: Budget = DEFAULT_BUDGET,
                 progress: Progress | None = None, accelerators: bool | None = None):
        self.builder = builder
        self.model = model
        self.options = options
        self.budget = budget
        # whether the accelerators that hold for any model run: the local searches judged by
        # the evaluator and GLOP's floor on the whole model (the caller's choice of the
        # accelerator wing: a model may drop CP-SAT's accelerators, as moves in flight or
        # loads too wide to be variables do, and these stay valid); the builder's by default
        self.accelerators = builder.accelerate if accelerators is None else accelerators
        # time kept back from the chain for the move-based floor after it (wall clock only:
        # a repeatable run takes none)
        self.reserve = 0.0 if options.time_limit is None or options.deterministic_time \
            is not None or not self.accelerators else min(
                budget.local_search_share * options.time_limit, budget.local_search_seconds)
        # handing the model to CP-SAT for the last solve, and freeing it once the solve
        # returns: the time limit holds them too
        self.fixed_costs = 0.0 if options.time_limit is None else builder.fixed_costs()
        self.started = time.monotonic() if started is None else started
        self.progress = progress or Progress(None, options.time_limit, self.started)
        self.values: list[int] | None = None  # last solution, one value per CP-SAT variable
        self.blend_floor: int | None = None  # proven minimum of weight·objective + moves
        self.start_value: int | None = None  # objective of the last start_from (if given)
        self.moved_floor = 0  # a proven lower bound on the number of objects moved
        # the load limits of the current bucket at its lowest value: they hold for every
        # later bucket once this one is frozen there (their move cuts then apply)
        self.lowest_caps: dict[str, np.ndarray] | None = None
        # whether the current bucket's load relaxation ran to a result (the whole-model LP
        # is then left out: the relaxation has had the bucket's time for a bound)
        self.load_relaxed = False
        self.work = 0.0  # CP-SAT deterministic time spent so far (repeatable, unlike seconds)
        self.interrupted = False
        self.first_checked = False  # whether a search without a solution held ran first_check
        # the best answer of a local search run inside the chain (bucket.stalled_search),
        # with its evaluation: the answer returned is never worse than it
        self.searched: tuple[np.ndarray, Evaluation] | None = None
        # the walk the session's local searches share (a ``local_search.Carried``, set by
        # the pipeline): each goes on where the last one ended
        self.carried: Any = None
        # the last configuration LP's values of the model's named variables (a spec's
        # auxiliaries): where its optimum points a restriction of the model
        self.lp_values: dict[str, float] = {}

    @property
    def accelerate(self) -> bool:
        """Whether the accelerator wing runs (the builder was made with it)."""
        return self.builder.accelerate

    @property
    def deterministic(self) -> bool:
        """Whether each solve has a deterministic budget (a repeatable run was asked for)."""
        return self.options.deterministic_time is not None

    def moves_at(self, position: int) -> bool:
        """Whether a goal at ``position`` minimizes movement."""
        return any(g.position == position and g.spec.counts_moves
                   and g.weight > 0 for g in self.model.goals)

    def moves_only(self, position: int) -> bool:
        """Whether every goal at ``position`` minimizes movement and no constraint is
        priced there (a bucket of moves alone)."""
        goals = [g for g in self.model.goals if g.position == position]
        return (bool(goals) and all(g.spec.counts_moves and g.weight > 0 for g in goals)
                and not any(c.position == position and c.policy != "HARD"
                            for c in self.model.constraints))

    def moves_later(self, position: int) -> bool:
        """Whether a goal after ``position`` minimizes movement (its buckets then gain from
        solutions that stay near the initial assignment)."""
        return any(g.position > position and g.spec.counts_moves
                   and g.weight > 0 for g in self.model.goals)

    def out_of_work(self) -> bool:
        """Whether a search stopped early was stopped by the deterministic budget: a
        repeatable run whose wall-clock limit (if any) has not run out."""
        remaining = self.remaining()
        return self.deterministic and not self.interrupted and (
            remaining is None or remaining > 0)

    def remaining(self) -> float | None:
        if self.interrupted:
            return 0.0
        if self.options.time_limit is None:
            return None
        return (self.options.time_limit - self.reserve - self.fixed_costs
                - (time.monotonic() - self.started))

    def deadline(self) -> float | None:
        """When the time limit ends, the reserve included, the fixed costs not (None: no
        limit)."""
        if self.options.time_limit is None:
            return None
        return self.started + self.options.time_limit - self.fixed_costs

    def wall_limit(self, *shares: float | None) -> float | None:
        """The wall-clock limit of a step: the time left, and the given shares of it unless
        the run is deterministic. There a step cut by the clock would depend on the machine's
        load, so each CP-SAT solve is bounded by its deterministic budget and the whole run by
        the user's time limit alone: repeatable whenever that limit does not bind."""
        limits = [t for t in (self.remaining(), *([] if self.deterministic else shares))
                  if t is not None]
        return max(min(limits), 0.001) if limits else None

    def limit(self, params: object, seconds: float | None, work: float | None = None) -> None:
        """Set a solve's limits: ``seconds`` of wall clock (None: none), and under a
        deterministic run its budget, or ``work`` when smaller. Several workers then
        interleave their searches (each run takes the same turns); one worker is repeatable
        as it is, and interleaved, a single turn of one subsolver can run far past the
        budget (CP-SAT reads it between turns), where one search reads it throughout.
        (``params.num_workers`` is set before.)"""
        if seconds is not None:
            params.max_time_in_seconds = seconds
        if self.deterministic:
            params.max_deterministic_time = min(self.options.deterministic_time,
                                                math.inf if work is None else work)
            params.interleave_search = params.num_workers != 1

    def presolve(self, params: object) -> None:
        """CP-SAT's dual presolve reductions off where the model orders interchangeable
        containers: the two fight (presolve then runs round after round, in every solve of
        the session); elsewhere CP-SAT's default (they help on hard generalized
        assignments). The user's setting of it, if any, wins (also in
        the depth-first probe, which takes no other user parameter).

        CP-SAT's own symmetry detection is off: on a large model with a hint, its presolve
        maps the hint through the symmetry group's orbits (``SolutionCrush``) for minutes,
        past every time limit and deaf to a stop; the builder breaks the symmetry of
        interchangeable containers itself."""
        params.keep_all_feasible_solutions_in_presolve = self.options.cpsat_parameters.get(
            "keep_all_feasible_solutions_in_presolve", bool(self.builder.container_classes))
        params.symmetry_level = self.options.cpsat_parameters.get("symmetry_level", 0)

    def hint(self, counts: list[int] | None = None) -> None:
        cp = self.builder.cp
        if self.values is None or counts is not None:
            counts = counts if counts is not None else self.builder.initial_counts()
            cp.clear_hints()
            hint = cp.proto.solution_hint  # filled in bulk: add_hint per variable is slow
            hint.vars.extend([var.Index() for var in self.builder.count_vars])
            hint.values.extend([int(value) for value in counts])
            return
        hint_first(cp, self.values)

    def solve(self, objective: object | None, budget: float | None = None,
              work: float | None = None, probing: bool = False,
              engine: dict[str, object] | None = None) -> tuple[int, cp_model.CpSolver]:
        """CP-SAT solves of at most ``budget`` seconds in all (and never past the deadline),
        or under a deterministic run of at most ``work`` deterministic seconds each; keeps
        the solution (if any) for hints and decoding. ``probing``: the solve holds a target
        probe, which the solution kept need not meet. Where the model has outer pieces
        (``pwl.refine``) lying below g at the solution, they are cut there and the solve
        runs again in what is left until it is exact there (else ``RefinedSolver``).
        ``engine``: CP-SAT parameters of these solves (see _solver)."""
        started, left = time.monotonic(), budget
        while True:
            status, solver = self._solve_once(objective, left, work, probing, engine)
            if (status not in (cp_model.OPTIMAL, cp_model.FEASIBLE) or self.interrupted
                    or not refine(self.builder, self.values)):
                return status, solver
            left = None if budget is None else budget - (time.monotonic() - started)
            if any(t is not None and t <= 0.05 for t in (left, self.remaining())):
                return cp_model.FEASIBLE, RefinedSolver(solver, self.values, objective)
            if objective is not None:  # what lies over the refined pieces (an excess of
                # them) is completed at the solution's counts: a search from a hint that
                # breaks it can spend its time walking the excess down a unit at a time
                self.start_from(self.values[: len(self.builder.count_vars)], objective, left)

    def solve_excluding(self, objective: object, budget: float | None, work: float
                        ) -> tuple[int, cp_model.CpSolver]:
        """A solve of a model that excludes the solution held (the exact closure's), of at
        most ``work`` deterministic seconds in every run, where INFEASIBLE is an answer, not
        an impossibility: it stands once a second solve, under the next seed and without
        presolve, says it too (CP-SAT has said INFEASIBLE of feasible models with large
        coefficients); else UNKNOWN."""
        started = time.monotonic()
        status, solver = self.solve(objective, budget, probing=True,
                                    engine={"max_deterministic_time": work})
        if status != cp_model.INFEASIBLE:
            return status, solver
        until = started + solver.parameters.max_time_in_seconds
        status = self._again(solver, self.builder.cp, None, until,
                             solver.parameters.random_seed + 1, False)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            self.values = list(solver.response_proto.solution)
        return (status if status in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE)
                else cp_model.UNKNOWN), solver

    def _solve_once(self, objective: object | None, budget: float | None,
                    work: float | None, probing: bool,
                    engine: dict[str, object] | None = None) -> tuple[int, cp_model.CpSolver]:
        cp = self.builder.cp
        if self.values is None and objective is not None and not probing \
                and not self.first_checked:
            status, checker, budget = self._first_check(cp, budget)
            if status == cp_model.INFEASIBLE or self.interrupted:
                return status, checker
        if objective is None:
            cp.clear_objective()
        else:
            cp.minimize(objective)
        self.hint()
        solver = self._solver(budget, work, engine)
        reporter = self._reporter(solver, objective, probing)
        started = time.monotonic()
        status = self.run_all([(solver, cp)], [reporter])[0]
        if (status == cp_model.INFEASIBLE and self.values is None and objective is not None
                and not probing):
            status = self._feasible_without(solver, cp, started)
        if status == cp_model.INFEASIBLE and self.values is not None and not probing:
            status = self._doubted(solver, cp, reporter, started)
        elif (status == cp_model.OPTIMAL and objective is not None and not probing
              and solver.parameters.cp_model_presolve
              and len(self.builder.count_vars) <= CHECKED_COUNTS):
            status = self._checked_optimum(solver, cp, objective, reporter, started)
        if status == cp_model.MODEL_INVALID:
            reason = cp.validate()
            if not reason and self.options.cpsat_parameters:
                raise InputError("cpsatParameters", "rejected by CP-SAT on this model: "
                                 + solver.response_proto.solution_info,
                                 self.options.cpsat_parameters)
            if cp.domain_sum >= INT64_MAX:  # sizes past what rounding can fit
                raise InputError("", "numbers too large to model in CP-SAT's 64-bit "
                                 "integers: the model's variables span more than 2^63 in all",
                                 float(cp.domain_sum))
            raise InternalError(f"CP-SAT rejected the model: {reason}")
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            self.values = list(solver.response_proto.solution)
        return status, solver

    def _first_check(self, cp: cp_model.CpModel, budget: float | None
                     ) -> tuple[int, cp_model.CpSolver, float | None]:
        """Before the first optimizing search with no solution held (a start that breaks
        hard rules, no repair), the model without its objective (CHECK_WORK deterministic
        seconds, the LP's full linearization): its INFEASIBLE stands (no objective, none of
        presolve's false claims; a count argument is there at once), its solution is held;
        with what is left of ``budget``."""
        self.first_checked, started = True, time.monotonic()
        left = [t for t in (budget, self.remaining()) if t is not None]
        check, checker = self._check(cp, started + min(left, default=math.inf), full_lp=True)
        status = self.run(checker, check)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            self.values = list(checker.response_proto.solution)
        return status, checker, (None if budget is None
                                 else max(0.01, budget - (time.monotonic() - started)))

    def _doubted(self, solver: cp_model.CpSolver, cp: cp_model.CpModel,
                 reporter: SolutionReporter | None, started: float) -> int:
        """A solve's INFEASIBLE where the held solution satisfies every constraint of it:
        impossible, yet CP-SAT says so on some models with large coefficients (in its
        presolve, and in its search under some seeds). Solve again, in what is left of the
        solve's time, under the next seed and then without presolve; if CP-SAT still says
        INFEASIBLE, UNKNOWN: no solution found, never a proof of infeasibility."""
        params = solver.parameters
        until, seed = started + params.max_time_in_seconds, params.random_seed
        for next_seed, presolve in ((seed + 1, params.cp_model_presolve), (seed, False)):
            status = self._again(solver, cp, reporter, until, next_seed, presolve)
            if status is None:
                break
            if status != cp_model.INFEASIBLE:
                return status
        return cp_model.UNKNOWN

    def _feasible_without(self, solver: cp_model.CpSolver, cp: cp_model.CpModel,
                          started: float) -> int:
        """An optimizing solve's INFEASIBLE with no solution held to doubt it by: CP-SAT's
        presolve has said so of feasible models whose objective has large coefficients
        (a soft term's 10^4 at a fine movement term's scale). The model is searched without
        its objective as ``_first_check`` does, as long as the claim took (at least
        CHECK_WORK, in the solve's time): a solution there is held and the claim doubted
        (``_doubted``); INFEASIBLE there too stands; else UNKNOWN, never a proof."""
        check, checker = self._check(cp, started + solver.parameters.max_time_in_seconds,
                                     max(CHECK_WORK, solver.response_proto.deterministic_time),
                                     full_lp=True)
        status = self.run(checker, check)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return cp_model.INFEASIBLE if status == cp_model.INFEASIBLE else cp_model.UNKNOWN
        self.values = list(checker.response_proto.solution)
        self.hint()
        return cp_model.INFEASIBLE

    def _checked_optimum(self, solver: cp_model.CpSolver, cp: cp_model.CpModel,
                         objective: object, reporter: SolutionReporter | None,
                         started: float) -> int:
        """A solve's OPTIMAL, which CP-SAT's presolve has claimed above a feasible value on
        some models with large coefficients (benchmarks/cpsat_false_optimal.py), checked on
        a small model: a search without presolve for a solution strictly below it. When it
        finds one the claim is wrong, and the solve runs again without presolve in what is
        left of its time (its answer stands); else the claim stands (proven when that search
        says INFEASIBLE, as the search alone proves)."""
        until = started + solver.parameters.max_time_in_seconds
        check, checker = self._check(cp, until)
        check.add(objective <= solver.value(objective) - 1)
        checker.parameters.cp_model_presolve = False
        if self.run(checker, check) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return cp_model.OPTIMAL
        cp.clear_hints()  # (the clone's variables are the model's, index for index)
        for index, value in enumerate(checker.response_proto.solution):
            cp.add_hint(cp.get_int_var_from_proto_index(index), value)
        # (at least a moment: the claim's bound must not stand for want of time)
        until = max(until, time.monotonic() + RECHECK_SECONDS)
        status = self._again(solver, cp, reporter, until, solver.parameters.random_seed, False)
        return cp_model.UNKNOWN if status is None else status

    def _check(self, cp: cp_model.CpModel, until: float, work: float = CHECK_WORK,
               full_lp: bool = False) -> tuple[cp_model.CpModel, cp_model.CpSolver]:
        """``cp`` without its objective, and a solver for it: the session's workers, seed,
        presolve (interleaved as every search), ``work``, until ``until``, full LP or not."""
        check = cp.clone()
        check.clear_objective()
        checker = new_solver()
        params = checker.parameters
        params.num_workers, params.random_seed = self.options.workers, self.options.seed
        self.presolve(params)
        params.max_deterministic_time = work
        params.max_time_in_seconds = max(0.01, until - time.monotonic())
        if self.deterministic:
            params.interleave_search = params.num_workers != 1
        params.linearization_level = 2 if full_lp else params.linearization_level
        return check, checker

    def _again(self, solver: cp_model.CpSolver, cp: cp_model.CpModel,
               reporter: SolutionReporter | None, until: float, seed: int,
               presolve: bool) -> int | None:
        """Solve ``cp`` again with ``solver`` under ``seed`` and ``presolve`` until ``until``
        (``time.monotonic()``); None when no time is left or the session was stopped."""
        left = until - time.monotonic()
        if left <= 0 or self.interrupted:
            return None
        params = solver.parameters
        params.random_seed, params.cp_model_presolve = seed, presolve
        params.max_time_in_seconds = left
        return self.run_all([(solver, cp)], [reporter])[0]

    def _reporter(self, solver: cp_model.CpSolver, objective: object | None,
                  probing: bool) -> SolutionReporter | None:
        """The progress reports of a solve of ``objective``: its solutions, and its bounds
        unless it holds a probe (a probe's bound is not the bucket's). None when nobody
        listens. Reporting reads the search; it never steers it."""
        if not self.progress.listening:
            return None
        scale = None if objective is None else self.progress.scale_of(objective)
        if scale is not None and not probing:
            solver.best_bound_callback = functools.partial(self.progress.bound, scale=scale)
        return SolutionReporter(self.progress, scale)

    def _solver(self, budget: float | None, work: float | None = None,
                engine: dict[str, object] | None = None) -> cp_model.CpSolver:
        """A CP-SAT solver with the session's settings, limits and ``engine`` parameters, and
        the user's CP-SAT parameters last (they were checked not to touch the settings)."""
        solver = new_solver()
        params = solver.parameters
        params.num_workers = self.options.workers
        params.random_seed = self.options.seed
        params.absolute_gap_limit = 0.0
        params.relative_gap_limit = 0.0
        params.log_search_progress = self.options.log
        self.presolve(params)
        self.limit(params, self.wall_limit(budget), work)
        for parameters in (engine or {}, self.options.cpsat_parameters):
            if not apply_cpsat_parameters(params, parameters):
                raise InternalError(f"CP-SAT cannot read {parameters}")
        return solver

    def solve_apart(self, cp: cp_model.CpModel, budget: float,
                    engine: dict[str, object] | None = None) -> tuple[int, cp_model.CpSolver]:
        """One CP-SAT solve of a model other than the session's (a target probe's reduced
        assignment), under the session's settings and time."""
        solver = self._solver(budget, engine=engine)
        return self.run(solver, cp), solver

    def depth_first(self, budget: float | None) -> int:
        """A feasibility search of the current model, depth first, in two variable orders
        at once (one thread each, the first to decide stops the other): object classes
        largest first, each into the first container that takes it (first-fit decreasing),
        and containers one at a time, each filled with the largest classes first (bin
        completion). Keeps the solution found; INFEASIBLE here is a proof. Under a
        deterministic time budget the two run one after the other, so that the same seed
        gives the same answer."""
        self.builder.cp.clear_objective()
        searches = []
        for order in (self.builder.first_fit_order(by_container=False),
                      self.builder.first_fit_order(by_container=True)):
            model = self.builder.cp.clone()
            model.clear_hints()
            model.add_decision_strategy(order, cp_model.CHOOSE_FIRST, cp_model.SELECT_MAX_VALUE)
            solver = new_solver()
            params = solver.parameters
            params.num_workers = 1
            params.search_branching = cp_model.FIXED_SEARCH
            params.random_seed = self.options.seed
            params.catch_sigint_signal = False
            self.presolve(params)
            self.limit(params, self.wall_limit(budget))
            searches.append((solver, model))
        outcomes: list[tuple[int, cp_model.CpSolver]] = []
        decided = threading.Event()

        def run(solver: cp_model.CpSolver, model: cp_model.CpModel) -> None:
            status = solver.solve(model)
            outcomes.append((status, solver))
            if status in (cp_model.OPTIMAL, cp_model.FEASIBLE, cp_model.INFEASIBLE):
                decided.set()
                for other, _ in searches:
                    other.stop_search()

        together = not self.deterministic
        for batch in ([searches] if together else [[s] for s in searches]):
            if decided.is_set() or self.interrupted:
                break
            self.interrupted |= run_threads(
                [functools.partial(run, *search) for search in batch],
                lambda: [solver.stop_search() for solver, _ in searches])
        status = min((s for s, _ in outcomes), key=lambda s: DECIDED_FIRST.get(s, 3))
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            winner = next(solver for s, solver in outcomes if s == status)
            self.values = list(winner.response_proto.solution)
        return status

    def _interruptible(self, solver: cp_model.CpSolver) -> int:
        return self.run(solver, self.builder.cp)

    def run(self, solver: cp_model.CpSolver, cp: cp_model.CpModel) -> int:
        """Solve ``cp`` so that Ctrl-C stops it and the session (see run_solver)."""
        return self.run_all([(solver, cp)])[0]

    def run_all(self, solves: list[tuple[cp_model.CpSolver, cp_model.CpModel]],
                reporters: list[cp_model.CpSolverSolutionCallback | None] | None = None
                ) -> list[int]:
        """Several solves at once (see run_solvers); their work adds up."""
        statuses, interrupted = run_solvers(solves, reporters)
        self.interrupted |= interrupted
        self.work += sum(solver.response_proto.deterministic_time for solver, _ in solves)
        return statuses

    def start_from(self, counts: list[int] | None = None, objective: object | None = None,
                   budget: float | None = None) -> bool:
        """Complete an assignment (the initial one by default) into values for every variable
        (a solve with the counts fixed, auxiliaries at their best for ``objective``), so the
        first search starts from a full, feasible hint: CP-SAT may otherwise spend its whole
        time share repairing a partial one. Returns whether the counts are feasible, and
        with an ``objective``, whether ``start_value`` is its compiled value there: outer
        pieces (``pwl.refine``) are cut at the assignment's loads and the solve repeated,
        as every search's solve is, since below g they would make it an under-estimate that
        a caller takes for an incumbent (and freezes at, or calls optimal)."""
        cp = self.builder.cp
        if objective is None:
            cp.clear_objective()
        else:
            cp.minimize(objective)
        self.hint(counts)
        solver = new_solver()
        self.presolve(solver.parameters)
        solver.parameters.fix_variables_to_their_hinted_value = True
        solver.parameters.num_workers = self.options.workers
        solver.parameters.random_seed = self.options.seed
        remaining = self.remaining()
        self.limit(solver.parameters,
                   self.wall_limit(budget, None if remaining is None else remaining / 4))
        solved = (cp_model.OPTIMAL, cp_model.FEASIBLE)
        if self._interruptible(solver) not in solved:
            return False
        self.values = list(solver.response_proto.solution)
        if objective is None:
            return True
        while refine(self.builder, self.values):
            if self.interrupted or self._interruptible(solver) not in solved:
                return False  # (the values held are still a whole, feasible assignment)
            self.values = list(solver.response_proto.solution)
        self.start_value = int(solver.value(objective))  # (the float loses units near 1e17)
        return True

    def held_whole(self) -> bool:
        """Whether values are held for every variable of the model, completing values older
        than some of them (forms built since the last solve: a leximin's quotients) by a
        solve with the held counts fixed."""
        if self.values is None:
            return False
        if len(self.values) >= len(self.builder.cp.Proto().variables):
            return True
        return self.start_from(self.values[: len(self.builder.count_vars)])

    def held_value(self, positions: tuple[int, ...], factor: Fraction, error: float,
                   values: list[int] | None = None) -> int:
        """A freeze level for a bucket at the assignment held (or at ``values``), from the
        evaluator: the compiled value of that assignment is within ``error`` of it (the
        agreement the tests check), whereas a FEASIBLE solution's own objective may carry
        loose auxiliaries and let later buckets worsen this one."""
        return compiled_level(self.held_sum(positions, values), factor, error)

    def held_sum(self, positions: tuple[int, ...], values: list[int] | None = None) -> float:
        """The evaluator's value of ``positions`` (summed) at the assignment held (or at
        ``values``)."""
        result = evaluate(self.builder.problem, self.model, self.decode(values)).positions
        return sum(result.get(position, 0.0) for position in positions)

    def decode(self, values: list[int] | None = None) -> np.ndarray:
        """The assignment of ``values``, by default the last solution's (the initial one
        when there is none)."""
        values = self.values if values is None else values
        if values is None:
            return self.builder.problem.initial.copy()
        return self.builder.decode(values[: len(self.builder.count_vars)])

    def moves(self) -> int:
        """Objects the last solution moves."""
        return int((self.decode() != self.builder.problem.initial).sum())


STATUS_NAMES = {cp_model.OPTIMAL: OPTIMAL, cp_model.FEASIBLE: FEASIBLE,
                cp_model.INFEASIBLE: INFEASIBLE, cp_model.UNKNOWN: NO_SOLUTION}


def compiled_level(value: float, factor: Fraction, error: float) -> int:
    """The compiled level (in the form's units) at or above an exact ``value`` plus
    ``error``: a value a hair off an integer level is taken as that level."""
    level = float(factor) * (value + error)
    nearest = round(level)
    return nearest if abs(level - nearest) <= 1e-9 * max(1.0, abs(level)) else math.ceil(level)


def bucket_values(status: int, solver: cp_model.CpSolver, objective_expr: object,
                   factor: Fraction, blend: tuple[int, int] = (1, 0),
                   ) -> tuple[int | None, float | None, float | None]:
    """The incumbent as an exact integer (for freezing) and objective / bound on the user's
    scale. CP-SAT reports objectives as doubles, which are inexact beyond 2^53. With
    ``blend`` = (weight, most moves), CP-SAT minimized weight·objective + moves."""
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, None, None
    incumbent = int(solver.value(objective_expr))
    weight, most = blend
    proven = solver.best_objective_bound
    bound = incumbent if status == cp_model.OPTIMAL else (
        min(incumbent, math.ceil((proven - most) / weight)) if math.isfinite(proven)
        else None)
    return (incumbent, float(Fraction(incumbent) / factor),
            None if bound is None else float(Fraction(bound) / factor))


def bucket_report(position: int, status: int, objective: float | None, bound: float | None,
            error: float) -> BucketReport:
    name = STATUS_NAMES.get(status, NO_SOLUTION)
    termination = {OPTIMAL: "optimal", FEASIBLE: "time_limit", INFEASIBLE: "infeasible"}.get(
        name, "time_limit")
    gap = relative = None
    if objective is not None and bound is not None:
        gap = max(0.0, objective - bound)
        relative = gap / abs(objective) if objective else 0.0
    return BucketReport(position, name, termination, 0.0, objective, bound, gap, relative,
                        error, 0.0)
