"""Meta's ``rebalancer`` wheel as a reference oracle, run in a separate interpreter.

Why a subprocess: the ``rebalancer`` 1.0.4 wheel needs Python 3.12 while this package runs on
Python 3.11, and a crash in its C++ code must not take our process down. Each call of
:func:`evaluate_with_wheel` sends one JSON request to ``wheel_runner.py`` in the *peer*
interpreter and reads one JSON response; the wheel is never imported here.

How values are measured (see docs/semantics.md#evaluating-with-the-wheel):

* Initial assignment: the user's scenario exactly as given (goals, boundaries, constraints,
  policies), plus a weight-1 copy of every goal at its own tuple position, evaluated by the
  wheel's local search with ``stopAfterMoves = 0``; numbers come from
  ``initialGlobalObjective`` / ``initialConstraint``.
* Final assignment: the wheel starts from the initial assignment; objects that stay are
  pinned (AvoidMovingSpec), every mover gets a DEFAULT-policy AvoidAssignmentsSpec listing
  every container but its target (soft term at tuple position 0), so single-move local
  search performs exactly the wanted moves. The user's goals and constraints sit one tuple
  position higher, constraints as SOFT (so they never block a move). The run fails loudly
  (:class:`PeerError`) unless the wheel ends exactly at the requested final assignment.
* Goals whose value depends on the MIP ("discrete") flavour (:func:`needs_mip_flavour`) are
  evaluated with ``optimalSolverSpec`` (HiGHS, ``skipMipSolveForTesting``) with the assignment
  to evaluate set as the wheel's *initial* assignment (their value depends on that assignment
  only), read from ``initialGlobalObjective``.

Limitations of the wheel, and the workarounds used:

* Local search never proposes a move of an object fixed by an AvoidMovingSpec, nor into a
  container made non-accepting by a NonAcceptingSpec (single-container items only; items
  of several containers keep accepting) or a ToFreeSpec *constraint*, whatever the policy
  (the MIP solver refuses them too: "infeasible"; a ToFreeSpec *goal* does not block).
  When the final assignment needs such a move, that constraint is left out of the forcing
  run and measured through an exact substitute with the same violation by definition
  (method ``"substitute:..."``): AvoidMovingSpec and NonAcceptingSpec -> one
  AvoidAssignmentsSpec; ToFreeSpec -> two CapacitySpec goals (AFTER and NEW, absolute
  limit 0) on a private scope of its containers with capacity 1. ``final.positions`` is
  then omitted (a substitute's soft term is not the original's).
* DEFAULT/HARD constraints would reject forced moves that break them (even temporarily,
  as moves are made one at a time), hence SOFT in the forcing run; see ``final.positions``.
* Weight-0 goals report 0 in the wheel, so goal values always come from weight-1 copies.
* The wheel silently ignores unknown spec fields (e.g. ``metric`` for ``balanceMetric``).
* Balance LEGACY, ColocateGroups and MinimizeContainers also have a MIP flavour; ToFree
  MINIMIZE_OCCUPIED_CONTAINERS, Balance LEGACY, ColocateGroups and MinimizeContainers goals
  are routed to it here (``needs_mip_flavour``). Balance LEGACY reads the initial total,
  so its final value is right only when objects stay within its items. A *constraint*'s
  soft term in the local-search flavour still carries ColocateGroups' continuous term P_g
  (its violation summary does not), as the optimal flavour does with
  ``useContinuousPenaltyWithOptimal``.
* Errors of the wheel itself (e.g. CapacitySpec MIN+zeroAllowed "x cannot be larger than
  last points", docs/semantics.md#wheel-quirks) surface as :class:`PeerError`.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..enums import enum_value, parse_enum
from ..errors import InputError
from ..specs import REGISTRY

ENV_VAR = "CPSAT_REBALANCER_PEER_PYTHON"
PEER_VENV_PYTHON = "~/.cache/cpsat-rebalancer/peer-venv/bin/python"
SYSTEM_PEER_PYTHON = "/opt/rebpeer/bin/python"
RUNNER = Path(__file__).with_name("wheel_runner.py")
INSTALL_HINT = (
    "Set up a peer interpreter (Python 3.12 with rebalancer 1.0.4):\n"
    "  python3.12 -m venv ~/.cache/cpsat-rebalancer/peer-venv && "
    "~/.cache/cpsat-rebalancer/peer-venv/bin/pip install rebalancer==1.0.4\n"
    f"or set {ENV_VAR} (or pass --peer-python) to such an interpreter."
)

DEFAULT, HARD, SOFT = (enum_value("ConstraintPolicy", n) for n in ("DEFAULT", "HARD", "SOFT"))
# Constraints for which the binding ignores per-constraint policy and parameters: ours that
# say so, and two the project does not model yet (passed through to the wheel as they are).
SINGLE_PARAMETER_ARMS = frozenset(
    {arm for arm, spec in REGISTRY.items() if spec.single_parameter}
    | {"moveGroupSpec", "movesInProgressSpec"})
FORCE_COST, FORCE_STATE = 100.0, 10000.0

ARM_ENUMS: dict[str, dict[str, str]] = {arm: spec.enum_fields for arm, spec in REGISTRY.items()
                                        if spec.enum_fields}
# Keys whose value is a nested Limit / Filter struct, whose "type" field is an enum.
NESTED_ENUMS: dict[str, str] = {
    **dict.fromkeys(
        ("limit", "limits", "contribution", "bundleConfig", "coefficients", "perGroupValues"),
        "LimitType",
    ),
    **dict.fromkeys(("groupToPresenceWeight", "scopeItemToLimit", "groupToExtraAdditivePenalty"),
                    "LimitType"),
    **dict.fromkeys(("scopeItemFilter", "groupFilter"), "FilterType"),
    **dict.fromkeys(
        ("filter", "sourceFilter", "sourceScopeItemsAffectingLimitFilter",
         "destinationScopeItemsAffectingLimitFilter"),
        "FilterType",
    ),
}

# Nested structs with enum fields of their own: key -> {field: enum}.
NESTED_STRUCT_ENUMS: dict[str, dict[str, str]] = {
    "groupUtilizationBound": {"boundType": "UtilizationBoundType"},
}


# Keys whose value is a list of structs: the enum fields of each element.
LIST_ENUMS: dict[str, dict[str, Any]] = {
    "multiplierList": {"type": "LimitType"},
    "groupUtilMultipliers": {"target": "GroupUtilMultiplierTarget", "value": {"type": "LimitType"}},
}


class PeerUnavailable(RuntimeError):
    """No interpreter with the ``rebalancer`` wheel was found; the message says how to add one."""


class PeerError(RuntimeError):
    """The wheel failed, or could not be made to evaluate what was asked."""


# --------------------------------------------------------------------------- finding a peer


@functools.cache
def _probe(path: str) -> bool:
    """Whether ``path`` runs and imports ``rebalancer`` (cached: a probe starts an interpreter)."""
    try:
        done = subprocess.run([path, "-c", "import rebalancer"], check=False,
                              capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def _candidates(explicit: str | None) -> list[str]:
    """An explicit path or the environment variable is authoritative (no silent fallback)."""
    if explicit:
        return [os.path.expanduser(explicit)]
    if os.environ.get(ENV_VAR):
        return [os.path.expanduser(os.environ[ENV_VAR])]
    return [os.path.expanduser(PEER_VENV_PYTHON), SYSTEM_PEER_PYTHON]


def find_peer_python(explicit: str | None = None) -> str | None:
    """The first working peer interpreter: ``explicit``, else $CPSAT_REBALANCER_PEER_PYTHON,
    else the user's peer venv, else ``/opt/rebpeer``; None when none imports ``rebalancer``."""
    return next((path for path in _candidates(explicit) if _probe(path)), None)


