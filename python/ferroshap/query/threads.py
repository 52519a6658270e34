"""The thread pool of the engines' parallel steps (proxy fits, support selections), which
Ctrl-C stops."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

from ferroshap import _core

__all__ = ["SIGNAL_POLL_SECONDS", "available_cpus", "in_threads"]

T = TypeVar("T")

SIGNAL_POLL_SECONDS = 0.05
"""How often :func:`in_threads` wakes to let Python run its signal handlers."""


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one, so a
    ``taskset`` or a container's CPU set counts), at least 1."""
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity is not None else (os.cpu_count() or 1))


def in_threads(calls: Sequence[Callable[[], T]]) -> list[T]:
    """The results of ``calls`` (LightGBM fits or compiled-core calls, which release the GIL),
    in order, run side by side on a thread pool of at most one thread per available CPU
    (:func:`available_cpus`).

    Ctrl-C reaches Python's main thread only, which waits here: on it the calls not started are
    dropped and those still running are told to stop (:func:`ferroshap._core.interrupt`), so the
    pool shuts down within a poll of theirs instead of when they finish.
    """
    workers = max(1, min(len(calls), available_cpus()))
    with ThreadPoolExecutor(workers) as pool:
        futures = [pool.submit(call) for call in calls]
        try:
            pending = set(futures)
            while pending:  # wake often: the kernel may hand SIGINT to any thread
                pending = wait(pending, timeout=SIGNAL_POLL_SECONDS).not_done
            return [future.result() for future in futures]
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            _core.interrupt()
            raise
