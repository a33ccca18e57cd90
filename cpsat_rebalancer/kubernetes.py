"""A Kubernetes cluster snapshot (``kubectl get nodes,pods[,pdb] -o json``) as an ordinary
scenario dict (docs/kubernetes.md has the mapping, field by field).

Objects are pods (``namespace/name``), containers the nodes plus ``(unplaced)``, where
pending pods start. Every rule is an existing spec, hard where it holds at the start: node
allocatable as capacitySpec limits, the scheduling filters (nodeSelector, required node
affinity, taints, unschedulable nodes) as one avoidAssignmentsSpec, required pod anti-affinity as a
groupCountSpec per term, a PodDisruptionBudget as a minimizeMovementSpec constraint with an
allowance, a DoNotSchedule topology spread as this project's topologySpreadSpec, required
pod affinity as a colocateGroupsSpec (all in one domain). Goals: the fewest pods left
unplaced, then the fewest running pods moved, then (position 3) the ScheduleAnyway spreads.
Rules expressed exactly only when the pods a term selects are exactly those carrying it
(asymmetric anti-affinity, affinity and spreads) are refused with an error naming them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any, NamedTuple

from .errors import InputError
from .kubernetes_selectors import get_field as _get
from .kubernetes_selectors import label_selector_matches, node_term_matches, tolerates

UNPLACED = "(unplaced)"
RUNNING = "running"  # dimension: 1 for pods bound at the start (what a move disrupts)
PODS = "pods"  # dimension: 1 per pod, capacity the node's allocatable pods
GPU = "nvidia.com/gpu"
# GPU sharing as the ATC'23 simulator annotates pods: milli-GPU per GPU, and GPU count
GPU_MILLI_ANNOTATION = "alibabacloud.com/gpu-milli"
GPU_COUNT_ANNOTATION = "alibabacloud.com/gpu-count"
# a rule running pods may break at the start (a node over its allocatable, two replicas on
# one node): Kubernetes lets them run, so it is hard where it holds, never made worse where
# broken, and repairing it is preferred only after the placement and movement goals
AS_FOUND = {"policy": "DEFAULT", "tuplePosIfBroken": 2}
PREFERENCES = 3  # the tuple position of the ScheduleAnyway spreads, after every repair

_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_QUANTITY = re.compile(r"([+-]?)(\d+\.?\d*|\.\d+)"
                       r"(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)")


def parse_quantity(value: Any, path: str) -> Fraction:
    """A Kubernetes resource quantity, exactly: ``250m``, ``1.5Gi``, ``1500M``, ``2e3``.

    The grammar is apimachinery's ``resource.Quantity`` (a signed decimal number, then a
    binary suffix Ki..Ei, a decimal suffix n..E, or an exponent ``e``/``E`` with a signed
    integer); anything else, such as ``1.5GB``, is an error naming ``path``."""
    if isinstance(value, bool):
        raise InputError(path, "expected a quantity string such as '250m' or '1.5Gi'", value)
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float) and math.isfinite(value):
        return Fraction(str(value))
    if not isinstance(value, str):
        raise InputError(path, "expected a quantity string such as '250m' or '1.5Gi'", value)
    match = _QUANTITY.fullmatch(value.strip())
    if match is None:
        raise InputError(path, "not a Kubernetes quantity (a number, then one of the suffixes "
                         "n u m k M G T P E Ki Mi Gi Ti Pi Ei, or an exponent such as e3)",
                         value)
    sign, number, exponent, suffix = match.groups()
    amount = Fraction(number)
    if exponent:
        amount *= Fraction(10) ** int(exponent[1:])
    else:
        amount *= _BINARY.get(suffix or "", _DECIMAL.get(suffix or "", 1))
    return -amount if sign == "-" else amount


def scheduler_units(resource: str, amount: Fraction) -> int:
    """The integer the scheduler counts: millicores for ``cpu`` (``Quantity.MilliValue``),
    whole units for every other resource (``Quantity.Value``), both rounded up."""
    scaled = amount * 1000 if resource == "cpu" else amount
    return math.ceil(scaled)


# --------------------------------------------------------------------------- reading


def _labels(item: dict, path: str) -> dict[str, str]:
    meta = _get(item, "metadata", path, dict, {})
    return {str(k): str(v) for k, v in _get(meta, "labels", f"{path}.metadata", dict, {}).items()}


def _resources(mapping: dict, path: str) -> dict[str, int]:
    return {name: scheduler_units(name, parse_quantity(value, f"{path}.{name}"))
            for name, value in mapping.items()}


def read_snapshot(path: str | Path) -> dict:
    """The JSON of a snapshot file (a ``v1 List`` of nodes, pods and PDBs)."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as error:
        raise InputError(str(path), f"cannot read: {error.strerror or error}") from None
    except json.JSONDecodeError as error:
        raise InputError(str(path), f"not JSON ({error})") from None
    return data


