"""What one tuple position holds once compiled: the terms its goals and soft constraints
add up to, or a leximin vector, with the error their compiled forms state."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..cpsat.builder import TargetProbe
from ..cpsat.linear import Lin


@dataclass
class Bucket:
    position: int
    terms: list[Lin] = field(default_factory=list)
    leximin: list[Lin] | None = None  # set when an IDEAL goal is alone in this bucket
    # IDEAL's scalar goals, compiled only if a polish needs them: their pieces can be most
    # of the model's constraints, and every level's search and presolve would carry them
    scalar: list[object] = field(default_factory=list)
    error: float = 0.0
    probes: list[TargetProbe] = field(default_factory=list)  # its goals' target probes
