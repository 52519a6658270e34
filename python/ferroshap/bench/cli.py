"""The ``ferroshap`` command line; ``ferroshap bench`` runs the benchmark harness."""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Sequence

from ferroshap.bench.estimators import available_estimators
from ferroshap.bench.games import available_games
from ferroshap.bench.harness import run_benchmark, summarize
from ferroshap.bench.report import format_table, plot_summary

__all__ = ["main"]

QUICK_METHODS = ["leverage", "kernel", "permutation", "unbiased"]
QUICK_BASELINES = ["shap-kernel", "shapiq-kernel"]


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _ints(text: str) -> list[int]:
    try:
        return [int(part) for part in _names(text)]
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from err


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ferroshap", description="ferroshap command line")
    commands = parser.add_subparsers(dest="command", required=True)
    bench = commands.add_parser(
        "bench",
        help="benchmark estimators against exact Shapley values",
        description=(
            "Run estimators x budgets x seeds x games against exact Shapley values; print a "
            "table, optionally write a parquet file and a PNG plot."
        ),
    )
    bench.add_argument("--games", type=_names, help=f"comma list of {', '.join(available_games())}")
    bench.add_argument("--methods", type=_names, help="comma list of estimators")
    bench.add_argument("--budgets", type=_ints, help="comma list, e.g. 256,512,1024")
    bench.add_argument("--seeds", type=int, help="number of seeds (0 .. seeds-1)")
    bench.add_argument(
        "--include-baselines",
        action="store_true",
        help="add shap and shapiq estimators that are installed",
    )
    bench.add_argument("--out", help="write every run to this parquet file")
    bench.add_argument("--plot", help="write error/time against budget to this PNG")
    bench.add_argument(
        "--quick", action="store_true", help="small games, few budgets and seeds (under a minute)"
    )
    return parser


def _bench(args: argparse.Namespace) -> None:
    quick = args.quick
    games = args.games or (["soum", "linear", "lightgbm"] if quick else available_games())
    if not quick and args.games is None and importlib.util.find_spec("shap") is None:
        games = [g for g in games if g not in ("lightgbm", "forest")]
    baselines = args.include_baselines or quick
    methods = args.methods or (
        QUICK_METHODS + [b for b in QUICK_BASELINES if b in available_estimators()]
        if quick
        else available_estimators(include_baselines=baselines)
    )
    budgets = args.budgets or ([96, 192, 384] if quick else [128, 256, 512, 1024, 2048])
    seeds = list(range(args.seeds if args.seeds is not None else (3 if quick else 10)))
    start = time.perf_counter()
    results = run_benchmark(
        games, methods, budgets, seeds, quick=quick, progress=lambda m: print(m, flush=True)
    )
    summary = summarize(results)
    print(format_table(summary))
    print(f"\n{len(results)} runs in {time.perf_counter() - start:.1f} s; * = lowest error")
    if args.out:
        results.write_parquet(args.out)
        print(f"results: {args.out}")
    if args.plot:
        plot_summary(summary, args.plot)
        print(f"plot: {args.plot}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ferroshap`` command."""
    args = _parser().parse_args(argv)
    if args.command == "bench":
        _bench(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
