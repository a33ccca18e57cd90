"""``cpsat-rebalancer import gap|binpacking|kubernetes FILE OUT``: a published benchmark
instance or a Kubernetes snapshot as an ordinary scenario file (the readers and scenario
builders are :mod:`cpsat_rebalancer.importers` and :mod:`cpsat_rebalancer.kubernetes`)."""

from __future__ import annotations

import argparse
import json

from ..importers import IMPORTERS
from ..kubernetes import kubernetes_scenario
from .common import check_outputs, write_output

FORMATS = sorted([*IMPORTERS, "kubernetes"])


def command_import(args: argparse.Namespace) -> int:
    check_outputs({"OUT": args.out}, [args.file])
    if args.format == "kubernetes":
        scenario = kubernetes_scenario(args.file, best_effort_as_zero=args.best_effort_as_zero)
    else:
        scenario = IMPORTERS[args.format](args.file)
    write_output(args.out, json.dumps(scenario, indent=1) + "\n")
    print(f"wrote {args.out}: {len(scenario['assignment'])} {scenario['containerName']}s, "
          f"{sum(len(v) for v in scenario['assignment'].values())} "
          f"{scenario['objectName']}s")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``import gap|binpacking|kubernetes FILE OUT``."""
    imp = sub.add_parser("import", help="turn a published benchmark instance or a Kubernetes "
                         "snapshot into a scenario",
                         description="Write an ordinary scenario file (solve it with "
                         "`cpsat-rebalancer solve OUT`) from a GAP instance (OR-Library "
                         "format), a bin-packing instance (BPPLIB format), or a Kubernetes "
                         "snapshot (`kubectl get nodes,pods,pdb -o json`; docs/kubernetes.md).")
    imp.add_argument("format", choices=FORMATS)
    imp.add_argument("file", help="the instance or snapshot file")
    imp.add_argument("out", help="the scenario file to write (JSON)")
    imp.add_argument("--best-effort-as-zero", action="store_true",
                     help="kubernetes: count a missing cpu or memory request as 0, as the "
                     "scheduler's fit check does (default: refuse it)")
    imp.set_defaults(run=command_import)
