"""A move-based floor under the exact search: single moves, then swaps, each kept when the
evaluator finds the whole tuple lexicographically better and every hard rule kept.

Where CP-SAT's proof does not close in time, a search of this kind (Rebalancer's own local
search is one) can still walk below the incumbent the chain holds: judged by the evaluator
itself, it has no compiled approximation in the way. It runs in the time the chain leaves
it, from the chain's answer, and keeps the answer when it finds nothing better.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable

import numpy as np

from ...evaluate import Evaluation, evaluate
from ...problem import Problem
from ...scenario import Model

SWAPS_PER_ROUND = 2000  # swaps tried once no single move helps, before giving up


def tuple_key(evaluation: Evaluation) -> list[tuple[float, ...]]:
    """The evaluator's tuple in lexicographic order: per position its value, or for a lone
    IDEAL goal its sorted vector (leximin)."""
    positions = sorted(set(evaluation.positions) | set(evaluation.leximin))
    return [tuple(evaluation.leximin[p]) if p in evaluation.leximin
            else (evaluation.positions.get(p, 0.0),) for p in positions]


def better(a: list[tuple[float, ...]], b: list[tuple[float, ...]]) -> bool:
    """Whether tuple ``a`` is lexicographically below ``b`` by more than float noise."""
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            if abs(u - v) > 1e-12 * max(1.0, abs(u), abs(v)):
                return u < v
    return False


def _swap_pairs(n: int, rng: random.Random) -> list[tuple[int, int]]:
    """The swaps of one round: every pair of the ``n`` objects once, in random order, where
    there are at most SWAPS_PER_ROUND pairs (trying one twice finds nothing new); else that
    many pairs drawn at random."""
    if n * (n - 1) // 2 <= SWAPS_PER_ROUND:
        pairs = list(itertools.combinations(range(n), 2))
        rng.shuffle(pairs)
        return pairs
    return [(rng.randrange(n), rng.randrange(n)) for _ in range(SWAPS_PER_ROUND)]


def descend(problem: Problem, model: Model, start: np.ndarray, deadline: float,
            seed: int = 0, on_interrupt: Callable[[], None] | None = None
            ) -> tuple[np.ndarray, Evaluation] | None:
    """Single moves (objects in random order, each to the first container that improves
    the tuple), then random swaps once no move helps, until neither helps or the deadline.
    Returns the better assignment and its evaluation, or None when none was found. Ctrl-C
    ends it with the best found so far (and calls ``on_interrupt``)."""
    rng = random.Random(seed)
    x = start.copy()
    current = evaluate(problem, model, x)
    if not current.feasible:
        return None
    key = tuple_key(current)
    best: np.ndarray | None = None  # the last assignment kept (a copy: Ctrl-C may land
    n, m = problem.num_objects, problem.num_containers  # in the middle of a move)
    if n == 0 or m < 2:  # nothing can move
        return None

    def accept(candidate: np.ndarray) -> bool:
        nonlocal current, key, best
        evaluation = evaluate(problem, model, candidate)
        if evaluation.feasible and better(tuple_key(evaluation), key):
            current, key, best = evaluation, tuple_key(evaluation), candidate.copy()
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
            for a, b in ([] if improved else _swap_pairs(n, rng)):
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
