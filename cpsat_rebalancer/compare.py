"""Validate heuristics against the proven optimum (the library behind ``cpsat-rebalancer
compare``, whose command line is :mod:`cpsat_rebalancer.cli.compare`).

``compare`` solves the scenario exactly, runs each named heuristic and reads each given
assignment, evaluates every one with the same evaluator, and reports per tuple position
(bucket) the heuristic's value beside ours (the optimum, or the incumbent and the proven
bound when the time limit stopped the proof). Buckets compare lexicographically, as
Rebalancer orders its objective: a heuristic's value at a position is comparable with ours
only while every earlier position ties, so the first position where they differ decides and
later ones are shown but marked. IDEAL alone in its bucket compares leximin.

Soundness: a feasible assignment can never beat a proven optimum (beyond the model's stated
approximation error) nor a proven bound at the deciding position. When one does, that is a
bug in the solver or the evaluator; ``compare`` says so and exits with status 1.
"""

from __future__ import annotations

import io
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .api import solve_problem
from .errors import InputError
from .evaluate import Evaluation, evaluate
from .files import write_atomically
from .heuristics import (
    Heuristic,
    HeuristicOptions,
    Instance,
    as_array,
    balanced_target,
    bucket_order,
    make_heuristic,
)
from .result import INFEASIBLE, NO_SOLUTION, OPTIMAL, BucketReport, SolveResult
from .scenario import SolverOptions

TOLERANCE = 1e-9


@dataclass
class BucketComparison:
    """One tuple position: a heuristic's value beside ours."""

    position: int
    value: float  # the heuristic's, evaluator (Rebalancer's scale)
    ours: float  # our final assignment's value (the optimum when ours_status is OPTIMAL)
    ours_status: str  # OPTIMAL, FEASIBLE, NOT_SOLVED, ...
    bound: float | None  # our proven lower bound (None for leximin buckets or unsolved)
    approximation_error: float  # bound on |compiled - exact| of our model at this position
    abs_gap: float  # value - ours
    rel_gap: float | None  # abs_gap / |ours| (None when ours is 0 and the values differ)
    order: int  # -1 heuristic better, 0 tie, 1 worse (leximin where it applies)
    comparable: bool  # every earlier position ties, so this comparison is meaningful
    deciding: bool  # the first position where the two differ
    leximin: list[float] | None = None  # the heuristic's sorted vector (IDEAL alone)
    ours_leximin: list[float] | None = None


@dataclass
class Entry:
    """One heuristic run or given assignment, compared with ours."""

    name: str
    kind: str  # "heuristic" or "assignment"
    final: np.ndarray | None = field(default=None, repr=False)
    evaluation: Evaluation | None = field(default=None, repr=False)
    seconds: float | None = None
    moves: int | None = None
    feasible: bool | None = None
    broken: list[str] = field(default_factory=list)
    buckets: list[BucketComparison] = field(default_factory=list)
    deciding_position: int | None = None
    verdict: str = ""
    contradiction: str | None = None  # set when it beats a proof: a bug somewhere
    error: str | None = None
    details: dict = field(default_factory=dict)  # what the heuristic reported about itself


