"""The query layer: the one loop that turns a model (or a raw game) and its inputs into values.

Every engine (``Explainer``, ``shapley_values``, the maskers behind ``ProxySPEX`` and
``FourierSketch.fit``) evaluates through :func:`query`: work units (coalitions, (coalition,
row) pairs or sequences) are cut into chunks sized in bytes (:func:`units_per_call`), a chunk
that runs out of memory is halved and retried, a progress bar counts the units, and each
chunk's outputs are checked once (:func:`~ferroshap.query.backend.check_outputs`). Before its first
query a process lets glibc's heap thresholds adapt (:func:`warm_heap`, below).
:class:`QueryOptions` carries the keyword arguments that every engine shares for it.

The tabular game's masked model inputs are built here a chunk of (coalition, row) pairs at a
time: NumPy data are filled into host buffers by the compiled core (:class:`HostInputs`), the
next chunk's while the model runs on this one; data of other array libraries are built on their
own device (:class:`DeviceInputs`); DataFrames cell by cell
(:class:`ferroshap.query.frame_inputs.FrameInputs`).

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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ferroshap import _core
from ferroshap._core import DeviceMemoryError, InvalidArgumentError
from ferroshap.query.backend import DEFAULT_MAX_BYTES, ArrayBackend, progress_bar, workers
from ferroshap.validation import check_flag, check_int

__all__ = [
    "DEFAULT_OPTIONS",
    "WARMUP_BYTES",
    "DesignMasks",
    "DeviceInputs",
    "HostInputs",
    "Masks",
    "QueryOptions",
    "query",
    "single_output",
    "units_per_call",
    "warm_heap",
    "whole",
]  # fmt: skip


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


_COMPILED_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))

FILLED_AHEAD = 2
"""Chunks :class:`HostInputs` fills ahead of the model on the core's filler thread (each in its
own buffer besides the model's): with two, the filler starts the next fill as soon as one is
done instead of waiting for the model to take it."""


class DesignMasks:
    """The coalitions of a planned design, expanded from its bits a chunk at a time.

    :meth:`TabularGame.evaluate` and :meth:`RawGame.evaluate` take it in place of a
    ``bool[m, n]`` array, so a large design is never held as one ``m x n`` array of masks (the
    design keeps ``n / 8`` bytes per coalition). ``player_of_feature`` (feature groups) says
    which player each feature belongs to. NumPy float data never read the masks in Python: the
    compiled core fills the model inputs from the design itself, one call per chunk.

    Examples
    --------
    >>> design = _core.plan("leverage", 5, 12, seed=0)
    >>> masks = DesignMasks(design)
    >>> len(masks), bool((masks.rows(2, 5) == design.masks()[2:5]).all())
    (12, True)
    """

    def __init__(self, design: Any, player_of_feature: np.ndarray | None = None):
        self.design = design
        self.player_of_feature = player_of_feature

    def __len__(self) -> int:
        return int(self.design.n_coalitions)

    def rows(self, start: int, stop: int) -> np.ndarray:
        """The feature masks of coalitions ``start .. stop``."""
        masks = self.design.masks(start, stop)
        if self.player_of_feature is None:
            return masks
        return np.ascontiguousarray(masks[:, self.player_of_feature])


Masks = np.ndarray | DesignMasks
"""What the games evaluate: coalitions ``bool[m, n]``, or a design read in chunks."""


def whole(masks: Masks) -> np.ndarray:
    """``masks`` as one ``bool[m, n]`` array."""
    return masks.rows(0, len(masks)) if isinstance(masks, DesignMasks) else masks


class HostInputs:
    """Masked inputs of NumPy data, built into reused host buffers (``1 + FILLED_AHEAD``
    within :meth:`ahead`).

    float32 / float64 data are filled by the compiled core (parallel, one pass over memory);
    other dtypes by two NumPy copies. Within :meth:`ahead`, a planned design's chunks are filled
    by the core's :class:`~ferroshap._core.InputFiller` on a thread of its own, which takes no
    GIL: it keeps the next :data:`FILLED_AHEAD` chunks filled while the model runs on this
    thread, so on a machine with a spare core the model seldom waits for its inputs.
    """

    def __init__(self, background: np.ndarray, x_rows: np.ndarray) -> None:
        self.dtype = np.result_type(background.dtype, x_rows.dtype)
        self.background = np.ascontiguousarray(background, dtype=self.dtype)
        self.x_rows = np.ascontiguousarray(x_rows, dtype=self.dtype)
        self.itemsize = self.dtype.itemsize
        self._buffers = [np.empty(0, self.dtype) for _ in range(FILLED_AHEAD + 1)]
        self._masks = np.empty((0, background.shape[1]), bool)
        self._n_pairs = 0
        self._filling_ahead = False
        self._filler: _core.InputFiller | None = None
        self._next = (0, 0)  # the pairs of the filler's next chunk

    def prepare(self, masks: Masks, rows: np.ndarray | None) -> None:
        """Read ``masks`` (on explained rows ``rows``, see ``TabularGame.evaluate``) for the
        chunks that follow."""
        self._settle()
        designed = isinstance(masks, DesignMasks)
        # the core reads a planned design in place; anything else that plays one is read
        # through its ``masks`` a chunk at a time
        in_place = designed and isinstance(masks.design, _core.Design)
        compiled = self.dtype in _COMPILED_DTYPES and in_place
        self._design = masks if compiled else None
        self._source = masks if designed and not compiled and rows is None else None
        if not designed or (not compiled and rows is not None):
            self._masks = np.ascontiguousarray(whole(masks), dtype=bool)
        self._rows = rows
        self._n_pairs = len(masks) * len(self.x_rows) if rows is None else len(masks)

    @contextmanager
    def ahead(self) -> Iterator[None]:
        """Within the block, a planned design's chunks are filled ahead of the model
        (:data:`FILLED_AHEAD` of them, each the size of the first) on the core's own thread,
        when the caller's ``n_jobs`` limit leaves it a worker besides the model's; nothing runs
        ahead with a single worker, nor for what NumPy fills. The block stops that thread."""
        if self.dtype not in _COMPILED_DTYPES or workers() < 2:
            yield
            return
        self._filling_ahead = True
        try:
            yield
        finally:
            self._filling_ahead = False
            self._settle()

    def batch(self, start: int, stop: int) -> np.ndarray:
        """The model inputs ``[(stop - start) * B, n]`` of pairs ``start .. stop``."""
        if self._filler is not None and self._next == (start, stop):
            slot, start, stop = self._filler.take()
            self._next = self._after(start, stop)
            size = (stop - start) * self.background.size
            return self._buffers[slot][:size].reshape(-1, self.background.shape[1])
        self._settle()  # a chunk other than the one filled ahead (halved after an error)
        if not self._filling_ahead or self._design is None or stop >= self._n_pairs:
            return self._fill(start, stop)
        # this chunk here, in the last buffer; the next ones on the core's thread meanwhile
        # (its chunk k goes to buffer k % 3 once chunk k - 1 is taken: the model is then done
        # with this one)
        self._filler = self._start_filler(stop, stop - start)
        self._next = self._after(start, stop)
        return self._fill(start, stop, slot=len(self._buffers) - 1)

    def _after(self, start: int, stop: int) -> tuple[int, int]:
        """The pairs of the chunk after ``start .. stop``: the filler's next, of the same size."""
        return stop, min(self._n_pairs, 2 * stop - start)

    def _start_filler(self, start: int, chunk: int) -> _core.InputFiller:
        """A filler of the design's chunks of ``chunk`` pairs from pair ``start`` on."""
        size = min(chunk, self._n_pairs) * self.background.size
        for slot, buffer in enumerate(self._buffers):
            if buffer.size < size:
                self._buffers[slot] = np.empty(size, self.dtype)
        assert self._design is not None
        return _core.InputFiller(
            self._buffers,
            self._design.design,
            self.x_rows,
            self.background,
            n_pairs=self._n_pairs,
            start=start,
            chunk=chunk,
            player_of_feature=self._design.player_of_feature,
            row_of_pair=None if self._rows is None else np.asarray(self._rows, dtype=np.int64),
            threads=workers() - 1,  # the model has the other one
        )

    def _settle(self) -> None:
        """Stop the filler, if any (what it filled ahead is dropped, its errors too: a chunk is
        filled again when asked for)."""
        if self._filler is not None:
            self._filler.close()
            self._filler = None

    def _fill(self, start: int, stop: int, slot: int = 0) -> np.ndarray:
        n_background, n = self.background.shape
        mask_index, row_index = pair_indices(np, start, stop, len(self.x_rows), self._rows)
        if self._source is not None:  # pairs are mask-major: one contiguous run of masks
            first = int(mask_index[0])
            self._masks = np.ascontiguousarray(
                self._source.rows(first, int(mask_index[-1]) + 1), dtype=bool
            )
            mask_index = mask_index - first
        size = (stop - start) * n_background * n
        if self._buffers[slot].size < size:
            self._buffers[slot] = np.empty(size, self.dtype)
        batch = self._buffers[slot][:size].reshape(stop - start, n_background, n)
        if self.dtype in _COMPILED_DTYPES:
            design = self._design
            _core.fill_masked_inputs(
                batch.reshape(-1, n),
                self._masks if design is None else design.design,
                mask_index.astype(np.int64, copy=False),
                self.x_rows,
                row_index.astype(np.int64, copy=False),
                self.background,
                None if design is None else design.player_of_feature,
            )
        else:
            np.copyto(batch, self.background[None])
            where = self._masks[mask_index, None, :]
            np.copyto(batch, self.x_rows[row_index, None, :], where=where)
        return batch.reshape(-1, n)


