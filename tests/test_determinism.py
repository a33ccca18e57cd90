"""Same input, seed, worker count and deterministic budget: the same assignment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from ortools.sat import sat_parameters_pb2

from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.generators import balance_instance, scale_instance
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve import closure
from cpsat_rebalancer.solve.compile import compile_model
from cpsat_rebalancer.solve.pipeline import solve_model
from cpsat_rebalancer.solve.session import Session

ROOT = Path(__file__).resolve().parents[1]


def test_deterministic_budget_repeats_the_assignment() -> None:
    scenario = parse_scenario(balance_instance(120, 8, "SQUARES", seed=3))
    options = SolverOptions(workers=2, seed=11, deterministic_time=0.1)
    first = solve_model(scenario.problem, scenario.model, options)
    second = solve_model(scenario.problem, scenario.model, options)
    assert (first.final == second.final).all()
    assert [b.objective for b in first.buckets] == [b.objective for b in second.buckets]


def test_a_deterministic_run_takes_no_wall_clock_share() -> None:
    """Shares of time cut a search wherever the clock stands, so a deterministic run keeps
    only the user's time limit; its solves are bounded by deterministic time instead."""
    scenario = parse_scenario(balance_instance(12, 3, seed=1))
    problem, model = scenario.problem, scenario.model
    builder, _ = compile_model(problem, model, True)
    clocked = Session(builder, model, SolverOptions(workers=1, seed=0))
    assert clocked.wall_limit(3.0) == 3.0
    limited = Session(builder, model, SolverOptions(time_limit=50.0, workers=1, seed=0,
                                                  deterministic_time=2.0))
    repeatable = Session(builder, model, SolverOptions(workers=1, seed=0, deterministic_time=2.0))
    assert repeatable.wall_limit(3.0) is None
    assert 49.0 < limited.wall_limit(3.0) <= 50.0
    params = sat_parameters_pb2.SatParameters(num_workers=2)
    repeatable.limit(params, None, work=0.5)
    assert params.max_deterministic_time == 0.5 and params.interleave_search
    repeatable.limit(params, None, work=9.0)  # the user's budget per solve is the most
    assert params.max_deterministic_time == 2.0
    params.num_workers = 1  # one worker repeats without interleaving (see below)
    repeatable.limit(params, None)
    assert not params.interleave_search


def test_one_worker_keeps_each_search_to_its_deterministic_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Drawn shape 264 at 7x4 (loads near 3e10 units, an objective near 1e15): interleaved,
    one worker's single turn of CP-SAT's subsolver without LP propagated for 8.9
    deterministic seconds against a budget of 1.5 (CP-SAT reads the budget between turns).
    One worker repeats without interleaving, and its search reads the budget throughout.
    (Solves without presolve, the reruns that check an INFEASIBLE, can still pass theirs
    while loading such a model: not counted here.)"""
    spent = []
    run_all = Session.run_all

    def recording(self, solves, reporters=None):  # noqa: ANN001, ANN202 (a pass-through)
        statuses = run_all(self, solves, reporters)
        spent.extend((solver.parameters, solver.response_proto.deterministic_time)
                     for solver, _ in solves)
        return statuses

    monkeypatch.setattr(Session, "run_all", recording)
    monkeypatch.setattr(closure, "CANDIDATE_LIMIT", 10)  # the closure's listing is not timed
    scenario = parse_scenario(random_shape_scenario(7, 4, 264))
    solve_model(scenario.problem, scenario.model,
                SolverOptions(workers=1, seed=0, deterministic_time=1.5))
    presolved = [(p.max_deterministic_time, work) for p, work in spent if p.cp_model_presolve]
    assert presolved
    assert all(work <= 1.01 * budget + 0.01 for budget, work in presolved), presolved


def test_a_repeatable_ideal_run_repeats_and_names_its_limit() -> None:
    """IDEAL (leximin levels, then moves) under a deterministic budget and no time limit:
    the same assignment twice, and what stopped an unproven search is the budget."""
    scenario = parse_scenario(scale_instance("ideal", 400, 20, 0))
    options = SolverOptions(workers=2, seed=7, deterministic_time=0.05)
    first = solve_model(scenario.problem, scenario.model, options)
    second = solve_model(scenario.problem, scenario.model, options)
    assert (first.final == second.final).all()
    assert [b.status for b in first.buckets] == [b.status for b in second.buckets]
    assert "time_limit" not in [first.termination, *(b.termination for b in first.buckets)]


# Run in a fresh interpreter under a given PYTHONHASHSEED: each scenario generator's output
# and the final assignment of deterministic solves, as digests. String hashing, and so the
# order of a set of names, changes from one process to the next; nothing may depend on it.
ACROSS_PROCESSES = """
import glob, hashlib, json
from pathlib import Path
from cpsat_rebalancer import parse_scenario
from cpsat_rebalancer.generators import random_scenario, scale_instance
from cpsat_rebalancer.scenario import SolverOptions
from cpsat_rebalancer.shapes import random_shape_scenario
from cpsat_rebalancer.solve.pipeline import solve_model
from cpsat_rebalancer.vcd.generate import generate

