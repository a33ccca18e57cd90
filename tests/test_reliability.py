"""What the solver says is true: conflicts named, honest statuses under time limits and
interruptions, wrong compilations caught, awkward numbers handled."""

from __future__ import annotations

import gc
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from terminal import ctrl_c_as_in_a_terminal

from cpsat_rebalancer import InputError, InternalError, ProblemSolver, evaluate, parse_scenario
from cpsat_rebalancer.generators import balance_instance
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve.pipeline import solve_model
from cpsat_rebalancer.specs.capacity import CapacitySpec

CATALOG = Path(__file__).parents[1] / "scenarios" / "catalog"


def ten_constraints_three_in_conflict() -> ProblemSolver:
    """Draining h0 while h2 and h3 accept nothing forces all of h0 onto h1, past its cpu."""
    ps = ProblemSolver().set_object_name("task").set_container_name("host")
    hosts = ["h0", "h1", "h2", "h3"]
    ps.set_assignment({"h0": ["t0", "t1", "t2"], "h1": ["t3"], "h2": ["t4"], "h3": []})
    tasks = [f"t{i}" for i in range(5)]
    ps.add_object_dimension("cpu", dict.fromkeys(tasks, 4))
    ps.add_object_dimension("mem", dict.fromkeys(tasks, 1))
    ps.add_container_dimension("cpu", dict.fromkeys(hosts, 8))
    ps.add_container_dimension("mem", dict.fromkeys(hosts, 100))
    ps.add_scope("rack", {"h0": "r0", "h1": "r0", "h2": "r1", "h3": "r1"})
    ps.add_goal({"balanceSpec": {"dimension": "cpu"}})
    hard = {"policy": "HARD"}
    ps.add_constraint({"toFreeSpec": {"name": "drain_h0", "containers": ["h0"]}}, **hard)
    ps.add_constraint({"nonAcceptingSpec": {"name": "closed_h2_h3", "items": ["h2", "h3"]}})
    ps.add_constraint({"capacitySpec": {"name": "cpu_cap", "dimension": "cpu"}}, **hard)
    ps.add_constraint({"capacitySpec": {"name": "mem_cap", "dimension": "mem"}}, **hard)
    ps.add_constraint({"capacitySpec": {"name": "rack_mem", "scope": "rack",
                                        "dimension": "mem", "limit": {
                                            "type": "ABSOLUTE", "globalLimit": 50}}}, **hard)
    ps.add_constraint({"avoidMovingSpec": {"name": "pin_t4", "objects": ["t4"]}})
    ps.add_constraint({"avoidAssignmentsSpec": {"name": "t3_not_h0", "assignments": [
        {"object": "t3", "scopeItems": ["h0"]}]}}, **hard)
    ps.add_constraint({"minimizeMovementSpec": {"name": "few_moves", "doNotNormalize": True,
                                                "allowance": 5}}, **hard)
    ps.add_constraint({"capacitySpec": {"name": "min_mem_h1", "dimension": "mem",
                                        "bound": "MIN", "limit": {"type": "ABSOLUTE",
                                                                  "globalLimit": 0}}}, **hard)
    ps.add_constraint({"toFreeSpec": {"name": "soft_drain_h3", "containers": ["h3"]}},
                      policy="SOFT")
    return ps


def test_conflicting_constraints_are_named() -> None:
    result = ten_constraints_three_in_conflict().solve()
    assert result.status == "INFEASIBLE"
    named = {line.split(":")[0] for line in result.conflict}
    assert named == {"drain_h0", "closed_h2_h3", "cpu_cap"}
    assert any("h1" in line for line in result.conflict if line.startswith("cpu_cap"))
    assert (result.final == result.problem.initial).all()


