"""The LP floor of a CP-SAT model: proven (never above the integer optimum CP-SAT finds, for
GLOP's duals and for arbitrary ones), tight (the LP value rounded up), and its rounded point
is reported as a solution only when it is one."""

from __future__ import annotations

import math
import random
import time

import pytest
from ortools.linear_solver import linear_solver_pb2, pywraplp
from ortools.sat.python import cp_model

from cpsat_rebalancer import evaluate, parse_scenario, solve_scenario
from cpsat_rebalancer.cpsat.linear import lin_sum
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve.accelerate.lp_bound import (
    RETRIES,
    RETRY_FACTOR,
    RETRY_FLOOR,
    _request,
    _safe_floor,
    glop,
    linear_rows,
    snapshot,
    solve_lp,
)
from cpsat_rebalancer.solve.compile import compile_model


def random_model(seed: int, with_max: bool = False) -> cp_model.CpModel:
    """A small integer program with random linear rows (both sides, equalities, open sides),
    optionally a max: always feasible (a random point is made to satisfy every row)."""
    rng = random.Random(seed)
    cp = cp_model.CpModel()
    n = rng.randint(2, 6)
    xs = [cp.new_int_var(rng.randint(-5, 0), rng.randint(1, 9), f"x{i}") for i in range(n)]
    point = [rng.randint(int(x.proto.domain[0]), int(x.proto.domain[-1])) for x in xs]
    for _ in range(rng.randint(1, 6)):
        coefs = [rng.randint(-7, 7) for _ in xs]
        at = sum(c * p for c, p in zip(coefs, point))
        kind = rng.choice(["le", "ge", "eq", "range"])
        expr = sum(c * x for c, x in zip(coefs, xs))
        if kind == "le":
            cp.add(expr <= at + rng.randint(0, 5))
        elif kind == "ge":
            cp.add(expr >= at - rng.randint(0, 5))
        elif kind == "eq":
            cp.add(expr == at)
        else:
            cp.add_linear_constraint(expr, at - rng.randint(0, 4), at + rng.randint(0, 4))
    objective = sum(rng.randint(-9, 9) * x for x in xs)
    if with_max:
        top = cp.new_int_var(-100, 100, "top")
        cp.add_max_equality(top, [xs[0] * 2 + 1, xs[-1] - 3, xs[n // 2]])
        objective += rng.randint(1, 5) * top
    cp.minimize(objective + rng.randint(-20, 20))
    return cp


def integer_optimum(cp: cp_model.CpModel) -> int:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    assert solver.solve(cp) == cp_model.OPTIMAL
    return round(solver.objective_value)


@pytest.mark.parametrize("seed", range(80))
def test_floor_is_proven_and_tight(seed: int) -> None:
    cp = random_model(seed, with_max=seed % 4 == 3)
    optimum = integer_optimum(cp)
    lp = solve_lp(cp, 5.0)
    assert lp is not None
    assert lp.floor <= optimum
    if lp.value is not None:  # reported as a solution: check it is one, at that value
        check = cp.clone()
        for index, value in enumerate(lp.point):
            var = check.get_int_var_from_proto_index(index)
            check.add(var == value)
        solver = cp_model.CpSolver()
        assert solver.solve(check) == cp_model.OPTIMAL
        assert round(solver.objective_value) == lp.value >= optimum
    # tight: within a unit of the LP value GLOP reports for the same rows
    model = snapshot(cp)
    rows = linear_rows(model)
    response = linear_solver_pb2.MPSolutionResponse()
    pywraplp.Solver.SolveWithProto(_request(model, rows, 5.0, None), response)
    lp_value = response.objective_value + model.objective.offset
    assert lp.floor == math.ceil(lp_value - 1e-6)


@pytest.mark.parametrize("seed", range(30))
def test_any_multipliers_give_a_valid_floor(seed: int) -> None:
    """The Lagrangian bound holds for any duals, not only optimal ones: what makes the floor
    a proof whatever GLOP's tolerances (and whatever it returns: NaN, overflowing values)."""
    cp = random_model(seed)
    optimum = integer_optimum(cp)
    model = snapshot(cp)
    rows = linear_rows(model)
    rng = random.Random(seed)
    duals = [rng.choice([rng.uniform(-3, 3), rng.uniform(-3, 3), math.nan, 1e300, -1e300])
             for _ in rows.lo]
    assert _safe_floor(model, rows, duals) <= optimum


def test_rounded_point_that_breaks_a_row_is_not_a_solution() -> None:
    """x + y == 1 with 2x <= 1 and 2y <= 1 (the LP's only point is x = y = 1/2): the floor
    (the objective x + y is 1 everywhere) is proven although no point rounds to a solution,
    and the model has no integer solution at all."""
    cp = cp_model.CpModel()
    x, y = cp.new_int_var(0, 1, "x"), cp.new_int_var(0, 1, "y")
    cp.add(x + y == 1)
    cp.add(2 * x <= 1)
    cp.add(2 * y <= 1)
    cp.minimize(x + y)
    lp = solve_lp(cp, 5.0)
    assert lp is not None and lp.floor == 1 and lp.value is None


@pytest.mark.parametrize("spent", [None, 0.1])
def test_retries_get_a_few_times_the_first_attempt(monkeypatch: pytest.MonkeyPatch,
                                                   spent: float | None) -> None:
    """GLOP without scaling spun for the whole relaxation budget (8 s) on a 18-variable LP
    whose costs are 10^15 apart: a retry gets at most RETRY_FACTOR times the first
    attempt's seconds (at least RETRY_FLOOR), also where the caller made that attempt and
    no deadline was given."""
    limits: list[float] = []

    def abnormal(request: linear_solver_pb2.MPModelRequest,
                 response: linear_solver_pb2.MPSolutionResponse) -> None:
        limits.append(request.solver_time_limit_seconds)
        response.status = linear_solver_pb2.MPSOLVER_ABNORMAL

    monkeypatch.setattr(pywraplp.Solver, "SolveWithProto", abnormal)
    request = linear_solver_pb2.MPModelRequest(
        solver_type=linear_solver_pb2.MPModelRequest.GLOP_LINEAR_PROGRAMMING)
    deadline = math.inf if spent is not None else time.monotonic() + 100
    assert glop(request, deadline, spent=spent) is None
    retries = limits if spent is not None else limits[1:]
    assert len(retries) == len(RETRIES)
    if spent is None:
        assert limits[0] > 90  # the first attempt: what is left of the deadline
    most = max(RETRY_FLOOR, RETRY_FACTOR * (spent or 0.0)) + 0.05
    assert all(0 < limit <= most for limit in retries), limits


def test_a_model_of_costs_near_1e10_gets_its_floor() -> None:
    """A drawn shape's position 0 (a SOFT group presence minimum, priced 100 per unit of
    a fine scale, beside a balance): GLOP ends ABNORMAL on its costs as they are, under
    every retry, and, scaled near 1, calls its point imprecise at the default feasibility
    tolerance. The floor stands below the start's value and above the objective's
    lowest."""
    scenario = parse_scenario(random_shape_scenario(2000, 100, 14))
    builder, buckets = compile_model(scenario.problem, scenario.model)
    form = builder.integerize(lin_sum(buckets[0].terms))
    builder.cp.minimize(form.expr)
    lp = solve_lp(builder.cp, 20.0)
    start = evaluate(scenario.problem, scenario.model, scenario.problem.initial)
    assert lp is not None and form.lo < lp.floor <= start.positions[0] * form.factor


def test_a_bucket_whose_loads_are_too_wide_for_variables_gets_the_linear_bound() -> None:
    """Drawn shape 0 at 400x20 (a ColocateGroups goal over sizes near 1e8): its loads are
    too wide to be variables, so CP-SAT's accelerators are off, and the bucket's bound was
    CP-SAT's own, 75 under a value of 8.6e11. GLOP's floor on the whole model holds for any
    model: the bound lies within 1e-6 of the value, and below it."""
    scenario = parse_scenario(random_shape_scenario(400, 20, 0))
    result = solve_scenario(scenario, SolverOptions(time_limit=10, workers=1, seed=0))
    first = result.buckets[0]
    assert first.bound is not None
    assert first.objective * (1 - 1e-6) <= first.bound <= first.objective


@pytest.mark.slow
def test_a_movement_bucket_gets_the_linear_bound_of_the_whole_model() -> None:
    """Drawn shape 25 at 1000x50 (a count of used racks, then the moves): with the count
    held, the stay rows make an LP pay for every object an emptied rack sheds, which the
    floors read from the loads do not see (2 moves against 64). GLOP's floor on the whole
    model proves the moves within 15 s."""
    scenario = parse_scenario(random_shape_scenario(1000, 50, 25))
    result = solve_scenario(scenario, SolverOptions(time_limit=15, workers=1, seed=0))
    moves = result.buckets[1]
    assert moves.status == "OPTIMAL" and moves.bound == moves.objective
