"""``export --to rebalancer-python``: a standalone script that builds a scenario with Meta's
Rebalancer wheel and solves it, so anyone can reproduce a case in Rebalancer itself.

Every piece of the scenario (its name and description, the source path, object, container
and dimension names) enters the script as a Python literal (``repr``, through
:mod:`pprint`), never spliced into code, a comment or the docstring: whatever a name holds,
the script parses and runs only the calls below.

The script makes exactly the binding calls the peer runner (``wheel_runner.py``) makes for
:func:`.solve_with_wheel` — the same request drives both — written out one call per line
with the data inline, so it can be read and edited. It needs only Python 3.12 and
``rebalancer`` (1.0.4), not this package.
"""

from __future__ import annotations

import pprint
from typing import Any

from ..enums import ENUMS
from .bridge import normalise_scenario, scenario_run
from .solve import scenario_solver_spec

POLICY_NAMES = {number: name for name, number in ENUMS["ConstraintPolicy"].items()}
WIDTH = 96

SCRIPT_HEAD = '''#!/usr/bin/env python3
"""Builds a scenario with Meta's Rebalancer and solves it: written by `cpsat-rebalancer
export`, which scenario and which solver are in ABOUT below. Needs Python 3.12 and the
wheel: python3.12 -m pip install rebalancer==1.0.4

    python3.12 THIS_SCRIPT [SOLUTION.json]

Prints the objective per tuple position before and after, and the moves; with a path, also
writes Rebalancer's whole solution there as JSON. Enum fields are Rebalancer's integers.
"""

import json
import sys

import rebalancer

'''

ABOUT_LINE = '''print(f"{ABOUT['scenario']} (from {ABOUT['source']}), solved by Rebalancer's "
      f"{ABOUT['solver']}")

'''

SCRIPT_TAIL = '''
solution = solver.solve()


def position_values(summary):
    return [goal["value"] for goal in (summary or {}).get("goals", [])]


before = position_values(solution.get("initialGlobalObjective"))
after = position_values(solution.get("finalGlobalObjective"))
print("Objective per tuple position (initial -> final):")
for position, (start, end) in enumerate(zip(before, after)):
    print(f"  {position}: {start!r} -> {end!r}")
initial = {obj: container for container, objs in assignment.items() for obj in objs}
final = solution.get("assignment") or {}
moves = [(obj, initial[obj], final[obj]) for obj in initial if final.get(obj, initial[obj])
         != initial[obj]]
print(f"Moves: {len(moves)}")
for obj, source, target in moves[:50]:
    print(f"  {obj}: {source} -> {target}")
if len(moves) > 50:
    print(f"  ... and {len(moves) - 50} more")
if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as stream:
        json.dump(solution, stream, indent=1, default=str)
    print(f"Wrote {sys.argv[1]}")
'''


def _literal(value: Any, indent: int = 4) -> str:
    """A Python literal for JSON-like data, continuation lines indented."""
    text = pprint.pformat(value, width=WIDTH - indent, sort_dicts=False)
    return text.replace("\n", "\n" + " " * indent)


def _call(method: str, *args: Any, comment: str = "", **kwargs: Any) -> str:
    """``solver.method(arg, ..., key=value)``, on one line when short, else one per line."""
    parts = [_literal(a) for a in args] + [f"{k}={_literal(v)}" for k, v in kwargs.items()]
    suffix = f"  # {comment}" if comment else ""
    line = f"solver.{method}({', '.join(parts)}){suffix}"
    if len(line) <= WIDTH and "\n" not in line:
        return line
    body = "".join(f"    {part},\n" for part in parts)
    return f"solver.{method}({suffix}\n{body})"


