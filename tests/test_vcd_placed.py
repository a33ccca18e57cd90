"""The most VMs placed, proven on the count model (cpsat_rebalancer/vcd/placed.py): its
bound against brute force under the evaluator, its placements feasible, and the exact
chain that uses it OPTIMAL only at the brute-force optimum of the whole tuple."""

from __future__ import annotations

import itertools

import pytest

from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.heuristics import Instance
from cpsat_rebalancer.result import OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.vcd.count_model import count_model
from cpsat_rebalancer.vcd.exact import (
    UNPLACED,
    build_model,
    placement_assignment,
    solve_exact,
)
from cpsat_rebalancer.vcd.generate import generate
from cpsat_rebalancer.vcd.inputs import parse_vcd
from cpsat_rebalancer.vcd.placed import fewest_on, most_placed, placed_bound
from tests.randomized import leximin_less

OPTIONS = SolverOptions(time_limit=30, workers=1)


def tiny(seed: int, vms: int = 3):
    """A tiny generated scenario, host by host, crowded (load 1.6); odd seeds add a
    datastore-scope anti-affinity rule (hard) and IOPS."""
    data = generate(vms, 2, seed, load=1.6, hosts=2, anti_every=0)
    if seed % 2:
        names = [v["name"] for v in data["vms"] if v.get("operation") != "resident"]
        data["rules"]["antiAffinity"] = [{"name": "apart", "vms": names[:2],
                                          "scope": "datastore"}]
        data["tunables"]["iopsEnabled"] = True
        for d in data["datastores"]:
            d["iopsCapacity"] = 1200
    return parse_vcd(data)


def feasible_placements(s):
    """Every assignment of the exact model (the VMs acted on over every container, the
    fixed objects where they are) that the evaluator finds feasible, with its evaluation."""
    instance = Instance.from_dict(build_model(s))
    problem = instance.problem
    acted = [problem.object_index[vm.name] for vm in s.acted_on]
    places = [k for k, name in enumerate(problem.containers)
              if name == UNPLACED or not name.endswith("/")]
    out = []
    for combo in itertools.product(places, repeat=len(acted)):
        final = problem.initial.copy()
        final[acted] = combo
        evaluation = evaluate(problem, instance.model, final)
        if evaluation.feasible:
            out.append((final, evaluation))
    return instance, out


def key(evaluation, positions: list[int]) -> tuple[float, ...]:
    """The tuple in the chain's order: values, a leximin position as its sorted vector."""
    out: list[float] = []
    for p in positions:
        out += list(evaluation.leximin[p]) if p in evaluation.leximin \
            else [evaluation.positions.get(p, 0.0)]
    return tuple(out)


def seeds(fast: list[int], slow: list[int]) -> list:
    """Seeds for the default run, and more under ``-m slow``."""
    return [*fast, *[pytest.param(seed, marks=pytest.mark.slow) for seed in slow]]


@pytest.mark.parametrize("seed", seeds([0, 1], [2, 3, 4, 5]))
def test_bound_and_search_against_brute_force(seed):
    s = tiny(seed)
    instance, feasible = feasible_placements(s)
    decided = len(s.acted_on)
    most = decided - min(round(e.positions.get(0, 0.0)) for _, e in feasible)
    model = count_model(s)
    assert placed_bound(model, 10).bound >= most
    found = most_placed(s, {}, 10, workers=1)
    assert found.placed <= most <= found.bound
    assert found.proven and found.placed == most
    # the placement found is one the evaluator accepts, with that many VMs placed
    data = build_model(s)
    final = instance.problem.assignment_array(placement_assignment(s, data, found.placement),
                                              "found")
    evaluation = evaluate(instance.problem, instance.model, final)
    assert evaluation.feasible
    assert decided - round(evaluation.positions.get(0, 0.0)) == found.placed


def test_the_bound_cuts_below_the_cluster_totals():
    """Two hosts of 3000 MHz each and three VMs of 2000: the cluster totals hold all three,
    no host holds two; the bound is 2, which the search reaches."""
    host = {"cpu": {"capacity": 3000}, "memory": {"capacity": 8192}}
    data = {"name": "frag", "clusters": [{"name": "c", "hosts": [
        dict(host, name="h1"), dict(host, name="h2")]}],
        "datastores": [{"name": "d", "capacity": 10**6, "free": 10**6, "clusters": ["c"]}],
        "vms": [{"name": f"v{k}", "cpu": 2000, "memory": 1024, "storage": 10}
                for k in range(3)]}
    s = parse_vcd(data)
    assert placed_bound(count_model(s), 10).bound == 2
    found = most_placed(s, {}, 10, workers=1)
    assert found.proven and found.placed == 2


@pytest.mark.parametrize("seed", seeds([12], [13, 17, 18]))  # with a yellow cluster
def test_fewest_on_yellow_clusters_against_brute_force(seed):
    """Position 1 (VMs on yellow clusters) with the most VMs placed: the count model's
    value and bound against the evaluator's brute-force optimum."""
    s = tiny(seed)
    _, feasible = feasible_placements(s)
    least_unplaced = min(round(e.positions.get(0, 0.0)) for _, e in feasible)
    fewest = min(e.positions.get(1, 0.0) for _, e in feasible
                 if round(e.positions.get(0, 0.0)) == least_unplaced)
    most = most_placed(s, {}, 10, workers=1)
    yellow = {c.name for c in s.clusters if c.health == "yellow"}
    found = fewest_on(most, yellow, 10, workers=1)
    assert found.bound <= fewest <= found.value
    assert found.proven and found.value == fewest


@pytest.mark.parametrize("seed", seeds([1, 17], [0, 2, 3, 12]))
def test_optimal_chain_equals_brute_force(seed):
    s = tiny(seed)
    instance, feasible = feasible_placements(s)
    _, _, result = solve_exact(s, OPTIONS)
    positions = sorted(result.final_evaluation.positions)
    best = feasible[0][1]
    for _, evaluation in feasible[1:]:
        if leximin_less(key(evaluation, positions), key(best, positions), 1e-9) < 0:
            best = evaluation
    assert result.buckets[0].position == 0
    assert result.buckets[0].bound <= result.final_evaluation.positions.get(0, 0.0) + 1e-9
    assert result.buckets[0].bound <= best.positions.get(0, 0.0) + 1e-9
    assert result.status == OPTIMAL
    assert leximin_less(key(result.final_evaluation, positions), key(best, positions),
                        1e-9) == 0


def test_an_infeasible_hint_proves_nothing():
    """Every VM hinted onto one host: the count model starts from nothing placed instead,
    and the chain still finds the brute-force most."""
    s = tiny(1)
    instance, feasible = feasible_placements(s)
    least_unplaced = min(round(e.positions.get(0, 0.0)) for _, e in feasible)
    data = build_model(s)
    crowded = sorted(name for name in data["assignment"] if name != UNPLACED
                     and not name.endswith("/"))[0]
    hint = placement_assignment(s, data, {vm.name: None for vm in s.acted_on})
    for vm in s.acted_on:
        hint[UNPLACED].remove(vm.name)
        hint[crowded].append(vm.name)
    assert not evaluate(instance.problem, instance.model,
                        instance.problem.assignment_array(hint, "hint")).feasible
    _, _, result = solve_exact(s, OPTIONS, hint=hint)
    assert result.buckets[0].status == OPTIMAL
    assert round(result.final_evaluation.positions.get(0, 0.0)) == least_unplaced