@dataclass
class Comparison:
    instance: Instance = field(repr=False)
    ours: SolveResult = field(repr=False)
    entries: list[Entry]

    @property
    def contradictions(self) -> list[str]:
        return [f"{e.name}: {e.contradiction}" for e in self.entries if e.contradiction]

    def bucket_table(self) -> pd.DataFrame:
        rows = []
        for b in self.ours.buckets:
            rows.append({"solver": "ours (CP-SAT)", "position": b.position,
                         "value": b.objective, "ours": None,
                         "ours bound": _bound_text(b), "abs gap": None, "rel gap": None,
                         "result": b.status})
        for e in self.entries:
            for c in e.buckets:
                rows.append({"solver": e.name, "position": c.position, "value": c.value,
                             "ours": c.ours, "ours bound": None,
                             "abs gap": c.abs_gap, "rel gap": _percent(c.rel_gap),
                             "result": _result_text(c)})
        return pd.DataFrame(rows)

    def summary_table(self) -> pd.DataFrame:
        rows = [{"solver": "ours (CP-SAT)", "feasible": _yes(self.ours.final_evaluation.feasible),
                 "broken hard constraints": _broken_text(self.ours.final_evaluation.broken_hard()),
                 "moves": len(self.ours.moves), "seconds": _seconds(self.ours.seconds),
                 "ours seconds": None}]
        for e in self.entries:
            rows.append({"solver": e.name, "feasible": _yes(e.feasible),
                         "broken hard constraints": _broken_text(e.broken),
                         "moves": e.moves, "seconds": _seconds(e.seconds),
                         "ours seconds": _seconds(self.ours.seconds)})
        return pd.DataFrame(rows)

    def to_dict(self) -> dict[str, Any]:
        problem = self.instance.problem
        ours = self.ours.to_dict()
        return {
            "ours": {key: ours[key] for key in ("status", "termination", "buckets", "seconds",
                                                 "feasible", "approximation", "assignment")},
            "ourMoves": len(self.ours.moves),
            "entries": [{
                "name": e.name, "kind": e.kind, "seconds": e.seconds, "moves": e.moves,
                "feasible": e.feasible, "brokenHardConstraints": e.broken,
                "decidingPosition": e.deciding_position, "verdict": e.verdict,
                "contradiction": e.contradiction, "error": e.error, "details": e.details,
                "positions": {str(k): v for k, v in e.evaluation.positions.items()}
                if e.evaluation else None,
                "buckets": [c.__dict__ for c in e.buckets],
                "assignment": None if e.final is None else {
                    o: problem.containers[c] for o, c in zip(problem.objects, e.final)},
            } for e in self.entries],
            "contradictions": self.contradictions,
        }


def _seconds(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.3g}")


def _yes(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "NO")


def _broken_text(broken: list[str]) -> str:
    if not broken:
        return "-"
    text = "; ".join(broken[:3])
    return text + (f" (+{len(broken) - 3} more)" if len(broken) > 3 else "")


def _percent(value: float | None) -> str | None:
    if value is None:
        return "inf"
    return f"{100 * value:+.4g}%"


def _bound_text(b: BucketReport) -> str:
    if b.leximin_levels is not None:
        return f"leximin {b.leximin_levels}/{b.leximin_items} levels"
    if b.status == OPTIMAL:
        return "= value (proven)"
    return "-" if b.bound is None else f"{b.bound:.6g}"


def _result_text(c: BucketComparison) -> str:
    word = {-1: "better", 0: "tie", 1: "worse"}[c.order]
    if c.deciding:
        return f"{word}, decides"
    if not c.comparable:
        return f"{word} (not comparable)"
    return word


# --------------------------------------------------------------------------- comparing


def compare_evaluation(ours: SolveResult, evaluation: Evaluation,
                       tolerance: float = TOLERANCE) -> list[BucketComparison]:
    """Per tuple position, ``evaluation`` beside our final evaluation."""
    mine = ours.final_evaluation
    reports = {b.position: b for b in ours.buckets}
    positions = sorted(set(mine.positions) | set(evaluation.positions) | set(reports))
    result = []
    earlier_tie = True
    for position in positions:
        value = evaluation.positions.get(position, 0.0)
        ours_value = mine.positions.get(position, 0.0)
        report = reports.get(position)
        order = bucket_order(position, evaluation, mine, tolerance)
        gap = value - ours_value
        if ours_value != 0:
            rel: float | None = gap / abs(ours_value)
        else:
            rel = 0.0 if order == 0 or gap == 0 else None
        leximin = position in mine.leximin and position in evaluation.leximin
        bound = None
        if report is not None and report.leximin_levels is None:
            bound = report.bound
        result.append(BucketComparison(
            position, value, ours_value, report.status if report else "NOT_SOLVED", bound,
            report.approximation_error if report else 0.0, gap, rel, order,
            comparable=earlier_tie, deciding=earlier_tie and order != 0,
            leximin=list(evaluation.leximin[position]) if leximin else None,
            ours_leximin=list(mine.leximin[position]) if leximin else None))
        if order != 0:
            earlier_tie = False
    return result


