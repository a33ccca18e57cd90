"""Dynamic object dimensions, AssignmentAffinitiesSpec, MinimizeContainersSpec, and the
accelerators that come with them (container symmetry, bin-packing bounds, bound probing)."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest
from ortools.linear_solver import pywraplp
from ortools.sat import sat_parameters_pb2
from ortools.sat.python import cp_model
from test_bruteforce import check_against_enumeration, check_sound_against_enumeration

from cpsat_rebalancer import ProblemSolver
from cpsat_rebalancer.cpsat import packing_bounds
from cpsat_rebalancer.cpsat.assignment_lp import assignment_dive, forced_bounds, surviving_pairs
from cpsat_rebalancer.cpsat.linear import lin_sum
from cpsat_rebalancer.cpsat.packing_bounds import (
    dive_work,
    gilmore_gomory,
    martello_toth_l2,
    pattern_dive,
)
from cpsat_rebalancer.errors import InputError
from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.importers import (
    binpacking_scenario,
    first_fit_decreasing,
    gap_scenario,
)
from cpsat_rebalancer.peer import evaluate_with_wheel, find_peer_python
from cpsat_rebalancer.scenario import SolverOptions, parse_scenario
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve.accelerate.lp_bound import solve_lp
from cpsat_rebalancer.solve.accelerate.symmetry import interchangeable_containers
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.moves import moved_objects
from cpsat_rebalancer.solve.pipeline import solve_model
from cpsat_rebalancer.solve.probes import target_probes
from cpsat_rebalancer.solve.session import Session
from tests.randomized import brute_force

OPTIONS = SolverOptions(time_limit=20, workers=1, seed=0)


def placement_scenario(seed: int, objects: int = 5, containers: int = 3) -> dict:
    """A tiny random scenario exercising all three features at once."""
    rng = np.random.default_rng(seed)
    objs = [f"o{i}" for i in range(objects)]
    conts = [f"c{j}" for j in range(containers)]
    start = rng.integers(0, containers, objects)
    racks = {c: f"r{j % 2}" for j, c in enumerate(conts)}
    dynamic_scope = "rack" if seed % 3 == 0 else "host"
    items = sorted(set(racks.values())) if dynamic_scope == "rack" else conts
    weights = {item: {o: int(rng.integers(1, 6)) for o in objs if rng.random() < 0.8}
               for item in items}
    goals = [{"spec": {"minimizeContainersSpec": {
        "dimension": "weight" if seed % 2 else "",
        "containerCosts": {c: int(rng.integers(1, 4)) for c in conts if rng.random() < 0.5},
        **({"maxFreeLimit": int(rng.integers(1, containers + 1))} if seed % 4 == 1 else {}),
    }}, "tuplePos": 0}]
    affinities = [{"objectName": o, "scopeItemName": str(rng.choice(conts)),
                   "affinity": float(rng.integers(-3, 4))} for o in objs if rng.random() < 0.7]
    goals.append({"spec": {"assignmentAffinitiesSpec": {"affinities": affinities}},
                  "tuplePos": 1, "weight": 1 if seed % 5 else -1})
    return {
        "objectName": "task", "containerName": "host",
        "assignment": {c: [o for o, s in zip(objs, start) if s == j] for j, c in enumerate(conts)},
        "scopes": {"rack": racks},
        "dynamicObjectDimensions": {"weight": {"scope": dynamic_scope, "values": weights,
                                               "default": int(rng.integers(0, 3))}},
        "containerDimensions": {"weight": {c: int(rng.integers(5, 12)) for c in conts}},
        "constraints": [{"spec": {"capacitySpec": {"scope": "host", "dimension": "weight"}},
                         "policy": "HARD"}],
        "goals": goals,
    }


@pytest.mark.parametrize("seed", range(24))
@pytest.mark.parametrize("accelerate", [True, False])
def test_optimum_equals_brute_force(seed: int, accelerate: bool) -> None:
    scenario = parse_scenario(placement_scenario(seed))
    feasible = brute_force(scenario)
    result = solve_model(scenario.problem, scenario.model, OPTIONS, accelerate=accelerate)
    if not feasible:
        assert result.status == "INFEASIBLE"
        return
    best = min(evaluation.tuple() for _, evaluation in feasible)
    assert result.status == "OPTIMAL"
    assert result.final_evaluation.tuple() == pytest.approx(best, abs=1e-9)


def bins_scenario(sizes: list[int], capacity: int, bins: int, costs: dict | None = None,
                  start: list[int] | None = None) -> dict:
    objs = [f"i{k}" for k in range(len(sizes))]
    start = start if start is not None else [k % bins for k in range(len(sizes))]
    return {
        "objectName": "item", "containerName": "bin",
        "assignment": {f"b{b}": [o for o, s in zip(objs, start) if s == b] for b in range(bins)},
        "objectDimensions": {"size": dict(zip(objs, sizes))},
        "constraints": [{"spec": {"capacitySpec": {"dimension": "size", "limit": {
            "type": "ABSOLUTE", "globalLimit": capacity}}}, "policy": "HARD"}],
        "goals": [{"spec": {"minimizeContainersSpec": {"dimension": "size",
                                                       "containerCosts": costs or {}}}},
                  {"spec": {"minimizeMovementSpec": {}}, "tuplePos": 1}],
    }


@pytest.mark.parametrize("seed", range(12))
def test_bin_packing_with_and_without_accelerators(seed: int) -> None:
    """Symmetry breaking, volume and L2 bounds and bound probing change nothing but speed:
    the same tuple as brute force (bins, then moves: the tie-break lifts the order)."""
    rng = np.random.default_rng(100 + seed)
    sizes = rng.integers(2, 9, 6).tolist()
    scenario = parse_scenario(bins_scenario(sizes, 10, 4, start=rng.integers(0, 4, 6).tolist()))
    feasible = brute_force(scenario)
    for accelerate in (True, False):
        result = solve_model(scenario.problem, scenario.model, OPTIONS, accelerate=accelerate)
        if not feasible:
            assert result.status == "INFEASIBLE"
            continue
        best = min(evaluation.tuple() for _, evaluation in feasible)
        assert result.status == "OPTIMAL"
        assert result.final_evaluation.tuple() == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_dual_reductions_change_no_bin_packing_optimum(seed: int, tmp_path) -> None:
    """An imported bin packing (interchangeable bins: the engine turns CP-SAT's dual
    reductions off) has the enumerated optimum with and without them."""
    rng = np.random.default_rng(300 + seed)
    sizes = rng.integers(2, 9, 5).tolist()
    text = "\n".join(str(v) for v in [len(sizes), 10, *sizes]) + "\n"
    scenario = parse_scenario(binpacking_scenario(write(tmp_path, "b.txt", text)))
    builder, _ = compile_model(scenario.problem, scenario.model)
    assert builder.container_classes
    best = min(evaluation.tuple() for _, evaluation in brute_force(scenario))
    dual = SolverOptions.checked(20, 1, 0, cpsat_parameters={
        "keep_all_feasible_solutions_in_presolve": False})
    for options in (OPTIONS, dual):
        result = solve_model(scenario.problem, scenario.model, options)
        assert result.status == "OPTIMAL"
        assert result.final_evaluation.tuple() == pytest.approx(best, abs=1e-9)


def test_dual_reductions_are_off_only_where_containers_are_ordered(tmp_path) -> None:
    """CP-SAT's dual presolve reductions fight the container order (see Session.presolve):
    off with interchangeable bins, CP-SAT's default without them, the user's choice first."""
    bins = parse_scenario(binpacking_scenario(write(tmp_path, "b.txt", "4\n6\n4\n3\n3\n2\n")))
    gap = parse_scenario(gap_scenario(write(tmp_path, "g.txt",  # costs, weights, capacities
                                            "2 2\n1 2\n3 1\n2 3\n3 2\n5 6\n")))
    for scenario, ordered in ((bins, True), (gap, False)):
        builder, _ = compile_model(scenario.problem, scenario.model)
        assert bool(builder.container_classes) is ordered
        for user in ({}, {"keep_all_feasible_solutions_in_presolve": not ordered}):
            options = SolverOptions.checked(None, 1, 0, cpsat_parameters=user)
            params = sat_parameters_pb2.SatParameters()
            Session(builder, scenario.model, options).presolve(params)
            assert params.keep_all_feasible_solutions_in_presolve is (ordered if not user
                                                                     else not ordered)


def test_dynamic_dimension_values_follow_the_object() -> None:
    ps = ProblemSolver().set_object_name("item").set_container_name("agent")
    ps.set_assignment({"a0": ["i0", "i1"], "a1": ["i2"], "a2": []})
    ps.add_scope("zone", {"a0": "z0", "a1": "z1"})  # a2 is out of the scope: default
    ps.add_dynamic_object_dimension("w", "zone", {"z0": {"i0": 5, "i1": 4},
                                                  "z1": {"i0": 2, "i2": 7}}, default_value=1)
    ps.add_goal({"capacitySpec": {"dimension": "w", "limit": {"type": "ABSOLUTE",
                                                              "globalLimit": 0}}})
    scenario = ps.to_scenario()
    problem = scenario.problem
    final = np.asarray([1, 2, 0])  # i0 -> a1 (z1: 2), i1 -> a2 (out: 1), i2 -> a0 (z0: none: 1)
    assert problem.values_at("w", final).tolist() == [2, 1, 1]
    assert problem.values_at("w", problem.initial).tolist() == [5, 4, 7]
    # the goal is the excess over 0 per container: the loads themselves, normalized by the
    # average capacity (1); a0 holds i2 (1), a1 holds i0 (2), a2 holds i1 (1)
    assert evaluate(problem, scenario.model, final).goals[0].value == pytest.approx(4.0)
    assert evaluate(problem, scenario.model, problem.initial).goals[0].value == \
        pytest.approx(16.0)


def test_affinity_and_container_values_by_hand() -> None:
    ps = ProblemSolver().set_object_name("vm").set_container_name("host")
    ps.set_assignment({"h0": ["v0", "v1"], "h1": ["v2"], "h2": [], "h3": []})
    ps.add_goal({"assignmentAffinitiesSpec": {"affinities": [
        {"objectName": "v0", "scopeItemName": "h1", "affinity": 2.5},
        {"objectName": "v0", "scopeItemName": "h1", "affinity": 0.5},  # pairs add up
        {"objectName": "v1", "scopeItemName": "h0", "affinity": -4}]}})
    ps.add_goal({"minimizeContainersSpec": {"containerCosts": {"h1": 3}}})
    ps.add_goal({"minimizeContainersSpec": {"maxFreeLimit": 1,
                                            "filter": {"itemsBlacklist": ["h3"]}}})
    scenario = ps.to_scenario()
    values = [g.value for g in evaluate(scenario.problem, scenario.model,
                                        scenario.problem.initial).goals]
    # affinity: v1 sits where it has -4 -> +4; used: h0 (1) + h1 (3); free limit 1 of 3
    # filtered items: (used 2 - 3 + 1)+ = 0
    assert values == [4.0, 4.0, 0.0]
    moved = np.asarray([1, 1, 1])  # everything on h1
    values = [g.value for g in evaluate(scenario.problem, scenario.model, moved).goals]
    assert values == [-3.0, 3.0, 0.0]
    result = ps.solve(time_limit=10)
    assert result.status == "OPTIMAL"
    assert result.final_evaluation.goals[0].value == -3.0  # v0 on h1, v1 off h0


def test_packing_bounds_are_valid_and_beat_the_volume_bound() -> None:
    assert martello_toth_l2(np.asarray([6, 6, 6]), 10) == 3  # volume bound: 2
    assert martello_toth_l2(np.asarray([]), 10) == gilmore_gomory(np.asarray([]), 10) == 0
    assert gilmore_gomory(np.asarray([6, 6, 6]), 10) == 3
    rng = np.random.default_rng(7)
    for _ in range(40):
        sizes = rng.integers(1, 11, int(rng.integers(1, 7)))
        optimum = smallest_packing(sizes, 10)
        for bound in (martello_toth_l2(sizes, 10), gilmore_gomory(sizes, 10)):
            assert math.ceil(sizes.sum() / 10) <= bound <= optimum


def smallest_packing(sizes: np.ndarray, capacity: int) -> int:
    """The fewest bins, by enumerating every way to put each item in an open bin or a new
    one (tiny instances; every size fits a bin)."""
    best = len(sizes)

    def place(i: int, loads: list[int]) -> None:
        nonlocal best
        if len(loads) >= best:
            return
        if i == len(sizes):
            best = len(loads)
            return
        for b in range(len(loads)):
            if loads[b] + sizes[i] <= capacity:
                loads[b] += sizes[i]
                place(i + 1, loads)
                loads[b] -= sizes[i]
        place(i + 1, loads + [int(sizes[i])])

    place(0, [])
    return best


def test_packing_bounds_stay_valid_and_fast_for_huge_capacities() -> None:
    """The pattern knapsack spans the capacity: a common divisor is divided out (the same
    bound), a capacity still too large is coarsened (a relaxation: never above the optimum),
    and the solve stays exact."""
    rng = np.random.default_rng(5)
    for _ in range(30):
        sizes = rng.integers(1, 11, int(rng.integers(1, 7)))
        assert gilmore_gomory(sizes * 10**7, 10**8) == gilmore_gomory(sizes, 10)
        fine = sizes * 10**7 + rng.integers(0, 10**7, len(sizes))
        assert gilmore_gomory(fine, 10**8 + 7) <= smallest_packing(fine, 10**8 + 7)
    fine = np.asarray([41, 33, 29, 27, 25, 24, 21, 17]) * 10**6 + 12345
    assert pattern_dive(fine, 10**8 + 7) is None  # no exact patterns at this resolution
    scenario = parse_scenario(bins_scenario(fine.tolist(), 10**8 + 7, 8))
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == "OPTIMAL"
    assert result.final_evaluation.goals[0].value == smallest_packing(fine, 10**8 + 7)


def test_pattern_dive_packs_every_size_within_capacity() -> None:
    rng = np.random.default_rng(11)
    for _ in range(40):
        sizes = rng.integers(0, 11, int(rng.integers(1, 8)))
        bins = pattern_dive(sizes, 10)
        assert bins is not None and len(bins) == len(sizes)
        assert np.bincount(bins, weights=sizes).max() <= 10
        if sizes.any():  # bins numbered from 0, none empty, never fewer than the optimum
            used = set(bins[sizes > 0].tolist())
            assert used == set(range(len(used)))
            assert len(used) >= smallest_packing(sizes[sizes > 0], 10)
    assert pattern_dive(np.asarray([11, 3]), 10) is None  # a size that fits no bin


def every_pattern(weights: list[int], demand: list[int], capacity: int) -> list[list[int]]:
    """Every count per size within the demand that fits the capacity (empty included)."""
    if not weights:
        return [[]]
    return [[n] + tail for n in range(min(demand[0], capacity // weights[0]) + 1)
            for tail in every_pattern(weights[1:], demand[1:], capacity - n * weights[0])]


def test_gilmore_gomory_is_the_round_up_of_the_lp_over_every_pattern() -> None:
    """The exchange columns speed the column generation up but must not weaken its bound:
    it equals the round-up of the pattern LP written out with every pattern (GLOP)."""
    rng = np.random.default_rng(23)
    for _ in range(25):
        sizes = rng.integers(4, 16, int(rng.integers(3, 12)))
        weights, demand = np.unique(sizes, return_counts=True)
        patterns = every_pattern(weights.tolist(), demand.tolist(), 30)
        solver = pywraplp.Solver.CreateSolver("GLOP")
        uses = [solver.NumVar(0.0, solver.infinity(), "") for _ in patterns]
        for k, need in enumerate(demand.tolist()):
            solver.Add(sum(p[k] * x for p, x in zip(patterns, uses)) >= need)
        solver.Minimize(sum(uses))
        assert solver.Solve() == pywraplp.Solver.OPTIMAL
        assert gilmore_gomory(sizes, 30) == math.ceil(solver.Objective().Value() - 1e-6)


def test_dive_detours_reach_the_bound_where_one_dive_misses(monkeypatch) -> None:
    """One dive (no detours) packs these 15 items into 7 bins; its detours find 6, the
    Gilmore-Gomory bound, so optimal. On random instances the search is never worse than
    its first dive, and never below the optimum."""
    sizes = np.asarray([27, 27, 29, 31, 33, 33, 34, 34, 40, 43, 44, 45, 46, 57, 59])

    def bins_used(sizes: np.ndarray, detours: int) -> int:
        monkeypatch.setattr(packing_bounds, "DIVE_DISCREPANCIES", detours)
        bins = pattern_dive(sizes, 100)
        assert np.bincount(bins, weights=sizes).max() <= 100
        return len(set(bins.tolist()))

    assert gilmore_gomory(sizes, 100) == 6
    assert bins_used(sizes, 0) == 7
    assert bins_used(sizes, 2) == 6
    rng = np.random.default_rng(29)
    for _ in range(30):
        sizes = rng.integers(20, 60, int(rng.integers(4, 11)))
        found = bins_used(sizes, 2)
        assert smallest_packing(sizes, 100) <= found <= bins_used(sizes, 0)


def test_the_dive_is_sized_by_the_time_limit_and_stops_when_its_work_is_spent() -> None:
    """A longer limit buys more work, none is unbounded; with no work for a second dive
    the first still ends in a packing (on the columns at hand)."""
    assert dive_work(10) < dive_work(60) <= dive_work(None) == packing_bounds.DIVE_WORK
    sizes = np.asarray([27, 27, 29, 31, 33, 33, 34, 34, 40, 43, 44, 45, 46, 57, 59])
    bins = pattern_dive(sizes, 100, work=1)
    assert bins is not None and np.bincount(bins, weights=sizes).max() <= 100


def test_minimize_containers_proposes_the_dive_where_first_fit_decreasing_misses() -> None:
    sizes = np.asarray([6, 5, 4, 3, 3, 3])  # 6+3+3 and 5+4+3; first-fit decreasing: 3 bins
    assert len(set(first_fit_decreasing(sizes, 12).tolist())) == 3
    scenario = parse_scenario(bins_scenario(sizes.tolist(), 12, 6))  # one item per bin
    builder, _ = compile_model(scenario.problem, scenario.model)
    (start,) = builder.suggested_starts
    evaluation = evaluate(scenario.problem, scenario.model, start)
    assert evaluation.feasible and evaluation.goals[0].value == 2 == smallest_packing(sizes, 12)
    plain, _ = compile_model(scenario.problem, scenario.model, accelerate=False)
    assert plain.suggested_starts == []  # an accelerator: the answer is the same without it


@pytest.mark.parametrize("counts", [[3, 1, 4, 2], [2, 5, 1, 1, 3], [4, 4, 2]])
def test_a_held_count_of_used_containers_bounds_the_moves_in_an_lp(counts: list[int]) -> None:
    """With MinimizeContainers held at two containers fewer than the start uses (no
    capacity), GLOP's bound on the moves is the objects of the two emptiest containers,
    the fewest any assignment moves: stays keep their container used. Without those rows
    an LP kept every object home, each container's literal at its load over the whole."""
    hosts = [f"h{c}" for c in range(len(counts))]
    assignment = {h: [f"{h}t{k}" for k in range(n)] for h, n in zip(hosts, counts)}
    data = {"objectName": "task", "containerName": "host", "assignment": assignment,
            "goals": [{"spec": {"minimizeContainersSpec": {"dimension": "task_count"}},
                       "tuplePos": 0},
                      {"spec": {"minimizeMovementSpec": {"dimension": "task_count"}},
                       "tuplePos": 1}]}
    scenario = parse_scenario(data)
    builder, buckets = compile_model(scenario.problem, scenario.model)
    held = builder.integerize(lin_sum(buckets[0].terms))
    builder.cp.add(held.expr <= (len(counts) - 2) * held.factor)
    builder.cp.minimize(moved_objects(builder))
    lp = solve_lp(builder.cp, 10.0)
    assert lp is not None and lp.floor == sum(sorted(counts)[:2])


