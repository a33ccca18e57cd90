"""The load relaxation: its bound never exceeds a bucket's optimum (enumerated on tiny
scenarios), and on balance instances whose optimum is positive the repair to its loads
reaches that bound, which is the optimum a plain solve (no accelerators) proves. Its floor
on moves never exceeds the fewest moves of any assignment the hard rules allow."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from ortools.sat.python import cp_model
from randomized import brute_force, random_scenario

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.cpsat.builder import CpBuilder
from cpsat_rebalancer.cpsat.linear import lin_sum
from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.generators import balance_instance, scale_instance
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve.accelerate.relaxation import load_relaxation, moves_floor
from cpsat_rebalancer.solve.accelerate.repair import load_caps, repair, shed_counts
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.moves import start_excluded
from cpsat_rebalancer.solve.pipeline import solve_model
from cpsat_rebalancer.solve.session import Session


@pytest.mark.parametrize("seed", range(60))
def test_moves_floor_never_exceeds_the_fewest_moves(seed: int) -> None:
    data = random_scenario(seed, max_objects=5, groups=seed % 3 == 0)
    data["goals"].append({"spec": {"minimizeMovementSpec": {"name": "moves"}}})
    scenario = parse_scenario(data)
    builder, _ = compile_model(scenario.problem, scenario.model)
    feasible = brute_force(scenario)
    floor = moves_floor(builder, 10.0, 1, 0)
    if not feasible or floor is None:
        return
    fewest = min(int((final != scenario.problem.initial).sum()) for final, _ in feasible)
    assert floor <= fewest, f"seed {seed}: floor {floor} > fewest moves {fewest}"


def test_moves_floor_couples_the_containers_of_a_frozen_linear_balance() -> None:
    """A LINEAR balance frozen above 0 caps the total excess, not each container: the move
    cuts (each container's limit alone) say little, the floor over the loads much more,
    and it stays within the optimum a full solve proves."""
    scenario = parse_scenario(balance_instance(60, 6, "LINEAR", seed=5))
    problem, model = scenario.problem, scenario.model
    result = solve_model(problem, model, SolverOptions(workers=2, seed=0))
    assert result.status == "OPTIMAL" and result.buckets[0].objective > 0
    builder, buckets = compile_model(problem, model)
    form = builder.integerize(lin_sum(buckets[0].terms))
    level = round(result.buckets[0].objective * float(form.factor))
    builder.cp.add(form.expr <= level)
    floor = moves_floor(builder, 10.0, 2, 0)
    assert floor is not None and load_caps_floor(builder) < floor
    assert floor <= result.buckets[1].objective


@pytest.mark.parametrize("seed", [0, 1, 5, 9, 12, 17])  # each has a feasible assignment
def test_moves_floor_drops_a_bound_a_capped_search_refutes(seed: int) -> None:
    """CP-SAT has stated a relaxation OPTIMAL above a point it accepts: the floor's search
    is made to claim one move more than the fewest any assignment needs, and the floor
    checks that claim with a search capped below it instead of reporting it."""
    data = random_scenario(seed, max_objects=5)
    data["goals"].append({"spec": {"minimizeMovementSpec": {"name": "moves"}}})
    scenario = parse_scenario(data)
    feasible = brute_force(scenario)
    assert feasible
    fewest = min(int((final != scenario.problem.initial).sum()) for final, _ in feasible)
    calls = []

    def claim_too_much(solver: cp_model.CpSolver, cp: cp_model.CpModel) -> int:
        calls.append(cp)
        if len(calls) > 1:
            return solver.solve(cp)
        false = cp.clone()
        objective = false.proto.objective
        false.add(sum(coef * false.get_int_var_from_proto_index(var)
                      for var, coef in zip(objective.vars, objective.coeffs))
                  >= fewest + 1)
        return solver.solve(false)

    builder, _ = compile_model(scenario.problem, scenario.model)
    floor = moves_floor(builder, 10.0, 1, 0, run=claim_too_much)
    assert len(calls) == 2, "the raised bound was not checked"
    assert floor is not None and floor <= fewest


def load_caps_floor(builder: CpBuilder) -> int:
    """What the move cuts give: each container sheds under its own limit."""
    return int(shed_counts(builder, load_caps(builder)).sum())


def test_a_count_of_used_containers_keeps_its_load_relaxation() -> None:
    """MinimizeContainers ties each used literal to the stays (redundant rows that read
    counts): the relaxation over loads leaves those rows out and still runs on a drawn
    shape's position 0 (a LINEAR balance beside a count of used hosts), where it took the
    literals for ones the assignment defines and gave up; its bound stays below the
    start's value."""
    scenario = parse_scenario(random_shape_scenario(200, 10, 18))
    builder, buckets = compile_model(scenario.problem, scenario.model)
    assert builder.count_links
    form = builder.integerize(lin_sum(buckets[0].terms))
    relaxed = load_relaxation(builder, form, 20.0, 1, 0)
    start = evaluate(scenario.problem, scenario.model, scenario.problem.initial)
    assert relaxed is not None
    assert Fraction(relaxed.bound) / form.factor <= start.positions[0] + buckets[0].error


def pair_scenario(limit: int | None) -> dict:
    """Objects a and b (5 each) on h0, h1 empty (both of capacity 10): a LINEAR balance at
    position 0 (0 once they are apart), moves at 1; with ``limit``, a HARD capacity."""
    constraints = [] if limit is None else [{"spec": {"capacitySpec": {
        "scope": "host", "dimension": "cpu", "limit": {"type": "ABSOLUTE",
                                                       "globalLimit": limit}}},
        "policy": "HARD"}]
    return {"objectName": "task", "containerName": "host",
            "assignment": {"h0": ["a", "b"], "h1": []},
            "objectDimensions": {"cpu": {"a": 5, "b": 5}},
            "containerDimensions": {"cpu": {"h0": 10, "h1": 10}},
            "goals": [{"spec": {"balanceSpec": {"dimension": "cpu"}}, "tuplePos": 0},
                      {"spec": {"minimizeMovementSpec": {}}, "tuplePos": 1}],
            "constraints": constraints}


@pytest.mark.parametrize(("limit", "held", "frozen", "excluded"), [
    (6, ["h0", "h1"], False, True),  # the start breaks the capacity: the model says so
    (None, ["h0", "h1"], True, True),  # worse at position 0 than the held, frozen there
    (None, ["h0", "h1"], False, False),  # worse, but the model has not frozen position 0
    (None, ["h0", "h0"], True, False),  # the held is the start: nothing rules it out
])
def test_the_start_is_ruled_out_only_where_the_evaluator_and_the_model_agree(
        limit: int | None, held: list[str], frozen: bool, excluded: bool) -> None:
    """``start_excluded`` (a floor of one move): the start breaks a hard rule or is worse
    than the assignment held at an earlier position, and the frozen model, with every
    count fixed at the start, has no solution."""
    scenario = parse_scenario(pair_scenario(limit))
    problem = scenario.problem
    builder, buckets = compile_model(problem, scenario.model)
    session = Session(builder, scenario.model, SolverOptions(time_limit=10, workers=1, seed=0))
    assignment = np.asarray([problem.containers.index(h) for h in held])
    assert session.start_from(builder.counts_of(assignment))
    if frozen:
        form = builder.integerize(lin_sum(buckets[0].terms))
        level = evaluate(problem, scenario.model, assignment).positions[0]
        builder.cp.add(form.expr <= round(level * form.factor))
    assert start_excluded(session, 1, 5.0) is excluded


@pytest.mark.parametrize("seed", range(60))
def test_relaxation_never_exceeds_a_buckets_optimum(seed: int) -> None:
    data = random_scenario(seed, max_objects=5, groups=seed % 3 == 0)
    if seed % 2:
        data["goals"].append({"spec": {"minimizeMovementSpec": {"name": "moves"}}})
    assert_bounds_within_the_optimum(data, seed)


def assert_bounds_within_the_optimum(data: dict, seed: int) -> None:
    """Each bucket's relaxed bound at most its enumerated optimum, and its targets' loads
    summing to each dimension's total."""
    scenario = parse_scenario(data)
    builder, buckets = compile_model(scenario.problem, scenario.model)
    feasible = brute_force(scenario)
    for position, bucket in buckets.items():
        if bucket.leximin or not bucket.terms:
            continue
        form = builder.integerize(lin_sum(bucket.terms))
        relaxed = load_relaxation(builder, form, 10.0, 1, 0)
        if relaxed is None or not feasible:  # (a relaxation of an infeasible model may hold)
            continue
        best = min(e.positions.get(position, 0.0) for _, e in feasible)
        slack = bucket.error + form.error + 1e-9
        assert float(Fraction(relaxed.bound) / form.factor) <= best + slack, (
            f"seed {seed} position {position}: bound {relaxed.bound / form.factor} "
            f"above the optimum {best}")
        for dim, target in relaxed.targets.items():
            assert int(target.sum()) == int(builder.scale(dim).values.sum())


@pytest.mark.parametrize("formula,objects,containers,seed", [
    ("LINEAR", 60, 6, 1), ("LINEAR", 120, 8, 0), ("LINEAR", 120, 8, 2), ("MAX", 120, 8, 1),
    ("MAX", 150, 10, 0), ("SQUARES", 60, 6, 1), ("SQUARES", 120, 8, 0)])
def test_repair_to_the_relaxed_loads_is_the_optimum(formula, objects, containers, seed) -> None:
    """The instances' optimum at position 0 is positive: hosts cannot all sit at the fixed
    average, so the optimum is an exact packing (LINEAR, SQUARES: the loads the LP gives)
    or a level no presolve limit gives (MAX). SQUARES' values agree within the stated
    error of its pieces."""
    data = balance_instance(objects, containers, formula, seed=seed)
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    builder, buckets = compile_model(problem, model)
    form = builder.integerize(lin_sum(buckets[0].terms))
    relaxed = load_relaxation(builder, form, 20.0, 2, 0)
    assert relaxed is not None and relaxed.optimal
    bound = float(Fraction(relaxed.bound) / form.factor)
    assert bound > 0
    plain = solve_model(problem, model, SolverOptions(workers=2),
                        accelerate=False).buckets[0]
    assert plain.status == "OPTIMAL"
    error = buckets[0].error + form.error + 1e-9
    assert bound == pytest.approx(plain.objective, abs=error)
    caps = load_caps(builder)
    limits = {**caps, **relaxed.targets} if formula != "MAX" else load_caps(
        builder, [(form.expr, relaxed.bound)])
    counts = repair(builder, limits, exact=formula != "MAX")
    assert counts is not None
    repaired = evaluate(problem, model, builder.decode(counts))
    assert repaired.feasible
    assert repaired.positions[0] == pytest.approx(plain.objective, abs=error)
    # and the chain, which tries this first, proves that optimum without a search
    chained = solve_model(problem, model, SolverOptions(time_limit=30, workers=2)).buckets[0]
    assert chained.status == "OPTIMAL"
    assert chained.objective == pytest.approx(plain.objective, abs=error)
    assert np.isclose(chained.bound, bound)



def _rack_balance(seed: int, allowance: float | None) -> dict:
    """A host balance over two racks, the hot hosts in one: with ``allowance``, a HARD rule
    on the cpu that changes rack (at most that much)."""
    data = balance_instance(40, 6, "LINEAR", seed=seed)
    data["goals"] = data["goals"][:1]
    cpu, caps = data["objectDimensions"]["cpu"], data["containerDimensions"]["cpu"]
    util = {h: sum(cpu[o] for o in data["assignment"].get(h, [])) / caps[h] for h in caps}
    hosts = sorted(caps, key=lambda h: -util[h])
    data["scopes"] = {"rack": {h: "hot" if i < 3 else "cold" for i, h in enumerate(hosts)}}
    if allowance is not None:
        data["constraints"].append({"spec": {"minimizeMovementSpec": {
            "name": "rack_moves", "scope": "rack", "dimension": "cpu", "doNotNormalize": True,
            "allowance": allowance}}, "policy": "HARD"})
    return data


def _relaxed_bound(data: dict) -> float:
    scenario = parse_scenario(data)
    builder, buckets = compile_model(scenario.problem, scenario.model)
    form = builder.integerize(lin_sum(buckets[0].terms))
    relaxed = load_relaxation(builder, form, 20.0, 2, 0)
    assert relaxed is not None
    return float(Fraction(relaxed.bound) / form.factor)


@pytest.mark.parametrize("seed,allowance", [(0, 0), (1, 4), (2, 12), (3, 0)])
def test_a_movement_rule_limits_how_far_the_relaxed_loads_go(seed: int,
                                                             allowance: float) -> None:
    """A rule on what changes rack bounds how much each rack's load can rise: what stayed
    in an item is part of its load (the relaxation reads no counts, so it is stated). The
    bound is then the optimum a plain solve proves, well above the bound without the rule
    (where the cold rack takes the hot one's load)."""
    ruled = parse_scenario(_rack_balance(seed, allowance))
    plain = solve_model(ruled.problem, ruled.model, SolverOptions(workers=2),
                        accelerate=False).buckets[0]
    assert plain.status == "OPTIMAL"
    bound = _relaxed_bound(_rack_balance(seed, allowance))
    assert bound == pytest.approx(plain.objective, abs=1e-9)
    assert bound > _relaxed_bound(_rack_balance(seed, None)) + 0.01


@pytest.mark.parametrize("seed", range(40))
def test_a_relaxation_under_a_movement_rule_never_exceeds_the_optimum(seed: int) -> None:
    """Random tiny scenarios with a HARD movement rule of a random scope, dimension and
    allowance: each bucket's relaxed bound at most its enumerated optimum."""
    data = random_scenario(seed, max_objects=5)
    rng = np.random.default_rng(seed)
    scope = str(rng.choice(["host", *data.get("scopes", {})]))
    data["constraints"].append({"spec": {"minimizeMovementSpec": {
        "name": "rule", "scope": scope, "dimension": str(rng.choice(["cpu", "mem"])),
        "doNotNormalize": True, "allowance": float(rng.choice([0, 1, 2.5, 4]))}},
        "policy": "HARD"})
    assert_bounds_within_the_optimum(data, seed)


def test_a_bound_cp_sat_raised_alone_is_checked_below() -> None:
    """CP-SAT states this relaxation OPTIMAL above a point it accepts
    (benchmarks/cpsat_false_bound.py): a search capped below its bound finds one, and the
    relaxation falls back to what its LP proved, at most the enumerated optimum."""
    data = random_shape_scenario(4, 2, 395)
    scenario = parse_scenario(data)
    builder, buckets = compile_model(scenario.problem, scenario.model)
    form = builder.integerize(lin_sum(buckets[1].terms))
    relaxed = load_relaxation(builder, form, 10.0, 1, 0)
    best = min(e.positions[1] for _, e in brute_force(scenario))
    assert relaxed is not None
    assert float(Fraction(relaxed.bound) / form.factor) <= best + buckets[1].error + 1e-9


def test_a_rack_balance_relaxes_to_host_loads() -> None:
    """An objective on a custom scope's loads (racks) reads the containers' loads through
    the scope's links: the relaxation sets host targets for it (it returned nothing before),
    the chain proves the rack balance at the plain solve's optimum and then the host
    balance, which a plain solve does not prove in a minute."""
    data = scale_instance("racks", 400, 40, seed=0)  # 3 racks
    data["goals"] = data["goals"][:3]  # the rack and host balances, without movement
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    builder, buckets = compile_model(problem, model)
    form = builder.integerize(lin_sum(buckets[0].terms))
    relaxed = load_relaxation(builder, form, 20.0, 2, 0)
    assert relaxed is not None and relaxed.optimal and set(relaxed.targets) == {"cpu"}
    assert relaxed.targets["cpu"].sum() == builder.scale("cpu").values.sum()
    racks_only = parse_scenario({**data, "goals": data["goals"][:1]})
    plain = solve_model(racks_only.problem, racks_only.model, SolverOptions(workers=2),
                        accelerate=False).buckets[0]
    assert plain.status == "OPTIMAL" and plain.objective > 0
    chained = solve_model(problem, model, SolverOptions(time_limit=30, workers=2)).buckets
    assert [bucket.status for bucket in chained] == ["OPTIMAL", "OPTIMAL"]
    assert chained[0].objective == pytest.approx(plain.objective, abs=1e-9)
    assert chained[1].bound == pytest.approx(chained[1].objective, abs=1e-9)
