"""Meta's Rebalancer as a heuristic: its local search, or its HiGHS optimal solver, run by the
wheel in the peer interpreter on the same scenario (see :mod:`cpsat_rebalancer.peer.solve`).

Both need a Python 3.12 interpreter with ``rebalancer`` (``--peer-python``,
``CPSAT_REBALANCER_PEER_PYTHON``, or the default peer venv); without one they raise
:class:`~cpsat_rebalancer.peer.PeerUnavailable`, whose message says how to set one up.
After :meth:`assign`, ``details`` holds what the wheel reported: its own bucket values,
end reason, timing, and for HiGHS whether it proved optimality.
"""

from __future__ import annotations

import numpy as np

from ..peer.solve import solve_with_wheel
from .base import HeuristicOptions, Instance, register


class RebalancerSolver:
    def __init__(self, solver: str, options: HeuristicOptions):
        self.solver = solver
        self.name = f"rebalancer-{solver}"
        self.options = options
        self.details: dict = {}

    def assign(self, instance: Instance) -> np.ndarray:
        o = self.options
        result = solve_with_wheel(instance.data, self.solver, time_limit=o.time_limit,
                                  move_types=o.move_types, seed=o.seed,
                                  peer_python=o.peer_python)
        self.details = {k: v for k, v in result.items() if k != "assignment"}
        return instance.problem.assignment_array(result["assignment"], path=self.name)


@register("rebalancer-local-search", needs_peer=True)
def _local_search(options: HeuristicOptions) -> RebalancerSolver:
    return RebalancerSolver("local-search", options)


@register("rebalancer-optimal-highs", needs_peer=True)
def _optimal_highs(options: HeuristicOptions) -> RebalancerSolver:
    return RebalancerSolver("optimal-highs", options)
