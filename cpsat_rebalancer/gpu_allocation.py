"""The experiment of "Beware of Fragmentation" (USENIX ATC '23) with the best possible
placement beside it (docs/kubernetes.md#the-papers-experiment).

Pods of an ``openb`` trace arrive one by one, the trace inflated until the GPU requests
reach a multiple of the cluster's GPUs (:func:`inflate`, as the paper's simulator tunes its
workload); each ATC'23 policy places them online (:func:`simulate`, the ``atc-*``
heuristics). At each arrival point (:func:`arrival_points`) the GPU requests a policy has
allocated are set against the most any placement of the same arrived pods can allocate:
an upper bound from an aggregated integer relaxation (:func:`allocation_bound`) and a lower
bound from placements checked GPU by GPU (:func:`check_placement`): the policies' own and
offline packings (:func:`pack_offline`, :func:`fill_nodes`, :func:`fill_by_patterns`).
Where the two meet the maximum is proven; else the bound and the gap are what is known.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from ortools.sat.python import cp_model

from .cpsat_parameters import new_solver
from .errors import InputError, InternalError
from .gpu_sharing import MILLI, NODE_COLUMNS, POD_COLUMNS, read_rows, slot, trace_scenario
from .heuristics import Instance
from .heuristics.gpushare import GpuSharePolicy, Pod
from .kubernetes import UNPLACED

TRACE_ORDERS = ("shuffled", "trace")
DFF_STEPS = (1, 2, 3, 4, 5)  # the dual feasible functions u^(q) the bound's cuts use


@dataclass(frozen=True)
class Node:
    name: str
    cpu: int  # milli-CPU
    memory: int  # MiB
    gpus: int
    model: str


@dataclass(frozen=True)
class TracePod:
    """A pod of the trace: ``count`` GPUs of ``milli`` each (a share of one GPU when
    ``milli`` < 1000); ``spec`` the GPU models it accepts, ``|``-separated ("" any)."""

    name: str
    cpu: int
    memory: int
    count: int
    milli: int
    spec: str
    creation: int
    copy: bool = False  # sampled again by the inflation

    @property
    def total_milli(self) -> int:
        return self.count * self.milli

    def accepts(self, model: str) -> bool:
        return not self.spec or model in self.spec.split("|")


@dataclass
class Placement:
    """Where each pod of a sequence went: ``node[i]`` its node index (-1: not placed),
    ``gpus[i]`` the GPU indices it holds there."""

    node: np.ndarray
    gpus: list[tuple[int, ...]]

    def allocated(self, pods: list[TracePod], arrived: int | None = None) -> int:
        """Milli-GPUs allocated to the first ``arrived`` pods (all by default)."""
        end = len(pods) if arrived is None else arrived
        return sum(p.total_milli for p, n in zip(pods[:end], self.node[:end]) if n >= 0)

    def prefix(self, arrived: int) -> Placement:
        return Placement(self.node[:arrived].copy(), self.gpus[:arrived])


# --------------------------------------------------------------------------- the trace


def read_trace(nodes_csv: str | Path, pods_csv: str | Path
               ) -> tuple[list[Node], list[TracePod]]:
    """The nodes and pods of the openb trace files."""
    nodes = [Node(r["sn"], int(r["cpu_milli"]), int(r["memory_mib"]), int(r["gpu"]),
                  r["model"]) for r in read_rows(nodes_csv, NODE_COLUMNS)]
    pods = []
    for k, r in enumerate(read_rows(pods_csv, POD_COLUMNS)):
        count, milli = int(r["num_gpu"]), int(r["gpu_milli"])
        if count > 1 and milli != MILLI:
            raise InputError(f"{pods_csv}:{k + 2}.gpu_milli",
                             "a pod of several GPUs takes them whole (1000)", milli)
        pods.append(TracePod(r["name"], int(r["cpu_milli"]), int(r["memory_mib"]), count,
                             milli if count else 0, r["gpu_spec"], int(r["creation_time"])))
    return nodes, pods


def gpu_capacity(nodes: list[Node]) -> int:
    """Milli-GPUs of the cluster."""
    return MILLI * sum(n.gpus for n in nodes)


def inflate(pods: list[TracePod], capacity: int, ratio: float, seed: int,
            order: str = "shuffled") -> list[TracePod]:
    """The arriving pods, as the simulator tunes a workload (``TunePodsByNodeTotalResource``):
    all the trace's pods, then pods drawn uniformly (with replacement) from the trace and
    appended while the GPU requests stay within ``ratio`` x ``capacity`` milli-GPUs (or, if
    the trace asks more, pods drawn and dropped until they fit). ``order``: ``shuffled``
    (the paper's runs: by name, then shuffled) or ``trace`` (the trace's pods by creation
    time, then the drawn ones as drawn)."""
    if order not in TRACE_ORDERS:
        raise InputError("order", f"expected one of {', '.join(TRACE_ORDERS)}", order)
    rng = random.Random(seed)
    workload = sorted(pods, key=lambda p: p.name)
    arrived = list(workload)
    total = sum(p.total_milli for p in arrived)
    target = ratio * capacity
    if total > target:
        while total > target and arrived:
            total -= arrived.pop(rng.randrange(len(arrived))).total_milli
    else:
        for k in range(len(workload) * 100 + 1):
            drawn = workload[rng.randrange(len(workload))]
            if total + drawn.total_milli > target:
                break
            arrived.append(replace(drawn, name=f"{drawn.name}-tuned-{k}", copy=True))
            total += drawn.total_milli
    if order == "shuffled":
        arrived.sort(key=lambda p: p.name)
        rng.shuffle(arrived)
    else:
        originals = sorted((p for p in arrived if not p.copy),
                           key=lambda p: (p.creation, p.name))
        arrived = originals + [p for p in arrived if p.copy]
    return arrived


def arrival_points(pods: list[TracePod], capacity: int, percents: list[float]
                   ) -> list[int]:
    """Per percent x, how many pods have arrived when their GPU requests first reach x% of
    the capacity (all of them if they never do)."""
    reached = np.cumsum([p.total_milli for p in pods])
    return [min(int(np.searchsorted(reached, x / 100 * capacity, side="left")) + 1, len(pods))
            for x in percents]


def paper_typical(pods: list[TracePod], threshold: float = 95) -> list[tuple[Pod, int]]:
    """FGD's typical pods as the simulator takes them (``GetTypicalPods`` with its
    defaults): the shapes (cpu, GPU count, share) of the trace's pods, CPU-only ones
    included, most frequent first, until they cover ``threshold`` % of the pods; weights
    are the counts. Ties in count go by shape."""
    shapes = Counter((p.cpu, p.count, p.milli) for p in pods)
    ranked = sorted(shapes.items(), key=lambda item: (-item[1], item[0]))
    typical, covered = [], 0
    for key, count in ranked:
        if covered >= threshold / 100 * len(pods):
            break
        typical.append((Pod(*key), count))
        covered += count
    return typical


# --------------------------------------------------------------------------- online


def scenario_of(nodes: list[Node], pods: list[TracePod], name: str) -> dict:
    """The node-level scenario of the pods arriving in order (all pending)."""
    node_rows = [{"sn": n.name, "cpu_milli": n.cpu, "memory_mib": n.memory, "gpu": n.gpus,
                  "model": n.model} for n in nodes]
    pod_rows = [{"name": p.name, "cpu_milli": p.cpu, "memory_mib": p.memory,
                 "num_gpu": p.count, "gpu_milli": p.milli, "gpu_spec": p.spec}
                for p in pods]
    return trace_scenario(node_rows, pod_rows, name,
                          f"{len(pods)} pods arriving in order on {len(nodes)} nodes")


def simulate(nodes: list[Node], pods: list[TracePod], policy: str, seed: int,
             typical: list[tuple[Pod, int]] | None = None, ties: str = "name") -> Placement:
    """Run the ``atc-*`` heuristic ``policy`` on the pods in arrival order: each placed
    online, so the placement of the first n pods is where they stood when the n-th
    arrived. ``ties``: :class:`GpuSharePolicy`'s tie-break."""
    instance = Instance.from_dict(scenario_of(nodes, pods, policy))
    heuristic = GpuSharePolicy(policy, seed, typical, ties)
    final = heuristic.assign(instance)
    problem = instance.problem
    node_index = {n.name: k for k, n in enumerate(nodes)}
    object_of = {name: k for k, name in enumerate(problem.objects)}
    held = heuristic.details["held"]
    where = np.full(len(pods), -1, dtype=np.int64)
    gpus: list[tuple[int, ...]] = []
    for i, pod in enumerate(pods):
        obj = object_of[pod.name]
        container = problem.containers[int(final[obj])]
        if container != UNPLACED:
            where[i] = node_index[container]
        gpus.append(tuple(held.get(obj, ())) if container != UNPLACED else ())
    return Placement(where, gpus)


