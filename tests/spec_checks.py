"""Shared checks for one spec type at a time: random tiny scenarios carrying the spec as a
goal and/or a constraint (every role and policy drawn), and parity of their values with the
Rebalancer wheel. The tests of each spec module (``test_<spec>.py``) supply a function that
draws the spec's fields."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from randomized import random_scenario
from test_agreement import allowed_random_final
from test_parity import known_wheel_nan

from cpsat_rebalancer import evaluate, parse_scenario
from cpsat_rebalancer.peer import evaluate_with_wheel, find_peer_python
from cpsat_rebalancer.solve.check import compiled_values
from cpsat_rebalancer.specs import REGISTRY

PEER = find_peer_python()
PEER_REASON = ("no Python 3.12 interpreter with the rebalancer wheel (set "
               "CPSAT_REBALANCER_PEER_PYTHON; see README)")
REL = 1e-9
NOISE = 2.0**-46  # two double computations of a value near 1 may differ by this much
PARTITION = "grp"

# draws the spec's fields from (rng, scenario data, role): role is "goal" or "constraint"
SpecMaker = Callable[[random.Random, dict[str, Any], str], dict[str, Any]]


def close(ours: float, theirs: float) -> bool:
    """Equal to relative 1e-9 (above the noise of double arithmetic)."""
    return abs(ours - theirs) <= REL * max(abs(ours), abs(theirs)) + NOISE


def objects_of(data: dict[str, Any]) -> list[str]:
    return [o for objs in data["assignment"].values() for o in objs]


def items_of(data: dict[str, Any], scope: str) -> list[str]:
    if scope == "host":
        return list(data["assignment"])
    return sorted(set(data["scopes"][scope].values()))


def scopes_of(data: dict[str, Any]) -> list[str]:
    return ["host", *data.get("scopes", {})]


def pick_filter(rng: random.Random, items: list[str], share: float = 0.4) -> dict | None:
    """No filter (most often), or a whitelist or blacklist of some of ``items``."""
    if rng.random() >= share or len(items) < 2:
        return None
    chosen = rng.sample(items, rng.randint(1, len(items) - 1))
    return {"itemsWhitelist": chosen} if rng.random() < 0.5 else {"itemsBlacklist": chosen}


def add_partition(rng: random.Random, data: dict[str, Any], overlap: bool = False) -> list[str]:
    """A partition "grp" of 1-3 non-empty groups with some objects in none; its groups.
    ``overlap``: 2-3 groups, and some grouped objects (always the first) join a second one."""
    objects = objects_of(data)
    names = ["ga", "gb", "gc"][:rng.randint(2 if overlap else 1, min(3, len(objects)))]
    groups: dict[str, list[str]] = {g: [] for g in names}
    for k, obj in enumerate(objects):
        if k < len(names):
            groups[names[k]].append(obj)
        elif rng.random() < 0.85:
            groups[rng.choice(names)].append(obj)
    if overlap:
        for k, obj in enumerate(objects):
            home = [g for g in names if obj in groups[g]]
            if home and (k == 0 or rng.random() < 0.3):
                groups[rng.choice([g for g in names if g not in home])].append(obj)
    data.setdefault("partitions", {})[PARTITION] = groups
    return names


def overlapping(data: dict[str, Any]) -> bool:
    """Whether an object is in two groups of the partition "grp"."""
    members = [o for objs in data.get("partitions", {}).get(PARTITION, {}).values() for o in objs]
    return len(members) > len(set(members))


def spec_scenario(arm: str, make: SpecMaker, seed: int, *, max_objects: int = 5,
                  max_containers: int = 3, negative_weight: bool = False,
                  overlap: bool = False) -> dict[str, Any]:
    """A tiny random scenario (``randomized.random_scenario``) with a partition (whose groups
    overlap with ``overlap``), its goals and constraints kept half of the time, and the spec
    ``arm`` added in every role Rebalancer allows it: as a goal (weight, tuple position)
    and/or a constraint (policy, costs, tuplePosIfBroken), each drawn; ``negative_weight``: a
    goal's weight may be -1."""
    data = random_scenario(seed, max_objects=max_objects, max_containers=max_containers)
    rng = random.Random(f"{arm}-{seed}")
    add_partition(rng, data, overlap)
    if rng.random() < 0.5:
        data["goals"], data["constraints"] = [], []
    cls = REGISTRY[arm]
    roles = [r for r, allowed in (("goal", cls.goal_allowed),
                                  ("constraint", cls.constraint_allowed)) if allowed]
    chosen = [r for r in roles if rng.random() < 0.7] or [rng.choice(roles)]
    for role in chosen:
        spec = {arm: make(rng, data, role)}
        if role == "goal":
            entry: dict[str, Any] = {"spec": spec, "tuplePos": rng.choice([0, 0, 1])}
            if rng.random() < 0.3:
                entry["weight"] = rng.choice([0.5, 3, -1] if negative_weight else [0.5, 3])
            data["goals"].append(entry)
        else:
            entry = {"spec": spec, "policy": rng.choice(["DEFAULT", "HARD", "SOFT"])}
            if rng.random() < 0.4:
                entry["tuplePosIfBroken"] = rng.choice([0, 1])
            if rng.random() < 0.3:
                entry["invalidCost"] = rng.choice([1, 10])
                entry["invalidState"] = rng.choice([0, 5])
            data["constraints"].append(entry)
    return data


