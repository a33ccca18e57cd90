"""The coarse relaxation (solve/coarse.py, docs/compiling.md#coarse-relaxation): group specs
left out, identical objects of different groups merged, the answer lifted back. Checked on
random tiny scenarios of shapes the scale families do not have (a second partition across
the jobs, MAX diversity, weighted move limits, a diversity goal sharing its position, rack
scopes or none) against enumeration: the solve's optimum, and every bound the lift
claims."""

from __future__ import annotations

import inspect
import random
from typing import Any

import pytest
from randomized import brute_force
from test_bruteforce import check_against_enumeration

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.result import OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve import coarse
from cpsat_rebalancer.solve.pipeline import solve_model
from cpsat_rebalancer.specs.common import REGISTRY

OPTIONS = SolverOptions(workers=1, seed=0)
TOLERANCE = 1e-9


def replicas(seed: int, objects: int = 7, hosts: int = 3) -> dict[str, Any]:
    """Tasks of two sizes in jobs (sometimes a task in two jobs of a second partition),
    hosts maybe in racks; GroupDiversity (MIN or MAX, alone at position 0 or sharing it with
    a balance), a balance or moves after it; a HARD move limit (weighted by cpu or counted)
    and a HARD cpu capacity, each maybe."""
    rng = random.Random(seed)
    tasks = [f"t{i}" for i in range(objects)]
    names = [f"h{c}" for c in range(hosts)]
    assignment: dict[str, list[str]] = {h: [] for h in names}
    for task in tasks:
        assignment[rng.choice(names)].append(task)
    cpu = {t: float(rng.choice([1, 2])) for t in tasks}
    capacity = {h: float(rng.choice([6, 8, 10])) for h in names}
    jobs: dict[str, list[str]] = {}
    order = tasks[:]
    rng.shuffle(order)
    while order:
        take = rng.randint(1, 3)
        jobs[f"j{len(jobs)}"] = order[:take]
        order = order[take:]
    partitions: dict[str, Any] = {"job": jobs}
    if rng.random() < 0.3:  # a second partition, across the jobs, leaving a task out
        shuffled = rng.sample(tasks, objects)
        partitions["team"] = {"a": shuffled[:3], "b": shuffled[3:-1]}
    scope = "host"
    data: dict[str, Any] = {
        "objectName": "task", "containerName": "host", "assignment": assignment,
        "objectDimensions": {"cpu": cpu},
        "containerDimensions": {"cpu": capacity},
        "partitions": partitions,
    }
    if rng.random() < 0.6:
        data["scopes"] = {"rack": {h: "r0" if c < 2 else "r1" for c, h in enumerate(names)}}
        scope = rng.choice(["rack", "host"])
    partition = rng.choice(sorted(partitions))
    diversity = {"groupDiversitySpec": {
        "scope": scope, "partition": partition, "dimension": "task_count",
        "bound": rng.choice(["MIN", "MIN", "MAX"]), "limit": {"globalLimit": rng.randint(1, 3)}}}
    balance = {"balanceSpec": {"scope": "host", "dimension": "cpu",
                               "formula": rng.choice(["LINEAR", "SQUARES"])}}
    moves = {"minimizeMovementSpec": {"scope": "host", "doNotNormalize": True}}
    goals: list[dict[str, Any]] = [{"spec": diversity}]
    if rng.random() < 0.3:
        goals.append({"spec": balance})  # at the same position
        goals += [{"boundary": True}, {"spec": moves}]
    else:
        goals += [{"boundary": True}, {"spec": rng.choice([balance, moves])}]
        if rng.random() < 0.5:
            goals += [{"boundary": True}, {"spec": moves}]
    constraints = []
    if rng.random() < 0.8:
        limit: dict[str, Any] = {"type": "ABSOLUTE", "globalLimit": rng.randint(0, 2)}
        body: dict[str, Any] = {"partitionName": "job", "limit": limit}
        if rng.random() < 0.3:
            body["dimension"] = "cpu"
            limit["globalLimit"] = rng.choice([1, 2, 3])
        constraints.append({"spec": {"groupMoveLimitSpec": body}, "policy": "HARD"})
    if rng.random() < 0.7:
        constraints.append({"spec": {"capacitySpec": {"scope": "host", "dimension": "cpu"}},
                            "policy": "HARD"})
    data["goals"] = goals
    data["constraints"] = constraints
    return data


def test_every_spec_that_reads_a_partition_says_so() -> None:
    """A spec whose module resolves a partition (or a group filter, or a utilization bound by
    group) must override reads_groups, or the relaxation would merge its groups' objects."""
    for arm, cls in REGISTRY.items():
        source = inspect.getsource(inspect.getmodule(cls))
        reads = any(word in source for word in ("resolve_partition(", "parse_group_filter(",
                                                "UtilizationBound"))
        assert reads == ("reads_groups" in cls.__dict__), arm


