"""Proxy-adjusted estimators: ``"proxy-leverage"`` and ``"tree-msr"`` (docs/proxy-adjusted.md).

Both plan a paired ``"leverage"`` design, query the game once on it and fit one LightGBM proxy
``f`` per explained column (row and output) to the sampled coalition values (the proxy-leverage
family shares one between neighbouring columns whose targets are multiples of each other, see
:func:`proportional_columns`). The proxy's exact
Shapley values come from its trees through the compiled tree -> Fourier path
(:func:`ferroshap._core.lightgbm_fourier`), so the adjustment costs no extra model queries.

``"proxy-leverage"``
    ``phi = LS(v) + phi(f) - LS(f)``, where ``LS`` is the LeverageSHAP regression (linear in
    the values, factorized once per design) and ``f`` is fitted to the odd part
    ``(r(S) - r(N - S)) / 2`` of the residual ``r = v - l`` of the linear fit
    ``l(S) = v(empty) + sum_{i in S} LS(v)_i``. Paired LS is exact on games of Moebius order
    two or less, so only odd Fourier content of order three or more of ``f`` changes the
    estimate.
``"odd-sparse"`` (:data:`ODD_SPARSE`, chosen by ``method="auto"`` only)
    As ``"proxy-leverage"``, with ``f`` the least-squares refit of the odd part on the proxy's
    largest odd Fourier terms (:func:`ferroshap.interactions.proxy.refit_odd`).
``"odd-blend"`` (:data:`ODD_BLEND`, ``method="auto"`` only)
    The mean of the ``"proxy-leverage"`` and ``"odd-sparse"`` estimates (one proxy serves both).
``"odd-choice"`` (:data:`ODD_CHOICE`, what ``method="auto"`` runs from the proxy's minimum budget)
    Whichever of ``"proxy-leverage"``, ``"odd-sparse"`` and ``"odd-blend"`` predicts held-out
    coalitions best (:func:`held_out_errors`); no extra model queries.
``"small-choice"`` (:data:`SMALL_CHOICE`, ``method="auto"`` at small budgets)
    ``"odd-msr"`` (:data:`ODD_MSR`), ``"tree-proxy"`` (:data:`TREE_PROXY`: the Shapley values
    of a proxy of the game itself) or a weighted mean of the two (:data:`SMALL_BLEND`), the mix
    that predicts the odd part of held-out pairs best over five folds
    (:mod:`~ferroshap.sampling.small_choice`).
``"tree-msr"``
    Tree MSR (Witter, Liu, Musco 2025) as published: ``f`` fitted to ``v`` on the same samples,
    plus the Horvitz-Thompson (maximum sample reuse) estimate of the residual game with the
    without-replacement weights ``1 / (s m_s)`` for ``i in S`` and ``-1 / ((n - s) m_s)``
    otherwise (``m_s`` sampled coalitions of size ``s``). With ``cross_fit=k`` each pair's
    residual comes from a proxy fitted on the other ``k - 1`` folds of pairs, and ``phi(f)`` is
    the folds' mean. A baseline: on interventional tabular games it is far less accurate than
    ``"proxy-leverage"`` (see README).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ferroshap import _core
from ferroshap._core import EMPTY_ROW, FIRST_SAMPLED_ROW, FULL_ROW, InvalidArgumentError
from ferroshap.interactions.proxy import fit_adjustment_proxy, predict_proxy, proxy_spectrum
from ferroshap.query.backend import in_threads
from ferroshap.sampling.auto import (
    CANDIDATES,
    HOLDOUT_FOLDS,
    ODD_BLEND,
    ODD_CHOICE,
    ODD_MSR,
    ODD_SPARSE,
    PROXY_METHODS,
    SMALL_BLEND,
    SMALL_CANDIDATES,
    SMALL_CHOICE,
    TREE_PROXY,
    Choice,
    HoldOut,
    candidate_fit,
    fit_column_proxy,
    held_out_errors,
    odd_residual,
    scored_columns,
)
from ferroshap.sampling.small_choice import mix_weight, small_budget_errors, tree_proxy_values
from ferroshap.validation import check_int

__all__ = [
    "PROPORTIONAL_TOLERANCE",
    "adjust",
    "adjust_with_errors",
    "check_cross_fit",
    "complements",
    "proportional_columns",
]

PROPORTIONAL_TOLERANCE = 4.0 * float(np.finfo(np.float32).eps)
"""Distance, relative to the size of the game's values, below which one output's odd residual
counts as a multiple of another's (:func:`proportional_columns`): float32's resolution, so that
a binary classifier computed in float32 (XGBoost, PyTorch), whose two probabilities sum to one
only to ~6e-8, shares one proxy between them as one computed in float64 does. What a shared
proxy can change in the values is bounded by the same distance (~5e-7 of the values' size)."""


def check_cross_fit(cross_fit: Any, method: str) -> int | None:
    """Validate ``cross_fit``: ``None``, or a number of folds ``>= 2`` for ``"tree-msr"``."""
    if cross_fit is None:
        return None
    folds = check_int(cross_fit, "cross_fit", 2)
    if method != "tree-msr":
        raise InvalidArgumentError(
            f"cross_fit applies to method='tree-msr' only; got method={method!r}",
            argument="cross_fit",
        )
    return folds


def adjust(
    method: str,
    design: _core.Design,
    values: np.ndarray,
    phi: np.ndarray,
    cross_fit: int | None = None,
) -> np.ndarray:
    """Proxy-adjusted Shapley values ``[R, n]`` from a regression design's values ``[m, R]`` and
    its estimate ``phi`` ``[R, n]``; exact designs are returned unchanged. ``method`` is one of
    :data:`PROXY_METHODS`, :data:`ODD_SPARSE`, :data:`ODD_MSR` or :data:`SMALL_CHOICE`.

    Each row of the result sums to ``v(N) - v(empty)`` (rounding corrected). The values of
    :func:`adjust_with_errors`, without their standard errors.

    Examples
    --------
    >>> import numpy as np
    >>> design = _core.plan("leverage", 8, 64, seed=0)
    >>> values = design.masks() @ np.arange(8.0)[:, None]  # an additive game, one column
    >>> phi = adjust("proxy-leverage", design, values, design.estimate(values))
    >>> np.allclose(phi, np.arange(8.0))
    True
    """
    return adjust_with_errors(method, design, values, phi, cross_fit)[0]


def adjust_with_errors(
    method: str,
    design: _core.Design,
    values: np.ndarray,
    phi: np.ndarray,
    cross_fit: int | None = None,
) -> tuple[np.ndarray, Callable[[], np.ndarray], Choice | None]:
    """:func:`adjust`'s values ``[R, n]``, a function computing their standard errors
    ``[R, n]`` (called only when they are read: they cost several times the estimate), and for
    :data:`ODD_CHOICE` the :class:`Choice` it made (``None`` otherwise).

    Every adjusted estimate is ``phi(f) + E(v - f)``: the proxy's exact Shapley values plus an
    estimate ``E`` of the residual game's. The proxy ``f`` is taken as given, so its exact part
    carries no sampling error. For ``"tree-msr"`` the standard error is the stratified
    Horvitz-Thompson variance (``Design.horvitz_thompson_errors``) of its maximum-sample-reuse
    estimate of the residual game: with ``cross_fit``, of its own residuals (each from a proxy
    that did not see it); without, of the residuals of a cross-fit on :data:`HOLDOUT_FOLDS`
    folds, computed when the errors are read (:func:`cross_fitted_errors`: the in-sample
    residuals are too small). The other proxies are fitted on the very samples they
    correct (their in-sample residuals are too small to measure the error by): for
    :data:`CANDIDATES` and :data:`ODD_CHOICE` the standard errors are the plain regression's
    (``Design.standard_errors`` of ``values``) scaled by the root of the surrogate's held-out
    error, the share of the odd part's mean square it leaves unexplained on pairs it did not see
    (at most 1; :func:`scaled_errors`: for a candidate run on its own, its held-out fits run
    only when the errors are read); for ``"odd-msr"`` the plain regression's, an upper bound
    wherever the adjustment helps. See ``docs/standard-errors.md``.
    """
    if design.exact:
        return phi, lambda: np.zeros_like(phi), None
    masks = design.masks()
    n = masks.shape[1]
    complement = complements(masks)
    v0, v1 = values[EMPTY_ROW], values[FULL_ROW]
    choice = None
    one_per_pair = np.flatnonzero(complement < np.arange(len(masks)))
    fold = _folds(complement, HOLDOUT_FOLDS, design.seed, design.stream)
    split = HoldOut.of(one_per_pair[fold[one_per_pair] == 0], one_per_pair, complement)
    odd = None  # the regression's odd residual, for the estimators that correct it
    if method in (*CANDIDATES, ODD_CHOICE, ODD_MSR, SMALL_CHOICE, SMALL_BLEND):
        odd = odd_residual(masks, complement, values, phi)
    blend_weight, mixed = 0.5, 1.0  # "odd-msr"'s weight in SMALL_BLEND, its held-out error
    if method == SMALL_CHOICE:  # the mix that wins runs below, as if asked for
        small = small_budget_errors(masks, values, odd, design.weights(), complement, fold)
        blend_weight, mixed = mix_weight(small)
        method = {1.0: ODD_MSR, 0.0: TREE_PROXY}.get(blend_weight, SMALL_BLEND)
        choice = Choice(method, dict(zip(SMALL_CANDIDATES, small.tolist(), strict=True)))
    if method in (*CANDIDATES, ODD_CHOICE):
        # One proxy per row and output, fitted in threads (LightGBM and the tree reader release
        # the GIL); each fit is single-threaded and seeded, so the order of completion does not
        # matter and the results are bit for bit those of a plain loop. A column whose target is
        # a multiple of the previous column's (a binary classifier's two probabilities) reuses
        # that column's proxy, scaled: the fit is equivariant to the scale. "odd-choice" also
        # fits a proxy on the pairs not held out, for at most HOLDOUT_COLUMNS of the columns
        # (the choice is one per design), and only the winner's surrogate is then evaluated.
        sources, scales = proportional_columns(odd, np.linalg.norm(values, axis=0))
        fitted_columns = np.flatnonzero(sources == np.arange(len(sources)))
        calls: list[Callable[[], Any]] = [
            partial(fit_column_proxy, masks, odd[:, j]) for j in fitted_columns
        ]
        scores = [
            partial(held_out_errors, masks, odd[:, j], split)
            for j in scored_columns(fitted_columns)
        ]
        results = in_threads(calls + scores if method == ODD_CHOICE else calls)
        proxies = results[: len(fitted_columns)]
        name = method
        if method == ODD_CHOICE:  # pooled over the scored columns: one choice per design
            pooled = np.mean(results[len(fitted_columns) :], axis=0)
            name = CANDIDATES[int(np.argmin(pooled))]
            choice = Choice(name, dict(zip(CANDIDATES, pooled.tolist(), strict=True)))
        surrogates = in_threads(
            [
                partial(candidate_fit, name, proxy, masks, odd[:, j], one_per_pair)
                for j, proxy in zip(fitted_columns, proxies, strict=True)
            ]
        )
        fits_of = dict(zip(fitted_columns, surrogates, strict=True))
        fits = [fits_of[s] for s in sources]
        phi_f = np.stack([scale * fit[0] for scale, fit in zip(scales, fits, strict=True)])
        fitted = np.stack([scale * fit[1] for scale, fit in zip(scales, fits, strict=True)], 1)
        out = phi + phi_f - design.estimate(np.ascontiguousarray(fitted))
    elif method == TREE_PROXY:
        out = tree_proxy_values(masks, values)
    elif method in (ODD_MSR, "tree-msr", SMALL_BLEND):
        of_odd = method != "tree-msr"
        target = odd if of_odd else values
        folds = _folds(complement, 1 if of_odd else cross_fit or 1, design.seed, design.stream)
        weights = _msr_weights(masks)
        fits = [_tree_msr(masks, target[:, j], folds, weights) for j in range(values.shape[1])]
        out = np.stack([estimate for estimate, _ in fits]) + (phi if of_odd else 0.0)
        residuals = np.stack([residual for _, residual in fits], axis=1)
        if method == SMALL_BLEND:
            out = blend_weight * out + (1 - blend_weight) * tree_proxy_values(masks, values)
    else:
        valid = (*PROXY_METHODS, ODD_SPARSE, ODD_BLEND, ODD_CHOICE, ODD_MSR, SMALL_CHOICE)
        raise InvalidArgumentError(f"method must be one of {valid}; got {method!r}")
    if method == "tree-msr":
        errors = partial(design.horvitz_thompson_errors, np.ascontiguousarray(residuals))
        if cross_fit is None:  # in-sample residuals, too small: those of a cross-fit instead
            errors = partial(cross_fitted_errors, design, masks, values, fold, weights)
    elif choice is not None and method in (SMALL_BLEND, TREE_PROXY):
        # SMALL_CHOICE's mix: "odd-msr" (w = 1) reports the plain regression's standard errors
        # (below); any other mix of it and "tree-proxy" (w = 0 included) reports them scaled by
        # the root of its held-out error relative to "odd-msr"'s (scaled by its own held-out
        # error they were too small: 76 % coverage, and 80 % at 3n for "tree-proxy" once the
        # border pairs were kept out of the held-out folds).
        relative = mixed / max(choice.held_out_errors[ODD_MSR], np.finfo(float).tiny)
        errors = partial(scaled_errors, design, values, relative)
    elif choice is not None and method != ODD_MSR:
        # The winner's surrogate left this share of the odd part's mean square unexplained on
        # pairs it did not see: the plain regression's standard errors, scaled by its root,
        # stand for those of the regression on what the surrogate leaves out.
        errors = partial(scaled_errors, design, values, choice.held_out_errors[choice.estimator])
    elif method in CANDIDATES:  # the same evidence, gathered only when the errors are read
        errors = partial(held_out_scaled_errors, design, values, scores, CANDIDATES.index(name))
    else:
        # The proxy was fitted on these samples, so its residuals here understate those it
        # leaves out (coverage fell to 30 % at budget 20n): the plain regression's standard
        # errors, which the adjustment improves on, stand in for them.
        errors = partial(design.standard_errors, values)
    out += ((v1 - v0) - out.sum(axis=1))[:, None] / n
    return out, errors, choice


def scaled_errors(design: _core.Design, values: np.ndarray, held_out_error: float) -> np.ndarray:
    """The plain regression's standard errors of ``values`` on ``design``, times the root of a
    surrogate's relative ``held_out_error``, at most 1: a surrogate fitted on four fifths of few
    pairs can score worse than nothing where the one fitted on all of them does not hurt (at 5n
    the plain regression's standard errors alone covered 96 %)."""
    return min(1.0, held_out_error**0.5) * design.standard_errors(values)


def cross_fitted_errors(
    design: _core.Design,
    masks: np.ndarray,
    values: np.ndarray,
    folds: np.ndarray,
    weights: np.ndarray,
) -> np.ndarray:
    """Standard errors ``[R, n]`` of Tree MSR on ``values`` from the residuals of its cross-fit
    on ``folds`` (each pair's residual from the proxy fitted without it): the Horvitz-Thompson
    variance of the estimate whose residuals are honest, standing in for the one fitted on
    every sample."""
    fits = in_threads(
        [partial(_tree_msr, masks, values[:, j], folds, weights) for j in range(values.shape[1])]
    )
    residuals = np.stack([residual for _, residual in fits], axis=1)
    return design.horvitz_thompson_errors(np.ascontiguousarray(residuals))


def held_out_scaled_errors(
    design: _core.Design,
    values: np.ndarray,
    scores: list[Callable[[], np.ndarray]],
    candidate: int,
) -> np.ndarray:
    """:func:`scaled_errors` by the root of candidate ``candidate``'s (an index into
    :data:`CANDIDATES`) held-out error, pooled over the columns that ``scores`` (calls of
    :func:`~ferroshap.sampling.auto.held_out_errors`) score."""
    pooled = np.mean(in_threads(scores), axis=0)
    return scaled_errors(design, values, float(pooled[candidate]))


def proportional_columns(
    targets: np.ndarray,
    sizes: np.ndarray | None = None,
    tolerance: float = PROPORTIONAL_TOLERANCE,
) -> tuple[np.ndarray, np.ndarray]:
    """For each column ``j`` of ``targets`` (``[m, R]``): the column whose proxy it takes and the
    factor it is scaled by. A column that is ``c`` times the previous one (to ``tolerance``
    relative to ``sizes[j]``, by default the column's own norm; :func:`adjust` passes the norm
    of the game's values in that column) takes that column's source with the factor multiplied
    by ``c``; any other column is its own source, with factor 1.

    Only neighbours are compared, so the check costs one pass over the targets: the outputs of
    one explained row are adjacent columns, and the odd residuals of a binary classifier's two
    probabilities (which sum to one) are exact negatives of each other.

    Examples
    --------
    >>> t = np.array([[1.0, -1.0, 2.0, 0.0], [2.0, -2.0, 1.0, 0.0]])
    >>> sources, scales = proportional_columns(t)
    >>> sources.tolist(), scales.tolist()
    ([0, 0, 2, 2], [1.0, -1.0, 1.0, 0.0])
    """
    columns = targets.shape[1]
    sizes = np.linalg.norm(targets, axis=0) if sizes is None else sizes
    sources, scales = np.arange(columns), np.ones(columns)
    for j in range(1, columns):
        previous, current = targets[:, j - 1], targets[:, j]
        norm = float(previous @ previous)
        if norm == 0.0:
            continue
        factor = float(previous @ current) / norm
        gap = float(np.linalg.norm(current - factor * previous))
        if gap <= tolerance * float(sizes[j]):
            sources[j], scales[j] = sources[j - 1], factor * scales[j - 1]
    return sources, scales


def _tree_msr(
    masks: np.ndarray, v: np.ndarray, folds: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Tree MSR of one column: mean over folds of ``phi(f_k)`` plus the MSR estimate of the
    residual (with cross-fitting, each residual from the proxy that did not see its pair); and
    that residual ``[m]`` (0 on the empty and grand coalitions), relative to the empty one."""
    n = masks.shape[1]
    k = int(folds.max()) + 1
    phi = np.zeros(n)
    residual = np.zeros(len(v))
    for fold in range(k):
        held_out = folds == fold
        # The empty and grand coalitions (fold -1) are in every fit.
        train = ~held_out if k > 1 else np.ones(len(v), dtype=bool)
        booster = fit_adjustment_proxy(masks[train], v[train])
        phi += proxy_spectrum(booster, n).shapley_values() / k
        corners = [EMPTY_ROW, FULL_ROW]
        empty, full = v[corners] - predict_proxy(booster, masks[corners])
        phi += (full - empty) / (n * k)
        residual[held_out] = v[held_out] - predict_proxy(booster, masks[held_out]) - empty
    return phi + residual[FIRST_SAMPLED_ROW:] @ weights, residual


def _msr_weights(masks: np.ndarray) -> np.ndarray:
    """``c_i(S) / pi(S)`` of the sampled coalitions (rows
    :data:`~ferroshap._core.FIRST_SAMPLED_ROW` on): ``1/(s m_s)`` if ``i in S``,
    ``-1/((n - s) m_s)`` otherwise, ``m_s`` the number of sampled coalitions of size ``s``."""
    sampled = masks[FIRST_SAMPLED_ROW:]
    n = masks.shape[1]
    sizes = sampled.sum(axis=1)
    counts = np.bincount(sizes, minlength=n + 1)[sizes].astype(np.float64)
    inside = 1.0 / (sizes * counts)
    outside = -1.0 / ((n - sizes) * counts)
    return np.where(sampled, inside[:, None], outside[:, None])


def _folds(complement: np.ndarray, k: int, seed: int, stream: int) -> np.ndarray:
    """Fold ``0..k-1`` of each coalition; a coalition and its complement share one. The empty
    and grand coalitions get fold ``-1`` (used by every fit, never held out)."""
    rows = np.arange(len(complement))
    pair = np.where(complement >= 0, np.minimum(rows, complement), rows)
    ids, pair_index = np.unique(pair[FIRST_SAMPLED_ROW:], return_inverse=True)
    order = np.random.default_rng([seed, stream]).permutation(len(ids))
    folds = np.full(len(complement), -1)
    folds[FIRST_SAMPLED_ROW:] = (order % k)[pair_index]
    return folds


def complements(masks: np.ndarray) -> np.ndarray:
    """Row of each coalition's complement in ``masks``, ``-1`` where it was not sampled."""
    rows = {key.tobytes(): j for j, key in enumerate(np.packbits(masks, axis=1))}
    return np.array([rows.get(key.tobytes(), -1) for key in np.packbits(~masks, axis=1)])