# --------------------------------------------------------------------------- checking


def check_placement(nodes: list[Node], pods: list[TracePod], placement: Placement
                    ) -> list[str]:
    """What a placement breaks, GPU by GPU, independently of the heuristics' bookkeeping:
    cpu and memory per node; a share on one GPU, k whole GPUs on k distinct GPUs of the
    node; at most 1000 milli on each GPU; the GPU model."""
    problems = []
    cpu = np.zeros(len(nodes), dtype=np.int64)
    memory = np.zeros(len(nodes), dtype=np.int64)
    used: dict[tuple[int, int], int] = {}
    for pod, n, gpus in zip(pods, placement.node, placement.gpus):
        if n < 0:
            if gpus:
                problems.append(f"{pod.name}: not placed but holds GPUs")
            continue
        node = nodes[n]
        cpu[n] += pod.cpu
        memory[n] += pod.memory
        if not pod.accepts(node.model):
            problems.append(f"{pod.name}: GPU model {node.model} not in {pod.spec}")
        if len(set(gpus)) != pod.count or len(gpus) != pod.count or \
                any(not 0 <= g < node.gpus for g in gpus):
            problems.append(f"{pod.name}: holds GPUs {gpus} of {node.name} "
                            f"({node.gpus} GPUs), asks {pod.count}")
        for g in gpus:
            used[n, g] = used.get((n, g), 0) + pod.milli
    for k, node in enumerate(nodes):
        if cpu[k] > node.cpu or memory[k] > node.memory:
            problems.append(f"{node.name}: cpu {cpu[k]}/{node.cpu}, "
                            f"memory {memory[k]}/{node.memory}")
    problems += [f"{nodes[n].name} GPU {g}: {milli} milli" for (n, g), milli in used.items()
                 if milli > MILLI]
    return problems


