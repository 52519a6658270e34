"""Every public entry point, fed wrong types, shapes, NaN, empty and huge inputs, raises a
:class:`~ferroshap.FerroshapError` whose ``.argument`` names the argument, within 5 s, or
returns a sane (finite) result.

Each keyword argument of each entry point is replaced, one at a time, by every value of
:data:`BAD_VALUES`; array arguments are also fed seeded random arrays (odd shapes and dtypes,
NaN and infinities). hypothesis is not a test dependency, so the inputs come from fixed lists
and a seeded NumPy generator: every run tries the same cases.
"""

from __future__ import annotations

import inspect
import math
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import FerroshapError
from ferroshap.datasets.parquet import explain_parquet

SECONDS = 5.0
"""How long any call may take to answer, error or result."""

RNG = np.random.default_rng(0)
BACKGROUND = RNG.normal(size=(10, 4))
X = RNG.normal(size=(3, 4))
IMAGE = RNG.normal(size=(4, 4))
HUGE = 10**6
"""Features, players or positions of a huge input."""

BAD_VALUES: dict[str, Any] = {
    "True": True,
    "False": False,
    "None": None,
    "str": "1",
    "float": 1.5,
    "nan": math.nan,
    "inf": math.inf,
    "-1": -1,
    "0": 0,
    "2**70": 2**70,
    "[]": [],
    "[1]": [1],
    "{}": {},
    "object": object(),
    "complex": 1j,
    "bytes": b"x",
    "NaN array": np.full((2, 4), np.nan),
    "empty array": np.empty((0, 4)),
    "3-D array": np.zeros((2, 2, 2)),
}
"""Wrong types, NaN, infinities, empty and huge values; each replaces one argument."""


def model(z: Any) -> np.ndarray:
    return np.asarray(z, dtype=float).reshape(len(z), -1).sum(axis=1)


def game(masks: np.ndarray) -> np.ndarray:
    return masks.sum(axis=1) * 1.0


def count_a(sequences: list[str]) -> list[float]:
    return [s.count("A") * 1.0 for s in sequences]


Call = Callable[[dict[str, Any]], Any]


def explainer(a: dict[str, Any]) -> Any:
    x = a.pop("X")
    return fs.Explainer(**a)(x)


def raw_proxyspex(a: dict[str, Any]) -> Any:
    return fs.ProxySPEX(**a).explain()


def masked_proxyspex(a: dict[str, Any]) -> Any:
    x = a.pop("x")
    return fs.ProxySPEX(**a).explain(x)


def masker_game(kind: Callable[..., Any], data: str) -> Call:
    """Build the masker ``kind`` from every argument but ``model``, ``x`` and ``masks``, then
    evaluate its game at ``x`` on ``masks`` (every player kept, then none, by default)."""

    def call(a: dict[str, Any]) -> Any:
        function, x, masks = a.pop("model"), a.pop("x"), a.pop("masks", None)
        evaluate, n = kind(**a).game(function, x)
        return evaluate(np.array([[True] * n, [False] * n]) if masks is None else masks)

    call.__name__ = f"{kind.__name__}_{data}"
    return call


def parquet(a: dict[str, Any]) -> Any:
    return explain_parquet(**a)


