"""Evaluator values against hand computations of Rebalancer's scale.

Every expected number below is derived by hand from the formulas of ``docs/semantics.md``
(the section headers below name its anchors), written out explicitly in the test; nothing
calls the library's evaluation internals. Only the public ``ProblemSolver.evaluate`` is
exercised.

Notation as in docs/semantics.md#notation: ``A`` final util, ``I`` initial util, ``S``
stayed util of a scope item; DURING = A + I - S, NEW = A - S, OLD = I - S, MOVED = A + I - 2S.
"""

from __future__ import annotations

import pytest

from cpsat_rebalancer import InputError, ProblemSolver

COST, STATE = 100.0, 10000.0  # default invalidCost / invalidState


def approx(x: float):
    return pytest.approx(x, rel=1e-12, abs=1e-14)


def make(assignment, dims=None, caps=None, scopes=None, scope_dims=None) -> ProblemSolver:
    ps = ProblemSolver()
    ps.set_object_name("task")
    ps.set_container_name("host")
    ps.set_assignment(assignment)
    for dim, values in (dims or {}).items():
        ps.add_object_dimension(dim, values)
    for dim, values in (caps or {}).items():
        ps.add_container_dimension(dim, values)
    for scope, mapping in (scopes or {}).items():
        ps.add_scope(scope, mapping)
    for (scope, dim), values in (scope_dims or {}).items():
        ps.add_scope_dimension(dim, scope, values)
    return ps


def goal_value(ps: ProblemSolver, spec: dict, final: dict) -> float:
    ps.add_goal(spec)
    return ps.evaluate(final).goals[-1].value


# ---------------------------------------------------------------------------------------------
# BalanceSpec (docs/semantics.md#balance)
# ---------------------------------------------------------------------------------------------

# Three hosts of capacity 10 with utils 0.1, 0.6, 0.8 (the worked example in
# docs/semantics.md#balance).
CHECK = {"h0": ["t0"], "h1": ["t1"], "h2": ["t2"]}


def check_solver() -> ProblemSolver:
    return make(CHECK, dims={"cpu": {"t0": 1, "t1": 6, "t2": 8}},
                caps={"cpu": {"h0": 10, "h1": 10, "h2": 10}})


def balance(**fields) -> dict:
    return {"balanceSpec": {"scope": "host", "dimension": "cpu", **fields}}


# avg = (0.1 + 0.6 + 0.8)/3 = 0.5; RELATIVE bound with upperBound 1 -> T = 0.5
@pytest.mark.parametrize(("formula", "expected"), [
    ("LINEAR", (0.1 + 0.3) / 3),
    ("SQUARES", ((0.6 ** 1.1 - 0.5 ** 1.1) + (0.8 ** 1.1 - 0.5 ** 1.1)) / 3),
    ("MAX", 0.8 - 0.5),
    ("IDEAL", 0.1 ** 2 + 0.6 ** 2 + 0.8 ** 2),  # a_i = 1 (equal capacities)
    # v = (u - B)+ = (0, 0.1, 0.3): sum v^2 = 0.1, (sum v)^2/n = 0.16/3
    ("RELATIVE_UTIL_VARIANCE", 0.1 - 0.16 / 3),
])
def test_balance_check_values(formula, expected):
    assert goal_value(check_solver(), balance(formula=formula), CHECK) == approx(expected)


def test_balance_check_literals():
    """The literal numbers of the worked example in docs/semantics.md#balance (the wheel's
    values)."""
    assert goal_value(check_solver(), balance(formula="SQUARES"), CHECK) == pytest.approx(
        0.1398111177, rel=1e-9)
    assert goal_value(check_solver(), balance(formula="IDEAL"), CHECK) == approx(1.01)
    assert goal_value(check_solver(), balance(formula="MAX"), CHECK) == approx(0.3)


@pytest.mark.parametrize(("fields", "expected"), [
    ({"boundType": "ABSOLUTE", "upperBound": 0.1}, (0.8 - 0.6) / 3),  # T = 0.5 + 0.1
    ({"boundType": "ABSOLUTE", "upperBound": -0.2}, (0.3 + 0.5) / 3),  # T = 0.3
    ({"boundType": "RELATIVE", "upperBound": 1.5}, (0.8 - 0.75) / 3),  # T = 1.5 * 0.5
    ({"boundType": "RELATIVE"}, (0.1 + 0.3) / 3),  # default upperBound 1
    ({"boundType": "RELATIVE_UTIL", "upperBound": 0.3}, (0.3 + 0.5) / 3),  # T = 0.3
    ({"boundType": "RELATIVE_UTIL"}, 0.0),  # T = 1
])
def test_balance_bound_types(fields, expected):
    assert goal_value(check_solver(), balance(**fields), CHECK) == approx(expected)


@pytest.mark.parametrize(("fields", "expected"), [
    # T = max(soft, B) = max(0.7, 0.3) = 0.7
    ({"boundType": "RELATIVE_UTIL", "upperBound": 0.3, "softUpperBound": 0.7}, 0.1 / 3),
    # T = max(0.2, 0.3) = 0.3: the soft bound below B changes nothing
    ({"boundType": "RELATIVE_UTIL", "upperBound": 0.3, "softUpperBound": 0.2}, 0.8 / 3),
    # RELATIVE: B = 0.5, soft 0.65 -> T = 0.65; MAX: 0.8 - 0.65
    ({"softUpperBound": 0.65, "formula": "MAX"}, 0.8 - 0.65),
    # SQUARES applies the exponent to the threshold: T = 0.7
    ({"boundType": "RELATIVE_UTIL", "upperBound": 0.3, "softUpperBound": 0.7,
      "formula": "SQUARES"}, (0.8 ** 1.1 - 0.7 ** 1.1) / 3),
])
def test_balance_soft_upper_bound(fields, expected):
    assert goal_value(check_solver(), balance(**fields), CHECK) == approx(expected)


# Moves for the definitions test (all capacities 10):
#   initial h0{t0:2, t1:3} h1{t2:4} h2{t3:1};  final: t1 h0->h2, t2 h1->h2
#   h0: I=5 A=2 S=2 -> DURING 5, NEW 0, OLD 3
#   h1: I=4 A=0 S=0 -> DURING 4, NEW 0, OLD 4
#   h2: I=1 A=8 S=1 -> DURING 8, NEW 7, OLD 0
MOVE_INITIAL = {"h0": ["t0", "t1"], "h1": ["t2"], "h2": ["t3"]}
MOVE_FINAL = {"h0": ["t0"], "h1": [], "h2": ["t1", "t2", "t3"]}
MOVE_SIZES = {"t0": 2, "t1": 3, "t2": 4, "t3": 1}


def move_solver(caps=(10, 10, 10)) -> ProblemSolver:
    return make(MOVE_INITIAL, dims={"cpu": MOVE_SIZES},
                caps={"cpu": {f"h{k}": c for k, c in enumerate(caps)}})


@pytest.mark.parametrize(("definition", "formula", "expected"), [
    # DURING u = (0.5, 0.4, 0.8); not AFTER -> dynamic average 1.7/3
    ("DURING", "LINEAR", (0.8 - 1.7 / 3) / 3),
    ("DURING", "MAX", 0.8 - 1.7 / 3),
    ("DURING", "IDEAL", 0.5 ** 2 + 0.4 ** 2 + 0.8 ** 2),
    # NEW u = (0, 0, 0.7); dynamic average 0.7/3
    ("NEW", "LINEAR", (0.7 - 0.7 / 3) / 3),
    ("NEW", "IDEAL", 0.7 ** 2),
    # OLD u = (0.3, 0.4, 0); dynamic average 0.7/3
    ("OLD", "LINEAR", ((0.3 - 0.7 / 3) + (0.4 - 0.7 / 3)) / 3),
    ("OLD", "MAX", 0.4 - 0.7 / 3),
    # AFTER u = (0.2, 0, 0.8); average fixed to initial (0.5 + 0.4 + 0.1)/3
    ("AFTER", "LINEAR", (0.8 - 1.0 / 3) / 3),
])
def test_balance_definitions(definition, formula, expected):
    spec = balance(definition=definition, formula=formula)
    assert goal_value(move_solver(), spec, MOVE_FINAL) == approx(expected)


