"""The :class:`Explainer`: Shapley values of any tabular model by a sampling estimator.

It follows plan → query → estimate: the compiled core plans a design (the coalitions to
evaluate), Python evaluates the game on them, and the core turns the values into Shapley values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ferroshap import _core, validation
from ferroshap._core import InvalidArgumentError
from ferroshap.groups import GroupsArgument, read_groups
from ferroshap.maskers.tabular import Masker, check_masker, player_names
from ferroshap.query.backend import (
    DEFAULT_MAX_BYTES,
    ArrayBackend,
    check_n_jobs,
    limited,
    within_limit,
)
from ferroshap.query.chunks import fingerprint
from ferroshap.query.frames import Table, frame_model, from_polars, read_rows_like, read_table
from ferroshap.query.games import LINKS, RawGame, TabularGame, resolve_model
from ferroshap.query.loop import QueryOptions
from ferroshap.results.explanation import Explanation
from ferroshap.sampling.auto import AUTO, resolve
from ferroshap.sampling.engine import (
    DesignKey,
    NullPlayers,
    PlannedDesigns,
    Ran,
    check_budget,
    check_method,
    check_tabular_memory,
    design_masks,
    diagnostics,
    estimate_values,
    expand_masks,
    game_values,
    group_rows,
    linked,
)
from ferroshap.sampling.proxy_adjusted import check_cross_fit
from ferroshap.validation import (
    BUDGET_LIMIT,
    Seed,
    check_choice,
    check_flag,
    check_int,
    check_int_seed,
    check_names,
    check_seed,
    draw_seed,
)

__all__ = ["Explainer"]


class Explainer:
    """Shapley values of any tabular model by a sampling estimator.

    The game is interventional: ``v_x(S) = mean_b f(x_S, b_notS)`` over the background rows
    ``b``, so each coalition costs ``len(background)`` model rows. One design (set of coalitions)
    serves every explained row of a call, and its factorization is shared.

    Parameters
    ----------
    model
        The model. A classifier (scikit-learn, LightGBM, XGBoost, a ``Pipeline`` ending in one)
        is called through ``predict_proba`` and every class is explained; another object with a
        ``predict`` method through ``predict``; otherwise the object itself must be callable
        (see ``model_output``). It receives a batch ``[batch, n]`` like the background: a NumPy
        array in the data's dtype, or a frame of the background's library with its columns
        and dtypes, and returns ``[batch]`` or ``[batch, k]``.
    background
        Background rows: a 2-D array or a polars / pandas DataFrame (a polars LazyFrame is
        collected; column names become the feature names). String, categorical, boolean and
        datetime columns are masked like numbers, cell by cell. A single row gives the
        single-baseline game. Not used with ``masker``.
    masker
        Instead of ``background``: a masker that turns the model and each explained input into
        a game, e.g. ``fs.maskers.Text()`` (players are the words of a passage, the model a
        callable on ``list[str]``) or ``fs.maskers.Image(patch_size=4)`` (players are patches).
        Each call then explains one input, and the result is labelled with the masker's player
        names (``feature_names``, and ``data`` holds them too).
    method
        ``"auto"`` (the default): a design chosen by the number of features and the budget
        (:func:`ferroshap.sampling.auto.choose`), then from ``max(3n, 30)`` coalitions on (up to 16
        features; ``max(4n, 42)`` beyond) the estimator that predicts held-out ones best (see
        ``docs/auto.md``); :attr:`Explanation.estimator` names what ran and
        ``diagnostics["held_out_errors"]`` the candidates' scores. Or one of
        :data:`ferroshap.METHODS`: ``"kernel"``, ``"kernel-wor"``, ``"leverage"``,
        ``"modified-l2"``, ``"unbiased"``, ``"permutation"`` or ``"exact"`` (full enumeration,
        ignores ``budget``, at most :data:`ferroshap._core.MAX_EXACT_PLAYERS` features); or one of
        :data:`ferroshap.PROXY_METHODS`: ``"proxy-leverage"`` (LeverageSHAP adjusted by a LightGBM
        proxy, usually the most accurate; needs ``lightgbm``) or ``"tree-msr"`` (Tree MSR, a
        baseline). See :mod:`ferroshap.sampling.proxy_adjusted`; a budget below ``max(4 n, 42)``
        falls back to ``"leverage"`` with a ``UserWarning``.
    budget
        Distinct coalitions evaluated per row, ∅ and the grand coalition included; at least 2,
        and at least ``2 n`` for ``"permutation"``. With ``paired=True`` an odd budget is rounded
        down. ``budget >= 2**n`` computes exact values by enumeration, with a ``UserWarning``
        (none for ``"auto"``, which then chooses enumeration).
    paired
        Sample coalitions together with their complements.
    seed
        An int in ``[0, 2**64)`` or a ``numpy.random.Generator``; a generator is drawn from once
        per call, so successive calls use fresh designs.
    batch_size
        Model rows per model call (rounded down to whole coalitions, overriding ``max_bytes``).
        By default about 4 MiB of inputs per call (cache-sized), never more than ``max_bytes``.
    feature_names
        Names of the ``n`` features; by default the background's (or X's) DataFrame columns, else
        ``x0 .. x{n-1}``.
    progress
        Show a tqdm progress bar (needs ``tqdm``).
    groups
        Feature groups, each one player: a dict name → columns (names or positions) or a list
        of column lists (named ``g0, g1, ...``). Features in no group stay players of their
        own, after the groups; values are then ``(rows, players)`` and ``feature_names`` the
        player names. See :mod:`ferroshap.groups`.
    per_row_design
        Plan one design per explained row (stream ``row_index + 1`` of the seed) instead of one
        shared design, so estimation errors are independent across rows.
    max_bytes
        Cap on the bytes of masked model inputs built at once (default 256 MiB).
    model_output
        How to call ``model``: ``"auto"`` (``predict_proba`` for a classifier, else ``predict``
        if it has one, else call it), ``"call"``, ``"predict"`` (a classifier's hard labels),
        ``"predict_proba"`` or ``"decision_function"``.
    link
        ``"identity"`` or ``"logit"``: explain ``link(mean_b f(x_S, b_notS))``, e.g. the
        log-odds of a classifier's averaged probability (as ``shap.KernelExplainer`` does).
    output_index
        Explain only this column of a model returning ``[batch, k]``.
    cross_fit
        ``method="tree-msr"`` only: fit its proxy on ``cross_fit`` folds of coalition pairs
        (each pair's residual from the proxy that did not see it) instead of on all samples.
    max_memory
        Cap in bytes on the estimated peak memory (default: half of the available memory); above
        it an ``InvalidArgumentError`` naming ``n``, ``budget`` and the estimate is raised before
        anything large is allocated.
    n_jobs
        Threads for the parallel steps (proxy fits of many rows and outputs, LightGBM, the
        compiled core's parallel parts, filling the next chunk's model inputs while the model
        runs): ``None`` or ``-1`` (default: every CPU this process may use), or at most this
        many. Results do not depend on it.

    Notes
    -----
    Arrays of PyTorch, CuPy, JAX or any array-API library stay in that library and on their
    device: masked inputs are built there and only background-averaged outputs come back to the
    host, once per chunk. ``background`` and ``X`` must then be of the same library and device.
    A ``torch.nn.Module`` gets NumPy data moved to its parameters' device and dtype, and is
    called under ``torch.inference_mode()``.

    Examples
    --------
    >>> import numpy as np, ferroshap as fs
    >>> rng = np.random.default_rng(0)
    >>> background, X = rng.normal(size=(50, 10)), rng.normal(size=(3, 10))
    >>> w = np.arange(10.0)
    >>> ex = fs.Explainer(lambda z: z @ w, background, budget=64)(X)
    >>> np.allclose(ex.values, w * (X - background.mean(0)))
    True
    """

    def __init__(
        self,
        model: Any,
        background: Any = None,
        *,
        masker: Masker | None = None,
        method: str = AUTO,
        budget: int = 2048,
        seed: Seed = 0,
        batch_size: int | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        progress: bool = False,
        model_output: str = "auto",
        output_index: int | None = None,
        paired: bool = True,
        link: str = "identity",
        feature_names: Sequence[str] | None = None,
        groups: GroupsArgument | None = None,
        per_row_design: bool = False,
        cross_fit: int | None = None,
        max_memory: int | None = None,
        n_jobs: int | None = None,
    ) -> None:
        self.n_jobs = check_n_jobs(n_jobs)
        if max_memory is not None:
            validation.resolve_max_memory(max_memory)
        self.max_memory = max_memory
        self.link = check_choice(link, "link", LINKS)
        self._model = resolve_model(model, model_output, output_index)
        self.masker = masker
        self.seed = check_seed(seed)
        self.options = QueryOptions.checked(batch_size, max_bytes, progress)
        self.paired = check_flag(paired, "paired")
        self.per_row_design = check_flag(per_row_design, "per_row_design")
        self._designs = PlannedDesigns()
        if masker is not None:
            self._init_masker(masker, background, method, budget, feature_names, groups)
            self.cross_fit = check_cross_fit(cross_fit, method)
            return
        if background is None:
            raise InvalidArgumentError(
                "background is required (the rows that replace masked features), unless a "
                "masker is given (masker=fs.maskers.Text(), Image(...), ...)",
                argument="background",
            )
        self._table: Table | None = read_table(background, "background")
        self._background = self._model.place(self._table.values)
        host = self._table.numpy()
        self._null_players = NullPlayers(host)  # read once per explainer
        n_features = self._table.n_columns
        if feature_names is not None:
            feature_names = check_names(feature_names, "feature_names")
            if len(feature_names) != n_features:
                raise InvalidArgumentError(
                    f"feature_names has {len(feature_names)} names but background has "
                    f"{n_features} features",
                    argument="feature_names",
                )
        names = feature_names or self._table.names
        self.groups = None if groups is None else read_groups(groups, names, n_features)
        self.feature_names = names if self.groups is None else self.groups.names
        n = self.n_players
        check_method(method, n)
        self.method = method
        self.budget = check_budget(budget, method, n)
        self.cross_fit = check_cross_fit(cross_fit, method)
        self._recipe = resolve(method, n, self.budget, self.paired)

    def _init_masker(
        self,
        masker: Masker,
        background: Any,
        method: str,
        budget: Any,
        feature_names: Sequence[str] | None,
        groups: GroupsArgument | None,
    ) -> None:
        """Settings of an explainer whose games come from ``masker``; the players (and so
        ``n``) are known only per explained input."""
        check_masker(masker)
        for name, value in (
            ("background", background),
            ("feature_names", feature_names),
            ("groups", groups),
        ):
            if value is not None:
                raise InvalidArgumentError(
                    f"{name} cannot be combined with masker=: the masker decides the players "
                    "and what replaces them",
                    argument=name,
                )
        check_method(method, 1)
        self._table = None
        self.groups = None
        self.feature_names = None
        self.method = method
        self.budget = check_int(budget, "budget", 2, BUDGET_LIMIT)

    @property
    def n_players(self) -> int:
        """Number of players ``n``: the features, or the groups (and ungrouped features)."""
        if self._table is None:
            raise InvalidArgumentError(
                "n_players: with a masker the players depend on the explained input (see the "
                "masker's player_names(x))"
            )
        return self._table.n_columns if self.groups is None else self.groups.n_players

    def dataset_values(
        self, columns: list[str]
    ) -> tuple[list[str], Callable[[Any], tuple[np.ndarray, np.ndarray]]]:
        """Output names and ``frame -> (phi, base_values)`` for the dataset writers
        (:func:`ferroshap.datasets.parquet.frame_explainer`): ``columns`` are the features, in
        order."""
        check_int_seed(self)
        if self._table is None:
            raise InvalidArgumentError(
                "explainer: datasets need an explainer with a background, not a masker",
                argument="explainer",
            )
        n_inputs = self._table.n_columns
        if len(columns) != n_inputs:
            raise InvalidArgumentError(
                f"columns: {len(columns)} columns for an explainer of {n_inputs} features",
                argument="columns",
            )
        players = columns if self.groups is None else self.groups.names
        schema = self._table.schema

        def values(frame: Any) -> tuple[np.ndarray, np.ndarray]:
            explanation = self(from_polars(frame.select(columns), schema))
            if explanation.values.ndim != 2:
                raise InvalidArgumentError(
                    "model: datasets need a model with one output (use output_index=...)",
                    argument="output_index",
                )
            return explanation.values, explanation.base_values

        return [f"phi_{p}" for p in players], values

    def dataset_settings(self) -> dict[str, Any]:
        """What the values of :meth:`dataset_values` depend on besides the model and the rows,
        recorded by :func:`ferroshap.datasets.parquet.explain_parquet` to check a resumed run: the
        estimator's settings, the players and a fingerprint of the background."""
        assert self._table is not None, "dataset_values refuses a masker"
        return {
            "engine": "Explainer",
            "method": self.method,
            "budget": self.budget,
            "seed": self.seed,
            "paired": self.paired,
            "per_row_design": self.per_row_design,
            "link": self.link,
            "cross_fit": self.cross_fit,
            "players": self.feature_names,
            "groups": None if self.groups is None else self.groups.members,
            "background": fingerprint(self._table.values),
        }

    def _column_names(self, table: Table) -> list[str]:
        """Names of the model's input columns, for the groups of a result."""
        assert self._table is not None
        names = self._table.names or table.names
        return names or [f"x{j}" for j in range(self._table.n_columns)]

    def __call__(self, X: Any) -> Explanation:
        """Explain the rows of ``X`` (2-D array or DataFrame; a 1-D ``X`` is one row).

        With a masker, ``X`` is one input of that masker (a passage for ``Text``, an image for
        ``Image``) and the result has one row, labelled with the masker's player names.

        Returns
        -------
        Explanation
            ``values`` of shape ``(rows, n)`` or ``(rows, n, k)``, ``base_values``, ``data`` etc.
        """
        with limited(self.n_jobs):
            return self._explain(X)

    def _explain(self, X: Any) -> Explanation:
        """:meth:`__call__` within the explainer's ``n_jobs``."""
        if self._table is None:
            return self._explain_masked(X)
        table = read_rows_like(X, self._table, "X", "background")
        x = self._model.place(table.values)
        x_backend, background_backend = ArrayBackend.of(x), ArrayBackend.of(self._background)
        if not x_backend.same_as(background_backend):
            raise InvalidArgumentError(
                f"X is a {x_backend.describe()} array but background is "
                f"{background_backend.describe()}; pass both from the same library and device",
                argument="X",
            )
        n = self.n_players
        game = TabularGame(
            frame_model(self._model.function, self._table.schema),
            self._background,
            x,
            options=self.options,
            link=self.link,
        )
        rows = int(x.shape[0])
        k = int(np.prod(game.output_shape, dtype=np.int64))
        data = np.array(table.numpy())
        varying = self._null_players.varying(data, self.groups)
        # one pattern's design at a time; read in chunks only when it is the whole game's
        whole_masks = self.per_row_design or not varying.all()
        designs = rows if self.per_row_design else 1
        check_tabular_memory(self._recipe, self.budget, game, designs, whole_masks, self.max_memory)
        patterns, pattern_of = group_rows(varying)
        seed = draw_seed(self.seed)
        phi = np.zeros((rows, k, n))
        error_parts: list[tuple[Any, Callable[[], np.ndarray]]] = []
        estimators: dict[str, None] = {}
        ran: list[Ran] = []
        evaluations = 0
        for p, pattern in enumerate(patterns):
            players = np.flatnonzero(pattern)
            chosen = np.flatnonzero(pattern_of == p)
            if len(players) == 0:  # every feature at its background value: all values are 0
                continue
            part, part_errors, designs, part_ran = self._explain_players(
                game, players, chosen, seed, k
            )
            where = chosen[:, None, None], np.arange(k)[None, :, None], players[None, None, :]
            phi[where] = part
            error_parts.append((where, part_errors))
            ran += part_ran
            estimators.update(dict.fromkeys(r.estimator for r in part_ran))
            evaluations = max(evaluations, *(design.n_coalitions for design in designs))
        phi = np.ascontiguousarray(phi.transpose(0, 2, 1))  # [rows, n, k]

        def standard_errors() -> np.ndarray:
            errors = np.zeros((rows, k, n))
            for where, part_errors in error_parts:
                errors[where] = part_errors()
            errors = np.ascontiguousarray(errors.transpose(0, 2, 1))
            return errors if game.output_shape else errors[:, :, 0]

        return Explanation(
            values=phi if game.output_shape else phi[:, :, 0],
            base_values=np.broadcast_to(game.empty_value, (rows, *game.output_shape)).copy(),
            data=data,
            feature_names=self.feature_names or table.names or [f"x{i}" for i in range(n)],
            groups=None if self.groups is None else self.groups.columns(self._column_names(table)),
            frame=table.frame,
            n_evaluations=evaluations,
            method=self.method,
            budget=self.budget,
            estimator=", ".join(estimators) or "exact",
            diagnostics=diagnostics(ran),
            errors_source=within_limit(standard_errors),
        )

    def _explain_players(
        self, game: TabularGame, players: np.ndarray, rows: np.ndarray, seed: int, k: int
    ) -> tuple[np.ndarray, Callable[[], np.ndarray], list[_core.Design], list[Ran]]:
        """Shapley values ``[len(rows), k, len(players)]`` of the explained ``rows`` on the game
        of ``players`` (the others held at the row's values), their standard errors (same
        shape), the designs and what ran on each."""
        n, n_players = self.n_players, len(players)
        every = n_players == n
        recipe = (
            self._recipe if every else resolve(self.method, n_players, self.budget, self.paired)
        )
        streams = [int(r) + 1 for r in rows] if self.per_row_design else [0]
        warn = every and self.method != AUTO  # a smaller game's enumeration is our choice
        key = DesignKey(recipe.planned, n_players, self.budget, seed, self.paired, tuple(streams))
        designs = self._designs.plan(key, warn)

        def embed(masks: np.ndarray) -> np.ndarray:
            if every:
                return expand_masks(masks, self.groups)
            full = np.ones((len(masks), n), dtype=bool)
            full[:, players] = masks
            return expand_masks(full, self.groups)

        if self.per_row_design:
            masks = [embed(design.masks()) for design in designs]
            sizes = [len(m) for m in masks]
            values = game.evaluate(np.concatenate(masks), rows=np.repeat(rows, sizes))
            per_design = np.split(values, np.cumsum(sizes)[:-1])
        elif every and len(rows) == game.n_rows:
            per_design = [game.evaluate(design_masks(designs[0], self.groups))]
        else:
            masks = embed(designs[0].masks())
            per_row = [game.evaluate(masks, rows=np.full(len(masks), r)) for r in rows]
            per_design = [np.concatenate(per_row, axis=1)]  # [m, rows * k], row-major
        phis, errors, choices = estimate_values(designs, per_design, recipe.proxy, self.cross_fit)
        shape = (len(rows), k, n_players)

        def standard_errors() -> np.ndarray:
            return np.stack([error() for error in errors]).reshape(shape)

        ran = [Ran.of(recipe, d, c) for d, c in zip(designs, choices, strict=True)]
        return np.stack(phis).reshape(shape), standard_errors, designs, ran

    def _explain_masked(self, x: Any) -> Explanation:
        """Shapley values of the masker's game at input ``x``: one row."""
        assert self.masker is not None
        function, n = self.masker.game(self._model, x)
        names = player_names(self.masker, x, n) or [f"x{i}" for i in range(n)]
        check_method(self.method, n)
        budget = check_budget(self.budget, self.method, n)
        raw = RawGame(linked(function, self.link), n, options=self.options)
        phi, errors, design, ran, values = game_values(
            raw,
            None,
            self.method,
            budget,
            self.seed,
            self.paired,
            self.cross_fit,
            self.max_memory,
            "Explainer",
        )
        empty = values[_core.EMPTY_ROW]
        single = raw.output_shape == ()
        return Explanation(
            values=phi[:1] if single else phi.T[None],
            base_values=empty[:1] if single else empty[None],
            data=np.array([names], dtype=object),
            feature_names=names,
            n_evaluations=design.n_coalitions,
            method=self.method,
            budget=budget,
            estimator=ran.estimator,
            diagnostics=diagnostics([ran]),
            errors_source=within_limit(lambda: errors()[:1] if single else errors().T[None]),
        )
