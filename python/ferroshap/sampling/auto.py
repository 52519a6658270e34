"""``method="auto"``: the design chosen by the problem's shape, the estimator by the game.

The rule (:func:`choose`) sees the number of players ``n``, the budget and whether pairing is
on, never timing: it picks a :class:`Recipe`, a design the compiled core plans, optionally
followed by a proxy adjustment (:mod:`ferroshap.sampling.proxy_adjusted`). From the proxy's
minimum budget on, that adjustment is :data:`ODD_CHOICE`: the candidate estimators are scored on
held-out coalition pairs of the design itself and the best one is kept, so the choice follows
the game's own evidence and is reproducible bit for bit for a seed. See ``docs/auto.md``.

The held-out choice: one fold of :data:`HOLDOUT_FOLDS` of the design's coalition pairs is held
out, a proxy of the odd part is fitted on the rest for at most :data:`HOLDOUT_COLUMNS` explained
columns, and each of :data:`CANDIDATES` is scored by its error on the held-out pairs
(:func:`held_out_errors`); the winner then runs on every pair
(:func:`ferroshap.sampling.proxy_adjusted.adjust_with_errors`). At small budgets (a few times
``n``, few players) ``auto`` runs :data:`SMALL_CHOICE` instead: the weighted mean of
``"odd-msr"`` and :data:`TREE_PROXY` that predicts the odd part of held-out pairs best over all
:data:`HOLDOUT_FOLDS` folds (:mod:`ferroshap.sampling.small_choice`). This
module holds the rule, the recipes, the candidates' names, the odd residual they are fitted to
(:func:`odd_residual`), their surrogates from one column's proxy (:func:`candidate_fit`), the
split and the scores.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from ferroshap import _core
from ferroshap.interactions.proxy import (
    fit_adjustment_proxy,
    predict_proxy,
    proxy_spectrum,
    refit_odd,
)

__all__ = [
    "AUTO",
    "BORDER_ONLY_FACTOR",
    "CANDIDATES",
    "HOLDOUT_COLUMNS",
    "HOLDOUT_FOLDS",
    "MIN_PAIRS",
    "ODD_BLEND",
    "ODD_CHOICE",
    "ODD_MSR",
    "ODD_SPARSE",
    "PROXY_METHODS",
    "RECIPES",
    "SMALL_BLEND",
    "SMALL_CANDIDATES",
    "SMALL_CHOICE",
    "SMALL_CHOICE_MAX_PLAYERS",
    "SMALL_CHOICE_MIN_PAIRS",
    "TREE_PROXY",
    "Choice",
    "HoldOut",
    "Recipe",
    "border_budget",
    "candidate_fit",
    "choose",
    "fit_column_proxy",
    "held_out_errors",
    "minimum_budget",
    "odd_residual",
    "proxy_minimum",
    "resolve",
    "scored_columns",
    "small_choice_minimum",
]

AUTO = "auto"
"""The method name that asks for the rule's choice."""

ODD_SPARSE = "odd-sparse"
"""The adjustment of :func:`~ferroshap.interactions.proxy.refit_odd` (used by
``method="auto"``): like ``"proxy-leverage"``, with the proxy replaced by a least-squares refit
of the odd part on the proxy's largest odd Fourier terms."""

ODD_BLEND = "odd-blend"
"""The mean of the ``"proxy-leverage"`` and :data:`ODD_SPARSE` estimates of one proxy (used by
``method="auto"``): where one of them overfits the samples, the other's error rarely agrees."""

ODD_CHOICE = "odd-choice"
"""``method="auto"``'s choice among :data:`CANDIDATES` by their held-out error on the design's
own coalitions (:func:`held_out_errors`); the estimator that won is reported by name."""

CANDIDATES = ("proxy-leverage", ODD_SPARSE, ODD_BLEND)
"""What :data:`ODD_CHOICE` chooses from, in the order that breaks ties."""

TREE_PROXY = "tree-proxy"
"""The exact Shapley values of a LightGBM proxy of the game itself, fitted on every sampled
coalition with small leaves (:data:`~ferroshap.interactions.proxy.SMALL_BUDGET_PARAMS`), with
no correction of what it misses (one of :data:`SMALL_CANDIDATES`)."""

