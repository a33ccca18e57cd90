"""TopologySpreadSpec (docs/semantics.md#topologyspread), this project's own spec: values
by hand, the evaluator against a plain recount of the skew on random assignments, the
optimum against enumeration on random tiny scenarios, compiled objective against the
evaluator, bad input, and the wheel bridge refusing it (no wheel parity is possible)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from spec_checks import (
    PARTITION,
    check_compiled_agrees,
    items_of,
    pick_filter,
    scopes_of,
    spec_scenario,
    value_at,
)
from test_bruteforce import check_against_enumeration

from cpsat_rebalancer import InputError, evaluate, parse_scenario
from cpsat_rebalancer.peer.bridge import to_wheel_spec

ARM = "topologySpreadSpec"
COST, STATE = 100.0, 10000.0  # the default invalidCost / invalidState


def approx(x: float):
    return pytest.approx(x, rel=1e-12, abs=1e-15)


def small(**fields: Any) -> dict[str, Any]:
    """Zones z0 = {h0}, z1 = {h1, h2}, z2 = {h3}; group g = {a, b, c, d}, k = {e}; a b c
    on h0, d and e on h1: g counts 3, 1, 0 per zone, k 0, 1, 0."""
    return {
        "objectName": "task", "containerName": "host",
        "assignment": {"h0": ["a", "b", "c"], "h1": ["d", "e"], "h2": [], "h3": []},
        "objectDimensions": {"cpu": {"a": 2, "b": 1, "c": 1, "d": 0.5, "e": 1}},
        "scopes": {"zone": {"h0": "z0", "h1": "z1", "h2": "z1", "h3": "z2"}},
        "partitions": {"p": {"g": ["a", "b", "c", "d"], "k": ["e"]}},
        "goals": [{"spec": {ARM: {"scope": "zone", "partition": "p", **fields}}}],
    }


@pytest.mark.parametrize("fields, expected", [
    ({}, 2.0),  # g: 3 - 0 - 1 in z0; k: 1 - 0 - 1
    ({"maxSkew": 2}, 1.0),
    ({"maxSkew": 0}, 3 + 1 + 1.0),  # g: 3 + 1; k: 1
    ({"maxSkew": 1.5}, 1.5),
    ({"filter": {"itemsBlacklist": ["z2"]}}, 1.0),  # g: min 1, 3 - 1 - 1; k: min 0
    ({"filter": {"itemsWhitelist": ["z0"]}}, 0.0),  # one domain: its own minimum
    ({"filter": {"itemsWhitelist": ["z0"]}, "minDomains": 2}, 2.0),  # the minimum is 0
    ({"filter": {"itemsBlacklist": ["z2"]}, "minDomains": 3}, 2.0 + 0.0),  # g: 2 + 0; k: 0
    ({"filter": {"itemsBlacklist": ["z2"]}, "minDomains": 2}, 1.0),
    ({"dimension": "cpu"}, 3.0),  # g: 4 - 0 - 1, 0.5 - 0 - 1; k: 1 - 0 - 1
])
def test_values(fields: dict, expected: float) -> None:
    assert value_at(small(**fields)).goals[0].value == approx(expected)


def test_the_host_scope_and_moves() -> None:
    """Per host g counts 3, 1, 0, 0: a to h2 gives 2, 1, 1, 0 (one over), then b to h3
    gives 1, 1, 1, 1."""
    data = small(scope="host")
    assert value_at(data).goals[0].value == approx(2.0)
    assert value_at(data, {"a": "h2"}).goals[0].value == approx(1.0)
    assert value_at(data, {"a": "h2", "b": "h3"}).goals[0].value == approx(0.0)


def test_a_constraint_has_one_expression_per_group_and_domain() -> None:
    """SOFT: g's z0 is 2 over (3 - 0 - 1), nothing else: one broken expression."""
    data = small()
    data["constraints"] = [{"spec": data.pop("goals")[0]["spec"], "policy": "SOFT"}]
    constraint = value_at(data).constraints[0]
    assert constraint.violation == approx(2.0)
    assert constraint.soft == approx(COST * 2 + STATE * 1)


