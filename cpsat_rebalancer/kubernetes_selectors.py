"""Kubernetes' matching rules, as kube-scheduler applies them: label selectors, node
selector terms and tolerations; and the reader of one snapshot field that names its path
in every error."""

from __future__ import annotations

import re
from typing import Any

from .errors import InputError


def get_field(data: Any, key: str, path: str, kind: type | tuple[type, ...],
              default: Any = None) -> Any:
    """``data[key]``, checked to be of ``kind`` (``default`` when absent or null); an error
    names ``path.key``."""
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




def _expression_matches(expression: dict, labels: dict[str, str], path: str,
                        numeric: bool) -> bool:
    """One ``matchExpressions`` entry (node selector requirement, or label selector
    requirement when not ``numeric``) against a label map."""
    key = get_field(expression, "key", path, str)
    operator = get_field(expression, "operator", path, str)
    values = get_field(expression, "values", path, list, [])
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
    match_labels = get_field(selector, "matchLabels", path, dict, {})
    if any(labels.get(k) != v for k, v in match_labels.items()):
        return False
    expressions = get_field(selector, "matchExpressions", path, list, [])
    return all(_expression_matches(e, labels, f"{path}.matchExpressions[{k}]", numeric=False)
               for k, e in enumerate(expressions))


def node_term_matches(term: dict, node_name: str, labels: dict[str, str], path: str) -> bool:
    """One ``nodeSelectorTerm``: its expressions on labels and fields (``metadata.name``)
    all hold; a term with neither matches no node, as in Kubernetes."""
    expressions = get_field(term, "matchExpressions", path, list, [])
    fields = get_field(term, "matchFields", path, list, [])
    if not expressions and not fields:
        return False
    for k, field in enumerate(fields):
        at = f"{path}.matchFields[{k}]"
        if get_field(field, "key", at, str) != "metadata.name":
            raise InputError(f"{at}.key", "only metadata.name is a node field", field.get("key"))
        if get_field(field, "operator", at, str) not in ("In", "NotIn"):
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
        effect = get_field(toleration, "effect", at, str, "")
        if effect and effect != taint.get("effect"):
            continue
        operator = get_field(toleration, "operator", at, str, "Equal")
        key = get_field(toleration, "key", at, str, "")
        if key and key != taint.get("key"):
            continue
        if operator == "Exists":
            return True
        if operator != "Equal":
            raise InputError(f"{at}.operator", "expected Equal or Exists", operator)
        if not key:
            raise InputError(f"{at}.key", "an empty key needs the operator Exists")
        if get_field(toleration, "value", at, str, "") == taint.get("value", ""):
            return True
    return False
