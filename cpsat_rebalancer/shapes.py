"""Scenarios of a random shape, for the robustness benchmark (``benchmarks/robustness.py``).

An engine tuned on its own generator fails on shapes it never saw, so here the *shape* of a
scenario is drawn too. :func:`draw_shape` draws it from the seed alone (the same shape at
every size): which specs, from every spec type the project implements, each as a goal or a
constraint where both are allowed and under which policy (DEFAULT, HARD, SOFT), with their
main options (Balance formula, bound type and definition; UtilIncreaseCost linear or squares
and its lowerBound; ToFree as a goal or a constraint; ...); scopes of 1 to 3 levels (host <
rack < row, racks of 3-30 hosts); object sizes from a few flavours, many distinct integers
(1-1000 units of a power of ten), decimals (1-3 places or full doubles) or a heavy tail
(Pareto or lognormal), the median object at a magnitude from 1e-3 to 1e12; equal, two
or many distinct capacities; a skewed, random or over-capacity start; a utilization of
40-95%; with or without a movement goal; a partition of the objects into jobs when a group
spec is drawn. :func:`random_shape_scenario` builds the scenario dict of a seed's shape at
a size, and :func:`describe_shape` says a shape in one short line.

Every drawn scenario parses (``tests/test_shapes.py`` checks 200 seeds and counts that every
option is drawn); none is promised feasible: a HARD rule may make it infeasible, and an
over-capacity start breaks the Capacity it is drawn with.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .errors import InputError

SPEC_ARMS = ("balanceSpec", "utilIncreaseCostSpec", "capacitySpec", "toFreeSpec",
             "minimizeMovementSpec", "avoidMovingSpec", "nonAcceptingSpec",
             "avoidAssignmentsSpec", "groupCountSpec", "colocateGroupsSpec",
             "minimizeContainersSpec", "assignmentAffinitiesSpec", "maximizeAllocationSpec",
             "groupDiversitySpec", "groupMoveLimitSpec", "exclusiveScopeItemsSpec",
             "movesInProgressSpec", "capacityWithGroupPresenceSpec",
             "disasterRecoveryCapacitySpec")
# (arm, relative weight of the draw)
GOAL_ARMS = (("balanceSpec", 6), ("utilIncreaseCostSpec", 2), ("capacitySpec", 2),
             ("toFreeSpec", 2), ("minimizeMovementSpec", 1), ("groupCountSpec", 2),
             ("colocateGroupsSpec", 2), ("minimizeContainersSpec", 2),
             ("assignmentAffinitiesSpec", 2), ("maximizeAllocationSpec", 1),
             ("groupDiversitySpec", 2), ("exclusiveScopeItemsSpec", 1),
             ("capacityWithGroupPresenceSpec", 1), ("disasterRecoveryCapacitySpec", 1))
CONSTRAINT_ARMS = (("capacitySpec", 5), ("toFreeSpec", 2), ("minimizeMovementSpec", 2),
                   ("avoidMovingSpec", 2), ("nonAcceptingSpec", 2), ("avoidAssignmentsSpec", 2),
                   ("groupCountSpec", 2), ("colocateGroupsSpec", 2), ("groupDiversitySpec", 2),
                   ("groupMoveLimitSpec", 2), ("exclusiveScopeItemsSpec", 1),
                   ("movesInProgressSpec", 2), ("capacityWithGroupPresenceSpec", 2),
                   ("disasterRecoveryCapacitySpec", 1))
GROUP_ARMS = ("groupCountSpec", "colocateGroupsSpec", "groupDiversitySpec",
              "groupMoveLimitSpec", "capacityWithGroupPresenceSpec")
# group specs that take each object in one group at most (specs.common.group_of)
DISJOINT_GROUP_ARMS = ("groupDiversitySpec", "capacityWithGroupPresenceSpec",
                       "exclusiveScopeItemsSpec", "groupMoveLimitSpec")
POLICIES = ("DEFAULT", "HARD", "SOFT")
BALANCE_FORMULAS = ("LINEAR", "SQUARES", "MAX", "IDEAL", "RELATIVE_UTIL_VARIANCE")
BOUND_TYPES = ("RELATIVE", "ABSOLUTE", "RELATIVE_UTIL")
BALANCE_DEFINITIONS = ("AFTER", "DURING", "NEW", "OLD")
CAPACITY_DEFINITIONS = ("AFTER", "DURING", "NEW", "MOVED_DATA", "DURING_AND_AFTER",
                        "DOUBLE_DURING")
GROUP_DEFINITIONS = ("AFTER", "DURING", "STAYED", "DURING_AND_AFTER")
LEVELS = ("host", "rack", "row")  # scope names, from the containers up
SIZE_KINDS = ("flavours", "integers", "decimals", "heavy-tail")
TAILS = ("pareto", "lognormal")
MAGNITUDES = tuple(range(-3, 13))  # the median object is 10**magnitude to 10**(magnitude+1)
CAPACITY_KINDS = ("equal", "two", "many")
STARTS = ("skewed", "random", "infeasible")
RACK_SIZES = (3, 30)
UTILIZATIONS = (0.40, 0.95)
FLAVOUR_UNITS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64)
PARTITION = "job"

SHORT = {"balanceSpec": "bal", "utilIncreaseCostSpec": "uic", "capacitySpec": "cap",
         "toFreeSpec": "free", "minimizeMovementSpec": "moves", "avoidMovingSpec": "pin",
         "nonAcceptingSpec": "closed", "avoidAssignmentsSpec": "avoid",
         "groupCountSpec": "gcount", "colocateGroupsSpec": "coloc",
         "minimizeContainersSpec": "minc", "assignmentAffinitiesSpec": "aff",
         "maximizeAllocationSpec": "fill", "groupDiversitySpec": "diverse",
         "groupMoveLimitSpec": "jobmoves", "exclusiveScopeItemsSpec": "exclusive",
         "movesInProgressSpec": "inflight", "capacityWithGroupPresenceSpec": "presence",
         "disasterRecoveryCapacitySpec": "dr"}
ABBREVIATIONS = {"RELATIVE_UTIL_VARIANCE": "ruv", "ABSOLUTE": "ABS", "RELATIVE_UTIL": "UTIL",
                 "MINIMIZE_OCCUPIED_CONTAINERS": "occ", "DURING_AND_AFTER": "D&A",
                 "DOUBLE_DURING": "DD", "MOVED_DATA": "MOVED"}


@dataclass(frozen=True)
class SpecDraw:
    """One goal or constraint of a shape. ``options`` are the spec's fields that do not
    depend on the size (the items, objects and absolute amounts are drawn when built) and
    the fractions those are drawn from (keys starting with ``_``)."""

    arm: str
    role: str  # "goal" or "constraint"
    position: int  # a goal's tuple position; a constraint's tuplePosIfBroken
    policy: str | None  # constraints only
    weight: float = 1.0  # goals only
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Shape:
    seed: int
    specs: tuple[SpecDraw, ...]
    constraint_policy: str  # the global policy (AvoidMoving follows it)
    levels: int  # 1: host; 2: host < rack; 3: host < rack < row
    rack_size: int  # hosts per rack
    racks_per_row: int
    sizes: str  # SIZE_KINDS
    tail: str | None  # heavy-tail: TAILS
    precision: int | None  # decimals: places (None: full double); heavy-tail: significant
    #                        digits (None: full double); flavours and integers: 0
    magnitude: int  # MAGNITUDES
    capacities: str  # CAPACITY_KINDS
    big_ratio: float  # "two": the big hosts' capacity over the small ones'
    start: str  # STARTS
    utilization: float  # of cpu, overall
    overlap: bool = False  # some objects are in two jobs (partition groups may overlap)

    @property
    def groups(self) -> bool:
        return any(s.arm in GROUP_ARMS or "_ubound" in s.options for s in self.specs)


# --------------------------------------------------------------------------- the draw


def _pick(rng: random.Random, weighted: tuple[tuple[str, int], ...]) -> str:
    return rng.choices([a for a, _ in weighted], [w for _, w in weighted])[0]


def _level(rng: random.Random, levels: int) -> str:
    return rng.choices(LEVELS[:levels], (5, 3, 2)[:levels])[0]


def _dimension(rng: random.Random) -> str:
    return rng.choices(["cpu", "mem"], [3, 1])[0]


def _options(rng: random.Random, arm: str, role: str, levels: int) -> dict[str, Any]:
    """The size-independent fields of one spec (and the fractions its lists are drawn by)."""
    goal = role == "goal"
    if arm == "balanceSpec":
        bound = rng.choice(BOUND_TYPES)
        return {"scope": _level(rng, levels), "dimension": _dimension(rng),
                "formula": rng.choices(BALANCE_FORMULAS, (3, 3, 3, 3, 1))[0],
                "boundType": bound,
                "upperBound": {"RELATIVE": rng.choice([1, 1.05, 1.2]),
                               "ABSOLUTE": rng.choice([0, 0.05, 0.1]),
                               "RELATIVE_UTIL": rng.choice([0.5, 0.7, 0.9])}[bound],
                "definition": rng.choices(BALANCE_DEFINITIONS, (4, 2, 1, 1))[0]}
    if arm == "utilIncreaseCostSpec":
        return {"scope": _level(rng, levels), "dimension": _dimension(rng),
                "squares": rng.random() < 0.5, "lowerBound": rng.choice([0, 0, 0.3, 0.5, 0.8])}
    if arm == "toFreeSpec":
        options: dict[str, Any] = {"_share": rng.choice([0.02, 0.05, 0.1])}
        if rng.random() < 0.5:
            options["dimension"] = "cpu"
        if goal and rng.random() < 0.5:
            options["formula"] = "MINIMIZE_OCCUPIED_CONTAINERS"
        return options
    if arm == "capacitySpec":
        bound = rng.choices(["MAX", "MIN"], [4, 1])[0]
        kind = rng.choice(["RELATIVE", "RELATIVE", "ABSOLUTE"])
        fraction = rng.choice([0.8, 0.9, 1.0]) if bound == "MAX" else rng.choice([0.05, 0.2])
        return {"scope": _level(rng, levels), "dimension": _dimension(rng), "bound": bound,
                "definition": rng.choices(CAPACITY_DEFINITIONS, (6, 1, 1, 1, 1, 1))[0],
                "_limit": kind, "_fraction": fraction}
    if arm == "minimizeMovementSpec":
        options = {"scope": rng.choices(LEVELS[:levels], (4, 1, 1)[:levels])[0],
                   "dimension": rng.choice(["task_count", "task_count", "cpu"])}
        if not goal:  # a movement budget: at most a share of the objects (or cpu) moves
            options.update(doNotNormalize=True, _allowance=rng.choice([0.05, 0.1, 0.3]))
        elif rng.random() < 0.5:
            options["doNotNormalize"] = True
        elif rng.random() < 0.3:
            options["magicScaling"] = False
        return options
    if arm == "avoidMovingSpec":
        return {"_share": rng.choice([0.02, 0.05, 0.1])}
    if arm == "disasterRecoveryCapacitySpec":  # a few primaries with 1-2 replicas each
        return {"scope": LEVELS[levels - 1], "dimension": _dimension(rng),
                "_primaries": rng.randint(2, 4), "_replicas": rng.randint(1, 2)}
    if arm == "capacityWithGroupPresenceSpec":  # jobs count at least a share of an object
        options = {"scope": _level(rng, levels), "dimension": _dimension(rng),
                   "bound": rng.choices(["MAX", "MIN"], [4, 1])[0],
                   "roundUpGroupUtilOnScopeItem": rng.random() < 0.3,
                   "_presence": rng.choice([0.5, 1, 2]),
                   "_fraction": rng.choice([0.8, 0.9, 1.0])}
        if rng.random() < 0.3:
            options["intent"] = "PER_GROUP_AND_SCOPE_ITEM"
        if rng.random() < 0.2:
            options["groupUtilMultipliers"] = [{"value": {"globalLimit": 1.25},
                                                "target": rng.choice(["COMMON", "UTILIZATION"])}]
        return options
    if arm == "movesInProgressSpec":  # a share of the objects already moving somewhere
        return {"_share": rng.choice([0.02, 0.05, 0.1])}
    if arm == "nonAcceptingSpec":
        return {"scope": rng.choices(LEVELS[:levels], (4, 1, 1)[:levels])[0],
                "_items": rng.randint(1, 3)}
    if arm == "avoidAssignmentsSpec":
        return {"scope": rng.choices(LEVELS[:levels], (3, 1, 1)[:levels])[0],
                "_share": rng.choice([0.05, 0.1, 0.2]), "_items": rng.randint(1, 3)}
    if arm == "groupCountSpec":
        options = {"scope": rng.choices(LEVELS[:levels], (4, 2, 1)[:levels])[0],
                   "bound": rng.choices(["MAX", "EXACT", "MULTIPLE"], [6, 1, 1])[0],
                   "definition": rng.choices(GROUP_DEFINITIONS, (4, 2, 1, 1))[0]}
        if options["bound"] == "MAX" and rng.random() < 0.4:
            options["limit"] = {"type": "RELATIVE", "globalLimit": rng.choice([0.34, 0.5])}
        else:
            options["limit"] = {"type": "ABSOLUTE", "globalLimit": rng.choice([1, 2, 3])}
        if options["bound"] == "MAX" and rng.random() < 0.25:
            options["squares"] = True
        return options
    if arm == "colocateGroupsSpec":
        options = {"scope": rng.choices(LEVELS[:levels], (3, 2, 1)[:levels])[0],
                   "bound": rng.choices(["MAX", "MIN"], [4, 1])[0],
                   "limits": {"globalLimit": rng.choice([1, 2, 3])}}
        if rng.random() < 0.25:
            options["dimension"] = "cpu"
        return options
    if arm == "minimizeContainersSpec":
        options = {"scope": rng.choices(LEVELS[:levels], (4, 1, 1)[:levels])[0],
                   "dimension": rng.choice(["task_count", "cpu"])}
        if rng.random() < 0.3:
            options["_free"] = rng.choice([0.1, 0.25])
        if rng.random() < 0.3:
            options["_costs"] = True
        return options
    if arm == "assignmentAffinitiesSpec":
        return {"scope": rng.choices(LEVELS[:levels], (3, 1, 1)[:levels])[0],
                "_share": rng.choice([0.1, 0.3, 1.0]), "_sign": rng.choice([-1, 1, 0])}
    if arm == "groupDiversitySpec":  # replicas of a job spread (MIN) or stacked (MAX)
        bound = rng.choices(["MIN", "MAX"], [2, 1])[0]
        return {"scope": rng.choices(LEVELS[:levels], (4, 2, 1)[:levels])[0], "bound": bound,
                "dimension": rng.choice(["task_count", "task_count", "cpu"]),
                "limit": {"globalLimit": rng.choice([1, 2] if bound == "MIN" else [2, 4])}}
    if arm == "groupMoveLimitSpec":  # a job moves at most a few of its tasks
        return {"limit": {"type": "ABSOLUTE", "globalLimit": rng.choice([0, 1, 2, 3])}}
    if arm == "exclusiveScopeItemsSpec":  # pairs of items not used together
        options = {"scope": rng.choices(LEVELS[:levels], (4, 1, 1)[:levels])[0],
                   "dimension": "task_count", "_pairs": rng.choice([0.05, 0.2])}
        if goal and rng.random() < 0.5:
            options["formula"] = "AGGRESSIVE_PACKING"
        return options
    if arm == "maximizeAllocationSpec":
        options = {"scope": rng.choices(LEVELS[:levels], (4, 1, 1)[:levels])[0],
                   "dimension": rng.choice(["task_count", "cpu", "mem"])}
        if rng.random() < 0.3:
            options["_share"] = rng.choice([0.1, 0.5])  # the items it fills
        return options
    raise AssertionError(arm)


def draw_shape(seed: int) -> Shape:
    """The shape of seed ``seed``'s scenario (size-independent)."""
    rng = random.Random(f"shape-{seed}")
    levels = rng.choices([1, 2, 3], [2, 2, 1])[0]
    specs: list[SpecDraw] = []
    position = 0
    for k in range(rng.choices([1, 2, 3], [3, 3, 2])[0]):
        if k and rng.random() < 0.6:  # else it shares the previous goal's position
            position += 1
        arm = _pick(rng, GOAL_ARMS)
        weight = rng.choice([0.5, 2, 10]) if rng.random() < 0.2 else 1.0
        specs.append(SpecDraw(arm, "goal", position, None, weight,
                              _options(rng, arm, "goal", levels)))
    if rng.random() < 0.5 and not any(s.arm == "minimizeMovementSpec" for s in specs):
        position += 1
        specs.append(SpecDraw("minimizeMovementSpec", "goal", position, None, 1.0,
                              _options(rng, "minimizeMovementSpec", "goal", levels)))
    constraint_policy = rng.choices(POLICIES, [3, 1, 1])[0]
    for _ in range(rng.choices([0, 1, 2, 3], [1, 3, 3, 2])[0]):
        arm = _pick(rng, CONSTRAINT_ARMS)
        policy = (constraint_policy if arm == "avoidMovingSpec"
                  else rng.choices(POLICIES, [4, 3, 3])[0])
        broken = 0 if rng.random() < 0.75 else position
        specs.append(SpecDraw(arm, "constraint", broken, policy, 1.0,
                              _options(rng, arm, "constraint", levels)))
    specs = _option_draws(seed, specs)
    sizes = rng.choice(SIZE_KINDS)
    precision = {"flavours": 0, "integers": 0, "decimals": rng.choice([1, 2, 3, None]),
                 "heavy-tail": rng.choice([3, None])}[sizes]
    return Shape(
        seed=seed, specs=tuple(specs), constraint_policy=constraint_policy, levels=levels,
        rack_size=rng.randint(*RACK_SIZES), racks_per_row=rng.randint(2, 5),
        sizes=sizes, tail=rng.choice(TAILS) if sizes == "heavy-tail" else None,
        precision=precision, magnitude=rng.choice(MAGNITUDES),
        capacities=rng.choice(CAPACITY_KINDS), big_ratio=rng.choice([1.5, 2, 4]),
        start=rng.choice(STARTS), utilization=round(rng.uniform(*UTILIZATIONS), 2),
        overlap=random.Random(f"shape-overlap-{seed}").random() < 0.3)


