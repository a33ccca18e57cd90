"""GPU sharing at the physical-GPU level, as data of ordinary specs; and the Alibaba
``openb`` GPU trace read into the Kubernetes scenario shape.

:func:`physical_gpus` rewrites a node-level Kubernetes scenario (as
:func:`cpsat_rebalancer.kubernetes.snapshot_scenario` writes it, where a pod's
``nvidia.com/gpu`` below 1 is a share of one GPU and k >= 1 means k whole GPUs) into an
exact model of physical GPUs (docs/kubernetes.md#physical-gpus):

* every node ``n`` becomes the containers ``n`` (no GPU pod may be there) and
  ``n/gpu<g>``, one per GPU; a scope ``node`` maps them all to ``n`` and carries the
  capacities, rules and movement that were per container;
* a scope ``slot`` maps ``n/gpu<g>`` to ``g``; one dimension ``gpu <j>`` per GPU index,
  *dynamic* on ``slot``: a share pod in slot ``g`` weighs its milli-GPUs in ``gpu <g>``; a
  pod of k whole GPUs in slot ``g`` weighs 1000 in each of ``gpu <g>`` .. ``gpu <g+k-1>``;
* a capacitySpec per ``gpu <j>`` on ``node``: at most 1000 on each GPU the node has, 0
  beyond. So a share takes that share of one GPU and k whole GPUs take k GPUs of one node
  wholly free of others. GPUs of a node are alike, so giving whole GPUs consecutive
  indices loses no placement.

Which GPU a running pod holds is not in a snapshot: bound pods start on GPUs first-fit
(whole GPUs first), and may change GPU within their node without counting as moved.
"""

from __future__ import annotations

import copy
import csv
from fractions import Fraction
from pathlib import Path
from typing import Any

from .errors import InputError
from .kubernetes import PODS, RUNNING, UNPLACED

GPU = "nvidia.com/gpu"
MILLI = 1000
NODE_SCOPE = "node"
SLOT_SCOPE = "slot"
GPU_PODS = "gpu pods"  # dimension: 1 for pods asking GPUs


def gpu_request(value: float, path: str) -> tuple[int, int]:
    """(count, milli-GPUs per GPU) of an ``nvidia.com/gpu`` value."""
    if value <= 0:
        return 0, 0
    if value < 1:
        return 1, round(Fraction(str(value)) * MILLI)
    if not float(value).is_integer():
        raise InputError(path, "a GPU request above 1 must be whole", value)
    return int(value), MILLI


def slot(node: str, gpu: int) -> str:
    return f"{node}/gpu{gpu}"


