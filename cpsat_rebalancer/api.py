"""The one front door: ``solve_problem`` (and ``solve_scenario``) take a parsed scenario and
options and return a ``SolveResult``; ``ProblemSolver``, the Rebalancer Python binding's
surface, records into a scenario dict and solves through the same door.

Swap ``from rebalancer import ProblemSolver`` for ``from cpsat_rebalancer import
ProblemSolver`` and the same calls give the proven optimum. Every call only records; all
validation happens at :meth:`ProblemSolver.solve` (or :meth:`to_scenario`), with paths into
the recorded scenario in the error messages.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from typing import Any

import numpy as np

from .binding_data import (
    INFO,
    by_partition,
    check_log_level,
    check_precision,
    check_similar,
    expand_compact,
    log_level_rank,
)
from .errors import InputError
from .evaluate import Evaluation, evaluate
from .fields import check_number, is_number
from .peer.solve import END_REASONS, solve_with_wheel
from .primitives import TOLERANCE
from .problem import Problem
from .progress import ProgressEvent
from .result import (
    FEASIBLE,
    INFEASIBLE,
    NO_SOLUTION,
    OPTIMAL,
    BucketReport,
    Solution,
    SolveResult,
)
from .scenario import Model, Scenario, SolverOptions, check_depth, parse_scenario
from .solve.budget import DEFAULT_BUDGET, Budget
from .solve.pipeline import solve_model
from .solver_specs import ObjectivePlan, parse_solver_spec


def _recorded(value: Any) -> Any:
    """A copy of what a call was given, so that later changes by the caller do not reach
    the recording; a mapping-like value (a pandas Series, say) as the dict it holds. What
    cannot be copied is recorded as given: solve() validates it and names its field."""
    if not isinstance(value, dict) and hasattr(value, "items") and hasattr(value, "keys"):
        try:
            value = dict(value.items())
        except (TypeError, ValueError):
            return value
    try:
        return copy.deepcopy(value)
    except (TypeError, ValueError, copy.Error, RecursionError):
        return value


def _name(value: Any, call: str, argument: str) -> Any:
    """A name to record under: one that cannot be a key (a list, say) is refused at the call;
    any other non-string is recorded, and solve() names it in the recorded field."""
    try:
        hash(value)
    except TypeError:
        raise InputError(f"{call}({argument})", "expected a string name", value) from None
    return value


def _differs(value: Any, default: float) -> bool:
    """Whether a default given to a call needs recording: anything but the number itself."""
    return not (is_number(value) and value == default)


class ProblemSolver:
    """Rebalancer's ``ProblemSolver`` (its ``_rebalancer.pyi``): calls record a scenario,
    :meth:`solve` validates and solves it, and returns a :class:`Solution`."""

    def __init__(self, service_name: str = "", service_scope: str = "",
                 can_execute_async: bool = False):
        self.service_name = service_name
        self.service_scope = service_scope
        self.can_execute_async = can_execute_async
        self._data: dict[str, Any] = {"goals": [], "constraints": []}
        self._compact: Any = None  # set_compact_assignment's {container: {class: count}}
        self._by_partition: dict[Any, tuple[Any, Any, Any, Any]] = {}
        self._solvers: list[Any] = []
        self._similar: list[Any] = []
        self._log_level: str | None = None
        self._precision: dict[str, float] = {}
        self._run_id = str(uuid.uuid4())  # as the wheel: a fresh id per solver, or set_run_id's

    # ---- universe ----
    def set_object_name(self, object_name: str) -> ProblemSolver:
        self._data["objectName"] = object_name
        return self

    def set_container_name(self, container_name: str) -> ProblemSolver:
        self._data["containerName"] = container_name
        return self

    def set_assignment(self, container_to_objects: dict[str, list[str]]) -> ProblemSolver:
        self._data["assignment"] = _recorded(container_to_objects)
        self._compact = None
        return self

    def set_compact_assignment(self, compact_assignment_input: dict[str, dict[str, int]]
                               ) -> ProblemSolver:
        """The initial assignment as counts: ``{container: {object class: count}}``. Each
        class stands for that many identical objects, named ``<class>__0``, ``<class>__1``,
        ... (as the wheel names them); dimensions, partitions and dynamic dimensions given
        for a class name hold for each of its objects."""
        self._compact = _recorded(compact_assignment_input)
        self._data.pop("assignment", None)
        return self

    def set_log_level(self, level: str) -> ProblemSolver:
        """Rebalancer's log level (folly's names: ``INFO``, ``WARNING``, ``ERROR``, ``DBG1``,
        ...): ``INFO`` and the debug levels turn on CP-SAT's search log."""
        self._log_level = check_log_level(level)
        return self

    def set_precision(self, tolerances: dict[str, float]) -> ProblemSolver:
        """``{"absolute": a, "relative": r}``: how close two values are to count as equal when
        a solver's answer is compared with what it started from (each above machine epsilon,
        as the wheel requires; default 1e-10)."""
        self._precision = check_precision(tolerances)
        return self

    def set_feasibility_tolerance(self, feasibility_tolerance: float) -> ProblemSolver:
        """Accepted for the port: the wheel's optimal solver lets a constraint be broken by
        this much; an exact solve keeps every hard constraint exactly."""
        check_number(feasibility_tolerance, "set_feasibility_tolerance")
        return self

    def enable_restrict_moving_object_only_once(self) -> ProblemSolver:
        """Accepted for the port (a local-search rule): an exact solve moves each object at
        most once by construction."""
        return self

    def enable_stable_as_much_as_possible(self) -> ProblemSolver:
        """Accepted for the port: an exact solve already moves the fewest objects its
        optimum allows."""
        return self

    def add_similar_containers(self, similar_container_classes: list[list[str]]
                               ) -> ProblemSolver:
        """Classes of containers the user knows to be alike (a hint to Rebalancer's search).
        The names are checked; the exact solve finds interchangeable containers itself."""
        self._similar.append(_recorded(similar_container_classes))
        return self

    def set_run_id(self, run_id: str) -> ProblemSolver:
        """The run's id, reported as the solution's ``runId``."""
        if not isinstance(run_id, str):
            raise InputError("set_run_id(run_id)", "expected a string", run_id)
        self._run_id = run_id
        return self

    def get_run_id(self) -> str:
        return self._run_id

    # Rebalancer's telemetry and engine switches: accepted so that a model ports unchanged;
    # none changes what an exact solve finds
    def set_logging_label(self, logging_label: str) -> ProblemSolver:
        return self

    def disable_scuba_logging(self) -> ProblemSolver:
        return self

    def disable_solution_summary(self) -> ProblemSolver:
        return self

    def enable_profiler(self) -> ProblemSolver:
        return self

    def publish_metrics(self) -> ProblemSolver:
        return self

    def use_parallelized_new_materializer(self) -> ProblemSolver:
        return self

    def should_use_dynamic_object_ordering(self, use_dynamic_object_ordering: bool
                                           ) -> ProblemSolver:
        return self

    def set_manifold_backup_params(self, params: dict) -> ProblemSolver:
        return self

    def add_solver(self, spec: dict) -> ProblemSolver:
        """A solver to run, in the order added, each from the previous one's answer (see
        :meth:`solve`)."""
        self._solvers.append(_recorded(spec))
        return self

    def add_object_dimension(self, dimension_name: str, object_to_value: dict[str, float],
                             default_value: float = 0.0) -> ProblemSolver:
        dimension_name = _name(dimension_name, "add_object_dimension", "dimension_name")
        self._data.setdefault("objectDimensions", {})[dimension_name] = _recorded(object_to_value)
        if _differs(default_value, 0.0):
            self._data.setdefault("objectDimensionDefaults", {})[dimension_name] = default_value
        return self

    def add_dynamic_object_dimension(self, dimension_name: str, scope: str,
                                     scope_item_to_object_to_value: dict[str, dict[str, float]],
                                     default_value: float = 0.0) -> ProblemSolver:
        """An object dimension whose value depends on the item of ``scope`` the object lands
        in (``default_value`` where none is given, and outside the scope)."""
        dimension_name = _name(dimension_name, "add_dynamic_object_dimension", "dimension_name")
        entry: dict[str, Any] = {"scope": scope,
                                 "values": _recorded(scope_item_to_object_to_value)}
        if _differs(default_value, 0.0):
            entry["default"] = default_value
        self._data.setdefault("dynamicObjectDimensions", {})[dimension_name] = entry
        return self

    def add_dynamic_object_dimension_by_partition(
            self, dimension_name: str, scope: str, partition_name: str,
            scope_item_to_group_to_value: dict[str, dict[str, float]],
            default_value: float = 0.0) -> ProblemSolver:
        """A dynamic object dimension given per group of ``partition_name``: every object of
        a group takes the group's value in that scope item."""
        dimension_name = _name(dimension_name, "add_dynamic_object_dimension_by_partition",
                               "dimension_name")
        self._by_partition[dimension_name] = (scope, partition_name,
                                              _recorded(scope_item_to_group_to_value),
                                              default_value)
        return self

    def add_object_dimension_vector(self, dimension_name: str,
                                    object_to_values: dict[str, list[float]],
                                    default_value: float = 0.0) -> ProblemSolver:
        """A dimension with a vector of values per object, all of one length (objects not
        given get ``default_value`` in every entry). A scope item's load is the largest, over
        the entries, of the entry's load (docs/semantics.md#vector-dimensions)."""
        dimension_name = _name(dimension_name, "add_object_dimension_vector", "dimension_name")
        self._data.setdefault("objectDimensionVectors", {})[dimension_name] = _recorded(
            object_to_values)
        if _differs(default_value, 0.0):
            self._data.setdefault("objectDimensionDefaults", {})[dimension_name] = default_value
        return self

    def add_container_dimension(self, dimension_name: str, container_to_value: dict[str, float],
                                default_value: float = 1.0) -> ProblemSolver:
        dimension_name = _name(dimension_name, "add_container_dimension", "dimension_name")
        self._data.setdefault("containerDimensions", {})[dimension_name] = _recorded(
            container_to_value)
        if _differs(default_value, 1.0):
            self._data.setdefault("containerDimensionDefaults", {})[dimension_name] = default_value
        return self

    def add_scope(self, scope_name: str, container_to_scope_item: dict[str, str]) -> ProblemSolver:
        scope_name = _name(scope_name, "add_scope", "scope_name")
        self._data.setdefault("scopes", {})[scope_name] = _recorded(container_to_scope_item)
        return self

    def add_scope_dimension(self, dimension_name: str, scope_name: str,
                            scope_item_to_value: dict[str, float]) -> ProblemSolver:
        scope_name = _name(scope_name, "add_scope_dimension", "scope_name")
        dimension_name = _name(dimension_name, "add_scope_dimension", "dimension_name")
        dims = self._data.setdefault("scopeDimensions", {}).setdefault(scope_name, {})
        dims[dimension_name] = _recorded(scope_item_to_value)
        return self

    def add_partition(self, partition_name: str,
                      group_to_objects: dict[str, list[str]]) -> ProblemSolver:
        partition_name = _name(partition_name, "add_partition", "partition_name")
        self._data.setdefault("partitions", {})[partition_name] = _recorded(group_to_objects)
        return self

    # ---- goals and constraints ----
    def add_goal(self, spec: dict, weight: float = 1.0,
                 tuple_pos: int | None = None) -> ProblemSolver:
        entry: dict[str, Any] = {"spec": _recorded(spec), "weight": weight}
        if tuple_pos is not None:
            entry["tuplePos"] = tuple_pos
        self._data["goals"].append(entry)
        return self

    def add_goal_boundary(self) -> ProblemSolver:
        self._data["goals"].append({"boundary": True})
        return self

    def get_current_goal_index(self) -> int:
        return sum(1 for g in self._data["goals"] if g.get("boundary"))

    def add_constraint(self, spec: dict, policy: Any = None, invalid_cost: float | None = None,
                       invalid_state: float | None = None,
                       tuple_pos_if_broken: int | None = None) -> ProblemSolver:
        entry: dict[str, Any] = {"spec": _recorded(spec)}
        for key, value in (("policy", policy), ("invalidCost", invalid_cost),
                           ("invalidState", invalid_state),
                           ("tuplePosIfBroken", tuple_pos_if_broken)):
            if value is not None:
                entry[key] = value
        self._data["constraints"].append(entry)
        return self

    def set_constraint_policy(self, policy: Any) -> ProblemSolver:
        self._data["constraintPolicy"] = policy
        return self

    def set_default_constraint_params(self, params: dict) -> ProblemSolver:
        self._data["defaultConstraintParams"] = _recorded(params)
        return self

    # ---- results ----
    def to_dict(self) -> dict[str, Any]:
        """The recorded scenario, in the scenario-file format (a compact assignment and
        dimensions by partition written out per object)."""
        check_depth(self._data)
        try:
            data = copy.deepcopy(self._data)
        except (TypeError, ValueError, copy.Error) as exc:
            raise InputError("", f"a recorded value is not plain data ({exc})") from None
        if self._compact is not None:
            expand_compact(data, self._compact)
        for dim, entry in self._by_partition.items():
            data.setdefault("dynamicObjectDimensions", {})[dim] = by_partition(data, *entry)
        return data

    def to_scenario(self) -> Scenario:
        return parse_scenario(self.to_dict())

    def solve(self, time_limit: float | None = None, workers: int | None = None,
              seed: int | None = None, deterministic_time: float | None = None,
              log: bool | None = None, hint: dict[str, list[str]] | None = None,
              local_search: str = "exact", peer_python: str | None = None,
              on_progress: Callable[[ProgressEvent], None] | None = None) -> Solution:
        """Solve to proven optimality (or the best found within ``time_limit``) and return a
        :class:`Solution`: Rebalancer's solution dict (``solution["assignment"]``,
        ``solution.get("movesSummary")``) that also answers as the :class:`SolveResult`.

        Without :meth:`add_solver`, one exact solve. With it, each solver in turn, from the
        answer held: an optimal-solver spec with its ``solveTime`` as the time limit and its
        ``multiObjSolveSettings`` as the plan; a local-search spec as an exact solve with its
        ``solveTime`` (``local_search="wheel"``: Rebalancer's own local search, from the
        initial assignment, run by the wheel). As in Rebalancer, a solver's answer that is
        no better than what it started from is dropped. ``time_limit`` applies to solvers
        without a ``solveTime``. ``hint``, an assignment ``{container: [objects]}`` such as
        a heuristic's, is where the first search starts when it keeps the hard constraints
        and beats the initial assignment. ``log`` defaults to the log level's choice.
        ``on_progress`` receives progress events while it runs (see solve_problem)."""
        scenario = self.to_scenario()
        problem = scenario.problem
        stages = [parse_solver_spec(spec, f"add_solver[{k}]")
                  for k, spec in enumerate(self._solvers)]
        check_similar(self._similar, problem)
        if local_search not in ("exact", "wheel"):
            raise InputError("solve(local_search)", "expected 'exact' or 'wheel'", local_search)
        for stage in stages:  # before any solver runs
            if not (stage.local_search and local_search == "wheel"):
                stage.check_exact()
        if log is None:
            log = self._log_level is not None and log_level_rank(self._log_level) <= INFO
        options = SolverOptions.checked(time_limit, workers, seed, deterministic_time, log,
                                        path="solve")
        start = None if hint is None else problem.assignment_array(hint, "hint")
        chain = Chain(scenario, self._precision)
        if not stages:  # one exact solve, its answer taken as it is
            chain.run(solve_scenario(scenario, options, hint=start,
                                     on_progress=on_progress), ObjectivePlan(),
                      revertible=False)
        for stage in stages:
            if stage.local_search and local_search == "wheel":
                result, reason = wheel_local_search(scenario, self.to_dict(), stage.spec,
                                                    peer_python)
                chain.run(result, stage.plan, reason)
                continue
            seconds = options.time_limit if stage.seconds is None else stage.seconds
            staged = replace(options, time_limit=seconds, plan=stage.plan)
            held = start if chain.result is None else chain.result.final
            chain.run(solve_scenario(scenario, staged, hint=held, on_progress=on_progress),
                      stage.plan)
        solution = chain.solution(compact=self._compact is not None)
        solution["runId"] = self._run_id
        return solution

    def evaluate(self, assignment: dict[str, list[str]]) -> Evaluation:
        """Rebalancer-scale values of every goal and constraint for moving to ``assignment``."""
        scenario = self.to_scenario()
        final = scenario.problem.assignment_array(assignment)
        return evaluate(scenario.problem, scenario.model, final)


