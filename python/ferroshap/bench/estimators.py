"""Estimators under one interface: ``explain(model, background, X, budget, seed) -> [rows, n]``.

ferroshap's methods (with ``proxyspex``: the Shapley values of a ProxySPEX surrogate, one fit per
row), the recipes of ``method="auto"`` that no method name runs (run only when named), and the
peers of :mod:`ferroshap.bench.peers` (shap's and shapiq's estimators), all with the same budget
of distinct coalitions per row, ∅ and N included, each coalition costing ``len(background)``
model rows.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import numpy as np

import ferroshap as fs
from ferroshap import _core
from ferroshap.bench.peers import PEERS, Estimator, unavailable_reason
from ferroshap.query.games import TabularGame
from ferroshap.sampling import auto
from ferroshap.sampling.auto import proxy_minimum
from ferroshap.sampling.proxy_adjusted import adjust

__all__ = [
    "Estimator",
    "available_estimators",
    "check_estimators",
    "ferroshap_estimator",
    "library_of",
    "make_estimator",
    "producer_version",
    "recipes",
]

Model = Callable[[np.ndarray], np.ndarray]


def ferroshap_estimator(method: str, cross_fit: int | None = None) -> Estimator:
    """ferroshap's :class:`~ferroshap.Explainer` with ``method`` (and ``cross_fit``): one design
    for all rows."""

    def explain(model: Model, background: np.ndarray, X: np.ndarray, budget: int, seed: int):
        explainer = fs.Explainer(
            model, background, method=method, budget=budget, seed=seed, cross_fit=cross_fit
        )
        return explainer(X).values

    return explain


def _recipe(name: str) -> Estimator:
    """One recipe of ``method="auto"`` run as it is, whatever ``auto`` would choose: its design
    planned for the budget, the interventional game queried on it for every row at once, the
    estimate, then the recipe's proxy adjustment (from the proxy's minimum budget on)."""
    recipe = auto.RECIPES[name]

    def explain(model: Model, background: np.ndarray, X: np.ndarray, budget: int, seed: int):
        n = X.shape[1]
        design = _core.plan(recipe.planned, n, budget, seed)
        game = TabularGame(model, background, X)
        values = np.ascontiguousarray(game.evaluate(design.masks()), dtype=np.float64)
        phi = design.estimate(values)
        if recipe.proxy is not None and budget >= proxy_minimum(recipe.proxy, n):
            phi = adjust(recipe.proxy, design, values, phi)
        return phi

    return explain


def recipes() -> list[str]:
    """The recipes of ``method="auto"`` that no method name runs (``odd-sparse``, ...), as
    estimators; never run by default, only when named."""
    return [r for r in auto.RECIPES if r not in fs.METHODS and r not in fs.PROXY_METHODS]


def _proxyspex(model: Model, background: np.ndarray, X: np.ndarray, budget: int, seed: int):
    """ferroshap's ProxySPEX per row (Baseline masker): Shapley values of its surrogate."""
    masker = fs.maskers.Baseline(background)
    return np.stack(
        [
            fs.ProxySPEX(model, masker=masker, budget=budget, seed=seed)
            .explain(x)
            .shapley_values()
            .values[0]
            for x in X
        ]
    )


def ferroshap_methods() -> list[str]:
    """ferroshap's estimators: its sampling and proxy-adjusted methods and ``proxyspex``."""
    return [*(m for m in fs.METHODS if m != "exact"), *fs.PROXY_METHODS, "proxyspex"]


def all_estimators() -> list[str]:
    """Every estimator name, installed or not: ferroshap's, ``exact``, ``auto``'s other
    :func:`recipes`, then the peers."""
    return [*ferroshap_methods(), "exact", *recipes(), *PEERS]


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
    """The estimator called ``name``: a ferroshap method, ``proxyspex``, a recipe or a peer.

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
    if name in recipes():
        return _recipe(name)
    return ferroshap_estimator(name)


def library_of(name: str) -> str:
    """``"ferroshap"``, ``"shap"`` or ``"shapiq"``."""
    return PEERS[name].library if name in PEERS else "ferroshap"


def producer_version(name: str) -> str:
    """What produced a run of estimator ``name``, for the suite's cache of runs: a peer's library
    and its version (``"shapiq 1.8.0"``); for ferroshap its version and a digest of the installed
    package's files (Python sources and compiled core), so that a changed estimator is run again
    while an unchanged peer is not."""
    library = library_of(name)
    if library != "ferroshap":
        try:
            return f"{library} {metadata.version(library)}"
        except metadata.PackageNotFoundError:
            return f"{library} (not installed)"
    return f"ferroshap {fs.__version__} {_package_digest()}"


@functools.cache
def _package_digest() -> str:
    """SHA-256 (first 12 hex digits) of the ferroshap package's ``.py`` files and compiled
    modules, in path order."""
    root = Path(fs.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".so", ".pyd") and "__pycache__" not in path.parts:
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]
