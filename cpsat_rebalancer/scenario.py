"""Scenario files and dicts: parse and validate into a :class:`Problem` and a :class:`Model`.

The scenario dict is the one wire format: the Python API (:mod:`api`) records its calls into
it, the CLI reads it from JSON or YAML. Every mistake raises :class:`InputError` with a path
into the input, before any model is built.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .cpsat_parameters import check_cpsat_parameters
from .enums import parse_enum
from .errors import InputError, did_you_mean
from .fields import (
    Fields,
    check_amount,
    check_integer,
    check_keys,
    check_list,
    check_names,
    check_number,
    is_flag,
    is_integer,
    optional_mapping,
)
from .object_dimensions import dynamic_dimensions, vector_dimensions
from .primitives import MoveBudget, Restrictions
from .problem import OUT_OF_SCOPE, Problem, Scope
from .solver_specs import ObjectivePlan, parse_plan
from .specs.budget_stays import BudgetStaysSpec
from .specs.common import REGISTRY, Spec
from .tables import is_fleet, read_fleet

TOP_LEVEL_KEYS = {
    "name", "description", "objectName", "containerName", "objects", "containers",
    "assignment", "objectDimensions", "objectDimensionDefaults", "containerDimensions",
    "containerDimensionDefaults", "scopes", "scopeDimensions", "partitions",
    "dynamicObjectDimensions", "objectDimensionVectors", "goals",
    "constraints", "constraintPolicy", "defaultConstraintParams", "solver",
}
# what a model file holds: it replaces these fields of a scenario (see load_data_with_model)
MODEL_KEYS = ("goals", "constraints", "constraintPolicy", "defaultConstraintParams")


@dataclass(frozen=True)
class GoalEntry:
    spec: Spec
    weight: float
    position: int
    path: str  # where the entry is in the input, for errors: goals[k] counts boundaries too


@dataclass(frozen=True)
class ConstraintEntry:
    spec: Spec
    policy: str  # DEFAULT, HARD or SOFT
    invalid_cost: float
    invalid_state: float
    position: int  # tuple position of the soft term


@dataclass(frozen=True)
class Model:
    """The goals and constraints of a scenario, in the order given, and the moves its
    constraints forbid outright (read once, when the model is parsed)."""

    goals: list[GoalEntry]
    constraints: list[ConstraintEntry]
    # fixed objects and non-accepting containers of each constraint that is not SOFT: a SOFT
    # constraint only prices the move (Rebalancer's optimal solver makes such moves; under
    # DEFAULT and HARD the hard parts forbid them anyway)
    restrictions: list[tuple[Spec, Restrictions]]

    @property
    def fixed_objects(self) -> frozenset[int]:
        return frozenset().union(*(r.fixed_objects for _, r in self.restrictions))

    def named_objects(self) -> set[int]:
        """Objects some spec names (an affinity, a pin, ...): no two of them are alike."""
        named: set[int] = set()
        for entry in [*self.goals, *self.constraints]:
            named |= set(entry.spec.object_roles())
        return named

    @property
    def held(self) -> dict[int, int]:
        """Objects held in a container other than their own (see Restrictions.held)."""
        return {o: c for _, r in self.restrictions for o, c in r.held.items()}

    @property
    def non_accepting(self) -> frozenset[int]:
        return frozenset().union(*(r.non_accepting for _, r in self.restrictions))

    def dimensions(self) -> frozenset[str]:
        """The object dimensions some goal or constraint reads (the others cannot tell
        objects apart)."""
        return frozenset().union(*(e.spec.dimensions() for e in [*self.goals,
                                                                   *self.constraints]))

    def floors(self) -> dict[int, float]:
        """Per tuple position with a term, a value no assignment goes below there: the sum
        of its goals' lowest values (``Spec.lowest``) at their weights, and 0 for a
        constraint's costs of a violation; -inf where a term has no lower value known (a
        negative weight, a negative cost)."""
        floors: dict[int, float] = {}
        for position, lowest in [
                *((g.position, 0.0 if g.weight == 0 else g.weight * g.spec.lowest()
                   if g.weight > 0 else -math.inf) for g in self.goals),
                *((c.position, 0.0 if min(c.invalid_cost, c.invalid_state) >= 0
                   else -math.inf) for c in self.constraints)]:
            floors[position] = floors.get(position, 0.0) + lowest
        return floors

    def with_budget_stays(self, budgets: list[MoveBudget], kind: np.ndarray) -> Model | None:
        """This model with ``budgets`` kept as a HARD constraint over the object classes
        ``kind`` (specs/budget_stays.py: some choice of alike objects that stay keeps
        them); None where they need no object to stay, or weigh members unequally."""
        spec = BudgetStaysSpec.of_budgets("move budgets of the specs left out", budgets, kind)
        if spec is None or not len(spec.needs):
            return None
        return Model(self.goals, [*self.constraints, ConstraintEntry(spec, "HARD", 0.0, 0.0, 0)],
                     self.restrictions)

    def check_solvable(self) -> None:
        """What the evaluator can score but the solver cannot model exactly, rejected before
        any model is built: a negative weight maximizes its goal, exact only when linear."""
        for entry in self.goals:
            if entry.weight < 0 and not entry.spec.linear_in_assignment:
                raise InputError(f"{entry.path}.weight", f"a negative weight maximizes "
                                 f"{entry.spec.arm}, which is modelled exactly only when "
                                 "minimized (use a positive weight, or a goal linear in the "
                                 "assignment)", entry.weight)

    def leximin_positions(self, soft_positions: set[int]) -> dict[int, int]:
        """Positions holding exactly one goal with a leximin order (IDEAL) and nothing else."""
        by_position: dict[int, list[int]] = {}
        for index, entry in enumerate(self.goals):
            by_position.setdefault(entry.position, []).append(index)
        return {
            position: members[0]
            for position, members in by_position.items()
            if len(members) == 1 and position not in soft_positions
            and self.goals[members[0]].weight > 0
            and getattr(self.goals[members[0]].spec, "has_leximin", False)
        }


@dataclass(frozen=True)
class SolverOptions:
    time_limit: float | None = None  # seconds for the whole chain of solves
    workers: int = 2
    seed: int = 0
    deterministic_time: float | None = None  # CP-SAT deterministic budget, for repeatability
    log: bool = False
    # further CP-SAT parameters {name: value}, checked (enums by name); see check_cpsat_parameters
    cpsat_parameters: dict[str, Any] = field(default_factory=dict)
    # which tuple positions to optimize and how (Rebalancer's multiObjSolveSettings)
    plan: ObjectivePlan = field(default_factory=ObjectivePlan)

    @classmethod
    def parse(cls, data: Any, path: str = "solver") -> SolverOptions:
        fields = Fields(data if data is not None else {}, path)
        time_limit = fields.number("timeLimit")
        workers = fields.raw("workers")
        seed = fields.raw("seed")
        deterministic = fields.number("deterministicTime")
        log = fields.flag("log")
        cpsat_parameters = fields.raw("cpsatParameters")
        plan = parse_plan(fields.raw("multiObjSolveSettings"), fields.at("multiObjSolveSettings"))
        fields.done("solver options")
        return replace(cls.checked(time_limit, workers, seed, deterministic, log, path,
                                   cpsat_parameters=cpsat_parameters), plan=plan)

    @classmethod
    def checked(cls, time_limit, workers, seed, deterministic=None, log=False,
                path: str = "solver", *, cpsat_parameters: Any = None) -> SolverOptions:
        if time_limit is not None:
            time_limit = check_number(time_limit, f"{path}.timeLimit")
            if time_limit <= 0:
                raise InputError(f"{path}.timeLimit", "must be positive", time_limit)
        workers = 2 if workers is None else workers
        if not is_integer(workers) or not 1 <= workers <= 256:
            raise InputError(f"{path}.workers", "expected an integer from 1 to 256", workers)
        workers = int(workers)
        seed = 0 if seed is None else seed
        if not is_integer(seed) or not 0 <= seed < 2**31:
            raise InputError(f"{path}.seed", "expected an integer from 0 to 2^31 - 1", seed)
        seed = int(seed)
        if deterministic is not None:
            deterministic = check_number(deterministic, f"{path}.deterministicTime")
            if deterministic <= 0:
                raise InputError(f"{path}.deterministicTime", "must be positive", deterministic)
        if not is_flag(log):
            raise InputError(f"{path}.log", "expected true or false", log)
        log = bool(log)
        parameters = check_cpsat_parameters(cpsat_parameters, f"{path}.cpsatParameters", workers)
        return cls(time_limit, workers, seed, deterministic, log, parameters)


@dataclass
class Scenario:
    problem: Problem
    model: Model
    options: SolverOptions


MAX_POSITION = 10_000  # results list every position up to the last one used


def _position(value: Any, path: str) -> int:
    value = check_integer(value, path, "a non-negative integer tuple position")
    if value < 0:
        raise InputError(path, "tuple positions must not be negative", value)
    if value > MAX_POSITION:
        raise InputError(path, f"tuple positions above {MAX_POSITION} are not supported", value)
    return value


def parse_problem(data: dict) -> Problem:
    """Objects, containers, dimensions, scopes and partitions of a scenario dict."""
    object_name = data.get("objectName", "object")
    container_name = data.get("containerName", "container")
    for key, value in (("objectName", object_name), ("containerName", container_name)):
        if not isinstance(value, str) or not value:
            raise InputError(key, "expected a non-empty name", value)

    assignment = optional_mapping(data.get("assignment"), "assignment", "container names")
    containers = list(assignment)
    container_index = {c: i for i, c in enumerate(containers)}
    listed: set[str] = set()
    for k, name in enumerate(check_names(data.get("containers", []), "containers")):
        if name in listed:
            raise InputError(f"containers[{k}]", "duplicate container", name)
        listed.add(name)
        if name not in container_index:  # an empty container not named in the assignment
            container_index[name] = len(containers)
            containers.append(name)
    objects: list[str] = []
    object_index: dict[str, int] = {}
    initial_list: list[int] = []
    for cont, objs in assignment.items():
        for k, obj in enumerate(check_names(objs, f"assignment.{cont}")):
            if obj in object_index:
                raise InputError(f"assignment.{cont}[{k}]", "object listed twice "
                                 "(in two containers or twice in one)", obj)
            object_index[obj] = len(objects)
            objects.append(obj)
            initial_list.append(container_index[cont])
    if "objects" in data:
        seen = set()
        for k, name in enumerate(check_names(data["objects"], "objects")):
            if name in seen:
                raise InputError(f"objects[{k}]", "duplicate object", name)
            seen.add(name)
            if name not in object_index:
                raise InputError(f"objects[{k}]", "object without a container", name)
    initial = np.asarray(initial_list, dtype=np.int64)

    count_dim = f"{object_name}_count"
    dim_defaults = optional_mapping(data.get("objectDimensionDefaults"), "objectDimensionDefaults",
                            "dimension names")
    object_dims: dict[str, np.ndarray] = {count_dim: np.ones(len(objects))}
    for dim, values in optional_mapping(data.get("objectDimensions"), "objectDimensions",
                                "dimension names").items():
        path = f"objectDimensions.{dim}"
        if dim == count_dim:
            raise InputError(path, "this dimension is built in (1 per object)", dim)
        default = check_amount(dim_defaults.get(dim, 0.0), f"objectDimensionDefaults.{dim}")
        array = np.full(len(objects), default)
        for obj, value in optional_mapping(values, path, "object names").items():
            index = object_index.get(obj)
            if index is None:
                raise InputError(f"{path}.{obj}", "unknown object", obj)
            array[index] = check_amount(value, f"{path}.{obj}")
        object_dims[dim] = array
    vector_dims = vector_dimensions(data.get("objectDimensionVectors"), object_dims,
                                    dim_defaults, object_index)
    for dim in dim_defaults:
        if dim not in object_dims and dim not in vector_dims:
            raise InputError(f"objectDimensionDefaults.{dim}", "unknown dimension", dim)

    def capacities(values: Any, path: str, index: dict[str, int], default: float) -> np.ndarray:
        array = np.full(len(index), default)
        for item, value in optional_mapping(values, path, "scope item names").items():
            position = index.get(item)
            if position is None:
                raise InputError(f"{path}.{item}", "unknown scope item", item)
            array[position] = check_amount(value, f"{path}.{item}")
        return array

    dynamic_names = set(optional_mapping(data.get("dynamicObjectDimensions"),
                                 "dynamicObjectDimensions", "dimension names"))

    entry_names = {e for entries in vector_dims.values() for e in entries}
    user_dims = {*(set(object_dims) - entry_names), *dynamic_names, *vector_dims}

    def check_dim(dim: str, path: str) -> None:
        if dim not in user_dims:
            known = ", ".join(sorted(user_dims))
            raise InputError(path, f"unknown dimension (objects have: {known})"
                             + did_you_mean(dim, user_dims), dim)

    cont_defaults = optional_mapping(data.get("containerDimensionDefaults"),
                                     "containerDimensionDefaults", "dimension names")
    cont_caps = {}
    scope_dims = optional_mapping(data.get("scopeDimensions"), "scopeDimensions", "scope names")
    given = {dim: (values, f"containerDimensions.{dim}") for dim, values in optional_mapping(
        data.get("containerDimensions"), "containerDimensions", "dimension names").items()}
    # a scope dimension on the container scope is a container dimension (as in the wheel)
    for dim, values in optional_mapping(scope_dims.get(container_name),
                                f"scopeDimensions.{container_name}", "dimension names").items():
        path = f"scopeDimensions.{container_name}.{dim}"
        if dim in given:
            raise InputError(path, "dimension already defined on the container scope (in "
                             "containerDimensions)", dim)
        given[dim] = (values, path)
    for dim, (values, path) in given.items():
        check_dim(dim, path)
        default = check_amount(cont_defaults.get(dim, 1.0), f"containerDimensionDefaults.{dim}")
        cont_caps[dim] = capacities(values, path, container_index, default)
    for dim in cont_defaults:
        if dim not in cont_caps:
            raise InputError(f"containerDimensionDefaults.{dim}", "unknown dimension", dim)
    scopes = {container_name: Scope(container_name, containers, container_index,
                                    np.arange(len(containers)), cont_caps)}

    for name, mapping in optional_mapping(data.get("scopes"), "scopes", "scope names").items():
        path = f"scopes.{name}"
        if name == container_name:
            raise InputError(path, "the container scope is built in; use containerDimensions", name)
        items: list[str] = []
        item_index: dict[str, int] = {}
        container_item = np.full(len(containers), OUT_OF_SCOPE, dtype=np.int64)
        for cont, item in optional_mapping(mapping, path, "container names").items():
            if cont not in container_index:
                raise InputError(f"{path}.{cont}", "unknown container", cont)
            if not isinstance(item, str):
                raise InputError(f"{path}.{cont}", "expected a scope item name", item)
            if item not in item_index:
                item_index[item] = len(items)
                items.append(item)
            container_item[container_index[cont]] = item_index[item]
        caps = {}
        for dim, values in optional_mapping(scope_dims.get(name), f"scopeDimensions.{name}",
                                    "dimension names").items():
            check_dim(dim, f"scopeDimensions.{name}.{dim}")
            caps[dim] = capacities(values, f"scopeDimensions.{name}.{dim}", item_index, 1.0)
        scopes[name] = Scope(name, items, item_index, container_item, caps)
    for name in scope_dims:
        if name not in scopes:
            raise InputError(f"scopeDimensions.{name}", "unknown scope", name)

    partitions: dict[str, dict[str, np.ndarray]] = {}
    for name, groups in optional_mapping(data.get("partitions"), "partitions",
                                         "partition names").items():
        # groups may overlap, as in Rebalancer: an object counts in each of its groups
        # (docs/semantics.md#partitions)
        members: dict[str, np.ndarray] = {}
        for group, objs in optional_mapping(groups, f"partitions.{name}", "group names").items():
            path = f"partitions.{name}.{group}"
            indices: dict[int, None] = {}
            for k, obj in enumerate(check_names(objs, path)):
                index = object_index.get(obj)
                if index is None:
                    raise InputError(f"{path}[{k}]", "unknown object", obj)
                if index in indices:
                    raise InputError(f"{path}[{k}]", "object listed twice in this group", obj)
                indices[index] = None
            members[group] = np.fromiter(indices, dtype=np.int64, count=len(indices))
        partitions[name] = members

    dynamic_dims = dynamic_dimensions(data.get("dynamicObjectDimensions"), object_dims,
                                      object_index, scopes)
    for name in dynamic_dims:
        if name in vector_dims:
            raise InputError(f"dynamicObjectDimensions.{name}", "a vector dimension has this "
                             "name", name)
    return Problem(object_name, container_name, objects, object_index, containers,
                   container_index, initial, object_dims, scopes, partitions, dynamic_dims,
                   vector_dims=vector_dims)


def parse_spec(data: Any, path: str, problem: Problem, *, as_goal: bool) -> Spec:
    """A spec dict ``{"<arm>": {...}}`` into its registered spec type."""
    if not isinstance(data, dict) or len(data) != 1:
        raise InputError(path, 'expected exactly one spec, as {"<specName>": {...}}', data)
    arm, body = next(iter(data.items()))
    cls = REGISTRY.get(arm)
    if cls is None:
        known = ", ".join(sorted(REGISTRY))
        raise InputError(path, f"unknown spec (supported: {known})"
                         + did_you_mean(arm, REGISTRY), arm)
    role = "goal" if as_goal else "constraint"
    if not (cls.goal_allowed if as_goal else cls.constraint_allowed):
        raise InputError(f"{path}.{arm}", f"{arm} cannot be used as a {role}")
    return cls.from_dict(body, f"{path}.{arm}", problem, as_goal=as_goal)


def parse_model(data: dict, problem: Problem) -> Model:
    goals: list[GoalEntry] = []
    current = 0
    goal_list = check_list(data.get("goals", []), "goals")
    for k, entry in enumerate(goal_list):
        path = f"goals[{k}]"
        fields = Fields(entry, path)
        if fields.flag("boundary"):
            fields.done("goal boundary")
            current += 1
            continue
        raw_spec = fields.raw("spec")
        weight = fields.number("weight", 1.0)
        position = fields.raw("tuplePos")
        fields.done("goal entry")
        position = current if position is None else _position(position, f"{path}.tuplePos")
        spec = parse_spec(raw_spec, f"{path}.spec", problem, as_goal=True)
        goals.append(GoalEntry(spec, weight, position, path))

    policy = parse_enum("ConstraintPolicy", data.get("constraintPolicy", "DEFAULT"),
                        "constraintPolicy")
    defaults = Fields(optional_mapping(data.get("defaultConstraintParams"),
                                       "defaultConstraintParams", "field names"),
                      "defaultConstraintParams")
    default_cost = defaults.number("invalidCost", 100.0)
    default_state = defaults.number("invalidState", 10000.0)
    default_position = defaults.raw("tuplePosIfBroken")
    defaults.done("defaultConstraintParams")
    for key, value in (("invalidCost", default_cost), ("invalidState", default_state)):
        if value < 0:
            raise InputError(f"defaultConstraintParams.{key}", "must not be negative", value)
    default_position = 0 if default_position is None else _position(
        default_position, "defaultConstraintParams.tuplePosIfBroken")

    constraints = []
    constraint_list = check_list(data.get("constraints", []), "constraints")
    for k, entry in enumerate(constraint_list):
        path = f"constraints[{k}]"
        fields = Fields(entry, path)
        raw_spec = fields.raw("spec")
        own_policy = fields.raw("policy")
        cost = fields.number("invalidCost")
        state = fields.number("invalidState")
        position = fields.raw("tuplePosIfBroken")
        fields.done("constraint entry")
        spec = parse_spec(raw_spec, f"{path}.spec", problem, as_goal=False)
        for key, value in (("invalidCost", cost), ("invalidState", state)):
            if value is not None and value < 0:
                raise InputError(f"{path}.{key}", "must not be negative", value)
        if spec.single_parameter:  # Rebalancer ignores per-constraint arguments here
            own_policy = cost = state = position = None
        constraints.append(ConstraintEntry(
            spec,
            policy if own_policy is None else parse_enum("ConstraintPolicy", own_policy,
                                                         f"{path}.policy"),
            default_cost if cost is None else cost,
            default_state if state is None else state,
            default_position if position is None else _position(position,
                                                                 f"{path}.tuplePosIfBroken"),
        ))
    restrictions = [(c.spec, c.spec.restrictions(problem)) for c in constraints
                    if c.policy != "SOFT" or c.spec.restricts_when_soft]
    return Model(goals, constraints, restrictions)


def moves_in_flight(model: Model, problem: Problem) -> dict[int, int]:
    """Objects whose move some constraint says is already under way, with their destination
    (the first one named wins, as in Rebalancer); objects held where they are left out."""
    moves: dict[int, int] = {}
    for entry in model.constraints:
        for obj, container in entry.spec.moves_in_flight():
            moves.setdefault(obj, container)
    moving = {obj: c for obj, c in moves.items() if c != problem.initial[obj]}
    if moving and problem.dynamic_dims:
        path = next(f"constraints[{k}].spec.{e.spec.arm}" for k, e in enumerate(model.constraints)
                    if e.spec.moves_in_flight())
        raise InputError(path, "moves in flight with dynamic object dimensions are not "
                         "supported", sorted(problem.dynamic_dims))
    return moving


def parse_scenario(data: Any) -> Scenario:
    """Validate a scenario dict completely; raise InputError naming the first problem."""
    if not isinstance(data, dict):
        raise InputError("", "a scenario must be a mapping at the top level", type(data).__name__)
    check_keys(data, "", "field names")
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            raise InputError(str(key), "unknown scenario field"
                             + did_you_mean(key, TOP_LEVEL_KEYS), key)
    if "assignment" not in data:
        raise InputError("assignment", "missing: the initial assignment {container: [objects]}")
    for key in ("name", "description"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise InputError(key, "expected a string", data[key])
    problem = parse_problem(data)
    model = parse_model(data, problem)
    in_flight = moves_in_flight(model, problem)
    if in_flight:  # the solve starts with them done; specs are read against that start
        problem = problem.with_moves_in_flight(in_flight)
        model = parse_model(data, problem)
    options = SolverOptions.parse(data.get("solver"))
    return Scenario(problem, model, options)


class _DuplicateKey(ValueError):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict:
    """json object hook: a key given twice would silently lose one of its values."""
    result: dict = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


MAX_DEPTH = 100  # levels of nesting a data file may have (scenarios use fewer than ten)


def read_data_file(path: str | Path) -> Any:
    """Read JSON or YAML (by extension; JSON first otherwise) with line/column on errors;
    a key given twice in one mapping, nesting deeper than :data:`MAX_DEPTH` levels and a
    YAML alias that contains itself are errors."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(str(path), f"cannot read file: {exc}") from None
    try:
        data = _read_text(text, path)
    except RecursionError:  # the JSON and YAML readers recurse once per level
        raise InputError(str(path), f"nested too deeply (at most {MAX_DEPTH} levels)") from None
    if isinstance(data, dict | list):
        check_depth(data, str(path))
    return data


