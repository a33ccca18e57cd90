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


def spread(**fields):
    return {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "a"}}, **fields}


def self_affinity(**fields):
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "a"}}, **fields}]}}


TERMS = "requiredDuringSchedulingIgnoredDuringExecution"


@pytest.mark.parametrize("spec, field", [
    # the selector counts q, which does not carry the spread
    ({"topologySpreadConstraints": [spread(labelSelector={"matchLabels": {"tier": "x"}})]},
     "items[1].spec.topologySpreadConstraints[0]"),
    ({"affinity": self_affinity(labelSelector={"matchLabels": {"tier": "x"}})},
     f"items[1].spec.affinity.podAffinity.{TERMS}[0]"),
    ({"affinity": {"podAffinity": {TERMS: self_affinity()["podAffinity"][TERMS] * 2}}},
     f"items[1].spec.affinity.podAffinity.{TERMS}"),
    ({"affinity": self_affinity(labelSelector=None)},
     f"items[1].spec.affinity.podAffinity.{TERMS}[0].labelSelector"),
    ({"affinity": self_affinity(namespaceSelector={})},
     f"items[1].spec.affinity.podAffinity.{TERMS}[0]"),
    ({"affinity": {"podAntiAffinity": {TERMS: [
        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "other"}}}]}}},
     f"items[1].spec.affinity.podAntiAffinity.{TERMS}[0]"),
])
def test_rules_without_an_exact_spec_are_refused(spec, field):
    """Asymmetric rules: the pods a term selects are not the pods carrying it (q matches
    tier x without carrying the rule; p carries app=other, which selects no pod)."""
    q = pod("q", labels={"tier": "x"})
    with pytest.raises(InputError) as info:
        snapshot_scenario(snapshot(node("n"), pod("p", labels={"app": "a", "tier": "x"},
                                                  **spec), q))
    assert info.value.path == field
    assert "ns/p" in str(info.value)


@pytest.mark.parametrize("fields, field", [
    ({"maxSkew": 0}, "maxSkew"), ({"maxSkew": -1}, "maxSkew"), ({"maxSkew": "1"}, "maxSkew"),
    ({"maxSkew": True}, "maxSkew"), ({"maxSkew": None}, "maxSkew"),
    ({"topologyKey": None}, "topologyKey"), ({"topologyKey": ""}, "topologyKey"),
    ({"whenUnsatisfiable": "Sometimes"}, "whenUnsatisfiable"),
    ({"whenUnsatisfiable": None}, "whenUnsatisfiable"),
    ({"minDomains": 0}, "minDomains"),
    ({"minDomains": 2, "whenUnsatisfiable": "ScheduleAnyway"}, "minDomains"),
    ({"nodeTaintsPolicy": "Maybe"}, "nodeTaintsPolicy"),
    ({"nodeAffinityPolicy": "honor"}, "nodeAffinityPolicy"),
])
def test_bad_spread_fields_name_the_pod_and_field(fields, field):
    entry = {k: v for k, v in spread(**fields).items() if v is not None}
    with pytest.raises(InputError) as info:
        snapshot_scenario(snapshot(node("n"), pod("p", labels={"app": "a"},
                                                  topologySpreadConstraints=[entry])))
    assert info.value.path == f"items[1].spec.topologySpreadConstraints[0].{field}"
    assert "ns/p" in str(info.value)


def spread_rules(scenario):
    """(constraints, goals) of topologySpreadSpec, with their scopes' mappings."""
    def found(entries):
        return [(e, scenario["scopes"][e["spec"]["topologySpreadSpec"]["scope"]])
                for e in entries if "topologySpreadSpec" in e.get("spec", {})]
    return found(scenario["constraints"]), found(scenario["goals"])


def zones():
    return [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"}),
            node("c1", labels={"zone": "c", "ssd": "1"},
                 taints=[{"key": "t", "effect": "NoSchedule"}]),
            node("x1", labels={})]


