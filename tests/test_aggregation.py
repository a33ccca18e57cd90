"""Object classes are exact: aggregating identical objects across initial containers gives
the same optimum as one class per initial container, and crossing scopes fall back safely."""

from __future__ import annotations

import dataclasses

import pytest
from randomized import random_scenario
from test_bruteforce import check_against_enumeration

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.cpsat.builder import CpBuilder
from cpsat_rebalancer.cpsat.classes import laminar_chain
from cpsat_rebalancer.errors import InternalError
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.pipeline import solve_model
from cpsat_rebalancer.specs.common import REGISTRY, Spec

OPTIONS = SolverOptions(workers=1)


def identical_objects(seed: int) -> dict:
    """A random scenario whose objects share a few sizes, so classes span containers."""
    data = random_scenario(seed, max_objects=8, max_containers=3)
    for dim in data["objectDimensions"].values():
        for k, obj in enumerate(sorted(dim)):
            dim[obj] = [1, 2][k % 2]
    return data


@pytest.mark.parametrize("seed", range(30))
def test_same_optimum_with_and_without_aggregation(seed: int) -> None:
    scenario = parse_scenario(identical_objects(seed))
    merged = solve_model(scenario.problem, scenario.model, OPTIONS, aggregate=True)
    split = solve_model(scenario.problem, scenario.model, OPTIONS, aggregate=False)
    assert merged.status == split.status
    if merged.status != "OPTIMAL":
        return
    for a, b in zip(merged.buckets, split.buckets):
        tol = 1e-9 + a.approximation_error + b.approximation_error
        if a.leximin is not None:
            assert a.leximin == pytest.approx(b.leximin, abs=tol)
        else:
            assert a.objective == pytest.approx(b.objective, abs=tol), f"seed {seed}"


def test_aggregation_really_merges_containers() -> None:
    data = identical_objects(3)
    data["assignment"] = {"h0": ["t0", "t1"], "h1": ["t2", "t3"]}
    data["objectDimensions"] = {"cpu": dict.fromkeys(["t0", "t1", "t2", "t3"], 2)}
    data["containerDimensions"] = {"cpu": {"h0": 4, "h1": 8}}
    data["scopes"], data["scopeDimensions"], data["constraints"] = {}, {}, []
    data["goals"] = [{"spec": {"balanceSpec": {"dimension": "cpu"}}}]
    scenario = parse_scenario(data)
    assert len(CpBuilder(scenario.problem).classes.members) == 1
    assert len(CpBuilder(scenario.problem, aggregate=False).classes.members) == 2


def crossing_scopes() -> dict:
    data = random_scenario(5, max_objects=5, max_containers=3)
    data["assignment"] = {"h0": ["t0", "t1"], "h1": ["t2"], "h2": ["t3", "t4"]}
    data["objectDimensions"] = {"cpu": dict.fromkeys(["t0", "t1", "t2", "t3", "t4"], 1),
                                "mem": dict.fromkeys(["t0", "t1", "t2", "t3", "t4"], 1)}
    data["containerDimensions"] = {"cpu": {"h0": 4, "h1": 4, "h2": 4}}
    data["scopes"] = {"rack": {"h0": "r0", "h1": "r0", "h2": "r1"},
                      "power": {"h0": "p0", "h1": "p1", "h2": "p1"}}
    data["scopeDimensions"] = {}
    data["goals"] = [
        {"spec": {"balanceSpec": {"scope": "rack", "dimension": "cpu", "definition": "DURING"}}},
        {"spec": {"minimizeMovementSpec": {"scope": "power", "doNotNormalize": True}},
         "tuplePos": 1},
    ]
    data["constraints"] = [{"spec": {"capacitySpec": {"scope": "host", "dimension": "cpu",
                                                      "limit": {"globalLimit": 0.5}}},
                            "policy": "HARD"}]
    return data


def test_crossing_scopes_keep_classes_per_initial_container() -> None:
    scenario = parse_scenario(crossing_scopes())
    assert laminar_chain(scenario.problem) is None
    builder = CpBuilder(scenario.problem)
    for members in builder.classes.members:
        assert len(set(scenario.problem.initial[members].tolist())) == 1


def test_nested_scopes_form_a_chain() -> None:
    data = crossing_scopes()
    data["scopes"]["power"] = {"h0": "p0", "h1": "p0", "h2": "p0"}
    scenario = parse_scenario(data)
    assert [s.name for s in laminar_chain(scenario.problem)] == ["rack", "power"]


@pytest.mark.parametrize("seed", range(2000, 2020))
def test_identical_objects_match_enumeration(seed: int) -> None:
    check_against_enumeration(identical_objects(seed), seed)


def unread_dimension(seed: int) -> dict:
    """``identical_objects`` plus a dimension no spec reads, different for every object."""
    data = identical_objects(seed)
    objects = sorted(next(iter(data["objectDimensions"].values())))
    data["objectDimensions"]["label"] = {obj: k + 1 for k, obj in enumerate(objects)}
    return data


@pytest.mark.parametrize("seed", range(3000, 3020))
def test_unread_dimension_matches_enumeration(seed: int) -> None:
    check_against_enumeration(unread_dimension(seed), seed)


def test_unread_dimensions_do_not_split_classes() -> None:
    data = identical_objects(3)
    data["assignment"] = {"h0": ["t0", "t1"], "h1": ["t2", "t3"]}
    data["objectDimensions"] = {"cpu": dict.fromkeys(["t0", "t1", "t2", "t3"], 2),
                                "mem": {"t0": 1, "t1": 2, "t2": 3, "t3": 4}}
    data["containerDimensions"] = {"cpu": {"h0": 4, "h1": 8}, "mem": {"h0": 9, "h1": 9}}
    data["scopes"], data["scopeDimensions"], data["constraints"] = {}, {}, []
    data["goals"] = [{"spec": {"balanceSpec": {"dimension": "cpu"}}}]
    scenario = parse_scenario(data)
    assert scenario.model.dimensions() == {"cpu"}
    assert len(CpBuilder(scenario.problem).classes.members) == 4  # mem tells them apart
    builder, _ = compile_model(scenario.problem, scenario.model)
    assert len(builder.classes.members) == 1
    with pytest.raises(InternalError, match="mem"):
        builder.var_values("mem")


def test_every_spec_names_its_dimension_in_one_field() -> None:
    """Spec.dimensions reads the ``dimension`` field: a spec type reading a dimension under
    another name would let objects it tells apart share a class, unless it says so in its
    own ``dimensions``."""
    for arm, spec_type in REGISTRY.items():
        fields = [f.name for f in dataclasses.fields(spec_type) if "dim" in f.name.lower()]
        own = spec_type.dimensions is not Spec.dimensions
        assert fields in ([], ["dimension"]) or own, arm
