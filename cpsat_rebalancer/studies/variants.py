"""Variant parameters: how one point of a study changes the base scenario dict.

Each parameter is a dotted name with a value; a variant is a mapping of them. The base
scenario is never modified: :func:`apply` works on a deep copy.

- ``drain.coldest.DIM`` / ``drain.hottest.DIM``: the k containers with the lowest / highest
  initial relative utilization of DIM (ties by name); ``drain.random.SEED``: k containers in
  a seeded random order; ``drain.hosts``: a list of names. The chosen containers fill the
  ``containers`` of the model's toFreeSpec named ``drain`` (goal or constraint), or a HARD
  toFreeSpec constraint named ``drain`` is added. Larger k gives a superset, so feasibility
  is monotone in k.
- ``scale``: a factor on every object dimension; ``scale.DIM``: on one dimension;
  ``scale.DIM.PARTITION.GROUP``: on one group's objects. Values are rounded to 6 decimals.
- ``grow``: a factor >= 1 on the number of objects: ``round((f - 1) n)`` objects, evenly
  spaced in input order, get a copy (same sizes, container and groups).
- ``containers.SCOPE.ITEM``: the number of containers of that type (SCOPE's item ITEM), an
  integer or ``"+k"`` / ``"-k"``. Removed ones are the last listed and must be empty; added
  ones copy the first (capacities, scope items) and start empty.
- ``spec.NAME.FIELD[.FIELD...]``: a field of the goal or constraint spec named NAME;
  ``weight.NAME``: a goal's weight; ``policy.NAME``: a constraint's policy.
- ``bound.NAME``: b sets the capacitySpec NAME to a RELATIVE limit of b times the initial
  average relative utilization of its dimension over the containers: no container above b
  times the average. That is BalanceSpec's RELATIVE bound with the average fixed at its
  initial value (Rebalancer fixes it for AFTER over the whole container scope), as a hard rule.
- ``solver.FIELD``: a solver option (timeLimit, deterministicTime, seed, workers).
- ``label.NAME``: any value, recorded in the table only.
"""

from __future__ import annotations

import copy
import math
import random
from typing import Any

import numpy as np

from ..errors import InputError
from ..fields import is_integer, is_number

KINDS = ("drain", "scale", "grow", "containers", "spec", "weight", "policy", "bound", "solver",
         "label")
SOLVER_FIELDS = ("timeLimit", "deterministicTime", "seed", "workers")


def _number(value: Any, path: str, minimum: float = 0.0) -> float:
    if not is_number(value) or not minimum <= value < math.inf:  # NaN fails both
        raise InputError(path, f"expected a finite number >= {minimum:g}", value)
    return float(value)


def check_parameter(name: Any, value: Any, path: str) -> None:
    """Static checks of one parameter (name shape and value type)."""
    if not isinstance(name, str) or not name:
        raise InputError(path, "expected a parameter name", name)
    parts = name.split(".")
    kind = parts[0]
    if kind not in KINDS:
        raise InputError(path, "unknown parameter kind (known: " + ", ".join(KINDS) + ")", name)
    if kind == "drain":
        if parts[1:2] == ["hosts"] and len(parts) == 2:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InputError(path, "expected a list of container names", value)
            return
        if len(parts) != 3 or parts[1] not in ("coldest", "hottest", "random"):
            raise InputError(path, "expected drain.coldest.DIM, drain.hottest.DIM, "
                             "drain.random.SEED or drain.hosts", name)
        if parts[1] == "random" and not parts[2].isdigit():
            raise InputError(path, "the seed of drain.random.SEED is an integer", name)
        if not is_integer(value) or value < 0:
            raise InputError(path, "expected a number of containers", value)
    elif kind == "scale":
        if len(parts) not in (1, 2, 4):
            raise InputError(path, "expected scale, scale.DIM or scale.DIM.PARTITION.GROUP",
                             name)
        _number(value, path)
    elif kind == "grow":
        if len(parts) != 1:
            raise InputError(path, "expected grow", name)
        _number(value, path, 1.0)
    elif kind == "containers":
        if len(parts) != 3:
            raise InputError(path, "expected containers.SCOPE.ITEM", name)
        if isinstance(value, str):
            if value[:1] not in "+-" or not value[1:].isdigit():
                raise InputError(path, "expected a count, or +k / -k", value)
        elif not is_integer(value) or value < 0:
            raise InputError(path, "expected a count, or +k / -k", value)
    elif kind in ("spec", "weight", "policy", "bound"):
        if len(parts) < (3 if kind == "spec" else 2) or (kind != "spec" and len(parts) != 2):
            raise InputError(path, {"spec": "expected spec.NAME.FIELD"}.get(
                kind, f"expected {kind}.NAME"), name)
        if kind in ("weight", "bound"):
            _number(value, path)
    elif kind == "solver":
        if len(parts) != 2 or parts[1] not in SOLVER_FIELDS:
            raise InputError(path, "expected solver." + "|".join(SOLVER_FIELDS), name)
    elif kind == "label" and len(parts) < 2:
        raise InputError(path, "expected label.NAME", name)


