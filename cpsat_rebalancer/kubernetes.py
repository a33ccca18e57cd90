"""A Kubernetes cluster snapshot (``kubectl get nodes,pods[,pdb] -o json``) as an ordinary
scenario dict (docs/kubernetes.md has the mapping, field by field).

Objects are pods (``namespace/name``), containers the nodes plus ``(unplaced)``, where
pending pods start. Every rule is an existing spec, hard where it holds at the start: node
allocatable as capacitySpec limits, the scheduling filters (nodeSelector, required node
affinity, taints, unschedulable nodes) as one avoidAssignmentsSpec, required pod anti-affinity as a
groupCountSpec per term, a PodDisruptionBudget as a minimizeMovementSpec constraint with an
allowance. Goals: the fewest pods left unplaced, then the fewest running pods moved.
Fields no existing spec expresses exactly (DoNotSchedule topology spread, required pod
affinity, asymmetric anti-affinity) are refused with an error naming them.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path
from typing import Any

from .errors import InputError

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


def _get(data: Any, key: str, path: str, kind: type | tuple[type, ...], default: Any = None):
    if not isinstance(data, dict):
        raise InputError(path, "expected an object", data)
    value = data.get(key, default)
    if value is None:
        return default
    if not isinstance(value, kind):
        raise InputError(f"{path}.{key}", f"expected {_kind_name(kind)}", value)
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer",
             bool: "true or false"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


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


# --------------------------------------------------------------------------- selectors


def _expression_matches(expression: dict, labels: dict[str, str], path: str,
                        numeric: bool) -> bool:
    """One ``matchExpressions`` entry (node selector requirement, or label selector
    requirement when not ``numeric``) against a label map."""
    key = _get(expression, "key", path, str)
    operator = _get(expression, "operator", path, str)
    values = _get(expression, "values", path, list, [])
    if key is None or operator is None:
        raise InputError(path, "needs a key and an operator", expression)
    allowed = ("In", "NotIn", "Exists", "DoesNotExist") + (("Gt", "Lt") if numeric else ())
    if operator not in allowed:
        raise InputError(f"{path}.operator", f"unknown operator (known: {', '.join(allowed)})",
                         operator)
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if len(values) != 1 or not re.fullmatch(r"[+-]?\d+", str(values[0])):
        raise InputError(f"{path}.values", f"{operator} needs exactly one integer value", values)
    if not present or not re.fullmatch(r"[+-]?\d+", labels[key]):
        return False
    label, bound = int(labels[key]), int(values[0])
    return label > bound if operator == "Gt" else label < bound


def label_selector_matches(selector: dict, labels: dict[str, str], path: str) -> bool:
    """A ``metav1.LabelSelector``: every matchLabels pair and every expression holds."""
    match_labels = _get(selector, "matchLabels", path, dict, {})
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    expressions = _get(selector, "matchExpressions", path, list, [])
    return all(_expression_matches(e, labels, f"{path}.matchExpressions[{k}]", numeric=False)
               for k, e in enumerate(expressions))


def node_term_matches(term: dict, node_name: str, labels: dict[str, str], path: str) -> bool:
    """One ``nodeSelectorTerm``: its expressions on labels and fields (``metadata.name``)
    all hold; a term with neither matches no node, as in Kubernetes."""
    expressions = _get(term, "matchExpressions", path, list, [])
    fields = _get(term, "matchFields", path, list, [])
    if not expressions and not fields:
        return False
    for k, field in enumerate(fields):
        at = f"{path}.matchFields[{k}]"
        if _get(field, "key", at, str) != "metadata.name":
            raise InputError(f"{at}.key", "only metadata.name is a node field", field.get("key"))
        if _get(field, "operator", at, str) not in ("In", "NotIn"):
            raise InputError(f"{at}.operator", "node fields take In or NotIn",
                             field.get("operator"))
    return (all(_expression_matches(e, labels, f"{path}.matchExpressions[{k}]", numeric=True)
                for k, e in enumerate(expressions))
            and all(_expression_matches(f, {"metadata.name": node_name},
                                        f"{path}.matchFields[{k}]", numeric=False)
                    for k, f in enumerate(fields)))


def tolerates(tolerations: list[dict], taint: dict, path: str) -> bool:
    """Whether any toleration tolerates ``taint`` (``v1.Toleration.ToleratesTaint``)."""
    for k, toleration in enumerate(tolerations):
        at = f"{path}[{k}]"
        effect = _get(toleration, "effect", at, str, "")
        if effect and effect != taint.get("effect"):
            continue
        operator = _get(toleration, "operator", at, str, "Equal")
        key = _get(toleration, "key", at, str, "")
        if key and key != taint.get("key"):
            continue
        if operator == "Exists":
            return True
        if operator != "Equal":
            raise InputError(f"{at}.operator", "expected Equal or Exists", operator)
        if not key:
            raise InputError(f"{at}.key", "an empty key needs the operator Exists")
        if _get(toleration, "value", at, str, "") == taint.get("value", ""):
            return True
    return False


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
                           for res in set(requests) | set(sidecars)}
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
        """Why kube-scheduler's filters (NodeUnschedulable, TaintToleration, NodeAffinity)
        reject ``node`` for this pod, or None."""
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
        tolerations = _get(self.spec, "tolerations", at, list, [])
        for taint in node.taints:
            if not tolerates(tolerations, taint, f"{at}.tolerations"):
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
        _refuse_unsupported(pod)
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
    scopes, partitions = {}, {}
    for k, (key, members) in enumerate(_anti_affinity_groups(pods)):
        scope = f"topology {key}"
        scopes[scope] = {n.name: n.labels[key] for n in nodes if key in n.labels}
        partitions[f"anti-affinity {k}"] = {"members": members}
        constraints.append({"spec": {"groupCountSpec": {
            "name": f"anti-affinity {k} over {key}", "scope": scope,
            "partitionName": f"anti-affinity {k}", "bound": "MAX",
            "limit": {"type": "ABSOLUTE", "globalLimit": 1}}}, **AS_FOUND})
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
                                                     "doNotNormalize": True}}}],
        "constraints": constraints,
    }
    if scopes:
        scenario["scopes"] = scopes
        scenario["partitions"] = partitions
    return scenario


def _number(value: int | Fraction) -> int | float:
    return value if isinstance(value, int) else float(value)


def _refuse_unsupported(pod: _Pod) -> None:
    """Fields no existing spec expresses exactly: an error naming them, never a silent skip."""
    at = f"{pod.path}.spec"
    for k, constraint in enumerate(_get(pod.spec, "topologySpreadConstraints", at, list, [])):
        if constraint.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule":
            raise InputError(f"{at}.topologySpreadConstraints[{k}]", f"pod '{pod.name}': a "
                             "DoNotSchedule spread (skew against the least loaded domain) has "
                             "no exact spec yet; see docs/kubernetes.md")
    affinity = _get(pod.spec, "affinity", at, dict, {})
    pod_affinity = _get(affinity, "podAffinity", f"{at}.affinity", dict, {})
    if pod_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"):
        raise InputError(f"{at}.affinity.podAffinity.requiredDuringSchedulingIgnoredDuring"
                         "Execution", f"pod '{pod.name}': required pod affinity has no exact "
                         "spec yet; see docs/kubernetes.md")


def _term_key(pod: _Pod, term: dict, at: str) -> tuple[str, tuple[str, ...], str]:
    if term.get("namespaceSelector") is not None or term.get("matchLabelKeys") \
            or term.get("mismatchLabelKeys"):
        raise InputError(at, f"pod '{pod.name}': namespaceSelector, matchLabelKeys and "
                         "mismatchLabelKeys are not supported in anti-affinity terms")
    key = _get(term, "topologyKey", at, str)
    if not key:
        raise InputError(f"{at}.topologyKey", f"pod '{pod.name}': a topologyKey is required")
    namespaces = tuple(sorted(_get(term, "namespaces", at, list, []) or [pod.namespace]))
    selector = json.dumps(_get(term, "labelSelector", at, dict, {}), sort_keys=True)
    return selector, namespaces, key


def _anti_affinity_groups(pods: list[_Pod]) -> Iterable[tuple[str, list[str]]]:
    """(topology key, member pods) per distinct required anti-affinity term. Exact only
    when symmetric: the pods the term selects are exactly the pods that carry it (then at
    most one of them per topology domain); otherwise an error naming the term."""
    carriers: dict[tuple, list[_Pod]] = {}
    where: dict[tuple, str] = {}
    for pod in pods:
        at = f"{pod.path}.spec.affinity.podAntiAffinity"
        anti = _get(_get(pod.spec, "affinity", f"{pod.path}.spec", dict, {}),
                    "podAntiAffinity", f"{pod.path}.spec.affinity", dict, {})
        terms = _get(anti, "requiredDuringSchedulingIgnoredDuringExecution", at, list, [])
        for k, term in enumerate(terms):
            term_at = f"{at}.requiredDuringSchedulingIgnoredDuringExecution[{k}]"
            key = _term_key(pod, term, term_at)
            carriers.setdefault(key, []).append(pod)
            where.setdefault(key, term_at)
    for key, carrying in carriers.items():
        selector, namespaces, topology = key
        selected = [p for p in pods if p.namespace in namespaces and label_selector_matches(
            json.loads(selector), p.labels, f"{where[key]}.labelSelector")]
        if {p.name for p in selected} != {p.name for p in carrying}:
            odd = sorted({p.name for p in selected} ^ {p.name for p in carrying})
            raise InputError(where[key], "anti-affinity is supported when the pods a term "
                             "selects are exactly those carrying it (the usual 'one replica "
                             "per domain'); not so for " + ", ".join(odd[:5]))
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
