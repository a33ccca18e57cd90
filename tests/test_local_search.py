"""The move-based floor: single moves and swaps judged by the evaluator."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from randomized import brute_force, random_scenario

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.evaluate import batchable, evaluate
from cpsat_rebalancer.result import FEASIBLE, BucketReport
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve import pipeline
from cpsat_rebalancer.solve.accelerate.exchanges import exchange_candidates
from cpsat_rebalancer.solve.accelerate.local_search import descend
from cpsat_rebalancer.solve.accelerate.tuples import better, tuple_key
from cpsat_rebalancer.solve.budget import Budget


def single_moves(scenario, final: np.ndarray):
    problem = scenario.problem
    for o in range(problem.num_objects):
        for c in range(problem.num_containers):
            if c != final[o]:
                moved = final.copy()
                moved[o] = c
                yield moved


def improving_move_exists(scenario, final: np.ndarray) -> bool:
    key = tuple_key(evaluate(scenario.problem, scenario.model, final))
    for moved in single_moves(scenario, final):
        evaluation = evaluate(scenario.problem, scenario.model, moved)
        if evaluation.feasible and better(tuple_key(evaluation), key):
            return True
    return False


@pytest.mark.parametrize("seed", range(30))
def test_descent_ends_where_no_single_move_helps(seed: int) -> None:
    """From the initial assignment: a better, feasible assignment whenever a single move
    helps, none otherwise; where it stops, no single move helps. From a start that breaks
    hard rules: an assignment that keeps them, found whenever one single move reaches one
    (where a batch prices moves)."""
    scenario = parse_scenario(random_scenario(seed))
    problem = scenario.problem
    initial = evaluate(problem, scenario.model, problem.initial)
    if not initial.feasible:  # repaired where a batch prices moves, else left alone
        found = descend(problem, scenario.model, problem.initial, time.monotonic() + 5)
        if not batchable(problem, scenario.model):
            assert found is None
        elif found is None:
            assert not any(evaluate(problem, scenario.model, moved).feasible
                           for moved in single_moves(scenario, problem.initial))
        else:
            assert found[1].feasible
            assert tuple_key(evaluate(problem, scenario.model, found[0])) == tuple_key(found[1])
        return
    found = descend(problem, scenario.model, problem.initial, time.monotonic() + 5, seed)
    if found is None:
        assert not improving_move_exists(scenario, problem.initial)
        return
    final, evaluation = found
    assert evaluation.feasible
    assert better(tuple_key(evaluation), tuple_key(initial))
    assert tuple_key(evaluate(problem, scenario.model, final)) == tuple_key(evaluation)
    assert not improving_move_exists(scenario, final)


@pytest.mark.parametrize("seed", range(10))
def test_nothing_beats_the_optimum(seed: int) -> None:
    scenario = parse_scenario(random_scenario(seed))
    feasible = brute_force(scenario)
    if not feasible:
        return
    best = min(feasible, key=lambda pair: tuple_key(pair[1]))[0]
    assert descend(scenario.problem, scenario.model, best, time.monotonic() + 5) is None


def stub_the_chain(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chain's buckets solve nothing, and no floor runs after them."""
    def nothing_solved(session, buckets):
        return [BucketReport(p, "NOT_SOLVED", "time_limit", 0.0, None, None, None, None,
                             0.0, 0.0) for p in buckets], "time_limit"

    monkeypatch.setattr(pipeline, "solve_buckets", nothing_solved)
    monkeypatch.setattr(pipeline, "move_floor", lambda session, final: None)


@pytest.mark.parametrize("seed", range(12))
def test_the_answer_is_never_worse_than_a_local_search_from_the_start(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a time limit, a local search from the initial assignment runs before the chain
    and its answer is the chain's start: even a chain that improves nothing (its buckets
    stubbed out here, with the floor after it) returns at least what that search finds. On
    these tiny scenarios the search converges: the answer is no worse than its fixed point."""
    scenario = parse_scenario(random_scenario(seed))
    problem = scenario.problem
    if not evaluate(problem, scenario.model, problem.initial).feasible:
        return
    found = descend(problem, scenario.model, problem.initial, time.monotonic() + 30, 0)
    if found is None:
        return
    target = tuple_key(found[1])
    stub_the_chain(monkeypatch)
    result = pipeline.solve_model(problem, scenario.model,
                                  SolverOptions(time_limit=20, workers=1, seed=0))
    assert not better(target, tuple_key(result.final_evaluation))
    assert better(tuple_key(result.final_evaluation),
                  tuple_key(evaluate(problem, scenario.model, problem.initial)))


@pytest.mark.parametrize("held", [True, False])
@pytest.mark.parametrize("seed", range(40))
def test_a_start_that_breaks_hard_rules_is_repaired_before_the_chain(
        seed: int, held: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the start breaks hard rules and a batch prices moves, the local search
    repairs it before the chain even where no share of a pass of single moves fits
    (as on tens of thousands of objects): with the chain stubbed out, the answer keeps
    the hard rules wherever a repair alone reaches that, and is FEASIBLE. So too where the
    chain never holds the repaired start (``held`` False: completing it into CP-SAT's hint
    ran out of time)."""
    scenario = parse_scenario(random_scenario(seed))
    problem, model = scenario.problem, scenario.model
    if evaluate(problem, model, problem.initial).feasible or not batchable(problem, model):
        return
    repaired = descend(problem, model, problem.initial, time.monotonic() + 30,
                       until_feasible=True)
    if repaired is None:
        return
    assert repaired[1].feasible
    stub_the_chain(monkeypatch)
    if not held:
        monkeypatch.setattr(pipeline, "start", lambda *args: None)
    result = pipeline.solve_model(problem, model, SolverOptions(time_limit=20, workers=1),
                                  budget=Budget(early_search_passes=math.inf))
    assert result.final_evaluation.feasible
    assert result.status == FEASIBLE


