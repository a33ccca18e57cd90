"""``cpsat-rebalancer vcd place|compare|generate``: the VCD placement engine, its exact
counterpart, and the gap between them."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import pandas as pd

from ..errors import InputError
from ..result import INFEASIBLE, NO_SOLUTION, OPTIMAL
from ..scenario import SolverOptions, read_data_file
from ..vcd.engine import Decision, place
from ..vcd.exact import (
    VcdComparison,
    compare_vcd,
    placement_of,
    position_meanings,
    solve_exact,
)
from ..vcd.generate import generate
from ..vcd.inputs import VcdScenario, parse_vcd, vm_reason
from .common import EXIT_INTERNAL, check_outputs, print_table, quiet_pipe, write_output


def load_vcd(path: str) -> VcdScenario:
    return parse_vcd(read_data_file(path))


def _options(args: argparse.Namespace) -> SolverOptions:
    return SolverOptions.checked(args.time_limit, args.workers, args.seed, path="options")


def _decision_rows(decisions: list[Decision]) -> pd.DataFrame:
    return pd.DataFrame([{"vm": d.vm, "operation": d.operation, "outcome": d.outcome,
                          "cluster": d.cluster or "-", "host": d.host or "-",
                          "datastore": d.datastore or "-",
                          "network pool": d.network_pool or "-",
                          "reason": "; ".join(d.attempts + [d.reason]) if d.attempts
                          else d.reason or "-"}
                         for d in decisions])


def _explain(decision: Decision) -> None:
    print(f"\n{decision.vm} ({decision.operation}): {decision.outcome}"
          + (f" on {decision.cluster} / {decision.datastore}" if decision.placed else ""))
    if decision.ranking:
        print_table(pd.DataFrame([{
            "rank": k + 1, "cluster": r.cluster, "list": r.list, "because": r.because or "-",
            "health": "yellow" if r.yellow else "green",
            "score": "/".join(f"{v:.4g}" for v in r.key),
            **{f"{res} weighted": s.weighted for res, s in r.scores.items()},
            **{f"{res} capacity": s.capacity for res, s in r.scores.items()
               if res != "storage"},
            **{f"{res} future": s.future for res, s in r.scores.items() if res != "storage"},
            "no headroom": ",".join(k for k, ok in r.headroom.items() if not ok) or "-",
            "datastores": ",".join(r.datastores)} for k, r in enumerate(decision.ranking)]),
            out=sys.stdout)
    for attempt in decision.attempts:
        print(f"  power-on {attempt}")
    for cluster, why in decision.rejected.items():
        print(f"  filtered {cluster}: {why}")


def _exact_rows(s: VcdScenario, result) -> pd.DataFrame:
    where = placement_of(s, result.problem, result.final)
    rows = []
    for vm in s.vms:
        spot = where[vm.name]
        reason = "-"
        if spot is None:
            reason = vm_reason(s, vm) or "left unplaced by the optimum (no room)"
        rows.append({"vm": vm.name, "operation": vm.operation,
                     "outcome": "not possible" if spot is None else "resident"
                     if vm.operation == "resident" else
                     ("stayed" if vm.placement == spot[:2] else "placed"),
                     "cluster": spot[0] if spot else "-",
                     "host": (spot[2] or "-") if spot else "-",
                     "datastore": spot[1] if spot else "-",
                     "network pool": (s.network_pool(vm.network) or "-") if spot else "-",
                     "reason": reason})
    return pd.DataFrame(rows)


def command_place(args: argparse.Namespace) -> int:
    check_outputs({"--json": args.json}, [args.scenario])
    s = load_vcd(args.scenario)
    if args.exact:
        _, _, result = solve_exact(s, _options(args))
        if result.status in (INFEASIBLE, NO_SOLUTION):
            raise InputError(args.scenario, f"the exact model found no placement "
                             f"({result.status})")
        rows = _exact_rows(s, result)
        payload: dict[str, Any] = {"solver": "exact", "status": result.status,
                                   "seconds": result.seconds,
                                   "positions": {str(b.position): b.objective
                                                 for b in result.buckets},
                                   "vms": rows.to_dict(orient="records")}
        header = (f"Exact model: {result.status} in {result.seconds:.2f} s; "
                  f"{int((~rows['outcome'].isin(['not possible', 'resident'])).sum())} of "
                  f"{len(s.acted_on)} VMs placed")
        decisions = []
    else:
        decisions = place(s)
        rows = _decision_rows(decisions)
        payload = {"solver": "vcd-engine", "vms": [
            {**row, "ranking": [{"cluster": r.cluster, "list": r.list, "because": r.because,
                                 "yellow": r.yellow, "key": list(r.key),
                                 "scores": {k: v.__dict__ for k, v in r.scores.items()},
                                 "headroom": r.headroom} for r in d.ranking],
             "filtered": d.rejected, "attempts": d.attempts}
            for row, d in zip(rows.to_dict(orient="records"), decisions)]}
        header = (f"VCD placement engine: "
                  f"{sum(d.placed for d in decisions if d.outcome != 'resident')} of "
                  f"{len(s.acted_on)} VMs placed")
    if args.json:  # before printing, so a closed pipe cannot lose it
        write_output(args.json, json.dumps(payload, indent=2, default=_jsonable))
    with quiet_pipe():
        print(f"Scenario {args.scenario}: {len(s.vms)} VMs, {len(s.clusters)} clusters, "
              f"{len(s.datastores)} datastores\n{header}\n")
        print_table(rows, out=sys.stdout)
        if args.explain:
            if args.exact:
                print("\n(--explain shows the engine's scores; the exact model's reasons are "
                      "its tuple positions: solve the model with `solve` for the values)")
            for d in decisions:
                _explain(d)
        if args.json:
            print(f"\nWrote {args.json}")
    return 0


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def print_vcd_comparison(c: VcdComparison, source: str) -> None:
    proven = "proven optimum" if c.placed_proven else "best found, not proven"
    residents = len(c.scenario.vms) - c.decided
    print(f"\n== {source}: {c.decided} VMs" + (f" (+{residents} residents)" if residents else "")
          + f", {len(c.scenario.clusters)} clusters")
    print("Positions: " + "; ".join(f"{k}: {v}" for k, v in
                                    position_meanings(c.scenario.tunables).items()))
    print(f"VMs placed: engine {c.engine_placed}, exact {c.exact_placed} ({proven}); "
          f"engine {c.engine_seconds:.3f} s, exact {c.ours.seconds:.2f} s ({c.ours.status})")
    print_table(pd.DataFrame(c.rows()), out=sys.stdout)
    print(f"engine under the exact model: {c.entry.verdict}")


def _tuple(values: dict[int, float]) -> str:
    """Tuple positions and values, e.g. ``0:1 3:0 5:1.09``."""
    return " ".join(f"{k}:{v:.4g}" for k, v in values.items())


def command_compare(args: argparse.Namespace) -> int:
    check_outputs({"--json": args.json}, args.scenarios)
    comparisons = [(path, compare_vcd(load_vcd(path), _options(args)))
                   for path in args.scenarios]
    if args.json:
        write_output(args.json, json.dumps([c.to_dict() for _, c in comparisons], indent=2,
                                           default=_jsonable))
    with quiet_pipe():
        for path, c in comparisons:
            print_vcd_comparison(c, path)
        print("\nSummary:")
        print_table(pd.DataFrame([{
            "scenario": path, "VMs": c.decided, "engine placed": c.engine_placed,
            "exact placed": c.exact_placed, "proven": "yes" if c.placed_proven else "no",
            "gap (VMs)": c.exact_placed - c.engine_placed,
            "engine tuple": _tuple(c.engine_tuple), "exact tuple": _tuple(c.exact_tuple),
            "tuple proven": "yes" if c.ours.status == OPTIMAL else "no",
            "engine s": round(c.engine_seconds, 3), "exact s": round(c.ours.seconds, 2)}
            for path, c in comparisons]), out=sys.stdout)
        if args.json:
            print(f"\nWrote {args.json}")
    broken = [f"{path}: {c.entry.contradiction}" for path, c in comparisons
              if c.entry.contradiction]
    if broken:
        print("SOUNDNESS VIOLATION (please report):\n  " + "\n  ".join(broken), file=sys.stderr)
        return EXIT_INTERNAL
    return 0


def command_generate(args: argparse.Namespace) -> int:
    check_outputs({"OUT": args.out})
    data = generate(args.vms, args.clusters, args.seed or 0, args.load, args.anti_every,
                    args.iops, args.hosts, args.orgs)
    parse_vcd(data)  # never write a scenario the loader rejects
    write_output(args.out, json.dumps(data, indent=1))
    print(f"Wrote {args.out}: {args.vms} VMs over {args.clusters} clusters"
          + (f" of {args.hosts} hosts" if args.hosts else "") + " (seed "
          f"{args.seed or 0}, load {args.load})")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``vcd place|compare|generate``."""
    vcd = sub.add_parser("vcd", help="VMware Cloud Director placement: engine vs exact model",
                         description="The VCD placement engine, its exact model, and "
                         "random VCD scenarios.")
    vsub = vcd.add_subparsers(dest="vcd_command", required=True)

    def solver_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--time-limit", type=float, default=60.0,
                       help="seconds for the exact model's solve chain (default 60)")
        p.add_argument("--workers", type=int, help="CP-SAT workers (default 2)")
        p.add_argument("--seed", type=int, help="CP-SAT random seed (default 0)")
        p.add_argument("--json", help="write the result as JSON to this file")

    p = vsub.add_parser("place", help="place every VM (the engine, or --exact)")
    p.add_argument("scenario", help="VCD scenario file (JSON or YAML)")
    p.add_argument("--exact", action="store_true", help="the exact model's placement instead")
    p.add_argument("--explain", action="store_true",
                   help="the engine's ranking and scores for every VM, and filtered clusters")
    solver_args(p)
    p.set_defaults(run=command_place)
    c = vsub.add_parser("compare", help="the engine beside the proven optimum, per scenario")
    c.add_argument("scenarios", nargs="+", help="VCD scenario files")
    solver_args(c)
    c.set_defaults(run=command_compare)
    g = vsub.add_parser("generate", help="write a random VCD scenario")
    g.add_argument("out", help="where to write it (JSON)")
    g.add_argument("--vms", type=int, required=True)
    g.add_argument("--clusters", type=int, required=True)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--load", type=float, default=0.9,
                   help="demand over usable unreserved capacity (default 0.9)")
    g.add_argument("--anti-every", type=int, default=50,
                   help="one VM in this many joins an anti-affinity group of 3 (0: none)")
    g.add_argument("--iops", action="store_true", help="enable the IOPS filter")
    g.add_argument("--hosts", type=int, default=0,
                   help="model each cluster as this many hosts (default 0: clusters whole)")
    g.add_argument("--orgs", type=int, default=3, help="organisation VDCs (default 3)")
    g.set_defaults(run=command_generate)


__all__ = ["add_commands", "load_vcd"]
