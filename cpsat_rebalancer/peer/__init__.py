"""Rebalancer's own wheel as a reference oracle, run in a separate Python 3.12 interpreter."""

from .bridge import (
    PeerError,
    PeerUnavailable,
    evaluate_with_wheel,
    find_peer_python,
    needs_mip_flavour,
    require_peer_python,
    to_wheel_spec,
)

__all__ = [
    "PeerError",
    "PeerUnavailable",
    "evaluate_with_wheel",
    "find_peer_python",
    "needs_mip_flavour",
    "require_peer_python",
    "to_wheel_spec",
]
