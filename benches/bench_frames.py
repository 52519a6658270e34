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

Run: ``python benches/bench_frames.py [--repeats 5]``.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
import polars as pl
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import ferroshap as fs
from ferroshap.bench.timing import MIN_ROUNDS, engine_time

N_NUMBERS = 8
"""Number columns beside the two strings: 10 features, so budget 512 < 2**10 samples."""


def people(rows: int, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Two string and two number columns, and a binary label."""
    rng = np.random.default_rng(seed)
    numbers = {f"x{i}": rng.normal(size=rows) for i in range(N_NUMBERS)}
    frame = pd.DataFrame(
        {
            "city": rng.choice(["paris", "lyon", "nice", "lille"], rows),
            "color": rng.choice(["red", "green", "blue"], rows),
            **numbers,
        }
    )
    label = frame.x0 + (frame.city == "paris") - frame.x1 * frame.x2 > 0.2
    return frame, label.to_numpy().astype(int)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=MIN_ROUNDS)
    parser.add_argument("--budget", type=int, default=512)
    args = parser.parse_args()
    frame, label = people(2000, 0)
    model = make_pipeline(
        ColumnTransformer(
            [
                ("words", OneHotEncoder(handle_unknown="ignore"), ["city", "color"]),
                ("numbers", StandardScaler(), [f"x{i}" for i in range(N_NUMBERS)]),
            ]
        ),
        LogisticRegression(),
    ).fit(frame, label)
    background, X = frame.iloc[:50].reset_index(drop=True), frame.iloc[50:58]
    for library, convert in (("pandas", lambda f: f), ("polars", pl.from_pandas)):
        bg, rows = convert(background), convert(X)
        timing = engine_time(
            lambda f, bg=bg, rows=rows: fs.Explainer(
                f, bg, budget=args.budget, method="leverage", model_output="call"
            )(rows),
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
