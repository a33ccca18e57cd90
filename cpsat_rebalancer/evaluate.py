"""Exact floating-point evaluation of every goal and constraint: the judge of reported values.

Independent of the compiler (no CP-SAT here): each spec's ``evaluate``/``infos`` is plain
numpy on an (initial, final) pair, and constraint policies are applied as Rebalancer does
(docs/semantics.md#constraint-policies).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .context import EvalContext, positive, step
from .primitives import TOLERANCE
from .problem import Problem
from .scenario import ConstraintEntry, Model


@dataclass
class GoalValue:
    name: str
    arm: str
    position: int
    weight: float
    value: float  # unweighted g
    weighted: float  # w * g, what enters the bucket


@dataclass
class ConstraintValue:
    name: str
    arm: str
    policy: str
    position: int  # where the soft term goes
    violation: float  # Σ e⁺ on Rebalancer's scale (the "constraint value")
    soft: float  # soft term added to its position (0 when none)
    has_soft_term: bool
    hard_excess: float  # how far the hard parts are broken (0 when they hold)


@dataclass
class Evaluation:
    goals: list[GoalValue]
    constraints: list[ConstraintValue]
    positions: dict[int, float]
    leximin: dict[int, tuple[float, ...]] = field(default_factory=dict)
    restriction_violations: list[str] = field(default_factory=list)

    @property
    def feasible(self) -> bool:
        return not self.restriction_violations and all(
            c.hard_excess <= TOLERANCE for c in self.constraints
        )

    def broken_hard(self) -> list[str]:
        names = [c.name for c in self.constraints if c.hard_excess > TOLERANCE]
        return names + self.restriction_violations

    def tuple(self) -> tuple[float, ...]:
        return tuple(self.positions[p] for p in sorted(self.positions))


@dataclass(frozen=True)
class PolicySplit:
    """Which infos of a constraint are soft (in the objective) and which stay hard."""

    soft: np.ndarray  # bool per info
    hard_rhs: np.ndarray  # per info: e_k <= rhs for hard infos (0, or the initial value)
    hard: np.ndarray  # bool per info
    has_soft_term: bool


def split_policy(entry: ConstraintEntry, initial_infos: np.ndarray) -> PolicySplit:
    """Apply a constraint policy (docs/semantics.md#constraint-policies): SOFT all soft;
    HARD all hard; DEFAULT soft where initially broken, with the hard rule "do not exceed
    the initial value" on those."""
    n = len(initial_infos)
    if entry.policy == "SOFT":
        return PolicySplit(np.ones(n, bool), np.zeros(n), np.zeros(n, bool), True)
    if entry.policy == "HARD":
        return PolicySplit(np.zeros(n, bool), np.zeros(n), np.ones(n, bool), False)
    broken = initial_infos > TOLERANCE
    rhs = np.where(broken, initial_infos, 0.0)
    return PolicySplit(broken, rhs, np.ones(n, bool), bool(broken.any()))


def soft_term(entry: ConstraintEntry, infos: np.ndarray, soft: np.ndarray,
              penalties: np.ndarray | None = None) -> float:
    e = infos[soft]
    term = entry.invalid_cost * positive(e).sum()
    if penalties is not None:  # P_k of each broken expression, weighted like its excess
        term += entry.invalid_cost * (step(e) * penalties[soft]).sum()
    if entry.invalid_state != 0:
        term += entry.invalid_state * step(e).sum()
    return float(term)


def check_restrictions(problem: Problem, model: Model, final: np.ndarray) -> list[str]:
    moved = final != problem.initial
    problems = []
    for spec, restriction in model.restrictions:
        for obj in restriction.fixed_objects:
            if moved[obj]:
                problems.append(f"{spec.name}: object {problem.objects[obj]} must not move")
        for cont in restriction.non_accepting:
            entering = np.flatnonzero(moved & (final == cont))
            if len(entering):
                problems.append(
                    f"{spec.name}: container {problem.containers[cont]} accepts no new objects"
                )
    return problems


def evaluate(problem: Problem, model: Model, final: np.ndarray) -> Evaluation:
    """Evaluate every goal and constraint of ``model`` for the move initial -> ``final``."""
    initial = problem.initial
    ctx = EvalContext(problem, initial, final)
    ctx0 = ctx.at_initial
    positions: dict[int, float] = {}
    goals = []
    for entry in model.goals:
        value = float(entry.spec.evaluate(ctx))
        weighted = value * entry.weight if entry.weight != 1 else value
        goals.append(GoalValue(entry.spec.name, entry.spec.arm, entry.position, entry.weight,
                               value, weighted))
        positions[entry.position] = positions.get(entry.position, 0.0) + weighted
    constraints = []
    soft_positions = set()
    for entry in model.constraints:
        infos = np.asarray(entry.spec.infos(ctx), dtype=float)
        split = split_policy(entry, np.asarray(entry.spec.infos(ctx0), dtype=float))
        soft = (soft_term(entry, infos, split.soft, entry.spec.penalties(ctx))
                if split.has_soft_term else 0.0)
        excess = positive(infos[split.hard] - split.hard_rhs[split.hard])
        hard_excess = float(excess[excess > TOLERANCE].sum())
        constraints.append(ConstraintValue(
            entry.spec.name, entry.spec.arm, entry.policy, entry.position,
            float(positive(infos).sum()), soft, split.has_soft_term, hard_excess))
        if split.has_soft_term:
            positions[entry.position] = positions.get(entry.position, 0.0) + soft
            soft_positions.add(entry.position)
    leximin = {}
    for position, goal_index in model.leximin_positions(soft_positions).items():
        key = model.goals[goal_index].spec.leximin_key(ctx)
        leximin[position] = tuple(sorted(key, reverse=True))
    return Evaluation(goals, constraints, dict(sorted(positions.items())), leximin,
                      check_restrictions(problem, model, final))

