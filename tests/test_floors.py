"""``Model.floors``: the lowest value any assignment can have at a position, which proofs
rely on (a value there is optimal; a bound never needs to go lower). On random tiny
scenarios of every spec the generator draws, no assignment lies below it."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
from ortools.sat.python import cp_model
from randomized import all_assignments, random_scenario
from test_exclusive_scope_items import scenario as exclusive_scenario
from test_placement_specs import placement_scenario

from cpsat_rebalancer import parse_scenario, solve_scenario
from cpsat_rebalancer.cpsat.forms import Integerized
from cpsat_rebalancer.cpsat.linear import lin_sum
from cpsat_rebalancer.errors import InternalError
from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.result import OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve import bucket as bucket_module
from cpsat_rebalancer.solve import pipeline
from cpsat_rebalancer.solve.budget import Budget
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.session import Session


@pytest.mark.parametrize("groups", [False, True])
@pytest.mark.parametrize("seed", range(100))
def test_no_assignment_lies_below_a_positions_floor(seed: int, groups: bool) -> None:
    scenario = parse_scenario(random_scenario(seed, groups=groups))
    floors = scenario.model.floors()
    finite = {p: f for p, f in floors.items() if math.isfinite(f)}
    if not finite:
        pytest.skip("no position with a finite floor")
    for final in all_assignments(scenario):
        evaluation = evaluate(scenario.problem, scenario.model, final)
        for position, floor in finite.items():
            value = evaluation.positions.get(position, 0.0)
            assert value >= floor - 1e-12, (position, value, final.tolist())


@pytest.mark.parametrize("shape", ["exclusive", "overlapping", "affinities"])
@pytest.mark.parametrize("seed", range(40))
def test_no_assignment_lies_below_a_rewarding_goals_floor(seed: int, shape: str) -> None:
    """The goals that may be negative and state a finite lowest value (AGGRESSIVE_PACKING,
    affinities): on their random tiny scenarios (weights and overlaps of either sign) no
    assignment lies below a position's floor."""
    data = (placement_scenario(seed) if shape == "affinities"
            else exclusive_scenario(seed, overlap=shape == "overlapping"))
    scenario = parse_scenario(data)
    finite = {p: f for p, f in scenario.model.floors().items() if math.isfinite(f)}
    for final in all_assignments(scenario):
        evaluation = evaluate(scenario.problem, scenario.model, final)
        for position, floor in finite.items():
            value = evaluation.positions.get(position, 0.0)
            assert value >= floor - 1e-9 * max(1.0, abs(floor)), (position, value, floor)


