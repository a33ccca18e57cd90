"""HTML pieces for reports and notebooks: escaping, tables (sortable, with a colour scale for
ratios), inline SVG figures, and the page shell with its CSS and script inline, so a report
is one file that needs no network.

Every text from the data (object, container, goal names) goes through :func:`escape`; the
only raw HTML is what this module writes itself.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd


def escape(value: Any) -> str:
    """Text for an element's content or a quoted attribute (``<``, ``&`` and quotes too)."""
    return html.escape(str(value), quote=True)


def number_text(value: Any) -> str:
    """A number as a table shows it (six significant digits), ``-`` for none."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.6g}"
    return str(value)


def percent_text(ratio: float) -> str:
    if ratio is None or math.isnan(ratio):
        return "-"
    if math.isinf(ratio):
        return "inf"
    return f"{100 * ratio:.1f}%"


OVER_CAPACITY = "#7f1d1d"  # the colour of a ratio above 1 (white text on it)


def heat_colour(ratio: float) -> str:
    """Background for a utilization ratio: blue when cold (0), white at half, red when full
    (1), dark red above capacity; none when there is no ratio."""
    if ratio is None or math.isnan(ratio):
        return ""
    if ratio > 1.0 + 1e-9:
        return OVER_CAPACITY
    cold, middle, hot = (59, 130, 246), (255, 255, 255), (220, 38, 38)
    t = max(0.0, ratio)
    start, end, share = (cold, middle, t / 0.5) if t <= 0.5 else (middle, hot, (t - 0.5) / 0.5)
    red, green, blue = (round(a + (b - a) * share) for a, b in zip(start, end))
    return f"#{red:02x}{green:02x}{blue:02x}"


class Cell:
    """One table cell: its text, the value it sorts by, and an optional background."""

    __slots__ = ("text", "sort", "background")

    def __init__(self, text: str, sort: Any = None, background: str = ""):
        self.text = text
        self.sort = sort
        self.background = background

    def render(self) -> str:
        attributes = ""
        if self.sort is not None:
            attributes += f' data-sort="{escape(_sort_key(self.sort))}"'
        if self.background:
            ink = "#fff" if self.background == OVER_CAPACITY else "#000"
            attributes += f' style="background:{self.background};color:{ink}"'
        return f"<td{attributes}>{escape(self.text)}</td>"


def _sort_key(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return ""
    if isinstance(value, float) and math.isinf(value):
        return "1e308" if value > 0 else "-1e308"
    return str(value)


def cell(value: Any) -> Cell:
    """A plain cell for a value: numbers sort as numbers, none (shown ``-``) last."""
    if value is None:
        return Cell("-", math.nan)
    if isinstance(value, bool):
        return Cell(str(value))
    if isinstance(value, int | float):
        return Cell(number_text(value), float(value))
    return Cell(str(value))


def ratio_cell(ratio: float) -> Cell:
    return Cell(percent_text(ratio), ratio, heat_colour(ratio))


def table(columns: Sequence[str], rows: Iterable[Sequence[Cell]], *, sortable: bool = False,
          table_id: str = "") -> str:
    """A table; ``sortable`` makes each header sort the rows when clicked (the page's
    script)."""
    attributes = ' class="sortable"' if sortable else ""
    if table_id:
        attributes += f' id="{escape(table_id)}"'
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(c.render() for c in row) + "</tr>" for row in rows)
    return f"<table{attributes}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def frame_table(frame: pd.DataFrame, *, sortable: bool = False, table_id: str = "") -> str:
    """A DataFrame as a table (no index), every value escaped."""
    rows = ([cell(_plain(v)) for v in record] for record in frame.itertuples(index=False))
    return table([str(c) for c in frame.columns], rows, sortable=sortable, table_id=table_id)


def _plain(value: Any) -> Any:
    """numpy scalars and pandas' missing values as Python values."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    if hasattr(value, "item"):
        return value.item()
    return value


def bullet_list(lines: Iterable[str]) -> str:
    return "<ul>" + "".join(f"<li>{escape(line)}</li>" for line in lines) + "</ul>"


# --------------------------------------------------------------------------- figures

