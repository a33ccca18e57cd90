"""Same input, seed, worker count and deterministic budget: the same assignment."""

from __future__ import annotations

from ortools.sat import sat_parameters_pb2

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.generators import balance_instance, scale_instance
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.pipeline import solve_model
from cpsat_rebalancer.solve.session import Session


def test_deterministic_budget_repeats_the_assignment() -> None:
    scenario = parse_scenario(balance_instance(120, 8, "SQUARES", seed=3))
    options = SolverOptions(workers=2, seed=11, deterministic_time=0.1)
    first = solve_model(scenario.problem, scenario.model, options)
    second = solve_model(scenario.problem, scenario.model, options)
    assert (first.final == second.final).all()
    assert [b.objective for b in first.buckets] == [b.objective for b in second.buckets]


def test_a_deterministic_run_takes_no_wall_clock_share() -> None:
    """Shares of time cut a search wherever the clock stands, so a deterministic run keeps
    only the user's time limit; its solves are bounded by deterministic time instead."""
    scenario = parse_scenario(balance_instance(12, 3, seed=1))
    problem, model = scenario.problem, scenario.model
    builder, _ = compile_model(problem, model, True)
    clocked = Session(builder, model, SolverOptions(workers=1, seed=0))
    assert clocked.wall_limit(3.0) == 3.0
    limited = Session(builder, model, SolverOptions(time_limit=50.0, workers=1, seed=0,
                                                  deterministic_time=2.0))
    repeatable = Session(builder, model, SolverOptions(workers=1, seed=0, deterministic_time=2.0))
    assert repeatable.wall_limit(3.0) is None
    assert 49.0 < limited.wall_limit(3.0) <= 50.0
    params = sat_parameters_pb2.SatParameters()
    repeatable.limit(params, None, work=0.5)
    assert params.max_deterministic_time == 0.5 and params.interleave_search
    repeatable.limit(params, None, work=9.0)  # the user's budget per solve is the most
    assert params.max_deterministic_time == 2.0


def test_a_repeatable_ideal_run_repeats_and_names_its_limit() -> None:
    """IDEAL (leximin levels, then moves) under a deterministic budget and no time limit:
    the same assignment twice, and what stopped an unproven search is the budget."""
    scenario = parse_scenario(scale_instance("ideal", 400, 20, 0))
    options = SolverOptions(workers=2, seed=7, deterministic_time=0.05)
    first = solve_model(scenario.problem, scenario.model, options)
    second = solve_model(scenario.problem, scenario.model, options)
    assert (first.final == second.final).all()
    assert [b.status for b in first.buckets] == [b.status for b in second.buckets]
    assert "time_limit" not in [first.termination, *(b.termination for b in first.buckets)]
