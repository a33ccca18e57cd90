"""Load limits read back from presolve, the move cuts they imply and the greedy repair:
limits hold for every feasible assignment (enumerated), cuts never exceed the moves an
optimal assignment makes, and the repair returns what it promises."""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest
from randomized import all_assignments, random_scenario
from test_bruteforce import check_against_enumeration

from cpsat_rebalancer import evaluate, parse_scenario
from cpsat_rebalancer.cpsat.linear import lin_sum
from cpsat_rebalancer.generators import balance_instance
from cpsat_rebalancer.primitives import Restrictions
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve.accelerate.relaxation import load_relaxation
from cpsat_rebalancer.solve.accelerate.repair import load_caps, repair, shed_counts
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.pipeline import solve_model
from cpsat_rebalancer.solve.session import Session


def loads_of(builder, assignment: np.ndarray, dim: str) -> np.ndarray:
    """Loads in the model's container order (interchangeable containers sorted)."""
    load = np.zeros(builder.problem.num_containers, dtype=np.int64)
    np.add.at(load, builder.canonical(assignment), builder.scale(dim).values.astype(np.int64))
    return load


def with_movement(seed: int) -> dict:
    data = random_scenario(seed, max_objects=5)
    data["goals"].append({"spec": {"minimizeMovementSpec": {"name": "moves"}}})
    return data


@pytest.mark.parametrize("seed", range(40))
def test_limits_hold_for_every_feasible_assignment(seed: int) -> None:
    scenario = parse_scenario(with_movement(seed))
    problem, model = scenario.problem, scenario.model
    builder, buckets = compile_model(problem, model)
    caps = load_caps(builder)
    feasible = [a for a in all_assignments(scenario) if evaluate(problem, model, a).feasible]
    if caps is None:  # presolve proved the hard rules infeasible
        assert not feasible
        return
    for assignment in feasible:
        for dim, cap in caps.items():
            assert (loads_of(builder, assignment, dim) <= cap).all(), f"seed {seed} {dim}"
    if not feasible or not buckets:
        return
    # with the first bucket held at its optimum, the limits still hold for every optimum
    position, bucket = next(iter(buckets.items()))
    form = builder.integerize(lin_sum(bucket.terms))
    values = [evaluate(problem, model, a).positions.get(position, 0.0) for a in feasible]
    best = min(values)
    optimal = [a for a, v in zip(feasible, values) if v <= best + 1e-9]
    level = int(np.floor(float(best) * float(form.factor) + 1e-6)) if form.error == 0 else None
    if level is None:
        return
    target = load_caps(builder, [(form.expr, level)])
    assert target is not None, f"seed {seed}: the optimum's level was declared infeasible"
    for assignment in optimal:
        for dim, cap in target.items():
            assert (loads_of(builder, assignment, dim) <= cap).all(), f"seed {seed} {dim}"
        moved_out = np.bincount(problem.initial[assignment != problem.initial],
                                minlength=problem.num_containers)
        assert (shed_counts(builder, target) <= moved_out).all(), f"seed {seed}"


def test_capacity_limits_are_the_capacities() -> None:
    data = balance_instance(60, 6, "LINEAR", seed=3)
    scenario = parse_scenario(data)
    builder, _ = compile_model(scenario.problem, scenario.model)
    caps = load_caps(builder)
    capacity = np.asarray([data["containerDimensions"]["cpu"][c]
                           for c in scenario.problem.containers])
    factor = builder.scale("cpu").factor
    assert (caps["cpu"] == np.floor(capacity * factor).astype(np.int64)).all()


def test_room_is_made_where_smaller_objects_can_make_it() -> None:
    """An object of 3 leaves a host whose limit is 0; 30 hosts have room 2 but hold one
    object of 8 each, one host has room 1 and nine objects of 1. Only that last host can
    make room (eject two of 1, which then fit elsewhere): the repair must find it past the
    hosts with the most room (more of them than the candidates tried)."""
    hosts = [f"big{i}" for i in range(30)] + ["small", "hot"]
    assignment = {f"big{i}": [f"eight{i}"] for i in range(30)}
    assignment["small"] = [f"one{i}" for i in range(9)]
    assignment["hot"] = ["three"]
    cpu = {o: float(o[0] == "e") * 8 + float(o[0] == "o") + float(o == "three") * 3
           for objs in assignment.values() for o in objs}
    data = {"objectName": "task", "containerName": "host", "assignment": assignment,
            "objectDimensions": {"cpu": cpu},
            "containerDimensions": {"cpu": dict.fromkeys(hosts, 10.0)},
            "goals": [{"spec": {"balanceSpec": {"name": "b", "scope": "host",
                                                "dimension": "cpu", "formula": "LINEAR"}}}],
            "constraints": [{"spec": {"capacitySpec": {"name": "cap", "scope": "host",
                                                       "dimension": "cpu"}},
                             "policy": "HARD"}]}
    scenario = parse_scenario(data)
    problem = scenario.problem
    builder, _ = compile_model(problem, scenario.model)
    caps = load_caps(builder)
    hot = problem.containers.index("hot")
    caps["cpu"][hot] = 0
    counts = repair(builder, caps)
    assert counts is not None
    assignment = builder.decode(counts)
    assert (loads_of(builder, assignment, "cpu") <= caps["cpu"]).all()
    assert problem.initial[assignment != problem.initial].tolist().count(hot) == 1


