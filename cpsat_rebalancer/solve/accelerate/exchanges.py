"""Exchanges of up to two objects each way between a hot container and a cool one: the
candidates a move-based search prices where no single move or swap cools the hottest
container.

A MAX or LEGACY balance waits on its hottest container alone. Where that container holds
a few large objects and every other container is nearly as full, a single move overfills
its destination and a swap finds no partner of the right size; one object out for two
smaller ones in (or two for one, or two for two) often fits the few units of room a cool
container has. Candidates are ranked by the load they leave on the hotter of the two
containers, in one dimension at a time, so that only the few most promising are priced by
the evaluator. The containers' relative loads, and their spread (what the walk ranks a
step by where its tuple is flat), are read here too.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ...context import EvalContext
from ...problem import Problem

SIDE = 24  # objects per container an exchange draws from: its largest movable ones
PARTNERS = 64  # the least loaded containers an exchange with the hot one is looked for on


def relative_loads(problem: Problem, dims: list[str], x: np.ndarray
                   ) -> list[tuple[np.ndarray, float]]:
    """Per dimension of ``dims``: each container's load over its capacity under ``x``, and
    the mean of those (how hot a container is, in units any dimension shares)."""
    scope = problem.container_scope
    loads = []
    for dim in dims:
        caps = scope.capacity(dim)
        load = np.bincount(x, weights=problem.values_at(dim, x),
                           minlength=problem.num_containers)
        relative = load / np.where(caps > 0, caps, 1.0)
        loads.append((relative, float(relative.mean())))
    return loads


def load_spread(problem: Problem, dims: list[str], context: EvalContext) -> np.ndarray:
    """Σ over containers and ``dims`` of the squared relative load (per candidate under a
    batch: the base's, changed at the containers a candidate's moves touch)."""
    scope = problem.container_scope
    total = np.float64(0.0)
    for dim in dims:
        caps = scope.capacity(dim)
        caps = np.where(caps > 0, caps, 1.0)
        touched = context.touched_items(scope, dim)
        if touched is None:
            total = total + ((context.util(scope, dim, "AFTER") / caps)**2).sum(axis=-1)
            continue
        candidate, container, before, after = touched
        base = context.base
        whole = base.memo(("load spread", dim), partial(_spread, base, dim, caps))
        change = (after / caps[container])**2 - (before / caps[container])**2
        total = total + whole + np.bincount(candidate, change, minlength=context.size)
    return total


def _spread(context: EvalContext, dim: str, caps: np.ndarray) -> float:
    scope = context.problem.container_scope
    return float(((context.util(scope, dim, "AFTER") / caps)**2).sum())


def _sets(members: np.ndarray, empty: bool) -> np.ndarray:
    """The subsets of ``members`` of one and two objects (and the empty one), as rows of
    two object indices, -1 for none."""
    k = len(members)
    first, second = np.triu_indices(k, 1)
    rows = [np.full((1, 2), -1)] if empty else []
    rows += [np.column_stack([members, np.full(k, -1)]),
             np.column_stack([members[first], members[second]])]
    return np.concatenate(rows).astype(np.int64)


def exchange_candidates(problem: Problem, dim: str, x: np.ndarray, load: np.ndarray,
                        hot: int, movable: np.ndarray, closed: np.ndarray,
                        partners: np.ndarray, most: int) -> tuple[np.ndarray, np.ndarray]:
    """Exchanges between container ``hot`` and each of ``partners`` (open containers):
    one or two of hot's SIDE largest movable objects out, none, one or two of the
    partner's in (beyond a single move or a swap; into a closed hot only objects that
    started there). Returns at most ``most`` of them, as rows of four objects and their
    targets (-1: none), those that leave both containers less loaded in ``dim``
    (``load``: relative to capacity, as ``relative_loads`` gives it) than hot is now, the
    least loaded first."""
    none = np.empty((0, 4), np.int64), np.empty((0, 4), np.int64)
    caps = problem.container_scope.capacity(dim)
    caps = np.where(caps > 0, caps, 1.0)
    values = problem.values_at(dim, x)

    def largest(container: int) -> np.ndarray:
        members = np.flatnonzero((x == container) & movable)
        return members[np.argsort(-values[members], kind="stable")[:SIDE]]

    outs = _sets(largest(hot), empty=False)
    if not len(outs):
        return none
    out_load = np.where(outs >= 0, values[np.maximum(outs, 0)], 0.0).sum(axis=1)
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []  # scores, outs, ins
    for partner in partners[partners != hot]:
        ins = _sets(largest(partner), empty=True)
        delta = np.where(ins >= 0, values[np.maximum(ins, 0)], 0.0).sum(axis=1)[None, :] \
            - out_load[:, None]  # outs x ins: what hot gains, and the partner loses
        after = np.maximum(load[hot] + delta / caps[hot], load[partner] - delta / caps[partner])
        # a single move or a swap: the passes of moves and swaps price those
        after[(outs[:, 1] < 0)[:, None] & (ins[:, 1] < 0)[None, :]] = np.inf
        if closed[hot]:  # only objects that started there may enter
            home = problem.initial[np.maximum(ins, 0)] == hot
            after[:, ~np.where(ins >= 0, home, True).all(axis=1)] = np.inf
        o, i = np.nonzero(after < load[hot] * (1 - 1e-12))
        if len(o):
            best = np.argsort(after[o, i], kind="stable")[:most]
            found.append((after[o[best], i[best]], outs[o[best]], ins[i[best]], int(partner)))
    if not found:
        return none
    order = np.argsort(np.concatenate([f[0] for f in found]), kind="stable")[:most]
    objects = np.concatenate([np.concatenate([f[1] for f in found]),
                              np.concatenate([f[2] for f in found])], axis=1)[order]
    partner_of = np.concatenate([np.full(len(f[0]), f[3]) for f in found])[order]
    targets = np.concatenate([np.repeat(partner_of[:, None], 2, axis=1),
                              np.full((len(order), 2), hot)], axis=1)
    return objects, np.where(objects >= 0, targets, -1)
