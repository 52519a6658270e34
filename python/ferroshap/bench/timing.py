"""The one definition of engine time that every benchmark uses.

*Engine time* is the wall time of an explainer call minus the time the model alone takes on the
same batches: the batches of one recorded call are replayed through the model, one call each, from
a reused buffer (an explainer hands the model a freshly built buffer, so the model reads its input
from cache). Explainer calls and replays are interleaved round by round, so that drifts in the
machine's load hit both alike, and the figure is the median over rounds (at least
:data:`MIN_ROUNDS`) of ``wall - replay``.

Thread counts: every benchmark runs :func:`fix_threads` first, which gives every library the same
number of threads, ``$FERROSHAP_BENCH_THREADS`` (default: all cores): the variables of
:data:`THREAD_VARIABLES` for pools not started yet (the Rust core's starts on its first use), and
``threadpoolctl`` for the BLAS and OpenMP pools already loaded.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "MIN_ROUNDS",
    "THREAD_VARIABLES",
    "BatchRecorder",
    "TimedModel",
    "engine_time",
    "fix_threads",
    "model_seconds",
    "timed",
]

MIN_ROUNDS = 5
"""Fewest interleaved rounds :func:`engine_time` accepts."""

THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "RAYON_NUM_THREADS",
)
"""Environment variables that set the thread pools of the libraries a benchmark uses."""

Model = Callable[[np.ndarray], Any]


def fix_threads() -> int:
    """Give every library ``$FERROSHAP_BENCH_THREADS`` threads (default: all cores); returns it.

    Unset variables of :data:`THREAD_VARIABLES` are set to it, and the BLAS / OpenMP pools already
    loaded are limited to it through ``threadpoolctl`` (when installed).
    """
    threads = os.environ.setdefault("FERROSHAP_BENCH_THREADS", str(os.cpu_count() or 1))
    for variable in THREAD_VARIABLES:
        os.environ.setdefault(variable, threads)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - depends on the environment
        return int(threads)
    threadpool_limits(int(threads))
    return int(threads)


def timed(fn: Callable[[], Any]) -> float:
    """Wall seconds of one call of ``fn``."""
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


class TimedModel:
    """Wraps a model; accumulates the seconds spent in it and the rows it was called on."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.seconds = 0.0
        self.rows = 0

    def __call__(self, z: np.ndarray) -> Any:
        """Call the model, timing it."""
        start = time.perf_counter()
        out = self.model(z)
        self.seconds += time.perf_counter() - start
        self.rows += len(z)
        return out


class BatchRecorder:
    """Wraps a model and records the batches (NumPy arrays or frames) it is called with, for
    :func:`model_seconds`.

    Copies of the batches are kept while they fit in ``max_bytes``; past that only their sizes
    are, and the replay reuses the largest stored batch, cut to size (fine for a model whose cost
    does not depend on the values, such as a near-free linear model).
    """

    def __init__(self, model: Model, max_bytes: int = 2**30) -> None:
        self.model = model
        self.max_bytes = max_bytes
        self.sizes: list[int] = []
        self.batches: list[np.ndarray] = []

    def __call__(self, z: np.ndarray) -> Any:
        """Record and call the model."""
        stored = sum(_nbytes(batch) for batch in self.batches)
        if len(self.batches) == len(self.sizes) and stored + _nbytes(z) <= self.max_bytes:
            self.batches.append(z.copy() if hasattr(z, "copy") else z)  # polars frames: immutable
        self.sizes.append(len(z))
        return self.model(z)

    def replay(self, skip: int = 0) -> list[np.ndarray]:
        """The recorded batches after the first ``skip`` (views of stored copies)."""
        largest = max(self.batches, key=len)
        stored = self.batches + [largest] * (len(self.sizes) - len(self.batches))
        return [batch[:size] for batch, size in zip(stored, self.sizes, strict=True)][skip:]


def _nbytes(batch: Any) -> int:
    """Bytes of a NumPy array or a pandas / polars frame (their own estimates)."""
    if hasattr(batch, "nbytes"):
        return int(batch.nbytes)
    if hasattr(batch, "estimated_size"):  # polars
        return int(batch.estimated_size())
    return int(batch.memory_usage(deep=True).sum())  # pandas


def model_seconds(model: Model, batches: Sequence[Any]) -> float:
    """Seconds the model alone takes on ``batches``, one call each.

    NumPy batches are first copied (untimed) into one reused buffer; other batches (frames) are
    passed as they are.
    """
    arrays = all(isinstance(batch, np.ndarray) for batch in batches)
    buffer = np.empty_like(max(batches, key=len)) if arrays and batches else None
    total = 0.0
    for batch in batches:
        if buffer is not None:
            view = buffer[: len(batch)]
            np.copyto(view, batch)
            batch = view
        total += timed(lambda batch=batch: model(batch))
    return total


def engine_time(
    explain: Callable[[Model], Any], model: Model, rounds: int = MIN_ROUNDS
) -> dict[str, float]:
    """Engine time of ``explain(model)`` by the definition of this module.

    Parameters
    ----------
    explain
        Runs the explainer once on the model it is given (it must send the model the same
        batches on every call, e.g. a fixed seed).
    model
        The model to explain.
    rounds
        Interleaved rounds of (explainer call, replay of its batches); at least
        :data:`MIN_ROUNDS`.

    Returns
    -------
    dict
        ``engine_s`` (median over rounds of wall minus replay), ``wall_s`` and ``model_s``
        (medians of the call's wall time and of the replay), ``rounds``, and for diagnosis
        ``inside_s`` (median of the model's own time inside the call) and ``own_s`` (median of
        wall minus ``inside_s``: the engine's own work, without the model running slower or
        faster on the engine's batches than on their replay, e.g. from page faults).

    Examples
    --------
    >>> import numpy as np, ferroshap as fs
    >>> bg, X = np.zeros((1, 6)), np.ones((2, 6))
    >>> model = lambda z: np.sin(z).sum(axis=1)
    >>> t = engine_time(lambda f: fs.Explainer(f, bg, method="leverage", budget=32)(X), model)
    >>> sorted(t), t["rounds"]
    (['engine_s', 'inside_s', 'model_s', 'own_s', 'rounds', 'wall_s'], 5)
    """
    if rounds < MIN_ROUNDS:
        raise ValueError(f"rounds must be at least {MIN_ROUNDS}, got {rounds}")
    recorder = BatchRecorder(model)
    explain(recorder)
    batches = recorder.replay()
    walls, replays, insides = [], [], []
    for _ in range(rounds):
        inside = TimedModel(model)
        walls.append(timed(lambda inside=inside: explain(inside)))
        insides.append(inside.seconds)
        replays.append(model_seconds(model, batches))
    return {
        "engine_s": statistics.median(w - r for w, r in zip(walls, replays, strict=True)),
        "wall_s": statistics.median(walls),
        "model_s": statistics.median(replays),
        "rounds": rounds,
        "inside_s": statistics.median(insides),
        "own_s": statistics.median(w - i for w, i in zip(walls, insides, strict=True)),
    }
