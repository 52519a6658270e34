"""The tabular Explainer end to end: models, inputs, result object and batching."""

from __future__ import annotations

import pickle
import sys
from typing import Any

import numpy as np
import pytest

import ferroshap as fs
from conftest import brute_force_shapley
from ferroshap.bench.metrics import relative_l2_error

REGRESSION = ["kernel", "kernel-wor", "leverage", "modified-l2"]
SAMPLING = [method for method in fs.METHODS if method != "exact"]


def _model(z: np.ndarray) -> np.ndarray:
    """A non-additive model: sines plus two interactions."""
    return np.sin(z).sum(axis=1) + z[:, 0] * z[:, 1] - 0.5 * z[:, 2] * z[:, 3] * z[:, 4]


@pytest.fixture
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.normal(size=(30, 6)), rng.normal(size=(4, 6))


@pytest.mark.parametrize("method", [*REGRESSION, "permutation", "exact"])
def test_linear_model(method: str) -> None:
    rng = np.random.default_rng(1)
    background, X, w = rng.normal(size=(40, 12)), rng.normal(size=(5, 12)), rng.normal(size=12)
    ex = fs.Explainer(lambda z: z @ w + 3.0, background, method=method, budget=64)(X)
    # the interventional linear game is additive: exact up to solver round-off
    np.testing.assert_allclose(ex.values, w * (X - background.mean(axis=0)), atol=1e-9)
    np.testing.assert_allclose(ex.base_values, np.full(5, background.mean(0) @ w + 3.0))


@pytest.fixture(scope="module")
def lightgbm_case() -> tuple[object, np.ndarray, np.ndarray, np.ndarray]:
    lightgbm = pytest.importorskip("lightgbm")
    shap = pytest.importorskip("shap")
    rng = np.random.default_rng(2)
    features = rng.normal(size=(500, 8))
    target = features[:, 0] * features[:, 1] + np.sin(3 * features[:, 2]) + features[:, 3] ** 2
    model = lightgbm.LGBMRegressor(
        n_estimators=40, num_leaves=8, max_depth=4, deterministic=True, n_jobs=1, verbose=-1
    ).fit(features, target)
    background, X = features[:25], features[100:106]
    explainer = shap.TreeExplainer(
        model, data=background, feature_perturbation="interventional", model_output="raw"
    )
    truth = explainer.shap_values(X)
    # the oracle's own additivity check (1e-8: shap works in float64)
    np.testing.assert_allclose(
        truth.sum(axis=1) + explainer.expected_value, model.predict(X), atol=1e-8
    )
    return model, background, X, truth


def test_lightgbm_exact_matches_interventional_treeshap(lightgbm_case) -> None:
    model, background, X, truth = lightgbm_case
    ex = fs.Explainer(model, background, method="exact")(X)
    # shap's interventional TreeSHAP is itself off by up to ~3e-8 from brute-force enumeration
    # of this game (measured with shap 0.51), hence 1e-7 here and 1e-10 against brute force
    np.testing.assert_allclose(ex.values, truth, rtol=0, atol=1e-7)
    for x, phi in zip(X, ex.values, strict=True):

        def game(masks: np.ndarray, x: np.ndarray = x) -> np.ndarray:
            hybrid = np.where(masks[:, None, :], x, background).reshape(-1, len(x))
            return model.predict(hybrid).reshape(len(masks), -1).mean(axis=1)

        np.testing.assert_allclose(phi, brute_force_shapley(game, len(x)), rtol=0, atol=1e-10)


@pytest.mark.parametrize("method", SAMPLING)
def test_lightgbm_error_falls_with_budget(lightgbm_case, method: str) -> None:
    model, background, X, truth = lightgbm_case

    def mean_error(budget: int) -> float:
        return np.mean(
            [
                relative_l2_error(
                    fs.Explainer(model, background, method=method, budget=budget, seed=s)(X).values,
                    truth,
                )
                for s in range(3)
            ]
        )

    # 32 -> 160 of 256 coalitions, mean over 3 seeds: the error drops 2.5-6x (observed), so
    # demand at least 30%
    assert mean_error(160) < 0.7 * mean_error(32)


