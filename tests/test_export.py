"""``export --to rebalancer-python``: the script makes exactly the binding calls the peer
runner makes for the same scenario (checked against a recording stand-in for the wheel, so
this runs everywhere), and with the real wheel it reproduces Rebalancer's numbers."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
from randomized import random_scenario
from wheel_stand_in import Recorder

from cpsat_rebalancer import cli, evaluate, parse_scenario, solve_scenario
from cpsat_rebalancer.peer import export_rebalancer_python, find_peer_python
from cpsat_rebalancer.peer.bridge import normalise_scenario, scenario_run
from cpsat_rebalancer.peer.solve import solver_spec
from cpsat_rebalancer.peer.wheel_runner import solve_run

SCENARIOS = Path(__file__).parents[1] / "scenarios"
SEEDS = sorted(SCENARIOS.glob("seed_*.json"))
NO_PEER = "no Python 3.12 interpreter with the rebalancer wheel (set CPSAT_REBALANCER_PEER_PYTHON)"


def rich_scenario() -> dict:
    """Every part of a scenario the exporter writes: defaults, scopes, scope dimensions,
    partitions, a vector dimension, a global policy and default parameters, weights,
    positions, boundaries."""
    data = random_scenario(3)
    data["containerDimensions"]["net"] = {"h0": 4, "h1": 6}
    data.update({
        "objectDimensionDefaults": {"cpu": 0.5, "net": 1},
        "objectDimensionVectors": {"net": {"t0": [1, 2], "t1": [3, 0]}},
        "containerDimensionDefaults": {"mem": 4},
        "scopes": {"rack": {"h0": "r0", "h1": "r1"}},
        "scopeDimensions": {"rack": {"cpu": {"r0": 9, "r1": 12}}},
        "partitions": {"service": {"web": ["t0"], "db": ["t1"]}},
        "constraintPolicy": "SOFT",
        "defaultConstraintParams": {"invalidCost": 7, "invalidState": 70,
                                    "tuplePosIfBroken": 1},
        "goals": [{"spec": {"balanceSpec": {"scope": "rack", "dimension": "cpu",
                                            "formula": "SQUARES", "definition": "DURING"}},
                   "weight": 2},
                  {"boundary": True},
                  {"spec": {"minimizeMovementSpec": {"name": "moves"}}, "tuplePos": 3},
                  {"spec": {"capacitySpec": {"scope": "host", "dimension": "net"}}}],
        "constraints": [{"spec": {"capacitySpec": {"scope": "host", "dimension": "mem",
                                                   "bound": "MIN", "zeroAllowed": True}},
                         "policy": "HARD", "invalidCost": 1},
                        {"spec": {"avoidMovingSpec": {"objects": ["t0"]}}}],
    })
    parse_scenario(data)  # a valid scenario
    return data


@pytest.fixture
def fake_wheel(monkeypatch):
    module = types.ModuleType("rebalancer")
    module.ProblemSolver = Recorder
    monkeypatch.setitem(sys.modules, "rebalancer", module)
    Recorder.calls = []
    return Recorder


def recorded_calls(run_code, fake) -> list:
    fake.calls = []
    run_code()
    return [(m, a, k) for m, a, k in fake.calls if m != "__init__"]


@pytest.mark.parametrize("case", ["rich", *range(8), *[p.stem for p in SEEDS]])
@pytest.mark.parametrize("solver", ["local-search", "optimal-highs"])
def test_script_makes_the_runner_calls(case, solver, fake_wheel, monkeypatch, capsys) -> None:
    if case == "rich":
        data = rich_scenario()
    elif isinstance(case, int):
        data = random_scenario(case)
    else:
        data = json.loads((SCENARIOS / f"{case}.json").read_text())
    text = export_rebalancer_python(data, solver=solver, time_limit=7.5)
    run = scenario_run(normalise_scenario(data), solver_spec(solver, 7.5), tagged=False)
    expected = recorded_calls(lambda: solve_run(run), fake_wheel)
    monkeypatch.setattr(sys, "argv", ["script.py"])
    got = recorded_calls(lambda: exec(compile(text, "script.py", "exec"),
                                      {"__name__": "__main__"}), fake_wheel)
    assert got == expected
    assert got[-1] == ("solve", (), {}) and got[-2][0] == "add_solver"
    assert got[-2][1][0] == solver_spec(solver, 7.5)
    out = capsys.readouterr().out
    assert "0: 1.0 -> 0.5" in out and "Moves: 0" in out


def test_script_writes_enum_integers_and_names(fake_wheel) -> None:
    text = export_rebalancer_python(rich_scenario(), solver="local-search",
                                    move_types=["single", "tripleLoop"], seed=3)
    assert "'formula': 2" in text and "'definition': 2" in text  # SQUARES, DURING
    assert "solver.add_constraint(  # HARD\n" in text and "    policy=2,\n" in text
    assert "solver.set_constraint_policy(3)  # SOFT" in text
    assert "'name': 'goal0'" in text and "'name': 'moves'" in text
    assert "solver.add_object_dimension_vector('net', {'t0': [1, 2], 't1': [3, 0]}, " \
        "default_value=1)" in text
    assert "{'tripleLoopMoveTypeSpec': {}}" in text and "'randomSeed': 3" in text
    compile(text, "x.py", "exec")


def test_cli_export(tmp_path, capsys) -> None:
    out = tmp_path / "case.py"
    code = cli.main(["export", str(SEEDS[0]), "--to", "rebalancer-python", str(out),
                     "--solver", "optimal-highs", "--time-limit", "30"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    text = out.read_text()
    assert text.startswith("#!/usr/bin/env python3")
    assert "'solverPackage': 2" in text and "'solveTime': 30" in text
    assert f"Wrote {out}" in captured.out
    compile(text, str(out), "exec")


def test_cli_export_rejects_bad_input(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"assignment": {"h": ["a"]},
                               "goals": [{"spec": {"balanceSpec": {"formula": "CUBES"}}}]}))
    out = tmp_path / "never.py"
    code = cli.main(["export", str(bad), "--to", "rebalancer-python", str(out)])
    assert code == 2 and "goals[0].spec.balanceSpec" in capsys.readouterr().err
    assert not out.exists()
    with pytest.raises(SystemExit):
        cli.main(["export", str(SEEDS[0]), "--to", "gurobi", str(out)])


@pytest.mark.peer
@pytest.mark.skipif(find_peer_python() is None, reason=NO_PEER)
@pytest.mark.parametrize("path", SEEDS, ids=[p.stem for p in SEEDS])
def test_exported_script_reproduces_the_optimum_in_rebalancer(path, tmp_path) -> None:
    """Run the script with the real wheel (HiGHS): its initial values are our evaluator's,
    and its final values our proven optimum (both solvers are exact here)."""
    data = json.loads(path.read_text())
    script = tmp_path / "case.py"
    script.write_text(export_rebalancer_python(data, solver="optimal-highs", time_limit=30))
    solution_path = tmp_path / "solution.json"
    done = subprocess.run([find_peer_python(), str(script), str(solution_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Objective per tuple position" in done.stdout
    solution = json.loads(solution_path.read_text())
    scenario = parse_scenario(data)
    ours = solve_scenario(scenario)
    initial = evaluate(scenario.problem, scenario.model, scenario.problem.initial)
    wheel_initial = [g["value"] for g in solution["initialGlobalObjective"]["goals"]]
    wheel_final = [g["value"] for g in solution["finalGlobalObjective"]["goals"]]
    assert wheel_initial == pytest.approx([initial.positions.get(p, 0.0)
                                           for p in range(len(wheel_initial))], rel=1e-9)
    assert wheel_final == pytest.approx([ours.final_evaluation.positions.get(p, 0.0)
                                         for p in range(len(wheel_final))], rel=1e-9, abs=1e-9)
