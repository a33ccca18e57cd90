"""VMware Cloud Director placement: engine formulas and rules on hand-computed examples, the
operations, input validation, the exact model against brute force, and the comparison."""

from __future__ import annotations

import copy
import itertools
import json
import math
from pathlib import Path

import pytest

from cpsat_rebalancer.cli import main
from cpsat_rebalancer.errors import InputError
from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.heuristics import Instance
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.vcd.engine import (
    Ranked,
    VcdEngine,
    place,
    resource_score,
    storage_score,
)
from cpsat_rebalancer.vcd.exact import build_model, compare_vcd, engine_assignment, positions
from cpsat_rebalancer.vcd.generate import generate
from cpsat_rebalancer.vcd.inputs import parse_vcd

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios" / "vcd"
OPTIONS = SolverOptions(time_limit=30)


def scenario(name: str):
    return parse_vcd(json.loads((SCENARIOS / f"{name}.json").read_text()))


def by_vm(decisions):
    return {d.vm: d for d in decisions}


# ------------------------------------------------------------------ score formulas


def test_resource_scores_by_hand():
    s = resource_score(unreserved=10000, requirement=2000, burst=3000, undeployed=4000,
                       burst_ratio=0.67, future_ratio=0.5, weight=0.5)
    assert s.reservation == pytest.approx(5.0)  # 10000 / 2000
    assert s.capacity == pytest.approx((10000 - 3000 * 0.67) / 2000)  # 3.995
    assert s.future == pytest.approx((10000 - 4000 * 0.5) / 2000)  # 4.0
    assert s.weighted == pytest.approx(0.5 * 3.995 + 0.5 * 4.0)


def test_weight_moves_between_current_and_future():
    only_current = resource_score(8000, 1000, 2000, 6000, 0.5, 1.0, weight=1.0)
    only_future = resource_score(8000, 1000, 2000, 6000, 0.5, 1.0, weight=0.0)
    assert only_current.weighted == pytest.approx(7.0)  # (8000 - 1000) / 1000
    assert only_future.weighted == pytest.approx(2.0)  # (8000 - 6000) / 1000


def test_reservation_score_replaces_missing_inputs_and_zero_requirement_never_binds():
    s = resource_score(6000, 2000, None, 0.0, 0.67, 0.5, 0.5)
    assert s.capacity == s.future == s.weighted == pytest.approx(3.0)
    assert resource_score(6000, 0, 100, 100, 0.67, 0.5, 0.5).weighted == math.inf
    assert storage_score(300.0, 100.0).weighted == pytest.approx(3.0)
    assert storage_score(300.0, 0.0).weighted == math.inf


def _ranked(name: str, kind: str, yellow: bool, score: float) -> Ranked:
    return Ranked(name, kind, yellow, (score,), {}, {}, [])


def _engine(**tunables) -> VcdEngine:
    data = _base()
    data["tunables"] = tunables
    return VcdEngine(parse_vcd(data))


def test_list_order_then_health_then_score():
    """yellowClusters 'withinLists' (the old reading): health sorts inside each list; the
    default 'lastResort' puts every yellow cluster after every healthy one."""
    ranked = [_ranked("avoid-best", "avoid", False, 99), _ranked("acc-yellow", "acceptable",
              True, 9), _ranked("nohead", "noHeadroom", False, 50),
              _ranked("acc-green-low", "acceptable", False, 2),
              _ranked("pref-yellow", "preferred", True, 1),
              _ranked("acc-green-high", "acceptable", False, 3),
              _ranked("acc-green-tie", "acceptable", False, 3)]
    assert [r.cluster for r in _engine(yellowClusters="withinLists").order(ranked)] == [
        "pref-yellow", "acc-green-high", "acc-green-tie", "acc-green-low", "acc-yellow",
        "nohead", "avoid-best"]
    assert [r.cluster for r in _engine().order(ranked)] == [
        "acc-green-high", "acc-green-tie", "acc-green-low", "nohead", "avoid-best",
        "pref-yellow", "acc-yellow"]


