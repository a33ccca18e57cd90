"""Random VCD scenarios of N VMs over M clusters (seeded: the same arguments give the same
scenario, on any machine).

Clusters come in three sizes with 40-95% of CPU and memory unreserved, some burst and
undeployed reservations; about 10% are yellow, 3% red and 3% disabled; a fifth support
hardware versions up to 15 only. Each cluster has two datastores of its own (one ``gold`` +
``silver``, one ``silver``), a tenth of them past the red threshold. VMs come from a small
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
             anti_every: int = 50, iops: bool = False) -> dict[str, Any]:
    """A VCD scenario dict (see :mod:`.inputs` for the format)."""
    if vms < 1 or clusters < 1:
        raise InputError("generate", "needs at least one VM and one cluster", (vms, clusters))
    if load <= 0:
        raise InputError("generate.load", "must be positive", load)
    rng = random.Random(seed)
    cluster_list, datastores = [], []
    for k in range(clusters):
        cpu_cap, mem_cap = rng.choice(CLUSTER_SIZES)
        name = f"c{k:03d}"
        roll = rng.random()
        cluster_list.append({
            "name": name, "enabled": roll >= 0.03,
            "health": "red" if 0.03 <= roll < 0.06 else "yellow" if roll < 0.16 else "green",
            "cpu": {"capacity": cpu_cap, "unreserved": round(cpu_cap * rng.uniform(0.4, 0.95)),
                    "burst": round(cpu_cap * rng.uniform(0, 0.1)),
                    "undeployed": round(cpu_cap * rng.uniform(0, 0.1))},
            "memory": {"capacity": mem_cap,
                       "unreserved": round(mem_cap * rng.uniform(0.4, 0.95)),
                       "burst": round(mem_cap * rng.uniform(0, 0.1)),
                       "undeployed": round(mem_cap * rng.uniform(0, 0.1))},
            "hardwareVersions": [13, 14, 15] if rng.random() < 0.2 else [13, 14, 15, 17, 19],
        })
        for j, policies in enumerate((["gold", "silver"], ["silver"])):
            capacity = rng.choice([4_000_000, 8_000_000])
            datastores.append({
                "name": f"ds{k:03d}{'ab'[j]}", "capacity": capacity,
                "free": round(capacity * rng.uniform(0.3, 0.9)), "policies": policies,
                "iopsCapacity": rng.choice([20000, 50000]), "redThreshold": rng.random() < 0.1,
                "clusters": [name]})
    weights = [6, 8, 6, 4, 2, 1]

    def scale(resource: str, column: int) -> float:
        """Factor on catalogue sizes making demand ``load`` x the usable unreserved amount."""
        usable = sum(c[resource]["unreserved"] for c in cluster_list
                     if c["enabled"] and c["health"] != "red")
        mean = sum(w * s[column] for w, s in zip(weights, SIZES)) / sum(weights)
        return max(1e-9, load * usable / (mean * vms))

    cpu_scale, memory_scale = scale("cpu", 0), scale("memory", 1)
    vm_list = []
    for k in range(vms):
        cpu, memory, storage, vcpus = rng.choices(SIZES, weights)[0]
        vm_list.append({
            "name": f"vm{k:05d}", "vapp": f"vapp{k // 10:04d}",
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
    return {
        "name": f"generated-{vms}x{clusters}-s{seed}",
        "description": f"{vms} VMs over {clusters} clusters, seed {seed}, load {load}",
        "tunables": {"iopsEnabled": iops},
        "clusters": cluster_list, "datastores": datastores,
        "networkPools": [{"name": "pool-front", "networks": ["web"]},
                         {"name": "pool-back", "networks": ["app", "db"]}],
        "vms": vm_list,
        "rules": {"antiAffinity": anti},
    }
