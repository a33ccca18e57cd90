"""GroupMoveLimitSpec (docs/semantics.md#groupmovelimit): values against the wheel's numbers
for every option, the reference examples solved to their documented outcomes, the optimum
against enumeration on random tiny scenarios under every policy, compiled objective against
the evaluator, parity with the wheel, and bad input."""

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
    overlapping,
    random_final,
    spec_scenario,
    value_at,
    wheel_mismatches,
)
from test_bruteforce import check_against_enumeration
from test_fuzz import mutate, mutation, solve_or_reject

from cpsat_rebalancer import InputError, parse_scenario
from cpsat_rebalancer.result import OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.pipeline import solve_model

ARM = "groupMoveLimitSpec"
CATALOG = Path(__file__).parents[1] / "scenarios" / "catalog"
OPTIONS = SolverOptions(workers=1, seed=0)


def approx(x: float):
    return pytest.approx(x, rel=1e-12, abs=1e-15)


def solved(name: str) -> tuple[dict[str, Any], dict[str, str]]:
    """A bundled example, solved: its data and where each task ends."""
    data = json.loads((CATALOG / f"{name}.json").read_text())
    scenario = parse_scenario(data)
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == OPTIMAL
    assert result.final_evaluation.feasible
    problem = scenario.problem
    return data, {problem.objects[o]: problem.containers[c] for o, c in enumerate(result.final)}


def per_host(where: dict[str, str], data: dict[str, Any]) -> dict[tuple[str, str], int]:
    group = {t: g for g, tasks in data["partitions"]["group"].items() for t in tasks}
    counts: dict[tuple[str, str], int] = {}
    for task, host in where.items():
        counts[host, group[task]] = counts.get((host, group[task]), 0) + 1
    return counts


def test_reference_example_one_move_per_group() -> None:
    """Documented (and Rebalancer's test): one task of each group moves to its preferred
    host: host0 and host1 hold one of group0 each, host2 one of group1."""
    data, where = solved("group_move_limit")
    counts = per_host(where, data)
    assert counts[("host0", "group0")] == 1 and counts[("host1", "group0")] == 1
    assert counts[("host2", "group1")] == 1


def test_reference_example_per_group_limits() -> None:
    """Example 2: group0 may move twice, group1 never: only group0 moves, to host1."""
    data, where = solved("group_move_limit_per_group")
    counts = per_host(where, data)
    assert counts.get(("host0", "group0"), 0) == 0 and counts[("host1", "group0")] == 2
    assert where["task2"] == "host0" and where["task3"] == "host1"


def test_reference_example_filters() -> None:
    """Example 3: limit 0, but moves into host1 and out of host1 do not count: group0 moves
    to host1, task3 from host1 to host2, task2 stays on host0."""
    _, where = solved("group_move_limit_filters")
    assert where == {"task0": "host1", "task1": "host1", "task2": "host0", "task3": "host2"}


def small(**fields: Any) -> dict[str, Any]:
    """The reference setup (host0: task0 task1 task2, host1: task3; group0 = task0 task1,
    group1 = task2 task3) with cpu 1, 2, 3, 4, the spec as a SOFT constraint."""
    return {
        "objectName": "task", "containerName": "host",
        "assignment": {"host0": ["task0", "task1", "task2"], "host1": ["task3"], "host2": []},
        "objectDimensions": {"cpu": {"task0": 1, "task1": 2, "task2": 3, "task3": 4}},
        "partitions": {"group": {"group0": ["task0", "task1"], "group1": ["task2", "task3"]}},
        "constraints": [{"spec": {ARM: {"partitionName": "group", **fields}},
                         "policy": "SOFT"}],
    }


# group0 moves both tasks (host0 -> host1), group1 moves task3 (host1 -> host2)
MOVES = {"task0": "host1", "task1": "host1", "task3": "host2"}


# the wheel's violation at MOVES for these fields (its soft term is 100·e + 10000·step(e):
# one expression, the largest group excess)
CASES = [
    ({"limit": {"type": "ABSOLUTE", "globalLimit": 1}}, 1.0),  # group0: 2 - 1
    ({}, 1.0),  # the default: ABSOLUTE 1
    ({"limit": {"globalLimit": 1}}, 1.0),  # RELATIVE: the type is not read
    ({"limit": {"globalLimit": 0.5}}, 1.5),
    ({"limit": {"globalLimit": 1}, "dimension": "cpu"}, 3.0),  # group1: 4 - 1
    ({"limit": {"globalLimit": 1, "groupLimits": {"group0": 0.5}}}, 1.5),
    ({"limit": {"globalLimit": 0},
      "sourceScopeItemsAffectingLimitFilter": {"itemsWhitelist": ["host0"]}}, 2.0),
    ({"limit": {"globalLimit": 0},
      "destinationScopeItemsAffectingLimitFilter": {"itemsBlacklist": ["host1"]}}, 1.0),
    ({"limit": {"isDefaultLimitUnbounded": True, "groupLimits": {"group1": 0.5}}}, 0.5),
]


