"""Odd-sparse refit: the odd part of a game, least-squares fitted on a screened Fourier support.

In the ±1 Fourier basis ``chi_K(S) = (-1)**|K & S|`` a game's Shapley values depend only on its
coefficients of odd order ``|K|`` (each odd ``K`` gives ``-2 F(K) / |K|`` to every ``i`` in ``K``),
and the odd part ``(v(S) - v(N minus S)) / 2`` of a paired design contains exactly those terms.
A LightGBM proxy fitted to that odd part (:mod:`ferroshap.sampling.proxy_adjusted`) proposes a
support: its largest odd coefficients, one per :data:`SAMPLES_PER_TERM` sampled coalitions, plus
every singleton. Their coefficients are then refitted by ordinary least squares on the samples,
which removes the proxy's shrinkage: a game whose odd part lies in the support is fitted exactly.

The idea is OddSHAP's (Fumagalli et al., 2026); this is our own formulation on top of the
proxy-leverage adjustment, which keeps it unbiased in the limit and efficient.
"""

from __future__ import annotations

import numpy as np

from ferroshap import _core

__all__ = ["SAMPLES_PER_TERM", "WELL_CONDITIONED", "fourier_basis", "least_squares", "refit_odd"]

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
