"""Integer forms of exact linear expressions: scaling to integers, positive parts, steps,
maxima and hard rules, as CP-SAT variables and constraints. The builder of an assignment
model inherits them; nothing here knows objects or containers."""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction

from ortools.sat.python import cp_model

from ..errors import InputError
from ..primitives import TOLERANCE
from .atoms import FINE_UNIT, Atom, common_divisor, finer_multiple, shown_magnitude, term_below
from .domains import DOMAIN_ROOM, DomainCountingModel
from .linear import Lin, lin_sum
from .outer import ChordPiece, OuterPiece

INT_LIMIT = 2**60  # keep every integerized expression's magnitude below this
# an objective (a bucket's sum) beyond INT_LIMIT is counted in coarser units instead, up to
# this magnitude: its value and stated error must remain ordinary floats
OBJECTIVE_LIMIT = 10**200
TOLERANCE_FRACTION = Fraction(TOLERANCE)  # Rebalancer's comparison tolerance, exactly
# an exact factor above this (the denominators of coefficients near 1e-300) gives way to a
# power of ten, as too large a magnitude does: factors must convert to floats
MAX_FACTOR = 10**200
# a form that defines a new variable (an excess, a maximum) is exact only up to this scale,
# else rounded to the finest power of ten within it: the variables' domains then stay small
# enough that many of them (a LINEAR balance over many racks of distinct capacities, each
# exact only at a scale near 10^17) still sum within CP-SAT's 64 bits
VARIABLE_LIMIT = 2**50
# unless that rounding is off by more than this part of the form's magnitude
COARSE_ROUNDING = 1e-6
# a new variable's domain takes at most this part of the room left (see variable_limit)
ROOM_SHARE = 64
# an excess whose slope exceeds this many of its units per unit of its load is written in
# steps of the load (IntegerForms._excess_in_steps): GLOP fails on rows 10^9 apart
WELL_SCALED = 2**20


ATOMS_PER_TIME_CHECK = 1024  # atoms built between two looks at the clock


@dataclass
class Integerized:
    """``K·lin`` as an integer CP-SAT expression, with the rounding error bound (in value)."""

    expr: object
    factor: Fraction  # K
    lo: int
    hi: int
    error: float = 0.0
    initial: int | None = None  # the value at the initial assignment, where its atoms have one
    # the part of ``error`` by which the compiled value may lie above the exact one
    over: float = 0.0


@dataclass(frozen=True)
class Info:
    """A constraint expression e (meaning e <= 0); with a gate, e counts only when gate > 0."""

    expr: Lin
    gate: Lin | None = None



