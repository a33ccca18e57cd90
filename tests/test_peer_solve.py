"""Rebalancer as a peer solver: solver specs, its answers on known optima, and soundness —
neither its local search nor its HiGHS solver ever beats our proven optimum, and every
heuristic assignment our evaluator calls feasible, the wheel does too.

Tests that run the wheel are skipped (with the reason) when no Python 3.12 interpreter with
``rebalancer`` is found; the rest run everywhere.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from randomized import random_scenario

from cpsat_rebalancer import InputError, evaluate, parse_scenario
from cpsat_rebalancer.compare import compare
from cpsat_rebalancer.generators import balance_instance
from cpsat_rebalancer.heuristics import BUILT_IN, HeuristicOptions
from cpsat_rebalancer.peer import (
    PeerError,
    PeerUnavailable,
    evaluate_with_wheel,
    find_peer_python,
    move_type_specs,
    solve_with_wheel,
    solver_spec,
)
from cpsat_rebalancer.scenario import SolverOptions

PEER = find_peer_python()
NO_PEER = ("no Python 3.12 interpreter with the rebalancer wheel (set "
           "CPSAT_REBALANCER_PEER_PYTHON, or: python3.12 -m venv "
           "~/.cache/cpsat-rebalancer/peer-venv && ~/.cache/cpsat-rebalancer/peer-venv/bin/pip "
           "install rebalancer==1.0.4)")


def needs_peer(test):
    return pytest.mark.peer(pytest.mark.skipif(PEER is None, reason=NO_PEER)(test))
SEED = Path(__file__).parents[1] / "scenarios" / "seed_balance_memory.json"
REL = 1e-9
NOISE = 2.0**-46  # two double computations of a value near 1 may differ by this much


def close(a: float, b: float) -> bool:
    return abs(a - b) <= REL * max(abs(a), abs(b)) + NOISE


# --------------------------------------------------------------------------- no wheel needed


def test_move_type_names() -> None:
    assert move_type_specs(None) == [{"singleMoveTypeSpec": {}}, {"swapMoveTypeSpec": {}}]
    assert move_type_specs(["tripleLoop", "klSearchMoveTypeSpec",
                            {"swapMoveTypeSpec": {"greedyOnSrc": True}}]) == [
        {"tripleLoopMoveTypeSpec": {}}, {"klSearchMoveTypeSpec": {}},
        {"swapMoveTypeSpec": {"greedyOnSrc": True}}]
    with pytest.raises(InputError, match="move type"):
        move_type_specs(["single swap"])
    with pytest.raises(InputError, match="at least one"):
        move_type_specs([])


def test_solver_specs() -> None:
    assert solver_spec("local-search", 2.2, ["single"], seed=5) == {"localSearchSolverSpec": {
        "moveTypeList": [{"singleMoveTypeSpec": {}}], "randomSeed": 5, "solveTime": 3}}
    assert solver_spec("optimal-highs", 0.3) == {"optimalSolverSpec": {
        "solverPackage": 2, "suppressLogs": True, "solveTime": 1}}
    assert "solveTime" not in solver_spec("optimal-highs")["optimalSolverSpec"]
    with pytest.raises(InputError, match="local-search, optimal-highs"):
        solver_spec("optimal-xpress")
    with pytest.raises(InputError, match="positive"):
        solver_spec("local-search", 0)


def test_no_peer_says_how_to_set_one_up() -> None:
    with pytest.raises(PeerUnavailable, match="pip install rebalancer==1.0.4"):
        solve_with_wheel(json.loads(SEED.read_text()), peer_python="/nonexistent/python3.12")


# --------------------------------------------------------------------------- with the wheel


@pytest.mark.parametrize("solver", ["local-search", "optimal-highs"])
@needs_peer
def test_seed_scenario_solved_by_rebalancer(solver: str) -> None:
    data = json.loads(SEED.read_text())
    result = solve_with_wheel(data, solver, time_limit=10, peer_python=PEER)
    assert result["moves"] == 1
    assert sorted(len(v) for v in result["assignment"].values()) == [2, 2]
    assert result["positions"] == {"0": 0.0, "1": pytest.approx(0.0005)}
    assert result["initialPositions"]["0"] == pytest.approx(10050.25)
    assert [g["name"] for g in result["goals"]] == ["balance_memory", "few_moves"]
    assert result["constraints"] == [{"index": 0, "name": "memory_capacity", "value": 0.0}]
    assert result["seconds"] >= result["solveSeconds"] > 0
    if solver == "optimal-highs":
        assert result["proven"] and result["endReason"] == "OPTIMAL"
        assert all(g["found"] and g["relative"] == 0 for g in result["gaps"])
    else:
        assert result["endReason"] == "UNABLE_TO_FIND_MORE_MOVES"


@pytest.mark.parametrize("formula", ["LINEAR"])
@needs_peer
def test_highs_proves_what_we_prove(formula: str) -> None:
    """Two exact solvers on the same instance: the same optimum at every position."""
    data = balance_instance(60, 6, formula, seed=1)
    comparison = compare(data, ["rebalancer-optimal-highs"],
                         heuristic_options=HeuristicOptions(time_limit=60, peer_python=PEER))
    (highs,) = comparison.entries
    assert comparison.ours.status == "OPTIMAL"
    assert highs.details["proven"], highs.details
    assert highs.feasible and highs.deciding_position is None, highs.verdict
    # and the wheel's own values for its answer are our evaluator's
    for position, value in highs.details["positions"].items():
        assert close(value, highs.evaluation.positions[int(position)])


def wheel_feasible(data: dict, final, problem) -> tuple[bool, list[str]]:
    """The wheel's view of the hard constraints of ``final``: it measures every constraint's
    violation (Σe⁺), initially and finally; a HARD constraint must end at 0, a DEFAULT one at
    0 when it starts at 0 and no higher than it started otherwise (where a constraint of
    several parts is initially broken this is necessary, not sufficient: the wheel reports
    sums only). Moves the wheel's single moves cannot make (into containers it never accepts
    into, of objects it fixes) are reported as broken too, unless the constraint is SOFT:
    there the move is legal (Rebalancer's optimal solver makes it) and only priced."""
    wheel = evaluate_with_wheel(data, problem.assignment_dict(final), peer_python=PEER)
    scenario = parse_scenario(data)
    broken = []
    for entry, start, end in zip(scenario.model.constraints, wheel["initial"]["constraints"],
                                 wheel["final"]["constraints"]):
        if entry.policy == "HARD" and end["value"] > 1e-9:
            broken.append(entry.spec.name)
        elif entry.policy == "DEFAULT" and end["value"] > max(start["value"], 0.0) + 1e-9:
            broken.append(entry.spec.name)
    for note in wheel["final"].get("notes", []):
        blocking = re.match(r"constraint (\d+) ", note)
        if blocking and scenario.model.constraints[int(blocking[1])].policy == "SOFT":
            continue
        broken.append(note)
    return not broken, broken


def soundness_with_the_wheel(seed: int) -> list[str]:
    data = random_scenario(seed)
    comparison = compare(data, list(BUILT_IN), options=SolverOptions(workers=1),
                         heuristic_options=HeuristicOptions(time_limit=10, peer_python=PEER))
    problems = [f"{e.name}: {e.contradiction}" for e in comparison.entries if e.contradiction]
    for entry in comparison.entries:
        if entry.error:
            continue  # the wheel refuses some models (HiGHS: quadratic, infeasible); reported
        if entry.feasible:
            try:
                ok, broken = wheel_feasible(data, entry.final, comparison.instance.problem)
            except PeerError as exc:  # the wheel cannot evaluate some cases
                # (docs/semantics.md#wheel-quirks)
                if "cannot be larger than last points" in str(exc):
                    continue
                raise
            if not ok:
                problems.append(f"{entry.name}: feasible for us, the wheel finds {broken}")
    return [f"seed {seed}: {p}\nscenario: {json.dumps(data)}" for p in problems]


@pytest.mark.parametrize("seed", range(6))
@needs_peer
def test_rebalancer_never_beats_our_optimum_and_feasibility_agrees(seed: int) -> None:
    problems = soundness_with_the_wheel(seed)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6, 80))
@needs_peer
def test_rebalancer_never_beats_our_optimum_many(seed: int) -> None:
    problems = soundness_with_the_wheel(seed)
    assert not problems, "\n".join(problems)


@needs_peer
def test_wheel_feasibility_check_can_fail() -> None:
    """The check above is not vacuous: an assignment breaking a HARD capacity is caught."""
    data = json.loads(SEED.read_text())
    data["constraints"][0]["policy"] = "HARD"
    data["assignment"] = {"host0": ["task0", "task1"], "host1": ["task2", "task3"]}
    scenario = parse_scenario(data)
    final = scenario.problem.assignment_array(
        {"host0": ["task0", "task1", "task2"], "host1": ["task3"]})
    assert not evaluate(scenario.problem, scenario.model, final).feasible
    ok, broken = wheel_feasible(data, final, scenario.problem)
    assert not ok and broken == ["memory_capacity"]
