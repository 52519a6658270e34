"""Accuracy metrics of estimated against exact Shapley values, averaged over explained rows."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["kendall", "relative_error", "spearman", "top_k_precision"]


def relative_error(estimate: NDArray[np.float64], truth: NDArray[np.float64]) -> float:
    """Mean over rows of ``Σ(φ̂ - φ)² / Σφ²``.

    Examples
    --------
    >>> relative_error(np.array([[1.0, 1.0]]), np.array([[1.0, 0.0]]))
    1.0
    """
    num = ((estimate - truth) ** 2).sum(axis=1)
    den = np.maximum((truth**2).sum(axis=1), np.finfo(float).tiny)
    return float((num / den).mean())


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
