"""The query layer: the one loop that turns a model (or a raw game) and its inputs into values.

Every engine (``Explainer``, ``shapley_values``, the maskers behind ``ProxySPEX`` and
``FourierSketch.fit``) evaluates through :func:`query`: work units (coalitions, (coalition,
row) pairs or sequences) are cut into chunks sized in bytes (:func:`units_per_call`), a chunk
that runs out of memory is halved and retried, a progress bar counts the units, and each
chunk's outputs are checked once (:func:`~ferroshap.query.backend.check_outputs`). Before its first
query a process lets glibc's heap thresholds adapt (:func:`warm_heap`, below).
:class:`QueryOptions` carries the keyword arguments that every engine shares for it.

glibc's adaptive heap thresholds are raised once per process before the first model query.
glibc's ``malloc`` serves a request above its *mmap threshold* (128 KiB at start) with fresh
pages from the kernel, and gives free memory at the top of its heap back to the kernel once it
exceeds its *trim threshold*. Both adapt: freeing an mmap-served block of ``s`` bytes (up to
32 MiB) raises the mmap threshold to ``s`` and the trim threshold to ``2 s``. A process that
has never freed a large block keeps the low start values, and a model that copies each batch it
is given (a scikit-learn pipeline turning a DataFrame into arrays) then writes its copies into
fresh pages on every call: thousands of page faults per call, 10-20 % of such a model's time,
which vanish once the thresholds have adapted.

:func:`warm_heap` lets them adapt once, before ferroshap first calls a model: it allocates and
frees one untouched block of :data:`WARMUP_BYTES` (no page of it is written). This is the state
any process reaches after it has once freed a 32 MiB array; glibc keeps adapting afterwards, and
nothing else about the allocator changes. Set ``FERROSHAP_HEAP_WARMUP=0`` to skip it. On other C
libraries it does nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ferroshap._core import DeviceMemoryError, InvalidArgumentError
from ferroshap.query.backend import DEFAULT_MAX_BYTES, ArrayBackend, progress_bar
from ferroshap.validation import check_flag, check_int

__all__ = [
    "DEFAULT_OPTIONS",
    "WARMUP_BYTES",
    "QueryOptions",
    "query",
    "single_output",
    "units_per_call",
    "warm_heap",
]


@dataclass(frozen=True)
class QueryOptions:
    """How an engine batches its model calls: the shared ``batch_size``, ``max_bytes`` and
    ``progress`` keyword arguments, validated.

    Attributes
    ----------
    batch_size
        Model rows per call (coalitions per call for a raw game, sequences for a sketch), or
        ``None`` to size calls by bytes.
    max_bytes
        Cap on the bytes of model inputs built at once.
    progress
        Show a tqdm progress bar.

    Examples
    --------
    >>> QueryOptions.checked(batch_size=None, max_bytes=2**20, progress=False).max_bytes
    1048576
    """

    batch_size: int | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    progress: bool = False

    @classmethod
    def checked(cls, batch_size: Any, max_bytes: Any, progress: Any) -> QueryOptions:
        """Validated options; errors name the argument."""
        return cls(
            None if batch_size is None else check_int(batch_size, "batch_size", 1),
            check_int(max_bytes, "max_bytes", 1),
            check_flag(progress, "progress"),
        )


DEFAULT_OPTIONS = QueryOptions()
"""Calls sized by bytes (at most :data:`~ferroshap.query.backend.DEFAULT_MAX_BYTES`), no
progress bar."""


def units_per_call(
    options: QueryOptions, unit_bytes: int, unit_rows: int, chunk_bytes: int | None = None
) -> int:
    """Work units per model call (at least one).

    A unit is ``unit_rows`` model input rows taking ``unit_bytes`` bytes. ``batch_size``
    decides when given; otherwise the units fit in ``chunk_bytes`` (default ``max_bytes``).

    Examples
    --------
    >>> units_per_call(QueryOptions(), unit_bytes=800, unit_rows=10, chunk_bytes=8000)
    10
    >>> units_per_call(QueryOptions(batch_size=35), unit_bytes=800, unit_rows=10)
    3
    """
    if options.batch_size is not None:
        return max(1, options.batch_size // unit_rows)
    budget = options.max_bytes if chunk_bytes is None else min(chunk_bytes, options.max_bytes)
    return max(1, budget // max(1, unit_bytes))


def query(
    n_units: int,
    per_call: int,
    chunk_values: Callable[[int, int], np.ndarray],
    *,
    progress: bool,
    desc: str,
    unit_rows: int = 1,
) -> np.ndarray:
    """Values ``float64 [n_units, k]`` of ``chunk_values(start, stop)`` over chunks of at most
    ``per_call`` units.

    A chunk that raises an out-of-memory error (host ``MemoryError``, CUDA or CuPy) is halved
    and retried; :class:`~ferroshap.DeviceMemoryError` is raised when a chunk of one
    unit (``unit_rows`` model rows) still fails. ``chunk_values`` returns ``[stop - start, k]``
    with the same ``k`` for every chunk.

    Examples
    --------
    >>> query(5, 2, lambda a, b: np.arange(a, b, dtype=float)[:, None], progress=False, desc="")
    array([[0.],
           [1.],
           [2.],
           [3.],
           [4.]])
    """
    warm_heap()  # once per process: models' copies of their inputs reuse warm pages
    out: np.ndarray | None = None
    bar = progress_bar(n_units, progress, desc=desc)
    start = 0
    try:
        while start < n_units:
            stop = min(start + per_call, n_units)
            try:
                values = chunk_values(start, stop)
            except Exception as err:
                if not ArrayBackend.is_out_of_memory(err):
                    raise
                per_call = _halved(per_call, unit_rows, err)
                continue
            if out is None:
                out = np.empty((n_units, values.shape[1]))
            out[start:stop] = values
            bar.update(stop - start)
            start = stop
    finally:
        bar.close()
    return np.empty((0, 1)) if out is None else out


def _halved(per_call: int, unit_rows: int, error: BaseException) -> int:
    if per_call > 1:
        return per_call // 2
    raise DeviceMemoryError(
        f"batch_size: the model ran out of memory ({type(error).__name__}) even on a chunk of "
        f"one unit ({unit_rows} model rows); use fewer background rows or free device memory"
    ) from error


def single_output(values: np.ndarray, what: str, per: str, argument: str) -> np.ndarray:
    """Column 0 of ``values [m, k]`` as a contiguous ``[m]``, or an error saying that ``what``
    (``"the game"``, ``"model"``) must return one value per ``per`` (``"coalition"``, ...),
    with ``argument`` as the error's ``.argument``. When that is ``"output_index"`` (a model
    the caller may pick one output of), the message says so.

    Examples
    --------
    >>> single_output(np.ones((2, 1)), "the game", "coalition", "game")
    array([1., 1.])
    """
    if values.ndim != 2 or values.shape[1] != 1:
        hint = "; pick one output with output_index=" if argument == "output_index" else ""
        raise InvalidArgumentError(
            f"{what} must return one value per {per} ([m] or [m, 1]), got shape "
            f"{values.shape}{hint}",
            argument=argument,
        )
    return np.ascontiguousarray(values[:, 0])


WARMUP_BYTES = 32 * 2**20 - 2**16
"""Bytes of the block :func:`warm_heap` allocates and frees: just under glibc's 32 MiB cap on
the adaptive mmap threshold (64-bit), so that freeing it raises the threshold to its size."""

_warmed = False


def _is_glibc() -> bool:
    """Whether this process runs on glibc."""
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (AttributeError, ValueError, OSError):  # no confstr, or not a GNU system
        return False


def warm_heap() -> bool:
    """Raise glibc's adaptive mmap and trim thresholds once per process; returns whether this
    call did (``False`` when done before, turned off by ``FERROSHAP_HEAP_WARMUP=0``, or not on
    glibc).

    Examples
    --------
    >>> warm_heap() in (True, False)
    True
    >>> warm_heap()
    False
    """
    global _warmed
    if _warmed:
        return False
    _warmed = True
    if os.environ.get("FERROSHAP_HEAP_WARMUP", "1") == "0" or not _is_glibc():
        return False
    block = np.empty(WARMUP_BYTES, np.uint8)  # never written: no page is touched
    del block
    return True
