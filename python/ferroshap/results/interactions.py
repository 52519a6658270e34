"""Interaction values: the :class:`Interactions` result object.

An :class:`Interactions` holds the values of one interaction index up to an order, plus the whole
sparse surrogate they came from (a :class:`ferroshap._core.SparseFunction`), so that Shapley
values and faithfulness use every selected term, not only the truncated ``values``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ferroshap import _core
from ferroshap._core import InvalidArgumentError
from ferroshap.query.games import RawGame
from ferroshap.results.explanation import Explanation
from ferroshap.scores import r_squared
from ferroshap.validation import check_callable, check_choice, check_int

__all__ = ["INDICES", "PLOT_KINDS", "Interactions"]

INDICES: tuple[str, ...] = tuple(_core.INDICES)
"""Index names (shapiq's spellings): Moebius, Fourier, SV, BV, SII, BII, k-SII, STII, FSII, FBII."""

PLOT_KINDS: tuple[str, ...] = ("bar", "network")
"""The kinds :meth:`Interactions.plot` draws."""

Key = tuple[int, ...]


@dataclass(frozen=True, eq=False, repr=False)
class Interactions:
    """Interaction values of one index up to ``max_order``, with the surrogate behind them.

    Attributes
    ----------
    values : dict[tuple[int, ...], float]
        Sorted player tuples ``T`` with ``1 <= len(T) <= max_order`` (order 1 for SV and BV) to
        their value; exact zeros dropped. Keys are ordered by size, then players.
    base_values : numpy.ndarray
        ``[v(∅)]``, shape ``(1,)`` like every result's ``base_values``; for FBII its own
        empty-set value, as shapiq reports it.
    index : str
        One of :data:`INDICES`.
    max_order : int
        The explanation order used (1 for SV and BV; capped at ``n_players``).
    n_players : int
        Number of players.
    surrogate : ferroshap._core.SparseFunction
        The whole sparse set function the values were computed from.
    n_evaluations : int
        Distinct coalitions the game was evaluated on.
    method : str
        The engine that made them: ``"proxyspex"``, ``"exact"`` (:func:`exact_interactions`),
        or ``"surrogate"`` (:meth:`from_surrogate` called directly).
    estimator : str
        What ran: ``"proxyspex"``, or ``"exact"`` when the values were enumerated (also
        ProxySPEX when its budget covered every coalition); ``"surrogate"`` from
        :meth:`from_surrogate` called directly.
    budget : int
        The requested budget (``2**n_players`` for :func:`exact_interactions`).
    diagnostics : dict[str, Any]
        How the estimate was made: always ``"estimated"``; ProxySPEX adds validation R²,
        support size, timings, ...
    feature_names : list[str] or None
        Player names, when known.
    corners : tuple[float, float]
        ``(v(∅) - f(∅), v(N) - f(N))``: where the sparse surrogate ``f`` is not fitted to the
        game's values at the empty and the full coalition (ProxySPEX, when they are outliers),
        the surrogate is corrected at those two coalitions only. :meth:`shapley_values`,
        :meth:`predict`, ``base_values`` and the ``SV`` values include the correction (each
        player gets ``((v(N) - f(N)) - (v(∅) - f(∅))) / n``, the Shapley value of a game that is
        non-zero at ∅ and N only); other indices are the sparse surrogate's. ``(0, 0)`` otherwise.

    Examples
    --------
    >>> import ferroshap as fs
    >>> iv = fs.exact_interactions(lambda m: m[:, 0] * m[:, 1] * 1.0, 3, index="k-SII")
    >>> iv.values
    {(0, 1): 1.0}
    >>> iv.shapley_values().values
    array([[0.5, 0.5, 0. ]])
    """

    values: dict[Key, float]
    base_values: np.ndarray
    index: str
    max_order: int
    n_players: int
    surrogate: _core.SparseFunction
    n_evaluations: int
    method: str
    estimator: str
    budget: int
    diagnostics: dict[str, Any] = field(default_factory=dict)
    feature_names: list[str] | None = None
    corners: tuple[float, float] = (0.0, 0.0)

    @classmethod
    def from_surrogate(
        cls,
        surrogate: _core.SparseFunction,
        index: str,
        max_order: int,
        n_evaluations: int,
        diagnostics: dict[str, Any] | None = None,
        feature_names: Sequence[str] | None = None,
        corners: tuple[float, float] = (0.0, 0.0),
        *,
        method: str = "surrogate",
        estimator: str = "surrogate",
        budget: int | None = None,
    ) -> Interactions:
        """Values of ``index`` up to ``max_order`` of a sparse surrogate (closed forms), with
        the surrogate's ``corners`` correction at ∅ and N (see :attr:`corners`). ``method``,
        ``estimator`` and ``budget`` say how the surrogate was made (``budget`` defaults to
        ``n_evaluations``)."""
        keys, values, baseline, order = surrogate.interactions(index, max_order)
        share = _corner_share(corners, surrogate.n_players)
        table = dict(zip(keys, values.tolist(), strict=True))
        if index == "SV" and share:
            table = {(i,): table.get((i,), 0.0) + share for i in range(surrogate.n_players)}
        return cls(
            values=table,
            base_values=np.array([float(baseline) + corners[0]]),
            index=index,
            max_order=order,
            n_players=surrogate.n_players,
            surrogate=surrogate,
            n_evaluations=n_evaluations,
            method=method,
            estimator=estimator,
            budget=n_evaluations if budget is None else budget,
            diagnostics=dict(diagnostics or {}),
            feature_names=None if feature_names is None else list(feature_names),
            corners=(float(corners[0]), float(corners[1])),
        )

    def __len__(self) -> int:
        """Number of non-zero values."""
        return len(self.values)

    def __repr__(self) -> str:
        return (
            f"Interactions(index={self.index!r}, max_order={self.max_order}, "
            f"n_players={self.n_players}, values={len(self.values)}, "
            f"base_values=[{self.base_values[0]:.6g}], estimator={self.estimator!r}, "
            f"budget={self.budget}, n_evaluations={self.n_evaluations})"
        )

    def top(self, k: int = 10) -> list[tuple[Key, float]]:
        """The ``k`` values largest in absolute value, largest first (ties by key).

        Examples
        --------
        >>> import ferroshap as fs
        >>> iv = fs.exact_interactions(lambda m: m @ [1.0, -3.0, 2.0], 3, index="Moebius")
        >>> iv.top(2)
        [((1,), -3.0), ((2,), 2.0)]
        """
        k = check_int(k, "k", 0)
        ranked = sorted(self.values.items(), key=lambda item: (-abs(item[1]), len(item[0])))
        return ranked[:k]

    def shapley_values(self) -> Explanation:
        """Shapley values of the whole surrogate (not of the truncated values), as an
        :class:`~ferroshap.Explanation` of one explained row: the game's grand coalition.

        ``values`` is ``(1, n_players)`` and sums to ``v(N) - v(∅)`` of the surrogate with its
        :attr:`corners` (ProxySPEX makes that the game's unless ``efficient=False``);
        ``base_values`` is ``[v(∅)]`` of the same; ``data`` is the grand coalition (one row of
        ``True``); ``feature_names`` are :attr:`feature_names` (``"0" .. "n-1"`` when unknown);
        ``method``, ``estimator``, ``budget``, ``n_evaluations`` and ``diagnostics`` are this
        result's. ``standard_errors`` is ``None``: the surrogate's values carry no sampling
        estimate of their own.

        Examples
        --------
        >>> import ferroshap as fs
        >>> iv = fs.exact_interactions(lambda m: m[:, 0] * m[:, 1] + 1.0, 3, index="k-SII")
        >>> ex = iv.shapley_values()
        >>> ex.values.round(12), ex.base_values.round(12), ex.feature_names
        (array([[0.5, 0.5, 0. ]]), array([1.]), ['0', '1', '2'])
        """
        n = self.n_players
        phi = self.surrogate.shapley_values() + _corner_share(self.corners, n)
        return Explanation(
            values=phi[None, :],
            base_values=self.predict(np.zeros((1, n), dtype=bool)),
            data=np.ones((1, n), dtype=bool),
            feature_names=list(self.feature_names or (str(i) for i in range(n))),
            n_evaluations=self.n_evaluations,
            method=self.method,
            budget=self.budget,
            estimator=self.estimator,
            diagnostics=dict(self.diagnostics),
        )

    def predict(self, masks: Any) -> np.ndarray:
        """The surrogate's values on the coalitions ``masks: bool[m, n_players]`` (with its
        :attr:`corners` at ∅ and N)."""
        masks = _check_masks(masks, self.n_players)
        fitted = self.surrogate.evaluate(masks)
        if self.corners != (0.0, 0.0):
            fitted = fitted + np.where(~masks.any(axis=1), self.corners[0], 0.0)
            fitted = fitted + np.where(masks.all(axis=1), self.corners[1], 0.0)
        return fitted

    def faithfulness(self, game: Callable[[np.ndarray], Any], masks: Any) -> float:
        """R² of the surrogate against ``game`` on the coalitions ``masks`` (held-out masks).

        ``1 - Σ (v(S) - ŝ(S))² / Σ (v(S) - mean v)²`` over the rows of ``masks``.

        Examples
        --------
        >>> import numpy as np, ferroshap as fs
        >>> game = lambda m: m @ np.arange(4.0)
        >>> iv = fs.exact_interactions(game, 4, index="SV")
        >>> iv.faithfulness(game, np.random.default_rng(0).random((50, 4)) < 0.5)
        1.0
        """
        check_callable(game, "game")
        masks = _check_masks(masks, self.n_players)
        values = RawGame(game, self.n_players).evaluate(masks)
        if values.shape[1] != 1:
            raise InvalidArgumentError(
                f"game must return one value per mask for faithfulness, got shape {values.shape}"
            )
        return r_squared(values[:, 0], self.predict(masks))

    def to_shapiq(self) -> Any:
        """A ``shapiq.InteractionValues`` (shapiq ≥ 1.3), with ``()`` holding the baseline.

        Built by keyword with a values array and an ``interaction_lookup``, which every shapiq
        version since 1.3 accepts; no aggregation is re-applied (``target_index = index``).
        """
        return shapiq_values(
            self.values,
            float(self.base_values[0]),
            index=self.index,
            max_order=self.max_order,
            n_players=self.n_players,
            estimated=self.diagnostics.get("estimated", True),
            budget=self.n_evaluations,
        )

    def to_polars(self) -> Any:
        """A polars DataFrame with one row per value: ``interaction`` (list of players),
        ``order``, ``value`` and, when names are known, ``features`` (names joined by ``" x "``).

        Examples
        --------
        >>> import ferroshap as fs
        >>> fs.exact_interactions(lambda m: m.all(1) * 1.0, 2, index="Moebius").to_polars().shape
        (1, 3)
        """
        try:
            import polars as pl
        except ImportError as err:
            raise ImportError(
                "Interactions.to_polars() needs the polars package: `pip install polars`"
            ) from err
        keys = list(self.values)
        columns: dict[str, Any] = {
            "interaction": pl.Series("interaction", [list(k) for k in keys], pl.List(pl.Int64)),
            "order": pl.Series("order", [len(k) for k in keys], pl.Int64),
            "value": pl.Series("value", list(self.values.values()), pl.Float64),
        }
        if self.feature_names is not None:
            columns["features"] = [self._label(k) for k in keys]
        return pl.DataFrame(columns)

    def plot(self, k: int = 10, ax: Any = None, kind: str = "bar") -> Any:
        """Plot the largest values (needs matplotlib); returns the axes.

        Parameters
        ----------
        k
            How many values to draw (at least 1): the ``k`` largest in absolute value for
            ``kind="bar"``, the ``k`` largest pairs for ``kind="network"``.
        ax
            A matplotlib ``Axes`` to draw on; a new figure when ``None``.
        kind
            One of :data:`PLOT_KINDS`. ``"bar"``: a horizontal bar per value, any order.
            ``"network"``: the players on a circle, node size ``|first-order value|`` (the
            Shapley values of :meth:`shapley_values` when ``values`` has no first-order term),
            one edge per pair with width ``|value|``; red is positive, blue negative. Needs
            ``max_order >= 2``.

        Examples
        --------
        >>> import matplotlib
        >>> matplotlib.use("Agg")
        >>> import matplotlib.pyplot as plt
        >>> import ferroshap as fs
        >>> iv = fs.exact_interactions(lambda m: m[:, 0] * m[:, 1] - 1.0 * m[:, 2], 3)
        >>> ax = iv.plot(kind="network")  # nodes 0, 1, 2; one edge, between 0 and 1
        >>> plt.close(ax.figure)
        """
        check_choice(kind, "kind", PLOT_KINDS)
        k = check_int(k, "k", 1)
        if kind == "network" and self.max_order < 2:
            raise InvalidArgumentError(
                f"kind='network' draws pairwise interactions, but these {self.index} values "
                f"have max_order={self.max_order}; use kind='bar'"
            )
        try:
            import matplotlib.pyplot as plt  # type: ignore[import-not-found]
        except ImportError as err:
            raise ImportError(
                "Interactions.plot() needs matplotlib: pip install 'ferroshap[bench]' "
                "(or matplotlib)"
            ) from err
        if kind == "bar":
            return self._plot_bar(plt, k, ax)
        return self._plot_network(plt, k, ax)

    def _label(self, key: Key) -> str:
        """A key as its feature names joined by ``" x "``, or as the tuple."""
        names = self.feature_names
        return " x ".join(names[i] for i in key) if names else str(key)

    def _plot_bar(self, plt: Any, k: int, ax: Any) -> Any:
        """``plot(kind="bar")`` once its arguments are checked."""
        top = self.top(k)[::-1]
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 0.35 * len(top) + 1))
        values = [v for _, v in top]
        ax.barh(
            [self._label(key) for key, _ in top],
            values,
            color=[_sign_colour(v) for v in values],
        )
        ax.set_xlabel(f"{self.index} value")
        ax.set_title(f"Top {len(top)} {self.index} values (order ≤ {self.max_order})")
        return ax

    def _plot_network(self, plt: Any, k: int, ax: Any) -> Any:
        """``plot(kind="network")`` once its arguments are checked."""
        from matplotlib.collections import LineCollection  # type: ignore[import-not-found]
        from matplotlib.lines import Line2D  # type: ignore[import-not-found]

        n = self.n_players
        pairs = [(key, v) for key, v in self.values.items() if len(key) == 2]
        edges = sorted(pairs, key=lambda item: -abs(item[1]))[:k]
        if any(len(key) == 1 for key in self.values):
            nodes, node_source = np.zeros(n), "first-order value"
            for key, v in self.values.items():
                if len(key) == 1:
                    nodes[key[0]] = v
        else:
            nodes, node_source = self.shapley_values().values[0], "Shapley value"
        angle = np.pi / 2 - 2 * np.pi * np.arange(n) / n
        xy = np.column_stack([np.cos(angle), np.sin(angle)])
        if ax is None:
            _, ax = plt.subplots(figsize=(6, 6))
        widest = max((abs(v) for _, v in edges), default=0.0)
        ax.add_collection(
            LineCollection(
                [xy[list(key)] for key, _ in edges],
                linewidths=[0.5 + 5.5 * abs(v) / widest for _, v in edges],
                colors=[_sign_colour(v) for _, v in edges],
                alpha=0.7,
                zorder=1,
            )
        )
        largest = float(np.max(np.abs(nodes))) if n else 0.0
        sizes = 30 + 570 * (np.abs(nodes) / largest if largest > 0 else np.zeros(n))
        ax.scatter(
            xy[:, 0],
            xy[:, 1],
            s=sizes,
            c=[_sign_colour(v) for v in nodes],
            edgecolors="black",
            linewidths=0.5,
            zorder=2,
        )
        for i in range(n):
            ax.text(
                1.18 * xy[i, 0],
                1.18 * xy[i, 1],
                self.feature_names[i] if self.feature_names else str(i),
                ha="center",
                va="center",
                fontsize="small",
            )
        ax.legend(
            handles=[
                Line2D([], [], color=_sign_colour(1.0), label="positive"),
                Line2D([], [], color=_sign_colour(-1.0), label="negative"),
            ],
            loc="lower right",
            frameon=False,
            fontsize="small",
        )
        ax.set_xlim(-1.35, 1.35)
        ax.set_ylim(-1.35, 1.35)
        ax.set_aspect("equal")
        ax.set_axis_off()
        ax.set_title(f"Top {len(edges)} pairwise {self.index} values\n(node size: |{node_source}|)")
        return ax


