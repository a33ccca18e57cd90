"""The scenario dict of a drawn shape at a size: sizes, capacities, start, scopes and the
body of every drawn spec."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import InputError
from .draw import (
    FLAVOUR_UNITS,
    GROUP_ARMS,
    HOT_RACKS,
    LEVELS,
    PARTITION,
    SHORT,
    Shape,
    SpecDraw,
    describe_shape,
    draw_shape,
)


def _decimal(units: int, exponent: int) -> float:
    """``units·10**exponent`` as the double nearest to that decimal (as a file would hold)."""
    return float(f"{int(units)}e{exponent}")


def _significant(value: float, digits: int, magnitude: int = 0) -> float:
    """``value·10**magnitude`` rounded to ``digits`` significant digits."""
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return float(f"{mantissa}e{int(exponent) + magnitude}")


def _base_sizes(rng: np.random.Generator, shape: Shape, n: int,
                room: float) -> np.ndarray:
    """Sizes near 1 (before the magnitude); a heavy tail is cut at half the mean host's
    ``room`` (its capacity at the drawn utilization), so that every object fits a host."""
    if shape.sizes == "flavours":
        units = rng.choice(FLAVOUR_UNITS, size=int(rng.integers(2, 9)), replace=False)
        weights = rng.dirichlet(np.ones(len(units)))
        return units[rng.choice(len(units), size=n, p=weights)].astype(float)
    if shape.sizes == "integers":
        return rng.integers(1, 1001, size=n).astype(float)
    if shape.sizes == "decimals":
        return rng.uniform(0.05, 10.0, size=n)
    raw = (rng.pareto(rng.uniform(1.1, 2.0), size=n) + 1.0 if shape.tail == "pareto"
           else rng.lognormal(0.0, rng.uniform(1.0, 2.0), size=n))
    for _ in range(8):  # the cut lowers the mean, which lowers the cut: a few rounds settle
        raw = np.minimum(raw, 0.5 * raw.sum() * room)
    return raw


def _scaled(shape: Shape, base: np.ndarray, shift: int, ceil: bool = False) -> list[float]:
    """Sizes or capacities at the shape's precision, times ``10**(magnitude - shift)``
    (``ceil``: rounded up)."""
    magnitude, precision = shape.magnitude - shift, shape.precision
    if precision is None:
        return (base * 10.0 ** magnitude).tolist()
    if shape.sizes == "heavy-tail":
        return [_significant(v * (1 + 5.0 * 10.0 ** -precision if ceil else 1), precision,
                             magnitude)
                for v in base.tolist()]
    scaled = base * 10.0 ** precision
    units = np.ceil(scaled - 1e-9) if ceil else np.maximum(1, np.round(scaled))
    return [_decimal(u, magnitude - precision) for u in units.tolist()]


def _capacities(rng: np.random.Generator, shape: Shape, m: int) -> np.ndarray:
    """Each host's capacity relative to the others (the mean is 1)."""
    if shape.capacities == "equal":
        ratio = np.ones(m)
    elif shape.capacities == "two":
        big = np.zeros(m, dtype=bool)
        if m > 1:
            count = max(1, min(m - 1, round(rng.uniform(0.2, 0.5) * m)))
            big[rng.choice(m, size=count, replace=False)] = True
        ratio = np.where(big, shape.big_ratio, 1.0)
    else:
        ratio = rng.uniform(0.5, 2.0, size=m)
    return ratio / ratio.mean()


