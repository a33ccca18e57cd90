"""The bundled seed scenarios, through the API and through the CLI as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cpsat_rebalancer import load_scenario, solve_scenario

SCENARIOS = Path(__file__).parents[1] / "scenarios"


def solve(name: str, exact: bool = True):
    result = solve_scenario(load_scenario(SCENARIOS / f"{name}.json"))
    if exact:
        assert result.status == "OPTIMAL"
    return result


def test_balance_memory_leaves_two_and_two() -> None:
    result = solve("seed_balance_memory")
    assert sorted(len(v) for v in result.assignment.values()) == [2, 2]
    assert result.final_evaluation.goals[0].value == 0.0  # LINEAR balance after
    assert len(result.moves) == 1  # and no more moves than needed


def test_drain_lands_task0_on_host1() -> None:
    result = solve("seed_drain_util_increase")
    assert result.assignment["host0"] == []
    assert "task0" in result.assignment["host1"]
    assert result.objective[0] == 0.0


def test_below_bound_any_split_costs_nothing() -> None:
    result = solve("seed_uic_below_bound")
    assert result.assignment["host0"] == []
    assert len(result.assignment["host1"]) + len(result.assignment["host2"]) == 10
    assert result.objective[0] == 0.0


def test_large_capacity_bias_sends_everything_to_host1() -> None:
    """host1's capacity is 10^6 times the others': its penalties are 10^-9 where the others'
    reach 10^-2, too far apart for one integer objective to prove the optimum to relative
    1e-9, so the answer is marked approximated, with a bound that holds."""
    result = solve("seed_uic_large_capacity_bias", exact=False)
    assert len(result.assignment["host1"]) == 10
    report = result.buckets[0]
    assert result.status == "OPTIMAL" or result.termination == "approximated"
    assert report.bound <= report.objective


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cpsat_rebalancer.cli", *args],
                          capture_output=True, text=True, timeout=120)


def test_cli_solve_prints_buckets_moves_and_values_and_writes_json(tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    done = run_cli("solve", str(SCENARIOS / "seed_balance_memory.json"), "--json", str(out),
                   "--workers", "1", "--seed", "3")
    assert done.returncode == 0, done.stderr
    assert "Status: OPTIMAL" in done.stdout
    assert "Moves: 1" in done.stdout
    assert "balance_memory" in done.stdout and "memory_capacity" in done.stdout
    data = json.loads(out.read_text())
    assert {"assignment", "initialObjective", "finalObjective"} <= set(data)
    assert data["finalObjective"]["value"] == 0.0
    assert data["finalObjective"]["objs"][0] == {"name": "balance_memory", "weight": 1.0,
                                                 "value": 0.0}
    assert data["initialObjective"]["value"] == pytest.approx(10050.25)  # capacity broken
    assert sorted(data["assignment"]) == ["task0", "task1", "task2", "task3"]

    # the result file is itself an assignment `evaluate` accepts
    done = run_cli("evaluate", str(SCENARIOS / "seed_balance_memory.json"),
                   "--assignment", str(out))
    assert done.returncode == 0, done.stderr
    assert "0 moves" not in done.stdout and "feasible" in done.stdout


def test_cli_evaluate_scores_a_given_assignment(tmp_path: Path) -> None:
    assignment = tmp_path / "a.json"
    assignment.write_text(json.dumps({"host0": ["task0"], "host1": ["task1", "task2", "task3"]}))
    out = tmp_path / "values.json"
    done = run_cli("evaluate", str(SCENARIOS / "seed_balance_memory.json"), "--assignment",
                   str(assignment), "--json", str(out))
    assert done.returncode == 0, done.stderr
    values = json.loads(out.read_text())
    # host1 at 30/20: LINEAR balance (1.5 - 1)/2 = 0.25, and the capacity now breaks on host1
    balance = values["finalGlobalObjective"]["goals"][0]["objs"][0]
    assert balance["value"] == pytest.approx(0.25)
    assert values["feasible"] is False


@pytest.mark.parametrize("content, fragment", [
    ('{"assignment": {"h": ["a"]}, "goals": [{"spec": {"balanceSpec": {"dimension": "cpu"}}}]}',
     "goals[0].spec.balanceSpec.dimension: unknown dimension"),
    ('{"assignment": {"h": ["a", "a"]}}', "assignment.h[1]: object listed twice"),
    ('{"assignment": {"h": ["a"]},\n "goals": [}', ":2:"),
])
def test_cli_bad_input_is_one_line_and_exit_code_2(tmp_path: Path, content: str,
                                                   fragment: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    done = run_cli("solve", str(path))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert fragment in done.stderr


def test_cli_model_file_replaces_the_scenarios_goals(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    done = run_cli("solve", str(SCENARIOS / "seed_uic_below_bound.json"), "--model",
                   str(SCENARIOS.parent / "models" / "balance_cpu_few_moves.json"),
                   "--json", str(out))
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    names = [obj["name"] for obj in data["finalGlobalObjective"]["goals"][0]["objs"]]
    assert names == ["balance_cpu"]
    # ten unit tasks on three hosts of 100, average 1/30: the best is 4-3-3, LINEAR
    # (0.04 - 1/30)/3, reached by moving 6 tasks off host0
    assert data["finalObjective"]["value"] == pytest.approx((0.04 - 1 / 30) / 3)
    assert len(data["moves"]) == 6
