"""What a solve returns: assignment, moves, values per goal and constraint, status per bucket.

Status has two parts, as in Pyomo: why the solver stopped (``termination``) and what the
returned assignment is (``status``). Values are the evaluator's, on Rebalancer's scale.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import markup
from .context import EvalContext
from .evaluate import Evaluation
from .problem import Problem

# what the returned assignment is
OPTIMAL = "OPTIMAL"  # every bucket proven optimal by CP-SAT
FEASIBLE = "FEASIBLE"  # satisfies every hard constraint; optimality not proven
INFEASIBLE = "INFEASIBLE"  # proven: the hard constraints cannot all hold
NO_SOLUTION = "NO_SOLUTION"  # nothing found in time; the initial assignment is returned


@dataclass
class BucketReport:
    """One tuple position (priority bucket) of the lexicographic chain."""

    position: int
    status: str  # OPTIMAL, FEASIBLE, INFEASIBLE, NO_SOLUTION, NOT_SOLVED
    # why it stopped: optimal, approximated (at the compiled model's optimum, which the
    # stated error separates from the exact one), time_limit, work_limit (the deterministic
    # budget of a repeatable run), infeasible, interrupted
    termination: str
    objective: float  # evaluator value of the final assignment for this position
    compiled_objective: float | None  # what CP-SAT minimized, on the same scale
    bound: float | None  # proven lower bound on the evaluator's value
    gap: float | None  # objective - bound (absolute)
    relative_gap: float | None
    approximation_error: float  # bound on |compiled - exact| from PWL pieces and rounding
    seconds: float
    leximin_levels: int | None = None  # IDEAL alone: leading sorted entries proven
    leximin_items: int | None = None
    leximin: list[float] | None = None  # sorted relative utilizations (IDEAL alone)
    # the first entry not proven: its value when the proof stopped, and its proven lower
    # bound (None: not known)
    leximin_level_value: float | None = None
    leximin_level_bound: float | None = None
    # how far above its compiled optimum later buckets may take this one (compiled values
    # within the error plus the over-estimate may tie exactly)
    freeze_slack: float = 0.0
    # an allowed worsening: the value later buckets were held to (this bucket's own optimum,
    # proven or not, is what ``status`` and ``bound`` are about; ``objective`` is its final
    # value, at most this)
    allowed_up_to: float | None = None
    stage_value: float | None = None  # and the evaluator's value when it was solved
    # a BLENDED solve: the tuple positions this bucket minimized the sum of (``objective``
    # and ``bound`` are about that sum)
    positions: list[int] | None = None


@dataclass
class SolveResult:
    problem: Problem = field(repr=False)
    status: str
    termination: str
    final: np.ndarray = field(repr=False)
    initial_evaluation: Evaluation = field(repr=False)
    final_evaluation: Evaluation = field(repr=False)
    buckets: list[BucketReport]
    seconds: float
    approximation: dict[str, float] = field(default_factory=dict)
    conflict: list[str] = field(default_factory=list)  # constraints named when infeasible
    classes: int = 0
    # the last configuration LP's values of named model variables (see Session.lp_values)
    lp_values: dict[str, float] = field(default_factory=dict, repr=False)

    @property
    def assignment(self) -> dict[str, list[str]]:
        return self.problem.assignment_dict(self.final)

    @property
    def moves(self) -> pd.DataFrame:
        moved = np.flatnonzero(self.final != self.problem.initial)
        names = self.problem.objects
        conts = self.problem.containers
        return pd.DataFrame({
            "object": [names[o] for o in moved],
            "from": [conts[self.problem.initial[o]] for o in moved],
            "to": [conts[self.final[o]] for o in moved],
        })

    @property
    def objective(self) -> dict[int, float]:
        return {b.position: b.objective for b in self.buckets}

    @property
    def best_bound(self) -> dict[int, float | None]:
        return {b.position: b.bound for b in self.buckets}

    @property
    def gap(self) -> dict[int, float | None]:
        return {b.position: b.gap for b in self.buckets}

    def goal_table(self) -> pd.DataFrame:
        """Every goal and constraint, initial and final, on Rebalancer's scale."""
        return value_table(self.initial_evaluation, self.final_evaluation)

    def utilization(self) -> pd.DataFrame:
        """Per container and per scope item, per dimension: the load before (initial
        assignment) and after (final), the capacity, and both ratios; see
        :func:`utilization_table`."""
        return utilization_table(self.problem, self.problem.initial, self.final)

    def _repr_html_(self) -> str:
        """A compact view for notebooks: status, the proof per bucket, the goal table and the
        first moves (the full report: ``cpsat_rebalancer.report``)."""
        moves = self.moves
        shown = 10
        parts = [f"<p><b>{markup.escape(self.status)}</b> ({markup.escape(self.termination)}) "
                 f"in {self.seconds:.2f} s: {self.problem.num_objects} objects, "
                 f"{self.problem.num_containers} containers, {len(moves)} moves</p>",
                 markup.frame_table(bucket_table(self)),
                 markup.frame_table(self.goal_table()[GOAL_COLUMNS])]
        if self.conflict:
            parts.append("<p>These hard constraints cannot all hold:</p>"
                         + markup.bullet_list(self.conflict))
        if len(moves):
            more = f" (the first {shown})" if len(moves) > shown else ""
            parts.append(f"<p>Moves{more}:</p>" + markup.frame_table(moves.head(shown)))
        return "<div>" + "".join(parts) + "</div>"

    def to_dict(self) -> dict[str, Any]:
        """Rebalancer's solution keys and shapes where they exist (``assignment`` maps each
        object to its container; objectives list goals per tuple position), plus ours."""
        initial, final = self.initial_evaluation, self.final_evaluation
        problem = self.problem
        solved = self.status == OPTIMAL
        return {
            "assignment": {o: problem.containers[c] for o, c in zip(problem.objects, self.final)},
            # as given (as Rebalancer reports it): before any move already in flight
            "initialAssignment": {o: problem.containers[c]
                                  for o, c in zip(problem.objects, problem.reference)},
            "initialObjective": objective_dict(initial, position=0),
            "finalObjective": objective_dict(final, position=0, solved=solved),
            "initialGlobalObjective": global_objective_dict(initial),
            "finalGlobalObjective": global_objective_dict(final, solved=solved),
            "initialConstraint": constraint_dict(initial),
            "finalConstraint": constraint_dict(final, solved=solved),
            "status": self.status,
            "termination": self.termination,
            "containerAssignment": self.assignment,
            "moves": self.moves.to_dict(orient="records"),
            "buckets": [asdict(b) for b in self.buckets],
            "approximation": self.approximation,
            "conflict": self.conflict,
            "seconds": self.seconds,
            "feasible": final.feasible,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, default=_jsonable)


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def objective_dict(evaluation: Evaluation, position: int = 0,
                   solved: bool = False) -> dict[str, Any]:
    """One tuple position as Rebalancer reports it: its sum and the weighted terms."""
    objs = [{"name": g.name, "weight": g.weight, "value": g.weighted}
            for g in evaluation.goals if g.position == position]
    objs += [{"name": c.name, "weight": 1.0, "value": c.soft}
             for c in evaluation.constraints if c.position == position and c.has_soft_term]
    return {"solved": solved, "value": evaluation.positions.get(position, 0.0), "objs": objs}


