"""Generated scenarios for benchmarks and studies: objects from a small set of flavours on
heterogeneous hosts, with a skewed initial assignment (the shape of real rebalancing runs)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import InputError

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
    # every object fits in every host's 95% (on tiny instances the fill alone may not)
    unit = max(np.ceil(cpu.sum() / fill / (containers + big.sum())), np.ceil(cpu.max() / 0.95))
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


BALANCE_FORMULAS = ["LINEAR", "SQUARES", "MAX", "IDEAL", "RELATIVE_UTIL_VARIANCE"]
GROUP_COUNT_DEFINITIONS = ["AFTER", "DURING", "STAYED", "DURING_AND_AFTER"]
CAPACITY_DEFINITIONS = ["AFTER", "DURING_AND_AFTER", "DURING", "DOUBLE_DURING_AND_AFTER",
                        "DOUBLE_DURING", "NEW", "OLD", "MOVED_DATA"]


def random_scenario(seed: int, max_objects: int = 5, max_containers: int = 3,
                    groups: bool = False) -> dict[str, Any]:
    """A tiny scenario covering every spec and option at random: 1-3 goals and 0-2
    constraints (used by the brute-force, agreement, parity and fuzz tests). With ``groups``
    it also has a partition "grp" and a GroupCount or ColocateGroups goal and constraint
    (drawn after everything else, so the scenario without them is the same)."""
    rng = random.Random(seed)
    n = rng.randint(2, max_objects)
    m = rng.randint(2, max_containers)
    containers = [f"h{c}" for c in range(m)]
    objects = [f"t{o}" for o in range(n)]
    assignment = {c: [] for c in containers}
    skew = rng.random() < 0.5
    for o in objects:
        home = containers[0] if skew and rng.random() < 0.6 else rng.choice(containers)
        assignment[home].append(o)
    sizes = [1, 2, 3, 4, 5, 2.5, 0.5]
    cpu = {o: rng.choice(sizes) for o in objects}
    mem = {o: rng.choice([0, 1, 2, 4]) for o in objects}
    cap_cpu = {c: rng.choice([4, 5, 8, 10, 6.5]) for c in containers}
    cap_mem = {c: rng.choice([0, 4, 8]) if rng.random() < 0.2 else rng.choice([4, 8])
               for c in containers}
    scopes = {}
    scope_dims = {}
    if m >= 2 and rng.random() < 0.4:
        racks = {c: f"r{rng.randint(0, 1)}" for c in containers if rng.random() < 0.9}
        if racks:
            scopes["rack"] = racks
            scope_dims["rack"] = {"cpu": {r: rng.choice([8, 12, 16])
                                          for r in sorted(set(racks.values()))}}
    scope_names = ["host"] + list(scopes)

    def items_of(scope: str) -> list[str]:
        return containers if scope == "host" else sorted(set(scopes[scope].values()))

    def pick_filter(scope: str) -> dict | None:
        items = items_of(scope)
        if rng.random() < 0.7 or len(items) < 2:
            return None
        chosen = rng.sample(items, rng.randint(1, len(items) - 1))
        return {"itemsWhitelist": chosen} if rng.random() < 0.5 else {"itemsBlacklist": chosen}

    def balance() -> dict:
        scope = rng.choice(scope_names)
        spec: dict[str, Any] = {"scope": scope, "dimension": rng.choice(["cpu", "mem"]),
                                "formula": rng.choice(BALANCE_FORMULAS)}
        bound = rng.choice(["RELATIVE", "ABSOLUTE", "RELATIVE_UTIL"])
        spec["boundType"] = bound
        spec["upperBound"] = {"RELATIVE": rng.choice([1, 1.1, 1.25]),
                              "ABSOLUTE": rng.choice([0, 0.1, 0.2]),
                              "RELATIVE_UTIL": rng.choice([0.5, 0.75, 1.0])}[bound]
        if rng.random() < 0.25:
            spec["softUpperBound"] = rng.choice([0.5, 0.9])
        spec["definition"] = rng.choice(["AFTER", "AFTER", "DURING", "NEW", "OLD"])
        if rng.random() < 0.3:
            spec["fixAverageToInitial"] = True
        if spec["formula"] == "IDEAL" and rng.random() < 0.3:
            spec["ignoreUpperBoundForIdealWithAbsOrRelBoundTypes"] = False
        f = pick_filter(scope)
        if f:
            spec["filter"] = f
        return {"balanceSpec": spec}

    def uic() -> dict:
        spec = {"scope": "host", "dimension": "cpu", "lowerBound": rng.choice([0, 0.2, 0.5]),
                "squares": rng.random() < 0.5}
        return {"utilIncreaseCostSpec": spec}

    def to_free(goal: bool) -> dict:
        spec: dict[str, Any] = {"containers": [containers[0]]}
        if rng.random() < 0.5:
            spec["dimension"] = "cpu"
        if goal and rng.random() < 0.5:
            spec["formula"] = "MINIMIZE_OCCUPIED_CONTAINERS"
        return {"toFreeSpec": spec}

    def capacity() -> dict:
        scope = rng.choice(scope_names)
        spec: dict[str, Any] = {"scope": scope, "dimension": "cpu",
                                "definition": rng.choice(CAPACITY_DEFINITIONS),
                                "bound": rng.choice(["MAX", "MAX", "MIN"])}
        if spec["bound"] == "MIN" and rng.random() < 0.5:
            spec["zeroAllowed"] = True
        if rng.random() < 0.5:
            kind = rng.choice(["RELATIVE", "ABSOLUTE"])
            limit = {"type": kind, "globalLimit": rng.choice([0.5, 0.8, 1.0]) if kind ==
                     "RELATIVE" else rng.choice([3, 6, 9])}
            if rng.random() < 0.3:
                item = rng.choice(items_of(scope))
                limit["scopeItemLimits"] = {item: rng.choice([0.5, 2, 7])}
            if rng.random() < 0.2:
                limit["isDefaultLimitUnbounded"] = True
            spec["limit"] = limit
        f = pick_filter(scope)
        if f:
            spec["filter"] = f
        if rng.random() < 0.15:
            spec["useLegacyFormula"] = True
        return {"capacitySpec": spec}

    def movement() -> dict:
        spec: dict[str, Any] = {"scope": rng.choice(scope_names),
                                "dimension": rng.choice(["cpu", "task_count"])}
        if rng.random() < 0.4:
            spec["doNotNormalize"] = True
            if rng.random() < 0.5:
                spec["allowance"] = rng.choice([1, 2])
        elif rng.random() < 0.3:
            spec["magicScaling"] = False
        return {"minimizeMovementSpec": spec}

    goal_makers = [balance, balance, uic, lambda: to_free(True), capacity, movement]
    goals = []
    for _ in range(rng.randint(1, 3)):
        entry: dict[str, Any] = {"spec": rng.choice(goal_makers)()}
        if rng.random() < 0.3:
            entry["weight"] = rng.choice([0.5, 2, 10])
        entry["tuplePos"] = rng.choice([0, 0, 1, 2])
        goals.append(entry)

    def avoid_moving() -> dict:
        return {"avoidMovingSpec": {"objects": rng.sample(objects, rng.randint(1, 2))}}

    def non_accepting() -> dict:
        scope = rng.choice(scope_names)
        return {"nonAcceptingSpec": {"scope": scope, "items": [rng.choice(items_of(scope))]}}

    def avoid_assignments() -> dict:
        return {"avoidAssignmentsSpec": {"scope": "host", "assignments": [
            {"object": rng.choice(objects), "scopeItems": rng.sample(containers, 1)}
            for _ in range(rng.randint(1, 2))]}}

    constraint_makers = [capacity, capacity, lambda: to_free(False), movement, avoid_moving,
                         non_accepting, avoid_assignments]
    constraints = []
    for _ in range(rng.randint(0, 2)):
        entry = {"spec": rng.choice(constraint_makers)(),
                 "policy": rng.choice(["DEFAULT", "HARD", "SOFT"])}
        if rng.random() < 0.4:
            entry["tuplePosIfBroken"] = rng.choice([0, 1, 2])
        if rng.random() < 0.3:
            entry["invalidCost"] = rng.choice([1, 10])
            entry["invalidState"] = rng.choice([0, 5])
        constraints.append(entry)
    data = {
        "objectName": "task", "containerName": "host", "assignment": assignment,
        "objectDimensions": {"cpu": cpu, "mem": mem},
        "containerDimensions": {"cpu": cap_cpu, "mem": cap_mem},
        "scopes": scopes, "scopeDimensions": scope_dims,
        "goals": goals, "constraints": constraints,
        # the global policy governs single-parameter constraints (AvoidMoving) and defaults
        "constraintPolicy": rng.choice(["DEFAULT", "DEFAULT", "HARD", "SOFT"]),
    }
    if groups:
        _add_group_specs(rng, data, objects, scope_names, items_of, pick_filter)
    return data


def _add_group_specs(rng: random.Random, data: dict[str, Any], objects: list[str],
                     scope_names: list[str], items_of: Any, pick_filter: Any) -> None:
    """A partition "grp" (1-3 non-empty groups, some objects in none), then one GroupCount
    or ColocateGroups goal and one such constraint, each with probability 0.7."""
    names = ["ga", "gb", "gc"][:rng.randint(1, min(3, len(objects)))]
    partition: dict[str, list[str]] = {g: [] for g in names}
    for k, obj in enumerate(objects):
        if k < len(names):
            partition[names[k]].append(obj)
        elif rng.random() < 0.85:
            partition[rng.choice(names)].append(obj)
    data["partitions"] = {"grp": partition}

    def group_count() -> dict:
        scope = rng.choice(scope_names)
        items = items_of(scope)
        bound = rng.choice(["MAX", "MAX", "MIN", "EXACT", "MULTIPLE"])
        spec: dict[str, Any] = {"scope": scope, "partitionName": "grp", "bound": bound,
                                "definition": rng.choice(GROUP_COUNT_DEFINITIONS)}
        if rng.random() < 0.4:
            spec["dimension"] = "cpu"
        kind = rng.choice(["ABSOLUTE", "ABSOLUTE", "RELATIVE"])
        values = ([1, 2, 3] if bound == "MULTIPLE" else [0, 1, 2, 3]) if kind == "ABSOLUTE" \
            else [0.5, 1]
        limit: dict[str, Any] = {"type": kind, "globalLimit": rng.choice(values)}
        if rng.random() < 0.3:
            limit["groupLimits"] = {rng.choice(names): rng.choice(values)}
        if rng.random() < 0.3:
            limit["scopeItemLimits"] = {rng.choice(items): rng.choice(values)}
        if rng.random() < 0.2:
            limit["scopeItemToGroupLimits"] = {rng.choice(items): {rng.choice(names):
                                                                   rng.choice(values)}}
        if bound == "MAX" and rng.random() < 0.15:
            limit["isDefaultLimitUnbounded"] = True
        spec["limit"] = limit
        if kind == "RELATIVE" and bound != "MULTIPLE" and rng.random() < 0.4:
            spec["limitRelativeTo"] = "SCOPE_ITEM_UTIL"
        if (bound == "EXACT" or (bound == "MIN" and "limitRelativeTo" not in spec)) \
                and rng.random() < 0.4:  # Rebalancer rejects MIN + zeroAllowed + SCOPE_ITEM_UTIL
            spec["zeroAllowed"] = True
            if rng.random() < 0.5:
                spec["minimumLimit"] = rng.choice([0.5, 1])
        compact = ("zeroAllowed" not in spec and spec["definition"] != "STAYED"
                   and "limitRelativeTo" not in spec)
        if (bound == "MAX" or (bound in ("MIN", "EXACT") and compact)) and rng.random() < 0.3:
            spec["squares"] = True  # Rebalancer implements MIN squares only in compact form
        f = pick_filter(scope)
        if f:
            spec["filter"] = f
        return {"groupCountSpec": spec}

    def colocate() -> dict:
        scope = rng.choice(scope_names)
        items = items_of(scope)
        spec: dict[str, Any] = {"scope": scope, "partitionName": "grp",
                                "bound": rng.choice(["MAX", "MAX", "MIN"]),
                                "limits": {"globalLimit": rng.choice([1, 1, 2])}}
        if rng.random() < 0.3:
            spec["limits"]["groupLimits"] = {rng.choice(names): rng.choice([0, 1, 2])}
        if rng.random() < 0.3:
            spec["squares"] = True
        if rng.random() < 0.3:
            spec["scopeItemWeights"] = {rng.choice(items): rng.choice([0.5, 2, 0])}
        if rng.random() < 0.3:
            weights = [0.5, 2] if spec.get("squares") else [0.5, 2, -1]
            spec["groupToWeight"] = {rng.choice(names): rng.choice(weights)}
        if rng.random() < 0.3:
            spec["dimension"] = "cpu"
        f = pick_filter(scope)
        if f:
            spec["filter"] = f
        return {"colocateGroupsSpec": spec}

    if rng.random() < 0.7:
        data["goals"].append({"spec": rng.choice([group_count, colocate])(),
                              "tuplePos": rng.choice([0, 1])})
    if rng.random() < 0.7:
        data["constraints"].append({"spec": rng.choice([group_count, colocate])(),
                                    "policy": rng.choice(["DEFAULT", "HARD", "SOFT"])})


def drain_cluster(hosts: int = 500, seed: int = 0, fill: float = 0.55,
                  spread: float = 0.15, max_cpu: float = 8) -> dict[str, Any]:
    """A cluster to plan maintenance waves on: ``hosts`` identical hosts (64 cpu, 256 mem)
    filled to about ``fill`` of their cpu, each host within roughly ``± spread`` of it (a
    cluster that a rebalancer has kept level, unlike :func:`balance_instance`'s skew).
    Tasks are drawn from the first eight flavours with at most ``max_cpu`` cpu. No goals or
    constraints: a study's model supplies them."""
    rng = np.random.default_rng(seed)
    flavours = [f for f in FLAVOURS[:8] if f[0] <= max_cpu]
    cap_cpu, cap_mem = 64.0, 256.0
    assignment: dict[str, list[str]] = {}
    cpu: dict[str, float] = {}
    mem: dict[str, float] = {}
    count = 0
    for h in range(hosts):
        name = f"host{h:03d}" if hosts <= 1000 else f"host{h}"
        target = cap_cpu * min(0.95, max(0.0, fill + spread * (2 * rng.random() - 1)))
        load = 0.0
        tasks: list[str] = []
        while True:
            cpu_size, mem_size = flavours[int(rng.integers(0, len(flavours)))]
            if load + cpu_size > target:
                break
            task = f"task{count}"
            count += 1
            cpu[task], mem[task] = float(cpu_size), float(mem_size)
            load += cpu_size
            tasks.append(task)
        assignment[name] = tasks
    names = list(assignment)
    return {
        "name": f"drain_cluster_{hosts}",
        "objectName": "task", "containerName": "host",
        "assignment": assignment,
        "objectDimensions": {"cpu": cpu, "mem": mem},
        "containerDimensions": {"cpu": dict.fromkeys(names, cap_cpu),
                                "mem": dict.fromkeys(names, cap_mem)},
    }


# --------------------------------------------------------------------------- scale families

SCALE_FAMILIES = ("linear", "squares", "max", "ideal", "drain", "racks", "million", "replicas")
DRAIN_SHARE = 0.05  # of the hosts, at least one
MILLION_FLAVOURS = np.asarray([(cpu, cpu * ratio) for cpu in range(1, 21)
                               for ratio in range(1, 11)])  # 200 distinct (cpu, mem)


def scale_instance(family: str, objects: int, containers: int, seed: int = 0) -> dict[str, Any]:
    """One instance of a scale benchmark family, deterministic in ``seed``:

    * ``linear``, ``squares``, ``max``, ``ideal``: :func:`balance_instance` with that formula;
    * ``drain``: about 5% of the loaded hosts (at least one) to empty, a ToFree goal (objects
      left on them) at position 0, UtilIncreaseCost of cpu with ``squares`` at position 1,
      HARD cpu Capacity; the drained hosts are chosen so that a packing of their objects
      into the others' free room exists (:func:`drain_plan` rebuilds it);
    * ``racks``: hosts in racks of 10-20 (a short last rack joins the one before; two racks
      below 20 hosts), rack capacity the sum of its hosts'; Balance LINEAR of cpu per rack
      at 0, per host at 1, MinimizeMovement at 2, HARD cpu Capacity;
    * ``million``: the ``linear`` model on objects from at most 200 (cpu, mem) flavours,
      generated with numpy so that 1,000,000 objects take seconds;
    * ``replicas``: the racks' hosts running jobs of 2-5 identical replicas (the last job
      may be shorter); GroupDiversity MIN of the jobs per rack at 0 (each rack runs replicas
      of at least half as many jobs as a rack holds on average), Balance LINEAR of cpu per
      host at 1, MinimizeMovement at 2; HARD cpu Capacity and a HARD GroupMoveLimit (a
      job of n replicas moves at most n - 1 of them, one if it has a single replica).
    """
    for name, value in (("objects", objects), ("containers", containers)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InputError(name, "expected a positive integer", value)
    key = family.lower() if isinstance(family, str) else family
    if key in ("linear", "squares", "max", "ideal"):
        return balance_instance(objects, containers, key.upper(), seed)
    builders = {"drain": _drain_instance, "racks": _racks_instance,
                "million": _million_instance, "replicas": _replicas_instance}
    if key not in builders:
        raise InputError("family", "unknown scale family (expected one of "
                         + ", ".join(SCALE_FAMILIES) + ")", family)
    return builders[key](objects, containers, np.random.default_rng(seed))


def _cluster(rng: np.random.Generator, objects: int, containers: int, flavours: np.ndarray,
             fill: float = 0.6, pick: np.ndarray | None = None,
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(cpu, mem, cpu capacity, mem capacity, initial host) of a cluster like
    :func:`balance_instance`'s, built with numpy: flavoured objects (``pick``: the flavour
    of each, else drawn), 30% of hosts of twice the capacity, hosts filled one after the
    other (in a random order) up to 95% of cpu."""
    if pick is None:
        pick = rng.integers(0, len(flavours), size=objects)
    cpu = flavours[pick, 0].astype(float)
    mem = flavours[pick, 1].astype(float)
    big = rng.random(containers) < 0.3
    # every object must fit in every host's 95%, whatever the fill
    unit = max(np.ceil(cpu.sum() / fill / (containers + big.sum())), np.ceil(cpu.max() / 0.95))
    cpu_cap = np.where(big, 2 * unit, unit)
    mem_cap = np.ceil(2 * cpu_cap * (mem.sum() / cpu.sum()))
    host = np.full(objects, -1)
    order = rng.permutation(objects)
    ends = np.cumsum(cpu[order])
    start, base = 0, 0.0
    for c in rng.permutation(containers):  # next fit: integral sizes, so the sums are exact
        stop = int(np.searchsorted(ends, base + 0.95 * cpu_cap[c], side="right"))
        if stop > start:
            host[order[start:stop]] = c
            base, start = ends[stop - 1], stop
    load = np.bincount(host[host >= 0], cpu[host >= 0], containers)
    for o in order[start:]:  # left over by next fit: where the most room is
        c = int(np.argmax(cpu_cap - load))
        if load[c] + cpu[o] > cpu_cap[c]:
            raise InputError("objects", f"too many objects for {containers} containers at "
                             f"fill {fill}", objects)
        host[o] = c
        load[c] += cpu[o]
    return cpu, mem, cpu_cap, mem_cap, host


def _names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(count)]


def _scenario(name: str, cpu: np.ndarray, mem: np.ndarray, cpu_cap: np.ndarray,
              mem_cap: np.ndarray, host: np.ndarray) -> dict[str, Any]:
    """The universe part of a scenario dict (objects ``task<k>``, hosts ``host<c>``)."""
    tasks = _names("task", len(cpu))
    hosts = _names("host", len(cpu_cap))
    by_host = np.argsort(host, kind="stable")
    cuts = np.cumsum(np.bincount(host, minlength=len(hosts)))[:-1]
    assignment = {h: [tasks[o] for o in group.tolist()]
                  for h, group in zip(hosts, np.split(by_host, cuts))}
    return {
        "name": name, "objectName": "task", "containerName": "host",
        "assignment": assignment,
        "objectDimensions": {"cpu": dict(zip(tasks, cpu.tolist())),
                             "mem": dict(zip(tasks, mem.tolist()))},
        "containerDimensions": {"cpu": dict(zip(hosts, cpu_cap.tolist())),
                                "mem": dict(zip(hosts, mem_cap.tolist()))},
    }


def _cpu_capacity() -> list[dict[str, Any]]:
    """The HARD cpu Capacity of every family (the wheel needs its explicit scope)."""
    return [{"spec": {"capacitySpec": {"name": "cpu_capacity", "scope": "host",
                                       "dimension": "cpu"}}, "policy": "HARD"}]


def _pack_out(cpu: np.ndarray, host: np.ndarray, cpu_cap: np.ndarray,
              drained: list[int]) -> np.ndarray | None:
    """A final host per object that empties ``drained``, moving only their objects (largest
    first, each into the first other host with room), or None when this packing fails."""
    room = cpu_cap - np.bincount(host, cpu, len(cpu_cap))
    room[drained] = -np.inf
    final = host.copy()
    moving = np.flatnonzero(np.isin(host, drained))
    for o in moving[np.argsort(-cpu[moving], kind="stable")]:
        fits = room >= cpu[o]
        if not fits.any():
            return None
        c = int(np.argmax(fits))
        final[o] = c
        room[c] -= cpu[o]
    return final


def _drain_instance(objects: int, containers: int, rng: np.random.Generator) -> dict[str, Any]:
    cpu, mem, cpu_cap, mem_cap, host = _cluster(rng, objects, containers, np.asarray(FLAVOURS))
    wanted = max(1, round(DRAIN_SHARE * containers))
    load = np.bincount(host, cpu, containers)
    candidates = np.concatenate([rng.permutation(np.flatnonzero(load > 0)),
                                 np.flatnonzero(load == 0)])
    drained: list[int] = []
    for c in candidates.tolist():  # an empty host always drains, so at least one is chosen
        if len(drained) == wanted:
            break
        if _pack_out(cpu, host, cpu_cap, drained + [c]) is not None:
            drained.append(c)
    data = _scenario(f"drain_{objects}x{containers}", cpu, mem, cpu_cap, mem_cap, host)
    data["goals"] = [
        {"spec": {"toFreeSpec": {"name": "drain", "containers": [f"host{c}" for c in drained]}}},
        {"boundary": True},
        {"spec": {"utilIncreaseCostSpec": {"name": "fill_cost", "scope": "host",
                                           "dimension": "cpu", "squares": True}}},
    ]
    data["constraints"] = _cpu_capacity()
    return data


def drain_plan(data: dict[str, Any]) -> dict[str, list[str]] | None:
    """For a ``drain`` instance: an assignment that empties the hosts of its ToFree goal and
    keeps every host's cpu within capacity (the packing the generator checked), or None."""
    hosts = list(data["assignment"])
    where = {o: c for c, objs in enumerate(data["assignment"].values()) for o in objs}
    tasks = list(where)
    cpu = np.asarray([data["objectDimensions"]["cpu"][o] for o in tasks], dtype=float)
    cap = np.asarray([data["containerDimensions"]["cpu"][h] for h in hosts], dtype=float)
    drain = next(g["spec"]["toFreeSpec"] for g in data["goals"]
                 if "toFreeSpec" in g.get("spec", {}))
    final = _pack_out(cpu, np.asarray([where[o] for o in tasks]), cap,
                      [hosts.index(h) for h in drain["containers"]])
    if final is None:
        return None
    plan: dict[str, list[str]] = {h: [] for h in hosts}
    for o, c in zip(tasks, final.tolist()):
        plan[hosts[c]].append(o)
    return plan


def _rack_layout(containers: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """(rack index per host, number of racks): racks of 10-20 hosts in a random order (a
    short last rack joins the one before; two racks below 20 hosts)."""
    if containers < 20:
        sizes = [containers] if containers < 2 else [containers // 2, containers - containers // 2]
    else:
        sizes = []
        while sum(sizes) < containers:
            sizes.append(int(rng.integers(10, 21)))
        sizes[-1] -= sum(sizes) - containers
        if sizes[-1] < 10 and len(sizes) > 1:  # a short last rack joins the one before
            short = sizes.pop()
            sizes[-1] += short
    return np.repeat(np.arange(len(sizes)), sizes)[rng.permutation(containers)], len(sizes)


def _add_racks(data: dict[str, Any], rack: np.ndarray, count: int, cpu_cap: np.ndarray,
               mem_cap: np.ndarray) -> None:
    """The scope "rack" (``rack``: index per host) with capacities the sums of its hosts'."""
    racks = _names("rack", count)
    data["scopes"] = {"rack": {f"host{c}": racks[r] for c, r in enumerate(rack.tolist())}}
    data["scopeDimensions"] = {"rack": {
        "cpu": dict(zip(racks, np.bincount(rack, cpu_cap, count).tolist())),
        "mem": dict(zip(racks, np.bincount(rack, mem_cap, count).tolist()))}}


def _racks_instance(objects: int, containers: int, rng: np.random.Generator) -> dict[str, Any]:
    cpu, mem, cpu_cap, mem_cap, host = _cluster(rng, objects, containers, np.asarray(FLAVOURS))
    rack, count = _rack_layout(containers, rng)
    data = _scenario(f"racks_{objects}x{containers}", cpu, mem, cpu_cap, mem_cap, host)
    _add_racks(data, rack, count, cpu_cap, mem_cap)
    data["goals"] = [
        {"spec": {"balanceSpec": {"name": "balance_racks", "scope": "rack",
                                  "dimension": "cpu", "formula": "LINEAR"}}},
        {"boundary": True},
        {"spec": {"balanceSpec": {"name": "balance_hosts", "scope": "host",
                                  "dimension": "cpu", "formula": "LINEAR"}}},
        {"boundary": True},
        {"spec": {"minimizeMovementSpec": {"name": "moves", "scope": "host",
                                           "doNotNormalize": True}}},
    ]
    data["constraints"] = _cpu_capacity()
    return data


def _million_instance(objects: int, containers: int,
                      rng: np.random.Generator) -> dict[str, Any]:
    cpu, mem, cpu_cap, mem_cap, host = _cluster(rng, objects, containers, MILLION_FLAVOURS)
    data = _scenario(f"million_{objects}x{containers}", cpu, mem, cpu_cap, mem_cap, host)
    data["goals"] = [
        {"spec": {"balanceSpec": {"name": "balance_cpu", "scope": "host", "dimension": "cpu",
                                  "formula": "LINEAR"}}},
        {"boundary": True},
        {"spec": {"minimizeMovementSpec": {"name": "moves", "scope": "host",
                                           "doNotNormalize": True}}},
    ]
    data["constraints"] = _cpu_capacity()
    return data


REPLICAS_PER_JOB = (2, 5)  # inclusive range of a job's replicas


def _jobs(objects: int, rng: np.random.Generator) -> np.ndarray:
    """Job sizes of 2-5 replicas summing to ``objects`` (the last job may be shorter)."""
    low, high = REPLICAS_PER_JOB
    sizes = rng.integers(low, high + 1, size=objects // low + 1)
    ends = np.cumsum(sizes)
    count = int(np.searchsorted(ends, objects)) + 1
    sizes = sizes[:count]
    sizes[-1] -= int(ends[count - 1]) - objects
    return sizes


def _replicas_instance(objects: int, containers: int,
                       rng: np.random.Generator) -> dict[str, Any]:
    sizes = _jobs(objects, rng)
    job = np.repeat(np.arange(len(sizes)), sizes)  # replicas of a job share its flavour
    pick = rng.integers(0, len(FLAVOURS), size=len(sizes))[job]
    cpu, mem, cpu_cap, mem_cap, host = _cluster(rng, objects, containers,
                                                np.asarray(FLAVOURS), pick=pick)
    rack, count = _rack_layout(containers, rng)
    data = _scenario(f"replicas_{objects}x{containers}", cpu, mem, cpu_cap, mem_cap, host)
    _add_racks(data, rack, count, cpu_cap, mem_cap)
    jobs = _names("job", len(sizes))
    tasks = _names("task", objects)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()
    data["partitions"] = {"job": {j: tasks[s:s + n] for j, s, n in
                                  zip(jobs, starts, sizes.tolist())}}
    diversity = max(1, round(0.5 * len(jobs) / count))
    data["goals"] = [
        {"spec": {"groupDiversitySpec": {"name": "jobs_per_rack", "scope": "rack",
                                         "partition": "job", "dimension": "task_count",
                                         "bound": "MIN",
                                         "limit": {"globalLimit": diversity}}}},
        {"boundary": True},
        {"spec": {"balanceSpec": {"name": "balance_hosts", "scope": "host",
                                  "dimension": "cpu", "formula": "LINEAR"}}},
        {"boundary": True},
        {"spec": {"minimizeMovementSpec": {"name": "moves", "scope": "host",
                                           "doNotNormalize": True}}},
    ]
    move_limits = {j: max(1, n - 1) for j, n in zip(jobs, sizes.tolist())}
    data["constraints"] = _cpu_capacity() + [
        {"spec": {"groupMoveLimitSpec": {"name": "job_moves", "partitionName": "job",
                                         "limit": {"type": "ABSOLUTE", "globalLimit": 1,
                                                   "groupLimits": move_limits}}},
         "policy": "HARD"}]
    return data


# the generators a study may name (``base: {generator: NAME, args: {...}}``); plugins add
# theirs under the entry point group ``cpsat_rebalancer.generators``
GENERATORS: dict[str, Callable[..., dict[str, Any]]] = {
    "balance_instance": balance_instance, "drain_cluster": drain_cluster,
    "random_scenario": random_scenario, "scale_instance": scale_instance}