def test_interchangeable_containers_follow_the_specs() -> None:
    scenario = parse_scenario(bins_scenario([3, 4, 5], 10, 4, costs={"b3": 2}, start=[0, 0, 1]))
    problem, model = scenario.problem, scenario.model
    fixed, non_accepting = model.fixed_objects, model.non_accepting
    # MinimizeMovement reads the initial assignment: only empty containers (b2; b3 costs more)
    assert interchangeable_containers(problem, model, fixed, non_accepting) == []
    data = bins_scenario([3, 4, 5], 10, 4, costs={"b3": 2}, start=[0, 0, 1])
    data["goals"].pop()
    scenario = parse_scenario(data)
    classes = interchangeable_containers(scenario.problem, scenario.model, fixed, non_accepting)
    assert [c.tolist() for c in classes] == [[0, 1, 2]]
    data["goals"].append({"spec": {"balanceSpec": {"dimension": "size"}}})  # no roles given
    scenario = parse_scenario(data)
    assert interchangeable_containers(scenario.problem, scenario.model, fixed,
                                      non_accepting) == []
    assert scenario.model.named_objects() == set()


@pytest.mark.parametrize("data, path", [
    ({"dynamicObjectDimensions": {"w": {"scope": "rack", "values": {}}}},
     "dynamicObjectDimensions.w.scope"),
    ({"dynamicObjectDimensions": {"w": {"scope": "host", "values": {"h9": {}}}}},
     "dynamicObjectDimensions.w.values.h9"),
    ({"dynamicObjectDimensions": {"w": {"scope": "host", "values": {"h0": {"t9": 1}}}}},
     "dynamicObjectDimensions.w.values.h0.t9"),
    ({"dynamicObjectDimensions": {"w": {"scope": "host", "values": {"h0": {"t0": -1}}}}},
     "dynamicObjectDimensions.w.values.h0.t0"),
    ({"dynamicObjectDimensions": {"w": {"scope": "host", "values": {"h0": {"t0": "x"}}}}},
     "dynamicObjectDimensions.w.values.h0.t0"),
    ({"dynamicObjectDimensions": {"cpu": {"scope": "host"}}}, "dynamicObjectDimensions.cpu"),
    ({"dynamicObjectDimensions": {"w": {"scope": "host", "extra": 1}}},
     "dynamicObjectDimensions.w.extra"),
    ({"goals": [{"spec": {"minimizeMovementSpec": {"dimension": "w"}}}]},
     "goals[0].spec.minimizeMovementSpec.dimension"),
    ({"goals": [{"spec": {"capacitySpec": {"dimension": "w", "definition": "DURING"}}}]},
     "goals[0].spec.capacitySpec.dimension"),
    ({"goals": [{"spec": {"assignmentAffinitiesSpec": {"affinities": [
        {"objectName": "t9", "scopeItemName": "h0", "affinity": 1}]}}}]},
     "goals[0].spec.assignmentAffinitiesSpec.affinities[0].objectName"),
    ({"goals": [{"spec": {"assignmentAffinitiesSpec": {"affinities": [
        {"objectName": "t0", "scopeItemName": "h7", "affinity": 1}]}}}]},
     "goals[0].spec.assignmentAffinitiesSpec.affinities[0].scopeItemName"),
    ({"goals": [{"spec": {"assignmentAffinitiesSpec": {"affinities": [
        {"objectName": "t0", "scopeItemName": "h0", "affinity": float("nan")}]}}}]},
     "goals[0].spec.assignmentAffinitiesSpec.affinities[0].affinity"),
    ({"goals": [{"spec": {"minimizeContainersSpec": {"maxFreeLimit": 0}}}]},
     "goals[0].spec.minimizeContainersSpec.maxFreeLimit"),
    ({"goals": [{"spec": {"minimizeContainersSpec": {"containerCosts": {"h0": -1}}}}]},
     "goals[0].spec.minimizeContainersSpec.containerCosts.h0"),
    ({"goals": [{"spec": {"minimizeContainersSpec": {"containerCosts": {"h5": 1}}}}]},
     "goals[0].spec.minimizeContainersSpec.containerCosts.h5"),
    ({"constraints": [{"spec": {"minimizeContainersSpec": {}}}]}, "constraints[0].spec"),
    ({"constraints": [{"spec": {"assignmentAffinitiesSpec": {}}}]}, "constraints[0].spec"),
])
def test_bad_input_names_the_field(data: dict, path: str) -> None:
    base = {"objectName": "task", "containerName": "host",
            "assignment": {"h0": ["t0"], "h1": ["t1"]},
            "objectDimensions": {"cpu": {"t0": 1, "t1": 2}},
            "dynamicObjectDimensions": {"w": {"scope": "host", "values": {"h0": {"t0": 1}}}}}
    scenario = copy.deepcopy(base)
    scenario.update(data)
    given = copy.deepcopy(scenario)
    with pytest.raises(InputError) as error:
        parse_scenario(scenario)
    assert error.value.path.startswith(path), error.value
    assert scenario == given  # nothing the user gave is modified


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def gap_optimum(cost: np.ndarray, weight: np.ndarray, capacity: np.ndarray) -> float:
    """The cheapest assignment of objects (columns) to agents (rows) within the capacities,
    by enumeration; inf when there is none."""
    m, n = cost.shape
    best = math.inf
    for agents in map(np.asarray, itertools.product(range(m), repeat=n)):
        if all(weight[a, agents == a].sum() <= capacity[a] for a in range(m)):
            best = min(best, float(cost[agents, np.arange(n)].sum()))
    return best


