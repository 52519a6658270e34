"""Benchmark protocols: ferroshap against shap's KernelExplainer and shapiq, in one process.

Four protocols, each returning a polars DataFrame (and writing it under ``--out``), run by
``python benches/protocols.py`` (the command line is :func:`main`):

``accuracy``
    Relative error of every estimator against exact interventional TreeSHAP on a LightGBM model
    of the breast-cancer data (n = 30), budgets 256 .. 2048, median over seeds.
``overhead``
    Engine overhead: seconds per row on a near-free NumPy model (n = 100, one baseline row,
    budget 4096, 200 rows), against the model alone on the same model rows.
``high-dim``
    The same near-free kind of model at n = 784, budget 20000, 100 rows together.
``lightgbm``
    End to end on the ``accuracy`` model (50 background rows, budget 2048, 8 rows): explain time
    divided by the model's own ``predict`` time on the same model rows and batch sizes.

Budgets count distinct coalitions with ∅ and N included, for every library: shap's
``nsamples`` excludes them (``nsamples = budget - 2``); shapiq's ``budget`` and ferroshap's
``budget`` include them.

Usage::

    python benches/protocols.py {accuracy,overhead,high-dim,lightgbm,all} [--seeds K] [--quick]
    python benches/protocols.py accuracy --methods auto --budgets 256,512,2048
    python benches/protocols.py report     # markdown tables of the saved results

Timings interleave the engines round by round and report the fastest round, as the machine may
be shared; every library gets ``$FERROSHAP_BENCH_THREADS`` threads
(:func:`ferroshap.bench.timing.fix_threads`). See BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy as np
import polars as pl

import ferroshap as fs
from ferroshap import _core
from ferroshap.bench.estimators import ferroshap_estimator, make_estimator
from ferroshap.bench.games import BenchGame, lightgbm_game, near_free_problem
from ferroshap.bench.metrics import mean_relative_squared_error
from ferroshap.bench.peers import PEERS, unavailable_reason
from ferroshap.bench.report import protocol_report, to_markdown
from ferroshap.bench.timing import BatchRecorder, TimedModel, fix_threads, model_seconds, timed

#: ferroshap's sampling methods (``exact`` is not run: it stops at 24 players, here n ≥ 30),
#: ``auto`` when this version has it.
FS_METHODS = tuple(
    m
    for m in ("auto", "kernel", "kernel-wor", "leverage", "modified-l2", "unbiased", "permutation")
    if m in fs.METHODS
)
#: Proxy-adjusted methods (``benches/bench_proxy_adjusted.py``), with the folds of ``cross_fit``.
FS_PROXY = {"proxy-leverage": None, "tree-msr": None, "tree-msr cross-fit 4": 4}
#: Peers that the accuracy protocol runs by default: all of ``ferroshap.bench.peers`` but the
#: interaction estimators ProxySPEX and SPEX (30-75 s per row here; name them to run them).
ACCURACY_PEERS = tuple(p for p in PEERS if p not in ("shapiq-proxyspex", "shapiq-spex"))
SHAP = "shap-kernel"
SHAPIQ_KERNEL = "shapiq-kernel"

Model = Callable[[np.ndarray], np.ndarray]
#: ``explain(model, background, X, budget, seed) -> phi [rows, n]``
Estimator = Callable[[Model, np.ndarray, np.ndarray, int, int], np.ndarray]


# --------------------------------------------------------------------------------------------
# Models and games
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Estimators: explain(model, background, X, budget, seed) -> phi [rows, n]
# --------------------------------------------------------------------------------------------


def estimators(names: Iterable[str] | None = None) -> dict[str, Estimator]:
    """Estimators by name: ferroshap's methods (``proxy-leverage``, ``tree-msr cross-fit 4``, ...)
    and the peers of ``ferroshap.bench.peers`` that can run here (by default those of
    :data:`ACCURACY_PEERS`), or the named subset (a named peer that cannot run raises)."""
    table: dict[str, Estimator] = {m: ferroshap_estimator(m) for m in FS_METHODS}
    table.update({name: ferroshap_estimator(name.split()[0], k) for name, k in FS_PROXY.items()})
    if names is None:
        table.update(
            {p: make_estimator(p) for p in ACCURACY_PEERS if unavailable_reason(p) is None}
        )
        return table
    return {name: table[name] if name in table else make_estimator(name) for name in names}


# --------------------------------------------------------------------------------------------
# Timing helpers
# --------------------------------------------------------------------------------------------


def engine_breakdown(method: str, n: int, budget: int, columns: int, seed: int = 0) -> dict:
    """Seconds in ferroshap's core: planning, the design's boolean masks, and the first
    (factorizing) and a second estimate; and the solver the design used.

    The values are random ``[m, columns]``: the cost does not depend on them.
    """
    start = time.perf_counter()
    design = _core.plan(method, n, budget, seed)
    plan = time.perf_counter() - start
    masks = timed(design.masks)
    values = np.random.default_rng(seed).normal(size=(design.n_coalitions, columns))
    first = timed(lambda: design.estimate(values))
    second = timed(lambda: design.estimate(values))
    return {
        "plan_s": plan,
        "masks_s": masks,
        "estimate_first_s": first,
        "estimate_again_s": second,
        "solver": design.solver(),
    }


@dataclass
class Task:
    """One thing to time: ``run()`` returns (wall seconds, seconds spent inside the model)."""

    name: str
    rows: int
    run: Callable[[], tuple[float, float]]
    extra: dict = field(default_factory=dict)


def estimator_task(
    name: str,
    model: Model,
    background: np.ndarray,
    X: np.ndarray,
    budget: int,
    warmup_rows: int = 1,
) -> Task:
    """Explaining all of ``X`` with the named estimator, the model wrapped in a timer.

    One untimed warm-up call on the first ``warmup_rows`` rows happens now (lazy imports, JIT
    compilation, thread pools); ``warmup_rows=0`` skips it.
    """
    explain = estimators([name])[name]
    if warmup_rows:
        explain(model, background, X[:warmup_rows], budget, 0)

    def run() -> tuple[float, float]:
        timer = TimedModel(model)
        return timed(lambda: explain(timer, background, X, budget, 0)), timer.seconds

    return Task(name, len(X), run)


def model_alone_task(model: Model, background: np.ndarray, X: np.ndarray, budget: int) -> Task:
    """The model alone on the batches ferroshap leverage sends it for ``X`` (same rows, sizes)."""
    recorder = BatchRecorder(model)
    ferroshap_estimator("leverage")(recorder, background, X, budget, 0)
    batches = recorder.replay(skip=1)  # the first call is the background's, for v(empty)

    def run() -> tuple[float, float]:
        seconds = model_seconds(model, batches)
        return seconds, seconds

    extra = {"batches": len(batches), "model_rows": sum(map(len, batches))}
    return Task("model alone", len(X), run, extra)


def measure(tasks: Sequence[Task], rounds: int) -> list[dict]:
    """Run every task once per round, interleaved, so that drifts in machine load hit all alike,
    the order rotated by one each round, so that no task always runs after the same one (a peer
    that churns memory slows whichever task follows it).

    One record per task: the fastest run (the headline, timeit's convention, as the machine may
    be shared), the median, seconds per row, the model seconds of the fastest run, and every
    run's seconds (``run_seconds``, ``run_model_seconds``) for per-round ratios.
    """
    runs: dict[str, list[tuple[float, float]]] = {task.name: [] for task in tasks}
    for round_ in range(rounds if tasks else 0):  # no tasks (e.g. baselines skipped): no runs
        shift = round_ % len(tasks)
        for task in [*tasks[shift:], *tasks[:shift]]:
            runs[task.name].append(task.run())
    records = []
    for task in tasks:
        seconds, model = (list(column) for column in zip(*runs[task.name], strict=True))
        fastest = int(np.argmin(seconds))
        records.append(
            {
                "engine": task.name,
                "rows_timed": task.rows,
                "runs": rounds,
                "seconds": seconds[fastest],
                "seconds_median": statistics.median(seconds),
                "seconds_per_row": seconds[fastest] / task.rows,
                "model_seconds_in_run": model[fastest],
                "run_seconds": seconds,
                "run_model_seconds": model,
                **task.extra,
            }
        )
    return records


def add_speedups(records: list[dict], references: Sequence[str]) -> pl.DataFrame:
    """Table with ``speedup_vs_<ref>``: the reference's seconds per row over each engine's."""
    df = pl.DataFrame(records)
    for ref in references:
        ref_time = df.filter(pl.col("engine") == ref)["seconds_per_row"]
        if len(ref_time):
            df = df.with_columns(
                (ref_time[0] / pl.col("seconds_per_row")).alias(f"speedup_vs_{ref.split()[0]}")
            )
    return df


# --------------------------------------------------------------------------------------------
# Protocols
# --------------------------------------------------------------------------------------------


def accuracy(
    seeds: Sequence[int],
    budgets: Sequence[int] = (256, 512, 1024, 2048),
    names: Iterable[str] | None = None,
    checkpoint: Path | None = None,
) -> pl.DataFrame:
    """Protocol (a): one row per (estimator, budget, seed) with the relative error.

    With ``checkpoint``, the long table is rewritten there after every seed, and the runs already
    there (same estimator, budget and seed) are not run again: an interrupted run resumes, and an
    estimator added later is run alone.
    """
    game = lightgbm_game()
    table = estimators(names)
    records: list[dict] = []
    if checkpoint is not None and checkpoint.exists():
        old = pl.read_parquet(checkpoint)
        records = old.filter(
            pl.col("estimator").is_in(list(table)),
            pl.col("budget").is_in(list(budgets)),
            pl.col("seed").is_in(list(seeds)),
        ).to_dicts()
    done = {(r["estimator"], r["budget"], r["seed"]) for r in records}
    for seed in seeds:
        for budget in budgets:
            for name, explain in table.items():
                if (name, budget, seed) in done:
                    continue
                start = time.perf_counter()
                phi = explain(game.model, game.background, game.X, budget, seed)
                records.append(
                    {
                        "estimator": name,
                        "budget": budget,
                        "seed": seed,
                        "rel_error": mean_relative_squared_error(phi, game.truth),
                        "seconds": time.perf_counter() - start,
                    }
                )
        if checkpoint is not None:
            pl.DataFrame(records).write_parquet(checkpoint)
        log(f"accuracy: seed {seed} done")
    return pl.DataFrame(records)


def summarize_accuracy(long: pl.DataFrame) -> pl.DataFrame:
    """Median error over seeds per estimator and budget, its ratio to the best peer's, to shapiq
    KernelSHAP's and to shap KernelExplainer's."""
    medians = long.group_by("estimator", "budget").agg(
        pl.col("rel_error").median().alias("median_rel_error"),
        pl.col("rel_error").quantile(0.25).alias("q25"),
        pl.col("rel_error").quantile(0.75).alias("q75"),
        pl.len().alias("seeds"),
    )
    peers = medians.filter(pl.col("estimator").is_in(list(PEERS)))
    best_peer = peers.group_by("budget").agg(pl.col("median_rel_error").min().alias("_vs_best"))
    medians = medians.join(best_peer, on="budget", how="left").with_columns(
        (pl.col("median_rel_error") / pl.col("_vs_best")).alias("vs_best_peer")
    )
    refs = {SHAPIQ_KERNEL: "vs_shapiq_kernel", SHAP: "vs_shap"}
    for ref, column in refs.items():
        ref_err = medians.filter(pl.col("estimator") == ref).select(
            "budget", pl.col("median_rel_error").alias(f"_{column}")
        )
        medians = medians.join(ref_err, on="budget", how="left").with_columns(
            (pl.col("median_rel_error") / pl.col(f"_{column}")).alias(column)
        )
    best = pl.col("median_rel_error") == pl.col("median_rel_error").min().over("budget")
    return (
        medians.with_columns(best.alias("best"))
        .drop("_vs_shapiq_kernel", "_vs_shap", "_vs_best")
        .sort("budget", "median_rel_error")
    )


FS_TIMED = ("leverage", "kernel")


def overhead(
    n: int = 100, budget: int = 4096, rows: int = 200, baseline_rows: int = 10, repeat: int = 5
) -> pl.DataFrame:
    """Protocol (b): seconds per row on the near-free model, one baseline row.

    ferroshap explains all ``rows`` together; shap and shapiq explain the first
    ``baseline_rows`` rows (their cost is linear in rows) and are reported per row. Every engine
    gets a warm-up call and ``repeat`` interleaved timed runs; the model alone replays ferroshap's
    batches.
    """
    model, background, X = near_free_problem(n, rows)
    tasks = [estimator_task(name, model, background, X, budget, rows) for name in FS_TIMED]
    tasks += [
        estimator_task(name, model, background, X[:baseline_rows], budget)
        for name in (SHAP, SHAPIQ_KERNEL)
    ]
    tasks.append(model_alone_task(model, background, X, budget))
    records = measure(tasks, repeat)
    for record in records[: len(FS_TIMED)]:
        record |= engine_breakdown(record["engine"], n, budget, rows)
    return add_speedups(records, (SHAP, SHAPIQ_KERNEL))


def high_dim(
    n: int = 784,
    budget: int = 20000,
    rows: int = 100,
    baseline_rows: int = 2,
    skip_baselines: bool = False,
    repeat: int = 2,
) -> pl.DataFrame:
    """Protocol (c): ferroshap leverage on ``rows`` rows together at n = 784, one baseline row.

    ferroshap and the model alone: ``repeat`` interleaved runs after a one-row warm-up, plus the
    core's planning and estimate seconds measured separately. shap and shapiq: one run on
    ``baseline_rows`` rows, no warm-up (a row takes seconds), unless ``skip_baselines``.
    """
    model, background, X = near_free_problem(n, rows)
    tasks = [
        estimator_task(FS_TIMED[0], model, background, X, budget),
        model_alone_task(model, background, X, budget),
    ]
    records = measure(tasks, repeat)
    records[0] |= engine_breakdown("leverage", n, budget, rows)
    baselines = () if skip_baselines else (SHAP, SHAPIQ_KERNEL)
    tasks = [estimator_task(b, model, background, X[:baseline_rows], budget, 0) for b in baselines]
    records += measure(tasks, 1)
    return add_speedups(records, baselines)


def lightgbm_end_to_end(budget: int = 2048, repeat: int = 5) -> pl.DataFrame:
    """Protocol (d): explain time over the model's own ``predict`` time on the same model rows.

    The denominator replays ferroshap leverage's batches (``budget * 50 * 8`` rows) through
    ``predict``. Every engine explains the 8 rows ``repeat`` times after a one-row warm-up,
    interleaved with the model-alone runs; the ratios are medians of per-round ratios.
    """
    game: BenchGame = lightgbm_game()
    predict, background, X = game.model, game.background, game.X
    engines = (FS_TIMED[0], SHAP, SHAPIQ_KERNEL)
    tasks = [estimator_task(name, predict, background, X, budget) for name in engines]
    tasks.append(model_alone_task(predict, background, X, budget))
    records = measure(tasks, repeat)
    alone = records[-1]["run_seconds"]
    for record in records:
        runs, in_model = record["run_seconds"], record["run_model_seconds"]
        record["ratio_to_model_alone"] = statistics.median(np.divide(runs, alone))
        record["ratio_to_model_in_run"] = statistics.median(np.divide(runs, in_model))
    return pl.DataFrame(records)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def log(message: str) -> None:
    """Timestamped progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def machine_info() -> dict:
    """Machine, thread settings, load and library versions, recorded with every result."""
    import lightgbm
    import shap

    return {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "threads": {
            var: os.environ.get(var)
            for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
        }
        | {"RAYON_NUM_THREADS": os.environ.get("RAYON_NUM_THREADS")},
        "loadavg": os.getloadavg(),
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "ferroshap": fs.__version__,
            "shap": shap.__version__,
            "shapiq": metadata.version("shapiq"),
            "lightgbm": lightgbm.__version__,
        },
    }


