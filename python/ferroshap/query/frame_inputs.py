"""Masked model inputs of DataFrames with non-numeric or mixed-dtype columns, cell by cell."""

from __future__ import annotations

from typing import Any

import numpy as np

from ferroshap.query.frames import FrameSchema, numpy_itemsize

__all__ = ["FrameInputs"]

_OBJECT_CELL_BYTES = 16
"""Bytes counted per cell of a non-numeric column when sizing chunks (a pointer plus part of a
short string)."""


class FrameInputs:
    """Masked model inputs of a DataFrame with non-numeric or mixed-dtype columns.

    The background and the explained rows are stacked into one source frame; a chunk's
    column ``j`` takes, for each (coalition, row) pair and background row ``b``, the cell of the
    explained row when feature ``j`` is in the coalition and the cell of ``b`` otherwise. The
    model then receives a frame of the user's library with the same columns and dtypes.

    Columns of plain NumPy values (pandas columns of any NumPy dtype: numbers, booleans,
    datetimes, timedeltas, objects; polars number and boolean columns without nulls) are built
    directly as values, one ``numpy.where`` per dtype; the others (pandas extension dtypes such
    as strings and categoricals, other polars dtypes) are gathered by row index with the
    library's own ``take`` / ``gather``, so every cell keeps its exact value and dtype.

    Parameters
    ----------
    schema
        The background's schema.
    background, x_rows
        Collected frames of that schema.
    """

    def __init__(self, schema: FrameSchema, background: Any, x_rows: Any) -> None:
        self.schema = schema
        self.background = background
        self._n_background = len(background)
        self._n_rows = len(x_rows)
        if schema.library == "pandas":
            import pandas as pd

            # X's labels may be spelled differently (``"0"`` for ``0``): the background's win
            x_rows = x_rows.set_axis(background.columns, axis=1)
            source = pd.concat([background, x_rows], ignore_index=True)
            self._labels = source.columns  # the user's labels, not their str()
            self._arrays = [_pandas_column(series) for _, series in source.items()]
        else:
            import polars as pl

            # one chunk per column: a gather from a chunked column is about twice as slow
            self._source = pl.concat([background, x_rows], how="vertical", rechunk=True)
            self._labels = list(self._source.columns)
            self._arrays = [_polars_column(series) for series in self._source.iter_columns()]
        self._gathered = [
            j for j, column in enumerate(self._arrays) if not isinstance(column, np.ndarray)
        ]
        by_dtype: dict[np.dtype, list[int]] = {}
        for j, column in enumerate(self._arrays):
            if isinstance(column, np.ndarray):
                by_dtype.setdefault(column.dtype, []).append(j)
        # the value columns of each dtype stacked, [columns, source rows]: one where per dtype
        self._value_groups = [
            (np.array(positions), np.stack([self._arrays[j] for j in positions]))
            for positions in by_dtype.values()
        ]
        self.itemsize = max(1, round(_cell_bytes(schema) / len(schema.columns)))
        self._masks = np.empty((0, len(schema.columns)), bool)
        self._rows: np.ndarray | None = None

    def describe_columns(self) -> str:
        """A note for a model error: the frame's non-numeric columns and their dtypes."""
        others = {
            column: str(dtype)
            for column, dtype in zip(self.schema.columns, self.schema.dtypes, strict=True)
            if numpy_itemsize(self.schema.library, dtype) is None
        }
        return (
            f"ferroshap: the model was called on a {self.schema.library} DataFrame whose "
            f"non-numeric columns are {others}; check that the model accepts these dtypes"
        )

    def prepare(self, masks: np.ndarray, rows: np.ndarray | None) -> None:
        """Set the coalitions (and per-pair explained rows) that :meth:`batch` draws from."""
        self._masks = np.ascontiguousarray(masks, dtype=bool)
        self._rows = rows

    def batch(self, start: int, stop: int) -> Any:
        """The frame of model inputs of the pairs ``start .. stop``."""
        pairs = np.arange(start, stop)
        if self._rows is None:
            mask_index, row_index = pairs // self._n_rows, pairs % self._n_rows
        else:
            mask_index, row_index = pairs, self._rows[pairs]
        # [n, pairs, 1]: whether each pair's coalition holds feature j, as a column of cells
        inside = np.ascontiguousarray(self._masks[mask_index].T)[:, :, None]
        own = self._n_background + row_index
        background = np.arange(self._n_background)
        # (array, positions): a [columns, rows] block per NumPy dtype, one array per other column
        blocks: list[tuple[Any, np.ndarray]] = [
            (
                np.where(
                    inside[positions], values[:, own, None], values[:, None, background]
                ).reshape(len(positions), -1),
                positions,
            )
            for positions, values in self._value_groups
        ]
        # row indices into the source: polars gathers by its native unsigned 32-bit index
        kind = np.int64 if self.schema.library == "pandas" else np.uint32
        own_at, background_at = own.astype(kind)[:, None], background.astype(kind)[None, :]
        index = {j: np.where(inside[j], own_at, background_at).reshape(-1) for j in self._gathered}
        if self.schema.library == "pandas":
            blocks += [(self._arrays[j].take(index[j]), np.array([j])) for j in self._gathered]
            return _pandas_frame(blocks, self._labels, len(own) * len(background))
        import polars as pl

        if self._gathered:  # one query gathering them all (a gather per call costs a query)
            gathered = self._source.select(
                pl.col(self._labels[j]).gather(pl.Series(index[j])) for j in self._gathered
            )
            blocks += [
                (gathered.get_column(self._labels[j]), np.array([j])) for j in self._gathered
            ]
        # a NumPy value column converts back to its polars dtype (see _polars_column)
        return pl.DataFrame(
            [
                pl.Series(label, column) if isinstance(column, np.ndarray) else column
                for label, column in zip(self._labels, _columns(blocks), strict=True)
            ]
        )


