"""The descent over containers (cpsat/neighbourhoods.py): from a poor assignment it never
worsens the objective, keeps every constraint, and on small instances reaches the optimum
that a full solve proves."""

from __future__ import annotations

import time

import pytest
from ortools.sat.python import cp_model

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.cpsat.driver import Chain, _moved, compile_model
from cpsat_rebalancer.cpsat.neighbourhoods import descend
from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.generators import balance_instance
from cpsat_rebalancer.scenario import SolverOptions


def forced_moves(seed: int) -> dict:
    """A skewed cluster that must shed load: a hard cpu Capacity at 75% of each host,
    the fewest moved objects as the goal."""
    data = balance_instance(36, 12, seed=seed)
    data["goals"] = [{"spec": {"minimizeMovementSpec": {"name": "moves", "scope": "host",
                                                        "doNotNormalize": True}}}]
    data["constraints"] = [{"spec": {"capacitySpec": {
        "name": "cpu_75", "scope": "host", "dimension": "cpu",
        "limit": {"type": "RELATIVE", "globalLimit": 0.75}}}, "policy": "HARD"}]
    return data


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_descent_from_the_worst_assignment_reaches_the_proven_optimum(seed: int) -> None:
    scenario = parse_scenario(forced_moves(seed))
    problem, model = scenario.problem, scenario.model
    builder, _ = compile_model(problem, model)
    chain = Chain(builder, model, SolverOptions(workers=2, seed=0))
    moved = _moved(builder)
    status, solver = chain.solve(moved)
    assert status == cp_model.OPTIMAL
    optimum = round(solver.objective_value)
    assert optimum > 0  # the instance does force moves
    status, solver = chain.solve(-moved)  # the most moves: a poor start
    assert status == cp_model.OPTIMAL
    worst = round(-solver.objective_value)
    assert worst > optimum
    values, found = descend(builder, moved, chain.values, worst, time.monotonic() + 20.0,
                            chain)
    assert found == optimum
    chain.values = values
    final = chain.decode()
    evaluation = evaluate(problem, model, final)
    assert evaluation.feasible
    assert int((final != problem.initial).sum()) == found
    # the model is left as it was: every count has its own domain again
    status, solver = chain.solve(moved)
    assert status == cp_model.OPTIMAL and round(solver.objective_value) == optimum


def test_descent_never_worsens_and_stops_at_its_deadline() -> None:
    scenario = parse_scenario(forced_moves(3))
    builder, _ = compile_model(scenario.problem, scenario.model)
    chain = Chain(builder, scenario.model, SolverOptions(workers=1, seed=0))
    moved = _moved(builder)
    status, solver = chain.solve(-moved)
    worst = round(-solver.objective_value)
    values, found = descend(builder, moved, chain.values, worst, time.monotonic(), chain)
    assert (values, found) == (chain.values, worst)  # no time: nothing tried
    started = time.monotonic()
    _, found = descend(builder, moved, chain.values, worst, started + 1.0, chain)
    assert found <= worst and time.monotonic() - started < 3.0
