"""The exact counterpart of the VCD placement engine: the same decision as an ordinary
cpsat_rebalancer scenario dict, solved by the general engine, and the comparison.

Mapping (objects ``vm``, containers ``placement``):
- each VM is an object (dimensions ``cpu``, ``memory``, ``storage``, ``iops``: its
  reservations, disk size and disk IOPS; ``vm`` = 1); a new VM starts in ``unplaced``, a
  placed one in its ``cluster/datastore`` container;
- containers: ``unplaced`` (no capacity, in no scope), one ``cluster/datastore`` per
  connected pair, and ``cluster/`` holding the fixed object ``reserved/<cluster>`` (what the
  rest of the world reserves: capacity - unreserved), so relative utilization is real;
- scopes ``cluster`` and ``datastore`` map containers to their cluster and datastore;
  cluster capacities are the clusters' CPU and memory capacities, datastore capacities the
  free space and IOPS capacity left for the listed VMs.

Hard constraints (HARD policy): CPU and memory reservations within the cluster capacity,
storage within the datastore's free space, IOPS (when enabled) within the IOPS capacity
(capacitySpec); every order-independent filter of the engine (disabled/red cluster, hardware
version, vCPUs, storage profile and policy, VM-host must/mustNot, network pool, disabled and
red-threshold datastores except on import) as a capacitySpec with limit 0 on the forbidden
containers, one per distinct set of forbidden containers (``compat<k>`` dimensions, 1 for
the VMs that share the set, so identical VMs still form one class); VM-VM anti-affinity as a
capacitySpec on a per-group dimension (1 for members) over ``cluster`` with absolute limit 1;
VM-VM affinity as colocateGroupsSpec (limit 1) over ``cluster`` on the partition
``affinity``; the ``reserved/`` objects fixed (avoidMovingSpec) and their containers closed
(nonAcceptingSpec).

Then, by tuple position:
0. place as many VMs as possible: toFreeSpec on ``unplaced`` (the number left unplaced);
1. keep preferred placements: SOFT capacitySpecs (cost 1 per VM, no state penalty) with
   limit 0 outside each VM's preferred containers (its current cluster/datastore, the
   containers of its VM-host ``should`` clusters) and on its ``shouldNot`` clusters: the
   number of VMs off their preferred placements or on avoided clusters;
2. avoid no-headroom clusters: SOFT capacitySpecs with thresholds ``(1 - headRoom) x
   capacity`` (CPU, memory) and ``free - storageHeadRoom x capacity`` (storage): the
   normalized reservation above the headroom line;
3. avoid yellow clusters: the number of VMs on yellow clusters;
4. balance relative memory utilization: balanceSpec IDEAL over the usable clusters
   (compared leximin, the order VCD's least-constrained-first ranking aims at).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..api import solve_problem
from ..compare import Entry, compare_assignment
from ..errors import InputError
from ..heuristics import Instance
from ..result import OPTIMAL, SolveResult
from ..scenario import SolverOptions
from ..specs.common import REGISTRY
from .engine import Decision, place
from .inputs import VcdScenario, cluster_reason, datastore_reason, vm_reason

UNPLACED = "unplaced"
POSITIONS = {0: "VMs left unplaced", 1: "VMs off preferred placements / on avoided clusters",
             2: "reservation above the headroom lines (normalized)", 3: "VMs on yellow clusters",
             4: "memory balance (IDEAL)"}


def pair(cluster: str, datastore: str) -> str:
    return f"{cluster}/{datastore}"


def base(cluster: str) -> str:
    return f"{cluster}/"


def reserved(cluster: str) -> str:
    return f"reserved/{cluster}"


def _hard(spec: dict) -> dict:
    return {"spec": spec, "policy": "HARD"}


def _soft(spec: dict, position: int) -> dict:
    return {"spec": spec, "policy": "SOFT", "invalidCost": 1, "invalidState": 0,
            "tuplePosIfBroken": position}


def _zero_on(name: str, dimension: str, containers: list[str], scope: str = "") -> dict:
    """capacitySpec: nothing of ``dimension`` on the listed items, no limit elsewhere."""
    return {"capacitySpec": {"name": name, "scope": scope, "dimension": dimension,
                             "limit": {"type": "ABSOLUTE", "isDefaultLimitUnbounded": True,
                                       "scopeItemLimits": {c: 0 for c in containers}}}}


def build_model(s: VcdScenario) -> dict[str, Any]:
    """The scenario dict of the exact model (see the module docstring)."""
    t = s.tunables
    pairs = [(c.name, d.name) for c in s.clusters for d in s.datastores if c.name in d.clusters]
    assignment: dict[str, list[str]] = {UNPLACED: []}
    for c, d in pairs:
        assignment[pair(c, d)] = []
    bases = []
    dims: dict[str, dict[str, float]] = {k: {} for k in ("cpu", "memory", "storage", "iops",
                                                         "vm")}
    for c in s.clusters:
        cpu, memory = c.cpu.capacity - c.cpu.unreserved, c.memory.capacity - c.memory.unreserved
        if cpu > 0 or memory > 0:
            bases.append(base(c.name))
            assignment[base(c.name)] = [reserved(c.name)]
            dims["cpu"][reserved(c.name)] = cpu
            dims["memory"][reserved(c.name)] = memory
    for vm in s.vms:
        where = UNPLACED if vm.placement is None else pair(*vm.placement)
        assignment[where].append(vm.name)
        for key, value in (("cpu", vm.cpu), ("memory", vm.memory), ("storage", vm.storage),
                           ("iops", vm.iops), ("vm", 1.0)):
            if value:
                dims[key][vm.name] = value
    constraints: list[dict] = []

    def grouped(prefix: str, sets: dict[str, frozenset[str]]) -> list[tuple[str, list[str]]]:
        """One 0/1 dimension per distinct non-empty set: (dimension, sorted set)."""
        by_set: dict[frozenset[str], str] = {}
        for vm_name, items in sets.items():
            if items:
                dim = by_set.setdefault(items, f"{prefix}{len(by_set)}")
                dims.setdefault(dim, {})[vm_name] = 1.0
        return [(dim, sorted(items)) for items, dim in by_set.items()]

    forbidden = {}
    for vm in s.vms:
        if vm_reason(s, vm):
            forbidden[vm.name] = frozenset(pair(c, d) for c, d in pairs)
            continue
        bad_clusters = {c.name for c in s.clusters if cluster_reason(s, vm, c)}
        bad_stores = {d.name for d in s.datastores if datastore_reason(s, vm, d)}
        forbidden[vm.name] = frozenset(pair(c, d) for c, d in pairs
                                       if c in bad_clusters or d in bad_stores)
    for dim, containers in grouped("compat", forbidden):
        constraints.append(_hard(_zero_on(f"compatibility {dim}", dim, containers)))

    constraints += [
        _hard({"capacitySpec": {"name": "cpu reservations", "scope": "cluster",
                                "dimension": "cpu"}}),
        _hard({"capacitySpec": {"name": "memory reservations", "scope": "cluster",
                                "dimension": "memory"}}),
        _hard({"capacitySpec": {"name": "datastore free space", "scope": "datastore",
                                "dimension": "storage"}}),
    ]
    iops_limits = {d.name: d.iops_capacity for d in s.datastores if d.iops_capacity is not None}
    if t.iops_enabled and iops_limits:
        constraints.append(_hard({"capacitySpec": {
            "name": "datastore IOPS", "scope": "datastore", "dimension": "iops",
            "limit": {"type": "ABSOLUTE", "isDefaultLimitUnbounded": True,
                      "scopeItemLimits": iops_limits}}}))
    for group, members in s.anti_affinity.items():
        dim = f"anti:{group}"
        dims[dim] = {vm: 1.0 for vm in members}
        constraints.append(_hard({"capacitySpec": {
            "name": f"anti-affinity {group}", "scope": "cluster", "dimension": dim,
            "limit": {"type": "ABSOLUTE", "globalLimit": 1}}}))
    partitions = {}
    if s.affinity:
        if "colocateGroupsSpec" not in REGISTRY:
            raise InputError("rules.affinity", "the exact model needs colocateGroupsSpec, "
                             "which this installation does not have")
        partitions["affinity"] = {g: list(m) for g, m in s.affinity.items()}
        constraints.append(_hard({"colocateGroupsSpec": {
            "name": "affinity", "scope": "cluster", "partitionName": "affinity",
            "limits": {"type": "ABSOLUTE", "globalLimit": 1}}}))
    if bases:
        constraints.append(_hard({"avoidMovingSpec": {
            "name": "reserved by others", "objects": [a[0] for k, a in assignment.items()
                                                      if k in bases]}}))
        constraints.append(_hard({"nonAcceptingSpec": {"name": "reserved by others",
                                                       "items": bases}}))

    # position 1: preferred placements (current container, VM-host should) and avoided clusters
    elsewhere, avoided = {}, {}  # per VM: containers off its preferred set; avoided clusters
    for vm in s.vms:
        wanted = {pair(*vm.placement)} if vm.placement else set()
        shunned = set()
        for rule in s.vm_host:
            if vm.name in rule.vms and rule.kind == "should":
                wanted |= {pair(c, d) for c, d in pairs if c in rule.clusters}
            elif vm.name in rule.vms and rule.kind == "shouldNot":
                shunned |= rule.clusters
        elsewhere[vm.name] = frozenset(pair(c, d) for c, d in pairs
                                       if wanted and pair(c, d) not in wanted)
        avoided[vm.name] = frozenset(shunned)
    for prefix, sets, scope, what in (("pref", elsewhere, "", "off preferred placements"),
                                      ("avoid", avoided, "cluster", "on avoided clusters")):
        for dim, items in grouped(prefix, sets):
            constraints.append(_soft(_zero_on(f"{what} {dim}", dim, items, scope), 1))

    # position 2: headroom
    for dim, room in (("cpu", t.cpu_headroom), ("memory", t.memory_headroom)):
        constraints.append(_soft({"capacitySpec": {
            "name": f"{dim} headroom", "scope": "cluster", "dimension": dim,
            "limit": {"type": "RELATIVE", "globalLimit": 1 - room}}}, 2))
    constraints.append(_soft({"capacitySpec": {
        "name": "storage headroom", "scope": "datastore", "dimension": "storage",
        "limit": {"type": "ABSOLUTE", "globalLimit": 0, "scopeItemLimits": {
            d.name: max(0.0, d.free - t.storage_headroom * d.capacity)
            for d in s.datastores}}}}, 2))
    # position 3: yellow clusters
    yellow = [c.name for c in s.clusters if c.health == "yellow"]
    if yellow:
        constraints.append(_soft(_zero_on("on yellow clusters", "vm", yellow, "cluster"), 3))
    goals: list[dict] = [{"spec": {"toFreeSpec": {"name": "unplaced VMs",
                                                  "containers": [UNPLACED], "dimension": "vm"}},
                          "tuplePos": 0}]
    usable = [c.name for c in s.clusters if c.enabled and c.health != "red"
              and c.memory.capacity > 0]
    if usable:
        goals.append({"spec": {"balanceSpec": {
            "name": "memory balance", "scope": "cluster", "dimension": "memory",
            "formula": "IDEAL", "filter": {"itemsWhitelist": usable}}}, "tuplePos": 4})

    data: dict[str, Any] = {
        "name": s.name, "description": s.description,
        "objectName": "vm", "containerName": "placement",
        "assignment": assignment,
        "objectDimensions": dims,
        "scopes": {"cluster": {**{pair(c, d): c for c, d in pairs},
                               **{b: b[:-1] for b in bases}},
                   "datastore": {pair(c, d): d for c, d in pairs}},
        "scopeDimensions": {
            "cluster": {"cpu": {c.name: c.cpu.capacity for c in s.clusters},
                        "memory": {c.name: c.memory.capacity for c in s.clusters}},
            "datastore": {"storage": {d.name: d.free for d in s.datastores}}},
        "goals": goals, "constraints": constraints,
    }
    if partitions:
        data["partitions"] = partitions
    return data


def engine_assignment(s: VcdScenario, data: dict, decisions: list[Decision]
                      ) -> dict[str, list[str]]:
    """The engine's placement as an assignment of the exact model (reserved objects stay)."""
    result: dict[str, list[str]] = {name: [] for name in data["assignment"]}
    for name, objects in data["assignment"].items():
        result[name] += [o for o in objects if o not in s.vm_index]
    for d in decisions:
        result[UNPLACED if d.cluster is None else pair(d.cluster, d.datastore)].append(d.vm)
    return result


