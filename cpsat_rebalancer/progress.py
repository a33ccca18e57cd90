"""What a running solve reports while it runs: progress events for a caller's callback (and
the command line's status line), and the engine's messages on the ``cpsat_rebalancer``
logger.

The engine names each phase it enters (compiling, the load relaxation, a repair, a bucket's
search, a leximin step, the local search floor...); CP-SAT's solution and bound callbacks
report each incumbent and bound of a search; a heartbeat thread repeats the state whenever
nothing else was said for a while, so that a long phase outside CP-SAT is not silent. The
tracker only reads and reports: it never changes what the solve does, so results stay as
repeatable as they were.
"""

from __future__ import annotations

import logging
import math
import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction

from .interrupts import holding_signals

LOGGER = logging.getLogger("cpsat_rebalancer")
LOGGER.addHandler(logging.NullHandler())  # a library's messages: shown where the caller says

# the heartbeat repeats the state when nothing was reported for this long, so that events
# come at least every 2 s, with room to spare under load
HEARTBEAT_SECONDS = 0.5

# what an event reports: a phase entered, an incumbent or a bound of a search, a bucket
# finished (its evaluated value and bound), the state repeated, the solve finished
Scale = tuple[Fraction, int, int]  # (factor, weight, lowest): see Progress.show

KINDS = ("phase", "solution", "bound", "bucket", "heartbeat", "done")


@dataclass(frozen=True)
class ProgressEvent:
    """One report of a running solve. ``incumbent`` and ``bound`` are the current bucket's,
    on Rebalancer's scale where the search minimizes the bucket's objective (a leximin step
    reports its level: the largest relative utilization still open); ``limit`` is the
    time limit (None: none)."""

    kind: str
    phase: str
    bucket: int | None
    incumbent: float | None
    bound: float | None
    elapsed: float
    limit: float | None

    @property
    def gap(self) -> float | None:
        """The relative gap between the incumbent and the bound (0 when proven)."""
        if self.incumbent is None or self.bound is None:
            return None
        gap = max(0.0, self.incumbent - self.bound)
        return gap / abs(self.incumbent) if self.incumbent else (0.0 if gap == 0 else math.inf)

    def line(self) -> str:
        """The event as one status line."""
        parts = [self.phase if self.bucket is None else f"bucket {self.bucket}: {self.phase}"]
        if self.incumbent is not None:
            value = f"incumbent {self.incumbent:.6g}"
            if self.bound is not None:
                value += f", bound {self.bound:.6g}"
            gap = self.gap
            if gap is not None:
                value += f", gap {gap:.2%}" if math.isfinite(gap) else ", gap inf"
            parts.append(value)
        elif self.bound is not None:
            parts.append(f"bound {self.bound:.6g}")
        limit = "no limit" if self.limit is None else f"{self.limit:g} s"
        parts.append(f"{self.elapsed:.1f} s / {limit}")
        return " | ".join(parts)


