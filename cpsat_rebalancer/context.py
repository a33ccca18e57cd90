"""What a spec reads to evaluate itself: utilizations of an (initial, final) assignment pair
under every utilization definition, and the step and positive-part functions. Plain numpy,
no CP-SAT: the evaluator and every spec's ``evaluate`` stand on it."""

from __future__ import annotations

import numpy as np

from .primitives import TOLERANCE
from .problem import OUT_OF_SCOPE, Problem, Scope


class EvalContext:
    """Utilizations of an (initial, final) assignment pair, computed once per (scope, dim).
    ``initial`` is where the solve starts; the definitions count from ``reference``, which
    differs only for objects whose move is already in flight (``Problem.origin``)."""

    def __init__(self, problem: Problem, initial: np.ndarray, final: np.ndarray):
        self.problem = problem
        self.initial = initial
        self.final = final
        self.reference = initial if problem.origin is None else problem.origin
        self._base: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._at_initial: EvalContext | None = None

    @property
    def at_initial(self) -> EvalContext:
        """The same problem evaluated with nothing moved (initial values of every metric)."""
        if self._at_initial is None:
            self._at_initial = (self if self.final is self.initial
                                else EvalContext(self.problem, self.initial, self.initial))
        return self._at_initial

    def _after_initial_stayed(self, scope: Scope, dim: str):
        key = (scope.name, dim)
        if key not in self._base:
            final_values = self.problem.values_at(dim, self.final)
            initial_values = self.problem.values_at(dim, self.reference)
            n = len(scope.items)
            item_initial = scope.container_item[self.reference]
            item_final = scope.container_item[self.final]

            def total(items: np.ndarray, mask: np.ndarray, values: np.ndarray) -> np.ndarray:
                return np.bincount(items[mask], weights=values[mask], minlength=n).astype(float)

            after = total(item_final, item_final != OUT_OF_SCOPE, final_values)
            initial = total(item_initial, item_initial != OUT_OF_SCOPE, initial_values)
            stayed = total(item_final, (item_final == item_initial) & (item_final != OUT_OF_SCOPE),
                           final_values)
            self._base[key] = (after, initial, stayed)
        return self._base[key]

    def util(self, scope: Scope, dim: str, metric: str) -> np.ndarray:
        """Absolute utilization per item of ``scope`` under a definition
        (docs/semantics.md#scopes-dimensions-and-utilization); for a vector dimension the
        largest of its entries' utilizations under that definition."""
        entries = self.problem.vector_dims.get(dim)
        if entries is not None:
            return np.max([self.util(scope, entry, metric) for entry in entries], axis=0)
        after, initial, stayed = self._after_initial_stayed(scope, dim)
        if metric == "AFTER":
            return after
        if metric == "INITIAL":
            return initial
        if metric == "STAYED":
            return stayed
        if metric == "DURING":
            return after + initial - stayed
        if metric == "NEW":
            return after - stayed
        if metric == "OLD":
            return initial - stayed
        if metric == "MOVED":
            return after + initial - 2 * stayed
        raise ValueError(f"unknown utilization metric {metric}")

    def out_of_scope_new(self, scope: Scope, dim: str) -> float:
        """Size of objects finally out of ``scope`` that were initially in it
        (docs/semantics.md#minimizemovement); for a vector dimension the largest over its
        entries."""
        entries = self.problem.vector_dims.get(dim)
        if entries is not None:
            return max(self.out_of_scope_new(scope, entry) for entry in entries)
        values = self.problem.values_at(dim, self.reference)
        item_initial = scope.container_item[self.reference]
        item_final = scope.container_item[self.final]
        mask = (item_final == OUT_OF_SCOPE) & (item_initial != OUT_OF_SCOPE)
        return float(values[mask].sum())


def step(x: np.ndarray | float) -> np.ndarray:
    return (np.asarray(x) > TOLERANCE).astype(float)


def positive(x: np.ndarray | float) -> np.ndarray:
    return np.maximum(np.asarray(x, dtype=float), 0.0)
