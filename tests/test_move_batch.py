"""Moves priced in a batch (``context.MoveBatch``, ``evaluate.evaluate_moves``) are priced
exactly as the evaluator prices each assignment alone, on shapes drawn at random."""

from __future__ import annotations

import numpy as np
import pytest
import test_capacity_with_group_presence as capacity_with_group_presence
import test_disaster_recovery_capacity as disaster_recovery_capacity
import test_exclusive_scope_items as exclusive_scope_items
import test_group_diversity as group_diversity
import test_group_move_limit as group_move_limit
import test_options as options

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.context import EvalContext, MoveBatch
from cpsat_rebalancer.errors import InputError
from cpsat_rebalancer.evaluate import (
    batchable,
    evaluate,
    evaluate_moves,
    guides_by_position,
    policy_splits,
)
from cpsat_rebalancer.generators import random_scenario
from cpsat_rebalancer.problem import Problem
from cpsat_rebalancer.scenario import Model
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve.accelerate.tuples import best_below, flat_key, tuple_key

# priced from the base and the groups (or items) a candidate's moves touch
DELTA_SPECS = ("GroupDiversitySpec", "CapacityWithGroupPresenceSpec", "GroupMoveLimitSpec",
               "ExclusiveScopeItemsSpec")


def batchable_seeds(count: int, spec: str | None = None) -> list[int]:
    """The first ``count`` drawn shapes (30 objects, 6 containers) whose every spec takes a
    batch (``spec``: and one of them is of that type)."""
    seeds: list[int] = []
    seed = 0
    while len(seeds) < count:
        scenario = parse_scenario(random_shape_scenario(30, 6, seed))
        model = scenario.model
        names = {type(e.spec).__name__ for e in [*model.goals, *model.constraints]}
        if batchable(scenario.problem, model) and (spec is None or spec in names):
            seeds.append(seed)
        seed += 1
    return seeds


def moved(x: np.ndarray, objects: np.ndarray, targets: np.ndarray) -> np.ndarray:
    y = x.copy()
    for o, c in zip(objects, targets):
        if o >= 0:
            y[o] = c
    return y


