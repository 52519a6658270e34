"""Models and the games that wrap them.

A model becomes a function of a 2-D batch: plain callables are called as they are, scikit-learn /
LightGBM-style estimators through the method named by ``model_output`` (``predict_proba`` for
classifiers, ``predict`` for other estimators by default), ``torch.nn.Module`` objects directly
(their parameters tell the device and dtype of their inputs); ``output_index`` selects one
column of a multi-output model. A game maps a batch of coalitions, ``masks: bool[m, n]`` with
``masks[j, i]`` true when player ``i`` is in coalition ``j``, to a float64 table ``[m, R]``,
one column per explained quantity, row-major over ``(row, output)`` (column ``r * k + o`` holds
output ``o`` of explained row ``r``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ferroshap._core import InvalidArgumentError, InvalidTypeError
from ferroshap.query.backend import ArrayBackend, check_outputs, check_outputs_shape
from ferroshap.query.frame_inputs import FrameInputs
from ferroshap.query.frames import FrameSchema, is_frame
from ferroshap.query.loop import (
    DEFAULT_OPTIONS,
    FILLED_AHEAD,
    DesignMasks,
    DeviceInputs,
    HostInputs,
    Masks,
    QueryOptions,
    query,
    units_per_call,
    whole,
)
from ferroshap.validation import FLOAT, MODEL_FACTOR, check_choice, check_output_index

__all__ = [
    "LINKS", "MODEL_OUTPUTS", "ModelFunction", "RawGame", "TabularGame", "apply_link",
    "as_model_function", "resolve_model",
]  # fmt: skip

MODEL_OUTPUTS = ("auto", "call", "predict", "predict_proba", "decision_function")
"""Accepted values of ``model_output``: ``"auto"`` uses ``predict_proba`` for a classifier
(scikit-learn, LightGBM, XGBoost or any estimator whose ``_estimator_type`` or scikit-learn tags
say so), ``predict`` for another model with one, and calls the model otherwise; ``"call"``
always calls it; ``"predict"`` gives a classifier's hard labels."""


@dataclass(frozen=True)
class ModelFunction:
    """A model as a function of a 2-D batch, plus where its inputs belong.

    Attributes
    ----------
    function
        ``f(batch[rows, n]) -> [rows]`` or ``[rows, k]``.
    backend
        The backend the model requires (a ``torch.nn.Module``'s device), or ``None`` when inputs
        may stay wherever the user's data lives.
    dtype
        The dtype the model requires (a module's parameter dtype), or ``None``.
    """

    function: Callable[[Any], Any]
    backend: ArrayBackend | None = None
    dtype: Any = None

    def place(self, array: Any) -> Any:
        """``array`` moved to the backend and dtype the model requires (a torch module's
        device and parameter dtype) when it is a NumPy array; anything else unchanged."""
        if self.backend is None or not isinstance(array, np.ndarray):
            return array
        return self.backend.asarray(array, dtype=self.dtype)

    def inference(self) -> contextlib.AbstractContextManager[None]:
        """The context to call the model in (no gradient tracking for a torch module)."""
        return contextlib.nullcontext() if self.backend is None else self.backend.inference()


def _torch_module_placement(model: Any) -> tuple[ArrayBackend, Any] | None:
    """Device and dtype of a ``torch.nn.Module``'s first parameter, if ``model`` is one."""
    torch = sys.modules.get("torch")  # a module can only exist once torch was imported
    if torch is None or not isinstance(model, torch.nn.Module):
        return None
    parameter = next(model.parameters(), None)
    probe = torch.empty(0) if parameter is None else parameter.detach()[:0]
    dtype = None if parameter is None else parameter.dtype
    return ArrayBackend.of(probe), dtype


