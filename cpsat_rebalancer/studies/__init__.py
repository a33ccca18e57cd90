"""Capacity-planning studies: many exact solves over variations of one scenario, with the
results in one table (see :mod:`.study` for the file format, :mod:`.variants` for the
parameters, :mod:`.search` for minimum-capacity and maximum-drain questions)."""

from .runner import Outcome, run_study
from .search import counting_bound
from .study import Search, Study, load_study, parse_study
from .variants import apply

__all__ = ["Outcome", "Search", "Study", "apply", "counting_bound", "load_study",
           "parse_study", "run_study"]
