"""Our solver beside Meta's Rebalancer (local search, optionally its HiGHS optimal solver) on the
scale families (generators.scale_instance), all in one run.

    python benchmarks/scale.py [--families linear,squares,max,ideal,drain,racks]
                               [--sizes 2000x100,10000x500] [--time-limit 60] [--workers 2]
                               [--seed 0] [--peer local-search,highs | --no-peer]
                               [--peer-python PATH] [--wheel-eval] [--json OUT]
                               [--quick]

Instances are ``generators.scale_instance(family, objects, containers, seed)``; every size is
run for every family (the ``million`` family is meant for ``--sizes 1000000x1000``).
``--quick`` is a smoke check: sizes 100x10,400x20 and a 10 s limit unless given.

Ours runs exactly as ``cpsat-rebalancer solve`` does (``parse_scenario``, then
``solve_scenario`` with the time limit for the whole chain), each instance in a fresh spawned
child process, so ``peak MB`` is that child's peak resident memory (generating and loading
the instance included). Rebalancer gets the same time limit (its ``solveTime``) through the
peer bridge; its answer is evaluated by our evaluator (``eval``) beside the wheel's own
``finalGlobalObjective`` (``wheel``). ``--wheel-eval`` also has the wheel evaluate our final
assignment (``ours wheel``; forced moves, slow on large instances). ``vs LS`` orders our
final tuple against local search's lexicographically (an IDEAL bucket in leximin order):
ours is never to be worse. ``x HiGHS`` is our time to proven optimality over HiGHS's
``solve()`` time, where both proved it.

Timing lives here, never in unit tests.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing
import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import ortools
import pandas as pd

if __package__ in (None, ""):  # run as a script: make ``benchmarks.peer`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.peer import cell, values  # noqa: E402
from cpsat_rebalancer import evaluate, parse_scenario, solve_scenario  # noqa: E402
from cpsat_rebalancer.cli.common import write_output  # noqa: E402
from cpsat_rebalancer.errors import InputError  # noqa: E402
from cpsat_rebalancer.evaluate import Evaluation  # noqa: E402
from cpsat_rebalancer.generators import SCALE_FAMILIES, scale_instance  # noqa: E402
from cpsat_rebalancer.heuristics import tuple_order  # noqa: E402
from cpsat_rebalancer.peer import (  # noqa: E402
    PeerError,
    evaluate_with_wheel,
    require_peer_python,
    solve_with_wheel,
)
from cpsat_rebalancer.result import OPTIMAL  # noqa: E402
from cpsat_rebalancer.scenario import SolverOptions  # noqa: E402
from cpsat_rebalancer.studies.executors import die_with_parent  # noqa: E402

DEFAULT_FAMILIES = "linear,squares,max,ideal,drain,racks"
DEFAULT_SIZES, QUICK_SIZES = "2000x100,10000x500", "100x10,400x20"
DEFAULT_LIMIT, QUICK_LIMIT = 60.0, 10.0
PEERS = {"local-search": "local-search", "ls": "local-search",
         "highs": "optimal-highs", "optimal-highs": "optimal-highs"}
LABEL = {"local-search": "LS", "optimal-highs": "HiGHS"}


# --------------------------------------------------------------------------- ours, in a child


def solve_ours(family: str, objects: int, containers: int, seed: int, time_limit: float,
               workers: int) -> dict[str, Any]:
    """Generate, load and solve one instance the way the CLI does; runs in a spawned child,
    so the peak resident memory it reports is this instance's alone."""
    started = time.perf_counter()
    data = scale_instance(family, objects, containers, seed)
    generated = time.perf_counter()
    scenario = parse_scenario(data)
    loaded = time.perf_counter()
    result = solve_scenario(scenario, SolverOptions(time_limit, workers, seed))
    return {
        "status": result.status, "termination": result.termination,
        "seconds": result.seconds, "classes": result.classes,
        "moves": int((result.final != scenario.problem.initial).sum()),
        "buckets": [asdict(b) for b in result.buckets],
        "approximation": result.approximation,
        "final": result.final, "evaluation": result.final_evaluation,
        "generate_seconds": generated - started, "load_seconds": loaded - generated,
        "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _child(conn: Any, target: Callable[..., dict[str, Any]], job: tuple, parent: int
           ) -> None:
    die_with_parent(parent)  # a killed benchmark leaves no solve running
    try:
        conn.send(("ok", target(*job)))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which raises it
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def run_child(job: tuple, target: Callable[..., dict[str, Any]] = solve_ours,
              timeout: float | None = None) -> dict[str, Any]:
    """``target(*job)`` (by default :func:`solve_ours`) in a fresh spawned process (one per
    instance); its answer comes back through a pipe, read before joining so that a large
    answer cannot block it. ``target`` must be importable by name (a module-level function).
    With ``timeout``, a child silent for that many seconds is killed (``TimeoutError``)."""
    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(send, target, job, os.getpid()))
    process.start()
    send.close()
    try:
        if timeout is not None and not receive.poll(timeout):
            process.kill()
            process.join()
            raise TimeoutError(f"the solving child gave no answer in {timeout:g} s (killed)")
        kind, payload = receive.recv()
    except EOFError:
        process.join()
        raise RuntimeError(f"the solving child died (exit code {process.exitcode})") from None
    finally:
        receive.close()
    process.join()
    if kind == "error":
        raise RuntimeError(payload)
    return payload


