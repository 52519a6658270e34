"""Benchmark games with exact ground truth.

Each :class:`BenchGame` is a model, a background and explained rows whose exact interventional
Shapley values are known in closed form (sums of unanimity models, linear models, exactly sparse
q-ary Fourier functions of sequences), by exact enumeration (small n), or by exact
interventional TreeSHAP from ``shap`` (tree models).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import ferroshap as fs

__all__ = ["BenchGame", "available_games", "make_game"]


@dataclass(frozen=True)
class BenchGame:
    """A model to explain and the exact Shapley values of its interventional game.

    Attributes
    ----------
    name
        Short name used on the command line and in result files.
    model
        Callable on a 2-D float batch returning ``[batch]``.
    background, X
        Background rows ``[B, n]`` and explained rows ``[rows, n]``.
    truth
        Exact Shapley values ``[rows, n]`` of ``v_x(S) = mean_b f(x_S, b_notS)``.
    """

    name: str
    model: Callable[[np.ndarray], np.ndarray]
    background: np.ndarray
    X: np.ndarray
    truth: np.ndarray

    @property
    def n(self) -> int:
        """Number of features (players)."""
        return int(self.X.shape[1])


class _Unanimity:
    """``f(z) = Σ_k c_k [T_k ⊆ {i: z_i > 1/2}]``: a sum of unanimity models on 0/1 inputs."""

    def __init__(self, n: int, n_terms: int, max_order: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        self.terms = [
            rng.choice(n, size=rng.integers(1, max_order + 1), replace=False)
            for _ in range(n_terms)
        ]
        self.coefficients = rng.uniform(-1.0, 1.0, n_terms)
        self.n = n

    def __call__(self, z: np.ndarray) -> np.ndarray:
        inside = z > 0.5
        terms = zip(self.coefficients, self.terms, strict=True)
        return sum((c * inside[:, t].all(axis=1) for c, t in terms), start=np.zeros(len(z)))

    def shapley(self) -> np.ndarray:
        phi = np.zeros(self.n)
        for c, t in zip(self.coefficients, self.terms, strict=True):
            phi[t] += c / len(t)
        return phi


def soum_game(n: int = 64, seed: int = 0) -> BenchGame:
    """Sum of ``2n`` unanimity models of order 1-4 (closed-form Shapley values), one row."""
    model = _Unanimity(n, 2 * n, 4, seed)
    return BenchGame(f"soum{n}", model, np.zeros((1, n)), np.ones((1, n)), model.shapley()[None])


def linear_game(n: int = 20, rows: int = 4, seed: int = 0) -> BenchGame:
    """Linear model over a Gaussian background: ``φ = w (x - mean(background))``."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=n)
    background, X = rng.normal(size=(30, n)), rng.normal(size=(rows, n))

    def model(z: np.ndarray) -> np.ndarray:
        return z @ w

    return BenchGame(f"linear{n}", model, background, X, w * (X - background.mean(axis=0)))