def run(name: str, args: argparse.Namespace) -> pl.DataFrame:
    """Run one protocol with the command-line options; returns its summary table."""
    quick = args.quick
    if name == "accuracy":
        seeds = range(args.seeds if args.seeds is not None else (2 if quick else 20))
        budgets = args.budgets or ((256, 1024) if quick else (256, 512, 1024, 2048))
        long = accuracy(seeds, budgets, args.methods, checkpoint=args.out / "accuracy_long.parquet")
        return summarize_accuracy(long)
    if name == "overhead":
        return overhead(rows=50 if quick else 200, baseline_rows=3 if quick else 10)
    if name == "high-dim":
        return high_dim(
            rows=10 if quick else 100,
            baseline_rows=1 if quick else args.baseline_rows,
            skip_baselines=args.skip_baselines,
        )
    return lightgbm_end_to_end(repeat=1 if quick else 5)


PROTOCOLS = ("overhead", "lightgbm", "accuracy", "high-dim")


def _names(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in _names(text))


def main(argv: Sequence[str] | None = None, default_out: Path = Path("results")) -> None:
    """Command-line entry point; writes ``<out>/<protocol>.parquet``, ``.md`` and ``.json``
    (``--out`` defaults to ``default_out``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("protocol", choices=(*PROTOCOLS, "all", "report"))
    parser.add_argument("--seeds", type=int, default=None, help="accuracy seeds (default 20)")
    parser.add_argument(
        "--methods", type=_names, help="accuracy: comma list of estimators (default: all)"
    )
    parser.add_argument(
        "--budgets", type=_ints, help="accuracy: comma list of budgets (default 256,512,1024,2048)"
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--skip-baselines", action="store_true", help="high-dim: ferroshap only")
    parser.add_argument("--baseline-rows", type=int, default=2, help="high-dim: shap/shapiq rows")
    parser.add_argument("--out", type=Path, default=default_out)
    args = parser.parse_args(argv)
    fix_threads()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.protocol == "report":
        print(protocol_report(args.out, PROTOCOLS, list(estimators())), end="")
        return
    warnings.filterwarnings("ignore", category=FutureWarning)
    for name in PROTOCOLS if args.protocol == "all" else (args.protocol,):
        info = machine_info()
        log(f"{name}: start (load {info['loadavg']})")
        start = time.perf_counter()
        table = run(name, args)
        info |= {"protocol": name, "quick": args.quick, "wall_seconds": time.perf_counter() - start}
        info["loadavg_end"] = os.getloadavg()
        table.write_parquet(args.out / f"{name}.parquet")
        (args.out / f"{name}.md").write_text(to_markdown(table) + "\n")
        (args.out / f"{name}.json").write_text(json.dumps(info, indent=2) + "\n")
        with pl.Config(tbl_rows=100, tbl_cols=20, tbl_width_chars=200):
            print(f"\n## {name}\n{json.dumps(info)}\n{table}", flush=True)