def physical_assignment(nodes: list[Node], pods: list[TracePod], placement: Placement
                        ) -> dict[str, list[str]]:
    """The placement as an assignment of :func:`gpu_sharing.physical_gpus` of
    :func:`scenario_of` (so the project's evaluator can judge it): a GPU pod in the slot
    of its first GPU, the GPUs of each node renumbered so every pod's whole GPUs are
    consecutive (GPUs of a node are alike); a pod without GPUs on the node itself."""
    assignment: dict[str, list[str]] = {UNPLACED: []}
    for n in nodes:
        assignment[n.name] = []
        assignment.update({slot(n.name, g): [] for g in range(n.gpus)})
    renumbered: dict[int, dict[int, int]] = {}
    held = sorted(range(len(pods)), key=lambda i: -len(placement.gpus[i]))
    for i in held:  # whole GPUs first, each pod's in a block
        n = int(placement.node[i])
        if n < 0 or not placement.gpus[i]:
            continue
        numbers = renumbered.setdefault(n, {})
        for g in placement.gpus[i]:
            numbers.setdefault(g, len(numbers))
    for i, pod in enumerate(pods):
        n = int(placement.node[i])
        if n < 0:
            assignment[UNPLACED].append(pod.name)
        elif not placement.gpus[i]:
            assignment[nodes[n].name].append(pod.name)
        else:
            first = min(renumbered[n][g] for g in placement.gpus[i])
            assignment[slot(nodes[n].name, first)].append(pod.name)
    return assignment


# --------------------------------------------------------------------------- offline


