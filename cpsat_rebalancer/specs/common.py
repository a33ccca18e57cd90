"""Pieces every spec shares: field reading, scopes, dimensions, Filter, Limit, the registry.

A spec module defines a frozen dataclass registered under its Thrift union arm name and
implements the contract of :class:`Spec`: parse (``from_dict``), evaluate (numpy, for the
evaluator) and compile (CP-SAT, through the builder). Nothing here imports CP-SAT.
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..errors import InputError, did_you_mean
from ..fields import Fields, check_number
from ..primitives import MoveBudget, Restrictions
from ..problem import OUT_OF_SCOPE, Problem, Scope

if TYPE_CHECKING:
    from ..context import EvalContext, InfoChanges, MoveBatch
    from ..cpsat.builder import CpBuilder
    from ..cpsat.forms import Info


REGISTRY: dict[str, type[Spec]] = {}


def register(cls: type[Spec]) -> type[Spec]:
    """Class decorator: make a spec type known under its Thrift arm name."""
    REGISTRY[cls.arm] = cls
    return cls


@dataclass(frozen=True)
class GoalForm:
    """What a goal compiles to: its scalar value (a cpsat.linear.Lin)."""

    value: Any


class Spec:
    """Base of every spec type; see the module docstring for the contract."""

    arm: ClassVar[str]
    goal_allowed: ClassVar[bool] = True
    constraint_allowed: ClassVar[bool] = True
    # policy args ignored (docs/semantics.md#constraint-policies)
    single_parameter: ClassVar[bool] = False
    # the fields whose values are Thrift enums, by the enum's name (the wheel takes them as
    # integers; scenario files take either)
    enum_fields: ClassVar[dict[str, str]] = {}
    counts_moves: ClassVar[bool] = False  # a positive weight minimizes the objects moved
    # one of Rebalancer's own arms (False: this project's, which the wheel cannot evaluate)
    in_rebalancer: ClassVar[bool] = True
    nonnegative: ClassVar[bool] = True  # the goal value is never below 0
    # its restrictions hold under every policy (a SOFT constraint usually only prices them)
    restricts_when_soft: ClassVar[bool] = False
    name: str

    def lowest(self) -> float:
        """A value the goal never goes below, whatever the assignment (``Model.floors``:
        an answer there is optimal). 0 for a goal that is never negative; -inf where no
        lower value is known."""
        return 0.0 if self.nonnegative else -math.inf

    @classmethod
    def enum(cls, fields: Fields, key: str, default: str) -> str:
        """The enum-valued field ``key``, by name (see ``enum_fields``)."""
        return fields.enum(key, cls.enum_fields[key], default)

    @classmethod
    def wheel_evaluates_as_mip(cls, body: dict) -> bool:
        """Whether the wheel must evaluate this spec (``body`` in its wire shape, enums as
        integers) in its optimal solver's flavour to get the value the evaluator gives:
        where its local search and optimal solver value the spec differently."""
        return False

    @classmethod
    def wire_moves_in_flight(cls, body: dict) -> list[tuple[str, str]]:
        """(object, container) names of the moves already in flight that ``body`` (in its
        wire shape) declares; see ``moves_in_flight``."""
        return []

    @classmethod
    def from_dict(cls, data: Any, path: str, problem: Problem, *, as_goal: bool) -> Spec:
        raise NotImplementedError

    # -- evaluation (numpy) --
    # whether evaluate, infos, penalties and leximin_values take a ``context.MoveBatch``:
    # utilizations with leading candidate axes, values per candidate
    batched: ClassVar[bool] = False

    def evaluate(self, ctx: EvalContext) -> float:
        """The goal value g on Rebalancer's scale (unweighted)."""
        raise NotImplementedError

    def infos(self, ctx: EvalContext) -> np.ndarray:
        """Constraint expressions e_k (each meaning e_k <= 0)."""
        raise NotImplementedError

    def info_changes(self, batch: MoveBatch) -> InfoChanges | None:
        """The expressions under ``batch`` as the few each candidate changes, where the
        spec finds them so (and has no ``penalties``); None: ``infos`` prices the batch."""
        return None

    def penalties(self, ctx: EvalContext) -> np.ndarray | None:
        """Extra penalties P_k of the constraint expressions (docs/semantics.md#constraint-
        policies): a soft term adds invalidCost·P_k for each of its broken expressions.
        None when the spec has none (almost every spec)."""
        return None

    def compile_penalties(self, builder: CpBuilder, infos: list[Info]) -> list | None:
        """step(e_k)·P_k as exact forms (Lin) for the compiled ``infos``, in their order."""
        return None

    def suggested_containers(self, problem: Problem) -> dict[int, np.ndarray]:
        """Per object this spec rewards somewhere, the containers where it does: a local
        search tries them first for that object (a reward far from the least loaded
        containers would otherwise come last)."""
        return {}

    def departures(self, ctx: EvalContext) -> list[tuple[np.ndarray, np.ndarray]]:
        """Sets of objects whose leaving together lowers this spec's value at ``ctx``'s
        assignment where each single move out leaves it flat or costs (a container's last
        object, a group's last object in an item): per set, the objects and the containers
        they leave. A local search tries each as one step. Empty for most specs."""
        return []

    def budget(self, ctx: EvalContext) -> tuple[float | np.ndarray, float] | None:
        """As a constraint: the amount of a budget that moves use up (per candidate under a
        ``MoveBatch``) and the most it may reach unbroken, where moves spend one (a
        movement allowance, say); a local search then spends it where it buys the most,
        not on the largest steps first. None where no move uses a budget."""
        return None

    def guide(self, ctx: EvalContext) -> float | np.ndarray | None:
        """A continuous measure that falls as the value nears its next step down, where the
        value is flat for most moves (per candidate under a ``MoveBatch``): a local search
        takes it into account between moves of equal tuple. It is never a value, only a
        direction. None when the spec needs none (almost every spec)."""
        return None

    def leximin_values(self, ctx: EvalContext) -> np.ndarray | None:
        """The vector whose descending sort orders this goal leximin, if it has that order
        (per candidate, items last, under a ``MoveBatch``)."""
        return None

    # -- compilation (CP-SAT through the builder) --
    def compile_goal(self, builder: CpBuilder) -> GoalForm:
        raise NotImplementedError

    def compile_infos(self, builder: CpBuilder) -> list[Info]:
        raise NotImplementedError

    def compile_leximin(self, builder: CpBuilder) -> list:
        """For a goal with a leximin order: the forms (Lin) whose sorted vector is minimized,
        used instead of compile_goal when the goal is alone in its bucket."""
        raise NotImplementedError

    # -- structure --
    def restrictions(self, problem: Problem) -> Restrictions:
        return Restrictions()

    def moves_in_flight(self) -> list[tuple[int, int]]:
        """(object, destination) moves already under way: the solve starts with them done,
        while every utilization definition counts from before them (``Problem.origin``)."""
        return []

    def dimensions(self) -> frozenset[str]:
        """The object dimensions this spec reads: objects that differ only elsewhere are
        alike to it. A spec reads at most one, held in its ``dimension`` field."""
        dimension = getattr(self, "dimension", None)
        return frozenset() if dimension is None else frozenset({dimension})

    def object_roles(self) -> dict[int, Hashable]:
        """Objects this spec names individually, with the role each plays (for classes)."""
        return {}

    def container_roles(self, problem: Problem) -> list[Hashable] | None:
        """A role per container, equal for containers whose contents this spec lets swap
        without changing its value or its constraint expressions; None when the spec cannot
        say, which turns container symmetry off for the whole model."""
        return None

    def reads_initial(self) -> bool:
        """Whether the value depends on the initial assignment (movement, DURING, ...); then
        only containers that start empty are interchangeable."""
        return True

    def info_labels(self, problem: Problem) -> list[str] | None:
        """What each constraint expression is about (scope item, container), in the order of
        ``infos``, for naming them when constraints conflict; None when not meaningful."""
        return None

    @property
    def linear_in_assignment(self) -> bool:
        """Whether the goal value is linear in the assignment (no excess, step or power), so
        that a negative weight, which maximizes it, is still modelled exactly."""
        return False

    def reads_groups(self) -> bool:
        """Whether the value depends on the partition groups objects are in (not only on
        their dimensions): such a spec tells identical objects of different groups apart.
        The coarse relaxation (solve/coarse.py) leaves these specs out, so every spec that
        reads a partition must say so (tests/test_coarse.py checks the registry)."""
        return False

    def move_budgets(self, problem: Problem) -> list[MoveBudget]:
        """Hard limits this spec (as a HARD constraint) puts on how much of a set of objects
        may move, stated apart from its groups: the coarse relaxation keeps them when it
        leaves the spec out. Only a spec whose rule is exactly such budgets returns any."""
        return []

    def prefers_staying(self) -> bool:
        """True when this spec never gains from fewer objects staying where they were (it
        reads only AFTER, or its value only grows as STAYED shrinks). Identical objects from
        different containers may then share one class: swapping them never helps."""
        return True


