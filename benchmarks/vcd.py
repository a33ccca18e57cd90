"""Benchmark: the VCD placement engine against the exact model on generated scenarios.

Run ``python benchmarks/vcd.py`` (``--quick`` for the two smallest sizes). For each size
(VMs x clusters, from 100 x 10 to 2000 x 100) it generates a seeded scenario, runs the
engine, solves the exact model (hinted with the engine's placement, under ``--time-limit``
seconds per instance) and prints engine time, exact time, VMs placed by each and the gap:
``gap`` = exact placed - engine placed; ``bound`` = the most VMs any placement can place
(the proven bound of position 0), so ``bound - engine`` is the engine's proven shortfall.
"""

from __future__ import annotations

import argparse
import sys
import time

from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.vcd.exact import compare_vcd
from cpsat_rebalancer.vcd.generate import generate
from cpsat_rebalancer.vcd.inputs import parse_vcd

SIZES = [(100, 10), (250, 25), (500, 50), (1000, 50), (2000, 100)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--time-limit", type=float, default=40.0,
                        help="seconds for the exact model per instance (default 40)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--load", type=float, default=0.9)
    parser.add_argument("--quick", action="store_true", help="only the two smallest sizes")
    args = parser.parse_args(argv)
    sizes = SIZES[:2] if args.quick else SIZES
    header = (f"{'VMs x clusters':>15} {'engine s':>9} {'exact s':>8} {'engine':>7} "
              f"{'exact':>6} {'bound':>6} {'gap':>4} {'placed proven':>13}")
    print(header)
    print("-" * len(header))
    started = time.perf_counter()
    for vms, clusters in sizes:
        scenario = parse_vcd(generate(vms, clusters, args.seed, args.load))
        c = compare_vcd(scenario, SolverOptions(time_limit=args.time_limit))
        bound = c.placed_bound
        print(f"{f'{vms} x {clusters}':>15} {c.engine_seconds:>9.3f} {c.ours.seconds:>8.1f} "
              f"{c.engine_placed:>7} {c.exact_placed:>6} {bound if bound is not None else '-':>6} "
              f"{c.exact_placed - c.engine_placed:>4} {'yes' if c.placed_proven else 'no':>13}",
              flush=True)
        if c.entry.contradiction:
            print(f"SOUNDNESS VIOLATION: {c.entry.contradiction}", file=sys.stderr)
            return 1
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
