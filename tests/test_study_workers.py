"""A study's workers die with it: SIGKILL of ``study run`` (nothing of it runs afterwards)
ends its workers through the kernel's parent-death signal; SIGTERM ends them through the
run's own handler, which also exits with 128 + 15. Either way no worker goes on solving and
writing rows, and no temporary file is left among the rows."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc and relies on Linux's parent-death signal")

PYTHON = sys.executable


def busy_study(folder: Path) -> Path:
    """Twenty variants of a generated balance instance, each allowed a few seconds: the two
    workers are still solving when the run is stopped."""
    path = folder / "busy.yaml"
    path.write_text(yaml.safe_dump({
        "base": {"generator": "balance_instance",
                 "args": {"objects": 80, "containers": 10, "formula": "SQUARES"}},
        "solver": {"workers": 1, "timeLimit": 5},
        "grid": {"solver.seed": list(range(20))}}))
    return path


def children(pid: int) -> set[int]:
    """The processes ``pid`` started (from any of its threads), from /proc."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:  # the thread ended meanwhile
            continue
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def start_with_workers(tmp_path: Path) -> tuple[subprocess.Popen, set[int], Path]:
    out = tmp_path / "out"
    process = subprocess.Popen(
        [PYTHON, "-m", "cpsat_rebalancer.cli", "study", "run", str(busy_study(tmp_path)),
         "--out", str(out), "--workers", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 90
    workers: set[int] = set()
    while time.monotonic() < deadline and process.poll() is None:
        workers = {c for c in children(process.pid) if "spawn_main" in command_line(c)}
        if len(workers) == 2:
            break
        time.sleep(0.05)
    if len(workers) != 2:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        pytest.fail(f"the study never had two workers (exit {process.returncode})")
    time.sleep(1.0)  # let them get into their first variants
    return process, children(process.pid), out


def wait_until_gone(pids: set[int], seconds: float = 10) -> set[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = {p for p in pids if alive(p)}
        if not left:
            return left
        time.sleep(0.1)
    return {p for p in pids if alive(p)}


def leftovers(out: Path) -> list[str]:
    """Anything in the results folder that is not a whole row."""
    return sorted(p.name for p in (out / "variants").glob(".*")) if out.exists() else []


def test_sigkill_of_a_study_ends_its_workers(tmp_path):
    process, started, out = start_with_workers(tmp_path)
    assert len(started) >= 2
    process.kill()  # the run alone: its workers are not in the signal
    process.wait()
    left = wait_until_gone(started)
    for pid in left:  # clean up before failing
        os.kill(pid, signal.SIGKILL)
    assert not left, "workers outlived the study: " + ", ".join(
        f"{p} ({command_line(p)[:60]})" for p in left)
    rows = sorted(p.name for p in (out / "variants").glob("*.json"))
    time.sleep(1.0)
    assert sorted(p.name for p in (out / "variants").glob("*.json")) == rows  # none writes
    assert leftovers(out) == []


def test_sigterm_of_a_study_ends_its_workers_and_reports_it(tmp_path):
    process, started, out = start_with_workers(tmp_path)
    process.terminate()
    assert process.wait(timeout=30) == 128 + signal.SIGTERM
    left = wait_until_gone(started)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left
    assert leftovers(out) == []
