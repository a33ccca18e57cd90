"""Interchangeable containers, found from the specs, and the order that breaks their symmetry.

Two containers are interchangeable when swapping their whole contents changes no goal value,
no constraint expression and no restriction: the same capacities in every dimension, the
same item in every custom scope, the same role in every spec (``Spec.container_roles``),
no restriction on either, and, when some spec reads the initial assignment, both initially
empty. A model with k interchangeable containers has k! copies of every solution; CP-SAT
proves far faster when only one copy is allowed: the containers of a class are ordered by a
load key (non-increasing), which any solution satisfies after permuting them.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from ...context import EvalContext
from ...evaluate import split_policy
from ...problem import Problem
from ...scenario import Model


def interchangeable_containers(problem: Problem, model: Model, fixed: frozenset[int],
                               non_accepting: frozenset[int]) -> list[np.ndarray]:
    """Classes (ascending container indices, two or more each) of interchangeable containers;
    empty when any spec cannot state its container roles."""
    entries = [*model.goals, *model.constraints]
    roles_per_spec = [entry.spec.container_roles(problem) for entry in entries]
    if any(roles is None for roles in roles_per_spec):
        return []
    reads_initial = any(entry.spec.reads_initial() for entry in entries)
    ctx0 = EvalContext(problem, problem.initial, problem.initial)
    for entry in model.constraints:  # DEFAULT: what is soft depends on the initial state
        if entry.policy == "DEFAULT":
            split = split_policy(entry, np.asarray(entry.spec.infos(ctx0), dtype=float))
            reads_initial |= bool(np.any(split.soft))
    blocked = set(non_accepting) | {int(problem.initial[o]) for o in fixed}
    occupied = set(problem.initial.tolist()) if reads_initial else set()
    scopes = sorted(problem.scopes)
    keys: dict[tuple[Hashable, ...], list[int]] = {}
    for c in range(problem.num_containers):
        if c in blocked or c in occupied:
            continue
        key = (
            tuple(int(problem.scopes[s].container_item[c]) for s in scopes
                  if s != problem.container_name),
            tuple(float(problem.container_scope.capacity(d)[c])
                  for d in sorted(problem.container_scope.capacities)),
            tuple(roles[c] for roles in roles_per_spec),
        )
        keys.setdefault(key, []).append(c)
    return [np.asarray(cs, dtype=np.int64) for cs in keys.values() if len(cs) > 1]


def order_key_dimension(problem: Problem, dims: frozenset[str]) -> str:
    """The static dimension of ``dims`` (those the model reads) whose loads tell containers
    apart best (most distinct object values; the count dimension when none is better)."""
    best, distinct = problem.count_dimension, 1
    for dim in sorted(d for d in problem.object_dims if d in dims):
        n = len(np.unique(problem.object_dims[dim]))
        if n > distinct:
            best, distinct = dim, n
    return best