def random_final(problem, seed: int, keep: frozenset[int] = frozenset()) -> np.ndarray:
    """The initial assignment with up to 3 objects (none of ``keep``) moved at random."""
    rng = random.Random(seed)
    final = problem.initial.copy()
    movable = [o for o in range(problem.num_objects) if o not in keep]
    for obj in rng.sample(movable, min(3, len(movable))):
        final[obj] = rng.randrange(problem.num_containers)
    return final


def wheel_mismatches(data: dict[str, Any], final: np.ndarray, *,
                     positions: bool = True) -> list[str]:
    """Every goal value, constraint violation and (with ``positions``) tuple-position sum,
    ours against the wheel's, at the initial assignment and at ``final``."""
    scenario = parse_scenario(data)
    problem = scenario.problem
    wheel = evaluate_with_wheel(data, problem.assignment_dict(final), peer_python=PEER)
    problems = []
    for label, assignment in (("initial", problem.initial), ("final", final)):
        ours = evaluate(problem, scenario.model, assignment)
        theirs = wheel[label]
        goal_specs = [g["spec"] for g in data.get("goals", []) if not g.get("boundary")]
        for goal in theirs["goals"]:
            mine = ours.goals[goal["index"]]
            if np.isnan(goal["value"]) and known_wheel_nan(goal_specs[goal["index"]]):
                continue
            if not close(mine.value, goal["value"]):
                problems.append(f"{label} goal {goal['index']} {mine.arm}: ours "
                                f"{mine.value!r} wheel {goal['value']!r}")
        for constraint in theirs["constraints"]:
            mine = ours.constraints[constraint["index"]]
            if np.isnan(constraint["value"]) and known_wheel_nan(
                    data["constraints"][constraint["index"]]["spec"]):
                continue
            if not close(mine.violation, constraint["value"]):
                problems.append(f"{label} constraint {constraint['index']} {mine.arm}: ours "
                                f"{mine.violation!r} wheel {constraint['value']!r}")
        if not positions or not ours.feasible:
            continue  # the wheel measured an infeasible one with every constraint soft
        for position, value in theirs.get("positions", {}).items():
            if np.isnan(value):
                continue  # a known NaN goal above poisons the wheel's bucket sum
            mine = ours.positions.get(int(position), 0.0)
            if not close(mine, value):
                problems.append(f"{label} position {position}: ours {mine!r} wheel {value!r}")
    return problems


def value_at(data: dict[str, Any], moves: dict[str, str] | None = None):
    """The evaluation of ``data`` at its initial assignment with ``moves`` applied."""
    scenario = parse_scenario(data)
    problem = scenario.problem
    final = problem.initial.copy()
    for obj, target in (moves or {}).items():
        final[problem.object_index[obj]] = problem.container_index[target]
    return evaluate(problem, scenario.model, final)


def check_compiled_agrees(data: dict[str, Any], seed: int) -> None:
    """At a random assignment the hard rules allow, each position's compiled objective
    equals the evaluator's value, within its stated error."""
    scenario = parse_scenario(data)
    final = allowed_random_final(scenario, random.Random(seed))
    if final is None:
        pytest.skip("no feasible random assignment for this scenario")
    values, canonical = compiled_values(scenario.problem, scenario.model, final)
    evaluation = evaluate(scenario.problem, scenario.model, canonical)
    for position, (compiled, error) in values.items():
        exact = evaluation.positions.get(position, 0.0)
        assert compiled == pytest.approx(exact, abs=error + 1e-9 * max(1.0, abs(exact))), (
            f"seed {seed} position {position}")