def _columns(blocks: list[tuple[Any, np.ndarray]]) -> list[Any]:
    """The columns of ``blocks`` (as :meth:`FrameInputs.batch` builds them) in frame order: the
    rows of each 2-D NumPy block, and each other array as it is."""
    columns: dict[int, Any] = {}
    for array, positions in blocks:
        two_d = isinstance(array, np.ndarray) and array.ndim == 2
        columns.update(zip(positions.tolist(), array if two_d else [array], strict=True))
    return [columns[j] for j in range(len(columns))]


def _pandas_column(series: Any) -> Any:
    """The cells of a pandas column as :meth:`FrameInputs.batch` takes them: a NumPy array for
    a column of a NumPy dtype (numbers, booleans, datetimes, timedeltas, objects), else its
    ExtensionArray (strings, categoricals and other extension dtypes keep their exact type)."""
    if isinstance(series.dtype, np.dtype):
        return series.to_numpy()
    return series.array


def _pandas_frame(blocks: list[tuple[Any, np.ndarray]], labels: Any, rows: int) -> Any:
    """A pandas DataFrame of ``rows`` rows from ``blocks``: ``(array, positions)`` pairs, a 2-D
    ``[columns, rows]`` NumPy block of the columns at ``positions`` or a 1-D ExtensionArray of
    one column. With pandas >= 3 the blocks become the frame's blocks as they are (no copy, and
    one block per dtype, as a frame the model's own code made would have: a pipeline reads a
    consolidated frame ~5 % faster); older pandas gets the same frame from the columns (one
    array each) by the dict constructor."""
    import pandas as pd

    try:
        from pandas.api.internals import create_dataframe_from_blocks
    except ImportError:  # pandas < 3
        frame = pd.DataFrame(dict(enumerate(_columns(blocks))), copy=False)
        frame.columns = labels
        return frame
    return create_dataframe_from_blocks(blocks, index=pd.RangeIndex(rows), columns=labels)


def _polars_column(series: Any) -> Any:
    """The cells of a polars column as :meth:`FrameInputs.batch` takes them: a NumPy array for
    a column of numbers or booleans without nulls whose NumPy values convert back to the same
    polars dtype, else the Series itself, gathered by index."""
    import polars as pl

    dtype = series.dtype
    plain = (dtype.is_numeric() and not dtype.is_decimal()) or dtype == pl.Boolean
    if not plain or series.null_count() > 0:
        return series
    try:
        values = series.to_numpy()
    except pl.exceptions.InvalidOperationError:  # no NumPy dtype holds it (128-bit integers)
        return series
    return values if pl.Series(values[:0]).dtype == dtype else series


def _cell_bytes(schema: FrameSchema) -> int:
    """Bytes of one row of a frame of ``schema``, counting :data:`_OBJECT_CELL_BYTES` per
    non-numeric cell."""
    sizes = [numpy_itemsize(schema.library, dtype) for dtype in schema.dtypes]
    return sum(_OBJECT_CELL_BYTES if size is None else size for size in sizes)