def relative_utilization(data: dict, dimension: str) -> dict[str, float]:
    """Initial utilization / capacity per container (0 where the capacity is 0)."""
    sizes = data.get("objectDimensions", {}).get(dimension)
    if sizes is None:
        raise InputError(f"objectDimensions.{dimension}", "unknown dimension", dimension)
    default = data.get("objectDimensionDefaults", {}).get(dimension, 0.0)
    caps = data.get("containerDimensions", {}).get(dimension, {})
    cap_default = data.get("containerDimensionDefaults", {}).get(dimension, 1.0)
    result = {}
    for container, objects in data["assignment"].items():
        cap = caps.get(container, cap_default)
        load = sum(sizes.get(o, default) for o in objects)
        result[container] = load / cap if cap else 0.0
    for container in data.get("containers", []):
        result.setdefault(container, 0.0)
    return result


def _all_containers(data: dict) -> list[str]:
    names = list(data["assignment"])
    names += [c for c in data.get("containers", []) if c not in data["assignment"]]
    return names


def drain_order(data: dict, kind: str, option: str) -> list[str]:
    """Every container in the order drain.KIND.OPTION takes them (k drains the first k)."""
    containers = _all_containers(data)
    if kind == "random":
        order = sorted(containers)
        random.Random(int(option)).shuffle(order)
        return order
    util = relative_utilization(data, option)
    if kind == "hottest":
        return sorted(containers, key=lambda c: (-util[c], c))
    return sorted(containers, key=lambda c: (util[c], c))


def _drain(data: dict, kind: str, option: str | None, value: Any, path: str) -> None:
    containers = _all_containers(data)
    if kind == "hosts":
        unknown = [c for c in value if c not in containers]
        if unknown:
            raise InputError(path, "unknown container", unknown[0])
        chosen = list(value)
    else:
        if value > len(containers):
            raise InputError(path, f"only {len(containers)} containers to drain", value)
        chosen = drain_order(data, kind, option)[:value]
    for entry in [*data.get("goals", []), *data.get("constraints", [])]:
        body = entry.get("spec", {}).get("toFreeSpec") if isinstance(entry, dict) else None
        if isinstance(body, dict) and body.get("name") == "drain":
            body["containers"] = sorted(chosen)
            return
    data.setdefault("constraints", []).append(
        {"spec": {"toFreeSpec": {"name": "drain", "containers": sorted(chosen)}},
         "policy": "HARD"})


def _objects(data: dict) -> list[str]:
    return [o for objs in data["assignment"].values() for o in objs]


def _scale(data: dict, parts: list[str], factor: float, path: str) -> None:
    dims = data.get("objectDimensions", {})
    names = list(dims) if len(parts) == 1 else [parts[1]]
    members = None
    if len(parts) == 4:
        groups = data.get("partitions", {}).get(parts[2])
        if groups is None or parts[3] not in groups:
            raise InputError(path, "unknown partition or group", ".".join(parts[2:]))
        members = set(groups[parts[3]])
    defaults = data.get("objectDimensionDefaults", {})
    for dim in names:
        if dim not in dims:
            raise InputError(path, "unknown object dimension", dim)
        if dim in defaults and defaults[dim]:  # objects at the default are scaled too
            for obj in _objects(data):
                if (members is None or obj in members) and obj not in dims[dim]:
                    dims[dim][obj] = defaults[dim]
        for obj, size in dims[dim].items():
            if members is None or obj in members:
                dims[dim][obj] = round(size * factor, 6)


def _grow(data: dict, factor: float) -> None:
    objects = _objects(data)
    extra = round((factor - 1.0) * len(objects))
    if extra <= 0:
        return
    where = {o: c for c, objs in data["assignment"].items() for o in objs}
    taken = set(objects)
    chosen = [objects[int(i)] for i in np.linspace(0, len(objects), extra, endpoint=False)]
    copies: dict[str, int] = {}
    for original in chosen:
        copies[original] = copies.get(original, 0) + 1
        name = f"{original}~{copies[original]}"
        while name in taken:
            name += "~"
        taken.add(name)
        data["assignment"][where[original]].append(name)
        for values in data.get("objectDimensions", {}).values():
            if original in values:
                values[name] = values[original]
        for groups in data.get("partitions", {}).values():
            for members in groups.values():
                if original in members:
                    members.append(name)
        if "objects" in data:
            data["objects"].append(name)


