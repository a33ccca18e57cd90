"""The VCD placement input format and its validating loader.

A VCD scenario (JSON or YAML) describes what VMware Cloud Director's placement engine sees:

```
{"name": "...", "description": "...",
 "tunables": {"currentScoreWeight": 0.5, "cpuBurstRatio": 0.67, "memoryBurstRatio": 0.67,
              "futureDeployRatio": 0.5, "cpuHeadRoom": 0.2, "memoryHeadRoom": 0.2,
              "storageHeadRoom": 0.2, "iopsEnabled": false, "powerOnAttempts": 2,
              "scoreCombination": "minimum", ...},
 "clusters": [{"name": "c1", "enabled": true, "health": "green",
               "cpu": {"capacity": 20000, "unreserved": 12000, "burst": 1000},
               "memory": {"capacity": 65536, "unreserved": 30000, "burst": 0},
               "hardwareVersions": [13, 14, 15], "storageProfiles": ["gold"], "maxVcpus": 64,
               "hosts": [{"name": "h1", "cpu": {"capacity": 10000, "unreserved": 6000},
                          "memory": {"capacity": 32768, "unreserved": 15000}}, ...]}],
 "datastores": [{"name": "ds1", "capacity": 1000000, "free": 400000, "provisioned": 700000,
                 "policies": ["gold"], "iopsCapacity": 5000, "enabled": true,
                 "redThreshold": false, "clusters": ["c1"]}],
 "networkPools": [{"name": "np1", "networks": ["web"]}],
 "vms": [{"name": "web1", "vapp": "shop", "orgVdc": "acme", "cpu": 1000, "memory": 2048,
          "storage": 40960, "vcpus": 2, "hardwareVersion": 14, "storagePolicy": "gold",
          "iops": 100, "network": "web", "powerState": "off", "operation": "create",
          "placement": {"cluster": "c1", "datastore": "ds1", "host": "h1"},
          "datastoreAffinity": "ds1", "target": {"cluster": "c2", "datastore": "ds2"}}],
 "rules": {"affinity": [{"name": "a", "vms": ["web1", "web2"], "scope": "cluster"}],
           "antiAffinity": [{"name": "b", "vms": ["db1", "db2"], "scope": "datastore"}],
           "vmHost": [{"name": "r", "type": "must", "vms": ["db1"], "clusters": ["c1"]}]}}
```

Units: CPU in MHz, memory and storage in MB. VM ``cpu``/``memory`` are reservations.

The cluster, host and datastore figures describe everything *except* the listed VMs. A
listed VM is either one the engine acts on (``operation`` ``create``, ``powerOn``,
``import``, ``edit``, ``migrate``; it takes its reservation, storage and IOPS wherever it
ends up, staying VMs included) or a ``resident`` that stays where it is: a powered-on
resident holds its reservation there, a powered-off one holds none but counts in its
cluster's future usage; both hold their storage and IOPS. The engine's future usage of a
cluster is the reservations of the powered-off VMs placed there and not yet acted on.

``unreserved`` defaults to ``capacity``; ``burst`` may be omitted (the engine then scores
the current component with the reservation score). A cluster with ``hosts`` has the sums of
its hosts as its CPU and memory capacity and unreserved figures (given figures must equal
them). ``provisioned`` defaults to ``capacity - free``. ``operation`` defaults to ``create``
for a VM without a placement and ``powerOn`` for one with a placement; the others must be
asked for and need a placement. ``target`` (``migrate`` only) names the pool and/or
datastore to move to; without it the VM moves to another pool. ``datastoreAffinity`` pins
the VM's disks to one datastore. VM-VM rules have a ``scope``: ``cluster`` (default; the
tunable ``vmVmRules`` says whether they rank or filter) or ``datastore`` (filters). VM-host
rules have a ``type``: ``must``, ``mustNot`` (filters), ``should`` and ``shouldNot`` (ranking
lists). Names must not contain ``/`` (the exact model joins them with it). Every mistake
raises :class:`InputError` naming the field, e.g. ``vms[3].cpu: must not be negative``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..fields import Fields, check_list, check_number, is_integer

HEALTH = ("green", "yellow", "red")
OPERATIONS = ("create", "powerOn", "import", "edit", "migrate", "resident")
RULE_TYPES = ("must", "mustNot", "should", "shouldNot")
RULE_SCOPES = ("cluster", "datastore")
POWER_STATES = ("on", "off")
# VMware's parameters (the description names them and gives these defaults)
DEFAULT_TUNABLES = {"currentScoreWeight": 0.5, "cpuBurstRatio": 0.67, "memoryBurstRatio": 0.67,
                    "futureDeployRatio": 0.5, "cpuHeadRoom": 0.2, "memoryHeadRoom": 0.2,
                    "storageHeadRoom": 0.2}
# This project's choices where the description is silent: name -> (default, alternatives)
CHOICES = {
    "scoreCombination": ("minimum", "mean", "lexicographic"),
    "yellowClusters": ("lastResort", "withinLists"),
    "vmVmRules": ("lists", "filters"),
    "orgVdcColocation": ("preferred", "off"),
    "storageAggregate": ("candidates", "connected"),
    "datastoreChoice": ("mostFree", "firstFit"),
    "hostPlacement": ("mostFree", "firstFit"),
    "keepDisks": ("allOperations", "powerOnOnly"),
}
TOP_LEVEL = {"name", "description", "tunables", "clusters", "datastores", "networkPools",
             "vms", "rules"}


@dataclass(frozen=True)
class Tunables:
    """VMware's parameters (defaults from the description), then this project's choices
    (first value of each :data:`CHOICES` entry is the default)."""

    current_score_weight: float = 0.5
    cpu_burst_ratio: float = 0.67
    memory_burst_ratio: float = 0.67
    future_deploy_ratio: float = 0.5
    cpu_headroom: float = 0.2
    memory_headroom: float = 0.2
    storage_headroom: float = 0.2
    iops_enabled: bool = False
    power_on_attempts: int = 2
    score_combination: str = "minimum"
    yellow_clusters: str = "lastResort"
    vm_vm_rules: str = "lists"
    org_vdc_colocation: str = "preferred"
    storage_aggregate: str = "candidates"
    datastore_choice: str = "mostFree"
    host_placement: str = "mostFree"
    keep_disks: str = "allOperations"


@dataclass(frozen=True)
class Resource:
    """CPU or memory of a cluster (resource pool) or host."""

    capacity: float
    unreserved: float
    burst: float | None  # current usage above reservation (clusters only)


@dataclass(frozen=True)
class Host:
    name: str
    cpu: Resource
    memory: Resource
    enabled: bool


@dataclass(frozen=True)
class Cluster:
    name: str
    cpu: Resource
    memory: Resource
    enabled: bool
    health: str
    hardware_versions: frozenset[int] | None  # None: every version
    storage_profiles: frozenset[str] | None  # None: every profile
    max_vcpus: int | None
    hosts: tuple[Host, ...] = ()  # empty: the cluster is not modelled host by host


@dataclass(frozen=True)
class Datastore:
    name: str
    capacity: float
    free: float
    provisioned: float
    policies: frozenset[str]
    iops_capacity: float | None  # None: unlimited
    enabled: bool
    red_threshold: bool
    clusters: tuple[str, ...]


@dataclass(frozen=True)
class Vm:
    name: str
    vapp: str
    cpu: float
    memory: float
    storage: float
    vcpus: int
    hardware_version: int | None
    storage_policy: str | None
    iops: float
    network: str | None
    power_state: str
    operation: str
    placement: tuple[str, str] | None  # (cluster, datastore)
    host: str | None = None  # the host of the placement, when known
    org_vdc: str | None = None
    datastore_affinity: str | None = None
    target: tuple[str | None, str | None] | None = None  # migrate: (cluster, datastore)


@dataclass(frozen=True)
class VmHostRule:
    name: str
    kind: str  # must, mustNot, should, shouldNot
    vms: tuple[str, ...]
    clusters: frozenset[str]


@dataclass(frozen=True)
class VcdScenario:
    name: str
    description: str
    tunables: Tunables
    clusters: list[Cluster]
    datastores: list[Datastore]
    network_pools: list[tuple[str, tuple[str, ...]]]  # (pool, networks), in input order
    vms: list[Vm]
    affinity: dict[str, tuple[str, ...]]  # cluster-scope VM-VM rules
    anti_affinity: dict[str, tuple[str, ...]]
    vm_host: list[VmHostRule]
    cluster_index: dict[str, int] = field(repr=False, default_factory=dict)
    datastore_index: dict[str, int] = field(repr=False, default_factory=dict)
    vm_index: dict[str, int] = field(repr=False, default_factory=dict)
    datastore_affinity: dict[str, tuple[str, ...]] = field(default_factory=dict)
    datastore_anti_affinity: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def network_pool(self, network: str | None) -> str | None:
        """The first pool offering ``network`` (a VM without a network needs no pool: '')."""
        if network is None:
            return ""
        return next((pool for pool, nets in self.network_pools if network in nets), None)

    def cluster(self, name: str) -> Cluster:
        return self.clusters[self.cluster_index[name]]

    def datastore(self, name: str) -> Datastore:
        return self.datastores[self.datastore_index[name]]

    @property
    def acted_on(self) -> list[Vm]:
        """The VMs the engine decides about (every VM but the residents)."""
        return [vm for vm in self.vms if vm.operation != "resident"]


def _name(fields: Fields, key: str) -> str:
    value = fields.raw(key)
    if not isinstance(value, str) or not value:
        raise InputError(fields.at(key), "expected a non-empty name", value)
    if "/" in value:
        raise InputError(fields.at(key), "names must not contain '/'", value)
    return value


def _optional_name(fields: Fields, key: str) -> str | None:
    return None if fields.raw(key) is None else _name(fields, key)


def _amount(fields: Fields, key: str, default: float | None = None,
            required: bool = False) -> float | None:
    """A non-negative number; ``default`` when absent (an error when ``required``)."""
    value = fields.raw(key)
    if value is None:
        if required:
            raise InputError(fields.at(key), "missing")
        return default
    return check_number(value, fields.at(key), nonnegative=True)


def _fraction(fields: Fields, key: str) -> float:
    value = fields.raw(key)
    if value is None:
        return DEFAULT_TUNABLES[key]
    number = check_number(value, fields.at(key))
    if not 0 <= number <= 1:
        raise InputError(fields.at(key), "expected a number from 0 to 1", value)
    return number


def _list(value: Any, path: str) -> list:
    return [] if value is None else check_list(value, path)


def _int(fields: Fields, key: str, minimum: int = 0) -> int | None:
    value = fields.raw(key)
    if value is None:
        return None
    if not is_integer(value) or value < minimum:
        raise InputError(fields.at(key), f"expected an integer >= {minimum}", value)
    return int(value)


def _choice(fields: Fields, key: str, choices: tuple[str, ...], default: str) -> str:
    value = fields.raw(key)
    if value is None:
        return default
    if value not in choices:
        raise InputError(fields.at(key), "expected one of " + ", ".join(choices), value)
    return value


def _unique(names: list[str], path: str, what: str) -> dict[str, int]:
    index: dict[str, int] = {}
    for k, name in enumerate(names):
        if name in index:
            raise InputError(f"{path}[{k}].name", f"duplicate {what}", name)
        index[name] = k
    return index


def _parse_tunables(data: Any) -> Tunables:
    f = Fields(data if data is not None else {}, "tunables")
    values = {key: _fraction(f, key) for key in DEFAULT_TUNABLES}
    iops = f.flag("iopsEnabled")
    attempts = _int(f, "powerOnAttempts", 1)
    choices = {key: _choice(f, key, options, options[0]) for key, options in CHOICES.items()}
    f.done("tunables")
    return Tunables(values["currentScoreWeight"], values["cpuBurstRatio"],
                    values["memoryBurstRatio"], values["futureDeployRatio"],
                    values["cpuHeadRoom"], values["memoryHeadRoom"], values["storageHeadRoom"],
                    iops, 2 if attempts is None else attempts, choices["scoreCombination"],
                    choices["yellowClusters"], choices["vmVmRules"],
                    choices["orgVdcColocation"], choices["storageAggregate"],
                    choices["datastoreChoice"], choices["hostPlacement"], choices["keepDisks"])


def _parse_resource(data: Any, path: str, sums: tuple[float, float] | None = None,
                    burst: bool = True) -> Resource:
    """CPU or memory figures; ``sums`` (capacity, unreserved) of a cluster's hosts are the
    defaults, and given figures must equal them."""
    if data is None and sums is not None:
        return Resource(sums[0], sums[1], None)
    f = Fields(data, path)
    capacity = _amount(f, "capacity", None if sums is None else sums[0], required=sums is None)
    unreserved = _amount(f, "unreserved", capacity if sums is None else sums[1])
    value = _amount(f, "burst") if burst else None
    if f.raw("undeployed") is not None:
        raise InputError(f.at("undeployed"), "no longer read: list the powered-off VMs "
                         "(powerState 'off', a placement, operation 'resident') instead; the "
                         "engine sums their reservations")
    f.done("cluster resource" if burst else "host resource")
    if sums is not None:
        for key, given, total in (("capacity", capacity, sums[0]),
                                  ("unreserved", unreserved, sums[1])):
            if abs(given - total) > 1e-9 * max(1.0, abs(total)):
                raise InputError(f.at(key), f"must equal the sum over the cluster's hosts "
                                 f"({total:g})", given)
    if unreserved > capacity:
        raise InputError(f.at("unreserved"), f"exceeds the capacity {capacity:g}", unreserved)
    return Resource(capacity, unreserved, value)


def _parse_host(data: Any, path: str) -> Host:
    f = Fields(data, path)
    name = _name(f, "name")
    cpu = _parse_resource(f.raw("cpu"), f.at("cpu"), burst=False)
    memory = _parse_resource(f.raw("memory"), f.at("memory"), burst=False)
    enabled = f.flag("enabled", True)
    f.done("host")
    return Host(name, cpu, memory, enabled)


def _parse_cluster(data: Any, path: str) -> Cluster:
    f = Fields(data, path)
    name = _name(f, "name")
    hosts = tuple(_parse_host(h, f"{f.at('hosts')}[{k}]")
                  for k, h in enumerate(_list(f.raw("hosts"), f.at("hosts"))))
    if f.raw("hosts") is not None and not hosts:
        raise InputError(f.at("hosts"), "an empty host list: leave it out to model the "
                         "cluster as a whole")
    _unique([h.name for h in hosts], f.at("hosts"), "host")
    cpu_sums = memory_sums = None
    if hosts:
        cpu_sums = (sum(h.cpu.capacity for h in hosts), sum(h.cpu.unreserved for h in hosts))
        memory_sums = (sum(h.memory.capacity for h in hosts),
                       sum(h.memory.unreserved for h in hosts))
    cpu = _parse_resource(f.raw("cpu"), f.at("cpu"), cpu_sums)
    memory = _parse_resource(f.raw("memory"), f.at("memory"), memory_sums)
    enabled = f.flag("enabled", True)
    health = _choice(f, "health", HEALTH, "green")
    versions = f.raw("hardwareVersions")
    if versions is not None:
        if not isinstance(versions, list) or not all(is_integer(v) for v in versions):
            raise InputError(f.at("hardwareVersions"), "expected a list of integers", versions)
        versions = frozenset(int(v) for v in versions)
    profiles = f.raw("storageProfiles")
    profiles = None if profiles is None else frozenset(f.names("storageProfiles"))
    max_vcpus = _int(f, "maxVcpus", 1)
    f.done("cluster")
    return Cluster(name, cpu, memory, enabled, health, versions, profiles, max_vcpus, hosts)


def _parse_datastore(data: Any, path: str, clusters: dict[str, int]) -> Datastore:
    f = Fields(data, path)
    name = _name(f, "name")
    capacity = _amount(f, "capacity", required=True)
    free = _amount(f, "free", capacity)
    provisioned = _amount(f, "provisioned")
    policies = frozenset(f.names("policies"))
    iops = _amount(f, "iopsCapacity")
    enabled = f.flag("enabled", True)
    red = f.flag("redThreshold")
    connected = f.names("clusters")
    f.done("datastore")
    if free > capacity:
        raise InputError(f.at("free"), f"exceeds the capacity {capacity:g}", free)
    for k, cluster in enumerate(connected):
        if cluster not in clusters:
            raise InputError(f"{f.at('clusters')}[{k}]", "unknown cluster", cluster)
    return Datastore(name, capacity, free, capacity - free if provisioned is None else provisioned,
                     policies, iops, enabled, red, tuple(dict.fromkeys(connected)))


def _parse_vm(data: Any, path: str, clusters: list[Cluster], cluster_index: dict[str, int],
              datastores: dict[str, Datastore]) -> Vm:
    f = Fields(data, path)
    name = _name(f, "name")
    vapp = f.text("vapp", name)
    org_vdc = _optional_name(f, "orgVdc")
    cpu, memory, storage = (_amount(f, key, 0.0) for key in ("cpu", "memory", "storage"))
    vcpus = _int(f, "vcpus", 1) or 1
    version = _int(f, "hardwareVersion", 1)
    policy = f.raw("storagePolicy")
    if policy is not None and not isinstance(policy, str):
        raise InputError(f.at("storagePolicy"), "expected a string", policy)
    iops = _amount(f, "iops", 0.0)
    network = f.raw("network")
    if network is not None and not isinstance(network, str):
        raise InputError(f.at("network"), "expected a string", network)
    power = _choice(f, "powerState", POWER_STATES, "off")
    placement, host = None, None
    raw_placement = f.raw("placement")
    if raw_placement is not None:
        p = Fields(raw_placement, f.at("placement"))
        cluster, datastore = _name(p, "cluster"), _name(p, "datastore")
        host = _optional_name(p, "host")
        p.done("placement")
        if cluster not in cluster_index:
            raise InputError(p.at("cluster"), "unknown cluster", cluster)
        ds = datastores.get(datastore)
        if ds is None:
            raise InputError(p.at("datastore"), "unknown datastore", datastore)
        if cluster not in ds.clusters:
            raise InputError(p.at("datastore"), f"not connected to cluster '{cluster}'",
                             datastore)
        hosts = [h.name for h in clusters[cluster_index[cluster]].hosts]
        if host is not None and host not in hosts:
            raise InputError(p.at("host"), f"not a host of cluster '{cluster}'", host)
        placement = (cluster, datastore)
    operation = _choice(f, "operation", OPERATIONS, "create" if placement is None else "powerOn")
    affinity = _optional_name(f, "datastoreAffinity")
    if affinity is not None and affinity not in datastores:
        raise InputError(f.at("datastoreAffinity"), "unknown datastore", affinity)
    target = None
    if f.raw("target") is not None:
        t = Fields(f.raw("target"), f.at("target"))
        target = (_optional_name(t, "cluster"), _optional_name(t, "datastore"))
        t.done("migration target")
        if operation != "migrate":
            raise InputError(f.at("target"), "only a 'migrate' operation has a target")
        if target[0] is not None and target[0] not in cluster_index:
            raise InputError(t.at("cluster"), "unknown cluster", target[0])
        if target[1] is not None and target[1] not in datastores:
            raise InputError(t.at("datastore"), "unknown datastore", target[1])
        if target == (None, None):
            raise InputError(f.at("target"), "names neither a cluster nor a datastore "
                             "(leave it out to move to any other pool)")
        if None not in target and target[0] not in datastores[target[1]].clusters:
            raise InputError(t.at("datastore"), f"not connected to cluster '{target[0]}'",
                             target[1])
    f.done("VM")
    if operation != "create" and placement is None:
        raise InputError(f.at("placement"), f"operation '{operation}' needs the VM's current "
                         "placement")
    if operation == "resident" and power == "on" and host is None \
            and clusters[cluster_index[placement[0]]].hosts:
        raise InputError(f.at("placement.host"), "a powered-on resident of a cluster "
                         "modelled host by host needs its host")
    return Vm(name, vapp, cpu, memory, storage, vcpus, version, policy, iops, network, power,
              operation, placement, host, org_vdc, affinity, target)


def _check_residents(vms: list[Vm], clusters: list[Cluster], cluster_index: dict[str, int],
                     datastores: list[Datastore], datastore_index: dict[str, int],
                     iops: bool) -> None:
    """What residents hold must fit in the figures, or nothing could be placed consistently."""
    held: dict[tuple[str, ...], float] = {}
    for k, vm in enumerate(vms):
        if vm.operation != "resident":
            continue
        cluster, datastore = vm.placement
        amounts = [((datastore, "storage"), vm.storage, f"vms[{k}].storage")]
        if iops and datastores[datastore_index[datastore]].iops_capacity is not None:
            amounts.append(((datastore, "iops"), vm.iops, f"vms[{k}].iops"))
        if vm.power_state == "on":
            amounts += [((cluster, "cpu"), vm.cpu, f"vms[{k}].cpu"),
                        ((cluster, "memory"), vm.memory, f"vms[{k}].memory")]
            if vm.host is not None:
                amounts += [((cluster, vm.host, "cpu"), vm.cpu, f"vms[{k}].cpu"),
                            ((cluster, vm.host, "memory"), vm.memory, f"vms[{k}].memory")]
        for key, amount, path in amounts:
            held[key] = held.get(key, 0.0) + amount
            if len(key) == 2 and key[1] == "storage":
                limit = datastores[datastore_index[key[0]]].free
            elif len(key) == 2 and key[1] == "iops":
                limit = datastores[datastore_index[key[0]]].iops_capacity
            elif len(key) == 2:
                limit = getattr(clusters[cluster_index[key[0]]], key[1]).unreserved
            else:
                host = next(h for h in clusters[cluster_index[key[0]]].hosts
                            if h.name == key[1])
                limit = getattr(host, key[2]).unreserved
            if held[key] > limit + 1e-9:
                raise InputError(path, f"residents hold more than the {'/'.join(key)} figure "
                                 f"({held[key]:g} > {limit:g})", amount)


def _check_resident_rules(groups: dict, vms: list[Vm], vm_index: dict[str, int],
                          cluster_rules_filter: bool) -> None:
    """Residents do not move, so a rule that filters must already hold among them."""
    for (key, scope), rules in groups.items():
        if scope == "cluster" and not cluster_rules_filter:
            continue
        for name, members in rules.items():
            spots = [vms[vm_index[m]].placement[0 if scope == "cluster" else 1]
                     for m in members if vms[vm_index[m]].operation == "resident"]
            broken = len(set(spots)) > 1 if key == "affinity" else len(set(spots)) < len(spots)
            if broken:
                raise InputError(f"rules.{key}", f"rule '{name}' ({scope}) is already broken "
                                 "by resident VMs, which do not move", name)


def _parse_rules(data: Any, vms: dict[str, int], clusters: dict[str, int]):
    f = Fields(data if data is not None else {}, "rules")
    groups: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {}
    for key in ("affinity", "antiAffinity"):
        member_of: dict[tuple[str, str], str] = {}
        names: set[str] = set()
        for scope in RULE_SCOPES:
            groups[key, scope] = {}
        for k, entry in enumerate(_list(f.raw(key), f.at(key))):
            path = f"rules.{key}[{k}]"
            g = Fields(entry, path)
            name = _name(g, "name")
            members = g.names("vms")
            scope = _choice(g, "scope", RULE_SCOPES, "cluster")
            g.done(f"{key} rule")
            if name in names:
                raise InputError(f"{path}.name", "duplicate rule", name)
            names.add(name)
            for m, vm in enumerate(members):
                if vm not in vms:
                    raise InputError(f"{path}.vms[{m}]", "unknown VM", vm)
                if key == "affinity":  # one affinity group per VM and scope: a partition
                    if (vm, scope) in member_of:
                        raise InputError(f"{path}.vms[{m}]", "VM already in affinity rule "
                                         f"'{member_of[vm, scope]}'", vm)
                    member_of[vm, scope] = name
            groups[key, scope][name] = tuple(dict.fromkeys(members))
    host_rules = []
    for k, entry in enumerate(_list(f.raw("vmHost"), f.at("vmHost"))):
        path = f"rules.vmHost[{k}]"
        r = Fields(entry, path)
        name = _name(r, "name")
        kind = _choice(r, "type", RULE_TYPES, "must")
        members = r.names("vms")
        targets = r.names("clusters")
        r.done("vmHost rule")
        for m, vm in enumerate(members):
            if vm not in vms:
                raise InputError(f"{path}.vms[{m}]", "unknown VM", vm)
        for m, cluster in enumerate(targets):
            if cluster not in clusters:
                raise InputError(f"{path}.clusters[{m}]", "unknown cluster", cluster)
        host_rules.append(VmHostRule(name, kind, tuple(dict.fromkeys(members)),
                                     frozenset(targets)))
    f.done("rules")
    return groups, host_rules


def parse_vcd(data: Any) -> VcdScenario:
    """Validate a VCD scenario dict completely; raise InputError naming the first problem.
    The dict is not modified."""
    if not isinstance(data, dict):
        raise InputError("", "a VCD scenario must be a mapping at the top level",
                         type(data).__name__)
    for key in data:
        if key not in TOP_LEVEL:
            raise InputError(str(key), "unknown VCD scenario field", key)
    top = Fields(data, "")
    name = top.text("name", "vcd")
    description = top.text("description", "")
    tunables = _parse_tunables(data.get("tunables"))
    clusters = [_parse_cluster(c, f"clusters[{k}]")
                for k, c in enumerate(_list(data.get("clusters"), "clusters"))]
    if not clusters:
        raise InputError("clusters", "at least one cluster is needed")
    cluster_index = _unique([c.name for c in clusters], "clusters", "cluster")
    datastores = [_parse_datastore(d, f"datastores[{k}]", cluster_index)
                  for k, d in enumerate(_list(data.get("datastores"), "datastores"))]
    datastore_index = _unique([d.name for d in datastores], "datastores", "datastore")
    pools = []
    for k, entry in enumerate(_list(data.get("networkPools"), "networkPools")):
        p = Fields(entry, f"networkPools[{k}]")
        pools.append((_name(p, "name"), tuple(p.names("networks"))))
        p.done("network pool")
    _unique([p for p, _ in pools], "networkPools", "network pool")
    by_name = {d.name: d for d in datastores}
    vms = [_parse_vm(v, f"vms[{k}]", clusters, cluster_index, by_name)
           for k, v in enumerate(_list(data.get("vms"), "vms"))]
    vm_index = _unique([v.name for v in vms], "vms", "VM")
    _check_residents(vms, clusters, cluster_index, datastores, datastore_index,
                     tunables.iops_enabled)
    groups, host = _parse_rules(data.get("rules"), vm_index, cluster_index)
    _check_resident_rules(groups, vms, vm_index, tunables.vm_vm_rules == "filters")
    return VcdScenario(name, description, tunables, clusters, datastores, pools, vms,
                       groups["affinity", "cluster"], groups["antiAffinity", "cluster"], host,
                       cluster_index, datastore_index, vm_index,
                       groups["affinity", "datastore"], groups["antiAffinity", "datastore"])


# ----------------------------------------------------------------- static compatibility


def cluster_reason(scenario: VcdScenario, vm: Vm, cluster: Cluster) -> str | None:
    """Why ``cluster`` can never take ``vm`` (order-independent filters), or None."""
    if not cluster.enabled:
        return "disabled"
    if cluster.health == "red":
        return "health red"
    if cluster.hardware_versions is not None and vm.hardware_version is not None \
            and vm.hardware_version not in cluster.hardware_versions:
        return f"hardware version {vm.hardware_version} not supported"
    if cluster.max_vcpus is not None and vm.vcpus > cluster.max_vcpus:
        return f"{vm.vcpus} vCPUs > {cluster.max_vcpus}"
    if cluster.storage_profiles is not None and vm.storage_policy is not None \
            and vm.storage_policy not in cluster.storage_profiles:
        return f"storage profile '{vm.storage_policy}' not offered"
    for rule in scenario.vm_host:
        if vm.name in rule.vms:
            if rule.kind == "must" and cluster.name not in rule.clusters:
                return f"VM-host rule '{rule.name}' (must)"
            if rule.kind == "mustNot" and cluster.name in rule.clusters:
                return f"VM-host rule '{rule.name}' (must not)"
    if vm.operation == "migrate":
        wanted = vm.target[0] if vm.target else None
        if wanted is not None and cluster.name != wanted:
            return f"not the migration target '{wanted}'"
        if vm.target is None and cluster.name == vm.placement[0]:
            return "the VM's current pool (a migration moves it)"
    if vm.datastore_affinity is not None \
            and cluster.name not in scenario.datastore(vm.datastore_affinity).clusters:
        return f"not connected to datastore '{vm.datastore_affinity}' (datastore affinity)"
    if vm.cpu > cluster.cpu.capacity or vm.memory > cluster.memory.capacity:
        return "reservation above the cluster's capacity"
    if cluster.hosts and not host_candidates(cluster, vm):
        return "no enabled host has the capacity for the reservation"
    return None


def host_candidates(cluster: Cluster, vm: Vm) -> list[str]:
    """The enabled hosts of ``cluster`` whose capacity holds ``vm``'s reservation."""
    return [h.name for h in cluster.hosts if h.enabled and vm.cpu <= h.cpu.capacity
            and vm.memory <= h.memory.capacity]


