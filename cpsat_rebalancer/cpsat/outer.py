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
# and a two-sided cut's, each under a literal: CP-SAT relaxes such a constraint with its
# terms' range as the big M, and near 2^61 it has said INFEASIBLE of feasible models (a
# cut's side loses nothing at its point with a smaller D, only far from it)
SIDED_ROOM = 2**52


NEAR = 2**16  # over ranges up to this wide, a secant through neighbouring integers is the slope
MARGIN = Fraction(1, 2)  # units a searched cut keeps from g beyond its unit (the search's doubles)
GOLDEN = (math.sqrt(5) - 1) / 2


def _least(f: Callable[[int], float], a: int, b: int) -> int:
    """An integer of [a, b] where f, quasi-convex there (falling, then rising), is least: a
    golden-section search (one new value of f per step)."""
    c, d = b - round((b - a) * GOLDEN), a + round((b - a) * GOLDEN)
    fc, fd = f(c), f(d)
    while b - a > 3:
        if not a < c < d < b:  # (rounding brought them together: start the step afresh)
            c, d = a + (b - a) // 3, b - (b - a) // 3
            fc, fd = f(c), f(d)
        if fc <= fd:  # the least is in [a, d]
            b, d, fd = d, c, fc
            c = b - round((b - a) * GOLDEN)
            fc = f(c)
        else:  # in [c, b]
            a, c, fc = c, d, fd
            d = a + round((b - a) * GOLDEN)
            fd = f(d)
    return min(range(a, b + 1), key=f)