class IntegerForms:
    """The atoms (integer CP-SAT expressions with known bounds) that forms are written over,
    and the forms built on them. Needs ``cp``, ``accelerate`` and ``guard`` from its owner."""

    cp: DomainCountingModel
    accelerate: bool
    guard: object | None

    def __init__(self) -> None:
        self.atoms: list[Atom] = []
        # per source, a bound on |compiled - exact| of what it compiled, and the part of that
        # bound by which the compiled value may lie above the exact one (a bound on the
        # exact optimum is the compiled bound less the over-estimates, not less the errors)
        self.errors: dict[str, float] = {}
        self.overs: dict[str, float] = {}
        # per dimension, how far the data's rounding moves an object's size (its units): a
        # fact for the user; the forms built on those sizes state what it costs them
        self.roundings: dict[str, float] = {}
        # pieces refined at solutions until exact there (pwl.refine): a goal's convex pieces
        # held from below by cuts, and thresholds' values held from above by chords
        self.outer: list[OuterPiece | ChordPiece] = []
        self._gates: dict[tuple, object] = {}
        self._quotients: dict[tuple[int, int], int] = {}  # (atom, divisor): quotient's atom

    def new_atom(self, expr: object, lo: int, hi: int, initial: int | None = None,
                 bounding: bool = False, drift: float = 0.0) -> int:
        if len(self.atoms) % ATOMS_PER_TIME_CHECK == 0:  # one spec's forms can take long
            self.check_build_time()
        self.atoms.append(Atom(expr, int(lo), int(hi), initial, bounding, drift))
        return len(self.atoms) - 1

    def check_build_time(self) -> None:
        """Stop compiling the model past the solve's deadline (the builder has one; forms
        alone do not)."""

    def minimization_only(self, lin: Lin) -> bool:
        """Whether ``lin`` involves a variable that only bounds its value from above (excess,
        step, chords): minimizing it is exact, maximizing it is not."""
        return any(self.atoms[a].bounding for a, c in lin.terms.items() if c != 0)

    # ---- evaluating forms ----
    def bounds(self, lin: Lin) -> tuple[Fraction, Fraction]:
        lo = hi = lin.const
        for a, c in lin.terms.items():
            atom = self.atoms[a]
            lo += min(c * atom.lo, c * atom.hi)
            hi += max(c * atom.lo, c * atom.hi)
        return lo, hi

    def initial_value(self, lin: Lin) -> Fraction:
        """Exact value of a form built from problem atoms at the initial assignment."""
        total = lin.const
        for a, c in lin.terms.items():
            initial = self.atoms[a].initial
            if initial is None:
                raise ValueError("form depends on a variable without an initial value")
            total += c * initial
        return total

    def variable_limit(self, count: int = 1, limit: int = VARIABLE_LIMIT) -> int:
        """The magnitude up to which each of ``count`` new variables may be exact: ``limit``,
        unless the room left for domains (DOMAIN_ROOM) is short. Each takes at most
        1/ROOM_SHARE of the room left, so it never runs out: with many large variables,
        the later ones are rounded more coarsely (their error stated) instead."""
        room = DOMAIN_ROOM - self.cp.domain_sum
        return max(1, min(limit, room // (ROOM_SHARE * count)))

    def magnitude(self, lin: Lin) -> Fraction:
        """The largest magnitude ``lin`` or any partial sum of it can reach: integerized, it
        must stay below :data:`INT_LIMIT` even at the coarsest scale."""
        return abs(lin.const) + sum(abs(c) * max(abs(self.atoms[a].lo), abs(self.atoms[a].hi))
                                    for a, c in lin.terms.items())

    def drift(self, lin: Lin) -> float:
        """How far ``lin`` may lie from what it stands for through its atoms' drift (value
        units): a form of rounded sizes' loads, beside the same form of the sizes'."""
        return float(sum(abs(c) * Fraction(self.atoms[a].drift) for a, c in lin.terms.items()
                         if self.atoms[a].drift))

    @staticmethod
    def denominator(lin: Lin) -> int:
        """The least common denominator of ``lin``'s coefficients and constant."""
        return math.lcm(lin.const.denominator, *(c.denominator for c in lin.terms.values()))

    def integral(self, lin: Lin, limit: int = INT_LIMIT) -> bool:
        """Whether ``integerize`` takes ``lin`` to integers exactly (no rounding)."""
        factor = self.denominator(lin)
        return factor <= MAX_FACTOR and self.magnitude(lin) * factor <= limit

    def integerize(self, lin: Lin, limit: int = INT_LIMIT, *,
                   objective: bool = False, divide: bool = False) -> Integerized:
        """``K·lin`` as an integer form (see ``integerize_all``). ``objective``: the form
        is only minimized (a bucket's objective), which lets a term too fine for the scale
        be coarsened from above instead of rounded (see ``_scaled``)."""
        return self.integerize_all([lin], limit, objective=objective, divide=divide)[0]

    def integerize_all(self, lins: list[Lin], limit: int = INT_LIMIT, *,
                       objective: bool = False, divide: bool = False) -> list[Integerized]:
        """``K·lin`` for each form with one integer factor K: the least common denominator
        when magnitudes allow (exact, up to ``limit``), else a power of ten with the
        rounding error stated; an ``objective`` beyond INT_LIMIT, a power of two below 1
        (its atoms divided as below). ``divide``: a coefficient that power of ten rounds away
        is put on its atom's quotient instead (``_divided``), where the form need not keep
        the caller's atoms (a value to tabulate, a leximin item)."""
        factor = 1
        magnitude = Fraction(0)
        for lin in lins:
            factor = math.lcm(factor, lin.const.denominator,
                              *(c.denominator for c in lin.terms.values()))
            magnitude = max(magnitude, self.magnitude(lin))
        if magnitude * factor > limit or factor > MAX_FACTOR:
            common = common_divisor(lins, factor) if objective else 1
            if common > 1 and magnitude * factor <= limit * common:
                # (an objective only compares values: counted in units of the coefficients'
                # common measure, a term such as moved units over a total with every digit
                # is exact, where the power of ten below rounded its coefficient by percents)
                return [self._scaled(lin, Fraction(0), Fraction(factor, common), objective)
                        for lin in lins]
            if magnitude >= INT_LIMIT:
                if not objective or magnitude >= OBJECTIVE_LIMIT:
                    raise InputError("", "numbers too large to model in CP-SAT's 64-bit "
                                     "integers", shown_magnitude(magnitude))
                # an objective is only minimized, and its value only read: counted in units
                # of a power of two, coarse enough to fit, its rounding stated
                factor = Fraction(1, 1 << math.ceil(math.log2(magnitude / limit) + 1))
                return [self._scaled(*self._divided(lin, factor), factor, objective)
                        for lin in lins]
            factor = 10 ** max(0, int(math.floor(math.log10(limit / max(magnitude, 1)))))
            if divide:
                return [self._scaled(*self._divided(lin, factor), factor, objective)
                        for lin in lins]
        return [self._scaled(lin, Fraction(0), factor, objective) for lin in lins]

    def _divided(self, lin: Lin, factor: int) -> tuple[Lin, Fraction]:
        """``lin`` with each wide exact atom whose coefficient ``factor`` rounds by more than
        COARSE_ROUNDING of the form's magnitude (1/capacity on loads counted in units of
        1e-9) replaced by its quotient by a power of two D (a new atom, equal to
        floor((atom - lo) / D)) with D times the coefficient: taken at
        the middle of its D values, the term is within |coef|·(D - 1)/2 of exact, where
        rounding the coefficient itself loses up to half a unit on every unit of the atom.
        Returns the form and that error (value)."""
        magnitude = self.magnitude(lin) * factor
        divided = Lin(dict(lin.terms), lin.const)
        error = Fraction(0)
        for a, c in lin.terms.items():
            atom = self.atoms[a]
            exact = abs(c * factor)
            if exact == 0 or atom.bounding:
                continue
            loss = abs(exact - round(exact)) * max(abs(atom.lo), abs(atom.hi))
            span = atom.hi - atom.lo
            if loss <= COARSE_ROUNDING * magnitude or span < 4:
                continue
            # the error below, exact·(D - 1)/2 + (span // D)/2, is least near D² = span/exact
            divisor = 1 << max(1, round(math.log2(span / exact) / 2))
            middle = Fraction(divisor - 1, 2)
            # the coefficient D·coef rounded loses up to half a unit on each of span // D
            if divisor >= span or exact * middle + Fraction(span // divisor, 2) >= loss:
                continue
            del divided.terms[a]
            divided += Lin.atom(self._quotient(a, divisor), c * divisor) + c * (atom.lo + middle)
            error += abs(c) * middle
        return divided, error

    def _quotient(self, a: int, divisor: int) -> int:
        """The atom floor((atom - lo) / divisor) of atom ``a``, built once."""
        key = (a, divisor)
        if key not in self._quotients:
            atom = self.atoms[a]
            span = atom.hi - atom.lo
            quotient = self.cp.new_int_var(0, span // divisor, "quotient")
            shifted = self.variable(atom.expr - atom.lo, 0, span, "shifted")
            self.cp.add_division_equality(quotient, shifted, divisor)
            initial = None if atom.initial is None else (atom.initial - atom.lo) // divisor
            self._quotients[key] = self.new_atom(quotient, 0, span // divisor, initial,
                                                 drift=atom.drift and atom.drift / divisor + 1)
        return self._quotients[key]

    def _scaled(self, lin: Lin, divided: Fraction, factor: int | Fraction,
                objective: bool = False) -> Integerized:
        """``factor``·``lin`` rounded to integers, its error stated: ``divided``, what
        ``lin`` already lies from the form it stands for (``_divided``), plus the rounding.
        An ``objective``'s terms are rounded down wherever their atom's sign allows (see
        ``atoms.term_below``): its compiled value then lies above the exact one only by what
        could not be, so the compiled bound less that bounds the exact optimum, however
        coarse the rounding below."""
        atoms, coefs = [], []
        error = over = divided * factor
        lo = hi = 0
        start: int | None = 0
        for a, c in lin.terms.items():
            atom = self.atoms[a]
            if c == 0 or atom.lo == atom.hi == 0:  # an atom fixed at 0 adds nothing, and its
                continue  # coefficient is unbounded by the magnitude (a huge weight, say)
            exact = c * factor
            if atom.drift:  # the sizes' rounding, through it
                error += abs(exact) * Fraction(atom.drift)
                over += abs(exact) * Fraction(atom.drift)
            if objective:
                expr, coef, atom_lo, atom_hi, initial, rounding, above = term_below(
                    self.cp, atom, exact)
                error += rounding
                over += above
            else:
                expr, atom_lo, atom_hi, initial = atom.expr, atom.lo, atom.hi, atom.initial
                if exact.denominator == 1:  # the common case, and no Fraction arithmetic
                    coef = exact.numerator
                else:
                    coef = round(exact)
                    rounding = abs(exact - coef) * max(abs(atom.lo), abs(atom.hi))
                    error += rounding
                    over += rounding
            if coef:
                atoms.append(expr)
                coefs.append(coef)
                lo += min(coef * atom_lo, coef * atom_hi)
                hi += max(coef * atom_lo, coef * atom_hi)
                start = None if start is None or initial is None else start + coef * initial
        exact_const = lin.const * factor
        const = math.floor(exact_const) if objective else round(exact_const)
        error += abs(exact_const - const)
        over += 0 if objective else abs(exact_const - const)
        expr = cp_model.LinearExpr.weighted_sum(atoms, coefs) + const if atoms else const
        return Integerized(expr, Fraction(factor), lo + const, hi + const,
                           float(error / factor) if error else 0.0,
                           None if start is None else start + const,
                           float(over / factor) if over else 0.0)

    def cut_above(self, lin: Lin, level: Fraction) -> None:
        """Narrow the atoms of ``lin`` to the values at which ``lin`` can still be at most
        ``level``, the others at their most favourable: a term can take no more than the
        level leaves it. Valid where only assignments at or below ``level`` matter (a
        bucket's objective, below an assignment it holds); it brings a huge objective (a
        soft limit's excess over loads near 1e15, at a large cost) back within 64 bits."""
        lowest = lin.const + sum(min(c * self.atoms[a].lo, c * self.atoms[a].hi)
                                 for a, c in lin.terms.items())
        for a, c in lin.terms.items():
            atom = self.atoms[a]
            if c == 0 or not isinstance(atom.expr, cp_model.IntVar):
                continue
            room = (level - lowest) / c  # how far the atom may move from its best end
            if c > 0:
                lo, hi = atom.lo, min(atom.hi, atom.lo + math.floor(room))
            else:
                lo, hi = max(atom.lo, atom.hi - math.floor(-room)), atom.hi
            if lo > hi or (lo, hi) == (atom.lo, atom.hi):
                continue  # (lo > hi: no assignment reaches the level; the search says so)
            self.cp.narrow(atom.expr, lo, hi)
            atom.lo, atom.hi = lo, hi

    def note_error(self, what: str, error: float, *, over: float | None = None) -> None:
        """``error`` bounds |compiled - exact| of what ``what`` compiled; ``over`` (all of it
        unless given) bounds how far the compiled value may lie above the exact one."""
        if error > 0:
            self.errors[what] = self.errors.get(what, 0.0) + error
        over = error if over is None else over
        if over > 0:
            self.overs[what] = self.overs.get(what, 0.0) + over

    @contextmanager
    def errors_scaled(self, factor: float) -> Iterator[None]:
        """Errors noted meanwhile belong to terms the caller then scales by ``factor`` (a
        balance's mean over its items): they are kept at that scale."""
        before = dict(self.errors), dict(self.overs)
        yield
        for noted, earlier in zip((self.errors, self.overs), before):
            for what, value in list(noted.items()):
                start = earlier.get(what, 0.0)
                noted[what] = start + (value - start) * factor

    def rule_form(self, lin: Lin, tolerance: Fraction = TOLERANCE_FRACTION
                  ) -> tuple[Integerized, int]:
        """``lin`` <= ``tolerance`` as ``form.expr <= limit`` over integers. A rule reads
        only the sign, so the coefficients are divided by their greatest common divisor (as
        fractions) and the constant is floored: exact whenever those integers fit in 64 bits
        (coefficients of one magnitude over loads near 1e17, which a power-of-ten scale
        rounds by percents). Else the rounded form, lenient by its error (see ``require``).
        ``limit`` is kept within [form.lo - 1, form.hi], where it means the same."""
        live = [(a, c) for a, c in lin.terms.items()
                if c != 0 and not self.atoms[a].lo == self.atoms[a].hi == 0]
        form = None
        if live:
            g = Fraction(math.gcd(*(c.numerator for _, c in live)),
                         math.lcm(*(c.denominator for _, c in live)))
            coefs = [int(c / g) for _, c in live]
            ranges = [(self.atoms[a].lo, self.atoms[a].hi) for a, _ in live]
            if sum(abs(n) * max(abs(lo), abs(hi)) for n, (lo, hi) in zip(coefs, ranges)) \
                    < INT_LIMIT:
                expr = cp_model.LinearExpr.weighted_sum([self.atoms[a].expr for a, _ in live],
                                                        coefs)
                lo = sum(min(n * lo, n * hi) for n, (lo, hi) in zip(coefs, ranges))
                hi = sum(max(n * lo, n * hi) for n, (lo, hi) in zip(coefs, ranges))
                form = Integerized(expr, 1 / g, lo, hi)
                limit = math.floor((tolerance - lin.const) / g)
        if form is None:
            form = self.integerize(lin)
            limit = math.ceil(form.error * form.factor) + math.floor(form.factor * tolerance)
        return form, min(max(limit, form.lo - 1), form.hi)

    # ---- building blocks specs compile to ----
    def gate(self, lin: Lin) -> object:
        """Literal true exactly when ``lin`` > 0 (up to the rounding of a form that could
        not be exact, see rule_form)."""
        key = (tuple(sorted(lin.terms.items())), lin.const)
        if key not in self._gates:
            form, limit = self.rule_form(lin, Fraction(0))
            literal = self.cp.new_bool_var("gate")
            self.cp.add(form.expr >= limit + 1).only_enforce_if(literal)
            self.cp.add(form.expr <= limit).only_enforce_if(literal.Not())
            self._gates[key] = literal
        return self._gates[key]

    def positive_part(self, lin: Lin, gate: Lin | None = None, what: str = "", *,
                      below: bool = False, at_most: Fraction | None = None) -> Lin:
        """max(0, lin) as a form (a new integer variable), zero unless ``gate`` > 0.
        ``below``: a term only minimized with a cost that is not negative (a soft term) is
        lowered by its rounding, so that it never exceeds max(0, lin): the compiled
        optimum then bounds the exact one with no allowance for this term, and where lin
        is well below 0 (a soft rule kept with room) the term is exactly 0. ``at_most``:
        what a hard rule holds lin to (no worse than initially), which narrows the
        variable: an objective's rounding on it is smaller the narrower it is."""
        form = self.integerize(lin, self.variable_limit())
        ratio = None
        if form.error > COARSE_ROUNDING * float(self.magnitude(lin)):
            # the small domain rounds a fine coefficient of a large sum away (decimal sizes
            # near 1e13): z keeps its scale, and its rule keeps lin exactly if it can (see
            # _ratio_rule); else z counts in the exact rule's own units (_own_unit_rule) or a
            # finer scale as far as the room for domains allows, whichever is nearer
            ratio = self._ratio_rule(lin, form.factor)
            if ratio is None:
                form = self.integerize(lin, self.variable_limit(limit=INT_LIMIT))
                ratio = self._own_unit_rule(lin, form.error)
        # the rule multiplier·z >= rhs, z in [0, top] counting units of 1/factor, within
        # ``error`` of max(0, lin); with a rule, z is the least integer it allows
        multiplier, rhs, top, factor, error = ((1, form.expr, form.hi, form.factor, form.error)
                                               if ratio is None else ratio)
        if below and error and ratio is None:
            # lowered by whole units of a coarse exact scale (1/1903 of a capacity's excess
            # normalized by its capacity, for sizes' float noise near 1e-13), the term would
            # give up far more than its error: counted in units no coarser than the error,
            # or than FINE_UNIT of its magnitude, as far as its share of the room allows
            unit = max(Fraction(error), FINE_UNIT * self.magnitude(lin))
            finer = min(finer_multiple(self.variable_limit(), max(abs(form.lo), abs(form.hi), 1)),
                        10 ** max(0, math.ceil(math.log10(1 / (unit * form.factor)))))
            rhs, top, factor = form.expr * finer, form.hi * finer, form.factor * finer
        # z within ``error`` of max(0, lin) either way; lowered by that many of its units,
        # it is within twice that below and never above
        lowered = math.ceil(Fraction(error) * factor) if below else 0
        self.note_error(what or "rounding", error + float(lowered / factor),
                        over=0.0 if below else None)
        if at_most is not None:  # the rule is lenient by its rounding and the tolerance
            slack = 2 * Fraction(error) + TOLERANCE_FRACTION
            top = min(top, max(0, math.ceil((at_most + slack) * factor) + 1))
        if top <= 0:
            return Lin()
        if form.lo >= 0 and gate is None and ratio is None and not lowered:
            return lin
        kink = (self._kink(lin, factor) if gate is None and ratio is None and not lowered
                else None)
        if kink is not None and kink[0] > WELL_SCALED:
            return self._excess_in_steps(*kink, factor)
        z = self.cp.new_int_var(0, top, "pos")
        constraint = self.cp.add(multiplier * z >= rhs - multiplier * lowered)
        if gate is not None:
            constraint.only_enforce_if(self.gate(gate))
        elif kink is not None and self.accelerate:
            # the chord below a kink between integers f and f + 1: z >= s·(U - f), with s
            # the excess at f + 1, holds at every integer U (0 up to f, below the slope a
            # beyond) and makes the LP exact at the integers
            a, b, u, f, _ = kink
            if b % a:
                self.cp.add(z >= (a * (f + 1) + b) * (u - f))
        return Lin.atom(self.new_atom(z, 0, top, bounding=True), 1 / factor)

    def _ratio_rule(self, lin: Lin, factor: Fraction
                    ) -> tuple[int, object, int, Fraction, float] | None:
        """z >= ``factor``·lin for an integer z, exactly, as P·z >= Q·E + C over the rule
        form E = lin/g - c/g (see rule_form) with factor·g = Q/P: (P, Q·E + C, z's largest
        value, factor, error) when those integers fit in 64 bits (a load's own unit at a
        power of ten, as a ToFree's excess), else None. z = ceil(factor·lin) lies less than
        one of its units above it."""
        fine, _ = self.rule_form(lin, Fraction(0))
        if fine.error:
            return None
        ratio = factor / fine.factor
        q, p = ratio.numerator, ratio.denominator
        const = math.ceil(q * lin.const * fine.factor)
        hi = -(-(q * fine.hi + const) // p)
        if (q * max(abs(fine.lo), abs(fine.hi)) + abs(const) >= INT_LIMIT
                or p * max(hi, 0) >= INT_LIMIT):
            return None
        return p, q * fine.expr + const, max(hi, 0), factor, float(1 / factor) + self.drift(lin)

    def _own_unit_rule(self, lin: Lin, rounded: float
                       ) -> tuple[int, object, int, Fraction, float] | None:
        """z >= lin in the units of its exact rule form E = lin/g - c/g (rule_form), by
        powers of two D as the room for domains requires: D·z >= E + ceil(c/g), z's unit
        D·g, z less than two units above lin (a normalized excess over loads of decimal
        sizes, whose g has a denominator far beyond any power of ten the sum allows). As
        ``_ratio_rule`` returns it; None when the form is not exact or its error would not
        be below ``rounded``."""
        fine, _ = self.rule_form(lin, Fraction(0))
        const = math.ceil(lin.const * fine.factor)
        if fine.error or abs(const) + max(abs(fine.lo), abs(fine.hi)) >= INT_LIMIT:
            return None
        limit, divisor = self.variable_limit(limit=INT_LIMIT), 1
        while -(-(fine.hi + const) // divisor) > limit:
            divisor *= 2
        factor = fine.factor / divisor
        error = float(2 / factor) + self.drift(lin)
        if error >= rounded:
            return None
        return divisor, fine.expr + const, max(0, -(-(fine.hi + const) // divisor)), factor, error

    def _kink(self, lin: Lin, factor: Fraction) -> tuple[int, int, object, int, int] | None:
        """A one-atom form K·lin = a·U + b (K = ``factor``, rounded as ``_scaled`` rounds it)
        written with a > 0 over U = ±atom, whose kink -b/a lies in U's range, as
        (a, b, U, f = floor(-b/a), U's largest value); None for a form over several atoms."""
        live = [(a, c) for a, c in lin.terms.items() if c != 0]
        if len(live) != 1:
            return None
        atom = self.atoms[live[0][0]]
        a, b = round(live[0][1] * factor), round(lin.const * factor)
        sign = 1 if a > 0 else -1
        f = (-b) // abs(a)
        lo, hi = sorted((sign * atom.lo, sign * atom.hi))
        return (abs(a), b, atom.expr * sign, f, hi) if lo <= f < hi else None

    def _excess_in_steps(self, a: int, b: int, u: object, f: int, hi: int,
                         factor: Fraction) -> Lin:
        """max(0, a·U + b) over integers U as s·y + a·w, with y + w >= U - f, y in {0, 1},
        w >= 0 and s = a·(f + 1) + b, the excess at f + 1 (y is left out where the kink is
        at f itself: s = a). Exact under minimization, and its LP is the hull at the
        integers, in a row of unit coefficients: a rack balance's z >= a·U + b, with a
        near 10^9 against z's 1, can leave GLOP ABNORMAL."""
        s = a * (f + 1) + b
        w = self.cp.new_int_var(0, hi - f, "steps")
        excess = Lin.atom(self.new_atom(w, 0, hi - f, bounding=True), a / factor)
        if s == a:
            self.cp.add(w >= u - f)
            return excess
        y = self.cp.new_bool_var("first_step")
        self.cp.add(y + w >= u - f)
        return excess + Lin.atom(self.new_atom(y, 0, 1, bounding=True), s / factor)

    @staticmethod
    def tolerance_units(form: Integerized) -> int:
        """Rebalancer's 1e-10 comparison tolerance in the integer units of ``form`` (zero
        unless the units are finer); rules and steps take it exactly in rule_form."""
        return math.floor(form.factor * TOLERANCE)

    def step(self, lin: Lin, gate: Lin | None = None) -> Lin:
        """1 when lin > 0 (and gate > 0), else 0: Rebalancer's step(e)."""
        form, limit = self.rule_form(lin)
        if form.hi <= limit:
            return Lin()
        s = self.cp.new_bool_var("step")
        constraint = self.cp.add(form.expr <= limit).only_enforce_if(s.Not())
        if gate is not None:
            constraint.only_enforce_if([s.Not(), self.gate(gate)])
        forced = form.lo > limit and gate is None  # (an item holding a fixed object)
        if forced:
            self.cp.add(s == 1)
        return Lin.atom(self.new_atom(s, int(forced), 1, bounding=True))

    def used(self, load: Lin) -> Lin:
        """step(load) for a load that cannot be negative: 1 when the item holds anything.
        Beyond step's rule, the load is at most its largest feasible value times the
        literal: the linking an LP relaxation needs to bound the number of used items."""
        s = self.step(load)
        form = self.integerize(load)
        if not s.is_constant and form.lo >= 0 and self.tolerance_units(form) == 0:
            self.cp.add(form.expr <= form.hi * self.literal(s))
        return s

    def literal(self, lin: Lin) -> object:
        """The CP-SAT expression behind a one-atom form with coefficient 1 (a step's literal)."""
        live = [(a, c) for a, c in lin.terms.items() if c != 0]
        if not live:
            return int(lin.const)
        ((atom, coef),) = live
        assert coef == 1 and lin.const == 0, "a literal form is one atom with coefficient 1"
        return self.atoms[atom].expr

    def require(self, lin: Lin, rhs: Fraction = Fraction(0), gate: Lin | None = None) -> None:
        """Hard rule lin <= rhs (only when gate > 0, if a gate is given), up to Rebalancer's
        tolerance. A rule that could only be modelled rounded is lenient by the rounding,
        so that no assignment that keeps it is cut off."""
        form, limit = self.rule_form(lin - rhs)
        if form.hi <= limit:
            return
        literals = [self.gate(gate)] if gate is not None else []
        if self.guard is not None:
            literals.append(self.guard)
        elif gate is None and not form.error:
            self._tighten(lin - rhs - TOLERANCE_FRACTION)
        constraint = self.cp.add(form.expr <= limit)
        if literals:
            constraint.only_enforce_if(literals)

    def _tighten(self, lin: Lin) -> None:
        """An exact, unconditional hard rule c·atom + d <= 0 on one atom bounds that atom, so
        that everything built on it later (piecewise-linear ranges, domains) is tighter. Only
        a variable: CP-SAT checks sums for 64-bit overflow on the domains it is given, so an
        expression's bounds must stay the span its variables give it."""
        live = [(a, c) for a, c in lin.terms.items() if c != 0]
        if len(live) != 1 or not isinstance(self.atoms[live[0][0]].expr, cp_model.IntVar):
            return
        coef, atom = live[0][1], self.atoms[live[0][0]]
        limit = -lin.const / coef
        if coef > 0:
            atom.hi = max(atom.lo, min(atom.hi, math.floor(limit)))
        else:
            atom.lo = min(atom.hi, max(atom.lo, math.ceil(limit)))
        # the variable's own domain too: forms built on the atom are sized by its bounds
        domain = self.cp.proto.variables[atom.expr.index].domain
        if len(domain) == 2 and (domain[0] < atom.lo or domain[1] > atom.hi):
            lo, hi = max(domain[0], atom.lo), min(domain[1], atom.hi)
            # an empty range (the rule contradicts a fixed variable) is left to the rule
            # itself, which makes the model infeasible; an empty domain is invalid
            if lo <= hi:
                domain[0], domain[1] = lo, hi

    def as_atom(self, lin: Lin) -> Lin:
        """The same form over a single atom (a new variable when it spans several), so that a
        function of it can be tabulated."""
        live = [a for a, c in lin.terms.items() if c != 0]
        if len(live) <= 1:
            return lin
        form = self.integerize(lin, self.variable_limit(), divide=True)
        self.note_error("rounding", form.error)
        v = self.cp.new_int_var(form.lo, form.hi, "aux")
        self.cp.add(v == form.expr)
        return Lin.atom(self.new_atom(v, form.lo, form.hi, form.initial), 1 / form.factor)

    def bounded_sum(self, parts: list[Lin], total: Fraction) -> Lin:
        """The sum of ``parts``, each never negative and never above ``total`` together, as
        one atom of range [0, total], summed in chunks of whole parts whose rules fit in 64
        bits: what moved is a sum over every container's arrivals, each of which alone may
        reach the whole total, so the sum of their ranges can pass CP-SAT's overflow check
        while its value never can. The plain sum where it fits, or where no two parts fit
        together."""
        whole = lin_sum(parts)
        live = [c for p in parts for c in p.terms.values() if c != 0]
        if not live or any(p.const for p in parts):  # the bound is on the variable parts
            return whole
        g = Fraction(math.gcd(*(c.numerator for c in live)),
                     math.lcm(*(c.denominator for c in live)))
        top = math.floor(total / g)

        def integer(part: Lin) -> tuple[list[object], list[int], int]:
            terms = [(self.atoms[a].expr, int(c / g), max(abs(self.atoms[a].lo),
                                                         abs(self.atoms[a].hi)))
                     for a, c in part.terms.items() if c != 0]
            return ([e for e, _, _ in terms], [n for _, n, _ in terms],
                    sum(abs(n) * m for _, n, m in terms))

        def summed(exprs: list[object], coefs: list[int]) -> cp_model.IntVar:
            v = self.cp.new_int_var(0, top, "partial_sum")
            self.cp.add(v == cp_model.LinearExpr.weighted_sum(exprs, coefs))
            return v

        chunks = [integer(p) for p in parts]
        if sum(span for _, _, span in chunks) < INT_LIMIT or top >= INT_LIMIT:
            return whole
        while len(chunks) > 1:
            merged: list[tuple[list[object], list[int], int]] = []
            for exprs, coefs, span in chunks:
                if merged and merged[-1][2] + span + top < INT_LIMIT:
                    last = merged[-1]
                    merged[-1] = (last[0] + exprs, last[1] + coefs, last[2] + span)
                else:
                    merged.append((exprs, coefs, span))
            if len(merged) == len(chunks):
                return whole  # no two parts fit together: left to rule_form's rounding
            chunks = [([summed(exprs, coefs)], [1], top) for exprs, coefs, _ in merged]
        initial = None
        if all(self.atoms[a].initial is not None for p in parts for a in p.terms):
            initial = int(self.initial_value(whole) / g)
        exprs, coefs, _ = chunks[0]
        total_var = exprs[0] if coefs == [1] else summed(exprs, coefs)  # a single part
        return Lin.atom(self.new_atom(total_var, 0, top, initial), g)

    def variable(self, expr: object, lo: int, hi: int, name: str) -> object:
        """``expr`` as one CP-SAT variable (a new one equal to it when it is a sum): the
        nonlinear constraints (division, maximum, product) then never see a weighted sum,
        whose domain CP-SAT would compute as every sum its terms can make, with no regard
        for the time limit."""
        if isinstance(expr, cp_model.IntVar):
            return expr
        v = self.cp.new_int_var(lo, hi, name)
        self.cp.add(v == expr)
        return v

    def exact_max(self, lins: list[Lin], what: str = "rounding") -> Lin:
        """A form equal to the max of ``lins`` (not only bounding it), for thresholds."""
        if all(lin.is_constant for lin in lins):
            return Lin(const=max(lin.const for lin in lins))
        forms = self._max_forms(lins)
        lo, hi = max(f.lo for f in forms), max(f.hi for f in forms)
        t = self.cp.new_int_var(lo, hi, "exact_max")
        self.cp.add_max_equality(t, [self.variable(f.expr, f.lo, f.hi, "max_term")
                                     for f in forms])
        # terms each within e_i of theirs: their maximum is within the largest e_i of its
        self.note_error(what, max(f.error for f in forms))
        return Lin.atom(self.new_atom(t, lo, hi), 1 / forms[0].factor)

    def maximum(self, lins: list[Lin], what: str = "rounding") -> Lin:
        """A form at least every one of ``lins`` (equal to their max under minimization)."""
        if len(lins) == 1:
            return lins[0]
        forms = self._max_forms(lins)
        lo, hi = max(f.lo for f in forms), max(f.hi for f in forms)
        t = self.cp.new_int_var(lo, hi, "max")
        for f in forms:
            self.cp.add(t >= f.expr)
        self.note_error(what, max(f.error for f in forms))  # (as in exact_max)
        return Lin.atom(self.new_atom(t, lo, hi, bounding=True), 1 / forms[0].factor)

    def _max_forms(self, lins: list[Lin]) -> list[Integerized]:
        """The forms of a maximum, in one unit: where the variables' usual scale rounds one
        by more than COARSE_ROUNDING of its magnitude (1/capacity on loads of sizes with
        every decimal), a finer one as far as the room for domains allows, and a
        coefficient still rounded away is put on its atom's quotient (``_divided``)."""
        forms = self.integerize_all(lins, self.variable_limit(len(lins) + 1))
        if any(f.error > COARSE_ROUNDING * float(self.magnitude(lin))
               for f, lin in zip(forms, lins)):
            forms = self.integerize_all(lins, self.variable_limit(len(lins) + 1, INT_LIMIT),
                                        divide=True)
        return forms
