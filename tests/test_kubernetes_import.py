"""The Kubernetes snapshot importer: exact quantities, effective requests, the scheduling
filters, errors naming the object and field, the bundled snapshot round trip, and the
optimum of imported tiny clusters against brute force over Kubernetes' own rules (coded
here independently of the importer)."""

from __future__ import annotations

import copy
import importlib.util
import itertools
import json
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from cpsat_rebalancer.api import solve_scenario
from cpsat_rebalancer.errors import InputError
from cpsat_rebalancer.kubernetes import (
    UNPLACED,
    kubernetes_scenario,
    parse_quantity,
    scheduler_units,
    snapshot_scenario,
)
from cpsat_rebalancer.scenario import SolverOptions, parse_scenario

ROOT = Path(__file__).resolve().parents[1]
BUNDLED = ROOT / "scenarios" / "kubernetes"


def node(name, cpu="4", memory="8Gi", labels=None, taints=None, **allocatable):
    return {"kind": "Node", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": taints} if taints else {},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "10",
                                       **allocatable}}}


def pod(name, cpu="1", memory="1Gi", node_name=None, labels=None, **spec):
    body = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu,
                                                                    "memory": memory}}}],
            **spec}
    if node_name:
        body["nodeName"] = node_name
    return {"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "labels": labels or {}},
            "spec": body, "status": {"phase": "Running" if node_name else "Pending"}}


def snapshot(*items):
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def forbidden(scenario):
    """{pod: set of nodes} from the node-filter constraint."""
    out = {}
    for c in scenario["constraints"]:
        spec = c["spec"].get("avoidAssignmentsSpec")
        if spec:
            for entry in spec["assignments"]:
                out[entry["object"]] = set(entry["scopeItems"])
    return out


# --------------------------------------------------------------------------- quantities


@pytest.mark.parametrize("text, value", [
    ("250m", Fraction(1, 4)), ("1.5Gi", Fraction(3 * 2**29)), ("1500M", Fraction(1500 * 10**6)),
    ("2e3", Fraction(2000)), ("100Ki", Fraction(102400)), ("1E", Fraction(10**18)),
    ("1E3", Fraction(1000)), (".5", Fraction(1, 2)), ("7.", Fraction(7)),
    ("3n", Fraction(3, 10**9)),
    ("1.25e-2", Fraction(1, 80)), ("12u", Fraction(12, 10**6)), ("0.1Ti", Fraction(2**40, 10)),
    (4, Fraction(4)), ("+2k", Fraction(2000)),
])
def test_quantities_are_exact(text, value):
    assert parse_quantity(text, "q") == value


@pytest.mark.parametrize("text", ["1.5GB", "1.5e", "", "ten", "1 Gi", "1Kb", "1.2.3", "e3",
                                  True, None, [1]])
def test_unknown_quantities_are_refused_naming_the_field(text):
    with pytest.raises(InputError) as info:
        parse_quantity(text, "items[3].status.allocatable.memory")
    assert info.value.path == "items[3].status.allocatable.memory"


def test_scheduler_units_round_up_like_milli_value_and_value():
    assert scheduler_units("cpu", parse_quantity("250m", "")) == 250
    assert scheduler_units("cpu", parse_quantity("0.0001", "")) == 1
    assert scheduler_units("cpu", parse_quantity("2", "")) == 2000
    assert scheduler_units("memory", parse_quantity("1.5", "")) == 2
    assert scheduler_units("memory", parse_quantity("1.5Gi", "")) == 1610612736


# --------------------------------------------------------------------------- requests


def requests_of(item):
    data = snapshot(node("n"), item)
    dims = snapshot_scenario(data)["objectDimensions"]
    return {d: v["ns/p"] for d, v in dims.items() if "ns/p" in v}


def test_init_containers_count_as_their_maximum_against_the_sum():
    p = pod("p", cpu="1", memory="1Gi")
    p["spec"]["containers"].append({"name": "d", "resources": {"requests": {
        "cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"}}})
    p["spec"]["initContainers"] = [
        {"name": "i1", "resources": {"requests": {"cpu": "2", "memory": "100Mi"}}},
        {"name": "i2", "resources": {"requests": {"cpu": "1", "memory": "3Gi"}}}]
    p["spec"]["overhead"] = {"cpu": "100m"}
    # cpu max(1500, 2000) + 100; memory max(2Gi, 3Gi); gpu from the containers
    assert requests_of(p) == {"cpu": 2100, "memory": 3 * 2**30, "nvidia.com/gpu": 1, "pods": 1}