def require_peer_python(explicit: str | None = None) -> str:
    """Like :func:`find_peer_python` but raises :class:`PeerUnavailable` with set-up help."""
    path = find_peer_python(explicit)
    if path is None:
        tried = ", ".join(_candidates(explicit))
        raise PeerUnavailable(
            f"No Python interpreter with the rebalancer wheel found (tried: {tried}).\n"
            + INSTALL_HINT
        )
    return path


# --------------------------------------------------------------------------- spec conversion


def _convert(value: Any, enums: dict[str, Any], path: str) -> Any:
    """Copy ``value``, turning enum names (or checked integers) into the wheel's integers.
    ``enums``: the enum of each field, or (a dict) the enum fields of a nested struct."""
    if isinstance(value, list):
        return [_convert(v, {}, f"{path}[{k}]") for k, v in enumerate(value)]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        where = f"{path}.{key}"
        if key in enums and isinstance(enums[key], dict):
            out[key] = _convert(item, enums[key], where)
        elif key in enums:
            out[key] = enum_value(enums[key], parse_enum(enums[key], item, where))
        elif key in LIST_ENUMS and isinstance(item, list):
            out[key] = [_convert(v, LIST_ENUMS[key], f"{where}[{k}]")
                        for k, v in enumerate(item)]
        elif key in NESTED_ENUMS and isinstance(item, dict):
            out[key] = _convert(item, {"type": NESTED_ENUMS[key]}, where)
        elif key in NESTED_STRUCT_ENUMS and isinstance(item, dict):
            out[key] = _convert(item, NESTED_STRUCT_ENUMS[key], where)
        else:
            out[key] = _convert(item, {}, where)
    return out


