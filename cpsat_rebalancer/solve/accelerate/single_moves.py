"""The move-based search where no batch prices moves (``evaluate.batchable`` is false):
single moves in random order, each to the first container that improves the tuple, then
random swaps, one evaluation each."""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable

import numpy as np

from ...evaluate import Evaluation, evaluate
from ...problem import Problem
from ...scenario import Model
from .tuples import better, tuple_key

SWAPS_PER_ROUND = 2000  # swaps tried once no single move helps, before giving up


def swap_pairs(n: int, rng: random.Random) -> list[tuple[int, int]]:
    """The swaps of one round: every pair of the ``n`` objects once, in random order, where
    there are at most SWAPS_PER_ROUND pairs (trying one twice finds nothing new); else that
    many pairs drawn at random."""
    if n * (n - 1) // 2 <= SWAPS_PER_ROUND:
        pairs = list(itertools.combinations(range(n), 2))
        rng.shuffle(pairs)
        return pairs
    return [(rng.randrange(n), rng.randrange(n)) for _ in range(SWAPS_PER_ROUND)]


def first_improvements(problem: Problem, model: Model, x: np.ndarray, current: Evaluation,
                       deadline: float, rng: random.Random,
                       on_interrupt: Callable[[], None] | None = None
                       ) -> tuple[np.ndarray, Evaluation] | None:
    """Rounds of single moves, then swaps, from ``x`` (evaluated ``current``, keeping the
    hard rules; changed in place), each kept when the evaluator finds the tuple lower and
    the hard rules kept, until a round keeps none or the deadline. Returns the best
    assignment and its evaluation, or None. Ctrl-C ends it with the best found (and calls
    ``on_interrupt``)."""
    n, m = problem.num_objects, problem.num_containers
    key = tuple_key(current)
    best: np.ndarray | None = None  # the last assignment kept (a copy: Ctrl-C may land
    # in the middle of a move)

    def accept(candidate: np.ndarray) -> bool:
        nonlocal key, best
        evaluation = evaluate(problem, model, candidate)
        if evaluation.feasible and better(tuple_key(evaluation), key):
            key, best = tuple_key(evaluation), candidate.copy()
            return True
        return False

    try:
        improved = True
        while improved and time.monotonic() < deadline:
            improved = False
            for o in rng.sample(range(n), n):
                if time.monotonic() >= deadline:
                    break
                home = x[o]
                for c in rng.sample(range(m), m):
                    if c == home:
                        continue
                    if time.monotonic() >= deadline:  # every evaluation can be long
                        break
                    x[o] = c
                    if accept(x):
                        improved = True
                        break
                    x[o] = home
            for a, b in ([] if improved else swap_pairs(n, rng)):
                if time.monotonic() >= deadline:
                    break
                if x[a] == x[b]:
                    continue
                x[a], x[b] = x[b], x[a]
                if accept(x):
                    improved = True
                    break
                x[a], x[b] = x[b], x[a]
    except KeyboardInterrupt:  # the best kept so far stands; the caller hears of it
        if on_interrupt is not None:
            on_interrupt()
    return None if best is None else (best, evaluate(problem, model, best))
