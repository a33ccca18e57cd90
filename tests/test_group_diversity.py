"""GroupDiversitySpec (docs/semantics.md#groupdiversity): values against the wheel's numbers
for every option, the reference example solved to its documented outcome (where the wheel's
HiGHS optimal solver is wrong), the optimum against enumeration on random tiny scenarios,
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
    pick_filter,
    random_final,
    scopes_of,
    spec_scenario,
    value_at,
    wheel_mismatches,
)
from test_bruteforce import check_against_enumeration
from test_capacity_with_group_presence import check_linear_bound_is
from test_fuzz import mutate, mutation, solve_or_reject

from cpsat_rebalancer import InputError, parse_scenario
from cpsat_rebalancer.cpsat.linear import lin_sum
from cpsat_rebalancer.result import OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve.accelerate.lp_bound import solve_lp
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.pipeline import solve_model

ARM = "groupDiversitySpec"
CATALOG = Path(__file__).parents[1] / "scenarios" / "catalog"
OPTIONS = SolverOptions(workers=1, seed=0)
COST, STATE = 100.0, 10000.0  # the default invalidCost / invalidState


def approx(x: float):
    return pytest.approx(x, rel=1e-12, abs=1e-15)


def reference_example() -> dict[str, Any]:
    return json.loads((CATALOG / "group_diversity.json").read_text())


def test_reference_example_reaches_the_documented_outcome() -> None:
    """Documented: host0 ends with tasks of 2 jobs, host1 of 3, value 0, and the tasks not
    needed stay unassigned (the fewest moves: 2 + 3). The wheel reports 5 at the start (2
    jobs short on host0, 3 on host1); its local search reaches 0, while its HiGHS optimal
    solver (``optimalSolverSpec`` with ``solverPackage`` 2) ends with endReason OPTIMAL,
    gap 0 and value 1 (host1 with tasks of 2 jobs), which this proves wrong."""
    data = reference_example()
    assert value_at(data).goals[0].value == approx(5.0)
    scenario = parse_scenario(data)
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == OPTIMAL
    assert result.final_evaluation.goals[0].value == approx(0.0)
    assert result.buckets[0].bound == approx(0.0)
    final = scenario.problem.assignment_dict(result.final)
    job = {t: g for g, tasks in data["partitions"]["job"].items() for t in tasks}
    assert len({job[t] for t in final["host0"]}) == 2 and len(final["host0"]) == 2
    assert len({job[t] for t in final["host1"]}) == 3 and len(final["host1"]) == 3
    assert len(final["unassigned"]) == 3


def test_highs_answer_is_not_optimal() -> None:
    """The assignment the wheel's HiGHS path returns as optimal is worth 1."""
    highs = {"task1": "unassigned", "task7": "unassigned", "task3": "host1",
             "task0": "host1", "task6": "host0", "task5": "host0", "task4": "host0",
             "task2": "host0"}
    assert value_at(reference_example(), highs).goals[0].value == approx(1.0)


def small(*, scopes: dict | None = None, **fields: Any) -> dict[str, Any]:
    """h0: a b c, h1: d, h2 empty; groups g = {a, b}, k = {c, d}; cpu a 1, b 0, c 2, d 0.
    By count: h0 holds g and k, h1 holds k, h2 none; by cpu: h0 g and k, h1 none."""
    data = {
        "objectName": "task", "containerName": "host",
        "assignment": {"h0": ["a", "b", "c"], "h1": ["d"], "h2": []},
        "objectDimensions": {"cpu": {"a": 1, "b": 0, "c": 2, "d": 0}},
        "partitions": {"p": {"g": ["a", "b"], "k": ["c", "d"]}},
        "goals": [{"spec": {ARM: {"scope": "host", "partition": "p",
                                  "dimension": "task_count", **fields}}}],
    }
    if scopes:
        data["scopes"] = scopes
    return data


def test_the_linear_bound_counts_each_group_on_at_most_its_objects_items() -> None:
    """Three hosts that each want two jobs, and jobs of 1, 1 and 4 tasks: the jobs can be
    present 1 + 1 + 3 times, one short of the 6 wanted, so the optimum is 1. GLOP's bound on
    the compiled goal says so: each presence literal is tied to its job's task count there
    (without that tie an LP reads a job as present wherever a sliver of it is, bound 0)."""
    data = {"objectName": "task", "containerName": "host",
            "assignment": {"h0": ["a", "b", "c", "d", "e", "f"], "h1": [], "h2": []},
            "partitions": {"job": {"j0": ["a"], "j1": ["b"], "j2": ["c", "d", "e", "f"]}},
            "goals": [{"spec": {ARM: {"scope": "host", "partition": "job",
                                      "dimension": "task_count",
                                      "limit": {"globalLimit": 2}}}}]}
    scenario = parse_scenario(data)
    builder, buckets = compile_model(scenario.problem, scenario.model)
    form = builder.integerize(lin_sum(buckets[0].terms))
    builder.cp.minimize(form.expr)
    lp = solve_lp(builder.cp, 10.0)
    assert lp is not None and lp.floor == form.factor
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == OPTIMAL and result.buckets[0].objective == 1.0


