"""Our solver on scenarios of random shape, beside Rebalancer's local search.

    python benchmarks/robustness.py --size 2000x100 --count 30 [--time-limit 60] [--seed 0]
                                    [--sizes 100x10,400x20] [--shapes reported|NAME,...]
                                    [--workers 2] [--solver-seed 0]
                                    [--no-peer] [--peer-python PATH] [--json OUT]
                                    [--markdown] [--fail-on-findings]

Our own benchmarks are not the judge: an engine tuned on its own generator fails on shapes
it never saw. Here every instance has a shape drawn from its seed
(``shapes.random_shape_scenario(objects, containers, seed)`` for the seeds ``--seed`` to
``--seed + --count - 1``, at every size): which specs, their options, policies, scopes, size
distributions and magnitudes, capacities, start and utilization; the ``shape`` column says
it in one line (``shapes.describe_shape``). ``--shapes`` runs the shapes users reported
failing (``shapes.REPORTED_SHAPES``, all of them with ``reported``, or those named) instead
of seeds.

Ours runs exactly as ``cpsat-rebalancer solve`` does (``parse_scenario``, then
``solve_scenario`` with the time limit for the whole chain), in a fresh spawned child per
instance, so ``peak MB`` is that child's peak resident memory and an exception (or a dead or
hung child) is a row (``raised``), not the end of the run. Rebalancer's local search gets
the same time limit; both answers are evaluated by our evaluator, and ``vs LS`` orders our
final tuple against local search's lexicographically (an IDEAL bucket in leximin order), as
``benchmarks/scale.py`` does. The footer counts proven optima, exceptions, instances worse
than local search, the longest time and the largest peak memory. The exit code is 0 unless
``--fail-on-findings`` is given (then 1 when an instance raised or was worse than LS).

Timing lives here, never in unit tests.
"""

from __future__ import annotations

import argparse
import datetime
import json
import resource
import subprocess
import sys
import time
import traceback
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.peer import cell, values  # noqa: E402
from benchmarks.scale import (  # noqa: E402
    machine,
    parse_sizes,
    run_child,
    status_text,
    verdict,
)
from cpsat_rebalancer import evaluate, parse_scenario, solve_scenario  # noqa: E402
from cpsat_rebalancer.cli.common import write_output  # noqa: E402
from cpsat_rebalancer.errors import InputError  # noqa: E402
from cpsat_rebalancer.heuristics import tuple_order  # noqa: E402
from cpsat_rebalancer.peer import PeerError, require_peer_python, solve_with_wheel  # noqa: E402
from cpsat_rebalancer.result import INFEASIBLE, OPTIMAL  # noqa: E402
from cpsat_rebalancer.scenario import SolverOptions  # noqa: E402
from cpsat_rebalancer.shapes import (  # noqa: E402
    REPORTED_SHAPES,
    describe_shape,
    random_shape_scenario,
    shape_scenario,
)

DEFAULT_SIZE, DEFAULT_COUNT, DEFAULT_LIMIT = "2000x100", 30, 60.0
OVERRUN = 0.5  # seconds past the time limit that count as over it (issue #29's figure)
ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- ours, in a child


def build(objects: int, containers: int, seed: int | str) -> dict[str, Any]:
    """The scenario of a seed's drawn shape, or of a reported shape by its name."""
    if isinstance(seed, str):
        return shape_scenario(REPORTED_SHAPES[seed], objects, containers)
    return random_shape_scenario(objects, containers, seed)


def describe(seed: int | str) -> str:
    return describe_shape(REPORTED_SHAPES[seed] if isinstance(seed, str) else seed)