class Progress:
    """The state of one running solve and the events it reports (see ``running``). The
    solve's thread and CP-SAT's report; one thread delivers. A callback that raises is
    logged and not called again: a display must not end a solve."""

    def __init__(self, callback: Callable[[ProgressEvent], None] | None,
                 limit: float | None, started: float | None = None,
                 heartbeat: float = HEARTBEAT_SECONDS):
        self.callback = callback
        self.limit = limit
        self.started = time.monotonic() if started is None else started
        self.heartbeat = heartbeat
        self._lock = threading.RLock()
        self._phase = "starting"
        self._bucket: int | None = None
        self._incumbent: float | None = None
        self._bound: float | None = None
        self._shown: dict[int, tuple[object, Fraction, int, int]] = {}  # see show()
        self._queue: queue.SimpleQueue[ProgressEvent | None] = queue.SimpleQueue()
        self._delivery: threading.Thread | None = None

    @property
    def active(self) -> bool:
        """Whether anyone listens to events (a callback was given)."""
        return self.callback is not None

    @property
    def listening(self) -> bool:
        """Whether anyone listens to searches: events, or the logger at INFO."""
        return self.callback is not None or LOGGER.isEnabledFor(logging.INFO)

    # ---- the engine's reports ----
    def phase(self, name: str) -> None:
        """The solve enters phase ``name`` (of the current bucket, if any)."""
        with self._lock:
            self._phase = name
            LOGGER.info("%.2f s %s%s", self.elapsed(), self._where(), name)
            self._emit("phase")

    def start_bucket(self, position: int, name: str) -> None:
        """A new bucket, in phase ``name``: its incumbent and bound are not known yet."""
        self._enter(position)
        self.phase(name)

    def after_buckets(self, name: str) -> None:
        """Phase ``name``, outside any bucket (before the first, or after the last)."""
        self._enter(None)
        self.phase(name)

    def _enter(self, bucket: int | None) -> None:
        with self._lock:
            self._bucket = bucket
            self._incumbent = self._bound = None
            self._shown.clear()

    def end_bucket(self, status: str, objective: float | None, bound: float | None) -> None:
        """A bucket's outcome: its value and bound."""
        with self._lock:
            self._incumbent, self._bound = objective, bound
            self._shown.clear()
            LOGGER.info("%.2f s bucket %s: %s, value %s, bound %s", self.elapsed(),
                        self._bucket, status, _number(objective), _number(bound))
            self._phase = status
            self._emit("bucket")

    def show(self, objective: object, factor: Fraction, lowest: int, weight: int = 1) -> None:
        """Searches of the current bucket that minimize ``objective`` report their values:
        ``objective`` is ``weight``·(the bucket's value·``factor``) + (less than
        ``weight``), so the value shown is its floor division by ``weight`` over
        ``factor``; ``lowest`` is the least value·factor (a bound below it says nothing).
        Searches of any other objective report their solutions only."""
        with self._lock:
            self._shown[id(objective)] = (objective, factor, weight, lowest)

    def scale_of(self, objective: object) -> Scale | None:
        """How a search minimizing ``objective`` shows its values (None: it does not)."""
        with self._lock:
            entry = self._shown.get(id(objective))
            return None if entry is None or entry[0] is not objective else entry[1:]

    def solution(self, objective: float | None, scale: Scale | None) -> None:
        """A search found a solution of objective ``objective`` (CP-SAT's units)."""
        with self._lock:
            value = None
            if objective is not None and scale is not None and math.isfinite(objective):
                factor, weight, _ = scale
                value = float(Fraction(round(objective) // weight) / factor)
                if self._incumbent is None or value < self._incumbent:
                    self._incumbent = value
            LOGGER.info("%.2f s %s%s: a solution%s", self.elapsed(), self._where(), self._phase,
                        "" if value is None else f" of value {value:.6g}")
            self._emit("solution")

    def bound(self, bound: float, scale: Scale) -> None:
        """A search proved ``bound`` (CP-SAT's units) on its objective."""
        with self._lock:
            if not math.isfinite(bound):
                return
            factor, weight, lowest = scale
            value = float(Fraction(max(math.floor(bound + 1e-9) // weight, lowest)) / factor)
            if self._incumbent is not None:
                value = min(value, self._incumbent)
            if self._bound is None or value > self._bound:
                self._bound = value
                self._emit("bound")

    def done(self, status: str, termination: str) -> None:
        with self._lock:
            self._phase = f"{status} ({termination})"
            self._bucket = None
            LOGGER.info("%.2f s done: %s (%s)", self.elapsed(), status, termination)
            self._emit("done")

    # ---- delivery ----
    @contextmanager
    def running(self) -> Iterator[Progress]:
        """Meanwhile a thread of its own delivers the events to the callback, in order, and
        repeats the state whenever nothing was reported for ``heartbeat`` seconds (only
        when a callback listens). The solve's own threads never run the callback: a slow
        or failing display cannot slow, stop or break the solve; Ctrl-C never lands in it.
        On leaving, every event reported has been delivered."""
        if self.active:
            self._delivery = threading.Thread(target=self._deliver, name="progress",
                                              daemon=True)
            with holding_signals():  # a start cut short could leave the thread unseen
                self._delivery.start()
        try:
            yield self
        finally:
            delivery, self._delivery = self._delivery, None
            if delivery is not None:
                self._queue.put(None)
                while delivery.is_alive():  # timed waits: Ctrl-C cannot cut them short
                    try:
                        delivery.join(0.05)
                    except KeyboardInterrupt:  # the solve is over: its answer stands
                        continue

    def _deliver(self) -> None:
        last = time.monotonic()
        while True:
            wait = max(0.0, self.heartbeat - (time.monotonic() - last))
            try:
                event = self._queue.get(timeout=wait)
            except queue.Empty:
                event = self._heartbeat()
                if event is None:  # an event came meanwhile: it goes first
                    continue
            if event is None:
                return
            last = time.monotonic()
            callback = self.callback
            if callback is None:
                continue
            try:
                callback(event)
            except Exception:  # a display's error must not end the solve
                LOGGER.exception("the progress callback raised; it is not called again")
                self.callback = None

    def _heartbeat(self) -> ProgressEvent | None:
        """The state repeated, unless an event was queued since the wait ended: events are
        queued under the lock, so one taken meanwhile would arrive after a later heartbeat."""
        with self._lock:
            return self.snapshot("heartbeat") if self._queue.empty() else None

    # ---- events ----
    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def snapshot(self, kind: str = "heartbeat") -> ProgressEvent:
        with self._lock:
            return ProgressEvent(kind, self._phase, self._bucket, self._incumbent, self._bound,
                                 self.elapsed(), self.limit)

    def _where(self) -> str:
        return "" if self._bucket is None else f"bucket {self._bucket}: "

    def _emit(self, kind: str) -> None:
        """Report the state (the lock is held)."""
        if self.callback is not None:
            self._queue.put(self.snapshot(kind))


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


__all__ = ["HEARTBEAT_SECONDS", "KINDS", "LOGGER", "Progress", "ProgressEvent"]
