"""Where the engines' work runs, shared by all of them: arrays (input conversion, validation,
device placement), progress bars, and the CPU threads of their parallel steps (the chunked query
loop itself is :mod:`ferroshap.query.loop`).

Inputs (NumPy arrays, nested lists, polars or pandas DataFrames) become 2-D NumPy arrays that keep
the user's dtype, so a float32 model is called with float32 batches. Arrays of another library
(PyTorch, CuPy, JAX or any array-API library) stay in it and on their device: an
:class:`ArrayBackend` builds masked inputs there and brings only model outputs back to the host.

Parallel steps (proxy fits, support selections) run on a pool of threads that Ctrl-C stops;
an engine's ``n_jobs`` limits it, LightGBM and the compiled core.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import Any, Protocol, TypeVar

import numpy as np

from ferroshap import _core
from ferroshap._core import InvalidArgumentError, InvalidTypeError
from ferroshap.validation import check_int

__all__ = [
    "CPU_CHUNK_BYTES", "DEFAULT_MAX_BYTES", "SIGNAL_POLL_SECONDS", "ArrayBackend", "Progress",
    "as_2d_array", "available_cpus", "bound_to", "check_finite", "check_n_jobs", "check_outputs",
    "check_outputs_shape", "in_threads", "limited", "progress_bar", "to_host", "to_numpy",
    "within_limit", "workers",
]  # fmt: skip

DEFAULT_MAX_BYTES = 256 * 2**20
"""Default cap on the bytes of masked model inputs built at once (256 MiB)."""

CPU_CHUNK_BYTES = 4 * 2**20
"""Bytes of masked inputs per model call when no ``batch_size`` is given (capped by
``max_bytes``): cache-sized, yet thousands of rows per call; docs/solver.md, "Chunk size"."""

DEVICE_MEMORY_SHARE = 4
"""On an accelerator with readable free memory, a chunk of masked inputs takes at most
``1 / DEVICE_MEMORY_SHARE`` of it (the model's activations need the rest)."""

_NUMERIC_KINDS = "biuf"


def _is_foreign_array(data: Any) -> bool:
    """An array of another array library than NumPy (torch, cupy, jax, array-api objects)."""
    if isinstance(data, np.ndarray) or not hasattr(data, "shape"):
        return False
    if hasattr(data, "__array_namespace__"):
        return True
    module = type(data).__module__.split(".")[0]
    return module in {"torch", "cupy", "jax", "jaxlib"}


class ArrayBackend:
    """The array library and device where a model's inputs live.

    Built from an input array with :meth:`of`. For NumPy the masked inputs are filled by the
    compiled core; for any other library they are built with that library's own ``where`` on the
    array's device, and only the (background-averaged) outputs travel back, as float64, once per
    chunk.

    Attributes
    ----------
    xp
        The array-API namespace (``None`` for NumPy).
    device
        The device of the inputs (``None`` for NumPy).
    library
        ``"numpy"``, ``"torch"``, ``"cupy"``, ``"jax"`` or ``"array-api"``.
    """

    def __init__(self, xp: Any, device: Any, library: str) -> None:
        self.xp, self.device, self.library = xp, device, library

    @classmethod
    def of(cls, array: Any) -> ArrayBackend:
        """The backend of ``array``.

        Examples
        --------
        >>> ArrayBackend.of(np.zeros(3)).library
        'numpy'
        """
        if not _is_foreign_array(array):
            return cls(None, None, "numpy")
        import array_api_compat

        xp = array_api_compat.array_namespace(array)
        module = type(array).__module__.split(".")[0]
        library = module if module in {"torch", "cupy"} else "array-api"
        if module in {"jax", "jaxlib"}:
            library = "jax"
        return cls(xp, array_api_compat.device(array), library)

    @property
    def is_numpy(self) -> bool:
        """Whether inputs are plain NumPy arrays."""
        return self.xp is None

    def same_as(self, other: ArrayBackend) -> bool:
        """Whether ``other`` is the same library on the same device."""
        return self.library == other.library and str(self.device) == str(other.device)

    def describe(self) -> str:
        """``"numpy"`` or ``"torch on cuda:0"``, for messages."""
        return self.library if self.is_numpy else f"{self.library} on {self.device}"

    def asarray(self, array: np.ndarray, dtype: Any = None) -> Any:
        """Copy a host array to this backend's device (one transfer)."""
        if self.is_numpy:
            return np.asarray(array, dtype=dtype)
        return self.xp.asarray(array, dtype=dtype, device=self.device)

    @property
    def on_host(self) -> bool:
        """Whether arrays of this backend live in host memory (NumPy, or a CPU device)."""
        return self.is_numpy or "cpu" in str(self.device).lower()

    def chunk_bytes(self, max_bytes: int) -> int:
        """Bytes of masked inputs per model call: cache-sized on a CPU, as much as ``max_bytes``
        and a share of the free memory allow on an accelerator."""
        if self.on_host:
            return min(max_bytes, CPU_CHUNK_BYTES)
        free = self.free_bytes()
        return max_bytes if free is None else min(max_bytes, free // DEVICE_MEMORY_SHARE)

    def free_bytes(self) -> int | None:
        """Free accelerator memory, where the library can tell (CUDA via torch or cupy)."""
        try:
            if self.library == "torch" and getattr(self.device, "type", "") == "cuda":
                import torch

                return int(torch.cuda.mem_get_info(self.device)[0])
            if self.library == "cupy":
                import cupy

                return int(cupy.cuda.runtime.memGetInfo()[0])
        except Exception:
            return None
        return None

    @staticmethod
    def is_out_of_memory(error: BaseException) -> bool:
        """Whether ``error`` is the host or a device running out of memory."""
        name = type(error).__name__
        return (
            isinstance(error, MemoryError)
            or name in {"OutOfMemoryError", "OutOfMemory"}
            or (isinstance(error, RuntimeError) and "out of memory" in str(error).lower())
        )

    @contextlib.contextmanager
    def inference(self) -> Iterator[None]:
        """No gradient tracking around model calls (``torch.inference_mode`` for PyTorch)."""
        if self.library == "torch":
            import torch

            with torch.inference_mode():
                yield
        else:
            yield


def as_2d_array(data: Any, name: str) -> tuple[np.ndarray, list[str] | None]:
    """Convert ``data`` to a non-empty numeric 2-D array ``[rows, features]``.

    Parameters
    ----------
    data
        A NumPy array, a nested sequence, or a polars / pandas DataFrame. A 1-D input is one row.
    name
        The argument's name, used in error messages.

    Returns
    -------
    array, feature_names
        The array in the input's own dtype (copied only when needed) and the DataFrame's column
        names, or ``None`` when the input has no column names.

    Examples
    --------
    >>> import numpy as np
    >>> as_2d_array(np.zeros(3, np.float32), "X")[0].shape
    (1, 3)
    """
    if _is_foreign_array(data):
        return _foreign_2d(data, name), None
    names = None
    if hasattr(data, "columns") and hasattr(data, "to_numpy"):  # polars or pandas DataFrame
        names = [str(column) for column in data.columns]
        data = data.to_numpy()
    array = np.asarray(data)
    if array.dtype.kind not in _NUMERIC_KINDS:
        raise InvalidTypeError(
            f"{name} must hold numbers (bool, integer or float), got dtype {array.dtype}",
            argument=name,
        )
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise InvalidArgumentError(
            f"{name} must be 1-D (one row) or 2-D [rows, features], got shape {array.shape}",
            argument=name,
        )
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise InvalidArgumentError(
            f"{name} must have at least one row and one feature, got shape {array.shape}",
            argument=name,
        )
    return array, names


def _foreign_2d(data: Any, name: str) -> Any:
    """Shape checks of :func:`as_2d_array` for an array that stays in its own library."""
    import array_api_compat

    xp = array_api_compat.array_namespace(data)
    if not (xp.isdtype(data.dtype, "numeric") or xp.isdtype(data.dtype, "bool")):
        raise InvalidTypeError(f"{name} must hold numbers, got dtype {data.dtype}", argument=name)
    if data.ndim == 1:
        data = xp.reshape(data, (1, -1))
    if data.ndim != 2 or data.shape[0] == 0 or data.shape[1] == 0:
        raise InvalidArgumentError(
            f"{name} must be 1-D (one row) or 2-D [rows, features] with at least one row and "
            f"feature, got shape {tuple(data.shape)}",
            argument=name,
        )
    return data


def check_finite(array: Any, name: str, argument: str | None = None) -> None:
    """Raise :class:`InvalidArgumentError` naming ``name`` if ``array`` has NaN or inf entries;
    its ``.argument`` is ``argument`` (default ``name``).

    Works on NumPy arrays and on arrays of any array-API library (checked on their device).

    Examples
    --------
    >>> check_finite(np.array([1.0, 2.0]), "X")  # finite: returns None
    """
    if _is_foreign_array(array):
        import array_api_compat

        xp = array_api_compat.array_namespace(array)
        if xp.isdtype(array.dtype, "real floating") and not bool(xp.all(xp.isfinite(array))):
            raise InvalidArgumentError(
                f"{name} contains NaN or infinite values", argument=argument or name
            )
        return
    if array.dtype.kind != "f":
        return
    bad = ~np.isfinite(array)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise InvalidArgumentError(
            f"{name} contains {int(bad.sum())} NaN or infinite value(s), first at index {first}",
            argument=argument or name,
        )


def to_numpy(array: Any) -> np.ndarray:
    """A NumPy array (on the host, in its own dtype, without gradients) of any library's array.

    Examples
    --------
    >>> to_numpy([1, 2]).dtype
    dtype('int64')
    """
    if isinstance(array, np.ndarray):
        return array
    module = type(array).__module__.split(".")[0]
    if module == "torch":
        return np.asarray(array.detach().cpu().numpy())
    if module == "cupy":
        return np.asarray(array.get())
    if _is_foreign_array(array) and hasattr(array, "__dlpack__"):
        return np.from_dlpack(array)
    return np.asarray(array)


def to_host(array: Any) -> np.ndarray:
    """:func:`to_numpy` as float64.

    Examples
    --------
    >>> to_host([1, 2]).dtype
    dtype('float64')
    """
    return to_numpy(array).astype(np.float64, copy=False)


def check_outputs(outputs: Any, expected_rows: int, name: str) -> np.ndarray:
    """Validate what a model or game returned for ``expected_rows`` inputs; return float64.

    Accepts ``[expected_rows]`` or ``[expected_rows, k]`` and raises
    :class:`InvalidArgumentError` naming ``name`` for any other shape or non-finite values.

    Examples
    --------
    >>> check_outputs([1, 2], 2, "model").dtype
    dtype('float64')
    """
    try:
        values = to_host(outputs)
    except (TypeError, ValueError) as err:
        raise InvalidTypeError(
            f"{name} must return numbers convertible to float64, got {type(outputs).__name__}",
            argument=name,
        ) from err
    check_outputs_shape(values.shape, expected_rows, name)
    check_finite(values, f"{name} output", name)
    return values


def check_outputs_shape(shape: tuple[int, ...], expected_rows: int, name: str) -> None:
    """Raise :class:`InvalidArgumentError` naming ``name`` unless ``shape`` is
    ``[expected_rows]`` or ``[expected_rows, k]``.

    Examples
    --------
    >>> check_outputs_shape((4, 2), 4, "model")  # fine: returns None
    """
    if len(shape) not in (1, 2) or shape[0] != expected_rows:
        raise InvalidArgumentError(
            f"{name} must return an array of shape [{expected_rows}] or [{expected_rows}, k] "
            f"for {expected_rows} input rows, got shape {tuple(shape)}",
            argument=name,
        )


class Progress(Protocol):
    """What the evaluation loop needs from a progress bar."""

    def update(self, n: int) -> Any: ...

    def close(self) -> Any: ...


class _Silent:
    """A progress bar that shows nothing."""

    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, enabled: bool, desc: str) -> Progress:
    """A tqdm progress bar over ``total`` units when ``enabled``, else a silent stand-in.

    Raises ``ImportError`` with installation advice when ``enabled`` and tqdm is missing.

    Examples
    --------
    >>> bar = progress_bar(10, enabled=False, desc="coalitions")
    >>> bar.update(10); bar.close()
    """
    if not enabled:
        return _Silent()
    try:
        from tqdm.auto import tqdm  # type: ignore[import-untyped]
    except ImportError as err:
        raise ImportError(
            "progress=True needs tqdm: install it with `pip install tqdm` "
            "(or `pip install 'ferroshap[progress]'`)"
        ) from err
    bar: Progress = tqdm(total=total, desc=desc)
    return bar


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