def judge(entry: Entry, ours: SolveResult, tolerance: float = TOLERANCE) -> None:
    """Fill in the verdict (and any contradiction with a proof) of a compared entry."""
    if entry.error:
        entry.verdict = f"failed: {entry.error}"
        return
    broken = f"INFEASIBLE (breaks {_broken_text(entry.broken)})"
    if ours.status == INFEASIBLE:
        entry.verdict = broken if not entry.feasible else "feasible"
        if entry.feasible:
            entry.contradiction = ("feasible, but our solve proved the hard constraints "
                                   "cannot all hold")
        return
    if ours.status == NO_SOLUTION:
        entry.verdict = "not comparable: our solve found no assignment in time"
        return
    deciding = next((c for c in entry.buckets if c.deciding), None)
    entry.deciding_position = None if deciding is None else deciding.position
    prefix = "" if entry.feasible else broken + "; "
    if deciding is None:
        proven = ours.status == OPTIMAL
        entry.verdict = prefix + ("optimal: ties the proven optimum at every position" if proven
                                  else "ties our incumbent at every position (ours not proven)")
        return
    c = deciding
    where = f"at position {c.position}"
    if c.leximin is not None:
        amount = f"{leximin_difference(c.leximin, c.ours_leximin)}; scalar {c.value:.6g} vs " \
                 f"{c.ours:.6g}"
    else:
        amount = f"{c.value:.6g} vs {c.ours:.6g}" + (
            f" ({_percent(c.rel_gap)})" if c.rel_gap is not None else "")
    if c.order > 0:
        entry.verdict = prefix + f"worse {where}: {amount}"
        return
    # better than ours at the deciding position
    if not entry.feasible:
        entry.verdict = prefix + f"better {where} by breaking hard constraints: {amount}"
        return
    slack = c.approximation_error + tolerance * max(1.0, abs(c.value), abs(c.ours))
    if c.leximin is not None:
        if c.ours_status == OPTIMAL:
            entry.contradiction = (f"better than the proven leximin optimum {where}: "
                                   f"{c.leximin} < {c.ours_leximin}")
        else:
            entry.verdict = f"better than our incumbent {where} (leximin; ours not proven)"
    elif c.ours_status == OPTIMAL:
        if c.value < c.ours - slack:
            entry.contradiction = (f"value {c.value!r} below the proven optimum {c.ours!r} "
                                   f"{where} (stated approximation error "
                                   f"{c.approximation_error:g})")
        else:
            entry.verdict = (f"ties the optimum {where} within our model's stated "
                             f"approximation error ({c.approximation_error:g}): {amount}")
    elif c.bound is not None and c.value < c.bound - slack:
        entry.contradiction = f"value {c.value!r} below our proven bound {c.bound!r} {where}"
    elif c.bound is not None and c.value <= c.bound + slack:
        entry.verdict = (f"better than our incumbent {where} and reaches our proven bound "
                         f"{c.bound:.6g} (ours {c.ours_status}): {amount}")
    else:
        bound = "" if c.bound is None else f", above our bound {c.bound:.6g}"
        entry.verdict = (f"better than our incumbent {where} (ours {c.ours_status}, not "
                         f"proven{bound}): {amount}")
    if entry.contradiction:
        entry.verdict = "CONTRADICTS A PROOF: " + entry.contradiction


def compare_assignment(instance: Instance, ours: SolveResult, name: str, kind: str,
                       final: np.ndarray, seconds: float | None = None,
                       details: dict | None = None) -> Entry:
    """Evaluate ``final`` and compare it with ``ours``."""
    problem, model = instance.problem, instance.model
    evaluation = evaluate(problem, model, final)
    entry = Entry(name, kind, final, evaluation, seconds,
                  int((final != problem.initial).sum()), evaluation.feasible,
                  evaluation.broken_hard(), details=details or {})
    entry.buckets = compare_evaluation(ours, evaluation)
    judge(entry, ours)
    return entry


def run_heuristic(instance: Instance, heuristic: Heuristic, ours: SolveResult) -> Entry:
    """Run one heuristic (timed), then compare its assignment with ours. Errors of the
    heuristic become the entry's ``error`` (bad input is still raised)."""
    name = getattr(heuristic, "name", type(heuristic).__name__)
    started = time.perf_counter()
    try:
        answer = heuristic.assign(instance)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - a failing heuristic is reported, not fatal
        entry = Entry(name, "heuristic", seconds=time.perf_counter() - started,
                      error=f"{type(exc).__name__}: {exc}")
        judge(entry, ours)
        return entry
    seconds = time.perf_counter() - started
    final = as_array(instance.problem, answer, what=name)
    return compare_assignment(instance, ours, name, "heuristic", final, seconds,
                              dict(getattr(heuristic, "details", None) or {}))


