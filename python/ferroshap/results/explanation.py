"""The result object of an explanation and its conversions to shap and polars."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ferroshap._core import InvalidArgumentError

__all__ = ["Explanation"]


@dataclass(frozen=True, eq=False, repr=False)
class Explanation:
    """Shapley values of several explained rows, with what is needed to read them.

    Attributes
    ----------
    values : numpy.ndarray
        ``(rows, n)`` for a model returning ``[batch]``; ``(rows, n, k)`` for ``[batch, k]``.
    base_values : numpy.ndarray
        ``v(∅) = mean_b f(b)``, repeated per row: ``(rows,)`` or ``(rows, k)``. For each row and
        output, ``base_values + values.sum(axis=1)`` equals the model's output on that row.
    data : numpy.ndarray
        The explained rows ``(rows, n)``, in their own dtype.
    feature_names : list[str]
        One name per feature (``x0 .. x{n-1}`` unless given or taken from DataFrame columns).
    n_evaluations : int
        Distinct coalitions the model was evaluated on per row, ∅ and the grand coalition
        included (with per-row designs, the largest over rows).
    method : str
        The requested estimation method (``"auto"`` stays ``"auto"``).
    budget : int
        The requested budget.
    estimator : str
        The estimator that ran: the method itself (``"exact"`` when the budget covered every
        coalition, ``"leverage"`` when a proxy method fell back to it), or for
        ``method="auto"`` the recipe it chose (a name of :data:`ferroshap.sampling.auto.RECIPES`).
        Rows with different null players (features equal to every background row) are
        explained on games of different sizes; when those ran different estimators, their
        names are joined by ``", "`` in order of first use.
    groups : dict[str, list[str]] or None
        With ``groups=``: each player's name and its columns (``feature_names`` then names the
        players, and ``values`` has one column per player).
    frame : DataFrame or None
        The explained rows as the user passed them when they were a pandas / polars DataFrame;
        :meth:`to_shap` hands it to shap so that its plots show the real (string) values.
    standard_errors : numpy.ndarray or None
        The estimated standard error of each value, same shape as ``values``, from the design's
        own evidence (no extra model queries; see ``docs/standard-errors.md``): ``values ±
        1.96 * standard_errors`` is a nominal 95 % interval for the exact Shapley value of the
        game. Zero where the estimate is exact (enumeration, null players, a game the
        regression fits exactly); ``NaN`` where a design cannot show its spread (permutation
        sampling with a single antithetic pair). ``None`` from engines that do not estimate
        them (the sketch). Computed from ``errors_source`` when first read: they cost several
        times the estimate, and a call that never reads them does not pay for them.
    diagnostics : dict[str, Any]
        How the values were made, beyond ``method`` / ``estimator`` / ``budget``: always
        ``"estimated"`` (``False`` when every row was computed exactly), as in
        :attr:`ferroshap.Interactions.diagnostics`.
    errors_source : callable or None
        What computes :attr:`standard_errors` (the engines set it).

    Examples
    --------
    >>> import numpy as np, ferroshap as fs
    >>> bg = np.zeros((4, 3))
    >>> ex = fs.Explainer(lambda z: z @ [1.0, 2.0, 3.0], bg, method="exact")(np.ones(3))
    >>> ex.values
    array([[1., 2., 3.]])
    >>> len(ex), ex.base_values
    (1, array([0.]))
    """

    values: np.ndarray
    base_values: np.ndarray
    data: np.ndarray
    feature_names: list[str]
    n_evaluations: int
    method: str
    budget: int
    estimator: str
    groups: dict[str, list[str]] | None = None
    frame: Any = None
    diagnostics: dict[str, Any] = field(default_factory=dict)
    errors_source: Callable[[], np.ndarray] | None = field(default=None, repr=False)

    @cached_property
    def standard_errors(self) -> np.ndarray | None:
        """The values' standard errors (see the class attributes), computed when first read."""
        return None if self.errors_source is None else self.errors_source()

    def __getstate__(self) -> dict[str, Any]:
        """Pickled with its standard errors computed (the function behind them stays here)."""
        state = dict(self.__dict__)
        state["standard_errors"] = self.standard_errors
        state["errors_source"] = None
        return state

    @property
    def n_players(self) -> int:
        """Number of players: features, or groups with ``groups=``."""
        return len(self.feature_names)

    def __len__(self) -> int:
        """Number of explained rows."""
        return len(self.values)

    def __repr__(self) -> str:
        outputs = f", outputs={self.values.shape[2]}" if self.values.ndim == 3 else ""
        return (
            f"Explanation(rows={len(self)}, features={len(self.feature_names)}{outputs}, "
            f"method={self.method!r}, estimator={self.estimator!r}, budget={self.budget}, "
            f"n_evaluations={self.n_evaluations})"
        )

    def to_shap(self) -> Any:
        """Convert to a ``shap.Explanation`` (needs the optional ``shap`` package).

        Examples
        --------
        >>> import numpy as np, ferroshap as fs
        >>> ex = fs.Explainer(lambda z: z.sum(1), np.zeros((1, 2)), method="exact")(np.ones(2))
        >>> ex.to_shap().values  # doctest: +SKIP
        array([[1., 1.]])
        """
        try:
            import shap  # type: ignore[import-untyped]
        except ImportError as err:
            raise ImportError(
                "Explanation.to_shap() needs the shap package: `pip install shap`"
            ) from err
        if self.groups is not None:  # one value per group: no per-player data to show
            data, display = None, None
        else:
            # the explained cells (an object array with strings): shap colours each column
            # that holds numbers; the frame's own cells label its plots
            data = self.data
            display = None if self.frame is None else np.asarray(self.frame.to_numpy())
        return shap.Explanation(
            self.values,
            base_values=self.base_values,
            data=data,
            display_data=display,
            feature_names=list(self.feature_names),
        )

    def to_polars(self) -> Any:
        """Shapley values as a wide polars DataFrame (needs the optional ``polars`` package).

        One column per feature, named by :attr:`feature_names`, then ``base_value``, then (when
        :attr:`standard_errors` is set) one column ``se_<feature>`` per feature with the
        standard error of that feature's value; one row per explained row. For a multi-output
        model (``values`` of shape ``(rows, n, k)``) the frame is long by output: ``rows * k``
        rows ordered by (row, output), with a leading integer ``output`` column.

        Examples
        --------
        >>> import numpy as np, ferroshap as fs
        >>> ex = fs.Explainer(lambda z: z.sum(1), np.zeros((1, 2)), method="exact")(np.ones(2))
        >>> ex.to_polars().columns
        ['x0', 'x1', 'base_value', 'se_x0', 'se_x1']
        """
        try:
            import polars as pl
        except ImportError as err:
            raise ImportError(
                "Explanation.to_polars() needs the polars package: `pip install polars`"
            ) from err
        errors = self.standard_errors
        if self.values.ndim == 2:
            phi, base, leading = self.values, self.base_values, {}
        else:
            rows, n, k = self.values.shape
            phi = self.values.transpose(0, 2, 1).reshape(rows * k, n)
            base = self.base_values.reshape(rows * k)
            leading = {"output": np.tile(np.arange(k), rows)}
            if errors is not None:
                errors = errors.transpose(0, 2, 1).reshape(rows * k, n)
        names = list(self.feature_names)
        error_names = [] if errors is None else [f"se_{name}" for name in names]
        every = [*leading, *names, "base_value", *error_names]
        if len(set(every)) != len(every):
            raise InvalidArgumentError(
                f"to_polars() needs distinct feature names, none of them 'output', "
                f"'base_value' or 'se_' followed by another feature's name; got {names}"
            )
        columns = dict(zip(names, phi.T, strict=True))
        se_columns = {} if errors is None else dict(zip(error_names, errors.T, strict=True))
        return pl.DataFrame({**leading, **columns, "base_value": base, **se_columns})
