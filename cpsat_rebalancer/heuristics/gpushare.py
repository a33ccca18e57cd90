"""The GPU-sharing policies of "Beware of Fragmentation" (USENIX ATC '23): the five
baselines and FGD, each a score plugin of ``hkust-adsl/kubernetes-scheduler-simulator``
(``pkg/simulator/plugin``; facts read there, not code copied), placing pending pods online.

The simulator's view of a node: milli-CPU left, milli-GPUs left on each physical GPU; of
a pod: milli-CPU, GPU count, milli-GPU per GPU (a share of one GPU below 1000). Here cpu is
the ``cpu`` dimension (millicores, as the importer writes it) and GPUs the
``nvidia.com/gpu`` dimension (a fraction is a share of one GPU; see :mod:`.cluster`).
Every policy filters with the simulator's GPU-share filter (enough GPUs each with the
share left) on top of kube-scheduler's filters, scores every feasible node (no
percentageOfNodesToScore sampling), and takes the highest score, ties at random.

* ``atc-random`` (``random_score.go``): one feasible node drawn uniformly.
* ``atc-dot-product`` (``dot_product_score.go``, Tetris): node vector (cpu left, GPU milli
  left in total) and pod vector (cpu, GPU milli in total), both divided by the largest node
  (128 cores, 8 GPUs); score ``int(100 * (1 - dot / 2))``. The simulator offers several
  GPU-dimension and normalization variants; this is the merged dimension normalized by the
  largest node.
* ``atc-gpu-clustering`` (``gpu_clustering_score.go``): pods of the same GPU kind
  (share, 1-gpu, 2-gpu, ...) together: 75..100 on a node holding only that kind, 50..75
  with other kinds too, 25..50 on a node holding no GPU pod, 0..25 otherwise, each band
  rising with the GPUs in use; CPU-only pods score 0.
* ``atc-gpu-packing`` (``gpu_packing_score.go``): shared GPUs first (100 minus a tenth of
  the free share of the GPUs used, at least 50), then free GPUs on a used node (50 minus
  the free GPUs taken, at least 33), then a free node (33 minus its GPUs).
* ``atc-best-fit`` (``best_fit_score.go``): ``int(100 * (1 - sum of 0.5 * (free - request)
  / largest node))`` over cpu and GPU; the simulator's min-max normalization afterwards
  keeps the order, so it is left out.
* ``atc-fgd`` (``fgd_score.go``, ``pkg/utils`` ``NodeGpuShareFragAmountScore``): the
  fragmentation of a node is, over the typical pods (every GPU pod shape of the scenario,
  weighted by how often it occurs), the GPU milli it cannot use for that shape: all of its
  free GPU milli when the shape does not fit at all, otherwise the milli left on GPUs too
  small for the share. Score ``int(100 * sigmoid((before - after) / 1000))``; a share pod
  tries every GPU that has room and keeps the best.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Sequence

import numpy as np

from .base import Instance, register
from .cluster import MILLI, ClusterView, select_host

MAX_NODE_SCORE = 100
MAX_SPEC_CPU = 128_000  # milli-CPU of the largest node (the simulator's normalization)
MAX_SPEC_GPU = 8_000  # milli-GPU of the largest node
CPU = "cpu"


class _Node:
    """The simulator's ``NodeResource`` for one node: CPU left and GPU milli left per GPU."""

    def __init__(self, cpu_left: int, gpus: Sequence[int]):
        self.cpu_left = cpu_left
        self.gpus = list(gpus)


class Pod:
    """The simulator's ``PodResource``: milli-CPU, GPU count, milli-GPU per GPU."""

    def __init__(self, cpu: int, count: int, milli: int):
        self.cpu, self.count, self.milli = cpu, count, milli

    @property
    def total_milli(self) -> int:
        return self.count * self.milli

    @property
    def kind(self) -> str:
        """``GetGpuAffinityFromPodAnnotation``: no-gpu, share-gpu or k-gpu."""
        if self.count == 0:
            return "no-gpu"
        return "share-gpu" if self.milli < MILLI else f"{self.count}-gpu"

    def key(self) -> tuple[int, int, int]:
        return self.cpu, self.count, self.milli


