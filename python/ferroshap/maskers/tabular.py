"""Tabular and token maskers, and the protocol every masker follows.

A masker's :meth:`game` returns a function ``masks: bool[k, n] -> float[k]`` plus ``n``, which
:class:`ferroshap.ProxySPEX` and :class:`ferroshap.Explainer` (``masker=``) evaluate on their
planned coalitions, and :meth:`player_names` names the players of an input. Maskers take the
query keywords of every engine (``batch_size``, ``max_bytes``, ``progress``) for their model
calls. :class:`Baseline` masks table rows, :class:`Tokens` token-id sequences.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from ferroshap._core import InvalidArgumentError, InvalidTypeError
from ferroshap.query.backend import DEFAULT_MAX_BYTES, ArrayBackend, as_2d_array
from ferroshap.query.frames import frame_model, read_rows_like, read_table
from ferroshap.query.games import TabularGame, as_model_function
from ferroshap.query.loop import QueryOptions

GameFunction = Callable[[np.ndarray], np.ndarray]


class Masker(Protocol):
    """What :class:`ferroshap.ProxySPEX` needs from a masker."""

    def game(self, model: Any, x: Any) -> tuple[GameFunction, int]:
        """The game of ``model`` (a callable, an estimator or a resolved
        :class:`~ferroshap.query.games.ModelFunction`) at input ``x`` and its number of players."""
        ...

    def player_names(self, x: Any) -> list[str] | None:
        """The names of the players of input ``x`` (``None``: numbered by the engine)."""
        ...


def player_names(masker: Any, x: Any, n: int) -> list[str] | None:
    """The names ``masker`` gives the ``n`` players of input ``x``: its
    :meth:`Masker.player_names`, else its ``feature_names`` attribute, else ``None`` (for maskers
    written before the method existed); an error naming ``masker`` unless there are ``n``."""
    names = masker.player_names(x) if callable(getattr(masker, "player_names", None)) else None
    names = names if names is not None else getattr(masker, "feature_names", None)
    if names is not None and len(names) != n:
        raise InvalidArgumentError(
            f"masker: {len(names)} player names for {n} players", argument="masker"
        )
    return None if names is None else [str(name) for name in names]


def check_masker(masker: Any) -> None:
    """Raise :class:`InvalidTypeError` unless ``masker`` has a ``game`` method."""
    if not callable(getattr(masker, "game", None)):
        raise InvalidTypeError(
            f"masker must be a ferroshap masker (Baseline, Tokens, Text, Image) or an object "
            f"with a game(model, x) method, got {type(masker).__name__}",
            argument="masker",
        )


class Baseline:
    """Features outside the coalition take background values: ``v(S) = mean_b f(x_S, b_notS)``.

    One background row gives the single-baseline game; several give the interventional game,
    each coalition then costing ``len(rows)`` model rows. Masked inputs are built and the model
    called through :mod:`ferroshap.query.loop`, like :class:`ferroshap.Explainer` does: a torch
    module receives tensors on its device, a DataFrame background gives the model frames.

    Parameters
    ----------
    rows
        Background rows, a 2-D array or a polars / pandas DataFrame (a 1-D array is one row).
    batch_size, max_bytes, progress
        Model rows per call, the cap on the bytes of masked inputs built at once, and a tqdm
        progress bar, as for :class:`ferroshap.Explainer`.

    Examples
    --------
    >>> import numpy as np, ferroshap as fs
    >>> game, n = fs.maskers.Baseline(np.zeros(3)).game(lambda z: z.sum(1), np.ones(3))
    >>> game(np.array([[True, False, True]])), n
    (array([2.]), 3)
    """

    def __init__(
        self,
        rows: Any,
        *,
        batch_size: int | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        progress: bool = False,
    ) -> None:
        self._table = read_table(rows, "rows")
        self.feature_names = self._table.names
        self.options = QueryOptions.checked(batch_size, max_bytes, progress)

    @property
    def rows(self) -> Any:
        """The background rows as masked (an array, or a frame with non-numeric columns)."""
        return self._table.values

    def player_names(self, x: Any) -> list[str] | None:
        """The background's column names (``None`` for an array background)."""
        return self.feature_names

    def game(self, model: Any, x: Any) -> tuple[GameFunction, int]:
        """The game of ``model`` at the single row ``x`` (1-D, or 2-D with one row)."""
        function = as_model_function(model)
        x_table = read_rows_like(x, self._table, "x", "rows")
        if x_table.n_rows != 1:
            raise InvalidArgumentError(
                f"x must be one row of {self._table.n_columns} features (the background's), "
                f"got {x_table.n_rows} rows",
                argument="x",
            )
        tabular = TabularGame(
            frame_model(function.function, self._table.schema),
            function.place(self._table.values),
            function.place(x_table.values),
            options=self.options,
        )
        return _one_output_game(tabular)


def _one_output_game(tabular: TabularGame) -> tuple[GameFunction, int]:
    """``masks -> values[k]`` of a one-row tabular game whose model has a single output."""
    if tabular.output_shape not in ((), (1,)):
        raise InvalidArgumentError(
            f"model must return one output per row, got {tabular.output_shape} outputs; pick "
            "one with output_index",
            argument="output_index",
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
    batch_size, max_bytes, progress
        Sequences per model call (default: as many as fit in ``max_bytes``), and a tqdm
        progress bar.

    Examples
    --------
    >>> import numpy as np, ferroshap as fs
    >>> game, n = fs.maskers.Tokens(0).game(lambda ids: (ids == 7).sum(1), [7, 3, 7])
    >>> game(np.array([[True, True, False]])), n
    (array([1.]), 3)
    """

    def __init__(
        self,
        mask_id: int,
        *,
        batch_size: int | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        progress: bool = False,
    ) -> None:
        if isinstance(mask_id, bool) or not isinstance(mask_id, int | np.integer):
            raise InvalidTypeError(
                f"mask_id must be an int token id, got {type(mask_id).__name__}",
                argument="mask_id",
            )
        self.mask_id = int(mask_id)
        self.options = QueryOptions.checked(batch_size, max_bytes, progress)

    def player_names(self, x: Any) -> list[str] | None:
        """``None``: the players are the positions, numbered by the engine."""
        return None

    def game(self, model: Any, x: Any) -> tuple[GameFunction, int]:
        """The game of ``model`` on the token sequence ``x`` (1-D integer ids).

        ``x`` may be a NumPy array or a tensor of any array-API library (PyTorch, JAX, ...):
        masked sequences are then built on its device, as for :class:`ferroshap.Explainer`.
        """
        function = as_model_function(model)
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
                f"and {ids.shape[0]} rows",
                argument="x",
            )
        if function.backend is not None and backend.is_numpy:
            ids = function.backend.asarray(ids)  # token ids keep their integer dtype
        backend = ArrayBackend.of(ids)
        limits = np.iinfo(ids.dtype) if backend.is_numpy else backend.xp.iinfo(ids.dtype)
        if not limits.min <= self.mask_id <= limits.max:
            raise InvalidArgumentError(
                f"mask_id {self.mask_id} does not fit the token ids' dtype {ids.dtype}",
                argument="mask_id",
            )
        masked = (
            np.full_like(ids, self.mask_id)
            if backend.is_numpy
            else backend.xp.full_like(ids, self.mask_id)
        )
        return _one_output_game(TabularGame(function.function, masked, ids, options=self.options))
