"""The move-based floor: single moves and swaps judged by the evaluator."""

from __future__ import annotations

import time

import numpy as np
import pytest
from randomized import brute_force, random_scenario

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.solve.accelerate.local_search import better, descend, tuple_key


def single_moves(scenario, final: np.ndarray):
    problem = scenario.problem
    for o in range(problem.num_objects):
        for c in range(problem.num_containers):
            if c != final[o]:
                moved = final.copy()
                moved[o] = c
                yield moved


def improving_move_exists(scenario, final: np.ndarray) -> bool:
    key = tuple_key(evaluate(scenario.problem, scenario.model, final))
    for moved in single_moves(scenario, final):
        evaluation = evaluate(scenario.problem, scenario.model, moved)
        if evaluation.feasible and better(tuple_key(evaluation), key):
            return True
    return False


@pytest.mark.parametrize("seed", range(30))
def test_descent_ends_where_no_single_move_helps(seed: int) -> None:
    """From the initial assignment: a better, feasible assignment whenever a single move
    helps, none otherwise; where it stops, no single move helps."""
    scenario = parse_scenario(random_scenario(seed))
    problem = scenario.problem
    initial = evaluate(problem, scenario.model, problem.initial)
    if not initial.feasible:
        assert descend(problem, scenario.model, problem.initial, time.monotonic() + 5) is None
        return
    found = descend(problem, scenario.model, problem.initial, time.monotonic() + 5, seed)
    if found is None:
        assert not improving_move_exists(scenario, problem.initial)
        return
    final, evaluation = found
    assert evaluation.feasible
    assert better(tuple_key(evaluation), tuple_key(initial))
    assert tuple_key(evaluate(problem, scenario.model, final)) == tuple_key(evaluation)
    assert not improving_move_exists(scenario, final)


@pytest.mark.parametrize("seed", range(10))
def test_nothing_beats_the_optimum(seed: int) -> None:
    scenario = parse_scenario(random_scenario(seed))
    feasible = brute_force(scenario)
    if not feasible:
        return
    best = min(feasible, key=lambda pair: tuple_key(pair[1]))[0]
    assert descend(scenario.problem, scenario.model, best, time.monotonic() + 5) is None