def can_host_on_gpus(gpus: Sequence[int], pod: Pod) -> bool:
    """``CanNodeHostPodOnGpuMemory``."""
    return sum(left >= pod.milli for left in gpus) >= pod.count


def fragment(cpu_left: int, gpus: Sequence[int], typical: Sequence[tuple[Pod, float]]
             ) -> float:
    """``NodeGpuShareFragAmountScore``: the fragment amount over the typical pods, all
    kinds but the satisfied part (Q3) summed."""
    total_left = sum(gpus)
    amount = 0.0
    for pod, frequency in typical:
        if pod.milli == 0:  # XL or XR: no GPU asked, every free GPU milli counts
            amount += frequency * total_left
        elif can_host_on_gpus(gpus, pod) and cpu_left >= pod.cpu:  # Q3: the too-small GPUs
            amount += frequency * sum(left for left in gpus if left < pod.milli)
        else:  # Q1, Q2, Q4: nothing of it fits
            amount += frequency * total_left
    return amount


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def fgd_score(node: _Node, pod: Pod, typical: Sequence[tuple[Pod, float]]
              ) -> tuple[int, int | None]:
    """``calculateGpuShareFragExtendScore``: (score, GPU for a share)."""
    before = fragment(node.cpu_left, node.gpus, typical)
    if pod.count == 1 and pod.milli < MILLI:
        best, chosen = 0, None
        for g, left in enumerate(node.gpus):
            if left >= pod.milli:
                gpus = list(node.gpus)
                gpus[g] -= pod.milli
                after = fragment(node.cpu_left - pod.cpu, gpus, typical)
                score = int(sigmoid((before - after) / 1000) * MAX_NODE_SCORE)
                if chosen is None or score > best:
                    best, chosen = score, g
        return best, chosen
    gpus = list(node.gpus)
    for g in [g for g, left in enumerate(gpus) if left == MILLI][:pod.count]:
        gpus[g] = 0
    after = fragment(node.cpu_left - pod.cpu, gpus, typical)
    return int(sigmoid((before - after) / 1000) * MAX_NODE_SCORE), None


def dot_product_score(node: _Node, pod: Pod) -> int:
    """``calculateDotProductScore`` with the merged GPU dimension normalized by the
    largest node: ``int(100 * (1 - (node . pod) / 2))``."""
    node_vec = (node.cpu_left / MAX_SPEC_CPU, sum(node.gpus) / MAX_SPEC_GPU)
    pod_vec = (pod.cpu / MAX_SPEC_CPU, pod.total_milli / MAX_SPEC_GPU)
    dot = node_vec[0] * pod_vec[0] + node_vec[1] * pod_vec[1]
    return int(MAX_NODE_SCORE * (1 - dot / 2))


def best_fit_score(node: _Node, pod: Pod) -> int:
    """``getBestFitScore``: ``int(100 * (1 - sum 0.5 * (free - request) / max))``."""
    left = 0.5 * (node.cpu_left - pod.cpu) / MAX_SPEC_CPU + \
        0.5 * (sum(node.gpus) - pod.total_milli) / MAX_SPEC_GPU
    return int((1.0 - left) * MAX_NODE_SCORE)