def solve_shape(objects: int, containers: int, seed: int | str, time_limit: float,
                workers: int,
                solver_seed: int) -> dict[str, Any]:
    """Draw, load and solve one instance the way the CLI does; runs in a spawned child.
    An exception is returned as ``raised`` (with the stage it came from and the innermost
    frames of its traceback), beside the peak memory and the time until then."""
    started = time.perf_counter()
    stage = "generate"
    try:
        data = build(objects, containers, seed)
        stage = "parse"
        scenario = parse_scenario(data)
        stage = "solve"
        result = solve_scenario(scenario, SolverOptions(time_limit, workers, solver_seed))
    except Exception as exc:  # noqa: BLE001 - a finding, reported in the row
        frames = traceback.extract_tb(exc.__traceback__)[-3:]
        return {"raised": f"{type(exc).__name__}: {exc}", "stage": stage,
                "where": [f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in frames],
                "seconds": time.perf_counter() - started, "peak_mb": _peak_mb()}
    return {
        "status": result.status, "termination": result.termination,
        "seconds": result.seconds, "wall_seconds": time.perf_counter() - started,
        "moves": int((result.final != scenario.problem.initial).sum()),
        "buckets": [asdict(b) for b in result.buckets], "conflict": result.conflict,
        "evaluation": result.final_evaluation, "peak_mb": _peak_mb(),
    }


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------- one instance


def run_instance(objects: int, containers: int, seed: int | str, args: argparse.Namespace,
                 python: str | None) -> dict[str, Any]:
    """One row: our child solve, then local search on the same instance and time limit."""
    row: dict[str, Any] = {"size": f"{objects}x{containers}", "seed": seed,
                           "shape": describe(seed)}
    job = (objects, containers, seed, args.time_limit, args.workers, args.solver_seed)
    ours: dict[str, Any] | None = None
    try:
        ours = run_child(job, solve_shape, timeout=3 * args.time_limit + 120)
    except Exception as exc:  # noqa: BLE001 - a dead or silent child is a row too
        row.update(raised=f"{type(exc).__name__}: {exc}", stage="child")
    if ours is not None and "raised" in ours:
        row.update(raised=ours["raised"], stage=ours["stage"], where=ours["where"],
                   seconds=ours["seconds"], **{"peak MB": ours["peak_mb"]})
        ours = None
    if ours is not None:
        buckets = ours["buckets"]
        row.update({
            "status": ours["status"], "position status": " / ".join(map(status_text, buckets)),
            "values": values(ours["evaluation"].positions),
            "bounds": " / ".join("-" if b["bound"] is None else f"{b['bound']:.6g}"
                                 for b in buckets), "seconds": ours["seconds"],
            "peak MB": ours["peak_mb"], "moves": ours["moves"],
            "feasible": ours["evaluation"].feasible, "buckets": buckets,
            "conflict": ours["conflict"],
        })
    if python is not None:
        add_local_search(row, objects, containers, seed, args, python, ours)
    return row


def add_local_search(row: dict[str, Any], objects: int, containers: int, seed: int | str,
                     args: argparse.Namespace, python: str,
                     ours: dict[str, Any] | None) -> None:
    """Rebalancer's local search on the same instance, judged by our evaluator."""
    data = build(objects, containers, seed)
    try:
        scenario = parse_scenario(data)
        answer = solve_with_wheel(data, "local-search", time_limit=args.time_limit,
                                  seed=args.solver_seed, peer_python=python)
    except (PeerError, InputError) as exc:
        row["LS error"] = f"{type(exc).__name__}: {exc}"[:300]
        return
    problem = scenario.problem
    evaluation = evaluate(problem, scenario.model, problem.assignment_array(answer["assignment"]))
    row.update({"LS values": values(evaluation.positions), "LS s": answer["solveSeconds"],
                "LS wall s": answer["seconds"], "LS moves": answer["moves"],
                "LS end": answer["endReason"], "LS feasible": evaluation.feasible})
    if ours is None:
        row["vs LS"] = "- (ours raised)"
        return
    row["vs LS"] = verdict(ours["evaluation"], evaluation)
    order, position = tuple_order(ours["evaluation"], evaluation)
    if order > 0 and position is not None:  # what our answer claimed where LS beat it
        bucket = next((b for b in ours["buckets"] if b["position"] == position), None)
        mine = ours["evaluation"].positions.get(position, 0.0)
        theirs = evaluation.positions.get(position, 0.0)
        row["worse by"] = f"{mine - theirs:.3g}" + ("" if bucket is None else (
            f" at {position}, where ours is {bucket['status']} with gap {cell(bucket['gap'])}"
            f" and stated error {cell(bucket['approximation_error'])}"))


