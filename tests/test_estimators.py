"""Estimators on raw games against brute force and closed-form oracles."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ferroshap as fs
from conftest import Additive, all_masks, brute_force_shapley
from ferroshap import _core
from ferroshap.bench.games import SumOfUnanimity
from ferroshap.bench.metrics import relative_l2_error

SAMPLING = [method for method in fs.METHODS if method != "exact"]
REGRESSION = ["kernel", "kernel-wor", "leverage", "modified-l2"]


def test_brute_force_oracle_matches_closed_forms() -> None:
    # the oracle itself against the SOUM and additive closed forms (1e-12: round-off only)
    soum = SumOfUnanimity.random(7, n_terms=12, max_order=4, seed=1)
    np.testing.assert_allclose(brute_force_shapley(soum, 7), soum.shapley, atol=1e-12)
    additive = Additive(6, seed=2)
    np.testing.assert_allclose(brute_force_shapley(additive, 6), additive.shapley, atol=1e-12)


def test_methods_cover_the_design() -> None:
    assert set(fs.METHODS) >= {*REGRESSION, "unbiased", "permutation", "exact"}


@pytest.mark.parametrize("method", SAMPLING)
def test_small_budget_is_close_but_not_exact(method: str) -> None:
    n = 10
    game = SumOfUnanimity.random(n, n_terms=30, max_order=3, seed=3)
    truth = brute_force_shapley(game, n)
    phi = fs.shapley_values(game, n, method=method, budget=200, seed=0)
    # 200 of 1024 coalitions: an estimate, so not exact (> 1e-6) but close; observed errors
    # are 0.03-0.05 (0.17 for the matrix-vector estimator "unbiased"), bounds leave 3x room
    assert 1e-6 < relative_l2_error(phi, truth) < (0.5 if method == "unbiased" else 0.15)


@pytest.mark.parametrize("method", [m for m in SAMPLING if m != "auto"])  # auto: test_auto.py
@pytest.mark.parametrize("budget", [256, 1000])
def test_budget_covering_all_coalitions_is_exact_with_warning(method: str, budget: int) -> None:
    n = 8
    game = SumOfUnanimity.random(n, n_terms=20, max_order=4, seed=4)
    with pytest.warns(UserWarning, match="exact Shapley values by enumeration"):
        phi = fs.shapley_values(game, n, method=method, budget=budget)
    # full enumeration: only round-off separates it from the oracle
    np.testing.assert_allclose(phi, brute_force_shapley(game, n), rtol=0, atol=1e-10)


def test_exact_method_matches_oracle_without_warning() -> None:
    n = 11
    game = SumOfUnanimity.random(n, n_terms=40, max_order=5, seed=5)
    # no pytest.warns: filterwarnings=error fails the test on any warning
    phi = fs.shapley_values(game, n, method="exact", budget=2)
    np.testing.assert_allclose(phi, brute_force_shapley(game, n), rtol=0, atol=1e-10)


def _mean_error(game: SumOfUnanimity, method: str, budget: int, seeds: range) -> float:
    errors = [
        relative_l2_error(
            fs.shapley_values(game, game.n, method=method, budget=budget, seed=seed), game.shapley
        )
        for seed in seeds
    ]
    return float(np.mean(errors))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("method", "n", "budgets"),
    [(m, 64, (256, 4096)) for m in SAMPLING]
    # auto fits LightGBM proxies: at n = 512 that is ~100 s here, so it is checked at n = 64
    + [(m, 512, (2048, 8192)) for m in SAMPLING if m != "auto"],
)
def test_soum_error_falls_with_budget(method: str, n: int, budgets: tuple[int, int]) -> None:
    game = SumOfUnanimity.random(n, n_terms=n // 2, max_order=3, seed=6)
    small, large = (_mean_error(game, method, budget, range(3)) for budget in budgets)
    # mean over 3 seeds; 4-16x the budget cuts the error 2-6x (observed), so demand at least 30%
    assert large < 0.7 * small, (small, large)


@pytest.mark.parametrize("method", [*REGRESSION, "permutation"])
@pytest.mark.parametrize("n", [5, 20, 100])
def test_additive_game_is_exact_for_regression(method: str, n: int) -> None:
    game = Additive(n, seed=n)
    # 2n + 2: each complementary pair adds one direction, and the planner draws again where a
    # design falls short of rank n - 1 by chance (docs/solver.md)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        phi = fs.shapley_values(game, n, method=method, budget=2 * n + 2, seed=1)
    # an additive game lies in the regression model (and every permutation gives its exact
    # marginals): errors are solver round-off, ~1e-14 relative
    np.testing.assert_allclose(phi, game.shapley, rtol=0, atol=1e-9)


@pytest.mark.parametrize("method", REGRESSION)
def test_rank_deficient_design_warns_and_keeps_efficiency(method: str) -> None:
    n = 20
    game = Additive(n, seed=3)
    # 10 coalitions = 4 complementary pairs: rank at most 4 < n - 1; the warning names the
    # budget from which a design can reach full rank
    with pytest.warns(UserWarning, match=r"rank-deficient .* at least 2n = 40"):
        phi = fs.shapley_values(game, n, method=method, budget=10)
    # the minimum-norm solution still satisfies efficiency (round-off only)
    np.testing.assert_allclose(phi.sum(), game.shapley.sum(), rtol=1e-9)


@pytest.mark.parametrize("method", fs.METHODS)
def test_efficiency(method: str) -> None:
    n = 14
    games = [SumOfUnanimity.random(n, n_terms=40, max_order=4, seed=s) for s in range(3)]

    def game(masks: np.ndarray) -> np.ndarray:
        return np.stack([g(masks) for g in games], axis=1)

    phi = fs.shapley_values(game, n, method=method, budget=300, seed=2)
    values = game(np.array([[False] * n, [True] * n]))
    # Σφ = v(N) - v(∅) holds by construction for every estimator: only round-off remains
    np.testing.assert_allclose(phi.sum(axis=1), values[1] - values[0], rtol=1e-9, atol=1e-12)


def test_multi_column_game_matches_separate_games() -> None:
    n = 9
    games = [SumOfUnanimity.random(n, n_terms=20, max_order=3, seed=s) for s in range(4)]
    together = fs.shapley_values(
        lambda masks: np.stack([g(masks) for g in games], axis=1),
        n,
        budget=100,
        seed=7,
        method="leverage",
    )
    separate = np.stack(
        [fs.shapley_values(g, n, budget=100, seed=7, method="leverage") for g in games]
    )
    assert together.shape == (4, n)
    # same design, same factorization: columns differ only by round-off
    np.testing.assert_allclose(together, separate, rtol=1e-12, atol=1e-12)


def test_unbiased_seed_average_converges_to_truth() -> None:
    n, seeds = 10, 200
    game = SumOfUnanimity.random(n, n_terms=25, max_order=3, seed=8)
    estimates = np.stack(
        [fs.shapley_values(game, n, method="unbiased", budget=100, seed=s) for s in range(seeds)]
    )
    mean = estimates.mean(axis=0)
    standard_error = estimates.std(axis=0, ddof=1) / np.sqrt(seeds)
    # unbiased: each coordinate's seed mean lies within 5 standard errors of the truth (a
    # false alarm has probability ~1e-5 over the 10 coordinates)
    assert np.all(np.abs(mean - game.shapley) <= 5 * standard_error + 1e-12)
    # and the average really is better than a single run
    assert relative_l2_error(mean, game.shapley) < 0.5 * relative_l2_error(
        estimates[0], game.shapley
    )


@pytest.mark.parametrize("method", SAMPLING)
def test_same_seed_is_bit_identical_and_different_seeds_differ(method: str) -> None:
    n = 40
    game = SumOfUnanimity.random(n, n_terms=30, max_order=3, seed=9)
    first, again, other = (
        fs.shapley_values(game, n, method=method, budget=400, seed=seed) for seed in (11, 11, 12)
    )
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_generator_seed_draws_a_fresh_seed_per_call() -> None:
    n = 30
    game = SumOfUnanimity.random(n, n_terms=20, max_order=3, seed=10)
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(1)
    first = fs.shapley_values(game, n, budget=200, seed=rng_a, method="leverage")
    np.testing.assert_array_equal(
        first, fs.shapley_values(game, n, budget=200, seed=rng_b, method="leverage")
    )
    assert not np.array_equal(
        first, fs.shapley_values(game, n, budget=200, seed=rng_a, method="leverage")
    )


def test_game_receives_boolean_masks_with_empty_and_grand() -> None:
    n, seen = 12, []

    def game(masks: np.ndarray) -> np.ndarray:
        seen.append(masks)
        return masks.sum(axis=1).astype(float)

    fs.shapley_values(game, n, budget=64, method="leverage")
    (masks,) = seen
    assert masks.dtype == np.bool_ and masks.shape == (64, n)
    codes = {tuple(row) for row in masks}
    assert len(codes) == 64  # distinct coalitions: the budget is what the game is asked for
    assert tuple([False] * n) in codes and tuple([True] * n) in codes


@pytest.mark.parametrize("method", fs.METHODS)
def test_single_player_gets_the_whole_difference(method: str) -> None:
    def game(masks: np.ndarray) -> np.ndarray:
        return 3.0 + 2.5 * masks[:, 0]

    # one player: both coalitions are always evaluated; no fallback warning, since there is
    # nothing to sample (filterwarnings=error would fail the test on one); 1e-12: round-off
    phi = fs.shapley_values(game, 1, method=method, budget=2)
    np.testing.assert_allclose(phi, [2.5], rtol=1e-12)


def test_exact_design_row_order_matches_the_oracle() -> None:
    # documented in _core.pyi: row r of an exact design has player i iff bit i of r
    np.testing.assert_array_equal(_core.plan("exact", 5, 2, 0).masks(), all_masks(5))


def _interacting_model(z: np.ndarray) -> np.ndarray:
    return np.sin(z).sum(axis=1) + z[:, 0] * z[:, 1] - z[:, 2] * z[:, 3] * z[:, 4]


def test_per_row_design_uses_a_different_design_per_row() -> None:
    rng = np.random.default_rng(13)
    background, x = rng.normal(size=(20, 10)), rng.normal(size=10)
    X = np.stack([x, x, x])
    truth = fs.Explainer(_interacting_model, background, method="exact")(x).values[0]
    shared = fs.Explainer(_interacting_model, background, budget=100, method="leverage")(X).values
    per_row = fs.Explainer(
        _interacting_model, background, budget=100, per_row_design=True, method="leverage"
    )(X)
    # one design: identical rows; per-row designs: three different estimates of the same row
    np.testing.assert_array_equal(shared[0], shared[1])
    assert not np.array_equal(per_row.values[0], per_row.values[1])
    assert not np.array_equal(per_row.values[1], per_row.values[2])
    assert per_row.n_evaluations == 100
    # each row's design is as good as the shared one: 100 of 1024 coalitions, < 0.3 error
    for phi in per_row.values:
        assert relative_l2_error(phi, truth) < 0.3
    # and each row's values sum to f(x) - mean f(b) (efficiency, round-off only)
    np.testing.assert_allclose(
        per_row.values.sum(axis=1) + per_row.base_values,
        _interacting_model(X),
        rtol=1e-9,
    )
