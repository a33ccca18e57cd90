"""Further CP-SAT parameters (``solver.cpsatParameters``, ``--cpsat-param NAME=VALUE``):
parsed and checked against CP-SAT's own SatParameters, refused where the engine owns the
parameter, and really applied to CP-SAT's searches."""

from __future__ import annotations

import copy
import json

import pytest
import test_bruteforce
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model
from randomized import brute_force, random_scenario

from cpsat_rebalancer import InputError, cli, parse_scenario
from cpsat_rebalancer.cli import common
from cpsat_rebalancer.cli import solve as solve_command
from cpsat_rebalancer.cpsat_parameters import (
    ENGINE_PARAMETERS,
    apply_cpsat_parameters,
    check_cpsat_parameters,
)
from cpsat_rebalancer.result import FEASIBLE, OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve.pipeline import solve_model


def unbalanced() -> dict:
    """Six tasks all on h0 of three equal hosts: the initial assignment (CP-SAT's first
    solution, as the engine hints it) is far from the balanced optimum."""
    return {
        "objectName": "task", "containerName": "host",
        "assignment": {"h0": ["t0", "t1", "t2", "t3", "t4", "t5"], "h1": [], "h2": []},
        "objectDimensions": {"cpu": {"t0": 5, "t1": 4, "t2": 3, "t3": 3, "t4": 2, "t5": 2}},
        "containerDimensions": {"cpu": {"h0": 20, "h1": 20, "h2": 20}},
        "goals": [{"spec": {"balanceSpec": {"scope": "host", "dimension": "cpu",
                                            "formula": "SQUARES"}}}],
    }


# --------------------------------------------------------------------------- parsing


def test_scenario_solver_block_round_trips() -> None:
    data = unbalanced()
    data["solver"] = {"workers": 1, "cpsatParameters": {
        "linearization_level": 2, "cp_model_presolve": False, "search_branching": 1,
        "symmetry_level": 0, "clause_activity_decay": 1, "ignore_subsolvers": ["core"]}}
    given_data = copy.deepcopy(data)
    options = parse_scenario(data).options
    assert options.workers == 1
    assert options.cpsat_parameters == {
        "linearization_level": 2, "cp_model_presolve": False,
        "search_branching": "FIXED_SEARCH",  # an enum given by number is kept by name
        "symmetry_level": 0, "clause_activity_decay": 1.0, "ignore_subsolvers": ["core"]}
    assert data == given_data  # nothing the user gave is modified
    assert parse_scenario(unbalanced()).options.cpsat_parameters == {}


def test_cli_flag_parses_values_by_their_look() -> None:
    assert common.cpsat_param("linearization_level=2") == ("linearization_level", 2)
    assert common.cpsat_param("cp_model_presolve=False") == ("cp_model_presolve", False)
    assert common.cpsat_param("clause_activity_decay=0.5") == ("clause_activity_decay", 0.5)
    assert common.cpsat_param(" search_branching = FIXED_SEARCH") == (
        "search_branching", "FIXED_SEARCH")
    assert common.collect_cpsat_params([("a", 1), ("b", "x"), ("a", 2), ("a", 3)]) == {
        "a": [1, 2, 3], "b": "x"}
    with pytest.raises(Exception, match="NAME=VALUE"):
        common.cpsat_param("linearization_level")


def test_cli_flag_reaches_the_options_over_the_scenario(tmp_path, monkeypatch) -> None:
    data = unbalanced()
    data["solver"] = {"cpsatParameters": {"linearization_level": 0, "symmetry_level": 1}}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    seen: list[SolverOptions] = []
    real = solve_command.solve_scenario

    def spy(scenario, options, hint=None, **keywords):
        seen.append(options)
        return real(scenario, options, hint, **keywords)

    monkeypatch.setattr(solve_command, "solve_scenario", spy)
    code = cli.main(["solve", str(path), "--cpsat-param", "linearization_level=2",
                     "--cpsat-param", "search_branching=FIXED_SEARCH"])
    assert code == 0
    assert seen[0].cpsat_parameters == {"linearization_level": 2, "symmetry_level": 1,
                                        "search_branching": "FIXED_SEARCH"}


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("parameters", "expected"), [
    ({"linearization_levl": 2}, ["solver.cpsatParameters.linearization_levl",
                                 "unknown CP-SAT parameter"]),
    ({"linearization_level": "2"}, ["solver.cpsatParameters.linearization_level",
                                    "expected an integer"]),
    ({"linearization_level": 2.0}, ["linearization_level", "expected an integer"]),
    ({"linearization_level": True}, ["linearization_level", "expected an integer"]),
    ({"linearization_level": 2**40}, ["linearization_level", "rejected by CP-SAT"]),
    ({"linearization_level": -3}, ["solver.cpsatParameters", "linearization_level",
                                   "non-negative"]),  # CP-SAT's own range check
    ({"cp_model_presolve": 0}, ["cp_model_presolve", "expected true or false"]),
    ({"search_branching": "FIXED"}, ["search_branching", "FIXED_SEARCH"]),
    ({"search_branching": 99}, ["search_branching", "expected one of"]),
    ({"clause_activity_decay": "high"}, ["clause_activity_decay", "expected a number"]),
    ({"linearization_level": [1, 2]}, ["linearization_level", "expected a single value"]),
    ({"subsolver_params": {}}, ["subsolver_params", "not supported"]),
    ({"subsolvers": ["no_such_worker"]}, ["no_such_worker"]),
    ("linearization_level=2", ["solver.cpsatParameters", "expected a mapping"]),
])
def test_bad_parameters_name_the_field(parameters, expected) -> None:
    data = unbalanced()
    data["solver"] = {"cpsatParameters": parameters}
    with pytest.raises(InputError) as info:
        parse_scenario(data)
    for text in expected:
        assert text in str(info.value)


