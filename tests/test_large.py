"""A model too large to build in its time limit (solve.large): its sub-models are the whole
model with all but a few containers held, solved exactly; the search over them never
returns worse than its start, and claims nothing it did not prove."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
import pytest
from randomized import brute_force, random_scenario

from cpsat_rebalancer import evaluate, parse_scenario
from cpsat_rebalancer.evaluate import batchable
from cpsat_rebalancer.result import FEASIBLE, OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.shapes import REPORTED_SHAPES, random_shape_scenario, shape_scenario
from cpsat_rebalancer.solve import large
from cpsat_rebalancer.solve.accelerate import local_search
from cpsat_rebalancer.solve.accelerate.tuples import better, tuple_key
from cpsat_rebalancer.solve.pipeline import solve_model

REL = 1e-9


def same_tuple(a: list[tuple[float, ...]], b: list[tuple[float, ...]]) -> bool:
    return all(abs(u - v) <= REL * max(1.0, abs(u), abs(v))
               for x, y in zip(a, b) for u, v in zip(x, y))


def seeds_with_containers(count: int, least: int = 3) -> list[int]:
    """The first ``count`` drawn tiny scenarios with at least ``least`` containers."""
    seeds, seed = [], 0
    while len(seeds) < count:
        if parse_scenario(random_scenario(seed, max_objects=5)).problem.num_containers >= least:
            seeds.append(seed)
        seed += 1
    return seeds


@pytest.mark.parametrize("seed", seeds_with_containers(40))
def test_a_sub_model_is_solved_to_the_enumerated_optimum_of_what_it_frees(seed: int) -> None:
    """From a feasible assignment other than the start, freeing two containers: the solve
    of the sub-model (hinted there, as the search runs it) is OPTIMAL at the lexicographic
    minimum of every assignment that keeps its held objects where they are and brings no
    object into a container not freed (besides its own), found by enumeration."""
    scenario = parse_scenario(random_scenario(seed, max_objects=5))
    problem, model = scenario.problem, scenario.model
    feasible = brute_force(scenario)
    if not feasible:
        pytest.skip("no assignment keeps the hard rules")
    rng = np.random.default_rng(seed)
    x = feasible[int(rng.integers(len(feasible)))][0]
    freed = np.sort(rng.choice(problem.num_containers, 2, replace=False))
    sub_model = large._restricted(problem, model, x, freed)
    allowed = brute_force(replace(scenario, model=sub_model))
    assert any(np.array_equal(y, x) for y, _ in allowed)
    best = min((tuple_key(e) for _, e in allowed), key=lambda k: [v for p in k for v in p])
    for _, e in allowed:  # the enumerated minimum, to the tolerance
        assert not better(tuple_key(e), best)
    result = solve_model(problem, sub_model, SolverOptions(workers=1, seed=0), hint=x,
                         accelerate=False)
    assert result.status == OPTIMAL
    assert result.final_evaluation.feasible
    assert same_tuple(tuple_key(result.final_evaluation), best), (seed, freed, x)
    held = np.setdiff1d(np.arange(problem.num_objects), np.flatnonzero(np.isin(x, freed)))
    assert np.array_equal(result.final[held], x[held])


def shape(seed: int) -> tuple:
    """A drawn shape at 60 objects and 8 containers whose start keeps the hard rules."""
    while True:
        scenario = parse_scenario(random_shape_scenario(60, 8, seed))
        start = evaluate(scenario.problem, scenario.model, scenario.problem.initial)
        if start.feasible:
            return scenario, start
        seed += 1000


@pytest.mark.parametrize("seed", range(6))
def test_a_model_too_large_returns_its_start_improved_never_worse(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Priced as too large to build (any count variable a second), the solve searches
    sub-models: its answer keeps the hard rules, is never lexicographically worse than the
    start, is evaluated as the evaluator evaluates it, and states no bound it did not
    prove: without the coarse relaxation, each position's floor where it has one (the
    gap then true, if wide)."""
    monkeypatch.setattr(large, "SECONDS_PER_COUNT", 1.0)
    scenario, start = shape(seed)
    problem, model = scenario.problem, scenario.model
    options = SolverOptions(time_limit=4.0, workers=1, seed=0)
    assert large.too_large(problem, model, options)
    result = solve_model(problem, model, options)
    evaluation = evaluate(problem, model, result.final)
    assert evaluation.feasible
    assert not better(tuple_key(start), tuple_key(evaluation))
    assert same_tuple(tuple_key(evaluation), tuple_key(result.final_evaluation))
    assert result.status == FEASIBLE or result.status == OPTIMAL and all(
        b.status == OPTIMAL for b in result.buckets)
    floors = model.floors()
    for report in result.buckets:
        value = evaluation.positions.get(report.position, 0.0)
        assert report.bound is None or report.bound <= value + REL * max(1.0, abs(value))
        if report.position not in evaluation.leximin and math.isfinite(
                floors[report.position]):
            assert report.bound is not None and report.bound >= floors[report.position]


