"""``method="auto"``'s choice at small budgets (:data:`~ferroshap.sampling.auto.SMALL_CHOICE`):
each of :data:`~ferroshap.sampling.auto.SMALL_CANDIDATES` scored on the odd part of held-out
coalition pairs from fits on the other folds' pairs (:func:`small_budget_errors`), the weighted
regression those fits use (:func:`odd_regression`), and the Shapley values of the game's own
tree proxy (:func:`tree_proxy_values`). See ``docs/auto.md``, "The choice at small budgets".
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ferroshap import _core
from ferroshap.interactions.proxy import (
    fit_adjustment_proxy,
    fit_small_budget_proxy,
    predict_proxy,
    proxy_spectrum,
)
from ferroshap.query.backend import in_threads
from ferroshap.sampling.auto import odd_residual, scored_columns

__all__ = [
    "EXACT_FIT",
    "mix_weight",
    "odd_regression",
    "small_budget_errors",
    "tree_proxy_values",
]


def tree_proxy_values(masks: np.ndarray, values: np.ndarray) -> np.ndarray:
    """:data:`TREE_PROXY`'s Shapley values ``[R, n]``: those of a proxy
    (:func:`~ferroshap.interactions.proxy.fit_small_budget_proxy`) fitted to each column of
    ``values`` ``[m, R]`` on every sampled coalition. They need not sum to ``v(N) - v(empty)``:
    :func:`~ferroshap.sampling.proxy_adjusted.adjust_with_errors` restores that for every
    estimator."""
    n = masks.shape[1]
    fits = in_threads(
        [partial(fit_small_budget_proxy, masks, values[:, j]) for j in range(values.shape[1])]
    )
    return np.stack([proxy_spectrum(booster, n).shapley_values() for booster in fits])


def small_budget_errors(
    masks: np.ndarray,
    values: np.ndarray,
    odd: np.ndarray,
    weights: np.ndarray,
    complement: np.ndarray,
    folds: np.ndarray,
) -> np.ndarray:
    """Each of :data:`SMALL_CANDIDATES`' squared error in predicting the odd part
    ``(v(S) - v(N minus S)) / 2`` of every sampled pair beyond the border from fits on the
    other folds' pairs and the border's (``folds`` as
    :func:`~ferroshap.sampling.proxy_adjusted.complements` and its folds give them), summed over
    the folds and :func:`scored_columns`, relative to the odd part's sum of squares (at least
    the values' own at rounding level, so a game with no odd part scores about 0 instead of
    rounding noise over nothing). ``"odd-msr"`` predicts it by a regression on the
    training pairs (:func:`odd_regression`, the design's ``weights``) plus a proxy of its odd
    residual there, :data:`TREE_PROXY` by the odd part of its proxy, :data:`SMALL_BLEND` by the
    mean of the two: no candidate sees the pairs it is scored on. Where the regression on every
    pair leaves no odd residual ``odd`` ``[m, R]`` (to :data:`EXACT_FIT`; a game of order two or
    less), ``"odd-msr"`` scores 0: it is exact there, though a fold's pairs alone may not
    determine the regression.

    The border pairs ``{i}``, ``N minus {i}`` (every one of them in a ``kernel-wor`` design from
    budget ``2n`` on) are never held out: each is its player's one direct measurement, and a
    fold's regression without it hardly determines that player, so its held-out error said more
    about the fold than about the regression on every pair (docs/auto.md)."""
    one_per_pair = np.flatnonzero(complement > np.arange(len(masks)))
    size = masks[one_per_pair].sum(axis=1)
    scored = one_per_pair[(size > 1) & (size < masks.shape[1] - 1)]
    columns = scored_columns(np.arange(values.shape[1]))
    calls = []
    for fold in range(int(folds.max()) + 1):
        held_out = scored[folds[scored] == fold]
        if len(held_out) == 0:
            continue
        train = np.ones(len(masks), dtype=bool)
        train[held_out] = train[complement[held_out]] = False
        calls += [
            partial(_fold_errors, masks, train, held_out, complement, values[:, j], weights)
            for j in columns
        ]
    sums = np.sum(in_threads(calls), axis=0)
    rounding = np.finfo(float).eps ** 2 * float(sums[-1])
    errors = sums[:-2] / max(float(sums[-2]), rounding, np.finfo(float).tiny)
    scale = float(np.sum(values[:, columns] ** 2))
    if float(np.sum(odd[:, columns] ** 2)) <= EXACT_FIT**2 * scale:
        errors[0] = 0.0
    return errors


def mix_weight(errors: np.ndarray) -> tuple[float, float]:
    """The weight ``w`` of ``"odd-msr"`` in the mix ``w odd-msr + (1 - w) tree-proxy`` whose
    held-out error is least, and that error, from :func:`small_budget_errors`' three scores
    (``"odd-msr"``, :data:`~ferroshap.sampling.auto.TREE_PROXY` and their mean).

    The mix's squared error is a quadratic in ``w``; its value at ``w = 1, 0, 1/2`` (the three
    scores) fixes it, so the best ``w`` in ``[0, 1]`` costs no fit of its own. Where
    ``"odd-msr"`` scores 0 (an exact regression) the weight is 1.

    Examples
    --------
    >>> mix_weight(np.array([1.0, 1.0, 0.5]))  # independent errors of equal size: the mean
    (0.5, 0.5)
    >>> mix_weight(np.array([0.0, 1.0, 0.25]))
    (1.0, 0.0)
    """
    a, b, mean = (float(e) for e in errors)
    cross = 2 * mean - (a + b) / 2  # the two errors' inner product, relative
    curvature = a + b - 2 * cross  # the squared difference of the two predictions: >= 0
    if a == 0.0 or curvature <= 0.0:
        return (1.0, a) if a <= b else (0.0, b)
    w = min(1.0, max(0.0, (b - cross) / curvature))
    return w, w * w * a + (1 - w) ** 2 * b + 2 * w * (1 - w) * cross


EXACT_FIT = 1e-12
"""Largest root of the odd residual's sum of squares relative to the values' at which
:func:`small_budget_errors` takes the design's regression as exact."""


