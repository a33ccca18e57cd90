"""The exact counterpart of the VCD placement engine: the same decision as an ordinary
cpsat_rebalancer scenario dict, solved by the general engine, and the comparison.

Mapping (objects ``vm``, containers ``placement``):
- each VM is an object (dimensions ``cpu``, ``memory``: its reservation, held when it is
  placed by the engine's operations or is a powered-on resident; ``storage`` and, when IOPS
  is enabled, ``iops``: its disks; ``vm`` = 1); a new VM starts in ``unplaced``, a placed
  one in its container; residents are fixed (avoidMovingSpec);
- containers: ``unplaced`` (no capacity, in no scope), one ``cluster/datastore`` per
  connected pair, or ``cluster/host/datastore`` for a cluster modelled host by host, and
  ``cluster/`` (``cluster/host/``) holding the fixed object ``reserved/<cluster>``
  (``reserved/<cluster>/<host>``): what the rest of the world reserves, capacity -
  unreserved, so relative utilization is real;
- scopes ``cluster``, ``host`` (hosts of clusters modelled host by host) and ``datastore``
  map containers to their cluster, host and datastore; cluster and host capacities are their
  CPU and memory capacities, datastore capacities the free space and IOPS capacity left for
  the listed VMs.

Hard constraints (HARD policy): CPU and memory reservations within the cluster (and host)
capacity, storage within the datastore's free space, IOPS (when enabled) within the IOPS
capacity (capacitySpec); every order-independent filter of the engine (disabled/red cluster,
hardware version, vCPUs, storage profile and policy, VM-host must/mustNot, network pool,
disabled and red-threshold datastores except on import, datastore affinity, migration
target, disabled hosts) as a capacitySpec with limit 0 on the forbidden containers, one per
distinct set of forbidden containers (``compat<k>`` dimensions, 1 for the VMs that share the
set, so identical VMs still form one class); datastore-scope VM-VM rules; cluster-scope
VM-VM rules when ``vmVmRules`` is ``filters``; the ``reserved/`` objects and residents fixed
and the ``reserved/`` containers closed (nonAcceptingSpec).

Then, by tuple position (:func:`positions`): the number of VMs left unplaced first; then
the engine's list order as costs: VMs on yellow clusters (first when ``yellowClusters`` is
``lastResort``, last otherwise), VMs on avoided clusters (anti-affinity beyond one member
per cluster, VM-host ``shouldNot``), reservation above the headroom lines ``(1 - headRoom)
x capacity`` (storage ``free - storageHeadRoom x capacity``, normalized), VMs off their
preferred placements (current cluster/datastore, VM-host ``should``) with affinity groups
and organisation VDCs spread beyond one cluster; last, memory balance (balanceSpec IDEAL
over the usable clusters, compared leximin, the order VCD's least-constrained-first ranking
aims at).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..api import solve_problem
from ..compare import Entry, compare_assignment
from ..errors import InputError
from ..evaluate import evaluate
from ..heuristics import Instance
from ..result import FEASIBLE, INFEASIBLE, NO_SOLUTION, OPTIMAL, BucketReport, SolveResult
from ..scenario import SolverOptions
from ..solver_specs import ObjectivePlan
from ..specs.common import REGISTRY
from .engine import Decision, place
from .inputs import (
    Tunables,
    VcdScenario,
    Vm,
    allowed_places,
    current_place,
)
from .placed import fewest_on, most_placed

UNPLACED = "unplaced"
# of the time limit: at most for proving the most VMs placed, at most (with what that left)
# for the fewest on yellow clusters, at least for the later positions
COUNT_SHARE, YELLOW_SHARE, LATER_SHARE = 0.4, 0.2, 0.25
MEANINGS = {"placed": "VMs left unplaced",
            "yellow": "VMs on yellow clusters",
            "avoid": "VMs on avoided clusters (anti-affinity excess, VM-host should-not)",
            "headroom": "reservation above the headroom lines (normalized)",
            "preferred": "VMs off preferred placements; affinity groups and org VDCs spread",
            "balance": "memory balance (IDEAL)"}


def positions(tunables: Tunables) -> dict[str, int]:
    """Tuple position of each part of the objective, following the engine's order."""
    if tunables.yellow_clusters == "lastResort":
        order = ("placed", "yellow", "avoid", "headroom", "preferred", "balance")
    else:
        order = ("placed", "avoid", "headroom", "preferred", "yellow", "balance")
    return {part: k for k, part in enumerate(order)}


