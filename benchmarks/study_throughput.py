"""Study throughput: a 200-variant study of tiny scenarios on the local executor with 1 and
2 workers, and the ratio of their throughputs.

    python benchmarks/study_throughput.py [--variants 200] [--workers 1,2]

Each variant is a 12-object, 4-host balance scenario (balance, then few moves, HARD cpu
capacity) with its own balance bound and drain, solved to optimality in a fraction of a
second, so the figure measures the study machinery (planning, process pool, row files,
table) as much as the solves. Every run starts from an empty folder (no resume).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import yaml

from cpsat_rebalancer.generators import balance_instance
from cpsat_rebalancer.studies import load_study, run_study


def make_study(folder: Path, variants: int) -> Path:
    """A grid of ``variants`` points: balance bounds x drained hosts x seeds."""
    (folder / "base.json").write_text(json.dumps(balance_instance(12, 4, seed=1)))
    bounds = [round(1.0 + 0.05 * k, 2) for k in range(10)]
    drains = [0, 1]
    seeds = list(range(max(1, -(-variants // (len(bounds) * len(drains))))))
    study = {"name": "throughput", "base": "base.json",
             "solver": {"workers": 1, "deterministicTime": 5},
             "grid": {"spec.balance_cpu.upperBound": bounds, "drain.coldest.cpu": drains,
                      "solver.seed": seeds}}
    path = folder / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", type=int, default=200)
    parser.add_argument("--workers", default="1,2")
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    with tempfile.TemporaryDirectory() as temp:
        path = make_study(Path(temp), args.variants)
        study = load_study(path)
        assert len(study.points) == args.variants, len(study.points)
        rates = {}
        for workers in counts:
            started = time.perf_counter()
            outcome = run_study(study, Path(temp) / f"out{workers}", "local", workers,
                                progress=None)
            seconds = time.perf_counter() - started
            assert outcome.computed == args.variants and outcome.failed == 0
            rates[workers] = args.variants / seconds
            print(f"{workers} worker(s): {args.variants} variants in {seconds:.1f} s, "
                  f"{rates[workers]:.1f} variants/s")
        if len(counts) >= 2:
            first, last = counts[0], counts[-1]
            print(f"throughput ratio {last} vs {first} workers: "
                  f"{rates[last] / rates[first]:.2f}x")


if __name__ == "__main__":
    main()
