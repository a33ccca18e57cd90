"""Commands that compare heuristics with the proven optimum (filled in by the heuristic
validation work)."""

from __future__ import annotations

import argparse


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``compare`` and ``export`` subcommands."""