def resolve_scope(problem: Problem, name: str, path: str) -> Scope:
    """The named scope; empty means Rebalancer's built-in container scope."""
    if not name:
        return problem.container_scope
    scope = problem.scopes.get(name)
    if scope is None:
        known = ", ".join(sorted(problem.scopes))
        raise InputError(path, f"unknown scope (known: {known})"
                         + did_you_mean(name, problem.scopes), name)
    return scope


def resolve_dimension(problem: Problem, name: str, path: str, default: str | None = None,
                      metrics: tuple[str, ...] = (), *, vector: bool = False) -> str:
    """An object dimension name; ``default`` (usually the count dimension) when empty.
    ``metrics`` are the utilization definitions the spec reads: a dynamic dimension supports
    AFTER and INITIAL only (what "stayed" weighs is ambiguous when the size depends on where
    the object is), and specs that do not list theirs do not accept it at all. A vector
    dimension is accepted only where ``vector`` says the spec reads its loads through the
    utilization definitions alone (docs/semantics.md#vector-dimensions)."""
    if not name:
        if default is None:
            raise InputError(path, "a dimension is required")
        return default
    if name in problem.vector_dims and not vector:
        raise InputError(path, "vector dimension: this spec (or this option of it) does not "
                         "take one (docs/semantics.md#vector-dimensions lists those that do)",
                         name)
    if name in problem.dynamic_dims:
        unsupported = sorted(set(metrics or ("STAYED",)) - {"AFTER", "INITIAL"})
        if unsupported:
            raise InputError(path, "dynamic dimension: this spec reads utilization "
                             f"{'/'.join(unsupported)}, but dynamic dimensions support AFTER "
                             "only", name)
        return name
    if not problem.has_dimension(name):
        known = ", ".join(problem.dimension_names)
        raise InputError(path, f"unknown dimension (known: {known})"
                         + did_you_mean(name, problem.dimension_names), name)
    return name


