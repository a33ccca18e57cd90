"""Progress while a solve runs: events for a callback at least every 2 s from the first
second on (phases, incumbents and bounds of the searches, each bucket's outcome), the
engine's messages on the ``cpsat_rebalancer`` logger, and the command line's status line."""

from __future__ import annotations

import io
import json
import logging
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cpsat_rebalancer import ProblemSolver, parse_scenario, solve_scenario
from cpsat_rebalancer.cli.progress import StatusLine
from cpsat_rebalancer.generators import balance_instance, scale_instance
from cpsat_rebalancer.progress import Progress, ProgressEvent
from cpsat_rebalancer.scenario import SolverOptions

# IDEAL at 2000x100: compiling, leximin steps (relaxations, repairs), then the movement
# bucket's configuration LP, CP-SAT's searches and the descents: many phases, most of them
# outside CP-SAT, and a search that takes several seconds
IDEAL = scale_instance("ideal", 2000, 100, 0)


def test_events_come_at_least_every_two_seconds_from_the_first_second_on() -> None:
    scenario = parse_scenario(IDEAL)
    arrivals: list[tuple[float, ProgressEvent]] = []
    started = time.monotonic()
    result = solve_scenario(scenario, SolverOptions(time_limit=8, workers=2),
                            on_progress=lambda e: arrivals.append((time.monotonic(), e)))
    ended = time.monotonic()
    assert ended - started > 6  # the search took several seconds
    times = [started] + [t for t, _ in arrivals] + [ended]
    assert times[1] - started < 1.0  # the first event within the first second
    spacing = [later - earlier for earlier, later in zip(times, times[1:])]
    assert max(spacing) < 2.0, spacing
    events = [e for _, e in arrivals]
    kinds = {e.kind for e in events}
    assert {"phase", "bucket", "heartbeat", "done"} <= kinds
    phases = {e.phase for e in events}
    assert {"initial evaluation", "compile", "load relaxation"} <= phases
    assert any(p.startswith("leximin: ") for p in phases)
    assert events[-1].kind == "done"
    assert events[-1].phase == f"{result.status} ({result.termination})"
    assert all(e.limit == 8 for e in events)
    elapsed = [e.elapsed for e in events]
    assert elapsed == sorted(elapsed) and elapsed[-1] <= result.seconds + 0.1
    for e in events:  # a bound never passes the incumbent it is shown with
        if e.incumbent is not None and e.bound is not None:
            assert e.bound <= e.incumbent + 1e-9 and e.gap is not None and e.gap >= 0
    # each bucket's outcome, as its report states it before the result is settled
    outcomes = {e.bucket: e for e in events if e.kind == "bucket"}  # the buckets reached
    assert 0 in outcomes and set(outcomes) <= {b.position for b in result.buckets}
    for report in result.buckets:
        shown = outcomes.get(report.position)
        if shown is not None and report.bound is not None and shown.bound is not None:
            assert shown.bound <= report.objective + 1e-9 * max(1.0, abs(report.objective))


def test_incumbents_fall_and_bounds_rise_to_each_buckets_optimum() -> None:
    """Buckets searched by CP-SAT (without the accelerators, which prove these at once): in
    each, the incumbents its searches report fall and the bounds rise, on the bucket's own
    scale, to the optimum its report states."""
    scenario = parse_scenario(balance_instance(60, 6, "LINEAR", seed=3))
    events: list[ProgressEvent] = []
    result = solve_scenario(scenario, SolverOptions(time_limit=20, workers=2),
                            accelerate=False, on_progress=events.append)
    assert result.status == "OPTIMAL"
    for report in result.buckets:
        searched = [e for e in events if e.kind in ("solution", "bound")
                    and e.bucket == report.position]
        incumbents = [e.incumbent for e in searched if e.incumbent is not None]
        bounds = [e.bound for e in searched if e.bound is not None]
        assert len(incumbents) > 1 and incumbents == sorted(incumbents, reverse=True)
        assert bounds == sorted(bounds)
        optimum = report.compiled_objective
        assert incumbents[-1] == pytest.approx(optimum) and bounds[-1] <= optimum + 1e-12
        outcome = next(e for e in events if e.kind == "bucket" and e.bucket == report.position)
        assert outcome.incumbent == outcome.bound == pytest.approx(optimum)
        assert outcome.phase == "OPTIMAL"


