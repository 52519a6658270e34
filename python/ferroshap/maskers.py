"""Maskers: turn a model and one input into a game on coalitions of its features or tokens.

A masker's :meth:`game` returns a function ``masks: bool[k, n] -> float[k]`` plus ``n``, which
:class:`ferroshap.ProxySPEX` evaluates on its planned coalitions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from ferroshap.backend import DEFAULT_MAX_BYTES, ArrayBackend, as_2d_array, check_finite
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
        return _one_output_game(TabularGame(model, self.rows, x_rows, max_bytes=self.max_bytes))


def _one_output_game(tabular: TabularGame) -> tuple[GameFunction, int]:
    """``masks -> values[k]`` of a one-row tabular game whose model has a single output."""
    if tabular.output_shape not in ((), (1,)):
        raise InvalidArgumentError(
            f"model must return one output per row, got {tabular.output_shape} outputs"
        )

    def game(masks: np.ndarray) -> np.ndarray:
        return tabular.evaluate(masks)[:, 0]

    return game, tabular.n_players


class Tokens:
    """Tokens outside the coalition are replaced by ``mask_id`` (for token-id sequence models).

    The model receives an integer array ``[k, L]`` (the input's dtype and array library) of
    masked copies of the sequence and returns ``[k]`` scores; the players are the ``L``
    positions. This is the single-baseline game whose baseline is ``mask_id`` everywhere, so the
    same masking works with :class:`ferroshap.Explainer` through
    ``background=np.full((1, L), mask_id)``.

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
        """The game of ``model`` on the token sequence ``x`` (1-D integer ids).

        ``x`` may be a NumPy array or a tensor of any array-API library (PyTorch, JAX, ...):
        masked sequences are then built on its device, as for :class:`ferroshap.Explainer`.
        """
        ids, _ = as_2d_array(x, "x")
        backend = ArrayBackend.of(ids)
        integral = (
            ids.dtype.kind in "iu"
            if backend.is_numpy
            else backend.xp.isdtype(ids.dtype, "integral")
        )
        if not integral or ids.shape[0] != 1:
            raise InvalidArgumentError(
                f"x must be a non-empty 1-D sequence of integer token ids, got dtype {ids.dtype} "
                f"and {ids.shape[0]} rows"
            )
        masked = (
            np.full_like(ids, self.mask_id)
            if backend.is_numpy
            else backend.xp.full_like(ids, self.mask_id)
        )
        tabular = TabularGame(
            model, masked, ids, max_bytes=self.max_bytes, batch_size=self.batch_size
        )
        return _one_output_game(tabular)
