"""The physical-GPU model: solved optimum against brute force over GPU-level placements on
tiny clusters (a few nodes of 1-4 GPUs, pods of fractional and whole GPUs), and the openb
trace read into the same shape."""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from cpsat_rebalancer.api import solve_scenario
from cpsat_rebalancer.errors import InputError
from cpsat_rebalancer.gpu_sharing import GPU, gpu_request, openb_scenario, physical_gpus
from cpsat_rebalancer.kubernetes import UNPLACED, kubernetes_scenario, snapshot_scenario
from cpsat_rebalancer.scenario import SolverOptions, parse_scenario

# the shared data folder beside the project (../shared/data), read in place
TRACE = Path(__file__).resolve().parents[2] / "shared" / "data" / "traces" / \
    "alibaba_openb_gpu2023" / "csv"
BUNDLED = Path(__file__).resolve().parents[1] / "scenarios" / "kubernetes" / "snapshot.json"
SHARES = [0, 0.25, 0.5, 0.6, 0.75, 1, 1, 2, 3, 4]


def node_fits(pods: list[dict], gpus: int, cpu: int) -> bool:
    """Whether the pods fit one node: cpu, and some choice of GPUs per pod (a share on one
    GPU, k whole GPUs on k distinct GPUs) keeping every GPU within 1000 milli."""
    if sum(p["cpu"] for p in pods) > cpu:
        return False
    options = []
    for p in pods:
        k, milli = gpu_request(p["gpu"], "")
        if k == 0:
            options.append([()])
        else:
            options.append([(c, milli) for c in itertools.combinations(range(gpus), k)])
    for choice in itertools.product(*options):
        used = [0] * gpus
        for entry in choice:
            if entry:
                for g in entry[0]:
                    used[g] += entry[1]
        if all(u <= 1000 for u in used):
            return True
    return False


def random_case(rng: random.Random):
    nodes = [{"name": f"n{k}", "gpus": rng.randint(1, 4), "cpu": rng.choice([4, 8])}
             for k in range(rng.randint(1, 3))]
    pods = [{"name": f"p{k}", "gpu": rng.choice(SHARES), "cpu": rng.choice([1, 2]),
             "node": None} for k in range(rng.randint(3, 6))]
    for p in pods:  # bind some pods where they fit on their own GPUs
        n = rng.choice([None, *nodes])
        if n is not None and node_fits([q for q in pods if q["node"] == n["name"]] + [p],
                                       n["gpus"], n["cpu"]):
            p["node"] = n["name"]
    items = []
    for n in nodes:
        items.append({"kind": "Node", "metadata": {"name": n["name"]}, "status": {
            "allocatable": {"cpu": str(n["cpu"]), "memory": "64Gi", "pods": "100",
                            GPU: str(n["gpus"])}}})
    for p in pods:
        requests = {"cpu": str(p["cpu"]), "memory": "1Gi"}
        if p["gpu"]:
            requests[GPU] = "1"
        spec = {"containers": [{"name": "c", "resources": {"requests": requests}}]}
        if p["node"]:
            spec["nodeName"] = p["node"]
        items.append({"kind": "Pod", "metadata": {"name": p["name"], "namespace": "ns"},
                      "spec": spec})
    scenario = snapshot_scenario({"kind": "List", "items": items})
    scenario["objectDimensions"][GPU] = {f"ns/{p['name']}": p["gpu"] for p in pods if p["gpu"]}
    return scenario, nodes, pods


def brute_force(nodes, pods):
    best = None
    for choice in itertools.product([None, *range(len(nodes))], repeat=len(pods)):
        if all(node_fits([p for p, c in zip(pods, choice) if c == k], n["gpus"], n["cpu"])
               for k, n in enumerate(nodes)):
            moved = sum(1 for p, c in zip(pods, choice)
                        if p["node"] and (c is None or nodes[c]["name"] != p["node"]))
            value = (sum(c is None for c in choice), moved)
            best = value if best is None or value < best else best
    return best


@pytest.mark.parametrize("seed", range(14))
def test_physical_gpus_solve_to_the_brute_force_optimum(seed):
    scenario, nodes, pods = random_case(random.Random(seed))
    result = solve_scenario(parse_scenario(physical_gpus(scenario)),
                            SolverOptions(time_limit=60, workers=1))
    assert result.status == "OPTIMAL"
    assert (round(result.objective[0]), round(result.objective.get(1, 0))) == \
        brute_force(nodes, pods)
    assert result.final_evaluation.feasible


