"""The engines' threads: the pool of their parallel steps (proxy fits, support selections),
which Ctrl-C stops, and the ``n_jobs`` limit on it, on LightGBM and on the compiled core."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import Any, TypeVar

from ferroshap import _core
from ferroshap._core import InvalidArgumentError
from ferroshap.validation import check_int

__all__ = [
    "SIGNAL_POLL_SECONDS",
    "available_cpus",
    "bound_to",
    "check_n_jobs",
    "in_threads",
    "limited",
    "within_limit",
    "workers",
]

T = TypeVar("T")

SIGNAL_POLL_SECONDS = 0.05
"""How often :func:`in_threads` wakes to let Python run its signal handlers."""


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one, so a
    ``taskset`` or a container's CPU set counts), at least 1."""
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity is not None else (os.cpu_count() or 1))


_LIMIT: ContextVar[int | None] = ContextVar("ferroshap_n_jobs", default=None)
"""The ``n_jobs`` of the engine call running in this context (``None``: every available CPU)."""


def check_n_jobs(n_jobs: Any) -> int | None:
    """``n_jobs`` as the engines read it: ``None`` or ``-1`` for every available CPU, else a
    positive int. Errors name ``n_jobs``.

    Examples
    --------
    >>> check_n_jobs(None), check_n_jobs(-1), check_n_jobs(2)
    (None, None, 2)
    """
    if n_jobs is None:
        return None
    value = check_int(n_jobs, "n_jobs", -1)
    if value == 0:
        raise InvalidArgumentError(
            "n_jobs must be a positive int, or -1 / None for every CPU; got 0", argument="n_jobs"
        )
    return None if value == -1 else value


def workers() -> int:
    """Threads an engine may use now: its ``n_jobs`` (:func:`limited`), at most
    :func:`available_cpus`; every available CPU without one."""
    limit = _LIMIT.get()
    cpus = available_cpus()
    return cpus if limit is None else min(limit, cpus)


@contextmanager
def limited(n_jobs: int | None) -> Iterator[None]:
    """Within the block, the engines use at most ``n_jobs`` threads (a value of
    :func:`check_n_jobs`; ``None`` leaves them every available CPU): :func:`in_threads`'s pool,
    LightGBM's threads (:func:`ferroshap.interactions.proxy.proxy_threads`) and the compiled
    core's parallel parts (``_core.set_thread_limit``), on this thread and on the pool's."""
    token = _LIMIT.set(n_jobs)
    previous = _core.set_thread_limit(0 if n_jobs is None else n_jobs)
    try:
        yield
    finally:
        _core.set_thread_limit(previous)
        _LIMIT.reset(token)


def in_threads(calls: Sequence[Callable[[], T]]) -> list[T]:
    """The results of ``calls`` (LightGBM fits or compiled-core calls, which release the GIL),
    in order, run side by side on a thread pool of at most :func:`workers` threads, each
    within the caller's ``n_jobs`` limit (:func:`limited`).

    Ctrl-C reaches Python's main thread only, which waits here: on it the calls not started are
    dropped and those still running are told to stop (:func:`ferroshap._core.interrupt`), so the
    pool shuts down within a poll of theirs instead of when they finish.
    """
    limit = _LIMIT.get()
    with ThreadPoolExecutor(max(1, min(len(calls), workers()))) as pool:
        futures = [pool.submit(_within, limit, call) for call in calls]
        try:
            pending = set(futures)
            while pending:  # wake often: the kernel may hand SIGINT to any thread
                pending = wait(pending, timeout=SIGNAL_POLL_SECONDS).not_done
            return [future.result() for future in futures]
        except KeyboardInterrupt:
            pool.shutdown(wait=False, cancel_futures=True)
            _core.interrupt()
            raise


def within_limit(call: Callable[[], T]) -> Callable[[], T]:
    """``call``, bound to the current ``n_jobs`` limit (:func:`limited`): run later, outside the
    block (a result's standard errors, computed when first read), it keeps that limit."""
    return bound_to(_LIMIT.get(), call)


def bound_to(limit: int | None, call: Callable[[], T]) -> Callable[[], T]:
    """``call``, to run within ``limit`` threads (:func:`limited`; ``None``: every available
    CPU) on whichever thread runs it."""
    return partial(_within, limit, call)


def _within(limit: int | None, call: Callable[[], T]) -> T:
    """``call()`` on a pool thread, within the submitting thread's ``n_jobs`` ``limit``."""
    with limited(limit):
        return call()
