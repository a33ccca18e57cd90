"""MovesInProgressSpec (docs/semantics.md#movesinprogress): moves already under way are held,
the solve starts with them done, and every utilization definition counts from before them."""

from __future__ import annotations

import copy
import itertools
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest
from randomized import random_scenario
from spec_checks import check_compiled_agrees
from test_bruteforce import check_against_enumeration
from test_parity import PEER, close

from cpsat_rebalancer import evaluate, parse_scenario
from cpsat_rebalancer.cpsat.linear import lin_sum
from cpsat_rebalancer.errors import InputError
from cpsat_rebalancer.peer import evaluate_with_wheel
from cpsat_rebalancer.result import OPTIMAL
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.solve.accelerate.lp_bound import solve_lp
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.pipeline import solve_model

CATALOG = Path(__file__).parents[1] / "scenarios" / "catalog"
OPTIONS = SolverOptions(workers=1, seed=0)
DEFINITIONS = ["AFTER", "DURING", "NEW", "OLD", "MOVED_DATA", "DURING_AND_AFTER",
               "DOUBLE_DURING", "DOUBLE_DURING_AND_AFTER"]


def with_moves_in_progress(data: dict, seed: int) -> dict:
    """``data`` plus a MovesInProgressSpec of one to three moves (sometimes one held where
    it is, sometimes an object listed twice, sometimes a second spec naming a moved object
    again), and a Capacity constraint under a random definition, so that in-flight objects
    meet every utilization definition; under a random global policy."""
    rng = random.Random(seed)
    data = copy.deepcopy(data)
    containers = list(data["assignment"])
    objects = [o for objs in data["assignment"].values() for o in objs]
    where = {o: c for c, objs in data["assignment"].items() for o in objs}
    moving = rng.sample(objects, min(len(objects), rng.randint(1, 3)))
    moves = [{"objName": o, "toContainer": rng.choice([c for c in containers if c != where[o]])
              if rng.random() < 0.8 else where[o]} for o in moving]
    if rng.random() < 0.15:  # listed twice: only the first destination holds
        moves.append({"objName": moving[0], "toContainer": rng.choice(containers)})
    constraints = data.setdefault("constraints", [])
    constraints.insert(rng.randint(0, len(constraints)),
                       {"spec": {"movesInProgressSpec": {"moves": moves}}})
    if rng.random() < 0.15:  # a second spec: the first destination named wins
        constraints.append({"spec": {"movesInProgressSpec": {"name": "again", "moves": [
            {"objName": moving[-1], "toContainer": rng.choice(containers)}]}}})
    capacity = {"scope": "host", "dimension": rng.choice(["cpu", "mem"]),
                "definition": rng.choice(DEFINITIONS), "bound": rng.choice(["MAX", "MIN"]),
                "limit": {"type": "RELATIVE", "globalLimit": rng.choice([0.5, 0.8, 1.0])}}
    constraints.append({"spec": {"capacitySpec": capacity},
                        "policy": rng.choice(["DEFAULT", "HARD", "SOFT"])})
    if rng.random() < 0.3:
        data["constraintPolicy"] = rng.choice(["DEFAULT", "HARD", "SOFT"])
    return data


def pinned_final(scenario, seed: int) -> np.ndarray:
    """The start with up to three objects that are not in flight moved at random."""
    rng = random.Random(seed)
    problem = scenario.problem
    final = problem.initial.copy()
    free = [o for o in range(problem.num_objects) if o not in scenario.model.fixed_objects]
    for obj in rng.sample(free, min(3, len(free))):
        final[obj] = rng.randrange(problem.num_containers)
    return final


def doc_example(definition: str | None = None) -> dict:
    """The reference page's example (Rebalancer's MovesInProgressTest): task2 moving from
    host0 to host1; optionally the page's capacity of 3 tasks per host under
    ``definition`` with task3 preferring host0."""
    return json.loads((CATALOG / ("moves_in_progress.json" if definition is None else
                                  f"moves_in_progress_{definition.lower()}.json")).read_text())