def recount(data: dict[str, Any], body: dict[str, Any], final: dict[str, str]) -> float:
    """Σ over groups and domains of (count - minimum - maxSkew)⁺, from the dicts alone."""
    scope = body.get("scope") or "host"
    hosts = list(data["assignment"])
    domain = {h: h for h in hosts} if scope == "host" else data["scopes"][scope]
    domains = sorted(set(domain.values()))
    chosen = body.get("filter") or {}
    if "itemsWhitelist" in chosen:
        domains = [d for d in domains if d in chosen["itemsWhitelist"]]
    if "itemsBlacklist" in chosen:
        domains = [d for d in domains if d not in chosen["itemsBlacklist"]]
    dimension = body.get("dimension")
    total = 0.0
    for members in data["partitions"][body["partition"]].values():
        count = dict.fromkeys(domains, 0.0)
        for obj in members:
            where = domain.get(final[obj])
            if where in count:
                size = data["objectDimensions"][dimension].get(obj, 1.0) if dimension else 1.0
                count[where] += size
        floor = 0.0 if len(domains) < body.get("minDomains", 1) or not domains \
            else min(count.values())
        total += sum(max(0.0, c - floor - body.get("maxSkew", 1)) for c in count.values())
    return total


def make_spec(rng: random.Random, data: dict[str, Any], role: str) -> dict[str, Any]:
    scope = rng.choice(scopes_of(data))
    spec: dict[str, Any] = {"scope": scope, "partition": PARTITION,
                            "maxSkew": rng.choice([0, 1, 1, 2, 0.5])}
    if rng.random() < 0.3:
        spec["minDomains"] = rng.choice([1, 2, 3, 5])
    if rng.random() < 0.25:
        spec["dimension"] = rng.choice(["cpu", "mem"])
    chosen = pick_filter(rng, items_of(data, scope))
    if chosen:
        spec["filter"] = chosen
    return spec


def scenario(seed: int, **kwargs: Any) -> dict[str, Any]:
    return spec_scenario(ARM, make_spec, seed, **kwargs)


@pytest.mark.parametrize("seed", range(30))
def test_the_evaluator_equals_a_plain_recount(seed: int) -> None:
    data = scenario(seed)
    parsed = parse_scenario(data)
    problem = parsed.problem
    rng = random.Random(seed)
    goals = [k for k, g in enumerate(data["goals"]) if ARM in g.get("spec", {})]
    for _ in range(5):
        final = np.array([rng.randrange(problem.num_containers)
                          for _ in range(problem.num_objects)])
        where = {problem.objects[o]: problem.containers[c] for o, c in enumerate(final)}
        evaluation = evaluate(problem, parsed.model, final)
        for k in goals:
            expected = recount(data, data["goals"][k]["spec"][ARM], where)
            assert evaluation.goals[k].value == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("seed", range(40))
def test_random_scenarios_match_enumeration(seed: int) -> None:
    check_against_enumeration(scenario(seed), seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1000, 1040))
def test_larger_random_scenarios_match_enumeration(seed: int) -> None:
    check_against_enumeration(scenario(seed, max_objects=7), seed)


@pytest.mark.parametrize("seed", range(20))
def test_compiled_objective_matches_the_evaluator(seed: int) -> None:
    check_compiled_agrees(scenario(seed), seed)


def test_the_wheel_bridge_refuses_it_by_name() -> None:
    with pytest.raises(InputError) as info:
        to_wheel_spec({ARM: {"scope": "zone", "partition": "p"}}, "spread")
    assert info.value.path == ARM


@pytest.mark.parametrize("fields, path", [
    ({"partition": "nope"}, "partition"),
    ({"scope": "rack"}, "scope"),
    ({"dimension": "disk"}, "dimension"),
    ({"maxSkew": -1}, "maxSkew"),
    ({"maxSkew": "one"}, "maxSkew"),
    ({"minDomains": 0}, "minDomains"),
    ({"minDomains": 1.5}, "minDomains"),
    ({"filter": {"itemsWhitelist": ["z9"]}}, "filter.itemsWhitelist[0]"),
    ({"colour": "red"}, "colour"),
])
def test_bad_input_names_the_field(fields: dict, path: str) -> None:
    with pytest.raises(InputError) as info:
        parse_scenario(small(**fields))
    assert info.value.path == f"goals[0].spec.{ARM}.{path}"
