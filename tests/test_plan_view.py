"""The plan view: ``SolveResult.utilization()`` against sums computed here, the notebook view
and the HTML report (every name from the data escaped), and the CLI's ``--report``,
``--moves-csv`` and ``--utilization-csv``."""

from __future__ import annotations

import json
import math
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cpsat_rebalancer.api import solve_scenario
from cpsat_rebalancer.cli import main
from cpsat_rebalancer.compare import compare
from cpsat_rebalancer.report import comparison_report, plan_report
from cpsat_rebalancer.result import utilization_table
from cpsat_rebalancer.scenario import SolverOptions, parse_scenario

# names a browser would take for markup if they were not escaped
EVIL_OBJECT = "<script>alert('t0')</script>"
EVIL_HOST = 'h&"0"<b>'
EVIL_RACK = "r<'1'>"


def tricky_scenario() -> dict:
    """Four hosts in two racks, one host overfull; names full of markup characters."""
    tasks = [EVIL_OBJECT, "t1", "t2", "t3", "t4", "t5"]
    return {
        "objectName": "task", "containerName": "host",
        "assignment": {EVIL_HOST: tasks[:4], "h1": tasks[4:], "h2": [], "h3": []},
        "objectDimensions": {"cpu": dict(zip(tasks, [4, 3, 2, 2, 1, 1])),
                             "mem": dict(zip(tasks, [10, 10, 20, 5, 5, 5]))},
        "containerDimensions": {"cpu": {EVIL_HOST: 8, "h1": 8, "h2": 4, "h3": 6},
                                "mem": {EVIL_HOST: 40, "h1": 40, "h2": 40, "h3": 40}},
        "scopes": {"rack": {EVIL_HOST: EVIL_RACK, "h1": EVIL_RACK, "h2": "r2", "h3": "r2"}},
        "scopeDimensions": {"rack": {"cpu": {EVIL_RACK: 16, "r2": 10}}},
        "goals": [{"spec": {"balanceSpec": {"name": "balance <cpu>", "dimension": "cpu"}}},
                  {"boundary": True},
                  {"spec": {"minimizeMovementSpec": {"name": "few & moves"}}}],
        "constraints": [{"spec": {"capacitySpec": {"name": "cpu_capacity",
                                                   "dimension": "cpu"}}, "policy": "HARD"},
                        # so the task named like markup is the one that must move
                        {"spec": {"avoidMovingSpec": {"name": "pinned",
                                                      "objects": ["t1", "t2", "t3"]}}}],
    }


def solved(data: dict):
    scenario = parse_scenario(data)
    return solve_scenario(scenario, SolverOptions(time_limit=30))


def expected_load(data: dict, assignment: dict[str, list[str]], dim: str,
                  members: list[str]) -> float:
    sizes = data["objectDimensions"][dim] if dim != "task_count" else None
    return float(sum(1 if sizes is None else sizes.get(obj, 0)
                     for host in members for obj in assignment.get(host, [])))


def test_utilization_matches_sums_over_the_assignments() -> None:
    data = tricky_scenario()
    result = solved(data)
    table = result.utilization()
    final = result.assignment
    racks = data["scopes"]["rack"]
    items = {"host": {h: [h] for h in data["assignment"]},
             "rack": {r: [h for h, item in racks.items() if item == r]
                      for r in dict.fromkeys(racks.values())}}
    capacities = {"host": data["containerDimensions"], "rack": data["scopeDimensions"]["rack"]}
    assert list(table["scope"].unique()) == ["host", "rack"]  # the container scope first
    assert len(table) == sum(len(v) for v in items.values()) * 3  # cpu, mem, task_count
    for row in table.itertuples(index=False):
        members = items[row.scope][row.item]
        before = expected_load(data, data["assignment"], row.dimension, members)
        after = expected_load(data, final, row.dimension, members)
        assert row.before == pytest.approx(before) and row.after == pytest.approx(after)
        capacity = capacities[row.scope].get(row.dimension, {}).get(row.item)
        if capacity is None:  # never set: no capacity and no ratio
            assert math.isnan(row.capacity) and math.isnan(row.after_ratio)
        else:
            assert row.capacity == capacity
            assert row.before_ratio == pytest.approx(before / capacity)
            assert row.after_ratio == pytest.approx(after / capacity)
    # the initial assignment overfills the first host; the plan does not
    hot = table[(table["item"] == EVIL_HOST) & (table["dimension"] == "cpu")].iloc[0]
    assert hot.before_ratio > 1 >= hot.after_ratio


