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

from cpsat_rebalancer import evaluate, parse_scenario
from cpsat_rebalancer.cpsat.domains import DomainCountingModel
from cpsat_rebalancer.cpsat.forms import IntegerForms
from cpsat_rebalancer.cpsat.linear import Lin, lin_sum
from cpsat_rebalancer.shapes import random_shape_scenario
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


@pytest.mark.parametrize("seed", range(30))
def test_a_soft_terms_positive_part_never_lies_above_its_exact_value(seed: int) -> None:
    """max(0, lin) written ``below`` (a soft term) over atoms whose values stand for loads
    of rounded sizes (each within its drift of the exact load), with and without a hard
    rule's limit on lin: at every value tried, the least value CP-SAT allows the term is
    at most the exact max(0, lin) and below it by at most the stated error, and nothing
    of that error is stated as an over-estimate."""
    rng = random.Random(seed)
    forms = Forms()
    atoms, lin = [], Lin(const=Fraction(rng.randint(-10**9, 10**6), rng.randint(1, 10**3)))
    for _ in range(rng.randint(1, 3)):
        hi = rng.randint(1, 10**rng.randint(2, 15))
        drift = rng.choice([0.0, rng.uniform(0, 0.5) * min(hi, 1000)])
        var = forms.cp.new_int_var(0, hi, "load")
        atoms.append((var, hi, drift))
        lin += Lin.atom(forms.new_atom(var, 0, hi, drift=drift),
                        Fraction(rng.randint(1, 10**9), rng.randint(1, 10**12)))
    lowest, highest = lin.const, lin.const + sum(
        c * hi for c, (_, hi, _) in zip(lin.terms.values(), atoms))
    at_most = (None if rng.random() < 0.5
               else lowest + (highest - lowest) * Fraction(rng.randint(0, 100), 100))
    tried = [[rng.randint(0, hi) for _, hi, _ in atoms] for _ in range(5)]
    if at_most is not None:  # the hard rule (lenient by its rounding), as a policy sets it
        forms.require(lin, at_most)
        edge = forms.cp.clone()  # the first atom at the most the rule allows, the others 0
        for var, _, _ in atoms[1:]:
            edge.add(edge.get_int_var_from_proto_index(var.index) == 0)
        edge.maximize(edge.get_int_var_from_proto_index(atoms[0][0].index))
        solver = cp_model.CpSolver()
        if solver.solve(edge) == cp_model.OPTIMAL:
            tried.append([solver.value(atoms[0][0])] + [0] * (len(atoms) - 1))
    errors = dict(forms.errors)
    term = forms.positive_part(lin, what="soft", below=True, at_most=at_most)
    assert forms.overs.get("soft", 0.0) == 0.0
    stated = Fraction(forms.errors.get("soft", 0.0) - errors.get("soft", 0.0))
    for values in tried:
        compiled_lin = lin.const + sum(c * v for c, v in zip(lin.terms.values(), values))
        exact = compiled_lin + sum(  # the sizes' rounding, within each atom's drift
            c * Fraction(rng.uniform(-drift, drift))
            for c, (_, _, drift) in zip(lin.terms.values(), atoms))
        model = forms.cp.clone()
        for (var, _, _), value in zip(atoms, values):
            model.add(model.get_int_var_from_proto_index(var.index) == value)
        # one variable in its own units (or lin itself, where exact and never negative)
        model.minimize(sum(forms.atoms[a].expr * int(c > 0) for a, c in term.terms.items()))
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        status = solver.solve(model)
        if status == cp_model.INFEASIBLE:  # only where the hard rule keeps no such values
            assert at_most is not None and compiled_lin > at_most
            continue
        assert status == cp_model.OPTIMAL
        compiled = term.const + sum(c * solver.value(forms.atoms[a].expr)
                                    for a, c in term.terms.items())
        assert compiled <= max(Fraction(0), exact)
        assert max(Fraction(0), exact) - compiled <= stated * (1 + Fraction(1, 10**12))


