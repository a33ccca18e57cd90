"""Random and mutated scenarios either solve (passing the independent result check) or raise
InputError: never another exception, never a hang."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from randomized import random_scenario

from cpsat_rebalancer import InputError, parse_scenario
from cpsat_rebalancer.api import solve_problem
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


# ---- malformed input: mutations of the bundled scenarios --------------------------------
# Each mutation breaks the input the ways users and callers do: a wrong type, a removed key,
# a key that is not a string (YAML reads ``1:`` as an integer), nesting too deep to recurse
# through, numbers too large, tiny, negative, NaN or infinite, numpy scalars and arrays.
# parse_scenario then solve_problem must solve or raise InputError: never another exception.

BUNDLED = sorted((Path(__file__).parents[1] / "scenarios").glob("seed_*.json"))
SEEDS = [json.loads(path.read_text()) for path in BUNDLED]
ARGUMENTS = SolverOptions(time_limit=2, workers=1)


def nested(depth: int, inner: Any = 1) -> Any:
    for level in range(depth):
        inner = [inner] if level % 2 else {"x": inner}
    return inner


NUMPY_SCALARS = [np.int64(3), np.int32(-4), np.uint8(7), np.float64(2.5), np.float32(1e30),
                 np.float64(math.nan), np.float64(-math.inf), np.bool_(True), np.int64(2**62)]
non_string_keys = st.one_of(st.integers(-3, 3), st.none(), st.booleans(),
                            st.floats(allow_nan=True), st.tuples(st.integers(0, 2)),
                            st.sampled_from(NUMPY_SCALARS[:4]))
malformed_numbers = st.one_of(
    st.sampled_from(NUMPY_SCALARS),
    st.sampled_from([0, -1, -0.5, 1e17, 1e18, 1.1e18, 1e19, 1e100, 1e300, 1e308, -1e308,
                     5e-324, 1e-300, 1e-200, 1e-30, 1e-12, 2**63, -(2**63), 10**30, 10**400,
                     math.nan, math.inf, -math.inf]),
    st.floats(allow_nan=True, allow_infinity=True),
)
malformed_values = st.one_of(
    weird_values,
    malformed_numbers,
    st.integers(50, 1500).map(nested),
    st.dictionaries(non_string_keys, st.integers(0, 3), min_size=1, max_size=2),
    st.lists(st.sampled_from(["h0", "host0", "task0", "t0", 1]), max_size=3).map(np.array),
)
KINDS = ["replace", "delete", "rekey", "wrap", "numpy", "nest", "tuple", "number", "number"]
malformation = st.tuples(st.sampled_from(KINDS), st.integers(0, 10**6), malformed_values,
                         non_string_keys, malformed_numbers)


def is_plain_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def spots(data: Any, limit: int = 12) -> list[tuple]:
    """Every (container, key) position down to ``limit`` levels (iterative: a mutation may
    have nested a value far deeper than Python recurses)."""
    found, stack = [], [(data, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            continue
        items = (node.items() if isinstance(node, dict)
                 else enumerate(node) if isinstance(node, list) else ())
        for key, value in items:
            found.append((node, key))
            stack.append((value, depth + 1))
    return found


def as_numpy(value: Any) -> Any:
    if isinstance(value, bool):
        return np.bool_(value)
    if isinstance(value, int):
        return np.int64(value) if abs(value) < 2**63 else value
    if isinstance(value, float):
        return np.float64(value)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return np.array(value, dtype=object if not value else None)
    return value


def malform(data: dict, mutations: list) -> dict:
    data = copy.deepcopy(data)
    for kind, where, value, key_value, number in mutations:
        found = spots(data)
        if kind == "number":  # a number where a number is: the field's type stays right
            found = [(p, k) for p, k in found if is_plain_number(p[k])]
            value, kind = number, "replace"
        if not found:
            continue
        parent, key = found[where % len(found)]
        if kind == "replace":
            parent[key] = value
        elif kind == "delete":
            del parent[key]
        elif kind == "rekey" and isinstance(parent, dict):
            parent[key_value] = parent.pop(key)
        elif kind == "wrap":
            parent[key] = [parent[key]] if where % 2 else {"x": parent[key]}
        elif kind == "numpy":
            parent[key] = as_numpy(parent[key])
        elif kind == "nest":
            parent[key] = nested(60 + where % 1000, parent[key])
        elif kind == "tuple" and isinstance(parent[key], list):
            parent[key] = tuple(parent[key])
    return data


def parse_and_solve_or_reject(data: Any) -> None:
    try:
        scenario = parse_scenario(data)
        solve_problem(scenario.problem, scenario.model, ARGUMENTS)
    except InputError as error:
        assert str(error)  # the message is built (the value shown without recursing)


MALFORMED = settings(max_examples=300, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@MALFORMED
@given(seed=st.sampled_from(range(len(SEEDS))),
       mutations=st.lists(malformation, min_size=1, max_size=3))
def test_malformed_bundled_scenarios_solve_or_raise_input_error(seed: int,
                                                                mutations: list) -> None:
    parse_and_solve_or_reject(malform(SEEDS[seed], mutations))


@pytest.mark.slow
@settings(max_examples=3000, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(seed=st.sampled_from(range(len(SEEDS))),
       mutations=st.lists(malformation, min_size=1, max_size=5))
def test_many_malformed_bundled_scenarios(seed: int, mutations: list) -> None:
    parse_and_solve_or_reject(malform(SEEDS[seed], mutations))


# ---- what the fuzzers found: each once a traceback or an InternalError -------------------
FOUND = [
    # a huge weight on a goal fixed at 0: its coefficient reached CP-SAT unbounded
    (2, ("goals", 0, "weight"), 1e100, None),
    # a tiny weight or bound: exact factors beyond a float (an OverflowError)
    (3, ("goals", 0, "weight"), 5e-324, None),
    (52, ("goals", 0, "spec", "balanceSpec", "upperBound"), 1e-300, None),
    # 1e-9 beside 5 is exact at the scale 10^9; presolve then empties a domain (IndexError)
    (11, ("objectDimensions", "cpu", "t2"), 1e-9, None),
    # a size taken for 0 changed a step at 0 (the evaluator disagreed: an InternalError)
    (42145, ("objectDimensions", "cpu", "t0"), 5e-324, "objectDimensions.cpu.t0"),
    # a size above 2^50: the freeze's slack beyond 64 bits (a TypeError from CP-SAT)
    (42145, ("objectDimensions", "cpu", "t1"), 1501199875790160.0, None),
]


@pytest.mark.parametrize("seed, path, value, error_path", FOUND)
def test_what_the_fuzzers_found(seed: int, path: tuple, value: float,
                                error_path: str | None) -> None:
    data = random_scenario(seed, max_objects=4)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    scenario = parse_scenario(data)
    if error_path is not None:
        with pytest.raises(InputError) as info:
            solve_problem(scenario.problem, scenario.model, ARGUMENTS)
        assert info.value.path == error_path
        return
    result = solve_problem(scenario.problem, scenario.model, ARGUMENTS)
    assert result.status in ("OPTIMAL", "FEASIBLE", "INFEASIBLE")
