"""Results on disk: one JSON row per variant (written atomically, named by the variant's
key), assembled into one table. A rerun finds the rows already there and skips them; an
interrupted run loses only the variants that were in flight."""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

ROWS = "variants"
_UMASK = os.umask(0)
os.umask(_UMASK)


def variant_key(fingerprint: str, params: dict[str, Any]) -> str:
    """Stable across runs and machines: the study's settings and the variant's parameters."""
    text = json.dumps({"study": fingerprint, "params": params}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def write_atomically(path: Path, data: bytes) -> None:
    """The whole file or nothing: a temporary file beside it, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, 0o666 & ~_UMASK)  # mkstemp makes it private; a result is not
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


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
