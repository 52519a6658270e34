"""Feature groups: each group one player, against enumeration of the block-level game."""

from __future__ import annotations

import numpy as np
import pytest

import ferroshap as fs
from conftest import brute_force_shapley
from ferroshap import InvalidArgumentError, InvalidTypeError

pd = pytest.importorskip("pandas")

COLUMNS = ["city_a", "city_b", "city_c", "age", "color_r", "color_g", "income"]
GROUPS = {"city": ["city_a", "city_b", "city_c"], "color": ["color_r", "color_g"]}
BLOCKS = [[0, 1, 2], [4, 5], [3], [6]]  # the players: city, color, then age and income


def one_hot_rows(rows: int, seed: int) -> np.ndarray:
    """Rows whose first three and fifth-sixth features are one-hot blocks."""
    rng = np.random.default_rng(seed)
    out = np.zeros((rows, 7))
    out[np.arange(rows), rng.integers(0, 3, rows)] = 1.0
    out[np.arange(rows), 4 + rng.integers(0, 2, rows)] = 1.0
    out[:, 3], out[:, 6] = rng.normal(size=rows), rng.normal(size=rows)
    return out


def model(z) -> np.ndarray:
    z = np.asarray(z, dtype=np.float64)
    return z[:, 0] * z[:, 3] + 2.0 * z[:, 1] - z[:, 5] * z[:, 6] + z[:, 2] * z[:, 4] + z[:, 3]


def block_game(background: np.ndarray, x: np.ndarray):
    """``v(T) = mean_b f(x_T, b_notT)`` over the players ``BLOCKS``, built block by block."""

    def game(masks: np.ndarray) -> np.ndarray:
        values = []
        for mask in masks:
            inside = np.zeros(7, dtype=bool)
            for player in np.flatnonzero(mask):
                inside[BLOCKS[player]] = True
            values.append(model(np.where(inside, x, background)).mean())
        return np.array(values)

    return game


def test_groups_give_the_block_level_values_of_enumeration() -> None:
    background, X = one_hot_rows(20, 0), one_hot_rows(3, 1)
    frame = pd.DataFrame(background, columns=COLUMNS)
    ex = fs.Explainer(model, frame, method="exact", groups=GROUPS)(pd.DataFrame(X, columns=COLUMNS))
    assert ex.feature_names == ["city", "color", "age", "income"]
    assert ex.groups == {**GROUPS, "age": ["age"], "income": ["income"]}
    for r in range(3):
        truth = brute_force_shapley(block_game(background, X[r]), 4)
        np.testing.assert_allclose(ex.values[r], truth, rtol=0, atol=1e-12)
    assert ex.to_polars().columns[:5] == ["city", "color", "age", "income", "base_value"]
    # a sampling method on the same players: efficiency holds per row
    sampled = fs.Explainer(model, background, budget=12, groups=[[0, 1, 2], [4, 5]])(X)
    np.testing.assert_allclose(sampled.values.sum(axis=1) + sampled.base_values, model(X))


def test_groups_of_a_raw_game_and_of_proxyspex() -> None:
    background, X = one_hot_rows(20, 0), one_hot_rows(1, 1)

    def game(masks: np.ndarray) -> np.ndarray:
        return np.array([model(np.where(m, X[0], background)).mean() for m in masks])

    truth = brute_force_shapley(block_game(background, X[0]), 4)
    groups = {"city": [0, 1, 2], "color": [4, 5]}
    phi = fs.shapley_values(game, 7, method="exact", groups=groups)
    np.testing.assert_allclose(phi, truth, rtol=0, atol=1e-12)
    with pytest.warns(UserWarning, match="exact interaction values"):
        iv = fs.ProxySPEX(game, 7, budget=48, max_order=1, index="SII", groups=groups).explain()
    assert iv.feature_names == ["city", "color", "x3", "x6"]
    np.testing.assert_allclose(iv.shapley_values().values[0], truth, atol=1e-10)
    exact = fs.exact_interactions(game, 7, index="SV", groups=groups)
    assert exact.feature_names == ["city", "color", "x3", "x6"] and exact.n_players == 4
    np.testing.assert_allclose(
        [exact.values.get((i,), 0.0) for i in range(4)], truth, rtol=0, atol=1e-12
    )


@pytest.mark.parametrize(
    ("groups", "error", "pattern"),
    [
        ({"city": ["city_a", "nope"]}, InvalidArgumentError, r"unknown column 'nope'.*city_a"),
        (
            {"a": ["city_a"], "b": ["city_a", "age"]},
            InvalidArgumentError,
            r"column 'city_a' is in two groups, 'a' and 'b'",
        ),
        ({"empty": []}, InvalidArgumentError, r"groups\['empty'\] must be a non-empty list"),
        ({"age": ["city_a"]}, InvalidArgumentError, r"player names must be distinct"),
        ({"i": [9]}, InvalidArgumentError, r"column 9 is out of range for 7 features"),
        ("city", InvalidTypeError, r"groups must be a dict name -> columns"),
    ],
)
def test_bad_groups_are_named(groups, error, pattern) -> None:
    frame = pd.DataFrame(one_hot_rows(4, 0), columns=COLUMNS)
    with pytest.raises(error, match=pattern):
        fs.Explainer(model, frame, groups=groups)