def to_wheel_spec(spec: dict, default_name: str) -> dict:
    """A spec dict in the wheel's shape: enum fields as integers, a non-empty ``name``.

    The wheel rejects enum names and empty names; our scenarios allow both forms."""
    if not isinstance(spec, dict) or len(spec) != 1:
        raise InputError("spec", "expected a dict with exactly one spec arm", spec)
    ((arm, body),) = spec.items()
    if not isinstance(body, dict):
        raise InputError(arm, "expected a dict of spec fields", body)
    if arm in REGISTRY and not REGISTRY[arm].in_rebalancer:
        raise InputError(arm, "this project's own spec, which Rebalancer does not have: "
                         "the wheel cannot evaluate it")
    body = _convert(body, ARM_ENUMS.get(arm, {}), arm)
    if not body.get("name"):
        body["name"] = default_name
    return {arm: body}


def needs_mip_flavour(wheel_spec: dict) -> bool:
    """Goals that are evaluated in the wheel's MIP ("discrete") flavour by this bridge."""
    ((arm, body),) = wheel_spec.items()
    spec = REGISTRY.get(arm)
    return spec is not None and spec.wheel_evaluates_as_mip(body)


# --------------------------------------------------------------------------- scenario model


@dataclass
class _Goal:
    index: int
    name: str
    spec: dict  # wheel shape
    weight: float | None
    tuple_pos: int | None  # as given
    position: int  # resolved like add_goal does
    mip: bool

    def tagged(self, tag: str) -> dict:
        """The spec under a private unique name, so the wheel's summaries can be matched."""
        ((arm, body),) = self.spec.items()
        return {arm: {**body, "name": tag}}


@dataclass
class _Constraint:
    index: int
    name: str
    arm: str
    spec: dict  # wheel shape
    policy: int | None
    invalid_cost: float | None
    invalid_state: float | None
    tuple_pos: int | None  # as given
    effective_policy: int
    position: int  # tuple position of its soft term

    def tagged(self, tag: str) -> dict:
        return {self.arm: {**self.spec[self.arm], "name": tag}}


@dataclass
class _Scenario:
    base: dict  # names, dimensions, scopes, partitions in the runner's request shape
    containers: list[str]
    initial: dict[str, str]  # object -> container
    goals: list[_Goal]
    constraints: list[_Constraint]
    steps: list[tuple[str, int]]  # ("goal", i) / ("boundary", -1), in the user's order
    policy: int | None
    defaults: dict
    last_position: int
    # where the wheel starts: the initial assignment with the moves already in flight made
    # (the first destination named wins); the definitions still count from ``initial``
    start: dict[str, str]

    @property
    def container_name(self) -> str:
        return self.base["containerName"]

    def item(self, scope: str | None, container: str) -> str | None:
        """Scope item of a container (None when out of scope)."""
        if not scope or scope == self.container_name:
            return container
        return self.base["scopes"].get(scope, {}).get(container)


