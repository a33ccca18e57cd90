"""How the chain shares a time limit: until some assignment keeps the hard rules, the search
for one may take all the time left (the later buckets need one), never stop early with time
unused."""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np
import pytest
from ortools.sat.python import cp_model

from cpsat_rebalancer import evaluate, parse_scenario
from cpsat_rebalancer.cpsat.linear import lin_sum
from cpsat_rebalancer.generators import balance_instance
from cpsat_rebalancer.result import FEASIBLE, NO_SOLUTION, BucketReport
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve import bucket as bucket_module
from cpsat_rebalancer.solve import pipeline
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.positions import Bucket
from cpsat_rebalancer.solve.session import Session

LIMIT = 30.0


def three_positions() -> tuple[Session, dict[int, Bucket]]:
    """Balance at 0, moves at 1, a second balance at 2, under a 30 s limit."""
    data = balance_instance(30, 6, seed=2)
    data["goals"] = [data["goals"][0], {"boundary": True}, data["goals"][-1],
                     {"boundary": True},
                     {"spec": {"balanceSpec": {"name": "mem", "scope": "host",
                                               "dimension": "mem"}}}]
    scenario = parse_scenario(data)
    builder, buckets = compile_model(scenario.problem, scenario.model)
    assert len(buckets) == 3
    return Session(builder, scenario.model, SolverOptions(time_limit=LIMIT, workers=1)), buckets


