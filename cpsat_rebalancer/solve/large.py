"""A model too large to build within the time limit: a large-neighbourhood search over
sub-models, each the whole model with all but a few containers held.

Objects of distinct sizes are a class each, so 10,000 of them on 500 containers make 5 M
count variables: creating them takes most of a minute, and CP-SAT could not search them in
what would be left. Instead a few containers at a time are freed: their objects may move
among them, every other object is held where the incumbent has it. Such a sub-model keeps
every spec and rule (the incumbent is its hint; every definition still counts from the
problem's own start), is small, and is solved by the same chain of buckets. Its answer is
judged by the evaluator on the whole problem and kept when its tuple is lexicographically
better. Nothing is proven about the whole model: the answer is FEASIBLE, without a bound.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ..evaluate import Evaluation, evaluate
from ..primitives import Restrictions
from ..problem import Problem
from ..result import FEASIBLE, OPTIMAL, SolveResult
from ..scenario import Model, SolverOptions
from .accelerate import tuples
from .accelerate.exchanges import relative_loads
from .coarse import class_count

# seconds per count variable to create it and hand it to CP-SAT, with room for a busy
# machine: what decides, before building, that the whole model does not fit the limit
SECONDS_PER_COUNT = 8e-6
BUILD_SHARE = 0.25  # of the time limit: a whole model that would take longer is too large
FIRST_SIZE = 24  # containers freed per sub-model at first
LARGEST_SIZE = 96
STEP_SHARE = 0.1  # of the time limit, at most, for one sub-model's solve
STEP_SECONDS = (2.0, 8.0)  # and within these seconds
# a sub-model whose compile left its search no time to find a solution gets twice the time
# next, up to this share of the time limit (a spec may compile over every object, held or
# not)
LONGEST_STEP_SHARE = 0.4
HOT_SHARE = 0.5  # of the containers freed, the ones whose loads are farthest from the mean

# solves a sub-model from the assignment given (a hint), under the options given
SubSolve = Callable[[Model, np.ndarray, SolverOptions], SolveResult]
# improves an assignment (evaluated) by other means: a better one and its evaluation, or None
Polish = Callable[[np.ndarray, Evaluation], tuple[np.ndarray, Evaluation] | None]


def too_large(problem: Problem, model: Model, options: SolverOptions) -> bool:
    """Whether building the whole model would take more than its share of the time limit.
    Never without a limit (the whole model is built and proven), nor in a repeatable run
    (a deterministic budget): the search here stops by the clock."""
    if options.time_limit is None or options.deterministic_time is not None:
        return False
    accepting = problem.num_containers - len(model.non_accepting)
    single = len(model.fixed_objects | set(model.held))  # a class each, with one count
    counts = (class_count(problem, model) - single) * max(accepting, 1) + single
    return counts * SECONDS_PER_COUNT > BUILD_SHARE * options.time_limit


@dataclass(frozen=True)
class Freed:
    """Stands for a spec in a sub-model's restriction: the name the evaluator gives when a
    held object moves, and what the coarse relaxation asks of a restriction's spec."""

    name: str = "neighbourhood"

    def reads_groups(self) -> bool:
        return False


