"""The Balance formula table: how LINEAR, SQUARES, MAX and IDEAL order assignments."""

from __future__ import annotations

import pytest

from cpsat_rebalancer import ProblemSolver


def three_hosts(formula: str) -> ProblemSolver:
    """Relative utilizations {0.1, 0.6, 0.8}; only x (size 1, on h2) may move, not to h0."""
    ps = ProblemSolver().set_object_name("task").set_container_name("host")
    ps.set_assignment({"h0": ["a"], "h1": ["b"], "h2": ["c", "x"]})
    ps.add_object_dimension("cpu", {"a": 1, "b": 6, "c": 7, "x": 1})
    ps.add_container_dimension("cpu", {"h0": 10, "h1": 10, "h2": 10})
    ps.add_goal({"balanceSpec": {"scope": "host", "dimension": "cpu", "formula": formula}})
    ps.add_constraint({"avoidMovingSpec": {"objects": ["a", "b", "c"]}})
    ps.add_constraint({"nonAcceptingSpec": {"scope": "host", "items": ["h0"]}})
    return ps


STAY = {"h0": ["a"], "h1": ["b"], "h2": ["c", "x"]}  # {0.1, 0.6, 0.8}
MOVE = {"h0": ["a"], "h1": ["b", "x"], "h2": ["c"]}  # {0.1, 0.7, 0.7}


def value(ps: ProblemSolver, assignment: dict) -> float:
    return ps.evaluate(assignment).goals[0].value


def test_linear_ties_the_two_spreads() -> None:
    ps = three_hosts("LINEAR")
    assert value(ps, STAY) == pytest.approx(0.4 / 3)
    assert value(ps, MOVE) == pytest.approx(0.4 / 3)
    assert ps.solve().final_evaluation.goals[0].value == pytest.approx(0.4 / 3)


def test_squares_prefers_the_even_spread() -> None:
    ps = three_hosts("SQUARES")
    assert value(ps, MOVE) < value(ps, STAY)
    result = ps.solve()
    assert result.status == "OPTIMAL"
    assert result.assignment == MOVE


def test_max_is_the_largest_excess() -> None:
    ps = three_hosts("MAX")
    assert value(ps, STAY) == pytest.approx(0.3)
    assert value(ps, MOVE) == pytest.approx(0.2)
    assert ps.solve().assignment == MOVE


def big_and_small(formula: str) -> ProblemSolver:
    """22 unit tasks on a small host (cap 10) beside a big one (cap 100)."""
    tasks = [f"t{i}" for i in range(22)]
    ps = ProblemSolver().set_object_name("task").set_container_name("host")
    ps.set_assignment({"small": tasks, "big": []})
    ps.add_object_dimension("cpu", {t: 1 for t in tasks})
    ps.add_container_dimension("cpu", {"small": 10, "big": 100})
    ps.add_goal({"balanceSpec": {"scope": "host", "dimension": "cpu", "formula": formula}})
    return ps


def test_ideal_does_not_pile_onto_the_big_item_while_linear_may() -> None:
    tasks = [f"t{i}" for i in range(22)]
    piled = {"small": [], "big": tasks}
    linear = big_and_small("LINEAR")
    assert linear.solve().final_evaluation.goals[0].value == 0.0
    assert value(linear, piled) == 0.0  # piling everything on the big host is LINEAR-optimal

    ideal = big_and_small("IDEAL")
    result = ideal.solve()
    assert result.status == "OPTIMAL"
    counts = {host: len(objs) for host, objs in result.assignment.items()}
    assert counts == {"small": 2, "big": 20}  # equal relative utilization 0.2 on both
    assert value(ideal, result.assignment) < value(ideal, piled)
    assert result.buckets[0].leximin == pytest.approx([0.2, 0.2])
