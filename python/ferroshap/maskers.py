"""Maskers: turn a model and one input into a game on coalitions of its features or tokens.

A masker's :meth:`game` returns a function ``masks: bool[k, n] -> float[k]`` plus ``n``, which
:class:`ferroshap.ProxySPEX` evaluates on its planned coalitions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from ferroshap.backend import DEFAULT_MAX_BYTES, as_2d_array, check_finite, check_outputs
from ferroshap.errors import InvalidArgumentError, InvalidTypeError
from ferroshap.games import TabularGame

__all__ = ["Baseline", "Masker", "Tokens"]

GameFunction = Callable[[np.ndarray], np.ndarray]


class Masker(Protocol):
    """What :class:`ferroshap.ProxySPEX` needs from a masker."""

    def game(self, model: Callable[[Any], Any], x: Any) -> tuple[GameFunction, int]:
        """The game of ``model`` at input ``x`` and its number of players."""
        ...


class Baseline:
    """Features outside the coalition take background values: ``v(S) = mean_b f(x_S, b_notS)``.

    One background row gives the single-baseline game; several give the interventional game,
    each coalition then costing ``len(rows)`` model rows.

    Parameters
    ----------
    rows
        Background rows, a 2-D array or a polars / pandas DataFrame (a 1-D array is one row).
    max_bytes
        Cap on the bytes of masked model inputs built at once.

    Examples
    --------
    >>> import numpy as np, ferroshap as fs
    >>> game, n = fs.maskers.Baseline(np.zeros(3)).game(lambda z: z.sum(1), np.ones(3))
    >>> game(np.array([[True, False, True]])), n
    (array([2.]), 3)
    """

    def __init__(self, rows: Any, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.rows, self.feature_names = as_2d_array(rows, "rows")
        check_finite(self.rows, "rows")
        self.max_bytes = max_bytes

    def game(self, model: Callable[[Any], Any], x: Any) -> tuple[GameFunction, int]:
        """The game of ``model`` at the single row ``x`` (1-D, or 2-D with one row)."""
        x_rows, _ = as_2d_array(x, "x")
        check_finite(x_rows, "x")
        n = self.rows.shape[1]
        if x_rows.shape != (1, n):
            raise InvalidArgumentError(
                f"x must be one row of {n} features (the background's), got shape {x_rows.shape}"
            )
        tabular = TabularGame(model, self.rows, x_rows, max_bytes=self.max_bytes)
        if tabular.output_shape:
            raise InvalidArgumentError(
                f"model must return one output per row, got {tabular.output_shape} outputs"
            )

        def game(masks: np.ndarray) -> np.ndarray:
            return tabular.evaluate(masks)[:, 0]

        return game, n


class Tokens:
    """Tokens outside the coalition are replaced by ``mask_id`` (for token-id sequence models).

    The model receives an integer array ``[k, L]`` (the input's dtype) of masked copies of the
    sequence and returns ``[k]`` scores; the players are the ``L`` positions.

    Parameters
    ----------
    mask_id
        The replacement token id (``[UNK]``, ``<unk>``, a padding id, ...).
    batch_size
        Sequences per model call (default: everything at once up to ``max_bytes``).
    max_bytes
        Cap on the bytes of one batch when ``batch_size`` is not given.

    Examples
    --------
    >>> import numpy as np, ferroshap as fs
    >>> game, n = fs.maskers.Tokens(0).game(lambda ids: (ids == 7).sum(1), [7, 3, 7])
    >>> game(np.array([[True, True, False]])), n
    (array([1.]), 3)
    """

    def __init__(
        self, mask_id: int, batch_size: int | None = None, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        if isinstance(mask_id, bool) or not isinstance(mask_id, int | np.integer):
            raise InvalidTypeError(f"mask_id must be an int token id, got {type(mask_id).__name__}")
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
            raise InvalidArgumentError(f"batch_size must be a positive int, got {batch_size!r}")
        self.mask_id = int(mask_id)
        self.batch_size = batch_size
        self.max_bytes = max_bytes

    def game(self, model: Callable[[Any], Any], x: Any) -> tuple[GameFunction, int]:
        """The game of ``model`` on the token sequence ``x`` (1-D integer ids)."""
        ids = np.asarray(x)
        if ids.dtype.kind not in "iu" or ids.ndim != 1 or len(ids) == 0:
            raise InvalidArgumentError(
                f"x must be a non-empty 1-D sequence of integer token ids, got dtype {ids.dtype} "
                f"and shape {ids.shape}"
            )
        per_call = self.batch_size or max(1, self.max_bytes // (ids.nbytes or 1))
        fill = np.asarray(self.mask_id).astype(ids.dtype)

        def game(masks: np.ndarray) -> np.ndarray:
            out = np.empty(len(masks))
            for start in range(0, len(masks), per_call):
                chunk = masks[start : start + per_call]
                batch = np.where(chunk, ids[None, :], fill)
                values = check_outputs(model(batch), len(chunk), "model")
                if values.ndim == 2 and values.shape[1] != 1:
                    raise InvalidArgumentError(
                        f"model must return one score per sequence, got shape {values.shape}"
                    )
                out[start : start + len(chunk)] = values.reshape(len(chunk))
            return out

        return game, len(ids)
