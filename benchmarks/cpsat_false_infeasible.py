"""A 29-constraint model that CP-SAT calls INFEASIBLE although it has a solution.

Run ``python benchmarks/cpsat_false_infeasible.py``: it builds the model, solves it with
CP-SAT's presolve off (the search alone) and on, under seeds 0 to 3, then checks in exact
integers the solution written out below. Cut down from a leximin step of memory
utilizations (coefficients near 1e9, values near 1.6e15) on which CP-SAT 9.15 answered
INFEASIBLE while the solve held an assignment meeting every constraint
(benchmarks/RESULTS.md, 2026-12-02). Why the session never takes such an answer for a proof:
``Session._doubted``.
"""

from __future__ import annotations

import ortools
from ortools.sat.python import cp_model

L1 = 1631019810816853  # the levels the leximin steps had frozen
L2 = L1 - 1
L3 = 1624451614893360
BIG, MID, SMALL = 7330028585, 3664979340, 1832480932  # K / capacity, per item
ITEMS = [  # (coefficient, upper bound of the load)
    (BIG, 262140), (BIG, 262140), (BIG, 262140), (SMALL, 1048575), (MID, 524285),
    (BIG, 262140), (SMALL, 1048575), (MID, 524285), (SMALL, 1048575)]


def build() -> tuple[cp_model.CpModel, dict[str, list]]:
    cp = cp_model.CpModel()
    x = [cp.new_int_var(0, hi, f"x{i}") for i, (_, hi) in enumerate(ITEMS)]
    f = [c * v for (c, _), v in zip(ITEMS, x)]
    a = [cp.new_bool_var(f"a{i}") for i in range(9)]  # at the first level, at most 2
    b = [cp.new_bool_var(f"b{i}") for i in range(9)]  # at the second level, at least 3
    c = [cp.new_bool_var(f"c{i}") for i in range(9)]  # at the third level, at most 4
    level = cp.new_int_var(0, L3 - 1, "level")
    cp.add(sum(a) <= 2)
    for i in (0, 1, 2, 5):
        cp.add(f[i] <= L1 - 1).only_enforce_if(~a[i])
    for i in range(9):
        cp.add(f[i] >= L2).only_enforce_if(b[i])
    cp.add(sum(b) >= 3)
    for i in (0, 1, 2, 5):
        cp.add(f[i] >= L3).only_enforce_if(c[i])
    for i in (6, 7, 8):
        cp.add(f[i] <= L3 - 1).only_enforce_if(~c[i])
    cp.add(sum(c) <= 4)
    for i in range(6):
        cp.add(f[i] - level <= 0).only_enforce_if(~c[i])
    return cp, {"x": x, "a": a, "b": b, "c": c, "level": [level]}


def solution() -> dict[str, list[int]]:
    """Three loads of the SMALL items at 890061 (K·u exactly L2), at the second and third
    levels; everything else 0."""
    x = [0] * 9
    for i in (3, 6, 8):
        x[i] = 890061
    marks = [1 if i in (3, 6, 8) else 0 for i in range(9)]
    return {"x": x, "a": [0] * 9, "b": marks, "c": marks, "level": [0]}


def holds(cp: cp_model.CpModel, variables: dict[str, list], values: dict[str, list[int]]
          ) -> bool:
    """Every constraint of ``cp`` at ``values``, in Python's exact integers."""
    at = {v.index: value for name in variables
          for v, value in zip(variables[name], values[name])}
    for constraint in cp.proto.constraints:
        literals = list(constraint.enforcement_literal)
        if not all(at[lit] if lit >= 0 else 1 - at[-lit - 1] for lit in literals):
            continue
        linear = constraint.linear
        total = sum(at[v] * k for v, k in zip(linear.vars, linear.coeffs))
        if not linear.domain[0] <= total <= linear.domain[1]:
            return False
    for name, vs in variables.items():
        for v, value in zip(vs, values[name]):
            domain = list(cp.proto.variables[v.index].domain)
            if not domain[0] <= value <= domain[-1]:
                return False
    return True


def main() -> None:
    cp, variables = build()
    print(f"OR-Tools {ortools.__version__}; the solution below holds: "
          f"{holds(cp, variables, solution())}")
    for presolve in (False, True):
        statuses = []
        for seed in range(4):
            solver = cp_model.CpSolver()
            solver.parameters.num_workers = 1
            solver.parameters.random_seed = seed
            solver.parameters.cp_model_presolve = presolve
            statuses.append(solver.status_name(solver.solve(cp)))
        print(f"presolve {'on ' if presolve else 'off'}: seeds 0-3 -> {', '.join(statuses)}")


if __name__ == "__main__":
    main()
