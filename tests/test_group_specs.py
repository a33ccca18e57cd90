"""GroupCountSpec and ColocateGroupsSpec (docs/semantics.md#groupcount, #colocategroups).

Hand-computed values for each option, the solver's optimum against enumeration, compiled
objective against the evaluator, validation errors, and (optional, with the wheel) parity
with Rebalancer's own values.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from randomized import random_scenario
from test_agreement import allowed_random_final
from test_bruteforce import check_against_enumeration
from test_fuzz import mutate, mutation, solve_or_reject

from cpsat_rebalancer import InputError, evaluate, parse_scenario
from cpsat_rebalancer.peer import evaluate_with_wheel, find_peer_python
from cpsat_rebalancer.result import INFEASIBLE, OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve.check import compiled_values
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.pipeline import solve_model

OPTIONS = SolverOptions(workers=1, seed=0)
COST, STATE = 100.0, 10000.0  # default invalidCost / invalidState


def approx(x: float):
    return pytest.approx(x, rel=1e-12, abs=1e-14)


# Hosts h0, h1, h2; group g = {a, b, c}, group k = {d, e}; f is in no group.
# Initially h0: a b d, h1: c e, h2: f.
BASE = {
    "objectName": "task", "containerName": "host",
    "assignment": {"h0": ["a", "b", "d"], "h1": ["c", "e"], "h2": ["f"]},
    "objectDimensions": {"cpu": {"a": 2, "b": 2, "c": 1, "d": 4, "e": 1, "f": 3},
                         "mem": {"a": 0, "b": 1, "c": 0, "d": 1, "e": 1, "f": 1}},
    "containerDimensions": {"cpu": {"h0": 10, "h1": 5, "h2": 8}},
    "partitions": {"p": {"g": ["a", "b", "c"], "k": ["d", "e"]}},
}


def scenario(goals=(), constraints=(), **extra) -> dict:
    return {**BASE, **extra, "goals": [{"spec": s} for s in goals],
            "constraints": list(constraints)}


def value(spec: dict, moves: dict[str, str] | None = None) -> float:
    """The goal value of ``spec`` at BASE's initial assignment with ``moves`` applied."""
    parsed = parse_scenario(scenario([spec]))
    problem = parsed.problem
    final = problem.initial.copy()
    for obj, target in (moves or {}).items():
        final[problem.object_index[obj]] = problem.container_index[target]
    return evaluate(problem, parsed.model, final).goals[0].value


def gc(**fields) -> dict:
    return {"groupCountSpec": {"scope": "host", "partitionName": "p", **fields}}


def cg(**fields) -> dict:
    return {"colocateGroupsSpec": {"scope": "host", "partitionName": "p", **fields}}


# ---------------------------------------------------------------------------------------------
# GroupCountSpec: hand-computed values (g counts h0 2, h1 1, h2 0; k counts h0 1, h1 1, h2 0)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fields, expected", [
    ({}, 1.0),  # MAX, ABSOLUTE limit 1: g has one too many on h0
    ({"squares": True}, (1 / 3) ** 2),  # ((2 - 1) / |g|)²
    ({"bound": "MIN"}, 2.0),  # h2 holds none of g and none of k
    ({"bound": "MIN", "zeroAllowed": True, "limit": {"globalLimit": 2}}, 3.0),  # g@h1, k@h0, k@h1
    ({"bound": "MIN", "zeroAllowed": True, "minimumLimit": 1, "limit": {"globalLimit": 2}}, 0.0),
    ({"bound": "EXACT"}, 3.0),  # MIN: h2 lacks g and k (2); MAX: g on h0 (1)
    ({"bound": "MULTIPLE", "limit": {"globalLimit": 2}}, 3.0),  # g@h1, k@h0, k@h1: 1 short each
    ({"limit": {"type": "RELATIVE", "globalLimit": 0.5}}, 0.5),  # limits 1.5 (g), 1 (k)
    ({"limit": {"groupLimits": {"g": 2}}}, 0.0),
    ({"limit": {"scopeItemLimits": {"h0": 0}}}, 3.0),  # h0 holds 2 of g and 1 of k
    ({"limit": {"scopeItemLimits": {"h0": 0}, "scopeItemToGroupLimits": {"h0": {"k": 5}}}}, 2.0),
    ({"limit": {"isDefaultLimitUnbounded": True, "groupLimits": {"k": 0}}}, 2.0),  # k on h0, h1
    ({"filter": {"itemsBlacklist": ["h0"]}}, 0.0),
    ({"dimension": "cpu", "limit": {"globalLimit": 3}}, 2.0),  # cpu: g 4 on h0, k 4 on h0
    # limits relative to the item's utilization, per (item, group), divided by capacity:
    # h0 (cap 10, util 8): g (4 - 3.2)/10, k (4 - 3.2)/10; h1 (cap 5, util 2): g, k (1 - 0.8)/5
    ({"dimension": "cpu", "limit": {"type": "RELATIVE", "globalLimit": 0.4},
      "limitRelativeTo": "SCOPE_ITEM_UTIL"}, 0.08 + 0.08 + 0.04 + 0.04),
    ({"definition": "STAYED", "limit": {"globalLimit": 0}}, 5.0),  # all five grouped objects stay
])
def test_group_count_values(fields: dict, expected: float) -> None:
    assert value(gc(**fields)) == approx(expected)


