"""Generated scenarios for benchmarks and studies: objects from a small set of flavours on
heterogeneous hosts, with a skewed initial assignment (the shape of real rebalancing runs)."""

from __future__ import annotations

from typing import Any

import numpy as np

FLAVOURS = [(1, 2), (2, 4), (4, 8), (8, 16), (1, 4), (2, 8), (4, 16), (8, 32),
            (2, 2), (4, 4), (8, 8), (16, 16), (1, 1), (3, 6), (6, 12), (12, 24)]  # (cpu, mem)


def balance_instance(objects: int, containers: int, formula: str = "LINEAR",
                     seed: int = 0, fill: float = 0.6) -> dict[str, Any]:
    """Balance (``formula``) of cpu at position 0 with a HARD cpu Capacity, then
    MinimizeMovement (object count) at position 1."""
    rng = np.random.default_rng(seed)
    flavour = rng.integers(0, len(FLAVOURS), size=objects)
    cpu = np.asarray([FLAVOURS[f][0] for f in flavour], dtype=float)
    mem = np.asarray([FLAVOURS[f][1] for f in flavour], dtype=float)
    big = rng.random(containers) < 0.3
    unit = np.ceil(cpu.sum() / fill / (containers + big.sum()))
    cpu_cap = np.where(big, 2 * unit, unit)
    mem_cap = 2 * cpu_cap * (mem.sum() / cpu.sum())
    # skewed: hosts are filled in a random order, the first ones up to 95%
    assignment: dict[str, list[str]] = {f"host{c}": [] for c in range(containers)}
    load = np.zeros(containers)
    order = rng.permutation(containers)
    for o in rng.permutation(objects):
        for c in order:
            if load[c] + cpu[o] <= 0.95 * cpu_cap[c]:
                break
        else:
            c = int(np.argmin(load / cpu_cap))
        load[c] += cpu[o]
        assignment[f"host{c}"].append(f"task{o}")
    names = [f"task{o}" for o in range(objects)]
    hosts = [f"host{c}" for c in range(containers)]
    return {
        "name": f"balance_{formula.lower()}_{objects}x{containers}",
        "objectName": "task", "containerName": "host",
        "assignment": assignment,
        "objectDimensions": {"cpu": dict(zip(names, cpu.tolist())),
                             "mem": dict(zip(names, mem.tolist()))},
        "containerDimensions": {"cpu": dict(zip(hosts, cpu_cap.tolist())),
                                "mem": dict(zip(hosts, mem_cap.tolist()))},
        "goals": [
            {"spec": {"balanceSpec": {"name": "balance_cpu", "scope": "host",
                                      "dimension": "cpu", "formula": formula}}},
            {"boundary": True},
            {"spec": {"minimizeMovementSpec": {"name": "moves", "scope": "host",
                                               "doNotNormalize": True}}},
        ],
        "constraints": [{"spec": {"capacitySpec": {"name": "cpu_capacity", "scope": "host",
                                                   "dimension": "cpu"}}, "policy": "HARD"}],
    }
