"""Moves: the count of objects moved as a form, the fewest moves at the optima, and the floor
a proven floor on moves implies for a movement bucket."""

from __future__ import annotations

import math
import time
from fractions import Fraction

from ortools.sat.python import cp_model, cp_model_helper

from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Integerized
from ..cpsat_parameters import new_solver
from ..evaluate import evaluate
from .positions import EXACT, FLOAT_NOISE
from .session import Session


def moved_objects(builder: CpBuilder) -> object:
    """The number of objects that change container (stays per class and container)."""
    stays = builder.stay_counts(builder.problem.container_scope)
    return builder.problem.num_objects - sum(expr for expr, _ in stays.values())


def fewest_moves(session: Session, started: float) -> None:
    """Among assignments that keep every bucket's frozen value, move the fewest objects:
    an optimum that moves an object for no gain is not what a user wants applied. Uses only
    time left over, and at most about half the time spent so far (at least a second): a
    polish must not turn a 2-second proof into a full time limit (in a deterministic run,
    the same share of the deterministic time spent, at least shares.tie_break_work). Never
    changes a bucket's compiled value beyond its stated error (the caller keeps the answer
    only where the evaluator ranks it no worse)."""
    shares = session.budget
    moved = moved_objects(session.builder)
    budget = session.wall_limit(max(1.0, shares.tie_break_share * (time.monotonic() - started)))
    if budget is not None and budget <= 0.01:
        return
    moves = session.moves()
    if session.moved_floor > 0 and moves <= session.moved_floor:
        return  # already at the proven floor on moves: a search could only confirm it
    before = list(session.values)
    session.builder.relax_symmetry()
    status, _ = session.solve(moved, budget,
                              max(shares.tie_break_work, shares.tie_break_share * session.work))
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        session.values = before


def implied_floor(builder: CpBuilder, form: Integerized, moved_floor: int) -> int:
    """A lower bound on the form from the proven floor on moves, when the form is
    a·moves + b with a > 0 (a movement bucket): CP-SAT's own bound comes from its LP, which
    may not even finish on large models. The form's lowest value otherwise."""
    moved = moved_objects(builder) if moved_floor > 0 else 0
    if isinstance(form.expr, int) or isinstance(moved, int):
        return form.lo
    by_var, form_offset = _expanded(builder, form.expr)
    moved_by_var, moved_offset = _expanded(builder, moved)
    offset = Fraction(form_offset)
    # the containers' loads of a dimension always sum to its total: a form that reads all of
    # them with one coefficient (MOVED = AFTER + INITIAL - 2 STAYED) reads a constant there
    for dim, loads in builder.container_loads().items():
        if dim in builder.problem.dynamic_dims:  # sizes depend on where: no constant total
            continue
        indices = [load.Index() for load in loads]
        coefs = {by_var.get(i) for i in indices}
        if len(coefs) == 1 and None not in coefs and not any(i in moved_by_var
                                                             for i in indices):
            offset += coefs.pop() * int(builder.scale(dim).values.sum())
            for i in indices:
                del by_var[i]
    if not by_var or by_var.keys() != moved_by_var.keys():
        return form.lo
    ratios = {Fraction(c, moved_by_var[v]) for v, c in by_var.items()}
    if len(ratios) != 1:
        return form.lo
    (ratio,) = ratios
    if ratio <= 0:
        return form.lo
    offset -= ratio * moved_offset
    return max(form.lo, math.ceil(ratio * moved_floor + offset))


def _expanded(builder: CpBuilder, expr: object) -> tuple[dict[int, int], int]:
    """``expr`` as coefficients per variable index and an offset, with each STAYED variable
    replaced by the stay counts it stands for (a movement form reads those variables)."""
    flat = cp_model_helper.FlatIntExpr(expr)
    by_var: dict[int, int] = {}
    offset = int(flat.offset)
    for var, coef in zip(flat.vars, flat.coeffs):
        definition = builder.stayed_definitions.get(var.index)
        if definition is None:
            by_var[var.index] = by_var.get(var.index, 0) + coef
            continue
        inner, inner_offset = _expanded(builder, definition)
        offset += coef * inner_offset
        for index, inner_coef in inner.items():
            by_var[index] = by_var.get(index, 0) + coef * inner_coef
    return {v: c for v, c in by_var.items() if c}, offset


def start_excluded(session: Session, position: int, seconds: float) -> bool:
    """Whether no answer can be the start: it breaks a hard rule or is worse than the
    assignment held at a position before ``position`` (the evaluator's word, beyond
    relative EXACT), and the model as frozen so far rules it out (CP-SAT, with every count
    fixed at the start, finds no solution within ``seconds``). Every answer then moves an
    object: a floor the loads alone may not give, where a soft term or a rule on groups is
    what excludes the start."""
    builder = session.builder
    if session.values is None or builder.symmetry is not None or seconds <= 0.01:
        return False
    problem = builder.problem
    start = evaluate(problem, session.model, problem.initial)
    held = evaluate(problem, session.model, session.decode())
    worse = any(start.positions.get(p, 0.0) > value + EXACT * abs(value) + FLOAT_NOISE
                for p, value in held.positions.items() if p < position)
    if start.feasible and not worse:
        return False
    cp = builder.cp.clone()
    cp.clear_objective()
    cp.clear_hints()
    hint = cp.proto.solution_hint
    hint.vars.extend([var.Index() for var in builder.count_vars])
    hint.values.extend([int(count) for count in builder.initial_counts()])
    solver = new_solver()
    session.presolve(solver.parameters)
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = session.options.workers
    solver.parameters.random_seed = session.options.seed
    session.limit(solver.parameters, session.wall_limit(seconds), seconds)
    return session.run(solver, cp) == cp_model.INFEASIBLE
