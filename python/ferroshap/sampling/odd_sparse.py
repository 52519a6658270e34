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

__all__ = ["SAMPLES_PER_TERM", "refit_odd"]

SAMPLES_PER_TERM = 10
"""Sampled coalitions per fitted Fourier term (OddSHAP's ``eta``)."""


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
    keys = spectrum.keys()
    orders = np.fromiter(map(len, keys), dtype=np.int64, count=len(keys))
    odd = np.flatnonzero(orders % 2 == 1)
    magnitude = np.abs(spectrum.coefficients()[odd])
    largest = odd[np.argsort(-magnitude, kind="stable")[: len(masks) // SAMPLES_PER_TERM]]
    support = {keys[t] for t in largest} | {(i,) for i in range(n)}
    ordered = sorted(support, key=lambda key: (len(key), key))
    equations = masks if rows is None else masks[rows]
    basis = np.empty((len(equations), len(ordered)))
    for column, key in enumerate(ordered):
        parity = np.bitwise_xor.reduce(equations[:, list(key)], axis=1)
        basis[:, column] = 1.0 - 2.0 * parity
    values = target if rows is None else target[rows]
    coefficients = np.linalg.lstsq(basis, values, rcond=None)[0]
    return _core.SparseFunction("Fourier", n, ordered, np.ascontiguousarray(coefficients))
