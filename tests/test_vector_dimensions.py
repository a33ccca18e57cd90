"""Vector dimensions (docs/semantics.md#vector-dimensions): a scope item's load is the largest,
over the vector's entries, of the entry's load, under every utilization definition. Values
against the wheel's numbers, the optimum against enumeration on random tiny scenarios whose
dimensions are vectors, compiled objective against the evaluator, parity with the wheel,
the binding, and bad input."""

from __future__ import annotations

import copy
import json
import random
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from spec_checks import (
    PEER,
    PEER_REASON,
    check_compiled_agrees,
    random_final,
    value_at,
    wheel_mismatches,
)
from test_bruteforce import check_against_enumeration

from cpsat_rebalancer import (
    InputError,
    ProblemSolver,
    evaluate,
    parse_scenario,
    solve_scenario,
)
from cpsat_rebalancer.generators import random_scenario
from cpsat_rebalancer.peer import PeerError, export_rebalancer_python

# the specs that take a vector dimension; every other one refuses it
VECTOR_ARMS = ("balanceSpec", "capacitySpec", "utilIncreaseCostSpec", "minimizeMovementSpec",
               "maximizeAllocationSpec")
ENTRY_VALUES = [0, 0.5, 1, 2, 3, 4, 6]


def approx(x: float):
    return pytest.approx(x, rel=1e-12, abs=1e-15)


def vector_scenario(seed: int, max_objects: int = 5) -> dict[str, Any]:
    """``generators.random_scenario`` (every option of Balance, Capacity, UtilIncreaseCost
    and MinimizeMovement drawn there) with its ``cpu`` dimension, and half of the time
    ``mem``, made a vector of 2-3 entries: the first entry is the scalar value, the others
    drawn (zeros included), some objects left to ``objectDimensionDefaults``. ToFree, which
    refuses vectors, reads the object count instead; a MaximizeAllocation goal on ``cpu``
    is added half of the time."""
    data = random_scenario(seed, max_objects=max_objects)
    rng = random.Random(f"vector-{seed}")
    vectors = ["cpu"] + (["mem"] if rng.random() < 0.5 else [])
    for dim in vectors:
        scalar = data["objectDimensions"].pop(dim)
        length = rng.randint(2, 3)
        given = {o: [v, *(rng.choice(ENTRY_VALUES) for _ in range(length - 1))]
                 for o, v in scalar.items()}
        if rng.random() < 0.3:  # one object takes the default in every entry
            del given[rng.choice(sorted(given))]
            data.setdefault("objectDimensionDefaults", {})[dim] = rng.choice([0, 1.5])
        data.setdefault("objectDimensionVectors", {})[dim] = given
    for entry in [*data["goals"], *data["constraints"]]:
        entry["spec"].get("toFreeSpec", {}).pop("dimension", None)
    if rng.random() < 0.5:
        data["goals"].append({"spec": {"maximizeAllocationSpec": {
            "scope": "host", "dimension": "cpu"}}, "tuplePos": rng.choice([0, 1]),
            "weight": rng.choice([1, -1])})
    return data


def vector_arms(data: dict[str, Any]) -> set[str]:
    """The spec types of ``data`` that read one of its vector dimensions."""
    vectors = set(data.get("objectDimensionVectors", {}))
    return {arm for entry in [*data["goals"], *data["constraints"]]
            for arm, body in entry["spec"].items() if body.get("dimension") in vectors}


def test_the_random_scenarios_cover_every_spec_that_takes_a_vector() -> None:
    """The seeds below carry each of those specs on a vector dimension many times."""
    counts = {arm: 0 for arm in VECTOR_ARMS}
    for seed in range(60):
        for arm in vector_arms(vector_scenario(seed)):
            counts[arm] += 1
    assert min(counts.values()) >= 8, counts


