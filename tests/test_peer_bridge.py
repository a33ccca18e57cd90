"""The wheel bridge against hand-computed values of the semantics reference.

These tests run Meta's rebalancer wheel in a separate Python 3.12 interpreter; they are
skipped when none is installed (see PeerUnavailable's message for the set-up commands).
"""

from __future__ import annotations

import pytest

from cpsat_rebalancer.peer import (
    PeerError,
    PeerUnavailable,
    bridge,
    evaluate_with_wheel,
    find_peer_python,
    require_peer_python,
    to_wheel_spec,
)

if find_peer_python() is None:
    pytest.skip(
        "no peer Python with rebalancer==1.0.4 (set CPSAT_REBALANCER_PEER_PYTHON or run "
        "python3.12 -m venv ~/.cache/cpsat-rebalancer/peer-venv && "
        "~/.cache/cpsat-rebalancer/peer-venv/bin/pip install rebalancer==1.0.4)",
        allow_module_level=True,
    )
BOGUS = "/nonexistent/cpsat-rebalancer/python"


def values(side: dict, kind: str) -> list[float]:
    return [entry["value"] for entry in side[kind]]


def three_hosts(goals: list[dict], constraints: list[dict] | None = None) -> dict:
    """3 hosts of cpu capacity 10 with relative utils 0.1, 0.6, 0.8."""
    return {
        "objectName": "task",
        "containerName": "host",
        "assignment": {"h0": ["a"], "h1": ["b"], "h2": ["c"]},
        "objectDimensions": {"cpu": {"a": 1, "b": 6, "c": 8.0}},
        "containerDimensions": {"cpu": {"h0": 10, "h1": 10, "h2": 10}},
        "goals": goals,
        "constraints": constraints or [],
    }


def balance(formula: str | int) -> dict:
    return {"spec": {"balanceSpec": {"scope": "host", "dimension": "cpu", "formula": formula}}}


def test_balance_formulas_unweighted_values_and_positions() -> None:
    formulas = ["LINEAR", 2, "MAX", "IDEAL", "RELATIVE_UTIL_VARIANCE"]
    goals: list[dict] = []
    for formula in formulas:  # one position each, weight 2
        goals += [{**balance(formula), "weight": 2.0}, {"boundary": True}]
    result = evaluate_with_wheel(three_hosts(goals[:-1]))
    expected = [0.4 / 3, 0.1398111177, 0.3, 1.01, 0.1 - 0.16 / 3]
    assert values(result["initial"], "goals") == pytest.approx(expected, rel=1e-9)
    positions = result["initial"]["positions"]
    assert list(positions) == ["0", "1", "2", "3", "4"]
    assert list(positions.values()) == pytest.approx([2 * v for v in expected], rel=1e-9)
    assert [g["name"] for g in result["initial"]["goals"]] == [f"goal{i}" for i in range(5)]
    assert result["final"] == result["initial"]
    assert result["seconds"] > 0


def test_weight_zero_goal_still_reports_its_value() -> None:
    result = evaluate_with_wheel(three_hosts([{**balance("MAX"), "weight": 0}]))
    assert values(result["initial"], "goals") == pytest.approx([0.3])
    assert result["initial"]["positions"] == {"0": 0.0}


def test_capacity_constraint_violation_and_default_soft_term() -> None:
    scenario = {
        "containerName": "host",
        "assignment": {"h0": ["a"], "h1": ["b"], "h2": []},
        "objectDimensions": {"cpu": {"a": 9, "b": 5}},
        "containerDimensions": {"cpu": {"h0": 6, "h1": 10, "h2": 10}},
        "constraints": [{"spec": {"capacitySpec": {"name": "cap", "scope": "host",
                                                    "dimension": "cpu"}}}],
    }
    result = evaluate_with_wheel(scenario, {"h0": [], "h1": ["b"], "h2": ["a"]})
    violation = 3 / (26 / 3)
    initial = result["initial"]
    assert initial["constraints"] == [{"index": 0, "name": "cap", "value": pytest.approx(
        violation), "method": "local_search"}]
    assert initial["positions"]["0"] == pytest.approx(10000 + 100 * violation)
    assert values(result["final"], "constraints") == [0.0]
    assert result["final"]["positions"] == {"0": 0.0}