def _option_draws(seed: int, specs: list[SpecDraw]) -> list[SpecDraw]:
    """Options drawn from a stream of their own (so every other draw of a seed stays as it
    was): a Capacity's utilizationBound on the jobs, UPPER or LOWER, with a finite default
    bound or per-job ones; Balance LEGACY (with what Rebalancer's checker demands of it);
    ColocateGroups' continuous penalty on the object count (its exact model
    squares a group's utilization, which must stay small); MinimizeContainers LEGACY (no
    free limit). Balance CAPACITY_PER_ITEM is not drawn: its exact model enumerates an
    item's object counts, which the benchmark's sizes exceed."""
    rng = random.Random(f"shape-options-{seed}")
    result = []
    for spec in specs:
        o = spec.options
        if spec.arm == "capacitySpec" and rng.random() < 0.3:
            upper = rng.random() < 0.6
            bound = {"boundType": "UPPER" if upper else "LOWER",
                     "_default": rng.choice([0.01, 0.05]) if not upper or rng.random() < 0.5
                     else None}
            spec = replace(spec, options={**o, "_ubound": bound})
        elif spec.arm == "balanceSpec" and rng.random() < 0.15:
            spec = replace(spec, options={
                **o, "formula": "LEGACY", "boundType": "RELATIVE", "definition": "AFTER",
                "fixAverageToInitial": True,
                "upperBound": o["upperBound"] if o["boundType"] == "RELATIVE" else 1})
        elif spec.arm == "colocateGroupsSpec" and "dimension" not in o and rng.random() < 0.3:
            spec = replace(spec, options={**o, "useContinuousPenaltyWithOptimal": True})
        elif spec.arm == "minimizeContainersSpec" and rng.random() < 0.3:
            options = {k: v for k, v in o.items() if k != "_free"}
            spec = replace(spec, options={**options, "formula": "LEGACY"})
        result.append(spec)
    return result


