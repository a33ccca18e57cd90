"""``cpsat-rebalancer solve SCENARIO`` and ``cpsat-rebalancer evaluate SCENARIO
--assignment FILE``."""

from __future__ import annotations

import argparse
import json

from ..api import solve_scenario
from ..evaluate import evaluate
from ..result import (
    INFEASIBLE,
    NO_SOLUTION,
    constraint_dict,
    global_objective_dict,
    objective_dict,
)
from ..scenario import SolverOptions, load_data_with_model, parse_scenario
from ..tables import fleet_files
from .common import (
    EXIT_INFEASIBLE,
    EXIT_NO_SOLUTION,
    SCENARIO_HELP,
    check_outputs,
    collect_cpsat_params,
    cpsat_param,
    print_result,
    print_values,
    quiet_pipe,
    read_assignment,
    terminate_as_interrupt,
    write_output,
)
from .outputs import add_plan_options, plan_outputs, write_plan


def command_solve(args: argparse.Namespace) -> int:
    check_outputs({"--json": args.json, **plan_outputs(args)},
                  [*fleet_files(args.scenario), args.model, args.hint])
    scenario = parse_scenario(load_data_with_model(args.scenario, args.model))
    base = scenario.options
    options = SolverOptions.checked(
        args.time_limit if args.time_limit is not None else base.time_limit,
        args.workers if args.workers is not None else base.workers,
        args.seed if args.seed is not None else base.seed,
        args.deterministic_time if args.deterministic_time is not None
        else base.deterministic_time, args.log or base.log, path="options",
        cpsat_parameters={**base.cpsat_parameters, **collect_cpsat_params(args.cpsat_param)})
    hint = None if args.hint is None else read_assignment(scenario.problem, args.hint)
    with terminate_as_interrupt():
        result = solve_scenario(scenario, options, hint)
    if args.json:  # before printing, so a closed pipe cannot lose it
        write_output(args.json, result.to_json())
    written = [path for path in [args.json, *write_plan(args, result)] if path]
    code = {INFEASIBLE: EXIT_INFEASIBLE, NO_SOLUTION: EXIT_NO_SOLUTION}.get(result.status, 0)
    with quiet_pipe():
        print_result(result)
        if written:
            print("\nWrote " + ", ".join(written))
    return code


def command_evaluate(args: argparse.Namespace) -> int:
    check_outputs({"--json": args.json}, [*fleet_files(args.scenario), args.model, args.assignment])
    scenario = parse_scenario(load_data_with_model(args.scenario, args.model))
    final = read_assignment(scenario.problem, args.assignment)
    initial_eval = evaluate(scenario.problem, scenario.model, scenario.problem.initial)
    final_eval = evaluate(scenario.problem, scenario.model, final)
    moved = int((final != scenario.problem.initial).sum())
    if args.json:  # before printing, so a closed pipe cannot lose it
        payload = {"feasible": final_eval.feasible, "moves": moved,
                   "initialObjective": objective_dict(initial_eval, 0),
                   "finalObjective": objective_dict(final_eval, 0),
                   "initialGlobalObjective": global_objective_dict(initial_eval),
                   "finalGlobalObjective": global_objective_dict(final_eval),
                   "initialConstraint": constraint_dict(initial_eval),
                   "finalConstraint": constraint_dict(final_eval),
                   "brokenHardConstraints": final_eval.broken_hard()}
        write_output(args.json, json.dumps(payload, indent=2))
    with quiet_pipe():
        print(f"Assignment {args.assignment}: {moved} moves, "
              f"{'feasible' if final_eval.feasible else 'INFEASIBLE'}")
        print_values(initial_eval, final_eval)
        if args.json:
            print(f"\nWrote {args.json}")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the ``solve`` and ``evaluate`` subcommands."""
    solve = sub.add_parser("solve", help="solve a scenario to proven optimality")
    solve.add_argument("scenario", help=SCENARIO_HELP)
    solve.add_argument("--model", help="take goals and constraints from this model file")
    solve.add_argument("--time-limit", type=float, help="seconds for the whole solve chain")
    solve.add_argument("--workers", type=int, help="CP-SAT workers (default 2)")
    solve.add_argument("--seed", type=int, help="CP-SAT random seed (default 0)")
    solve.add_argument("--deterministic-time", type=float,
                       help="CP-SAT deterministic time budget per solve (repeatable results)")
    solve.add_argument("--cpsat-param", action="append", type=cpsat_param, metavar="NAME=VALUE",
                       help="a further CP-SAT parameter (repeatable), e.g. "
                       "linearization_level=2; overrides the scenario's solver.cpsatParameters")
    solve.add_argument("--log", action="store_true", help="print CP-SAT's search log")
    solve.add_argument("--hint", help="start from this assignment (a heuristic's, say) when it "
                       "keeps the hard constraints and beats the initial one")
    solve.add_argument("--json", help="write the full result as JSON to this file")
    add_plan_options(solve)
    solve.set_defaults(run=command_solve)
    ev = sub.add_parser("evaluate", help="evaluate a given assignment without solving")
    ev.add_argument("scenario", help=SCENARIO_HELP)
    ev.add_argument("--assignment", required=True,
                    help="JSON/YAML {container: [objects]} or a result file from solve --json")
    ev.add_argument("--model", help="take goals and constraints from this model file")
    ev.add_argument("--json", help="write the values as JSON to this file")
    ev.set_defaults(run=command_evaluate)