SMALL_CHOICE = "small-choice"
"""``method="auto"``'s choice at small budgets: the mix of ``"odd-msr"`` and :data:`TREE_PROXY`
whose held-out error on the odd part is least, from the scores of :data:`SMALL_CANDIDATES`
(:func:`~ferroshap.sampling.small_choice.mix_weight`); reported as ``"odd-msr"``,
:data:`TREE_PROXY` or, for a weight between, :data:`SMALL_BLEND`."""

SMALL_BLEND = "msr-tree-blend"
"""The mean of the ``"odd-msr"`` and :data:`TREE_PROXY` estimates (one of
:data:`SMALL_CANDIDATES`; under :data:`SMALL_CHOICE`, their mean weighted as the held-out scores
say): the regression's correction and the game's own proxy err in different ways, so a mix is
often better than either (docs/auto.md)."""

SMALL_CANDIDATES = ("odd-msr", TREE_PROXY, SMALL_BLEND)
"""What :data:`SMALL_CHOICE` chooses from, in the order that breaks ties: ``"odd-msr"`` (the
design's regression plus Tree MSR of its odd residual, exact on games of order two or less)
first."""

HOLDOUT_FOLDS = 5
""":data:`ODD_CHOICE` holds out one of this many folds of coalition pairs: the candidates are
fitted on the other folds and scored on it."""

HOLDOUT_COLUMNS = 4
"""Most explained columns (rows x outputs) whose held-out errors :data:`ODD_CHOICE` pools into
its one choice per design; the others are not scored (a held-out fit costs about as much as
the column's own proxy). The suite's cells, on which the choice was checked, explain four rows
each."""


PROXY_METHODS = ("proxy-leverage", "tree-msr")
"""Methods that adjust a LeverageSHAP design with a LightGBM proxy (not planned by the core)."""

ODD_MSR = "odd-msr"
"""Tree MSR of the regression's odd residual (used by ``method="auto"`` at small budgets):
the design's estimate plus the Tree-MSR values of its odd residual game, so a game the
regression fits exactly (order ≤ 2 with pairing) keeps its exact values."""

MIN_PAIRS = 20
"""Fewest sampled coalition pairs a proxy is fitted on (two leaves of ``min_data_in_leaf``)."""


def minimum_budget(n: int) -> int:
    """Smallest budget with a proxy: ``max(4 n, 2 MIN_PAIRS + 2)``.

    Examples
    --------
    >>> minimum_budget(5), minimum_budget(30)
    (42, 120)
    """
    return max(4 * n, 2 * MIN_PAIRS + 2)


SMALL_CHOICE_MIN_PAIRS = 14
"""Fewest sampled coalition pairs :data:`SMALL_CHOICE` runs on: those of the smallest budget it
was checked at (3n at n = 10; docs/auto.md, "How the choice was checked")."""


def small_choice_minimum(n: int) -> int:
    """Smallest budget :data:`SMALL_CHOICE` runs at: ``max(3 n, 2 SMALL_CHOICE_MIN_PAIRS + 2)``.
    Its held-out choice still picks well from fewer pairs than a proxy adjustment needs.

    Examples
    --------
    >>> small_choice_minimum(10), small_choice_minimum(14)
    (30, 42)
    """
    return max(3 * n, 2 * SMALL_CHOICE_MIN_PAIRS + 2)


def proxy_minimum(proxy: str, n: int) -> int:
    """Smallest budget the proxy adjustment ``proxy`` runs at: :func:`small_choice_minimum` for
    :data:`SMALL_CHOICE`, :func:`minimum_budget` for the others.

    Examples
    --------
    >>> proxy_minimum("small-choice", 10), proxy_minimum("proxy-leverage", 10)
    (30, 42)
    """
    return small_choice_minimum(n) if proxy == SMALL_CHOICE else minimum_budget(n)


@dataclass(frozen=True)
class Recipe:
    """One estimator ``auto`` can run.

    Attributes
    ----------
    name : str
        What :attr:`ferroshap.Explanation.estimator` reports.
    planned : str
        The core method that plans the design (one of :data:`ferroshap.METHODS`).
    proxy : str or None
        The proxy adjustment applied to its estimate (``"proxy-leverage"``), or ``None``.
    """

    name: str
    planned: str
    proxy: str | None = None


