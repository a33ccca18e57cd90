"""The scale benchmark's instance families (``generators.scale_instance``) and its harness
(``benchmarks/scale.py``): valid scenarios whose start keeps the hard capacity, a drain that
can be done, determinism in the seed, and on tiny instances our optimum equals brute force
over every assignment, lexicographically (IDEAL in leximin order)."""

from __future__ import annotations

import functools
import itertools
import json
from collections import Counter

import numpy as np
import pytest

from benchmarks.scale import main as scale_main
from benchmarks.scale import verdict
from cpsat_rebalancer import InputError, evaluate, parse_scenario, solve_scenario
from cpsat_rebalancer.generators import (
    SCALE_FAMILIES,
    balance_instance,
    drain_plan,
    scale_instance,
)
from cpsat_rebalancer.heuristics import tuple_order
from cpsat_rebalancer.scenario import SolverOptions


def host_loads(data: dict) -> dict[str, float]:
    """cpu per host, straight from the scenario dict (independent of the evaluator)."""
    cpu = data["objectDimensions"]["cpu"]
    return {h: sum(cpu[o] for o in objs) for h, objs in data["assignment"].items()}


def drained_hosts(data: dict) -> list[str]:
    return next(g["spec"]["toFreeSpec"]["containers"] for g in data["goals"]
                if "toFreeSpec" in g.get("spec", {}))


@pytest.mark.parametrize("family", SCALE_FAMILIES)
@pytest.mark.parametrize("objects, containers, seed", [(200, 10, 0), (200, 10, 1), (2000, 100, 2)])
def test_family_is_valid_and_starts_within_capacity(family, objects, containers, seed):
    data = scale_instance(family, objects, containers, seed)
    scenario = parse_scenario(data)
    assert scenario.problem.num_objects == objects
    assert scenario.problem.num_containers == containers
    capacity = data["containerDimensions"]["cpu"]
    assert all(load <= capacity[h] for h, load in host_loads(data).items())
    assert evaluate(scenario.problem, scenario.model, scenario.problem.initial).feasible
    # skewed: the start is not already balanced, so every family has work to do
    loads = host_loads(data)
    assert max(loads[h] / capacity[h] for h in loads) > 0.8
    assert min(loads[h] / capacity[h] for h in loads) < 0.5


@pytest.mark.parametrize("family", SCALE_FAMILIES)
def test_family_is_deterministic_in_the_seed(family):
    assert scale_instance(family, 120, 8, 3) == scale_instance(family, 120, 8, 3)
    assert scale_instance(family, 120, 8, 3) != scale_instance(family, 120, 8, 4)


@pytest.mark.parametrize("formula", ["LINEAR", "SQUARES", "MAX", "IDEAL"])
def test_balance_families_are_balance_instance(formula):
    assert scale_instance(formula.lower(), 300, 12, 5) == balance_instance(300, 12, formula, 5)


@pytest.mark.parametrize("objects, containers, seed",
                         [(6, 3, 0), (6, 3, 1), (200, 10, 0), (2000, 100, 0), (2000, 100, 7)])
def test_drain_can_be_done(objects, containers, seed):
    data = scale_instance("drain", objects, containers, seed)
    drained = drained_hosts(data)
    assert len(drained) == max(1, round(0.05 * containers))
    assert any(data["assignment"][h] for h in drained)  # something to move
    plan = drain_plan(data)
    assert plan is not None
    assert all(not plan[h] for h in drained)
    capacity = data["containerDimensions"]["cpu"]
    assert all(load <= capacity[h] for h, load in host_loads({**data, "assignment": plan}).items())
    # only objects of drained hosts move
    start = {o: h for h, objs in data["assignment"].items() for o in objs}
    final = {o: h for h, objs in plan.items() for o in objs}
    assert {o for o in start if start[o] != final[o]} <= {
        o for h in drained for o in data["assignment"][h]}
    scenario = parse_scenario(data)
    evaluation = evaluate(scenario.problem, scenario.model,
                          scenario.problem.assignment_array(plan))
    assert evaluation.feasible and evaluation.positions[0] == 0.0


def test_racks_and_million_shapes():
    data = scale_instance("racks", 2000, 100, 0)
    racks = data["scopes"]["rack"]
    assert set(racks) == set(data["containerDimensions"]["cpu"])
    sizes = Counter(racks.values())
    assert len(sizes) >= 5 and all(10 <= s < 30 for s in sizes.values())
    capacity = data["containerDimensions"]["cpu"]
    for rack, total in data["scopeDimensions"]["rack"]["cpu"].items():
        assert total == sum(capacity[h] for h, r in racks.items() if r == rack)
    assert len(set(capacity.values())) == 2  # hosts of capacity C and 2C
    million = scale_instance("million", 20000, 50, 0)
    cpu, mem = million["objectDimensions"]["cpu"], million["objectDimensions"]["mem"]
    assert len({(cpu[o], mem[o]) for o in cpu}) <= 200


