"""pandas and polars DataFrames as model inputs: the model receives frames like the user's.

A frame whose columns all share one numeric (or boolean) dtype is masked as a NumPy array by the
compiled core, and each batch is wrapped back into a frame of the same library, column labels and
dtype (:meth:`FrameSchema.wrap`). Any other frame (strings, categoricals, datetimes, or numeric
columns of different dtypes) is masked cell by cell by :class:`FrameInputs`: every column of a
batch is gathered from that column of the background and explained rows, so each cell keeps its
exact value and dtype. Either way the model's frames carry the user's column labels as given: a
pandas model indexing ``d[0]`` (integer labels) or ``d[("a", "x")]`` (MultiIndex columns) finds
them as in the user's frame.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ferroshap.errors import InvalidArgumentError, InvalidTypeError
from ferroshap.query.backend import as_2d_array, check_finite, to_numpy

__all__ = [
    "FrameInputs",
    "FrameSchema",
    "Table",
    "check_frame_finite",
    "collect_frame",
    "frame_model",
    "frame_to_numpy",
    "is_frame",
    "read_rows_like",
    "read_table",
]

_NUMERIC_KINDS = "biuf"
_OBJECT_CELL_BYTES = 16
"""Bytes counted per cell of a non-numeric column when sizing chunks (a pointer plus part of a
short string)."""


def _library(data: Any) -> str | None:
    """``"pandas"`` or ``"polars"`` when ``data`` is a DataFrame (or polars LazyFrame) of it."""
    module = type(data).__module__.split(".")[0]
    if module == "pandas" and type(data).__name__ == "DataFrame":
        return "pandas"
    if module == "polars" and type(data).__name__ in ("DataFrame", "LazyFrame"):
        return "polars"
    return None


def _series_library(data: Any) -> str | None:
    """``"pandas"`` or ``"polars"`` when ``data`` is a Series of that library."""
    module = type(data).__module__.split(".")[0]
    if module in ("pandas", "polars") and type(data).__name__ == "Series":
        return module
    return None


def is_frame(data: Any) -> bool:
    """Whether ``data`` is a pandas DataFrame or a polars DataFrame / LazyFrame.

    Examples
    --------
    >>> import numpy as np
    >>> is_frame(np.zeros((2, 2)))
    False
    """
    return _library(data) is not None


def collect_frame(data: Any) -> Any:
    """``data`` with a polars LazyFrame collected; anything else unchanged."""
    if type(data).__name__ == "LazyFrame" and _library(data) == "polars":
        return data.collect()
    return data


@dataclass(frozen=True)
class FrameSchema:
    """Library, column names and dtypes of a DataFrame.

    Attributes
    ----------
    library
        ``"pandas"`` or ``"polars"``.
    columns
        Column names, as strings (``str`` of each label: the feature names).
    dtypes
        One dtype per column, in the library's own terms.
    numeric_dtype
        The NumPy dtype shared by every column when they all hold numbers or booleans of one
        dtype (the compiled masking path), else ``None``.
    labels
        The column labels as the frame holds them, which the model's frames get: a pandas
        ``Index`` (integers, tuples of a ``MultiIndex``, its level names), polars names.
    """

    library: str
    columns: list[str]
    dtypes: list[Any]
    numeric_dtype: np.dtype | None
    labels: Any = field(default=None, compare=False)

    @classmethod
    def of(cls, frame: Any) -> FrameSchema:
        """The schema of a collected pandas or polars DataFrame."""
        library = _library(frame)
        if library is None:
            raise InvalidTypeError(f"expected a pandas or polars DataFrame, got {type(frame)}")
        columns = [str(column) for column in frame.columns]
        dtypes = list(frame.dtypes)
        numeric = _shared_numeric_dtype(library, dtypes)
        return cls(library, columns, dtypes, numeric, frame.columns)

    @property
    def is_numeric(self) -> bool:
        """Whether the compiled path masks this frame (one shared numeric dtype)."""
        return self.numeric_dtype is not None

    def check_matches(self, other: FrameSchema, name: str, reference: str) -> None:
        """Raise unless ``other`` (the schema of argument ``name``) has this schema's library,
        column names, order and dtypes; ``reference`` names this schema's argument."""
        if other.library != self.library:
            raise InvalidTypeError(
                f"{name} is a {other.library} DataFrame but {reference} is a {self.library} "
                f"DataFrame; pass both from the same library",
                argument=name,
            )
        if other.columns != self.columns:
            raise InvalidArgumentError(
                f"{name} columns {other.columns} differ from {reference} columns "
                f"{self.columns}; they must have the same names in the same order",
                argument=name,
            )
        for column, mine, theirs in zip(self.columns, self.dtypes, other.dtypes, strict=True):
            if str(mine) != str(theirs):
                raise InvalidTypeError(
                    f"{name} column {column!r} has dtype {theirs} but {reference} column "
                    f"{column!r} has dtype {mine}; cast them to one dtype",
                    argument=name,
                )

    def one_row(self, series: Any, name: str, reference: str) -> Any:
        """A one-row frame of this schema (the schema of argument ``reference``) holding the
        cells of ``series``, argument ``name``. A pandas Series is matched to the columns by its
        labels (as ``frame.iloc[i]`` gives a row, in any order); a polars Series, which has no
        labels, by position. Each cell is cast to its column's dtype; a cell that does not fit
        raises :class:`InvalidTypeError` naming the column."""
        library = _series_library(series)
        if library == "pandas":
            found = series.index.get_indexer(self.labels) if series.index.is_unique else None
            if len(series) != len(self.columns) or found is None or (found < 0).any():
                raise InvalidArgumentError(
                    f"{name} is a pandas Series labelled {[str(label) for label in series.index]}"
                    f"; as one row it needs one cell for each column of {reference}, labelled "
                    f"{self.columns}",
                    argument=name,
                )
            cells = series.to_numpy(dtype=object)[found]
        else:
            if len(series) != len(self.columns):
                raise InvalidArgumentError(
                    f"{name} is a {library} Series of {len(series)} cells; as one row it needs "
                    f"one cell for each of the {len(self.columns)} columns of {reference}",
                    argument=name,
                )
            cells = series.to_list()
        return self._frame_of_cells(list(cells), name)

    def _frame_of_cells(self, cells: list[Any], name: str) -> Any:
        """The one-row frame of this schema whose cells are ``cells`` (argument ``name``)."""
        columns = []
        for column, cell, dtype in zip(self.columns, cells, self.dtypes, strict=True):
            try:
                if self.library == "pandas":
                    import pandas as pd

                    series = pd.Series([cell], dtype=dtype)
                    # a cell outside a categorical's categories becomes a missing value
                    fits = not series.isna().iloc[0] or bool(pd.isna(cell))
                else:
                    import polars as pl

                    series, fits = pl.Series(column, [cell], dtype=dtype), True
            except Exception as err:  # each library raises its own conversion errors
                raise InvalidTypeError(
                    f"{name} cell {cell!r} of column {column!r} does not fit its dtype {dtype}: "
                    f"{err}",
                    argument=name,
                ) from err
            if not fits:
                raise InvalidTypeError(
                    f"{name} cell {cell!r} of column {column!r} is not a value of its dtype "
                    f"{dtype}",
                    argument=name,
                )
            columns.append(series)
        if self.library == "polars":
            import polars as pl

            return pl.DataFrame(columns)
        import pandas as pd

        frame = pd.concat(columns, axis=1, ignore_index=True)
        frame.columns = self.labels
        return frame

    def wrap(self, batch: np.ndarray) -> Any:
        """A frame of this schema around the 2-D array ``batch`` (no copy for pandas)."""
        if self.library == "pandas":
            import pandas as pd

            return pd.DataFrame(batch, columns=self.labels, copy=False)
        import polars as pl

        schema = dict(zip(self.columns, self.dtypes, strict=True))
        return pl.from_numpy(batch, schema=schema, orient="row")