@pytest.mark.parametrize("name", sorted(ENGINE_PARAMETERS))
def test_engine_owned_parameters_are_refused_with_the_option_to_use(name: str) -> None:
    with pytest.raises(InputError) as info:
        check_cpsat_parameters({name: 1}, "solver.cpsatParameters")
    assert info.value.path == f"solver.cpsatParameters.{name}"
    assert "set by the engine" in info.value.problem


def test_engine_owned_parameters_point_to_their_option() -> None:
    assert "--workers" in ENGINE_PARAMETERS["num_workers"]
    assert "--time-limit" in ENGINE_PARAMETERS["max_time_in_seconds"]
    assert "--deterministic-time" in ENGINE_PARAMETERS["max_deterministic_time"]
    assert "--seed" in ENGINE_PARAMETERS["random_seed"]


def test_cli_reports_a_bad_parameter_as_input(tmp_path, capsys) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(unbalanced()))
    assert cli.main(["solve", str(path), "--cpsat-param", "max_time_in_seconds=5"]) == 2
    err = capsys.readouterr().err
    assert "options.cpsatParameters.max_time_in_seconds" in err and "--time-limit" in err


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["linearization_level", "cp_model_presolve", "search_branching",
                        "clause_activity_decay", "ignore_subsolvers", "log_prefix"]),
       st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
                    lambda inner: st.lists(inner, max_size=3), max_leaves=4))
def test_any_value_is_accepted_or_an_input_error(name: str, value: object) -> None:
    try:
        check_cpsat_parameters({name: value}, "solver.cpsatParameters")
    except InputError as error:
        assert error.path.startswith("solver.cpsatParameters")


# --------------------------------------------------------------------------- effect


def test_parameters_are_set_on_the_solver() -> None:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 3
    checked = check_cpsat_parameters({"linearization_level": 2, "search_branching": 1,
                                      "ignore_subsolvers": ["core"]}, "p")
    assert apply_cpsat_parameters(solver.parameters, checked)
    assert solver.parameters.linearization_level == 2
    assert solver.parameters.search_branching == cp_model.FIXED_SEARCH
    assert list(solver.parameters.ignore_subsolvers) == ["core"]
    assert solver.parameters.num_workers == 3  # what the engine set stays


def optimum(data: dict) -> float:
    scenario = parse_scenario(data)
    return min(ev.positions[0] for _, ev in brute_force(scenario))


def test_a_parameter_really_reaches_cpsat() -> None:
    """Stopping at the first solution (the hinted initial assignment) leaves the chain
    unproven and worse than the enumerated optimum, which the default run reaches."""
    data = unbalanced()
    best = optimum(data)
    scenario = parse_scenario(data)
    default = solve_model(scenario.problem, scenario.model, SolverOptions(workers=1))
    assert default.status == OPTIMAL
    assert default.final_evaluation.positions[0] == pytest.approx(best, rel=1e-9)
    first = SolverOptions.checked(None, 1, 0, cpsat_parameters={"stop_after_first_solution":
                                                                True})
    stopped = solve_model(scenario.problem, scenario.model, first)
    assert stopped.status == FEASIBLE
    assert stopped.final_evaluation.feasible
    assert stopped.final_evaluation.positions[0] > best * (1 + 1e-6)


def test_cli_parameter_changes_the_answer(tmp_path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(unbalanced()))
    statuses = []
    for extra in ([], ["--cpsat-param", "stop_after_first_solution=true"]):
        out = tmp_path / "r.json"
        assert cli.main(["solve", str(path), "--workers", "1", "--json", str(out), *extra]) == 0
        statuses.append(json.loads(out.read_text())["status"])
    assert statuses == [OPTIMAL, FEASIBLE]


@pytest.mark.parametrize("seed", range(12))
def test_harmless_parameters_keep_the_enumerated_optimum(seed: int, monkeypatch) -> None:
    """The brute-force check of test_bruteforce, with CP-SAT's search changed (and its
    dual presolve reductions forced on, where the engine would turn them off)."""
    options = SolverOptions.checked(None, 1, 0, cpsat_parameters={
        "linearization_level": 2, "symmetry_level": 0,
        "keep_all_feasible_solutions_in_presolve": False})
    monkeypatch.setattr(test_bruteforce, "OPTIONS", options)
    test_bruteforce.check_against_enumeration(random_scenario(seed, max_objects=5), seed)