ENTRY_POINTS: dict[str, tuple[Call, dict[str, Any]]] = {
    "Explainer": (
        explainer,
        {
            "model": model,
            "background": BACKGROUND,
            "X": X,
            "method": "auto",
            "budget": 16,
            "seed": 0,
            "batch_size": None,
            "max_bytes": 2**20,
            "progress": False,
            "model_output": "auto",
            "output_index": None,
            "paired": True,
            "link": "identity",
            "feature_names": None,
            "groups": None,
            "per_row_design": False,
            "cross_fit": None,
            "max_memory": None,
        },
    ),
    "Explainer(masker=)": (
        explainer,
        {
            "model": model,
            "masker": fs.maskers.Image(2),
            "X": IMAGE,
            "method": "auto",
            "budget": 16,
        },
    ),
    "shapley_values": (
        lambda a: fs.shapley_values(**a),
        {
            "game": game,
            "n_players": 5,
            "method": "auto",
            "budget": 16,
            "seed": 0,
            "batch_size": None,
            "max_bytes": 2**20,
            "progress": False,
            "paired": True,
            "groups": None,
            "cross_fit": None,
            "max_memory": None,
        },
    ),
    "exact_interactions": (
        lambda a: fs.exact_interactions(**a),
        {
            "game": game,
            "n_players": 4,
            "index": "k-SII",
            "max_order": 2,
            "batch_size": None,
            "max_bytes": 2**20,
            "progress": False,
            "groups": None,
            "max_memory": None,
        },
    ),
    "ProxySPEX": (
        raw_proxyspex,
        {  # budget >= 2**n: enumerated, so every accepted value answers quickly
            "game_or_model": game,
            "n_players": 5,
            "budget": 64,
            "seed": 0,
            "batch_size": None,
            "max_bytes": 2**20,
            "progress": False,
            "max_order": 2,
            "index": "k-SII",
            "validation_fraction": 0.2,
            "proxy_params": None,
            "feature_names": None,
            "groups": None,
            "max_memory": None,
            "refit_proxy": None,
            "ridge": None,
        },
    ),
    "ProxySPEX(masker=)": (
        masked_proxyspex,
        {
            "game_or_model": model,
            "masker": fs.maskers.Baseline(BACKGROUND[:2]),
            "x": X[0],
            "budget": 64,
            "model_output": "auto",
            "output_index": None,
        },
    ),
    "maskers.Baseline": (
        masker_game(fs.maskers.Baseline, "rows"),
        {
            "model": model,
            "rows": BACKGROUND,
            "x": X[0],
            "batch_size": None,
            "max_bytes": 2**20,
            "progress": False,
        },
    ),
    "maskers.Tokens": (
        masker_game(fs.maskers.Tokens, "ids"),
        {
            "model": model,
            "mask_id": 0,
            "x": np.array([3, 1, 2]),
            "batch_size": None,
            "max_bytes": 2**20,
            "progress": False,
        },
    ),
    "maskers.Text": (
        masker_game(fs.maskers.Text, "text"),
        {
            "model": lambda texts: [len(t) * 1.0 for t in texts],
            "x": "a b c",
            "tokenizer": None,
            "unit": "word",
            "mode": "drop",
            "mask_token": None,
            "batch_size": None,
            "max_bytes": 2**20,
            "progress": False,
        },
    ),
    "maskers.Image": (
        masker_game(fs.maskers.Image, "image"),
        {
            "model": model,
            "x": IMAGE,
            "patch_size": 2,
            "segments": None,
            "fill": 0.0,
            "blur_sigma": None,
            "channel_axis": -1,
            "batch_size": None,
            "max_bytes": 2**20,
            "progress": False,
        },
    ),
    "FourierSketch.fit": (
        lambda a: fs.FourierSketch.fit(**a),
        {
            "model": count_a,
            "n_players": 4,
            "alphabet": "AC",
            "budget": 64,
            "seed": 0,
            "batch_size": None,
            "max_bytes": 2**20,
            "progress": False,
            "model_output": "auto",
            "output_index": None,
            "input": "str",
            "offsets": 1,
            "max_memory": None,
        },
    ),
}
"""Each public entry point: a call of it on keyword arguments, and arguments that work."""

PUBLIC: dict[str, Callable[..., Any]] = {
    "Explainer": fs.Explainer,
    "Explainer(masker=)": fs.Explainer,
    "shapley_values": fs.shapley_values,
    "exact_interactions": fs.exact_interactions,
    "ProxySPEX": fs.ProxySPEX,
    "ProxySPEX(masker=)": fs.ProxySPEX,
    "maskers.Baseline": fs.maskers.Baseline,
    "maskers.Tokens": fs.maskers.Tokens,
    "maskers.Text": fs.maskers.Text,
    "maskers.Image": fs.maskers.Image,
    "FourierSketch.fit": fs.FourierSketch.fit,
}
"""The public callable behind each entry point, whose parameters an error may name."""

MEMORY_SIZED = {"n_players", "budget"}
"""Arguments a memory estimate is sized from: a huge one may be refused through
``max_memory`` (the message names it)."""