def split_job() -> dict:
    """Two hosts each hold one of a job's two tasks, and the job is to be colocated on one
    host with a movement goal after: no single move keeps the capacity rule, so the start
    is stuck for a local search; freeing both hosts (a sub-model of the whole) swaps a
    task for filler and reaches the colocated assignment."""
    return {
        "objectName": "task", "containerName": "host",
        "objectDimensions": {"cpu": {"a": 4, "b": 4, "f1": 4, "f2": 4}},
        "containerDimensions": {"cpu": {"h0": 8, "h1": 8}},
        "assignment": {"h0": ["a", "f1"], "h1": ["b", "f2"]},
        "partitions": {"job": {"j": ["a", "b"], "g1": ["f1"], "g2": ["f2"]}},
        "goals": [{"spec": {"colocateGroupsSpec": {"name": "coloc", "scope": "host",
                                                   "partitionName": "job"}}, "tuplePos": 0},
                  {"spec": {"minimizeMovementSpec": {"name": "moves", "scope": "host"}},
                   "tuplePos": 1}],
        "constraints": [{"spec": {"capacitySpec": {"name": "cap", "scope": "host",
                                                   "dimension": "cpu"}}, "policy": "HARD"}],
    }


def test_the_search_over_sub_models_improves_a_start_single_moves_cannot() -> None:
    """``split_job``: the search over sub-models colocates the job."""
    scenario = parse_scenario(split_job())
    problem, model = scenario.problem, scenario.model
    start = evaluate(problem, model, problem.initial)
    options = SolverOptions(time_limit=10.0, workers=1, seed=0)

    def sub_solve(sub_model, hint, sub_options):
        return solve_model(problem, sub_model, sub_options, hint=hint, accelerate=False)

    found = large.search(problem, model, options, problem.initial, start,
                         time.monotonic() + 5.0, sub_solve, lambda: False, lambda: None)
    assert found is not None
    final, evaluation = found
    assert evaluation.feasible
    assert evaluation.positions[0] < start.positions[0]
    assert final[problem.object_index["a"]] == final[problem.object_index["b"]]


