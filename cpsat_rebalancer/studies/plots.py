"""The standard figures of a study folder: objective and moves against each swept parameter
(one line per combination of the others), utilization distributions per variant, and for
searches the answer against each swept parameter. ``study_figures`` returns them as
matplotlib figures, ``plot_study`` writes them as PNG files. Figures are made without
pyplot: the caller's matplotlib backend (a notebook's, say) is never switched."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import InputError
from ..files import write_atomically

MAX_LINES = 12  # beyond this many combinations of the other parameters, a figure gets crowded
MAX_BOXES = 60


def _figure_type():
    """matplotlib's Figure: drawn and saved without pyplot, so no backend is chosen."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise InputError("plot", "matplotlib is needed (pip install "
                         "'cpsat-rebalancer[plot]')") from None
    return Figure


def _swept(frame: pd.DataFrame) -> list[str]:
    """Parameter columns with more than one numeric value."""
    names = []
    for column in frame.columns:
        if column.startswith("param.") and not column.startswith("param.label."):
            values = pd.to_numeric(frame[column], errors="coerce")
            if values.notna().all() and values.nunique() > 1:
                names.append(column)
    return names


def _lines(figure_type, frame: pd.DataFrame, x: str, metrics: list[str], title: str,
           ylabel: dict[str, str] | None = None):
    others = [c for c in frame.columns if c.startswith("param.") and c != x
              and frame[c].nunique(dropna=False) > 1]
    groups = list(frame.groupby(others, dropna=False)) if others else [((), frame)]
    fig = figure_type(figsize=(5.2 * len(metrics), 4))
    axes = fig.subplots(1, len(metrics), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        for label, part in groups[:MAX_LINES]:
            part = part.assign(_x=pd.to_numeric(part[x])).sort_values("_x")
            label = label if isinstance(label, tuple) else (label,)
            text = ", ".join(f"{c[6:]}={v}" for c, v in zip(others, label)) or None
            ax.plot(part["_x"], pd.to_numeric(part[metric], errors="coerce"), marker="o",
                    label=text)
        ax.set_xlabel(x[6:])
        ax.set_ylabel((ylabel or {}).get(metric, metric))
        ax.grid(alpha=0.3)
        if others and len(groups) > 1:
            ax.legend(fontsize=7)
    fig.suptitle(title)
    return fig


def plot_study(folder: str | Path) -> list[Path]:
    """Draw the figures of a study folder written by ``study run`` into it as PNG files
    (each written whole or not at all); returns the files."""
    written = []
    for name, fig in study_figures(folder).items():
        fig.tight_layout()
        image = io.BytesIO()
        fig.savefig(image, dpi=110, format="png")
        write_atomically(Path(folder) / name, image.getvalue())
        written.append(Path(folder) / name)
    return written


def study_figures(folder: str | Path) -> dict[str, Any]:
    """The figures of a study folder written by ``study run``, as matplotlib figures by
    their file name (``sweep_*.png``, ``utilization_*.png``, ``answers_*.png``)."""
    folder = Path(folder)
    table = folder / "results.parquet"
    if not table.exists():
        raise InputError(str(folder), "no results.parquet here (run the study first)")
    figure_type = _figure_type()
    frame = pd.read_parquet(table)
    name = folder.name
    study_file = folder / "study.json"
    if study_file.exists():
        name = json.loads(study_file.read_text()).get("study", name)
    answers = folder / "answers.parquet"
    answer_table = pd.read_parquet(answers) if answers.exists() else None
    figures: dict[str, Any] = {}
    # rows with an assignment: a solve's, or a witness placement (see .proofs)
    ok = (frame[frame["status"].isin(["OPTIMAL", "FEASIBLE", "WITNESS"])] if "status" in frame
          else frame)
    values = sorted(c for c in ok.columns if c.startswith("value."))
    record = json.loads(study_file.read_text()) if study_file.exists() else {}
    swept = _swept(ok) if not ok.empty else []
    searched = {f"param.{p}" for p in record.get("searched", [])}
    if searched:  # a search's probes line up along its parameter only
        swept = [x for x in swept if x in searched]
    for x in swept:
        safe = x[6:].replace(".", "_")
        figures[f"sweep_{safe}.png"] = _lines(
            figure_type, ok, x, [*values, "moves"],
            f"{name}: objective and moves against {x[6:]}")
    dims = sorted({c.split(".", 1)[1] for c in ok.columns if c.startswith("util_q0.")})
    if record.get("plot_dimensions"):
        dims = [d for d in dims if d in record["plot_dimensions"]]
    boxes = ok
    if answer_table is not None and "answer_key" in answer_table:  # the answers' variants
        boxes = ok[ok["key"].isin(set(answer_table["answer_key"].dropna()))]
    for dim in dims:
        part = boxes.head(MAX_BOXES)
        stats = []
        for _, row in part.iterrows():
            q = [row[f"util_q{k}.{dim}"] for k in (0, 25, 50, 75, 100)]
            label = ", ".join(f"{c[6:]}={row[c]}" for c in part.columns
                              if c.startswith("param.") and part[c].nunique() > 1)
            stats.append({"whislo": q[0], "q1": q[1], "med": q[2], "q3": q[3], "whishi": q[4],
                          "label": label or row["key"][:6], "fliers": []})
        if not stats:
            continue
        fig = figure_type(figsize=(max(6, 0.35 * len(stats) + 2), 4.5))
        ax = fig.subplots()
        ax.bxp(stats, showfliers=False)
        ax.set_ylabel(f"relative utilization of {dim}")
        ax.tick_params(axis="x", labelrotation=90, labelsize=6)
        ax.grid(alpha=0.3, axis="y")
        ax.set_title(f"{name}: {dim} utilization per variant (min, quartiles, max)")
        figures[f"utilization_{dim}.png"] = fig
    if answer_table is not None:
        table = answer_table
        for x in _swept(table):
            fig = figure_type(figsize=(6, 4))
            ax = fig.subplots()
            for search, part in table.groupby("search"):
                part = part.assign(_x=pd.to_numeric(part[x])).sort_values("_x")
                ax.plot(part["_x"], part["answer"], marker="o", label=search)
                inexact = part[~part["exact"].astype(bool)]
                ax.scatter(inexact["_x"], inexact["answer"], marker="x", color="black",
                           zorder=3)
                if "proven_infeasible" in inexact:  # the bracket: proven too few .. answer
                    low = pd.to_numeric(inexact["proven_infeasible"], errors="coerce") + 1
                    ax.vlines(inexact["_x"], low, inexact["answer"], color="black",
                              linewidth=1, zorder=3)
            ax.set_xlabel(x[6:])
            ax.set_ylabel("answer (x, bar: not proven exact; the bar\nreaches the smallest "
                          "count not proven too few)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
            ax.set_title(f"{name}: search answers against {x[6:]}")
            figures[f"answers_{x[6:].replace('.', '_')}.png"] = fig
    return figures
