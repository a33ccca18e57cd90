"""Objectives whose coefficients no power of ten takes to integers: a capacity excess
normalized by a sum of decimal capacities, in a soft penalty beside integer costs. The
compiled objective rounds down (``atoms.term_below``), so the compiled bound bounds the
exact optimum, and the positive part counts in its exact form's own units
(``IntegerForms._own_unit_rule``)."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
from ortools.sat.python import cp_model
from test_bruteforce import check_against_enumeration

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.cpsat.domains import DomainCountingModel
from cpsat_rebalancer.cpsat.forms import IntegerForms
from cpsat_rebalancer.cpsat.linear import Lin, lin_sum
from cpsat_rebalancer.solve import closure
from cpsat_rebalancer.solve.compile import compile_model


class Forms(IntegerForms):
    def __init__(self) -> None:
        super().__init__()
        self.cp, self.accelerate, self.guard = DomainCountingModel(), True, None


@pytest.mark.parametrize("seed", range(30))
def test_an_objective_never_lies_above_its_exact_value(seed: int) -> None:
    """Random atoms of one sign or either, bounding or exact, under coefficients from coarse
    to far finer than the objective's scale: at every value tried, the least compiled value
    CP-SAT allows lies below the exact one by at most the stated error, and above it by at
    most the stated over-estimate (only the atoms of either sign have one)."""
    rng = random.Random(seed)
    forms = Forms()
    atoms, lin = [], Lin(const=Fraction(rng.randint(-10**6, 10**6), rng.randint(1, 10**9)))
    for _ in range(rng.randint(1, 4)):
        lo = rng.choice([0, 0, -rng.randint(1, 10**6), rng.randint(1, 10**3)])
        hi = lo + rng.randint(1, 10**rng.randint(1, 12))
        var = forms.cp.new_int_var(lo, hi, "atom")
        atoms.append((var, lo, hi))
        index = forms.new_atom(var, lo, hi, bounding=rng.random() < 0.5 and lo >= 0)
        lin += Lin.atom(index, Fraction(rng.randint(1, 10**9), rng.randint(1, 10**15))
                        * rng.choice([1, 1, -1]))
    magnitude = 10**rng.randint(6, 17)  # a large integer term sets the objective's scale
    step = forms.cp.new_int_var(0, 1, "step")
    lin += Lin.atom(forms.new_atom(step, 0, 1), magnitude)
    form = forms.integerize(lin, objective=True)
    if all(lo >= 0 or hi <= 0 for _, lo, hi in atoms):
        assert form.over == 0
    for _ in range(5):
        values = [rng.randint(lo, hi) for _, lo, hi in atoms] + [rng.randint(0, 1)]
        exact = lin.const + sum(c * v for c, v in zip(lin.terms.values(), values))
        model = forms.cp.clone()
        for var, value in zip([var for var, _, _ in atoms] + [step], values):
            model.add(model.get_int_var_from_proto_index(var.index) == value)
        model.minimize(form.expr)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        assert solver.solve(model) == cp_model.OPTIMAL
        compiled = Fraction(solver.value(form.expr)) / form.factor
        stated = 1 + Fraction(1, 10**12)  # (errors are kept as floats)
        assert compiled <= exact + Fraction(form.over) * stated
        assert exact - compiled <= Fraction(form.error) * stated


def decimal_excess_scenario(seed: int) -> dict:
    """4-5 objects of sizes near 1e7 with 6 decimals (exact at their scale), on 3 hosts
    of capacities with every digit a double holds, the start over h0's limit (every
    object there): a Capacity of limit 0.9 (DEFAULT or SOFT, any definition) whose
    normalized excess costs 100 per unit and 10000 per broken host at position 0, and a
    movement goal at position 0 or 1."""
    rng = random.Random(seed)
    objects, hosts = [f"t{o}" for o in range(rng.randint(4, 5))], ["h0", "h1", "h2"]
    sizes = {o: round(rng.uniform(0.5, 2.0) * 1e7, 6) for o in objects}
    total = sum(sizes.values())
    capacities = {h: rng.uniform(0.4, 0.9) * total for h in hosts}
    capacities["h0"] = rng.uniform(0.3, 0.8) * total
    definition = rng.choice(["AFTER", "DURING", "DOUBLE_DURING"])
    return {
        "assignment": {"h0": objects, "h1": [], "h2": []},
        "objectDimensions": {"cpu": sizes},
        "containerDimensions": {"cpu": capacities},
        "goals": [{"spec": {"minimizeMovementSpec": {"dimension": "object_count",
                                                     "doNotNormalize": True}},
                   "tuplePos": rng.choice([0, 1])}],
        "constraints": [{"spec": {"capacitySpec": {
            "name": "cap", "dimension": "cpu", "definition": definition,
            "limit": {"type": "RELATIVE", "globalLimit": 0.9}}},
            "policy": rng.choice(["DEFAULT", "SOFT"])}],
    }


@pytest.mark.parametrize("seed", range(20))
def test_normalized_excesses_of_decimal_sizes_are_proven_without_the_closure(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """OPTIMAL at the enumerated optimum to relative 1e-9, every bound below it, with the
    exact closure out of reach (as on a model of more than a few objects): the compiled
    model's rounding is the only thing between the proof and the evaluator."""
    monkeypatch.setattr(closure, "OBJECT_LIMIT", 0)
    data = decimal_excess_scenario(seed)
    scenario = parse_scenario(data)
    builder, buckets = compile_model(scenario.problem, scenario.model)
    assert not builder.integral(lin_sum(buckets[0].terms))
    check_against_enumeration(data, seed)
