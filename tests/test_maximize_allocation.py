"""MaximizeAllocationSpec (docs/semantics.md#maximizeallocation): values against the wheel's
numbers, the reference example solved to its documented outcome, the optimum against
enumeration on random tiny scenarios, compiled objective against the evaluator, parity with
the wheel on random scenarios, and bad input."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from spec_checks import (
    PEER,
    PEER_REASON,
    check_compiled_agrees,
    items_of,
    pick_filter,
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

ARM = "maximizeAllocationSpec"
CATALOG = Path(__file__).parents[1] / "scenarios" / "catalog"
OPTIONS = SolverOptions(workers=1, seed=0)


def approx(x: float):
    return pytest.approx(x, rel=1e-12, abs=1e-15)


def reference_example() -> dict[str, Any]:
    return json.loads((CATALOG / "maximize_allocation.json").read_text())


def test_reference_example_values_are_the_wheels() -> None:
    """The wheel reports -0.1 at the start (each host 2/10 full: -(3 · 0.2)/6) and -0.5
    once every task is on its preferred host (-(3 · 1.0)/6); command: the example's
    ProblemSolver with a MaximizeAllocation goal, initialObjective / finalObjective."""
    data = reference_example()
    assert value_at(data).goals[0].value == approx(-0.1)
    preferred = {"task0": "host1", "task1": "host1", "task2": "host2", "task3": "host2",
                 "task4": "host0", "task5": "host0"}
    assert value_at(data, preferred).goals[0].value == approx(-0.5)


def test_reference_example_reaches_the_documented_outcome() -> None:
    """Documented: every task moves to its preferred host, each host 100% used."""
    scenario = parse_scenario(reference_example())
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == OPTIMAL
    assert result.final_evaluation.goals[0].value == approx(-0.5)
    final = scenario.problem.assignment_dict(result.final)
    assert final == {"host0": ["task4", "task5"], "host1": ["task0", "task1"],
                     "host2": ["task2", "task3"]}


def small(**fields: Any) -> dict[str, Any]:
    """Four tasks on three hosts (h0: a b, h1: c, h2: d); cpu 1, 2, 3, 4; capacity 10, 5, 20;
    racks r0 = {h0, h1} (cpu capacity 8), r1 = {h2} (capacity not given: 1)."""
    return {
        "objectName": "task", "containerName": "host",
        "assignment": {"h0": ["a", "b"], "h1": ["c"], "h2": ["d"]},
        "objectDimensions": {"cpu": {"a": 1, "b": 2, "c": 3, "d": 4}},
        "containerDimensions": {"cpu": {"h0": 10, "h1": 5, "h2": 20}},
        "scopes": {"rack": {"h0": "r0", "h1": "r0", "h2": "r1"}},
        "scopeDimensions": {"rack": {"cpu": {"r0": 8}}},
        "goals": [{"spec": {ARM: {"scope": "host", "dimension": "cpu", **fields}}}],
    }


@pytest.mark.parametrize("fields, expected", [
    ({}, -(3 / 10 + 3 / 5 + 4 / 20) / 4),
    ({"filter": {"itemsBlacklist": ["h1"]}}, -(3 / 10 + 4 / 20) / 4),
    ({"filter": {"itemsWhitelist": ["h1"]}}, -(3 / 5) / 4),
    ({"dimension": "task_count"}, -(2 + 1 + 1) / 4),  # capacities not given: 1 each
    ({"scope": "rack"}, -(6 / 8 + 4 / 1) / 4),
])
def test_values(fields: dict, expected: float) -> None:
    assert value_at(small(**fields)).goals[0].value == approx(expected)


def test_moving_into_a_small_host_raises_its_share() -> None:
    """b (cpu 2) from h0 (capacity 10) to h1 (capacity 5): 2/10 leaves, 2/5 arrives."""
    before = value_at(small()).goals[0].value
    after = value_at(small(), {"b": "h1"}).goals[0].value
    assert after == approx(before - (2 / 5 - 2 / 10) / 4)


def make_spec(rng: random.Random, data: dict[str, Any], role: str) -> dict[str, Any]:
    """Scope, dimension (static, the count, or a dynamic one drawn here) and filter; items
    whose capacity is 0 are filtered out, as the wheel requires."""
    scope = rng.choice(scopes_of(data))
    dimension = rng.choice(["cpu", "mem", "task_count", "dyn"])
    if dimension == "dyn":
        if scope != "host":
            scope = "host"
        rng_values = {h: {o: rng.choice([1, 2, 5]) for o in objs if rng.random() < 0.5}
                      for h, objs in data["assignment"].items()}
        data["dynamicObjectDimensions"] = {"dyn": {"scope": "host", "default": 1,
                                                   "values": rng_values}}
        data["containerDimensions"]["dyn"] = {h: rng.choice([4, 10])
                                              for h in data["assignment"]}
    spec: dict[str, Any] = {"scope": scope, "dimension": dimension}
    items = items_of(data, scope)
    chosen = pick_filter(rng, items)
    if scope == "host" and dimension == "mem":
        zero = [h for h, cap in data["containerDimensions"]["mem"].items() if cap == 0]
        if zero:
            chosen = {"itemsBlacklist": zero} if len(zero) < len(items) else None
            if chosen is None:
                spec["dimension"] = "cpu"
    if chosen:
        spec["filter"] = chosen
    return spec


def scenario(seed: int, **kwargs: Any) -> dict[str, Any]:
    return spec_scenario(ARM, make_spec, seed, negative_weight=True, **kwargs)


@pytest.mark.parametrize("seed", range(40))
def test_random_scenarios_match_enumeration(seed: int) -> None:
    check_against_enumeration(scenario(seed), seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1000, 1060))
def test_larger_random_scenarios_match_enumeration(seed: int) -> None:
    check_against_enumeration(scenario(seed, max_objects=7), seed)


@pytest.mark.parametrize("seed", range(20))
def test_compiled_objective_matches_the_evaluator(seed: int) -> None:
    check_compiled_agrees(scenario(seed), seed)


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=PEER_REASON)
@pytest.mark.parametrize("seed", range(40))
def test_random_scenarios_agree_with_the_wheel(seed: int) -> None:
    data = scenario(seed)
    final = random_final(parse_scenario(data).problem, seed)
    problems = wheel_mismatches(data, final)
    assert not problems, f"seed {seed}:\n" + "\n".join(problems) + f"\n{data}"


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=PEER_REASON)
def test_reference_example_agrees_with_the_wheel() -> None:
    data = reference_example()
    problem = parse_scenario(data).problem
    assert not wheel_mismatches(data, random_final(problem, 0))


@pytest.mark.parametrize("fields, role, path", [
    ({"dimension": ""}, "goal", f"goals[0].spec.{ARM}.dimension"),
    ({"dimension": "disk"}, "goal", f"goals[0].spec.{ARM}.dimension"),
    ({"scope": "row"}, "goal", f"goals[0].spec.{ARM}.scope"),
    ({"filter": {"itemsWhitelist": ["h9"]}}, "goal",
     f"goals[0].spec.{ARM}.filter.itemsWhitelist[0]"),
    ({"colour": "red"}, "goal", f"goals[0].spec.{ARM}.colour"),
    ({}, "constraint", f"constraints[0].spec.{ARM}"),
])
def test_bad_input_names_the_field(fields: dict, role: str, path: str) -> None:
    data = small(**fields)
    if role == "constraint":
        data["constraints"] = [{"spec": data.pop("goals")[0]["spec"]}]
    with pytest.raises(InputError) as info:
        parse_scenario(data)
    assert info.value.path == path


def test_zero_capacity_item_is_refused_unless_filtered_out() -> None:
    data = small()
    data["containerDimensions"]["cpu"]["h1"] = 0
    with pytest.raises(InputError) as info:
        parse_scenario(data)
    assert info.value.path == f"goals[0].spec.{ARM}.dimension"
    data = small(filter={"itemsBlacklist": ["h1"]})
    data["containerDimensions"]["cpu"]["h1"] = 0
    assert value_at(data).goals[0].value == approx(-(3 / 10 + 4 / 20) / 4)


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), mutations=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_scenarios_solve_or_raise_input_error(seed: int, mutations: list) -> None:
    solve_or_reject(mutate(scenario(seed, max_objects=4), mutations))