def test_cli_prints_the_conflict(tmp_path: Path) -> None:
    path = tmp_path / "conflict.json"
    path.write_text(json.dumps(ten_constraints_three_in_conflict().to_dict()))
    done = subprocess.run([sys.executable, "-m", "cpsat_rebalancer.cli", "solve", str(path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3
    assert "cannot all hold" in done.stdout and "drain_h0" in done.stdout


def test_time_limit_never_claims_optimal() -> None:
    scenario = parse_scenario(balance_instance(2000, 100, "SQUARES", seed=1))
    result = solve_model(scenario.problem, scenario.model, SolverOptions(time_limit=0.5))
    assert result.status in ("FEASIBLE", "NO_SOLUTION")
    assert result.termination == "time_limit"
    if result.status == "NO_SOLUTION":
        assert (result.final == scenario.problem.initial).all()
    else:
        assert result.final_evaluation.feasible
    assert any(b.status != "OPTIMAL" for b in result.buckets)


def test_a_wrong_compilation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Drop the capacity constraint from the model: the goal then packs everything on h0,
    past its capacity, and the independent check must refuse the answer."""
    ps = ProblemSolver().set_object_name("task").set_container_name("host")
    ps.set_assignment({"h0": ["t0"], "h1": ["t1", "t2"]})
    ps.add_object_dimension("cpu", {"t0": 5, "t1": 5, "t2": 5})
    ps.add_container_dimension("cpu", {"h0": 10, "h1": 10})
    ps.add_goal({"toFreeSpec": {"containers": ["h1"]}})
    ps.add_constraint({"capacitySpec": {"name": "cpu_cap", "dimension": "cpu"}},
                      policy="HARD")
    assert ps.solve().status == "OPTIMAL"
    monkeypatch.setattr(CapacitySpec, "compile_infos", lambda self, b: [])
    with pytest.raises(InternalError, match="cpu_cap"):
        ps.solve()


def test_sigint_stops_the_search_and_reports_the_best_so_far(tmp_path: Path) -> None:
    scenario = tmp_path / "big.json"
    scenario.write_text(json.dumps(balance_instance(5000, 200, "SQUARES", seed=2)))
    out = tmp_path / "result.json"
    process = subprocess.Popen([sys.executable, "-m", "cpsat_rebalancer.cli", "solve",
                                str(scenario), "--json", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=ctrl_c_as_in_a_terminal)
    time.sleep(8)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert "Interrupted" in stdout
    data = json.loads(out.read_text())
    assert data["termination"] == "interrupted"
    assert data["status"] in ("FEASIBLE", "NO_SOLUTION")


def scaled_scenario(sizes: dict, capacities: dict) -> dict:
    return {
        "assignment": {"h0": list(sizes), "h1": [], "h2": []},
        "objectDimensions": {"d": sizes},
        "containerDimensions": {"d": capacities},
        "goals": [{"spec": {"balanceSpec": {"dimension": "d"}}},
                  {"spec": {"minimizeMovementSpec": {}}, "tuplePos": 1}],
        "constraints": [{"spec": {"capacitySpec": {"dimension": "d"}}, "policy": "HARD"}],
    }


@pytest.mark.parametrize("sizes, capacities", [
    ({"a": 1e-6, "b": 2e-6, "c": 3e-6}, {"h0": 1e-5, "h1": 4e-6, "h2": 4e-6}),
    ({"a": 1e12, "b": 2e12, "c": 3e12}, {"h0": 1e13, "h1": 4e12, "h2": 4e12}),
    ({"a": 0, "b": 0, "c": 1}, {"h0": 1, "h1": 1, "h2": 1}),  # zero-size objects
    ({"a": 1, "b": 2, "c": 3}, {"h0": 10, "h1": 0, "h2": 5}),  # a zero capacity
    ({"a": 0.1, "b": 1 / 3, "c": 2.5}, {"h0": 10, "h1": 3, "h2": 3}),  # 1/3: rounded
])
def test_awkward_numbers_solve_and_state_their_error(sizes: dict, capacities: dict) -> None:
    result = parse_and_solve(scaled_scenario(sizes, capacities))
    assert result.status == "OPTIMAL"
    assert result.final_evaluation.feasible
    assert np.isfinite([b.objective for b in result.buckets]).all()
    decimal = all(abs(v * 1e9 - round(v * 1e9)) < 1e-6 for v in sizes.values())
    assert bool(result.approximation) == (not decimal)  # rounding is stated, only when made


def parse_and_solve(data: dict):
    scenario = parse_scenario(data)
    return solve_model(scenario.problem, scenario.model, SolverOptions(workers=1))


def test_empty_problem_and_empty_containers() -> None:
    empty = parse_and_solve({"assignment": {"h0": [], "h1": []},
                             "goals": [{"spec": {"balanceSpec": {"dimension": "object_count"}}}]})
    assert empty.status == "OPTIMAL" and empty.objective == {0: 0.0}
    nothing = parse_and_solve({"assignment": {}})
    assert nothing.status == "OPTIMAL"


def test_values_too_large_for_64_bit_integers_fail_clearly() -> None:
    data = scaled_scenario({"a": 1e300, "b": 1, "c": 1}, {"h0": 1, "h1": 1, "h2": 1})
    with pytest.raises(InputError, match="too large"):
        parse_and_solve(data)


def test_outputs_are_written_whole_or_not_at_all(tmp_path: Path) -> None:
    from cpsat_rebalancer.cli.common import write_atomically

    target = tmp_path / "out.json"
    target.write_text("old")
    write_atomically(str(target), "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # no temporary file left
    with pytest.raises(OSError):
        write_atomically(str(tmp_path / "missing" / "out.json"), "x")
    assert not (tmp_path / "missing").exists()


def test_the_cli_never_modifies_its_input(tmp_path: Path) -> None:
    source = Path(__file__).parents[1] / "scenarios" / "seed_balance_memory.json"
    scenario = tmp_path / "s.json"
    scenario.write_bytes(source.read_bytes())
    before = (scenario.read_bytes(), scenario.stat().st_mtime_ns)
    done = subprocess.run([sys.executable, "-m", "cpsat_rebalancer.cli", "solve",
                           str(scenario), "--json", str(tmp_path / "r.json")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (scenario.read_bytes(), scenario.stat().st_mtime_ns) == before


@pytest.mark.parametrize("stop", ["out of time", "Ctrl-C"])
def test_a_hint_is_the_answer_when_the_build_stops(stop: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The time runs out (or Ctrl-C comes) while the model is built, before any search: a
    hint that keeps the rules and beats the initial assignment is the answer."""
    from cpsat_rebalancer.errors import OutOfTime
    from cpsat_rebalancer.evaluate import evaluate
    from cpsat_rebalancer.solve import pipeline

    scenario = parse_scenario(balance_instance(60, 6, "LINEAR", seed=4))
    problem, model = scenario.problem, scenario.model
    good = solve_model(problem, model, SolverOptions(time_limit=2)).final
    good_value = evaluate(problem, model, good).tuple()
    assert good_value < evaluate(problem, model, problem.initial).tuple()

    def stopped(*args, **kwargs):
        raise OutOfTime("built too slowly") if stop == "out of time" else KeyboardInterrupt

    monkeypatch.setattr(pipeline, "compile_model", stopped)
    result = solve_model(problem, model, SolverOptions(time_limit=5), hint=good)
    assert result.final_evaluation.tuple() == good_value
    assert list(result.final) == list(good)
    assert result.termination == ("time_limit" if stop == "out of time" else "interrupted")


def test_a_hint_is_where_the_search_starts_and_the_answer_is_never_worse() -> None:
    """A good assignment (from a longer solve) given as hint under a short time limit: the
    answer is at least as good, lexicographically."""
    from cpsat_rebalancer.evaluate import evaluate

    scenario = parse_scenario(balance_instance(300, 20, "LINEAR", seed=4))
    problem, model = scenario.problem, scenario.model
    good = solve_model(problem, model, SolverOptions(time_limit=3)).final
    good_value = evaluate(problem, model, good).tuple()
    hinted = solve_model(problem, model, SolverOptions(time_limit=0.3), hint=good)
    assert hinted.final_evaluation.feasible
    assert hinted.final_evaluation.tuple() <= tuple(v + 1e-9 for v in good_value)


def unreachable_after(run: Callable[[], object]) -> list[str]:
    """The type names of the objects ``run`` left in reference cycles: garbage that only a
    full collection frees, with every array it holds."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        run()
        gc.collect()
        return sorted({type(o).__name__ for o in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.parametrize("source", [*[f"shape {seed}" for seed in range(12)],
                                    *sorted(p.name for p in CATALOG.glob("*.json"))])
def test_an_evaluation_frees_its_memory_when_it_ends(source: str) -> None:
    """A large problem evaluated at every step of a search would otherwise hold each
    step's utilizations until Python's rare full collection: gigabytes at 50,000 objects."""
    data = (random_shape_scenario(60, 8, int(source.split()[1])) if source.startswith("shape")
            else json.loads((CATALOG / source).read_text()))
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    moved = problem.initial.copy()
    moved[0] = (moved[0] + 1) % problem.num_containers
    assert unreachable_after(lambda: evaluate(problem, model, moved)) == []
    assert unreachable_after(lambda: evaluate(problem, model, problem.initial)) == []
