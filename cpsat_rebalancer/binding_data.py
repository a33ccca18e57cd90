"""What ``ProblemSolver`` records beyond the scenario dict, checked with errors that name the
call: log levels, precision, similar containers; and the scenario parts it writes out per
object (a compact assignment, dynamic dimensions given per partition group)."""

from __future__ import annotations

import re
import sys
from typing import Any

from .errors import InputError
from .fields import Fields, check_integer, check_list, check_mapping, check_names
from .problem import Problem

# folly's log levels (the wheel's set_log_level): a name, DBG<n>, or a number; lower is
# more verbose, as in folly's LogLevel
LOG_LEVELS = {"DBG": 1000, "DEBUG": 1000, "INFO": 2000, "WARN": 3000, "WARNING": 3000,
              "ERR": 4000, "ERROR": 4000, "CRITICAL": 5000, "DFATAL": 0x7FFFFFFE,
              "FATAL": 0x7FFFFFFF, "NONE": 0x7FFFFFFF, "UNINITIALIZED": 0, "": 2000}
INFO = LOG_LEVELS["INFO"]
EPSILON = sys.float_info.epsilon


def log_level_rank(level: str) -> int:
    """folly's number for a level name (DBG<n> lies below DBG, down to DBG9)."""
    name = level.strip().upper()
    if name in LOG_LEVELS:
        return LOG_LEVELS[name]
    match = re.fullmatch(r"DBG(\d)", name)
    if match:
        return LOG_LEVELS["DBG"] - 1 - int(match.group(1))
    return int(name)


def check_log_level(level: Any) -> str:
    """A level folly reads; anything else is refused here (the wheel aborts the process)."""
    if not isinstance(level, str):
        raise InputError("set_log_level(level)", "expected a level name such as INFO or "
                         "ERROR", level)
    try:
        log_level_rank(level)
    except ValueError:
        raise InputError("set_log_level(level)", "unknown log level (folly's: DBG, DBG0 to "
                         "DBG9, INFO, WARNING, ERROR, CRITICAL, FATAL, NONE, or a number)",
                         level) from None
    return level


def check_precision(tolerances: Any) -> dict[str, float]:
    """``PrecisionTolerances``: ``absolute`` and ``relative``, each above machine epsilon."""
    fields = Fields(tolerances, "set_precision")
    result = {}
    for key in ("absolute", "relative"):
        value = fields.number(key)
        if value is not None:
            if not value > EPSILON:
                raise InputError(fields.at(key), f"must be above machine epsilon ({EPSILON:.3g})",
                                 value)
            result[key] = value
    fields.done("PrecisionTolerances")
    return result


def check_similar(calls: list[Any], problem: Problem) -> None:
    """``add_similar_containers``: lists of known container names."""
    for k, classes in enumerate(calls):
        path = f"add_similar_containers[{k}]"
        for i, members in enumerate(check_list(classes, path, "a list of container lists")):
            for j, name in enumerate(check_names(members, f"{path}[{i}]")):
                if name not in problem.container_index:
                    raise InputError(f"{path}[{i}][{j}]", "unknown container", name)


def expand_compact(data: dict, compact: Any) -> None:
    """Write ``{container: {class: count}}`` out as objects ``<class>__<k>`` into ``data``:
    its assignment, and every dimension, dynamic dimension and partition given for a class
    name (then for each of its objects)."""
    path = "set_compact_assignment"
    members: dict[str, list[str]] = {}
    assignment: dict[str, list[str]] = {}
    for container, counts in check_mapping(compact, path, "container names").items():
        listed = assignment.setdefault(container, [])
        where = f"{path}.{container}"
        for name, count in check_mapping(counts, where, "object class names").items():
            count = check_integer(count, f"{where}.{name}", "a count of objects")
            if count < 0:
                raise InputError(f"{where}.{name}", "must not be negative", count)
            objects = members.setdefault(name, [])
            new = [f"{name}__{len(objects) + k}" for k in range(count)]
            objects += new
            listed += new
    data["assignment"] = assignment

    def per_object(values: Any) -> Any:
        if not isinstance(values, dict):
            return values  # the scenario's parser names what is wrong
        result = {}
        for key, value in values.items():
            for name in members.get(key, [key]) if isinstance(key, str) else [key]:
                result[name] = value
        return result

    for dim, values in (data.get("objectDimensions") or {}).items():
        data["objectDimensions"][dim] = per_object(values)
    for entry in (data.get("dynamicObjectDimensions") or {}).values():
        if isinstance(entry, dict) and isinstance(entry.get("values"), dict):
            entry["values"] = {item: per_object(v) for item, v in entry["values"].items()}
    for groups in (data.get("partitions") or {}).values():
        if isinstance(groups, dict):
            for group, names in groups.items():
                if isinstance(names, list):
                    groups[group] = [m for n in names
                                     for m in (members.get(n, [n]) if isinstance(n, str)
                                               else [n])]


def by_partition(data: dict, scope: Any, partition: Any, values: Any, default: Any) -> dict:
    """``add_dynamic_object_dimension_by_partition`` as a dynamic dimension per object."""
    path = "add_dynamic_object_dimension_by_partition"
    groups = (data.get("partitions") or {}).get(partition) if isinstance(partition, str) \
        else None
    if not isinstance(groups, dict):
        raise InputError(f"{path}(partition_name)", "unknown partition", partition)
    per_item = {}
    for item, by_group in check_mapping(values, f"{path}(scope_item_to_group_to_value)",
                                        "scope item names").items():
        where = f"{path}(scope_item_to_group_to_value).{item}"
        per_item[item] = {}
        for group, value in check_mapping(by_group, where, "group names").items():
            if group not in groups:
                raise InputError(f"{where}.{group}", f"unknown group of partition "
                                 f"'{partition}'", group)
            for obj in check_names(groups[group], f"partitions.{partition}.{group}"):
                per_item[item][obj] = value
    entry: dict[str, Any] = {"scope": scope, "values": per_item}
    if default != 0.0:
        entry["default"] = default
    return entry
