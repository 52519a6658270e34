"""Every bad input gets a ValueError / TypeError from ferroshap naming the argument."""

from __future__ import annotations

import pickle
import re
from collections.abc import Callable

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import FerroshapError, InvalidArgumentError, InvalidTypeError, _core

RNG = np.random.default_rng(0)
BACKGROUND = RNG.normal(size=(10, 4))
X = RNG.normal(size=(3, 4))


def model(z: np.ndarray) -> np.ndarray:
    return z.sum(axis=1)


def with_value(array: np.ndarray, value: float) -> np.ndarray:
    array = array.copy()
    array[1, 2] = value
    return array


def explain(**kwargs: object) -> Callable[[], object]:
    """A call of ``Explainer(**kwargs)(X)`` with defaults for what is not given."""
    x = kwargs.pop("X", X)
    arguments = {"model": model, "background": BACKGROUND, "budget": 10, **kwargs}
    return lambda: fs.Explainer(**arguments)(x)


def raw(**kwargs: object) -> Callable[[], object]:
    """A call of ``shapley_values(**kwargs)`` with defaults for what is not given."""
    arguments = {"game": lambda masks: masks.sum(axis=1), "n_players": 5, "budget": 16, **kwargs}
    return lambda: fs.shapley_values(**arguments)


CASES = {
    "feature count": (explain(X=np.ones((2, 5))), InvalidArgumentError, r"X has 5.*ground has 4"),
    "NaN in X": (explain(X=with_value(X, np.nan)), InvalidArgumentError, r"X contains 1 NaN"),
    "inf in X": (explain(X=with_value(X, -np.inf)), InvalidArgumentError, r"^X contains"),
    "NaN in background": (
        explain(background=with_value(BACKGROUND, np.nan)),
        InvalidArgumentError,
        r"^background contains",
    ),
    "inf in background": (
        explain(background=with_value(BACKGROUND, np.inf)),
        InvalidArgumentError,
        r"^background contains",
    ),
    "NaN model output": (
        explain(model=lambda z: np.where(z[:, 0] > 0, np.nan, 1.0)),
        InvalidArgumentError,
        r"^model output contains",
    ),
    "inf game output": (
        raw(game=lambda masks: np.where(masks[:, 0], np.inf, 0.0)),
        InvalidArgumentError,
        r"^game output contains",
    ),
    "budget < 2": (explain(budget=1), InvalidArgumentError, r"budget must be at least 2, got 1"),
    "budget not an int": (raw(budget=16.0), InvalidTypeError, r"budget must be an int"),
    "permutation budget < 2n": (
        explain(method="permutation", budget=7),
        InvalidArgumentError,
        r"budget must be at least 2n = 8 for method='permutation'",
    ),
    "unknown method": (
        raw(method="shapley"),
        InvalidArgumentError,
        re.escape(
            f"method must be one of {', '.join(map(repr, [*fs.METHODS, *fs.PROXY_METHODS]))}; "
            "got 'shapley'"
        ),
    ),
    "exact above 24 players": (
        raw(method="exact", n_players=25),
        InvalidArgumentError,
        r"method='exact'.*at most 24 features; got n=25",
    ),
    "model returns too few rows": (
        explain(model=lambda z: z[:1].sum(axis=1)),
        InvalidArgumentError,
        r"model must return an array of shape \[10\] or \[10, k\].*got shape \(1,\)",
    ),
    "model returns 3-D": (
        explain(model=lambda z: np.zeros((len(z), 1, 1))),
        InvalidArgumentError,
        r"model must return .* got shape \(10, 1, 1\)",
    ),
    "game returns too many rows": (
        raw(game=lambda masks: np.zeros(len(masks) + 1)),
        InvalidArgumentError,
        r"game must return an array of shape \[16\]",
    ),
    "empty background": (
        explain(background=np.empty((0, 4))),
        InvalidArgumentError,
        r"background must have at least one row",
    ),
    "non-numeric X": (explain(X=np.array([list("abcd")])), InvalidTypeError, r"X must hold num"),
    "non-callable model": (explain(model=42), InvalidTypeError, r"model must be callable"),
    "non-callable game": (raw(game=42), InvalidTypeError, r"game must be callable"),
    "seed of a bad type": (explain(seed="0"), InvalidTypeError, r"seed must be an int or a numpy"),
    "float seed": (raw(seed=1.5), InvalidTypeError, r"seed must be an int"),
    "negative seed": (raw(seed=-1), InvalidArgumentError, r"seed must be in \[0, 2\*\*64\)"),
    "feature_names length": (
        explain(feature_names=["a"]),
        InvalidArgumentError,
        r"feature_names has 1 names but background has 4",
    ),
    "X columns differ from background's": (
        explain(
            background=pytest.importorskip("pandas").DataFrame(BACKGROUND, columns=list("abcd")),
            X=pytest.importorskip("pandas").DataFrame(X, columns=list("abdc")),
        ),
        InvalidArgumentError,
        r"X columns \['a', 'b', 'd', 'c'\] differ from background columns",
    ),
    "no players": (raw(n_players=0), InvalidArgumentError, r"n_players must be at least 1"),
    "max_bytes": (explain(max_bytes=0), InvalidArgumentError, r"max_bytes must be at least 1"),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_input_names_the_argument(case: str) -> None:
    call, error, message = CASES[case]
    with pytest.raises(error, match=message) as info:
        call()
    assert isinstance(info.value, FerroshapError)
    builtin = ValueError if error is InvalidArgumentError else TypeError
    assert isinstance(info.value, builtin)


def test_core_errors_arrive_as_invalid_argument() -> None:
    # the compiled module's own validation maps to the same exception class
    with pytest.raises(InvalidArgumentError, match="method"):
        _core.plan("no-such-method", 4, 16, 0)
    with pytest.raises(InvalidArgumentError, match="budget"):
        _core.plan("leverage", 4, 1, 0)


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: _core.plan("no-such-method", 4, 16, 0), "method"),
        (lambda: _core.plan("leverage", 4, 1, 0), "budget"),
        (lambda: _core.plan("leverage", 0, 16, 0), "n_players"),
        (lambda: _core.plan("exact", 30, 16, 0), "method"),
        (lambda: _core.plan("leverage", 30, 2**40, 0), "budget"),
    ],
)
def test_core_errors_carry_the_argument_name(call: Callable[[], object], argument: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        call()
    assert info.value.argument == argument
    assert str(info.value).startswith(f"{argument}: ")


def test_the_plan_ranges_are_checked_in_one_place() -> None:
    # the engines' checks before any model query are the core's own, with its wording
    with pytest.raises(InvalidArgumentError) as checked:
        _core.check_plan("permutation", 4, 7)
    with pytest.raises(InvalidArgumentError) as planned:
        _core.plan("permutation", 4, 7, 0)
    with pytest.raises(InvalidArgumentError) as explained:
        fs.shapley_values(lambda masks: masks.sum(axis=1) * 1.0, 4, method="permutation", budget=7)
    assert str(checked.value) == str(planned.value) == str(explained.value)
    # without a budget, only what does not depend on it
    assert _core.check_plan("permutation", 4) is None
    with pytest.raises(InvalidArgumentError, match="at most 24 features"):
        _core.check_plan("exact", 25)


@pytest.mark.parametrize(
    ("case", "argument"),
    [
        ("budget < 2", "budget"),
        ("budget not an int", "budget"),
        ("max_bytes", "max_bytes"),
        ("no players", "n_players"),
        ("seed of a bad type", "seed"),
        ("float seed", "seed"),
        ("negative seed", "seed"),
    ],
)
def test_python_validators_set_the_argument_name(case: str, argument: str) -> None:
    call, error, _ = CASES[case]
    with pytest.raises(error) as info:
        call()
    assert info.value.argument == argument


def test_the_argument_name_is_optional_and_survives_pickling() -> None:
    assert InvalidTypeError("model must be callable").argument is None
    error = pickle.loads(pickle.dumps(InvalidArgumentError("budget: too small", argument="budget")))
    assert type(error) is InvalidArgumentError and error.argument == "budget"
    assert error.args == ("budget: too small",)


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (InvalidArgumentError, ValueError),
        (InvalidTypeError, TypeError),
        (fs.DeviceMemoryError, MemoryError),
    ],
)
def test_the_classes_are_the_compiled_modules_with_two_bases(
    error: type[FerroshapError], builtin: type[Exception]
) -> None:
    # defined in the binding crate: the core raises them without importing Python code
    assert getattr(_core, error.__name__) is error and error.__module__ == "ferroshap"
    assert error.__bases__ == (FerroshapError, builtin)
    raised = error("what went wrong", argument="x")
    assert raised.argument == "x" and str(raised) == "what went wrong"


@pytest.mark.parametrize("method", fs.METHODS)
def test_single_feature_is_not_an_error(method: str) -> None:
    background, x = BACKGROUND[:, :1], X[:, :1]

    def model(z: np.ndarray) -> np.ndarray:
        return np.exp(z[:, 0])

    # one feature gets the whole difference f(x) - mean f(b); always exact, no warning either
    ex = fs.Explainer(model, background, method=method)(x)
    assert ex.values.shape == (3, 1) and ex.n_evaluations == 2
    expected = model(x) - model(background).mean()
    np.testing.assert_allclose(ex.values[:, 0], expected, rtol=1e-12)  # round-off only
