"""The proxy-adjusted estimators ``proxy-leverage`` and ``tree-msr``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import InvalidArgumentError, InvalidTypeError
from ferroshap.bench.games import SumOfUnanimity
from ferroshap.bench.metrics import relative_squared_error
from ferroshap.sampling import auto, proxy_adjusted
from ferroshap.sampling.auto import ODD_SPARSE
from ferroshap.sampling.proxy_adjusted import proportional_columns

pytest.importorskip("lightgbm")

SEEDS = range(20)  # the protocol: medians over 20 seeds


def soum(n: int, terms: int, seed: int) -> SumOfUnanimity:
    """A sum-of-unanimity game: random coalitions ``T`` (sizes 1..5, all drawn first) with
    ``N(0, 1)`` weights."""
    rng = np.random.default_rng(seed)
    members = np.zeros((terms, n), dtype=bool)
    for row, size in zip(members, rng.integers(1, 6, size=terms), strict=True):
        row[rng.choice(n, size=size, replace=False)] = True
    return SumOfUnanimity(members, rng.normal(size=terms))


def nonlinear_game(masks: np.ndarray) -> np.ndarray:
    z = masks.astype(float)
    return np.sin(z @ np.arange(1.0, z.shape[1] + 1)) + z[:, 0] * z[:, 1] * z[:, 2]


@pytest.mark.parametrize("method", fs.PROXY_METHODS)
def test_listed_next_to_the_core_methods(method: str) -> None:
    assert method not in fs.METHODS
    with pytest.raises(InvalidArgumentError, match=f"'{method}'"):
        fs.shapley_values(nonlinear_game, 4, method="nope")


def test_proxy_leverage_is_exact_on_an_additive_game() -> None:
    w = np.linspace(-1.0, 2.0, 14)
    phi = fs.shapley_values(lambda m: m @ w + 3.0, 14, method="proxy-leverage", budget=96)
    np.testing.assert_allclose(phi, w, atol=1e-12)


def test_proxy_leverage_is_exact_on_an_order_two_game() -> None:
    # Paired LS is exact on Moebius order <= 2 and the proxy only sees the odd residual (zero).
    game = lambda m: m[:, 0] * m[:, 1] * 2.0 - m[:, 3] + m[:, 5] * m[:, 9]  # noqa: E731
    phi = fs.shapley_values(game, 12, method="proxy-leverage", budget=128)
    np.testing.assert_allclose(phi, [1, 1, 0, -1, 0, 0.5, 0, 0, 0, 0.5, 0, 0], atol=1e-12)


@pytest.mark.parametrize("method", fs.PROXY_METHODS)
def test_a_budget_of_all_coalitions_is_exact(method: str) -> None:
    exact = fs.shapley_values(nonlinear_game, 6, method="exact")
    with pytest.warns(UserWarning, match="exact Shapley values by enumeration"):
        phi = fs.shapley_values(nonlinear_game, 6, method=method, budget=64)
    np.testing.assert_allclose(phi, exact, atol=1e-12)


@pytest.mark.parametrize(
    ("method", "cross_fit"), [("proxy-leverage", None), ("tree-msr", None), ("tree-msr", 3)]
)
def test_efficiency_is_exact_and_the_seed_fixes_the_output(method: str, cross_fit: int) -> None:
    kwargs = {"method": method, "budget": 200, "seed": 7, "cross_fit": cross_fit}
    phi = fs.shapley_values(nonlinear_game, 16, **kwargs)
    full = nonlinear_game(np.ones((1, 16), dtype=bool))[0] - nonlinear_game(np.zeros((1, 16)))[0]
    assert abs(phi.sum() - full) < 1e-12
    np.testing.assert_array_equal(phi, fs.shapley_values(nonlinear_game, 16, **kwargs))
    assert not np.array_equal(phi, fs.shapley_values(nonlinear_game, 16, **{**kwargs, "seed": 8}))


def test_proxy_leverage_is_not_worse_than_leverage_on_sum_of_unanimity_games() -> None:
    ratios = []
    for seed in SEEDS:
        game = soum(16, 40, seed)
        errors = [
            relative_squared_error(
                fs.shapley_values(game, 16, method=m, budget=256, seed=seed), game.shapley
            )
            for m in ("leverage", "proxy-leverage")
        ]
        ratios.append(errors[1] / errors[0])
    assert np.median(ratios) <= 1.05, ratios


@pytest.mark.slow
def test_proxy_leverage_is_not_worse_than_leverage_on_a_lightgbm_model() -> None:
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 9))
    y = X[:, 0] * X[:, 1] * X[:, 2] + np.sin(3 * X[:, 3]) + X[:, 4] * (X[:, 5] > 0)
    model = lgb.LGBMRegressor(n_estimators=60, num_leaves=15, verbose=-1).fit(X, y)
    background, rows = X[:20], X[20:23]
    exact = fs.Explainer(model, background, method="exact")(rows).values
    ratios = []
    for seed in SEEDS:
        errors = [
            relative_squared_error(
                fs.Explainer(model, background, method=m, budget=128, seed=seed)(rows).values, exact
            )
            for m in ("leverage", "proxy-leverage")
        ]
        ratios.append(errors[1] / errors[0])
    assert np.median(ratios) <= 1.05, ratios


@pytest.mark.slow
def test_proxy_leverage_matches_leverage_on_a_linear_model() -> None:
    # The interventional game of a linear model is additive: both are exact for every seed.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 12))
    coef = np.linspace(-2.0, 2.0, 12)
    model = lambda x: x @ coef + 0.5  # noqa: E731
    background, rows = X[:20], X[20:24]
    exact = (rows - background.mean(axis=0)) * coef
    for seed in SEEDS:
        for method in ("leverage", "proxy-leverage"):
            values = fs.Explainer(model, background, method=method, budget=64, seed=seed)(rows)
            np.testing.assert_allclose(values.values, exact, atol=1e-10)


def test_tree_msr_is_unbiased_enough_to_find_a_linear_signal() -> None:
    w = np.arange(10.0)
    for cross_fit in (None, 4):
        phi = fs.shapley_values(
            lambda m: m @ w, 10, method="tree-msr", budget=400, cross_fit=cross_fit
        )
        assert relative_squared_error(phi, w) < 0.05


def test_a_small_budget_falls_back_to_leverage_with_a_warning() -> None:
    with pytest.warns(UserWarning, match=r"below the minimum 80 .*plain 'leverage'"):
        phi = fs.shapley_values(nonlinear_game, 20, method="proxy-leverage", budget=64, seed=3)
    plain = fs.shapley_values(nonlinear_game, 20, method="leverage", budget=64, seed=3)
    np.testing.assert_array_equal(phi, plain)


@pytest.mark.parametrize("method", fs.PROXY_METHODS)
def test_multi_output_shapes(method: str) -> None:
    rng = np.random.default_rng(1)
    background, X = rng.normal(size=(10, 7)), rng.normal(size=(3, 7))
    model = lambda z: np.stack([np.sin(z).sum(1), z[:, 0] * z[:, 1] * z[:, 2]], axis=1)  # noqa: E731
    for per_row in (False, True):
        ex = fs.Explainer(model, background, method=method, budget=64, per_row_design=per_row)(X)
        assert ex.values.shape == (3, 7, 2)
        assert ex.method == method
        full = model(X) - model(background).mean(axis=0)
        np.testing.assert_allclose(ex.values.sum(axis=1), full, atol=1e-12)
    phi = fs.shapley_values(
        lambda m: np.stack([nonlinear_game(m)] * 2, axis=1), 9, method=method, budget=64
    )
    assert phi.shape == (2, 9)


def test_cross_fit_is_validated() -> None:
    with pytest.raises(InvalidArgumentError, match="cross_fit applies to method='tree-msr'"):
        fs.shapley_values(nonlinear_game, 8, method="proxy-leverage", cross_fit=4)
    with pytest.raises(InvalidArgumentError, match="cross_fit must be at least 2"):
        fs.shapley_values(nonlinear_game, 8, method="tree-msr", cross_fit=1)
    with pytest.raises(InvalidTypeError, match="cross_fit must be an int"):
        fs.Explainer(np.sum, np.zeros((2, 3)), method="tree-msr", cross_fit=2.0)


@pytest.mark.parametrize("method", ["proxy-leverage", ODD_SPARSE])
def test_two_complementary_outputs_share_one_proxy(method: str, monkeypatch) -> None:
    # A binary classifier's probabilities sum to one, so the odd residuals of its two outputs
    # are negatives of each other: one proxy per row serves both, and the values are those of
    # fitting each output on its own.
    masks = DESIGN.masks()
    p = 1.0 / (1.0 + np.exp(-nonlinear_game(masks) - masks[:, 4] * masks[:, 7]))
    other = np.sin(masks @ np.arange(9.0))
    values = np.ascontiguousarray(np.stack([1.0 - p, p, other, 2.0 * other], axis=1))
    shared, alone, fits = shared_and_alone(method, values, monkeypatch)
    assert fits == 2  # columns 0 and 2; 1 and 3 are multiples of their neighbours
    np.testing.assert_allclose(shared[0], -shared[1], atol=1e-12)
    np.testing.assert_allclose(shared, alone, rtol=1e-9, atol=1e-12)


DESIGN = fs._core.plan("leverage", 9, 96, seed=4)


def shared_and_alone(method: str, values: np.ndarray, monkeypatch) -> tuple[Any, Any, int]:
    """The adjusted values of every column of ``values`` on :data:`DESIGN` at once, those of
    each column on its own, and how many proxies the first call fitted."""
    phi = DESIGN.estimate(values)
    fits = []
    real_fit = auto.fit_adjustment_proxy
    monkeypatch.setattr(auto, "fit_adjustment_proxy", lambda m, t: fits.append(t) or real_fit(m, t))
    shared = proxy_adjusted.adjust(method, DESIGN, values, phi)
    count = len(fits)
    alone = np.concatenate(
        [
            proxy_adjusted.adjust(method, DESIGN, values[:, [j]].copy(), phi[[j]])
            for j in range(values.shape[1])
        ]
    )
    return shared, alone, count


def test_proportional_columns_compares_neighbours_only() -> None:
    t = np.random.default_rng(0).normal(size=(50, 1)) * np.array([[1.0, 3.0, 0.0, 0.0, 1.0]])
    sources, scales = proportional_columns(t)
    # column 4 is a copy of column 0 but not of its neighbour; column 3 (zero) follows column 2
    # only when column 2 has a norm, which it does not
    assert sources.tolist() == [0, 0, 0, 3, 4]
    np.testing.assert_allclose(scales, [1.0, 3.0, 0.0, 1.0, 1.0], rtol=1e-15)
    t[:, 1] += 1e-4
    assert proportional_columns(t)[0].tolist() == [0, 1, 1, 3, 4]


@pytest.mark.parametrize("method", ["proxy-leverage", ODD_SPARSE])
def test_float32_binary_classifier_shares_one_proxy(monkeypatch, method: str) -> None:
    # a classifier computed in float32 (XGBoost, PyTorch): p and 1 - p sum to one only to ~6e-8,
    # yet one proxy serves both, and the values stay within float32's resolution of fitting each
    masks = DESIGN.masks()
    logit = nonlinear_game(masks) + masks[:, 4] * masks[:, 7]
    p = (1.0 / (1.0 + np.exp(-logit))).astype(np.float32)
    values = np.ascontiguousarray(np.stack([1.0 - p, p], axis=1), dtype=np.float64)
    assert np.abs(values.sum(1) - 1.0).max() > 0  # not exact complements
    shared, alone, fits = shared_and_alone(method, values, monkeypatch)
    assert fits == 1
    np.testing.assert_allclose(shared[0], -shared[1], atol=1e-6)
    np.testing.assert_allclose(shared, alone, atol=1e-6)


def test_odd_choice_scores_at_most_holdout_columns(monkeypatch) -> None:
    # Ten explained columns: one proxy each, held-out fits for four of them only, and the values
    # are the chosen candidate's, whichever columns scored.
    masks = DESIGN.masks()
    weights = np.random.default_rng(0).normal(size=(9, 10))
    values = np.ascontiguousarray(np.sin(masks @ weights) + nonlinear_game(masks)[:, None])
    phi = DESIGN.estimate(values)
    scored = []
    real_scores = proxy_adjusted.held_out_errors
    monkeypatch.setattr(
        proxy_adjusted,
        "held_out_errors",
        lambda m, t, split: scored.append(t) or real_scores(m, t, split),
    )
    chosen, _, choice = proxy_adjusted.adjust_with_errors("odd-choice", DESIGN, values, phi)
    assert len(scored) == auto.HOLDOUT_COLUMNS == 4
    assert choice is not None and choice.estimator in auto.CANDIDATES
    np.testing.assert_array_equal(
        chosen, proxy_adjusted.adjust(choice.estimator, DESIGN, values, phi)
    )