@pytest.mark.parametrize("k", [1, 3])
def test_multi_output_shapes_and_values(data, k: int) -> None:
    background, X = data

    def model(z: np.ndarray) -> np.ndarray:
        return np.stack([(j + 1) * _model(z) + j * z[:, 0] for j in range(k)], axis=1)

    ex = fs.Explainer(model, background, budget=40, method="leverage")(X)
    assert ex.values.shape == (4, 6, k)
    assert ex.base_values.shape == (4, k)
    single = fs.Explainer(lambda z: model(z)[:, k - 1], background, budget=40, method="leverage")(X)
    # the same design explains every output: equal to the single-output run up to round-off
    np.testing.assert_allclose(ex.values[:, :, k - 1], single.values, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ex.base_values[:, k - 1], single.base_values, rtol=1e-12)
    # efficiency per row and output (round-off)
    np.testing.assert_allclose(ex.values.sum(axis=1) + ex.base_values, model(X), rtol=1e-9)


def test_dataframes_give_feature_names(data) -> None:
    pl = pytest.importorskip("polars")
    pd = pytest.importorskip("pandas")
    background, X = data
    names = [f"f{i}" for i in range(6)]
    reference = fs.Explainer(_model, background, budget=40, method="leverage")(X)
    for library, frame in (
        (pl.DataFrame, lambda a, columns: pl.DataFrame(a, schema=columns)),
        (pd.DataFrame, pd.DataFrame),
    ):
        received: list[object] = []

        def on_frames(z, received=received):
            received.append(z)
            return _model(np.asarray(z.to_numpy()))

        ex = fs.Explainer(
            on_frames, frame(background, columns=names), budget=40, method="leverage"
        )(frame(X, columns=names))
        assert ex.feature_names == names
        np.testing.assert_array_equal(ex.values, reference.values)
        # numeric frames reach the model as frames of the same library, columns and dtype
        assert all(isinstance(z, library) and list(z.columns) == names for z in received)
    # names from X alone (the model then gets NumPy like the background), explicit names win
    assert (
        fs.Explainer(_model, background, budget=40, method="leverage")(
            pl.DataFrame(X, schema=names)
        ).feature_names
        == names
    )
    ex = fs.Explainer(
        lambda z: _model(z.to_numpy()),
        pl.DataFrame(background, schema=names),
        budget=40,
        feature_names=list("abcdef"),
        method="leverage",
    )(X)
    assert ex.feature_names == list("abcdef")
    assert reference.feature_names == [f"x{i}" for i in range(6)]


def test_one_dimensional_x_is_one_row(data) -> None:
    background, X = data
    ex = fs.Explainer(_model, background, budget=40, method="leverage")(X[0])
    assert ex.values.shape == (1, 6) and ex.data.shape == (1, 6) and len(ex) == 1
    # one row or four with the same design: round-off apart (the solve sees more columns)
    np.testing.assert_allclose(
        ex.values[0],
        fs.Explainer(_model, background, budget=40, method="leverage")(X).values[0],
        rtol=1e-12,
    )


def test_float32_input_reaches_the_model_as_float32(data) -> None:
    background, X = data

    def model(z: np.ndarray) -> np.ndarray:
        assert z.dtype == np.float32
        return _model(z)

    ex = fs.Explainer(model, background.astype(np.float32), budget=40, method="leverage")(
        X.astype(np.float32)
    )
    reference = fs.Explainer(_model, background, budget=40, method="leverage")(X)
    assert ex.data.dtype == np.float32 and ex.values.dtype == np.float64
    # float32 inputs and outputs carry ~1e-7 relative rounding into each value
    np.testing.assert_allclose(ex.values, reference.values, rtol=1e-4, atol=1e-5)


def test_to_polars(data) -> None:
    pytest.importorskip("polars")
    background, X = data
    ex = fs.Explainer(_model, background, budget=40, method="leverage")(X)
    df = ex.to_polars()
    errors = [f"se_{name}" for name in ex.feature_names]
    assert df.columns == [*ex.feature_names, "base_value", *errors] and df.height == 4
    np.testing.assert_array_equal(df.select(ex.feature_names).to_numpy(), ex.values)
    np.testing.assert_array_equal(df["base_value"].to_numpy(), ex.base_values)

    multi = fs.Explainer(
        lambda z: np.stack([_model(z), -_model(z)], 1), background, budget=40, method="leverage"
    )(X)
    long = multi.to_polars()
    assert long.columns[: len(multi.feature_names) + 2] == [
        "output",
        *multi.feature_names,
        "base_value",
    ]
    assert long.height == 8
    assert long["output"].to_list() == [0, 1] * 4
    np.testing.assert_array_equal(
        long.select(multi.feature_names).to_numpy()[1], multi.values[0, :, 1]
    )


