"""ProblemSolver as Rebalancer's binding: every method of the wheel's ``_rebalancer.pyi`` that
the port needs, what it accepts and what it returns, against the wheel where its interpreter
is present; and the script ``export --to rebalancer-python`` writes, run unchanged but for
its import against cpsat_rebalancer, for every bundled scenario."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fuzz import mutate, mutation

from cpsat_rebalancer import InputError, ProblemSolver, cli
from cpsat_rebalancer.peer import export_rebalancer_python, find_peer_python
from cpsat_rebalancer.peer.solve import END_REASONS
from cpsat_rebalancer.scenario import read_data_file

ROOT = Path(__file__).parents[1]
SCENARIOS = sorted([*ROOT.glob("scenarios/*.json"),
                    *(p for p in (ROOT / "scenarios" / "catalog").glob("**/*")
                      if p.suffix in (".json", ".yaml", ".yml"))])
PEER = find_peer_python()
NO_PEER = "no Python 3.12 interpreter with the rebalancer wheel (set CPSAT_REBALANCER_PEER_PYTHON)"
REL = 1e-9


def run_on_cpsat_rebalancer(text: str, solution_path: Path, monkeypatch) -> None:
    """Run an exported script with its one import swapped for cpsat_rebalancer."""
    swapped = text.replace("\nimport rebalancer\n", "\nimport cpsat_rebalancer as rebalancer\n")
    assert swapped.count("cpsat_rebalancer as rebalancer") == 1
    assert [line for line in swapped.splitlines() if line != "import cpsat_rebalancer as "
            "rebalancer"] == [line for line in text.splitlines() if line != "import rebalancer"]
    monkeypatch.setattr(sys, "argv", ["script.py", str(solution_path)])
    exec(compile(swapped, "script.py", "exec"), {"__name__": "__main__"})


@pytest.mark.parametrize("solver", ["optimal-highs", "local-search"])
@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_exported_script_runs_on_cpsat_rebalancer(path, solver, tmp_path, monkeypatch,
                                                  capsys) -> None:
    """The script the exporter writes for the wheel, run against this package, ends at the
    proven values `cpsat-rebalancer solve` reports."""
    data = read_data_file(path)
    solution_path = tmp_path / "solution.json"
    run_on_cpsat_rebalancer(export_rebalancer_python(data, solver=solver), solution_path,
                            monkeypatch)
    assert "Objective per tuple position" in capsys.readouterr().out
    ours = json.loads(solution_path.read_text())
    cli_path = tmp_path / "cli.json"
    assert cli.main(["solve", str(path), "--json", str(cli_path)]) == 0
    reference = json.loads(cli_path.read_text())
    assert ours["status"] == reference["status"]
    assert ours["solverSummaries"] == [{"endReason": 1 if ours["status"] == "OPTIMAL" else 2}]
    final = [g["value"] for g in ours["finalGlobalObjective"]["goals"]]
    expected = [g["value"] for g in reference["finalGlobalObjective"]["goals"]]
    assert final == pytest.approx(expected, rel=REL, abs=1e-12)
    for bucket, proven in zip(ours["buckets"], reference["buckets"], strict=True):
        assert (bucket["position"], bucket["status"]) == (proven["position"], proven["status"])
        assert bucket["bound"] == pytest.approx(proven["bound"], rel=REL, abs=1e-12)


def small() -> ProblemSolver:
    ps = ProblemSolver("svc", "scope").set_object_name("task").set_container_name("host")
    ps.set_assignment({"h0": ["a", "b", "d"], "h1": ["c"]})
    ps.add_object_dimension("mem", {"a": 1, "b": 2, "c": 3, "d": 4})
    ps.add_container_dimension("mem", {"h0": 10, "h1": 10})
    return ps.add_goal({"balanceSpec": {"scope": "host", "dimension": "mem", "name": "bal"}})


def test_solution_answers_as_rebalancers_dict_and_as_the_result() -> None:
    solution = small().solve()
    assert isinstance(solution, dict)
    assert solution["assignment"] == solution.get("assignment") == {
        "a": "h0", "d": "h0", "b": "h1", "c": "h1"} or solution["assignment"]["b"] == "h1"
    assert solution["initialAssignment"] == {"a": "h0", "b": "h0", "d": "h0", "c": "h1"}
    assert solution.get("no such key", 7) == 7
    assert solution.status == "OPTIMAL" and len(solution.moves) == 1
    (summary,) = solution["movesSummary"]
    (move,) = summary["moves"]
    assert move["srcContainer"] == "h0" and move["dstContainer"] == "h1"
    assert move["object"] == solution.moves["object"][0]
    assert solution["solverSummaries"] == [{"endReason": 1}]
    assert solution["compactAssignment"] == {"objectsPerContainer": {}}
    assert solution["numContainers"] == 2
    json.dumps(solution, default=str)


# the keys of the wheel's solution dict (rebalancer 1.0.4, solve() of any problem) that a port
# may read; the wheel's others (runId, problemProfile, metrics, equivalence sets, spec
# metadata) describe its own run
WHEEL_KEYS = {"assignment", "compactAssignment", "compactAssignmentInitial", "finalConstraint",
              "finalGlobalObjective", "finalObjective", "initialAssignment",
              "initialConstraint", "initialGlobalObjective", "initialObjective",
              "movesSummary", "numContainers", "solverSummaries"}


def test_solution_has_the_wheels_keys() -> None:
    assert WHEEL_KEYS <= set(small().solve())


def test_compact_assignment_names_objects_as_the_wheel() -> None:
    """Counts per class; the wheel names the objects <class>__<k>, reports the counts in
    compactAssignment (zero counts left out) and no per-object assignment."""
    ps = ProblemSolver().set_object_name("task").set_container_name("host")
    ps.set_compact_assignment({"h0": {"a": 4, "b": 1}, "h1": {"c": 1}})
    ps.add_object_dimension("mem", {"a": 1, "b": 2, "c": 3})
    ps.add_container_dimension("mem", {"h0": 10, "h1": 10})
    ps.add_partition("kind", {"big": ["b", "c"], "small": ["a"]})
    ps.add_goal({"balanceSpec": {"scope": "host", "dimension": "mem"}})
    data = ps.to_dict()
    assert data["assignment"] == {"h0": ["a__0", "a__1", "a__2", "a__3", "b__0"], "h1": ["c__0"]}
    assert data["objectDimensions"]["mem"]["a__3"] == 1
    assert data["partitions"]["kind"]["small"] == ["a__0", "a__1", "a__2", "a__3"]
    solution = ps.solve()
    assert solution["assignment"] == {} and solution["initialAssignment"] == {}
    assert solution["compactAssignmentInitial"] == {
        "objectsPerContainer": {"h0": {"a": 4, "b": 1}, "h1": {"c": 1}}}
    # the wheel's value (HiGHS): one move (b, or one a: a tie) leaves LINEAR 0.025
    counts = solution["compactAssignment"]["objectsPerContainer"]
    assert sum(c.get("a", 0) for c in counts.values()) == 4 and counts["h1"]["c"] == 1
    assert solution["finalGlobalObjective"]["goals"][0]["value"] == pytest.approx(0.025)
    (move,) = solution["movesSummary"][0]["moves"]
    assert move["object"] in ("b__0", "a__0", "a__1", "a__2", "a__3")


@pytest.mark.parametrize("compact, field", [
    ({"h0": {"a": -1}}, "set_compact_assignment.h0.a"),
    ({"h0": {"a": 1.5}}, "set_compact_assignment.h0.a"),
    ({"h0": ["a"]}, "set_compact_assignment.h0"),
])
def test_bad_compact_assignment_names_the_field(compact, field) -> None:
    ps = ProblemSolver().set_compact_assignment(compact)
    with pytest.raises(InputError) as error:
        ps.solve()
    assert error.value.path == field


def test_dynamic_dimension_by_partition_is_per_object() -> None:
    """Each object of a group takes its group's value in a scope item: the same scenario as
    the per-object dynamic dimension."""
    def base() -> ProblemSolver:
        ps = ProblemSolver().set_assignment({"h0": ["a", "b"], "h1": ["c"]})
        ps.add_scope("rack", {"h0": "r0", "h1": "r1"})
        ps.add_partition("job", {"web": ["a", "c"], "db": ["b"]})
        ps.add_container_dimension("cpu", {"h0": 4, "h1": 4})
        return ps.add_goal({"balanceSpec": {"scope": "container", "dimension": "cpu"}})
    by_group = base().add_dynamic_object_dimension_by_partition(
        "cpu", "rack", "job", {"r0": {"web": 2, "db": 1}, "r1": {"web": 3}}, 0.5)
    by_object = base().add_dynamic_object_dimension(
        "cpu", "rack", {"r0": {"a": 2, "c": 2, "b": 1}, "r1": {"a": 3, "c": 3}}, 0.5)
    assert by_group.to_dict() == by_object.to_dict()
    assert by_group.solve().final_evaluation.positions == by_object.solve(
    ).final_evaluation.positions
    with pytest.raises(InputError) as error:
        base().add_dynamic_object_dimension_by_partition("cpu", "rack", "team", {}).solve()
    assert error.value.path == "add_dynamic_object_dimension_by_partition(partition_name)"
    with pytest.raises(InputError) as error:
        base().add_dynamic_object_dimension_by_partition("cpu", "rack", "job",
                                                         {"r0": {"ops": 1}}).solve()
    assert error.value.path.endswith("r0.ops")


# what the wheel's set_log_level accepts (rebalancer 1.0.4; an unknown name aborts the
# process with "invalid log level")
WHEEL_LOG_LEVELS = ["ERROR", "INFO", "DBG1", "WARNING", "FATAL", "CRITICAL", "DEBUG", "error",
                    "", "warn", "err", "dbg", "none", "5"]


def test_log_levels_are_folly_levels() -> None:
    for level in WHEEL_LOG_LEVELS:
        assert isinstance(ProblemSolver().set_log_level(level), ProblemSolver)
    for level in ("bogus", "DBG10", 3, None):
        with pytest.raises(InputError) as error:
            ProblemSolver().set_log_level(level)
        assert error.value.path == "set_log_level(level)"


def test_info_log_level_turns_on_the_search_log(capfd) -> None:
    small().set_log_level("INFO").solve()
    assert "CP-SAT" in capfd.readouterr().out
    small().set_log_level("ERROR").solve()
    assert "CP-SAT" not in capfd.readouterr().out


# set_precision as the wheel takes it (rebalancer 1.0.4): each tolerance above machine
# epsilon ("absoluteEpsilon must be bigger than std::numeric_limits<double>::epsilon()")
@pytest.mark.parametrize("tolerances, accepted", [
    ({"absolute": 1e-6, "relative": 1e-6}, True), ({}, True), ({"absolute": 1e-20}, False),
    ({"relative": -1}, False), ({"absolute": 0}, False), ({"absolute": "x"}, False),
])
def test_precision_as_the_wheel_takes_it(tolerances, accepted) -> None:
    if accepted:
        assert isinstance(ProblemSolver().set_precision(tolerances), ProblemSolver)
    else:
        with pytest.raises(InputError) as error:
            ProblemSolver().set_precision(tolerances)
        assert error.value.path.startswith("set_precision")


def test_without_a_solver_the_exact_answer_stands() -> None:
    """No add_solver (the wheel requires one): one exact solve, its answer never undone,
    even where a coarse precision calls its gain noise."""
    solution = small().set_precision({"absolute": 0.5}).solve()
    assert solution.status == "OPTIMAL" and len(solution.moves) == 1
    assert len(solution["movesSummary"]) == 1


def test_precision_decides_what_counts_as_no_better() -> None:
    """The answer (balance 0.1 -> 0 by one move) is undone when the precision calls the
    gain noise: the wheel makes no move either (checked against the wheel below)."""
    def solve(precision: dict) -> dict:
        return small().set_precision(precision).add_solver({"optimalSolverSpec": {}}).solve()
    assert len(solve({})["movesSummary"]) == 1
    undone = solve({"absolute": 0.5})
    assert undone["movesSummary"] == [] and undone.termination == "reverted"
    assert undone.final_evaluation.positions[0] == pytest.approx(0.1)


def test_feasibility_tolerance_and_search_rules_leave_the_optimum() -> None:
    plain = small().solve()
    for call in (lambda ps: ps.set_feasibility_tolerance(1e-6),
                 lambda ps: ps.enable_restrict_moving_object_only_once(),
                 lambda ps: ps.enable_stable_as_much_as_possible(),
                 lambda ps: ps.add_similar_containers([["h0", "h1"]])):
        ps = small()
        assert call(ps) is ps
        solution = ps.solve()
        assert solution.final_evaluation.positions == plain.final_evaluation.positions
        assert len(solution.moves) == len(plain.moves)
    with pytest.raises(InputError) as error:
        ProblemSolver().set_feasibility_tolerance("x")
    assert error.value.path == "set_feasibility_tolerance"
    with pytest.raises(InputError) as error:
        small().add_similar_containers([["h0", "zz"]]).solve()
    assert error.value.path == "add_similar_containers[0][0][1]"


# accepted by the wheel (rebalancer 1.0.4), each returning the ProblemSolver
SWITCHES = [("set_logging_label", ("label",)), ("disable_scuba_logging", ()),
            ("disable_solution_summary", ()), ("enable_profiler", ()), ("publish_metrics", ()),
            ("use_parallelized_new_materializer", ()),
            ("should_use_dynamic_object_ordering", (True,)),
            ("set_manifold_backup_params", ({"uploadPolicy": 2},))]


def test_telemetry_switches_leave_the_optimum() -> None:
    plain = small().solve()
    for name, args in SWITCHES:
        ps = small()
        assert getattr(ps, name)(*args) is ps
        assert ps.solve().final_evaluation.positions == plain.final_evaluation.positions


def test_run_id_is_reported() -> None:
    ps = small()
    assert ps.get_run_id() != small().get_run_id()  # a fresh id each, as the wheel's
    assert ps.set_run_id("abc").get_run_id() == "abc" and ps.solve()["runId"] == "abc"
    with pytest.raises(InputError):
        ps.set_run_id(5)


def test_scope_dimension_on_the_container_scope_is_a_container_dimension() -> None:
    """As in the wheel: the same values as add_container_dimension (a missing container at
    capacity 1, so the capacity goal below is 0.2 + 0.1636...), and a dimension defined
    twice on the container scope is refused ("dimension mem already defined on host")."""
    def base() -> ProblemSolver:
        ps = ProblemSolver().set_object_name("task").set_container_name("host")
        ps.set_assignment({"h0": ["a", "b"], "h1": ["c"]})
        ps.add_object_dimension("mem", {"a": 6, "b": 6, "c": 1})
        return ps.add_goal({"capacitySpec": {"scope": "host", "dimension": "mem"}})
    as_scope = base().add_scope_dimension("mem", "host", {"h0": 10})
    as_container = base().add_container_dimension("mem", {"h0": 10})
    values = [ps.evaluate({"h0": ["a", "b"], "h1": ["c"]}).positions for ps in
              (as_scope, as_container)]
    assert values[0] == values[1]
    assert values[0][0] == pytest.approx(0.3636363636363633, rel=REL)  # the wheel's value
    both = base().add_container_dimension("mem", {"h0": 10}).add_scope_dimension(
        "mem", "host", {"h0": 20})
    with pytest.raises(InputError) as error:
        both.solve()
    assert error.value.path == "scopeDimensions.host.mem"


def test_local_search_spec_runs_the_exact_solve() -> None:
    ps = small().add_solver({"localSearchSolverSpec": {
        "moveTypeList": [{"singleMoveTypeSpec": {}}], "solveTime": 5}})
    solution = ps.solve()
    assert solution.status == "OPTIMAL" and solution["solverSummaries"] == [{"endReason": 1}]
    with pytest.raises(InputError) as error:
        small().add_solver({"optimalSolverSpec": {"solveTime": 1.5}}).solve()
    assert error.value.path == "add_solver[0].optimalSolverSpec.solveTime"
    with pytest.raises(InputError) as error:
        small().solve(local_search="greedy")
    assert error.value.path == "solve(local_search)"


def wheel_code(code: str) -> object:
    """Run ``code`` in the wheel's interpreter; its last printed line, as JSON."""
    done = subprocess.run([PEER, "-c", code], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


WHEEL_SMALL = """
import json, rebalancer
def small():
    ps = rebalancer.ProblemSolver("svc", "scope")
    ps.set_log_level("ERROR")
    ps.set_object_name("task").set_container_name("host")
    ps.set_assignment({"h0": ["a", "b", "d"], "h1": ["c"]})
    ps.add_object_dimension("mem", {"a": 1, "b": 2, "c": 3, "d": 4})
    ps.add_container_dimension("mem", {"h0": 10, "h1": 10})
    ps.add_goal({"balanceSpec": {"scope": "host", "dimension": "mem", "name": "bal"}})
    ps.add_solver({"optimalSolverSpec": {"solverPackage": 2, "solveTime": 10}})
    return ps
"""


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=NO_PEER)
def test_methods_leave_the_wheels_optimum_as_ours() -> None:
    """The wheel's optimal values with each call that tunes its search equal its values
    without, and ours."""
    values = wheel_code(WHEEL_SMALL + f"SWITCHES = {SWITCHES!r}\n" + """
out = []
for call in (lambda ps: ps, lambda ps: ps.set_feasibility_tolerance(1e-6),
             lambda ps: ps.enable_restrict_moving_object_only_once(),
             lambda ps: ps.enable_stable_as_much_as_possible(),
             lambda ps: ps.add_similar_containers([["h0", "h1"]]),
             lambda ps: ps.set_precision({"absolute": 1e-6, "relative": 1e-6}),
             *[lambda ps, name=name, args=args: getattr(ps, name)(*args)
               for name, args in SWITCHES]):
    solution = call(small()).solve()
    out.append([g["value"] for g in solution["finalGlobalObjective"]["goals"]])
print(json.dumps(out))
""")
    ours = [small().solve().final_evaluation.positions[0]]
    for theirs in values:
        assert theirs == pytest.approx(ours, rel=REL, abs=1e-12)
    # a coarse precision: no move (the wheel's own values then count deviations below the
    # absolute tolerance as 0, which the evaluator here does not: docs/api.md)
    undone = wheel_code(WHEEL_SMALL + """
solution = small().set_precision({"absolute": 0.5}).solve()
print(json.dumps([solution["movesSummary"], solution["assignment"]]))
""")
    assert undone == [[], {"a": "h0", "b": "h0", "d": "h0", "c": "h1"}]


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=NO_PEER)
def test_wheel_solution_keys_and_compact_counts_match() -> None:
    theirs = wheel_code(WHEEL_SMALL + """
solution = small().solve()
ps = rebalancer.ProblemSolver("svc", "scope")
ps.set_log_level("ERROR")
ps.set_object_name("task").set_container_name("host")
ps.set_compact_assignment({"h0": {"a": 4, "b": 1}, "h1": {"c": 1}})
ps.add_object_dimension("mem", {"a": 1, "b": 2, "c": 3})
ps.add_container_dimension("mem", {"h0": 10, "h1": 10})
ps.add_goal({"balanceSpec": {"scope": "host", "dimension": "mem", "name": "b"}})
ps.add_solver({"optimalSolverSpec": {"solverPackage": 2, "solveTime": 10}})
compact = ps.solve()
print(json.dumps({"keys": sorted(solution), "summaries": solution["solverSummaries"],
                  "compact": compact["compactAssignment"],
                  "initial": compact["compactAssignmentInitial"],
                  "assignment": compact["assignment"],
                  "value": compact["finalGlobalObjective"]["goals"][0]["value"]}))
""")
    assert WHEEL_KEYS <= set(theirs["keys"])
    assert theirs["summaries"] == [{"endReason": 1}]
    ps = ProblemSolver().set_object_name("task").set_container_name("host")
    ps.set_compact_assignment({"h0": {"a": 4, "b": 1}, "h1": {"c": 1}})
    ps.add_object_dimension("mem", {"a": 1, "b": 2, "c": 3})
    ps.add_container_dimension("mem", {"h0": 10, "h1": 10})
    ps.add_goal({"balanceSpec": {"scope": "host", "dimension": "mem"}})
    ours = ps.solve()
    assert ours["compactAssignmentInitial"] == theirs["initial"]
    assert ours["assignment"] == theirs["assignment"] == {}
    assert ours["finalGlobalObjective"]["goals"][0]["value"] == pytest.approx(theirs["value"],
                                                                               rel=REL)
    assert sum(sum(c.values()) for c in theirs["compact"]["objectsPerContainer"].values()) == 6


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=NO_PEER)
def test_dynamic_dimension_by_partition_agrees_with_the_wheel() -> None:
    theirs = wheel_code("""
import json, rebalancer
ps = rebalancer.ProblemSolver("svc", "scope")
ps.set_log_level("ERROR")
ps.set_object_name("task").set_container_name("host")
ps.set_assignment({"h0": ["a", "b"], "h1": ["c"], "h2": []})
ps.add_scope("rack", {"h0": "r0", "h1": "r1", "h2": "r1"})
ps.add_partition("job", {"web": ["a", "c"], "db": ["b"]})
ps.add_container_dimension("cpu", {"h0": 4, "h1": 4, "h2": 4})
ps.add_dynamic_object_dimension_by_partition("cpu", "rack", "job",
                                             {"r0": {"web": 2, "db": 1}, "r1": {"web": 3}}, 0.5)
ps.add_goal({"balanceSpec": {"scope": "host", "dimension": "cpu", "name": "b"}})
ps.add_solver({"optimalSolverSpec": {"solverPackage": 2, "solveTime": 10}})
solution = ps.solve()
print(json.dumps([solution["initialGlobalObjective"]["goals"][0]["value"],
                  solution["finalGlobalObjective"]["goals"][0]["value"]]))
""")
    ps = ProblemSolver().set_object_name("task").set_container_name("host")
    ps.set_assignment({"h0": ["a", "b"], "h1": ["c"], "h2": []})
    ps.add_scope("rack", {"h0": "r0", "h1": "r1", "h2": "r1"})
    ps.add_partition("job", {"web": ["a", "c"], "db": ["b"]})
    ps.add_container_dimension("cpu", {"h0": 4, "h1": 4, "h2": 4})
    ps.add_dynamic_object_dimension_by_partition("cpu", "rack", "job",
                                                 {"r0": {"web": 2, "db": 1}, "r1": {"web": 3}},
                                                 0.5)
    ps.add_goal({"balanceSpec": {"scope": "host", "dimension": "cpu"}})
    ours = ps.solve()
    assert [ours.initial_evaluation.positions[0], ours.final_evaluation.positions[0]] == \
        pytest.approx(theirs, rel=REL, abs=1e-12)


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=NO_PEER)
def test_wheel_local_search_where_asked() -> None:
    """local_search="wheel" hands a local-search spec to the wheel; its answer is evaluated
    here and its end reason reported."""
    ps = small().add_solver({"localSearchSolverSpec": {
        "moveTypeList": [{"singleMoveTypeSpec": {}}, {"swapMoveTypeSpec": {}}], "solveTime": 2}})
    solution = ps.solve(local_search="wheel")
    assert solution.termination == "local_search"
    (summary,) = solution["solverSummaries"]
    assert summary["endReason"] in END_REASONS
    assert solution.final_evaluation.positions[0] <= solution.initial_evaluation.positions[0]


