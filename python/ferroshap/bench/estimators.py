"""Estimators under one interface: ``explain(model, background, X, budget, seed) -> [rows, n]``.

ferroshap's methods (with ``proxyspex``: the Shapley values of a ProxySPEX surrogate, one fit per
row), and the peers of :mod:`ferroshap.bench.peers` (shap's and shapiq's estimators), all with the
same budget of distinct coalitions per row, ∅ and N included, each coalition costing
``len(background)`` model rows.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import ferroshap as fs
from ferroshap.bench.peers import PEERS, Estimator, unavailable_reason

__all__ = [
    "Estimator",
    "available_estimators",
    "check_estimators",
    "library_of",
    "make_estimator",
]

Model = Callable[[np.ndarray], np.ndarray]


def _ferroshap(method: str) -> Estimator:
    def explain(model: Model, background: np.ndarray, X: np.ndarray, budget: int, seed: int):
        return fs.Explainer(model, background, method=method, budget=budget, seed=seed)(X).values

    return explain


def _proxyspex(model: Model, background: np.ndarray, X: np.ndarray, budget: int, seed: int):
    """ferroshap's ProxySPEX per row (Baseline masker): Shapley values of its surrogate."""
    masker = fs.maskers.Baseline(background)
    return np.stack(
        [
            fs.ProxySPEX(model, masker=masker, budget=budget, seed=seed).explain(x).shapley_values()
            for x in X
        ]
    )


def ferroshap_methods() -> list[str]:
    """ferroshap's estimators: its sampling and proxy-adjusted methods and ``proxyspex``."""
    return [*(m for m in fs.METHODS if m != "exact"), *fs.PROXY_METHODS, "proxyspex"]


def all_estimators() -> list[str]:
    """Every estimator name, installed or not: ferroshap's, ``exact``, then the peers."""
    return [*ferroshap_methods(), "exact", *PEERS]


def available_estimators(include_baselines: bool = True, fast_only: bool = False) -> list[str]:
    """ferroshap's methods, then (``include_baselines``) the peers that can run here; with
    ``fast_only``, only the peers marked fast (what ``--quick`` keeps)."""
    names = ferroshap_methods()
    if include_baselines:
        names += [
            name
            for name, peer in PEERS.items()
            if unavailable_reason(name) is None and (peer.fast or not fast_only)
        ]
    return names


def check_estimators(names: list[str]) -> None:
    """Raise ``InvalidArgumentError`` listing the valid names if any of ``names`` is unknown."""
    unknown = [name for name in names if name not in all_estimators()]
    if unknown:
        raise fs.InvalidArgumentError(
            f"methods: unknown estimator(s) {', '.join(map(repr, unknown))}; expected some of "
            f"{', '.join(all_estimators())}"
        )


def make_estimator(name: str) -> Estimator:
    """The estimator called ``name``: a ferroshap method, ``proxyspex`` or a peer.

    A peer that cannot run here raises ``InvalidArgumentError`` saying why.
    """
    check_estimators([name])
    if name == "proxyspex":
        return _proxyspex
    if name in PEERS:
        reason = unavailable_reason(name)
        if reason is not None:
            raise fs.InvalidArgumentError(f"methods: {name!r} cannot run here: {reason}")
        return PEERS[name].explain
    return _ferroshap(name)


def library_of(name: str) -> str:
    """``"ferroshap"``, ``"shap"`` or ``"shapiq"``."""
    return PEERS[name].library if name in PEERS else "ferroshap"