def position_meanings(tunables: Tunables) -> dict[int, str]:
    return {k: MEANINGS[part] for part, k in positions(tunables).items()}


def slot(cluster: str, host: str | None, datastore: str) -> str:
    """The container of a VM on ``cluster`` (``host``) with disks on ``datastore``."""
    return f"{cluster}/{datastore}" if host is None else f"{cluster}/{host}/{datastore}"


def parse_slot(name: str) -> tuple[str, str, str | None]:
    """(cluster, datastore, host) of a container made by :func:`slot`."""
    parts = name.split("/")
    return (parts[0], parts[1], None) if len(parts) == 2 else (parts[0], parts[2], parts[1])


def home(s: VcdScenario, vm: Vm) -> str:
    """The container of a VM's current placement (a host cluster's first host when the
    VM's host is not given)."""
    return slot(*current_place(s, vm))


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


def _spread(name: str, scope: str, partition: str) -> dict:
    """colocateGroupsSpec: each group of ``partition`` on one item of ``scope``."""
    if "colocateGroupsSpec" not in REGISTRY:
        raise InputError("rules.affinity", "the exact model needs colocateGroupsSpec, "
                         "which this installation does not have")
    return {"colocateGroupsSpec": {"name": name, "scope": scope, "partitionName": partition,
                                   "limits": {"type": "ABSOLUTE", "globalLimit": 1}}}


def _apart(name: str, scope: str, dimension: str) -> dict:
    """capacitySpec: at most one member (dimension 1) per item of ``scope``."""
    return {"capacitySpec": {"name": name, "scope": scope, "dimension": dimension,
                             "limit": {"type": "ABSOLUTE", "globalLimit": 1}}}


