"""Minimum-capacity and maximum-drain questions: a binary search over one integer parameter,
each probe an ordinary variant with a proof behind its verdict.

For ``find: min`` (the fewest containers of a type) the answer is the smallest value shown
feasible; it is *exact* when the value just below it is proven infeasible (CP-SAT's
INFEASIBLE, or a proven bound above the feasibility threshold). ``find: max`` (the most
containers drained at once) mirrors it. Both assume feasibility is monotone in the parameter:
adding containers of a type, or draining fewer (drain sets are nested), never hurts.
A probe that ends unknown (a solve budget ran out) is skipped, and the answer says so; the
search then narrows only the feasible end (between the unknown value and the best feasible
one), and after ``MAX_UNKNOWN`` unknowns it stops with the bracket it has.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from .study import Search
from .variants import apply, drain_order

MAX_UNKNOWN = 3  # probes a search may leave undecided before it stops


def hard_capacity_shares(data: dict) -> dict[str, float]:
    """Per dimension, the share of each container's capacity a HARD capacitySpec constraint
    allows (container scope, MAX, AFTER, no filter, limit RELATIVE or none): what counting
    bounds and the first-fit hint may rely on. Other capacity constraints are ignored."""
    shares: dict[str, float] = {}
    policy = data.get("constraintPolicy", "DEFAULT")
    container_scope = data.get("containerName", "container")
    for entry in data.get("constraints", []):
        spec = entry.get("spec", {}) if isinstance(entry, dict) else {}
        body = spec.get("capacitySpec")
        if not isinstance(body, dict) or entry.get("policy", policy) != "HARD":
            continue
        if body.get("filter") or body.get("bound", "MAX") != "MAX":
            continue
        if body.get("definition", "AFTER") != "AFTER":
            continue
        if body.get("scope", container_scope) != container_scope:
            continue
        limit = body.get("limit") or {"type": "RELATIVE", "globalLimit": 1.0}
        if limit.get("type", "RELATIVE") != "RELATIVE" or limit.get("scopeItemLimits") \
                or limit.get("isDefaultLimitUnbounded"):
            continue
        dim = body.get("dimension")
        shares[dim] = min(shares.get(dim, math.inf), float(limit.get("globalLimit", 1.0)))
    return shares


def freed_containers(data: dict) -> set[str]:
    """Containers named by any toFreeSpec: empty in every feasible variant."""
    freed: set[str] = set()
    for kind in ("goals", "constraints"):
        for entry in data.get(kind, []):
            spec = entry.get("spec", {}) if isinstance(entry, dict) else {}
            if "toFreeSpec" in spec:
                freed |= set(spec["toFreeSpec"].get("containers", []))
    return freed


def capacity_arrays(data: dict) -> tuple[list[str], list[str], np.ndarray, np.ndarray,
                                          np.ndarray]:
    """Containers, objects, sizes ``[object, dim]``, limits ``[container, dim]`` (share times
    capacity) and each object's container, over the dimensions with a HARD capacity (see
    :func:`hard_capacity_shares`)."""
    shares = hard_capacity_shares(data)
    containers = list(data["assignment"]) + [c for c in data.get("containers", [])
                                             if c not in data["assignment"]]
    objects = [o for c in containers for o in data["assignment"].get(c, [])]
    size = np.zeros((len(objects), len(shares)))
    limit = np.zeros((len(containers), len(shares)))
    for j, (dim, share) in enumerate(shares.items()):
        values = data.get("objectDimensions", {}).get(dim, {})
        default = data.get("objectDimensionDefaults", {}).get(dim, 0.0)
        size[:, j] = [values.get(o, default) for o in objects]
        caps = data.get("containerDimensions", {}).get(dim, {})
        cap_default = data.get("containerDimensionDefaults", {}).get(dim, 1.0)
        limit[:, j] = [share * caps.get(c, cap_default) for c in containers]
    index = {c: i for i, c in enumerate(containers)}
    where = np.asarray([index[c] for c in containers for _ in data["assignment"].get(c, [])],
                       dtype=np.int64)
    return containers, objects, size, limit, where


def fits_somewhere(size: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """Per object, whether it fits alone into any of the containers ``limit`` describes."""
    found = np.zeros(len(size), dtype=bool)
    for start in range(0, len(size), 256):  # chunks bound the memory of the comparison
        block = size[start:start + 256]
        found[start:start + 256] = (block[:, None, :] <= limit[None, :, :] + 1e-9
                                    ).all(axis=2).any(axis=1)
    return found


def restricted_objects(data: dict, scope: str, item: str) -> list[str]:
    """Objects that fit alone into no container outside SCOPE's ITEM (toFreeSpec containers
    count as none): in a feasible variant they are all on ITEM's containers."""
    mapping = data.get("scopes", {}).get(scope, {})
    containers, objects, size, limit, _ = capacity_arrays(data)
    freed = freed_containers(data)
    outside = [i for i, c in enumerate(containers) if mapping.get(c) != item and c not in freed]
    elsewhere = fits_somewhere(size, limit[outside])
    return [o for o, ok in zip(objects, elsewhere) if not ok]


