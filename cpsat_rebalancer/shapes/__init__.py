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
a size (:func:`shape_scenario` that of any shape, such as the hand-written ones users
reported failing, :data:`REPORTED_SHAPES`), and :func:`describe_shape` says a shape in one
short line.

Every drawn scenario parses (``tests/test_shapes.py`` checks 200 seeds and counts that every
option is drawn); none is promised feasible: a HARD rule may make it infeasible, and an
over-capacity start breaks the Capacity it is drawn with.
"""

from .draw import (
    BALANCE_DEFINITIONS,
    BALANCE_FORMULAS,
    BOUND_TYPES,
    CAPACITY_KINDS,
    GROUP_ARMS,
    MAGNITUDES,
    POLICIES,
    SIZE_KINDS,
    SPEC_ARMS,
    STARTS,
    TAILS,
    Shape,
    SpecDraw,
    describe_shape,
    draw_shape,
)
from .reported import REPORTED_SHAPES
from .scenario import random_shape_scenario, shape_scenario

__all__ = ["BALANCE_DEFINITIONS", "BALANCE_FORMULAS", "BOUND_TYPES", "CAPACITY_KINDS",
           "GROUP_ARMS", "MAGNITUDES", "POLICIES", "SIZE_KINDS", "SPEC_ARMS", "STARTS", "TAILS",
           "REPORTED_SHAPES", "Shape", "SpecDraw", "describe_shape", "draw_shape",
           "random_shape_scenario", "shape_scenario"]
