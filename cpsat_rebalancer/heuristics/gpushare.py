"""The GPU-sharing policies of "Beware of Fragmentation" (USENIX ATC '23): the five
baselines and FGD, each a score plugin of ``hkust-adsl/kubernetes-scheduler-simulator``
(``pkg/simulator/plugin``; facts read there, not code copied), placing pending pods online.

The simulator's view of a node: milli-CPU left, milli-GPUs left on each physical GPU; of
a pod: milli-CPU, GPU count, milli-GPU per GPU (a share of one GPU below 1000). Here cpu is
the ``cpu`` dimension (millicores, as the importer writes it) and GPUs the
``nvidia.com/gpu`` dimension (a fraction is a share of one GPU; see :mod:`.cluster`).
Every policy filters with the simulator's GPU-share filter (enough GPUs each with the
share left) on top of kube-scheduler's filters, scores every feasible node (no
percentageOfNodesToScore sampling), and takes the highest score; among equals the node
whose name comes first, as the simulator's ``selectHost`` does "for reproducibility"
(``ties="random"``: kube-scheduler's reservoir draw from the seed instead). A share
pod then takes a GPU of that node as the paper's runs configure it (``gpuSelMethod``):
FGD the GPU its score chose, Random a random GPU with room, the others the best fit (the
GPU with the least milli left that has room, ``allocateGpuIdBasedOnBestFit``).

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
from .cluster import MILLI, ClusterView, select_host_array

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
    kinds but the satisfied part (Q3) summed, each weighted by its frequency (integer
    counts keep the sum exact)."""
    total_left = sum(gpus)
    amount = 0
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


def fgd_node_score(decrease: float, weight: float) -> int:
    """``int(100 * sigmoid(decrease / 1000))`` with the decrease of the weighted fragment
    amount divided by the total weight (the frequencies' sum). Without a typical pod (no
    pod asks for a GPU) nothing fragments: the decrease is 0 and every node ties."""
    if not weight:
        return int(sigmoid(0.0) * MAX_NODE_SCORE)
    return int(sigmoid(decrease / weight / 1000) * MAX_NODE_SCORE)


def fgd_score(node: _Node, pod: Pod, typical: Sequence[tuple[Pod, float]]
              ) -> tuple[int, int | None]:
    """``calculateGpuShareFragExtendScore``: (score, GPU for a share)."""
    weight = sum(w for _, w in typical)
    before = fragment(node.cpu_left, node.gpus, typical)
    if pod.count == 1 and pod.milli < MILLI:
        best, chosen = 0, None
        for g, left in enumerate(node.gpus):
            if left >= pod.milli:
                gpus = list(node.gpus)
                gpus[g] -= pod.milli
                after = fragment(node.cpu_left - pod.cpu, gpus, typical)
                score = fgd_node_score(before - after, weight)
                if chosen is None or score > best:
                    best, chosen = score, g
        return best, chosen
    gpus = list(node.gpus)
    for g in [g for g, left in enumerate(gpus) if left == MILLI][:pod.count]:
        gpus[g] = 0
    after = fragment(node.cpu_left - pod.cpu, gpus, typical)
    return fgd_node_score(before - after, weight), None


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


# ------------------------------------------------------------- every node at once
# The score functions above, for arrays of nodes: ``cpu`` (milli-CPU left per node),
# ``gpus`` (milli-GPU left per GPU, nodes x GPUs, 0 past a node's last GPU), ``count``
# (GPUs per node). Each gives, per node, the integer the function above gives for it.


def dot_product_scores(cpu: np.ndarray, gpus: np.ndarray, pod: Pod) -> np.ndarray:
    dot = (cpu / MAX_SPEC_CPU) * (pod.cpu / MAX_SPEC_CPU) + \
        (gpus.sum(axis=1) / MAX_SPEC_GPU) * (pod.total_milli / MAX_SPEC_GPU)
    return (MAX_NODE_SCORE * (1 - dot / 2)).astype(np.int64)


def best_fit_scores(cpu: np.ndarray, gpus: np.ndarray, pod: Pod) -> np.ndarray:
    left = 0.5 * (cpu - pod.cpu) / MAX_SPEC_CPU + \
        0.5 * (gpus.sum(axis=1) - pod.total_milli) / MAX_SPEC_GPU
    return ((1.0 - left) * MAX_NODE_SCORE).astype(np.int64)