@pytest.mark.parametrize("fields, expected", CASES)
def test_values(fields: dict, expected: float) -> None:
    constraint = value_at(small(**fields), MOVES).constraints[0]
    assert constraint.violation == approx(expected)
    assert constraint.soft == approx(100 * expected + 10000)


def test_nothing_moved_is_never_broken() -> None:
    assert value_at(small(limit={"globalLimit": 0})).constraints[0].violation == 0.0


def test_moving_back_and_forth_within_a_group() -> None:
    """task0 away and back home counts nothing; a move out of host0 and one into host0."""
    data = small(limit={"globalLimit": 0})
    assert value_at(data, {"task0": "host0"}).constraints[0].violation == 0.0
    assert value_at(data, {"task3": "host0"}).constraints[0].violation == approx(1.0)


def test_dynamic_dimension_weighs_the_larger_of_both_ends() -> None:
    """task3 (group1) weighs 2 on host1 and 5 on host2: its move weighs 5."""
    data = small(limit={"globalLimit": 1}, dimension="dyn")
    data["dynamicObjectDimensions"] = {"dyn": {"scope": "host", "default": 1, "values": {
        "host1": {"task3": 2}, "host2": {"task3": 5}}}}
    assert value_at(data, {"task3": "host2"}).constraints[0].violation == approx(4.0)
    assert value_at(data, {"task3": "host0"}).constraints[0].violation == approx(1.0)


def test_unmovable_groups_are_fixed_unless_a_filter_applies() -> None:
    """As Rebalancer does: a group with limit 0 is fixed under DEFAULT and HARD (SOFT prices
    its moves); not when a filter leaves some moves uncounted."""
    data = small(limit={"groupLimits": {"group1": 0}})
    data["constraints"][0]["policy"] = "HARD"
    model = parse_scenario(data).model
    assert sorted(model.fixed_objects) == [2, 3]
    data["constraints"][0]["spec"][ARM]["sourceScopeItemsAffectingLimitFilter"] = {
        "itemsBlacklist": ["host2"]}
    assert not parse_scenario(data).model.fixed_objects


def test_identical_objects_of_a_group_share_a_class() -> None:
    """40 identical tasks of one job spread over 4 hosts, at most 3 moves: one class (the
    moves counted through how many stay per host), and the optimum moves 3."""
    hosts = [f"h{i}" for i in range(5)]
    tasks = [f"t{i}" for i in range(40)]
    data = {
        "objectName": "task", "containerName": "host",
        "assignment": {**{h: tasks[10 * i:10 * i + 10] for i, h in enumerate(hosts[:4])},
                       "h4": []},
        "partitions": {"job": {"j": tasks}},
        "goals": [{"spec": {"maximizeAllocationSpec": {
            "scope": "host", "dimension": "task_count",
            "filter": {"itemsWhitelist": ["h4"]}}}}],
        "constraints": [{"spec": {ARM: {"partitionName": "job", "limit": {
            "type": "ABSOLUTE", "globalLimit": 3}}}, "policy": "HARD"}],
    }
    scenario = parse_scenario(data)
    builder, _ = compile_model(scenario.problem, scenario.model)
    assert len(builder.classes.members) == 1
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == OPTIMAL
    assert int((result.final != scenario.problem.initial).sum()) == 3


def make_spec(rng: random.Random, data: dict[str, Any], role: str) -> dict[str, Any]:
    hosts = list(data["assignment"])
    spec: dict[str, Any] = {"partitionName": PARTITION}
    limit: dict[str, Any] = {"globalLimit": rng.choice([0, 1, 1, 2, 0.5])}
    if rng.random() < 0.4:
        limit["type"] = rng.choice(["ABSOLUTE", "RELATIVE"])
    groups = list(data["partitions"][PARTITION])
    if overlapping(data):  # a limit per group, so that a shared object's moves tell
        limit["groupLimits"] = {g: rng.choice([0, 0.5, 1, 1.5]) for g in groups}
    elif rng.random() < 0.3:
        limit["groupLimits"] = {rng.choice(groups): rng.choice([0, 1, 3])}
    if rng.random() < 0.15:
        limit["isDefaultLimitUnbounded"] = True
    if rng.random() < 0.85:
        spec["limit"] = limit
    kind = rng.choice(["count", "count", "cpu", "dyn"])
    if kind == "cpu":
        spec["dimension"] = "cpu"
    elif kind == "dyn":
        data["dynamicObjectDimensions"] = {"dyn": {"scope": "host", "default": 1, "values": {
            h: {o: rng.choice([0.5, 2, 3]) for o in objs if rng.random() < 0.5}
            for h, objs in data["assignment"].items()}}}
        spec["dimension"] = "dyn"
    for key in ("sourceScopeItemsAffectingLimitFilter",
                "destinationScopeItemsAffectingLimitFilter"):
        if rng.random() < 0.3:
            chosen = rng.sample(hosts, rng.randint(1, len(hosts) - 1))
            spec[key] = ({"itemsWhitelist": chosen} if rng.random() < 0.5
                         else {"itemsBlacklist": chosen})
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


