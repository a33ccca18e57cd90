"""``cpsat-rebalancer import gap|binpacking FILE OUT``: a published benchmark instance as an
ordinary scenario file (the readers and scenario builders are
:mod:`cpsat_rebalancer.importers`)."""

from __future__ import annotations

import argparse
import json

from ..importers import IMPORTERS
from .common import check_outputs, write_output


def command_import(args: argparse.Namespace) -> int:
    check_outputs({"OUT": args.out}, [args.file])
    scenario = IMPORTERS[args.format](args.file)
    write_output(args.out, json.dumps(scenario, indent=1) + "\n")
    print(f"wrote {args.out}: {len(scenario['assignment'])} {scenario['containerName']}s, "
          f"{sum(len(v) for v in scenario['assignment'].values())} "
          f"{scenario['objectName']}s")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``import gap|binpacking FILE OUT``."""
    imp = sub.add_parser("import", help="turn a published benchmark instance into a scenario",
                         description="Write an ordinary scenario file (solve it with "
                         "'cpsat-rebalancer solve OUT') from a GAP instance (OR-Library "
                         "format) or a bin-packing instance (BPPLIB format).")
    imp.add_argument("format", choices=sorted(IMPORTERS))
    imp.add_argument("file", help="the instance file")
    imp.add_argument("out", help="the scenario file to write (JSON)")
    imp.set_defaults(run=command_import)
