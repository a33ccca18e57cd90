"""A bucket's status for the evaluator's value (solve/check.py, ``settle``): OPTIMAL exactly
when its evaluated value meets the compiled bound less the over-estimate to relative 1e-9,
whether or not CP-SAT closed the compiled model's last units."""

from __future__ import annotations

import pytest

from cpsat_rebalancer.evaluate import Evaluation
from cpsat_rebalancer.result import FEASIBLE, OPTIMAL, BucketReport
from cpsat_rebalancer.solve.check import settle
from cpsat_rebalancer.solve.pipeline import unsettle_after, unsettle_below
from cpsat_rebalancer.solve.positions import Bucket


def report(status: str, termination: str, value: float, bound: float | None) -> BucketReport:
    return BucketReport(position=3, status=status, termination=termination, objective=value,
                        compiled_objective=value, bound=bound, gap=None, relative_gap=None,
                        approximation_error=1e-9, seconds=1.0)


@pytest.mark.parametrize(("gap", "over", "status"), [
    (1e-12, 0.0, OPTIMAL), (1e-6, 0.0, FEASIBLE), (1e-12, 1e-6, FEASIBLE)])
def test_a_search_cut_short_is_optimal_where_the_exact_value_meets_the_bound(
        gap: float, over: float, status: str) -> None:
    """CP-SAT stopped before closing a finely scaled objective's last units: the bound
    less the over-estimate decides, and the report keeps that bound."""
    value = 1.1953463859
    settled = report(FEASIBLE, "time_limit", value, value * (1 - gap))
    settle(settled, Bucket(3, over=over))
    assert settled.status == status
    assert settled.termination == ("optimal" if status == OPTIMAL else "time_limit")
    assert settled.bound == pytest.approx(value * (1 - gap) - over, rel=1e-15)


def test_a_compiled_proof_short_of_the_exact_value_is_approximated() -> None:
    value = 2.0
    settled = report(OPTIMAL, "optimal", value, value)
    settle(settled, Bucket(3, over=1e-6))
    assert (settled.status, settled.termination) == (FEASIBLE, "approximated")
    assert settled.gap == pytest.approx(1e-6)


@pytest.mark.parametrize(("floor", "bound"), [(0.0, 0.0), (float("-inf"), None)])
def test_an_answer_no_search_bounded_states_the_gap_to_the_lowest_value_there_is(
        floor: float, bound: float | None) -> None:
    """No search proved a bound (none found a solution, or a local search improved an
    earlier position after the chain): a penalty position still states its true gap, down
    to its floor 0; a position that can go negative states none."""
    settled = report(FEASIBLE, "time_limit", 1000.0, None)
    settle(settled, Bucket(3, floor=floor))
    assert settled.bound == bound
    assert settled.gap == (None if bound is None else 1000.0)
    assert settled.relative_gap == (None if bound is None else 1.0)
    assert settled.status == FEASIBLE


def test_an_unbounded_answer_at_its_floor_is_optimal() -> None:
    settled = report(FEASIBLE, "time_limit", 0.0, None)
    settle(settled, Bucket(3, floor=0.0))
    assert (settled.status, settled.bound, settled.gap) == (OPTIMAL, 0.0, 0.0)


def test_a_bound_below_the_lowest_value_there_is_rises_to_it() -> None:
    """A compiled bound below 0 on a penalty position (its over-estimate taken off, or a
    term's rounding): 0 bounds every assignment there, and is the tighter bound."""
    settled = report(FEASIBLE, "time_limit", 0.00048, -0.02)
    settle(settled, Bucket(3, floor=0.0, over=1e-9))
    assert settled.bound == 0.0
    assert settled.gap == pytest.approx(0.00048)


def test_a_proof_voided_by_a_better_earlier_position_says_so_in_its_termination() -> None:
    """A heuristic after the chain lowered position 0: the chain's proofs after it held
    for the worse value there, so they are dropped, and the status and the termination
    agree (not FEASIBLE with termination "optimal")."""
    def evaluation(first: float, second: float) -> Evaluation:
        return Evaluation(goals=[], constraints=[], positions={0: first, 1: second})

    reports = [report(OPTIMAL, "optimal", 5.0, 4.0), report(OPTIMAL, "optimal", 2.0, 2.0)]
    reports[0].position, reports[1].position = 0, 1
    unsettle_after(reports, evaluation(5.0, 2.0), evaluation(4.5, 3.0))
    assert (reports[0].status, reports[0].bound) == (OPTIMAL, 4.0)
    assert (reports[1].status, reports[1].termination, reports[1].bound) == (
        FEASIBLE, "time_limit", None)


@pytest.mark.parametrize(("first", "unsettled"), [
    (1.12e-5, True), (2.406e-5 - 5e-9, False), (2.406e-5, False)])
def test_an_answer_below_a_reported_value_unsettles_the_buckets_after_it(
        first: float, unsettled: bool) -> None:
    """Drawn shape 289 at 200x20 under 10 s: a local search inside the movement bucket
    walked position 0 below the chain's value there (1.12e-5 against 2.406e-5) at the cost
    of more moves (99 against CP-SAT's 91); the answer held it, and the result check raised
    on the movement bucket's compiled value. Below the reported value by more than the
    stated error (1e-8 here), the buckets after it are unsettled; within it, not."""
    reports = [report(FEASIBLE, "time_limit", 2.406e-5, 0.0), report(OPTIMAL, "optimal", 91, 91)]
    reports[0].position, reports[1].position = 0, 1
    reports[0].approximation_error = 1e-8
    final = Evaluation(goals=[], constraints=[], positions={0: first, 1: 99.0})
    unsettle_below(reports, {0: Bucket(0), 1: Bucket(1)}, final)
    assert reports[0].compiled_objective == 2.406e-5
    assert (reports[1].compiled_objective is None) == unsettled
    assert reports[1].status == (FEASIBLE if unsettled else OPTIMAL)


ERROR = 7e-15  # each item's rounding
FLOORS = [1.42 - ERROR, 0.618 - ERROR, 0.0 - ERROR]


@pytest.mark.parametrize(("vector", "status"), [
    ([1.42, 0.618, 0.0], OPTIMAL),
    ([1.42 + 1e-12, 0.618, 1e-15], OPTIMAL),  # within 1e-9 of 1.42; within the noise of 0
    ([1.42, 0.618, 1e-12], FEASIBLE),  # above the noise allowed at 0
    ([1.42, 0.618 + 1e-9, 0.0], FEASIBLE)])  # 1.6e-9 relative
def test_a_leximin_order_proven_on_rounded_items_is_optimal_where_each_entry_meets_its_floor(
        vector: list[float], status: str) -> None:
    """A leximin order proven on items rounded by a few 1e-15: proven where each entry of
    the final vector meets its floor (the compiled entry less the item error) as a scalar
    value meets its bound, to relative 1e-9 or the absolute noise near 0."""
    settled = report(FEASIBLE, "approximated", sum(vector), None)
    settled.leximin_levels = settled.leximin_items = 3
    settled.leximin = vector
    settle(settled, Bucket(3, leximin_floors=FLOORS))
    assert (settled.status, settled.termination) == (
        status, "optimal" if status == OPTIMAL else "approximated")


def test_a_leximin_order_without_floors_keeps_its_report() -> None:
    settled = report(FEASIBLE, "approximated", 2.038, None)
    settled.leximin_levels, settled.leximin = 3, [1.42, 0.618, 0.0]
    settle(settled, Bucket(3))
    assert (settled.status, settled.termination) == (FEASIBLE, "approximated")