def test_group_count_definitions_after_a_move() -> None:
    """a moves h0 -> h2. g on h0: AFTER 1, DURING 1 + 2 - 1 = 2 (a counts where it was and
    where it goes), STAYED 1; on h2: AFTER 1, DURING 1. Stayed overall: b, c, d, e."""
    moves = {"a": "h2"}
    assert value(gc(definition="AFTER"), moves) == approx(0.0)
    assert value(gc(definition="DURING"), moves) == approx(1.0)
    assert value(gc(definition="DURING_AND_AFTER"), moves) == approx(1.0)
    assert value(gc(definition="STAYED", limit={"globalLimit": 0}), moves) == approx(4.0)


def test_group_count_compact_limit_quirk() -> None:
    """Rebalancer's compact form treats a per-item limit equal to the global limit as no
    override, so the group limit applies there: g on h0 is measured against 0, not 1
    (h0: 2 - 0; h1: 1 - 0), while the per-pair form (STAYED here) uses 1 on h0."""
    limit = {"groupLimits": {"g": 0}, "scopeItemLimits": {"h0": 1}}
    assert value(gc(limit=limit)) == approx(3.0)
    assert value(gc(limit=limit, definition="STAYED")) == approx(1.0 + 1.0)


def constraint_eval(spec: dict, policy: str, moves: dict[str, str] | None = None):
    data = scenario([], [{"spec": spec, "policy": policy}])
    parsed = parse_scenario(data)
    problem = parsed.problem
    final = problem.initial.copy()
    for obj, target in (moves or {}).items():
        final[problem.object_index[obj]] = problem.container_index[target]
    return evaluate(problem, parsed.model, final).constraints[0]


def test_group_count_constraint_shapes() -> None:
    """Compact form: one info per item (h0 broken: one step); per-pair form (EXACT's MIN part
    with zeroAllowed): g@h1, k@h0, k@h1 are three broken infos, plus g's excess on h0."""
    soft = constraint_eval(gc(), "SOFT")
    assert soft.violation == approx(1.0)
    assert soft.soft == approx(COST * 1 + STATE * 1)
    pairs = constraint_eval(gc(bound="EXACT", zeroAllowed=True, limit={"globalLimit": 2}), "SOFT")
    # MIN part per pair (limit 2): rectangle is 1 for g@h1, k@h0, k@h1; MAX part: no excess
    assert pairs.violation == approx(3.0)
    assert pairs.soft == approx(COST * 3 + STATE * 3)


def test_group_count_default_policy_keeps_initially_broken_item_no_worse() -> None:
    """DEFAULT: h0 is broken initially (excess 1) and may not get worse; h1 may not break."""
    spec = gc()
    assert constraint_eval(spec, "DEFAULT").hard_excess == approx(0.0)
    assert constraint_eval(spec, "DEFAULT", {"c": "h0"}).hard_excess > 0  # h0 excess 2
    assert constraint_eval(spec, "DEFAULT", {"a": "h1"}).hard_excess > 0  # h1 breaks
    assert constraint_eval(spec, "DEFAULT", {"a": "h2"}).hard_excess == approx(0.0)


