"""ProxySPEX: sparse interactions from a LightGBM proxy of masked model outputs.

Plan → query → estimate (docs/proxyspex.md): the core plans ``budget`` distinct uniform random
coalitions (∅ and N first, the last ``validation_fraction`` for validation); the game is queried
on every one; a LightGBM proxy (:mod:`ferroshap.interactions.proxy`) is fitted with early
stopping, the core reads its trees exactly as a sparse Fourier spectrum and chooses, in each
basis, how many of the largest terms to keep; the final surrogate
(:mod:`ferroshap.interactions.surrogate`) refits them on every mask, held to the game's values
at ∅ and N, and gives the requested interaction index.
"""

from __future__ import annotations

import math
import numbers
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ferroshap import _core, validation
from ferroshap._core import FIRST_SAMPLED_ROW, InvalidArgumentError, InvalidTypeError
from ferroshap.groups import GroupsArgument, read_groups
from ferroshap.interactions.exact import all_masks
from ferroshap.interactions.proxy import (
    DEFAULT_PROXY_PARAMS,
    PARALLEL_CELLS,
    fit_proxy,
    proxy_learning_rate,
    proxy_spectrum,
    proxy_threads,
)
from ferroshap.interactions.surrogate import (
    SELECTION_BASES,
    blend_name,
    blend_weight,
    fitted_extremes,
    refit_blend,
)
from ferroshap.maskers.tabular import Baseline, Masker, check_masker, player_names
from ferroshap.query.backend import DEFAULT_MAX_BYTES, check_n_jobs, in_threads, limited
from ferroshap.query.chunks import fingerprint
from ferroshap.query.games import RawGame, resolve_model
from ferroshap.query.loop import QueryOptions, single_output
from ferroshap.results.interactions import INDICES, Interactions
from ferroshap.scores import r_squared
from ferroshap.validation import (
    BUDGET_LIMIT,
    ORDER_LIMIT,
    check_callable,
    check_choice,
    check_flag,
    check_int,
    check_int_seed,
    check_names,
    check_real,
    check_seed,
    draw_seed,
    one_spelling,
)

__all__ = ["ProxySPEX"]

REFIT_PROXY_CELLS = PARALLEL_CELLS
"""Masks x players from which the proxy is not fitted a second time on all masks, by default
(the second fit would take seconds there); docs/proxyspex.md, step 6."""

REFIT_PROXY_R2 = 0.98
"""Validation R² of the first proxy from which it is not fitted a second time, by default (the
ranking of the terms is settled there); docs/proxyspex.md, step 6."""

SPARSE_RESIDUAL = 0.9
"""By default the proxy-scaled ridge replaces the sparse fit where the proxy is short of data,
unless the sparse fit's validation residual (1 - R²) is below this share of the ridge's;
docs/proxyspex.md, step 7."""

MIN_TRAINING = 32
"""Fewest training masks (beyond the validation split) a budget must leave."""

MIN_VALIDATION = 16
"""Fewest validation masks."""


