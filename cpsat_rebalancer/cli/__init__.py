"""Command line: cpsat-rebalancer solve|evaluate SCENARIO, and the commands around them.

Exit codes: 0 solved (optimal or feasible), 2 bad input (one line, no traceback),
3 infeasible, 4 no solution found in time, 1 internal error.

One module per subcommand group (``solve``, ``compare``, ``vcd``, ``study``, ``imports``),
the shared helpers in ``common``. Only the module of the command run is imported (``--help``
imports none: it loads neither OR-Tools nor pandas). Library code never imports this
package.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from .. import __version__
from ..errors import InputError, InternalError

# command -> (its module here, its line in the list of commands)
COMMANDS = {
    "solve": ("solve", "solve a scenario to proven optimality"),
    "evaluate": ("solve", "evaluate a given assignment without solving"),
    "compare": ("compare", "compare heuristics (and given assignments) with the proven optimum"),
    "export": ("compare", "write a script that builds the scenario with Rebalancer"),
    "vcd": ("vcd", "VMware Cloud Director placement: engine vs exact model"),
    "study": ("study", "capacity-planning studies: sweeps of exact solves"),
    "import": ("imports", "turn a published benchmark instance or a Kubernetes "
               "snapshot into a scenario"),
}

DESCRIPTION = ("Rebalancer's declarative assignment specs, solved to proven optimality with "
               "OR-Tools CP-SAT.")
EPILOG = ("Exit codes: 0 solved (also when stopped by a time limit, Ctrl-C or SIGTERM: the "
          "best answer known is printed and written), 2 bad input, 3 infeasible, 4 no "
          "solution, 1 internal error. solve has no default time limit: without "
          "--time-limit it runs until every tuple position is proven optimal. "
          "'cpsat-rebalancer COMMAND --help' shows a command's options.")


class HelpFormatter(argparse.HelpFormatter):
    """Shows each option's default (unless its help states it, or there is none)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (action.option_strings and "default" not in text and default not in
                (None, False, argparse.SUPPRESS) and default != []):
            text += " (default: %(default)s)"
        return text


class Parser(argparse.ArgumentParser):
    """An argument parser whose help shows defaults; its subcommands' parsers are the same."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser, with every command's options when ``argv`` is None, else only those of
    the command ``argv`` names (the others are listed, their modules not imported)."""
    parser = Parser(prog="cpsat-rebalancer", description=DESCRIPTION, epilog=EPILOG)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                parser_class=Parser)
    if argv is None:
        wanted = dict.fromkeys(module for module, _ in COMMANDS.values())
    else:
        named = next((a for a in argv if not a.startswith("-")), None)
        wanted = dict.fromkeys([COMMANDS[named][0]] if named in COMMANDS else [])
    for module in wanted:
        importlib.import_module(f".{module}", __name__).add_commands(sub)
    for name, (module, text) in COMMANDS.items():
        if module not in wanted:  # listed; its options come with its module
            sub.add_parser(name, help=text)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)  # --help and --version end here
    from .common import EXIT_INPUT, EXIT_INTERNAL

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


__all__ = ["COMMANDS", "build_parser", "main"]
