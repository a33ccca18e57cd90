"""A load that CP-SAT's presolve fixes at 0, every feasible solution kept, where a solution
leaves it above 0.

Run ``python benchmarks/cpsat_false_domain.py``: it compiles the drawn shape 2912 at 7
objects x 3 hosts (ToFree's occupied containers, a SOFT CapacityWithGroupPresence, two
closed hosts), runs presolve alone as the load limits read it (``repair.presolved_bounds``:
no objective, ``keep_all_feasible_solutions_in_presolve``, the tightened domains in the
response), prints host1's cpu load domain, then solves the model with the initial
assignment's counts fixed: a solution whose host1 load lies outside that domain. Found by
the drawn-shape sweeps (benchmarks/RESULTS.md, 2026-12-07). Why a run no longer acts on
such a domain: the bounds are taken only where the assignment held keeps them.
"""

from __future__ import annotations

import ortools
from ortools.sat.python import cp_model

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve.compile import compile_model


def main() -> None:
    scenario = parse_scenario(random_shape_scenario(7, 3, 2912))
    problem = scenario.problem
    builder, _ = compile_model(problem, scenario.model)
    load = builder.container_loads()["cpu"][1]
    presolved = builder.cp.clone()
    presolved.clear_objective()
    solver = cp_model.CpSolver()
    for name, value in (("stop_after_presolve", True),
                        ("fill_tightened_domains_in_response", True),
                        ("keep_all_feasible_solutions_in_presolve", True),
                        ("presolve_substitution_level", 0), ("num_workers", 1)):
        setattr(solver.parameters, name, value)
    solver.solve(presolved)
    domain = list(solver.response_proto.tightened_variables[load.Index()].domain)
    print(f"ortools {ortools.__version__}; presolve's domain of {load.Name()}: {domain}")
    fixed = builder.cp.clone()
    for variable, count in zip(builder.count_vars, builder.counts_of(problem.initial)):
        fixed.add(fixed.get_int_var_from_proto_index(variable.Index()) == count)
    check = cp_model.CpSolver()
    check.parameters.num_workers = 1
    status = check.solve(fixed)
    print(f"with the initial assignment's counts: {check.status_name(status)}, "
          f"{load.Name()} = {check.value(fixed.get_int_var_from_proto_index(load.Index()))}")


if __name__ == "__main__":
    main()
