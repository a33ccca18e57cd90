"""Compiler and evaluator agree: with the assignment fixed, the objective CP-SAT sees for
each bucket equals the evaluator's value within the stated scaling/PWL error."""

from __future__ import annotations

import random

import numpy as np
import pytest
from randomized import random_scenario

from cpsat_rebalancer import evaluate, parse_scenario
from cpsat_rebalancer.generators import balance_instance, scale_instance
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve.check import compiled_values
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.pipeline import solve_model


def allowed_random_final(scenario, rng: random.Random) -> np.ndarray | None:
    """A random assignment that respects fixed objects and non-accepting containers and
    keeps every hard constraint (else the fixed compiled model would be infeasible)."""
    problem, model = scenario.problem, scenario.model
    fixed, closed = model.fixed_objects, model.non_accepting
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


def test_squares_balance_on_wide_containers_is_exact_above_its_threshold() -> None:
    """Hosts of 1,700 load units: SQUARES' excess is zero below the threshold, so the
    breakpoints go to every integer above it (exact), not 64 segments over the whole
    host, whose stated error exceeded the value itself at 50000x1000."""
    scenario = parse_scenario(balance_instance(3000, 10, "SQUARES", seed=0))
    problem, model = scenario.problem, scenario.model
    assert problem.container_scope.capacities["cpu"].max() > 1000
    final = allowed_random_final(scenario, random.Random(0))
    values, canonical = compiled_values(problem, model, final)
    compiled, error = values[0]
    assert error < 1e-4  # (64 segments over the whole host: 0.023, on a value of 0.119)
    exact = evaluate(problem, model, canonical).positions[0]
    assert exact > 0.01 and compiled == pytest.approx(exact, abs=error + 1e-9)


def test_many_distinct_capacities_give_a_model_cp_sat_accepts() -> None:
    """A LINEAR balance over 120 hosts of distinct prime capacities: exact only at a scale
    of 10^17 per host, whose domains sum past CP-SAT's 64 bits (it rejected the model,
    as at 50000x1000 racks); rounded to 12 digits, the stated error stays far below
    anything the evaluator distinguishes, and the solve agrees with it."""
    primes = [p for p in range(200, 2000) if all(p % d for d in range(2, int(p**0.5) + 1))]
    hosts = [f"h{i}" for i in range(120)]
    rng = random.Random(1)
    sizes = {f"t{k}": float(rng.randint(1, 9)) for k in range(600)}
    assignment = {h: [] for h in hosts}
    for k, task in enumerate(sizes):
        assignment[hosts[(k * 7) % 40]].append(task)  # skewed onto the first 40
    data = {
        "assignment": assignment, "objectDimensions": {"cpu": sizes},
        "containerDimensions": {"cpu": dict(zip(hosts, map(float, primes[:120])))},
        "goals": [{"spec": {"balanceSpec": {"name": "b", "dimension": "cpu"}}}],
    }
    scenario = parse_scenario(data)
    builder, _ = compile_model(scenario.problem, scenario.model)
    assert builder.cp.validate() == ""
    result = solve_model(scenario.problem, scenario.model,
                         SolverOptions(time_limit=20, workers=2))
    assert result.status in ("OPTIMAL", "FEASIBLE")
    values, canonical = compiled_values(scenario.problem, scenario.model, result.final)
    compiled, error = values[0]
    exact = evaluate(scenario.problem, scenario.model, canonical).positions[0]
    assert error < 1e-7
    assert abs(compiled - exact) <= error


def test_a_balances_stated_error_is_of_its_mean_not_its_sum() -> None:
    """SQUARES over 100 hosts: each host's pieces are exact up to their values' last digit
    (1e-9), and the balance is their mean, so that is its error too. Stated 100 times too
    large, the error widened the freeze of the balance enough for the movement bucket to
    trade balance for moves (10000x500: 1e-6 worse than local search's)."""
    scenario = parse_scenario(balance_instance(2000, 100, "SQUARES", seed=0))
    _, buckets = compile_model(scenario.problem, scenario.model)
    assert 0 < buckets[0].error <= 1.01e-9
    # UtilIncreaseCost (the drain's position 1) is a mean over its items as well
    drain = parse_scenario(scale_instance("drain", 2000, 100, seed=0))
    _, buckets = compile_model(drain.problem, drain.model)
    assert 0 < buckets[1].error <= 1.01e-9