# --------------------------------------------------------------------------- the model


class _Node:
    def __init__(self, item: dict, path: str):
        meta = _get(item, "metadata", path, dict, {})
        self.name = _get(meta, "name", f"{path}.metadata", str)
        if not self.name:
            raise InputError(f"{path}.metadata.name", "every node needs a name")
        self.path = path
        self.labels = _labels(item, path)
        spec = _get(item, "spec", path, dict, {})
        self.taints = [t for t in _get(spec, "taints", f"{path}.spec", list, [])
                       if t.get("effect") in ("NoSchedule", "NoExecute")]
        if _get(spec, "unschedulable", f"{path}.spec", bool, False):
            self.taints.append({"key": "node.kubernetes.io/unschedulable",
                                "effect": "NoSchedule"})
        status = _get(item, "status", path, dict, {})
        allocatable = _get(status, "allocatable", f"{path}.status", dict)
        if allocatable is None:
            raise InputError(f"{path}.status.allocatable", f"node '{self.name}' has no "
                             "allocatable resources")
        self.allocatable = _resources(allocatable, f"{path}.status.allocatable")


class _Pod:
    def __init__(self, item: dict, path: str, best_effort_as_zero: bool):
        meta = _get(item, "metadata", path, dict, {})
        name = _get(meta, "name", f"{path}.metadata", str)
        if not name:
            raise InputError(f"{path}.metadata.name", "every pod needs a name")
        self.namespace = _get(meta, "namespace", f"{path}.metadata", str, "default")
        self.name = f"{self.namespace}/{name}"
        self.path = path
        self.labels = _labels(item, path)
        self.spec = _get(item, "spec", path, dict, {})
        status = _get(item, "status", path, dict, {})
        self.phase = _get(status, "phase", f"{path}.status", str, "Pending")
        self.node = _get(self.spec, "nodeName", f"{path}.spec", str, "") or None
        self.priority = _get(self.spec, "priority", f"{path}.spec", int, 0)
        self.created = _get(meta, "creationTimestamp", f"{path}.metadata", str, "")
        self.requests = self._effective_requests(best_effort_as_zero)
        self._shared_gpu(meta)
        self.spreads = _spreads(self)
        affinity = _get(_get(self.spec, "affinity", f"{path}.spec", dict, {}), "podAffinity",
                        f"{path}.spec.affinity", dict, {})
        self.affinity_terms = _get(affinity, "requiredDuringSchedulingIgnoredDuringExecution",
                                   f"{path}.spec.affinity.podAffinity", list, [])
        # a node without one of these labels is no candidate (PodTopologySpread's and
        # InterPodAffinity's filters)
        self.required_keys = sorted({s.key for s in self.spreads if s.hard} | {
            t.get("topologyKey") for t in self.affinity_terms
            if isinstance(t, dict) and isinstance(t.get("topologyKey"), str)})

    def _shared_gpu(self, meta: dict) -> None:
        """A share of a GPU, from the simulator's annotations: ``nvidia.com/gpu`` becomes
        milli/1000 for a share of one GPU, the count for whole GPUs."""
        annotations = _get(meta, "annotations", f"{self.path}.metadata", dict, {})
        if GPU_MILLI_ANNOTATION not in annotations:
            return
        at = f"{self.path}.metadata.annotations"
        try:
            milli = int(annotations[GPU_MILLI_ANNOTATION])
            count = int(annotations.get(GPU_COUNT_ANNOTATION, "1"))
        except (TypeError, ValueError):
            raise InputError(at, f"pod '{self.name}': {GPU_MILLI_ANNOTATION} and "
                             f"{GPU_COUNT_ANNOTATION} must be integers") from None
        if not 0 < milli <= 1000 or count < 1 or (milli < 1000 and count != 1):
            raise InputError(at, f"pod '{self.name}': a share (milli below 1000) is of one GPU; "
                             "whole GPUs have milli 1000", (milli, count))
        self.requests[GPU] = Fraction(milli, 1000) if milli < 1000 else count

    def _container_requests(self, container: dict, at: str, best_effort_as_zero: bool
                            ) -> dict[str, int]:
        resources = _get(container, "resources", at, dict, {})
        requests = _resources(_get(resources, "requests", f"{at}.resources", dict, {}),
                              f"{at}.resources.requests")
        for needed in ("cpu", "memory"):
            if needed not in requests and not best_effort_as_zero:
                raise InputError(f"{at}.resources.requests.{needed}", f"pod '{self.name}' "
                                 f"requests no {needed} (Kubernetes counts it as 0 to fit; "
                                 "--best-effort-as-zero does the same)")
        return requests

    def _effective_requests(self, best_effort_as_zero: bool) -> dict[str, int]:
        """Kubernetes' effective requests (``resourcehelper.PodRequests``): the containers'
        sum plus restartable init containers (sidecars), or the largest init container
        (with the sidecars started before it) when larger, plus ``spec.overhead``."""
        at = f"{self.path}.spec"
        containers = _get(self.spec, "containers", at, list, [])
        if not containers:
            raise InputError(f"{at}.containers", f"pod '{self.name}' has no containers")
        total: dict[str, int] = {}
        for k, container in enumerate(containers):
            for res, value in self._container_requests(
                    container, f"{at}.containers[{k}]", best_effort_as_zero).items():
                total[res] = total.get(res, 0) + value
        sidecars: dict[str, int] = {}
        init_peak: dict[str, int] = {}
        for k, container in enumerate(_get(self.spec, "initContainers", at, list, [])):
            requests = self._container_requests(container, f"{at}.initContainers[{k}]",
                                                best_effort_as_zero)
            if container.get("restartPolicy") == "Always":
                for res, value in requests.items():
                    sidecars[res] = sidecars.get(res, 0) + value
                running = dict(sidecars)
            else:
                running = {res: requests.get(res, 0) + sidecars.get(res, 0)
                           for res in sorted(set(requests) | set(sidecars))}
            for res, value in running.items():
                init_peak[res] = max(init_peak.get(res, 0), value)
        for res, value in sidecars.items():
            total[res] = total.get(res, 0) + value
        for res, value in init_peak.items():
            total[res] = max(total.get(res, 0), value)
        overhead = _resources(_get(self.spec, "overhead", at, dict, {}), f"{at}.overhead")
        for res, value in overhead.items():
            total[res] = total.get(res, 0) + value
        return {res: value for res, value in total.items() if value}

    def node_filter(self, node: _Node) -> str | None:
        """Why kube-scheduler's filters (NodeUnschedulable, TaintToleration, NodeAffinity,
        the topology keys of PodTopologySpread and InterPodAffinity) reject ``node`` for
        this pod, or None."""
        missing = [key for key in self.required_keys if key not in node.labels]
        if missing:
            return f"no label {missing[0]}"
        return self.affinity_reason(node) or self.taint_reason(node)

    def affinity_reason(self, node: _Node) -> str | None:
        """Why nodeSelector or required node affinity rejects ``node``, or None."""
        at = f"{self.path}.spec"
        selector = _get(self.spec, "nodeSelector", at, dict, {})
        if any(node.labels.get(k) != v for k, v in selector.items()):
            return "nodeSelector"
        affinity = _get(_get(self.spec, "affinity", at, dict, {}), "nodeAffinity",
                        f"{at}.affinity", dict, {})
        required = _get(affinity, "requiredDuringSchedulingIgnoredDuringExecution",
                        f"{at}.affinity.nodeAffinity", dict)
        if required is not None:
            where = f"{at}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            terms = _get(required, "nodeSelectorTerms", where, list, [])
            if not any(node_term_matches(t, node.name, node.labels,
                                         f"{where}.nodeSelectorTerms[{k}]")
                       for k, t in enumerate(terms)):
                return "node affinity"
        return None

    def taint_reason(self, node: _Node) -> str | None:
        """The NoSchedule or NoExecute taint of ``node`` this pod does not tolerate, or None."""
        tolerations = _get(self.spec, "tolerations", f"{self.path}.spec", list, [])
        for taint in node.taints:
            if not tolerates(tolerations, taint, f"{self.path}.spec.tolerations"):
                return f"taint {taint.get('key')}:{taint.get('effect')}"
        return None


