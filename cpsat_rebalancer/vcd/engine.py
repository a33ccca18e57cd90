"""VMware Cloud Director's placement engine, to the letter of VMware's description.

The description is ``docs/vcd.md``'s source; its table maps every sentence of the algorithm
and its parameters to the code here and the test that pins it. In short: each VM is decided
on its own, one at a time in input order, and what it takes is subtracted before the next.

For one VM:
1. Filter clusters (resource pools) and datastores: disabled or red cluster, hardware
   version, vCPUs, storage profile, VM-host ``must``/``mustNot``, CPU or memory reservation
   above the unreserved capacity; datastores not connected, without the storage policy, the
   free space or (with IOPS enabled) the IOPS, disabled or past the red threshold (except on
   import), other than the VM's datastore affinity, or breaking a datastore-scope VM-VM rule.
   A network pool must offer the VM's network.
2. Score each cluster per resource (CPU, memory, storage) with requirement q:
   ``capacityScore = (unreserved - burst x burstRatio) / q``,
   ``futureCapacityScore = (unreserved - undeployed x futureDeployRatio) / q``, where
   ``undeployed`` is the reservations of the powered-off VMs placed in the cluster and not
   yet acted on, ``reservationScore = unreserved / q`` in place of a capacity score whose
   ``burst`` is not given; storage scores ``(capacity - provisioned) / q`` summed over the
   cluster's datastores (all three scores). ``weightedCapacityScore = capacity x w + future
   x (1 - w)``. The scores combine into the cluster's rank key by ``scoreCombination``.
3. Headroom per resource, on the figures before the VM: ``capacity x headRoom < unreserved``
   (storage: the same datastores' capacity and free-to-provision).
4. Each cluster goes to the first list that applies: avoid (VM-VM anti-affinity with a VM
   there, VM-host ``shouldNot``), no headroom, preferred (the VM's current cluster, VM-VM
   affinity partners there, VM-host ``should``, VMs of its organisation VDC there), else
   acceptable. Within a list, higher rank key first, then input order. The lists join as
   preferred + acceptable + no headroom + avoid, with yellow clusters after every healthy
   one (``yellowClusters``). The first cluster wins.
5. Datastore in the winner (``datastoreChoice``); a VM that has disks on a datastore keeps
   them there when a ranked cluster is connected to it (``keepDisks``). Host inside the
   winner when the cluster is modelled host by host (``hostPlacement``); no host with room
   is a power-on failure: the pool is tried ``powerOnAttempts`` times, then excluded, and
   the engine runs again without it.

Operations: ``create`` places. ``powerOn`` starts in the current location; a CPU or memory
failure there is tried ``powerOnAttempts`` times, then the engine re-places the VM without
the failed pools. ``import`` keeps a satisfactory placement (headroom ignored, disabled and
red-threshold datastores allowed), otherwise places with the headroom lists off. ``edit``
keeps the VM where its new requirements still fit, otherwise moves only what no longer fits.
``migrate`` re-places through the same filters onto its target (or any other pool). When
nothing fits the outcome is "not possible" with the reason, never an exception.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .inputs import (
    Cluster,
    Datastore,
    VcdScenario,
    Vm,
    cluster_reason,
    datastore_reason,
    vm_reason,
)

LISTS = ("preferred", "acceptable", "noHeadroom", "avoid")
RESOURCES = ("cpu", "memory", "storage")
NO_HOST = "no host has the unreserved CPU and memory"
CAPACITY_ERRORS = ("CPU", "memory", NO_HOST)  # what vCenter reports as a capacity error


@dataclass(frozen=True)
class ResourceScore:
    reservation: float
    capacity: float
    future: float
    weighted: float


def resource_score(unreserved: float, requirement: float, burst: float | None,
                   undeployed: float, burst_ratio: float, future_ratio: float,
                   weight: float) -> ResourceScore:
    """The four scores of one resource (see the module docstring); +inf when q = 0."""
    if requirement <= 0:
        return ResourceScore(math.inf, math.inf, math.inf, math.inf)
    reservation = unreserved / requirement
    capacity = reservation if burst is None else (unreserved - burst * burst_ratio) / requirement
    future = (unreserved - undeployed * future_ratio) / requirement
    return ResourceScore(reservation, capacity, future, capacity * weight + future * (1 - weight))


def storage_score(free: float, requirement: float) -> ResourceScore:
    """Storage: free-to-provision / requirement for every score (the description gives
    storage the same formula in all three)."""
    value = math.inf if requirement <= 0 else free / requirement
    return ResourceScore(value, value, value, value)


def combine(weighted: dict[str, float], how: str) -> tuple[float, ...]:
    """The cluster's rank key from its per-resource weighted scores (larger ranks first):
    ``minimum`` (the most constrained resource), ``mean`` (over the resources the VM
    needs), or ``lexicographic`` (CPU, then memory, then storage). A resource the VM does
    not need scores +inf and never decides a minimum or a mean."""
    values = [weighted[r] for r in RESOURCES]
    if how == "lexicographic":
        return tuple(values)
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return (math.inf,)
    return (min(finite),) if how == "minimum" else (sum(finite) / len(finite),)


@dataclass
class Ranked:
    """One candidate cluster as the engine ranked it for one VM."""

    cluster: str
    list: str  # one of LISTS
    yellow: bool
    key: tuple[float, ...]  # the combined score (compared largest first)
    scores: dict[str, ResourceScore]
    headroom: dict[str, bool]
    datastores: list[str]  # candidate datastores, in the engine's order of preference
    because: str = ""  # why the cluster is in its list

    @property
    def score(self) -> float:
        """The first component of the rank key (the whole key unless lexicographic)."""
        return self.key[0]


@dataclass
class Decision:
    """What the engine did with one VM."""

    vm: str
    operation: str
    outcome: str  # placed, stayed, kept, resident, not possible
    cluster: str | None = None
    datastore: str | None = None
    network_pool: str | None = None
    host: str | None = None
    reason: str = ""  # why not possible, or why the VM moved
    ranking: list[Ranked] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)  # cluster -> first failed filter
    attempts: list[str] = field(default_factory=list)  # power-on attempts that failed

    @property
    def placed(self) -> bool:
        return self.cluster is not None


class _State:
    """Remaining capacities, where every VM is, and the powered-off reservations waiting to
    be deployed; updated after each VM."""

    def __init__(self, scenario: VcdScenario):
        self.cpu = {c.name: c.cpu.unreserved for c in scenario.clusters}
        self.memory = {c.name: c.memory.unreserved for c in scenario.clusters}
        self.host_cpu = {(c.name, h.name): h.cpu.unreserved for c in scenario.clusters
                         for h in c.hosts}
        self.host_memory = {(c.name, h.name): h.memory.unreserved for c in scenario.clusters
                            for h in c.hosts}
        self.free = {d.name: d.free for d in scenario.datastores}
        self.provisioned = {d.name: d.provisioned for d in scenario.datastores}
        self.iops = {d.name: d.iops_capacity for d in scenario.datastores}
        self.where: dict[str, str] = {}  # VM -> cluster it is on now
        self.store: dict[str, str] = {}  # VM -> datastore its disks are on now
        self.off_cpu = dict.fromkeys(self.cpu, 0.0)  # powered-off reservations per cluster
        self.off_memory = dict.fromkeys(self.cpu, 0.0)
        self.waiting: set[str] = set()  # powered-off VMs counted in off_cpu / off_memory
        self._org = {vm.name: vm.org_vdc for vm in scenario.vms}
        self.org_members: dict[tuple[str, str], set[str]] = {}  # (cluster, org VDC) -> VMs
        for vm in scenario.vms:
            if vm.placement is None:
                continue
            cluster, datastore = vm.placement
            self._locate(vm.name, cluster, datastore)
            if vm.power_state == "off":
                self.off_cpu[cluster] += vm.cpu
                self.off_memory[cluster] += vm.memory
                self.waiting.add(vm.name)
            if vm.operation == "resident":
                self._hold_storage(vm, datastore)
                if vm.power_state == "on":
                    self._hold_reservation(vm, cluster, vm.host)

    def _hold_reservation(self, vm: Vm, cluster: str, host: str | None) -> None:
        self.cpu[cluster] -= vm.cpu
        self.memory[cluster] -= vm.memory
        if host is not None:
            self.host_cpu[cluster, host] -= vm.cpu
            self.host_memory[cluster, host] -= vm.memory

    def _hold_storage(self, vm: Vm, datastore: str) -> None:
        self.free[datastore] -= vm.storage
        self.provisioned[datastore] += vm.storage
        if self.iops[datastore] is not None:
            self.iops[datastore] -= vm.iops

    def undeployed(self, vm: Vm, cluster: str) -> tuple[float, float]:
        """Powered-off reservations waiting in ``cluster``, the VM's own left out."""
        own = vm.name in self.waiting and self.where.get(vm.name) == cluster
        return (self.off_cpu[cluster] - (vm.cpu if own else 0.0),
                self.off_memory[cluster] - (vm.memory if own else 0.0))

    def take(self, vm: Vm, cluster: str, datastore: str, host: str | None) -> None:
        """The VM is placed (and counted as running): it holds its reservation, storage and
        IOPS there and no longer waits to be deployed where it was."""
        if vm.name in self.waiting:
            self.waiting.discard(vm.name)
            self.off_cpu[self.where[vm.name]] -= vm.cpu
            self.off_memory[self.where[vm.name]] -= vm.memory
        self._hold_reservation(vm, cluster, host)
        self._hold_storage(vm, datastore)
        self._locate(vm.name, cluster, datastore)

    def _locate(self, vm: str, cluster: str, datastore: str) -> None:
        org = self._org[vm]
        if org is not None:
            if vm in self.where:
                self.org_members[self.where[vm], org].discard(vm)
            self.org_members.setdefault((cluster, org), set()).add(vm)
        self.where[vm], self.store[vm] = cluster, datastore