def pack_offline(nodes: list[Node], pods: list[TracePod], order: str = "largest"
                 ) -> Placement:
    """A placement of the GPU pods knowing them all: best fit, pods in decreasing GPU
    request (``largest``) or decreasing GPU request per cpu (``densest``); a share goes on
    the GPU it leaves least room on, whole GPUs on the node with the fewest free GPUs left
    (ties: least cpu left). CPU-only pods are left out: they allocate no GPU."""
    cpu_left = np.array([n.cpu for n in nodes], dtype=np.int64)
    memory_left = np.array([n.memory for n in nodes], dtype=np.int64)
    width = max((n.gpus for n in nodes), default=0)
    gpu_left = np.zeros((len(nodes), width), dtype=np.int64)
    for k, n in enumerate(nodes):
        gpu_left[k, :n.gpus] = MILLI
    models = np.array([n.model for n in nodes])
    accepts: dict[str, np.ndarray] = {}
    where = np.full(len(pods), -1, dtype=np.int64)
    gpus: list[tuple[int, ...]] = [()] * len(pods)
    if order == "largest":
        key = [(-p.total_milli, p.cpu, i) for i, p in enumerate(pods)]
    else:
        key = [(-p.total_milli / max(p.cpu, 1), -p.total_milli, i) for i, p in enumerate(pods)]
    for *_, i in sorted(key):
        pod = pods[i]
        if not pod.count:
            continue
        if pod.spec not in accepts:
            accepts[pod.spec] = np.array([pod.accepts(m) for m in models], dtype=bool)
        ok = accepts[pod.spec] & (cpu_left >= pod.cpu) & (memory_left >= pod.memory)
        if pod.milli == MILLI:
            free = (gpu_left == MILLI).sum(axis=1)
            candidates = np.flatnonzero(ok & (free >= pod.count))
            if not len(candidates):
                continue
            pick = np.lexsort((cpu_left[candidates], free[candidates]))[0]
            n = int(candidates[pick])
            taken = tuple(int(g) for g in np.flatnonzero(gpu_left[n] == MILLI)[:pod.count])
            gpu_left[n, list(taken)] = 0
        else:
            rows, cols = np.nonzero(ok[:, None] & (gpu_left >= pod.milli))
            if not len(rows):
                continue
            pick = np.lexsort((cpu_left[rows], gpu_left[rows, cols]))[0]
            n, taken = int(rows[pick]), (int(cols[pick]),)
            gpu_left[n, taken[0]] -= pod.milli
        cpu_left[n] -= pod.cpu
        memory_left[n] -= pod.memory
        where[i], gpus[i] = n, taken
    return Placement(where, gpus)


def fill_nodes(nodes: list[Node], pods: list[TracePod]) -> Placement:
    """A placement of the GPU pods knowing them all, node by node (the nodes with the
    least cpu and memory per GPU first): each node takes, while one fits, the pod whose
    cpu and memory per milli-GPU are the smallest share of what the node has left per free
    milli-GPU (ties: the larger GPU request), whole GPUs on free GPUs, a share on the GPU
    it leaves least room on. Suits arrivals beyond the capacity, where the pods to leave
    out are those asking much cpu or memory per GPU."""
    kinds: dict[tuple, list[int]] = {}
    for i, pod in enumerate(pods):
        if pod.count:
            kinds.setdefault((pod.cpu, pod.memory, pod.count, pod.milli, pod.spec), []).append(i)
    keys = list(kinds)
    cpu = np.array([k[0] for k in keys], dtype=np.int64)
    memory = np.array([k[1] for k in keys], dtype=np.int64)
    count = np.array([k[2] for k in keys], dtype=np.int64)
    milli = np.array([k[3] for k in keys], dtype=np.int64)
    left = np.array([len(kinds[k]) for k in keys], dtype=np.int64)
    where = np.full(len(pods), -1, dtype=np.int64)
    gpus: list[tuple[int, ...]] = [()] * len(pods)
    order = sorted(range(len(nodes)), key=lambda n: (
        (nodes[n].cpu + nodes[n].memory) / max(nodes[n].gpus, 1), nodes[n].name))
    for n in order:
        node = nodes[n]
        if not node.gpus:
            continue
        accepts = np.array([pod_accepts(k[4], node.model) for k in keys], dtype=bool)
        cpu_left, memory_left = node.cpu, node.memory
        gpu_left = np.full(node.gpus, MILLI, dtype=np.int64)
        while True:
            free = int((gpu_left == MILLI).sum())
            room = np.where(milli == MILLI, free >= count,
                            (gpu_left[:, None] >= milli).any(axis=0))
            ok = (left > 0) & accepts & room & (cpu <= cpu_left) & (memory <= memory_left)
            if not ok.any():
                break
            per_milli = gpu_left.sum()
            need = np.maximum(cpu / max(cpu_left, 1), memory / max(memory_left, 1)) * \
                per_milli / (count * milli)
            candidates = np.flatnonzero(ok)
            pick = int(candidates[np.lexsort((-(count * milli)[candidates],
                                              need[candidates]))[0]])
            i = kinds[keys[pick]][len(kinds[keys[pick]]) - int(left[pick])]
            left[pick] -= 1
            if milli[pick] == MILLI:
                taken = tuple(int(g) for g in np.flatnonzero(gpu_left == MILLI)[:count[pick]])
                gpu_left[list(taken)] = 0
            else:
                fits = np.flatnonzero(gpu_left >= milli[pick])
                taken = (int(fits[np.argmin(gpu_left[fits])]),)
                gpu_left[taken[0]] -= milli[pick]
            cpu_left -= int(cpu[pick])
            memory_left -= int(memory[pick])
            where[i], gpus[i] = n, taken
    return Placement(where, gpus)


