"""Datasets in, explanations out: chunked reading, per-chunk explanation frames, and resumable
Parquet-to-Parquet streaming.

Every dataset output has the key columns first, then ``phi_<feature or position>``, then
``base_value`` (:func:`ferroshap.query.chunks.phi_frame`); each engine says how it explains a
chunk through its ``dataset_values`` method. The same frame function serves :func:`explain_parquet`
on one machine and :func:`ferroshap.distributed.explain_ray` on a cluster, so both give identical
values.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ferroshap._core import InvalidArgumentError, InvalidTypeError
from ferroshap.query.backend import progress_bar
from ferroshap.query.chunks import iter_chunks, phi_frame
from ferroshap.validation import ROWS_LIMIT, check_flag, check_int, check_names

__all__ = ["explain_parquet", "frame_explainer", "iter_chunks"]

FrameExplainer = Callable[[Any], Any]
"""``polars.DataFrame -> polars.DataFrame``: keys, ``phi_*`` columns, ``base_value``."""

MANIFEST = "manifest.json"
"""The file in an :func:`explain_parquet` output folder that records how its parts were made."""

MANIFEST_FORMAT = 1
"""Version of the manifest's layout; a folder written with another version is not resumed."""


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
    return _explain_frames(explainer, columns, keys)[1]


def _explain_frames(
    explainer: Any, columns: Sequence[str], keys: Sequence[str]
) -> tuple[list[str], FrameExplainer]:
    """The output's ``phi_*`` column names and :func:`frame_explainer`'s function."""
    dataset_values = getattr(explainer, "dataset_values", None)
    if not callable(dataset_values):
        raise InvalidTypeError(
            f"explainer must be a ferroshap Explainer, ProxySPEX or FourierSketch, got "
            f"{type(explainer).__name__}",
            argument="explainer",
        )
    columns = check_names(columns, "columns")
    key_columns = check_names(keys, "keys")
    names, values = dataset_values(columns)

    def explain(frame: Any) -> Any:
        phi, base = values(frame)
        return phi_frame(frame.select(key_columns), names, phi, base)

    return names, explain


def explain_parquet(
    path_in: str | Path,
    path_out: str | Path,
    explainer: Any,
    columns: Sequence[str],
    *,
    keys: Sequence[str] = (),
    chunk_size: int = 10_000,
    overwrite: bool = False,
    progress: bool = False,
) -> Path:
    """Explain a Parquet file chunk by chunk into a folder of Parquet parts, resumably.

    Chunk ``i`` (rows ``i * chunk_size`` onwards, in file order) is written to
    ``path_out/part-<i>.parquet`` through a temporary file renamed when complete, so an
    interruption (Ctrl-C, a crash, ``kill -9``) never leaves a half-written part. Before the
    first part, ``path_out/manifest.json`` records how the parts are made: ``chunk_size``,
    ``columns``, ``keys``, the output columns, the input's size, row count and schema, and the
    explainer's settings (its ``dataset_settings()``: method, budget, seed, a fingerprint of
    the background, ...; an explainer without that method is recorded by its type only). A
    rerun with the same settings skips the parts already written; a rerun with other settings
    raises :class:`~ferroshap.InvalidArgumentError` naming what differs, as does a folder
    holding parts without a manifest, so that parts made two ways never mix. The model itself
    is not recorded: a rerun with another model and the same settings resumes. Read the result
    with ``polars.scan_parquet(path_out / "*.parquet")``.

    Parameters
    ----------
    path_in
        The input Parquet file (read batch by batch).
    path_out
        The output folder (created if needed), used by this function alone.
    explainer, columns, keys
        As for :func:`frame_explainer`.
    chunk_size
        Rows per chunk (and per output part).
    overwrite
        Delete the parts and manifest already in ``path_out`` and start over, instead of
        resuming (or refusing different settings).
    progress
        Show a progress bar over chunks (needs tqdm).

    Returns
    -------
    pathlib.Path
        ``path_out``.
    """
    import pyarrow.parquet as pq

    for name, path in (("path_in", path_in), ("path_out", path_out)):
        if not isinstance(path, str | os.PathLike):
            raise InvalidTypeError(
                f"{name} must be a path (str or os.PathLike), got {type(path).__name__}",
                argument=name,
            )
    chunk_size = check_int(chunk_size, "chunk_size", 1, ROWS_LIMIT)
    progress = check_flag(progress, "progress")
    overwrite = check_flag(overwrite, "overwrite")
    columns, keys = check_names(columns, "columns"), check_names(keys, "keys")
    names, explain = _explain_frames(explainer, columns, keys)
    dataset_settings = getattr(explainer, "dataset_settings", None)
    parquet = pq.ParquetFile(str(path_in))
    total, available = parquet.metadata.num_rows, parquet.schema_arrow.names
    for name, wanted in (("columns", columns), ("keys", keys)):
        missing = [column for column in wanted if column not in available]
        if missing:
            raise InvalidArgumentError(
                f"{name}: column(s) {missing} are not in {path_in}, whose columns are {available}",
                argument=name,
            )
    settings = {
        "format": MANIFEST_FORMAT,
        "chunk_size": chunk_size,
        "columns": columns,
        "keys": keys,
        "explainer": (
            dataset_settings()
            if callable(dataset_settings)
            else {"engine": type(explainer).__qualname__}
        ),
        "path_in": {
            "bytes": os.path.getsize(path_in),
            "rows": total,
            "schema": [f"{field.name}: {field.type}" for field in parquet.schema_arrow],
        },
        "output": keys + names + ["base_value"],
    }
    out = Path(path_out)
    _open_output(out, settings, overwrite)
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


