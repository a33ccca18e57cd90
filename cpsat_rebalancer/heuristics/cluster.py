"""What Kubernetes-style schedulers see of a scenario, and the online loop they share.

A scenario "of the right shape" (as ``import kubernetes`` writes, or any other) gives:

* pending pods: the objects that start in a container a toFreeSpec goal empties (the
  importer's ``(unplaced)``); the other containers are nodes;
* resources: every HARD or DEFAULT capacitySpec with a MAX bound on AFTER utilization of
  the container scope, with its limit per container (its ``thresholds``);
* node filters: avoidAssignmentsSpec on the container scope (fixed objects and
  non-accepting containers as every heuristic here honours them);
* one-per-domain rules: groupCountSpec MAX on AFTER with ABSOLUTE limits;
* topology spreads: topologySpreadSpec counting objects (PodTopologySpread's filter: a
  pod goes where its group's count plus one is within maxSkew of the least count);
* colocation: colocateGroupsSpec MAX counting objects (InterPodAffinity's filter for a
  group that selects itself: beside the group's pods once some are placed);
* disruption budgets: minimizeMovementSpec constraints counting a dimension without
  normalization, whose allowance caps how many such objects may move.

Anything else the heuristics do not see; ``compare`` judges their answer against every
constraint. Placing follows kube-scheduler's cycle (``pkg/scheduler/schedule_one.go``):
filter the nodes, score the feasible ones, take the highest score, ties broken at random
with a reservoir (``selectHost``), here from the heuristic's seed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from ..errors import InputError
from ..problem import OUT_OF_SCOPE
from .base import Instance, MoveRules

GPU = "nvidia.com/gpu"  # the dimension read as GPUs (fractions: a share of one GPU)
MILLI = 1000  # milli-GPUs per GPU, as the ATC'23 simulator counts them
FIT_TOLERANCE = 1e-9


class ClusterView:
    """The nodes, pods and rules of a scenario, and the running placement (see the module
    docstring). ``final`` is the container index per object, updated by :meth:`place`."""

    def __init__(self, instance: Instance):
        problem, model = instance.problem, instance.model
        self.problem = problem
        n_containers = problem.num_containers
        pending: set[int] = set()
        for goal in model.goals:
            if goal.spec.arm == "toFreeSpec":
                pending |= {int(c) for c in goal.spec.containers}
        self.pending = np.zeros(n_containers, bool)
        self.pending[list(pending)] = True
        self.nodes = np.flatnonzero(~self.pending)
        self.final = problem.initial.copy()
        rules = MoveRules(problem, model)
        self.fixed = rules.fixed
        self.allowed = np.ones((problem.num_objects, n_containers), bool)
        self.allowed[:, ~rules.accepting] = False  # a closed container takes back its own
        self.allowed[np.arange(problem.num_objects), problem.initial] = True
        self.limits: dict[str, np.ndarray] = {}
        self.groups: list[_Group] = []
        self.budgets: list[tuple[np.ndarray, float]] = []
        container_scope = problem.container_scope
        for entry in model.constraints:
            if entry.policy == "SOFT":
                continue
            spec = entry.spec
            scope = getattr(spec, "scope", None)
            if spec.arm == "capacitySpec" and spec.bound == "MAX" and \
                    spec.definition == "AFTER" and scope is container_scope:
                limit = np.full(n_containers, np.inf)
                limit[spec.items] = spec.thresholds
                previous = self.limits.get(spec.dimension, np.full(n_containers, np.inf))
                self.limits[spec.dimension] = np.minimum(previous, limit)
            elif spec.arm == "avoidAssignmentsSpec" and scope is container_scope:
                for item, objects in spec.item_objects:
                    self.allowed[objects, item] = False
            elif spec.arm == "groupCountSpec" and spec.bound == "MAX" and \
                    spec.definition == "AFTER" and not spec.relative and not spec.by_group \
                    and not spec.scope_relative:
                self.groups.append(_Group(spec, problem.num_objects))
            elif spec.arm == "topologySpreadSpec" and \
                    spec.dimension == problem.count_dimension:
                self.groups.append(_Spread(spec, problem.num_objects))
            elif spec.arm == "colocateGroupsSpec" and not spec.minimum and \
                    spec.dimension == problem.count_dimension and \
                    (spec.item_weights > 0).all() and (spec.group_weights > 0).all():
                self.groups.append(_Colocate(spec, problem.num_objects))
            elif spec.arm == "minimizeMovementSpec" and not spec.normalize:
                self.budgets.append((problem.object_dims[spec.dimension] > 0, spec.allowance))
            if entry.policy == "DEFAULT" and spec.arm == "avoidAssignmentsSpec":
                # broken at the start is allowed to stay
                self.allowed[np.arange(problem.num_objects), problem.initial] = True
        self.sizes = {d: problem.object_dims[d] for d in self.limits}
        self.load = {d: np.zeros(n_containers) for d in self.limits}
        for d, load in self.load.items():
            np.add.at(load, self.final, self.sizes[d])
        for group in self.groups:
            group.count_all(self.final)
        self.held: dict[int, list[int]] = {}  # GPUs each placed pod holds
        self.gpus = self._gpu_state()

    # ----------------------------------------------------------------- GPUs

    def gpu_request(self, obj: int) -> tuple[int, int]:
        """(GPU count, milli-GPUs per GPU) of a pod: a fraction is a share of one GPU,
        k >= 1 whole GPUs are k GPUs wholly its own."""
        if GPU not in self.sizes:
            return 0, 0
        value = float(self.sizes[GPU][obj])
        if value <= 0:
            return 0, 0
        if value < 1:
            return 1, int(round(value * MILLI))
        if not value.is_integer():
            raise InputError(f"objectDimensions.{GPU}.{self.problem.objects[obj]}",
                             "a GPU request above 1 must be whole", value)
        return int(value), MILLI

    def _gpu_state(self) -> list[list[int]]:
        """Milli-GPUs left per physical GPU of every container; bound pods take whole free
        GPUs and shares first-fit (a snapshot does not say which GPU a pod holds). The
        same numbers as a matrix, ``gpu_left`` (containers x most GPUs, 0 past a node's
        last GPU), score every node at once; ``gpu_count`` is each node's GPUs."""
        n_containers = self.problem.num_containers
        if GPU not in self.limits:
            self.gpu_count = np.zeros(n_containers, dtype=np.int64)
            self.gpu_left = np.zeros((n_containers, 0), dtype=np.int64)
            return [[] for _ in range(n_containers)]
        count = np.where(np.isfinite(self.limits[GPU]), self.limits[GPU], 0)
        self.gpu_count = np.where(self.pending, 0, count).astype(np.int64)
        self.gpu_left = np.zeros((n_containers, int(self.gpu_count.max(initial=0))),
                                 dtype=np.int64)
        for k, c in enumerate(self.gpu_count):
            self.gpu_left[k, :c] = MILLI
        gpus = [[MILLI] * int(c) for c in self.gpu_count]
        self.gpus = gpus
        for obj in np.argsort(-self.sizes[GPU], kind="stable"):
            node = int(self.final[obj])
            if not self.pending[node]:
                self._take_gpus(obj, node, None)
        return gpus

    def gpu_fits(self, obj: int, node: int) -> bool:
        """``CanNodeHostPodOnGpuMemory``: enough GPUs each with the share left."""
        count, milli = self.gpu_request(obj)
        return count == 0 or sum(left >= milli for left in self.gpus[node]) >= count

    def _take_gpus(self, obj: int, node: int, gpu: int | None) -> None:
        """Give a pod its GPUs on ``node``: a share on ``gpu`` (else the first with room),
        whole GPUs the first wholly free ones; remembered for :meth:`_release_gpus`."""
        count, milli = self.gpu_request(obj)
        if count == 0:
            return
        left = self.gpus[node]
        if count == 1 and milli < MILLI:
            if gpu is None:
                gpu = next((g for g, room in enumerate(left) if room >= milli), None)
            taken = [] if gpu is None else [gpu]
        else:
            taken = [g for g, room in enumerate(left) if room == MILLI][:count]
            milli = MILLI
        for g in taken:
            left[g] -= milli
            self.gpu_left[node, g] -= milli
        self.held[obj] = taken

    def _release_gpus(self, obj: int, node: int) -> None:
        count, milli = self.gpu_request(obj)
        for g in self.held.pop(obj, []):
            self.gpus[node][g] += milli
            self.gpu_left[node, g] += milli

    # ----------------------------------------------------------------- placing

    def pending_objects(self) -> np.ndarray:
        """Pods waiting to be placed, in queue order (object order)."""
        return np.flatnonzero(self.pending[self.final])

    def fits(self, obj: int, node: int, *, per_gpu: bool = False) -> bool:
        """Kube-scheduler's filters: NodeResourcesFit, the node filters, one-per-domain
        rules; with ``per_gpu`` also the GPU-sharing filter of the ATC'23 simulator."""
        if self.pending[node] or not self.allowed[obj, node] or \
                (self.fixed[obj] and node != self.problem.initial[obj]):
            return False
        for d, limit in self.limits.items():
            after = self.load[d][node] + self.sizes[d][obj]
            if after > limit[node] + FIT_TOLERANCE * max(1.0, abs(limit[node])) \
                    and self.sizes[d][obj] > 0:
                return False
        if any(not g.room(obj, node) for g in self.groups):
            return False
        return not per_gpu or self.gpu_fits(obj, node)

    def feasible_nodes(self, obj: int, *, per_gpu: bool = False) -> np.ndarray:
        """The nodes :meth:`fits` admits, in node order, computed for all nodes at once."""
        ok = ~self.pending & self.allowed[obj]
        if self.fixed[obj]:
            ok &= np.arange(len(ok)) == self.problem.initial[obj]
        for d, limit in self.limits.items():
            size = self.sizes[d][obj]
            if size > 0:
                slack = FIT_TOLERANCE * np.maximum(1.0, np.abs(limit))
                ok &= self.load[d] + size <= limit + slack
        nodes = np.flatnonzero(ok)
        if self.groups:
            nodes = np.array([n for n in nodes if all(g.room(obj, int(n)) for g in self.groups)],
                             dtype=np.int64)
        if per_gpu:
            count, milli = self.gpu_request(obj)
            if count:
                nodes = nodes[(self.gpu_left[nodes] >= milli).sum(axis=1) >= count]
        return nodes

    def place(self, obj: int, node: int, gpu: int | None = None) -> None:
        self.remove(obj)
        self.final[obj] = node
        for d in self.load:
            self.load[d][node] += self.sizes[d][obj]
        for group in self.groups:
            group.add(obj, node, 1)
        if not self.pending[node]:
            self._take_gpus(obj, node, gpu)

    def remove(self, obj: int) -> None:
        """Take a pod off its container (to nowhere; :meth:`place` puts it back)."""
        node = int(self.final[obj])
        for d in self.load:
            self.load[d][node] -= self.sizes[d][obj]
        for group in self.groups:
            group.add(obj, node, -1)
        if not self.pending[node]:
            self._release_gpus(obj, node)

    def unplace(self, obj: int) -> None:
        """Evict a pod to the pending container (or keep it in place when there is none)."""
        pending = np.flatnonzero(self.pending)
        if len(pending):
            self.place(obj, int(pending[0]))