def test_the_walk_goes_on_from_each_better_sub_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sub-model colocates ``split_job``'s job (on a third host) but moves a filler task
    for nothing, where it holds the other containers: the search hands each better answer
    to ``polish`` (here the walk, touching up around what changed), which takes the filler
    home, and keeps the polished answer; a polish that returns nothing better changes
    nothing."""
    data = split_job()
    data["containerDimensions"]["cpu"]["h2"] = 8
    data["assignment"]["h2"] = []
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    index = problem.object_index
    wasteful = problem.initial.copy()  # a and b on h2, f1 next to f2 on h1
    wasteful[[index["a"], index["b"]]] = 2
    wasteful[index["f1"]] = 1
    start = evaluate(problem, model, problem.initial)
    options = SolverOptions(time_limit=2.0, workers=1, seed=0)

    def sub_solve(sub_model, hint, sub_options):  # a real solve, its answer replaced
        result = solve_model(problem, sub_model, sub_options, hint=hint, accelerate=False)
        return replace(result, final=wasteful.copy())

    handed: list[np.ndarray] = []

    def touched_up(x, evaluation):
        handed.append(x.copy())
        return local_search.descend(problem, model, x, time.monotonic() + 5, touch_up=True)

    found = large.search(problem, model, options, problem.initial, start,
                         time.monotonic() + 2.0, sub_solve, lambda: False, lambda: None,
                         touched_up)
    assert len(handed) == 1 and np.array_equal(handed[0], wasteful)
    assert found is not None
    final, evaluation = found
    assert final[index["a"]] == final[index["b"]] == 2
    assert final[index["f1"]] == 0 and evaluation.positions[1] < evaluate(
        problem, model, wasteful).positions[1]
    kept = large.search(problem, model, options, problem.initial, start,
                        time.monotonic() + 2.0, sub_solve, lambda: False, lambda: None,
                        lambda x, evaluation: None)
    assert kept is not None and np.array_equal(kept[0], wasteful)


def test_each_sub_model_has_its_time_after_a_long_walk(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    """A sub-model's time limit counts from when it starts, not from the solve's start:
    after single moves that took longer than any sub-model's step (here a walk that spends
    4.5 s and finds nothing), the sub-models still colocate ``split_job``'s job (without
    the accelerators, whose coarse relaxation would colocate it first)."""
    scenario = parse_scenario(split_job())
    problem, model = scenario.problem, scenario.model
    monkeypatch.setattr(large, "too_large", lambda _p, whole, _o: whole is model)
    walk, walks = local_search.descend, []

    def slow_first_walk(*args, **kwargs):
        walks.append(time.monotonic())
        if len(walks) == 1:
            time.sleep(4.5)
            return None
        return walk(*args, **kwargs)

    monkeypatch.setattr(local_search, "descend", slow_first_walk)
    result = solve_model(problem, model, SolverOptions(time_limit=10.0, workers=1, seed=0),
                         accelerate=False)
    final = result.final
    assert walks and result.final_evaluation.feasible
    assert final[problem.object_index["a"]] == final[problem.object_index["b"]]


@pytest.mark.parametrize("phase", ["single moves", "sub-model"])
def test_ctrl_c_in_a_model_too_large_returns_the_best_answer(
        phase: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the single moves run, or while a sub-model is being made: the answer
    is the best held (at least the start), its termination interrupted."""
    from cpsat_rebalancer.solve.accelerate import local_search

    def interrupt(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(large, "SECONDS_PER_COUNT", 1.0)
    if phase == "single moves":
        monkeypatch.setattr(local_search.BatchedDescent, "run", interrupt)
    else:
        monkeypatch.setattr(large, "_restricted", interrupt)
    seed = 0
    while not batchable(shape(seed)[0].problem, shape(seed)[0].model):  # single moves run
        seed += 1
    scenario, start = shape(seed)
    problem, model = scenario.problem, scenario.model
    result = solve_model(problem, model, SolverOptions(time_limit=20.0, workers=1, seed=0))
    assert result.termination == "interrupted"
    assert result.seconds < 10
    evaluation = evaluate(problem, model, result.final)
    assert evaluation.feasible
    assert not better(tuple_key(start), tuple_key(evaluation))


def test_a_sub_model_stopped_while_compiling_gets_twice_the_time_next() -> None:
    """A sub-model whose compile did not end in its step was never searched: the next
    gets twice the time, up to LONGEST_STEP_SHARE of the limit."""
    from cpsat_rebalancer.result import SolveResult

    scenario, start = shape(0)
    problem, model = scenario.problem, scenario.model
    limits: list[float] = []

    def never_compiled(sub_model, hint, sub_options):
        limits.append(sub_options.time_limit)
        return SolveResult(problem, FEASIBLE, "time_limit", problem.initial.copy(), start,
                           start, [], 0.0, classes=0)

    options = SolverOptions(time_limit=60.0, workers=1, seed=0)
    calls = iter(range(4))
    found = large.search(problem, model, options, problem.initial, start,
                         time.monotonic() + 60, never_compiled,
                         lambda: next(calls, None) is None, lambda: None)
    assert found is None
    assert [round(t) for t in limits] == [6, 12, 24, 24]


def test_no_sub_model_starts_that_cannot_end_before_the_deadline() -> None:
    """A sub-model costs its evaluation and compile whatever its time limit: with less
    time left than the quickest round took, the search ends instead of overrunning."""
    from cpsat_rebalancer.result import SolveResult

    scenario, start = shape(0)
    problem, model = scenario.problem, scenario.model

    def slow_compile(sub_model, hint, sub_options):
        time.sleep(0.8)
        return SolveResult(problem, FEASIBLE, "time_limit", problem.initial.copy(), start,
                           start, [], 0.0, classes=0)

    options = SolverOptions(time_limit=2.2, workers=1, seed=0)
    deadline = time.monotonic() + 2.2
    large.search(problem, model, options, problem.initial, start, deadline, slow_compile,
                 lambda: False, lambda: None)
    assert time.monotonic() <= deadline + 0.05


def test_an_answer_at_every_floor_is_proven_without_the_whole_model(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A SQUARES balance beside a SOFT capacity, broken at the start: single moves reach 0
    at the only position, the lowest value any assignment has there (``Model.floors``).
    Nothing is better, so the answer is OPTIMAL with bound 0, and no sub-model is
    searched after it."""
    monkeypatch.setattr(large, "SECONDS_PER_COUNT", 1.0)
    data = shape_scenario(REPORTED_SHAPES["wide-range-squares"], 60, 8)
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    options = SolverOptions(time_limit=4.0, workers=1, seed=0)
    assert large.too_large(problem, model, options)
    assert evaluate(problem, model, problem.initial).positions[0] > 0

    def searched(*args: object) -> None:
        raise AssertionError("a sub-model was searched")

    monkeypatch.setattr(large, "_neighbourhood", searched)
    result = solve_model(problem, model, options)
    assert result.status == OPTIMAL and result.termination == "optimal"
    assert result.final_evaluation.positions[0] == 0
    assert [(b.status, b.bound) for b in result.buckets] == [(OPTIMAL, 0.0)]


def test_a_leading_position_at_its_floor_is_proven_and_the_rest_searched(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same with movement at position 1: position 0 reaches its floor and is OPTIMAL
    with bound 0; the moves it took are not the fewest proven, so position 1 stays
    FEASIBLE after the sub-models, and the answer FEASIBLE."""
    monkeypatch.setattr(large, "SECONDS_PER_COUNT", 1.0)
    data = shape_scenario(REPORTED_SHAPES["wide-range-squares"], 60, 8)
    data["goals"].append({"spec": {"minimizeMovementSpec": {"name": "moves"}}, "tuplePos": 1})
    scenario = parse_scenario(data)
    result = solve_model(scenario.problem, scenario.model,
                         SolverOptions(time_limit=4.0, workers=1, seed=0))
    first, second = sorted(result.buckets, key=lambda b: b.position)
    assert (first.status, first.bound, result.final_evaluation.positions[0]) == (OPTIMAL, 0, 0)
    assert second.status == FEASIBLE and result.status == FEASIBLE
    assert result.final_evaluation.positions[1] > 0
