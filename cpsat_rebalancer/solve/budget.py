"""How a solve divides its time: the share each stage may take of what is left, in one value
the stages read from their session. A ``*_share`` is a fraction of the time left to the step
that spends it; ``*_seconds`` and ``*_work`` cap a step in wall-clock and deterministic
seconds where no time limit gives it a share (a repeatable run, or no limit at all)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    """The time shares of the solve stages."""

    # the chain, under a time limit: a bucket's share of what is left counts it this many
    # times and each later bucket once (time it does not use flows on). Above 1: time
    # follows the tuple's order, since a gain at an earlier position outweighs any later
    # one, and the later buckets' work under an earlier unproven value is lost when the
    # floor after the chain lowers that value (pipeline.unsettle_after)
    bucket_weight: float = 2.0
    # a bucket
    first_share: float = 0.1  # the first search, which finds the bound to probe
    probe_share: float = 0.5  # of what the first search left, for the probes at its bound
    target_probe_share: float = 0.7  # the same, for a goal's target probes
    neighbourhood_share: float = 0.8  # of what the probes left, for the descent over containers
    pure_share: float = 0.6  # the search on the objective alone, before moves are blended in
    blend_share: float = 0.6  # when a later goal counts moves: the blended search, first
    repair_share: float = 0.4  # at most, for the load limits, move cuts and greedy repairs
    # where the first search finds nothing better than the assignment held: of what is left,
    # for a local search from it (bucket.stalled_search)
    stalled_search_share: float = 0.25
    # and, while each such slice still lowers the tuple by ``walk_gain`` (the walk is still
    # descending: the bucket's later stages would start from further up), slices more, up
    # to this much of what was left in all
    stalled_search_most: float = 0.75
    # of the value at the first position a slice lowers, or of the bucket's distance above
    # its floor
    walk_gain: float = 0.01
    relax_share: float = 0.4  # of what is left of that, at most, for the load relaxation
    # at most, for GLOP's bound on the whole model, where no load relaxation gave one and
    # in a movement bucket
    lp_share: float = 0.15
    lp_seconds: float = 5.0
    lp_work: float = 2.0
    # at least, of the bucket's share (more when the bucket left more), for the exact
    # closure of a compiled optimum on rounded forms (solve.closure)
    closure_share: float = 0.25
    # a movement bucket
    moves_floor_share: float = 0.03  # at most, for the floor on moves
    moves_floor_seconds: float = 1.0
    start_check_seconds: float = 1.0  # at most, to see the frozen model rule the start out
    configuration_share: float = 0.4  # at most, for the configuration LP's floor
    configuration_seconds: float = 10.0
    completion_seconds: float = 5.0  # to complete the configurations' contents in the model
    completion_work: float = 2.0
    fewer_moves_share: float = 0.5  # of the time left, for the search within reduced costs
    fewer_moves_work: float = 20.0
    fewer_moves_search: float = 0.25  # of that, for CP-SAT's search; the rest for the descent
    # after the last bucket
    tie_break_share: float = 0.5  # of the time spent so far, for the fewest moves at the optima
    tie_break_work: float = 0.2  # and at least this much deterministic time
    # a leximin bucket
    level_share: float = 0.5  # of the time left, what an unproven level may take
    step_repair_share: float = 0.8  # of a step's share, for its relaxation and repairs
    descent_share: float = 0.5  # of the time left after the levels, for the single-move descent
    # after the chain, under a time limit: the move-based floor (solve.accelerate.local_search)
    local_search_share: float = 0.05  # of the time limit, kept back from the chain for it
    local_search_seconds: float = 5.0  # and at most this long
    # before the chain, under a time limit: a local search from the initial assignment
    early_search_share: float = 0.1  # of the time limit, at most (it ends when it converges)
    early_search_seconds: float = 5.0  # and at most this long
    early_search_passes: float = 0.25  # skipped unless this much of a pass of single moves
    # (every object to every container, one evaluation each) fits in its time
    # a start that breaks hard rules is first repaired by it, for at most this share of the
    # time left (it ends once they hold, or stall), however long a pass: CP-SAT searching a
    # large model from no solution often finds none
    early_repair_share: float = 0.3
    # a model with specs that read partition groups (solve.coarse)
    # of the time limit, at most, for the coarse relaxation (what it leaves flows on to the
    # whole model, which it makes many times larger)
    coarse_share: float = 0.8
    # an infeasible model
    explain_seconds: float = 20.0  # at most, to name the conflicting constraints


DEFAULT_BUDGET = Budget()
