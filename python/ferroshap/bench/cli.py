"""The ``ferroshap`` command line; ``ferroshap bench`` runs the benchmark harness.

The games, methods and peers the help lists come from the harness's registries
(:func:`~ferroshap.bench.available_games`, :func:`~ferroshap.bench.available_estimators`), so a
game or peer added there appears here without a change. Optional libraries are checked before
anything runs: a missing one names the extra that installs it, and a peer or game whose library
is missing is skipped with the reason printed under the table.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import textwrap
import time
from collections.abc import Sequence

import ferroshap as fs
from ferroshap.bench.estimators import (
    all_estimators,
    available_estimators,
    check_estimators,
    ferroshap_methods,
    recipes,
)
from ferroshap.bench.games import BenchGame, available_games, make_game
from ferroshap.bench.harness import run_benchmark, summarize
from ferroshap.bench.peers import PEERS, unavailable_reason
from ferroshap.bench.report import format_table, plot_summary

__all__ = ["main"]

QUICK_GAMES = ["soum", "linear", "lightgbm"]
QUICK_METHODS = ["auto", "leverage", "kernel", "permutation", "unbiased"]
QUICK_PEERS = [name for name, peer in PEERS.items() if peer.fast]
BUDGETS = [128, 256, 512, 1024, 2048]
QUICK_BUDGETS = [96, 192, 384]
SEEDS = 10
QUICK_SEEDS = 3
MIN_BUDGET = 2

BENCH_EXTRA = "pip install 'ferroshap[bench]' (from a checkout: pip install '.[bench]')"
"""How to install what ``ferroshap bench`` needs beyond the core package."""

_PIP_NAMES = {"sklearn": "scikit-learn"}
_EXTRAS = {"polars": BENCH_EXTRA, "scipy": BENCH_EXTRA, "matplotlib": BENCH_EXTRA}


class _MissingDependency(Exception):
    """A library ``ferroshap bench`` needs is not installed; the message says how to get it."""


def _install_hint(module: str) -> str:
    """How to install ``module``: the package extra that has it, else its pip name."""
    return _EXTRAS.get(module, f"pip install {_PIP_NAMES.get(module, module)}")


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _names(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of names, got {text!r}")
    return names


def _budgets(text: str) -> list[int]:
    budgets = []
    for part in text.split(","):
        try:
            budget = int(part)
        except ValueError:
            budget = None
        if budget is None or budget < MIN_BUDGET:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated integers >= {MIN_BUDGET}, got {part.strip()!r} "
                f"in {text!r}"
            )
        budgets.append(budget)
    return budgets


def _seeds(text: str) -> int:
    try:
        seeds = int(text)
    except ValueError:
        seeds = 0
    if seeds < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return seeds


def _listing() -> str:
    """The names ``--games`` and ``--methods`` accept, read from the harness's registries."""
    peers = [name if unavailable_reason(name) is None else f"{name} (not here)" for name in PEERS]
    rows = [
        ("games:", ", ".join(available_games())),
        ("methods:", ", ".join(ferroshap_methods())),
        ("recipes:", ", ".join(recipes())),
        ("peers:", ", ".join(peers)),
    ]
    lines = [
        textwrap.fill(
            names,
            88,
            break_on_hyphens=False,
            initial_indent=f"{label:<9}",
            subsequent_indent=" " * 9,
        )
        for label, names in rows
    ]
    lines += [
        "",
        "Recipes of method='auto' run only when named in --methods. Peers run when named in",
        "--methods, with --include-baselines, or with --quick. Games of tree models take their",
        "exact values from shap's interventional TreeExplainer.",
    ]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ferroshap",
        description="Rust-accelerated Shapley values from Python: the ferroshap command line.",
        epilog="Run 'ferroshap <command> --help' for the options of a command.",
    )
    parser.add_argument("--version", action="version", version=f"ferroshap {fs.__version__}")
    commands = parser.add_subparsers(dest="command", title="commands", metavar="<command>")
    bench = commands.add_parser(
        "bench",
        help="benchmark estimators against exact Shapley values",
        description=(
            "Run estimators x budgets x seeds x games against exact Shapley values; print a\n"
            "table of median errors, optionally write every run to parquet and a PNG plot."
        ),
        epilog=_listing(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bench.set_defaults(command_parser=bench)
    bench.add_argument(
        "--games",
        type=_names,
        metavar="NAMES",
        help=f"comma list of games (default: all; --quick: {','.join(QUICK_GAMES)})",
    )
    bench.add_argument(
        "--methods",
        type=_names,
        metavar="NAMES",
        help=(
            "comma list of methods and peers (default: every method, plus the installed peers "
            f"with --include-baselines; --quick: {','.join(QUICK_METHODS + QUICK_PEERS)})"
        ),
    )
    bench.add_argument(
        "--budgets",
        type=_budgets,
        metavar="INTS",
        help=(
            f"comma list of budgets >= {MIN_BUDGET}, distinct coalitions per row with the empty "
            f"and full ones (default: {','.join(map(str, BUDGETS))}; "
            f"--quick: {','.join(map(str, QUICK_BUDGETS))})"
        ),
    )
    bench.add_argument(
        "--seeds",
        type=_seeds,
        metavar="N",
        help=f"number of seeds, 0 .. N-1 (default: {SEEDS}; --quick: {QUICK_SEEDS})",
    )
    bench.add_argument(
        "--include-baselines",
        action="store_true",
        help="add every installed peer (shap, shapiq) to the default methods",
    )
    bench.add_argument("--out", metavar="PATH", help="write every run to this parquet file")
    bench.add_argument(
        "--plot", metavar="PATH", help="write error and time against budget to this PNG"
    )
    bench.add_argument(
        "--quick",
        action="store_true",
        help="3 small games, 3 budgets, 3 seeds, auto first: 270 runs (14 s on 2 quiet cores, "
        "2026-12-05)",
    )
    return parser


def _check_names(parser: argparse.ArgumentParser, games: list[str], methods: list[str]) -> None:
    """Reject unknown game and method names before anything runs."""
    unknown = [g for g in games if g not in available_games()]
    if unknown:
        parser.error(
            f"--games: unknown game(s) {', '.join(map(repr, unknown))}; "
            f"valid: {', '.join(available_games())}"
        )
    try:
        check_estimators(methods)
    except fs.InvalidArgumentError:
        unknown = [m for m in methods if m not in all_estimators()]
        parser.error(
            f"--methods: unknown method or peer {', '.join(map(repr, unknown))}; valid: "
            f"{', '.join(all_estimators())}"
        )


def _require(module: str, purpose: str) -> None:
    if not _installed(module):
        hint = _install_hint(module)
        raise _MissingDependency(f"{purpose} needs {module}, which is not installed: {hint}")


def _runnable_methods(methods: list[str], skipped: list[str]) -> list[str]:
    """The methods that can run here; the others go to ``skipped`` with the reason."""
    runnable = []
    for method in methods:
        reason = unavailable_reason(method) if method in PEERS else None
        if reason is None:
            runnable.append(method)
        else:
            skipped.append(f"{method}: {reason}")
    return runnable


def _built_games(names: list[str], quick: bool, skipped: list[str]) -> list[BenchGame]:
    """Build each game; one whose ground truth needs a missing library is skipped."""
    games = []
    for name in names:
        try:
            games.append(make_game(name, quick))
        except ModuleNotFoundError as err:
            module = err.name or "a library"
            skipped.append(f"game {name}: needs {module} ({_install_hint(module)})")
    return games


def _bench(args: argparse.Namespace) -> int:
    quick = args.quick
    game_names = args.games or (QUICK_GAMES if quick else available_games())
    methods = args.methods or (
        QUICK_METHODS + [p for p in QUICK_PEERS if p in available_estimators()]
        if quick
        else available_estimators(include_baselines=args.include_baselines)
    )
    _check_names(args.command_parser, game_names, methods)
    _require("polars", "ferroshap bench")
    _require("scipy", "ferroshap bench")
    if args.plot:
        _require("matplotlib", "--plot")

    skipped: list[str] = []
    methods = _runnable_methods(methods, skipped)
    budgets = args.budgets or (QUICK_BUDGETS if quick else BUDGETS)
    seeds = list(range(args.seeds or (QUICK_SEEDS if quick else SEEDS)))
    start = time.perf_counter()
    games = _built_games(game_names, quick, skipped) if methods else []
    if not games or not methods:
        for reason in skipped:
            print(f"skipped {reason}", file=sys.stderr)
        raise _MissingDependency("nothing left to run: every game or every method was skipped")
    results = run_benchmark(games, methods, budgets, seeds, progress=lambda m: print(m, flush=True))
    summary = summarize(results)
    print(format_table(summary))
    for reason in skipped:
        print(f"skipped {reason}")
    print(f"\n{len(results)} runs in {time.perf_counter() - start:.1f} s; * = lowest error")
    if args.out:
        results.write_parquet(args.out)
        print(f"results: {args.out}")
    if args.plot:
        plot_summary(summary, args.plot)
        print(f"plot: {args.plot}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ferroshap`` command; returns the exit status.

    A bare ``ferroshap`` prints the help. Bad arguments exit with status 2 and a message naming
    the option and the valid values; a missing optional library returns 1 with the command that
    installs it.

    Examples
    --------
    >>> from ferroshap.bench.cli import main
    >>> main([])  # doctest: +ELLIPSIS
    usage: ferroshap [-h] [--version] <command> ...
    ...
    0
    """
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    try:
        return _bench(args)
    except _MissingDependency as err:
        print(f"ferroshap {args.command}: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
