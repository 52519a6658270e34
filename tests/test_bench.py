"""The benchmark harness and the ``ferroshap bench`` command."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from ferroshap import InvalidArgumentError
from ferroshap.bench import available_estimators, run_benchmark, summarize
from ferroshap.bench.cli import main
from ferroshap.bench.games import (
    boosted_classifier_game,
    knn_game,
    logistic_interactions_game,
    make_game,
    xgboost_game,
)
from ferroshap.bench.harness import TIMING_COLUMNS
from ferroshap.bench.report import format_table
from ferroshap.bench.unseen_games import UNSEEN_BUILDERS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_an_exact_method_scores_zero_error() -> None:
    df = run_benchmark(["enum"], ["exact"], budgets=[16], seeds=[0], quick=True)
    # Exact enumeration against exact enumeration of the same game: rounding only.
    assert df["rel_error"][0] < 1e-24
    assert df["spearman"][0] == pytest.approx(1.0)


def test_sparse_fourier_truth_is_exact() -> None:
    # Closed-form truth of the sequence game against exact enumeration of the same game.
    df = run_benchmark(["fourier"], ["exact"], budgets=[16], seeds=[0], quick=True)
    assert df["rel_error"][0] < 1e-20


def test_budgets_are_honoured() -> None:
    df = run_benchmark(["soum"], ["leverage", "kernel", "permutation"], [100, 200], [0], True)
    # One explained row; the extra coalition is v(∅), evaluated once on the background.
    assert (df["coalitions_per_row"] <= df["budget"] + 1).all()
    assert df.filter(method="leverage")["coalitions_per_row"].to_list() == [101.0, 201.0]


def test_reruns_are_identical_except_timing() -> None:
    args = (["soum", "linear"], ["leverage", "kernel", "unbiased"], [96], [0, 1], True)
    first, second = (run_benchmark(*args).drop(TIMING_COLUMNS) for _ in range(2))
    assert first.equals(second)


def test_baselines_share_the_protocol() -> None:
    exact_on_additive = ("shap-kernel", "shap-permutation", "shapiq-kernel")
    regression = [b for b in available_estimators() if b in exact_on_additive]
    df = run_benchmark(["linear"], ["leverage", *regression], [128], [0], quick=True)
    # A linear model is additive: every regression estimator recovers it (shapiq's big-M
    # constraint leaves ~1e-13 of rounding); permutation sums are exact too. The unbiased
    # (matrix-vector) estimators are only unbiased on it and ProxySPEX fits trees to it, so
    # they are left out.
    assert (df["rel_error"] < 1e-6).all(), df.select("method", "rel_error")


@pytest.mark.slow
def test_proxyspex_runs_under_the_same_protocol() -> None:
    game = make_game("soum", quick=True)
    df = run_benchmark([game], ["leverage", "proxyspex"], [256], [0])
    assert df["method"].to_list() == ["leverage", "proxyspex"]
    # A surrogate of a 32-player sum of unanimity games at budget 256 is rough but informative.
    assert (df["rel_error"] < 1.0).all(), df.select("method", "rel_error")


def test_budget_below_a_methods_minimum_is_recorded_not_raised() -> None:
    df = run_benchmark(["soum"], ["permutation"], [40], [0], quick=True)
    assert df["rel_error"].is_nan().all()
    assert "budget" in df["note"][0]


def test_unknown_names_are_rejected() -> None:
    with pytest.raises(InvalidArgumentError, match="games"):
        run_benchmark(["nope"], ["leverage"], [64], [0])
    with pytest.raises(InvalidArgumentError, match="methods"):
        run_benchmark(["linear"], ["nope"], [64], [0], quick=True)


def test_table_lists_every_method_and_marks_the_best() -> None:
    methods = ["leverage", "kernel", "permutation"]
    df = run_benchmark(["soum"], methods, [96, 192], [0, 1], quick=True)
    table = format_table(summarize(df))
    assert all(method in table for method in methods)
    assert table.count("*") == 2  # one best per budget


def test_command_writes_results_and_plot(tmp_path, capsys) -> None:
    out, plot = tmp_path / "results.parquet", tmp_path / "errors.png"
    code = main(
        [
            "bench",
            "--games",
            "soum,linear",
            "--methods",
            "leverage,permutation",
            "--budgets",
            "96,192",
            "--seeds",
            "2",
            "--out",
            str(out),
            "--plot",
            str(plot),
        ]
    )
    assert code == 0
    assert pl.read_parquet(out).height == 2 * 2 * 2 * 2
    assert plot.read_bytes()[:8] == PNG_MAGIC
    printed = capsys.readouterr().out
    assert "leverage" in printed and "permutation" in printed


@pytest.mark.parametrize(
    "build",
    [boosted_classifier_game, logistic_interactions_game, knn_game, xgboost_game],
    ids=lambda b: b.__name__,
)
def test_added_suite_games_have_efficient_exact_truth(build) -> None:
    if build is xgboost_game:
        pytest.importorskip("xgboost")
    game = build(rows=2, n_background=1)
    gap = game.model(game.X) - game.model(game.background).mean()
    np.testing.assert_allclose(game.truth.sum(axis=1), gap, atol=1e-9)
    assert game.truth.shape == game.X.shape and np.abs(game.truth).sum() > 0


@pytest.mark.parametrize("name", list(UNSEEN_BUILDERS))
def test_unseen_games_have_their_stated_players_and_efficient_truth(name: str) -> None:
    n, build = UNSEEN_BUILDERS[name]
    if name.startswith("lgb-"):  # exact TreeSHAP comes from shap
        pytest.importorskip("shap")
    game = build(2, 1)
    assert game.X.shape == (2, n) and game.truth.shape == (2, n)
    gap = game.model(game.X) - game.model(game.background).mean()
    # shap's TreeSHAP of a LightGBM model adds up to its output only to ~1e-7 of the output's
    # size (6e-7 measured on outputs of about 20); enumeration to rounding
    scale = max(1.0, float(np.abs(game.model(game.X)).max()))
    np.testing.assert_allclose(game.truth.sum(axis=1), gap, atol=1e-6 * scale)
    assert np.abs(game.truth).sum() > 0


def test_timed_protocols_measure_nothing_when_every_task_is_skipped() -> None:
    from ferroshap.bench.protocols import Task, measure

    assert measure([], rounds=3) == []  # e.g. high_dim(skip_baselines=True)'s peer pass
    calls = []
    one = Task("one", 1, lambda: (calls.append(1), (0.5, 0.1))[1])
    (record,) = measure([one], rounds=2)
    assert len(calls) == 2 and record["seconds"] == 0.5
