"""Tiny scenarios whose sizes and capacities span 1e-6 to 1e12, with every digit a double
holds or few, under every power term: the optimum found by enumeration, proven OPTIMAL to
relative 1e-9 with no allowance for any stated error, every bound at or below it (the
exact closure, solve/closure.py, where the compiled forms are rounded)."""

from __future__ import annotations

import random

import pytest
from test_bruteforce import check_against_enumeration

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.errors import InputError
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve.pipeline import solve_model

FORMULAS = ["LINEAR", "MAX", "SQUARES", "IDEAL", "RELATIVE_UTIL_VARIANCE", "LEGACY"]


def significant(value: float, digits: int) -> float:
    return float(f"{value:.{digits}g}")


def wide_magnitude_scenario(seed: int) -> dict:
    """3-5 objects on 2-3 hosts. Sizes log-uniform from a lowest magnitude in 1e-6..1e12 up
    to any magnitude above it within 1e12 and 12 decades (wider in one dimension is
    refused, below), as integers or with 3, 6 or 15 significant digits; capacities
    0.4-1.5 times the total with 2, 6 or 15 digits. One balance formula or a
    UtilIncreaseCost (linear or squares, lower bound 0, 0.3 or 0.5) at position 0, half
    the time beside a SOFT capacity there, half the time a movement goal at position 1."""
    rng = random.Random(seed)
    n, m = rng.randint(3, 5), rng.randint(2, 3)
    objects, hosts = [f"t{o}" for o in range(n)], [f"h{c}" for c in range(m)]
    low = rng.uniform(-6, 12)
    spread = rng.uniform(0, min(12, 12 - low))
    integral = rng.random() < 0.4
    sizes = {}
    for name in objects:
        value = 10 ** rng.uniform(low, low + spread)
        sizes[name] = (float(round(value)) if integral and value >= 1
                       else significant(value, rng.choice([3, 6, 15])))
    total = sum(sizes.values())
    capacities = {h: significant(total * rng.uniform(0.4, 1.5), rng.choice([2, 6, 15]))
                  for h in hosts}
    assignment: dict[str, list[str]] = {h: [] for h in hosts}
    for name in objects:
        assignment[rng.choice(hosts)].append(name)
    kind = rng.choice([*FORMULAS, "squares", "linear"])
    if kind == "LEGACY":  # (Rebalancer's checker asks for these with it)
        goal = {"balanceSpec": {"dimension": "cpu", "formula": kind, "boundType": "RELATIVE",
                                "fixAverageToInitial": True, "upperBound": 1.1}}
    elif kind in FORMULAS:
        goal = {"balanceSpec": {"dimension": "cpu", "formula": kind}}
    else:
        goal = {"utilIncreaseCostSpec": {"dimension": "cpu", "squares": kind == "squares",
                                         "lowerBound": rng.choice([0.0, 0.3, 0.5])}}
    goals = [{"spec": goal}]
    if rng.random() < 0.5:
        dimension = rng.choice(["cpu", "object_count"])
        goals.append({"spec": {"minimizeMovementSpec": {"dimension": dimension}},
                      "tuplePos": 1})
    data = {"assignment": assignment, "objectDimensions": {"cpu": sizes},
            "containerDimensions": {"cpu": capacities}, "goals": goals}
    if rng.random() < 0.5:
        data["constraints"] = [{"spec": {"capacitySpec": {"dimension": "cpu"}},
                                "policy": "SOFT", "tuplePosIfBroken": 0,
                                "invalidCost": rng.choice([1, 100])}]
    return data


@pytest.mark.parametrize("seed", range(60))
def test_wide_magnitudes_match_enumeration(seed: int) -> None:
    check_against_enumeration(wide_magnitude_scenario(seed), seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(60, 400))
def test_more_wide_magnitudes_match_enumeration(seed: int) -> None:
    check_against_enumeration(wide_magnitude_scenario(seed), seed)


def test_sizes_further_apart_than_64_bits_hold_are_refused_naming_the_object() -> None:
    """1e-6 beside 2e10 in one dimension: its integer scale (at most 2^50 per value) rounds
    the small size to 0, which would change every step at 0 without the error saying so."""
    data = {"assignment": {"h0": ["big", "small"], "h1": []},
            "objectDimensions": {"cpu": {"big": 2e10, "small": 1e-6}},
            "containerDimensions": {"cpu": {"h0": 3e10, "h1": 3e10}},
            "goals": [{"spec": {"balanceSpec": {"dimension": "cpu", "formula": "LINEAR"}}}]}
    scenario = parse_scenario(data)
    with pytest.raises(InputError, match="objectDimensions.cpu.small: too small to model"):
        solve_model(scenario.problem, scenario.model, SolverOptions(workers=1))
