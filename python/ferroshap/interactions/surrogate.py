"""The final ProxySPEX surrogate: which of ∅ and N it is fitted on, the selected terms of each
basis refitted on every mask, and their blend."""

from __future__ import annotations

from typing import Any

import numpy as np

from ferroshap import _core
from ferroshap._core import FIRST_SAMPLED_ROW
from ferroshap.query.backend import in_threads
from ferroshap.scores import r_squared

__all__ = [
    "BLEND_WEIGHTS",
    "EXTREME_SD",
    "SELECTION_BASES",
    "blend",
    "blend_name",
    "blend_weight",
    "fitted_extremes",
    "refit_blend",
]

EXTREME_SD = 5.0
"""∅ or N is queried but left out of the proxy and the refits when its value lies more than this
many standard deviations from the mean of the other planned values; docs/proxyspex.md, step 1
(``diagnostics["extremes_fitted"]`` and ``diagnostics["efficiency_gap"]`` report it). The final
refit is held to both values unless ``efficient=False``."""


def fitted_extremes(values: np.ndarray) -> np.ndarray:
    """``bool[2]``: whether the proxy and the refits see each extreme row (∅, N) of the
    planned ``values``: not when it is more than :data:`EXTREME_SD` standard deviations off the
    mean of the others."""
    bulk = values[FIRST_SAMPLED_ROW:]
    return np.abs(values[:FIRST_SAMPLED_ROW] - bulk.mean()) <= EXTREME_SD * bulk.std()


SELECTION_BASES = ("Moebius", "Fourier")
"""Bases of the two support selections, blended by :data:`BLEND_WEIGHTS`."""

BLEND_WEIGHTS = (1.0, 0.0, 0.75, 0.25, 0.5)
"""Weights of the Möbius fit in the surrogate ``w * Moebius + (1 - w) * Fourier``; the one whose
training-only fits score the best validation R² is kept (the first of equals, so a single basis
wins ties); docs/proxyspex.md, step 5."""


def refit_blend(
    spectrum: Any,
    selections: list[tuple[int, float, np.ndarray]],
    weight: float,
    masks: np.ndarray,
    values: np.ndarray,
    extremes: tuple[float, float] | None,
) -> Any:
    """The sparse surrogate: in each basis of :data:`SELECTION_BASES`, the selected number of
    ``spectrum``'s largest terms refitted by least squares on every mask (subject to the game's
    ``extremes = (v(∅), v(N))`` when given), blended with the Möbius fit's ``weight`` (a
    mixture of fits that meet both meets both)."""
    weights = {SELECTION_BASES[0]: weight, SELECTION_BASES[1]: 1.0 - weight}

    def refit(basis: str, selection: tuple[int, float, np.ndarray]) -> Any:
        if not weights[basis]:
            return None
        return _core.refit_top(spectrum, basis, selection[0], masks, values, extremes)

    calls = [
        lambda basis=basis, selection=selection: refit(basis, selection)
        for basis, selection in zip(SELECTION_BASES, selections, strict=True)
    ]
    return blend(dict(zip(SELECTION_BASES, in_threads(calls), strict=True)), weights)


def blend_weight(fitted: list[np.ndarray], validation: np.ndarray) -> tuple[float, float]:
    """The weight of :data:`BLEND_WEIGHTS` on the Möbius fit whose mixture of the training-only
    validation predictions ``fitted`` (one per basis of :data:`SELECTION_BASES`) scores the best
    R² (the first of equals, so a single basis wins ties); returns ``(weight, R²)``."""
    moebius, fourier = fitted
    scores = [r_squared(validation, w * moebius + (1.0 - w) * fourier) for w in BLEND_WEIGHTS]
    best = max(range(len(scores)), key=lambda i: (scores[i], -i))
    return BLEND_WEIGHTS[best], scores[best]


def blend(fits: dict[str, Any], weights: dict[str, float]) -> Any:
    """``Σ weights[basis] · fits[basis]``: a basis of weight 1 is returned as it is, a mixture
    is summed in the Fourier basis (a basis of weight 0 may have no fit)."""
    kept = [(fits[basis], w) for basis, w in weights.items() if w]
    if len(kept) == 1 and kept[0][1] == 1.0:
        return kept[0][0]
    parts = [(fit.to_fourier(), w) for fit, w in kept]
    keys = [key for part, _ in parts for key in part.keys()]
    coefficients = np.concatenate([w * part.coefficients() for part, w in parts])
    return _core.SparseFunction("Fourier", parts[0][0].n_players, keys, coefficients)


def blend_name(weight: float) -> str:
    """The ``basis`` diagnostic: the single basis, or ``"blend"`` for a mixture of both."""
    if weight == 1.0:
        return SELECTION_BASES[0]
    return SELECTION_BASES[1] if weight == 0.0 else "blend"
