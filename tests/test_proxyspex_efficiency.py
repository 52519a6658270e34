"""ProxySPEX's surrogate is held to the game's values at ∅ and N: its Shapley values sum to
v(N) - v(∅) of the game (not only of the surrogate), on sparse, noisy, spiked and tabular games;
the constrained refits are the closed-form equality-constrained least squares and ridge."""

from __future__ import annotations

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import _core
from ferroshap.bench.games import SumOfUnanimity

EMPTY_FULL = np.array([[False], [True]])


def corners(n: int) -> np.ndarray:
    """The masks ∅ and N."""
    return np.repeat(EMPTY_FULL, n, axis=1)


def assert_efficient(iv: fs.Interactions, game: object, n: int) -> None:
    """Shapley values sum to the game's v(N) - v(∅) to 1e-9 (relative to its scale), the base
    value is v(∅), and the diagnostic gap is zero."""
    v = np.asarray(game(corners(n)), dtype=float)  # type: ignore[operator]
    scale = max(1.0, float(np.abs(v).max()))
    assert iv.shapley_values().values[0].sum() == pytest.approx(v[1] - v[0], abs=1e-9 * scale)
    assert iv.base_values[0] == pytest.approx(v[0], abs=1e-9 * scale)
    assert iv.diagnostics["efficiency_gap"] == pytest.approx(0.0, abs=1e-9 * scale)


def fourier_game(n: int) -> tuple[_core.SparseFunction, fs.Interactions]:
    f = _core.SparseFunction(
        "Fourier",
        n,
        [(), (0,), (1, 2), (3,), (4, 5), (7, 8)],
        np.array([1.0, 0.8, -0.6, 0.5, 0.3, 0.4]),
    )
    return f, fs.ProxySPEX(f.evaluate, n_players=n, budget=400, seed=0, index="Moebius").explain()


def test_a_sparse_fourier_game_is_recovered_and_efficient() -> None:
    """On an exactly sparse game the constraints hold already: the exact terms are kept."""
    n = 16
    f, iv = fourier_game(n)
    assert_efficient(iv, f.evaluate, n)
    moebius = f.to_moebius()
    for key, value in zip(moebius.keys(), moebius.coefficients(), strict=True):
        if key:
            assert iv.values[key] == pytest.approx(value, abs=1e-9)
    np.testing.assert_allclose(iv.shapley_values().values[0], f.shapley_values(), atol=1e-9)


@pytest.mark.parametrize("ridge", [False, True])
def test_a_noisy_game_is_efficient_with_either_refit(ridge: bool) -> None:
    n, soum = 32, SumOfUnanimity.random(32, 20, 3, seed=4)
    rng = np.random.default_rng(0)
    noise = rng.normal(0.0, 0.1, 500)

    def noisy(masks: np.ndarray) -> np.ndarray:
        return soum(masks) + noise[: len(masks)]

    iv = fs.ProxySPEX(noisy, n_players=n, budget=500, seed=0, ridge=ridge).explain()
    assert iv.diagnostics["fit"] == ("ridge" if ridge else "sparse")
    values = noisy(corners(n))
    assert iv.shapley_values().values[0].sum() == pytest.approx(values[1] - values[0], abs=1e-9)
    assert iv.predict(corners(n)) == pytest.approx(values, abs=1e-9)
    # k-SII is efficient: its values of orders 1..k sum to the game's total
    assert sum(iv.values.values()) == pytest.approx(values[1] - values[0], abs=1e-9)
    held_out = np.random.default_rng(1).random((500, n)) < 0.5
    assert iv.faithfulness(soum, held_out) >= 0.9


@pytest.mark.parametrize("index", ["k-SII", "STII", "FSII"])
def test_efficient_indices_sum_to_the_games_total(index: str) -> None:
    n, soum = 20, SumOfUnanimity.random(20, 8, 3, seed=3)
    iv = fs.ProxySPEX(soum, n_players=n, budget=300, seed=1, index=index).explain()
    total = np.diff(soum(corners(n)))[0]
    assert sum(iv.values.values()) == pytest.approx(total, abs=1e-9)
    assert_efficient(iv, soum, n)


def test_spikes_at_the_empty_and_full_coalitions_are_in_the_total() -> None:
    """∅ and N are left out of the proxy and the selection as outliers, but the final fit is held
    to them: the Shapley values sum to the spiked total."""
    n, soum = 20, SumOfUnanimity.random(20, 5, 2, 0)

    def spiked(masks: np.ndarray) -> np.ndarray:
        return soum(masks) + 50.0 * masks.all(axis=1) - 30.0 * (~masks).all(axis=1)

    for ridge in (False, True):
        iv = fs.ProxySPEX(spiked, n_players=n, budget=400, seed=0, ridge=ridge).explain()
        assert iv.diagnostics["extremes_fitted"] == (False, False)
        assert_efficient(iv, spiked, n)


def test_a_tabular_model_through_the_baseline_masker() -> None:
    lightgbm = pytest.importorskip("lightgbm")
    from sklearn.datasets import load_diabetes

    x, y = load_diabetes(return_X_y=True)
    model = lightgbm.LGBMRegressor(n_estimators=50, num_leaves=8, n_jobs=1, verbose=-1)
    model.fit(x, y)
    background = x[:20]
    explainer = fs.ProxySPEX(
        model, masker=fs.maskers.Baseline(background), budget=300, seed=0, index="SII"
    )
    for row in x[100:102]:
        iv = explainer.explain(row)
        total = model.predict(row[None])[0] - model.predict(background).mean()
        assert iv.shapley_values().values[0].sum() == pytest.approx(total, abs=1e-9 * abs(y).max())
        assert iv.diagnostics["efficiency_gap"] == pytest.approx(0.0, abs=1e-9 * abs(y).max())