class _Counts:
    """A rule on the count of each group's objects per item of a scope; :meth:`room` says
    whether one more object may go to a container."""

    def __init__(self, spec, num_objects: int):
        self.item_of = spec.scope.container_item
        self.groups_of: list[list[int]] = [[] for _ in range(num_objects)]  # may overlap
        for group, members in enumerate(spec.members):
            for obj in members:
                self.groups_of[int(obj)].append(group)
        self.count = np.zeros((len(spec.scope.items), len(spec.members)))

    def count_all(self, final: np.ndarray) -> None:
        for obj, groups in enumerate(self.groups_of):
            if groups:
                self.add(obj, int(final[obj]), 1)

    def add(self, obj: int, node: int, sign: int) -> None:
        item = self.item_of[node]
        if item != OUT_OF_SCOPE:
            for group in self.groups_of[obj]:
                self.count[item, group] += sign

    def room(self, obj: int, node: int) -> bool:
        raise NotImplementedError


class _Group(_Counts):
    """A one-per-domain rule: at most ``limit`` of a group on one item of a scope."""

    def __init__(self, spec, num_objects: int):
        super().__init__(spec, num_objects)
        self.limit = np.full(self.count.shape, np.inf)
        self.limit[spec.items] = spec.raw_constant

    def room(self, obj: int, node: int) -> bool:
        item = self.item_of[node]
        return item == OUT_OF_SCOPE or all(self.count[item, group] + 1 <= self.limit[item, group]
                                           for group in self.groups_of[obj])


