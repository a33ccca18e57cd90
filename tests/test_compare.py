"""``compare``: per-bucket values beside the optimum, the deciding position, feasibility,
verdicts, the soundness alarm, and the command line end to end."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from cpsat_rebalancer import cli
from cpsat_rebalancer import compare as compare_module
from cpsat_rebalancer.compare import Entry, compare, compare_evaluation, judge
from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.heuristics import Instance
from cpsat_rebalancer.result import FEASIBLE, OPTIMAL

SCENARIOS = Path(__file__).parents[1] / "scenarios"
SEED = SCENARIOS / "seed_balance_memory.json"


def seed_data() -> dict:
    return json.loads(SEED.read_text())


def index(data: dict, assignment: dict[str, list[str]]) -> np.ndarray:
    return Instance.from_dict(data).problem.assignment_array(assignment)


def test_values_gaps_and_the_deciding_position() -> None:
    data = seed_data()
    comparison = compare(data, ["greedy-balance"], {
        "stay": {"host0": ["task0", "task1", "task2"], "host1": ["task3"]},
        "three moves": {"host0": ["task2", "task3"], "host1": ["task0", "task1"]},
        "crowd": {"host0": ["task0", "task1", "task2", "task3"], "host1": []},
    })
    ours = comparison.ours
    assert ours.status == OPTIMAL
    greedy, stay, three, crowd = comparison.entries
    assert greedy.verdict.startswith("optimal") and greedy.deciding_position is None
    assert [c.order for c in greedy.buckets] == [0, 0]

    # staying: balance 0.25 plus the DEFAULT capacity's soft term (broken from the start, so
    # not a hard violation) vs 0 at position 0 decides; position 1 (0 moves, better than
    # ours) is shown as not comparable
    assert stay.moves == 0 and stay.feasible
    assert stay.deciding_position == 0
    first, second = stay.buckets
    assert (first.value, first.ours, first.abs_gap, first.rel_gap) == (0.25 + 10000 + 100 * 0.5,
                                                                        0.0, first.value, None)
    assert first.deciding and first.order == 1
    assert second.order == -1 and not second.comparable and not second.deciding
    assert stay.verdict == "worse at position 0: 10050.2 vs 0"

    # crowding host0 beyond its initial overload breaks the DEFAULT constraint's hard part
    assert crowd.feasible is False and crowd.broken == ["memory_capacity"]
    assert crowd.verdict.startswith("INFEASIBLE (breaks memory_capacity); worse at position 0")

    # three moves: ties position 0, worse at position 1 (0.0015 vs 0.0005): 1 decides
    assert three.feasible and three.moves == 3
    assert three.deciding_position == 1 and three.buckets[0].order == 0
    assert three.buckets[1].abs_gap == pytest.approx(0.001)
    assert three.buckets[1].rel_gap == pytest.approx(2.0)
    assert three.verdict == "worse at position 1: 0.0015 vs 0.0005 (+200%)"
    assert not comparison.contradictions


def test_an_assignment_better_than_a_proof_is_a_contradiction() -> None:
    data = seed_data()
    instance = Instance.from_dict(data)
    comparison = compare(data)
    evaluation = copy.deepcopy(comparison.ours.final_evaluation)
    evaluation.positions[1] -= 1e-4  # pretend it found less than the proven optimum
    entry = Entry("too good", "assignment", instance.problem.initial, evaluation, moves=1,
                  feasible=True)
    entry.buckets = compare_evaluation(comparison.ours, evaluation)
    judge(entry, comparison.ours)
    assert entry.deciding_position == 1
    assert entry.contradiction and "below the proven optimum" in entry.contradiction
    # the same values from an infeasible assignment are no contradiction
    entry = Entry("cheat", "assignment", instance.problem.initial, evaluation, feasible=False,
                  broken=["memory_capacity"])
    entry.buckets = compare_evaluation(comparison.ours, evaluation)
    judge(entry, comparison.ours)
    assert entry.contradiction is None and entry.verdict.startswith("INFEASIBLE")


def test_against_an_unproven_bucket_the_bound_is_what_counts() -> None:
    data = seed_data()
    comparison = compare(data)
    ours = copy.deepcopy(comparison.ours)
    bucket = ours.buckets[1]
    bucket.status, bucket.bound = FEASIBLE, 0.0004  # as if stopped early
    ours.final_evaluation.positions[1] = 0.0006  # an incumbent worse than the optimum
    optimum = comparison.ours.final_evaluation
    entry = Entry("optimum", "assignment", comparison.ours.final, optimum, feasible=True)
    entry.buckets = compare_evaluation(ours, optimum)
    judge(entry, ours)
    assert entry.contradiction is None
    assert entry.verdict.startswith("better than our incumbent at position 1")
    bucket.bound = 0.0007  # a "bound" above a feasible value: impossible
    entry.buckets = compare_evaluation(ours, optimum)
    judge(entry, ours)
    assert "below our proven bound" in entry.contradiction


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    code = cli.main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_compare_end_to_end(tmp_path, capsys) -> None:
    given = tmp_path / "crowd.json"
    given.write_text(json.dumps({"task0": "host0", "task1": "host0", "task2": "host0",
                                 "task3": "host0"}))
    out_json = tmp_path / "cmp.json"
    code, out, err = run_cli(["compare", str(SEED), "--heuristic", "first-fit-decreasing",
                              "--heuristic", "greedy-balance", "--assignment", str(given),
                              "--json", str(out_json)], capsys)
    assert code == 0, err
    assert "Ours (CP-SAT, exact): OPTIMAL" in out
    assert "first-fit-decreasing" in out and "greedy-balance" in out and str(given) in out
    assert "worse, decides" in out and "memory_capacity" in out
    payload = json.loads(out_json.read_text())
    assert [e["name"] for e in payload["entries"]] == ["first-fit-decreasing",
                                                         "greedy-balance", str(given)]
    crowd = payload["entries"][2]
    assert crowd["feasible"] is False and crowd["brokenHardConstraints"] == ["memory_capacity"]
    assert crowd["decidingPosition"] == 0 and crowd["moves"] == 1
    assert payload["ours"]["status"] == "OPTIMAL" and payload["contradictions"] == []


def test_cli_compare_exits_1_on_a_soundness_violation(tmp_path, monkeypatch, capsys) -> None:
    real = compare_module.solve_problem

    def wrong_optimum(problem, model, options):  # claims OPTIMAL but keeps the start
        result = real(problem, model, options)
        result.final = problem.initial.copy()
        result.final_evaluation = evaluate(problem, model, result.final)
        return result

    data = seed_data()
    del data["constraints"]  # the initial assignment is feasible then
    monkeypatch.setattr(compare_module, "solve_problem", wrong_optimum)
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps(data))
    code, out, err = run_cli(["compare", str(scenario), "--heuristic", "greedy-balance"],
                             capsys)
    assert code == 1
    assert "SOUNDNESS VIOLATION" in err and "greedy-balance" in err
    assert "CONTRADICTS A PROOF" in out


def test_cli_compare_needs_something_to_compare(capsys) -> None:
    code, _, err = run_cli(["compare", str(SEED)], capsys)
    assert code == 2 and "--heuristic or --assignment" in err


def test_cli_compare_without_a_peer_says_how_to_set_one_up(monkeypatch, capsys) -> None:
    monkeypatch.setenv("CPSAT_REBALANCER_PEER_PYTHON", "/nonexistent/python3.12")
    code, _, err = run_cli(["compare", str(SEED), "--heuristic", "rebalancer-local-search"],
                           capsys)
    assert code == 2
    assert "pip install rebalancer==1.0.4" in err and "CPSAT_REBALANCER_PEER_PYTHON" in err


def test_cli_compare_rejects_a_bad_assignment_file(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"host0": ["task0", "nobody"]}))
    code, _, err = run_cli(["compare", str(SEED), "--assignment", str(bad)], capsys)
    assert code == 2 and "unknown object" in err


def test_cli_compare_plot(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib", reason="--plot needs matplotlib (an optional extra)")
    png = tmp_path / "u.png"
    code, out, err = run_cli(["compare", str(SEED), "--heuristic", "best-fit-decreasing",
                              "--plot", str(png)], capsys)
    assert code == 0, err
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"Wrote {png}" in out


def test_ideal_alone_compares_in_leximin_order() -> None:
    # three hosts of capacity 10, IDEAL alone: compared from the largest utilization down
    data = {
        "containerName": "host", "objectName": "task",
        "assignment": {"h0": ["a", "b", "c"], "h1": [], "h2": []},
        "objectDimensions": {"cpu": {"a": 4, "b": 3, "c": 3}},
        "containerDimensions": {"cpu": {"h0": 10, "h1": 10, "h2": 10}},
        "goals": [{"spec": {"balanceSpec": {"scope": "host", "dimension": "cpu",
                                            "formula": "IDEAL"}}}],
    }
    comparison = compare(data, assignments={
        "spread": {"h0": ["a"], "h1": ["b"], "h2": ["c"]},
        "pair": {"h0": ["a"], "h1": ["b", "c"], "h2": []},
    })
    spread, pair = comparison.entries
    assert comparison.ours.status == OPTIMAL
    assert spread.buckets[0].leximin == [0.4, 0.3, 0.3]
    assert spread.verdict.startswith("optimal")
    assert pair.buckets[0].leximin == [0.6, 0.4, 0.0]
    assert pair.buckets[0].order == 1 and "leximin order, rank 1 of 3: 0.6 vs 0.4" in pair.verdict
