"""A fleet from CSV tables: a folder holding ``objects.csv`` and ``containers.csv``, read into
a scenario dict (without goals: those come from a model file).

``objects.csv``: ``name``, ``container`` (where the object sits now), one column of numbers
per dimension, and optional ``group:PARTITION`` columns (the object's group in that
partition; empty: in none). ``containers.csv``: ``name``, one capacity column per dimension
of ``objects.csv`` (each one required), and any other column is a scope (``rack``, ``zone``):
the item each container belongs to (empty: outside that scope). A scope item's capacity is
the sum of its containers' capacities. Every error names the file, the row (as a
spreadsheet numbers it: the header is row 1) and the column.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from .errors import InputError
from .primitives import MAX_AMOUNT

OBJECTS_FILE = "objects.csv"
CONTAINERS_FILE = "containers.csv"
GROUP_PREFIX = "group:"
OBJECT_NAME, CONTAINER_NAME = "object", "container"  # the scenario's objectName, containerName


def is_fleet(path: str | Path) -> bool:
    """A folder (read as a CSV fleet) rather than a scenario file."""
    return Path(path).is_dir()


def fleet_files(path: str | Path) -> list[Path]:
    """The files a scenario path stands for: the two tables of a fleet folder, or itself."""
    folder = Path(path)
    if is_fleet(folder):
        return [folder / OBJECTS_FILE, folder / CONTAINERS_FILE]
    return [folder]


class _Table:
    """The rows of one CSV file with their row numbers, and errors that name both."""

    def __init__(self, path: Path):
        self.path = path
        try:
            with path.open(newline="", encoding="utf-8-sig") as handle:
                lines = list(csv.reader(handle))
        except FileNotFoundError:
            raise InputError(str(path), "missing: a fleet folder holds objects.csv and "
                             "containers.csv") from None
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise InputError(str(path), f"cannot read the CSV file: {exc}") from None
        numbered = [(number, row) for number, row in enumerate(lines, start=1)
                    if any(cell.strip() for cell in row)]
        if not numbered:
            raise InputError(str(path), "empty: expected a header row and one row per entry")
        _, header = numbered[0]
        self.header = [cell.strip() for cell in header]
        self.rows = numbered[1:]
        if len(self.header) == 1 and ";" in self.header[0]:
            raise self.error(1, None, "the header has one column holding ';': save the "
                             "table comma-separated", header[0])
        seen: set[str] = set()
        for index, name in enumerate(self.header):
            if not name:
                raise self.error(1, None, f"column {index + 1} has no name")
            if name in seen:
                raise self.error(1, name, "this column appears twice")
            seen.add(name)
        for number, row in self.rows:
            if len(row) != len(self.header):
                raise self.error(number, None, f"{len(row)} cells, but the header has "
                                 f"{len(self.header)} columns")

    def require(self, column: str, why: str) -> None:
        if column not in self.header:
            raise self.error(1, column, f"missing column ({why})")

    def error(self, row: int, column: str | None, problem: str, value: Any = None) -> InputError:
        where = f"{self.path}: row {row}" + (f", column {column}" if column else "")
        return InputError(where, problem, value)

    def records(self) -> list[tuple[int, dict[str, str]]]:
        return [(number, {name: cell.strip() for name, cell in zip(self.header, row)})
                for number, row in self.rows]

    def name(self, number: int, record: dict[str, str], column: str) -> str:
        value = record[column]
        if not value:
            raise self.error(number, column, "empty: a name is required")
        return value

    def amount(self, number: int, record: dict[str, str], column: str, what: str) -> float:
        """A size or capacity (``what``): a finite number from 0 to :data:`MAX_AMOUNT`."""
        text = record[column]
        if not text:
            raise self.error(number, column, "empty: a number is required")
        try:
            value = float(text)
        except ValueError:
            raise self.error(number, column, f"expected a number ({what})", text) from None
        if not math.isfinite(value):
            raise self.error(number, column, "must be finite (NaN and infinity are not "
                             "allowed)", text)
        if value < 0:
            raise self.error(number, column, "must not be negative", text)
        if value > MAX_AMOUNT:
            raise self.error(number, column, "too large to model exactly (at most 10^18)", text)
        return value


def read_fleet(folder: str | Path) -> dict[str, Any]:
    """The scenario dict of a fleet folder (see the module's docstring)."""
    folder = Path(folder)
    return read_fleet_tables(folder / OBJECTS_FILE, folder / CONTAINERS_FILE)


def read_fleet_tables(objects_path: str | Path, containers_path: str | Path) -> dict[str, Any]:
    """The scenario dict of the two tables: objects, containers, dimensions, scopes (with
    summed capacities) and partitions; no goals. ``objects.csv`` is checked whole first."""
    objects = _Table(Path(objects_path))
    dimensions, placed, sizes, partitions = _read_objects(objects)
    containers = _Table(Path(containers_path))
    names, capacities, scope_items = _read_containers(containers, dimensions,
                                                      objects.path.name)
    assignment: dict[str, list[str]] = {name: [] for name in names}
    for name, (number, container) in placed.items():
        if container not in assignment:
            raise objects.error(number, "container", f"unknown container (not in "
                                f"{containers.path.name})", container)
        assignment[container].append(name)
    scope_capacities = {
        scope: {d: _sums(items, capacities[d]) for d in dimensions}
        for scope, items in scope_items.items()}
    return {"objectName": OBJECT_NAME, "containerName": CONTAINER_NAME,
            "assignment": assignment, "objectDimensions": sizes,
            "containerDimensions": capacities, "scopes": scope_items,
            "scopeDimensions": scope_capacities, "partitions": partitions}


def _read_objects(objects: _Table) -> tuple[list[str], dict[str, tuple[int, str]],
                                            dict[str, dict[str, float]],
                                            dict[str, dict[str, list[str]]]]:
    """The dimensions, each object's row and container, the sizes and the partitions."""
    objects.require("name", "each object's name")
    objects.require("container", "the container each object sits in now")
    groups = {c: c[len(GROUP_PREFIX):] for c in objects.header if c.startswith(GROUP_PREFIX)}
    dimensions = [c for c in objects.header if c not in ("name", "container") and c not in groups]
    for column, partition in groups.items():
        if not partition:
            raise objects.error(1, column, f"name the partition: {GROUP_PREFIX}PARTITION")
    if f"{OBJECT_NAME}_count" in dimensions:
        raise objects.error(1, f"{OBJECT_NAME}_count", "this dimension is built in (1 per "
                            "object)")
    placed: dict[str, tuple[int, str]] = {}
    sizes: dict[str, dict[str, float]] = {d: {} for d in dimensions}
    partitions: dict[str, dict[str, list[str]]] = {p: {} for p in groups.values()}
    for number, record in objects.records():
        name = objects.name(number, record, "name")
        if name in placed:
            raise objects.error(number, "name", "duplicate object", name)
        placed[name] = (number, objects.name(number, record, "container"))
        for dimension in dimensions:
            sizes[dimension][name] = objects.amount(
                number, record, dimension, f"the size in dimension {dimension}; a column of "
                f"groups is named {GROUP_PREFIX}PARTITION")
        for column, partition in groups.items():
            if record[column]:
                partitions[partition].setdefault(record[column], []).append(name)
    return dimensions, placed, sizes, partitions


def _read_containers(containers: _Table, dimensions: list[str], objects_file: str,
                     ) -> tuple[list[str], dict[str, dict[str, float]], dict[str, dict[str, str]]]:
    """The containers in order, their capacities per dimension, and the item of each
    container in each scope."""
    containers.require("name", "each container's name")
    for dimension in dimensions:
        containers.require(dimension, f"the capacity of the dimension {dimension} of "
                           f"{objects_file}")
    scopes = [c for c in containers.header if c != "name" and c not in dimensions]
    if CONTAINER_NAME in scopes:
        raise containers.error(1, CONTAINER_NAME, "the container scope is built in (each "
                               "container is its own item); name the scope otherwise")
    names: dict[str, None] = {}  # in order
    capacities: dict[str, dict[str, float]] = {d: {} for d in dimensions}
    scope_items: dict[str, dict[str, str]] = {s: {} for s in scopes}
    for number, record in containers.records():
        name = containers.name(number, record, "name")
        if name in names:
            raise containers.error(number, "name", "duplicate container", name)
        names[name] = None
        for dimension in dimensions:
            capacities[dimension][name] = containers.amount(
                number, record, dimension, f"the capacity of dimension {dimension}")
        for scope in scopes:
            if record[scope]:
                scope_items[scope][name] = record[scope]
    return list(names), capacities, scope_items


def _sums(items: dict[str, str], capacity: dict[str, float]) -> dict[str, float]:
    """Per scope item, the sum of its containers' capacities."""
    total: dict[str, float] = {}
    for container, item in items.items():
        total[item] = total.get(item, 0.0) + capacity[container]
    return total
