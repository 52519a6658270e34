"""``method="auto"``: the estimator chosen by a fixed rule of the problem's shape.

The rule (:func:`choose`) sees only the number of players ``n``, the budget, whether pairing is
on, and never timing or the game's values, so the same call always runs the same estimator
(bit-for-bit reproducible for a seed). Each choice is a :class:`Recipe`: a design the compiled
core plans, optionally followed by a proxy adjustment
(:mod:`ferroshap.sampling.proxy_adjusted`). The
thresholds were measured on ``auto``'s tuning cases of the accuracy suite
(:data:`ferroshap.bench.suite.TUNING_GAMES`) and the breast-cancer protocol with seeds 100-119;
see ``docs/auto.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ferroshap import _core, memory
from ferroshap.sampling import proxy_adjusted
from ferroshap.sampling.proxy_adjusted import ODD_MSR, ODD_SPARSE, minimum_budget

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
        Recipe("odd-msr", "kernel-wor", ODD_MSR),
    )
}
"""Every recipe by name: plain designs, and designs followed by the odd-part proxy adjustment."""


BORDER_MAX_PLAYERS = 12
"""Up to this many players, small budgets go to the kernel's without-replacement design."""

BORDER_FACTOR = 6
"""... below ``budget = BORDER_FACTOR * n`` (``"odd-msr"``, or ``"kernel-wor"`` below
:func:`~ferroshap.sampling.proxy_adjusted.minimum_budget`); docs/auto.md, "The rule"."""

ODD_SPARSE_FACTOR = 40
"""From ``budget >= ODD_SPARSE_FACTOR * n`` on, ``auto`` refits the odd part on a sparse support
(``"odd-sparse"``) instead of adjusting by the proxy itself (``"proxy-leverage"``)."""

SINGLE_BASELINE_FACTOR = 15
"""The same threshold for a single-baseline game (one background row), whose odd part is sparser."""


def choose(
    n: int,
    budget: int,
    paired: bool = True,
    n_background: int | None = None,
) -> Recipe:
    """The recipe ``auto`` runs for ``n`` players and ``budget`` coalitions.

    ``n_background`` is the number of background rows of a tabular game (``None`` for a raw
    game). The rule, in order:

    1. ``budget >= 2**n`` (and ``n <= 24``): ``"exact"`` (full enumeration, no warning);
    2. ``n <= 12`` and ``budget < 6 n``: ``"odd-msr"`` (``"kernel-wor"`` adjusted by Tree MSR
       of its odd residual) when the budget reaches
       :func:`~ferroshap.sampling.proxy_adjusted.minimum_budget` and pairing is on, else
       ``"kernel-wor"`` (border sizes enumerated);
    3. ``budget`` below :func:`~ferroshap.sampling.proxy_adjusted.minimum_budget` (too few pairs
       to fit a proxy): ``"leverage"``;
    4. paired designs with ``budget >= 40 n`` (``15 n`` for a single background row):
       ``"odd-sparse"``;
    5. otherwise ``"proxy-leverage"`` (also what ``paired=False`` gets from step 4 on, since the
       odd part needs complements).

    The number of outputs does not enter: proxies are fitted per output column either way.

    Examples
    --------
    >>> choose(8, 256).name, choose(10, 50).name, choose(10, 40).name, choose(30, 100).name
    ('exact', 'odd-msr', 'kernel-wor', 'leverage')
    >>> choose(30, 512).name, choose(30, 2048).name
    ('proxy-leverage', 'odd-sparse')
    >>> choose(10, 200, n_background=1).name, choose(10, 200, paired=False, n_background=1).name
    ('odd-sparse', 'proxy-leverage')
    """
    if n <= _core.MAX_EXACT_PLAYERS and memory.covers_all(n, budget):
        return RECIPES["exact"]
    if n <= BORDER_MAX_PLAYERS and budget < BORDER_FACTOR * n:
        proxy_fits = paired and budget >= minimum_budget(n)
        return RECIPES["odd-msr" if proxy_fits else "kernel-wor"]
    if budget < minimum_budget(n):
        return RECIPES["leverage"]
    factor = SINGLE_BASELINE_FACTOR if n_background == 1 else ODD_SPARSE_FACTOR
    if paired and budget >= factor * n:
        return RECIPES["odd-sparse"]
    return RECIPES["proxy-leverage"]


def resolve(
    method: str, n: int, budget: int, paired: bool = True, n_background: int | None = None
) -> Recipe:
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
        return choose(n, budget, paired, n_background)
    planned, proxy = proxy_adjusted.resolve(method, n, budget)
    return Recipe(proxy or planned, planned, proxy)