END_REASON_CODES = {name: code for code, name in END_REASONS.items()}  # Types.thrift


def end_reason(result: SolveResult) -> int:
    """Rebalancer's end reason for an exact solve, as its optimal solver reports it: OPTIMAL
    when proven, NO_SOLUTION_FOUND without an assignment, else HIT_TIME_LIMIT."""
    if result.status == OPTIMAL:
        return END_REASON_CODES["OPTIMAL"]
    if result.status in (NO_SOLUTION, INFEASIBLE):
        return END_REASON_CODES["NO_SOLUTION_FOUND"]
    return END_REASON_CODES["HIT_TIME_LIMIT"]


class Chain:
    """The solvers of ``add_solver``, one after another: each answer replaces the one held
    unless Rebalancer would revert it, with the summaries Rebalancer reports."""

    def __init__(self, scenario: Scenario, precision: dict[str, float]):
        self.problem, self.model = scenario.problem, scenario.model
        self.initial = evaluate(self.problem, self.model, self.problem.initial)
        self.result: SolveResult | None = None
        self.summaries: list[dict[str, Any]] = []
        self.moves: list[dict[str, Any]] = []
        self.absolute = precision.get("absolute", TOLERANCE)
        self.relative = precision.get("relative", TOLERANCE)

    def run(self, result: SolveResult, plan: ObjectivePlan, reason: int | None = None,
            revertible: bool = True) -> None:
        self.summaries.append({"endReason": end_reason(result) if reason is None else reason})
        held = self.problem.initial if self.result is None else self.result.final
        moved = np.flatnonzero(result.final != held)
        if len(moved) and revertible and self.reverted(result.final_evaluation, plan):
            return
        if len(moved):
            names, containers = self.problem.objects, self.problem.containers
            self.moves.append({"moves": [{"object": names[o], "srcContainer": containers[held[o]],
                                          "dstContainer": containers[result.final[o]]}
                                         for o in moved],
                               "objectives": {}, "evalsCount": 0, "constraintInvldCnt": {}})
        self.result = result

    def greater(self, a: float, b: float) -> bool:
        """``a > b`` beyond the precision (Rebalancer's isstrictlyGreater)."""
        return a - b > max(self.absolute, self.relative * max(abs(a), abs(b)))

    def reverted(self, new: Evaluation, plan: ObjectivePlan) -> bool:
        """Whether Rebalancer would undo an answer: from an assignment that broke no
        constraint, one no better (lexicographically, within the precision); when worsening
        is allowed, only one that worsens some position beyond its allowance (or, without
        one, at all) from the value held."""
        held = self.initial if self.result is None else self.result.final_evaluation
        if held.restriction_violations or any(c.violation > TOLERANCE
                                              for c in held.constraints):
            return False
        positions = sorted(set(held.positions) | set(new.positions))
        pairs = [(held.positions.get(p, 0.0), new.positions.get(p, 0.0)) for p in positions]
        first = next(((old, value) for old, value in pairs
                      if self.greater(value, old) or self.greater(old, value)), None)
        if first is None:
            return True  # neutral: the moves gain nothing
        if not self.greater(first[1], first[0]):
            return False  # better
        if not plan.allowances:
            return True
        return any(self.greater(value, float(plan.allowances[p].limit(Fraction(old)))
                                if p in plan.allowances else old)
                   for p, (old, value) in zip(positions, pairs))

    def solution(self, compact: bool) -> Solution:
        result = self.result
        if result is None:  # every answer reverted: the initial assignment stands
            result = SolveResult(self.problem, FEASIBLE if self.initial.feasible else NO_SOLUTION,
                                 "reverted", self.problem.initial.copy(), self.initial,
                                 self.initial, [], 0.0)
        data = result.to_dict()
        data["movesSummary"] = self.moves
        data["solverSummaries"] = self.summaries
        data["numContainers"] = len(self.problem.containers)
        data["compactAssignment"] = {"objectsPerContainer": {}}
        data["compactAssignmentInitial"] = {"objectsPerContainer": {}}
        if compact:  # as the wheel: counts per class, and no per-object assignment
            for key, where in (("compactAssignment", result.final),
                               ("compactAssignmentInitial", self.problem.initial)):
                data[key]["objectsPerContainer"] = class_counts(self.problem, where)
            data["assignment"], data["initialAssignment"] = {}, {}
        return Solution(data, result)


