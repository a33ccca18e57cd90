"""The descent over containers (cpsat/neighbourhoods.py): from a poor assignment it never
worsens the objective, keeps every constraint, and on small instances reaches the optimum
that a full solve proves."""

from __future__ import annotations

import time

import pytest
from ortools.sat.python import cp_model

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.generators import balance_instance
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve.accelerate import leximin_smaller, polish_leximin
from cpsat_rebalancer.solve.accelerate.neighbourhoods import descend
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.moves import moved_objects
from cpsat_rebalancer.solve.session import Session


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
    chain = Session(builder, model, SolverOptions(workers=2, seed=0))
    moved = moved_objects(builder)
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


def at_most_moves(seed: int, workers: int) -> tuple:
    """``forced_moves(seed)`` compiled, its session holding the assignment of the most
    moves (a poor start), the moves expression and that many moves."""
    scenario = parse_scenario(forced_moves(seed))
    builder, _ = compile_model(scenario.problem, scenario.model)
    chain = Session(builder, scenario.model, SolverOptions(workers=workers, seed=0))
    moved = moved_objects(builder)
    _, solver = chain.solve(-moved)
    return scenario, builder, chain, moved, round(-solver.objective_value)


def test_descent_counts_objectives_past_2_53_exactly() -> None:
    """An objective whose constant is past 2^53, where CP-SAT's double holds values to 256
    units: the value the descent returns is its solution's, exactly (a value below it
    would cut that solution off where the bucket's search holds the objective to it)."""
    scenario, builder, chain, moved, worst = at_most_moves(0, workers=2)
    offset = 2**60 + 1
    values, found = descend(builder, moved + offset, chain.values, worst + offset,
                            time.monotonic() + 5.0, chain)
    chain.values = values
    assert found == offset + int((chain.decode() != scenario.problem.initial).sum())
    assert found < worst + offset


def test_descent_never_worsens_and_stops_at_its_deadline() -> None:
    _, builder, chain, moved, worst = at_most_moves(3, workers=1)
    values, found = descend(builder, moved, chain.values, worst, time.monotonic(), chain)
    assert (values, found) == (chain.values, worst)  # no time: nothing tried
    values, found = descend(builder, moved, chain.values, worst, time.monotonic() + 20.0,
                            chain, floor=worst)
    assert (values, found) == (chain.values, worst)  # at a proven floor: nothing tried
    started = time.monotonic()
    _, found = descend(builder, moved, chain.values, worst, started + 1.0, chain)
    assert found <= worst and time.monotonic() - started < 3.0


def test_leximin_polish_keeps_only_a_smaller_vector() -> None:
    """IDEAL's polish (the scalar by the descent, then the full search) from the initial
    assignment: the vector kept is never lexicographically larger than the one held, and
    from this skewed start it is strictly smaller."""
    data = balance_instance(200, 12, "IDEAL", seed=4)
    data["goals"] = data["goals"][:1]
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    builder, buckets = compile_model(problem, model)
    bucket = buckets[0]
    assert bucket.leximin and bucket.scalar
    chain = Session(builder, model, SolverOptions(workers=2, seed=0))
    assert chain.start_from()
    held = evaluate(problem, model, chain.decode()).leximin[0]
    polish_leximin(chain, bucket, 3.0)
    evaluation = evaluate(problem, model, chain.decode())
    assert evaluation.feasible
    assert leximin_smaller(evaluation.leximin[0], held)