# --------------------------------------------------------------------------- output


COLUMNS = ("seed", "shape", "status", "values", "bounds", "seconds", "peak MB", "raised")
PEER_COLUMNS = ("LS values", "LS s", "vs LS")


def columns(args: argparse.Namespace) -> list[str]:
    return list(COLUMNS) + ([] if args.no_peer else list(PEER_COLUMNS))


def shown(row: dict[str, Any], column: str) -> str:
    value = row.get(column)
    if column == "raised" and value:
        return str(value)[:160]
    if column == "status" and value and row.get("position status") not in (None, value):
        return f"{value} ({row['position status']})"
    return cell(value)


def table(rows: list[dict], chosen: list[str]) -> str:
    frame = pd.DataFrame([{c: shown(r, c) for c in chosen} for r in rows], columns=chosen)
    errors = [f"  seed {r['seed']} {r['size']}: {r['LS error']}" for r in rows if "LS error" in r]
    return frame.to_string(index=False) + ("\n" + "\n".join(errors) if errors else "")


def markdown(rows: list[dict], chosen: list[str]) -> str:
    lines = ["| " + " | ".join(chosen) + " |", "|" + "---|" * len(chosen)]
    lines += ["| " + " | ".join(shown(r, c).replace("|", "/") for c in chosen) + " |"
              for r in rows]
    return "\n".join(lines)


def commit() -> str:
    """The checked-out commit, with ``+changes`` when tracked files differ from it."""
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain",
                                "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


def findings(rows: list[dict], time_limit: float) -> dict[str, list[dict]]:
    return {
        "raised": [r for r in rows if "raised" in r],
        # INFEASIBLE is a proof too (of the hard rules' conflict), so not listed here
        "not proven": [r for r in rows if r.get("status") not in (None, OPTIMAL, INFEASIBLE)],
        "worse than LS": [r for r in rows if "WORSE" in r.get("vs LS", "")],
        "over the time limit": [r for r in rows
                                if (r.get("seconds") or 0) > time_limit + OVERRUN],
        "LS error": [r for r in rows if "LS error" in r],
    }


def footer(rows: list[dict], args: argparse.Namespace, when: str, total: float) -> str:
    found = findings(rows, args.time_limit)
    proven = sum(r.get("status") == OPTIMAL for r in rows)
    counted = pd.Series([r.get("status", "raised") for r in rows]).value_counts()
    statuses = ", ".join(f"{k} {v}" for k, v in counted.items())
    times = [r["seconds"] for r in rows if r.get("seconds") is not None]
    peaks = [r["peak MB"] for r in rows if r.get("peak MB") is not None]
    judged = sum("vs LS" in r and not r["vs LS"].startswith("-") for r in rows)
    lines = [
        f"{len(rows)} instances: proven optimal {proven}, raised {len(found['raised'])}, "
        f"worse than LS {len(found['worse than LS'])}"
        + (f" (of {judged} compared)" if not args.no_peer else " (LS not run)")
        + f", over the time limit {len(found['over the time limit'])}; statuses {statuses}; "
        f"max time {max(times, default=0):.1f} s; max peak memory "
        f"{max(peaks, default=0):.0f} MB",
        f"{when}; machine: {machine()}; commit {commit()}",
        f"time limit {args.time_limit:g} s per solver per instance (ours for its whole chain, "
        f"in a spawned child); CP-SAT {args.workers} workers, solver seed "
        f"{args.solver_seed}; shapes {shapes_run(args)}; "
        f"total {total:.0f} s",
    ]
    for kind, listed in found.items():
        lines += [f"{kind}: seed {r['seed']} {r['size']} [{r['shape']}]: {detail(kind, r)}"
                  for r in listed]
    return "\n".join(lines)


def shapes_run(args: argparse.Namespace) -> str:
    if args.shapes is not None:
        return ", ".join(args.keys)
    return f"seeds {args.seed}..{args.seed + args.count - 1}"


