"""What a pass of single moves over every object costs, priced before a local search is
given time (``pipeline.early_floor``: a search that cannot make a useful part of a pass in
its share would only take time from CP-SAT)."""

from __future__ import annotations

import time

import numpy as np

from ...context import EvalContext, MoveBatch
from ...evaluate import batchable, evaluate, evaluate_moves, policy_splits
from ...problem import Problem
from ...scenario import Model
from .local_search import BATCH


def pass_seconds(problem: Problem, model: Model) -> float:
    """What one pass of single moves over every object costs: one batched evaluation per
    object where the model prices moves in batches, else one evaluation per move (timed on
    the initial assignment, after a first evaluation that pays for one-time set-up)."""
    n, m = problem.num_objects, problem.num_containers
    evaluate(problem, model, problem.initial)
    if n == 0 or m < 2:
        return 0.0
    started = time.monotonic()
    if batchable(problem, model):
        base = EvalContext(problem, problem.initial, problem.initial)
        targets = np.arange(m)[:min(m, BATCH)]
        evaluate_moves(problem, model, MoveBatch(base, np.zeros(len(targets), np.int64), targets),
                       policy_splits(problem, model))
        return (time.monotonic() - started) * n * -(-(m - 1) // BATCH)
    evaluate(problem, model, problem.initial)
    return (time.monotonic() - started) * n * (m - 1)
