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
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import InputError
from .evaluate import Evaluation, evaluate
from .fields import is_number
from .problem import Problem
from .progress import ProgressEvent
from .result import SolveResult
from .scenario import Model, Scenario, SolverOptions, check_depth, parse_scenario
from .solve.budget import DEFAULT_BUDGET, Budget
from .solve.pipeline import solve_model


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
    def __init__(self, service_name: str = "", service_scope: str = ""):
        self.service_name = service_name
        self.service_scope = service_scope
        self._data: dict[str, Any] = {"goals": [], "constraints": []}

    # ---- universe ----
    def set_object_name(self, object_name: str) -> ProblemSolver:
        self._data["objectName"] = object_name
        return self

    def set_container_name(self, container_name: str) -> ProblemSolver:
        self._data["containerName"] = container_name
        return self

    def set_assignment(self, container_to_objects: dict[str, list[str]]) -> ProblemSolver:
        self._data["assignment"] = _recorded(container_to_objects)
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
        """The recorded scenario, in the scenario-file format."""
        check_depth(self._data)
        try:
            return copy.deepcopy(self._data)
        except (TypeError, ValueError, copy.Error) as exc:
            raise InputError("", f"a recorded value is not plain data ({exc})") from None

    def to_scenario(self) -> Scenario:
        return parse_scenario(self.to_dict())

    def solve(self, time_limit: float | None = None, workers: int | None = None,
              seed: int | None = None, deterministic_time: float | None = None,
              log: bool = False, hint: dict[str, list[str]] | None = None,
              on_progress: Callable[[ProgressEvent], None] | None = None) -> SolveResult:
        """Solve to proven optimality (or the best found within ``time_limit``). ``hint``,
        an assignment ``{container: [objects]}`` such as a heuristic's, is where the search
        starts when it keeps the hard constraints and beats the initial assignment.
        ``on_progress`` receives progress events while it runs (see solve_problem)."""
        scenario = self.to_scenario()
        options = SolverOptions.checked(time_limit, workers, seed, deterministic_time, log,
                                        path="solve")
        start = None if hint is None else scenario.problem.assignment_array(hint, "hint")
        return solve_scenario(scenario, options, hint=start, on_progress=on_progress)

    def evaluate(self, assignment: dict[str, list[str]]) -> Evaluation:
        """Rebalancer-scale values of every goal and constraint for moving to ``assignment``."""
        scenario = self.to_scenario()
        final = scenario.problem.assignment_array(assignment)
        return evaluate(scenario.problem, scenario.model, final)


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