# --------------------------------------------------------------------------- one instance


def verdict(ours: Evaluation, other: Evaluation) -> str:
    """Our final tuple against another's: lexicographic, IDEAL buckets in leximin order;
    an answer that breaks a hard constraint loses to one that keeps them all."""
    if ours.feasible != other.feasible:
        return "better (theirs infeasible)" if ours.feasible else "WORSE (ours infeasible)"
    order, position = tuple_order(ours, other)
    if order == 0:
        return "tie"
    return f"{'better' if order < 0 else 'WORSE'} at {position}"


def per_position(buckets: list[dict], key: str) -> str:
    return " / ".join(cell(b[key]) for b in buckets)


def status_text(bucket: dict) -> str:
    if bucket["leximin_levels"] is not None and bucket["status"] != OPTIMAL:
        return f"{bucket['status']} (leximin {bucket['leximin_levels']}/{bucket['leximin_items']})"
    return bucket["status"]


def run_instance(family: str, objects: int, containers: int, args: argparse.Namespace,
                 python: str | None) -> dict[str, Any]:
    """One row: our child solve, then each peer on the same instance and time limit."""
    name = f"{objects}x{containers}"
    row: dict[str, Any] = {"instance": name, "family": family}
    ours: dict[str, Any] | None = None
    try:
        ours = run_child((family, objects, containers, args.seed, args.time_limit, args.workers))
    except Exception as exc:  # noqa: BLE001 - a crashed child is a row, not the end of the run
        row["error"] = f"ours: {type(exc).__name__}: {exc}"
    if ours is not None:
        add_ours(row, ours)
    if args.peers or args.wheel_eval:
        add_peers(row, family, objects, containers, args, python, ours)
    return row


def add_ours(row: dict[str, Any], ours: dict[str, Any]) -> None:
    buckets = ours["buckets"]
    row.update({
        "status": ours["status"], "position status": " / ".join(map(status_text, buckets)),
        "values": values(ours["evaluation"].positions),
        "bounds": per_position(buckets, "bound"), "gaps": per_position(buckets, "gap"),
        "position s": per_position(buckets, "seconds"), "seconds": ours["seconds"],
        "load s": ours["load_seconds"], "generate s": ours["generate_seconds"],
        "classes": ours["classes"], "moves": ours["moves"], "peak MB": ours["peak_mb"],
        "feasible": ours["evaluation"].feasible, "buckets": buckets,
        "approximation": ours["approximation"],
    })