def gpu_packing_scores(gpus: np.ndarray, count: np.ndarray, pod: Pod) -> np.ndarray:
    if pod.total_milli <= 0:
        return np.zeros(len(gpus), dtype=np.int64)
    fully_free = (gpus == MILLI).sum(axis=1)
    # the least-left GPUs with room for the share, as the reference walks them
    room = np.where(gpus >= pod.milli, gpus, 2 * MILLI)
    taken = np.sort(room, axis=1)[:, :pod.count]
    enough = (gpus >= pod.milli).sum(axis=1) >= pod.count
    free_used = (taken == MILLI).sum(axis=1)
    free_ratio = np.where(enough[:, None], taken * 100 // MILLI, 0).sum(axis=1)
    score = np.where(free_used > 0,
                     np.maximum(MAX_NODE_SCORE // 2 - free_used, MAX_NODE_SCORE // 3),
                     np.maximum(MAX_NODE_SCORE - free_ratio // 10, MAX_NODE_SCORE // 2))
    score = np.where(enough, score, 0)
    return np.where(fully_free == count,
                    np.maximum(MAX_NODE_SCORE // 3 - fully_free, fully_free), score)


KINDS = ("share-gpu", *(f"{k}-gpu" for k in range(1, 9)))


def gpu_clustering_scores(gpus: np.ndarray, kinds: np.ndarray, pod: Pod) -> np.ndarray:
    """``kinds``: per node, how many pods of each of :data:`KINDS` it holds."""
    if pod.kind == "no-gpu":
        return np.zeros(len(gpus), dtype=np.int64)
    band = MAX_NODE_SCORE // 4 * (MAX_SPEC_GPU - gpus.sum(axis=1)) // MAX_SPEC_GPU
    present = (kinds > 0).sum(axis=1)
    same = kinds[:, KINDS.index(pod.kind)] > 0
    return band + np.where(same, np.where(present == 1, MAX_NODE_SCORE * 3 // 4,
                                          MAX_NODE_SCORE * 2 // 4),
                           np.where(present == 0, MAX_NODE_SCORE // 4, 0))


class Fragmentation:
    """:func:`fragment` for arrays of nodes, exact in integers: with integer weights,
    sum_t w_t * amount_t = W * free - sum over GPU shapes that fit of w_t * (the free milli
    on GPUs with room for the share). Shapes are grouped by (GPU count, share) and the
    weight of those whose cpu fits is a cumulative sum over their sorted cpu."""

    def __init__(self, typical: Sequence[tuple[Pod, int]]):
        self.weight = sum(w for _, w in typical)
        groups: dict[tuple[int, int], list[tuple[int, int]]] = {}
        for pod, w in typical:
            if pod.milli:
                groups.setdefault((pod.count, pod.milli), []).append((pod.cpu, w))
        self.counts = np.array([k for k, _ in groups], dtype=np.int64)
        self.shares = np.array([m for _, m in groups], dtype=np.int64)
        self.cpus, self.cumulative = [], []
        for members in groups.values():
            members.sort()
            self.cpus.append(np.array([c for c, _ in members], dtype=np.int64))
            self.cumulative.append(np.concatenate(([0], np.cumsum([w for _, w in members]))))

    def cpu_weights(self, cpu: np.ndarray) -> np.ndarray:
        """Per node and group, the weight of the group's shapes whose cpu fits."""
        return np.stack([cum[np.searchsorted(cpus, cpu, side="right")]
                         for cpus, cum in zip(self.cpus, self.cumulative)], axis=-1) \
            if len(self.cpus) else np.zeros((*cpu.shape, 0), dtype=np.int64)

    def amount(self, cpu: np.ndarray, gpus: np.ndarray) -> np.ndarray:
        """The weighted fragment amount of every node (``gpus``: nodes x GPUs)."""
        room = gpus[:, :, None] >= self.shares
        fits = room.sum(axis=1) >= self.counts
        usable = (gpus[:, :, None] * room).sum(axis=1)
        return self.weight * gpus.sum(axis=1) - \
            (fits * self.cpu_weights(cpu) * usable).sum(axis=1)

    def share_amounts(self, cpu: np.ndarray, gpus: np.ndarray, milli: int) -> np.ndarray:
        """Nodes x GPUs: the amount after ``milli`` is taken from that one GPU (and the
        pod's cpu from ``cpu``, already subtracted by the caller)."""
        room = gpus[:, :, None] >= self.shares
        left = gpus - milli
        room_after = left[:, :, None] >= self.shares
        fitting = room.sum(axis=1)[:, None, :] - room + room_after
        usable = (gpus[:, :, None] * room).sum(axis=1)[:, None, :] - \
            gpus[:, :, None] * room + left[:, :, None] * room_after
        kept = (fitting >= self.counts) * self.cpu_weights(cpu)[:, None, :] * usable
        return self.weight * (gpus.sum(axis=1) - milli)[:, None] - kept.sum(axis=2)


def _fgd_scores_of(decrease: np.ndarray, weight: int) -> np.ndarray:
    """:func:`fgd_node_score` of every entry, through the reference (few distinct)."""
    values, where = np.unique(decrease, return_inverse=True)
    scores = np.array([fgd_node_score(int(v), weight) for v in values], dtype=np.int64)
    return scores[where].reshape(decrease.shape)


def fgd_scores(cpu: np.ndarray, gpus: np.ndarray, pod: Pod, frag: Fragmentation
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per node, FGD's score and the GPU for a share pod (-1 otherwise)."""
    before = frag.amount(cpu, gpus)
    if pod.count == 1 and pod.milli < MILLI:
        after = frag.share_amounts(cpu - pod.cpu, gpus, pod.milli)
        scores = np.where(gpus >= pod.milli,
                          _fgd_scores_of(before[:, None] - after, frag.weight), -1)
        chosen = scores.argmax(axis=1)
        return scores[np.arange(len(gpus)), chosen], chosen
    free = gpus == MILLI
    taken = free & (np.cumsum(free, axis=1) <= pod.count)
    after = frag.amount(cpu - pod.cpu, np.where(taken, 0, gpus))
    return _fgd_scores_of(before - after, frag.weight), np.full(len(gpus), -1)


class GpuSharePolicy:
    """One ATC'23 policy placing the pending pods in queue order, scoring every feasible
    node at once (the ``*_scores`` functions). ``typical``: FGD's typical pods with integer
    weights; by default every GPU pod shape of the scenario weighted by its count.
    ``details`` gives the GPUs each placed pod holds (``held``: object -> GPU indices)."""

    def __init__(self, name: str, seed: int = 0,
                 typical: Sequence[tuple[Pod, int]] | None = None, ties: str = "name"):
        if ties not in TIES:
            raise ValueError(f"ties: expected one of {TIES}, got {ties!r}")
        self.name = name
        self.seed = seed
        self.typical = typical
        self.ties = ties
        self.details: dict = {}

    def assign(self, instance: Instance) -> np.ndarray:
        view = ClusterView(instance)
        rng = random.Random(self.seed)
        cpu = view.sizes.get(CPU, np.zeros(view.problem.num_objects))
        pods = [Pod(int(cpu[o]), *view.gpu_request(o)) for o in range(view.problem.num_objects)]
        typical = self.typical
        if typical is None:
            shapes = Counter(p.key() for p in pods if p.count)
            typical = [(Pod(*key), n) for key, n in shapes.most_common()]
        frag = _FgdCache(Fragmentation(typical), view) if self.name == "atc-fgd" else None
        kinds = np.zeros((view.problem.num_containers, len(KINDS)), dtype=np.int64)
        for obj in range(view.problem.num_objects):
            if pods[obj].count and not view.pending[view.final[obj]]:
                kinds[view.final[obj], KINDS.index(pods[obj].kind)] += 1
        name_rank = np.argsort(np.argsort(np.array(view.problem.containers, dtype=object)))
        placed = 0
        objects = view.pending_objects()
        for obj in objects:
            obj = int(obj)
            feasible = view.feasible_nodes(obj, per_gpu=True)
            if not len(feasible):
                continue
            pod = pods[obj]
            if self.name == "atc-random":
                chosen = int(feasible[rng.randrange(len(feasible))])
                room = np.flatnonzero(view.gpu_left[chosen] >= pod.milli) \
                    if pod.count == 1 and pod.milli < MILLI else []
                gpu = int(room[rng.randrange(len(room))]) if len(room) else None
            else:
                scores, gpus = self.scores(view, feasible, kinds, pod, frag)
                if self.ties == "name":
                    tied = feasible[scores == scores.max()]
                    chosen = int(tied[np.argmin(name_rank[tied])])
                else:
                    chosen = select_host_array(feasible, scores, rng)
                gpu = gpus[int(np.searchsorted(feasible, chosen))]
                gpu = None if gpu < 0 else int(gpu)
            view.place(obj, chosen, gpu)
            if frag is not None:
                frag.changed(chosen)
            if pod.count:
                kinds[chosen, KINDS.index(pod.kind)] += 1
            placed += 1
        self.details = {"placed": placed, "left pending": len(objects) - placed,
                        "held": dict(view.held)}
        return view.final

    @staticmethod
    def cpu_left(view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        if CPU not in view.limits:
            return np.full(len(nodes), MAX_SPEC_CPU, dtype=np.int64)
        return np.trunc(view.limits[CPU][nodes] - view.load[CPU][nodes]).astype(np.int64)

    def scores(self, view: ClusterView, nodes: np.ndarray, kinds: np.ndarray, pod: Pod,
               frag: _FgdCache | None) -> tuple[np.ndarray, np.ndarray]:
        """Per node: the score and the GPU for a share pod: FGD's choice, else the best
        fit (the least milli left among the GPUs with room, the first of equals)."""
        gpus = view.gpu_left[nodes]
        if self.name == "atc-fgd":
            return frag.scores(nodes, pod)
        best_fit = np.where(gpus >= pod.milli, gpus, 2 * MILLI).argmin(axis=1) \
            if pod.count == 1 and pod.milli < MILLI else np.full(len(nodes), -1)
        if self.name == "atc-dot-product":
            return dot_product_scores(self.cpu_left(view, nodes), gpus, pod), best_fit
        if self.name == "atc-best-fit":
            return best_fit_scores(self.cpu_left(view, nodes), gpus, pod), best_fit
        if self.name == "atc-gpu-packing":
            return gpu_packing_scores(gpus, view.gpu_count[nodes], pod), best_fit
        if self.name == "atc-gpu-clustering":
            return gpu_clustering_scores(gpus, kinds[nodes], pod), best_fit
        raise ValueError(f"unknown policy {self.name}")


class _FgdCache:
    """FGD's scores per pod shape for every node, recomputed only for the nodes placed on
    since (a node's score depends on its own state and the pod's cpu and GPUs alone)."""

    def __init__(self, frag: Fragmentation, view: ClusterView):
        self.frag, self.view = frag, view
        self.version = np.zeros(view.problem.num_containers, dtype=np.int64)
        self.known: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def changed(self, node: int) -> None:
        self.version[node] += 1

    def scores(self, nodes: np.ndarray, pod: Pod) -> tuple[np.ndarray, np.ndarray]:
        everywhere = self.view.nodes
        if pod.key() not in self.known:
            self.known[pod.key()] = (np.full(len(self.version), -1, dtype=np.int64),
                                     np.zeros(len(self.version), dtype=np.int64),
                                     np.full(len(self.version), -1, dtype=np.int64))
        seen, scores, gpus = self.known[pod.key()]
        stale = everywhere[seen[everywhere] != self.version[everywhere]]
        if len(stale):
            cpu = GpuSharePolicy.cpu_left(self.view, stale)
            scores[stale], gpus[stale] = fgd_scores(cpu, self.view.gpu_left[stale], pod,
                                                    self.frag)
            seen[stale] = self.version[stale]
        return scores[nodes], gpus[nodes]


TIES = ("name", "random")  # how equal scores are broken (see the module docstring)

POLICIES = ("atc-random", "atc-dot-product", "atc-gpu-clustering", "atc-gpu-packing",
            "atc-best-fit", "atc-fgd")

for _policy in POLICIES:
    register(_policy)(lambda options, name=_policy: GpuSharePolicy(name, options.seed))