_FIGURE_HEIGHT = 190
_BEFORE, _AFTER = "#9ca3af", "#2563eb"
_SERIES = ["#9ca3af", "#2563eb", "#ea580c", "#16a34a", "#9333ea", "#0891b2", "#be123c"]


def bars_figure(title: str, labels: Sequence[str], series: Sequence[tuple[str, Sequence[float]]],
                ) -> str:
    """Grouped vertical bars of ratios per item (one bar per series), with the capacity line
    at 100%: for a few dozen items."""
    width = max(360, 60 + len(labels) * (6 + 9 * len(series)))
    top = _top([v for _, values in series for v in values])
    plot_height = _FIGURE_HEIGHT - 70
    group = (width - 60) / max(1, len(labels))
    bar = min(18.0, (group - 6) / max(1, len(series)))
    shapes = [_axes(width, top, plot_height)]
    for k, (name, values) in enumerate(series):
        colour = _colour(k, len(series))
        for i, (label, value) in enumerate(zip(labels, values)):
            if not math.isfinite(value):
                continue
            height = plot_height * value / top
            x = 50 + i * group + (group - bar * len(series)) / 2 + k * bar
            shapes.append(
                f'<rect x="{x:.1f}" y="{20 + plot_height - height:.1f}" width="{bar:.1f}" '
                f'height="{height:.1f}" fill="{colour}"><title>{escape(label)} {escape(name)}: '
                f"{percent_text(value)}</title></rect>")
    for i, label in enumerate(labels):
        x = 50 + (i + 0.5) * group
        shapes.append(f'<text x="{x:.1f}" y="{36 + plot_height}" font-size="10" '
                      f'text-anchor="end" transform="rotate(-40 {x:.1f} {36 + plot_height})">'
                      f"{escape(_short(label))}</text>")
    return _svg(title, width, shapes, series)


def profile_figure(title: str, series: Sequence[tuple[str, Sequence[float]]]) -> str:
    """Each series' ratios sorted from the hottest item down, as steps: for many items."""
    width = 640
    top = _top([v for _, values in series for v in values])
    plot_height = _FIGURE_HEIGHT - 70
    shapes = [_axes(width, top, plot_height)]
    for k, (name, values) in enumerate(series):
        finite = sorted((v for v in values if math.isfinite(v)), reverse=True)
        if not finite:
            continue
        step = (width - 60) / len(finite)
        points = []
        for i, value in enumerate(finite):
            y = 20 + plot_height - plot_height * value / top
            points += [f"{50 + i * step:.1f},{y:.1f}", f"{50 + (i + 1) * step:.1f},{y:.1f}"]
        shapes.append(f'<polyline fill="none" stroke="{_colour(k, len(series))}" '
                      f'stroke-width="2" points="{" ".join(points)}"><title>{escape(name)}'
                      "</title></polyline>")
    shapes.append(f'<text x="{width / 2:.0f}" y="{40 + plot_height}" font-size="11" '
                  'text-anchor="middle">items, hottest first (each series sorted)</text>')
    return _svg(title, width, shapes, series)


def _colour(index: int, count: int) -> str:
    if count == 2:
        return (_BEFORE, _AFTER)[index]
    return _SERIES[index % len(_SERIES)]


def _top(values: Sequence[float]) -> float:
    """The axis top: at least 100%, else the largest finite value rounded up to a tenth."""
    finite = [v for v in values if math.isfinite(v)]
    return max(1.0, math.ceil(10 * max(finite, default=0.0)) / 10)


def _axes(width: float, top: float, plot_height: float) -> str:
    full = 20 + plot_height - plot_height / top
    return (f'<line x1="50" y1="{20 + plot_height}" x2="{width - 10}" y2="{20 + plot_height}" '
            'stroke="#444"/><line x1="50" y1="20" x2="50" '
            f'y2="{20 + plot_height}" stroke="#444"/>'
            f'<line x1="50" y1="{full:.1f}" x2="{width - 10}" y2="{full:.1f}" stroke="#dc2626" '
            'stroke-dasharray="4 3"><title>capacity (100%)</title></line>'
            f'<text x="46" y="{full + 4:.1f}" font-size="10" text-anchor="end">100%</text>'
            + (f'<text x="46" y="24" font-size="10" text-anchor="end">{percent_text(top)}</text>'
               if top > 1.05 else "")
            + f'<text x="46" y="{24 + plot_height:.1f}" font-size="10" text-anchor="end">0</text>')