def _read_text(text: str, path: Path) -> Any:
    if path.suffix.lower() in (".yaml", ".yml"):
        return _read_yaml(text, path)
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs)
    except _DuplicateKey as exc:
        raise InputError(str(path), "a key appears twice in one mapping", exc.args[0]) from None
    except json.JSONDecodeError as exc:
        if path.suffix.lower() == ".json":
            raise InputError(f"{path}:{exc.lineno}:{exc.colno}",
                             f"invalid JSON: {exc.msg}") from None
        return _read_yaml(text, path)
    except ValueError:  # an integer of more digits than Python converts
        raise InputError(str(path), "invalid JSON: a number of too many digits") from None


def check_depth(data: Any, path: str = "") -> None:
    """Nesting of at most :data:`MAX_DEPTH` levels, and no container inside itself (YAML
    aliases can make both): every later step may then recurse through the data. Each
    container is visited once, however often aliases share it. The error names ``path``
    (a file) and the top-level field the nesting is under."""
    heights: dict[int, int] = {}
    open_ids: set[int] = set()
    stack: list[tuple[Any, bool, str]] = [(data, False, "")]

    def fail(problem: str, top: str) -> InputError:
        where = f"{path}: {top}" if path and top else path or top
        return InputError(where, problem)

    while stack:
        node, finished, top = stack.pop()
        key = id(node)
        children = list(node.values()) if isinstance(node, dict) else node
        if finished:
            open_ids.discard(key)
            heights[key] = 1 + max((heights.get(id(c), 0) for c in children
                                    if isinstance(c, dict | list)), default=0)
            if heights[key] > MAX_DEPTH:
                raise fail(f"nested too deeply (at most {MAX_DEPTH} levels)", top)
            continue
        if key in heights:
            continue
        if key in open_ids:
            raise fail("a mapping or list that contains itself"
                       + (" (a YAML alias?)" if path else ""), top)
        open_ids.add(key)
        if len(open_ids) > MAX_DEPTH:
            raise fail(f"nested too deeply (at most {MAX_DEPTH} levels)", top)
        stack.append((node, True, top))
        if node is data and isinstance(node, dict):
            stack.extend((c, False, str(k)) for k, c in node.items() if isinstance(c, dict | list))
        else:
            stack.extend((c, False, top) for c in children if isinstance(c, dict | list))