def test_cluster_score_is_the_most_constrained_resource_and_headroom_lists():
    s = scenario("yellow_headroom")
    first = place(s)[0]
    # v1 needs 2000 MHz, 16384 MB: roomy 24000/2000 = 12 (CPU), 57344/16384 = 3.5 (memory)
    roomy = next(r for r in first.ranking if r.cluster == "roomy")
    assert roomy.scores["cpu"].weighted == pytest.approx(12.0)
    assert roomy.scores["memory"].weighted == pytest.approx(3.5)
    assert roomy.score == pytest.approx(3.5)
    # tight has 24576 MB unreserved, not above 0.2 * 131072: no headroom; sick is yellow
    assert [(r.cluster, r.list, r.yellow) for r in first.ranking] == [
        ("roomy", "acceptable", False), ("tight", "noHeadroom", False),
        ("sick", "acceptable", True)]
    assert (first.cluster, first.datastore) == ("roomy", "ds-roomy")


def test_preferred_and_avoid_lists_from_vm_host_rules():
    data = json.loads((SCENARIOS / "yellow_headroom.json").read_text())
    data["rules"] = {"vmHost": [{"name": "near", "type": "should", "vms": ["v1"],
                                 "clusters": ["tight"]},
                                {"name": "far", "type": "shouldNot", "vms": ["v1"],
                                 "clusters": ["roomy"]}]}
    first = place(parse_vcd(data))[0]
    # tight is preferred but short of headroom, which is checked first: no-headroom list
    assert [(r.cluster, r.list) for r in first.ranking] == [
        ("tight", "noHeadroom"), ("roomy", "avoid"), ("sick", "acceptable")]
    assert first.cluster == "tight"
    data["clusters"][0]["memory"]["unreserved"] = 32768  # now with headroom: preferred
    first = place(parse_vcd(data))[0]
    assert [(r.cluster, r.list) for r in first.ranking][0] == ("tight", "preferred")


# ------------------------------------------------------------------ operations


def test_create_places_one_at_a_time_and_reports_not_possible():
    decisions = by_vm(place(scenario("fragmentation")))
    # big (6 GB) goes to c1 (10 GB free: 10/6 beats 8/6); mid1 then only fits c2
    assert (decisions["big"].cluster, decisions["mid1"].cluster) == ("c1", "c2")
    assert decisions["mid2"].outcome == "not possible"
    assert "c1: memory reservation 5120 > unreserved 4096" in decisions["mid2"].reason
    assert "c2: memory reservation 5120 > unreserved 3072" in decisions["mid2"].reason
    assert decisions["small"].cluster == "c1" and decisions["small"].network_pool == "pool-a"


def test_power_on_stays_when_it_fits_and_retries_elsewhere_otherwise():
    decisions = by_vm(place(scenario("power_on")))
    assert (decisions["p1"].outcome, decisions["p1"].cluster) == ("stayed", "home")
    # after p1, home has 20480 - 8192 = 12288 MB unreserved < 16384: p2 moves, home excluded
    assert (decisions["p2"].outcome, decisions["p2"].cluster) == ("placed", "away")
    assert "unreserved 12288" in decisions["p2"].reason
    assert decisions["p2"].rejected["home"].startswith("a pool the VM failed")
    assert len(decisions["p2"].attempts) == 2  # the pool is tried twice
    assert (decisions["p3"].outcome, decisions["p3"].cluster) == ("stayed", "away")


def test_import_keeps_satisfactory_placements_ignoring_thresholds():
    decisions = by_vm(place(scenario("import")))
    assert (decisions["imp-red"].outcome, decisions["imp-red"].datastore) == ("kept", "ds-red")
    assert decisions["imp-policy"].outcome == "placed"
    assert decisions["imp-policy"].datastore == "ds-plain"
    assert "storage policy 'standard' not offered" in decisions["imp-policy"].reason
    assert (decisions["imp-old"].outcome, decisions["imp-old"].cluster) == ("placed", "new")
    # a created VM never lands on the red-threshold datastore
    assert decisions["new1"].datastore != "ds-red"


def test_iops_and_policy_filters():
    decisions = by_vm(place(scenario("storage_iops")))
    for name in ("g1", "g2", "g3"):
        assert decisions[name].datastore in ("gold-big", "gold-fast")
    assert decisions["g4"].outcome == "not possible"
    assert "IOPS 2000 > remaining" in decisions["g4"].reason
    assert {decisions[s].datastore for s in ("s1", "s2", "s3")} == {"silver-1"}


