"""The lexicographic solve chain: one CP-SAT solve per tuple position, each frozen before
the next; IDEAL alone in its bucket is ordered leximin, one distinct value at a time.

The driver knows no spec formula: specs compile to forms, the driver minimizes and freezes.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from ortools.sat.python import cp_model, cp_model_helper

from ..cpsat_parameters import apply_cpsat_parameters
from ..errors import InputError, InternalError
from ..evaluate import EvalContext, Evaluation, evaluate, split_policy
from ..problem import Problem
from ..result import (
    FEASIBLE,
    INFEASIBLE,
    NO_SOLUTION,
    OPTIMAL,
    BucketReport,
    SolveResult,
)
from ..scenario import ConstraintEntry, Model, SolverOptions
from ..specs.common import Restrictions
from .configurations import ConfigurationBound, configuration_bound
from .linear import Lin, lin_sum
from .model import INT_LIMIT, Integerized, ModelBuilder, TargetProbe, hint_first
from .neighbourhoods import descend
from .relaxation import load_relaxation, moves_floor
from .repair import (
    PRESOLVE_SECONDS,
    add_move_cuts,
    leximin_descent,
    load_caps,
    relaxed_caps,
    repair,
)
from .symmetry import interchangeable_containers, order_key_dimension

CHECK_TOLERANCE = 1e-7  # slack of the independent result check beyond the stated error


@dataclass
class Bucket:
    position: int
    terms: list[Lin] = field(default_factory=list)
    leximin: list[Lin] | None = None  # set when an IDEAL goal is alone in this bucket
    # IDEAL's scalar goals, compiled only if a polish needs them: at 10000x500 their pieces
    # are 84,000 of the model's 90,000 constraints, and every level's search and presolve
    # would carry them
    scalar: list[object] = field(default_factory=list)
    error: float = 0.0
    probes: list[TargetProbe] = field(default_factory=list)  # its goals' target probes


def restrictions_of(problem: Problem, model: Model) -> tuple[frozenset[int], frozenset[int]]:
    fixed: set[int] = set()
    non_accepting: set[int] = set()
    for _, restriction in model.restrictions(problem):
        fixed |= restriction.fixed_objects
        non_accepting |= restriction.non_accepting
    return frozenset(fixed), frozenset(non_accepting)


def named_objects(model: Model) -> set[int]:
    named: set[int] = set()
    for entry in [*model.goals, *model.constraints]:
        named |= set(entry.spec.object_roles())
    return named


@contextlib.contextmanager
def where(path: str):
    """Give an InputError raised while compiling a spec (numbers out of range) its path."""
    try:
        yield
    except InputError as error:
        if error.path:
            raise
        raise InputError(path, error.problem, error.value) from None


def restriction_label(problem: Problem, restriction: Restrictions) -> str:
    parts = []
    if restriction.fixed_objects:
        parts.append("fixed " + ", ".join(problem.objects[o]
                                          for o in sorted(restriction.fixed_objects)))
    if restriction.non_accepting:
        parts.append("closed " + ", ".join(problem.containers[c]
                                           for c in sorted(restriction.non_accepting)))
    return "; ".join(parts)


EXPLAIN_SECONDS = 20.0  # at most this long to name the conflicting constraints


def explain_infeasibility(problem: Problem, model: Model, options: SolverOptions,
                          seconds: float = EXPLAIN_SECONDS) -> list[str]:
    """A small set of hard rules that cannot hold together, one line per spec: each hard rule
    and restriction is guarded by an assumption; CP-SAT names a sufficient subset, which is
    then shrunk by deletion while time allows."""
    if seconds <= 0:
        return ["(not explained: no time left)"]
    guards: list[tuple[object, str, str]] = []
    builder, _ = compile_model(problem, model, guards=guards)
    cp = builder.cp
    deadline = time.monotonic() + seconds

    def infeasible(chosen: list[int]) -> bool | None:
        cp.clear_assumptions()
        cp.add_assumptions([guards[i][0] for i in chosen])
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.random_seed = options.seed
        solver.parameters.max_time_in_seconds = max(0.01, deadline - time.monotonic())
        status, interrupted = run_solver(solver, cp)
        if interrupted:
            return None
        if status == cp_model.INFEASIBLE:
            nonlocal last
            last = solver
            return True
        return False if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None

    last: cp_model.CpSolver | None = None
    everything = list(range(len(guards)))
    if not infeasible(everything):
        return ["(the conflict could not be isolated in time)"]
    index_of = {guard[0].Index(): i for i, guard in enumerate(guards)}
    core = sorted({index_of[abs(v)] for v in last.sufficient_assumptions_for_infeasibility()
                   if abs(v) in index_of}) or everything
    for i in list(core):  # deletion: drop every guard the conflict does not need
        if time.monotonic() >= deadline or len(core) == 1:
            break
        trial = [j for j in core if j != i]
        verdict = infeasible(trial)
        if verdict is None:  # out of time or interrupted: report the set as it stands
            break
        if verdict:
            core = trial
    by_spec: dict[str, list[str]] = {}
    for i in core:
        _, name, what = guards[i]
        by_spec.setdefault(name, [])
        if what:
            by_spec[name].append(what)
    return [f"{name}: {', '.join(parts)}" if parts else name for name, parts in by_spec.items()]


def classes_may_span_containers(model: Model) -> bool:
    """Whether identical objects from different initial containers may share a class: only
    when no goal or constraint could gain from swapping them (see Spec.prefers_staying)."""
    return (all(g.spec.prefers_staying() and g.weight >= 0 for g in model.goals)
            and all(c.spec.prefers_staying() and c.invalid_cost >= 0 and c.invalid_state >= 0
                    for c in model.constraints))


def compile_model(problem: Problem, model: Model, aggregate: bool = True,
                  guards: list[tuple[object, str, str]] | None = None, leximin: bool = True,
                  accelerate: bool = True, seconds: float | None = None
                  ) -> tuple[ModelBuilder, dict[int, Bucket]]:
    """Build the CP-SAT model: hard parts of constraints, and one objective form per bucket.
    ``aggregate=False`` keeps each initial container's objects in classes of their own;
    ``leximin=False`` compiles IDEAL alone in its bucket to its scalar too;
    ``accelerate=False`` leaves out the redundant bounds and the symmetry breaking (the
    optimum is the same; tests compare both); ``seconds``, the solve's time limit, sizes
    the searches that compiling runs (a packing dive).
    With ``guards`` (a list to fill), every hard rule and restriction holds only under a
    literal of its own, recorded as (literal, spec name, what), to explain infeasibility."""
    fixed, non_accepting = restrictions_of(problem, model)
    aggregate = aggregate and classes_may_span_containers(model)
    named = named_objects(model) | fixed
    # objects differing only in dimensions no spec reads share a class (at 50000x1000, 16
    # flavours of (cpu, mem) under cpu-only specs are 8 classes)
    dims = model.dimensions()
    if guards is None:
        builder = ModelBuilder(problem, fixed, non_accepting, named, aggregate, dims)
        builder.accelerate = accelerate
        builder.seconds = seconds
        if accelerate:
            builder.break_symmetry(interchangeable_containers(problem, model, fixed,
                                                              non_accepting),
                                   order_key_dimension(problem, builder.class_dims))
    else:  # only the hard rules matter, each under its guard: no unguarded redundant bounds
        builder = ModelBuilder(problem, frozenset(), frozenset(), named, aggregate, dims)
        builder.accelerate = False
        for spec, restriction in model.restrictions(problem):
            if restriction.fixed_objects or restriction.non_accepting:
                builder.guard = builder.cp.new_bool_var(f"restriction {spec.name}")
                builder.forbid(restriction.fixed_objects, restriction.non_accepting)
                guards.append((builder.guard, spec.name, restriction_label(problem,
                                                                          restriction)))
        builder.guard = None
    ctx0 = EvalContext(problem, problem.initial, problem.initial)
    buckets: dict[int, Bucket] = {}

    def bucket(position: int) -> Bucket:
        return buckets.setdefault(position, Bucket(position))

    def errors_since(before: dict[str, float]) -> float:
        return sum(v - before.get(k, 0.0) for k, v in builder.errors.items())

    for index, entry in enumerate(model.constraints):
        before = dict(builder.errors)
        with where(f"constraints[{index}].spec.{entry.spec.arm}"):
            soft_terms = _compile_constraint(builder, entry, ctx0, guards)
        if soft_terms is not None:
            target = bucket(entry.position)
            target.terms.extend(soft_terms)
            target.error += errors_since(before) * max(entry.invalid_cost, 1.0)

    soft_positions = set(buckets)
    leximin_positions = model.leximin_positions(soft_positions) if leximin else {}
    for index, entry in enumerate(model.goals):
        target = bucket(entry.position)
        if entry.position in leximin_positions:
            with where(f"goals[{index}].spec.{entry.spec.arm}"):
                target.leximin = entry.spec.compile_leximin(builder)
                if accelerate and guards is None:
                    target.scalar.append(entry.spec)
            continue
        before, probes = dict(builder.errors), len(builder.target_probes)
        with where(f"goals[{index}].spec.{entry.spec.arm}"):
            value = entry.spec.compile_goal(builder).value
        target.probes.extend(builder.target_probes[probes:])
        if entry.weight < 0 and builder.minimization_only(value):  # parse_model rules it out
            raise InternalError(f"goals[{index}]: {entry.spec.arm} claims to be linear in the "
                                "assignment but compiled to bounding variables")
        target.terms.append(value * entry.weight)
        target.error += errors_since(before) * abs(entry.weight)
    return builder, dict(sorted(buckets.items()))


def run_solver(solver: cp_model.CpSolver, cp: cp_model.CpModel) -> tuple[int, bool]:
    """Solve in a worker thread so that Ctrl-C in the main thread stops the search
    (``stop_search``) as a time limit would; returns the status and whether it was stopped.
    CP-SAT's own SIGINT handling is turned off: it could end the whole process."""
    statuses, interrupted = run_solvers([(solver, cp)])
    return statuses[0], interrupted


