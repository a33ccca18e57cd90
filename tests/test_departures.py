"""Objects that leave together (solve.accelerate.departures): where a goal counts used
containers, or groups present in a scope item, and each single move on the way costs, the
local search still reaches the lower value in one compound step, and keeps it only when
the evaluator finds the tuple lower."""

from __future__ import annotations

import time

import numpy as np
import pytest
from randomized import brute_force

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.context import EvalContext
from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.solve.accelerate import departures
from cpsat_rebalancer.solve.accelerate.local_search import descend
from cpsat_rebalancer.solve.accelerate.tuples import better, tuple_key


def split_to_empty(minc: dict | None = None) -> dict:
    """h0 (capacity 10) holds a job's two tasks (3 each), h1 (12) a filler of 5 and h2
    (10) one of 8: no filler fits elsewhere. MinimizeContainers and ColocateGroups share
    position 0, moves come after: moving one task alone splits the job (the colocation's
    penalty rises, no host is freed), so no single move lowers the tuple, nor does a
    swap; both tasks onto h1 free h0 and keep the job together."""
    return {
        "objectName": "task", "containerName": "host",
        "objectDimensions": {"cpu": {"a": 3, "b": 3, "f": 5, "g": 8}},
        "containerDimensions": {"cpu": {"h0": 10, "h1": 12, "h2": 10}},
        "assignment": {"h0": ["a", "b"], "h1": ["f"], "h2": ["g"]},
        "partitions": {"job": {"j": ["a", "b"], "jf": ["f"], "jg": ["g"]}},
        "goals": [
            {"spec": {"minimizeContainersSpec": {"name": "minc", "scope": "host",
                                                 "dimension": "cpu", **(minc or {})}},
             "tuplePos": 0},
            {"spec": {"colocateGroupsSpec": {"name": "coloc", "scope": "host",
                                             "partitionName": "job"}}, "tuplePos": 0},
            {"spec": {"minimizeMovementSpec": {"name": "moves", "scope": "host"}},
             "tuplePos": 1}],
        "constraints": [{"spec": {"capacitySpec": {"name": "cap", "scope": "host",
                                                   "dimension": "cpu"}}, "policy": "HARD"}],
    }


def test_a_walk_empties_a_container_no_single_move_frees() -> None:
    """``split_to_empty``: the walk frees h0 with both tasks on h1 (the enumerated
    optimum), and without emptying it stays at the start."""
    scenario = parse_scenario(split_to_empty())
    problem, model = scenario.problem, scenario.model
    start = evaluate(problem, model, problem.initial)
    best = min((tuple_key(e) for _, e in brute_force(scenario)),
               key=lambda k: [v for part in k for v in part])
    found = descend(problem, model, problem.initial, time.monotonic() + 10.0)
    assert found is not None
    x, evaluation = found
    assert not better(best, tuple_key(evaluation)) and not better(tuple_key(evaluation), best)
    assert x[problem.object_index["a"]] == x[problem.object_index["b"]] == 1
    assert better(tuple_key(evaluation), tuple_key(start))


def split_to_free() -> dict:
    """``split_to_empty`` with ToFree's occupied containers (h0 listed) in place of
    MinimizeContainers: h0 is freed only with both tasks, and one alone splits the job."""
    data = split_to_empty()
    data["goals"][0] = {"spec": {"toFreeSpec": {
        "name": "free", "containers": ["h0"], "dimension": "cpu",
        "formula": "MINIMIZE_OCCUPIED_CONTAINERS"}}, "tuplePos": 0}
    return data


def no_departures(monkeypatch: pytest.MonkeyPatch) -> None:
    """A round tries no departure."""
    monkeypatch.setattr(departures, "TRIES", 0)
    monkeypatch.setattr(departures, "SECONDS", 0.0)