def test_a_repair_beats_a_broken_start_whose_tuple_is_lower(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two tasks of 8 on a host of 10 (a HARD capacity broken), the moves the only goal: the
    start's tuple (0) is below any repair's (1). With the chain stubbed out and never
    holding the repaired start, the answer is the repair, FEASIBLE, not the broken start."""
    scenario = parse_scenario({
        "objectDimensions": {"cpu": {"a": 8, "b": 8}},
        "containerDimensions": {"cpu": {"h0": 10, "h1": 10}},
        "assignment": {"h0": ["a", "b"], "h1": []},
        "goals": [{"spec": {"minimizeMovementSpec": {}}}],
        "constraints": [{"spec": {"capacitySpec": {"dimension": "cpu"}}, "policy": "HARD"}]})
    problem, model = scenario.problem, scenario.model
    assert batchable(problem, model)
    stub_the_chain(monkeypatch)
    monkeypatch.setattr(pipeline, "start", lambda *args: None)
    result = pipeline.solve_model(problem, model, SolverOptions(time_limit=20, workers=1),
                                  budget=Budget(early_search_passes=math.inf))
    assert result.status == FEASIBLE
    assert result.final_evaluation.feasible
    assert (result.final != problem.initial).sum() == 1


def improving_swap_exists(scenario, final: np.ndarray) -> bool:
    key = tuple_key(evaluate(scenario.problem, scenario.model, final))
    n = scenario.problem.num_objects
    for a in range(n):
        for b in range(a + 1, n):
            if final[a] != final[b]:
                swapped = final.copy()
                swapped[a], swapped[b] = final[b], final[a]
                evaluation = evaluate(scenario.problem, scenario.model, swapped)
                if evaluation.feasible and better(tuple_key(evaluation), key):
                    return True
    return False


@pytest.mark.parametrize("seed", range(10))
def test_a_stop_tries_every_swap_once(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """With few objects a round of swaps is every pair once: where the descent stops from
    the optimum, it has evaluated each single move and each swap at most once (random
    draws repeated pairs for 2000 evaluations), and no swap helps where it ends."""
    from cpsat_rebalancer.solve.accelerate import local_search

    scenario = parse_scenario(random_scenario(seed))
    feasible = brute_force(scenario)
    if not feasible:
        return
    best = min(feasible, key=lambda pair: tuple_key(pair[1]))[0]
    calls = []

    def counted(*args):
        calls.append(1)
        return evaluate(*args)

    monkeypatch.setattr(local_search, "evaluate", counted)
    problem = scenario.problem
    assert descend(problem, scenario.model, best, time.monotonic() + 30, seed) is None
    n, m = problem.num_objects, problem.num_containers
    assert len(calls) <= 1 + n * (m - 1) + n * (n - 1) // 2
    monkeypatch.undo()
    found = descend(problem, scenario.model, problem.initial, time.monotonic() + 30, seed)
    if found is not None:
        assert not improving_swap_exists(scenario, found[0])


@pytest.mark.parametrize("status, bound, kept", [
    ("OPTIMAL", -633.0, False),  # above the value in hand: the proof was wrong
    ("FEASIBLE", -633.0, False),
    ("OPTIMAL", -718.0, True),  # at the value in hand (a tie): it stands
    ("FEASIBLE", -1187.0, True),  # below it: it stands, and so does the gap
])
def test_a_bound_above_the_answers_own_value_is_dropped(status: str, bound: float,
                                                        kept: bool) -> None:
    """A bucket whose final value (a local search's answer, found after the chain) lies
    below the chain's bound refutes that bound: no bound and no OPTIMAL are reported."""
    from cpsat_rebalancer.solve.check import settle
    from cpsat_rebalancer.solve.positions import Bucket

    report = BucketReport(0, status, "optimal" if status == "OPTIMAL" else "time_limit",
                          -718.0, bound, bound, None, None, 0.0, 0.0)
    settle(report, Bucket(0, floor=-math.inf))  # rewards: the value can go below 0
    assert (report.bound == bound) is kept
    assert report.status == (status if kept else "FEASIBLE")
    assert kept or report.gap is None


def feasible_batchable(objects: int, containers: int, seed: int, step: int = 1,
                       accept=lambda problem, model, initial: True):
    """The first shape drawn from ``seed`` on (every ``step``-th) whose model takes batches,
    whose start keeps the hard rules and which ``accept`` takes: (problem, model, initial
    evaluation, seed)."""
    from cpsat_rebalancer.shapes import random_shape_scenario

    while True:
        scenario = parse_scenario(random_shape_scenario(objects, containers, seed))
        problem, model = scenario.problem, scenario.model
        initial = evaluate(problem, model, problem.initial)
        if batchable(problem, model) and initial.feasible and accept(problem, model, initial):
            return problem, model, initial, seed
        seed += step


def record_priced(search, monkeypatch: pytest.MonkeyPatch) -> dict[int, list[int]]:
    """Replace the search's pricing by a record: per object, the destinations it would
    price, in order (nothing is kept)."""
    priced: dict[int, list[int]] = {}

    def record(objects, targets, deadline):
        priced[int(objects[0, 0])] = targets[:, 0].tolist()
        return False

    monkeypatch.setattr(search, "_try", record)
    return priced


def test_a_hot_first_pass_starts_with_the_most_loaded_container(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a pass cannot visit every object in its time, the objects of the most loaded
    containers come first: the first object priced sits on the container of the largest
    relative load."""
    from cpsat_rebalancer.solve.accelerate.local_search import BatchedDescent

    problem, model, initial, _ = feasible_batchable(60, 8, 0)
    search = BatchedDescent(problem, model, problem.initial.copy(), initial, 0, hot_first=True)
    priced = record_priced(search, monkeypatch)
    monkeypatch.setattr(search, "_most_promising_first", lambda objects, deadline: objects)
    search.moves(time.monotonic() + 10)
    loads = search.relative_loads()
    assert loads[problem.initial[next(iter(priced))]] == loads.max()


@pytest.mark.parametrize("seed", range(8))
def test_a_pass_starts_with_the_move_that_lowers_the_tuple_most(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each object's moves to the least loaded other open container and to the least
    loaded one in no scope item of its own (another rack, another row), judged by the
    evaluator: the pass prices first the object whose move gives the lowest tuple (when
    some move lowers it), and every object whose move lowers it before any that does not."""
    from cpsat_rebalancer.solve.accelerate.local_search import BatchedDescent

    problem, model, initial, seed = feasible_batchable(40, 6, seed, step=100)
    search = BatchedDescent(problem, model, problem.initial.copy(), initial, seed)
    recorded = record_priced(search, monkeypatch)
    search.moves(time.monotonic() + 10)
    priced = list(recorded)
    loads = search.relative_loads()
    open_ = [c for c in np.argsort(loads, kind="stable") if c not in model.non_accepting]

    def elsewhere(here: int) -> int:  # the least loaded sharing no scope item with here
        for c in open_:
            if all(s.container_item[c] != s.container_item[here] or s.container_item[c] < 0
                   for s in problem.scopes.values()):
                return c
        return next(c for c in open_ if c != here)

    key = tuple_key(initial)
    lowers, rates = {}, {}
    for o in priced:
        here = int(problem.initial[o])
        lowers[o] = False
        for target in (next(c for c in open_ if c != here), elsewhere(here)):
            moved = problem.initial.copy()
            moved[o] = target
            evaluation = evaluate(problem, model, moved)
            if evaluation.feasible and better(tuple_key(evaluation), key):
                rates[o] = min(rates.get(o, (np.inf, 0.0)), budget_rate(
                    problem, model, moved, tuple_key(evaluation), initial))
                if not lowers[o] or better(tuple_key(evaluation), lowers[o]):
                    lowers[o] = tuple_key(evaluation)
    improving = [o for o in priced if lowers[o]]
    assert priced[:len(improving)] == improving
    if improving and search.budgets:  # the most gain per share of the budget first
        assert rates[priced[0]] == pytest.approx(min(rates[o] for o in improving), rel=1e-9)
    elif improving:
        best = min(lowers[o] for o in improving)
        assert not better(best, lowers[priced[0]])


def budget_rate(problem, model, moved: np.ndarray, key: list, initial) -> tuple[int, float]:
    """(the first entry of the tuple a move lowers, minus the gain there per share of the
    movement budgets it spends that cost there or before: a hard one, or a soft one at
    that position or an earlier one): the smaller, the sooner a pass under budgets
    prices it."""
    from cpsat_rebalancer.context import EvalContext
    from cpsat_rebalancer.evaluate import policy_splits

    start = tuple_key(initial)
    flat, flat_start = np.concatenate(key), np.concatenate(start)
    column = int(np.flatnonzero(~np.isclose(flat, flat_start, rtol=1e-12, atol=0))[0])
    positions = sorted(set(initial.positions) | set(initial.leximin))
    column_of = dict(zip(positions, np.cumsum([0] + [len(part) for part in start])))
    spent = 0.0
    for entry, split in zip(model.constraints, policy_splits(problem, model)):
        after = entry.spec.budget(EvalContext(problem, problem.initial, moved))
        if after is not None and (not split.has_soft_term
                                  or column_of[entry.position] <= column):
            before = entry.spec.budget(EvalContext(problem, problem.initial, problem.initial))
            spent += (after[0] - before[0]) / after[1]
    return column, -(flat_start[column] - flat[column]) / max(spent, 1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_a_batch_that_misprices_is_caught_by_the_evaluator(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps are kept on the batch's price between the evaluator's checks. A batch that
    prices candidates ever further below the truth (a bug) walks a few steps, the next
    check stops the trust, and what the descent returns is judged by the evaluator:
    better than the start by its own value, or nothing."""
    from cpsat_rebalancer.solve.accelerate import local_search

    def walks(problem, model, initial) -> bool:  # a true descent walks: a lying one walks on
        return descend(problem, model, problem.initial, time.monotonic() + 1, seed) is not None

    problem, model, initial, seed = feasible_batchable(40, 6, seed, 100, walks)
    true_prices = local_search.evaluate_moves
    batches = iter(range(1, 10**9))

    def lying(*args):  # each batch lower than the last: every feasible step looks better
        keys, excess = true_prices(*args)
        return keys - next(batches), excess

    monkeypatch.setattr(local_search, "evaluate_moves", lying)
    judged: list[bool] = []
    original = local_search.BatchedDescent._judged

    def spy(self, *args):
        kept = original(self, *args)
        judged.append(self.trusted)
        return kept

    monkeypatch.setattr(local_search.BatchedDescent, "_judged", spy)
    found = descend(problem, model, problem.initial, time.monotonic() + 3, seed)
    assert judged and not judged[0]  # the first check found the lie
    if found is not None:
        final, evaluation = found
        assert evaluation.feasible
        assert better(tuple_key(evaluation), tuple_key(initial))
        assert tuple_key(evaluate(problem, model, final)) == tuple_key(evaluation)


def test_a_goals_rewarded_containers_are_tried_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """An object with affinities: its pass prices the containers of its rewarded items
    (most rewarded first) before the least loaded ones."""
    from cpsat_rebalancer.solve.accelerate.local_search import BatchedDescent

    def affinities(problem, model, initial) -> list:
        return [e.spec for e in model.goals
                if type(e.spec).__name__ == "AssignmentAffinitiesSpec"]

    problem, model, initial, seed = feasible_batchable(40, 6, 0, accept=affinities)
    (spec,) = affinities(problem, model, initial)
    search = BatchedDescent(problem, model, problem.initial.copy(), initial, seed)
    priced = record_priced(search, monkeypatch)
    search.moves(time.monotonic() + 10)
    item = spec.scope.container_item
    checked = 0
    for obj, targets in priced.items():
        rewards = {int(i): a for o, i, a in zip(spec.objects, spec.items, spec.affinities)
                   if o == obj and a > 0}
        open_ = [c for c in range(problem.num_containers) if c != problem.initial[obj]
                 and (c not in model.non_accepting or c == problem.initial[obj])]
        rewarded = [c for c in open_ if int(item[c]) in rewards]
        if not rewarded:
            continue
        checked += 1
        assert set(targets[:len(rewarded)]) == set(rewarded)
        values = [rewards[int(item[c])] for c in targets[:len(rewarded)]]
        assert values == sorted(values, reverse=True)
    assert checked


def test_a_lazy_pass_takes_a_moved_object_home_to_the_most_loaded_host(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An object moved off the most loaded host, where a movement goal counts it: a lazy
    pass prices only each object's first destinations (the least loaded), yet its own
    host comes among them, and the pass takes it home."""
    from cpsat_rebalancer.solve.accelerate import local_search

    monkeypatch.setattr(local_search, "FIRST_CHUNK", 2)
    scenario = parse_scenario({
        "objectName": "task", "containerName": "host",
        "objectDimensions": {"cpu": {"big": 8, "p": 1, "m1": 2, "m2": 2, "m3": 2}},
        "containerDimensions": {"cpu": {f"h{i}": 10 for i in range(5)}},
        "assignment": {"h0": ["big", "p"], "h1": ["m1"], "h2": ["m2"], "h3": ["m3"],
                       "h4": []},
        "goals": [{"spec": {"minimizeMovementSpec": {"name": "moves", "scope": "host"}}}]})
    problem, model = scenario.problem, scenario.model
    p, home = problem.object_index["p"], problem.initial[problem.object_index["p"]]
    moved = problem.initial.copy()
    moved[p] = problem.container_index["h3"]
    search = local_search.BatchedDescent(problem, model, moved.copy(),
                                         evaluate(problem, model, moved), 0)
    assert home not in search.coolest[:3]  # not among the two least loaded others
    assert search.moves(time.monotonic() + 10, lazy=True)
    assert search.x[p] == home


def test_a_pinned_object_goes_home_once_two_objects_leave_to_make_room() -> None:
    """A pinned object (AvoidMoving SOFT) moved off its host, which the walk then filled:
    its return alone overfills the host by far more than the pin costs, and so does its
    return with any one object leaving (or a swap); with two leaving, nothing overflows
    and the pin costs nothing. The walk reaches that, the enumerated optimum, and a pass
    of returns home (``homecoming``) does in one step."""
    from cpsat_rebalancer.solve.accelerate import local_search

    giga = 10**9
    scenario = parse_scenario({
        "objectName": "task", "containerName": "host",
        "objectDimensions": {"cpu": {"p": 6 * giga, "a": 3 * giga, "b": 3 * giga,
                                     "c": 3 * giga}},
        "containerDimensions": {"cpu": {"h0": 10 * giga, "h1": 10 * giga, "h2": 10 * giga}},
        "assignment": {"h0": ["p", "a", "b"], "h1": ["c"], "h2": []},
        "partitions": {"job": {name: [name] for name in "pabc"}},
        "goals": [{"spec": {"capacityWithGroupPresenceSpec": {  # the overflow, in cpu
            "name": "cap", "scope": "host", "dimension": "cpu", "bound": "MAX",
            "partition": "job", "groupToPresenceWeight": {"type": "ABSOLUTE",
                                                          "globalLimit": 1.0},
            "scopeItemToLimit": {"type": "RELATIVE", "globalLimit": 1.0}}}}],
        "constraints": [{"spec": {"avoidMovingSpec": {"name": "pin", "objects": ["p"]}}}],
        "constraintPolicy": "SOFT"})
    problem, model = scenario.problem, scenario.model
    away = problem.initial.copy()  # p on h1, c in its place
    away[problem.object_index["p"]], away[problem.object_index["c"]] = 1, 0
    optimum = min(tuple_key(evaluation) for _, evaluation in brute_force(scenario))
    found = descend(problem, model, away, time.monotonic() + 10)
    assert found is not None and not better(optimum, tuple_key(found[1]))
    assert found[0][problem.object_index["p"]] == 0
    search = local_search.BatchedDescent(problem, model, away.copy(),
                                         evaluate(problem, model, away), 0)
    assert search.returns(time.monotonic() + 10)  # one step: the return, two leaving
    assert (search.x != away).sum() == 3 and search.x[problem.object_index["p"]] == 0
    assert not better(optimum, tuple_key(evaluate(problem, model, search.x)))


MOVES_BEHIND = {"spec": {"minimizeMovementSpec": {"name": "moves", "scope": "host",
                                                  "dimension": "task_count",
                                                  "doNotNormalize": True}},
                "tuplePos": 1}


def walk_with_moves_behind(goal: dict, assignment: dict, **data):
    """The descent's answer where ``goal`` is at position 0 and moves count at 1 (so a
    move that lowers nothing at 0 is never worth its cost by the tuple alone), checked
    against enumeration: no assignment's tuple is lower."""
    scenario = parse_scenario({"objectName": "task", "containerName": "host",
                               "assignment": assignment,
                               "goals": [{"spec": goal, "tuplePos": 0}, MOVES_BEHIND], **data})
    problem, model = scenario.problem, scenario.model
    found = descend(problem, model, problem.initial, time.monotonic() + 10)
    assert found is not None
    optimum = min(tuple_key(evaluation) for _, evaluation in brute_force(scenario))
    assert not better(optimum, tuple_key(found[1]))
    return found[1], evaluate(problem, model, problem.initial)


@pytest.mark.parametrize("formula", ["MAX", "LEGACY"])
def test_a_walk_crosses_a_tie_at_the_top(formula: str) -> None:
    """Two hosts tie at the top of a MAX (or LEGACY) balance: a move off either host
    leaves the balance flat and costs a move, so only a walk that follows the excess on
    every hot host (Balance's guide) finds the two moves that lower it."""
    balance = {"name": "bal", "scope": "host", "dimension": "cpu", "formula": formula}
    if formula == "LEGACY":
        balance["fixAverageToInitial"] = True
    found, initial = walk_with_moves_behind(
        {"balanceSpec": balance}, {"h0": ["a", "b"], "h1": ["c", "d"], "h2": []},
        objectDimensions={"cpu": {"a": 4, "b": 2, "c": 4, "d": 2}},
        containerDimensions={"cpu": {"h0": 10, "h1": 10, "h2": 10}})
    assert found.positions[0] < initial.positions[0]


def test_swaps_start_on_the_hottest_container_with_partners_on_the_coolest(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A MAX term waits for the hottest container, and the swaps that lower it trade an
    object there for one on a cool container: the first object a swap pass prices sits on
    the most loaded container, and each object's partners come from the least loaded
    containers up, its group mates first (a group's count in an item changes with a move
    of one of its objects, and stays with a swap of two)."""
    from cpsat_rebalancer.solve.accelerate.local_search import BatchedDescent

    problem, model, initial, _ = feasible_batchable(60, 8, 0)
    assert problem.partitions  # the shape drawn has groups, or mates are not ordered
    search = BatchedDescent(problem, model, problem.initial.copy(), initial, 0)
    priced: dict[int, list[int]] = {}  # per object, its partners in the order priced

    def record(objects, targets, deadline):
        priced[int(objects[0, 0])] = objects[:, 1].tolist()
        return False

    monkeypatch.setattr(search, "_try", record)
    search.swaps(time.monotonic() + 10)
    loads = search.relative_loads()
    assert loads[problem.initial[next(iter(priced))]] == loads.max()
    mates_seen = 0
    for obj, partners in priced.items():
        mated = np.array([any(obj in members and other in members
                              for groups in problem.partitions.values()
                              for members in map(set, groups.values()))
                          for other in partners], dtype=bool)
        mates_seen += int(mated.sum())
        assert not np.any(mated[1:] & ~mated[:-1])  # every mate before every other partner
        for part in (np.asarray(partners)[mated], np.asarray(partners)[~mated]):
            assert np.all(np.diff(loads[problem.initial[part]]) >= 0)
    assert mates_seen


def test_a_lazy_pass_prices_only_objects_whose_container_changed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """After a pass where no object's move was kept, a step changes two containers: the
    next lazy pass prices exactly the objects on those two (the others' moves were priced
    since their container last changed), and a full pass prices every object again."""
    from cpsat_rebalancer.solve.accelerate.local_search import BatchedDescent

    problem, model, initial, _ = feasible_batchable(60, 8, 0)
    search = BatchedDescent(problem, model, problem.initial.copy(), initial, 0)
    priced = record_priced(search, monkeypatch)
    search.moves(time.monotonic() + 10)
    everyone = set(priced)
    assert everyone == set(search.representatives().tolist())
    moved = search.x.copy()
    obj = int(search.representatives()[0])
    source, target = int(moved[obj]), int((moved[obj] + 1) % problem.num_containers)
    moved[obj] = target
    search._keep(moved, search.key, 0.0)
    priced.clear()
    search.moves(time.monotonic() + 10, lazy=True)
    on_changed = {int(o) for o in search.representatives() if search.x[o] in (source, target)}
    assert set(priced) == on_changed
    priced.clear()
    search.moves(time.monotonic() + 10)
    assert set(priced) == set(search.representatives().tolist())


def test_swaps_start_with_objects_rewarded_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """An object a goal rewards on another container is swapped first, and its partners
    on the rewarded containers come first."""
    from cpsat_rebalancer.solve.accelerate.local_search import BatchedDescent

    def affinities(problem, model, initial) -> list:
        return [e.spec for e in model.goals
                if type(e.spec).__name__ == "AssignmentAffinitiesSpec"]

    problem, model, initial, seed = feasible_batchable(40, 6, 0, accept=affinities)
    search = BatchedDescent(problem, model, problem.initial.copy(), initial, seed)
    priced = record_priced(search, monkeypatch)  # per object, its partners' containers
    search.swaps(time.monotonic() + 10)
    elsewhere = [o for o in priced
                 if o in search.suggested and search.x[o] not in search.suggested[o]]
    assert elsewhere and list(priced)[:len(elsewhere)] == elsewhere
    for o in elsewhere:
        rewarded = set(search.suggested[o].tolist())
        partners = priced[o]
        first = [c in rewarded for c in partners]
        assert first == sorted(first, reverse=True)  # rewarded containers, then the rest


def test_a_walk_empties_a_container_to_free_one_object_at_a_time() -> None:
    """ToFree counting occupied containers: the count falls only when the last of the two
    objects leaves, so the first move costs a move and lowers nothing; ToFree's guide
    (Rebalancer's local-search form) takes it."""
    found, _ = walk_with_moves_behind(
        {"toFreeSpec": {"name": "free", "containers": ["h0"],
                        "formula": "MINIMIZE_OCCUPIED_CONTAINERS"}},
        {"h0": ["a", "b"], "h1": ["c"], "h2": []})
    assert found.positions[0] == 0


def test_a_walk_takes_a_group_off_an_item_with_too_many() -> None:
    """GroupDiversity MAX: the host holds two jobs of two tasks against a limit of one,
    and a job leaves it only with its last task, so the first move costs a move and lowers
    nothing; GroupDiversity's guide (Rebalancer's local-search term) takes it."""
    found, _ = walk_with_moves_behind(
        {"groupDiversitySpec": {"name": "one_job", "scope": "host", "partition": "job",
                                "bound": "MAX", "dimension": "task_count",
                                "limit": {"globalLimit": 1}}},
        {"h0": ["a", "b", "c", "d"], "h1": [], "h2": []},
        partitions={"job": {"g1": ["a", "b"], "g2": ["c", "d"]}})
    assert found.positions[0] == 0


def test_a_walk_gathers_a_group_to_leave_its_lightest_task_alone() -> None:
    """CapacityWithGroupPresence MIN per job and host: a job present on a host counts at
    least its presence weight 2 there, against a limit of 100. The job's tasks 1, 3, 3 on
    h0 and 3, 3, 3 on h1 count 7 and 9; the value falls only once the task of 1 is alone
    (counted 2), two moves of a 3 away at least, each leaving the value flat but the last
    (and each costing a move); the guide, minus each cell's squared load, takes them to
    the enumerated optimum of the presence (not always with the fewest moves)."""
    presence = {"name": "presence", "scope": "host", "partition": "job", "dimension": "load",
                "bound": "MIN", "intent": "PER_GROUP_AND_SCOPE_ITEM",
                "groupToPresenceWeight": {"type": "ABSOLUTE", "globalLimit": 2},
                "scopeItemToLimit": {"type": "ABSOLUTE", "globalLimit": 100}}
    scenario = parse_scenario({
        "objectName": "task", "containerName": "host",
        "assignment": {"h0": ["a", "b", "c"], "h1": ["d", "e", "f"]},
        "objectDimensions": {"load": {"a": 1, "b": 3, "c": 3, "d": 3, "e": 3, "f": 3}},
        "containerDimensions": {"load": {"h0": 100, "h1": 100}},
        "partitions": {"job": {"j": ["a", "b", "c", "d", "e", "f"]}},
        "goals": [{"spec": {"capacityWithGroupPresenceSpec": presence}, "tuplePos": 0},
                  MOVES_BEHIND]})
    problem, model = scenario.problem, scenario.model
    found = descend(problem, model, problem.initial, time.monotonic() + 10)
    assert found is not None
    optimum = min(evaluation.positions[0] for _, evaluation in brute_force(scenario))
    initial = evaluate(problem, model, problem.initial).positions[0]
    assert (initial, found[1].positions[0]) == (184, optimum) and optimum < initial


def test_the_walk_ends_once_the_tuple_is_at_its_lowest(monkeypatch: pytest.MonkeyPatch) -> None:
    """Six unit objects on one of three hosts, balanced within 1.5 times the mean: the
    value falls to 0, its lowest (``Model.floors``), at 3 / 3 / 0 or 3 / 2 / 1, and the
    walk stops at the first step there. Without the floor it walks on, lowering only the
    load's spread (to 2 / 2 / 2), which no tuple asks for."""
    from cpsat_rebalancer.scenario import Model
    from cpsat_rebalancer.solve.accelerate.local_search import BatchedDescent
    from cpsat_rebalancer.solve.accelerate.tuples import at_lowest

    scenario = parse_scenario({
        "objectDimensions": {"cpu": {f"t{k}": 1 for k in range(6)}},
        "containerDimensions": {"cpu": {"h0": 10, "h1": 10, "h2": 10}},
        "assignment": {"h0": [f"t{k}" for k in range(6)], "h1": [], "h2": []},
        "goals": [{"spec": {"balanceSpec": {"dimension": "cpu", "formula": "LINEAR",
                                            "upperBound": 1.5}}}]})
    problem, model = scenario.problem, scenario.model

    def walk() -> tuple[list[float], np.ndarray]:
        start = evaluate(problem, model, problem.initial)
        search = BatchedDescent(problem, model, problem.initial.copy(), start, 0)
        values, keep = [], search._keep

        def recorded(x, key, excess, first=False):
            values.append(float(key[0]))
            keep(x, key, excess, first)

        monkeypatch.setattr(search, "_keep", recorded)
        search.run(time.monotonic() + 30)
        return values, search.kept

    values, kept = walk()
    assert values[-1] == 0 and all(v > 0 for v in values[:-1])
    assert at_lowest(model, evaluate(problem, model, kept))
    monkeypatch.setattr(Model, "floors", lambda self: {0: -np.inf})
    assert walk()[0].count(0.0) > 1


def test_a_value_at_its_floor_needs_no_floor_search() -> None:
    """A bucket proven on its compiled value is proven on the evaluator's where the
    compiled bound less the over-estimate meets the answer's value (not where the answer
    lies above its compiled value, an under-estimate), by the exact closure, or where the
    answer sits at the lowest value any assignment can have there: then the move-based
    floor, which only runs while something is unproven, would search for nothing."""
    from types import SimpleNamespace

    from cpsat_rebalancer.solve.positions import Bucket

    def proven(bucket: Bucket, value: float, bound: float | None = None) -> bool:
        return pipeline.exactly_proven(bucket, SimpleNamespace(bound=bound, leximin_levels=None),
                                       SimpleNamespace(positions={0: value}))

    assert proven(Bucket(0, over=0.0), 5.0, bound=5.0)
    assert not proven(Bucket(0, over=0.0), 5.0, bound=4.9)
    assert proven(Bucket(0, over=1e-9, exact_bound=4.0), 5.0)
    assert proven(Bucket(0, over=1e-9), 0.0)
    assert not proven(Bucket(0, over=1e-9), 1e-6, bound=1e-6)
    assert not proven(Bucket(0, over=1e-9, floor=-np.inf), 0.0)


def test_a_walk_lowers_only_the_spread_a_limited_number_of_steps_in_a_row(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """300 unit objects on one of ten hosts, under a reward no move can change (for a
    pinned object elsewhere: its floor is never reached, so the walk never stops at it)
    and a capacity rule on cpu that no move
    breaks: every step lowers only the load's spread. The walk takes SIDEWAYS_STEPS of
    them and stops; allowed more, it takes more."""
    from cpsat_rebalancer.solve.accelerate import local_search

    hosts = [f"h{c}" for c in range(10)]
    scenario = parse_scenario({
        "objectDimensions": {"cpu": {f"t{k}": 1 for k in range(300)}},
        "containerDimensions": {"cpu": dict.fromkeys(hosts, 400)},
        "assignment": {h: [f"t{k}" for k in range(300)] if h == "h0" else [] for h in hosts},
        "goals": [{"spec": {"assignmentAffinitiesSpec": {"affinities": [
            {"objectName": "t0", "scopeItemName": "h1", "affinity": 5.0}]}}}],
        "constraints": [{"spec": {"avoidMovingSpec": {"objects": ["t0"]}}, "policy": "HARD"},
                        {"spec": {"capacitySpec": {"dimension": "cpu"}}, "policy": "HARD"}]})
    problem, model = scenario.problem, scenario.model

    def steps() -> int:
        start = evaluate(problem, model, problem.initial)
        search = local_search.BatchedDescent(problem, model, problem.initial.copy(), start, 0)
        search.run(time.monotonic() + 30)
        return search.steps

    assert steps() == local_search.SIDEWAYS_STEPS
    monkeypatch.setattr(local_search, "SIDEWAYS_STEPS", 150)
    assert steps() == 150


def test_a_lazy_pass_prices_each_objects_first_chunk_a_full_pass_all(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """At a hundred containers a pass that prices every destination of every object takes
    longer than many limits: a lazy pass prices each object's FIRST_CHUNK destinations
    (the least loaded, where a move that helps mostly is), a full pass all of them."""
    from cpsat_rebalancer.solve.accelerate.local_search import FIRST_CHUNK, BatchedDescent

    problem, model, initial, _ = feasible_batchable(300, 100, 0)
    search = BatchedDescent(problem, model, problem.initial.copy(), initial, 0)
    priced = record_priced(search, monkeypatch)
    search.moves(time.monotonic() + 30, lazy=True)
    assert priced and all(len(targets) <= FIRST_CHUNK for targets in priced.values())
    loads = search.relative_loads()
    for targets in priced.values():
        assert np.all(np.diff(loads[targets]) >= 0)  # the least loaded
    priced.clear()
    search.moves(time.monotonic() + 30)
    assert max(len(targets) for targets in priced.values()) > FIRST_CHUNK


def descend_under_allowance(assignment: dict, cpu: dict, formula: str = "LINEAR"):
    """The descent's answer and the feasible enumerated optimum of position 0, for a
    Balance of cpu over hosts of 10 under a hard allowance of 6 units of cpu moved."""
    scenario = parse_scenario({
        "objectName": "task", "containerName": "host", "assignment": assignment,
        "objectDimensions": {"cpu": cpu},
        "containerDimensions": {"cpu": {host: 10 for host in assignment}},
        "goals": [{"spec": {"balanceSpec": {"name": "bal", "scope": "host", "formula": formula,
                                            "dimension": "cpu"}}, "tuplePos": 0}],
        "constraints": [{"spec": {"minimizeMovementSpec": {
            "name": "moves", "scope": "host", "dimension": "cpu", "doNotNormalize": True,
            "allowance": 6}}, "policy": "HARD"}]})
    problem, model = scenario.problem, scenario.model
    found = descend(problem, model, problem.initial, time.monotonic() + 10)
    assert found is not None
    optimum = min(evaluation.positions[0] for _, evaluation in brute_force(scenario)
                  if evaluation.feasible)
    return found[1], optimum, evaluate(problem, model, problem.initial)


def test_a_walk_spends_a_movement_allowance_where_it_buys_the_most() -> None:
    """A hard allowance of 6 units of cpu moved: taking the 6-unit object off the hot host
    is the best single step (0.3 to 0.1) but spends the whole allowance; three 1-unit
    objects lower the balance more per unit moved and reach the optimum, 0.05, found by
    enumeration."""
    found, optimum, _ = descend_under_allowance(
        {"h0": ["a", "b", "c", "d"], "h1": ["g"]}, {"a": 6, "b": 1, "c": 1, "d": 1, "g": 1})
    assert found.positions[0] == pytest.approx(optimum, rel=1e-9)
    assert optimum == pytest.approx(0.05, rel=1e-9)


def test_a_flat_walk_spends_a_movement_allowance_where_its_guide_gains_most() -> None:
    """Two hosts tie at the top of a MAX balance (a 6-unit object and three 1-unit ones
    each), so no single move lowers the value and the guide leads the walk; a hard
    allowance of 6 units moved. The 6-unit object lowers the guide most but spends the
    whole allowance and leaves the other host on top; the 1-unit objects gain the most
    per unit spent, and three off each host reach the enumerated optimum."""
    found, optimum, initial = descend_under_allowance(
        {"h0": ["a", "b", "c", "d"], "h1": ["e", "f", "g", "h"], "h2": []},
        {t: 6 if t in "ae" else 1 for t in "abcdefgh"}, formula="MAX")
    assert found.positions[0] == pytest.approx(optimum, rel=1e-9)
    assert optimum < initial.positions[0]


ONE_MOVE = {
    "job limit": {"spec": {"groupMoveLimitSpec": {
        "name": "one_move", "partitionName": "job",
        "limit": {"type": "ABSOLUTE", "globalLimit": 1}}}, "policy": "HARD"},
    "soft allowance": {"spec": {"minimizeMovementSpec": {
        "name": "one_move", "scope": "host", "doNotNormalize": True, "allowance": 1}},
        "policy": "SOFT"},
}


@pytest.mark.parametrize("budget", sorted(ONE_MOVE))
def test_a_trade_returns_a_move_that_holds_a_better_ones_budget(budget: str) -> None:
    """One move is allowed (a job's limit, or a soft allowance whose overrun costs more
    than any affinity), and b's move to h2 (affinity 1) has used it, so a's move to h1
    (affinity 5) breaks it and no single move lowers the tuple; a trade (a to h1, b back
    home) does, and the walk ends at the optimum found by enumeration."""
    scenario = parse_scenario({
        "objectName": "task", "containerName": "host",
        "assignment": {"h0": ["a", "b"], "h1": [], "h2": []},
        "partitions": {"job": {"j": ["a", "b"]}},
        "goals": [{"spec": {"assignmentAffinitiesSpec": {"name": "aff", "scope": "host",
                   "affinities": [{"objectName": "a", "scopeItemName": "h1", "affinity": 5},
                                  {"objectName": "b", "scopeItemName": "h2",
                                   "affinity": 1}]}}, "tuplePos": 0}],
        "constraints": [ONE_MOVE[budget]]})
    problem, model = scenario.problem, scenario.model
    start = problem.initial.copy()
    start[problem.object_index["b"]] = problem.container_index["h2"]
    assert not any(evaluation.feasible and better(tuple_key(evaluation),
                                                  tuple_key(evaluate(problem, model, start)))
                   for evaluation in (evaluate(problem, model, moved)
                                      for moved in single_moves(scenario, start)))
    found = descend(problem, model, start, time.monotonic() + 10)
    assert found is not None
    optimum = min(tuple_key(evaluation) for _, evaluation in brute_force(scenario)
                  if evaluation.feasible)
    assert not better(optimum, tuple_key(found[1]))
    assert found[0][problem.object_index["a"]] == problem.container_index["h1"]


@pytest.mark.parametrize("formula, assignment, cpu", [
    ("MAX", {"h0": ["b", "f", "g"], "h1": ["a", "c", "d", "e"]},
     {"a": 5, "b": 7, "c": 1, "d": 9, "e": 4, "f": 1, "g": 7}),
    ("LEGACY", {"h0": ["a", "b", "c"], "h1": ["d", "e", "f"]},
     {"a": 1, "b": 3, "c": 2, "d": 6, "e": 5, "f": 3}),
])
def test_an_exchange_of_one_object_for_two_cools_the_hottest_host(
        formula: str, assignment: dict, cpu: dict) -> None:
    """The hot host can shed load only by giving one object for two smaller ones (or two
    for one): no single move or swap lowers its MAX (or LEGACY) term, and the exchanges
    between the hottest host and the coolest reach the optimum, found by enumeration."""
    balance = {"name": "bal", "scope": "host", "dimension": "cpu", "formula": formula}
    if formula == "LEGACY":
        balance["fixAverageToInitial"] = True
    found, initial = walk_with_moves_behind(
        {"balanceSpec": balance}, assignment, objectDimensions={"cpu": cpu},
        containerDimensions={"cpu": {h: 20 for h in assignment}})
    assert found.positions[0] == 0.0 < initial.positions[0]


@pytest.mark.parametrize("hot_closed", [False, True])
def test_exchange_candidates_cool_both_containers_and_respect_a_closed_host(
        hot_closed: bool) -> None:
    """Every candidate moves two to four objects between the hottest host and a partner
    and leaves both below the hot host's load now (recomputed here); into a closed hot
    host, only objects that started there."""
    sizes = {"a": 5, "b": 7, "c": 1, "d": 9, "e": 4, "f": 1, "g": 7, "h": 2}
    scenario = parse_scenario({
        "objectName": "task", "containerName": "host",
        "assignment": {"h0": ["b", "f", "g"], "h1": ["a", "c", "d", "e"], "h2": ["h"]},
        "objectDimensions": {"cpu": sizes}, "containerDimensions": {"cpu": {
            "h0": 20, "h1": 20, "h2": 20}},
        "goals": [{"spec": {"balanceSpec": {"name": "bal", "scope": "host",
                                            "dimension": "cpu", "formula": "MAX"}}}]})
    problem = scenario.problem
    x = problem.initial.copy()
    x[problem.object_index["b"]] = problem.container_index["h1"]  # b left h0, closed
    closed = np.zeros(3, dtype=bool)
    closed[problem.container_index["h1"]] = hot_closed
    cpu = problem.values_at("cpu", x)
    load = np.bincount(x, weights=cpu, minlength=3)
    hot = int(np.argmax(load))
    assert problem.containers[hot] == "h1"
    objects, targets = exchange_candidates(problem, "cpu", x, load / 20, hot,
                                           np.ones(8, dtype=bool), closed, np.array([0, 2]),
                                           100)
    assert len(objects)
    for row, to in zip(objects, targets):
        moved = row >= 0
        out, into = moved[:2].sum(), moved[2:].sum()
        assert out >= 1 and (out, into) not in {(1, 0), (1, 1)}  # nor a move nor a swap
        after = x.copy()
        after[row[moved]] = to[moved]
        new = np.bincount(after, weights=cpu, minlength=3)
        touched = np.unique(np.concatenate([x[row[moved]], to[moved]]))
        assert (new[touched] < load[hot]).all()
        entering = row[2:][row[2:] >= 0]
        if hot_closed:
            assert (problem.initial[entering] == hot).all()


@pytest.mark.parametrize("seed", range(8))
def test_a_carried_walk_goes_on_from_any_start_to_where_no_single_move_helps(
        seed: int) -> None:
    """A walk carried into a second search from another assignment (the start
    with two objects moved) keeps its marks only where that assignment left containers as
    they were: it still ends where no single move helps, and never worse than its start."""
    from cpsat_rebalancer.solve.accelerate.local_search import Carried

    problem, model, initial, shape_seed = feasible_batchable(24, 5, 3 * seed)
    scenario = parse_scenario(random_shape_scenario(24, 5, shape_seed))
    carried = Carried()
    first = descend(problem, model, problem.initial, time.monotonic() + 10, carried=carried)
    assert carried.search is not None
    other = (first[0] if first is not None else problem.initial).copy()
    rng = np.random.default_rng(seed)
    for obj in rng.choice(problem.num_objects, size=2, replace=False):
        other[obj] = rng.integers(problem.num_containers)
    before = evaluate(problem, model, other)
    if not before.feasible:
        other, before = problem.initial.copy(), initial
    found = descend(problem, model, other, time.monotonic() + 10, carried=carried)
    if found is None:
        assert not improving_move_exists(scenario, other)
        return
    assert found[1].feasible and better(tuple_key(found[1]), tuple_key(before))
    assert not improving_move_exists(scenario, found[0])


def count_priced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the batches the walk prices from now on, appended as it prices them."""
    from cpsat_rebalancer.solve.accelerate import local_search

    batches: list[int] = []
    original = local_search.MoveBatch

    def counted(base, objects, targets):
        batches.append(len(objects))
        return original(base, objects, targets)

    monkeypatch.setattr(local_search, "MoveBatch", counted)
    return batches


def test_a_carried_walk_prices_only_what_changed_since_it_ended(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Carried into a search from the assignment it ended at, a walk prices only the
    objects of the containers that changed since their moves were last priced (none), then
    the full pass that ends every search; a new walk prices every object twice."""
    from cpsat_rebalancer.solve.accelerate import local_search

    problem, model, initial, _ = feasible_batchable(60, 8, 0)
    carried = local_search.Carried()
    found = descend(problem, model, problem.initial, time.monotonic() + 10, carried=carried)
    end = found[0] if found is not None else problem.initial
    batches = count_priced(monkeypatch)
    assert descend(problem, model, end, time.monotonic() + 10, carried=carried) is None
    carried_priced = sum(batches)
    batches.clear()
    assert descend(problem, model, end, time.monotonic() + 10) is None
    assert carried_priced < sum(batches)


def with_move(x: np.ndarray, obj: int, container: int) -> np.ndarray:
    moved = x.copy()
    moved[obj] = container
    return moved


@pytest.mark.parametrize("seed", range(4))
def test_a_touch_up_after_another_search_prices_only_around_what_it_changed(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where another search moved one object after the walk ended, a carried walk's touch
    up (``touch_up``) prices the objects around that change and not the full passes:
    where the move made the tuple worse, it improves on it (putting the object back is
    one of the moves it prices), with fewer candidates priced than a carried full walk
    from there."""
    from cpsat_rebalancer.solve.accelerate import local_search

    rng = np.random.default_rng(seed)
    shape_seed = 7 * seed
    while True:  # a shape where one object of the walk's end can move, keeping the rules
        problem, model, initial, shape_seed = feasible_batchable(60, 8, shape_seed)
        carried = local_search.Carried()
        found = descend(problem, model, problem.initial, time.monotonic() + 10,
                        carried=carried)
        end = found[0] if found is not None else problem.initial
        moved = next((candidate for candidate in
                      (with_move(end, obj, container) for obj in rng.permutation(60)
                       for container in range(8) if container != end[obj])
                      if evaluate(problem, model, candidate).feasible), None)
        if moved is not None:
            break
        shape_seed += 1
    ended = evaluate(problem, model, end)
    batches = count_priced(monkeypatch)
    touched = descend(problem, model, moved, time.monotonic() + 10, carried=carried,
                      touch_up=True)
    touched_priced = sum(batches)
    before = evaluate(problem, model, moved)
    if better(tuple_key(ended), tuple_key(before)):  # putting it back is a move that pays
        assert touched is not None
    if touched is not None:
        assert touched[1].feasible and better(tuple_key(touched[1]), tuple_key(before))
    batches.clear()
    descend(problem, model, moved, time.monotonic() + 10, carried=carried)
    assert touched_priced < sum(batches)


@pytest.mark.parametrize("seed", range(6))
def test_moves_in_flight_keep_the_local_search_that_repairs_a_broken_start(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Moves in flight turn CP-SAT's accelerators off (they count moves from the start);
    the local searches judged by the evaluator stay on: a start that breaks a hard
    avoidance is repaired by the one before the chain, even where the chain finds nothing
    (stubbed out here), and the answer is no worse than that search's fixed point."""
    data = random_scenario(seed)
    hosts = list(data["assignment"])
    occupied = [h for h in hosts if data["assignment"][h]]
    flying, stuck = data["assignment"][occupied[0]][0], data["assignment"][occupied[-1]][-1]
    data.setdefault("constraints", []).extend([
        {"spec": {"movesInProgressSpec": {"moves": [
            {"objName": flying, "toContainer": hosts[1] if occupied[0] == hosts[0]
             else hosts[0]}]}}},
        {"spec": {"avoidAssignmentsSpec": {"scope": "host", "assignments": [
            {"object": stuck, "scopeItems": [occupied[-1]]}]}}, "policy": "HARD"}])
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    assert problem.origin is not None
    assert not evaluate(problem, model, problem.initial).feasible
    found = descend(problem, model, problem.initial, time.monotonic() + 30, 0)
    if found is None:  # the rest of the model leaves no room to repair it
        return
    stub_the_chain(monkeypatch)
    result = pipeline.solve_model(problem, model, SolverOptions(time_limit=20, workers=1))
    assert result.final_evaluation.feasible
    assert not better(tuple_key(found[1]), tuple_key(result.final_evaluation))


def test_the_floor_goes_on_in_windows_only_while_the_tuple_falls(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The floor after the chain walks in windows (the time kept back, or a fifth of what
    is left, whichever is longer) and stops at the first window that finds nothing better:
    a walk guided along equal tuples would otherwise hold the answer to the deadline."""
    from types import SimpleNamespace

    now = [100.0]
    monkeypatch.setattr(pipeline.time, "monotonic", lambda: now[0])
    windows, better_until = [], 2

    def walk(problem, model, start, deadline, seed, stop, carried=None):
        windows.append(deadline - now[0])
        now[0] = deadline  # each window used whole
        return (start + 1, f"evaluation {len(windows)}") if len(windows) <= better_until \
            else None

    monkeypatch.setattr(pipeline.local_search, "descend", walk)
    session = SimpleNamespace(deadline=lambda: 150.0, reserve=3.0, interrupted=False,
                              builder=SimpleNamespace(problem=None), model=None,
                              options=SimpleNamespace(seed=0), carried=None)
    found = pipeline.move_floor(session, np.zeros(3, dtype=np.int64))
    assert windows == pytest.approx([10.0, 8.0, 6.4])  # a fifth of 50, of 40, of 32
    assert found[1] == "evaluation 2" and (found[0] == 2).all()
    windows.clear()
    now[0], better_until = 146.0, 0
    assert pipeline.move_floor(session, np.zeros(3, dtype=np.int64)) is None
    assert windows == pytest.approx([3.0])  # the time kept back, longer than a fifth of 4


@pytest.mark.parametrize("proven", [True, False])
def test_the_fewest_moves_polish_runs_only_when_every_bucket_is_proven(
        proven: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a time limit, a bucket left unproven may still be improved by the
    local-search floor after the chain, which then takes the time the fewest-moves polish
    would: the polish (fewer moves at the same values) runs only after a proven chain."""
    data = random_scenario(3)
    scenario = parse_scenario(data)
    real = pipeline.solve_buckets

    def chain(session, buckets):
        reports, stop = real(session, buckets)
        assert all(r.status == "OPTIMAL" for r in reports)  # (tiny: proven)
        if not proven:
            reports[0].status = "FEASIBLE"
        return reports, stop

    polished = []
    monkeypatch.setattr(pipeline, "solve_buckets", chain)
    monkeypatch.setattr(pipeline, "fewest_moves", lambda *args: polished.append(True))
    pipeline.solve_model(scenario.problem, scenario.model, SolverOptions(time_limit=20.0))
    assert bool(polished) is proven