def run_solvers(solves: list[tuple[cp_model.CpSolver, cp_model.CpModel]]
                ) -> tuple[list[int], bool]:
    """Several solves at once, one thread each, as ``run_solver`` (Ctrl-C stops them all)."""
    outcome: dict[int, int] = {}
    failures: list[BaseException] = []
    finished = [threading.Event() for _ in solves]
    interrupted = False

    def run(index: int, solver: cp_model.CpSolver, cp: cp_model.CpModel) -> None:
        solver.parameters.catch_sigint_signal = False
        try:
            outcome[index] = solver.solve(cp)
        except BaseException as failure:  # raised again in the caller's thread
            failures.append(failure)
        finally:
            finished[index].set()

    for i, pair in enumerate(solves):
        threading.Thread(target=run, args=(i, *pair), daemon=True).start()
    for done in finished:  # timed waits, which Ctrl-C can break (a bare join may not return)
        while not done.is_set():
            try:
                done.wait(0.05)
            except KeyboardInterrupt:
                interrupted = True
                for solver, _ in solves:
                    solver.stop_search()
    if failures:
        raise failures[0]
    return [outcome.get(i, cp_model.UNKNOWN) for i in range(len(solves))], interrupted


def _compile_constraint(builder: ModelBuilder, entry: ConstraintEntry, ctx0: EvalContext,
                        guards: list[tuple[object, str, str]] | None) -> list[Lin] | None:
    """Hard rules of one constraint, and its soft terms (None when it has no soft term).
    Policies as in Rebalancer: DEFAULT keeps initially broken parts soft and no worse than
    they were, the others hard; SOFT all soft; HARD all hard."""
    spec = entry.spec
    infos = spec.compile_infos(builder)
    initial = np.asarray(spec.infos(ctx0), dtype=float)
    split = split_policy(entry, initial)
    labels = spec.info_labels(builder.problem) if guards is not None else None
    soft_terms = []
    for k, info in enumerate(infos):
        if split.hard[k]:
            rhs = Fraction(0)
            if split.soft[k]:  # initially broken (DEFAULT): no worse than initially
                try:
                    rhs = builder.initial_value(info.expr)
                except ValueError:  # the form involves auxiliaries: use the evaluator's value
                    rhs = Fraction(float(initial[k]))
            if guards is not None:
                builder.guard = builder.cp.new_bool_var(f"hard {spec.name} {k}")
                what = labels[k] if labels else ""
                if split.soft[k]:
                    what = f"{what} (no worse than initially)".strip()
                guards.append((builder.guard, spec.name, what))
            builder.require(info.expr, rhs, gate=info.gate)
            builder.guard = None
        if split.soft[k]:
            violation = builder.positive_part(info.expr, gate=info.gate, what=spec.name)
            soft_terms.append(violation * entry.invalid_cost)
            if entry.invalid_state != 0:
                soft_terms.append(builder.step(info.expr, gate=info.gate) * entry.invalid_state)
    return soft_terms if split.has_soft_term else None


class Chain:
    """Runs the solves of one compiled model under one global deadline; Ctrl-C (SIGINT)
    stops the current search and the chain, keeping the best solution found."""

    def __init__(self, builder: ModelBuilder, model: Model, options: SolverOptions,
                 started: float | None = None):
        self.builder = builder
        self.model = model
        self.options = options
        self.started = time.monotonic() if started is None else started
        self.values: list[int] | None = None  # last solution, one value per CP-SAT variable
        self.blend_floor: int | None = None  # proven minimum of weight·objective + moves
        self.start_value: int | None = None  # objective of the last start_from (if given)
        self.moved_floor = 0  # a proven lower bound on the number of objects moved
        # the load limits of the current bucket at its lowest value: they hold for every
        # later bucket once this one is frozen there (their move cuts then apply)
        self.lowest_caps: dict[str, np.ndarray] | None = None
        self.work = 0.0  # CP-SAT deterministic time spent so far (repeatable, unlike seconds)
        self.interrupted = False

    @property
    def deterministic(self) -> bool:
        """Whether each solve has a deterministic budget (a repeatable run was asked for)."""
        return self.options.deterministic_time is not None

    def moves_at(self, position: int) -> bool:
        """Whether a goal at ``position`` minimizes movement."""
        return any(g.position == position and g.spec.arm == "minimizeMovementSpec"
                   and g.weight > 0 for g in self.model.goals)

    def moves_later(self, position: int) -> bool:
        """Whether a goal after ``position`` minimizes movement (its buckets then gain from
        solutions that stay near the initial assignment)."""
        return any(g.position > position and g.spec.arm == "minimizeMovementSpec"
                   and g.weight > 0 for g in self.model.goals)

    def remaining(self) -> float | None:
        if self.interrupted:
            return 0.0
        if self.options.time_limit is None:
            return None
        return self.options.time_limit - (time.monotonic() - self.started)

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
        deterministic run its budget, or ``work`` when smaller."""
        if seconds is not None:
            params.max_time_in_seconds = seconds
        if self.deterministic:
            params.max_deterministic_time = min(self.options.deterministic_time,
                                                math.inf if work is None else work)
            params.interleave_search = True

    def presolve(self, params: object) -> None:
        """CP-SAT's dual presolve reductions off where the model orders interchangeable
        containers: the two fight (on a 500-item bin packing, 52 presolve rounds and 10 s
        in every solve of the chain, 0.8 s without them); elsewhere CP-SAT's default (they
        help the GAP instances of type d). The user's setting of it, if any, wins (also in
        the depth-first probe, which takes no other user parameter)."""
        params.keep_all_feasible_solutions_in_presolve = self.options.cpsat_parameters.get(
            "keep_all_feasible_solutions_in_presolve", bool(self.builder.container_classes))

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
              work: float | None = None, probing: bool = False) -> tuple[int, cp_model.CpSolver]:
        """One CP-SAT solve of at most ``budget`` seconds (and never past the deadline), or
        under a deterministic run of at most ``work`` deterministic seconds; keeps the
        solution (if any) for hints and decoding. ``probing``: the solve holds a target
        probe, which the solution kept need not meet."""
        cp = self.builder.cp
        if objective is None:
            cp.clear_objective()
        else:
            cp.minimize(objective)
        self.hint()
        solver = self._solver(budget, work)
        status = self._interruptible(solver)
        if status == cp_model.INFEASIBLE and self.values is not None and not probing:
            # Impossible: the previous solution satisfies every constraint of this solve. Seen
            # with CP-SAT's presolve (probing) on large coefficients; solve again without it.
            solver.parameters.cp_model_presolve = False
            status = self._interruptible(solver)
        if status == cp_model.MODEL_INVALID:
            reason = cp.validate()
            if not reason and self.options.cpsat_parameters:
                raise InputError("cpsatParameters", "rejected by CP-SAT on this model: "
                                 + solver.response_proto.solution_info,
                                 self.options.cpsat_parameters)
            raise InternalError(f"CP-SAT rejected the model: {reason}")
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            self.values = list(solver.response_proto.solution)
        return status, solver

    def _solver(self, budget: float | None, work: float | None = None,
                engine: dict[str, object] | None = None) -> cp_model.CpSolver:
        """A CP-SAT solver with the chain's settings, limits and ``engine`` parameters, and
        the user's CP-SAT parameters last (they were checked not to touch the settings)."""
        solver = cp_model.CpSolver()
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
        """One CP-SAT solve of a model other than the chain's (a target probe's reduced
        assignment), under the chain's settings and time."""
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
            solver = cp_model.CpSolver()
            params = solver.parameters
            params.num_workers = 1
            params.search_branching = cp_model.FIXED_SEARCH
            params.random_seed = self.options.seed
            params.catch_sigint_signal = False
            self.presolve(params)
            self.limit(params, self.wall_limit(budget))
            params.interleave_search = False  # one worker, a fixed order: nothing to interleave
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
            threads = [threading.Thread(target=run, args=s, daemon=True) for s in batch]
            for thread in threads:
                thread.start()
            while any(t.is_alive() for t in threads):
                try:
                    decided.wait(0.05)
                except KeyboardInterrupt:
                    self.interrupted = True
                    for solver, _ in searches:
                        solver.stop_search()
            for thread in threads:
                thread.join()
        status = min((s for s, _ in outcomes), key=lambda s: DECIDED_FIRST.get(s, 3))
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            winner = next(solver for s, solver in outcomes if s == status)
            self.values = list(winner.response_proto.solution)
        return status

    def _interruptible(self, solver: cp_model.CpSolver) -> int:
        return self.run(solver, self.builder.cp)

    def run(self, solver: cp_model.CpSolver, cp: cp_model.CpModel) -> int:
        """Solve ``cp`` so that Ctrl-C stops it and the chain (see run_solver)."""
        return self.run_all([(solver, cp)])[0]

    def run_all(self, solves: list[tuple[cp_model.CpSolver, cp_model.CpModel]]) -> list[int]:
        """Several solves at once (see run_solvers); their work adds up."""
        statuses, interrupted = run_solvers(solves)
        self.interrupted |= interrupted
        self.work += sum(solver.response_proto.deterministic_time for solver, _ in solves)
        return statuses

    def start_from(self, counts: list[int] | None = None, objective: object | None = None,
                   budget: float | None = None) -> bool:
        """Complete an assignment (the initial one by default) into values for every variable
        (a solve with the counts fixed, auxiliaries at their best for ``objective``), so the
        first search starts from a full, feasible hint: CP-SAT may otherwise spend its whole
        time share repairing a partial one. Returns whether the counts are feasible."""
        cp = self.builder.cp
        if objective is None:
            cp.clear_objective()
        else:
            cp.minimize(objective)
        self.hint(counts)
        solver = cp_model.CpSolver()
        solver.parameters.fix_variables_to_their_hinted_value = True
        solver.parameters.num_workers = self.options.workers
        solver.parameters.random_seed = self.options.seed
        remaining = self.remaining()
        self.limit(solver.parameters,
                   self.wall_limit(budget, None if remaining is None else remaining / 4))
        if self._interruptible(solver) in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            self.values = list(solver.response_proto.solution)
            if objective is not None:
                self.start_value = round(solver.objective_value)
            return True
        return False

    def held_value(self, position: int, factor: Fraction, error: float) -> int:
        """A freeze level for a bucket at the assignment held, from the evaluator: the
        compiled value of that assignment is within ``error`` of it (the agreement the tests
        check), whereas a FEASIBLE solution's own objective may carry loose auxiliaries and
        let later buckets worsen this one."""
        value = evaluate(self.builder.problem, self.model, self.decode()).positions.get(
            position, 0.0)
        level = float(factor) * (value + error)
        nearest = round(level)
        return nearest if abs(level - nearest) <= 1e-9 * max(1.0, abs(level)) else math.ceil(level)

    def decode(self) -> np.ndarray:
        """The assignment of the last solution (the initial one when there is none)."""
        if self.values is None:
            return self.builder.problem.initial.copy()
        return self.builder.decode(self.values[: len(self.builder.count_vars)])

    def moves(self) -> int:
        """Objects the last solution moves."""
        return int((self.decode() != self.builder.problem.initial).sum())


