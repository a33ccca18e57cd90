"""CSV fleets: a folder of objects.csv and containers.csv is the same problem as the scenario
file written by hand, every mistake names the file, row and column, and the bundled fleet
solves from the command line with its plan written as CSV."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpsat_rebalancer.cli import main
from cpsat_rebalancer.errors import InputError
from cpsat_rebalancer.evaluate import evaluate
from cpsat_rebalancer.scenario import load_data_with_model, parse_scenario
from cpsat_rebalancer.tables import read_fleet

ROOT = Path(__file__).resolve().parent.parent
FLEET = ROOT / "scenarios" / "csv" / "fleet"
MODEL = ROOT / "models" / "fleet_rebalance.json"

OBJECTS = [["name", "container", "cpu", "mem", "group:service"],
           ["a", "h0", "2", "1.5", "web"],
           ["b", "h0", "3", "0", "db"],
           ["c", "h1", "1", "2", ""],
           ["d", "h2", "4", "1e1", "web"]]
CONTAINERS = [["name", "cpu", "mem", "rack"],
              ["h0", "8", "10", "r0"],
              ["h1", "4", "20", "r0"],
              ["h2", "6", "5", "r1"],
              ["h3", "2.5", "5", ""]]
GOALS = {"goals": [{"spec": {"balanceSpec": {"dimension": "cpu"}}},
                   {"spec": {"balanceSpec": {"scope": "rack", "dimension": "mem"}}},
                   {"spec": {"groupCountSpec": {"scope": "rack", "partitionName": "service"}}},
                   {"boundary": True},
                   {"spec": {"minimizeMovementSpec": {}}}],
         "constraints": [{"spec": {"capacitySpec": {"dimension": "mem"}}, "policy": "HARD"}]}


def write_fleet(folder: Path, objects=OBJECTS, containers=CONTAINERS) -> Path:
    folder.mkdir(exist_ok=True)
    for name, rows in (("objects.csv", objects), ("containers.csv", containers)):
        with (folder / name).open("w", newline="") as handle:
            csv.writer(handle).writerows(rows)
    return folder


def by_hand() -> dict:
    """The same fleet as a scenario file would say it; rack capacities are the sums."""
    return {
        "objectName": "object", "containerName": "container",
        "assignment": {"h0": ["a", "b"], "h1": ["c"], "h2": ["d"], "h3": []},
        "objectDimensions": {"cpu": {"a": 2, "b": 3, "c": 1, "d": 4},
                             "mem": {"a": 1.5, "b": 0, "c": 2, "d": 10}},
        "containerDimensions": {"cpu": {"h0": 8, "h1": 4, "h2": 6, "h3": 2.5},
                                "mem": {"h0": 10, "h1": 20, "h2": 5, "h3": 5}},
        "scopes": {"rack": {"h0": "r0", "h1": "r0", "h2": "r1"}},
        "scopeDimensions": {"rack": {"cpu": {"r0": 12, "r1": 6}, "mem": {"r0": 30, "r1": 5}}},
        "partitions": {"service": {"web": ["a", "d"], "db": ["b"]}},
        **GOALS,
    }


def test_a_fleet_is_the_scenario_written_by_hand(tmp_path: Path) -> None:
    folder = write_fleet(tmp_path / "fleet")
    model = tmp_path / "model.json"
    model.write_text(json.dumps(GOALS))
    from_csv = parse_scenario(load_data_with_model(folder, model))
    from_hand = parse_scenario(by_hand())
    a, b = from_csv.problem, from_hand.problem
    assert a.objects == b.objects and a.containers == b.containers
    assert (a.initial == b.initial).all()
    rng = np.random.default_rng(7)
    for _ in range(20):  # every goal and constraint agrees on random assignments
        final = rng.integers(0, len(a.containers), len(a.objects))
        x = evaluate(a, from_csv.model, final)
        y = evaluate(b, from_hand.model, final)
        assert x.positions == y.positions and x.feasible == y.feasible


def test_scope_capacities_are_the_sums_of_their_containers() -> None:
    with (FLEET / "containers.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    data = read_fleet(FLEET)
    for dimension in ("cpu", "memory"):
        for rack, total in data["scopeDimensions"]["rack"][dimension].items():
            assert total == sum(float(r[dimension]) for r in rows if r["rack"] == rack)


def test_a_spreadsheet_export_with_a_byte_order_mark_reads(tmp_path: Path) -> None:
    folder = write_fleet(tmp_path / "fleet")
    path = folder / "objects.csv"
    path.write_bytes("\ufeff".encode() + path.read_bytes())
    assert list(read_fleet(folder)["objectDimensions"]) == ["cpu", "mem"]


def edited(rows: list[list[str]], row: int, column: int, value: str) -> list[list[str]]:
    changed = [list(r) for r in rows]
    changed[row][column] = value
    return changed


@pytest.mark.parametrize(("objects", "containers", "where", "problem"), [
    (edited(OBJECTS, 2, 2, "-3"), CONTAINERS, "objects.csv: row 3, column cpu", "negative"),
    (edited(OBJECTS, 2, 2, "nan"), CONTAINERS, "objects.csv: row 3, column cpu", "finite"),
    (edited(OBJECTS, 4, 3, "inf"), CONTAINERS, "objects.csv: row 5, column mem", "finite"),
    ([OBJECTS[0], [*OBJECTS[1], "9"], *OBJECTS[2:]], CONTAINERS, "objects.csv: row 2",
     "6 cells, but the header has 5 columns"),
    (edited(OBJECTS, 1, 3, "lots"), CONTAINERS, "objects.csv: row 2, column mem",
     "expected a number"),
    (edited(OBJECTS, 1, 3, ""), CONTAINERS, "objects.csv: row 2, column mem", "empty"),
    (edited(OBJECTS, 1, 3, "1e30"), CONTAINERS, "objects.csv: row 2, column mem", "too large"),
    (edited(OBJECTS, 3, 1, "h9"), CONTAINERS, "objects.csv: row 4, column container",
     "unknown container"),
    (edited(OBJECTS, 3, 0, "a"), CONTAINERS, "objects.csv: row 4, column name",
     "duplicate object"),
    (edited(OBJECTS, 3, 0, ""), CONTAINERS, "objects.csv: row 4, column name", "empty"),
    (edited(OBJECTS, 0, 3, "cpu"), CONTAINERS, "objects.csv: row 1, column cpu", "twice"),
    (edited(OBJECTS, 0, 1, "host"), CONTAINERS, "objects.csv: row 1, column container",
     "missing column"),
    (edited(OBJECTS, 0, 4, "groups"), CONTAINERS, "objects.csv: row 2, column groups",
     "a column of groups is named group:PARTITION"),
    (edited(OBJECTS, 0, 4, "group:"), CONTAINERS, "objects.csv: row 1, column group:",
     "partition"),
    (edited(OBJECTS, 0, 3, "object_count"), CONTAINERS,
     "objects.csv: row 1, column object_count", "built in"),
    (OBJECTS, edited(CONTAINERS, 0, 2, "memory"), "containers.csv: row 1, column mem",
     "missing column"),
    (OBJECTS, edited(CONTAINERS, 3, 0, "h0"), "containers.csv: row 4, column name",
     "duplicate container"),
    (OBJECTS, edited(CONTAINERS, 2, 1, "-1"), "containers.csv: row 3, column cpu",
     "negative"),
    (OBJECTS, edited(CONTAINERS, 0, 3, "container"), "containers.csv: row 1, column container",
     "built in"),
    (OBJECTS, [[";".join(r)] for r in CONTAINERS], "containers.csv: row 1", "comma"),
    (OBJECTS, [], "containers.csv", "empty"),
])
def test_every_mistake_names_the_file_row_and_column(tmp_path, objects, containers, where,
                                                     problem) -> None:
    folder = write_fleet(tmp_path / "fleet", objects, containers)
    with pytest.raises(InputError) as error:
        read_fleet(folder)
    message = str(error.value)
    assert f"{folder}/{where}" in message and problem in message


def test_a_missing_table_is_named(tmp_path: Path) -> None:
    folder = write_fleet(tmp_path / "fleet")
    (folder / "containers.csv").unlink()
    with pytest.raises(InputError, match=r"containers\.csv: missing"):
        read_fleet(folder)


def test_the_bundled_fleet_solves_and_writes_its_plan_as_csv(tmp_path: Path) -> None:
    out = {name: tmp_path / name for name in ("moves.csv", "util.csv", "result.json")}
    code = main(["solve", str(FLEET), "--model", str(MODEL), "--moves-csv", str(out["moves.csv"]),
                 "--utilization-csv", str(out["util.csv"]), "--json", str(out["result.json"])])
    assert code == 0
    result = json.loads(out["result.json"].read_text())
    assert result["status"] == "OPTIMAL" and result["feasible"]
    moves = pd.read_csv(out["moves.csv"], dtype=str)
    assert moves.to_dict(orient="records") == result["moves"] and len(moves) > 0
    # the utilization table against sums computed here from the CSV files and the result
    objects = pd.read_csv(FLEET / "objects.csv", dtype={"name": str})
    hosts = pd.read_csv(FLEET / "containers.csv", dtype={"name": str, "rack": str})
    objects["final"] = objects["name"].map(result["assignment"])
    objects["final_rack"] = objects["final"].map(dict(zip(hosts["name"], hosts["rack"])))
    objects["rack"] = objects["container"].map(dict(zip(hosts["name"], hosts["rack"])))
    util = pd.read_csv(out["util.csv"], dtype={"item": str})
    for dimension in ("cpu", "memory"):
        for scope, before_key, after_key, caps in (
                ("container", "container", "final", hosts.set_index("name")[dimension]),
                ("rack", "rack", "final_rack", hosts.groupby("rack")[dimension].sum())):
            rows = util[(util["scope"] == scope) & (util["dimension"] == dimension)]
            before = objects.groupby(before_key)[dimension].sum()
            after = objects.groupby(after_key)[dimension].sum()
            for row in rows.itertuples(index=False):
                assert row.before == pytest.approx(before.get(row.item, 0.0))
                assert row.after == pytest.approx(after.get(row.item, 0.0))
                assert row.capacity == pytest.approx(caps[row.item])
                assert row.after <= row.capacity + 1e-9 or scope == "rack"


def test_evaluate_reads_a_fleet_too(tmp_path: Path, capsys) -> None:
    result = tmp_path / "result.json"
    assert main(["solve", str(FLEET), "--model", str(MODEL), "--json", str(result)]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(FLEET), "--model", str(MODEL), "--assignment",
                 str(result)]) == 0
    assert "feasible" in capsys.readouterr().out


def test_a_fleet_needs_a_model_and_its_tables_are_never_overwritten(tmp_path, capsys) -> None:
    assert main(["solve", str(FLEET)]) == 2
    assert "--model" in capsys.readouterr().err
    folder = write_fleet(tmp_path / "fleet")
    before = (folder / "objects.csv").read_bytes()
    assert main(["solve", str(folder), "--model", str(MODEL),
                 "--moves-csv", str(folder / "objects.csv")]) == 2
    assert "would be overwritten" in capsys.readouterr().err
    assert (folder / "objects.csv").read_bytes() == before


CELLS = st.sampled_from(["", "h0", "h1", "h3", "a", "b", "1", "2.5", "-1", "nan", "inf",
                         "1e400", "0x10", " 3 ", "r0", "web", "💥", "a;b", '"', "cpu", "name",
                         "group:", "object_count", "container"])


@st.composite
def mutated(draw, rows: list[list[str]]) -> list[list[str]]:
    """A valid table with a few cells replaced, and rows dropped, repeated or cut short."""
    table = [list(row) for row in rows]
    for _ in range(draw(st.integers(0, 3))):
        row = draw(st.integers(0, len(table) - 1))
        if table[row]:
            table[row][draw(st.integers(0, len(table[row]) - 1))] = draw(CELLS)
    change = draw(st.sampled_from(["none", "drop", "repeat", "cut"]))
    row = draw(st.integers(1, len(table) - 1))
    if change == "drop":
        del table[row]
    elif change == "repeat":
        table.append(list(table[row]))
    elif change == "cut":
        table[row] = table[row][:-1]
    return table


@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(objects=mutated(OBJECTS), containers=mutated(CONTAINERS))
def test_any_table_reads_or_raises_input_error(tmp_path_factory, objects, containers) -> None:
    folder = write_fleet(tmp_path_factory.mktemp("fleet"), objects, containers)
    try:
        data = read_fleet(folder)
    except InputError as error:
        assert "objects.csv" in str(error) or "containers.csv" in str(error)
        return
    # what reads is a scenario the parser accepts: the tables' own checks are complete
    problem = parse_scenario(data).problem
    assert problem.num_objects == sum(len(v) for v in data["assignment"].values())
