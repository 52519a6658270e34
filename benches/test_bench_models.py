"""pytest-benchmark suites for the tree and sketch hot paths (no timing assertions).

Tree extraction (LightGBM model text to summed Fourier coefficients), sketch decode (peeling
the query values of an exactly sparse function) and sketch explain (Shapley values of 10 000
sequences). Run ``pytest benches/ --benchmark-disable`` for a quick smoke run.
"""

from __future__ import annotations

import lightgbm
import numpy as np
import pytest

from ferroshap import _core

N_TREE_PLAYERS, N_TREES = 128, 1000
Q, LENGTH, N_TERMS = 4, 20, 100


@pytest.fixture(scope="module")
def model_text() -> str:
    """1 000 trees of depth 5 on random masks of 128 players."""
    rng = np.random.default_rng(0)
    masks = rng.random((4000, N_TREE_PLAYERS)) < 0.5
    y = masks[:, :10].sum(axis=1) + masks[:, 0] * masks[:, 1] + rng.normal(0, 0.1, len(masks))
    booster = lightgbm.train(
        {
            "max_depth": 5,
            "num_leaves": 32,
            "learning_rate": 0.05,
            "verbose": -1,
            "deterministic": True,
            "num_threads": 1,
            "seed": 0,
        },
        lightgbm.Dataset(masks.astype(np.float64), y),
        num_boost_round=N_TREES,
    )
    return booster.model_to_string()


def test_tree_extraction(benchmark, model_text: str) -> None:
    """Model text to the ensemble's exact Fourier coefficients."""
    spectrum = benchmark(_core.lightgbm_fourier, model_text, N_TREE_PLAYERS)
    assert spectrum.shapley_values().shape == (N_TREE_PLAYERS,)


def sparse_values(queries: np.ndarray, keys: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """``Re Σ_k F[k] ω^{<x, k>}`` of an exactly sparse q-ary function at the query sequences."""
    phases = (queries.astype(np.int64) @ keys.T.astype(np.int64)) % Q
    return (np.exp(2j * np.pi * phases / Q) @ coefficients).real


@pytest.fixture(scope="module")
def sketch() -> tuple[_core.SketchPlan, np.ndarray]:
    """A plan for q = 4, length 20, budget 12 096, with its query values."""
    rng = np.random.default_rng(1)
    keys = np.zeros((N_TERMS, LENGTH), dtype=np.uint8)
    for row in keys:
        positions = rng.choice(LENGTH, size=rng.integers(1, 4), replace=False)
        row[positions] = rng.integers(1, Q, size=len(positions))
    coefficients = rng.normal(size=N_TERMS) + 1j * rng.normal(size=N_TERMS)
    plan = _core.sketch_plan(Q, LENGTH, 12_096, 0)
    return plan, sparse_values(plan.queries(), keys, coefficients)


def test_sketch_decode(benchmark, sketch) -> None:
    """Peeling the sketch (noise threshold tuned on the held-out queries)."""
    plan, values = sketch
    _, _, holdout_nmse = benchmark(plan.decode, values)
    assert holdout_nmse < 1e-9


def test_sketch_explain(benchmark, sketch) -> None:
    """Shapley values of 10 000 sequences from the decoded spectrum."""
    plan, values = sketch
    spectrum, _, _ = plan.decode(values)
    sequences = np.random.default_rng(2).integers(0, Q, size=(10_000, LENGTH), dtype=np.uint8)
    phi = benchmark(spectrum.shapley_values, sequences)
    assert phi.shape == (10_000, LENGTH)
