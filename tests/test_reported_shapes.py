"""The shapes users reported failing (``shapes.REPORTED_SHAPES``), built by the random
generator and solved right: the tiny ones against enumeration (relative 1e-9, no allowance
for any stated error), the large ones at sizes a test affords (the reported sizes run in
``benchmarks/robustness.py --shapes reported``, beside Rebalancer's local search)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from test_bruteforce import check_against_enumeration

from cpsat_rebalancer import evaluate, parse_scenario
from cpsat_rebalancer.api import solve_scenario
from cpsat_rebalancer.result import OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.shapes import REPORTED_SHAPES, describe_shape, shape_scenario
from cpsat_rebalancer.shapes.draw import HOT_RACKS

SEEDS = range(8)


def tiny(name: str, seed: int, magnitude: int) -> dict:
    """Instance ``seed`` of a reported shape on 3-5 objects and 2-3 hosts."""
    shape = dataclasses.replace(REPORTED_SHAPES[name], seed=seed, magnitude=magnitude)
    return shape_scenario(shape, 3 + seed % 3, 2 + seed // 3 % 2)


@pytest.mark.parametrize("formula", ["linear", "max", "squares"])
@pytest.mark.parametrize("seed", SEEDS)
def test_large_integers_match_enumeration(formula: str, seed: int) -> None:
    """Flavoured sizes times 1e9-1e12 with a balance, a DEFAULT capacity and movement at 1:
    reported OPTIMAL at values worse than moving one object, or raising."""
    check_against_enumeration(tiny(f"large-integers-{formula}", seed, 9 + seed % 4), seed)


@pytest.mark.parametrize("goal", ["squares", "uic", "ideal"])
@pytest.mark.parametrize("seed", SEEDS)
def test_wide_ranges_beside_a_soft_capacity_match_enumeration(goal: str, seed: int) -> None:
    """Lognormal sizes over decades, many capacities, an over-capacity start, a squared
    term sharing its bucket with a SOFT capacity: bounds above the optimum were reported."""
    check_against_enumeration(tiny(f"wide-range-{goal}", seed, seed % 6), seed)


def test_the_drain_with_a_squared_cost_drains() -> None:
    """CP-SAT once rejected its model (objective sized by the capacity's bounds, checked
    against the loads' domains; ``test_time_limits`` validates such a model): the solve
    empties the hosts, its bound below its value."""
    data = shape_scenario(REPORTED_SHAPES["drain-with-cost"], 1000, 60)
    scenario = parse_scenario(data)
    result = solve_scenario(scenario, SolverOptions(time_limit=20, workers=2, seed=0))
    assert result.final_evaluation.feasible
    drained = data["constraints"][0]["spec"]["toFreeSpec"]["containers"]
    hosts = [scenario.problem.containers.index(h) for h in drained]
    assert drained and not np.isin(result.final, hosts).any()
    report = result.buckets[0]
    assert report.bound is None or report.bound <= report.objective * (1 + 1e-9)


def test_hot_racks_start_hot_and_are_balanced() -> None:
    """30% of the racks start hot (hosts filled to 95% by next fit), at 65% overall; solved,
    both balances improve on the start, and a proven position holds its bound."""
    data = shape_scenario(REPORTED_SHAPES["hot-racks"], 500, 50)
    assert "hot-racks" in describe_shape(REPORTED_SHAPES["hot-racks"])
    scenario = parse_scenario(data)
    problem = scenario.problem
    racks = data["scopes"]["rack"]
    load: dict[str, float] = {}
    for host, tasks in data["assignment"].items():
        load[racks[host]] = (load.get(racks[host], 0.0)
                             + sum(data["objectDimensions"]["cpu"][t] for t in tasks))
    capacity = data["scopeDimensions"]["rack"]["cpu"]
    hot = [rack for rack in load if load[rack] > 0.8 * capacity[rack]]
    assert len(hot) >= round(HOT_RACKS * len(load))  # where 65% is the mean
    start = evaluate(problem, scenario.model, problem.initial)
    result = solve_scenario(scenario, SolverOptions(time_limit=30, workers=2, seed=0))
    final = result.final_evaluation
    assert final.feasible
    assert final.positions[0] < start.positions[0]
    assert final.positions[1] < start.positions[1]
    for report in result.buckets:
        if report.status == OPTIMAL:
            assert report.bound <= final.positions[report.position] * (1 + 1e-9) + 1e-12
