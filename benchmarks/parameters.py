"""The effect of CP-SAT parameters (and of our own accelerations) on the scale families
(generators.scale_instance), one instance size, one table.

    python benchmarks/parameters.py [--size 2000x100] [--time-limit 20]
                                    [--families linear,squares,max,drain]
                                    [--settings default,workers=1,...] [--workers 2]
                                    [--seed 0] [--json OUT]

Each family's instance is ``generators.scale_instance(family, objects, containers, seed)``,
generated and loaded once, then solved once per setting in this process, under the same
time limit for the whole chain (compilation included), as ``cpsat-rebalancer solve`` does:

* ``default``: the engine as shipped (``--workers`` CP-SAT workers);
* ``workers=1``: one CP-SAT worker instead;
* ``linearization_level=2``, ``symmetry_level=0``, ``cp_model_presolve=false``: that CP-SAT
  parameter (``solver.cpsatParameters``) on top of the default;
* ``dual_reductions``: CP-SAT's dual presolve reductions on everywhere
  (``keep_all_feasible_solutions_in_presolve=false``; the engine turns them off in models
  that order interchangeable containers);
* ``accelerate=False``: our own start repair, move cuts and packing bounds off
  (``solve_model(..., accelerate=False)``), CP-SAT alone on the same model.

Per row: the final value per tuple position (our evaluator), the chain's and each
position's status, bounds, seconds, and ``vs default``: the final tuple against the default
setting's, lexicographically (an IDEAL position in leximin order). Timing lives here, never
in unit tests.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.peer import cell, values  # noqa: E402
from benchmarks.scale import machine, per_position, status_text, verdict  # noqa: E402
from cpsat_rebalancer import parse_scenario  # noqa: E402
from cpsat_rebalancer.cli.common import write_output  # noqa: E402
from cpsat_rebalancer.errors import InputError  # noqa: E402
from cpsat_rebalancer.generators import SCALE_FAMILIES, scale_instance  # noqa: E402
from cpsat_rebalancer.scenario import SolverOptions  # noqa: E402
from cpsat_rebalancer.solve.pipeline import solve_model  # noqa: E402

DEFAULT_FAMILIES = "linear,squares,max,drain"
DEFAULT_SIZE = "2000x100"
DEFAULT_LIMIT = 20.0


@dataclass(frozen=True)
class Setting:
    """One way to run the engine: CP-SAT parameters, workers, our accelerations."""

    name: str
    cpsat_parameters: dict[str, Any] = field(default_factory=dict)
    workers: int | None = None  # None: the --workers of the run
    accelerate: bool = True


SETTINGS = {s.name: s for s in (
    Setting("default"),
    Setting("workers=1", workers=1),
    Setting("linearization_level=2", {"linearization_level": 2}),
    Setting("symmetry_level=0", {"symmetry_level": 0}),
    Setting("cp_model_presolve=false", {"cp_model_presolve": False}),
    Setting("dual_reductions", {"keep_all_feasible_solutions_in_presolve": False}),
    Setting("accelerate=False", accelerate=False),
)}
COLUMNS = ("family", "setting", "status", "position status", "values", "bounds",
           "seconds", "vs default")


def run_setting(scenario: Any, setting: Setting, args: argparse.Namespace) -> dict[str, Any]:
    """One solve of the loaded instance under one setting."""
    options = SolverOptions.checked(args.time_limit, setting.workers or args.workers,
                                    args.seed, path=f"setting {setting.name}",
                                    cpsat_parameters=setting.cpsat_parameters)
    result = solve_model(scenario.problem, scenario.model, options,
                         accelerate=setting.accelerate)
    buckets = [asdict(b) for b in result.buckets]
    return {"setting": setting.name, "status": result.status,
            "position status": " / ".join(map(status_text, buckets)),
            "values": values(result.final_evaluation.positions),
            "bounds": per_position(buckets, "bound"), "seconds": result.seconds,
            "moves": int((result.final != scenario.problem.initial).sum()),
            "feasible": result.final_evaluation.feasible, "buckets": buckets,
            "evaluation": result.final_evaluation}


def run_family(family: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every setting on one family's instance; the first setting is the reference."""
    objects, containers = args.size
    scenario = parse_scenario(scale_instance(family, objects, containers, args.seed))
    rows: list[dict[str, Any]] = []
    for name in args.settings:
        try:
            row = run_setting(scenario, SETTINGS[name], args)
        except Exception as exc:  # noqa: BLE001 - a failed setting is a row, not the end
            row = {"setting": name, "error": f"{type(exc).__name__}: {exc}"}
        row["family"] = family
        if not rows:
            row["vs default"] = "(reference)"
        elif "evaluation" in row and "evaluation" in rows[0]:
            row["vs default"] = verdict(row["evaluation"], rows[0]["evaluation"])
        rows.append(row)
        print(table([row]).split("\n", 2)[2], flush=True)  # the row, without the header
    return rows


