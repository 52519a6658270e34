"""Datasets in, explanations out: chunked reading, per-chunk explanation frames, and resumable
Parquet-to-Parquet streaming.

Every dataset output has the key columns first, then ``phi_<feature or position>``, then
``base_value`` (DESIGN.md). The same frame function serves :func:`explain_parquet` on one
machine and :func:`ferroshap.distributed.explain_ray` on a cluster, so both give identical values.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ferroshap.backend import progress_bar
from ferroshap.errors import InvalidArgumentError, InvalidTypeError
from ferroshap.validation import check_int

__all__ = ["explain_parquet", "frame_explainer", "iter_chunks"]

FrameExplainer = Callable[[Any], Any]
"""``polars.DataFrame -> polars.DataFrame``: keys, ``phi_*`` columns, ``base_value``."""


def frame_explainer(
    explainer: Any, columns: Sequence[str], keys: Sequence[str] = ()
) -> FrameExplainer:
    """A function that explains the rows of a polars frame.

    Parameters
    ----------
    explainer
        An :class:`ferroshap.Explainer` or a :class:`ferroshap.ProxySPEX` with a masker
        (``columns`` are the features, in order; ProxySPEX reports the Shapley values of its
        surrogate, one fit per row) or a :class:`ferroshap.FourierSketch` (``columns`` is the
        one sequence column). Explainer and ProxySPEX must have an int seed: every chunk then
        uses the same design, so the values do not depend on how the dataset is chunked,
        scheduled or retried.
    columns
        Input columns, see above.
    keys
        Columns copied to the output first.

    Examples
    --------
    >>> import numpy as np, polars as pl, ferroshap as fs
    >>> ex = fs.Explainer(lambda z: z.sum(1), np.zeros((1, 2)), method="exact")
    >>> explain = frame_explainer(ex, ["a", "b"], keys=["id"])
    >>> explain(pl.DataFrame({"id": [7], "a": [1.0], "b": [2.0]})).row(0)
    (7, 1.0, 2.0, 0.0)
    """
    from ferroshap.explainer import Explainer
    from ferroshap.proxyspex import ProxySPEX
    from ferroshap.sketch import FourierSketch

    columns, keys = [str(c) for c in columns], [str(k) for k in keys]
    if isinstance(explainer, FourierSketch):
        if len(columns) != 1:
            raise InvalidArgumentError(
                f"columns: a FourierSketch explains one sequence column, got {columns}"
            )
        names = [f"phi_{i}" for i in range(explainer.length)]
        sequence = columns[0]

        def values(frame: Any) -> tuple[np.ndarray, np.ndarray]:
            explanation = explainer.shapley_values(frame[sequence])
            return explanation.values, explanation.base_values

    elif isinstance(explainer, ProxySPEX):
        _check_int_seed(explainer)
        if explainer.masker is None:
            raise InvalidArgumentError(
                "explainer: a ProxySPEX on a raw game has no rows to explain; give it a masker"
            )
        names = [f"phi_{c}" for c in columns]
        empty = np.zeros((1, len(columns)), dtype=bool)

        def values(frame: Any) -> tuple[np.ndarray, np.ndarray]:
            explained = [explainer.explain(row) for row in frame.select(columns).to_numpy()]
            phi = np.stack([iv.shapley_values() for iv in explained])
            return phi, np.array([iv.predict(empty)[0] for iv in explained])

    elif isinstance(explainer, Explainer):
        _check_int_seed(explainer)
        grouped = explainer.groups
        n_inputs = explainer.n_players if grouped is None else grouped.n_features
        if len(columns) != n_inputs:
            raise InvalidArgumentError(
                f"columns: {len(columns)} columns for an explainer of {n_inputs} features"
            )
        names = [f"phi_{c}" for c in (columns if grouped is None else grouped.names)]

        def values(frame: Any) -> tuple[np.ndarray, np.ndarray]:
            explanation = explainer(frame.select(columns).to_numpy())
            if explanation.values.ndim != 2:
                raise InvalidArgumentError(
                    "model: datasets need a model with one output (use output_index=...)"
                )
            return explanation.values, explanation.base_values

    else:
        raise InvalidTypeError(
            f"explainer must be a ferroshap Explainer, ProxySPEX or FourierSketch, got "
            f"{type(explainer).__name__}"
        )

    def explain(frame: Any) -> Any:
        import polars as pl

        phi, base = values(frame)
        return frame.select(keys).hstack(
            [pl.Series(name, phi[:, i]) for i, name in enumerate(names)]
            + [pl.Series("base_value", np.asarray(base, dtype=np.float64))]
        )

    return explain


def _check_int_seed(explainer: Any) -> None:
    """Datasets need one design (or mask set) for every chunk: an int seed."""
    if not isinstance(explainer.seed, int):
        raise InvalidArgumentError(
            f"seed: datasets need a {type(explainer).__name__} with an int seed (one design for "
            f"every chunk), got {type(explainer.seed).__name__}"
        )


def explain_parquet(
    path_in: str | Path,
    path_out: str | Path,
    explainer: Any,
    columns: Sequence[str],
    *,
    keys: Sequence[str] = (),
    chunk_size: int = 10_000,
    progress: bool = False,
) -> Path:
    """Explain a Parquet file chunk by chunk into a folder of Parquet parts, resumably.

    Chunk ``i`` (rows ``i * chunk_size`` onwards, in file order) is written to
    ``path_out/part-<i>.parquet`` through a temporary file renamed when complete, so an
    interruption (Ctrl-C, a crash) never leaves a half-written part, and a rerun with the same
    arguments skips the parts already written. Read the result with
    ``polars.scan_parquet(path_out / "*.parquet")``.

    Parameters
    ----------
    path_in
        The input Parquet file (read batch by batch).
    path_out
        The output folder (created if needed).
    explainer, columns, keys
        As for :func:`frame_explainer`.
    chunk_size
        Rows per chunk (and per output part). Keep it fixed between a run and its resumption.
    progress
        Show a progress bar over chunks (needs tqdm).

    Returns
    -------
    pathlib.Path
        ``path_out``.
    """
    import pyarrow.parquet as pq

    chunk_size = check_int(chunk_size, "chunk_size", 1)
    explain = frame_explainer(explainer, columns, keys)
    out = Path(path_out)
    out.mkdir(parents=True, exist_ok=True)
    total = pq.ParquetFile(str(path_in)).metadata.num_rows
    needed = list(dict.fromkeys([*keys, *columns]))
    bar = progress_bar(-(-total // chunk_size), progress, desc="chunks")
    try:
        for index, frame in enumerate(iter_chunks(path_in, needed, chunk_size)):
            part = out / f"part-{index:06d}.parquet"
            if not part.exists():
                partial = part.with_suffix(".parquet.partial")
                explain(frame).write_parquet(partial)
                os.replace(partial, part)
            bar.update(1)
    finally:
        bar.close()
    return out


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
