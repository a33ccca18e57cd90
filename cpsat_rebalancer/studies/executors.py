"""Where variants run: ``local`` (a process pool over this machine's cores) or ``ray`` (an
existing Ray cluster, or a local one started on the spot). Both take a task, run
:func:`run_variant` on it, and hand back rows as they finish; ``close`` waits for the
tasks running, ``terminate`` ends them at once.

Local workers die with the process that started them: on Linux each asks the kernel for
SIGKILL when its parent ends (``prctl(PR_SET_PDEATHSIG)``), so even a SIGKILLed study
leaves no worker solving and writing. A local Ray cluster shares its driver's fate by Ray's
own means."""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from ..errors import InputError
from .variant_run import Task, run_variant

PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def die_with_parent(parent: int) -> None:
    """Worker initializer: be killed (SIGKILL) when the process ``parent`` ends, however it
    ends. Linux only; elsewhere the parent's :meth:`LocalExecutor.terminate` remains."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # no prctl here: nothing to ask for
            pass
    if os.getppid() != parent:  # the parent ended before the request took effect
        os._exit(1)


class LocalExecutor:
    """A process pool; ``spawn`` so no solver thread state is ever forked."""

    def __init__(self, workers: int):
        self.pool = ProcessPoolExecutor(max_workers=workers,
                                        mp_context=multiprocessing.get_context("spawn"),
                                        initializer=die_with_parent, initargs=(os.getpid(),))
        self.pending: dict[Future, Task] = {}

    def submit(self, task: Task) -> None:
        self.pending[self.pool.submit(run_variant, task)] = task

    def finished(self) -> list[tuple[Task, dict[str, Any]]]:
        """Wait for at least one task; return every task done by then with its row."""
        done, _ = wait(list(self.pending), return_when=FIRST_COMPLETED)
        results = []
        for future in done:
            task = self.pending.pop(future)
            try:
                row = future.result()
            except Exception as exc:  # noqa: BLE001 - a worker process died
                row = {"key": task.key, "status": "ERROR", "error": f"worker failed: {exc}"}
            results.append((task, row))
        return results

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def terminate(self) -> None:
        """End every worker now (the variants they were solving are not stored)."""
        processes = list((getattr(self.pool, "_processes", None) or {}).values())
        for process in processes:
            process.kill()
        self.pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.join(timeout=5)


class RayExecutor:
    """Ray tasks of one CPU each; ``address`` joins an existing cluster, ``None`` starts a
    local one with ``workers`` CPUs (stopped again at the end)."""

    def __init__(self, workers: int, address: str | None = None):
        try:
            import ray
        except ImportError:
            raise InputError("--executor", "ray is not installed (pip install "
                             "'cpsat-rebalancer[ray]')", "ray") from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            kwargs: dict[str, Any] = {"address": address} if address else {"num_cpus": workers}
            ray.init(ignore_reinit_error=True, include_dashboard=False, log_to_driver=False,
                     **kwargs)
        self.remote = ray.remote(num_cpus=1, max_retries=0)(run_variant)
        self.pending: dict[Any, Task] = {}

    def submit(self, task: Task) -> None:
        self.pending[self.remote.remote(task)] = task

    def finished(self) -> list[tuple[Task, dict[str, Any]]]:
        done, _ = self.ray.wait(list(self.pending), num_returns=1)
        results = []
        for ref in done:
            task = self.pending.pop(ref)
            try:
                row = self.ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - a worker died or Ray failed
                row = {"key": task.key, "status": "ERROR", "error": f"worker failed: {exc}"}
            results.append((task, row))
        return results

    def close(self) -> None:
        for ref in list(self.pending):
            self.ray.cancel(ref, force=True)
        if self.started:
            self.ray.shutdown()

    terminate = close  # pending tasks are cancelled either way


def make_executor(kind: str, workers: int, address: str | None = None):
    if kind == "local":
        if address:
            raise InputError("--address", "only the ray executor joins a cluster", address)
        return LocalExecutor(workers)
    if kind == "ray":
        return RayExecutor(workers, address)
    raise InputError("--executor", "expected local or ray", kind)
