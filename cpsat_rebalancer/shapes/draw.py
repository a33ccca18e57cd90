"""The shape of a random scenario, drawn from a seed alone (the same shape at every size).

See the package docstring for what is drawn and why."""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

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
STARTS = ("skewed", "random", "infeasible")  # drawn; "hot-racks" only by hand (reported.py)
HOT_RACKS = 0.3  # the share of the racks a "hot-racks" start fills first
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
