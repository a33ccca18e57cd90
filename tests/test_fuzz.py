"""Random and mutated scenarios either solve (passing the independent result check) or raise
InputError: never another exception, never a hang."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from randomized import random_scenario

from cpsat_rebalancer import InputError, parse_scenario
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve.pipeline import solve_model

OPTIONS = SolverOptions(time_limit=5.0, workers=1)

weird_values = st.one_of(
    st.none(), st.booleans(), st.integers(-10**20, 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1e-300, 1e300, 1e12, 1e-6, math.nan, math.inf, -0.0]),
    st.text(max_size=8), st.sampled_from(["", "h0", "t0", "cpu", "ΩΩ", "💥", "host", "SQUARES"]),
    st.lists(st.integers(0, 3), max_size=3), st.dictionaries(st.text(max_size=3),
                                                             st.integers(), max_size=2),
)


def leaves(node: Any, path: tuple = ()) -> list[tuple]:
    """Every (container, key) position in a nested dict/list structure."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            found.append((node, key))
            found += leaves(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.append((node, index))
            found += leaves(value, path + (index,))
    return found


mutation = st.tuples(st.sampled_from(["replace", "delete", "add", "rename"]),
                     st.integers(0, 10**6), weird_values)


def mutate(data: dict, mutations: list) -> dict:
    data = copy.deepcopy(data)
    for kind, where, value in mutations:
        spots = leaves(data)
        if not spots:
            break
        parent, key = spots[where % len(spots)]
        if kind == "replace":
            parent[key] = value
        elif kind == "delete":
            del parent[key]
        elif kind == "add" and isinstance(parent, dict):
            parent[str(value)[:10]] = value
        elif kind == "rename" and isinstance(parent, dict):
            parent[str(value)[:10]] = parent.pop(key)
    return data


def solve_or_reject(data: Any) -> None:
    try:
        scenario = parse_scenario(data)
    except InputError:
        return
    try:
        solve_model(scenario.problem, scenario.model, OPTIONS)
    except InputError:  # some problems only show when the model is built (magnitudes)
        return


FUZZ = settings(max_examples=500, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(seed=st.integers(0, 10**6), mutations=st.lists(mutation, min_size=1, max_size=3))
def test_mutated_scenarios_solve_or_raise_input_error(seed: int, mutations: list) -> None:
    solve_or_reject(mutate(random_scenario(seed, max_objects=4), mutations))


@settings(max_examples=100, deadline=None, derandomize=True)
@given(data=st.recursive(weird_values, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(
        ["assignment", "goals", "constraints", "objectDimensions", "h0", "spec",
         "balanceSpec", "scopes"]), inner, max_size=3)), max_leaves=10))
def test_arbitrary_structures_never_crash(data: Any) -> None:
    solve_or_reject(data)


@pytest.mark.slow
@settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), mutations=st.lists(mutation, min_size=1, max_size=5))
def test_many_mutated_scenarios(seed: int, mutations: list) -> None:
    solve_or_reject(mutate(random_scenario(seed, max_objects=5), mutations))
