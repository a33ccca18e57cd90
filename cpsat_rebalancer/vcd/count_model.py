"""The count model of a VCD scenario's hard constraints (see :mod:`.placed`): VMs of the
same sizes and allowed places as one type with a count, hosts (or clusters) as bins of CPU
and memory, disks counted per (type, cluster, datastore)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ..cpsat.classes import integral_scale
from .inputs import VcdScenario, allowed_places, current_place

ROOM_SLACK = 1e-6  # a room is rounded down past this, in scaled units (float noise only)


@dataclass(frozen=True)
class Bin:
    """A host, or a cluster not modelled host by host, with the CPU and memory it has
    left for the VMs acted on (scaled integers)."""

    cluster: str
    host: str | None
    cpu: int
    memory: int


@dataclass
class VmType:
    """Interchangeable VMs: their names, reservation, disks and IOPS (scaled integers),
    the bins they may go to and, per cluster, the datastores their disks may go to."""

    members: list[str]
    cpu: int
    memory: int
    storage: int
    iops: int
    bins: list[int]
    stores: dict[str, list[str]]


@dataclass
class CountModel:
    """The hard constraints of the exact model, by types and bins (see the module
    docstring). ``cluster_room`` holds the CPU and memory rows of clusters modelled host
    by host; ``store_room`` each datastore's free space and IOPS (None: unlimited);
    ``rules`` the hard VM-VM rules as (kind, scope, members, items fixed residents hold)."""

    bins: list[Bin]
    types: list[VmType]
    cluster_room: dict[str, tuple[int, int]]
    store_room: dict[str, tuple[int, int | None]]
    rules: list[tuple[str, str, list[str], set[str]]]
    placeable: int = field(init=False)

    def __post_init__(self) -> None:
        self.placeable = sum(len(t.members) for t in self.types if t.bins)

    @property
    def type_of(self) -> dict[str, int]:
        return {vm: k for k, t in enumerate(self.types) for vm in t.members}


def _scale(values: list[float]) -> int | None:
    """The power of ten making ``values`` exact integers (None: there is none)."""
    scale, error = integral_scale(np.asarray(values, dtype=float))
    return scale if error == 0 else None


def _room(value: float, scale: int) -> int:
    return max(-1, math.floor(value * scale + ROOM_SLACK))


def count_model(s: VcdScenario) -> CountModel | None:
    """The count model of ``s``, or None when a figure is not an exact decimal (the
    general solver alone then answers)."""
    t = s.tunables
    residents = [vm for vm in s.vms if vm.operation == "resident"]
    held: dict[tuple[str, str | None], list[float]] = defaultdict(lambda: [0.0, 0.0])
    on_store: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for vm in residents:
        c, h, d = current_place(s, vm)
        if vm.power_state == "on":
            for key in ((c, h), (c, "*")):
                held[key][0] += vm.cpu
                held[key][1] += vm.memory
        on_store[d][0] += vm.storage
        on_store[d][1] += vm.iops
    acted = s.acted_on
    scales = {}
    for key in ("cpu", "memory", "storage", "iops"):
        scale = _scale([getattr(vm, key) for vm in acted] or [0.0])
        if scale is None:
            return None
        scales[key] = scale
    cpu_scale, memory_scale = scales["cpu"], scales["memory"]
    bins: list[Bin] = []
    cluster_room = {}
    for c in s.clusters:
        if c.hosts:
            for h in c.hosts:
                used = held[(c.name, h.name)]
                bins.append(Bin(c.name, h.name,
                                _room(h.cpu.unreserved - used[0], cpu_scale),
                                _room(h.memory.unreserved - used[1], memory_scale)))
            used = held[(c.name, "*")]
            cluster_room[c.name] = tuple(
                _room(getattr(c, key).capacity - sum(
                    getattr(h, key).capacity - getattr(h, key).unreserved for h in c.hosts)
                    - used[j], scales[key]) for j, key in enumerate(("cpu", "memory")))
        else:
            used = held[(c.name, None)]
            bins.append(Bin(c.name, None, _room(c.cpu.unreserved - used[0], cpu_scale),
                            _room(c.memory.unreserved - used[1], memory_scale)))
    store_room = {d.name: (_room(d.free - on_store[d.name][0], scales["storage"]),
                           _room(d.iops_capacity - on_store[d.name][1], scales["iops"])
                           if t.iops_enabled and d.iops_capacity is not None else None)
                  for d in s.datastores}
    bin_index = {(b.cluster, b.host): k for k, b in enumerate(bins)}
    rules: list[tuple[str, str, list[str], set[str]]] = []
    filters = t.vm_vm_rules == "filters"
    for kind, scope, groups, hard in (
            ("apart", "datastore", s.datastore_anti_affinity, True),
            ("apart", "cluster", s.anti_affinity, filters),
            ("together", "datastore", s.datastore_affinity, True),
            ("together", "cluster", s.affinity, filters)):
        if not hard:
            continue
        for members in groups.values():
            fixed = set()
            for name in members:
                vm = s.vms[s.vm_index[name]]
                if vm.operation == "resident":
                    c, _, d = current_place(s, vm)
                    fixed.add(d if scope == "datastore" else c)
            rules.append((kind, scope, [m for m in members
                                        if s.vms[s.vm_index[m]].operation != "resident"], fixed))
    ruled = {m for _, _, members, _ in rules for m in members}
    by_key: dict[tuple, VmType] = {}
    types: list[VmType] = []
    for vm in acted:
        allowed = allowed_places(s, vm)
        bins_ok, stores = [], {}
        if allowed is not None:
            good_bins, good_stores = allowed
            for c in s.clusters:
                connected = [d.name for d in s.datastores
                             if c.name in d.clusters and d.name in good_stores]
                members = [bin_index[(c.name, h)] for h in (
                    [h.name for h in c.hosts] if c.hosts else [None])
                           if (c.name, h) in good_bins]
                if connected and members:
                    bins_ok += members
                    stores[c.name] = connected
        sizes = (round(vm.cpu * cpu_scale), round(vm.memory * memory_scale),
                 round(vm.storage * scales["storage"]),
                 round(vm.iops * scales["iops"]) if t.iops_enabled else 0)
        key = (sizes, tuple(bins_ok), tuple(sorted((c, tuple(d)) for c, d in stores.items())),
               vm.name if vm.name in ruled else None)
        if key not in by_key:
            by_key[key] = VmType([], *sizes, bins_ok, stores)
            types.append(by_key[key])
        by_key[key].members.append(vm.name)
    return CountModel(bins, types, cluster_room, store_room, rules)


# ---------------------------------------------------------------- the configuration LP
