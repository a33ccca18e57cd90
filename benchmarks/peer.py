"""Our exact solve beside Meta's Rebalancer (local search, and its HiGHS optimal solver) on
generated instances of growing size and on the bundled seed scenarios.

    python benchmarks/peer.py [--sizes 100x10,1000x50,5000x200,20000x500] [--formula LINEAR]
                              [--time-limit 60] [--workers 2] [--seed 0] [--no-seeds]
                              [--solvers ours,local-search,optimal-highs]
                              [--move-types single,swap] [--peer-python PATH] [--json OUT]

Generated instances are ``generators.balance_instance`` (Balance of cpu at position 0 with a
HARD cpu Capacity, MinimizeMovement by object count at position 1; a skewed start). Every
solver gets ``--time-limit`` seconds per instance (ours for its whole chain; Rebalancer's as
its ``solveTime``). One row per (instance, solver): wall seconds (for Rebalancer including
the peer interpreter's start and building the problem; ``solve s`` is its ``solve()``
alone), status (ours) or end reason (Rebalancer; HiGHS ``proven`` or not), the bucket values
of the returned assignment by our evaluator and by the wheel's own (the solve's
``finalGlobalObjective``), our proven bound, moves, feasibility by our evaluator, and how the
answer compares with ours lexicographically; ``x HiGHS``, on HiGHS's rows, is our time to
proven optimality over HiGHS's ``solve()`` time, where both proved it. Timing lives here,
never in unit tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import pandas as pd

from cpsat_rebalancer import evaluate, parse_scenario, solve_scenario
from cpsat_rebalancer.generators import balance_instance
from cpsat_rebalancer.heuristics import tuple_order
from cpsat_rebalancer.peer import PeerError, require_peer_python, solve_with_wheel
from cpsat_rebalancer.scenario import SolverOptions

SCENARIOS = Path(__file__).parents[1] / "scenarios"


def values(positions: dict) -> str:
    return " / ".join(f"{positions[p]:.6g}" for p in sorted(positions, key=int))


def versus(evaluation, ours_result) -> str:
    order, position = tuple_order(evaluation, ours_result.final_evaluation)
    if order == 0:
        return "ties ours"
    word = "better" if order < 0 else "worse"
    bucket = next((b for b in ours_result.buckets if b.position == position), None)
    note = "" if bucket is None or bucket.status == "OPTIMAL" else " (ours not proven)"
    return f"{word} at {position}{note}"


COLUMNS = ("instance", "solver", "seconds", "solve s", "status", "values (our eval)",
           "values (wheel eval)", "bound", "moves", "feasible", "vs ours", "x HiGHS")


def cell(value) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value).replace("|", "/")


def markdown(rows: list[dict]) -> str:
    """The rows as a Markdown table (missing cells as -)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines)


def run_instance(name: str, data: dict, args, python: str | None) -> list[dict]:
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    rows = []
    ours = None
    if "ours" in args.solvers:
        ours = solve_scenario(scenario, SolverOptions(args.time_limit, args.workers, args.seed))
        bounds = " / ".join("-" if b.bound is None else f"{b.bound:.6g}" for b in ours.buckets)
        rows.append({"instance": name, "solver": "ours (CP-SAT)", "seconds": ours.seconds,
                     "solve s": None, "status": ours.status + " (" + ", ".join(
                         b.status for b in ours.buckets) + ")",
                     "values (our eval)": values(ours.final_evaluation.positions),
                     "values (wheel eval)": "-", "bound": bounds, "moves": len(ours.moves),
                     "feasible": ours.final_evaluation.feasible, "vs ours": "-"})
    for solver in ("local-search", "optimal-highs"):
        if solver not in args.solvers:
            continue
        label = f"rebalancer {solver}"
        try:
            result = solve_with_wheel(data, solver, time_limit=args.time_limit,
                                      move_types=args.move_types, seed=args.seed,
                                      peer_python=python)
        except PeerError as exc:
            rows.append({"instance": name, "solver": label, "status": f"error: {exc}"[:110]})
            continue
        final = problem.assignment_array(result["assignment"])
        evaluation = evaluate(problem, model, final)
        status = result["endReason"]
        if solver == "optimal-highs":
            status += ", proven" if result["proven"] else ", not proven"
            if result.get("noFeasibleSolution"):
                status += ", no solution (returns the start)"
        rows.append({"instance": name, "solver": label, "seconds": result["seconds"],
                     "solve s": result["solveSeconds"], "status": status,
                     "values (our eval)": values(evaluation.positions),
                     "values (wheel eval)": values(result["positions"])
                     + (" (surrogate)" if result["surrogate"] else ""),
                     "bound": "-", "moves": result["moves"], "feasible": evaluation.feasible,
                     "vs ours": versus(evaluation, ours) if ours else "-"})
        if solver == "optimal-highs" and result["proven"] and ours is not None:
            rows[-1]["x HiGHS"] = (ours.seconds / result["solveSeconds"]
                                   if ours.status == "OPTIMAL" and result["solveSeconds"]
                                   else "ours not proven")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100x10,1000x50,5000x200,20000x500")
    parser.add_argument("--formula", default="LINEAR")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-seeds", action="store_true", help="skip the bundled scenarios")
    parser.add_argument("--solvers", default="ours,local-search,optimal-highs")
    parser.add_argument("--move-types", default="single,swap")
    parser.add_argument("--peer-python")
    parser.add_argument("--json", help="also write the rows as JSON")
    args = parser.parse_args()
    args.solvers = args.solvers.split(",")
    args.move_types = args.move_types.split(",")
    python = None
    if {"local-search", "optimal-highs"} & set(args.solvers):
        python = require_peer_python(args.peer_python)
    instances = []
    for size in filter(None, args.sizes.split(",")):
        objects, containers = (int(x) for x in size.lower().split("x"))
        instances.append((f"{objects}x{containers} {args.formula}",
                          balance_instance(objects, containers, args.formula, seed=args.seed)))
    if not args.no_seeds:
        for path in sorted(SCENARIOS.glob("seed_*.json")):
            instances.append((path.stem, json.loads(path.read_text())))
    rows: list[dict] = []
    started = time.perf_counter()
    for name, data in instances:
        new = run_instance(name, data, args, python)
        rows += new
        shown = pd.DataFrame([{c: cell(row.get(c)) for c in COLUMNS} for row in new])
        print(shown.to_string(index=False), flush=True)
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}; time limit {args.time_limit:g} s per solver "
          f"per instance; CP-SAT {args.workers} workers; Rebalancer local search move types "
          f"{','.join(args.move_types)}; total {time.perf_counter() - started:.0f} s\n")
    print(markdown(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))


if __name__ == "__main__":
    sys.exit(main())