def tiny_gap_data(tmp_path, cost: np.ndarray, weight: np.ndarray, capacity: np.ndarray
                  ) -> dict:
    """The scenario data the GAP importer makes of these matrices (written as an OR-Library
    file): agent a is container "agent{a}", object i is "item{i}"."""
    m, n = cost.shape
    text = f"{m} {n}\n" + "\n".join(" ".join(map(str, row)) for row in [*cost, *weight]) + \
        "\n" + " ".join(map(str, capacity)) + "\n"
    return gap_scenario(write(tmp_path, "tiny.gap", text))


def tiny_gap(tmp_path, cost: np.ndarray, weight: np.ndarray, capacity: np.ndarray):
    """The scenario the GAP importer makes of these matrices."""
    return parse_scenario(tiny_gap_data(tmp_path, cost, weight, capacity))


def gap_assignments(cost: np.ndarray, weight: np.ndarray, capacity: np.ndarray
                    ) -> dict[tuple[int, ...], float]:
    """Every assignment within the capacities (the agent per object) with its cost."""
    m, n = cost.shape
    return {tuple(agents.tolist()): float(cost[agents, np.arange(n)].sum())
            for agents in map(np.asarray, itertools.product(range(m), repeat=n))
            if all(weight[a, agents == a].sum() <= capacity[a] for a in range(m))}


