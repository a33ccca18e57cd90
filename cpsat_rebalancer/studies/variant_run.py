"""One variant, start to finish, in whatever process runs it: build the scenario dict, parse
and solve it through the library's public path, evaluate, compare heuristics, and write its
row. Any failure becomes a row with status ERROR and the error text."""

from __future__ import annotations

import os
import time
import traceback
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..api import solve_problem
from ..errors import InputError
from ..evaluate import evaluate
from ..problem import Problem
from ..result import SolveResult
from ..scenario import SolverOptions, parse_scenario
from .hints import first_fit
from .proofs import Decision, applicable, decide, verdict
from .store import write_row
from .study import Study, parse_study
from .variants import apply

ERROR = "ERROR"
QUANTILES = (0, 25, 50, 75, 100)


@dataclass(frozen=True)
class Task:
    """What a worker needs: small and picklable (the study is reloaded from its file)."""

    study_path: str
    study: dict[str, Any]  # the study as given (workers parse it again: no shared state)
    fingerprint: str
    key: str
    params: dict[str, Any]
    out: str
    run_id: str
    search: str | None = None  # the search this probe belongs to
    group: str | None = None  # the grid point of that search
    position: int | None = None  # feasibility: this bucket's value at most at_most
    at_most: float = 0.0
    allow_code: bool = False  # the study's FILE.py:NAME generators and heuristics may run


_STUDIES: dict[str, Study] = {}  # per process: parsed studies by fingerprint
_BASES: dict[str, dict[str, Any]] = {}  # and their base scenarios, built once


def _study(task: Task) -> Study:
    study = _STUDIES.get(task.fingerprint)
    if study is None:
        study = parse_study(task.study, task.study_path, task.allow_code)
        if study.fingerprint != task.fingerprint:
            raise InputError(task.study_path, "a file the study uses changed while it ran")
        _STUDIES.clear()
        _STUDIES[task.fingerprint] = study
    return study


def _base(task: Task) -> dict[str, Any]:
    if task.fingerprint not in _BASES:
        _BASES.clear()
        _BASES[task.fingerprint] = _study(task).base_scenario()
    return _BASES[task.fingerprint]


def utilization(result: SolveResult) -> dict[str, float]:
    """Max and mean relative utilization per dimension over containers with capacity."""
    return placement_utilization(result.problem, result.final)


def placement_utilization(problem: Problem, final: np.ndarray) -> dict[str, float]:
    """:func:`utilization` of any placement (a witness's, say)."""
    scope = problem.container_scope
    row = {}
    for dim, sizes in problem.object_dims.items():
        if dim == problem.count_dimension or dim not in scope.capacities:
            continue
        caps = scope.capacity(dim)
        load = np.bincount(final, weights=sizes, minlength=problem.num_containers)
        used = caps > 0
        util = load[used] / caps[used]
        if not util.size:
            continue
        row[f"util_max.{dim}"] = float(util.max())
        row[f"util_mean.{dim}"] = float(util.mean())
        for q, value in zip(QUANTILES, np.quantile(util, [q / 100 for q in QUANTILES])):
            row[f"util_q{q}.{dim}"] = float(value)  # for the distribution plots
    return row


def result_row(result: SolveResult) -> dict[str, Any]:
    row: dict[str, Any] = {
        "status": result.status, "termination": result.termination,
        "feasible": bool(result.final_evaluation.feasible),
        "moves": int((result.final != result.problem.initial).sum()),
        "objects": result.problem.num_objects, "containers": result.problem.num_containers,
        "classes": result.classes, "solve_seconds": result.seconds,
    }
    for b in result.buckets:
        p = b.position
        row[f"value.{p}"] = b.objective
        row[f"bound.{p}"] = b.bound
        row[f"gap.{p}"] = b.gap
        row[f"bucket_status.{p}"] = b.status
    row.update(utilization(result))
    return row


def heuristic_rows(data: dict, study: Study, ours: SolveResult,
                   options: SolverOptions) -> dict[str, Any]:
    from ..compare import compare

    comparison = compare(data, study.heuristics, options=options, ours=ours,
                         allow_code=study.allow_code, folder=study.path.parent)
    row: dict[str, Any] = {}
    for entry in comparison.entries:
        prefix = f"h.{entry.name}."
        row[prefix + "feasible"] = entry.feasible
        row[prefix + "moves"] = entry.moves
        row[prefix + "seconds"] = entry.seconds
        row[prefix + "verdict"] = entry.verdict
        row[prefix + "error"] = entry.error
        if entry.contradiction:
            row[prefix + "contradiction"] = entry.contradiction
        for c in entry.buckets:
            row[prefix + f"value.{c.position}"] = c.value
            row[prefix + f"gap.{c.position}"] = c.abs_gap
    return row


