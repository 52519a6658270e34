"""The LightGBM proxy, fitted on masks → game values: the parameters of its two uses (ProxySPEX;
the proxy-adjusted Shapley estimators), its fit, its predictions, its exact spectrum, and the
least-squares refit of a game's odd part on the spectrum's largest odd terms (:func:`refit_odd`).

The refit: in the ±1 Fourier basis ``chi_K(S) = (-1)**|K & S|`` a game's Shapley values depend
only on its coefficients of odd order ``|K|`` (each odd ``K`` gives ``-2 F(K) / |K|`` to every
``i`` in ``K``), and the odd part ``(v(S) - v(N minus S)) / 2`` of a paired design contains
exactly those terms. A proxy fitted to that odd part (:mod:`ferroshap.sampling.proxy_adjusted`)
proposes a support: its largest odd coefficients, one per :data:`SAMPLES_PER_TERM` sampled
coalitions, plus every singleton. Their coefficients are then refitted by ordinary least squares
on the samples, which removes the proxy's shrinkage: a game whose odd part lies in the support
is fitted exactly. The idea is OddSHAP's (Fumagalli et al., 2026); this is our own formulation
on top of the proxy-leverage adjustment, which keeps it unbiased in the limit and efficient."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ferroshap import _core
from ferroshap.query.backend import workers

__all__ = [
    "ADJUSTMENT_PARAMS",
    "ADJUSTMENT_ROUNDS",
    "DEFAULT_PROXY_PARAMS",
    "EARLY_STOPPING_ROUNDS",
    "MAX_ROUNDS",
    "PARALLEL_CELLS",
    "SAMPLES_PER_TERM",
    "SMALL_BUDGET_PARAMS",
    "WELL_CONDITIONED",
    "fit_adjustment_proxy",
    "fit_proxy",
    "fit_small_budget_proxy",
    "fourier_basis",
    "least_squares",
    "predict_proxy",
    "proxy_learning_rate",
    "proxy_spectrum",
    "proxy_threads",
    "refit_odd",
]

DEFAULT_PROXY_PARAMS: dict[str, Any] = {
    "objective": "regression",
    "max_depth": 4,
    "num_leaves": 6,
    "min_data_in_leaf": 10,
    "deterministic": True,
    "force_col_wise": True,
    "verbosity": -1,
}
"""LightGBM parameters of the proxy (``max_depth`` is raised to ``max_order`` when lower).

Small trees with early stopping: see ``docs/proxyspex.md`` for the measurements behind this
choice. Unless overridden, ``learning_rate`` is :func:`proxy_learning_rate` of the number of
players and ``num_threads`` is :func:`proxy_threads`. ``deterministic=True`` with
``force_col_wise=True`` gives the same trees for any number of threads (each thread builds the
histograms of whole features), so the proxy stays bit-for-bit reproducible across machines.
"""

ADJUSTMENT_PARAMS: dict[str, Any] = {
    **DEFAULT_PROXY_PARAMS,
    "max_depth": -1,
    "num_leaves": 15,
    "learning_rate": 0.3,
    "num_threads": 1,
    "seed": 0,
}
"""LightGBM parameters of the proxy-adjusted Shapley estimators (``method="proxy-leverage"``,
``"tree-msr"`` and the ``auto`` recipes built on them), chosen on tuning seeds
(docs/proxy-adjusted.md, "How the proxy's settings were chosen"): :data:`DEFAULT_PROXY_PARAMS`
with deeper trees (no depth limit, 15 leaves), a fixed learning rate, one thread and a fixed
seed, because the proxy does another job there: it fits the residual of a regression on every
sampled coalition, with no held-out set to stop on, so it runs a fixed
:data:`ADJUSTMENT_ROUNDS`. ``num_threads=1`` (the fits of several rows and outputs run side by
side instead) and ``deterministic=True`` make it bit-for-bit reproducible."""

SMALL_BUDGET_PARAMS: dict[str, Any] = {**ADJUSTMENT_PARAMS, "min_data_in_leaf": 3, "lambda_l2": 2.0}
""":data:`ADJUSTMENT_PARAMS` with leaves of as few as three coalitions, their values shrunk by an
L2 penalty of 2 (a leaf of ``k`` coalitions moves ``k / (k + 2)`` of the way to its mean
residual): the proxy of the game itself that ``method="auto"`` weighs at budgets of a few times
``n`` (``"tree-proxy"``, see :mod:`ferroshap.sampling.auto`), where leaves of ten leave a tree
game's proxy too coarse and unshrunk leaves of three chase single coalitions (docs/auto.md)."""

ADJUSTMENT_ROUNDS = 120
"""Boosting rounds of the proxy-adjusted estimators' proxy (no early stopping)."""

BASE_LEARNING_RATE = 0.1
"""The proxy's learning rate up to :data:`LEARNING_RATE_PLAYERS` players."""