def search(problem: Problem, model: Model, options: SolverOptions, start: np.ndarray,
           start_evaluation: Evaluation, deadline: float, solve: SubSolve,
           stopped: Callable[[], bool], on_interrupt: Callable[[], None],
           polish: Polish | None = None) -> tuple[np.ndarray, Evaluation] | None:
    """Improve ``start`` (an assignment that keeps the hard rules, evaluated) one sub-model
    at a time until ``deadline`` (monotonic clock) or ``stopped()``; the best assignment
    found and its evaluation, None when none beat the start. It ends early at the tuple's
    lowest values (``tuples.at_lowest``); Ctrl-C ends it with the best found (and
    calls ``on_interrupt``). ``polish`` goes on from each better sub-model's answer: a
    sub-model holds all but a few containers, so what its answer makes possible elsewhere
    (an object it moved out of the way going home, say) is no later sub-model's to find."""
    rng = np.random.default_rng(options.seed)
    x, current = start.copy(), start_evaluation
    key = tuples.tuple_key(current)
    improved = False
    size = min(FIRST_SIZE, problem.num_containers)
    limit = options.time_limit or deadline - time.monotonic()
    step = min(max(STEP_SECONDS[0], STEP_SHARE * limit), STEP_SECONDS[1])
    longest = max(step, LONGEST_STEP_SHARE * limit)
    # a sub-model costs its evaluation and compile on top of its search, whatever its time
    # limit: no round starts with less time left than the quickest one took
    rounds: list[float] = []  # seconds each took
    try:
        while not stopped() and not tuples.at_lowest(model, current):
            began = time.monotonic()
            if deadline - began < max(0.5, min(rounds, default=0.0)):
                break
            freed = _neighbourhood(problem, model, x, size, rng)
            result = solve(_restricted(problem, model, x, freed), x.copy(),
                           replace(options, time_limit=min(step, deadline - time.monotonic())))
            rounds.append(time.monotonic() - began)
            if result.termination == "interrupted":
                break
            if not any(b.status in (OPTIMAL, FEASIBLE) for b in result.buckets):
                # stopped while compiling, or no search found a solution in what the
                # compile left: nothing was searched, or too little
                step = min(2 * step, longest)
                continue
            found = evaluate(problem, model, result.final)
            found_key = tuples.tuple_key(found)
            if found.feasible and tuples.better(found_key, key):
                x, current, key, improved = result.final.copy(), found, found_key, True
                polished = None if polish is None or stopped() else polish(x, current)
                if polished is not None and tuples.better(tuples.tuple_key(polished[1]), key):
                    x, current = polished
                    key = tuples.tuple_key(current)
            if result.status == OPTIMAL:  # proven in its step: a larger one may fit
                size = min(LARGEST_SIZE, size + size // 2, problem.num_containers)
            else:
                size = max(4, size - size // 4)
    except KeyboardInterrupt:
        on_interrupt()
    return (x, current) if improved else None


def _restricted(problem: Problem, model: Model, x: np.ndarray, freed: np.ndarray) -> Model:
    """``model`` with every object outside the ``freed`` containers held where ``x`` has it,
    and no other container taking objects it did not start with (an object that ``x``
    moved into a freed container may go back to its own)."""
    outside = np.flatnonzero(~np.isin(x, freed))
    others = np.setdiff1d(np.arange(problem.num_containers), freed)
    restriction = Restrictions(non_accepting=frozenset(others.tolist()),
                               held=dict(zip(outside.tolist(), x[outside].tolist())))
    return replace(model, restrictions=[*model.restrictions, (Freed(), restriction)])


def _neighbourhood(problem: Problem, model: Model, x: np.ndarray, size: int,
                   rng: np.random.Generator) -> np.ndarray:
    """``size`` containers. Half are hot: their relative loads (in each dimension the model
    reads, in multiples of its mean) are farthest from the mean; the farthest ``size / 4``
    always, the rest drawn from the farthest quarter of all containers, so that
    consecutive sub-models differ. The other half are drawn from all the others."""
    m = problem.num_containers
    heat = np.zeros(m)
    dims = sorted(problem.scalar_dimensions(model.dimensions()) & set(problem.object_dims))
    for relative, mean in relative_loads(problem, dims, x):
        heat = np.maximum(heat, np.abs(relative - mean) / (mean if mean > 0 else 1.0))
    hot = int(round(HOT_SHARE * size)) if dims else 0
    ranked = np.argsort(-heat, kind="stable")
    hottest = ranked[:hot // 2]  # always: a MAX term moves only with its hottest items
    pool = ranked[hot // 2:max(hot, m // 4)]
    chosen = np.concatenate([hottest, rng.choice(pool, size=min(hot - len(hottest), len(pool)),
                                                 replace=False)])
    rest = np.setdiff1d(np.arange(m), chosen)
    chosen = np.concatenate([chosen, rng.choice(rest, size=min(size - len(chosen), len(rest)),
                                                replace=False)])
    return np.sort(chosen.astype(np.int64))