def test_utilization_of_an_empty_item_with_zero_capacity_is_zero_not_nan() -> None:
    data = tricky_scenario()
    data["containerDimensions"]["cpu"]["h2"] = 0
    result = solved(data)
    row = result.utilization().query("item == 'h2' and dimension == 'cpu'").iloc[0]
    assert row.after == 0 and row.after_ratio == 0


class Markup(HTMLParser):
    """The tags and the text of a page, as a browser's parser reads them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.text: list[str] = []
        self.attributes: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [value or "" for _, value in attrs]

    def handle_data(self, data):
        self.text.append(data)


class Tables(HTMLParser):
    """Every table of a page as a DataFrame of its cells' texts, by the table's id."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, list[list[str]]]] = []
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.found.append((dict(attrs).get("id", ""), []))
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.found[-1][1].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def tables_of(page: str) -> list[tuple[str, pd.DataFrame]]:
    reader = Tables()
    reader.feed(page)
    return [(name, pd.DataFrame(rows[1:], columns=rows[0])) for name, rows in reader.found]


def parsed(page: str) -> Markup:
    reader = Markup()
    reader.feed(page)
    reader.close()
    return reader


def test_report_escapes_every_name_and_holds_every_section() -> None:
    data = tricky_scenario()
    result = solved(data)
    page = plan_report(result, title="Plan <for> & 'you'")
    reader = parsed(page)
    text = "\n".join(reader.text)
    # the names come back as text, never as markup: the one script is the page's own
    assert reader.tags.count("script") == 1 and "b" not in reader.tags
    for name in (EVIL_OBJECT, EVIL_HOST, EVIL_RACK, "balance <cpu>", "few & moves",
                 "Plan <for> & 'you'"):
        assert name in text
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page and "src=" not in page  # loads nothing
    for table_id in ("buckets", "utilization-host", "utilization-rack", "moves", "goals"):
        assert f'id="{table_id}"' in page
    # one figure per scope and dimension with capacities: host cpu, host mem, rack cpu
    assert page.count('<svg class="figure"') == 3
    assert len(result.moves) > 0 and f"Moves ({len(result.moves)})" in text


def test_report_of_an_infeasible_plan_shows_the_conflict() -> None:
    data = tricky_scenario()
    data["containerDimensions"]["cpu"] = dict.fromkeys(data["assignment"], 1)
    result = solved(data)
    assert result.status == "INFEASIBLE" and result.conflict
    text = "\n".join(parsed(plan_report(result)).text)
    assert "Conflict" in text and "cannot all hold" in text
    assert all(line in text for line in result.conflict)


def test_notebook_view_is_compact_and_escaped() -> None:
    result = solved(tricky_scenario())
    view = result._repr_html_()
    reader = parsed(view)
    text = "\n".join(reader.text)
    assert "script" not in reader.tags
    assert result.status in text and "balance <cpu>" in text
    assert EVIL_OBJECT in set(result.moves["object"]) and EVIL_OBJECT in text
    assert reader.tags.count("table") == 3  # the proof, the goals, the moves


def test_notebook_view_lists_only_the_first_moves() -> None:
    tasks = [f"t{k}" for k in range(30)]
    data = {"assignment": {"a": tasks, "b": []},
            "objectDimensions": {"cpu": dict.fromkeys(tasks, 1)},
            "containerDimensions": {"cpu": {"a": 30, "b": 30}},
            "goals": [{"spec": {"balanceSpec": {"dimension": "cpu"}}}]}
    result = solved(data)
    assert len(result.moves) == 15
    _, rows = tables_of(result._repr_html_())[2]
    assert list(rows["object"]) == list(result.moves["object"].head(10))