def _svg(title: str, width: float, shapes: list[str],
         series: Sequence[tuple[str, Sequence[float]]]) -> str:
    legend = "".join(
        f'<rect x="{60 + 130 * k}" y="4" width="10" height="10" fill="{_colour(k, len(series))}"/>'
        f'<text x="{74 + 130 * k}" y="13" font-size="11">{escape(_short(name, 18))}</text>'
        for k, (name, _) in enumerate(series))
    return (f'<figure><svg class="figure" xmlns="http://www.w3.org/2000/svg" '
            f'width="{width:.0f}" height="{_FIGURE_HEIGHT}" role="img" '
            f'aria-label="{escape(title)}"><title>{escape(title)}</title>{legend}'
            + "".join(shapes) + f"</svg><figcaption>{escape(title)}</figcaption></figure>")


def _short(text: str, length: int = 14) -> str:
    return text if len(text) <= length else text[:length - 1] + "…"


# --------------------------------------------------------------------------- the page

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#111;max-width:1200px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0;font-size:13px}
th,td{border:1px solid #ddd;padding:2px 8px;text-align:right;white-space:nowrap}
td:first-child,th:first-child,td:not([data-sort]){text-align:left}
thead th{background:#f3f4f6;position:sticky;top:0}
table.sortable th{cursor:pointer}
table.sortable th[aria-sort=ascending]::after{content:" \\25B2"}
table.sortable th[aria-sort=descending]::after{content:" \\25BC"}
.scroll{max-height:480px;overflow:auto;display:inline-block;border:1px solid #eee}
.status{font-size:1.1em;padding:.4em .8em;border-radius:4px;display:inline-block}
.OPTIMAL{background:#dcfce7}.FEASIBLE{background:#fef9c3}
.INFEASIBLE,.NO_SOLUTION{background:#fee2e2}
.legend span{display:inline-block;padding:0 .6em;margin-right:2px}
figure{display:inline-block;margin:.5em 1em .5em 0}figcaption{font-size:12px;color:#555}
.note{color:#555;font-size:12px}
"""

# Clicking a header sorts its table's rows by the cells' data-sort values (as numbers when
# every one is a number, else as text; empty last), ascending first, then descending.
_SCRIPT = """
document.querySelectorAll('table.sortable th').forEach(function(th){
  th.addEventListener('click',function(){
    var table=th.closest('table'),body=table.tBodies[0],column=th.cellIndex;
    var descending=th.getAttribute('aria-sort')==='ascending';
    table.querySelectorAll('th').forEach(function(h){h.removeAttribute('aria-sort');});
    th.setAttribute('aria-sort',descending?'descending':'ascending');
    var rows=Array.prototype.slice.call(body.rows);
    var key=function(row){var c=row.cells[column];
      return c.hasAttribute('data-sort')?c.getAttribute('data-sort'):c.textContent;};
    var numeric=rows.every(function(r){var k=key(r);return k===''||!isNaN(Number(k));});
    rows.sort(function(a,b){
      var x=key(a),y=key(b);
      if(x===''||y==='')return (x==='')-(y==='');
      var order=numeric?Number(x)-Number(y):x.localeCompare(y);
      return descending?-order:order;});
    rows.forEach(function(r){body.appendChild(r);});
  });
});
"""


def page(title: str, body: str) -> str:
    """A whole HTML document: ``body`` (markup already escaped) with the style and the
    sorting script inline."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
            f"{body}<script>{_SCRIPT}</script></body></html>\n")


def heat_legend() -> str:
    stops = [0.0, 0.25, 0.5, 0.75, 1.0, 1.2]
    spans = "".join(f'<span style="background:{heat_colour(r)};'
                    f'color:{"#fff" if r > 1 else "#000"}">'
                    f'{"&gt;100%" if r > 1 else percent_text(r)}</span>' for r in stops)
    return f'<p class="legend">Utilization colours (cold to hot): {spans}</p>'
