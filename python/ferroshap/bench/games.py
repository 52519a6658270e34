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

__all__ = [
    "BenchGame",
    "NearFreeModel",
    "SumOfUnanimity",
    "available_games",
    "enumerated_game",
    "make_game",
    "near_free_problem",
    "random_terms",
    "split_rows",
    "tree_truth",
]


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


def random_terms(rng: np.random.Generator, n: int, n_terms: int, max_order: int) -> np.ndarray:
    """``n_terms`` random coalitions as ``bool[n_terms, n]``, each of a uniform size in
    ``1..max_order`` (the size drawn, then the members, term by term)."""
    terms = np.zeros((n_terms, n), dtype=bool)
    for term in terms:
        term[rng.choice(n, size=rng.integers(1, max_order + 1), replace=False)] = True
    return terms


class SumOfUnanimity:
    """Sum of unanimity models ``v(S) = Σ_k c_k [T_k ⊆ S]``, a game on coalitions with
    ``φ_i = Σ_{k ∋ i} c_k / |T_k|``.

    Parameters
    ----------
    terms
        The coalitions ``T_k`` as ``bool[K, n]``.
    coefficients
        Their coefficients ``c_k``, ``[K]``.
    """

    def __init__(self, terms: np.ndarray, coefficients: np.ndarray) -> None:
        self.terms = np.asarray(terms, dtype=bool)
        self.coefficients = np.asarray(coefficients, dtype=np.float64)
        self.n = self.terms.shape[1]
        self.orders = self.terms.sum(axis=1)

    @classmethod
    def random(
        cls, n: int, n_terms: int, max_order: int, seed: int, *, normal: bool = False
    ) -> SumOfUnanimity:
        """``c_k ~ U[-1, 1]`` (or ``N(0, 1)`` with ``normal``), then the terms by
        :func:`random_terms`, from ``numpy.random.default_rng(seed)``.

        Examples
        --------
        >>> game = SumOfUnanimity.random(6, 4, 3, seed=0)
        >>> bool(np.isclose(game.shapley.sum(), game(np.ones((1, 6), dtype=bool))[0]))
        True
        """
        rng = np.random.default_rng(seed)
        coefficients = rng.normal(size=n_terms) if normal else rng.uniform(-1.0, 1.0, n_terms)
        return cls(random_terms(rng, n, n_terms, max_order), coefficients)

    def __call__(self, masks: np.ndarray) -> np.ndarray:
        """``v`` of each coalition of ``masks`` (``[m, n]``, bool or 0/1), ``[m]``."""
        contained = masks.astype(np.float64) @ self.terms.T == self.orders
        return contained @ self.coefficients

    @property
    def shapley(self) -> np.ndarray:
        """The exact Shapley values ``[n]``."""
        return (self.coefficients / self.orders) @ self.terms