def resolve_model(
    model: Any, model_output: str = "auto", output_index: int | None = None, name: str = "model"
) -> ModelFunction:
    """The function that ferroshap calls for ``model``.

    Parameters
    ----------
    model
        A callable, an estimator with ``predict`` / ``predict_proba`` / ``decision_function``,
        or a ``torch.nn.Module``.
    model_output
        One of :data:`MODEL_OUTPUTS`.
    output_index
        Keep only this output column of a model returning ``[rows, k]``.
    name
        The model's argument name in the caller's signature, for errors.

    Examples
    --------
    >>> import numpy as np
    >>> fn = resolve_model(lambda z: z.sum(axis=1)).function
    >>> fn(np.ones((2, 3)))
    array([3., 3.])
    """
    check_choice(model_output, "model_output", MODEL_OUTPUTS)
    index = check_output_index(output_index)
    placement = _torch_module_placement(model)
    if model_output in ("predict", "predict_proba", "decision_function"):
        function = getattr(model, model_output, None)
        if not callable(function):
            raise InvalidTypeError(
                f"model_output={model_output!r} but the {name} ({type(model).__name__}) has no "
                f"{model_output} method",
                argument="model_output",
            )
    elif model_output == "auto" and placement is None and _is_classifier(model):
        function = model.predict_proba
    elif model_output == "auto" and placement is None and callable(getattr(model, "predict", None)):
        function = model.predict
    else:
        function = model
    if not callable(function):
        raise InvalidTypeError(
            f"{name} must be callable or have a predict method, got {type(model).__name__}",
            argument=name,
        )
    if index is not None:
        function = _select_output(function, index)
    backend, dtype = placement if placement is not None else (None, None)
    return ModelFunction(function, backend, dtype)


def as_model_function(model: Any) -> ModelFunction:
    """``model`` itself when it is already resolved, else :func:`resolve_model` of it with the
    defaults (what a masker does with the model it is handed)."""
    return model if isinstance(model, ModelFunction) else resolve_model(model)


def _is_classifier(model: Any) -> bool:
    """Whether ``model`` is a classifier with ``predict_proba``: scikit-learn's own judgement
    (which sees through pipelines) when scikit-learn is loaded, else ``_estimator_type``."""
    if not callable(getattr(model, "predict_proba", None)):
        return False
    sklearn_base = sys.modules.get("sklearn.base")
    if sklearn_base is not None:
        try:
            if sklearn_base.is_classifier(model):
                return True
        except Exception:  # an object sklearn cannot read tags from: fall back below
            pass
    return getattr(model, "_estimator_type", None) == "classifier"


def _select_output(function: Callable[[Any], Any], index: int) -> Callable[[Any], Any]:
    def selected(batch: Any) -> Any:
        out = function(batch)
        if getattr(out, "ndim", 1) != 2 or not -out.shape[1] <= index < out.shape[1]:
            raise InvalidArgumentError(
                f"output_index={index} needs a model returning [rows, k] with k > {index}, "
                f"got shape {tuple(getattr(out, 'shape', ()))}",
                argument="output_index",
            )
        return out[:, index]

    return selected


LINKS = ("identity", "logit")
"""Link functions applied to the background-averaged model output: ``v(S) = link(mean_b f)``."""


def apply_link(values: np.ndarray, link: str) -> np.ndarray:
    """``values`` through the link function ``link`` (one of :data:`LINKS`).

    Examples
    --------
    >>> apply_link(np.array([0.5]), "logit")
    array([0.])
    """
    if link == "identity":
        return values
    if np.any((values <= 0.0) | (values >= 1.0)):
        raise InvalidArgumentError(
            "link='logit' needs model outputs strictly between 0 and 1 (probabilities), got "
            f"values in [{values.min():.3g}, {values.max():.3g}]"
        )
    return np.log(values / (1.0 - values))


