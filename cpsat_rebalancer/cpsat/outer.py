"""Pieces refined at each solution until exact there (see pwl): a goal's convex piece held
from below by secant cuts (an outer approximation), and a convex function of a threshold held
from above by chords (subtracted inside an excess, it then never over-states the goal)."""

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

    def refine(self, cp: cp_model.CpModel, values: list[int]) -> bool:
        """Cut at the solution's load where the piece lies more than its rounding below g
        there, raising the solution's z to meet the cut (it stays a solution, for hints)."""
        load, z = self.lo + values[self.u.index], values[self.z.index]
        exact = math.floor(self.units(load))
        if load in self.cut or z >= exact - 1:
            return False
        self.add_cut(cp, load)
        values[self.z.index] = exact  # the least z the cut allows is at most this
        return True

    def snapshot(self) -> object:
        return set(self.cut)

    def restore(self, state: object) -> None:
        self.cut = set(state)


@dataclass
class ChordPiece:
    """z at f(u), held from above by chords, in units of 1/resolution, for convex
    nondecreasing f over the integers 0..span: each segment (a, b] between breakpoints has a
    literal, true exactly for the segment u lies in, holding z to the floor of the chord
    through a and b (ends rounded up), drawn from b with its slope rounded down: above the
    chord, so above f, and never above f(b). Pinned rather than only bounded, so that no
    search walks z up a unit at a time. z is never below f at any u by a unit, and within a
    unit of it at every breakpoint (0 is one, its own segment); ``refine`` makes a
    solution's u a breakpoint: its segment's literal becomes the sum of its halves', and its
    floor on z is lifted (the halves' chords lie below it)."""

    cp: cp_model.CpModel
    z: cp_model.IntVar
    u: cp_model.IntVar
    span: int
    at: Callable[[int], float]
    resolution: int
    segments: dict[int, tuple[int, object, int]] = field(default_factory=dict)  # a -> (b,
    # literal, index of its floor constraint)
    # each floor constraint's proto by its index in the model, after an empty one (the
    # first), kept in a model of their own: a proto message lives only as long as its model
    saved: cp_model.CpModel = field(default_factory=cp_model.CpModel)
    floors: dict[int, object] = field(default_factory=dict)
    top: int = field(init=False)  # z's largest value, f(span)

    def __post_init__(self) -> None:
        self.saved.Proto().constraints.add()
        self.top = self.units(self.span)

    def units(self, u: int) -> int:
        return math.ceil(self.resolution * self.at(u))

    def add_segment(self, a: int, b: int) -> object:
        """The segment of u in (a, b] (a = -1: from 0)."""
        cp = self.cp
        literal = cp.new_bool_var("chord")
        cp.add(self.u >= a + 1).only_enforce_if(literal)
        cp.add(self.u <= b).only_enforce_if(literal)
        scale, gentle = self._chord(a, b)
        line = scale * self.units(b) - gentle * (b - self.u)
        cp.add(scale * self.z <= line).only_enforce_if(literal)
        floor = cp.add(scale * self.z >= line - (scale - 1)).only_enforce_if(literal)
        self.floors[floor.index] = self.saved.Proto().constraints.add()
        self.floors[floor.index].copy_from(cp.Proto().constraints[floor.index])
        self.segments[a] = (b, literal, floor.index)
        return literal

    def _chord(self, a: int, b: int) -> tuple[int, int]:
        """The chord from a to b as D·z <= D·f(b) - S·(b - u): D a power of two as large as
        keeps every term within 64 bits over u's whole range, S the slope times D rounded
        down (0 for the point 0)."""
        if a < 0:
            return 1, 0
        rise, width = self.units(b) - self.units(a), b - a
        scale = 1 << 62
        while True:
            gentle = scale * rise // width
            if scale == 1 or scale * (2 * self.top + 2) + 2 * gentle * self.span < CUT_ROOM:
                return scale, gentle
            scale //= 2

    def gap(self) -> float:
        """The widest gap between the chords and f, in units: the rise of f over a segment
        (which bounds its chord's, f nondecreasing), the slope's rounding, and the ends'."""
        return max(self.units(b) - self.units(max(a, 0)) + 2 + (b - a) / self._chord(a, b)[0]
                   for a, (b, _, _) in self.segments.items())

    def refine(self, cp: cp_model.CpModel, values: list[int]) -> bool:
        u = values[self.u.index]
        a = max(start for start in self.segments if start < u)
        b, literal, floor = self.segments[a]
        if u == b:  # a breakpoint: exact there
            return False
        left, right = self.add_segment(a, u), self.add_segment(u, b)
        cp.add(left + right == literal)
        cp.Proto().constraints[floor].copy_from(self.saved.Proto().constraints[0])
        values[self.z.index] = self.units(u)  # its new chord's value at u
        return True

    def snapshot(self) -> object:
        return dict(self.segments)

    def restore(self, state: object) -> None:
        """The segments of ``state``, their floors on z back in place (a later split lifted
        them; what it added is the caller's to empty)."""
        self.segments = dict(state)
        for _, _, floor in self.segments.values():
            self.cp.Proto().constraints[floor].copy_from(self.floors[floor])