@pytest.mark.parametrize(("definition", "expected"), [
    # fixed average: initial u of the definition; DURING at the initial assignment = I,
    # so avg = (0.5 + 0.4 + 0.1)/3 = 1/3; DURING u = (0.5, 0.4, 0.8)
    ("DURING", ((0.5 - 1 / 3) + (0.4 - 1 / 3) + (0.8 - 1 / 3)) / 3),
    # NEW/OLD are 0 at the initial assignment -> avg 0, T = 0
    ("NEW", 0.7 / 3),
    ("OLD", (0.3 + 0.4) / 3),
])
def test_balance_definitions_fixed_average(definition, expected):
    spec = balance(definition=definition, fixAverageToInitial=True)
    assert goal_value(move_solver(), spec, MOVE_FINAL) == approx(expected)


# Heterogeneous capacities h0 10, h1 20, h2 10 (+ h3 where noted); final: t2 h1 -> h2.
#   initial A = (5, 4, 1) -> u0 = (0.5, 0.2, 0.1), initial average 0.8/3
#   final   A = (5, 0, 5) -> u  = (0.5, 0.0, 0.5), final average 1/3
HET_FINAL = {"h0": ["t0", "t1"], "h1": [], "h2": ["t2", "t3"]}
FIXED_LINEAR = 2 * (0.5 - 0.8 / 3) / 3
DYNAMIC_LINEAR = 2 * (0.5 - 1 / 3) / 3


def het_solver(h3_cap=None) -> ProblemSolver:
    assignment = dict(MOVE_INITIAL)
    caps = {"h0": 10, "h1": 20, "h2": 10}
    if h3_cap is not None:
        assignment["h3"] = []
        caps["h3"] = h3_cap
    return make(assignment, dims={"cpu": MOVE_SIZES}, caps={"cpu": caps})


def test_balance_after_average_fixed_on_full_container_scope():
    assert goal_value(het_solver(), balance(), HET_FINAL) == approx(FIXED_LINEAR)


def test_balance_fix_average_flag_is_redundant_when_already_fixed():
    spec = balance(fixAverageToInitial=True)
    assert goal_value(het_solver(), spec, HET_FINAL) == approx(FIXED_LINEAR)


def test_balance_blacklist_makes_average_dynamic():
    """h3 (cap 10, empty) blacklisted: an item was removed -> dynamic average over h0..h2."""
    spec = balance(filter={"itemsBlacklist": ["h3"]})
    assert goal_value(het_solver(10), spec, HET_FINAL) == approx(DYNAMIC_LINEAR)


def test_balance_blacklist_with_fix_average_to_initial():
    spec = balance(filter={"itemsBlacklist": ["h3"]}, fixAverageToInitial=True)
    assert goal_value(het_solver(10), spec, HET_FINAL) == approx(FIXED_LINEAR)


def test_balance_zero_capacity_item_excluded_and_average_dynamic():
    """h3 has capacity 0: dropped from N (n = 3) and the average becomes dynamic."""
    assert goal_value(het_solver(0), balance(), HET_FINAL) == approx(DYNAMIC_LINEAR)


def test_balance_zero_capacity_item_with_objects_excluded():
    """Objects on a zero-capacity item do not enter the average either (h3 gets t1 finally)."""
    final = {"h0": ["t0"], "h1": ["t2"], "h2": ["t3"], "h3": ["t1"]}
    # N = h0, h1, h2: u = (0.2, 0.2, 0.1), dynamic avg 0.5/3; MAX: 0.2 - 0.5/3
    spec = balance(formula="MAX")
    assert goal_value(het_solver(0), spec, final) == approx(0.2 - 0.5 / 3)


def test_balance_all_zero_capacity_is_zero():
    ps = make(CHECK, dims={"cpu": {"t0": 1, "t1": 6, "t2": 8}},
              caps={"cpu": {"h0": 0, "h1": 0, "h2": 0}})
    for formula in ("LINEAR", "SQUARES", "MAX", "IDEAL", "RELATIVE_UTIL_VARIANCE"):
        ps.add_goal(balance(formula=formula))
    values = [g.value for g in ps.evaluate(CHECK).goals]
    assert values == [approx(0.0)] * 5


def test_balance_whitelist():
    """Items h0, h1: final u = (0.5, 0); dynamic average 0.25 -> LINEAR 0.25/2."""
    spec = balance(filter={"itemsWhitelist": ["h0", "h1"]})
    assert goal_value(het_solver(), spec, HET_FINAL) == approx(0.25 / 2)


def test_balance_blacklist():
    spec = balance(filter={"itemsBlacklist": ["h2"]})
    assert goal_value(het_solver(), spec, HET_FINAL) == approx(0.25 / 2)


def test_balance_whitelist_fixed_average():
    """Items h0, h1 with the initial average (0.5 + 0.2)/2 = 0.35: LINEAR (0.5 - 0.35)/2."""
    spec = balance(filter={"itemsWhitelist": ["h0", "h1"]}, fixAverageToInitial=True)
    assert goal_value(het_solver(), spec, HET_FINAL) == approx((0.5 - 0.35) / 2)


def test_balance_ideal_heterogeneous_capacities():
    """C = 40, n = 3, avgcap = 40/3, a = (0.75, 1.5, 0.75); initial u = (0.5, 0.2, 0.1)."""
    expected = 0.75 * 0.5 ** 2 + 1.5 * 0.2 ** 2 + 0.75 * 0.1 ** 2
    # cross-check with sum A^2 / (cap * avgcap) = (25/10 + 16/20 + 1/10) / (40/3)
    assert expected == approx((25 / 10 + 16 / 20 + 1 / 10) / (40 / 3))
    ps = het_solver()
    ps.add_goal(balance(formula="IDEAL"))
    # the bound is ignored for RELATIVE (default ignoreUpperBoundFor... = true)
    ps.add_goal(balance(formula="IDEAL", upperBound=0.1))
    ev = ps.evaluate(MOVE_INITIAL)
    assert [g.value for g in ev.goals] == [approx(expected), approx(expected)]
    # final u = (0.5, 0, 0.5)
    final = het_solver()
    assert goal_value(final, balance(formula="IDEAL"), HET_FINAL) == approx(
        0.75 * 0.25 + 0.75 * 0.25)


def test_balance_ideal_relative_util_bound_applied():
    """B = 0.3: sum (a u^2 - a B^2)+ = 0.75 (0.25 - 0.09) (h0 only); softUpperBound unused."""
    expected = 0.75 * (0.5 ** 2 - 0.3 ** 2)
    ps = het_solver()
    ps.add_goal(balance(formula="IDEAL", boundType="RELATIVE_UTIL", upperBound=0.3))
    ps.add_goal(balance(formula="IDEAL", boundType="RELATIVE_UTIL", upperBound=0.3,
                        softUpperBound=0.6))
    ev = ps.evaluate(MOVE_INITIAL)
    assert [g.value for g in ev.goals] == [approx(expected), approx(expected)]


def test_balance_ideal_bound_not_ignored():
    """ignoreUpperBoundForIdealWithAbsOrRelBoundTypes false, RELATIVE 1: B = avg = 0.8/3."""
    b = 0.8 / 3
    expected = 0.75 * (0.5 ** 2 - b ** 2)  # h1: 1.5 (0.04 - b^2) < 0, h2 < 0
    spec = balance(formula="IDEAL", ignoreUpperBoundForIdealWithAbsOrRelBoundTypes=False)
    assert goal_value(het_solver(), spec, MOVE_INITIAL) == approx(expected)


# Custom scope rack: h0, h1 -> r0; h2 -> r1.  Initial: r0 = 5 + 4 = 9, r1 = 1.
RACKS = {"rack": {"h0": "r0", "h1": "r0", "h2": "r1"}}