def soft_drain_scenario(seed: int) -> dict:
    """4-5 objects of sizes near 1e15 (more digits than a model's loads keep: rounded, each
    load within the objects' summed rounding of its exact value) on 3 hosts, a SOFT ToFree
    of h0 (100 per unit of the load left, 10000 per host not emptied) beside a Capacity of
    limit 0.9 (DEFAULT or SOFT) and moves at position 0 or 1."""
    rng = random.Random(seed)
    objects, hosts = [f"t{o}" for o in range(rng.randint(4, 5))], ["h0", "h1", "h2"]
    sizes = {o: rng.uniform(0.5, 2.0) * 1e15 for o in objects}
    total = sum(sizes.values())
    capacities = {h: rng.uniform(0.5, 1.2) * total for h in hosts}
    on_h0 = rng.randint(1, 2)
    return {
        "assignment": {"h0": objects[:on_h0], "h1": objects[on_h0:], "h2": []},
        "objectDimensions": {"cpu": sizes},
        "containerDimensions": {"cpu": capacities},
        "goals": [{"spec": {"minimizeMovementSpec": {"dimension": "object_count",
                                                     "doNotNormalize": True}},
                   "tuplePos": rng.choice([0, 1])}],
        "constraints": [
            {"spec": {"toFreeSpec": {"name": "free", "dimension": "cpu",
                                     "containers": ["h0"]}}, "policy": "SOFT"},
            {"spec": {"capacitySpec": {"name": "cap", "dimension": "cpu",
                                       "limit": {"type": "RELATIVE", "globalLimit": 0.9}}},
             "policy": rng.choice(["DEFAULT", "SOFT"])}],
    }


