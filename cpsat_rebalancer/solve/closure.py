"""Exactness at the answer. Where a bucket's forms are rounded (a stated error), its
compiled optimum need not be the evaluator's optimum, and a bound taken from the compiled
one is loose by the whole error. But an assignment whose exact value beats the held one's
lies at most the compiled over-estimate above that value in the model: the closure lists
every assignment in that band, lowest compiled value first, one CP-SAT solve each with
the class counts already seen excluded; judges each by the evaluator in the chain's order;
and holds the best, narrowing the band to it. It is complete when the band is empty: the
best is then optimal for the evaluator's value, and every assignment that ties it has
been seen, so the buckets after it are held to exactly those (not to a compiled level,
whose slack would let them worsen this one within the error)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from ortools.sat.python import cp_model

from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Integerized
from ..cpsat.pwl import expr_value
from ..evaluate import Evaluation, evaluate
from .accelerate.tuples import beyond_ties, tuple_key
from .positions import EXACT, FLOAT_NOISE, Bucket
from .session import Session

# the band of a model with more objects than this rarely runs out (assignments that tie
# within a rounding are many): its bucket keeps the compiled proof, within its error
OBJECT_LIMIT = 32
CANDIDATE_LIMIT = 500  # assignments judged at most, per bucket
# CP-SAT's deterministic seconds for all of a bucket's listing, in every run: a bound that
# depends on no clock, so that an unlimited solve stays repeatable
CLOSURE_WORK = 5.0


@dataclass
class Closed:
    """The closure's answer: the best assignment found (held in the session's values), its
    compiled value (integer units) and exact value, and when ``complete``, the class
    counts of every assignment that ties it (the best among them)."""

    incumbent: int
    value: float
    complete: bool
    ties: list[list[int]]


def wanted(session: Session, bucket: Bucket, error: float, proven_to: float | None) -> bool:
    """Whether a bucket proven on rounded forms (``error`` > 0) gains from the closure:
    its exact value is not yet proven (``proven_to``, the compiled bound less the
    over-estimate, and the lowest value there is, ``bucket.floor``, are short of it), or
    buckets after it would be held within the error of it. Only in the plain
    lexicographic order (an allowed worsening or a blended sum judges positions otherwise)
    and on models of few objects."""
    if (error <= 0 or session.values is None or session.interrupted
            or not session.options.plan.lexicographic
            or session.builder.problem.num_objects > OBJECT_LIMIT):
        return False
    later = any(entry.position > bucket.position
                for entry in (*session.model.goals, *session.model.constraints))
    if later or bucket.leximin is not None:
        return True
    value = session.held_sum(bucket.members)
    proven = bucket.floor if proven_to is None else max(proven_to, bucket.floor)
    return proven < value - tolerance(value)


def chain_key(evaluation: Evaluation, bucket: Bucket) -> list[tuple[float, ...]]:
    """The evaluator's tuple up to this bucket: the earlier positions as they are, then the
    bucket's value (the sum of its members, or a lone IDEAL goal's sorted vector)."""
    earlier = [key for p, key in zip(sorted(set(evaluation.positions) | set(evaluation.leximin)),
                                     tuple_key(evaluation)) if p < bucket.position]
    if bucket.leximin is not None:
        return [*earlier, tuple(evaluation.leximin[bucket.position])]
    return [*earlier, (sum(evaluation.positions.get(p, 0.0) for p in bucket.members),)]


def tolerance(value: float) -> float:
    """How far two exact values may lie apart and still tie."""
    return EXACT * abs(value) + FLOAT_NOISE


def close_bucket(session: Session, bucket: Bucket, form: Integerized, error: float,
                 seconds: float | None) -> Closed | None:
    """The closure of a bucket's objective for at most ``seconds`` (None when nothing is
    held). ``error`` bounds |compiled - exact| of the objective, ``bucket.over`` how far
    the compiled value lies above the exact one."""

    def band(key: list[tuple[float, ...]]) -> None:
        value = key[-1][0]
        level = (Fraction(value) + Fraction(bucket.over) + Fraction(tolerance(value))
                 ) * form.factor
        if level < form.hi:  # (beyond, every assignment is in the band)
            session.builder.cp.add(form.expr <= math.floor(level))

    return listed(session, bucket, lambda: form.expr, band, form.expr, seconds)


def close_leximin(session: Session, bucket: Bucket, forms: list[Integerized], error: float,
                  seconds: float | None) -> Closed | None:
    """The closure of a lone IDEAL goal's leximin order: an assignment leximin-better than
    the held one or tied with it has no item above the held one's largest, so none whose
    compiled value lies further above it than ``error`` (each item's). Listed by the
    compiled largest item, lowest first."""
    builder = session.builder
    factor = forms[0].factor

    def largest() -> object:
        top = builder.cp.new_int_var(min(f.lo for f in forms), max(f.hi for f in forms),
                                     "closure_largest")
        for f in forms:
            builder.cp.add(top >= f.expr)
        return top

    def band(key: list[tuple[float, ...]]) -> None:
        value = max(key[-1], default=0.0)
        level = math.floor((Fraction(value) + Fraction(error) + Fraction(tolerance(value)))
                           * factor)
        for f in forms:
            if level < f.hi:
                builder.cp.add(f.expr <= level)

    return listed(session, bucket, largest, band, None, seconds)


def listed(session: Session, bucket: Bucket, objective: Callable[[], object],
           band: Callable[[list[tuple[float, ...]]], None], compiled: object | None,
           seconds: float | None) -> Closed | None:
    """The closure's loop: in a scratch model, ``band`` keeps to the assignments that may
    beat or tie a key, and the ``objective`` (built there) lists them lowest first, which
    narrows the band soonest; the list is complete when none is left (a proof checked
    without presolve: see Session.solve_excluding, and the wrong OPTIMAL noted in
    ``finish``). Holds the best assignment found; returns it with ``compiled``'s value
    there."""
    builder = session.builder
    if not session.held_whole():
        return None
    problem, model = builder.problem, session.model
    counted = len(builder.count_vars)
    deadline = None if seconds is None else time.monotonic() + seconds
    work_until = session.work + CLOSURE_WORK
    best_values = list(session.values)
    best_key = chain_key(evaluate(problem, model, session.decode()), bucket)
    seen = [(best_values[:counted], best_key)]  # the assignments that keep the hard rules
    complete = False
    session.progress.phase("exact closure")
    try:
        with builder.scratch():
            listing = objective()
            band(best_key)
            exclude(builder, best_values[:counted])
            while len(seen) < CANDIDATE_LIMIT and not session.interrupted:
                left = None if deadline is None else deadline - time.monotonic()
                work = work_until - session.work
                if (left is not None and left <= 0.01) or work <= 0.01:
                    break
                status, _ = session.solve_excluding(listing, left, work)
                if status == cp_model.INFEASIBLE:
                    complete = True
                    break
                if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                    break
                values = list(session.values)
                found = evaluate(problem, model, session.decode())
                key = chain_key(found, bucket)
                if found.feasible:
                    seen.append((values[:counted], key))
                    if beyond_ties(key, best_key):
                        best_values, best_key = values, key
                        band(best_key)
                exclude(builder, values[:counted])
    finally:  # (Ctrl-C included) the best assignment found is the one held
        session.values = best_values
    ties = [counts for counts, key in seen
            if not beyond_ties(key, best_key) and not beyond_ties(best_key, key)]
    value = best_key[-1][0] if bucket.leximin is None else max(best_key[-1], default=0.0)
    return Closed(0 if compiled is None else expr_value(compiled, best_values), value,
                  complete, ties)


def exclude(builder: CpBuilder, counts: list[int]) -> None:
    """A no-good: the class counts differ from ``counts`` somewhere."""
    cp = builder.cp
    differs = []
    for var, count in zip(builder.count_vars, counts):
        literal = cp.new_bool_var("differs")
        cp.add(var != count).only_enforce_if(literal)
        differs.append(literal)
    cp.add_bool_or(differs)
