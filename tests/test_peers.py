"""The peers (shap 0.54, shapiq 1.8) under ferroshap's benchmark protocol; the accuracy suite."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from conftest import bench_script
from ferroshap import InvalidArgumentError
from ferroshap.bench import run_benchmark, suite, suite_summary
from ferroshap.bench.estimators import make_estimator, producer_version
from ferroshap.bench.games import linear_game, soum_game
from ferroshap.bench.metrics import mean_relative_squared_error
from ferroshap.bench.peers import PEERS, Peer, unavailable_reason

#: Peers that enumerate every coalition when the budget covers 2**n: exact there.
EXACT_AT_FULL_BUDGET = [
    "shap-kernel",
    "shapiq-kernel",
    "shapiq-leverage",
    "shapiq-unbiased",
    "shapiq-oddshap",
    "shapiq-polyshap",
    "shapiq-proxyshap",
    "shapiq-msr",
]


def _needs(name: str) -> None:
    reason = unavailable_reason(name)
    if reason is not None:
        pytest.skip(f"{name} {reason}")


@pytest.mark.parametrize("name", EXACT_AT_FULL_BUDGET)
def test_peer_is_exact_when_the_budget_covers_every_coalition(name: str) -> None:
    _needs(name)
    game = soum_game(n=6, rows=1, n_background=3, seed=1)
    phi = PEERS[name].explain(game.model, game.background, game.X, 2**6, 0)
    # ProxySHAP's regression on its XGBoost proxy's residual keeps ~1e-6 of the proxy's error.
    tolerance = 1e-5 if name == "shapiq-proxyshap" else 1e-12
    assert mean_relative_squared_error(phi, game.truth) < tolerance


def test_shap_permutation_is_exact_on_an_additive_model() -> None:
    _needs("shap-permutation")
    game = linear_game(n=6, rows=2)
    phi = PEERS["shap-permutation"].explain(game.model, game.background, game.X, 40, 0)
    assert mean_relative_squared_error(phi, game.truth) < 1e-20


@pytest.mark.slow
def test_spex_recovers_a_sparse_pairwise_game() -> None:
    _needs("shapiq-spex")
    game = soum_game(n=12, rows=1, n_background=1, max_order=2)
    phi = PEERS["shapiq-spex"].explain(game.model, game.background, game.X, 1000, 0)
    assert mean_relative_squared_error(phi, game.truth) < 1e-6


@pytest.mark.slow
def test_shapiq_proxyspex_runs_under_the_same_protocol() -> None:
    # Its default proxy search takes ~40 s even on this small game; the error is the proxy's.
    _needs("shapiq-proxyspex")
    game = soum_game(n=6, rows=1, n_background=3, seed=1)
    phi = PEERS["shapiq-proxyspex"].explain(game.model, game.background, game.X, 2**6, 0)
    assert mean_relative_squared_error(phi, game.truth) < 0.2


def test_unknown_peer_lists_the_valid_names() -> None:
    with pytest.raises(InvalidArgumentError, match="shapiq-oddshap"):
        make_estimator("shapiq-nope")


def test_a_peer_that_cannot_run_is_skipped_with_its_reason(monkeypatch) -> None:
    old = PEERS["shapiq-kernel"]
    monkeypatch.setitem(PEERS, "shapiq-kernel", Peer(old.library, (99,), old.explain, old.fast))
    df = run_benchmark(["linear"], ["leverage", "shapiq-kernel"], [64], [0], quick=True)
    skipped = df.filter(method="shapiq-kernel")
    assert skipped["rel_error"].is_nan().all()
    assert skipped["note"][0].startswith("skipped: needs shapiq>=99")
    with pytest.raises(InvalidArgumentError, match="cannot run here"):
        make_estimator("shapiq-kernel")


def test_a_budget_reaching_2_to_the_n_is_marked_exact() -> None:
    df = run_benchmark(["enum"], ["leverage"], [2**10, 64], [0], quick=True)
    assert df["exact"].to_list() == [True, False]
    assert "exact" in df["note"][0]
    assert df["rel_error"][0] < 1e-20


def test_suite_smoke_grid_resumes_without_counting_a_cell_twice(tmp_path, monkeypatch) -> None:
    grid = {"games": ["soum30", "forest"], "backgrounds": [1], "factors": [5, 20]}
    methods = ["leverage", "kernel"]
    calls = []
    real = suite.run_one

    def interrupted(game, method, budget, seed, *args):
        if len(calls) == 2 * len(methods) * 2:  # the third cell starts
            raise KeyboardInterrupt
        calls.append((game.name, budget, seed, method))
        return real(game, method, budget, seed, *args)

    monkeypatch.setattr(suite, "run_one", interrupted)
    with pytest.raises(KeyboardInterrupt):
        suite.run_suite(tmp_path, methods=methods, seeds=[0, 1], **grid)
    done = sorted(p.name for p in (tmp_path / "cells").iterdir())
    assert done == ["soum30_bg1_b150.parquet", "soum30_bg1_b600.parquet"]
    monkeypatch.setattr(suite, "run_one", real)
    runs = suite.run_suite(tmp_path, methods=methods, seeds=[0, 1], **grid)
    assert runs.height == 4 * 2 * 2  # cells x seeds x methods, each once
    assert runs.unique(["cell", "seed", "method"]).height == runs.height
    summary = suite_summary.summarize_suite(runs)
    assert summary.filter(pl.col("best_peer").is_null()).height == summary.height  # no peer ran
    assert set(summary["cell"]) == {c.key for c in suite.cells(**grid)}


def test_suite_summary_ratios_to_the_best_peer(tmp_path) -> None:
    _needs("shapiq-kernel")
    grid = {"games": ["forest"], "backgrounds": [1], "factors": [5]}
    runs = suite.run_suite(tmp_path, methods=["leverage", "shapiq-kernel"], seeds=[0], **grid)
    summary = suite_summary.summarize_suite(runs)
    peer = summary.filter(method="shapiq-kernel")
    assert peer["ratio"][0] == pytest.approx(1.0)
    ours = summary.filter(method="leverage")
    assert ours["ratio"][0] == pytest.approx(ours["median_error"][0] / peer["median_error"][0])
    overview = suite_summary.ours_overview(summary)  # forest is a held-out game
    assert dict(zip(overview["half"], overview["cells"], strict=True)) == {"all": 1, "held-out": 1}


def _runs(cell: str, ours: np.ndarray, theirs: np.ndarray) -> pl.DataFrame:
    """Suite runs of one cell: ``auto`` (ferroshap) and ``shapiq-kernel`` with these errors."""
    seeds = np.arange(len(ours))
    common = {"cell": cell, "game": "forest", "n": 10, "background": 1, "budget": 50}
    return pl.concat(
        pl.DataFrame({"seed": seeds, "rel_error": errors, "wall_s": 0.1}).with_columns(
            **{k: pl.lit(v) for k, v in common.items()},
            exact=pl.lit(False),
            method=pl.lit(method),
            library=pl.lit(library),
        )
        for method, library, errors in (
            ("auto", "ferroshap", ours),
            ("shapiq-kernel", "shapiq", theirs),
        )
    )


def test_ratio_intervals_tell_a_tie_from_a_loss() -> None:
    rng = np.random.default_rng(0)
    peer = rng.lognormal(size=(2, 20))
    tie = _runs("tie", rng.lognormal(size=20), peer[0])
    loss = _runs("loss", 3 * peer[1] * rng.lognormal(sigma=0.2, size=20), peer[1])
    exact = _runs("exact", np.zeros(20), np.zeros(20))
    summary = suite_summary.summarize_suite(pl.concat([tie, loss, exact]))
    ours = {row["cell"]: row for row in summary.filter(method="auto").iter_rows(named=True)}
    assert ours["exact"]["met"] and ours["exact"]["ratio_low"] is None
    assert ours["tie"]["ratio_low"] < min(1.0, ours["tie"]["ratio"])
    assert ours["tie"]["ratio_high"] > max(1.0, ours["tie"]["ratio"])
    assert 1.0 < ours["loss"]["ratio_low"] < ours["loss"]["ratio"] < ours["loss"]["ratio_high"]
    assert summary.filter(method="shapiq-kernel")["ratio_low"].is_null().all()  # peers: none
    assert suite_summary.ours_overview(summary).filter(half="all")["behind_beyond_noise"][0] == 1
    again = suite_summary.summarize_suite(pl.concat([exact, loss, tie]))
    columns = ["cell", "method", "ratio_low", "ratio_high"]
    assert (
        summary.select(columns)
        .sort("cell", "method")
        .equals(again.select(columns).sort("cell", "method"))
    )  # the same draws, whatever the order of the runs


def test_suite_rejects_an_unknown_game() -> None:
    with pytest.raises(InvalidArgumentError, match="soum30"):
        suite.cells(["nope"])


def test_suite_script_smoke_form(tmp_path) -> None:
    module = bench_script("suite")
    cache = tmp_path / "peer-cache"  # not the committed one
    assert module.main(["--smoke", "--out", str(tmp_path), "--peer-cache", str(cache)]) == 0
    runs = pl.read_parquet(tmp_path / "suite.parquet")
    assert set(runs["game"]) == set(suite.SMOKE_GAMES)
    assert set(runs["seed"]) == {0, 1}
    assert (tmp_path / "suite.png").read_bytes()[:4] == b"\x89PNG"


def test_suite_rerun_with_another_estimator_runs_only_that_one(tmp_path, monkeypatch) -> None:
    grid = {"games": ["forest"], "backgrounds": [1], "factors": [5]}
    suite.run_suite(tmp_path, methods=["leverage"], seeds=[0, 1], **grid)
    calls = []
    real = suite.run_one
    monkeypatch.setattr(suite, "run_one", lambda g, m, *a: calls.append(m) or real(g, m, *a))
    runs = suite.run_suite(tmp_path, methods=["leverage", "kernel"], seeds=[0, 1], **grid)
    assert calls == ["kernel", "kernel"]
    assert runs.height == 4
    # more seeds: only the new seed's runs; fewer seeds: nothing runs, only those are returned
    calls.clear()
    runs = suite.run_suite(tmp_path, methods=["leverage", "kernel"], seeds=[0, 1, 5], **grid)
    assert calls == ["leverage", "kernel"]
    assert sorted(set(runs["seed"])) == [0, 1, 5] and runs.height == 6
    calls.clear()
    runs = suite.run_suite(tmp_path, methods=["leverage"], seeds=[5], **grid)
    assert (
        calls == [] and runs["seed"].to_list() == [5] and runs["method"].to_list() == ["leverage"]
    )


def test_suite_interrupted_inside_a_cell_keeps_its_finished_seeds(tmp_path, monkeypatch) -> None:
    grid = {"games": ["forest"], "backgrounds": [1], "factors": [5]}
    methods = ["leverage", "kernel"]
    real = suite.run_one
    calls = []

    def interrupted(game, method, budget, seed, *args):
        if seed == 2:
            raise KeyboardInterrupt
        calls.append((seed, method))
        return real(game, method, budget, seed, *args)

    monkeypatch.setattr(suite, "run_one", interrupted)
    with pytest.raises(KeyboardInterrupt):
        suite.run_suite(tmp_path, methods=methods, seeds=[0, 1, 2], **grid)
    kept = pl.read_parquet(tmp_path / "cells" / "forest_bg1_b50.parquet")
    assert sorted(zip(kept["seed"], kept["method"], strict=True)) == sorted(calls)
    calls.clear()
    monkeypatch.setattr(
        suite, "run_one", lambda g, m, b, s, *a: calls.append((s, m)) or real(g, m, b, s, *a)
    )
    runs = suite.run_suite(tmp_path, methods=methods, seeds=[0, 1, 2], **grid)
    assert calls == [(2, "leverage"), (2, "kernel")]
    assert runs.unique(["seed", "method"]).height == runs.height == 6


def test_suite_in_worker_processes_matches_one_process(tmp_path) -> None:
    grid = {"games": ["forest", "soum30"], "backgrounds": [1], "factors": [5]}
    key = ["cell", "seed", "method"]
    one = suite.run_suite(tmp_path / "one", methods=["leverage"], seeds=[0], **grid).sort(key)
    two = suite.run_suite(tmp_path / "two", methods=["leverage"], seeds=[0], jobs=2, **grid)
    assert two.sort(key)["rel_error"].to_list() == one["rel_error"].to_list()
    assert sorted(p.name for p in (tmp_path / "two" / "cells").iterdir()) == [
        "forest_bg1_b50.parquet",
        "soum30_bg1_b150.parquet",
    ]
    with pytest.raises(InvalidArgumentError, match="jobs"):
        suite.run_suite(tmp_path / "bad", methods=["leverage"], seeds=[0], jobs=0, **grid)


def test_suite_reruns_a_run_of_another_producer_version_and_never_uses_it(
    tmp_path, monkeypatch
) -> None:
    # the cache of runs is keyed by what produced each one: a run recorded by another version of
    # its library (a peer upgraded, ferroshap's code changed) is run again, not read
    grid = {"games": ["forest"], "backgrounds": [1], "factors": [5]}
    first = suite.run_suite(tmp_path, methods=["leverage", "kernel"], seeds=[0, 1], **grid)
    assert set(first["version"]) == {producer_version("leverage")}
    (path,) = (tmp_path / "cells").iterdir()
    stale = pl.read_parquet(path).with_columns(
        version=pl.when(pl.col("method") == "kernel", pl.col("seed") == 1)
        .then(pl.lit("ferroshap 0.0.1 000000000000"))
        .otherwise(pl.col("version")),
        rel_error=pl.when(pl.col("method") == "kernel", pl.col("seed") == 1)
        .then(pl.lit(-1.0))
        .otherwise(pl.col("rel_error")),
    )
    stale.write_parquet(path)
    calls = []
    real = suite.run_one

    def counted(game, method, budget, seed, *args):
        calls.append((method, seed))
        return real(game, method, budget, seed, *args)

    monkeypatch.setattr(suite, "run_one", counted)
    runs = suite.run_suite(tmp_path, methods=["leverage", "kernel"], seeds=[0, 1], **grid)
    assert calls == [("kernel", 1)]
    assert runs.height == 4 and runs.unique(["seed", "method"]).height == 4
    assert (runs["rel_error"] >= 0).all()
    assert set(runs["version"]) == {producer_version("kernel")}
    assert pl.read_parquet(path).height == 4  # the stale run is gone from the cache


def test_producer_versions_name_the_library() -> None:
    assert producer_version("leverage").startswith("ferroshap ")
    assert producer_version("leverage") == producer_version("auto")
    assert producer_version("shapiq-kernel").startswith("shapiq ")


def test_suite_takes_peer_runs_from_the_cache_and_adds_the_missing_ones(
    tmp_path, monkeypatch
) -> None:
    # a peer runs once per library version, wherever the suite runs: a fresh output folder
    # reads its runs from the cache, computes only ours and the peer runs the cache lacks (or
    # holds for another version of the peer), and writes those back
    _needs("shapiq-kernel")
    grid = {"games": ["forest"], "backgrounds": [1], "factors": [5]}
    methods, cache = ["leverage", "shapiq-kernel"], tmp_path / "cache"
    first = suite.run_suite(tmp_path / "a", methods=methods, seeds=[0], peer_cache=cache, **grid)
    (path,) = cache.iterdir()
    assert pl.read_parquet(path)["method"].to_list() == ["shapiq-kernel"]  # peers only
    calls = []
    real = suite.run_one
    monkeypatch.setattr(
        suite, "run_one", lambda g, m, b, s, *a: calls.append((m, s)) or real(g, m, b, s, *a)
    )
    again = suite.run_suite(tmp_path / "b", methods=methods, seeds=[0, 1], peer_cache=cache, **grid)
    assert calls == [("leverage", 0), ("leverage", 1), ("shapiq-kernel", 1)]
    key = ["seed", "method"]
    assert again.filter(pl.col("seed") == 0).sort(key)["rel_error"].to_list() == (
        first.sort(key)["rel_error"].to_list()
    )
    assert sorted(pl.read_parquet(path)["seed"].to_list()) == [0, 1]
    stale = pl.read_parquet(path).with_columns(version=pl.lit("shapiq 0.0.1"))
    stale.write_parquet(path)
    calls.clear()
    suite.run_suite(tmp_path / "c", methods=["shapiq-kernel"], seeds=[0], peer_cache=cache, **grid)
    assert calls == [("shapiq-kernel", 0)]
    cached = pl.read_parquet(path)
    assert cached["version"].to_list() == [producer_version("shapiq-kernel")]  # stale ones gone
