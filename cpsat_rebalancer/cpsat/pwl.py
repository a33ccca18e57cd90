"""Piecewise-linear pieces for the convex penalties (x^1.1, squares) with stated error bounds.

Utilizations are integer sums of scaled object sizes, so a convex function of one item's
utilization is represented by chords between integer breakpoints: exact at every reachable
point when the range is small enough to take every integer. A goal's piece over a wider
range is held from below by secants (an outer approximation) and refined at the loads of
each solution until it is exact there; a constraint's piece is an upper envelope whose
largest gap to the function is bounded and reported.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from fractions import Fraction

import numpy as np
from ortools.sat.python import cp_model, cp_model_helper

from ..errors import InputError
from .builder import CpBuilder
from .forms import Atom
from .linear import Lin
from .outer import CUT_ROOM, ChordPiece, OuterPiece

ALL_INTEGERS_UP_TO = 1024  # ranges this short get a breakpoint at every integer (exact)
SEGMENTS = 64  # otherwise this many uniform segments, plus the kinks
# function values are kept to this many significant digits: 12 where sums are short, so
# that a proof holds to far below a relative 1e-9; 9 where a sum has more terms than
# SHORT_SUM, whose finer values cost CP-SAT's searches and relaxations their footing; 13
# where a sum has at most TINY_SUM terms (a goal's value can be the small difference of
# terms near 1, u^1.1 - T^1.1, which 12 digits of each can leave short of a relative 1e-9)
VALUE_DIGITS, COARSE_DIGITS, SHORT_SUM = 12, 9, 128
FINE_DIGITS, TINY_SUM = 13, 16
# scaled values stay below this, so that a chord over up to MAX_SPAN + 1 integers (width times
# value) still fits CP-SAT's 64 bits
VALUE_LIMIT = 2**45


def digits_for(builder: CpBuilder) -> int:
    """The value digits of this model's pieces (see VALUE_DIGITS): a sum over containers or
    scope items is as long as the container count."""
    containers = builder.problem.num_containers
    if containers <= TINY_SUM:
        return FINE_DIGITS
    return VALUE_DIGITS if containers <= SHORT_SUM else COARSE_DIGITS


def _resolution(values: Iterable[float], digits: int) -> int:
    """Units per 1.0 of value: 10^-digits absolute for values up to 1, so that the terms of
    one sum share a scale (their least common factor stays small), and ``digits``
    significant digits above. Values too large for CP-SAT's integers even at one unit per
    1.0 (a utilization far above a tiny capacity, squared) are an InputError."""
    top = max((abs(v) for v in values), default=0.0)
    if top <= 1:
        return 10**digits
    if not top < VALUE_LIMIT:  # NaN included
        raise InputError("", "values of a convex penalty too large to model in CP-SAT's "
                         "64-bit integers (a utilization far above its capacity?)", top)
    return 10 ** max(0, digits - int(math.ceil(math.log10(top))))


def _breakpoints(lo: int, hi: int, kinks: Iterable[float]) -> list[int]:
    if hi - lo <= ALL_INTEGERS_UP_TO:
        return list(range(lo, hi + 1))
    points = set(np.linspace(lo, hi, SEGMENTS + 1).round().astype(np.int64).tolist())
    for kink in kinks:
        for p in (math.floor(kink), math.ceil(kink)):
            if lo <= p <= hi:
                points.add(int(p))
    return sorted(points)


def _lower_hull(xs: list[int], ys: list[int]) -> list[tuple[int, int]]:
    """Lower convex hull of points sorted by x: rounding the values of a convex function can
    break convexity, and lines through non-convex points would cut above the function."""
    hull: list[tuple[int, int]] = []
    for point in zip(xs, ys):
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (y2 - y1) * (point[0] - x1) >= (point[1] - y1) * (x2 - x1):
                hull.pop()  # hull[-1] lies on or above the segment hull[-2] -> point
            else:
                break
        hull.append(point)
    return hull


MAX_SPAN = 2**16  # wider one-atom ranges are divided first, so chord coefficients fit 64 bits


def _coarsened(builder: CpBuilder, x: Lin, g: Callable[[float], float], what: str) -> Lin:
    """``x`` over an atom of at most MAX_SPAN + 1 values: with U = lo + D·W + r (0 <= r < D),
    x is taken at lo + D·W, within |g'|·D·coef of g(x) (the error is stated)."""
    ((atom_index, coef),) = [(a, c) for a, c in x.terms.items() if c != 0]
    atom = builder.atoms[atom_index]
    span = atom.hi - atom.lo
    if span <= MAX_SPAN:
        return x
    divisor = -(-span // MAX_SPAN)
    coarse = builder.cp.new_int_var(0, span // divisor, "coarse")
    shifted = builder.variable(atom.expr - atom.lo, 0, span, "shifted")
    builder.cp.add_division_equality(coarse, shifted, divisor)
    ends = [float(coef * u + x.const) for u in (atom.lo, atom.hi)]
    steepest = max(abs(g(ends[0] + float(coef)) - g(ends[0])),
                   abs(g(ends[1]) - g(ends[1] - float(coef))))  # per unit of U, convex g
    builder.note_error(what, steepest * divisor)
    drift = atom.drift and atom.drift / divisor + 1
    return Lin.atom(builder.new_atom(coarse, 0, span // divisor, drift=drift),
                    coef * divisor) + (
        x.const + coef * atom.lo)


def _on_atom(builder: CpBuilder, x: Lin, g: Callable[[float], float]
             ) -> tuple[Atom, Fraction, Callable[[int], float]]:
    """The atom of a one-atom form x = coef·u + const, coef, and g as a function of u."""
    ((atom_index, coef),) = [(a, c) for a, c in x.terms.items() if c != 0]
    # x as one fraction over a common denominator: int / int is correctly rounded, so this
    # is float(coef·u + const) without a Fraction per breakpoint
    denominator = coef.denominator * x.const.denominator
    slope = coef.numerator * x.const.denominator
    offset = x.const.numerator * coef.denominator

    def at(u: int) -> float:
        return g((slope * u + offset) / denominator)

    return builder.atoms[atom_index], coef, at


def _cuts_fit(builder: CpBuilder, atom: Atom, at: Callable[[int], float]) -> bool:
    """Whether cuts over the atom's whole range fit CP-SAT's 64 bits (``OuterPiece``): g's
    steepest slope (at an end, g convex) times the width, beside g's largest value. Where
    not (g steep near one end of a range of 1e12 integers), a goal's piece is coarsened
    too."""
    width = atom.hi - atom.lo
    if width <= MAX_SPAN:
        return True
    ends = [at(atom.lo), at(atom.lo + 1), at(atom.hi - 1), at(atom.hi)]
    resolution = _resolution(ends, digits_for(builder))
    steepest = resolution * max(abs(ends[1] - ends[0]), abs(ends[3] - ends[2]))
    return 2 * ((steepest + 1) * width + resolution * max(ends) + 2) < CUT_ROOM


def convex_pwl(builder: CpBuilder, x: Lin, g: Callable[[float], float],
               kinks: Iterable[float] = (), what: str = "piecewise-linear",
               from_below: bool = False) -> Lin:
    """A form for convex g >= 0 of a one-atom form ``x``, tight under minimization: chords
    between breakpoints, exact at every integer where the breakpoints are consecutive.

    ``kinks`` are values of x where g bends sharply (the threshold of an excess).
    ``from_below``: where the breakpoints are consecutive, values are rounded down, so the
    form never exceeds g at any reachable point (only for a goal's terms: a constraint's
    expression must not be under-estimated).
    """
    if x.is_constant:
        return Lin(const=Fraction(g(float(x.const))))
    builder.check_time()
    atom, coef, at = _on_atom(builder, x, g)
    if not (from_below and _cuts_fit(builder, atom, at)):
        x = _coarsened(builder, x, g, what)
        atom, coef, at = _on_atom(builder, x, g)
    if atom.drift and atom.hi > atom.lo:  # the atom's drift (sizes rounded), through g: its
        # steepest step on the range (at one end, g convex), one unit of room beyond it
        steepest = max(abs(at(atom.lo + 1) - at(atom.lo)), abs(at(atom.hi) - at(atom.hi - 1)))
        builder.note_error(what, steepest * (math.ceil(atom.drift) + 1))
    u_kinks = [float((Fraction(k) - x.const) / coef) for k in kinks]
    # g >= 0 and convex: zero at both ends of a range, it is zero throughout, so such a
    # range (below an excess's threshold) needs no breakpoint inside, and the rest of the
    # range gets one at every integer more often (uniform segments over a whole range can
    # state an error above the value itself)
    flat = [p for p in (math.floor(k) for k in u_kinks) if atom.lo < p <= atom.hi]
    start = max((p for p in flat if at(p) == 0.0), default=atom.lo) if at(atom.lo) == 0.0 \
        else atom.lo
    points = ([atom.lo] if start > atom.lo else []) + _breakpoints(start, atom.hi, u_kinks)
    values = [at(p) for p in points]
    if len(points) == 1:
        return Lin(const=Fraction(values[0]))
    resolution = _resolution(values, digits_for(builder))
    # consecutive breakpoints, or a range where g is zero at both ends (zero between)
    exact = all(b - a == 1 or at(a) == at(b) == 0.0 for a, b in zip(points, points[1:]))
    if from_below and not exact:
        return _outer(builder, atom, at, points, resolution, what)
    below = from_below and exact
    rounding = math.floor if below else round
    hull = _lower_hull(points, [rounding(resolution * v) for v in values])
    scaled = [value for _, value in hull]
    z = builder.cp.new_int_var(min(scaled), max(scaled), "pwl")
    # (no rounding where every value is a whole number of units: squares of integers)
    error = 0.0 if all(resolution * v == rounding(resolution * v) for v in values) \
        else 1.0 / resolution
    for (a, ga), (b, gb) in zip(hull, hull[1:]):
        # (a flat segment, however wide, is z >= g there: times its width, z could pass
        # 64 bits)
        width, rise = (b - a, gb - ga) if gb != ga else (1, 0)
        builder.cp.add(width * z >= width * ga + rise * (atom.expr - a))
    for a, b in zip(points, points[1:]):
        if b - a > 1:  # chord above a convex function at the integers between: gap <=
            # (last step - first step) * width / 4
            slope_gap = (at(b) - at(b - 1)) - (at(a + 1) - at(a))
            error = max(error, slope_gap * (b - a) / 4 + 1.0 / resolution)
    # rounded down, the hull of the rounded values lies within a unit below g: never above
    builder.note_error(what, error, over=0.0 if below else None)
    return Lin.atom(builder.new_atom(z, min(scaled), max(scaled), bounding=True),
                    Fraction(1, resolution))


def _outer(builder: CpBuilder, atom: Atom, at: Callable[[int], float], points: list[int],
           resolution: int, what: str) -> Lin:
    """A goal's convex piece over a range too wide for a breakpoint at every integer: the
    secants at ``points`` hold it from below, so its compiled value (and any bound on it)
    never exceeds g; ``refine`` adds the secants at a solution's loads. The stated error is
    the widest gap between g and the first cuts (the triangle between a chord and the two
    lines at its ends, (s_b - s_a)·(b - a)/4), plus the rounding (over a range too wide for
    64 bits to carry a secant's slope finely, a first cut can lie further below g at its
    point; a solution's cut is exact there)."""
    top = math.ceil(resolution * max(at(atom.lo), at(atom.hi))) + 1
    z = builder.cp.new_int_var(0, top, "outer")
    u = builder.variable(atom.expr - atom.lo, 0, atom.hi - atom.lo, "outer_load")
    piece = OuterPiece(z, u, atom.lo, atom.hi, at, resolution, top)
    below = max(piece.add_cut(builder.cp, p) for p in points)
    builder.outer.append(piece)

    def secant_slope(p: int) -> float:
        q = piece.neighbour(p)
        return (at(q) - at(p)) / (q - p)

    gap = max(((secant_slope(b) - secant_slope(a)) * (b - a) / 4 for a, b in
               zip(points, points[1:]) if b - a > 1 and not at(a) == at(b) == 0.0),
              default=0.0)  # (z >= 0 is exact where g is zero at both ends)
    builder.note_error(what, gap + float(max(below, 2)) / resolution, over=0.0)
    return Lin.atom(builder.new_atom(z, 0, top, bounding=True), Fraction(1, resolution))


def expr_value(expr: object, values: list[int]) -> int:
    """A linear expression's value in a full solution (a constant's, when it is one)."""
    if isinstance(expr, int):
        return expr
    flat = cp_model_helper.FlatIntExpr(expr)
    return int(flat.offset) + sum(int(c) * values[v.index]
                                  for v, c in zip(flat.vars, flat.coeffs))


class RefinedSolver:
    """A search's solver whose solution ``refine`` cut the pieces at after it ended, with no
    time left to search again: values, and the objective, are read from the solution as
    refined (its pieces raised to the cuts), where the solver's own would read the pieces
    below g; the solver's bound, from before the cuts (which only raise the optimum),
    still bounds. Anything else is the solver's."""

    def __init__(self, solver: cp_model.CpSolver, values: list[int], objective: object):
        self._solver, self._values, self._objective = solver, values, objective

    def value(self, expr: object) -> int:
        return expr_value(expr, self._values)

    @property
    def objective_value(self) -> float:
        return float(expr_value(self._objective, self._values))

    def __getattr__(self, name: str) -> object:
        return getattr(self._solver, name)


def refine(builder: CpBuilder, values: list[int]) -> int:
    """Refine every piece (``OuterPiece``, ``ChordPiece``) at the solution ``values`` (per
    variable) where it is not exact there; the solution's values of those pieces move to
    meet the refinement (it stays a solution, for hints). Returns the number refined: 0
    when the solution's compiled value is exact."""
    return sum(piece.refine(builder.cp, values) for piece in builder.outer)


def threshold_table(builder: CpBuilder, t: Lin, f: Callable[[float], float],
                    what: str = "threshold table") -> Lin:
    """A form z of f(max(t, 0)), never below it by a unit of its resolution, for convex
    nondecreasing f of a (possibly many-atom) form ``t``: a threshold that depends on the
    assignment, subtracted inside an excess (f(t) cannot be represented from above by
    lines), so that the goal is never over-stated. t is taken in cells of about one unit of
    f's value (the form's own unit can be far finer), each at its upper end; over a few
    thousand cells, f at each (AddElement); over more, chords (``ChordPiece``), made exact at
    each solution's cell by ``refine``."""
    if t.is_constant:
        return Lin(const=Fraction(f(float(t.const))))
    form = builder.integerize(t)
    factor, span = Fraction(form.factor), form.hi - form.lo
    top_t = max(abs(float(Fraction(form.lo) / factor)), abs(float(Fraction(form.hi) / factor)))
    resolution = _resolution([f(0.0), f(top_t + form.error)], digits_for(builder))
    # f's steepest slope on the range (f convex: below its rise from top_t to 2·top_t), so
    # that a cell of ``width`` form units moves f by at most a unit of the resolution
    slope = (f(2 * top_t + 1) - f(top_t)) / (top_t + 1)
    width = max(1, math.floor(float(factor) / (resolution * slope))) if slope > 0 else span + 1
    cells = span // width

    def at(cell: int) -> float:  # f at the cell's upper end, beyond the form's rounding
        end = form.lo + min(span, cell * width + width - 1)
        return f(max(0.0, float(Fraction(end) / factor) + form.error))

    u = builder.variable(form.expr - form.lo, 0, span, "threshold")
    if width > 1:
        cell = builder.cp.new_int_var(0, cells, "threshold_cell")
        builder.cp.add_division_equality(cell, u, width)
        u = cell
    top = math.ceil(resolution * at(cells))
    z = builder.cp.new_int_var(0, top, "threshold_value")
    if cells <= 4 * ALL_INTEGERS_UP_TO:
        table = [math.ceil(resolution * at(k)) for k in range(cells + 1)]
        builder.cp.add_element(u, table, z)
        gap = 0.0
    else:
        piece = ChordPiece(builder.cp, z, u, cells, at, resolution)
        points = sorted(set(np.linspace(0, cells, 4 * SEGMENTS + 1).round()
                            .astype(np.int64).tolist()))
        builder.cp.add_exactly_one(piece.add_segment(a, b)
                                   for a, b in zip([-1] + points, points))
        builder.outer.append(piece)
        gap = piece.gap() / resolution
    # z lies above f(t) by the chords' gap (until refined), the cell's rise (a unit), the
    # ends' rounding and the form's (the goal below its value by as much), and below it by
    # less than a unit
    builder.note_error(what, gap + 3.0 / resolution + 2 * slope * form.error,
                       over=1.0 / resolution)
    return Lin.atom(builder.new_atom(z, 0, top, bounding=True), Fraction(1, resolution))


TABLE_SIZE = 20_000  # one-atom ranges up to this many values can be tabulated exactly


def exact_table(builder: CpBuilder, x: Lin, g: Callable[[float], float],
                what: str = "table") -> Lin | None:
    """g(x) at every value of a one-atom form ``x`` (AddElement): equal to g up to the value
    resolution from both sides, for any g, and with an initial value whenever x has one (so
    that a rule "no worse than initially" on it is exact). None when the range is too wide."""
    if x.is_constant:
        return Lin(const=Fraction(g(float(x.const))))
    ((atom_index, coef),) = [(a, c) for a, c in x.terms.items() if c != 0]
    atom = builder.atoms[atom_index]
    if atom.hi - atom.lo + 1 > TABLE_SIZE:
        return None
    values = [g(float(coef * u + x.const)) for u in range(atom.lo, atom.hi + 1)]
    resolution = _resolution(values, digits_for(builder))
    table = [round(resolution * v) for v in values]
    index = builder.cp.new_int_var(0, len(table) - 1, "table_index")
    builder.cp.add(index == atom.expr - atom.lo)
    z = builder.cp.new_int_var(min(table), max(table), "table")
    builder.cp.add_element(index, table, z)
    builder.note_error(what, 0.5 / resolution)
    initial = None if atom.initial is None else table[atom.initial - atom.lo]
    return Lin.atom(builder.new_atom(z, min(table), max(table), initial),
                    Fraction(1, resolution))