def test_an_assignment_held_at_its_floor_is_proven_without_a_search(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two pairs of exclusive hosts, every host in use: AGGRESSIVE_PACKING's lowest value
    (-16), and no moves. Each bucket is proven from the floor alone, before any repair or
    search of the compiled model (stubbed to fail here), its bound the floor."""
    def searched(*args: object) -> None:
        raise AssertionError("a bucket at its floor was searched")

    monkeypatch.setattr(bucket_module, "bucket_start", searched)
    conflicts = [{"scopeItem": a, "conflictingScopeItemsWithOverlap": [
        {"conflictingScopeItem": b}]} for a, b in (("h0", "h1"), ("h2", "h3"))]
    data = {"objectName": "task", "containerName": "host",
            "assignment": {f"h{j}": [f"t{j}"] for j in range(4)},
            "goals": [{"spec": {"exclusiveScopeItemsSpec": {
                "scope": "host", "dimension": "task_count", "formula": "AGGRESSIVE_PACKING",
                "conflictInfoList": conflicts}}, "tuplePos": 0, "weight": 10},
                {"spec": {"minimizeMovementSpec": {}}, "tuplePos": 1}]}
    scenario = parse_scenario(data)
    assert scenario.model.floors() == {0: -160.0, 1: 0.0}
    result = solve_scenario(scenario, SolverOptions(time_limit=20, workers=1))
    assert result.status == OPTIMAL
    assert [(b.objective, b.bound) for b in result.buckets] == [(-160.0, -160.0), (0.0, 0.0)]


def test_a_search_that_meets_the_buckets_floor_ends_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Six tasks of 5, one on each of six hosts of 10, the fewest occupied hosts the goal:
    GLOP's floor is 3. With every CP-SAT search after that floor finding nothing (as on a
    model too large to get into in time) and the chain holding the start, the local search
    from the start reaches 3: the bucket ends there, OPTIMAL with the floor its bound, and
    neither the descent over containers nor a search blended with moves runs."""
    failing = []
    solve, floor = Session.solve, bucket_module.model_floor

    def fails_after_the_floor(session: Session, *args: object, **kwargs: object
                              ) -> tuple[int, cp_model.CpSolver]:
        if failing:
            return cp_model.UNKNOWN, cp_model.CpSolver()
        return solve(session, *args, **kwargs)

    def floor_then_fail(*args: object) -> int:
        failing.append(True)
        return floor(*args)

    def searched(*args: object, **kwargs: object) -> None:
        raise AssertionError("searched below the floor")

    monkeypatch.setattr(Session, "solve", fails_after_the_floor)
    monkeypatch.setattr(bucket_module, "model_floor", floor_then_fail)
    monkeypatch.setattr(bucket_module, "bucket_start", lambda session, bucket, form, budget:
                        (None, form.lo))  # no load relaxation or repair: GLOP's floor only
    monkeypatch.setattr(pipeline, "better_start", lambda *args: None)  # the start, not packed
    monkeypatch.setattr(bucket_module, "descend", searched)
    monkeypatch.setattr(bucket_module, "blended", searched)
    scenario = parse_scenario({
        "objectDimensions": {"cpu": {f"t{i}": 5 for i in range(6)}},
        "containerDimensions": {"cpu": {f"h{i}": 10 for i in range(6)}},
        "assignment": {f"h{i}": [f"t{i}"] for i in range(6)},
        "goals": [{"spec": {"minimizeContainersSpec": {}}}],
        "constraints": [{"spec": {"capacitySpec": {"dimension": "cpu"}}, "policy": "HARD"}]})
    result = pipeline.solve_model(scenario.problem, scenario.model,
                                  SolverOptions(time_limit=20, workers=1),
                                  budget=Budget(early_search_share=0))
    assert failing
    assert result.status == OPTIMAL
    assert [(b.objective, b.bound) for b in result.buckets] == [(3.0, 3.0)]


def test_a_blended_search_at_the_floor_ends_the_bucket(monkeypatch: pytest.MonkeyPatch) -> None:
    """The six tasks, the fewest occupied hosts first and the moves after: where the
    blended search's incumbent (stubbed: three hosts, five moves, found but not proven)
    meets GLOP's floor, the bucket ends there OPTIMAL without a search on the objective
    alone; the moves bucket after it then proves three moves."""
    in_bucket_0 = []
    solve, finish = Session.solve, bucket_module.finish

    def found_at_the_floor(session: Session, form: Integerized, incumbent: int | None,
                           budget: float | None) -> tuple:
        packed = session.builder.counts_of(np.array([0, 0, 1, 1, 2, 2]))
        assert session.start_from(packed)
        in_bucket_0.append(True)
        return cp_model.FEASIBLE, None, int(3 * form.factor), None

    def searched(session: Session, *args: object, **kwargs: object) -> tuple:
        assert not in_bucket_0, "searched the objective alone at its floor"
        return solve(session, *args, **kwargs)

    def finished(*args: object) -> object:
        in_bucket_0.clear()
        return finish(*args)

    monkeypatch.setattr(bucket_module, "blended", found_at_the_floor)
    monkeypatch.setattr(Session, "solve", searched)
    monkeypatch.setattr(bucket_module, "finish", finished)
    monkeypatch.setattr(bucket_module, "bucket_start", lambda session, bucket, form, budget:
                        (None, form.lo))
    monkeypatch.setattr(pipeline, "better_start", lambda *args: None)
    scenario = parse_scenario({
        "objectDimensions": {"cpu": {f"t{i}": 5 for i in range(6)}},
        "containerDimensions": {"cpu": {f"h{i}": 10 for i in range(6)}},
        "assignment": {f"h{i}": [f"t{i}"] for i in range(6)},
        "goals": [{"spec": {"minimizeContainersSpec": {}}, "tuplePos": 0},
                  {"spec": {"minimizeMovementSpec": {}}, "tuplePos": 1}],
        "constraints": [{"spec": {"capacitySpec": {"dimension": "cpu"}}, "policy": "HARD"}]})
    result = pipeline.solve_model(scenario.problem, scenario.model,
                                  SolverOptions(time_limit=20, workers=1),
                                  budget=Budget(early_search_share=0))
    assert result.status == OPTIMAL
    assert (result.buckets[0].objective, result.buckets[0].bound) == (3.0, 3.0)
    assert (result.final != scenario.problem.initial).sum() == 3


@pytest.mark.parametrize("seed", range(40))
def test_a_loads_least_value_is_what_stays_there_in_every_assignment(seed: int) -> None:
    """Each load starts at no more than the least load any assignment the restrictions
    allow gives it (pinned objects stay, closed containers take nothing new), enumerated,
    and a container's load at exactly that (a count with nowhere else to go is at least its
    class's objects); and an
    occupied-containers goal over the containers pinned objects hold is at least their
    number in the compiled model before any search (their steps are forced)."""
    data = random_scenario(seed, max_objects=6, max_containers=4)
    rng = random.Random(seed)
    home = {o: c for c, objects in data["assignment"].items() for o in objects}
    pinned = rng.sample(sorted(home), rng.randint(1, max(1, len(home) // 2)))
    held = sorted({home[o] for o in pinned})
    data["constraints"] = [*data.get("constraints", []),
                           {"spec": {"avoidMovingSpec": {"objects": pinned}}}]
    data["constraintPolicy"] = "DEFAULT"  # (AvoidMoving takes the global policy)
    data["goals"] = [*data["goals"], {"spec": {"toFreeSpec": {
        "formula": "MINIMIZE_OCCUPIED_CONTAINERS", "containers": held}},
        "tuplePos": max(g.get("tuplePos", 0) for g in data["goals"]) + 1}]
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    builder, buckets = compile_model(problem, model)
    fixed, closed = sorted(model.fixed_objects), sorted(model.non_accepting)
    allowed = [final for final in all_assignments(scenario)
               if all(final[o] == problem.initial[o] for o in fixed)
               and not any(final[o] in closed and final[o] != problem.initial[o]
                           for o in range(problem.num_objects))]
    for scope in problem.scopes.values():
        for dim in problem.object_dims:
            try:
                values, forms = builder.scale(dim).values, builder.util(scope, dim, "AFTER")
            except InternalError:  # a dimension no spec reads is not modelled
                continue
            least = np.full(len(scope.items), np.iinfo(np.int64).max)
            for final in allowed:
                loads = np.zeros(len(scope.items), dtype=np.int64)
                inside = scope.container_item[final] >= 0
                np.add.at(loads, scope.container_item[final][inside], values[inside])
                least = np.minimum(least, loads)
            for item, load in enumerate(forms):
                atom = builder.atoms[next(iter(load.terms))] if load.terms else None
                lowest = 0 if atom is None else atom.lo
                assert lowest <= least[item], (scope.name, dim, item)  # valid
                if scope is problem.container_scope:  # and exact, container by container
                    assert lowest == least[item], (dim, item)
    last = buckets[max(buckets)]
    form = builder.integerize(lin_sum(last.terms), objective=True)
    assert Fraction(form.lo) / form.factor >= len(held)
