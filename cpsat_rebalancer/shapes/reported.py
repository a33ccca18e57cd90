"""Shapes that users reported failing, built with the random generator's own parts.

Each is a :class:`Shape` written by hand instead of drawn, so
:func:`~.scenario.shape_scenario` builds it at any size like a drawn one; tests and
``benchmarks/robustness.py --shapes`` keep them solved right. A shape's ``seed`` only keys
its random sizes and start: ``dataclasses.replace(shape, seed=k)`` is another instance of
the same shape.
"""

from __future__ import annotations

from typing import Any

from .draw import Shape, SpecDraw


def _balance(scope: str, dimension: str, formula: str) -> dict[str, Any]:
    return {"scope": scope, "dimension": dimension, "formula": formula,
            "boundType": "RELATIVE", "upperBound": 1, "definition": "AFTER"}


def _capacity(dimension: str) -> dict[str, Any]:
    """At most the capacity (MAX, RELATIVE 1.0) of each host."""
    return {"scope": "host", "dimension": dimension, "bound": "MAX", "definition": "AFTER",
            "_limit": "RELATIVE", "_fraction": 1.0}


def large_integers(formula: str, magnitude: int = 11) -> Shape:
    """A cpu balance (``formula``) at position 0 beside a DEFAULT capacity, movement at
    position 1; sizes from a few flavours times ``10**magnitude``, two capacities, most
    objects on a few hosts. At 1e9-1e12 such scenarios were once reported OPTIMAL at values
    worse than moving a single object."""
    return Shape(
        seed=0, constraint_policy="DEFAULT", levels=1, rack_size=1, racks_per_row=1,
        specs=(SpecDraw("balanceSpec", "goal", 0, None, 1.0, _balance("host", "cpu", formula)),
               SpecDraw("capacitySpec", "constraint", 0, "DEFAULT", 1.0, _capacity("cpu")),
               SpecDraw("minimizeMovementSpec", "goal", 1, None, 1.0,
                        {"scope": "host", "dimension": "task_count"})),
        sizes="flavours", tail=None, precision=0, magnitude=magnitude, capacities="two",
        big_ratio=2, start="skewed", utilization=0.6)


def wide_range(goal: str, magnitude: int = 3) -> Shape:
    """A SQUARES balance, a UtilIncreaseCost with squares or an IDEAL balance (``goal``:
    "squares", "uic" or "ideal") at position 0, sharing its bucket with a SOFT capacity;
    lognormal sizes over several decades from ``10**magnitude``, many capacities, a start
    over capacity. Bounds above the optimum, and OPTIMAL off it by 1e-3 relative, were once
    reported here."""
    if goal == "uic":
        spec = SpecDraw("utilIncreaseCostSpec", "goal", 0, None, 1.0,
                        {"scope": "host", "dimension": "cpu", "squares": True,
                         "lowerBound": 0})
    else:
        formula = {"squares": "SQUARES", "ideal": "IDEAL"}[goal]
        spec = SpecDraw("balanceSpec", "goal", 0, None, 1.0, _balance("host", "cpu", formula))
    return Shape(
        seed=0, constraint_policy="DEFAULT", levels=1, rack_size=1, racks_per_row=1,
        specs=(spec, SpecDraw("capacitySpec", "constraint", 0, "SOFT", 1.0, _capacity("cpu"))),
        sizes="heavy-tail", tail="lognormal", precision=None, magnitude=magnitude,
        capacities="many", big_ratio=1, start="infeasible", utilization=0.8)


def drain_with_cost() -> Shape:
    """A drain: ToFree as a DEFAULT constraint on a tenth of the loaded hosts,
    UtilIncreaseCost of mem (lowerBound 0.5, squares) the only goal, Capacity MAX RELATIVE
    1.0 of mem; sizes from integer flavours, hosts of capacity C and 2C, 65% used. At
    10,000 x 500 its CP-SAT model was once rejected as a possible integer overflow."""
    return Shape(
        seed=0, constraint_policy="DEFAULT", levels=1, rack_size=1, racks_per_row=1,
        specs=(SpecDraw("utilIncreaseCostSpec", "goal", 0, None, 1.0,
                        {"scope": "host", "dimension": "mem", "squares": True,
                         "lowerBound": 0.5}),
               SpecDraw("toFreeSpec", "constraint", 0, "DEFAULT", 1.0,
                        {"_share": 0.1, "dimension": "mem"}),
               SpecDraw("capacitySpec", "constraint", 0, "DEFAULT", 1.0, _capacity("mem"))),
        sizes="flavours", tail=None, precision=0, magnitude=0, capacities="two",
        big_ratio=2, start="random", utilization=0.65)


def hot_racks() -> Shape:
    """Racks of 5 hosts, 30% of them starting hot; Balance LINEAR of mem per rack at
    position 0 and per host at 1, no movement goal, Capacity MAX RELATIVE 1.0 of mem. At
    10,000 x 500 Rebalancer's local search once beat ours at position 1 in the same 60 s."""
    return Shape(
        seed=0, constraint_policy="DEFAULT", levels=2, rack_size=5, racks_per_row=1,
        specs=(SpecDraw("balanceSpec", "goal", 0, None, 1.0, _balance("rack", "mem", "LINEAR")),
               SpecDraw("balanceSpec", "goal", 1, None, 1.0, _balance("host", "mem", "LINEAR")),
               SpecDraw("capacitySpec", "constraint", 0, "DEFAULT", 1.0, _capacity("mem"))),
        sizes="flavours", tail=None, precision=0, magnitude=0, capacities="two",
        big_ratio=2, start="hot-racks", utilization=0.65)


REPORTED_SHAPES: dict[str, Shape] = {
    **{f"large-integers-{f.lower()}": large_integers(f) for f in ("LINEAR", "MAX", "SQUARES")},
    **{f"wide-range-{goal}": wide_range(goal) for goal in ("squares", "uic", "ideal")},
    "drain-with-cost": drain_with_cost(),
    "hot-racks": hot_racks(),
}