@pytest.mark.parametrize("seed", range(12))
def test_a_soft_drain_over_rounded_sizes_is_proven_without_the_closure(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """OPTIMAL at the enumerated optimum, every bound below it, though the loads are
    rounded and the exact closure is out of reach: the soft terms, lowered by their
    rounding, never lie above their exact value, and where h0 ends empty they are exact."""
    monkeypatch.setattr(closure, "OBJECT_LIMIT", 0)
    data = soft_drain_scenario(seed)
    scenario = parse_scenario(data)
    builder, _ = compile_model(scenario.problem, scenario.model)
    assert builder.scale("cpu").drift > 0
    check_against_enumeration(data, seed)


def test_a_common_measure_takes_an_objective_to_integers_exactly() -> None:
    """Coefficients 3·M and 5·M with M = 10^30 / (10^40 + 7): far beyond 64 bits at any
    power of ten that keeps them integers, but in units of M the form is 3·x + 5·y, exact
    (where the coarse scale rounded both)."""
    forms = Forms()
    x = forms.new_atom(forms.cp.new_int_var(0, 10**6, "x"), 0, 10**6)
    y = forms.new_atom(forms.cp.new_int_var(0, 10**6, "y"), 0, 10**6)
    measure = Fraction(10**30, 10**40 + 7)
    form = forms.integerize(Lin.atom(x, 3 * measure) + Lin.atom(y, 5 * measure), objective=True)
    assert form.error == 0 and form.factor == 1 / measure
    assert (form.lo, form.hi) == (0, 8 * 10**6)


@pytest.mark.parametrize("exact", [True, False])
def test_a_maximum_states_the_largest_error_of_its_terms_not_their_sum(exact: bool) -> None:
    """Terms each within e_i of theirs have a maximum within the largest e_i of theirs.
    Stated as the sum, the error of a maximum over a hundred items (a MAX balance's
    utilizations over capacities with every digit) was a hundred times one term's, above
    the value of a bucket it could otherwise prove."""
    forms = Forms()
    primes = [10**12 + 39, 10**12 + 61, 10**12 + 63, 10**12 + 91, 10**12 + 121]
    lins = []
    for k, p in enumerate(primes):
        atom = forms.new_atom(forms.cp.new_int_var(0, 10**6, f"x{k}"), 0, 10**6)
        lins.append(Lin.atom(atom, Fraction(10**9, p)))
    terms = forms._max_forms(lins)
    assert all(f.error > 0 for f in terms)
    before = dict(forms.errors)
    (forms.exact_max if exact else forms.maximum)(lins, what="m")
    assert forms.errors["m"] - before.get("m", 0.0) == pytest.approx(max(f.error for f in terms))


@pytest.mark.parametrize("seed", [1359, 41])
def test_a_soft_excess_on_a_coarse_exact_scale_gives_up_no_more_than_its_error(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Drawn shapes at 8x3 with a DEFAULT or SOFT Capacity over sizes with few decimals
    (0.00244 over capacities of 0.01903): the normalized excess is exact in units of
    1/1903, but the sizes' float noise (1e-13) makes its error not quite 0, and a soft
    term is lowered by its error rounded up to whole units: 1/1903, a stated error of 0.05
    in the bucket. In finer units it is 1e-12, and the bucket is proven with the exact
    closure out of reach."""
    monkeypatch.setattr(closure, "OBJECT_LIMIT", 0)
    data = random_shape_scenario(8, 3, seed)
    scenario = parse_scenario(data)
    _, buckets = compile_model(scenario.problem, scenario.model)
    assert 0 < buckets[0].error < 1e-9
    check_against_enumeration(data, seed)


def test_a_falling_fine_term_is_counted_on_its_quotient() -> None:
    """-c·x with c far finer than the scale a large penalty sets (a movement goal's stayed
    load, 1.8e-19 per unit of loads near 3e15, beside a soft penalty of 1e4): with its
    coefficient rounded down to -1 per unit, the term lay below its exact value by most of
    its whole range (stated errors of 20 on a value of 4e-5); on the atom's quotient,
    rounded up, it is within 1e-8, and still never above its exact value."""
    forms = Forms()
    hi = 3 * 10**15 + 17
    x = forms.cp.new_int_var(0, hi, "x")
    penalty = forms.cp.new_int_var(0, 1, "penalty")
    c = Fraction(1, 5 * 10**18 + 3)
    lin = (Lin.atom(forms.new_atom(x, 0, hi), -c)
           + Lin.atom(forms.new_atom(penalty, 0, 1), 10**4))
    form = forms.integerize(lin, objective=True)
    assert form.over == 0 and 0 < form.error < 1e-8
    for value in (0, 1, 12345, hi // 3, hi - 1, hi):
        model = forms.cp.clone()
        model.add(model.get_int_var_from_proto_index(x.index) == value)
        model.add(model.get_int_var_from_proto_index(penalty.index) == 0)
        model.minimize(form.expr)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        assert solver.solve(model) == cp_model.OPTIMAL
        compiled = Fraction(solver.value(form.expr)) / form.factor
        assert -c * value - Fraction(form.error) <= compiled <= -c * value


@pytest.mark.parametrize("seed,objects,containers", [
    (2757, 6, 4), pytest.param(2774, 6, 4, marks=pytest.mark.slow),
    pytest.param(1204, 8, 3, marks=pytest.mark.slow)])
def test_a_movement_goal_beside_a_coarse_penalty_is_proven(seed: int, objects: int,
                                                          containers: int) -> None:
    """Drawn shapes with sizes of every digit (near 1e10 at 6x4): a movement goal's
    falling terms, rounded down to a whole unit where a penalty or the capacities' digits
    set a coarse scale, stated errors 25 and 900000 times the value; without a time limit
    the solves ended FEASIBLE ("approximated") at the enumerated optimum."""
    check_against_enumeration(random_shape_scenario(objects, containers, seed), seed)


@pytest.mark.parametrize("seed", range(20))
def test_decimal_loads_that_fill_their_capacity_exactly_exceed_nothing(seed: int) -> None:
    """Sizes of up to three decimals, each host's capacity the exact decimal total of what
    it holds: a soft capacity costs nothing under any order of the objects, though the
    doubles' sums (0.292 + 0.276 against 0.568) may lie a unit of the last place above.
    Checked against the same totals in fractions."""
    rng = random.Random(seed)
    sizes = {f"o{k}": rng.randint(1, 999) / 1000 for k in range(rng.randint(4, 12))}
    names = list(sizes)
    rng.shuffle(names)
    hosts = {f"h{j}": names[j::3] for j in range(3)}
    caps = {h: float(sum((Fraction(str(sizes[o])) for o in objs), Fraction(0)))
            for h, objs in hosts.items()}
    data = {"assignment": hosts, "objectDimensions": {"cpu": sizes},
            "containerDimensions": {"cpu": caps},
            "goals": [{"spec": {"minimizeMovementSpec": {}}}],
            "constraints": [{"spec": {"capacitySpec": {"dimension": "cpu"}}, "policy": "SOFT",
                             "invalidCost": 100}]}
    scenario = parse_scenario(data)
    evaluation = evaluate(scenario.problem, scenario.model, scenario.problem.initial)
    assert [(c.violation, c.soft) for c in evaluation.constraints] == [(0.0, 0.0)]


def test_a_soft_capacity_filled_by_decimal_sizes_is_proven_at_the_enumerated_optimum(
        ) -> None:
    """Drawn shape 3100 at 7x4: the assignment the chain ends at fills a host of capacity
    0.568 with 0.292 and 0.276, which a sum of doubles put 2^-53 above its capacity (a
    soft penalty of 2e-14 where the model, exact in decimals, and Rebalancer's wheel say
    0): FEASIBLE without a limit, its value beside the enumerated optimum's."""
    check_against_enumeration(random_shape_scenario(7, 4, 3100), "3100 (7, 4)")
