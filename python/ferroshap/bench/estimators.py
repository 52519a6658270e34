"""Estimators under one interface: ``explain(model, background, X, budget, seed) -> [rows, n]``.

ferroshap's methods (the proxy-adjusted ones and ``proxyspex`` — the Shapley values of a
ProxySPEX surrogate, one fit per row — when LightGBM is installed), and, when installed, shap's
``KernelExplainer`` (``l1_reg=False``) and ``PermutationExplainer`` and shapiq's ``KernelSHAP``
(paired), ``UnbiasedKernelSHAP`` and ``ProxySPEX`` (``index="SV"``; it grid-searches its
LightGBM proxy, seconds per row).

Budget accounting (distinct coalitions, ∅ and N included, each costing ``len(background)`` model
rows): ferroshap and shapiq use it as is; shap's ``KernelExplainer`` gets ``nsamples =
budget - 2`` (shap excludes ∅ and N); shap's ``PermutationExplainer`` gets ``max_evals =
budget`` (its masked evaluations, ∅ and N included). Both ProxySPEX versions count every masked
evaluation, their validation masks included.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np

import ferroshap as fs
from ferroshap.games import TabularGame

__all__ = ["Estimator", "available_estimators", "make_estimator"]

Model = Callable[[np.ndarray], np.ndarray]
Estimator = Callable[[Model, np.ndarray, np.ndarray, int, int], np.ndarray]


def _ferroshap(method: str) -> Estimator:
    def explain(model: Model, background: np.ndarray, X: np.ndarray, budget: int, seed: int):
        return fs.Explainer(model, background, method=method, budget=budget, seed=seed)(X).values

    return explain


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


def _shapiq(name: str) -> Estimator:
    def explain(model: Model, background: np.ndarray, X: np.ndarray, budget: int, seed: int):
        from shapiq.approximator import KernelSHAP, UnbiasedKernelSHAP

        n = X.shape[1]
        rows = []
        for x in X:
            game = TabularGame(model, background, x[None])
            approximator: Any = (
                KernelSHAP(n, pairing_trick=True, random_state=seed)
                if name == "shapiq-kernel"
                else UnbiasedKernelSHAP(n, random_state=seed)
            )
            values = approximator.approximate(budget, lambda masks, g=game: g.evaluate(masks)[:, 0])
            rows.append(values.get_n_order_values(1))
        return np.stack(rows)

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


def _shapiq_proxyspex(
    model: Model, background: np.ndarray, X: np.ndarray, budget: int, seed: int
) -> np.ndarray:
    """shapiq's ProxySPEX per row with ``index="SV"``, ``max_order=1``."""
    from shapiq.approximator import ProxySPEX

    rows = []
    for x in X:
        game = TabularGame(model, background, x[None])
        approximator = ProxySPEX(n=X.shape[1], index="SV", max_order=1, random_state=seed)
        values = approximator.approximate(budget, lambda masks, g=game: g.evaluate(masks)[:, 0])
        rows.append(values.get_n_order_values(1))
    return np.stack(rows)


_BASELINE_FACTORIES: dict[str, tuple[str, Callable[[], Estimator]]] = {
    "shap-kernel": ("shap", lambda: _shap_kernel),
    "shap-permutation": ("shap", lambda: _shap_permutation),
    "shapiq-kernel": ("shapiq", lambda: _shapiq("shapiq-kernel")),
    "shapiq-unbiased": ("shapiq", lambda: _shapiq("shapiq-unbiased")),
    "shapiq-proxyspex": ("shapiq", lambda: _shapiq_proxyspex),
}


def available_estimators(include_baselines: bool = True) -> list[str]:
    """ferroshap's sampling methods (proxy-adjusted ones if LightGBM is installed), then the
    baselines whose library is installed."""
    names = [m for m in fs.METHODS if m != "exact"]
    if importlib.util.find_spec("lightgbm") is not None:
        names += [*fs.PROXY_METHODS, "proxyspex"]
    if include_baselines:
        names += [
            name
            for name, (module, _) in _BASELINE_FACTORIES.items()
            if importlib.util.find_spec(module) is not None
        ]
    return names


def make_estimator(name: str) -> Estimator:
    """The estimator called ``name`` (a ferroshap method or one of the baselines)."""
    if name in fs.METHODS or name in fs.PROXY_METHODS:
        return _ferroshap(name)
    if name == "proxyspex":
        return _proxyspex
    if name in _BASELINE_FACTORIES:
        return _BASELINE_FACTORIES[name][1]()
    valid = ", ".join([*fs.METHODS, *fs.PROXY_METHODS, "proxyspex", *_BASELINE_FACTORIES])
    raise fs.InvalidArgumentError(f"methods: unknown estimator {name!r}; expected some of {valid}")


def library_of(name: str) -> str:
    """``"ferroshap"``, ``"shap"`` or ``"shapiq"``."""
    return _BASELINE_FACTORIES[name][0] if name in _BASELINE_FACTORIES else "ferroshap"
