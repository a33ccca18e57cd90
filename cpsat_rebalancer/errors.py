"""The one error type for user mistakes, and the internal-error type for our own bugs."""

from __future__ import annotations


class InputError(ValueError):
    """A mistake in the user's problem: the message names where (a path) and what."""

    def __init__(self, path: str, problem: str, value: object = None, *, show_value: bool = True):
        self.path = path
        self.problem = problem
        self.value = value
        text = f"{path}: {problem}" if path else problem
        if show_value and value is not None:
            shown = repr(value)
            if len(shown) > 80:
                shown = shown[:77] + "..."
            text += f" (got {shown})"
        super().__init__(text)


class InternalError(RuntimeError):
    """The solver returned something the independent checker rejects: a bug, never user error."""
