"""Command line: ``cpsat-rebalancer solve|evaluate SCENARIO``.

Exit codes: 0 solved (optimal or feasible), 2 bad input (one line, no traceback),
3 infeasible, 4 no solution found in time, 1 internal error.

One module per subcommand group (:mod:`.solve`, :mod:`.compare`, :mod:`.vcd`,
:mod:`.study`, :mod:`.imports`), the shared helpers in :mod:`.common`. Library code never
imports this package.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import InputError, InternalError


def build_parser() -> argparse.ArgumentParser:
    # the subcommand modules (and with them the solver) are imported here, not at the top
    from . import compare, imports, solve, study, vcd

    parser = argparse.ArgumentParser(prog="cpsat-rebalancer", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    solve.add_commands(sub)  # solve, evaluate
    compare.add_commands(sub)  # compare, export: heuristic validation and peers
    vcd.add_commands(sub)  # vcd place|compare|generate
    study.add_commands(sub)  # study run|plot
    imports.add_commands(sub)  # import gap|binpacking|kubernetes|openb
    return parser


def main(argv: list[str] | None = None) -> int:
    from .common import EXIT_INPUT, EXIT_INTERNAL

    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except InputError as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_INPUT
    except InternalError as error:
        print(f"internal error (please report): {error}", file=sys.stderr)
        return EXIT_INTERNAL
    except KeyboardInterrupt:  # before any search started (a running search stops cleanly)
        print("interrupted", file=sys.stderr)
        return 130


__all__ = ["build_parser", "main"]
