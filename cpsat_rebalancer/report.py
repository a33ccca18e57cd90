"""The plan report: one self-contained HTML page (``solve --report``, ``compare --report``).

It shows what a capacity planner asks of a plan: the status and what is proven per tuple
position, the utilization of every container and scope item before and after (sortable
tables coloured from cold to hot, and figures), the moves, every goal and constraint, and
the conflict when the hard constraints cannot all hold. The comparison report adds each
heuristic beside the optimum. Style, script and figures (SVG) are inline: the page loads
nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from . import markup
from .compare import Comparison
from .evaluate import Evaluation
from .problem import Problem
from .result import GOAL_COLUMNS, SolveResult, bucket_table, utilization_table

# at most this many items get one bar each in a figure; more become a sorted profile
BARS_UP_TO = 40
# at most this many moves are listed (all of them: --moves-csv, --json)
MOVES_SHOWN = 2000

Series = Sequence[tuple[str, np.ndarray]]  # (label, assignment) to show side by side


def plan_report(result: SolveResult, title: str = "Plan") -> str:
    """The whole page for one solve."""
    problem = result.problem
    body = [f"<h1>{markup.escape(title)}</h1>", _status(result),
            "<h2>Proof per tuple position</h2>",
            '<p class="note">Each tuple position (bucket) is solved in order; OPTIMAL means '
            "proven for the evaluator's value; otherwise the bound is proven and the gap is "
            "what remains open.</p>",
            markup.frame_table(bucket_table(result), table_id="buckets")]
    body += _conflict(result.conflict)
    body += _utilization(problem, [("before", problem.initial), ("after", result.final)])
    body += _moves(problem, result.moves)
    body += _goals(result.goal_table(), result.initial_evaluation, result.final_evaluation)
    if result.approximation:
        body.append("<h2>Approximations</h2>" + markup.bullet_list(
            f"{name}: |model - exact| at most {error:.3g}"
            for name, error in result.approximation.items()))
    return markup.page(title, "".join(body))


def comparison_report(comparison: Comparison, title: str = "Comparison") -> str:
    """The whole page for ``compare``: each heuristic beside the optimum, then our plan."""
    ours = comparison.ours
    problem = comparison.instance.problem
    body = [f"<h1>{markup.escape(title)}</h1>", _status(ours),
            "<h2>Heuristics against the optimum</h2>",
            '<p class="note">Values per tuple position on Rebalancer\'s scale; positions '
            "compare lexicographically, so the first position where a solver differs from "
            "ours decides.</p>",
            markup.frame_table(comparison.bucket_table(), sortable=True, table_id="comparison"),
            markup.frame_table(comparison.summary_table(), table_id="summary"),
            "<p>Verdicts:</p>",
            markup.bullet_list([f"ours (CP-SAT): {ours.status} ({ours.termination})"]
                               + [f"{e.name}: {e.verdict}" for e in comparison.entries]),
            "<h2>Proof per tuple position (ours)</h2>",
            markup.frame_table(bucket_table(ours), table_id="buckets")]
    body += _conflict(ours.conflict)
    series = [("initial", problem.initial), ("ours", ours.final)]
    series += [(e.name, e.final) for e in comparison.entries if e.final is not None]
    body += _utilization(problem, series)
    body += _moves(problem, ours.moves)
    body += _goals(ours.goal_table(), ours.initial_evaluation, ours.final_evaluation)
    return markup.page(title, "".join(body))


def _status(result: SolveResult) -> str:
    problem = result.problem
    broken = result.final_evaluation.broken_hard()
    holds = "all hold" if not broken else "BROKEN: " + "; ".join(broken)
    return (f'<p><span class="status {markup.escape(result.status)}">'
            f"{markup.escape(result.status)} ({markup.escape(result.termination)})</span> in "
            f"{result.seconds:.2f} s: {problem.num_objects} objects, "
            f"{problem.num_containers} containers, {len(result.moves)} moves. Hard constraints: "
            f"{markup.escape(holds)}.</p>")


def _conflict(conflict: list[str]) -> list[str]:
    if not conflict:
        return []
    return ["<h2>Conflict</h2><p>These hard constraints cannot all hold (a small conflicting "
            "set):</p>", markup.bullet_list(conflict)]


def _utilization(problem: Problem, series: Series) -> list[str]:
    """Per scope: a figure per dimension with capacities, and one sortable table of every
    item, hottest first."""
    tables = [utilization_table(problem, problem.initial, assignment)
              for _, assignment in series]
    labels = [label for label, _ in series]
    parts = ["<h2>Utilization</h2>", markup.heat_legend(),
             '<p class="note">Load per item before and after, its capacity, and load / '
             "capacity; click a column header to sort. A dimension without capacities in a "
             "scope shows loads only.</p>"]
    first = tables[0]
    for scope in dict.fromkeys(first["scope"]):
        rows_of = [t[t["scope"] == scope] for t in tables]
        dimensions = list(dict.fromkeys(rows_of[0]["dimension"]))
        capacitated = [d for d in dimensions
                       if rows_of[0].loc[rows_of[0]["dimension"] == d, "capacity"].notna().any()]
        parts.append(f"<h3>{markup.escape(scope)}</h3>")
        for dimension in capacitated:
            items, ratios = _ratios(rows_of, dimension)
            named = list(zip(labels, ratios))
            figure_title = f"{dimension} utilization per {scope}"
            parts.append(markup.bars_figure(figure_title, items, named) if len(items) <= BARS_UP_TO
                         else markup.profile_figure(figure_title, named))
        parts.append('<div class="scroll">'
                     + _utilization_table(rows_of, labels, dimensions, capacitated, scope)
                     + "</div>")
    return parts


def _ratios(rows_of: list[pd.DataFrame], dimension: str) -> tuple[list[str], list[list[float]]]:
    """Items of one dimension and each series' ratio per item (the first series before)."""
    chosen = [rows[rows["dimension"] == dimension] for rows in rows_of]
    ratios = [chosen[0]["before_ratio"].tolist()]
    ratios += [rows["after_ratio"].tolist() for rows in chosen[1:]]
    return chosen[0]["item"].tolist(), ratios