def build_model(s: VcdScenario) -> dict[str, Any]:
    """The scenario dict of the exact model (see the module docstring)."""
    t = s.tunables
    pos = positions(t)
    slots = [(c.name, h.name if c.hosts else None, d.name)
             for c in s.clusters for d in s.datastores if c.name in d.clusters
             for h in (c.hosts or (None,))]
    assignment: dict[str, list[str]] = {UNPLACED: []}
    for c, h, d in slots:
        assignment[slot(c, h, d)] = []
    counted = ("cpu", "memory", "storage", "vm") + (("iops",) if t.iops_enabled else ())
    dims: dict[str, dict[str, float]] = {k: {} for k in counted}
    fixed: list[str] = []
    bases: dict[str, tuple[str, str | None]] = {}  # base container -> (cluster, host)
    for c in s.clusters:
        for h in c.hosts or (None,):
            figures = (c.cpu, c.memory) if h is None else (h.cpu, h.memory)
            cpu, memory = (r.capacity - r.unreserved for r in figures)
            if cpu > 0 or memory > 0:
                name = f"{c.name}/" if h is None else f"{c.name}/{h.name}/"
                owner = f"reserved/{c.name}" + ("" if h is None else f"/{h.name}")
                bases[name] = (c.name, None if h is None else h.name)
                assignment[name] = [owner]
                dims["cpu"][owner], dims["memory"][owner] = cpu, memory
                fixed.append(owner)
    for vm in s.vms:
        where = home(s, vm) if vm.placement is not None else UNPLACED
        assignment[where].append(vm.name)
        holds = vm.operation != "resident" or vm.power_state == "on"
        for key, value in (("cpu", vm.cpu if holds else 0), ("memory", vm.memory if holds else 0),
                           ("storage", vm.storage), ("iops", vm.iops), ("vm", 1.0)):
            if value and key in dims:  # IOPS only when enabled: it splits object classes
                dims[key][vm.name] = value
        if vm.operation == "resident":
            fixed.append(vm.name)
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
    for vm in s.acted_on:
        allowed = allowed_places(s, vm)
        pairs, stores = allowed if allowed is not None else (set(), set())
        forbidden[vm.name] = frozenset(slot(c, h, d) for c, h, d in slots
                                       if (c, h) not in pairs or d not in stores)
    for dim, containers in grouped("compat", forbidden):
        constraints.append(_hard(_zero_on(f"compatibility {dim}", dim, containers)))

    host_items = {slot(c, h, d): f"{c}/{h}" for c, h, d in slots if h is not None}
    host_items.update({b: f"{c}/{h}" for b, (c, h) in bases.items() if h is not None})
    constraints += [
        _hard({"capacitySpec": {"name": "cpu reservations", "scope": "cluster",
                                "dimension": "cpu"}}),
        _hard({"capacitySpec": {"name": "memory reservations", "scope": "cluster",
                                "dimension": "memory"}}),
        _hard({"capacitySpec": {"name": "datastore free space", "scope": "datastore",
                                "dimension": "storage"}}),
    ]
    if host_items:
        constraints += [_hard({"capacitySpec": {"name": f"host {dim} reservations",
                                                "scope": "host", "dimension": dim}})
                        for dim in ("cpu", "memory")]
    iops_limits = {d.name: d.iops_capacity for d in s.datastores if d.iops_capacity is not None}
    if t.iops_enabled and iops_limits:
        constraints.append(_hard({"capacitySpec": {
            "name": "datastore IOPS", "scope": "datastore", "dimension": "iops",
            "limit": {"type": "ABSOLUTE", "isDefaultLimitUnbounded": True,
                      "scopeItemLimits": iops_limits}}}))
    ranked_rules = t.vm_vm_rules == "lists"
    for scope, rules, hard in (("cluster", s.anti_affinity, not ranked_rules),
                               ("datastore", s.datastore_anti_affinity, True)):
        for group, members in rules.items():
            dim = f"anti:{scope}:{group}"
            dims[dim] = {vm: 1.0 for vm in members}
            spec = _apart(f"anti-affinity {group}", scope, dim)
            constraints.append(_hard(spec) if hard else _soft(spec, pos["avoid"]))
    partitions = {}
    for scope, rules, hard in (("cluster", s.affinity, not ranked_rules),
                               ("datastore", s.datastore_affinity, True)):
        if rules:
            name = f"affinity {scope}"
            partitions[name] = {g: list(m) for g, m in rules.items()}
            spec = _spread(name, scope, name)
            constraints.append(_hard(spec) if hard else _soft(spec, pos["preferred"]))
    orgs: dict[str, list[str]] = {}
    for vm in s.vms:
        if vm.org_vdc is not None:
            orgs.setdefault(vm.org_vdc, []).append(vm.name)
    if t.org_vdc_colocation == "preferred" and orgs:
        partitions["orgVdc"] = orgs
        constraints.append(_soft(_spread("organisation VDC", "cluster", "orgVdc"),
                                 pos["preferred"]))
    if fixed:
        constraints.append(_hard({"avoidMovingSpec": {"name": "reserved and resident",
                                                      "objects": fixed}}))
    if bases:
        constraints.append(_hard({"nonAcceptingSpec": {"name": "reserved by others",
                                                       "items": sorted(bases)}}))

    # preferred placements (current cluster/datastore, VM-host should), avoided clusters
    elsewhere, avoided = {}, {}  # per VM: containers off its preferred set; avoided clusters
    for vm in s.acted_on:
        wanted = {slot(c, h, d) for c, h, d in slots
                  if vm.placement is not None and (c, d) == vm.placement}
        shunned = set()
        for rule in s.vm_host:
            if vm.name in rule.vms and rule.kind == "should":
                wanted |= {slot(c, h, d) for c, h, d in slots if c in rule.clusters}
            elif vm.name in rule.vms and rule.kind == "shouldNot":
                shunned |= rule.clusters
        elsewhere[vm.name] = frozenset(slot(*x) for x in slots
                                       if wanted and slot(*x) not in wanted)
        avoided[vm.name] = frozenset(shunned)
    for prefix, sets, scope, what, part in (
            ("pref", elsewhere, "", "off preferred placements", "preferred"),
            ("avoid", avoided, "cluster", "on avoided clusters", "avoid")):
        for dim, items in grouped(prefix, sets):
            constraints.append(_soft(_zero_on(f"{what} {dim}", dim, items, scope), pos[part]))

    for dim, room in (("cpu", t.cpu_headroom), ("memory", t.memory_headroom)):
        constraints.append(_soft({"capacitySpec": {
            "name": f"{dim} headroom", "scope": "cluster", "dimension": dim,
            "limit": {"type": "RELATIVE", "globalLimit": 1 - room}}}, pos["headroom"]))
    constraints.append(_soft({"capacitySpec": {
        "name": "storage headroom", "scope": "datastore", "dimension": "storage",
        "limit": {"type": "ABSOLUTE", "globalLimit": 0, "scopeItemLimits": {
            d.name: max(0.0, d.free - t.storage_headroom * d.capacity)
            for d in s.datastores}}}}, pos["headroom"]))
    yellow = [c.name for c in s.clusters if c.health == "yellow"]
    if yellow:
        dims["acted"] = {vm.name: 1.0 for vm in s.acted_on}
        constraints.append(_soft(_zero_on("on yellow clusters", "acted", yellow, "cluster"),
                                 pos["yellow"]))
    goals: list[dict] = [{"spec": {"toFreeSpec": {"name": "unplaced VMs",
                                                  "containers": [UNPLACED], "dimension": "vm"}},
                          "tuplePos": pos["placed"]}]
    usable = [c.name for c in s.clusters if c.enabled and c.health != "red"
              and c.memory.capacity > 0]
    if usable:
        goals.append({"spec": {"balanceSpec": {
            "name": "memory balance", "scope": "cluster", "dimension": "memory",
            "formula": "IDEAL", "filter": {"itemsWhitelist": usable}}}, "tuplePos": pos["balance"]})

    scopes = {"cluster": {**{slot(c, h, d): c for c, h, d in slots},
                          **{b: c for b, (c, _) in bases.items()}},
              "datastore": {slot(c, h, d): d for c, h, d in slots}}
    scope_dims = {
        "cluster": {"cpu": {c.name: c.cpu.capacity for c in s.clusters},
                    "memory": {c.name: c.memory.capacity for c in s.clusters}},
        "datastore": {"storage": {d.name: d.free for d in s.datastores}}}
    if host_items:
        scopes["host"] = host_items
        scope_dims["host"] = {dim: {f"{c.name}/{h.name}": getattr(h, dim).capacity
                                    for c in s.clusters for h in c.hosts}
                              for dim in ("cpu", "memory")}
    data: dict[str, Any] = {
        "name": s.name, "description": s.description,
        "objectName": "vm", "containerName": "placement",
        "assignment": assignment,
        "objectDimensions": dims,
        "scopes": scopes,
        "scopeDimensions": scope_dims,
        "goals": goals, "constraints": constraints,
    }
    if partitions:
        data["partitions"] = partitions
    return data


