"""``method="auto"``: the design chosen by the problem's shape, the estimator by the game.

The rule (:func:`choose`) sees the number of players ``n``, the budget and whether pairing is
on, never timing: it picks a :class:`Recipe`, a design the compiled core plans, optionally
followed by a proxy adjustment (:mod:`ferroshap.sampling.proxy_adjusted`). From the proxy's
minimum budget on, that adjustment is ``"odd-choice"``: the candidate estimators are scored on
held-out coalition pairs of the design itself and the best one is kept, so the choice follows
the game's own evidence and is reproducible bit for bit for a seed. See ``docs/auto.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ferroshap import _core
from ferroshap.sampling import proxy_adjusted
from ferroshap.sampling.odd_choice import ODD_BLEND, ODD_CHOICE, ODD_SPARSE, SMALL_CHOICE
from ferroshap.sampling.proxy_adjusted import ODD_MSR, minimum_budget

__all__ = ["AUTO", "RECIPES", "Recipe", "choose", "resolve"]

AUTO = "auto"
"""The method name that asks for the rule's choice."""


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

BORDER_FACTOR = 6
"""... below ``budget = BORDER_FACTOR * n`` (``"small-choice"``, or ``"kernel-wor"`` below
:func:`~ferroshap.sampling.proxy_adjusted.minimum_budget`); docs/auto.md, "The rule"."""


def choose(n: int, budget: int, paired: bool = True) -> Recipe:
    """The recipe ``auto`` runs for ``n`` players and ``budget`` coalitions.

    The rule, in order:

    1. ``budget >= 2**n`` (and ``n <= 24``): ``"exact"`` (full enumeration, no warning);
    2. ``n <= 12`` and ``budget < 6 n``: ``"small-choice"`` on a ``"kernel-wor"`` design when
       the budget reaches :func:`~ferroshap.sampling.proxy_adjusted.minimum_budget` and
       pairing is on (``"odd-msr"``, the design's regression adjusted by Tree MSR of its odd
       residual, or ``"tree-proxy"``, a proxy of the game itself, whichever predicts held-out
       pairs better), else ``"kernel-wor"`` (border sizes enumerated);
    3. ``budget`` below :func:`~ferroshap.sampling.proxy_adjusted.minimum_budget` (too few pairs
       to fit a proxy): ``"leverage"``;
    4. paired designs: ``"odd-choice"``, which keeps whichever of ``"proxy-leverage"``,
       ``"odd-sparse"`` and ``"odd-blend"`` predicts held-out coalition pairs of the design
       best (the game's own evidence: no threshold, no extra query);
    5. ``paired=False``: ``"proxy-leverage"`` (the odd part needs complements).

    The number of outputs does not enter: proxies are fitted per output column either way.

    Examples
    --------
    >>> choose(8, 256).name, choose(10, 50).name, choose(10, 40).name, choose(30, 100).name
    ('exact', 'small-choice', 'kernel-wor', 'leverage')
    >>> choose(30, 512).name, choose(30, 512, paired=False).name
    ('odd-choice', 'proxy-leverage')
    """
    if n <= _core.MAX_EXACT_PLAYERS and _core.covers_all(n, budget):
        return RECIPES["exact"]
    if n <= BORDER_MAX_PLAYERS and budget < BORDER_FACTOR * n:
        proxy_fits = paired and budget >= minimum_budget(n)
        return RECIPES["small-choice" if proxy_fits else "kernel-wor"]
    if budget < minimum_budget(n):
        return RECIPES["leverage"]
    return RECIPES["odd-choice" if paired else "proxy-leverage"]


def resolve(method: str, n: int, budget: int, paired: bool = True) -> Recipe:
    """The recipe a call with ``method`` runs: :func:`choose`'s for ``"auto"``; otherwise the
    method itself (a proxy method through :func:`ferroshap.sampling.proxy_adjusted.resolve`,
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
    planned, proxy = proxy_adjusted.resolve(method, n, budget)
    return Recipe(proxy or planned, planned, proxy)