def _with(name: str, **tunables):
    data = json.loads((SCENARIOS / f"{name}.json").read_text())
    data["tunables"] = {**data.get("tunables", {}), **tunables}
    return parse_vcd(data)


def test_vm_vm_rules_rank_by_default_and_filter_when_asked():
    for mode in ("lists", "filters"):
        decisions = by_vm(place(_with("anti_affinity", vmVmRules=mode)))
        assert len({decisions[w].cluster for w in ("web1", "web2", "web3")}) == 3
    assert "anti-affinity with db1" in by_vm(place(_with("anti_affinity", vmVmRules="filters"))
                                             )["db3"].reason
    decisions = by_vm(place(_with("affinity", vmVmRules="filters")))
    assert decisions["cache1"].cluster == decisions["compute"].cluster == "cpu-rich"
    assert "affinity with compute" in decisions["cache2"].reason
    decisions = by_vm(place(scenario("affinity")))  # lists: affinity only prefers
    assert decisions["cache1"].cluster == "cpu-rich"
    assert decisions["cache2"].cluster == "mem-rich"


# ------------------------------------------------------------------ validation


def _base() -> dict:
    return json.loads((SCENARIOS / "fragmentation.json").read_text())


@pytest.mark.parametrize("mutate, path", [
    (lambda d: d["vms"][3].__setitem__("cpu", -5), "vms[3].cpu"),
    (lambda d: d["datastores"][0]["clusters"].append("nowhere"), "datastores[0].clusters[1]"),
    (lambda d: d.__setitem__("rules", {"antiAffinity": [{"name": "x", "vms": ["big", "ghost"]}]}),
     "rules.antiAffinity[0].vms[1]"),
    (lambda d: d.__setitem__("rules", {"vmHost": [{"name": "r", "vms": ["big"],
                                                   "clusters": ["c9"]}]}),
     "rules.vmHost[0].clusters[0]"),
    (lambda d: d["vms"][0].__setitem__("placement", {"cluster": "c3", "datastore": "ds1"}),
     "vms[0].placement.cluster"),
    (lambda d: d["vms"][0].__setitem__("placement", {"cluster": "c1", "datastore": "ds2"}),
     "vms[0].placement.datastore"),
    (lambda d: d["vms"][1].__setitem__("operation", "import"), "vms[1].placement"),
    (lambda d: d["clusters"][0]["memory"].__setitem__("unreserved", 99999),
     "clusters[0].memory.unreserved"),
    (lambda d: d.__setitem__("tunables", {"futureDeployRatio": 1.5}),
     "tunables.futureDeployRatio"),
    (lambda d: d["vms"].append(dict(d["vms"][0])), "vms[4].name"),
    (lambda d: d["clusters"][1].__setitem__("health", "blue"), "clusters[1].health"),
    (lambda d: d["vms"][2].__setitem__("color", "red"), "vms[2].color"),
])
def test_bad_input_names_the_field(mutate, path):
    data = _base()
    mutate(data)
    with pytest.raises(InputError) as error:
        parse_vcd(data)
    assert error.value.path == path


def test_loader_does_not_modify_its_input():
    data = _base()
    kept = copy.deepcopy(data)
    parse_vcd(data)
    build_model(parse_vcd(data))
    assert data == kept


def test_cli_bad_input_exit_code(tmp_path, capsys):
    data = _base()
    data["vms"][3]["memory"] = -1
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    assert main(["vcd", "place", str(path)]) == 2
    assert "vms[3].memory: must not be negative" in capsys.readouterr().err


# ------------------------------------------------------------------ exact model


