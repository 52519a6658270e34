"""Datasets in, explanations out: chunked reading, per-chunk explanation frames, and resumable
Parquet-to-Parquet streaming.

Every dataset output has the key columns first, then ``phi_<feature or position>``, then
``base_value`` (:func:`ferroshap.datasets.chunks.phi_frame`); each engine says how it explains a
chunk through its ``dataset_values`` method. The same frame function serves :func:`explain_parquet`
on one machine and :func:`ferroshap.distributed.explain_ray` on a cluster, so both give identical
values.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ferroshap.datasets.chunks import iter_chunks, phi_frame
from ferroshap.errors import InvalidTypeError
from ferroshap.query.backend import progress_bar
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
        one sequence column): any object with a ``dataset_values(columns)`` method returning the
        output names and a function ``frame -> (phi, base_values)``. Explainer and ProxySPEX
        must have an int seed: every chunk then uses the same design, so the values do not
        depend on how the dataset is chunked, scheduled or retried.
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
    dataset_values = getattr(explainer, "dataset_values", None)
    if not callable(dataset_values):
        raise InvalidTypeError(
            f"explainer must be a ferroshap Explainer, ProxySPEX or FourierSketch, got "
            f"{type(explainer).__name__}"
        )
    names, values = dataset_values([str(c) for c in columns])
    key_columns = [str(k) for k in keys]

    def explain(frame: Any) -> Any:
        phi, base = values(frame)
        return phi_frame(frame.select(key_columns), names, phi, base)

    return explain


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
