"""SHAP zero (FourierSketch): recovery of sparse q-ary functions, closed-form explanations
against brute-force expectations, agreement with KernelSHAP, persistence and bad input."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import ferroshap as fs
from conftest import all_masks, brute_force_shapley
from ferroshap import InvalidArgumentError, InvalidTypeError, _core
from ferroshap.bench.fourier import SparseQaryFunction

PROTEIN = "ACDEFGHIKLMNPQRSTVWY"
ALPHABETS = {2: "01", 3: "ABC", 4: "ACGT", 20: PROTEIN}


class SparseFunction(SparseQaryFunction):
    """The library's sparse q-ary test function, plus its distance to a sketch's spectrum."""

    def spectrum_error(self, sketch: fs.FourierSketch) -> float:
        """``|F_hat - F|^2 / |F|^2`` over every key, the mean included."""
        diff = dict(self.spectrum)
        for key, value in zip(sketch.keys, sketch.coefficients, strict=True):
            k = tuple(int(d) for d in key)
            diff[k] = diff.get(k, 0) - value
        error = sum(abs(d) ** 2 for d in diff.values()) + (self.mean - sketch.mean) ** 2
        return error / (sum(abs(v) ** 2 for v in self.spectrum.values()) + self.mean**2)


def uniform_game(f: SparseFunction, x: np.ndarray) -> object:
    """``v_x(S) = E_z f(x_S, z_notS)`` over uniform ``z``, by enumerating every fill-in."""
    fills = np.array(list(itertools.product(range(f.q), repeat=f.n)))

    def game(masks: np.ndarray) -> np.ndarray:
        return np.array([f(np.where(mask, x, fills)).mean() for mask in masks])

    return game


def fit(f: SparseFunction, budget: int, seed: int = 0, **kwargs: object) -> fs.FourierSketch:
    return fs.FourierSketch.fit(
        f, f.n, ALPHABETS[f.q], budget=budget, seed=seed, input="codes", **kwargs
    )


@pytest.mark.parametrize(
    ("q", "n", "terms", "degree", "budget"),
    [(2, 14, 30, 4, 5000), (4, 20, 50, 3, 12_096), (4, 10, 20, 4, 6000), (20, 6, 10, 4, 12_000)],
)
def test_noiseless_sparse_functions_are_recovered_to_machine_precision(
    q: int, n: int, terms: int, degree: int, budget: int
) -> None:
    f = SparseFunction(q, n, terms, degree, seed=q + n)
    sketch = fit(f, budget)
    assert sketch.n_queries <= budget
    assert f.spectrum_error(sketch) < 1e-20
    assert len(sketch.keys) == len(f.spectrum)
    x = np.random.default_rng(1).integers(0, q, size=(200, n)).astype(np.uint8)
    np.testing.assert_allclose(sketch.predict(x), f(x), atol=1e-10)
    assert sketch.info["holdout_nmse"] < 1e-18


def test_error_under_noise_falls_with_the_budget() -> None:
    f = SparseFunction(4, 12, 25, 3, seed=3)
    rng = np.random.default_rng(0)

    def noisy(codes: np.ndarray) -> np.ndarray:
        return f(codes) + rng.normal(0.0, 0.1, len(codes))

    x = np.random.default_rng(2).integers(0, 4, size=(2000, 12)).astype(np.uint8)
    truth = f(x)
    errors = []
    for budget in (3000, 12_000, 48_000):
        sketch = fs.FourierSketch.fit(noisy, 12, "ACGT", budget=budget, seed=1, input="codes")
        errors.append(
            float(((sketch.predict(x) - truth) ** 2).sum() / ((truth - truth.mean()) ** 2).sum())
        )
    assert errors[0] > errors[1] > errors[2], errors
    assert errors[2] < 1e-3, errors


def test_explanations_match_brute_force_over_the_uniform_background() -> None:
    f = SparseFunction(3, 5, 8, 4, seed=7)
    sketch = fit(f, 3000)
    xs = np.random.default_rng(3).integers(0, 3, size=(3, 5)).astype(np.uint8)
    explanation = sketch.shapley_values(xs)
    mean = f(np.array(list(itertools.product(range(3), repeat=5)))).mean()
    np.testing.assert_allclose(explanation.base_values, mean, atol=1e-12)
    np.testing.assert_allclose(explanation.values.sum(1), f(xs) - mean, atol=1e-10)
    moebius = sketch.interactions(xs)
    assert moebius.index == "Moebius"
    for r, x in enumerate(xs):
        game = uniform_game(f, x)
        np.testing.assert_allclose(explanation.values[r], brute_force_shapley(game, 5), atol=1e-10)
        table = game(all_masks(5))  # row = bitmask of the coalition
        for key, value in zip(moebius.keys, moebius.values[r], strict=True):
            mask = sum(1 << p for p in key)
            subsets = [s for s in range(32) if s & mask == s]
            brute = sum((-1) ** bin(mask ^ s).count("1") * table[s] for s in subsets)
            assert value == pytest.approx(brute, abs=1e-10)


@pytest.mark.parametrize("index", ["k-SII", "STII", "FSII"])
def test_order_limited_interactions_match_shapiq(index: str) -> None:
    shapiq = pytest.importorskip("shapiq")
    f = SparseFunction(3, 5, 8, 4, seed=9)
    sketch = fit(f, 3000)
    x = np.array([[2, 0, 1, 1, 0]], dtype=np.uint8)
    ours = sketch.interactions(x, max_order=2, index=index)
    values = shapiq.ExactComputer(uniform_game(f, x[0]), n_players=5)(index, order=2)
    # shapiq computes FSII by a constrained least-squares solve, accurate to about 1e-9.
    tolerance = 1e-7 if index == "FSII" else 1e-10
    for key, value in zip(ours.keys, ours.values[0], strict=True):
        assert value == pytest.approx(values[key], abs=tolerance), key
    covered = {k for k in values.interaction_lookup if len(k) >= 1}
    assert covered <= set(ours.keys) | {k for k in covered if abs(values[k]) < 1e-9}
    np.testing.assert_allclose(ours.values.sum(1), sketch.predict(x) - sketch.mean, atol=1e-10)


def test_data_background_matches_the_exact_interventional_explainer() -> None:
    f = SparseFunction(4, 6, 12, 3, seed=5)
    sketch = fit(f, 6000)
    rng = np.random.default_rng(4)
    background = rng.integers(0, 4, size=(7, 6)).astype(np.uint8)
    xs = rng.integers(0, 4, size=(3, 6)).astype(np.uint8)
    ours = sketch.shapley_values(xs, background=background)
    theirs = fs.Explainer(
        lambda z: f(z.astype(np.uint8)), background.astype(np.float64), method="exact"
    )(xs.astype(np.float64))
    np.testing.assert_allclose(ours.values, theirs.values, atol=1e-10)
    np.testing.assert_allclose(ours.base_values, theirs.base_values, atol=1e-12)


@pytest.mark.slow
def test_trained_model_agrees_with_kernelshap_under_the_uniform_background() -> None:
    lightgbm = pytest.importorskip("lightgbm")
    n, alphabet = 10, "ACGT"
    rng = np.random.default_rng(0)

    def one_hot(codes: np.ndarray) -> np.ndarray:
        return (codes[:, :, None] == np.arange(4)).reshape(len(codes), -1).astype(np.float32)

    train = rng.integers(0, 4, size=(20_000, n))
    y = (
        2.0 * (train[:, 2] == 2)
        + 3.0 * ((train[:, 4] == 0) & (train[:, 7] == 1))
        - 2.0 * ((train[:, 0] == 3) & (train[:, 1] == 3))
        + 1.5 * ((train[:, 5] == 2) & (train[:, 8] == 3) & (train[:, 9] == 0))
        + rng.normal(0, 0.1, len(train))
    )
    booster = lightgbm.LGBMRegressor(
        n_estimators=150, num_leaves=15, learning_rate=0.1, verbose=-1, deterministic=True
    ).fit(one_hot(train), y)

    def model(codes: np.ndarray) -> np.ndarray:
        return booster.predict(one_hot(codes))

    sketch = fs.FourierSketch.fit(model, n, alphabet, budget=30_000, seed=0, input="codes")
    assert sketch.info["holdout_nmse"] < 0.05
    xs = rng.integers(0, 4, size=(6, n)).astype(np.uint8)
    fills = rng.integers(0, 4, size=(256, n))
    ours = sketch.shapley_values(xs).values
    reference = []
    for x in xs:

        def game(masks: np.ndarray, x: np.ndarray = x) -> np.ndarray:
            filled = np.where(masks[:, None, :], x, fills[None])  # [k, fills, n]
            return model(filled.reshape(-1, n)).reshape(len(masks), -1).mean(axis=1)

        reference.append(fs.shapley_values(game, n, method="kernel", budget=800, seed=1))
    r = np.corrcoef(ours.ravel(), np.array(reference).ravel())[0, 1]
    assert r >= 0.9, r


def test_same_seed_same_sketch_and_str_input_equals_codes() -> None:
    f = SparseFunction(4, 8, 10, 3, seed=2)
    a, b = fit(f, 4000, seed=5), fit(f, 4000, seed=5)
    assert np.array_equal(a.keys, b.keys) and np.array_equal(a.coefficients, b.coefficients)
    as_strings = fs.FourierSketch.fit(
        lambda seqs: f(np.array([["ACGT".index(c) for c in s] for s in seqs])),
        8,
        "ACGT",
        budget=4000,
        seed=5,
    )
    assert np.array_equal(as_strings.coefficients, a.coefficients)


def test_save_load_round_trip_is_identical(tmp_path: Path) -> None:
    f = SparseFunction(4, 8, 10, 3, seed=2)
    sketch = fit(f, 4000)
    path = tmp_path / "sketch.npz"
    sketch.save(path)
    loaded = fs.FourierSketch.load(path)
    seqs = ["ACGTACGT", "TTTTGGGG", "GATTACAA"]
    assert loaded.alphabet == sketch.alphabet and loaded.info == sketch.info
    assert np.array_equal(loaded.keys, sketch.keys)
    assert np.array_equal(loaded.coefficients, sketch.coefficients)
    assert np.array_equal(loaded.predict(seqs), sketch.predict(seqs))
    assert np.array_equal(loaded.shapley_values(seqs).values, sketch.shapley_values(seqs).values)
    a, b = loaded.interactions(seqs, max_order=2), sketch.interactions(seqs, max_order=2)
    assert a.keys == b.keys and np.array_equal(a.values, b.values)


def test_explain_dataset_streams_frames_and_parquet(tmp_path: Path) -> None:
    f = SparseFunction(4, 8, 10, 3, seed=2)
    sketch = fit(f, 4000)
    rng = np.random.default_rng(0)
    seqs = ["".join("ACGT"[c] for c in row) for row in rng.integers(0, 4, size=(1000, 8))]
    frame = pl.DataFrame({"id": np.arange(1000), "sequence": seqs})
    expected = sketch.shapley_values(seqs)
    out = sketch.explain_dataset(frame, keys=["id"], chunk_size=300)
    assert out.columns == ["id"] + [f"phi_{i}" for i in range(8)] + ["base_value"]
    np.testing.assert_array_equal(
        out.select(pl.selectors.starts_with("phi_")).to_numpy(), expected.values
    )
    np.testing.assert_array_equal(out["base_value"].to_numpy(), expected.base_values)
    source, target = tmp_path / "in.parquet", tmp_path / "out.parquet"
    frame.write_parquet(source, row_group_size=128)
    written = sketch.explain_dataset(source, output=target, chunk_size=256)
    assert written == target
    read = pl.read_parquet(target)
    assert read.columns[0] == "sequence" and read.height == 1000
    assert read.drop("sequence").equals(out.drop("id"))
    lazy = sketch.explain_dataset(frame.lazy(), chunk_size=999)
    assert lazy.equals(read)


def bad_letter_sketch() -> fs.FourierSketch:
    return fit(SparseFunction(4, 6, 5, 2, seed=1), 2000)


BAD_INPUT = {
    "wrong length": (
        lambda: bad_letter_sketch().shapley_values(["ACGTAC", "ACG"]),
        InvalidArgumentError,
        r"sequences: sequence 1 has length 3, expected 6",
    ),
    "letter outside the alphabet": (
        lambda: bad_letter_sketch().predict(["ACGTAC", "ACGNAC"]),
        InvalidArgumentError,
        r"sequence 1 has the letter 'N' at position 3, which is not in the alphabet 'ACGT'",
    ),
    "code outside the alphabet": (
        lambda: bad_letter_sketch().predict(np.array([[0, 1, 2, 3, 4, 0]])),
        InvalidArgumentError,
        r"sequence 0 has code 4 at position 4",
    ),
    "duplicate letters": (
        lambda: fs.FourierSketch.fit(len, 4, "ACGA", budget=1000),
        InvalidArgumentError,
        r"alphabet has the letter 'A' twice \(positions 0 and 3\)",
    ),
    "budget too small": (
        lambda: fs.FourierSketch.fit(len, 10, "ACGT", budget=100),
        InvalidArgumentError,
        r"budget: too small for any b: .* need a budget of at least 146, got 100",
    ),
    "budget beyond 64 bits": (
        lambda: fs.FourierSketch.fit(len, 10, "ACGT", budget=2**64),
        InvalidArgumentError,
        r"budget must be below 2\*\*64",
    ),
    "budget too large for memory": (
        lambda: _core.sketch_plan(256, 40, 2**64 - 1, 0),
        InvalidArgumentError,
        r"budget: .* do not fit in memory",
    ),
    "NaN model output": (
        lambda: fs.FourierSketch.fit(lambda s: [np.nan] * len(s), 4, "ACGT", budget=1000),
        InvalidArgumentError,
        r"model output contains",
    ),
    "model output of the wrong shape": (
        lambda: fs.FourierSketch.fit(lambda s: np.ones((len(s), 2)), 4, "ACGT", budget=1000),
        InvalidArgumentError,
        r"model must return one value per sequence",
    ),
    "model output of the wrong length": (
        lambda: fs.FourierSketch.fit(lambda s: np.ones(3), 4, "ACGT", budget=1000),
        InvalidArgumentError,
        r"model must return an array of shape",
    ),
    "unknown input": (
        lambda: fs.FourierSketch.fit(len, 4, "ACGT", budget=1000, input="onehot"),
        InvalidArgumentError,
        r"input must be one of 'str', 'codes'",
    ),
    "alphabet of one letter": (
        lambda: fs.FourierSketch.fit(len, 4, "A", budget=1000),
        InvalidArgumentError,
        r"alphabet must have 2 to 256 letters",
    ),
    "alphabet not letters": (
        lambda: fs.FourierSketch.fit(len, 4, ["AC", "G"], budget=1000),
        InvalidTypeError,
        r"alphabet must be a string",
    ),
    "unknown index": (
        lambda: bad_letter_sketch().interactions(["ACGTAC"], 2, index="SV"),
        InvalidArgumentError,
        r"index must be one of",
    ),
    "max_order 0": (
        lambda: bad_letter_sketch().interactions(["ACGTAC"], 0),
        InvalidArgumentError,
        r"max_order must be at least 1",
    ),
    "missing dataset column": (
        lambda: bad_letter_sketch().explain_dataset(pl.DataFrame({"seq": ["ACGTAC"]})),
        InvalidArgumentError,
        r"column\(s\) \['sequence'\] not in the data's columns \['seq'\]",
    ),
    "bad letter deep in a dataset": (
        lambda: bad_letter_sketch().explain_dataset(
            pl.DataFrame({"sequence": ["ACGTAC"] * 10 + ["ACGTAX"]}), chunk_size=4
        ),
        InvalidArgumentError,
        r"sequence: sequence 10 has the letter 'X' at position 5",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUT, ids=list(BAD_INPUT))
def test_bad_input_is_rejected_naming_the_argument(case: str) -> None:
    call, error, pattern = BAD_INPUT[case]
    with pytest.raises(error, match=pattern):
        call()


def test_corrupt_and_foreign_files_fail_to_load(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.npz"
    garbage.write_bytes(b"not a zip file at all")
    with pytest.raises(InvalidArgumentError, match="not a saved FourierSketch"):
        fs.FourierSketch.load(garbage)
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, weights=np.ones(3))
    with pytest.raises(InvalidArgumentError, match="magic string"):
        fs.FourierSketch.load(foreign)
    sketch = bad_letter_sketch()
    good = tmp_path / "good.npz"
    sketch.save(good)
    fields = dict(np.load(good))
    for change, pattern in [
        ({"format_version": np.array(99)}, "format version 99"),
        ({"keys": np.full_like(fields["keys"], 7)}, "corrupt: keys: key 0 has digit 7"),
        ({"real": fields["real"][:-1]}, "corrupt: keys must be uint8"),
        ({"metadata": np.array("{oops")}, "bad metadata"),
    ]:
        path = tmp_path / "changed.npz"
        np.savez(path, **{**fields, **change})
        with pytest.raises(InvalidArgumentError, match=pattern):
            fs.FourierSketch.load(path)
    with pytest.raises(FileNotFoundError):
        fs.FourierSketch.load(tmp_path / "missing.npz")


def test_sequence_interactions_convert_to_shapiq() -> None:
    pytest.importorskip("shapiq")
    sketch = fs.FourierSketch.fit(
        lambda seqs: [s.count("G") + 2.0 * (s[0] == s[3]) for s in seqs],
        6,
        "ACGT",
        budget=3000,
        seed=0,
    )
    iv = sketch.interactions(["GATGCA", "TTTTTT"], max_order=2)
    converted = iv.to_shapiq()
    assert len(converted) == 2 and converted[0].n_players == 6
    for r, values in enumerate(converted):
        for key, value in iv.row(r).items():
            assert values[key] == pytest.approx(value, abs=1e-12)
        assert values.baseline_value == pytest.approx(iv.base_values[r])
    assert iv.to_shapiq(1).baseline_value == pytest.approx(iv.base_values[1])


def test_n_jobs_does_not_change_the_sketch() -> None:
    f = SparseFunction(4, 10, 20, 3, seed=5)
    default, single = fit(f, 6000), fit(f, 6000, n_jobs=1)
    assert np.array_equal(default.keys, single.keys)
    assert np.array_equal(default.coefficients, single.coefficients)
