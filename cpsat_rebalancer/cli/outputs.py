"""The plan files of ``solve`` and ``compare``: the HTML report (``--report``) and the tables
(``--moves-csv``, ``--utilization-csv``), each written whole or not at all."""

from __future__ import annotations

import argparse

from ..compare import Comparison
from ..report import comparison_report, plan_report
from ..result import SolveResult
from .common import write_output


def plan_outputs(args: argparse.Namespace) -> dict[str, str | None]:
    """The plan files asked for, by option (for the check of every output path)."""
    return {"--report": args.report, "--moves-csv": args.moves_csv,
            "--utilization-csv": args.utilization_csv}


def write_plan(args: argparse.Namespace, result: SolveResult) -> list[str]:
    """Write the plan files asked for; return their paths."""
    if args.report:
        write_output(args.report, plan_report(result, f"Plan: {args.scenario}"))
    if args.moves_csv:
        write_output(args.moves_csv, result.moves.to_csv(index=False))
    if args.utilization_csv:
        write_output(args.utilization_csv, result.utilization().to_csv(index=False))
    return [path for path in plan_outputs(args).values() if path]


def write_comparison_report(args: argparse.Namespace, comparison: Comparison) -> None:
    if args.report:
        write_output(args.report, comparison_report(comparison, f"Comparison: {args.scenario}"))


def add_plan_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--report", metavar="OUT.html",
                        help="write the plan as one self-contained HTML page (status, proof "
                        "per bucket, utilization before and after, moves, goals)")
    parser.add_argument("--moves-csv", metavar="OUT.csv",
                        help="write the moves as CSV (object, from, to)")
    parser.add_argument("--utilization-csv", metavar="OUT.csv",
                        help="write the utilization per container and scope item as CSV "
                        "(scope, item, dimension, capacity, before, after, ratios)")
