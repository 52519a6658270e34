"""The accuracy suite's tables (:mod:`ferroshap.bench.suite` runs it): each estimator's median
error per cell against the best peer's, with the seeds' noise on that ratio, the overview of
ours per half of the games, and the plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ferroshap.bench.suite import ROWS, TUNING_GAMES

__all__ = ["RATIO_DRAWS", "ours_overview", "plot_suite", "ratio_intervals", "summarize_suite"]

RATIO_DRAWS = 2000
"""Bootstrap draws of the seeds behind each cell's interval of the ratio
(:func:`ratio_intervals`)."""


def summarize_suite(runs: Any, tiny: float = 1e-12) -> Any:
    """Per cell and estimator: median error over seeds, the best peer's, the ratio, seconds per
    row (median wall over seeds / rows), ``met`` (ratio ≤ 1, or both errors below ``tiny``), and
    for ours the 95 % interval of the ratio over the seeds (``ratio_low``, ``ratio_high``;
    :func:`ratio_intervals`).
    """
    import polars as pl

    medians = (
        runs.with_columns(pl.col("rel_error").fill_nan(None))
        .group_by(["cell", "game", "n", "background", "budget", "exact", "method", "library"])
        .agg(
            pl.col("rel_error").median().alias("median_error"),
            (pl.col("wall_s").median() / ROWS).alias("seconds_per_row"),
            pl.col("rel_error").is_not_null().sum().alias("seeds"),
        )
    )
    best_peer = (
        medians.filter(pl.col("library") != "ferroshap", pl.col("median_error").is_not_null())
        .sort("median_error")
        .group_by("cell", maintain_order=True)
        .agg(
            pl.col("median_error").first().alias("best_peer_error"),
            pl.col("method").first().alias("best_peer"),
        )
    )
    summary = (
        medians.join(best_peer, on="cell", how="left")
        .with_columns(ratio=pl.col("median_error") / pl.col("best_peer_error"))
        .with_columns(
            met=(pl.col("ratio") <= 1.0)
            | ((pl.col("best_peer_error") < tiny) & (pl.col("median_error") < tiny))
        )
    )
    return summary.join(ratio_intervals(runs, summary), on=["cell", "method"], how="left").sort(
        "game", "background", "budget", "median_error"
    )


def ratio_intervals(
    runs: Any, summary: Any, draws: int = RATIO_DRAWS, level: float = 0.95, seed: int = 0
) -> Any:
    """Per cell and estimator of ours that has a best peer in ``summary``: the central ``level``
    interval (``ratio_low``, ``ratio_high``) of the ratio of its median error to the best peer's
    when the seeds that both ran are drawn again with replacement, ``draws`` times, the same
    seeds for both. A cell whose interval lies above 1 is behind by more than the seeds' noise;
    one that straddles 1 is a tie however its ratio falls. No interval where both are exact
    (errors 0) in every draw. Deterministic for ``seed``."""
    import polars as pl

    errors = runs.with_columns(pl.col("rel_error").fill_nan(None)).drop_nulls("rel_error")
    by_seed = {
        key: dict(zip(part["seed"], part["rel_error"], strict=True))
        for key, part in errors.group_by(["cell", "method"])
    }
    pairs = summary.filter(
        pl.col("library") == "ferroshap", pl.col("best_peer").is_not_null()
    ).sort("cell", "method")  # one order of draws, whatever order the summary came in
    rng = np.random.default_rng(seed)
    tail = 100 * (1 - level) / 2
    rows = []
    for cell, method, peer in pairs.select("cell", "method", "best_peer").iter_rows():
        ours, theirs = by_seed.get((cell, method), {}), by_seed.get((cell, peer), {})
        common = sorted(set(ours) & set(theirs))
        if not common:
            continue
        a = np.array([ours[s] for s in common])
        b = np.array([theirs[s] for s in common])
        drawn = rng.integers(0, len(common), (draws, len(common)))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.median(a[drawn], axis=1) / np.median(b[drawn], axis=1)
        ratio = ratio[~np.isnan(ratio)]  # 0 / 0: both exact in that draw
        if len(ratio):
            low, high = np.percentile(ratio, [tail, 100 - tail])
            rows.append((cell, method, float(low), float(high)))
    schema = {
        "cell": pl.String,
        "method": pl.String,
        "ratio_low": pl.Float64,
        "ratio_high": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def ours_overview(summary: Any) -> Any:
    """Per ferroshap estimator and half of the games (``"all"``, ``"tuning"``, ``"held-out"``,
    :data:`TUNING_GAMES`): cells, share of cells met (≤ 1.0x the best peer), share ≤ 1.2x, the
    median and the worst ratio over cells, and how many cells are behind the best peer beyond
    the seeds' noise (the whole interval of :func:`ratio_intervals` above 1)."""
    import polars as pl

    ours = summary.filter(pl.col("library") == "ferroshap", pl.col("ratio").is_not_null())
    halves = pl.when(pl.col("game").is_in(TUNING_GAMES)).then(pl.lit("tuning"))
    ours = ours.with_columns(half=halves.otherwise(pl.lit("held-out")))
    return (
        pl.concat([ours.with_columns(half=pl.lit("all")), ours])
        .group_by("method", "half")
        .agg(
            pl.len().alias("cells"),
            pl.col("met").mean().alias("share_le_1"),
            ((pl.col("ratio") <= 1.2) | pl.col("met")).mean().alias("share_le_1.2"),
            pl.col("ratio").median().alias("median_ratio"),
            pl.col("ratio").max().alias("worst_ratio"),
            (pl.col("ratio_low") > 1.0).sum().alias("behind_beyond_noise"),
        )
        .sort("method", "half")
    )


def plot_suite(summary: Any, path: str | Path) -> None:
    """Save a PNG: each ferroshap estimator's ratio to the best peer in every cell (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import polars as pl

    ours = summary.filter(pl.col("library") == "ferroshap", pl.col("ratio").is_not_null())
    keys = sorted(ours["cell"].unique().to_list())
    fig, ax = plt.subplots(figsize=(max(8, 0.25 * len(keys)), 5))
    for method in sorted(ours["method"].unique().to_list()):
        part = ours.filter(method=method)
        ratio = dict(zip(part["cell"], part["ratio"], strict=True))
        ax.plot(range(len(keys)), [ratio.get(k) for k in keys], "o-", label=method, ms=3, lw=0.8)
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set(yscale="log", ylabel="median error / best peer's", title="accuracy suite")
    ax.set_xticks(range(len(keys)), keys, rotation=90, fontsize=6)
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
