"""Tree → Fourier against LightGBM itself, every index against the enumeration oracle and shapiq,
the Interactions object and its plots, and bad input."""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any

import lightgbm as lgb
import numpy as np
import pytest
import shapiq

import ferroshap as fs
from ferroshap import InvalidArgumentError, InvalidTypeError, _core
from ferroshap.interactions.exact import all_masks

PARAMS = {"verbosity": -1, "num_threads": 1, "deterministic": True, "force_col_wise": True}


def fit(x: np.ndarray, y: np.ndarray, rounds: int = 30, **params: object) -> lgb.Booster:
    return lgb.train({**PARAMS, **params}, lgb.Dataset(x, y), num_boost_round=rounds)


def assert_reproduces(booster: lgb.Booster, n: int, text: str | None = None) -> None:
    """The exact spectrum's synthesis equals ``predict`` on all 2**n masks (to 1e-9)."""
    spectrum = _core.lightgbm_fourier(text or booster.model_to_string(), n)
    masks = all_masks(n)
    expected = booster.predict(masks.astype(np.float64))
    np.testing.assert_allclose(spectrum.evaluate(masks), expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_models_reproduce_predict_on_every_mask(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 10
    x = (rng.random((400, n)) < 0.5).astype(np.float64)
    y = x[:, 0] * x[:, 1] - 2 * x[:, 3] + x[:, 4] * x[:, 5] * x[:, 6] + rng.normal(0, 0.1, 400)
    booster = fit(x, y, max_depth=1 + seed * 3, num_leaves=4 + seed * 10)
    assert_reproduces(booster, n)


@pytest.mark.parametrize("zero_as_missing", [False, True])
def test_models_trained_with_missing_values(zero_as_missing: bool) -> None:
    """NaN in 0/1 training data gives missing type NaN; zero_as_missing on data with other
    values gives missing type Zero (with default left and right). Both on 0/1 masks."""
    rng = np.random.default_rng(3)
    n = 8
    levels = [0.0, 0.5, 1.0] if zero_as_missing else [0.0, 1.0]
    x = rng.choice(levels, size=(500, n))
    y = 3 * x[:, 0] - x[:, 1] * x[:, 2] + rng.normal(0, 0.1, 500)
    if not zero_as_missing:
        x[rng.random(x.shape) < 0.15] = np.nan
    booster = fit(x, y, zero_as_missing=zero_as_missing)
    text = booster.model_to_string()
    types = {int(t) for line in re.findall(r"decision_type=(.*)", text) for t in line.split()}
    expected = 1 if zero_as_missing else 2
    assert any(t >> 2 & 3 == expected for t in types), f"no missing type {expected} in {types}"
    assert_reproduces(booster, n)


def test_hand_written_missing_value_rules_match_lightgbm() -> None:
    """Rewrite a clean model's decision types and thresholds; LightGBM's own predict is the
    oracle for each rule (missing None / Zero / NaN, default left or right)."""
    rng = np.random.default_rng(4)
    n = 6
    x = (rng.random((300, n)) < 0.5).astype(np.float64)
    y = x @ rng.normal(size=n) + x[:, 0] * x[:, 1]
    # Without tree_sizes LightGBM reads the edited (resized) tree blocks sequentially.
    text = re.sub(r"tree_sizes=.*\n", "", fit(x, y, rounds=5, max_depth=3).model_to_string())
    for decision_type in (0, 2, 4, 6, 8, 10):
        for threshold in ("1.0000000180025095e-35", "0.5", "-0.5", "1.5"):
            edited = re.sub(
                r"decision_type=(.*)",
                lambda m, d=decision_type: (
                    "decision_type=" + " ".join([str(d)] * len(m[1].split()))
                ),
                text,
            )
            edited = re.sub(
                r"\nthreshold=(.*)",
                lambda m, t=threshold: "\nthreshold=" + " ".join([t] * len(m[1].split())),
                edited,
            )
            assert_reproduces(lgb.Booster(model_str=edited), n, edited)


def test_extraction_rejects_what_it_cannot_transform() -> None:
    rng = np.random.default_rng(5)
    x = (rng.random((200, 4)) < 0.5).astype(np.float64)
    y = x[:, 0] + x[:, 1]
    text = fit(x, y, rounds=3).model_to_string()
    with pytest.raises(InvalidArgumentError, match=r"^model: .*feature 3.*n_players = 3"):
        _core.lightgbm_fourier(text, 3)
    categorical = re.sub(r"decision_type=(\d+)", "decision_type=1", text, count=1)
    with pytest.raises(InvalidArgumentError, match="categorical"):
        _core.lightgbm_fourier(categorical, 4)
    binary = fit(x, (y > 1).astype(float), rounds=3, objective="binary").model_to_string()
    with pytest.raises(InvalidArgumentError, match="not a regression objective"):
        _core.lightgbm_fourier(binary, 4)
    with pytest.raises(InvalidArgumentError, match="model text"):
        _core.lightgbm_fourier('{"json": "dump"}', 4)


def chain_model(depth: int) -> str:
    """Model text of one tree: split ``i`` sends ``x_i = 0`` to leaf ``i`` (value ``i + 1``) and
    ``x_i = 1`` deeper; the last split's right child is leaf ``depth``."""
    lefts = " ".join(str(-(i + 1)) for i in range(depth))
    rights = " ".join([str(i + 1) for i in range(depth - 1)] + [str(-(depth + 1))])
    return (
        f"tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n"
        f"max_feature_idx={depth - 1}\nobjective=regression\n\nTree=0\nnum_leaves={depth + 1}\n"
        f"num_cat=0\nsplit_feature={' '.join(map(str, range(depth)))}\n"
        f"threshold={' '.join(['1.0000000180025095e-35'] * depth)}\n"
        f"decision_type={' '.join(['2'] * depth)}\nleft_child={lefts}\nright_child={rights}\n"
        f"leaf_value={' '.join(str(i + 1) for i in range(depth + 1))}\nis_linear=0\n"
        f"shrinkage=1\n\n\nend of trees\n"
    )


def test_deep_paths_are_refused_with_a_clear_error() -> None:
    masks = np.random.default_rng(6).random((500, 12)) < 0.5
    first_zero = np.where(masks.all(axis=1), 12, np.argmin(masks, axis=1))
    spectrum = _core.lightgbm_fourier(chain_model(12), 12)
    np.testing.assert_allclose(spectrum.evaluate(masks), first_zero + 1.0, atol=1e-12)
    # The deepest leaves would expand into 2^24 terms: refused before expanding them.
    with pytest.raises(InvalidArgumentError, match=r"^model: .*use shallower trees"):
        _core.lightgbm_fourier(chain_model(24), 24)


def random_moebius(n: int, terms: int, seed: int) -> _core.SparseFunction:
    rng = np.random.default_rng(seed)
    keys = [
        tuple(sorted(rng.choice(n, size=rng.integers(0, n + 1), replace=False).tolist()))
        for _ in range(terms)
    ]
    return _core.SparseFunction("Moebius", n, keys, rng.uniform(-1, 1, terms))


def dense(values: dict[tuple[int, ...], float]) -> dict[tuple[int, ...], float]:
    return {k: v for k, v in values.items() if abs(v) > 1e-12}


@pytest.mark.parametrize("index", fs.INDICES)
@pytest.mark.parametrize("order", [1, 2, 3])
def test_closed_forms_match_the_enumeration_oracle(index: str, order: int) -> None:
    n = 7
    f = random_moebius(n, 15, seed=order)
    fast = fs.Interactions.from_surrogate(f, index, order, n_evaluations=0)
    oracle = fs.exact_interactions(f.evaluate, n, index=index, max_order=order)
    assert fast.max_order == oracle.max_order
    keys = set(fast.values) | set(oracle.values)
    for key in keys:
        assert fast.values.get(key, 0.0) == pytest.approx(oracle.values.get(key, 0.0), abs=1e-9)
    np.testing.assert_allclose(fast.base_values, oracle.base_values, atol=1e-9)


@pytest.mark.parametrize("index", ["SV", "BV", "SII", "BII", "k-SII", "STII", "FSII", "FBII"])
def test_oracle_agrees_with_shapiq_exact_computer(index: str) -> None:
    n, order = 6, 3
    game = random_moebius(n, 12, seed=11).evaluate
    ours = fs.exact_interactions(game, n, index=index, max_order=order)
    theirs = shapiq.ExactComputer(game=lambda m: game(m.astype(bool)), n_players=n)(
        index=index, order=order
    )
    for key, value in theirs.dict_values.items():
        if len(key) == 0:
            continue
        assert ours.values.get(key, 0.0) == pytest.approx(value, abs=1e-8), key
    if index == "FBII":
        assert ours.base_values[0] == pytest.approx(theirs.baseline_value, abs=1e-8)


def test_basis_round_trip_and_parity() -> None:
    parity = _core.SparseFunction("Fourier", 3, [(0, 1)], np.array([1.0]))
    masks = all_masks(3)
    np.testing.assert_array_equal(
        parity.evaluate(masks), np.where(masks[:, 0] ^ masks[:, 1], -1, 1)
    )
    moebius = parity.to_moebius()
    assert dict(zip(moebius.keys(), moebius.coefficients(), strict=True)) == {
        (): 1.0,
        (0,): -2.0,
        (1,): -2.0,
        (0, 1): 4.0,
    }
    back = moebius.to_fourier()
    assert back.keys() == [(0, 1)] and back.coefficients().tolist() == [1.0]


def test_interactions_object() -> None:
    game = random_moebius(5, 10, seed=2).evaluate
    iv = fs.exact_interactions(game, 5, index="k-SII", max_order=2)
    assert all(1 <= len(k) <= 2 for k in iv.values)
    assert list(iv.values) == sorted(iv.values, key=lambda k: (len(k), k))
    top = iv.top(3)
    assert [abs(v) for _, v in top] == sorted((abs(v) for v in iv.values.values()), reverse=True)[
        :3
    ]
    assert iv.top(0) == []
    with pytest.raises(InvalidArgumentError, match="k must be at least 0, got -1"):
        iv.top(-1)
    with pytest.raises(InvalidTypeError, match="k must be an int, got float"):
        iv.top(1.5)
    ends = game(np.array([[False] * 5, [True] * 5]))
    assert sum(iv.values.values()) == pytest.approx(ends[1] - ends[0])  # k-SII efficiency
    np.testing.assert_allclose(
        iv.shapley_values().values[0],
        fs.exact_interactions(game, 5, index="SV").surrogate.shapley_values(),
    )
    assert iv.faithfulness(game, all_masks(5)) == pytest.approx(1.0)

    converted = iv.to_shapiq()
    assert isinstance(converted, shapiq.InteractionValues)
    assert converted.index == "k-SII" and converted.max_order == 2
    assert converted.baseline_value == pytest.approx(iv.base_values[0])
    for key, value in iv.values.items():
        assert converted[key] == pytest.approx(value)

    frame = iv.to_polars()
    assert frame.columns == ["interaction", "order", "value"] and frame.height == len(iv)


def test_exact_interactions_bad_input() -> None:
    game = lambda m: m.sum(axis=1) * 1.0  # noqa: E731
    with pytest.raises(InvalidArgumentError, match=r"index must be one of .*'k-SII'.*'FBII'"):
        fs.exact_interactions(game, 3, index="kSII")
    with pytest.raises(InvalidArgumentError, match="max_order must be at least 1"):
        fs.exact_interactions(game, 3, max_order=0)
    with pytest.raises(InvalidTypeError, match="max_order must be an int"):
        fs.exact_interactions(game, 3, max_order=1.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="n_players must be between 1 and 20"):
        fs.exact_interactions(game, 21)
    with pytest.raises(InvalidTypeError, match="game must be callable"):
        fs.exact_interactions(3, 3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="one value per coalition"):
        fs.exact_interactions(lambda m: np.ones((len(m), 2)), 3)
    iv = fs.exact_interactions(game, 3)
    with pytest.raises(InvalidArgumentError, match=r"masks must have shape \[m, 3\]"):
        iv.faithfulness(game, np.ones((4, 2), dtype=bool))
    with pytest.raises(InvalidArgumentError, match="keys"):
        _core.SparseFunction("Moebius", 3, [(5,)], np.array([1.0]))
    with pytest.raises(InvalidArgumentError, match="basis"):
        _core.SparseFunction("Walsh", 3, [(1,)], np.array([1.0]))


# Plots: Moebius values of a game with three pairs and two first-order terms.
PAIRS_GAME = {(0,): 1.0, (4,): -3.0, (0, 1): 1.0, (2, 3): -2.0, (1, 4): 0.5}


def moebius_game(terms: dict[tuple[int, ...], float]) -> Callable[[np.ndarray], np.ndarray]:
    return lambda m: sum(c * m[:, list(key)].all(axis=1) for key, c in terms.items())


@pytest.fixture
def plt() -> Iterator[Any]:
    """matplotlib's pyplot on the Agg backend; every figure is closed afterwards."""
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    yield pyplot
    pyplot.close("all")


def test_bar_plot(plt: Any) -> None:
    iv = fs.exact_interactions(moebius_game(PAIRS_GAME), 5, index="Moebius")
    assert iv.values == PAIRS_GAME
    ax = iv.plot(k=3)
    assert isinstance(ax, plt.Axes)
    # the top three, largest at the top: (4,), (2, 3), then (0,) (ties with (0, 1), lower order)
    assert [bar.get_width() for bar in ax.patches] == [1.0, -2.0, -3.0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["(0,)", "(2, 3)", "(4,)"]
    assert len(iv.plot(k=100).patches) == len(PAIRS_GAME)

    named = dataclasses.replace(iv, feature_names=list("abcde"))
    _, own = plt.subplots()
    assert named.plot(k=2, ax=own) is own
    assert [t.get_text() for t in own.get_yticklabels()] == ["c x d", "e"]


def test_network_plot(plt: Any) -> None:
    iv = fs.exact_interactions(moebius_game(PAIRS_GAME), 5, index="Moebius")
    ax = iv.plot(k=2, kind="network")
    assert isinstance(ax, plt.Axes)
    edges, nodes = ax.collections
    segments = [segment.round(12).tolist() for segment in edges.get_segments()]
    angle = np.pi / 2 - 2 * np.pi * np.arange(5) / 5
    circle = np.column_stack([np.cos(angle), np.sin(angle)]).round(12)
    assert segments == [circle[[2, 3]].tolist(), circle[[0, 1]].tolist()]  # largest first
    widths = edges.get_linewidths()
    assert widths[0] > widths[1]
    blue, red = plt.matplotlib.colors.to_rgba("tab:blue"), plt.matplotlib.colors.to_rgba("tab:red")
    assert [tuple(c[:3]) for c in edges.get_edgecolors()] == [blue[:3], red[:3]]
    np.testing.assert_allclose(nodes.get_offsets(), circle, atol=1e-12)
    sizes = nodes.get_sizes()  # |first-order value|: 1, 0, 0, 0, 3
    assert sizes[4] > sizes[0] > sizes[1] == sizes[2] == sizes[3]
    assert [t.get_text() for t in ax.texts] == ["0", "1", "2", "3", "4"]
    assert len(iv.plot(k=10, kind="network").collections[0].get_segments()) == 3

    _, own = plt.subplots()
    assert iv.plot(kind="network", ax=own) is own


def test_network_plot_without_first_order_or_pairs(plt: Any) -> None:
    pairwise = fs.exact_interactions(moebius_game({(0, 1): 1.0}), 3, index="Moebius")
    assert pairwise.values == {(0, 1): 1.0}
    nodes = pairwise.plot(kind="network").collections[1]
    sizes = nodes.get_sizes()  # Shapley values: 0.5, 0.5, 0
    assert sizes[0] == sizes[1] > sizes[2]
    additive = fs.exact_interactions(moebius_game({(0,): 1.0, (1,): 2.0}), 3, index="k-SII")
    edges = additive.plot(kind="network").collections[0]
    assert len(edges.get_segments()) == 0


def test_plot_bad_input(plt: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    iv = fs.exact_interactions(moebius_game(PAIRS_GAME), 5, index="Moebius")
    with pytest.raises(
        InvalidArgumentError, match="kind must be one of 'bar', 'network'; got 'pie'"
    ):
        iv.plot(kind="pie")
    with pytest.raises(InvalidArgumentError, match="k must be at least 1, got 0"):
        iv.plot(k=0)
    with pytest.raises(InvalidTypeError, match="k must be an int, got float"):
        iv.plot(k=2.5)  # type: ignore[arg-type]
    shapley = fs.exact_interactions(moebius_game(PAIRS_GAME), 5, index="SV")
    with pytest.raises(InvalidArgumentError, match=r"pairwise.*max_order=1; use kind='bar'"):
        shapley.plot(kind="network")
    shapley.plot()  # bars work at any order
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"ferroshap\[bench\]"):
        iv.plot()


def test_orders_are_the_key_sizes() -> None:
    f = random_moebius(9, 30, seed=3).to_fourier()
    assert f.orders().tolist() == [len(key) for key in f.keys()]
    assert f.orders().dtype == np.int64


def test_keys_at_positions_without_building_the_others() -> None:
    f = _core.SparseFunction("Fourier", 3, [(0,), (1, 2), (0, 1, 2)], np.array([1.0, 2.0, 3.0]))
    assert f.keys(np.array([2, 0])) == [(0, 1, 2), (0,)]
    assert f.keys(np.array([], dtype=np.int64)) == [] and f.keys() == [(0,), (1, 2), (0, 1, 2)]
    for bad in (3, -1):
        with pytest.raises(InvalidArgumentError, match=r"^positions: must be in 0\.\.3"):
            f.keys(np.array([bad]))