class _Spread(_Counts):
    """PodTopologySpread's filter (``podtopologyspread/filtering.go``): the group's count in
    the item plus the pod itself, less the least count over the domains (0 with fewer
    domains than minDomains), is at most maxSkew."""

    def __init__(self, spec, num_objects: int):
        super().__init__(spec, num_objects)
        self.domains = spec.items
        self.in_domains = np.zeros(len(self.count), bool)
        self.in_domains[spec.items] = True
        self.max_skew, self.floor_is_zero = spec.max_skew, spec.floor_is_zero

    def room(self, obj: int, node: int) -> bool:
        item = self.item_of[node]
        if item == OUT_OF_SCOPE or not self.in_domains[item]:
            return True
        for group in self.groups_of[obj]:
            floor = 0 if self.floor_is_zero else self.count[self.domains, group].min()
            if self.count[item, group] + 1 - floor > self.max_skew:
                return False
        return True


class _Colocate(_Counts):
    """InterPodAffinity's filter for a group that selects itself
    (``interpodaffinity/filtering.go``, ``satisfyPodAffinity``), as many domains as the
    limit allows: a pod joins a domain where its group is, or opens one while the group
    holds fewer than its limit (the first pod goes anywhere)."""

    def __init__(self, spec, num_objects: int):
        super().__init__(spec, num_objects)
        self.domains = spec.items
        self.in_domains = np.zeros(len(self.count), bool)
        self.in_domains[spec.items] = True
        self.limits = spec.limits

    def room(self, obj: int, node: int) -> bool:
        item = self.item_of[node]
        if item == OUT_OF_SCOPE or not self.in_domains[item]:
            return True
        return all(self.count[item, group] > 0
                   or (self.count[self.domains, group] > 0).sum() + 1 <= self.limits[group]
                   for group in self.groups_of[obj])


