"""The Kubernetes heuristics: each score function against scores computed by hand from the
upstream formulas (the docstrings of the modules cite them), their placements on small
clusters, the descheduler's evictions, and ``compare`` running all of them."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from cpsat_rebalancer.compare import compare
from cpsat_rebalancer.heuristics import HeuristicOptions, Instance, make_heuristic
from cpsat_rebalancer.heuristics.cluster import ClusterView, go_div
from cpsat_rebalancer.heuristics.descheduler import HighNodeUtilization, LowNodeUtilization
from cpsat_rebalancer.heuristics.gpushare import (
    POLICIES,
    GpuSharePolicy,
    Pod,
    _Node,
    best_fit_score,
    dot_product_score,
    fgd_score,
    fragment,
    gpu_clustering_score,
    gpu_packing_score,
)
from cpsat_rebalancer.heuristics.kube_scheduler import (
    balanced_allocation,
    feasible_nodes_to_find,
    least_allocated,
    most_allocated,
    requested_to_capacity_ratio,
)
from cpsat_rebalancer.kubernetes import UNPLACED, kubernetes_scenario, snapshot_scenario
from cpsat_rebalancer.scenario import SolverOptions

GI = 2**30
KUBE = ("kube-default", "kube-most-allocated", "kube-requested-to-capacity-ratio")
DESCHEDULER = ("descheduler-low-node-utilization", "descheduler-high-node-utilization")
BUNDLED = Path(__file__).resolve().parents[1] / "scenarios" / "kubernetes" / "snapshot.json"


# --------------------------------------------------------------------------- kube-scheduler


def test_least_allocated_by_hand():
    # cpu (4000-3000)*100/4000 = 25, memory (8-2)*100/8 = 75: mean 50
    assert least_allocated([3000, 2 * GI], [4000, 8 * GI], [1, 1]) == 50
    # integer division per resource: 200/3 = 66; weights 1 and 2: (66 + 2*50)/3 = 55
    assert least_allocated([1, 5], [3, 10], [1, 2]) == 55
    assert least_allocated([5, 5], [4, 10], [1, 1]) == 25  # over-requested scores 0
    assert least_allocated([5, 5], [0, 10], [1, 1]) == 50  # nothing allocatable: skipped


def test_most_allocated_by_hand():
    assert most_allocated([3000, 2 * GI], [4000, 8 * GI], [1, 1]) == 50
    assert most_allocated([5, 1], [4, 3], [1, 1]) == 66  # capped at 100; 100/3 = 33
    assert most_allocated([1, 1], [3, 3], [1, 3]) == 33


def test_balanced_allocation_by_hand():
    assert balanced_allocation([3, 1], [4, 4]) == 75  # |0.75 - 0.25| / 2 = 0.25
    assert balanced_allocation([6, 1], [4, 4]) == 62  # capped at 1: (1 - 0.375) * 100
    # three fractions 0.5, 0.5, 1: std sqrt(1/18) = 0.2357
    assert balanced_allocation([1, 1, 2], [2, 2, 2]) == 76
    assert balanced_allocation([1], [2]) == 100


def test_requested_to_capacity_ratio_by_hand():
    # bin packing shape (0, 0) (100, 100): the utilizations themselves, mean rounded
    assert requested_to_capacity_ratio([75, 25], [100, 100], [1, 1]) == 50
    assert requested_to_capacity_ratio([33, 66], [100, 100], [1, 1]) == 50  # 49.5 rounds up
    # a resource scoring 0 leaves the mean: (0 excluded) -> 50, not 25
    assert requested_to_capacity_ratio([0, 50], [100, 100], [1, 1]) == 50
    # shape (0, 10) (30, 0): at 7%: 100 + trunc(-100 * 7 / 30) = 100 - 23 = 77 (Go truncates)
    assert requested_to_capacity_ratio([7], [100], [1], ((0, 10), (30, 0))) == 77
    assert requested_to_capacity_ratio([120], [100], [1], ((0, 10), (30, 0))) == 0
    assert go_div(-700, 30) == -23 and go_div(700, 30) == 23 and go_div(700, -30) == -23


@pytest.mark.parametrize("nodes, wanted", [(50, 50), (100, 100), (1000, 420), (5000, 500),
                                           (10000, 500)])
def test_nodes_to_find_follow_the_adaptive_percentage(nodes, wanted):
    assert feasible_nodes_to_find(nodes) == wanted


def node(name, cpu="10", memory="100Gi", pods="110", gpus=0, labels=None):
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods}
    if gpus:
        allocatable["nvidia.com/gpu"] = str(gpus)
    return {"kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "status": {"allocatable": allocatable}}


def pod(name, cpu="1", memory="1Gi", node_name=None, gpus=0, stamp=0, labels=None):
    requests = {"cpu": cpu, "memory": memory}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
    spec = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
    if node_name:
        spec["nodeName"] = node_name
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "labels": labels or {},
                                        "creationTimestamp": f"2026-01-01T00:00:{stamp:02d}Z"},
            "spec": spec}


def instance(*items):
    return Instance.from_dict(snapshot_scenario({"kind": "List", "items": list(items)}))


def placement(heuristic, inst, seed=0):
    final = make_heuristic(heuristic, HeuristicOptions(seed=seed)).assign(inst)
    problem = inst.problem
    return {problem.objects[o]: problem.containers[c] for o, c in enumerate(final)}


def test_least_allocated_spreads_and_most_allocated_packs():
    inst = instance(node("a"), node("b"), pod("x", cpu="4", node_name="a"),
                    pod("p", cpu="2", stamp=1))
    assert placement("kube-default", inst)["ns/p"] == "b"
    assert placement("kube-most-allocated", inst)["ns/p"] == "a"
    assert placement("kube-requested-to-capacity-ratio", inst)["ns/p"] == "a"


def test_a_pod_that_fits_nowhere_stays_pending_and_ties_follow_the_seed():
    inst = instance(node("a", cpu="2"), node("b", cpu="2"), pod("big", cpu="3"),
                    *[pod(f"p{k}", cpu="500m", stamp=k + 1) for k in range(2)])
    runs = {seed: placement("kube-default", inst, seed) for seed in range(6)}
    for run in runs.values():
        assert run["ns/big"] == UNPLACED
        assert {run["ns/p0"], run["ns/p1"]} == {"a", "b"}  # spread
    assert runs[0] == placement("kube-default", inst, 0)  # repeatable
    assert len({run["ns/p0"] for run in runs.values()}) == 2  # the first tie is drawn


def zoned(name, zone, cpu="8"):
    item = node(name, cpu=cpu)
    item["metadata"]["labels"] = {"zone": zone}
    return item


def with_rules(item, **spec):
    item["metadata"]["labels"]["app"] = "web"
    item["spec"].update(spec)
    return item


def test_kube_scheduler_keeps_a_zone_spread_within_its_skew():
    """maxSkew 1 over zones a (two nodes) and b (one, the fullest): LeastAllocated alone
    would send the pods to zone a's empty nodes; the spread filter alternates the zones."""
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    inst = instance(zoned("a1", "a"), zoned("a2", "a"), zoned("b1", "b", cpu="6"),
                    *[with_rules(pod(f"w{k}", stamp=k), topologySpreadConstraints=spread)
                      for k in range(4)])
    for name in KUBE:
        where = placement(name, inst)
        zones = Counter("b" if where[f"ns/w{k}"] == "b1" else "a" for k in range(4))
        assert zones == {"a": 2, "b": 2}, name