@pytest.mark.parametrize("seed", range(10))
def test_knapsack_relaxation_is_a_valid_bound_and_its_dive_a_valid_assignment(seed: int) -> None:
    """On random small assignments (negative costs and forbidden pairs included): the
    relaxation's bound never exceeds the enumerated optimum, and the dive's assignment keeps
    every capacity and every forbidden pair, so costs no less than the optimum."""
    rng = np.random.default_rng(300 + seed)
    m, n = 3, 7
    cost = rng.integers(-10, 30, (m, n)).astype(float)
    cost[rng.random((m, n)) < 0.15] = np.inf
    cost[0, np.isinf(cost).all(axis=0)] = 5.0  # every object may go somewhere
    weight = rng.integers(0, 9, (m, n))
    capacity = rng.integers(8, 16, m)
    best = gap_optimum(cost, weight, capacity)
    bound, _, final, _, _ = assignment_dive(cost, weight, capacity)
    assert bound <= best + 1e-6
    if final is not None:
        assert all(weight[a, final == a].sum() <= capacity[a] for a in range(m))
        assert best <= cost[final, np.arange(n)].sum() < math.inf


def cheapest_per_pair(cost: np.ndarray, weight: np.ndarray, capacity: np.ndarray
                      ) -> np.ndarray:
    """Per (agent, object): the cheapest assignment within the capacities that puts the
    object with the agent, by enumeration (inf where none does)."""
    m, n = cost.shape
    cheapest = np.full((m, n), np.inf)
    for agents in map(np.asarray, itertools.product(range(m), repeat=n)):
        if all(weight[a, agents == a].sum() <= capacity[a] for a in range(m)):
            value = float(cost[agents, np.arange(n)].sum())
            cheapest[agents, np.arange(n)] = np.minimum(cheapest[agents, np.arange(n)], value)
    return cheapest