def test_balance_custom_scope_with_scope_dimension():
    """Rack caps r0 20, r1 10 (container caps are NOT aggregated). Initial u = (0.45, 0.1),
    fixed average 0.275; final (t3 h2 -> h1): u = (0.5, 0) -> LINEAR (0.5 - 0.275)/2."""
    def solver():
        return make(MOVE_INITIAL, dims={"cpu": MOVE_SIZES},
                    caps={"cpu": {"h0": 6, "h1": 10, "h2": 10}}, scopes=RACKS,
                    scope_dims={("rack", "cpu"): {"r0": 20, "r1": 10}})
    spec = {"balanceSpec": {"scope": "rack", "dimension": "cpu"}}
    assert goal_value(solver(), spec, MOVE_INITIAL) == approx((0.45 - 0.275) / 2)
    final = {"h0": ["t0", "t1"], "h1": ["t2", "t3"], "h2": []}
    assert goal_value(solver(), spec, final) == approx((0.5 - 0.275) / 2)


def test_balance_custom_scope_without_scope_dimension():
    """No rack dimension given: every rack has capacity 1.0, so u = (9, 1), avg 5."""
    def solver():
        return make(MOVE_INITIAL, dims={"cpu": MOVE_SIZES},
                    caps={"cpu": {"h0": 6, "h1": 10, "h2": 10}}, scopes=RACKS)
    spec = {"balanceSpec": {"scope": "rack", "dimension": "cpu"}}
    assert goal_value(solver(), spec, MOVE_INITIAL) == approx((9 - 5) / 2)
    ideal = {"balanceSpec": {"scope": "rack", "dimension": "cpu", "formula": "IDEAL"}}
    assert goal_value(solver(), ideal, MOVE_INITIAL) == approx(9.0 ** 2 + 1.0 ** 2)


def test_balance_custom_scope_not_covering_all_containers_is_dynamic():
    """rack2 = {h0: r0, h2: r1}, h1 out of scope, caps 10/10. Final t2 h1 -> h2, t1 h0 -> h1:
    r0 A = 2 (u 0.2), r1 A = 5 (u 0.5): dynamic avg 0.35 -> LINEAR (0.5 - 0.35)/2.
    (The initial average (0.5 + 0.1)/2 = 0.3 would give (0.5 - 0.3)/2.)"""
    ps = make(MOVE_INITIAL, dims={"cpu": MOVE_SIZES}, scopes={"rack2": {"h0": "r0", "h2": "r1"}},
              scope_dims={("rack2", "cpu"): {"r0": 10, "r1": 10}})
    final = {"h0": ["t0"], "h1": ["t1"], "h2": ["t2", "t3"]}
    spec = {"balanceSpec": {"scope": "rack2", "dimension": "cpu"}}
    assert goal_value(ps, spec, final) == approx((0.5 - 0.35) / 2)


def test_balance_include_in_initial_average():
    """Blacklist h2 with fixAverageToInitial and includeInInitialAverage [h2]: the average
    is over the initial u of h0, h1, h2 = (0.5 + 0.2 + 0.1)/3; N = {h0, h1}, final u (0.5, 0)."""
    spec = balance(filter={"itemsBlacklist": ["h2"]}, fixAverageToInitial=True,
                   includeInInitialAverage=["h2"])
    assert goal_value(het_solver(), spec, HET_FINAL) == approx((0.5 - 0.8 / 3) / 2)


# ---------------------------------------------------------------------------------------------
# UtilIncreaseCostSpec (docs/semantics.md#utilincreasecost)
# ---------------------------------------------------------------------------------------------
# caps 10, initial A = (5, 4, 1), u_init = (0.5, 0.4, 0.1).
# final F: t2 h1 -> h2, t0 h0 -> h2: A = (3, 0, 7), u = (0.3, 0, 0.7)
UIC_FINAL = {"h0": ["t1"], "h1": [], "h2": ["t0", "t2", "t3"]}


def uic(**fields) -> dict:
    return {"utilIncreaseCostSpec": {"scope": "host", "dimension": "cpu", **fields}}


@pytest.mark.parametrize(("fields", "expected"), [
    ({}, (0.7 - 0.1) / 3),  # L = (0.5, 0.4, 0.1)
    ({"lowerBound": 0.5}, (0.7 - 0.5) / 3),  # L = (0.5, 0.5, 0.5)
    ({"squares": True}, (0.7 ** 1.1 - 0.1 ** 1.1) / 3),
    ({"lowerBound": 0.5, "squares": True}, (0.7 ** 1.1 - 0.5 ** 1.1) / 3),
    ({"lowerBound": 0.8}, 0.0),  # no item exceeds max(0.8, u_init)
])
def test_util_increase_cost(fields, expected):
    assert goal_value(move_solver(), uic(**fields), UIC_FINAL) == approx(expected)


@pytest.mark.parametrize("fields", [
    {}, {"lowerBound": 0.5}, {"squares": True}, {"lowerBound": 0.2, "squares": True},
])
def test_util_increase_cost_zero_at_initial(fields):
    assert goal_value(move_solver(), uic(**fields), MOVE_INITIAL) == approx(0.0)


def test_util_increase_cost_filter():
    """Final: t0 h0 -> h1: u = (0.3, 0.6, 0.1); increase on h1 only, 0.6 - 0.4 = 0.2."""
    final = {"h0": ["t1"], "h1": ["t0", "t2"], "h2": ["t3"]}
    assert goal_value(move_solver(), uic(), final) == approx(0.2 / 3)
    spec = uic(filter={"itemsBlacklist": ["h2"]})  # items h0, h1
    assert goal_value(move_solver(), spec, final) == approx(0.2 / 2)
    spec = uic(filter={"itemsWhitelist": ["h0", "h2"]})  # no increase on h0, h2
    assert goal_value(move_solver(), spec, final) == approx(0.0)


# ---------------------------------------------------------------------------------------------
# ToFreeSpec (docs/semantics.md#tofree)
# ---------------------------------------------------------------------------------------------
# Objects a4 b5 c3 d2 (mem); h0{a, b}, h1{c}, h2{d}, h3{}; free h1 and h2.
TF_INITIAL = {"h0": ["a", "b"], "h1": ["c"], "h2": ["d"], "h3": []}
TF_MEM = {"a": 4, "b": 5, "c": 3, "d": 2}


def tf_solver() -> ProblemSolver:
    return make(TF_INITIAL, dims={"mem": TF_MEM})


def to_free(**fields) -> dict:
    return {"toFreeSpec": {"containers": ["h1", "h2"], **fields}}


def test_to_free_total_utilization_count_dimension():
    assert goal_value(tf_solver(), to_free(), TF_INITIAL) == approx(2.0)  # c, d
    final = {"h0": ["a", "b", "c"], "h1": [], "h2": ["d"], "h3": []}
    assert goal_value(tf_solver(), to_free(), final) == approx(1.0)


def test_to_free_total_utilization_given_dimension():
    assert goal_value(tf_solver(), to_free(dimension="mem"), TF_INITIAL) == approx(3 + 2)
    final = {"h0": ["a", "b"], "h1": [], "h2": ["d"], "h3": ["c"]}
    assert goal_value(tf_solver(), to_free(dimension="mem"), final) == approx(2.0)
    final = {"h0": ["b"], "h1": ["a", "c"], "h2": [], "h3": ["d"]}
    spec = to_free(dimension="mem", formula="MINIMIZE_TOTAL_UTILIZATION")
    assert goal_value(tf_solver(), spec, final) == approx(4 + 3)


def test_to_free_occupied_containers():
    """Optimal-solver flavour: number of occupied listed containers (docs/semantics.md#tofree
    example: 2)."""
    spec = to_free(formula="MINIMIZE_OCCUPIED_CONTAINERS")
    assert goal_value(tf_solver(), spec, TF_INITIAL) == approx(2.0)
    final = {"h0": ["a", "b"], "h1": [], "h2": ["c", "d"], "h3": []}  # only h2 occupied
    assert goal_value(tf_solver(), spec, final) == approx(1.0)
    final = {"h0": ["a", "b", "c"], "h1": [], "h2": [], "h3": ["d"]}
    assert goal_value(tf_solver(), spec, final) == approx(0.0)
    spec = to_free(formula="MINIMIZE_OCCUPIED_CONTAINERS", dimension="mem")
    assert goal_value(tf_solver(), spec, TF_INITIAL) == approx(2.0)


