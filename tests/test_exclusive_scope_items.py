"""ExclusiveScopeItemsSpec (docs/semantics.md#exclusivescopeitems): values against the
wheel's numbers for both goal formulas and both constraint shapes, the reference example
solved to its documented outcome, the optimum against enumeration on random tiny scenarios,
compiled objective against the evaluator, parity with the wheel, and bad input."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spec_checks import (
    PARTITION,
    PEER,
    PEER_REASON,
    check_compiled_agrees,
    items_of,
    overlapping,
    random_final,
    scopes_of,
    spec_scenario,
    value_at,
    wheel_mismatches,
)
from test_bruteforce import check_against_enumeration
from test_fuzz import mutate, mutation, solve_or_reject

from cpsat_rebalancer import InputError, parse_scenario
from cpsat_rebalancer.result import OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve.pipeline import solve_model

ARM = "exclusiveScopeItemsSpec"
CATALOG = Path(__file__).parents[1] / "scenarios" / "catalog"
OPTIONS = SolverOptions(workers=1, seed=0)


def approx(x: float):
    return pytest.approx(x, rel=1e-12, abs=1e-15)


def reference_example() -> dict[str, Any]:
    return json.loads((CATALOG / "exclusive_scope_items.json").read_text())


def conflict(item: str, others: list[str], overlaps: list[float] | None = None) -> dict:
    return {"scopeItem": item, "conflictingScopeItemsWithOverlap": [
        {"conflictingScopeItem": o, **({"overlap": overlaps[k]} if overlaps else {})}
        for k, o in enumerate(others)]}


PAIRWISE = [conflict("host1", ["host2", "host3"]), conflict("host2", ["host3"])]


def test_reference_example_reaches_the_documented_outcome() -> None:
    """Documented: the only valid solutions put all three tasks on one host. The wheel
    reports the constraint broken at the start (violation 1, soft term 100 + 10000)."""
    data = reference_example()
    start = value_at(data).constraints[0]
    assert start.violation == 1.0 and start.soft == approx(10100.0)
    scenario = parse_scenario(data)
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == OPTIMAL
    assert result.final_evaluation.constraints[0].violation == 0.0
    assert len(set(result.final.tolist())) == 1  # one host holds every task


def goal(**fields: Any) -> dict[str, Any]:
    """The reference setup (one task on each of host1, host2, host3), the spec as a goal."""
    data = reference_example()
    spec = {"scope": "host", "dimension": "task_count", "conflictInfoList": PAIRWISE, **fields}
    data["goals"] = [{"spec": {ARM: spec}}]
    data["constraints"] = []
    return data


# the wheel's initialObjective for these fields on the reference setup
@pytest.mark.parametrize("fields, expected", [
    ({}, 3.0),  # every host has a conflicting host in use
    ({"formula": "AGGRESSIVE_PACKING"}, -27.0),  # each host packed 1 + 1 + 1: -3·3²
    # P1 = 3·1 + 2 + 0.5, P2 = 1 + 2 + 1, P3 = 1 + 0.5 + 1: -(3·5.5² + 4² + 2.5²)
    ({"formula": 2, "scopeItemWeights": {"host1": 3},
      "conflictInfoList": [conflict("host1", ["host2", "host3"], [2, 0.5]),
                           conflict("host2", ["host3"])]}, -113.0),
    ({"partitionName": "p"}, 3.0),  # a goal does not read the partition
])
def test_goal_values(fields: dict, expected: float) -> None:
    data = goal(**fields)
    data["partitions"] = {"p": {"ga": ["task1", "task2"], "gb": ["task3"]}}
    assert value_at(data).goals[0].value == approx(expected)


def test_goal_after_moves() -> None:
    """task3 joins task2 on host2: host3 is free; host1 and host2 are in use and conflict,
    so the invalidated items are host1, host2 (each other) and host3 (both)."""
    assert value_at(goal(), {"task3": "host2"}).goals[0].value == approx(3.0)
    assert value_at(goal(), {"task1": "host2", "task3": "host2"}).goals[0].value == approx(2.0)
    packed = value_at(goal(formula="AGGRESSIVE_PACKING"), {"task1": "host2", "task3": "host2"})
    assert packed.goals[0].value == approx(-(1 + 1 + 1))  # each P is 1 (host2 only)


def test_constraint_per_group_has_one_expression_per_group() -> None:
    """The wheel: with a partition, group ga (host1 and host2) breaks the exclusivity, gb
    (host3 alone) does not: violation 1, soft term 100 + 10000."""
    data = reference_example()
    data["partitions"] = {"p": {"ga": ["task1", "task2"], "gb": ["task3"], "gc": []}}
    data["constraints"][0]["spec"][ARM]["partitionName"] = "p"
    data["constraints"][0]["policy"] = "SOFT"
    constraint = value_at(data).constraints[0]
    assert constraint.violation == 1.0 and constraint.soft == approx(10100.0)
    both = value_at(data, {"task3": "host1"}).constraints[0]  # gb on host1 only
    assert both.violation == 1.0
    apart = value_at(data, {"task2": "host1"}).constraints[0]  # ga on host1, gb on host3
    assert apart.violation == 0.0


def make_spec(rng: random.Random, data: dict[str, Any], role: str) -> dict[str, Any]:
    scope = rng.choice(scopes_of(data))
    items = items_of(data, scope)
    entries = []
    for _ in range(rng.randint(1, 3)):
        main = rng.choice(items)
        pool = [i for i in items if i != main] or items
        others = rng.sample(pool, rng.randint(1, min(2, len(pool))))
        if rng.random() < 0.1:
            others = []  # an entry without conflicts adds nothing
        overlaps = [rng.choice([1, 2, 0.5]) for _ in others] if rng.random() < 0.4 else None
        entries.append(conflict(main, others, overlaps))
    spec: dict[str, Any] = {"scope": scope, "conflictInfoList": entries,
                            "dimension": rng.choice(["task_count", "task_count", "cpu", "mem"])}
    if rng.random() < 0.5:
        spec["formula"] = rng.choice(["MINIMIZE_INVALIDATED_SCOPE_ITEMS_COUNT",
                                      "AGGRESSIVE_PACKING"])
    if rng.random() < 0.3:
        spec["scopeItemWeights"] = {rng.choice(items): rng.choice([2, 0.5, -1])}
    if overlapping(data) or rng.random() < 0.4:
        spec["partitionName"] = PARTITION
    if rng.random() < 0.25:  # a size that depends on the host
        data["dynamicObjectDimensions"] = {"dyn": {"scope": "host", "default": 0, "values": {
            h: {o: rng.choice([0, 1, 2]) for o in objs if rng.random() < 0.5}
            for h, objs in data["assignment"].items()}}}
        spec["dimension"] = "dyn"
    return spec


def scenario(seed: int, **kwargs: Any) -> dict[str, Any]:
    return spec_scenario(ARM, make_spec, seed, **kwargs)


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_random_scenarios_match_enumeration(seed: int, overlap: bool) -> None:
    check_against_enumeration(scenario(seed, overlap=overlap), seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1000, 1060))
def test_larger_random_scenarios_match_enumeration(seed: int) -> None:
    check_against_enumeration(scenario(seed, max_objects=7), seed)


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("seed", range(20))
def test_compiled_objective_matches_the_evaluator(seed: int, overlap: bool) -> None:
    check_compiled_agrees(scenario(seed, overlap=overlap), seed)


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=PEER_REASON)
@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_random_scenarios_agree_with_the_wheel(seed: int, overlap: bool) -> None:
    data = scenario(seed, overlap=overlap)
    final = random_final(parse_scenario(data).problem, seed)
    problems = wheel_mismatches(data, final)
    assert not problems, f"seed {seed}:\n" + "\n".join(problems) + f"\n{data}"


@pytest.mark.parametrize("fields, path", [
    ({"dimension": ""}, "dimension"),
    ({"scope": "row"}, "scope"),
    ({"partitionName": "nope"}, "partitionName"),
    ({"formula": "TIGHT"}, "formula"),
    ({"pairs": [{"scopeItem1": "host1", "scopeItem2": "host2"}]}, "pairs"),
    ({"conflictInfoList": [{"scopeItem": "host9"}]}, "conflictInfoList[0].scopeItem"),
    ({"conflictInfoList": [conflict("host1", ["host9"])]},
     "conflictInfoList[0].conflictingScopeItemsWithOverlap[0].conflictingScopeItem"),
    ({"conflictInfoList": [{"scopeItem": "host1", "conflictingScopeItems": ["host2"]}]},
     "conflictInfoList[0].conflictingScopeItems"),
    ({"conflictInfoList": [conflict("host1", ["host2"], ["big"])]},
     "conflictInfoList[0].conflictingScopeItemsWithOverlap[0].overlap"),
    ({"conflictInfoList": "host1"}, "conflictInfoList"),
    ({"scopeItemWeights": {"host9": 2}}, "scopeItemWeights.host9"),
    ({"colour": "red"}, "colour"),
])
def test_bad_input_names_the_field(fields: dict, path: str) -> None:
    with pytest.raises(InputError) as info:
        parse_scenario(goal(**fields))
    assert info.value.path == f"goals[0].spec.{ARM}.{path}"


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), mutations=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_scenarios_solve_or_raise_input_error(seed: int, mutations: list) -> None:
    solve_or_reject(mutate(scenario(seed, max_objects=4), mutations))