def two_hosts(**extra: Any) -> dict[str, Any]:
    """a = [20, 0] and b = [0, 30] on h0, c = [5, 0] on h1, h2 empty; capacity 10 each."""
    data = {"objectName": "task", "containerName": "host",
            "assignment": {"h0": ["a", "b"], "h1": ["c"], "h2": []},
            "objectDimensionVectors": {"net": {"a": [20, 0], "b": [0, 30], "c": [5, 0]}},
            "containerDimensions": {"net": {"h0": 10, "h1": 10, "h2": 10}}}
    data.update(extra)
    return data


def capacity_goal(scope: str = "host", **fields: Any) -> list[dict[str, Any]]:
    return [{"spec": {"capacitySpec": {"scope": scope, "dimension": "net", "limit": {
        "type": "ABSOLUTE", "globalLimit": 0}, **fields}}}]


def test_values_are_the_wheels() -> None:
    """Capacity with limit 0 (normalized by the average capacity 10): h0's peak 30 and
    h1's 5 give 3.5; a rack of h0 and h1 counts the peak of its summed entries, 30 (not
    the sum of its hosts' peaks, 35): 3; an object left out with default 7 counts 7 in
    every entry: 3.7. The wheel's initialObjective for the same ProblemSolver calls."""
    assert value_at(two_hosts(goals=capacity_goal())).goals[0].value == approx(3.5)
    racks = two_hosts(scopes={"rack": {"h0": "r0", "h1": "r0", "h2": "r1"}},
                      scopeDimensions={"rack": {"net": {"r0": 10, "r1": 10}}},
                      goals=capacity_goal("rack"))
    assert value_at(racks).goals[0].value == approx(3.0)
    default = two_hosts(goals=capacity_goal(), objectDimensionDefaults={"net": 7})
    del default["objectDimensionVectors"]["net"]["c"]
    assert value_at(default).goals[0].value == approx(3.7)


def test_definitions_take_the_peak_of_each_entrys_utilization() -> None:
    """Moving a = [20, 0] from h0 to h1: DURING on h1 is max(20 + 5, 0) = 25 (each entry's
    DURING, then the largest), NEW on h1 20, OLD on h0 20; the evaluator against sums of
    the entries computed here."""
    data = two_hosts()
    for definition, host, expected in (("DURING", "h1", 25), ("NEW", "h1", 20),
                                       ("OLD", "h0", 20), ("AFTER", "h0", 30)):
        data["goals"] = capacity_goal(definition=definition,
                                      filter={"itemsWhitelist": [host]})
        # one filtered item: normalized by its own capacity 10
        assert value_at(data, {"a": "h1"}).goals[0].value == approx(expected / 10)


@pytest.mark.parametrize("seed", range(60))
def test_random_scenarios_match_enumeration(seed: int) -> None:
    check_against_enumeration(vector_scenario(seed), seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1000, 1040))
def test_larger_random_scenarios_match_enumeration(seed: int) -> None:
    check_against_enumeration(vector_scenario(seed, max_objects=7), seed)


@pytest.mark.parametrize("seed", range(30))
def test_compiled_objective_matches_the_evaluator(seed: int) -> None:
    check_compiled_agrees(vector_scenario(seed), seed)


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=PEER_REASON)
@pytest.mark.parametrize("seed", range(60))
def test_random_scenarios_agree_with_the_wheel(seed: int) -> None:
    """At the initial assignment and a random final one. The wheel's local search cannot be
    forced into some moves (a SOFT Capacity MIN DURING_AND_AFTER constraint blocks them,
    with scalar dimensions too): then only the initial assignment is compared."""
    data = vector_scenario(seed)
    problem = parse_scenario(data).problem
    try:
        problems = wheel_mismatches(data, random_final(problem, seed))
    except PeerError as error:
        if "did not realise" not in str(error):
            raise
        problems = wheel_mismatches(data, problem.initial)
    assert not problems, f"seed {seed}:\n" + "\n".join(problems) + f"\n{data}"