def select_host(nodes: Sequence[int], scores: Sequence[float], rng: random.Random) -> int:
    """The highest score, ties broken by reservoir sampling (kube-scheduler's
    ``selectHost``)."""
    best, chosen, ties = None, -1, 0
    for node, score in zip(nodes, scores):
        if best is None or score > best:
            best, chosen, ties = score, node, 1
        elif score == best:
            ties += 1
            if rng.randrange(ties) == 0:
                chosen = node
    return chosen


def select_host_array(nodes: np.ndarray, scores: np.ndarray, rng: random.Random) -> int:
    """:func:`select_host` on arrays, with the same draws from ``rng``: a draw is made at
    every node scoring as much as the best before it (a tie with a best that a later node
    may still beat), with the number of such nodes at that score so far."""
    if len(nodes) == 0:
        return -1
    running = np.maximum.accumulate(scores)
    hits = np.flatnonzero(scores == running)
    chosen, best, ties = -1, None, 0
    for k in hits:
        if best is None or scores[k] > best:
            best, chosen, ties = scores[k], int(nodes[k]), 1
        else:
            ties += 1
            if rng.randrange(ties) == 0:
                chosen = int(nodes[k])
    return chosen


def go_div(numerator: int, denominator: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on int64."""
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator >= 0) == (denominator > 0) else -quotient
