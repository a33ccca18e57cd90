"""A 16-variable model on which CP-SAT's presolve ends OPTIMAL above the true optimum.

Run ``python benchmarks/cpsat_false_optimal.py``: it builds the model, solves it with
CP-SAT's presolve on and off under seeds 0 to 3, and finds the optimum by enumerating
the 81 assignments in exact integers. The model is the compiled MAX balance of a tiny
scenario (4 objects on 3 hosts, sizes from 0.0014 to 6.4 with 15 digits, rounded at
10^9; each host's utilization times its integer factor, less the threshold): CP-SAT 9.15
with presolve answered OPTIMAL at 48135969780490 where 34632801200490 is reachable.
The exact closure (solve/closure.py) found the better assignment; why its own proofs do
not rest on presolve: ``Session.solve_excluding``, and ``bucket.finish`` for the proof
it refutes (benchmarks/RESULTS.md, 2026-12-03).

A second model, 2 objects on 3 hosts with two soft excesses (``build_excesses``), cut down
from a compiled LINEAR balance: presolve on, OPTIMAL at 20582059931471; off, 0 (the
objects off hosts 1 and 2). Why such claims on small models do not stand:
``Session._checked_optimum`` (benchmarks/RESULTS.md, 2026-12-05).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import ortools
from ortools.sat.python import cp_model

SIZES = [2934663, 6436210000, 7640000, 1440342]  # per object, integer units
SLOPES = [11352, 17886, 13450]  # per host: the integer factor over its capacity
THRESHOLD = 38431054719510  # the balance's threshold, in the same units
TOP = 76901897719920  # the maximum's declared upper bound


def build() -> tuple[cp_model.CpModel, list[list[cp_model.IntVar]], cp_model.IntVar]:
    cp = cp_model.CpModel()
    x = [[cp.new_int_var(0, 1, f"x{o}_{c}") for c in range(3)] for o in range(4)]
    for row in x:
        cp.add(sum(row) == 1)
    loads = [cp.new_int_var(0, sum(SIZES), f"load{c}") for c in range(3)]
    for c, load in enumerate(loads):
        cp.add(load == sum(s * x[o][c] for o, s in enumerate(SIZES)))
    top = cp.new_int_var(0, TOP, "max")
    cp.add(top >= 0)
    for slope, load in zip(SLOPES, loads):
        cp.add(top - slope * load >= -THRESHOLD)
    cp.minimize(top)
    return cp, x, top


def enumerated() -> int:
    """The optimum over the 3^4 assignments, in exact integers."""
    best = None
    for hosts in itertools.product(range(3), repeat=4):
        loads = [sum(s for s, h in zip(SIZES, hosts) if h == c) for c in range(3)]
        value = max(0, *(a * load - THRESHOLD for a, load in zip(SLOPES, loads)))
        best = value if best is None else min(best, value)
    return best


def build_excesses() -> tuple[cp_model.CpModel, cp_model.LinearExpr]:
    """Object a (size 1.76e13) on one of hosts 0-2, object b (2.885e10) counted on hosts 1
    and 2 freely (no rule ties it); each of those hosts has an excess over its load held
    from below by an integer rule (51·z1 >= 200·load1 - 2045487357288107, 29·z2 >= 100·load2 -
    1163120261987355); minimize their sum. Both excesses are 0 with a on host 0."""
    cp = cp_model.CpModel()
    a = [cp.new_bool_var(f"a{c}") for c in range(3)]
    b = [cp.new_bool_var(f"b{c}") for c in (1, 2)]
    cp.add(sum(a) == 1)
    loads = [cp.new_int_var(0, 23803602956957, f"load{c}") for c in (1, 2)]
    for k, load in enumerate(loads):
        cp.add(load == 17600000000000 * a[k + 1] + 28850000000 * b[k])
    z = [cp.new_int_var(0, 40013849309710, f"excess{c}") for c in (1, 2)]
    cp.add(51 * z[0] - 200 * loads[0] >= -2045487357288107)
    cp.add(29 * z[1] - 100 * loads[1] >= -1163120261987355)
    objective = z[0] + z[1]
    cp.minimize(objective)
    return cp, objective


def solve_under_seeds(build_model: Callable[[], tuple[cp_model.CpModel, object]]) -> None:
    """Print the model's status and objective with presolve on and off, seeds 0 to 3."""
    for presolve in (True, False):
        for seed in range(4):
            cp, objective = build_model()
            solver = cp_model.CpSolver()
            solver.parameters.num_workers = 1
            solver.parameters.random_seed = seed
            solver.parameters.cp_model_presolve = presolve
            status = solver.solve(cp)
            print(f"presolve {'on ' if presolve else 'off'} seed {seed}: "
                  f"{solver.status_name(status)} {int(solver.value(objective))}")


def main() -> None:
    print(f"ortools {ortools.__version__}; optimum by enumeration: {enumerated()}")
    solve_under_seeds(lambda: build()[::2])  # (the model and its maximum)
    print("two excesses; optimum 0 (object a on host 0):")
    solve_under_seeds(build_excesses)


if __name__ == "__main__":
    main()