def test_comparison_report_puts_each_heuristic_beside_the_optimum() -> None:
    data = tricky_scenario()
    comparison = compare(data, ["first-fit-decreasing", "greedy-balance"],
                         options=SolverOptions(time_limit=30))
    page = comparison_report(comparison)
    text = "\n".join(parsed(page).text)
    for entry in comparison.entries:
        assert entry.name in text and entry.verdict in text
    # the heuristic's column holds its own utilization, computed independently
    greedy = next(e for e in comparison.entries if e.name == "greedy-balance")
    table = utilization_table(comparison.instance.problem, comparison.instance.problem.initial,
                              greedy.final)
    frame = dict(tables_of(page))["utilization-host"]
    for row in table[(table.scope == "host") & (table.dimension == "cpu")].itertuples():
        shown = frame.loc[frame["host"] == row.item, "cpu greedy-balance"].iloc[0]
        assert float(shown) == pytest.approx(row.after)
    assert {"cpu first-fit-decreasing %", "cpu ours %", "cpu initial %"} <= set(frame.columns)


def test_cli_writes_the_report_and_the_tables(tmp_path: Path) -> None:
    scenario = tmp_path / "tricky.json"
    scenario.write_text(json.dumps(tricky_scenario()))
    out = {name: tmp_path / name for name in ("plan.html", "moves.csv", "util.csv", "r.json")}
    code = main(["solve", str(scenario), "--report", str(out["plan.html"]),
                 "--moves-csv", str(out["moves.csv"]), "--utilization-csv", str(out["util.csv"]),
                 "--json", str(out["r.json"])])
    assert code == 0
    result = json.loads(out["r.json"].read_text())
    moves = pd.read_csv(out["moves.csv"], dtype=str, keep_default_na=False)
    assert moves.to_dict(orient="records") == result["moves"]
    util = pd.read_csv(out["util.csv"], keep_default_na=False, na_values=[""])
    data = tricky_scenario()
    final: dict[str, list[str]] = {}
    for obj, host in result["assignment"].items():
        final.setdefault(host, []).append(obj)
    for row in util[util["scope"] == "host"].itertuples(index=False):
        assert row.after == pytest.approx(expected_load(data, final, row.dimension, [row.item]))
    assert parsed(out["plan.html"].read_text()).tags.count("svg") == 3


def test_cli_refuses_a_report_path_before_solving(tmp_path: Path, capsys) -> None:
    scenario = tmp_path / "tricky.json"
    scenario.write_text(json.dumps(tricky_scenario()))
    code = main(["solve", str(scenario), "--report", str(tmp_path / "missing" / "p.html")])
    assert code == 2 and "--report" in capsys.readouterr().err
    code = main(["solve", str(scenario), "--utilization-csv", str(scenario)])
    assert code == 2 and "would be overwritten" in capsys.readouterr().err


def test_compare_cli_writes_its_report(tmp_path: Path) -> None:
    scenario = tmp_path / "tricky.json"
    scenario.write_text(json.dumps(tricky_scenario()))
    page = tmp_path / "compare.html"
    code = main(["compare", str(scenario), "--heuristic", "first-fit-decreasing",
                 "--report", str(page), "--time-limit", "30"])
    assert code == 0
    reader = parsed(page.read_text())
    assert "first-fit-decreasing" in "\n".join(reader.text)
    assert np.sum(np.asarray(reader.tags) == "svg") == 3


OUR_TAGS = {"b", "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "span",
            "table", "thead", "tbody", "tr", "th", "td", "div", "ul", "li", "figure",
            "figcaption", "svg", "rect", "line", "text", "polyline", "script"}


@settings(max_examples=12, deadline=None)
@given(names=st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from(
    "<>&\"'/;="), min_size=1, max_size=12), min_size=5, max_size=5, unique=True))
def test_any_names_stay_text(names: list[str]) -> None:
    task, other, host, spare, rack = names
    data = {"assignment": {host: [task, other], spare: []},
            "objectDimensions": {"cpu": {task: 2, other: 1}},
            "containerDimensions": {"cpu": {host: 2, spare: 2}},
            "scopes": {"rack": {host: rack, spare: rack}},
            "goals": [{"spec": {"balanceSpec": {"name": rack, "dimension": "cpu"}}}]}
    result = solved(data)
    for page in (plan_report(result, title=task), result._repr_html_()):
        reader = parsed(page)
        assert set(reader.tags) <= OUR_TAGS and reader.tags.count("script") <= 1
        text = "".join(reader.text)
        assert rack in text and host in text