RECIPES: dict[str, Recipe] = {
    recipe.name: recipe
    for recipe in (
        Recipe("exact", "exact"),
        Recipe("leverage", "leverage"),
        Recipe("kernel", "kernel"),
        Recipe("kernel-wor", "kernel-wor"),
        Recipe("modified-l2", "modified-l2"),
        Recipe("proxy-leverage", "leverage", "proxy-leverage"),
        Recipe("proxy-kernel-wor", "kernel-wor", "proxy-leverage"),
        Recipe("proxy-modified-l2", "modified-l2", "proxy-leverage"),
        Recipe("odd-sparse", "leverage", ODD_SPARSE),
        Recipe("odd-blend", "leverage", ODD_BLEND),
        Recipe("odd-choice", "leverage", ODD_CHOICE),
        Recipe("odd-msr", "kernel-wor", ODD_MSR),
        Recipe("small-choice", "kernel-wor", SMALL_CHOICE),
    )
}
"""Every recipe by name: plain designs, and designs followed by the odd-part proxy adjustment."""


BORDER_MAX_PLAYERS = 12
"""Up to this many players, small budgets go to the kernel's without-replacement design."""

SMALL_CHOICE_MAX_PLAYERS = 16
"""Up to this many players, small budgets from :func:`small_choice_minimum` on go to
``"small-choice"`` (on the same design); from :data:`BORDER_MAX_PLAYERS` + 1 on, smaller ones go
to ``"leverage"`` (the evidence: docs/auto.md, "How the choice was checked")."""

BORDER_FACTOR = 6
"""... below ``budget = BORDER_FACTOR * n`` (``"small-choice"``, or ``"kernel-wor"`` below
:func:`small_choice_minimum`); docs/auto.md, "The rule"."""

BORDER_ONLY_FACTOR = 3
"""Beyond :data:`BORDER_MAX_PLAYERS` players, paired budgets from :func:`border_budget` up to
``BORDER_ONLY_FACTOR * n`` (below :func:`small_choice_minimum` at n <= 16) go to
``"kernel-wor"``: its enumerated border is two thirds of the budget or more, and its error was
0.47-0.73 times ``"leverage"``'s at 3n and 0.2-0.4 times at 2.5n on the tuning games at n = 14-40;
from 3.2-3.5n on ``"leverage"`` was the better (docs/auto.md, "How the choice was checked")."""


def border_budget(n: int) -> int:
    """Smallest budget at which ``"kernel-wor"`` enumerates the border sizes 1 and ``n - 1``:
    their ``2 n`` coalitions, the empty one and ``N``.

    Examples
    --------
    >>> border_budget(30)
    62
    """
    return 2 * n + 2


def choose(n: int, budget: int, paired: bool = True) -> Recipe:
    """The recipe ``auto`` runs for ``n`` players and ``budget`` coalitions.

    The rule, in order:

    1. ``budget >= 2**n`` (and ``n <= 24``): ``"exact"`` (full enumeration, no warning);
    2. ``n <= 16``, ``budget < 6 n``, pairing on and the budget at least
       :func:`small_choice_minimum` (3n, 30 at least): ``"small-choice"`` on a ``"kernel-wor"``
       design (``"odd-msr"``, the design's regression adjusted by Tree MSR of its odd residual,
       ``"tree-proxy"``, a proxy of the game itself, mixed with the weight that predicts held-out
       pairs best); else, at ``n <= 12`` and ``budget < 6 n``, ``"kernel-wor"`` (border sizes
       enumerated);
    3. with more players, paired, from :func:`border_budget` to ``3 n``: ``"kernel-wor"``
       (:data:`BORDER_ONLY_FACTOR`);
    4. ``budget`` below :func:`minimum_budget` (too few pairs
       to fit a proxy): ``"leverage"``;
    5. paired designs: ``"odd-choice"``, which keeps whichever of ``"proxy-leverage"``,
       ``"odd-sparse"`` and ``"odd-blend"`` predicts held-out coalition pairs of the design
       best (the game's own evidence: no threshold, no extra query);
    6. ``paired=False``: ``"proxy-leverage"`` (the odd part needs complements).

    The number of outputs does not enter: proxies are fitted per output column either way.

    Examples
    --------
    >>> choose(8, 256).name, choose(10, 50).name, choose(10, 29).name, choose(30, 100).name
    ('exact', 'small-choice', 'kernel-wor', 'leverage')
    >>> choose(30, 90).name, choose(30, 61).name, choose(14, 41).name, choose(14, 29).name
    ('kernel-wor', 'leverage', 'kernel-wor', 'leverage')
    >>> choose(30, 512).name, choose(30, 512, paired=False).name
    ('odd-choice', 'proxy-leverage')
    >>> choose(14, 42).name, choose(30, 90, paired=False).name
    ('small-choice', 'leverage')
    """
    if n <= _core.MAX_EXACT_PLAYERS and _core.covers_all(n, budget):
        return RECIPES["exact"]
    if budget < BORDER_FACTOR * n:
        if n <= SMALL_CHOICE_MAX_PLAYERS and paired and budget >= small_choice_minimum(n):
            return RECIPES["small-choice"]
        if n <= BORDER_MAX_PLAYERS:
            return RECIPES["kernel-wor"]
    if paired and border_budget(n) <= budget <= BORDER_ONLY_FACTOR * n:
        return RECIPES["kernel-wor"]
    if budget < minimum_budget(n):
        return RECIPES["leverage"]
    return RECIPES["odd-choice" if paired else "proxy-leverage"]