def engine_assignment(s: VcdScenario, data: dict, decisions: list[Decision]
                      ) -> dict[str, list[str]]:
    """The engine's placement as an assignment of the exact model (reserved objects stay;
    a VM the engine could not place is unplaced)."""
    return placement_assignment(s, data, {
        d.vm: None if d.cluster is None else (d.cluster, d.datastore, d.host)
        for d in decisions if d.outcome != "resident"})


def placement_assignment(s: VcdScenario, data: dict,
                         placement: dict[str, tuple[str, str, str | None] | None]
                         ) -> dict[str, list[str]]:
    """A placement of the VMs acted on (VM -> (cluster, datastore, host), None: unplaced)
    as an assignment of the exact model; residents and reserved objects stay."""
    result: dict[str, list[str]] = {name: [] for name in data["assignment"]}
    for name, objects in data["assignment"].items():
        result[name] += [o for o in objects if o not in s.vm_index]
    for vm in s.vms:
        if vm.operation == "resident":
            result[home(s, vm)].append(vm.name)
        else:
            where = placement.get(vm.name)
            result[UNPLACED if where is None else slot(where[0], where[2], where[1])
                   ].append(vm.name)
    return result


def assignment_placement(s: VcdScenario, assignment: dict[str, list[str]]
                         ) -> dict[str, tuple[str, str, str | None] | None]:
    """The placement of the VMs acted on in an assignment of the exact model."""
    out: dict[str, tuple[str, str, str | None] | None] = {}
    for name, objects in assignment.items():
        for o in objects:
            if o in s.vm_index and s.vms[s.vm_index[o]].operation != "resident":
                out[o] = None if name == UNPLACED else parse_slot(name)
    return out


