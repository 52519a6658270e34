"""Sequences for the sketch: letters to ``uint8`` codes and back (:class:`SequenceCodec`), and
the interaction values of many sequences (:class:`SequenceInteractions`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ferroshap._core import InvalidArgumentError, InvalidTypeError
from ferroshap.results.interactions import shapiq_values
from ferroshap.validation import check_int

__all__ = ["SequenceCodec", "SequenceInteractions"]


class SequenceCodec:
    """Converts between sequences (strings, code arrays, polars Series) and ``uint8`` codes."""

    def __init__(self, alphabet: Any, length: int) -> None:
        if isinstance(alphabet, str):
            letters = list(alphabet)
        elif isinstance(alphabet, Sequence) and all(
            isinstance(a, str) and len(a) == 1 for a in alphabet
        ):
            letters = list(alphabet)
        else:
            raise InvalidTypeError(
                "alphabet must be a string of letters or a sequence of one-character strings, "
                f"got {alphabet!r}",
                argument="alphabet",
            )
        for position, letter in enumerate(letters):
            first = letters.index(letter)
            if first != position:
                raise InvalidArgumentError(
                    f"alphabet has the letter {letter!r} twice (positions {first} and "
                    f"{position}); letters must be distinct",
                    argument="alphabet",
                )
        if not 2 <= len(letters) <= 256:
            raise InvalidArgumentError(
                f"alphabet must have 2 to 256 letters, got {len(letters)}: {alphabet!r}",
                argument="alphabet",
            )
        self.letters = letters
        self.length = length
        self._points = np.array([ord(a) for a in letters], dtype=np.uint32)
        self._order = np.argsort(self._points).astype(np.uint8)
        self._sorted = self._points[self._order]

    @property
    def q(self) -> int:
        return len(self.letters)

    def encode(self, sequences: Any, name: str, offset: int = 0) -> np.ndarray:
        """``uint8[rows, length]`` codes of ``sequences``; errors name ``name`` and the row
        (numbered from ``offset``), position and letter at fault."""
        if hasattr(sequences, "dtype") and hasattr(sequences, "to_list"):  # polars Series
            if sequences.null_count():
                row = int(sequences.is_null().arg_max())
                raise InvalidArgumentError(
                    f"{name}: sequence {offset + row} is missing (null)", argument=name
                )
            sequences = (
                sequences.to_list() if sequences.dtype == _polars_string() else sequences.to_numpy()
            )
        if isinstance(sequences, str):
            sequences = [sequences]
        if isinstance(sequences, np.ndarray) and sequences.dtype.kind in "iu":
            return self._check_codes(sequences, name, offset)
        if isinstance(sequences, np.ndarray) and sequences.dtype.kind == "U":
            sequences = sequences.tolist()
        if not isinstance(sequences, Sequence) or not all(isinstance(s, str) for s in sequences):
            raise InvalidTypeError(
                f"{name} must be a list of strings, an integer code array [rows, {self.length}] "
                f"or a polars Series, got {type(sequences).__name__}",
                argument=name,
            )
        lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences))
        wrong = np.flatnonzero(lengths != self.length)
        if wrong.size:
            row = int(wrong[0])
            raise InvalidArgumentError(
                f"{name}: sequence {offset + row} has length {lengths[row]}, expected "
                f"{self.length}",
                argument=name,
            )
        flat = np.frombuffer("".join(sequences).encode("utf-32-le"), dtype=np.uint32)
        points = flat.reshape(len(sequences), self.length)
        at = np.minimum(np.searchsorted(self._sorted, points), self.q - 1)
        unknown = self._sorted[at] != points
        if unknown.any():
            row, position = (int(i) for i in np.argwhere(unknown)[0])
            raise InvalidArgumentError(
                f"{name}: sequence {offset + row} has the letter {chr(points[row, position])!r} "
                f"at position {position}, which is not in the alphabet {''.join(self.letters)!r}",
                argument=name,
            )
        return self._order[at]

    def _check_codes(self, codes: np.ndarray, name: str, offset: int) -> np.ndarray:
        if codes.ndim == 1:
            codes = codes[None, :]
        if codes.ndim != 2 or codes.shape[1] != self.length:
            raise InvalidArgumentError(
                f"{name}: expected codes of shape [rows, {self.length}], got shape {codes.shape}",
                argument=name,
            )
        bad = (codes < 0) | (codes >= self.q)
        if bad.any():
            row, position = (int(i) for i in np.argwhere(bad)[0])
            raise InvalidArgumentError(
                f"{name}: sequence {offset + row} has code {codes[row, position]} at position "
                f"{position}, outside the alphabet's codes 0..{self.q - 1}",
                argument=name,
            )
        return np.ascontiguousarray(codes, dtype=np.uint8)

    def decode(self, codes: np.ndarray) -> list[str]:
        """The strings of ``uint8[rows, length]`` codes."""
        points = np.ascontiguousarray(self._points[codes])
        return points.view(f"<U{self.length}").ravel().tolist()


def _polars_string() -> Any:
    import polars as pl

    return pl.String


@dataclass(frozen=True, eq=False, repr=False)
class SequenceInteractions:
    """Interaction values of many sequences over one shared list of position sets.

    Attributes
    ----------
    keys : list[tuple[int, ...]]
        The position sets, ordered by size, then lexicographically; shared by all rows.
    values : numpy.ndarray
        ``(rows, len(keys))``: ``values[r, j]`` is the interaction of ``keys[j]`` in row ``r``.
    base_values : numpy.ndarray
        ``(rows,)``: the value of the empty coalition (the sketch's uniform mean).
    data : numpy.ndarray
        The explained sequences as ``uint8`` codes ``(rows, length)``.
    index : str
        The interaction index (``"Moebius"`` for all orders).
    max_order : int or None
        Largest set size, ``None`` for every order.
    budget : int
        The model queries the sketch was built with (none are made per sequence).
    method, estimator : str
        ``"fourier-sketch"``, as in the sketch's :class:`ferroshap.Explanation`.
    diagnostics : dict[str, Any]
        ``{"estimated": True}``: the values are the sketch's, an estimate of the model's.

    Examples
    --------
    >>> iv = sketch.interactions(["ACGT", "TTTT"], max_order=2)  # doctest: +SKIP
    >>> iv.values.shape, iv.keys[:2]  # doctest: +SKIP
    ((2, 10), [(0,), (1,)])
    """

    keys: list[tuple[int, ...]]
    values: np.ndarray
    base_values: np.ndarray
    data: np.ndarray
    index: str
    max_order: int | None
    budget: int
    method: str = "fourier-sketch"
    estimator: str = "fourier-sketch"
    diagnostics: dict[str, Any] = field(default_factory=lambda: {"estimated": True})

    @property
    def n_players(self) -> int:
        """Number of players: the sequence length."""
        return int(self.data.shape[1])

    @property
    def feature_names(self) -> list[str]:
        """The positions ``"0" .. "n-1"``, as in the sketch's :class:`ferroshap.Explanation`."""
        return [str(i) for i in range(self.n_players)]

    def __len__(self) -> int:
        """Number of explained rows."""
        return len(self.values)

    def __repr__(self) -> str:
        return (
            f"SequenceInteractions(rows={len(self)}, keys={len(self.keys)}, index={self.index!r}, "
            f"max_order={self.max_order}, budget={self.budget})"
        )

    def row(self, i: int) -> dict[tuple[int, ...], float]:
        """The non-zero interactions of row ``i`` as a dict (shapiq's ``values`` layout)."""
        return {key: float(v) for key, v in zip(self.keys, self.values[i], strict=True) if v != 0}

    def to_shapiq(self, row: int | None = None) -> Any:
        """``shapiq.InteractionValues`` of row ``row``, or a list of them for every row
        (``None``), built like :meth:`ferroshap.Interactions.to_shapiq`."""
        rows = range(len(self)) if row is None else [check_int(row, "row", 0)]
        if row is not None and row >= len(self):
            raise InvalidArgumentError(f"row must be below {len(self)}, got {row}", argument="row")
        max_order = self.max_order or max((len(key) for key in self.keys), default=0)
        converted = [
            shapiq_values(
                dict(zip(self.keys, self.values[r].tolist(), strict=True)),
                float(self.base_values[r]),
                index=self.index,
                max_order=max_order,
                n_players=self.n_players,
                estimated=True,
                budget=None,
            )
            for r in rows
        ]
        return converted if row is None else converted[0]

    def to_polars(self) -> Any:
        """A wide polars DataFrame: one column per key (named like ``"0,3"``), then
        ``base_value``: one row per explained sequence."""
        import polars as pl

        columns = {",".join(map(str, key)): self.values[:, j] for j, key in enumerate(self.keys)}
        return pl.DataFrame({**columns, "base_value": self.base_values})