def _policy(value: Any, path: str) -> int | None:
    return None if value is None else enum_value(
        "ConstraintPolicy", parse_enum("ConstraintPolicy", value, path))


def _assignment_lists(containers: list[str], where: dict[str, str]) -> dict[str, list[str]]:
    lists: dict[str, list[str]] = {c: [] for c in containers}
    for obj, container in where.items():
        lists[container].append(obj)
    return lists


def normalise_scenario(scenario: dict) -> _Scenario:
    """Resolve names, enum values, default weights and tuple positions once."""
    if "assignment" not in scenario:
        raise InputError("assignment", "missing: the initial assignment {container: [objects]}")
    containers = list(scenario["assignment"])
    containers += [c for c in scenario.get("containers", []) if c not in containers]
    initial: dict[str, str] = {}
    for container, objs in scenario["assignment"].items():
        for obj in objs:
            if obj in initial:
                raise InputError(f"assignment.{container}", "object listed twice", obj)
            initial[obj] = container
    base = {
        "objectName": scenario.get("objectName", "object"),
        "containerName": scenario.get("containerName", "container"),
        **{key: copy.deepcopy(scenario.get(key, {})) for key in (
            "objectDimensions", "objectDimensionDefaults", "containerDimensions",
            "containerDimensionDefaults", "scopes", "scopeDimensions", "partitions",
            "dynamicObjectDimensions", "objectDimensionVectors")},
    }
    goals: list[_Goal] = []
    steps: list[tuple[str, int]] = []
    current = 0
    for entry in scenario.get("goals", []):
        if entry.get("boundary"):
            current += 1
            steps.append(("boundary", -1))
            continue
        i = len(goals)
        spec = to_wheel_spec(entry["spec"], f"goal{i}")
        pos = entry.get("tuplePos")
        weight = entry.get("weight")
        goals.append(_Goal(i, next(iter(spec.values()))["name"], spec,
                           None if weight is None else float(weight), pos,
                           current if pos is None else int(pos), needs_mip_flavour(spec)))
        steps.append(("goal", i))
    policy = _policy(scenario.get("constraintPolicy"), "constraintPolicy")
    defaults = dict(scenario.get("defaultConstraintParams") or {})
    default_pos = int(defaults.get("tuplePosIfBroken", 0))
    constraints: list[_Constraint] = []
    for j, entry in enumerate(scenario.get("constraints", [])):
        spec = to_wheel_spec(entry["spec"], f"constraint{j}")
        arm = next(iter(spec))
        own = _policy(entry.get("policy"), f"constraints[{j}].policy")
        single = arm in SINGLE_PARAMETER_ARMS
        effective = policy if single or own is None else own
        pos = entry.get("tuplePosIfBroken")
        constraints.append(_Constraint(
            j, spec[arm]["name"], arm, spec, own, entry.get("invalidCost"),
            entry.get("invalidState"), pos, DEFAULT if effective is None else effective,
            default_pos if single or pos is None else int(pos)))
    last = max([g.position for g in goals] + [c.position for c in constraints] + [0])
    in_flight: dict[str, str] = {}
    for c in constraints:
        spec_type = REGISTRY.get(c.arm)
        for obj, container in (spec_type.wire_moves_in_flight(c.spec[c.arm])
                               if spec_type else []):
            in_flight.setdefault(obj, container)
    start = {obj: in_flight.get(obj, container) for obj, container in initial.items()}
    return _Scenario(base, containers, initial, goals, constraints, steps, policy, defaults, last,
                     start)


# --------------------------------------------------------------------------- runs


def _local_search(moves: int) -> dict:
    return {"localSearchSolverSpec": {
        "moveTypeList": [{"singleMoveTypeSpec": {}}], "stopAfterMoves": moves}}


MIP_EVALUATION = {"optimalSolverSpec": {"solverPackage": 2, "skipMipSolveForTesting": True}}


