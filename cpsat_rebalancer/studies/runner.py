"""Run a study: plan its variants (grid points, or the probes of its searches), skip those
already stored, run the rest on an executor with a progress line, and write the tables.

Output folder: ``variants/KEY.json`` (one row per variant, written by the worker that ran
it), ``results.parquet`` (and ``results.csv`` on request) with one row per variant, and for
searches ``answers.parquet`` / ``answers.csv``; ``study.json`` records what was run.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from .executors import make_executor
from .search import SearchState, start
from .store import assemble, read_row, stored_keys, variant_key, write_atomically, write_table
from .study import Study
from .variant_run import ERROR, Task, new_run_id


@dataclass
class Progress:
    """One stderr line: done / running / failed, skipped (already stored), and an ETA. The
    total is known at the start (a search counts the most probes it can take) and only
    falls, when a search ends before its most."""

    stream: TextIO | None
    total: int = 0
    done: int = 0
    failed: int = 0
    running: int = 0
    skipped: int = 0
    started: float = field(default_factory=time.monotonic)
    last: float = 0.0

    def show(self, final: bool = False) -> None:
        if self.stream is None:
            return
        now = time.monotonic()
        if not final and now - self.last < 0.5:
            return
        self.last = now
        elapsed = now - self.started
        self.total = max(self.total, self.done + self.skipped + self.running)
        left = max(self.total - self.done - self.skipped, 0)
        eta = "-"
        if self.done and left:
            eta = f"{elapsed / self.done * left:.0f}s"
        text = (f"\r[study] {self.done + self.skipped}/{self.total} done "
                f"({self.skipped} stored), {self.running} running, {self.failed} failed, "
                f"{elapsed:.0f}s elapsed, ETA {eta}   ")
        self.stream.write(text + ("\n" if final else ""))
        self.stream.flush()


@dataclass
class Outcome:
    results: pd.DataFrame
    answers: pd.DataFrame | None
    computed: int
    skipped: int
    failed: int


def _group(point: dict[str, Any]) -> str:
    return json.dumps(point, sort_keys=True, default=str) if point else "{}"


@contextlib.contextmanager
def _stop_on_signals():
    """SIGTERM and SIGHUP raise ``SystemExit`` (128 + the signal) in the main thread, so the
    study stops as on Ctrl-C: its workers are terminated, not left solving. (Signals reach
    only the main thread; elsewhere nothing is installed.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(number, frame):
        raise SystemExit(128 + number)

    wanted = [signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    previous = {number: signal.signal(number, stop) for number in wanted}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler if handler is not None else signal.SIG_DFL)


def run_study(study: Study, out: str | Path, executor: str = "local", workers: int = 1,
              address: str | None = None, csv: bool = False,
              progress: TextIO | None = sys.stderr) -> Outcome:
    """Run every variant of ``study`` not yet stored in ``out`` and write the tables."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    run_id = new_run_id()
    stored = stored_keys(out)
    bar = Progress(progress)
    keys: list[str] = []  # every variant of this study, in plan order
    queue: list[Task] = []
    searches: list[SearchState] = []

    def task(params: dict[str, Any], state: SearchState | None = None) -> Task:
        key = variant_key(study.fingerprint, params)
        keys.append(key)
        if state is None:
            return Task(str(study.path), study.raw, study.fingerprint, key, params, str(out),
                        run_id, allow_code=study.allow_code)
        return Task(str(study.path), study.raw, study.fingerprint, key, params, str(out), run_id,
                    state.search.name, state.group, state.search.position,
                    state.search.at_most, study.allow_code)

    if study.searches:
        base = study.base_scenario()
        for point in study.points:
            for search in study.searches:
                searches.append(start(search, point, base, _group(point)))
    else:
        queue = [task(point) for point in study.points]
    bar.total = len(queue) + sum(state.most_probes() for state in searches)

    def advance(state: SearchState) -> Task | None:
        """Record stored probes and return the next one to compute (None: finished)."""
        while True:
            value = state.next_probe()
            if value is None:  # its probes not taken leave the total
                bar.total -= max(0, state.most_probes() - len(state.verdicts))
                return None
            probe = task({**state.point, state.search.parameter: value}, state)
            row = read_row(out, probe.key) if probe.key in stored else None
            if row is None:
                return probe
            bar.skipped += 1
            state.record(value, row)

    waiting: dict[str, SearchState] = {}  # task key -> its search
    for state in searches:
        probe = advance(state)
        if probe is not None:
            queue.append(probe)
            waiting[probe.key] = state
    failed = computed = 0
    pending = []
    for item in queue:
        if item.key in stored:
            bar.skipped += 1
        else:
            pending.append(item)
    runner = make_executor(executor, workers, address) if pending else None
    ended = False
    try:
        with _stop_on_signals():
            in_flight = 0
            while pending or in_flight:
                while pending and in_flight < workers:
                    runner.submit(pending.pop(0))
                    in_flight += 1
                bar.running = in_flight
                bar.show()
                for finished, row in runner.finished():
                    in_flight -= 1
                    computed += 1
                    bar.done += 1
                    if row.get("status") == ERROR:
                        failed += 1
                        bar.failed += 1
                    state = waiting.pop(finished.key, None)
                    if state is not None:
                        state.record(finished.params[state.search.parameter], row)
                        probe = advance(state)
                        if probe is not None:
                            pending.append(probe)
                            waiting[probe.key] = state
        ended = True
    finally:
        if runner is not None:  # stopped by an error or a signal: the workers end now
            runner.close() if ended else runner.terminate()
    bar.running = 0
    bar.show(final=True)

    results = assemble(out, list(dict.fromkeys(keys)))
    write_table(results, out / "results.parquet")
    if csv:
        write_table(results, out / "results.csv")
    answers = None
    if searches:
        answers = pd.DataFrame([state.answer() for state in searches])
        write_table(answers, out / "answers.parquet")
        if csv:
            write_table(answers, out / "answers.csv")
    record = {"study": study.name, "file": str(study.path), "fingerprint": study.fingerprint,
              "parameters": sorted({k for p in study.points for k in p}
                                   | {s.parameter for s in study.searches}),
              "searches": [s.name for s in study.searches],
              "searched": sorted({s.parameter for s in study.searches}),
              "plot_dimensions": study.plot_dimensions,
              "variants": len(set(keys))}
    write_atomically(out / "study.json", json.dumps(record, indent=2).encode())
    return Outcome(results, answers, computed, bar.skipped, failed)
