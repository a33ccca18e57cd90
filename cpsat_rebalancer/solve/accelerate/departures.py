"""Objects that leave together, for the move-based floor (``local_search``).

Some values are flat under every single move but the last of a run: a goal that counts
used containers (MinimizeContainers) falls only with a container's last object, one that
counts the groups present in a scope item (GroupDiversity MAX) only with a group's last
object there. Single moves reach such a step only through a long run their guides rank,
and where a move on the way costs (a colocated job split, a group's move limit spent) they
stop before it; on thousands of objects the run spreads over many containers. Each spec
names the sets whose leaving lowers it (``Spec.departures``: the objects, the containers
they leave); here one set leaves in one compound step, each object (largest first) to the
destination the search ranks best (the tuple, then the guides) among those outside the
containers it leaves that keep every hard rule. The evaluator judges the whole, kept only
when the tuple falls; a round goes on through the sets until TRIES of them were of no
use and SECONDS passed, or it reaches those tried since their containers last changed.
A set that lowers a later position may take the room an earlier one needs: while moves
lower the tuple, a round offers only the sets of the first position above its floor, the
others once moves stall.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from ...context import EvalContext, MoveBatch
from ...evaluate import PolicySplit, evaluate, evaluate_moves
from ...primitives import TOLERANCE
from ...problem import Problem
from ...scenario import Model
from .tuples import flat_key, tuple_key

TRIES = 8  # departures a round may find of no use before it stops, once it spent
SECONDS = 0.5  # this long on them (where they are cheap, most may be of no use)

# (objects, containers they leave)
Departure = tuple[np.ndarray, np.ndarray]
# (objects, targets) -> which of these moves keep the restrictions
Allowed = Callable[[np.ndarray, np.ndarray], np.ndarray]
# (tuples of a batch's candidates, the batch) -> the walk's rank of each
Ranked = Callable[[np.ndarray, MoveBatch], np.ndarray]


def offered(model: Model, context: EvalContext, up_to: float = np.inf) -> list[Departure]:
    """Every departure the model's goals and constraints at a position up to ``up_to``
    (a constraint's: where its soft term goes) name at ``context``'s assignment."""
    return [departure for entry in [*model.goals, *model.constraints]
            if entry.position <= up_to for departure in entry.spec.departures(context)]


def relative_sizes(problem: Problem, dims: list[str]) -> np.ndarray:
    """Per object, its sizes in ``dims`` summed, each in multiples of that dimension's
    mean (so dimensions of any scale compare)."""
    sizes = np.zeros(problem.num_objects)
    for dim in dims:
        values = problem.object_dims[dim]
        mean = values.mean() if len(values) else 0.0
        sizes += values / (mean if mean > 0 else 1.0)
    return sizes


def key(departure: Departure) -> bytes:
    """What tells a departure from another: its containers and its objects."""
    objects, left = departure
    return np.asarray(left, dtype=np.int64).tobytes() + b"|" + np.asarray(
        objects, dtype=np.int64).tobytes()


def ordered(departures: list[Departure], movable: np.ndarray,
            tried: dict[bytes, tuple[int, int]], changed_at: np.ndarray, version: int,
            sizes: np.ndarray) -> list[tuple[Departure, bool]]:
    """``departures`` that move no held object (``movable``) and were not tried since the
    walk reached ``version`` (``tried``, per ``key``: the version of its last try and how
    many failed), in the order a round tries them: first those not tried since one of
    their containers last changed (``changed_at``), then by fewest failed tries, each
    lightest (``sizes``, per object) first; each with whether it was tried since (what
    blocked it then, a destination's room or a group's move limit, mostly still does)."""
    chosen, stale, failed, weight = [], [], [], []
    for departure in departures:
        objects, left = departure
        if not len(objects) or not movable[objects].all():
            continue
        last, failures = tried.get(key(departure), (-1, 0))
        if last >= version:
            continue
        chosen.append(departure)
        stale.append(last >= changed_at[left].max())
        failed.append(failures)
        weight.append(sizes[objects].sum())
    order = np.lexsort((np.array(weight), np.array(failed), np.array(stale, dtype=bool)))
    return [(chosen[i], stale[i]) for i in order]


def destinations(problem: Problem, departure: Departure, allowed: Allowed
                 ) -> list[np.ndarray] | None:
    """Per object of the departure, the containers outside those it leaves that keep the
    restrictions (``allowed``); None where one has none."""
    objects, left = departure
    away = np.ones(problem.num_containers, dtype=bool)
    away[left] = False
    others = np.flatnonzero(away)
    result = []
    for obj in objects:
        targets = others[allowed(np.full(len(others), obj), others)]
        if not len(targets):
            return None
        result.append(targets)
    return result


def departed(problem: Problem, model: Model, splits: list[PolicySplit], x: np.ndarray,
             departure: Departure, targets: list[np.ndarray], sizes: np.ndarray,
             ranked: Ranked, deadline: float, excess: float = 0.0
             ) -> tuple[np.ndarray, np.ndarray, float] | None:
    """``x`` with the departure's objects moved out, largest first (``sizes``, per
    object), each to its best ranked destination of ``targets`` (per object, aligned with
    the departure's) among those that keep the hard rules, with its flattened tuple and
    hard rules' excess as the evaluator finds them; None where an object has no such
    destination, where the whole breaks a rule, or at the deadline. Where ``x`` breaks hard
    rules by ``excess`` (a repair), each destination is the one that leaves the least
    excess (then the best ranked), and the whole must leave less than ``excess``."""
    objects, _ = departure
    x = x.copy()
    for i in np.argsort(-sizes[objects], kind="stable"):
        obj, candidates = objects[i], targets[i]
        if time.monotonic() >= deadline:
            return None
        context = EvalContext(problem, problem.initial, x)
        batch = MoveBatch(context, np.full(len(candidates), obj)[:, None],
                          candidates[:, None])
        keys, left = evaluate_moves(problem, model, batch, splits)
        least = max(float(left.min()), 0.0) if excess > 0 else 0.0
        kept = np.flatnonzero(left <= least + TOLERANCE)
        if not len(kept):
            return None
        rank = ranked(keys, batch)
        x[obj] = candidates[kept[np.lexsort(rank[kept].T[::-1])[0]]]
    evaluation = evaluate(problem, model, x)
    if evaluation.restriction_violations or not (
            evaluation.feasible or evaluation.hard_excess < excess - TOLERANCE):
        return None
    return x, flat_key(tuple_key(evaluation)), (0.0 if evaluation.feasible
                                                 else evaluation.hard_excess)