class TabularGame:
    """The interventional game of a tabular model, for several explained rows at once.

    ``v_x(S) = link(mean_b f(x_S, b_notS))``: features in ``S`` come from the explained row
    ``x``, the others from each background row ``b``, and the model outputs are averaged over
    the background. A single-baseline game is this game with a one-row ``background``.

    Masked inputs are built in chunks of (coalition, row) pairs across all explained rows, in
    the data's own array library and on its device (NumPy data through the compiled core). A
    chunk holds ``batch_size`` model rows, or else as many as
    :meth:`~ferroshap.query.backend.ArrayBackend.chunk_bytes`
    allows (cache-sized on a CPU, a share of
    free memory on an accelerator, never more than ``max_bytes``). The model is called once per
    chunk and must not keep a reference to its input, which the next chunk may overwrite. A
    chunk that runs out of memory is halved and retried. Only background-averaged outputs come
    back to the host, as float64.

    Parameters
    ----------
    model
        Callable on a 2-D batch ``[batch, n]`` returning ``[batch]`` or ``[batch, k]``.
    background
        Background rows ``[B, n]``, validated (finite, non-empty): a NumPy array, an array of
        another array-API library (then ``x_rows`` must be of the same library and device), or
        a pandas / polars DataFrame masked cell by cell (then ``x_rows`` is a frame of the same
        schema and the model receives frames, see
        :class:`ferroshap.query.frame_inputs.FrameInputs`).
    x_rows
        Explained rows ``[rows, n]``, validated, same number of features.
    options
        ``batch_size`` (model rows per call, rounded down to whole coalitions, at least one;
        overrides the byte sizing), ``max_bytes`` (cap on the bytes of masked inputs per call)
        and ``progress`` (a tqdm bar over the (coalition, row) pairs).
    link
        One of :data:`LINKS`, applied after averaging over the background.

    Attributes
    ----------
    n_players : int
        Number of features ``n``.
    output_shape : tuple[int, ...]
        ``()`` for a model returning ``[batch]``, ``(k,)`` for ``[batch, k]``.
    empty_value : numpy.ndarray
        ``v(∅) = link(mean_b f(b))``, shape ``output_shape``; the same for every explained row.

    Examples
    --------
    >>> import numpy as np
    >>> game = TabularGame(lambda z: z.sum(1), np.zeros((1, 3)), np.ones((2, 3)))
    >>> game.evaluate(np.array([[True, False, True]]))
    array([[2., 2.]])
    """

    def __init__(
        self,
        model: Callable[[Any], Any],
        background: Any,
        x_rows: Any,
        *,
        options: QueryOptions = DEFAULT_OPTIONS,
        link: str = "identity",
    ) -> None:
        self._model = model
        self._backend = ArrayBackend.of(background)
        self._inputs: HostInputs | DeviceInputs | FrameInputs
        if is_frame(background):
            self._inputs = FrameInputs(FrameSchema.of(background), background, x_rows)
        elif self._backend.is_numpy:
            self._inputs = HostInputs(background, x_rows)
        else:
            self._inputs = DeviceInputs(self._backend, background, x_rows)
        self._n_background = int(background.shape[0])
        self._n_rows = int(x_rows.shape[0])
        self._options = options
        self._link = link
        self.n_players = int(background.shape[1])
        empty = check_outputs(self._call(self._inputs.background), self._n_background, "model")
        self.output_shape: tuple[int, ...] = empty.shape[1:]
        self.empty_value = apply_link(empty.mean(axis=0), link)

    @property
    def n_rows(self) -> int:
        """Number of explained rows."""
        return self._n_rows

    def evaluate(self, masks: Masks, rows: np.ndarray | None = None) -> np.ndarray:
        """Coalition values for the explained rows.

        Parameters
        ----------
        masks
            Coalitions ``bool[m, n]``, or a :class:`DesignMasks` (NumPy data read it a chunk
            at a time; device and frame data take it whole).
        rows
            ``None`` to evaluate every mask on every explained row, giving ``[m, rows * k]``
            (row-major over ``(row, output)``). Otherwise ``int[m]``: mask ``j`` is evaluated on
            explained row ``rows[j]`` only, giving ``[m, k]`` (used by per-row designs).

        Returns
        -------
        numpy.ndarray
            float64 values, ``k = 1`` for a model returning ``[batch]``.
        """
        n_pairs = len(masks) * self.n_rows if rows is None else len(masks)
        per_call = self.pairs_per_call()
        if isinstance(self._inputs, HostInputs):  # the only inputs that read masks in chunks
            self._inputs.prepare(masks, rows)
        else:
            self._inputs.prepare(whole(masks), rows)
        filling_ahead = (
            self._inputs.ahead()
            if isinstance(self._inputs, HostInputs)
            else contextlib.nullcontext()
        )
        with filling_ahead:
            out = query(
                n_pairs,
                per_call,
                self._chunk_values,
                progress=self._options.progress,
                desc="coalitions x rows",
                unit_rows=self._n_background,
            )
        return apply_link(out, self._link).reshape(len(masks), -1)

    def pairs_per_call(self) -> int:
        """(coalition, explained row) pairs per model call of :meth:`evaluate`: ``batch_size``
        model rows, or as many as
        :meth:`~ferroshap.query.backend.ArrayBackend.chunk_bytes` allows."""
        return units_per_call(
            self._options,
            unit_bytes=self._n_background * self.n_players * self._inputs.itemsize,
            unit_rows=self._n_background,
            chunk_bytes=self._backend.chunk_bytes(self._options.max_bytes),
        )

    def query_bytes(self, n_pairs: int) -> dict[str, int]:
        """Host memory of the largest model call :meth:`evaluate` makes on ``n_pairs``
        (coalition, row) pairs, in bytes by buffer (see :mod:`ferroshap.validation`): the chunk's
        masks (as read from a design, and their feature masks), the pair indices and masked
        inputs of the model's chunk and the ``FILLED_AHEAD`` filled ahead (the bound; one
        when nothing is), as much again as one for what the model allocates (none on an
        accelerator: the inputs live in its memory) and the model's outputs with their float64
        copy and finiteness check. The whole masks and the values of every pair are the caller's."""
        pairs = min(n_pairs, self.pairs_per_call())
        model_rows = pairs * self._n_background
        k = int(np.prod(self.output_shape, dtype=np.int64))
        on_host = self._backend.on_host
        return {
            "masks chunk": 2 * (pairs // self.n_rows + 2) * self.n_players,
            "pair indices": 4 * (1 + FILLED_AHEAD) * pairs * FLOAT,
            "model input chunk": (
                (FILLED_AHEAD + MODEL_FACTOR) * model_rows * self.n_players * self._inputs.itemsize
                if on_host
                else 0
            ),
            "model output chunk": 3 * model_rows * k * FLOAT if on_host else 0,
        }

    def _call(self, batch: Any) -> Any:
        """The model on ``batch``; an error it raises on a DataFrame gets a note naming the
        frame's non-numeric columns and their dtypes (the likely cause)."""
        try:
            with self._backend.inference():
                return self._model(batch)
        except Exception as err:
            inputs = self._inputs
            noted = hasattr(err, "add_note") and not ArrayBackend.is_out_of_memory(err)
            if isinstance(inputs, FrameInputs) and noted:  # notes need Python >= 3.11
                err.add_note(inputs.describe_columns())
            raise

    def _chunk_values(self, start: int, stop: int) -> np.ndarray:
        """Background-averaged model outputs ``[stop - start, k]`` of the pairs in the chunk."""
        batch = self._inputs.batch(start, stop)
        n_model_rows = (stop - start) * self._n_background
        outputs = self._call(batch)
        shape = tuple(getattr(outputs, "shape", ()))
        if shape[1:] != self.output_shape:
            raise InvalidArgumentError(
                f"model returned shape {shape} for a batch of {n_model_rows} rows, but shape "
                f"{(self._n_background, *self.output_shape)} for the background"
            )
        if self._backend.is_numpy or isinstance(outputs, np.ndarray):
            values = check_outputs(outputs, n_model_rows, "model")
            return _background_mean(values.reshape(stop - start, self._n_background, -1))
        check_outputs_shape(shape, n_model_rows, "model")
        xp = self._backend.xp
        means = xp.mean(xp.reshape(outputs, (stop - start, self._n_background, -1)), axis=1)
        return check_outputs(means, stop - start, "model")


def _background_mean(outputs: np.ndarray) -> np.ndarray:
    """``outputs [pairs, background rows, k]`` averaged over the background rows.

    ``einsum`` adds the background rows in order, 3-5x faster than ``mean(axis=1)``, whose
    reduction over a middle axis with a short last axis walks the array in small strides.

    Examples
    --------
    >>> _background_mean(np.arange(12.0).reshape(2, 3, 2))
    array([[2., 3.],
           [8., 9.]])
    """
    if outputs.shape[1] == 1:  # one background row: nothing to average
        return outputs[:, 0, :]
    return np.einsum("ibk->ik", outputs) / outputs.shape[1]


class RawGame:
    """A game given directly as a function of coalitions, queried in chunks.

    Parameters
    ----------
    fn
        ``fn(masks: bool[k, n]) -> float[k]`` or ``float[k, r]`` (one column per explained
        quantity).
    n_players
        Number of players.
    options
        ``batch_size`` (coalitions per call; by default as many as ``max_bytes`` of masks,
        usually all of them at once) and ``progress``.

    Attributes
    ----------
    output_shape : tuple[int, ...] or None
        ``()`` or ``(r,)``: the shape of one coalition's value, known after the first
        :meth:`evaluate` (``None`` before).

    Examples
    --------
    >>> import numpy as np
    >>> game = RawGame(lambda masks: masks.sum(axis=1), 3)
    >>> game.evaluate(np.array([[True, True, False]]))
    array([[2.]])
    """

    def __init__(
        self,
        fn: Callable[[np.ndarray], Any],
        n_players: int,
        *,
        options: QueryOptions = DEFAULT_OPTIONS,
    ) -> None:
        self._fn = fn
        self.n_players = n_players
        self._options = options
        self.output_shape: tuple[int, ...] | None = None

    def evaluate(self, masks: Masks) -> np.ndarray:
        """Values ``float64[m, R]`` of the coalitions ``masks: bool[m, n]`` (``R = 1`` for 1-D),
        or of a :class:`DesignMasks`, read one call's chunk at a time."""
        if isinstance(masks, DesignMasks):
            source = masks

            def chunk(a: int, b: int) -> np.ndarray:
                return np.ascontiguousarray(source.rows(a, b), dtype=bool)
        else:
            whole = np.ascontiguousarray(masks, dtype=bool)

            def chunk(a: int, b: int) -> np.ndarray:
                return whole[a:b]

        values = query(
            len(masks),
            self.coalitions_per_call(),
            lambda a, b: self._chunk_values(chunk(a, b)),
            progress=self._options.progress,
            desc="coalitions",
        )
        return values.reshape(len(masks), -1)

    def coalitions_per_call(self) -> int:
        """Coalitions per call of the game in :meth:`evaluate`: ``batch_size``, or as many as
        ``max_bytes`` of masks allow."""
        return units_per_call(self._options, unit_bytes=self.n_players, unit_rows=1)

    def query_bytes(self, n_coalitions: int, outputs: int = 1) -> dict[str, int]:
        """Host memory of the largest call :meth:`evaluate` makes on ``n_coalitions`` coalitions
        of a design, in bytes by buffer (see :mod:`ferroshap.validation`): the chunk's masks as read
        from the design and as the game's (feature) masks, as much again for what the game
        allocates on them, and ``outputs`` values per coalition with their float64 copy."""
        chunk = min(n_coalitions, self.coalitions_per_call())
        return {
            "masks chunk": (1 + MODEL_FACTOR) * chunk * self.n_players,
            "game output chunk": 3 * chunk * outputs * FLOAT,
        }

    def _chunk_values(self, masks: np.ndarray) -> np.ndarray:
        values = check_outputs(self._fn(masks), len(masks), "game")
        if self.output_shape is not None and values.shape[1:] != self.output_shape:
            raise InvalidArgumentError(
                f"game returned {values.shape[1:]} values per coalition on one call and "
                f"{self.output_shape} on another; it must return the same shape every time"
            )
        self.output_shape = values.shape[1:]
        return values.reshape(len(masks), -1)
