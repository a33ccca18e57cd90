"""An independent lower bound on the movement position of the LINEAR scale family, from a
plain CP-SAT model of the packing it is, built without the engine.

    python benchmarks/movement_bound.py [--size 2000x100] [--time-limit 30] [--seed 0]

With the LINEAR balance at 0 (its proven optimum at 2000x100) and the average fixed to the
initial one (Rebalancer's rule for AFTER without a filter), every host's cpu load is at most
floor(average · capacity); nothing else constrains the loads (cpu is the only dimension
any spec reads, and the hard Capacity is looser). The fewest moved objects is then: counts
per (cpu size, host), each size's total kept, each host's load within its threshold,
minimize the objects leaving their initial host. Grouping by cpu size alone is exact for
this count (mem is read by no spec), so the bound printed holds for the engine's movement
position, and the gap of the engine's answer to it is measured, not guessed.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from ortools.sat.python import cp_model

from cpsat_rebalancer.generators import scale_instance


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="2000x100")
    parser.add_argument("--time-limit", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    objects, containers = (int(x) for x in args.size.split("x"))
    data = scale_instance("linear", objects, containers, seed=args.seed)
    cpu = data["objectDimensions"]["cpu"]
    capacity = data["containerDimensions"]["cpu"]
    hosts = list(data["assignment"])
    sizes = sorted({int(v) for v in cpu.values()})
    if any(v != int(v) for v in cpu.values()):
        raise SystemExit("cpu sizes are not integers: this model needs integer loads")
    index = {size: k for k, size in enumerate(sizes)}
    initial = np.zeros((len(hosts), len(sizes)), dtype=np.int64)
    for h, tasks in enumerate(data["assignment"].values()):
        for task in tasks:
            initial[h, index[int(cpu[task])]] += 1
    load = initial @ np.asarray(sizes)
    caps = np.asarray([capacity[h] for h in hosts], dtype=float)
    average = float(np.mean(load / caps))
    threshold = [math.floor(average * c + 1e-9) for c in caps]
    totals = initial.sum(axis=0)

    model = cp_model.CpModel()
    count = [[model.new_int_var(0, int(totals[k]), f"n{k}_{h}") for k in range(len(sizes))]
             for h in range(len(hosts))]
    for k in range(len(sizes)):
        model.add(sum(count[h][k] for h in range(len(hosts))) == int(totals[k]))
    leaving = []
    for h in range(len(hosts)):
        model.add(sum(size * count[h][k] for k, size in enumerate(sizes)) <= threshold[h])
        for k in range(len(sizes)):
            if initial[h, k]:
                out = model.new_int_var(0, int(initial[h, k]), f"out{k}_{h}")
                model.add(out >= int(initial[h, k]) - count[h][k])
                leaving.append(out)
    model.minimize(sum(leaving))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = args.time_limit
    solver.parameters.num_workers = args.workers
    solver.parameters.random_seed = args.seed
    status = solver.solve(model)
    found = solver.objective_value if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else None
    print(f"linear {args.size} seed {args.seed}: {len(sizes)} cpu sizes, room "
          f"{sum(threshold) - int(load.sum())} units for {int(load.sum())}")
    print(f"plain model, {args.time_limit:g} s, {args.workers} workers: "
          f"{solver.status_name(status)}, moves {found}, bound {solver.best_objective_bound:g}")


if __name__ == "__main__":
    main()
