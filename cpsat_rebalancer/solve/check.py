"""Check a result independently of the compiler, and score an assignment through the
compiled model (the agreement tests compare the two)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from ortools.sat.python import cp_model

from ..cpsat.linear import lin_sum
from ..errors import InternalError
from ..evaluate import Evaluation
from ..problem import Problem
from ..result import FEASIBLE, OPTIMAL, BucketReport
from ..scenario import Model, SolverOptions
from .compile import compile_model
from .positions import EXACT, FLOAT_NOISE, Bucket, meets, relative_gap
from .session import STATUS_NAMES, Session

CHECK_TOLERANCE = 1e-7  # slack of the independent result check beyond the stated error


def check_result(evaluation: Evaluation, reports: list[BucketReport]) -> None:
    """Independent check: hard constraints hold in the evaluator, bounds do not exceed
    incumbents, and the evaluator never finds more than the model claimed."""
    if not evaluation.feasible:
        raise InternalError("the solver's assignment breaks hard constraints: "
                            + "; ".join(evaluation.broken_hard()))
    for report in reports:
        if report.leximin_levels is not None or report.compiled_objective is None:
            continue
        tolerance = CHECK_TOLERANCE * max(1.0, abs(report.compiled_objective))
        if report.bound is not None and report.bound > report.compiled_objective + tolerance:
            raise InternalError(f"bucket {report.position}: bound {report.bound} above the "
                                f"incumbent {report.compiled_objective}")
        if report.objective > (report.compiled_objective + report.approximation_error
                                + report.freeze_slack + tolerance):
            raise InternalError(
                f"bucket {report.position}: the evaluator's value {report.objective!r} exceeds "
                f"the compiled objective {report.compiled_objective!r} "
                f"(stated error {report.approximation_error:g})")


def compiled_values(problem: Problem, model: Model, final: np.ndarray,
                    workers: int = 1) -> tuple[dict[int, tuple[float, float]], np.ndarray]:
    """Score an assignment through the compiled model: per bucket, the objective CP-SAT sees
    with the class counts fixed to those of ``final`` (auxiliaries at their best), with its
    stated error; and the assignment those counts decode to (identical objects swapped back
    into place), whose evaluator values the compiled ones must equal."""
    builder, buckets = compile_model(problem, model, leximin=False)
    session = Session(builder, model, SolverOptions(workers=workers))
    counts = builder.counts_of(final)
    if counts is None:
        raise ValueError("the assignment moves an object where the restrictions forbid it")
    for var, value in zip(builder.count_vars, counts):
        builder.cp.add(var == value)
    values = {}
    for position, bucket in buckets.items():
        form = builder.integerize(lin_sum(bucket.terms), objective=True)
        status, solver = session.solve(form.expr)
        if status != cp_model.OPTIMAL:
            raise ValueError(f"bucket {position}: the fixed assignment is "
                             f"{STATUS_NAMES.get(status)}")
        values[position] = (float(Fraction(int(solver.value(form.expr))) / form.factor),
                            bucket.error + form.error)
    return values, builder.decode(counts)


def settle(report: BucketReport, bucket: Bucket) -> None:
    """The bucket's bound and status for the evaluator's value, not the compiled model's.
    The compiled value of any assignment lies at most ``bucket.over`` above its exact value,
    so the compiled bound less that, or ``bucket.floor`` (the lowest exact value there is)
    where that is higher, bounds every assignment's exact value; the bucket is OPTIMAL exactly
    when its evaluated value meets that bound to relative EXACT, whether or not CP-SAT
    closed the compiled model's last units. Where the exact closure
    proved the exact optimum (``bucket.exact_bound``), that is the bound; where no search
    proved one (it found no solution, or a later improvement of an earlier position voided
    it), the lowest exact value there is, when finite, so that every answer with a value
    states its true gap. A leximin bucket is proven level by level and keeps its report, but
    for its rounded items: proven where every entry of the final vector meets its floor."""
    if bucket.exact_bound is not None:
        report.bound = bucket.exact_bound
    elif report.leximin_levels is not None:
        if (report.termination == "approximated" and bucket.leximin_floors is not None
                and report.leximin is not None
                and all(meets(value, floor)
                        for value, floor in zip(report.leximin, bucket.leximin_floors))):
            report.status, report.termination = OPTIMAL, "optimal"
        return
    elif report.bound is None:
        if report.status != FEASIBLE or not math.isfinite(bucket.floor):
            return
        report.bound = bucket.floor
    else:  # and never below the lowest value there is, itself a bound
        report.bound = max(report.bound - bucket.over, bucket.floor)
    if report.bound > report.objective + EXACT * abs(report.objective) + FLOAT_NOISE:
        # above the value of an assignment in hand (a local search's, found after the
        # chain's proof): that proof was wrong, and neither its bound nor OPTIMAL stands
        report.bound = report.gap = report.relative_gap = None
        if report.status == OPTIMAL:
            report.status, report.termination = FEASIBLE, "time_limit"
        return
    gap = max(0.0, report.objective - report.bound)
    report.gap = gap
    report.relative_gap = relative_gap(gap, report.objective)
    # a position later ones were allowed to worsen: proven when its value at its own solve
    # met its bound (its final value may lie anywhere up to the allowance)
    value = report.objective
    if report.stage_value is not None:
        value = report.stage_value
        gap = max(0.0, value - report.bound)
    if report.status == OPTIMAL and not meets(value, value - gap):
        report.status = FEASIBLE
        report.termination = "approximated"
    elif report.status == FEASIBLE and meets(value, value - gap):
        # a search cut short on the compiled model, whose last units the exact value does
        # not need: what OPTIMAL promises holds
        report.status, report.termination = OPTIMAL, "optimal"