def counting_bound(data: dict, scope: str, item: str) -> int:
    """A valid lower bound on the containers of SCOPE's ITEM, counted as the containers:
    values map to (the first k listed, then copies of the first, as ``containers.SCOPE.ITEM``
    adds them). Per dimension with a HARD capacity (see :func:`hard_capacity_shares`), ITEM's
    first k containers must hold both the demand the other containers cannot hold and the
    demand of the objects that fit into no other container (:func:`restricted_objects`).
    Containers listed in any toFreeSpec end empty when the variant is feasible, so they hold
    nothing here."""
    mapping = data.get("scopes", {}).get(scope, {})
    containers, objects, size, limit, _ = capacity_arrays(data)
    if not containers or not size.shape[1]:
        return 0
    freed = freed_containers(data)
    member = np.asarray([mapping.get(c) == item for c in containers])
    held = np.asarray([c not in freed for c in containers])
    demand = size.sum(axis=0)
    others = limit[~member & held].sum(axis=0)
    restricted = set(restricted_objects(data, scope, item))
    need = np.maximum(demand - others, size[[o in restricted for o in objects]].sum(axis=0))
    own = limit[member]
    if not len(own):
        return 0
    prefix = np.cumsum(own, axis=0)  # capacity of the first k members, k = 1..n
    bound = 0
    for j in np.flatnonzero(need > 1e-9):
        reached = np.flatnonzero(prefix[:, j] >= need[j] - 1e-9)
        if reached.size:
            bound = max(bound, int(reached[0]) + 1)
        elif own[0, j] > 0:  # beyond the listed ones: copies of the first
            bound = max(bound, len(own) + math.ceil((need[j] - prefix[-1, j]) / own[0, j]
                                                    - 1e-9))
    return bound


def drain_bound(data: dict, kind: str, option: str) -> int:
    """The fewest containers (taken in drain.KIND.OPTION's order) whose drain is infeasible
    by counting alone: the demand exceeds what the others may hold in some dimension with a
    HARD capacity (the container count when no such wave exists)."""
    order = drain_order(data, kind, option)
    freed = freed_containers(data)
    bound = len(order)
    for dim, share in hard_capacity_shares(data).items():
        sizes = data.get("objectDimensions", {}).get(dim, {})
        default = data.get("objectDimensionDefaults", {}).get(dim, 0.0)
        demand = sum(sizes.get(o, default) for objs in data["assignment"].values()
                     for o in objs)
        caps = data.get("containerDimensions", {}).get(dim, {})
        cap_default = data.get("containerDimensionDefaults", {}).get(dim, 1.0)
        held = np.asarray([0.0 if c in freed else share * caps.get(c, cap_default)
                           for c in order])
        room = held.sum() - np.concatenate([[0.0], np.cumsum(held)])  # after draining k
        over = np.flatnonzero(demand > room + 1e-9)
        if over.size:
            bound = min(bound, int(over[0]))
    return bound


