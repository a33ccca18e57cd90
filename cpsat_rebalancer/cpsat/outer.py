"""A convex piece held from below by secant cuts (an outer approximation): the cuts a
goal's piece over a wide range gets at the loads of each solution (see pwl)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

from ortools.sat.python import cp_model

CUT_ROOM = 2**61  # a cut's terms (|coefficient| times |value|, summed) stay below this


@dataclass
class OuterPiece:
    """z >= g(lo + u) held by secant cuts, in units of 1/resolution (u: the load less lo):
    each cut lies a unit below g at every integer of the range and within two units of it
    at its own point, so the piece is never above g, and exact to its rounding wherever it
    has a cut."""

    z: cp_model.IntVar
    u: cp_model.IntVar
    lo: int
    hi: int
    at: Callable[[int], float]
    resolution: int
    top: int  # z's largest value
    cut: set[int] = field(default_factory=set)

    def units(self, load: int) -> float:
        return self.resolution * self.at(load)

    def neighbour(self, p: int) -> int:
        """The integer a secant at p passes through besides p."""
        return p + 1 if p < self.hi else p - 1

    def secant(self, p: int) -> tuple[int, int, int]:
        """The secant through p and its neighbour as integers (D, S, A) of the cut
        D·z >= A + S·(load - p), S the slope times D rounded. Over the range the rounding
        moves the line by at most width/(2D) units, which A gives up with one unit more: the
        cut stays a unit below g everywhere (g convex), so the least integer z it allows is
        never above g. D is a power of two above the width where the cut's terms fit in 64
        bits (the cut is then within two units of g at p), smaller where not."""
        q = self.neighbour(p)
        slope = self.resolution * (Fraction(self.at(q)) - Fraction(self.at(p))) / (q - p)
        width = self.hi - self.lo
        scale = 1 << (width + 1).bit_length()
        while scale > 1 and scale * (self.top + (abs(slope) + 1) * width + 2) >= CUT_ROOM:
            scale //= 2
        base = math.floor(scale * (self.resolution * Fraction(self.at(p)) - 1)
                          - Fraction(width, 2))
        return scale, round(scale * slope), base

    def add_cut(self, cp: cp_model.CpModel, p: int) -> None:
        scale, steep, base = self.secant(p)
        cp.add(scale * self.z - steep * self.u >= base - steep * (p - self.lo))
        self.cut.add(p)