def test_progress_leaves_a_repeatable_run_as_it_was() -> None:
    scenario = parse_scenario(scale_instance("ideal", 400, 20, 0))
    options = SolverOptions(workers=2, seed=7, deterministic_time=0.05)
    events: list[ProgressEvent] = []
    quiet = solve_scenario(scenario, options)
    watched = solve_scenario(scenario, options, on_progress=events.append)
    assert events and (quiet.final == watched.final).all()
    assert [b.objective for b in quiet.buckets] == [b.objective for b in watched.buckets]


def test_a_failing_callback_is_logged_and_the_solve_goes_on(caplog) -> None:
    calls = []

    def broken(event: ProgressEvent) -> None:
        calls.append(event)
        raise RuntimeError("display broke")

    scenario = parse_scenario(balance_instance(40, 4, seed=1))
    with caplog.at_level(logging.ERROR, logger="cpsat_rebalancer"):
        result = solve_scenario(scenario, SolverOptions(workers=1), on_progress=broken)
    assert result.status == "OPTIMAL" and len(calls) == 1
    assert "progress callback raised" in caplog.text


def test_the_logger_carries_the_engines_phases(caplog) -> None:
    scenario = parse_scenario(scale_instance("linear", 400, 20, 0))
    with caplog.at_level(logging.INFO, logger="cpsat_rebalancer"):
        result = solve_scenario(scenario, SolverOptions(time_limit=30, workers=2))
    messages = [r.getMessage() for r in caplog.records if r.name == "cpsat_rebalancer"]
    assert any(m.endswith(" compile") for m in messages)
    assert any("bucket 0: load relaxation" in m for m in messages)
    assert any(m.endswith(f"done: {result.status} ({result.termination})") for m in messages)


def test_problem_solver_passes_progress_on() -> None:
    ps = ProblemSolver().set_object_name("task").set_container_name("host")
    ps.set_assignment({"h0": ["t0", "t1", "t2"], "h1": ["t3"]})
    ps.add_object_dimension("mem", dict.fromkeys(["t0", "t1", "t2", "t3"], 10))
    ps.add_container_dimension("mem", {"h0": 20, "h1": 20})
    ps.add_goal({"balanceSpec": {"scope": "host", "dimension": "mem"}})
    events: list[ProgressEvent] = []
    result = ps.solve(on_progress=events.append)
    assert events[0].phase == "initial evaluation" and events[-1].kind == "done"
    assert [e.bucket for e in events if e.kind == "bucket"] == [0]
    assert events[-1].phase == f"{result.status} ({result.termination})"


def test_event_line_and_gap() -> None:
    event = ProgressEvent("bound", "search", 1, 2.0, 1.5, 3.25, 10.0)
    assert event.gap == pytest.approx(0.25)
    assert event.line() == "bucket 1: search | incumbent 2, bound 1.5, gap 25.00% | 3.2 s / 10 s"
    assert ProgressEvent("phase", "compile", None, None, None, 0.5, None).line() == \
        "compile | 0.5 s / no limit"
    assert ProgressEvent("bound", "search", 0, 0.0, 0.0, 1.0, None).gap == 0.0
    assert math.isinf(ProgressEvent("bound", "search", 0, 0.0, -1.0, 1.0, None).gap)