def test_minimize_movement_on_final_assignment() -> None:
    scenario = {
        "objectName": "task",
        "containerName": "host",
        "assignment": {"h0": ["t", "u"], "h1": [], "h2": ["v"], "h3": []},
        "objectDimensions": {"cpu": {"t": 6, "u": 1, "v": 2}},
        "containerDimensions": {"cpu": dict.fromkeys(["h0", "h1", "h2", "h3"], 10)},
        "goals": [{"spec": {"minimizeMovementSpec": {"dimension": "cpu"}}, "weight": 3}],
        "constraints": [{"spec": {"minimizeMovementSpec": {"dimension": "cpu",
                                                           "doNotNormalize": True}},
                         "policy": "SOFT", "invalidCost": 1, "invalidState": 0,
                         "tuplePosIfBroken": 1}],
    }
    result = evaluate_with_wheel(scenario, {"h0": ["u"], "h1": [], "h2": ["v"], "h3": ["t"]})
    assert values(result["initial"], "goals") == [0.0]
    assert values(result["final"], "goals") == pytest.approx([1.5e-4])
    assert values(result["final"], "constraints") == pytest.approx([6.0])
    assert result["final"]["positions"] == pytest.approx({"0": 4.5e-4, "1": 6.0})


def test_to_free_occupied_containers_uses_the_mip_flavour() -> None:
    scenario = {
        "assignment": {"h0": ["a", "b"], "h1": ["c"], "h2": ["d"]},
        "goals": [{"spec": {"toFreeSpec": {"containers": ["h1", "h2"],
                                           "formula": "MINIMIZE_OCCUPIED_CONTAINERS"}},
                   "weight": 2}],
    }
    result = evaluate_with_wheel(scenario, {"h0": ["a", "b", "c"], "h1": [], "h2": ["d"]})
    assert result["initial"]["goals"][0]["method"] == "mip"
    assert values(result["initial"], "goals") == [2.0]  # local search would say 2.075
    assert result["initial"]["positions"] == pytest.approx({"0": 4.0})
    assert values(result["final"], "goals") == [1.0]
    assert result["final"]["positions"] == pytest.approx({"0": 2.0})


def test_final_assignment_changes_values_as_expected() -> None:
    goals = [balance("MAX"), {"spec": {"utilIncreaseCostSpec": {"scope": "host",
                                                                "dimension": "cpu"}}}]
    hard = {"spec": {"capacitySpec": {"scope": "host", "dimension": "cpu",
                                      "limit": {"type": "ABSOLUTE", "globalLimit": 8.5}}},
            "policy": "HARD"}
    # c (cpu 8) from h2 to h0: utils 0.9, 0.6, 0 -> MAX 0.9 - 0.5; h0 util rises 0.1 -> 0.9
    # and exceeds the HARD limit 8.5 by 0.5 (normalized by the mean capacity 10).
    result = evaluate_with_wheel(three_hosts(goals, [hard]),
                                 {"h0": ["a", "c"], "h1": ["b"], "h2": []})
    assert values(result["initial"], "goals") == pytest.approx([0.3, 0.0])
    assert values(result["initial"], "constraints") == [0.0]
    assert values(result["final"], "goals") == pytest.approx([0.4, 0.8 / 3])
    assert values(result["final"], "constraints") == pytest.approx([0.05])
    assert result["final"]["positions"] == pytest.approx({"0": 0.4 + 0.8 / 3})  # HARD: no term


BLOCKING = {
    "objectName": "task",
    "containerName": "host",
    "assignment": {"h0": ["a", "t"], "h1": ["b"], "h2": [], "h3": ["c"]},
    "objectDimensions": {"cpu": {"a": 1, "b": 6, "c": 8, "t": 6}},
    "scopes": {"rack": {"h0": "r0", "h1": "r0", "h2": "r1", "h3": "r1"}},
    "constraints": [
        {"spec": {"avoidMovingSpec": {"objects": ["t", "b"]}}},
        {"spec": {"nonAcceptingSpec": {"scope": "host", "items": ["h1", "h2"]}}},
        {"spec": {"nonAcceptingSpec": {"scope": "rack", "items": ["r1"]}}, "policy": "SOFT"},
        {"spec": {"toFreeSpec": {"containers": ["h2", "h3"], "dimension": "cpu"}}},
    ],
}


