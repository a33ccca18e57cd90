"""A model whose optimum CP-SAT states above a point it accepts as feasible.

Run ``python benchmarks/cpsat_false_bound.py``: it builds the load relaxation of position 1
of the drawn shape 395 at 4 objects x 2 hosts (a SQUARES balance over DURING utilization,
whose threshold moves with the assignment; a HARD movement rule beside it), solves it with
CP-SAT under several settings, then fixes every variable to the full model's optimum and
solves again: that point is feasible and its objective is below the "optimal" one. Found
when the relaxation began to keep movement rules (benchmarks/RESULTS.md, 2026-12-06). Why
a run never reports such a bound: ``bucket.solve_bucket`` drops a relaxation bound that a
solution it holds lies below (the search then proves the bucket), and ``check`` refuses a
bound above the incumbent.
"""

from __future__ import annotations

import ortools
from ortools.sat.python import cp_model

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.cpsat.linear import lin_sum
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve.accelerate.relaxation import loads_model, split_constraints
from cpsat_rebalancer.solve.compile import compile_model

SETTINGS = [{}, {"cp_model_presolve": False}, {"random_seed": 1}, {"linearization_level": 0},
            {"symmetry_level": 0}]


def solved(model: cp_model.CpModel, **parameters: object
           ) -> tuple[cp_model.CpSolverStatus, float, list[int]]:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    for name, value in parameters.items():
        setattr(solver.parameters, name, value)
    status = solver.solve(model)
    return status, solver.objective_value, list(solver.response_proto.solution)


def main() -> None:
    scenario = parse_scenario(random_shape_scenario(4, 2, 395))
    builder, buckets = compile_model(scenario.problem, scenario.model)
    form = builder.integerize(lin_sum(buckets[1].terms))
    builder.cp.minimize(form.expr)
    status, optimum, point = solved(builder.cp)  # the full model's optimum
    assert status == cp_model.OPTIMAL
    kept, _, _ = split_constraints(builder)
    loads = builder.container_loads()
    relaxation = loads_model(builder, kept, loads, list(loads))
    relaxation.minimize(form.expr)
    print(f"ortools {ortools.__version__}; the full model's optimum: {optimum:.0f}")
    for parameters in SETTINGS:
        status, value, _ = solved(relaxation, **parameters)
        print(f"relaxation {parameters or 'default'}: {status.name} at {value:.0f}")
    fixed = relaxation.clone()
    for value, variable in zip(point, fixed.Proto().variables):
        variable.domain.clear()
        variable.domain.extend([value, value])
    status, value, _ = solved(fixed)
    print(f"the full optimum's point in the relaxation: {status.name} at {value:.0f}")
    capped = relaxation.clone()
    capped.add(form.expr <= round(optimum))
    status, value, _ = solved(capped)
    print(f"the relaxation with its objective capped there: {status.name} at "
          f"{value:.0f}")


if __name__ == "__main__":
    main()
