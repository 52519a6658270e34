"""Engine overhead on DataFrame pipelines: records, never asserts.

A scikit-learn ``Pipeline`` (``ColumnTransformer`` by column name: ``OneHotEncoder`` on two
string columns, ``StandardScaler`` on two numbers, then ``LogisticRegression``) is explained by
``fs.Explainer`` from pandas and from polars frames (two string columns and eight numbers, so
the budget samples rather than enumerates): 50 background rows, 8 explained rows,
``budget=512`` (about 200 000 model rows), ``method="leverage"`` (the masking path, without a
proxy fit). The engine's own time is ``ferroshap.bench.timing.engine_time``: the call's wall time
minus the model replayed alone on the very frames it received, median over ``--repeats``
interleaved rounds (at least 5); the target is at most 20 % of the model's time. The second
figure printed, wall minus the model's time inside the call, is the engine's own work without
the model's own slow-down on fresh frames (page faults in its copies of them, see
BENCHMARKS.md).

Run: ``python benches/bench_frames.py [--repeats 5] [--all] [--method auto]``; ``--all`` also
times other pipelines (:data:`CASES`: wider and narrower frames, gradient-boosted trees, a larger
background); ``--method`` times another estimator than ``leverage`` (e.g. the default ``auto``,
whose proxy fits are engine time).
"""

from __future__ import annotations

import argparse
import warnings
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import polars as pl
from sklearn.compose import ColumnTransformer
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

import ferroshap as fs
from ferroshap.bench.timing import MIN_ROUNDS, engine_time

N_NUMBERS = 8
"""Number columns beside the two strings: 10 features, so budget 512 < 2**10 samples."""

WORDS = {
    "city": ["paris", "lyon", "nice", "lille"],
    "color": ["red", "green", "blue"],
    "shape": ["round", "square"],
    "size": ["small", "medium", "large", "huge", "tiny"],
}
"""String columns and their values; the first ``n_strings`` are used."""


@dataclass(frozen=True)
class Case:
    """One pipeline of the bench: its columns, encoder and estimator, background and budget."""

    name: str
    n_numbers: int = N_NUMBERS
    n_strings: int = 2
    trees: bool = False  # HistGradientBoosting after an OrdinalEncoder, else OneHot + logistic
    n_background: int = 50
    budget: int = 512


CASES = (
    Case("the issue's pipeline"),
    Case("20 numbers, 3 strings", n_numbers=20, n_strings=3),
    Case("4 numbers, 4 strings (budget enumerates)", n_numbers=4, n_strings=4),
    Case("gradient-boosted trees", trees=True),
    Case("100 background rows, budget 2048 (enumerates)", n_background=100, budget=2048),
)
"""The issue's pipeline first; ``--all`` runs the others too."""


def people(
    rows: int, seed: int, n_numbers: int = N_NUMBERS, n_strings: int = 2
) -> tuple[pd.DataFrame, np.ndarray]:
    """String and number columns, and a binary label."""
    rng = np.random.default_rng(seed)
    strings = {name: rng.choice(values, rows) for name, values in list(WORDS.items())[:n_strings]}
    numbers = {f"x{i}": rng.normal(size=rows) for i in range(n_numbers)}
    frame = pd.DataFrame({**strings, **numbers})
    label = frame.x0 + (frame.city == "paris") - frame.x1 * frame.x2 > 0.2
    return frame, label.to_numpy().astype(int)


def fitted(case: Case) -> tuple[pd.DataFrame, object]:
    """The case's frame and its pipeline fitted on it."""
    frame, label = people(2000, 0, case.n_numbers, case.n_strings)
    strings = list(WORDS)[: case.n_strings]
    words = OrdinalEncoder() if case.trees else OneHotEncoder(handle_unknown="ignore")
    estimator = HistGradientBoostingClassifier(max_iter=50) if case.trees else LogisticRegression()
    columns = ColumnTransformer(
        [
            ("words", words, strings),
            ("numbers", StandardScaler(), [f"x{i}" for i in range(case.n_numbers)]),
        ]
    )
    return frame, make_pipeline(columns, estimator).fit(frame, label)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=MIN_ROUNDS)
    parser.add_argument("--budget", type=int, default=512, help="the issue's pipeline's budget")
    parser.add_argument("--all", action="store_true", help="other pipelines too (CASES)")
    parser.add_argument("--method", default="leverage", help="estimator (default leverage)")
    args = parser.parse_args()
    cases = [replace(CASES[0], budget=args.budget), *(CASES[1:] if args.all else [])]
    for case in cases:
        frame, model = fitted(case)
        rows = slice(case.n_background, case.n_background + 8)
        background, X = frame.iloc[: case.n_background].reset_index(drop=True), frame.iloc[rows]
        if args.all:
            print(f"{case.name}:")
        for library, convert in (("pandas", lambda f: f), ("polars", pl.from_pandas)):
            bg, x = convert(background), convert(X)
            with warnings.catch_warnings():  # budgets that enumerate say so once per call
                warnings.simplefilter("ignore", UserWarning)
                timing = engine_time(
                    lambda f, bg=bg, x=x, case=case, method=args.method: fs.Explainer(
                        f, bg, budget=case.budget, method=method, model_output="call"
                    )(x),
                    model.predict_proba,
                    args.repeats,
                )
            wall, alone, engine = timing["wall_s"], timing["model_s"], timing["engine_s"]
            inside, own = timing["inside_s"], timing["own_s"]
            print(
                f"{library}: wall {wall * 1e3:.1f} ms, model alone {alone * 1e3:.1f} ms, "
                f"engine {engine * 1e3:.1f} ms = {100 * engine / alone:.1f} % of the model; "
                f"model inside the call {inside * 1e3:.1f} ms, engine's own work "
                f"{own * 1e3:.1f} ms = {100 * own / inside:.1f} %"
            )


if __name__ == "__main__":
    main()
