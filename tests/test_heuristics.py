"""Built-in heuristics: what each one does, the rules every one keeps, and soundness against
the proven optimum on random small scenarios (no heuristic ever beats it)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from randomized import random_scenario

from cpsat_rebalancer import InputError, evaluate
from cpsat_rebalancer.compare import compare
from cpsat_rebalancer.evaluate import Evaluation
from cpsat_rebalancer.heuristics import (
    BUILT_IN,
    NEEDS_PEER,
    Instance,
    balanced_target,
    bucket_order,
    make_heuristic,
    tuple_order,
)
from cpsat_rebalancer.scenario import SolverOptions

SCENARIOS = Path(__file__).parents[1] / "scenarios"
LOCAL = [name for name in BUILT_IN if name not in NEEDS_PEER]


def packing_scenario(constraints: list | None = None) -> dict:
    """Sizes 6, 5, 4, 3, 2 (all on h2) into three hosts of cpu capacity 10."""
    sizes = {"a": 6, "b": 5, "c": 4, "d": 3, "e": 2}
    return {
        "objectName": "task", "containerName": "host",
        "assignment": {"h0": [], "h1": [], "h2": list(sizes)},
        "objectDimensions": {"cpu": sizes},
        "containerDimensions": {"cpu": {"h0": 10, "h1": 10, "h2": 10}},
        "goals": [{"spec": {"balanceSpec": {"scope": "host", "dimension": "cpu"}}}],
        "constraints": constraints or [],
    }


def placed(instance: Instance, final: np.ndarray) -> dict[str, list[str]]:
    return {c: sorted(v) for c, v in instance.problem.assignment_dict(final).items()}


def test_first_fit_decreasing_takes_the_first_container_with_room() -> None:
    instance = Instance.from_dict(packing_scenario())
    final = make_heuristic("first-fit-decreasing").assign(instance)
    # a(6) h0; b(5) h1; c(4) h0 (6+4=10 fits); d(3) h1; e(2) h1
    assert placed(instance, final) == {"h0": ["a", "c"], "h1": ["b", "d", "e"], "h2": []}


def test_best_fit_decreasing_takes_the_tightest_container() -> None:
    data = packing_scenario()
    data["containerDimensions"]["cpu"] = {"h0": 12, "h1": 9, "h2": 10}
    instance = Instance.from_dict(data)
    final = make_heuristic("best-fit-decreasing").assign(instance)
    # a(6): rooms after 6/3/4 -> h1; b(5): 7/-/5 -> h2; c(4): 8/-/1 -> h2;
    # d(3): 9/0/- -> h1; e(2): h0 (only one with room)
    assert placed(instance, final) == {"h0": ["e"], "h1": ["a", "d"], "h2": ["b", "c"]}
    ffd = make_heuristic("first-fit-decreasing").assign(instance)
    assert placed(instance, ffd) == {"h0": ["a", "b"], "h1": ["c", "d", "e"], "h2": []}


def test_packing_respects_fixed_objects_and_non_accepting_containers() -> None:
    data = packing_scenario([{"spec": {"avoidMovingSpec": {"objects": ["a"]}}},
                             {"spec": {"nonAcceptingSpec": {"scope": "host", "items": ["h0"]}}}])
    instance = Instance.from_dict(data)
    for name in LOCAL:
        final = make_heuristic(name).assign(instance)
        assignment = placed(instance, final)
        assert "a" in assignment["h2"], name  # fixed where it started
        assert assignment["h0"] == [], name  # accepts nothing new
        assert evaluate(instance.problem, instance.model, final).feasible, name


def test_an_object_that_fits_nowhere_goes_where_the_overload_is_least() -> None:
    data = packing_scenario()
    data["objectDimensions"]["cpu"]["a"] = 30
    instance = Instance.from_dict(data)
    final = make_heuristic("first-fit-decreasing").assign(instance)
    assert placed(instance, final)["h0"] == ["a"]  # all equally overloaded: the first
    assert placed(instance, final)["h1"] == ["b", "c"]


def test_greedy_balance_reaches_the_seed_optimum_and_stops() -> None:
    data = json.loads((SCENARIOS / "seed_balance_memory.json").read_text())
    instance = Instance.from_dict(data)
    heuristic = make_heuristic("greedy-balance")
    final = heuristic.assign(instance)
    evaluation = evaluate(instance.problem, instance.model, final)
    assert evaluation.positions == {0: 0.0, 1: 0.0005}  # the proven optimum
    assert heuristic.details["steps"] == 1


def test_greedy_balance_only_makes_improving_feasible_moves() -> None:
    data = packing_scenario([{"spec": {"capacitySpec": {"scope": "host", "dimension": "cpu"}},
                              "policy": "HARD"}])
    data["assignment"] = {"h0": ["a", "b"], "h1": ["c", "d"], "h2": ["e"]}
    instance = Instance.from_dict(data)
    initial = evaluate(instance.problem, instance.model, instance.problem.initial)
    final = make_heuristic("greedy-balance").assign(instance)
    result = evaluate(instance.problem, instance.model, final)
    assert result.feasible
    assert tuple_order(result, initial)[0] < 0  # strictly better than where it started
    util = balanced_target(instance.problem, instance.model).relative_util(
        instance.problem, final)
    assert util.max() <= 1.0


def test_greedy_balance_move_limit() -> None:
    instance = Instance.from_dict(packing_scenario())
    from cpsat_rebalancer.heuristics import HeuristicOptions

    heuristic = make_heuristic("greedy-balance", HeuristicOptions(max_moves=1))
    final = heuristic.assign(instance)
    assert int((final != instance.problem.initial).sum()) == 1
    assert heuristic.details["stopped"] == "move limit"


def test_balanced_target_prefers_balance_then_falls_back() -> None:
    instance = Instance.from_dict(packing_scenario())
    target = balanced_target(instance.problem, instance.model)
    assert (target.scope.name, target.dimension) == ("host", "cpu")
    data = packing_scenario()
    data["goals"] = [{"spec": {"minimizeMovementSpec": {}}}]
    data["constraints"] = [{"spec": {"capacitySpec": {"scope": "host", "dimension": "cpu"}}}]
    target = balanced_target(*_problem_model(data))
    assert target.dimension == "cpu" and target.source.startswith("capacitySpec")
    data["constraints"] = []
    target = balanced_target(*_problem_model(data))
    assert target.dimension == "task_count"


def _problem_model(data: dict):
    instance = Instance.from_dict(data)
    return instance.problem, instance.model


def _evaluation(positions: dict, leximin: dict | None = None) -> Evaluation:
    return Evaluation([], [], positions, leximin or {})


def test_order_is_lexicographic_and_leximin_where_ideal_is_alone() -> None:
    a = _evaluation({0: 1.0, 1: 5.0})
    b = _evaluation({0: 1.0, 1: 4.0})
    assert tuple_order(a, b) == (1, 1)
    assert tuple_order(b, a) == (-1, 1)
    assert tuple_order(a, a) == (0, None)
    # lower scalar, worse leximin (largest utilization first): leximin decides
    c = _evaluation({0: 1.0}, {0: (0.5, 0.4)})
    d = _evaluation({0: 2.0}, {0: (0.5, 0.3)})
    assert bucket_order(0, c, d) == 1
    assert bucket_order(0, d, c) == -1
    assert bucket_order(0, c, _evaluation({0: 1.0 + 1e-12})) == 0  # within tolerance


def test_unknown_heuristic_names_the_choices() -> None:
    with pytest.raises(InputError, match="first-fit-decreasing"):
        make_heuristic("simulated-annealing")
    with pytest.raises(InputError, match="cannot load"):
        make_heuristic("no_such_module_xyz:thing", allow_code=True)


def test_a_user_heuristic_as_module_attribute(tmp_path, monkeypatch) -> None:
    (tmp_path / "my_heuristics.py").write_text(
        "def stay(instance):\n    return instance.problem.initial.copy()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InputError, match="--allow-code"):  # code runs only when allowed
        make_heuristic("my_heuristics:stay")
    heuristic = make_heuristic("my_heuristics:stay", allow_code=True)
    instance = Instance.from_dict(packing_scenario())
    assert heuristic.name == "my_heuristics:stay"
    assert (heuristic.assign(instance) == instance.problem.initial).all()


def soundness_failures(data: dict, seed: int) -> list[str]:
    """Every local heuristic against our optimum; a message naming the specs per failure."""
    comparison = compare(data, LOCAL, options=SolverOptions(workers=1))
    if comparison.ours.status != "OPTIMAL" and comparison.ours.status != "INFEASIBLE":
        return []  # nothing proven to check against (never seen at this size)
    failures = []
    for entry in comparison.entries:
        if entry.error:
            failures.append(f"{entry.name} failed: {entry.error}")
        if not entry.contradiction:
            continue
        p = entry.deciding_position
        ours = comparison.ours.final_evaluation
        specs = [f"  goal {g.arm} '{g.name}': heuristic {h.weighted!r}, ours {g.weighted!r}"
                 for g, h in zip(ours.goals, entry.evaluation.goals) if g.position == p]
        specs += [f"  constraint {c.arm} '{c.name}' ({c.policy}): heuristic soft "
                  f"{h.soft!r}, ours {c.soft!r}"
                  for c, h in zip(ours.constraints, entry.evaluation.constraints)
                  if c.position == p and c.has_soft_term]
        failures.append(f"seed {seed}: {entry.name}: {entry.contradiction}\n" + "\n".join(specs))
    return failures


@pytest.mark.parametrize("seed", range(60))
def test_no_heuristic_beats_the_proven_optimum(seed: int) -> None:
    data = random_scenario(seed)
    failures = soundness_failures(data, seed)
    assert not failures, "\n".join(failures) + f"\nscenario: {json.dumps(data)}"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(60, 260))
def test_no_heuristic_beats_the_proven_optimum_many(seed: int) -> None:
    data = random_scenario(seed, max_objects=7, max_containers=4)
    failures = soundness_failures(data, seed)
    assert not failures, "\n".join(failures) + f"\nscenario: {json.dumps(data)}"