# --------------------------------------------------------------------------- one line


def _token(spec: SpecDraw) -> str:
    o = spec.options
    notes = [ABBREVIATIONS.get(str(v), str(v)) for v in (
        o.get("dimension") if o.get("dimension") in ("mem",) else None,
        o.get("scope") if o.get("scope") not in (None, "host") else None,
        o.get("boundType") if o.get("boundType") not in (None, "RELATIVE") else None,
        o.get("definition") if o.get("definition") not in (None, "AFTER") else None,
        o.get("bound") if o.get("bound") not in (None, "MAX") else None,
        o.get("formula") if spec.arm == "toFreeSpec" else None,
        "sq" if o.get("squares") else None,
        f"lb{o['lowerBound']:g}" if o.get("lowerBound") else None,
    ) if v is not None]
    name = SHORT[spec.arm]
    if spec.arm == "balanceSpec":
        name = f"{ABBREVIATIONS.get(o['formula'], o['formula'].lower())} {name}"
    text = name + (f"({','.join(notes)})" if notes else "")
    if spec.role == "goal":
        return (f"{spec.weight:g}x " if spec.weight != 1 else "") + f"{text}@{spec.position}"
    return f"{text} {spec.policy}"


def describe_shape(shape: Shape | int) -> str:
    """A shape (or a seed's) in one short line, e.g. ``squares bal@0 + cap HARD + moves@1;
    2-level scopes (racks of 12); heavy-tail(pareto) 1e9; 2 caps (x2); skewed 80%``: the
    goals with their tuple positions (and weights other than 1), the constraints with their
    policies, each with its options that are not the defaults in brackets; the scope levels;
    the size distribution and the median object's order of magnitude; the capacities; the
    start and the drawn utilization of cpu."""
    if not isinstance(shape, Shape):
        shape = draw_shape(shape)
    specs = " + ".join(_token(s) for s in shape.specs)
    scopes = f"{shape.levels}-level scopes" + (f" (racks of {shape.rack_size})"
                                               if shape.levels > 1 else "")
    notes = {"decimals": ["full" if shape.precision is None else f"{shape.precision}dp"],
             "heavy-tail": [shape.tail] + ([] if shape.precision is None
                                           else [f"{shape.precision}sig"])}.get(shape.sizes)
    sizes = shape.sizes + (f"({','.join(notes)})" if notes else "")
    caps = {"equal": "equal caps", "two": f"2 caps (x{shape.big_ratio:g})",
            "many": "many caps"}[shape.capacities]
    start = "over-cap" if shape.start == "infeasible" else shape.start
    return (f"{specs}; {scopes}; {sizes} 1e{shape.magnitude}; {caps}; {start} "
            f"{shape.utilization:.0%}")