def fixed_by_the_wheel(data: dict[str, Any]) -> frozenset[int]:
    """Objects the wheel's local search never moves, whatever the policy (so a final
    assignment cannot be forced on it): those of unmovable groups, by the spec's own rule."""
    problem = parse_scenario(data).problem
    fixed: set[int] = set()
    for entry in data["constraints"]:
        if ARM in entry["spec"]:
            soft = {**entry, "policy": "HARD"}
            model = parse_scenario({**data, "goals": [], "constraints": [soft]}).model
            fixed |= model.fixed_objects
    return frozenset(fixed & set(range(problem.num_objects)))


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=PEER_REASON)
@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_random_scenarios_agree_with_the_wheel(seed: int, overlap: bool) -> None:
    data = scenario(seed, overlap=overlap)
    final = random_final(parse_scenario(data).problem, seed, keep=fixed_by_the_wheel(data))
    problems = wheel_mismatches(data, final)
    assert not problems, f"seed {seed}:\n" + "\n".join(problems) + f"\n{data}"


@pytest.mark.parametrize("fields, path", [
    ({"partitionName": "nope"}, "partitionName"),
    ({"partitionName": ""}, "partitionName"),
    ({"dimension": "disk"}, "dimension"),
    ({"limit": {"globalLimit": -1}}, "limit.globalLimit"),
    ({"limit": {"groupLimits": {"group0": -2}}}, "limit.groupLimits.group0"),
    ({"limit": {"groupLimits": {"zz": 1}}}, "limit.groupLimits.zz"),
    ({"limit": {"scopeItemLimits": {"host0": 1}}}, "limit.scopeItemLimits"),
    ({"sourceScopeItemsAffectingLimitFilter": {"itemsWhitelist": ["h9"]}},
     "sourceScopeItemsAffectingLimitFilter.itemsWhitelist[0]"),
    ({"destinationScopeItemsAffectingLimitFilter": {"type": "GROUP"}},
     "destinationScopeItemsAffectingLimitFilter.type"),
    ({"scope": "host"}, "scope"),
    ({"colour": "red"}, "colour"),
])
def test_bad_input_names_the_field(fields: dict, path: str) -> None:
    with pytest.raises(InputError) as info:
        parse_scenario(small(**fields))
    assert info.value.path == f"constraints[0].spec.{ARM}.{path}"


def test_not_a_goal() -> None:
    data = small()
    data["goals"] = [{"spec": data.pop("constraints")[0]["spec"]}]
    with pytest.raises(InputError) as info:
        parse_scenario(data)
    assert info.value.path == f"goals[0].spec.{ARM}"


def test_dynamic_dimension_on_another_scope_is_refused() -> None:
    data = small(dimension="dyn")
    data["scopes"] = {"rack": {"host0": "r0", "host1": "r0", "host2": "r1"}}
    data["dynamicObjectDimensions"] = {"dyn": {"scope": "rack", "values": {}}}
    with pytest.raises(InputError) as info:
        parse_scenario(data)
    assert info.value.path == f"constraints[0].spec.{ARM}.dimension"


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=PEER_REASON)
@pytest.mark.parametrize("fields", [fields for fields, _ in CASES])
def test_every_option_agrees_with_the_wheel_where_groups_move(fields: dict) -> None:
    data = small(**fields)
    problem = parse_scenario(data).problem
    final = problem.initial.copy()
    for obj, target in MOVES.items():
        final[problem.object_index[obj]] = problem.container_index[target]
    assert not wheel_mismatches(data, final)


@pytest.mark.parametrize("policy", ["DEFAULT", "HARD", "SOFT"])
def test_identical_objects_from_several_hosts_match_enumeration(policy: str) -> None:
    """Six identical tasks of one job on three hosts (one class, its moves counted through
    how many stay on each host), pulled towards h2 by a MaximizeAllocation goal."""
    data = {
        "objectName": "task", "containerName": "host",
        "assignment": {"h0": ["t0", "t1", "t2"], "h1": ["t3", "t4"], "h2": ["t5"]},
        "partitions": {"job": {"j": ["t0", "t1", "t2", "t3", "t4", "t5"]}},
        "goals": [{"spec": {"maximizeAllocationSpec": {
            "scope": "host", "dimension": "task_count", "filter": {"itemsWhitelist": ["h2"]}}}}],
        "constraints": [{"spec": {ARM: {"partitionName": "job", "limit": {"globalLimit": 2},
                                        "sourceScopeItemsAffectingLimitFilter": {
                                            "itemsBlacklist": ["h1"]}}},
                         "policy": policy, "invalidCost": 0.01, "invalidState": 0.02}],
    }
    check_against_enumeration(data, policy)


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), mutations=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_scenarios_solve_or_raise_input_error(seed: int, mutations: list) -> None:
    solve_or_reject(mutate(scenario(seed, max_objects=4), mutations))
