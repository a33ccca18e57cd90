"""The GPU capacity-planning scenario built from Alibaba's 2023 GPU cluster trace
(``../shared/data/traces/alibaba_openb_gpu2023``, read in place, never copied).

Pods are objects, nodes are containers. Dimensions: ``cpu`` (milli-cores), ``memory`` (MiB)
and ``gpu`` (milli-GPUs: ``num_gpu * 1000``, or ``gpu_milli`` for a pod sharing one GPU), each
a HARD capacity. GPU-type rules (``gpu_spec``, "T4" or "V100M16|V100M32") become one dimension
per GPU model M, ``not_M``: 1 for a pod whose rule excludes M, and a capacity of 0 on nodes
of model M (large elsewhere), so a HARD capacity on it forbids exactly those placements while
identical pods still form one class. GPU pods without a rule go to any node with GPUs (CPU
nodes have no gpu capacity); CPU pods go anywhere.

GPU sharing is modelled per node: the milli-GPUs on a node must fit its total. The per-GPU
packing of shared GPUs inside a node (which GPU a 0.4-GPU pod lands on) is not modelled, so
node counts here are what the node-level resources require, a lower bound on what a
GPU-level scheduler needs.

Every pod starts on a pseudo-node ``unplaced`` (unlimited capacity, in no GPU-model scope);
the goal at position 0, a toFreeSpec on it, counts the pods left there. A variant is feasible
when that count is 0; a proven bound above 0 proves that no placement exists.

The committed study uses the full pod set (``step=1``): the 5,193 pods in phase Running of
``openb_pod_list_gpuspec33`` (the trace with GPU-type rules on about a third of the GPU pods)
on all 1,523 nodes. ``step`` > 1 is a reproducible sample for quick runs (the notebook test):
every ``step``-th Running pod by name, and per node configuration (model, cpu, memory, gpus)
``round(count / step)`` nodes, at least one.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]  # the project root
TRACE = ROOT.parent / "shared" / "data" / "traces" / "alibaba_openb_gpu2023" / "csv"
CPU_ONLY = "CPU"


def gpu_cluster(step: int = 1, pods: str = "openb_pod_list_gpuspec33.csv",
                trace: str | None = None) -> dict[str, Any]:
    """The scenario (pure function of the trace files and ``step``; 1: every pod and node)."""
    folder = Path(trace) if trace else TRACE
    pod_table = pd.read_csv(folder / pods)
    node_table = pd.read_csv(folder / "openb_node_list_all_node.csv")
    pod_table = pod_table[pod_table["pod_phase"] == "Running"].sort_values("name")
    pod_table = pod_table.iloc[::step]
    node_table["model"] = node_table["model"].fillna(CPU_ONLY)
    nodes = []
    configuration = ["model", "cpu_milli", "memory_mib", "gpu"]
    for _, group in node_table.sort_values("sn").groupby(configuration, sort=True):
        nodes.append(group.iloc[:max(1, round(len(group) / step))])
    node_table = pd.concat(nodes).sort_values("sn")
    models = sorted(m for m in node_table["model"].unique() if m != CPU_ONLY)

    def allowed(spec: Any) -> set[str] | None:
        return None if not isinstance(spec, str) or not spec else set(spec.split("|"))

    cpu, memory, gpu = {}, {}, {}
    rules: dict[str, dict[str, int]] = {f"not_{m}": {} for m in models}
    for pod in pod_table.itertuples():
        cpu[pod.name] = int(pod.cpu_milli)
        memory[pod.name] = int(pod.memory_mib)
        gpu[pod.name] = int(pod.gpu_milli) if pod.num_gpu == 1 else int(pod.num_gpu) * 1000
        names = allowed(pod.gpu_spec)
        if names is not None:
            for m in models:
                if m not in names:
                    rules[f"not_{m}"][pod.name] = 1
    pending = "unplaced"
    total = {"cpu": sum(cpu.values()), "memory": sum(memory.values()), "gpu": sum(gpu.values())}
    capacities: dict[str, dict[str, float]] = {d: {pending: total[d]} for d in total}
    every = len(cpu)
    for dim in rules:
        capacities[dim] = {pending: every}
    scope: dict[str, str] = {}
    for node in node_table.itertuples():
        capacities["cpu"][node.sn] = int(node.cpu_milli)
        capacities["memory"][node.sn] = int(node.memory_mib)
        capacities["gpu"][node.sn] = int(node.gpu) * 1000
        for m in models:
            capacities[f"not_{m}"][node.sn] = 0 if node.model == m else every
        scope[node.sn] = node.model
    dims = {"cpu": cpu, "memory": memory, "gpu": gpu, **rules}
    constraints = [{"spec": {"capacitySpec": {"name": f"{d}_capacity", "dimension": d}},
                    "policy": "HARD"} for d in dims]
    return {
        "name": f"alibaba_gpu2023_step{step}",
        "objectName": "pod", "containerName": "node",
        "assignment": {pending: list(cpu), **{n: [] for n in node_table["sn"]}},
        "objectDimensions": dims,
        "containerDimensions": capacities,
        "scopes": {"gpu_model": scope},
        "goals": [{"spec": {"toFreeSpec": {"name": "unplaced", "containers": [pending]}}}],
        "constraints": constraints,
    }


def summary(data: dict[str, Any]) -> pd.DataFrame:
    """Nodes and capacity per GPU model, and the demand of the pods that may only use it."""
    scope = data["scopes"]["gpu_model"]
    rows = []
    for model in sorted(set(scope.values())):
        members = [n for n, m in scope.items() if m == model]
        rows.append({"model": model, "nodes": len(members),
                     "gpus": sum(data["containerDimensions"]["gpu"][n] for n in members) / 1000,
                     "cpu_cores": sum(data["containerDimensions"]["cpu"][n]
                                      for n in members) / 1000})
    frame = pd.DataFrame(rows)
    frame.attrs["pods"] = len(data["objectDimensions"]["cpu"])
    frame.attrs["gpu_demand"] = math.fsum(data["objectDimensions"]["gpu"].values()) / 1000
    return frame
