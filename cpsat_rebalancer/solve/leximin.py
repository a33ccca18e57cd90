"""An IDEAL goal alone in its bucket, ordered leximin: one distinct value of the sorted
vector of relative utilizations at a time, each frozen before the next."""

from __future__ import annotations

import math
import time
from fractions import Fraction

from ortools.sat.python import cp_model

from ..cpsat.forms import Integerized
from ..cpsat.pwl import expr_value
from ..result import FEASIBLE, NO_SOLUTION, OPTIMAL, BucketReport
from . import closure
from .accelerate import descend_leximin, held_repair, polish_leximin, step_start
from .positions import FLOAT_NOISE, Bucket
from .session import Session, bucket_report, bucket_values


def solve_leximin(session: Session, bucket: Bucket, budget: float | None) -> BucketReport:
    """Leximin of the relative utilizations, one distinct value of the sorted vector at a
    time: the smallest value v that all items but the ``above`` already placed can stay
    under, then the fewest items at v or more; each frozen before the next. Two solves per
    distinct value rather than one per item (the k largest summed, k = 1..n): the vector
    usually has a handful of distinct values and far more items."""
    builder = session.builder
    forms = builder.integerize_all(bucket.leximin, divide=True)
    n = len(forms)
    factor = forms[0].factor
    lo = min(f.lo for f in forms)
    hi = max(f.hi for f in forms)
    deadline = None if budget is None else time.monotonic() + budget
    item_error = bucket.error + max(f.error for f in forms)
    if closure.wanted(session, bucket, item_error, None) and item_error > FLOAT_NOISE:
        # rounded items: their leximin order need not be the evaluator's, but few enough
        # assignments may beat the held one to list them all (within the noise, the floors
        # settle compares the answer with seldom leave a gap: see leximin_floors)
        closed = closure.close_leximin(session, bucket, forms, item_error, session.wall_limit(
            None if budget is None else session.budget.closure_share * budget))
        if closed is not None and closed.complete:
            builder.cp.add_allowed_assignments(builder.count_vars, closed.ties)
            report = bucket_report(bucket.position, cp_model.OPTIMAL, None, None,
                                   bucket.error + sum(f.error for f in forms))
            report.leximin_levels = report.leximin_items = n
            return report
    # the part of the time left a level may take: less when a polish follows the levels (an
    # accelerator: off when the loads are not variables)
    level_fraction = session.budget.level_share if bucket.scalar and builder.accelerate else 1.0
    proven = 0  # leading entries of the sorted vector proven (leximin-optimal)
    above: list[object] | None = None  # per item, true when it may lie above the next value
    ceiling = hi
    value = bound = None  # the first entry not proven: its value held and its bound
    complete = False
    while True:
        share = None if deadline is None else (deadline - time.monotonic()) * level_fraction
        if share is not None and share <= 0.05:
            break
        session.progress.phase(f"leximin: the largest value left (entry {proven + 1} of {n})")
        level, status, bound = leximin_value(session, forms, above, lo, ceiling, share)
        if level is None:
            if status == cp_model.INFEASIBLE:
                return bucket_report(bucket.position, status, None, None, bucket.error)
            value = bound = None
            break
        value = float(Fraction(level) / factor)
        if status != cp_model.OPTIMAL:
            break
        proven += 1
        share = None if deadline is None else (deadline - time.monotonic()) * level_fraction
        if share is not None and share <= 0.05:
            break
        session.progress.phase("leximin: the fewest items at that value")
        above, count, count_proven = leximin_count(session, forms, level, proven, share)
        if count is None:
            break
        # the count's lower bound holds in every assignment: entries up to it are at level
        proven = max(proven, count_proven)
        if proven >= count:
            proven = count
            value = bound = None
            if count >= n:
                complete = True
                break
            ceiling = level - 1
            continue
        bound = None  # the next entry may lie below this level once fewer items sit there
        break
    if not complete and session.values is not None and deadline and builder.accelerate:
        descend_leximin(session, bucket, deadline)
        if bucket.scalar:
            polish_leximin(session, bucket, deadline - time.monotonic())
    error = bucket.error + sum(f.error for f in forms)
    exact = complete and not error
    if complete and error:
        bucket.leximin_floors = leximin_floors(session, forms, item_error)
    worst = OPTIMAL if exact else (FEASIBLE if session.values is not None else NO_SOLUTION)
    report = bucket_report(bucket.position, cp_model.OPTIMAL if complete else cp_model.FEASIBLE,
                     None, None, error)
    report.status = worst
    if complete and not exact:
        report.termination = "approximated"
    report.leximin_levels = proven
    report.leximin_items = n
    report.leximin_level_value = value
    report.leximin_level_bound = bound
    return report


