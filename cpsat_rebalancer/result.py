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
    # within twice the error may tie exactly)
    freeze_slack: float = 0.0


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