def test_kube_scheduler_keeps_self_affinity_in_one_zone():
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}]}}
    inst = instance(zoned("a1", "a", cpu="2"), zoned("b1", "b", cpu="2"),
                    zoned("b2", "b", cpu="2"),
                    *[with_rules(pod(f"w{k}", stamp=k), affinity=affinity) for k in range(5)])
    for name in KUBE:
        where = placement(name, inst)
        used = {where[f"ns/w{k}"][0] for k in range(5) if where[f"ns/w{k}"] != UNPLACED}
        assert len(used) == 1, (name, where)


# --------------------------------------------------------------------------- ATC'23


def test_fragment_and_fgd_by_hand():
    typical = [(Pod(1000, 1, 600), 0.5), (Pod(1000, 2, 1000), 0.5)]
    node_state = _Node(10_000, [1000, 500, 200])
    # 600-share fits: the GPUs below 600 are fragment (700); 2 whole GPUs do not fit: 1700
    assert fragment(10_000, [1000, 500, 200], typical) == pytest.approx(0.5 * 700 + 0.5 * 1700)
    # a 500-share on GPU 0 -> [500, 500, 200]: frag 1200, delta 0, score 50;
    # on GPU 1 -> [1000, 0, 200]: frag 0.5*200 + 0.5*1200 = 700, delta 500: sigmoid(0.5) 62
    assert fgd_score(node_state, Pod(1000, 1, 500), typical) == (62, 1)
    # one whole GPU: [0, 500, 200]: both shapes fail, frag 700: delta 500 again
    assert fgd_score(node_state, Pod(1000, 1, 1000), typical) == (62, None)


