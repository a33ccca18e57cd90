"""Random VCD scenarios of N VMs over M clusters (seeded: the same arguments give the same
scenario, on any machine).

Clusters come in three sizes with 40-95% of CPU and memory unreserved, some burst, and two
powered-off resident VMs holding up to a tenth of the cluster's CPU and memory as future
usage; about 10% are yellow, 3% red and 3% disabled; a fifth support hardware versions up to
15 only. With ``hosts`` > 0 each cluster is that many equal hosts whose unreserved figures
vary around the cluster's. Each cluster has two datastores of its own (one ``gold`` +
``silver``, one ``silver``), a tenth of them past the red threshold, thin-provisioned up to
a fifth beyond their used space. VMs belong to vApps of ten and to ``orgs`` organisation
VDCs, shared with the residents. VMs come from a small
catalogue of sizes (so identical VMs form classes in the exact model), with policy, hardware
version and network drawn at random, scaled so that total CPU and memory demand is ``load``
times the unreserved CPU and memory of the usable clusters, so some placements fail when
``load`` is near or above 1.
One VM in ``anti_every`` belongs to an anti-affinity group of three.
"""

from __future__ import annotations

import random
from typing import Any

from ..errors import InputError

SIZES = [  # (cpu MHz, memory MB, storage MB, vcpus)
    (500, 1024, 20480, 1), (1000, 2048, 40960, 2), (2000, 4096, 61440, 2),
    (2000, 8192, 102400, 4), (4000, 16384, 204800, 8), (8000, 32768, 409600, 16)]
CLUSTER_SIZES = [(80000, 262144), (120000, 524288), (200000, 1048576)]  # (MHz, MB)