def test_sidecars_run_beside_the_later_init_containers_and_the_main_ones():
    p = pod("p", cpu="1", memory="1Gi")
    p["spec"]["initContainers"] = [
        {"name": "side", "restartPolicy": "Always",
         "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
        {"name": "init", "resources": {"requests": {"cpu": "3", "memory": "1Gi"}}}]
    # init runs beside the sidecar: cpu 3500, memory 2Gi; main + sidecar: 1500, 2Gi
    assert requests_of(p) == {"cpu": 3500, "memory": 2 * 2**30, "pods": 1}


# --------------------------------------------------------------------------- errors


def test_missing_requests_name_the_pod_and_field():
    p = pod("p")
    del p["spec"]["containers"][0]["resources"]["requests"]["memory"]
    with pytest.raises(InputError) as info:
        snapshot_scenario(snapshot(node("n"), p))
    assert info.value.path == "items[1].spec.containers[0].resources.requests.memory"
    assert "ns/p" in str(info.value)
    scenario = snapshot_scenario(snapshot(node("n"), p), best_effort_as_zero=True)
    assert "ns/p" not in scenario["objectDimensions"]["memory"]


def test_a_pod_bound_to_a_missing_node_names_the_pod_and_field():
    with pytest.raises(InputError) as info:
        snapshot_scenario(snapshot(node("n"), pod("p", node_name="gone")))
    assert info.value.path == "items[1].spec.nodeName" and "ns/p" in str(info.value)


def test_an_unknown_unit_names_the_node_field():
    with pytest.raises(InputError) as info:
        snapshot_scenario(snapshot(node("n", memory="1.5GB")))
    assert info.value.path == "items[0].status.allocatable.memory"


@pytest.mark.parametrize("spec, field", [
    ({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                     "labelSelector": {}}]},
     "items[1].spec.topologySpreadConstraints[0]"),
    ({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "labelSelector": {}}]}}},
     "items[1].spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution"),
    ({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "other"}}}]}}},
     "items[1].spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"),
])
def test_fields_without_an_exact_spec_are_refused(spec, field):
    with pytest.raises(InputError) as info:
        snapshot_scenario(snapshot(node("n"), pod("p", labels={"app": "a"}, **spec)))
    assert info.value.path == field


def test_a_schedule_anyway_spread_is_a_preference_and_is_imported():
    p = pod("p", topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone",
                                             "whenUnsatisfiable": "ScheduleAnyway"}])
    assert snapshot_scenario(snapshot(node("n"), p))["assignment"][UNPLACED] == ["ns/p"]


def test_bad_list_and_kind_are_named():
    with pytest.raises(InputError):
        snapshot_scenario({"items": 3})
    with pytest.raises(InputError) as info:
        snapshot_scenario(snapshot(node("n"), {"kind": "Service", "metadata": {}}))
    assert info.value.path == "items[1].kind"


# --------------------------------------------------------------------------- filters