def test_packing_clustering_best_fit_and_dot_product_by_hand():
    assert gpu_packing_score(_Node(0, [1000, 1000]), Pod(1, 1, 200)) == 31  # free node: 33-2
    assert gpu_packing_score(_Node(0, [300, 1000]), Pod(1, 1, 200)) == 97  # 100 - 30/10
    assert gpu_packing_score(_Node(0, [300, 1000]), Pod(1, 1, 1000)) == 49  # 50 - 1 free
    assert gpu_packing_score(_Node(0, [300, 1000]), Pod(1, 0, 0)) == 0
    assert gpu_clustering_score(_Node(0, [1000] * 8), Counter(), Pod(1, 1, 500)) == 25
    used = _Node(0, [500] * 8)  # 4000 left: band 25 * 4000 // 8000 = 12
    assert gpu_clustering_score(used, Counter({"share-gpu": 1}), Pod(1, 1, 500)) == 87
    assert gpu_clustering_score(used, Counter({"share-gpu": 1, "1-gpu": 2}),
                                Pod(1, 1, 500)) == 62
    assert gpu_clustering_score(used, Counter({"share-gpu": 1}), Pod(1, 1, 1000)) == 12
    assert gpu_clustering_score(used, Counter(), Pod(1, 0, 0)) == 0
    # (64000 - 32000)/128000 * 0.5 + (4000 - 2000)/8000 * 0.5 = 0.25
    assert best_fit_score(_Node(64_000, [1000] * 4), Pod(32_000, 2, 1000)) == 75
    # (0.5, 0.5) . (0.25, 0.25) = 0.25: 100 * (1 - 0.125)
    assert dot_product_score(_Node(64_000, [1000] * 4), Pod(32_000, 2, 1000)) == 87


def test_gpu_policies_keep_shares_within_one_gpu():
    """Three 0.6-GPU pods on a node of 2 GPUs: the node's total (1.8) would take all three,
    but a share lives on one GPU, so the third waits; a 0.4 share then fills a GPU."""
    data = {"kind": "List", "items": [
        node("g", gpus=2), *[pod(f"s{k}", gpus=1, stamp=k) for k in range(4)]]}
    scenario = snapshot_scenario(data)
    scenario["objectDimensions"]["nvidia.com/gpu"] = {
        "ns/s0": 0.6, "ns/s1": 0.6, "ns/s2": 0.6, "ns/s3": 0.4}
    inst = Instance.from_dict(scenario)
    for policy in POLICIES:
        run = placement(policy, inst)
        assert run == {"ns/s0": "g", "ns/s1": "g", "ns/s2": UNPLACED, "ns/s3": "g"}, policy