def resolve(method: str, n: int, budget: int, paired: bool = True) -> Recipe:
    """The recipe a call with ``method`` runs: :func:`choose`'s for ``"auto"``; otherwise the
    method itself (a proxy method through :func:`_resolve_proxy`,
    which may fall back to ``"leverage"`` with a warning).

    Examples
    --------
    >>> resolve("auto", 3, 2048).name
    'exact'
    >>> resolve("kernel", 10, 256)
    Recipe(name='kernel', planned='kernel', proxy=None)
    """
    if method == AUTO:
        return choose(n, budget, paired)
    planned, proxy = _resolve_proxy(method, n, budget)
    return Recipe(proxy or planned, planned, proxy)


def _resolve_proxy(method: str, n: int, budget: int) -> tuple[str, str | None]:
    """The method the core plans and the proxy adjustment to apply (``None`` for none).

    A proxy method plans ``"leverage"``. Below :func:`minimum_budget` (and short of ``2**n``,
    where the design is exact anyway) it falls back to plain ``"leverage"`` with a
    ``UserWarning`` naming the minimum.

    """
    if method not in PROXY_METHODS:
        return method, None
    minimum = minimum_budget(n)
    if budget < minimum and not _core.covers_all(n, budget):
        warnings.warn(
            f"budget={budget} is below the minimum {minimum} (max(4n, {2 * MIN_PAIRS + 2})) "
            f"that method={method!r} needs to fit its proxy; falling back to plain 'leverage'",
            UserWarning,
            stacklevel=3,
        )
        return "leverage", None
    return "leverage", method


@dataclass(frozen=True)
class Choice:
    """What :data:`ODD_CHOICE` chose for one design.

    Attributes
    ----------
    estimator : str
        The candidate that won (one of :data:`CANDIDATES`).
    held_out_errors : dict[str, float]
        Each candidate's held-out error, averaged over the explained columns
        (:func:`held_out_errors`).
    """

    estimator: str
    held_out_errors: dict[str, float]


def odd_residual(
    masks: np.ndarray, complement: np.ndarray, values: np.ndarray, phi: np.ndarray
) -> np.ndarray:
    """The residual ``r = v - v(empty) - <S, phi>`` of each column ``[m, R]``, replaced by its
    odd part ``(r(S) - r(N minus S)) / 2`` where the complement was sampled.

    Only the odd part of a game carries its Shapley values beyond the additive term, so a proxy
    fitted to it is not distracted by the even part (which pairing cancels anyway).
    """
    residual = values - values[_core.EMPTY_ROW] - masks @ phi.T
    return np.where(complement[:, None] >= 0, (residual - residual[complement]) / 2, residual)


def fit_column_proxy(masks: np.ndarray, target: np.ndarray) -> tuple[Any, _core.SparseFunction]:
    """The proxy of one column's odd part ``target`` on every sampled coalition, and its exact
    Fourier spectrum."""
    booster = fit_adjustment_proxy(masks, target)
    return booster, proxy_spectrum(booster, masks.shape[1])


