"""Heuristics to validate against the proven optimum, behind one interface:
``assign(instance) -> assignment`` (see :mod:`.base`).

Built in: ``first-fit-decreasing``, ``best-fit-decreasing`` (packing on the balanced
dimension), ``greedy-balance`` (hottest-to-coldest moves while the objective improves), and
``rebalancer-local-search`` / ``rebalancer-optimal-highs`` (Meta's Rebalancer on the same
scenario, through the peer interpreter), and the Kubernetes schedulers ``kube-*``, ``atc-*``
and ``descheduler-*`` (docs/kubernetes.md). Installed plugins: entry points of the group
``cpsat_rebalancer.heuristics``. Your own: any object with ``name`` and
``assign(instance)``, or with ``--allow-code`` ``FILE.py:NAME`` / ``module:attribute``.
"""

from . import (  # noqa: F401  (register the built-ins)
    descheduler,
    gpushare,
    greedy,
    kube_scheduler,
    packing,
    rebalancer,
)
from .base import (
    NEEDS_PEER,
    REGISTRY,
    Heuristic,
    HeuristicOptions,
    Instance,
    Target,
    as_array,
    balanced_target,
    bucket_order,
    check_heuristic,
    make_heuristic,
    register,
    tuple_order,
)
from .greedy import GreedyBalance
from .packing import BestFitDecreasing, FirstFitDecreasing
from .rebalancer import RebalancerSolver

BUILT_IN = tuple(REGISTRY)

__all__ = [
    "BUILT_IN",
    "NEEDS_PEER",
    "REGISTRY",
    "BestFitDecreasing",
    "FirstFitDecreasing",
    "GreedyBalance",
    "Heuristic",
    "HeuristicOptions",
    "Instance",
    "RebalancerSolver",
    "Target",
    "as_array",
    "balanced_target",
    "bucket_order",
    "check_heuristic",
    "make_heuristic",
    "register",
    "tuple_order",
]
