"""A fast subset of the published instances (the full sets: benchmarks/known_optima.py).

Each instance goes through the importer and the CLI's solve path, and must reach the
published optimum, proven; no value is ever claimed optimal below a published lower bound.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.known_optima import BPP, GAP, instance_key, known_values, solve_instance
from cpsat_rebalancer.importers import IMPORTERS
from cpsat_rebalancer.scenario import SolverOptions, parse_scenario
from cpsat_rebalancer.solve.pipeline import solve_model

INSTANCES = [
    ("gap", GAP / "cattrysse1994" / "gap1-0"),
    ("gap", GAP / "cattrysse1994" / "gap2-1"),
    ("gap", GAP / "cattrysse1994" / "gap3-4"),
    ("gap", GAP / "cattrysse1994" / "gap6-2"),
    ("gap", GAP / "chu1997" / "a05100"),
    ("gap", GAP / "chu1997" / "b05100"),
    ("binpacking", BPP / "bpplib" / "Scholl" / "Scholl_1" / "N1C1W1_A.txt"),
    ("binpacking", BPP / "bpplib" / "Scholl" / "Scholl_1" / "N1C1W1_B.txt"),
    ("binpacking", BPP / "bpplib" / "Scholl" / "Scholl_1" / "N1C2W2_A.txt"),
    ("binpacking", BPP / "bpplib" / "Scholl" / "Scholl_1" / "N1C3W4_A.txt"),  # FFD: one more
    ("binpacking", BPP / "bpplib" / "Schwerin" / "Schwerin_1" / "Schwerin1_BPP1.txt"),
    ("binpacking", BPP / "bpplib" / "Scholl" / "Scholl_1" / "N1C3W1_A.txt"),  # here too
    # a triplet instance: first-fit decreasing misses the optimum, the pattern dive meets it
    ("binpacking", BPP / "bpplib" / "Falkenauer" / "Falkenauer_T" / "Falkenauer_t60_01.txt"),
    # the dive on the plain LP (most-used column first) ended a bin above, and so did CP-SAT
    ("binpacking", BPP / "bpplib" / "Scholl" / "Scholl_1" / "N2C3W2_L.txt"),
    # one dive ends a bin above the bound; its detours meet it
    ("binpacking", BPP / "bpplib" / "Hard28" / "Hard28_BPP742.txt"),
]


NEEDS_DATA = pytest.mark.skipif(not GAP.exists() or not BPP.exists(),
                                reason="the public benchmark data (../shared/data) is not here")


@NEEDS_DATA
@pytest.mark.parametrize("kind, path", INSTANCES, ids=[p.name for _, p in INSTANCES])
def test_published_optimum_is_reached_and_proven(kind: str, path) -> None:
    known = known_values()[instance_key(kind, path)]
    value, bound, status, _ = solve_instance(kind, path, SolverOptions(time_limit=60, workers=2,
                                                                        seed=0))
    assert value is not None
    assert value >= known.bound - 1e-9  # never better than a published lower bound
    assert bound is None or bound <= known.best + 1e-9  # our bound is valid
    assert status == "OPTIMAL"
    assert value == known.best


@NEEDS_DATA
def test_same_seed_same_packing_under_a_deterministic_budget() -> None:
    """The probe's two searches run one after the other under a deterministic budget."""
    path = BPP / "bpplib" / "Scholl" / "Scholl_1" / "N1C3W4_A.txt"  # first-fit needs one more
    scenario = parse_scenario(IMPORTERS["binpacking"](path))
    options = SolverOptions(workers=2, seed=3, deterministic_time=20.0)
    first, second = (solve_model(scenario.problem, scenario.model, options) for _ in range(2))
    assert first.status == second.status == "OPTIMAL"
    assert np.array_equal(first.final, second.final)
