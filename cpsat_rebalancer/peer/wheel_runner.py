"""Run Meta's ``rebalancer`` wheel on JSON requests; executed by the *peer* interpreter.

This file is a standalone script (standard library + ``rebalancer`` only): the wheel needs
Python 3.12 and is never imported by ``cpsat_rebalancer`` itself, which talks to this script
through a subprocess (see ``bridge.py``).

Request (one JSON document on stdin)::

    {"runs": [{"objectName": "task", "containerName": "host",
               "assignment": {container: [object, ...]},
               "objectDimensions": {dim: {object: value}},
               "objectDimensionDefaults": {dim: value},       # optional
               "objectDimensionVectors": {dim: {object: [value, ...]}},  # optional
               "containerDimensions": {dim: {container: value}},
               "containerDimensionDefaults": {dim: value},    # optional
               "scopes": {scope: {container: item}},
               "scopeDimensions": {scope: {dim: {item: value}}},
               "partitions": {partition: {group: [object, ...]}},
               "constraintPolicy": 1, "defaultConstraintParams": {...},
               "steps": [{"goal": spec, "weight": 1.0, "tuplePos": 2},
                         {"boundary": true},
                         {"constraint": spec, "policy": 3, "invalidCost": 100,
                          "invalidState": 10000, "tuplePosIfBroken": 1}],
               "solver": {"localSearchSolverSpec": {...}}}, ...]}

Specs must already be in the wheel's shape (enum values as integers, non-empty names).
Response (stdout): ``{"results": [{<solution key>: ...}, ...], "seconds": float}`` holding,
per run, the solution's objective/constraint summaries and final assignment; a run with
``"report": true`` (a real solve) also gets ``solveSeconds`` (wall time of ``solve()``),
``solverSummaries`` (end reason and move count per solver) and ``problemProfile``
(materialization and solve seconds, the optimal solver's gaps). Any failure prints
``{"error": "..."}`` and exits with status 1.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import Any

KEYS = (
    "initialObjective",
    "finalObjective",
    "initialGlobalObjective",
    "finalGlobalObjective",
    "initialConstraint",
    "finalConstraint",
    "assignment",
)


def solve_run(run: dict[str, Any]) -> dict[str, Any]:
    """Build one ProblemSolver from ``run``, solve it, return the summaries we read."""
    import rebalancer

    solver = rebalancer.ProblemSolver("cpsat_rebalancer_peer", "evaluation")
    solver.set_log_level("ERROR")
    if run.get("objectName"):
        solver.set_object_name(run["objectName"])
    if run.get("containerName"):
        solver.set_container_name(run["containerName"])
    solver.set_assignment(run["assignment"])
    for kind, key, add in (
            ("object", "objectDimensions", solver.add_object_dimension),
            ("object", "objectDimensionVectors", solver.add_object_dimension_vector),
            ("container", "containerDimensions", solver.add_container_dimension)):
        defaults = run.get(f"{kind}DimensionDefaults", {})
        for dim, values in run.get(key, {}).items():
            extra = {"default_value": defaults[dim]} if dim in defaults else {}
            add(dim, values, **extra)
    for scope, mapping in run.get("scopes", {}).items():
        solver.add_scope(scope, mapping)
    for scope, dims in run.get("scopeDimensions", {}).items():
        for dim, values in dims.items():
            solver.add_scope_dimension(dim, scope, values)
    for partition, groups in run.get("partitions", {}).items():
        solver.add_partition(partition, groups)
    for dim, dynamic in run.get("dynamicObjectDimensions", {}).items():
        solver.add_dynamic_object_dimension(dim, dynamic["scope"], dynamic.get("values", {}),
                                            dynamic.get("default", 0.0))
    if run.get("constraintPolicy") is not None:
        solver.set_constraint_policy(run["constraintPolicy"])
    if run.get("defaultConstraintParams"):
        solver.set_default_constraint_params(run["defaultConstraintParams"])
    for step in run.get("steps", []):
        if step.get("boundary"):
            solver.add_goal_boundary()
        elif "goal" in step:
            kwargs = {"weight": step["weight"]} if step.get("weight") is not None else {}
            if step.get("tuplePos") is not None:
                kwargs["tuple_pos"] = step["tuplePos"]
            solver.add_goal(step["goal"], **kwargs)
        else:
            names = {
                "policy": "policy",
                "invalidCost": "invalid_cost",
                "invalidState": "invalid_state",
                "tuplePosIfBroken": "tuple_pos_if_broken",
            }
            kwargs = {py: step[js] for js, py in names.items() if step.get(js) is not None}
            solver.add_constraint(step["constraint"], **kwargs)
    for spec in run.get("solvers") or [run["solver"]]:  # "solvers": a chain, in order
        solver.add_solver(spec)
    started = time.perf_counter()
    solution = solver.solve()
    seconds = time.perf_counter() - started
    result = {key: solution.get(key) for key in KEYS}
    if run.get("report"):  # a solve run: how the wheel's solver ended, and its timing
        result["solveSeconds"] = seconds
        result["solverSummaries"] = [
            {"endReason": summary.get("endReason"),
             "numMoves": (summary.get("moveStats") or {}).get("numMoves")}
            for summary in solution.get("solverSummaries") or []]
        profile = solution.get("problemProfile") or {}
        result["problemProfile"] = {
            key: profile.get(key)
            for key in ("materializationSec", "solveSec", "optimalSolverProfile")}
    return result


def main() -> int:
    """Read the request, solve every run, print the response; C++ output goes to stderr."""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # keep the wheel's prints off our JSON
    start = time.perf_counter()
    try:
        request = json.load(sys.stdin)
        results = [solve_run(run) for run in request["runs"]]
    except Exception as exc:  # noqa: BLE001 - every failure becomes an error response
        traceback.print_exc()
        json.dump({"error": f"{type(exc).__name__}: {exc}"}, out)
        out.flush()
        return 1
    json.dump({"results": results, "seconds": time.perf_counter() - start}, out)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