def digest(x):
    return hashlib.sha256(json.dumps(x, sort_keys=True, default=str).encode()).hexdigest()

out = {f"random {s}": digest(random_scenario(s, groups=bool(s % 2))) for s in range(60)}
out |= {f"shape {s}": digest(random_shape_scenario(60, 6, s)) for s in range(40)}
out |= {f"scale {f}": digest(scale_instance(f, 200, 10, 1))
        for f in ("linear", "ideal", "drain", "racks", "replicas")}
out["vcd"] = digest(generate(100, 10, 1, 0.9, hosts=5))
files = sorted(glob.glob("scenarios/catalog/*.json"))[::4]
files += sorted(glob.glob("scenarios/seed_*.json"))
scenarios = [(f, json.loads(Path(f).read_text())) for f in files]
scenarios += [(f"shape {s} solved", random_shape_scenario(40, 5, s)) for s in range(0, 30, 5)]
for name, data in scenarios:
    scenario = parse_scenario(data)
    result = solve_model(scenario.problem, scenario.model,
                         SolverOptions(workers=2, seed=0, deterministic_time=0.3))
    out[name] = [result.final.tolist(), [b.status for b in result.buckets]]
print(json.dumps(out))
"""


def test_generators_and_deterministic_solves_repeat_across_processes() -> None:
    """Two interpreters with different string hashing: the same scenarios from every
    generator, and the same answers from deterministic solves (bundled scenarios, random
    shapes; one of them reruns an INFEASIBLE without presolve, which must not abort)."""
    outputs = []
    for hash_seed in ("1", "2"):
        child = subprocess.run([sys.executable, "-c", ACROSS_PROCESSES], cwd=ROOT,
                               env={**os.environ, "PYTHONHASHSEED": hash_seed},
                               capture_output=True, text=True, timeout=600)
        assert child.returncode == 0, child.stderr[-2000:]
        outputs.append(json.loads(child.stdout))
    first, second = outputs
    assert first.keys() == second.keys()
    assert [name for name in first if first[name] != second[name]] == []


# A small random linear model with a hint, infeasible for the seeds the test uses; the
# search (not presolve) finds it so.
HINTED_INFEASIBLE = """
import random, sys
from ortools.sat.python import cp_model
from cpsat_rebalancer.solve.session import run_solver
rng = random.Random(int(sys.argv[1]))
cp = cp_model.CpModel()
n = rng.randint(3, 30)
x = [cp.new_int_var(0, rng.randint(1, 20), f"x{i}") for i in range(n)]
b = [cp.new_bool_var(f"b{i}") for i in range(n)]
for i in range(n):
    cp.add(x[i] >= rng.randint(0, 3)).only_enforce_if(b[i])
for _ in range(rng.randint(1, 8)):
    chosen = rng.sample(range(n), rng.randint(1, n))
    cp.add(sum(rng.randint(1, 9) * x[i] for i in chosen) <= rng.randint(0, 40))
    cp.add(sum(rng.randint(1, 9) * x[i] for i in chosen) >= rng.randint(0, 60))
cp.add_bool_or(b)
cp.minimize(sum(rng.randint(-5, 5) * v for v in x))
for v in x:
    cp.add_hint(v, rng.randint(0, 5))
solver = cp_model.CpSolver()
solver.parameters.num_workers = 2
solver.parameters.interleave_search = True
solver.parameters.max_deterministic_time = 0.5
solver.parameters.cp_model_presolve = sys.argv[2] == "presolve"
print(solver.status_name(run_solver(solver, cp)[0]))
"""


@pytest.mark.parametrize(("seed", "presolve"), [(22, "presolve"), (24, "presolve"),
                                                (22, "no presolve")])
def test_an_interleaved_search_of_an_infeasible_hinted_model_does_not_abort(
        seed: int, presolve: str) -> None:
    """An interleaved search (a deterministic budget) of two workers on an infeasible,
    hinted model makes CP-SAT abort the process unless the hint is repaired first. In a
    child process, since an abort would take the test runner down too."""
    child = subprocess.run([sys.executable, "-c", HINTED_INFEASIBLE, str(seed), presolve],
                           capture_output=True, text=True, timeout=120)
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.split() == ["INFEASIBLE"]