# ---------------------------------------------------------------- semantics


def test_the_in_flight_move_is_made_and_nothing_else() -> None:
    scenario = parse_scenario(doc_example())
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == OPTIMAL
    assert result.assignment == {"host0": ["task0", "task1"], "host1": ["task2", "task3"]}
    # the move is already under way: the solve adds none; the initial assignment reported is
    # the one given, as Rebalancer reports it
    assert result.moves.empty
    assert result.to_dict()["initialAssignment"]["task2"] == "host0"


@pytest.mark.parametrize(("definition", "task3"), [("AFTER", "host0"), ("DURING", "host1")])
def test_capacity_counts_the_moving_object_as_the_definition_says(definition: str,
                                                                  task3: str) -> None:
    """AFTER counts task2 on host1 only, so task3 may take its place on host0; DURING still
    counts it on host0, which then holds 3 and takes no fourth."""
    scenario = parse_scenario(doc_example(definition))
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == OPTIMAL
    final = result.to_dict()["assignment"]
    assert final["task2"] == "host1" and final["task3"] == task3
    assert final["task0"] == final["task1"] == "host0"


def probe_scenario() -> dict:
    return {
        "objectName": "task", "containerName": "host",
        "assignment": {"host0": ["t0", "t1", "t2"], "host1": ["t3"], "host2": []},
        "objectDimensions": {"mem": {"t0": 1, "t1": 2, "t2": 4, "t3": 8}},
        "containerDimensions": {"mem": {"host0": 10, "host1": 10, "host2": 10}},
        "goals": [
            {"spec": {"utilIncreaseCostSpec": {"scope": "host", "dimension": "mem"}}},
            *({"spec": {"balanceSpec": {"name": d, "scope": "host", "dimension": "mem",
                                        "formula": "LINEAR", "definition": d}}}
              for d in ("AFTER", "DURING", "NEW", "OLD")),
            {"spec": {"minimizeMovementSpec": {}}},
        ],
        "constraints": [
            {"spec": {"movesInProgressSpec": {"moves": [{"objName": "t2",
                                                          "toContainer": "host1"}]}}},
            *({"spec": {"capacitySpec": {"name": f"cap {d}", "scope": "host",
                                         "dimension": "mem", "definition": d,
                                         "limit": {"type": "ABSOLUTE", "globalLimit": 11}}}}
              for d in ("DURING", "DURING_AND_AFTER", "AFTER")),
        ],
    }


def test_values_at_the_start_equal_the_wheels() -> None:
    """Numbers the wheel reports for this scenario at its start (local search with
    ``stopAfterMoves`` 0, t2 already on host1): UtilIncreaseCost 0 (it counts from the
    start), Balance LINEAR AFTER 0.2333..., DURING 0.2111... (t2 on host0 and host1), NEW
    0.0888..., OLD 0.0888..., MinimizeMovement 0.000333... (t2's move counts: 0.001 x one
    task over 3 hosts of task capacity 1); Capacity of 11 DURING 0.1,
    DURING_AND_AFTER 0.2, AFTER 0.1 (all initially broken). Wheel command:
    ``evaluate_with_wheel(probe_scenario())``."""
    scenario = parse_scenario(probe_scenario())
    start = evaluate(scenario.problem, scenario.model, scenario.problem.initial)
    goals = [g.value for g in start.goals]
    assert goals == pytest.approx([0, 0.23333333333333334, 0.21111111111111125,
                                   0.0888888888888889, 0.0888888888888889, 0.00033333333333333327],
                                  rel=1e-12)
    violations = [c.violation for c in start.constraints]
    assert violations == pytest.approx([0, 0.1, 0.2, 0.1], rel=1e-12)


