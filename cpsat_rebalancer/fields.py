"""Typed, path-aware readers of input fields: every error names the field it is about."""

from __future__ import annotations

import math
from typing import Any

from .enums import parse_enum
from .errors import InputError


class Fields:
    """Typed, path-aware access to a spec dict; unknown keys are reported by :meth:`done`."""

    def __init__(self, data: Any, path: str):
        if not isinstance(data, dict):
            raise InputError(path, "expected an object (mapping of fields)", data)
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
        if not isinstance(value, bool):
            raise InputError(self.at(key), "expected true or false", value)
        return value

    def enum(self, key: str, enum: str, default: str) -> str:
        value = self._get(key)
        if value is None:
            return default
        return parse_enum(enum, value, self.at(key))

    def names(self, key: str) -> list[str]:
        value = self._get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise InputError(self.at(key), "expected a list of names", value)
        return value

    def mapping(self, key: str) -> dict:
        value = self._get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise InputError(self.at(key), "expected a mapping", value)
        return value

    def raw(self, key: str) -> Any:
        return self._get(key)

    def done(self, spec: str) -> None:
        unknown = sorted(set(self.data) - self.seen)
        if unknown:
            raise InputError(self.at(unknown[0]), f"unknown field of {spec}", unknown[0])


def check_number(value: Any, path: str, *, nonnegative: bool = False) -> float:
    """A finite real number (bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
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