@pytest.mark.parametrize("seed", range(8))
def test_forced_bounds_and_surviving_pairs_keep_every_assignment_within_them(seed: int) -> None:
    """Lagrangian probing: each pair's forced bound is at most the cheapest assignment that
    uses the pair (enumerated), and at least the relaxation's bound; the pairs surviving a
    target include every pair of every assignment costing at most the target, and there
    are none exactly when no assignment costs that little."""
    rng = np.random.default_rng(500 + seed)
    m, n = 3, 7
    cost = rng.integers(0, 30, (m, n)).astype(float)
    cost[rng.random((m, n)) < 0.15] = np.inf
    cost[0, np.isinf(cost).all(axis=0)] = 5.0
    weight = rng.integers(1, 9, (m, n))
    capacity = rng.integers(8, 14, m)
    cheapest = cheapest_per_pair(cost, weight, capacity)
    relaxation = assignment_dive(cost, weight, capacity)
    pairs = forced_bounds(cost, weight, capacity, relaxation.prices)
    assert np.all(pairs <= cheapest + 1e-6)
    assert np.all(pairs >= relaxation.bound - 1e-6)
    best = cheapest.min()
    low = math.ceil(relaxation.bound - 1e-6)
    for target in range(low, int(best) + 2 if best < math.inf else low + 3):
        alive, _ = surviving_pairs(cost, weight, capacity, pairs, target, 10**9)
        if target >= best:
            assert alive is not None and np.all(alive[cheapest <= target])