def test_to_free_constraint_violation():
    """Violation = sum over listed containers of (A_c + NEW_c)."""
    ps = tf_solver()
    ps.add_constraint(to_free(dimension="mem"), policy="SOFT")
    # initial: A = (3, 2), NEW = 0: violation 5; two infos broken (e = A_c)
    ev = ps.evaluate(TF_INITIAL)
    assert ev.constraints[0].violation == approx(5.0)
    assert ev.constraints[0].soft == approx(COST * 5 + STATE * 2)
    # final: c h1 -> h3, a h0 -> h1: h1 A = 4, NEW = 4; h2 A = 2, NEW = 0 -> 4 + 4 + 2
    final = {"h0": ["b"], "h1": ["a"], "h2": ["d"], "h3": ["c"]}
    ev = ps.evaluate(final)
    assert ev.constraints[0].violation == approx(10.0)
    # infos broken: A_h1, NEW_h1, A_h2 -> 3 steps
    assert ev.constraints[0].soft == approx(COST * 10 + STATE * 3)
    assert ev.restriction_violations == []  # SOFT prices the move into h1, no more
    hard = tf_solver()
    hard.add_constraint(to_free(dimension="mem"), policy="HARD")
    assert hard.evaluate(final).restriction_violations  # h1 closed: single-container item
    # count dimension: h1 A = 1, NEW = 1; h2 A = 1
    ps = tf_solver()
    ps.add_constraint(to_free(), policy="SOFT")
    assert ps.evaluate(final).constraints[0].violation == approx(3.0)


# ---------------------------------------------------------------------------------------------
# CapacitySpec (docs/semantics.md#capacity)
# ---------------------------------------------------------------------------------------------
# caps h0 6, h1 10, h2 10 (avgcap 26/3, nc = 3/26); initial h0{t0:5, t1:4} h1{t2:3} h2{}
CAP_INITIAL = {"h0": ["t0", "t1"], "h1": ["t2"], "h2": []}
NC = 3 / 26


def cap_solver(sizes=None) -> ProblemSolver:
    return make(CAP_INITIAL, dims={"cpu": sizes or {"t0": 5, "t1": 4, "t2": 3}},
                caps={"cpu": {"h0": 6, "h1": 10, "h2": 10}})


def capacity(**fields) -> dict:
    return {"capacitySpec": {"scope": "host", "dimension": "cpu", **fields}}


def test_capacity_reference_example():
    """docs/semantics.md#capacity example: h0 util 9 > cap 6: violation 3/(26/3) = 0.346154;
    DEFAULT soft 10000 + 100 v."""
    ps = cap_solver()
    ps.add_constraint(capacity())
    ev = ps.evaluate(CAP_INITIAL)
    c = ev.constraints[0]
    assert c.violation == approx(3 / (26 / 3))
    assert c.violation == pytest.approx(0.346154, abs=1e-6)
    assert c.has_soft_term
    assert c.soft == approx(STATE + COST * 3 / (26 / 3))
    assert c.soft == pytest.approx(10034.615, abs=1e-3)
    assert ev.positions == {0: approx(STATE + COST * 3 / (26 / 3))}
    assert c.hard_excess == approx(0.0)
    assert ev.feasible


@pytest.mark.parametrize(("fields", "expected"), [
    ({}, NC * 3),  # A = (9, 3, 0), T = cap
    ({"bound": "MAX"}, NC * 3),
    # MIN: T - util = (6-9, 10-3, 10-0) -> 7 + 10
    ({"bound": "MIN"}, NC * (7 + 10)),
    # zeroAllowed: h2 util exactly 0 -> 0
    ({"bound": "MIN", "zeroAllowed": True}, NC * 7),
    ({"limit": {"type": "ABSOLUTE", "globalLimit": 5}}, NC * (9 - 5)),
    # RELATIVE 0.5: T = (3, 5, 5) -> 6
    ({"limit": {"type": "RELATIVE", "globalLimit": 0.5}}, NC * (9 - 3)),
    # per-item limit h1 0.1 (T = 1): 3 (h0) + 2 (h1)
    ({"limit": {"scopeItemLimits": {"h1": 0.1}}}, NC * (3 + 2)),
    ({"limit": {"type": "ABSOLUTE", "globalLimit": 8, "scopeItemLimits": {"h1": 1}}},
     NC * (1 + 2)),
    # unbounded default: only h1 (T = 1) has a limit; nc still over all filtered items
    ({"limit": {"scopeItemLimits": {"h1": 0.1}, "isDefaultLimitUnbounded": True}}, NC * 2),
    # legacy normalization 1/cap_i
    ({"useLegacyFormula": True}, 3 / 6),
    ({"useLegacyFormula": True, "limit": {"scopeItemLimits": {"h1": 0.1}}}, 3 / 6 + 2 / 10),
    ({"bound": "MIN", "useLegacyFormula": True}, 7 / 10 + 10 / 10),
    # filter: avgcap over h0, h1 = 8
    ({"filter": {"itemsWhitelist": ["h0", "h1"]}}, 3 / 8),
    ({"filter": {"itemsBlacklist": ["h0"]}, "bound": "MIN"}, (7 + 10) / 10),
])
def test_capacity_goal(fields, expected):
    assert goal_value(cap_solver(), capacity(**fields), CAP_INITIAL) == approx(expected)


def test_capacity_min_zero_allowed_partial():
    """MIN + zeroAllowed, ABSOLUTE 4: utils (9, 3, 0): h1 0 < 3 < 4 -> 1; h2 exactly 0 -> 0."""
    spec = capacity(bound="MIN", zeroAllowed=True, limit={"type": "ABSOLUTE", "globalLimit": 4})
    assert goal_value(cap_solver(), spec, CAP_INITIAL) == approx(NC * 1)


def test_capacity_min_skipped_when_threshold_zero():
    """MIN with per-item limit 0 on h2 (T·nc = 0): skipped; h1: 10 - 3 = 7, h0 above."""
    spec = capacity(bound="MIN", limit={"scopeItemLimits": {"h2": 0}})
    assert goal_value(cap_solver(), spec, CAP_INITIAL) == approx(NC * 7)


# Definition moves: final t1 h0 -> h2, t2 h1 -> h2.  Limit ABSOLUTE 3 (T = 3 everywhere).
#   I = (9, 3, 0), A = (5, 0, 7), S = (5, 0, 0)
#   AFTER (5, 0, 7) -> excess 2 + 0 + 4 = 6
#   DURING = A + I - S = (9, 3, 7) -> 6 + 0 + 4 = 10
#   NEW = A - S = (0, 0, 7) -> 4
#   OLD = I - S = (4, 3, 0) -> 1
#   MOVED = A + I - 2S = (4, 3, 7) -> 1 + 0 + 4 = 5
CAP_FINAL = {"h0": ["t0"], "h1": [], "h2": ["t1", "t2"]}
ABS3 = {"type": "ABSOLUTE", "globalLimit": 3}


@pytest.mark.parametrize(("definition", "excess"), [
    ("AFTER", 6),
    ("DURING", 10),
    ("NEW", 4),
    ("OLD", 1),
    ("MOVED_DATA", 5),
    ("DOUBLE_DURING", 10 + 1),
    ("DURING_AND_AFTER", 10 + 6),  # goal: both metrics everywhere
    ("DOUBLE_DURING_AND_AFTER", 10 + 6 + 1),
])
def test_capacity_definitions_goal(definition, excess):
    spec = capacity(definition=definition, limit=ABS3)
    assert goal_value(cap_solver(), spec, CAP_FINAL) == approx(NC * excess)


@pytest.mark.parametrize(("definition", "excess"), [
    ("AFTER", 6),
    ("DURING", 10),
    ("MOVED_DATA", 5),
    ("DOUBLE_DURING", 11),
    # initial DURING = I = (9, 3, 0) vs 3: only h0 is > 0, so AFTER only on h0: 10 + 2
    ("DURING_AND_AFTER", 10 + 2),
    ("DOUBLE_DURING_AND_AFTER", 10 + 2 + 1),
])
def test_capacity_definitions_constraint(definition, excess):
    ps = cap_solver()
    ps.add_constraint(capacity(definition=definition, limit=ABS3), policy="SOFT")
    assert ps.evaluate(CAP_FINAL).constraints[0].violation == approx(NC * excess)