def physical_gpus(scenario: dict[str, Any]) -> dict[str, Any]:
    """The physical-GPU model of a node-level Kubernetes scenario (module docstring)."""
    data = copy.deepcopy(scenario)
    gpu_sizes = data["objectDimensions"].pop(GPU, {})
    gpu_counts = data["containerDimensions"].pop(GPU, {})
    nodes = [c for c in data["assignment"] if c != UNPLACED]
    count = {n: int(gpu_counts.get(n, 0)) for n in nodes}
    request = {p: gpu_request(v, f"objectDimensions.{GPU}.{p}") for p, v in gpu_sizes.items()}
    most = max(count.values(), default=0)
    # whole GPUs starting at the last slot reach this far: the GPU indices to bound
    width = most + max((k for k, milli in request.values() if milli == MILLI), default=1) - 1
    containers = {n: [n] + [slot(n, g) for g in range(count[n])] for n in nodes}
    node_of = {c: n for n, cs in containers.items() for c in cs}

    assignment: dict[str, list[str]] = {UNPLACED: list(data["assignment"][UNPLACED])}
    for n in nodes:
        assignment.update({c: [] for c in containers[n]})
        for pod, g in _first_fit(data["assignment"][n], request, count[n]).items():
            assignment[n if g is None else slot(n, g)].append(pod)
    data["assignment"] = assignment
    data["containerName"] = "place"  # a node or one of its GPUs; "node" is now a scope

    dynamic: dict[str, dict] = {}
    for j in range(width):
        values: dict[str, dict[str, int]] = {}
        for g in range(min(j + 1, most)):
            for pod, (k, milli) in request.items():
                if (k == 1 and milli < MILLI and g == j) or (milli == MILLI and g <= j < g + k):
                    values.setdefault(str(g), {})[pod] = milli
        dynamic[f"gpu {j}"] = {"scope": SLOT_SCOPE, "values": values}
    if dynamic:
        data["dynamicObjectDimensions"] = dynamic
    data["containerDimensions"] = {d: {c: v.get(node_of.get(c, c), 0) if c != UNPLACED else 0
                                       for c in assignment}
                                   for d, v in data["containerDimensions"].items()}
    scopes = {NODE_SCOPE: {c: n for c, n in node_of.items()},
              SLOT_SCOPE: {slot(n, g): str(g) for n in nodes for g in range(count[n])}}
    for name, mapping in data.get("scopes", {}).items():
        scopes[name] = {c: mapping[n] for c, n in node_of.items() if n in mapping}
    data["scopes"] = scopes

    constraints = []
    for entry in data["constraints"]:
        arm, body = next(iter(entry["spec"].items()))
        if arm == "capacitySpec" and body["dimension"] == GPU:
            continue
        if arm in ("capacitySpec", "minimizeMovementSpec", "avoidAssignmentsSpec"):
            body["scope"] = NODE_SCOPE
        constraints.append(entry)
    # a GPU pod holds GPUs: never the node's GPU-less container (a pod without GPUs may sit
    # in a GPU slot, where it weighs nothing on the GPUs)
    data["objectDimensions"][GPU_PODS] = {p: 1 for p, (k, _) in request.items() if k}
    constraints.append({"spec": {"capacitySpec": {
        "name": "GPU pods on GPUs", "dimension": GPU_PODS,
        "limit": {"type": "ABSOLUTE", "isDefaultLimitUnbounded": True,
                  "scopeItemLimits": dict.fromkeys(nodes, 0)}}}, "policy": "HARD"})
    for j in range(width):
        constraints.append({"spec": {"capacitySpec": {
            "name": f"gpu {j} milli", "scope": NODE_SCOPE, "dimension": f"gpu {j}",
            "limit": {"type": "ABSOLUTE", "isDefaultLimitUnbounded": True, "scopeItemLimits": {
                n: MILLI if j < count[n] else 0 for n in nodes}}}},
            "policy": "DEFAULT", "tuplePosIfBroken": 2})
    data["constraints"] = constraints
    for goal in data["goals"]:
        body = goal.get("spec", {}).get("minimizeMovementSpec")
        if body is not None:
            body["scope"] = NODE_SCOPE
    data["description"] = data.get("description", "") + "; GPUs modelled one by one " \
        "(containers node/gpu<g>, dimensions 'gpu <j>')"
    return data


def _first_fit(pods: list[str], request: dict[str, tuple[int, int]], gpus: int
               ) -> dict[str, int | None]:
    """A GPU slot per bound pod (None: no GPU): whole GPUs first, on consecutive free
    GPUs, then shares first-fit; a pod that fits nowhere takes slot 0 (the start then
    breaks a GPU's capacity, which the model lets stay, never worse)."""
    left = [MILLI] * gpus
    where: dict[str, int | None] = {}
    order = sorted(pods, key=lambda p: (-request.get(p, (0, 0))[1] * request.get(p, (0, 0))[0]))
    for pod in order:
        k, milli = request.get(pod, (0, 0))
        if k == 0:
            where[pod] = None
            continue
        if milli == MILLI:
            start = next((g for g in range(gpus - k + 1)
                          if all(left[h] == MILLI for h in range(g, g + k))), 0)
            for h in range(start, min(start + k, gpus)):
                left[h] -= MILLI
        else:
            start = next((g for g in range(gpus) if left[g] >= milli), 0)
            if gpus:
                left[start] -= milli
        where[pod] = start
    return {pod: where[pod] for pod in pods}


# --------------------------------------------------------------------------- openb trace


NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec",
               "creation_time")


