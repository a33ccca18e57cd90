"""The linear-programming relaxation of a small CP-SAT model, solved by GLOP, with a bound
that is proven in exact arithmetic.

CP-SAT proves a model's bound through its own LP, inside a search that first presolves and
probes: on the load relaxation of a fine objective (SQUARES' many line pieces) that takes
seconds, where GLOP solves the same LP in a fraction of that time. A floating-point
LP value is not a proof, though: the bound here is the Lagrangian bound of GLOP's duals,
``min over the variables' domains of (c - A'y)·x + y·b``, which holds for any multipliers
``y`` and is evaluated in integers (the model's data are integers; the duals are scaled by a
power of two). With near-optimal duals it is within a fraction of a unit of the LP value.

The LP optimum, rounded, is often a solution of the model itself (the loads of a separable
convex objective sit on breakpoints): when every constraint is linear, that is checked
exactly, and a rounded solution at the bound is the model's optimum without any search.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from ortools.linear_solver import linear_solver_pb2, pywraplp
from ortools.sat import cp_model_pb2
from ortools.sat.python import cp_model

DUAL_BITS = 60  # duals are scaled by 2**DUAL_BITS and truncated to integers
FEASIBILITY_TOLERANCE = 1e-4  # GLOP's check of its final point (see _request)
INFINITE = 2**62  # CP-SAT writes an open side as +-(2**63 - 1); wider than this is open
# variables and constraints of a model whose rows are built in a second, at most (the
# build is not interrupted: a larger model is left without the LP rather than overrun)
BUILD_RATE = 200_000


@dataclass
class LinearRelaxation:
    floor: int  # a proven lower bound on the model's objective (its integer units)
    point: list[int]  # the LP optimum, rounded (clipped to the variables' domains)
    value: int | None  # the objective at ``point`` when it satisfies every constraint


@dataclass
class LinearRows:
    """The model's constraints as sparse rows ``lo <= sum coef·x[col] <= hi`` (row ``r``'s
    terms at ``starts[r]:starts[r + 1]``): the linear ones as they are, a ``t = max(e_k)``
    as ``t >= e_k`` (a relaxation). ``exact`` says that these rows are the whole model (so
    a point meeting them is a solution)."""
    starts: list[int] = field(default_factory=lambda: [0])
    cols: list[int] = field(default_factory=list)
    coefs: list[int] = field(default_factory=list)
    lo: list[float] = field(default_factory=list)
    hi: list[float] = field(default_factory=list)
    exact: bool = True

    def add(self, cols: Iterable[int], coefs: Iterable[int], lo: float, hi: float) -> None:
        self.cols.extend(cols)
        self.coefs.extend(coefs)
        self.starts.append(len(self.cols))
        self.lo.append(lo if lo > -INFINITE else -math.inf)
        self.hi.append(hi if hi < INFINITE else math.inf)

    def row_of_terms(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.lo)), np.diff(self.starts))


def snapshot(cp: cp_model.CpModel) -> cp_model_pb2.CpModelProto:
    """The model as a protobuf message: OR-Tools' own model proto has no byte serialization
    in Python and reads its repeated fields element by element (about a microsecond each),
    while a file written by CP-SAT parses in milliseconds."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.pb")
        if not cp.export_to_file(path):
            raise RuntimeError("CP-SAT could not write the relaxation model")
        with open(path, "rb") as handle:
            return cp_model_pb2.CpModelProto.FromString(handle.read())


def linear_rows(model: cp_model_pb2.CpModelProto) -> LinearRows:
    rows = LinearRows()
    for constraint in model.constraints:
        kind = constraint.WhichOneof("constraint")
        if constraint.enforcement_literal or kind not in ("linear", "lin_max"):
            rows.exact = False  # dropped: a relaxation
        elif kind == "linear":
            linear = constraint.linear
            if len(linear.domain) > 2:
                rows.exact = False  # its hull: a relaxation
            rows.add(linear.vars, linear.coeffs, linear.domain[0], linear.domain[-1])
        else:
            rows.exact = False
            target = constraint.lin_max.target
            for expr in constraint.lin_max.exprs:
                terms = dict(zip(target.vars, target.coeffs))
                for var, coef in zip(expr.vars, expr.coeffs):
                    terms[var] = terms.get(var, 0) - coef
                rows.add(terms.keys(), terms.values(), expr.offset - target.offset, math.inf)
    return rows