def enumeration_game(n: int = 12, rows: int = 3, seed: int = 0) -> BenchGame:
    """A smooth nonlinear model with pairwise and triple products; truth by exact enumeration."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=n)
    pairs = rng.choice(n, size=(n, 2))
    triples = rng.choice(n, size=(n // 3, 3))
    background, X = rng.normal(size=(10, n)), rng.normal(size=(rows, n))

    def model(z: np.ndarray) -> np.ndarray:
        out = np.tanh(z @ w)
        out = out + (z[:, pairs[:, 0]] * z[:, pairs[:, 1]]).sum(axis=1) / n
        return out + np.prod(z[:, triples], axis=2).sum(axis=1) / n

    truth = fs.Explainer(model, background, method="exact")(X).values
    return BenchGame(f"enum{n}", model, background, X, truth)


def _tree_truth(model: object, background: np.ndarray, X: np.ndarray) -> np.ndarray:
    import shap

    explainer = shap.TreeExplainer(
        model, data=background, feature_perturbation="interventional", model_output="raw"
    )
    return np.asarray(explainer.shap_values(X), dtype=float)


def lightgbm_game(rows: int = 8, n_background: int = 50, seed: int = 0) -> BenchGame:
    """LightGBM (200 trees, 31 leaves) on breast cancer (n = 30); exact interventional TreeSHAP."""
    import lightgbm
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    X_all, y = data.data, data.target.astype(float)
    model = lightgbm.LGBMRegressor(
        n_estimators=200, num_leaves=31, verbose=-1, deterministic=True, random_state=seed
    ).fit(X_all, y)
    picked = np.random.default_rng(seed).choice(len(X_all), n_background + rows, replace=False)
    background, X = X_all[picked[:n_background]], X_all[picked[n_background:]]
    return BenchGame("lightgbm", model.predict, background, X, _tree_truth(model, background, X))


def forest_game(rows: int = 6, n_background: int = 40, seed: int = 0) -> BenchGame:
    """scikit-learn random forest on diabetes (n = 10); exact interventional TreeSHAP."""
    from sklearn.datasets import load_diabetes
    from sklearn.ensemble import RandomForestRegressor

    X_all, y = load_diabetes(return_X_y=True)
    model = RandomForestRegressor(n_estimators=50, max_depth=6, random_state=seed).fit(X_all, y)
    picked = np.random.default_rng(seed).choice(len(X_all), n_background + rows, replace=False)
    background, X = X_all[picked[:n_background]], X_all[picked[n_background:]]
    return BenchGame("forest", model.predict, background, X, _tree_truth(model, background, X))


def fourier_game(n: int = 16, rows: int = 4, n_background: int = 20, seed: int = 0) -> BenchGame:
    """An exactly sparse q-ary sequence function (q = 4, ``2n`` terms of degree 1-3) on letter
    codes, against a background of random sequences; truth in closed form from its spectrum
    (the sketch's data-background algebra, checked against enumeration in the test suite)."""
    from ferroshap import _core
    from ferroshap.bench.fourier import SparseQaryFunction

    f = SparseQaryFunction(q=4, n=n, terms=n, max_degree=3, seed=seed)
    rng = np.random.default_rng(seed + 1)
    background = rng.integers(0, 4, size=(n_background, n), dtype=np.uint8)
    X = rng.integers(0, 4, size=(rows, n), dtype=np.uint8)
    spectrum = _core.Spectrum(
        n, 4, f.keys.astype(np.uint8), f.values.real.copy(), f.values.imag.copy(), f.mean
    )
    truth = spectrum.shapley_values(X, background)

    def model(z: np.ndarray) -> np.ndarray:
        return f(np.rint(z).astype(np.int64))

    return BenchGame(f"fourier{n}", model, background.astype(float), X.astype(float), truth)


_GAMES: dict[str, Callable[[bool], BenchGame]] = {
    "soum": lambda quick: soum_game(n=32 if quick else 128),
    "linear": lambda quick: linear_game(),
    "enum": lambda quick: enumeration_game(n=10 if quick else 14),
    "lightgbm": lambda quick: lightgbm_game(
        rows=3 if quick else 8, n_background=20 if quick else 50
    ),
    "forest": lambda quick: forest_game(rows=3 if quick else 6),
    "fourier": lambda quick: fourier_game(n=10 if quick else 16),
}


def available_games() -> list[str]:
    """Names accepted by :func:`make_game` (tree games need ``shap`` for their ground truth)."""
    return list(_GAMES)


def make_game(name: str, quick: bool = False) -> BenchGame:
    """Build the game ``name``; ``quick`` picks a smaller instance of it."""
    if name not in _GAMES:
        raise fs.InvalidArgumentError(
            f"games: unknown game {name!r}; expected some of {', '.join(_GAMES)}"
        )
    return _GAMES[name](quick)