def _items(data: Any, path: str) -> list[tuple[str, dict]]:
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise InputError(path, "expected a v1 List ({\"kind\": \"List\", \"items\": [...]}, "
                         "as `kubectl get nodes,pods -o json` writes)")
    return [(f"items[{k}]", item) for k, item in enumerate(data["items"])]


def kubernetes_scenario(path: str | Path, *, best_effort_as_zero: bool = False
                        ) -> dict[str, Any]:
    """The scenario of a snapshot file (see the module docstring and docs/kubernetes.md)."""
    return snapshot_scenario(read_snapshot(path), str(path),
                             best_effort_as_zero=best_effort_as_zero)


def snapshot_scenario(data: Any, source: str = "snapshot", *,
                      best_effort_as_zero: bool = False) -> dict[str, Any]:
    """The scenario of a parsed snapshot (a v1 List of Node, Pod and PodDisruptionBudget)."""
    nodes: list[_Node] = []
    pods: list[_Pod] = []
    budgets: list[tuple[str, dict]] = []
    for at, item in _items(data, source):
        kind = _get(item, "kind", at, str)
        if kind == "Node":
            nodes.append(_Node(item, at))
        elif kind == "Pod":
            pod = _Pod(item, at, best_effort_as_zero)
            if pod.phase not in ("Succeeded", "Failed"):  # finished pods hold nothing
                pods.append(pod)
        elif kind == "PodDisruptionBudget":
            budgets.append((at, item))
        else:
            raise InputError(f"{at}.kind", "expected Node, Pod or PodDisruptionBudget", kind)
    if not nodes:
        raise InputError(source, "the snapshot holds no Node")
    node_by_name: dict[str, _Node] = {}
    for node in nodes:
        if node.name in node_by_name or node.name == UNPLACED:
            raise InputError(f"{node.path}.metadata.name", "node name given twice", node.name)
        node_by_name[node.name] = node
    seen: set[str] = set()
    for pod in pods:
        if pod.name in seen:
            raise InputError(f"{pod.path}.metadata.name", "pod given twice", pod.name)
        seen.add(pod.name)
        if pod.node is not None and pod.node not in node_by_name:
            raise InputError(f"{pod.path}.spec.nodeName", f"pod '{pod.name}' is bound to a "
                             "node the snapshot does not hold", pod.node)
    pending = sorted((p for p in pods if p.node is None), key=lambda p: (-p.priority, p.created))
    assignment: dict[str, list[str]] = {UNPLACED: [p.name for p in pending]}
    for node in nodes:
        assignment[node.name] = [p.name for p in pods if p.node == node.name]
    resources = sorted({r for p in pods for r in p.requests if r != PODS} | {"cpu", "memory"})
    object_dims: dict[str, dict[str, float]] = {
        res: {p.name: _number(p.requests[res]) for p in pods if p.requests.get(res)}
        for res in resources}
    object_dims[PODS] = {p.name: 1 for p in pods}
    object_dims[RUNNING] = {p.name: 1 for p in pods if p.node is not None}
    container_dims = {res: {**{n.name: n.allocatable.get(res, 0) for n in nodes}, UNPLACED: 0}
                      for res in [*resources, PODS]}
    constraints: list[dict] = [{"spec": {"capacitySpec": {
        "name": f"{res} allocatable", "dimension": res,
        "limit": {"type": "ABSOLUTE", "isDefaultLimitUnbounded": True,
                  "scopeItemLimits": {n.name: n.allocatable.get(res, 0) for n in nodes}}}},
        **AS_FOUND} for res in [*resources, PODS]]
    avoided = []
    for pod in pods:
        # IgnoredDuringExecution: a bound pod may stay on its node whatever changed since
        # (a NoExecute taint it does not tolerate evicts it, so that node stays forbidden)
        forbidden = [n.name for n in nodes if (reason := pod.node_filter(n)) is not None
                     and (n.name != pod.node or "NoExecute" in reason)]
        if forbidden:
            avoided.append({"object": pod.name, "scopeItems": forbidden})
    if avoided:
        constraints.append({"spec": {"avoidAssignmentsSpec": {
            "name": "node filters", "assignments": avoided}}, "policy": "HARD"})
    scopes: dict[str, dict[str, str]] = {}
    partitions: dict[str, dict[str, list[str]]] = {}
    for k, (key, members) in enumerate(_term_groups(pods, "podAntiAffinity")):
        scope = _scope(scopes, key, nodes, nodes)
        partitions[f"anti-affinity {k}"] = {"members": members}
        constraints.append({"spec": {"groupCountSpec": {
            "name": f"anti-affinity {k} over {key}", "scope": scope,
            "partitionName": f"anti-affinity {k}", "bound": "MAX",
            "limit": {"type": "ABSOLUTE", "globalLimit": 1}}}, **AS_FOUND})
    for k, (key, members) in enumerate(_term_groups(pods, "podAffinity")):
        partitions[f"affinity {k}"] = {"members": members}
        constraints.append({"spec": {"colocateGroupsSpec": {
            "name": f"affinity {k} over {key}", "scope": _scope(scopes, key, nodes, nodes),
            "partitionName": f"affinity {k}"}}, **AS_FOUND})
    preferences = []
    for k, (spread, members, eligible) in enumerate(_spread_groups(pods, nodes)):
        partitions[f"spread {k}"] = {"members": members}
        body = {"name": f"spread {k} over {spread.key}", "partition": f"spread {k}",
                "scope": _scope(scopes, spread.key, eligible, nodes),
                "maxSkew": spread.max_skew}
        if spread.min_domains > 1:
            body["minDomains"] = spread.min_domains
        if spread.hard:
            constraints.append({"spec": {"topologySpreadSpec": body}, **AS_FOUND})
        else:
            preferences.append({"spec": {"topologySpreadSpec": body},
                                "tuplePos": PREFERENCES})
    for at, item in budgets:
        name, allowed, covered = _disruption_budget(item, at, pods)
        if not covered:
            continue
        dimension = f"pdb {name}"
        object_dims[dimension] = {p: 1 for p in covered}
        constraints.append({"spec": {"minimizeMovementSpec": {
            "name": f"pdb {name}", "dimension": dimension, "doNotNormalize": True,
            "allowance": allowed}}, "policy": "HARD"})
    scenario: dict[str, Any] = {
        "name": f"kubernetes {Path(source).name}",
        "description": f"Kubernetes snapshot imported from {source}: {len(nodes)} nodes, "
                       f"{len(pods)} pods ({len(pending)} pending, in '{UNPLACED}'); cpu in "
                       "millicores, other resources in units (memory in bytes)",
        "objectName": "pod", "containerName": "node",
        "assignment": assignment,
        "objectDimensions": object_dims,
        "containerDimensions": container_dims,
        "goals": [{"spec": {"toFreeSpec": {"name": "unplaced pods", "containers": [UNPLACED],
                                           "dimension": PODS}}},
                  {"boundary": True},
                  {"spec": {"minimizeMovementSpec": {"name": "moved running pods",
                                                     "dimension": RUNNING,
                                                     "doNotNormalize": True}}},
                  *preferences],
        "constraints": constraints,
    }
    if scopes:
        scenario["scopes"] = scopes
        scenario["partitions"] = partitions
    return scenario


