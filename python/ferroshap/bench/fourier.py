"""Exactly sparse q-ary Fourier functions: sequence models with known spectra (benchmark games
and test oracles)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["SparseQaryFunction"]


class SparseQaryFunction:
    """A real function on ``Z_q^n`` with an exactly sparse, Hermitian Fourier spectrum.

    ``f(x) = mean + Re Σ_k F[k] ω^{<x,k>}`` with ``ω = exp(2πi/q)``, over ``2 * terms`` keys
    (conjugate pairs ``k``, ``-k``) of degree ``1..max_degree`` and magnitudes in ``[0.5, 1.5]``.
    Called on integer codes ``[rows, n]`` (letter indices), it returns ``[rows]``.

    Examples
    --------
    >>> f = SparseQaryFunction(q=4, n=6, terms=5, max_degree=2, seed=0)
    >>> f(np.zeros((2, 6), dtype=np.uint8)).shape, len(f.spectrum)
    ((2,), 10)
    """

    def __init__(self, q: int, n: int, terms: int, max_degree: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        spectrum: dict[tuple[int, ...], complex] = {}
        while len(spectrum) < 2 * terms:
            key = np.zeros(n, dtype=np.int64)
            support = rng.choice(n, size=rng.integers(1, max_degree + 1), replace=False)
            key[support] = rng.integers(1, q, size=len(support))
            k, minus = tuple(int(d) for d in key), tuple(int(d) for d in (-key) % q)
            if k in spectrum:
                continue
            value = rng.uniform(0.5, 1.5) * np.exp(1j * rng.uniform(0, 2 * np.pi))
            spectrum[k] = value.real if k == minus else value
            spectrum[minus] = np.conj(spectrum[k])
        self.q, self.n = q, n
        self.mean = float(rng.uniform(-1, 1))
        self.spectrum = spectrum
        self.keys = np.array(list(spectrum), dtype=np.int64)
        self.values = np.array(list(spectrum.values()))

    def __call__(self, codes: Any) -> np.ndarray:
        """``f`` at each row of ``codes``."""
        phases = (np.asarray(codes, dtype=np.int64) @ self.keys.T) % self.q
        return self.mean + (np.exp(2j * np.pi * phases / self.q) @ self.values).real
