"""Study files: what to vary over which base scenario, validated before anything runs.

A study (YAML or JSON) names a base scenario (a file, or a generator function with its
arguments), an optional model from ``models/``, solver settings, a ``grid`` (every
combination of the listed values) and/or a ``variants`` list (explicit parameter sets),
heuristics to compare, and optional ``searches`` (a minimum-capacity or maximum-drain question
answered by a binary search with a proof at each step), an optional ``hint``
(``first-fit``, see :mod:`.hints`), and ``shortcuts`` (decide search probes by cheaper
proofs first, see :mod:`.proofs`). Parameters are described in
:mod:`.variants`. Every mistake raises :class:`InputError` naming the field.

Generators and heuristics are names from the project's registries or installed plugins
(:mod:`cpsat_rebalancer.plugins`); a ``FILE.py:NAME`` in the study's folder runs only with
``allow_code=True`` (``study run --allow-code``). Nothing else is ever imported.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..fields import check_keys, check_number, is_flag, is_integer
from ..generators import GENERATORS
from ..heuristics import check_heuristic
from ..plugins import (
    GENERATOR_GROUP,
    code_file,
    load_code_file,
    load_plugin,
    plugin,
    plugin_names,
)
from ..scenario import MODEL_KEYS, SolverOptions, load_data_with_model, read_data_file
from .variants import check_parameter

STUDY_KEYS = {"name", "description", "base", "model", "solver", "grid", "variants",
              "heuristics", "metrics", "searches", "hint", "plot", "shortcuts"}
HINTS = ("first-fit",)
SEARCH_KEYS = {"parameter", "find", "low", "high", "feasible", "name"}


@dataclass(frozen=True)
class Search:
    """Find the smallest (``min``) or largest (``max``) integer value of ``parameter`` for
    which a variant is feasible, assuming feasibility is monotone in it. Feasible means every
    hard constraint holds and, when ``position`` is set, that bucket's value is at most
    ``at_most`` (so a goal such as ToFree can say "all drained" without an infeasibility
    explanation)."""

    name: str
    parameter: str
    find: str  # "min" or "max"
    low: int | str  # an integer, or "counting" (min over containers): the counting bound
    high: int | str | None  # an integer, "all" (containers of the type), "counting" (drains)
    position: int | None
    at_most: float


@dataclass(frozen=True)
class Study:
    path: Path
    name: str
    base: dict[str, Any]  # {"scenario": path} or {"generator": NAME, "args": {...}}
    model: Path | None
    solver: dict[str, Any]
    points: list[dict[str, Any]]  # one parameter dict per grid point / listed variant
    heuristics: tuple[str, ...]
    metrics: tuple[str, ...] | None
    searches: tuple[Search, ...]
    fingerprint: str = field(default="")
    hint: str | None = None  # a starting assignment for every variant (see .hints)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)  # as given, for workers
    plot_dimensions: tuple[str, ...] | None = None  # utilization figures (default: all)
    # decide search probes by cheaper proofs first (see .proofs); "only": and leave the
    # probes they cannot decide unknown instead of solving them in full
    shortcuts: bool | str = False
    allow_code: bool = False  # run FILE.py:NAME generators and heuristics beside the study

    @property
    def options(self) -> SolverOptions:
        return SolverOptions.parse(self.solver, "solver")

    def base_scenario(self) -> dict[str, Any]:
        """The base scenario dict with the model applied (a fresh copy each call)."""
        if "scenario" in self.base:
            data = load_data_with_model(str(self.base["scenario"]),
                                        str(self.model) if self.model else None)
        else:
            function = generator_function(self.base["generator"], allow_code=self.allow_code,
                                          folder=self.path.parent)
            data = function(**self.base.get("args", {}))
            if self.model:  # as ``--model`` does: the model's goals and constraints replace
                data = {k: v for k, v in data.items() if k not in MODEL_KEYS}
                data.update(load_model(self.model))
        return data


def generator_function(reference: str, *, allow_code: bool = False, folder: Path | None = None,
                       where: str = "base.generator") -> Any:
    """The generator ``reference`` names: a built-in (``drain_cluster``, ...), an installed
    plugin (entry point group ``cpsat_rebalancer.generators``), or with ``allow_code`` a
    ``FILE.py:FUNCTION`` inside ``folder`` (the study's). Anything else is refused before
    anything is imported."""
    if reference in GENERATORS:
        return GENERATORS[reference]
    code = code_file(reference, where, allow_code=allow_code, folder=folder)
    if code is not None:
        return load_code_file(code, where)
    entry = plugin(GENERATOR_GROUP, reference) if ":" not in reference else None
    if entry is not None:
        return load_plugin(entry, where)
    module, _, name = reference.rpartition(":")
    hint = (f"; write the plain name {name}" if module == "cpsat_rebalancer.generators"
            and name in GENERATORS else "")
    installed = plugin_names(GENERATOR_GROUP)
    raise InputError(where, "unknown generator (built in: " + ", ".join(GENERATORS)
                     + ("; installed plugins: " + ", ".join(installed) if installed else "")
                     + "; or FILE.py:FUNCTION in the study's folder, with --allow-code)"
                     + hint, reference)


def load_model(path: Path) -> dict[str, Any]:
    data = read_data_file(path)
    if not isinstance(data, dict):
        raise InputError(str(path), "a model must be a mapping at the top level")
    return {k: v for k, v in data.items() if k in MODEL_KEYS}


def _relative(study_path: Path, value: Any, where: str) -> Path:
    if not isinstance(value, str) or not value:
        raise InputError(where, "expected a file path", value)
    try:
        path = (study_path.parent / value).resolve()
        found = path.exists()
    except (OSError, ValueError):  # a NUL byte, a name too long
        raise InputError(where, "not a usable file path", value) from None
    if not found:
        raise InputError(where, "file not found", value)
    return path


def _parse_base(data: Any, study_path: Path, allow_code: bool) -> dict[str, Any]:
    if isinstance(data, str):
        return {"scenario": _relative(study_path, data, "base")}
    if not isinstance(data, dict):
        raise InputError("base", "expected a scenario path or {generator, args}", data)
    check_keys(data, "base", "field names")
    unknown = sorted(set(data) - {"scenario", "generator", "args"})
    if unknown:
        raise InputError(f"base.{unknown[0]}", "unknown field (base holds scenario, or "
                         "generator and args)")
    if ("scenario" in data) == ("generator" in data):
        raise InputError("base", "give exactly one of scenario and generator", data)
    if "scenario" in data:
        if "args" in data:
            raise InputError("base.args", "only a generator takes args")
        return {"scenario": _relative(study_path, data["scenario"], "base.scenario")}
    generator = data["generator"]
    if not isinstance(generator, str) or not generator:
        raise InputError("base.generator", "expected a generator name", generator)
    function = generator_function(generator, allow_code=allow_code, folder=study_path.parent)
    code = code_file(generator, "base.generator", allow_code=True, folder=study_path.parent)
    if code is not None:  # kept as an absolute path: workers resolve it the same way
        generator = f"{code.path}:{code.attribute}"
    if not callable(function):
        raise InputError("base.generator", "not a function", generator)
    args = data.get("args", {})
    if not isinstance(args, dict):
        raise InputError("base.args", "expected a mapping of keyword arguments", args)
    check_keys(args, "base.args", "argument names")
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without one: the call itself will tell
        signature = None
    if signature is not None:
        try:
            signature.bind(**args)
        except TypeError as exc:
            raise InputError("base.args", f"do not fit {generator}: {exc}") from None
    return {"generator": generator, "args": dict(args)}


def _parse_search(data: Any, index: int) -> Search:
    path = f"searches[{index}]"
    if not isinstance(data, dict):
        raise InputError(path, "expected a mapping", data)
    check_keys(data, path, "field names")
    unknown = sorted(set(data) - SEARCH_KEYS)
    if unknown:
        raise InputError(f"{path}.{unknown[0]}", "unknown search field (a search holds "
                         + ", ".join(sorted(SEARCH_KEYS)) + ")")
    parameter = data.get("parameter")
    check_parameter(parameter, 0, f"{path}.parameter")
    if not parameter.startswith(("containers.", "drain.")):
        raise InputError(f"{path}.parameter", "a search varies a container count "
                         "(containers.SCOPE.ITEM) or a drain size (drain.coldest, ...)",
                         parameter)
    containers = parameter.startswith("containers.")
    if parameter.startswith("drain.hosts"):
        raise InputError(f"{path}.parameter", "a drain search needs an order (drain.coldest.DIM, "
                         "drain.hottest.DIM or drain.random.SEED)", parameter)
    find = data.get("find", "min" if containers else "max")
    if find not in ("min", "max"):
        raise InputError(f"{path}.find", "expected min or max", find)
    # words allowed for the ends: the counting bound on the side it bounds, or all containers
    words = {("low", "counting"): containers and find == "min",
             ("high", "all"): containers,
             ("high", "counting"): not containers and find == "max"}
    low = data.get("low", "counting" if containers and find == "min" else 0)
    high = data.get("high", "all" if containers else "counting" if find == "max" else None)
    for key, value in (("low", low), ("high", high)):
        if isinstance(value, str):
            if not words.get((key, value)):
                raise InputError(f"{path}.{key}", "this word does not apply here (low: "
                                 "counting for a min search over containers; high: all for "
                                 "containers, counting for a max drain search)", value)
        elif value is not None and (not is_integer(value) or value < 0):
            raise InputError(f"{path}.{key}", "expected a non-negative integer", value)
    low, high = (int(v) if is_integer(v) else v for v in (low, high))
    if isinstance(low, int) and isinstance(high, int) and low > high:
        raise InputError(f"{path}.low", "must not exceed high", low)
    feasible = data.get("feasible", {})
    if not isinstance(feasible, dict) or set(feasible) - {"position", "atMost"}:
        raise InputError(f"{path}.feasible", "expected {position, atMost}", feasible)
    position = feasible.get("position")
    if position is not None and (not is_integer(position) or position < 0):
        raise InputError(f"{path}.feasible.position", "expected a tuple position", position)
    position = None if position is None else int(position)
    at_most = check_number(feasible.get("atMost", 0.0), f"{path}.feasible.atMost")
    name = data.get("name", parameter)
    if not isinstance(name, str) or not name:
        raise InputError(f"{path}.name", "expected a name", name)
    return Search(name, parameter, find, low, high, position, float(at_most))


def _points(grid: Any, variants: Any) -> list[dict[str, Any]]:
    """Grid combinations crossed with the listed variants (either may be absent)."""
    grid = {} if grid is None else grid
    if not isinstance(grid, dict):
        raise InputError("grid", "expected a mapping parameter -> list of values", grid)
    check_keys(grid, "grid", "parameter names")
    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise InputError(f"grid.{name}", "expected a non-empty list of values", values)
        for k, value in enumerate(values):
            check_parameter(name, value, f"grid.{name}[{k}]")
    listed = [{}] if variants is None else variants
    if not isinstance(listed, list) or not listed:
        raise InputError("variants", "expected a non-empty list of parameter mappings", listed)
    for k, entry in enumerate(listed):
        if not isinstance(entry, dict):
            raise InputError(f"variants[{k}]", "expected a mapping parameter -> value", entry)
        check_keys(entry, f"variants[{k}]", "parameter names")
        for name, value in entry.items():
            if name in grid:
                raise InputError(f"variants[{k}].{name}", "also swept by the grid", name)
            check_parameter(name, value, f"variants[{k}].{name}")
    names = list(grid)
    points = []
    for combination in itertools.product(*(grid[n] for n in names)):
        for entry in listed:
            points.append({**dict(zip(names, combination)), **entry})
    return points


def parse_study(data: Any, path: str | Path, allow_code: bool = False) -> Study:
    """Validate a study dict read from ``path`` (relative paths resolve against it).
    ``allow_code``: run ``FILE.py:NAME`` generators and heuristics in the study's folder."""
    path = Path(path).resolve()
    if not isinstance(data, dict):
        raise InputError(str(path), "a study must be a mapping at the top level")
    check_keys(data, "", "field names")
    unknown = sorted(set(data) - STUDY_KEYS)
    if unknown:
        raise InputError(unknown[0], "unknown study field (a study holds "
                         + ", ".join(sorted(STUDY_KEYS)) + ")")
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise InputError("name", "expected a non-empty name", name)
    if "base" not in data:
        raise InputError("base", "missing: the base scenario (a path, or a generator)")
    base = _parse_base(data["base"], path, allow_code)
    model = _relative(path, data["model"], "model") if data.get("model") is not None else None
    solver = data.get("solver", {})
    SolverOptions.parse(solver, "solver")  # validate now, before any variant runs
    heuristics = data.get("heuristics", [])
    if not isinstance(heuristics, list) or not all(isinstance(h, str) for h in heuristics):
        raise InputError("heuristics", "expected a list of heuristic names", heuristics)
    for k, heuristic in enumerate(heuristics):
        check_heuristic(heuristic, f"heuristics[{k}]", allow_code=allow_code,
                        folder=path.parent)
    metrics = data.get("metrics")
    if metrics is not None and (not isinstance(metrics, list)
                                or not all(isinstance(m, str) for m in metrics)):
        raise InputError("metrics", "expected a list of column names (or prefixes)", metrics)
    searches = data.get("searches", [])
    if not isinstance(searches, list):
        raise InputError("searches", "expected a list of searches", searches)
    parsed_searches = tuple(_parse_search(s, k) for k, s in enumerate(searches))
    if len({s.name for s in parsed_searches}) != len(parsed_searches):
        raise InputError("searches", "two searches share a name; name them apart")
    plot = data.get("plot", {})
    if not isinstance(plot, dict) or set(plot) - {"dimensions"}:
        raise InputError("plot", "expected {dimensions: [names]}", plot)
    dimensions = plot.get("dimensions")
    if dimensions is not None and (not isinstance(dimensions, list)
                                   or not all(isinstance(d, str) for d in dimensions)):
        raise InputError("plot.dimensions", "expected a list of dimension names", dimensions)
    hint = data.get("hint")
    if hint is not None and hint not in HINTS:
        raise InputError("hint", "expected one of " + ", ".join(HINTS), hint)
    shortcuts = data.get("shortcuts", False)
    if not is_flag(shortcuts) and shortcuts != "only":
        raise InputError("shortcuts", "expected true, false or only", shortcuts)
    shortcuts = shortcuts if shortcuts == "only" else bool(shortcuts)
    points = _points(data.get("grid"), data.get("variants"))
    for search in parsed_searches:
        for point in points:
            if search.parameter in point:
                raise InputError(f"searches.{search.name}", "its parameter is also swept "
                                 "by the grid or variants", search.parameter)
    fingerprint = hashlib.sha256(json.dumps(
        {"base": {k: os.path.relpath(v, path.parent) if isinstance(v, Path) else v
                  for k, v in base.items() if k != "generator"},
         "generator": base.get("generator", "").rpartition(":")[2],
         "base_content": _content(base), "model": _file_digest(model),
         "solver": solver, "heuristics": heuristics, "hint": hint,
         **({"shortcuts": shortcuts} if shortcuts else {}),
         **_code_content(heuristics, path.parent)},
        sort_keys=True, default=str).encode()).hexdigest()[:16]
    return Study(path, name, base, model, dict(solver), points, tuple(heuristics),
                 tuple(metrics) if metrics is not None else None, parsed_searches, fingerprint,
                 hint, copy.deepcopy(data), tuple(dimensions) if dimensions else None,
                 shortcuts, allow_code)


def _file_digest(path: Path | None) -> str | None:
    return None if path is None else hashlib.sha256(path.read_bytes()).hexdigest()


def _content(base: dict[str, Any]) -> str | None:
    """A base file's content (or a generator file's) is part of every variant's key: edit
    it and its variants rerun. Paths are not: the key survives a move to another machine."""
    if "scenario" in base:
        return _file_digest(base["scenario"])
    reference = base["generator"]
    module = reference.rpartition(":")[0]
    if module.endswith(".py"):
        return _file_digest(Path(module))
    if reference in GENERATORS:  # the module it lives in, as when it was named by module
        return GENERATORS[reference].__module__
    entry = plugin(GENERATOR_GROUP, reference)
    return entry.value.partition(":")[0] if entry is not None else reference


def _code_content(heuristics: list[str], folder: Path) -> dict[str, Any]:
    """The content of the ``.py`` heuristics' files (none: nothing, so keys stay as they
    were): edit one and its variants rerun."""
    digests = {}
    for name in heuristics:
        code = code_file(name, "heuristics", allow_code=True, folder=folder)
        if code is not None:
            digests[name] = _file_digest(code.path)
    return {"heuristic_content": digests} if digests else {}


def load_study(path: str | Path, allow_code: bool = False) -> Study:
    """Read and validate a study file (``allow_code``: see :func:`parse_study`)."""
    return parse_study(read_data_file(path), path, allow_code)
