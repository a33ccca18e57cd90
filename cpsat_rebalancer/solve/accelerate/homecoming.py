"""Returns home that make room there, for the move-based floor (``local_search``).

A moved object whose return home would lower a soft constraint's cost (a pinned object's,
under AvoidMoving SOFT) is often kept away by what the walk did while it was away: its
home filled up, and the return alone now overfills it by more than it gives back. With
objects of the home leaving in the same step, the return pays; no single move or swap
from the most loaded containers down finds that set soon among thousands of objects. A
chain builds it: the return with the best of one object of the home leaving (to where the
returning object is, or to one of the least loaded containers), then up to EJECTIONS - 1
more leaving one at a time, each the best the walk ranks among those that keep the hard
rules; the walk keeps the first assignment of the chain that lowers its tuple.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

import numpy as np

from ...context import EvalContext, MoveBatch
from ...evaluate import PolicySplit, evaluate_moves, soft_cost
from ...primitives import TOLERANCE
from ...problem import Problem
from ...scenario import Model

EJECTIONS = 3  # objects of the home that leave, at most, in one return
CHUNKS = 8  # candidates priced per step, at most, in batches of the size given

# the order a walk ranks candidates in: (keys, batch) -> rows to order lexicographically
Ranked = Callable[[np.ndarray, EvalContext], np.ndarray]


def relief(model: Model, splits: list[PolicySplit], context: EvalContext,
           moved: np.ndarray, size: int) -> np.ndarray:
    """Per object of ``moved``, what its return home alone takes off the soft costs of the
    constraints (summed over positions; 0 where none has a soft term), priced ``size``
    returns at a time."""
    soft = [(entry, split) for entry, split in zip(model.constraints, splits)
            if split.has_soft_term]
    relieved = np.zeros(len(moved))
    for begin in range(0, len(moved) if soft else 0, size):
        part = moved[begin:begin + size]
        batch = MoveBatch(context, part[:, None], context.initial[part, None])
        for entry, split in soft:
            base = context.memo((entry.spec, "soft cost"),
                                partial(soft_cost, entry, split, context))
            relieved[begin:begin + len(part)] += base - soft_cost(entry, split, batch)
    return relieved


def candidates(problem: Problem, x: np.ndarray, obj: int, movable: np.ndarray,
               coolest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``obj``'s return home, each with one movable object of its home leaving: to where
    ``obj`` is, then to the least loaded other containers (``coolest``, in that order);
    rows of (objects, targets), destination by destination."""
    home = problem.initial[obj]
    leaving = np.flatnonzero((x == home) & movable)
    leaving = leaving[leaving != obj]
    destinations = np.append(x[obj], coolest[(coolest != home) & (coolest != x[obj])])
    objects = np.column_stack([np.full(len(leaving) * len(destinations), obj),
                               np.tile(leaving, len(destinations))])
    targets = np.column_stack([np.full(len(objects), home),
                               np.repeat(destinations, len(leaving))])
    return objects, targets


def chain(problem: Problem, model: Model, splits: list[PolicySplit], ranked: Ranked,
          x: np.ndarray, obj: int, movable: np.ndarray, coolest: np.ndarray, size: int
          ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``obj`` home, then its home's objects leaving one at a time (``candidates`` first,
    then each of them to the least loaded containers), each step the best ``ranked``
    among the first ``size`` candidates that keep the hard rules (at most CHUNKS chunks
    priced): the assignment after each step, and its tuple (flattened), until EJECTIONS
    left or no step keeps the rules."""
    home = problem.initial[obj]
    objects, targets = candidates(problem, x, obj, movable, coolest)
    for _ in range(EJECTIONS):
        found = _best(problem, model, splits, ranked, x, objects, targets, size)
        if found is None:
            return
        x = found[0]
        yield found
        leaving = np.flatnonzero((x == home) & movable)
        leaving = leaving[leaving != obj]
        destinations = coolest[coolest != home]
        objects = np.tile(leaving, len(destinations))[:, None]
        targets = np.repeat(destinations, len(leaving))[:, None]


def _best(problem: Problem, model: Model, splits: list[PolicySplit], ranked: Ranked,
          x: np.ndarray, objects: np.ndarray, targets: np.ndarray, size: int
          ) -> tuple[np.ndarray, np.ndarray] | None:
    """The candidate (rows of objects, targets, from ``x``) ``ranked`` first among those
    of the first chunk of ``size`` that has any that keep the hard rules: its assignment
    and tuple; None when none of CHUNKS chunks has."""
    base = EvalContext(problem, problem.initial, x)
    for begin in range(0, min(len(objects), CHUNKS * size), size):
        batch = MoveBatch(base, objects[begin:begin + size], targets[begin:begin + size])
        keys, excess = evaluate_moves(problem, model, batch, splits)
        keeping = np.flatnonzero(excess <= TOLERANCE)
        if len(keeping):
            row = keeping[np.lexsort(ranked(keys, batch)[keeping].T[::-1])[0]]
            found = x.copy()
            found[batch.objects[row]] = batch.targets[row]
            return found, keys[row]
    return None