# --------------------------------------------------------------------------- the scenario


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
           caps: np.ndarray) -> np.ndarray:
    """Initial host of each object. ``sizes`` and ``caps`` are (objects, 2) and (hosts, 2):
    cpu and mem. Skewed: hosts filled in a random order up to 95% (next fit); over-capacity:
    the smallest hosts first, each until its cpu passes 105-130% of its capacity; random: a
    random host with room. What is left goes where the most room is."""
    n, m = len(sizes), len(caps)
    host = np.full(n, -1)
    load = np.zeros((m, 2))
    order = rng.permutation(n).tolist()
    hosts = rng.permutation(m)
    left: list[int] = []
    if shape.start == "random":
        for o in order:
            fits = np.flatnonzero(((load + sizes[o]) <= caps).all(axis=1))
            if not len(fits):
                left.append(o)
                continue
            host[o] = c = int(rng.choice(fits))
            load[c] += sizes[o]
    elif shape.start == "skewed":
        k = 0
        for o in order:
            while k < m and ((load[hosts[k]] + sizes[o]) > 0.95 * caps[hosts[k]]).any():
                k += 1
            if k == m:
                left.append(o)
                continue
            host[o] = hosts[k]
            load[hosts[k]] += sizes[o]
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


def _check_size(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(name, "expected a positive integer", value)


def random_shape_scenario(objects: int, containers: int, seed: int) -> dict[str, Any]:
    """The scenario dict of seed ``seed``'s shape (:func:`draw_shape`) with ``objects``
    objects on ``containers`` hosts; deterministic in its arguments. Its ``description`` is
    the shape's line (:func:`describe_shape`)."""
    _check_size("objects", objects)
    _check_size("containers", containers)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError("seed", "expected an integer", seed)
    shape = draw_shape(seed)
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
        self.host = _start(rng, shape, np.column_stack([cpu, mem]),
                           np.column_stack([cap_cpu, cap_mem]))
        # scopes: consecutive hosts in racks, consecutive racks in rows (at least two of each)
        rack_size = max(1, min(shape.rack_size, math.ceil(m / 2)))
        self.rack = np.arange(m) // rack_size
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
        disjoint = any("_ubound" in s.options or s.arm in DISJOINT_GROUP_ARMS
                       for s in self.shape.specs)
        if self.shape.overlap and not disjoint:
            # a utilizationBound and some group specs need disjoint jobs; else some objects
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


__all__ = ["SPEC_ARMS", "Shape", "SpecDraw", "describe_shape", "draw_shape",
           "random_shape_scenario"]
