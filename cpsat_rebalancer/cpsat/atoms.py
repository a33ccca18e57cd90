"""Atoms, the integer CP-SAT expressions with known bounds that forms are written over, how
an objective's term on one is rounded to integers (see IntegerForms._scaled), and the units
forms count in."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ortools.sat.python import cp_model

from .domains import DOMAIN_ROOM
from .linear import Lin


@dataclass
class Atom:
    expr: object  # CP-SAT integer expression (IntVar, LinearExpr or int)
    lo: int
    hi: int
    initial: int | None = None  # value at the initial assignment, when defined by the problem
    bounding: bool = False  # only bounds its value from above (exact under minimization only)
    # how far its value may lie, whichever way, from what it stands for (integer units): a
    # load of sizes rounded to the dimension's scale
    drift: float = 0.0


def quotient_divisor(exact: Fraction, hi: int) -> int:
    """The power of two D whose quotient term (see term_below) lies least below exact·atom
    over [0, hi], where that beats the coefficient rounded down on the atom itself by at
    least half; else 1."""
    if exact == 0 or hi < 4:
        return 1
    e = abs(float(exact))

    def short(v: float) -> float:  # what rounding |exact|·D toward below loses per unit
        return v - math.floor(v) if exact > 0 else math.ceil(v) - v

    best, best_below = 1, short(e) * hi / 2
    for k in range(1, hi.bit_length()):
        d = 1 << k
        below = e * (d - 1) + short(e * d) * (hi // d if exact > 0 else -(-hi // d))
        if below < best_below:
            best, best_below = d, below
    return best


def term_below(cp: cp_model.CpModel, atom: Atom, exact: Fraction
               ) -> tuple[object, int, int, int, int | None, Fraction, Fraction]:
    """An objective's term exact·atom as coef·expr over [lo, hi] (expr's initial value),
    with its rounding and the part of it above the exact term. An atom of one sign takes
    the coefficient rounded toward below the term (nothing above); a fine coefficient on a
    nonnegative atom is put on the atom's quotient by a power of two D instead: for a
    positive one, w >= (atom - D + 1)/D, which the minimization holds at floor(atom / D);
    for a negative one, w <= (atom + D - 1)/D, held at ceil(atom / D) (either below by
    |exact|·(D - 1) plus the coefficient's rounding on the quotient's top, where rounding
    it on the atom loses up to a unit on each). A bounding atom under a coarse coefficient
    p/q may keep its unit instead where that loses less: w >= atom/q with coefficient p,
    above it by less than p (a piece's fine steps in an objective whose scale a large
    penalty sets)."""
    if atom.lo < 0 < atom.hi:  # either sign: the nearest coefficient, either way
        coef = round(exact)
        plain = abs(exact - coef) * max(-atom.lo, atom.hi)
        return atom.expr, coef, atom.lo, atom.hi, atom.initial, plain, plain
    p, q = exact.numerator, exact.denominator
    coef = math.floor(exact) if atom.lo >= 0 else math.ceil(exact)
    below = abs(exact - coef) * max(abs(atom.lo), abs(atom.hi))
    divisor = quotient_divisor(exact, atom.hi) if atom.lo >= 0 and below else 1
    # (its domain takes at most a 64th of the room left, as IntegerForms.variable_limit's)
    if divisor > 1 and atom.hi // divisor > (DOMAIN_ROOM - getattr(cp, "domain_sum", 0)) // 64:
        divisor = 1
    rising = exact > 0

    def quotient(value: int) -> int:  # (a falling term's is taken rounded up)
        return value // divisor if rising else -(-value // divisor)

    if divisor > 1:
        top = quotient(atom.hi)
        scaled = exact * divisor
        below = abs(exact) * (divisor - 1) + (scaled - math.floor(scaled)) * top
    if exact > 0 and atom.bounding and atom.lo >= 0 and q > 1 and p < below:
        lo, hi = -(-atom.lo // q), -(-atom.hi // q)
        w = cp.new_int_var(lo, hi, "coarse_term")
        cp.add(q * w >= atom.expr)
        initial = None if atom.initial is None else -(-atom.initial // q)
        return w, p, lo, hi, initial, Fraction(p), Fraction(p)
    if divisor == 1:
        return atom.expr, coef, atom.lo, atom.hi, atom.initial, below, Fraction(0)
    w = cp.new_int_var(quotient(atom.lo), top, "quotient_term")
    if rising:
        cp.add(divisor * w >= atom.expr - (divisor - 1))
    else:
        cp.add(divisor * w <= atom.expr + (divisor - 1))
    initial = None if atom.initial is None else quotient(atom.initial)
    return w, math.floor(scaled), quotient(atom.lo), top, initial, below, Fraction(0)


FINE_UNIT = Fraction(1, 10**12)  # a soft term's unit need be no finer, of its magnitude


def finer_multiple(limit: int, span: int) -> int:
    """The largest power of ten that keeps ``span`` times it within ``limit`` (at least 1)."""
    room = limit // span
    return 10 ** (len(str(room)) - 1) if room >= 10 else 1


def common_divisor(lins: list[Lin], factor: int) -> int:
    """The greatest common divisor of the coefficients of ``lins`` times ``factor``
    (integers: ``factor`` is their common denominator)."""
    return math.gcd(*(int(c * factor) for lin in lins for c in lin.terms.values() if c))


def shown_magnitude(magnitude: Fraction) -> float | str:
    """A magnitude for an error message (as text when a float cannot hold it)."""
    try:
        return float(magnitude)
    except OverflowError:
        return f"about 10^{len(str(int(magnitude))) - 1}"