def _shared_numeric_dtype(library: str, dtypes: list[Any]) -> np.dtype | None:
    """The NumPy dtype of every column when they share one numeric or boolean dtype."""
    if library == "pandas":
        if not all(isinstance(dtype, np.dtype) for dtype in dtypes) or len(set(dtypes)) != 1:
            return None
        dtype = dtypes[0]
        return dtype if dtype.kind in _NUMERIC_KINDS else None
    if len({str(dtype) for dtype in dtypes}) != 1:
        return None
    dtype = dtypes[0]
    if not (dtype.is_numeric() or str(dtype) == "Boolean") or dtype.is_decimal():
        return None
    import polars as pl

    return np.dtype(pl.Series([], dtype=dtype).to_numpy().dtype)


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
            if _numpy_itemsize(self.schema.library, dtype) is None
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
    sizes = [_numpy_itemsize(schema.library, dtype) for dtype in schema.dtypes]
    return sum(_OBJECT_CELL_BYTES if size is None else size for size in sizes)


def _numpy_itemsize(library: str, dtype: Any) -> int | None:
    """Bytes of one cell of a numeric column of ``dtype``, ``None`` for other columns."""
    shared = _shared_numeric_dtype(library, [dtype])
    return None if shared is None else shared.itemsize


def check_frame_finite(frame: Any, schema: FrameSchema, name: str) -> None:
    """Raise :class:`InvalidArgumentError` naming ``name`` and the column if a floating-point
    column of ``frame`` holds NaN or infinite values (other columns are the model's concern)."""
    series = frame.items() if schema.library == "pandas" else enumerate(frame.iter_columns())
    for (_, column), label, dtype in zip(series, schema.columns, schema.dtypes, strict=True):
        if _numpy_itemsize(schema.library, dtype) is None:
            continue
        values = np.asarray(column.to_numpy())
        if values.dtype.kind == "f" and not np.isfinite(values).all():
            raise InvalidArgumentError(
                f"{name} column {label!r} contains NaN or infinite values", argument=name
            )