def datastore_reason(scenario: VcdScenario, vm: Vm, datastore: Datastore) -> str | None:
    """Why ``datastore`` can never hold ``vm`` (order-independent filters), or None.
    Disabled and red-threshold datastores are filtered except on import."""
    if vm.datastore_affinity is not None and datastore.name != vm.datastore_affinity:
        return f"not '{vm.datastore_affinity}' (datastore affinity)"
    if vm.operation == "migrate" and vm.target and vm.target[1] is not None \
            and datastore.name != vm.target[1]:
        return f"not the migration target '{vm.target[1]}'"
    if vm.storage_policy is not None and vm.storage_policy not in datastore.policies:
        return f"storage policy '{vm.storage_policy}' not offered"
    if vm.operation != "import":
        if not datastore.enabled:
            return "disabled"
        if datastore.red_threshold:
            return "red threshold"
    if vm.storage > datastore.free:
        return f"storage {vm.storage:g} > free {datastore.free:g}"
    if scenario.tunables.iops_enabled and datastore.iops_capacity is not None \
            and vm.iops > datastore.iops_capacity:
        return f"IOPS {vm.iops:g} > capacity {datastore.iops_capacity:g}"
    return None


def vm_reason(scenario: VcdScenario, vm: Vm) -> str | None:
    """Why ``vm`` cannot be placed anywhere, whatever else happens (its network), or None."""
    if scenario.network_pool(vm.network) is None:
        return f"no network pool offers network '{vm.network}'"
    return None


def allowed_places(scenario: VcdScenario, vm: Vm
                   ) -> tuple[set[tuple[str, str | None]], set[str]] | None:
    """Where the order-independent filters let ``vm`` go: the (cluster, host) pairs (host
    None for a cluster not modelled host by host) and the datastores; a place is allowed
    when both its pair and its datastore are. None: nowhere (see :func:`vm_reason`)."""
    if vm_reason(scenario, vm):
        return None
    pairs = {(c.name, h) for c in scenario.clusters if not cluster_reason(scenario, vm, c)
             for h in (host_candidates(c, vm) if c.hosts else [None])}
    stores = {d.name for d in scenario.datastores if not datastore_reason(scenario, vm, d)}
    return pairs, stores


def current_place(scenario: VcdScenario, vm: Vm) -> tuple[str, str | None, str]:
    """(cluster, host, datastore) of a placed VM: a host cluster's first host when the VM's
    host is not given, None for a cluster not modelled host by host."""
    cluster, datastore = vm.placement
    hosts = scenario.cluster(cluster).hosts
    return cluster, vm.host or (hosts[0].name if hosts else None), datastore
