"""The move budgets of the specs the coarse relaxation leaves out, kept in it
(specs/budget_stays.py, docs/compiling.md#coarse-relaxation): the shortfall is that of the
best choice of the objects that stay (enumerated), the relaxation with them is still a
relaxation whose answer lifts with its values (against enumeration of the whole model),
and the configuration LP's floor over its stays never exceeds its fewest moves."""

from __future__ import annotations

import dataclasses
import itertools
import random

import numpy as np
import pytest
from randomized import all_assignments
from test_coarse import OPTIONS, assert_valid_bounds, lexicographic_optima, replicas
from test_configurations import a_solution, assert_lagrangian_bounds_hold

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.context import EvalContext
from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.result import OPTIMAL
from cpsat_rebalancer.scenario import Model
from cpsat_rebalancer.solve import coarse
from cpsat_rebalancer.solve.accelerate.configurations import (
    configuration_bound,
    configuration_master,
)
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.pipeline import solve_model
from cpsat_rebalancer.specs.budget_stays import BudgetStaysSpec


def budgeted(seed: int, data: dict | None = None):
    """The scenario, and its relaxation with the budgets (None where it has none)."""
    scenario = parse_scenario(data or replicas(seed))
    problem, model = scenario.problem, scenario.model
    relaxed = coarse.Relaxation(dataclasses.replace(problem, partitions={}), Model(
        [g for g in model.goals if not g.spec.reads_groups()],
        [c for c in model.constraints if not c.spec.reads_groups()], []))
    return scenario, coarse.with_budgets(problem, model, relaxed)


def best_choice(spec: BudgetStaysSpec, initial: np.ndarray, final: np.ndarray) -> int:
    """The most of the budgets' needs any choice of stayers meets: in each (class,
    container) cell, any min(initial, final) of the objects starting there stay."""
    cells: dict[tuple[int, int], list[int]] = {}
    for obj in range(len(initial)):
        cells.setdefault((int(spec.kind[obj]), int(initial[obj])), []).append(obj)
    choices = []
    for (k, c), objects in cells.items():
        arrived = int(np.count_nonzero((spec.kind == k) & (final == c)))
        choices.append(list(itertools.combinations(objects, min(len(objects), arrived))))
    best = 0
    for picked in itertools.product(*choices):
        staying = {obj for group in picked for obj in group}
        met = sum(min(need, sum(obj in staying for obj in members.tolist()))
                  for members, need in zip(spec.members, spec.needs.tolist()))
        best = max(best, met)
    return best


@pytest.mark.parametrize("seed", range(40))
def test_the_shortfall_is_that_of_the_best_choice_of_stayers(seed: int) -> None:
    """On random answers (each object anywhere), with the classes the lift swaps and with
    classes drawn at random: the largest flow meets as much of the needs as the best
    choice of the objects that stay, and the members it keeps home can stay together."""
    scenario, relaxation = budgeted(seed)
    if relaxation is None:
        return
    problem = scenario.problem
    spec = relaxation.model.constraints[-1].spec
    rng = random.Random(seed)
    for kind in (spec.kind, np.asarray([rng.randint(0, 1) for _ in range(problem.num_objects)])):
        drawn = dataclasses.replace(spec, kind=kind)
        for _ in range(3):
            final = np.asarray([rng.randrange(problem.num_containers)
                                for _ in range(problem.num_objects)])
            shortfall = drawn.infos(EvalContext(problem, problem.initial, final))[0]
            met = best_choice(drawn, problem.initial, final)
            assert shortfall == int(drawn.needs.sum()) - met, seed
            kept = drawn.kept_home(problem.initial, final, problem.num_containers)
            assert sum(map(len, kept)) == met
            for members, need, home in zip(drawn.members, drawn.needs.tolist(), kept):
                assert len(home) <= need and set(home) <= set(members.tolist())
            staying = [obj for home in kept for obj in home]
            for obj in staying:  # no cell keeps more than can stay
                cell = [o for o in staying if kind[o] == kind[obj]
                        and problem.initial[o] == problem.initial[obj]]
                arrived = np.count_nonzero((kind == kind[obj]) & (final == problem.initial[obj]))
                started = np.count_nonzero((kind == kind[obj])
                                           & (problem.initial == problem.initial[obj]))
                assert len(cell) <= min(arrived, started)


