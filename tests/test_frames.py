"""DataFrames in, DataFrames to the model: pipelines, mixed dtypes, classifiers (pandas, polars)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

import ferroshap as fs
from conftest import brute_force_shapley
from ferroshap import InvalidArgumentError, InvalidTypeError

pd = pytest.importorskip("pandas")
pl = pytest.importorskip("polars")

ROWS = 400
START = dt.datetime(2020, 1, 1)


@pytest.fixture(scope="module")
def people() -> tuple[object, np.ndarray]:
    """A pandas frame with two string columns and two numbers, and a binary label."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "city": rng.choice(["paris", "lyon", "nice"], ROWS),
            "age": rng.normal(40.0, 10.0, ROWS),
            "color": rng.choice(["red", "green"], ROWS),
            "income": rng.normal(size=ROWS),
        }
    )
    label = (frame.age - 40.0) / 10.0 + (frame.city == "paris") - frame.income > 0.2
    return frame, label.to_numpy().astype(int)


@pytest.fixture(scope="module")
def pipeline(people):
    pytest.importorskip("sklearn")
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    frame, label = people
    columns = ColumnTransformer(
        [
            ("words", OneHotEncoder(handle_unknown="ignore"), ["city", "color"]),
            ("numbers", StandardScaler(), ["age", "income"]),
        ]
    )
    return make_pipeline(columns, LogisticRegression()).fit(frame, label)


def hybrid_game(model, background, x_row):
    """``v(S) = mean_b predict_proba(x_S, b_notS)`` built column by column with pandas."""
    columns = list(background.columns)

    def game(masks: np.ndarray) -> np.ndarray:
        values = []
        for mask in masks:
            rows = background.copy()
            for column in np.array(columns)[mask]:
                rows[column] = x_row[column].iloc[0]
            values.append(model.predict_proba(rows).mean(axis=0))
        return np.array(values)

    return game


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_pipeline_by_column_name_equals_enumeration(people, pipeline, library) -> None:
    frame, _ = people
    background, X = frame.iloc[:20].reset_index(drop=True), frame.iloc[20:23]
    convert = (lambda f: f) if library == "pandas" else pl.from_pandas
    ex = fs.Explainer(pipeline, convert(background), method="exact")(convert(X))
    assert ex.values.shape == (3, 4, 2)  # classifiers: predict_proba, every class
    assert ex.feature_names == ["city", "age", "color", "income"]
    for r in range(3):
        truth = brute_force_shapley(hybrid_game(pipeline, background, X.iloc[[r]]), 4)
        np.testing.assert_allclose(ex.values[r], truth.T, rtol=0, atol=1e-12)  # [k, n]
    np.testing.assert_allclose(
        ex.values.sum(axis=1) + ex.base_values, pipeline.predict_proba(X), rtol=0, atol=1e-12
    )
    assert ex.data[0, 0] == X.city.iloc[0]  # the explained cells, strings included


def mixed_frame(library: str, rows: int, seed: int):
    """A frame of every masked dtype: string, categorical, bool, datetime, int, float."""
    rng = np.random.default_rng(seed)
    columns = {
        "word": rng.choice(["a", "b", "c"], rows),
        "kind": rng.choice(["x", "y"], rows),
        "flag": rng.random(rows) < 0.5,
        "when": [START + dt.timedelta(days=int(d)) for d in rng.integers(0, 60, rows)],
        "count": rng.integers(0, 10, rows),
        "size": rng.normal(size=rows),
    }
    if library == "pandas":
        frame = pd.DataFrame(columns)
        return frame.astype({"kind": pd.CategoricalDtype(["x", "y"])})
    return pl.DataFrame(columns).with_columns(pl.col("kind").cast(pl.Enum(["x", "y"])))


def additive_score(frame) -> np.ndarray:
    """One term per column, so the Shapley values are the terms' differences."""
    cut = dt.datetime(2020, 1, 31)
    if isinstance(frame, pd.DataFrame):
        get = {name: frame[name].to_numpy() for name in frame.columns}
        when = frame["when"].to_numpy() > np.datetime64(cut)
    else:
        get = {name: frame[name].to_numpy() for name in frame.columns}
        when = (frame["when"] > cut).to_numpy()
    return (
        (get["word"] == "a") * 1.0
        + (np.asarray(get["kind"], dtype=object) == "x") * 2.0
        + get["flag"] * 3.0
        + when * 4.0
        + get["count"] * 0.5
        + get["size"]
    )


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_every_dtype_is_masked_cell_by_cell(library) -> None:
    background, X = mixed_frame(library, 12, 0), mixed_frame(library, 3, 1)
    seen = []

    def model(batch):
        seen.append(batch)
        return additive_score(batch)

    ex = fs.Explainer(model, background, method="exact")(X)
    # the model saw frames of the user's library, columns and dtypes
    assert all(type(batch) is type(background) for batch in seen)
    assert all(list(batch.columns) == list(background.columns) for batch in seen)
    assert all(list(batch.dtypes) == list(background.dtypes) for batch in seen)
    # additive model: each value is the column's term at x minus its background mean
    np.testing.assert_allclose(
        ex.values.sum(axis=1) + ex.base_values, additive_score(X), rtol=0, atol=1e-12
    )
    for j, name in enumerate(background.columns):
        others = [c for c in background.columns if c != name]

        # column ``name``'s term, up to a constant: every other column fixed to one row's cells
        def term(frame, others=others):
            return additive_score(_with_cells_of(frame, background.head(1), others))

        expected = term(X) - term(background).mean()
        np.testing.assert_allclose(ex.values[:, j], expected, rtol=0, atol=1e-12)


