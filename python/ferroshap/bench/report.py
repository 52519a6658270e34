"""Human-readable output of a benchmark: a text table and an error-versus-budget plot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["format_table", "plot_summary"]


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