def test_some_scenarios_need_the_budgets() -> None:
    """The random scenarios exercise the path: the relaxation's own answer breaks the
    budgets of some (no choice of stayers keeps them), and the solve then takes it."""
    broken = 0
    for seed in range(40):
        scenario, relaxation = budgeted(seed)
        if relaxation is None:
            continue
        plain = coarse.Relaxation(relaxation.problem, Model(
            relaxation.model.goals, relaxation.model.constraints[:-1], []))
        answer = solve_model(plain.problem, plain.model, OPTIONS).final
        broken += not evaluate(relaxation.problem, relaxation.model, answer).feasible
    assert broken >= 3


@pytest.mark.parametrize("seed", range(40))
def test_the_relaxation_with_budgets_lifts_with_its_values_and_valid_bounds(
        seed: int) -> None:
    """Solved to its optimum, its answer lifts (no mover sent back: the lift keeps every
    value of the specs kept and the number moved), keeps the whole model's hard rules, and
    every bound it claims lies at or below the whole model's enumerated optimum."""
    scenario, relaxation = budgeted(seed)
    if relaxation is None:
        return
    problem, model = scenario.problem, scenario.model
    data = replicas(seed)
    result = solve_model(relaxation.problem, relaxation.model, OPTIONS)
    if result.status != OPTIMAL:  # the whole model has no solution either
        assert not any(evaluate(problem, model, a).feasible for a in all_assignments(scenario))
        return
    lifted = coarse.lift(problem, model, result.final)
    assert lifted is not None
    plain = Model(relaxation.model.goals, relaxation.model.constraints[:-1], [])
    before = evaluate(relaxation.problem, plain, result.final)
    after = evaluate(relaxation.problem, plain, lifted)
    assert after.positions == pytest.approx(before.positions, rel=1e-12, abs=1e-12)
    assert (lifted != problem.initial).sum() == (result.final != problem.initial).sum()
    assert evaluate(problem, model, lifted).feasible
    answer = coarse.lifted(problem, model, result, evaluate(problem, model, problem.initial),
                           0.0)
    _, optima = lexicographic_optima(data)
    assert_valid_bounds(seed, answer.buckets, optima)


def moves_only(seed: int) -> dict:
    """replicas(seed) with moves the only goal and a HARD capacity: the configuration LP's
    case (a movement bucket over built loads)."""
    data = replicas(seed, objects=6)
    data["goals"] = [{"spec": {"minimizeMovementSpec": {"scope": "host",
                                                        "doNotNormalize": True}}}]
    data["constraints"] = [c for c in data["constraints"]
                           if "groupMoveLimitSpec" in c["spec"]]
    data["constraints"].append({"spec": {"capacitySpec": {"scope": "host", "dimension": "cpu",
                                                          "limit": {"globalLimit": 0.8}}},
                                "policy": "HARD"})
    return data


@pytest.mark.parametrize("seed", range(40))
def test_the_configuration_floor_over_stays_never_exceeds_the_fewest_moves(seed: int) -> None:
    """The configuration LP reads the budgets' stays through its contents: its floor, with
    GLOP's duals and with arbitrary multipliers, never exceeds the fewest moves of the
    relaxation with the budgets (enumerated)."""
    data = moves_only(seed)
    scenario, relaxation = budgeted(seed, data)
    if relaxation is None:
        return
    problem, model = relaxation.problem, relaxation.model
    moved = [int((a != problem.initial).sum()) for a in all_assignments(scenario)
             if evaluate(problem, model, a).feasible]
    builder, _ = compile_model(problem, model)
    if not moved:
        return
    fewest = min(moved)
    held = a_solution(builder)
    assert held is not None
    found = configuration_bound(builder, held, 10.0, target=fewest + 1)
    if found is not None:
        assert found.floor <= fewest, f"seed {seed}: floor {found.floor} > fewest {fewest}"
    assert_lagrangian_bounds_hold(builder, held, fewest, seed)


def test_the_configuration_lp_reads_the_stays_on_some() -> None:
    """The scenarios above give the LP stay rows (its contents carry them) on some seeds."""
    read = 0
    for seed in range(40):
        scenario, relaxation = budgeted(seed, moves_only(seed))
        if relaxation is None:
            continue
        builder, _ = compile_model(relaxation.problem, relaxation.model)
        held = a_solution(builder)
        built = None if held is None else configuration_master(builder, held, 10.0)
        read += built is not None and any(built[0].stays)
    assert read >= 5


