"""Parity with Meta's Rebalancer wheel: our evaluator and the wheel's agree on every goal,
constraint violation and bucket sum, for initial and moved assignments.

Optional: skipped (with the reason) where no Python 3.12 interpreter with ``rebalancer`` is
found; see ``cpsat_rebalancer.peer`` for how one is located and set up.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from randomized import random_scenario

from cpsat_rebalancer import evaluate, parse_scenario
from cpsat_rebalancer.peer import evaluate_with_wheel, find_peer_python

PEER = find_peer_python()
pytestmark = [
    pytest.mark.peer,
    pytest.mark.skipif(PEER is None, reason="no Python 3.12 interpreter with the rebalancer "
                       "wheel (set CPSAT_REBALANCER_PEER_PYTHON; see README)"),
]
REL = 1e-9
NOISE = 2.0**-46  # two double computations of a value near 1 may differ by this much


def close(ours: float, theirs: float) -> bool:
    """Equal to relative 1e-9 (above the noise of double arithmetic: a value that should
    be 0 may come out as 1e-17 in one of the two)."""
    return abs(ours - theirs) <= REL * max(abs(ours), abs(theirs)) + NOISE


def known_wheel_nan(spec: dict) -> bool:
    """The wheel reports NaN for a MIN capacity whose limit is unbounded (an infinite
    threshold in its piecewise function); such items have no expression for us (value 0)."""
    capacity = spec.get("capacitySpec", {})
    return capacity.get("bound") == "MIN" and capacity.get("limit", {}).get(
        "isDefaultLimitUnbounded", False)


def random_final(scenario, seed: int) -> np.ndarray:
    rng = random.Random(seed)
    problem = scenario.problem
    final = problem.initial.copy()
    for obj in rng.sample(range(problem.num_objects), min(3, problem.num_objects)):
        final[obj] = rng.randrange(problem.num_containers)
    return final


def compare(data: dict, seed: int) -> list[str]:
    scenario = parse_scenario(data)
    problem = scenario.problem
    final = random_final(scenario, seed)
    ours_initial = evaluate(problem, scenario.model, problem.initial)
    ours_final = evaluate(problem, scenario.model, final)
    wheel = evaluate_with_wheel(data, problem.assignment_dict(final), peer_python=PEER)
    problems = []
    for label, ours, theirs in (("initial", ours_initial, wheel["initial"]),
                                ("final", ours_final, wheel["final"])):
        goal_specs = [g["spec"] for g in data["goals"] if not g.get("boundary")]
        for goal in theirs["goals"]:
            mine = ours.goals[goal["index"]]
            if np.isnan(goal["value"]) and known_wheel_nan(goal_specs[goal["index"]]):
                continue
            if not close(mine.value, goal["value"]):
                problems.append(f"{label} goal {goal['index']} {mine.arm}: ours {mine.value!r} "
                                f"wheel {goal['value']!r}")
        for constraint in theirs["constraints"]:
            mine = ours.constraints[constraint["index"]]
            if np.isnan(constraint["value"]) and known_wheel_nan(
                    data["constraints"][constraint["index"]]["spec"]):
                continue
            if not close(mine.violation, constraint["value"]):
                problems.append(f"{label} constraint {constraint['index']} {mine.arm}: ours "
                                f"{mine.violation!r} wheel {constraint['value']!r}")
        if not ours.feasible:
            continue  # the wheel measured this one with every constraint soft (see bridge)
        for position, value in theirs.get("positions", {}).items():
            if np.isnan(value):
                continue  # a known NaN goal above poisons the wheel's bucket sum
            mine = ours.positions.get(int(position), 0.0)
            if not close(mine, value):
                problems.append(f"{label} position {position}: ours {mine!r} wheel {value!r}")
    return problems


@pytest.mark.parametrize("seed", range(40))
def test_random_scenarios_agree_with_the_wheel(seed: int) -> None:
    data = random_scenario(seed)
    problems = compare(data, seed)
    assert not problems, f"seed {seed}:\n" + "\n".join(problems) + f"\n{data}"


@pytest.mark.parametrize("name", ["seed_balance_memory", "seed_drain_util_increase",
                                  "seed_uic_below_bound", "seed_uic_large_capacity_bias"])
def test_bundled_scenarios_agree_with_the_wheel(name: str) -> None:
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).parents[1] / "scenarios" / f"{name}.json").read_text())
    assert not compare(data, 0)