def candidate_fit(
    name: str,
    proxy: tuple[Any, _core.SparseFunction],
    masks: np.ndarray,
    target: np.ndarray,
    one_per_pair: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The Shapley values ``[n]`` and the values on ``masks`` ``[m]`` of candidate ``name``'s
    surrogate (one of :data:`CANDIDATES`) of the odd part ``target``, from ``proxy`` (a
    :func:`fit_column_proxy` of it); ``"odd-blend"``'s is the mean of the other two."""
    booster, spectrum = proxy
    if name == "proxy-leverage":
        return spectrum.shapley_values(), predict_proxy(booster, masks)
    surrogate = refit_odd(spectrum, masks, target, one_per_pair)
    sparse = surrogate.shapley_values(), surrogate.evaluate(masks)
    if name == ODD_SPARSE:
        return sparse
    phi_p, fit_p = spectrum.shapley_values(), predict_proxy(booster, masks)
    return (phi_p + sparse[0]) / 2, (fit_p + sparse[1]) / 2


def scored_columns(fitted_columns: np.ndarray) -> np.ndarray:
    """The columns whose held-out errors :data:`ODD_CHOICE` pools: at most
    :data:`HOLDOUT_COLUMNS` of ``fitted_columns``, evenly spread over them.

    Examples
    --------
    >>> scored_columns(np.arange(3)).tolist(), scored_columns(np.arange(20)).tolist()
    ([0, 1, 2], [0, 6, 13, 19])
    """
    if len(fitted_columns) <= HOLDOUT_COLUMNS:
        return fitted_columns
    spread = np.linspace(0, len(fitted_columns) - 1, HOLDOUT_COLUMNS).round().astype(int)
    return fitted_columns[spread]


@dataclass(frozen=True)
class HoldOut:
    """The coalitions :data:`ODD_CHOICE` holds out of one design (row indices into its masks).

    Attributes
    ----------
    held_out : numpy.ndarray
        One coalition of each held-out pair.
    train : numpy.ndarray
        Every coalition of the other pairs, ∅ and N included.
    train_pairs : numpy.ndarray
        One coalition of each training pair, as positions in ``train``.
    """

    held_out: np.ndarray
    train: np.ndarray
    train_pairs: np.ndarray

    @classmethod
    def of(cls, held_out: np.ndarray, one_per_pair: np.ndarray, complement: np.ndarray) -> HoldOut:
        """The split that holds out the pairs of ``held_out`` (rows of ``one_per_pair``);
        ``complement`` as :func:`complements` gives it. Every sampled coalition of a held-out
        pair is left out of the fit (the odd part of a pair's two coalitions is one number)."""
        left_out = np.zeros(len(complement), dtype=bool)
        left_out[held_out] = True
        partners = complement[held_out]
        left_out[partners[partners >= 0]] = True  # a coalition whose complement was not sampled
        position = np.cumsum(~left_out) - 1  # each kept row's position among the kept rows
        kept = one_per_pair[~left_out[one_per_pair]]
        return cls(held_out, np.flatnonzero(~left_out), position[kept])


def held_out_errors(masks: np.ndarray, target: np.ndarray, split: HoldOut) -> np.ndarray:
    """Each candidate's (:data:`CANDIDATES`, in order) mean squared error in predicting the odd
    part ``target`` on the held-out coalitions of ``split``, fitted on its training pairs,
    relative to the mean square of ``target`` there. A game whose odd part is all zero scores 0
    everywhere.
    """
    train = masks[split.train]
    booster = fit_adjustment_proxy(train, target[split.train])
    spectrum = proxy_spectrum(booster, masks.shape[1])
    sparse = refit_odd(spectrum, train, target[split.train], split.train_pairs)
    held_out = split.held_out
    y = target[held_out]
    proxy, refit = predict_proxy(booster, masks[held_out]), sparse.evaluate(masks[held_out])
    errors = [np.mean((y - f) ** 2) for f in (proxy, refit, (proxy + refit) / 2)]
    return np.array(errors) / max(float(np.mean(y**2)), np.finfo(float).tiny)
