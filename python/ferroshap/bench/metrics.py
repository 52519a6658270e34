"""Accuracy metrics of estimated against exact Shapley values: the one home of every metric the
tests, benchmarks and examples report.

Each takes the estimate and the truth of the same shape, ``[rows, n]`` (one row per explained
row, or per game column; :func:`mean_relative_squared_error` needs this shape) or ``[n]`` (one
game), and returns a float. :func:`r_squared` is the
library's own goodness of fit (:mod:`ferroshap.scores`), re-exported here.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ferroshap.scores import r_squared

__all__ = [
    "kendall",
    "mean_relative_squared_error",
    "r_squared",
    "relative_l2_error",
    "relative_squared_error",
    "spearman",
    "top_k_precision",
]


def mean_relative_squared_error(estimate: NDArray[np.float64], truth: NDArray[np.float64]) -> float:
    """Mean over rows of ``Σ_i (φ̂_i - φ_i)² / Σ_i φ_i²`` for ``[rows, n]``; a row whose truth is
    all zeros divides by the smallest positive float instead.

    The ``rel_error`` of the benchmark tables.

    Examples
    --------
    >>> mean_relative_squared_error(np.array([[1.0, 1.0]]), np.array([[1.0, 0.0]]))
    1.0
    """
    num = ((estimate - truth) ** 2).sum(axis=1)
    den = np.maximum((truth**2).sum(axis=1), np.finfo(float).tiny)
    return float((num / den).mean())


def relative_squared_error(estimate: NDArray[np.float64], truth: NDArray[np.float64]) -> float:
    """``Σ (φ̂ - φ)² / Σ φ²`` over all entries at once (not averaged per row): the square of
    :func:`relative_l2_error`, summed before dividing.

    Examples
    --------
    >>> relative_squared_error(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([[1.0, 0.0]] * 2))
    1.0
    """
    return float(np.sum((estimate - truth) ** 2) / np.sum(truth**2))


def relative_l2_error(estimate: NDArray[np.float64], truth: NDArray[np.float64]) -> float:
    """``‖φ̂ - φ‖₂ / ‖φ‖₂`` over all entries at once (the Frobenius norm for ``[rows, n]``), not
    squared and not averaged per row.

    Examples
    --------
    >>> relative_l2_error(np.array([0.0, 3.0]), np.array([0.0, 5.0]))
    0.4
    """
    return float(np.linalg.norm(estimate - truth) / np.linalg.norm(truth))


def _mean_rank_correlation(name: str, estimate: NDArray, truth: NDArray) -> float:
    from scipy import stats

    correlation = getattr(stats, name)
    values = [correlation(e, t).statistic for e, t in zip(estimate, truth, strict=True)]
    return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")


def spearman(estimate: NDArray[np.float64], truth: NDArray[np.float64]) -> float:
    """Mean over rows of Spearman's rank correlation (``scipy.stats.spearmanr``).

    Examples
    --------
    >>> spearman(np.array([[1.0, 2.0, 3.0]]), np.array([[10.0, 20.0, 30.0]]))
    1.0
    """
    return _mean_rank_correlation("spearmanr", estimate, truth)


def kendall(estimate: NDArray[np.float64], truth: NDArray[np.float64]) -> float:
    """Mean over rows of Kendall's tau-b (``scipy.stats.kendalltau``).

    Examples
    --------
    >>> kendall(np.array([[1.0, 2.0, 3.0]]), np.array([[3.0, 2.0, 1.0]]))
    -1.0
    """
    return _mean_rank_correlation("kendalltau", estimate, truth)


def top_k_precision(estimate: NDArray[np.float64], truth: NDArray[np.float64], k: int) -> float:
    """Mean over rows of the share of the true top-``k`` features (by ``|φ|``) that are also
    in the estimate's top ``k``.

    Examples
    --------
    >>> top_k_precision(np.array([[3.0, 0.0, 2.0]]), np.array([[3.0, 2.0, 0.0]]), k=2)
    0.5
    """
    k = min(k, estimate.shape[1])
    hits = [
        len(set(np.argsort(-np.abs(e))[:k]) & set(np.argsort(-np.abs(t))[:k])) / k
        for e, t in zip(estimate, truth, strict=True)
    ]
    return float(np.mean(hits))
