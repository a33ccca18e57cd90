"""A threshold that moves with the assignment (a balance's RELATIVE bound over DURING
utilization, an IDEAL bound over a moving average) inside SQUARES' or IDEAL's excess:
f(threshold) is held from above by chords (``pwl.threshold_table``), so the goal is never
over-stated, and refined at each solution until exact there. Proofs then need no
allowance for the table's gaps: checked against enumeration on the random shapes that draw
such a threshold, and on the piece itself."""

from __future__ import annotations

import math

import pytest
from ortools.sat.python import cp_model
from test_bruteforce import check_against_enumeration

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.cpsat.outer import ChordPiece
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve.compile import compile_model

# the robustness generator's shapes (seeds below 400) whose model tabulates a moving threshold
MOVING = [29, 53, 56, 76, 81, 152, 161, 188, 203, 208, 312, 320, 323, 332, 337, 351, 386, 395]


def tabulates_a_threshold(data: dict) -> bool:
    scenario = parse_scenario(data)
    builder, _ = compile_model(scenario.problem, scenario.model)
    return any(v.name == "threshold_value" for v in builder.cp.Proto().variables)


@pytest.mark.parametrize("size", [(4, 2), (6, 3)])
@pytest.mark.parametrize("seed", MOVING)
def test_moving_thresholds_match_enumeration(seed: int, size: tuple[int, int]) -> None:
    data = random_shape_scenario(*size, seed)
    assert tabulates_a_threshold(data)
    check_against_enumeration(data, f"{seed} {size}")


def test_a_moving_threshold_on_eight_objects_is_proven() -> None:
    """Below f, the table left this one FEASIBLE ("approximated") with no time limit: its
    gap to f was stated as an error the bound had to give up."""
    data = random_shape_scenario(8, 3, 323)
    assert tabulates_a_threshold(data)
    check_against_enumeration(data, "323 (8, 3)")


def test_a_small_excess_of_terms_near_one_is_proven() -> None:
    """A rack balance whose optimum (0.0027) is the difference of u^1.1 and T^1.1 near 1:
    kept to 12 digits each, the terms left a stated error of 5e-9 of that value, and the
    bucket FEASIBLE ("approximated") with no time limit; a sum of at most
    ``pwl.TINY_SUM`` terms keeps 13."""
    data = random_shape_scenario(8, 3, 440)
    assert tabulates_a_threshold(data)
    check_against_enumeration(data, "440 (8, 3)")


def f(u: int) -> float:
    return (u / 1000) ** 1.1


def largest_z(model: cp_model.CpModel, piece: ChordPiece, u: int) -> int:
    """The largest z the piece allows at ``u``."""
    probe = cp_model.CpModel()
    probe.Proto().copy_from(model.Proto())
    probe.add(piece.u == u)
    probe.maximize(piece.z)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(probe) == cp_model.OPTIMAL
    return int(solver.objective_value)


@pytest.mark.parametrize("span", [5_000, 10**9])
def test_chords_hold_z_at_f_and_refining_makes_a_point_exact(span: int) -> None:
    model = cp_model.CpModel()
    resolution = 10**6
    top = math.ceil(resolution * f(span))
    piece = ChordPiece(model, model.new_int_var(0, top, "z"), model.new_int_var(0, span, "u"),
                       span, f, resolution)
    points = [0, span // 7, span // 2, span]
    model.add_exactly_one(piece.add_segment(a, b) for a, b in zip([-1] + points, points))
    inside = [span // 3, span // 7 + 1, span - 1]
    for u in points + inside:  # never below f; within a unit of it at the breakpoints
        z = largest_z(model, piece, u)
        assert z >= resolution * f(u) - 1
        if u in points:
            assert z <= math.ceil(resolution * f(u))
    state = piece.snapshot()
    values = [0] * len(model.Proto().variables)
    values[piece.u.index], values[piece.z.index] = inside[0], top
    assert piece.refine(model, values)
    assert values[piece.z.index] == math.ceil(resolution * f(inside[0]))
    assert largest_z(model, piece, inside[0]) == math.ceil(resolution * f(inside[0]))
    assert not piece.refine(model, values)  # exact there now
    piece.restore(state)  # the split segment's floor on z is back
    assert len(piece.segments) == len(points)
