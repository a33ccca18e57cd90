"""Partitions whose groups overlap in GroupDiversity, GroupMoveLimit, ExclusiveScopeItems and
CapacityWithGroupPresence (docs/semantics.md#partitions): the example of the semantics page
against the wheel's numbers, the aggregation partitions the wheel refuses, and (with the
wheel) the same values measured live. The random scenarios with overlapping groups are in
each spec's own tests (``overlap=True``)."""

from __future__ import annotations

from typing import Any

import pytest
from spec_checks import PEER, PEER_REASON, value_at, wheel_mismatches

from cpsat_rebalancer import InputError, parse_scenario
from cpsat_rebalancer.peer import PeerError, evaluate_with_wheel

# g = {a, b, c} and k = {a, d, e} share a; q splits them so that f1 = {a} lies in both.
EXAMPLE = {
    "objectName": "task", "containerName": "host",
    "assignment": {"h0": ["a", "b", "d"], "h1": ["c", "e"], "h2": []},
    "objectDimensions": {"cpu": {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}},
    "containerDimensions": {"cpu": {"h0": 10, "h1": 10, "h2": 10}},
    "partitions": {"p": {"g": ["a", "b", "c"], "k": ["a", "d", "e"]},
                   "q": {"f1": ["a"], "f2": ["b", "c"], "f3": ["d", "e"]}},
}


def diversity(**fields: Any) -> dict:
    return {"groupDiversitySpec": {"scope": "host", "partition": "p",
                                   "dimension": "task_count", **fields}}


def move_limit(**fields: Any) -> dict:
    return {"groupMoveLimitSpec": {"partitionName": "p", **fields}}


def exclusive() -> dict:
    """h0 and h1 may not both be used by one group."""
    return {"exclusiveScopeItemsSpec": {
        "scope": "host", "dimension": "task_count", "partitionName": "p",
        "conflictInfoList": [{"scopeItem": "h0", "conflictingScopeItemsWithOverlap": [
            {"conflictingScopeItem": "h1"}]}]}}


def presence(**fields: Any) -> dict:
    """MAX with an ABSOLUTE limit of 0: the value is the sum of the contributions."""
    return {"capacityWithGroupPresenceSpec": {
        "scope": "host", "dimension": "task_count", "partition": "p",
        "scopeItemToLimit": {"type": "ABSOLUTE", "globalLimit": 0}, **fields}}


PER_GROUP = {"intent": "PER_GROUP_AND_SCOPE_ITEM"}

# (spec, role, moves, value): the wheel's goal value or constraint violation (rebalancer
# 1.0.4), each group counting all its members
CASES = [
    (diversity(limit={"globalLimit": 2}), "goal", {}, 2.0),  # h2 two short
    (diversity(limit={"globalLimit": 2}), "goal", {"a": "h2"}, 0.0),  # a brings g and k
    (diversity(bound="MAX", limit={"globalLimit": 1}), "goal", {}, 2.0),
    (diversity(bound="MAX", limit={"globalLimit": 1}), "goal", {"a": "h2"}, 3.0),
    (move_limit(limit={"groupLimits": {"g": 0.25, "k": 0.5}}), "constraint", {"a": "h2"}, 0.75),
    (move_limit(limit={"groupLimits": {"g": 0.5, "k": 0.25}}), "constraint", {"a": "h2"}, 0.75),
    (move_limit(limit={"globalLimit": 1}), "constraint", {"a": "h2", "d": "h2"}, 1.0),
    (exclusive(), "constraint", {}, 2.0),
    (exclusive(), "constraint", {"c": "h2", "d": "h2"}, 1.0),  # k: a on h0, e on h1
    (exclusive(), "constraint", {"c": "h2", "e": "h2"}, 0.0),
    (presence(), "goal", {}, 6.0),  # h0: g 2, k 2; h1: g 1, k 1
    (presence(dimension="cpu"), "goal", {}, 16.0),  # h0: g 3, k 5; h1: g 3, k 5
    (presence(**PER_GROUP), "constraint", {}, 6.0),
    (presence(groupFilter={"type": "GROUP", "itemsWhitelist": ["k"]}), "goal", {}, 3.0),
    (presence(aggregationPartition="q", **PER_GROUP), "goal", {}, 6.0),  # f1 in g and k
    (presence(aggregationPartition="q", **PER_GROUP), "constraint", {"a": "h2"}, 6.0),
]