def global_objective_dict(evaluation: Evaluation, solved: bool = False) -> dict[str, Any]:
    """Every tuple position from 0 to the last used one."""
    last = max(evaluation.positions, default=-1)
    return {"solved": solved,
            "goals": [objective_dict(evaluation, p, solved) for p in range(last + 1)]}


def constraint_dict(evaluation: Evaluation, solved: bool = False) -> dict[str, Any]:
    broken = [c for c in evaluation.constraints if c.violation > 1e-10]
    return {"solved": solved,
            "brokenVal": sum(c.violation for c in broken),
            "brokenCount": len(broken),
            "constraints": [{"name": c.name, "value": c.violation, "policy": c.policy,
                             "hardHolds": c.hard_excess <= 1e-10}
                            for c in evaluation.constraints]}


# the goal table's columns a reader needs first (the weighted values and the spec follow)
GOAL_COLUMNS = ["kind", "name", "position", "weight", "initial", "final"]


def bucket_table(result: SolveResult) -> pd.DataFrame:
    """The proof per tuple position: status, value, bound and gap, and for IDEAL alone how
    many leximin levels are proven."""
    rows = []
    for b in result.buckets:
        note = ""
        if b.leximin_levels is not None:
            note = (f"leximin: all {b.leximin_items} relative utilizations proven"
                    if b.leximin_levels == b.leximin_items else
                    f"leximin: the {b.leximin_levels} largest of {b.leximin_items} relative "
                    "utilizations proven")
            if b.leximin_level_value is not None:
                note += f"; the next is {b.leximin_level_value:.6g}"
                if b.leximin_level_bound is not None:
                    note += f" (bound {b.leximin_level_bound:.6g})"
        rows.append({"position": b.position, "status": b.status, "termination": b.termination,
                     "value": b.objective, "bound": b.bound, "gap": b.gap,
                     "relative gap": b.relative_gap, "error bound": b.approximation_error,
                     "seconds": b.seconds, "note": note})
    return pd.DataFrame(rows, columns=["position", "status", "termination", "value", "bound",
                                       "gap", "relative gap", "error bound", "seconds",
                                       "note"])


