"""Exact rational linear forms over integer-valued atoms.

Specs describe their expressions on Rebalancer's scale (relative utilizations, averages,
thresholds) as :class:`Lin`: Fraction coefficients over *atoms*, integer CP-SAT expressions
registered in the builder. Turning a Lin into a CP-SAT constraint multiplies it by the least
common denominator, so LINEAR and MAX objectives stay exact whenever the data are decimal.
"""

from __future__ import annotations

from collections.abc import Iterable
from fractions import Fraction

Number = int | float | Fraction


def to_fraction(value: Number) -> Fraction:
    """Exact value of a decimal number as the user wrote it (0.1 -> 1/10, not the binary)."""
    if isinstance(value, Fraction):
        return value
    if isinstance(value, int):
        return Fraction(value)
    return Fraction(repr(float(value)))


class Lin:
    """``Σ coef·atom + const`` with Fraction coefficients; atoms are builder indices."""

    __slots__ = ("terms", "const")

    def __init__(self, terms: dict[int, Fraction] | None = None, const: Number = 0):
        self.terms = terms if terms is not None else {}
        self.const = to_fraction(const)

    @staticmethod
    def atom(index: int, coef: Number = 1) -> Lin:
        return Lin({index: to_fraction(coef)})

    def _combine(self, other: Lin | Number, sign: int) -> Lin:
        if not isinstance(other, Lin):
            return Lin(dict(self.terms), self.const + sign * to_fraction(other))
        terms = dict(self.terms)
        for atom, coef in other.terms.items():
            terms[atom] = terms.get(atom, 0) + sign * coef
        return Lin(terms, self.const + sign * other.const)

    def __add__(self, other: Lin | Number) -> Lin:
        return self._combine(other, 1)

    __radd__ = __add__

    def __sub__(self, other: Lin | Number) -> Lin:
        return self._combine(other, -1)

    def __rsub__(self, other: Lin | Number) -> Lin:
        return (-self) + other

    def __neg__(self) -> Lin:
        return self * -1

    def __mul__(self, scalar: Number) -> Lin:
        factor = to_fraction(scalar)
        return Lin({a: c * factor for a, c in self.terms.items()}, self.const * factor)

    __rmul__ = __mul__

    def __truediv__(self, scalar: Number) -> Lin:
        return self * (1 / to_fraction(scalar))

    @property
    def is_constant(self) -> bool:
        return all(c == 0 for c in self.terms.values())


def lin_sum(forms: Iterable[Lin | Number]) -> Lin:
    """Sum many forms without quadratic copying."""
    terms: dict[int, Fraction] = {}
    const = Fraction(0)
    for form in forms:
        if isinstance(form, Lin):
            for atom, coef in form.terms.items():
                terms[atom] = terms.get(atom, 0) + coef
            const += form.const
        else:
            const += to_fraction(form)
    return Lin(terms, const)