def generate(vms: int, clusters: int, seed: int = 0, load: float = 0.9,
             anti_every: int = 50, iops: bool = False, hosts: int = 0,
             orgs: int = 3) -> dict[str, Any]:
    """A VCD scenario dict (see :mod:`.inputs` for the format)."""
    if vms < 1 or clusters < 1:
        raise InputError("generate", "needs at least one VM and one cluster", (vms, clusters))
    if load <= 0:
        raise InputError("generate.load", "must be positive", load)
    if hosts < 0:
        raise InputError("generate.hosts", "must not be negative", hosts)
    if orgs < 1:
        raise InputError("generate.orgs", "needs at least one organisation VDC", orgs)
    rng = random.Random(seed)
    extra = random.Random(f"{seed}-details")  # draws that leave the main sequence as it was
    cluster_list, datastores, residents = [], [], []
    for k in range(clusters):
        cpu_cap, mem_cap = rng.choice(CLUSTER_SIZES)
        name = f"c{k:03d}"
        roll = rng.random()
        figures = {}
        for key, capacity in (("cpu", cpu_cap), ("memory", mem_cap)):
            figures[key] = {"capacity": capacity,
                            "unreserved": round(capacity * rng.uniform(0.4, 0.95)),
                            "burst": round(capacity * rng.uniform(0, 0.1))}
            figures[key + " off"] = round(capacity * rng.uniform(0, 0.1))
        cluster = {
            "name": name, "enabled": roll >= 0.03,
            "health": "red" if 0.03 <= roll < 0.06 else "yellow" if roll < 0.16 else "green",
            "cpu": {k: figures["cpu"][k] for k in ("capacity", "unreserved", "burst")},
            "memory": {k: figures["memory"][k] for k in ("capacity", "unreserved", "burst")},
            "hardwareVersions": [13, 14, 15] if rng.random() < 0.2 else [13, 14, 15, 17, 19],
        }
        if hosts:
            cluster["hosts"] = _hosts(name, cluster, hosts, extra)
            for key in ("cpu", "memory"):
                cluster[key] = {"burst": cluster[key]["burst"]}
        cluster_list.append(cluster)
        for j, policies in enumerate((["gold", "silver"], ["silver"])):
            capacity = rng.choice([4_000_000, 8_000_000])
            free = round(capacity * rng.uniform(0.3, 0.9))
            datastores.append({
                "name": f"ds{k:03d}{'ab'[j]}", "capacity": capacity, "free": free,
                "provisioned": round((capacity - free) * extra.uniform(1.0, 1.2)),
                "policies": policies,
                "iopsCapacity": rng.choice([20000, 50000]), "redThreshold": rng.random() < 0.1,
                "clusters": [name]})
        for j in range(2):  # future usage: powered-off residents, half of it each
            residents.append({
                "name": f"off{k:03d}{'ab'[j]}", "vapp": f"parked{k:03d}",
                "orgVdc": f"org{k % orgs}", "operation": "resident", "powerState": "off",
                "cpu": figures["cpu off"] // 2, "memory": figures["memory off"] // 2,
                "storage": 20480, "placement": {"cluster": name, "datastore": f"ds{k:03d}b"}})
            datastores[-1]["free"] += 20480
    weights = [6, 8, 6, 4, 2, 1]

    def scale(resource: str, column: int) -> float:
        """Factor on catalogue sizes making demand ``load`` x the usable unreserved amount."""
        usable = sum(sum(h[resource]["unreserved"] for h in c["hosts"]) if "hosts" in c
                     else c[resource]["unreserved"] for c in cluster_list
                     if c["enabled"] and c["health"] != "red")
        mean = sum(w * s[column] for w, s in zip(weights, SIZES)) / sum(weights)
        return max(1e-9, load * usable / (mean * vms))

    cpu_scale, memory_scale = scale("cpu", 0), scale("memory", 1)
    vm_list = []
    for k in range(vms):
        cpu, memory, storage, vcpus = rng.choices(SIZES, weights)[0]
        vm_list.append({
            "name": f"vm{k:05d}", "vapp": f"vapp{k // 10:04d}", "orgVdc": f"org{k // 10 % orgs}",
            "cpu": round(cpu * cpu_scale), "memory": round(memory * memory_scale),
            "storage": storage, "vcpus": vcpus,
            "hardwareVersion": rng.choice([13, 15, 17]),
            "storagePolicy": "gold" if rng.random() < 0.3 else "silver",
            "iops": rng.choice([100, 500, 1000]), "network": rng.choice(["web", "app", "db"])})
    anti = []
    if anti_every:
        members = [v["name"] for v in vm_list][::anti_every]
        anti = [{"name": f"spread{g}", "vms": members[g:g + 3]}
                for g in range(0, len(members) - 2, 3)]
    shape = f"{clusters}x{hosts}h" if hosts else f"{clusters}"
    return {
        "name": f"generated-{vms}x{shape}-s{seed}",
        "description": f"{vms} VMs over {clusters} clusters"
        + (f" of {hosts} hosts" if hosts else "") + f", seed {seed}, load {load}",
        "tunables": {"iopsEnabled": iops},
        "clusters": cluster_list, "datastores": datastores,
        "networkPools": [{"name": "pool-front", "networks": ["web"]},
                         {"name": "pool-back", "networks": ["app", "db"]}],
        "vms": residents + vm_list,
        "rules": {"antiAffinity": anti},
    }


def _hosts(cluster: str, figures: dict, count: int, rng: random.Random) -> list[dict]:
    """``count`` equal hosts whose unreserved share varies around the cluster's (the
    cluster's figures become the sums over its hosts)."""
    out = [{"name": f"{cluster}h{j:02d}", "cpu": {}, "memory": {}} for j in range(count)]
    for key in ("cpu", "memory"):
        capacity = figures[key]["capacity"] // count
        share = figures[key]["unreserved"] / figures[key]["capacity"]
        for host in out:
            host[key] = {"capacity": capacity,
                         "unreserved": round(capacity * min(1.0, share * rng.uniform(0.7, 1.3)))}
    return out
