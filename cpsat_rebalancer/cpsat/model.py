"""The CP-SAT model of an assignment problem: object classes, count variables, utilizations.

Objects with the same initial container, the same dimension values and the same partition
groups, and not named individually by any spec, form a *class*; the model holds one integer
count per (class, allowed container). Because a class shares its initial container, every
utilization definition (AFTER, STAYED, DURING, NEW, OLD, MOVED) stays linear in the counts.
A singleton class is the general case (a boolean per allowed container).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from ortools.sat.python import cp_model

from ..errors import InputError
from ..problem import OUT_OF_SCOPE, Problem, Scope
from .linear import Lin

INT_LIMIT = 2**60  # keep every integerized expression's magnitude below this
DIGITS_TRIED = 9  # decimal digits tried to make a dimension integral


@dataclass
class Atom:
    expr: object  # CP-SAT integer expression (IntVar, LinearExpr or int)
    lo: int
    hi: int
    initial: int | None = None  # value at the initial assignment, when defined by the problem


@dataclass
class Integerized:
    """``K·lin`` as an integer CP-SAT expression, with the rounding error bound (in value)."""

    expr: object
    factor: Fraction  # K
    lo: int
    hi: int
    error: float = 0.0


@dataclass(frozen=True)
class Info:
    """A constraint expression e (meaning e <= 0); with a gate, e counts only when gate > 0."""

    expr: Lin
    gate: Lin | None = None


@dataclass
class ObjectClasses:
    initial: np.ndarray  # initial container per class
    members: list[np.ndarray]  # object indices per class, ascending
    of_object: np.ndarray  # class index per object

    @property
    def sizes(self) -> np.ndarray:
        return np.asarray([len(m) for m in self.members], dtype=np.int64)


def object_classes(problem: Problem, named: set[int]) -> ObjectClasses:
    """Group interchangeable objects (same initial container, dimensions, groups; unnamed)."""
    n = problem.num_objects
    if n == 0:
        return ObjectClasses(np.zeros(0, np.int64), [], np.zeros(0, np.int64))
    columns = [problem.initial.astype(float)]
    columns += [problem.object_dims[d] for d in sorted(problem.object_dims)]
    for name in sorted(problem.partitions):
        group_of = np.full(n, -1.0)
        for g, members in enumerate(problem.partitions[name].values()):
            group_of[members] = g
        columns.append(group_of)
    singleton = np.zeros(n)
    if named:
        idx = np.fromiter(sorted(named), dtype=np.int64)
        singleton[idx] = idx + 1
    columns.append(singleton)
    keys = np.column_stack(columns)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    # order classes by their first object so class numbering follows the input
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    of_object = rank[inverse]
    sort = np.argsort(of_object, kind="stable")
    bounds = np.searchsorted(of_object[sort], np.arange(len(order) + 1))
    members = [sort[bounds[k]:bounds[k + 1]] for k in range(len(order))]
    initial = problem.initial[[m[0] for m in members]]
    return ObjectClasses(initial, members, of_object)


def integral_scale(values: np.ndarray) -> tuple[int, float]:
    """Smallest power of ten making ``values`` integral, and the rounding error per object."""
    top = float(np.max(np.abs(values))) if len(values) else 0.0
    for digits in range(DIGITS_TRIED + 1):
        scale = 10**digits
        scaled = values * scale
        if top * scale > 2**50:
            break
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-9 * np.maximum(1.0, np.abs(scaled))):
            return scale, 0.0
    digits = max(0, min(DIGITS_TRIED, int(math.floor(math.log10(2**50 / max(top, 1e-300))))))
    scale = 10**digits
    error = float(np.max(np.abs(values * scale - np.round(values * scale)))) / scale
    return scale, error


@dataclass
class DimensionScale:
    factor: int  # integer value = round(value * factor)
    values: np.ndarray  # integer value per object (int64)
    error: float  # max |value - integer/factor| per object


class ModelBuilder:
    """Owns the CpModel, the count variables and every shared expression specs compile to."""

    def __init__(self, problem: Problem, fixed: frozenset[int] = frozenset(),
                 non_accepting: frozenset[int] = frozenset(), named: set[int] | None = None):
        self.problem = problem
        self.cp = cp_model.CpModel()
        self.atoms: list[Atom] = []
        self.errors: dict[str, float] = {}
        self.classes = object_classes(problem, set(named or ()) | set(fixed))
        self._scales: dict[str, DimensionScale] = {}
        self._utils: dict[tuple[str, str], tuple[list[int], list[int], np.ndarray]] = {}
        self._gates: dict[tuple, object] = {}
        self._build_counts(fixed, non_accepting)

    # ---- variables ----
    def _build_counts(self, fixed: frozenset[int], non_accepting: frozenset[int]) -> None:
        m = self.problem.num_containers
        accepting = np.ones(m, dtype=bool)
        accepting[list(non_accepting)] = False
        var_class, var_cont, variables = [], [], []
        self.class_vars: list[list[int]] = []
        for k, members in enumerate(self.classes.members):
            home = int(self.classes.initial[k])
            size = len(members)
            if size == 1 and int(members[0]) in fixed:
                allowed = [home]
            else:
                mask = accepting.copy()
                mask[home] = True
                allowed = np.flatnonzero(mask).tolist()
            row = []
            self.class_vars.append(list(range(len(variables), len(variables) + len(allowed))))
            for c in allowed:
                var = (self.cp.new_bool_var(f"x{k}_{c}") if size == 1
                       else self.cp.new_int_var(0, size, f"n{k}_{c}"))
                row.append(var)
                var_class.append(k)
                var_cont.append(c)
            variables.extend(row)
            self.cp.add(sum(row) == size) if len(row) > 1 else self.cp.add(row[0] == size)
        self.var_class = np.asarray(var_class, dtype=np.int64)
        self.var_cont = np.asarray(var_cont, dtype=np.int64)
        self.count_vars = variables

    def scale(self, dim: str) -> DimensionScale:
        if dim not in self._scales:
            values = self.problem.object_dims[dim]
            factor, error = integral_scale(values)
            ints = np.round(values * factor).astype(np.int64)
            if int(ints.sum()) >= INT_LIMIT // 4:
                raise InputError(f"objectDimensions.{dim}", "values too large to model exactly "
                                 "in CP-SAT's 64-bit integers")
            self._scales[dim] = DimensionScale(factor, ints, error)
            if error:
                self.errors[f"dimension {dim} rounding (per object)"] = error
        return self._scales[dim]

    def new_atom(self, expr: object, lo: int, hi: int, initial: int | None = None) -> int:
        self.atoms.append(Atom(expr, int(lo), int(hi), initial))
        return len(self.atoms) - 1

    # ---- utilizations ----
    def _util_atoms(self, scope: Scope, dim: str):
        """Atoms AFTER_i and STAYED_i (integer units) and integer INITIAL_i per item."""
        key = (scope.name, dim)
        if key not in self._utils:
            ints = self.scale(dim).values
            class_value = np.asarray([int(ints[m[0]]) for m in self.classes.members], np.int64)
            n_items = len(scope.items)
            initial_item = scope.container_item[self.problem.initial]
            initial_util = np.zeros(n_items, dtype=np.int64)
            inside = initial_item != OUT_OF_SCOPE
            np.add.at(initial_util, initial_item[inside], ints[inside])
            item_of_var = scope.container_item[self.var_cont]
            home_item = scope.container_item[self.classes.initial][self.var_class]
            coef = class_value[self.var_class]
            after, stayed = [], []
            order = np.argsort(item_of_var, kind="stable")
            bounds = np.searchsorted(item_of_var[order], np.arange(n_items + 1))
            total = int(ints.sum())
            for i in range(n_items):
                chosen = order[bounds[i]:bounds[i + 1]]
                chosen = chosen[coef[chosen] != 0]
                stay = chosen[home_item[chosen] == i]
                after.append(self.new_atom(self._weighted(chosen, coef), 0, total,
                                           int(initial_util[i])))
                stayed.append(self.new_atom(self._weighted(stay, coef), 0, int(initial_util[i]),
                                            int(initial_util[i])))
            self._utils[key] = (after, stayed, initial_util)
        return self._utils[key]

    def _weighted(self, chosen: np.ndarray, coef: np.ndarray) -> object:
        if len(chosen) == 0:
            return 0
        return cp_model.LinearExpr.weighted_sum([self.count_vars[j] for j in chosen],
                                                coef[chosen].tolist())

    def util(self, scope: Scope, dim: str, metric: str) -> list[Lin]:
        """Absolute utilization per item under a definition, on the user's scale."""
        after, stayed, initial = self._util_atoms(scope, dim)
        unit = Fraction(1, self.scale(dim).factor)
        result = []
        for i in range(len(scope.items)):
            a, s, init = Lin.atom(after[i], unit), Lin.atom(stayed[i], unit), initial[i] * unit
            result.append({
                "AFTER": a, "INITIAL": Lin(const=init), "STAYED": s, "DURING": a + init - s,
                "NEW": a - s, "OLD": (s * -1) + init, "MOVED": a + init - s * 2,
            }[metric])
        return result

    def initial_util(self, scope: Scope, dim: str) -> list[Fraction]:
        """Exact initial utilization per item."""
        _, _, initial = self._util_atoms(scope, dim)
        unit = Fraction(1, self.scale(dim).factor)
        return [int(v) * unit for v in initial]

    def object_in_item(self, obj: int, scope: Scope, item: int) -> Lin:
        """1 when the (singleton-class) object ends in ``item`` of ``scope``."""
        k = int(self.classes.of_object[obj])
        assert len(self.classes.members[k]) == 1, "named objects are singleton classes"
        chosen = [j for j in self.class_vars[k]
                  if scope.container_item[self.var_cont[j]] == item]
        initial = int(scope.container_item[self.problem.initial[obj]] == item)
        if not chosen:
            return Lin()
        expr = sum(self.count_vars[j] for j in chosen)
        return Lin.atom(self.new_atom(expr, 0, 1, initial))

    def out_of_scope_new(self, scope: Scope, dim: str) -> Lin:
        """Size of objects moved from inside ``scope`` to outside it (MinimizeMovement)."""
        ints = self.scale(dim).values
        outside = scope.container_item[self.var_cont] == OUT_OF_SCOPE
        home_inside = scope.container_item[self.classes.initial][self.var_class] != OUT_OF_SCOPE
        chosen = np.flatnonzero(outside & home_inside)
        class_value = np.asarray([int(ints[m[0]]) for m in self.classes.members], np.int64)
        coef = class_value[self.var_class]
        chosen = chosen[coef[chosen] != 0]
        atom = self.new_atom(self._weighted(chosen, coef), 0, int(ints.sum()), 0)
        return Lin.atom(atom, Fraction(1, self.scale(dim).factor))

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

    def integerize(self, lin: Lin, limit: int = INT_LIMIT) -> Integerized:
        return self.integerize_all([lin], limit)[0]

    def integerize_all(self, lins: list[Lin], limit: int = INT_LIMIT) -> list[Integerized]:
        """``K·lin`` for each form with one integer factor K: the least common denominator
        when magnitudes allow (exact), else a power of ten with the rounding error stated."""
        factor = 1
        magnitude = Fraction(0)
        for lin in lins:
            factor = math.lcm(factor, lin.const.denominator,
                              *(c.denominator for c in lin.terms.values()))
            magnitude = max(magnitude, abs(lin.const) + sum(
                abs(c) * max(abs(self.atoms[a].lo), abs(self.atoms[a].hi))
                for a, c in lin.terms.items()))
        if magnitude * factor > limit:
            if magnitude >= limit:
                raise InputError("", "numbers too large to model in CP-SAT's 64-bit integers",
                                 float(magnitude))
            factor = 10 ** int(math.floor(math.log10(limit / max(magnitude, 1))))
        return [self._scaled(lin, factor) for lin in lins]

    def _scaled(self, lin: Lin, factor: int) -> Integerized:
        atoms, coefs = [], []
        error = Fraction(0)
        lo = hi = 0
        for a, c in lin.terms.items():
            if c == 0:
                continue
            atom = self.atoms[a]
            exact = c * factor
            coef = round(exact)
            error += abs(exact - coef) * max(abs(atom.lo), abs(atom.hi))
            if coef:
                atoms.append(atom.expr)
                coefs.append(coef)
                lo += min(coef * atom.lo, coef * atom.hi)
                hi += max(coef * atom.lo, coef * atom.hi)
        exact_const = lin.const * factor
        const = round(exact_const)
        error += abs(exact_const - const)
        expr = cp_model.LinearExpr.weighted_sum(atoms, coefs) + const if atoms else const
        return Integerized(expr, Fraction(factor), lo + const, hi + const, float(error / factor))

    def note_error(self, what: str, error: float) -> None:
        if error > 0:
            self.errors[what] = self.errors.get(what, 0.0) + error

    # ---- building blocks specs compile to ----
    def gate(self, lin: Lin) -> object:
        """Literal true exactly when ``lin`` > 0 (lin integer-valued once integerized)."""
        key = (tuple(sorted(lin.terms.items())), lin.const)
        if key not in self._gates:
            form = self.integerize(lin)
            literal = self.cp.new_bool_var("gate")
            self.cp.add(form.expr >= 1).only_enforce_if(literal)
            self.cp.add(form.expr <= 0).only_enforce_if(literal.Not())
            self._gates[key] = literal
        return self._gates[key]

    def positive_part(self, lin: Lin, gate: Lin | None = None, what: str = "") -> Lin:
        """max(0, lin) as a form (a new integer variable), zero unless ``gate`` > 0."""
        form = self.integerize(lin)
        self.note_error(what or "rounding", form.error)
        if form.hi <= 0:
            return Lin()
        if form.lo >= 0 and gate is None:
            return lin
        z = self.cp.new_int_var(0, form.hi, "pos")
        constraint = self.cp.add(z >= form.expr)
        if gate is not None:
            constraint.only_enforce_if(self.gate(gate))
        return Lin.atom(self.new_atom(z, 0, form.hi), 1 / form.factor)

    def step(self, lin: Lin, gate: Lin | None = None) -> Lin:
        """1 when lin > 0 (and gate > 0), else 0: Rebalancer's step(e)."""
        form = self.integerize(lin)
        if form.hi <= 0:
            return Lin()
        s = self.cp.new_bool_var("step")
        constraint = self.cp.add(form.expr <= 0).only_enforce_if(s.Not())
        if gate is not None:
            constraint.only_enforce_if([s.Not(), self.gate(gate)])
        if form.lo > 0 and gate is None:
            self.cp.add(s == 1)
        return Lin.atom(self.new_atom(s, 0, 1))

    def require(self, lin: Lin, rhs: Fraction = Fraction(0), gate: Lin | None = None) -> None:
        """Hard rule lin <= rhs (only when gate > 0, if a gate is given)."""
        form = self.integerize(lin - rhs)
        slack = math.ceil(form.error * form.factor) if form.error else 0
        if form.lo <= slack and form.hi <= slack:
            return
        constraint = self.cp.add(form.expr <= slack)
        if gate is not None:
            constraint.only_enforce_if(self.gate(gate))

    def as_atom(self, lin: Lin) -> Lin:
        """The same form over a single atom (a new variable when it spans several), so that a
        function of it can be tabulated."""
        live = [a for a, c in lin.terms.items() if c != 0]
        if len(live) <= 1:
            return lin
        form = self.integerize(lin)
        self.note_error("rounding", form.error)
        v = self.cp.new_int_var(form.lo, form.hi, "aux")
        self.cp.add(v == form.expr)
        initial = None
        if all(self.atoms[a].initial is not None for a in live):
            initial = round(self.initial_value(lin) * form.factor)
        return Lin.atom(self.new_atom(v, form.lo, form.hi, initial), 1 / form.factor)

    def exact_max(self, lins: list[Lin], what: str = "rounding") -> Lin:
        """A form equal to the max of ``lins`` (not only bounding it), for thresholds."""
        if all(lin.is_constant for lin in lins):
            return Lin(const=max(lin.const for lin in lins))
        forms = self.integerize_all(lins)
        lo, hi = max(f.lo for f in forms), max(f.hi for f in forms)
        t = self.cp.new_int_var(lo, hi, "exact_max")
        self.cp.add_max_equality(t, [f.expr for f in forms])
        for f in forms:
            self.note_error(what, f.error)
        return Lin.atom(self.new_atom(t, lo, hi), 1 / forms[0].factor)

    def maximum(self, lins: list[Lin], what: str = "rounding") -> Lin:
        """A form at least every one of ``lins`` (equal to their max under minimization)."""
        if len(lins) == 1:
            return lins[0]
        forms = self.integerize_all(lins)
        lo, hi = max(f.lo for f in forms), max(f.hi for f in forms)
        t = self.cp.new_int_var(lo, hi, "max")
        for f in forms:
            self.cp.add(t >= f.expr)
            self.note_error(what, f.error)
        return Lin.atom(self.new_atom(t, lo, hi), 1 / forms[0].factor)
