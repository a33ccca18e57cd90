"""Writes ``snapshot.json`` and ``spread.json`` beside this file: small clusters as
``kubectl get nodes,pods,pdb -o json`` prints them (v1 Lists), made by rule so they are
the same every run.

``snapshot.json``: six nodes in two zones (two of them GPU nodes tainted for GPU pods, one
cordoned) and pods that use every field the importer reads but spreads and pod affinity:
requests in several units, init containers and a sidecar, nodeSelector, required node
affinity (In, Gt), tolerations, one-replica-per-node anti-affinity, and a
PodDisruptionBudget. Some pods are bound, some pending.

``spread.json``: six nodes in three zones (one tainted for infrastructure, one without a
zone label) and the rules of topology: DoNotSchedule zone spreads (one with
nodeTaintsPolicy Honor and matchLabelKeys, its zone a already one over at the start; one
with the default policy Ignore, so the tainted zone counts with no pod and holds every
other zone to maxSkew), required self-affinity on the zone, and a ScheduleAnyway spread
over hosts.

    python scenarios/kubernetes/generate.py
"""

from __future__ import annotations

import json
from pathlib import Path

STAMP = "2026-01-01T00:00:{:02d}Z"


def node(name: str, zone: str | None, cpu: str, memory: str, gpus: int = 0,
         gpu_model: str = "", gpu_memory_gb: int = 0, cordoned: bool = False,
         dedicated: str = "") -> dict:
    labels = {"kubernetes.io/hostname": name}
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
    allocatable = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "100Gi"}
    spec: dict = {}
    if gpus:
        labels |= {"accelerator": gpu_model, "gpu-memory-gb": str(gpu_memory_gb)}
        allocatable["nvidia.com/gpu"] = str(gpus)
        spec["taints"] = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    if cordoned:
        spec["unschedulable"] = True
    if dedicated:
        spec["taints"] = [{"key": "dedicated", "value": dedicated, "effect": "NoSchedule"}]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": spec, "status": {"allocatable": allocatable, "capacity": allocatable}}


def pod(index: int, name: str, app: str, cpu: str, memory: str, node_name: str | None = None,
        gpus: int = 0, **spec: object) -> dict:
    requests = {"cpu": cpu, "memory": memory}
    if gpus:
        requests["nvidia.com/gpu"] = str(gpus)
        spec.setdefault("tolerations", [{"key": "nvidia.com/gpu", "operator": "Exists",
                                         "effect": "NoSchedule"}])
    body = {"containers": [{"name": "main", "image": f"{app}:1",
                            "resources": {"requests": requests}}], **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "prod", "labels": {"app": app},
                         "creationTimestamp": STAMP.format(index)},
            "spec": body, "status": {"phase": "Running" if node_name else "Pending"}}


def one_per_node(app: str) -> dict:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": app}},
        "topologyKey": "kubernetes.io/hostname"}]}}


def in_zone(zone: str) -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{
            "key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}}}


def big_gpus() -> dict:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{
            "key": "gpu-memory-gb", "operator": "Gt", "values": ["40"]}]}]}}}