def _read_yaml(text: str, path: Path) -> Any:
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                try:
                    repeated = key in seen
                except TypeError:  # a list or mapping as a key: let SafeLoader reject it
                    break
                if repeated:
                    mark = key_node.start_mark
                    raise InputError(f"{path}:{mark.line + 1}:{mark.column + 1}",
                                     "a key appears twice in one mapping", key)
                seen.add(key)
            return super().construct_mapping(node, deep)

    try:
        return yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)
    except InputError:
        raise
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(where, f"invalid YAML: {problem}") from None
    except ValueError:  # an integer of more digits than Python converts
        raise InputError(str(path), "invalid YAML: a number of too many digits") from None


def load_scenario(path: str | Path) -> Scenario:
    return parse_scenario(read_data_file(path))


def load_data_with_model(path: str | Path, model: str | Path | None) -> dict[str, Any]:
    """The scenario dict of ``path``, with goals and constraints taken from ``model`` when
    given (its :data:`MODEL_KEYS` replace the scenario's). A folder is a CSV fleet
    (:mod:`tables`), whose goals and constraints come from ``model``."""
    if is_fleet(path):
        if not model:
            raise InputError(str(path), "a CSV fleet holds no goals or constraints: name a "
                             "model file (--model)")
        data = read_fleet(path)
    else:
        data = read_data_file(path)
    if not isinstance(data, dict):
        raise InputError(str(path), "a scenario must be a mapping at the top level")
    if model:
        model_data = read_data_file(model)
        if not isinstance(model_data, dict):
            raise InputError(str(model), "a model must be a mapping at the top level")
        check_keys(model_data, str(model), "field names")
        unknown = sorted(set(model_data) - set(MODEL_KEYS) - {"name", "description"})
        if unknown:
            raise InputError(f"{model}: {unknown[0]}", "unknown model field (a model holds "
                             + ", ".join(MODEL_KEYS) + ")" + did_you_mean(unknown[0], MODEL_KEYS))
        data = {k: v for k, v in data.items() if k not in MODEL_KEYS}
        data.update({k: v for k, v in model_data.items() if k in MODEL_KEYS})
    return data
