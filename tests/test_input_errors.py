"""Bad input is an InputError naming the field and the problem (on the command line: exit 2
and ``error: <path>: <problem>``), never a traceback from deep inside and never a silently
wrong answer: the reported cases, each through the door it was found at."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from randomized import brute_force

from cpsat_rebalancer import InputError, ProblemSolver, cli, parse_scenario
from cpsat_rebalancer.api import solve_problem
from cpsat_rebalancer.scenario import MAX_DEPTH, SolverOptions, read_data_file

SEED = Path(__file__).parents[1] / "scenarios" / "seed_balance_memory.json"
OPTIONS = SolverOptions(time_limit=5, workers=1)


def seed() -> dict:
    return json.loads(SEED.read_text())


def run_cli(capsys, path: Path) -> tuple[int, str]:
    code = cli.main(["solve", str(path), "--workers", "1", "--time-limit", "5"])
    return code, capsys.readouterr().err


def solve_data(data: dict):
    scenario = parse_scenario(data)
    return solve_problem(scenario.problem, scenario.model, OPTIONS)


def error_of(data: dict) -> InputError:
    with pytest.raises(InputError) as info:
        solve_data(data)
    return info.value


# ---- 1. nesting too deep to recurse through ----------------------------------------------

def test_json_nested_a_thousand_deep_is_exit_2_naming_the_file(tmp_path: Path) -> None:
    """A real process: the reader's RecursionError surfaced as a traceback before."""
    path = tmp_path / "deep.json"
    text = json.dumps(seed())
    path.write_text(text[:-1] + ', "description": ' + "[" * 1000 + "]" * 1000 + "}")
    done = subprocess.run([sys.executable, "-m", "cpsat_rebalancer.cli", "solve", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {path}: nested too deeply (at most {MAX_DEPTH} levels)"


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_nesting_below_the_recursion_limit_names_the_field(tmp_path: Path, capsys,
                                                          suffix: str) -> None:
    data = seed()
    nested: list = []
    for _ in range(MAX_DEPTH + 5):
        nested = [nested]
    data["description"] = nested
    path = tmp_path / f"s{suffix}"
    path.write_text(json.dumps(data))  # JSON is YAML too
    code, err = run_cli(capsys, path)
    assert code == 2
    assert err.strip() == f"error: {path}: description: nested too deeply (at most " \
        f"{MAX_DEPTH} levels)"


def test_yaml_nested_a_thousand_deep_and_self_containing_aliases(tmp_path: Path,
                                                                 capsys) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("assignment: {h0: [a]}\ndescription: " + "[" * 1000 + "]" * 1000 + "\n")
    code, err = run_cli(capsys, deep)
    assert code == 2 and err.startswith(f"error: {deep}: nested too deeply")
    loop = tmp_path / "loop.yaml"
    loop.write_text("assignment: {h0: [a]}\ndescription: &x [*x]\n")
    code, err = run_cli(capsys, loop)
    assert code == 2 and "description: a mapping or list that contains itself" in err


def test_yaml_aliases_shared_many_times_are_read_once(tmp_path: Path) -> None:
    """Nine levels of nine aliases each: 9^9 paths, nine lists; the depth check visits
    each list once (a walk along every path would not finish)."""
    lines = ["l0: &l0 [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    lines += [f"l{k}: &l{k} [" + ", ".join([f"*l{k - 1}"] * 9) + "]" for k in range(1, 9)]
    path = tmp_path / "laughs.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert len(read_data_file(path)["l8"]) == 9


# ---- 2. keys that are not strings --------------------------------------------------------

@pytest.mark.parametrize("yaml_text, message", [
    ("assignment: {h0: [a]}\nobjectDimensions: {cpu: {1: 3}}\n",
     "objectDimensions.cpu.1: object names must be strings (got 1)"),
    ("1: x\nassignment: {h0: [a]}\n", "1: field names must be strings (got 1)"),
    ("assignment: {h0: [a]}\nobjectDimensions: {1: {a: 3}}\n",
     "objectDimensions.1: dimension names must be strings (got 1)"),
    ("assignment: {h0: [a]}\nobjectDimensions: {null: {a: 3}}\n",
     "objectDimensions.None: dimension names must be strings"),
    ("assignment: {1: [a]}\n", "assignment.1: container names must be strings (got 1)"),
    ("assignment: {h0: [a]}\nscopes: {1: {h0: r0}}\n",
     "scopes.1: scope names must be strings (got 1)"),
    ("assignment: {h0: [a]}\nscopes: {rack: {h0: r0}}\nscopeDimensions: {rack: {cpu: {2: 1}}}\n"
     "objectDimensions: {cpu: {a: 1}}\n",
     "scopeDimensions.rack.cpu.2: scope item names must be strings (got 2)"),
    ("assignment: {h0: [a]}\npartitions: {app: {true: [a]}}\n",
     "partitions.app.True: group names must be strings (got True)"),
    ("assignment: {h0: [a]}\ngoals: [{spec: {balanceSpec: {1.5: 2}}}]\n",
     "goals[0].spec.balanceSpec.1.5: field names must be strings (got 1.5)"),
    ("assignment: {h0: [a]}\nconstraints: [{spec: {capacitySpec: {dimension: object_count, "
     "limit: {scopeItemLimits: {2020-01-01: 1}}}}}]\n",
     "constraints[0].spec.capacitySpec.limit.scopeItemLimits.datetime.date(2020, 1, 1): "
     "names must be strings"),
    ("assignment: {h0: [a]}\n? [1, 2]\n: 3\n", "invalid YAML: found unhashable key"),
])
def test_keys_that_name_something_must_be_strings(tmp_path: Path, capsys, yaml_text: str,
                                                  message: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml_text)
    code, err = run_cli(capsys, path)
    assert code == 2, err
    assert err.startswith("error: ") and message in err, err
    assert "Traceback" not in err


# ---- 3. magnitudes the model cannot hold -------------------------------------------------

def test_capacities_of_1e308_are_refused_naming_the_field(tmp_path: Path, capsys) -> None:
    data = seed()
    data["containerDimensions"]["memory"] = {"host0": 1e308, "host1": 1e308}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    code, err = run_cli(capsys, path)
    assert code == 2
    assert err.startswith("error: containerDimensions.memory.host0: too large to model exactly")


def test_sizes_up_to_the_limit_still_solve() -> None:
    data = seed()
    data["objectDimensions"]["memory"] = {f"task{k}": 1e16 for k in range(4)}
    data["containerDimensions"]["memory"] = {"host0": 2e16, "host1": 2e16}
    result = solve_data(data)
    assert result.status == "OPTIMAL" and result.objective[0] == 0.0


@pytest.mark.parametrize("mutate, path", [
    # a utilization far above a tiny capacity, squared by a convex penalty
    (lambda d: d["goals"][0]["spec"]["balanceSpec"].update(formula="SQUARES")
     or d["containerDimensions"]["memory"].update(host0=1e-200),
     "goals[0].spec.balanceSpec"),
    # a bound that overflows a float when raised to Rebalancer's power 1.1
    (lambda d: d["goals"].insert(0, {"spec": {"utilIncreaseCostSpec": {
        "dimension": "memory", "squares": True, "lowerBound": 1e308}}}),
     "goals[0].spec.utilIncreaseCostSpec"),
    # a soft limit's excess spans the limit (a hard one only compares: see below)
    (lambda d: d["constraints"][0]["spec"]["capacitySpec"].update(limit={"globalLimit": 1e30})
     or d["constraints"][0].update(policy="SOFT"), "constraints[0].spec.capacitySpec"),
])
def test_numbers_too_large_for_the_model_name_the_spec(mutate, path: str) -> None:
    data = seed()
    mutate(data)
    error = error_of(data)
    assert error.path == path and "too large to model" in error.problem


def test_a_hard_limit_far_above_every_load_holds_exactly() -> None:
    """A rule only compares: a limit of 1e30 is modelled exactly (it never binds), and the
    optimum is the one without the constraint."""
    data = seed()
    data["constraints"][0]["spec"]["capacitySpec"]["limit"] = {"globalLimit": 1e30}
    limited = solve_data(data)
    data["constraints"] = []
    free = solve_data(data)
    assert limited.status == free.status == "OPTIMAL"
    assert limited.objective == free.objective


# ---- 4. the binding: what a call recorded is validated at solve() ------------------------

def binding() -> ProblemSolver:
    solver = ProblemSolver().set_object_name("task").set_container_name("host")
    solver.set_assignment({"h0": ["t0", "t1"], "h1": ["t2"]})
    solver.add_goal({"balanceSpec": {"dimension": "task_count"}})
    return solver


def test_a_dimension_name_that_is_not_a_string_fails_at_solve_naming_the_field() -> None:
    solver = binding().add_object_dimension(5, {"t0": 1.0})  # recorded as given
    with pytest.raises(InputError) as info:
        solver.solve(workers=1)
    assert str(info.value) == "objectDimensions.5: dimension names must be strings (got 5)"


def test_a_name_that_cannot_be_a_key_fails_at_the_call() -> None:
    with pytest.raises(InputError) as info:
        binding().add_container_dimension(["cpu"], {"h0": 1.0})
    assert info.value.path == "add_container_dimension(dimension_name)"


@pytest.mark.parametrize("values, default, path, problem", [
    ([1.0, 2.0, 3.0], 0.0, "objectDimensions.cpu", "expected a mapping"),
    ({"t0": 1.0}, np.array([1.0]), "objectDimensionDefaults.cpu", "expected a number"),
    ({"t0": 1.0}, "2", "objectDimensionDefaults.cpu", "expected a number"),
])
def test_values_the_binding_cannot_map_are_named_at_solve(values, default, path: str,
                                                          problem: str) -> None:
    solver = binding().add_object_dimension("cpu", values, default_value=default)
    with pytest.raises(InputError) as info:
        solver.solve(workers=1)
    assert info.value.path == path and problem in info.value.problem


def test_the_binding_refuses_self_containing_specs() -> None:
    spec: dict = {"balanceSpec": {"dimension": "task_count"}}
    spec["balanceSpec"]["filter"] = spec
    solver = binding().add_goal(spec)  # recorded (copied, cycle and all)
    with pytest.raises(InputError) as info:
        solver.solve(workers=1)
    assert str(info.value) == "goals: a mapping or list that contains itself"


# ---- 5. numpy scalars and arrays are numbers and lists -----------------------------------

def numpy_binding(numpy: bool) -> ProblemSolver:
    """The same calls with numpy scalars and arrays, or with Python's numbers and lists."""
    integer, real, single = (np.int64, np.float64, np.float32) if numpy else (int, float, float)
    names, flag = (np.array, np.bool_) if numpy else (list, bool)
    solver = ProblemSolver().set_object_name("task").set_container_name("host")
    solver.set_assignment({"h0": names(["t0", "t1", "t2"]), "h1": names([])})
    solver.add_object_dimension("cpu", {"t0": integer(3), "t1": real(2.5), "t2": single(1.5)})
    solver.add_container_dimension("cpu", {"h0": integer(10), "h1": integer(4)},
                                   default_value=real(1.0))
    solver.add_partition("app", {"web": names(["t0", "t1"]), "db": names(["t2"])})
    solver.add_goal({"balanceSpec": {"dimension": "cpu", "upperBound": real(0.5)}},
                    weight=integer(2), tuple_pos=integer(0))
    solver.add_goal({"minimizeMovementSpec": {"doNotNormalize": flag(True)}},
                    tuple_pos=integer(1))
    solver.add_constraint({"capacitySpec": {"dimension": "cpu"}}, policy=integer(2),
                          invalid_cost=integer(5))
    return solver


def test_numpy_scalars_and_arrays_read_as_the_numbers_and_lists_they_hold() -> None:
    plain = numpy_binding(False).solve(workers=1, seed=0)
    numpy = numpy_binding(True).solve(workers=np.int64(1), seed=np.int32(0),
                                      time_limit=np.float64(10))
    assert numpy.status == plain.status == "OPTIMAL"
    assert numpy.objective == plain.objective
    assert (numpy.final == plain.final).all()


def test_numpy_sizes_in_a_scenario_dict() -> None:
    data = seed()
    plain = solve_data(copy.deepcopy(data))
    data["objectDimensions"]["memory"] = {k: np.int64(v) for k, v in
                                          data["objectDimensions"]["memory"].items()}
    data["containerDimensions"]["memory"] = {k: np.float32(v) for k, v in
                                             data["containerDimensions"]["memory"].items()}
    assert solve_data(data).objective == plain.objective


@pytest.mark.parametrize("value, problem", [
    (np.bool_(True), "expected a number"),
    (np.float64(np.nan), "must be finite"),
    (np.int64(-3), "must not be negative"),
    (np.array([1.0]), "expected a number"),
])
def test_numpy_values_that_are_not_usable_numbers(value, problem: str) -> None:
    data = seed()
    data["objectDimensions"]["memory"]["task0"] = value
    with pytest.raises(InputError) as info:
        parse_scenario(data)
    assert info.value.path == "objectDimensions.memory.task0" and problem in info.value.problem


# ---- 6. weights and costs whose weighted terms the model cannot hold ---------------------

@pytest.mark.parametrize("mutate, path", [
    (lambda d: d["goals"][0].update(weight=1e300), "goals[0].weight"),
    (lambda d: d["goals"][2].update(weight=-1e300), "goals[2].weight"),
    (lambda d: d["constraints"][0].update(policy="SOFT", invalidCost=1e300),
     "constraints[0].invalidCost"),
    (lambda d: d["constraints"][0].update(policy="SOFT", invalidState=1e300),
     "constraints[0].invalidState"),
])
def test_huge_weights_and_costs_name_their_field(mutate, path: str) -> None:
    data = seed()
    mutate(data)
    error = error_of(data)
    assert error.path == path
    assert error.problem.startswith("too large to model exactly")


def test_a_tuple_position_whose_sum_passes_64_bits_is_solved_to_its_optimum() -> None:
    """Each weighted goal fits CP-SAT's integers, their sum at one position does not: the
    position is solved all the same, to the optimum enumeration finds (the tasks' sizes 10,
    10, 10 and 11 cannot balance to 0), its bound below it."""
    data = seed()
    data["objectDimensions"]["memory"]["task3"] = 11
    balance = data["goals"][0]
    data["goals"] = [dict(balance, weight=3e18), dict(balance, weight=2.5e18)]
    scenario = parse_scenario(data)
    best = min(evaluation.positions[0] for _, evaluation in brute_force(scenario))
    result = solve_problem(scenario.problem, scenario.model, OPTIONS)
    assert best > 0 and result.status == "OPTIMAL"
    assert result.objective[0] == pytest.approx(best, rel=1e-9)
    assert result.buckets[0].bound <= best


# ---- the same classes of failure elsewhere -----------------------------------------------

@pytest.mark.parametrize("mutate, path, problem", [
    (lambda d: d.update(description=["not", "text"]), "description", "expected a string"),
    (lambda d: d.update(goals={"balanceSpec": {}}), "goals", "expected a list"),
    (lambda d: d["goals"][0]["spec"]["balanceSpec"].update(
        filter={"itemsWhitelist": ["host0", 1]}),
     "goals[0].spec.balanceSpec.filter.itemsWhitelist", "expected a list of names"),
    (lambda d: d["goals"][0]["spec"]["balanceSpec"].update(upperBound=float("nan")),
     "goals[0].spec.balanceSpec.upperBound", "must be finite"),
    (lambda d: d["goals"][0].update(weight=float("inf")), "goals[0].weight", "must be finite"),
    (lambda d: d.update(objectDimensionDefaults={"memory": 2e18}),
     "objectDimensionDefaults.memory", "too large to model exactly"),
    (lambda d: d.update(containerDimensionDefaults={"memory": -1}),
     "containerDimensionDefaults.memory", "must not be negative"),
    (lambda d: d["goals"][2].update(tuplePos=np.float64(1.0)), "goals[2].tuplePos",
     "expected a non-negative integer"),
    (lambda d: d.update(assignment=[["task0"]]), "assignment", "expected a mapping"),
    (lambda d: d["assignment"].update(host1=("task3", 7)), "assignment.host1",
     "expected a list of names"),
    (lambda d: d.update(dynamicObjectDimensions={"disk": {"scope": "rack", "values": {}}}),
     "dynamicObjectDimensions.disk.scope", "unknown scope"),
])
def test_other_malformed_fields_name_themselves(mutate, path: str, problem: str) -> None:
    data = seed()
    mutate(data)
    with pytest.raises(InputError) as info:
        parse_scenario(data)
    assert info.value.path == path and problem in info.value.problem, str(info.value)


def test_error_messages_never_recurse_into_the_value() -> None:
    value: list = []
    for _ in range(100_000):
        value = [value]
    error = InputError("goals", "expected a list", value)
    assert str(error).startswith("goals: expected a list (got [[[[")
    assert len(str(error)) < 120


@pytest.mark.parametrize("study, path, problem", [
    ({1: "x"}, "1", "field names must be strings"),
    ({"base": {"generator": "balance_instance",
               "args": {"objects": 4, "containers": 2, "colour": "red"}}},
     "base.args", "do not fit balance_instance"),
    ({"base": {"generator": "balance_instance",
               "args": {None: 4}}}, "base.args.None", "argument names must be strings"),
    ({"base": "base.json", "grid": {"scale.cpu": [1.0, float("inf")]}}, "grid.scale.cpu[1]",
     "expected a finite number"),
    ({"base": "base.json", "variants": [{2: 1}]}, "variants[0].2",
     "parameter names must be strings"),
    ({"base": "base.json", "searches": [{"parameter": "containers.host.h0",
                                         "feasible": {"atMost": float("nan")}}]},
     "searches[0].feasible.atMost", "must be finite"),
    ({"base": "base\0.json"}, "base", "not a usable file path"),
])
def test_study_files_name_the_field(tmp_path: Path, study: dict, path: str,
                                    problem: str) -> None:
    from cpsat_rebalancer.studies import parse_study

    (tmp_path / "base.json").write_text(SEED.read_text())
    with pytest.raises(InputError) as info:
        parse_study(study, tmp_path / "study.yaml")
    assert info.value.path == path and problem in info.value.problem, str(info.value)


def test_study_integers_may_be_numpy_scalars(tmp_path: Path) -> None:
    from cpsat_rebalancer.studies import parse_study

    (tmp_path / "base.json").write_text(SEED.read_text())
    study = parse_study({"base": "base.json", "searches": [
        {"parameter": "containers.host.host0", "low": np.int64(0), "high": np.int64(3),
         "feasible": {"position": np.int64(0), "atMost": np.float64(1.0)}}]},
        tmp_path / "study.yaml")
    search = study.searches[0]
    assert (search.low, search.high, search.position, search.at_most) == (0, 3, 0, 1.0)
    assert type(search.low) is int and type(search.position) is int