# ---------------------------------------------------------------------------------------------
# ColocateGroupsSpec: g spans h0, h1; k spans h0, h1
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fields, expected", [
    ({}, 2.0),  # each group on 2 hosts, limit 1
    ({"bound": "MIN", "limits": {"globalLimit": 3}}, 2.0),  # each on 2 of at least 3
    ({"squares": True, "limits": {"globalLimit": 0}}, 2 * 2 ** 1.1),
    ({"squares": True, "bound": "MIN"}, 0.0),  # inside the bound: 0 (the wheel's NaN)
    ({"scopeItemWeights": {"h1": 0.5}}, 1.0),  # 1 + 0.5 - 1 per group
    ({"groupToWeight": {"g": 3}}, 4.0),
    ({"groupToWeight": {"g": -1}}, 0.0),  # -1·1 + 1·1
    ({"filter": {"itemsWhitelist": ["h0"]}}, 0.0),
    ({"dimension": "mem"}, 1.0),  # g's a, c have mem 0: g is only on h0
    ({"limits": {"groupLimits": {"k": 2}}}, 1.0),
    ({"limits": {"isDefaultLimitUnbounded": True, "groupLimits": {"k": 1}}}, 1.0),
])
def test_colocate_values(fields: dict, expected: float) -> None:
    assert value(cg(**fields)) == approx(expected)


def test_colocate_after_moves() -> None:
    """c joins a and b on h0, e joins d: both groups on one host."""
    assert value(cg(), {"c": "h0", "e": "h0"}) == approx(0.0)
    assert value(cg(), {"c": "h2", "e": "h0"}) == approx(1.0)  # g on h0, h2; k on h0


def test_colocate_constraint_with_negative_group_weight() -> None:
    """Infos W_g·X_g: g's -1·1 holds, k's 1·1 is violated."""
    c = constraint_eval(cg(groupToWeight={"g": -1}), "SOFT")
    assert c.violation == approx(1.0)
    assert c.soft == approx(COST * 1 + STATE * 1)


# ---------------------------------------------------------------------------------------------
# Solving: enumeration, compiled objective, the VMware shape, aggregation
# ---------------------------------------------------------------------------------------------

def test_a_group_weight_scales_the_error_its_squares_state() -> None:
    """ColocateGroups squares a group's weighted spread; with decimal item weights near 1e5
    the power's chords state an error, in the spread's units. The goal is the group's
    weight times it, so the error it states is too (it was stated at weight 1 whatever the
    weight, below what a chord can be off)."""
    def error(weight: float) -> float:
        spec = cg(bound="MAX", limits={"globalLimit": 1}, squares=True,
                  groupToWeight={"g": weight, "k": 0},
                  scopeItemWeights={"h0": 123456.789, "h1": 98765.4321, "h2": 55555.5})
        parsed = parse_scenario(scenario([spec]))
        _, buckets = compile_model(parsed.problem, parsed.model)
        return buckets[0].error

    assert error(1) > 0
    assert error(1000) == pytest.approx(1000 * error(1))


@pytest.mark.parametrize("seed", range(40))
def test_random_group_scenarios_match_enumeration(seed: int) -> None:
    check_against_enumeration(random_scenario(seed, groups=True), seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1000, 1100))
def test_larger_random_group_scenarios_match_enumeration(seed: int) -> None:
    check_against_enumeration(random_scenario(seed, max_objects=7, groups=True), seed)


@pytest.mark.parametrize("seed", range(40))
def test_compiled_group_objective_matches_the_evaluator(seed: int) -> None:
    parsed = parse_scenario(random_scenario(seed, groups=True))
    final = allowed_random_final(parsed, random.Random(seed))
    if final is None:
        pytest.skip("no feasible random assignment for this scenario")
    values, canonical = compiled_values(parsed.problem, parsed.model, final)
    evaluation = evaluate(parsed.problem, parsed.model, canonical)
    for position, (compiled, error) in values.items():
        exact = evaluation.positions.get(position, 0.0)
        assert compiled == pytest.approx(exact, abs=error + 1e-9 * max(1.0, abs(exact)))