def _corner_share(corners: tuple[float, float], n: int) -> float:
    """Each player's Shapley value of the correction ``corners = (a, b)`` at ∅ and N: the game
    non-zero at those two coalitions only gives every player ``(b - a) / n``."""
    return (corners[1] - corners[0]) / n


def _sign_colour(value: float) -> str:
    """Red for positive values, blue for negative ones (as SHAP plots colour them), grey for 0."""
    return "tab:red" if value > 0 else "tab:blue" if value < 0 else "tab:gray"


def _check_masks(masks: Any, n: int) -> np.ndarray:
    array = np.asarray(masks)
    if array.dtype != np.bool_:
        if array.dtype.kind not in "biu" or not np.isin(array, (0, 1)).all():
            raise InvalidArgumentError(
                f"masks must be boolean (or 0/1), got dtype {array.dtype}", argument="masks"
            )
        array = array.astype(bool)
    if array.ndim != 2 or array.shape[1] != n:
        raise InvalidArgumentError(
            f"masks must have shape [m, {n}], got {array.shape}", argument="masks"
        )
    return np.ascontiguousarray(array)


def shapiq_values(
    values: dict[Key, float],
    baseline: float,
    *,
    index: str,
    max_order: int,
    n_players: int,
    estimated: bool,
    budget: int | None,
) -> Any:
    """A ``shapiq.InteractionValues`` (shapiq ≥ 1.3) of ``values`` with ``()`` holding the
    baseline, built by keyword with a values array and an ``interaction_lookup``."""
    try:
        from shapiq import InteractionValues
    except ImportError as err:
        raise ImportError("to_shapiq() needs the shapiq package: `pip install shapiq`") from err
    keys: list[Key] = [(), *values]
    array = np.array([baseline, *values.values()], dtype=np.float64)
    return InteractionValues(
        values=array,
        index=index,
        max_order=max_order,
        n_players=n_players,
        min_order=0,
        interaction_lookup={key: j for j, key in enumerate(keys)},
        estimated=estimated,
        estimation_budget=budget,
        baseline_value=baseline,
    )
