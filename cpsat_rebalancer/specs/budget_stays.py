"""BudgetStays: the move budgets of specs left out of the coarse relaxation
(solve/coarse.py), stated over the relaxation's object classes. Internal: no scenario names
it, and it is only ever a HARD constraint.

A move budget (``MoveBudget``, of equal weights w) lets at most ``limit / w`` of its
members leave their initial containers, so at least ``need = n - floor(limit / w)`` stay.
The relaxation knows its classes of alike objects, not which of them stay: of the objects
of class k that start in container c, ``stay(k, c) = min(final, initial)`` count there,
and which ones they are is the lift's to choose. So the rule is that *some* choice keeps
every budget: a flow from the budgets (``need`` each) through the (class, container) cells
their members start in (as many as they have there) to the cells' stays. The value is the
budgets' shortfall under the largest such flow; the model states the flow itself (a
count per budget and cell, within the cell's stays), so that a relaxation's answer that
keeps it lifts to one of the whole model's assignments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from ortools.graph.python import max_flow

from ..context import EvalContext
from ..cpsat.builder import CpBuilder
from ..cpsat.forms import Info
from ..cpsat.linear import Lin
from ..errors import InternalError
from ..primitives import TOLERANCE, MoveBudget
from ..problem import Problem
from .common import Spec


@dataclass(frozen=True, eq=False)
class BudgetStaysSpec(Spec):
    arm = "budgetStays"
    goal_allowed = False
    in_rebalancer = False

    name: str
    members: list[np.ndarray]  # per budget, its objects
    needs: np.ndarray  # per budget, how many of them stay in their initial containers
    kind: np.ndarray  # per object, its class in the relaxation (alike objects share one)

    @classmethod
    def of_budgets(cls, name: str, budgets: list[MoveBudget], kind: np.ndarray
                   ) -> BudgetStaysSpec | None:
        """The spec of ``budgets`` over the classes ``kind``; None when a budget weighs its
        members unequally (its stays would be a weighted choice, not a count)."""
        members, needs = [], []
        for budget in budgets:
            weights = np.asarray(budget.weights, dtype=float)
            if len(weights) == 0:
                continue
            if not np.all(weights == weights[0]):
                return None
            may_leave = (len(weights) if weights[0] <= 0
                         else math.floor(budget.limit / weights[0] + TOLERANCE))
            if may_leave < len(weights):
                members.append(np.asarray(budget.members, dtype=np.int64))
                needs.append(len(weights) - max(0, may_leave))
        return cls(name, members, np.asarray(needs, dtype=np.int64), kind)

    def dimensions(self) -> frozenset[str]:
        return frozenset()

    def info_labels(self, problem: Problem) -> list[str]:
        return ["objects of the move budgets that no choice of alike objects keeps home"]

    # ---------- evaluation ----------
    def _cells(self, budget: int, kind: np.ndarray, initial: np.ndarray
               ) -> dict[tuple[int, int], int]:
        """How many of a budget's members start in each (class, container) cell."""
        cells: dict[tuple[int, int], int] = {}
        for obj in self.members[budget].tolist():
            key = (int(kind[obj]), int(initial[obj]))
            cells[key] = cells.get(key, 0) + 1
        return cells

    def infos(self, ctx: EvalContext) -> np.ndarray:
        """The shortfall of the largest flow (0: some choice keeps every budget)."""
        if not len(self.needs):
            return np.zeros(1)
        flow, _ = self._largest_flow(ctx.initial, ctx.final, ctx.problem.num_containers)
        return np.asarray([float(int(self.needs.sum()) - flow.optimal_flow())])

    def kept_home(self, initial: np.ndarray, final: np.ndarray, containers: int
                  ) -> list[list[int]]:
        """Per budget, members that can all stay home together at ``final`` (as many as
        the largest flow keeps of what it needs)."""
        flow, arcs = self._largest_flow(initial, final, containers)
        kept: list[list[int]] = []
        for budget, cells in enumerate(arcs):
            chosen: list[int] = []
            for (k, c), arc in cells.items():
                count = flow.flow(arc)
                if count:
                    chosen.extend([o for o in self.members[budget].tolist()
                                   if self.kind[o] == k and initial[o] == c][:count])
            kept.append(chosen)
        return kept

    def _largest_flow(self, initial: np.ndarray, final: np.ndarray, m: int
                      ) -> tuple[max_flow.SimpleMaxFlow, list[dict[tuple[int, int], int]]]:
        """The largest flow from the budgets (their needs) through the (class, container)
        cells their members start in (``m`` containers) to the cells' stays at ``final``,
        solved, with each budget's arc per cell."""
        cells = (int(self.kind.max()) + 1) * m
        counts = np.bincount(self.kind * m + initial, minlength=cells)
        arrived = np.bincount(self.kind * m + final, minlength=cells)
        stays = np.minimum(counts, arrived)  # the most alike objects that can stay
        flow = max_flow.SimpleMaxFlow()
        source, sink, first_cell = 0, 1, 2 + len(self.needs)
        arcs = []
        for budget, need in enumerate(self.needs.tolist()):
            flow.add_arc_with_capacity(source, 2 + budget, need)
            arcs.append({(k, c): flow.add_arc_with_capacity(2 + budget, first_cell + k * m + c,
                                                            min(count, need))
                         for (k, c), count in self._cells(budget, self.kind, initial).items()})
        for cell in np.flatnonzero(stays).tolist():
            flow.add_arc_with_capacity(first_cell + cell, sink, int(stays[cell]))
        if flow.solve(source, sink) != flow.OPTIMAL:
            raise InternalError("the largest flow of the move budgets' stays was not found")
        return flow, arcs

    def routed(self, values: dict[str, float]) -> list[list[tuple[float, int]]] | None:
        """Per budget, its flow through each cell in ``values`` (a configuration LP's
        values of the model's named variables), with an object of the budget in that
        cell; None when ``values`` holds none of this spec's flows."""
        routes: list[list[tuple[float, int]]] = [[] for _ in self.needs]
        found = False
        for budget, members in enumerate(self.members):
            for obj in members.tolist():
                value = values.get(self._flow_name(budget, obj))
                if value is not None:
                    routes[budget].append((value, obj))
                    found = True
        return routes if found else None

    @staticmethod
    def _flow_name(budget: int, first: int) -> str:
        """A budget's flow through a cell, named by its first member there."""
        return f"kept{budget}_{first}"

    # ---------- compilation ----------
    def compile_infos(self, b: CpBuilder) -> list[Info]:
        """max over budgets of (need − its flow), the flow within each cell's stays. The
        model's classes may be finer than ``kind`` (objects a spec names are classes of
        their own): its cells then hold fewer stays, which every assignment still keeps."""
        if not len(self.needs):
            return [Info(Lin())]
        stays = b.stay_counts(b.problem.container_scope)
        into: dict[tuple[int, int], list] = {}  # cell -> the budgets' flows into it
        forms = []
        for budget, need in enumerate(self.needs.tolist()):
            flows = []
            for (k, c), count in self._cells(budget, b.classes.of_object,
                                             b.problem.initial).items():
                first = next(o for o in self.members[budget].tolist()
                             if b.classes.of_object[o] == k and b.problem.initial[o] == c)
                taken = b.cp.new_int_var(0, min(count, need), self._flow_name(budget, first))
                into.setdefault((k, c), []).append(taken)
                flows.append(taken)
            atom = b.new_atom(sum(flows), 0, need)
            forms.append(Lin.atom(atom, Fraction(-1)) + need)
        for (k, c), flows in into.items():
            expr, _ = stays[(k, c)]
            b.cp.add(sum(flows) <= expr)
        return [Info(b.exact_max(forms, what=self.name))]