def snapshot() -> dict:
    nodes = [node("cpu-a1", "a", "8", "32Gi"), node("cpu-a2", "a", "7900m", "32Gi"),
             node("cpu-b1", "b", "8", "30Gi"), node("cpu-b2", "b", "8", "32Gi", cordoned=True),
             node("gpu-a1", "a", "32", "128Gi", gpus=4, gpu_model="v100", gpu_memory_gb=32),
             node("gpu-b1", "b", "64", "256Gi", gpus=8, gpu_model="a100", gpu_memory_gb=80)]
    pods = []
    web_nodes = ["cpu-a1", "cpu-a2", None, None]
    for k, where in enumerate(web_nodes):
        pods.append(pod(len(pods), f"web-{k}", "web", "1500m", "2Gi", where,
                        affinity=one_per_node("web")))
    for k, where in enumerate(["cpu-b1", None]):
        pods.append(pod(len(pods), f"db-{k}", "db", "2", "8Gi", where, affinity=in_zone("b")))
    for k, where in enumerate(["cpu-a1", "cpu-a2", "cpu-b1", "cpu-a1", None, None]):
        batch = pod(len(pods), f"batch-{k}", "batch", "500m", "1500M", where)
        batch["spec"]["initContainers"] = [{"name": "fetch", "image": "fetch:1", "resources": {
            "requests": {"cpu": "1", "memory": "100Mi"}}}]
        pods.append(batch)
    cache = pod(len(pods), "cache-0", "cache", "250m", "2e9", "cpu-a2",
                nodeSelector={"topology.kubernetes.io/zone": "a"})
    cache["spec"]["initContainers"] = [{"name": "proxy", "image": "proxy:1",
                                        "restartPolicy": "Always", "resources": {
                                            "requests": {"cpu": "100m", "memory": "64Mi"}}}]
    pods.append(cache)
    # queue order matters here: two 1-GPU pods come before a 4-GPU pod that only the a100
    # node takes; spreading them there leaves it no room
    for k, (gpus, where) in enumerate([(2, "gpu-a1"), (4, "gpu-b1"), (1, None), (1, None)]):
        pods.append(pod(len(pods), f"train-{k}", "train", "4", "16Gi", where, gpus=gpus))
    pods.append(pod(len(pods), "train-big-0", "train-big", "8", "64Gi", None, gpus=4,
                    affinity=big_gpus()))
    budget = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
              "metadata": {"name": "web", "namespace": "prod"},
              "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}}
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
            "items": [*nodes, *pods, budget]}


def zone_spread(app: str, **fields: object) -> dict:
    return {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": app}}, **fields}


def spread_snapshot() -> dict:
    nodes = [node("web-a1", "a", "4", "16Gi"), node("web-a2", "a", "4", "16Gi"),
             node("web-b1", "b", "4", "16Gi"), node("web-b2", "b", "2", "8Gi"),
             node("infra-c1", "c", "8", "32Gi", dedicated="infra"),
             node("edge-1", None, "4", "16Gi")]
    pods = []
    # zone a holds three api replicas and b one: one over at the start; the pending one
    # may only go to b (the tainted zone c is no domain for pods that do not tolerate it)
    for k, where in enumerate(["web-a1", "web-a2", "web-a1", "web-b1", None]):
        api = pod(len(pods), f"api-{k}", "api", "1", "2Gi", where,
                  topologySpreadConstraints=[zone_spread(
                      "api", nodeTaintsPolicy="Honor", matchLabelKeys=["pod-template-hash"])])
        api["metadata"]["labels"]["pod-template-hash"] = "5f7d9c"
        pods.append(api)
    # the default nodeTaintsPolicy Ignore counts zone c, where none of them can go: each
    # zone holds at most one, and one of the three stays pending, as in Kubernetes
    for k in range(3):
        pods.append(pod(len(pods), f"queue-{k}", "queue", "1", "1Gi",
                        topologySpreadConstraints=[zone_spread("queue")]))
    for k, where in enumerate(["web-b2", None]):
        pods.append(pod(len(pods), f"cache-{k}", "cache", "500m", "1Gi", where, affinity={
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": "cache"}},
                "topologyKey": "topology.kubernetes.io/zone"}]}}))
    for k in range(2):
        pods.append(pod(len(pods), f"log-{k}", "log", "100m", "128Mi",
                        tolerations=[{"operator": "Exists"}], topologySpreadConstraints=[{
                            "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                            "whenUnsatisfiable": "ScheduleAnyway",
                            "labelSelector": {"matchLabels": {"app": "log"}}}]))
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
            "items": [*nodes, *pods]}


def text() -> str:
    return json.dumps(snapshot(), indent=1) + "\n"


def spread_text() -> str:
    return json.dumps(spread_snapshot(), indent=1) + "\n"


if __name__ == "__main__":
    Path(__file__).with_name("snapshot.json").write_text(text())
    Path(__file__).with_name("spread.json").write_text(spread_text())
