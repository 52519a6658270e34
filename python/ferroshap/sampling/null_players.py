"""Null players: features equal to their value in every background row, which cannot change
the model's output (each gets exactly 0, and a row is explained as the game of the others)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ferroshap.groups import Groups

__all__ = ["NullPlayers", "group_rows", "identical"]


class NullPlayers:
    """The background's side of the null-player test, read once per explainer from its host
    copy ``background``: its first row and which columns are constant."""

    def __init__(self, background: np.ndarray) -> None:
        self._row = background[:1]
        self._constant = np.all(identical(background, self._row), axis=0)

    def varying(self, x: np.ndarray, groups: Groups | None) -> np.ndarray:
        """``bool[rows, players]``: whether each player can change the model's output on each
        explained row of ``x`` (their host copy).

        A feature whose value in the row equals its value in every background row is replaced
        by the same value whether it is masked or not, so it is a null player: its Shapley value
        is exactly 0 and the row's game is that of the other players (a group is null when all
        its features are). NaN counts as differing, as does 0.0 against -0.0.
        """
        same = identical(x, self._row) & self._constant
        if groups is None:
            return ~same
        members = groups.expand(np.eye(groups.n_players, dtype=bool))  # [players, features]
        return (~same).astype(np.int64) @ members.T.astype(np.int64) > 0


def group_rows(varying: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``bool[rows, n]``, in lexicographic order, and the index of each
    row's among them (``np.unique(varying, axis=0, return_inverse=True)``, compared as packed
    bytes: that builds a record type of ``n`` fields, seconds at ``n = 10**6``).

    Examples
    --------
    >>> patterns, of = group_rows(np.array([[True, False], [False, True], [True, False]]))
    >>> patterns.tolist(), of.tolist()
    ([[False, True], [True, False]], [1, 0, 1])
    """
    packed = np.ascontiguousarray(np.packbits(varying, axis=1))
    keys = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
    _, first, of = np.unique(keys, return_index=True, return_inverse=True)
    return varying[first], of.ravel()


def identical(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise ``a == b`` (broadcast), also telling 0.0 from -0.0 in float arrays; cells of
    a mixed frame (object arrays) that cannot be compared count as different."""
    if a.dtype == object or b.dtype == object:
        return np.frompyfunc(_same_cell, 2, 1)(a, b).astype(bool)
    same = np.asarray(a == b, dtype=bool)
    if a.dtype.kind == "f" and b.dtype.kind == "f":
        same &= np.signbit(a) == np.signbit(b)
    return same


def _same_cell(a: Any, b: Any) -> bool:
    """Whether two cells of a mixed frame are the same value (``False`` when undecidable)."""
    try:
        return bool(a == b) and not (isinstance(a, float) and np.signbit(a) != np.signbit(b))
    except (TypeError, ValueError):
        return False