def test_the_budgets_stays_raise_the_configuration_floor() -> None:
    """h0 and h1 must each shed 2 of their 4 cpu: each its large task in one move, but the
    two are one job's, which may move one; the other sheds its two small tasks. Three
    moves, which no load limit tells (either may keep its large task): the floor over the
    stays says 3, the relaxation without them 2."""
    data = {
        "objectName": "task", "containerName": "host",
        "assignment": {"h0": ["a0", "s0", "s1"], "h1": ["a1", "s2", "s3"], "h2": [],
                       "h3": []},
        "objectDimensions": {"cpu": {"a0": 2, "a1": 2, "s0": 1, "s1": 1, "s2": 1,
                                     "s3": 1}},
        "containerDimensions": {"cpu": {"h0": 2, "h1": 2, "h2": 4, "h3": 4}},
        "partitions": {"job": {"a": ["a0", "a1"], "s": ["s0", "s1", "s2", "s3"]}},
        "goals": [{"spec": {"minimizeMovementSpec": {"scope": "host",
                                                     "doNotNormalize": True}}}],
        "constraints": [
            {"spec": {"capacitySpec": {"scope": "host", "dimension": "cpu"}},
             "policy": "HARD"},
            {"spec": {"groupMoveLimitSpec": {"partitionName": "job",
                                             "limit": {"globalLimit": 1,
                                                       "groupLimits": {"s": 3}}}},
             "policy": "HARD"}],
    }
    scenario, relaxation = budgeted(0, data)
    problem, model = relaxation.problem, relaxation.model
    floors = []
    for constraints in (model.constraints[:-1], model.constraints):
        builder, _ = compile_model(problem, Model(model.goals, constraints, []))
        found = configuration_bound(builder, a_solution(builder), 10.0)
        floors.append(found.floor)
    assert floors == [2, 3]
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == OPTIMAL and result.buckets[0].objective == 3


@pytest.mark.parametrize("seed", range(40))
def test_a_better_answer_keeps_the_bounds_and_is_proven_where_it_meets_them(
        seed: int) -> None:
    """The relaxation with budgets, solved, then its answer taken back to the start
    (FEASIBLE, the same bounds): the proven answer put back in its place is OPTIMAL again
    at every position, at the values it had; a worse one changes nothing."""
    scenario, relaxation = budgeted(seed)
    if relaxation is None:
        return
    result = solve_model(relaxation.problem, relaxation.model, OPTIONS)
    if result.status != OPTIMAL:
        return
    initial = evaluate(relaxation.problem, relaxation.model, relaxation.problem.initial)
    back = dataclasses.replace(
        result, status="FEASIBLE", final=relaxation.problem.initial, final_evaluation=initial,
        buckets=[dataclasses.replace(r, status="FEASIBLE", termination="time_limit",
                                     objective=initial.positions.get(r.position, 0.0))
                 for r in result.buckets])
    assert coarse.better_answer(relaxation, result, relaxation.problem.initial) is result
    again = coarse.better_answer(relaxation, back, result.final)
    if result.final_evaluation.tuple() == initial.tuple():
        assert again is back
        return
    assert again.status == OPTIMAL and (again.final == result.final).all()
    for report, proven in zip(again.buckets, result.buckets):
        assert report.status == OPTIMAL and report.bound == proven.bound
        assert report.objective == pytest.approx(proven.objective, rel=1e-12, abs=1e-12)


def test_the_lp_routing_names_the_budgets_cells() -> None:
    """``routed`` reads a configuration LP's values of the flows back as (flow, a member of
    the budget in that cell), and the restriction they point to holds those members home."""
    scenario, relaxation = budgeted(0, moves_only(0))
    for seed in range(1, 40):
        if relaxation is not None:
            break
        scenario, relaxation = budgeted(seed, moves_only(seed))
    problem = relaxation.problem
    spec = relaxation.model.constraints[-1].spec
    builder, _ = compile_model(problem, relaxation.model)
    names = [v.name for v in builder.cp.proto.variables if v.name.startswith("kept")]
    values = {name: 1.0 for name in names}
    routes = spec.routed(values)
    assert routes is not None
    assert sum(map(len, routes)) == len(names)
    for members, route in zip(spec.members, routes):
        assert {obj for _, obj in route} <= set(members.tolist())
    answer = dataclasses.replace(solve_model(problem, relaxation.model, OPTIONS),
                                 status="FEASIBLE", lp_values=values)
    pointed = coarse.routed_stayers(relaxation, answer)
    held = pointed.model.restrictions[-1][1].fixed_objects
    for members, need in zip(spec.members, spec.needs.tolist()):
        assert len(held & set(members.tolist())) == need
    assert spec.routed({}) is None