def gpu_packing_score(node: _Node, pod: Pod) -> int:
    """``getPackingScore`` (0 for a pod asking no GPU)."""
    if pod.total_milli <= 0:
        return 0
    fully_free = sum(left == MILLI for left in node.gpus)
    if fully_free == len(node.gpus):
        return max(MAX_NODE_SCORE // 3 - fully_free, fully_free)
    order = sorted(range(len(node.gpus)), key=lambda g: node.gpus[g])  # least left first
    wanted, used, free_used = pod.count, [], 0
    for g in order:
        if wanted == 0:
            break
        if pod.milli <= node.gpus[g]:
            wanted -= 1
            used.append(g)
            free_used += node.gpus[g] == MILLI
    if wanted:
        return 0
    if free_used:
        return max(MAX_NODE_SCORE // 2 - free_used, MAX_NODE_SCORE // 3)
    free_ratio = sum(node.gpus[g] * 100 // MILLI for g in used)
    return max(MAX_NODE_SCORE - free_ratio // 10, MAX_NODE_SCORE // 2)


def gpu_clustering_score(node: _Node, kinds: Counter, pod: Pod) -> int:
    """``GpuClusteringScorePlugin.Score``: bands by the GPU kinds the node holds, each
    rising with the GPU milli in use (integer arithmetic as in Go)."""
    if pod.kind == "no-gpu":
        return 0
    band = MAX_NODE_SCORE // 4 * (MAX_SPEC_GPU - sum(node.gpus)) // MAX_SPEC_GPU
    if kinds.get(pod.kind, 0) > 0:
        return band + (MAX_NODE_SCORE * 3 // 4 if len(kinds) == 1 else MAX_NODE_SCORE * 2 // 4)
    return band + (MAX_NODE_SCORE // 4 if not kinds else 0)


class GpuSharePolicy:
    """One ATC'23 policy placing the pending pods in queue order."""

    def __init__(self, name: str, seed: int = 0):
        self.name = name
        self.seed = seed
        self.details: dict = {}

    def assign(self, instance: Instance) -> np.ndarray:
        view = ClusterView(instance)
        rng = random.Random(self.seed)
        cpu = view.sizes.get(CPU, np.zeros(view.problem.num_objects))
        pods = [Pod(int(cpu[o]), *view.gpu_request(o)) for o in range(view.problem.num_objects)]
        shapes = Counter(p.key() for p in pods if p.count)
        total = sum(shapes.values())
        typical = [(Pod(*key), n / total) for key, n in shapes.most_common()]
        kinds: list[Counter] = [Counter() for _ in range(view.problem.num_containers)]
        for obj in range(view.problem.num_objects):
            if pods[obj].count and not view.pending[view.final[obj]]:
                kinds[view.final[obj]][pods[obj].kind] += 1
        placed = 0
        objects = view.pending_objects()
        for obj in objects:
            obj = int(obj)
            feasible = [int(n) for n in view.nodes if view.fits(obj, int(n), per_gpu=True)]
            if not feasible:
                continue
            scores, gpus = [], []
            for n in feasible:
                node = _Node(self._cpu_left(view, n), view.gpus[n])
                score, gpu = self.score(node, kinds[n], pods[obj], typical)
                scores.append(score)
                gpus.append(gpu)
            if self.name == "atc-random":
                chosen = feasible[rng.randrange(len(feasible))]
            else:
                chosen = select_host(feasible, scores, rng)
            view.place(obj, chosen, gpus[feasible.index(chosen)])
            if pods[obj].count:
                kinds[chosen][pods[obj].kind] += 1
            placed += 1
        self.details = {"placed": placed, "left pending": len(objects) - placed}
        return view.final

    @staticmethod
    def _cpu_left(view: ClusterView, node: int) -> int:
        if CPU not in view.limits:
            return MAX_SPEC_CPU
        return int(view.limits[CPU][node] - view.load[CPU][node])

    def score(self, node: _Node, kinds: Counter, pod: Pod,
              typical: Sequence[tuple[Pod, float]]) -> tuple[int, int | None]:
        """(score, GPU for a share pod: FGD's best, the fullest that fits for GpuPacking,
        else the first that fits)."""
        if self.name == "atc-fgd":
            return fgd_score(node, pod, typical)
        if self.name == "atc-dot-product":
            return dot_product_score(node, pod), None
        if self.name == "atc-best-fit":
            return best_fit_score(node, pod), None
        if self.name == "atc-gpu-packing":
            fitting = [g for g, left in enumerate(node.gpus) if left >= pod.milli]
            fullest = min(fitting, key=lambda g: node.gpus[g]) if fitting else None
            return gpu_packing_score(node, pod), fullest
        if self.name == "atc-gpu-clustering":
            return gpu_clustering_score(node, kinds, pod), None
        return 0, None  # atc-random draws among the feasible nodes


POLICIES = ("atc-random", "atc-dot-product", "atc-gpu-clustering", "atc-gpu-packing",
            "atc-best-fit", "atc-fgd")

for _policy in POLICIES:
    register(_policy)(lambda options, name=_policy: GpuSharePolicy(name, options.seed))
