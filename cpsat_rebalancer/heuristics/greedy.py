"""``greedy-balance``: repeatedly move one object from the hottest to the coldest item.

Starting from the initial assignment, each step looks at the balanced scope and dimension
(:func:`.base.balanced_target`): the item with the highest relative utilization (AFTER) and
the one with the lowest. It tries moving each distinct object of the hottest item (objects
alike in every dimension, initial and current container count once) to each container of
the coldest item that may take it, scores every try with the evaluator, and makes the best
one if it improves the objective lexicographically — which means the first bucket, unless
that ties, as Rebalancer's local search compares (leximin for IDEAL alone in a bucket). A
move that breaks a hard constraint is never taken from a feasible assignment. It stops when
no try improves, the hottest item is no hotter than the coldest, or after ``max_moves``.
"""

from __future__ import annotations

import numpy as np

from ..evaluate import evaluate
from .base import (
    HeuristicOptions,
    Instance,
    MoveRules,
    balanced_target,
    register,
    tuple_order,
)

MAX_TRIES = 64  # evaluations per step


class GreedyBalance:
    name = "greedy-balance"

    def __init__(self, max_moves: int | None = None, max_tries: int = MAX_TRIES):
        self.max_moves = max_moves
        self.max_tries = max_tries
        self.details: dict = {}

    def assign(self, instance: Instance) -> np.ndarray:
        problem, model = instance.problem, instance.model
        target = balanced_target(problem, model)
        rules = MoveRules(problem, model)
        members = target.scope.members()
        profile = self._profiles(instance)
        final = problem.initial.copy()
        current = evaluate(problem, model, final)
        moves = 0
        limit = problem.num_objects if self.max_moves is None else self.max_moves
        stop = "no improving move"
        while moves < limit:
            util = target.relative_util(problem, final)[target.items]
            hot = target.items[int(np.argmax(util))]
            cold = target.items[int(np.argmin(util))]
            if util.max() <= util.min():
                stop = "balanced"
                break
            sources = np.flatnonzero(np.isin(final, members[hot]) & ~rules.fixed)
            best = None
            for obj, cont in self._tries(problem, rules, final, sources, members[cold], profile):
                trial = final.copy()
                trial[obj] = cont
                evaluation = evaluate(problem, model, trial)
                if current.feasible and not evaluation.feasible:
                    continue
                if tuple_order(evaluation, best[1] if best else current)[0] < 0:
                    best = (trial, evaluation)
            if best is None:
                break
            final, current = best
            moves += 1
        else:
            stop = "move limit"
        self.details = {"steps": moves, "stopped": stop, "target": target.source}
        return final

    @staticmethod
    def _profiles(instance: Instance) -> np.ndarray:
        """One id per kind of object: equal in every dimension and named by no spec."""
        problem = instance.problem
        columns = np.column_stack([problem.object_dims[d] for d in sorted(problem.object_dims)])
        _, ids = np.unique(columns, axis=0, return_inverse=True)
        ids = ids.reshape(-1).astype(np.int64)
        named = set()
        for entry in [*instance.model.goals, *instance.model.constraints]:
            named |= set(entry.spec.object_roles())
        for k, obj in enumerate(sorted(named)):
            ids[obj] = ids.max() + 1 + k
        return ids

    def _tries(self, problem, rules: MoveRules, final: np.ndarray, sources: np.ndarray,
               destinations: np.ndarray, profile: np.ndarray):
        """(object, container) pairs to score: one object per kind, returning objects and
        larger ones first, at most ``max_tries``."""
        seen = set()
        sizes = sum(problem.object_dims[d] for d in problem.object_dims)
        order = sorted(sources, key=lambda o: -sizes[o])
        tries = []
        for obj in order:
            allowed = rules.allowed(obj)
            for cont in destinations:
                if not allowed[cont] or cont == final[obj]:
                    continue
                key = (profile[obj], problem.initial[obj], final[obj], cont)
                if key in seen:
                    continue
                seen.add(key)
                home = problem.initial[obj] == cont
                tries.append((not home, obj, int(cont)))
        tries.sort(key=lambda t: t[0])  # stable: homecomings first, then by size
        return [(obj, cont) for _, obj, cont in tries[: self.max_tries]]


@register("greedy-balance")
def _greedy(options: HeuristicOptions) -> GreedyBalance:
    return GreedyBalance(max_moves=options.max_moves)