@dataclass
class SearchState:
    search: Search
    point: dict[str, Any]
    group: str
    low: int
    high: int
    counting: int | None = None
    verdicts: dict[int, str] = field(default_factory=dict)
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)

    @property
    def good(self) -> list[int]:
        return sorted(v for v, s in self.verdicts.items() if s == "feasible")

    @property
    def bad(self) -> list[int]:
        return sorted(v for v, s in self.verdicts.items() if s == "infeasible")

    def bracket(self) -> tuple[int | None, int | None]:
        """(feasible end, infeasible end): for min, the smallest feasible and the largest
        infeasible below it; for max, the largest feasible and the smallest infeasible."""
        good, bad = self.good, self.bad
        if self.search.find == "min":
            best = good[0] if good else None
            below = [v for v in bad if best is None or v < best]
            return best, (below[-1] if below else None)
        best = good[-1] if good else None
        above = [v for v in bad if best is None or v > best]
        return best, (above[0] if above else None)

    def most_probes(self) -> int:
        """At most how many probes the search takes (for a progress total known at the
        start): past its first two (the easy end, then the edge below ``low`` or the high
        end), each probe takes the middle of the values left inside the bracket, all of
        them untried, so it at least halves them; they lie within 0..``high`` (a min
        search whose edge turns out feasible goes below ``low``) or ``low``..``high``."""
        if self.search.find == "min":
            values, inside = self.high + 1, self.high
        else:
            values, inside = self.high - self.low + 1, self.high - self.low
        return max(1, min(values, 2 + max(inside, 0).bit_length()))

    def next_probe(self) -> int | None:
        """The next value to try, or None when the search is over."""
        find_min = self.search.find == "min"
        if sum(v == "unknown" for v in self.verdicts.values()) >= MAX_UNKNOWN:
            return None  # the solve budget is too small here; say so rather than grind on
        first = self.high if find_min else self.low  # where feasibility must hold first
        if first not in self.verdicts:
            return first
        if self.verdicts[first] != "feasible":
            return None  # infeasible (or unknown) even at the easy end
        best, worst = self.bracket()
        unknown = [v for v, x in self.verdicts.items() if x == "unknown"]
        # past an unknown probe the search goes on towards the feasible end only: it can
        # still narrow the answer there, while the other side wants proofs it could not get
        if find_min:
            edge = self.low - 1  # below the counting bound: proven by its probe
            if edge >= 0 and edge not in self.verdicts:
                return edge
            lo = max([worst if worst is not None else -1]
                     + [v for v in unknown if best is None or v < best])
            hi = best
        else:
            if self.high not in self.verdicts:
                return self.high
            lo = best
            hi = min([worst if worst is not None else self.high + 1]
                     + [v for v in unknown if best is None or v > best])
        candidates = [v for v in range(lo + 1, hi) if v not in self.verdicts]
        if not candidates:
            return None
        middle = (lo + hi) / 2
        return min(candidates, key=lambda v: (abs(v - middle), v))

    def record(self, value: int, row: dict[str, Any]) -> None:
        self.verdicts[value] = row.get("verdict", "unknown")
        self.rows[value] = row

    def answer(self) -> dict[str, Any]:
        best, worst = self.bracket()
        s = self.search
        unknown = sorted(v for v, x in self.verdicts.items() if x == "unknown")
        if s.find == "min":
            exact = best is not None and (best == 0 or worst == best - 1)
        else:
            exact = best is not None and (worst == best + 1 or best == self.high)
        row = {"search": s.name, "group": self.group, "parameter": s.parameter, "find": s.find,
               "answer": best, "exact": bool(exact),
               "proven_infeasible": worst, "counting_bound": self.counting,
               "low": self.low, "high": self.high, "probes": len(self.verdicts),
               "unknown_probes": ",".join(map(str, unknown)) or None,
               "steps": "; ".join(f"{v}:{self.verdicts[v]}" for v in sorted(self.verdicts))}
        row.update({f"param.{k}": v if not isinstance(v, list | dict) else str(v)
                    for k, v in self.point.items()})
        if best is not None:
            at = self.rows[best]
            for key in ("moves", "status", "key", "value.0", "value.1"):
                if key in at:
                    row[f"answer_{key.replace('.', '')}"] = at[key]
        return row


def start(search: Search, point: dict[str, Any], base: dict[str, Any], group: str
          ) -> SearchState:
    """Resolve ``low``/``high`` against the grid point's scenario."""
    data, _ = apply(base, point)
    parts = search.parameter.split(".")
    counting = None
    if parts[0] == "containers":
        scope, item = parts[1], parts[2]
        members = [c for c, i in data.get("scopes", {}).get(scope, {}).items() if i == item]
        if not members:
            raise InputError(f"searches.{search.name}.parameter",
                             f"no container of scope {scope} is in item {item}", item)
        counting = counting_bound(data, scope, item)
        high = len(members) if search.high == "all" else int(search.high)
        low = counting if search.low == "counting" else int(search.low)
    else:
        total = len(data["assignment"]) + len([c for c in data.get("containers", [])
                                               if c not in data["assignment"]])
        counting = drain_bound(data, parts[1], parts[2])
        high = counting if search.high == "counting" else (
            total if search.high is None else min(int(search.high), total))
        low = int(search.low)
    low = min(low, high)
    return SearchState(search, point, group, low, high, counting)