def scenario(spec: dict, role: str) -> dict:
    if role == "goal":
        return {**EXAMPLE, "goals": [{"spec": spec}]}
    return {**EXAMPLE, "constraints": [{"spec": spec, "policy": "SOFT"}]}


@pytest.mark.parametrize("spec, role, moves, expected", CASES)
def test_each_group_counts_all_its_members(spec: dict, role: str, moves: dict,
                                           expected: float) -> None:
    evaluation = value_at(scenario(spec, role), moves)
    value = (evaluation.goals[0].value if role == "goal"
             else evaluation.constraints[0].violation)
    assert value == pytest.approx(expected, rel=1e-12)


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=PEER_REASON)
@pytest.mark.parametrize("spec, role, moves, expected", CASES)
def test_the_wheel_gives_the_same_values(spec: dict, role: str, moves: dict,
                                         expected: float) -> None:
    data = scenario(spec, role)
    problem = parse_scenario(data).problem
    final = problem.initial.copy()
    for obj, target in moves.items():
        final[problem.object_index[obj]] = problem.container_index[target]
    # the wheel's local search adds a continuous penalty to this constraint's soft term
    local_search_term = role == "constraint" and "capacityWithGroupPresenceSpec" in spec
    assert not wheel_mismatches(data, final, positions=not local_search_term)


@pytest.mark.parametrize("limits", [{"g": 0, "k": 5}, {"g": 5, "k": 0}])
def test_a_zero_limit_in_either_group_fixes_a_shared_object(limits: dict) -> None:
    """The wheel's local search does not move a when g or k may not move at all."""
    data = {**EXAMPLE, "constraints": [{"spec": move_limit(limit={"groupLimits": limits}),
                                        "policy": "HARD"}]}
    parsed = parse_scenario(data)
    fixed = {parsed.problem.objects[o] for o in parsed.model.fixed_objects}
    assert fixed == set(EXAMPLE["partitions"]["p"]["g" if limits["g"] == 0 else "k"])


# aggregation partitions Rebalancer refuses, with the wheel's message
REFUSED = [
    ({"f1": ["a", "b"], "f2": ["c"], "f3": ["d", "e"]},
     "Expect inner group 'f1' to be a subset of outer group 'k'"),
    ({"f2": ["b", "c"], "f3": ["d", "e"]}, "to be part of at least one of the groups"),
    ({"f1": ["a"], "f1b": ["a"], "f2": ["b", "c"], "f3": ["d", "e"]},
     "to be part of at most one of the groups"),
]


def refused(groups: dict) -> dict:
    data = scenario(presence(aggregationPartition="q", **PER_GROUP), "goal")
    return {**data, "partitions": {**EXAMPLE["partitions"], "q": groups}}


@pytest.mark.parametrize("groups, message", REFUSED)
def test_an_aggregation_partition_that_does_not_nest_is_refused(groups: dict,
                                                                message: str) -> None:
    with pytest.raises(InputError) as info:
        parse_scenario(refused(groups))
    assert info.value.path == "goals[0].spec.capacityWithGroupPresenceSpec.aggregationPartition"


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=PEER_REASON)
@pytest.mark.parametrize("groups, message", REFUSED)
def test_the_wheel_refuses_them_too(groups: dict, message: str) -> None:
    with pytest.raises(PeerError, match=message):
        evaluate_with_wheel(refused(groups), peer_python=PEER)


def test_only_the_kept_main_groups_must_nest() -> None:
    """With k filtered out, f1 = {a, b} (not inside k) is accepted, as by the wheel: g's
    groups are f1 (2 on h0) and f2 (1 on h1): 3."""
    data = refused({"f1": ["a", "b"], "f2": ["c"], "f3": ["d", "e"]})
    data["goals"][0]["spec"]["capacityWithGroupPresenceSpec"]["groupFilter"] = {
        "type": "GROUP", "itemsBlacklist": ["k"]}
    assert value_at(data).goals[0].value == 3.0