@dataclass
class OuterPiece:
    """z >= g(lo + u) held by cuts, in units of 1/resolution (u: the load less lo): each
    cut lies a unit below g at every integer of the range, so the piece is never above g; a
    cut is tight (within two units of g at its own point) where one line through it fits in
    64 bits, or where it is made two-sided; the piece is exact to its rounding wherever it
    has a tight cut."""

    z: cp_model.IntVar
    u: cp_model.IntVar
    lo: int
    hi: int
    at: Callable[[int], float]
    resolution: int
    top: int  # z's largest value
    cut: set[int] = field(default_factory=set)  # the loads with a tight cut

    def units(self, load: int) -> float:
        return self.resolution * self.at(load)

    def neighbour(self, p: int) -> int:
        """The integer a secant at p passes through besides p."""
        return p + 1 if p < self.hi else p - 1

    def _scale(self, slope: Fraction, room: int = CUT_ROOM) -> int:
        """D: a power of two past the width where a cut's terms fit in ``room`` (the slope
        times D, rounded, moves by at most a half per unit of load), smaller where not."""
        width = self.hi - self.lo
        scale = 1 << (width + 1).bit_length()
        while scale > 1 and scale * (self.top + abs(slope) * width + 2) + width >= room:
            scale //= 2
        return scale

    def _slopes(self, p: int, drop: Fraction) -> tuple[Fraction | None, Fraction | None]:
        """The slopes a line through (p, g(p) - drop) may take to stay at or below g on each
        side of p: at least the largest (g(p) - drop - g(u))/(p - u) over u < p, at most the
        least (g(u) - g(p) + drop)/(u - p) over u > p (None where p ends the range). Each
        is found by a search (the ratio is quasi-convex in u, g convex), so that the slope
        is g's own where a secant through neighbouring integers is lost in the rounding of
        g's values over a wide range."""
        at_p, rough = Fraction(self.units(p)), self.units(p) - float(drop)

        def ratio(u: int) -> Fraction:
            return (Fraction(self.units(u)) - at_p + drop) / (u - p)

        def rough_ratio(u: int) -> float:  # (searched in doubles; taken exactly where found)
            return (self.units(u) - rough) / (u - p)

        left = right = None
        if p > self.lo:
            left = ratio(_least(lambda u: -rough_ratio(u), self.lo, p - 1))
        if p < self.hi:
            right = ratio(_least(rough_ratio, p + 1, self.hi))
        return left, right

    def secant(self, p: int, limits: tuple[Fraction | None, Fraction | None] | None = None,
               lower: bool = True) -> tuple[int, int, int] | None:
        """The cut at p as integers (D, S, A) of D·z >= A + S·(load - p), below g less a unit
        at every integer of the range (so the least integer z it allows is never above g):
        over a range up to NEAR wide, the secant through p and its neighbour, S its slope
        times D rounded and A lowered by the most that rounding moves the line (width/(2D)
        units); wider, a slope between those of ``_slopes`` if D holds one, else the line
        lowered as far as that rounding needs (None where that is below every value of z:
        such a cut holds nothing, and its constant could pass 64 bits; None too without
        ``lower``). ``limits``: ``_slopes`` at p, where the caller has them."""
        width = self.hi - self.lo
        q = self.neighbour(p)
        slope = self.resolution * (Fraction(self.at(q)) - Fraction(self.at(p))) / (q - p)
        scale = self._scale(slope)
        at_p = Fraction(self.units(p)) - 1
        if width <= NEAR:
            return scale, round(scale * slope), math.floor(scale * at_p - Fraction(width, 2))
        left, right = limits or self._slopes(p, MARGIN)
        steep = round(scale * slope)
        low = -math.inf if left is None else math.ceil(scale * left)
        high = math.inf if right is None else math.floor(scale * right)
        if low <= high:
            steep = min(max(steep, low), high)
            return scale, steep, math.floor(scale * (at_p - MARGIN))
        if not lower:
            return None
        # the line lowered by the most it lies above g less a unit (at the load where
        # g(p) - g(u) + slope·(u - p), concave in u, is largest), and MARGIN more
        slope = Fraction(steep, scale)

        def rise(u: int) -> float:
            return self.units(p) - self.units(u) + float(slope) * (u - p)

        u = _least(lambda v: -rise(v), self.lo, self.hi)
        drop = max(Fraction(0), Fraction(self.units(p)) - Fraction(self.units(u))
                   + slope * (u - p)) + MARGIN
        if drop > self.top:
            return None
        return scale, steep, math.floor(scale * (at_p - drop))

    def add_cut(self, cp: cp_model.CpModel, p: int, sided: bool = False) -> Fraction:
        """The cut of ``secant`` at p; with ``sided``, where that is not tight, two cuts
        instead, each within a unit and a half of g at p: the least slope of ``_slopes``
        where the load is at least p and the largest below (a literal says which), each
        below g less a unit on its side. Returns how far below g the cut lies at p, in
        units."""
        offset = p - self.lo
        # (two-sided only over ranges past NEAR: below it the one line is always tight)
        limits = self._slopes(p, MARGIN) if sided and self.hi - self.lo > NEAR else None
        line = self.secant(p, limits, lower=limits is None)
        below = Fraction(self.units(p)) - (0 if line is None else Fraction(line[2], line[0]))
        if below > 2 and limits is not None:
            left, right = limits
            scale = self._scale(max(abs(limit) for limit in (left, right) if limit is not None),
                                SIDED_ROOM)
            base = math.floor(scale * (Fraction(self.units(p)) - 1 - MARGIN))
            above = cp.new_bool_var("cut_side")
            cp.add(self.u >= offset).only_enforce_if(above)
            cp.add(self.u <= offset - 1).only_enforce_if(~above)
            for side, limit, rounded in ((above, right, math.floor), (~above, left, math.ceil)):
                if limit is not None:
                    steep = rounded(scale * limit)
                    cp.add(scale * self.z - steep * self.u >= base - steep * offset
                           ).only_enforce_if(side)
            below = Fraction(2)  # (its own rounding aside: a unit and a half, and 1/D)
        elif line is not None:
            scale, steep, base = line
            cp.add(scale * self.z - steep * self.u >= base - steep * offset)
        if below <= 2:
            self.cut.add(p)
        return below

    def refine(self, cp: cp_model.CpModel, values: list[int]) -> bool:
        """Cut at the solution's load where the piece lies more than its rounding below g
        there, raising the solution's z to meet the cut (it stays a solution, for hints)."""
        load, z = self.lo + values[self.u.index], values[self.z.index]
        exact = math.floor(self.units(load))
        if load in self.cut or z >= exact - 1:
            return False
        self.add_cut(cp, load, sided=True)
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
