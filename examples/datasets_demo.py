"""Explain a Parquet dataset chunk by chunk (resumable), and the same rows with Ray Data.

Run: ``python examples/datasets_demo.py [--quick]``. The Ray part runs when Ray is installed
(``pip install 'ferroshap[ray]'``) and gives the single-machine run's values.
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

import ferroshap as fs
from ferroshap.datasets.parquet import explain_parquet

N = 12
COLUMNS = [f"x{i}" for i in range(N)]
WEIGHTS = np.linspace(-1.0, 1.0, N)


def model(z: np.ndarray) -> np.ndarray:
    """A small nonlinear model (module-level, so Ray can ship it to its actors)."""
    return np.tanh(z @ WEIGHTS) + z[:, 0] * z[:, 1]


def make_explainer() -> fs.Explainer:
    """The explainer every worker builds: background and master seed fixed."""
    background = np.random.default_rng(1).normal(size=(16, N))
    return fs.Explainer(model, background, method="leverage", budget=256, seed=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rows (for tests)")
    parser.add_argument("--rows", type=int, default=20_000)
    args = parser.parse_args()
    rows = 600 if args.quick else args.rows
    rng = np.random.default_rng(0)
    frame = pl.DataFrame({"id": np.arange(rows)}).hstack(
        [pl.Series(c, rng.normal(size=rows)) for c in COLUMNS]
    )
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "rows.parquet", Path(folder) / "explained"
        frame.write_parquet(source)
        start = time.perf_counter()
        explain_parquet(source, target, make_explainer(), COLUMNS, keys=["id"], chunk_size=256)
        local = pl.read_parquet(target / "*.parquet").sort("id")
        print(f"parquet: {local.height} rows explained in {time.perf_counter() - start:.2f} s")
        print(local.head(3))
        if importlib.util.find_spec("ray") is None:
            print("ray: not installed, skipped")
            return
        import ray

        from ferroshap.distributed import explain_ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            start = time.perf_counter()
            dataset = ray.data.from_arrow(frame.to_arrow())
            result = explain_ray(dataset, make_explainer, COLUMNS, keys=["id"], rows_per_batch=256)
            remote = pl.from_pandas(result.to_pandas()).sort("id")
            seconds = time.perf_counter() - start
        finally:
            ray.shutdown()
        same = np.allclose(remote.to_numpy(), local.to_numpy(), rtol=1e-12, atol=1e-14)
        print(
            f"ray: {remote.height} rows in {seconds:.2f} s; same values as the parquet run: {same}"
        )


if __name__ == "__main__":
    main()