def run(call: Call, arguments: dict[str, Any]) -> tuple[Any, BaseException | None, float]:
    """The result of ``call(arguments)`` or its error, and the seconds it took."""
    start = time.perf_counter()
    result: Any = None
    error: BaseException | None = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # exact fallbacks, rank deficiency, deprecations
        try:
            result = call(dict(arguments))
        except Exception as err:
            error = err
    return result, error, time.perf_counter() - start


def assert_sane(result: Any) -> None:
    """A result holds finite numbers only."""
    if isinstance(result, fs.Explanation):
        result = result.values
    elif isinstance(result, fs.Interactions):
        result = np.array([*result.values.values(), *result.base_values])
    elif isinstance(result, fs.FourierSketch):
        result = result.coefficients
    elif isinstance(result, Path):
        assert result.is_dir()
        return
    assert np.isfinite(np.asarray(result, dtype=complex)).all()


def assert_names(error: BaseException | None, argument: str, others: Any, what: str) -> None:
    """``error`` is a ferroshap error whose message names ``argument`` and whose ``.argument``
    is ``argument`` or, when two arguments disagree (``X`` and ``background``), another of the
    call's ``others``; or a memory refusal, for the arguments a memory estimate is sized from.
    The explained input of a masker is its ``x`` (``X`` of the Explainer)."""
    assert isinstance(error, FerroshapError), f"{what}: {type(error).__name__}: {error}"
    if error.argument == "max_memory" and argument in MEMORY_SIZED:
        return
    blamed = {argument, "x"} if argument == "X" else {argument}
    assert error.argument in blamed | set(others), f"{what}: blames {error.argument!r}: {error}"
    assert any(name in str(error) for name in blamed), f"{what}: does not name it: {error}"


def parameters(entry: str) -> set[str]:
    """The argument names of an entry point: its public callable's and its call's."""
    return set(ENTRY_POINTS[entry][1]) | set(inspect.signature(PUBLIC[entry]).parameters)


def check(entry: str, arguments: dict[str, Any], argument: str, what: str) -> None:
    """The entry point's call of ``arguments`` answers in time, with a sane result or an
    error naming ``argument``."""
    result, error, seconds = run(ENTRY_POINTS[entry][0], arguments)
    assert seconds < SECONDS, f"{what}: took {seconds:.1f} s"
    if error is None:
        assert_sane(result)
    else:
        assert_names(error, argument, parameters(entry), what)


CASES = [(entry, name) for entry, (_, base) in ENTRY_POINTS.items() for name in base]


@pytest.mark.parametrize(("entry", "argument"), CASES, ids=[f"{e}-{a}" for e, a in CASES])
def test_each_argument_refuses_bad_values_naming_itself(entry: str, argument: str) -> None:
    base = ENTRY_POINTS[entry][1]
    for label, value in BAD_VALUES.items():
        check(entry, {**base, argument: value}, argument, f"{entry}({argument}={label})")


def test_the_base_arguments_work() -> None:
    for entry, (call, base) in ENTRY_POINTS.items():
        result, error, _ = run(call, base)
        assert error is None, f"{entry}: {error!r}"
        assert_sane(result)


ARRAY_ARGUMENTS = [
    ("Explainer", "X"),
    ("Explainer", "background"),
    ("Explainer(masker=)", "X"),
    ("ProxySPEX(masker=)", "x"),
    ("maskers.Baseline", "rows"),
    ("maskers.Baseline", "x"),
    ("maskers.Tokens", "x"),
    ("maskers.Image", "x"),
    ("maskers.Image", "segments"),
]


def random_array(rng: np.random.Generator) -> np.ndarray:
    """An array of random rank (0-3), shape (0-5 per axis) and dtype, with NaN, infinities or
    huge values sprinkled into float ones."""
    shape = tuple(int(s) for s in rng.integers(0, 6, size=rng.integers(0, 4)))
    dtype = rng.choice(["float64", "float32", "int64", "bool", "object", "str"])
    array = np.asarray(rng.normal(size=shape)) * 10
    if dtype == "str":
        return array.astype(str)
    if dtype in ("float64", "float32") and array.size and rng.random() < 0.5:
        array.flat[rng.integers(array.size)] = rng.choice([np.nan, np.inf, -np.inf, 1e308])
    with np.errstate(over="ignore"):  # 1e308 as float32 is inf
        return np.asarray(array, dtype=dtype)