def test_shares_are_per_gpu_where_the_node_total_is_not():
    """Three 0.6 shares on one node of 2 GPUs: the node-level model places all three (1.8 of
    2 GPUs), the physical one two."""
    items = [{"kind": "Node", "metadata": {"name": "g"}, "status": {"allocatable": {
        "cpu": "8", "memory": "8Gi", "pods": "10", GPU: "2"}}}]
    for k in range(3):
        items.append({"kind": "Pod", "metadata": {"name": f"s{k}"}, "spec": {"containers": [
            {"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi", GPU: "1"}}}]}})
    scenario = snapshot_scenario({"kind": "List", "items": items})
    scenario["objectDimensions"][GPU] = {f"default/s{k}": 0.6 for k in range(3)}
    options = SolverOptions(time_limit=60, workers=1)
    assert solve_scenario(parse_scenario(scenario), options).objective[0] == 0
    assert solve_scenario(parse_scenario(physical_gpus(scenario)), options).objective[0] == 1


def test_the_simulator_annotations_give_shares_and_are_checked():
    def snapshot(annotations):
        return {"kind": "List", "items": [
            {"kind": "Node", "metadata": {"name": "g"}, "status": {"allocatable": {
                "cpu": "8", "memory": "8Gi", "pods": "10", GPU: "2"}}},
            {"kind": "Pod", "metadata": {"name": "s", "annotations": annotations}, "spec": {
                "containers": [{"name": "c", "resources": {"requests": {
                    "cpu": "1", "memory": "1Gi", GPU: "1"}}}]}}]}

    share = {"alibabacloud.com/gpu-milli": "250", "alibabacloud.com/gpu-count": "1"}
    whole = {"alibabacloud.com/gpu-milli": "1000", "alibabacloud.com/gpu-count": "2"}
    assert snapshot_scenario(snapshot(share))["objectDimensions"][GPU] == {"default/s": 0.25}
    assert snapshot_scenario(snapshot(whole))["objectDimensions"][GPU] == {"default/s": 2}
    for bad in ({"alibabacloud.com/gpu-milli": "x"},
                {"alibabacloud.com/gpu-milli": "500", "alibabacloud.com/gpu-count": "2"}):
        with pytest.raises(InputError) as info:
            snapshot_scenario(snapshot(bad))
        assert info.value.path == "items[1].metadata.annotations"


def test_gpu_requests_above_one_must_be_whole():
    assert gpu_request(0.25, "x") == (1, 250) and gpu_request(3, "x") == (3, 1000)
    with pytest.raises(InputError):
        gpu_request(1.5, "objectDimensions.nvidia.com/gpu.p")


@pytest.mark.skipif(not TRACE.exists(), reason="the openb trace is not on this machine")
def test_the_openb_trace_reads_into_the_kubernetes_shape():
    scenario = openb_scenario(TRACE / "openb_node_list_gpu_node.csv",
                              TRACE / "openb_pod_list_gpuspec33.csv", limit=300)
    assert len(scenario["assignment"][UNPLACED]) == 300
    parsed = parse_scenario(scenario)
    assert parsed.problem.num_objects == 300
    shares = [v for v in scenario["objectDimensions"][GPU].values() if v < 1]
    assert shares and all(0 < v < 1 for v in shares)
    avoided = next(c for c in scenario["constraints"]
                   if "avoidAssignmentsSpec" in c["spec"])["spec"]["avoidAssignmentsSpec"]
    assert avoided["assignments"]  # GPU model constraints of the gpuspec variant
    parse_scenario(physical_gpus(scenario))


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "cpsat_rebalancer.cli", *args],
                          capture_output=True, text=True, check=False)


def test_the_import_command_writes_the_physical_model_and_refuses_misplaced_options(tmp_path):
    out = tmp_path / "physical.json"
    run = run_cli("import", "kubernetes", str(BUNDLED), str(out), "--physical-gpus")
    assert run.returncode == 0, run.stderr
    scenario = json.loads(out.read_text())
    assert scenario == physical_gpus(kubernetes_scenario(BUNDLED))
    assert "gpu-b1/gpu7" in scenario["assignment"] and "gpu 7" in scenario[
        "dynamicObjectDimensions"]
    run = run_cli("import", "gap", str(BUNDLED), str(tmp_path / "x.json"), "--limit", "3")
    assert run.returncode == 2 and "--limit" in run.stderr
    run = run_cli("import", "openb", str(BUNDLED), str(tmp_path / "y.json"))
    assert run.returncode == 2 and "--nodes" in run.stderr