def fill_by_patterns(nodes: list[Node], pods: list[TracePod], solve_time: float = 0.5
                     ) -> Placement:
    """A placement of the GPU pods knowing them all, one node content at a time: for the
    node kinds in the order of :func:`fill_nodes`, CP-SAT picks the content of one node
    that allocates the most milli-GPUs from the pods still unplaced (exactly: cpu, memory,
    the model, shares on single GPUs, whole GPUs wholly free; among equals the one using
    the least cpu and memory), and that content is repeated on the kind's other nodes
    while the pods last. ``solve_time``: CP-SAT's deterministic time per content."""
    kinds: dict[tuple, list[int]] = {}
    for i, pod in enumerate(pods):
        if pod.count:
            kinds.setdefault((pod.cpu, pod.memory, pod.count, pod.milli, pod.spec), []).append(i)
    keys = list(kinds)
    supply = [len(kinds[k]) for k in keys]
    where = np.full(len(pods), -1, dtype=np.int64)
    gpus: list[tuple[int, ...]] = [()] * len(pods)
    by_kind: dict[tuple, list[int]] = {}
    for n, node in enumerate(nodes):
        if node.gpus:
            by_kind.setdefault((node.cpu, node.memory, node.gpus, node.model), []).append(n)
    for kind in sorted(by_kind, key=lambda t: ((t[0] + t[1]) / t[2], t)):
        waiting = by_kind[kind]
        while waiting:
            content = _node_content(nodes[waiting[0]], keys, supply, solve_time)
            if not content:
                break
            need = Counter(j for j, _ in content)
            copies = min(len(waiting), *(supply[j] // c for j, c in need.items()))
            for n in waiting[:copies]:
                for j, taken in content:
                    i = kinds[keys[j]][len(kinds[keys[j]]) - supply[j]]
                    supply[j] -= 1
                    where[i], gpus[i] = n, taken
            waiting = waiting[copies:]
    return Placement(where, gpus)


def _node_content(node: Node, keys: list[tuple], supply: list[int], solve_time: float
                  ) -> list[tuple[int, tuple[int, ...]]]:
    """The pods (kind index, GPUs held) one node of ``node``'s kind takes to allocate the
    most milli-GPUs (:func:`fill_by_patterns`); empty when none fits."""
    model = cp_model.CpModel()
    whole: dict[int, cp_model.IntVar] = {}
    share: dict[int, list[cp_model.IntVar]] = {}
    most_pods = 0
    for j, (cpu, memory, count, milli, spec) in enumerate(keys):
        if supply[j] <= 0 or count > node.gpus or cpu > node.cpu or \
                memory > node.memory or not pod_accepts(spec, node.model):
            continue
        if milli == MILLI:
            whole[j] = model.new_int_var(0, min(supply[j], node.gpus // count), "")
            most_pods += min(supply[j], node.gpus // count)
        else:
            share[j] = [model.new_int_var(0, min(supply[j], MILLI // milli), "")
                        for _ in range(node.gpus)]
            most_pods += min(supply[j], MILLI // milli) * node.gpus
    if not whole and not share:
        return []
    taken = [model.new_bool_var("") for _ in range(node.gpus)]  # wholly given, first ones
    for g in range(node.gpus - 1):
        model.add(taken[g] >= taken[g + 1])
    model.add(sum(keys[j][2] * v for j, v in whole.items()) == sum(taken))
    for g in range(node.gpus):
        model.add(sum(keys[j][3] * v[g] for j, v in share.items()) <= MILLI * (1 - taken[g]))
    counts = {**whole, **{j: sum(v) for j, v in share.items()}}
    for j in share:
        model.add(counts[j] <= supply[j])
    model.add(sum(keys[j][0] * v for j, v in counts.items()) <= node.cpu)
    model.add(sum(keys[j][1] * v for j, v in counts.items()) <= node.memory)
    allocated = sum(keys[j][2] * keys[j][3] * v for j, v in counts.items())
    # the used share of cpu and memory, in thousandths, weighs less than 1 milli-GPU
    used = sum((MILLI * keys[j][0] // node.cpu + MILLI * keys[j][1] // node.memory) * v
               for j, v in counts.items())
    model.maximize(allocated * (2 * MILLI * (most_pods + 1)) - used)
    solver = new_solver()
    solver.parameters.max_deterministic_time = solve_time
    solver.parameters.num_workers = 1
    if solver.solve(model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return []
    content: list[tuple[int, tuple[int, ...]]] = []
    free = [g for g in range(node.gpus) if solver.value(taken[g])]
    for j, v in whole.items():
        for _ in range(solver.value(v)):
            content.append((j, tuple(free[:keys[j][2]])))
            free = free[keys[j][2]:]
    for j, v in share.items():
        for g in range(node.gpus):
            content += [(j, (g,))] * solver.value(v[g])
    return content


def pod_accepts(spec: str, model: str) -> bool:
    return not spec or model in spec.split("|")


# --------------------------------------------------------------------------- the bound


def _dff(size: int, capacity: int, q: int) -> int:
    """q x u^(q)(size / capacity), rounded down where (q+1) x size / capacity is whole:
    the items of one bin of ``capacity`` sum to at most q (Fekete and Schepers' dual
    feasible function, lowered at its steps so it stays one)."""
    if size <= 0:
        return 0
    return max(-((-(q + 1) * size) // capacity) - 1, 0)


@dataclass(frozen=True)
class Bound:
    value: int  # milli-GPUs no placement of the pods exceeds
    relaxation_optimal: bool  # the relaxation was solved to its optimum (else its bound)


def allocation_bound(nodes: list[Node], pods: list[TracePod], time_limit: float = 30,
                     workers: int = 1) -> Bound:
    """An upper bound on the milli-GPUs any placement of ``pods`` allocates: nodes alike in
    (cpu, memory, GPUs, model) and pods alike in (cpu, memory, GPUs, models) are pooled,
    x[t, p] counting pods of kind p on nodes of kind t, with each kind's pooled cpu,
    memory and milli-GPUs, and cuts valid for every single node and GPU: for a dual
    feasible function u, the pods on one node (one GPU) have u-values summing to at most
    1, so those on N_t nodes (N_t x G_t GPUs) to at most N_t (N_t x G_t). Solved with
    CP-SAT (``time_limit`` in its deterministic time); when it stops early its proven
    bound is used."""
    node_kinds = Counter((n.cpu, n.memory, n.gpus, n.model) for n in nodes)
    pod_kinds = Counter((p.cpu, p.memory, p.count, p.milli, p.spec) for p in pods if p.count)
    model = cp_model.CpModel()
    x: dict[tuple, cp_model.IntVar] = {}
    for (cpu, memory, gpus, gpu_model), _ in node_kinds.items():
        for (pcpu, pmemory, count, milli, spec), demand in pod_kinds.items():
            if gpus >= count and pcpu <= cpu and pmemory <= memory and \
                    (not spec or gpu_model in spec.split("|")):
                x[(cpu, memory, gpus, gpu_model), (pcpu, pmemory, count, milli, spec)] = \
                    model.new_int_var(0, demand, "")
    by_pod: dict[tuple, list[cp_model.IntVar]] = {}
    by_node: dict[tuple, list[tuple[tuple, cp_model.IntVar]]] = {}
    for (t, p), v in x.items():
        by_pod.setdefault(p, []).append(v)
        by_node.setdefault(t, []).append((p, v))
    for p, demand in pod_kinds.items():
        model.add(sum(by_pod.get(p, [])) <= demand)
    for t, copies in node_kinds.items():
        cpu, memory, gpus, _ = t
        on = by_node.get(t, [])
        if not on:
            continue
        model.add(sum(p[0] * v for p, v in on) <= copies * cpu)
        model.add(sum(p[1] * v for p, v in on) <= copies * memory)
        model.add(sum(p[2] * p[3] * v for p, v in on) <= copies * gpus * MILLI)
        for q in DFF_STEPS:
            model.add(sum(_dff(p[0], cpu, q) * v for p, v in on) <= q * copies)
            model.add(sum(_dff(p[1], memory, q) * v for p, v in on) <= q * copies)
            model.add(sum(_dff(p[2] * p[3], gpus * MILLI, q) * v for p, v in on)
                      <= q * copies)
            model.add(sum(p[2] * _dff(p[3], MILLI, q) * v for p, v in on)
                      <= q * copies * gpus)
    total = sum(p[1][2] * p[1][3] * v for p, v in x.items())
    model.maximize(total)
    solver = new_solver()
    solver.parameters.max_deterministic_time = time_limit
    solver.parameters.num_workers = workers
    status = solver.solve(model)
    if status == cp_model.OPTIMAL:
        return Bound(int(round(solver.objective_value)), True)
    if status == cp_model.FEASIBLE:
        return Bound(int(np.floor(solver.best_objective_bound + 1e-6)), False)
    return Bound(sum(p.total_milli for p in pods), False)  # no answer: the requests


@dataclass(frozen=True)
class Maximum:
    """The most milli-GPUs a placement of the arrived pods allocates: ``best`` is reached
    by a checked placement (from ``source``), ``bound`` is not exceeded by any."""

    best: int
    bound: int
    source: str
    relaxation_optimal: bool

    @property
    def proven(self) -> bool:
        return self.best >= self.bound

    @property
    def gap(self) -> float:
        return (self.bound - self.best) / self.bound if self.bound else 0.0


def maximum(nodes: list[Node], pods: list[TracePod], placements: dict[str, Placement],
            time_limit: float = 30, workers: int = 1, pattern_time: float = 0.5) -> Maximum:
    """:class:`Maximum` of ``pods``: the best of the given placements (already restricted
    to these pods) and of the offline packings, each checked by :func:`check_placement`,
    against :func:`allocation_bound`; :func:`fill_by_patterns` (slower) only where those
    leave a gap."""
    bound = allocation_bound(nodes, pods, time_limit, workers)
    candidates = dict(placements)
    for order in ("largest", "densest"):
        candidates[f"offline-{order}"] = pack_offline(nodes, pods, order)
    candidates["offline-fill"] = fill_nodes(nodes, pods)
    best, source = -1, ""
    for name, placement in candidates.items():
        value = _checked_value(nodes, pods, name, placement)
        if value > best:
            best, source = value, name
    if best < bound.value and pattern_time > 0:
        placement = fill_by_patterns(nodes, pods, pattern_time)
        value = _checked_value(nodes, pods, "offline-patterns", placement)
        if value > best:
            best, source = value, "offline-patterns"
    return Maximum(best, bound.value, source, bound.relaxation_optimal)


def _checked_value(nodes: list[Node], pods: list[TracePod], name: str,
                   placement: Placement) -> int:
    problems = check_placement(nodes, pods, placement)
    if problems:
        raise InternalError(f"{name} breaks the cluster's rules: {problems[:3]}")
    return placement.allocated(pods)