def test_a_moving_object_cannot_be_moved_elsewhere_even_under_a_soft_policy() -> None:
    data = doc_example()
    data["constraintPolicy"] = "SOFT"
    data["goals"] = [{"spec": {"assignmentAffinitiesSpec": {"scope": "host", "affinities": [
        {"objectName": "task2", "scopeItemName": "host0", "affinity": 5}]}}}]
    scenario = parse_scenario(data)
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.to_dict()["assignment"]["task2"] == "host1"
    elsewhere = scenario.problem.initial.copy()
    elsewhere[scenario.problem.object_index["task2"]] = 0
    assert not evaluate(scenario.problem, scenario.model, elsewhere).feasible


def test_the_first_destination_named_wins_and_the_other_stays_broken() -> None:
    """Wheel: a second spec sending t2 to host2 reports 1 initially and finally, t2 ends on
    host1; so does one spec listing t2 twice."""
    for second_spec in (True, False):
        data = probe_scenario()
        data["goals"], data["constraints"] = [], data["constraints"][:1]
        extra = {"objName": "t2", "toContainer": "host2"}
        if second_spec:
            data["constraints"].append({"spec": {"movesInProgressSpec": {"moves": [extra]}}})
        else:
            data["constraints"][0]["spec"]["movesInProgressSpec"]["moves"].append(extra)
        scenario = parse_scenario(data)
        result = solve_model(scenario.problem, scenario.model, OPTIONS)
        assert result.to_dict()["assignment"]["t2"] == "host1"
        assert sum(c.violation for c in result.final_evaluation.constraints) == 1


def test_avoid_moving_on_a_moving_object_yields_to_the_move() -> None:
    data = doc_example()
    data["constraints"].append({"spec": {"avoidMovingSpec": {"objects": ["task2"]}}})
    scenario = parse_scenario(data)
    result = solve_model(scenario.problem, scenario.model, OPTIONS)
    assert result.status == OPTIMAL
    assert result.to_dict()["assignment"]["task2"] == "host1"
    assert all(c.violation == 0 for c in result.final_evaluation.constraints)


# ---------------------------------------------------------------- exactness


@pytest.mark.parametrize("seed", range(40))
def test_optimum_matches_enumeration(seed: int) -> None:
    check_against_enumeration(with_moves_in_progress(random_scenario(seed, max_objects=5),
                                                     seed), seed)


@pytest.mark.parametrize("seed", range(100, 130))
def test_optimum_matches_enumeration_with_group_specs(seed: int) -> None:
    """GroupCount and ColocateGroups too (their DURING and STAYED count group by group)."""
    check_against_enumeration(with_moves_in_progress(
        random_scenario(seed, max_objects=5, groups=True), seed), seed)


@pytest.mark.parametrize("seed", range(30))
def test_compiled_objective_matches_the_evaluator(seed: int) -> None:
    data = with_moves_in_progress(random_scenario(seed, groups=seed % 2 == 1), seed)
    check_compiled_agrees(data, seed)


# ---------------------------------------------------------------- parity with the wheel


