"""Bad input raises InputError naming where (a path into the input) and what, before any
model is built; nothing the user gave is modified."""

from __future__ import annotations

import copy
import math

import pytest

from cpsat_rebalancer import InputError, ProblemSolver, parse_scenario


def base() -> dict:
    return {
        "objectName": "task", "containerName": "host",
        "assignment": {"h0": ["t0", "t1"], "h1": ["t2"]},
        "objectDimensions": {"cpu": {"t0": 1, "t1": 2, "t2": 3}},
        "containerDimensions": {"cpu": {"h0": 10, "h1": 10}},
        "scopes": {"rack": {"h0": "r0", "h1": "r0"}},
        "goals": [{"spec": {"balanceSpec": {"scope": "host", "dimension": "cpu"}}}],
        "constraints": [],
    }


def error_of(mutate) -> str:
    data = base()
    mutate(data)
    with pytest.raises(InputError) as info:
        parse_scenario(data)
    return str(info.value)


CASES = {
    "unknown dimension": (
        lambda d: d["goals"][0]["spec"]["balanceSpec"].update(dimension="ram"),
        ["goals[0].spec.balanceSpec.dimension", "unknown dimension", "'ram'"]),
    "unknown scope": (
        lambda d: d["goals"][0]["spec"]["balanceSpec"].update(scope="region"),
        ["goals[0].spec.balanceSpec.scope", "unknown scope", "'region'"]),
    "object in two containers": (
        lambda d: d["assignment"]["h1"].append("t0"),
        ["assignment.h1[1]", "object listed twice", "'t0'"]),
    "NaN size": (
        lambda d: d["objectDimensions"]["cpu"].update(t1=math.nan),
        ["objectDimensions.cpu.t1", "finite"]),
    "negative size": (
        lambda d: d["objectDimensions"]["cpu"].update(t1=-2),
        ["objectDimensions.cpu.t1", "negative", "-2"]),
    "negative capacity": (
        lambda d: d["containerDimensions"]["cpu"].update(h0=-1),
        ["containerDimensions.cpu.h0", "negative"]),
    "unknown spec": (
        lambda d: d["goals"].append({"spec": {"balancSpec": {}}}),
        ["goals[1].spec", "unknown spec", "'balancSpec'"]),
    "unknown field": (
        lambda d: d["goals"][0]["spec"]["balanceSpec"].update(upperBund=2),
        ["goals[0].spec.balanceSpec.upperBund", "unknown field of balanceSpec"]),
    "wrong field type": (
        lambda d: d["goals"][0]["spec"]["balanceSpec"].update(upperBound="high"),
        ["goals[0].spec.balanceSpec.upperBound", "expected a number", "'high'"]),
    "invalid enum": (
        lambda d: d["goals"][0]["spec"]["balanceSpec"].update(formula="CUBES"),
        ["goals[0].spec.balanceSpec.formula", "invalid BalanceSpecFormula", "'CUBES'"]),
    "invalid enum integer": (
        lambda d: d["goals"][0]["spec"]["balanceSpec"].update(formula=9),
        ["goals[0].spec.balanceSpec.formula", "BalanceSpecFormula", "9"]),
    "both whitelist and blacklist": (
        lambda d: d["goals"][0]["spec"]["balanceSpec"].update(
            filter={"itemsWhitelist": ["h0"], "itemsBlacklist": ["h1"]}),
        ["goals[0].spec.balanceSpec.filter", "both itemsWhitelist and itemsBlacklist"]),
    "filter naming an unknown item": (
        lambda d: d["goals"][0]["spec"]["balanceSpec"].update(filter={"itemsWhitelist": ["h9"]}),
        ["goals[0].spec.balanceSpec.filter.itemsWhitelist[0]", "unknown item", "'h9'"]),
    "limit for an unknown item": (
        lambda d: d["constraints"].append({"spec": {"capacitySpec": {
            "scope": "rack", "dimension": "cpu", "limit": {"scopeItemLimits": {"r7": 1}}}}}),
        ["constraints[0].spec.capacitySpec.limit.scopeItemLimits.r7", "unknown item"]),
    "negative tuple position": (
        lambda d: d["goals"][0].update(tuplePos=-1),
        ["goals[0].tuplePos", "negative"]),
    "goal-only spec as a constraint": (
        lambda d: d["constraints"].append({"spec": {"balanceSpec": {"dimension": "cpu"}}}),
        ["constraints[0].spec.balanceSpec", "cannot be used as a constraint"]),
    "unknown object in a spec": (
        lambda d: d["constraints"].append({"spec": {"avoidMovingSpec": {"objects": ["t9"]}}}),
        ["constraints[0].spec.avoidMovingSpec.objects[0]", "unknown object", "'t9'"]),
    "unknown policy": (
        lambda d: d["constraints"].append({"spec": {"toFreeSpec": {"containers": ["h0"]}},
                                           "policy": "STRICT"}),
        ["constraints[0].policy", "ConstraintPolicy", "'STRICT'"]),
    "non-positive time limit": (
        lambda d: d.update(solver={"timeLimit": 0}),
        ["solver.timeLimit", "positive"]),
    "duplicate object in the objects list": (
        lambda d: d.update(objects=["t0", "t1", "t2", "t0"]),
        ["objects[3]", "duplicate object", "'t0'"]),
    "object without a container": (
        lambda d: d.update(objects=["t0", "t1", "t2", "t9"]),
        ["objects[3]", "object without a container", "'t9'"]),
    "duplicate container": (
        lambda d: d.update(containers=["h5", "h5"]),
        ["containers[1]", "duplicate container", "'h5'"]),
    "unknown container in a dimension": (
        lambda d: d["containerDimensions"]["cpu"].update(h9=1),
        ["containerDimensions.cpu.h9", "unknown scope item", "'h9'"]),
    "unknown object in a dimension": (
        lambda d: d["objectDimensions"]["cpu"].update(t9=1),
        ["objectDimensions.cpu.t9", "unknown object", "'t9'"]),
    "infinite size": (
        lambda d: d["objectDimensions"]["cpu"].update(t0=math.inf),
        ["objectDimensions.cpu.t0", "finite"]),
    "infinite capacity": (
        lambda d: d["containerDimensions"]["cpu"].update(h0=math.inf),
        ["containerDimensions.cpu.h0", "finite"]),
    "unknown container in a scope": (
        lambda d: d["scopes"]["rack"].update(h7="r1"),
        ["scopes.rack.h7", "unknown container", "'h7'"]),
    "unknown scope item in a scope dimension": (
        lambda d: d.update(scopeDimensions={"rack": {"cpu": {"r9": 4}}}),
        ["scopeDimensions.rack.cpu.r9", "unknown scope item", "'r9'"]),
    "scope dimension for an unknown scope": (
        lambda d: d.update(scopeDimensions={"region": {"cpu": {"r0": 4}}}),
        ["scopeDimensions.region", "unknown scope", "'region'"]),
    "unknown object in a partition": (
        lambda d: d.update(partitions={"app": {"web": ["t0", "t8"]}}),
        ["partitions.app.web[1]", "unknown object", "'t8'"]),
    "object listed twice in one group": (
        lambda d: d.update(partitions={"app": {"web": ["t0", "t0"]}}),
        ["partitions.app.web[1]", "listed twice in this group", "'t0'"]),
    "SQUARES with a negative bound": (
        lambda d: d["goals"][0]["spec"]["balanceSpec"].update(formula="SQUARES", upperBound=-1),
        ["goals[0].spec.balanceSpec.upperBound", "negative bound"]),
    "negative allowance": (
        lambda d: d["constraints"].append({"spec": {"minimizeMovementSpec": {
            "doNotNormalize": True, "allowance": -1}}}),
        ["constraints[0].spec.minimizeMovementSpec.allowance", "negative"]),
    "huge tuple position": (
        lambda d: d["goals"][0].update(tuplePos=10**6),
        ["goals[0].tuplePos", "above 10000"]),
    "number too large for a float": (
        lambda d: d["objectDimensions"]["cpu"].update(t0=10**400),
        ["objectDimensions.cpu.t0", "too large"]),
    "seed out of range": (
        lambda d: d.update(solver={"seed": 2**40}),
        ["solver.seed", "2^31"]),
    "NaN deterministic time": (
        lambda d: d.update(solver={"deterministicTime": math.nan}),
        ["solver.deterministicTime", "finite"]),
    "log not a flag": (
        lambda d: d.update(solver={"log": "yes"}),
        ["solver.log", "true or false"]),
    "unknown top-level field": (
        lambda d: d.update(gaols=[]),
        ["gaols", "unknown scenario field"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_names_the_field_and_the_value(case: str) -> None:
    mutate, fragments = CASES[case]
    message = error_of(mutate)
    for fragment in fragments:
        assert fragment in message, f"{case}: {fragment!r} not in {message!r}"


def test_enum_integers_are_rebalancers() -> None:
    data = base()
    data["goals"][0]["spec"]["balanceSpec"]["formula"] = 2
    spec = parse_scenario(data).model.goals[0].spec
    assert spec.formula == "SQUARES"


def test_the_api_never_modifies_what_the_user_passed() -> None:
    spec = {"balanceSpec": {"scope": "host", "dimension": "cpu"}}
    assignment = {"h0": ["t0", "t1"], "h1": ["t2"]}
    frozen = copy.deepcopy((spec, assignment))
    ps = ProblemSolver().set_object_name("task").set_container_name("host")
    ps.set_assignment(assignment)
    ps.add_object_dimension("cpu", {"t0": 1, "t1": 2, "t2": 3})
    ps.add_container_dimension("cpu", {"h0": 10, "h1": 10})
    ps.add_goal(spec)
    ps.solve()
    assert (spec, assignment) == frozen


@pytest.mark.parametrize("name, content, fragment", [
    ("s.json", '{"assignment": {"h0": ["a"], "h0": ["b"]}}', "a key appears twice"),
    ("s.yaml", "assignment:\n  h0: [a]\n  h0: [b]\n", "s.yaml:3:3"),
    ("s.yaml", "assignment:\n  h0: [a\n", "s.yaml:3:1: invalid YAML"),
    ("s.json", '{"assignment": {"h0": ["a",]}}', "s.json:1:28: invalid JSON"),
])
def test_scenario_files_with_errors_say_where(tmp_path, name: str, content: str,
                                              fragment: str) -> None:
    from cpsat_rebalancer import load_scenario

    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError) as info:
        load_scenario(path)
    assert fragment in str(info.value)


def test_yaml_scenarios_load(tmp_path) -> None:
    import json
    from pathlib import Path

    import yaml

    from cpsat_rebalancer import load_scenario

    source = Path(__file__).parents[1] / "scenarios" / "seed_balance_memory.json"
    target = tmp_path / "seed.yaml"
    target.write_text(yaml.safe_dump(json.loads(source.read_text())))
    assert load_scenario(target).problem.num_objects == 4


def test_negative_weights_only_where_maximizing_is_exact() -> None:
    data = base()
    data["goals"][0]["weight"] = -1  # LINEAR balance: an excess, exact only when minimized
    from cpsat_rebalancer.scenario import SolverOptions
    from cpsat_rebalancer.solve.pipeline import solve_model

    scenario = parse_scenario(data)  # the evaluator scores it as Rebalancer does
    with pytest.raises(InputError, match=r"goals\[0\].weight"):
        solve_model(scenario.problem, scenario.model, SolverOptions(workers=1))
    data["goals"][0] = {"spec": {"minimizeMovementSpec": {"doNotNormalize": True}},
                        "weight": -1}  # linear in the assignment: maximizing moves is exact
    scenario = parse_scenario(data)
    result = solve_model(scenario.problem, scenario.model, SolverOptions(workers=1))
    assert result.status == "OPTIMAL" and len(result.moves) == 3


def test_negative_constraint_costs_are_rejected() -> None:
    message = error_of(lambda d: d["constraints"].append(
        {"spec": {"toFreeSpec": {"containers": ["h0"]}}, "invalidCost": -5}))
    assert "constraints[0].invalidCost" in message and "negative" in message
