"""Object dimensions beyond one static value per object, read from a scenario: vectors (one
value per entry, Rebalancer's ``add_object_dimension_vector``) and dynamic dimensions (a
value per item of a scope, ``add_dynamic_object_dimension``). Every error names the field."""

from __future__ import annotations

from typing import Any

import numpy as np

from .errors import InputError, did_you_mean
from .fields import Fields, check_amount, optional_mapping
from .problem import DynamicDimension, Scope


def vector_dimensions(data: Any, object_dims: dict[str, np.ndarray],
                      defaults: dict[str, Any], object_index: dict[str, int],
                      ) -> dict[str, tuple[str, ...]]:
    """``{name: {object: [values]}}`` (Rebalancer's add_object_dimension_vector): every vector
    of one length; an object not listed gets ``objectDimensionDefaults.name`` (default 0) in
    every entry. Each entry becomes a static dimension ``name[k]`` in ``object_dims``; the
    names of the entries are returned per vector."""
    result: dict[str, tuple[str, ...]] = {}
    for name, values in optional_mapping(data, "objectDimensionVectors", "dimension names").items():
        path = f"objectDimensionVectors.{name}"
        if name in object_dims:
            raise InputError(path, "a static object dimension has this name", name)
        vectors = optional_mapping(values, path, "object names")
        length: int | None = None
        first = ""
        rows: dict[int, list[float]] = {}
        for obj, vector in vectors.items():
            at = f"{path}.{obj}"
            index = object_index.get(obj)
            if index is None:
                raise InputError(at, "unknown object", obj)
            if isinstance(vector, np.ndarray):
                vector = vector.tolist()
            if not isinstance(vector, list | tuple):
                raise InputError(at, "expected a list of numbers (one per entry)", vector)
            if not vector:
                raise InputError(at, "a vector needs at least one entry", vector)
            if length is None:
                length, first = len(vector), obj
            elif len(vector) != length:
                raise InputError(at, f"all vectors must have the same length: this one has "
                                 f"{len(vector)} entries, {first}'s {length}", vector)
            rows[index] = [check_amount(v, f"{at}[{k}]") for k, v in enumerate(vector)]
        if length is None:
            raise InputError(path, "no object has a vector: its length is unknown", vectors)
        default = check_amount(defaults.get(name, 0.0), f"objectDimensionDefaults.{name}")
        table = np.full((len(object_index), length), default)
        for index, row in rows.items():
            table[index] = row
        entries = tuple(f"{name}[{k}]" for k in range(length))
        for entry, column in zip(entries, table.T):
            if entry in object_dims:
                raise InputError(path, f"its entry {entry} has the name of a static object "
                                 "dimension", name)
            object_dims[entry] = np.ascontiguousarray(column)
        result[name] = entries
    return result



def dynamic_dimensions(data: Any, object_dims: dict[str, np.ndarray],
                       object_index: dict[str, int], scopes: dict[str, Scope],
                       ) -> dict[str, DynamicDimension]:
    """``{name: {"scope": S, "values": {item: {object: value}}, "default": v}}``: an object's
    size depending on the item of S it lands in (Rebalancer's add_dynamic_object_dimension)."""
    result: dict[str, DynamicDimension] = {}
    for name, spec in optional_mapping(data, "dynamicObjectDimensions", "dimension names").items():
        path = f"dynamicObjectDimensions.{name}"
        if name in object_dims:
            raise InputError(path, "a static object dimension has this name", name)
        fields = Fields(spec, path)
        scope_name = fields.text("scope")
        values = fields.mapping("values", "scope item names")
        default = check_amount(fields.number("default", 0.0), fields.at("default"))
        fields.done("a dynamic object dimension")
        if not scope_name:
            raise InputError(fields.at("scope"), "a scope is required")
        scope = scopes.get(scope_name)
        if scope is None:
            raise InputError(fields.at("scope"), f"unknown scope (known: "
                             f"{', '.join(sorted(scopes))})" + did_you_mean(scope_name, scopes),
                             scope_name)
        by_item = np.full((len(object_index), len(scope.items) + 1), default)
        for item, per_object in values.items():
            item_path = f"{fields.at('values')}.{item}"
            position = scope.item_index.get(item)
            if position is None:
                raise InputError(item_path, f"unknown item of scope '{scope_name}'", item)
            for obj, value in optional_mapping(per_object, item_path, "object names").items():
                index = object_index.get(obj)
                if index is None:
                    raise InputError(f"{item_path}.{obj}", "unknown object", obj)
                by_item[index, position] = check_amount(value, f"{item_path}.{obj}")
        result[name] = DynamicDimension(scope_name, by_item)
    return result