def test_a_terminal_gets_one_line_redrawn_and_erased() -> None:
    stream = io.StringIO()
    line = StatusLine(stream, in_place=True)
    line(ProgressEvent("phase", "compile", None, None, None, 0.0, 5.0))
    line(ProgressEvent("bucket", "OPTIMAL", 0, 1.0, 1.0, 0.5, 5.0))
    line(ProgressEvent("done", "OPTIMAL (optimal)", None, None, None, 0.6, 5.0))
    text = stream.getvalue()
    assert "\n" not in text
    assert text.count("\r[solve] ") == 2 and "bucket 0: OPTIMAL" in text
    assert text.endswith("\r\x1b[K")  # erased at the end: the result is printed on a clean line


def cli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cpsat_rebalancer.cli", *args],
                          capture_output=True, text=True, timeout=120, **kwargs)


def test_the_command_line_prints_plain_lines_when_not_a_terminal(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(balance_instance(120, 8, "SQUARES", seed=3)))
    shown = cli("solve", str(path), "--time-limit", "20")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stderr.splitlines()
    assert lines[0] == "[solve] initial evaluation | 0.0 s / 20 s"
    assert any(line.startswith("[solve] bucket 0: OPTIMAL") for line in lines)
    assert lines[-1].startswith("[solve] OPTIMAL (optimal) | ")
    assert "\r" not in shown.stderr
    quiet = cli("solve", str(path), "--time-limit", "20", "--quiet")
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert quiet.stdout.splitlines()[1:] != [] and "Status: OPTIMAL" in quiet.stdout
    logged = cli("solve", str(path), "--time-limit", "20", "--quiet", "--log")
    engine = [line for line in logged.stderr.splitlines() if line.startswith("[engine] ")]
    assert any(line.endswith(" compile") for line in engine)
    assert any("bucket 0: " in line for line in engine)
    assert not any(line.startswith("[solve]") for line in logged.stderr.splitlines())


def test_a_terminal_sees_the_line_redrawn_at_least_every_two_seconds(tmp_path: Path) -> None:
    """stderr a terminal (a pseudo-terminal here): one status line, redrawn in place at
    least every 2 s while the solve runs, and erased before the result is printed."""
    import os
    import pty

    path = tmp_path / "ideal.json"
    path.write_text(json.dumps(IDEAL))
    leader, follower = pty.openpty()
    child = subprocess.Popen([sys.executable, "-m", "cpsat_rebalancer.cli", "solve", str(path),
                              "--time-limit", "6"], stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    arrivals: list[tuple[float, bytes]] = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal's other end closed
            break
        if not chunk:
            break
        arrivals.append((time.monotonic(), chunk))
    out, _ = child.communicate(timeout=60)
    os.close(leader)
    assert child.returncode == 0 and b"Status: FEASIBLE" in out
    shown = b"".join(chunk for _, chunk in arrivals)
    assert b"\n" not in shown and shown.endswith(b"\r\x1b[K")
    draws = [t for t, chunk in arrivals for _ in range(chunk.count(b"\r[solve] "))]
    assert len(draws) > 6
    spacing = [b - a for a, b in zip(draws, draws[1:])]
    assert max(spacing) < 2.0, spacing
    assert b"\r[solve] bucket 1: " in shown and b"/ 6 s\x1b[K" in shown


def test_heartbeats_never_overtake_an_event_reported_meanwhile() -> None:
    """Heartbeats due at every instant while the solve reports phase after phase: the
    events still arrive in the order of their times."""
    events: list[ProgressEvent] = []
    progress = Progress(events.append, limit=None, heartbeat=1e-6)
    with progress.running():
        for step in range(20000):
            progress.phase(f"step {step}")
        time.sleep(0.05)  # idle: heartbeats follow (between the phases, only when none waits)
    elapsed = [e.elapsed for e in events]
    assert elapsed == sorted(elapsed)
    assert [e.phase for e in events if e.kind == "phase"] == [f"step {s}" for s in range(20000)]
    assert any(e.kind == "heartbeat" for e in events)
