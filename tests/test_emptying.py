"""Emptying a container whole (solve.accelerate.emptying): where a goal counts used
containers and each single move out of a container costs more than its guide gives back,
the local search still reaches the lower count, and it keeps an emptying only when the
evaluator finds the tuple lower."""

from __future__ import annotations

import time

import numpy as np
import pytest
from randomized import brute_force

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.solve.accelerate import emptying
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


def test_without_emptying_the_walk_stays(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same walk with no container to empty finds nothing: the step needs both tasks."""
    monkeypatch.setattr(emptying, "TRIES", 0)
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


def test_containers_not_tried_since_they_changed_come_first() -> None:
    """Of four light containers, the two tried since they last changed (a failed
    emptying) come after the two not tried, each pair least loaded first; one holding a
    held object, one empty and one tried at the walk's current version are not tried."""
    x = np.array([0, 1, 2, 3, 4, 5, 6])  # container c holds object c; container 7 is empty
    movable = np.ones(7, dtype=bool)
    movable[5] = False  # container 5 holds a held object
    emptiable = np.arange(8)
    version = 10
    changed_at = np.array([3, 3, 3, 3, 3, 3, 3, 3])
    tried_at = np.array([5, 2, 4, 1, -1, -1, version, -1])  # 0 and 2 tried since they changed
    loads = np.array([0.1, 0.4, 0.2, 0.3, 0.9, 0.0, 0.0, 0.0])
    order = emptying.to_try(x, movable, emptiable, tried_at, changed_at, version, loads)
    assert order.tolist() == [3, 1, 4, 0, 2][:emptying.TRIES]
