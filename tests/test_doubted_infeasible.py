"""A solve that CP-SAT calls INFEASIBLE while the session holds a solution of every
constraint in it is a fault of CP-SAT's (seen on models with coefficients near 1e10), never
a proof: the session tries again, then reports no solution found."""

from __future__ import annotations

import pytest
from ortools.sat.python import cp_model
from test_bruteforce import check_against_enumeration

from cpsat_rebalancer.generators import balance_instance
from cpsat_rebalancer.result import INFEASIBLE
from cpsat_rebalancer.scenario import SolverOptions, parse_scenario
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve import session as session_module
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.moves import moved_objects
from cpsat_rebalancer.solve.pipeline import solve_model
from cpsat_rebalancer.solve.session import Session


def held_session() -> tuple[Session, object]:
    """A session holding an optimal solution of its model, and the objective it solved."""
    scenario = parse_scenario(balance_instance(24, 8, seed=4))
    builder, _ = compile_model(scenario.problem, scenario.model)
    session = Session(builder, scenario.model, SolverOptions(workers=1, seed=3))
    moved = moved_objects(builder)
    status, _ = session.solve(moved)
    assert status == cp_model.OPTIMAL and session.values is not None
    return session, moved


def faulty_runs(monkeypatch: pytest.MonkeyPatch, faults: int,
                forced: dict[int, int] | None = None) -> list[tuple[int, bool]]:
    """CP-SAT's solves made to answer INFEASIBLE the first ``faults`` times (or, with
    ``forced``, the status it gives by the solve's number from 1), then as they do; returns
    the (seed, presolve) of every solve made."""
    calls: list[tuple[int, bool]] = []
    real = session_module.run_solvers
    forced = forced or {n: cp_model.INFEASIBLE for n in range(1, faults + 1)}

    def run(solves, reporters=None):  # noqa: ANN001, ANN202
        params = solves[0][0].parameters
        calls.append((params.random_seed, params.cp_model_presolve))
        statuses, interrupted = real(solves, reporters)
        if len(calls) in forced:
            return [forced[len(calls)]] * len(solves), interrupted
        return statuses, interrupted

    monkeypatch.setattr(session_module, "run_solvers", run)
    return calls


def test_a_false_infeasible_is_solved_again_under_the_next_seed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    session, moved = held_session()
    calls = faulty_runs(monkeypatch, 1)
    status, solver = session.solve(moved)
    assert status == cp_model.OPTIMAL
    assert calls == [(3, True), (4, True)]
    assert session.values == list(solver.response_proto.solution)


def test_a_false_infeasible_that_persists_is_no_solution_found(
        monkeypatch: pytest.MonkeyPatch) -> None:
    session, moved = held_session()
    held = list(session.values)
    calls = faulty_runs(monkeypatch, 3)
    status, _ = session.solve(moved)
    assert status == cp_model.UNKNOWN
    assert calls == [(3, True), (4, True), (3, False)]
    assert session.values == held  # the held solution stands


def test_an_infeasible_model_without_a_held_solution_is_reported_infeasible() -> None:
    data = balance_instance(24, 8, seed=4)
    data["constraints"] = [{"spec": {"capacitySpec": {
        "name": "cpu_tenth", "scope": "host", "dimension": "cpu",
        "limit": {"type": "RELATIVE", "globalLimit": 0.1}}}, "policy": "HARD"}]
    scenario = parse_scenario(data)
    builder, _ = compile_model(scenario.problem, scenario.model)
    session = Session(builder, scenario.model, SolverOptions(workers=1, seed=3))
    status, _ = session.solve(moved_objects(builder))
    assert status == cp_model.INFEASIBLE


def test_a_false_infeasible_without_a_held_solution_is_checked_without_the_objective(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing held to doubt the claim by (an initial assignment that breaks a hard rule,
    and the first check without the objective found nothing in its time): the model is
    searched without its objective again, its solution held, and the solve doubted as any
    other."""
    scenario = parse_scenario(balance_instance(24, 8, seed=4))
    builder, _ = compile_model(scenario.problem, scenario.model)
    session = Session(builder, scenario.model, SolverOptions(workers=1, seed=3))
    calls = faulty_runs(monkeypatch, 0, {1: cp_model.UNKNOWN, 2: cp_model.INFEASIBLE})
    status, solver = session.solve(moved_objects(builder))
    assert status == cp_model.OPTIMAL
    assert calls == [(3, True), (3, True), (3, True), (4, True)]
    assert session.values == list(solver.response_proto.solution)


def test_the_first_search_without_a_solution_held_starts_from_one_found_without_the_objective(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With nothing held, a search without the objective runs first; its solution is held,
    so that a false INFEASIBLE of the optimizing search after it is doubted by it."""
    scenario = parse_scenario(balance_instance(24, 8, seed=4))
    builder, _ = compile_model(scenario.problem, scenario.model)
    session = Session(builder, scenario.model, SolverOptions(workers=1, seed=3))
    calls = faulty_runs(monkeypatch, 0, {2: cp_model.INFEASIBLE})
    status, solver = session.solve(moved_objects(builder))
    assert status == cp_model.OPTIMAL
    assert calls == [(3, True), (3, True), (4, True)]
    assert session.values == list(solver.response_proto.solution)


def test_more_groups_than_places_for_them_is_infeasible_at_once() -> None:
    """Drawn shape 3218 at 40x6: a HARD GroupDiversity of at most 2 jobs per host, 14 jobs
    on 6 hosts, and a start that breaks it. The optimizing search took minutes to prove it
    (without a time limit the claim's check then ran out, and the answer was NO_SOLUTION,
    termination time_limit); the check without the objective, on the LP's full
    linearization, has it at once, and the conflict names the spec on every host."""
    data = random_shape_scenario(40, 6, 3218)
    (diversity,) = [c["spec"]["groupDiversitySpec"] for c in data["constraints"]]
    jobs = len(data["partitions"][diversity["partition"]])
    hosts = len(data["assignment"])
    assert jobs > diversity["limit"]["globalLimit"] * hosts  # infeasible, independently
    scenario = parse_scenario(data)
    # (a limit the search alone ends NO_SOLUTION in; the proof takes a fraction of it)
    result = solve_model(scenario.problem, scenario.model,
                         SolverOptions(workers=1, seed=0, time_limit=30))
    assert result.status == INFEASIBLE and result.termination == "infeasible"
    assert [line.split(":")[0] for line in result.conflict] == [diversity["name"]]


def test_a_drawn_shape_cpsat_calls_infeasible_is_solved() -> None:
    """Drawn shape 1821 at 5x4: the initial assignment breaks a hard AvoidAssignments, and
    the first bucket's objective (a soft GroupMoveLimit's 10^4 beside a movement term in
    units of 1e-17) has coefficients near 1e18, on which CP-SAT 9.15's presolve says
    INFEASIBLE under every seed; it was reported INFEASIBLE."""
    check_against_enumeration(random_shape_scenario(5, 4, 1821), "1821 (5, 4)")