def _eval_goal_steps(sc: _Scenario, first: int, goals: list[_Goal]) -> list[dict]:
    """Weight-1 copies of ``goals``, each alone at its own tuple position from ``first``."""
    return [{"goal": g.tagged(f"__eval{g.index}"), "weight": 1.0, "tuplePos": first + k}
            for k, g in enumerate(goals)]


def scenario_run(sc: _Scenario, solver: dict, tagged: bool = True) -> dict:
    """A runner request for the user's scenario exactly as given (goals and boundaries in
    their order, constraints with their own arguments), solved by ``solver``. ``tagged``
    renames goals ``__goal<i>`` and constraints ``__constraint<j>`` so that the wheel's
    summaries can be matched to them; otherwise their own names are kept."""
    steps: list[dict] = []
    for kind, i in sc.steps:
        if kind == "boundary":
            steps.append({"boundary": True})
        else:
            g = sc.goals[i]
            steps.append({"goal": g.tagged(f"__goal{i}") if tagged else g.spec,
                          "weight": g.weight, "tuplePos": g.tuple_pos})
    for c in sc.constraints:
        steps.append({"constraint": c.tagged(f"__constraint{c.index}") if tagged else c.spec,
                      "policy": c.policy, "invalidCost": c.invalid_cost,
                      "invalidState": c.invalid_state, "tuplePosIfBroken": c.tuple_pos})
    return {**sc.base, "assignment": _assignment_lists(sc.containers, sc.initial),
            "constraintPolicy": sc.policy, "defaultConstraintParams": sc.defaults,
            "steps": steps, "solver": solver}


def _initial_run(sc: _Scenario) -> dict:
    """The user's scenario exactly as given, plus weight-1 goal copies; no moves."""
    run = scenario_run(sc, _local_search(0))
    run["steps"] += _eval_goal_steps(sc, sc.last_position + 1, sc.goals)
    return run


def _mip_run(sc: _Scenario, where: dict[str, str]) -> dict:
    """MIP-flavour goals evaluated on ``where`` set as the wheel's initial assignment."""
    goals = [g for g in sc.goals if g.mip]
    return {**sc.base, "assignment": _assignment_lists(sc.containers, where),
            "steps": _eval_goal_steps(sc, 0, goals), "solver": MIP_EVALUATION}


def _blocks(sc: _Scenario, c: _Constraint, moves: dict[str, tuple[str, str]]) -> bool:
    """Whether ``c`` would stop local search from making one of the forced ``moves``."""
    body = c.spec[c.arm]
    if c.arm == "avoidMovingSpec":
        return any(obj in moves for obj in body.get("objects", []))
    # only single-container items refuse objects (docs/semantics.md#nonaccepting)
    if c.arm == "nonAcceptingSpec":
        scope = body.get("scope")
        sizes = Counter(sc.item(scope, x) for x in sc.containers)
        closed = {i for i in body.get("items", []) if sizes[i] == 1}
        return any(sc.item(scope, dst) in closed and sc.item(scope, dst) != sc.item(scope, src)
                   for src, dst in moves.values())
    if c.arm == "toFreeSpec":
        return bool(set(body.get("containers", [])) & {dst for _, dst in moves.values()})
    return False


@dataclass
class _Substitute:
    """Non-blocking specs whose summed values equal a blocking constraint's violation."""

    method: str
    constraints: list[dict]  # wheel constraint specs (value: finalConstraint)
    goals: list[dict]  # wheel goal specs (value: objective entry)
    scopes: dict[str, dict[str, str]]
    scope_dimensions: dict[str, dict[str, dict[str, float]]]

    def value(self, violations: dict[str, float], entries: dict[str, float]) -> float:
        """The blocking constraint's violation, from the forced run's summaries."""
        def names(specs: list[dict]) -> list[str]:
            return [next(iter(spec.values()))["name"] for spec in specs]
        return (sum(_lookup(violations, n, "a substitute") for n in names(self.constraints))
                + sum(_lookup(entries, n, "a substitute") for n in names(self.goals)))