class ProxySPEX:
    """Sparse interaction values of a game or model via a LightGBM proxy (ProxySPEX).

    Parameters
    ----------
    game_or_model
        Without ``masker``: a game ``game(masks: bool[k, n]) -> float[k]`` on ``n`` players.
        With ``masker``: a model (callable, or an object with ``predict``) that the masker turns
        into a game for each explained input.
    n_players, n
        Number of players of a raw game (required without ``masker``, ignored with one):
        either name, not both.
    masker
        ``fs.maskers.Baseline(rows)`` for tabular models, ``fs.maskers.Tokens(mask_id)`` for
        token-id sequence models, ``fs.maskers.Text()`` for models of text (players are
        words), ``fs.maskers.Image(patch_size)`` for image models (players are patches);
        their own ``batch_size``, ``max_bytes`` and ``progress`` govern the model calls, and
        results are labelled with their player names.
    budget
        Distinct coalitions evaluated, ∅, N and the validation split included. At least
        ``validation + 32``. A budget of ``2**n`` or more computes exact values (``UserWarning``).
    seed
        An int or a ``numpy.random.Generator``; the same int gives the same values bit for bit.
    batch_size, max_bytes, progress
        Coalitions per call of the game (by default as many as ``max_bytes`` of masks allow,
        usually all at once) and a tqdm progress bar over them.
    model_output, output_index
        With a masker: how the model is called, as for :class:`ferroshap.Explainer` (the game
        needs one output: pick a classifier's class with ``output_index``). A raw game takes
        neither.
    max_order
        Largest interaction order reported (≥ 1). The proxy's trees are at least this deep.
    index
        One of ``fs.INDICES`` (``"k-SII"``, ``"SII"``, ``"FSII"``, ``"Moebius"``, ...).
    validation_fraction
        Share of the budget held out for early stopping and the support size (≥ 16 masks).
    proxy_params
        Overrides of :data:`DEFAULT_PROXY_PARAMS` (LightGBM parameter names), including
        ``learning_rate`` (default :func:`proxy_learning_rate` of ``n``) and ``num_threads``
        (default :func:`proxy_threads` of the training data's size).
    feature_names
        Player names (default: the masker's column names, if any).
    groups
        Feature groups, each one player (a dict name → columns or a list of column lists, see
        :mod:`ferroshap.groups`); the interactions are then between groups.
    max_memory
        Cap in bytes on the estimated peak memory (default: half of the available memory,
        see :mod:`ferroshap.validation`); above it an ``InvalidArgumentError`` naming ``n``,
        ``budget`` and the estimate is raised before anything large is allocated.
    refit_proxy
        Once the support sizes and the blend are chosen on the validation split, fit the proxy
        again on every mask (as many rounds as early stopping kept, scaled by the share of
        masks it gains) and take the surrogate's terms from that proxy. ``None`` (default)
        does so when the first proxy's validation R² is below :data:`REFIT_PROXY_R2` (it is
        short of data) and the masks x players are below :data:`REFIT_PROXY_CELLS` (the second
        fit is cheap).
    ridge
        Refit the surrogate as a ridge over the proxy's Fourier terms (up to 1 024, the largest
        first), each term's penalty scaled by the proxy's own |coefficient|, instead of least
        squares on the top ones: nothing is cut, small proxy terms are shrunk. ``None``
        (default) tries it under the same condition as ``refit_proxy`` and keeps it unless the
        sparse fit is clearly better on the validation split (:data:`SPARSE_RESIDUAL`);
        ``True`` always uses it, ``False`` never. ``iv.diagnostics["fit"]`` says which ran.
    efficient
        Shapley values that sum to the game's ``v(N) - v(∅)`` (default): the final fit is held
        to ``f(∅) = v(∅)`` and ``f(N) = v(N)`` (so the efficient indices ``k-SII``, ``STII``,
        ``FSII`` sum to it too); where ∅ or N is an outlier (text under a transformer) the plain
        fit is corrected at ∅ and N alone (``iv.corners``), keeping its faithfulness elsewhere.
        ``False``: the values sum to the surrogate's ``f(N) - f(∅)``
        (``iv.diagnostics["efficiency_gap"]``). Measurements: docs/proxyspex.md, step 8.
    n_jobs
        Threads for the proxy fits, the support selections and the compiled core: ``None`` or
        ``-1`` (default: every CPU this process may use), or at most this many (also the
        default ``num_threads`` of the proxy). Results depend on it only by rounding (~1e-13
        relative: the refit's linear algebra splits its sums by thread count).

    Examples
    --------
    >>> import numpy as np, ferroshap as fs
    >>> game = lambda m: 2.0 * m[:, 0] * m[:, 1] - m[:, 2]
    >>> iv = fs.ProxySPEX(game, n_players=12, budget=400, index="Moebius", seed=0).explain()
    >>> {k: round(v, 6) for k, v in iv.values.items()}  # doctest: +SKIP
    {(2,): -1.0, (0, 1): 2.0}
    """

    feature_names: list[str] | None
    groups: GroupsArgument | None
    n_validation: int
    proxy_params: dict[str, Any]

    def __init__(
        self,
        game_or_model: Any,
        n_players: int | None = None,
        *,
        n: int | None = None,
        masker: Masker | None = None,
        budget: int = 2000,
        seed: int | np.random.Generator = 0,
        batch_size: int | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        progress: bool = False,
        model_output: str = "auto",
        output_index: int | None = None,
        max_order: int = 2,
        index: str = "k-SII",
        validation_fraction: float = 0.2,
        proxy_params: dict[str, Any] | None = None,
        feature_names: Sequence[str] | None = None,
        groups: GroupsArgument | None = None,
        max_memory: int | None = None,
        refit_proxy: bool | None = None,
        ridge: bool | None = None,
        efficient: bool = True,
        n_jobs: int | None = None,
    ) -> None:
        n_players = one_spelling(n_players, "n_players", n, "n")
        self.n_jobs = check_n_jobs(n_jobs)
        self.refit_proxy = None if refit_proxy is None else check_flag(refit_proxy, "refit_proxy")
        self.ridge = None if ridge is None else check_flag(ridge, "ridge")
        self.efficient = check_flag(efficient, "efficient")
        if max_memory is not None:
            validation.resolve_max_memory(max_memory)
        self.max_memory = max_memory
        if masker is None:
            check_callable(game_or_model, "game_or_model")
            if n_players is None:
                raise InvalidArgumentError(
                    "n_players (the number of players) is required for a raw game (without "
                    "masker=)",
                    argument="n_players",
                )
            for name, given in (
                ("model_output", model_output != "auto"),
                ("output_index", output_index is not None),
            ):
                if given:
                    raise InvalidArgumentError(
                        f"{name} applies to a model explained through a masker; a raw game "
                        "returns one value per coalition itself",
                        argument=name,
                    )
            self._model: Any = game_or_model
            self.n_players: int | None = check_int(n_players, "n_players", 1)
        else:
            check_masker(masker)
            self._model = resolve_model(game_or_model, model_output, output_index, "game_or_model")
            self.n_players = None if n_players is None else check_int(n_players, "n_players", 1)
        self.options = QueryOptions.checked(batch_size, max_bytes, progress)
        self.masker = masker
        self.budget = check_int(budget, "budget", 2, BUDGET_LIMIT)
        self.max_order = check_int(max_order, "max_order", 1, ORDER_LIMIT)
        self.index = check_choice(index, "index", INDICES)
        self.seed = check_seed(seed)
        self.validation_fraction = check_real(
            validation_fraction, "validation_fraction", above=0.0, below=1.0
        )
        self.n_validation = max(MIN_VALIDATION, round(self.validation_fraction * self.budget))
        if self.budget < self.n_validation + MIN_TRAINING:
            raise InvalidArgumentError(
                f"budget must be at least {self.n_validation + MIN_TRAINING} "
                f"({self.n_validation} validation masks plus {MIN_TRAINING} for training), "
                f"got {self.budget}",
                argument="budget",
            )
        if proxy_params is not None and not isinstance(proxy_params, dict):
            raise InvalidTypeError(
                f"proxy_params must be a dict, got {type(proxy_params).__name__}",
                argument="proxy_params",
            )
        self.proxy_params = {**DEFAULT_PROXY_PARAMS, **(proxy_params or {})}
        depth = self.proxy_params["max_depth"]
        if isinstance(depth, bool) or not isinstance(depth, numbers.Integral):
            raise InvalidTypeError(
                f"proxy_params['max_depth'] must be an int, got {type(depth).__name__}",
                argument="proxy_params",
            )
        self.proxy_params["max_depth"] = max(int(depth), self.max_order)
        self.feature_names = (
            None if feature_names is None else check_names(feature_names, "feature_names")
        )
        self.groups = groups
        if groups is not None and self.n_players is not None:  # fail early on a raw game
            read_groups(groups, self.feature_names, self.n_players)

    def explain(self, x: Any = None) -> Interactions:
        """Interaction values of the game (no ``x``) or of the model at input ``x``.

        Returns
        -------
        Interactions
            ``values``, ``base_values``, ``shapley_values()`` (from the whole surrogate), and
            ``diagnostics``: proxy and surrogate validation R², support size and basis, number
            of trees, and the seconds spent in model calls, proxy fit, extraction and refit.
        """
        if self.masker is None:
            if x is not None:
                raise InvalidArgumentError(
                    "x must be None for a raw game (pass a masker to use x)", argument="x"
                )
            game, n = self._model, self.n_players
        else:
            if x is None:
                raise InvalidArgumentError(
                    "x (the input to explain) is required with a masker", argument="x"
                )
            game, n = self.masker.game(self._model, x)
        assert n is not None
        estimate = validation.proxyspex_estimate(n, self.budget)
        validation.check_memory("ProxySPEX", estimate, self.max_memory, n=n, budget=self.budget)
        names = self.feature_names or (
            None if self.masker is None else player_names(self.masker, x, n)
        )
        if names is not None and len(names) != n:
            raise InvalidArgumentError(
                f"feature_names has {len(names)} names for {n} players", argument="feature_names"
            )
        if self.groups is not None:
            grouped = read_groups(self.groups, names, n)
            game, n, names = grouped.game(game), grouped.n_players, grouped.names
        raw = RawGame(game, n, options=self.options)
        if _core.covers_all(n, self.budget) and n <= _core.MAX_TABLE_PLAYERS:
            warnings.warn(
                f"budget ≥ 2^n (budget={self.budget}, n={n}): computing exact interaction values "
                "by enumeration",
                UserWarning,
                stacklevel=2,
            )
            table = self._single_values(raw.evaluate(all_masks(n)))
            return Interactions.from_surrogate(
                _core.moebius_transform(table, n),
                self.index,
                self.max_order,
                method="proxyspex",
                estimator="exact",
                budget=self.budget,
                n_evaluations=2**n,
                diagnostics={"estimated": False},
                feature_names=names,
            )
        with limited(self.n_jobs):
            return self._estimate(raw, n, names)

    def dataset_values(
        self, columns: list[str]
    ) -> tuple[list[str], Callable[[Any], tuple[np.ndarray, np.ndarray]]]:
        """Output names and ``frame -> (phi, base_values)`` for the dataset writers: one fit
        per row, reporting the surrogate's Shapley values; ``columns`` are the features."""
        check_int_seed(self)
        if self.masker is None:
            raise InvalidArgumentError(
                "explainer: a ProxySPEX on a raw game has no rows to explain; give it a masker"
            )

        def values(frame: Any) -> tuple[np.ndarray, np.ndarray]:
            rows = frame.select(columns).to_numpy()
            explained = [self.explain(row).shapley_values() for row in rows]
            phi = np.concatenate([ex.values for ex in explained])
            return phi, np.concatenate([ex.base_values for ex in explained])

        return [f"phi_{c}" for c in columns], values

    def dataset_settings(self) -> dict[str, Any]:
        """What the values of :meth:`dataset_values` depend on besides the model and the rows,
        recorded by :func:`ferroshap.datasets.parquet.explain_parquet` to check a resumed run: the
        fit's settings, the masker's type and a fingerprint of a
        :class:`~ferroshap.maskers.Baseline` masker's rows."""
        return {
            "engine": "ProxySPEX",
            "budget": self.budget,
            "seed": self.seed,
            "max_order": self.max_order,
            "index": self.index,
            "n_validation": self.n_validation,
            "proxy_params": self.proxy_params,
            "refit_proxy": self.refit_proxy,
            "ridge": self.ridge,
            "groups": self.groups,
            "masker": type(self.masker).__name__,
            "background": (
                fingerprint(self.masker.rows) if isinstance(self.masker, Baseline) else None
            ),
        }

    def _single_values(self, values: np.ndarray) -> np.ndarray:
        """The game's values ``[m]`` from ``[m, k]``, or an error naming the game (a raw game)
        or ``output_index`` (a model with several outputs, through the masker)."""
        if self.masker is None:
            return single_output(values, "the game", "coalition", "game_or_model")
        return single_output(values, "the model", "masked input", "output_index")

    def _estimate(self, raw: RawGame, n: int, names: list[str] | None) -> Interactions:
        times: dict[str, float] = {}
        masks = _core.plan_masks(n, self.budget, draw_seed(self.seed))
        start = time.perf_counter()
        values = self._single_values(raw.evaluate(masks))
        times["seconds_game"] = time.perf_counter() - start

        extremes, planned = (masks[:FIRST_SAMPLED_ROW], values[:FIRST_SAMPLED_ROW]), len(masks)
        kept = fitted_extremes(values)
        fitted = np.concatenate([np.flatnonzero(kept), np.arange(FIRST_SAMPLED_ROW, planned)])
        masks, values = masks[fitted], values[fitted]
        split = len(masks) - self.n_validation
        train = (masks[:split], values[:split])
        validation = (masks[split:], values[split:])
        start = time.perf_counter()
        params = {
            "learning_rate": proxy_learning_rate(n),
            "num_threads": proxy_threads(train[0].size),
            **self.proxy_params,
        }
        booster = fit_proxy(params, train, validation)
        times["seconds_proxy"] = time.perf_counter() - start
        proxy_r2 = r_squared(validation[1], booster.predict(validation[0].astype(np.float64)))

        start = time.perf_counter()
        spectrum = proxy_spectrum(booster, n)
        times["seconds_extraction"] = time.perf_counter() - start

        start = time.perf_counter()
        # short of data: the proxy's ranking is uncertain, and a second fit or a ridge is cheap
        short = masks.size < REFIT_PROXY_CELLS and proxy_r2 < REFIT_PROXY_R2
        try_ridge = self.ridge or (self.ridge is None and short)
        refit_proxy = short if self.refit_proxy is None else self.refit_proxy
        final = dict(params)
        if "num_threads" not in self.proxy_params:
            final["num_threads"] = proxy_threads(masks.size)
        # the second proxy (on every mask, as many rounds per mask as the first kept) needs only
        # the first's tree count: single-threaded, it runs beside the selections
        rounds = math.ceil((booster.best_iteration or booster.num_trees()) * len(masks) / split)
        beside = refit_proxy and final["num_threads"] == 1

        def second_proxy() -> tuple[Any, float]:
            began = time.perf_counter()
            return fit_proxy(final, (masks, values), rounds=rounds), time.perf_counter() - began

        calls: list[Callable[[], Any]] = [
            lambda basis=basis: _core.select_support(spectrum, basis, *train, *validation)
            for basis in SELECTION_BASES
        ]
        if try_ridge:
            calls.append(lambda: _core.select_ridge(spectrum, *train, *validation))
        # the fit first: it is the longest call, and starts at once on a thread of its own
        results = in_threads([*([second_proxy] if beside else []), *calls])
        second = results.pop(0) if beside else None
        *selections, ridge_selection = [*results, *([] if try_ridge else [None])]
        weight, validation_r2 = blend_weight([s[2] for s in selections], validation[1])
        penalty = None
        if ridge_selection is not None:
            penalty, ridge_r2, _ = ridge_selection
            if self.ridge is None and 1.0 - validation_r2 < SPARSE_RESIDUAL * (1.0 - ridge_r2):
                penalty = None  # the sparse fit predicts clearly better, with fewer terms
            else:
                validation_r2 = ridge_r2
        times["seconds_refit"] = time.perf_counter() - start

        trees = booster.best_iteration or booster.num_trees()
        if refit_proxy:
            booster, seconds = second if second is not None else second_proxy()
            times["seconds_proxy"] += seconds
            start = time.perf_counter()
            spectrum = proxy_spectrum(booster, n)
            times["seconds_extraction"] += time.perf_counter() - start

        start = time.perf_counter()
        # efficient values: held to v(∅) and v(N) where they are ordinary values; an outlier
        # would bend the sparse fit, so the plain fit is corrected at ∅ and N alone (step 8)
        game_corners = (float(extremes[1][_core.EMPTY_ROW]), float(extremes[1][_core.FULL_ROW]))
        held = self.efficient and bool(kept.all())
        anchors = game_corners if held else None
        if penalty is not None:
            surrogate = _core.refit_ridge(spectrum, penalty, masks, values, anchors)
            weight = 0.0
        else:
            surrogate = refit_blend(spectrum, selections, weight, masks, values, anchors)
        fitted_corners = surrogate.evaluate(extremes[0])
        missing = tuple(np.subtract(game_corners, fitted_corners).tolist())
        corners = missing if self.efficient and not held else (0.0, 0.0)
        times["seconds_refit"] += time.perf_counter() - start
        diagnostics = {
            "estimated": True,
            "proxy_validation_r2": proxy_r2,
            "validation_r2": validation_r2,
            "support": sum(1 for key in surrogate.keys() if key),
            "fit": "sparse" if penalty is None else "ridge",
            "ridge_penalty": penalty,
            "basis": blend_name(weight),
            "basis_weight": weight,
            "n_trees": trees,
            "refit_proxy": refit_proxy,
            "extremes_fitted": tuple(kept.tolist()),
            "efficiency_gap": float(
                np.diff(extremes[1])[0] - np.diff(fitted_corners)[0] - (corners[1] - corners[0])
            ),
            "corners": corners,
            "learning_rate": params["learning_rate"],
            "proxy_terms": len(spectrum),
            **times,
        }
        return Interactions.from_surrogate(
            surrogate,
            self.index,
            self.max_order,
            method="proxyspex",
            estimator="proxyspex",
            budget=self.budget,
            n_evaluations=planned,
            diagnostics=diagnostics,
            feature_names=names,
            corners=corners,
        )