LEARNING_RATE_PLAYERS = (128, 1024)
"""From the first to the second player count the learning rate grows from
:data:`BASE_LEARNING_RATE` to :data:`MAX_LEARNING_RATE`, as a power of ``n``."""

MAX_LEARNING_RATE = 0.3

MAX_PROXY_THREADS = 8
"""Most LightGBM threads for the proxy (its data are small: more threads stop paying)."""

PARALLEL_CELLS = 2**21
"""Training masks x players from which the proxy is fitted on several threads."""

MAX_ROUNDS = 2000
"""Most boosting rounds; early stopping after 50 rounds without validation improvement."""

EARLY_STOPPING_ROUNDS = 50


def proxy_learning_rate(n: int) -> float:
    """The proxy's learning rate for ``n`` players: 0.1 up to 128 players, 0.3 from 1 024,
    and in between ``0.1 * (n / 128) ** 0.528`` (a power of ``n`` joining the two; why:
    docs/proxyspex.md, step 3).

    Examples
    --------
    >>> proxy_learning_rate(64), round(proxy_learning_rate(512), 3), proxy_learning_rate(5000)
    (0.1, 0.208, 0.3)
    """
    low, high = LEARNING_RATE_PLAYERS
    if n <= low:
        return BASE_LEARNING_RATE
    if n >= high:
        return MAX_LEARNING_RATE
    power = math.log(MAX_LEARNING_RATE / BASE_LEARNING_RATE) / math.log(high / low)
    return BASE_LEARNING_RATE * (n / low) ** power


def proxy_threads(cells: int) -> int:
    """LightGBM threads for a proxy fitted on ``cells`` = training masks x players.

    One below :data:`PARALLEL_CELLS` (small fits gain nothing from threads); else the threads the
    engine may use (:func:`~ferroshap.query.backend.workers`: its ``n_jobs``, or the CPUs this
    process may use), at most :data:`MAX_PROXY_THREADS` (docs/proxyspex.md, step 3): chosen from
    the machine, never from its load, so that a call does the same work wherever it runs. The
    trees do not depend on the thread count, so neither do the results.

    Examples
    --------
    >>> proxy_threads(1000)
    1
    """
    if cells < PARALLEL_CELLS:
        return 1
    return min(MAX_PROXY_THREADS, workers())


def fit_proxy(
    params: dict[str, Any],
    train: tuple[np.ndarray, np.ndarray],
    validation: tuple[np.ndarray, np.ndarray] | None = None,
    rounds: int = MAX_ROUNDS,
) -> Any:
    """LightGBM booster on masks → values: early-stopped on ``validation`` when given, else
    exactly ``rounds`` rounds.

    On one thread a column-wise fit runs row-wise instead: each bin's rows are summed in the
    same order either way, so the trees are the same, in 0.6x the time (200 rounds on 2 048
    masks of 30 players: 30 ms against 49). Column-wise histograms are kept for several threads,
    where they make the trees independent of the thread count.
    """
    try:
        import lightgbm as lgb
    except ImportError as err:
        raise ImportError(
            "the LightGBM proxy (ProxySPEX; method='proxy-leverage', 'tree-msr' and the recipes "
            "of method='auto' built on them) needs LightGBM: `pip install lightgbm`"
        ) from err
    if params.get("num_threads") == 1 and params.get("force_col_wise"):
        params = {**params, "force_col_wise": False, "force_row_wise": True}
    train_set = lgb.Dataset(train[0].astype(np.float64), train[1], params={"verbosity": -1})
    stopping: dict[str, Any] = {}
    if validation is not None:
        valid_set = train_set.create_valid(validation[0].astype(np.float64), validation[1])
        stopping = {
            "valid_sets": [valid_set],
            "callbacks": [lgb.early_stopping(EARLY_STOPPING_ROUNDS, verbose=False)],
        }
    # keep_training_booster skips lgb.train's text round trip of the model; the trees past the
    # best iteration stay in the booster, and its text and predictions stop at the best one.
    return lgb.train(
        params, train_set, num_boost_round=rounds, keep_training_booster=True, **stopping
    )


def fit_adjustment_proxy(masks: np.ndarray, target: np.ndarray) -> Any:
    """The proxy-adjusted estimators' proxy on every sampled coalition
    (:data:`ADJUSTMENT_PARAMS`, :data:`ADJUSTMENT_ROUNDS` rounds)."""
    return fit_proxy(ADJUSTMENT_PARAMS, (masks, target), rounds=ADJUSTMENT_ROUNDS)


def fit_small_budget_proxy(masks: np.ndarray, target: np.ndarray) -> Any:
    """The proxy of a game itself at small budgets on the given coalitions
    (:data:`SMALL_BUDGET_PARAMS`, :data:`ADJUSTMENT_ROUNDS` rounds)."""
    return fit_proxy(SMALL_BUDGET_PARAMS, (masks, target), rounds=ADJUSTMENT_ROUNDS)