def test_to_shap(data) -> None:
    shap = pytest.importorskip("shap")
    background, X = data
    ex = fs.Explainer(_model, background, budget=40, method="leverage")(X)
    sv = ex.to_shap()
    assert isinstance(sv, shap.Explanation)
    np.testing.assert_array_equal(sv.values, ex.values)
    np.testing.assert_array_equal(sv.base_values, ex.base_values)
    np.testing.assert_array_equal(sv.data, X)
    assert list(sv.feature_names) == ex.feature_names


def test_memory_cap_and_batch_size_do_not_change_results(data) -> None:
    background, X = data
    calls: list[int] = []

    def model(z: np.ndarray) -> np.ndarray:
        calls.append(len(z))
        return _model(z)

    large = fs.Explainer(model, background, budget=40, method="leverage")(X)
    assert calls[1:] == [40 * 4 * 30]  # one call for all rows and coalitions (after the probe)
    calls.clear()
    tiny = fs.Explainer(model, background, budget=40, max_bytes=1, method="leverage")(X)
    assert calls[1:] == [30] * (40 * 4)  # one coalition per call
    calls.clear()
    batched = fs.Explainer(model, background, budget=40, batch_size=100, method="leverage")(X)
    assert max(calls[1:]) == 90  # whole coalitions of 30 background rows per call
    # the model sees the same rows in every case: identical results
    np.testing.assert_array_equal(tiny.values, large.values)
    np.testing.assert_array_equal(batched.values, large.values)


