"""Scenarios of random shape (``shapes.random_shape_scenario``), the robustness benchmark's
instances: every drawn scenario parses, the draw covers every registered spec type and every
option the generator promises (counted over 200 seeds), it is deterministic in the seed, and
the scenario is the shape its one-line description says."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import benchmarks.robustness as robustness
from cpsat_rebalancer import InputError, parse_scenario
from cpsat_rebalancer.shapes import (
    BALANCE_DEFINITIONS,
    BALANCE_FORMULAS,
    BOUND_TYPES,
    CAPACITY_KINDS,
    GROUP_ARMS,
    MAGNITUDES,
    POLICIES,
    SIZE_KINDS,
    SPEC_ARMS,
    STARTS,
    TAILS,
    describe_shape,
    draw_shape,
    random_shape_scenario,
)
from cpsat_rebalancer.specs import REGISTRY

SEEDS = range(200)
# the draw feeds the robustness benchmark, which runs Rebalancer's wheel beside every
# shape: this project's own specs (the wheel has none of them) stay out of it
REBALANCER_ARMS = {arm: spec for arm, spec in REGISTRY.items() if spec.in_rebalancer}
SIZES = [(12, 3), (40, 6), (90, 12), (150, 40)]  # small, one per seed in turn


def drawn(seed: int) -> dict:
    return random_shape_scenario(*SIZES[seed % len(SIZES)], seed)


def entries(data: dict):
    """(arm, role, entry, body) of every goal and constraint."""
    for role in ("goal", "constraint"):
        for entry in data[role + "s"]:
            ((arm, body),) = entry["spec"].items()
            yield arm, role, entry, body


def count_options(data: dict, counts: Counter) -> None:
    """Every option of the brief that ``data`` shows, counted from the scenario itself."""
    cpu = np.asarray(list(data["objectDimensions"]["cpu"].values()))
    caps = data["containerDimensions"]["cpu"]
    for arm, role, entry, body in entries(data):
        counts[arm] += 1
        counts[arm, role] += 1
        if role == "constraint":
            counts["policy", entry["policy"]] += 1
        if arm == "balanceSpec":
            for key in ("formula", "boundType", "definition"):
                counts[key, body[key]] += 1
        if arm == "utilIncreaseCostSpec":
            counts["uic squares", body["squares"]] += 1
            counts["uic lowerBound", body["lowerBound"] > 0] += 1
        if arm == "colocateGroupsSpec":
            counts["continuous penalty", bool(body.get("useContinuousPenaltyWithOptimal"))] += 1
        if arm == "minimizeContainersSpec":
            counts["containers formula", body.get("formula", "NEW")] += 1
        if arm == "capacitySpec" and "utilizationBound" in body:
            bound = body["utilizationBound"]["groupUtilizationBound"]
            counts["utilizationBound", bound["boundType"]] += 1
            counts["utilizationBound default", "globalLimit" in bound["perGroupValues"]] += 1
    counts["levels", 1 + len(data.get("scopes", {}))] += 1
    counts["movement goal", any(arm == "minimizeMovementSpec" and role == "goal"
                                for arm, role, _, _ in entries(data))] += 1
    counts["partition", "partitions" in data] += 1
    for groups in data.get("partitions", {}).values():
        members = [o for objs in groups.values() for o in objs]
        counts["overlapping groups", len(members) > len(set(members))] += 1
    distinct = len(set(caps.values()))
    counts["capacities", {1: "equal", 2: "two"}.get(distinct, "many")] += 1
    counts["median order", int(np.floor(np.log10(np.median(cpu)) + 1e-9))] += 1
    loads = {h: sum(data["objectDimensions"]["cpu"][o] for o in objs)
             for h, objs in data["assignment"].items()}
    counts["over capacity at the start", any(loads[h] > caps[h] for h in caps)] += 1


def test_200_seeds_parse_and_cover_every_spec_and_option():
    counts: Counter = Counter()
    utilizations, rack_sizes = [], []
    for seed in SEEDS:
        data = drawn(seed)
        scenario = parse_scenario(data)  # raises on a scenario that does not parse
        shape = draw_shape(seed)
        assert scenario.problem.num_objects == SIZES[seed % len(SIZES)][0]
        count_options(data, counts)
        for key, value in (("sizes", shape.sizes), ("tail", shape.tail),
                           ("magnitude", shape.magnitude), ("shape capacities", shape.capacities),
                           ("start", shape.start)):
            counts[key, value] += 1
        utilizations.append(shape.utilization)
        if shape.levels > 1:
            rack_sizes.append(shape.rack_size)
        # the scenario is the shape it says
        assert data["description"] == describe_shape(shape)
        assert ("partitions" in data) == shape.groups
        assert shape.groups >= any(s.arm in GROUP_ARMS for s in shape.specs)
        if shape.start == "infeasible":
            assert counts_over(data)
    missing = [arm for arm in SPEC_ARMS if not counts[arm]]
    missing += [(arm, role) for arm, spec in REBALANCER_ARMS.items()
                for role, allowed in (("goal", spec.goal_allowed),
                                      ("constraint", spec.constraint_allowed))
                if allowed and not counts[arm, role]]
    wanted = ([("policy", p) for p in POLICIES] + [("formula", f) for f in BALANCE_FORMULAS]
              + [("boundType", b) for b in BOUND_TYPES]
              + [("definition", d) for d in BALANCE_DEFINITIONS]
              + [("uic squares", s) for s in (True, False)]
              + [("uic lowerBound", b) for b in (True, False)]
              + [("levels", n) for n in (1, 2, 3)]
              + [("movement goal", b) for b in (True, False)]
              + [("partition", b) for b in (True, False)]
              + [("overlapping groups", b) for b in (True, False)]
              + [("utilizationBound", b) for b in ("UPPER", "LOWER")]
              + [("continuous penalty", b) for b in (True, False)]
              + [("containers formula", f) for f in ("LEGACY", "NEW")]
              + [("formula", "LEGACY")]
              + [("utilizationBound default", b) for b in (True, False)]
              + [("capacities", c) for c in CAPACITY_KINDS]
              + [("shape capacities", c) for c in CAPACITY_KINDS]
              + [("sizes", s) for s in SIZE_KINDS] + [("tail", t) for t in TAILS]
              + [("magnitude", m) for m in MAGNITUDES]
              + [("median order", m) for m in MAGNITUDES]
              + [("start", s) for s in STARTS]
              + [("over capacity at the start", b) for b in (True, False)])
    missing += [key for key in wanted if not counts[key]]
    assert not missing, f"never drawn in {len(SEEDS)} seeds: {missing}"
    assert set(REBALANCER_ARMS) == set(SPEC_ARMS)  # a new spec type must join the draw
    assert 0.40 <= min(utilizations) < 0.45 and 0.90 < max(utilizations) <= 0.95
    assert min(rack_sizes) <= 4 and max(rack_sizes) >= 29
    assert all(3 <= r <= 30 for r in rack_sizes)


def counts_over(data: dict) -> bool:
    caps = data["containerDimensions"]["cpu"]
    cpu = data["objectDimensions"]["cpu"]
    return any(sum(cpu[o] for o in objs) > caps[h] for h, objs in data["assignment"].items())


@pytest.mark.parametrize("seed", [0, 7, 31])
def test_draw_is_deterministic_and_the_shape_size_independent(seed):
    assert random_shape_scenario(60, 8, seed) == random_shape_scenario(60, 8, seed)
    assert random_shape_scenario(60, 8, seed) != random_shape_scenario(60, 8, seed + 1)
    assert draw_shape(seed) == draw_shape(seed)
    small, large = random_shape_scenario(30, 4, seed), random_shape_scenario(300, 30, seed)
    assert small["description"] == large["description"] == describe_shape(seed)
    assert [arm for arm, *_ in entries(small)] == [arm for arm, *_ in entries(large)]


def test_utilization_and_sizes_are_what_the_shape_says():
    for seed in range(40):
        data, shape = random_shape_scenario(400, 20, seed), draw_shape(seed)
        cpu = np.asarray(list(data["objectDimensions"]["cpu"].values()))
        caps = np.asarray(list(data["containerDimensions"]["cpu"].values()))
        assert cpu.sum() / caps.sum() == pytest.approx(shape.utilization, abs=0.02)
        assert cpu.max() <= caps.max()  # every object fits the biggest host
        median = np.median(cpu)
        assert 10.0 ** shape.magnitude * 0.99 <= median <= 10.0 ** (shape.magnitude + 1) * 1.01
        if shape.sizes == "flavours":
            assert len(np.unique(cpu)) <= 8
        if shape.sizes == "integers" and shape.magnitude >= 3:
            assert np.all(cpu == np.round(cpu)) and len(np.unique(cpu)) > 100


def test_description_is_one_short_line():
    for seed in range(50):
        line = describe_shape(seed)
        assert "\n" not in line and len(line) < 220
        specs, scopes, sizes, caps, start = line.split("; ")
        shape = draw_shape(seed)
        assert specs.count(" + ") == len(shape.specs) - 1
        assert scopes.startswith(f"{shape.levels}-level scopes")
        assert sizes.startswith(shape.sizes) and sizes.endswith(f"1e{shape.magnitude}")
        assert "caps" in caps and start.endswith(f"{shape.utilization:.0%}")


def test_bad_sizes_are_input_errors():
    with pytest.raises(InputError):
        random_shape_scenario(0, 5, 1)
    with pytest.raises(InputError):
        random_shape_scenario(10, 5, 1.5)


def test_benchmark_reports_an_exception_as_a_row(monkeypatch):
    """An exception in our solve is caught in the child and reported, with its stage."""
    def broken(*_args, **_kwargs):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(robustness, "solve_scenario", broken)
    answer = robustness.solve_shape(12, 3, 0, 1.0, 1, 0)
    assert answer["raised"] == "ZeroDivisionError: float division by zero"
    assert answer["stage"] == "solve" and answer["peak_mb"] > 0
    assert answer["where"][-1].endswith("broken")