def odd_regression(
    masks: np.ndarray, v: np.ndarray, weights: np.ndarray, pairs: np.ndarray, partners: np.ndarray
) -> np.ndarray:
    """Shapley values ``[n]`` of the weighted least-squares fit of an additive game to the odd
    parts ``(v(S) - v(N minus S)) / 2`` of the pairs ``(pairs[k], partners[k])``, summing to
    ``v(N) - v(empty)`` (rows 1 and 0 of ``masks``). The odd part of an additive game is
    ``<1_S, phi> - sum(phi) / 2``; with the sum fixed, the fit is over the sum-zero part
    (minimum norm where the pairs do not determine it)."""
    n = masks.shape[1]
    total = float(v[_core.FULL_ROW] - v[_core.EMPTY_ROW])
    s = masks[pairs].astype(np.float64)
    size = s.sum(axis=1)
    y = (v[pairs] - v[partners]) / 2 - total * (size / n - 0.5)
    root = np.sqrt(weights[pairs] + weights[partners])
    delta = np.linalg.lstsq((s - size[:, None] / n) * root[:, None], y * root, rcond=None)[0]
    return total / n + delta - delta.mean()


def _fold_errors(
    masks: np.ndarray,
    train: np.ndarray,
    held_out: np.ndarray,
    complement: np.ndarray,
    v: np.ndarray,
    weights: np.ndarray,
) -> list[float]:
    """:func:`small_budget_errors`' squared errors of each candidate on one fold and column,
    the held-out odd part's sum of squares and that of the values it comes from."""
    partners = complement[held_out]
    y = (v[held_out] - v[partners]) / 2
    pairs = np.flatnonzero(train & (complement > np.arange(len(masks))))
    phi = odd_regression(masks, v, weights, pairs, complement[pairs])
    odd = odd_residual(masks, complement, v[:, None], phi[None])[:, 0]
    linear = masks[held_out] @ phi - phi.sum() / 2
    odd_msr = linear + predict_proxy(
        fit_adjustment_proxy(masks[train], odd[train]), masks[held_out]
    )
    booster = fit_small_budget_proxy(masks[train], v[train])
    tree = (predict_proxy(booster, masks[held_out]) - predict_proxy(booster, masks[partners])) / 2
    blend = (odd_msr + tree) / 2
    scale = float(v[held_out] @ v[held_out] + v[partners] @ v[partners])
    return [*(float(np.sum((y - f) ** 2)) for f in (odd_msr, tree, blend)), float(y @ y), scale]