def _substitute(sc: _Scenario, c: _Constraint) -> _Substitute:
    """Exact stand-in for a blocking constraint (docs/semantics.md#tofree, #avoidmoving,
    #nonaccepting, #avoidassignments)."""
    body = c.spec[c.arm]
    tag = f"__sub{c.index}"
    if c.arm == "avoidMovingSpec":
        # N - #stayed == number of listed objects finally outside their initial container.
        objects = dict.fromkeys(body.get("objects", []))
        assignments = [{"object": o, "scopeItems": [x for x in sc.containers
                                                    if x != sc.start[o]]} for o in objects]
        spec = {"name": tag, "scope": sc.container_name, "assignments": assignments}
        return _Substitute("substitute:avoidAssignmentsSpec",
                           [{"avoidAssignmentsSpec": spec}], [], {}, {})
    if c.arm == "nonAcceptingSpec":
        # NEW_i (object count) == listed objects not initially in item i, finally in i.
        scope = body.get("scope") or sc.container_name
        items = body.get("items", [])
        assignments = []
        for obj, container in sc.start.items():
            others = [i for i in items if i != sc.item(scope, container)]
            if others:
                assignments.append({"object": obj, "scopeItems": others})
        spec = {"name": tag, "scope": scope, "assignments": assignments}
        return _Substitute("substitute:avoidAssignmentsSpec",
                           [{"avoidAssignmentsSpec": spec}], [], {}, {})
    # toFreeSpec constraint: violation sum_c A_c + NEW_c over its containers.
    dim = body.get("dimension") or f"{sc.base['objectName']}_count"
    listed = list(dict.fromkeys(body.get("containers", [])))
    scope = f"__tofree{c.index}"
    limit = {"type": enum_value("LimitType", "ABSOLUTE"), "globalLimit": 0.0}
    goals = [{"capacitySpec": {
        "name": f"{tag}_{definition}", "scope": scope, "dimension": dim, "limit": limit,
        "definition": enum_value("CapacitySpecDefinition", definition)}}
        for definition in ("AFTER", "NEW")]
    return _Substitute("substitute:capacitySpec", [], goals, {scope: {x: x for x in listed}},
                       {scope: {dim: dict.fromkeys(listed, 1.0)}})


def _forced_run(sc: _Scenario, moves: dict[str, tuple[str, str]],
                subs: dict[int, _Substitute]) -> dict:
    """Start from the initial assignment and let local search make exactly ``moves``.

    Layout: position 0 forcing terms; user position p at p + 1 (SOFT constraints); HARD
    constraints and substitutes' constraints at P + 2; weight-1 goal copies from P + 3."""
    last = sc.last_position
    steps: list[dict] = []
    stayers = [o for o in sc.initial if o not in moves]
    if stayers:
        steps.append({"constraint": {"avoidMovingSpec": {"name": "__pin", "objects": stayers}}})
    for obj, (_, dst) in moves.items():
        avoid = [x for x in sc.containers if x != dst]
        spec = {"name": f"__force{len(steps)}", "scope": sc.container_name,
                "assignments": [{"object": obj, "scopeItems": avoid}]}
        steps.append({"constraint": {"avoidAssignmentsSpec": spec}, "policy": DEFAULT,
                      "invalidCost": FORCE_COST, "invalidState": FORCE_STATE,
                      "tuplePosIfBroken": 0})
    for g in sc.goals:
        steps.append({"goal": g.tagged(f"__goal{g.index}"), "weight": g.weight,
                      "tuplePos": g.position + 1})
    for c in sc.constraints:
        if c.index in subs:
            continue
        pos = last + 2 if c.effective_policy == HARD else c.position + 1
        steps.append({"constraint": c.tagged(f"__constraint{c.index}"), "policy": SOFT,
                      "invalidCost": c.invalid_cost, "invalidState": c.invalid_state,
                      "tuplePosIfBroken": pos})
    steps += _eval_goal_steps(sc, last + 3, sc.goals)
    scopes = dict(sc.base["scopes"])
    scope_dims = dict(sc.base["scopeDimensions"])
    extra = last + 3 + len(sc.goals)
    for sub in subs.values():
        for spec in sub.constraints:
            steps.append({"constraint": spec, "policy": SOFT, "tuplePosIfBroken": last + 2})
        for spec in sub.goals:
            steps.append({"goal": spec, "weight": 1.0, "tuplePos": extra})
            extra += 1
        scopes.update(sub.scopes)
        scope_dims.update(sub.scope_dimensions)
    defaults = {**sc.defaults,
                "tuplePosIfBroken": int(sc.defaults.get("tuplePosIfBroken", 0)) + 1}
    return {**sc.base, "scopes": scopes, "scopeDimensions": scope_dims,
            "assignment": _assignment_lists(sc.containers, sc.initial),
            "constraintPolicy": SOFT, "defaultConstraintParams": defaults, "steps": steps,
            "solver": _local_search(len(moves) + 10)}


