"""pandas and polars DataFrames as model inputs: the model receives frames like the user's.

A frame whose columns all share one numeric (or boolean) dtype is masked as a NumPy array by the
compiled core, and each batch is wrapped back into a frame of the same library, column labels
and dtype (:meth:`FrameSchema.wrap`). Any other frame (strings, categoricals, datetimes, or
numeric columns of different dtypes) is masked cell by cell
(:class:`~ferroshap.query.frame_inputs.FrameInputs`): every column of a batch is gathered from
that column of the background and explained rows, so each cell keeps its exact value and dtype.
Either way the model's frames carry the user's column labels as given: a pandas model indexing
``d[0]`` (integer labels) or ``d[("a", "x")]`` (MultiIndex columns) finds them as in the user's
frame.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ferroshap._core import InvalidArgumentError, InvalidTypeError
from ferroshap.query.backend import as_2d_array, check_finite, to_numpy

__all__ = [
    "FrameSchema",
    "Table",
    "check_frame_finite",
    "collect_frame",
    "frame_model",
    "frame_to_numpy",
    "is_frame",
    "numpy_itemsize",
    "read_rows_like",
    "read_table",
]

_NUMERIC_KINDS = "biuf"


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


def numpy_itemsize(library: str, dtype: Any) -> int | None:
    """Bytes of one cell of a numeric column of ``dtype``, ``None`` for other columns."""
    shared = _shared_numeric_dtype(library, [dtype])
    return None if shared is None else shared.itemsize


def check_frame_finite(frame: Any, schema: FrameSchema, name: str) -> None:
    """Raise :class:`InvalidArgumentError` naming ``name`` and the column if a floating-point
    column of ``frame`` holds NaN or infinite values (other columns are the model's concern)."""
    series = frame.items() if schema.library == "pandas" else enumerate(frame.iter_columns())
    for (_, column), label, dtype in zip(series, schema.columns, schema.dtypes, strict=True):
        if numpy_itemsize(schema.library, dtype) is None:
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


def from_polars(frame: Any, schema: FrameSchema | None) -> Any:
    """Rows of the polars ``frame`` in the form of a background whose schema is ``schema``: a
    NumPy array for array data and frames of one numeric dtype, a pandas frame for a pandas
    background, else ``frame`` itself."""
    if schema is None or schema.is_numeric:
        return frame.to_numpy()
    return frame.to_pandas() if schema.library == "pandas" else frame


def frame_model(function: Callable[[Any], Any], schema: FrameSchema | None) -> Callable[[Any], Any]:
    """``function`` fed frames of ``schema`` built around the compiled path's NumPy batches when
    the schema is numeric; ``function`` itself otherwise."""
    if schema is None or not schema.is_numeric:
        return function

    def on_frames(batch: Any) -> Any:
        return function(schema.wrap(batch) if isinstance(batch, np.ndarray) else batch)

    return on_frames
