"""Compiler and evaluator agree: with the assignment fixed, the objective CP-SAT sees for
each bucket equals the evaluator's value within the stated scaling/PWL error."""

from __future__ import annotations

import random

import numpy as np
import pytest
from randomized import random_scenario

from cpsat_rebalancer import evaluate, parse_scenario
from cpsat_rebalancer.cpsat.driver import compiled_values, restrictions_of


def allowed_random_final(scenario, rng: random.Random) -> np.ndarray | None:
    """A random assignment that respects fixed objects and non-accepting containers and
    keeps every hard constraint (else the fixed compiled model would be infeasible)."""
    problem, model = scenario.problem, scenario.model
    fixed, closed = restrictions_of(problem, model)
    for _ in range(50):
        final = problem.initial.copy()
        for obj in range(problem.num_objects):
            if obj in fixed or rng.random() < 0.5:
                continue
            target = rng.randrange(problem.num_containers)
            if target not in closed:
                final[obj] = target
        if evaluate(problem, model, final).feasible:
            return final
    return None


@pytest.mark.parametrize("seed", range(40))
def test_compiled_objective_matches_the_evaluator(seed: int) -> None:
    scenario = parse_scenario(random_scenario(seed))
    final = allowed_random_final(scenario, random.Random(seed))
    if final is None:
        pytest.skip("no feasible random assignment for this scenario")
    values, canonical = compiled_values(scenario.problem, scenario.model, final)
    evaluation = evaluate(scenario.problem, scenario.model, canonical)
    assert (np.bincount(canonical, minlength=scenario.problem.num_containers)
            == np.bincount(final, minlength=scenario.problem.num_containers)).all()
    for position, (compiled, error) in values.items():
        exact = evaluation.positions.get(position, 0.0)
        tolerance = error + 1e-9 * max(1.0, abs(exact))
        assert compiled == pytest.approx(exact, abs=tolerance), (
            f"seed {seed} position {position}: compiled {compiled} vs evaluator {exact}")