def openb_scenario(nodes_csv: str | Path, pods_csv: str | Path,
                   limit: int | None = None) -> dict[str, Any]:
    """The Alibaba ``openb`` GPU trace (``hkust-adsl/kubernetes-scheduler-simulator``'s
    data: nodes with cpu_milli, memory_mib, gpu, model; pods with cpu_milli, memory_mib,
    num_gpu, gpu_milli, gpu_spec, creation_time) as a node-level Kubernetes scenario: every
    pod pending, in creation order (the first ``limit`` of them), GPU model constraints
    (``gpu_spec``, models separated by ``|``) as forbidden nodes."""
    node_rows = read_rows(nodes_csv, NODE_COLUMNS)
    pod_rows = read_rows(pods_csv, POD_COLUMNS)
    pod_rows.sort(key=lambda r: int(r["creation_time"]))
    if limit is not None:
        pod_rows = pod_rows[:limit]
    return trace_scenario(
        node_rows, pod_rows, f"openb {Path(pods_csv).stem}",
        f"Alibaba openb GPU trace: {len(node_rows)} nodes from {nodes_csv}, the first "
        f"{len(pod_rows)} pods of {pods_csv} by creation time, all pending; cpu in "
        "millicores, memory in MiB")


def trace_scenario(node_rows: list[dict[str, str]], pod_rows: list[dict[str, str]],
                   name: str, description: str) -> dict[str, Any]:
    """Rows of the openb trace's node and pod files as a node-level Kubernetes scenario,
    the pods pending in the order given (:func:`openb_scenario`)."""
    names = [r["sn"] for r in node_rows]
    pods = [r["name"] for r in pod_rows]
    gpu = {}
    avoided = []
    banned_by_spec: dict[str, list[str]] = {}
    for r in pod_rows:
        k, milli = int(r["num_gpu"]), int(r["gpu_milli"])
        if k:
            gpu[r["name"]] = k if milli >= MILLI else milli / MILLI
        if r["gpu_spec"]:
            if r["gpu_spec"] not in banned_by_spec:
                models = set(r["gpu_spec"].split("|"))
                banned_by_spec[r["gpu_spec"]] = [n["sn"] for n in node_rows
                                                 if n["model"] not in models]
            if banned_by_spec[r["gpu_spec"]]:
                avoided.append({"object": r["name"], "scopeItems": banned_by_spec[r["gpu_spec"]]})
    dims = {"cpu": {r["name"]: int(r["cpu_milli"]) for r in pod_rows},
            "memory": {r["name"]: int(r["memory_mib"]) for r in pod_rows},
            PODS: dict.fromkeys(pods, 1), GPU: gpu}
    capacity = {"cpu": {r["sn"]: int(r["cpu_milli"]) for r in node_rows},
                "memory": {r["sn"]: int(r["memory_mib"]) for r in node_rows},
                PODS: {n: len(pods) for n in names},
                GPU: {r["sn"]: int(r["gpu"]) for r in node_rows}}
    constraints = [{"spec": {"capacitySpec": {
        "name": f"{d} allocatable", "dimension": d,
        "limit": {"type": "ABSOLUTE", "isDefaultLimitUnbounded": True,
                  "scopeItemLimits": capacity[d]}}}, "policy": "HARD"} for d in capacity]
    if avoided:
        constraints.append({"spec": {"avoidAssignmentsSpec": {
            "name": "GPU model", "assignments": avoided}}, "policy": "HARD"})
    return {
        "name": name,
        "description": description,
        "objectName": "pod", "containerName": "node",
        "assignment": {UNPLACED: pods, **{n: [] for n in names}},
        "objectDimensions": {**dims, RUNNING: {}},
        "containerDimensions": {d: {**v, UNPLACED: 0} for d, v in capacity.items()},
        "goals": [{"spec": {"toFreeSpec": {"name": "unplaced pods", "containers": [UNPLACED],
                                           "dimension": PODS}}}],
        "constraints": constraints,
    }


def read_rows(path: str | Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """The rows of a trace CSV file, every column of ``columns`` present and integer
    where the trace says so; an error names the file, row and column otherwise."""
    try:
        with open(path, newline="") as handle:
            rows = list(csv.DictReader(handle))
    except OSError as error:
        raise InputError(str(path), f"cannot read: {error.strerror or error}") from None
    if rows and not set(columns) <= set(rows[0]):
        raise InputError(str(path), "missing columns: " + ", ".join(
            sorted(set(columns) - set(rows[0]))))
    for k, row in enumerate(rows):
        for column in columns:
            value = row.get(column) or ""
            if column not in ("sn", "name", "model", "gpu_spec") and \
                    not value.lstrip("-").isdigit():
                raise InputError(f"{path}:{k + 2}.{column}", "expected an integer", value)
    return rows