def placement_of(s: VcdScenario, problem, final: np.ndarray
                 ) -> dict[str, tuple[str, str, str | None] | None]:
    """VM -> (cluster, datastore, host), or None when unplaced, from an assignment array."""
    out = {}
    for vm in s.vms:
        name = problem.containers[final[problem.object_index[vm.name]]]
        out[vm.name] = None if name == UNPLACED else parse_slot(name)
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
    def decided(self) -> int:
        """How many VMs the engine acts on (residents left out)."""
        return len(self.scenario.acted_on)

    @property
    def engine_placed(self) -> int:
        return sum(d.placed for d in self.decisions if d.outcome != "resident")

    @property
    def exact_placed(self) -> int:
        return self.decided - round(self.ours.final_evaluation.positions.get(0, 0.0))

    @property
    def placed_proven(self) -> bool:
        """Whether no placement places more VMs: position 0 proven, or every VM placed."""
        if self.exact_placed == self.decided:
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
        return self.decided - max(0, math.ceil(first.bound - 1e-9))

    @property
    def engine_tuple(self) -> dict[int, float]:
        """The engine's value at every tuple position, under the exact model's evaluator."""
        return {c.position: c.value for c in self.entry.buckets}

    @property
    def exact_tuple(self) -> dict[int, float]:
        """The exact model's value at every tuple position."""
        return {c.position: c.ours for c in self.entry.buckets}

    def rows(self) -> list[dict[str, Any]]:
        """Per tuple position: the engine's value, the exact model's, its bound, the gap."""
        rows = []
        reports = {b.position: b for b in self.ours.buckets}
        for c in self.entry.buckets:
            report = reports.get(c.position)
            proven = report is not None and report.status == OPTIMAL
            rows.append({"position": c.position,
                         "meaning": position_meanings(self.scenario.tunables).get(c.position, ""),
                         "engine": c.value, "exact": c.ours,
                         "exact bound": c.ours if proven else c.bound,
                         "gap": c.abs_gap, "proven": "yes" if proven else "no",
                         "engine is": ("better" if c.order < 0 else "worse" if c.order > 0
                                       else "equal")
                         + ("" if c.comparable else " (not comparable)")})
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario.name, "vms": self.decided,
            "residents": len(self.scenario.vms) - self.decided,
            "enginePlaced": self.engine_placed, "exactPlaced": self.exact_placed,
            "placedProven": self.placed_proven, "placedBound": self.placed_bound,
            "engineSeconds": self.engine_seconds,
            "exactSeconds": self.ours.seconds, "exactStatus": self.ours.status,
            "engineFeasible": self.entry.feasible, "verdict": self.entry.verdict,
            "contradiction": self.entry.contradiction, "positions": self.rows(),
            "engineTuple": self.engine_tuple, "exactTuple": self.exact_tuple,
            "engine": {d.vm: [d.cluster, d.datastore, d.host] for d in self.decisions},
            "exact": {k: list(v) if v else [None, None, None] for k, v in placement_of(
                self.scenario, self.ours.problem, self.ours.final).items()},
        }


