"""Benchmark: the VCD placement engine against the exact model on generated scenarios.

Run ``python benchmarks/vcd.py`` (``--quick`` for the two smallest sizes of each level).
Two levels: ``clusters`` (VMs x clusters, from 100 x 10 to 2000 x 100, clusters as a whole)
and ``hosts`` (clusters modelled host by host, 50 to 500 hosts in all). For each size it
generates a seeded scenario, runs the engine, solves the exact model (hinted with the
engine's placement, under ``--time-limit`` seconds per instance) and prints engine time,
exact time, VMs placed by each and the gap: ``gap`` = exact placed - engine placed;
``bound`` = the most VMs any placement can place (the proven bound of position 0), so
``bound - engine`` is the engine's proven shortfall; ``failed hosts`` counts the engine's
power-on attempts that found no host with room (fragmentation inside clusters);
``positions`` gives each tuple position of the exact chain as ``position:yes`` when proven
optimal, ``position:no`` when not. ``--json OUT`` writes every comparison (both tuples, the
bounds per position) as ``vcd compare --json`` does.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from cpsat_rebalancer.files import write_atomically
from cpsat_rebalancer.result import OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.vcd.exact import compare_vcd
from cpsat_rebalancer.vcd.generate import generate
from cpsat_rebalancer.vcd.inputs import parse_vcd

SIZES = {  # level -> (VMs, clusters, hosts per cluster)
    "clusters": [(100, 10, 0), (250, 25, 0), (500, 50, 0), (1000, 50, 0), (2000, 100, 0)],
    "hosts": [(100, 10, 5), (250, 25, 4), (500, 50, 5), (1000, 50, 10)],  # 50 to 500 hosts
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=40.0,
                        help="seconds for the exact model per instance (default 40)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--load", type=float, default=0.9)
    parser.add_argument("--level", choices=("clusters", "hosts", "both"), default="both",
                        help="clusters as a whole, host by host, or both (default)")
    parser.add_argument("--quick", action="store_true",
                        help="only the two smallest sizes of each level")
    parser.add_argument("--json", help="write every comparison to this JSON file")
    args = parser.parse_args(argv)
    levels = ("clusters", "hosts") if args.level == "both" else (args.level,)
    sizes = [size for level in levels for size in (SIZES[level][:2] if args.quick
                                                    else SIZES[level])]
    header = (f"{'VMs x clusters':>15} {'hosts':>5} {'engine s':>9} {'exact s':>8} "
              f"{'engine':>7} {'exact':>6} {'bound':>6} {'gap':>4} {'placed proven':>13} "
              f"{'failed hosts':>12}  positions")
    print(header)
    print("-" * len(header))
    started = time.perf_counter()
    records: list[dict] = []
    for vms, clusters, hosts in sizes:
        scenario = parse_vcd(generate(vms, clusters, args.seed, args.load, hosts=hosts))
        c = compare_vcd(scenario, SolverOptions(time_limit=args.time_limit))
        bound = c.placed_bound
        failed = sum(len(d.attempts) for d in c.decisions)
        print(f"{f'{vms} x {clusters}':>15} {clusters * hosts or '-':>5} "
              f"{c.engine_seconds:>9.3f} {c.ours.seconds:>8.1f} {c.engine_placed:>7} "
              f"{c.exact_placed:>6} {bound if bound is not None else '-':>6} "
              f"{c.exact_placed - c.engine_placed:>4} "
              f"{'yes' if c.placed_proven else 'no':>13} {failed:>12}  "
              + " ".join(f"{b.position}:{'yes' if b.status == OPTIMAL else 'no'}"
                         for b in c.ours.buckets), flush=True)
        records.append(c.to_dict())
        if c.entry.contradiction:
            print(f"SOUNDNESS VIOLATION: {c.entry.contradiction}", file=sys.stderr)
            return 1
    print(f"total {time.perf_counter() - started:.0f} s")
    if args.json:
        write_atomically(args.json, json.dumps(records, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