@pytest.mark.parametrize("objects, containers, seed", [(6, 3, 0), (200, 10, 1), (2000, 100, 2)])
def test_replicas_shape(objects, containers, seed):
    data = scale_instance("replicas", objects, containers, seed)
    jobs = data["partitions"]["job"]
    members = [o for tasks in jobs.values() for o in tasks]
    assert sorted(members) == sorted(data["objectDimensions"]["cpu"])  # a partition of all
    sizes = [len(tasks) for tasks in jobs.values()]
    assert all(2 <= n <= 5 for n in sizes[:-1]) and 1 <= sizes[-1] <= 5
    cpu, mem = data["objectDimensions"]["cpu"], data["objectDimensions"]["mem"]
    assert all(len({(cpu[o], mem[o]) for o in tasks}) == 1 for tasks in jobs.values())
    racks = data["scopes"]["rack"]
    assert set(racks) == set(data["assignment"])
    rack_sizes = Counter(racks.values())
    rack_count = len(rack_sizes)
    if containers < 20:
        assert sorted(rack_sizes.values()) == [containers // 2, containers - containers // 2]
    else:
        assert all(10 <= n < 30 for n in rack_sizes.values())
    (diversity,) = [g["spec"]["groupDiversitySpec"] for g in data["goals"]
                    if "groupDiversitySpec" in g.get("spec", {})]
    assert (diversity["scope"], diversity["partition"], diversity["bound"]) == (
        "rack", "job", "MIN")
    assert diversity["limit"]["globalLimit"] == max(1, round(0.5 * len(jobs) / rack_count))
    (move_limit,) = [c for c in data["constraints"] if "groupMoveLimitSpec" in c["spec"]]
    assert move_limit["policy"] == "HARD"
    limits = move_limit["spec"]["groupMoveLimitSpec"]["limit"]["groupLimits"]
    assert limits == {j: max(1, len(tasks) - 1) for j, tasks in jobs.items()}
    # the start keeps every hard constraint; its diversity shortfall, counted here from the
    # dict, is the evaluator's position 0
    scenario = parse_scenario(data)
    start = evaluate(scenario.problem, scenario.model, scenario.problem.initial)
    assert start.feasible
    job_of = {o: j for j, tasks in jobs.items() for o in tasks}
    present: dict[str, set] = {r: set() for r in racks.values()}
    for h, objs in data["assignment"].items():
        present[racks[h]].update(job_of[o] for o in objs)
    limit = diversity["limit"]["globalLimit"]
    assert start.positions[0] == sum(max(0, limit - len(js)) for js in present.values())


def test_bad_family_or_size_is_an_input_error():
    with pytest.raises(InputError, match="family"):
        scale_instance("zigzag", 10, 2)
    with pytest.raises(InputError, match="objects"):
        scale_instance("drain", 0, 2)


# --------------------------------------------------------------------------- brute force


def brute_force_best(scenario):
    """The lexicographically best feasible evaluation over every assignment."""
    problem, model = scenario.problem, scenario.model
    feasible = []
    for final in itertools.product(range(problem.num_containers), repeat=problem.num_objects):
        evaluation = evaluate(problem, model, np.asarray(final))
        if evaluation.feasible:
            feasible.append(evaluation)
    return min(feasible, key=functools.cmp_to_key(lambda a, b: tuple_order(a, b)[0]))


@pytest.mark.parametrize("family", SCALE_FAMILIES)
def test_tiny_optimum_equals_brute_force(family):
    scenario = parse_scenario(scale_instance(family, 6, 3, seed=1))
    result = solve_scenario(scenario, SolverOptions(time_limit=30, workers=2))
    assert result.status == "OPTIMAL"
    error = max(result.approximation.values(), default=0.0)
    assert error <= 1e-8  # exact up to the stated rounding of x^1.1
    best = brute_force_best(scenario)
    assert tuple_order(result.final_evaluation, best, tolerance=1e-7) == (0, None)
    assert result.final_evaluation.positions == pytest.approx(best.positions, abs=1e-7)


# --------------------------------------------------------------------------- the harness


def test_benchmark_runs_end_to_end(tmp_path, capsys):
    out = tmp_path / "scale.json"
    rows = scale_main(["--quick", "--no-peer", "--families", "drain", "--sizes", "6x3",
                       "--json", str(out)])
    printed = capsys.readouterr().out
    assert "time limit 10 s" in printed and "2 workers" in printed
    assert [(r["instance"], r["family"]) for r in rows] == [("6x3", "drain")]
    written = json.loads(out.read_text())
    assert written["timeLimit"] == 10 and written["workers"] == 2
    (row,) = written["rows"]
    assert row["status"] == "OPTIMAL" and row["feasible"] and row["peak MB"] > 0
    best = brute_force_best(parse_scenario(scale_instance("drain", 6, 3, seed=0)))
    assert [b["objective"] for b in row["buckets"]] == pytest.approx(
        [best.positions[p] for p in sorted(best.positions)], abs=1e-7)


def test_verdict_orders_tuples_and_feasibility():
    data = scale_instance("drain", 200, 10, 0)
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    start = evaluate(problem, model, problem.initial)
    drained = evaluate(problem, model, problem.assignment_array(drain_plan(data)))
    crammed = evaluate(problem, model, np.zeros(problem.num_objects, dtype=int))
    assert not crammed.feasible
    assert verdict(drained, start) == "better at 0"  # objects left on drained hosts decide
    assert verdict(start, drained) == "WORSE at 0"
    assert verdict(start, start) == "tie"
    assert verdict(start, crammed) == "better (theirs infeasible)"
    assert verdict(crammed, drained) == "WORSE (ours infeasible)"