def test_capacity_during_and_after_default_policy():
    """DEFAULT: soft infos = initially broken ones: DURING h0 (6) and AFTER h0 (6).
    Final: DURING h0 = 6, AFTER h0 = 2 (both <= initial, still broken -> 2 steps).
    DURING h2 = 4 was initially -3: hard, broken -> hard_excess 4 nc."""
    ps = cap_solver()
    ps.add_constraint(capacity(definition="DURING_AND_AFTER", limit=ABS3))
    c = ps.evaluate(CAP_FINAL).constraints[0]
    assert c.soft == approx(COST * NC * (6 + 2) + STATE * 2)
    assert c.hard_excess == approx(NC * 4)
    assert c.violation == approx(NC * 12)


# ---------------------------------------------------------------------------------------------
# Constraint policies (docs/semantics.md#constraint-policies)
# ---------------------------------------------------------------------------------------------
# cpu t0 5, t1 4, t2 8; caps (6, 10, 10), AFTER MAX, T = cap.
#   initial A = (9, 8, 0): e = nc (3, -2, -10)  -> h0 initially broken
#   final (t1 h0 -> h1) A = (5, 12, 0): e = nc (-1, 2, -10) -> h1 broken
POL_SIZES = {"t0": 5, "t1": 4, "t2": 8}
POL_FINAL = {"h0": ["t0"], "h1": ["t1", "t2"], "h2": []}


def pol_solver() -> ProblemSolver:
    return cap_solver(POL_SIZES)


def test_policy_soft():
    ps = pol_solver()
    ps.add_constraint(capacity(), policy="SOFT")
    ev = ps.evaluate(POL_FINAL)
    c = ev.constraints[0]
    assert c.policy == "SOFT" and c.has_soft_term
    assert c.violation == approx(2 * NC)
    assert c.soft == approx(COST * 2 * NC + STATE)
    assert c.hard_excess == approx(0.0)
    assert ev.positions == {0: approx(COST * 2 * NC + STATE)}
    assert ev.feasible
    ev = ps.evaluate(CAP_INITIAL)
    assert ev.constraints[0].soft == approx(COST * 3 * NC + STATE)


def test_policy_soft_term_present_when_zero():
    ps = make(CAP_INITIAL, dims={"cpu": POL_SIZES}, caps={"cpu": {"h0": 20, "h1": 20, "h2": 20}})
    ps.add_constraint(capacity(), policy="SOFT")
    ev = ps.evaluate(CAP_INITIAL)
    assert ev.constraints[0].has_soft_term
    assert ev.constraints[0].soft == approx(0.0)
    assert ev.positions == {0: approx(0.0)}


def test_policy_default():
    ps = pol_solver()
    ps.add_constraint(capacity())
    ev = ps.evaluate(CAP_INITIAL)
    c = ev.constraints[0]
    assert c.policy == "DEFAULT" and c.has_soft_term
    assert c.soft == approx(COST * 3 * NC + STATE)
    assert ev.positions == {0: approx(COST * 3 * NC + STATE)}
    assert ev.feasible
    # h0 repaired (e = -nc: soft 0), h1 initially ok but broken now: hard
    ev = ps.evaluate(POL_FINAL)
    c = ev.constraints[0]
    assert c.has_soft_term
    assert c.soft == approx(0.0)
    assert ev.positions == {0: approx(0.0)}
    assert c.violation == approx(2 * NC)
    assert c.hard_excess == approx(2 * NC)
    assert not ev.feasible


def test_policy_default_nothing_initially_broken():
    """No initially broken info: no soft term at all, positions get nothing."""
    ps = make(CAP_INITIAL, dims={"cpu": {"t0": 1, "t1": 1, "t2": 8}},
              caps={"cpu": {"h0": 6, "h1": 10, "h2": 10}})
    ps.add_constraint(capacity())
    final = {"h0": [], "h1": ["t0", "t1", "t2"], "h2": []}  # h1: 10 <= 10
    ev = ps.evaluate(final)
    assert not ev.constraints[0].has_soft_term
    assert ev.constraints[0].soft == 0.0
    assert 0 not in ev.positions
    assert ev.feasible
    ps.add_goal(balance())  # a goal at position 0 gets only its own value
    ev = ps.evaluate(CAP_INITIAL)
    # A = (2, 8, 0), caps (6, 10, 10): u = (1/3, 0.8, 0), fixed avg (1/3 + 0.8)/3 ~ 0.378
    avg = (2 / 6 + 0.8 + 0) / 3
    assert ev.positions == {0: approx((0.8 - avg) / 3)}


def test_policy_default_broken_beyond_initial_is_hard():
    """DEFAULT: an initially broken info may not exceed its initial value (hard rule)."""
    ps = pol_solver()
    ps.add_constraint(capacity())
    final = {"h0": ["t0", "t1", "t2"], "h1": [], "h2": []}  # h0: 17 vs cap 6 (initially 9)
    c = ps.evaluate(final).constraints[0]
    assert c.violation == approx(11 * NC)
    assert c.soft == approx(COST * 11 * NC + STATE)
    assert c.hard_excess == approx((11 - 3) * NC)


def test_policy_hard():
    ps = pol_solver()
    ps.add_constraint(capacity(), policy="HARD")
    ev = ps.evaluate(POL_FINAL)
    c = ev.constraints[0]
    assert c.policy == "HARD" and not c.has_soft_term
    assert c.soft == 0.0
    assert c.violation == approx(2 * NC)
    assert c.hard_excess == approx(2 * NC)
    assert ev.positions == {}
    assert not ev.feasible
    ev = ps.evaluate(CAP_INITIAL)
    assert ev.constraints[0].hard_excess == approx(3 * NC)
    assert not ev.feasible


def test_policy_invalid_state_zero_and_custom_cost():
    ps = pol_solver()
    ps.add_constraint(capacity(), policy="SOFT", invalid_state=0)
    ps.add_constraint(capacity(), policy="SOFT", invalid_cost=7, invalid_state=50)
    ev = ps.evaluate(POL_FINAL)
    assert ev.constraints[0].soft == approx(COST * 2 * NC)
    assert ev.constraints[1].soft == approx(7 * 2 * NC + 50)
    assert ev.positions == {0: approx(COST * 2 * NC + 7 * 2 * NC + 50)}


def test_policy_tuple_pos_if_broken():
    ps = pol_solver()
    ps.add_goal(balance(formula="MAX"))  # position 0
    ps.add_constraint(capacity(), policy="SOFT", tuple_pos_if_broken=2)
    ev = ps.evaluate(POL_FINAL)
    # MAX: u = (5/6, 1.2, 0); fixed avg = initial u (9/6 + 0.8 + 0)/3 = 2.3/3
    g = 1.2 - 2.3 / 3
    assert ev.goals[0].value == approx(g)
    assert ev.constraints[0].position == 2
    assert ev.positions == {0: approx(g), 2: approx(COST * 2 * NC + STATE)}


def test_default_constraint_params_and_policy():
    ps = pol_solver()
    ps.set_constraint_policy("SOFT")
    ps.set_default_constraint_params({"invalidCost": 3, "invalidState": 40,
                                      "tuplePosIfBroken": 1})
    ps.add_constraint(capacity())  # all defaults
    ps.add_constraint(capacity(), policy="HARD")  # own policy wins
    ps.add_constraint(capacity(), invalid_cost=5, tuple_pos_if_broken=3)
    ev = ps.evaluate(POL_FINAL)
    c0, c1, c2 = ev.constraints
    assert (c0.policy, c0.position) == ("SOFT", 1)
    assert c0.soft == approx(3 * 2 * NC + 40)
    assert c1.policy == "HARD" and not c1.has_soft_term
    assert (c2.policy, c2.position) == ("SOFT", 3)
    assert c2.soft == approx(5 * 2 * NC + 40)
    assert ev.positions == {1: approx(3 * 2 * NC + 40), 3: approx(5 * 2 * NC + 40)}


