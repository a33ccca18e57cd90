"""The order of the evaluator's tuples: lexicographic over positions, a lone IDEAL goal's
sorted vector in leximin order, float noise never an improvement; and whether an answer is
at the lowest value its tuple can have. What every search that judges by the evaluator
compares with."""

from __future__ import annotations

import math

import numpy as np

from ...evaluate import Evaluation
from ...scenario import Model
from ..positions import EXACT, FLOAT_NOISE

NOISE = 1e-12  # relative differences below this are float noise, not improvements


def tuple_key(evaluation: Evaluation, through: int | None = None
              ) -> list[tuple[float, ...]]:
    """The evaluator's tuple in lexicographic order: per position (up to ``through``, when
    given) its value, or for a lone IDEAL goal its sorted vector (leximin)."""
    positions = sorted(p for p in set(evaluation.positions) | set(evaluation.leximin)
                       if through is None or p <= through)
    return [tuple(evaluation.leximin[p]) if p in evaluation.leximin
            else (evaluation.positions.get(p, 0.0),) for p in positions]


def differing(a: list[tuple[float, ...]], b: list[tuple[float, ...]]
              ) -> tuple[float, float] | None:
    """The entries of tuples ``a`` and ``b`` at the first place they differ by more than
    float noise; None where they do not."""
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            if abs(u - v) > NOISE * max(1.0, abs(u), abs(v)):
                return u, v
    return None


def better(a: list[tuple[float, ...]], b: list[tuple[float, ...]]) -> bool:
    """Whether tuple ``a`` is lexicographically below ``b`` by more than float noise."""
    entries = differing(a, b)
    return entries is not None and entries[0] < entries[1]


def ahead(a: Evaluation, b: Evaluation) -> bool:
    """Whether evaluation ``a``'s tuple is lexicographically below ``b``'s (``better``)."""
    return better(tuple_key(a), tuple_key(b))


def outranks(a: Evaluation, b: Evaluation) -> bool:
    """Whether answer ``a`` beats ``b`` as OPTIMAL promises values (``beyond_ties``);
    ``ahead`` calls any difference beyond float noise a gain, as a search that climbs by
    small steps needs."""
    return beyond_ties(tuple_key(a), tuple_key(b))


def beyond_ties(a: list[tuple[float, ...]], b: list[tuple[float, ...]]) -> bool:
    """Whether tuple ``a`` is lexicographically below ``b`` where entries within relative
    EXACT of each other tie, so that the later positions decide between them: the order the
    exact closure, the final choice of an answer and the brute-force tests judge by."""
    for x, y in zip(a, b):
        for u, v in zip(x, y):
            if abs(u - v) > EXACT * max(abs(u), abs(v)):
                return u < v
    return False


def gained(a: Evaluation, b: Evaluation, fraction: float, through: int,
           floor: float | None = None) -> bool:
    """Whether ``a``'s tuple up to position ``through`` is below ``b``'s by at least
    ``fraction`` of the larger magnitude at the first entry where they differ by more than
    float noise; or, where that entry is ``through``'s value and ``floor`` a lower bound
    on it, by at least ``fraction`` of ``b``'s distance above the floor (a value far above
    zero, as a sum of squares is, may have little of itself left to lose)."""
    ours, theirs = tuple_key(a, through), tuple_key(b, through)
    entries = differing(ours, theirs)
    if entries is None:
        return False
    drop = entries[1] - entries[0]
    if drop >= fraction * max(map(abs, entries)):
        return True
    return (floor is not None and through in b.positions
            and differing(ours[:-1], theirs[:-1]) is None
            and drop >= fraction * (b.positions[through] - floor) > 0)


def rows_below(keys: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Which rows of ``keys`` (flattened tuples) are lexicographically below ``current`` by
    more than float noise."""
    if keys.shape[1] == 0:  # a tuple with no position: nothing is below
        return np.zeros(len(keys), dtype=bool)
    differ, first = first_difference(keys, current)
    return differ & (keys[np.arange(len(keys)), first] < current[first])


def first_difference(keys: np.ndarray, current: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``keys``, whether it differs from ``current`` by more than float noise,
    and the first column where it does (0 where it does not)."""
    differ = np.abs(keys - current) > NOISE * np.maximum(
        1.0, np.maximum(np.abs(keys), np.abs(current)))
    return differ.any(axis=1), differ.argmax(axis=1)


def best_below(keys: np.ndarray, feasible: np.ndarray, current: np.ndarray) -> int | None:
    """The row of ``keys`` (flattened tuples) lexicographically smallest among the feasible
    rows below ``current`` by more than float noise; None when there is none."""
    below = feasible & rows_below(keys, current)
    if not below.any():
        return None
    candidates = np.flatnonzero(below)
    order = np.lexsort(keys[candidates].T[::-1])
    return int(candidates[order[0]])


def below(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether the flattened tuple ``a`` is lexicographically below ``b`` by more than float
    noise."""
    return best_below(a[None, :], np.ones(1, dtype=bool), b) is not None


def floors_reached(model: Model, evaluation: Evaluation) -> set[int]:
    """The positions (an IDEAL order never) where an answer that keeps the hard rules has
    the lowest value any assignment can have there (``Model.floors``)."""
    if not evaluation.feasible:
        return set()
    floors = model.floors()
    return {position for position, value in evaluation.positions.items()
            if position not in evaluation.leximin
            and value <= floors.get(position, -math.inf) + FLOAT_NOISE}


def at_lowest(model: Model, evaluation: Evaluation) -> bool:
    """Whether an answer is at its floor at every position of the tuple: then no
    assignment is lexicographically better."""
    return (evaluation.feasible and not evaluation.leximin
            and floors_reached(model, evaluation) == set(evaluation.positions))


def flat_key(key: list[tuple[float, ...]]) -> np.ndarray:
    return np.asarray([v for part in key for v in part], dtype=float)