def occupancy_scenario(bound: str, limit: int, hosts: int) -> dict[str, Any]:
    """Six one-task jobs on h0 of ``hosts`` equal hosts, a diversity limit per host as a
    SOFT constraint (an empty host's shortfall costs 100 per job and 10000 once) beside the
    count of used hosts (weight 1) at the same position."""
    tasks = [f"t{k}" for k in range(6)]
    return {"objectName": "task", "containerName": "host",
            "assignment": {"h0": tasks, **{f"h{i}": [] for i in range(1, hosts)}},
            "objectDimensions": {"cpu": dict.fromkeys(tasks, 1)},
            "containerDimensions": {"cpu": {f"h{i}": 10 for i in range(hosts)}},
            "partitions": {"job": {f"j{k}": [t] for k, t in enumerate(tasks)}},
            "goals": [{"spec": {"minimizeContainersSpec": {"scope": "host",
                                                           "dimension": "cpu"}}}],
            "constraints": [{"spec": {ARM: {"scope": "host", "partition": "job",
                                            "dimension": "cpu", "bound": bound,
                                            "limit": {"globalLimit": limit}}},
                             "policy": "SOFT"}]}


@pytest.mark.parametrize(("bound", "limit", "hosts", "optimum"), [
    ("MIN", 1, 4, 4.0),  # every host used: an empty one costs far more than its use
    ("MAX", 2, 6, 3.0),  # 6 jobs, at most 2 a host: 3 hosts
    ("MAX", 3, 6, 2.0)])
def test_the_linear_bound_reads_an_empty_host_through_the_count_of_used_hosts(
        bound: str, limit: int, hosts: int, optimum: float) -> None:
    """An empty host breaks a MIN limit by all of it, and holds no group under a MAX one.
    Both forms read that through the host's occupancy, the literal the count of used hosts
    shares, so GLOP's bound is the optimum computed by hand (without it, an LP keeps every
    host used a sixth, or spreads the jobs over a fraction of a host)."""
    check_linear_bound_is(parse_scenario(occupancy_scenario(bound, limit, hosts)), optimum)


@pytest.mark.parametrize("seed", range(30))
def test_beside_a_count_of_used_hosts_random_scenarios_match_enumeration(seed: int) -> None:
    """The diversity forms tied to the occupancy the count of used hosts shares keep the
    optimum, in every role, bound and policy drawn."""
    data = scenario(seed)
    rng = random.Random(f"occupancy-{seed}")
    data["goals"].append({"spec": {"minimizeContainersSpec": {
        "scope": "host", "dimension": rng.choice(["task_count", "cpu"])}},
        "tuplePos": rng.choice([0, 1]), "weight": rng.choice([1, 3])})
    check_against_enumeration(data, seed)


# values the wheel reports for these fields on ``small`` (MAX: its optimal solver's value,
# ``optimalSolverSpec`` with ``skipMipSolveForTesting``; its local search adds a continuous
# term, e.g. 2.375 instead of 1 for MAX with limit 1)
@pytest.mark.parametrize("fields, expected", [
    ({"limit": {"globalLimit": 1}}, 1.0),  # h2 holds no group
    ({"limit": {"globalLimit": 2}}, 3.0),  # h1 one short, h2 two
    ({"limit": {"type": "ABSOLUTE", "globalLimit": 2}}, 3.0),  # the type is not read
    ({}, 1.0),  # the default limit: 1
    ({"limit": {"globalLimit": 1.5}}, 2.0),  # 0.5 + 1.5
    ({"limit": {"globalLimit": 2, "scopeItemLimits": {"h2": 0}}}, 1.0),
    ({"limit": {"globalLimit": 2}, "filter": {"itemsBlacklist": ["h2"]}}, 1.0),
    ({"limit": {"globalLimit": -1}}, 0.0),
    ({"dimension": "cpu", "limit": {"globalLimit": 2}}, 4.0),  # d and b weigh 0
    ({"bound": "MAX", "limit": {"globalLimit": 1}}, 1.0),  # h0 one over
    ({"bound": 2, "limit": {"globalLimit": 0}}, 3.0),  # the integer enum value
    ({"bound": "MAX", "limit": {"globalLimit": -1}}, 6.0),
    ({"bound": "MAX", "limit": {"isDefaultLimitUnbounded": True}}, 0.0),
])
def test_values(fields: dict, expected: float) -> None:
    assert value_at(small(**fields)).goals[0].value == approx(expected)


def test_custom_scope() -> None:
    """Rack r0 = {h0, h1} holds g and k (h2 is outside the scope): MAX 1 is one over."""
    data = small(bound="MAX", limit={"globalLimit": 1}, scope="rack",
                 scopes={"rack": {"h0": "r0", "h1": "r0"}})
    assert value_at(data).goals[0].value == approx(1.0)


