"""Time limits hold on shapes whose CP-SAT model once made CP-SAT overrun them."""

from __future__ import annotations

import time

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.api import solve_scenario
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve.compile import compile_model

# a SQUARES rack balance over heavy-tailed decimal sizes: its pieces are coarsened through a
# division whose numerator was the rack's whole load sum
SHAPE_SEED = 4


def test_nonlinear_constraints_take_single_variables() -> None:
    """CP-SAT computes the domain of a weighted sum inside a division, maximum or product as
    every value its terms can make (exponential, and deaf to the time limit): each such
    argument is one variable, or a sum of unit terms (whose values are an interval)."""
    scenario = parse_scenario(random_shape_scenario(100, 10, SHAPE_SEED))
    builder, _ = compile_model(scenario.problem, scenario.model)
    proto = builder.cp.proto
    checked = 0
    for constraint in proto.constraints:
        for kind in ("int_div", "lin_max", "int_prod"):
            if getattr(constraint, f"has_{kind}")():
                part = getattr(constraint, kind)
                for expr in [part.target, *part.exprs]:
                    assert len(expr.vars) <= 1 or all(abs(c) == 1 for c in expr.coeffs), (
                        kind, list(expr.vars), list(expr.coeffs))
                checked += 1
    assert checked > 0  # the shape does build such constraints


def test_the_time_limit_holds_on_that_shape() -> None:
    """It ran 27 s under a 10 s limit, and never returned at 400x20."""
    scenario = parse_scenario(random_shape_scenario(100, 10, SHAPE_SEED))
    started = time.monotonic()
    result = solve_scenario(scenario, SolverOptions(time_limit=3, workers=2, seed=0))
    assert time.monotonic() - started < 3 + 2.0
    assert result.final_evaluation.feasible or result.status == "INFEASIBLE"