# GLOP settings to retry with when it ends ABNORMAL on a feasible LP, as it can on a rack
# balance's rows (coefficients 10^9 apart) unless its scaling is off
RETRIES = ("use_scaling: false", "solve_dual_problem: ALWAYS_DO", "use_preprocessing: false",
           "use_dual_simplex: true")
# a retry's seconds: at most this many times the first attempt's, and at least RETRY_FLOOR
# (a retry that does not settle soon, such as one without scaling on an LP whose costs are
# 10^15 apart, spins until its limit)
RETRY_FACTOR, RETRY_FLOOR = 4.0, 0.25


def glop(request: linear_solver_pb2.MPModelRequest, deadline: float = math.inf,
         feasible: bool = False, spent: float | None = None
         ) -> linear_solver_pb2.MPSolutionResponse | None:
    """Solve ``request`` with GLOP (unless the caller did, in ``spent`` seconds), then with
    each of RETRIES while it ends ABNORMAL (or INFEASIBLE, on an LP known to be
    ``feasible``) and time is left until ``deadline`` (monotonic seconds); None unless one
    reaches OPTIMAL."""
    response = linear_solver_pb2.MPSolutionResponse()
    retried = {linear_solver_pb2.MPSOLVER_ABNORMAL} | (
        {linear_solver_pb2.MPSOLVER_INFEASIBLE} if feasible else set())
    given = request.solver_specific_parameters
    for parameters in RETRIES if spent is not None else ("",) + RETRIES:
        started = time.monotonic()
        left = deadline - started
        if parameters and left <= 0.01:
            break
        if spent is not None:
            left = min(left, max(RETRY_FLOOR, RETRY_FACTOR * spent))
        request.solver_specific_parameters = " ".join(p for p in (given, parameters) if p)
        if math.isfinite(left):
            request.solver_time_limit_seconds = max(left, 0.01)
        pywraplp.Solver.SolveWithProto(request, response)
        if response.status == linear_solver_pb2.MPSOLVER_OPTIMAL:
            return response
        if response.status not in retried:
            break
        if spent is None:
            spent = time.monotonic() - started
    return None


def _request(model: cp_model_pb2.CpModelProto, rows: LinearRows, seconds: float,
             work: float | None) -> linear_solver_pb2.MPModelRequest:
    request = linear_solver_pb2.MPModelRequest(
        solver_type=linear_solver_pb2.MPModelRequest.GLOP_LINEAR_PROGRAMMING,
        solver_time_limit_seconds=max(seconds, 0.01))
    # the floor holds for any duals, so a point GLOP calls imprecise (it would have to move
    # a right-hand side by more than its default 1e-6 to meet it) still serves
    parameters = [f"solution_feasibility_tolerance: {FEASIBILITY_TOLERANCE}"]
    if work is not None:
        parameters.append(f"max_deterministic_time: {work}")
    request.solver_specific_parameters = " ".join(parameters)
    lp = request.model
    for variable in model.variables:
        lo, hi = variable.domain[0], variable.domain[-1]
        lp.variable.add(lower_bound=lo if lo > -INFINITE else -math.inf,
                        upper_bound=hi if hi < INFINITE else math.inf)
    for var, coef in zip(model.objective.vars, model.objective.coeffs):
        lp.variable[var].objective_coefficient += coef
    for row, (lo, hi) in enumerate(zip(rows.lo, rows.hi)):
        begin, end = rows.starts[row], rows.starts[row + 1]
        lp.constraint.add(var_index=rows.cols[begin:end], coefficient=rows.coefs[begin:end],
                          lower_bound=lo, upper_bound=hi)
    return request


