"""Spec types, one module each; importing this package registers them all."""

from . import (  # noqa: F401  (imported for registration)
    avoid_assignments,
    avoid_moving,
    balance,
    capacity,
    minimize_movement,
    non_accepting,
    to_free,
    util_increase_cost,
)
from .common import REGISTRY

__all__ = ["REGISTRY"]
