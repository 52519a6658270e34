"""Explain datasets that outgrow one machine with Ray Data (optional: ``ferroshap[ray]``).

``explain_ray`` maps an actor over the dataset's batches: each actor builds its explainer once
(the model is loaded, the sketch broadcast, the design planned and factorized once per actor)
and turns every batch into the key columns, one ``phi_<feature or position>`` column per
feature and ``base_value``. The values come from :func:`ferroshap.datasets.parquet.frame_explainer`,
the same function as on one machine, with one design for every row of the master seed, so they
equal the single-machine path however Ray schedules or retries the work (bit for bit for the
same batches, to rounding when batches group rows differently).
A batch whose actor dies is retried by Ray on a fresh actor; its rows are neither lost nor
duplicated.

Point the same call at a cluster by connecting first: ``ray.init(address="ray://head:10001")``
(or ``address="auto"`` on a cluster node); ``concurrency`` then counts actors across the
cluster and ``num_gpus`` reserves GPUs per actor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ferroshap.datasets.parquet import frame_explainer

__all__ = ["explain_ray"]


class _ExplainActor:
    """Holds one explainer per Ray actor and explains the batches sent to it."""

    def __init__(
        self, factory: Callable[[], Any], columns: Sequence[str], keys: Sequence[str]
    ) -> None:
        self._explain = frame_explainer(factory(), columns, keys)

    def __call__(self, batch: Any) -> Any:
        import polars as pl

        frame = pl.from_arrow(batch)
        return self._explain(frame).to_arrow()


def explain_ray(
    dataset: Any,
    explainer_factory: Callable[[], Any],
    columns: Sequence[str],
    *,
    keys: Sequence[str] = (),
    rows_per_batch: int = 1024,
    concurrency: int = 1,
    num_gpus: float = 0,
    **map_batches_args: Any,
) -> Any:
    """Explain every row of a Ray Dataset.

    Parameters
    ----------
    dataset
        A ``ray.data.Dataset``.
    explainer_factory
        A picklable function returning a :class:`ferroshap.Explainer` (with an int seed: the
        master seed) or a :class:`ferroshap.FourierSketch`; called once per actor.
    columns, keys
        As for :func:`ferroshap.datasets.parquet.frame_explainer`.
    rows_per_batch
        Dataset rows per Ray batch handed to an actor (``Dataset.map_batches``'s
        ``batch_size``; the explainer's own ``batch_size`` is model rows per model call).
    concurrency
        Number of actors (each takes one CPU unless ``num_cpus`` says otherwise; leave CPUs
        free for Ray Data's read tasks, or a small machine deadlocks).
    num_gpus
        GPUs reserved per actor.
    map_batches_args
        Passed on to ``Dataset.map_batches``.

    Returns
    -------
    ray.data.Dataset
        Lazily computed: keys, ``phi_*`` columns, ``base_value``.
    """
    try:
        import ray.data
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "explain_ray needs Ray Data: pip install 'ferroshap[ray]' (or 'ray[data]')"
        ) from err
    return dataset.map_batches(
        _ExplainActor,
        fn_constructor_args=(explainer_factory, list(columns), list(keys)),
        batch_size=rows_per_batch,
        batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=concurrency),
        num_gpus=num_gpus,
        **map_batches_args,
    )