@pytest.mark.peer
@pytest.mark.skipif(PEER is None, reason="no Python 3.12 interpreter with the rebalancer wheel")
@pytest.mark.parametrize("seed", range(40))
def test_values_agree_with_the_wheel(seed: int) -> None:
    """Every goal value and constraint violation at the start and at a random assignment
    that keeps the moving objects where they go, and every tuple position's sum at the
    start (weighted goals and soft terms), relative 1e-9."""
    data = with_moves_in_progress(random_scenario(seed, groups=seed % 2 == 1), seed)
    scenario = parse_scenario(data)
    problem = scenario.problem
    final = pinned_final(scenario, seed)
    wheel = evaluate_with_wheel(data, problem.assignment_dict(final), peer_python=PEER)
    problems = []
    for label, where in (("initial", problem.initial), ("final", final)):
        ours = evaluate(problem, scenario.model, where)
        for goal in wheel[label]["goals"]:
            mine = ours.goals[goal["index"]].value
            if not close(mine, goal["value"]):
                problems.append(f"{label} goal {goal['index']}: {mine!r} vs {goal['value']!r}")
        for constraint in wheel[label]["constraints"]:
            mine = ours.constraints[constraint["index"]].violation
            if not np.isnan(constraint["value"]) and not close(mine, constraint["value"]):
                problems.append(f"{label} constraint {constraint['index']}: {mine!r} vs "
                                f"{constraint['value']!r}")
    # the policies judge "initially broken" at the start: the start's bucket sums agree
    # (not where a ColocateGroups constraint's soft term carries local search's continuous
    # term, docs/semantics.md#constraint-policies)
    start = evaluate(problem, scenario.model, problem.initial)
    continuous = any("colocateGroupsSpec" in c["spec"] for c in data["constraints"])
    for position, value in ({} if continuous else wheel["initial"].get("positions", {})).items():
        mine = start.positions.get(int(position), 0.0)
        if not np.isnan(value) and not close(mine, value):
            problems.append(f"start position {position}: {mine!r} vs {value!r}")
    assert not problems, f"seed {seed}:\n" + "\n".join(problems) + f"\n{data}"


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(("moves", "field"), [
    ([{"objName": "nope", "toContainer": "host1"}], "moves[0].objName"),
    ([{"objName": "task2", "toContainer": "nope"}], "moves[0].toContainer"),
    ([{"objName": "task2", "toContainer": "host1", "extra": 1}], "moves[0]"),
    ([{"objName": 3, "toContainer": "host1"}], "moves[0].objName"),
    ("task2", "moves"),
])
def test_bad_moves_name_the_field(moves, field: str) -> None:
    data = doc_example()
    data["constraints"][0]["spec"]["movesInProgressSpec"]["moves"] = moves
    with pytest.raises(InputError, match=field.replace("[", r"\[").replace("]", r"\]")):
        parse_scenario(data)


def test_it_is_a_constraint_only() -> None:
    data = doc_example()
    data["goals"] = [{"spec": data["constraints"][0]["spec"]}]
    with pytest.raises(InputError, match="cannot be used as a goal"):
        parse_scenario(data)


def test_an_allowance_the_moves_in_flight_exceed_alone_is_broken_in_the_linear_bound() -> None:
    """What moved is at least what is in flight, in every assignment, so a DEFAULT movement
    allowance that those moves alone exceed is broken whatever the solve does: the
    compiled step of its invalidState is on, and GLOP's floor on the whole model is the
    optimum (enumerated). Read as AFTER - STAYED, NEW let every object at a destination
    have stayed, and the floor was short by the invalidState."""
    data = {
        "objectName": "task", "containerName": "host",
        "assignment": {"h0": ["t0", "t1"], "h1": ["t2"], "h2": ["t3"]},
        "objectDimensions": {"cpu": {"t0": 5, "t1": 1, "t2": 2, "t3": 3}},
        "containerDimensions": {"cpu": {"h0": 10, "h1": 10, "h2": 10}},
        "goals": [{"spec": {"minimizeMovementSpec": {"name": "moves"}}, "tuplePos": 1}],
        "constraints": [
            {"spec": {"movesInProgressSpec": {"moves": [{"objName": "t0",
                                                         "toContainer": "h1"}]}}},
            {"spec": {"minimizeMovementSpec": {"name": "limit", "dimension": "cpu",
                                               "doNotNormalize": True, "allowance": 2}},
             "policy": "DEFAULT", "invalidCost": 10, "invalidState": 7}],
    }
    scenario = parse_scenario(data)
    problem, model = scenario.problem, scenario.model
    free = [o for o in range(problem.num_objects) if o not in model.fixed_objects]
    optimum = math.inf
    for where in itertools.product(range(problem.num_containers), repeat=len(free)):
        final = problem.initial.copy()
        final[free] = where
        evaluation = evaluate(problem, model, final)
        if evaluation.feasible:
            optimum = min(optimum, evaluation.positions[0])
    builder, buckets = compile_model(problem, model)
    form = builder.integerize(lin_sum(buckets[0].terms))
    builder.cp.minimize(form.expr)
    lp = solve_lp(builder.cp, 10.0)
    assert optimum == 10 * (5 - 2) + 7
    assert lp is not None and lp.floor == optimum * form.factor
