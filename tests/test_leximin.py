"""IDEAL alone in its bucket, solved leximin one distinct value of the sorted vector at a
time (the smallest value all items but those above can stay under, then the fewest items
there): proven whole on instances far past enumeration, the same vector with and without
the accelerators, and its first entries equal to an independent model's."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from ortools.sat.python import cp_model
from test_bruteforce import check_against_enumeration

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.generators import balance_instance
from cpsat_rebalancer.result import OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.pipeline import solve_model

OPTIONS = SolverOptions(workers=2, seed=0)


def ideal_alone(objects: int, containers: int, seed: int) -> dict:
    data = balance_instance(objects, containers, "IDEAL", seed=seed)
    data["goals"] = data["goals"][:1]
    return data


def largest_and_how_many(data: dict) -> tuple[Fraction, int]:
    """The smallest largest relative cpu utilization any assignment within the hosts'
    capacities reaches, and the fewest hosts at it: a model of its own, with counts per
    cpu size per host, built from the scenario's data alone."""
    cpu = data["objectDimensions"]["cpu"]
    capacity = data["containerDimensions"]["cpu"]
    hosts = list(capacity)
    sizes = sorted({int(v) for v in cpu.values()})
    common = 1
    for h in hosts:
        common = common * int(capacity[h]) // math.gcd(common, int(capacity[h]))

    def build() -> tuple[cp_model.CpModel, list]:
        model = cp_model.CpModel()
        loads, raw = [], []
        held = {s: [] for s in sizes}
        for h in hosts:
            counts = {s: model.new_int_var(0, len(cpu), "") for s in sizes}
            for s in sizes:
                held[s].append(counts[s])
            load = model.new_int_var(0, int(capacity[h]), "")
            model.add(load == sum(s * counts[s] for s in sizes))
            raw.append(load)
            loads.append(load * (common // int(capacity[h])))  # utilization times common
        for s in sizes:
            model.add(sum(held[s]) == sum(1 for v in cpu.values() if int(v) == s))
        # implied, and what lets CP-SAT prove a level too low: the loads' total is fixed
        model.add(sum(raw) == int(sum(cpu.values())))
        return model, loads

    def solve(model: cp_model.CpModel) -> cp_model.CpSolver:
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 2
        solver.parameters.max_time_in_seconds = 60
        assert solver.solve(model) == cp_model.OPTIMAL
        return solver

    model, loads = build()
    top = model.new_int_var(0, 10 * common, "")
    for load in loads:
        model.add(load <= top)
    model.minimize(top)
    largest = round(solve(model).objective_value)
    model, loads = build()
    there = []
    for load in loads:
        mark = model.new_bool_var("")
        model.add(load <= largest)
        model.add(load <= largest - 1).only_enforce_if(~mark)
        there.append(mark)
    model.minimize(sum(there))
    return Fraction(largest, common), round(solve(model).objective_value)


@pytest.mark.parametrize("objects, containers, seed", [(200, 10, 0), (240, 12, 3)])
def test_leximin_is_proven_whole_and_matches_an_independent_model(objects, containers, seed):
    data = ideal_alone(objects, containers, seed)
    scenario = parse_scenario(data)
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    bucket = result.buckets[0]
    assert bucket.status == OPTIMAL and bucket.leximin_levels == containers
    vector = result.final_evaluation.leximin[0]
    largest, how_many = largest_and_how_many(data)
    assert vector[0] == pytest.approx(float(largest), abs=1e-12)
    assert sum(1 for u in vector if u >= float(largest) - 1e-12) == how_many
    # the accelerators (relaxation, repairs) change how, not what
    plain = solve_model(scenario.problem, scenario.model, OPTIONS, accelerate=False)
    assert plain.buckets[0].status == OPTIMAL
    assert plain.final_evaluation.leximin[0] == pytest.approx(vector, abs=1e-12)


def test_the_scalar_compiled_for_a_polish_leaves_the_model() -> None:
    """IDEAL's scalar is compiled for the polish's own searches (``CpBuilder.scratch``):
    afterwards the model constrains exactly what it did before, the caches and stated errors
    are as before, and CP-SAT accepts the model."""
    scenario = parse_scenario(ideal_alone(12, 4, 3))
    builder, buckets = compile_model(scenario.problem, scenario.model)
    proto = builder.cp.Proto()
    before = [str(c) for c in proto.constraints]
    errors, utils = dict(builder.errors), dict(builder._utils)
    (bucket,) = [b for b in buckets.values() if b.scalar]
    with builder.scratch():
        for spec in bucket.scalar:
            spec.compile_goal(builder)
        assert len(proto.constraints) > len(before)
    after = [str(c) for c in proto.constraints]
    assert after[:len(before)] == before and not any(after[len(before):])
    assert builder.errors == errors and builder._utils == utils
    assert builder.cp.validate() == ""


@pytest.mark.parametrize("capacities", [
    {"h0": 29347800000000.0, "h1": 27000000000000.0, "h2": 20192325070923.6},
    {"h0": 1.5e10, "h1": 7.9e9, "h2": 5.23456789123e9},
])
def test_a_leximin_on_loads_divided_into_quotients_repairs_from_the_assignment_held(
        capacities: dict[str, float]) -> None:
    """Sizes near 1e12 whose utilizations need load quotients (``integerize(divide=True)``):
    the leximin's items are built after the last solve, and what reads them at the
    assignment held (the exact closure, the repairs) completes it first (they read past
    the values held before). The answer is the enumerated leximin optimum, proven."""
    scale = 1e12 if capacities["h0"] > 1e12 else 1e9
    sizes = {"t0": 1.470041603143, "t1": 1.476976977905, "t2": 4.80453253277,
             "t3": 5.080252046798, "t4": 9.971100204798}
    data = {"assignment": {"h0": ["t1", "t2", "t4"], "h1": [], "h2": ["t0", "t3"]},
            "objectDimensions": {"cpu": {o: s * scale for o, s in sizes.items()}},
            "containerDimensions": {"cpu": capacities},
            "goals": [{"spec": {"balanceSpec": {"dimension": "cpu", "formula": "IDEAL"}}}]}
    check_against_enumeration(data, "quotients")