def placement_of(s: VcdScenario, problem, final: np.ndarray) -> dict[str, tuple[str, str] | None]:
    """VM -> (cluster, datastore), or None when unplaced, from an assignment array."""
    out = {}
    for vm in s.vms:
        name = problem.containers[final[problem.object_index[vm.name]]]
        out[vm.name] = None if name == UNPLACED else tuple(name.split("/", 1))
    return out


@dataclass
class VcdComparison:
    """The engine beside the exact model on one VCD scenario."""

    scenario: VcdScenario
    decisions: list[Decision]
    engine_seconds: float
    ours: SolveResult
    entry: Entry  # the engine's placement, evaluated and judged under the exact model

    @property
    def engine_placed(self) -> int:
        return sum(d.placed for d in self.decisions)

    @property
    def exact_placed(self) -> int:
        return len(self.scenario.vms) - round(self.ours.final_evaluation.positions.get(0, 0.0))

    @property
    def placed_proven(self) -> bool:
        """Whether no placement places more VMs: position 0 proven, or every VM placed."""
        if self.exact_placed == len(self.scenario.vms):
            return True
        return bool(self.ours.buckets) and self.ours.buckets[0].status == OPTIMAL

    @property
    def placed_bound(self) -> int | None:
        """The most VMs any placement can place, as proven (None: no bound)."""
        if self.placed_proven:
            return self.exact_placed
        first = self.ours.buckets[0] if self.ours.buckets else None
        if first is None or first.position != 0 or first.bound is None:
            return None
        return len(self.scenario.vms) - max(0, math.ceil(first.bound - 1e-9))

    def rows(self) -> list[dict[str, Any]]:
        """Per tuple position: the engine's value, the exact model's, its bound, the gap."""
        rows = []
        reports = {b.position: b for b in self.ours.buckets}
        for c in self.entry.buckets:
            report = reports.get(c.position)
            proven = report is not None and report.status == OPTIMAL
            rows.append({"position": c.position, "meaning": POSITIONS.get(c.position, ""),
                         "engine": c.value, "exact": c.ours,
                         "exact bound": c.ours if proven else c.bound,
                         "gap": c.abs_gap, "proven": "yes" if proven else "no",
                         "engine is": ("better" if c.order < 0 else "worse" if c.order > 0
                                       else "equal")
                         + ("" if c.comparable else " (not comparable)")})
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario.name, "vms": len(self.scenario.vms),
            "enginePlaced": self.engine_placed, "exactPlaced": self.exact_placed,
            "placedProven": self.placed_proven, "placedBound": self.placed_bound,
            "engineSeconds": self.engine_seconds,
            "exactSeconds": self.ours.seconds, "exactStatus": self.ours.status,
            "engineFeasible": self.entry.feasible, "verdict": self.entry.verdict,
            "contradiction": self.entry.contradiction, "positions": self.rows(),
            "engine": {d.vm: [d.cluster, d.datastore] for d in self.decisions},
            "exact": {k: list(v) if v else [None, None] for k, v in placement_of(
                self.scenario, self.ours.problem, self.ours.final).items()},
        }


def solve_exact(s: VcdScenario, options: SolverOptions, hint: dict | None = None
                ) -> tuple[dict, Instance, SolveResult]:
    """Build and solve the exact model; ``hint`` (an assignment) is where the search starts."""
    data = build_model(s)
    instance = Instance.from_dict(data)
    start = None if hint is None else instance.problem.assignment_array(hint, "hint")
    return data, instance, solve_problem(instance.problem, instance.model, options, hint=start)


def compare_vcd(s: VcdScenario, options: SolverOptions) -> VcdComparison:
    """Run the engine, solve the exact model (hinted with the engine's placement, so the
    exact answer is never worse) and judge the engine under the exact model."""
    started = time.perf_counter()
    decisions = place(s)
    seconds = time.perf_counter() - started
    data = build_model(s)
    engine = engine_assignment(s, data, decisions)
    data, instance, ours = solve_exact(s, options, hint=engine)
    final = instance.problem.assignment_array(engine, "engine placement")
    entry = compare_assignment(instance, ours, "vcd-engine", "heuristic", final, seconds)
    return VcdComparison(s, decisions, seconds, ours, entry)