def _start(rng: np.random.Generator, shape: Shape, sizes: np.ndarray,
           caps: np.ndarray, rack: np.ndarray) -> np.ndarray:
    """Initial host of each object. ``sizes`` and ``caps`` are (objects, 2) and (hosts, 2):
    cpu and mem; ``rack`` is each host's rack. Skewed: hosts filled in a random order up to
    95% (next fit); hot racks: the hosts of a random 30% of the racks filled so first, the
    rest random; over-capacity: the smallest hosts first, each until its cpu passes
    105-130% of its capacity; random: a random host with room. What is left goes where the
    most room is."""
    n, m = len(sizes), len(caps)
    host = np.full(n, -1)
    load = np.zeros((m, 2))
    order = rng.permutation(n).tolist()
    hosts = rng.permutation(m)
    left: list[int] = []
    if shape.start == "hot-racks":
        racks = int(rack.max()) + 1
        hot = rng.permutation(racks)[:max(1, round(HOT_RACKS * racks))]
        hot_hosts = hosts[np.isin(rack[hosts], hot)]
        order = _fill_next_fit(order, hot_hosts, sizes, caps, host, load)
        allowed = ~np.isin(rack, hot)
        for o in order:
            fits = np.flatnonzero(allowed & ((load + sizes[o]) <= caps).all(axis=1))
            if not len(fits):
                left.append(o)
                continue
            host[o] = c = int(rng.choice(fits))
            load[c] += sizes[o]
    elif shape.start == "random":
        for o in order:
            fits = np.flatnonzero(((load + sizes[o]) <= caps).all(axis=1))
            if not len(fits):
                left.append(o)
                continue
            host[o] = c = int(rng.choice(fits))
            load[c] += sizes[o]
    elif shape.start == "skewed":
        left = _fill_next_fit(order, hosts, sizes, caps, host, load)
    else:  # over capacity
        hosts = hosts[np.argsort(caps[hosts, 0], kind="stable")]
        over = rng.uniform(1.05, 1.3)
        k = 0
        for o in order:
            while k < m - 1 and load[hosts[k], 0] > over * caps[hosts[k], 0]:
                k += 1
            host[o] = hosts[k]
            load[hosts[k]] += sizes[o]
    for o in left:
        c = int(np.argmax((1 - load / np.maximum(caps, 1e-300)).min(axis=1)))
        host[o] = c
        load[c] += sizes[o]
    return host


def _fill_next_fit(order: list[int], hosts: np.ndarray, sizes: np.ndarray, caps: np.ndarray,
                   host: np.ndarray, load: np.ndarray) -> list[int]:
    """Objects in ``order`` onto ``hosts`` in their order, each host up to 95% of both
    dimensions (next fit; ``host`` and ``load`` updated); the objects that did not fit."""
    left: list[int] = []
    k = 0
    for o in order:
        while k < len(hosts) and ((load[hosts[k]] + sizes[o]) > 0.95 * caps[hosts[k]]).any():
            k += 1
        if k == len(hosts):
            left.append(o)
            continue
        host[o] = hosts[k]
        load[hosts[k]] += sizes[o]
    return left


