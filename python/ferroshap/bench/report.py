"""Human-readable output of a benchmark: text and markdown tables, and an error-versus-budget
plot."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

__all__ = ["accuracy_report", "format_table", "plot_summary", "protocol_report", "to_markdown"]


def format_table(summary: Any) -> str:
    """One block per game: a row per method, a column per budget, each cell ``median error
    (median seconds)``; ``*`` marks the lowest error at that budget. Peers that could not run are
    listed at the end with the reason."""
    lines = []
    budgets = sorted(summary["budget"].unique().to_list())
    for game in summary["game"].unique(maintain_order=True).to_list():
        part = summary.filter(game=game)
        n = part["n"][0]
        lines.append(f"\n{game} (n = {n}): median relative error (median seconds) over seeds")
        header = f"{'method':<18}" + "".join(f"{'budget ' + str(b):>22}" for b in budgets)
        lines.append(header)
        for method in part["method"].unique(maintain_order=True).to_list():
            cells = []
            for budget in budgets:
                row = part.filter(method=method, budget=budget)
                if row.is_empty() or row["rel_error"][0] is None:
                    cells.append(f"{'-':>22}")
                    continue
                error, seconds, best = row["rel_error"][0], row["wall_s"][0], row["best"][0]
                text = f"{error:.2e}{'*' if best else ' '} ({seconds:.2f}s)"
                cells.append(f"{text:>22}")
            lines.append(f"{method:<18}" + "".join(cells))
    skipped = summary.filter(summary["skip"].is_not_null()).unique("method", maintain_order=True)
    for method, reason in zip(skipped["method"], skipped["skip"], strict=True):
        lines.append(f"\n{method}: {reason}")
    return "\n".join(lines)


def plot_summary(summary: Any, path: str | Path) -> None:
    """Save a PNG: per game, error against budget (log-log, a line per method) above wall time
    against budget. Needs matplotlib (``pip install 'ferroshap[bench]'``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plotting needs matplotlib: pip install 'ferroshap[bench]' (or matplotlib)"
        ) from err
    games = summary["game"].unique(maintain_order=True).to_list()
    fig, axes = plt.subplots(
        2, len(games), figsize=(4.5 * len(games), 7), squeeze=False, sharex="col"
    )
    for col, game in enumerate(games):
        part = summary.filter(game=game)
        error_ax, time_ax = axes[0, col], axes[1, col]
        for method in part["method"].unique(maintain_order=True).to_list():
            rows = part.filter(method=method).sort("budget")
            style = "-" if rows["library"][0] == "ferroshap" else "--"
            error_ax.plot(rows["budget"], rows["rel_error"], style, marker="o", label=method)
            time_ax.plot(rows["budget"], rows["wall_s"], style, marker="o", label=method)
        error_ax.set(title=f"{game} (n = {part['n'][0]})", xscale="log", yscale="log")
        error_ax.set_ylabel("median relative error")
        time_ax.set(xscale="log", yscale="log", xlabel="budget (coalitions per row)")
        time_ax.set_ylabel("median wall time (s)")
    axes[0, 0].legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def to_markdown(df: pl.DataFrame, digits: int = 4) -> str:
    """A GitHub-markdown table (list columns left out); floats in ``digits`` significant digits."""

    def cell(value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, float):
            return f"{value:.{digits}g}"
        return str(value)

    df = df.select(name for name, dtype in df.schema.items() if not isinstance(dtype, pl.List))
    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.iter_rows()]
    return "\n".join(lines)


def accuracy_report(summary: pl.DataFrame, order: Sequence[str]) -> str:
    """Markdown: median error, and its ratios to shapiq KernelSHAP and shap, estimator x budget;
    ``order`` lists the estimators in the order of the rows."""
    order = pl.DataFrame({"estimator": list(order)}).with_row_index("order")
    parts = []
    titles = {
        "median_rel_error": "Median relative error",
        "vs_best_peer": "Ratio to the best peer (shap 0.54 / shapiq 1.8)",
        "vs_shapiq_kernel": "Ratio to shapiq KernelSHAP",
        "vs_shap": "Ratio to shap KernelExplainer",
    }
    for column, title in titles.items():
        wide = summary.pivot(on="budget", index="estimator", values=column, sort_columns=True)
        wide = wide.join(order, on="estimator").sort("order").drop("order")
        parts.append(f"{title}:\n\n{to_markdown(wide, digits=3)}")
    spread = summary.with_columns(
        iqr=pl.format("{} - {}", *(pl.col(q).round_sig_figs(2) for q in ("q25", "q75")))
    )
    wide = spread.pivot(on="budget", index="estimator", values="iqr", sort_columns=True)
    wide = wide.join(order, on="estimator").sort("order").drop("order")
    parts.append(f"Interquartile range of the error over seeds:\n\n{to_markdown(wide)}")
    best = summary.filter("best").sort("budget").select("budget", "estimator")
    parts.append("Best per budget:\n\n" + to_markdown(best))
    return "\n\n".join(parts)


TIMING_COLUMNS = (
    "engine",
    "rows_timed",
    "runs",
    "seconds",
    "seconds_per_row",
    "model_seconds_in_run",
    "speedup_vs_shap",
    "speedup_vs_shapiq",
    "ratio_to_model_alone",
    "ratio_to_model_in_run",
    "plan_s",
    "estimate_first_s",
    "estimate_again_s",
)


def protocol_report(out: Path, protocols: Sequence[str], order: Sequence[str]) -> str:
    """Markdown tables of the results of ``protocols`` found in ``out``, each with its machine
    record; accuracy rows follow the estimator ``order``."""
    parts = []
    for name in protocols:
        path = out / f"{name}.parquet"
        if not path.exists():
            continue
        info = json.loads((out / f"{name}.json").read_text())
        table = pl.read_parquet(path)
        if name == "accuracy":
            body = accuracy_report(table, order)
        else:
            body = to_markdown(table.select(c for c in TIMING_COLUMNS if c in table.columns))
        load = ", ".join(f"{x:.1f}" for x in info["loadavg"])
        load_end = ", ".join(f"{x:.1f}" for x in info["loadavg_end"])
        header = (
            f"### {name}\n\n{info['date']}, {info['cpu_count']} CPUs, threads "
            f"{info['threads']}, load average {load} at start and {load_end} at end, "
            f"{info['wall_seconds']:.0f} s wall."
        )
        parts.append(f"{header}\n\n{body}")
    return "\n\n".join(parts) + "\n"