@pytest.mark.parametrize("spec", [
    cg(squares=True, scopeItemWeights={"h0": 0.5}, groupToWeight={"g": 2}),
    gc(squares=True, definition="DURING"),
    gc(squares=True, bound="EXACT", limit={"type": "RELATIVE", "globalLimit": 0.5}),
])
def test_default_policy_with_squares_keeps_broken_parts_no_worse(spec: dict) -> None:
    """Initially broken squares parts must not get worse (their tabulated value at the
    initial assignment is the rule's right-hand side), while the rest is optimized."""
    data = scenario([{"minimizeMovementSpec": {"doNotNormalize": True}}],
                    [{"spec": spec, "policy": "DEFAULT"}])
    check_against_enumeration(data, "default-squares")


def vmware(assignment: dict[str, list[str]], clusters: dict[str, str], anti: dict, affinity: dict,
           policy: str = "HARD") -> dict:
    """VM placement: anti-affinity = at most one VM of a group per cluster (GroupCount MAX 1),
    affinity = a group's VMs in one cluster (ColocateGroups MAX 1), fewest moves."""
    return {
        "objectName": "vm", "containerName": "host", "assignment": assignment,
        "scopes": {"cluster": clusters},
        "partitions": {"anti": anti, "affinity": affinity},
        "goals": [{"spec": {"minimizeMovementSpec": {"doNotNormalize": True}}}],
        "constraints": [
            {"spec": {"groupCountSpec": {"scope": "cluster", "partitionName": "anti"}},
             "policy": policy},
            {"spec": {"colocateGroupsSpec": {"scope": "cluster", "partitionName": "affinity"}},
             "policy": policy},
        ],
    }


def test_vmware_hard_rules_against_enumeration() -> None:
    data = vmware({"h0": ["a", "b", "c"], "h1": ["d"], "h2": ["e"], "h3": []},
                  {"h0": "c0", "h1": "c1", "h2": "c1", "h3": "c2"},
                  anti={"web": ["a", "b", "c"]}, affinity={"db": ["c", "d", "e"]})
    check_against_enumeration(data, "vmware")
    result = solve_model(*_parsed(data), OPTIONS)
    assert result.status == OPTIMAL
    # web needs three clusters, db one: c joins d and e in c1 (h1 or h2), and a or b moves
    # to c2 (h3): two moves (keeping c and moving d and e instead would take three)
    assert result.final_evaluation.positions[0] == approx(2.0)


def test_vmware_infeasible_anti_affinity_is_reported() -> None:
    data = vmware({"h0": ["a", "b", "c"], "h1": []}, {"h0": "c0", "h1": "c1"},
                  anti={"web": ["a", "b", "c"]}, affinity={})
    assert solve_model(*_parsed(data), OPTIONS).status == INFEASIBLE


def _parsed(data: dict):
    parsed = parse_scenario(data)
    return parsed.problem, parsed.model


def test_identical_group_members_share_one_class_and_groups_never_mix() -> None:
    """60 identical VMs: 30 in group x, 30 in y, all on h0 of 30 hosts. Anti-affinity (one
    of each group per host) forces 29 + 29 moves; x and y stay two classes, not 60 singletons
    and not one mixed class."""
    hosts = [f"h{i}" for i in range(30)]
    vms = [f"v{i}" for i in range(60)]
    data = {
        "objectName": "vm", "containerName": "host",
        "assignment": {"h0": vms, **{h: [] for h in hosts[1:]}},
        "partitions": {"anti": {"x": vms[:30], "y": vms[30:]}},
        "goals": [{"spec": {"minimizeMovementSpec": {"doNotNormalize": True}}}],
        "constraints": [{"spec": {"groupCountSpec": {"scope": "host", "partitionName": "anti"}},
                         "policy": "HARD"}],
    }
    problem, model = _parsed(data)
    builder, _ = compile_model(problem, model)
    assert sorted(len(m) for m in builder.classes.members) == [30, 30]
    result = solve_model(problem, model, OPTIONS)
    assert result.status == OPTIMAL
    assert result.final_evaluation.positions[0] == approx(58.0)
    final = result.final_evaluation
    assert all(c.violation == 0 for c in final.constraints)