def _brute_force_most_placed(s) -> int:
    """Most VMs any placement can place, by enumeration and direct arithmetic (no solver,
    no evaluator): capacities, static filters, IOPS, VM-VM rules when they filter. The
    scenarios given have no residents and no hosts."""
    hard_rules = s.tunables.vm_vm_rules == "filters"
    from cpsat_rebalancer.vcd.inputs import cluster_reason, datastore_reason, vm_reason

    options = []
    for vm in s.vms:
        spots = [None]
        if not vm_reason(s, vm):
            spots += [(c.name, d.name) for c in s.clusters for d in s.datastores
                      if c.name in d.clusters and not cluster_reason(s, vm, c)
                      and not datastore_reason(s, vm, d)]
        options.append(spots)
    best = 0
    for choice in itertools.product(*options):
        placed = sum(c is not None for c in choice)
        if placed <= best:
            continue
        cpu = {c.name: 0.0 for c in s.clusters}
        mem = dict(cpu)
        disk = {d.name: 0.0 for d in s.datastores}
        iops = dict(disk)
        where = {}
        for vm, spot in zip(s.vms, choice):
            if spot:
                cpu[spot[0]] += vm.cpu
                mem[spot[0]] += vm.memory
                disk[spot[1]] += vm.storage
                iops[spot[1]] += vm.iops
                where[vm.name] = spot[0]
        ok = all(cpu[c.name] <= c.cpu.unreserved and mem[c.name] <= c.memory.unreserved
                 for c in s.clusters)
        ok &= all(disk[d.name] <= d.free for d in s.datastores)
        ok &= not s.tunables.iops_enabled or all(
            d.iops_capacity is None or iops[d.name] <= d.iops_capacity for d in s.datastores)
        for members in s.anti_affinity.values() if hard_rules else ():
            spots = [where[m] for m in members if m in where]
            ok &= len(spots) == len(set(spots))
        for members in s.affinity.values() if hard_rules else ():
            ok &= len({where[m] for m in members if m in where}) <= 1
        if ok:
            best = placed
    return best


@pytest.mark.parametrize("name, mode", [
    ("fragmentation", "lists"), ("anti_affinity", "lists"), ("anti_affinity", "filters"),
    ("affinity", "lists"), ("affinity", "filters"), ("power_on", "lists"),
    ("import", "lists"), ("yellow_headroom", "lists")])
def test_exact_model_places_the_brute_force_most(name, mode):
    s = _with(name, vmVmRules=mode)
    c = compare_vcd(s, OPTIONS)
    assert c.placed_proven
    assert c.exact_placed == _brute_force_most_placed(s)


def test_model_mapping():
    data = build_model(scenario("fragmentation"))
    assert set(data["assignment"]) == {"unplaced", "c1/ds1", "c2/ds2", "c1/", "c2/"}
    assert data["assignment"]["c1/"] == ["reserved/c1"]
    # reserved by others: capacity - unreserved
    assert data["objectDimensions"]["memory"]["reserved/c1"] == 20480 - 10240
    assert data["scopes"]["cluster"] == {"c1/ds1": "c1", "c2/ds2": "c2", "c1/": "c1",
                                         "c2/": "c2"}
    assert data["scopes"]["datastore"] == {"c1/ds1": "ds1", "c2/ds2": "ds2"}
    assert {g["tuplePos"] for g in data["goals"]} == {0, 5}


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.json")), ids=lambda p: p.stem)
def test_engine_is_feasible_and_never_beats_the_optimum(path):
    s = parse_vcd(json.loads(path.read_text()))
    c = compare_vcd(s, OPTIONS)
    assert c.entry.feasible, c.entry.broken  # the engine keeps every hard rule of the model
    assert c.entry.contradiction is None
    assert c.placed_proven
    assert c.engine_placed <= c.exact_placed
    # the engine's count agrees with the exact model's evaluator at position 0
    assert c.entry.evaluation.positions[0] == c.decided - c.engine_placed


@pytest.mark.parametrize("name, mode", [
    ("fragmentation", "lists"), ("anti_affinity", "lists"), ("affinity", "filters"),
    ("storage_iops", "lists")])
def test_greedy_order_loses_vms_the_optimum_places(name, mode):
    c = compare_vcd(_with(name, vmVmRules=mode), OPTIONS)
    assert c.placed_proven
    assert c.engine_placed < c.exact_placed == len(c.scenario.vms)


def test_engine_assignment_evaluates_like_the_decisions():
    s = scenario("import")
    data = build_model(s)
    instance = Instance.from_dict(data)
    decisions = place(s)
    final = instance.problem.assignment_array(engine_assignment(s, data, decisions))
    evaluation = evaluate(instance.problem, instance.model, final)
    assert evaluation.feasible
    # the preferred position counts VMs off their current container: imp-policy and
    # imp-old moved, imp-red was kept (new1 has no preferred placement)
    moved = sum(1 for d in decisions if d.operation == "import" and d.outcome != "kept")
    assert evaluation.positions[positions(s.tunables)["preferred"]] == moved == 2


