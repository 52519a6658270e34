"""ProxySPEX end to end: sparse unanimity games at n = 64 and 256, faithfulness on a noisy game,
maskers, reproducibility and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import ferroshap as fs
from conftest import Soum, relative_error
from ferroshap import _core
from ferroshap.errors import InvalidArgumentError, InvalidTypeError


def true_terms(soum: Soum) -> dict[tuple[int, ...], float]:
    return {
        tuple(np.flatnonzero(t).tolist()): float(c)
        for t, c in zip(soum.terms, soum.coefficients, strict=True)
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("n", "n_terms", "order", "budget", "sv_tolerance"),
    [(64, 20, 4, 1500, 0.05), (256, 12, 5, 3000, 0.05)],
)
def test_sum_of_unanimity_games(
    n: int, n_terms: int, order: int, budget: int, sv_tolerance: float
) -> None:
    """Noiseless SOUM: the large terms are recovered in the Möbius values and the Shapley values
    are within ``sv_tolerance`` (relative) of the closed form."""
    soum = Soum(n, n_terms, order, seed=n)
    iv = fs.ProxySPEX(
        soum, n_players=n, budget=budget, max_order=order, index="Moebius", seed=1
    ).explain()
    assert iv.n_evaluations == budget
    assert relative_error(iv.shapley_values(), soum.shapley) < sv_tolerance
    truth = true_terms(soum)
    large = {k: c for k, c in truth.items() if abs(c) > 0.3}
    recovered = [k for k, c in large.items() if abs(iv.values.get(k, 0.0) - c) < 0.1 * abs(c)]
    assert len(recovered) >= 0.8 * len(large), (sorted(large), iv.top(len(large)))


def test_faithfulness_on_a_noisy_sparse_game() -> None:
    soum = Soum(32, 15, 3, seed=5)
    rng = np.random.default_rng(0)
    sd = 0.05 * soum(rng.random((1000, 32)) < 0.5).std()

    def noisy(masks: np.ndarray) -> np.ndarray:
        return soum(masks) + rng.normal(0.0, sd, len(masks))

    iv = fs.ProxySPEX(noisy, n_players=32, budget=1000, max_order=3, seed=0).explain()
    held_out = np.random.default_rng(1).random((1000, 32)) < 0.5
    assert iv.faithfulness(soum, held_out) >= 0.9
    assert iv.diagnostics["validation_r2"] >= 0.9
    assert iv.index == "k-SII" and all(1 <= len(k) <= 3 for k in iv.values)


def test_same_seed_same_values_bit_for_bit() -> None:
    soum = Soum(20, 8, 3, seed=2)
    first = fs.ProxySPEX(soum, n_players=20, budget=300, seed=7).explain()
    second = fs.ProxySPEX(soum, n_players=20, budget=300, seed=7).explain()
    assert first.values == second.values
    np.testing.assert_array_equal(first.shapley_values(), second.shapley_values())


def test_masks_are_distinct_and_include_empty_and_full() -> None:
    masks = _core.plan_masks(30, 500, 3)
    assert masks.shape == (500, 30)
    assert not masks[0].any() and masks[1].all()
    assert len({row.tobytes() for row in masks}) == 500
    np.testing.assert_array_equal(masks, _core.plan_masks(30, 500, 3))


def test_baseline_masker_on_an_additive_model() -> None:
    w = np.arange(1.0, 9.0)
    background = np.zeros((1, 8)) + 0.5
    x = np.ones(8)
    explainer = fs.ProxySPEX(
        lambda z: z @ w, masker=fs.maskers.Baseline(background), budget=200, index="SV"
    )
    iv = explainer.explain(x)
    np.testing.assert_allclose(iv.shapley_values(), w * 0.5, atol=1e-8)
    np.testing.assert_allclose(iv.base_values, [background[0] @ w])


def test_tokens_masker() -> None:
    ids = np.array([5, 9, 5, 2, 7, 5, 1, 3, 8, 4, 6, 5])

    def model(batch: np.ndarray) -> np.ndarray:
        return (batch == 5).sum(axis=1) + 2.0 * ((batch[:, 1] == 9) & (batch[:, 4] == 7))

    iv = fs.ProxySPEX(model, masker=fs.maskers.Tokens(0), budget=1000, index="Moebius").explain(ids)
    assert iv.values.get((1, 4)) == pytest.approx(2.0, abs=1e-6)
    for position in np.flatnonzero(ids == 5):
        assert iv.values.get((int(position),)) == pytest.approx(1.0, abs=1e-6)


def test_budget_covering_every_coalition_is_exact() -> None:
    game = Soum(6, 5, 3, seed=1)
    with pytest.warns(UserWarning, match="exact interaction values"):
        iv = fs.ProxySPEX(game, n_players=6, budget=64, index="SII", max_order=3).explain()
    oracle = fs.exact_interactions(game, 6, index="SII", max_order=3)
    assert iv.values.keys() == oracle.values.keys()
    for key, value in oracle.values.items():
        assert iv.values[key] == pytest.approx(value, abs=1e-10)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"budget": 40}, InvalidArgumentError, r"budget must be at least 48 \(16 validation"),
        ({"max_order": 0}, InvalidArgumentError, "max_order must be at least 1"),
        ({"index": "Shapley"}, InvalidArgumentError, r"index must be one of .*'k-SII'"),
        ({"n_players": None}, InvalidArgumentError, "n_players .* is required"),
        ({"game_or_model": 5}, InvalidTypeError, "game must be callable"),
        ({"validation_fraction": 1.5}, InvalidArgumentError, "validation_fraction"),
        ({"seed": -1}, InvalidArgumentError, "seed"),
        ({"proxy_params": [1]}, InvalidTypeError, "proxy_params must be a dict"),
    ],
)
def test_bad_input(kwargs: dict[str, object], error: type[Exception], pattern: str) -> None:
    arguments: dict[str, object] = {
        "game_or_model": lambda m: m.sum(1) * 1.0,
        "n_players": 10,
        **kwargs,
    }
    with pytest.raises(error, match=pattern):
        fs.ProxySPEX(**arguments)  # type: ignore[arg-type]


def test_bad_explain_calls() -> None:
    game = lambda m: m.sum(1) * 1.0  # noqa: E731
    with pytest.raises(InvalidArgumentError, match="x must be None for a raw game"):
        fs.ProxySPEX(game, n_players=10, budget=100).explain(np.ones(10))
    with_masker = fs.ProxySPEX(lambda z: z.sum(1), masker=fs.maskers.Baseline(np.zeros(3)))
    with pytest.raises(InvalidArgumentError, match=r"x .* is required with a masker"):
        with_masker.explain()
    with pytest.raises(InvalidArgumentError, match="x has 4 features but rows has 3"):
        with_masker.explain(np.ones(4))
    with pytest.raises(InvalidArgumentError, match="integer token ids"):
        fs.ProxySPEX(lambda b: b.sum(1), masker=fs.maskers.Tokens(0)).explain([0.5, 1.5])
    with pytest.raises(InvalidTypeError, match="masker must be"):
        fs.ProxySPEX(lambda z: z, masker=object())  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="one value per coalition"):
        fs.ProxySPEX(lambda m: np.ones((len(m), 2)), n_players=10, budget=100).explain()


def test_same_result_on_any_number_of_threads() -> None:
    """The proxy is deterministic across LightGBM thread counts (and so is everything after)."""
    soum = Soum(200, 30, 3, seed=7)
    runs = [
        fs.ProxySPEX(
            soum, n_players=200, budget=1500, seed=3, proxy_params={"num_threads": threads}
        ).explain()
        for threads in (1, 2, 3)
    ]
    for run in runs[1:]:
        assert run.values == runs[0].values
        assert run.diagnostics["n_trees"] == runs[0].diagnostics["n_trees"]


def test_learning_rate_grows_with_players() -> None:
    from ferroshap.proxyspex import proxy_learning_rate, proxy_threads

    rates = [proxy_learning_rate(n) for n in (1, 128, 256, 512, 1024, 4096)]
    assert rates[:2] == [0.1, 0.1] and rates[-2:] == [0.3, 0.3]
    assert rates[1] < rates[2] < rates[3] < rates[4]
    assert proxy_threads(100) == 1 and 1 <= proxy_threads(2**24) <= 8
    iv = fs.ProxySPEX(Soum(300, 10, 2, seed=1), n_players=300, budget=600, seed=0).explain()
    assert iv.diagnostics["learning_rate"] == pytest.approx(proxy_learning_rate(300))


def test_blend_of_the_bases_scores_at_least_either_basis_alone() -> None:
    from ferroshap.interactions import r_squared
    from ferroshap.proxyspex import (
        BLEND_WEIGHTS,
        DEFAULT_PROXY_PARAMS,
        SELECTION_BASES,
        _blend,
        _fit_proxy,
    )

    n, soum = 20, Soum(20, 15, 3, 0)
    masks = _core.plan_masks(n, 600, 0)
    values = soum(masks) + np.random.default_rng(0).normal(0.0, 0.1, len(masks))
    train, validation = (masks[:480], values[:480]), (masks[480:], values[480:])
    booster = _fit_proxy({**DEFAULT_PROXY_PARAMS, "learning_rate": 0.1}, train, validation)
    spectrum = _core.lightgbm_fourier(booster.model_to_string(), n)
    fits = [_core.select_and_refit(spectrum, b, *train, *validation) for b in SELECTION_BASES]
    surrogate, weight, score = _blend(fits, validation[1])
    assert weight in BLEND_WEIGHTS
    assert score >= max(r_squared(validation[1], fit[3]) for fit in fits)
    probe = np.random.default_rng(1).random((50, n)) < 0.5
    mixed = weight * fits[0][0].evaluate(probe) + (1 - weight) * fits[1][0].evaluate(probe)
    np.testing.assert_allclose(surrogate.evaluate(probe), mixed, atol=1e-10)
    same, tie_weight, _ = _blend([fits[0], fits[0]], validation[1])
    assert tie_weight == 1.0 and same is fits[0][0]  # equal fits: the single basis, as it is
    iv = fs.ProxySPEX(lambda m: soum(m), n_players=n, budget=600, seed=0).explain()
    assert iv.diagnostics["basis"] in ("Moebius", "Fourier", "blend")