def class_counts(problem: Problem, assignment: np.ndarray) -> dict[str, dict[str, int]]:
    """``{container: {class: count}}`` of objects named ``<class>__<k>``; only the counts
    that are not zero."""
    counts: dict[str, dict[str, int]] = {}
    for name, container in zip(problem.objects, assignment):
        of = counts.setdefault(problem.containers[container], {})
        cls = name.rsplit("__", 1)[0]
        of[cls] = of.get(cls, 0) + 1
    return counts


def wheel_local_search(scenario: Scenario, data: dict, spec: dict,
                       peer_python: str | None) -> tuple[SolveResult, int]:
    """Rebalancer's own local search on ``data`` (from the initial assignment), its answer
    evaluated here, and its end reason."""
    problem, model = scenario.problem, scenario.model
    answer = solve_with_wheel(data, "local-search", spec=spec, peer_python=peer_python)
    final = problem.assignment_array(answer["assignment"], "the wheel's assignment")
    initial = evaluate(problem, model, problem.initial)
    final_eval = evaluate(problem, model, final)
    reports = [BucketReport(position, FEASIBLE, "local_search", value, None, None, None, None,
                            0.0, 0.0) for position, value in sorted(final_eval.positions.items())]
    result = SolveResult(problem, FEASIBLE if final_eval.feasible else NO_SOLUTION,
                         "local_search", final, initial, final_eval, reports,
                         float(answer.get("solveSeconds") or answer["seconds"]))
    return result, END_REASON_CODES.get(answer["endReason"], END_REASON_CODES["HIT_TIME_LIMIT"])