def test_policy_as_integer():
    ps = pol_solver()
    ps.add_constraint(capacity(), policy=3)  # SOFT
    ps.add_constraint(capacity(), policy=2)  # HARD
    ev = ps.evaluate(POL_FINAL)
    assert [c.policy for c in ev.constraints] == ["SOFT", "HARD"]


def test_single_parameter_constraint_ignores_arguments():
    """AvoidMoving uses the global policy/defaults whatever add_constraint is given
    (docs/semantics.md#constraint-policies)."""
    ps = pol_solver()
    ps.add_constraint({"avoidMovingSpec": {"objects": ["t1"]}}, policy="SOFT", invalid_cost=1,
                      invalid_state=1, tuple_pos_if_broken=4)
    ev = ps.evaluate(POL_FINAL)
    c = ev.constraints[0]
    assert (c.policy, c.position) == ("DEFAULT", 0)
    assert not c.has_soft_term  # not broken initially
    assert c.violation == approx(1.0)
    assert c.hard_excess == approx(1.0)
    assert ev.restriction_violations  # t1 is fixed
    assert not ev.feasible


# ---------------------------------------------------------------------------------------------
# MinimizeMovementSpec (docs/semantics.md#minimizemovement)
# ---------------------------------------------------------------------------------------------
# four hosts h0{t0:6, t1:2} h1{t2:3} h2{} h3{}
MM_INITIAL = {"h0": ["t0", "t1"], "h1": ["t2"], "h2": [], "h3": []}
MM_SIZES = {"t0": 6, "t1": 2, "t2": 3}


def mm_solver(caps=(10, 10, 10, 10)) -> ProblemSolver:
    return make(MM_INITIAL, dims={"cpu": MM_SIZES},
                caps={"cpu": {f"h{k}": c for k, c in enumerate(caps)}})


def movement(**fields) -> dict:
    return {"minimizeMovementSpec": {"dimension": "cpu", **fields}}


def test_minimize_movement_reference_example():
    final = {"h0": ["t1"], "h1": ["t2"], "h2": ["t0"], "h3": []}
    assert goal_value(mm_solver(), movement(), final) == approx(0.001 / 4 * 0.6)
    assert goal_value(mm_solver(), movement(), final) == approx(1.5e-4)
    assert goal_value(mm_solver(), movement(), MM_INITIAL) == approx(0.0)


# caps (10, 10, 20, 5); final t0 h0 -> h2 (NEW 6/20), t2 h1 -> h3 (NEW 3/5)
MM_FINAL = {"h0": ["t1"], "h1": [], "h2": ["t0"], "h3": ["t2"]}
MM_CAPS = (10, 10, 20, 5)


@pytest.mark.parametrize(("fields", "expected"), [
    ({}, 0.001 / 4 * (6 / 20 + 3 / 5)),
    ({"magicScaling": True}, 0.001 / 4 * (6 / 20 + 3 / 5)),
    ({"magicScaling": False}, 1 / 4 * (6 / 20 + 3 / 5)),
    ({"allowance": 100}, 0.001 / 4 * (6 / 20 + 3 / 5)),  # ignored when normalized
    ({"doNotNormalize": True}, 6 + 3),
    ({"doNotNormalize": True, "magicScaling": False}, 6 + 3),
    ({"doNotNormalize": True, "allowance": 4}, 9 - 4),
    ({"doNotNormalize": True, "allowance": 20}, 0.0),
    ({"doNotNormalize": True, "dimension": ""}, 2),  # count dimension (default)
])
def test_minimize_movement_options(fields, expected):
    spec = movement(**fields)
    assert goal_value(mm_solver(MM_CAPS), spec, MM_FINAL) == approx(expected)


def test_minimize_movement_default_dimension_is_count():
    spec = {"minimizeMovementSpec": {"doNotNormalize": True}}
    assert goal_value(mm_solver(MM_CAPS), spec, MM_FINAL) == approx(2.0)
    # normalized on the count dimension: container caps of task_count were never given -> 1
    spec = {"minimizeMovementSpec": {}}
    assert goal_value(mm_solver(MM_CAPS), spec, MM_FINAL) == approx(0.001 / 4 * (1 + 1))


# Custom scope: h0, h1 -> r0 (cap 20); h2 -> r1 (cap 10); h3, h4 out of scope.
# t0:6 h0 -> h1 (within r0: stayed), t2:3 h1 -> h3 (out: NEW_out 3),
# t4:5 h4 -> h3 (out -> out: stayed), t5:2 h4 -> h2 (into r1: NEW 2)
MMS_INITIAL = {"h0": ["t0"], "h1": ["t2"], "h2": [], "h3": [], "h4": ["t4", "t5"]}
MMS_FINAL = {"h0": [], "h1": ["t0"], "h2": ["t5"], "h3": ["t2", "t4"], "h4": []}


def mms_solver() -> ProblemSolver:
    return make(MMS_INITIAL, dims={"cpu": {"t0": 6, "t2": 3, "t4": 5, "t5": 2}},
                scopes={"rack": {"h0": "r0", "h1": "r0", "h2": "r1"}},
                scope_dims={("rack", "cpu"): {"r0": 20, "r1": 10}})


@pytest.mark.parametrize(("fields", "expected"), [
    ({}, 0.001 / 2 * (0 / 20 + 2 / 10 + 3)),  # out-of-scope part not divided
    ({"magicScaling": False}, 1 / 2 * (2 / 10 + 3)),
    ({"doNotNormalize": True}, 0 + 2 + 3),
    ({"doNotNormalize": True, "dimension": "task_count"}, 0 + 1 + 1),
])
def test_minimize_movement_custom_scope(fields, expected):
    spec = movement(scope="rack", **fields)
    assert goal_value(mms_solver(), spec, MMS_FINAL) == approx(expected)


def test_minimize_movement_constraint():
    ps = mms_solver()
    ps.add_constraint(movement(scope="rack", doNotNormalize=True, allowance=3), policy="SOFT")
    ps.add_constraint(movement(scope="rack"), policy="SOFT")
    ev = ps.evaluate(MMS_FINAL)
    c0, c1 = ev.constraints
    assert c0.violation == approx(5 - 3)
    assert c0.soft == approx(COST * 2 + STATE)
    v = 0.001 / 2 * (2 / 10 + 3)
    assert c1.violation == approx(v)
    assert c1.soft == approx(COST * v + STATE)
    ev = ps.evaluate(MMS_INITIAL)
    assert [c.violation for c in ev.constraints] == [approx(0.0), approx(0.0)]
    assert [c.soft for c in ev.constraints] == [approx(0.0), approx(0.0)]


# ---------------------------------------------------------------------------------------------
# AvoidMoving, NonAccepting, AvoidAssignments
# (docs/semantics.md#avoidmoving, #nonaccepting, #avoidassignments)
# ---------------------------------------------------------------------------------------------
AA_INITIAL = {"h0": ["t0"], "h1": ["t1"], "h2": ["t2", "t3"]}


def aa_solver() -> ProblemSolver:
    return make(AA_INITIAL, scopes={"rack": {"h0": "r0", "h1": "r0", "h2": "r1"}})


def test_avoid_moving():
    ps = aa_solver()
    ps.add_constraint({"avoidMovingSpec": {"objects": ["t0", "t1", "t2"]}})
    ev = ps.evaluate(AA_INITIAL)
    assert ev.constraints[0].violation == approx(0.0)
    assert ev.feasible
    # t0 h0 -> h1 (listed), t3 h2 -> h0 (not listed); t1 stays
    final = {"h0": ["t3"], "h1": ["t0", "t1"], "h2": ["t2"]}
    ev = ps.evaluate(final)
    assert ev.constraints[0].violation == approx(1.0)
    # t0 and t1 swap containers: both listed objects moved (container level)
    final = {"h0": ["t1"], "h1": ["t0"], "h2": ["t2", "t3"]}
    assert ps.evaluate(final).constraints[0].violation == approx(2.0)


