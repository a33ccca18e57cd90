"""``Model.floors``: the lowest value any assignment can have at a position, which proofs
rely on (a value there is optimal; a bound never needs to go lower). On random tiny
scenarios of every spec the generator draws, no assignment lies below it."""

from __future__ import annotations

import math

import pytest
from randomized import all_assignments, random_scenario

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.evaluate import evaluate


@pytest.mark.parametrize("groups", [False, True])
@pytest.mark.parametrize("seed", range(100))
def test_no_assignment_lies_below_a_positions_floor(seed: int, groups: bool) -> None:
    scenario = parse_scenario(random_scenario(seed, groups=groups))
    floors = scenario.model.floors()
    finite = {p: f for p, f in floors.items() if math.isfinite(f)}
    if not finite:
        pytest.skip("no position with a finite floor")
    for final in all_assignments(scenario):
        evaluation = evaluate(scenario.problem, scenario.model, final)
        for position, floor in finite.items():
            value = evaluation.positions.get(position, 0.0)
            assert value >= floor - 1e-12, (position, value, final.tolist())
