"""kube-scheduler's resource scoring, placing a scenario's pending pods one by one.

Facts from ``kubernetes/kubernetes`` ``pkg/scheduler/framework/plugins/noderesources``
(read, not copied): every score is an integer in 0..100 (``MaxNodeScore``); a node's score
is the sum of each enabled plugin's score times its weight; the default profile enables
NodeResourcesFit with the LeastAllocated strategy (resources cpu and memory, weight 1 each)
and NodeResourcesBalancedAllocation (cpu and memory), both with plugin weight 1.

* ``kube-default``: LeastAllocated + BalancedAllocation;
* ``kube-most-allocated``: the MostAllocated strategy + BalancedAllocation;
* ``kube-requested-to-capacity-ratio``: RequestedToCapacityRatio with the bin-packing shape
  of the documentation (utilization 0 scores 0, 100 scores 10) + BalancedAllocation.

The filters are those that decide on this data (NodeResourcesFit, TaintToleration,
NodeAffinity, NodeUnschedulable, InterPodAffinity for one-per-domain rules, as the
importer encodes them; see :mod:`.cluster`). Nodes are searched as ``findNodesThatFitPod``
does: from a rotating start, stopping after ``numFeasibleNodesToFind`` feasible ones
(percentageOfNodesToScore left at its adaptive default). The other default score plugins
(TaintToleration, NodeAffinity and InterPodAffinity preferences, PodTopologySpread's
system defaults, ImageLocality) score inputs the scenario does not hold: they are left
out (docs/kubernetes.md). Requests are the pods' own: a pod without cpu or memory requests
(which the importer refuses by default) would be scored with kube-scheduler's non-zero
defaults there, not here.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

import numpy as np

from .base import HeuristicOptions, Instance, register
from .cluster import ClusterView, go_div, select_host

MAX_NODE_SCORE = 100
SCORED_RESOURCES = ("cpu", "memory")
# RequestedToCapacityRatio's shape (utilization %, score 0..10): the bin-packing example
BIN_PACKING_SHAPE = ((0, 0), (100, 10))
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE = 5


def least_allocated(requested: Sequence[int], allocatable: Sequence[int],
                    weights: Sequence[int]) -> int:
    """``leastResourceScorer``: per resource ``(allocatable - requested) * 100 /
    allocatable`` (0 when over), weighted mean, integer divisions; resources with nothing
    allocatable are skipped."""
    score = weight_sum = 0
    for req, alloc, weight in zip(requested, allocatable, weights):
        if alloc == 0:
            continue
        value = 0 if req > alloc else (alloc - req) * MAX_NODE_SCORE // alloc
        score += value * weight
        weight_sum += weight
    return score // weight_sum if weight_sum else 0


def most_allocated(requested: Sequence[int], allocatable: Sequence[int],
                   weights: Sequence[int]) -> int:
    """``mostResourceScorer``: per resource ``requested * 100 / allocatable`` with the
    request capped at the allocatable, weighted mean, integer divisions."""
    score = weight_sum = 0
    for req, alloc, weight in zip(requested, allocatable, weights):
        if alloc == 0:
            continue
        score += min(req, alloc) * MAX_NODE_SCORE // alloc * weight
        weight_sum += weight
    return score // weight_sum if weight_sum else 0


def balanced_allocation(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """``balancedResourceScorer``: with each fraction ``requested / allocatable`` capped at
    1, ``int((1 - std) * 100)``, std the population standard deviation of the fractions
    (``|f1 - f2| / 2`` for two)."""
    fractions = [min(1.0, req / alloc) for req, alloc in zip(requested, allocatable) if alloc]
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)


def broken_linear(shape: Sequence[tuple[int, int]], utilization: int) -> int:
    """``helper.BuildBrokenLinearFunction`` on (utilization, score) points."""
    for k, (x, y) in enumerate(shape):
        if utilization <= x:
            if k == 0:
                return y
            x0, y0 = shape[k - 1]
            return y0 + go_div((y - y0) * (utilization - x0), x - x0)
    return shape[-1][1]


def requested_to_capacity_ratio(requested: Sequence[int], allocatable: Sequence[int],
                                weights: Sequence[int],
                                shape: Sequence[tuple[int, int]] = BIN_PACKING_SHAPE) -> int:
    """``buildRequestedToCapacityRatioScorerFunction``: shape scores scaled by 100/10; per
    resource the shape at ``requested * 100 / allocatable`` (at 100 when over); resources
    scoring 0 leave the weighted mean, which is rounded."""
    scaled = [(x, y * (MAX_NODE_SCORE // 10)) for x, y in shape]
    score = weight_sum = 0
    for req, alloc, weight in zip(requested, allocatable, weights):
        if alloc == 0:
            continue
        utilization = 100 if req >= alloc else (max(req, 0) * 100 // alloc)
        value = broken_linear(scaled, utilization)
        if value > 0:
            score += value * weight
            weight_sum += weight
    return int(math.floor(score / weight_sum + 0.5)) if weight_sum else 0


def feasible_nodes_to_find(num_nodes: int) -> int:
    """``numFeasibleNodesToFind`` with percentageOfNodesToScore unset (adaptive)."""
    if num_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_nodes
    percentage = max(MIN_FEASIBLE_NODES_PERCENTAGE, 50 - num_nodes // 125)
    return max(MIN_FEASIBLE_NODES_TO_FIND, num_nodes * percentage // 100)


Scorer = Callable[[Sequence[int], Sequence[int], Sequence[int]], int]


class KubeScheduler:
    """kube-scheduler with a NodeResourcesFit strategy and BalancedAllocation (weight 1
    each): places every pending pod in queue order, leaving it pending when no node fits.
    ``objects`` (set by :meth:`schedule`) restricts which pods it places."""

    def __init__(self, name: str, fit_scorer: Scorer, seed: int = 0):
        self.name = name
        self.fit_scorer = fit_scorer
        self.seed = seed
        self.details: dict = {}

    def assign(self, instance: Instance) -> np.ndarray:
        view = ClusterView(instance)
        placed, left = self.schedule(view, view.pending_objects())
        self.details = {"placed": placed, "left pending": left}
        return view.final

    def schedule(self, view: ClusterView, objects: Sequence[int]) -> tuple[int, int]:
        """Place ``objects`` in order on ``view``: (placed, left pending)."""
        rng = random.Random(self.seed)
        resources = [r for r in SCORED_RESOURCES if r in view.limits] or sorted(view.limits)
        weights = [1] * len(resources)
        nodes = view.nodes
        start = placed = 0
        for obj in objects:
            obj = int(obj)
            wanted = feasible_nodes_to_find(len(nodes))
            feasible, processed = [], 0
            for k in range(len(nodes)):
                node = int(nodes[(start + k) % len(nodes)])
                processed += 1
                if view.fits(obj, node):
                    feasible.append(node)
                    if len(feasible) == wanted:
                        break
            start = (start + processed) % max(1, len(nodes))
            if not feasible:
                continue
            scores = [self.score(view, obj, node, resources, weights) for node in feasible]
            view.place(obj, select_host(feasible, scores, rng))
            placed += 1
        return placed, len(objects) - placed

    def score(self, view: ClusterView, obj: int, node: int, resources: list[str],
              weights: list[int]) -> int:
        requested = [int(view.load[r][node] + view.sizes[r][obj]) for r in resources]
        allocatable = [int(view.limits[r][node]) if np.isfinite(view.limits[r][node]) else 0
                       for r in resources]  # no limit: nothing to score
        return self.fit_scorer(requested, allocatable, weights) + \
            balanced_allocation(requested, allocatable)


@register("kube-default")
def _default(options: HeuristicOptions) -> KubeScheduler:
    return KubeScheduler("kube-default", least_allocated, options.seed)


@register("kube-most-allocated")
def _most(options: HeuristicOptions) -> KubeScheduler:
    return KubeScheduler("kube-most-allocated", most_allocated, options.seed)


@register("kube-requested-to-capacity-ratio")
def _ratio(options: HeuristicOptions) -> KubeScheduler:
    return KubeScheduler("kube-requested-to-capacity-ratio", requested_to_capacity_ratio,
                         options.seed)