def leximin_floors(session: Session, forms: list[Integerized], item_error: float
                   ) -> list[float] | None:
    """A rounded leximin order's floors, for ``check.settle`` to judge the final vector on
    the exact values as it judges a scalar bucket within its error: the sorted compiled
    items held, each less ``item_error`` (once the entries before it are held, no
    assignment's exact entry lies lower). None when not every value is held."""
    if not session.held_whole():
        return None
    levels = (Fraction(expr_value(f.expr, session.values)) / f.factor for f in forms)
    return [float(level) - item_error for level in sorted(levels, reverse=True)]


def leximin_value(session: Session, forms: list[Integerized], above: list[object] | None,
                   lo: int, ceiling: int, share: float | None
                   ) -> tuple[int | None, int, float | None]:
    """The smallest value that every item not marked ``above`` stays at or under (None:
    every item, the largest of all), frozen at what was found. Returns that value (integer
    units), the solve's status and its proven bound (user's scale)."""
    builder = session.builder
    level = builder.cp.new_int_var(lo, max(lo, ceiling), "leximin_value")
    session.progress.show(level, forms[0].factor, lo)
    floor = lo
    bounded = []
    for index, f in enumerate(forms):
        bounded.append(builder.cp.add(f.expr <= level))
        if above is not None:
            bounded[-1].only_enforce_if(~above[index])
    if builder.accelerate:
        # a MAX balance of the items not above: the load relaxation's bound, and the held
        # assignment repaired to the limits that bound implies, often prove it at once
        form = Integerized(level, forms[0].factor, lo, ceiling)
        repaired, floor = step_start(
            session, form, share,
            lambda at: held_repair(session, forms, above, len(forms), ceiling + 1, level,
                                    (level, at)))
        if repaired is not None and repaired <= floor:
            freeze_level(session, level, bounded, repaired)
            return repaired, cp_model.OPTIMAL, float(Fraction(repaired) / form.factor)
    status, solver = session.solve(level, share)
    found, _, bound = bucket_values(status, solver, level, forms[0].factor)
    if found is None:
        return None, status, None
    freeze_level(session, level, bounded, found)
    if found <= floor:  # at the relaxation's bound: proven, whatever the search's own says
        return found, cp_model.OPTIMAL, float(Fraction(found) / forms[0].factor)
    floor_value = float(Fraction(floor) / forms[0].factor)
    return found, status, floor_value if bound is None else max(bound, floor_value)


def freeze_level(session: Session, level: cp_model.IntVar,
                 bounded: list[cp_model.Constraint], value: int) -> None:
    """Items held at ``value`` or under: the level's rules read the constant, and the level
    variable leaves the model (see DomainCountingModel.retire), its solution value with it."""
    session.builder.cp.retire(level, bounded, value)
    if session.values is not None:
        session.values[level.index] = 0


def leximin_count(session: Session, forms: list[Integerized], level: int, at_least: int,
                   share: float | None) -> tuple[list[object], int | None, int]:
    """The fewest items at ``level`` or more (at least ``at_least``), frozen at what was
    found. Returns each item's indicator of being there, the count found (None: no solution
    in time) and its proven lower bound."""
    builder = session.builder
    cp = builder.cp
    marks: list[object] = []
    for f in forms:
        mark = cp.new_bool_var("leximin_at_level")
        cp.add(f.expr >= level).only_enforce_if(mark)
        cp.add(f.expr <= level - 1).only_enforce_if(~mark)
        marks.append(mark)
    count = sum(marks)
    cp.add(count >= at_least)
    floor = at_least
    if builder.accelerate:
        # the load relaxation counts as few as the loads allow, and the held assignment
        # with only that many left there often reaches it, where a search creeps down
        form = Integerized(count, Fraction(1), at_least, len(forms))
        repaired, floor = step_start(
            session, form, share, lambda at: held_repair(session, forms, marks, at, level, count))
        if repaired is not None and repaired <= floor:
            cp.add(count <= repaired)
            return marks, repaired, repaired
    status, solver = session.solve(count, share)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return marks, None, at_least
    found = round(solver.objective_value)
    cp.add(count <= found)
    proven = found if status == cp_model.OPTIMAL else max(
        floor, math.ceil(solver.best_objective_bound - 1e-9))
    return marks, found, min(found, proven)