def test_progress_bar(data, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")
    background, X = data
    ex = fs.Explainer(
        _model, background, budget=40, progress=True, max_bytes=10_000, method="leverage"
    )(X)
    assert "160/160" in capsys.readouterr().err  # 40 coalitions x 4 rows
    np.testing.assert_array_equal(
        ex.values, fs.Explainer(_model, background, budget=40, method="leverage")(X).values
    )


def test_progress_without_tqdm_says_how_to_install(data, monkeypatch) -> None:
    background, X = data
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(ImportError, match="pip install tqdm"):
        fs.Explainer(_model, background, budget=40, progress=True, method="leverage")(X)


def test_objects_with_predict_are_called_through_predict(data) -> None:
    linear_model = pytest.importorskip("sklearn.linear_model")
    background, X = data
    model = linear_model.LinearRegression().fit(background, _model(background))
    ex = fs.Explainer(model, background, budget=40, method="leverage")(X)
    # additive model: exact up to round-off
    np.testing.assert_allclose(ex.values, model.coef_ * (X - background.mean(0)), atol=1e-9)


def test_explanation_metadata(data) -> None:
    background, X = data
    ex = fs.Explainer(_model, background, method="kernel-wor", budget=41)(X)
    assert ex.method == "kernel-wor" and ex.budget == 41
    assert ex.n_evaluations == 40  # paired: odd budget rounded down
    np.testing.assert_array_equal(ex.data, X)
    assert "kernel-wor" in repr(ex) and "rows=4" in repr(ex)


def test_generator_seed_gives_fresh_designs_per_call(data) -> None:
    background, X = data
    explainer = fs.Explainer(
        _model, background, budget=40, seed=np.random.default_rng(0), method="leverage"
    )
    assert not np.array_equal(explainer(X).values, explainer(X).values)


def _interacting_model(z: np.ndarray) -> np.ndarray:
    """A smooth model with pairwise and triple interactions of 10 features."""
    z = np.asarray(z, dtype=float)
    return np.tanh(z[:, 0] * z[:, 1] - z[:, 2]) + z[:, 3] * z[:, 4] * z[:, 5] + z[:, 6:].sum(1)


def test_features_at_their_background_value_are_null_players() -> None:
    """With one background row, a feature equal to it cannot change the output: its value is
    exactly 0 and the row is explained as the game of the other features (here few enough to
    enumerate within the budget), matching exact values on the full game."""
    rng = np.random.default_rng(0)
    background = rng.normal(size=(1, 10))
    X = rng.normal(size=(3, 10))
    X[0, [1, 4, 7, 8, 9]] = background[0, [1, 4, 7, 8, 9]]
    X[1, :6] = background[0, :6]
    X[2] = background[0]
    ex = fs.Explainer(_interacting_model, background, budget=40, seed=0)(X)
    exact = fs.Explainer(_interacting_model, background, method="exact")(X).values
    assert ex.values[0, [1, 4, 7, 8, 9]].tolist() == [0.0] * 5
    assert ex.values[1, :6].tolist() == [0.0] * 6 and ex.values[2].tolist() == [0.0] * 10
    np.testing.assert_allclose(ex.values, exact, atol=1e-12)
    assert ex.estimator == "exact" and ex.n_evaluations == 2**5


def test_a_row_with_null_players_is_explained_on_the_smaller_game() -> None:
    """The values of the other players are those of the reduced game's own estimate, and rows
    without null players keep the shared design of the whole game."""
    rng = np.random.default_rng(1)
    background, X = rng.normal(size=(1, 10)), rng.normal(size=(2, 10))
    X[0, :2] = background[0, :2]
    explainer = fs.Explainer(_interacting_model, background, method="leverage", budget=64, seed=3)
    ex = explainer(X)
    varying = np.arange(2, 10)

    def reduced(masks: np.ndarray) -> np.ndarray:
        z = np.repeat(X[:1], len(masks), axis=0)
        z[:, varying] = np.where(masks, X[0, varying], background[0, varying])
        return _interacting_model(z)

    own = fs.shapley_values(reduced, n_players=8, method="leverage", budget=64, seed=3)
    np.testing.assert_allclose(ex.values[0, varying], own, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(ex.values[1], explainer(X[1:]).values[0])


def test_null_players_in_frames_and_groups() -> None:
    """A string column equal to the background's, and a group all of whose features are, are
    null players; with several background rows a column is null only if all of them agree."""
    pd = pytest.importorskip("pandas")
    background = pd.DataFrame({"a": [1.0], "b": [2.0], "c": ["x"], "d": [0.5]})
    X = pd.DataFrame({"a": [3.0], "b": [2.0], "c": ["x"], "d": [1.5]})

    def model(frame: Any) -> np.ndarray:
        c = (frame["c"] == "x").to_numpy(dtype=float)
        return frame["a"].to_numpy() * frame["b"].to_numpy() + c * frame["d"].to_numpy()

    ex = fs.Explainer(model, background, budget=8, seed=0)(X)
    assert ex.values[0, 1] == 0.0 and ex.values[0, 2] == 0.0
    np.testing.assert_allclose(ex.values[0].sum(), model(X)[0] - model(background)[0])
    grouped = fs.Explainer(
        model, background, budget=8, seed=0, groups={"ab": ["a", "b"], "cd": ["c", "d"]}
    )(X)
    assert np.all(grouped.values[0] != 0.0)
    numeric = np.array([[1.0, 2.0, 3.0], [1.0, 5.0, 3.0]])
    row = np.array([[1.0, 5.0, 4.0]])
    ex = fs.Explainer(lambda z: z @ np.array([1.0, 2.0, 3.0]), numeric, budget=8, seed=0)(row)
    np.testing.assert_allclose(ex.values[0], [0.0, 3.0, 3.0], atol=1e-12)
    assert ex.values[0, 0] == 0.0


def _nonlinear(z: np.ndarray) -> np.ndarray:
    """A model that pickles (defined at module level)."""
    return np.tanh(z.sum(axis=1)) + z[:, 0] * z[:, 1]


def test_a_second_call_reuses_the_design_and_its_values() -> None:
    # the same seed plans the same design: it is kept, with its estimator, for the next calls
    rng = np.random.default_rng(3)
    background, X, model = rng.normal(size=(5, 12)), rng.normal(size=(3, 12)), _nonlinear
    explainer = fs.Explainer(model, background, method="leverage", budget=256, seed=4)
    first = explainer(X[:3])
    (kept,) = explainer._designs._kept.values()
    again = explainer(X[:3])
    assert explainer._designs._kept[next(iter(explainer._designs._kept))] is kept
    fresh = fs.Explainer(model, background, method="leverage", budget=256, seed=4)(X[:3])
    assert np.array_equal(first.values, again.values)
    assert np.array_equal(first.values, fresh.values)
    explainer.budget = 300  # a changed setting plans again
    assert not np.array_equal(explainer(X[:3]).values, first.values)
    clone = pickle.loads(pickle.dumps(explainer))
    assert clone._designs._kept == {}
    assert np.array_equal(clone(X[:3]).values, explainer(X[:3]).values)
