"""User-chosen CP-SAT parameters (``solver.cpsatParameters``, ``--cpsat-param``): checked
against CP-SAT's own descriptor and validation before any model is built, and merged into
each optimizing search after the engine's own settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .errors import InputError

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

# CP-SAT parameters the engine sets itself, and the option that sets each one instead
ENGINE_PARAMETERS = {
    "num_workers": "use workers (--workers)",
    "num_search_workers": "use workers (--workers)",
    "random_seed": "use seed (--seed)",
    "max_time_in_seconds": "use timeLimit (--time-limit)",
    "max_deterministic_time": "use deterministicTime (--deterministic-time)",
    "relative_gap_limit": "kept at 0 so that every optimum is proven exactly",
    "absolute_gap_limit": "kept at 0 so that every optimum is proven exactly",
    "log_search_progress": "use log (--log)",
    "catch_sigint_signal": "Ctrl-C is handled by the engine, which keeps the best solution",
    # the engine completes its start with it; on a search it proves the hint "optimal"
    "fix_variables_to_their_hinted_value": "it would report the starting assignment as "
                                           "optimal",
}


def check_cpsat_parameters(data: Any, path: str, workers: int = 1) -> dict[str, Any]:
    """``{name: value}`` of CP-SAT ``SatParameters`` fields, checked against CP-SAT's own
    descriptor and then by CP-SAT itself (a solve of an empty model with them, which runs
    CP-SAT's parameter validation), so that a mistake is an InputError before any model is
    built, never a failed solve. Returns a new dict: enums by name, repeated fields as lists."""
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise InputError(path, "expected a mapping {parameter name: value}", data)
    if not data:
        return {}
    from ortools.sat import sat_parameters_pb2

    descriptor = sat_parameters_pb2.SatParameters.DESCRIPTOR
    message = sat_parameters_pb2.SatParameters()
    checked: dict[str, Any] = {}
    for name, value in data.items():
        where = f"{path}.{name}"
        spec = descriptor.fields_by_name.get(name) if isinstance(name, str) else None
        if spec is None:
            raise InputError(where, "unknown CP-SAT parameter (the fields of CP-SAT's "
                             "SatParameters, e.g. linearization_level)")
        if name in ENGINE_PARAMETERS:
            raise InputError(where, f"set by the engine: {ENGINE_PARAMETERS[name]}", value)
        if spec.cpp_type == spec.CPPTYPE_MESSAGE:
            raise InputError(where, "message-valued CP-SAT parameters are not supported")
        repeated = (spec.is_repeated if hasattr(type(spec), "is_repeated")
                    else spec.label == spec.LABEL_REPEATED)
        if isinstance(value, list) and not repeated:
            raise InputError(where, "expected a single value", value)
        items = [_parameter_value(spec, item, where)
                 for item in (value if isinstance(value, list) else [value])]
        try:
            if repeated:
                getattr(message, name).extend(items)
            else:
                setattr(message, name, items[0])
        except (TypeError, ValueError) as exc:  # out of the field's range (int32, say)
            raise InputError(where, f"rejected by CP-SAT: {exc}", value) from None
        checked[name] = items if repeated else items[0]
    _validate_with_cpsat(checked, path, workers)
    return checked


def _parameter_value(spec: Any, value: Any, where: str) -> Any:
    """One value of a SatParameters field in the field's own type (an enum by name)."""
    if isinstance(value, np.generic):  # a numpy scalar reads as the Python value it holds
        value = value.item()
    kind = spec.cpp_type
    if kind == spec.CPPTYPE_BOOL:
        if not isinstance(value, bool):
            raise InputError(where, "expected true or false", value)
        return value
    if kind == spec.CPPTYPE_ENUM:
        names = spec.enum_type.values_by_name
        numbers = spec.enum_type.values_by_number
        if isinstance(value, str) and value in names:
            return value
        if isinstance(value, int) and not isinstance(value, bool) and value in numbers:
            return numbers[value].name
        raise InputError(where, "expected one of " + ", ".join(names) + " (or its number)",
                         value)
    if kind == spec.CPPTYPE_STRING:
        if not isinstance(value, str):
            raise InputError(where, "expected a string", value)
        return value
    if kind in (spec.CPPTYPE_DOUBLE, spec.CPPTYPE_FLOAT):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(where, "expected a number", value)
        return float(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(where, "expected an integer", value)
    return value


def cpsat_parameters_text(parameters: Mapping[str, Any]) -> str:
    """Checked parameters in protobuf text format, the form CP-SAT merges into its own."""
    from google.protobuf import text_format
    from ortools.sat import sat_parameters_pb2

    message = sat_parameters_pb2.SatParameters()
    for name, value in parameters.items():
        if isinstance(value, list):
            getattr(message, name).extend(value)
        else:
            setattr(message, name, value)
    return text_format.MessageToString(message, as_one_line=True)


def apply_cpsat_parameters(target: Any, parameters: Mapping[str, Any]) -> bool:
    """Merge checked parameters into a solver's ``parameters`` (set fields replace the
    target's, repeated ones are appended); False when CP-SAT cannot parse them."""
    text = cpsat_parameters_text(parameters)
    if hasattr(target, "merge_text_format"):  # OR-Tools' own wrapper (9.13 and later)
        return bool(target.merge_text_format(text))
    from google.protobuf import text_format

    text_format.Merge(text, target)  # a SatParameters protobuf message (earlier versions)
    return True


def new_solver() -> cp_model.CpSolver:
    """A CP-SAT solver with the engine's standing setting: CP-SAT's new linear propagation
    off. On a model of a few variables with domains near 1e15 it loops without looking at
    its time limit or at ``stop_search`` (benchmarks/cpsat_hang.py), so no limit of a run
    would hold; the classic propagation answers within the limit. A user's cpsatParameters,
    merged after it into each optimizing search, may turn it back on."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.new_linear_propagation = False
    return solver


def _validate_with_cpsat(parameters: dict[str, Any], path: str, workers: int) -> None:
    """CP-SAT's own checks (ranges, NaN, subsolver names), run on an empty model."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    if not apply_cpsat_parameters(solver.parameters, parameters):
        raise InputError(path, "CP-SAT cannot read these parameters", parameters)
    solver.parameters.num_workers = workers
    solver.parameters.max_time_in_seconds = 1.0
    solver.parameters.catch_sigint_signal = False
    if solver.solve(cp_model.CpModel()) == cp_model.MODEL_INVALID:
        reason = solver.response_proto.solution_info
        raise InputError(path, f"rejected by CP-SAT: {reason}", parameters)