def test_without_emptying_the_walk_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same walk with no departure tried finds nothing: the step needs both tasks."""
    no_departures(monkeypatch)
    scenario = parse_scenario(split_to_empty())
    problem, model = scenario.problem, scenario.model
    assert descend(problem, model, problem.initial, time.monotonic() + 10.0) is None


def test_an_emptying_that_does_not_lower_the_tuple_is_not_kept() -> None:
    """With h0 free of cost (containerCosts 0), freeing it lowers nothing, and moves come
    after: the walk keeps the start."""
    scenario = parse_scenario(split_to_empty({"containerCosts": {"h0": 0}}))
    problem, model = scenario.problem, scenario.model
    found = descend(problem, model, problem.initial, time.monotonic() + 10.0)
    assert found is None or np.array_equal(found[0], problem.initial)


def crowded_rack() -> dict:
    """Two racks of two hosts, at most one job per rack on r0 and two on r1
    (GroupDiversity MAX, weight 10) and moves at the same position: r0 holds job A's two
    tasks and job B's two, r1 job C's one. B's two tasks onto r1 lower the diversity by
    one for two moves; one task alone lowers nothing and costs a move, and a swap brings
    C onto r0."""
    return {
        "objectName": "task", "containerName": "host",
        "objectDimensions": {"cpu": {"a1": 1, "a2": 1, "b1": 1, "b2": 1, "c1": 1}},
        "containerDimensions": {"cpu": {"h0": 10, "h1": 10, "h2": 10, "h3": 10}},
        "assignment": {"h0": ["a1", "b1"], "h1": ["a2", "b2"], "h2": ["c1"], "h3": []},
        "scopes": {"rack": {"h0": "r0", "h1": "r0", "h2": "r1", "h3": "r1"}},
        "partitions": {"job": {"A": ["a1", "a2"], "B": ["b1", "b2"], "C": ["c1"]}},
        "goals": [
            {"spec": {"groupDiversitySpec": {
                "name": "diverse", "scope": "rack", "dimension": "cpu", "bound": "MAX",
                "partition": "job",
                "limit": {"globalLimit": 1, "scopeItemLimits": {"r1": 2}}}},
             "tuplePos": 0, "weight": 10},
            {"spec": {"minimizeMovementSpec": {"name": "moves", "scope": "host"}},
             "tuplePos": 0}],
    }


def split_job() -> dict:
    """Job A's two tasks on h0 and two on h1, at most one host (ColocateGroups MAX,
    weight 10), moves at the same position: h1's two onto h0 (room for both) lower the
    colocation by one for two moves; one alone lowers nothing and costs a move."""
    return {
        "objectName": "task", "containerName": "host",
        "objectDimensions": {"cpu": {"a1": 1, "a2": 1, "a3": 1, "a4": 1}},
        "containerDimensions": {"cpu": {"h0": 4, "h1": 4, "h2": 4}},
        "assignment": {"h0": ["a1", "a2"], "h1": ["a3", "a4"], "h2": []},
        "partitions": {"job": {"A": ["a1", "a2", "a3", "a4"]}},
        "goals": [
            {"spec": {"colocateGroupsSpec": {"name": "coloc", "scope": "host",
                                             "partitionName": "job",
                                             "limits": {"globalLimit": 1}}},
             "tuplePos": 0, "weight": 10},
            {"spec": {"minimizeMovementSpec": {"name": "moves", "scope": "host"}},
             "tuplePos": 0}],
        "constraints": [{"spec": {"capacitySpec": {"name": "cap", "scope": "host",
                                                   "dimension": "cpu"}}, "policy": "HARD"}],
    }


@pytest.mark.parametrize("build", [crowded_rack, split_job, split_to_free])
def test_a_walk_takes_a_set_out_together(monkeypatch: pytest.MonkeyPatch, build) -> None:
    """``crowded_rack`` (a group out of a GroupDiversity item), ``split_job`` (out of a
    ColocateGroups item) and ``split_to_free`` (a container ToFree lists freed): the walk
    reaches the enumerated optimum; without departures it stays at the start."""
    scenario = parse_scenario(build())
    problem, model = scenario.problem, scenario.model
    best = min(e.positions[0] for _, e in brute_force(scenario))
    start = evaluate(problem, model, problem.initial).positions[0]
    found = descend(problem, model, problem.initial, time.monotonic() + 10.0)
    assert found is not None and start > best
    assert found[1].positions[0] == pytest.approx(best, rel=1e-9)
    no_departures(monkeypatch)
    assert descend(problem, model, problem.initial, time.monotonic() + 10.0) is None


def test_departures_not_tried_since_they_changed_come_first() -> None:
    """Of five departures, those tried since their containers last changed come last,
    the others by fewest failed tries, then lightest; one moving a held object and one
    tried at the walk's current version are not offered."""
    movable = np.ones(8, dtype=bool)
    movable[7] = False
    sizes = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    version = 10
    changed_at = np.array([3, 3, 8, 8])
    offered = [(np.array([2]), np.array([0])),  # tried at 5, after its change: stale
               (np.array([4]), np.array([2])),  # never tried
               (np.array([0, 1]), np.array([3])),  # never tried, lighter (3.0 < 5.0)
               (np.array([3]), np.array([2])),  # failed once, at 5: changed since
               (np.array([5]), np.array([1])),  # tried now
               (np.array([6, 7]), np.array([1]))]  # moves a held object
    tried = {departures.key(offered[0]): (5, 1), departures.key(offered[3]): (5, 1),
             departures.key(offered[4]): (version, 0)}
    order = departures.ordered(offered, movable, tried, changed_at, version, sizes)
    assert [(departures.key(d), stale) for d, stale in order] == [
        (departures.key(offered[i]), i == 0) for i in (2, 1, 3, 0)]


def test_a_round_offers_the_sets_of_the_positions_asked() -> None:
    """With MinimizeContainers at position 1, a round that asks for position 0 only (an
    earlier position still falling) offers none of its sets; one that asks for all does."""
    data = split_to_empty()
    data["goals"][0]["tuplePos"] = 1
    data["goals"][2]["tuplePos"] = 2
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    context = EvalContext(problem, problem.initial, problem.initial)
    assert departures.offered(model, context, up_to=0) == []
    everything = departures.offered(model, context)
    assert [sorted(left.tolist()) for _, left in everything] == [[0], [1], [2]]


def test_a_repair_takes_a_group_into_one_item(monkeypatch: pytest.MonkeyPatch) -> None:
    """``split_job`` with the colocation a HARD rule: the start breaks it, and no single
    move lowers its excess (a task alone leaves the job on two hosts); the repair moves
    both tasks of one host at once and keeps the rule; without departures it finds none."""
    data = split_job()
    coloc = data["goals"].pop(0)
    data["constraints"].append({"spec": coloc["spec"], "policy": "HARD"})
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    assert not evaluate(problem, model, problem.initial).feasible
    found = descend(problem, model, problem.initial, time.monotonic() + 10.0,
                    until_feasible=True)
    assert found is not None and found[1].feasible
    assert len(set(found[0].tolist())) == 1
    no_departures(monkeypatch)
    assert descend(problem, model, problem.initial, time.monotonic() + 10.0,
                   until_feasible=True) is None