def compare(data: dict, heuristics: Sequence[str | Heuristic] = (),
            assignments: dict[str, Any] | None = None, options: SolverOptions | None = None,
            heuristic_options: HeuristicOptions | None = None,
            ours: SolveResult | None = None, *, allow_code: bool = False,
            folder: Path | None = None) -> Comparison:
    """Solve ``data`` (a scenario dict) exactly and compare each heuristic (a name, see
    :func:`make_heuristic` for ``allow_code`` and ``folder``, or an object) and each given
    assignment (name -> index array or ``{container: [objects]}``) with the result.
    ``ours`` reuses a solve already made."""
    instance = Instance.from_dict(data)
    built = [make_heuristic(h, heuristic_options, allow_code=allow_code, folder=folder)
             if isinstance(h, str) else h for h in heuristics]
    given = {name: as_array(instance.problem, a, what=name)
             for name, a in (assignments or {}).items()}
    if ours is None:
        ours = solve_problem(instance.problem, instance.model, options or SolverOptions())
    entries = [run_heuristic(instance, h, ours) for h in built]
    entries += [compare_assignment(instance, ours, name, "assignment", final)
                for name, final in given.items()]
    return Comparison(instance, ours, entries)


# --------------------------------------------------------------------------- plot


def plot_utilization(comparison: Comparison, path: str | None = None) -> Any:
    """Per item of the balanced scope, the relative utilization each solver leaves (bars per
    item up to 24 items; beyond, each solver's utilizations sorted, as lines), as a
    matplotlib figure, also written to ``path`` when given (whole or not at all). Drawn
    without pyplot: the caller's matplotlib backend is never switched."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise InputError("--plot", "needs matplotlib: pip install matplotlib") from None
    problem = comparison.instance.problem
    target = balanced_target(problem, comparison.instance.model)
    series = [("ours (CP-SAT)", comparison.ours.final)]
    series += [(e.name, e.final) for e in comparison.entries if e.final is not None]
    series.insert(0, ("initial", problem.initial))
    names = [target.scope.items[i] for i in target.items]
    utils = [target.relative_util(problem, final)[target.items] for _, final in series]
    wide = len(names) <= 24
    fig = Figure(figsize=(max(7.0, min(16.0, 2 + 0.3 * len(names) * len(series)))
                          if wide else 10.0, 4.5))
    ax = fig.subplots()
    colors = ["0.6"] + [f"C{k}" for k in range(len(series) - 1)]  # initial in grey
    if wide:
        width = 0.8 / len(series)
        x = np.arange(len(names))
        for k, ((label, _), util) in enumerate(zip(series, utils)):
            ax.bar(x + (k - (len(series) - 1) / 2) * width, util, width, label=label,
                   color=colors[k])
        ax.set_xticks(x, names, rotation=90 if len(names) > 12 else 0)
        ax.set_xlabel(f"{target.scope.name}")
    else:
        for k, ((label, _), util) in enumerate(zip(series, utils)):
            ax.plot(np.sort(util)[::-1], label=label, drawstyle="steps-mid", color=colors[k])
        ax.set_xlabel(f"{target.scope.name} items, sorted by utilization (each solver)")
    ax.set_ylabel(f"{target.dimension} utilization / capacity")
    ax.set_title(f"Utilization left by each solver ({target.source})")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    if path is not None:
        image = io.BytesIO()  # then written whole or not at all
        fig.savefig(image, dpi=120, format=Path(path).suffix[1:].lower() or "png")
        write_atomically(path, image.getvalue())
    return fig


# --------------------------------------------------------------------------- text


def leximin_difference(a: list[float], b: list[float] | None,
                       tolerance: float = TOLERANCE) -> str:
    """Where two descending leximin vectors first differ."""
    for rank, (x, y) in enumerate(zip(a, b or [])):
        if abs(x - y) > tolerance * max(1.0, abs(x), abs(y)):
            return f"leximin order, rank {rank + 1} of {len(a)}: {x:.6g} vs {y:.6g}"
    return "leximin order: equal"


__all__ = ["BucketComparison", "Comparison", "Entry", "compare", "compare_assignment",
           "compare_evaluation", "judge", "leximin_difference", "plot_utilization",
           "run_heuristic"]