def _check_size(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(name, "expected a positive integer", value)


def random_shape_scenario(objects: int, containers: int, seed: int) -> dict[str, Any]:
    """The scenario dict of seed ``seed``'s shape (:func:`draw_shape`) with ``objects``
    objects on ``containers`` hosts; deterministic in its arguments. Its ``description`` is
    the shape's line (:func:`describe_shape`)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError("seed", "expected an integer", seed)
    return shape_scenario(draw_shape(seed), objects, containers)


def shape_scenario(shape: Shape, objects: int, containers: int) -> dict[str, Any]:
    """The scenario dict of ``shape`` (drawn, or built by hand as in :mod:`.reported`) with
    ``objects`` objects on ``containers`` hosts; deterministic in its arguments."""
    _check_size("objects", objects)
    _check_size("containers", containers)
    return _Builder(shape, objects, containers).scenario()


class _Builder:
    """Builds one scenario of a shape at a size."""

    def __init__(self, shape: Shape, objects: int, containers: int) -> None:
        self.shape = shape
        self.rng = np.random.default_rng([seed_key(shape.seed), objects, containers])
        self.n, self.m = objects, containers
        self.tasks = [f"task{k}" for k in range(objects)]
        self.hosts = [f"host{k}" for k in range(containers)]
        self._universe()

    def _universe(self) -> None:
        shape, rng, n, m = self.shape, self.rng, self.n, self.m
        ratio = _capacities(rng, shape, m)
        room = 1.0 / (shape.utilization * m)  # the mean host's capacity per unit of size
        base = np.column_stack([_base_sizes(rng, shape, n, room) for _ in range(2)])
        base[:, 1] *= 4  # mem: four times cpu, on average
        total = base.sum(axis=0)
        utilization = np.array([shape.utilization, 0.8 * shape.utilization])
        mean_cap = total / (utilization * m)
        # every object fits the biggest host's 95%, whatever the size
        mean_cap = np.maximum(mean_cap, base.max(axis=0) / (0.95 * ratio.max()))
        # the magnitude is the median object's order: a median base size of 1-10 is kept
        shift = np.floor(np.log10(np.median(base, axis=0))).astype(int).tolist()
        cpu = _scaled(shape, base[:, 0], shift[0])
        mem = _scaled(shape, base[:, 1], shift[1])
        cap_cpu = _scaled(shape, ratio * mean_cap[0], shift[0], ceil=True)
        cap_mem = _scaled(shape, ratio * mean_cap[1], shift[1], ceil=True)
        self.cpu, self.mem = np.asarray(cpu), np.asarray(mem)
        self.cap = {"cpu": np.asarray(cap_cpu), "mem": np.asarray(cap_mem)}
        self.size = {"cpu": self.cpu, "mem": self.mem, "task_count": np.ones(n)}
        # scopes: consecutive hosts in racks, consecutive racks in rows (at least two of each)
        rack_size = max(1, min(shape.rack_size, math.ceil(m / 2)))
        self.rack = np.arange(m) // rack_size
        self.host = _start(rng, shape, np.column_stack([cpu, mem]),
                           np.column_stack([cap_cpu, cap_mem]), self.rack)
        racks = int(self.rack.max()) + 1
        per_row = max(1, min(shape.racks_per_row, math.ceil(racks / 2)))
        self.row = self.rack // per_row
        self.items = {"host": self.hosts,
                      "rack": [f"rack{k}" for k in range(racks)],
                      "row": [f"row{k}" for k in range(int(self.row.max()) + 1)]}
        self.item_of = {"host": np.arange(m), "rack": self.rack, "row": self.row}

    def item_capacity(self, scope: str, dimension: str) -> np.ndarray:
        if dimension == "task_count":
            return np.ones(len(self.items[scope]))
        return np.bincount(self.item_of[scope], self.cap[dimension], len(self.items[scope]))

    def scenario(self) -> dict[str, Any]:
        shape = self.shape
        assignment: dict[str, list[str]] = {h: [] for h in self.hosts}
        for task, c in zip(self.tasks, self.host.tolist()):
            assignment[self.hosts[c]].append(task)
        data: dict[str, Any] = {
            "name": f"shape_{shape.seed}_{self.n}x{self.m}",
            "description": describe_shape(shape),
            "objectName": "task", "containerName": "host",
            "assignment": assignment,
            "objectDimensions": {"cpu": dict(zip(self.tasks, self.cpu.tolist())),
                                 "mem": dict(zip(self.tasks, self.mem.tolist()))},
            "containerDimensions": {d: dict(zip(self.hosts, self.cap[d].tolist()))
                                    for d in ("cpu", "mem")},
        }
        if shape.levels > 1:
            scopes = LEVELS[1:shape.levels]
            data["scopes"] = {s: {h: self.items[s][i] for h, i in
                                  zip(self.hosts, self.item_of[s].tolist())} for s in scopes}
            data["scopeDimensions"] = {s: {d: dict(zip(self.items[s],
                                                       self.item_capacity(s, d).tolist()))
                                           for d in ("cpu", "mem")} for s in scopes}
        if shape.groups:
            self.jobs = self.partition()
            data["partitions"] = {PARTITION: self.jobs}
        goals, constraints = [], []
        for k, spec in enumerate(shape.specs):
            body = {"name": f"{SHORT[spec.arm]}{k}", **self.body(spec)}
            entry: dict[str, Any] = {"spec": {spec.arm: body}}
            if spec.role == "goal":
                entry["tuplePos"] = spec.position
                if spec.weight != 1:
                    entry["weight"] = spec.weight
                goals.append(entry)
            else:
                entry["policy"] = spec.policy
                if spec.position:
                    entry["tuplePosIfBroken"] = spec.position
                constraints.append(entry)
        data.update(goals=goals, constraints=constraints,
                    constraintPolicy=shape.constraint_policy)
        return data

    def partition(self) -> dict[str, list[str]]:
        """Jobs of 2 to 12 objects (at most half the hosts), about 85% of the objects."""
        largest = max(2, min(12, self.m // 2))
        order = self.rng.permutation(self.n).tolist()
        jobs: dict[str, list[str]] = {}
        k = 0
        while k < max(1, round(0.85 * self.n)):
            size = int(self.rng.integers(2, largest + 1))
            jobs[f"job{len(jobs)}"] = [self.tasks[o] for o in order[k:k + size]]
            k += size
        disjoint = any("_ubound" in s.options for s in self.shape.specs)
        if self.shape.overlap and not disjoint:
            # a utilizationBound needs disjoint jobs (as in Rebalancer); else some objects
            # join a second job
            rng = np.random.default_rng([seed_key(self.shape.seed), self.n, self.m, 1])
            names = list(jobs)
            for task in self.tasks:
                if len(names) > 1 and rng.random() < 0.1:
                    job = names[int(rng.integers(len(names)))]
                    if task not in jobs[job]:
                        jobs[job].append(task)
        return jobs

    def utilization_bound(self, o: dict[str, Any]) -> dict[str, Any]:
        """A GroupUtilizationBound on the jobs: a default bound of a share of the mean
        item's capacity, or (UPPER only) a bound on a few jobs, the rest unbounded."""
        drawn = o["_ubound"]
        mean = float(self.item_capacity(o["scope"], o["dimension"]).mean())
        if drawn["_default"] is not None:
            values: dict[str, Any] = {"isDefaultLimitUnbounded": False,
                                      "globalLimit": _significant(drawn["_default"] * mean, 3)}
        else:
            jobs = list(self.jobs)  # set by scenario() before the specs are built
            values = {"groupLimits": {job: _significant(0.01 * mean, 3)
                                      for job in self.sample(jobs, 0.3)}}
        return {"partitionName": PARTITION, "boundType": drawn["boundType"],
                "perGroupValues": values}

    def sample(self, names: list[str], share: float, most: int | None = None) -> list[str]:
        """A share of ``names`` (at least one, at most ``most``), in their order."""
        count = round(share * len(names))
        return self.pick(names, min(len(names) if most is None else most, count))

    def pick(self, names: list[str], count: int) -> list[str]:
        """``count`` of ``names`` (at least one, at most all), in their order."""
        count = max(1, min(len(names), count))
        return [names[k] for k in sorted(self.rng.choice(len(names), count,
                                                         replace=False).tolist())]

    def body(self, spec: SpecDraw) -> dict[str, Any]:
        """The spec's fields: its options, and what depends on the size."""
        o = spec.options
        body = {k: v for k, v in o.items() if not k.startswith("_")}
        arm = spec.arm
        if arm == "toFreeSpec":
            loaded = [self.hosts[c] for c in np.unique(self.host).tolist()]
            pool = loaded if len(loaded) > 1 else self.hosts
            body["containers"] = self.sample(pool, o["_share"], most=max(1, self.m - 1))
        elif arm == "capacitySpec":
            if o["_limit"] == "ABSOLUTE":
                mean = self.item_capacity(o["scope"], o["dimension"]).mean()
                body["limit"] = {"type": "ABSOLUTE",
                                 "globalLimit": _significant(o["_fraction"] * mean, 3)}
            elif o["_fraction"] != 1.0:
                body["limit"] = {"type": "RELATIVE", "globalLimit": o["_fraction"]}
        elif arm == "minimizeMovementSpec" and "_allowance" in o:
            total = float(self.size[o["dimension"]].sum())
            body["allowance"] = (max(1, round(o["_allowance"] * total))
                                 if o["dimension"] == "task_count"
                                 else _significant(o["_allowance"] * total, 3))
        elif arm == "avoidMovingSpec":
            body["objects"] = self.sample(self.tasks, o["_share"])
        elif arm == "disasterRecoveryCapacitySpec":
            chosen = self.pick(self.tasks, o["_primaries"] * (1 + o["_replicas"]))
            step = 1 + o["_replicas"]
            body["primaryToSetOfSecondaryObjects"] = {
                chosen[k]: chosen[k + 1:k + step] for k in range(0, len(chosen) - 1, step)}
            items = self.items[o["scope"]]
            if len(items) > 20:  # at most 10 failure domains: the model grows with their count
                width = -(-len(items) // 10)
                body["sharedDisasterGroups"] = [items[k:k + width]
                                                for k in range(0, len(items), width)]
        elif arm == "capacityWithGroupPresenceSpec":
            body["partition"] = PARTITION
            mean = float(self.size[o["dimension"]].mean())
            body["groupToPresenceWeight"] = {"type": "ABSOLUTE", "globalLimit":
                                             _significant(o["_presence"] * mean, 3)}
            fraction = o["_fraction"] if o["bound"] == "MAX" else 0.05
            if body.get("intent") == "PER_GROUP_AND_SCOPE_ITEM":
                fraction /= 4  # a share of an item per job
            body["scopeItemToLimit"] = {"type": "RELATIVE", "globalLimit": fraction}
        elif arm == "movesInProgressSpec":
            body["moves"] = [{"objName": task, "toContainer": self.pick(self.hosts, 1)[0]}
                             for task in self.sample(self.tasks, o["_share"])]
        elif arm == "nonAcceptingSpec":
            items = self.items[o["scope"]]
            body["items"] = self.pick(items, min(o["_items"], len(items) - 1))
        elif arm == "avoidAssignmentsSpec":
            items = self.items[o["scope"]]
            most = min(o["_items"], len(items) - 1)
            body["assignments"] = [{"object": task, "scopeItems": self.pick(items, most)}
                                   for task in self.sample(self.tasks, o["_share"])]
        elif arm == "groupDiversitySpec":
            body["partition"] = PARTITION
        elif arm in GROUP_ARMS:
            body["partitionName"] = PARTITION
        if "_ubound" in o:
            body["utilizationBound"] = {"groupUtilizationBound": self.utilization_bound(o)}
        elif arm == "minimizeContainersSpec":
            items = self.items[o["scope"]]
            if "_free" in o:
                body["maxFreeLimit"] = max(1, round(o["_free"] * len(items)))
            if o.get("_costs"):
                body["containerCosts"] = {i: float(self.rng.choice([0.5, 2, 3]))
                                          for i in self.sample(items, 0.3)}
        elif arm == "assignmentAffinitiesSpec":
            body["affinities"] = self.affinities(o)
        elif arm == "exclusiveScopeItemsSpec":
            items = self.items[o["scope"]]
            body["conflictInfoList"] = [
                {"scopeItem": a, "conflictingScopeItemsWithOverlap": [
                    {"conflictingScopeItem": b}]}
                for a, b in zip(self.sample(items, o["_pairs"]),
                                self.sample(items, o["_pairs"])) if a != b]
        elif arm == "maximizeAllocationSpec" and "_share" in o:
            body["filter"] = {"itemsWhitelist": self.sample(self.items[o["scope"]],
                                                            o["_share"])}
        return body

    def affinities(self, o: dict[str, Any]) -> list[dict[str, Any]]:
        """1-2 affinities for a share of the objects: integers of the drawn sign (0: mixed)
        from 1 to 10, on random items of the scope."""
        items = self.items[o["scope"]]
        result = []
        for task in self.sample(self.tasks, o["_share"]):
            for item in self.pick(items, int(self.rng.integers(1, 3))):
                value = int(self.rng.integers(1, 11))
                sign = o["_sign"] or int(self.rng.choice([-1, 1]))
                result.append({"objectName": task, "scopeItemName": item,
                               "affinity": float(sign * value)})
        return result


def seed_key(seed: int) -> int:
    """A non-negative key of any integer seed, for numpy's generator."""
    return seed % 2**63