def call_peer(python: str, runs: list[dict], timeout: float) -> list[dict]:
    """One subprocess round trip; raises PeerError with the wheel's message on failure."""
    try:
        done = subprocess.run([python, str(RUNNER)], input=json.dumps({"runs": runs}),
                              check=False, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise PeerError(f"the rebalancer wheel did not answer within {timeout} s") from exc
    try:
        response = json.loads(done.stdout)
    except json.JSONDecodeError:
        response = {"error": f"no JSON answer (exit {done.returncode}): {done.stderr[-2000:]}"}
    if done.returncode != 0 or "error" in response:
        raise PeerError(f"rebalancer wheel: {response.get('error', done.stderr[-2000:])}")
    return response["results"]


# --------------------------------------------------------------------------- reading results


def _objectives(summary: dict) -> tuple[list[float], dict[str, float]]:
    """Per-position sums and each named entry's (weighted) value of a global objective."""
    sums = [float(p["value"]) for p in summary["goals"]]
    entries = {o["name"]: float(o["value"]) for p in summary["goals"] for o in p["objs"]}
    return sums, entries


def _violations(summary: dict) -> dict[str, float]:
    return {c["name"]: float(c["value"]) for c in summary["constraints"]}


def _lookup(values: dict[str, float], tag: str, what: str) -> float:
    if tag not in values:
        raise PeerError(f"the wheel reported no value for {what} ({tag})")
    return values[tag]


def _side(sc: _Scenario, ls_entries: dict[str, float], mip_entries: dict[str, float],
          violations: dict[str, float], sums: list[float] | None, shift: int,
          substituted: dict[int, tuple[float, str]] | None = None) -> dict:
    """Assemble one side (initial or final) of the answer; user position p is sums[p+shift]."""
    goals, positions = [], None
    if sums is not None:
        positions = {str(p): (sums[p + shift] if p + shift < len(sums) else 0.0)
                     for p in range(sc.last_position + 1)}
    for g in sc.goals:
        ls_value = _lookup(ls_entries, f"__eval{g.index}", f"goal {g.index}")
        value = _lookup(mip_entries, f"__eval{g.index}", f"goal {g.index}") if g.mip else ls_value
        if positions is not None and g.mip:  # swap the surrogate for the discrete value
            weight = 1.0 if g.weight is None else g.weight
            positions[str(g.position)] += weight * (value - ls_value)
        goals.append({"index": g.index, "name": g.name, "value": value,
                      "method": "mip" if g.mip else "local_search"})
    constraints = []
    for c in sc.constraints:
        if substituted and c.index in substituted:
            value, method = substituted[c.index]
        else:
            value = _lookup(violations, f"__constraint{c.index}", f"constraint {c.index}")
            method = "local_search"
        constraints.append({"index": c.index, "name": c.name, "value": value, "method": method})
    side: dict[str, Any] = {"goals": goals, "constraints": constraints}
    if positions is not None:
        side["positions"] = positions
    return side


def _final_map(sc: _Scenario, final: dict[str, list[str]]) -> dict[str, str]:
    """Validate the final assignment against the initial one: same objects, known containers."""
    where: dict[str, str] = {}
    for container, objs in final.items():
        if container not in sc.containers:
            raise InputError(f"final.{container}", "unknown container", container)
        for obj in objs:
            if obj in where or obj not in sc.initial:
                raise InputError(f"final.{container}", "unknown or repeated object", obj)
            where[obj] = container
    missing = set(sc.initial) - set(where)
    if missing:
        raise InputError("final", "objects without a container", sorted(missing)[:5])
    return where


def evaluate_with_wheel(
    scenario: dict,
    final_assignment: dict[str, list[str]] | None = None,
    peer_python: str | None = None,
    timeout: float = 120,
) -> dict:
    """Evaluate the scenario's goals and constraints with Rebalancer's own wheel.

    Returns ``{"initial": side, "final": side, "seconds": float}``; a side is
    ``{"goals": [{"index", "name", "value", "method"}], "constraints": [...same...],
    "positions": {"0": float, ...}}`` (plus ``"notes"`` on the final side when relevant):

    * goal ``value``: the spec's own unweighted value g (a weight-1 copy's entry);
      ``method`` "local_search" (continuous flavour) or "mip" (discrete flavour);
    * constraint ``value``: the wheel's violation summary Σ e_k⁺ (``constraints[].value``
      of initialConstraint / finalConstraint), normalized as the spec's expressions are;
    * initial ``positions[p]``: the wheel's initialGlobalObjective sum at tuple position p of
      the user's scenario (weighted goals + soft terms of constraints under their policies),
      with MIP-flavour goals' surrogates replaced by their discrete values;
    * final ``positions[p]``: the same sum at the final assignment from the forced-moves run,
      with every non-HARD constraint's soft term taken over all its infos (SOFT semantics)
      and HARD constraints contributing nothing. It equals what Rebalancer reports when the
      final assignment keeps the hard parts of DEFAULT constraints (infos not broken
      initially stay satisfied); omitted when a blocking constraint had to be substituted;
    * ``seconds``: wall time spent in the peer interpreter calls.

    ``final`` equals ``initial`` when ``final_assignment`` is None or moves nothing.
    """
    python = require_peer_python(peer_python)
    sc = normalise_scenario(scenario)
    where = sc.start if final_assignment is None else _final_map(sc, final_assignment)
    moves = {o: (sc.start[o], c) for o, c in where.items() if c != sc.start[o]}
    any_mip = any(g.mip for g in sc.goals)
    subs = {c.index: _substitute(sc, c) for c in sc.constraints if _blocks(sc, c, moves)}

    runs = [_initial_run(sc)]
    if any_mip:
        runs.append(_mip_run(sc, sc.start))
    if moves:
        runs.append(_forced_run(sc, moves, subs))
        if any_mip:
            runs.append(_mip_run(sc, where))
    start = time.perf_counter()
    results = call_peer(python, runs, timeout)
    seconds = time.perf_counter() - start

    first = results.pop(0)
    if first["assignment"] != sc.start:
        raise PeerError("the wheel moved objects in a run meant to make no move")
    sums, entries = _objectives(first["initialGlobalObjective"])
    mip_entries = _objectives(results.pop(0)["initialGlobalObjective"])[1] if any_mip else {}
    initial = _side(sc, entries, mip_entries, _violations(first["initialConstraint"]), sums, 0)
    if not moves:
        return {"initial": initial, "final": copy.deepcopy(initial), "seconds": seconds}

    forced = results.pop(0)
    wrong = {o: (forced["assignment"].get(o), c) for o, c in where.items()
             if forced["assignment"].get(o) != c}
    if wrong:
        shown = ", ".join(f"{o} in {got} not {want}" for o, (got, want) in list(wrong.items())[:5])
        raise PeerError(f"the wheel did not realise the final assignment ({len(wrong)} objects"
                        f" misplaced: {shown}); a spec blocks these moves")
    sums, entries = _objectives(forced["finalGlobalObjective"])
    mip_entries = _objectives(results.pop(0)["initialGlobalObjective"])[1] if any_mip else {}
    violations = _violations(forced["finalConstraint"])
    substituted = {i: (sub.value(violations, entries), sub.method) for i, sub in subs.items()}
    final = _side(sc, entries, mip_entries, violations, None if subs else sums, 1, substituted)
    if subs:
        final["notes"] = [
            f"constraint {i} ({sc.constraints[i].arm}) blocks a forced move: measured through "
            f"{s.method.split(':')[1]}; positions omitted" for i, s in subs.items()]
    return {"initial": initial, "final": final, "seconds": seconds}

