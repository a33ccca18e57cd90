"""The VCD placement input format and its validating loader.

A VCD scenario (JSON or YAML) describes what VMware Cloud Director's placement engine sees:

```
{"name": "...", "description": "...",
 "tunables": {"currentScoreWeight": 0.5, "cpuBurstRatio": 0.67, "memoryBurstRatio": 0.67,
              "futureDeployRatio": 0.5, "cpuHeadRoom": 0.2, "memoryHeadRoom": 0.2,
              "storageHeadRoom": 0.2, "iopsEnabled": false},
 "clusters": [{"name": "c1", "enabled": true, "health": "green",
               "cpu": {"capacity": 20000, "unreserved": 12000, "burst": 1000, "undeployed": 2000},
               "memory": {"capacity": 65536, "unreserved": 30000, "burst": 0, "undeployed": 0},
               "hardwareVersions": [13, 14, 15], "storageProfiles": ["gold"], "maxVcpus": 64}],
 "datastores": [{"name": "ds1", "capacity": 1000000, "free": 400000, "provisioned": 700000,
                 "policies": ["gold"], "iopsCapacity": 5000, "enabled": true,
                 "redThreshold": false, "clusters": ["c1"]}],
 "networkPools": [{"name": "np1", "networks": ["web"]}],
 "vms": [{"name": "web1", "vapp": "shop", "cpu": 1000, "memory": 2048, "storage": 40960,
          "vcpus": 2, "hardwareVersion": 14, "storagePolicy": "gold", "iops": 100,
          "network": "web", "powerState": "off", "operation": "create",
          "placement": {"cluster": "c1", "datastore": "ds1"}}],
 "rules": {"affinity": [{"name": "a", "vms": ["web1", "web2"]}],
           "antiAffinity": [{"name": "b", "vms": ["db1", "db2"]}],
           "vmHost": [{"name": "r", "type": "must", "vms": ["db1"], "clusters": ["c1"]}]}}
```

Units: CPU in MHz, memory and storage in MB. VM ``cpu``/``memory`` are reservations.

The cluster and datastore figures describe everything *except* the listed VMs: the listed
VMs (being created, powered on or imported) take their reservation, storage and IOPS from
these figures wherever they end up, staying VMs included. ``unreserved`` defaults to
``capacity``; ``burst`` and ``undeployed`` may be omitted (the engine then scores with the
reservation score, see :mod:`cpsat_rebalancer.vcd.engine`). ``operation`` defaults to
``create`` for a VM without a placement and ``powerOn`` for one with a placement;
``import`` must be asked for. VM-VM affinity and anti-affinity groups are required rules;
VM-host rules have a ``type``: ``must``, ``mustNot`` (required), ``should`` and ``shouldNot``
(preferences). Names must not contain ``/`` (the exact model joins them with it).
Every mistake raises :class:`InputError` naming the field, e.g.
``vms[3].cpu: must not be negative``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..fields import Fields, check_list, check_number, is_integer

HEALTH = ("green", "yellow", "red")
OPERATIONS = ("create", "powerOn", "import")
RULE_TYPES = ("must", "mustNot", "should", "shouldNot")
POWER_STATES = ("on", "off")
DEFAULT_TUNABLES = {"currentScoreWeight": 0.5, "cpuBurstRatio": 0.67, "memoryBurstRatio": 0.67,
                    "futureDeployRatio": 0.5, "cpuHeadRoom": 0.2, "memoryHeadRoom": 0.2,
                    "storageHeadRoom": 0.2}
TOP_LEVEL = {"name", "description", "tunables", "clusters", "datastores", "networkPools",
             "vms", "rules"}


@dataclass(frozen=True)
class Tunables:
    current_score_weight: float = 0.5
    cpu_burst_ratio: float = 0.67
    memory_burst_ratio: float = 0.67
    future_deploy_ratio: float = 0.5
    cpu_headroom: float = 0.2
    memory_headroom: float = 0.2
    storage_headroom: float = 0.2
    iops_enabled: bool = False


@dataclass(frozen=True)
class Resource:
    """CPU or memory of a cluster (resource pool)."""

    capacity: float
    unreserved: float
    burst: float | None  # current usage above reservation
    undeployed: float | None  # reservations of undeployed (powered-off) VMs


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


@dataclass(frozen=True)
class Datastore:
    name: str
    capacity: float
    free: float
    provisioned: float | None
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
    affinity: dict[str, tuple[str, ...]]
    anti_affinity: dict[str, tuple[str, ...]]
    vm_host: list[VmHostRule]
    cluster_index: dict[str, int] = field(repr=False, default_factory=dict)
    datastore_index: dict[str, int] = field(repr=False, default_factory=dict)
    vm_index: dict[str, int] = field(repr=False, default_factory=dict)

    def network_pool(self, network: str | None) -> str | None:
        """The first pool offering ``network`` (a VM without a network needs no pool: '')."""
        if network is None:
            return ""
        return next((pool for pool, nets in self.network_pools if network in nets), None)


def _name(fields: Fields, key: str) -> str:
    value = fields.raw(key)
    if not isinstance(value, str) or not value:
        raise InputError(fields.at(key), "expected a non-empty name", value)
    if "/" in value:
        raise InputError(fields.at(key), "names must not contain '/'", value)
    return value


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
    f.done("tunables")
    return Tunables(values["currentScoreWeight"], values["cpuBurstRatio"],
                    values["memoryBurstRatio"], values["futureDeployRatio"],
                    values["cpuHeadRoom"], values["memoryHeadRoom"], values["storageHeadRoom"],
                    iops)


def _parse_resource(data: Any, path: str) -> Resource:
    f = Fields(data, path)
    capacity = _amount(f, "capacity", required=True)
    unreserved = _amount(f, "unreserved", capacity)
    burst = _amount(f, "burst")
    undeployed = _amount(f, "undeployed")
    f.done("cluster resource")
    if unreserved > capacity:
        raise InputError(f.at("unreserved"), f"exceeds the capacity {capacity:g}", unreserved)
    return Resource(capacity, unreserved, burst, undeployed)


def _parse_cluster(data: Any, path: str) -> Cluster:
    f = Fields(data, path)
    name = _name(f, "name")
    cpu = _parse_resource(f.raw("cpu"), f.at("cpu"))
    memory = _parse_resource(f.raw("memory"), f.at("memory"))
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
    return Cluster(name, cpu, memory, enabled, health, versions, profiles, max_vcpus)


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
    return Datastore(name, capacity, free, provisioned, policies, iops, enabled, red,
                     tuple(dict.fromkeys(connected)))


def _parse_vm(data: Any, path: str, scenario_parts: dict) -> Vm:
    f = Fields(data, path)
    name = _name(f, "name")
    vapp = f.text("vapp", name)
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
    placement = None
    raw_placement = f.raw("placement")
    if raw_placement is not None:
        p = Fields(raw_placement, f.at("placement"))
        cluster, datastore = _name(p, "cluster"), _name(p, "datastore")
        p.done("placement")
        if cluster not in scenario_parts["clusters"]:
            raise InputError(p.at("cluster"), "unknown cluster", cluster)
        ds = scenario_parts["datastores"].get(datastore)
        if ds is None:
            raise InputError(p.at("datastore"), "unknown datastore", datastore)
        if cluster not in ds.clusters:
            raise InputError(p.at("datastore"), f"not connected to cluster '{cluster}'",
                             datastore)
        placement = (cluster, datastore)
    operation = _choice(f, "operation", OPERATIONS, "create" if placement is None else "powerOn")
    f.done("VM")
    if operation != "create" and placement is None:
        raise InputError(f.at("placement"), f"operation '{operation}' needs the VM's current "
                         "placement")
    return Vm(name, vapp, cpu, memory, storage, vcpus, version, policy, iops, network, power,
              operation, placement)


def _parse_rules(data: Any, vms: dict[str, int], clusters: dict[str, int]):
    f = Fields(data if data is not None else {}, "rules")
    groups: dict[str, dict[str, tuple[str, ...]]] = {}
    member_of: dict[str, str] = {}
    for key in ("affinity", "antiAffinity"):
        groups[key] = {}
        for k, entry in enumerate(_list(f.raw(key), f.at(key))):
            path = f"rules.{key}[{k}]"
            g = Fields(entry, path)
            name = _name(g, "name")
            members = g.names("vms")
            g.done(f"{key} rule")
            if name in groups[key]:
                raise InputError(f"{path}.name", "duplicate rule", name)
            for m, vm in enumerate(members):
                if vm not in vms:
                    raise InputError(f"{path}.vms[{m}]", "unknown VM", vm)
                if key == "affinity":  # one affinity group per VM: groups are a partition
                    if vm in member_of:
                        raise InputError(f"{path}.vms[{m}]", "VM already in affinity rule "
                                         f"'{member_of[vm]}'", vm)
                    member_of[vm] = name
            groups[key][name] = tuple(dict.fromkeys(members))
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
    return groups["affinity"], groups["antiAffinity"], host_rules


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
    parts = {"clusters": cluster_index, "datastores": {d.name: d for d in datastores}}
    vms = [_parse_vm(v, f"vms[{k}]", parts) for k, v in enumerate(_list(data.get("vms"), "vms"))]
    vm_index = _unique([v.name for v in vms], "vms", "VM")
    affinity, anti, host = _parse_rules(data.get("rules"), vm_index, cluster_index)
    return VcdScenario(name, description, tunables, clusters, datastores, pools, vms, affinity,
                       anti, host, cluster_index, datastore_index, vm_index)


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
    if vm.cpu > cluster.cpu.capacity or vm.memory > cluster.memory.capacity:
        return "reservation above the cluster's capacity"
    return None


def datastore_reason(scenario: VcdScenario, vm: Vm, datastore: Datastore) -> str | None:
    """Why ``datastore`` can never hold ``vm`` (order-independent filters), or None.
    Disabled and red-threshold datastores are filtered except on import."""
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
