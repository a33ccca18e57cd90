"""Child processes that get Ctrl-C as they would in a terminal."""

from __future__ import annotations

import signal


def ctrl_c_as_in_a_terminal() -> None:
    """A shell without job control starts background jobs with SIGINT ignored, and a child
    inherits that (Python then installs no KeyboardInterrupt handler, and a test's Ctrl-C
    does nothing): restore the default, as a terminal's foreground job has it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
