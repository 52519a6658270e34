"""Ray Data against one process: 10 000 rows, near-free model, n = 100, budget 2048.

Run: ``OPENBLAS_NUM_THREADS=1 python benches/bench_distributed.py [--rows 10000]``. Prints the
single-process time (``explain_parquet`` of the same rows), Ray's end-to-end time after
``ray.init`` and their ratio (target: under 2 on 2 cores), and the largest difference between
the two results (rounding only: batches group rows differently). Ray's workers run BLAS on one
thread; set ``OPENBLAS_NUM_THREADS=1`` so that the single process does too, or the near-free
model's many small matrix products pay for thread synchronisation there alone.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

import ferroshap as fs
from ferroshap.datasets.parquet import explain_parquet

N = 100
RNG = np.random.default_rng(0)
WEIGHTS = RNG.normal(size=N)
PAIRS = RNG.choice(N, size=(5, 2))


def model(z: np.ndarray) -> np.ndarray:
    """Linear plus a few pairwise products: the model costs almost nothing."""
    return z @ WEIGHTS + (z[:, PAIRS[:, 0]] * z[:, PAIRS[:, 1]]).sum(axis=1)


def make_explainer() -> fs.Explainer:
    """One baseline row, budget 2048, master seed 0."""
    return fs.Explainer(model, np.zeros((1, N)), budget=2048, seed=0, method="leverage")


def _largest_difference(a: pl.DataFrame, b: pl.DataFrame) -> float:
    """Largest absolute difference between two results with the same rows and columns."""
    if a.shape != b.shape or a["id"].to_list() != b["id"].to_list():
        return float("inf")
    return float(np.abs(a.drop("id").to_numpy() - b.drop("id").to_numpy()).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=1000)
    args = parser.parse_args()
    columns = [f"x{i}" for i in range(N)]
    frame = pl.DataFrame({"id": np.arange(args.rows)}).hstack(
        [pl.Series(c, RNG.normal(size=args.rows)) for c in columns]
    )
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "rows.parquet"
        frame.write_parquet(source)
        start = time.perf_counter()
        explain_parquet(
            source,
            Path(folder) / "out",
            make_explainer(),
            columns,
            keys=["id"],
            chunk_size=args.batch_size,
        )
        single = time.perf_counter() - start
        local = pl.read_parquet(Path(folder) / "out" / "*.parquet").sort("id")

    import ray

    from ferroshap.distributed import explain_ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        start = time.perf_counter()
        result = explain_ray(
            ray.data.from_arrow(frame.to_arrow()),
            make_explainer,
            columns,
            keys=["id"],
            rows_per_batch=args.batch_size,
            concurrency=args.concurrency,
        )
        remote = pl.from_pandas(result.to_pandas()).sort("id")
        distributed = time.perf_counter() - start
    finally:
        ray.shutdown()
    print(
        f"{args.rows} rows, n = {N}, budget 2048: one process {single:.2f} s, Ray "
        f"{distributed:.2f} s (concurrency {args.concurrency}), ratio {distributed / single:.2f}; "
        f"largest difference between the two: {_largest_difference(local, remote):.1e}"
    )


if __name__ == "__main__":
    main()
