"""Solve time, status and gap on generated Balance + Capacity + MinimizeMovement instances.

    python benchmarks/scale.py [--sizes 100x10,1000x50,5000x200] [--formulas LINEAR]
                               [--time-limit 60] [--workers 2]

Prints one row per (instance, bucket). Timing lives here, never in unit tests.
"""

from __future__ import annotations

import argparse
import platform
import time

import pandas as pd

from cpsat_rebalancer import parse_scenario, solve_scenario
from cpsat_rebalancer.generators import balance_instance
from cpsat_rebalancer.scenario import SolverOptions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100x10,1000x50,5000x200")
    parser.add_argument("--formulas", default="LINEAR")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows = []
    for size in args.sizes.split(","):
        objects, containers = (int(x) for x in size.lower().split("x"))
        for formula in args.formulas.split(","):
            data = balance_instance(objects, containers, formula, seed=args.seed)
            t0 = time.perf_counter()
            scenario = parse_scenario(data)
            load = time.perf_counter() - t0
            result = solve_scenario(scenario, SolverOptions(args.time_limit, args.workers,
                                                            args.seed))
            for bucket in result.buckets:
                rows.append({"instance": f"{objects}x{containers}", "formula": formula,
                             "classes": result.classes, "position": bucket.position,
                             "status": bucket.status, "value": bucket.objective,
                             "bound": bucket.bound, "gap": bucket.gap,
                             "bucket s": round(bucket.seconds, 2),
                             "total s": round(result.seconds, 2), "load s": round(load, 2),
                             "moves": len(result.moves)})
            print(pd.DataFrame(rows[-len(result.buckets):]).to_string(index=False), flush=True)
    print(f"\nmachine: {platform.machine()}, {platform.processor() or 'cpu'}; "
          f"time limit {args.time_limit}s for the whole chain, {args.workers} workers")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
