"""Goodness of fit that the library itself reports: R² of a surrogate against its game.

The ground floor of the package (it imports nothing of ferroshap), so the result objects, the
ProxySPEX fit, the Fourier sketch and the benchmark metrics (:mod:`ferroshap.bench.metrics`
re-exports it) share one definition.
"""

from __future__ import annotations

import numpy as np

__all__ = ["r_squared"]


def r_squared(y: np.ndarray, fitted: np.ndarray) -> float:
    """``1 - ‖y - ŷ‖² / ‖y - ȳ‖²``: 1.0 for a constant ``y`` fitted exactly, ``-inf`` for a
    constant ``y`` fitted with any error.

    Examples
    --------
    >>> r_squared(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 4.0]))
    0.5
    """
    total = float(np.sum((y - y.mean()) ** 2))
    residual = float(np.sum((y - fitted) ** 2))
    if total == 0.0:
        return 1.0 if residual == 0.0 else float("-inf")
    return 1.0 - residual / total