def test_dynamic_dimension_counts_a_group_where_it_weighs() -> None:
    """d weighs 0 on h1 and 1 elsewhere (the default): k is on h0 only, by this size."""
    data = small(dimension="dyn", limit={"globalLimit": 2})
    data["dynamicObjectDimensions"] = {"dyn": {"scope": "host", "default": 1,
                                               "values": {"h1": {"d": 0}}}}
    assert value_at(data).goals[0].value == approx(0 + 2 + 2)
    assert value_at(data, {"d": "h2"}).goals[0].value == approx(0 + 2 + 1)


def test_moves_change_the_count() -> None:
    """d joins h2: h1 loses k (2 short), h2 gains k (1 short)."""
    assert value_at(small(limit={"globalLimit": 2}), {"d": "h2"}).goals[0].value == approx(3.0)
    assert value_at(small(limit={"globalLimit": 2}), {"a": "h2"}).goals[0].value == approx(2.0)


def test_constraint_has_one_expression_per_item() -> None:
    """SOFT: the broken items h1 (1 short) and h2 (2 short) each cost invalidState once."""
    data = small(limit={"globalLimit": 2})
    data["constraints"] = [{"spec": data.pop("goals")[0]["spec"], "policy": "SOFT"}]
    constraint = value_at(data).constraints[0]
    assert constraint.violation == approx(3.0)
    assert constraint.soft == approx(COST * 3 + STATE * 2)


def make_spec(rng: random.Random, data: dict[str, Any], role: str) -> dict[str, Any]:
    scope = rng.choice(scopes_of(data))
    bound = rng.choice(["MIN", "MAX"])
    limit: dict[str, Any] = {"globalLimit": rng.choice([0, 1, 1, 2, 1.5, -1])}
    if rng.random() < 0.3:
        limit["type"] = rng.choice(["ABSOLUTE", "RELATIVE"])
    if rng.random() < 0.3:
        limit["scopeItemLimits"] = {rng.choice(items_of(data, scope)): rng.choice([0, 1, 3])}
    if bound == "MAX" and rng.random() < 0.15:
        limit["isDefaultLimitUnbounded"] = True
    spec: dict[str, Any] = {"scope": scope, "partition": PARTITION,
                            "dimension": rng.choice(["task_count", "task_count", "cpu", "mem",
                                                     "dyn"]),
                            "bound": bound, "limit": limit}
    if spec["dimension"] == "dyn":  # a size that depends on the host (0 on some)
        data["dynamicObjectDimensions"] = {"dyn": {"scope": "host", "default": 1, "values": {
            h: {o: rng.choice([0, 2]) for o in objs if rng.random() < 0.5}
            for h, objs in data["assignment"].items()}}}
    chosen = pick_filter(rng, items_of(data, scope))
    if chosen:
        spec["filter"] = chosen
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


def local_search_term(data: dict[str, Any]) -> bool:
    """Whether a MAX GroupDiversity constraint's soft term (where the wheel's local search
    adds its continuous term) is in the tuple-position sums."""
    return any(ARM in c["spec"] and c["spec"][ARM].get("bound") in ("MAX", 2)
               for c in data["constraints"])


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=PEER_REASON)
@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_random_scenarios_agree_with_the_wheel(seed: int, overlap: bool) -> None:
    data = scenario(seed, overlap=overlap)
    final = random_final(parse_scenario(data).problem, seed)
    problems = wheel_mismatches(data, final, positions=not local_search_term(data))
    assert not problems, f"seed {seed}:\n" + "\n".join(problems) + f"\n{data}"


@pytest.mark.parametrize("fields, path", [
    ({"partition": "nope"}, "partition"),
    ({"partition": ""}, "partition"),
    ({"dimension": ""}, "dimension"),
    ({"dimension": "disk"}, "dimension"),
    ({"limit": {"groupLimits": {"g": 2}}}, "limit.groupLimits"),
    ({"limit": {"scopeItemToGroupLimits": {"h0": {"g": 2}}}}, "limit.scopeItemToGroupLimits"),
    ({"limit": {"scopeItemLimits": {"h9": 2}}}, "limit.scopeItemLimits.h9"),
    ({"limit": {"isDefaultLimitUnbounded": True}}, "limit"),  # MIN: an infinite value
    ({"bound": "SOMETIMES"}, "bound"),
    ({"filter": {"type": "GROUP"}}, "filter.type"),
    ({"colour": "red"}, "colour"),
])
def test_bad_input_names_the_field(fields: dict, path: str) -> None:
    with pytest.raises(InputError) as info:
        parse_scenario(small(**fields))
    assert info.value.path == f"goals[0].spec.{ARM}.{path}"


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), mutations=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_scenarios_solve_or_raise_input_error(seed: int, mutations: list) -> None:
    solve_or_reject(mutate(scenario(seed, max_objects=4), mutations))