def test_non_accepting():
    """t0 h0 -> h1 stays inside rack r0 (not new); t2, t3 h2 -> r0 are new there."""
    final = {"h0": ["t2"], "h1": ["t0", "t1", "t3"], "h2": []}
    ps = aa_solver()
    ps.add_constraint({"nonAcceptingSpec": {"scope": "rack", "items": ["r0", "r1"]}},
                      policy="SOFT")
    ps.add_constraint({"nonAcceptingSpec": {"items": ["h1"]}}, policy="SOFT")
    ps.add_constraint({"nonAcceptingSpec": {"scope": "host", "items": ["h0", "h2"]}},
                      policy="SOFT")
    ev = ps.evaluate(final)
    c_rack, c_h1, c_h02 = ev.constraints
    assert c_rack.violation == approx(2.0)  # e = (2, 0)
    assert c_rack.soft == approx(COST * 2 + STATE * 1)
    assert c_h1.violation == approx(2.0)  # t0, t3 new on h1
    assert c_h02.violation == approx(1.0)  # t2 new on h0, nothing new on h2
    assert c_h02.soft == approx(COST * 1 + STATE * 1)
    ev = ps.evaluate(AA_INITIAL)
    assert [c.violation for c in ev.constraints] == [approx(0.0)] * 3


def test_avoid_assignments():
    ps = aa_solver()
    spec = {"avoidAssignmentsSpec": {"assignments": [
        {"object": "t0", "scopeItems": ["h1", "h2"]},
        {"object": "t1", "scopeItems": ["h2"]},
        {"object": "t0", "scopeItems": ["h1"]},  # duplicate: counted once
        {"object": "t3", "scopeItems": ["h1"]},
    ]}}
    ps.add_constraint(spec, policy="SOFT")
    ev = ps.evaluate(AA_INITIAL)
    assert ev.constraints[0].violation == approx(0.0)
    # items h1: {t0, t3}, h2: {t0, t1}.  Final: t0 -> h2, t1 -> h2: e_h1 = 0, e_h2 = 2
    final = {"h0": [], "h1": [], "h2": ["t0", "t1", "t2", "t3"]}
    c = ps.evaluate(final).constraints[0]
    assert c.violation == approx(2.0)
    assert c.soft == approx(COST * 2 + STATE * 1)
    # t0 -> h1, t3 -> h1: e_h1 = 2 (distinct t0, t3), e_h2 = 0
    final = {"h0": [], "h1": ["t0", "t1", "t3"], "h2": ["t2"]}
    assert ps.evaluate(final).constraints[0].violation == approx(2.0)


def test_avoid_assignments_rack_scope_and_default_policy():
    """On the rack scope; t2 is listed for its own initial item r1 -> initially broken."""
    ps = aa_solver()
    ps.add_constraint({"avoidAssignmentsSpec": {"scope": "rack", "assignments": [
        {"object": "t2", "scopeItems": ["r1"]},
        {"object": "t0", "scopeItems": ["r1"]},
        {"object": "t3", "scopeItems": ["r0"]},
    ]}})
    ev = ps.evaluate(AA_INITIAL)
    c = ev.constraints[0]
    # e_r1 = 1 (t2), e_r0 = 0 (t3 is in r1)
    assert c.violation == approx(1.0)
    assert c.soft == approx(COST * 1 + STATE * 1)
    assert ev.positions == {0: approx(COST + STATE)}
    # t3 -> h0 (r0): r0 was initially ok -> hard; t2 still in r1
    final = {"h0": ["t0", "t3"], "h1": ["t1"], "h2": ["t2"]}
    ev = ps.evaluate(final)
    c = ev.constraints[0]
    assert c.violation == approx(2.0)
    assert c.soft == approx(COST * 1 + STATE * 1)
    assert c.hard_excess == approx(1.0)
    assert not ev.feasible


# ---------------------------------------------------------------------------------------------
# Weights and tuple positions (docs/semantics.md#goals-and-tuple-positions)
# ---------------------------------------------------------------------------------------------
def test_weights_and_positions():
    ps = move_solver()
    ps.add_goal(balance(formula="MAX"), weight=2.0, tuple_pos=0)
    ps.add_goal(movement(doNotNormalize=True), weight=0.5, tuple_pos=1)
    ps.add_goal(uic())  # default position: current goal index 0
    ps.add_goal_boundary()
    ps.add_goal(to_free(dimension="cpu", containers=["h1"]), weight=3.0)  # position 1
    ps.add_goal_boundary()
    ps.add_goal(balance(formula="IDEAL"), weight=-1.5)  # position 2
    ps.add_constraint(capacity(limit=ABS3), policy="SOFT")  # soft term at position 0
    ev = ps.evaluate(MOVE_FINAL)
    # final u = (0.2, 0, 0.8); avg fixed at initial (0.5 + 0.4 + 0.1)/3 = 1/3
    g_max = 0.8 - 1 / 3
    g_move = 3 + 4  # NEW on h2 (t1 and t2)
    g_uic = (0.8 - 0.1) / 3  # only h2 increases above its initial 0.1
    g_free = 0.0  # h1 finally empty
    g_ideal = 0.2 ** 2 + 0.8 ** 2
    # capacity ABSOLUTE 3, caps 10 (nc = 1/10): A = (2, 0, 8) -> e = 0.5 on h2
    v = (8 - 3) / 10
    soft = COST * v + STATE
    assert [g.position for g in ev.goals] == [0, 1, 0, 1, 2]
    assert [g.weight for g in ev.goals] == [2.0, 0.5, 1.0, 3.0, -1.5]
    expected_values = [g_max, g_move, g_uic, g_free, g_ideal]
    assert [g.value for g in ev.goals] == [approx(x) for x in expected_values]
    assert [g.weighted for g in ev.goals] == [
        approx(w * x) for w, x in zip([2.0, 0.5, 1.0, 3.0, -1.5], expected_values)]
    assert ev.constraints[0].violation == approx(v)
    assert ev.positions == {
        0: approx(2 * g_max + g_uic + soft),
        1: approx(0.5 * g_move + 3 * g_free),
        2: approx(-1.5 * g_ideal),
    }


def test_goal_boundary_increments_default_position():
    ps = check_solver()
    ps.add_goal(balance())
    ps.add_goal_boundary()
    ps.add_goal_boundary()
    ps.add_goal(balance(formula="MAX"))
    ps.add_goal(balance(formula="IDEAL"), tuple_pos=0)
    ev = ps.evaluate(CHECK)
    assert [g.position for g in ev.goals] == [0, 2, 0]
    assert ev.positions == {0: approx(0.4 / 3 + 1.01), 2: approx(0.3)}


# ---------------------------------------------------------------------------------------------
# Input errors
# ---------------------------------------------------------------------------------------------
def evaluate_with_goal(spec: dict):
    ps = check_solver()
    ps.add_goal(spec)
    return ps.evaluate(CHECK)


def test_error_unknown_dimension():
    with pytest.raises(InputError, match=r"dimension.*mem|mem.*dimension"):
        evaluate_with_goal({"balanceSpec": {"scope": "host", "dimension": "mem"}})


def test_error_unknown_scope():
    with pytest.raises(InputError, match=r"scope.*rack|rack.*scope"):
        evaluate_with_goal({"balanceSpec": {"scope": "rack", "dimension": "cpu"}})


def test_error_both_whitelist_and_blacklist():
    spec = balance(filter={"itemsWhitelist": ["h0"], "itemsBlacklist": ["h1"]})
    with pytest.raises(InputError, match="itemsWhitelist"):
        evaluate_with_goal(spec)


def test_error_unknown_spec_field():
    with pytest.raises(InputError, match="upperBond"):
        evaluate_with_goal(balance(upperBond=1.0))


def test_error_invalid_enum_name():
    with pytest.raises(InputError, match="formula"):
        evaluate_with_goal(balance(formula="SQUARE"))


def test_error_invalid_enum_integer():
    with pytest.raises(InputError, match="formula"):
        evaluate_with_goal(balance(formula=99))


def test_error_unknown_constraint_dimension():
    ps = check_solver()
    ps.add_constraint(capacity(dimension="disk"))
    with pytest.raises(InputError, match="disk"):
        ps.evaluate(CHECK)


@pytest.mark.parametrize(("number", "name"), [
    (1, "LINEAR"), (2, "SQUARES"), (3, "MAX"), (4, "IDEAL"), (6, "RELATIVE_UTIL_VARIANCE"),
])
def test_enum_given_as_integer(number, name):
    ps = check_solver()
    ps.add_goal(balance(formula=number))
    ps.add_goal(balance(formula=name))
    ev = ps.evaluate(CHECK)
    assert ev.goals[0].value == approx(ev.goals[1].value)


