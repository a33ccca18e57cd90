"""Holding Ctrl-C and SIGTERM back for a moment that must not be cut: a thread starting, an
evaluation the answer needs, a result file being written."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def holding_signals() -> Iterator[list[int]]:
    """Hold Ctrl-C and SIGTERM back meanwhile; the list given fills with those that came
    (only the main thread receives signals in Python: elsewhere nothing is held)."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    held = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda signum, frame: came.append(signum))
                for sig in held}
    try:
        yield came
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)


__all__ = ["holding_signals"]
