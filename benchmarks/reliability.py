"""Time limits are kept, and large inputs load fast in bounded memory.

    python benchmarks/reliability.py [--limits 2,5] [--sizes 100x10,1000x50,5000x200]
                                     [--formulas LINEAR,SQUARES,MAX,IDEAL] [--load 100000]

Part 1 solves generated instances under each time limit and prints the wall time of the
whole chain (compilation, every bucket, IDEAL levels, evaluation) against the limit.
Part 2 writes a scenario of --load objects to a temporary JSON file and loads and validates
it in a fresh process, printing the time and the peak resident memory.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from cpsat_rebalancer import parse_scenario, solve_scenario
from cpsat_rebalancer.generators import balance_instance
from cpsat_rebalancer.scenario import SolverOptions

LOADER = """
import resource, sys, time
t = time.perf_counter()
from cpsat_rebalancer import load_scenario
scenario = load_scenario(sys.argv[1])
seconds = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{scenario.problem.num_objects} {seconds:.2f} {peak:.0f}")
"""


def time_limits(sizes: list[str], formulas: list[str], limits: list[float]) -> pd.DataFrame:
    rows = []
    for size in sizes:
        objects, containers = (int(x) for x in size.split("x"))
        for formula in formulas:
            scenario = parse_scenario(balance_instance(objects, containers, formula, seed=1))
            for limit in limits:
                t0 = time.perf_counter()
                result = solve_scenario(scenario, SolverOptions(time_limit=limit))
                wall = time.perf_counter() - t0
                rows.append({"instance": size, "formula": formula, "limit s": limit,
                             "wall s": round(wall, 2), "over s": round(wall - limit, 2),
                             "status": result.status, "termination": result.termination})
                print(pd.DataFrame(rows[-1:]).to_string(index=False, header=len(rows) == 1),
                      flush=True)
    return pd.DataFrame(rows)


def load(objects: int) -> str:
    data = balance_instance(objects, max(10, objects // 100), "LINEAR")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.json"
        path.write_text(json.dumps(data))
        mb = path.stat().st_size / 2**20
        done = subprocess.run([sys.executable, "-c", LOADER, str(path)], capture_output=True,
                              text=True, check=True)
    count, seconds, peak = done.stdout.split()
    return (f"load + validate {count} objects ({mb:.1f} MB of JSON): {seconds} s, "
            f"peak memory {peak} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limits", default="2,5")
    parser.add_argument("--sizes", default="100x10,1000x50,5000x200")
    parser.add_argument("--formulas", default="LINEAR,SQUARES,MAX,IDEAL")
    parser.add_argument("--load", type=int, default=100_000)
    args = parser.parse_args()
    table = time_limits(args.sizes.split(","), args.formulas.split(","),
                        [float(x) for x in args.limits.split(",")])
    print(f"\nworst overrun: {table['over s'].max():.2f} s")
    print(load(args.load))


if __name__ == "__main__":
    main()
