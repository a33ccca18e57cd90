"""Primitives every floor shares: Rebalancer's comparison tolerance, the largest size the
model takes, and the moves a constraint forbids outright."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TOLERANCE = 1e-10  # Rebalancer's absolute tolerance in comparisons (step, "initially broken")

# sizes and capacities above this cannot be modelled exactly (CP-SAT's integers are 64-bit,
# and a dimension's total must fit them): refused where they are read, not as an overflow
MAX_AMOUNT = 1e18


@dataclass(frozen=True)
class Restrictions:
    """Moves a (non-SOFT) constraint forbids outright: fixed objects, non-accepting
    containers. Under DEFAULT and HARD its hard parts forbid them too; as domains they cost
    the model nothing. A SOFT constraint only prices them (see Model.restrictions).
    ``held`` (object -> container) keeps objects where a search holds them, which may not
    be where they start: no constraint states it, only a sub-model (solve.large) does."""

    fixed_objects: frozenset[int] = frozenset()
    non_accepting: frozenset[int] = frozenset()
    held: dict[int, int] = field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class MoveBudget:
    """A hard rule on moves that any model of the assignment can state: of ``members``, those
    that end outside their initial containers weigh at most ``limit`` together (member i
    weighs ``weights[i]``), up to TOLERANCE."""

    members: np.ndarray  # object indices
    weights: np.ndarray  # per member, >= 0
    limit: float
