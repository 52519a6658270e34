"""Games kept out of the accuracy suite's grid, to check ``method="auto"`` on models it was never
tuned on (:data:`~ferroshap.bench.suite.UNSEEN_GAMES`).

Four kinds no suite game has: extremely randomized trees, kernel ridge regression, a ridge
regression on every product of up to three standardized features, and AdaBoost on decision
stumps. Each is small enough (n = 10 to 14) for exact truth by enumeration. They were run once
(2026-12-07, seeds 0-9, BENCHMARKS.md); nothing of ``auto`` may be tuned on them.

Three more sit between the grid's 14 and 30 players, where none of its games is and where
``auto``'s rule changes (``small-choice`` stops at 16 players, ``kernel-wor`` at 3n beyond
12): an MLP on a synthetic regression with 18 features (truth by enumeration), LightGBM on
Friedman's first problem with 20 features and a LightGBM classifier's log-odds on a synthetic
table with 24 (exact TreeSHAP). Added and run once on 2026-12-08 (BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ferroshap.bench.games import BenchGame, enumerated_game, split_rows, tree_truth

__all__ = [
    "UNSEEN_BUILDERS",
    "ada_cancer_game",
    "et_wine_game",
    "kr_friedman_game",
    "lgb_friedman_game",
    "lgb_margin_game",
    "mlp_synthetic_game",
    "poly_diabetes_game",
]


def et_wine_game(rows: int = 4, n_background: int = 50, seed: int = 11) -> BenchGame:
    """Extremely randomized trees (100) on wine: the probability of the first class (n = 13)."""
    from sklearn.datasets import load_wine
    from sklearn.ensemble import ExtraTreesClassifier

    X_all, y = load_wine(return_X_y=True)
    model = ExtraTreesClassifier(n_estimators=100, random_state=0, n_jobs=1).fit(X_all, y)
    background, X = split_rows(X_all, n_background, rows, seed)
    return enumerated_game("et-wine", lambda z: model.predict_proba(z)[:, 0], background, X)


def kr_friedman_game(rows: int = 4, n_background: int = 50, seed: int = 12) -> BenchGame:
    """RBF kernel ridge regression on Friedman's first problem with 12 features, five of them
    relevant (n = 12)."""
    from sklearn.datasets import make_friedman1
    from sklearn.kernel_ridge import KernelRidge

    X_all, y = make_friedman1(n_samples=500, n_features=12, noise=0.5, random_state=3)
    model = KernelRidge(kernel="rbf", alpha=0.1, gamma=0.1).fit(X_all, y)
    background, X = split_rows(X_all, n_background, rows, seed)
    return enumerated_game("kr-friedman", model.predict, background, X)


def poly_diabetes_game(rows: int = 4, n_background: int = 50, seed: int = 13) -> BenchGame:
    """A ridge regression on every product of up to three standardized diabetes features: a
    game of Moebius order three (n = 10)."""
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures, StandardScaler

    X_all, y = load_diabetes(return_X_y=True)
    model = make_pipeline(StandardScaler(), PolynomialFeatures(3), Ridge(alpha=10.0)).fit(X_all, y)
    background, X = split_rows(X_all, n_background, rows, seed)
    return enumerated_game("poly-diabetes", model.predict, background, X)


def ada_cancer_game(rows: int = 4, n_background: int = 50, seed: int = 14) -> BenchGame:
    """AdaBoost (100 decision stumps) on breast-cancer features 10-23: the probability of the
    benign class (n = 14)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import AdaBoostClassifier

    X_all, y = load_breast_cancer(return_X_y=True)
    model = AdaBoostClassifier(n_estimators=100, random_state=0).fit(X_all[:, 10:24], y)
    background, X = split_rows(X_all[:, 10:24], n_background, rows, seed)
    return enumerated_game("ada-cancer", lambda z: model.predict_proba(z)[:, 1], background, X)


def mlp_synthetic_game(rows: int = 4, n_background: int = 50, seed: int = 15) -> BenchGame:
    """An MLP (one hidden layer of 24) on a synthetic regression with 18 features, eight of them
    relevant, whose target has a small term in its own product with two of them (n = 18)."""
    from sklearn.datasets import make_regression
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X_all, y = make_regression(
        n_samples=800, n_features=18, n_informative=8, noise=5.0, random_state=5
    )
    y = (y + 0.02 * y * X_all[:, 0] * X_all[:, 1]) / np.std(y)
    model = make_pipeline(
        StandardScaler(), MLPRegressor(hidden_layer_sizes=(24,), max_iter=2000, random_state=0)
    ).fit(X_all, y)
    background, X = split_rows(X_all, n_background, rows, seed)
    return enumerated_game("mlp-synth18", model.predict, background, X)


def lgb_friedman_game(rows: int = 4, n_background: int = 50, seed: int = 16) -> BenchGame:
    """LightGBM (150 trees, 15 leaves) on Friedman's first problem with 20 features, five of
    them relevant (n = 20); exact interventional TreeSHAP."""
    import lightgbm
    from sklearn.datasets import make_friedman1

    X_all, y = make_friedman1(n_samples=1500, n_features=20, noise=0.5, random_state=6)
    model = lightgbm.LGBMRegressor(
        n_estimators=150, num_leaves=15, verbose=-1, deterministic=True, n_jobs=1, random_state=0
    ).fit(X_all, y)
    background, X = split_rows(X_all, n_background, rows, seed)
    truth = tree_truth(model, background, X)
    return BenchGame("lgb-friedman20", model.predict, background, X, truth)


def lgb_margin_game(rows: int = 4, n_background: int = 50, seed: int = 17) -> BenchGame:
    """A LightGBM classifier's log-odds (100 trees, 31 leaves) on a synthetic table with 24
    features, ten informative and four redundant (n = 24); exact interventional TreeSHAP."""
    import lightgbm
    from sklearn.datasets import make_classification

    X_all, y = make_classification(
        n_samples=2000, n_features=24, n_informative=10, n_redundant=4, random_state=7
    )
    model = lightgbm.LGBMClassifier(
        n_estimators=100, num_leaves=31, verbose=-1, deterministic=True, n_jobs=1, random_state=0
    ).fit(X_all, y)
    background, X = split_rows(X_all, n_background, rows, seed)

    def margin(z: np.ndarray) -> np.ndarray:
        return model.predict(z, raw_score=True)

    return BenchGame("lgb-margin24", margin, background, X, tree_truth(model, background, X))


UNSEEN_BUILDERS: dict[str, tuple[int, Callable[[int, int], BenchGame]]] = {
    "et-wine": (13, et_wine_game),
    "kr-friedman": (12, kr_friedman_game),
    "poly-diabetes": (10, poly_diabetes_game),
    "ada-cancer": (14, ada_cancer_game),
    "mlp-synth18": (18, mlp_synthetic_game),
    "lgb-friedman20": (20, lgb_friedman_game),
    "lgb-margin24": (24, lgb_margin_game),
}
"""Each game by name: its number of players and its builder, taking the explained rows and the
background rows."""