def add_peers(row: dict[str, Any], family: str, objects: int, containers: int,
              args: argparse.Namespace, python: str | None, ours: dict[str, Any] | None) -> None:
    """Each Rebalancer solver on the same instance, judged against ours (when ours ran)."""
    data = scale_instance(family, objects, containers, args.seed)
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    if args.wheel_eval and ours is not None:
        try:
            check = evaluate_with_wheel(data, problem.assignment_dict(ours["final"]), python,
                                        timeout=600 + 10 * args.time_limit)
            row["ours wheel"] = values(check["final"].get("positions") or {}) or "-"
        except PeerError as exc:
            row["ours wheel error"] = str(exc)[:200]
    for solver in args.peers:
        label = LABEL[solver]
        try:
            answer = solve_with_wheel(data, solver, time_limit=args.time_limit, seed=args.seed,
                                      peer_python=python)
        except PeerError as exc:
            row[f"{label} error"] = str(exc)[:200]
            continue
        evaluation = evaluate(problem, model, problem.assignment_array(answer["assignment"]))
        end = answer["endReason"]
        if solver == "optimal-highs":
            end += ", proven" if answer["proven"] else ", not proven"
            if answer.get("noFeasibleSolution"):
                end += ", no solution (start returned)"
        row.update({
            f"{label} eval": values(evaluation.positions),
            f"{label} wheel": values(answer["positions"]) if answer["positions"] else "-",
            f"{label} s": answer["solveSeconds"], f"{label} wall s": answer["seconds"],
            f"{label} moves": answer["moves"], f"{label} end": end,
            f"{label} feasible": evaluation.feasible,
        })
        if ours is None:
            continue
        row[f"vs {label}"] = verdict(ours["evaluation"], evaluation)
        if solver == "optimal-highs" and answer["proven"]:
            row["x HiGHS"] = (ours["seconds"] / answer["solveSeconds"]
                              if ours["status"] == OPTIMAL and answer["solveSeconds"]
                              else "ours not proven")
    return row


# --------------------------------------------------------------------------- output


OURS_COLUMNS = ("instance", "family", "status", "position status", "values", "bounds", "gaps",
                "position s", "seconds", "load s", "classes", "moves", "peak MB")
PEER_COLUMNS = {"LS": ("LS eval", "LS wheel", "LS s", "LS moves", "LS end", "vs LS"),
                "HiGHS": ("HiGHS eval", "HiGHS wheel", "HiGHS s", "HiGHS end", "vs HiGHS",
                          "x HiGHS")}


def columns(args: argparse.Namespace) -> list[str]:
    chosen = list(OURS_COLUMNS) + (["ours wheel"] if args.wheel_eval else [])
    for solver in args.peers:
        chosen += PEER_COLUMNS[LABEL[solver]]
    return chosen


def table(rows: list[dict], chosen: list[str]) -> str:
    shown = [{c: cell(row.get(c)) for c in chosen} for row in rows]
    errors = [f"  {row['instance']} {row['family']}: {row[k]}" for row in rows for k in row
              if k.endswith("error")]
    return pd.DataFrame(shown, columns=chosen).to_string(index=False) + (
        "\n" + "\n".join(errors) if errors else "")


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    if hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names:
        memory = f", {os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GB"
    return (f"{cpu}, {os.cpu_count()} cores{memory}; {platform.system()} "
            f"{platform.release()}; python {platform.python_version()}, "
            f"ortools {ortools.__version__}")


def never_worse(rows: list[dict]) -> str:
    """The acceptance line: ours is never worse than local search (and where ours failed)."""
    judged = [row["vs LS"] for row in rows if "vs LS" in row]
    worse = [f"{r['instance']} {r['family']}" for r in rows if "WORSE" in r.get("vs LS", "")]
    failed = [f"{r['instance']} {r['family']}" for r in rows if "error" in r]
    text = "ours vs LS: not compared" if not judged else (
        f"ours never worse than LS: {'yes' if not worse else 'NO'} "
        f"(not worse on {len(judged) - len(worse)} of {len(judged)} instances)"
        + (": worse on " + ", ".join(worse) if worse else ""))
    return text + ("; ours FAILED on " + ", ".join(failed) if failed else "")