class _Unanimity:
    """A :class:`SumOfUnanimity` as a model on 0/1 inputs: ``f(z) = v({i: z_i > 1/2})``."""

    def __init__(self, n: int, n_terms: int, max_order: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        terms = random_terms(rng, n, n_terms, max_order)
        self.game = SumOfUnanimity(terms, rng.uniform(-1.0, 1.0, n_terms))
        self.n = n

    def __call__(self, z: np.ndarray) -> np.ndarray:
        return self.game(z > 0.5)

    def shapley(self, X: np.ndarray, background: np.ndarray) -> np.ndarray:
        """Exact interventional Shapley values ``[rows, n]`` for 0/1 rows and background.

        For one background row ``b`` a term ``[T ⊆ z]`` of ``z = (x_S, b_notS)`` is zero if some
        ``i ∈ T`` has ``x_i = b_i = 0``; otherwise it is ``[A ⊆ S][B ∩ S = ∅]`` with
        ``A = {i ∈ T: x_i > b_i}``, ``B = {i ∈ T: x_i < b_i}``, whose Shapley values are
        ``(a-1)! b! / (a+b)!`` on ``A`` and ``-a! (b-1)! / (a+b)!`` on ``B`` (expand the
        complement literals into unanimity games of ``A + C`` for every ``C ⊆ B``).
        """
        from math import factorial

        X, background = np.asarray(X) > 0.5, np.asarray(background) > 0.5
        phi = np.zeros(X.shape)
        members = [np.flatnonzero(term) for term in self.game.terms]
        for row, x in enumerate(X):
            for c, t in zip(self.game.coefficients, members, strict=True):
                for b in background:
                    xt, bt = x[t], b[t]
                    if (~xt & ~bt).any():
                        continue
                    gain, loss = t[xt & ~bt], t[~xt & bt]
                    a, k = len(gain), len(loss)
                    if a:
                        phi[row, gain] += c * factorial(a - 1) * factorial(k) / factorial(a + k)
                    if k:
                        phi[row, loss] -= c * factorial(a) * factorial(k - 1) / factorial(a + k)
        return phi / len(background)


def soum_game(
    n: int = 64, rows: int = 1, n_background: int = 1, max_order: int = 4, seed: int = 0
) -> BenchGame:
    """Sum of ``2n`` unanimity models of order 1 to ``max_order`` on 0/1 inputs, closed-form
    Shapley values. One background row is all zeros and one explained row all ones (the plain
    unanimity game); more are random 0/1 rows."""
    model = _Unanimity(n, 2 * n, max_order, seed)
    rng = np.random.default_rng(seed + 1)
    background = (
        np.zeros((1, n)) if n_background == 1 else rng.integers(0, 2, (n_background, n)) * 1.0
    )
    X = np.ones((1, n)) if rows == 1 else rng.integers(0, 2, (rows, n)) * 1.0
    return BenchGame(f"soum{n}", model, background, X, model.shapley(X, background))


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


def tree_truth(model: object, background: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Exact interventional TreeSHAP values ``[rows, n]`` of a LightGBM ``model``'s raw output
    (a classifier's log-odds) on ``X`` against ``background``, from shap."""
    import shap

    explainer = shap.TreeExplainer(
        model, data=background, feature_perturbation="interventional", model_output="raw"
    )
    return np.asarray(explainer.shap_values(X), dtype=float)


def enumerated_game(name: str, model, background: np.ndarray, X: np.ndarray) -> BenchGame:
    """A game whose truth is exact enumeration of its interventional game."""
    truth = fs.Explainer(model, background, method="exact")(X).values
    return BenchGame(name, model, background, X, truth)


def split_rows(
    X_all: np.ndarray, n_background: int, rows: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """``n_background`` background rows and ``rows`` explained rows of ``X_all``, distinct,
    drawn with ``seed``."""
    picked = np.random.default_rng(seed).choice(len(X_all), n_background + rows, replace=False)
    return X_all[picked[:n_background]], X_all[picked[n_background:]]


def lightgbm_game(rows: int = 8, n_background: int = 50, seed: int = 0) -> BenchGame:
    """LightGBM (200 trees, 31 leaves) on breast cancer (n = 30); exact interventional TreeSHAP."""
    import lightgbm
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    X_all, y = data.data, data.target.astype(float)
    model = lightgbm.LGBMRegressor(
        n_estimators=200, num_leaves=31, verbose=-1, deterministic=True, random_state=seed
    ).fit(X_all, y)
    background, X = split_rows(X_all, n_background, rows, seed)
    return BenchGame("lightgbm", model.predict, background, X, tree_truth(model, background, X))


def lightgbm_digits_game(rows: int = 4, n_background: int = 50, seed: int = 0) -> BenchGame:
    """LightGBM (100 trees, 15 leaves) regressing the digit on scikit-learn's 8x8 digits
    (n = 64 pixels); exact interventional TreeSHAP."""
    import lightgbm
    from sklearn.datasets import load_digits

    X_all, y = load_digits(return_X_y=True)
    model = lightgbm.LGBMRegressor(
        n_estimators=100, num_leaves=15, verbose=-1, deterministic=True, random_state=seed
    ).fit(X_all, y.astype(float))
    background, X = split_rows(X_all.astype(float), n_background, rows, seed)
    return BenchGame("digits", model.predict, background, X, tree_truth(model, background, X))


def forest_game(rows: int = 6, n_background: int = 40, seed: int = 0) -> BenchGame:
    """scikit-learn random forest on diabetes (n = 10); truth by enumeration (shap's
    interventional TreeSHAP is not exact on scikit-learn forests: float32 thresholds)."""
    from sklearn.datasets import load_diabetes
    from sklearn.ensemble import RandomForestRegressor

    X_all, y = load_diabetes(return_X_y=True)
    model = RandomForestRegressor(n_estimators=50, max_depth=6, random_state=seed).fit(X_all, y)
    background, X = split_rows(X_all, n_background, rows, seed)
    return enumerated_game("forest", model.predict, background, X)


def mlp_game(rows: int = 4, n_background: int = 50, seed: int = 0) -> BenchGame:
    """A scikit-learn MLP (two hidden layers of 32) predicting alcohol from the other 12 wine
    measurements (n = 12), inputs standardized; truth by enumeration."""
    from sklearn.datasets import load_wine
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    data = load_wine().data
    X_all, y = data[:, 1:], data[:, 0]
    model = make_pipeline(
        StandardScaler(),
        MLPRegressor(hidden_layer_sizes=(32, 32), max_iter=2000, random_state=seed),
    ).fit(X_all, y)
    background, X = split_rows(X_all, n_background, rows, seed)
    return enumerated_game("mlp", model.predict, background, X)


def svm_game(rows: int = 4, n_background: int = 50, seed: int = 0) -> BenchGame:
    """An RBF support-vector regressor on the first 14 breast-cancer features (n = 14), inputs
    standardized; truth by enumeration."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR

    X_all, y = load_breast_cancer(return_X_y=True)
    X_all = X_all[:, :14]
    model = make_pipeline(StandardScaler(), SVR(kernel="rbf", C=1.0)).fit(X_all, y.astype(float))
    background, X = split_rows(X_all, n_background, rows, seed)
    return enumerated_game("svm", model.predict, background, X)


def boosted_classifier_game(rows: int = 4, n_background: int = 50, seed: int = 0) -> BenchGame:
    """A scikit-learn histogram gradient-boosting classifier's probability of the benign class
    on the first 12 breast-cancer features (n = 12); truth by enumeration."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import HistGradientBoostingClassifier

    X_all, y = load_breast_cancer(return_X_y=True)
    X_all = X_all[:, :12]
    model = HistGradientBoostingClassifier(max_iter=100, random_state=seed).fit(X_all, y)
    background, X = split_rows(X_all, n_background, rows, seed)
    return enumerated_game("hgb-cancer", lambda z: model.predict_proba(z)[:, 1], background, X)


def logistic_interactions_game(rows: int = 4, n_background: int = 50, seed: int = 0) -> BenchGame:
    """A logistic regression on every feature and pairwise product of the first 12 standardized
    breast-cancer features: the probability of the benign class, a linear model with
    interactions behind a sigmoid (n = 12); truth by enumeration."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures, StandardScaler

    X_all, y = load_breast_cancer(return_X_y=True)
    X_all = X_all[:, :12]
    model = make_pipeline(
        StandardScaler(),
        PolynomialFeatures(2, interaction_only=True, include_bias=False),
        LogisticRegression(C=0.1, max_iter=5000),
    ).fit(X_all, y)
    background, X = split_rows(X_all, n_background, rows, seed)
    return enumerated_game("logit-cancer", lambda z: model.predict_proba(z)[:, 1], background, X)


def knn_game(rows: int = 4, n_background: int = 50, seed: int = 0) -> BenchGame:
    """A 10-nearest-neighbour regressor on standardized diabetes (n = 10): a piecewise-constant
    model of a kind no estimator was tuned on; truth by enumeration."""
    from sklearn.neighbors import KNeighborsRegressor

    X_all, y = _standard_diabetes()
    model = KNeighborsRegressor(n_neighbors=10).fit(X_all, y / y.std())
    background, X = split_rows(X_all, n_background, rows, seed)
    return enumerated_game("knn-diabetes", model.predict, background, X)


def xgboost_game(rows: int = 4, n_background: int = 50, seed: int = 0) -> BenchGame:
    """XGBoost (200 trees of depth 4, one thread) on Friedman's first regression problem with
    14 features: five relevant (a product inside a sine, a square, two linear terms), nine
    irrelevant (n = 14); truth by enumeration (XGBoost splits on float32 thresholds, so shap's
    TreeSHAP is not exact on it either)."""
    from sklearn.datasets import make_friedman1

    try:
        import xgboost
    except ImportError as err:
        raise ImportError(
            "the xgb-friedman game needs xgboost, which is not installed: pip install xgboost"
        ) from err

    X_all, y = make_friedman1(n_samples=1000, n_features=14, noise=1.0, random_state=seed)
    model = xgboost.XGBRegressor(
        n_estimators=200, max_depth=4, learning_rate=0.1, n_jobs=1, random_state=seed
    ).fit(X_all, y)
    background, X = split_rows(X_all, n_background, rows, seed)
    return enumerated_game("xgb-friedman", model.predict, background, X)


def _standard_diabetes() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_diabetes
    from sklearn.preprocessing import StandardScaler

    X, y = load_diabetes(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def tuning_forest_game(n_background: int = 1, rows: int = 4, seed: int = 7) -> BenchGame:
    """A case ``method="auto"``'s thresholds were tuned on: a random forest (50 trees, depth 8)
    on standardized diabetes (n = 10); truth by enumeration."""
    from sklearn.ensemble import RandomForestRegressor

    X_all, y = _standard_diabetes()
    model = RandomForestRegressor(n_estimators=50, max_depth=8, random_state=0, n_jobs=1)
    background, X = split_rows(X_all, n_background, rows, seed)
    return enumerated_game("rf-diabetes", model.fit(X_all, y).predict, background, X)


def tuning_mlp_game(n_background: int = 1, rows: int = 4, seed: int = 7) -> BenchGame:
    """A case ``method="auto"``'s thresholds were tuned on: an MLP (two hidden layers of 64) on
    standardized diabetes (n = 10), target scaled to unit variance; truth by enumeration."""
    from sklearn.neural_network import MLPRegressor

    X_all, y = _standard_diabetes()
    model = MLPRegressor(hidden_layer_sizes=(64, 64), max_iter=2000, random_state=0)
    background, X = split_rows(X_all, n_background, rows, seed)
    return enumerated_game("mlp-diabetes", model.fit(X_all, y / y.std()).predict, background, X)


def tuning_svm_game(n_background: int = 1, rows: int = 4, seed: int = 7) -> BenchGame:
    """A case ``method="auto"``'s thresholds were tuned on: an RBF SVR (gamma 0.2) predicting the
    first standardized wine measurement from the other 12 (n = 12); truth by enumeration."""
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR

    W = StandardScaler().fit_transform(load_wine(return_X_y=True)[0])
    model = SVR(kernel="rbf", gamma=0.2).fit(W[:, 1:], W[:, 0])
    background, X = split_rows(W[:, 1:], n_background, rows, seed)
    return enumerated_game("svm-wine", model.predict, background, X)


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
    "soum-bg": lambda quick: soum_game(
        n=30, rows=3 if quick else 4, n_background=5 if quick else 50
    ),
    "linear": lambda quick: linear_game(),
    "enum": lambda quick: enumeration_game(n=10 if quick else 14),
    "lightgbm": lambda quick: lightgbm_game(
        rows=3 if quick else 8, n_background=20 if quick else 50
    ),
    "forest": lambda quick: forest_game(rows=3 if quick else 6),
    "digits": lambda quick: lightgbm_digits_game(
        rows=2 if quick else 4, n_background=10 if quick else 50
    ),
    "mlp": lambda quick: mlp_game(rows=2 if quick else 4, n_background=10 if quick else 50),
    "svm": lambda quick: svm_game(rows=2 if quick else 4, n_background=10 if quick else 50),
    "fourier": lambda quick: fourier_game(n=10 if quick else 16),
}


def available_games() -> list[str]:
    """Names accepted by :func:`make_game` (``lightgbm`` and ``digits`` need ``shap`` for their
    ground truth)."""
    return list(_GAMES)


def make_game(name: str, quick: bool = False) -> BenchGame:
    """Build the game ``name``; ``quick`` picks a smaller instance of it."""
    if name not in _GAMES:
        raise fs.InvalidArgumentError(
            f"games: unknown game {name!r}; expected some of {', '.join(_GAMES)}"
        )
    return _GAMES[name](quick)


@dataclass(frozen=True)
class NearFreeModel:
    """A model that costs almost nothing: ``f(z) = z @ w + Σ_j z[:, a_j] * z[:, b_j]``.

    Linear plus a few pairwise products, so Shapley values are not trivially linear but the model
    time is a small fraction of any explainer's time. The product ``z @ w`` is an ``einsum``
    loop rather than a BLAS call: multithreaded BLAS on many small batches spends its time waking
    threads (badly so on a loaded 2-core machine), which would make the "near-free" model's cost
    depend on the batch size and on the load instead of on the rows.
    """

    weights: np.ndarray
    left: np.ndarray
    right: np.ndarray

    @classmethod
    def make(cls, n: int, n_pairs: int = 5, seed: int = 0) -> NearFreeModel:
        """A random instance on ``n`` features with ``n_pairs`` disjoint product terms."""
        rng = np.random.default_rng(seed)
        features = rng.permutation(n)[: 2 * n_pairs]
        return cls(rng.normal(size=n), features[:n_pairs], features[n_pairs:])

    def __call__(self, z: np.ndarray) -> np.ndarray:
        """Model output ``[batch]`` for inputs ``[batch, n]``."""
        linear = np.einsum("ij,j->i", z, self.weights)
        return linear + (z[:, self.left] * z[:, self.right]).sum(axis=1)


def near_free_problem(
    n: int, rows: int, seed: int = 0
) -> tuple[NearFreeModel, np.ndarray, np.ndarray]:
    """The near-free model on ``n`` features, one baseline row and ``rows`` rows to explain."""
    rng = np.random.default_rng(seed + 1)
    return NearFreeModel.make(n, seed=seed), rng.normal(size=(1, n)), rng.normal(size=(rows, n))