@pytest.mark.parametrize("seed", range(6))
def test_gap_importer_optimum_equals_enumeration_with_and_without_the_relaxation(
        tmp_path, seed: int) -> None:
    """An imported GAP solves to the enumerated optimum. The knapsack relaxation's bound (a
    constraint) and dive (a start) change nothing but speed: the same optimum either way;
    the start is proposed only with it."""
    rng = np.random.default_rng(400 + seed)
    m, n = 3, 7
    cost = rng.integers(5, 30, (m, n))
    weight = rng.integers(2, 9, (m, n))
    capacity = np.full(m, 14)
    scenario = tiny_gap(tmp_path, cost, weight, capacity)
    best = gap_optimum(cost, weight, capacity)
    for accelerate in (True, False):
        builder, _ = compile_model(scenario.problem, scenario.model, accelerate=accelerate)
        assert bool(builder.suggested_starts) is (accelerate and best < math.inf)
        result = solve_model(scenario.problem, scenario.model, OPTIONS, accelerate=accelerate)
        if best == math.inf:
            assert result.status == "INFEASIBLE"
        else:
            assert result.status == "OPTIMAL"
            assert result.buckets[0].objective == best


def probed_gaps(seeds: range):
    """Tiny random GAPs, as matrices: many get target probes (3 agents, 8 objects)."""
    for seed in seeds:
        rng = np.random.default_rng(600 + seed)
        m, n = 3, 8
        cost = rng.integers(5, 40, (m, n))
        weight = rng.integers(2, 9, (m, n))
        yield cost, weight, np.full(m, int(weight.mean() * n / m * 0.9))