def test_a_share_takes_the_best_fitting_gpu():
    """Shares 0.5 and 0.8 on two GPUs leave 500 and 200 milli; a 0.2 share then takes the
    GPU with 200 left (best fit, the simulator's gpuSelMethod "best"), so a last 0.5 share
    still fits (first fit would have put the 0.2 beside the 0.5 and left it pending)."""
    data = {"kind": "List", "items": [
        node("g", gpus=2), *[pod(f"s{k}", gpus=1, stamp=k) for k in range(4)]]}
    scenario = snapshot_scenario(data)
    scenario["objectDimensions"]["nvidia.com/gpu"] = {
        "ns/s0": 0.5, "ns/s1": 0.8, "ns/s2": 0.2, "ns/s3": 0.5}
    inst = Instance.from_dict(scenario)
    for policy in ("atc-dot-product", "atc-gpu-clustering", "atc-gpu-packing", "atc-best-fit"):
        assert set(placement(policy, inst).values()) == {"g"}, policy


def test_atc_ties_go_to_the_first_node_by_name_or_at_random():
    """Two empty alike nodes, "b" listed first: the simulator's selectHost takes "a"
    (the smaller name) every time; kube-scheduler's draw takes either, by the seed."""
    inst = instance(node("b", gpus=2), node("a", gpus=2), pod("p", gpus=1))
    for policy in ("atc-dot-product", "atc-gpu-clustering", "atc-gpu-packing",
                   "atc-best-fit", "atc-fgd"):
        assert {placement(policy, inst, seed)["ns/p"] for seed in range(6)} == {"a"}
        final = {GpuSharePolicy(policy, seed, ties="random").assign(inst)[0]
                 for seed in range(12)}
        assert {inst.problem.containers[c] for c in final} == {"a", "b"}, policy


# --------------------------------------------------------------------------- descheduler


def test_low_node_utilization_evicts_down_to_the_target_and_spreads():
    pods = [pod(f"a{k}", node_name="a", stamp=k) for k in range(9)]
    inst = instance(node("a", pods="10"), node("b", pods="10"), node("c", pods="10"),
                    *pods, pod("b0", node_name="b"), pod("c0", node_name="c"))
    heuristic = LowNodeUtilization()
    run = {inst.problem.objects[o]: inst.problem.containers[c]
           for o, c in enumerate(heuristic.assign(inst))}
    # a at 90% cpu: evict 1-cpu pods until a is at 50% (4 pods); b and c take 2 each
    assert Counter(run.values()) == {"a": 5, "b": 3, "c": 3}
    assert heuristic.details["evicted"] == 4