def predict_proxy(booster: Any, masks: np.ndarray) -> np.ndarray:
    """The proxy's values on 0/1 ``masks``, as float64."""
    return np.asarray(booster.predict(masks.astype(np.float64)), dtype=np.float64)


def proxy_spectrum(booster: Any, n: int) -> Any:
    """The proxy's exact Fourier spectrum on ``n`` 0/1 players
    (:func:`ferroshap._core.lightgbm_fourier`, read from its best iteration's trees)."""
    return _core.lightgbm_fourier(booster.model_to_string(), n)


SAMPLES_PER_TERM = 10
"""Sampled coalitions per fitted Fourier term (OddSHAP's ``eta``)."""

WELL_CONDITIONED = 1e-2
"""Smallest ratio of the normal equations' Cholesky diagonal (smallest to largest) at which
:func:`least_squares` solves them: a condition number of the basis below ~100, so the normal
equations lose at most ~4 of float64's digits."""


def refit_odd(
    spectrum: _core.SparseFunction,
    masks: np.ndarray,
    target: np.ndarray,
    rows: np.ndarray | None = None,
) -> _core.SparseFunction:
    """The least-squares fit of ``target`` (odd part, ``[m]``) on the screened odd support of
    ``spectrum`` (a Fourier :class:`~ferroshap._core.SparseFunction` on ``n`` players).

    ``rows`` (indices into ``masks``) restricts the equations, e.g. to one coalition of each
    sampled pair: an odd term and the odd part both change sign on the complement, so a pair's
    two equations are one. The support size still counts every sampled coalition.

    Returns a Fourier :class:`~ferroshap._core.SparseFunction` with the refitted coefficients.

    Examples
    --------
    >>> masks = (np.arange(64)[:, None] >> np.arange(6)) & 1 == 1
    >>> target = 1.0 - 2.0 * (masks[:, 0] ^ masks[:, 1] ^ masks[:, 2])  # chi_{0,1,2}
    >>> screened = _core.SparseFunction("Fourier", 6, [(0, 1, 2)], np.array([0.1]))
    >>> fit = refit_odd(screened, masks, target)
    >>> kept = np.abs(fit.coefficients()) > 1e-9
    >>> [key for key, keep in zip(fit.keys(), kept) if keep], fit.coefficients()[kept].round(6)
    ([(0, 1, 2)], array([1.]))
    """
    n = masks.shape[1]
    odd = np.flatnonzero(spectrum.orders() % 2 == 1)
    magnitude = np.abs(spectrum.coefficients()[odd])
    largest = odd[np.argsort(-magnitude, kind="stable")[: len(masks) // SAMPLES_PER_TERM]]
    support = set(spectrum.keys(largest)) | {(i,) for i in range(n)}
    ordered = sorted(support, key=lambda key: (len(key), key))
    equations = masks if rows is None else masks[rows]
    basis = fourier_basis(equations, ordered)
    values = target if rows is None else target[rows]
    return _core.SparseFunction("Fourier", n, ordered, least_squares(basis, values))


def least_squares(basis: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``argmin_c |basis c - values|``: through the normal equations when their Cholesky factor
    shows them well conditioned (the ±1 parity columns of distinct keys on random coalitions
    are nearly orthogonal: 6x faster than an SVD, equal to ~1e-17), else the minimum-norm SVD
    solution (dependent or nearly dependent columns)."""
    gram = basis.T @ basis
    try:
        diagonal = np.diag(np.linalg.cholesky(gram))
    except np.linalg.LinAlgError:
        diagonal = np.zeros(1)
    if diagonal.min() > WELL_CONDITIONED * diagonal.max():
        return np.ascontiguousarray(np.linalg.solve(gram, basis.T @ values))
    return np.ascontiguousarray(np.linalg.lstsq(basis, values, rcond=None)[0])


def fourier_basis(masks: np.ndarray, keys: list[tuple[int, ...]]) -> np.ndarray:
    """``chi_K(S) = (-1)**|K & S|`` of every key ``K`` (columns, in order) on every coalition
    ``S`` of ``masks`` (rows); keys of one size are done together.

    Examples
    --------
    >>> fourier_basis(np.array([[True, False], [True, True]]), [(0,), (0, 1)])
    array([[-1., -1.],
           [-1.,  1.]])
    """
    basis = np.empty((len(masks), len(keys)))
    sizes = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    for size in np.unique(sizes):
        columns = np.flatnonzero(sizes == size)
        players = np.array([keys[c] for c in columns], dtype=np.int64).reshape(len(columns), size)
        parity = np.zeros((len(masks), len(columns)), dtype=bool)
        for j in range(size):
            parity ^= masks[:, players[:, j]]
        basis[:, columns] = 1.0 - 2.0 * parity
    return basis