def test_repair_reaches_a_balanced_assignment_with_few_moves() -> None:
    """Seed 0 can be balanced perfectly (value 0, the form's lowest), so the limits at that
    level describe reachable assignments; the repair must find one."""
    scenario = parse_scenario(balance_instance(400, 20, "LINEAR", seed=0))
    problem, model = scenario.problem, scenario.model
    builder, buckets = compile_model(problem, model)
    form = builder.integerize(lin_sum(buckets[0].terms))
    target = load_caps(builder, [(form.expr, form.lo)])
    counts = repair(builder, target)
    assert counts is not None
    assignment = builder.decode(counts)
    evaluation = evaluate(problem, model, assignment)
    assert evaluation.feasible
    assert evaluation.positions[0] == pytest.approx(form.lo / float(form.factor), abs=1e-12)
    for dim, cap in target.items():
        assert (loads_of(builder, assignment, dim) <= cap).all()
    moves = int((assignment != problem.initial).sum())
    assert shed_counts(builder, target).sum() <= moves < problem.num_objects // 2


def test_the_chain_returns_the_same_optimum_with_and_without_accelerators() -> None:
    for seed in range(8):
        scenario = parse_scenario(balance_instance(24, 4, "LINEAR", seed=seed))
        options = SolverOptions(workers=1, seed=0)
        fast = solve_model(scenario.problem, scenario.model, options)
        plain = solve_model(scenario.problem, scenario.model, options, accelerate=False)
        assert fast.status == plain.status == "OPTIMAL"
        assert fast.final_evaluation.tuple() == pytest.approx(plain.final_evaluation.tuple())


def test_a_repair_at_the_move_cut_bound_is_proven_without_search() -> None:
    """400x20 seed 0 balances perfectly; its repair moves exactly what the cuts say the hot
    hosts must shed, so both positions are proven from the cuts, and the plain model
    (no accelerators, CP-SAT's own proof) agrees on the optimum."""
    scenario = parse_scenario(balance_instance(400, 20, "LINEAR", seed=0))
    options = SolverOptions(time_limit=60, workers=2, seed=0)
    fast = solve_model(scenario.problem, scenario.model, options)
    plain = solve_model(scenario.problem, scenario.model, options, accelerate=False)
    assert fast.status == plain.status == "OPTIMAL"
    assert fast.final_evaluation.tuple() == plain.final_evaluation.tuple()
    assert all(b.bound == b.compiled_objective for b in fast.buckets)


def test_a_bucket_frozen_at_its_lowest_value_bounds_the_moves_after_it(monkeypatch) -> None:
    """400x20 seed 0 balances perfectly: the limits read for balance 0 hold once position 0
    is frozen there, and the moves they force bound position 1, where the repair already
    is; so neither position (nor the final tie-break on moves) runs a search, and the
    optimum is the plain model's."""
    scenario = parse_scenario(balance_instance(400, 20, "LINEAR", seed=0))
    options = SolverOptions(time_limit=60, workers=2, seed=0)
    searches = []
    solve = Session.solve

    def counted(self, *args, **kwargs):
        searches.append(args)
        return solve(self, *args, **kwargs)
    monkeypatch.setattr(Session, "solve", counted)
    fast = solve_model(scenario.problem, scenario.model, options)
    assert not searches
    monkeypatch.setattr(Session, "solve", solve)
    plain = solve_model(scenario.problem, scenario.model, options, accelerate=False)
    assert fast.status == plain.status == "OPTIMAL"
    assert fast.final_evaluation.tuple() == plain.final_evaluation.tuple()


def move_limited_pair() -> dict:
    """host0 holds job a (three replicas of 2 cpu, one may move) and job b (one of 2)."""
    return {
        "objectName": "task", "containerName": "host",
        "assignment": {"host0": ["a0", "a1", "a2", "b0"], "host1": []},
        "objectDimensions": {"cpu": {"a0": 2, "a1": 2, "a2": 2, "b0": 2}},
        "containerDimensions": {"cpu": {"host0": 10, "host1": 11}},
        "partitions": {"job": {"a": ["a0", "a1", "a2"], "b": ["b0"]}},
        "goals": [{"spec": {"balanceSpec": {"name": "bal", "scope": "host",
                                            "dimension": "cpu"}}}],
        "constraints": [{"spec": {"groupMoveLimitSpec": {
            "name": "moves", "partitionName": "job", "limit": {"globalLimit": 1}}},
            "policy": "HARD"}],
    }


