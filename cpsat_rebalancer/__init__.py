"""cpsat-rebalancer: Rebalancer's declarative specs, solved exactly with OR-Tools CP-SAT."""

from . import specs  # noqa: F401  (registers every spec type)
from .api import ProblemSolver, solve_scenario
from .errors import InputError, InternalError
from .evaluate import evaluate
from .result import SolveResult
from .scenario import load_scenario, parse_scenario

__all__ = [
    "InputError",
    "InternalError",
    "ProblemSolver",
    "SolveResult",
    "evaluate",
    "load_scenario",
    "parse_scenario",
    "solve_scenario",
]
__version__ = "0.1.0"