def test_node_selector_affinity_operators_and_taints():
    nodes = [node("a", labels={"zone": "a", "gen": "3"}),
             node("b", labels={"zone": "b", "gen": "5", "ssd": "1"},
                  taints=[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
             node("c", labels={"zone": "c"},
                  taints=[{"key": "soft", "effect": "PreferNoSchedule"}])]

    def allowed(**spec):
        data = snapshot(*nodes, pod("p", **spec))
        return {"a", "b", "c"} - forbidden(snapshot_scenario(data)).get("ns/p", set())

    toleration = [{"key": "dedicated", "operator": "Equal", "value": "db",
                   "effect": "NoSchedule"}]

    def affinity(*expressions, terms=None):
        terms = terms or [{"matchExpressions": list(expressions)}]
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": terms}}}

    assert allowed() == {"a", "c"}  # b's NoSchedule taint; PreferNoSchedule only scores
    assert allowed(tolerations=toleration) == {"a", "b", "c"}
    assert allowed(tolerations=[{"operator": "Exists"}]) == {"a", "b", "c"}
    assert allowed(tolerations=[{"key": "dedicated", "value": "web"}]) == {"a", "c"}
    assert allowed(nodeSelector={"zone": "a"}) == {"a"}
    assert allowed(tolerations=toleration, affinity=affinity(
        {"key": "zone", "operator": "In", "values": ["b", "c"]})) == {"b", "c"}
    assert allowed(tolerations=toleration, affinity=affinity(
        {"key": "zone", "operator": "NotIn", "values": ["b"]})) == {"a", "c"}
    assert allowed(tolerations=toleration, affinity=affinity(
        {"key": "ssd", "operator": "Exists"})) == {"b"}
    assert allowed(tolerations=toleration, affinity=affinity(
        {"key": "ssd", "operator": "DoesNotExist"})) == {"a", "c"}
    assert allowed(tolerations=toleration, affinity=affinity(
        {"key": "gen", "operator": "Gt", "values": ["3"]})) == {"b"}
    assert allowed(tolerations=toleration, affinity=affinity(
        {"key": "gen", "operator": "Lt", "values": ["5"]})) == {"a"}
    assert allowed(tolerations=toleration, affinity=affinity(terms=[
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c"]}]}])) \
        == {"a", "c"}
    with pytest.raises(InputError) as info:
        allowed(affinity=affinity({"key": "gen", "operator": "Gt", "values": ["x"]}))
    assert info.value.path.endswith("matchExpressions[0].values")


def test_a_bound_pod_may_stay_on_a_node_it_no_longer_tolerates_unless_no_execute():
    for effect, stays in (("NoSchedule", True), ("NoExecute", False)):
        data = snapshot(node("a", taints=[{"key": "k", "effect": effect}]), node("b"),
                        pod("p", node_name="a"), pod("q"))
        blocked = forbidden(snapshot_scenario(data))
        assert blocked["ns/q"] == {"a"}
        assert blocked.get("ns/p", set()) == (set() if stays else {"a"})


# --------------------------------------------------------------------------- brute force


def random_cluster(rng: random.Random):
    """A tiny snapshot and the same cluster as plain numbers for the brute force."""
    nodes = []
    for k in range(rng.randint(2, 3)):
        zone = rng.choice("ab")
        taint = rng.random() < 0.3
        nodes.append({"name": f"n{k}", "zone": zone, "taint": taint,
                      "cpu": rng.choice([1000, 1500, 2000]), "mem": rng.choice([2, 3, 4]),
                      "gpu": rng.choice([0, 0, 1, 2])})
    pods = []
    for k in range(rng.randint(3, 5)):
        pods.append({"name": f"p{k}", "cpu": rng.choice([250, 500, 1000]),
                     "mem": rng.choice([1, 2]), "gpu": rng.choice([0, 0, 1]),
                     "zone": rng.choice([None, None, "a", "b"]), "tolerates": rng.random() < 0.5,
                     "web": rng.random() < 0.4,
                     "node": rng.choice([None] + [n["name"] for n in nodes])})
    budget = rng.choice([None, 0, 1])
    items = []
    for n in nodes:
        extra = {"nvidia.com/gpu": str(n["gpu"])} if n["gpu"] else {}
        items.append(node(n["name"], cpu=f"{n['cpu']}m", memory=f"{n['mem']}Gi",
                          labels={"zone": n["zone"], "kubernetes.io/hostname": n["name"]},
                          taints=[{"key": "t", "effect": "NoSchedule"}] if n["taint"] else None,
                          **extra))
    for p in pods:
        spec = {}
        if p["zone"]:
            spec["nodeSelector"] = {"zone": p["zone"]}
        if p["tolerates"]:
            spec["tolerations"] = [{"key": "t", "operator": "Exists"}]
        if p["web"]:
            spec["affinity"] = {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "kubernetes.io/hostname"}]}}
        item = pod(p["name"], cpu=f"{p['cpu']}m", memory=f"{p['mem']}Gi", node_name=p["node"],
                   labels={"app": "web" if p["web"] else "other"}, **spec)
        if p["gpu"]:
            item["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
        items.append(item)
    if budget is not None:
        items.append({"kind": "PodDisruptionBudget", "metadata": {"name": "b", "namespace": "ns"},
                      "spec": {"maxUnavailable": budget,
                               "selector": {"matchLabels": {"app": "web"}}}})
    return snapshot(*items), nodes, pods, budget


def brute_force(nodes, pods, budget):
    """(unplaced, moved running pods), lexicographically least, by Kubernetes' rules
    (what is broken among running pods at the start may stay so: IgnoredDuringExecution)."""
    best = None
    for choice in itertools.product([None, *range(len(nodes))], repeat=len(pods)):
        ok = True
        for k, n in enumerate(nodes):
            mine = [p for p, c in zip(pods, choice) if c == k]
            there = [p for p in pods if p["node"] == n["name"]]
            for key, cap in (("cpu", n["cpu"]), ("mem", n["mem"]), ("gpu", n["gpu"]),
                             ("web", 1)):
                # a rule broken at the start may stay broken, never worse
                if sum(p[key] for p in mine) > max(cap, sum(p[key] for p in there)):
                    ok = False
            for p in mine:
                stays = p["node"] == n["name"]
                if (p["zone"] and p["zone"] != n["zone"] and not stays) or \
                        (n["taint"] and not p["tolerates"] and not stays):
                    ok = False
        moved = [p for p, c in zip(pods, choice)
                 if p["node"] is not None and (c is None or nodes[c]["name"] != p["node"])]
        running_web = sum(1 for p in pods if p["web"] and p["node"])
        if budget is not None and sum(p["web"] for p in moved) > max(
                0, running_web - (running_web + sum(1 for p in pods if p["web"] and not p["node"])
                                  - budget)):
            ok = False
        if ok:
            value = (sum(c is None for c in choice), len(moved))
            best = value if best is None or value < best else best
    return best


@pytest.mark.parametrize("seed", range(12))
def test_imported_tiny_clusters_solve_to_the_brute_force_optimum(seed):
    data, nodes, pods, budget = random_cluster(random.Random(seed))
    result = solve_scenario(parse_scenario(snapshot_scenario(data)),
                            SolverOptions(time_limit=60, workers=1))
    assert result.status == "OPTIMAL"
    assert (round(result.objective[0]), round(result.objective[1])) == \
        brute_force(nodes, pods, budget)


# --------------------------------------------------------------------------- bundled


def test_the_bundled_snapshot_is_what_its_generator_writes():
    spec = importlib.util.spec_from_file_location("generate", BUNDLED / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.text() == (BUNDLED / "snapshot.json").read_text()


def test_the_bundled_snapshot_round_trips_through_the_command_line(tmp_path):
    out = tmp_path / "cluster.json"
    run = subprocess.run([sys.executable, "-m", "cpsat_rebalancer.cli", "import", "kubernetes",
                          str(BUNDLED / "snapshot.json"), str(out)],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    scenario = json.loads(out.read_text())
    assert scenario == kubernetes_scenario(BUNDLED / "snapshot.json")
    snap = json.loads((BUNDLED / "snapshot.json").read_text())
    bound = {f"{i['metadata']['namespace']}/{i['metadata']['name']}": i["spec"].get("nodeName")
             for i in snap["items"] if i["kind"] == "Pod"}
    for container, pods in scenario["assignment"].items():
        for name in pods:
            assert bound[name] == (None if container == UNPLACED else container)
    result = solve_scenario(parse_scenario(copy.deepcopy(scenario)),
                            SolverOptions(time_limit=60, workers=1))
    assert result.status == "OPTIMAL" and result.final_evaluation.feasible
    assert result.objective[0] < len(scenario["assignment"][UNPLACED])


def test_a_bad_snapshot_exits_2_naming_the_field(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(snapshot(node("n", cpu="2 cores"))))
    run = subprocess.run([sys.executable, "-m", "cpsat_rebalancer.cli", "import", "kubernetes",
                          str(path), str(tmp_path / "out.json")],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 2 and "items[0].status.allocatable.cpu" in run.stderr
    assert not (tmp_path / "out.json").exists()