def run_variant(task: Task) -> dict[str, Any]:
    """Solve one variant and write its row (also returned). Never raises for the variant's
    own failures: they become a row with status ERROR."""
    started = time.monotonic()
    row: dict[str, Any] = {"key": task.key, "study": task.fingerprint, "run_id": task.run_id,
                           "search": task.search, "group": task.group}
    row.update({f"param.{k}": v if not isinstance(v, list | dict) else str(v)
                for k, v in task.params.items()})
    try:
        study = _study(task)
        data, overrides = apply(_base(task), task.params)
        scenario = parse_scenario(data)
        options = SolverOptions.parse({**study.solver, **overrides}, "solver")
        start = None
        decision = _shortcut(study, task, data, scenario, options)
        if decision is not None and decision.verdict is not None:
            row.update(decision_row(scenario, decision))
            row["seconds"] = time.monotonic() - started
            row["worker"] = os.getpid()
            write_row(Path(task.out), row)
            return row
        if decision is not None and study.shortcuts == "only":
            row.update({"verdict": "unknown", "proof": "none", "status": "NOT_SOLVED"})
            row["seconds"] = time.monotonic() - started
            row["worker"] = os.getpid()
            write_row(Path(task.out), row)
            return row
        if decision is not None:  # undecided: a full solve from the best placement found
            row["proof"] = "solve"
            placed = decision.placement
        elif study.hint == "first-fit":
            placed = first_fit(data)
        if study.hint == "first-fit" or decision is not None:
            if placed is not None:
                start = scenario.problem.assignment_array(placed, "hint")
            row["hint"] = placed is not None
        result = solve_problem(scenario.problem, scenario.model, options, hint=start)
        if result.termination == "interrupted":  # Ctrl-C: in flight, so not stored
            raise KeyboardInterrupt
        row.update(result_row(result))
        if task.search is not None:
            row["verdict"] = verdict(result, task.position, task.at_most)
        if study.heuristics:
            row.update(heuristic_rows(data, study, result, options))
        if study.metrics is not None:
            keep = ("key", "study", "run_id", "search", "group", "param.", "status", "error",
                    "verdict", "seconds")
            row = {k: v for k, v in row.items()
                   if k.startswith(keep) or any(k.startswith(m) for m in study.metrics)}
    except Exception as exc:  # noqa: BLE001 - one failed variant never stops the study
        row["status"] = ERROR
        row["error"] = f"{type(exc).__name__}: {exc}"
        if not isinstance(exc, InputError):
            row["traceback"] = traceback.format_exc(limit=5)
        if task.search is not None:
            row["verdict"] = "unknown"
    row["seconds"] = time.monotonic() - started
    row["worker"] = os.getpid()
    write_row(Path(task.out), row)
    return row


def _shortcut(study: Study, task: Task, data: dict, scenario: Any,
              options: SolverOptions) -> Decision | None:
    """The cheaper proofs of :mod:`.proofs` for a probe of a ``containers`` search, when the
    study asks for them (``shortcuts: true``) and they are valid for the scenario."""
    if not study.shortcuts or task.search is None:
        return None
    search = next(s for s in study.searches if s.name == task.search)
    parts = search.parameter.split(".")
    if parts[0] != "containers" or not applicable(data, task.position, task.at_most):
        return None
    mapping = data.get("scopes", {}).get(parts[1], {})
    count = sum(1 for item in mapping.values() if item == parts[2])
    return decide(data, scenario, parts[1], parts[2], count, task.position or 0,
                  task.at_most, options)


def decision_row(scenario: Any, decision: Decision) -> dict[str, Any]:
    """The row of a probe decided without a full solve: its verdict, the proof, and for a
    witness the evaluator's values and utilizations."""
    row: dict[str, Any] = {"verdict": decision.verdict, "proof": decision.proof,
                           "status": "WITNESS" if decision.verdict == "feasible"
                           else "INFEASIBLE_PROVEN",
                           "objects": scenario.problem.num_objects,
                           "containers": scenario.problem.num_containers}
    if decision.sub_result is not None:
        sub = decision.sub_result
        row.update({"restricted_objects": decision.restricted,
                    "restricted_status": sub.status, "restricted_seconds": sub.seconds,
                    "restricted_classes": sub.classes})
    if decision.placement is not None and decision.verdict == "feasible":
        problem = scenario.problem
        final = problem.assignment_array(decision.placement, "witness")
        evaluation = evaluate(problem, scenario.model, final)
        row["feasible"] = bool(evaluation.feasible)
        row["moves"] = int((final != problem.initial).sum())
        for p, value in evaluation.positions.items():
            row[f"value.{p}"] = value
        row.update(placement_utilization(problem, final))
    return row


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]
