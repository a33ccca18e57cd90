"""An excess max(0, a·U + b) over an integer load U, as CpBuilder.positive_part writes it
(a chord below a kink between two integers; steps of U where a is steep): it removes no
integer point (the least excess CP-SAT allows at each integer load is max(0, ·) exactly),
and it makes a rack balance's LP floor the integer optimum, computed here by marginal
allocation (separable convex costs under one sum: greedy is exact)."""

from __future__ import annotations

import heapq
import random
from fractions import Fraction

import pytest
from ortools.sat.python import cp_model

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.cpsat.builder import CpBuilder
from cpsat_rebalancer.cpsat.forms import WELL_SCALED
from cpsat_rebalancer.cpsat.linear import Lin, lin_sum
from cpsat_rebalancer.generators import random_scenario, scale_instance
from cpsat_rebalancer.solve.accelerate.lp_bound import solve_lp
from cpsat_rebalancer.solve.accelerate.relaxation import loads_model, split_constraints
from cpsat_rebalancer.solve.compile import compile_model


@pytest.mark.parametrize("seed", range(40))
def test_the_cut_keeps_every_integer_point(seed: int) -> None:
    rng = random.Random(seed)
    builder = CpBuilder(parse_scenario(random_scenario(0, max_objects=2)).problem)
    lo = rng.randint(-20, 5)
    hi = lo + rng.randint(1, 40)
    u = builder.cp.new_int_var(lo, hi, "u")
    # odd seeds: a slope past WELL_SCALED units, written in steps of the load
    steep = 2 * WELL_SCALED if seed % 2 else 0
    coef = Fraction(rng.choice([-1, 1]) * (steep + rng.randint(1, 9)), rng.randint(1, 12))
    const = Fraction(rng.randint(-90, 90), rng.randint(1, 12))
    excess = builder.positive_part(Lin.atom(builder.new_atom(u, lo, hi), coef) + const)
    form = builder.integerize(excess)  # (the form itself when it cannot be negative)
    builder.cp.minimize(form.expr)
    for value in range(lo, hi + 1):
        fixed = builder.cp.clone()
        fixed.add(fixed.get_int_var_from_proto_index(u.Index()) == value)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        assert solver.solve(fixed) == cp_model.OPTIMAL
        least = Fraction(round(solver.objective_value)) / form.factor
        assert least == max(Fraction(0), coef * value + const), f"u = {value}"


def rack_optimum(data: dict) -> Fraction:
    """The least mean rack excess over the fixed average of relative utilizations, over
    integer rack loads summing to the total (a rack holds at most its capacity)."""
    host_cap = data["containerDimensions"]["cpu"]
    rack_of = data["scopes"]["rack"]
    caps: dict[str, int] = {}
    for host, rack in rack_of.items():
        caps[rack] = caps.get(rack, 0) + int(host_cap[host])
    size = data["objectDimensions"]["cpu"]
    initial = dict.fromkeys(caps, 0)
    for host, objects in data["assignment"].items():
        initial[rack_of[host]] += sum(int(size[o]) for o in objects)
    average = sum(Fraction(initial[r], caps[r]) for r in caps) / len(caps)
    load = {r: min(caps[r], int(average * caps[r])) for r in caps}  # free up to the average
    total = Fraction(0)
    unit_costs = [((load[r] + 1 - average * caps[r]) / caps[r], r) for r in caps]
    heapq.heapify(unit_costs)
    for _ in range(sum(initial.values()) - sum(load.values())):
        cost, rack = heapq.heappop(unit_costs)
        total += cost
        load[rack] += 1
        if load[rack] < caps[rack]:
            heapq.heappush(unit_costs, (Fraction(1, caps[rack]), rack))
    return total / len(caps)


@pytest.mark.parametrize("objects,containers,seed", [(3000, 300, 3), (4000, 300, 2),
                                                      (5000, 400, 1)])
def test_a_rack_balances_lp_floor_is_its_integer_optimum(objects, containers, seed) -> None:
    data = scale_instance("racks", objects, containers, seed)
    data["goals"] = data["goals"][:1]
    optimum = rack_optimum(data)
    assert optimum > 0  # the racks cannot all sit at the average: kinks matter
    scenario = parse_scenario(data)
    builder, buckets = compile_model(scenario.problem, scenario.model)
    form = builder.integerize(lin_sum(buckets[0].terms))
    kept, _, _ = split_constraints(builder)
    cp = loads_model(builder, kept, builder.container_loads(), ["cpu"])
    cp.minimize(form.expr)
    lp = solve_lp(cp, 10.0)
    assert lp is not None
    error = buckets[0].error + form.error + 1e-12
    assert float(Fraction(lp.floor) / form.factor) == pytest.approx(float(optimum), abs=error)