@pytest.mark.parametrize("seed", range(40))
def test_random_scenarios_match_enumeration(seed: int) -> None:
    check_against_enumeration(replicas(seed), seed)


def test_the_relaxation_runs_on_most_of_them() -> None:
    """The scenarios above exercise the coarse path (objects of two sizes, groups of up to
    three: the relaxation has at most half the classes)."""
    ran = 0
    for seed in range(40):
        scenario = parse_scenario(replicas(seed))
        ran += coarse.relaxation(scenario.problem, scenario.model, OPTIONS) is not None
    assert ran >= 20


def lexicographic_optima(data: dict[str, Any]) -> tuple[list[int], dict[int, float]]:
    scenario = parse_scenario(data)
    candidates = [ev for _, ev in brute_force(scenario)]
    positions = sorted(candidates[0].positions)
    optima = {}
    for p in positions:
        best = min(ev.positions[p] for ev in candidates)
        optima[p] = best
        candidates = [ev for ev in candidates
                      if ev.positions[p] <= best + TOLERANCE * max(1.0, abs(best))]
    return positions, optima


@pytest.mark.parametrize("seed", range(40))
def test_lift_claims_only_valid_bounds(seed: int) -> None:
    """The relaxation's answer lifted (what a solve returns when the whole model's search
    does not get further): it keeps the hard rules, and at each position its bound lies at
    or below the lexicographic optimum, and an OPTIMAL position meets that optimum."""
    data = replicas(seed)
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    relaxed = coarse.relaxation(problem, model, OPTIONS)
    if relaxed is None or not brute_force(scenario):
        return
    coarse_result = solve_model(relaxed.problem, relaxed.model, OPTIONS)
    initial = evaluate(problem, model, problem.initial)
    result = coarse.lifted(problem, model, coarse_result, initial, 0.0)
    if result is None:
        return
    assert result.final_evaluation.feasible
    _, optima = lexicographic_optima(data)
    assert_valid_bounds(seed, result.buckets, optima)


def assert_valid_bounds(seed: int, reports: list, optima: dict[int, float]) -> None:
    """Every bound at or below the enumerated lexicographic optimum; OPTIMAL only at it,
    and only after positions all OPTIMAL."""
    proven_so_far = True
    for report in reports:
        best = optima[report.position]
        slack = TOLERANCE * max(1.0, abs(best))
        if report.bound is not None:
            assert report.bound <= best + slack, (seed, report.position, report.bound, best)
        if report.status == OPTIMAL:
            assert proven_so_far
            assert abs(report.objective - best) <= slack, (seed, report.position)
        proven_so_far = proven_so_far and report.status == OPTIMAL


@pytest.mark.parametrize("seed", range(20))
def test_lift_keeps_the_values_of_the_specs_kept(seed: int) -> None:
    """Swapping objects alike for the specs kept leaves their values as they were: the
    relaxation's evaluation of the lift equals its evaluation of its own answer."""
    data = replicas(seed)
    data["constraints"] = [c for c in data["constraints"]
                           if "groupMoveLimitSpec" not in c["spec"]]  # the lift may send back
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    relaxed = coarse.relaxation(problem, model, OPTIONS)
    if relaxed is None:
        return
    coarse_final = solve_model(relaxed.problem, relaxed.model, OPTIONS).final
    lifted = coarse.lift(problem, model, coarse_final)
    assert lifted is not None
    before = evaluate(relaxed.problem, relaxed.model, coarse_final)
    after = evaluate(relaxed.problem, relaxed.model, lifted)
    assert after.positions == pytest.approx(before.positions, rel=1e-12, abs=1e-12)
    assert (lifted != problem.initial).sum() == (coarse_final != problem.initial).sum()


def test_lift_keeps_each_job_at_home_when_the_counts_allow() -> None:
    """Two jobs of two tasks on two hosts, the relaxation moving one task off each host:
    taken by index, both tasks of one job would move; within the limit of one move per
    job, each job moves one."""
    data = {
        "objectName": "task", "containerName": "host",
        "assignment": {"h0": ["a0", "b0"], "h1": ["a1", "b1"], "h2": []},
        "partitions": {"job": {"a": ["a0", "a1"], "b": ["b0", "b1"]}},
        "goals": [{"spec": {"minimizeMovementSpec": {"scope": "host"}}}],
        "constraints": [{"spec": {"groupMoveLimitSpec": {
            "partitionName": "job", "limit": {"globalLimit": 1}}}, "policy": "HARD"}],
    }
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    index = problem.object_index
    coarse_final = problem.initial.copy()
    h2 = problem.container_index["h2"]
    coarse_final[index["a0"]] = h2
    coarse_final[index["a1"]] = h2  # both of job a: the limit breaks
    lifted = coarse.lift(problem, model, coarse_final)
    assert evaluate(problem, model, lifted).feasible
    assert (lifted == h2).sum() == 2
    assert {lifted[index["a0"]], lifted[index["a1"]]} != {h2}
