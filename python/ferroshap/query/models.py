"""Model adapters: turn what the user passes as ``model`` into a function of a 2-D batch.

Plain callables are called as they are; scikit-learn / LightGBM-style estimators through the
method named by ``model_output`` (by default ``predict_proba`` for classifiers and ``predict``
for other estimators); ``torch.nn.Module`` objects are called
directly and tell where their inputs must live (the device and dtype of their parameters). An
``output_index`` selects one column of a multi-output model.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ferroshap._core import InvalidArgumentError, InvalidTypeError
from ferroshap.query.backend import ArrayBackend
from ferroshap.validation import check_choice, check_output_index

__all__ = ["MODEL_OUTPUTS", "ModelFunction", "as_model_function", "resolve_model"]

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