def _bucket_values(status: int, solver: cp_model.CpSolver, objective_expr: object,
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


STATUS_NAMES = {cp_model.OPTIMAL: OPTIMAL, cp_model.FEASIBLE: FEASIBLE,
                cp_model.INFEASIBLE: INFEASIBLE, cp_model.UNKNOWN: NO_SOLUTION}


def _better_start(builder: ModelBuilder, model: Model, initial: Evaluation,
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


def solve_model(problem: Problem, model: Model, options: SolverOptions,
                aggregate: bool = True, hint: np.ndarray | None = None,
                accelerate: bool = True) -> SolveResult:
    """Solve every bucket in tuple-position order and evaluate the result independently.

    ``hint``, an assignment (a heuristic's, say), is where the search starts when it keeps the
    hard constraints and beats the initial one: the answer is then never worse than it.
    The time limit covers everything from here (compilation included). A chain stopped early
    (time, Ctrl-C) returns its best assignment as FEASIBLE with the bounds reached; with no
    assignment at all, the initial one with status NO_SOLUTION; when the hard constraints
    cannot all hold, INFEASIBLE with the constraints that conflict."""
    started = time.monotonic()
    model.check_solvable()
    builder, buckets = compile_model(problem, model, aggregate, accelerate=accelerate,
                                     seconds=options.time_limit)
    chain = Chain(builder, model, options, started)
    initial_eval = evaluate(problem, model, problem.initial)
    start = _better_start(builder, model, initial_eval,
                          ([] if hint is None else [hint]) + builder.suggested_starts)
    if start is not None:
        chain.start_from(start)
    elif initial_eval.feasible:
        chain.start_from()
    reports: list[BucketReport] = []
    stop: str | None = None  # why the chain stopped early: infeasible, time_limit, interrupted
    if not buckets:
        buckets = {0: Bucket(0)}  # still find an assignment satisfying the hard constraints
    for index, (position, bucket) in enumerate(buckets.items()):
        t0 = time.monotonic()
        remaining = chain.remaining()
        if stop is None and remaining is not None and remaining <= 0:
            stop = "time_limit"
        if stop is not None:
            reports.append(BucketReport(position, "NOT_SOLVED", stop, 0.0, None, None, None,
                                        None, bucket.error, 0.0))
            continue
        # under a time limit, a bucket gets an equal share of what is left, so a hard first
        # bucket cannot starve the later ones; time it does not use flows on. Not in a
        # deterministic run, whose steps depend on no clock (see Chain.wall_limit)
        budget = (None if remaining is None or chain.deterministic
                  else remaining / (len(buckets) - index))
        if bucket.leximin:
            report = _solve_leximin(chain, bucket, budget)
        else:
            report = _solve_bucket(chain, bucket, budget)
        report.seconds = time.monotonic() - t0
        reports.append(report)
        if report.status == INFEASIBLE:
            stop = "infeasible"
        elif report.status == NO_SOLUTION:
            # nothing better found in time; an earlier bucket's assignment (if any) stands
            stop = "time_limit"
            if chain.values is not None:
                report.status = FEASIBLE
        if chain.interrupted:
            stop = "interrupted"
            report.termination = "interrupted"

    if stop is None and chain.values is not None:
        _fewest_moves(chain, started)
    infeasible = stop == "infeasible"
    final = chain.decode() if not infeasible else problem.initial.copy()
    holding_initial = chain.values is None and initial_eval.feasible and not infeasible
    final_eval = initial_eval if holding_initial else evaluate(problem, model, final)
    for report in reports:
        report.objective = final_eval.positions.get(report.position, 0.0)
        if report.position in final_eval.leximin:
            report.leximin = list(final_eval.leximin[report.position])
    if infeasible:
        status = INFEASIBLE
    elif chain.values is None and not holding_initial:
        status = NO_SOLUTION
    elif stop is None and all(r.status == OPTIMAL for r in reports):
        status = OPTIMAL
    else:
        status = FEASIBLE
    if status in (OPTIMAL, FEASIBLE):
        check_result(final_eval, reports)
    conflict = []
    if infeasible:
        remaining = chain.remaining()
        conflict = explain_infeasibility(problem, model, options, EXPLAIN_SECONDS if remaining
                                         is None else min(EXPLAIN_SECONDS, remaining))
    termination = stop or ("optimal" if status == OPTIMAL else "time_limit")
    return SolveResult(problem, status, termination, final, initial_eval, final_eval, reports,
                       time.monotonic() - started, dict(builder.errors), conflict,
                       classes=len(builder.classes.members))


TIE_BREAK_SHARE = 0.5  # the tie-break may take this share of the time spent before it
TIE_BREAK_WORK = 0.2  # and at least this many deterministic seconds (about a second here)
PURE_SHARE = 0.6  # under a time limit, a bucket's search on its objective alone, before moves
BLEND_SHARE = 0.6  # when a later goal counts moves: the blended search first, then the pure
MOVES_FLOOR_SHARE = 0.03  # of a movement bucket's share, at most, for the moves' floor
MOVES_FLOOR_SECONDS = 1.0  # in a repeatable run without a time limit (its work bounds it)
CONFIGURATION_SHARE = 0.4  # of a movement bucket's share, at most, for the contents' floor
CONFIGURATION_SECONDS = 10.0  # in a repeatable run without a time limit
COMPLETION_SECONDS = 5.0  # at most, to complete the configurations' contents in the model
COMPLETION_WORK = 2.0  # (deterministic seconds, in a repeatable run)
FEWER_MOVES_SHARE = 0.5  # of a movement bucket's time left, for the reduced-cost-fixed search
FEWER_MOVES_WORK = 20.0  # (deterministic seconds, in a repeatable run)
FEWER_MOVES_SEARCH = 0.25  # of that share for CP-SAT's search, the rest for the descent
REPAIR_SHARE = 0.4  # of a bucket's share, at most, for the limits, cuts and greedy repairs
RELAX_SHARE = 0.4  # of what is left of that, at most, for the load relaxation


def _moved(builder: ModelBuilder) -> object:
    """The number of objects that change container (stays per class and container)."""
    stays = builder.stay_counts(builder.problem.container_scope)
    return builder.problem.num_objects - sum(expr for expr, _ in stays.values())


def _fewest_moves(chain: Chain, started: float) -> None:
    """Among assignments that keep every bucket's frozen value, move the fewest objects:
    an optimum that moves an object for no gain is not what a user wants applied. Uses only
    time left over, and at most about half the time spent so far (at least a second): a
    polish must not turn a 2-second proof into a full time limit (in a deterministic run,
    the same share of the deterministic time spent, at least TIE_BREAK_WORK). Never
    changes a bucket's value beyond its stated error."""
    moved = _moved(chain.builder)
    budget = chain.wall_limit(max(1.0, TIE_BREAK_SHARE * (time.monotonic() - started)))
    if budget is not None and budget <= 0.01:
        return
    moves = chain.moves()
    if chain.moved_floor > 0 and moves <= chain.moved_floor:
        return  # already at the proven floor on moves (1M objects: 24 s of search saved)
    before = list(chain.values)
    chain.builder.relax_symmetry()
    status, _ = chain.solve(moved, budget, max(TIE_BREAK_WORK, TIE_BREAK_SHARE * chain.work))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        chain.values = before


def _repaired_start(chain: Chain, bucket: Bucket, form: Integerized,
                    budget: float | None) -> tuple[int | None, int]:
    """Before a bucket's search: cut moves by what each container must shed under the limits
    the model now implies, and hold the greedy repair of the initial assignment when it is
    feasible and no worse for this bucket than the assignment held: first repaired to the
    optimal loads of the load relaxation (a solution there is optimal), then to the limits
    this bucket's lowest value would imply (optimal too), else to the current ones.
    Returns the compiled objective of the repair held (if one was taken) and the
    relaxation's lower bound on the form (its lowest value without one).
    Takes at most about ``budget`` seconds."""
    builder = chain.builder
    deadline = None if budget is None else time.monotonic() + budget
    floor = form.lo

    def left() -> float:  # nothing once the chain is out of time or interrupted
        seconds = chain.wall_limit(PRESOLVE_SECONDS,
                                   None if deadline is None else deadline - time.monotonic())
        return math.inf if seconds is None else max(0.0, seconds)

    # a deterministic run bounds the presolves by work instead (and the repairs by their
    # count of ejections)
    work = PRESOLVE_SECONDS if chain.deterministic else None
    if left() <= 0.01:
        return None, floor
    caps = load_caps(builder, seconds=left(), run=chain.run, work=work)
    if not caps:
        return None, floor
    chain.moved_floor = max(chain.moved_floor, add_move_cuts(builder, caps))
    initial = builder.problem.initial
    held = None
    if chain.values is not None:
        current = chain.decode()
        held = (evaluate(builder.problem, chain.model, current).positions.get(
            bucket.position, 0.0), int((current != initial).sum()))
    if left() <= 0.01:
        return None, floor
    # the limits of the form's lowest value first: the repairs to them were the whole of
    # this step before the relaxation, and on a fine objective (SQUARES' pieces) the
    # relaxation may take its whole share without a bound
    at_lowest = load_caps(builder, [(form.expr, form.lo)], left(), chain.run, work)
    chain.lowest_caps = at_lowest
    relax_seconds = chain.wall_limit(RELAX_SHARE * left())
    relaxed = load_relaxation(builder, form, math.inf if relax_seconds is None else relax_seconds,
                              chain.options.workers, chain.options.seed, chain.run,
                              None if work is None else RELAX_SHARE * work, chain.values)
    if relaxed is not None:
        floor = max(floor, relaxed.bound)
    # a repair there is optimal (its evaluated value may exceed the floor by the stated
    # error of the compiled objective: SQUARES' pieces lie above the curve)
    best_value = float(Fraction(floor) / form.factor) + bucket.error + form.error

    def level_caps(level: int) -> dict[str, np.ndarray] | None:
        if left() <= 0.01:
            return None
        return load_caps(builder, [(form.expr, level)], left(), chain.run, work)

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

    candidates = []
    for limits, partial, exact, share in attempts():
        if chain.interrupted:
            return None, floor
        if left() <= 0.01 and not partial:
            continue
        seconds = None if partial else chain.wall_limit(share * left())
        counts = repair(builder, limits, partial,
                        None if seconds is None else time.monotonic() + seconds, exact
                        ) if limits else None
        if counts is None:
            continue
        assignment = builder.decode(counts)
        candidate = (evaluate(builder.problem, chain.model, assignment).positions.get(
            bucket.position, 0.0), int((assignment != initial).sum()))
        if held is not None and candidate > held:
            continue
        candidates.append((candidate, assignment))
        if candidate[0] <= best_value:
            break
    # the best repair that CP-SAT accepts: the check is worth its time even past the repair
    # share (at most a quarter of what the chain has left): a repair at the floor is optimal
    for _, assignment in sorted(candidates, key=lambda c: c[0]):
        if chain.interrupted:
            break
        before = chain.values
        if chain.start_from(builder.counts_of(assignment), form.expr):
            return chain.start_value, floor
        chain.values = before
    return None, floor


def _blended(chain: Chain, form: Integerized, incumbent: int | None,
             budget: float | None) -> tuple[int, cp_model.CpSolver | None, int | None,
                                            float | None]:
    """Minimize weight·objective + moves (weight > most moves keeps the objective first),
    no worse than ``incumbent`` when given. Returns the status, the solver, the objective's
    incumbent (integer units) and its bound (user's scale). When proven, the bound on the
    whole also bounds the moves of every assignment at that objective (kept in
    ``chain.blend_floor`` for the freeze to turn into a cut)."""
    builder = chain.builder
    most = builder.problem.num_objects
    weight = most + 1
    if incumbent is not None:
        builder.cp.add(form.expr <= incumbent)
    moved = _moved(builder)
    status, solver = chain.solve(form.expr * weight + moved, budget)
    value, _, bound = _bucket_values(status, solver, form.expr, form.factor, (weight, most))
    if status == cp_model.OPTIMAL:
        chain.blend_floor = round(solver.objective_value)
    elif value is None:
        return status, None, incumbent, None
    return status, solver, value if incumbent is None else min(incumbent, value), bound


def _pure_then_blended(chain: Chain, form: Integerized, budget: float | None, t0: float,
                       weight: int | None, probes: list[TargetProbe]
                       ) -> tuple[int, cp_model.CpSolver, int | None, float | None,
                                  float | None]:
    """The objective alone: a first search, the goals' target probes, a probe at its bound
    (coarse objectives), the descent over containers from its incumbent (most of the share
    left), the rest of the pure share; then, if still unproven, the rest of the share
    blended with moves (``weight`` None when that does not fit in 64 bits)."""
    builder = chain.builder
    status, solver = chain.solve(form.expr, None if budget is None else FIRST_SHARE * budget)
    incumbent, objective, bound = _bucket_values(status, solver, form.expr, form.factor)
    if probes and budget is not None and status in (cp_model.FEASIBLE, cp_model.UNKNOWN):
        found = _target_probes(chain, form, probes,
                               TARGET_PROBE_SHARE * (budget - (time.monotonic() - t0)))
        if found is not None and (incumbent is None or found < incumbent):
            incumbent, objective = found, float(Fraction(found) / form.factor)
            status = cp_model.FEASIBLE
    probed = descended = False
    for _ in range(2 if budget is not None else 0):
        if status == cp_model.FEASIBLE and bound is not None and not probed:
            probed = True
            left = PROBE_SHARE * (budget - (time.monotonic() - t0))
            found = _probe(chain, form, incumbent, round(bound * form.factor), left)
            if found is not None:
                incumbent, low = found
                objective = float(Fraction(incumbent) / form.factor)
                bound = float(Fraction(low) / form.factor)
                status = cp_model.OPTIMAL if low >= incumbent else status
        if status not in (cp_model.FEASIBLE, cp_model.UNKNOWN):
            break
        if status == cp_model.FEASIBLE and not descended and chain.values is not None:
            descended = True
            left = NEIGHBOURHOOD_SHARE * (budget - (time.monotonic() - t0))
            chain.values, better = descend(builder, form.expr, chain.values, incumbent,
                                           time.monotonic() + left, chain)
            if better < incumbent:
                incumbent, objective = better, float(Fraction(better) / form.factor)
        # the rest of the pure share (the first search may not even finish presolving)
        left = PURE_SHARE * budget - (time.monotonic() - t0)
        if left <= 0.05:
            break
        if incumbent is not None:
            builder.cp.add(form.expr <= incumbent)
        again, solver_b = chain.solve(form.expr, left)
        better, _, bound_b = _bucket_values(again, solver_b, form.expr, form.factor)
        if better is not None or again == cp_model.INFEASIBLE and incumbent is None:
            solver, status = solver_b, again
        if better is not None:
            incumbent, objective = better, float(Fraction(better) / form.factor)
            bound = max(b for b in (bound, bound_b) if b is not None)
    if status == cp_model.FEASIBLE and budget is not None and weight is not None:
        # Stopped by time: spend the rest of the share on weight·objective + moves. An
        # incumbent found by large neighbourhoods tends to move far more than needed; this
        # pulls it back towards the initial assignment, for later buckets and for the user.
        left = budget - (time.monotonic() - t0)
        again, _, better, bound_b = _blended(chain, form, incumbent, left)
        if better is not None:
            incumbent = better
            objective = float(Fraction(incumbent) / form.factor)
            bound = max(b for b in (bound, bound_b) if b is not None)
            status = cp_model.OPTIMAL if again == cp_model.OPTIMAL else cp_model.FEASIBLE
    return status, solver, incumbent, objective, bound


def _solve_bucket(chain: Chain, bucket: Bucket, budget: float | None) -> BucketReport:
    builder = chain.builder
    form = builder.integerize(lin_sum(bucket.terms))
    builder.note_error(f"position {bucket.position} objective rounding", form.error)
    error = bucket.error + form.error
    if not bucket.terms and chain.values is not None:  # nothing to minimize: keep what we hold
        value = float(Fraction(int(form.expr)) / form.factor)
        return _report(bucket.position, cp_model.OPTIMAL, value, value, error)
    t0 = time.monotonic()
    # the assignment held may already sit at the floor the move cuts prove (at 1M objects
    # the repair before the first bucket reaches it, and this bucket's presolves alone took
    # 26 s); if not, a movement bucket first raises that floor over the loads
    floor = _implied_floor(builder, form, chain.moved_floor)
    moves_here = builder.accelerate and chain.moves_at(bucket.position)
    held = (chain.held_value(bucket.position, form.factor, error)
            if chain.values is not None and (floor > form.lo or moves_here) else None)
    if (moves_here and (held is None or held > floor) and not chain.interrupted
            and (budget is not None or chain.deterministic)):
        # not without a time limit, where the bucket's own search proves its optimum
        seconds = chain.wall_limit(None if budget is None else MOVES_FLOOR_SHARE * budget)
        try:
            found = moves_floor(builder, MOVES_FLOOR_SECONDS if seconds is None else seconds,
                                chain.options.workers, chain.options.seed, chain.run,
                                MOVES_FLOOR_SHARE * PRESOLVE_SECONDS if chain.deterministic
                                else None)
        except KeyboardInterrupt:  # Ctrl-C outside a search: stop the chain the same way
            chain.interrupted, found = True, None
        chain.moved_floor = max(chain.moved_floor, found or 0)
        floor = _implied_floor(builder, form, chain.moved_floor)
        if held is not None and held > floor and chain.values is not None:
            held = _configurations(chain, bucket, form, error, held, budget)
            floor = _implied_floor(builder, form, chain.moved_floor)
    if held is not None and form.lo < floor and held <= floor:
        return _freeze(chain, bucket, form, cp_model.OPTIMAL, held,
                       float(Fraction(held) / form.factor),
                       float(Fraction(floor) / form.factor), error)
    repaired, relaxed_floor = None, form.lo
    if builder.accelerate and bucket.terms:
        try:
            repaired, relaxed_floor = _repaired_start(
                chain, bucket, form, None if budget is None else REPAIR_SHARE * budget)
        except KeyboardInterrupt:  # Ctrl-C outside a search: stop the chain the same way
            chain.interrupted = True
    floor = max(relaxed_floor, _implied_floor(builder, form, chain.moved_floor))
    # as low as the form can go: optimal. A rounded form (a rack balance's 69 capacities
    # have no common denominator below 2^50) is proven within its stated error only, and
    # the gap left adds to it: GLOP's duals leave the floor a unit short of the repair
    # there, and CP-SAT then spent 30 s (at 50000x1000) on 1e-15 inside an error of 2e-8
    if repaired is not None and repaired <= floor + math.floor(error * form.factor):
        return _freeze(chain, bucket, form, cp_model.OPTIMAL, repaired,
                       float(Fraction(repaired) / form.factor),
                       float(Fraction(floor) / form.factor),
                       error + float(Fraction(max(repaired - floor, 0)) / form.factor))
    most = builder.problem.num_objects
    weight = most + 1
    blend_fits = (form.hi - form.lo + 1) * weight < INT_LIMIT
    incumbent = objective = bound = None
    if builder.accelerate and blend_fits and chain.moves_later(bucket.position):
        # A later goal counts moves: search on weight·objective + moves from the start, so
        # that the solutions found stay near the initial assignment (a search on the
        # objective alone drifts far from it, and the movement bucket cannot walk back).
        status, solver, incumbent, bound = _blended(
            chain, form, None,
            None if budget is None else BLEND_SHARE * (budget - (time.monotonic() - t0)))
        if incumbent is not None:
            objective = float(Fraction(incumbent) / form.factor)
        if status == cp_model.FEASIBLE and budget is not None:
            # then the objective alone, for its bound (and maybe a better value)
            left = PURE_SHARE * (budget - (time.monotonic() - t0))
            builder.cp.add(form.expr <= incumbent)
            blended_values = chain.values
            again, solver_b = chain.solve(form.expr, left)
            better, _, bound_b = _bucket_values(again, solver_b, form.expr, form.factor)
            if better is not None:
                bound = max(b for b in (bound, bound_b) if b is not None)
                if again == cp_model.OPTIMAL:
                    status = again
                if better < incumbent:
                    solver, incumbent = solver_b, better
                    objective = float(Fraction(incumbent) / form.factor)
                    # a better value found alone drifts: blended again for the rest
                    left = budget - (time.monotonic() - t0)
                    if left > 0.05:
                        _, _, blended_better, _ = _blended(chain, form, incumbent, left)
                        chain.blend_floor = None  # proven only for that value, not reported
                        if blended_better is not None:
                            incumbent = blended_better
                            objective = float(Fraction(incumbent) / form.factor)
                else:  # the same value: keep the blended solution, which moves fewer
                    chain.values = blended_values
    else:
        status, solver, incumbent, objective, bound = _pure_then_blended(
            chain, form, budget, t0, weight if blend_fits else None, bucket.probes)
    if status != cp_model.OPTIMAL and chain.values is not None:
        # the assignment held (new, initial or an earlier bucket's) is this bucket's
        # incumbent, at its evaluated value, with the bound CP-SAT proved
        held = chain.held_value(bucket.position, form.factor, error)
        incumbent = held if incumbent is None else min(incumbent, held)
        status = cp_model.FEASIBLE
        objective = float(Fraction(incumbent) / form.factor)
        proven = math.inf if solver is None else solver.best_objective_bound
        if bound is None and math.isfinite(proven):
            bound = float(Fraction(min(incumbent, math.ceil(proven))) / form.factor)
    if incumbent is not None and floor > form.lo:
        implied = float(Fraction(floor) / form.factor)
        bound = implied if bound is None else max(bound, implied)
    return _freeze(chain, bucket, form, status, incumbent, objective, bound, error)


def _configurations(chain: Chain, bucket: Bucket, form: Integerized, error: float,
                    held: int, budget: float | None) -> int:
    """Raise the floor on moves by the configuration LP (``configurations``), and search
    where its optimum points: first with the containers whose LP content is whole held to
    it, the others free (at 2000x100, 87 of 100 held, the optimum in 0.25 s where the full
    search took 10-20 s), then for fewer moves within the loads reduced-cost fixing
    leaves. A solution is kept if the bucket is better there than at ``held`` (its value
    at the assignment held); returns the value at the one kept."""
    builder = chain.builder
    moves = chain.moves()
    seconds = chain.wall_limit(None if budget is None else CONFIGURATION_SHARE * budget)
    started = time.monotonic()
    try:
        found = configuration_bound(
            builder, chain.values, CONFIGURATION_SECONDS if seconds is None else seconds,
            chain.run, CONFIGURATION_SHARE * PRESOLVE_SECONDS if chain.deterministic else None,
            moves, chain.moved_floor)
    except KeyboardInterrupt:  # Ctrl-C outside a search: stop the chain the same way
        chain.interrupted, found = True, None
    if found is not None:
        chain.moved_floor = max(chain.moved_floor, found.floor)
    if found is not None and found.contents is not None and not chain.interrupted:
        values = chain.values
        held_vars = [builder.count_vars[j] for j in found.contents]
        with builder.held(held_vars, list(found.contents.values())):
            status, _ = chain.solve(form.expr, chain.wall_limit(COMPLETION_SECONDS),
                                    COMPLETION_WORK, probing=True)
        completed = chain.held_value(bucket.position, form.factor, error)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) and completed < held:
            held = completed
        else:
            chain.values = values
    if found is not None and not chain.interrupted:
        held = _fewer_moves_within(chain, bucket, form, error, held, found,
                                   None if budget is None
                                   else budget - (time.monotonic() - started))
    return held


def _fewer_moves_within(chain: Chain, bucket: Bucket, form: Integerized, error: float,
                        held: int, found: ConfigurationBound, budget: float | None) -> int:
    """Search for fewer moves than the assignment held, with each container's load within
    the loads reduced-cost fixing leaves to solutions moving at most as many
    (``found.loads_below``), which the assignment held satisfies: a much smaller search,
    held behind a gate freed after. CP-SAT's search first, hinted with the assignment held
    (its optimum there is the fewest anywhere), then, if unproven, the descent over
    containers in the same region (at 50000x1000 racks, 7438 -> 7417 moves in 35 s, where
    CP-SAT's search alone found 7435 in 48 s). Keeps a solution found if the bucket is
    better there than at ``held``; returns the bucket's value at the one kept."""
    builder = chain.builder
    moved = _moved(builder)
    moves = chain.moves()
    domains = found.loads_below(moves + 1)
    if moves <= chain.moved_floor or domains is None:
        return held
    loads = builder.container_loads()[found.master.priced]
    gate = builder.cp.new_bool_var("fewer_moves")
    for c, allowed in domains.items():
        builder.cp.add_linear_expression_in_domain(
            loads[c], cp_model.Domain.from_values(allowed.tolist())).only_enforce_if(gate)
    builder.fix(gate, 1)
    values = chain.values
    share = None if budget is None else FEWER_MOVES_SHARE * budget
    started = time.monotonic()
    status, solver = chain.solve(
        moved, chain.wall_limit(None if share is None else FEWER_MOVES_SEARCH * share),
        FEWER_MOVES_WORK, probing=True)
    if status == cp_model.OPTIMAL:  # the fewest moves of the region: of any solution
        chain.moved_floor = max(chain.moved_floor, round(solver.objective_value))
    elif status == cp_model.FEASIBLE and share is not None and not chain.interrupted:
        chain.values, _ = descend(builder, moved, chain.values, round(solver.objective_value),
                                  started + share, chain, chain.moved_floor)
    builder.fix(gate, 0)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        better = chain.held_value(bucket.position, form.factor, error)
        if better < held:
            return better
    chain.values = values
    return held


def _implied_floor(builder: ModelBuilder, form: Integerized, moved_floor: int) -> int:
    """A lower bound on the form from the proven floor on moves, when the form is
    a·moves + b with a > 0 (a movement bucket): CP-SAT's own bound comes from its LP, which
    may not even finish on large models. The form's lowest value otherwise."""
    moved = _moved(builder) if moved_floor > 0 else 0
    if isinstance(form.expr, int) or isinstance(moved, int):
        return form.lo
    flat_form = cp_model_helper.FlatIntExpr(form.expr)
    flat_moved = cp_model_helper.FlatIntExpr(moved)
    by_var = {}
    for var, coef in zip(flat_form.vars, flat_form.coeffs):
        by_var[var.index] = by_var.get(var.index, 0) + coef
    moved_by_var = {}
    for var, coef in zip(flat_moved.vars, flat_moved.coeffs):
        moved_by_var[var.index] = moved_by_var.get(var.index, 0) + coef
    by_var = {v: c for v, c in by_var.items() if c}
    moved_by_var = {v: c for v, c in moved_by_var.items() if c}
    offset = Fraction(flat_form.offset)
    # the containers' loads of a dimension always sum to its total: a form that reads all of
    # them with one coefficient (MOVED = AFTER + INITIAL - 2 STAYED) reads a constant there
    for dim, loads in builder.container_loads().items():
        if dim in builder.problem.dynamic_dims:  # sizes depend on where: no constant total
            continue
        indices = [load.Index() for load in loads]
        coefs = {by_var.get(i) for i in indices}
        if len(coefs) == 1 and None not in coefs and not any(i in moved_by_var
                                                             for i in indices):
            offset += coefs.pop() * int(builder.scale(dim).values.sum())
            for i in indices:
                del by_var[i]
    if not by_var or by_var.keys() != moved_by_var.keys():
        return form.lo
    ratios = {Fraction(c, moved_by_var[v]) for v, c in by_var.items()}
    if len(ratios) != 1:
        return form.lo
    (ratio,) = ratios
    if ratio <= 0:
        return form.lo
    offset -= ratio * flat_moved.offset
    return max(form.lo, math.ceil(ratio * moved_floor + offset))


def _freeze(chain: Chain, bucket: Bucket, form: Integerized, status: int,
            incumbent: int | None, objective: float | None, bound: float | None,
            error: float) -> BucketReport:
    """Hold the bucket at its incumbent for the buckets after it, and report it."""
    builder = chain.builder
    weight = builder.problem.num_objects + 1
    # the form's lowest value bounds it too (a blended search's bound can fall below it, or
    # a stopped search can give none at all while its incumbent sits there)
    lowest = float(Fraction(form.lo) / form.factor)
    if bound is not None or incumbent is not None and incumbent <= form.lo:
        bound = lowest if bound is None else max(bound, lowest)
    if incumbent is not None and bound is not None and bound >= objective:
        status = cp_model.OPTIMAL  # the bound met the incumbent: proven, though late
    lowest_caps, chain.lowest_caps = chain.lowest_caps, None
    if incumbent is not None:
        # freeze this bucket; where the model approximates, keep every assignment whose
        # exact value may tie the incumbent's: compiled values at most 2·error apart (in
        # whole units). Later buckets may pick any of them, so that slack adds to the error.
        slack = math.floor(2 * error * form.factor)
        builder.cp.add(form.expr <= incumbent + slack)
        if incumbent + slack <= form.lo and lowest_caps:
            # frozen at its lowest value: the limits read for that value hold from now on,
            # and the moves they force bound a later bucket without another presolve
            chain.moved_floor = max(chain.moved_floor, add_move_cuts(builder, lowest_caps))
        error += float(Fraction(slack) / form.factor)
        if chain.blend_floor is not None:  # weight·objective + moves >= floor held for all
            floor = chain.blend_floor - weight * (incumbent + slack)
            builder.cp.add(_moved(builder) >= floor)
            chain.moved_floor = max(chain.moved_floor, floor)
    chain.blend_floor = None
    return _report(bucket.position, status, objective, bound, error)


# a depth-first search's outcome, most telling first (a solution, then a proof of none)
DECIDED_FIRST = {cp_model.OPTIMAL: 0, cp_model.FEASIBLE: 0, cp_model.INFEASIBLE: 1}
FIRST_SHARE = 0.1  # of a bucket's share: the first search, which finds the bound to probe
PROBE_SHARE = 0.5  # of what the first search left of the bucket's share
TARGET_PROBE_SHARE = 0.7  # the same, for a goal's target probes (see _target_probes)
# a target probe's reduced assignment: on GAP c10200 at its optimum, 4 s to 8 s over six
# seeds against 2 s to 25 s with CP-SAT's default branching
REDUCED_PARAMETERS: dict[str, object] = {"search_branching": "LP_SEARCH"}
NEIGHBOURHOOD_SHARE = 0.8  # of the share they left, for the descent over containers
PROBE_LEVELS = 8  # probe only objectives this close (in integer units) to their bound
PROBE_RANGE = 1000  # and only coarse ones (counts): a fine objective's bound is rarely tight


def _probe(chain: Chain, form: Integerized, incumbent: int, low: int,
           budget: float | None) -> tuple[int, int] | None:
    """Bound-first search for a bucket whose bound is a few integer levels below its
    incumbent (a count of containers, say): ask, level by level from the bound up, for a
    solution no worse than that level, searching depth first in first-fit-decreasing order.
    A solution there is optimal; a proof that there is none raises the bound by one.
    (The optimizing search tends to walk down from the incumbent one level at a time.)
    Only for coarse objectives (few levels in all, like a number of containers).
    Returns the new (incumbent, bound), or None when nothing was learnt."""
    if (incumbent - low > PROBE_LEVELS or form.hi - form.lo > PROBE_RANGE
            or budget is not None and budget <= 0.05):
        return None
    builder = chain.builder
    started = time.monotonic()
    learnt = False
    while low < incumbent:
        left = None if budget is None else budget - (time.monotonic() - started)
        if left is not None and left <= 0.05:
            break
        gate = builder.cp.new_bool_var(f"probe{low}")
        builder.cp.add(form.expr <= low).only_enforce_if(gate)
        builder.fix(gate, 1)
        before = chain.values
        status = chain.depth_first(left)
        builder.fix(gate, 0)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return low, low
        chain.values = before
        if status != cp_model.INFEASIBLE:
            break
        low += 1
        learnt = True
    return (incumbent, low) if learnt else None


def _target_probes(chain: Chain, form: Integerized, probes: list[TargetProbe],
                   budget: float) -> int | None:
    """Search a goal held at its relaxation's bound, then at the levels above it in turn
    (see TargetProbe), until one has a solution or time runs out: where that bound is the
    optimum or a level or two below it, as a knapsack relaxation's often is on assignment
    costs, the optimizing search walks down from its incumbent and may not get there in
    time. Each level is searched in its reduced assignment first (CP-SAT on the whole model
    held there took 13 s to 30 s on GAP c10200 and c20200, the reduced one 2 s to 11 s);
    a level proven empty there is empty, and its gate stays false: the goal is above it
    for good. A candidate it finds is completed in the whole model, and should the model's
    other rules reject it, the whole model is searched held at the level.
    Returns the objective found (integer units), if any."""
    started = time.monotonic()
    builder = chain.builder

    def left() -> float:
        return budget - (time.monotonic() - started)

    for probe in probes:
        if left() <= 0.05 or chain.interrupted:
            break
        status, solver = chain.solve_apart(probe.reduced, left(), REDUCED_PARAMETERS)
        if status == cp_model.INFEASIBLE:
            builder.fix(probe.gate, 0)
            continue
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            break  # out of time
        chosen = [var for literal, var in probe.pairs if solver.boolean_value(literal)]
        with builder.held(chosen, 1):
            status, solver = chain.solve(form.expr, left(), probing=True)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            builder.fix(probe.gate, 1)
            status, solver = chain.solve(form.expr, left(), probing=True)
            builder.fix(probe.gate, 0 if status == cp_model.INFEASIBLE else None)
        if status != cp_model.INFEASIBLE:
            return _bucket_values(status, solver, form.expr, form.factor)[0]
    return None


def _report(position: int, status: int, objective: float | None, bound: float | None,
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


def _solve_leximin(chain: Chain, bucket: Bucket, budget: float | None) -> BucketReport:
    """Leximin of the relative utilizations, one distinct value of the sorted vector at a
    time: the smallest value v that all items but the ``above`` already placed can stay
    under, then the fewest items at v or more; each frozen before the next. Two solves per
    distinct value rather than one per item (the k largest summed, k = 1..n): at 10000x500
    the vector has a handful of distinct values and 500 items."""
    builder = chain.builder
    forms = builder.integerize_all(bucket.leximin)
    n = len(forms)
    factor = forms[0].factor
    lo = min(f.lo for f in forms)
    hi = max(f.hi for f in forms)
    deadline = None if budget is None else time.monotonic() + budget
    proven = 0  # leading entries of the sorted vector proven (leximin-optimal)
    above: list[object] | None = None  # per item, true when it may lie above the next value
    ceiling = hi
    value = bound = None  # the first entry not proven: its value held and its bound
    complete = False
    while True:
        share = None if deadline is None else (deadline - time.monotonic()) * (
            LEVEL_SHARE if bucket.scalar else 1.0)
        if share is not None and share <= 0.05:
            break
        level, status, bound = _leximin_value(chain, forms, above, lo, ceiling, share)
        if level is None:
            if status == cp_model.INFEASIBLE:
                return _report(bucket.position, status, None, None, bucket.error)
            value = bound = None
            break
        value = float(Fraction(level) / factor)
        if status != cp_model.OPTIMAL:
            break
        proven += 1
        share = None if deadline is None else (deadline - time.monotonic()) * (
            LEVEL_SHARE if bucket.scalar else 1.0)
        if share is not None and share <= 0.05:
            break
        above, count, count_proven = _leximin_count(chain, forms, level, proven, share)
        if count is None:
            break
        # the count's lower bound holds in every assignment: entries up to it are at level
        proven = max(proven, count_proven)
        if proven >= count:
            proven = count
            value = bound = None
            if count >= n:
                complete = True
                break
            ceiling = level - 1
            continue
        bound = None  # the next entry may lie below this level once fewer items sit there
        break
    if not complete and chain.values is not None and deadline and builder.accelerate:
        _descend_leximin(chain, bucket, deadline)
        if bucket.scalar:
            _polish_leximin(chain, bucket, deadline - time.monotonic())
    worst = OPTIMAL if complete else (FEASIBLE if chain.values is not None else NO_SOLUTION)
    report = _report(bucket.position, cp_model.OPTIMAL if complete else cp_model.FEASIBLE,
                     None, None, bucket.error)
    report.status = worst
    report.leximin_levels = proven
    report.leximin_items = n
    report.leximin_level_value = value
    report.leximin_level_bound = bound
    return report


def _leximin_value(chain: Chain, forms: list[Integerized], above: list[object] | None,
                   lo: int, ceiling: int, share: float | None
                   ) -> tuple[int | None, int, float | None]:
    """The smallest value that every item not marked ``above`` stays at or under (None:
    every item, the largest of all), frozen at what was found. Returns that value (integer
    units), the solve's status and its proven bound (user's scale)."""
    builder = chain.builder
    level = builder.cp.new_int_var(lo, max(lo, ceiling), "leximin_value")
    floor = lo
    for index, f in enumerate(forms):
        bounded = builder.cp.add(f.expr <= level)
        if above is not None:
            bounded.only_enforce_if(~above[index])
    if builder.accelerate:
        # a MAX balance of the items not above: the load relaxation's bound, and the held
        # assignment repaired to the limits that bound implies, often prove it at once
        form = Integerized(level, forms[0].factor, lo, ceiling)
        repaired, floor = _step_start(
            chain, form, share,
            lambda at: _held_repair(chain, forms, above, len(forms), ceiling + 1, level,
                                    (level, at)))
        if repaired is not None and repaired <= floor:
            builder.cp.add(level <= repaired)
            return repaired, cp_model.OPTIMAL, float(Fraction(repaired) / form.factor)
    status, solver = chain.solve(level, share)
    found, _, bound = _bucket_values(status, solver, level, forms[0].factor)
    if found is None:
        return None, status, None
    builder.cp.add(level <= found)
    if found <= floor:  # at the relaxation's bound: proven, whatever the search's own says
        return found, cp_model.OPTIMAL, float(Fraction(found) / forms[0].factor)
    floor_value = float(Fraction(floor) / forms[0].factor)
    return found, status, floor_value if bound is None else max(bound, floor_value)


def _leximin_count(chain: Chain, forms: list[Integerized], level: int, at_least: int,
                   share: float | None) -> tuple[list[object], int | None, int]:
    """The fewest items at ``level`` or more (at least ``at_least``), frozen at what was
    found. Returns each item's indicator of being there, the count found (None: no solution
    in time) and its proven lower bound."""
    builder = chain.builder
    cp = builder.cp
    marks: list[object] = []
    for f in forms:
        mark = cp.new_bool_var("leximin_at_level")
        cp.add(f.expr >= level).only_enforce_if(mark)
        cp.add(f.expr <= level - 1).only_enforce_if(~mark)
        marks.append(mark)
    count = sum(marks)
    cp.add(count >= at_least)
    floor = at_least
    if builder.accelerate:
        # the load relaxation counts as few as the loads allow, and the held assignment
        # with only that many left there often reaches it, where a search creeps down
        form = Integerized(count, Fraction(1), at_least, len(forms))
        repaired, floor = _step_start(
            chain, form, share, lambda at: _held_repair(chain, forms, marks, at, level, count))
        if repaired is not None and repaired <= floor:
            cp.add(count <= repaired)
            return marks, repaired, repaired
    status, solver = chain.solve(count, share)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return marks, None, at_least
    found = round(solver.objective_value)
    cp.add(count <= found)
    proven = found if status == cp_model.OPTIMAL else max(
        floor, math.ceil(solver.best_objective_bound - 1e-9))
    return marks, found, min(found, proven)


def _step_start(chain: Chain, form: Integerized, share: float | None,
                held_repair: Callable[[int], int | None]) -> tuple[int | None, int]:
    """A leximin step's accelerators: its load relaxation's bound (the floor), then
    ``held_repair`` to that floor, else a repair of the initial assignment to the
    relaxation's loads, each checked by CP-SAT. Returns the step's objective at the
    assignment held after them (None: none taken) and the floor. At most about
    STEP_REPAIR_SHARE of ``share`` seconds."""
    builder = chain.builder
    deadline = None if share is None else time.monotonic() + STEP_REPAIR_SHARE * share

    def left() -> float:
        seconds = chain.wall_limit(None if deadline is None else deadline - time.monotonic())
        return math.inf if seconds is None else max(0.0, seconds)

    work = PRESOLVE_SECONDS if chain.deterministic else None
    relaxed = load_relaxation(builder, form, RELAX_SHARE * left(), chain.options.workers,
                              chain.options.seed, chain.run,
                              None if work is None else RELAX_SHARE * work, chain.values)
    if relaxed is None or relaxed.bound <= form.lo or left() <= 0.01 or chain.interrupted:
        return None, form.lo if relaxed is None else max(form.lo, relaxed.bound)
    floor = relaxed.bound
    reached = held_repair(floor)
    if reached is not None and reached <= floor or not relaxed.optimal or left() <= 0.01:
        return reached, floor
    # the relaxation's loads, exactly, from the initial assignment (with the limits presolve
    # gives the dimensions it leaves free)
    limits = dict(relaxed.targets)
    if set(builder.container_loads()) - set(limits):
        limits = {**(load_caps(builder, seconds=left(), run=chain.run, work=work) or {}),
                  **limits}
    counts = repair(builder, limits, False,
                    None if deadline is None else deadline, exact=True)
    before = chain.values
    if counts is not None and chain.start_from(counts, form.expr):
        if reached is None or chain.start_value < reached:
            return chain.start_value, floor
    chain.values = before
    return reached, floor


def _held_repair(chain: Chain, forms: list[Integerized], marks: list[object] | None,
                 keep: int, level: int, objective: object,
                 target: tuple[object, int] | None = None) -> int | None:
    """Repair the held assignment (not the initial one) to what a leximin step asks: at
    most ``keep`` items marked (of those at ``level`` or more now, the highest), every
    other mark off, and ``target`` when given, through the load limits presolve derives from
    that. The items let go shed little each, where a repair from the initial assignment must
    fill every container to an exact load. Returns ``objective`` at the repair when CP-SAT
    accepts it (then held), else None."""
    builder = chain.builder
    if chain.values is None:  # nothing held to repair
        return None
    values = [_expr_value(f.expr, chain.values) for f in forms]
    # the highest first: one let go from above an earlier level must shed the most
    there = sorted((i for i, value in enumerate(values) if value >= level),
                   key=lambda i: -values[i])
    kept = set(there[:keep])
    let_go = [mark for i, mark in enumerate(marks or []) if i not in kept]
    targets = ([(sum(let_go), 0)] if let_go else []) + ([target] if target else [])
    caps = load_caps(builder, targets, run=chain.run,
                     seconds=chain.wall_limit(PRESOLVE_SECONDS) or PRESOLVE_SECONDS)
    if not caps:
        return None
    held = chain.values[: len(builder.count_vars)]
    over = any((builder.loads_at(held, dim) > limits).any() for dim, limits in caps.items())
    counts = repair(builder, caps, start=held) if over else held  # within them: as held
    before = chain.values
    if counts is None or not chain.start_from(counts, objective):
        chain.values = before
        return None
    return chain.start_value


def _expr_value(expr: object, values: list[int]) -> int:
    """A linear expression's value in a full solution."""
    flat = cp_model_helper.FlatIntExpr(expr)
    return int(flat.offset) + sum(int(c) * values[v.index]
                                  for v, c in zip(flat.vars, flat.coeffs))


LEVEL_SHARE = 0.5  # of the time left, what an unproven leximin level may take
# of a leximin step's share, at most, for the limits, the relaxation and the repairs: at
# 10000x500 they prove most steps in 3-4 s, where a search does not in 14
STEP_REPAIR_SHARE = 0.8
DESCENT_SHARE = 0.5  # of the time left after the levels, for the leximin descent


def _descend_leximin(chain: Chain, bucket: Bucket, deadline: float) -> None:
    """Single moves that lower the sorted vector (repair.leximin_descent) from the
    assignment held, checked by CP-SAT against every held level before it is taken."""
    builder = chain.builder
    stop = time.monotonic() + DESCENT_SHARE * (deadline - time.monotonic())
    caps = load_caps(builder, seconds=max(0.01, stop - time.monotonic()), run=chain.run)
    if not caps:
        return
    counts = builder.counts_of(chain.decode())
    found = leximin_descent(builder, bucket.leximin, counts, caps, stop)
    if found is None:
        return
    before = chain.values
    if not chain.start_from(builder.counts_of(builder.decode(found)), None,
                            max(0.01, deadline - time.monotonic())):
        chain.values = before


def _polish_leximin(chain: Chain, bucket: Bucket, budget: float) -> None:
    """The levels below the last one reached are not proven: spend the time left on IDEAL's
    scalar Σ a_i·u_i² (which spreads load the same way), with the levels reached held, and
    keep the result only if its sorted vector is lexicographically smaller (evaluator)."""
    if budget <= 0.05:
        return
    builder = chain.builder
    problem, model = builder.problem, chain.model
    before = chain.values
    held = evaluate(problem, model, chain.decode()).leximin[bucket.position]
    form = builder.integerize(lin_sum(spec.compile_goal(builder).value
                                      for spec in bucket.scalar))
    deadline = time.monotonic() + budget
    # from the assignment held, with its auxiliaries at their best for the scalar: at
    # 10000x500 a first search of the scalar found nothing in its share
    if not chain.start_from(builder.counts_of(chain.decode()), form.expr, budget):
        chain.values = before
        return
    stop = time.monotonic() + NEIGHBOURHOOD_SHARE * (deadline - time.monotonic())
    chain.values, _ = descend(builder, form.expr, chain.values, chain.start_value, stop, chain)
    if deadline - time.monotonic() > 0.05:  # then the full search, from there
        chain.solve(form.expr, deadline - time.monotonic())
    found = evaluate(problem, model, chain.decode()).leximin[bucket.position]
    if not _leximin_smaller(found, held):
        chain.values = before


def _leximin_smaller(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    for x, y in zip(a, b):
        if abs(x - y) > 1e-12 * max(1.0, abs(y)):
            return x < y
    return False


def check_result(evaluation: Evaluation, reports: list[BucketReport]) -> None:
    """Independent check: hard constraints hold in the evaluator, bounds do not exceed
    incumbents, and the evaluator never finds more than the model claimed."""
    if not evaluation.feasible:
        raise InternalError("the solver's assignment breaks hard constraints: "
                            + "; ".join(evaluation.broken_hard()))
    for report in reports:
        if report.leximin_levels is not None or report.compiled_objective is None:
            continue
        tolerance = CHECK_TOLERANCE * max(1.0, abs(report.compiled_objective))
        if report.bound is not None and report.bound > report.compiled_objective + tolerance:
            raise InternalError(f"bucket {report.position}: bound {report.bound} above the "
                                f"incumbent {report.compiled_objective}")
        if report.objective > report.compiled_objective + report.approximation_error + tolerance:
            raise InternalError(
                f"bucket {report.position}: the evaluator's value {report.objective!r} exceeds "
                f"the compiled objective {report.compiled_objective!r} "
                f"(stated error {report.approximation_error:g})")


def compiled_values(problem: Problem, model: Model, final: np.ndarray,
                    workers: int = 1) -> tuple[dict[int, tuple[float, float]], np.ndarray]:
    """Score an assignment through the compiled model: per bucket, the objective CP-SAT sees
    with the class counts fixed to those of ``final`` (auxiliaries at their best), with its
    stated error; and the assignment those counts decode to (identical objects swapped back
    into place), whose evaluator values the compiled ones must equal."""
    builder, buckets = compile_model(problem, model, leximin=False)
    chain = Chain(builder, model, SolverOptions(workers=workers))
    counts = builder.counts_of(final)
    if counts is None:
        raise ValueError("the assignment moves an object where the restrictions forbid it")
    for var, value in zip(builder.count_vars, counts):
        builder.cp.add(var == value)
    values = {}
    for position, bucket in buckets.items():
        form = builder.integerize(lin_sum(bucket.terms))
        status, solver = chain.solve(form.expr)
        if status != cp_model.OPTIMAL:
            raise ValueError(f"bucket {position}: the fixed assignment is "
                             f"{STATUS_NAMES.get(status)}")
        values[position] = (float(Fraction(int(solver.value(form.expr))) / form.factor),
                            bucket.error + form.error)
    return values, builder.decode(counts)