def test_blocking_constraints_are_measured_through_substitutes() -> None:
    # t moves h0 -> h2: pinned by the AvoidMovingSpec, into non-accepting h2 / r1 / to-free h2.
    result = evaluate_with_wheel(BLOCKING, {"h0": ["a"], "h1": ["b"], "h2": ["t"], "h3": ["c"]})
    final = result["final"]
    assert values(final, "constraints") == [1.0, 1.0, 1.0, 6 + 8 + 6]  # sum A_c + NEW_c
    assert [c["method"] for c in final["constraints"]] == [  # rack r1 spans 2 hosts: no block
        "substitute:avoidAssignmentsSpec", "substitute:avoidAssignmentsSpec",
        "local_search", "substitute:capacitySpec"]
    assert "positions" not in final and len(final["notes"]) == 3
    assert values(result["initial"], "constraints") == [0.0, 0.0, 0.0, 8.0]


def test_substitutes_agree_with_direct_measurement(monkeypatch) -> None:
    # Nothing here really blocks (r0 spans two hosts, the pinned objects stay, nothing moves
    # into a to-free host), so the wheel measures every constraint directly as well.
    scenario = {**BLOCKING, "constraints": [
        {"spec": {"avoidMovingSpec": {"objects": ["c", "b"]}}},
        {"spec": {"nonAcceptingSpec": {"scope": "rack", "items": ["r0"]}}},
        {"spec": {"toFreeSpec": {"containers": ["h3", "h0"], "dimension": "cpu"}}},
    ]}
    scenario["assignment"] = {"h0": ["a", "t"], "h1": ["b"], "h2": ["u"], "h3": ["c"]}
    final = {"h0": ["t"], "h1": ["b", "u"], "h2": ["a"], "h3": ["c"]}  # u into r0, a out
    monkeypatch.setattr(bridge, "_blocks", lambda sc, c, moves: False)
    direct = evaluate_with_wheel(scenario, final)["final"]
    monkeypatch.setattr(bridge, "_blocks", lambda sc, c, moves: True)
    substituted = evaluate_with_wheel(scenario, final)["final"]
    assert {c["method"] for c in direct["constraints"]} == {"local_search"}
    assert [c["method"] for c in substituted["constraints"]] == [
        "substitute:avoidAssignmentsSpec", "substitute:avoidAssignmentsSpec",
        "substitute:capacitySpec"]
    assert values(direct, "constraints") == [0.0, 1.0, 6 + 8]
    assert values(substituted, "constraints") == pytest.approx(values(direct, "constraints"))


def test_a_blocked_move_without_substitute_fails_loudly(monkeypatch) -> None:
    monkeypatch.setattr(bridge, "_blocks", lambda sc, c, moves: False)
    with pytest.raises(PeerError, match="did not realise the final assignment"):
        evaluate_with_wheel(BLOCKING, {"h0": ["a"], "h1": ["b"], "h2": ["t"], "h3": ["c"]})


def test_to_wheel_spec_converts_enums_and_fills_the_name() -> None:
    spec = {"capacitySpec": {"definition": "DURING", "bound": 2, "dimension": "cpu",
                             "limit": {"type": "ABSOLUTE", "globalLimit": 3},
                             "filter": {"type": "SCOPE_ITEM", "itemsWhitelist": ["h0"]}}}
    assert to_wheel_spec(spec, "constraint0") == {"capacitySpec": {
        "definition": 3, "bound": 2, "dimension": "cpu",
        "limit": {"type": 1, "globalLimit": 3},
        "filter": {"type": 1, "itemsWhitelist": ["h0"]}, "name": "constraint0"}}
    assert to_wheel_spec({"balanceSpec": {"name": "b", "formula": "squares"}}, "x") == {
        "balanceSpec": {"name": "b", "formula": 2}}
    assert spec["capacitySpec"]["definition"] == "DURING"  # the input is not modified


def test_peer_unavailable_says_how_to_install(monkeypatch) -> None:
    assert find_peer_python(BOGUS) is None
    with pytest.raises(PeerUnavailable) as info:
        require_peer_python(BOGUS)
    message = str(info.value)
    assert "pip install rebalancer==1.0.4" in message
    assert "CPSAT_REBALANCER_PEER_PYTHON" in message and BOGUS in message
    monkeypatch.setenv("CPSAT_REBALANCER_PEER_PYTHON", BOGUS)
    assert find_peer_python() is None
    with pytest.raises(PeerUnavailable):
        evaluate_with_wheel(three_hosts([]))
