"""VMware Cloud Director's placement engine: a faithful greedy ranking heuristic.

Implements the behaviour VMware publishes for the VCD placement engine (see the README
section "VMware Cloud Director placement"): each VM is placed on its own, one at a time in
input order (a vApp's VMs in the order listed), and the capacities it takes are subtracted
before the next VM is ranked.

For one VM:
1. Filter clusters (resource pools): disabled or red, unsupported hardware version, too many
   vCPUs, storage profile not offered, VM-host ``must``/``mustNot`` rules, VM-VM anti-affinity
   (a cluster holding a placed member) and affinity (only the cluster of the placed members),
   CPU or memory reservation above the unreserved capacity, and no datastore that is
   connected, offers the storage policy, has the free space and (when IOPS is enabled) the
   IOPS, and is enabled and not past its red threshold (except on import). A network pool
   must offer the VM's network.
2. Score each remaining cluster per resource r (CPU, memory, storage) with requirement q:
   ``reservationScore = unreserved / q``;
   ``capacityScore = (unreserved - burst * burstRatio) / q`` (storage: ``free / q``);
   ``futureCapacityScore = (unreserved - undeployed * futureDeployRatio) / q``;
   ``weightedCapacityScore = capacityScore * w + futureCapacityScore * (1 - w)`` with
   ``w = currentScoreWeight``. The cluster's score is the smallest weighted score over its
   resources (VMware: the engine favours pools by "the minimum" of their unreserved CPU and
   memory and free storage), so larger means less constrained.
3. Headroom check per resource, after placing: ``unreserved - q >= headRoom * capacity`` for
   CPU and memory, and for storage some candidate datastore with
   ``free - q >= storageHeadRoom * datastore capacity``.
4. Four lists, concatenated: preferred (the cluster of placed affinity members, the VM's
   current cluster, VM-host ``should`` clusters), acceptable, no-headroom (fails a headroom
   check), avoid (VM-host ``shouldNot`` clusters). A cluster goes to the first that applies of
   avoid, preferred, no-headroom, acceptable. Within a list healthy (green) clusters come
   before yellow ones, then the higher score, then input order. The first cluster wins.
5. Datastore: among the winner's candidate datastores, one with storage headroom first, then
   the most free space, then input order. Network pool: the first pool offering the network.

Choices where the published description is vague (also in the README): scores use the
remaining capacity at the time of the VM's turn; ``reservationScore`` replaces a capacity
or future score whose input (``burst``, ``undeployed``) is not given; a zero requirement
scores +inf (it never constrains); storage has no future score (its weighted score is its
capacity score), and its free space is the sum over the VM's candidate datastores of the
cluster; VM-VM rules are required (hard), so "strong affinity" makes the affinity cluster
the only candidate and the avoid list holds VM-host ``shouldNot`` clusters.

Operations: ``create`` places as above. ``powerOn`` keeps the VM's current cluster and
datastore when they still pass every filter (it fits); otherwise it re-places the VM with
the failed cluster excluded. ``import`` keeps a satisfactory placement (filters passed;
disabled and red-threshold datastores allowed, headroom ignored); otherwise it places the VM
with the headroom thresholds ignored (no-headroom clusters count as acceptable). When
nothing fits the outcome is "not possible" with the reason, never an exception.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .inputs import (
    Cluster,
    Datastore,
    Resource,
    VcdScenario,
    Vm,
    cluster_reason,
    datastore_reason,
    vm_reason,
)

LISTS = ("preferred", "acceptable", "noHeadroom", "avoid")


@dataclass(frozen=True)
class ResourceScore:
    reservation: float
    capacity: float
    future: float
    weighted: float


def resource_score(unreserved: float, requirement: float, burst: float | None,
                   undeployed: float | None, burst_ratio: float, future_ratio: float,
                   weight: float) -> ResourceScore:
    """The four scores of one resource (see the module docstring); +inf when q = 0."""
    if requirement <= 0:
        return ResourceScore(math.inf, math.inf, math.inf, math.inf)
    reservation = unreserved / requirement
    capacity = reservation if burst is None else (unreserved - burst * burst_ratio) / requirement
    future = (reservation if undeployed is None
              else (unreserved - undeployed * future_ratio) / requirement)
    return ResourceScore(reservation, capacity, future, capacity * weight + future * (1 - weight))


def storage_score(free: float, requirement: float) -> ResourceScore:
    """Storage: free / requirement for every score (no burst, no future deployments)."""
    value = math.inf if requirement <= 0 else free / requirement
    return ResourceScore(value, value, value, value)


@dataclass
class Ranked:
    """One candidate cluster as the engine ranked it for one VM."""

    cluster: str
    list: str  # one of LISTS
    yellow: bool
    score: float  # min over resources of the weighted score
    scores: dict[str, ResourceScore]
    headroom: dict[str, bool]
    datastores: list[str]  # candidate datastores, in the engine's order of preference


@dataclass
class Decision:
    """What the engine did with one VM."""

    vm: str
    operation: str
    outcome: str  # placed, stayed, kept, not possible
    cluster: str | None = None
    datastore: str | None = None
    network_pool: str | None = None
    reason: str = ""  # why not possible, or why a power-on / import moved
    ranking: list[Ranked] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)  # cluster -> first failed filter

    @property
    def placed(self) -> bool:
        return self.cluster is not None


class _State:
    """Remaining capacities and where group members are, updated after each VM."""

    def __init__(self, scenario: VcdScenario):
        self.cpu = {c.name: c.cpu.unreserved for c in scenario.clusters}
        self.memory = {c.name: c.memory.unreserved for c in scenario.clusters}
        self.free = {d.name: d.free for d in scenario.datastores}
        self.iops = {d.name: d.iops_capacity for d in scenario.datastores}
        self.where: dict[str, str] = {}  # placed VM -> cluster

    def take(self, vm: Vm, cluster: str, datastore: str) -> None:
        self.cpu[cluster] -= vm.cpu
        self.memory[cluster] -= vm.memory
        self.free[datastore] -= vm.storage
        if self.iops[datastore] is not None:
            self.iops[datastore] -= vm.iops
        self.where[vm.name] = cluster


class VcdEngine:
    """The placement engine over a parsed :class:`VcdScenario`."""

    name = "vcd-engine"

    def __init__(self, scenario: VcdScenario):
        self.s = scenario
        self.t = scenario.tunables
        self._affinity = {vm: members for members in scenario.affinity.values()
                          for vm in members}
        self._stores = {c.name: [d for d in scenario.datastores if c.name in d.clusters]
                        for c in scenario.clusters}  # connected datastores, input order
        self._should: dict[str, set[str]] = {}  # VM -> VM-host should clusters
        self._should_not: dict[str, set[str]] = {}
        for rule in scenario.vm_host:
            target = {"should": self._should, "shouldNot": self._should_not}.get(rule.kind)
            for vm in rule.vms if target is not None else ():
                target.setdefault(vm, set()).update(rule.clusters)
        self._anti: dict[str, list[tuple[str, ...]]] = {}
        for members in scenario.anti_affinity.values():
            for vm in members:
                self._anti.setdefault(vm, []).append(members)

    # ------------------------------------------------------------------ filters
    def _datastore_reason(self, vm: Vm, ds: Datastore, state: _State) -> str | None:
        reason = datastore_reason(self.s, vm, ds)
        if reason:
            return reason
        if vm.storage > state.free[ds.name]:
            return f"storage {vm.storage:g} > free {state.free[ds.name]:g}"
        remaining = state.iops[ds.name]
        if self.t.iops_enabled and remaining is not None and vm.iops > remaining:
            return f"IOPS {vm.iops:g} > remaining {remaining:g}"
        return None

    def _candidate_datastores(self, vm: Vm, cluster: Cluster, state: _State
                              ) -> tuple[list[Datastore], dict[str, str]]:
        good, why = [], {}
        for ds in self._stores[cluster.name]:
            reason = self._datastore_reason(vm, ds, state)
            if reason:
                why[ds.name] = reason
            else:
                good.append(ds)
        return good, why

    def _cluster_reason(self, vm: Vm, cluster: Cluster, state: _State) -> str | None:
        reason = cluster_reason(self.s, vm, cluster)
        if reason:
            return reason
        for members in self._anti.get(vm.name, []):
            clash = [m for m in members if m != vm.name and state.where.get(m) == cluster.name]
            if clash:
                return f"anti-affinity with {clash[0]}"
        partners = [m for m in self._affinity.get(vm.name, ()) if m != vm.name
                    and m in state.where]
        if partners and state.where[partners[0]] != cluster.name:
            return f"affinity with {partners[0]} (on {state.where[partners[0]]})"
        if vm.cpu > state.cpu[cluster.name]:
            return f"CPU reservation {vm.cpu:g} > unreserved {state.cpu[cluster.name]:g}"
        if vm.memory > state.memory[cluster.name]:
            return (f"memory reservation {vm.memory:g} > unreserved "
                    f"{state.memory[cluster.name]:g}")
        return None

    # ------------------------------------------------------------------ ranking
    def _rank(self, vm: Vm, cluster: Cluster, datastores: list[Datastore], state: _State,
              thresholds: bool) -> Ranked:
        t = self.t
        scores = {
            "cpu": self._score(cluster.cpu, state.cpu[cluster.name], vm.cpu, t.cpu_burst_ratio),
            "memory": self._score(cluster.memory, state.memory[cluster.name], vm.memory,
                                  t.memory_burst_ratio),
            "storage": storage_score(sum(state.free[d.name] for d in datastores), vm.storage),
        }
        roomy = {d.name: state.free[d.name] - vm.storage >= t.storage_headroom * d.capacity
                 for d in datastores}
        headroom = {
            "cpu": state.cpu[cluster.name] - vm.cpu >= t.cpu_headroom * cluster.cpu.capacity,
            "memory": state.memory[cluster.name] - vm.memory
            >= t.memory_headroom * cluster.memory.capacity,
            "storage": any(roomy.values()),
        }
        order = sorted(range(len(datastores)), key=lambda k: (
            not (roomy[datastores[k].name] or not thresholds), -state.free[datastores[k].name],
            k))
        if self._is_avoided(vm, cluster.name):
            kind = "avoid"
        elif self._is_preferred(vm, cluster.name, state):
            kind = "preferred"
        elif thresholds and not all(headroom.values()):
            kind = "noHeadroom"
        else:
            kind = "acceptable"
        return Ranked(cluster.name, kind, cluster.health == "yellow",
                      min(s.weighted for s in scores.values()), scores, headroom,
                      [datastores[k].name for k in order])

    def _score(self, resource: Resource, unreserved: float, requirement: float,
               burst_ratio: float) -> ResourceScore:
        return resource_score(unreserved, requirement, resource.burst, resource.undeployed,
                              burst_ratio, self.t.future_deploy_ratio,
                              self.t.current_score_weight)

    def _is_avoided(self, vm: Vm, cluster: str) -> bool:
        return cluster in self._should_not.get(vm.name, ())

    def _is_preferred(self, vm: Vm, cluster: str, state: _State) -> bool:
        if vm.placement is not None and vm.placement[0] == cluster:
            return True
        if any(state.where.get(m) == cluster for m in self._affinity.get(vm.name, ())
               if m != vm.name):
            return True
        return cluster in self._should.get(vm.name, ())

    @staticmethod
    def order(ranked: list[Ranked]) -> list[Ranked]:
        """The four lists concatenated; in each, healthy before yellow, then higher score
        (stable: input order breaks ties)."""
        return sorted(ranked, key=lambda r: (LISTS.index(r.list), r.yellow, -r.score))

    # ------------------------------------------------------------------ one VM
    def _place(self, vm: Vm, state: _State, exclude: str | None, thresholds: bool,
               decision: Decision) -> None:
        reason = vm_reason(self.s, vm)
        if reason:
            decision.outcome, decision.reason = "not possible", reason
            return
        ranked = []
        for cluster in self.s.clusters:
            if cluster.name == exclude:
                decision.rejected[cluster.name] = "the pool the VM failed to power on in"
                continue
            why = self._cluster_reason(vm, cluster, state)
            if why is None:
                datastores, ds_why = self._candidate_datastores(vm, cluster, state)
                if not datastores:
                    why = "no datastore" + (": " + "; ".join(
                        f"{d}: {r}" for d, r in ds_why.items()) if ds_why else " connected")
            if why is not None:
                decision.rejected[cluster.name] = why
                continue
            ranked.append(self._rank(vm, cluster, datastores, state, thresholds))
        decision.ranking = self.order(ranked)
        if not decision.ranking:
            decision.outcome = "not possible"
            decision.reason = (decision.reason + "; " if decision.reason else "") + \
                "no cluster fits: " + "; ".join(f"{c}: {r}" for c, r in decision.rejected.items())
            return
        best = decision.ranking[0]
        decision.outcome = "placed"
        decision.cluster, decision.datastore = best.cluster, best.datastores[0]
        decision.network_pool = self.s.network_pool(vm.network)
        state.take(vm, best.cluster, best.datastores[0])

    def _current_fits(self, vm: Vm, state: _State) -> str | None:
        """Why the VM's current placement fails a filter now, or None when it fits."""
        cluster_name, ds_name = vm.placement
        reason = vm_reason(self.s, vm)
        if reason:
            return reason
        cluster = self.s.clusters[self.s.cluster_index[cluster_name]]
        reason = self._cluster_reason(vm, cluster, state)
        if reason:
            return f"cluster {cluster_name}: {reason}"
        ds = self.s.datastores[self.s.datastore_index[ds_name]]
        reason = self._datastore_reason(vm, ds, state)
        return f"datastore {ds_name}: {reason}" if reason else None

    def decide(self, vm: Vm, state: _State) -> Decision:
        decision = Decision(vm.name, vm.operation, "not possible")
        if vm.operation == "create":
            self._place(vm, state, None, True, decision)
            return decision
        why = self._current_fits(vm, state)
        if why is None:
            cluster, datastore = vm.placement
            decision.outcome = "stayed" if vm.operation == "powerOn" else "kept"
            decision.cluster, decision.datastore = cluster, datastore
            decision.network_pool = self.s.network_pool(vm.network)
            state.take(vm, cluster, datastore)
            return decision
        decision.reason = f"current placement fails ({why})"
        if vm.operation == "powerOn":
            self._place(vm, state, vm.placement[0], True, decision)
        else:
            self._place(vm, state, None, False, decision)
        return decision

    def run(self) -> list[Decision]:
        """Every VM in input order, capacities updated after each."""
        state = _State(self.s)
        return [self.decide(vm, state) for vm in self.s.vms]


def place(scenario: VcdScenario) -> list[Decision]:
    """The engine's decisions for every VM of ``scenario``, in input order."""
    return VcdEngine(scenario).run()
