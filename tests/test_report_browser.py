"""The plan report in a real browser: headless Chromium (Debian's ``chromium``, which
``.ci/run`` installs) opens the page, finds its tables and figures, sorts a column by a
mouse click, and saves a screenshot (also to ``$CPSAT_REBALANCER_SCREENSHOTS`` when set)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from browser import Browser, chromium_path

from cpsat_rebalancer.api import solve_scenario
from cpsat_rebalancer.report import plan_report
from cpsat_rebalancer.scenario import SolverOptions, load_data_with_model, parse_scenario

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = chromium_path()

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not found: install Debian's chromium package "
    "(apt-get install chromium; .ci/run does) to run the browser test")

COLUMN_VALUES = """(() => {
  const table = document.getElementById(%r);
  const column = Array.from(table.tHead.rows[0].cells).findIndex(c => c.textContent === %r);
  return Array.from(table.tBodies[0].rows).map(
      r => [r.cells[0].textContent, r.cells[column].getAttribute('data-sort')]);
})()"""


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> tuple[Path, object]:
    scenario = parse_scenario(load_data_with_model(ROOT / "scenarios" / "csv" / "fleet",
                                                   ROOT / "models" / "fleet_rebalance.json"))
    result = solve_scenario(scenario, SolverOptions(time_limit=60))
    page = tmp_path_factory.mktemp("report") / "plan.html"
    page.write_text(plan_report(result, "Plan: scenarios/csv/fleet"))
    return page, result


def test_the_report_renders_sorts_and_shows_its_figures(plan, tmp_path: Path) -> None:
    page, result = plan
    utilization = result.utilization()
    with Browser(CHROMIUM) as browser:
        browser.open(page.as_uri())
        assert browser.evaluate("document.title") == "Plan: scenarios/csv/fleet"
        # nothing was fetched: the page is self-contained
        assert browser.evaluate("performance.getEntriesByType('resource').length") == 0
        rows = browser.evaluate("Object.fromEntries(Array.from(document.querySelectorAll("
                                "'table[id]')).map(t => [t.id, t.tBodies[0].rows.length]))")
        assert rows["utilization-container"] == 12 and rows["utilization-rack"] == 3
        assert rows["moves"] == len(result.moves) and rows["buckets"] == len(result.buckets)
        assert rows["goals"] == len(result.goal_table())
        # one figure per scope and dimension with capacities, drawn with a visible size
        figures = browser.evaluate(
            "Array.from(document.querySelectorAll('svg.figure')).map(s => {"
            "const r = s.getBoundingClientRect();"
            "return [r.width, r.height, s.querySelectorAll('rect').length];})")
        assert len(figures) == 4
        assert all(width > 100 and height > 100 and bars > 2 for width, height, bars in figures)

        shown = browser.evaluate(COLUMN_VALUES % ("utilization-container", "cpu before %"))
        expected = utilization[(utilization.scope == "container")
                               & (utilization.dimension == "cpu")]
        by_host = dict(zip(expected["item"], expected["before_ratio"]))
        assert {host: float(value) for host, value in shown} == pytest.approx(by_host)

        header = "#utilization-container thead th:nth-child(3)"
        assert browser.evaluate(f"document.querySelector('{header}').textContent") == \
            "cpu before"
        browser.click(header)
        ascending = browser.evaluate(COLUMN_VALUES % ("utilization-container", "cpu before"))
        loads = [float(value) for _, value in ascending]
        assert loads == sorted(loads) and len(set(loads)) > 1
        # the rows moved: the page opened hottest first (by cpu after %)
        assert [host for host, _ in ascending] != [host for host, _ in shown]
        assert browser.evaluate(f"document.querySelector('{header}')"
                                ".getAttribute('aria-sort')") == "ascending"
        browser.click(header)
        descending = browser.evaluate(COLUMN_VALUES % ("utilization-container", "cpu before"))
        assert [float(v) for _, v in descending] == sorted(loads, reverse=True)
        # each row kept its cells: the host and its load travel together
        assert sorted(descending) == sorted(ascending)

        screenshot = tmp_path / "report.png"
        browser.screenshot(screenshot)
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    keep = os.environ.get("CPSAT_REBALANCER_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(screenshot, Path(keep) / "report.png")
