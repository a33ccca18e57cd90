"""Probes: searches held at a level of a bucket's objective, from its bound up, for
objectives whose optimum the optimizing search approaches slowly."""

from __future__ import annotations

import time

from ortools.sat.python import cp_model

from ..cpsat.builder import TargetProbe
from ..cpsat.forms import Integerized
from .session import Session, bucket_values

PROBE_LEVELS = 8  # probe only objectives this close (in integer units) to their bound


PROBE_RANGE = 1000  # and only coarse ones (counts): a fine objective's bound is rarely tight


# a target probe's reduced assignment: LP-guided branching, steadier across seeds than
# CP-SAT's default branching
REDUCED_PARAMETERS: dict[str, object] = {"search_branching": "LP_SEARCH"}


def probe(session: Session, form: Integerized, incumbent: int, low: int,
           budget: float | None) -> tuple[int, int] | None:
    """Bound-first search for a bucket whose bound is a few integer levels below its
    incumbent (a count of containers, say): ask, level by level from the bound up, for a
    solution no worse than that level, searching depth first in first-fit-decreasing order.
    A solution there is optimal; a proof that there is none raises the bound by one.
    (The optimizing search tends to walk down from the incumbent one level at a time.)
    Only for coarse objectives (few levels in all, like a number of containers).
    Returns the new (incumbent, bound), or None when nothing was learnt."""
    if (incumbent - low > PROBE_LEVELS or form.hi - form.lo > PROBE_RANGE
            or budget is not None and budget <= 0.05):
        return None
    builder = session.builder
    started = time.monotonic()
    learnt = False
    while low < incumbent:
        left = None if budget is None else budget - (time.monotonic() - started)
        if left is not None and left <= 0.05:
            break
        gate = builder.cp.new_bool_var(f"probe{low}")
        builder.cp.add(form.expr <= low).only_enforce_if(gate)
        builder.fix(gate, 1)
        before = session.values
        status = session.depth_first(left)
        builder.fix(gate, 0)
        if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return low, low
        session.values = before
        if status != cp_model.INFEASIBLE:
            break
        low += 1
        learnt = True
    return (incumbent, low) if learnt else None


def target_probes(session: Session, form: Integerized, probes: list[TargetProbe],
                   budget: float) -> int | None:
    """Search a goal held at its relaxation's bound, then at the levels above it in turn
    (see TargetProbe), until one has a solution or time runs out: where that bound is the
    optimum or a level or two below it, as a knapsack relaxation's often is on assignment
    costs, the optimizing search walks down from its incumbent and may not get there in
    time. Each level is searched in its reduced assignment first (a far smaller search than
    the whole model held there); a level proven empty there is empty, and its gate stays
    false: the goal is above it for good. A candidate it finds is completed in the whole
    model, and should the model's other rules reject it, the whole model is searched held at
    the level.
    Returns the objective found (integer units), if any."""
    started = time.monotonic()
    builder = session.builder

    def left() -> float:
        return budget - (time.monotonic() - started)

    for probe in probes:
        if left() <= 0.05 or session.interrupted:
            break
        status, solver = session.solve_apart(probe.reduced, left(), REDUCED_PARAMETERS)
        if status == cp_model.INFEASIBLE:
            builder.fix(probe.gate, 0)
            continue
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            break  # out of time
        chosen = [var for literal, var in probe.pairs if solver.boolean_value(literal)]
        with builder.held(chosen, 1):
            status, solver = session.solve(form.expr, left(), probing=True)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            builder.fix(probe.gate, 1)
            status, solver = session.solve(form.expr, left(), probing=True)
            builder.fix(probe.gate, 0 if status == cp_model.INFEASIBLE else None)
        if status != cp_model.INFEASIBLE:
            return bucket_values(status, solver, form.expr, form.factor)[0]
    return None
