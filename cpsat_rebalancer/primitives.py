"""Primitives every floor shares: Rebalancer's comparison tolerance and the moves a
constraint forbids outright."""

from __future__ import annotations

from dataclasses import dataclass

TOLERANCE = 1e-10  # Rebalancer's absolute tolerance in comparisons (step, "initially broken")


@dataclass(frozen=True)
class Restrictions:
    """Moves a (non-SOFT) constraint forbids outright: fixed objects, non-accepting
    containers. Under DEFAULT and HARD its hard parts forbid them too; as domains they cost
    the model nothing. A SOFT constraint only prices them (see Model.restrictions)."""

    fixed_objects: frozenset[int] = frozenset()
    non_accepting: frozenset[int] = frozenset()
