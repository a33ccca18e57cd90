"""The experiment of "Beware of Fragmentation" (USENIX ATC '23) on the Alibaba openb trace,
with the most any placement of the same pods can allocate beside every policy.

    python benchmarks/kubernetes.py [--variants default gpushare40 ...] [--policies atc-fgd ...]
        [--points 80 90 100 ...] [--seed 42] [--ratio 1.3] [--order shuffled|trace]
        [--ties name|random]
        [--bound-time S] [--pattern-time S] [--json OUT] [--figure PNG] [--quick]
    python benchmarks/kubernetes.py --load RUN.json ... [--figure PNG]

Per trace variant: the pods arrive (the trace inflated to ``ratio`` x the cluster's GPUs,
as the paper's simulator does), each ATC'23 policy places them online, and at each
arrival point (arrived GPU requests as % of the cluster's GPUs) the table gives each
policy's GPU allocation (% of the cluster's GPUs, the paper's measure), the share of the
arrived GPU requests it allocated, and its unallocated GPUs; the row ``maximum`` gives the
best checked placement of the arrived pods and the upper bound, OPTIMAL where they meet.
``--quick``: every tenth node of the cluster, the default trace, three points (a smoke
test). ``--load``: print and draw the results of earlier ``--json`` runs.
Method: docs/kubernetes.md#the-papers-experiment.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from cpsat_rebalancer.files import write_atomically
from cpsat_rebalancer.gpu_allocation import (
    Maximum,
    arrival_points,
    gpu_capacity,
    inflate,
    maximum,
    paper_typical,
    read_trace,
    simulate,
)
from cpsat_rebalancer.gpu_sharing import MILLI
from cpsat_rebalancer.heuristics.gpushare import POLICIES, TIES

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "data" / "traces" / "alibaba_openb_gpu2023" / "csv"
NODES = "openb_node_list_gpu_node.csv"  # the paper's cluster: 1213 GPU nodes, 6212 GPUs
VARIANTS = ("default", "gpushare40", "gpushare80", "gpuspec20", "gpuspec33")
POINTS = (80, 90, 95, 100, 110, 120, 130)
SHORT = {"atc-random": "Random", "atc-dot-product": "DotProd",
         "atc-gpu-clustering": "Clustering", "atc-gpu-packing": "Packing",
         "atc-best-fit": "BestFit", "atc-fgd": "FGD"}


def run_variant(variant: str, args: argparse.Namespace) -> dict:
    nodes, trace = read_trace(TRACE / NODES, TRACE / f"openb_pod_list_{variant}.csv")
    if args.quick:
        nodes = nodes[::10]
    capacity = gpu_capacity(nodes)
    pods = inflate(trace, capacity, args.ratio, args.seed, args.order)
    typical = paper_typical(trace)
    arrived = arrival_points(pods, capacity, args.points)
    placements, seconds = {}, {}
    for policy in args.policies:
        start = time.perf_counter()
        placements[policy] = simulate(nodes, pods, policy, args.seed, typical, args.ties)
        seconds[policy] = time.perf_counter() - start
        print(f"  {variant}: {policy} placed {int((placements[policy].node >= 0).sum())} "
              f"of {len(pods)} pods in {seconds[policy]:.0f} s", file=sys.stderr)
    points = []
    for percent, count in zip(args.points, arrived):
        head = pods[:count]
        requested = sum(p.total_milli for p in head)
        best = maximum(nodes, head, {p: pl.prefix(count) for p, pl in placements.items()},
                       args.bound_time, args.workers, args.pattern_time)
        points.append({
            "percent": percent, "pods": count, "requested_milli": requested,
            "allocated_milli": {p: pl.allocated(pods, count) for p, pl in placements.items()},
            "maximum": {"best_milli": best.best, "bound_milli": best.bound,
                        "proven": best.proven, "gap": best.gap, "source": best.source,
                        "relaxation_optimal": best.relaxation_optimal}})
        print(f"  {variant}: {percent}% ({count} pods): maximum {_maximum(best, capacity)}",
              file=sys.stderr)
    return {"variant": variant, "ties": args.ties, "nodes": len(nodes), "capacity_milli": capacity,
            "trace_pods": len(trace), "arrived_pods": len(pods),
            "arrived_milli": sum(p.total_milli for p in pods), "seconds": seconds,
            "points": points}


def _maximum(best: Maximum, capacity: int) -> str:
    if best.proven:
        return f"{100 * best.best / capacity:.2f}% OPTIMAL"
    return (f"{100 * best.best / capacity:.2f}%..{100 * best.bound / capacity:.2f}% "
            f"(bound, gap {100 * best.gap:.2f}%)")


def print_variant(result: dict) -> None:
    capacity = result["capacity_milli"]
    points = result["points"]
    print(f"\n== openb_pod_list_{result['variant']}: {result['nodes']} nodes, "
          f"{capacity // MILLI} GPUs; {result['arrived_pods']} pods arrive "
          f"({result['trace_pods']} in the trace), "
          f"{100 * result['arrived_milli'] / capacity:.1f}% of the GPUs")
    header = "arrived (% of GPUs)".ljust(24) + "".join(f"{p['percent']:>10}" for p in points)
    policies = list(points[0]["allocated_milli"]) if points else []
    for title, value in (
            ("GPU allocation, % of the cluster's GPUs",
             lambda m, p: f"{100 * m / capacity:.2f}"),
            ("share of the arrived GPU requests allocated, %",
             lambda m, p: f"{100 * m / p['requested_milli']:.2f}"),
            ("unallocated GPUs", lambda m, p: f"{(capacity - m) / MILLI:.0f}")):
        print(f"\n{title}\n{header}")
        for policy in policies:
            print(SHORT.get(policy, policy).ljust(24) + "".join(
                f"{value(p['allocated_milli'][policy], p):>10}" for p in points))
        print("maximum (best found)".ljust(24) + "".join(
            f"{value(p['maximum']['best_milli'], p):>10}" for p in points))
        print("upper bound".ljust(24) + "".join(
            f"{value(p['maximum']['bound_milli'], p):>10}" for p in points))
    print("proof".ljust(24) + "".join(
        f"{'OPTIMAL' if p['maximum']['proven'] else 'gap %.2f%%' % (100 * p['maximum']['gap']):>10}"
        for p in points))


def draw(results: list[dict], path: Path) -> None:
    """Unallocated GPUs (% of the cluster's) against arrived GPU requests, one panel per
    variant, as the paper's Figure 9(a), with the maximum and its bound as lines."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(4.2 * len(results), 3.6),
                             sharey=True, squeeze=False)
    for ax, result in zip(axes[0], results):
        capacity = result["capacity_milli"]
        points = result["points"]
        x = [p["percent"] for p in points]
        for policy in points[0]["allocated_milli"]:
            ax.plot(x, [100 - 100 * p["allocated_milli"][policy] / capacity for p in points],
                    marker=".", label=SHORT.get(policy, policy))
        ax.plot(x, [100 - 100 * p["maximum"]["best_milli"] / capacity for p in points],
                color="black", linewidth=2, label="maximum (best found)")
        ax.plot(x, [100 - 100 * p["maximum"]["bound_milli"] / capacity for p in points],
                color="black", linestyle="--", label="bound on the maximum")
        ax.plot([min(x), 100], [100 - min(x), 0], color="grey", linestyle=":", label="ideal")
        ax.set_title(result["variant"])
        ax.set_xlabel("arrived GPU requests (% of the GPUs)")
        ax.set_ylim(0, 25)
        ax.grid(linestyle="-.", alpha=0.6)
    axes[0][0].set_ylabel("unallocated GPUs (%)")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1), frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    parser.add_argument("--points", nargs="+", type=float, default=list(POINTS))
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--ratio", type=float, default=1.3)
    parser.add_argument("--order", choices=("shuffled", "trace"), default="shuffled")
    parser.add_argument("--ties", choices=TIES, default="name",
                        help="equal scores: the first node by name (the paper's simulator) "
                             "or kube-scheduler's random draw")
    parser.add_argument("--bound-time", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--pattern-time", type=float, default=0.1,
                        help="CP-SAT deterministic time per node content of the pattern "
                             "fill (0: no pattern fill)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--figure", type=Path)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--load", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.quick:
        args.variants, args.points = ["default"], [90.0, 100.0, 120.0]
    args.points = [int(p) if float(p).is_integer() else p for p in args.points]
    results = []
    if args.load:
        for path in args.load:
            results += json.loads(path.read_text())
        for result in results:
            print_variant(result)
    else:
        for variant in args.variants:
            results.append(run_variant(variant, args))
            print_variant(results[-1])
    if args.json:
        write_atomically(args.json, json.dumps(results, indent=1))
    if args.figure:
        draw(results, args.figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