def _utilization_table(rows_of: list[pd.DataFrame], labels: list[str], dimensions: list[str],
                       capacitated: list[str], scope: str) -> str:
    columns = [scope]
    per_dimension = []
    for dimension in dimensions:
        chosen = [rows[rows["dimension"] == dimension] for rows in rows_of]
        loads = [chosen[0]["before"].to_numpy()] + [c["after"].to_numpy() for c in chosen[1:]]
        if dimension in capacitated:
            capacity = chosen[0]["capacity"].to_numpy()
            ratios = [chosen[0]["before_ratio"].to_numpy()]
            ratios += [c["after_ratio"].to_numpy() for c in chosen[1:]]
            columns.append(f"{dimension} capacity")
            for label in labels:
                columns += [f"{dimension} {label}", f"{dimension} {label} %"]
        else:
            capacity, ratios = None, None
            columns += [f"{dimension} {label}" for label in labels]
        per_dimension.append((capacity, loads, ratios))
    items = rows_of[0].loc[rows_of[0]["dimension"] == dimensions[0], "item"].tolist()
    rows = []
    for i, item in enumerate(items):
        row = [markup.Cell(item)]
        for capacity, loads, ratios in per_dimension:
            if capacity is not None:
                row.append(markup.cell(float(capacity[i])))
            for k, load in enumerate(loads):
                row.append(markup.cell(float(load[i])))
                if ratios is not None:
                    row.append(markup.ratio_cell(float(ratios[k][i])))
        rows.append(row)
    # hottest first: by the last series' ratio of the first dimension with capacities
    if capacitated:
        hot = per_dimension[dimensions.index(capacitated[0])][2][-1]
        order = sorted(range(len(rows)), key=lambda i: -_finite(hot[i]))
        rows = [rows[i] for i in order]
    return markup.table(columns, rows, sortable=True, table_id=f"utilization-{scope}")


def _finite(value: float) -> float:
    if math.isnan(value):
        return -math.inf
    return value


def _moves(problem: Problem, moves: pd.DataFrame) -> list[str]:
    parts = [f"<h2>Moves ({len(moves)})</h2>"]
    if moves.empty:
        return parts + ["<p>Nothing moves.</p>"]
    shown = moves.head(MOVES_SHOWN).copy()
    indices = [problem.object_index[name] for name in shown["object"]]
    for dimension in sorted(problem.object_dims):
        if dimension != problem.count_dimension:
            column = dimension if dimension not in shown.columns else f"{dimension} (size)"
            shown[column] = problem.object_dims[dimension][indices]
    if len(moves) > MOVES_SHOWN:
        parts.append(f'<p class="note">The first {MOVES_SHOWN} are listed; all of them are in '
                     "--moves-csv and --json.</p>")
    return parts + ['<div class="scroll">'
                    + markup.frame_table(shown, sortable=True, table_id="moves") + "</div>"]


def _goals(table: pd.DataFrame, initial: Evaluation, final: Evaluation) -> list[str]:
    parts = ["<h2>Goals and constraints</h2>",
             '<p class="note">Values on Rebalancer\'s scale; constraints show their '
             "violation.</p>"]
    if table.empty:
        return parts + ["<p>None.</p>"]
    shown = table[[*GOAL_COLUMNS, "spec"]].copy()
    shown["change"] = shown["final"] - shown["initial"]
    parts.append(markup.frame_table(shown, sortable=True, table_id="goals"))
    positions = sorted(set(initial.positions) | set(final.positions))
    parts.append("<p>Objective per tuple position (weighted goals and soft constraint "
                 "terms):</p>")
    parts.append(markup.frame_table(pd.DataFrame({
        "position": positions,
        "initial": [initial.positions.get(p, 0.0) for p in positions],
        "final": [final.positions.get(p, 0.0) for p in positions]}), table_id="positions"))
    return parts
