"""Every result answers the same questions under the same names (README, "Explaining a model")."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import ferroshap as fs

VOCABULARY = (
    "values",
    "base_values",
    "n_players",
    "feature_names",
    "method",
    "estimator",
    "budget",
    "diagnostics",
    "to_polars",
)


def linear(z: np.ndarray) -> np.ndarray:
    return z @ np.arange(1.0, 6.0)


def pair_game(masks: np.ndarray) -> np.ndarray:
    return masks[:, 0] * masks[:, 1] + 0.5 * masks[:, 2]


def test_explanation_says_how_it_was_made() -> None:
    bg = np.zeros((3, 5))
    x = np.ones((2, 5))
    exact = fs.Explainer(linear, bg, method="exact")(x)
    assert (exact.n_players, exact.method, exact.estimator) == (5, "exact", "exact")
    assert exact.diagnostics == {"estimated": False}
    estimated = fs.Explainer(linear, np.random.default_rng(0).random((3, 5)), budget=20, seed=0)
    ex = estimated(x)
    assert ex.diagnostics["estimated"] is True
    assert (ex.method, ex.budget) == ("auto", 20)
    assert pickle.loads(pickle.dumps(ex)).diagnostics == ex.diagnostics


def test_explanation_with_all_null_players_is_exact() -> None:
    bg = np.zeros((1, 5))
    ex = fs.Explainer(linear, bg, budget=20, seed=0)(np.zeros((1, 5)))
    assert ex.diagnostics == {"estimated": False}
    assert ex.estimator == "exact"


def test_interactions_say_how_they_were_made() -> None:
    exact = fs.exact_interactions(pair_game, 4, index="k-SII")
    assert (exact.method, exact.estimator, exact.budget) == ("exact", "exact", 16)
    assert exact.n_players == 4
    assert exact.diagnostics["estimated"] is False
    with pytest.warns(UserWarning, match="exact"):
        enumerated = fs.ProxySPEX(pair_game, n=4, budget=64, seed=0).explain()
    assert (enumerated.method, enumerated.estimator, enumerated.budget) == (
        "proxyspex",
        "exact",
        64,
    )
    assert "budget=64" in repr(enumerated)


def test_every_result_has_the_vocabulary() -> None:
    lightgbm = pytest.importorskip("lightgbm")
    del lightgbm
    rng = np.random.default_rng(0)
    explanation = fs.Explainer(linear, rng.random((4, 5)), budget=40, seed=0)(rng.random((2, 5)))
    interactions = fs.exact_interactions(pair_game, 4, index="k-SII")
    sketch = fs.FourierSketch.fit(
        lambda seqs: np.array([(s[0] == "C") + 0.5 * (s[2] == "T") for s in seqs], float),
        length=4,
        alphabet="ACGT",
        budget=4000,
        seed=0,
    )
    sequences = sketch.interactions(["ACGT", "TTTT"], max_order=2)
    for result in (explanation, interactions, sequences):
        for name in VOCABULARY:
            assert hasattr(result, name), (type(result).__name__, name)
        assert "estimated" in result.diagnostics
        names = result.feature_names  # Interactions: None when the game has no names
        assert names is None or len(names) == result.n_players
    assert (sequences.method, sequences.estimator) == ("fourier-sketch", "fourier-sketch")
    assert sequences.budget == sketch.shapley_values(["ACGT"]).budget


def test_interactions_shapley_values_are_an_explanation() -> None:
    weights = np.array([1.0, -2.0, 0.5, 3.0])

    def game(masks: np.ndarray) -> np.ndarray:
        return masks @ weights + 2.0 * masks[:, 0] * masks[:, 3] + 1.0

    spex = fs.ProxySPEX(game, n_players=4, budget=48, feature_names=list("abcd"))
    with pytest.warns(UserWarning, match="enumeration"):
        iv = spex.explain()
    ex = iv.shapley_values()
    assert isinstance(ex, fs.Explanation)
    np.testing.assert_allclose(ex.values, [weights + np.array([1.0, 0.0, 0.0, 1.0])], atol=1e-12)
    np.testing.assert_allclose(ex.base_values, [1.0], atol=1e-12)
    assert ex.feature_names == list("abcd") and ex.n_players == 4 and len(ex) == 1
    assert (ex.method, ex.estimator, ex.budget) == (iv.method, iv.estimator, iv.budget)
    assert ex.diagnostics == iv.diagnostics and ex.standard_errors is None
    assert ex.to_polars().columns == [*"abcd", "base_value"]
    unnamed = fs.exact_interactions(game, 4, index="SV").shapley_values()
    assert unnamed.feature_names == ["0", "1", "2", "3"]
    np.testing.assert_allclose(unnamed.values, ex.values, atol=1e-12)
