"""Spec types, one module each; importing this package registers them all."""

from . import (  # noqa: F401  (imported for registration)
    assignment_affinities,
    avoid_assignments,
    avoid_moving,
    balance,
    capacity,
    capacity_with_group_presence,
    colocate_groups,
    disaster_recovery_capacity,
    exclusive_scope_items,
    group_count,
    group_diversity,
    group_move_limit,
    maximize_allocation,
    minimize_containers,
    minimize_movement,
    moves_in_progress,
    non_accepting,
    to_free,
    topology_spread,
    util_increase_cost,
)
from .common import REGISTRY

__all__ = ["REGISTRY"]