def resolve_items(scope: Scope, names: list[str], path: str) -> list[int]:
    """Item indices for names of ``scope``; an unknown name is an error."""
    indices = []
    for k, name in enumerate(names):
        index = scope.item_index.get(name)
        if index is None:
            raise InputError(f"{path}[{k}]", f"unknown item of scope '{scope.name}'", name)
        indices.append(index)
    return indices


def resolve_objects(problem: Problem, names: list[str], path: str) -> list[int]:
    indices = []
    for k, name in enumerate(names):
        index = problem.object_index.get(name)
        if index is None:
            raise InputError(f"{path}[{k}]", "unknown object", name)
        indices.append(index)
    return indices


def parse_filter(data: Any, path: str, scope: Scope) -> np.ndarray:
    """Mask of the items a Filter keeps: whitelist exactly, or all but the blacklist."""
    mask = np.ones(len(scope.items), dtype=bool)
    if data is None:
        return mask
    fields = Fields(data, path)
    white = fields.raw("itemsWhitelist")
    black = fields.raw("itemsBlacklist")
    kind = fields.enum("type", "FilterType", "SCOPE_ITEM")
    fields.done("Filter")
    if kind != "SCOPE_ITEM":
        raise InputError(fields.at("type"), "this spec takes SCOPE_ITEM filters only, as in "
                         "Rebalancer, which rejects a GROUP filter here", kind)
    if white is not None and black is not None:
        raise InputError(path, "both itemsWhitelist and itemsBlacklist are set; give one")
    for key, keep in (("itemsWhitelist", True), ("itemsBlacklist", False)):
        if fields.raw(key) is not None:
            mask[:] = not keep
            mask[resolve_items(scope, fields.names(key), fields.at(key))] = keep
    return mask