def solve_problem(problem: Problem, model: Model, options: SolverOptions | None = None, *,
                  hint: np.ndarray | None = None, aggregate: bool = True,
                  accelerate: bool = True, budget: Budget = DEFAULT_BUDGET,
                  on_progress: Callable[[ProgressEvent], None] | None = None) -> SolveResult:
    """Solve ``model`` on ``problem``: every tuple position in order, each proven optimal or
    reported with its bound. ``hint``, an assignment (a heuristic's, say), is where the
    search starts when it keeps the hard constraints and beats the initial one.
    ``aggregate=False`` keeps identical objects apart and ``accelerate=False`` skips the
    accelerator wing (both: the same optimum, for tests and measurements).
    ``on_progress(event)`` is called while the solve runs, from a thread of its own, with a
    ``ProgressEvent`` (phase, bucket, incumbent, bound, gap, elapsed, limit) at every phase,
    solution and bound, and at least every half second; it never changes the result."""
    return solve_model(problem, model, options or SolverOptions(), aggregate=aggregate,
                       hint=hint, accelerate=accelerate, budget=budget,
                       on_progress=on_progress)


def solve_scenario(scenario: Scenario, options: SolverOptions | None = None,
                   hint: np.ndarray | None = None, *, accelerate: bool = True,
                   on_progress: Callable[[ProgressEvent], None] | None = None) -> SolveResult:
    """``solve_problem`` on a parsed scenario, with its own solver options by default."""
    return solve_problem(scenario.problem, scenario.model, options or scenario.options,
                         hint=hint, accelerate=accelerate, on_progress=on_progress)
