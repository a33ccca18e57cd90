"""What every subcommand shares: exit codes, checking and writing output files (whole or not
at all: :func:`write_atomically`, from :mod:`cpsat_rebalancer.files`), printing tables, and
reading ``--cpsat-param`` values and assignment files."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..evaluate import Evaluation
from ..files import write_atomically
from ..problem import Problem
from ..result import SolveResult, bucket_table, value_table
from ..scenario import read_data_file

EXIT_INPUT, EXIT_INTERNAL, EXIT_INFEASIBLE, EXIT_NO_SOLUTION = 2, 1, 3, 4
SCENARIO_HELP = ("scenario file (JSON or YAML), or a folder holding a CSV fleet (objects.csv, "
                 "containers.csv; goals from --model)")


def write_output(path: str, text: str) -> None:
    try:
        write_atomically(path, text)
    except OSError as exc:
        raise InputError(path, f"cannot write the output file: {exc.strerror}") from None


def _same(a: Path, b: Path) -> bool:
    """The same file: one resolved path, or one file under two names (a hard link)."""
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def check_outputs(outputs: dict[str, str | None], inputs: Iterable[Any] = (),
                  folder: str | None = None, inside: Iterable[str] = ()) -> None:
    """Refuse, before any work, an output path (by option: ``{"--json": path}``) that is one
    of the ``inputs`` or another output, a folder, or in a folder that does not exist or
    cannot be written. ``folder`` names the option whose output is a folder (created in an
    existing folder when it is not there yet) that will hold the files named ``inside``
    (none of which may be an input either)."""
    given = [Path(p) for p in inputs if p]
    seen: dict[str, Path] = {}
    for option, text in outputs.items():
        if not text:
            continue
        path = Path(text)
        for source in given:
            if _same(path, source):
                raise InputError(option, f"is the input {source}: it would be overwritten; "
                                 "write the output elsewhere", text)
        for other, earlier in seen.items():
            if _same(path, earlier):
                raise InputError(option, f"is also the output of {other}", text)
        seen[option] = path
        is_folder = option == folder
        for name in inside if is_folder else ():
            clash = next((source for source in given if _same(path / name, source)), None)
            if clash is not None:
                raise InputError(option, f"would overwrite the input {clash} with its "
                                 f"{name}; write the output elsewhere", text)
        if path.exists() and path.is_dir() != is_folder:
            raise InputError(option, "is a folder, not a file" if not is_folder
                             else "is a file, not a folder", text)
        parent = path if is_folder and path.exists() else path.parent
        if not parent.is_dir():
            raise InputError(option, f"the folder {parent} does not exist", text)
        if not os.access(parent, os.W_OK | os.X_OK):
            raise InputError(option, f"cannot write in the folder {parent}", text)


@contextlib.contextmanager
def terminate_as_interrupt():
    """SIGTERM meanwhile stops the solve as Ctrl-C does (the solve then returns the best
    answer it knows) instead of killing the process with nothing written."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupt)
    except ValueError:  # not the main thread: leave the signal alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def quiet_pipe():
    """Output piped into ``head`` and closed early is not an error (the exit code stands)."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


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
    print_table(bucket_table(result).drop(columns=["termination", "relative gap"]))
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
