"""Typed, path-aware readers of input fields: every error names the field it is about."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .enums import parse_enum
from .errors import InputError, did_you_mean
from .primitives import MAX_AMOUNT


class Fields:
    """Typed, path-aware access to a spec dict; unknown keys are reported by :meth:`done`."""

    def __init__(self, data: Any, path: str):
        if not isinstance(data, dict):
            raise InputError(path, "expected an object (mapping of fields)", data)
        check_keys(data, path, "field names")
        self.data = data
        self.path = path
        self.seen: set[str] = set()

    def _get(self, key: str) -> Any:
        self.seen.add(key)
        return self.data.get(key)

    def at(self, key: str) -> str:
        return f"{self.path}.{key}"

    def text(self, key: str, default: str = "") -> str:
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise InputError(self.at(key), "expected a string", value)
        return value

    def number(self, key: str, default: float | None = None) -> float | None:
        value = self._get(key)
        if value is None:
            return default
        return check_number(value, self.at(key))

    def flag(self, key: str, default: bool = False) -> bool:
        value = self._get(key)
        if value is None:
            return default
        if not is_flag(value):
            raise InputError(self.at(key), "expected true or false", value)
        return bool(value)

    def enum(self, key: str, enum: str, default: str) -> str:
        value = self._get(key)
        if value is None:
            return default
        return parse_enum(enum, value, self.at(key))

    def names(self, key: str) -> list[str]:
        value = self._get(key)
        if value is None:
            return []
        return check_names(value, self.at(key))

    def mapping(self, key: str, what: str = "names") -> dict:
        """A mapping whose keys name things (items, groups, objects): strings; ``what``
        says what they name, for the error."""
        value = self._get(key)
        if value is None:
            return {}
        return check_mapping(value, self.at(key), what)

    def raw(self, key: str) -> Any:
        return self._get(key)

    def done(self, spec: str) -> None:
        unknown = sorted(set(self.data) - self.seen)
        if unknown:
            raise InputError(self.at(unknown[0]), f"unknown field of {spec}"
                             + did_you_mean(unknown[0], self.seen), unknown[0])


def is_number(value: Any) -> bool:
    """A real number: int, float, or a numpy integer or floating scalar (neither bool nor
    numpy.bool_, which are flags)."""
    if type(value) in (int, float):
        return True
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def is_integer(value: Any) -> bool:
    """An integer: int or a numpy integer scalar (not bool)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def is_flag(value: Any) -> bool:
    """True or false: bool, or numpy.bool_ (which is not a number here)."""
    return isinstance(value, (bool, np.bool_))


def check_integer(value: Any, path: str, what: str = "an integer") -> int:
    """An integer (numpy integer scalars included), as a Python int."""
    if not is_integer(value):
        raise InputError(path, f"expected {what}", value)
    return int(value)


def check_number(value: Any, path: str, *, nonnegative: bool = False) -> float:
    """A finite real number (bool is not a number here; numpy scalars are)."""
    if not is_number(value):
        raise InputError(path, "expected a number", value)
    try:
        number = float(value)
    except OverflowError:
        raise InputError(path, "too large", value, show_value=False) from None
    if not math.isfinite(number):
        raise InputError(path, "must be finite (NaN and infinity are not allowed)", value)
    if nonnegative and number < 0:
        raise InputError(path, "must not be negative", value)
    return number


def check_keys(data: dict, path: str, what: str = "names") -> None:
    """Every key of ``data`` a string: keys name things (objects, containers, dimensions,
    scopes, items, groups, fields), and YAML reads ``1:`` or ``null:`` as other types."""
    for key in data:
        if not isinstance(key, str):
            where = f"{path}.{key!r}" if path else repr(key)
            raise InputError(where, f"{what} must be strings", key)


def check_mapping(value: Any, path: str, what: str = "names") -> dict:
    """A mapping keyed by names (strings); ``what`` says what the keys are, for the error."""
    if not isinstance(value, dict):
        raise InputError(path, "expected a mapping", value)
    check_keys(value, path, what)
    return value


def check_list(value: Any, path: str, what: str = "a list") -> list:
    """A list; a tuple or a one-dimensional numpy array is read as the list it holds."""
    if isinstance(value, tuple) or (isinstance(value, np.ndarray) and value.ndim == 1):
        return list(value)
    if not isinstance(value, list):
        raise InputError(path, f"expected {what}", value)
    return value


def check_names(value: Any, path: str) -> list[str]:
    """A list of names (strings); a tuple or a one-dimensional numpy array of strings is
    read as the list it holds."""
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    elif isinstance(value, tuple):
        value = list(value)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(path, "expected a list of names", value)
    return value


def optional_mapping(value: Any, path: str, what: str) -> dict:
    """A mapping (absent: empty) keyed by names; ``what`` says what the keys name."""
    if value is None:
        return {}
    return check_mapping(value, path, what)


def check_amount(value: Any, path: str) -> float:
    """A size or capacity: a finite number from 0 to :data:`MAX_AMOUNT`."""
    number = check_number(value, path, nonnegative=True)
    if number > MAX_AMOUNT:
        raise InputError(path, "too large to model exactly (sizes and capacities are at most "
                         "10^18, for CP-SAT's 64-bit integers)", value)
    return number
