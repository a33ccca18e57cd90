"""Same input, seed, worker count and deterministic budget: the same assignment."""

from __future__ import annotations

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.cpsat.driver import solve_model
from cpsat_rebalancer.generators import balance_instance
from cpsat_rebalancer.scenario import SolverOptions


def test_deterministic_budget_repeats_the_assignment() -> None:
    scenario = parse_scenario(balance_instance(120, 8, "SQUARES", seed=3))
    options = SolverOptions(workers=2, seed=11, deterministic_time=0.1)
    first = solve_model(scenario.problem, scenario.model, options)
    second = solve_model(scenario.problem, scenario.model, options)
    assert (first.final == second.final).all()
    assert [b.objective for b in first.buckets] == [b.objective for b in second.buckets]