def _open_output(out: Path, settings: dict[str, Any], overwrite: bool) -> None:
    """Make ``out`` ready for parts made with ``settings``: start it (its manifest written
    atomically before any part), resume it when its manifest records the same settings, or
    refuse. ``overwrite`` first deletes the parts, then the manifest, so that a crash midway
    leaves either the old manifest over a subset of its parts or parts without a manifest
    (refused until a rerun with ``overwrite=True``), never parts under a foreign manifest."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = out / MANIFEST
    restart = "pass overwrite=True to start over or use another path_out"
    if overwrite:
        for path in [*out.glob("part-*.parquet*"), *out.glob(f"{MANIFEST}*")]:
            path.unlink()
    wanted = json.loads(json.dumps(settings, default=repr))  # as it reads back
    if manifest.exists():
        try:
            written = json.loads(manifest.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            written = None
        if not isinstance(written, dict):
            raise InvalidArgumentError(
                f"path_out: {manifest} is not a ferroshap manifest; {restart}",
                argument="path_out",
            )
        differences = _differences(_flat(written), _flat(wanted))
        if differences:
            raise InvalidArgumentError(
                "; ".join(
                    f"{name}: the output folder was written with {old}, this call has {new}"
                    for name, old, new in differences
                )
                + f"; {restart}",
                argument=_blamed(differences[0][0]),
            )
        return
    if any(out.glob("part-*.parquet")):
        raise InvalidArgumentError(
            f"path_out: {out} holds parts but no {MANIFEST} saying how they were made (written "
            f"by an older ferroshap, or not by ferroshap); {restart}",
            argument="path_out",
        )
    partial = manifest.with_suffix(".json.partial")
    partial.write_text(json.dumps(wanted, indent=1), encoding="utf-8")
    os.replace(partial, manifest)


def _blamed(entry: str) -> str:
    """The :func:`explain_parquet` argument behind a manifest entry (``explainer.budget``)."""
    name = entry.split(".")[0]
    return name if name in ("chunk_size", "columns", "keys", "explainer", "path_in") else "path_out"


def _flat(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``settings`` with nested dicts spread into dotted names (``explainer.budget``)."""
    flat: dict[str, Any] = {}
    for name, value in settings.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{name}."))
        else:
            flat[f"{prefix}{name}"] = value
    return flat


def _differences(written: dict[str, Any], wanted: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(name, written, wanted)`` as text for each entry that differs, those of ``wanted``
    first; an entry missing on one side reads ``nothing``."""
    differences = []
    for name in dict.fromkeys([*wanted, *written]):
        old, new = (repr(d[name]) if name in d else "nothing" for d in (written, wanted))
        if old != new:
            differences.append((name, old, new))
    return differences