def check_batch_prices(problem: Problem, model: Model, seed: int) -> None:
    """Single moves, swaps and exchanges of up to four objects from a random assignment:
    each candidate's tuple, feasibility and guide equal the evaluator's on that assignment,
    to relative 1e-9 (the group specs among them: a swap within one group, two moved
    objects of one group)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, problem.num_containers, problem.num_objects)
    count = 16
    width = min(4, problem.num_objects)
    objects = np.stack([rng.choice(problem.num_objects, width, replace=False)
                        for _ in range(count)])
    objects[: count // 2, 1:] = -1  # single moves; then swaps or double moves
    objects[count // 2: 3 * count // 4, 2:] = -1
    objects[3 * count // 4: 7 * count // 8, 1] = -1  # exchanges: none in the middle
    targets = rng.integers(0, problem.num_containers, (count, width))
    batch = MoveBatch(EvalContext(problem, problem.initial, x), objects, targets)
    keys, excess = evaluate_moves(problem, model, batch, policy_splits(problem, model))
    guides = guides_by_position(model, batch)
    for k in range(count):
        evaluation = evaluate(problem, model, moved(x, objects[k], targets[k]))
        expected = flat_key(tuple_key(evaluation))
        assert keys[k].shape == expected.shape
        np.testing.assert_allclose(keys[k], expected, rtol=1e-9, atol=1e-12)
        assert (excess[k] <= 1e-10) == all(c.hard_excess <= 1e-10
                                          for c in evaluation.constraints)
        np.testing.assert_allclose(excess[k], evaluation.hard_excess, rtol=1e-9, atol=1e-12)
        alone = guides_by_position(
            model, EvalContext(problem, problem.initial, moved(x, objects[k], targets[k])))
        assert alone.keys() == guides.keys()
        for position, value in alone.items():
            np.testing.assert_allclose(np.broadcast_to(guides[position], (count,))[k], value,
                                       rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", sorted(set(batchable_seeds(40) + [
    seed for spec in DELTA_SPECS for seed in batchable_seeds(6, spec)])))
def test_a_batch_prices_every_candidate_as_the_evaluator_does(seed: int) -> None:
    scenario = parse_scenario(random_shape_scenario(30, 6, seed))
    check_batch_prices(scenario.problem, scenario.model, seed)


@pytest.mark.parametrize("overlap", [False, True])
@pytest.mark.parametrize("seed", range(25))
@pytest.mark.parametrize("generator", [
    group_move_limit.scenario, exclusive_scope_items.scenario, group_diversity.scenario,
    capacity_with_group_presence.random_presence_scenario],
    ids=["GroupMoveLimit", "ExclusiveScopeItems", "GroupDiversity", "CapacityWithGroupPresence"])
def test_every_option_of_the_specs_priced_by_touched_groups(generator, seed: int,
                                                            overlap: bool) -> None:
    """The specs' own random scenarios (every option and role, groups that overlap):
    where every spec takes a batch, it prices as the evaluator does."""
    scenario = parse_scenario(generator(seed, overlap=overlap))
    if not batchable(scenario.problem, scenario.model):
        pytest.skip("a spec of this draw prices no batch")
    check_batch_prices(scenario.problem, scenario.model, seed)


@pytest.mark.parametrize("seed", range(40))
def test_a_utilization_bound_is_priced_as_the_evaluator_does(seed: int) -> None:
    """A Capacity with a utilizationBound (every field drawn) beside the scenario's specs
    that take a batch."""
    data = options.option_scenario(seed)
    for role in ("goals", "constraints"):
        data[role] = [entry for entry in data[role]
                      if not {"groupCountSpec", "colocateGroupsSpec"} & set(entry["spec"])]
    scenario = parse_scenario(data)
    assert any(getattr(e.spec, "utilization_bound", None) is not None
               for e in [*scenario.model.goals, *scenario.model.constraints])
    if not batchable(scenario.problem, scenario.model):
        pytest.skip("a spec of this draw prices no batch")
    check_batch_prices(scenario.problem, scenario.model, seed)


def test_the_best_row_is_the_lexicographic_minimum_below_the_current_tuple() -> None:
    current = np.array([1.0, 5.0])
    keys = np.array([[1.0, 4.0], [0.5, 9.0], [0.5, 8.0], [2.0, 0.0], [1.0, 5.0 + 1e-14]])
    assert best_below(keys, np.ones(5, dtype=bool), current) == 2
    assert best_below(keys, np.array([True, False, False, True, True]), current) == 0
    assert best_below(keys[3:], np.ones(2, dtype=bool), current) is None  # noise is no gain


@pytest.mark.parametrize("seed", range(5))
def test_a_batch_reads_where_listed_objects_end_without_building_every_assignment(
        seed: int) -> None:
    """``final_at`` (what specs naming a few objects read) equals the listed columns of the
    candidates' whole assignments, for lists with repeats and moves of unlisted objects."""
    scenario = parse_scenario(random_shape_scenario(30, 6, seed))
    problem = scenario.problem
    rng = np.random.default_rng(seed)
    x = rng.integers(0, problem.num_containers, problem.num_objects)
    objects = rng.integers(-1, problem.num_objects, (12, 3))
    targets = rng.integers(0, problem.num_containers, (12, 3))
    listed = rng.integers(0, problem.num_objects, 9)
    listed[-1] = listed[0]  # an object listed twice (as moves in flight may list it)
    fresh = MoveBatch(EvalContext(problem, problem.initial, x), objects, targets)
    built = MoveBatch(EvalContext(problem, problem.initial, x), objects, targets)
    expected = np.stack([moved(x, objects[k], targets[k])[listed] for k in range(12)])
    assert np.array_equal(fresh.final_at(listed), expected)
    assert np.array_equal(built.final[:, listed], expected)
    assert np.array_equal(built.final_at(listed), expected)


def group_seeds(count: int, spec: str) -> list[int]:
    """The first ``count`` random group scenarios (every option of the group specs drawn)
    with a ``spec`` whose model takes batches."""
    seeds, seed = [], 0
    while len(seeds) < count:
        scenario = parse_scenario(random_scenario(seed, groups=True))
        model = scenario.model
        if batchable(scenario.problem, model) and any(
                type(e.spec).__name__ == spec for e in [*model.goals, *model.constraints]):
            seeds.append(seed)
        seed += 1
    return seeds


@pytest.mark.parametrize("seed", group_seeds(60, "GroupCountSpec"))
def test_group_count_prices_a_batch_as_the_evaluator_does(seed: int) -> None:
    """GroupCount in every bound, definition, limit kind and policy: a compact part from
    the touched groups, a part per (item, group) from copies changed in their columns."""
    scenario = parse_scenario(random_scenario(seed, groups=True))
    check_batch_prices(scenario.problem, scenario.model, seed)


@pytest.mark.parametrize("continuous", [False, True])
@pytest.mark.parametrize("seed", group_seeds(40, "ColocateGroupsSpec"))
def test_colocate_groups_prices_a_batch_as_the_evaluator_does(seed: int,
                                                              continuous: bool) -> None:
    """ColocateGroups in every bound, squares, item and group weights (negative too) and
    policy, with and without the continuous penalty: from the touched groups."""
    data = random_scenario(seed, groups=True)
    for entry in [*data.get("goals", []), *data.get("constraints", [])]:
        if "colocateGroupsSpec" in entry["spec"]:
            entry["spec"]["colocateGroupsSpec"]["useContinuousPenaltyWithOptimal"] = continuous
    scenario = parse_scenario(data)
    check_batch_prices(scenario.problem, scenario.model, seed)