def test_enum_integers_for_bound_and_definition():
    """boundType 3 = RELATIVE_UTIL, definition 2 = DURING, capacity bound 2 = MIN."""
    assert goal_value(check_solver(), balance(boundType=3, upperBound=0.3), CHECK) == approx(
        0.8 / 3)
    spec = balance(definition=2, formula="MAX")
    assert goal_value(move_solver(), spec, MOVE_FINAL) == approx(0.8 - 1.7 / 3)
    assert goal_value(cap_solver(), capacity(bound=2), CAP_INITIAL) == approx(NC * 17)


# ---------------------------------------------------------------------------------------------
# Further cases: legacy average, zero capacities, restrictions that ignore the policy
# (docs/semantics.md#constraint-policies)
# ---------------------------------------------------------------------------------------------
def test_balance_whitelist_of_every_item_keeps_average_fixed():
    """A whitelist naming every item removes nothing: AFTER average stays fixed."""
    spec = balance(filter={"itemsWhitelist": ["h0", "h1", "h2"]})
    assert goal_value(het_solver(), spec, HET_FINAL) == approx(FIXED_LINEAR)


def test_balance_legacy_average():
    """avg = sum util / C. Fixed (full scope): 10/40 = 0.25; final u = (0.5, 0, 0.5)."""
    spec = balance(useLegacyAverage=True)
    assert goal_value(het_solver(), spec, HET_FINAL) == approx(2 * (0.5 - 0.25) / 3)
    # blacklist h2 -> dynamic over h0, h1: final util 5 + 0, C = 30 -> avg 1/6
    spec = balance(useLegacyAverage=True, filter={"itemsBlacklist": ["h2"]})
    assert goal_value(het_solver(), spec, HET_FINAL) == approx((0.5 - 1 / 6) / 2)


def test_balance_ideal_with_zero_capacity_item():
    """h3 (cap 0) dropped: C = 40 over n = 3, a = (0.75, 1.5, 0.75), final u (0.5, 0, 0.5)."""
    spec = balance(formula="IDEAL")
    assert goal_value(het_solver(0), spec, HET_FINAL) == approx(0.75 * 0.25 * 2)


def test_balance_relative_util_variance_uses_b_not_soft_bound():
    """RUV with B = 0.5 (RELATIVE_UTIL) and softUpperBound 0.7: v = (0, 0.1, 0.3)."""
    spec = balance(formula="RELATIVE_UTIL_VARIANCE", boundType="RELATIVE_UTIL",
                   upperBound=0.5, softUpperBound=0.7)
    assert goal_value(check_solver(), spec, CHECK) == approx(0.1 - 0.16 / 3)
    # B = 0.2: v = (0, 0.4, 0.6): 0.16 + 0.36 - 1.0/3
    spec = balance(formula="RELATIVE_UTIL_VARIANCE", boundType="RELATIVE_UTIL", upperBound=0.2)
    assert goal_value(check_solver(), spec, CHECK) == approx(0.16 + 0.36 - 1.0 / 3)


def test_util_increase_cost_zero_capacity():
    ps = het_solver(0)
    ps.add_goal(uic())
    with pytest.raises(InputError, match="capacity"):
        ps.evaluate(MOVE_INITIAL)
    # filtered out, the zero-capacity item is harmless: h2 0.1 -> 0.5 over items h0..h2
    spec = uic(filter={"itemsBlacklist": ["h3"]})
    final = {"h0": ["t0", "t1"], "h1": [], "h2": ["t2", "t3"], "h3": []}
    assert goal_value(het_solver(0), spec, final) == approx((0.5 - 0.1) / 3)


def test_capacity_all_zero_capacity_normalization_one():
    """avgcap = 0 -> nc = 1; RELATIVE limit 1 -> T = 0: e = util = (9, 3, 0)."""
    ps = make(CAP_INITIAL, dims={"cpu": {"t0": 5, "t1": 4, "t2": 3}},
              caps={"cpu": {"h0": 0, "h1": 0, "h2": 0}})
    assert goal_value(ps, capacity(), CAP_INITIAL) == approx(9 + 3)


def test_capacity_legacy_formula_zero_capacity_rejected():
    ps = make(CAP_INITIAL, dims={"cpu": {"t0": 5, "t1": 4, "t2": 3}},
              caps={"cpu": {"h0": 6, "h1": 10, "h2": 0}})
    ps.add_goal(capacity(useLegacyFormula=True))
    with pytest.raises(InputError, match="useLegacyFormula"):
        ps.evaluate(CAP_INITIAL)


def test_capacity_during_items_at_or_above_limit_are_non_accepting():
    """DURING constraint, ABSOLUTE 3: initial DURING = (9, 3, 0): h0 above, h1 exactly at
    the limit -> both non-accepting (policies other than SOFT); h2 accepts."""
    soft = cap_solver()
    soft.add_constraint(capacity(definition="DURING", limit=ABS3), policy="SOFT")
    assert soft.evaluate({"h0": ["t1"], "h1": ["t0", "t2"], "h2": []}).restriction_violations == []
    ps = cap_solver()
    ps.add_constraint(capacity(definition="DURING", limit=ABS3), policy="DEFAULT")
    ev = ps.evaluate(CAP_FINAL)  # moves only into h2
    assert ev.restriction_violations == []
    # t0 h0 -> h1: DURING h1 = A + I - S = 8 + 3 - 3 = 8, h0 = 4 + 9 - 4 = 9 -> 5 + 6
    final = {"h0": ["t1"], "h1": ["t0", "t2"], "h2": []}
    ev = ps.evaluate(final)
    assert ev.constraints[0].violation == approx(NC * (6 + 5))
    assert ev.restriction_violations
    assert not ev.feasible
    # as a goal nothing is restricted
    ps = cap_solver()
    ps.add_goal(capacity(definition="DURING", limit=ABS3))
    ev = ps.evaluate(final)
    assert ev.goals[0].value == approx(NC * (6 + 5))
    assert ev.restriction_violations == []


def test_non_accepting_restrictions_only_single_container_items():
    """Moving into multi-container rack r0 is not restricted (SOFT: feasible, soft term);
    moving into r1 = {h2} is."""
    ps = aa_solver()
    ps.add_constraint({"nonAcceptingSpec": {"scope": "rack", "items": ["r0", "r1"]}},
                      policy="SOFT")
    ev = ps.evaluate({"h0": ["t2"], "h1": ["t1", "t0"], "h2": ["t3"]})
    assert ev.constraints[0].violation == approx(1.0)
    assert ev.restriction_violations == []
    assert ev.feasible
    into_r1 = {"h0": [], "h1": ["t1"], "h2": ["t0", "t2", "t3"]}
    ev = ps.evaluate(into_r1)
    assert ev.constraints[0].violation == approx(1.0)
    assert ev.restriction_violations == [] and ev.feasible  # SOFT only prices it
    hard = aa_solver()
    hard.add_constraint({"nonAcceptingSpec": {"scope": "rack", "items": ["r0", "r1"]}},
                        policy="HARD")
    ev = hard.evaluate(into_r1)
    assert ev.restriction_violations
    assert not ev.feasible


def test_to_free_restriction_needs_positive_sizes():
    """A zero-size object in the dimension lifts ToFree's non-accepting rule."""
    final = {"h0": ["b"], "h1": ["a", "c"], "h2": ["d"], "h3": []}
    ps = make(TF_INITIAL, dims={"mem": {**TF_MEM, "b": 0}})
    ps.add_constraint(to_free(dimension="mem"), policy="SOFT")
    ev = ps.evaluate(final)
    assert ev.restriction_violations == []
    # h1: A = 4 + 3, NEW = 4; h2: A = 2
    assert ev.constraints[0].violation == approx(7 + 4 + 2)
    # as a goal there is no restriction either
    ps = tf_solver()
    ps.add_goal(to_free(dimension="mem"))
    assert ps.evaluate(final).restriction_violations == []
