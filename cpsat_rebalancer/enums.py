"""Rebalancer's Thrift enums: names and integer values (ProblemSpecs.thrift, Types.thrift).

Spec dicts may carry an enum either as its name (``"SQUARES"``) or as Rebalancer's integer
(``2``); :func:`parse_enum` accepts both and returns the name, :func:`enum_value` goes back.
"""

from __future__ import annotations

import numpy as np

from .errors import InputError, did_you_mean

ENUMS: dict[str, dict[str, int]] = {
    "LimitType": {"ABSOLUTE": 1, "RELATIVE": 2},
    "FilterType": {"SCOPE_ITEM": 1, "GROUP": 2},
    "BalanceSpecFormula": {
        "LINEAR": 1,
        "SQUARES": 2,
        "MAX": 3,
        "IDEAL": 4,
        "LEGACY": 5,
        "RELATIVE_UTIL_VARIANCE": 6,
    },
    "BalanceSpecBoundType": {"ABSOLUTE": 1, "RELATIVE": 2, "RELATIVE_UTIL": 3},
    "BalanceSpecDefinition": {"AFTER": 1, "DURING": 2, "NEW": 3, "OLD": 4},
    "BalanceSpecMetric": {"RELATIVE_UTIL": 1, "CAPACITY_PER_ITEM": 2},
    "ToFreeSpecFormula": {"MINIMIZE_TOTAL_UTILIZATION": 1, "MINIMIZE_OCCUPIED_CONTAINERS": 2},
    "CapacitySpecDefinition": {
        "AFTER": 1,
        "DURING_AND_AFTER": 2,
        "DURING": 3,
        "DOUBLE_DURING_AND_AFTER": 4,
        "DOUBLE_DURING": 5,
        "NEW": 6,
        "OLD": 7,
        "MOVED_DATA": 8,
    },
    "CapacitySpecBound": {"MAX": 1, "MIN": 2},
    "CapacityWithGroupPresenceBound": {"MAX": 1, "MIN": 2},
    "CapacityWithGroupPresenceUsageIntent": {"PER_SCOPE_ITEM": 1, "PER_GROUP_AND_SCOPE_ITEM": 2},
    "ContinuousPenaltyType": {"CONTINUOUS_UTILIZATION": 1,
                              "NORMALIZED_CONTINUOUS_UTILIZATION": 2},
    "GroupUtilMultiplierTarget": {"PRESENCE_WEIGHT": 1, "UTILIZATION": 2, "COMMON": 3},
    "GroupCountSpecDefinition": {"AFTER": 1, "DURING_AND_AFTER": 2, "DURING": 3, "STAYED": 4},
    "GroupCountSpecBound": {"MAX": 1, "MIN": 2, "EXACT": 3, "MULTIPLE": 4},
    "GroupCountSpecLimitRelativeTo": {
        "GROUP_SIZE": 1,
        "SCOPE_ITEM_UTIL": 2,
        "GROUP_TO_SCOPE_ITEM_ROUTING_TRAFFIC": 3,
    },
    "ColocateGroupsSpecBound": {"MAX": 1, "MIN": 2},
    "MinimizeContainerSpecFormula": {"LEGACY": 1, "NEW": 2},
    "GroupDiversityBound": {"MIN": 1, "MAX": 2},
    "ExclusiveScopeItemsFormula": {"MINIMIZE_INVALIDATED_SCOPE_ITEMS_COUNT": 1,
                                   "AGGRESSIVE_PACKING": 2},
    "ConstraintPolicy": {"DEFAULT": 1, "HARD": 2, "SOFT": 3},
    "UtilizationBoundType": {"UPPER": 1, "LOWER": 2},
}


def parse_enum(enum: str, value: object, path: str) -> str:
    """Return the member name of ``enum`` given as a name or as Rebalancer's integer."""
    members = ENUMS[enum]
    if isinstance(value, bool):
        raise InputError(path, f"expected a {enum} name or integer", value)
    if isinstance(value, str):
        name = value.upper()
        if name in members:
            return name
    elif isinstance(value, (int, np.integer)):
        for name, number in members.items():
            if number == value:
                return name
    choices = ", ".join(f"{n}={v}" for n, v in members.items())
    raise InputError(path, f"invalid {enum} (expected one of {choices})"
                     + did_you_mean(value, members, fold_case=True), value)


def enum_value(enum: str, name: str) -> int:
    """Rebalancer's integer for a member name (the wheel takes integers only)."""
    return ENUMS[enum][name]
