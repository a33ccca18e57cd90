"""Parity with Meta's Rebalancer: our evaluator and the wheel's on random scenarios covering
every spec and option the core supports, for the initial, a moved and our optimal assignment.

    python benchmarks/parity.py [--count 200] [--first-seed 0] [--max-objects 5]
                                [--max-containers 3] [--peer-python PATH] [--tolerance 1e-9]

Compares every goal value (unweighted), every constraint violation (Σe⁺) and every bucket
sum (tuple position), and prints, per spec and option, how many values were compared and
the largest relative difference |ours - wheel| / max(1, |ours|, |wheel|), then the worst
case overall. Exit status 1 when a difference exceeds the tolerance. Known exclusions (as in
tests/test_parity.py): values the wheel reports as NaN (Capacity MIN with an unbounded
default limit), and bucket sums of assignments that break a hard constraint (the bridge
measures those with every constraint soft). Needs the peer interpreter (see README).
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections import defaultdict

import numpy as np
import pandas as pd

from cpsat_rebalancer import evaluate, parse_scenario, solve_scenario
from cpsat_rebalancer.generators import random_scenario
from cpsat_rebalancer.peer import PeerError, evaluate_with_wheel, require_peer_python
from cpsat_rebalancer.scenario import SolverOptions

OPTION_KEYS = {
    "balanceSpec": ("formula", "boundType", "definition", "softUpperBound",
                    "fixAverageToInitial", "ignoreUpperBoundForIdealWithAbsOrRelBoundTypes",
                    "filter", "scope"),
    "capacitySpec": ("definition", "bound", "zeroAllowed", "limit", "useLegacyFormula",
                     "filter", "scope"),
    "utilIncreaseCostSpec": ("squares", "lowerBound"),
    "toFreeSpec": ("formula", "dimension"),
    "minimizeMovementSpec": ("scope", "dimension", "doNotNormalize", "allowance",
                             "magicScaling"),
    "avoidMovingSpec": (),
    "nonAcceptingSpec": ("scope",),
    "avoidAssignmentsSpec": (),
}


def labels(spec: dict, role: str, policy: str | None = None) -> list[str]:
    """'arm role' plus one 'arm option=value' label per option set."""
    ((arm, body),) = spec.items()
    result = [f"{arm} ({role})"]
    for key in OPTION_KEYS.get(arm, ()):
        if key not in body:
            continue
        value = body[key]
        if key == "limit":
            parts = [f"type={value.get('type', 'RELATIVE')}"]
            parts += [k for k in ("scopeItemLimits", "isDefaultLimitUnbounded") if k in value]
            value = ",".join(parts)
        elif key == "filter":
            value = "+".join(sorted(value))
        elif key == "scope":
            value = "custom" if value not in ("host", "") else "container"
        result.append(f"{arm} {key}={value}")
    if policy:
        result.append(f"policy {policy}")
    return result


def known_wheel_nan(spec: dict) -> bool:
    capacity = spec.get("capacitySpec", {})
    return capacity.get("bound") == "MIN" and capacity.get("limit", {}).get(
        "isDefaultLimitUnbounded", False)


def moved(problem, seed: int) -> np.ndarray:
    rng = random.Random(seed)
    final = problem.initial.copy()
    for obj in rng.sample(range(problem.num_objects), min(3, problem.num_objects)):
        final[obj] = rng.randrange(problem.num_containers)
    return final


def difference(ours: float, theirs: float) -> float:
    """The relative difference, above the noise of double arithmetic (2^-46 absolute)."""
    if math.isnan(ours) or math.isnan(theirs):
        return math.inf
    excess = abs(ours - theirs) - 2.0**-46
    return 0.0 if excess <= 0 else excess / max(abs(ours), abs(theirs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--max-objects", type=int, default=5)
    parser.add_argument("--max-containers", type=int, default=3)
    parser.add_argument("--peer-python")
    parser.add_argument("--tolerance", type=float, default=1e-9)
    args = parser.parse_args()
    python = require_peer_python(args.peer_python)
    stats: dict[str, dict] = defaultdict(lambda: {"values": 0, "max": 0.0, "worst": ""})
    errors: list[str] = []
    started = time.perf_counter()

    def record(names: list[str], ours: float, theirs: float, where: str) -> None:
        diff = difference(ours, theirs)
        for name in names:
            entry = stats[name]
            entry["values"] += 1
            if diff >= entry["max"]:
                entry["max"] = diff
                entry["worst"] = f"{where}: ours {ours!r}, wheel {theirs!r}"

    for seed in range(args.first_seed, args.first_seed + args.count):
        data = random_scenario(seed, args.max_objects, args.max_containers)
        scenario = parse_scenario(data)
        problem, model = scenario.problem, scenario.model
        goal_specs = [g["spec"] for g in data["goals"] if not g.get("boundary")]
        goal_labels = [labels(s, "goal") for s in goal_specs]
        constraint_labels = [labels(c["spec"], "constraint", c.get("policy", "DEFAULT"))
                             for c in data["constraints"]]
        optimum = solve_scenario(scenario, SolverOptions(workers=1))
        finals = {"moved": moved(problem, seed)}
        if optimum.status in ("OPTIMAL", "FEASIBLE"):
            finals["optimum"] = optimum.final
        first = True
        for kind, final in finals.items():
            try:
                wheel = evaluate_with_wheel(data, problem.assignment_dict(final),
                                            peer_python=python)
            except PeerError as exc:
                errors.append(f"seed {seed} {kind}: {str(exc)[:150]}")
                continue
            sides = [(kind, final, wheel["final"])]
            if first:
                sides.insert(0, ("initial", problem.initial, wheel["initial"]))
                first = False
            for label, assignment, theirs in sides:
                ours = evaluate(problem, model, assignment)
                where = f"seed {seed} {label}"
                for goal in theirs["goals"]:
                    i = goal["index"]
                    if math.isnan(goal["value"]) and known_wheel_nan(goal_specs[i]):
                        continue
                    record(goal_labels[i] + ["all goal values"], ours.goals[i].value,
                           goal["value"], f"{where} goal {i} {ours.goals[i].arm}")
                for constraint in theirs["constraints"]:
                    j = constraint["index"]
                    if math.isnan(constraint["value"]) and known_wheel_nan(
                            data["constraints"][j]["spec"]):
                        continue
                    record(constraint_labels[j] + ["all constraint violations"],
                           ours.constraints[j].violation, constraint["value"],
                           f"{where} constraint {j} {ours.constraints[j].arm}")
                if not ours.feasible:
                    continue
                for position, value in theirs.get("positions", {}).items():
                    if math.isnan(value):
                        continue
                    record(["all bucket sums", f"bucket sums ({label})"],
                           ours.positions.get(int(position), 0.0), value,
                           f"{where} position {position}")
    seconds = time.perf_counter() - started
    table = pd.DataFrame([{"spec / option": name, "values": s["values"],
                           "max rel diff": s["max"], "worst case": s["worst"]}
                          for name, s in sorted(stats.items())])
    with pd.option_context("display.max_colwidth", 90, "display.width", 250):
        print(table.to_string(index=False))
    worst = max(stats.items(), key=lambda kv: kv[1]["max"]) if stats else None
    print(f"\n{args.count} scenarios (seeds {args.first_seed}..{args.first_seed + args.count - 1},"
          f" up to {args.max_objects} objects x {args.max_containers} containers), "
          f"{sum(s['values'] for k, s in stats.items() if k.startswith('all '))} values "
          f"compared in {seconds:.0f} s")
    if worst:
        print(f"Worst case: {worst[1]['max']:.3g} relative ({worst[0]}; {worst[1]['worst']})")
    if errors:
        print(f"The wheel failed on {len(errors)} evaluations (not compared):")
        for line in errors:
            print(f"  {line}")
    bad = [k for k, s in stats.items() if s["max"] > args.tolerance]
    if bad:
        print(f"ABOVE TOLERANCE {args.tolerance:g}: " + ", ".join(bad))
        return 1
    print(f"All within {args.tolerance:g}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
