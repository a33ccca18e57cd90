"""Utilization expressions of an assignment model: each dimension scaled to integers, the
AFTER / STAYED / DURING load of every scope item, stays, in-flight moves and partition
groups' shares, built once and shared by every spec that reads them. The CP-SAT builder
(``builder.CpBuilder``) inherits them; they read its count variables."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from ortools.sat.python import cp_model

from ..errors import InputError, InternalError
from ..primitives import TOLERANCE
from ..problem import OUT_OF_SCOPE, Problem, Scope
from .classes import DimensionScale, ObjectClasses, drift_of, integral_scale, item_groups
from .domains import DOMAIN_ROOM
from .forms import INT_LIMIT, IntegerForms
from .linear import Lin


class Utilizations(IntegerForms):
    """The load expressions specs compile against, cached per (scope, dimension)."""

    # set by the builder (builder.CpBuilder) before any expression is asked for
    problem: Problem
    cp: cp_model.CpModel
    classes: ObjectClasses
    class_dims: frozenset[str] | None

    def __init__(self) -> None:
        super().__init__()
        self._scales: dict[str, DimensionScale] = {}
        self._utils: dict[tuple[str, str], tuple[list[int], list[int] | None, np.ndarray]] = {}
        # a STAYED variable's index -> the expression over the stay counts it stands for
        self.stayed_definitions: dict[int, object] = {}
        self._stays: dict[str, dict[tuple[int, int], tuple[object, int]]] = {}
        self._group_utils: dict[tuple, list[Lin]] = {}
        self._peaks: dict[tuple[str, str, str], list[Lin]] = {}  # vector dimensions' peaks
        self._class_value_cache: dict[str, np.ndarray] = {}
        # per (scope, item): a literal false only where the item holds no object
        self._occupancy: dict[tuple[str, int], object] = {}
        self._vars_by_item: dict[str, list[np.ndarray]] = {}  # per scope: count vars per item
        self._var_value_cache: dict[str, np.ndarray] = {}
        # per (scope, dim, item): NEW as an atom of its own where moves are in flight
        self._new_loads: dict[tuple[str, str, int], int] = {}

    def scale(self, dim: str) -> DimensionScale:
        if dim not in self._scales:
            vector = self._vector_of().get(dim)
            if vector is not None:
                self._scale_vector(vector)
                return self._scales[dim]
            problem = self.problem
            dynamic = problem.dynamic_dims.get(dim)
            values = problem.object_dims[dim] if dynamic is None else dynamic.by_item
            total = float(values.sum() if dynamic is None else values.max(axis=1).sum())
            factor, error = self._integral_scale(values.ravel(), total)
            scaled = np.round(values * factor)
            lost = np.argwhere((values != 0) & (scaled == 0))
            if len(lost):  # a size taken for 0 changes every step at 0: refused, not rounded
                where = lost[0]
                path = (f"objectDimensions.{dim}.{problem.objects[where[0]]}" if dynamic is None
                        else f"dynamicObjectDimensions.{dim}")
                raise InputError(path, "too small to model exactly beside the dimension's "
                                 f"largest value {float(np.abs(values).max()):g}: it is "
                                 f"modelled in steps of {1 / factor:g}, and this rounds to 0",
                                 float(values[tuple(where)]))
            most = float(scaled.sum() if dynamic is None else scaled.max(axis=1).sum())
            if most >= INT_LIMIT // 4:
                raise InputError(f"objectDimensions.{dim}", "values too large to model in "
                                 "CP-SAT's 64-bit integers (total of the dimension)",
                                 most / factor)
            ints = scaled.astype(np.int64)
            # the values' common factor is divided out: a load that is a large multiple of
            # one variable gets wrong bounds from CP-SAT's presolve (read by the
            # accelerators), and smaller coefficients serve every solve
            common = max(1, int(np.gcd.reduce(np.abs(ints.ravel())))) if ints.size else 1
            ints //= common
            unit = Fraction(factor, common)  # integer value = value * unit
            drift = drift_of(values, factor, scaled, common)
            if dynamic is None:
                self._scales[dim] = DimensionScale(unit, ints, error, drift=drift)
            else:
                scope = problem.scopes[dynamic.scope]
                at_initial = np.round(dynamic.values_at(scope, problem.initial) * factor)
                self._scales[dim] = DimensionScale(
                    unit, at_initial.astype(np.int64) // common, error, ints, drift)
            if error:
                self.roundings[f"dimension {dim} rounding (per object)"] = error
        return self._scales[dim]

    def _integral_scale(self, values: np.ndarray, total: float) -> tuple[int, float]:
        """A dimension's scale: the smallest power of ten making its values integral, with
        totals within CP-SAT's integers. Where none does (decimals with every digit), the
        values are rounded anyway, and no finer than keeps its loads within their share of
        the room for domains (``_load_limit``): loads in units of 1e-9 would take all of it,
        and every form built on them would then be rounded to a handful of values."""
        factor, error = integral_scale(values, total, INT_LIMIT // 4)
        if error:
            factor, error = integral_scale(values, total, min(INT_LIMIT // 4,
                                                              self._load_limit()))
        return factor, error

    def _load_limit(self) -> int:
        """The largest total (integer units) whose loads are variables: a variable per item
        of every scope and dimension, each spanning the total, take at most half the room
        for domains (DOMAIN_ROOM). Larger loads stay linear expressions, which cost none."""
        problem = self.problem
        items = sum(len(scope.items) for scope in problem.scopes.values())
        dims = len(problem.object_dims) + len(problem.dynamic_dims)
        return DOMAIN_ROOM // (2 * max(1, items * dims))

    def _vector_of(self) -> dict[str, str]:
        """The vector dimension each entry dimension belongs to."""
        return {entry: vector for vector, entries in self.problem.vector_dims.items()
                for entry in entries}

    def _scale_vector(self, vector: str) -> None:
        """One integer scale for all entries of a vector dimension: their loads are compared
        (the peak is their max), so they must count in the same units."""
        problem = self.problem
        entries = problem.vector_dims[vector]
        values = np.column_stack([problem.object_dims[e] for e in entries])
        factor, error = self._integral_scale(values.ravel(),
                                             float(values.sum(axis=0).max(initial=0)))
        scaled = np.round(values * factor)
        lost = np.argwhere((values != 0) & (scaled == 0))
        if len(lost):
            obj, entry = lost[0]
            raise InputError(f"objectDimensionVectors.{vector}.{problem.objects[obj]}[{entry}]",
                             "too small to model exactly beside the vector's largest value "
                             f"{float(values.max()):g}: it is modelled in steps of "
                             f"{1 / factor:g}, and this rounds to 0", float(values[obj, entry]))
        most = float(scaled.sum(axis=0).max()) if scaled.size else 0.0
        if most >= INT_LIMIT // 4:
            raise InputError(f"objectDimensionVectors.{vector}", "values too large to model "
                             "in CP-SAT's 64-bit integers (total of an entry)", most / factor)
        ints = scaled.astype(np.int64)
        common = max(1, int(np.gcd.reduce(np.abs(ints.ravel())))) if ints.size else 1
        ints //= common
        unit = Fraction(factor, common)
        for k, entry in enumerate(entries):
            drift = drift_of(values[:, k], factor, scaled[:, k], common)
            self._scales[entry] = DimensionScale(unit, np.ascontiguousarray(ints[:, k]), error,
                                                 drift=drift)
        if error:
            self.roundings[f"dimension {vector} rounding (per object)"] = error

    def _peak(self, lins: list[Lin]) -> Lin:
        """The largest of a vector's entry forms, exactly: equal to the max, not only above
        it, since specs also reward larger loads (a MIN capacity, a moving average, a
        negative weight). Its value at the initial assignment is the initial max."""
        if len(lins) == 1:
            return lins[0]
        peak = self.exact_max(lins, what="vector dimension peak")
        live = [(a, c) for a, c in peak.terms.items() if c != 0]
        known = all(self.atoms[a].initial is not None for lin in lins for a in lin.terms)
        if len(live) == 1 and known:
            atom, coef = live[0]
            start = max(self.initial_value(lin) for lin in lins) / coef
            if start.denominator == 1:
                self.atoms[atom].initial = int(start)
        return peak

    def _vector_util(self, scope: Scope, vector: str, metric: str) -> list[Lin]:
        """Per item, the largest of the entries' utilizations under ``metric``
        (docs/semantics.md#vector-dimensions)."""
        key = (scope.name, vector, metric)
        if key not in self._peaks:
            per_entry = [self.util(scope, entry, metric)
                         for entry in self.problem.vector_dims[vector]]
            self._peaks[key] = [self._peak(list(item)) for item in zip(*per_entry)]
        return self._peaks[key]

    # ---- utilizations ----
    def _class_values(self, dim: str) -> np.ndarray:
        """Integer value of a static ``dim`` per class (built once per dimension: specs read
        it per partition group; read-only)."""
        if dim in self.problem.dynamic_dims:
            raise InternalError(f"dimension {dim} is dynamic: its value depends on where")
        self._check_classed(dim)
        if dim not in self._class_value_cache:
            ints = self.scale(dim).values
            first = np.asarray([m[0] for m in self.classes.members], dtype=np.int64)
            values = ints[first].astype(np.int64) if len(first) else np.zeros(0, np.int64)
            values.flags.writeable = False
            self._class_value_cache[dim] = values
        return self._class_value_cache[dim]

    def _check_classed(self, dim: str) -> None:
        if self.class_dims is not None and dim not in self.class_dims:
            raise InternalError(f"dimension {dim} is read by no spec: a class's objects may "
                                "differ in it")

    def var_values(self, dim: str) -> np.ndarray:
        """Integer value of ``dim`` per count variable: of its class, in its container."""
        scale = self.scale(dim)
        if scale.table is None:
            if dim not in self._var_value_cache:
                values = self._class_values(dim)[self.var_class]
                values.flags.writeable = False
                self._var_value_cache[dim] = values
            return self._var_value_cache[dim]
        self._check_classed(dim)
        dynamic = self.problem.dynamic_dims[dim]
        items = item_groups(self.problem.scopes[dynamic.scope])[self.var_cont]
        first = np.asarray([m[0] for m in self.classes.members], dtype=np.int64)
        return scale.table[first[self.var_class], items]

    def stay_counts(self, scope: Scope) -> dict[tuple[int, int], tuple[object, int]]:
        """Per (class, group) with initial objects there: how many stay, min(final, initial),
        as an expression and its upper bound. Groups are items plus the out-of-scope one."""
        if scope.name not in self._stays:
            groups = item_groups(scope)
            var_group = groups[self.var_cont]
            stays = {}
            for k, home in enumerate(self.classes.home):
                initial: dict[int, int] = {}
                for c, count in home.items():
                    initial[int(groups[c])] = initial.get(int(groups[c]), 0) + count
                size = len(self.classes.members[k])
                by_group: dict[int, list[int]] = {}
                for j in self.class_vars[k]:
                    by_group.setdefault(int(var_group[j]), []).append(j)
                for group, count in initial.items():
                    chosen = by_group.get(group, [])
                    final = (self.count_vars[chosen[0]] if len(chosen) == 1 else
                             sum(self.count_vars[j] for j in chosen) if chosen else 0)
                    if count >= size or not chosen:  # all of the class started here
                        stays[(k, group)] = (final, count)
                        continue
                    stay = self.cp.new_int_var(0, count, f"stay{k}_{scope.name}{group}")
                    self.cp.add_min_equality(stay, [final, count])
                    stays[(k, group)] = (stay, count)
            self._stays[scope.name] = stays
        return self._stays[scope.name]

    def vars_by_item(self, scope: Scope) -> list[np.ndarray]:
        """Per item of ``scope``: the count variables of its containers, in index order."""
        if scope.name not in self._vars_by_item:
            where = scope.container_item[self.var_cont]
            order = np.argsort(where, kind="stable")
            bounds = np.searchsorted(where[order], np.arange(len(scope.items) + 1))
            self._vars_by_item[scope.name] = [order[bounds[i]:bounds[i + 1]]
                                              for i in range(len(scope.items))]
        return self._vars_by_item[scope.name]

    def occupancy(self, scope: Scope, item: int) -> object:
        """A literal false only where an item of ``scope`` holds no object (free to be true
        where it holds none), one per item whoever asks: a MinimizeContainers' used literal
        where any object makes the item used (``item_used``), else one the item's counts
        are tied to. A rule that reads an empty item (GroupDiversity: no group is there)
        ties to it, and so to the count of used items, for an LP."""
        key = (scope.name, item)
        if key not in self._occupancy:
            inside = self.vars_by_item(scope)[item]
            literal = self.cp.new_bool_var(f"occupied_{scope.name}{item}")
            if len(inside):
                most = min(int(self.count_upper[inside].sum()), self.problem.num_objects)
                self.cp.add(cp_model.LinearExpr.sum([self.count_vars[j] for j in inside])
                            <= most * literal)
            self._occupancy[key] = literal
        return self._occupancy[key]

    def item_used(self, scope: Scope, item: int, load: Lin) -> Lin:
        """``used(load)`` for an item of ``scope`` that any object makes used on its own:
        its literal is then the item's occupancy (``occupancy``), its own step where it
        comes first, else the literal already there (false only where the item is empty,
        so where the load is 0), with the row that bounds the load by it."""
        key = (scope.name, item)
        if key not in self._occupancy:
            used = self.used(load)
            if not used.is_constant:
                self._occupancy[key] = self.literal(used)
            return used
        literal = self._occupancy[key]
        form = self.integerize(load)
        if form.lo >= 0:
            self.cp.add(form.expr <= form.hi * literal)
        return Lin.atom(self.new_atom(literal, 0, 1, bounding=True))

    def _util_atoms(self, scope: Scope, dim: str, stayed: bool = True):
        """Atoms AFTER_i and STAYED_i (integer units; STAYED only built when asked for) and
        integer INITIAL_i per item."""
        key = (scope.name, dim)
        if key not in self._utils:
            ints = self.scale(dim).values
            n_items = len(scope.items)
            initial_util = self._item_totals(scope, ints, self.problem.initial)
            coef = self.var_values(dim)
            by_item = self.vars_by_item(scope)
            total = self.scale(dim).most
            # a variable per load (not just an expression): presolve then derives its
            # bounds from every rule built on it, which load_caps() reads back; unless the
            # loads would take too much of the room for domains (see _load_limit)
            as_variables = total <= self._load_limit()
            if not as_variables:  # the accelerators read loads as variables
                self.accelerate = False
            after = []
            for i in range(n_items):
                chosen = by_item[i]
                chosen = chosen[coef[chosen] != 0]
                load = self._weighted(chosen, coef)
                # what the objects that cannot leave (fixed, held) put there at least
                least = min(total, max(0, int(np.dot(coef[chosen], np.where(
                    coef[chosen] > 0, self.count_lower[chosen], self.count_upper[chosen])))))
                if as_variables:
                    variable = self.cp.new_int_var(least, total, f"load_{scope.name}{i}_{dim}")
                    self.cp.add(variable == load)
                    load = variable
                after.append(self.new_atom(load, least, total, int(initial_util[i]),
                                           drift=self.scale(dim).drift))
            reference_util = self._item_totals(scope, ints, self.problem.reference)
            self._utils[key] = (after, None, reference_util)
        after, stays, reference_util = self._utils[key]
        if stayed and stays is None:
            ints = self.scale(dim).values
            class_value = self._class_values(dim)
            by_item: list[list[tuple[object, int]]] = [[] for _ in range(len(scope.items))]
            for (k, group), (expr, _) in self.stay_counts(scope).items():
                if group < len(scope.items) and class_value[k] != 0:
                    by_item[group].append((expr, int(class_value[k])))
            start = self._item_totals(scope, ints, self.problem.initial)
            offset = self._in_flight_stays(scope, ints)
            # a variable where the loads are variables: the rules on what stayed (a
            # movement rule) then read no count, and the load relaxation keeps them
            as_variables = ints.min(initial=0) >= 0 and all(
                isinstance(self.atoms[a].expr, cp_model.IntVar) for a in after)
            stays = []
            for i, terms in enumerate(by_item):
                held = int(start[i] - offset[i])
                expr = (cp_model.LinearExpr.weighted_sum([e for e, _ in terms],
                                                         [v for _, v in terms])
                        if terms else 0) - int(offset[i])
                if as_variables and terms:
                    variable = self.cp.new_int_var(0, held, f"stayed_{scope.name}{i}_{dim}")
                    self.cp.add(variable == expr)
                    self.stayed_definitions[variable.Index()] = expr
                    expr = variable
                stays.append(self.new_atom(expr, 0, held, held, drift=self.scale(dim).drift))
            self._utils[key] = (after, stays, reference_util)
        return self._utils[key]

    @staticmethod
    def _item_totals(scope: Scope, ints: np.ndarray, where: np.ndarray,
                     members: np.ndarray | None = None) -> np.ndarray:
        """Integer total per item of ``scope`` of the objects (``members``, default all) with
        each object in ``where[o]``."""
        chosen = np.arange(len(where)) if members is None else members
        items = scope.container_item[where[chosen]]
        totals = np.zeros(len(scope.items), dtype=np.int64)
        inside = items != OUT_OF_SCOPE
        np.add.at(totals, items[inside], ints[chosen][inside])
        return totals

    def _in_flight(self, members: np.ndarray | None = None) -> np.ndarray:
        """Objects (among ``members``) whose move is already in flight (Problem.origin)."""
        problem = self.problem
        if problem.origin is None:
            return np.zeros(0, dtype=np.int64)
        moving = np.flatnonzero(problem.origin != problem.initial)
        return moving if members is None else np.intersect1d(moving, members)

    def _in_flight_stays(self, scope: Scope, ints: np.ndarray,
                         members: np.ndarray | None = None) -> np.ndarray:
        """Per item: the stay counts (kept from the start) count objects in flight to an item
        other than their origin's as staying; STAYED, counted from the origin, does not.
        Such objects are fixed at their destination, so the difference is a constant."""
        moving = self._in_flight(members)
        start = scope.container_item[self.problem.initial[moving]]
        origin = scope.container_item[self.problem.reference[moving]]
        left = (start != origin) & (start != OUT_OF_SCOPE)
        offset = np.zeros(len(scope.items), dtype=np.int64)
        np.add.at(offset, start[left], ints[moving][left])
        return offset

    def _weighted(self, chosen: np.ndarray, coef: np.ndarray) -> object:
        if len(chosen) == 0:
            return 0
        return cp_model.LinearExpr.weighted_sum([self.count_vars[j] for j in chosen],
                                                coef[chosen].tolist())

    def util(self, scope: Scope, dim: str, metric: str) -> list[Lin]:
        """Absolute utilization per item under a definition, on the user's scale."""
        if dim in self.problem.vector_dims:
            return self._vector_util(scope, dim, metric)
        after, stayed, initial = self._util_atoms(scope, dim, stayed=metric not in (
            "AFTER", "INITIAL"))
        unit = Fraction(1, self.scale(dim).factor)
        ints = self.scale(dim).values
        if metric == "NEW" and self.problem.origin is not None and ints.min(initial=0) >= 0:
            arriving = self._in_flight_stays(scope, ints)
            return [Lin.atom(self._new_atom(scope, dim, i, after[i], stayed[i],
                                            int(arriving[i])), unit)
                    for i in range(len(scope.items))]
        forms = {  # only the metric asked for is built: one per item adds up on large scopes
            "AFTER": lambda a, init, s: a, "INITIAL": lambda a, init, s: Lin(const=init),
            "STAYED": lambda a, init, s: s, "DURING": lambda a, init, s: a + init - s,
            "NEW": lambda a, init, s: a - s, "OLD": lambda a, init, s: (s * -1) + init,
            "MOVED": lambda a, init, s: a + init - s * 2}[metric]
        result = []
        for i in range(len(scope.items)):
            a, init = Lin.atom(after[i], unit), initial[i] * unit
            s = Lin.atom(stayed[i], unit) if stayed is not None else Lin()
            result.append(forms(a, init, s))
        return result

    def _new_atom(self, scope: Scope, dim: str, item: int, after: int, stayed: int,
                  arriving: int) -> int:
        """NEW of an item (its atoms ``after`` - ``stayed``, integer units, sizes never
        negative) as an atom of its own, at least what moves in flight bring there:
        STAYED counts from their origin, so they are always new where they arrive.
        Read as AFTER - STAYED, the bounds allow far less (every object there may
        have stayed), and neither propagation nor an LP sees that what stayed is part
        of what is there; a movement rule that the moves in flight alone break is
        then broken for every assignment, as its step knows."""
        key = (scope.name, dim, item)
        if key not in self._new_loads:
            load, kept = self.atoms[after], self.atoms[stayed]
            lo = max(arriving, load.lo - kept.hi)
            hi = load.hi - kept.lo
            new = self.cp.new_int_var(lo, hi, f"new_{scope.name}{item}_{dim}")
            self.cp.add(new == load.expr - kept.expr)
            self._new_loads[key] = self.new_atom(new, lo, hi, load.initial - kept.initial,
                                                drift=load.drift + kept.drift)
        return self._new_loads[key]

    def initial_util(self, scope: Scope, dim: str) -> list[Fraction]:
        """Exact utilization per item at the start (AFTER of the initial assignment)."""
        if dim in self.problem.vector_dims:
            return [max(item) for item in zip(*(self.initial_util(scope, entry)
                                                for entry in self.problem.vector_dims[dim]))]
        start = self._item_totals(scope, self.scale(dim).values, self.problem.initial)
        unit = Fraction(1, self.scale(dim).factor)
        return [int(v) * unit for v in start]

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

    def placement_value(self, scope: Scope, by_object: dict[int, dict[int, float]],
                        what: str = "rounding") -> Lin:
        """``Σ_o v(o, item of o)`` for singleton objects with values per item of ``scope``
        (0 in other items and out of scope), as one integer expression over their variables."""
        values = np.asarray([v for per_item in by_object.values() for v in per_item.values()])
        factor, error = integral_scale(values)
        self.note_error(f"{what} (value rounding per object)", error * len(by_object))
        variables, coefs = [], []
        lo = hi = initial = 0
        for obj, per_item in by_object.items():
            k = int(self.classes.of_object[obj])
            assert len(self.classes.members[k]) == 1, "valued objects are singleton classes"
            reachable = []
            for j in self.class_vars[k]:
                item = int(scope.container_item[self.var_cont[j]])
                value = round(per_item.get(item, 0.0) * factor)
                reachable.append(value)
                if value:
                    variables.append(self.count_vars[j])
                    coefs.append(value)
            lo += min(reachable)
            hi += max(reachable)
            start = int(scope.container_item[self.problem.initial[obj]])
            initial += round(per_item.get(start, 0.0) * factor)
        expr = cp_model.LinearExpr.weighted_sum(variables, coefs) if variables else 0
        return Lin.atom(self.new_atom(expr, lo, hi, initial), Fraction(1, factor))

    def out_of_scope_new(self, scope: Scope, dim: str) -> Lin:
        """Size of objects moved from inside ``scope`` to outside it (MinimizeMovement); for
        a vector dimension the largest over its entries."""
        if dim in self.problem.vector_dims:
            key = (scope.name, dim, "out of scope NEW")
            if key not in self._peaks:
                self._peaks[key] = [self._peak([self.out_of_scope_new(scope, entry) for entry
                                                in self.problem.vector_dims[dim]])]
            return self._peaks[key][0]
        class_value = self._class_values(dim)
        out = len(scope.items)
        outside = np.flatnonzero(scope.container_item[self.var_cont] == OUT_OF_SCOPE)
        coef = class_value[self.var_class]
        arrived = self._weighted(outside[coef[outside] != 0], coef)
        stays = [(e, int(class_value[k])) for (k, group), (e, _) in
                 self.stay_counts(scope).items() if group == out and class_value[k] != 0]
        stayed = (cp_model.LinearExpr.weighted_sum([e for e, _ in stays], [v for _, v in stays])
                  if stays else 0)
        total = int(self.scale(dim).values.sum())
        # objects in flight from inside the scope to outside it moved out for the origin
        moving = self._in_flight()
        start = scope.container_item[self.problem.initial[moving]]
        origin = scope.container_item[self.problem.reference[moving]]
        gone = int(self.scale(dim).values[moving][(start == OUT_OF_SCOPE)
                                                  & (origin != OUT_OF_SCOPE)].sum())
        unit = Fraction(1, self.scale(dim).factor)
        if not len(outside) and not stays:  # the scope covers every container: a constant
            return Lin(const=gone * unit)  # (whose wide bounds would coarsen every form)
        atom = self.new_atom(arrived - stayed + gone, -total, total, gone,
                             drift=self.scale(dim).drift)
        return Lin.atom(atom, unit)

    def stayed_within_loads(self) -> list[tuple[object, object]]:
        """(STAYED, AFTER) variables per item of every (scope, dimension) whose stays were
        built as variables (no value negative): what stayed in an item is part of what it
        holds. Every assignment keeps it through the counts; the load relaxation, which
        drops the counts, states it so that a limit on what arrives (a movement rule) bounds
        how far each load can rise."""
        pairs = []
        for after, stays, _ in self._utils.values():
            pairs.extend((self.atoms[s].expr, self.atoms[a].expr)
                         for a, s in zip(after, stays or ())
                         if isinstance(self.atoms[s].expr, cp_model.IntVar))
        return pairs

    def loads(self, scope: Scope, dim: str) -> list[object]:
        """The AFTER load expression per item (integer units of ``dim``)."""
        after, _, _ = self._util_atoms(scope, dim, stayed=False)
        return [self.atoms[a].expr for a in after]

    def container_loads(self) -> dict[str, list[object]]:
        """The AFTER load variable of every container, per dimension built so far (not the
        dimensions whose loads are expressions, see _load_limit)."""
        name = self.problem.container_scope.name
        return {dim: loads for (scope, dim) in self._utils if scope == name
                for loads in [self.scope_loads(self.problem.container_scope, dim)] if loads}

    def scope_loads(self, scope: Scope, dim: str) -> list[object] | None:
        """The AFTER load variable per item of ``scope`` if a spec built them as variables,
        else None."""
        built = self._utils.get((scope.name, dim))
        if built is None:
            return None
        loads = [self.atoms[a].expr for a in built[0]]
        return loads if all(isinstance(v, cp_model.IntVar) for v in loads) else None

    def built_stays(self, scope: Scope) -> dict[tuple[int, int], tuple[object, int]] | None:
        """The stay counts of ``scope`` if a spec has built them (see stay_counts)."""
        return self._stays.get(scope.name)

    def load_bounds(self, scope: Scope, dim: str) -> np.ndarray | None:
        """Largest feasible AFTER load per item of ``scope`` (integer units of ``dim``), as
        hard constraints compiled so far have bounded it; None if no spec built the loads."""
        built = self._utils.get((scope.name, dim))
        if built is None:
            return None
        return np.asarray([self.atoms[a].hi for a in built[0]], dtype=np.int64)

    # ---- partition groups ----
    def group_classes(self, members: np.ndarray) -> list[int]:
        """The classes of one partition group's objects; classes never mix groups (they are
        keyed by every partition's group), which this checks."""
        classes = sorted({int(k) for k in self.classes.of_object[members]})
        if sum(len(self.classes.members[k]) for k in classes) != len(members):
            raise InternalError("an object class mixes partition groups")
        return classes

    def group_util(self, scope: Scope, dim: str, metric: str, members: np.ndarray) -> list[Lin]:
        """Utilization per item of ``scope`` counting only ``members`` (one partition group),
        under AFTER, INITIAL, STAYED or DURING, on the user's scale."""
        key = (scope.name, dim, metric, members.tobytes())
        if key not in self._group_utils:
            classes = self.group_classes(members)
            class_value = self._class_values(dim)
            unit = Fraction(1, self.scale(dim).factor)
            n_items = len(scope.items)
            ints = self.scale(dim).values
            initial = self._item_totals(scope, ints, self.problem.initial, members)
            reference = self._item_totals(scope, ints, self.problem.reference, members)
            offset = self._in_flight_stays(scope, ints, members)
            after: list[list[tuple[object, int]]] = [[] for _ in range(n_items)]
            stayed: list[list[tuple[object, int]]] = [[] for _ in range(n_items)]
            valued = [k for k in classes if class_value[k] != 0]
            if metric in ("AFTER", "DURING") and valued:
                chosen = np.concatenate([self.class_vars[k] for k in valued]).astype(np.int64)
                where = scope.container_item[self.var_cont[chosen]]
                coef = class_value[self.var_class[chosen]]
                for j, item, c in zip(chosen[where != OUT_OF_SCOPE].tolist(),
                                      where[where != OUT_OF_SCOPE].tolist(),
                                      coef[where != OUT_OF_SCOPE].tolist()):
                    after[item].append((self.count_vars[j], c))
            if metric in ("STAYED", "DURING"):
                stays = self.stay_counts(scope)
                for k in classes:
                    for item in range(n_items):
                        if (k, item) in stays and class_value[k] != 0:
                            stayed[item].append((stays[(k, item)][0], int(class_value[k])))
            total = int(ints[members].sum())

            def atom(terms: list[tuple[object, int]], hi: int, start: int, less: int = 0) -> Lin:
                if not terms:
                    return Lin()
                expr = cp_model.LinearExpr.weighted_sum([e for e, _ in terms],
                                                        [c for _, c in terms])
                return Lin.atom(self.new_atom(expr - less, 0, hi, start,
                                              drift=self.scale(dim).drift), unit)

            result = []
            for i in range(n_items):
                start, less = int(initial[i]), int(offset[i])
                a = atom(after[i], total, start)
                s = atom(stayed[i], start - less, start - less, less)
                init = Lin(const=int(reference[i]) * unit)
                result.append({"AFTER": a, "INITIAL": init, "STAYED": s,
                               "DURING": a + init - s}[metric])
            self._group_utils[key] = result
        return self._group_utils[key]

    def group_values(self, scope: Scope, dim: str, members: np.ndarray
                     ) -> list[list[tuple[object, int]]] | None:
        """Per item of ``scope``, the count variables there of ``members``' (one partition
        group's) classes whose value in ``dim`` is not 0, each with that value (the
        dimension's integer units): their AFTER utilization there is the weighted sum.
        None for a dynamic dimension, or where a value is not above 1e-10 (an object there
        may not make the group present)."""
        if dim in self.problem.dynamic_dims:
            return None
        class_value = self._class_values(dim)
        valued = [k for k in self.group_classes(members) if class_value[k] != 0]
        lightest = Fraction(min((int(class_value[k]) for k in valued), default=1),
                            self.scale(dim).factor)
        if lightest <= TOLERANCE:
            return None
        terms: list[list[tuple[object, int]]] = [[] for _ in scope.items]
        if valued:
            chosen = np.concatenate([self.class_vars[k] for k in valued]).astype(np.int64)
            where = scope.container_item[self.var_cont[chosen]]
            inside = where != OUT_OF_SCOPE
            for j, item, value in zip(chosen[inside].tolist(), where[inside].tolist(),
                                      class_value[self.var_class[chosen[inside]]].tolist()):
                terms[item].append((self.count_vars[j], int(value)))
        return terms

    def group_counts(self, scope: Scope, dim: str, members: np.ndarray,
                     values: list[list[tuple[object, int]]] | None = None
                     ) -> list[tuple[object, int]] | None:
        """Per item of ``scope``, the number of ``members`` (one partition group) there whose
        value in ``dim`` is not 0, as a CP-SAT expression (0 where none can be), with the
        most it can be: their AFTER utilization is above 0 exactly where it is at least 1,
        a link that an LP reads far more tightly than one through the utilization itself.
        None where ``group_values`` is (``values``: its answer, when the caller has it)."""
        if values is None:
            values = self.group_values(scope, dim, members)
        if values is None:
            return None
        class_value = self._class_values(dim)
        most = sum(len(self.classes.members[k]) for k in self.group_classes(members)
                   if class_value[k] != 0)
        return [(cp_model.LinearExpr.sum([v for v, _ in t]), most) if t else (0, 0)
                for t in values]

    def tie_to_count(self, literal: object, count: tuple[object, int], rewarded: bool) -> None:
        """Tie a group's presence literal in an item to its objects there (a
        ``group_counts`` entry), on the side an LP would slip on: where the objective gains
        from the group's presence (``rewarded``), the literal is at most the count (else an
        LP reads the group as present wherever a sliver of it is); where it pays for it,
        the count is at most its most times the literal. Redundant in integers."""
        objects, most = count
        if rewarded:
            self.cp.add(literal <= objects)
        else:
            self.cp.add(objects <= most * literal)