def _safe_floor(model: cp_model_pb2.CpModelProto, rows: LinearRows, duals: list[float]) -> int:
    """The Lagrangian bound of ``duals`` in exact integer arithmetic (see the module
    docstring), rounded up: valid for any duals, tight for optimal ones."""
    scale = 2.0**DUAL_BITS
    multipliers = np.zeros(len(duals), dtype=object)
    side = 0  # sum of y·(the side of each row its multiplier's sign reads)
    for row, dual in enumerate(duals):
        if not math.isfinite(dual * scale):
            continue  # (a zero multiplier is as valid as any)
        multiplier = int(dual * scale)  # exact: any multiplier gives a valid bound
        if multiplier > 0 and rows.lo[row] != -math.inf:
            side += multiplier * int(rows.lo[row])
        elif multiplier < 0 and rows.hi[row] != math.inf:
            side += multiplier * int(rows.hi[row])
        else:
            continue
        multipliers[row] = multiplier
    reduced = np.zeros(len(model.variables), dtype=object)
    for var, coef in zip(model.objective.vars, model.objective.coeffs):
        reduced[var] += coef << DUAL_BITS
    cols = np.asarray(rows.cols, dtype=np.int64)
    np.subtract.at(reduced, cols,
                   np.asarray(rows.coefs, dtype=object) * multipliers[rows.row_of_terms()])
    total = side + (int(model.objective.offset) << DUAL_BITS)
    for var in np.flatnonzero(reduced).tolist():
        domain = model.variables[var].domain
        total += min(reduced[var] * domain[0], reduced[var] * domain[-1])
    return -((-total) >> DUAL_BITS)  # ceil(total / 2**DUAL_BITS)


def _rounded(model: cp_model_pb2.CpModelProto, values: list[float]) -> np.ndarray:
    lows = np.asarray([variable.domain[0] for variable in model.variables], dtype=np.int64)
    highs = np.asarray([variable.domain[-1] for variable in model.variables], dtype=np.int64)
    return np.clip(np.rint(np.asarray(values)), lows, highs).astype(np.int64)


def _satisfies(model: cp_model_pb2.CpModelProto, rows: LinearRows, point: np.ndarray) -> bool:
    """Whether an integer point meets every row and every variable's domain, exactly."""
    for variable, x in zip(model.variables, point.tolist()):
        domain = variable.domain
        if len(domain) > 2 and not any(domain[k] <= x <= domain[k + 1]
                                       for k in range(0, len(domain), 2)):
            return False
    coefs = np.asarray(rows.coefs, dtype=object)
    lhs = np.zeros(len(rows.lo), dtype=object)
    np.add.at(lhs, rows.row_of_terms(),
              coefs * point.astype(object)[np.asarray(rows.cols, dtype=np.int64)])
    return all(lo <= value <= hi for value, lo, hi in zip(lhs.tolist(), rows.lo, rows.hi))


def objective_at(objective: cp_model_pb2.CpObjectiveProto, point: Sequence[int]) -> int:
    """An integer objective (offset integral, no scaling) at a point, exactly: CP-SAT's
    ``objective_value`` is a double, inexact past 2^53."""
    return int(objective.offset) + sum(
        coef * int(point[var]) for var, coef in zip(objective.vars, objective.coeffs))


def solve_lp(cp: cp_model.CpModel, seconds: float,
             work: float | None = None) -> LinearRelaxation | None:
    """A proven floor on ``cp``'s (integer, minimized) objective from its LP relaxation, in
    at most about ``seconds`` (and ``work`` deterministic seconds), and the rounded LP
    optimum (with its objective when every constraint is linear and it meets them all).
    None when GLOP does not reach an optimum in time, or the objective is not an integer
    one."""
    deadline = time.monotonic() + seconds
    if len(cp.proto.variables) + len(cp.proto.constraints) > BUILD_RATE * seconds:
        return None  # its rows alone would take the time
    model = snapshot(cp)
    objective = model.objective
    if (objective.scaling_factor not in (0, 1) or objective.offset != int(objective.offset)
            or model.HasField("floating_point_objective")):
        return None
    rows = linear_rows(model)
    request = _request(model, rows, seconds, work)
    # costs near 1: GLOP's tolerances are absolute, and on costs near 1e10 (a soft
    # constraint's price times a fine unit) it ends ABNORMAL however it is set; a power of
    # two scales back exactly
    scale = 2.0 ** math.ceil(math.log2(max(map(abs, model.objective.coeffs), default=0) or 1))
    for variable in request.model.variable:
        variable.objective_coefficient /= scale
    response = glop(request, deadline)
    if response is None:
        return None
    floor = _safe_floor(model, rows, [dual * scale for dual in response.dual_value])
    point = _rounded(model, list(response.variable_value))
    value = None
    if rows.exact and _satisfies(model, rows, point):
        value = objective_at(objective, point)
    return LinearRelaxation(floor, point.tolist(), value)
