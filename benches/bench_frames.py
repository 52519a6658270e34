"""Engine overhead on DataFrame pipelines: records, never asserts.

A scikit-learn ``Pipeline`` (``ColumnTransformer`` by column name: ``OneHotEncoder`` on two
string columns, ``StandardScaler`` on two numbers, then ``LogisticRegression``) is explained by
``fs.Explainer`` from pandas and from polars frames (two string columns and eight numbers, so
the budget samples rather than enumerates): 50 background rows, 8 explained rows,
``budget=512`` (about 200 000 model rows). The engine's own time is the call's wall time minus
the model replayed alone on the very frames it received; the target is at most 20 % of the
model's time. Each figure is the median of ``--repeats`` runs.

Run: ``python benches/bench_frames.py [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import ferroshap as fs

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


class Recording:
    """The pipeline's ``predict_proba``, keeping every frame it was called on."""

    def __init__(self, model: Any) -> None:
        self.model, self.frames = model, []

    def __call__(self, frame: Any) -> np.ndarray:
        self.frames.append(frame)
        return self.model.predict_proba(frame)


def one_run(model: Any, background: Any, X: Any, budget: int) -> tuple[float, float]:
    """(wall time of the explanation, time of the model alone on the same frames)."""
    recording = Recording(model)
    start = time.perf_counter()
    fs.Explainer(recording, background, budget=budget)(X)
    wall = time.perf_counter() - start
    start = time.perf_counter()
    for frame in recording.frames:
        model.predict_proba(frame)
    return wall, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
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
        runs = [
            one_run(model, convert(background), convert(X), args.budget)
            for _ in range(args.repeats)
        ]
        wall = statistics.median(w for w, _ in runs)
        alone = statistics.median(m for _, m in runs)
        engine = statistics.median(w - m for w, m in runs)
        print(
            f"{library}: wall {wall * 1e3:.1f} ms, model alone {alone * 1e3:.1f} ms, "
            f"engine {engine * 1e3:.1f} ms = {100 * engine / alone:.1f} % of the model"
        )


if __name__ == "__main__":
    main()
