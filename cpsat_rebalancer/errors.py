"""The one error type for user mistakes, and the internal-error type for our own bugs."""

from __future__ import annotations

import reprlib

# the offending value as shown in a message: a few levels and items of it, never the whole
# of a large or deeply nested value (whose full repr could be slow or exceed the recursion
# limit)
_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother = 3, 60, 60
_SHOWN.maxlist = _SHOWN.maxtuple = _SHOWN.maxdict = _SHOWN.maxset = 6


class InputError(ValueError):
    """A mistake in the user's problem: the message names where (a path) and what."""

    def __init__(self, path: str, problem: str, value: object = None, *, show_value: bool = True):
        self.path = path
        self.problem = problem
        self.value = value
        text = f"{path}: {problem}" if path else problem
        if show_value and value is not None:
            shown = shown_value(value)
            if len(shown) > 80:
                shown = shown[:77] + "..."
            text += f" (got {shown})"
        super().__init__(text)


def shown_value(value: object) -> str:
    """A short repr of ``value`` for an error message."""
    try:
        return _SHOWN.repr(value)
    except (RecursionError, ValueError):  # reprlib may still recurse into a custom repr
        return f"a {type(value).__name__}"


class OutOfTime(Exception):
    """The time limit ran out while the model was still being built: no search has run, so
    the start is the answer (the solve reports it with termination ``time_limit``)."""


class InternalError(RuntimeError):
    """The solver returned something the independent checker rejects: a bug, never user error."""
