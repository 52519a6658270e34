"""Value functions ("games") that turn a model and its inputs into coalition values.

A game maps a batch of coalitions, ``masks: bool[m, n]`` with ``masks[j, i]`` true when player
``i`` is in coalition ``j``, to a float64 table ``[m, R]``. Each of the ``R`` columns is one
explained quantity; for several rows and outputs the columns are row-major over
``(row, output)``, i.e. column ``r * k + o`` holds output ``o`` of explained row ``r``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ferroshap import _core, memory
from ferroshap.errors import InvalidArgumentError
from ferroshap.query.backend import ArrayBackend, check_outputs, check_outputs_shape
from ferroshap.query.frame_inputs import FrameInputs
from ferroshap.query.frames import FrameSchema, is_frame
from ferroshap.query.loop import DEFAULT_OPTIONS, QueryOptions, query, units_per_call

__all__ = ["LINKS", "DesignMasks", "RawGame", "TabularGame", "apply_link"]

_COMPILED_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


LINKS = ("identity", "logit")
"""Link functions applied to the background-averaged model output: ``v(S) = link(mean_b f)``."""


def apply_link(values: np.ndarray, link: str) -> np.ndarray:
    """``values`` through the link function ``link`` (one of :data:`LINKS`).

    Examples
    --------
    >>> apply_link(np.array([0.5]), "logit")
    array([0.])
    """
    if link == "identity":
        return values
    if np.any((values <= 0.0) | (values >= 1.0)):
        raise InvalidArgumentError(
            "link='logit' needs model outputs strictly between 0 and 1 (probabilities), got "
            f"values in [{values.min():.3g}, {values.max():.3g}]"
        )
    return np.log(values / (1.0 - values))


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


def _whole(masks: Masks) -> np.ndarray:
    """``masks`` as one ``bool[m, n]`` array."""
    return masks.rows(0, len(masks)) if isinstance(masks, DesignMasks) else masks


class _HostInputs:
    """Masked inputs of NumPy data, built into one reused host buffer.

    float32 / float64 data are filled by the compiled core (parallel, one pass over memory);
    other dtypes by two NumPy copies.
    """

    def __init__(self, background: np.ndarray, x_rows: np.ndarray) -> None:
        self.dtype = np.result_type(background.dtype, x_rows.dtype)
        self.background = np.ascontiguousarray(background, dtype=self.dtype)
        self.x_rows = np.ascontiguousarray(x_rows, dtype=self.dtype)
        self.itemsize = self.dtype.itemsize
        self._buffer = np.empty(0, self.dtype)
        self._masks = np.empty((0, background.shape[1]), bool)

    def prepare(self, masks: Masks, rows: np.ndarray | None) -> None:
        designed = isinstance(masks, DesignMasks)
        # the core reads a planned design in place; anything else that plays one is read
        # through its ``masks`` a chunk at a time
        in_place = designed and isinstance(masks.design, _core.Design)
        compiled = self.dtype in _COMPILED_DTYPES and in_place
        self._design = masks if compiled else None
        self._source = masks if designed and not compiled and rows is None else None
        if not designed or (not compiled and rows is not None):
            self._masks = np.ascontiguousarray(_whole(masks), dtype=bool)
        self._rows = rows

    def batch(self, start: int, stop: int) -> np.ndarray:
        n_background, n = self.background.shape
        mask_index, row_index = _pair_indices(np, start, stop, len(self.x_rows), self._rows)
        if self._source is not None:  # pairs are mask-major: one contiguous run of masks
            first = int(mask_index[0])
            self._masks = np.ascontiguousarray(
                self._source.rows(first, int(mask_index[-1]) + 1), dtype=bool
            )
            mask_index = mask_index - first
        size = (stop - start) * n_background * n
        if self._buffer.size < size:
            self._buffer = np.empty(size, self.dtype)
        batch = self._buffer[:size].reshape(stop - start, n_background, n)
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


class _DeviceInputs:
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
        self._masks = self.backend.asarray(np.ascontiguousarray(masks, dtype=bool))
        self._rows = None if rows is None else self.backend.asarray(rows.astype(np.int64))

    def batch(self, start: int, stop: int) -> Any:
        xp = self.backend.xp
        n = self.background.shape[1]
        mask_index, row_index = _pair_indices(
            xp, start, stop, self.x_rows.shape[0], self._rows, device=self.backend.device
        )
        inside = xp.take(self._masks, mask_index, axis=0)[:, None, :]
        rows = xp.take(self.x_rows, row_index, axis=0)[:, None, :]
        batch = xp.where(inside, rows, self.background[None, :, :])
        return xp.reshape(batch, (-1, n))


def _pair_indices(
    xp: Any, start: int, stop: int, n_rows: int, rows: Any, device: Any = None
) -> tuple[Any, Any]:
    """(mask, explained row) of the pairs ``start .. stop``: mask-major over every row, or
    pair ``j`` = (mask ``j``, row ``rows[j]``) for per-row designs."""
    kwargs = {} if device is None else {"device": device}
    pairs = xp.arange(start, stop, dtype=xp.int64, **kwargs)
    if rows is None:
        return pairs // n_rows, pairs % n_rows
    return pairs, xp.take(rows, pairs, axis=0) if xp is not np else rows[pairs]


class TabularGame:
    """The interventional game of a tabular model, for several explained rows at once.

    ``v_x(S) = link(mean_b f(x_S, b_notS))``: features in ``S`` come from the explained row
    ``x``, the others from each background row ``b``, and the model outputs are averaged over
    the background. A single-baseline game is this game with a one-row ``background``.

    Masked inputs are built in chunks of (coalition, row) pairs across all explained rows, in
    the data's own array library and on its device (NumPy data through the compiled core). A
    chunk holds ``batch_size`` model rows, or else as many as
    :meth:`~ferroshap.query.backend.ArrayBackend.chunk_bytes`
    allows (cache-sized on a CPU, a share of
    free memory on an accelerator, never more than ``max_bytes``). The model is called once per
    chunk and must not keep a reference to its input, which the next chunk may overwrite. A
    chunk that runs out of memory is halved and retried. Only background-averaged outputs come
    back to the host, as float64.

    Parameters
    ----------
    model
        Callable on a 2-D batch ``[batch, n]`` returning ``[batch]`` or ``[batch, k]``.
    background
        Background rows ``[B, n]``, validated (finite, non-empty): a NumPy array, an array of
        another array-API library (then ``x_rows`` must be of the same library and device), or
        a pandas / polars DataFrame masked cell by cell (then ``x_rows`` is a frame of the same
        schema and the model receives frames, see
        :class:`ferroshap.query.frame_inputs.FrameInputs`).
    x_rows
        Explained rows ``[rows, n]``, validated, same number of features.
    options
        ``batch_size`` (model rows per call, rounded down to whole coalitions, at least one;
        overrides the byte sizing), ``max_bytes`` (cap on the bytes of masked inputs per call)
        and ``progress`` (a tqdm bar over the (coalition, row) pairs).
    link
        One of :data:`LINKS`, applied after averaging over the background.

    Attributes
    ----------
    n_players : int
        Number of features ``n``.
    output_shape : tuple[int, ...]
        ``()`` for a model returning ``[batch]``, ``(k,)`` for ``[batch, k]``.
    empty_value : numpy.ndarray
        ``v(∅) = link(mean_b f(b))``, shape ``output_shape``; the same for every explained row.

    Examples
    --------
    >>> import numpy as np
    >>> game = TabularGame(lambda z: z.sum(1), np.zeros((1, 3)), np.ones((2, 3)))
    >>> game.evaluate(np.array([[True, False, True]]))
    array([[2., 2.]])
    """

    def __init__(
        self,
        model: Callable[[Any], Any],
        background: Any,
        x_rows: Any,
        *,
        options: QueryOptions = DEFAULT_OPTIONS,
        link: str = "identity",
    ) -> None:
        self._model = model
        self._backend = ArrayBackend.of(background)
        self._inputs: _HostInputs | _DeviceInputs | FrameInputs
        if is_frame(background):
            self._inputs = FrameInputs(FrameSchema.of(background), background, x_rows)
        elif self._backend.is_numpy:
            self._inputs = _HostInputs(background, x_rows)
        else:
            self._inputs = _DeviceInputs(self._backend, background, x_rows)
        self._n_background = int(background.shape[0])
        self._n_rows = int(x_rows.shape[0])
        self._options = options
        self._link = link
        self.n_players = int(background.shape[1])
        empty = check_outputs(self._call(self._inputs.background), self._n_background, "model")
        self.output_shape: tuple[int, ...] = empty.shape[1:]
        self.empty_value = apply_link(empty.mean(axis=0), link)

    @property
    def n_rows(self) -> int:
        """Number of explained rows."""
        return self._n_rows

    def evaluate(self, masks: Masks, rows: np.ndarray | None = None) -> np.ndarray:
        """Coalition values for the explained rows.

        Parameters
        ----------
        masks
            Coalitions ``bool[m, n]``, or a :class:`DesignMasks` (NumPy data read it a chunk
            at a time; device and frame data take it whole).
        rows
            ``None`` to evaluate every mask on every explained row, giving ``[m, rows * k]``
            (row-major over ``(row, output)``). Otherwise ``int[m]``: mask ``j`` is evaluated on
            explained row ``rows[j]`` only, giving ``[m, k]`` (used by per-row designs).

        Returns
        -------
        numpy.ndarray
            float64 values, ``k = 1`` for a model returning ``[batch]``.
        """
        n_pairs = len(masks) * self.n_rows if rows is None else len(masks)
        per_call = self.pairs_per_call()
        if isinstance(self._inputs, _HostInputs):  # the only inputs that read masks in chunks
            self._inputs.prepare(masks, rows)
        else:
            self._inputs.prepare(_whole(masks), rows)
        out = query(
            n_pairs,
            per_call,
            self._chunk_values,
            progress=self._options.progress,
            desc="coalitions x rows",
            unit_rows=self._n_background,
        )
        return apply_link(out, self._link).reshape(len(masks), -1)

    def pairs_per_call(self) -> int:
        """(coalition, explained row) pairs per model call of :meth:`evaluate`: ``batch_size``
        model rows, or as many as
        :meth:`~ferroshap.query.backend.ArrayBackend.chunk_bytes` allows."""
        return units_per_call(
            self._options,
            unit_bytes=self._n_background * self.n_players * self._inputs.itemsize,
            unit_rows=self._n_background,
            chunk_bytes=self._backend.chunk_bytes(self._options.max_bytes),
        )

    def query_bytes(self, n_pairs: int) -> dict[str, int]:
        """Host memory of the largest model call :meth:`evaluate` makes on ``n_pairs``
        (coalition, row) pairs, in bytes by buffer (see :mod:`ferroshap.memory`): the chunk's
        masks (as read from a design, and their feature masks), the pair indices, the masked
        inputs with as much again for what the model allocates on them (none on an
        accelerator: they live in its memory) and the model's outputs with their float64 copy
        and finiteness check. The whole masks and the values of every pair are the caller's."""
        pairs = min(n_pairs, self.pairs_per_call())
        model_rows = pairs * self._n_background
        k = int(np.prod(self.output_shape, dtype=np.int64))
        on_host = self._backend.on_host
        return {
            "masks chunk": 2 * (pairs // self.n_rows + 2) * self.n_players,
            "pair indices": 4 * pairs * memory.FLOAT,
            "model input chunk": (
                memory.MODEL_FACTOR * model_rows * self.n_players * self._inputs.itemsize
                if on_host
                else 0
            ),
            "model output chunk": 3 * model_rows * k * memory.FLOAT if on_host else 0,
        }

    def _call(self, batch: Any) -> Any:
        """The model on ``batch``; an error it raises on a DataFrame gets a note naming the
        frame's non-numeric columns and their dtypes (the likely cause)."""
        try:
            with self._backend.inference():
                return self._model(batch)
        except Exception as err:
            inputs = self._inputs
            noted = hasattr(err, "add_note") and not ArrayBackend.is_out_of_memory(err)
            if isinstance(inputs, FrameInputs) and noted:  # notes need Python >= 3.11
                err.add_note(inputs.describe_columns())
            raise

    def _chunk_values(self, start: int, stop: int) -> np.ndarray:
        """Background-averaged model outputs ``[stop - start, k]`` of the pairs in the chunk."""
        batch = self._inputs.batch(start, stop)
        n_model_rows = (stop - start) * self._n_background
        outputs = self._call(batch)
        shape = tuple(getattr(outputs, "shape", ()))
        if shape[1:] != self.output_shape:
            raise InvalidArgumentError(
                f"model returned shape {shape} for a batch of {n_model_rows} rows, but shape "
                f"{(self._n_background, *self.output_shape)} for the background"
            )
        if self._backend.is_numpy or isinstance(outputs, np.ndarray):
            values = check_outputs(outputs, n_model_rows, "model")
            return _background_mean(values.reshape(stop - start, self._n_background, -1))
        check_outputs_shape(shape, n_model_rows, "model")
        xp = self._backend.xp
        means = xp.mean(xp.reshape(outputs, (stop - start, self._n_background, -1)), axis=1)
        return check_outputs(means, stop - start, "model")


def _background_mean(outputs: np.ndarray) -> np.ndarray:
    """``outputs [pairs, background rows, k]`` averaged over the background rows.

    ``einsum`` adds the background rows in order, 3-5x faster than ``mean(axis=1)``, whose
    reduction over a middle axis with a short last axis walks the array in small strides.

    Examples
    --------
    >>> _background_mean(np.arange(12.0).reshape(2, 3, 2))
    array([[2., 3.],
           [8., 9.]])
    """
    return np.einsum("ibk->ik", outputs) / outputs.shape[1]


class RawGame:
    """A game given directly as a function of coalitions, queried in chunks.

    Parameters
    ----------
    fn
        ``fn(masks: bool[k, n]) -> float[k]`` or ``float[k, r]`` (one column per explained
        quantity).
    n_players
        Number of players.
    options
        ``batch_size`` (coalitions per call; by default as many as ``max_bytes`` of masks,
        usually all of them at once) and ``progress``.

    Attributes
    ----------
    output_shape : tuple[int, ...] or None
        ``()`` or ``(r,)``: the shape of one coalition's value, known after the first
        :meth:`evaluate` (``None`` before).

    Examples
    --------
    >>> import numpy as np
    >>> game = RawGame(lambda masks: masks.sum(axis=1), 3)
    >>> game.evaluate(np.array([[True, True, False]]))
    array([[2.]])
    """

    def __init__(
        self,
        fn: Callable[[np.ndarray], Any],
        n_players: int,
        *,
        options: QueryOptions = DEFAULT_OPTIONS,
    ) -> None:
        self._fn = fn
        self.n_players = n_players
        self._options = options
        self.output_shape: tuple[int, ...] | None = None

    def evaluate(self, masks: Masks) -> np.ndarray:
        """Values ``float64[m, R]`` of the coalitions ``masks: bool[m, n]`` (``R = 1`` for 1-D),
        or of a :class:`DesignMasks`, read one call's chunk at a time."""
        if isinstance(masks, DesignMasks):
            source = masks

            def chunk(a: int, b: int) -> np.ndarray:
                return np.ascontiguousarray(source.rows(a, b), dtype=bool)
        else:
            whole = np.ascontiguousarray(masks, dtype=bool)

            def chunk(a: int, b: int) -> np.ndarray:
                return whole[a:b]

        values = query(
            len(masks),
            self.coalitions_per_call(),
            lambda a, b: self._chunk_values(chunk(a, b)),
            progress=self._options.progress,
            desc="coalitions",
        )
        return values.reshape(len(masks), -1)

    def coalitions_per_call(self) -> int:
        """Coalitions per call of the game in :meth:`evaluate`: ``batch_size``, or as many as
        ``max_bytes`` of masks allow."""
        return units_per_call(self._options, unit_bytes=self.n_players, unit_rows=1)

    def query_bytes(self, n_coalitions: int, outputs: int = 1) -> dict[str, int]:
        """Host memory of the largest call :meth:`evaluate` makes on ``n_coalitions`` coalitions
        of a design, in bytes by buffer (see :mod:`ferroshap.memory`): the chunk's masks as read
        from the design and as the game's (feature) masks, as much again for what the game
        allocates on them, and ``outputs`` values per coalition with their float64 copy."""
        chunk = min(n_coalitions, self.coalitions_per_call())
        return {
            "masks chunk": (1 + memory.MODEL_FACTOR) * chunk * self.n_players,
            "game output chunk": 3 * chunk * outputs * memory.FLOAT,
        }

    def _chunk_values(self, masks: np.ndarray) -> np.ndarray:
        values = check_outputs(self._fn(masks), len(masks), "game")
        if self.output_shape is not None and values.shape[1:] != self.output_shape:
            raise InvalidArgumentError(
                f"game returned {values.shape[1:]} values per coalition on one call and "
                f"{self.output_shape} on another; it must return the same shape every time"
            )
        self.output_shape = values.shape[1:]
        return values.reshape(len(masks), -1)
