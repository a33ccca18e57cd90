"""Explain an infeasible model: a small set of hard rules that cannot hold together."""

from __future__ import annotations

import time

from ortools.sat.python import cp_model

from ..cpsat_parameters import new_solver
from ..problem import Problem
from ..scenario import Model, SolverOptions
from .compile import compile_model
from .session import run_solver


def explain_infeasibility(problem: Problem, model: Model, options: SolverOptions,
                          seconds: float) -> list[str]:
    """A small set of hard rules that cannot hold together, one line per spec: each hard rule
    and restriction is guarded by an assumption; CP-SAT names a sufficient subset, which is
    then shrunk by deletion while time allows."""
    if seconds <= 0:
        return ["(not explained: no time left)"]
    deadline = time.monotonic() + seconds  # (the guarded model's compile counts in it)
    guards: list[tuple[object, str, str]] = []
    builder, _ = compile_model(problem, model, guards=guards)
    cp = builder.cp

    def infeasible(chosen: list[int]) -> bool | None:
        cp.clear_assumptions()
        cp.add_assumptions([guards[i][0] for i in chosen])
        solver = new_solver()
        solver.parameters.num_workers = 1
        solver.parameters.random_seed = options.seed
        # the LP's full linearization (guarded rules included): a count argument, such as
        # more groups than places for them, is there at once, where a search takes minutes
        solver.parameters.linearization_level = 2
        solver.parameters.max_time_in_seconds = max(0.01, deadline - time.monotonic())
        status, interrupted = run_solver(solver, cp)
        if interrupted:
            return None
        if status == cp_model.INFEASIBLE:
            nonlocal last
            last = solver
            return True
        return False if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None

    last: cp_model.CpSolver | None = None
    everything = list(range(len(guards)))
    if not infeasible(everything):
        return ["(the conflict could not be isolated in time)"]
    index_of = {guard[0].Index(): i for i, guard in enumerate(guards)}
    core = sorted({index_of[abs(v)] for v in last.sufficient_assumptions_for_infeasibility()
                   if abs(v) in index_of}) or everything
    for i in list(core):  # deletion: drop every guard the conflict does not need
        if time.monotonic() >= deadline or len(core) == 1:
            break
        trial = [j for j in core if j != i]
        verdict = infeasible(trial)
        if verdict is None:  # out of time or interrupted: report the set as it stands
            break
        if verdict:
            core = trial
    by_spec: dict[str, list[str]] = {}
    for i in core:
        _, name, what = guards[i]
        by_spec.setdefault(name, [])
        if what:
            by_spec[name].append(what)
    return [f"{name}: {', '.join(parts)}" if parts else name for name, parts in by_spec.items()]