def typed_frame(library: str, rows: int, seed: int):
    """Number columns of several widths (and, for polars, one with nulls) beside a string, a
    datetime column and, for pandas, a tz-aware one and one of Python objects."""
    rng = np.random.default_rng(seed)
    columns = {
        "f32": rng.normal(size=rows).astype(np.float32),
        "i32": rng.integers(-5, 5, rows).astype(np.int32),
        "u8": rng.integers(0, 200, rows).astype(np.uint8),
        "f64": rng.normal(size=rows),
        "word": rng.choice(["a", "bb", "ccc"], rows),
        "i64": rng.integers(0, 1000, rows),
    }
    days = [START + dt.timedelta(days=int(d)) for d in rng.integers(0, 60, rows)]
    if library == "pandas":
        frame = pd.DataFrame(columns).assign(
            when=days,  # datetime64: a value column
            zoned=pd.Series(days).dt.tz_localize("UTC"),  # an extension dtype: gathered
            thing=pd.Series([(int(d), "t") for d in rng.integers(0, 9, rows)], dtype=object),
        )
        return frame.astype({"i64": "Int64"})  # a pandas extension dtype: gathered
    holes = pl.Series("i64", columns.pop("i64")).scatter([0], None)  # a null: gathered
    return pl.DataFrame(columns).with_columns(holes, pl.Series("when", days))