@pytest.mark.parametrize(
    ("entry", "argument"), ARRAY_ARGUMENTS, ids=[f"{e}-{a}" for e, a in ARRAY_ARGUMENTS]
)
def test_random_arrays_are_refused_naming_the_argument(entry: str, argument: str) -> None:
    base = ENTRY_POINTS[entry][1]
    rng = np.random.default_rng(sum(map(ord, entry + argument)))
    for draw in range(25):
        array = random_array(rng)
        what = f"{entry}({argument}=array {array.dtype} {array.shape}, draw {draw})"
        check(entry, {**base, argument: array}, argument, what)


def test_explain_parquet_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pl = pytest.importorskip("polars")
    pytest.importorskip("pyarrow")
    monkeypatch.chdir(tmp_path)  # string values of path_out are folders made here
    source = tmp_path / "in.parquet"
    pl.DataFrame({"id": [0, 1, 2], **dict(zip("abcd", X.T, strict=True))}).write_parquet(source)
    base = {
        "path_in": source,
        "path_out": tmp_path / "out",
        "explainer": fs.Explainer(model, BACKGROUND, method="exact"),
        "columns": list("abcd"),
        "keys": ["id"],
        "chunk_size": 2,
        "progress": False,
        "overwrite": False,
    }
    result, error, _ = run(parquet, base)
    assert error is None and result == tmp_path / "out"
    for argument in base:
        for label, value in BAD_VALUES.items():
            what = f"explain_parquet({argument}={label})"
            _, error, seconds = run(parquet, {**base, argument: value})
            assert seconds < SECONDS, f"{what}: took {seconds:.1f} s"
            if argument == "path_in" and isinstance(error, FileNotFoundError):
                assert str(value) in str(error)  # a path that names no file: the OS error
            elif error is not None:
                assert_names(error, argument, inspect.signature(explain_parquet).parameters, what)


HUGE_CASES: dict[str, tuple[Callable[[], Any], str]] = {
    "Explainer, 10^6 features, budget 10^12": (
        lambda: fs.Explainer(model, np.zeros((1, HUGE)), budget=10**12)(np.ones((1, HUGE))),
        "max_memory",
    ),
    "shapley_values, 10^6 players, budget 10^12": (
        lambda: fs.shapley_values(game, HUGE, budget=10**12),
        "max_memory",
    ),
    "shapley_values, exact on 10^6 players": (
        lambda: fs.shapley_values(game, HUGE, method="exact"),
        "method",
    ),
    "exact_interactions, 10^6 players": (
        lambda: fs.exact_interactions(game, HUGE),
        "n_players",
    ),
    "ProxySPEX, 10^6 players, budget 10^12": (
        lambda: fs.ProxySPEX(game, HUGE, budget=10**12).explain(),
        "max_memory",
    ),
    "FourierSketch.fit, 10^6 positions, budget 10^12": (
        lambda: fs.FourierSketch.fit(count_a, HUGE, "AC", budget=10**12),
        "max_memory",
    ),
    "Explainer, budget 2**64": (
        lambda: fs.Explainer(model, BACKGROUND, budget=2**64)(X),
        "budget",
    ),
    "shapley_values, 2**70 players": (
        lambda: fs.shapley_values(game, 2**70, budget=16),
        "max_memory",
    ),
}


@pytest.mark.parametrize("case", HUGE_CASES)
def test_huge_inputs_are_refused_before_allocating(case: str) -> None:
    call, argument = HUGE_CASES[case]
    _, error, seconds = run(lambda _: call(), {})
    assert seconds < SECONDS, f"{case}: took {seconds:.1f} s"
    assert isinstance(error, FerroshapError), f"{case}: {error!r}"
    assert error.argument == argument, f"{case}: {error}"


