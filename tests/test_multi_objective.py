"""Rebalancer's multiObjSolveSettings through the solve chain: a range of tuple positions
(firstObjectiveIdx, lastObjectiveIdx), BLENDED sums, and allowed worsening of a solved
position (higherPriorityObjConfig), against enumeration on random tiny scenarios and
against the wheel's HiGHS solver."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from dataclasses import replace
from fractions import Fraction
from functools import cmp_to_key
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from randomized import brute_force, leximin_less, random_scenario
from test_fuzz import mutate, mutation

from cpsat_rebalancer import InputError, ProblemSolver, cli, evaluate, parse_scenario
from cpsat_rebalancer.api import solve_scenario
from cpsat_rebalancer.peer import export_rebalancer_python, find_peer_python
from cpsat_rebalancer.peer.bridge import call_peer, normalise_scenario, scenario_run
from cpsat_rebalancer.solver_specs import ObjectivePlan, parse_plan, parse_solver_spec

REL = 1e-9
PEER = find_peer_python()
NO_PEER = "no Python 3.12 interpreter with the rebalancer wheel (set CPSAT_REBALANCER_PEER_PYTHON)"


def tolerance(value: float) -> float:
    return REL * max(1.0, abs(value))


def with_movement_goal(data: dict) -> dict:
    """The scenario with a movement goal after its last position, so every plan has a later
    position that gains from worsening an earlier one."""
    scenario = parse_scenario(data)
    last = max(evaluate(scenario.problem, scenario.model, scenario.problem.initial).positions,
               default=-1)
    data = dict(data)
    data["goals"] = [*data.get("goals", []),
                     {"spec": {"minimizeMovementSpec": {}}, "tuplePos": last + 1}]
    return data


def random_settings(rng: random.Random, last_position: int) -> dict:
    """multiObjSolveSettings drawn at random: a range, HIERARCHICAL or BLENDED, allowances
    (keys counted from firstObjectiveIdx, as the wheel reads them)."""
    settings: dict = {}
    first = rng.choice([0, 0, rng.randint(0, last_position)])
    if first:
        settings["firstObjectiveIdx"] = first
    if rng.random() < 0.3:
        settings["lastObjectiveIdx"] = rng.randint(first, last_position)
    if rng.random() < 0.3:
        settings["solveType"] = rng.choice(["BLENDED", 0])
    end = settings.get("lastObjectiveIdx", last_position)
    worsening = {}
    for index in range(end - first):
        if rng.random() < 0.6:
            worsening[str(index) if rng.random() < 0.5 else index] = {
                "percent": rng.choice([0, 10, 50, 100, 37.5]),
                "absolute": rng.choice([0, 0.05, 0.3, 1.0, 2.5])}
    if worsening:
        settings["higherPriorityObjConfig"] = {"tuplePosToAllowedWorsening": worsening}
    return settings


def enumerate_plan(feasible: list, plan: ObjectivePlan, positions: list[int], loose: bool):
    """The plan solved by enumeration: per stage its optimum, and the assignments kept for
    the stages after it. An allowance's limit compares floats with the evaluator's values;
    ``loose`` keeps what lies within the tolerance above a limit, the strict reading drops
    it (an exact solver lies between the two)."""
    covered = [p for p in positions if plan.covers(p)]
    kept = feasible
    optima: dict[int, float] = {}
    if plan.blended and len(covered) > 1:
        values = [sum(e.positions.get(p, 0.0) for p in covered) for _, e in kept]
        optima[covered[0]] = min(values)
        return optima, kept
    for position in covered:
        if position in kept[0][1].leximin:  # IDEAL alone: its sorted vector, least first
            vectors = [e.leximin[position] for _, e in kept]
            least = min(vectors, key=cmp_to_key(lambda a, b: leximin_less(a, b, 1e-9)))
            kept = [(f, e) for f, e in kept if leximin_less(e.leximin[position], least,
                                                            1e-9) == 0]
            continue
        best = min(e.positions.get(position, 0.0) for _, e in kept)
        optima[position] = best
        limit = best
        if position in plan.allowances:
            limit = float(plan.allowances[position].limit(Fraction(best)))
        cut = limit + tolerance(limit) if loose else max(best + tolerance(best),
                                                          limit - tolerance(limit))
        kept = [(f, e) for f, e in kept if e.positions.get(position, 0.0) <= cut]
    return optima, kept


@pytest.mark.parametrize("seed", range(30))
def test_plan_matches_enumeration(seed) -> None:
    rng = random.Random(1000 + seed)
    data = with_movement_goal(random_scenario(seed, max_objects=5))
    scenario = parse_scenario(data)
    feasible = brute_force(scenario)
    if not feasible:
        return
    positions = sorted(feasible[0][1].positions)
    settings = random_settings(rng, positions[-1])
    plan = parse_plan(settings, "multiObjSolveSettings")
    result = solve_scenario(scenario, replace(scenario.options, plan=plan))
    assert result.status == "OPTIMAL", (settings, result.buckets)
    strict, _ = enumerate_plan(feasible, plan, positions, loose=False)
    loose, _ = enumerate_plan(feasible, plan, positions, loose=True)
    reports = {r.position: r for r in result.buckets}
    final = result.final_evaluation
    if not strict:  # the range covers no position there is: nothing to minimize
        assert [(r.position, r.objective) for r in result.buckets] == [(plan.first, 0.0)]
        return
    assert set(reports) - set(strict) <= {r.position for r in result.buckets
                                          if r.leximin_levels is not None}
    for position, report in reports.items():
        if report.leximin_levels is not None:
            continue  # a leximin order, proven level by level (test_leximin.py)
        # each stage's optimum: no lower than the loose reading allows, no higher than the
        # strict one
        assert loose[position] - tolerance(loose[position]) <= report.bound, (settings, position)
        assert report.bound <= strict[position] + tolerance(strict[position]), (settings, position)
        members = report.positions or [position]
        assert report.objective == pytest.approx(sum(final.positions.get(p, 0.0)
                                                     for p in members), rel=REL, abs=1e-12)
        if position in plan.allowances and report.positions is None:  # BLENDED: one sum
            assert report.allowed_up_to is not None
            assert report.objective <= report.allowed_up_to + tolerance(report.allowed_up_to)
    # the answer keeps every stage's limit (read loosely) and is optimal in the last stage
    assert _within(final, plan, positions, loose), settings
    last = max(reports)
    assert reports[last].objective <= strict[last] + tolerance(strict[last])


def _within(final, plan: ObjectivePlan, positions: list[int], optima: dict[int, float]) -> bool:
    """Whether the final values keep every stage's limit, from the stages' ``optima``."""
    for position in positions:
        if not plan.covers(position) or position not in optima or plan.blended:
            continue
        best = optima[position]
        limit = (float(plan.allowances[position].limit(Fraction(best)))
                 if position in plan.allowances else best)
        if final.positions.get(position, 0.0) > limit + tolerance(limit):
            return False
    return True


def allowance_case() -> dict:
    """Four objects 3, 3, 2, 2 on one of two hosts of capacity 10: a perfect balance takes two
    moves, one move reaches 0.1 (Rebalancer's LINEAR balance), none leaves 0.25."""
    return {"objectName": "task", "containerName": "host",
            "assignment": {"h0": ["a", "b", "c", "d"], "h1": []},
            "objectDimensions": {"mem": {"a": 3, "b": 3, "c": 2, "d": 2}},
            "containerDimensions": {"mem": {"h0": 10, "h1": 10}},
            "goals": [{"spec": {"balanceSpec": {"scope": "host", "dimension": "mem"}}},
                      {"boundary": True}, {"spec": {"minimizeMovementSpec": {}}},
                      {"boundary": True},
                      {"spec": {"balanceSpec": {"scope": "host", "dimension": "mem",
                                                "formula": "SQUARES"}}}]}


# What the wheel's HiGHS solver returns on allowance_case (rebalancer 1.0.4: ProblemSolver with
# set_assignment/add_object_dimension/add_container_dimension/add_goal as in the dict above,
# add_solver({"optimalSolverSpec": {"solverPackage": 2, "solveTime": 5,
# "multiObjSolveSettings": SETTINGS}}), solve()["finalGlobalObjective"]): moves, and the
# value of each position.
WHEEL_OUTCOMES = [
    ({}, 2, [0, 0.001, 0]),
    ({"higherPriorityObjConfig": {"tuplePosToAllowedWorsening": {0: {"absolute": 0.5}}}},
     0, [0.25, 0, 0.26674175211579815]),
    ({"higherPriorityObjConfig": {"tuplePosToAllowedWorsening": {0: {"absolute": 0.1}}}},
     1, [0.1, 0.0005, None]),
    ({"higherPriorityObjConfig": {"tuplePosToAllowedWorsening": {0: {"percent": 1000}}}},
     2, [0, 0.001, 0]),
    ({"solveType": 0}, 2, [0, 0.001, 0]),
    ({"firstObjectiveIdx": 1}, 0, [0.25, 0, 0.26674175211579815]),
    ({"lastObjectiveIdx": 0}, 2, [0, None, None]),
    ({"firstObjectiveIdx": 1, "higherPriorityObjConfig":
      {"tuplePosToAllowedWorsening": {0: {"absolute": 10}}}}, 2, [0, 0.001, 0]),
    ({"firstObjectiveIdx": 1, "higherPriorityObjConfig":
      {"tuplePosToAllowedWorsening": {1: {"absolute": 10}}}}, 0,
     [0.25, 0, 0.26674175211579815]),
]


def binding_with(settings: dict | None, solvers: list[dict] | None = None) -> ProblemSolver:
    data = allowance_case()
    ps = ProblemSolver().set_object_name("task").set_container_name("host")
    ps.set_assignment(data["assignment"])
    ps.add_object_dimension("mem", data["objectDimensions"]["mem"])
    ps.add_container_dimension("mem", data["containerDimensions"]["mem"])
    for goal in data["goals"]:
        if goal.get("boundary"):
            ps.add_goal_boundary()
        else:
            ps.add_goal(goal["spec"])
    for spec in solvers or [{"optimalSolverSpec": {"solverPackage": 2, "solveTime": 5,
                                                   "multiObjSolveSettings": settings}}]:
        ps.add_solver(spec)
    return ps


@pytest.mark.parametrize("settings, moves, values", WHEEL_OUTCOMES)
def test_settings_give_the_wheels_outcome(settings, moves, values) -> None:
    solution = binding_with(settings).solve()
    assert len(solution["movesSummary"][0]["moves"]) if moves else not solution["movesSummary"]
    assert len(solution.moves) == moves
    got = [g["value"] for g in solution["finalGlobalObjective"]["goals"]]
    for value, expected in zip(got, values):
        if expected is not None:
            assert value == pytest.approx(expected, rel=REL, abs=1e-12)
    assert solution["solverSummaries"] == [{"endReason": 1}]


# The wheel chains two optimal solvers: the second starts from the first's answer and its
# answer is undone when no better, lexicographically (values from rebalancer 1.0.4 as above)
def optimal(settings: dict) -> dict:
    return {"optimalSolverSpec": {"solverPackage": 2, "solveTime": 5,
                                  "multiObjSolveSettings": settings}}


def test_chain_reverts_an_answer_that_is_worse() -> None:
    kept = binding_with(None, [optimal({"lastObjectiveIdx": 0}), optimal({"firstObjectiveIdx": 1})])
    solution = kept.solve()
    assert [g["value"] for g in solution["finalGlobalObjective"]["goals"]][:2] == \
        pytest.approx([0, 0.001], abs=1e-12)
    assert len(solution["movesSummary"]) == 1
    assert solution["solverSummaries"] == [{"endReason": 1}, {"endReason": 1}]
    both = binding_with(None, [optimal({"firstObjectiveIdx": 1}),
                               optimal({"lastObjectiveIdx": 0})]).solve()
    assert both.final_evaluation.positions[0] == 0 and len(both.moves) == 2
    # every answer undone: the initial assignment stands
    alone = binding_with(None, [optimal({"firstObjectiveIdx": 1, "lastObjectiveIdx": 1})]).solve()
    assert len(alone.moves) == 0 and alone["movesSummary"] == []


def test_last_position_keeps_its_optimum() -> None:
    """An allowance on the last position solved has no later position to serve: it stays at
    its optimum (the tie-break on moves does not trade it away), as in the wheel, whose
    iterative solve adds no limit after the last objective."""
    data = allowance_case()
    data["goals"] = data["goals"][4:]  # the SQUARES balance alone: 0 takes two moves
    scenario = parse_scenario(data)
    plan = parse_plan({"higherPriorityObjConfig": {"tuplePosToAllowedWorsening": {
        "0": {"absolute": 5}}}}, "m")
    result = solve_scenario(scenario, replace(scenario.options, plan=plan))
    assert result.final_evaluation.positions == {0: 0.0} and len(result.moves) == 2
    assert result.buckets[0].allowed_up_to is None


def test_allowance_limit_is_rebalancers() -> None:
    """max(v·(1 + percent/100), v + absolute): the larger of the two readings."""
    plan = parse_plan({"higherPriorityObjConfig": {"tuplePosToAllowedWorsening": {
        "0": {"percent": 50, "absolute": 1}}}}, "m")
    allowance = plan.allowances[0]
    assert allowance.limit(Fraction(4)) == 6 and allowance.limit(Fraction(1)) == 2
    assert allowance.limit(Fraction(-4)) == -3  # a negative value: the absolute reading


@pytest.mark.parametrize("settings, field", [
    ({"firstObjectiveIdx": 2, "lastObjectiveIdx": 1}, "m.firstObjectiveIdx"),
    ({"firstObjectiveIdx": -1}, "m.firstObjectiveIdx"),
    ({"solveType": "MIXED"}, "m.solveType"),
    ({"higherPriorityObjConfig": {"tuplePosToAllowedWorsening": {"0": {"percent": -5}}}},
     "m.higherPriorityObjConfig.tuplePosToAllowedWorsening.0.percent"),
    ({"higherPriorityObjConfig": {"tuplePosToAllowedWorsening": {"x": {}}}},
     "m.higherPriorityObjConfig.tuplePosToAllowedWorsening.x"),
    ({"higherPriorityObjConfig": {"tuplePosToAllowedWorsening": {"0": {"intent": "MIN"}}}},
     "m.higherPriorityObjConfig.tuplePosToAllowedWorsening.0.intent"),
    ({"bogus": 1}, "m.bogus"),
])
def test_bad_settings_name_the_field(settings, field) -> None:
    with pytest.raises(InputError) as error:
        parse_plan(settings, "m")
    assert error.value.path == field


@pytest.mark.parametrize("spec, field", [
    ({}, "s"), ({"gurobiSpec": {}}, "s"),
    ({"optimalSolverSpec": {"solveTime": 2.5}}, "s.optimalSolverSpec.solveTime"),
    ({"optimalSolverSpec": {"solveTime": -1}}, "s.optimalSolverSpec.solveTime"),
    ({"optimalSolverSpec": {"typo": 1}}, "s.optimalSolverSpec.typo"),
    ({"localSearchSolverSpec": {"solveTime": 1}}, "s.localSearchSolverSpec.moveTypeList"),
])
def test_bad_solver_specs_name_the_field(spec, field) -> None:
    with pytest.raises(InputError) as error:
        parse_solver_spec(spec, "s")
    assert error.value.path == field


def test_solve_time_is_the_time_limit() -> None:
    stage = parse_solver_spec({"optimalSolverSpec": {"solveTime": 0}}, "s")
    assert stage.seconds == 1.0  # as the wheel, at least a second
    assert parse_solver_spec({"optimalSolverSpec": {"solveTime": 7}}, "s").seconds == 7.0
    assert parse_solver_spec({"optimalSolverSpec": {}}, "s").seconds is None
    local = parse_solver_spec({"localSearchSolverSpec": {
        "moveTypeList": [{"singleMoveTypeSpec": {}}], "solveTime": 3}}, "s")
    assert local.local_search and local.seconds == 3.0


MOVES = {"moveTypeList": [{"singleMoveTypeSpec": {}}]}


def stage(begin: int, end: int, seconds: int | None = None, **fields) -> dict:
    """A LocalSearchStageSpec over tuple positions [begin, end)."""
    solver = dict(MOVES, **({} if seconds is None else {"solveTime": seconds}))
    return {"begin": begin, "end": end, "solverSpec": solver, **fields}


def staged(*stages: dict, **fields) -> dict:
    return {"localSearchStageSolverSpec": {"stageSpecs": list(stages), **fields}}


@pytest.mark.parametrize("spec, seconds", [
    (staged(stage(0, 1, 3), stage(1, 2, 4)), 7.0),  # each stage its own solveTime
    (staged(stage(0, 1, 3), stage(1, 2, 4, minRuntimeSec=5)), 8.0),  # at least minRuntimeSec
    (staged(stage(0, 1, 3), stage(1, 2, 4), solveTime=5), 5.0),  # within the master time
    (staged(stage(0, 1, 3), stage(1, 2, 4), solveTime=2, multiStageConfigs=[
        {"stageIds": [1], "solveTime": 1.5}]), 2.0),  # the second stage has what is left
    (staged(stage(0, 1, 3), stage(1, 2, 4), multiStageConfigs=[
        {"stageIds": [0, 1], "solveTime": 2.5}]), 2.5),  # a group's shared time
    (staged(stage(0, 1), stage(1, 2, 4)), None),  # a stage without a limit: no limit
    (staged(stage(0, 1), stage(1, 2, 4), solveTime=6), 6.0),
])
def test_stages_time_is_what_they_may_take(spec, seconds) -> None:
    """Rebalancer's LocalSearchStageSolver gives stage k min(its solveTime, what the master
    solveTime and each multiStageConfigs group holding it leave), at least minRuntimeSec;
    the exact solve gets their total."""
    assert parse_solver_spec(spec, "s").seconds == seconds


@pytest.mark.parametrize("stages, plan_last", [
    ([stage(0, 1), stage(1, 3)], 2),
    ([stage(0, 2), stage(1, 3)], 2),  # overlapping: each begins within what was optimized
    ([stage(0, 1)], 0),
])
def test_stages_solve_their_positions_lexicographically(stages, plan_last) -> None:
    """Stages that optimize positions [0, E) in turn, each holding the ones before it, end
    at the lexicographic optimum of [0, E): the optimal solver's outcome with
    lastObjectiveIdx E - 1, which the wheel's stage solver reaches on this case too
    (test_stages_end_where_the_wheels_do)."""
    ours = binding_with(None, [staged(*stages)]).solve()
    plain = binding_with({"lastObjectiveIdx": plan_last}).solve()
    assert parse_solver_spec(staged(*stages), "s").plan == ObjectivePlan(0, plan_last)
    assert ours.final_evaluation.positions == pytest.approx(
        plain.final_evaluation.positions, rel=REL, abs=1e-12)
    assert ours.final_evaluation.positions[0] == 0


WHERE = "add_solver[1].localSearchStageSolverSpec"  # after an optimal solver


@pytest.mark.parametrize("spec, field", [
    (staged(stage(1, 2)), "stageSpecs[0].begin"),  # position 0 held, never optimized
    (staged(stage(0, 1), stage(2, 3)), "stageSpecs[1].begin"),  # position 1 skipped
    (staged(stage(0, 3), stage(1, 2)), "stageSpecs[1].end"),  # position 2 left to worsen
    (staged(stage(0, 1), stage(1, 2, higherPriorityObjConfig={
        "tuplePosToAllowedWorsening": {"0": {"absolute": 1}}})),
     "stageSpecs[1].higherPriorityObjConfig"),
    (staged(stage(0, 1), stopAfterMoves=3), "stopAfterMoves"),
    (staged(stage(0, 1, stopAfterMovesTillStage=2)), "stageSpecs[0].stopAfterMovesTillStage"),
    (staged({"begin": 0, "end": 1, "solverSpec": dict(MOVES, stopAfterMoves=0)}),
     "stageSpecs[0].solverSpec.stopAfterMoves"),
    (staged(stage(0, 1), multiStageConfigs=[{"stageIds": [0], "moveLimit": 4}]),
     "multiStageConfigs[0].moveLimit"),
])
def test_what_an_exact_solve_cannot_honour_is_refused_naming_the_field(spec, field) -> None:
    """Refused when the stages run exactly, before any solver runs; Rebalancer's own local
    search (local_search="wheel") takes them as they are."""
    ps = binding_with(None, [optimal({}), spec])
    with pytest.raises(InputError) as error:
        ps.solve()
    assert error.value.path == f"{WHERE}.{field}"
    assert parse_solver_spec(spec, "add_solver[1]").inexact[0][0] == f"{WHERE}.{field}"
    # a negative budget is no budget, as in Rebalancer
    assert not parse_solver_spec(staged(stage(0, 1), stopAfterMoves=-1), "s").inexact


@pytest.mark.parametrize("spec, field", [
    (staged(), "stageSpecs"),
    (staged(stage(1, 1)), "stageSpecs[0].end"),
    (staged(stage(0, 1, 3), {"begin": 0, "end": 2}), "stageSpecs[1].solverSpec.moveTypeList"),
    (staged(stage(0, 1), multiStageConfigs=[{"stageIds": [1]}]),
     "multiStageConfigs[0].stageIds[0]"),
    (staged(stage(0, 1, 3), solveTime=1.5), "solveTime"),
    (staged(stage(0, 1, minRuntimeSec=-1)), "stageSpecs[0].minRuntimeSec"),
    (staged(stage(0, 1), typo=1), "typo"),
    (staged(stage(0, 1, typo=1)), "stageSpecs[0].typo"),
])
def test_bad_stage_specs_name_the_field(spec, field) -> None:
    with pytest.raises(InputError) as error:
        parse_solver_spec(spec, "s")
    assert error.value.path == f"s.localSearchStageSolverSpec.{field}"


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=NO_PEER)
@pytest.mark.parametrize("stages", [[stage(0, 1), stage(1, 3)], [stage(0, 1)], [stage(0, 3)]])
def test_stages_end_where_the_wheels_do(stages) -> None:
    """The wheel's stage solver (5 s) and ours end at the same values on allowance_case."""
    spec = staged(*stages, solveTime=5)
    theirs = wheel_solution(allowance_case(), [spec])
    ours = binding_with(None, [spec]).solve()
    assert [g["value"] for g in ours["finalGlobalObjective"]["goals"]] == pytest.approx(
        [g["value"] for g in theirs["finalGlobalObjective"]["goals"]], rel=1e-9, abs=1e-12)