def test_a_spread_counts_its_pods_over_the_eligible_nodes():
    """The inclusion policies decide which nodes' domains count (nodeAffinityPolicy Honor
    and nodeTaintsPolicy Ignore by default); a node without the key is none of them and no
    candidate for the pods, unless one is bound there already."""
    def imported(**fields):
        pods = [pod(f"p{k}", labels={"app": "a"}, node_name=where,
                    topologySpreadConstraints=[spread(**fields)])
                for k, where in enumerate(["a1", "x1", None])]
        scenario = snapshot_scenario(snapshot(*zones(), *pods))
        (entry, scope), = spread_rules(scenario)[0]
        return entry, scope, scenario

    entry, scope, scenario = imported()
    body = entry["spec"]["topologySpreadSpec"]
    assert scope == {"a1": "a", "b1": "b", "c1": "c"}  # c1's taint is ignored
    assert body["maxSkew"] == 1 and "minDomains" not in body
    assert sorted(scenario["partitions"][body["partition"]]["members"]) == \
        ["ns/p0", "ns/p1", "ns/p2"]
    assert entry["policy"] == "DEFAULT" and entry["tuplePosIfBroken"] == 2
    blocked = forbidden(scenario)
    assert blocked["ns/p0"] == {"c1", "x1"} and blocked["ns/p2"] == {"c1", "x1"}
    assert blocked["ns/p1"] == {"c1"}  # bound to x1 before it lost its label: may stay
    assert imported(nodeTaintsPolicy="Honor")[1] == {"a1": "a", "b1": "b"}
    assert imported(minDomains=4)[0]["spec"]["topologySpreadSpec"]["minDomains"] == 4
    honoured = {"nodeSelector": {"ssd": "1"}, "tolerations": [{"operator": "Exists"}]}
    pods = [pod(f"p{k}", labels={"app": "a"}, topologySpreadConstraints=[spread()], **honoured)
            for k in range(2)]
    (_, scope), = spread_rules(snapshot_scenario(snapshot(*zones(), *pods)))[0]
    assert scope == {"c1": "c"}  # the pods' nodeSelector: only c1 counts
    pods = [pod(f"p{k}", labels={"app": "a"}, topologySpreadConstraints=[
        spread(nodeAffinityPolicy="Ignore")], **honoured) for k in range(2)]
    (_, scope), = spread_rules(snapshot_scenario(snapshot(*zones(), *pods)))[0]
    assert scope == {"a1": "a", "b1": "b", "c1": "c"}


def test_match_label_keys_split_the_count_by_the_pods_own_values():
    """Two revisions of one app, each spread on its own: the pod's value of the key is
    ANDed with the selector (so each revision's pods are exactly its carriers)."""
    pods = [pod(f"p{k}", labels={"app": "a", "hash": h},
                topologySpreadConstraints=[spread(matchLabelKeys=["hash"])])
            for k, h in enumerate("xxy")]
    scenario = snapshot_scenario(snapshot(*zones(), *pods))
    members = sorted(sorted(scenario["partitions"][e["spec"]["topologySpreadSpec"][
        "partition"]]["members"]) for e, _ in spread_rules(scenario)[0])
    assert members == [["ns/p0", "ns/p1"], ["ns/p2"]]


def test_an_empty_selector_counts_nothing_but_its_key_still_filters():
    p = pod("p", topologySpreadConstraints=[spread(labelSelector={})])
    scenario = snapshot_scenario(snapshot(*zones(), p, pod("q")))
    assert spread_rules(scenario) == ([], [])
    assert forbidden(scenario)["ns/p"] == {"c1", "x1"}


def test_a_schedule_anyway_spread_is_a_goal_after_every_repair():
    pods = [pod(f"p{k}", labels={"app": "a"}, topologySpreadConstraints=[spread(
        whenUnsatisfiable="ScheduleAnyway")]) for k in range(2)]
    scenario = snapshot_scenario(snapshot(*zones(), *pods, pod("q", labels={"app": "a"})))
    constraints, goals = spread_rules(scenario)
    assert constraints == [] and len(goals) == 1
    assert goals[0][0]["tuplePos"] == 3 and goals[0][1] == {"a1": "a", "b1": "b", "c1": "c"}
    # a preference: q counts without carrying it, and nodes without the key stay open
    assert sorted(scenario["partitions"][goals[0][0]["spec"]["topologySpreadSpec"][
        "partition"]]["members"]) == ["ns/p0", "ns/p1", "ns/q"]
    assert forbidden(scenario)["ns/p0"] == {"c1"}  # its taint only


def test_required_self_affinity_is_one_domain():
    pods = [pod(f"p{k}", labels={"app": "a"}, node_name=where, affinity=self_affinity())
            for k, where in enumerate(["a1", None])]
    scenario = snapshot_scenario(snapshot(*zones(), *pods))
    (entry,) = [c for c in scenario["constraints"] if "colocateGroupsSpec" in c["spec"]]
    body = entry["spec"]["colocateGroupsSpec"]
    assert scenario["scopes"][body["scope"]] == {"a1": "a", "b1": "b", "c1": "c"}
    assert entry["policy"] == "DEFAULT"
    assert forbidden(scenario)["ns/p1"] == {"c1", "x1"}


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


