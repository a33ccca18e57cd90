"""A starting assignment for feasibility questions (study field ``hint: first-fit``).

Objects on containers that must end empty (any toFreeSpec) and, on containers above a HARD
capacity limit, their smallest objects until the rest fits, are placed first-fit decreasing
(by their largest share of a container) into the other containers, within every HARD
capacity limit of :func:`.search.hard_capacity_shares`; when that fails, again with the
objects that fit into the fewest containers first (a flexible object may otherwise take the
only room of a restricted one, as untyped pods take GPU nodes typed pods need). The solver
checks the hint itself and starts from it only when it keeps every hard constraint and
improves on the initial assignment, so a hint can make a feasible answer quick but never
changes a proof."""

from __future__ import annotations

import numpy as np

from .search import capacity_arrays, freed_containers, hard_capacity_shares


def first_fit(data: dict) -> dict[str, list[str]] | None:
    """``{container: [objects]}``, or None when some object fits nowhere."""
    if not hard_capacity_shares(data):
        return None
    containers, objects, size, limit, where = capacity_arrays(data)
    index = {c: i for i, c in enumerate(containers)}
    load = np.zeros_like(limit)
    np.add.at(load, where, size)
    closed = np.zeros(len(containers), bool)
    closed[[index[c] for c in freed_containers(data) if c in index]] = True
    moving = np.isin(where, np.flatnonzero(closed))
    for c in np.flatnonzero(~closed & (load > limit + 1e-9).any(axis=1)):
        for o in sorted(np.flatnonzero((where == c) & ~moving), key=lambda o: size[o].sum()):
            if not (load[c] > limit[c] + 1e-9).any():
                break
            moving[o] = True
            load[c] -= size[o]
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = np.nanmax(np.where(limit.max(axis=0) > 0, size / limit.max(axis=0), 0), axis=1)
    movers = np.flatnonzero(moving)
    final = first_fit_into(sorted(movers, key=lambda o: (-weight[o], o)), where, size, limit,
                           load, closed)
    if final is None:  # flexible objects may have taken the only room of restricted ones
        eligible = _eligible_counts(size[movers], limit[~closed])
        rank = dict(zip(movers.tolist(), eligible.tolist()))
        final = first_fit_into(sorted(movers, key=lambda o: (rank[o], -weight[o], o)), where,
                               size, limit, load, closed)
    if final is None:
        return None
    result: dict[str, list[str]] = {c: [] for c in containers}
    for o, c in zip(objects, final):
        result[containers[c]].append(o)
    return result


def first_fit_into(order: list[int], where: np.ndarray, size: np.ndarray, limit: np.ndarray,
                   load: np.ndarray, closed: np.ndarray) -> np.ndarray | None:
    """First fit of ``order`` onto a copy of ``load``: the final containers, or None."""
    load = load.copy()
    final = where.copy()
    for o in order:
        fits = ~closed & (load + size[o] <= limit + 1e-9).all(axis=1)
        if not fits.any():
            return None
        c = int(np.argmax(fits))
        final[o] = c
        load[c] += size[o]
    return final


def _eligible_counts(size: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """Per object, the containers it fits into alone (the most constrained go first)."""
    counts = np.zeros(len(size), dtype=np.int64)
    for start in range(0, len(size), 256):  # chunks bound the memory of the comparison
        block = size[start:start + 256]
        counts[start:start + 256] = (block[:, None, :] <= limit[None, :, :] + 1e-9
                                     ).all(axis=2).sum(axis=1)
    return counts
