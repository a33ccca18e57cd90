"""A trivial model on which CP-SAT's new linear propagation runs past every limit.

Run ``python benchmarks/cpsat_hang.py``: ten integer variables, six linear constraints of two
terms, an objective whose optimum is 0 at the all-zero point; CP-SAT is given 1.5 s and one
worker. With ``new_linear_propagation`` on (CP-SAT's default) the solve does not return: it
is run in a child process, killed after ``PATIENCE`` seconds, its memory growing meanwhile.
With it off, the same solve is OPTIMAL at once. A solve that does not look at its limits
ignores ``stop_search`` too, so no watchdog in the process can end it, and a run's time limit
would not hold. The model is the load relaxation of the drawn shape 125 at 10 objects x 3
hosts (a LINEAR balance over heavy-tailed sizes near 1e9 beside a ToFree rule), reduced to
the constraints that keep it hanging. Why a run never meets it: ``cpsat_parameters.new_solver``
turns that propagation off for every solve of the engine.
"""

from __future__ import annotations

import multiprocessing
import time

import ortools
from ortools.sat.python import cp_model

PATIENCE = 10.0  # seconds a 1.5 s solve may take before it is called hung
SLOPE = 524288  # the objective's parts, counted in whole multiples of 2^19


def model() -> cp_model.CpModel:
    """Two loads share a total; each one's excess over a level, counted in whole multiples of
    2^19 (rounded up), is the cost. The optimum splits the total evenly."""
    cp = cp_model.CpModel()
    total, level = 2197298556328522, 805676137320458
    loads = [cp.new_int_var(0, total, f"load{i}") for i in range(2)]
    cp.add(sum(loads) == total)
    parts = []
    for i, load in enumerate(loads):
        excess = cp.new_int_var(0, 616777127642114, f"excess{i}")
        part = cp.new_int_var(0, 1176409011, f"part{i}")
        cp.add(excess >= load - level)
        cp.add(SLOPE * part >= excess - (SLOPE - 1))
        parts.append(part)
    cp.minimize(119302859 * sum(parts))
    return cp


def solve(new_linear_propagation: bool, out: multiprocessing.Queue) -> None:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 1.5
    solver.parameters.new_linear_propagation = new_linear_propagation
    status = solver.solve(model())
    out.put(f"{solver.status_name(status)} at {solver.objective_value:.0f}")


def main() -> None:
    print(f"ortools {ortools.__version__}; a 1.5 s solve, one worker")
    for setting in (True, False):
        out: multiprocessing.Queue = multiprocessing.Queue()
        child = multiprocessing.Process(target=solve, args=(setting, out))
        started = time.monotonic()
        child.start()
        child.join(PATIENCE)
        seconds = time.monotonic() - started
        if child.is_alive():
            child.kill()
            child.join()
            answer = f"no answer after {seconds:.1f} s: killed"
        else:
            answer = f"{out.get()} in {seconds:.2f} s"
        print(f"new_linear_propagation={setting}: {answer}")


if __name__ == "__main__":
    main()