# ------------------------------------------------------------------ generator and CLI


def test_generator_is_deterministic_and_valid():
    a, b = generate(60, 6, seed=3), generate(60, 6, seed=3)
    assert a == b
    assert generate(60, 6, seed=4) != a
    s = parse_vcd(a)
    assert (len(s.acted_on), len(s.clusters), len(s.datastores)) == (60, 6, 12)
    assert len(s.vms) - len(s.acted_on) == 12  # two powered-off residents per cluster
    hosts = parse_vcd(generate(60, 6, seed=3, hosts=4))
    assert all(len(c.hosts) == 4 for c in hosts.clusters)
    assert [c.memory.unreserved for c in hosts.clusters] == [
        sum(h.memory.unreserved for h in c.hosts) for c in hosts.clusters]


def test_cli_place_compare_generate(tmp_path, capsys):
    out = tmp_path / "gen.json"
    assert main(["vcd", "generate", str(out), "--vms", "30", "--clusters", "4",
                 "--seed", "2"]) == 0
    placed = tmp_path / "placed.json"
    assert main(["vcd", "place", str(SCENARIOS / "fragmentation.json"), "--explain",
                 "--json", str(placed)]) == 0
    text = capsys.readouterr().out
    assert "not possible" in text and "filtered c1" in text
    assert main(["vcd", "place", str(SCENARIOS / "hosts.json"), "--explain"]) == 0
    assert "power-on split: attempt 2 of 2 failed" in capsys.readouterr().out
    payload = json.loads(placed.read_text())
    assert [v["vm"] for v in payload["vms"]] == ["big", "mid1", "mid2", "small"]
    exact = tmp_path / "exact.json"
    assert main(["vcd", "place", str(SCENARIOS / "fragmentation.json"), "--exact",
                 "--json", str(exact)]) == 0
    assert all(v["outcome"] == "placed" for v in json.loads(exact.read_text())["vms"])
    report = tmp_path / "cmp.json"
    assert main(["vcd", "compare", str(SCENARIOS / "fragmentation.json"), str(out),
                 "--time-limit", "3", "--json", str(report)]) == 0
    rows = json.loads(report.read_text())
    assert rows[0]["enginePlaced"] == 3 and rows[0]["exactPlaced"] == 4
    assert rows[1]["enginePlaced"] <= rows[1]["exactPlaced"]


def _json_values():
    from hypothesis import strategies as st

    leaf = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6),
                     st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5))
    return st.recursive(leaf, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
        max_leaves=6)


def _paths(value, prefix=()):
    """Every (path) into a JSON value, to replace one field with garbage."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, prefix + (index,))


def test_malformed_input_is_always_an_input_error():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    base = _base()
    base["rules"] = {"antiAffinity": [{"name": "g", "vms": ["big", "small"]}],
                     "affinity": [{"name": "a", "vms": ["mid1", "mid2"], "scope": "datastore"}],
                     "vmHost": [{"name": "r", "type": "should", "vms": ["big"],
                                 "clusters": ["c1"]}]}
    base["tunables"] = {"scoreCombination": "mean", "powerOnAttempts": 3}
    base["clusters"].append({"name": "h", "hosts": [
        {"name": "h1", "cpu": {"capacity": 9000, "unreserved": 8000},
         "memory": {"capacity": 9000, "unreserved": 8000}}]})
    base["datastores"][0]["clusters"].append("h")
    base["vms"][0].update(orgVdc="o", operation="migrate", target={"cluster": "h"},
                          placement={"cluster": "c1", "datastore": "ds1"})
    base["vms"].append({"name": "res", "operation": "resident", "powerState": "on",
                        "orgVdc": "o", "cpu": 100, "memory": 100,
                        "placement": {"cluster": "h", "datastore": "ds1", "host": "h1"}})
    assert len(place(parse_vcd(base))) == 5  # the base itself is valid
    paths = [p for p in _paths(base) if p]

    @settings(max_examples=80, deadline=None)
    @given(st.sampled_from(paths), _json_values())
    def check(path, garbage):
        data = copy.deepcopy(base)
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = garbage
        try:
            s = parse_vcd(data)
        except InputError:
            return
        place(s)  # whatever the loader accepts, the engine handles
        build_model(s)

    check()
