"""The solver's final tuple equals the lexicographic minimum found by enumeration."""

from __future__ import annotations

import math

import pytest
from randomized import brute_force, leximin_less, random_scenario

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.result import INFEASIBLE, OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve.pipeline import solve_model

OPTIONS = SolverOptions(workers=1, seed=0)


def check_against_enumeration(data: dict, seed: int | str) -> None:
    scenario = parse_scenario(data)
    feasible = brute_force(scenario)
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    if not feasible:
        assert result.status == INFEASIBLE, f"seed {seed}: enumeration finds nothing"
        return
    assert result.status == OPTIMAL, f"seed {seed}: {result.status}"
    assert result.final_evaluation.feasible
    candidates = feasible
    evaluation = result.final_evaluation
    # Past a position with an approximation error, the assignments the solver may keep are
    # those within that error of its optimum as compiled, not as evaluated: the candidates
    # within the error (evaluated) are a superset, so later positions are checked only for
    # never beating them (seed 1122: a SQUARES position 0.004 above the best, within its
    # stated 0.034, leaves the next position at 0.051 where another assignment in the band
    # has 0).
    exact_so_far = True
    for report in result.buckets:
        p = report.position
        tol = 1e-9 + 1e-9 * abs(report.objective) + report.approximation_error
        if p in evaluation.leximin:
            best = candidates[0][1].leximin[p]
            for _, ev in candidates[1:]:
                if leximin_less(ev.leximin[p], best, 1e-9) < 0:
                    best = ev.leximin[p]
            ours = evaluation.leximin[p]
            order = leximin_less(ours, best, tol)
            assert order == 0 if exact_so_far else order >= 0, (
                f"seed {seed} position {p}: leximin {ours} vs enumeration {best}\n{data}")
            candidates = [c for c in candidates if leximin_less(c[1].leximin[p], best, tol) == 0]
        else:
            best = min(ev.positions.get(p, 0.0) for _, ev in candidates)
            ours = evaluation.positions.get(p, 0.0)
            assert not math.isnan(ours)
            assert not exact_so_far or ours <= best + tol, (
                f"seed {seed} position {p}: ours {ours} > optimum {best} (tol {tol})\n{data}")
            assert ours >= best - tol, (
                f"seed {seed} position {p}: ours {ours} below enumeration {best}\n{data}")
            candidates = [c for c in candidates if c[1].positions.get(p, 0.0) <= best + tol]
        exact_so_far = exact_so_far and report.approximation_error == 0


@pytest.mark.parametrize("seed", range(60))
def test_small_random_instances_match_enumeration(seed: int) -> None:
    check_against_enumeration(random_scenario(seed, max_objects=5), seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1000, 1150))
def test_seven_object_instances_match_enumeration(seed: int) -> None:
    check_against_enumeration(random_scenario(seed, max_objects=7), seed)