@pytest.mark.parametrize("host0_cap, expected", [(4, {"a": 1, "b": 1}), (3, None)])
def test_repair_keeps_hard_move_limits(host0_cap, expected) -> None:
    """Shedding the largest objects first would move two replicas of job a to bring host0
    from 8 to 4; the repair moves one of a and b's instead, and gives up when the limit
    leaves no way (host0 to 3 needs 5 cpu out, at most 2 + 2 may leave)."""
    scenario = parse_scenario(move_limited_pair())
    problem, model = scenario.problem, scenario.model
    builder, _ = compile_model(problem, model)
    factor = builder.scale("cpu").factor
    caps = {"cpu": np.asarray([host0_cap * factor, 11 * factor], dtype=np.int64)}
    assert list(problem.containers) == ["host0", "host1"]
    counts = repair(builder, caps)
    if expected is None:
        assert counts is None
        return
    assert counts is not None
    final = builder.decode(counts)
    moved = [problem.objects[o] for o in np.flatnonzero(final != problem.initial)]
    assert {job: sum(o.startswith(job) for o in moved) for job in "ab"} == expected
    assert evaluate(problem, model, final).feasible
    assert loads_of(builder, final, "cpu")[0] <= host0_cap * factor


def test_repair_sheds_around_the_objects_held_home(monkeypatch) -> None:
    """host0 (limit 4) holds a fixed task of 3 and three of 1: shedding its largest first
    would take the fixed one, which has nowhere else to go but back, once room is made for
    it; the repair sheds the others, and makes no room (none could be made here).
    The load relaxation knows the fixed task's load too: host0 cannot come down to the
    average (2 of its 4), and its bound is the optimum, above 0."""
    data = {
        "objectName": "task", "containerName": "host",
        "assignment": {"host0": ["big", "s0", "s1", "s2"], "host1": [], "host2": []},
        "objectDimensions": {"cpu": {"big": 3, "s0": 1, "s1": 1, "s2": 1}},
        "containerDimensions": {"cpu": {"host0": 4, "host1": 8, "host2": 8}},
        "goals": [{"spec": {"balanceSpec": {"name": "bal", "scope": "host",
                                            "dimension": "cpu", "formula": "LINEAR"}}}],
        "constraints": [{"spec": {"capacitySpec": {"scope": "host", "dimension": "cpu"}},
                         "policy": "HARD"}],
    }
    scenario = parse_scenario(data)
    problem = scenario.problem
    big = problem.object_index["big"]
    pin = (scenario.model.constraints[0].spec, Restrictions(fixed_objects=frozenset({big})))
    model = dataclasses.replace(scenario.model,
                                restrictions=[*scenario.model.restrictions, pin])
    builder, buckets = compile_model(problem, model)
    caps = load_caps(builder)
    module = importlib.import_module("cpsat_rebalancer.solve.accelerate.repair")
    monkeypatch.setattr(module, "_make_room", lambda *args: None)
    counts = repair(builder, caps)
    assert counts is not None
    final = builder.decode(counts)
    assert final[big] == problem.initial[big]
    assert (loads_of(builder, final, "cpu") <= caps["cpu"]).all()
    best = min(evaluate(problem, model, a).positions[0] for a in all_assignments(scenario)
               if a[big] == problem.initial[big] and evaluate(problem, model, a).feasible)
    form = builder.integerize(lin_sum(buckets[0].terms), objective=True)
    relaxed = load_relaxation(builder, form, 10.0, 1, 0)
    assert relaxed is not None
    assert best > 0 and float(relaxed.bound / form.factor) == pytest.approx(best)


def test_limits_that_rule_out_a_known_solution_are_not_taken() -> None:
    """Drawn shape 2912 at 7x3 (ToFree's occupied containers, a soft group presence, two
    closed hosts): CP-SAT 9.15's presolve, every feasible solution kept, bounds host1's
    load to 0, where the initial assignment (feasible, the optimum) leaves two objects;
    the move cuts read from that bound excluded it, and the solve claimed OPTIMAL at
    17719.6 against an optimum of 1. Bounds are taken only where a known solution keeps
    them."""
    scenario = parse_scenario(random_shape_scenario(7, 3, 2912))
    problem = scenario.problem
    builder, _ = compile_model(problem, scenario.model)
    session = Session(builder, scenario.model, SolverOptions(workers=1, seed=0))
    assert session.start_from(builder.counts_of(problem.initial))
    caps = load_caps(builder, known=session.values)
    for dim, cap in (caps or {}).items():
        assert (loads_of(builder, problem.initial, dim) <= cap).all(), dim
    check_against_enumeration(random_shape_scenario(7, 3, 2912), 2912)
    check_against_enumeration(random_shape_scenario(6, 4, 2912), 2912)
