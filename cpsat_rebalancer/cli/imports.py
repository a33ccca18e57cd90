"""``cpsat-rebalancer import gap|binpacking|kubernetes|openb FILE OUT``: a published
benchmark instance, a Kubernetes snapshot or the Alibaba openb trace as an ordinary
scenario file (the readers and builders are :mod:`cpsat_rebalancer.importers`,
:mod:`cpsat_rebalancer.kubernetes` and :mod:`cpsat_rebalancer.gpu_sharing`)."""

from __future__ import annotations

import argparse
import json

from ..errors import InputError
from ..gpu_sharing import openb_scenario, physical_gpus
from ..importers import IMPORTERS
from ..kubernetes import kubernetes_scenario
from .common import check_outputs, write_output

FORMATS = sorted([*IMPORTERS, "kubernetes", "openb"])


def command_import(args: argparse.Namespace) -> int:
    check_outputs({"OUT": args.out}, [args.file, *([args.nodes] if args.nodes else [])])
    if args.format in ("gap", "binpacking"):
        for option, given in (("--physical-gpus", args.physical_gpus),
                              ("--best-effort-as-zero", args.best_effort_as_zero),
                              ("--nodes", args.nodes), ("--limit", args.limit is not None)):
            if given:
                raise InputError(option, f"applies to kubernetes and openb, not {args.format}")
    if args.format == "kubernetes":
        scenario = kubernetes_scenario(args.file, best_effort_as_zero=args.best_effort_as_zero)
    elif args.format == "openb":
        if not args.nodes:
            raise InputError("--nodes", "openb needs the node list (openb_node_list_*.csv)")
        scenario = openb_scenario(args.nodes, args.file, args.limit)
    else:
        scenario = IMPORTERS[args.format](args.file)
    if args.physical_gpus:
        scenario = physical_gpus(scenario)
    write_output(args.out, json.dumps(scenario, indent=1) + "\n")
    print(f"wrote {args.out}: {len(scenario['assignment'])} {scenario['containerName']}s, "
          f"{sum(len(v) for v in scenario['assignment'].values())} "
          f"{scenario['objectName']}s")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``import gap|binpacking|kubernetes|openb FILE OUT``."""
    imp = sub.add_parser("import", help="turn a published benchmark instance or a Kubernetes "
                         "snapshot into a scenario",
                         description="Write an ordinary scenario file (solve it with "
                         "'cpsat-rebalancer solve OUT') from a GAP instance (OR-Library "
                         "format), a bin-packing instance (BPPLIB format), or a Kubernetes "
                         "snapshot ('kubectl get nodes,pods,pdb -o json') or the Alibaba openb "
                         "GPU trace (docs/kubernetes.md).")
    imp.add_argument("format", choices=FORMATS)
    imp.add_argument("file", help="the instance or snapshot file")
    imp.add_argument("out", help="the scenario file to write (JSON)")
    imp.add_argument("--best-effort-as-zero", action="store_true",
                     help="kubernetes: count a missing cpu or memory request as 0, as the "
                     "scheduler's fit check does (default: refuse it)")
    imp.add_argument("--physical-gpus", action="store_true",
                     help="kubernetes, openb: model each GPU (a share takes that share of "
                     "one GPU, k whole GPUs k free GPUs of one node)")
    imp.add_argument("--nodes", metavar="CSV", help="openb: the node list")
    imp.add_argument("--limit", type=int, metavar="N",
                     help="openb: the first N pods by creation time")
    imp.set_defaults(run=command_import)
