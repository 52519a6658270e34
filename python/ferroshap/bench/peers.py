"""Other libraries' Shapley estimators under ferroshap's benchmark interface and budget convention.

Every peer is ``explain(model, background, X, budget, seed) -> phi [rows, n]`` on the
interventional game ``v_x(S) = mean_b f(x_S, b_notS)``, with ``budget`` distinct coalitions per
row, ∅ and N included, each costing ``len(background)`` model rows:

- shap's ``KernelExplainer`` (``l1_reg=False``) gets ``nsamples = budget - 2`` (shap does not count
  ∅ and N); its ``PermutationExplainer`` gets ``max_evals = budget``.
- shapiq's approximators get ``budget`` as is, one approximator per explained row with
  ``random_state=seed`` (so every row gets the same design, as ferroshap's one design per call),
  their defaults otherwise, ``pairing_trick=True`` where they offer it, and ``index="SV"``
  (``max_order=1``) where they take an index.

A peer whose library is missing, or older than the version that has it, is *unavailable*:
:func:`unavailable_reason` says why, so benchmark tables can skip it with that reason.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import numpy as np

from ferroshap.query.games import TabularGame

__all__ = ["PEERS", "Peer", "unavailable_reason"]

Model = Callable[[np.ndarray], np.ndarray]
Estimator = Callable[[Model, np.ndarray, np.ndarray, int, int], np.ndarray]


@dataclass(frozen=True)
class Peer:
    """One estimator of another library.

    Attributes
    ----------
    library
        The distribution that provides it (``"shap"`` or ``"shapiq"``).
    min_version
        The oldest version of ``library`` that has it, as a tuple.
    explain
        The estimator, ``explain(model, background, X, budget, seed) -> [rows, n]``.
    fast
        Seconds per row or less at the budgets of ``ferroshap bench --quick`` (kept by ``--quick``).
    """

    library: str
    min_version: tuple[int, ...]
    explain: Estimator
    fast: bool = False


def _shap_kernel(model: Model, background: np.ndarray, X: np.ndarray, budget: int, seed: int):
    import shap

    np.random.seed(seed)  # noqa: NPY002 -- shap's KernelExplainer samples from the global state
    explainer = shap.KernelExplainer(model, background)
    phi = explainer.shap_values(X, nsamples=budget - 2, l1_reg=False, silent=True)
    return np.asarray(phi, dtype=float).reshape(len(X), -1)


def _shap_permutation(
    model: Model, background: np.ndarray, X: np.ndarray, budget: int, seed: int
) -> np.ndarray:
    import shap

    masker = shap.maskers.Independent(background, max_samples=len(background))
    explainer = shap.PermutationExplainer(model, masker, seed=seed)
    return np.asarray(explainer(X, max_evals=budget, silent=True).values, dtype=float)


def _shapiq(make: Callable[[Any, int, int], Any]) -> Estimator:
    """A per-row shapiq estimator from ``make(approximator_module, n, seed)``."""

    def explain(model: Model, background: np.ndarray, X: np.ndarray, budget: int, seed: int):
        import shapiq.approximator as approximators

        rows = []
        for x in X:
            game = TabularGame(model, background, x[None])
            approximator = make(approximators, X.shape[1], seed)
            values = approximator.approximate(budget, lambda masks, g=game: g.evaluate(masks)[:, 0])
            rows.append(values.get_n_order_values(1))
        return np.stack(rows)

    return explain


PEERS: dict[str, Peer] = {
    "shap-kernel": Peer("shap", (0, 54), _shap_kernel, fast=True),
    "shap-permutation": Peer("shap", (0, 54), _shap_permutation, fast=True),
    "shapiq-kernel": Peer(
        "shapiq",
        (1, 8),
        _shapiq(lambda a, n, seed: a.KernelSHAP(n, pairing_trick=True, random_state=seed)),
        fast=True,
    ),
    "shapiq-leverage": Peer(
        "shapiq",
        (1, 8),
        _shapiq(lambda a, n, seed: a.LeverageSHAP(n, pairing_trick=True, random_state=seed)),
        fast=True,
    ),
    "shapiq-unbiased": Peer(
        "shapiq",
        (1, 8),
        _shapiq(lambda a, n, seed: a.UnbiasedKernelSHAP(n, pairing_trick=True, random_state=seed)),
        fast=True,
    ),
    "shapiq-oddshap": Peer(
        "shapiq", (1, 8), _shapiq(lambda a, n, seed: a.OddSHAP(n, random_state=seed))
    ),
    "shapiq-polyshap": Peer(
        "shapiq",
        (1, 8),
        _shapiq(lambda a, n, seed: a.PolySHAP(n, pairing_trick=True, random_state=seed)),
    ),
    "shapiq-proxyshap": Peer(
        "shapiq",
        (1, 8),
        _shapiq(
            lambda a, n, seed: a.ProxySHAP(
                n, max_order=1, index="SV", pairing_trick=True, random_state=seed
            )
        ),
    ),
    "shapiq-msr": Peer(
        "shapiq",
        (1, 8),
        _shapiq(lambda a, n, seed: a.RegressionMSR(n, "SV", pairing_trick=True, random_state=seed)),
    ),
    "shapiq-proxyspex": Peer(
        "shapiq",
        (1, 8),
        _shapiq(lambda a, n, seed: a.ProxySPEX(n=n, index="SV", max_order=1, random_state=seed)),
    ),
    "shapiq-spex": Peer(
        "shapiq",
        (1, 8),
        _shapiq(lambda a, n, seed: a.SPEX(n=n, index="SV", max_order=1, random_state=seed)),
    ),
}
"""Every peer by its ``ferroshap bench`` name."""

#: What a peer needs beyond its library (shapiq's optional extras), as (module, pip requirement).
_EXTRA_MODULES = {
    "shapiq-proxyshap": ("xgboost", "shapiq[proxy]"),
    "shapiq-msr": ("xgboost", "shapiq[proxy]"),
    "shapiq-spex": ("sparse_transform", "shapiq[sparse]"),
}


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for part in text.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def unavailable_reason(name: str) -> str | None:
    """Why the peer ``name`` cannot run here: its library missing or too old, or an optional
    extra of it missing; ``None`` when it can run."""
    peer = PEERS[name]
    wanted = ">=" + ".".join(map(str, peer.min_version))
    if importlib.util.find_spec(peer.library) is None:
        return f"needs {peer.library}{wanted} (not installed; it needs Python >= 3.12)"
    installed = metadata.version(peer.library)
    if _version(installed) < peer.min_version:
        return f"needs {peer.library}{wanted} (installed: {installed}; it needs Python >= 3.12)"
    if name in _EXTRA_MODULES:
        module, requirement = _EXTRA_MODULES[name]
        if importlib.util.find_spec(module) is None:
            return f"needs {requirement} ({module} not installed)"
    return None