def test_binding_records_the_vector_and_its_default() -> None:
    """add_object_dimension_vector gives the same problem as the scenario form, and does not
    keep a reference to the caller's dict."""
    values = {"a": [20, 0], "b": [0, 30]}
    ps = ProblemSolver().set_object_name("task").set_container_name("host")
    ps.set_assignment({"h0": ["a", "b"], "h1": ["c"], "h2": []})
    ps.add_object_dimension_vector("net", values, default_value=7)
    ps.add_container_dimension("net", {"h0": 10, "h1": 10, "h2": 10})
    ps.add_goal(capacity_goal()[0]["spec"])
    values["a"][0] = 99
    result = ps.solve()
    assert result.get("initialObjective")["value"] == approx(3.7)
    # a and b fill different entries: together they peak at 30, apart at 20 + 30, so the
    # optimum keeps them together (37 in all, where summed sizes would give 57 anyway)
    assert result.status == "OPTIMAL"
    assert result.get("finalObjective")["value"] == approx(3.7)
    assert result["assignment"]["a"] == result["assignment"]["b"]


@pytest.mark.parametrize("change, path", [
    (lambda d: d["objectDimensionVectors"]["net"].update(a=[1, 2, 3]),
     "objectDimensionVectors.net.b"),  # b's length differs from a's, the first one
    (lambda d: d["objectDimensionVectors"]["net"].update(b=[1, float("nan")]),
     "objectDimensionVectors.net.b[1]"),
    (lambda d: d["objectDimensionVectors"]["net"].update(b=[-1, 2]),
     "objectDimensionVectors.net.b[0]"),
    (lambda d: d["objectDimensionVectors"]["net"].update(b=[]), "objectDimensionVectors.net.b"),
    (lambda d: d["objectDimensionVectors"]["net"].update(b=4), "objectDimensionVectors.net.b"),
    (lambda d: d["objectDimensionVectors"]["net"].update(z=[1, 2]),
     "objectDimensionVectors.net.z"),
    (lambda d: d["objectDimensionVectors"].update(net={}), "objectDimensionVectors.net"),
    (lambda d: d.update(objectDimensions={"net": {"a": 1}}), "objectDimensionVectors.net"),
    (lambda d: d.update(objectDimensions={"net[0]": {"a": 1}}), "objectDimensionVectors.net"),
    (lambda d: d.update(objectDimensionDefaults={"net": -1}), "objectDimensionDefaults.net"),
    (lambda d: d["containerDimensions"].update({"net[0]": {"h0": 1}}),
     "containerDimensions.net[0]"),
])
def test_bad_vectors_name_the_field(change, path: str) -> None:
    data = copy.deepcopy(two_hosts(goals=capacity_goal()))
    change(data)
    with pytest.raises(InputError) as info:
        parse_scenario(data)
    assert info.value.path == path


@pytest.mark.parametrize("spec, path", [
    ({"toFreeSpec": {"containers": ["h0"], "dimension": "net"}}, "toFreeSpec.dimension"),
    ({"groupCountSpec": {"scope": "host", "partitionName": "job", "dimension": "net"}},
     "groupCountSpec.dimension"),
    ({"groupDiversitySpec": {"scope": "host", "partition": "job", "dimension": "net"}},
     "groupDiversitySpec.dimension"),
    ({"colocateGroupsSpec": {"scope": "host", "partitionName": "job", "dimension": "net"}},
     "colocateGroupsSpec.dimension"),
    ({"minimizeContainersSpec": {"dimension": "net"}}, "minimizeContainersSpec.dimension"),
    ({"disasterRecoveryCapacitySpec": {"scope": "host", "dimension": "net"}},
     "disasterRecoveryCapacitySpec.dimension"),
    ({"balanceSpec": {"scope": "host", "dimension": "net", "balanceMetric":
                      "CAPACITY_PER_ITEM"}}, "balanceSpec.balanceMetric"),
    ({"balanceSpec": {"scope": "host", "dimension": "net_count", "balanceMetric":
                      "CAPACITY_PER_ITEM", "capacityPerItemCountDimension": "net"}},
     "balanceSpec.capacityPerItemCountDimension"),
    ({"capacitySpec": {"scope": "host", "dimension": "net", "utilizationBound": {
        "groupUtilizationBound": {"partitionName": "job"}}}}, "capacitySpec.utilizationBound"),
])
def test_specs_that_do_not_take_a_vector_name_the_field(spec: dict, path: str) -> None:
    data = two_hosts(goals=[{"spec": spec}], partitions={"job": {"j0": ["a", "c"],
                                                                 "j1": ["b"]}})
    data["objectDimensions"] = {"net_count": {"a": 1}}
    with pytest.raises(InputError) as info:
        parse_scenario(data)
    assert info.value.path == f"goals[0].spec.{path}"