@pytest.mark.parametrize("seed", range(40))
def test_disaster_recovery_prices_a_batch_as_the_evaluator_does(seed: int) -> None:
    """DisasterRecoveryCapacity on hosts or racks, listed, default or overlapping disaster
    groups, chains of one to three secondaries, every role and policy: each candidate's
    objects are read where it puts them."""
    scenario = parse_scenario(disaster_recovery_capacity.random_disaster_scenario(seed, 7))
    check_batch_prices(scenario.problem, scenario.model, seed)



@pytest.mark.parametrize(("definition", "sizes", "home"), [
    ("NEW", [1.911, 0.123, 0.809], {"h0": ["t0", "t2"], "h1": ["t1"]}),
    ("OLD", [0.841, 1.456, 2.942], {"h0": ["t0", "t1", "t2"], "h1": []}),
])
def test_a_difference_of_totals_shifted_in_a_batch_is_never_below_zero(
        definition: str, sizes: list[float], home: dict[str, list[str]]) -> None:
    """t1 has left home for the other host and goes back in the candidate. The batch shifts
    h0's totals by t1's size, so one lands a rounding past the other: NEW (after less what
    stayed) or OLD (initial less what stayed) would be -9e-16 on h0, and its power 1.1
    NaN. The candidate is the initial assignment, where both are 0."""
    data = {
        "objectDimensions": {"cpu": dict(zip(["t0", "t1", "t2"], sizes))},
        "containerDimensions": {"cpu": {"h0": 10, "h1": 10}},
        "assignment": home,
        "goals": [{"spec": {"balanceSpec": {"name": "bal", "scope": "container",
                                            "dimension": "cpu", "formula": "SQUARES",
                                            "definition": definition}}}],
    }
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    t1 = problem.object_index["t1"]
    x = problem.initial.copy()
    x[t1] = 1 - x[t1]
    batch = MoveBatch(EvalContext(problem, problem.initial, x), np.array([[t1]]),
                      np.array([[problem.initial[t1]]]))
    with np.errstate(invalid="raise"):
        keys, _ = evaluate_moves(problem, model, batch, policy_splits(problem, model))
    expected = flat_key(tuple_key(evaluate(problem, model, problem.initial)))
    np.testing.assert_allclose(keys[0], expected, rtol=1e-9, atol=1e-12)


def item_specs(problem: Problem, rng: np.random.Generator) -> tuple[dict, dict, dict]:
    """A Capacity under the AFTER definition, a UtilIncreaseCost and a MinimizeContainers,
    every option drawn, on a scope drawn from the problem's: the three priced from the items
    a candidate touches."""
    scope = problem.scopes[rng.choice(sorted(problem.scopes))]
    names = list(scope.items)
    picked = [str(name) for name in rng.choice(names, rng.integers(1, len(names) + 1),
                                                   replace=False)]
    filters = [None, {"itemsWhitelist": picked}, {"itemsBlacklist": picked[:-1]}]
    dimension = str(rng.choice(sorted(problem.object_dims)))
    limit = {"type": str(rng.choice(["RELATIVE", "ABSOLUTE"])),
             "globalLimit": float(rng.choice([0.0, 0.5, 1.0])),
             "isDefaultLimitUnbounded": bool(rng.random() < 0.2),
             "scopeItemLimits": {picked[0]: float(rng.choice([0.3, 0.9]))}}
    capacity = {"scope": scope.name, "dimension": dimension, "definition": "AFTER",
                "bound": str(rng.choice(["MAX", "MIN"])), "limit": limit,
                "zeroAllowed": bool(rng.random() < 0.5),
                "useLegacyFormula": bool(rng.random() < 0.3)}
    cost = {"scope": scope.name, "dimension": dimension, "squares": bool(rng.random() < 0.5),
            "lowerBound": float(rng.choice([0.0, 0.3, 0.8]))}
    containers = {"scope": scope.name, "dimension": dimension,
                  "containerCosts": {name: float(rng.choice([0.0, 0.5, 2.0]))
                                     for name in picked[:2]}}
    if rng.random() < 0.5:
        containers["maxFreeLimit"] = int(rng.integers(1, len(names) + 1))
    for spec in (capacity, cost, containers):
        chosen = filters[rng.integers(len(filters))]
        if chosen is not None:
            spec["filter"] = chosen
    return capacity, cost, containers