CALLS = {"compact": {"h0": {"a": 4, "b": 1}, "h1": {"c": 1}},
         "dims": {"a": 1, "b": 2, "c": 3},
         "partition": {"big": ["b", "c"], "small": ["a"]},
         "by_group": {"h0": {"big": 2, "small": 1}},
         "similar": [["h0", "h1"]], "precision": {"absolute": 1e-9}, "level": "INFO",
         "solver": {"optimalSolverSpec": {"solveTime": 2}}}


@settings(max_examples=200, deadline=None, derandomize=True)
@given(mutations=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_binding_calls_solve_or_raise_input_error(mutations: list) -> None:
    calls = mutate(CALLS, mutations)
    try:
        ps = ProblemSolver().set_container_name("host")
        ps.set_compact_assignment(calls.get("compact"))
        ps.add_object_dimension("mem", calls.get("dims"))
        ps.add_partition("kind", calls.get("partition"))
        ps.add_dynamic_object_dimension_by_partition("cpu", "host", "kind",
                                                     calls.get("by_group"))
        ps.add_similar_containers(calls.get("similar"))
        ps.set_precision(calls.get("precision"))
        ps.set_log_level(calls.get("level"))
        ps.add_solver(calls.get("solver"))
        ps.add_goal({"balanceSpec": {"scope": "host", "dimension": "mem"}})
        solution = ps.solve(time_limit=5, log=False)
    except InputError:
        return
    assert solution.final_evaluation.feasible