class VcdEngine:
    """The placement engine over a parsed :class:`VcdScenario`."""

    name = "vcd-engine"

    def __init__(self, scenario: VcdScenario):
        self.s = scenario
        self.t = scenario.tunables
        self._stores = {c.name: [d for d in scenario.datastores if c.name in d.clusters]
                        for c in scenario.clusters}  # connected datastores, input order
        self._should: dict[str, set[str]] = {}  # VM -> VM-host should clusters
        self._should_not: dict[str, set[str]] = {}
        for rule in scenario.vm_host:
            target = {"should": self._should, "shouldNot": self._should_not}.get(rule.kind)
            for vm in rule.vms if target is not None else ():
                target.setdefault(vm, set()).update(rule.clusters)
        self._groups = {key: self._by_member(rules) for key, rules in (
            ("affinity", scenario.affinity), ("anti", scenario.anti_affinity),
            ("dsAffinity", scenario.datastore_affinity),
            ("dsAnti", scenario.datastore_anti_affinity))}

    @staticmethod
    def _by_member(rules: dict[str, tuple[str, ...]]) -> dict[str, list[tuple[str, ...]]]:
        members: dict[str, list[tuple[str, ...]]] = {}
        for group in rules.values():
            for vm in group:
                members.setdefault(vm, []).append(group)
        return members

    def _partners(self, kind: str, vm: Vm, where: dict[str, str]) -> list[tuple[str, str]]:
        """(partner, location) for the members of ``vm``'s ``kind`` rules that are placed."""
        return [(m, where[m]) for group in self._groups[kind].get(vm.name, ())
                for m in group if m != vm.name and m in where]

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
        clash = [m for m, d in self._partners("dsAnti", vm, state.store) if d == ds.name]
        if clash:
            return f"datastore anti-affinity with {clash[0]}"
        partners = self._partners("dsAffinity", vm, state.store)
        if partners and partners[0][1] != ds.name:
            return f"datastore affinity with {partners[0][0]} (on {partners[0][1]})"
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
        if self.t.vm_vm_rules == "filters":
            clash = [m for m, c in self._partners("anti", vm, state.where) if c == cluster.name]
            if clash:
                return f"anti-affinity with {clash[0]}"
            partners = self._partners("affinity", vm, state.where)
            if partners and partners[0][1] != cluster.name:
                return f"affinity with {partners[0][0]} (on {partners[0][1]})"
        if vm.cpu > state.cpu[cluster.name]:
            return f"CPU reservation {vm.cpu:g} > unreserved {state.cpu[cluster.name]:g}"
        if vm.memory > state.memory[cluster.name]:
            return (f"memory reservation {vm.memory:g} > unreserved "
                    f"{state.memory[cluster.name]:g}")
        return None

    # ------------------------------------------------------------------ ranking
    def _rank(self, vm: Vm, cluster: Cluster, datastores: list[Datastore], state: _State,
              thresholds: bool) -> Ranked:
        t, name = self.t, cluster.name
        off_cpu, off_memory = state.undeployed(vm, name)
        pooled = datastores if t.storage_aggregate == "candidates" else self._stores[name]
        total = sum(d.capacity for d in pooled)
        provisionable = sum(max(0.0, d.capacity - state.provisioned[d.name]) for d in pooled)
        scores = {
            "cpu": resource_score(state.cpu[name], vm.cpu, cluster.cpu.burst, off_cpu,
                                  t.cpu_burst_ratio, t.future_deploy_ratio,
                                  t.current_score_weight),
            "memory": resource_score(state.memory[name], vm.memory, cluster.memory.burst,
                                     off_memory, t.memory_burst_ratio, t.future_deploy_ratio,
                                     t.current_score_weight),
            "storage": storage_score(provisionable, vm.storage),
        }
        headroom = {"cpu": cluster.cpu.capacity * t.cpu_headroom < state.cpu[name],
                    "memory": cluster.memory.capacity * t.memory_headroom < state.memory[name],
                    "storage": total * t.storage_headroom < provisionable}
        kind, because = self._list(vm, name, headroom, state, thresholds)
        return Ranked(name, kind, cluster.health == "yellow",
                      combine({r: s.weighted for r, s in scores.items()}, t.score_combination),
                      scores, headroom, self._order_datastores(datastores, state, thresholds),
                      because)

    def _list(self, vm: Vm, cluster: str, headroom: dict[str, bool], state: _State,
              thresholds: bool) -> tuple[str, str]:
        """The list a cluster joins, checked in the description's order, and why."""
        if self.t.vm_vm_rules == "lists":
            clash = [m for m, c in self._partners("anti", vm, state.where) if c == cluster]
            if clash:
                return "avoid", f"anti-affinity with {clash[0]}"
        if cluster in self._should_not.get(vm.name, ()):
            return "avoid", "VM-host rule (should not)"
        if thresholds and not all(headroom.values()):
            return "noHeadroom", "no " + ", ".join(r for r, ok in headroom.items() if not ok) \
                + " headroom"
        if vm.placement is not None and vm.placement[0] == cluster:
            return "preferred", "current cluster"
        if self.t.vm_vm_rules == "lists":
            partners = [m for m, c in self._partners("affinity", vm, state.where) if c == cluster]
            if partners:
                return "preferred", f"affinity with {partners[0]}"
        if cluster in self._should.get(vm.name, ()):
            return "preferred", "VM-host rule (should)"
        if self.t.org_vdc_colocation == "preferred" and vm.org_vdc is not None:
            mates = state.org_members.get((cluster, vm.org_vdc), set()) - {vm.name}
            if mates:
                return "preferred", f"organisation VDC '{vm.org_vdc}' ({min(mates)})"
        return "acceptable", ""

    def _order_datastores(self, datastores: list[Datastore], state: _State,
                          thresholds: bool) -> list[str]:
        """``mostFree``: datastores keeping their storage headroom first (unless thresholds
        are ignored), then the most free space; ``firstFit``: input order."""
        if self.t.datastore_choice == "firstFit":
            return [d.name for d in datastores]
        roomy = {d.name: d.capacity * self.t.storage_headroom < state.free[d.name]
                 for d in datastores}
        order = sorted(range(len(datastores)), key=lambda k: (
            thresholds and not roomy[datastores[k].name], -state.free[datastores[k].name], k))
        return [datastores[k].name for k in order]

    def order(self, ranked: list[Ranked]) -> list[Ranked]:
        """The four lists joined (preferred, acceptable, no headroom, avoid), the higher key
        first in each, input order breaking ties; yellow clusters after every healthy
        one (``lastResort``) or after the healthy ones of their own list (``withinLists``)."""
        def key(r: Ranked):
            negated = tuple(-v for v in r.key)
            if self.t.yellow_clusters == "lastResort":
                return (r.yellow, LISTS.index(r.list), negated)
            return (LISTS.index(r.list), r.yellow, negated)
        return sorted(ranked, key=key)

    # ------------------------------------------------------------------ hosts
    def pick_host(self, vm: Vm, cluster: Cluster, state: _State) -> str | None:
        """The host inside ``cluster`` (modelled host by host) that takes the VM, or None
        when no enabled host has the unreserved CPU and memory: ``mostFree`` takes the host
        with the most unreserved memory, then CPU, left after placing (a balancing choice in
        the spirit of DRS initial placement); ``firstFit`` the first host that fits."""
        fits = [h.name for h in cluster.hosts if h.enabled
                and vm.cpu <= state.host_cpu[cluster.name, h.name]
                and vm.memory <= state.host_memory[cluster.name, h.name]]
        if not fits or self.t.host_placement == "firstFit":
            return fits[0] if fits else None
        return max(fits, key=lambda h: (state.host_memory[cluster.name, h],
                                        state.host_cpu[cluster.name, h], -fits.index(h)))

    def _power_on_failed(self, decision: Decision, cluster: str, why: str) -> None:
        for attempt in range(1, self.t.power_on_attempts + 1):
            decision.attempts.append(f"{cluster}: attempt {attempt} of "
                                     f"{self.t.power_on_attempts} failed ({why})")

    # ------------------------------------------------------------------ one VM
    def _ranking(self, vm: Vm, state: _State, excluded: set[str], thresholds: bool,
                 only: str | None, decision: Decision) -> list[Ranked]:
        ranked = []
        decision.rejected = {}
        for cluster in self.s.clusters:
            if cluster.name in excluded:
                decision.rejected[cluster.name] = "a pool the VM failed to power on in"
                continue
            if only is not None and cluster.name != only:
                decision.rejected[cluster.name] = f"the VM keeps its cluster '{only}'"
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
        return self.order(ranked)

    def _keeps_disks(self, vm: Vm) -> str | None:
        """The datastore whose disks the VM keeps when it moves, if any."""
        if vm.placement is None or vm.operation == "create":
            return None
        if vm.operation == "migrate" and vm.target and vm.target[1] is not None:
            return None
        if self.t.keep_disks == "powerOnOnly" and vm.operation != "powerOn":
            return None
        return vm.placement[1]

    def _place(self, vm: Vm, state: _State, excluded: set[str], thresholds: bool,
               decision: Decision, only: str | None = None) -> None:
        """Rank, take the top cluster, its datastore and host; a cluster with no host for
        the VM fails to power on and the engine runs again without it."""
        reason = vm_reason(self.s, vm)
        if reason:
            decision.outcome, decision.reason = "not possible", reason
            return
        keep = self._keeps_disks(vm)
        while True:
            ranking = self._ranking(vm, state, excluded, thresholds, only, decision)
            decision.ranking = ranking
            if keep is not None and any(keep in r.datastores for r in ranking):
                ranking = [r for r in ranking if keep in r.datastores]
            if not ranking:
                decision.outcome = "not possible"
                decision.reason = (decision.reason + "; " if decision.reason else "") + \
                    "no cluster fits: " + "; ".join(f"{c}: {r}"
                                                    for c, r in decision.rejected.items())
                return
            best = ranking[0]
            cluster = self.s.cluster(best.cluster)
            host = self.pick_host(vm, cluster, state) if cluster.hosts else None
            if cluster.hosts and host is None:
                self._power_on_failed(decision, best.cluster, NO_HOST)
                excluded = excluded | {best.cluster}
                continue
            datastore = keep if keep in best.datastores else best.datastores[0]
            decision.outcome = "placed"
            decision.cluster, decision.datastore, decision.host = best.cluster, datastore, host
            decision.network_pool = self.s.network_pool(vm.network)
            state.take(vm, best.cluster, datastore, host)
            return

    def _current_fails(self, vm: Vm, state: _State) -> tuple[str | None, str | None]:
        """Why the VM's current cluster, and its current datastore, fail a filter now."""
        cluster_name, ds_name = vm.placement
        cluster = self.s.cluster(cluster_name)
        cluster_why = vm_reason(self.s, vm) or self._cluster_reason(vm, cluster, state)
        ds_why = self._datastore_reason(vm, self.s.datastore(ds_name), state)
        return cluster_why, ds_why

    def _stay(self, vm: Vm, state: _State, decision: Decision, outcome: str) -> bool:
        """Keep the VM where it is when a host takes it (or the cluster has no hosts)."""
        cluster_name, ds_name = vm.placement
        cluster = self.s.cluster(cluster_name)
        host = self.pick_host(vm, cluster, state) if cluster.hosts else None
        if cluster.hosts and host is None:
            return False
        decision.outcome = outcome
        decision.cluster, decision.datastore, decision.host = cluster_name, ds_name, host
        decision.network_pool = self.s.network_pool(vm.network)
        state.take(vm, cluster_name, ds_name, host)
        return True

    def decide(self, vm: Vm, state: _State) -> Decision:
        decision = Decision(vm.name, vm.operation, "not possible")
        if vm.operation == "resident":
            decision.outcome = "resident"
            decision.cluster, decision.datastore = vm.placement
            decision.host = vm.host
            return decision
        if vm.operation in ("create", "migrate"):
            self._place(vm, state, set(), True, decision)
            return decision
        here = vm.placement[0]
        cluster_why, ds_why = self._current_fails(vm, state)
        if cluster_why is None and ds_why is None:
            outcome = {"powerOn": "stayed", "import": "kept", "edit": "stayed"}[vm.operation]
            if self._stay(vm, state, decision, outcome):
                return decision
            cluster_why = NO_HOST
        decision.reason = "current placement fails (" + "; ".join(
            why for why in (cluster_why and f"cluster {here}: {cluster_why}",
                            ds_why and f"datastore {vm.placement[1]}: {ds_why}") if why) + ")"
        if vm.operation == "powerOn":  # the pool is excluded only when it failed
            if cluster_why is not None and cluster_why.startswith(CAPACITY_ERRORS):
                self._power_on_failed(decision, here, cluster_why)
            self._place(vm, state, set() if cluster_why is None else {here}, True, decision)
        elif vm.operation == "import":
            self._place(vm, state, set(), False, decision)
        else:  # edit: the cluster stays when only the datastore no longer fits
            if cluster_why is None:
                reason = decision.reason
                self._place(vm, state, set(), True, decision, only=here)
                if decision.placed:
                    return decision
                decision.reason = reason
            self._place(vm, state, set(), True, decision)
        return decision

    def run(self) -> list[Decision]:
        """Every VM in input order, capacities updated after each."""
        state = _State(self.s)
        return [self.decide(vm, state) for vm in self.s.vms]


def place(scenario: VcdScenario) -> list[Decision]:
    """The engine's decisions for every VM of ``scenario``, in input order."""
    return VcdEngine(scenario).run()
