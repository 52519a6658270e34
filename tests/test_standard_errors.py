"""Standard errors of the estimates: `Explanation.standard_errors`, `Design.standard_errors`."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import ferroshap as fs
from conftest import bench_script
from ferroshap import _core
from ferroshap.query.games import RawGame
from ferroshap.sampling import auto
from ferroshap.sampling.engine import game_values

Z = 1.959963984540054
N = 8
SAMPLING = ("kernel", "kernel-wor", "leverage", "modified-l2", "unbiased", "permutation")


def unanimity_game(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A sum of unanimity games of orders 1-4: terms ``[k, n]``, coefficients and exact
    Shapley values."""
    rng = np.random.default_rng(seed)
    terms = np.zeros((3 * n, n), dtype=bool)
    for row in terms:
        row[rng.choice(n, size=rng.integers(1, 5), replace=False)] = True
    coefs = rng.uniform(-1, 1, len(terms))
    return terms, coefs, (coefs / terms.sum(1)) @ terms


def unanimity(terms: np.ndarray, coefs: np.ndarray):
    def game(masks: np.ndarray) -> np.ndarray:
        return (~(terms[None] & ~masks[:, None])).all(axis=2) @ coefs

    return game


def estimate(game, n: int, method: str, budget: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        phi, errors, *_ = game_values(
            RawGame(game, n), None, method, budget, seed, True, None, None, "test"
        )
    return phi, errors()


def linear_model(z: np.ndarray) -> np.ndarray:
    return z @ np.arange(1.0, 7.0) + z[:, 0] * z[:, 1] * z[:, 2]


def two_outputs(z: np.ndarray) -> np.ndarray:
    return np.stack([linear_model(z), np.sin(z).sum(1) * z[:, 3]], axis=1)


@pytest.mark.parametrize("outputs", [1, 2])
@pytest.mark.parametrize("method", [*SAMPLING, "auto", "exact"])
def test_shape_equals_values_shape(method: str, outputs: int) -> None:
    rng = np.random.default_rng(0)
    background, X = rng.normal(size=(10, 6)), rng.normal(size=(3, 6))
    model = linear_model if outputs == 1 else two_outputs
    ex = fs.Explainer(model, background, method=method, budget=30, seed=1)(X)
    assert ex.standard_errors is not None
    assert ex.standard_errors.shape == ex.values.shape
    assert np.all(ex.standard_errors >= 0)
    if method != "exact":
        assert np.any(ex.standard_errors > 0)


def test_zero_where_the_estimate_is_exact() -> None:
    rng = np.random.default_rng(1)
    background, X = rng.normal(size=(10, 6)), rng.normal(size=(2, 6))
    with pytest.warns(UserWarning, match="budget ≥ 2"):
        full = fs.Explainer(linear_model, background, method="leverage", budget=64)(X)
    exact = fs.Explainer(linear_model, background, method="exact")(X)
    assert np.all(full.standard_errors == 0) and np.all(exact.standard_errors == 0)
    # a feature equal to every background row is a null player: value and error are 0
    background[:, 4] = X[0, 4]
    ex = fs.Explainer(linear_model, background, method="kernel", budget=30)(X)
    assert ex.standard_errors[0, 4] == 0 and ex.standard_errors[1, 4] > 0


@pytest.mark.parametrize("method", ["kernel", "kernel-wor", "leverage", "modified-l2"])
def test_zero_for_a_game_the_regression_fits(method: str) -> None:
    weights = np.arange(1.0, N + 1)
    _, additive = estimate(lambda m: m @ weights, N, method, 40, 3)
    assert np.allclose(additive, 0, atol=1e-9)


@pytest.mark.parametrize("method", [*SAMPLING, "proxy-leverage", "tree-msr"])
def test_zero_for_a_constant_game(method: str) -> None:
    budget = 60 if method in ("proxy-leverage", "tree-msr") else 40
    phi, se = estimate(lambda m: np.full(len(m), 2.5), N, method, budget, 4)
    assert np.allclose(phi, 0) and np.allclose(se, 0, atol=1e-9)


@pytest.mark.parametrize(
    ("method", "budget"),
    [
        ("kernel", 40),
        ("leverage", 40),
        ("auto", 40),
        ("auto", 120),
        ("proxy-leverage", 120),
        ("tree-msr", 120),
    ],
)
def test_coverage_over_seeds(method: str, budget: int) -> None:
    terms, coefs, truth = unanimity_game(N, 11)
    game = unanimity(terms, coefs)
    covered = []
    for seed in range(50):
        phi, se = estimate(game, N, method, budget, seed)
        covered.append(np.abs(phi - truth) <= Z * se)
    assert 0.85 <= np.mean(covered) <= 0.99


@pytest.mark.parametrize("extra", [0, 2, 6])
def test_a_border_with_few_drawn_pairs_keeps_honest_errors(extra: int) -> None:
    # kernel-wor from 2n + 2 on enumerates the border; with fewer drawn pairs beside it than
    # n / 3 the residuals of the border count too (with none, the errors used to be 0)
    n = 12
    terms, coefs, truth = unanimity_game(n, 13)
    game = unanimity(terms, coefs)
    covered = []
    for seed in range(50):
        phi, se = estimate(game, n, "kernel-wor", 2 * n + 2 + extra, seed)
        assert np.all(se > 0)
        covered.append(np.abs(phi - truth) <= Z * se)
    assert 0.85 <= np.mean(covered) <= 1.0
    order_two = unanimity(terms[terms.sum(1) <= 2], coefs[terms.sum(1) <= 2])
    _, se = estimate(order_two, n, "kernel-wor", 2 * n + 2 + extra, 0)
    assert np.allclose(se, 0, atol=1e-9)


@pytest.mark.parametrize("method", ["kernel", "leverage", "unbiased", "permutation"])
def test_errors_shrink_as_the_budget_grows(method: str) -> None:
    terms, coefs, _ = unanimity_game(10, 12)
    game = unanimity(terms, coefs)
    mean_se = [
        np.mean([estimate(game, 10, method, budget, seed)[1].mean() for seed in range(5)])
        for budget in (40, 160, 640)
    ]
    assert mean_se[0] > mean_se[1] > mean_se[2] > 0


def test_deterministic_for_a_seed() -> None:
    rng = np.random.default_rng(2)
    background, X = rng.normal(size=(10, 6)), rng.normal(size=(3, 6))
    runs = [
        fs.Explainer(linear_model, background, method="kernel", budget=30, seed=5)(X)
        for _ in range(2)
    ]
    assert np.array_equal(runs[0].standard_errors, runs[1].standard_errors)


def test_design_errors_match_the_explanation() -> None:
    terms, coefs, _ = unanimity_game(N, 13)
    design = _core.plan("leverage", N, 40, 6)
    values = unanimity(terms, coefs)(design.masks())
    single = design.standard_errors(values)
    both = design.standard_errors(np.stack([values, 2 * values], axis=1))
    _, se = estimate(unanimity(terms, coefs), N, "leverage", 40, 6)
    assert single.shape == (N,) and both.shape == (2, N)
    assert np.allclose(both, [single, 2 * single]) and np.allclose(single, se)


def test_permutation_with_one_pair_is_nan() -> None:
    design = _core.plan("permutation", 4, 8, 0)
    se = design.standard_errors(design.masks() @ np.arange(4.0) + design.masks().all(1))
    assert np.all(np.isnan(se))


def test_to_polars_carries_errors() -> None:
    rng = np.random.default_rng(3)
    background, X = rng.normal(size=(10, 6)), rng.normal(size=(2, 6))
    ex = fs.Explainer(two_outputs, background, method="kernel", budget=30)(X)
    frame = ex.to_polars()
    names = ex.feature_names
    assert frame.columns == ["output", *names, "base_value", *[f"se_{f}" for f in names]]
    assert np.array_equal(frame["se_x3"].to_numpy(), ex.standard_errors[:, 3, :].ravel())


def test_bad_values_name_the_argument() -> None:
    design = _core.plan("kernel", 5, 20, 0)
    with pytest.raises(fs.InvalidArgumentError) as info:
        design.standard_errors(np.zeros(3))
    assert info.value.argument == "values"


def test_normal_equations_give_the_svd_errors() -> None:
    terms, coefs, _ = unanimity_game(30, 14)
    designs = [_core.plan("leverage", 30, 400, 7, solver=s) for s in ("svd", "normal")]
    values = unanimity(terms, coefs)(designs[0].masks())
    svd, normal = (design.standard_errors(values) for design in designs)
    assert designs[1].solver() == "normal"
    np.testing.assert_allclose(normal, svd, rtol=1e-8, atol=1e-12)


def test_standard_errors_are_computed_when_read_and_survive_pickling() -> None:
    import pickle

    rng = np.random.default_rng(0)
    ex = fs.Explainer(linear_model, rng.normal(size=(3, 6)), method="leverage", budget=40)(
        rng.normal(size=(2, 6))
    )
    assert "standard_errors" not in ex.__dict__  # not computed by the call itself
    copy = pickle.loads(pickle.dumps(ex))
    np.testing.assert_array_equal(copy.standard_errors, ex.standard_errors)
    np.testing.assert_array_equal(copy.values, ex.values)


@pytest.mark.parametrize("method", ["auto", "kernel", "leverage", "unbiased", "permutation"])
@pytest.mark.parametrize("budget", [40, 200])
def test_a_constant_game_gets_exact_zeros_and_zero_errors(method: str, budget: int) -> None:
    # the same value on every coalition: every estimator is exact, to the last bit
    bg = np.random.default_rng(0).normal(size=(5, 10))
    x = np.random.default_rng(1).normal(size=(3, 10))
    ex = fs.Explainer(lambda z: np.full(len(z), 3.0), bg, method=method, budget=budget, seed=0)(x)
    assert not ex.values.any()
    assert not ex.standard_errors.any()
    assert not fs.shapley_values(
        lambda m: np.full(len(m), -2.0), 10, method=method, budget=budget
    ).any()


def test_a_constant_game_scores_near_zero_at_small_budgets() -> None:
    # small-choice's held-out scores: rounding noise is not divided by an odd part of zero
    bg = np.random.default_rng(0).normal(size=(5, 10))
    x = np.random.default_rng(1).normal(size=(3, 10))
    ex = fs.Explainer(lambda z: np.full(len(z), 3.0), bg, budget=50, seed=0)(x)
    assert ex.method == "auto" and not ex.values.any() and not ex.standard_errors.any()
    (scores,) = ex.diagnostics["held_out_errors"]
    assert set(scores) == set(auto.SMALL_CANDIDATES)
    assert all(0 <= score < 1e-3 for score in scores.values()), scores  # was ~1e273


def test_the_coverage_bench_runs_on_suite_games() -> None:
    """``benches/bench_standard_errors.py --suite``: a suite game explained through the
    Explainer, every (feature, row, seed) pair counted; rounding-level errors count as covered."""
    bench = bench_script("bench_standard_errors")
    [(name, method, factor, hits, pairs, ratio)] = bench.suite_counts(
        "forest", 50, ["auto"], [5], range(2)
    )
    assert (name, method, factor, pairs) == ("forest/50", "auto", 5, 2 * 4 * 10)
    assert 0 < hits <= pairs and ratio > 0
    truth = np.array([1.0, -2.0])
    assert bench.covered(np.array([1e-15, 0.0]), np.zeros(2), truth).all()
    assert not bench.covered(np.array([1e-3, 0.0]), np.array([1e-4, 0.0]), truth)[0]
