"""Command line: ``cpsat-rebalancer solve|evaluate SCENARIO``.

Exit codes: 0 solved (optimal or feasible), 2 bad input (one line, no traceback),
3 infeasible, 4 no solution found in time, 1 internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .api import solve_scenario
from .errors import InputError, InternalError
from .evaluate import Evaluation, evaluate
from .problem import Problem
from .result import (
    INFEASIBLE,
    NO_SOLUTION,
    SolveResult,
    constraint_dict,
    global_objective_dict,
    objective_dict,
    value_table,
)
from .scenario import SolverOptions, parse_scenario, read_data_file

EXIT_INPUT, EXIT_INTERNAL, EXIT_INFEASIBLE, EXIT_NO_SOLUTION = 2, 1, 3, 4
MODEL_KEYS = ("goals", "constraints", "constraintPolicy", "defaultConstraintParams")


def write_atomically(path: str, text: str) -> None:
    """Write the whole file or nothing: a temporary file beside it, then a rename."""
    target = Path(path)
    handle, temporary = tempfile.mkstemp(dir=target.parent or ".", prefix=f".{target.name}.")
    try:
        with os.fdopen(handle, "w") as stream:
            stream.write(text)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_output(path: str, text: str) -> None:
    try:
        write_atomically(path, text)
    except OSError as exc:
        raise InputError(path, f"cannot write the output file: {exc.strerror}") from None


@contextlib.contextmanager
def quiet_pipe():
    """Output piped into ``head`` and closed early is not an error (the exit code stands)."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def load(path: str, model: str | None) -> dict[str, Any]:
    """The scenario dict, with goals and constraints taken from ``model`` when given."""
    data = read_data_file(path)
    if not isinstance(data, dict):
        raise InputError(path, "a scenario must be a mapping at the top level")
    if model:
        model_data = read_data_file(model)
        if not isinstance(model_data, dict):
            raise InputError(model, "a model must be a mapping at the top level")
        unknown = sorted(set(model_data) - set(MODEL_KEYS) - {"name", "description"})
        if unknown:
            raise InputError(f"{model}: {unknown[0]}", "unknown model field (a model holds "
                             + ", ".join(MODEL_KEYS) + ")")
        data = {k: v for k, v in data.items() if k not in MODEL_KEYS}
        data.update({k: v for k, v in model_data.items() if k in MODEL_KEYS})
    return data


