"""The model receives frames as the user gave them: column labels (integers, MultiIndex tuples),
their index type and every column's dtype; a Series is one row; ``to_shap`` carries the cells."""

from __future__ import annotations

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import InvalidArgumentError, InvalidTypeError

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")

WEIGHTS = np.array([1.0, -2.0, 3.0])


def recording(model, seen: list):
    """``model`` that first keeps each frame it is called on in ``seen``."""

    def recorded(frame):
        seen.append(frame)
        return model(frame)

    return recorded


def exact_linear(background: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Shapley values of ``z @ WEIGHTS`` (interventional game): ``w * (x - mean b)``."""
    return WEIGHTS * (X - background.mean(axis=0))


def test_integer_labels_reach_the_model() -> None:
    rng = np.random.default_rng(0)
    background, X = rng.normal(size=(10, 3)), rng.normal(size=(2, 3))
    seen: list = []

    def model(d):
        assert isinstance(d.columns, pd.RangeIndex | pd.Index) and list(d.columns) == [0, 1, 2]
        return (d[0] - 2.0 * d[1] + 3.0 * d[2]).to_numpy()

    explainer = fs.Explainer(recording(model, seen), pd.DataFrame(background), method="exact")
    ex = explainer(pd.DataFrame(X))
    assert seen and all(d.columns.dtype == np.int64 for d in seen)
    np.testing.assert_allclose(ex.values, exact_linear(background, X), atol=1e-12)
    assert ex.feature_names == ["0", "1", "2"]  # names in results are strings


def test_multiindex_columns_reach_the_model() -> None:
    rng = np.random.default_rng(1)
    columns = pd.MultiIndex.from_tuples(
        [("size", "a"), ("size", "b"), ("age", "a")], names=["what", "part"]
    )
    background = pd.DataFrame(rng.normal(size=(8, 3)), columns=columns)
    X = pd.DataFrame(rng.normal(size=(2, 3)), columns=columns)
    seen: list = []

    def model(d):
        assert d.columns.equals(columns) and list(d.columns.names) == ["what", "part"]
        return (d[("size", "a")] - 2.0 * d["size"]["b"] + 3.0 * d[("age", "a")]).to_numpy()

    ex = fs.Explainer(recording(model, seen), background, method="exact")(X)
    assert seen
    np.testing.assert_allclose(
        ex.values, exact_linear(background.to_numpy(), X.to_numpy()), atol=1e-12
    )
    # a group named by its tuple labels
    grouped = fs.Explainer(
        model, background, method="exact", groups={"size": [("size", "a"), ("size", "b")]}
    )(X)
    np.testing.assert_allclose(grouped.values[:, 0], ex.values[:, :2].sum(1), atol=1e-12)


def test_mixed_frame_keeps_labels_categoricals_and_dtypes() -> None:
    """Integer labels on a frame masked cell by cell: categorical (ordered, with unused
    categories), string, nullable integer, boolean and datetime columns keep their dtypes."""
    rng = np.random.default_rng(2)
    rows = 12
    grade = pd.CategoricalDtype(["low", "mid", "high", "unused"], ordered=True)
    frame = pd.DataFrame(
        {
            0: rng.normal(size=rows),
            1: pd.Categorical(rng.choice(["low", "mid", "high"], rows), dtype=grade),
            2: pd.array(rng.choice(["x", "y"], rows), dtype="string"),
            3: pd.array(rng.integers(0, 5, rows), dtype="Int64"),
            4: rng.random(rows) < 0.5,
            5: pd.date_range("2024-01-01", periods=rows, freq="D"),
        }
    )
    background, X = frame.iloc[:9], frame.iloc[9:]
    seen: list = []

    def model(d):
        assert list(d.columns) == list(range(6))
        assert d[1].dtype == grade and d[1].cat.ordered
        return (
            d[0].to_numpy()
            + d[1].cat.codes.to_numpy()
            + (d[2] == "x").to_numpy(dtype=float)
            + d[3].to_numpy(dtype=float)
            + d[4].to_numpy(dtype=float)
            + d[5].dt.day.to_numpy()
        )

    explainer = fs.Explainer(recording(model, seen), background, method="exact")
    ex = explainer(X)
    assert seen and all(list(d.dtypes) == list(background.dtypes) for d in seen)
    np.testing.assert_allclose(ex.values.sum(1) + ex.base_values, model(X), atol=1e-12)
    # X labelled by the labels' strings (as read back from a file): the model gets the labels
    relabelled = explainer(X.rename(columns=str))
    np.testing.assert_allclose(relabelled.values, ex.values, atol=1e-12)
    # groups by integer position still work on integer labels
    grouped = fs.Explainer(model, background, method="exact", groups={"g": [1, 2]})(X)
    assert grouped.feature_names == ["g", "0", "3", "4", "5"]
    np.testing.assert_allclose(grouped.values[:, 0], ex.values[:, 1:3].sum(1), atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint16, np.bool_])
def test_numeric_pandas_dtypes_reach_the_model(dtype) -> None:
    rng = np.random.default_rng(3)
    background = pd.DataFrame(rng.integers(0, 2, (6, 3)).astype(dtype), columns=[10, 20, 30])
    seen: list = []
    model = recording(lambda d: d.to_numpy(dtype=float) @ WEIGHTS, seen)
    fs.Explainer(model, background, method="exact")(background.iloc[:2])
    assert seen and all(list(d.columns) == [10, 20, 30] for d in seen)
    assert all((d.dtypes == dtype).all() for d in seen)


@pytest.mark.parametrize("numeric", [True, False])
def test_polars_names_and_dtypes_reach_the_model(numeric) -> None:
    rng = np.random.default_rng(4)
    rows = 10
    if numeric:
        frame = pl.DataFrame(
            {"a": rng.normal(size=rows), "b": rng.normal(size=rows), "c": rng.normal(size=rows)}
        ).cast(pl.Float32)
    else:
        frame = pl.DataFrame(
            {
                "a": pl.Series(rng.integers(0, 9, rows), dtype=pl.Int16),
                "b": pl.Series(rng.choice(["p", "q"], rows), dtype=pl.Categorical),
                "c": pl.Series(rng.choice(["lo", "hi"], rows), dtype=pl.Enum(["lo", "hi", "x"])),
                "d": pl.Series(rng.random(rows) < 0.5, dtype=pl.Boolean),
                "e": pl.Series(rng.normal(size=rows), dtype=pl.Float32),
            }
        )
    background, X = frame.head(7), frame.tail(3)
    seen: list = []

    def model(d):
        assert d.schema == background.schema
        numbers = d.select(pl.col(c).to_physical().cast(pl.Float64) for c in d.columns)
        return numbers.sum_horizontal()

    ex = fs.Explainer(recording(model, seen), background, method="exact")(X)
    assert seen and ex.feature_names == background.columns
    np.testing.assert_allclose(
        ex.values.sum(1) + ex.base_values, model(X).to_numpy(), rtol=1e-5, atol=1e-5
    )


def test_to_shap_carries_the_cells_strings_included() -> None:
    pytest.importorskip("shap")
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(
        {"size": rng.normal(size=8), "city": rng.choice(["paris", "nice"], 8), "n": np.arange(8)}
    )
    background, X = frame.iloc[:5], frame.iloc[5:]

    def model(d):
        return d["size"].to_numpy() + (d["city"] == "paris").to_numpy() + d["n"].to_numpy()

    ex = fs.Explainer(model, background, method="exact")(X)
    converted = ex.to_shap()
    assert converted.data.dtype == object and converted.data.shape == (3, 3)
    assert list(converted.data[:, 1]) == list(X["city"])
    np.testing.assert_allclose(converted.data[:, 0].astype(float), X["size"])
    np.testing.assert_array_equal(converted.values, ex.values)
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import shap  # type: ignore[import-untyped]

    shap.plots.beeswarm(converted, show=False)  # numbers coloured, strings left grey
    matplotlib.pyplot.close("all")


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_a_series_is_one_row(library) -> None:
    rng = np.random.default_rng(6)
    rows = 9
    frame = pd.DataFrame(
        {
            "size": rng.normal(size=rows),
            "city": pd.Categorical(rng.choice(["paris", "nice"], rows)),
            "n": rng.integers(0, 9, rows),
        }
    )

    def model(d):
        return np.asarray(d["size"]) + (np.asarray(d["city"]) == "paris") + np.asarray(d["n"])

    if library == "polars":
        frame = pl.from_pandas(frame)
    background = frame[:6]
    explainer = fs.Explainer(model, background, method="exact")
    expected = explainer(frame[6:7]).values
    if library == "pandas":
        row = frame.iloc[6]
        np.testing.assert_allclose(explainer(row).values, expected, atol=1e-12)
        np.testing.assert_allclose(explainer(row[::-1]).values, expected, atol=1e-12)  # by label
        game, n = fs.maskers.Baseline(background).game(model, row)
        assert n == 3 and game(np.ones((1, 3), bool))[0] == pytest.approx(model(frame[6:7])[0])
        with pytest.raises(InvalidArgumentError, match=r"X is a pandas Series labelled") as info:
            explainer(row.rename({"n": "m"}))
        assert info.value.argument == "X"
        with pytest.raises(InvalidTypeError, match=r"X cell 'lyon' of column 'city'"):
            explainer(row.replace("paris", "lyon").replace("nice", "lyon"))
    else:
        row = pl.Series([frame["size"][6], frame["city"][6], frame["n"][6]], dtype=pl.Object)
        np.testing.assert_allclose(explainer(row).values, expected, atol=1e-12)
        with pytest.raises(InvalidArgumentError, match=r"X is a polars Series of 2 cells"):
            explainer(row.head(2))