@dataclass(frozen=True)
class Limit:
    """Rebalancer's Limit, resolved per scope item (item-only specs: per-item, else global)."""

    kind: str  # ABSOLUTE or RELATIVE
    per_item: np.ndarray  # limit value per item, inf where unbounded

    @classmethod
    def parse(cls, data: Any, path: str, scope: Scope, default_kind: str = "RELATIVE",
              default_global: float = 1.0) -> Limit:
        fields = Fields(data if data is not None else {}, path)
        kind = fields.enum("type", "LimitType", default_kind)
        global_limit = fields.number("globalLimit", default_global)
        items = fields.mapping("scopeItemLimits")
        unbounded = fields.flag("isDefaultLimitUnbounded", False)
        for key in ("groupLimits", "scopeItemToGroupLimits"):
            if fields.mapping(key):
                raise InputError(fields.at(key), "group limits have no effect on this spec")
        fields.done("Limit")
        per_item = np.full(len(scope.items), math.inf if unbounded else global_limit)
        for name, value in items.items():
            index = scope.item_index.get(name)
            if index is None:
                raise InputError(f"{fields.at('scopeItemLimits')}.{name}",
                                 f"limit for an unknown item of scope '{scope.name}'", name)
            per_item[index] = check_number(value, f"{fields.at('scopeItemLimits')}.{name}")
        return cls(kind, per_item)


def positions_among(scope: Scope, items: np.ndarray) -> np.ndarray:
    """Per item of ``scope``, its position in ``items`` (-1: not there), for
    ``touched_among``."""
    position = np.full(len(scope.items), -1, dtype=np.int64)
    position[items] = np.arange(len(items))
    return position