def format_number(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def print_table(frame: pd.DataFrame, out=None) -> None:
    out = out or sys.stdout
    if frame.empty:
        print("  (none)", file=out)
        return
    shown = frame.map(format_number) if hasattr(frame, "map") else frame.applymap(format_number)
    print(shown.to_string(index=False), file=out)


def print_values(initial: Evaluation, final: Evaluation) -> None:
    table = value_table(initial, final)
    print("\nGoals and constraints (Rebalancer's scale; constraints show their violation):")
    if not table.empty:
        table = table[["kind", "name", "position", "weight", "initial", "final"]]
    print_table(table)
    positions = sorted(set(initial.positions) | set(final.positions))
    if positions:
        print("\nObjective per tuple position (weighted goals + soft constraint terms):")
        print_table(pd.DataFrame({
            "position": positions,
            "initial": [initial.positions.get(p, 0.0) for p in positions],
            "final": [final.positions.get(p, 0.0) for p in positions],
        }))
    broken = final.broken_hard()
    print("\nHard constraints: " + ("all hold" if not broken else "BROKEN: " + "; ".join(broken)))


def print_result(result: SolveResult) -> None:
    print(f"Status: {result.status} ({result.termination}) in {result.seconds:.2f} s, "
          f"{result.problem.num_objects} objects in {result.classes} classes, "
          f"{result.problem.num_containers} containers")
    print("\nBuckets (tuple positions, solved in order):")
    rows = []
    for b in result.buckets:
        note = ""
        if b.leximin_levels is not None:
            note = (f"leximin: all {b.leximin_items} relative utilizations proven"
                    if b.leximin_levels == b.leximin_items else
                    f"leximin: the {b.leximin_levels} largest of {b.leximin_items} relative "
                    "utilizations proven")
            if b.leximin_level_value is not None:
                note += f"; the next is {b.leximin_level_value:.6g}"
                if b.leximin_level_bound is not None:
                    note += f" (bound {b.leximin_level_bound:.6g})"
        rows.append({"position": b.position, "status": b.status, "value": b.objective,
                     "bound": b.bound, "gap": b.gap, "error bound": b.approximation_error,
                     "seconds": b.seconds, "note": note})
    print_table(pd.DataFrame(rows))
    if result.conflict:
        print("\nThese hard constraints cannot all hold (a small conflicting set):")
        for line in result.conflict:
            print(f"  - {line}")
    if result.termination == "interrupted":
        print("\nInterrupted: the best assignment found so far is reported.")
    moves = result.moves
    print(f"\nMoves: {len(moves)}")
    print_table(moves.head(50))
    if len(moves) > 50:
        print(f"  ... and {len(moves) - 50} more (see --json)")
    print_values(result.initial_evaluation, result.final_evaluation)
    if result.approximation:
        print("\nApproximations (bound on |model - exact|): " + ", ".join(
            f"{k}: {v:.3g}" for k, v in result.approximation.items()))


def command_solve(args: argparse.Namespace) -> int:
    scenario = parse_scenario(load(args.scenario, args.model))
    base = scenario.options
    options = SolverOptions.checked(
        args.time_limit if args.time_limit is not None else base.time_limit,
        args.workers if args.workers is not None else base.workers,
        args.seed if args.seed is not None else base.seed,
        args.deterministic_time if args.deterministic_time is not None
        else base.deterministic_time, args.log or base.log, path="options",
        cpsat_parameters={**base.cpsat_parameters, **collect_cpsat_params(args.cpsat_param)})
    hint = None if args.hint is None else read_assignment(scenario.problem, args.hint)
    result = solve_scenario(scenario, options, hint)
    if args.json:  # before printing, so a closed pipe cannot lose it
        write_output(args.json, result.to_json())
    code = {INFEASIBLE: EXIT_INFEASIBLE, NO_SOLUTION: EXIT_NO_SOLUTION}.get(result.status, 0)
    with quiet_pipe():
        print_result(result)
        if args.json:
            print(f"\nWrote {args.json}")
    return code


def cpsat_param(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` of ``--cpsat-param``: VALUE as an integer, a number, true/false, or
    else the text itself (an enum name, say); the field's type is checked later."""
    name, sep, raw = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    raw = raw.strip()
    value: Any = raw
    if raw.lower() in ("true", "false"):
        value = raw.lower() == "true"
    else:
        for kind in (int, float):
            try:
                value = kind(raw)
                break
            except ValueError:
                continue
    return name.strip(), value


def collect_cpsat_params(pairs: list[tuple[str, Any]] | None) -> dict[str, Any]:
    """``--cpsat-param`` pairs as a dict; a name given again adds a value (a list, for
    CP-SAT's repeated fields such as ``ignore_subsolvers``)."""
    collected: dict[str, Any] = {}
    for name, value in pairs or []:
        if name in collected:
            before = collected[name]
            collected[name] = [*(before if isinstance(before, list) else [before]), value]
        else:
            collected[name] = value
    return collected


def read_assignment(problem: Problem, path: str) -> np.ndarray:
    """``{container: [objects]}``, Rebalancer's ``{object: container}``, or a result file
    written by ``solve --json`` (its ``assignment``)."""
    data = read_data_file(path)
    if isinstance(data, dict) and isinstance(data.get("assignment"), dict):
        data = data["assignment"]
    if isinstance(data, dict) and data and all(isinstance(v, str) for v in data.values()):
        by_container: dict[str, list[str]] = {}
        for obj, cont in data.items():
            by_container.setdefault(cont, []).append(obj)
        data = by_container
    return problem.assignment_array(data, path=str(path))


def command_evaluate(args: argparse.Namespace) -> int:
    scenario = parse_scenario(load(args.scenario, args.model))
    final = read_assignment(scenario.problem, args.assignment)
    initial_eval = evaluate(scenario.problem, scenario.model, scenario.problem.initial)
    final_eval = evaluate(scenario.problem, scenario.model, final)
    moved = int((final != scenario.problem.initial).sum())
    if args.json:  # before printing, so a closed pipe cannot lose it
        payload = {"feasible": final_eval.feasible, "moves": moved,
                   "initialObjective": objective_dict(initial_eval, 0),
                   "finalObjective": objective_dict(final_eval, 0),
                   "initialGlobalObjective": global_objective_dict(initial_eval),
                   "finalGlobalObjective": global_objective_dict(final_eval),
                   "initialConstraint": constraint_dict(initial_eval),
                   "finalConstraint": constraint_dict(final_eval),
                   "brokenHardConstraints": final_eval.broken_hard()}
        write_output(args.json, json.dumps(payload, indent=2))
    with quiet_pipe():
        print(f"Assignment {args.assignment}: {moved} moves, "
              f"{'feasible' if final_eval.feasible else 'INFEASIBLE'}")
        print_values(initial_eval, final_eval)
        if args.json:
            print(f"\nWrote {args.json}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cpsat-rebalancer", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    solve = sub.add_parser("solve", help="solve a scenario to proven optimality")
    solve.add_argument("scenario", help="scenario file (JSON or YAML)")
    solve.add_argument("--model", help="take goals and constraints from this model file")
    solve.add_argument("--time-limit", type=float, help="seconds for the whole solve chain")
    solve.add_argument("--workers", type=int, help="CP-SAT workers (default 2)")
    solve.add_argument("--seed", type=int, help="CP-SAT random seed (default 0)")
    solve.add_argument("--deterministic-time", type=float,
                       help="CP-SAT deterministic time budget per solve (repeatable results)")
    solve.add_argument("--cpsat-param", action="append", type=cpsat_param, metavar="NAME=VALUE",
                       help="a further CP-SAT parameter (repeatable), e.g. "
                       "linearization_level=2; overrides the scenario's solver.cpsatParameters")
    solve.add_argument("--log", action="store_true", help="print CP-SAT's search log")
    solve.add_argument("--hint", help="start from this assignment (a heuristic's, say) when it "
                       "keeps the hard constraints and beats the initial one")
    solve.add_argument("--json", help="write the full result as JSON to this file")
    solve.set_defaults(run=command_solve)
    ev = sub.add_parser("evaluate", help="evaluate a given assignment without solving")
    ev.add_argument("scenario", help="scenario file (JSON or YAML)")
    ev.add_argument("--assignment", required=True,
                    help="JSON/YAML {container: [objects]} or a result file from solve --json")
    ev.add_argument("--model", help="take goals and constraints from this model file")
    ev.add_argument("--json", help="write the values as JSON to this file")
    ev.set_defaults(run=command_evaluate)
    from .compare import add_commands  # compare, export: heuristic validation and peers

    add_commands(sub)
    from .vcd.cli import add_commands as add_vcd_commands  # vcd place|compare|generate

    add_vcd_commands(sub)
    from .studies.cli import add_commands as add_study_commands  # study run|plot

    add_study_commands(sub)
    from .importers import add_commands as add_import_commands  # import gap|binpacking

    add_import_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INPUT
    except InternalError as error:
        print(f"internal error (please report): {error}", file=sys.stderr)
        return EXIT_INTERNAL
    except KeyboardInterrupt:  # before any search started (a running search stops cleanly)
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