def linear_case(rng: random.Random) -> dict:
    """A random scenario of goals HiGHS models (linear and MAX balances, movement) at three
    positions, on 5 to 7 objects and 3 hosts."""
    objects = [f"t{k}" for k in range(rng.randint(5, 7))]
    hosts = ["h0", "h1", "h2"]
    assignment: dict[str, list[str]] = {h: [] for h in hosts}
    for name in objects:
        assignment[rng.choice(hosts[:2])].append(name)
    goals = [{"spec": {"balanceSpec": {"scope": "host", "dimension": "cpu"}}},
             {"spec": {"minimizeMovementSpec": {}}, "tuplePos": 1},
             {"spec": {"balanceSpec": {"scope": "host", "dimension": "mem", "formula": "MAX"}},
              "tuplePos": 2}]
    rng.shuffle(goals)
    for position, goal in enumerate(goals):
        goal["tuplePos"] = position
    return {"objectName": "task", "containerName": "host", "assignment": assignment,
            "objectDimensions": {"cpu": {o: rng.choice([1, 2, 3, 5]) for o in objects},
                                 "mem": {o: rng.choice([1, 2, 4]) for o in objects}},
            "containerDimensions": {"cpu": {h: rng.choice([10, 12]) for h in hosts},
                                    "mem": {h: 10 for h in hosts}},
            "goals": goals}


