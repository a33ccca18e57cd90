"""The descheduler's LowNodeUtilization and HighNodeUtilization as rebalancers of a
snapshot: evict as the plugin does, then let kube-scheduler place the evicted pods (and
the pods already pending before them).

Facts from ``kubernetes-sigs/descheduler`` ``pkg/framework/plugins/nodeutilization``
(read, not copied): usage is the sum of the requests of the pods on a node, as a
percentage of its allocatable, for cpu, memory and pods (and any resource given a
threshold).

* ``descheduler-low-node-utilization`` (``lownodeutilization.go``): a node is
  underutilized when every resource is at or below ``thresholds`` (a cordoned node never
  is), overutilized when some resource is above ``targetThresholds``. Nothing happens
  unless some node is underutilized, not all are, and some is overutilized. The room is
  the sum over underutilized nodes of allocatable capped at the target minus usage.
  Overutilized nodes, most used first (usage summed over resources, cpu in millicores),
  evict pods while the node is still above its target on some resource and the room is
  positive on every resource; each eviction takes the pod off the node and off the room.
  Re-placed by ``kube-default``.
* ``descheduler-high-node-utilization`` (``highnodeutilization.go``): underutilized nodes
  (every resource at or below ``thresholds``; resources not given default to 100) are
  drained, least used first, while the room on the other nodes (allocatable minus usage)
  is positive on every resource. Re-placed by ``kube-most-allocated``, as the
  descheduler's documentation advises.

A pod is evicted only when it may move (not fixed), its disruption budgets allow one more
(the eviction API refuses otherwise), and some destination node's filters admit it
(``PodToleratesTaints``, here every node filter). The scenario holds no priority, QoS or
owner: pods are evicted in object order, and pods without owners, DaemonSet pods and
critical pods are not told apart. Evicted pods wait in the pending container (a scenario
without one is left as it is). The thresholds are the documentation's examples: 20% and
50% for LowNodeUtilization, 20% for HighNodeUtilization.
"""

from __future__ import annotations

import numpy as np

from .base import HeuristicOptions, Instance, register
from .cluster import ClusterView
from .kube_scheduler import KubeScheduler, least_allocated, most_allocated

BASIC = ("cpu", "memory", "pods")
LOW_THRESHOLDS = {"cpu": 20.0, "memory": 20.0, "pods": 20.0}
LOW_TARGETS = {"cpu": 50.0, "memory": 50.0, "pods": 50.0}
HIGH_THRESHOLDS = {"cpu": 20.0, "memory": 20.0}


class _Descheduler:
    def __init__(self, name: str, seed: int = 0):
        self.name = name
        self.seed = seed
        self.details: dict = {}

    def assign(self, instance: Instance) -> np.ndarray:
        view = ClusterView(instance)
        waiting = list(view.pending_objects())
        evicted = self.evict(view) if view.pending.any() else []
        scheduler = KubeScheduler(self.name, self.rescheduler(), self.seed)
        placed, left = scheduler.schedule(view, waiting + evicted)
        self.details = {"evicted": len(evicted), "placed": placed, "left pending": left}
        return view.final

    def rescheduler(self):
        raise NotImplementedError

    def evict(self, view: ClusterView) -> list[int]:
        raise NotImplementedError

    @staticmethod
    def resources(view: ClusterView, thresholds: dict[str, float]) -> list[str]:
        return [r for r in dict.fromkeys([*BASIC, *thresholds]) if r in view.limits]

    @staticmethod
    def usage_percent(view: ClusterView, node: int, resource: str) -> float:
        capacity = view.limits[resource][node]
        if not np.isfinite(capacity) or capacity <= 0:
            return 0.0
        return 100.0 * view.load[resource][node] / capacity

    @staticmethod
    def schedulable(view: ClusterView, node: int) -> bool:
        """Not cordoned, as far as a scenario tells: some pod not on it may enter it."""
        return bool((view.allowed[:, node] & (view.problem.initial != node)).any())

    def drain(self, view: ClusterView, sources: list[int], destinations: list[int],
              room: dict[str, float], keep_going) -> list[int]:
        """``evictPodsFromSourceNodes``: evict from each source while ``keep_going``."""
        evicted: list[int] = []
        moved_in_budget = [0.0] * len(view.budgets)
        for node in sources:
            if not keep_going(node, room):
                continue
            for obj in np.flatnonzero(view.final == node):
                obj = int(obj)
                if view.fixed[obj] or not view.allowed[obj, destinations].any():
                    continue
                counted = [k for k, (members, _) in enumerate(view.budgets) if members[obj]]
                if any(moved_in_budget[k] + 1 > view.budgets[k][1] for k in counted):
                    continue
                for k in counted:
                    moved_in_budget[k] += 1
                for r in room:
                    room[r] -= view.sizes[r][obj]
                view.unplace(obj)
                evicted.append(obj)
                if not keep_going(node, room):
                    break
        return evicted


