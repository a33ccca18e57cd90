"""``cpsat-rebalancer study run STUDY [--executor local|ray] [--workers N] [--out DIR]
[--allow-code]`` and ``cpsat-rebalancer study plot DIR``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .common import check_outputs


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


# the files study run writes in its folder (besides variants/KEY.json)
WRITES = ("study.json", "results.parquet", "results.csv", "answers.parquet", "answers.csv")


def command_run(args: argparse.Namespace) -> int:
    from ..studies.runner import run_study
    from ..studies.study import load_study

    out = Path(args.out) if args.out else Path(args.study).with_suffix("")
    check_outputs({"--out": str(out)}, [args.study], folder="--out", inside=WRITES)
    study = load_study(args.study, allow_code=args.allow_code)
    check_outputs({"--out": str(out)}, [study.base.get("scenario"), study.model],
                  folder="--out", inside=WRITES)
    workers = args.workers or max(1, os.cpu_count() or 1)
    outcome = run_study(study, out, args.executor, workers, args.address, args.csv,
                        progress=sys.stderr)  # today's stderr, not the one at import
    print(f"{study.name}: {outcome.computed} variants computed, {outcome.skipped} already "
          f"stored, {outcome.failed} failed; {len(outcome.results)} rows in "
          f"{out / 'results.parquet'}")
    if outcome.answers is not None:
        columns = [c for c in outcome.answers.columns if c.startswith("param.")]
        columns += ["search", "answer", "exact", "proven_infeasible", "probes"]
        columns += [c for c in ("answer_moves",) if c in outcome.answers.columns]
        print(outcome.answers[columns].to_string(index=False))
    return 0


def command_plot(args: argparse.Namespace) -> int:
    from ..studies.plots import plot_study

    for path in plot_study(args.folder):
        print(f"wrote {path}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``study run`` and ``study plot``."""
    study = sub.add_parser("study", help="capacity-planning studies: sweeps of exact solves",
                           description="Run a study file's variants (resumable) and draw "
                           "its figures.")
    actions = study.add_subparsers(dest="action", required=True)
    run = actions.add_parser("run", help="run every variant not yet stored")
    run.add_argument("study", help="study file (YAML or JSON)")
    run.add_argument("--executor", choices=("local", "ray"), default="local")
    run.add_argument("--workers", type=_positive,
                     help="variants at once (default: the machine's cores)")
    run.add_argument("--address", help="ray: the cluster to join (default: start one here)")
    run.add_argument("--out", help="results folder (default: the study file without its "
                     "extension)")
    run.add_argument("--csv", action="store_true", help="also write the tables as CSV")
    run.add_argument("--allow-code", action="store_true",
                     help="run the study's own Python code: a generator or heuristic given "
                     "as FILE.py:NAME in the study's folder")
    run.set_defaults(run=command_run)
    plot = actions.add_parser("plot", help="draw the standard figures of a results folder")
    plot.add_argument("folder", help="a folder written by study run")
    plot.set_defaults(run=command_plot)