def wheel_solution(data: dict, solvers: list[dict]) -> dict:
    """The wheel's solution for our scenario dict solved by ``solvers`` in turn."""
    run = scenario_run(normalise_scenario(data), solvers[0], tagged=False)
    run["solvers"] = solvers
    run["report"] = True
    (result,) = call_peer(PEER, [run], 300)
    return result


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=NO_PEER)
@pytest.mark.parametrize("seed", range(12))
def test_plans_agree_with_the_wheel(seed) -> None:
    """Random scenarios and plans: the wheel's HiGHS solver and ours end at the same values
    (both exact; the plans whose limits fall between two attainable values)."""
    rng = random.Random(2000 + seed)
    data = linear_case(rng)
    scenario = parse_scenario(data)
    positions = sorted(evaluate(scenario.problem, scenario.model,
                                scenario.problem.initial).positions)
    settings = random_settings(rng, positions[-1])
    if isinstance(settings.get("solveType"), str):
        settings["solveType"] = 0  # the wheel reads the integer only
    spec = {"optimalSolverSpec": {"solverPackage": 2, "solveTime": 20,
                                  "multiObjSolveSettings": settings}}
    theirs = wheel_solution(data, [spec])
    plan = parse_plan(settings, "m")
    ours = solve_scenario(scenario, replace(scenario.options, plan=plan))
    assert theirs["solverSummaries"][0].get("endReason") == 1 and ours.status == "OPTIMAL"
    wheel_final = scenario.problem.assignment_array(_containers(theirs, scenario), "wheel")
    wheel_values = evaluate(scenario.problem, scenario.model, wheel_final).positions
    for report in ours.buckets:
        members = report.positions or [report.position]
        if report.position in plan.allowances and report.positions is None:
            continue  # worsened within its allowance: where to, ties may decide
        expected = sum(wheel_values.get(p, 0.0) for p in members)
        assert report.objective == pytest.approx(expected, rel=1e-6, abs=1e-9), settings