def frame_to_numpy(frame: Any) -> np.ndarray:
    """The cells of ``frame`` as a 2-D NumPy array (object dtype for mixed columns)."""
    return np.asarray(frame.to_numpy())


@dataclass(frozen=True)
class Table:
    """Validated rows of a tabular input, as the masking code takes them.

    Attributes
    ----------
    values
        What the games mask: a 2-D array (NumPy or another array library; also a numeric frame's
        cells), or the collected frame itself when its columns are not one numeric dtype.
    schema
        The frame's schema, or ``None`` when the input was not a DataFrame.
    names
        Column names of a DataFrame input, else ``None``.
    frame
        The (collected) DataFrame itself, else ``None``.
    """

    values: Any
    schema: FrameSchema | None
    names: list[str] | None
    frame: Any = None

    @property
    def n_columns(self) -> int:
        """Number of features."""
        return int(self.values.shape[1])

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return int(self.values.shape[0])

    def numpy(self) -> np.ndarray:
        """The rows as a host NumPy array (object dtype for mixed frames)."""
        return frame_to_numpy(self.values) if is_frame(self.values) else to_numpy(self.values)


def read_table(data: Any, name: str) -> Table:
    """Validate ``data`` (an array, a nested list, or a pandas / polars DataFrame or polars
    LazyFrame, which is collected) as the non-empty rows of argument ``name``.

    Examples
    --------
    >>> read_table([[1.0, 2.0]], "X").values.shape
    (1, 2)
    """
    data = collect_frame(data)
    if not is_frame(data):
        array, _ = as_2d_array(data, name)
        check_finite(array, name)
        return Table(array, None, None)
    schema = FrameSchema.of(data)
    if data.shape[0] == 0 or data.shape[1] == 0:
        raise InvalidArgumentError(
            f"{name} must have at least one row and one column, got shape {data.shape}",
            argument=name,
        )
    if schema.is_numeric:
        array, names = as_2d_array(data, name)
        check_finite(array, name)
        return Table(array, schema, names, data)
    check_frame_finite(data, schema, name)
    return Table(data, schema, schema.columns, data)


def read_rows_like(data: Any, reference: Table, name: str, reference_name: str) -> Table:
    """Validate ``data`` as rows to mask against ``reference`` (the background): the same
    number of features and, when both are DataFrames, the same columns and dtypes. A NumPy
    ``data`` is accepted against a numeric frame; a non-numeric frame needs a frame. A pandas
    or polars Series against a frame is one row (see :meth:`FrameSchema.one_row`)."""
    if reference.schema is not None and _series_library(data) is not None:
        data = reference.schema.one_row(data, name, reference_name)
    table = read_table(data, name)
    if reference.schema is not None and not reference.schema.is_numeric and table.schema is None:
        raise InvalidTypeError(
            f"{name} must be a {reference.schema.library} DataFrame with columns "
            f"{reference.schema.columns} like {reference_name} (its columns are not all "
            f"numbers), or one row of them as a Series",
            argument=name,
        )
    if reference.schema is not None and table.schema is not None:
        reference.schema.check_matches(table.schema, name, reference_name)
    elif table.n_columns != reference.n_columns:
        raise InvalidArgumentError(
            f"{name} has {table.n_columns} features but {reference_name} has "
            f"{reference.n_columns}; they must match",
            argument=name,
        )
    return table


def frame_model(function: Callable[[Any], Any], schema: FrameSchema | None) -> Callable[[Any], Any]:
    """``function`` fed frames of ``schema`` built around the compiled path's NumPy batches when
    the schema is numeric; ``function`` itself otherwise."""
    if schema is None or not schema.is_numeric:
        return function

    def on_frames(batch: Any) -> Any:
        return function(schema.wrap(batch) if isinstance(batch, np.ndarray) else batch)

    return on_frames
