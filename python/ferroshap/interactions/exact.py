"""Exact interaction values by enumerating every coalition: the oracle of the interactions
engine (each index from its own definition, independently of the closed forms ProxySPEX uses)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ferroshap import _core, validation
from ferroshap._core import InvalidArgumentError
from ferroshap.groups import read_groups
from ferroshap.query.backend import DEFAULT_MAX_BYTES
from ferroshap.query.games import RawGame
from ferroshap.query.loop import QueryOptions, single_output
from ferroshap.results.interactions import INDICES, Interactions
from ferroshap.validation import ORDER_LIMIT, check_callable, check_choice, check_int

__all__ = ["all_masks", "exact_interactions"]


def all_masks(n: int) -> np.ndarray:
    """Every coalition of ``n`` players, ``bool[2**n, n]``; row ``r`` holds player ``i`` iff bit
    ``i`` of ``r`` is set."""
    return (np.arange(2**n)[:, None] >> np.arange(n)) & 1 == 1


def exact_interactions(
    game: Callable[[np.ndarray], Any],
    n_players: int,
    *,
    index: str = "k-SII",
    max_order: int = 2,
    batch_size: int | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: bool = False,
    groups: Any = None,
    max_memory: int | None = None,
) -> Interactions:
    """Exact interaction values by enumerating all ``2**n`` coalitions (the oracle).

    Each index is computed from its definition (discrete derivatives, Bernoulli aggregation,
    least squares for FSII and FBII), independently of the closed forms ProxySPEX uses.

    Parameters
    ----------
    game
        ``game(masks: bool[k, n]) -> float[k]``.
    n_players
        Number of players ``n``; the enumerated players (``n``, or the number of groups) are at
        most ``ferroshap._core.MAX_TABLE_PLAYERS`` (20).
    index
        One of :data:`INDICES`.
    max_order
        Largest interaction order (≥ 1; SV and BV use 1).
    batch_size, max_bytes, progress
        Coalitions per call of ``game`` and a progress bar, as for
        :func:`ferroshap.shapley_values`.
    groups
        Player groups, each one player (see :mod:`ferroshap.groups`).
    max_memory
        Cap in bytes on the estimated peak memory (default: half of the available memory);
        above it an ``InvalidArgumentError`` is raised before enumerating.

    Examples
    --------
    >>> import ferroshap as fs
    >>> iv = fs.exact_interactions(lambda m: m[:, 0] * m[:, 1] + 1.0 * m[:, 2], 3, index="SII")
    >>> iv.values
    {(0,): 0.5, (1,): 0.5, (2,): 1.0, (0, 1): 1.0}
    """
    check_callable(game, "game")
    n_features = check_int(n_players, "n_players", 1)
    grouped = None if groups is None else read_groups(groups, None, n_features)
    n = n_features if grouped is None else grouped.n_players
    if n > _core.MAX_TABLE_PLAYERS:
        raise InvalidArgumentError(
            f"n_players must be between 1 and {_core.MAX_TABLE_PLAYERS} for exact enumeration, "
            f"got {n}",
            argument="n_players",
        )
    index, max_order = (
        check_choice(index, "index", INDICES),
        check_int(max_order, "max_order", 1, ORDER_LIMIT),
    )
    options = QueryOptions.checked(batch_size, max_bytes, progress)
    validation.check_memory("exact_interactions", validation.exact_estimate(n), max_memory, n=n)
    masks = all_masks(n) if grouped is None else grouped.expand(all_masks(n))
    table = RawGame(game, n_features, options=options).evaluate(masks)
    values = single_output(table, "game", "coalition", "game")
    keys, result, baseline, order = _core.exact_interactions(values, n, index, max_order)
    return Interactions(
        values=dict(zip(keys, result.tolist(), strict=True)),
        base_values=np.array([float(baseline)]),
        index=index,
        max_order=order,
        n_players=n,
        surrogate=_core.moebius_transform(values, n),
        n_evaluations=2**n,
        method="exact",
        estimator="exact",
        budget=2**n,
        diagnostics={"estimated": False},
        feature_names=None if grouped is None else grouped.names,
    )