def fourier_design(keys: list[tuple[int, ...]], masks: np.ndarray) -> np.ndarray:
    return np.column_stack([np.prod(1.0 - 2.0 * masks[:, list(k)], axis=1) for k in keys])


def test_refit_top_is_the_equality_constrained_least_squares() -> None:
    """``refit_top(..., extremes)`` solves the KKT system of least squares subject to
    ``f(∅) = v(∅)``, ``f(N) = v(N)`` (numpy, closed form); without ``extremes`` it is the plain
    least squares."""
    n, rng = 12, np.random.default_rng(2)
    keys = [(), (0,), (1, 2), (3,), (4, 5, 6), (2, 7)]
    spectrum = _core.SparseFunction("Fourier", n, keys, np.array([0.1, 2.0, -1.5, 1.0, 0.7, 0.5]))
    masks = _core.plan_masks(n, 200, 4)[2:]
    values = spectrum.evaluate(masks) + rng.normal(0.0, 0.3, len(masks))
    extremes = (-2.0, 4.0)
    fit = _core.refit_top(spectrum, "Fourier", 5, masks, values, extremes)
    x, c = fourier_design(keys, masks), fourier_design(keys, corners(n))
    kkt = np.block([[x.T @ x, c.T], [c, np.zeros((2, 2))]])
    beta = np.linalg.solve(kkt, np.concatenate([x.T @ values, extremes]))[: len(keys)]
    np.testing.assert_allclose(fit.evaluate(masks), x @ beta, atol=1e-9)
    np.testing.assert_allclose(fit.evaluate(corners(n)), extremes)
    plain = _core.refit_top(spectrum, "Fourier", 5, masks, values)
    expected = np.linalg.lstsq(x, values, rcond=None)[0]
    np.testing.assert_allclose(plain.evaluate(masks), x @ expected, atol=1e-9)
    with pytest.raises(fs.InvalidArgumentError, match="extremes"):
        _core.refit_top(spectrum, "Fourier", 5, masks, values, (np.inf, 0.0))


@pytest.mark.parametrize("rows", [200, 5])
def test_refit_ridge_is_the_equality_constrained_proxy_scaled_ridge(rows: int) -> None:
    """``refit_ridge(..., extremes)`` minimises the proxy-scaled ridge subject to the two
    constraints (numpy KKT system, intercept unpenalised), in the primal and the dual form."""
    n, rng = 10, np.random.default_rng(3)
    keys = [(0,), (1, 2), (3,), (4, 5, 6), (7,), (8, 9), (2,), (5,)]
    prior = _core.SparseFunction("Fourier", n, keys, rng.normal(size=len(keys)))
    masks = _core.plan_masks(n, rows + 2, 7)[2:]
    values = rng.normal(size=rows)
    penalty, extremes = 0.01, (1.5, -2.5)
    fit = _core.refit_ridge(prior, penalty, masks, values, extremes)
    coefficients = prior.coefficients()
    scales = np.abs(coefficients) / np.abs(coefficients).max()
    columns = [(), *prior.keys()]
    x, c = fourier_design(columns, masks), fourier_design(columns, corners(n))
    prior_precision = np.diag(np.concatenate([[0.0], penalty * rows / scales**2]))
    kkt = np.block([[x.T @ x + prior_precision, c.T], [c, np.zeros((2, 2))]])
    beta = np.linalg.solve(kkt, np.concatenate([x.T @ values, extremes]))[: len(columns)]
    probe = np.random.default_rng(0).random((50, n)) < 0.5
    np.testing.assert_allclose(
        fit.evaluate(probe), fourier_design(columns, probe) @ beta, atol=1e-8
    )
    np.testing.assert_allclose(fit.evaluate(corners(n)), extremes, atol=1e-9)


def test_outlying_corners_are_corrected_without_bending_the_fit() -> None:
    """Where ∅ and N are outliers, the plain fit is kept and corrected at ∅ and N alone: the
    same predictions on every other coalition as ``efficient=False``, Shapley values that sum
    to the game's total, each player shifted by the same share."""
    n, soum = 20, SumOfUnanimity.random(20, 5, 2, 0)

    def spiked(masks: np.ndarray) -> np.ndarray:
        return soum(masks) + 50.0 * masks.all(axis=1) - 30.0 * (~masks).all(axis=1)

    plain = fs.ProxySPEX(spiked, n_players=n, budget=400, seed=0, efficient=False).explain()
    corrected = fs.ProxySPEX(spiked, n_players=n, budget=400, seed=0, index="SV").explain()
    a, b = corrected.corners
    assert (a, b) != (0.0, 0.0)
    inner = np.random.default_rng(0).random((200, n)) < 0.5
    np.testing.assert_array_equal(corrected.predict(inner), plain.predict(inner))
    np.testing.assert_allclose(corrected.predict(corners(n)), spiked(corners(n)), atol=1e-9)
    shift = corrected.shapley_values().values[0] - plain.shapley_values().values[0]
    np.testing.assert_allclose(shift, (b - a) / n, atol=1e-12)
    assert sum(corrected.values.values()) == pytest.approx(
        corrected.shapley_values().values[0].sum()
    )
    assert_efficient(corrected, spiked, n)
