"""The status line of ``solve`` on stderr (``--quiet`` silences it) and, with ``--log``, the
engine's messages: a terminal gets one line redrawn in place, anything else plain lines."""

from __future__ import annotations

import argparse
import contextlib
import logging
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TextIO

from ..progress import LOGGER, ProgressEvent

# a plain line when the phase changes (at most this often), and at least this often
PLAIN_PHASE_SECONDS = 0.5
PLAIN_SECONDS = 1.5
REDRAW_SECONDS = 0.1  # a terminal's line, at most this often


class StatusLine:
    """Shows progress events on ``stream``: in a terminal one line redrawn in place (every
    event, at most every REDRAW_SECONDS; the heartbeat brings one at least every half
    second), elsewhere a plain line when the phase or bucket changes and at least every
    PLAIN_SECONDS (never two within PLAIN_PHASE_SECONDS, but a bucket's outcome or the end
    always)."""

    def __init__(self, stream: TextIO, in_place: bool):
        self.stream = stream
        self.in_place = in_place
        self._lock = threading.Lock()
        self._last = -float("inf")
        self._where: tuple[int | None, str] | None = None
        self._drawn = False

    def __call__(self, event: ProgressEvent) -> None:
        now = time.monotonic()
        with self._lock:
            if self.in_place:
                if event.kind == "done":
                    self._erase()
                elif now - self._last >= REDRAW_SECONDS or event.kind == "bucket":
                    width = max(20, shutil.get_terminal_size().columns - 1)
                    self.stream.write("\r" + ("[solve] " + event.line())[:width] + "\x1b[K")
                    self._drawn = True
                    self._last = now
                self.stream.flush()
                return
            where = (event.bucket, event.phase)
            due = now - self._last >= PLAIN_SECONDS or event.kind in ("bucket", "done") or (
                where != self._where and now - self._last >= PLAIN_PHASE_SECONDS)
            if due:
                print("[solve] " + event.line(), file=self.stream, flush=True)
                self._last, self._where = now, where

    def close(self) -> None:
        with self._lock:
            self._erase()

    def _erase(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._drawn = False


def add_progress_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true",
                        help="no status line on stderr while solving")


@contextlib.contextmanager
def solve_progress(args: argparse.Namespace, stream: TextIO | None = None
                   ) -> Iterator[Callable[[ProgressEvent], None] | None]:
    """The progress callback for a solve run from the command line (None with --quiet),
    and with --log the engine's messages on stderr while it runs."""
    stream = stream or sys.stderr
    handler = None
    if args.log:
        handler = logging.StreamHandler(stream)
        handler.setFormatter(logging.Formatter("[engine] %(message)s"))
        LOGGER.addHandler(handler)
        previous_level = LOGGER.level
        LOGGER.setLevel(logging.INFO)
    # with --log, CP-SAT's log and the engine's messages flow too: plain lines, then
    status = None if args.quiet else StatusLine(stream, stream.isatty() and not args.log)
    try:
        yield status
    finally:
        if status is not None:
            status.close()
        if handler is not None:
            LOGGER.removeHandler(handler)
            LOGGER.setLevel(previous_level)