def _number(value: int | Fraction) -> int | float:
    return value if isinstance(value, int) else float(value)


class _Spread(NamedTuple):
    """One topologySpreadConstraints entry, with Kubernetes' defaults applied."""

    path: str
    key: str
    max_skew: int
    hard: bool  # whenUnsatisfiable DoNotSchedule (else ScheduleAnyway)
    selector: dict | None  # with matchLabelKeys merged in; None: it counts no pod
    min_domains: int
    honor_affinity: bool  # nodeAffinityPolicy Honor (the default)
    honor_taints: bool  # nodeTaintsPolicy Honor (the default is Ignore)


def _spreads(pod: _Pod) -> list[_Spread]:
    """The pod's topology spread constraints, checked as the API server checks them."""
    spreads = []
    entries = _get(pod.spec, "topologySpreadConstraints", f"{pod.path}.spec", list, [])
    for k, entry in enumerate(entries):
        at = f"{pod.path}.spec.topologySpreadConstraints[{k}]"
        if not isinstance(entry, dict):
            raise InputError(at, "expected an object", entry)

        def refuse(field: str, why: str, entry: dict = entry, at: str = at) -> InputError:
            return InputError(f"{at}.{field}", f"pod '{pod.name}': {why}", entry.get(field))

        when = entry.get("whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise refuse("whenUnsatisfiable", "expected DoNotSchedule or ScheduleAnyway")
        if not _whole(entry.get("maxSkew")):
            raise refuse("maxSkew", "expected a whole number of at least 1")
        if not _whole(entry.get("minDomains", 1)) or (
                when == "ScheduleAnyway" and entry.get("minDomains") is not None):
            raise refuse("minDomains", "expected a whole number of at least 1, with "
                         "DoNotSchedule only")
        if not entry.get("topologyKey") or not isinstance(entry["topologyKey"], str):
            raise refuse("topologyKey", "a topologyKey (a node label) is required")
        policies = {"nodeAffinityPolicy": entry.get("nodeAffinityPolicy", "Honor"),
                    "nodeTaintsPolicy": entry.get("nodeTaintsPolicy", "Ignore")}
        for field, policy in policies.items():
            if policy not in ("Honor", "Ignore"):
                raise refuse(field, "expected Honor or Ignore")
        spreads.append(_Spread(at, entry["topologyKey"], entry["maxSkew"],
                               when == "DoNotSchedule", _spread_selector(pod, entry, at),
                               entry.get("minDomains", 1),
                               policies["nodeAffinityPolicy"] == "Honor",
                               policies["nodeTaintsPolicy"] == "Honor"))
    return spreads


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _spread_selector(pod: _Pod, entry: dict, at: str) -> dict | None:
    """The selector a spread counts with: labelSelector ANDed with the pod's own values of
    matchLabelKeys; None when it counts no pod (no labelSelector, or an empty one, which
    the scheduler counts as matching nothing)."""
    selector = _get(entry, "labelSelector", at, dict)
    if selector is None:
        return None
    labels = _get(selector, "matchLabels", f"{at}.labelSelector", dict, {})
    expressions = [*_get(selector, "matchExpressions", f"{at}.labelSelector", list, []),
                   *({"key": key, "operator": "In", "values": [pod.labels[key]]}
                     for key in _get(entry, "matchLabelKeys", at, list, [])
                     if key in pod.labels)]
    if not labels and not expressions:
        return None
    return {"matchLabels": labels, "matchExpressions": expressions}


def _spread_groups(pods: list[_Pod], nodes: list[_Node]
                   ) -> Iterable[tuple[_Spread, list[str], list[_Node]]]:
    """(spread, counted pods, eligible nodes) per distinct spread. Eligible
    nodes have every topology key of the pod's spreads of the same kind and pass the
    inclusion policies. A DoNotSchedule spread is exact only when the pods it counts are
    exactly the pods carrying it (then its static form is what a scheduler reaches,
    docs/kubernetes.md); otherwise an error naming the constraint."""
    carriers: dict[tuple, list[_Pod]] = {}
    first: dict[tuple, tuple[_Spread, list[_Node]]] = {}
    for pod in pods:
        for spread in pod.spreads:
            if spread.selector is None:
                continue  # counts nothing: only its topology key filters nodes
            keys = {s.key for s in pod.spreads if s.hard == spread.hard}
            eligible = [n for n in nodes if keys <= n.labels.keys()
                        and not (spread.honor_affinity and pod.affinity_reason(n))
                        and not (spread.honor_taints and pod.taint_reason(n))]
            group = (json.dumps(spread.selector, sort_keys=True), pod.namespace, spread.key,
                     spread.max_skew, spread.min_domains, spread.hard,
                     tuple(n.name for n in eligible))
            carriers.setdefault(group, []).append(pod)
            first.setdefault(group, (spread, eligible))
    for group, carrying in carriers.items():
        spread, eligible = first[group]
        selected = [p.name for p in pods if p.namespace == group[1] and label_selector_matches(
            spread.selector, p.labels, f"{spread.path}.labelSelector")]
        if spread.hard:
            _require_symmetric(selected, carrying, spread.path, "a DoNotSchedule spread")
        if selected:
            yield spread, selected, eligible


def _require_symmetric(selected: list[str], carrying: list[_Pod], at: str, what: str) -> None:
    if set(selected) != {p.name for p in carrying}:
        odd = sorted(set(selected) ^ {p.name for p in carrying})
        raise InputError(at, f"pod '{carrying[0].name}': {what} is supported when the pods "
                         "it selects are exactly the pods carrying it (the usual: every "
                         "replica carries the same rule); not so for " + ", ".join(odd[:5]))


def _scope(scopes: dict[str, dict[str, str]], key: str, eligible: list[_Node],
           nodes: list[_Node]) -> str:
    """The name of the scope mapping the ``eligible`` nodes having ``key`` to its value
    ("topology KEY" when they are every node, added to ``scopes`` when new)."""
    mapping = {n.name: n.labels[key] for n in eligible if key in n.labels}
    for name, existing in scopes.items():
        if existing == mapping:
            return name
    whole = len(mapping) == sum(key in n.labels for n in nodes)
    name = f"topology {key}" if whole else f"topology {key} #{len(scopes)}"
    scopes[name] = mapping
    return name


def _term_key(pod: _Pod, term: dict, at: str) -> tuple[str, tuple[str, ...], str] | None:
    """(selector, namespaces, topology key) of a required pod (anti-)affinity term; None
    for a term without labelSelector, which matches no pod."""
    if term.get("namespaceSelector") is not None or term.get("matchLabelKeys") \
            or term.get("mismatchLabelKeys"):
        raise InputError(at, f"pod '{pod.name}': namespaceSelector, matchLabelKeys and "
                         "mismatchLabelKeys are not supported in pod affinity terms")
    key = _get(term, "topologyKey", at, str)
    if not key:
        raise InputError(f"{at}.topologyKey", f"pod '{pod.name}': a topologyKey is required")
    selector = _get(term, "labelSelector", at, dict)
    if selector is None:
        return None
    namespaces = tuple(sorted(_get(term, "namespaces", at, list, []) or [pod.namespace]))
    return json.dumps(selector, sort_keys=True), namespaces, key


def _term_groups(pods: list[_Pod], field: str) -> Iterable[tuple[str, list[str]]]:
    """(topology key, member pods) per distinct required term of ``field`` (podAntiAffinity:
    at most one member per domain; podAffinity: all members in one domain). Exact only when
    symmetric: the pods a term selects are exactly the pods carrying it; otherwise an error
    naming the term. Required pod affinity takes one term per pod."""
    carriers: dict[tuple, list[_Pod]] = {}
    where: dict[tuple, str] = {}
    for pod in pods:
        at = f"{pod.path}.spec.affinity.{field}"
        rules = _get(_get(pod.spec, "affinity", f"{pod.path}.spec", dict, {}), field,
                     f"{pod.path}.spec.affinity", dict, {})
        terms = _get(rules, "requiredDuringSchedulingIgnoredDuringExecution", at, list, [])
        at = f"{at}.requiredDuringSchedulingIgnoredDuringExecution"
        if field == "podAffinity" and len(terms) > 1:
            raise InputError(at, f"pod '{pod.name}': one required pod affinity term is "
                             "supported (all replicas in one domain), not several")
        for k, term in enumerate(terms):
            key = _term_key(pod, term, f"{at}[{k}]")
            if key is None and field == "podAffinity":
                raise InputError(f"{at}[{k}].labelSelector", f"pod '{pod.name}': a term "
                                 "without labelSelector matches no pod, so the pod fits "
                                 "nowhere; give the selector")
            if key is not None:
                carriers.setdefault(key, []).append(pod)
                where.setdefault(key, f"{at}[{k}]")
    for key, carrying in carriers.items():
        selector, namespaces, topology = key
        selected = [p.name for p in pods if p.namespace in namespaces and
                    label_selector_matches(json.loads(selector), p.labels,
                                           f"{where[key]}.labelSelector")]
        _require_symmetric(selected, carrying, where[key],
                           "anti-affinity" if field == "podAntiAffinity" else "pod affinity")
        yield topology, [p.name for p in carrying]


def _disruption_budget(item: dict, at: str, pods: list[_Pod]) -> tuple[str, int, list[str]]:
    """(name, disruptions allowed, running pods covered) of a PodDisruptionBudget: its
    ``status.disruptionsAllowed`` when given, else computed as the disruption controller
    does with the matching pods as the expected count (percentages rounded up)."""
    meta = _get(item, "metadata", at, dict, {})
    namespace = _get(meta, "namespace", f"{at}.metadata", str, "default")
    name = f"{namespace}/{_get(meta, 'name', f'{at}.metadata', str, '')}"
    spec = _get(item, "spec", at, dict, {})
    selector = _get(spec, "selector", f"{at}.spec", dict)
    if selector is None:
        raise InputError(f"{at}.spec.selector", f"PodDisruptionBudget '{name}' needs a selector")
    matching = [p for p in pods if p.namespace == namespace
                and label_selector_matches(selector, p.labels, f"{at}.spec.selector")]
    running = [p.name for p in matching if p.node is not None]
    status = _get(item, "status", at, dict, {})
    given = _get(status, "disruptionsAllowed", f"{at}.status", int)
    if given is not None:
        return name, max(0, given), running
    expected = len(matching)
    minimum, maximum = spec.get("minAvailable"), spec.get("maxUnavailable")
    if (minimum is None) == (maximum is None):
        raise InputError(f"{at}.spec", f"PodDisruptionBudget '{name}' needs exactly one of "
                         "minAvailable and maxUnavailable")
    field = "minAvailable" if minimum is not None else "maxUnavailable"
    value = _scaled(minimum if minimum is not None else maximum, expected, f"{at}.spec.{field}")
    desired = value if minimum is not None else expected - value
    return name, max(0, len(running) - desired), running


def _scaled(value: Any, total: int, path: str) -> int:
    """An IntOrString: an integer, or a percentage of ``total`` rounded up."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and re.fullmatch(r"\d+%", value):
        return math.ceil(Fraction(int(value[:-1]) * total, 100))
    raise InputError(path, "expected a non-negative integer or a percentage such as '50%'",
                     value)