@pytest.mark.parametrize("held", [False, True])
def test_a_bucket_takes_all_the_time_left_until_an_assignment_is_held(
        held: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    session, buckets = three_positions()
    if held:
        assert session.start_from()  # the initial assignment keeps the hard rules
    shares: list[float] = []

    def recorded(session: Session, bucket: Bucket, share: float) -> BucketReport:
        shares.append(share)
        status = FEASIBLE if session.values is not None else NO_SOLUTION
        return BucketReport(bucket.position, status, "time_limit", 0.0, None, None, None,
                            None, 0.0, 0.0)

    monkeypatch.setattr(pipeline, "solve_bucket", recorded)
    pipeline.solve_buckets(session, buckets)
    left = session.remaining()
    if held:  # the first counted twice against each later one: half of the time left
        assert len(shares) == 3
        weight = session.budget.bucket_weight
        assert left * weight / (weight + 2) < shares[0] < (left + 1.0) * weight / (weight + 2)
    else:  # no assignment: the chain stops after the first bucket, which had everything
        assert len(shares) == 1
        assert left < shares[0] <= LIMIT


def test_a_search_that_finds_nothing_goes_on_for_the_whole_share(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With no incumbent there is nothing to blend with moves: the pure search's second
    round takes the rest of the bucket's share, not only the pure share of it."""
    session, buckets = three_positions()
    form = session.builder.integerize(lin_sum(buckets[0].terms), objective=True)
    budgets: list[float] = []
    real_solve = session.solve

    def nothing_found(objective: object, budget: float | None = None, work=None,  # noqa: ANN001
                      probing: bool = False) -> tuple[int, cp_model.CpSolver]:
        budgets.append(budget)
        _, solver = real_solve(objective, 0.01)
        return cp_model.UNKNOWN, solver

    monkeypatch.setattr(session, "solve", nothing_found)
    share = 10.0
    started = time.monotonic()
    assert session.values is None  # nothing held: no local search from it
    status, _, incumbent, _, _ = bucket_module.pure_then_blended(
        session, form, share, started, None, [], lambda values: 0, 0, form.lo)
    assert status == cp_model.UNKNOWN and incumbent is None
    assert len(budgets) == 3  # the first search, then two rounds of the rest
    spent = time.monotonic() - started
    assert budgets[1] > share - spent > session.budget.pure_share * share


def test_a_first_search_that_stalls_hands_time_to_a_local_search_whose_answer_is_held(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """CP-SAT's first search finds nothing better than the assignment held: a local search
    from it (priced in batches) takes a share of what is left; its answer, better than the
    start, is kept for the end and held, and the bucket reports its compiled value."""
    session, buckets = three_positions()
    assert session.start_from()
    bucket = buckets[0]
    form = session.builder.integerize(lin_sum(bucket.terms), objective=True)
    real_solve = session.solve

    def nothing_found(objective: object, budget: float | None = None, work=None,  # noqa: ANN001
                      probing: bool = False) -> tuple[int, cp_model.CpSolver]:
        _, solver = real_solve(objective, 0.01)
        return cp_model.UNKNOWN, solver

    monkeypatch.setattr(session, "solve", nothing_found)
    start = session.held_value(bucket.members, form.factor, bucket.error)
    initial = session.held_sum(bucket.members)
    status, _, incumbent, _, _ = bucket_module.pure_then_blended(
        session, form, 4.0, time.monotonic(), None, [],
        lambda values: session.held_value(bucket.members, form.factor, bucket.error, values),
        bucket.position, form.lo)
    assert session.searched is not None
    _, evaluation = session.searched
    assert evaluation.positions[0] < initial
    assert status in (cp_model.FEASIBLE, cp_model.OPTIMAL)
    assert incumbent is not None and incumbent < start
    assert session.held_sum(bucket.members) <= evaluation.positions[0] + 1e-12


def walk_of(session: Session, values: list[float | None],
            monkeypatch: pytest.MonkeyPatch, position: int = 0) -> list[float]:
    """A stand-in walk whose slices end at ``values`` (at ``position``; None: nothing
    better), each taking its slice's time; returns the deadlines it was given."""
    problem = session.builder.problem
    first = evaluate(problem, session.model, problem.initial)
    deadlines: list[float] = []

    def descend(problem_, model, start: np.ndarray, deadline: float, *args,  # noqa: ANN002
                **kwargs) -> tuple | None:  # noqa: ANN003
        deadlines.append(deadline)
        time.sleep(max(0.0, deadline - time.monotonic()))
        value = values[min(len(deadlines), len(values)) - 1]
        return None if value is None else (
            start.copy(), replace(first, positions={**first.positions, position: value}))

    monkeypatch.setattr(bucket_module.local_search, "descend", descend)
    return deadlines


@pytest.mark.parametrize(("values", "slices", "kept"), [
    ([100.0, 50.0, 25.0, 24.9, 10.0], 4, 24.9),  # halves, then gains 0.4%: stops there
    ([100.0, None, 1.0], 2, 100.0),  # the second slice finds nothing better: stops
    ([None, 1.0], 1, None),  # the first finds nothing: no more slices
])
def test_the_walk_goes_on_in_slices_while_each_still_lowers_the_tuple(
        values: list[float | None], slices: int, kept: float | None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A bucket's local search (CP-SAT's first search stalled) is given a slice, then
    slices as long again while each lowers the tuple by ``walk_gain`` (1%) or more; the
    last slice's answer is the one kept."""
    session, buckets = three_positions()
    assert session.start_from()
    form = session.builder.integerize(lin_sum(buckets[0].terms), objective=True)
    deadlines = walk_of(session, values, monkeypatch)
    bucket_module.stalled_search(session, form, 0.1, 5.0, 0, 0.0)
    assert len(deadlines) == slices
    assert (session.searched is None) == (kept is None)
    assert kept is None or session.searched[1].positions[0] == kept


@pytest.mark.parametrize(("floor", "slices"), [(990.0, 4), (0.0, 2)])
def test_a_value_far_above_zero_walks_on_while_slices_close_its_distance_to_the_floor(
        floor: float, slices: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Slices that lower a value near 1000 by 0.5% and 0.3% of itself close half or more of
    its distance to a floor of 990 each time: the walk goes on until a slice closes less
    than 1% of it (the fourth, 0.01 of 2); with no floor above zero, after the second."""
    session, buckets = three_positions()
    assert session.start_from()
    form = session.builder.integerize(lin_sum(buckets[0].terms), objective=True)
    deadlines = walk_of(session, [1000.0, 995.0, 992.0, 991.99, 990.0], monkeypatch)
    bucket_module.stalled_search(session, form, 0.1, 5.0, 0, floor)
    assert len(deadlines) == slices


def test_gains_only_after_the_buckets_position_end_the_walk_after_one_slice(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A walk that lowers only a later position leaves the bucket's own value where it was:
    the rest of the time goes to the bucket's search, not to more slices."""
    session, buckets = three_positions()
    assert session.start_from()
    form = session.builder.integerize(lin_sum(buckets[0].terms), objective=True)
    deadlines = walk_of(session, [100.0, 50.0, 25.0], monkeypatch, position=1)
    bucket_module.stalled_search(session, form, 0.1, 5.0, 0, 0.0)
    assert len(deadlines) == 2  # the second slice gained nothing at position 0
    assert session.searched[1].positions[1] == 50.0


def test_a_walk_that_keeps_descending_stops_at_the_most_it_may_take(
        monkeypatch: pytest.MonkeyPatch) -> None:
    session, buckets = three_positions()
    assert session.start_from()
    form = session.builder.integerize(lin_sum(buckets[0].terms), objective=True)
    deadlines = walk_of(session, [100.0 / 2 ** k for k in range(1000)], monkeypatch)
    started = time.monotonic()
    bucket_module.stalled_search(session, form, 0.1, 1.0, 0, 0.0)
    assert 5 <= len(deadlines) <= 11
    assert max(deadlines) <= started + 1.0 + 0.01
    assert time.monotonic() - started < 1.5


def test_a_search_that_found_nothing_proves_no_bound_on_a_negative_objective(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """CP-SAT leaves its bound at 0 when a search finds nothing: at a negative incumbent
    (an affinity's reward) that is no proof, and the bucket stays unproven."""
    data = balance_instance(30, 6, seed=2)
    objects = sorted(o for members in data["assignment"].values() for o in members)
    hosts = sorted(data["assignment"])
    data["goals"] = [{"spec": {"assignmentAffinitiesSpec": {"name": "aff", "affinities": [
        {"objectName": o, "scopeItemName": hosts[k % len(hosts)], "affinity": 1.0 + k % 3}
        for k, o in enumerate(objects[:12])]}}}]
    scenario = parse_scenario(data)
    builder, buckets = compile_model(scenario.problem, scenario.model)
    session = Session(builder, scenario.model, SolverOptions(time_limit=LIMIT, workers=1))
    assert session.start_from()
    assert session.held_sum((0,)) < 0

    class NothingFound:  # what CP-SAT answers after a search that found no solution
        best_objective_bound = 0.0

        class response_proto:  # noqa: N801
            status = cp_model.UNKNOWN

    monkeypatch.setattr(bucket_module, "bucket_start", lambda s, b, f, t: (None, f.lo))
    monkeypatch.setattr(bucket_module, "pure_then_blended",
                        lambda *args, **kwargs: (cp_model.UNKNOWN, NothingFound(), None, None,
                                                 None))
    report = bucket_module.solve_bucket(session, buckets[0], 5.0)
    assert report.status == FEASIBLE
    assert report.bound is None or report.bound < report.compiled_objective