def _containers(solution: dict, scenario) -> dict[str, list[str]]:
    where = solution["assignment"]
    problem = scenario.problem
    result: dict[str, list[str]] = {c: [] for c in problem.containers}
    for obj, container in zip(problem.objects, problem.initial):
        result[where.get(obj, problem.containers[container])].append(obj)
    return result


def test_scenario_files_carry_the_settings(tmp_path) -> None:
    """A scenario's ``solver.multiObjSolveSettings`` reaches the command line's solve: only
    the movement position optimized, nothing moves (as the wheel, WHEEL_OUTCOMES)."""
    data = allowance_case()
    data["solver"] = {"multiObjSolveSettings": {"firstObjectiveIdx": 1}}
    path = tmp_path / "case.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "result.json"
    assert cli.main(["solve", str(path), "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["moves"] == [] and [b["position"] for b in result["buckets"]] == [1, 2]
    data["solver"] = {"multiObjSolveSettings": {"lastObjectiveIdx": "x"}}
    with pytest.raises(InputError) as error:
        parse_scenario(data)
    assert error.value.path == "solver.multiObjSolveSettings.lastObjectiveIdx"


CHAINS = [
    [optimal({"lastObjectiveIdx": 0}), optimal({"firstObjectiveIdx": 1})],
    [optimal({"firstObjectiveIdx": 1}), optimal({"lastObjectiveIdx": 0})],
    [optimal({"firstObjectiveIdx": 1, "lastObjectiveIdx": 1})],
    *[[optimal(settings)] for settings, _, _ in WHEEL_OUTCOMES],
]


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=NO_PEER)
@pytest.mark.parametrize("solvers", CHAINS, ids=range(len(CHAINS)))
def test_chains_end_where_the_wheels_do(solvers) -> None:
    """The literal outcomes above, live: the wheel's chain and ours end at the same values
    (the wheel reverts as ours does, HIERARCHICAL and BLENDED alike)."""
    theirs = wheel_solution(allowance_case(), solvers)
    ours = binding_with(None, solvers).solve()
    wheel_values = [g["value"] for g in theirs["finalGlobalObjective"]["goals"]]
    assert [g["value"] for g in ours["finalGlobalObjective"]["goals"]] == pytest.approx(
        wheel_values, rel=1e-9, abs=1e-12)
    assert len(ours["solverSummaries"]) == len(theirs["solverSummaries"])


EXPORTED_SETTINGS = [
    {"solveType": "BLENDED", "firstObjectiveIdx": 1},
    {"higherPriorityObjConfig": {"tuplePosToAllowedWorsening": {
        "0": {"absolute": 0.1, "intent": "MAX"}}}},
]


def exported_plan(settings: dict, tmp_path: Path, monkeypatch) -> tuple[str, list[float]]:
    """The exported script of allowance_case with ``settings``, and the values it ends at
    when run on cpsat_rebalancer."""
    data = allowance_case()
    data["solver"] = {"multiObjSolveSettings": settings}
    text = export_rebalancer_python(data, solver="optimal-highs", time_limit=20)
    assert "'multiObjSolveSettings'" in text and "BLENDED" not in text and "'MAX'" not in text
    scenario = parse_scenario(data)
    expected = solve_scenario(scenario).final_evaluation.positions
    swapped = text.replace("\nimport rebalancer\n", "\nimport cpsat_rebalancer as rebalancer\n")
    monkeypatch.setattr(sys, "argv", ["script.py", str(tmp_path / "ours.json")])
    exec(compile(swapped, "script.py", "exec"), {"__name__": "__main__"})
    ours = json.loads((tmp_path / "ours.json").read_text())
    values = [g["value"] for g in ours["finalGlobalObjective"]["goals"]]
    assert values == pytest.approx([expected[p] for p in sorted(expected)], rel=REL, abs=1e-12)
    return text, values


@pytest.mark.parametrize("settings", EXPORTED_SETTINGS)
def test_export_carries_the_scenarios_settings(settings, tmp_path, monkeypatch) -> None:
    """A scenario's plan goes into the exported optimal solver (enum names as the wheel's
    integers); the script run on cpsat_rebalancer ends where `solve` does."""
    exported_plan(settings, tmp_path, monkeypatch)


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=NO_PEER)
@pytest.mark.parametrize("settings", EXPORTED_SETTINGS)
def test_exported_plan_ends_alike_in_the_wheel(settings, tmp_path, monkeypatch) -> None:
    text, values = exported_plan(settings, tmp_path, monkeypatch)
    script = tmp_path / "case.py"
    script.write_text(text)
    done = subprocess.run([PEER, str(script), str(tmp_path / "wheel.json")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = json.loads((tmp_path / "wheel.json").read_text())
    assert [g["value"] for g in theirs["finalGlobalObjective"]["goals"]] == pytest.approx(
        values, rel=1e-9, abs=1e-12)


SPEC = {"optimalSolverSpec": {"solveTime": 3, "multiObjSolveSettings": {
    "solveType": "BLENDED", "firstObjectiveIdx": 1, "lastObjectiveIdx": 2,
    "higherPriorityObjConfig": {"tuplePosToAllowedWorsening": {
        "0": {"percent": 10, "absolute": 1, "intent": "MAX"}}}}}}


@settings(max_examples=300, deadline=None, derandomize=True)
@given(mutations=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_solver_specs_solve_or_raise_input_error(mutations: list) -> None:
    spec = mutate(SPEC, mutations)
    try:
        stage = parse_solver_spec(spec, "s")
    except InputError:
        return
    scenario = parse_scenario(allowance_case())
    result = solve_scenario(scenario, replace(scenario.options, plan=stage.plan, time_limit=5))
    assert result.final_evaluation.feasible