def detail(kind: str, row: dict[str, Any]) -> str:
    """What a finding of ``kind`` is, in the footer."""
    if kind == "raised":
        return f"{row['raised'][:300]} (in {row.get('stage')})"
    if kind == "not proven":
        return (f"{row['status']} ({row['position status']}), values {row['values']}, "
                f"bounds {row['bounds']}")
    if kind == "worse than LS":
        return (f"{row['vs LS']}: ours {row['values']}, LS {row['LS values']}; ours worse by "
                f"{row.get('worse by', '-')}")
    if kind == "over the time limit":
        return f"{row['seconds']:.1f} s, {row.get('status', 'raised')}"
    return row[kind][:300]


# --------------------------------------------------------------------------- command line


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", "--sizes", dest="sizes", default=DEFAULT_SIZE,
                        help=f"objects x containers, comma-separated (default {DEFAULT_SIZE})")
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT,
                        help=f"shapes (seeds) per size (default {DEFAULT_COUNT})")
    parser.add_argument("--time-limit", type=float, default=DEFAULT_LIMIT,
                        help=f"seconds per solver per instance (default {DEFAULT_LIMIT:g})")
    parser.add_argument("--seed", type=int, default=0, help="the first shape seed")
    parser.add_argument("--shapes", help="reported shapes instead of seeds: 'reported' "
                        "(all) or comma-separated names of " + ", ".join(REPORTED_SHAPES))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--solver-seed", type=int, default=0,
                        help="CP-SAT's and local search's random seed")
    parser.add_argument("--no-peer", action="store_true", help="ours only")
    parser.add_argument("--peer-python", help="Python 3.12 with rebalancer 1.0.4")
    parser.add_argument("--json", help="write every row as JSON (atomically)")
    parser.add_argument("--markdown", action="store_true",
                        help="print the final tables in Markdown")
    parser.add_argument("--fail-on-findings", action="store_true",
                        help="exit code 1 when an instance raised or was worse than LS")
    args = parser.parse_args(argv)
    if args.time_limit <= 0:
        raise InputError("--time-limit", "must be positive", args.time_limit)
    if args.count < 1:
        raise InputError("--count", "must be positive", args.count)
    args.instances = parse_sizes(args.sizes, "--size")
    args.keys = list(range(args.seed, args.seed + args.count))
    if args.shapes is not None:
        args.keys = (list(REPORTED_SHAPES) if args.shapes == "reported"
                     else [name.strip() for name in args.shapes.split(",")])
        unknown = [name for name in args.keys if name not in REPORTED_SHAPES]
        if unknown or not args.keys:
            raise InputError("--shapes", "expected 'reported' or names of "
                             + ", ".join(REPORTED_SHAPES), args.shapes)
    return args


def main(argv: list[str] | None = None) -> int:
    """Run every (size, seed), print the tables and the footer; the exit code."""
    args = parse_args(argv)
    python = None if args.no_peer else require_peer_python(args.peer_python)
    chosen = columns(args)
    started = time.perf_counter()
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows: list[dict] = []
    for objects, containers in args.instances:
        for seed in args.keys:
            row = run_instance(objects, containers, seed, args, python)
            rows.append(row)
            print(table([row], ["size"] + chosen), flush=True)
    print()
    for objects, containers in args.instances:
        size = f"{objects}x{containers}"
        part = [r for r in rows if r["size"] == size]
        print(f"\n{size}:\n" + (markdown(part, chosen) if args.markdown
                                 else table(part, chosen)))
    print("\n" + footer(rows, args, when, time.perf_counter() - started))
    if args.json:
        payload = {"date": when, "machine": machine(), "commit": commit(),
                   "timeLimit": args.time_limit, "workers": args.workers,
                   "solverSeed": args.solver_seed, "peer": not args.no_peer, "rows": rows}
        write_output(args.json, json.dumps(payload, indent=1, default=str))
        print(f"Wrote {args.json}")
    found = findings(rows, args.time_limit)
    return 1 if args.fail_on_findings and (found["raised"] or found["worse than LS"]) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except InputError as exc:
        sys.exit(f"error: {exc}")
