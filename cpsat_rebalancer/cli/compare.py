"""``cpsat-rebalancer compare SCENARIO`` (heuristics beside the proven optimum, see
:mod:`cpsat_rebalancer.compare`) and ``cpsat-rebalancer export SCENARIO`` (a script that
builds the scenario with Rebalancer)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import numpy as np

from ..compare import Comparison, compare, leximin_difference, plot_utilization
from ..errors import InputError
from ..heuristics import BUILT_IN, NEEDS_PEER, HeuristicOptions, check_heuristic, make_heuristic
from ..plugins import code_file
from ..result import INFEASIBLE, NO_SOLUTION, OPTIMAL, SolveResult
from ..scenario import SolverOptions, load_data_with_model, parse_scenario
from ..tables import fleet_files
from .common import (
    EXIT_INFEASIBLE,
    EXIT_INTERNAL,
    EXIT_NO_SOLUTION,
    SCENARIO_HELP,
    check_outputs,
    print_table,
    read_assignment,
    write_atomically,
)
from .outputs import write_comparison_report


def print_comparison(comparison: Comparison, source: str) -> None:
    problem = comparison.instance.problem
    ours = comparison.ours
    positions = ", ".join(str(b.position) for b in ours.buckets)
    print(f"Scenario {source}: {problem.num_objects} objects, {problem.num_containers} "
          f"containers, tuple positions {positions or '-'}")
    moves = len(ours.moves)
    print(f"Ours (CP-SAT, exact): {ours.status} ({ours.termination}) in {ours.seconds:.2f} s, "
          f"{moves} move{'' if moves == 1 else 's'}")
    print("\nPer tuple position (values on Rebalancer's scale, from our evaluator; abs gap = "
          "value - ours).\nPositions compare lexicographically: a heuristic's value is "
          "comparable with ours only\nwhile every earlier position ties; the first position "
          "where they differ decides, and later\nones are shown but not comparable.")
    print_table(comparison.bucket_table(), out=sys.stdout)
    leximin = [(e.name, c) for e in comparison.entries for c in e.buckets if c.leximin]
    for name, c in leximin:
        print(f"  {name} position {c.position} (IDEAL alone: compared in leximin order, "
              f"utilizations from the largest): {leximin_difference(c.leximin, c.ours_leximin)}")
    print("\nSummary (seconds: wall time of each solver; ours beside it):")
    print_table(comparison.summary_table(), out=sys.stdout)
    print("\nVerdicts:")
    print(f"  ours (CP-SAT): {_our_verdict(ours)}")
    for e in comparison.entries:
        extra = _details_text(e.details)
        print(f"  {e.name}: {e.verdict}" + (f"\n    ({extra})" if extra else ""))


def _our_verdict(result: SolveResult) -> str:
    if result.status == OPTIMAL:
        return "proven optimal at every position"
    open_ = [b for b in result.buckets if b.status != OPTIMAL]
    if result.status in (INFEASIBLE, NO_SOLUTION):
        return result.status
    return f"{result.status}: not proven at position(s) " + ", ".join(
        str(b.position) for b in open_)


def _details_text(details: dict) -> str:
    parts = []
    if "endReason" in details:
        parts.append(f"Rebalancer ended {details['endReason']}")
    if details.get("proven") is not None:
        parts.append("HiGHS proved optimality" if details["proven"] else "HiGHS did not prove "
                     "optimality" + (" (found no solution)" if details.get("noFeasibleSolution")
                                     else ""))
    if details.get("positions"):
        values = ", ".join(f"{p}: {v:.6g}" for p, v in details["positions"].items())
        parts.append(f"its own values {{{values}}}"
                     + (" (continuous surrogates)" if details.get("surrogate") else ""))
    if details.get("solveSeconds") is not None:
        parts.append(f"solve() {details['solveSeconds']:.2f} s")
    if "stopped" in details:
        steps = details["steps"]
        parts.append(f"{steps} step{'' if steps == 1 else 's'}, stopped: {details['stopped']}")
    return "; ".join(parts)


def command_compare(args: argparse.Namespace) -> int:
    from ..peer import PeerUnavailable, require_peer_python

    if not args.heuristic and not args.assignment:
        raise InputError("compare", "name at least one --heuristic or --assignment")
    for name in args.heuristic:  # before anything is imported or solved
        check_heuristic(name, allow_code=args.allow_code)
    code = [f.path for f in (code_file(n, "--heuristic", allow_code=args.allow_code)
                             for n in args.heuristic) if f is not None]
    check_outputs({"--json": args.json, "--plot": args.plot, "--report": args.report},
                  [*fleet_files(args.scenario), args.model, *args.assignment, *code])
    data = load_data_with_model(args.scenario, args.model)
    scenario = parse_scenario(data)
    base = scenario.options
    options = SolverOptions.checked(
        args.time_limit if args.time_limit is not None else base.time_limit,
        args.workers if args.workers is not None else base.workers,
        args.seed if args.seed is not None else base.seed, path="options")
    peer_python = args.peer_python
    if any(name in NEEDS_PEER for name in args.heuristic):
        try:
            peer_python = require_peer_python(args.peer_python)
        except PeerUnavailable as exc:
            raise InputError("--heuristic", str(exc)) from None
    move_types = tuple(args.peer_move_types.split(",")) if args.peer_move_types else None
    heuristic_options = HeuristicOptions(options.time_limit, options.seed, peer_python,
                                         move_types, args.max_moves)
    heuristics = [make_heuristic(name, heuristic_options, allow_code=args.allow_code)
                  for name in args.heuristic]
    given = {path: read_assignment(scenario.problem, path) for path in args.assignment}
    comparison = compare(data, heuristics, given, options)
    if args.json:
        write_atomically(args.json, json.dumps(comparison.to_dict(), indent=2,
                                               default=_jsonable))
    if args.plot:
        plot_utilization(comparison, args.plot)
    write_comparison_report(args, comparison)
    print_comparison(comparison, args.scenario)
    written = [path for path in (args.json, args.plot, args.report) if path]
    if written:
        print("\nWrote " + ", ".join(written))
    if comparison.contradictions:
        print("\nSOUNDNESS VIOLATION (a bug in our solver or evaluator; please report):\n  "
              + "\n  ".join(comparison.contradictions), file=sys.stderr)
        return EXIT_INTERNAL
    status = comparison.ours.status
    return {INFEASIBLE: EXIT_INFEASIBLE, NO_SOLUTION: EXIT_NO_SOLUTION}.get(status, 0)


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def command_export(args: argparse.Namespace) -> int:
    from ..peer import export_rebalancer_python

    check_outputs({"OUT.py": args.out}, [*fleet_files(args.scenario), args.model])
    data = load_data_with_model(args.scenario, args.model)
    parse_scenario(data)  # validate completely first: errors name the field
    move_types = args.move_types.split(",") if args.move_types else None
    text = export_rebalancer_python(data, solver=args.solver, time_limit=args.time_limit,
                                    move_types=move_types, seed=args.seed or 0,
                                    source=args.scenario, script=args.out)
    compile(text, args.out, "exec")  # never write a script that does not parse
    write_atomically(args.out, text, mode=0o777)  # executable, as far as the umask allows
    print(f"Wrote {args.out}: builds {args.scenario} with Rebalancer and solves it with "
          f"{args.solver}; run it with python3.12 {args.out} (needs rebalancer==1.0.4)")
    return 0


def _nonnegative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be >= 0")
    return value


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``compare`` and ``export`` subcommands."""
    cmp = sub.add_parser(
        "compare", help="compare heuristics (and given assignments) with the proven optimum",
        description="Solve SCENARIO exactly, run each heuristic, read each assignment, and "
        "report per tuple position each one's value beside the optimum (or incumbent and "
        "bound), the gap, feasibility, moves and wall time.")
    cmp.add_argument("scenario", help=SCENARIO_HELP)
    cmp.add_argument("--heuristic", action="append", default=[], metavar="NAME",
                     help="a heuristic to run (repeatable): " + ", ".join(BUILT_IN)
                     + ", an installed plugin, or your own as FILE.py:NAME or "
                     "module:attribute (with --allow-code)")
    cmp.add_argument("--allow-code", action="store_true",
                     help="run your own Python code named by --heuristic FILE.py:NAME or "
                     "module:attribute")
    cmp.add_argument("--assignment", action="append", default=[], metavar="FILE",
                     help="an assignment to compare (repeatable): {container: [objects]}, "
                     "{object: container}, or a result file from solve --json")
    cmp.add_argument("--model", help="take goals and constraints from this model file")
    cmp.add_argument("--time-limit", type=float,
                     help="seconds for our solve chain, and for each Rebalancer solver")
    cmp.add_argument("--workers", type=int, help="CP-SAT workers (default 2)")
    cmp.add_argument("--seed", type=int, help="random seed for CP-SAT and Rebalancer")
    cmp.add_argument("--peer-python", metavar="PATH",
                     help="Python 3.12 with rebalancer, for the rebalancer-* heuristics "
                     "(default: $CPSAT_REBALANCER_PEER_PYTHON, then the peer venv)")
    cmp.add_argument("--peer-move-types", metavar="LIST",
                     help="Rebalancer local search move types, comma separated "
                     "(default single,swap; e.g. single,swap,tripleLoop)")
    cmp.add_argument("--max-moves", type=_nonnegative_int,
                     help="greedy-balance: stop after this many moves")
    cmp.add_argument("--json", help="write the whole comparison as JSON to this file")
    cmp.add_argument("--plot", metavar="OUT.png",
                     help="draw the utilization each solver leaves per scope item "
                     "(needs matplotlib)")
    cmp.add_argument("--report", metavar="OUT.html",
                     help="write one self-contained HTML page: each heuristic beside the "
                     "optimum, the utilization each leaves, our proof, moves and goals")
    cmp.set_defaults(run=command_compare)

    exp = sub.add_parser(
        "export", help="write a script that builds the scenario with Rebalancer",
        description="Write a standalone Python 3.12 script that builds SCENARIO with Meta's "
        "rebalancer wheel and solves it, to reproduce a case in Rebalancer itself.")
    exp.add_argument("scenario", help=SCENARIO_HELP)
    exp.add_argument("--to", required=True, choices=["rebalancer-python"],
                     help="what to write (rebalancer-python: a script for the wheel)")
    exp.add_argument("out", metavar="OUT.py", help="where to write the script")
    exp.add_argument("--model", help="take goals and constraints from this model file")
    exp.add_argument("--solver", default="local-search",
                     choices=["local-search", "optimal-highs"],
                     help="Rebalancer's solver in the script (default local-search)")
    exp.add_argument("--time-limit", type=float, help="the solver's time limit in seconds")
    exp.add_argument("--move-types", metavar="LIST",
                     help="local search move types, comma separated (default single,swap)")
    exp.add_argument("--seed", type=int, help="local search random seed")
    exp.set_defaults(run=command_export)
