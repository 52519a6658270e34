"""ProxySPEX end to end: sparse unanimity games at n = 64 and 256, faithfulness on a noisy game,
maskers, reproducibility and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import ferroshap as fs
from ferroshap import InvalidArgumentError, InvalidTypeError, _core
from ferroshap.bench.games import SumOfUnanimity
from ferroshap.bench.metrics import relative_l2_error


def true_terms(soum: SumOfUnanimity) -> dict[tuple[int, ...], float]:
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
    soum = SumOfUnanimity.random(n, n_terms, order, seed=n)
    iv = fs.ProxySPEX(
        soum, n_players=n, budget=budget, max_order=order, index="Moebius", seed=1
    ).explain()
    assert iv.n_evaluations == budget
    assert relative_l2_error(iv.shapley_values().values[0], soum.shapley) < sv_tolerance
    truth = true_terms(soum)
    large = {k: c for k, c in truth.items() if abs(c) > 0.3}
    recovered = [k for k, c in large.items() if abs(iv.values.get(k, 0.0) - c) < 0.1 * abs(c)]
    assert len(recovered) >= 0.8 * len(large), (sorted(large), iv.top(len(large)))


def test_faithfulness_on_a_noisy_sparse_game() -> None:
    soum = SumOfUnanimity.random(32, 15, 3, seed=5)
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
    soum = SumOfUnanimity.random(20, 8, 3, seed=2)
    first = fs.ProxySPEX(soum, n_players=20, budget=300, seed=7).explain()
    second = fs.ProxySPEX(soum, n_players=20, budget=300, seed=7).explain()
    assert first.values == second.values
    np.testing.assert_array_equal(
        first.shapley_values().values[0], second.shapley_values().values[0]
    )


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
    np.testing.assert_allclose(iv.shapley_values().values[0], w * 0.5, atol=1e-8)
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
    game = SumOfUnanimity.random(6, 5, 3, seed=1)
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
        ({"game_or_model": 5}, InvalidTypeError, "game_or_model must be callable"),
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
    soum = SumOfUnanimity.random(200, 30, 3, seed=7)
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
    from ferroshap.interactions.proxy import proxy_learning_rate, proxy_threads

    rates = [proxy_learning_rate(n) for n in (1, 128, 256, 512, 1024, 4096)]
    assert rates[:2] == [0.1, 0.1] and rates[-2:] == [0.3, 0.3]
    assert rates[1] < rates[2] < rates[3] < rates[4]
    assert proxy_threads(100) == 1 and 1 <= proxy_threads(2**24) <= 8
    iv = fs.ProxySPEX(
        SumOfUnanimity.random(300, 10, 2, seed=1), n_players=300, budget=600, seed=0
    ).explain()
    assert iv.diagnostics["learning_rate"] == pytest.approx(proxy_learning_rate(300))


def test_blend_of_the_bases_scores_at_least_either_basis_alone() -> None:
    from ferroshap.interactions.proxy import DEFAULT_PROXY_PARAMS
    from ferroshap.interactions.proxy import fit_proxy as _fit_proxy
    from ferroshap.interactions.surrogate import BLEND_WEIGHTS, SELECTION_BASES
    from ferroshap.interactions.surrogate import blend as _blend
    from ferroshap.interactions.surrogate import blend_weight as _blend_weight
    from ferroshap.scores import r_squared

    n, soum = 20, SumOfUnanimity.random(20, 15, 3, 0)
    masks = _core.plan_masks(n, 600, 0)
    values = soum(masks) + np.random.default_rng(0).normal(0.0, 0.1, len(masks))
    train, validation = (masks[:480], values[:480]), (masks[480:], values[480:])
    booster = _fit_proxy({**DEFAULT_PROXY_PARAMS, "learning_rate": 0.1}, train, validation)
    spectrum = _core.lightgbm_fourier(booster.model_to_string(), n)
    selections = [_core.select_support(spectrum, b, *train, *validation) for b in SELECTION_BASES]
    weight, score = _blend_weight([s[2] for s in selections], validation[1])
    assert weight in BLEND_WEIGHTS
    assert score >= max(r_squared(validation[1], s[2]) for s in selections)
    fits = {
        b: _core.refit_top(spectrum, b, s[0], masks, values)
        for b, s in zip(SELECTION_BASES, selections, strict=True)
    }
    weights = dict(zip(SELECTION_BASES, (weight, 1.0 - weight), strict=True))
    surrogate = _blend(fits, weights)
    probe = np.random.default_rng(1).random((50, n)) < 0.5
    moebius, fourier = (fits[b].evaluate(probe) for b in SELECTION_BASES)
    mixed = weight * moebius + (1 - weight) * fourier
    np.testing.assert_allclose(surrogate.evaluate(probe), mixed, atol=1e-10)
    assert _blend_weight([selections[0][2]] * 2, validation[1])[0] == 1.0  # ties: one basis
    alone = {SELECTION_BASES[0]: fits[SELECTION_BASES[0]], SELECTION_BASES[1]: None}
    assert _blend(alone, {SELECTION_BASES[0]: 1.0, SELECTION_BASES[1]: 0.0}) is alone["Moebius"]
    iv = fs.ProxySPEX(lambda m: soum(m), n_players=n, budget=600, seed=0).explain()
    assert iv.diagnostics["basis"] in ("Moebius", "Fourier", "blend")


def test_refit_top_fits_the_largest_keys_on_every_sample() -> None:
    """An exactly sparse function's own spectrum, refitted on its values, is recovered; its
    two largest keys alone are their least-squares fit; a support of all samples is refused."""
    n = 12
    keys, coefficients = [(), (0,), (1, 2), (3, 4, 5)], np.array([1.0, 2.0, -3.0, 0.5])
    truth = _core.SparseFunction("Moebius", n, keys, coefficients)
    masks = _core.plan_masks(n, 300, 0)
    values = truth.evaluate(masks)
    full = _core.refit_top(truth, "Moebius", 3, masks, values)
    np.testing.assert_allclose(full.evaluate(masks), values, atol=1e-10)
    two = _core.refit_top(truth, "Moebius", 2, masks, values)
    assert sorted(two.keys()) == [(), (0,), (1, 2)]
    design = np.column_stack([np.ones(len(masks)), masks[:, 0], masks[:, 1] & masks[:, 2]])
    expected = np.linalg.lstsq(design.astype(float), values, rcond=None)[0]
    np.testing.assert_allclose(two.evaluate(masks), design @ expected, atol=1e-10)
    with pytest.raises(InvalidArgumentError, match="support"):
        _core.refit_top(truth, "Moebius", 300, masks, values)
    with pytest.raises(InvalidArgumentError, match="basis"):
        _core.refit_top(truth, "Walsh", 2, masks, values)


def test_refitting_the_proxy_on_every_mask_helps_on_noisy_sparse_games() -> None:
    """By default a proxy short of data (validation R² below REFIT_PROXY_R2) is fitted again on
    every mask, which lowers the Shapley error of noisy unanimity games over seeds;
    ``refit_proxy=False`` keeps the training-only proxy, and a near-exact proxy is kept."""
    n, errors = 64, {None: [], False: []}
    for seed in range(4):
        soum = SumOfUnanimity.random(n, 40, 4, seed)
        rng = np.random.default_rng(seed + 1000)
        sd = 0.05 * soum(rng.random((2000, n)) < 0.5).std()
        noise = rng.normal(0.0, sd, 1000)
        for refit in (None, False):
            iv = fs.ProxySPEX(
                lambda m, soum=soum, noise=noise: soum(m) + noise[: len(m)],
                n_players=n,
                budget=1000,
                seed=seed,
                refit_proxy=refit,
            ).explain()
            assert iv.diagnostics["refit_proxy"] is (refit is None)
            errors[refit].append(relative_l2_error(iv.shapley_values().values[0], soum.shapley))
    assert np.median(errors[None]) < np.median(errors[False]), errors
    exact = fs.ProxySPEX(
        SumOfUnanimity.random(20, 5, 2, 0), n_players=20, budget=400, seed=0
    ).explain()
    assert exact.diagnostics["proxy_validation_r2"] >= 0.98
    assert exact.diagnostics["refit_proxy"] is False
    forced = fs.ProxySPEX(
        SumOfUnanimity.random(20, 5, 2, 0), n_players=20, budget=400, seed=0, refit_proxy=True
    )
    assert forced.explain().diagnostics["refit_proxy"] is True
    with pytest.raises(InvalidTypeError, match="refit_proxy"):
        fs.ProxySPEX(SumOfUnanimity.random(20, 5, 2, 0), n_players=20, refit_proxy="yes")  # type: ignore[arg-type]


def test_refit_ridge_is_the_proxy_scaled_ridge_in_closed_form() -> None:
    """``refit_ridge`` equals the generalized ridge computed with numpy: Fourier columns centred,
    each scaled by its |coefficient| over the largest, penalty ``λ = penalty * rows``, the
    intercept free; in both the primal (rows > terms) and the dual (rows < terms) form."""
    n = 10
    rng = np.random.default_rng(3)
    keys = [(0,), (1, 2), (3,), (4, 5, 6), (7,), (8, 9), (2,), (5,)]
    prior = _core.SparseFunction("Fourier", n, keys, rng.normal(size=len(keys)))
    for rows, penalty in ((200, 1e-3), (6, 0.05)):
        masks = _core.plan_masks(n, rows, rows)
        values = rng.normal(size=rows)
        fit = _core.refit_ridge(prior, penalty, masks, values)
        ranked = sorted(
            zip(prior.keys(), prior.coefficients(), strict=True), key=lambda t: -abs(t[1])
        )
        scales = np.array([abs(c) for _, c in ranked]) / max(abs(c) for _, c in ranked)
        x = np.column_stack([np.prod(1.0 - 2.0 * masks[:, list(k)], axis=1) for k, _ in ranked])
        z = (x - x.mean(axis=0)) * scales
        g = np.linalg.solve(
            z.T @ z + penalty * rows * np.eye(len(keys)), z.T @ (values - values.mean())
        )
        expected = values.mean() + (x - x.mean(axis=0)) @ (scales * g)
        np.testing.assert_allclose(fit.evaluate(masks), expected, atol=1e-9)
        assert fit.basis == "Fourier"
    with pytest.raises(InvalidArgumentError, match="penalty"):
        _core.refit_ridge(prior, 0.0, masks, values)


def test_select_ridge_scores_the_training_fit_on_the_validation_split() -> None:
    """The chosen penalty's validation predictions are those of ``refit_ridge`` on the training
    split; an exactly sparse spectrum is fitted to rounding with a small penalty."""
    n = 16
    truth = _core.SparseFunction(
        "Fourier", n, [(), (0,), (1, 2), (3, 4, 5)], np.array([0.2, 1.0, -0.5, 0.3])
    )
    masks = _core.plan_masks(n, 300, 1)
    values = truth.evaluate(masks) + np.random.default_rng(0).normal(0.0, 0.05, 300)
    train, validation = (masks[:240], values[:240]), (masks[240:], values[240:])
    penalty, r2, fitted = _core.select_ridge(truth, *train, *validation)
    on_train = _core.refit_ridge(truth, penalty, *train)
    np.testing.assert_allclose(fitted, on_train.evaluate(validation[0]), atol=1e-9)
    assert r2 == pytest.approx(
        1.0
        - np.sum((validation[1] - fitted) ** 2)
        / np.sum((validation[1] - validation[1].mean()) ** 2)
    )
    exact = truth.evaluate(masks)
    penalty, r2, _ = _core.select_ridge(truth, masks[:240], exact[:240], masks[240:], exact[240:])
    assert r2 > 1.0 - 1e-9 and penalty < 1e-6


def test_the_proxy_scaled_ridge_where_the_proxy_is_short_of_data() -> None:
    """On data-poor unanimity games (n = 32, budget 500) the ridge lowers the median Shapley
    error over seeds; by default an exactly recovered game keeps the sparse fit and its exact
    terms; ``ridge=True`` forces the ridge; a bad type gets a clear error."""
    n, errors = 32, {True: [], False: []}
    for seed in range(5):
        soum = SumOfUnanimity.random(n, 20, 3, seed)
        for ridge in (True, False):
            iv = fs.ProxySPEX(soum, n_players=n, budget=500, seed=seed, ridge=ridge).explain()
            assert iv.diagnostics["fit"] == ("ridge" if ridge else "sparse")
            errors[ridge].append(relative_l2_error(iv.shapley_values().values[0], soum.shapley))
    assert np.median(errors[True]) < np.median(errors[False]), errors
    game = SumOfUnanimity.random(20, 5, 2, 0)
    exact = fs.ProxySPEX(game, n_players=20, budget=400, seed=0, index="Moebius").explain()
    assert exact.diagnostics["fit"] == "sparse"
    assert exact.diagnostics["ridge_penalty"] is None
    for key, value in true_terms(game).items():
        assert exact.values[key] == pytest.approx(value, abs=1e-9)
    with pytest.raises(InvalidTypeError, match="ridge"):
        fs.ProxySPEX(game, n_players=20, ridge=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="efficient"):
        fs.ProxySPEX(game, n_players=20, efficient=None)  # type: ignore[arg-type]


def test_outlying_empty_and_full_coalitions_are_queried_but_not_fitted() -> None:
    """∅ and N are in the plan and the budget, but values there far from all the others do not
    pull the proxy: with ``efficient=False`` a sparse game with spikes at ∅ and N is recovered
    exactly on every other mask, and ``efficiency_gap`` reports what the surrogate's total
    leaves out of the game's; without spikes both are fitted."""
    soum = SumOfUnanimity.random(20, 5, 2, 0)

    def spiked(masks: np.ndarray) -> np.ndarray:
        return soum(masks) + 50.0 * masks.all(axis=1) - 30.0 * (~masks).all(axis=1)

    iv = fs.ProxySPEX(
        spiked, n_players=20, budget=400, seed=0, index="Moebius", efficient=False
    ).explain()
    assert iv.n_evaluations == 400
    for key, value in true_terms(soum).items():
        assert iv.values[key] == pytest.approx(value, abs=1e-9)
    assert iv.diagnostics["efficiency_gap"] == pytest.approx(80.0, abs=1e-9)
    assert iv.diagnostics["extremes_fitted"] == (False, False)
    plain = fs.ProxySPEX(soum, n_players=20, budget=400, seed=0).explain()
    assert plain.diagnostics["extremes_fitted"] == (True, True)
    assert plain.diagnostics["efficiency_gap"] == pytest.approx(0.0, abs=1e-9)
    held_out = np.random.default_rng(1).random((300, 20)) < 0.5
    assert iv.faithfulness(spiked, held_out) == pytest.approx(1.0, abs=1e-12)