# --------------------------------------------------------------------------- command line


def parse_sizes(text: str, option: str = "--sizes") -> list[tuple[int, int]]:
    """``2000x100,10000x500`` as [(objects, containers), ...]."""
    sizes = []
    for size in filter(None, text.split(",")):
        try:
            objects, containers = (int(x) for x in size.lower().split("x"))
        except ValueError:
            raise InputError(option, "expected OBJECTSxCONTAINERS, e.g. 2000x100",
                             size) from None
        if objects < 1 or containers < 1:
            raise InputError(option, "expected positive numbers of objects and containers",
                             size)
        sizes.append((objects, containers))
    return sizes


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--families", default=DEFAULT_FAMILIES,
                        help=f"comma-separated, of {','.join(SCALE_FAMILIES)}")
    parser.add_argument("--sizes", help=f"objects x containers (default {DEFAULT_SIZES})")
    parser.add_argument("--time-limit", type=float,
                        help=f"seconds per solver per instance (default {DEFAULT_LIMIT:g})")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--peer", default="local-search",
                        help="Rebalancer solvers: local-search, highs (comma-separated)")
    parser.add_argument("--no-peer", action="store_true", help="ours only")
    parser.add_argument("--peer-python", help="Python 3.12 with rebalancer 1.0.4")
    parser.add_argument("--wheel-eval", action="store_true",
                        help="also evaluate our final assignment with the wheel (slow)")
    parser.add_argument("--json", help="write every row as JSON (atomically)")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke check: sizes {QUICK_SIZES}, {QUICK_LIMIT:g} s")
    args = parser.parse_args(argv)
    args.sizes = args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    if args.time_limit is None:
        args.time_limit = QUICK_LIMIT if args.quick else DEFAULT_LIMIT
    if args.time_limit <= 0:
        raise InputError("--time-limit", "must be positive", args.time_limit)
    args.families = [f.strip().lower() for f in args.families.split(",") if f.strip()]
    for family in args.families:
        if family not in SCALE_FAMILIES:
            raise InputError("--families", f"unknown family (expected {', '.join(SCALE_FAMILIES)})",
                             family)
    args.instances = parse_sizes(args.sizes)
    args.peers = []
    if not args.no_peer:
        for name in filter(None, args.peer.split(",")):
            if name.strip() not in PEERS:
                raise InputError("--peer", "expected local-search and/or highs", name)
            args.peers.append(PEERS[name.strip()])
    return args


def main(argv: list[str] | None = None) -> list[dict]:
    """Run every (size, family), print the tables, and return the rows."""
    args = parse_args(argv)
    needs = args.peers or args.wheel_eval
    python = require_peer_python(args.peer_python) if needs else None
    chosen = columns(args)
    started = time.perf_counter()
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    rows: list[dict] = []
    for objects, containers in args.instances:
        for family in args.families:
            row = run_instance(family, objects, containers, args, python)
            rows.append(row)
            print(table([row], chosen), flush=True)
    peers = ", ".join(LABEL[p] for p in args.peers) or "none"
    print(f"\n{when}; machine: {machine()}\ntime limit {args.time_limit:g} s per solver per "
          f"instance (ours for its whole chain, in a spawned child); CP-SAT {args.workers} "
          f"workers; seed {args.seed}; Rebalancer peers: {peers}; total "
          f"{time.perf_counter() - started:.0f} s\n")
    print(table(rows, chosen))
    print("\n" + never_worse(rows))
    if args.json:
        payload = {"date": when, "machine": machine(), "timeLimit": args.time_limit,
                   "workers": args.workers, "seed": args.seed, "peers": args.peers,
                   "rows": rows}
        write_output(args.json, json.dumps(payload, indent=1, default=str))
        print(f"Wrote {args.json}")
    return rows


if __name__ == "__main__":
    try:
        main()
    except InputError as exc:
        sys.exit(f"error: {exc}")
