"""Exact floating-point evaluation of every goal and constraint: the judge of reported values.

Independent of the compiler (no CP-SAT here): each spec's ``evaluate``/``infos`` is plain
numpy on an (initial, final) pair, and constraint policies are applied as Rebalancer does
(docs/semantics.md#constraint-policies).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .context import EvalContext, InfoChanges, MoveBatch, positive, step
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

    @property
    def hard_excess(self) -> float:
        """How far the hard constraints are broken, summed over them (0 when they hold)."""
        return float(sum(c.hard_excess for c in self.constraints))

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
              penalties: np.ndarray | None = None) -> np.ndarray:
    """The soft term of a constraint (per candidate, infos last, under a MoveBatch)."""
    e = infos[..., soft]
    term = entry.invalid_cost * positive(e).sum(axis=-1)
    if penalties is not None:  # P_k of each broken expression, weighted like its excess
        term = term + entry.invalid_cost * (step(e) * penalties[..., soft]).sum(axis=-1)
    if entry.invalid_state != 0:
        term = term + entry.invalid_state * step(e).sum(axis=-1)
    return term


def soft_cost(entry: ConstraintEntry, split: PolicySplit, ctx: EvalContext) -> np.ndarray:
    """What a constraint's soft term adds to its position (per candidate under a batch)."""
    changes = entry.spec.info_changes(ctx) if isinstance(ctx, MoveBatch) else None
    if changes is not None:
        return changed_terms(entry, split, changes, ctx.size)[0]
    infos = np.asarray(entry.spec.infos(ctx), dtype=float)
    return np.asarray(soft_term(entry, infos, split.soft, entry.spec.penalties(ctx)))


def hard_excess(infos: np.ndarray, split: PolicySplit) -> np.ndarray:
    """How far the hard infos are broken beyond their rule (per candidate): each excess
    within the tolerance counts as kept."""
    excess = positive(infos[..., split.hard] - split.hard_rhs[split.hard])
    return np.where(excess > TOLERANCE, excess, 0.0).sum(axis=-1)


def check_restrictions(problem: Problem, model: Model, final: np.ndarray) -> list[str]:
    moved = final != problem.initial
    held = model.held
    if held:  # held where it is: it entered no container
        objects = np.fromiter(held, dtype=np.int64, count=len(held))
        moved[objects] &= final[objects] != np.fromiter(held.values(), dtype=np.int64,
                                                         count=len(held))
    entered = set(np.unique(final[moved]).tolist())
    problems = []
    for spec, restriction in model.restrictions:
        for obj in restriction.fixed_objects:
            if moved[obj]:
                problems.append(f"{spec.name}: object {problem.objects[obj]} must not move")
        if restriction.held:
            objects = np.fromiter(restriction.held, dtype=np.int64, count=len(restriction.held))
            places = np.fromiter(restriction.held.values(), dtype=np.int64, count=len(objects))
            for obj, cont in zip(*(a[final[objects] != places] for a in (objects, places))):
                problems.append(f"{spec.name}: object {problem.objects[obj]} is held in "
                                f"{problem.containers[cont]}")
        for cont in restriction.non_accepting:
            if cont in entered:
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
        soft = (float(soft_term(entry, infos, split.soft, entry.spec.penalties(ctx)))
                if split.has_soft_term else 0.0)
        constraints.append(ConstraintValue(
            entry.spec.name, entry.spec.arm, entry.policy, entry.position,
            float(positive(infos).sum()), soft, split.has_soft_term,
            float(hard_excess(infos, split))))
        if split.has_soft_term:
            positions[entry.position] = positions.get(entry.position, 0.0) + soft
            soft_positions.add(entry.position)
    leximin = {}
    for position, goal_index in model.leximin_positions(soft_positions).items():
        key = model.goals[goal_index].spec.leximin_values(ctx)
        leximin[position] = tuple(sorted(key.tolist(), reverse=True))
    return Evaluation(goals, constraints, dict(sorted(positions.items())), leximin,
                      check_restrictions(problem, model, final))


