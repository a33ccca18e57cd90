"""CapacityWithGroupPresenceSpec (docs/semantics.md#capacitywithgrouppresence): presence
weights, rounding, multipliers, aggregation scope and partition, both intents and bounds,
filters; as goal and constraint under every policy."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from spec_checks import check_compiled_agrees, random_final, wheel_mismatches
from test_bruteforce import check_against_enumeration
from test_parity import PEER, close

from cpsat_rebalancer import evaluate, parse_scenario
from cpsat_rebalancer.cpsat.linear import lin_sum
from cpsat_rebalancer.errors import InputError
from cpsat_rebalancer.peer import evaluate_with_wheel
from cpsat_rebalancer.result import OPTIMAL
from cpsat_rebalancer.scenario import Scenario, SolverOptions
from cpsat_rebalancer.solve.accelerate.lp_bound import solve_lp
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.pipeline import solve_model

CATALOG = Path(__file__).parents[1] / "scenarios" / "catalog"
OPTIONS = SolverOptions(workers=1, seed=0)
ARM = "capacityWithGroupPresenceSpec"


def random_presence_scenario(seed: int, max_objects: int = 5, overlap: bool = False) -> dict:
    """A tiny scenario with one CapacityWithGroupPresenceSpec, every option drawn (nested
    enums as the wheel's integers, which both sides accept), as a goal or a constraint under
    a random policy, and sometimes a movement goal after it. ``overlap``: some objects are in
    two jobs. The aggregation partition "sub" splits the objects of each set of jobs in two,
    so that each of its groups lies inside every job of its objects (the wheel's rule)."""
    rng = random.Random(seed)
    n, m = rng.randint(2, max_objects), rng.randint(2, 3)
    objects, hosts = [f"t{o}" for o in range(n)], [f"h{c}" for c in range(m)]
    assignment = {h: [] for h in hosts}
    for o in objects:
        assignment[rng.choice(hosts)].append(o)
    racks = {h: f"r{k % 2}" for k, h in enumerate(hosts)}
    jobs: dict[str, list[str]] = {}
    for o in objects:
        if rng.random() < 0.9:
            jobs.setdefault(f"j{rng.randint(0, 2)}", []).append(o)
    jobs = jobs or {"j0": objects[:1]}
    if overlap:
        jobs.setdefault("j3", [])
        for k, o in enumerate(objects):
            others = [j for j in jobs if o not in jobs[j]]
            if k == 0 or rng.random() < 0.35:
                jobs[rng.choice(others)].append(o)
    same_jobs: dict[str, list[str]] = {}
    for o in objects:
        key = "+".join(j for j, members in jobs.items() if o in members)
        if key:
            same_jobs.setdefault(key, []).append(o)
    fine = {f"{key}_{k}": [o for i, o in enumerate(members) if i % 2 == k]
            for key, members in same_jobs.items() for k in range(2 if len(members) > 1 else 1)}
    intent = rng.choice([1, 2])
    main_scope = rng.choice(["host", "rack"])
    items = hosts if main_scope == "host" else sorted(set(racks.values()))
    spec: dict = {"scope": main_scope, "partition": "job", "dimension": "load",
                  "bound": rng.choice([1, 1, 2]), "intent": intent}
    if main_scope == "rack" and rng.random() < 0.6:
        spec["aggregationScope"] = "host"
    agg_items = hosts if spec.get("aggregationScope") == "host" or main_scope == "host" \
        else items
    finer = intent == 2 and rng.random() < 0.5
    groups = list(fine) if finer else list(jobs)
    if finer:
        spec["aggregationPartition"] = "sub"
    presence: dict = {"type": 1, "globalLimit": rng.choice([0, 0.5, 1, 1.5, 3])}
    if rng.random() < 0.4:
        presence["groupLimits"] = {g: rng.choice([0, 1, 2.5]) for g in rng.sample(groups, 1)}
    if rng.random() < 0.3:
        presence["scopeItemToGroupLimits"] = {rng.choice(agg_items): {rng.choice(groups): 2}}
    if rng.random() < 0.8:
        spec["groupToPresenceWeight"] = presence
    kind = rng.choice([1, 2])
    limit: dict = {"type": kind, "globalLimit": rng.choice([0.5, 1, 2, 3])
                   if kind == 1 else rng.choice([0.25, 0.5, 1])}
    if rng.random() < 0.3:
        limit["scopeItemLimits"] = {rng.choice(items): rng.choice([0, 1, 4])}
    if intent == 2 and rng.random() < 0.3:
        limit["groupLimits"] = {rng.choice(list(jobs)): rng.choice([0.5, 2])}
    if spec["bound"] == 1 and rng.random() < 0.15:
        limit = {"type": kind, "isDefaultLimitUnbounded": True,
                 "scopeItemLimits": {items[0]: 1}}
    spec["scopeItemToLimit"] = limit
    if rng.random() < 0.3:
        spec["roundUpGroupUtilOnScopeItem"] = False
    if rng.random() < 0.4:
        spec["groupUtilMultipliers"] = [
            {"value": {"type": 1, "globalLimit": rng.choice([0, 0.5, 1.2, 2, 4])},
             "target": rng.choice([1, 2, 3])} for _ in range(rng.randint(1, 2))]
    elif rng.random() < 0.2:
        spec["multiplierList"] = [{"type": 1, "globalLimit": rng.choice([1.5, 3])}]
    if rng.random() < 0.25:
        spec["scopeItemFilter"] = {"type": 1, "itemsWhitelist": [rng.choice(items)]}
    if rng.random() < 0.25:
        spec["groupFilter"] = {"type": 2, "itemsBlacklist": [rng.choice(list(jobs))]}
    if rng.random() < 0.1:
        spec["continuousPenaltyType"] = 1
        spec["groupToExtraAdditivePenalty"] = {"type": 1, "globalLimit": 0.5}
    data = {
        "objectName": "task", "containerName": "host", "assignment": assignment,
        "objectDimensions": {"load": {o: rng.choice([0, 0.2, 0.5, 1, 1.5, 2]) for o in objects}},
        "containerDimensions": {"load": {h: rng.choice([1, 2, 4]) for h in hosts}},
        "scopes": {"rack": racks},
        "scopeDimensions": {"rack": {"load": {r: rng.choice([2, 4])
                                              for r in sorted(set(racks.values()))}}},
        "partitions": {"job": jobs, "sub": fine},
        "goals": [], "constraints": [],
    }
    if rng.random() < 0.5:
        data["goals"].append({"spec": {ARM: spec}, "weight": rng.choice([1, 2])})
    else:
        data["constraints"].append({"spec": {ARM: spec},
                                    "policy": rng.choice(["DEFAULT", "HARD", "SOFT"]),
                                    "invalidCost": rng.choice([1, 100]),
                                    "invalidState": rng.choice([0, 10])})
    if rng.random() < 0.5 or not data["goals"]:
        data["goals"].append({"spec": {"minimizeMovementSpec": {}}, "tuplePos": 1})
    return data


def doc_example() -> dict:
    return json.loads((CATALOG / "capacity_with_group_presence.json").read_text())


# ---------------------------------------------------------------- semantics


def test_the_reference_example_puts_the_two_jobs_on_separate_hosts() -> None:
    """Both jobs start on host0: utilization 2 (one per present job), limit 1; the optimum
    gives job1 a host of its own and keeps job0 together."""
    scenario = parse_scenario(doc_example())
    start = evaluate(scenario.problem, scenario.model, scenario.problem.initial)
    assert start.constraints[0].violation == 1.0
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == OPTIMAL
    final = result.to_dict()["assignment"]
    assert final["t0"] == final["t1"] == final["t2"] != final["t3"]
    assert result.final_evaluation.constraints[0].violation == 0
    assert len(result.moves) == 1  # only job1's task moves


def test_options_equal_the_wheels_numbers() -> None:
    """The reference example's start (four tasks of load 0.2 on host0 of capacity 2; job0
    three tasks, job1 one) scored as goals; the wheel's optimal-solver values (HiGHS,
    skipMipSolveForTesting): default 1, no rounding 1, MIN limit 3 → 7 (1 + 3 + 3), per
    group limit 0.5 → 1, multipliers COMMON 1.2 and UTILIZATION 4 → 9 (each job
    max(ceil(ceil(1)·1.2), ceil(ceil(ceil(0.6)·4)·1.2)) = 5), RELATIVE 0.5 → 1, a zero
    presence multiplier → 1, an unbounded limit → 0."""
    data = doc_example()
    base = data["constraints"][0]["spec"][ARM]
    variants = {
        "default": {}, "no rounding": {"roundUpGroupUtilOnScopeItem": False},
        "min": {"bound": "MIN", "scopeItemToLimit": {"type": "ABSOLUTE", "globalLimit": 3}},
        "per group": {"intent": "PER_GROUP_AND_SCOPE_ITEM",
                      "scopeItemToLimit": {"type": "ABSOLUTE", "globalLimit": 0.5}},
        "multipliers": {"groupUtilMultipliers": [
            {"value": {"type": "ABSOLUTE", "globalLimit": 1.2}, "target": "COMMON"},
            {"value": {"type": "ABSOLUTE", "globalLimit": 4.0}, "target": "UTILIZATION"}]},
        "relative": {"scopeItemToLimit": {"type": "RELATIVE", "globalLimit": 0.5}},
        "zero": {"groupUtilMultipliers": [{"value": {"globalLimit": 0},
                                           "target": "PRESENCE_WEIGHT"}]},
        "unbounded": {"scopeItemToLimit": {"isDefaultLimitUnbounded": True}},
    }
    data["containerDimensions"] = {"load": {"host0": 2, "host1": 2, "host2": 2}}
    data["constraints"] = []
    data["goals"] = [{"spec": {ARM: {**base, **v, "name": k}}} for k, v in variants.items()]
    scenario = parse_scenario(data)
    values = [g.value for g in evaluate(scenario.problem, scenario.model,
                                        scenario.problem.initial).goals]
    assert values == [1, 1, 7, 1, 9, 1, 1, 0]


# ---------------------------------------------------------------- exactness


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("seed", range(50))
def test_optimum_matches_enumeration(seed: int, overlap: bool) -> None:
    check_against_enumeration(random_presence_scenario(seed, overlap=overlap), seed)


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_compiled_objective_matches_the_evaluator(seed: int, overlap: bool) -> None:
    check_compiled_agrees(random_presence_scenario(seed, max_objects=7, overlap=overlap), seed)


def spread_scenario(sizes: list[int], capacities: list[int]) -> dict:
    """Jobs of ``sizes`` objects, all on the first host, under a MIN presence goal whose
    presence weight meets every host's limit: a job pays each host's limit where it is
    absent, so it spreads over the hosts of the largest limits, one object on each."""
    hosts = [f"h{c}" for c in range(len(capacities))]
    jobs = {f"j{j}": [f"j{j}t{k}" for k in range(n)] for j, n in enumerate(sizes)}
    objects = [o for members in jobs.values() for o in members]
    spec = {"scope": "host", "partition": "job", "dimension": "load", "bound": "MIN",
            "intent": "PER_GROUP_AND_SCOPE_ITEM",
            "groupToPresenceWeight": {"type": "ABSOLUTE", "globalLimit": max(capacities)},
            "scopeItemToLimit": {"type": "RELATIVE", "globalLimit": 0.5}}
    return {"objectName": "task", "containerName": "host",
            "assignment": {h: (objects if c == 0 else []) for c, h in enumerate(hosts)},
            "objectDimensions": {"load": {o: 1 + k % 3 for k, o in enumerate(objects)}},
            "containerDimensions": {"load": dict(zip(hosts, capacities))},
            "partitions": {"job": jobs}, "goals": [{"spec": {ARM: spec}}], "constraints": []}


def check_linear_bound_is(scenario: Scenario, optimum: float) -> None:
    """GLOP's bound on position 0's compiled form (as a bucket reads it where no load
    relaxation applies) is ``optimum``, and the solve proves it."""
    builder, buckets = compile_model(scenario.problem, scenario.model)
    form = builder.integerize(lin_sum(buckets[0].terms))
    builder.cp.minimize(form.expr)
    lp = solve_lp(builder.cp, 10.0)
    assert lp is not None and lp.floor == optimum * form.factor
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == OPTIMAL and close(result.buckets[0].objective, optimum)


@pytest.mark.parametrize(("sizes", "capacities"), [([2, 3], [4, 1, 3, 2]),
                                                   ([1, 2, 4], [2, 6, 1, 5, 3])])
def test_the_linear_bound_of_a_presence_minimum_is_its_optimum(sizes: list[int],
                                                               capacities: list[int]) -> None:
    """GLOP's bound on the compiled goal (as a bucket reads it where no load relaxation
    applies) is the optimum computed by hand: a group's presence is tied to its objects'
    count, not to a sliver of its utilization, which an LP reads as present everywhere."""
    scenario = parse_scenario(spread_scenario(sizes, capacities))
    limits = sorted((0.5 * c for c in capacities), reverse=True)
    optimum = sum(sum(limits[n:]) for n in sizes)
    check_linear_bound_is(scenario, optimum)


def sized_jobs_scenario(jobs: list[list[float]], capacities: list[float],
                        weight: float) -> dict:
    """Jobs of objects of the sizes given, all on the first host, under a MIN presence goal
    whose presence weight lies below every object and every host's limit, and each job's
    total below every limit: a job counts its objects' sizes wherever they are, so it pays
    every host's limit less its whole size."""
    hosts = [f"h{c}" for c in range(len(capacities))]
    names = {f"j{j}": [f"j{j}t{k}" for k in range(len(sizes))] for j, sizes in enumerate(jobs)}
    sizes = {o: size for j, members in enumerate(names.values())
             for o, size in zip(members, jobs[j])}
    spec = {"scope": "host", "partition": "job", "dimension": "load", "bound": "MIN",
            "intent": "PER_GROUP_AND_SCOPE_ITEM", "roundUpGroupUtilOnScopeItem": False,
            "groupToPresenceWeight": {"type": "ABSOLUTE", "globalLimit": weight},
            "scopeItemToLimit": {"type": "RELATIVE", "globalLimit": 0.5}}
    return {"objectName": "task", "containerName": "host",
            "assignment": {h: (list(sizes) if c == 0 else []) for c, h in enumerate(hosts)},
            "objectDimensions": {"load": sizes},
            "containerDimensions": {"load": dict(zip(hosts, capacities))},
            "partitions": {"job": names}, "goals": [{"spec": {ARM: spec}}], "constraints": []}


@pytest.mark.parametrize(("jobs", "capacities"), [([[3], [5]], [20, 16, 12]),
                                                  ([[4], [3], [5]], [12, 14, 20, 18]),
                                                  ([[3, 5], [4, 4]], [20, 18, 24]),
                                                  ([[3, 4], [5], [3, 3]], [16, 22, 18, 20])])
def test_the_linear_bound_reads_a_rewarded_contribution_at_most_its_hull(
        jobs: list[list[int]], capacities: list[int]) -> None:
    """GLOP's bound on the compiled goal is the optimum computed by hand where the
    utilization side decides (presence weight 2, below every size and limit): an LP reads
    a rewarded max(weight·present, utilization) only from below, so it spread each object
    thinly over every host and counted its whole size in each (without the hull's face),
    or a group of two objects as present in two hosts at the weight besides its whole size
    (without the per-object sum)."""
    scenario = parse_scenario(sized_jobs_scenario(jobs, capacities, 2))
    limits = sum(0.5 * c for c in capacities)
    optimum = sum(limits - sum(sizes) for sizes in jobs)
    check_linear_bound_is(scenario, optimum)


# ---------------------------------------------------------------- parity with the wheel


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason="no Python 3.12 interpreter with the rebalancer wheel")
@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_values_agree_with_the_wheel(seed: int, overlap: bool) -> None:
    """Goal values (the optimal solver's flavour) and constraint violations, at the start and
    after three random moves, relative 1e-9."""
    data = random_presence_scenario(seed, max_objects=7, overlap=overlap)
    final = random_final(parse_scenario(data).problem, seed)
    problems = wheel_mismatches(data, final, positions=False)
    assert not problems, f"seed {seed}:\n" + "\n".join(problems) + f"\n{data}"


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(("change", "field"), [
    ({"partition": "nope"}, "partition"),
    ({"dimension": ""}, "dimension"),
    ({"groupToPresenceWeight": {"type": "RELATIVE"}}, "groupToPresenceWeight"),
    ({"groupToPresenceWeight": {"globalLimit": -1}}, "groupToPresenceWeight"),
    ({"scopeItemToLimit": {"groupLimits": {"job0": 1}}}, "scopeItemToLimit"),
    ({"bound": "MIN", "scopeItemToLimit": {"isDefaultLimitUnbounded": True}},
     "scopeItemToLimit"),
    ({"intent": "SIDEWAYS"}, "intent"),
    ({"aggregationPartition": "fine"}, "aggregationPartition"),
    ({"groupFilter": {"type": "SCOPE_ITEM", "itemsWhitelist": ["job0"]}}, "groupFilter.type"),
    ({"groupFilter": {"itemsWhitelist": ["nope"]}}, r"groupFilter.itemsWhitelist\[0\]"),
    ({"groupUtilMultipliers": [{"value": {"globalLimit": 2}, "target": "BOTH"}]},
     r"groupUtilMultipliers\[0\].target"),
    ({"multiplierList": [{"globalLimit": -2}]}, r"multiplierList\[0\]"),
    ({"aggregationScope": "nope"}, "aggregationScope"),
    ({"extra": 1}, "extra"),
])
def test_bad_fields_are_named(change: dict, field: str) -> None:
    data = doc_example()
    data["partitions"]["fine"] = {"f0": ["t0", "t3"], "f1": ["t1", "t2"]}
    data["constraints"][0]["spec"][ARM].update(change)
    with pytest.raises(InputError, match=field):
        parse_scenario(data)


def test_an_aggregation_scope_must_nest_in_the_main_one() -> None:
    data = doc_example()
    data["scopes"] = {"pair": {"host0": "p0", "host1": "p0", "host2": "p1"},
                      "other": {"host0": "q0", "host1": "q1", "host2": "q1"}}
    data["constraints"][0]["spec"][ARM].update(scope="pair", aggregationScope="other")
    with pytest.raises(InputError, match="aggregationScope"):
        parse_scenario(data)
    np.testing.assert_equal(len(data["scopes"]), 2)


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason="no Python 3.12 interpreter with the rebalancer wheel")
def test_enum_names_reach_the_wheel_as_its_integers() -> None:
    """The reference example with its nested enums written as names, and multipliers with
    named targets: the bridge converts them, and the wheel's values equal ours."""
    data = doc_example()
    data["goals"] = [{"spec": {ARM: {
        **data["constraints"][0]["spec"][ARM], "bound": "MAX",
        "groupUtilMultipliers": [{"value": {"type": "ABSOLUTE", "globalLimit": 1.2},
                                  "target": "COMMON"}],
        "multiplierList": [{"type": "ABSOLUTE", "globalLimit": 2}],
        "groupFilter": {"type": "GROUP", "itemsBlacklist": ["job1"]},
        "scopeItemFilter": {"type": "SCOPE_ITEM", "itemsWhitelist": ["host0"]}}}}]
    scenario = parse_scenario(data)
    ours = evaluate(scenario.problem, scenario.model, scenario.problem.initial)
    wheel = evaluate_with_wheel(data, peer_python=PEER)["initial"]
    assert ours.goals[0].value == 1  # job0 alone: max(⌈1·1.2⌉, ⌈⌈0.6⌉·1.2⌉) − 1
    assert close(ours.goals[0].value, wheel["goals"][0]["value"])
    assert close(ours.constraints[0].violation, wheel["constraints"][0]["value"])
