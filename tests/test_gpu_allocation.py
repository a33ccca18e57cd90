"""The ATC'23 experiment's pieces: the policies' array scores against the per-node
reference formulas, the workload inflation, the online simulation against the heuristics
interface, the placement check against the project's evaluator on the physical-GPU model,
and the bound on the maximum allocation against a brute force on tiny clusters."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import numpy as np
import pytest

from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.gpu_allocation import (
    Node,
    Placement,
    TracePod,
    allocation_bound,
    arrival_points,
    check_placement,
    fill_by_patterns,
    gpu_capacity,
    inflate,
    maximum,
    paper_typical,
    physical_assignment,
    scenario_of,
    simulate,
)
from cpsat_rebalancer.gpu_sharing import physical_gpus
from cpsat_rebalancer.heuristics import HeuristicOptions, Instance, make_heuristic
from cpsat_rebalancer.heuristics.cluster import ClusterView, select_host, select_host_array
from cpsat_rebalancer.heuristics.gpushare import (
    KINDS,
    POLICIES,
    Fragmentation,
    Pod,
    _Node,
    best_fit_score,
    best_fit_scores,
    dot_product_score,
    dot_product_scores,
    fgd_score,
    fgd_scores,
    gpu_clustering_score,
    gpu_clustering_scores,
    gpu_packing_score,
    gpu_packing_scores,
)
from cpsat_rebalancer.scenario import parse_scenario

MILLI = 1000
SHARES = (100, 200, 250, 300, 470, 500, 650, 1000)


def random_nodes_state(rng: random.Random, count: int):
    """Nodes of 0-8 GPUs, each GPU free, full or partly used; cpu left 0-128 cores."""
    width = 8
    gpus = np.zeros((count, width), dtype=np.int64)
    counts = np.zeros(count, dtype=np.int64)
    cpu = np.zeros(count, dtype=np.int64)
    for k in range(count):
        counts[k] = rng.choice([0, 1, 2, 4, 8, 8])
        for g in range(counts[k]):
            gpus[k, g] = rng.choice([0, MILLI, MILLI, 500, 530, 300, 800, 1000 - 470])
        cpu[k] = rng.randrange(0, 128_001, 500)
    return cpu, gpus, counts


def random_pod(rng: random.Random) -> Pod:
    kind = rng.random()
    cpu = rng.choice([0, 2000, 4000, 8000, 12_000, 32_000])
    if kind < 0.15:
        return Pod(cpu, 0, 0)
    if kind < 0.6:
        return Pod(cpu, 1, rng.choice(SHARES[:-1]))
    return Pod(cpu, rng.choice([1, 2, 4, 8]), MILLI)


@pytest.mark.parametrize("seed", range(4))
def test_array_scores_equal_the_reference_formulas(seed):
    rng = random.Random(seed)
    cpu, gpus, counts = random_nodes_state(rng, 60)
    typical = [(random_pod(rng), rng.randint(1, 50)) for _ in range(12)]
    frag = Fragmentation(typical)
    for _ in range(25):
        pod = random_pod(rng)
        nodes = [_Node(int(cpu[k]), [int(v) for v in gpus[k, :counts[k]]])
                 for k in range(len(cpu))]
        kinds = np.array([[rng.choice([0, 0, 1, 3]) for _ in KINDS] for _ in nodes])
        assert list(dot_product_scores(cpu, gpus, pod)) == \
            [dot_product_score(n, pod) for n in nodes]
        assert list(best_fit_scores(cpu, gpus, pod)) == [best_fit_score(n, pod) for n in nodes]
        assert list(gpu_packing_scores(gpus, counts, pod)) == \
            [gpu_packing_score(n, pod) for n in nodes]
        counters = [Counter({kind: int(c) for kind, c in zip(KINDS, row) if c}) for row in kinds]
        assert list(gpu_clustering_scores(gpus, kinds, pod)) == \
            [gpu_clustering_score(n, c, pod) for n, c in zip(nodes, counters)]
        fits = [k for k, n in enumerate(nodes)
                if sum(left >= pod.milli for left in n.gpus) >= pod.count]
        scores, chosen = fgd_scores(cpu[fits], gpus[fits], pod, frag)
        reference = [fgd_score(nodes[k], pod, typical) for k in fits]
        assert list(scores) == [score for score, _ in reference]
        assert [None if g < 0 else int(g) for g in chosen] == [g for _, g in reference]


@pytest.mark.parametrize("seed", range(20))
def test_select_host_array_draws_as_select_host(seed):
    rng = random.Random(seed)
    nodes = np.arange(rng.randint(1, 40)) * 3
    scores = np.array([rng.choice([1, 2, 2, 3, 3, 3]) for _ in nodes])
    first, second = random.Random(seed), random.Random(seed)
    assert select_host_array(nodes, scores, first) == \
        select_host(list(nodes), list(scores), second)
    assert first.random() == second.random()  # the same draws were made


# --------------------------------------------------------------------------- arrivals


def trace(rng: random.Random, count: int, specs=("",)) -> list[TracePod]:
    pods = []
    for k in range(count):
        shape = rng.choice([(0, 0), (1, 250), (1, 500), (1, 700), (1, MILLI), (2, MILLI)])
        pods.append(TracePod(f"p{k:03d}", rng.choice([1000, 2000, 4000]),
                             rng.choice([1024, 4096]), *shape, rng.choice(specs),
                             rng.randrange(1000)))
    return pods


def test_inflation_is_deterministic_and_stops_below_the_target():
    pods = trace(random.Random(1), 40)
    capacity = 8 * MILLI
    total = sum(p.total_milli for p in pods)
    ratio = 3 * total / capacity
    first = inflate(pods, capacity, ratio, seed=7)
    assert first == inflate(pods, capacity, ratio, seed=7)
    assert first != inflate(pods, capacity, ratio, seed=8)
    arrived = sum(p.total_milli for p in first)
    assert total < arrived <= ratio * capacity
    assert {p.name for p in pods} <= {p.name for p in first}  # every trace pod arrives
    copies = [p for p in first if p.copy]
    assert copies and all("-tuned-" in p.name for p in copies)
    in_order = inflate(pods, capacity, ratio, seed=7, order="trace")
    assert sorted(p.name for p in in_order) == sorted(p.name for p in first)
    originals = in_order[:len(pods)]
    assert [p.creation for p in originals] == sorted(p.creation for p in pods)
    assert all(p.copy for p in in_order[len(pods):])


def test_deflation_drops_pods_until_the_target():
    pods = trace(random.Random(2), 60)
    capacity = 4 * MILLI
    fewer = inflate(pods, capacity, 1.0, seed=3)
    assert sum(p.total_milli for p in fewer) <= capacity
    assert {p.name for p in fewer} < {p.name for p in pods}


def test_arrival_points_are_the_first_prefixes_reaching_each_share():
    pods = trace(random.Random(3), 50)
    capacity = 10 * MILLI
    points = [10, 50, 100, 10_000]
    reached = np.cumsum([p.total_milli for p in pods])
    for x, n in zip(points, arrival_points(pods, capacity, points)):
        wanted = next((k + 1 for k, r in enumerate(reached) if r >= x / 100 * capacity),
                      len(pods))
        assert n == wanted


def test_typical_pods_cover_the_threshold_most_frequent_first():
    pods = [TracePod(f"p{k}", 1000 * (k % 4), 1, 1, 500, "", 0) for k in range(10)] + \
        [TracePod("q", 9000, 1, 0, 0, "", 0)]
    typical = paper_typical(pods, threshold=80)
    # counts 3 (cpu 0), 3 (1000), 2 (2000), 2 (3000), 1 (9000): 80% of 11 pods is 8.8
    assert [(p.cpu, w) for p, w in typical] == [(0, 3), (1000, 3), (2000, 2), (3000, 2)]


# --------------------------------------------------------------------------- online


def tiny_cluster(rng: random.Random, count: int) -> list[Node]:
    return [Node(f"n{k}", rng.choice([8000, 16_000]), 16_384, rng.choice([1, 2, 4]),
                 rng.choice(["A", "B"])) for k in range(count)]


@pytest.mark.parametrize("policy", POLICIES)
def test_the_simulation_is_the_heuristic_placing_online(policy):
    """simulate() gives the heuristic's own answer on the scenario of the arrivals, and the
    first n pods stand where they stand when only those n have arrived."""
    rng = random.Random(5)
    nodes = tiny_cluster(rng, 4)
    pods = trace(rng, 30, specs=("", "", "A", "B|A"))
    whole = simulate(nodes, pods, policy, seed=2)
    instance = Instance.from_dict(scenario_of(nodes, pods, policy))
    final = make_heuristic(policy, HeuristicOptions(seed=2)).assign(instance)
    names = [instance.problem.containers[int(c)] for c in final]
    assert [nodes[n].name if n >= 0 else "(unplaced)" for n in whole.node] == names
    assert not check_placement(nodes, pods, whole)
    typical = paper_typical(pods)
    online = simulate(nodes, pods, policy, seed=2, typical=typical)
    for n in (10, 20):
        head = simulate(nodes, pods[:n], policy, seed=2, typical=typical)
        assert list(head.node) == list(online.node[:n])
        assert head.gpus == online.gpus[:n]
        assert head.allocated(pods[:n]) == online.allocated(pods, n)


# --------------------------------------------------------------------------- checking


def random_placement(rng: random.Random, nodes: list[Node], pods: list[TracePod]
                     ) -> Placement:
    where = np.full(len(pods), -1)
    gpus: list[tuple[int, ...]] = []
    for i, pod in enumerate(pods):
        n = rng.randrange(len(nodes)) if rng.random() < 0.4 else -1
        if n >= 0 and pod.count <= nodes[n].gpus:
            where[i] = n
            gpus.append(tuple(rng.sample(range(nodes[n].gpus), pod.count)))
        else:
            gpus.append(())
    return Placement(where, gpus)


@pytest.mark.parametrize("seed", range(12))
def test_the_placement_check_agrees_with_the_evaluator(seed):
    rng = random.Random(seed)
    nodes = tiny_cluster(rng, 3)
    pods = trace(rng, 8, specs=("", "A", "B"))
    parsed = parse_scenario(physical_gpus(scenario_of(nodes, pods, "check")))
    problem = parsed.problem  # every pod pending at the start: the rules are all hard
    for _ in range(6):
        placement = random_placement(rng, nodes, pods)
        final = np.empty(problem.num_objects, dtype=np.int64)
        for container, names in physical_assignment(nodes, pods, placement).items():
            for name in names:
                final[problem.object_index[name]] = problem.containers.index(container)
        verdict = evaluate(problem, parsed.model, final)
        assert verdict.feasible == (not check_placement(nodes, pods, placement)), \
            check_placement(nodes, pods, placement)


# --------------------------------------------------------------------------- the bound


def brute_force_maximum(nodes: list[Node], pods: list[TracePod]) -> int:
    options = []
    for pod in pods:
        choices = [(-1, ())]
        if pod.count:
            for n, node in enumerate(nodes):
                choices += [(n, c) for c in itertools.combinations(range(node.gpus), pod.count)]
        options.append(choices)
    best = 0
    for choice in itertools.product(*options):
        placement = Placement(np.array([n for n, _ in choice]), [g for _, g in choice])
        value = placement.allocated(pods)
        if value > best and not check_placement(nodes, pods, placement):
            best = value
    return best


@pytest.mark.parametrize("seed", range(8))
def test_the_bound_is_at_least_the_brute_force_maximum(seed):
    rng = random.Random(seed)
    nodes = [Node(f"n{k}", rng.choice([3000, 6000]), 8192, rng.choice([1, 2, 3]),
                  rng.choice(["A", "B"])) for k in range(rng.randint(1, 2))]
    pods = [TracePod(f"p{k}", rng.choice([1000, 2000, 3000]), rng.choice([2048, 4096]),
                     *rng.choice([(1, 300), (1, 600), (1, 700), (1, MILLI), (2, MILLI)]),
                     rng.choice(["", "", "A"]), k) for k in range(rng.randint(3, 4))]
    optimum = brute_force_maximum(nodes, pods)
    bound = allocation_bound(nodes, pods, time_limit=10)
    assert bound.value >= optimum
    found = maximum(nodes, pods, {}, time_limit=10)
    assert found.best <= optimum <= found.bound
    if found.proven:
        assert found.best == optimum
    patterns = fill_by_patterns(nodes, pods)
    assert not check_placement(nodes, pods, patterns)
    assert patterns.allocated(pods) <= optimum
    assert gpu_capacity(nodes) == MILLI * sum(n.gpus for n in nodes)


def test_feasible_nodes_are_the_nodes_fits_admits():
    rng = random.Random(9)
    nodes = tiny_cluster(rng, 5)
    pods = trace(rng, 25, specs=("", "A", "B"))
    view = ClusterView(Instance.from_dict(scenario_of(nodes, pods, "fits")))
    for step, obj in enumerate(view.pending_objects()):
        obj = int(obj)
        for per_gpu in (False, True):
            assert list(view.feasible_nodes(obj, per_gpu=per_gpu)) == \
                [int(n) for n in view.nodes if view.fits(obj, int(n), per_gpu=per_gpu)]
        admitted = view.feasible_nodes(obj, per_gpu=True)
        if step % 2 == 0 and len(admitted):  # fill the cluster as it goes
            view.place(obj, int(admitted[0]))


def test_the_pattern_fill_fills_alike_nodes_with_the_cheapest_full_content():
    """Three alike nodes of one GPU and 8 cores: a whole-GPU pod of 6 cores and two 0.5
    shares of 4 cores each fill a GPU; the whole one uses less cpu, so the first node
    takes it, and the shares' content (two per node) is repeated on the other two."""
    nodes = [Node(f"n{k}", 8000, 16_384, 1, "A") for k in range(3)]
    pods = [TracePod("w", 6000, 1024, 1, MILLI, "", 0)] + \
        [TracePod(f"s{k}", 4000, 1024, 1, 500, "", k) for k in range(6)]
    placement = fill_by_patterns(nodes, pods)
    assert not check_placement(nodes, pods, placement)
    assert placement.allocated(pods) == 3 * MILLI
    assert placement.node[0] == 0
    assert Counter(int(n) for n in placement.node[1:]) == {1: 2, 2: 2, -1: 2}