def touched_among(ctx: EvalContext, scope: Scope, dim: str, positions: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """``MoveBatch.touched_items`` among a spec's own items (``positions``, from
    ``positions_among``): per (candidate, own item) pair a candidate's moves change, the
    candidate, the item's position among the spec's, and its AFTER utilization in the base
    and in the candidate. None where ``ctx`` is no batch or the dimension a vector."""
    touched = ctx.touched_items(scope, dim)
    if touched is None:
        return None
    candidate, item, before, after = touched
    position = positions[item]
    kept = position >= 0
    return candidate[kept], position[kept], before[kept], after[kept]


def roles_by_item(scope: Scope, item_roles: dict[int, Hashable]) -> list[Hashable]:
    """Container roles from the roles of their items (items not listed and containers out of
    the scope share a role of their own)."""
    return [("out",) if i == OUT_OF_SCOPE else item_roles.get(int(i), ("unlisted",))
            for i in scope.container_item]


def spec_name(fields: Fields, arm: str) -> str:
    return fields.text("name", "") or arm


def resolve_partition(problem: Problem, name: str, path: str) -> dict[str, np.ndarray]:
    """The named partition (group name -> object indices); a partition is required."""
    if name not in problem.partitions:
        known = ", ".join(sorted(problem.partitions)) or "none defined"
        raise InputError(path, f"unknown partition (known: {known})"
                         + did_you_mean(name, problem.partitions), name)
    return problem.partitions[name]


@dataclass(frozen=True)
class GroupLimit:
    """Rebalancer's Limit for group specs (LimitWrapper with a partition): per (item, group)
    ``scopeItemToGroupLimits`` -> ``scopeItemLimits`` -> ``groupLimits`` -> global."""

    kind: str  # ABSOLUTE or RELATIVE
    global_limit: float  # inf when isDefaultLimitUnbounded
    items: dict[int, float]
    groups: dict[str, float]
    item_groups: dict[int, dict[str, float]]

    @classmethod
    def parse(cls, data: Any, path: str, scope: Scope, groups: dict[str, np.ndarray],
              default_kind: str, default_global: float = 1.0) -> GroupLimit:
        fields = Fields(data if data is not None else {}, path)
        kind = fields.enum("type", "LimitType", default_kind)
        global_limit = fields.number("globalLimit", default_global)
        if fields.flag("isDefaultLimitUnbounded", False):
            global_limit = math.inf

        def item_of(name: str, where: str) -> int:
            index = scope.item_index.get(name)
            if index is None:
                raise InputError(where, f"limit for an unknown item of scope '{scope.name}'", name)
            return index

        def group_limits(mapping: dict, where: str) -> dict[str, float]:
            for group in mapping:
                if group not in groups:
                    raise InputError(f"{where}.{group}", "limit for an unknown group", group)
            return {g: check_number(v, f"{where}.{g}") for g, v in mapping.items()}

        items = {item_of(n, f"{fields.at('scopeItemLimits')}.{n}"):
                 check_number(v, f"{fields.at('scopeItemLimits')}.{n}")
                 for n, v in fields.mapping("scopeItemLimits").items()}
        by_group = group_limits(fields.mapping("groupLimits"), fields.at("groupLimits"))
        nested = {}
        for name, mapping in fields.mapping("scopeItemToGroupLimits").items():
            where = f"{fields.at('scopeItemToGroupLimits')}.{name}"
            if not isinstance(mapping, dict):
                raise InputError(where, "expected a mapping group -> limit", mapping)
            nested[item_of(name, where)] = group_limits(mapping, where)
        fields.done("Limit")
        return cls(kind, global_limit, items, by_group, nested)

    def of_group(self, group: str) -> float:
        return self.groups.get(group, self.global_limit)

    def resolve(self, item: int, group: str) -> float:
        inner = self.item_groups.get(item, {})
        if group in inner:
            return inner[group]
        if item in self.items:
            return self.items[item]
        return self.of_group(group)

    def compact(self, item: int, group: str) -> float:
        """The limit Rebalancer's compact GroupCount form uses: a per-item value equal to the
        global limit is not an override there, so the group's own limit applies instead."""
        value = self.resolve(item, group)
        return value if value != self.global_limit else self.of_group(group)


def group_of(problem: Problem, groups: list[np.ndarray], path: str = "") -> np.ndarray:
    """Index of each object's group among ``groups`` (-1: in none of them), for a spec that
    needs each object in one group at most: overlapping groups are an InputError at ``path``
    (Rebalancer's group specs count an object in each of its groups, as
    ``EvalContext.group_utils`` does; docs/semantics.md#partitions)."""
    result = np.full(problem.num_objects, -1, dtype=np.int64)
    for g, members in enumerate(groups):
        if (result[members] >= 0).any():
            raise InputError(path, "its groups overlap (an object in two groups); this spec "
                             "needs each object in one group at most")
        result[members] = g
    return result


def parse_group_filter(data: Any, path: str, groups: list[str]) -> np.ndarray:
    """Mask of the partition groups a Filter of type GROUP keeps (whitelist exactly, or all
    but the blacklist); the type defaults to GROUP here."""
    mask = np.ones(len(groups), dtype=bool)
    if data is None:
        return mask
    fields = Fields(data, path)
    kind = fields.enum("type", "FilterType", "GROUP")
    white, black = fields.raw("itemsWhitelist"), fields.raw("itemsBlacklist")
    fields.done("Filter")
    if kind != "GROUP":
        raise InputError(fields.at("type"), "a group filter must have type GROUP", kind)
    if white is not None and black is not None:
        raise InputError(path, "both itemsWhitelist and itemsBlacklist are set; give one")
    index = {g: k for k, g in enumerate(groups)}
    for key, keep in (("itemsWhitelist", True), ("itemsBlacklist", False)):
        if fields.raw(key) is not None:
            mask[:] = not keep
            for k, name in enumerate(fields.names(key)):
                if name not in index:
                    raise InputError(f"{fields.at(key)}[{k}]", "unknown group", name)
                mask[index[name]] = keep
    return mask


def leaving(scope: Scope, objects: np.ndarray, cells: np.ndarray, items: np.ndarray
            ) -> list[tuple[np.ndarray, np.ndarray]]:
    """``objects`` split by ``cells`` (aligned; one departure per distinct cell), each set
    leaving the containers of its item of ``scope`` (``items``, aligned)."""
    order = np.argsort(cells, kind="stable")
    objects, cells, items = objects[order], cells[order], items[order]
    if not len(cells):
        return []
    starts = np.flatnonzero(np.r_[True, cells[1:] != cells[:-1]])
    containers = scope.members()
    return [(objects[start:end], containers[items[start]])
            for start, end in zip(starts, [*starts[1:], len(cells)])]