def table(rows: list[dict]) -> str:
    """The rows as a Markdown table (each failed setting on a line of its own below)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in COLUMNS) + " |" for row in rows]
    lines += [f"  {row['family']} {row['setting']}: {row['error']}" for row in rows
              if "error" in row]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default=DEFAULT_SIZE, help="OBJECTSxCONTAINERS "
                        f"(default {DEFAULT_SIZE})")
    parser.add_argument("--time-limit", type=float, default=DEFAULT_LIMIT,
                        help=f"seconds per solve, whole chain (default {DEFAULT_LIMIT:g})")
    parser.add_argument("--families", default=DEFAULT_FAMILIES,
                        help=f"comma-separated, of {','.join(SCALE_FAMILIES)} "
                        f"(default {DEFAULT_FAMILIES})")
    parser.add_argument("--settings", default=",".join(SETTINGS),
                        help="comma-separated, of " + ",".join(SETTINGS)
                        + " (all by default; the first is the reference of 'vs default')")
    parser.add_argument("--workers", type=int, default=2, help="CP-SAT workers (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write every row as JSON (atomically)")
    args = parser.parse_args(argv)
    if args.time_limit <= 0:
        raise InputError("--time-limit", "must be positive", args.time_limit)
    try:
        args.size = tuple(int(x) for x in args.size.lower().split("x"))
        if len(args.size) != 2:
            raise ValueError
    except ValueError:
        raise InputError("--size", "expected OBJECTSxCONTAINERS, e.g. 2000x100",
                         args.size) from None
    args.families = [f.strip().lower() for f in args.families.split(",") if f.strip()]
    for family in args.families:
        if family not in SCALE_FAMILIES:
            raise InputError("--families", "unknown family (expected one of "
                             + ", ".join(SCALE_FAMILIES) + ")", family)
    args.settings = [s.strip() for s in args.settings.split(",") if s.strip()]
    for name in args.settings:
        if name not in SETTINGS:
            raise InputError("--settings", "unknown setting (expected one of "
                             + ", ".join(SETTINGS) + ")", name)
    if not args.families or not args.settings:
        raise InputError("--families/--settings", "name at least one of each")
    return args


def main(argv: list[str] | None = None) -> list[dict]:
    """Run every (family, setting), print the table, and return the rows."""
    args = parse_args(argv)
    started = time.perf_counter()
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(table([]), flush=True)  # the header; each row follows when it is measured
    rows = [row for family in args.families for row in run_family(family, args)]
    objects, containers = args.size
    print(f"\n{when}; machine: {machine()}\n{objects}x{containers}, time limit "
          f"{args.time_limit:g} s per solve (whole chain), CP-SAT {args.workers} workers "
          f"unless the setting says otherwise, seed {args.seed}; total "
          f"{time.perf_counter() - started:.0f} s\n")
    print(table(rows))
    if args.json:
        payload = {"date": when, "machine": machine(), "size": f"{objects}x{containers}",
                   "timeLimit": args.time_limit, "workers": args.workers, "seed": args.seed,
                   "settings": {name: asdict(SETTINGS[name]) for name in args.settings},
                   "rows": [{k: v for k, v in row.items() if k != "evaluation"}
                            for row in rows]}
        write_output(args.json, json.dumps(payload, indent=1, default=str))
        print(f"Wrote {args.json}")
    return rows


if __name__ == "__main__":
    try:
        main()
    except InputError as exc:
        sys.exit(f"error: {exc}")
