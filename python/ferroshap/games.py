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

from ferroshap import _core
from ferroshap.backend import (
    DEFAULT_MAX_BYTES,
    check_outputs,
    chunk_length,
    progress_bar,
)
from ferroshap.errors import InvalidArgumentError

__all__ = ["RawGame", "TabularGame"]

_COMPILED_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


class TabularGame:
    """The interventional game of a tabular model, for several explained rows at once.

    ``v_x(S) = mean_b f(x_S, b_notS)``: features in ``S`` come from the explained row ``x``, the
    others from each background row ``b``, and the model outputs are averaged over the
    background. A single-baseline game is this game with a one-row ``background``.

    Masked inputs are built in chunks of (coalition, row) pairs across all explained rows, each
    chunk holding at most ``max_bytes`` of inputs (or ``batch_size`` model rows), in one reused
    buffer of the data's dtype; the model is called once per chunk (and must not keep a reference
    to its input, which the next chunk overwrites).

    Parameters
    ----------
    model
        Callable on a 2-D batch ``[batch, n]`` returning ``[batch]`` or ``[batch, k]``.
    background
        Background rows ``[B, n]``, validated (finite, non-empty).
    x_rows
        Explained rows ``[rows, n]``, validated, same number of features.
    max_bytes
        Cap on the bytes of masked inputs per model call.
    batch_size
        Model rows per call (rounded down to whole coalitions, at least one); overrides
        ``max_bytes`` when given.
    progress
        Show a tqdm progress bar over the (coalition, row) pairs.

    Attributes
    ----------
    n_players : int
        Number of features ``n``.
    output_shape : tuple[int, ...]
        ``()`` for a model returning ``[batch]``, ``(k,)`` for ``[batch, k]``.
    empty_value : numpy.ndarray
        ``v(∅) = mean_b f(b)``, shape ``output_shape``; the same for every explained row.

    Examples
    --------
    >>> import numpy as np
    >>> game = TabularGame(lambda z: z.sum(1), np.zeros((1, 3)), np.ones((2, 3)))
    >>> game.evaluate(np.array([[True, False, True]]))
    array([[2., 2.]])
    """

    def __init__(
        self,
        model: Callable[[np.ndarray], Any],
        background: np.ndarray,
        x_rows: np.ndarray,
        max_bytes: int = DEFAULT_MAX_BYTES,
        batch_size: int | None = None,
        progress: bool = False,
    ) -> None:
        self._model = model
        self._dtype = np.result_type(background.dtype, x_rows.dtype)
        self._background = np.ascontiguousarray(background, dtype=self._dtype)
        self._x_rows = np.ascontiguousarray(x_rows, dtype=self._dtype)
        self._max_bytes = max_bytes
        self._batch_size = batch_size
        self._progress = progress
        self.n_players = background.shape[1]
        empty = check_outputs(
            model(background.astype(self._dtype, copy=False)), len(background), "model"
        )
        self.output_shape: tuple[int, ...] = empty.shape[1:]
        self.empty_value = empty.mean(axis=0)

    @property
    def n_rows(self) -> int:
        """Number of explained rows."""
        return len(self._x_rows)

    def evaluate(self, masks: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Coalition values for the explained rows.

        Parameters
        ----------
        masks
            Coalitions ``bool[m, n]``.
        rows
            ``None`` to evaluate every mask on every explained row, giving ``[m, rows * k]``
            (row-major over ``(row, output)``). Otherwise ``int[m]``: mask ``j`` is evaluated on
            explained row ``rows[j]`` only, giving ``[m, k]`` (used by per-row designs).

        Returns
        -------
        numpy.ndarray
            float64 values, ``k = 1`` for a model returning ``[batch]``.
        """
        n_background = len(self._background)
        k = int(np.prod(self.output_shape, dtype=np.int64))
        n_pairs = len(masks) * self.n_rows if rows is None else len(masks)
        per_chunk = chunk_length(
            unit_bytes=n_background * self.n_players * self._dtype.itemsize,
            unit_rows=n_background,
            max_bytes=self._max_bytes,
            batch_size=self._batch_size,
        )
        buffer = np.empty((min(per_chunk, n_pairs), n_background, self.n_players), self._dtype)
        out = np.empty((n_pairs, k))
        bar = progress_bar(n_pairs, self._progress, desc="coalitions x rows")
        try:
            for start in range(0, n_pairs, per_chunk):
                pairs = np.arange(start, min(start + per_chunk, n_pairs))
                if rows is None:
                    mask_index, row_index = np.divmod(pairs, self.n_rows)
                else:
                    mask_index, row_index = pairs, rows[pairs]
                batch = buffer[: len(pairs)]
                self._fill(batch, masks, mask_index, row_index)
                outputs = check_outputs(
                    self._model(batch.reshape(-1, self.n_players)),
                    batch.shape[0] * n_background,
                    "model",
                )
                if outputs.shape[1:] != self.output_shape:
                    raise InvalidArgumentError(
                        f"model returned shape {outputs.shape} for a batch of {len(outputs)} rows, "
                        f"but shape {(n_background, *self.output_shape)} for the background"
                    )
                out[pairs] = outputs.reshape(len(pairs), n_background, k).mean(axis=1)
                bar.update(len(pairs))
        finally:
            bar.close()
        return out.reshape(len(masks), -1)

    def _fill(
        self, batch: np.ndarray, masks: np.ndarray, mask_index: np.ndarray, row_index: np.ndarray
    ) -> None:
        """Write the masked inputs of the (mask, row) pairs into ``batch[pairs, background, n]``.

        float32 / float64 data go through the compiled core (parallel, one pass over memory);
        other dtypes through two NumPy copies.
        """
        if self._dtype in _COMPILED_DTYPES:
            _core.fill_masked_inputs(
                batch.reshape(-1, self.n_players),
                np.ascontiguousarray(masks, dtype=bool),
                mask_index.astype(np.int64, copy=False),
                self._x_rows,
                row_index.astype(np.int64, copy=False),
                self._background,
            )
        else:
            np.copyto(batch, self._background[None])
            np.copyto(batch, self._x_rows[row_index, None, :], where=masks[mask_index, None, :])


class RawGame:
    """A game given directly as a function of coalitions.

    Parameters
    ----------
    fn
        ``fn(masks: bool[k, n]) -> float[k]`` or ``float[k, r]`` (one column per explained
        quantity).
    n
        Number of players.

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

    def __init__(self, fn: Callable[[np.ndarray], Any], n: int) -> None:
        self._fn = fn
        self.n_players = n
        self.output_shape: tuple[int, ...] | None = None

    def evaluate(self, masks: np.ndarray) -> np.ndarray:
        """Values ``float64[m, R]`` of the coalitions ``masks: bool[m, n]`` (``R = 1`` for 1-D)."""
        values = check_outputs(self._fn(masks), len(masks), "game")
        self.output_shape = values.shape[1:]
        return values.reshape(len(masks), -1)
