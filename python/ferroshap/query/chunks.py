"""Leaf module of the dataset paths: chunked reading of tabular data and the ``phi_*`` output
frames. It imports no engine, so the engines and :mod:`ferroshap.datasets.parquet` can all use it.

Every dataset output has the key columns first, then ``phi_<feature or position>``, then
``base_value``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ferroshap._core import InvalidArgumentError, InvalidTypeError
from ferroshap.query.backend import to_numpy
from ferroshap.query.frames import is_frame

__all__ = ["fingerprint", "iter_chunks", "phi_frame"]


def fingerprint(*parts: Any) -> str:
    """A SHA-256 hex digest of the shapes, dtypes and cells of ``parts`` (arrays of any
    library, nested lists, numbers, or pandas / polars DataFrames, whose column names count
    too): what the dataset writers record of an explainer's background or a sketch's
    coefficients, so that a resumed run can tell whether they changed.

    Examples
    --------
    >>> fingerprint(np.zeros(2)) == fingerprint(np.zeros(2))
    True
    >>> fingerprint(np.zeros(2)) == fingerprint(np.zeros(2, dtype=np.float32))
    False
    """
    digest = hashlib.sha256()

    def add(array: np.ndarray) -> None:
        array = np.ascontiguousarray(array)
        digest.update(f"{array.dtype.str}{array.shape};".encode())
        digest.update(repr(array.tolist()).encode() if array.dtype.hasobject else array.tobytes())

    for part in parts:
        if is_frame(part):
            for name in part.columns:
                column = part[name]
                digest.update(f"{name}:{column.dtype};".encode())
                add(column.to_numpy())
        else:
            add(to_numpy(part))
    return digest.hexdigest()


def phi_frame(keys: Any, names: Sequence[str], phi: np.ndarray, base: Any) -> Any:
    """The output frame of one chunk: the polars frame ``keys``, then one ``phi_*`` column per
    name (``phi[:, i]``), then ``base_value`` (an array per row, or one number for all).

    Examples
    --------
    >>> import polars as pl
    >>> phi_frame(pl.DataFrame({"id": [1]}), ["phi_a"], np.array([[0.5]]), 2.0).row(0)
    (1, 0.5, 2.0)
    """
    import polars as pl

    base_values = np.broadcast_to(np.asarray(base, dtype=np.float64), (len(phi),))
    return keys.hstack(
        [pl.Series(name, phi[:, i]) for i, name in enumerate(names)]
        + [pl.Series("base_value", base_values)]
    )


def iter_chunks(data: Any, columns: list[str], chunk_size: int) -> Iterator[Any]:
    """Polars DataFrames of at most ``chunk_size`` rows holding ``columns`` of ``data``.

    ``data`` is a polars DataFrame or LazyFrame, a pandas DataFrame, or the path of a Parquet
    file, read batch by batch so that it never sits in memory at once. Missing columns raise
    :class:`InvalidArgumentError` naming them.

    Examples
    --------
    >>> import polars as pl
    >>> [f.height for f in iter_chunks(pl.DataFrame({"a": range(5)}), ["a"], 2)]
    [2, 2, 1]
    """
    import polars as pl

    def check(available: Sequence[str]) -> None:
        missing = [c for c in columns if c not in available]
        if missing:
            raise InvalidArgumentError(
                f"column(s) {missing} not in the data's columns {list(available)}"
            )

    if isinstance(data, str | Path):
        import pyarrow.parquet as pq

        try:
            parquet = pq.ParquetFile(str(data))
        except (OSError, ValueError) as err:
            if isinstance(err, FileNotFoundError):
                raise
            raise InvalidArgumentError(
                f"data: {data} is not a readable Parquet file: {err}"
            ) from err
        check(parquet.schema_arrow.names)
        for batch in parquet.iter_batches(batch_size=chunk_size, columns=columns):
            frame = pl.from_arrow(batch)
            assert isinstance(frame, pl.DataFrame)
            yield frame
        return
    if isinstance(data, pl.LazyFrame):
        check(data.collect_schema().names())
        offset = 0
        while True:
            frame = data.select(columns).slice(offset, chunk_size).collect()
            if frame.height == 0:
                return
            yield frame
            offset += frame.height
    if not isinstance(data, pl.DataFrame):
        if hasattr(data, "columns") and hasattr(data, "iloc"):  # pandas
            check([str(c) for c in data.columns])
            data = pl.from_pandas(data[columns])
        else:
            raise InvalidTypeError(
                "data must be a polars DataFrame or LazyFrame, a pandas DataFrame or a Parquet "
                f"path, got {type(data).__name__}"
            )
    check(data.columns)
    yield from data.select(columns).iter_slices(chunk_size)
