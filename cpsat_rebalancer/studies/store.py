"""Results on disk: one JSON row per variant (written atomically, named by the variant's
key), assembled into one table. A rerun finds the rows already there and skips them; an
interrupted run loses only the variants that were in flight."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from .. import files

ROWS = "variants"


def variant_key(fingerprint: str, params: dict[str, Any]) -> str:
    """Stable across runs and machines: the study's settings and the variant's parameters."""
    text = json.dumps({"study": fingerprint, "params": params}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def write_atomically(path: Path, data: bytes) -> None:
    """The whole file or nothing (see :mod:`cpsat_rebalancer.files`), its folder made first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_atomically(path, data)


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_row(out: Path, row: dict[str, Any]) -> None:
    text = json.dumps({k: _clean(v) for k, v in row.items()}, sort_keys=True, default=str)
    write_atomically(out / ROWS / f"{row['key']}.json", text.encode())


def read_row(out: Path, key: str) -> dict[str, Any] | None:
    path = out / ROWS / f"{key}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def stored_keys(out: Path) -> set[str]:
    folder = out / ROWS
    if not folder.is_dir():
        return set()
    return {p.stem for p in folder.glob("*.json")}


def write_table(frame: pd.DataFrame, path: Path) -> None:
    """Parquet (by extension) or CSV, atomically."""
    if path.suffix == ".parquet":
        write_atomically(path, frame.to_parquet(index=False))
    else:
        write_atomically(path, frame.to_csv(index=False).encode())


def assemble(out: Path, keys: list[str]) -> pd.DataFrame:
    """The table of the given variants, in the given order (missing ones are skipped)."""
    rows = [row for row in (read_row(out, k) for k in keys) if row is not None]
    return pd.DataFrame(rows)