def random_spread_cluster(rng: random.Random):
    """A tiny snapshot of nodes in zones (one maybe without the label, some tainted) and
    pods of app web (one DoNotSchedule zone spread, its maxSkew, minDomains and taint
    policy drawn), of app cache (required self-affinity on the zone) and others, some
    bound; and the same as plain numbers for the brute force."""
    nodes = [{"name": f"n{k}", "zone": rng.choice(["a", "a", "b", "c", None]) if k else "a",
              "taint": rng.random() < 0.25, "cpu": rng.choice([1000, 1500, 2500])}
             for k in range(rng.randint(3, 4))]
    rule = {"maxSkew": rng.choice([1, 1, 2]), "minDomains": rng.choice([1, 1, 1, 4]),
            "honor": rng.random() < 0.3, "tolerates": rng.random() < 0.5}
    pods = []
    for k in range(5):
        app = rng.choice(["web", "web", "web", "cache", "other"])
        pods.append({"name": f"p{k}", "app": app, "cpu": rng.choice([500, 1000]),
                     "tolerates": rule["tolerates"] if app == "web" else rng.random() < 0.5,
                     "node": rng.choice([None] + [n["name"] for n in nodes])})
    items = [node(n["name"], cpu=f"{n['cpu']}m", labels={"zone": n["zone"]} if n["zone"] else {},
                  taints=[{"key": "t", "effect": "NoSchedule"}] if n["taint"] else None)
             for n in nodes]
    for p in pods:
        spec = {"tolerations": [{"key": "t", "operator": "Exists"}]} if p["tolerates"] else {}
        if p["app"] == "web":
            spec["topologySpreadConstraints"] = [spread(
                labelSelector={"matchLabels": {"app": "web"}}, maxSkew=rule["maxSkew"],
                minDomains=rule["minDomains"],
                nodeTaintsPolicy="Honor" if rule["honor"] else "Ignore")]
        if p["app"] == "cache":
            spec["affinity"] = self_affinity(labelSelector={"matchLabels": {"app": "cache"}})
        items.append(pod(p["name"], cpu=f"{p['cpu']}m", memory="1Mi", node_name=p["node"],
                         labels={"app": p["app"]}, **spec))
    return snapshot(*items), nodes, pods, rule


def spread_brute_force(nodes, pods, rule, spread_binds=True):
    """(unplaced, moved running pods), lexicographically least, by kube-scheduler's rules
    in their static form, where what running pods break at the start may stay, never
    worse: per zone, web's count less the least count over the zones of eligible nodes is
    at most maxSkew (the least is 0 with fewer zones than minDomains); cache's pods in one
    zone; web and cache pods only on nodes with a zone; taints; cpu."""
    eligible = [k for k, n in enumerate(nodes) if n["zone"] and not (
        rule["honor"] and n["taint"] and not rule["tolerates"])]
    zones = sorted({nodes[k]["zone"] for k in eligible})

    def excess(choice):
        count = dict.fromkeys(zones, 0)
        for p, c in zip(pods, choice):
            if p["app"] == "web" and c in eligible:
                count[nodes[c]["zone"]] += 1
        floor = 0 if len(zones) < rule["minDomains"] else min(count.values(), default=0)
        return [max(0, x - floor - rule["maxSkew"]) for x in count.values()]

    def cache_zones(choice):
        return len({nodes[c]["zone"] for p, c in zip(pods, choice)
                    if p["app"] == "cache" and c is not None and nodes[c]["zone"]})

    start = [None if p["node"] is None else int(p["node"][1:]) for p in pods]
    start_excess, start_zones = excess(start), cache_zones(start)
    best = None
    for choice in itertools.product([None, *range(len(nodes))], repeat=len(pods)):
        ok = True
        for k, n in enumerate(nodes):
            load = sum(p["cpu"] for p, c in zip(pods, choice) if c == k)
            if load > max(n["cpu"], sum(p["cpu"] for p in pods if p["node"] == n["name"])):
                ok = False
        for p, c in zip(pods, choice):
            if c is None or p["node"] == nodes[c]["name"]:
                continue
            if (nodes[c]["taint"] and not p["tolerates"]) or \
                    (p["app"] in ("web", "cache") and not nodes[c]["zone"]):
                ok = False
        if spread_binds and any(f > s for f, s in zip(excess(choice), start_excess)):
            ok = False
        if cache_zones(choice) > max(1, start_zones):
            ok = False
        if ok:
            moved = sum(1 for p, c in zip(pods, choice)
                        if p["node"] is not None and (c is None or nodes[c]["name"] != p["node"]))
            value = (sum(c is None for c in choice), moved)
            best = value if best is None or value < best else best
    return best


