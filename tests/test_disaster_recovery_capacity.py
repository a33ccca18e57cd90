"""DisasterRecoveryCapacitySpec (docs/semantics.md#disasterrecoverycapacity): primary load
plus the worst failover load of any disaster group, against capacity; goal and constraint."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from spec_checks import check_compiled_agrees
from test_bruteforce import check_against_enumeration
from test_parity import PEER, close

from cpsat_rebalancer import evaluate, parse_scenario
from cpsat_rebalancer.errors import InputError
from cpsat_rebalancer.peer import evaluate_with_wheel
from cpsat_rebalancer.result import OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve.pipeline import solve_model

CATALOG = Path(__file__).parents[1] / "scenarios" / "catalog"
OPTIONS = SolverOptions(workers=1, seed=0)
ARM = "disasterRecoveryCapacitySpec"


def random_disaster_scenario(seed: int, max_objects: int = 5) -> dict:
    """A tiny scenario with one DisasterRecoveryCapacitySpec: on hosts or racks (a host may be
    outside the racks), zero or real capacities, default, listed or overlapping disaster
    groups, primaries with one to three secondaries; as a goal or a constraint under a
    random policy, sometimes with a movement goal after it."""
    rng = random.Random(seed)
    n, m = rng.randint(3, max_objects), rng.randint(2, 3)
    objects, hosts = [f"t{o}" for o in range(n)], [f"h{c}" for c in range(m)]
    assignment = {h: [] for h in hosts}
    for o in objects:
        assignment[rng.choice(hosts)].append(o)
    racks = {h: f"r{k % 2}" for k, h in enumerate(hosts) if k < 2 or rng.random() < 0.5}
    scope = rng.choice(["host", "host", "rack"])
    items = hosts if scope == "host" else sorted(set(racks.values()))
    primaries = rng.sample(objects, rng.randint(1, min(3, n - 1)))
    pairs = {p: rng.sample([o for o in objects if o != p], rng.randint(1, min(3, n - 1)))
             for p in primaries}
    spec: dict = {"scope": scope, "dimension": "load", "primaryToSetOfSecondaryObjects": pairs}
    draw = rng.random()
    if draw < 0.3 and len(items) > 1:
        spec["sharedDisasterGroups"] = [items[:2]]
    elif draw < 0.5 and len(items) > 2:
        spec["sharedDisasterGroups"] = [items[:2], items[1:3], [items[0], items[2]]]
    zero = rng.random() < 0.3
    data = {
        "objectName": "task", "containerName": "host", "assignment": assignment,
        "objectDimensions": {"load": {o: rng.choice([0, 0.5, 1, 2, 5]) for o in objects}},
        "containerDimensions": {"load": {h: 0 if zero else rng.choice([1, 2, 4.5])
                                         for h in hosts}},
        "scopes": {"rack": racks},
        "scopeDimensions": {"rack": {"load": {r: 0 if zero else rng.choice([2, 5])
                                              for r in sorted(set(racks.values()))}}},
        "goals": [], "constraints": [],
    }
    if rng.random() < 0.5:
        data["goals"].append({"spec": {ARM: spec}, "weight": rng.choice([1, 3])})
    else:
        data["constraints"].append({"spec": {ARM: spec},
                                    "policy": rng.choice(["DEFAULT", "HARD", "SOFT"]),
                                    "invalidCost": rng.choice([1, 100]),
                                    "invalidState": rng.choice([0, 10])})
    if rng.random() < 0.5 or not data["goals"]:
        data["goals"].append({"spec": {"minimizeMovementSpec": {}}, "tuplePos": 1})
    return data


def catalog(name: str) -> dict:
    return json.loads((CATALOG / f"{name}.json").read_text())


# ---------------------------------------------------------------- semantics


def test_the_reference_example_colocates_each_primary_with_its_secondary() -> None:
    """Rebalancer's OnlyPrimaryObjectsMatter: capacities 0 (no normalization); at the start
    host1 would take task2's 5 when host0 fails, 8 + 5 + 3 = 16 in all; the optimum puts each
    primary with its secondary, leaving the primary load 1 + 2 + 5 = 8."""
    scenario = parse_scenario(catalog("disaster_recovery_capacity"))
    start = evaluate(scenario.problem, scenario.model, scenario.problem.initial)
    assert start.goals[0].value == 16
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == OPTIMAL
    assert result.objective[0] == 8
    final = result.to_dict()["assignment"]
    for primary, secondary in (("task0", "task3"), ("task1", "task4"), ("task2", "task5")):
        assert final[primary] == final[secondary]


def test_overlapping_disaster_groups_reach_rebalancers_optimum() -> None:
    """Rebalancer's overlappingDisasterGroups: any two hosts may fail together, task2 and
    task4 kept off host0 and host1; its optimal solver reaches 0.5, proven optimal here."""
    scenario = parse_scenario(catalog("disaster_recovery_capacity_overlapping"))
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == OPTIMAL
    assert result.objective[0] == pytest.approx(0.5, rel=1e-12)
    assert result.buckets[0].bound == pytest.approx(0.5, rel=1e-12)


# ---------------------------------------------------------------- exactness


@pytest.mark.parametrize("seed", range(50))
def test_optimum_matches_enumeration(seed: int) -> None:
    check_against_enumeration(random_disaster_scenario(seed), seed)


def test_sizes_with_every_decimal_keep_the_model_within_its_room() -> None:
    """Drawn shape 1126 at 6x4 (a disaster-recovery constraint on sizes near 10 with every
    decimal a double holds): the worst failure's variables, one per item and group at the
    sizes' common denominator (near 2^52), passed 2^63 in all, and the solve refused the
    model as too large. They now take their share of the room, and the answer is the
    enumerated optimum."""
    check_against_enumeration(random_shape_scenario(6, 4, 1126), 1126)


@pytest.mark.parametrize("seed", range(40))
def test_compiled_objective_matches_the_evaluator(seed: int) -> None:
    check_compiled_agrees(random_disaster_scenario(seed, max_objects=7), seed)


# ---------------------------------------------------------------- parity with the wheel


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason="no Python 3.12 interpreter with the rebalancer wheel")
@pytest.mark.parametrize("seed", range(40))
def test_values_agree_with_the_wheel(seed: int) -> None:
    """Goal values and constraint violations, at the start and after three random moves, and
    the start's tuple positions (soft terms under every policy), relative 1e-9."""
    data = random_disaster_scenario(seed, max_objects=7)
    scenario = parse_scenario(data)
    problem = scenario.problem
    rng = random.Random(seed)
    final = problem.initial.copy()
    for obj in rng.sample(range(problem.num_objects), min(3, problem.num_objects)):
        final[obj] = rng.randrange(problem.num_containers)
    wheel = evaluate_with_wheel(data, problem.assignment_dict(final), peer_python=PEER)
    problems = []
    for label, where in (("initial", problem.initial), ("final", final)):
        ours = evaluate(problem, scenario.model, where)
        for goal in wheel[label]["goals"]:
            mine = ours.goals[goal["index"]].value
            if not close(mine, goal["value"]):
                problems.append(f"{label} goal {goal['index']}: {mine!r} vs {goal['value']!r}")
        for constraint in wheel[label]["constraints"]:
            mine = ours.constraints[constraint["index"]].violation
            if not close(mine, constraint["value"]):
                problems.append(f"{label} constraint {constraint['index']}: {mine!r} vs "
                                f"{constraint['value']!r}")
    start = evaluate(problem, scenario.model, problem.initial)
    for position, value in wheel["initial"].get("positions", {}).items():
        if not close(start.positions.get(int(position), 0.0), value):
            problems.append(f"start position {position}: {start.positions} vs {value!r}")
    assert not problems, f"seed {seed}:\n" + "\n".join(problems) + f"\n{data}"


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(("change", "field"), [
    ({"dimension": "nope"}, "dimension"),
    ({"scope": "nope"}, "scope"),
    ({"sharedDisasterGroups": [["host0", "nope"]]}, r"sharedDisasterGroups\[0\]\[1\]"),
    ({"sharedDisasterGroups": "host0"}, "sharedDisasterGroups"),
    ({"primaryToSetOfSecondaryObjects": {"nope": ["task3"]}},
     "primaryToSetOfSecondaryObjects.nope"),
    ({"primaryToSetOfSecondaryObjects": {"task0": ["task3", "nope"]}},
     r"primaryToSetOfSecondaryObjects.task0\[1\]"),
    ({"primaryToSetOfSecondaryObjects": {"task2": ["task3", "task4", "task3"]}},
     "primaryToSetOfSecondaryObjects.task2"),
    ({"extra": 1}, "extra"),
])
def test_bad_fields_are_named(change: dict, field: str) -> None:
    data = catalog("disaster_recovery_capacity")
    data["goals"][0]["spec"][ARM].update(change)
    with pytest.raises(InputError, match=field):
        parse_scenario(data)