@pytest.mark.parametrize("seed", range(40))
def test_specs_over_items_are_priced_from_the_items_a_move_touches(seed: int) -> None:
    """Capacity (AFTER: each role and policy, MIN and MAX, zeroAllowed, per-item and
    unbounded limits, filters, the legacy normalization), UtilIncreaseCost (squares or
    not, lower bounds, filters) and MinimizeContainers (costs, free limits, filters; its
    guide too) on a drawn scope beside the draw's specs that take a batch: the base's value
    changed at the touched items is the evaluator's."""
    data = random_shape_scenario(30, 6, seed)
    rng = np.random.default_rng(seed)
    capacity, cost, containers = item_specs(parse_scenario(data).problem, rng)
    data["goals"] = [*data.get("goals", []),
                     {"spec": {"utilIncreaseCostSpec": cost}, "tuplePos": int(rng.integers(0, 2))},
                     {"spec": {"minimizeContainersSpec": containers},
                      "tuplePos": int(rng.integers(0, 2))}]
    entry = {"spec": {"capacitySpec": capacity}}
    if rng.random() < 0.3:
        data["goals"].append({**entry, "tuplePos": 0})
    else:
        data["constraints"] = [*data.get("constraints", []), {
            **entry, "policy": str(rng.choice(["HARD", "SOFT", "DEFAULT"]))}]
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    if not batchable(problem, model):
        pytest.skip("a spec of this draw prices no batch")
    batch = MoveBatch(EvalContext(problem, problem.initial, problem.initial),
                      np.array([[0]]), np.array([[1]]))
    if capacity["dimension"] not in problem.vector_dims:
        assert all(e.spec.info_changes(batch) is not None
                   for e in [*model.goals, *model.constraints] if e.spec.arm == "capacitySpec"
                   and e.spec.definition == "AFTER" and e.spec.utilization_bound is None)
    check_batch_prices(problem, model, seed)


def balance_spec(problem: Problem, rng: np.random.Generator) -> dict:
    """A Balance under AFTER (LINEAR, SQUARES, MAX or LEGACY) on a drawn scope with every
    option that changes its average or threshold drawn."""
    scope = problem.scopes[rng.choice(sorted(problem.scopes))]
    names = [str(name) for name in scope.items]
    # most often a filter that keeps two or more items but not all: only then does the
    # average move with the moves (all kept, it is constant)
    fewest = min(2, len(names))
    picked = [str(name) for name in rng.choice(
        names, rng.integers(fewest, max(fewest, len(names) - 1) + 1), replace=False)]
    spec = {"scope": scope.name, "dimension": str(rng.choice(sorted(problem.object_dims))),
            "definition": "AFTER", "formula": str(rng.choice(["LINEAR", "SQUARES", "MAX"])),
            "boundType": str(rng.choice(["ABSOLUTE", "RELATIVE", "RELATIVE", "RELATIVE_UTIL"])),
            "upperBound": float(rng.choice([-0.2, 0.0, 0.1, 0.9, 1.0, 1.2]))}
    if rng.random() < 0.8:
        spec["filter"] = {"itemsWhitelist": picked}
    if rng.random() < 0.2:  # as Rebalancer's checker allows LEGACY
        return {**spec, "formula": "LEGACY", "fixAverageToInitial": True,
                "boundType": "RELATIVE"}
    if rng.random() < 0.25:
        spec["fixAverageToInitial"] = True
        if rng.random() < 0.5 and len(picked) < len(names):
            spec["includeInInitialAverage"] = [n for n in names if n not in picked][:1]
    elif rng.random() < 0.5:
        spec["useLegacyAverage"] = True
    if rng.random() < 0.2:
        spec["softUpperBound"] = float(rng.choice([0.2, 0.7]))
    return spec


@pytest.mark.parametrize("seed", range(60))
def test_a_balance_is_priced_from_its_sorted_base_and_the_items_a_move_touches(
        seed: int) -> None:
    """LINEAR, SQUARES, MAX and LEGACY balances (their average fixed, legacy or moving with
    every move, every bound type, soft upper bounds, filters) beside the draw's specs: the
    base's sums above each candidate's threshold, changed at the touched items, are the
    evaluator's value and guide."""
    data = random_shape_scenario(30, 6, seed)
    rng = np.random.default_rng(seed)
    spec = balance_spec(parse_scenario(data).problem, rng)
    data["goals"] = [*data.get("goals", []), {"spec": {"balanceSpec": spec},
                                              "tuplePos": int(rng.integers(0, 2))}]
    try:
        scenario = parse_scenario(data)
    except InputError:
        pytest.skip("Rebalancer refuses this combination of options")
    if not batchable(scenario.problem, scenario.model):
        pytest.skip("a spec of this draw prices no batch")
    check_batch_prices(scenario.problem, scenario.model, seed)