def batchable(problem: Problem, model: Model) -> bool:
    """Whether ``evaluate_moves`` can price moves of this model: every spec takes a
    MoveBatch, and no dimension's values depend on where an object lands."""
    return not problem.dynamic_dims and all(
        entry.spec.batched for entry in [*model.goals, *model.constraints])


def evaluate_moves(problem: Problem, model: Model, batch: MoveBatch,
                   splits: list[PolicySplit]) -> tuple[np.ndarray, np.ndarray]:
    """The evaluator's tuple of every candidate of ``batch`` (rows: positions in order, a
    leximin position as its sorted vector, as the local search orders tuples) and how far
    each breaks the hard constraints (the sum of ``Evaluation.hard_excess``; 0 where they
    hold. ``splits``: each constraint's policy split, from ``policy_splits``). Restrictions
    (pinned objects, closed containers) are the caller's to respect: candidates are assumed
    to keep them."""
    k = batch.size
    positions: dict[int, np.ndarray] = {}

    def add(position: int, value: np.ndarray) -> None:
        positions[position] = positions.get(position, 0.0) + np.broadcast_to(value, (k,))

    for entry in model.goals:
        value = np.asarray(entry.spec.evaluate(batch), dtype=float)
        add(entry.position, value * entry.weight if entry.weight != 1 else value)
    broken = np.zeros(k)
    soft_positions = set()
    for entry, split in zip(model.constraints, splits):
        changes = entry.spec.info_changes(batch)
        if changes is not None:
            soft, excess = changed_terms(entry, split, changes, k)
        else:
            infos = np.asarray(entry.spec.infos(batch), dtype=float)
            soft = (soft_term(entry, infos, split.soft, entry.spec.penalties(batch))
                    if split.has_soft_term else None)
            excess = hard_excess(infos, split)
        if split.has_soft_term:
            add(entry.position, soft)
            soft_positions.add(entry.position)
        broken = broken + np.broadcast_to(excess, (k,))
    leximin = {position: -np.sort(-model.goals[goal].spec.leximin_values(batch), axis=-1)
               for position, goal in model.leximin_positions(soft_positions).items()}
    columns = [leximin[p] if p in leximin else positions.get(p, np.zeros(k))[:, None]
               for p in sorted(set(positions) | set(leximin))]
    keys = np.concatenate(columns, axis=1) if columns else np.zeros((k, 0))
    return keys, broken


def changed_terms(entry: ConstraintEntry, split: PolicySplit, changes: InfoChanges, k: int
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``soft_term`` and ``hard_excess`` per candidate of a batch of ``k``, from the base's
    expressions and those each candidate changes (the spec has no penalties)."""
    def terms(values: np.ndarray, infos: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray]:
        soft = np.where(split.soft[infos], entry.invalid_cost * positive(values)
                        + entry.invalid_state * step(values), 0.0)
        excess = positive(values - split.hard_rhs[infos])
        return soft, np.where(split.hard[infos] & (excess > TOLERANCE), excess, 0.0)

    base = terms(changes.base, slice(None))
    changed = terms(changes.value, changes.info)
    return tuple(np.sum(before) + np.bincount(changes.candidate, after - before[changes.info],
                                              minlength=k)
                 for before, after in zip(base, changed))


def guides_by_position(model: Model, ctx: EvalContext) -> dict[int, float | np.ndarray]:
    """The specs' guides (``Spec.guide``; per candidate under a batch) summed per tuple
    position of their goal or constraint."""
    totals: dict[int, float | np.ndarray] = {}
    for entry in [*model.goals, *model.constraints]:
        value = entry.spec.guide(ctx)
        if value is not None:
            totals[entry.position] = totals.get(entry.position, 0.0) + np.asarray(
                value, dtype=float)
    return totals


def policy_splits(problem: Problem, model: Model) -> list[PolicySplit]:
    """Each constraint's policy split (it depends on the initial assignment only)."""
    ctx0 = EvalContext(problem, problem.initial, problem.initial)
    return [split_policy(entry, np.asarray(entry.spec.infos(ctx0), dtype=float))
            for entry in model.constraints]