def test_target_probes_reach_the_enumerated_optimum(tmp_path) -> None:
    """Where the knapsack relaxation leaves a few pairs at its bound, the goal gets target
    probes (searches held at the bound and the levels above); solving with them reaches
    the enumerated optimum, and a probe proven empty never hides it."""
    probed = 0
    for cost, weight, capacity in probed_gaps(range(12)):
        scenario = tiny_gap(tmp_path, cost, weight, capacity)
        best = gap_optimum(cost, weight, capacity)
        builder, buckets = compile_model(scenario.problem, scenario.model, seconds=20)
        if not builder.target_probes or best == math.inf:
            continue
        probed += 1
        assert [len(b.probes) for b in buckets.values()] == [len(builder.target_probes)]
        result = solve_model(scenario.problem, scenario.model, OPTIONS)
        assert result.status == "OPTIMAL"
        assert result.buckets[0].objective == best
    assert probed >= 2


class _Assignments(cp_model.CpSolverSolutionCallback):
    """Every solution of a target probe's reduced assignment, as the agent per object."""

    def __init__(self, literals: list[tuple[object, tuple[int, int]]], objects: int) -> None:
        super().__init__()
        self.literals, self.objects = literals, objects
        self.found: set[tuple[int, ...]] = set()

    def on_solution_callback(self) -> None:
        agents = [-1] * self.objects
        for literal, (agent, obj) in self.literals:
            if self.boolean_value(literal):
                agents[obj] = agent
        self.found.add(tuple(agents))


def test_a_target_probes_reduced_assignment_holds_exactly_the_assignments_at_its_level(
        tmp_path) -> None:
    """A probe's reduced assignment is a relaxation of the model held at its level: its
    solutions, enumerated, are exactly the assignments within the capacities that cost at
    most the level, and each of its literals stands for the model's variable of its pair."""
    checked = 0
    for cost, weight, capacity in probed_gaps(range(12)):
        scenario = tiny_gap(tmp_path, cost, weight, capacity)
        problem = scenario.problem
        builder, _ = compile_model(problem, scenario.model, seconds=20)
        pair_of = {}  # the model's count variable -> (agent, object) of the matrices
        for var, cls, container in zip(builder.count_vars, builder.var_class, builder.var_cont):
            obj = builder.classes.members[cls][0]
            pair_of[var.Index()] = (int(problem.containers[container].removeprefix("agent")),
                                    int(problem.objects[obj].removeprefix("item")))
        assignments = gap_assignments(cost, weight, capacity)
        for probe in builder.target_probes:
            reduced = probe.reduced.clone()
            reduced.clear_objective()
            solutions = _Assignments([(reduced.get_bool_var_from_proto_index(lit.Index()),
                                       pair_of[var.Index()]) for lit, var in probe.pairs],
                                     cost.shape[1])
            solver = cp_model.CpSolver()
            solver.parameters.enumerate_all_solutions = True
            solver.solve(reduced, solutions)
            assert solutions.found == {a for a, c in assignments.items() if c <= probe.level}
            checked += 1
    assert checked >= 3