def test_low_node_utilization_respects_a_disruption_budget():
    pods = [pod(f"a{k}", node_name="a", stamp=k, labels={"app": "x"}) for k in range(9)]
    budget = {"kind": "PodDisruptionBudget", "metadata": {"name": "x", "namespace": "ns"},
              "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "x"}}}}
    inst = instance(node("a", pods="10"), node("b", pods="10"), node("c", pods="10"),
                    *pods, pod("b0", node_name="b"), pod("c0", node_name="c"), budget)
    heuristic = LowNodeUtilization()
    run = {inst.problem.objects[o]: inst.problem.containers[c]
           for o, c in enumerate(heuristic.assign(inst))}
    assert heuristic.details["evicted"] == 1 and Counter(run.values())["a"] == 8


def test_high_node_utilization_drains_the_underused_node_onto_the_fullest():
    inst = instance(node("a"), node("b"), *[pod(f"a{k}", node_name="a") for k in range(8)],
                    pod("b0", node_name="b"))
    heuristic = HighNodeUtilization()
    run = {inst.problem.objects[o]: inst.problem.containers[c]
           for o, c in enumerate(heuristic.assign(inst))}
    assert run["ns/b0"] == "a" and heuristic.details["evicted"] == 1


def test_nothing_happens_when_no_node_is_underutilized():
    inst = instance(node("a"), node("b"), *[pod(f"a{k}", node_name="a") for k in range(8)],
                    *[pod(f"b{k}", node_name="b") for k in range(4)])
    for heuristic in (LowNodeUtilization(), HighNodeUtilization()):
        assert np.array_equal(heuristic.assign(inst), inst.problem.initial)


# --------------------------------------------------------------------------- compare


def test_compare_runs_every_kubernetes_heuristic_on_the_bundled_snapshot():
    """The snapshot queues two 1-GPU pods before a 4-GPU pod only the a100 node (4 GPUs
    left) takes. LeastAllocated scores cpu and memory only, so it puts the small pods on the
    larger, emptier a100 node and the 4-GPU pod stays pending: one more pending pod than the
    optimum (which leaves only the web replica no node may take)."""
    scenario = kubernetes_scenario(BUNDLED)
    names = [*KUBE, *POLICIES, *DESCHEDULER]
    result = compare(scenario, names, options=SolverOptions(time_limit=60, workers=1))
    assert result.ours.status == "OPTIMAL" and result.ours.objective[0] == 1
    entries = {e.name: e for e in result.entries}
    assert set(entries) == set(names)
    for entry in entries.values():
        assert entry.error is None and entry.feasible, entry.name
        assert entry.evaluation.positions[0] >= 1
        assert entry.contradiction is None
    assert entries["kube-default"].evaluation.positions[0] == 2
    assert entries["atc-fgd"].evaluation.positions[0] == 1


def test_fgd_without_gpu_pods_ties_every_node():
    """No pod asks for a GPU: FGD has no typical pod, nothing fragments, and every node ties
    (the first by name takes a pod, as the simulator breaks ties)."""
    inst = instance(node("b"), node("a"), pod("p", cpu="2"), pod("q", cpu="2", stamp=1))
    assert placement("atc-fgd", inst) == {"ns/p": "a", "ns/q": "a"}


def test_every_kubernetes_heuristic_keeps_the_spread_snapshots_rules():
    """On the bundled spread snapshot every heuristic's answer holds every hard rule (the
    spreads and the self-affinity among them); none leaves fewer pods pending than the
    optimum's one."""
    scenario = kubernetes_scenario(BUNDLED.with_name("spread.json"))
    names = [*KUBE, *POLICIES, *DESCHEDULER]
    result = compare(scenario, names, options=SolverOptions(time_limit=60, workers=1))
    assert result.ours.status == "OPTIMAL" and result.ours.objective[0] == 1
    for entry in result.entries:
        assert entry.error is None and entry.feasible, entry.name
        assert entry.evaluation.positions[0] >= 1, entry.name


def test_the_cluster_view_gives_back_the_gpus_a_pod_held():
    data = {"kind": "List", "items": [node("g", gpus=2), pod("w", node_name="g", gpus=1),
                                      pod("s", node_name="g", gpus=1)]}
    scenario = snapshot_scenario(data)
    scenario["objectDimensions"]["nvidia.com/gpu"]["ns/s"] = 0.5
    view = ClusterView(Instance.from_dict(scenario))
    g = view.problem.containers.index("g")
    whole, share = view.problem.object_index["ns/w"], view.problem.object_index["ns/s"]
    assert view.gpus[g] == [0, 500]  # whole GPUs first, then the share first-fit
    view.unplace(whole)
    assert view.gpus[g] == [1000, 500]
    view.unplace(share)
    assert view.gpus[g] == [1000, 1000]
    view.place(share, g, 1)
    view.place(whole, g)
    assert view.gpus[g] == [0, 500]