def script_lines(run: dict) -> list[str]:
    """The binding calls of ``wheel_runner.solve_run`` for ``run``, in the same order."""
    lines = ['solver = rebalancer.ProblemSolver("cpsat_rebalancer_export", "scenario")',
             'solver.set_log_level("ERROR")']
    if run.get("objectName"):
        lines.append(_call("set_object_name", run["objectName"]))
    if run.get("containerName"):
        lines.append(_call("set_container_name", run["containerName"]))
    lines.append(f"assignment = {_literal(run['assignment'], 0)}")
    lines.append("solver.set_assignment(assignment)")
    for kind, key, method in (
            ("object", "objectDimensions", "add_object_dimension"),
            ("object", "objectDimensionVectors", "add_object_dimension_vector"),
            ("container", "containerDimensions", "add_container_dimension")):
        defaults = run.get(f"{kind}DimensionDefaults", {})
        for dim, values in run.get(key, {}).items():
            extra = {"default_value": defaults[dim]} if dim in defaults else {}
            lines.append(_call(method, dim, values, **extra))
    for scope, mapping in run.get("scopes", {}).items():
        lines.append(_call("add_scope", scope, mapping))
    for scope, dims in run.get("scopeDimensions", {}).items():
        for dim, values in dims.items():
            lines.append(_call("add_scope_dimension", dim, scope, values))
    for partition, groups in run.get("partitions", {}).items():
        lines.append(_call("add_partition", partition, groups))
    for dim, dynamic in run.get("dynamicObjectDimensions", {}).items():
        lines.append(_call("add_dynamic_object_dimension", dim, dynamic["scope"],
                           dynamic.get("values", {}), dynamic.get("default", 0.0)))
    if run.get("constraintPolicy") is not None:
        policy = run["constraintPolicy"]
        lines.append(_call("set_constraint_policy", policy,
                           comment=POLICY_NAMES.get(policy, "")))
    if run.get("defaultConstraintParams"):
        lines.append(_call("set_default_constraint_params", run["defaultConstraintParams"]))
    for step in run.get("steps", []):
        if step.get("boundary"):
            lines.append("solver.add_goal_boundary()")
        elif "goal" in step:
            kwargs = {"weight": step["weight"]} if step.get("weight") is not None else {}
            if step.get("tuplePos") is not None:
                kwargs["tuple_pos"] = step["tuplePos"]
            lines.append(_call("add_goal", step["goal"], **kwargs))
        else:
            names = {"policy": "policy", "invalidCost": "invalid_cost",
                     "invalidState": "invalid_state", "tuplePosIfBroken": "tuple_pos_if_broken"}
            kwargs = {py: step[js] for js, py in names.items() if step.get(js) is not None}
            comment = POLICY_NAMES.get(kwargs.get("policy"), "")
            lines.append(_call("add_constraint", step["constraint"], comment=comment, **kwargs))
    lines.append(_call("add_solver", run["solver"]))
    return lines


def export_rebalancer_python(scenario: dict, *, solver: str = "local-search",
                             time_limit: float | None = None,
                             move_types: list[str] | None = None, seed: int = 0,
                             source: str = "a scenario", script: str = "script.py") -> str:
    """The text of a runnable Python script that builds ``scenario`` (our scenario dict) with
    the ``rebalancer`` wheel and solves it with ``solver`` (``local-search`` or
    ``optimal-highs``, see :func:`.solver_spec`)."""
    sc = normalise_scenario(scenario)
    spec = scenario_solver_spec(scenario, solver, time_limit, move_types, seed)
    run = scenario_run(sc, spec, tagged=False)
    seconds = next(iter(spec.values())).get("solveTime")
    limit = "no time limit" if seconds is None else f"a {seconds} s limit"
    solver_text = {"local-search": "local search", "optimal-highs": "HiGHS optimal "
                   "solver"}[solver] + f" ({limit})"
    about = {"scenario": str(scenario.get("name") or "scenario"),
             "description": str(scenario.get("description") or ""),
             "source": str(source), "script": str(script), "solver": solver_text}
    head = SCRIPT_HEAD + f"ABOUT = {_literal(about, 0)}\n" + ABOUT_LINE
    return head + "\n".join(script_lines(run)) + "\n" + SCRIPT_TAIL
