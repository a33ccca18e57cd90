"""Known optima: published GAP and bin-packing instances, solved through the public path.

Each instance is imported into an ordinary scenario (``cpsat-rebalancer import``), parsed and
solved exactly as ``cpsat-rebalancer solve`` does, and compared with the published values
(``../shared/data/gap/data.csv``, ``../shared/data/binpacking/BPPLIB_Bounds.txt``).

    python benchmarks/known_optima.py [--set NAME ...] [--time-limit S] [--first N] [--every K]
                                      [--json OUT] [--bounds]

Prints one line per instance (known optimum or bound/best known, our value, proven, time)
and a summary per set: how many matched the optimum, how many were proven.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from cpsat_rebalancer.api import solve_scenario
from cpsat_rebalancer.cli.common import collect_cpsat_params, cpsat_param
from cpsat_rebalancer.cpsat.packing_bounds import gilmore_gomory, martello_toth_l2
from cpsat_rebalancer.importers import IMPORTERS, read_binpacking
from cpsat_rebalancer.scenario import SolverOptions, parse_scenario

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
GAP, BPP = DATA / "gap", DATA / "binpacking"


def _bpp(folder: str, pattern: str = "*.txt") -> list[Path]:
    return sorted((BPP / "bpplib" / folder).glob(pattern))


def _gap(folder: str, prefixes: str) -> list[Path]:
    return sorted(p for p in (GAP / folder).iterdir() if p.name[0] in prefixes)


SETS = {
    "gap-cattrysse1994": ("gap", lambda: sorted((GAP / "cattrysse1994").iterdir())),
    "gap-chu1997-abc": ("gap", lambda: _gap("chu1997", "abc")),
    "gap-chu1997-d": ("gap", lambda: _gap("chu1997", "d")),
    "bpp-scholl1": ("binpacking", lambda: _bpp("Scholl/Scholl_1")),
    "bpp-schwerin": ("binpacking", lambda: _bpp("Schwerin/Schwerin_1") + _bpp(
        "Schwerin/Schwerin_2")),
    "bpp-falkenauer-u120-t60": ("binpacking", lambda: _bpp(
        "Falkenauer/Falkenauer_U", "*u120_*.txt") + _bpp("Falkenauer/Falkenauer_T",
                                                          "*t60_*.txt")),
    "bpp-hard28": ("binpacking", lambda: _bpp("Hard28")),
}


@dataclass
class Known:
    bound: float  # a proven lower bound (minimization)
    best: float  # the optimum when bound == best, else the best known value


def known_values() -> dict[str, Known]:
    """Published values by instance name (GAP: its path under gap/; bin packing: stem)."""
    known: dict[str, Known] = {}
    with open(GAP / "data.csv") as stream:
        for row in csv.DictReader(stream):
            optimum = row["Optimum"]
            best = float(optimum or row["Best known solution value"])
            bound = float(optimum or row["Best known bound"])
            known[row["Path"]] = Known(bound, best)
    for line in (BPP / "BPPLIB_Bounds.txt").read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:
            known[parts[0]] = Known(float(parts[1]), float(parts[2]))
    return known


def instance_key(kind: str, path: Path) -> str:
    return f"{path.parent.name}/{path.name}" if kind == "gap" else path.stem


@dataclass
class Row:
    set: str
    instance: str
    bound: float
    best: float
    value: float | None
    our_bound: float | None
    status: str
    seconds: float

    @property
    def matched(self) -> bool:
        return self.value is not None and abs(self.value - self.best) <= 1e-6

    @property
    def proven(self) -> bool:
        return self.status == "OPTIMAL"


def solve_instance(kind: str, path: Path, options: SolverOptions) -> tuple[float | None,
                                                                           float | None, str,
                                                                           float]:
    """Import, parse and solve as the CLI does; (value, bound, status, seconds)."""
    started = time.monotonic()
    scenario = parse_scenario(IMPORTERS[kind](path))
    result = solve_scenario(scenario, options)
    bucket = result.buckets[0]
    value = bucket.objective if result.status in ("OPTIMAL", "FEASIBLE") else None
    return value, bucket.bound, result.status, time.monotonic() - started


def print_bounds(args: argparse.Namespace, known: dict[str, Known]) -> int:
    """How often each bin-packing lower bound equals the optimum (it must never exceed it)."""
    print(f"{'set':24} {'instances':>9} {'L2 = opt':>9} {'GG = opt':>9} {'max GG s':>9}")
    for name in args.set or [n for n, (kind, _) in SETS.items() if kind == "binpacking"]:
        kind, paths = SETS[name]
        if kind != "binpacking":
            continue
        count = l2_hits = gg_hits = 0
        slowest = 0.0
        for path in paths()[:: args.every][: args.first]:
            capacity, sizes = read_binpacking(path)
            optimum = known[instance_key(kind, path)].best
            started = time.monotonic()
            gg = gilmore_gomory(sizes.astype(int), int(capacity))
            slowest = max(slowest, time.monotonic() - started)
            l2 = martello_toth_l2(sizes.astype(int), int(capacity))
            if max(l2, gg) > optimum:
                print(f"INVALID BOUND on {path.name}: L2 {l2}, GG {gg} > {optimum}")
                return 1
            count += 1
            l2_hits += l2 == optimum
            gg_hits += gg == optimum
        print(f"{name:24} {count:9d} {l2_hits:9d} {gg_hits:9d} {slowest:9.2f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", choices=sorted(SETS),
                        help="instance set (repeatable; default: all)")
    parser.add_argument("--time-limit", type=float, default=60.0,
                        help="seconds per instance (default 60)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--first", type=int, help="only the first N instances of each set")
    parser.add_argument("--every", type=int, default=1, metavar="K",
                        help="only every K-th instance of each set (a spread-out sample)")
    parser.add_argument("--json", help="write every row to this file")
    parser.add_argument("--cpsat-param", action="append", type=cpsat_param,
                        metavar="NAME=VALUE",
                        help="a CP-SAT parameter for every solve, as in the CLI (repeatable)")
    parser.add_argument("--bounds", action="store_true",
                        help="bin-packing sets only: compare the lower bounds the model states "
                        "(L2, Gilmore-Gomory) with the optima, without solving")
    args = parser.parse_args(argv)
    known = known_values()
    if args.bounds:
        return print_bounds(args, known)
    options = SolverOptions.checked(args.time_limit, args.workers, 0,
                                    cpsat_parameters=collect_cpsat_params(args.cpsat_param))
    rows: list[Row] = []
    print(f"{'set':24} {'instance':28} {'known':>10} {'ours':>10} {'bound':>10} "
          f"{'status':9} {'seconds':>8}")
    for name in args.set or list(SETS):
        kind, paths = SETS[name]
        for path in paths()[:: args.every][: args.first]:
            ref = known[instance_key(kind, path)]
            value, bound, status, seconds = solve_instance(kind, path, options)
            row = Row(name, path.stem if kind == "binpacking" else path.name, ref.bound,
                      ref.best, value, bound, status, seconds)
            rows.append(row)
            shown = f"{ref.best:g}" if ref.bound == ref.best else f"[{ref.bound:g},{ref.best:g}]"
            flag = "" if row.matched else "  <-- differs"
            if value is not None and row.proven and value < ref.bound - 1e-6:
                flag = "  <-- BELOW THE PUBLISHED LOWER BOUND"
            print(f"{name:24} {row.instance:28} {shown:>10} {value!s:>10} {bound!s:>10} "
                  f"{status:9} {seconds:8.2f}{flag}", flush=True)
    print("\nPer set:")
    print(f"{'set':24} {'instances':>9} {'matched':>8} {'proven':>7} {'max s':>7} "
          f"{'worst gap to best known':>24}")
    for name in dict.fromkeys(r.set for r in rows):
        part = [r for r in rows if r.set == name]
        gaps = [(r.value - r.best) / r.best for r in part if r.value is not None and r.best]
        print(f"{name:24} {len(part):9d} {sum(r.matched for r in part):8d} "
              f"{sum(r.proven for r in part):7d} {max(r.seconds for r in part):7.1f} "
              f"{max(gaps, default=0.0):24.4%}")
    if args.json:
        Path(args.json).write_text(json.dumps([asdict(r) for r in rows], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