class LowNodeUtilization(_Descheduler):
    def __init__(self, seed: int = 0, thresholds: dict[str, float] | None = None,
                 targets: dict[str, float] | None = None):
        super().__init__("descheduler-low-node-utilization", seed)
        self.thresholds = dict(LOW_THRESHOLDS if thresholds is None else thresholds)
        self.targets = dict(LOW_TARGETS if targets is None else targets)

    def rescheduler(self):
        return least_allocated

    def evict(self, view: ClusterView) -> list[int]:
        resources = self.resources(view, self.thresholds)
        nodes = [int(n) for n in view.nodes]
        low = [n for n in nodes if self.schedulable(view, n) and all(
            self.usage_percent(view, n, r) <= self.thresholds.get(r, 100.0)
            for r in resources if r in self.thresholds)]
        high = [n for n in nodes if any(
            self.usage_percent(view, n, r) > self.targets[r]
            for r in resources if r in self.targets)]
        if not low or len(low) == len(nodes) or not high:
            return []

        def capped(node: int, r: str) -> float:
            """``capNodeCapacityToThreshold`` at the target (integer, truncated)."""
            limit = view.limits[r][node]
            return float(int(self.targets.get(r, 100.0) * 0.01 * limit)) \
                if np.isfinite(limit) else np.inf

        room = {r: sum(capped(n, r) - view.load[r][n] for n in low) for r in resources}

        def keep_going(node: int, room: dict[str, float]) -> bool:
            above = any(view.load[r][node] > capped(node, r) for r in resources)
            return above and all(v > 0 for v in room.values())

        high.sort(key=lambda n: -self._total(view, n, resources))
        return self.drain(view, high, low, room, keep_going)

    @staticmethod
    def _total(view: ClusterView, node: int, resources: list[str]) -> float:
        return float(sum(view.load[r][node] for r in resources))


class HighNodeUtilization(_Descheduler):
    def __init__(self, seed: int = 0, thresholds: dict[str, float] | None = None):
        super().__init__("descheduler-high-node-utilization", seed)
        self.thresholds = dict(HIGH_THRESHOLDS if thresholds is None else thresholds)

    def rescheduler(self):
        return most_allocated

    def evict(self, view: ClusterView) -> list[int]:
        resources = self.resources(view, self.thresholds)
        nodes = [int(n) for n in view.nodes if self.schedulable(view, int(n))]
        low = [n for n in nodes if all(
            self.usage_percent(view, n, r) <= self.thresholds.get(r, 100.0) for r in resources)]
        high = [n for n in nodes if n not in low]
        if not low or len(low) == len(nodes) or not high:
            return []
        room = {r: sum(view.limits[r][n] - view.load[r][n] for n in high) for r in resources}

        def keep_going(node: int, room: dict[str, float]) -> bool:
            return all(v > 0 for v in room.values())

        low.sort(key=lambda n: LowNodeUtilization._total(view, n, resources))
        return self.drain(view, low, high, room, keep_going)


@register("descheduler-low-node-utilization")
def _low(options: HeuristicOptions) -> LowNodeUtilization:
    return LowNodeUtilization(options.seed)


@register("descheduler-high-node-utilization")
def _high(options: HeuristicOptions) -> HighNodeUtilization:
    return HighNodeUtilization(options.seed)