# ---------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, path", [
    (gc(partitionName="nope"), "groupCountSpec.partitionName"),
    (gc(limit={"groupLimits": {"zz": 1}}), "groupCountSpec.limit.groupLimits.zz"),
    (gc(limit={"scopeItemToGroupLimits": {"h9": {"g": 1}}}),
     "groupCountSpec.limit.scopeItemToGroupLimits.h9"),
    (gc(bound="MIN", zeroAllowed=True, squares=True), "groupCountSpec.squares"),
    (gc(definition="STAYED", bound="MIN", squares=True), "groupCountSpec.squares"),
    (gc(bound="MULTIPLE", limit={"globalLimit": 0}), "groupCountSpec.limit"),
    (gc(bound="MULTIPLE", limit={"type": "RELATIVE"}, limitRelativeTo="SCOPE_ITEM_UTIL"),
     "groupCountSpec.limitRelativeTo"),
    (gc(bound="MIN", limit={"isDefaultLimitUnbounded": True}), "groupCountSpec.limit"),
    (gc(limitRelativeTo="GROUP_TO_SCOPE_ITEM_ROUTING_TRAFFIC"), "groupCountSpec.limitRelativeTo"),
    (gc(routingConfigForLimit="r"), "groupCountSpec.routingConfigForLimit"),
    (gc(bound="MIN", zeroAllowed=True, limitRelativeTo="SCOPE_ITEM_UTIL"),
     "groupCountSpec.zeroAllowed"),
    (gc(bound="SOMETIMES"), "groupCountSpec.bound"),
    (gc(colour="red"), "groupCountSpec.colour"),
    (cg(partitionName=""), "colocateGroupsSpec.partitionName"),
    (cg(scopeItemWeights={"h9": 1}), "colocateGroupsSpec.scopeItemWeights.h9"),
    (cg(groupToWeight={"zz": 1}), "colocateGroupsSpec.groupToWeight.zz"),
    (cg(groupToWeight={"g": "heavy"}), "colocateGroupsSpec.groupToWeight.g"),
    (cg(squares=True, groupToWeight={"g": -1}), "colocateGroupsSpec.groupToWeight.g"),
    (cg(bound="MIN", limits={"isDefaultLimitUnbounded": True}), "colocateGroupsSpec.limits"),
    (cg(limits={"scopeItemLimits": {"h0": 2}}), "colocateGroupsSpec.limits.scopeItemLimits"),
    (cg(limits={"type": "RELATIVE"}), "colocateGroupsSpec.limits.type"),
])
def test_invalid_group_specs_name_the_field(spec: dict, path: str) -> None:
    with pytest.raises(InputError) as info:
        parse_scenario(scenario([spec]))
    assert info.value.path == f"goals[0].spec.{path}"


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), mutations=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_group_scenarios_solve_or_raise_input_error(seed: int, mutations: list) -> None:
    solve_or_reject(mutate(random_scenario(seed, max_objects=4, groups=True), mutations))


def test_squares_refuse_an_empty_group() -> None:
    data = scenario([gc(squares=True)])
    data["partitions"] = {"p": {"g": ["a"], "empty": []}}
    with pytest.raises(InputError, match="empty"):
        parse_scenario(data)


def test_spec_dicts_are_not_modified() -> None:
    import copy

    data = scenario([gc(bound="EXACT", limit={"groupLimits": {"g": 2}})],
                    [{"spec": cg(groupToWeight={"g": 2}), "policy": "SOFT"}])
    before = copy.deepcopy(data)
    parsed = parse_scenario(data)
    solve_model(parsed.problem, parsed.model, OPTIONS)
    assert data == before


# ---------------------------------------------------------------------------------------------
# Parity with the Rebalancer wheel (optional)
# ---------------------------------------------------------------------------------------------

