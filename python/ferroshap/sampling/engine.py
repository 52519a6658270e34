"""The sampling engine on a game: plan a design, evaluate the game on it, estimate.

:func:`shapley_values` explains a raw game; :class:`~ferroshap.sampling.explainer.Explainer`
runs the same steps (:func:`plan_design`, :func:`game_values`, :func:`estimate_values`) on the
interventional game of a model.

Null players, features equal to their value in every background row, cannot change the model's
output: :class:`NullPlayers` finds them, each gets exactly 0 and a row is explained as the game
of the others (:func:`group_rows` groups the rows that share them).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import numpy as np

from ferroshap import _core, validation
from ferroshap.groups import Groups, GroupsArgument, read_groups
from ferroshap.query.backend import DEFAULT_MAX_BYTES, check_n_jobs, limited
from ferroshap.query.games import RawGame, TabularGame, apply_link
from ferroshap.query.loop import DesignMasks, QueryOptions
from ferroshap.sampling.auto import AUTO, PROXY_METHODS, Choice, Recipe, resolve
from ferroshap.sampling.proxy_adjusted import adjust_with_errors, check_cross_fit
from ferroshap.validation import (
    BUDGET_LIMIT,
    Seed,
    check_callable,
    check_choice,
    check_flag,
    check_int,
    check_seed,
    draw_seed,
)

__all__ = [
    "KEPT_BYTES",
    "KEPT_DESIGNS",
    "DesignKey",
    "NullPlayers",
    "PlannedDesigns",
    "Ran",
    "check_budget",
    "check_method",
    "design_masks",
    "diagnostics",
    "estimate_values",
    "expand_masks",
    "game_values",
    "group_rows",
    "identical",
    "linked",
    "plan_design",
    "shapley_values",
    "warn_if_exact",
]


def linked(function: Callable[[np.ndarray], Any], link: str) -> Callable[[np.ndarray], Any]:
    """``function`` followed by the link function ``link`` (itself for the identity)."""
    if link == "identity":
        return function
    return lambda masks: apply_link(np.asarray(function(masks), dtype=np.float64), link)


def shapley_values(
    game: Callable[[np.ndarray], Any],
    n_players: int,
    *,
    method: str = AUTO,
    budget: int = 2048,
    seed: Seed = 0,
    batch_size: int | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: bool = False,
    paired: bool = True,
    groups: GroupsArgument | None = None,
    cross_fit: int | None = None,
    max_memory: int | None = None,
    n_jobs: int | None = None,
) -> np.ndarray:
    """Shapley values of a game given as a function of coalitions.

    Parameters
    ----------
    game
        ``game(masks: bool[k, n]) -> float[k]`` or ``float[k, rows]`` (several games at once);
        ``masks[j, i]`` is true when player ``i`` is in coalition ``j``.
    n_players
        Number of players ``n``.
    method, budget, seed, paired, cross_fit, max_memory, n_jobs
        As for :class:`Explainer`.
    groups
        Player groups (a dict name → player indices, or a list of index lists), each one player
        of the coarser game; ungrouped players stay players of their own, after the groups.
    batch_size, max_bytes, progress
        Coalitions per call of ``game`` (by default as many as ``max_bytes`` of masks allow,
        usually all at once) and a tqdm progress bar, as for :class:`Explainer`.

    Returns
    -------
    numpy.ndarray
        ``[n]`` for a game returning ``[k]``; ``[rows, n]`` for ``[k, rows]``. Each row sums to
        ``v(N) - v(∅)``.

    Examples
    --------
    >>> import numpy as np, ferroshap as fs
    >>> fs.shapley_values(lambda masks: masks.all(axis=1) * 1.0, 3, method="exact")
    array([0.33333333, 0.33333333, 0.33333333])
    """
    check_callable(game, "game")
    n_features = check_int(n_players, "n_players", 1)
    options = QueryOptions.checked(batch_size, max_bytes, progress)
    grouped = None if groups is None else read_groups(groups, None, n_features)
    n = n_features if grouped is None else grouped.n_players
    check_method(method, n)
    budget = check_budget(budget, method, n)
    cross_fit = check_cross_fit(cross_fit, method)
    raw = RawGame(game, n_features, options=options)
    seed, paired = check_seed(seed), check_flag(paired, "paired")
    with limited(check_n_jobs(n_jobs)):
        phi, _, _, _, _ = game_values(
            raw, grouped, method, budget, seed, paired, cross_fit, max_memory, "shapley_values"
        )
    return phi if raw.output_shape else phi[0]


def game_values(
    raw: RawGame,
    groups: Groups | None,
    method: str,
    budget: int,
    seed: Seed,
    paired: bool,
    cross_fit: int | None,
    max_memory: int | None,
    engine: str,
) -> tuple[np.ndarray, Callable[[], np.ndarray], _core.Design, Ran, np.ndarray]:
    """Shapley values ``[R, n]`` of a raw game (on ``groups``' players if given) by ``method``, a
    function computing their standard errors ``[R, n]``, the design that produced them, what ran
    on it, and the game's values ``[m, R]`` on the design (row 0 is the empty coalition);
    ``engine`` names the caller in memory errors."""
    n = raw.n_players if groups is None else groups.n_players
    recipe = resolve(method, n, budget, paired)
    m = validation.planned_coalitions(recipe.planned, n, budget)
    estimate = validation.sampling_estimate(
        recipe.planned, n, budget, query=raw.query_bytes(m), proxy=recipe.proxy is not None
    )
    validation.check_memory(engine, estimate, max_memory, n=n, budget=budget)
    (design,) = plan_design(recipe.planned, n, budget, draw_seed(seed), paired, [0], method != AUTO)
    values = raw.evaluate(design_masks(design, groups))
    (phi,), (errors,), (choice,) = estimate_values([design], [values], recipe.proxy, cross_fit)
    return phi, errors, design, Ran.of(recipe, design, choice), values


def check_tabular_memory(
    recipe: Recipe,
    budget: int,
    game: TabularGame,
    designs: int,
    whole_masks: bool,
    max_memory: int | None,
) -> None:
    """Refuse an :class:`~ferroshap.Explainer` call on every row of ``game`` by ``recipe`` whose
    estimated peak memory passes ``max_memory``, before anything large is allocated; ``designs``
    planned (one per row or one for all), their masks held whole (``whole_masks``) or read in
    chunks."""
    n, rows = game.n_players, game.n_rows
    m = validation.planned_coalitions(recipe.planned, n, budget)
    estimate = validation.sampling_estimate(
        recipe.planned,
        n,
        budget,
        rows=rows,
        outputs=int(np.prod(game.output_shape, dtype=np.int64)),
        query=game.query_bytes(m * rows),
        designs=designs,
        proxy=recipe.proxy is not None,
        whole_masks=whole_masks,
    )
    validation.check_memory("Explainer", estimate, max_memory, n=n, budget=budget, rows=rows)


@dataclass(frozen=True)
class Ran:
    """What estimated the values of one design.

    Attributes
    ----------
    estimator : str
        ``"exact"`` for an exact design, the estimator a held-out choice (``"odd-choice"``,
        ``"small-choice"``) kept, or the recipe.
    held_out_errors : dict[str, float] or None
        The choice's held-out error of each candidate (else ``None``).
    """

    estimator: str
    held_out_errors: dict[str, float] | None = None

    @classmethod
    def of(cls, recipe: Recipe, design: _core.Design, choice: Choice | None) -> Ran:
        """What ran on ``design`` with ``recipe``, which made ``choice``."""
        if design.exact:
            return cls("exact")
        if choice is not None:
            return cls(choice.estimator, choice.held_out_errors)
        return cls(recipe.name)


def diagnostics(ran: Sequence[Ran]) -> dict[str, Any]:
    """An explanation's ``diagnostics`` from what ran on its designs: ``"estimated"``, and with
    a held-out choice (``"odd-choice"``, ``"small-choice"``) the held-out error of each
    candidate (``"held_out_errors"``, one dict per design that chose, in order)."""
    chose = [r.held_out_errors for r in ran if r.held_out_errors is not None]
    found: dict[str, Any] = {"estimated": any(r.estimator != "exact" for r in ran)}
    return {**found, "held_out_errors": chose} if chose else found


def design_masks(design: _core.Design, groups: Groups | None) -> DesignMasks:
    """The design's coalitions as the game's masks (feature masks with groups), read in
    chunks."""
    return DesignMasks(design, None if groups is None else groups.player_of_feature)


def expand_masks(masks: np.ndarray, groups: Groups | None) -> np.ndarray:
    """Feature masks of player coalitions (the masks themselves without groups)."""
    return masks if groups is None else groups.expand(masks)


def check_method(method: str, n: int) -> None:
    """``method`` is one of the names ``auto`` and the engines accept, and the core's ranges
    for ``n`` players hold (``"exact"``: at most ``_core.MAX_EXACT_PLAYERS``)."""
    check_choice(method, "method", [AUTO, *_core.METHODS, *PROXY_METHODS])
    if method in _core.METHODS:
        _core.check_plan(method, n)


def check_budget(budget: Any, method: str, n: int) -> int:
    """``budget`` as an int the core accepts for ``method`` on ``n`` players (its type and
    bounds here, the method's own minimum in the core)."""
    value = check_int(budget, "budget", 2, BUDGET_LIMIT)
    if method in _core.METHODS:
        _core.check_plan(method, n, value)
    return value


def plan_design(
    method: str,
    n: int,
    budget: int,
    seed: int,
    paired: bool,
    streams: Sequence[int],
    warn: bool = True,
) -> list[_core.Design]:
    """Plan one design per stream; warn once (if ``warn``: not for ``"auto"``, which chooses
    enumeration knowingly) if the budget made them exact."""
    designs = [_core.plan(method, n, budget, seed, paired=paired, stream=s) for s in streams]
    if warn:
        warn_if_exact(designs, budget, n)
    return designs


def warn_if_exact(designs: Sequence[_core.Design], budget: int, n: int) -> None:
    """Warn, at the call site two frames above the caller, if the budget made ``designs``
    exact."""
    if any(design.exact_fallback for design in designs):
        warnings.warn(
            f"budget ≥ 2^n (budget={budget}, n={n}): computing exact Shapley values by enumeration",
            UserWarning,
            stacklevel=4,
        )


class DesignKey(NamedTuple):
    """What :func:`plan_design` plans from, in its order: the designs of equal keys are equal."""

    method: str
    n: int
    budget: int
    seed: int
    paired: bool
    streams: tuple[int, ...]


KEPT_BYTES = 16 * 2**20
"""The largest solver (``_core.solver_bytes``) of a design that :class:`PlannedDesigns` keeps."""

KEPT_DESIGNS = 4
"""How many designs :class:`PlannedDesigns` keeps (the oldest goes first)."""


class PlannedDesigns:
    """The designs an :class:`~ferroshap.Explainer` planned, kept for its next calls.

    A call with the same method, players, budget, seed and pairing gets the very same design
    back (so the same values, bit for bit) without planning it again, and with it the estimator
    the design built on first use: one-row calls in a loop pay for neither again. Per-row
    designs and designs whose solver needs more than :data:`KEPT_BYTES` are planned afresh
    each call. Pickled empty (a design is rebuilt where it is used).
    """

    def __init__(self) -> None:
        self._kept: dict[DesignKey, list[_core.Design]] = {}

    def plan(self, key: DesignKey, warn: bool) -> list[_core.Design]:
        """:func:`plan_design`'s designs for ``key`` (warning as it does if ``warn``), the kept
        ones when they match."""
        designs = self._kept.get(key)
        if designs is None:
            designs = plan_design(*key, warn=False)
            (first, *others) = designs
            if (
                not others
                and _core.solver_bytes(key.method, key.n, first.n_coalitions) <= KEPT_BYTES
            ):
                kept = list(self._kept)  # one snapshot: calls on other threads may add or drop
                if len(kept) >= KEPT_DESIGNS:
                    self._kept.pop(kept[0], None)
                self._kept[key] = designs
        if warn:
            warn_if_exact(designs, key.budget, key.n)
        return designs

    def __getstate__(self) -> dict[str, Any]:
        return {"_kept": {}}


def estimate_values(
    designs: Sequence[_core.Design],
    values: Sequence[np.ndarray],
    proxy: str | None = None,
    cross_fit: int | None = None,
) -> tuple[list[np.ndarray], list[Callable[[], np.ndarray]], list[Choice | None]]:
    """Shapley values ``[R, n]`` per design from its values ``[m, R]``, adjusted by ``proxy``
    (a method of :data:`PROXY_METHODS` or an ``auto`` adjustment) if given, functions computing
    their standard errors (``[R, n]`` per design, see ``docs/standard-errors.md``: computed when
    read, as they cost several times the estimate), and per design the
    :class:`~ferroshap.sampling.auto.Choice` of ``"odd-choice"`` or ``"small-choice"``
    (else ``None``); warn on rank deficiency.

    A column whose values are all equal (a game constant on every evaluated coalition) gets
    exactly 0 and standard errors of exactly 0, whatever the estimator (they would otherwise
    carry its rounding, ~1e-16)."""
    values = [np.ascontiguousarray(v) for v in values]
    phis = [design.estimate(v) for design, v in zip(designs, values, strict=True)]
    n = designs[0].n_players
    ranks = [design.rank() for design in designs]
    deficient = [rank for rank in ranks if rank is not None and rank < n - 1]
    if deficient:
        warnings.warn(
            f"rank-deficient design (rank {min(deficient)} < n - 1 = {n - 1}): returning the "
            f"minimum-norm solution; increase the budget for reliable values (full rank needs "
            f"n - 1 complementary pairs, a budget of at least 2n = {2 * n}, or n + 1 = {n + 1} "
            "coalitions with paired=False)",
            UserWarning,
            stacklevel=3,
        )
    choices: list[Choice | None] = [None] * len(designs)
    if proxy is None:
        errors = [
            partial(design.standard_errors, v) for design, v in zip(designs, values, strict=True)
        ]
    else:
        adjusted = [
            adjust_with_errors(proxy, design, v, phi, cross_fit)
            for design, v, phi in zip(designs, values, phis, strict=True)
        ]
        phis, errors, choices = (list(part) for part in zip(*adjusted, strict=True))
    constant = [np.ptp(v, axis=0) == 0 for v in values]
    return (
        [np.where(c[:, None], 0.0, phi) for c, phi in zip(constant, phis, strict=True)],
        [
            partial(_zero_where, c, error) if c.any() else error
            for c, error in zip(constant, errors, strict=True)
        ],
        choices,
    )


def _zero_where(constant: np.ndarray, errors: Callable[[], np.ndarray]) -> np.ndarray:
    """``errors()`` ``[R, n]`` with the rows of the ``constant`` columns set to 0."""
    return np.where(constant[:, None], 0.0, errors())


class NullPlayers:
    """The background's side of the null-player test, read once per explainer from its host
    copy ``background``: its first row and which columns are constant."""

    def __init__(self, background: np.ndarray) -> None:
        self._row = background[:1]
        self._constant = np.all(identical(background, self._row), axis=0)

    def varying(self, x: np.ndarray, groups: Groups | None) -> np.ndarray:
        """``bool[rows, players]``: whether each player can change the model's output on each
        explained row of ``x`` (their host copy).

        A feature whose value in the row equals its value in every background row is replaced
        by the same value whether it is masked or not, so it is a null player: its Shapley value
        is exactly 0 and the row's game is that of the other players (a group is null when all
        its features are). NaN counts as differing, as does 0.0 against -0.0.
        """
        same = identical(x, self._row) & self._constant
        if groups is None:
            return ~same
        members = groups.expand(np.eye(groups.n_players, dtype=bool))  # [players, features]
        return (~same).astype(np.int64) @ members.T.astype(np.int64) > 0


def group_rows(varying: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``bool[rows, n]``, in lexicographic order, and the index of each
    row's among them (``np.unique(varying, axis=0, return_inverse=True)``, compared as packed
    bytes: that builds a record type of ``n`` fields, seconds at ``n = 10**6``).

    Examples
    --------
    >>> patterns, of = group_rows(np.array([[True, False], [False, True], [True, False]]))
    >>> patterns.tolist(), of.tolist()
    ([[False, True], [True, False]], [1, 0, 1])
    """
    packed = np.ascontiguousarray(np.packbits(varying, axis=1))
    keys = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
    _, first, of = np.unique(keys, return_index=True, return_inverse=True)
    return varying[first], of.ravel()


def identical(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elementwise ``a == b`` (broadcast), also telling 0.0 from -0.0 in float arrays; cells of
    a mixed frame (object arrays) that cannot be compared count as different."""
    if a.dtype == object or b.dtype == object:
        return np.frompyfunc(_same_cell, 2, 1)(a, b).astype(bool)
    same = np.asarray(a == b, dtype=bool)
    if a.dtype.kind == "f" and b.dtype.kind == "f":
        same &= np.signbit(a) == np.signbit(b)
    return same


def _same_cell(a: Any, b: Any) -> bool:
    """Whether two cells of a mixed frame are the same value (``False`` when undecidable)."""
    try:
        return bool(a == b) and not (isinstance(a, float) and np.signbit(a) != np.signbit(b))
    except (TypeError, ValueError):
        return False