SPREAD_SEEDS = range(8)


@pytest.mark.parametrize("seed", SPREAD_SEEDS)
def test_imported_spreads_and_self_affinity_solve_to_the_brute_force_optimum(seed):
    data, nodes, pods, rule = random_spread_cluster(random.Random(f"spread {seed}"))
    result = solve_scenario(parse_scenario(snapshot_scenario(data)),
                            SolverOptions(time_limit=60, workers=1))
    assert result.status == "OPTIMAL"
    assert (round(result.objective[0]), round(result.objective[1])) == \
        spread_brute_force(nodes, pods, rule)


def test_the_spread_binds_in_some_of_those_clusters():
    """Without the spread the optimum differs in some drawn clusters: the test above sees
    the spread at work."""
    differs = 0
    for seed in SPREAD_SEEDS:
        _, nodes, pods, rule = random_spread_cluster(random.Random(f"spread {seed}"))
        differs += spread_brute_force(nodes, pods, rule) != \
            spread_brute_force(nodes, pods, rule, spread_binds=False)
    assert differs >= 2


@pytest.mark.parametrize("domains, max_skew, min_domains",
                         [(2, 1, 1), (3, 1, 1), (3, 2, 1), (3, 1, 4), (4, 1, 2), (2, 3, 3)])
def test_the_static_spread_is_what_a_scheduler_reaches(domains, max_skew, min_domains):
    """kube-scheduler admits a pod to domain d when count(d) + 1 - min <= maxSkew (the min
    over the domains, 0 with fewer domains than minDomains). The counts it reaches from an
    empty cluster, one pod at a time, are exactly those where every domain is within
    maxSkew of the minimum: the static form the importer compiles (docs/kubernetes.md)."""
    def floor(counts):
        return 0 if domains < min_domains else min(counts)

    most = 5
    reached = {(0,) * domains}
    frontier = list(reached)
    while frontier:
        counts = frontier.pop()
        for d in range(domains):
            if counts[d] < most and counts[d] + 1 - floor(counts) <= max_skew:
                grown = counts[:d] + (counts[d] + 1,) + counts[d + 1:]
                if grown not in reached:
                    reached.add(grown)
                    frontier.append(grown)
    static = {counts for counts in itertools.product(range(most + 1), repeat=domains)
              if all(x - floor(counts) <= max_skew for x in counts)}
    assert reached == static


# --------------------------------------------------------------------------- bundled


def test_the_bundled_snapshots_are_what_their_generator_writes():
    spec = importlib.util.spec_from_file_location("generate", BUNDLED / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.text() == (BUNDLED / "snapshot.json").read_text()
    assert module.spread_text() == (BUNDLED / "spread.json").read_text()


def test_the_bundled_spread_snapshot_solves_as_its_rules_say(tmp_path):
    """api: zone a one over at the start, so its pending replica goes to zone b; queue:
    the tainted zone c counts with no pod (nodeTaintsPolicy Ignore), so one replica per
    zone and one of three stays pending; cache: its pending replica joins zone b."""
    out = tmp_path / "spread.json"
    run = subprocess.run([sys.executable, "-m", "cpsat_rebalancer.cli", "import", "kubernetes",
                          str(BUNDLED / "spread.json"), str(out)],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    scenario = json.loads(out.read_text())
    assert scenario == kubernetes_scenario(BUNDLED / "spread.json")
    result = solve_scenario(parse_scenario(scenario), SolverOptions(time_limit=60, workers=1))
    assert result.status == "OPTIMAL" and result.final_evaluation.feasible
    where = {pod: node for node, pods in result.assignment.items() for pod in pods}
    zone = {"web-a1": "a", "web-a2": "a", "web-b1": "b", "web-b2": "b", "infra-c1": "c"}
    assert zone.get(where["prod/api-4"]) == "b" and zone.get(where["prod/cache-1"]) == "b"
    queues = sorted(zone.get(where[f"prod/queue-{k}"], where[f"prod/queue-{k}"])
                    for k in range(3))
    assert queues == [UNPLACED, "a", "b"]
    assert round(result.objective[0]) == 1 and round(result.objective[1]) == 0


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