PEER = find_peer_python()
requires_peer = pytest.mark.skipif(
    PEER is None, reason="no Python 3.12 interpreter with the rebalancer wheel (set "
    "CPSAT_REBALANCER_PEER_PYTHON; see README)")


def wheel_mismatches(data: dict, final: np.ndarray) -> list[str]:
    """Goal values and constraint violations, ours against the wheel's. Bucket sums are not
    compared: the wheel's local search adds ColocateGroups' continuous term P_g to a soft
    constraint's term, which the optimal solver (and we) do not."""
    parsed = parse_scenario(data)
    problem = parsed.problem
    wheel = evaluate_with_wheel(data, problem.assignment_dict(final), peer_python=PEER)
    problems = []
    for label, assignment in (("initial", problem.initial), ("final", final)):
        ours = evaluate(problem, parsed.model, assignment)
        for goal in wheel[label]["goals"]:
            theirs, mine = goal["value"], ours.goals[goal["index"]].value
            if np.isnan(theirs) and mine == 0:
                continue  # ColocateGroups squares inside its bound: 1.0.4's NaN
                # (docs/semantics.md#colocategroups)
            if abs(mine - theirs) > 1e-9 * max(abs(mine), abs(theirs)) + 2.0**-46:
                problems.append(f"{label} goal {goal['index']}: ours {mine} wheel {theirs}")
        for constraint in wheel[label]["constraints"]:
            theirs = constraint["value"]
            mine = ours.constraints[constraint["index"]].violation
            if np.isnan(theirs) and mine == 0:
                continue
            if abs(mine - theirs) > 1e-9 * max(abs(mine), abs(theirs)) + 2.0**-46:
                problems.append(f"{label} constraint {constraint['index']}: ours {mine} "
                                f"wheel {theirs}")
    return problems


def random_final(problem, seed: int) -> np.ndarray:
    rng = random.Random(seed)
    final = problem.initial.copy()
    for obj in rng.sample(range(problem.num_objects), min(3, problem.num_objects)):
        final[obj] = rng.randrange(problem.num_containers)
    return final


@pytest.mark.peer
@requires_peer
@pytest.mark.parametrize("seed", range(12))
def test_random_group_scenarios_agree_with_the_wheel(seed: int) -> None:
    data = random_scenario(seed, groups=True)
    final = random_final(parse_scenario(data).problem, seed)
    assert not wheel_mismatches(data, final), seed

TARGETED = [
    gc(limit={"groupLimits": {"g": 0}, "scopeItemLimits": {"h0": 1}}),  # the compact quirk
    gc(bound="MULTIPLE", limit={"globalLimit": 2}, dimension="cpu"),
    gc(bound="MIN", zeroAllowed=True, minimumLimit=0.5, limit={"globalLimit": 2}),
    gc(bound="EXACT", definition="DURING_AND_AFTER", limit={"type": "RELATIVE",
                                                            "globalLimit": 0.5}),
    gc(dimension="cpu", limit={"type": "RELATIVE", "globalLimit": 0.4},
       limitRelativeTo="SCOPE_ITEM_UTIL", definition="DURING"),
    gc(squares=True, definition="STAYED", limit={"globalLimit": 0}),
    gc(squares=True, bound="MIN", limit={"globalLimit": 2}),
    cg(squares=True, limits={"globalLimit": 0}, scopeItemWeights={"h1": 2}),
    cg(bound="MIN", limits={"globalLimit": 3, "groupLimits": {"k": 1}}, dimension="mem"),
    cg(groupToWeight={"g": -1, "k": 2}, filter={"itemsBlacklist": ["h2"]}),
]


@pytest.mark.peer
@requires_peer
@pytest.mark.parametrize("index", range(len(TARGETED)))
def test_targeted_options_agree_with_the_wheel(index: int) -> None:
    spec = TARGETED[index]
    data = scenario([spec], [{"spec": spec, "policy": "SOFT"}])
    problem = parse_scenario(data).problem
    for seed in range(2):
        assert not wheel_mismatches(data, random_final(problem, seed)), (index, seed)