class DeviceInputs:
    """Masked inputs built with the data's own array library, on its device.

    The masks travel to the device once per design (:meth:`prepare`); each chunk is built there
    with ``where`` from device-side indices, so no input crosses between host and device per
    coalition.
    """

    def __init__(self, backend: ArrayBackend, background: Any, x_rows: Any) -> None:
        self.backend, self.background, self.x_rows = backend, background, x_rows
        xp, dtype = backend.xp, background.dtype
        info = xp.finfo(dtype) if xp.isdtype(dtype, "real floating") else None
        self.itemsize = info.bits // 8 if info is not None else 8

    def prepare(self, masks: np.ndarray, rows: np.ndarray | None) -> None:
        """Send ``masks`` (and ``rows``, see ``TabularGame.evaluate``) to the device once."""
        self._masks = self.backend.asarray(np.ascontiguousarray(masks, dtype=bool))
        self._rows = None if rows is None else self.backend.asarray(rows.astype(np.int64))

    def batch(self, start: int, stop: int) -> Any:
        """The inputs ``[(stop - start) * B, n]`` of pairs ``start .. stop``, on the device."""
        xp = self.backend.xp
        n = self.background.shape[1]
        mask_index, row_index = pair_indices(
            xp, start, stop, self.x_rows.shape[0], self._rows, device=self.backend.device
        )
        inside = xp.take(self._masks, mask_index, axis=0)[:, None, :]
        rows = xp.take(self.x_rows, row_index, axis=0)[:, None, :]
        batch = xp.where(inside, rows, self.background[None, :, :])
        return xp.reshape(batch, (-1, n))


def pair_indices(
    xp: Any, start: int, stop: int, n_rows: int, rows: Any, device: Any = None
) -> tuple[Any, Any]:
    """(mask, explained row) of the pairs ``start .. stop``: mask-major over every row, or
    pair ``j`` = (mask ``j``, row ``rows[j]``) for per-row designs."""
    kwargs = {} if device is None else {"device": device}
    pairs = xp.arange(start, stop, dtype=xp.int64, **kwargs)
    if rows is None:
        return pairs // n_rows, pairs % n_rows
    return pairs, xp.take(rows, pairs, axis=0) if xp is not np else rows[pairs]
