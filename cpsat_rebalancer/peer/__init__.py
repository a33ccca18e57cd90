"""Rebalancer's own wheel as a reference oracle and as a peer solver, run in a separate
Python 3.12 interpreter."""

from .bridge import (
    PeerError,
    PeerUnavailable,
    evaluate_with_wheel,
    find_peer_python,
    needs_mip_flavour,
    require_peer_python,
    to_wheel_spec,
)
from .export import export_rebalancer_python
from .solve import SOLVERS, move_type_specs, solve_with_wheel, solver_spec

__all__ = [
    "SOLVERS",
    "PeerError",
    "PeerUnavailable",
    "evaluate_with_wheel",
    "export_rebalancer_python",
    "find_peer_python",
    "move_type_specs",
    "needs_mip_flavour",
    "require_peer_python",
    "solve_with_wheel",
    "solver_spec",
    "to_wheel_spec",
]