def test_a_probes_candidate_the_models_other_rules_reject_is_not_taken(tmp_path) -> None:
    """An anti-affinity rule the knapsack relaxation does not see keeps apart two objects
    that every cheapest assignment puts together. Run on their own, the target probes find
    such an assignment in the reduced model at that cost; the whole model rejects it, and
    searched held at the level, proves it empty. So the probes end at the enumerated optimum
    under the rule (or find nothing, when it is above their levels), every level below it
    proven empty; and a full solve ends there too."""
    rejected = 0
    for cost, weight, capacity in probed_gaps(range(24)):
        assignments = gap_assignments(cost, weight, capacity)
        if not assignments:
            continue
        best = min(assignments.values())
        cheapest = [np.asarray(a) for a, c in assignments.items() if c == best]
        together = [(i, k) for i, k in itertools.combinations(range(cost.shape[1]), 2)
                    if all(a[i] == a[k] for a in cheapest)]
        if not together:
            continue
        i, k = together[0]
        data = tiny_gap_data(tmp_path, cost, weight, capacity)
        data["partitions"] = {"anti": {"pair": [f"item{i}", f"item{k}"]}}
        data["constraints"].append({"spec": {"groupCountSpec": {
            "scope": "agent", "partitionName": "anti"}}, "policy": "HARD"})
        scenario = parse_scenario(data)
        builder, buckets = compile_model(scenario.problem, scenario.model, seconds=20)
        probes = buckets[0].probes
        if not any(probe.level >= best for probe in probes):
            continue
        rejected += 1
        apart = min([c for a, c in assignments.items() if a[i] != a[k]], default=math.inf)
        form = builder.integerize(lin_sum(buckets[0].terms))
        found = target_probes(Session(builder, scenario.model, OPTIONS), form, probes, 20.0)
        if apart <= probes[-1].level:
            assert found is not None and float(found / form.factor) == apart
        else:
            assert found is None
        for probe in probes:
            domain = list(builder.cp.Proto().variables[probe.gate.Index()].domain)
            assert (domain == [0, 0]) is (probe.level < apart)
        result = solve_model(scenario.problem, scenario.model, OPTIONS)
        assert result.status == ("OPTIMAL" if apart < math.inf else "INFEASIBLE")
        if apart < math.inf:
            assert result.buckets[0].objective == apart
    assert rejected >= 2


def test_binpacking_importer_starts_from_first_fit_decreasing(tmp_path) -> None:
    path = write(tmp_path, "tiny.txt", "7\n10\n2\n5\n2\n4\n3\n2\n2\n")
    data = binpacking_scenario(path)
    sizes = np.asarray([2, 5, 2, 4, 3, 2, 2])
    # first-fit decreasing: 5+4, 3+2+2+2, 2: one bin more than 5+3+2, 4+2+2+2
    assert len(data["assignment"]) == first_fit_decreasing(sizes, 10).max() + 1 == 3
    scenario = parse_scenario(data)
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == "OPTIMAL"
    assert result.buckets[0].objective == 2
    with pytest.raises(InputError, match="larger than the capacity"):
        binpacking_scenario(write(tmp_path, "big.txt", "2\n10\n11\n1\n"))
    with pytest.raises(InputError, match="ask for 5 numbers, the file holds 3"):
        binpacking_scenario(write(tmp_path, "short.txt", "3\n10\n1\n"))


PEER = find_peer_python()


@pytest.mark.skipif(PEER is None, reason="no Python 3.12 with the rebalancer wheel found")
@pytest.mark.parametrize("seed", range(6))
def test_values_agree_with_the_wheel(seed: int) -> None:
    data = placement_scenario(seed)
    for entry in data["goals"]:  # the wheel wants scope and dimension spelt out,
        body = next(iter(entry["spec"].values()))
        body["scope"] = "host"
        if "dimension" in body:  # its local search refuses dynamic ones here
            body["dimension"] = "task_count"
    scenario = parse_scenario(data)
    rng = np.random.default_rng(seed)
    final = rng.integers(0, scenario.problem.num_containers, scenario.problem.num_objects)
    ours = evaluate(scenario.problem, scenario.model, final)
    wheel = evaluate_with_wheel(data, scenario.problem.assignment_dict(final), peer_python=PEER)
    for side, evaluation in (("final", ours),):
        for goal, theirs in zip(evaluation.goals, wheel[side]["goals"]):
            assert goal.value == pytest.approx(theirs["value"], abs=1e-9), goal.name
    for ours_c, theirs in zip(ours.constraints, wheel["final"]["constraints"]):
        assert ours_c.violation == pytest.approx(theirs["value"], abs=1e-9)


def test_affinities_over_capacities_nothing_fits_are_compiled_and_infeasible() -> None:
    """Drawn shape 2606 at 6x4: affinities beside a HARD Capacity that no assignment keeps.
    The knapsack relaxation's target probes climbed level by level from its bound, each
    level empty, until a solution's cost, of which there is none: compiling never ended.
    They stop past the most any assignment can cost; the scenario is INFEASIBLE."""
    data = random_shape_scenario(6, 4, 2606)
    check_against_enumeration(data, "2606 (6, 4)")
    check_sound_against_enumeration(data, "2606 (6, 4)")
