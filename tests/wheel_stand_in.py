"""A stand-in for the ``rebalancer`` wheel's ProblemSolver, for running exported scripts
without the wheel."""

from __future__ import annotations


class Recorder:
    """A stand-in for ``rebalancer.ProblemSolver`` that records every call."""

    calls: list = []

    def __init__(self, *args):
        Recorder.calls.append(("__init__", args, {}))

    def __getattr__(self, method):
        def call(*args, **kwargs):
            Recorder.calls.append((method, args, kwargs))
            if method == "solve":
                return {"initialGlobalObjective": {"goals": [{"value": 1.0}]},
                        "finalGlobalObjective": {"goals": [{"value": 0.5}]},
                        "assignment": {}}
            return self
        return call