def two_outputs(z: Any) -> np.ndarray:
    total = model(z)
    return np.stack([total, -total], axis=1)


DEFECTS: dict[str, tuple[Callable[[], Any], type[Exception], str, str]] = {
    # argument values that used to be blamed on something else, or escaped as raw errors
    "output_index=True (was a shape error)": (
        lambda: fs.Explainer(two_outputs, BACKGROUND, output_index=True, budget=16)(X),
        fs.InvalidTypeError,
        "output_index",
        "output_index must be an int",
    ),
    "output_index='1' (was a raw TypeError)": (
        lambda: fs.Explainer(two_outputs, BACKGROUND, output_index="1", budget=16)(X),
        fs.InvalidTypeError,
        "output_index",
        "got str '1'",
    ),
    "output_index=1.5 (was a raw IndexError)": (
        lambda: fs.Explainer(two_outputs, BACKGROUND, output_index=1.5, budget=16)(X),
        fs.InvalidTypeError,
        "output_index",
        "got float 1.5",
    ),
    "output_index out of range": (
        lambda: fs.Explainer(two_outputs, BACKGROUND, output_index=2, budget=16)(X),
        fs.InvalidArgumentError,
        "output_index",
        "k > 2",
    ),
    "Image(fill=nan) (was blamed on the model's output)": (
        lambda: fs.maskers.Image(2, fill=math.nan),
        fs.InvalidArgumentError,
        "fill",
        "fill must be a finite number",
    ),
    "Image fill images with NaN, at construction": (
        lambda: fs.maskers.Image(2, fill=np.full((1, 4, 4), np.nan)),
        fs.InvalidArgumentError,
        "fill",
        "fill contains 16 NaN",
    ),
    "ProxySPEX, two-output model through a masker (did not name output_index)": (
        lambda: fs.ProxySPEX(two_outputs, masker=fs.maskers.Image(2), budget=64).explain(IMAGE),
        fs.InvalidArgumentError,
        "output_index",
        "pick one output with output_index",
    ),
    "ProxySPEX, output_index with a raw game (was ignored)": (
        lambda: fs.ProxySPEX(game, 5, output_index=0),
        fs.InvalidArgumentError,
        "output_index",
        "applies to a model explained through a masker",
    ),
    "method=None": (
        lambda: fs.shapley_values(game, 4, method=None),  # type: ignore[arg-type]
        fs.InvalidArgumentError,
        "method",
        "method must be one of",
    ),
    "paired='no' (was truthy)": (
        lambda: fs.shapley_values(game, 4, paired="no"),  # type: ignore[arg-type]
        fs.InvalidTypeError,
        "paired",
        "paired must be True or False",
    ),
    "progress=None (was falsy)": (
        lambda: fs.Explainer(model, BACKGROUND, progress=None),  # type: ignore[arg-type]
        fs.InvalidTypeError,
        "progress",
        "progress must be True or False",
    ),
    "feature_names='abcd' (was four one-letter names)": (
        lambda: fs.Explainer(model, BACKGROUND, feature_names="abcd"),
        fs.InvalidTypeError,
        "feature_names",
        "feature_names must be a list of names",
    ),
    "budget=2**70 (was a raw OverflowError)": (
        lambda: fs.Explainer(model, BACKGROUND, budget=2**70)(X),
        fs.InvalidArgumentError,
        "budget",
        r"budget must be below 2\*\*64",
    ),
    "blur_sigma=True (was accepted as 1)": (
        lambda: fs.maskers.Image(blur_sigma=True),
        fs.InvalidTypeError,
        "blur_sigma",
        "blur_sigma must be a number",
    ),
    "proxy_params max_depth='a' (was a raw ValueError)": (
        lambda: fs.ProxySPEX(game, 5, proxy_params={"max_depth": "a"}),
        fs.InvalidTypeError,
        "proxy_params",
        r"proxy_params\['max_depth'\] must be an int",
    ),
}


@pytest.mark.parametrize("case", DEFECTS)
def test_fixed_defects(case: str) -> None:
    call, error, argument, message = DEFECTS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error, match=message) as info:
            call()
    assert info.value.argument == argument