def test_entries_are_no_dimension_of_their_own() -> None:
    """A spec cannot name an entry; the problem lists the vector among its dimensions."""
    data = two_hosts(goals=[{"spec": {"capacitySpec": {"scope": "host",
                                                        "dimension": "net[0]"}}}])
    with pytest.raises(InputError) as info:
        parse_scenario(data)
    assert info.value.path == "goals[0].spec.capacitySpec.dimension"
    problem = parse_scenario(two_hosts()).problem
    assert "net" in problem.dimension_names and "net[0]" not in problem.dimension_names
    assert np.array_equal(problem.object_dims["net[1]"], [0, 30, 0])


def export_case() -> dict[str, Any]:
    """Four objects whose vectors fill different entries, a Capacity goal on host peaks,
    then fewest moves, with a default for the object left out."""
    data = two_hosts(goals=[*capacity_goal(), {"boundary": True},
                            {"spec": {"minimizeMovementSpec": {"dimension": "net"}}}],
                     objectDimensionDefaults={"net": 2})
    data["assignment"]["h0"].append("d")
    return data


def test_exported_script_on_this_package_reaches_the_proven_optimum(tmp_path, monkeypatch
                                                                   ) -> None:
    """`export --to rebalancer-python` writes add_object_dimension_vector; the script, with
    `import cpsat_rebalancer as rebalancer`, ends at the values `solve` proves."""
    data = export_case()
    text = export_rebalancer_python(data, solver="optimal-highs", time_limit=20)
    assert "solver.add_object_dimension_vector(" in text
    result = solve_scenario(parse_scenario(data))
    assert result.status == "OPTIMAL"
    swapped = text.replace("\nimport rebalancer\n", "\nimport cpsat_rebalancer as rebalancer\n")
    monkeypatch.setattr(sys, "argv", ["script.py", str(tmp_path / "ours.json")])
    exec(compile(swapped, "script.py", "exec"), {"__name__": "__main__"})
    ours = json.loads((tmp_path / "ours.json").read_text())
    positions = result.final_evaluation.positions
    assert [g["value"] for g in ours["finalGlobalObjective"]["goals"]] == pytest.approx(
        [positions[p] for p in sorted(positions)], rel=1e-9, abs=1e-12)


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason=PEER_REASON)
def test_exported_script_in_the_wheel_starts_and_ends_where_we_do(tmp_path) -> None:
    """The same script run by the wheel (HiGHS): its initial values are our evaluator's, and
    it ends at our proven optimum."""
    data = export_case()
    script = tmp_path / "case.py"
    script.write_text(export_rebalancer_python(data, solver="optimal-highs", time_limit=20))
    done = subprocess.run([PEER, str(script), str(tmp_path / "wheel.json")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = json.loads((tmp_path / "wheel.json").read_text())
    scenario = parse_scenario(data)
    start = evaluate(scenario.problem, scenario.model, scenario.problem.initial).positions
    best = solve_scenario(scenario).final_evaluation.positions
    for key, ours in (("initialGlobalObjective", start), ("finalGlobalObjective", best)):
        assert [g["value"] for g in theirs[key]["goals"]] == pytest.approx(
            [ours[p] for p in sorted(ours)], rel=1e-9, abs=1e-12), key
