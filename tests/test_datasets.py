"""Datasets: chunked Parquet streaming (resumable) and Ray Data give the single-machine values."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import ferroshap as fs
from ferroshap.datasets.parquet import explain_parquet, frame_explainer

N, ROWS = 5, 150
COLUMNS = [f"f{i}" for i in range(N)]


def model(z: np.ndarray) -> np.ndarray:
    return np.tanh(z[:, 0] - z[:, 1]) + z[:, 2] * z[:, 3] + 0.5 * z[:, 4]


def make_explainer() -> fs.Explainer:
    background = np.random.default_rng(1).normal(size=(8, N))
    return fs.Explainer(model, background, budget=24, seed=7, method="leverage")


@pytest.fixture
def table(tmp_path: Path) -> tuple[pl.DataFrame, Path]:
    rng = np.random.default_rng(0)
    frame = pl.DataFrame({"id": np.arange(ROWS)}).hstack(
        [pl.Series(c, rng.normal(size=ROWS)) for c in COLUMNS]
    )
    path = tmp_path / "rows.parquet"
    frame.write_parquet(path)
    return frame, path


def make_exact_explainer(background: np.ndarray) -> fs.Explainer:
    return fs.Explainer(model, background, method="exact")


def reference(frame: pl.DataFrame) -> np.ndarray:
    return make_explainer()(frame.select(COLUMNS).to_numpy()).values


def test_frame_columns_follow_the_convention(table) -> None:
    frame, _ = table
    out = frame_explainer(make_explainer(), COLUMNS, keys=["id"])(frame)
    assert out.columns == ["id", *[f"phi_{c}" for c in COLUMNS], "base_value"]
    np.testing.assert_array_equal(
        out.select(f"phi_{c}" for c in COLUMNS).to_numpy(), reference(frame)
    )


def test_parquet_streaming_matches_and_resumes_after_an_interruption(table, tmp_path) -> None:
    frame, path = table
    out = tmp_path / "out"
    calls = []

    def interrupting(z: np.ndarray) -> np.ndarray:
        calls.append(len(z))
        if len(calls) > 4:  # each 40-row chunk makes 2 model calls (v(∅), then one batch)
            raise KeyboardInterrupt
        return model(z)

    background = np.random.default_rng(1).normal(size=(8, N))
    interrupted = fs.Explainer(interrupting, background, budget=24, seed=7, method="leverage")
    with pytest.raises(KeyboardInterrupt):
        explain_parquet(path, out, interrupted, COLUMNS, keys=["id"], chunk_size=40)
    # The manifest, two complete parts, and nothing half-written from the interrupted third chunk.
    assert sorted(p.name for p in out.iterdir()) == [
        "manifest.json",
        "part-000000.parquet",
        "part-000001.parquet",
    ]

    explain_parquet(path, out, make_explainer(), COLUMNS, keys=["id"], chunk_size=40)
    result = pl.read_parquet(out / "*.parquet").sort("id")
    assert result["id"].to_list() == list(range(ROWS))  # every row exactly once
    # Chunks of 40 rows against one call on all rows: equal up to rounding.
    np.testing.assert_allclose(
        result.select(f"phi_{c}" for c in COLUMNS).to_numpy(),
        reference(frame),
        rtol=1e-12,
        atol=1e-14,
    )


def test_proxyspex_rows_are_explained_one_by_one(table) -> None:
    frame, _ = table
    background = np.random.default_rng(1).normal(size=(4, N))
    spex = fs.ProxySPEX(model, masker=fs.maskers.Baseline(background), budget=64, seed=3)
    head = frame.head(3)
    # With 5 features ProxySPEX's smallest budget (48) covers all 2^5 coalitions, so each row is
    # computed exactly (with a warning per row, expected here): the frame must hold those values.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        out = frame_explainer(spex, COLUMNS, keys=["id"])(head)
        expected = [spex.explain(x) for x in head.select(COLUMNS).to_numpy()]
    exact = make_exact_explainer(background)(head.select(COLUMNS).to_numpy()).values
    for row, iv, truth in zip(out.iter_rows(), expected, exact, strict=True):
        np.testing.assert_allclose(
            row[1 : 1 + N], iv.shapley_values().values[0], rtol=1e-12, atol=1e-12
        )
        np.testing.assert_allclose(row[1 : 1 + N], truth, rtol=1e-9, atol=1e-9)


def test_datasets_need_an_int_seed() -> None:
    explainer = fs.Explainer(
        model, np.zeros((1, N)), seed=np.random.default_rng(0), method="leverage"
    )
    with pytest.raises(fs.InvalidArgumentError, match="seed"):
        frame_explainer(explainer, COLUMNS)


ray = pytest.importorskip("ray", reason="Ray is not installed")
from ferroshap.distributed import explain_ray  # noqa: E402 -- needs ray, imported after the skip


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    # Ray workers cannot import this test module: ship its functions by value.
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    yield
    ray.shutdown()


def crash_once_factory(marker: str):
    """An explainer factory whose first model call in the whole run kills its actor."""

    def factory() -> fs.Explainer:
        background = np.random.default_rng(1).normal(size=(8, N))

        def fragile(z: np.ndarray) -> np.ndarray:
            if len(z) > len(background) and not os.path.exists(marker):
                Path(marker).touch()
                os._exit(1)  # the actor process dies mid-batch
            return model(z)

        return fs.Explainer(fragile, background, budget=24, seed=7, method="leverage")

    return factory


def test_ray_matches_the_single_machine_path_despite_a_killed_actor(
    local_ray, table, tmp_path
) -> None:
    frame, _ = table
    dataset = ray.data.from_arrow(frame.to_arrow()).repartition(5)
    marker = str(tmp_path / "crashed")
    result = explain_ray(
        dataset, crash_once_factory(marker), COLUMNS, keys=["id"], rows_per_batch=32, concurrency=1
    )
    out = pl.from_pandas(result.to_pandas()).sort("id")
    assert os.path.exists(marker), "the actor was meant to crash once"
    assert out["id"].to_list() == list(range(ROWS))
    # Ray's batches group rows differently from the reference call: equal up to rounding.
    np.testing.assert_allclose(
        out.select(f"phi_{c}" for c in COLUMNS).to_numpy(), reference(frame), rtol=1e-12, atol=1e-14
    )