def solve_exact(s: VcdScenario, options: SolverOptions, hint: dict | None = None
                ) -> tuple[dict, Instance, SolveResult]:
    """Build and solve the exact model; ``hint`` (an assignment) is where the search starts.

    The most VMs placed (position 0) is proven first on the count model of
    :mod:`.placed` (a share of the time limit), and then, when yellow clusters come at
    position 1, the fewest VMs on them with that many placed. The general solver then
    optimizes the later positions from that placement with each position settled there
    held at its value (hard constraints), and its result gets those positions' reports from
    the count model (OPTIMAL when the bound is reached, else FEASIBLE with the bound)."""
    data = build_model(s)
    instance = Instance.from_dict(data)
    given = hint if hint is not None else data["assignment"]
    feasible = evaluate(instance.problem, instance.model,
                        instance.problem.assignment_array(given, "hint")).feasible
    start = assignment_placement(s, given) if feasible else {}  # the count model's start
    limit = options.time_limit
    most = None
    if options.plan.lexicographic and s.acted_on:
        most = most_placed(s, start, None if limit is None else COUNT_SHARE * limit,
                           options.workers, options.seed)
    if most is None:
        return data, instance, _solve(instance, options, hint)
    decided = len(s.acted_on)
    placement, settled = most.placement, [(0, decided - most.placed, decided - most.bound,
                                           most.proven, most.seconds)]
    held_data = dict(data, constraints=[*data["constraints"], _hard({"capacitySpec": {
        "name": "VMs left unplaced: at most the count found", "scope": "", "dimension": "vm",
        "limit": {"type": "ABSOLUTE", "isDefaultLimitUnbounded": True,
                  "scopeItemLimits": {UNPLACED: decided - most.placed}}}})])
    yellow = {c.name for c in s.clusters if c.health == "yellow"}
    spent = most.seconds
    if most.proven and yellow and positions(s.tunables)["yellow"] == 1:
        left = None if limit is None else max(YELLOW_SHARE * limit,
                                              (COUNT_SHARE + YELLOW_SHARE) * limit - spent)
        fewest = fewest_on(most, yellow, left, options.workers, options.seed)
        spent += fewest.seconds
        on_yellow = _held_yellow(s, data, yellow, fewest.value)
        checked = evaluate(instance.problem, instance.model, instance.problem.assignment_array(
            placement_assignment(s, data, fewest.placement), "count model placement"))
        # the count is the evaluator's value of position 1 (a guard on the mapping)
        if abs(checked.positions.get(1, 0.0) - fewest.value) <= 1e-9 and checked.feasible:
            placement = fewest.placement
            settled.append((1, fewest.value, fewest.bound, fewest.proven, fewest.seconds))
            held_data["scopes"] = {**data["scopes"], "yellow clusters": on_yellow[0]}
            held_data["constraints"] = [*held_data["constraints"], on_yellow[1]]
    rest = None if limit is None else max(limit - spent, LATER_SHARE * limit)
    later = replace(options, time_limit=rest, plan=ObjectivePlan(first=len(settled)))
    held = placement_assignment(s, data, placement)
    ours = _solve(Instance.from_dict(held_data), later, held)
    if ours.status == INFEASIBLE:
        return data, instance, ours
    if ours.status == NO_SOLUTION:  # no time left to take the hint in: the placement stands
        kept = instance.problem.assignment_array(held, "count model placement")
        evaluation = evaluate(instance.problem, instance.model, kept)
        if not evaluation.feasible:
            return data, instance, ours
        ours = replace(ours, final=kept, termination="time_limit", buckets=[
            BucketReport(p, FEASIBLE, "time_limit", value, None, None, None, None, 0.0, 0.0)
            for p, value in sorted(evaluation.positions.items()) if p >= len(settled)])
    final = evaluate(instance.problem, instance.model, ours.final)
    reports = []
    for position, _, bound, proven, seconds in settled:
        value = final.positions.get(position, 0.0)
        reports.append(BucketReport(
            position, OPTIMAL if proven else FEASIBLE, "optimal" if proven else "time_limit",
            value, value, float(bound), value - bound,
            (value - bound) / value if value else 0.0, 0.0, seconds))
    buckets = [*reports, *[b for b in ours.buckets if b.position >= len(settled)]]
    status = OPTIMAL if all(b.status == OPTIMAL for b in buckets) else FEASIBLE
    return data, instance, replace(
        ours, status=status, buckets=buckets, final_evaluation=final,
        initial_evaluation=evaluate(instance.problem, instance.model, instance.problem.initial),
        seconds=ours.seconds + spent)


def _held_yellow(s: VcdScenario, data: dict, yellow: set[str], count: int
                 ) -> tuple[dict[str, str], dict]:
    """A scope of one item holding every container on a yellow cluster, and the hard rule
    that the VMs acted on there are at most ``count``."""
    scope = {name: "yellow" for name in data["assignment"]
             if name != UNPLACED and not name.endswith("/") and parse_slot(name)[0] in yellow}
    return scope, _hard({"capacitySpec": {
        "name": "VMs on yellow clusters: at most the count found", "scope": "yellow clusters",
        "dimension": "acted", "limit": {"type": "ABSOLUTE", "globalLimit": count}}})


def _solve(instance: Instance, options: SolverOptions, hint: dict | None) -> SolveResult:
    start = None if hint is None else instance.problem.assignment_array(hint, "hint")
    return solve_problem(instance.problem, instance.model, options, hint=start)


def compare_vcd(s: VcdScenario, options: SolverOptions) -> VcdComparison:
    """Run the engine, solve the exact model (hinted with the engine's placement, so the
    exact answer is never worse once the solver has completed the hint within its time) and
    judge the engine under the exact model."""
    started = time.perf_counter()
    decisions = place(s)
    seconds = time.perf_counter() - started
    data = build_model(s)
    engine = engine_assignment(s, data, decisions)
    data, instance, ours = solve_exact(s, options, hint=engine)
    final = instance.problem.assignment_array(engine, "engine placement")
    entry = compare_assignment(instance, ours, "vcd-engine", "heuristic", final, seconds)
    return VcdComparison(s, decisions, seconds, ours, entry)
