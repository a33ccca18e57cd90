"""What one tuple position holds once compiled: the terms its goals and soft constraints
add up to, or a leximin vector, with the error their compiled forms state."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..cpsat.builder import TargetProbe
from ..cpsat.linear import Lin
from ..errors import InternalError
from ..solver_specs import Allowance, ObjectivePlan

EXACT = 1e-9  # OPTIMAL promises the evaluator's optimum to this relative tolerance,
# above the noise of the evaluator's double arithmetic on values of Rebalancer's scale
# (utilizations near 1 carry about 1e-16 each; a difference of two of them keeps it)
FLOAT_NOISE = 2.0**-46


def meets(value: float, bound: float) -> bool:
    """Whether an exact value meets a bound on it to what OPTIMAL promises."""
    return value - bound <= EXACT * abs(value) + FLOAT_NOISE


def relative_gap(gap: float, objective: float) -> float:
    """A gap relative to the answer's value (infinite where a value of 0 has a gap)."""
    return gap / abs(objective) if objective else (0.0 if gap == 0 else math.inf)


@dataclass
class Bucket:
    position: int
    terms: list[Lin] = field(default_factory=list)
    leximin: list[Lin] | None = None  # set when an IDEAL goal is alone in this bucket
    # IDEAL's scalar goals, compiled only if a polish needs them: their pieces can be most
    # of the model's constraints, and every level's search and presolve would carry them
    scalar: list[object] = field(default_factory=list)
    error: float = 0.0
    # the part of ``error`` by which the compiled value may lie above the exact one (the
    # objective's own rounding, in the solve, adds to both)
    over: float = 0.0
    # the lowest exact value any assignment can have (``Model.floors``)
    floor: float = 0.0
    probes: list[TargetProbe] = field(default_factory=list)  # its goals' target probes
    # the tuple positions whose sum this bucket minimizes: its own, or every position a
    # BLENDED solve adds up
    members: tuple[int, ...] = ()
    # how far later buckets may worsen this one once solved (an allowed worsening)
    allowance: Allowance | None = None
    # a bound on its exact value proven by the exact closure (solve/closure.py), which the
    # compiled bound less ``over`` would only approach
    exact_bound: float | None = None
    # a leximin order proven on rounded items: per entry of the sorted vector, the lowest
    # exact value an assignment holding the entries before it can have there
    leximin_floors: list[float] | None = None

    def __post_init__(self) -> None:
        self.members = self.members or (self.position,)


def planned(buckets: dict[int, Bucket], plan: ObjectivePlan) -> dict[int, Bucket]:
    """The buckets a solve minimizes under ``plan``: the positions it covers (an empty
    bucket when it covers none, so the assignment held stands), each but the last with its
    allowed worsening, or their sum as one bucket when BLENDED."""
    covered = {p: b for p, b in buckets.items() if plan.covers(p)}
    for position, bucket in covered.items():  # the last is held at its optimum, as no later
        if position != max(covered):          # position gains from worsening it
            bucket.allowance = plan.allowances.get(position)
    if not covered:
        return {plan.first: Bucket(plan.first)}
    if not plan.blended or len(covered) == 1:
        return covered
    first = min(covered)
    merged = Bucket(first, members=tuple(covered))
    for bucket in covered.values():
        if bucket.leximin is not None:
            raise InternalError("a BLENDED bucket is compiled without leximin orders")
        merged.terms += bucket.terms
        merged.error += bucket.error
        merged.over += bucket.over
        merged.floor += bucket.floor
        merged.probes += bucket.probes
    return {first: merged}
