"""Emptying a container whole, for the move-based floor (``local_search``).

A goal that counts used containers (MinimizeContainers) is flat under every move but the
one that takes a container's last object: single moves reach a lower count only by a
long run of steps its guide ranks, and on thousands of objects the walk spreads that run
over many containers. Here the objects of one lightly loaded container leave in one
compound step, each (largest first) to the destination the search ranks best (the tuple,
then the guides) among those that keep every hard rule. The evaluator judges the whole,
kept only when the tuple falls.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ...context import EvalContext, MoveBatch
from ...evaluate import PolicySplit, evaluate_moves
from ...primitives import TOLERANCE
from ...problem import Problem
from ...scenario import Model

TRIES = 8  # containers a round tries to empty, least loaded first

# (objects, targets) -> which of these moves keep the restrictions
Allowed = Callable[[np.ndarray, np.ndarray], np.ndarray]
# (tuples of a batch's candidates, the batch) -> the walk's rank of each
Ranked = Callable[[np.ndarray, MoveBatch], np.ndarray]


def to_try(x: np.ndarray, movable: np.ndarray, emptiable: np.ndarray,
           tried_at: np.ndarray, changed_at: np.ndarray, version: int,
           loads: np.ndarray) -> np.ndarray:
    """TRIES of the ``emptiable`` containers that hold something and no held object and
    were not tried (``tried_at``) since the walk reached ``version``: first those not tried
    since they last changed (``changed_at``), then the others, each least loaded
    (``loads``, per container) first. A container whose emptying failed is tried again
    only after those: what blocks it (a destination's room, a group's move limit) mostly
    still does."""
    m = len(loads)
    occupied = np.bincount(x, minlength=m) > 0
    holding = np.bincount(x[~movable], minlength=m) > 0
    chosen = emptiable[occupied[emptiable] & ~holding[emptiable]
                       & (tried_at[emptiable] < version)]
    tried = tried_at[chosen] >= changed_at[chosen]
    return chosen[np.lexsort((loads[chosen], tried))][:TRIES]


def emptied(problem: Problem, model: Model, splits: list[PolicySplit], x: np.ndarray,
            container: int, dims: list[str], allowed: Allowed, ranked: Ranked,
            deadline: float) -> np.ndarray | None:
    """``x`` with every object of ``container`` moved out, largest first (in multiples of
    each read dimension's mean), each to its best ranked destination among those that keep
    the hard rules; None where one has none, or at the deadline."""
    objects = np.flatnonzero(x == container)
    size = np.zeros(len(objects))
    for dim in dims:
        values = problem.object_dims[dim]
        mean = values.mean()
        size += values[objects] / (mean if mean > 0 else 1.0)
    x = x.copy()
    others = np.flatnonzero(np.arange(problem.num_containers) != container)
    for obj in objects[np.argsort(-size, kind="stable")]:
        targets = others[allowed(np.full(len(others), obj), others)]
        if not len(targets) or time.monotonic() >= deadline:
            return None
        context = EvalContext(problem, problem.initial, x)
        batch = MoveBatch(context, np.full(len(targets), obj)[:, None], targets[:, None])
        keys, excess = evaluate_moves(problem, model, batch, splits)
        kept = np.flatnonzero(excess <= TOLERANCE)
        if not len(kept):
            return None
        rank = ranked(keys, batch)
        x[obj] = targets[kept[np.lexsort(rank[kept].T[::-1])[0]]]
    return x