def _containers(data: dict, scope: str, item: str, value: Any, path: str) -> None:
    mapping = data.get("scopes", {}).get(scope)
    if mapping is None:
        raise InputError(path, "unknown scope", scope)
    members = [c for c in _all_containers(data) if mapping.get(c) == item]
    if not members:
        raise InputError(path, f"no container of scope {scope} is in item {item}", item)
    count = len(members) + int(value) if isinstance(value, str) else value
    if count < 0:
        raise InputError(path, f"only {len(members)} containers of this type", value)
    for name in members[count:]:
        if data["assignment"].get(name):
            raise InputError(path, f"container {name} holds objects and cannot be removed "
                             "(drain it instead)", value)
        data["assignment"].pop(name, None)
        if name in data.get("containers", []):
            data["containers"].remove(name)
        for values in data.get("containerDimensions", {}).values():
            values.pop(name, None)
        for scope_map in data.get("scopes", {}).values():
            scope_map.pop(name, None)
    first = members[0]
    existing = set(_all_containers(data))
    for k in range(len(members), count):
        name = f"{first}~{k}"
        while name in existing:
            name += "~"
        existing.add(name)
        data["assignment"][name] = []
        for values in data.get("containerDimensions", {}).values():
            if first in values:
                values[name] = values[first]
        for scope_map in data.get("scopes", {}).values():
            if first in scope_map:
                scope_map[name] = scope_map[first]


def _entry(data: dict, name: str, path: str, kinds: tuple[str, ...] = ("goals", "constraints")
           ) -> tuple[dict, dict]:
    """The goal or constraint entry whose spec is named ``name``, and the spec body."""
    for kind in kinds:
        for entry in data.get(kind, []):
            spec = entry.get("spec") if isinstance(entry, dict) else None
            if isinstance(spec, dict) and len(spec) == 1:
                body = next(iter(spec.values()))
                if isinstance(body, dict) and body.get("name") == name:
                    return entry, body
    raise InputError(path, "no " + " or ".join(k[:-1] for k in kinds) + " spec has this name",
                     name)


def _set_field(body: dict, fields: list[str], value: Any) -> None:
    for key in fields[:-1]:
        body = body.setdefault(key, {})
        if not isinstance(body, dict):
            raise InputError(".".join(fields), "not a mapping in the spec", body)
    body[fields[-1]] = copy.deepcopy(value)


def apply(base: dict, params: dict[str, Any]) -> tuple[dict, dict[str, Any]]:
    """The scenario dict of one variant, and its solver overrides. Parameters apply in a
    fixed order (sizes and counts before drains and bounds, which read utilizations)."""
    data = copy.deepcopy(base)
    solver: dict[str, Any] = {}
    order = {kind: k for k, kind in enumerate(("grow", "scale", "containers", "spec", "weight",
                                               "policy", "bound", "drain", "solver", "label"))}
    for name in sorted(params, key=lambda n: (order[n.split(".")[0]], n)):
        value = params[name]
        parts = name.split(".")
        kind = parts[0]
        if kind == "drain":
            _drain(data, parts[1], parts[2] if len(parts) > 2 else None, value, name)
        elif kind == "scale":
            _scale(data, parts, float(value), name)
        elif kind == "grow":
            _grow(data, float(value))
        elif kind == "containers":
            _containers(data, parts[1], parts[2], value, name)
        elif kind == "spec":
            _, body = _entry(data, parts[1], name)
            _set_field(body, parts[2:], value)
        elif kind == "weight":
            entry, _ = _entry(data, parts[1], name, ("goals",))
            entry["weight"] = value
        elif kind == "policy":
            entry, _ = _entry(data, parts[1], name, ("constraints",))
            entry["policy"] = value
        elif kind == "bound":
            _, body = _entry(data, parts[1], name, ("constraints",))
            dimension = body.get("dimension")
            if not isinstance(dimension, str):
                raise InputError(name, "the capacity spec names no dimension", parts[1])
            util = list(relative_utilization(data, dimension).values())
            average = sum(util) / len(util) if util else 0.0
            body["limit"] = {"type": "RELATIVE", "globalLimit": round(value * average, 12)}
        elif kind == "solver":
            solver[parts[1]] = value
    return data, solver