@pytest.mark.parametrize("library", ["pandas", "polars", "pandas<3"])
def test_frame_batches_equal_a_gather_of_source_rows(library, monkeypatch) -> None:
    """Each batch equals the source rows gathered cell by cell: values and dtypes, nulls kept
    (``pandas<3``: the frame built without pandas 3's block constructor)."""
    from ferroshap.query.frame_inputs import FrameInputs
    from ferroshap.query.frames import FrameSchema

    if library == "pandas<3":
        internals = pytest.importorskip("pandas.api.internals")
        monkeypatch.delattr(internals, "create_dataframe_from_blocks", raising=False)
        library = "pandas"
    background, X = typed_frame(library, 5, 0), typed_frame(library, 3, 1)
    inputs = FrameInputs(FrameSchema.of(background), background, X)
    masks = np.random.default_rng(2).random((7, background.shape[1])) < 0.5
    inputs.prepare(masks, None)
    source = (
        pd.concat([background, X], ignore_index=True)
        if library == "pandas"
        else pl.concat([background, X])
    )
    for start, stop in ((0, 21), (4, 11)):
        pairs = np.arange(start, stop)
        own = len(background) + pairs % len(X)  # pairs are mask-major over the rows
        inside = masks[pairs // len(X)]  # [pairs, n]
        index = np.where(inside[:, None, :], own[:, None, None], np.arange(5)[None, :, None])
        index = index.reshape(-1, background.shape[1])  # [pairs * background, n]
        batch = inputs.batch(start, stop)
        if library == "pandas":
            expected = pd.DataFrame(
                {
                    c: source[c].take(index[:, j]).reset_index(drop=True)
                    for j, c in enumerate(source)
                }
            )
            pd.testing.assert_frame_equal(batch, expected)
        else:
            expected = pl.DataFrame(
                [source[c].gather(index[:, j]) for j, c in enumerate(source.columns)]
            )
            from polars.testing import assert_frame_equal

            assert_frame_equal(batch, expected)


def _with_cells_of(frame, row, columns):
    """``frame`` with ``columns`` set to the cells of the one-row frame ``row``."""
    if isinstance(frame, pd.DataFrame):
        out = frame.copy()
        for column in columns:
            out[column] = pd.Series([row[column].iloc[0]] * len(frame), dtype=frame[column].dtype)
        return out
    return frame.with_columns(
        [
            pl.repeat(row[column][0], len(frame), dtype=frame[column].dtype).alias(column)
            for column in columns
        ]
    )


@pytest.mark.parametrize("kind", ["lightgbm", "lightgbm-categorical", "sklearn"])
def test_classifiers_fitted_on_frames_explain_probabilities(people, kind) -> None:
    frame, label = people
    numbers = frame[["age", "income"]]
    if kind == "sklearn":
        from sklearn.linear_model import LogisticRegression

        data, model = numbers, LogisticRegression()
    else:
        lightgbm = pytest.importorskip("lightgbm")
        data = numbers
        if kind == "lightgbm-categorical":
            data = frame.astype({"city": "category", "color": "category"})
        model = lightgbm.LGBMClassifier(n_estimators=20, verbose=-1)
    model.fit(data, label)
    background, X = data.iloc[:30], data.iloc[30:34]
    # pytest turns warnings into errors: no feature-name warnings from the model
    ex = fs.Explainer(model, background, method="exact")(X)
    k = len(model.classes_)
    assert ex.values.shape == (4, data.shape[1], k)
    np.testing.assert_allclose(
        ex.values.sum(axis=1) + ex.base_values, model.predict_proba(X), rtol=0, atol=1e-10
    )
    # hard labels only when asked for
    labels = fs.Explainer(model, background, method="exact", model_output="predict")(X)
    assert labels.values.shape == (4, data.shape[1])
    np.testing.assert_allclose(labels.values.sum(axis=1) + labels.base_values, model.predict(X))


def test_lazy_frames_are_collected() -> None:
    background, X = mixed_frame("polars", 6, 0), mixed_frame("polars", 2, 1)
    eager = fs.Explainer(additive_score, background, method="exact")(X)
    lazy = fs.Explainer(additive_score, background.lazy(), method="exact")(X.lazy())
    np.testing.assert_array_equal(lazy.values, eager.values)


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_bad_frames_are_named(library) -> None:
    background, X = mixed_frame(library, 6, 0), mixed_frame(library, 2, 1)
    explainer = fs.Explainer(additive_score, background, method="exact")
    columns = list(background.columns)
    reordered = X[[columns[1], columns[0], *columns[2:]]]
    with pytest.raises(
        InvalidArgumentError,
        match=r"X columns \['kind', 'word'.*differ from "
        r"background columns \['word', 'kind'",
    ):
        explainer(reordered)
    with pytest.raises(InvalidTypeError, match=r"X column 'count' has dtype"):
        if library == "pandas":
            explainer(X.astype({"count": "float64"}))
        else:
            explainer(X.with_columns(pl.col("count").cast(pl.Float64)))
    with pytest.raises(InvalidTypeError, match=r"X must be a .* DataFrame with columns"):
        explainer(np.zeros((2, 6)))
    other = pl.from_pandas(X) if library == "pandas" else X.to_pandas()
    with pytest.raises(InvalidTypeError, match=r"pass both from the same library"):
        explainer(other)
    nan_background = background.to_pandas() if library == "polars" else background.copy()
    nan_background.loc[2, "size"] = np.nan
    with pytest.raises(InvalidArgumentError, match=r"background column 'size' contains NaN"):
        fs.Explainer(additive_score, nan_background)
    with pytest.raises(InvalidArgumentError, match=r"background must have at least one row"):
        fs.Explainer(additive_score, background.head(0))


def test_a_dtype_the_model_rejects_raises_the_models_error(people, pipeline) -> None:
    frame, _ = people
    strings = frame.assign(age=np.where(frame.age > 40.0, "old", "young"))
    with pytest.raises(Exception) as info:
        fs.Explainer(pipeline, strings.iloc[:5], method="exact")(strings.iloc[5:6])
    assert not isinstance(info.value, fs.FerroshapError)  # the model's own error
    if hasattr(info.value, "__notes__"):  # Python >= 3.11: a note names the suspect columns
        assert "'age':" in info.value.__notes__[0] and "'city':" in info.value.__notes__[0]


def test_to_shap_keeps_the_explained_frame() -> None:
    pytest.importorskip("shap")
    background, X = mixed_frame("pandas", 6, 0), mixed_frame("pandas", 2, 1)
    shap_values = fs.Explainer(additive_score, background, method="exact")(X).to_shap()
    assert shap_values.display_data[0, 0] == X["word"].iloc[0]  # the real string value
    assert shap_values.feature_names == list(X.columns)
    numbers = pl.DataFrame(np.ones((2, 3)), schema=list("abc"))  # background NumPy, X a frame
    numeric = fs.Explainer(lambda z: z.sum(1), np.zeros((1, 3)), method="exact")(numbers)
    assert numeric.to_shap().display_data.shape == (2, 3)


@pytest.mark.parametrize("library", ["pandas", "polars"])
def test_per_row_designs_and_the_baseline_masker_take_frames(library) -> None:
    background, X = mixed_frame(library, 8, 0), mixed_frame(library, 3, 1)
    shared = fs.Explainer(additive_score, background, method="exact")(X)
    per_row = fs.Explainer(additive_score, background, method="exact", per_row_design=True)(X)
    np.testing.assert_allclose(per_row.values, shared.values, rtol=0, atol=1e-12)
    masker = fs.maskers.Baseline(background)
    game, n = masker.game(additive_score, X.head(1))
    assert n == 6 and masker.feature_names == list(background.columns)
    masks = np.eye(6, dtype=bool)
    empty = game(np.zeros((1, 6), dtype=bool))
    np.testing.assert_allclose(game(masks) - empty, shared.values[0], rtol=0, atol=1e-12)