UTILIZATION_COLUMNS = ["scope", "item", "dimension", "capacity", "before", "after",
                       "before_ratio", "after_ratio"]


def utilization_table(problem: Problem, before: np.ndarray, after: np.ndarray) -> pd.DataFrame:
    """One row per (scope, item, dimension), the container scope first: the load of the
    item under the ``before`` and ``after`` assignments (index arrays), its capacity, and
    load / capacity. A capacity the input never set is NaN, and so are its ratios (specs
    then use Rebalancer's default 1.0); a zero capacity gives an infinite ratio when
    loaded."""
    context = EvalContext(problem, before, after)
    frames = []
    order = [problem.container_name, *sorted(set(problem.scopes) - {problem.container_name})]
    for scope_name in order:
        scope = problem.scopes[scope_name]
        for dimension in problem.dimension_names:
            load_before = context.util(scope, dimension, "INITIAL")
            load_after = context.util(scope, dimension, "AFTER")
            given = scope.capacities.get(dimension)
            capacity = (np.full(len(scope.items), np.nan) if given is None
                        else np.asarray(given, dtype=float))
            frames.append(pd.DataFrame({
                "scope": scope_name, "item": scope.items, "dimension": dimension,
                "capacity": capacity, "before": load_before, "after": load_after,
                "before_ratio": _ratio(load_before, capacity),
                "after_ratio": _ratio(load_after, capacity)}, columns=UTILIZATION_COLUMNS))
    if not frames:
        return pd.DataFrame(columns=UTILIZATION_COLUMNS)
    return pd.concat(frames, ignore_index=True)


def _ratio(load: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """load / capacity; 0/0 is 0 (an empty item of no capacity is not full)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = load / capacity
    return np.where((load == 0) & (capacity == 0), 0.0, ratio)


def value_table(initial: Evaluation, final: Evaluation) -> pd.DataFrame:
    rows = []
    for g0, g1 in zip(initial.goals, final.goals):
        rows.append({"kind": "goal", "name": g0.name, "spec": g0.arm, "position": g0.position,
                     "weight": g0.weight, "initial": g0.value, "final": g1.value,
                     "initial_weighted": g0.weighted, "final_weighted": g1.weighted})
    for c0, c1 in zip(initial.constraints, final.constraints):
        rows.append({"kind": f"constraint ({c0.policy})", "name": c0.name, "spec": c0.arm,
                     "position": c0.position if c0.has_soft_term else None, "weight": None,
                     "initial": c0.violation, "final": c1.violation,
                     "initial_weighted": c0.soft, "final_weighted": c1.soft})
    return pd.DataFrame(rows)


class Solution(dict):
    """What ``ProblemSolver.solve`` returns: Rebalancer's solution dict (``assignment``,
    ``movesSummary``, ``solverSummaries``, ``initialAssignment``, ``compactAssignment``, the
    objective and constraint summaries, and :meth:`SolveResult.to_dict`'s own keys), which
    also answers every attribute of the :class:`SolveResult` it came from
    (``solution.status``, ``solution.moves``, ``solution.buckets``)."""

    def __init__(self, data: dict[str, Any], result: SolveResult):
        super().__init__(data)
        self.result = result

    def __getattr__(self, name: str) -> Any:
        if name == "result":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.result, name)
